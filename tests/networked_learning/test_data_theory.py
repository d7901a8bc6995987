"""Population models of the generators (exact moments vs Monte Carlo), theory.networked_learning values
and input checks, and the spec's population reference numbers (section 6 and acceptance test 1)."""

import importlib.util
import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from algos.networked_learning._data import (
    PopulationModel,
    load_diabetes_agents,
    make_common_factor,
    make_differential,
    make_gaussian,
    make_krr_hard3,
    make_leverage_design,
    make_suppressor,
)
from theory import networked_learning as th

M_MC = 200_000
#: Monte-Carlo tolerance, in standard errors. Each moment E[x_i x_j], E[x_i y], E[y^2] is a sample
#: mean of i.i.d. products; its standard error is (sample sd of the product) / sqrt(m). With fixed
#: seeds the test is deterministic; 5 s.e. per entry keeps a false alarm below ~1e-5 even over the
#: ~100 entries checked, while a wrong population formula (an O(1) or O(rho^2) error) is far outside.
N_SE = 5.0

GENERATORS = {
    "suppressor": lambda: make_suppressor(noise=0.5),
    "krr_hard3": lambda: make_krr_hard3(10),
    "common_factor": lambda: make_common_factor(5, 0.3),
    "common_factor_random": lambda: make_common_factor(4, 0.5, random_state=3),
    "differential": lambda: make_differential(4),
    "leverage": lambda: make_leverage_design(4, 0.05, sigma=0.5),
    "gaussian_ar1": lambda: make_gaussian(5, "ar1", rho=0.6),
    "gaussian_factor": lambda: make_gaussian(4, "factor", rho=0.3, beta=[1.0, -2.0, 0.0, 0.5], sigma=0.2),
}


def _assert_moment(products, expected, label):
    mean = products.mean(axis=0)
    se = products.std(axis=0) / math.sqrt(products.shape[0])
    tol = N_SE * se + 1e-12
    bad = np.abs(mean - expected) > tol
    assert not np.any(bad), f"{label}: MC {mean[bad]} vs exact {np.asarray(expected)[bad]} (tol {tol[bad]})"


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_population_moments_match_the_sampler(name):
    pm = GENERATORS[name]()
    assert isinstance(pm, PopulationModel)
    X, y = pm.sample(M_MC, random_state=1)
    assert X.dtype == np.float64 and y.dtype == np.float64
    assert X.shape == (M_MC, pm.d) and y.shape == (M_MC,)
    d = pm.d
    _assert_moment((X[:, :, None] * X[:, None, :]).reshape(M_MC, d * d), pm.Sigma.ravel(), f"{name} Sigma")
    _assert_moment(X * y[:, None], pm.b, f"{name} b")
    _assert_moment((y * y)[:, None], [pm.y_var], f"{name} y_var")
    # the sampler is deterministic given the seed
    X2, y2 = pm.sample(10, random_state=1)
    if pm.A is not None:  # latent models draw z row by row first: a shorter sample is a prefix
        np.testing.assert_array_equal(X2, X[:10])
    X3, y3 = pm.sample(10, random_state=1)
    np.testing.assert_array_equal(X2, X3)
    np.testing.assert_array_equal(y2, y3)


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_mse_formula_and_beta_star(name):
    pm = GENERATORS[name]()
    rng = np.random.default_rng(0)
    beta = rng.standard_normal(pm.d)
    expected = pm.y_var - 2 * pm.b @ beta + beta @ pm.Sigma @ beta
    assert pm.mse(beta) == pytest.approx(expected, rel=1e-12, abs=1e-14)
    # beta_star minimises the MSE; the minimum is the label noise for these well-specified models
    assert pm.mse(pm.beta_star) <= pm.mse(beta) + 1e-15
    assert pm.mse_star == pytest.approx(pm.noise_var, abs=1e-12)
    np.testing.assert_allclose(pm.Sigma @ pm.beta_star, pm.b, atol=1e-12)


