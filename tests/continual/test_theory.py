"""theory.continual: the echo-state contraction and boundedness inequalities measured on the states of
the package's scan kernel, and the shrinkage floor on real covariances (spec section 2, items 6, 8, 9)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import theory.continual as tc
from algos.continual._kernels import ACTIVATION_CODES, reservoir_scan
from algos.continual._reservoir import BiReservoir2D, draw_reservoir_weights

#: slack of the exact inequalities: float64 round-off of O(1) states over <= 60 steps.
INEQ_TOL = 1e-12
#: relative accuracy of numpy's symmetric eigenvalues for d <= 30 (backward stable: ~d ulps of ||A||).
EIG_TOL = 1e-13


def _scan(Z, W, leak, activation, h0):
    out = np.empty_like(Z)
    reservoir_scan(Z, W, leak, ACTIVATION_CODES[activation], 0.01, False, h0, out)
    return out


def _to_spectral_norm(W, sigma):
    return W * (sigma / np.linalg.norm(W, 2))


@settings(max_examples=30)
@given(seed=st.integers(0, 2**31 - 1), sigma=st.floats(0.1, 0.95), leak=st.floats(0.05, 1.0),
       activation=st.sampled_from(["tanh", "relu", "leaky_relu"]), units=st.integers(2, 12))
def test_contraction_inequality_on_states(seed, sigma, leak, activation, units):
    rng = np.random.default_rng(seed)
    L = 40
    W = _to_spectral_norm(rng.standard_normal((units, units)), sigma)
    Z = np.repeat(rng.standard_normal((1, L, units)) * 2.0, 2, axis=0)  # the same input for both runs
    h0 = rng.standard_normal((2, units)) * 3.0
    H = _scan(Z, W, leak, activation, h0)
    dist = np.linalg.norm(H[0] - H[1], axis=1)  # t = 1..L
    d0 = np.linalg.norm(h0[0] - h0[1])
    bound = tc.esn_contraction_bound(leak, sigma, np.arange(1, L + 1), initial_distance=d0)
    assert np.all(dist <= bound + INEQ_TOL)
    c = tc.esn_contraction_factor(leak, sigma)
    assert c == pytest.approx((1 - leak) + leak * sigma) and c < 1


def test_contraction_bound_is_attained_by_linear_reservoir():
    """With ReLU on a positive orthant-preserving W the bound is tight: it is not vacuous."""
    U, sigma, leak = 3, 0.6, 0.4
    W = sigma * np.eye(U)
    Z = np.full((2, 20, U), 5.0)
    h0 = np.array([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    H = _scan(Z, W, leak, "relu", h0)
    dist = np.linalg.norm(H[0] - H[1], axis=1)
    bound = tc.esn_contraction_bound(leak, sigma, np.arange(1, 21), initial_distance=np.sqrt(3.0))
    np.testing.assert_allclose(dist, bound, rtol=1e-12)


@pytest.mark.parametrize("init", ["uniform", "kaiming"])
@pytest.mark.parametrize("rho", [0.5, 0.9])
def test_spectral_radius_below_one_forgets_asymptotically(init, rho):
    """Proxy of spec item 8 (radius only): log-distance slope over t = 50..200 is negative."""
    rng = np.random.default_rng(11)
    _, W = draw_reservoir_weights(rng, 1, 32, spectral_radius=rho, connectivity=0.2, init=init)
    assert np.linalg.norm(W, 2) > rho  # non-normal W: the norm bound alone would not apply
    L = 200
    Z = np.repeat(rng.standard_normal((1, L, 32)), 2, axis=0)
    h0 = rng.standard_normal((2, 32))
    H = _scan(Z, W, 0.5, "tanh", h0)
    dist = np.linalg.norm(H[0] - H[1], axis=1)[49:]
    slope = np.polyfit(np.arange(50, L + 1), np.log(np.maximum(dist, 1e-300)), 1)[0]
    assert slope < 0


@settings(max_examples=20)
@given(seed=st.integers(0, 2**31 - 1), leak=st.floats(0.05, 1.0), rho=st.floats(0.1, 2.0),
       scale=st.floats(0.1, 50.0))
def test_tanh_states_bounded_by_one(seed, leak, rho, scale):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((8, 8)) * rho
    Z = rng.standard_normal((3, 30, 8)) * scale
    H = _scan(Z, W, leak, "tanh", np.zeros((3, 8)))
    assert np.abs(H).max() <= tc.reservoir_state_bound("tanh") + INEQ_TOL


def test_tanh_state_bound_is_attained():
    """The tanh bound 1 is tight: a saturating input (leak 1) puts every unit at tanh(50) = 1.0 in
    float64, so a bound smaller by any factor fails."""
    Z = np.full((1, 5, 4), 50.0)
    H = _scan(Z, 0.5 * np.eye(4), 1.0, "tanh", np.zeros((1, 4)))
    assert np.abs(H).max() == pytest.approx(tc.reservoir_state_bound("tanh"), abs=1e-15)


@pytest.mark.parametrize("activation", ["relu", "leaky_relu"])
@pytest.mark.parametrize("leak, sigma", [(1.0, 0.5), (0.3, 0.8), (0.05, 0.2)])
def test_leaky_relu_state_bound_is_attained(activation, leak, sigma):
    """Tight instance: W = sigma I and a constant positive input z of norm M. The states increase to
    the fixed point h* = z / (1 - sigma) of h = (1 - a) h + a act(sigma h + z), whose norm is the bound
    M / (1 - sigma); after L steps the gap is c^L of it, c = 1 - a + a sigma. So the bound holds and
    is reached to 1e-6: a bound scaled by any factor below 1, or with a wrong exponent or constant,
    fails."""
    U = 5
    z = np.linspace(0.5, 2.0, U)
    M = float(np.linalg.norm(z))
    c = tc.esn_contraction_factor(leak, sigma)
    L = int(np.ceil(np.log(1e-7) / np.log(c))) + 1
    Z = np.tile(z, (1, L, 1))
    H = _scan(Z, sigma * np.eye(U), leak, activation, np.zeros((1, U)))
    norms = np.linalg.norm(H[0], axis=1)
    bound = tc.reservoir_state_bound(activation, leak=leak, sigma=sigma, max_input_norm=M)
    assert np.all(norms <= bound * (1 + INEQ_TOL))
    assert norms[-1] >= bound * (1 - 1e-6)
    gap = np.abs(norms - bound * (1 - c ** np.arange(1, L + 1))).max()
    assert gap <= 1e-9 * bound  # the closed-form approach M/(1 - sigma) (1 - c^t)


@settings(max_examples=30)
@given(seed=st.integers(0, 2**31 - 1), leak=st.floats(0.05, 1.0), sigma=st.floats(0.0, 0.95),
       activation=st.sampled_from(["relu", "leaky_relu"]))
def test_leaky_relu_state_bound_on_states(seed, leak, sigma, activation):
    rng = np.random.default_rng(seed)
    U, L = 6, 60
    W = _to_spectral_norm(rng.standard_normal((U, U)), sigma) if sigma > 0 else np.zeros((U, U))
    Z = rng.standard_normal((4, L, U)) * rng.uniform(0.1, 10.0)
    H = _scan(Z, W, leak, activation, np.zeros((4, U)))
    M = np.linalg.norm(Z, axis=2).max()
    bound = tc.reservoir_state_bound(activation, leak=leak, sigma=sigma, max_input_norm=M)
    assert bound == tc.leaky_relu_state_bound(leak, sigma, M)
    assert np.linalg.norm(H, axis=2).max() <= bound + INEQ_TOL * max(1.0, bound)


def test_block_states_within_bounds():
    """The bounds hold for the reservoirs a BiReservoir2D block actually draws (tanh, default init)."""
    G = np.random.default_rng(12).random((2, 14, 14, 4)) * 255.0  # unscaled pixels: saturating input
    blk = BiReservoir2D(units=8, input_dim=4, random_state=0, backend="numpy", dtype=np.float64).fit()
    assert np.abs(blk.transform(G)).max() <= 1.0


@settings(max_examples=25)
@given(seed=st.integers(0, 2**31 - 1), d=st.integers(2, 30), n=st.integers(1, 10),
       eps=st.floats(1e-6, 1.0))
def test_shrinkage_floor_with_fewer_samples_than_features(seed, d, n, eps):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.01, 100.0)
    Sigma = np.cov(X, rowvar=False, bias=True).reshape(d, d)  # rank <= n - 1 < d: singular
    A = (1 - eps) * Sigma + eps * np.eye(d)
    lam = np.linalg.eigvalsh(A)[0]
    floor = tc.shrinkage_eigenvalue_floor(eps)
    assert floor == eps
    # eigvalsh is backward stable: its eigenvalues are exact to ~d * 2^-52 * ||A||_2
    slack = EIG_TOL * np.linalg.norm(A, 2)
    assert lam >= floor - slack
    lam_sigma = max(np.linalg.eigvalsh(Sigma)[0], 0.0)
    assert abs(lam - tc.shrinkage_eigenvalue_floor(eps, lam_sigma)) <= 2 * slack
    assert np.all(np.isfinite(np.linalg.cholesky(A)))


def test_theory_tables_and_examples():
    funcs = [n for n in tc.__all__ if n not in ("BOUND_KIND", "STATUS")]
    assert set(tc.BOUND_KIND) == set(funcs) == set(tc.STATUS)
    assert set(tc.STATUS.values()) <= {"C", "R", "D", "V", "T", "D, V"}
    assert tc.esn_contraction_factor(1.0, 0.5) == 0.5
    assert tc.leaky_relu_state_bound(0.3, 0.5, 2.0) == pytest.approx(4.0)  # M / (1 - sigma)
    assert tc.leaky_relu_state_bound(0.3, 0.5, 2.0, initial_norm=9.0) == 9.0
    assert tc.reservoir_state_bound("tanh", initial_norm=3.0) == 3.0
    np.testing.assert_allclose(tc.esn_contraction_bound(0.5, 0.5, np.array([0, 1, 2])), [1, 0.75, 0.5625])


def test_theory_bad_input():
    with pytest.raises(ValueError, match=r"'leak' must be a float in \(0, 1\]; got 0.0"):
        tc.esn_contraction_factor(0.0, 0.5)
    with pytest.raises(ValueError, match="'sigma'"):
        tc.esn_contraction_factor(0.5, -1.0)
    with pytest.raises(TypeError, match="'sigma'"):
        tc.esn_contraction_factor(0.5, "big")
    with pytest.raises(ValueError, match=r"'sigma' must be a float in \[0, 1\)"):
        tc.leaky_relu_state_bound(0.5, 1.0, 1.0)
    with pytest.raises(ValueError, match="'t'"):
        tc.esn_contraction_bound(0.5, 0.5, -1)
    with pytest.raises(ValueError, match="'t'"):
        tc.esn_contraction_bound(0.5, 0.5, 1.5)
    with pytest.raises(ValueError, match="'max_input_norm' is required"):
        tc.reservoir_state_bound("relu", leak=0.5, sigma=0.5)
    with pytest.raises(ValueError, match="'activation'"):
        tc.reservoir_state_bound("sigmoid")
    with pytest.raises(ValueError, match=r"'shrinkage' must be a float in \(0, 1\]"):
        tc.shrinkage_eigenvalue_floor(0.0)
    with pytest.raises(ValueError, match="'min_eigenvalue'"):
        tc.shrinkage_eigenvalue_floor(0.1, -1.0)
