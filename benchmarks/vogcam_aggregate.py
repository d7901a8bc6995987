"""VoGCAM with the aggregated-count (grid) quadrature against the Voronoi quadrature on simulated LGCPs.

Each fit runs in its own child process (one thread): a log-Gaussian Cox process with variance 1 and
range 0.05 on the unit square (simulated on a 256 x 256 grid, ``simulate_lgcp``) with about ``n``
points is fitted with ``quadrature="voronoi"`` and ``quadrature="grid"`` (``n_dummy="auto"`` each);
the table gives the nodes, the process CPU seconds of the fit, the child's peak RSS, the fitted
variance and range, the relative RMSE of the posterior mean intensity against the true intensity
(at the 256^2 simulation cell centres, divided by the mean true intensity), the RMSE of the log-intensity,
and the relative RMSE of the grid fit's intensity against the Voronoi fit's.

Usage::

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/vogcam_aggregate.py [--quick]
        [--sizes 1e4 1e5] [--hyperparameters auto|elbo] [--quadratures voronoi grid] [--compare-std 512]

After the table, one line per fit gives the process CPU seconds of the 65,536 predictions (mean intensity
with its sd, and the log-intensity mean); ``--compare-std M`` also times the predictive sd at the first
``M`` cell centres with ``std_method="reach"`` and ``"neighbourhood"`` and gives their largest relative
difference.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np


def _sample(n_target, seed):
    from algos.point_process import simulate_lgcp

    # E[n] = exp(mean + variance / 2) on the unit square
    return simulate_lgcp((0, 1, 0, 1), mean=math.log(n_target) - 0.5, variance=1.0, length_scale=0.05, grid=256,
                         random_state=seed)


def child(n_target, quadrature, hyperparameters, seed, out, compare_std=0):
    """One fit; prints a JSON line and saves the predicted intensity at the cell centres to ``out``."""
    from algos.point_process import VoGCAM

    s = _sample(n_target, seed)
    X = s.points
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = VoGCAM(window=(0, 1, 0, 1), quadrature=quadrature, hyperparameters=hyperparameters,
                     random_state=0).fit(X)
    cpu = time.process_time() - t0
    gx, gy = np.meshgrid(s.xgrid, s.ygrid)  # the (ny, nx) layout of log_intensity
    Q = np.column_stack([gx.ravel(), gy.ravel()])
    t0 = time.process_time()
    lam_hat = est.predict_intensity(Q)
    mu_hat = est.predict_log_intensity(Q)
    pred_cpu = time.process_time() - t0
    cmp = {}
    if compare_std:
        for how in ("reach", "neighbourhood"):
            t0 = time.process_time()
            cmp[how] = est.predict_log_intensity(Q[:compare_std], return_std=True, std_method=how)[1]
            cmp[how + "_cpu"] = time.process_time() - t0
        cmp["max_rel_diff"] = float(np.max(np.abs(cmp["reach"] - cmp["neighbourhood"]) / cmp["neighbourhood"]))
        del cmp["reach"], cmp["neighbourhood"]
    truth = s.log_intensity.ravel()
    lam = np.exp(truth)
    np.save(out, lam_hat)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(dict(n=len(X), quadrature=est.quadrature_, nodes=int(est.n_nodes_), cpu=cpu, rss_mb=rss,
                          variance=est.variance_, range=est.length_scale_,
                          rmse=float(np.sqrt(np.mean((lam_hat - lam) ** 2)) / lam.mean()),
                          rmse_log=float(np.sqrt(np.mean((mu_hat - truth) ** 2))), pred_cpu=pred_cpu,
                          compare_std=cmp)), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n ~ 2e3 and 1e4")
    ap.add_argument("--sizes", nargs="+", type=float, default=None, help="expected point counts (default 1e4 1e5)")
    ap.add_argument("--quadratures", nargs="+", default=["voronoi", "grid"])
    ap.add_argument("--hyperparameters", default="auto", choices=["auto", "elbo", "laplace", "min_contrast"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--compare-std", type=int, default=0, metavar="M",
                    help="also time the sd at M cell centres with both std_method values")
    ap.add_argument("--child", nargs=4, metavar=("N", "QUADRATURE", "HYPERPARAMETERS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        n, q, h, out = args.child
        child(float(n), q, h, args.seed, out, args.compare_std)
        return
    sizes = args.sizes or ([2e3, 1e4] if args.quick else [1e4, 1e5])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
               OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    print(f"hyperparameters={args.hyperparameters!r}; truth: variance 1, range 0.05; load: {os.getloadavg()}")
    print("| n | quadrature | nodes | CPU s | peak RSS MB | variance | range | rel. RMSE intensity | RMSE log-int."
          " | rel. RMSE vs Voronoi |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    notes = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            pred = {}
            for q in args.quadratures:
                out = os.path.join(tmp, f"{q}_{n:g}.npy")
                r = subprocess.run([sys.executable, __file__, "--seed", str(args.seed), "--compare-std",
                                    str(args.compare_std), "--child", str(n), q,
                                    args.hyperparameters, out], env=env, capture_output=True, text=True)
                if r.returncode:
                    print(f"| {n:g} | {q} | failed: {r.stderr.strip().splitlines()[-1][:80]} |")
                    continue
                d = json.loads(r.stdout.strip().splitlines()[-1])
                pred[q] = np.load(out)
                vs = ""
                if q != "voronoi" and "voronoi" in pred:
                    vs = f"{np.sqrt(np.mean((pred[q] - pred['voronoi']) ** 2)) / pred['voronoi'].mean():.4f}"
                d["vs"] = vs
                print(f"| {d['n']} | {d['quadrature']} | {d['nodes']} | {d['cpu']:.1f} | {d['rss_mb']:.0f} | "
                      f"{d['variance']:.3f} | {d['range']:.4f} | {d['rmse']:.4f} | {d['rmse_log']:.4f} | {vs} |",
                      flush=True)
                c = d["compare_std"]
                notes.append(f"{d['n']} points, {q}: predictions {d['pred_cpu']:.1f} CPU s" + (
                    f"; sd at {args.compare_std} points: reach {c['reach_cpu']:.2f} CPU s, neighbourhood "
                    f"{c['neighbourhood_cpu']:.2f} CPU s, max rel. difference {c['max_rel_diff']:.1e}" if c else ""))
    print()
    for line in notes:
        print(line)
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
