"""Coverage and width of the front door's intervals for each ``refine`` option (section ``inference``).

Designs (n rows, d = 5 features, no intercept, 10 % of the sources reliable at sigma 1):

* ``two-level``: N(0, I) rows, the other sources at sigma 300, Gaussian noise (the width floor of an
  estimator that does not know the reliable sources is 1.09x the oracle WLS interval);
* ``asymmetric``: the same scales, noise ``sigma * (Exp(1) - 1)`` (mean zero, skewed: outside the
  adaptive refinement's assumption of symmetric noise);
* ``t-leverage``: multivariate Student-t(2.5) rows (heavy-tailed leverage), the other sources'
  sigma log-uniform on [10, 1000].

For each replication: the 95 % interval of every coefficient, the oracle WLS standard error (the
sigmas known), coverage (mean over coefficients and replications; the smallest per-coefficient
coverage), the median ratio of the standard error to the oracle's, the RMSE over the mean oracle
standard error, the process CPU time per fit (including the first ``coef_se_``), and the
``inference_`` labels seen. Run with ``OMP_NUM_THREADS=1``::

    OMP_NUM_THREADS=1 python benchmarks/hetero_inference.py            # 200 replications
    OMP_NUM_THREADS=1 python benchmarks/hetero_inference.py --quick    # 20 replications, n = 1000
"""

from __future__ import annotations

import math
import os
import sys
import time
import warnings
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import environment, make_parser, print_table, selected_sections  # noqa: E402

from algos.hetero_regression import SubsetOfSignalsRegressor  # noqa: E402
from theory.hetero_regression import scale_mixture_width_bound  # noqa: E402

SECTIONS = ("inference",)
DESIGNS = ("two-level", "asymmetric", "t-leverage")
REFINES = ("none", "mixture", "adaptive")


def draw(n, d, seed, design):
    """One data set of ``design``: ``(X, y, beta, sigma)``."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if design == "t-leverage":
        X = X / np.sqrt(rng.chisquare(2.5, size=n) / 2.5)[:, None]
        sigma = np.exp(rng.uniform(math.log(10.0), math.log(1e3), n))
    else:
        sigma = np.full(n, 300.0)
    sigma[rng.permutation(n)[: n // 10]] = 1.0
    xi = rng.exponential(1.0, n) - 1.0 if design == "asymmetric" else rng.standard_normal(n)
    beta = np.ones(d) / math.sqrt(d)
    return X, X @ beta + sigma * xi, beta, sigma


def run_cell(n, d, design, refine, reps):
    """Coverage, width and CPU of ``refine`` on ``reps`` data sets of ``design``."""
    hits, ratios, errs, oses, cpu, labels = [], [], [], [], [], Counter()
    for seed in range(reps):
        X, y, beta, sigma = draw(n, d, seed, design)
        t0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = SubsetOfSignalsRegressor(refine=refine).fit(X, y)
            se = est.coef_se_
        cpu.append(time.process_time() - t0)
        labels[est.inference_] += 1
        ose = np.sqrt(np.diag(np.linalg.inv((X / sigma[:, None] ** 2).T @ X)))
        hits.append(np.abs(est.coef_ - beta) <= 1.959964 * se)
        ratios.append(se / ose)
        errs.append(est.coef_ - beta)
        oses.append(ose)
    hits, ratios, errs, oses = map(np.asarray, (hits, ratios, errs, oses))
    rmse = np.sqrt(np.mean(errs**2, axis=0)) / oses.mean(axis=0)
    return {"coverage": float(hits.mean()), "min_cov": float(hits.mean(axis=0).min()),
            "width": float(np.nanmedian(ratios)), "rmse": float(rmse.mean()), "cpu": float(np.median(cpu)),
            "labels": ", ".join(f"{k} {v}" for k, v in sorted(labels.items()))}


def main(argv=None):
    parser = make_parser(__doc__.splitlines()[0], SECTIONS)
    parser.add_argument("--reps", type=int, default=None, help="replications per cell (default 200, --quick 20)")
    parser.add_argument("--n", type=int, default=None, help="rows (default 2000, --quick 1000)")
    parser.add_argument("--designs", default=",".join(DESIGNS), help=f"subset of {','.join(DESIGNS)}")
    args = parser.parse_args(argv)
    selected_sections(args, SECTIONS)
    reps = args.reps or (20 if args.quick else 200)
    n = args.n or (1000 if args.quick else 2000)
    d = 5
    designs = [s.strip() for s in args.designs.split(",") if s.strip()]
    bad = [s for s in designs if s not in DESIGNS]
    if bad:
        raise SystemExit(f"--designs: unknown design {bad[0]!r}; choose from {','.join(DESIGNS)}.")
    print(environment())
    band = 3.0 * math.sqrt(0.95 * 0.05 / reps)
    floors = {"two-level": scale_mixture_width_bound(0.1, 300.0), "asymmetric": float("nan"),
              "t-leverage": scale_mixture_width_bound(0.1)}
    rows = []
    for design in designs:
        for refine in REFINES:
            r = run_cell(n, d, design, refine, reps)
            rows.append([design, refine, reps, f"{r['coverage']:.3f}", f"{r['min_cov']:.3f}", f"{r['width']:.2f}",
                         f"{floors[design]:.2f}", f"{r['rmse']:.2f}", f"{1e3 * r['cpu']:.0f}", r["labels"]])
    print_table(f"Coverage of 95 % intervals and width (n = {n}, d = {d}; per-coefficient binomial band "
                f"0.95 +- {band:.3f})",
                ["design", "refine", "reps", "coverage", "min coef", "se / oracle", "floor", "RMSE / oracle se",
                 "CPU ms/fit", "inference_"], rows)


if __name__ == "__main__":
    main()
