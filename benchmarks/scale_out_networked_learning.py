r"""The networked protocol as a distributed run: 50 agents as Dask tasks against the in-process run.

A layered DAG of ``--n-agents`` agents (10 layers, 2 parents per agent from the layer above, the output
agent the last one) on ``m = --m`` rows of ``make_gaussian(10, "ar1", rho=0.5)``; each agent sees one
feature (cyclic allocation). For the full protocol (``m`` floats per edge) and the shared Gaussian sketch
and CountSketch (``k`` floats per edge, at the default ``k``; CountSketch also at ``k = 1000``) it fits
``NetworkedDAGRegressor(engine="messages")`` in this process and with ``executor="dask"`` on a
``LocalCluster`` of 2 workers x 1 thread (each agent a task taking its parents' message futures), and
reports

* the largest difference of the output agent's predictions on 1,000 fresh rows (must be <= 1e-12);
* the bytes serialised per edge (``communication_bytes_``, median over edges) against the nominal
  ``8 m`` or ``8 k`` (``communication_nominal_bytes_``) and the overhead;
* wall time (median of ``--repeat``) and CPU time: this process's for the in-process fit; the workers'
  (``client.run(time.process_time)`` before and after, summed) plus this process's for the Dask fit;
* peak RSS per worker (``ru_maxrss``, after the runs).

Run::

    python benchmarks/scale_out_networked_learning.py            # m = 1e5, 50 agents (a few minutes)
    python benchmarks/scale_out_networked_learning.py --quick    # m = 1e4, 20 agents (about a minute)

Benchmarks are not tests: nothing here asserts a time.
"""

from __future__ import annotations

import resource
import statistics
import time
import warnings

import numpy as np

from algos.networked_learning import (
    NetworkedDAGRegressor,
    cyclic_allocation,
    default_sketch_size,
    make_gaussian,
    make_layered_dag,
)

try:  # run as a module (python -m benchmarks.scale_out_networked_learning) or as a script
    from ._common import environment, fmt_s, make_parser, print_table, ship_by_value
except ImportError:  # pragma: no cover - script mode
    from _common import environment, fmt_s, make_parser, print_table, ship_by_value

D = 10
WIDTH = 5


def _worker_cpu(client):
    return sum(client.run(time.process_time).values())


def _worker_rss_mib(client):
    def rss():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux

    return max(client.run(rss).values())


def _timed(fit, repeat, client=None):
    """``(median wall, median CPU, last estimator)``; CPU is this process's plus the workers' with a client."""
    walls, cpus, est = [], [], None
    for _ in range(repeat):
        w0 = _worker_cpu(client) if client is not None else 0.0
        c0, t0 = time.process_time(), time.perf_counter()
        est = fit()
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0 + ((_worker_cpu(client) - w0) if client is not None else 0.0)
        walls.append(wall)
        cpus.append(cpu)
    return statistics.median(walls), statistics.median(cpus), est


def main(argv=None):
    parser = make_parser(__doc__.splitlines()[0], sections=("a",))
    parser.add_argument("--m", type=int, default=None, help="rows of the shared sample (default 1e5; --quick 1e4)")
    parser.add_argument("--n-agents", type=int, default=None,
                        help=f"agents, a multiple of {WIDTH} (default 50; --quick 20)")
    args = parser.parse_args(argv)
    m = args.m or (10_000 if args.quick else 100_000)
    n_agents = args.n_agents or (20 if args.quick else 50)
    if n_agents % WIDTH or n_agents < WIDTH:
        raise SystemExit(f"--n-agents must be a positive multiple of {WIDTH}; got {n_agents}.")
    repeat = args.repeat or (1 if args.quick else 3)

    import distributed

    ship_by_value("dask")
    graph = make_layered_dag(n_agents // WIDTH, WIDTH, 2, random_state=0)
    fs = cyclic_allocation(graph, D)
    out = n_agents - 1
    model = make_gaussian(D, kind="ar1", rho=0.5)
    X, y = model.sample(m, random_state=0)
    X_test, _ = model.sample(1000, random_state=1)
    k_default = min(default_sketch_size(D), m)
    cases = [("full", dict(protocol="full"))]
    for sketch, ks in (("gaussian", (k_default,)), ("countsketch", (k_default, 1000))):
        for k in ks:
            if k <= m:
                cases.append((f"{sketch}, k = {k}", dict(protocol="sketch", sketch=sketch, k=k, random_state=0)))

    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the default k sits above the SketchSizeWarning level; k = 1000 too
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            for name, kw in cases:
                kw = dict(graph=graph, feature_sets=fs, output_agent=out, engine="messages", **kw)
                wall_in, cpu_in, ref = _timed(lambda: NetworkedDAGRegressor(**kw).fit(X, y), repeat)
                n_warm = min(m, 2000)  # compiles the sketch kernels on the workers
                NetworkedDAGRegressor(**kw, executor="dask").fit(X[:n_warm], y[:n_warm])
                wall_dk, cpu_dk, got = _timed(lambda: NetworkedDAGRegressor(**kw, executor="dask").fit(X, y),
                                              repeat, client)
                diff = float(np.max(np.abs(got.predict(X_test) - ref.predict(X_test))))
                measured = statistics.median(got.communication_bytes_.values())
                nominal = statistics.median(got.communication_nominal_bytes_.values())
                assert got.communication_bytes_ == ref.communication_bytes_
                rows.append([name, f"{diff:.1e}", f"{measured:,.0f}", f"{nominal:,.0f}",
                             f"{measured - nominal:,.0f} ({100 * (measured / nominal - 1):.1f} %)",
                             fmt_s(wall_in), fmt_s(cpu_in), fmt_s(wall_dk), fmt_s(cpu_dk)])
            rss = _worker_rss_mib(client)

    print(f"# scale_out networked_learning: {n_agents} agents, {graph.number_of_edges()} edges, m = {m:,}, "
          f"d = {D}\n\n{environment()}\n")
    print_table(
        f"In-process vs Dask (LocalCluster 2 workers x 1 thread), medians of {repeat}; "
        f"peak RSS per worker {rss:,.0f} MiB",
        ["messages", "max |pred diff|", "bytes/edge measured", "bytes/edge nominal", "overhead",
         "in-process wall", "in-process CPU", "dask wall", "dask CPU (workers + client)"],
        rows,
    )


if __name__ == "__main__":
    main()