def test_beta_star_values():
    sup = make_suppressor()
    np.testing.assert_allclose(sup.beta_star, [1.0, -1.0], atol=1e-12)
    assert sup.b[1] == 0.0  # x2 uncorrelated with y
    assert sup.y_var == 1.0 and sup.noise_var == 0.0
    assert make_suppressor(noise=2.0).y_var == pytest.approx(5.0)
    np.testing.assert_allclose(make_differential(5).beta_star, np.ones(5), atol=1e-12)
    np.testing.assert_array_equal(make_differential(5).b, [0, 0, 0, 0, 1.0])
    hard = make_krr_hard3(7)
    assert hard.rho**2 == pytest.approx(1 / 280, rel=1e-14)
    assert hard.y_var == pytest.approx(1 / 280, rel=1e-14)
    np.testing.assert_allclose(hard.beta_star, [2 / 3, -1 / 3, -1 / 3], atol=1e-9)
    cf = make_common_factor(6, 0.2)
    assert abs(cf.a.sum()) < 1e-12 and np.all(np.abs(cf.b) > 0)  # every feature correlates with y
    np.testing.assert_allclose(cf.beta_star, cf.a, atol=1e-9)
    np.testing.assert_array_equal(cf.a, make_common_factor(6, 0.2, random_state=0).a)
    np.testing.assert_allclose(make_common_factor(3, 0.2, a=[1.0, 2.0, 3.0]).a, [-1.0, 0.0, 1.0])
    lev = make_leverage_design(3, 0.1, sigma=0.0, beta=[1.0, 2.0, 3.0])
    np.testing.assert_allclose(lev.beta_star, [1.0, 2.0, 3.0])
    X, _ = lev.sample(1000, random_state=0)
    assert set(np.unique(np.abs(X[:, 0])).round(12)) <= {0.0, round(1 / math.sqrt(0.1), 12)}
    g = make_gaussian(3, "factor", rho=0.25)
    np.testing.assert_allclose(g.Sigma, 0.25 + 0.75 * np.eye(3))
    np.testing.assert_allclose(g.beta_star, np.ones(3) / math.sqrt(3))


def test_load_diabetes_agents():
    X, y = load_diabetes_agents()
    assert X.shape == (442, 10) and y.shape == (442,)
    np.testing.assert_allclose(X.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(X.std(axis=0), 1, atol=1e-12)
    assert abs(y.mean()) < 1e-12 and y.std() == pytest.approx(1.0)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: make_suppressor(noise=-1.0), ValueError, r"'noise' must be a float in \[0, inf\]"),
        (lambda: make_krr_hard3(0), ValueError, r"'D' must be an int in \[1, inf\]; got 0"),
        (lambda: make_krr_hard3(2.0), TypeError, r"'D' must be an int"),
        (lambda: make_common_factor(1, 0.1), ValueError, r"'d' must be an int in \[2, inf\]"),
        (lambda: make_common_factor(3, 0.0), ValueError, r"'rho' must be a float in \(0, inf\)"),
        (lambda: make_common_factor(3, 0.1, a=[1.0, 1.0, 1.0]), ValueError, r"'a' must not be constant"),
        (lambda: make_common_factor(3, 0.1, a=[1.0, 1.0]), ValueError, r"'a' must have shape \(3,\)"),
        (lambda: make_differential(0), ValueError, r"'k' must be an int in \[1, inf\]"),
        (lambda: make_leverage_design(3, 0.0), ValueError, r"'q' must be a float in \(0, 1\]"),
        (lambda: make_leverage_design(3, 0.5, beta=[1.0]), ValueError, r"'beta' must have shape \(3,\)"),
        (lambda: make_gaussian(3, "ar2"), ValueError, r"'kind' must be one of \{'ar1', 'factor'\}"),
        (lambda: make_gaussian(3, "ar1", rho=1.0), ValueError, r"'rho' must be a float in \(-1, 1\)"),
        (lambda: make_gaussian(3, "factor", rho=-0.1), ValueError, r"'rho' must be a float in \[0, 1\)"),
        (lambda: make_suppressor().sample(0), ValueError, r"'m' must be an int in \[1, inf\]"),
        (lambda: make_suppressor().mse([1.0]), ValueError, r"'beta' must have shape \(2,\)"),
        (lambda: make_suppressor().sample(3, random_state="x"), TypeError, r"'random_state' must be"),
    ],
)
def test_generator_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --- theory ----------------------------------------------------------------------------------------

