"""Spec section 2, T1-T7: the closed-form mixing weight and the variance-trace bound of
theory.federated / algos.federated.merge, checked against a grid, scipy's bounded minimiser, Monte Carlo
on quadratic models and exact linear regression, James-Stein dominance, invariances, and the LMC barrier."""

import warnings

import numpy as np
import pytest
from hypothesis import given, note, settings, target
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize_scalar

from algos.federated import (
    MixingWeightWarning,
    init_params,
    local_train,
    loss_grad,
    merge_lora,
    merge_params,
    optimal_mixing_weight,
)
from theory.federated import (
    BOUND_KIND,
    STATUS,
    expected_loss_bound,
    james_stein_risk,
    lmc_barrier,
    module_bound,
    ols_variance_trace,
    optimal_bound,
    optimal_lambda,
    optimal_lambda_modules,
    shared_lambda,
    variance_trace_bound,
)

GRID_RTOL = 1e-12   # spec T1: U(lambda*) <= min_grid U + 1e-12 max(V_F, V_L)
REL_TOL = 1e-12     # spec T2: relative round-off of a few flops
N_SE = 4.0          # Monte-Carlo tests: 4 standard errors (one-sided false alarm ~3e-5 per check)

log_v = st.floats(-8, 8)


@st.composite
def moments(draw, with_cov=True):
    vf = 10.0 ** draw(log_v)
    vl = 10.0 ** draw(log_v)
    rho = draw(st.floats(-1, 1)) if with_cov else 0.0
    return vf, vl, rho * np.sqrt(vf * vl)


@given(m=moments())
def test_T1_closed_form_minimises_U_on_the_interval(m):
    vf, vl, c = m
    lam = optimal_lambda(vf, vl, c)
    u_star = variance_trace_bound(lam, vf, vl, c)
    grid = np.linspace(0, 1, 10_001)
    u_grid = np.min(variance_trace_bound(grid, vf, vl, c))
    res = minimize_scalar(lambda t: variance_trace_bound(t, vf, vl, c), bounds=(0, 1), method="bounded",
                          options={"xatol": 1e-12})
    note(f"lam*={lam} U*={u_star} grid={u_grid} scipy={res.fun}")
    target(u_star - min(u_grid, res.fun))
    tol = GRID_RTOL * max(vf, vl)
    assert u_star <= u_grid + tol
    assert u_star <= res.fun + tol
    assert 0.0 <= lam <= 1.0


@given(m=moments())
def test_T2_tighter_than_either_endpoint(m):
    vf, vl, c = m
    u = optimal_bound(vf, vl, c)
    assert u <= min(vf, vl) * (1 + REL_TOL)
    if c < min(vf, vl) * (1 - 1e-6):
        assert u < min(vf, vl)


@given(m=moments(with_cov=False))
def test_T2_harmonic_mean_form_without_covariance(m):
    vf, vl, _ = m
    u = optimal_bound(vf, vl)
    assert_allclose(u, 1.0 / (1.0 / vf + 1.0 / vl), rtol=1e-12)
    assert u >= 0.5 * min(vf, vl) * (1 - REL_TOL)


@given(K=st.integers(1, 50), seed=st.integers(0, 2**31))
def test_T2_per_module_bound_chain(K, seed):
    rng = np.random.default_rng(seed)
    vf = 10.0 ** rng.uniform(-4, 4, K)
    vl = 10.0 ** rng.uniform(-4, 4, K)
    beta = 10.0 ** rng.uniform(-2, 2, K)
    lam_m = optimal_lambda_modules(vf, vl)
    per_module = module_bound(lam_m, vf, vl, beta=beta)
    shared = module_bound(shared_lambda(vf, vl, beta=beta), vf, vl, beta=beta)
    endpoints = min(np.sum(beta * vf), np.sum(beta * vl))
    t = np.linspace(0, 1, 2001)[:, None]
    grid = float(np.min(np.sum(beta * (t**2 * vf + (1 - t) ** 2 * vl), axis=1)))
    assert per_module <= shared * (1 + REL_TOL)
    assert shared <= grid * (1 + REL_TOL)
    assert shared <= endpoints * (1 + REL_TOL)


