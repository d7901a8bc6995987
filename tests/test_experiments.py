"""Tests of algos.experiments: seeded sweeps and Monte-Carlo runs over joblib, and summarize."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from algos._validation import spawn_generators
from algos.experiments import monte_carlo, run_sweep, summarize
from tests._clusters import local_ray

# Summaries are compared with an explicit-loop reference: both are float64 sums of <= 50 terms.
RTOL = 1e-12


# Task functions live at module level so that every joblib backend can pickle them.
def draw_task(mu, n, random_state):
    x = random_state.normal(mu, 1.0, size=n)
    return {"mean": float(x.mean()), "first": float(x[0])}


def uniform_task(random_state):
    return random_state.random()


def vector_task(random_state, size=3):
    return random_state.random(size)


GRID = {"mu": [0.0, 5.0], "n": [1, 3]}


# ----------------------------------------------------------------------------------------------------
# reproducibility
# ----------------------------------------------------------------------------------------------------
def test_sweep_identical_across_n_jobs_and_backends():
    """Same seed, same records bit for bit: sequential, 2 loky workers, 2 threads, 'sequential'."""
    ref = run_sweep(draw_task, GRID, n_repeats=2, random_state=123, n_jobs=1)
    assert len(ref) == 8
    for n_jobs, backend in [(2, "loky"), (2, "threading"), (1, "sequential"), (-1, "threading")]:
        got = run_sweep(draw_task, GRID, n_repeats=2, random_state=123, n_jobs=n_jobs, backend=backend)
        assert got == ref, f"n_jobs={n_jobs}, backend={backend}"


def test_monte_carlo_identical_across_n_jobs_and_backends():
    ref = monte_carlo(uniform_task, 6, random_state=7)
    for n_jobs, backend in [(2, "loky"), (2, "threading"), (1, "multiprocessing")]:
        got = monte_carlo(uniform_task, 6, random_state=7, n_jobs=n_jobs, backend=backend)
        np.testing.assert_array_equal(got, ref, err_msg=f"n_jobs={n_jobs}, backend={backend}")


def test_sweep_seeds_follow_the_documented_spawn_tree():
    """Record (p, r) is func(**point_p, random_state=default_rng(SeedSequence(s).spawn(P)[p].spawn(R)[r]))."""
    recs = run_sweep(draw_task, GRID, n_repeats=3, random_state=99)
    grandchildren = [c.spawn(3) for c in np.random.SeedSequence(99).spawn(4)]
    points = [{"mu": 0.0, "n": 1}, {"mu": 0.0, "n": 3}, {"mu": 5.0, "n": 1}, {"mu": 5.0, "n": 3}]
    for i, rec in enumerate(recs):
        p, r = divmod(i, 3)
        expected = draw_task(**points[p], random_state=np.random.default_rng(grandchildren[p][r]))
        assert rec == {**points[p], "repeat": r, **expected}


def test_monte_carlo_matches_spawn_generators():
    got = monte_carlo(uniform_task, 5, random_state=2024)
    expected = [g.random() for g in spawn_generators(2024, 5)]
    np.testing.assert_array_equal(got, expected)


def test_more_repeats_and_appended_points_keep_earlier_records():
    small = run_sweep(draw_task, [{"mu": 1.0, "n": 2}], n_repeats=2, random_state=5)
    big = run_sweep(draw_task, [{"mu": 1.0, "n": 2}, {"mu": 2.0, "n": 2}], n_repeats=4, random_state=5)
    assert big[:2] == small


def test_children_are_independent_streams():
    recs = run_sweep(draw_task, {"mu": [0.0], "n": [1]}, n_repeats=50, random_state=0)
    firsts = np.array([r["first"] for r in recs])
    assert len(np.unique(firsts)) == 50
    # Lag-1 correlation of 50 N(0,1) draws: |rho| < 4/sqrt(50) ~ 0.57 fails with probability < 1e-4.
    rho = np.corrcoef(firsts[:-1], firsts[1:])[0, 1]
    assert abs(rho) < 4 / math.sqrt(50)
    vals = monte_carlo(vector_task, 20, random_state=0)
    assert vals.shape == (20, 3)
    assert len(np.unique(vals)) == vals.size


def test_same_generator_object_twice_gives_fresh_streams_but_int_reproduces():
    g = np.random.default_rng(1)
    a = monte_carlo(uniform_task, 3, random_state=g)
    b = monte_carlo(uniform_task, 3, random_state=g)
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(monte_carlo(uniform_task, 3, random_state=1),
                                  monte_carlo(uniform_task, 3, random_state=1))
    seq = np.random.SeedSequence(8)
    first = monte_carlo(uniform_task, 3, random_state=seq)
    np.testing.assert_array_equal(first, [g.random() for g in spawn_generators(np.random.SeedSequence(8), 3)])


def test_none_seed_runs():
    assert monte_carlo(uniform_task, 2).shape == (2,)


# ----------------------------------------------------------------------------------------------------
# grid handling and output
# ----------------------------------------------------------------------------------------------------
def test_grid_order_is_nested_loops_in_key_order():
    recs = run_sweep(lambda a, b, random_state: a * 10 + b, {"a": [1, 2], "b": [7, 8, 9]}, random_state=0)
    assert [(r["a"], r["b"]) for r in recs] == [(1, 7), (1, 8), (1, 9), (2, 7), (2, 8), (2, 9)]
    assert [r["value"] for r in recs] == [17, 18, 19, 27, 28, 29]
    assert list(recs[0]) == ["a", "b", "repeat", "value"]


def test_grid_list_of_points_and_empty_dict():
    pts = [{"a": 3, "b": [1, 2]}, {"a": 1}]
    recs = run_sweep(lambda random_state, **kw: len(kw), pts, n_repeats=2, random_state=0)
    assert [(r.get("a"), r["repeat"], r["value"]) for r in recs] == [(3, 0, 2), (3, 1, 2), (1, 0, 1), (1, 1, 1)]
    assert recs[0]["b"] == [1, 2]  # values of explicit points are used as they are
    recs = run_sweep(lambda random_state: 1, {}, n_repeats=3, random_state=0)
    assert recs == [{"repeat": 0, "value": 1}, {"repeat": 1, "value": 1}, {"repeat": 2, "value": 1}]


def test_grid_accepts_tuples_ranges_and_arrays():
    recs = run_sweep(lambda a, b, c, random_state: a + b + c,
                     {"a": (1, 2), "b": range(2), "c": np.array([0.5])}, random_state=0)
    assert [r["value"] for r in recs] == [1.5, 2.5, 2.5, 3.5]


def test_return_as_columns():
    cols = run_sweep(draw_task, {"mu": [0.0, 1.0], "n": [2]}, n_repeats=2, random_state=3, return_as="columns")
    recs = run_sweep(draw_task, {"mu": [0.0, 1.0], "n": [2]}, n_repeats=2, random_state=3)
    assert list(cols) == ["mu", "n", "repeat", "mean", "first"]
    assert cols["repeat"] == [0, 1, 0, 1]
    assert cols["mean"] == [r["mean"] for r in recs]


def test_monte_carlo_return_types():
    assert monte_carlo(uniform_task, 3, random_state=0).dtype == np.float64
    assert monte_carlo(functools.partial(vector_task, size=2), 3, random_state=0).shape == (3, 2)
    out = monte_carlo(lambda random_state: {"x": 1}, 2, random_state=0)
    assert out == [{"x": 1}, {"x": 1}]
    ragged = monte_carlo(lambda random_state: np.zeros(int(random_state.integers(1, 100))), 4, random_state=0)
    assert isinstance(ragged, list) and len(ragged) == 4


def test_progress_bar_with_verbose(capsys):
    run_sweep(draw_task, GRID, random_state=0, verbose=1)
    err = capsys.readouterr().err
    assert "sweep" in err and "4/4" in err
    monte_carlo(uniform_task, 3, random_state=0, backend="multiprocessing", verbose=1)  # non-streaming backend
    assert "3/3" in capsys.readouterr().err
    run_sweep(draw_task, GRID, random_state=0)
    assert capsys.readouterr().err == ""


def test_backend_none_uses_enclosing_parallel_config():
    from joblib import parallel_config

    ref = run_sweep(draw_task, GRID, random_state=4)
    with parallel_config(backend="threading", n_jobs=2):
        assert run_sweep(draw_task, GRID, random_state=4, backend=None, n_jobs=None) == ref


# ----------------------------------------------------------------------------------------------------
# errors
# ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"func": 3}, TypeError, r"^'func' must be callable; got 3 of type int\.$"),
        ({"grid": 5}, TypeError, r"^'grid' must be a dict of lists or a list of dicts; got int\.$"),
        ({"grid": "abc"}, TypeError, r"^'grid' must be a dict of lists or a list of dicts; got str\.$"),
        ({"grid": []}, ValueError, r"^'grid' must hold at least one point; got an empty list\.$"),
        ({"grid": [{"a": 1}, 2]}, TypeError, r"got an element of type int at position 1\.$"),
        ({"grid": {"a": 1}}, TypeError, r"^'grid' values must be lists of values; got 1 of type int for 'a'\. "
                                        r"Wrap a single value in a list: \[1\]\.$"),
        ({"grid": {"a": "xy"}}, TypeError, r"'grid' values must be lists of values; got 'xy' of type str"),
        ({"grid": {"a": {1, 2}}}, TypeError, r"'grid' values must be lists of values; got \{1, 2\} of type set"),
        ({"grid": {"a": []}}, ValueError, r"^'grid' values must be non-empty lists; got an empty list for 'a'\.$"),
        ({"grid": {1: [1]}}, TypeError, r"^'grid' keys must be parameter names \(str\); got 1 of type int\.$"),
        ({"grid": {"repeat": [1]}}, ValueError, r"^'grid' must not use the reserved name 'repeat'; reserved: "
                                                r"'random_state', 'repeat'\.$"),
        ({"grid": [{"random_state": 1}]}, ValueError, r"reserved name 'random_state' in point 0"),
        ({"n_repeats": 0}, ValueError, r"^'n_repeats' must be an int in \[1, inf\]; got 0\.$"),
        ({"n_repeats": 2.0}, TypeError, r"^'n_repeats' must be an int in \[1, inf\]; got 2\.0 of type float\.$"),
        ({"n_jobs": 0}, ValueError, r"^'n_jobs' must be None or a non-zero int \(-1 for all cores\); got 0\.$"),
        ({"n_jobs": 1.5}, TypeError, r"^'n_jobs' must be None or a non-zero int; got 1\.5 of type float\.$"),
        ({"n_jobs": True}, TypeError, r"^'n_jobs' must be None or a non-zero int; got True of type bool\.$"),
        ({"verbose": -1}, ValueError, r"^'verbose' must be an int in \[0, inf\]; got -1\.$"),
        ({"return_as": "frame"}, ValueError, r"^'return_as' must be one of \{'records', 'columns'\}; got 'frame'\.$"),
        ({"random_state": -1}, ValueError, r"^'random_state' must be a non-negative int; got -1\.$"),
        ({"random_state": "seed"}, TypeError, r"^'random_state' must be None, an int, a SeedSequence or a numpy "
                                              r"Generator; got str\.$"),
        ({"backend": "spark"}, ValueError, r"^'backend' must be one of \{.*'loky'.*\}; got 'spark'\.$"),
        ({"scheduler": "tcp://127.0.0.1:8786"}, ValueError, r"^'scheduler' is only used with backend 'dask' or "
                                                            r"'ray'; got scheduler='tcp://127\.0\.0\.1:8786' "
                                                            r"with backend='loky'\.$"),
        ({"scheduler": 8786, "backend": "dask"}, TypeError, r"^'scheduler' must be None or an address \(str\); "
                                                             r"got 8786 of type int\.$"),
        ({"backend": 3}, TypeError, r"^'backend' must be None, a joblib backend name \(str\) or a "
                                    r"ParallelBackendBase; got 3 of type int\.$"),
    ],
)
def test_run_sweep_errors(kwargs, exc, match):
    args = {"func": draw_task, "grid": GRID, **kwargs}
    with pytest.raises(exc, match=match):
        run_sweep(**args)


def test_returned_key_clashing_with_parameter():
    with pytest.raises(ValueError, match=r"^'func' returned the key 'mu', which clashes with a grid parameter"):
        run_sweep(lambda mu, random_state: {"mu": 1}, {"mu": [0]}, random_state=0)
    with pytest.raises(ValueError, match="'func' returned the key 'repeat'"):
        run_sweep(lambda random_state: {"repeat": 1}, {}, random_state=0)


def test_monte_carlo_errors():
    with pytest.raises(ValueError, match=r"^'n_runs' must be an int in \[1, inf\]; got 0\.$"):
        monte_carlo(uniform_task, 0)
    with pytest.raises(TypeError, match=r"^'n_runs' must be an int in \[1, inf\]; got 2\.5 of type float\.$"):
        monte_carlo(uniform_task, 2.5)
    with pytest.raises(TypeError, match="'func' must be callable"):
        monte_carlo(None, 2)
    with pytest.raises(ValueError, match="'backend' must be one of"):
        monte_carlo(uniform_task, 2, backend="nope")
    legacy = np.random.Generator(np.random.RandomState(0)._bit_generator)
    with pytest.raises(ValueError, match="'random_state' must be a Generator built from a SeedSequence"):
        monte_carlo(uniform_task, 2, random_state=legacy)


def test_errors_inside_func_propagate():
    def boom(random_state):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        monte_carlo(boom, 2, random_state=0)


# ----------------------------------------------------------------------------------------------------
# cluster engines: dask.distributed and ray, through joblib.parallel_config
# ----------------------------------------------------------------------------------------------------
@pytest.fixture
def dask_cluster():
    """A real 2-worker LocalCluster (threads: process workers would only add start-up time here) and
    its client, closed at the end of the test."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                       dashboard_address=None)
    try:
        client = distributed.Client(cluster)
        try:
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


