"""``fit_dask`` / ``fit`` on Dask arrays: equal to the in-process exact fit, on a real LocalCluster and without one."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from algos.continual import CIRCLEClassifier, SLDAEnsemble, StreamingLDA, fit_dask, load_digits_images
from tests._clusters import local_dask_cluster

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

TOL = 1e-10


@pytest.fixture(scope="module")
def client():
    """A real LocalCluster of 2 worker processes x 1 thread on 127.0.0.1 for the module, and its client."""
    distributed = pytest.importorskip("distributed")
    with local_dask_cluster() as cluster, distributed.Client(cluster, timeout="60s") as c:
        yield c


def _data(seed=0, n=1200, d=9, K=5):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    X = rng.normal(size=(n, d)) + 2.0 * rng.normal(size=(K, d))[y]
    return X, y


def _assert_same_lda(m, w, X):
    assert_array_equal(m.classes_, w.classes_)
    assert_array_equal(m.counts_, w.counts_)
    assert m.n_samples_seen_ == w.n_samples_seen_
    assert_allclose(m.means_, w.means_, rtol=0, atol=TOL)
    assert_allclose(m.covariance_, w.covariance_, rtol=0, atol=TOL)
    assert_allclose(m.predict_proba(X), w.predict_proba(X), rtol=0, atol=TOL)


def _task_names(stream):
    return {t["key"][0] if isinstance(t["key"], tuple) else t["key"] for t in stream.data}


@pytest.mark.parametrize("chunks", [(100,) * 12, (500, 0, 37, 663), (1200,)])
def test_streaming_lda_on_cluster_equals_sequential_fit(client, chunks):
    distributed = pytest.importorskip("distributed")
    X, y = _data()
    Xd, yd = da.from_array(X, chunks=(chunks, (X.shape[1],))), da.from_array(y, chunks=(chunks,))
    with distributed.get_task_stream(client) as ts:
        m = StreamingLDA().fit(Xd, yd)
    assert any("fit_block" in str(name) for name in _task_names(ts))  # the blocks were fitted on the workers
    _assert_same_lda(m, StreamingLDA().fit(X, y), X)
    seq = StreamingLDA()
    for a in range(0, len(X), 97):  # one in-process partial_fit stream
        seq.partial_fit(X[a:a + 97], y[a:a + 97])
    _assert_same_lda(m, seq, X)


def test_fit_dask_registers_classes_and_small_fan_in(client):
    X, y = _data(1, n=600)
    m = fit_dask(StreamingLDA(covariance="identity"), da.from_array(X, chunks=(50, X.shape[1])), y,
                 classes=[0, 1, 2, 3, 4, 9], split_every=2)
    _assert_same_lda(m, StreamingLDA(covariance="identity").partial_fit(X, y, classes=[0, 1, 2, 3, 4, 9]), X)


def test_ensemble_on_cluster_equals_sequential_fit(client):
    X, y = _data(2)
    kw = dict(group_sizes=[4, 5])
    m = SLDAEnsemble(**kw).fit(da.from_array(X, chunks=(300, 9)), da.from_array(y, chunks=300))
    w = SLDAEnsemble(**kw).fit(X, y)
    assert_allclose(m.predict_proba(X), w.predict_proba(X), rtol=0, atol=TOL)
    for hm, hw, cols in zip(m.heads_, w.heads_, (slice(0, 4), slice(4, 9))):
        _assert_same_lda(hm, hw, X[:, cols])


def test_circle_images_on_cluster_equal_sequential_fit(client):
    distributed = pytest.importorskip("distributed")
    X, y, shape = load_digits_images()
    X, y = X[:800], y[:800]
    kw = dict(n_reservoirs=2, n_groups=2, random_state=0)
    images = da.from_array(X.reshape((-1,) + shape), chunks=(200,) + shape)
    with distributed.get_task_stream(client) as ts:
        m = CIRCLEClassifier(**kw).fit(images, da.from_array(y, chunks=200))
    names = " ".join(map(str, _task_names(ts)))
    assert "extract_features" in names and "fit_block" in names  # features and head statistics on the workers
    w = CIRCLEClassifier(**kw).fit(X, y)
    assert_array_equal(m.classes_, w.classes_)
    assert_allclose(m.predict_proba(X), w.predict_proba(X), rtol=0, atol=TOL)
    for hm, hw in zip(m.heads_, w.heads_):
        assert_allclose(hm.covariance_, hw.covariance_, rtol=0, atol=TOL)
        assert_allclose(hm.means_, hw.means_, rtol=0, atol=TOL)


def test_without_a_client_on_the_local_schedulers():
    X, y = _data(3, n=700)
    w = StreamingLDA().fit(X, y)
    for scheduler in ("sync", "threads"):
        with dask.config.set(scheduler=scheduler):
            m = StreamingLDA().fit(da.from_array(X, chunks=(64, 9)), da.from_array(y, chunks=64))
        _assert_same_lda(m, w, X)


@pytest.mark.parametrize("make, exc, match", [
    (lambda X, y: fit_dask(StreamingLDA(covariance="hayes"), X, y), ValueError,
     r"'covariance' = 'hayes' cannot be merged.*order.*covariance='exact'"),
    (lambda X, y: fit_dask(StreamingLDA(covariance="fixed"), X, y), ValueError, "'covariance' = 'fixed'"),
    (lambda X, y: StreamingLDA().fit(X.rechunk((100, 3)), y), ValueError,
     r"'X' must be chunked along rows only .* axis 1 .*rechunk"),
    (lambda X, y: StreamingLDA().fit(X, y.rechunk(150)), ValueError, r"'y' must have the row chunks of 'X'"),
    (lambda X, y: StreamingLDA().fit(X, y[:-1].compute()), ValueError, r"'y' must be a 1-d array of 600"),
    (lambda X, y: fit_dask(StreamingLDA(), X.compute(), y), TypeError, "'X' must be a dask.array.Array"),
    (lambda X, y: fit_dask(StreamingLDA(), X, y, split_every=1), ValueError, "'split_every' must be an int >= 2"),
    (lambda X, y: fit_dask(StreamingLDA(), X[:, :, None], y), ValueError, "'X' must be a 2-d dask array"),
    (lambda X, y: fit_dask(object(), X, y), TypeError, "'estimator' must be a StreamingLDA"),
])
def test_bad_input_raises_before_any_task(client, make, exc, match):
    distributed = pytest.importorskip("distributed")
    X, y = _data(4, n=600)
    Xd, yd = da.from_array(X, chunks=(100, 9)), da.from_array(y, chunks=100)
    with distributed.get_task_stream(client) as ts:
        with pytest.raises(exc, match=match):
            make(Xd, yd)
    assert not any("fit_block" in str(n) or "merge" in str(n) for n in _task_names(ts))


def test_dask_ml_incremental_drives_partial_fit(client):
    wrappers = pytest.importorskip("dask_ml.wrappers")
    X, y = _data(5, n=900)
    Xd, yd = da.from_array(X, chunks=(200, 9)), da.from_array(y, chunks=200)
    inc = wrappers.Incremental(StreamingLDA()).fit(Xd, yd, classes=np.arange(5))
    seq = StreamingLDA()
    for a in range(0, len(X), 200):
        seq.partial_fit(X[a:a + 200], y[a:a + 200], classes=np.arange(5))
    _assert_same_lda(inc.estimator_, seq, X)
    _assert_same_lda(inc.estimator_, StreamingLDA().fit(X, y), X)
    assert_allclose(inc.predict_proba(Xd).compute(), seq.predict_proba(X), rtol=0, atol=TOL)
