"""Scale-out benchmark: ``HuberSoSRegressor.fit`` on a lazily generated Dask array, on a LocalCluster.

X (n x 20) and y are generated block by block on the workers from a seed per block (never in one
place; X and y of a block by one task, as views of one ``[X | y]`` array), y = X beta + noise with noise
scale 1 on a quarter of the rows and 100 elsewhere. The cluster: 2 worker processes x 1 thread and the
scheduler in a process of its own (``SubprocessCluster``, no nanny; BLAS single-threaded in the workers as
a Nanny would set it, the workers' statistical profiler off unless ``--profiler``). Reported:

* CPU per row of the Dask fit: the workers' and the scheduler's process CPU (``client.run(time.process_time)``,
  ``client.run_on_scheduler(time.process_time)`` before and after) plus this client process's, each also
  apart, next to the in-memory ``fit`` at 10^6 x 20 (this process's CPU). The Dask figure includes
  generating the blocks again at every pass (the data are never stored); the in-memory figure does not
  include generating X, so the Dask CPU less (passes x one generating pass) is reported too.
* Peak RSS per worker (``ru_maxrss``).
* The largest coefficient difference to ``fit_chunks`` (the same iteration, in this process,
  chunk by chunk) on the same blocks.

Run: ``python benchmarks/scale_out_hetero_regression.py --n-rows 10000000`` (``--quick``: 2 * 10^5 rows;
``--repeats 3``: medians of 3 fits on one cluster). Run it from the repository root with ``PYTHONPATH=$PWD``.
"""

from __future__ import annotations

import argparse
import os
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


def gen_xy(rows, k):
    """Block ``k`` of X and y in one array, ``[X | y]`` (rows x 21): both from one task, X is not kept for y."""
    xb = gen_x(rows, k)
    return np.hstack([xb, gen_y(xb, k)[:, None]])


def dask_data(n, block):
    """X (n x 20) and y as views of one lazily generated ``[X | y]`` array: one generating task per block."""
    import dask.array as da

    rows = row_blocks(n, block)

    def xy_block(block_id=None):
        return gen_xy(rows[block_id[0]], block_id[0])

    Z = da.map_blocks(xy_block, chunks=(rows, (D + 1,)), dtype=np.float64, meta=np.empty((0, 0)))
    return Z[:, :D], Z[:, D]


def chunk_source(n, block):
    rows = row_blocks(n, block)

    def chunks():
        for k, m in enumerate(rows):
            xb = gen_x(m, k)
            yield xb, gen_y(xb, k)
    return chunks


_PASSES = [0]


