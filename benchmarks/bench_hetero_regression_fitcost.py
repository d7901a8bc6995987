r"""CPU cost of ``SubsetOfSignalsRegressor().fit`` against ``HuberSoSRegressor().fit``, and of the first ``conf_int``.

Cells: the full grid of ``bench_hetero_regression.py`` section b (n in {2000, 20000}, d in {5, 20},
m / sqrt(nd) in {0.5, 1, 2, 4}, noisy sigma log-uniform on [10, 1e3], Pareto or two-level 1e4),
3 seeds per cell (``--quick``: n = 2000, d = 5, 2 seeds). Per cell, the medians over seeds of the
process CPU seconds of ``HuberSoSRegressor(delta=1).fit``, ``SubsetOfSignalsRegressor().fit`` and
the front door's first ``conf_int()`` call (which computes its standard errors: the window
bootstrap or the sandwich), and the ratios to the Huber fit. Run under ``OMP_NUM_THREADS=1``::

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_hetero_regression_fitcost.py            # ~5 minutes
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_hetero_regression_fitcost.py --quick    # ~10 s

(``PYTHONPATH`` selects the checkout whose ``algos`` is measured.)

The target line: the front door's ``fit`` at most 5x the Huber fit's CPU in every cell.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
import warnings

GRID_NOISES = {"loguniform": ("loguniform", 10.0, 1e3), "pareto": ("pareto", 10.0), "two-level": 1e4}
GRID_RATIOS = (0.5, 1.0, 2.0, 4.0)
SEED = 20260601


def _cpu(fn):
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def run(quick, ns):
    from algos.hetero_regression import HuberSoSRegressor, SubsetOfSignalsRegressor, make_subset_of_signals

    W = make_subset_of_signals(500, 5, 100, noisy_sigma=1e4, random_state=0)  # untimed warm-up (numba, imports)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        HuberSoSRegressor(delta=1.0).fit(W.X, W.y)
        SubsetOfSignalsRegressor().fit(W.X, W.y).conf_int()
    if quick:
        cells = [(2000, 5, nz, r) for nz in GRID_NOISES for r in (0.5, 1.0, 4.0)]
    else:
        cells = [(n, d, nz, r) for n in ns for d in (5, 20) for nz in GRID_NOISES for r in GRID_RATIOS]
    seeds = [SEED + k for k in range(2 if quick else 3)]
    rows, worst = [], 0.0
    for n, d, noise, ratio in cells:
        m = int(round(ratio * math.sqrt(n * d)))
        t_h, t_f, t_ci, kinds = [], [], [], set()
        for s in seeds:
            D = make_subset_of_signals(n, d, m, noisy_sigma=GRID_NOISES[noise], random_state=s)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t_h.append(_cpu(lambda: HuberSoSRegressor(delta=1.0).fit(D.X, D.y))[1])
                est, t = _cpu(lambda: SubsetOfSignalsRegressor().fit(D.X, D.y))
                t_f.append(t)
                t_ci.append(_cpu(est.conf_int)[1])
            kinds.add(f"{est.method_}/{est.inference_}")
        h, f, c = (statistics.median(v) for v in (t_h, t_f, t_ci))
        worst = max(worst, f / h)
        rows.append([n, d, noise, f"{ratio:g}", ", ".join(sorted(kinds)), f"{h:.3f}", f"{f:.3f}", f"{f / h:.1f}",
                     f"{c:.3f}", f"{(f + c) / h:.1f}"])
        print(f"  cell n={n} d={d} {noise} m/sqrt(nd)={ratio:g}: fit {f / h:.1f}x HuberSoS, "
              f"fit + conf_int {(f + c) / h:.1f}x", flush=True)
    return rows, worst


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 2000, d = 5, 2 seeds")
    parser.add_argument("--grid-n", default="2000,20000", metavar="N,N", help="sample sizes (default 2000,20000)")
    args = parser.parse_args(argv)
    rows, worst = run(args.quick, tuple(int(v) for v in args.grid_n.split(",")))
    head = ["n", "d", "noise", "m/sqrt(nd)", "method_/inference_", "CPU s HuberSoS fit", "CPU s front fit",
            "fit / HuberSoS", "CPU s first conf_int", "(fit + conf_int) / HuberSoS"]
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for r in rows:
        print("| " + " | ".join(str(v) for v in r) + " |")
    print(f"\ntarget: front fit <= 5x HuberSoS fit in every cell -> {'met' if worst <= 5 else 'NOT met'} "
          f"(worst {worst:.1f}x); medians over seeds of process CPU seconds")


if __name__ == "__main__":
    main()
