"""Scale-out benchmark: ``HuberSoSRegressor.fit`` on a lazily generated Dask array, on a LocalCluster.

X (n x 20) and y are generated block by block on the workers from a seed per block (never in one
place), y = X beta + noise with noise scale 1 on a quarter of the rows and 100 elsewhere. Reported:

* CPU per row of the Dask fit (the workers' process CPU, measured with ``client.run(time.process_time)``
  before and after, plus this process's) next to the in-memory ``fit`` at 10^6 x 20 (this process's
  CPU). The Dask figure includes generating the blocks again at every pass (the data are never
  stored); the in-memory figure does not include generating X.
* Peak RSS per worker (``ru_maxrss``).
* The largest coefficient difference to ``fit_chunks`` (the same iteration, in this process,
  chunk by chunk) on the same blocks.

Run: ``python benchmarks/scale_out_hetero_regression.py --n-rows 10000000`` (``--quick``: 2 * 10^5 rows).
"""

from __future__ import annotations

import argparse
import resource
import time
import warnings

import numpy as np

from _common import environment, print_table

D = 20
SEED = 2026


def _beta():
    return np.linspace(-1.0, 1.0, D)


def gen_x(rows, k):
    """Block ``k`` of X: ``rows`` x 20 standard normals from the seed ``(SEED, k)``."""
    return np.random.default_rng([SEED, k, 0]).standard_normal((rows, D))


def gen_y(xb, k):
    """Block ``k`` of y from block ``k`` of X: 25 % of the rows with noise scale 1, the others 100."""
    rng = np.random.default_rng([SEED, k, 1])
    scale = np.where(rng.random(xb.shape[0]) < 0.25, 1.0, 100.0)
    return xb @ _beta() + scale * rng.standard_normal(xb.shape[0])


def row_blocks(n, block):
    return (block,) * (n // block) + ((n % block,) if n % block else ())


def dask_data(n, block):
    import dask.array as da

    rows = row_blocks(n, block)

    def x_block(block_id=None):
        return gen_x(rows[block_id[0]], block_id[0])

    def y_block(xb, block_id=None):
        return gen_y(xb, block_id[0])

    X = da.map_blocks(x_block, chunks=(rows, (D,)), dtype=np.float64, meta=np.empty((0, 0)))
    y = da.map_blocks(y_block, X, drop_axis=1, dtype=np.float64, meta=np.empty(0))
    return X, y


def chunk_source(n, block):
    rows = row_blocks(n, block)

    def chunks():
        for k, m in enumerate(rows):
            xb = gen_x(m, k)
            yield xb, gen_y(xb, k)
    return chunks


def _warm_up():
    from algos.hetero_regression import HuberSoSRegressor

    warnings.simplefilter("ignore")
    xb = gen_x(20_000, 0)
    HuberSoSRegressor(delta=1.0).fit_chunks(lambda: iter([(xb, gen_y(xb, 0))]))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n-rows", type=int, default=10_000_000, help="rows of the Dask fit (default 10^7)")
    p.add_argument("--block", type=int, default=1_000_000, help="rows per block (default 10^6)")
    p.add_argument("--quick", action="store_true", help="2 * 10^5 rows in blocks of 5 * 10^4 (a smoke run)")
    p.add_argument("--no-chunked", action="store_true", help="skip the in-process fit_chunks comparison")
    args = p.parse_args()
    n, block, n_mem = args.n_rows, args.block, 1_000_000
    if args.quick:
        n, block, n_mem = 200_000, 50_000, 200_000
    import dask
    import distributed

    from algos.hetero_regression import HuberSoSRegressor

    warnings.simplefilter("ignore")
    print(f"# scale_out: hetero_regression, n = {n:,} x {D}, blocks of {block:,} rows\n")
    print(environment(), "\n")

    # in-memory reference CPU per row
    xb = gen_x(n_mem, 0)
    yb = gen_y(xb, 0)
    HuberSoSRegressor(delta=1.0).fit(xb[:5000], yb[:5000])  # compile the kernels outside the timing
    c0 = time.process_time()
    mem = HuberSoSRegressor(delta=1.0).fit(xb, yb)
    cpu_mem = time.process_time() - c0
    del xb, yb

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                       host="127.0.0.1")
    client = distributed.Client(cluster)
    try:
        client.run(_warm_up)  # compile the kernels on the workers outside the timing
        X, y = dask_data(n, block)
        w0 = client.run(time.process_time)
        c0, t0 = time.process_time(), time.perf_counter()
        est = HuberSoSRegressor(delta=1.0).fit(X, y)
        wall = time.perf_counter() - t0
        cpu_client = time.process_time() - c0
        w1 = client.run(time.process_time)
        rss = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        # the cost of one pass of only generating the blocks (every pass of the fit regenerates them)
        g0 = client.run(time.process_time)
        dask.compute(X.sum(), y.sum())
        g1 = client.run(time.process_time)
        cpu_gen = sum(g1[k] - g0[k] for k in g1)
    finally:
        client.close()
        cluster.close()
    cpu_workers = sum(w1[k] - w0[k] for k in w1)
    diff = "not run"
    if not args.no_chunked:
        ref = HuberSoSRegressor(delta=1.0).fit_chunks(chunk_source(n, block))
        diff = f"{max(np.max(np.abs(ref.coef_ - est.coef_)), np.max(np.abs(ref.coef_se_ - est.coef_se_))):.1e}"
    rows = [
        ["in-memory fit (this process)", f"{n_mem:,}", mem.n_iter_, "-", f"{cpu_mem:.2f}",
         f"{1e9 * cpu_mem / n_mem:.0f}", "-"],
        ["Dask fit, LocalCluster 2 x 1", f"{n:,}", est.n_iter_, f"{wall:.1f}", f"{cpu_workers + cpu_client:.2f}",
         f"{1e9 * (cpu_workers + cpu_client) / n:.0f}", " / ".join(f"{v / 1024:.0f}" for v in rss.values())],
        ["one pass generating X and y only (workers)", f"{n:,}", "-", "-", f"{cpu_gen:.2f}",
         f"{1e9 * cpu_gen / n:.0f}", "-"],
    ]
    print_table("HuberSoSRegressor: in memory vs Dask", ["fit", "rows", "iterations", "wall s", "CPU s",
                                                          "CPU ns / row", "peak RSS per worker (MB)"], rows,
                notes=[f"max |coef or SE difference| to fit_chunks in this process on the same blocks: {diff}",
                       f"client CPU of the Dask fit: {cpu_client:.2f} s (this process also hosts the scheduler); the "
                       "Dask CPU includes regenerating the blocks at every pass (2-3 passes per iteration)"])


if __name__ == "__main__":
    main()