@settings(max_examples=6)
@given(p=st.integers(2, 50), seed=st.integers(0, 2**31))
def test_T3_bound_holds_on_quadratic_models_by_monte_carlo(p, seed):
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.normal(size=(p, p)))[0]
    H = Q @ np.diag(rng.uniform(0.1, 2.0, p)) @ Q.T
    beta = np.linalg.eigvalsh(H)[-1]
    b_f = rng.normal(size=p) * 0.3
    Lf = rng.normal(size=(p, p)) * 0.1
    Ll = rng.normal(size=(p, p)) * 0.3
    Sf, Sl = Lf @ Lf.T, Ll @ Ll.T
    vf, vl = b_f @ b_f + np.trace(Sf), np.trace(Sl)
    lam = optimal_lambda(vf, vl)
    R = 20_000
    ef = b_f + rng.normal(size=(R, p)) @ Lf.T
    el = rng.normal(size=(R, p)) @ Ll.T

    def mc(lmb, Hm):
        e = lmb * ef + (1 - lmb) * el
        loss = 0.5 * np.einsum("ij,jk,ik->i", e, Hm, e)
        return loss.mean(), loss.std(ddof=1) / np.sqrt(R)

    m, se = mc(lam, H)
    bound = expected_loss_bound(lam, vf, vl, beta)
    note(f"MC {m:.5g} (se {se:.2g}) bound {bound:.5g}")
    assert m <= bound + N_SE * se
    # isotropic H = beta I: the bound is tight and lambda* beats both endpoints
    Hi = beta * np.eye(p)
    mi, sei = mc(lam, Hi)
    assert mi <= min(mc(0.0, Hi)[0], mc(1.0, Hi)[0]) + N_SE * sei
    assert abs(mi - bound) <= N_SE * sei + 1e-12


def _linear_case(seed, include_self):
    """Fixed designs; client 0's local OLS vs pooled OLS; exact V_F, V_L, C."""
    rng = np.random.default_rng(seed)
    M, p, sigma, tau = 12, 5, 1.0, 0.3
    theta_bar = rng.normal(size=p)
    thetas = theta_bar + tau * rng.normal(size=(M, p))
    ns = rng.integers(15, 60, M)
    Xs = [rng.normal(size=(n, p)) for n in ns]
    pool = list(range(M)) if include_self else list(range(1, M))
    G = sum(Xs[j].T @ Xs[j] for j in pool)
    Ginv = np.linalg.inv(G)
    mean_f = Ginv @ sum(Xs[j].T @ Xs[j] @ thetas[j] for j in pool)
    vl = ols_variance_trace(Xs[0], sigma**2)
    vf = float(np.sum((mean_f - thetas[0]) ** 2)) + sigma**2 * float(np.trace(Ginv))
    # with client 0 in the pool, E<e_F, e_L> = sigma^2 tr(G^-1 X0'X0 (X0'X0)^-1) = sigma^2 tr(G^-1)
    # (E e_L = 0, so the bias of e_F does not enter)
    c = sigma**2 * float(np.trace(Ginv)) if include_self else 0.0
    return rng, Xs, thetas, pool, Ginv, sigma, vf, vl, c


@pytest.mark.parametrize("include_self", [False, True])
def test_T4_exact_linear_regression_case(include_self):
    rng, Xs, thetas, pool, Ginv, sigma, vf, vl, c = _linear_case(11, include_self)
    lam = optimal_lambda(vf, vl, c)
    R = 2000
    err = {0.0: [], 1.0: [], lam: []}
    for _ in range(R):
        ys = [X @ t + sigma * rng.normal(size=len(X)) for X, t in zip(Xs, thetas)]
        th_l = np.linalg.lstsq(Xs[0], ys[0], rcond=None)[0]
        th_f = Ginv @ sum(Xs[j].T @ ys[j] for j in pool)
        for lmb in err:
            err[lmb].append(np.sum((lmb * th_f + (1 - lmb) * th_l - thetas[0]) ** 2))
    mean = {k: np.mean(v) for k, v in err.items()}
    se = {k: np.std(v, ddof=1) / np.sqrt(R) for k, v in err.items()}
    u = variance_trace_bound(lam, vf, vl, c)
    msg = f"lam={lam:.3f} MC={mean[lam]:.5f}+-{se[lam]:.5f} U={u:.5f} endpoints={mean[0.0]:.5f},{mean[1.0]:.5f}"
    assert abs(mean[lam] - u) <= N_SE * se[lam], msg
    assert abs(mean[0.0] - vl) <= N_SE * se[0.0]
    assert abs(mean[1.0] - vf) <= N_SE * se[1.0]
    assert mean[lam] <= min(mean[0.0], mean[1.0]) + N_SE * se[lam]


