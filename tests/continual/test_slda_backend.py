"""StreamingLDA(backend="torch"): the torch core reached through accel.backend.resolve gives the numpy
backend's fitted statistics and predictions (CPU torch), and a clean ImportError without torch."""

from __future__ import annotations

import builtins
import sys

import numpy as np
import pytest

from accel.backend import TORCH_INSTALL_HINT
from algos.continual import StreamingLDA

#: float64: the same sums in another order (Welford weights vs a Chan merge, GEMM vs syrk) over <= 300
#: samples of O(1) features: a few hundred ulps at most.
F64_TOL = 1e-12
#: float32, relative to the largest entry: ~n ulps of 2^-24 over n <= 300 samples.
F32_RTOL = 1e-4

BATCHES = ((0, 50), (50, 51), (51, 52), (52, 300))


def _data(seed=0, n=300, d=6, K=4):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    X = rng.normal(size=(n, d)) + y[:, None] * 0.7
    return X, y


def _pair(mode, dtype=np.float64, **kw):
    X, y = _data()
    a = StreamingLDA(covariance=mode, dtype=dtype, **kw)
    b = StreamingLDA(covariance=mode, dtype=dtype, backend="torch", device="cpu", **kw)
    for s, e in BATCHES:
        a.partial_fit(X[s:e], y[s:e], classes=[0, 1, 2, 3, 9])  # class 9 announced, never seen
        b.partial_fit(X[s:e], y[s:e], classes=[0, 1, 2, 3, 9])
    return a, b, X


@pytest.mark.parametrize("mode", ["exact", "hayes", "identity", "fixed"])
def test_torch_backend_equals_numpy_backend_float64(mode):
    pytest.importorskip("torch")
    a, b, X = _pair(mode, shrinkage=1e-3)
    assert a.backend_ == "numpy" and b.backend_ == "torch"
    np.testing.assert_array_equal(b.classes_, a.classes_)
    np.testing.assert_array_equal(b.counts_, a.counts_)
    assert b.n_samples_seen_ == a.n_samples_seen_ == 300
    np.testing.assert_allclose(b.means_, a.means_, rtol=0, atol=F64_TOL)
    np.testing.assert_allclose(b.covariance_, a.covariance_, rtol=0, atol=F64_TOL)
    np.testing.assert_allclose(b.predict_proba(X), a.predict_proba(X), rtol=0, atol=F64_TOL)
    sa, sb = a.decision_function(X), b.decision_function(X)
    np.testing.assert_array_equal(np.isinf(sb), np.isinf(sa))
    fin = np.isfinite(sa)
    np.testing.assert_allclose(sb[fin], sa[fin], rtol=0, atol=F64_TOL * np.abs(sa[fin]).max())
    np.testing.assert_array_equal(b.predict(X), a.predict(X))


def test_torch_backend_equals_numpy_backend_float32():
    pytest.importorskip("torch")
    a, b, X = _pair("exact", dtype=np.float32)
    assert b.means_.dtype == b.covariance_.dtype == np.float32
    for got, ref in ((b.means_, a.means_), (b.covariance_, a.covariance_)):
        assert np.abs(got.astype(float) - ref).max() <= F32_RTOL * np.abs(ref).max()
    np.testing.assert_allclose(b.predict_proba(X), a.predict_proba(X), rtol=0, atol=F32_RTOL)


def test_torch_backend_state_merges_with_numpy_state():
    """The fitted state is numpy either way: a torch-fitted part merges with a numpy-fitted part."""
    pytest.importorskip("torch")
    X, y = _data(1)
    whole = StreamingLDA().fit(X, y)
    part = StreamingLDA(backend="torch", device="cpu").fit(X[:120], y[:120])
    part.merge(StreamingLDA().fit(X[120:], y[120:]))
    np.testing.assert_allclose(part.covariance_, whole.covariance_, rtol=0, atol=F64_TOL)


def test_auto_on_numpy_input_is_the_numpy_backend():
    X, y = _data()
    assert StreamingLDA(backend="auto").fit(X, y).backend_ == "numpy"
    assert StreamingLDA(backend="numba").fit(X, y).backend_ == "numpy"


def test_bad_backend_names_the_parameter():
    X, y = _data()
    with pytest.raises(ValueError, match="'backend'.*'gpu'"):
        StreamingLDA(backend="gpu").fit(X, y)


def test_torch_backend_without_torch_is_the_package_import_error(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("No module named 'torch'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setattr(builtins, "__import__", fake_import)
    X, y = _data()
    est = StreamingLDA(backend="torch")
    with pytest.raises(ImportError, match="backend='torch' needs PyTorch") as err:
        est.fit(X, y)
    assert TORCH_INSTALL_HINT in str(err.value)
    assert not hasattr(est, "classes_")  # nothing fitted
