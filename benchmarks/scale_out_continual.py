"""Scale-out of exact streaming LDA: a Dask fit over lazily generated blocks vs one in-process stream.

The data set (``--n-samples`` rows of ``--d`` features, ``--classes`` Gaussian classes) is generated
block by block, each block from its own seed ``(seed, block index)``, so no process ever holds more
than a block. Two fits of ``StreamingLDA(covariance="exact")`` on the same data:

* **in-process stream**: one process generates block after block and calls ``partial_fit`` on it
  (BLAS limited to 1 thread, as on a 1-thread worker);
* **two streams at once**: two processes (a ``concurrent.futures`` pool), each streaming every other
  block, their states merged: the same concurrency as the cluster without Dask, which separates
  what two busy cores cost from what Dask costs;
* **Dask**: :func:`algos.continual.fit_dask` on a ``distributed.LocalCluster`` of 2 workers x 1
  thread: the blocks are generated and fitted on the workers and the states tree-merged.

Printed: CPU seconds per sample (process CPU time of the stream; summed over the workers, plus the
client, for Dask), wall time, peak RSS per worker, and the largest difference of the two states
(means, covariance, predict_proba on one block). Medians over ``--repeat`` runs. Run::

    python benchmarks/scale_out_continual.py --n-samples 1000000 --d 512
    python benchmarks/scale_out_continual.py --quick
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import resource
import statistics
import time

import numpy as np

try:
    from ._common import environment, make_parser, markdown_table
except ImportError:  # run as a script
    from _common import environment, make_parser, markdown_table


def make_labels(seed, index, rows, n_classes):
    """Labels of block ``index``, from their own generator ``(seed, index, 0)``."""
    return np.random.default_rng([seed, index, 0]).integers(0, n_classes, rows)


def make_features(seed, index, rows, d, n_classes):
    """Samples of block ``index``: class centre + standard normal noise from the generator ``(seed, index, 1)``."""
    centres = np.random.default_rng(seed).normal(scale=2.0, size=(n_classes, d))
    X = np.random.default_rng([seed, index, 1]).standard_normal((rows, d))
    X += centres[make_labels(seed, index, rows, n_classes)]
    return X


def make_block(seed, index, rows, d, n_classes):
    """Block ``index`` of the data set, ``(X, y)``."""
    return make_features(seed, index, rows, d, n_classes), make_labels(seed, index, rows, n_classes)


def block_sizes(n, chunk):
    return [min(chunk, n - a) for a in range(0, n, chunk)]


def fit_stream(args):
    from threadpoolctl import threadpool_limits

    from algos.continual import StreamingLDA

    est = StreamingLDA()
    with threadpool_limits(1):
        c0, t0 = time.process_time(), time.perf_counter()
        for i, rows in enumerate(block_sizes(args.n_samples, args.chunk)):
            est.partial_fit(*make_block(args.seed, i, rows, args.d, args.classes))
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    return est, cpu, wall


def _stream_part(args, indices):
    """One process's share of the blocks, streamed with ``partial_fit``: ``(state, CPU seconds)``."""
    from threadpoolctl import threadpool_limits

    from algos.continual import StreamingLDA

    sizes = block_sizes(args.n_samples, args.chunk)
    est = StreamingLDA()
    with threadpool_limits(1):
        c0 = time.process_time()
        for i in indices:
            est.partial_fit(*make_block(args.seed, i, sizes[i], args.d, args.classes))
        return est, time.process_time() - c0


def fit_two_streams(pool, args):
    """Two processes at once, each streaming every other block; the two states merged here."""
    n_blocks = len(block_sizes(args.n_samples, args.chunk))
    t0 = time.perf_counter()
    (a, cpu_a), (b, cpu_b) = pool.map(_stream_part, [args, args], [range(0, n_blocks, 2), range(1, n_blocks, 2)])
    return a.merge(b), cpu_a + cpu_b, time.perf_counter() - t0