@pytest.fixture(scope="module")
def ray_session():
    """One local Ray session for the module (start-up takes seconds), with 2 worker processes."""
    with local_ray() as ray:
        yield ray


def test_dask_records_bit_identical_to_sequential(dask_cluster):
    ref = run_sweep(draw_task, GRID, n_repeats=3, random_state=123)
    got = run_sweep(draw_task, GRID, n_repeats=3, random_state=123, backend="dask")
    assert got == ref
    ran_on = run_sweep(_worker_name, {}, n_repeats=8, random_state=0, backend="dask")
    workers = set(dask_cluster.scheduler_info()["workers"])
    assert {r["worker"] for r in ran_on} <= workers and len(workers) == 2  # the tasks went to the cluster
    np.testing.assert_array_equal(monte_carlo(uniform_task, 6, random_state=7, backend="dask", n_jobs=2),
                                  monte_carlo(uniform_task, 6, random_state=7))


def test_dask_scheduler_address_opens_and_closes_a_client(dask_cluster):
    """``scheduler=`` connects a client of its own for the call (the cluster's address here)."""
    ref = monte_carlo(vector_task, 5, random_state=3)
    got = monte_carlo(vector_task, 5, random_state=3, backend="dask", scheduler=dask_cluster.scheduler.address)
    np.testing.assert_array_equal(got, ref)


