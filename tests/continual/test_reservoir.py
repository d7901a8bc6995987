"""BiReservoir2D / BiRC2DFeatures: layout against a per-image loop, kernel-twin parity, the flip
metamorphic test, batch independence, determinism, pooling identities and bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import NotFittedError

from accel.continual import reservoir_scan_batched
from algos.continual._birc2d import BiRC2DFeatures
from algos.continual._kernels import ACTIVATION_CODES, grid_scan4, reservoir_scan
from algos.continual._reservoir import (
    BiReservoir2D,
    SpectralRadiusWarning,
    draw_reservoir_weights,
)


def reservoir_scan_reference(Z, W, leak, act, negative_slope=0.01, reverse=False, h0=None):
    """The scan core of :mod:`accel.continual` run on numpy, for one reservoir (the kernel's reference)."""
    h0 = None if h0 is None else np.asarray(h0)[None]
    return reservoir_scan_batched(np.asarray(Z)[None], np.asarray(W)[None], leak, act, negative_slope=negative_slope,
                                  reverse=reverse, h0=h0, backend="numpy")[0]


#: float64 kernel vs twin: the two sum h W in different orders (loop vs BLAS); over <= 20 steps of a
#: contraction the difference stays at a few ulps of O(1) states.
TWIN_TOL = 1e-12
#: float64 features of one image computed in different batches: the input GEMM may pick a different
#: BLAS kernel for a different number of rows (summation order), a few ulps of O(1) values.
BATCH_TOL_F64 = 1e-12
#: the same in float32 with a 1568-long projection sum: ~sqrt(1568) * 2^-24 relative to O(1) values, with
#: a margin for the float32 input GEMM.
BATCH_TOL_F32 = 2e-5
#: metamorphic flip: the same arithmetic on permuted rows (only the BLAS row split can differ).
FLIP_TOL = 1e-12

RNG_SEED = 20261130


def _f64(**kw):
    base = dict(random_state=0, backend="numpy", dtype=np.float64)
    base.update(kw)
    return base


# ------------------------------------------------------------------------------------------------
# independent per-image reference of the BiRC2D layout (explicit loops over patches, rows, columns)
# ------------------------------------------------------------------------------------------------
def _act(z, name):
    if name == "tanh":
        return np.tanh(z)
    if name == "relu":
        return np.maximum(z, 0.0)
    return np.where(z > 0, z, 0.01 * z)


def _scan_one(tokens, W_in, W, leak, act, reverse):
    L = tokens.shape[0]
    h = np.zeros(W.shape[0])
    out = np.zeros((L, W.shape[0]))
    order = range(L - 1, -1, -1) if reverse else range(L)
    for t in order:
        h = (1 - leak) * h + leak * _act(tokens[t] @ W_in + h @ W, act)
        out[t] = h
    return out


def _block_per_image(grid, W_in, W, leak, act):
    """grid (Nh, Nw, C) -> (Nh, Nw, 4U), one row / column at a time."""
    Nh, Nw, _ = grid.shape
    U = W.shape[1]
    out = np.zeros((Nh, Nw, 4 * U))
    for i in range(Nh):
        out[i, :, 0:U] = _scan_one(grid[i], W_in[0], W[0], leak, act, False)
        out[i, :, U:2 * U] = _scan_one(grid[i], W_in[1], W[1], leak, act, True)
    for j in range(Nw):
        out[:, j, 2 * U:3 * U] = _scan_one(grid[:, j], W_in[2], W[2], leak, act, False)
        out[:, j, 3 * U:4 * U] = _scan_one(grid[:, j], W_in[3], W[3], leak, act, True)
    return out


def _patchify_loop(img, P):
    C, H, W = img.shape
    grid = np.zeros((H // P, W // P, C * P * P))
    for i in range(H // P):
        for j in range(W // P):
            grid[i, j] = img[:, i * P:(i + 1) * P, j * P:(j + 1) * P].reshape(-1)
    return grid


@pytest.mark.parametrize("activation", ["tanh", "relu", "leaky_relu"])
def test_features_match_per_image_loop(activation):
    rng = np.random.default_rng(RNG_SEED)
    X = rng.random((3, 2, 8, 12))
    f = BiRC2DFeatures(image_shape=(2, 8, 12), patch=2, units=5, pooling="none", activation=activation,
                       init="kaiming", **_f64()).fit()
    got = f.transform(X).reshape(3, 4, 6, 20)
    blk = f.blocks_[0]
    for n in range(3):
        ref = _block_per_image(_patchify_loop(X[n], 2), blk.W_in_, blk.W_, 0.5, activation)
        np.testing.assert_allclose(got[n], ref, rtol=0, atol=TWIN_TOL)


def test_two_blocks_chain_per_image():
    rng = np.random.default_rng(RNG_SEED + 1)
    X = rng.random((2, 1, 8, 8))
    f = BiRC2DFeatures(image_shape=(1, 8, 8), patch=2, units=3, n_blocks=2, pooling="none",
                       **_f64(leak=0.7)).fit()
    got = f.transform(X).reshape(2, 4, 4, 12)
    b0, b1 = f.blocks_
    for n in range(2):
        g = _block_per_image(_patchify_loop(X[n], 2), b0.W_in_, b0.W_, 0.7, "tanh")
        g = _block_per_image(g, b1.W_in_, b1.W_, 0.7, "tanh")
        np.testing.assert_allclose(got[n], g, rtol=0, atol=TWIN_TOL)


def test_random_conv_stem_matches_scipy_correlation():
    from scipy.signal import correlate2d

    rng = np.random.default_rng(RNG_SEED + 2)
    X = rng.random((2, 3, 8, 8))
    f = BiRC2DFeatures(image_shape=(3, 8, 8), patch=2, stem="random_conv", stem_channels=4, units=2,
                       **_f64()).fit()
    got = f._stem(X)  # (2, 4, 4, 4)
    K = f.stem_weights_.reshape(3, 3, 3, 4)  # (C, k, k, out)
    for n in range(2):
        for o in range(4):
            full = sum(correlate2d(X[n, c], K[c, :, :, o], mode="same") for c in range(3))
            ref = full[::2, ::2]
            ref = np.where(ref > 0, ref, 0.01 * ref)
            np.testing.assert_allclose(got[n, :, :, o], ref, rtol=0, atol=1e-12)


# ------------------------------------------------------------------------------------------------
# kernels vs twins
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("activation", list(ACTIVATION_CODES))
@pytest.mark.parametrize("reverse", [False, True])
def test_reservoir_scan_matches_twin(activation, reverse):
    rng = np.random.default_rng(RNG_SEED + 3)
    N, L, U = 7, 11, 6
    Z = rng.standard_normal((N, L, U))
    W = rng.standard_normal((U, U)) * 0.3
    h0 = rng.standard_normal((N, U))
    act = ACTIVATION_CODES[activation]
    out = np.empty_like(Z)
    reservoir_scan(Z, W, 0.6, act, 0.01, reverse, h0, out)
    ref = reservoir_scan_reference(Z, W, 0.6, act, 0.01, reverse, h0)
    np.testing.assert_allclose(out, ref, rtol=0, atol=TWIN_TOL)


@pytest.mark.parametrize("activation", list(ACTIVATION_CODES))
def test_grid_scan4_matches_twin(activation):
    rng = np.random.default_rng(RNG_SEED + 4)
    B, Nh, Nw, U = 3, 5, 7, 4
    Z = rng.standard_normal((B, Nh, Nw, 4 * U))
    Ws = rng.standard_normal((4, U, U)) * 0.3
    act = ACTIVATION_CODES[activation]
    out = np.full_like(Z, np.nan)
    grid_scan4(Z, Ws, 0.7, act, 0.01, out)
    rows = Z.reshape(B * Nh, Nw, 4 * U)
    cols = Z.transpose(0, 2, 1, 3).reshape(B * Nw, Nh, 4 * U)
    for d, (seq, rev) in enumerate([(rows, False), (rows, True), (cols, False), (cols, True)]):
        ref = reservoir_scan_reference(seq[:, :, d * U:(d + 1) * U], Ws[d], 0.7, act, 0.01, rev)
        got = out[..., d * U:(d + 1) * U]
        got = got.reshape(B * Nh, Nw, U) if d < 2 else got.transpose(0, 2, 1, 3).reshape(B * Nw, Nh, U)
        np.testing.assert_allclose(got, ref, rtol=0, atol=TWIN_TOL)


# ------------------------------------------------------------------------------------------------
# weights
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("init", ["uniform", "kaiming"])
def test_weights_spectral_radius_and_distinct_directions(init):
    blk = BiReservoir2D(units=20, spectral_radius=0.8, connectivity=0.3, init=init, input_dim=3,
                        **_f64()).fit()
    for W in blk.W_:
        assert abs(np.max(np.abs(np.linalg.eigvals(W))) - 0.8) < 1e-10
    for i in range(4):
        for j in range(i + 1, 4):
            assert not np.array_equal(blk.W_[i], blk.W_[j])
            assert not np.array_equal(blk.W_in_[i], blk.W_in_[j])
    shared = BiReservoir2D(units=20, init=init, input_dim=3, share_direction_weights=True, **_f64()).fit()
    np.testing.assert_array_equal(shared.W_[0], shared.W_[1])
    np.testing.assert_array_equal(shared.W_in_[2], shared.W_in_[3])
    assert not np.array_equal(shared.W_[0], shared.W_[2])


def test_uniform_input_weights_respect_scaling():
    blk = BiReservoir2D(units=30, input_scaling=0.25, input_dim=40, **_f64()).fit()
    assert np.abs(blk.W_in_).max() <= 0.25
    assert np.abs(blk.W_in_).max() > 0.2  # 1200 draws per direction fill the interval


def test_all_zero_recurrent_matrix_is_not_rescaled_and_warns():
    rng = np.random.default_rng(0)
    # connectivity so small that the mask keeps nothing: no draw can meet the radius; the rescaling
    # must not divide by zero, and the user is told which radius the reservoir has
    with pytest.warns(SpectralRadiusWarning, match=r"W keeps its radius 0 instead of 'spectral_radius' = 0.9"):
        W_in, W = draw_reservoir_weights(rng, 2, 3, spectral_radius=0.9, connectivity=1e-12)
    assert np.all(W == 0) and np.all(np.isfinite(W_in))
    with pytest.warns(SpectralRadiusWarning, match="raise 'connectivity' or 'units'"):
        f = BiRC2DFeatures(image_shape=(1, 4, 4), units=3, connectivity=1e-12, **_f64()).fit()
    assert np.all(np.isfinite(f.transform(np.random.default_rng(1).random((2, 16)))))


@pytest.mark.parametrize("init", ["uniform", "kaiming"])
@pytest.mark.parametrize("units, connectivity", [(8, 0.1), (4, 0.1), (16, 0.05)])
def test_every_sparse_draw_meets_its_spectral_radius(init, units, connectivity):
    """Issue: with 8 units and 10 % connectivity about 30 % of raw draws are nilpotent (the radius
    cannot be applied) and about 3 % nearly so (scaled by huge factors). Every returned W must have
    radius exactly rho, and its entries stay within the rescaling allowed by the redraw floor."""
    from algos.continual._reservoir import MAX_REDRAWS, RADIUS_FLOOR

    rng = np.random.default_rng(2026)
    rho = 0.9
    raw_nilpotent = 0
    var = 1.0 / units if init == "uniform" else 2.0 / units
    # max |entry| before scaling (Gaussian: 6 s.d.)
    lim = np.sqrt(3.0 * var) if init == "uniform" else 6.0 * np.sqrt(var)
    max_scale = rho / (RADIUS_FLOOR * np.sqrt(connectivity * units * var))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no draw may need the give-up path
        for _ in range(400):
            _, W = draw_reservoir_weights(rng, 2, units, spectral_radius=rho, connectivity=connectivity, init=init)
            assert abs(np.max(np.abs(np.linalg.eigvals(W))) - rho) <= 1e-9
            assert np.abs(W).max() <= lim * max_scale
            _, W0 = draw_reservoir_weights(rng, 2, units, connectivity=connectivity, init=init, rescale=False)
            raw_nilpotent += np.max(np.abs(np.linalg.eigvals(W0))) < 1e-12
    if (units, connectivity) == (8, 0.1):
        assert raw_nilpotent >= 0.15 * 400  # the redraw is needed: about 30 % of raw draws are nilpotent
    assert MAX_REDRAWS >= 100


def test_seed_determinism_is_bitwise_and_seeds_differ():
    X = np.random.default_rng(RNG_SEED).random((5, 784))
    kw = dict(units=6, pooling="avg", stem="random_conv", stem_channels=8, projection_dim=300,
              activation="leaky_relu", init="kaiming", random_state=7, backend="numpy")
    a = BiRC2DFeatures(**kw).fit().transform(X)
    b = BiRC2DFeatures(**kw).fit().transform(X)
    assert a.dtype == np.float32
    np.testing.assert_array_equal(a, b)
    kw["random_state"] = 8
    c = BiRC2DFeatures(**kw).fit().transform(X)
    assert not np.allclose(a, c)


# ------------------------------------------------------------------------------------------------
# metamorphic flip test (spec section 2, item 10)
# ------------------------------------------------------------------------------------------------
@settings(max_examples=10)
@given(seed=st.integers(0, 2**31 - 1), nh=st.integers(1, 6), nw=st.integers(1, 6),
       activation=st.sampled_from(list(ACTIVATION_CODES)), leak=st.floats(0.05, 1.0))
def test_flip_metamorphic(seed, nh, nw, activation, leak):
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((2, nh, nw, 3))
    blk = BiReservoir2D(units=4, leak=leak, activation=activation, share_direction_weights=True,
                        input_dim=3, **_f64(random_state=seed)).fit()
    U = 4
    out = blk.transform(G)
    lr = blk.transform(G[:, :, ::-1])
    ud = blk.transform(G[:, ::-1])
    np.testing.assert_allclose(lr[..., 0:U], out[:, :, ::-1, U:2 * U], rtol=0, atol=FLIP_TOL)
    np.testing.assert_allclose(lr[..., U:2 * U], out[:, :, ::-1, 0:U], rtol=0, atol=FLIP_TOL)
    np.testing.assert_allclose(ud[..., 2 * U:3 * U], out[:, ::-1, :, 3 * U:4 * U], rtol=0, atol=FLIP_TOL)
    np.testing.assert_allclose(ud[..., 3 * U:4 * U], out[:, ::-1, :, 2 * U:3 * U], rtol=0, atol=FLIP_TOL)


def test_flip_fails_without_shared_weights():
    """The metamorphic relation really depends on the shared weights (the test above can fail)."""
    G = np.random.default_rng(3).standard_normal((1, 4, 5, 2))
    blk = BiReservoir2D(units=4, input_dim=2, **_f64()).fit()
    out, lr = blk.transform(G), blk.transform(G[:, :, ::-1])
    assert np.abs(lr[..., 0:4] - out[:, :, ::-1, 4:8]).max() > 1e-3


# ------------------------------------------------------------------------------------------------
# batch independence (spec section 2, item 11) and pooling identities
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,tol", [(np.float64, BATCH_TOL_F64), (np.float32, BATCH_TOL_F32)])
def test_batch_independence(dtype, tol):
    rng = np.random.default_rng(RNG_SEED + 5)
    X = rng.random((17, 784))
    kw = dict(units=8, pooling="avg", projection_dim=300, random_state=1, backend="numpy", dtype=dtype)
    f = BiRC2DFeatures(batch_size=6, **kw).fit()
    full = f.transform(X)
    singles = np.vstack([f.transform(X[i:i + 1]) for i in (0, 9, 16)])
    np.testing.assert_allclose(singles, full[[0, 9, 16]], rtol=0, atol=tol)
    other = rng.random((5, 784))
    mixed = f.transform(np.vstack([other, X[3:4], other]))
    np.testing.assert_allclose(mixed[5], full[3], rtol=0, atol=tol)
    g = BiRC2DFeatures(batch_size=256, **kw).fit()
    np.testing.assert_allclose(g.transform(X), full, rtol=0, atol=tol)


def test_pooling_identities_and_projection():
    rng = np.random.default_rng(RNG_SEED + 6)
    X = rng.random((4, 1, 12, 8))
    common = dict(image_shape=(1, 12, 8), patch=2, units=3, **_f64())
    none = BiRC2DFeatures(pooling="none", **common).fit().transform(X).reshape(4, 6, 4, 12)
    gap = BiRC2DFeatures(pooling="gap", **common).fit().transform(X)
    avg = BiRC2DFeatures(pooling="avg", pool_size=2, **common).fit().transform(X)
    np.testing.assert_allclose(gap, none.mean(axis=(1, 2)), rtol=0, atol=1e-14)
    ref = np.stack([none[:, 2 * i:2 * i + 2, 2 * j:2 * j + 2].mean(axis=(1, 2))
                    for i in range(3) for j in range(2)], axis=1).reshape(4, -1)
    np.testing.assert_allclose(avg, ref, rtol=0, atol=1e-14)
    proj = BiRC2DFeatures(pooling="avg", projection_dim=500, **common).fit()
    P = proj.transform(X)
    assert P.shape == (4, 500) and proj.projection_.shape == (72, 500)
    np.testing.assert_allclose(P, np.maximum(avg @ proj.projection_, 0), rtol=0, atol=1e-13)
    assert (P >= 0).all() and (P > 0).any()
    lin = BiRC2DFeatures(pooling="avg", projection_dim=500, projection_activation="none", **common).fit()
    assert (lin.transform(X) < 0).any()
    assert proj.get_feature_names_out()[0] == "birc2dfeatures0"


def test_shapes_inputs_and_empty_batch():
    rng = np.random.default_rng(RNG_SEED + 7)
    X4 = rng.random((3, 3, 8, 8))
    f = BiRC2DFeatures(image_shape=(3, 8, 8), patch=4, units=2, **_f64()).fit(X4)
    assert f.n_features_in_ == 192 and f.n_features_out_ == 8
    np.testing.assert_array_equal(f.transform(X4), f.transform(X4.reshape(3, -1)))
    e = f.transform(np.zeros((0, 192)))
    assert e.shape == (0, 8)
    np.testing.assert_array_equal(f.fit_transform(X4), f.transform(X4))


def test_pixel_range_scaling():
    rng = np.random.default_rng(RNG_SEED + 8)
    Xb = rng.integers(0, 256, (4, 64)).astype(np.uint8)
    common = dict(image_shape=(1, 8, 8), units=3, pooling="avg", **_f64())
    f = BiRC2DFeatures(**common).fit()
    unit = f.transform(Xb / 255.0)
    np.testing.assert_allclose(f.transform(Xb), unit, rtol=0, atol=1e-14)  # integers: 0..255
    np.testing.assert_allclose(f.transform(Xb.astype(float)), unit, rtol=0, atol=1e-14)  # float > 1
    mixed = np.vstack([Xb[:2].astype(float), Xb[2:] / 255.0])  # decided per image
    np.testing.assert_allclose(f.transform(mixed), unit, rtol=0, atol=1e-14)
    byte = BiRC2DFeatures(pixel_range="byte", **common).fit()
    dark = np.full((1, 64), 1.0)  # a 0..255 image with no value above 1: ambiguous under "auto"
    np.testing.assert_allclose(byte.transform(dark), f.transform(dark / 255.0), rtol=0, atol=1e-14)
    raw = BiRC2DFeatures(pixel_range="none", **common).fit()
    assert np.isfinite(raw.transform(-rng.random((2, 64)))).all()


# ------------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------------
def test_bad_parameters():
    with pytest.raises(ValueError, match=r"'leak' must be a float in \(0, 1\]; got 0.0"):
        BiReservoir2D(leak=0.0, input_dim=1).fit()
    with pytest.raises(ValueError, match=r"'leak' must be a float in \(0, 1\]; got 1.5"):
        BiRC2DFeatures(leak=1.5).fit()
    with pytest.raises(ValueError, match="'connectivity'"):
        BiReservoir2D(connectivity=0.0, input_dim=1).fit()
    with pytest.raises(ValueError, match="'activation' must be one of"):
        BiReservoir2D(activation="sigmoid", input_dim=1).fit()
    with pytest.raises(ValueError, match="'init' must be one of"):
        BiReservoir2D(init="glorot", input_dim=1).fit()
    with pytest.raises(ValueError, match="'units'"):
        BiReservoir2D(units=0, input_dim=1).fit()
    with pytest.raises(ValueError, match="'input_scaling'"):
        BiReservoir2D(input_scaling=0.0, input_dim=1).fit()
    with pytest.raises(ValueError, match="'backend' must be one of"):
        BiReservoir2D(backend="cuda", input_dim=1).fit()
    with pytest.raises(ValueError, match="'dtype'"):
        BiReservoir2D(dtype=np.int32, input_dim=1).fit()
    with pytest.raises(ValueError, match="needs the channel count"):
        BiReservoir2D().fit()
    with pytest.raises(ValueError, match="not divisible by 'patch' = 3"):
        BiRC2DFeatures(image_shape=(1, 28, 28), patch=3).fit()
    with pytest.raises(ValueError, match="not divisible by 'pool_size' = 4"):
        BiRC2DFeatures(image_shape=(1, 28, 28), patch=2, pooling="avg", pool_size=4).fit()
    with pytest.raises(TypeError, match="'image_shape'"):
        BiRC2DFeatures(image_shape=(28, 28)).fit()
    with pytest.raises(ValueError, match="'pixel_range' must be one of"):
        BiRC2DFeatures(pixel_range="0-1").fit()


def test_fit_rejects_non_finite_images():
    X = np.random.default_rng(0).random((2, 4, 4, 3))
    for bad in (np.nan, np.inf):
        Xb = X.copy()
        Xb[1, 2, 3, 0] = bad
        with pytest.raises(ValueError,
                           match=r"'X' must contain only finite values; got (nan|inf) at index \(1, 2, 3, 0\)"):
            BiReservoir2D().fit(Xb)
        flat = np.random.default_rng(0).random((2, 16))
        flat[0, 5] = bad
        with pytest.raises(ValueError, match="'X' must contain only finite values"):
            BiRC2DFeatures(image_shape=(1, 4, 4), **_f64()).fit(flat)
    with pytest.raises(ValueError, match=r"'X' must have shape \(B, N_h, N_w, C\)"):
        BiReservoir2D().fit(X[0])
    with pytest.raises(TypeError, match="'X' must contain real numbers"):
        BiReservoir2D().fit(X.astype(complex))


def test_spectral_radius_at_least_one_warns():
    with pytest.warns(SpectralRadiusWarning, match="'spectral_radius' = 1.2 >= 1"):
        BiReservoir2D(spectral_radius=1.2, input_dim=1).fit()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BiReservoir2D(spectral_radius=0.99, input_dim=1).fit()


def test_bad_images():
    f = BiRC2DFeatures(image_shape=(1, 8, 8), units=2, **_f64()).fit()
    with pytest.raises(NotFittedError):
        BiRC2DFeatures().transform(np.zeros((1, 784)))
    with pytest.raises(ValueError, match="needs C\\*H\\*W = 64"):
        f.transform(np.zeros((2, 192)))
    rgb = BiRC2DFeatures(image_shape=(3, 8, 8), units=2, **_f64()).fit()
    with pytest.raises(ValueError, match="wrong channel count"):
        rgb.transform(np.zeros((2, 1, 8, 8)))
    with pytest.raises(ValueError, match="channel-last"):
        rgb.transform(np.zeros((2, 8, 8, 3)))
    with pytest.raises(ValueError, match="shape \\(n, C\\*H\\*W\\) or \\(n, C, H, W\\)"):
        f.transform(np.zeros((2, 8, 8)))
    with pytest.raises(ValueError, match=r"pixel values must lie in \[0, 1\] or \[0, 255\].*image 1"):
        f.transform(np.vstack([np.zeros(64), np.full(64, 300.0)]))
    with pytest.raises(ValueError, match="pixel values must lie in"):
        f.transform(-np.ones((1, 64)))
    unit = BiRC2DFeatures(image_shape=(1, 8, 8), units=2, pixel_range="unit", **_f64()).fit()
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\] \(pixel_range='unit'\)"):
        unit.transform(np.full((1, 64), 2.0))
    bad = np.zeros((1, 64))
    bad[0, 5] = np.nan
    with pytest.raises(ValueError, match="'X' must contain only finite values"):
        f.transform(bad)
    with pytest.raises(TypeError, match="real numbers"):
        f.transform(np.array([["a"] * 64]))
    with pytest.raises(ValueError, match="wrong channel count"):
        BiRC2DFeatures(image_shape=(1, 8, 8)).fit(np.zeros((2, 100)))
    blk = BiReservoir2D(units=2, input_dim=3, **_f64()).fit()
    with pytest.raises(ValueError, match="has 2 channels but the block was fitted for 3"):
        blk.transform(np.zeros((1, 4, 4, 2)))


def test_auto_backend_never_imports_torch():
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from algos.continual._birc2d import BiRC2DFeatures\n"
        "f = BiRC2DFeatures(image_shape=(1, 4, 4), units=2, backend='auto').fit()\n"
        "f.transform(np.zeros((1, 16)))\n"
        "assert f.blocks_[0].backend_ == 'numpy'\n"
        "assert 'torch' not in sys.modules\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
