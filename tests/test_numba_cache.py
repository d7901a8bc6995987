"""No shared numba cache can crash the package.

numba's on-disk cache is not safe for ``parallel=True`` kernels and the jitted functions around them:
processes that compile into one cache at the same time, or in a different order, write entries whose
native callee names disagree, and loading them segfaults (numba issues #10128 and #8578). Every Dask,
Ray or joblib worker, every pytest-xdist worker and the CLI compile into one cache, so the package
never caches a ``parallel=True`` kernel, a function it calls (transitively) or a function that calls
one (transitively): those are compiled in each process. Every other kernel keeps ``cache=True``.
(Caching the serial callees of the parallel kernels was tried: this stress test then crashed the demo
with a segmentation fault in one CI run of two.)

* the rule, checked on the call graph of every numba dispatcher in ``algos``, ``accel`` and ``theory``;
* the stress test: several processes start at once on an empty cache, each running the small fits of
  ``algos._numba_workload`` in its own module order, for two rounds (the second loads what the first
  wrote), then ``algos demo --quick`` on that cache: no process may die.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import random
import subprocess
import sys
from pathlib import Path

import pytest
from numba.core.caching import NullCache
from numba.core.registry import CPUDispatcher

from algos._numba_workload import MODULES

ROOT = Path(__file__).resolve().parents[1]
# two processes a round: they compile into the empty cache at the same time, each in its own module order
# (three cost 70 CPU-s more of the suite's budget for the same concurrency)
N_PROCESSES = 2
N_ROUNDS = 2
ROUND_TIMEOUT_S = 600  # one round: the processes compiling every module on 2 loaded cores (~1-3 min measured)


def _dispatchers():
    found = {}
    for top in ("algos", "accel", "theory"):
        package = importlib.import_module(top)
        for info in pkgutil.walk_packages(package.__path__, top + "."):
            try:
                module = importlib.import_module(info.name)
            except ImportError:  # an optional extra (torch, flwr) that this environment lacks
                continue
            for name, obj in vars(module).items():
                if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == module.__name__:
                    found[f"{module.__name__}.{name}"] = obj
    return found


def _call_graph(dispatchers):
    by_id = {id(d): name for name, d in dispatchers.items()}
    graph = {}
    for name, d in dispatchers.items():
        scope = d.py_func.__globals__
        graph[name] = {by_id[id(scope[g])] for g in d.py_func.__code__.co_names
                       if id(scope.get(g)) in by_id}
    return graph


def _reach(start, graph):
    seen, stack = set(start), list(start)
    while stack:
        for nxt in graph[stack.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def _is_cached(dispatcher):
    return not isinstance(dispatcher._cache, NullCache)


def test_parallel_kernels_their_callees_and_callers_are_not_cached():
    dispatchers = _dispatchers()
    graph = _call_graph(dispatchers)
    parallel = {n for n, d in dispatchers.items() if d.targetoptions.get("parallel")}
    # the walk sees the kernels: the parallel ones of four modules, and cached serial ones elsewhere
    assert {n.split(".")[1] for n in parallel} >= {"continual", "fair_matching", "federated", "point_process"}
    assert "algos.point_process._kernels.clip_areas" in parallel
    assert sum(_is_cached(d) for d in dispatchers.values()) >= 50
    # callees are found through the module globals (clip_areas -> _clip_halfplane)
    assert "algos.point_process._kernels._clip_halfplane" in graph["algos.point_process._kernels.clip_areas"]
    callers = {n: set() for n in graph}
    for name, callees in graph.items():
        for callee in callees:
            callers[callee].add(name)
    unsafe = _reach(parallel, graph) | _reach(parallel, callers)
    cached = sorted(n for n in unsafe if _is_cached(dispatchers[n]))
    assert not cached, f"cache=True on a parallel kernel or a function next to one in the call graph: {cached}"


def _orders(n_processes, n_rounds):
    rng = random.Random(20261206)
    orders = []
    for _ in range(n_rounds):
        round_orders = []
        for _ in range(n_processes):
            order = list(MODULES)
            rng.shuffle(order)
            round_orders.append(order)
        orders.append(round_orders)
    return orders


WORKER = (
    "import sys, warnings\n"
    "warnings.simplefilter('ignore')\n"
    "from algos import _numba_workload\n"
    "for name in sys.argv[1].split(','):\n"
    "    _numba_workload.run(name)\n"
)


@pytest.mark.slow
def test_concurrent_processes_on_an_empty_cache_never_crash(tmp_path):
    cache = tmp_path / "numba_cache"
    cache.mkdir()
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONWARNINGS="ignore")
    for r, round_orders in enumerate(_orders(N_PROCESSES, N_ROUNDS)):
        procs = [subprocess.Popen([sys.executable, "-c", WORKER, ",".join(order)], cwd=ROOT, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for order in round_orders]
        for order, proc in zip(round_orders, procs):
            out, _ = proc.communicate(timeout=ROUND_TIMEOUT_S)
            assert proc.returncode == 0, (f"round {r}: a process running {order} ended with {proc.returncode} "
                                          f"(-11 is a segmentation fault):\n{out[-3000:]}")
    assert any(cache.rglob("*.nbi")), "the workers wrote no cache entries: the stress test tested nothing"
    demo = subprocess.run([sys.executable, "-m", "algos.cli", "demo", "--quick", "--modules",
                           "hetero_regression,point_process", "--out", str(tmp_path / "report")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=ROUND_TIMEOUT_S)
    assert demo.returncode == 0, f"demo ended with {demo.returncode}:\n{demo.stdout[-2000:]}\n{demo.stderr[-2000:]}"