def _worker_name(random_state):
    from distributed import get_worker

    return {"worker": get_worker().address}


def test_dask_without_a_client_says_how_to_start_one(monkeypatch):
    distributed = pytest.importorskip("distributed")
    import algos._engines as engines

    monkeypatch.setattr(engines, "DASK_CONNECT_TIMEOUT", "1s")  # nothing listens on port 9: fail fast
    with pytest.raises(ValueError):  # precondition: no client in this process
        distributed.get_client()
    with pytest.raises(ValueError, match=r"^backend='dask' needs a running dask\.distributed client and none is "
                                         r"running: start one first"):
        run_sweep(draw_task, GRID, random_state=0, backend="dask")
    with pytest.raises(ValueError, match=r"no dask scheduler answers at 'scheduler'='tcp://127\.0\.0\.1:9'"):
        monte_carlo(uniform_task, 2, random_state=0, backend="dask", scheduler="tcp://127.0.0.1:9")


def test_engine_not_installed_says_which_extra(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_engines(name, *args, **kwargs):
        if name.split(".")[0] in ("distributed", "ray"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_engines)
    for backend, what in [("dask", "dask.distributed"), ("ray", "ray")]:
        with pytest.raises(ImportError, match=rf"^backend='{backend}' needs {what}, which is not installed: "
                                              r"pip install 'algos-theory\[scale\]'"):
            run_sweep(draw_task, GRID, random_state=0, backend=backend)


def test_ray_not_started_says_how_to_start_it(monkeypatch):
    ray = pytest.importorskip("ray")
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    with pytest.raises(ValueError, match=r"^backend='ray' needs a running Ray session and none is started: "
                                         r"call `ray\.init\(\)`"):
        monte_carlo(uniform_task, 2, random_state=0, backend="ray")


def test_ray_records_bit_identical_to_sequential(ray_session):
    ref = run_sweep(draw_task, GRID, n_repeats=3, random_state=123)
    assert run_sweep(draw_task, GRID, n_repeats=3, random_state=123, backend="ray") == ref
    np.testing.assert_array_equal(monte_carlo(vector_task, 6, random_state=7, backend="ray"),
                                  monte_carlo(vector_task, 6, random_state=7))
    with pytest.raises(ValueError, match=r"^backend='ray': Ray is already started in this process; drop "
                                         r"'scheduler'"):
        monte_carlo(uniform_task, 2, random_state=0, backend="ray", scheduler="auto")


# ----------------------------------------------------------------------------------------------------
# summarize
# ----------------------------------------------------------------------------------------------------
def test_summarize_hand_computed():
    # mean 5; sample variance (9+1+1+1+0+0+4+16)/7 = 32/7; se = sqrt(32/7)/sqrt(8) = sqrt(4/7)
    s = summarize([2, 4, 4, 4, 5, 5, 7, 9])
    assert s["n"] == 8 and isinstance(s["n"], int)
    assert isinstance(s["mean"], float) and isinstance(s["se"], float)
    assert_allclose([s["mean"], s["se"]], [5.0, math.sqrt(4 / 7)], rtol=RTOL, err_msg="1-d summary")


def test_summarize_axes():
    x = np.array([[1.0, 10.0, 0.0], [3.0, 30.0, 0.0]])
    s0 = summarize(x)
    assert_allclose(s0["mean"], [2.0, 20.0, 0.0], rtol=RTOL, err_msg="axis 0 mean")
    assert_allclose(s0["se"], [1.0, 10.0, 0.0], rtol=RTOL, err_msg="axis 0 se")  # std([1,3])=sqrt2, /sqrt2
    s1 = summarize(x, axis=1)
    assert s1["n"] == 3
    assert_allclose(s1["mean"], [11 / 3, 11.0], rtol=RTOL, err_msg="axis 1 mean")
    assert_allclose(s1["se"], [np.std([1, 10, 0], ddof=1) / math.sqrt(3), np.std([3, 30, 0], ddof=1) / math.sqrt(3)],
                    rtol=RTOL, err_msg="axis 1 se")
    assert summarize(x, axis=-1)["n"] == 3
    s_all = summarize(x, axis=None)
    assert s_all["n"] == 6 and isinstance(s_all["mean"], float)


@given(values=st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=50))
def test_summarize_matches_explicit_loops(values):
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    s = summarize(values)
    assert s["n"] == n
    assert_allclose(s["mean"], mean, rtol=RTOL, atol=1e-9, err_msg="mean")
    assert_allclose(s["se"], math.sqrt(var / n), rtol=1e-9, atol=1e-9, err_msg="se")


