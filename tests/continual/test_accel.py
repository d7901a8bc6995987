"""torch core of algos.continual: the batched scan against the numba kernel on the numpy and the CPU torch
backends, TorchStreamingLDA against numpy references (CPU torch), the features' torch backend against the
numba path, and one CUDA parity test."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from accel.continual import TorchStreamingLDA, reservoir_scan_batched  # noqa: E402
from algos.continual._birc2d import BiRC2DFeatures  # noqa: E402
from algos.continual._kernels import reservoir_scan  # noqa: E402

#: float64: the same recursion with the sums in a different order; a few ulps of O(1) states.
F64_TOL = 1e-12
#: float32 parity, relative to the largest entry: per step the two sides round differently
#: (2^-24 ~ 6e-8 each); a contracting scan of <= 14 steps and a GEMM over <= 6272 terms keep the
#: accumulated difference ~1e-6, an order of magnitude under the issue's 1e-5.
F32_RTOL = 1e-5
#: float64 scatter over n <= 400 samples: ~n ulps of |x|^2.
SLDA_F64_TOL = 1e-11


def _rel_err(a, b):
    return float(np.max(np.abs(np.asarray(a, float) - np.asarray(b, float))) / max(np.max(np.abs(b)), 1e-300))


# ------------------------------------------------------------------------------------------------
# scan
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("activation", ["tanh", "relu", "leaky_relu"])
def test_scan_batched_matches_numba_kernel(activation):
    rng = np.random.default_rng(1)
    D, N, L, U = 5, 6, 9, 4
    Z = rng.standard_normal((D, N, L, U))
    W = rng.standard_normal((D, U, U)) * 0.4
    h0 = rng.standard_normal((D, N, U))
    rev = [False, True, True, False, True]
    out = reservoir_scan_batched(Z, W, 0.3, activation, reverse=rev, h0=h0, device="cpu")
    out_np = reservoir_scan_batched(Z, W, 0.3, activation, reverse=rev, h0=h0, backend="numpy")
    assert isinstance(out_np, np.ndarray)
    code = {"tanh": 0, "relu": 1, "leaky_relu": 2}[activation]
    for d in range(D):
        ref = np.empty_like(Z[d])
        reservoir_scan(Z[d], W[d], 0.3, code, 0.01, rev[d], h0[d], ref)  # the independent numba loop
        np.testing.assert_allclose(out[d], ref, rtol=0, atol=F64_TOL)
        np.testing.assert_allclose(out_np[d], ref, rtol=0, atol=F64_TOL)
    out32 = reservoir_scan_batched(Z.astype(np.float32), W.astype(np.float32), 0.3, activation, reverse=rev,
                                   h0=h0, device="cpu")
    assert out32.dtype == np.float32
    assert _rel_err(out32, out) < F32_RTOL


@pytest.mark.parametrize("image_shape,kw", [
    ((1, 28, 28), dict(pooling="avg", units=8)),  # square grid: all four directions in one bmm
    ((3, 8, 12), dict(pooling="none", units=4, stem="random_conv", stem_channels=6, activation="leaky_relu",
                      init="kaiming", projection_dim=100, n_blocks=2)),  # rows and columns differ
])
def test_features_torch_cpu_matches_numba(image_shape, kw):
    rng = np.random.default_rng(2)
    X = rng.random((6, int(np.prod(image_shape))))
    for dtype in (np.float64, np.float32):
        ref = BiRC2DFeatures(image_shape=image_shape, backend="numpy", random_state=3, dtype=dtype, **kw).fit()
        tor = BiRC2DFeatures(image_shape=image_shape, backend="torch", device="cpu", random_state=3, dtype=dtype,
                             **kw).fit()
        a, b = ref.transform(X), tor.transform(X)
        assert b.dtype == dtype
        assert [blk.backend_ for blk in tor.blocks_] == ["torch"] * len(tor.blocks_)
        if dtype == np.float64:
            np.testing.assert_allclose(b, a, rtol=0, atol=F64_TOL)
        else:
            assert _rel_err(b, a) < F32_RTOL


def test_scan_batched_bad_input():
    Z = np.zeros((2, 3, 4, 5))
    with pytest.raises(ValueError, match=r"'leak' must be a float in \(0, 1\]"):
        reservoir_scan_batched(Z, np.zeros((2, 5, 5)), 0.0, device="cpu")
    with pytest.raises(ValueError, match="'W' must have shape"):
        reservoir_scan_batched(Z, np.zeros((2, 4, 4)), 0.5, device="cpu")
    with pytest.raises(ValueError, match="'Z' must have shape"):
        reservoir_scan_batched(Z[0], np.zeros((2, 5, 5)), 0.5, device="cpu")
    with pytest.raises(ValueError, match="'activation'"):
        reservoir_scan_batched(Z, np.zeros((2, 5, 5)), 0.5, "sigmoid", device="cpu")


# ------------------------------------------------------------------------------------------------
# streaming LDA on torch
# ------------------------------------------------------------------------------------------------
def _data(seed, n=400, d=7, K=5):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    X = rng.standard_normal((n, d)) @ rng.standard_normal((d, d)) + 3.0 * rng.standard_normal((K, d))[y]
    return X, y


def _pooled_within_class(X, y):
    """Batch pooled within-class covariance, straight from the definition."""
    S = np.zeros((X.shape[1], X.shape[1]))
    for k in np.unique(y):
        R = X[y == k] - X[y == k].mean(axis=0)
        S += R.T @ R
    return S / len(y)


def _hayes_loop(X, y, K):
    """Per-sample reference rule of Hayes & Kanan (spec section 1.4), written out."""
    d = X.shape[1]
    mu, c, Sigma, n = np.zeros((K, d)), np.zeros(K), np.zeros((d, d)), 0
    for x, k in zip(X, y):
        delta = x - mu[k]
        Sigma = (n * Sigma + (n / (n + 1)) * np.outer(delta, delta)) / (n + 1)
        mu[k] += delta / (c[k] + 1)
        c[k] += 1
        n += 1
    return Sigma, mu


def _feed(model, X, y, cuts):
    for a, b in zip(cuts[:-1], cuts[1:]):
        model.partial_fit(X[a:b], y[a:b])
    return model


def test_torch_slda_exact_equals_pooled_covariance_and_is_order_free():
    X, y = _data(3)
    ref = _pooled_within_class(X, y)
    a = _feed(TorchStreamingLDA(7, device="cpu"), X, y, [0, 1, 2, 50, 51, 300, 400])
    np.testing.assert_allclose(a.covariance(), ref, rtol=0, atol=SLDA_F64_TOL)
    for k in range(5):
        np.testing.assert_allclose(a.means[k].numpy(), X[y == k].mean(axis=0), rtol=0, atol=1e-12)
    perm = np.random.default_rng(4).permutation(400)
    b = _feed(TorchStreamingLDA(7, device="cpu"), X[perm], y[perm], [0, 400])
    np.testing.assert_allclose(b.covariance(), ref, rtol=0, atol=SLDA_F64_TOL)
    # float32: relative parity with the float64 definition
    c = _feed(TorchStreamingLDA(7, device="cpu", dtype=np.float32), X, y, [0, 130, 400])
    assert c.scatter.dtype.is_floating_point and c.covariance().dtype == np.float32
    assert _rel_err(c.covariance(), ref) < F32_RTOL


def test_torch_slda_hayes_matches_per_sample_loop():
    X, y = _data(5)
    Sigma, mu = _hayes_loop(X, y, 5)
    m = _feed(TorchStreamingLDA(7, covariance="hayes", device="cpu"), X, y, [0, 3, 4, 199, 400])
    np.testing.assert_allclose(m.covariance(), Sigma, rtol=0, atol=SLDA_F64_TOL)
    np.testing.assert_allclose(m.means.numpy(), mu, rtol=0, atol=1e-12)
    # and Hayes differs from the pooled covariance (first sample of each class counted as x x^T)
    assert np.abs(m.covariance() - _pooled_within_class(X, y)).max() > 1e-3


def test_torch_slda_precision_and_discriminant():
    X, y = _data(6, n=60, d=9, K=3)
    eps = 0.05
    m = TorchStreamingLDA(9, shrinkage=eps, device="cpu").partial_fit(X, y)
    A = (1 - eps) * _pooled_within_class(X, y) + eps * np.eye(9)
    P = np.linalg.inv(A)
    np.testing.assert_allclose(m.precision(), P, rtol=0, atol=1e-10 * np.abs(P).max())
    W, b, seen = m.linear_weights()
    M = np.stack([X[y == k].mean(axis=0) for k in range(3)])
    np.testing.assert_array_equal(seen, [0, 1, 2])
    np.testing.assert_allclose(W, P @ M.T, rtol=0, atol=1e-10 * np.abs(W).max())
    np.testing.assert_allclose(b, 0.5 * np.einsum("kd,de,ke->k", M, P, M), rtol=1e-10)
    np.testing.assert_allclose(m.decision_function(X), X @ P @ M.T - b, rtol=0, atol=1e-8)


def test_torch_slda_growing_classes_and_unseen_excluded():
    X, y = _data(7, n=80, d=4, K=3)
    m = TorchStreamingLDA(4, device="cpu")
    m.partial_fit(X[y == 0], y[y == 0])
    m.partial_fit(X[y == 2], y[y == 2])  # class 1 registered (index) but never seen
    assert m.means.shape[0] == 3
    np.testing.assert_array_equal(m.seen(), [0, 2])
    assert m.decision_function(X[:5]).shape == (5, 2)
    m.partial_fit(X[:0], y[:0])  # empty batch: no-op
    assert m.n_seen == int(np.sum(y != 1))


def test_torch_slda_bad_input():
    with pytest.raises(ValueError, match=r"'shrinkage' must be a float in \[0, 1\]"):
        TorchStreamingLDA(3, shrinkage=-0.1, device="cpu")
    with pytest.raises(ValueError, match="'covariance' must be one of"):
        TorchStreamingLDA(3, covariance="identity", device="cpu")
    m = TorchStreamingLDA(3, device="cpu")
    with pytest.raises(ValueError, match=r"'X' must have shape \(B, 3\)"):
        m.partial_fit(np.zeros((2, 4)), [0, 1])
    with pytest.raises(ValueError, match="different lengths"):
        m.partial_fit(np.zeros((2, 3)), [0])
    with pytest.raises(ValueError, match="finite"):
        m.partial_fit(np.full((1, 3), np.nan), [0])
    with pytest.raises(ValueError, match=">= 0"):
        m.partial_fit(np.zeros((1, 3)), [-1])


def test_torch_slda_matches_streaming_lda_estimator():
    """Parity with the package's numpy/numba StreamingLDA (exact and hayes modes)."""
    from algos.continual import StreamingLDA

    X, y = _data(8)
    for mode in ("exact", "hayes"):
        est = StreamingLDA(covariance=mode, shrinkage=1e-3)
        tor = TorchStreamingLDA(7, covariance=mode, shrinkage=1e-3, device="cpu")
        for a, b in ((0, 90), (90, 91), (91, 400)):
            est.partial_fit(X[a:b], y[a:b])
            tor.partial_fit(X[a:b], y[a:b])
        np.testing.assert_allclose(tor.covariance(), est.covariance_, rtol=0, atol=SLDA_F64_TOL)
        np.testing.assert_allclose(tor.means.numpy(), est.means_, rtol=0, atol=1e-12)
        s_est = est.decision_function(X[:20])
        s_tor = tor.decision_function(X[:20])
        # scores agree up to a per-row constant (an estimator may drop x^T Lambda x / 2 or not)
        np.testing.assert_allclose(s_tor - s_tor[:, :1], s_est - s_est[:, :1], rtol=0,
                                   atol=1e-8 * np.abs(s_est).max())


# ------------------------------------------------------------------------------------------------
# CUDA
# ------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_cuda_parity_features_and_slda():
    rng = np.random.default_rng(9)
    X = rng.random((64, 784))
    kw = dict(units=8, pooling="avg", random_state=1, dtype=np.float32)
    a = BiRC2DFeatures(backend="numpy", **kw).fit().transform(X)
    b = BiRC2DFeatures(backend="torch", device="cuda", **kw).fit().transform(X)
    assert _rel_err(b, a) < F32_RTOL
    F, y = _data(10, n=300, d=20, K=4)
    m = _feed(TorchStreamingLDA(20, device="cuda"), F, y, [0, 100, 300])
    np.testing.assert_allclose(m.covariance(), _pooled_within_class(F, y), rtol=0, atol=SLDA_F64_TOL)
    Sigma, _ = _hayes_loop(F, y, 4)
    h = _feed(TorchStreamingLDA(20, covariance="hayes", device="cuda"), F, y, [0, 7, 300])
    np.testing.assert_allclose(h.covariance(), Sigma, rtol=0, atol=SLDA_F64_TOL)