def test_theory_values_by_hand():
    assert set(th.BOUND_KIND) == set(th.__all__) - {"BOUND_KIND"}
    assert set(th.BOUND_KIND.values()) <= {"exact", "high-probability", "in expectation", "up to constants",
                                          "asymptotic"}
    # T1: A B sqrt((M-1) e1 / floor(D/M))
    assert th.krr_path_bound(0.5, 1.0, 1.0, 3, 12) == pytest.approx(0.5)
    assert th.krr_path_bound(0.3, 2.0, 0.5, 4, 11) == pytest.approx(math.sqrt(3 * 0.3 / 2))  # floor(11/4) = 2
    assert th.krr_path_bound(0.7, 3.0, 2.0, 1, 9) == 0.0
    assert th.krr_path_bound_normalised(1.0, 2.0, 5, 5) == pytest.approx(8.0)
    assert th.krr_path_bound_normalised(1.0, 1.0, 3, 20) == pytest.approx(math.sqrt(2 / 6))
    assert th.aggregation_term(2.0, 1.0, 2, 0.25, 4) == pytest.approx(2 * math.sqrt(0.25 / 2))
    # the normalised bound is the general one at e1 = (AB)^2
    assert th.krr_path_bound(4.0, 1.0, 2.0, 3, 10) == pytest.approx(th.krr_path_bound_normalised(1.0, 2.0, 3, 10))
    # T3
    assert th.greedy_bound(1.0, 2.0, 7) == pytest.approx(0.5)
    assert th.greedy_bound(1.0, 1.0, 0) == 1.0
    assert th.greedy_step_bound(0.5, 1.0, 1.0) == pytest.approx(0.25)
    assert th.greedy_step_bound(4.0, 1.0, 2.0) == 0.0
    assert th.greedy_lower_bound(10) == pytest.approx(1 / 6400)
    assert th.greedy_lower_bound(10) < th.greedy_bound(1.0, 1.0, 10)
    # T2
    assert th.worst_case_rate(3, 8) == 1.0 and th.worst_case_rate(3, 9) == 1.0
    assert th.worst_case_rate(3, 18) == pytest.approx(0.5)
    # T6: (sqrt(9) + sqrt(2 ln(2/delta))) / sqrt(k) with 2 ln(2/delta) = 16
    delta = 2 * math.exp(-8)
    assert th.gaussian_ose_eta(100, 9, delta) == pytest.approx(0.7)
    assert th.gaussian_ose_min_k(9, 0.7, delta) == 100
    assert th.gaussian_ose_eta(400, 9, delta) == pytest.approx(0.35)
    # T5 / T7 / T8 / OLS
    assert th.full_message_risk_bound(0.1, 0.25) == pytest.approx(1.2)
    assert th.sketched_risk_bound(0.1, 1.0, 0.5, 0.25) == pytest.approx(0.2 + 4 * 8 + 4)
    assert th.sketched_risk_bound(0.1, 1.0, 0.0, 0.25) == pytest.approx(th.full_message_risk_bound(0.1, 0.25))
    assert ((1 + 0.3) / (1 - 0.3)) ** 2 - 1 == pytest.approx(4 * 0.3 / (1 - 0.3) ** 2)
    assert th.sketch_ls_expectation_factor(5, 30) == pytest.approx(1 + 5 / 24)
    assert th.ols_expected_excess(2.0, 3, 10) == pytest.approx(1.0)


@given(r=st.integers(1, 200), eta=st.floats(0.01, 0.99), delta=st.floats(1e-6, 0.5))
def test_gaussian_ose_min_k_inverts_eta(r, eta, delta):
    k = th.gaussian_ose_min_k(r, eta, delta)
    assert th.gaussian_ose_eta(k, r, delta) <= eta
    if k > 1:
        assert th.gaussian_ose_eta(k - 1, r, delta) > eta


@given(A=st.floats(0.1, 3.0), B=st.floats(0.1, 3.0), D=st.integers(0, 60))
def test_greedy_steps_imply_the_greedy_bound(A, B, D):
    e = (A * B) ** 2  # e_0 <= (AB)^2
    for _ in range(D):
        e = th.greedy_step_bound(e, A, B)
    assert e <= th.greedy_bound(A, B, D) * (1 + 1e-12)