@settings(max_examples=5)
@given(p=st.integers(3, 30), seed=st.integers(0, 2**31), dist=st.floats(0, 50))
def test_T5_positive_part_james_stein_dominates_the_local_model(p, seed, dist):
    rng = np.random.default_rng(seed)
    s2 = 0.5
    theta = rng.normal(size=p)
    direction = rng.normal(size=p)
    theta_f = theta + np.sqrt(dist) * direction / np.linalg.norm(direction)
    R = 5000
    theta_l = theta + np.sqrt(s2) * rng.normal(size=(R, p))
    d2 = np.sum((theta_f - theta_l) ** 2, axis=1)
    lam = np.minimum(1.0, (p - 2) * s2 / d2)
    merged = lam[:, None] * theta_f + (1 - lam[:, None]) * theta_l
    mse = np.sum((merged - theta) ** 2, axis=1)
    m, se = mse.mean(), mse.std(ddof=1) / np.sqrt(R)
    js = james_stein_risk(p, s2, dist)
    note(f"MC {m:.4f} se {se:.4f} JS risk {js:.4f} local {p * s2}")
    assert m <= p * s2 + N_SE * se
    assert m <= js + N_SE * se          # positive part dominates plain JS
    assert js <= p * s2


def test_james_stein_risk_matches_monte_carlo():
    rng = np.random.default_rng(0)
    p, s2, dist = 8, 1.0, 3.0
    theta, theta_f = np.zeros(p), np.r_[np.sqrt(dist), np.zeros(p - 1)]
    R = 20000
    x = rng.normal(size=(R, p))
    diff = x - theta_f
    js = theta_f + (1 - (p - 2) * s2 / np.sum(diff**2, 1))[:, None] * diff
    loss = np.sum((js - theta) ** 2, 1)
    assert abs(loss.mean() - james_stein_risk(p, s2, dist)) <= N_SE * loss.std(ddof=1) / np.sqrt(R)


@given(m=moments(with_cov=False), c=st.floats(1e-6, 1e6))
def test_T6_invariances(m, c):
    vf, vl, _ = m
    assert_allclose(optimal_lambda(c * vf, c * vl), optimal_lambda(vf, vl), rtol=1e-12)
    assert optimal_lambda(vf, vf) == 0.5
    assert optimal_lambda(1.0, 1e300) == pytest.approx(1.0)
    assert optimal_lambda(1e300, 1.0) == pytest.approx(0.0)


def test_T6_merge_endpoints_bitwise():
    rng = np.random.default_rng(0)
    f = {"W": rng.normal(size=(4, 3)), "b": rng.normal(size=3)}
    loc = {"W": rng.normal(size=(4, 3)), "b": rng.normal(size=3)}
    for k, v in merge_params(f, loc, 1.0).items():
        assert_array_equal(v, f[k])
    for k, v in merge_params(f, loc, 0.0).items():
        assert_array_equal(v, loc[k])
    mixed = merge_params(f, loc, {"W": 1.0, "b": 0.0})
    assert_array_equal(mixed["W"], f["W"])
    assert_array_equal(mixed["b"], loc["b"])
    lam_coord = rng.uniform(size=(4, 3))
    assert_allclose(merge_params(f["W"], loc["W"], lam_coord), lam_coord * f["W"] + (1 - lam_coord) * loc["W"])


def test_T7_lmc_barrier_nonpositive_on_the_convex_head():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(200, 6)), rng.integers(0, 4, 200)
    theta_f = local_train(init_params(6, 4), X[:100], y[:100], n_classes=4, epochs=30, lr=0.5)
    theta_l = local_train(theta_f, X[100:], y[100:], n_classes=4, epochs=50, lr=0.5)
    lams = np.linspace(0, 1, 11)
    losses = [loss_grad(merge_params(theta_f, theta_l, float(t)), X[100:], y[100:], n_classes=4)[0] for t in lams]
    assert lmc_barrier(lams, losses) <= 1e-9


def test_merge_lora_product_exact_factors_inexact_and_truncation_optimal():
    rng = np.random.default_rng(3)
    Af, Bf, Al, Bl = rng.normal(size=(6, 2)), rng.normal(size=(2, 5)), rng.normal(size=(6, 3)), rng.normal(size=(3, 5))
    A, B = merge_lora(Af, Bf, Al, Bl, 0.4)
    target_ = 0.4 * Af @ Bf + 0.6 * Al @ Bl
    assert_allclose(A @ B, target_, atol=1e-13)
    At, Bt = merge_lora(Af, Bf, Al, Bl, 0.4, rank=2)
    s = np.linalg.svd(target_, compute_uv=False)
    assert At.shape == (6, 2) and Bt.shape == (2, 5)
    assert_allclose(np.linalg.norm(target_ - At @ Bt), np.sqrt(np.sum(s[2:] ** 2)), rtol=1e-10)  # Eckart-Young
    Al2, Bl2 = rng.normal(size=(6, 2)), rng.normal(size=(2, 5))
    Af_, Bf_ = merge_lora(Af, Bf, Al2, Bl2, 0.5, space="factors")
    assert np.linalg.norm(Af_ @ Bf_ - (0.5 * Af @ Bf + 0.5 * Al2 @ Bl2)) > 1e-3  # cross terms
    for lam, want in ((1.0, Af @ Bf), (0.0, Al @ Bl)):
        A, B = merge_lora(Af, Bf, Al, Bl, lam)
        assert_allclose(A @ B, want, atol=1e-13)


