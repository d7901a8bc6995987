"""T7: the sketched population-risk bound holds on the event E_cov and E_OSE (spec section 2).

On E_cov = {Sigma_hat >= Sigma / 2} and E_OSE = {singular values of S U in [1 - eta, 1 + eta]}
(U an orthonormal basis of span[X, y]) the reconstructed bound is deterministic, so every run
inside both events must satisfy it; the events themselves must hold in >= 1 - delta of the runs.
"""

import numpy as np
import pytest
from scipy import stats

import theory.networked_learning as th
from algos.networked_learning import (
    NetworkedDAGRegressor,
    cyclic_allocation,
    excess_risk,
    make_gaussian,
    make_path,
    make_sketch,
)
from theory.networked_learning import aggregation_term, gaussian_ose_eta, sketched_risk_bound

DELTA = 0.05  # failure probability of the OSE event used for eta
RUNS = 30
REL = 1e-9  # float round-off on quantities of order 1


@pytest.mark.parametrize("k", [150, 400])
def test_T7_sketched_risk_bound_on_its_event(k):
    d, m, D = 4, 2000, 12
    model = make_gaussian(d, "ar1", rho=0.5, sigma=1.0)
    G = make_path(D)
    fs = cyclic_allocation(G, d)  # M-covered with M = d
    M = d
    eta = gaussian_ose_eta(k, d + 1, DELTA)
    Sig = model.Sigma
    Sig_is = np.linalg.inv(np.linalg.cholesky(Sig))
    inside, event_fail, excesses = 0, 0, []
    for r in range(RUNS):
        X, y = model.sample(m, random_state=r)
        est = NetworkedDAGRegressor(graph=G, feature_sets=fs, protocol="sketch", k=k, fit_intercept=False,
                                    random_state=1000 + r).fit(X, y)
        S = make_sketch("gaussian", est.k_, m, est.sketch_seed_)
        SX, Sy = S.apply(X), S.apply(y)
        # events
        w = np.linalg.eigvalsh(Sig_is @ (X.T @ X / m) @ Sig_is.T)
        U = np.linalg.qr(np.column_stack([X, y]))[0]
        sv = np.linalg.svd(S.apply(U), compute_uv=False)
        e_cov = w.min() >= 0.5
        e_ose = sv.min() >= 1 - eta and sv.max() <= 1 + eta
        event_fail += not e_ose
        if not (e_cov and e_ose):
            continue
        inside += 1
        beta_hat = np.linalg.lstsq(X, y, rcond=None)[0]
        beta_tilde = np.linalg.lstsq(SX, Sy, rcond=None)[0]
        stat = excess_risk(beta_hat, Sig, model.beta_star)
        L_hat = float(np.sum((y - X @ beta_hat) ** 2) / m)

        def L_tilde(beta):
            return float(np.sum((Sy - SX @ beta) ** 2) / m)

        e1 = L_tilde(est.global_coefs_[0]) - L_tilde(beta_tilde)
        A = float(np.abs(beta_tilde).sum())
        B = float(np.sqrt(np.max(np.sum(SX**2, axis=0)) / m))
        agg = aggregation_term(A, B, M, max(e1, 0.0), D)
        bound = sketched_risk_bound(stat, L_hat, eta, agg)
        excess = excess_risk(est.coef_, Sig, model.beta_star)
        excesses.append(excess)
        assert excess <= bound * (1 + REL), (r, excess, bound)
    assert inside >= RUNS // 2, f"too few runs inside the event ({inside}/{RUNS})"
    # the OSE event fails with probability <= delta: binomial quantile at 0.999
    assert event_fail <= stats.binom.ppf(0.999, RUNS, DELTA), event_fail
    # T7 is loose (excess / bound <= 0.003), so the level is checked with the sharp T8 consequence
    # [R, empirical]: on a converged network the excess is about sigma^2 (d/m + d/(k - d - 1)).
    # Measured mean ratio 1.21 (k = 150) and 1.11 (k = 400) over these runs; the ratio of one run is
    # chi-square-like with coefficient of variation <= 0.8, so the mean of >= 15 runs has s.e. <= 0.21:
    # the band [0.6, 1.8] is the measured value +- 3 s.e. It fails if the sketch, a parent's message
    # or the noise level is off by a factor 2.
    sigma2 = model.noise_var
    expect = sigma2 * (d / m + th.sketch_ls_expectation_factor(d, k) - 1.0)
    assert expect == pytest.approx(sigma2 * (d / m + d / (k - d - 1)))
    ratio = float(np.mean(excesses)) / expect
    assert 0.6 <= ratio <= 1.8, ratio
