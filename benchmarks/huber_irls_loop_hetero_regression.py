"""CPU time of ``HuberSoSRegressor.fit`` in memory (the IRLS loop over the numba pass), medians of ``--repeats``.

    python benchmarks/huber_irls_loop_hetero_regression.py [--n 20000] [--d 5] [--repeats 3] [--quick]

Prints a markdown table: solver, iterations, median process CPU time of one fit.
"""

import argparse
import statistics
import time

import numpy as np

from algos.hetero_regression import HuberSoSRegressor


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--d", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="n = 2000, one repeat")
    args = ap.parse_args()
    n, repeats = (2000, 1) if args.quick else (args.n, args.repeats)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, args.d))
    y = X @ rng.standard_normal(args.d) + rng.standard_normal(n) * np.where(rng.random(n) < 0.3, 30.0, 0.5)
    print(f"n = {n}, d = {args.d}, median of {repeats}\n\n| solver | n_iter | CPU ms |\n|---|---|---|")
    for solver in ("irls", "mm"):
        HuberSoSRegressor(delta=1.0, solver=solver).fit(X, y)  # compile / warm up
        times = []
        for _ in range(repeats):
            t = time.process_time()
            est = HuberSoSRegressor(delta=1.0, solver=solver).fit(X, y)
            times.append(time.process_time() - t)
        print(f"| {solver} | {est.n_iter_} | {1e3 * statistics.median(times):.2f} |")


if __name__ == "__main__":
    main()