def test_summarize_of_monte_carlo_covers_the_true_mean():
    # 400 U(0,1) draws: mean 1/2, se ~ 0.0144; |mean - 1/2| < 5 se fails with probability < 1e-6.
    s = summarize(monte_carlo(uniform_task, 400, random_state=11))
    assert abs(s["mean"] - 0.5) < 5 * s["se"]
    assert_allclose(s["se"], math.sqrt(1 / 12 / 400), rtol=0.2, err_msg="se of U(0,1) mean")


@pytest.mark.parametrize(
    "values, axis, exc, match",
    [
        ([1.0], 0, ValueError, r"^'values' must hold at least 2 values along axis 0 to estimate a standard "
                               r"error; got 1\.$"),
        ([[1.0, 2.0]], 0, ValueError, r"at least 2 values along axis 0 .*; got 1\."),
        (3.0, 0, ValueError, r"^'values' must have at least 1 dimension; got a scalar\.$"),
        ([1.0, np.nan], 0, ValueError, r"^'values' must contain only finite values"),
        ([1.0, np.inf], 0, ValueError, r"^'values' must contain only finite values"),
        (["a", "b"], 0, TypeError, r"^'values' must contain real numbers; got an array of dtype <U1\.$"),
        ([[1.0], [1.0, 2.0]], 0, TypeError, r"^'values' must be an array of real numbers; got a ragged list\.$"),
        ([1.0, 2.0], 1, ValueError, r"^'axis' must be an int in \[-1, 0\]; got 1\.$"),
        ([1.0, 2.0], 0.0, TypeError, r"^'axis' must be an int in \[-1, 0\]; got 0\.0 of type float\.$"),
    ],
)
def test_summarize_errors(values, axis, exc, match):
    with pytest.raises(exc, match=match):
        summarize(values, axis=axis)
