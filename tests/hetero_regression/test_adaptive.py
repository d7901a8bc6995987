"""Intervals under heavy-tailed leverage (``refine="mixture"``) and the adaptive refinement (``refine="adaptive"``).

Coverage checks use fixed seeds at modest replication counts; each asserts the pooled coverage of
nominal 95 % intervals inside the binomial band ``0.95 +- 3 sqrt(0.95 * 0.05 / N)`` (``N`` intervals).
"""

import math
import warnings

import numpy as np
import pytest

from algos.hetero_regression import SubsetOfSignalsRegressor
from algos.hetero_regression._adaptive import adaptive_refine, score_estimate
from algos.hetero_regression._mixture import HEAVY_LEVERAGE, design_kurtosis

N, D, REPS = 1000, 3, 30
Z95 = 1.959964


def _draw(seed, rows="gauss", noisy=300.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, D))
    if rows == "t":
        X = X / np.sqrt(rng.chisquare(2.5, size=N) / 2.5)[:, None]
        sigma = np.exp(rng.uniform(math.log(10.0), math.log(1e3), N))
    else:
        sigma = np.full(N, noisy)
    sigma[rng.permutation(N)[: N // 10]] = 1.0
    beta = np.ones(D) / math.sqrt(D)
    return X, X @ beta + sigma * rng.standard_normal(N), beta, sigma


def _fit(X, y, refine):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SubsetOfSignalsRegressor(refine=refine).fit(X, y)
        return est, est.coef_se_


def _band(n_intervals):
    return 3.0 * math.sqrt(0.95 * 0.05 / n_intervals)


def test_design_kurtosis_separates_gaussian_from_t_rows():
    assert abs(design_kurtosis(_draw(0)[0]) - 1.0) < 0.2
    assert design_kurtosis(_draw(0, "t")[0]) > HEAVY_LEVERAGE


def test_mixture_reports_hc3_under_heavy_leverage_and_keeps_its_sandwich_otherwise():
    est, _ = _fit(*_draw(1, "t")[:2], "mixture")
    assert est.inference_ == "mixture_hc3"
    assert "HC3" in str(est.summary())
    est, _ = _fit(*_draw(1)[:2], "mixture")
    assert est.inference_ == "mixture"


def test_adaptive_is_refused_under_heavy_leverage():
    est, se = _fit(*_draw(2, "t")[:2], "adaptive")
    assert est.inference_ == "mixture_hc3" and np.all(np.isfinite(se))


def test_mixture_covers_under_heavy_tailed_leverage():
    hits = []
    for seed in range(REPS):
        X, y, beta, _ = _draw(100 + seed, "t")
        est, se = _fit(X, y, "mixture")
        assert est.inference_ == "mixture_hc3"
        hits.append(np.abs(est.coef_ - beta) <= Z95 * se)
    cov = float(np.mean(hits))
    assert abs(cov - 0.95) <= _band(REPS * D), cov


def test_adaptive_reports_its_method_and_covers_on_two_level_noise():
    hits, ratio_adaptive, ratio_none = [], [], []
    for seed in range(REPS):
        X, y, beta, sigma = _draw(200 + seed)
        est, se = _fit(X, y, "adaptive")
        assert est.inference_ == "adaptive" and est.refined_
        hits.append(np.abs(est.coef_ - beta) <= Z95 * se)
        oracle = np.sqrt(np.diag(np.linalg.inv((X / sigma[:, None] ** 2).T @ X)))
        ratio_adaptive.append(se / oracle)
        ratio_none.append(_fit(X, y, "none")[1] / oracle)
    cov = float(np.mean(hits))
    assert abs(cov - 0.95) <= _band(REPS * D), cov
    # narrower than the unrefined front door's intervals
    assert np.median(ratio_adaptive) < 0.8 * np.median(ratio_none)


def test_estimated_score_is_odd_and_close_to_the_gaussian_score():
    rng = np.random.default_rng(3)
    psi = score_estimate(rng.standard_normal(20000), 1.0)
    t = np.linspace(-1.5, 1.5, 7)
    val, _ = psi(t)
    np.testing.assert_allclose(val, -psi(-t)[0], atol=1e-9)
    # the Gaussian score is r: E psi' = E psi^2 = E psi r = 1 (the kernel blurs it by a few per cent)
    np.testing.assert_allclose(val, t, atol=0.15)
    z = rng.standard_normal(20000)
    v, der = psi(z)
    assert np.mean(der) == pytest.approx(1.0, abs=0.1)
    assert np.mean(v * v) == pytest.approx(1.0, abs=0.1)
    assert np.mean(v * z) == pytest.approx(1.0, abs=0.1)


def test_adaptive_refine_is_at_a_root_after_its_steps_on_gaussian_noise():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((4000, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.standard_normal(4000)
    b0 = np.linalg.lstsq(X, y, rcond=None)[0]
    b, cov, info = adaptive_refine(X, y, b0, 1.0)
    # Gaussian noise: the adaptive fit is about OLS, and so is its covariance
    ols_se = np.sqrt(np.diag(np.linalg.inv(X.T @ X)) * np.var(y - X @ b0))
    assert np.all(np.abs(b - b0) < 0.5 * ols_se)  # equivalent to OLS up to o(1) standard errors
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), ols_se, rtol=0.15)
    assert info["curvature"] == "sandwich"


def test_refine_rejects_an_unknown_option():
    X, y, _, _ = _draw(5)
    with pytest.raises(ValueError, match="refine"):
        SubsetOfSignalsRegressor(refine="bickel").fit(X, y)
