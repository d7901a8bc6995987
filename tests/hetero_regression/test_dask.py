"""HuberSoSRegressor (and the front door's Huber method) on row-chunked Dask arrays.

On a real LocalCluster (2 worker processes x 1 thread) and on Dask's default threaded scheduler: the
fit equals the in-memory fit to 1e-10 (coefficients, standard errors), X is never gathered, and bad
input is refused before any task is submitted.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from algos.hetero_regression import HuberSoSRegressor, SubsetOfSignalsRegressor, make_subset_of_signals
from algos.hetero_regression._irls import ARMIJO_C, MAX_BACKTRACKS, MONOTONE_RTOL, RIDGE

da = pytest.importorskip("dask.array")


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                       host="127.0.0.1")
    try:
        c = distributed.Client(cluster, timeout=60)
        try:
            yield c
        finally:
            c.close()
    finally:
        cluster.close()


def _data(fit_intercept, n=4000, d=5, seed=3):
    data = make_subset_of_signals(n, d, n // 4, random_state=seed)
    return data.X, data.y + (1.5 if fit_intercept else 0.0)


def _check_equal(X, y, fit_intercept, chunks):
    ref = HuberSoSRegressor(fit_intercept=fit_intercept, tol=1e-13).fit(X, y)
    Xd, yd = da.from_array(X, chunks=(chunks, -1)), da.from_array(y, chunks=(chunks,))
    est = HuberSoSRegressor(fit_intercept=fit_intercept, tol=1e-13).fit(Xd, yd)
    assert est.n_features_in_ == X.shape[1]
    assert_allclose(est.coef_, ref.coef_, rtol=0, atol=1e-10)
    assert est.intercept_ == pytest.approx(ref.intercept_, rel=0, abs=1e-10)
    assert_allclose(est.coef_se_, ref.coef_se_, rtol=0, atol=1e-10)
    assert_allclose(est.conf_int(), ref.conf_int(), rtol=0, atol=1e-9)
    assert est.n_inliers_ == ref.n_inliers_
    return est


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_dask_fit_equals_in_memory_on_local_cluster(client, fit_intercept):
    X, y = _data(fit_intercept)
    _check_equal(X, y, fit_intercept, 700)  # 6 blocks, one of them short


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_dask_fit_equals_in_memory_threaded_scheduler(fit_intercept):
    import dask

    X, y = _data(fit_intercept, seed=5)
    with dask.config.set(scheduler="threads"):
        _check_equal(X, y, fit_intercept, 333)  # 13 blocks: two levels of the reduction tree


def test_dask_fit_equals_chunked_in_process_fit():
    X, y = _data(False, seed=8)
    a = HuberSoSRegressor().fit_chunks(lambda: ((X[i:i + 500], y[i:i + 500]) for i in range(0, len(y), 500)))
    import dask

    with dask.config.set(scheduler="synchronous"):
        b = HuberSoSRegressor().fit(da.from_array(X, chunks=(500, -1)), da.from_array(y, chunks=(500,)))
    assert_allclose(b.coef_, a.coef_, rtol=0, atol=1e-12)
    assert_allclose(b.coef_se_, a.coef_se_, rtol=0, atol=1e-12)


def test_front_door_huber_on_dask(client):
    X, y = _data(True, seed=4)
    ref = SubsetOfSignalsRegressor(method="huber", fit_intercept=True).fit(X, y)
    est = SubsetOfSignalsRegressor(method="huber", fit_intercept=True).fit(
        da.from_array(X, chunks=(1000, -1)), da.from_array(y, chunks=(1000,)))
    assert est.method_ == "huber"
    assert_allclose(est.coef_, ref.coef_, rtol=0, atol=1e-8)
    assert est.intercept_ == pytest.approx(ref.intercept_, abs=1e-8)
    assert np.all(np.isfinite(est.conf_int()))


@pytest.mark.parametrize("method", ["auto", "window", "lad", "cmed", "ols"])
def test_front_door_other_methods_refuse_dask(method):
    X, y = _data(False, n=400)
    with pytest.raises(ValueError, match="method='huber'"):
        SubsetOfSignalsRegressor(method=method).fit(da.from_array(X, chunks=(100, -1)),
                                                    da.from_array(y, chunks=(100,)))


class _NoGather(Exception):
    pass


def test_x_is_never_gathered(monkeypatch):
    """Converting any dask array to numpy (a gather) raises: the fit only computes the small totals."""
    import dask

    X, y = _data(False, seed=9)
    Xd, yd = da.from_array(X, chunks=(800, -1)), da.from_array(y, chunks=(800,))

    def refuse(self, *args, **kwargs):
        raise _NoGather(f"gathered a dask array of shape {self.shape}")

    monkeypatch.setattr(da.Array, "__array__", refuse)
    monkeypatch.setattr(da.Array, "compute", refuse)
    with pytest.raises(_NoGather):
        np.asarray(Xd)
    computed = []
    real_compute = dask.compute

    def spy(*args, **kwargs):
        out = real_compute(*args, **kwargs)
        computed.append(out)
        return out

    monkeypatch.setattr(dask, "compute", spy)
    with dask.config.set(scheduler="threads"):
        est = HuberSoSRegressor().fit(Xd, yd)
    assert est.converged_ and computed
    p = X.shape[1]
    for out in computed:  # every result that came back is O(p^2)
        for leaf in out[0]:
            assert np.size(leaf) <= p * p


@pytest.mark.parametrize("make, match", [
    (lambda X, y: (da.from_array(X, chunks=(500, 2)), da.from_array(y, chunks=(500,))), r"X.rechunk\(\{1: -1\}\)"),
    (lambda X, y: (da.from_array(X, chunks=(500, -1)), da.from_array(y, chunks=(400,))), r"X.chunks\[0\].*y.chunks"),
    (lambda X, y: (da.from_array(X, chunks=(500, -1)), da.from_array(y[:, None], chunks=(500, 1))), "'y' must be 1-D"),
    (lambda X, y: (da.from_array(X, chunks=(500, -1)), y), "'y' must be a dask"),
    (lambda X, y: (da.from_array(X, chunks=(500, -1))[da.from_array(y, chunks=(500,)) > 0],
                   da.from_array(y, chunks=(500,))[da.from_array(y, chunks=(500,)) > 0]), "compute_chunk_sizes"),
])
def test_bad_dask_input_before_any_task(make, match, monkeypatch):
    import dask

    X, y = _data(False, n=2000)
    Xd, yd = make(X, y)

    def no_task(*args, **kwargs):
        raise AssertionError("a task was submitted")

    monkeypatch.setattr(dask, "compute", no_task)
    with pytest.raises((ValueError, TypeError), match=match):
        HuberSoSRegressor().fit(Xd, yd)


@pytest.mark.parametrize("params, match", [({"delta": "auto"}, "delta"), ({"continuation": True}, "continuation"),
                                           ({"solver": "lbfgs"}, "solver"), ({"init": "lad"}, "init")])
def test_dask_unsupported_parameters(params, match):
    X, y = _data(False, n=400)
    with pytest.raises(ValueError, match=match):
        HuberSoSRegressor(**params).fit(da.from_array(X, chunks=(100, -1)), da.from_array(y, chunks=(100,)))


def test_irls_constants_pinned_equal_to_the_torch_core():
    import accel.hetero_regression as core

    assert (core.RIDGE, core.MONOTONE_RTOL, core.MAX_BACKTRACKS) == (RIDGE, MONOTONE_RTOL, MAX_BACKTRACKS)
    assert core.RIDGE is RIDGE and core.MONOTONE_RTOL is MONOTONE_RTOL and core.MAX_BACKTRACKS is MAX_BACKTRACKS
    assert ARMIJO_C == 1e-4


_MADE = []


def _x_block(block_id=None):
    _MADE.append(block_id[0])
    return np.random.default_rng([11, block_id[0]]).standard_normal((300, 4))


def _y_block(xb, block_id=None):
    rng = np.random.default_rng([12, block_id[0]])
    return xb @ np.arange(1.0, 5.0) + np.where(rng.random(len(xb)) < 0.3, 0.1, 30.0) * rng.standard_normal(len(xb))


def _lazy_xy(n_blocks):
    X = da.map_blocks(_x_block, chunks=((300,) * n_blocks, (4,)), dtype=float, meta=np.empty((0, 0)))
    return X, da.map_blocks(_y_block, X, drop_axis=1, dtype=float, meta=np.empty(0))


def test_each_pass_produces_each_block_of_x_once():
    """y computed from X: a pass still produces every block of X once (one fused task per block)."""
    import dask

    from algos.hetero_regression._dask import DaskPass

    X, y = _lazy_xy(7)
    oracle = DaskPass(X, y, True)
    with dask.config.set(scheduler="synchronous"):
        _MADE.clear()
        oracle.gram()
        assert sorted(_MADE) == list(range(7))
        _MADE.clear()
        oracle.at(np.zeros(5), 1.0, True)
        assert sorted(_MADE) == list(range(7))


def test_fused_trials_give_the_same_iterates_in_fewer_passes():
    """The Dask pass returns the matrices at trial points: identical iterates, one pass fewer per iteration."""
    import dask

    from algos.hetero_regression._dask import DaskPass
    from algos.hetero_regression._irls import irls_passes

    class Counting(DaskPass):
        passes = 0

        def at(self, b, delta, grams):
            self.passes += 1
            return super().at(b, delta, grams)

    X, y = _lazy_xy(5)
    out = {}
    with dask.config.set(scheduler="synchronous"):
        for fuse in (False, True):
            oracle = Counting(X, y, True)
            oracle.fuse_trials = fuse
            out[fuse] = (irls_passes(oracle, 1.0, True, 1e-10, 100), oracle.passes)
    (plain, n_plain), (fused, n_fused) = out[False], out[True]
    assert plain["n_iter"] == fused["n_iter"] >= 2
    for key in ("coef", "A", "B"):
        np.testing.assert_array_equal(fused[key], plain[key])
    assert n_fused == n_plain - plain["n_iter"]