@given(e1=st.floats(0.0, 1.0), M=st.integers(1, 6), extra=st.integers(0, 40))
def test_krr_bound_monotone(e1, M, extra):
    D = M + extra
    b = th.krr_path_bound(e1, 1.0, 1.0, M, D)
    assert 0.0 <= b <= th.krr_path_bound_normalised(1.0, 1.0, M, D) + 1e-15
    assert th.krr_path_bound(e1, 1.0, 1.0, M, D + M) <= b + 1e-15


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: th.krr_path_bound(0.5, 1.0, 1.0, 3, 2), ValueError, r"'D' must be at least M = 3"),
        (lambda: th.krr_path_bound(-0.1, 1.0, 1.0, 2, 4), ValueError, r"'e1' must be a float in \[0, inf\]"),
        (lambda: th.krr_path_bound(0.1, -1.0, 1.0, 2, 4), ValueError, r"'A' must be a float in \[0, inf\]"),
        (lambda: th.krr_path_bound(0.1, 1.0, "1", 2, 4), TypeError, r"'B' must be a float"),
        (lambda: th.krr_path_bound(0.1, 1.0, 1.0, 0, 4), ValueError, r"'M' must be an int in \[1, inf\]"),
        (lambda: th.krr_path_bound(0.1, 1.0, 1.0, 2, 4.0), TypeError, r"'D' must be an int"),
        (lambda: th.krr_path_bound_normalised(1.0, 1.0, 4, 3), ValueError, r"'D' must be at least M = 4"),
        (lambda: th.krr_path_bound_normalised(1.0, float("nan"), 2, 3), ValueError, r"'B' must be a float"),
        (lambda: th.greedy_bound(1.0, 1.0, -1), ValueError, r"'D' must be an int in \[0, inf\]"),
        (lambda: th.greedy_step_bound(2.0, 1.0, 1.0), ValueError, r"'e' must be at most \(A B\)\^2 = 1"),
        (lambda: th.greedy_step_bound(0.5, 0.0, 1.0), ValueError, r"'A' must be a float in \(0, inf\)"),
        (lambda: th.greedy_lower_bound(0), ValueError, r"'D' must be an int in \[1, inf\]"),
        (lambda: th.worst_case_rate(0, 5), ValueError, r"'M' must be an int in \[1, inf\]"),
        (lambda: th.worst_case_rate(2, True), TypeError, r"'D' must be an int"),
        (lambda: th.gaussian_ose_eta(0, 3, 0.1), ValueError, r"'k' must be an int in \[1, inf\]"),
        (lambda: th.gaussian_ose_eta(10, 3, 1.0), ValueError, r"'delta' must be a float in \(0, 1\)"),
        (lambda: th.gaussian_ose_min_k(3, 1.0, 0.1), ValueError, r"'eta' must be a float in \(0, 1\)"),
        (lambda: th.gaussian_ose_min_k(0, 0.5, 0.1), ValueError, r"'r' must be an int in \[1, inf\]"),
        (lambda: th.aggregation_term(1.0, 1.0, 3, 0.1, 2), ValueError, r"'D' must be at least M = 3"),
        (lambda: th.aggregation_term(-1.0, 1.0, 2, 0.1, 4), ValueError, r"'A_hat' must be a float"),
        (lambda: th.aggregation_term(1.0, 1.0, 2, -0.1, 4), ValueError, r"'e1_hat' must be a float"),
        (lambda: th.full_message_risk_bound(-0.1, 0.2), ValueError, r"'stat_term' must be a float in \[0, inf\]"),
        (lambda: th.full_message_risk_bound(0.1, None), TypeError, r"'agg_term' must be a float"),
        (lambda: th.sketched_risk_bound(0.1, 1.0, 1.0, 0.2), ValueError, r"'eta' must be a float in \[0, 1\)"),
        (lambda: th.sketched_risk_bound(0.1, -1.0, 0.5, 0.2), ValueError, r"'L_hat' must be a float"),
        (lambda: th.sketched_risk_bound(0.1, 1.0, 0.5, -0.2), ValueError, r"'agg_tilde' must be a float"),
        (lambda: th.sketch_ls_expectation_factor(5, 6), ValueError, r"'k' must be greater than p \+ 1 = 6; got 6"),
        (lambda: th.sketch_ls_expectation_factor(0, 6), ValueError, r"'p' must be an int in \[1, inf\]"),
        (lambda: th.ols_expected_excess(1.0, 3, 4), ValueError, r"'m' must be greater than d \+ 1 = 4; got 4"),
        (lambda: th.ols_expected_excess(-1.0, 3, 10), ValueError, r"'sigma2' must be a float in \[0, inf\]"),
    ],
)
def test_theory_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --- the spec's population reference numbers (needs the population engine) ------------------------

