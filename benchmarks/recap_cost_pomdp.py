r"""Cost of a RECAP fit against K and the solver's policy graph, and the blind diagnosis.

For each model (a name of a Cassandra file in ``$ALGOS_SHARED_DATA/pomdp`` or ``../shared/data/pomdp``,
or the path of a ``.POMDP`` or ``.pomdpx`` file, e.g. SARSOP's ``Hallway2.pomdpx``, 92 states) one
``PointBasedSolver(time_limit=--solver-time, random_state=0)`` run gives the vectors; then
``RECAPController(n_memory=K, random_state=0).fit(model, alphas=solver)`` runs for each K in a
fresh child process (process CPU time of the fit, one thread, and the child's peak RSS). The table
gives the CPU seconds, the exact value ``V^F(b0)``, the solver's lower bound ``L``, the construction
returned, the policy-graph size, whether the controller is blind (with the diagnosis' verdict) and the
cost growth ``cost(K) / cost(K')`` against the previous K of the list (``K' = K / 2`` with the
default ``--ks``): a fit whose cost is linear in K has ratio 2 per doubling.

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/recap_cost_pomdp.py [--quick]

``--quick``: tiger.95 and 4x3.95, K = 2, 4, a 2-s solver run (a smoke run). Nothing here asserts a time.
``--saved DIR``: the solver run of each model is pickled to ``DIR/<model>.pkl`` (with the model) the
first time and loaded from there afterwards, so that two checkouts compare their fits on the same
vectors (the solver's ``time_limit`` counts CPU time: two runs differ).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import resource
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import environment, make_parser, print_table  # noqa: E402


def _data_dir():
    env = os.environ.get("ALGOS_SHARED_DATA")
    return Path(env) / "pomdp" if env else Path(__file__).resolve().parents[2] / "shared" / "data" / "pomdp"


def _read(name):
    """The model named ``name``: a path of a ``.POMDP``/``.pomdpx`` file, else a file of the data folder."""
    from algos.pomdp.io import read_pomdp, read_pomdpx

    path = Path(name)
    if not path.exists():
        path = _data_dir() / f"{name}.POMDP"
    return (read_pomdpx if path.suffix.lower() == ".pomdpx" else read_pomdp)(path), path.stem


def _fit_child(args, queue):
    model, solver, K = args
    from algos.pomdp import RECAPController

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.process_time()
        est = RECAPController(n_memory=K, random_state=0).fit(model, alphas=solver)
        cpu = time.process_time() - t
    cert = est.certificate_
    verdict = "" if cert is None else (
        "exhaustive: optimal" if cert["exhaustive"] and cert["exhaustive"]["optimal"]
        else f"converse ceiling {cert['converse']['k_node_upper']:.4g}" if cert["converse"] else cert["kind"])
    queue.put((cpu, est.value_, est.construction_, est.policy_graph_size_, est.blind_, verdict,
               resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def main(argv=None):
    p = make_parser(__doc__, ["cost"])
    p.add_argument("--models", default="tiger-grid,hallway")
    p.add_argument("--ks", default="4,8,16,32")
    p.add_argument("--solver-time", type=float, default=5.0)
    p.add_argument("--saved", default=None, help="folder of pickled (model, solver) runs, made when missing")
    args = p.parse_args(argv)
    if args.quick:
        args.models, args.ks, args.solver_time = "tiger.95,4x3.95", "2,4", 2.0
    from algos.pomdp import PointBasedSolver
    ctx = mp.get_context("fork")
    print(environment())
    for name in args.models.split(","):
        key = Path(name).stem if Path(name).exists() else name  # (a file's stem, else the data name)
        saved = None if args.saved is None else Path(args.saved) / f"{key}.pkl"
        if saved is not None and saved.exists():
            model, solver = pickle.loads(saved.read_bytes())
            name = key
        else:
            model, name = _read(name)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                solver = PointBasedSolver(time_limit=args.solver_time, random_state=0).fit(model)
            if saved is not None:
                saved.parent.mkdir(parents=True, exist_ok=True)
                saved.write_bytes(pickle.dumps((model, solver)))
        lower = float((solver.alphas_ @ model.b0).max())
        rows, prev = [], None
        for K in (int(k) for k in args.ks.split(",")):
            q = ctx.Queue()
            proc = ctx.Process(target=_fit_child, args=((model, solver, K), q))
            proc.start()
            cpu, value, how, graph, blind, verdict, rss = q.get()
            proc.join()
            growth = "" if prev is None else f"{cpu / max(prev[1], 1e-9):.2f} (x{K / prev[0]:g} K)"
            prev = (K, cpu)
            rows.append([K, f"{cpu:.1f}", growth, f"{value:.6f}", f"{lower:.6f}", how, graph, blind, verdict,
                         f"{rss:.0f}"])
        print_table(f"{name}: RECAP fit cost (solver {args.solver_time:g} CPU-s, L = {lower:.6f})",
                    ["K", "CPU s", "cost growth", "value", "L", "construction", "graph nodes", "blind", "diagnosis",
                     "peak RSS MiB"], rows)


if __name__ == "__main__":
    main()
