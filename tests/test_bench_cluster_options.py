"""The benchmarks' Monte-Carlo grids on a cluster: ``--backend dask|ray`` gives the sequential records.

``benchmarks/bench_networked_learning.py`` section (c) (every k x protocol x seed cell) and
``benchmarks/bench_fair_matching.py`` sections (b) (every size) and (c) (every instance) run their
cells as ``run_sweep`` tasks. Each cell uses fixed seeds, so the records (timings aside: the keys
ending in ``_s``) must not depend on where the cells run. Tiny grids, a real 2-worker Dask
``LocalCluster`` in this process and, when Ray is installed, a local 2-CPU Ray session.
"""

import importlib.util
import os
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
MODULES = ("bench_networked_learning", "bench_fair_matching")


@pytest.fixture(scope="module")
def bench():
    """The two benchmark modules, imported by path (``_common`` found next to them)."""
    added = str(BENCH) not in sys.path
    if added:
        sys.path.insert(0, str(BENCH))
    before = set(sys.modules)
    mods = {}
    try:
        for name in MODULES:
            spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod  # tasks pickled by reference find it (in-process workers)
            spec.loader.exec_module(mod)
            mods[name] = mod
        yield mods
    finally:
        for name in set(sys.modules) - before:
            if name in MODULES or name == "_common":
                del sys.modules[name]
        if added:
            sys.path.remove(str(BENCH))


def _untimed(records):
    return [{k: v for k, v in r.items() if not k.endswith("_s")} for r in records]


def _grids(bench, sweep, only=None):
    """The tiny grids of the wired sections (all, or those named in ``only``), run with ``sweep``."""
    nl, fm = bench["bench_networked_learning"], bench["bench_fair_matching"]
    grids = {
        "networked (c)": lambda: nl.section_c_records(1000, (50,), 2, sweep=sweep),
        "fair (b)": lambda: fm.section_b_records((200, 300), 1, sweep=sweep),
        "fair (c)": lambda: fm.section_c_records(30, 1, sweep=sweep),
    }
    return {name: run() for name, run in grids.items() if only is None or name in only}


@pytest.fixture(scope="module")
def sequential(bench):
    return _grids(bench, None)


def test_sequential_records_are_complete_and_deterministic(bench, sequential):
    nl = bench["bench_networked_learning"]
    recs = sequential["networked (c)"]
    # per design: full for 2 seeds, then 3 protocols x 2 seeds at k = 50
    assert len(recs) == 2 * (2 + 3 * 2)
    assert [(r["design"], r["protocol"], r["seed"]) for r in recs[:4]] == [
        ("gaussian", "full", 0), ("gaussian", "full", 1), ("gaussian", "sketch gaussian", 0),
        ("gaussian", "sketch gaussian", 1)]
    assert all(r["excess"] >= 0 and r["fit_s"] >= 0 for r in recs)
    assert {r["missed"] is None for r in recs if r["protocol"] != "subsample"} == {True}
    assert {type(r["missed"]) for r in recs if r["protocol"] == "subsample"} == {bool}
    # one cell alone gives the value it has in the grid (it depends on its seeds only)
    r = recs[5]
    alone = nl.c_cell(r["design"], r["protocol"], r["k"], r["seed"], r["m"])
    assert alone["excess"] == r["excess"] and alone["missed"] == r["missed"]
    for b in sequential["fair (b)"]:
        assert b["ours_size"] == b["nx_size"] > 0
    for c in sequential["fair (c)"]:
        assert len(c["ours"]) == c["pairs"] == 6
        assert max(abs(a - b) for a, b in zip(c["ours"], c["lp"])) <= 1e-7
        assert max(abs(a - b) for a, b in zip(c["ours"], c["nx"])) <= 1e-7
    assert _untimed(_grids(bench, None, only=("fair (c)",))["fair (c)"]) == _untimed(sequential["fair (c)"])


def test_fair_c_second_case_alone_matches_its_place_in_the_shared_stream(bench, sequential):
    """Case 1 draws its allocation after case 0's draws even when it runs alone (on another worker)."""
    fm = bench["bench_fair_matching"]
    alone = fm.section_c_records(30, 1, cases=(1,))
    assert _untimed(alone) == _untimed(sequential["fair (c)"][1:])