_HAVE_POPULATION = importlib.util.find_spec("algos.networked_learning._population") is not None
needs_population = pytest.mark.skipif(not _HAVE_POPULATION, reason="algos.networked_learning._population missing")


def _excess(graph, feature_sets, pm, node):
    from algos.networked_learning._population import excess_risk, population_fit

    betas = population_fit(graph, feature_sets, pm.Sigma, pm.b)
    return excess_risk(betas[node], pm.Sigma, pm.beta_star)


def _cyclic_path(D, d):
    return nx.path_graph(D, create_using=nx.DiGraph), {t: [t % d] for t in range(D)}


@needs_population
def test_suppressor_topologies():
    pm = make_suppressor()
    star = nx.DiGraph([(0, 2), (1, 2)])
    assert _excess(star, {0: [0], 1: [1], 2: []}, pm, 2) == pytest.approx(0.5, abs=1e-9)
    path2 = nx.path_graph(2, create_using=nx.DiGraph)
    assert _excess(path2, {0: [0], 1: [1]}, pm, 1) == pytest.approx(0.0, abs=1e-9)
    assert _excess(path2, {0: [1], 1: [0]}, pm, 1) == pytest.approx(0.5, abs=1e-9)
    path3 = nx.path_graph(3, create_using=nx.DiGraph)
    assert _excess(path3, {0: [1], 1: [0], 2: [1]}, pm, 2) == pytest.approx(0.0, abs=1e-9)


@needs_population
@pytest.mark.parametrize("D", [30, 90, 300])
def test_krr_hard3_cyclic_path_is_order_one_over_D(D):
    pm = make_krr_hard3(D)
    e = _excess(*_cyclic_path(D, 3), pm, D - 1)
    assert e * D == pytest.approx(0.0116, rel=0.05)
    # sanity: well above the minimax floor 1/(640 D) of [BHH+26] (this is the instance behind it;
    # A = 4/3 and B^2 = 1 + 2 rho^2, so it is normalised only up to constants)
    assert e > th.greedy_lower_bound(D)


@needs_population
def test_common_factor_path_is_slow_and_star_is_exact():
    pm = make_common_factor(8, 0.1)
    g, fs = _cyclic_path(256, 8)
    from algos.networked_learning._population import excess_risk, population_fit

    betas = population_fit(g, fs, pm.Sigma, pm.b)
    for D, ref in [(8, 0.97), (64, 0.87), (256, 0.54)]:
        rel = excess_risk(betas[D - 1], pm.Sigma, pm.beta_star) / pm.y_var
        assert rel == pytest.approx(ref, abs=0.05), D
    star = nx.DiGraph([(j, 8) for j in range(8)])
    assert _excess(star, {**{j: [j] for j in range(8)}, 8: []}, pm, 8) == pytest.approx(0.0, abs=1e-9 * pm.y_var)


@needs_population
def test_differential_star_stuck_and_cyclic_path_exact():
    pm = make_differential(3)
    star = nx.DiGraph([(j, 3) for j in range(3)])
    assert _excess(star, {0: [0], 1: [1], 2: [2], 3: []}, pm, 3) == pytest.approx(0.5, abs=1e-9)
    g, fs = _cyclic_path(24, 3)
    from algos.networked_learning._population import excess_risk, population_fit

    betas = population_fit(g, fs, pm.Sigma, pm.b)
    e = [excess_risk(betas[t], pm.Sigma, pm.beta_star) for t in range(24)]
    assert e[2] == pytest.approx(0.5, abs=1e-9) and e[4] == pytest.approx(1 / 3, abs=1e-9)
    assert e[23] == pytest.approx(0.0, abs=1e-9)