def fit_on_cluster(client, args):
    import dask
    import dask.array as da

    from algos.continual import StreamingLDA, fit_dask

    features, labels = dask.delayed(make_features, pure=True), dask.delayed(make_labels, pure=True)
    Xs, ys = [], []
    for i, rows in enumerate(block_sizes(args.n_samples, args.chunk)):  # X and y of a block: separate tasks
        Xs.append(da.from_delayed(features(args.seed, i, rows, args.d, args.classes), shape=(rows, args.d),
                                  dtype=np.float64))
        ys.append(da.from_delayed(labels(args.seed, i, rows, args.classes), shape=(rows,), dtype=np.int64))
    X, y = da.concatenate(Xs), da.concatenate(ys)
    w0 = client.run(time.process_time)
    c0, t0 = time.process_time(), time.perf_counter()
    est = fit_dask(StreamingLDA(), X, y)
    wall, client_cpu = time.perf_counter() - t0, time.process_time() - c0
    w1 = client.run(time.process_time)
    return est, sum(w1[k] - w0[k] for k in w1), client_cpu, wall


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main(argv=None):
    p = make_parser(__doc__, ["scale_out"])
    p.add_argument("--n-samples", type=int, default=1_000_000, help="rows (default 10^6)")
    p.add_argument("--d", type=int, default=512, help="features (default 512)")
    p.add_argument("--classes", type=int, default=10, help="classes (default 10)")
    p.add_argument("--chunk", type=int, default=20_000, help="rows per block (default 20000)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.quick:
        args.n_samples, args.d, args.chunk = 40_000, 64, 5_000
    repeat = args.repeat or (1 if args.quick else 3)
    for name in ("n_samples", "d", "classes", "chunk", "repeat"):
        if (repeat if name == "repeat" else getattr(args, name)) < 1:
            raise SystemExit(f"--{name.replace('_', '-')} must be at least 1.")

    import distributed

    print(environment())
    print(f"n = {args.n_samples}, d = {args.d}, K = {args.classes}, {len(block_sizes(args.n_samples, args.chunk))} "
          f"blocks of <= {args.chunk} rows, medians of {repeat}\n")
    stream = [fit_stream(args) for _ in range(repeat)]
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(time.sleep, [0.1, 0.1]))  # untimed: the processes start
        list(pool.map(_stream_part, [args, args], [range(0), range(0)]))  # untimed: the package is imported
        pairs = [fit_two_streams(pool, args) for _ in range(repeat)]
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None)
    with distributed.Client(cluster) as client:
        small = min(args.chunk, 1000)
        warm = argparse.Namespace(**{**vars(args), "n_samples": 4 * small, "chunk": small})
        fit_on_cluster(client, warm)  # untimed: the workers import the package
        runs = [fit_on_cluster(client, args) for _ in range(repeat)]
        rss = client.run(peak_rss_mib)
    cluster.close()

    ref = stream[-1][0]
    Xp, _ = make_block(args.seed, 10**6, 2000, args.d, args.classes)

    def equality(merged):
        diff = max(np.abs(merged.means_ - ref.means_).max(), np.abs(merged.covariance_ - ref.covariance_).max(),
                   np.abs(merged.predict_proba(Xp) - ref.predict_proba(Xp)).max())
        same = bool(np.array_equal(merged.counts_, ref.counts_))
        return diff, same, f"max |diff| {diff:.1e}, counts {'equal' if same else 'DIFFER'}"

    diff, same_counts, eq_dask = equality(runs[-1][0])
    _, _, eq_pair = equality(pairs[-1][0])
    p_cpu, p_wall = statistics.median(r[1] for r in pairs), statistics.median(r[2] for r in pairs)
    n = args.n_samples
    s_cpu, s_wall = statistics.median(r[1] for r in stream), statistics.median(r[2] for r in stream)
    w_cpu = statistics.median(r[1] for r in runs)
    c_cpu = statistics.median(r[2] for r in runs)
    d_wall = statistics.median(r[3] for r in runs)
    rows = [
        ["in-process partial_fit stream (1 thread)", f"{s_cpu / n * 1e6:.2f}", "1.00x", f"{s_wall:.1f}",
         f"{peak_rss_mib():.0f} (this process)", "reference"],
        ["two in-process streams at once (2 processes x 1 thread), merged", f"{p_cpu / n * 1e6:.2f}",
         f"{p_cpu / s_cpu:.2f}x", f"{p_wall:.1f}", "", eq_pair],
        ["fit_dask, LocalCluster 2 workers x 1 thread", f"{(w_cpu + c_cpu) / n * 1e6:.2f} "
         f"(workers {w_cpu / n * 1e6:.2f} + client {c_cpu / n * 1e6:.2f})", f"{(w_cpu + c_cpu) / s_cpu:.2f}x",
         f"{d_wall:.1f}", " / ".join(f"{v:.0f}" for v in rss.values()), eq_dask],
    ]
    print(markdown_table(["fit", "CPU µs / sample", "CPU vs stream", "wall s", "peak RSS MiB (per worker)",
                          "equality"], rows))
    print(f"\nequal to 1e-10: {diff <= 1e-10 and same_counts}")


if __name__ == "__main__":
    main()