def _count_passes():
    """Passes over the Dask blocks so far in this process (counted around the Dask oracle's pass)."""
    from algos.hetero_regression import _dask

    if not getattr(_dask.DaskPass, "_counted", False):
        run = _dask.DaskPass._run

        def counted(self, *args, **kwargs):
            _PASSES[0] += 1
            return run(self, *args, **kwargs)

        _dask.DaskPass._run, _dask.DaskPass._counted = counted, True
    return _PASSES[0]


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
    p.add_argument("--repeats", type=int, default=1, help="Dask fits on the one cluster; medians reported")
    p.add_argument("--profiler", action="store_true", help="keep the workers' statistical profiler on")
    p.add_argument("--no-chunked", action="store_true", help="skip the in-process fit_chunks comparison")
    args = p.parse_args()
    n, block, n_mem = args.n_rows, args.block, 1_000_000
    if args.quick:
        n, block, n_mem = 200_000, 50_000, 200_000
    import dask
    import distributed
    from distributed.deploy.subprocess import SubprocessCluster

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

    # the scheduler and each worker in a process of its own (no nanny): the CPU of each is measured apart; the
    # workers' statistical profiler (a sampling thread, for the dashboard) is off unless --profiler
    # workers' BLAS single-threaded (what a Nanny sets for the processes it spawns: OMP/MKL/OPENBLAS_NUM_THREADS=1)
    if not args.profiler:
        os.environ["DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED"] = "False"
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = "1"
    cluster = SubprocessCluster(host="127.0.0.1", n_workers=2, threads_per_worker=1,
                                worker_class="distributed.Worker", dashboard_address=None)
    client = distributed.Client(cluster)
    fits = []
    try:
        client.wait_for_workers(2, timeout=120)
        client.run(_warm_up)  # compile the kernels on the workers outside the timing
        X, y = dask_data(n, block)
        for _ in range(args.repeats):
            w0, s0 = client.run(time.process_time), client.run_on_scheduler(time.process_time)
            c0, t0 = time.process_time(), time.perf_counter()
            n_pass = _count_passes()
            est = HuberSoSRegressor(delta=1.0).fit(X, y)
            n_pass = _count_passes() - n_pass
            wall = time.perf_counter() - t0
            cpu_client = time.process_time() - c0
            w1, s1 = client.run(time.process_time), client.run_on_scheduler(time.process_time)
            fits.append((wall, sum(w1[k] - w0[k] for k in w1), s1 - s0, cpu_client, n_pass))
        rss = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        # the cost of one pass of only generating the blocks (every pass of the fit generates them again)
        g0 = client.run(time.process_time)
        dask.compute(X.sum(), y.sum())
        g1 = client.run(time.process_time)
        cpu_gen = sum(g1[k] - g0[k] for k in g1)
    finally:
        client.close()
        cluster.close()
    wall, cpu_workers, cpu_sched, cpu_client, n_pass = (float(np.median([f[j] for f in fits])) for j in range(5))
    cpu_all = cpu_workers + cpu_sched + cpu_client
    diff = "not run"
    if not args.no_chunked:
        ref = HuberSoSRegressor(delta=1.0).fit_chunks(chunk_source(n, block))
        diff = f"{max(np.max(np.abs(ref.coef_ - est.coef_)), np.max(np.abs(ref.coef_se_ - est.coef_se_))):.1e}"
    rss_mb = " / ".join(f"{v / 1024:.0f}" for v in rss.values())
    rows = [
        ["in-memory fit (this process)", f"{n_mem:,}", mem.n_iter_, "-", f"{cpu_mem:.2f}",
         f"{1e9 * cpu_mem / n_mem:.0f}", "-"],
        ["Dask fit: workers + scheduler + client", f"{n:,}", est.n_iter_, f"{wall:.1f}", f"{cpu_all:.2f}",
         f"{1e9 * cpu_all / n:.0f}", rss_mb],
        ["  of which the 2 workers", "", "", "", f"{cpu_workers:.2f}", f"{1e9 * cpu_workers / n:.0f}", ""],
        ["  of which the scheduler", "", "", "", f"{cpu_sched:.2f}", f"{1e9 * cpu_sched / n:.0f}", ""],
        ["  of which the client", "", "", "", f"{cpu_client:.2f}", f"{1e9 * cpu_client / n:.0f}", ""],
        ["one pass generating X and y only (workers)", f"{n:,}", "-", "-", f"{cpu_gen:.2f}",
         f"{1e9 * cpu_gen / n:.0f}", "-"],
        ["Dask fit less generating the data at every pass", f"{n:,}", f"{n_pass:.0f} passes", "-",
         f"{cpu_all - n_pass * cpu_gen:.2f}", f"{1e9 * (cpu_all - n_pass * cpu_gen) / n:.0f}", "-"],
    ]
    print_table("HuberSoSRegressor: in memory vs Dask", ["fit", "rows", "iterations", "wall s", "CPU s",
                                                          "CPU ns / row", "peak RSS per worker (MB)"], rows,
                notes=[f"max |coef or SE difference| to fit_chunks in this process on the same blocks: {diff}",
                       (f"Dask figures: median of {len(fits)} fit(s) on one cluster of 2 worker processes x 1 thread "
                        "and a scheduler process; the CPU counts the workers, the scheduler and this client process "
                        "and includes generating the blocks again at every pass; the in-memory figure does not "
                        "include generating X"),
                       "workers' statistical profiler: " + ("on" if args.profiler else "off")])


if __name__ == "__main__":
    main()