def test_bad_input():
    with pytest.raises(ValueError, match="finite"):
        optimal_mixing_weight(np.nan, 1.0)
    with pytest.raises(ValueError, match="finite"):
        optimal_mixing_weight(1.0, np.inf)
    with pytest.raises(ValueError, match="non-negative"):
        optimal_mixing_weight(-1.0, 1.0)
    with pytest.raises(ValueError, match="Cauchy-Schwarz"):
        optimal_mixing_weight(1.0, 1.0, cov=2.0)
    with pytest.raises(ValueError, match="clip"):
        optimal_mixing_weight(1.0, 1.0, clip=(0.6, 0.4))
    with pytest.warns(MixingWeightWarning, match="0.5"):
        assert optimal_mixing_weight(0.0, 0.0) == 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert optimal_mixing_weight(0.0, 2.0) == 1.0
        assert optimal_mixing_weight(2.0, 0.0) == 0.0
    with pytest.raises(ValueError, match="same block names"):
        merge_params({"W": np.zeros(2)}, {"V": np.zeros(2)}, 0.5)
    with pytest.raises(ValueError, match="same shape"):
        merge_params({"W": np.zeros(2)}, {"W": np.zeros(3)}, 0.5)
    with pytest.raises(ValueError, match="one entry per block"):
        merge_params({"W": np.zeros(2)}, {"W": np.zeros(2)}, {"b": 0.5})
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        merge_params(np.zeros(2), np.zeros(2), 1.5)
    with pytest.raises(ValueError, match="same spaces"):
        merge_lora(np.zeros((3, 1)), np.zeros((1, 2)), np.zeros((4, 1)), np.zeros((1, 2)), 0.5)
    with pytest.raises(ValueError, match="equal ranks"):
        merge_lora(np.zeros((3, 1)), np.zeros((1, 2)), np.zeros((3, 2)), np.zeros((2, 2)), 0.5, space="factors")
    with pytest.raises(ValueError, match="lam"):
        variance_trace_bound(1.5, 1.0, 1.0)
    with pytest.raises(ValueError, match="endpoints"):
        lmc_barrier([0.2, 0.5], [1.0, 1.0])


def test_bound_kind_and_status_cover_every_function():
    import theory.federated as tf

    public = [n for n in tf.__all__ if n not in ("BOUND_KIND", "STATUS")]
    assert sorted(BOUND_KIND) == sorted(public)
    assert sorted(STATUS) == sorted(public)
    assert "reconstructed" in (tf.variance_trace_bound.__doc__ + tf.__doc__)


# --- the library and the demo report what theory/ computes ---------------------------------------------

def test_demo_linear_check_follows_the_theory_functions(monkeypatch):
    import theory.federated as th
    from algos.federated._demo import _linear_check

    lam, mean, se, U, vf, vl = _linear_check(0, 20)
    assert U == pytest.approx(variance_trace_bound(lam, vf, vl)) and lam == optimal_lambda(vf, vl)
    orig_u, orig_l = th.variance_trace_bound, th.optimal_lambda
    monkeypatch.setattr(th, "variance_trace_bound", lambda *a, **k: 2.0 * orig_u(*a, **k))
    _, _, _, U2, _, _ = _linear_check(0, 20)
    assert U2 == pytest.approx(2.0 * U)
    monkeypatch.setattr(th, "optimal_lambda", lambda *a, **k: 0.5 * orig_l(*a, **k))
    lam3, mean3, *_ = _linear_check(0, 20)
    assert lam3 == pytest.approx(0.5 * lam) and lam3 in mean3


def test_optimal_lambda_modules_does_not_broadcast():
    with pytest.raises(ValueError, match=r"'v_fed' and 'v_loc' must be 1-d of the same nonzero length"):
        optimal_lambda_modules([1.0], [3.0, 1.0])
    with pytest.raises(ValueError, match=r"'v_fed' and 'v_loc' must be 1-d"):
        optimal_lambda_modules(1.0, 3.0)
    with pytest.raises(ValueError, match=r"'cov' must be a scalar or have the shape \(2,\)"):
        optimal_lambda_modules([1.0, 2.0], [3.0, 1.0], [0.1, 0.1, 0.1])
    with pytest.raises(ValueError, match=r"'v_fed' and 'v_loc' must be 1-d of the same nonzero length"):
        shared_lambda([1.0], [3.0, 1.0])
    # V_L / (V_F + V_L) per module
    assert_allclose(optimal_lambda_modules([1.0, 2.0], [3.0, 1.0]), [0.75, 1.0 / 3.0], rtol=1e-15)