def test_cluster_options_parse_and_refuse(bench):
    import argparse

    import _common

    p = _common.add_cluster_options(argparse.ArgumentParser())
    assert _common.sweep_options(p.parse_args([])) == {"backend": "sequential", "scheduler": None, "n_jobs": 1}
    opts = _common.sweep_options(p.parse_args(["--backend", "dask", "--scheduler", "tcp://10.0.0.1:8786"]))
    assert opts == {"backend": "dask", "scheduler": "tcp://10.0.0.1:8786", "n_jobs": 1}
    assert _common.describe_sweep(opts) == "dask, the cluster at tcp://10.0.0.1:8786, every worker"
    with pytest.raises(SystemExit, match=r"--scheduler needs --backend dask or ray; got --backend loky"):
        _common.sweep_options(p.parse_args(["--backend", "loky", "--scheduler", "tcp://10.0.0.1:8786"]))
    with pytest.raises(SystemExit, match=r"--n-jobs 4 needs a parallel --backend"):
        _common.sweep_options(p.parse_args(["--n-jobs", "4"]))


def test_cluster_backends_ship_the_shared_helpers_by_value(bench):
    """A worker without ``benchmarks/`` on its path can load a helper the cells call (timeit_median)."""
    import argparse
    import subprocess

    import _common
    import cloudpickle

    _common.sweep_options(_common.add_cluster_options(argparse.ArgumentParser()).parse_args(["--backend", "dask"]))
    try:
        blob = cloudpickle.dumps(_common.timeit_median)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules["_common"])
    load = ("import pickle, sys; f = pickle.loads(sys.stdin.buffer.read()); "
            "print(f(lambda: 41 + 1, repeat=1).result, '_common' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", load], input=blob, capture_output=True, cwd="/",
                         env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, timeout=60)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.decode().split() == ["42", "False"]


@pytest.mark.timeout(120)
def test_dask_local_cluster_gives_the_sequential_records(bench, sequential):
    distributed = pytest.importorskip("distributed")
    import _common

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, host="127.0.0.1",
                                  protocol="tcp://", scheduler_port=0,
                                  dashboard_address=None) as cluster:
        # the command-line route: --backend dask --scheduler ADDRESS (a client opened per grid)
        args = _common.add_cluster_options(_common.make_parser("t", ("c",))).parse_args(
            ["--backend", "dask", "--scheduler", cluster.scheduler_address])
        got = _grids(bench, _common.sweep_options(args))
        # the cells went to the cluster's workers
        ran = cluster.scheduler.task_prefixes
        assert ran, "no task reached the dask scheduler"
        # a running client, two jobs
        with distributed.Client(cluster, set_as_default=True):
            got_client = _grids(bench, {"backend": "dask", "n_jobs": 2})
    assert set(got) == set(got_client) == set(sequential)
    for name in sequential:
        assert _untimed(got[name]) == _untimed(sequential[name]), name
        assert _untimed(got_client[name]) == _untimed(sequential[name]), name


@pytest.mark.timeout(120)
def test_ray_local_session_gives_the_sequential_records(bench, sequential):
    """A local Ray session (Ray has no in-process local mode any more): 2 worker processes.

    Every ``run_sweep`` on Ray starts a pool of actors (~7 s here), so this runs the Monte-Carlo
    grid and the shared-stream grid; section (b) goes the same way and is covered on Dask above.
    """
    ray = pytest.importorskip("ray")
    if ray.is_initialized():  # pragma: no cover - someone else's session
        pytest.skip("a Ray session is already running in this process; this test starts its own")
    # the worker processes cannot import the benchmark modules by name: ship them by value
    shipped = [sys.modules[name] for name in MODULES + ("_common",)]
    for mod in shipped:
        ray.cloudpickle.register_pickle_by_value(mod)
    had = "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO" in os.environ
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        got = _grids(bench, {"backend": "ray"}, only=("networked (c)", "fair (c)"))
    finally:
        ray.shutdown()
        for mod in shipped:
            ray.cloudpickle.unregister_pickle_by_value(mod)
        if not had:
            os.environ.pop("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", None)
    assert set(got) == {"networked (c)", "fair (c)"}
    for name in got:
        assert _untimed(got[name]) == _untimed(sequential[name]), name
