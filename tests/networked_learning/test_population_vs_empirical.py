"""Spec acceptance test 8.1, empirical version: the estimator on m = 1e5 samples against the population engine.

Two kinds of design. Where no agent's population message vanishes, the estimator converges to the
population numbers (within the spec's 0.01 at m = 1e5). Where some agent sees only features
orthogonal to y (the suppressor's x2, the differential design's x_1..x_{k-1}), its population
prediction is exactly 0, but its sample coefficient is tiny and nonzero, so its message still hands
that direction to its children: the population value (0.5 for the suppressor star) is a property
of the idealisation only, and the estimator reaches the benchmark instead. Both halves are asserted.
"""

import numpy as np
import pytest

import theory.networked_learning as th
from algos.networked_learning import (
    NetworkedDAGRegressor,
    cyclic_allocation,
    default_sketch_size,
    excess_risk,
    make_common_factor,
    make_differential,
    make_gaussian,
    make_path,
    make_star,
    make_suppressor,
    population_fit,
    zero_message_agents,
)

M_SAMPLES = 100_000  # the spec's m for test 8.1 (one fit costs about 10 ms)
# Spec 8.1's tolerance. Where the population value carries over, the gap is the statistical error:
# at most 2e-3 over 5 seeds and three generic designs with sigma = 1 (measured), 5x below it.
SPEC_TOL = 0.01


def _star(d):
    return make_star(d), {**{i: [i] for i in range(d)}, d: []}, d


def _path(D, d):
    G = make_path(D)
    return G, cyclic_allocation(G, d), D - 1


SUPPRESSOR_CASES = {
    # name: (graph, features, output, population excess (spec 8.1), a message vanishes upstream)
    "star hub": (*_star(2), 0.5, True),
    "path x1 -> x2": (make_path(2), {0: [0], 1: [1]}, 1, 0.0, False),
    "path x2 -> x1": (make_path(2), {0: [1], 1: [0]}, 1, 0.5, True),
    "path x2 -> x1 -> x2": (make_path(3), {0: [1], 1: [0], 2: [1]}, 2, 0.0, True),
}


def _feeding_zero_agents(G, feats, model):
    return [v for v in zero_message_agents(G, feats, model.Sigma, model.b) if G.out_degree(v) > 0]


@pytest.mark.parametrize("noise", [0.0, 0.5])
@pytest.mark.parametrize("name", list(SUPPRESSOR_CASES))
def test_8_1_suppressor_population_and_empirical(name, noise):
    G, feats, out, expected, vanishes = SUPPRESSOR_CASES[name]
    model = make_suppressor(noise)
    _, exc = population_fit(G, feats, model.Sigma, model.b, return_excess=True)
    assert abs(exc[out] - expected) <= 1e-9  # population engine: the spec's exact numbers
    assert bool(_feeding_zero_agents(G, feats, model)) == vanishes
    X, y = model.sample(M_SAMPLES, random_state=81)
    est = NetworkedDAGRegressor(graph=G, feature_sets=feats, fit_intercept=False).fit(X, y)
    e_emp = excess_risk(est.coef_, model.Sigma, model.beta_star)
    # on samples every topology reaches the benchmark: the x2 agent's message is c * x2, c != 0;
    # with noise the excess is the OLS statistical error ~ 2 sigma^2 / m = 5e-6
    assert e_emp <= SPEC_TOL * (1.0 if noise == 0.0 else 1e-2), e_emp
    if noise == 0.0:
        assert e_emp <= 1e-20  # noiseless labels are fitted exactly
    if expected > 0:
        # the population's 0.5 is the idealisation only: the gap is the whole 0.5
        assert vanishes and expected - e_emp >= 0.5 - SPEC_TOL


@pytest.mark.parametrize("D, population", [(3, 0.5), (6, 1.0 / 3.0), (24, 0.0)])
def test_8_1_differential_path_population_vs_empirical(D, population):
    """Two hidden directions (x1, x2) reach agent 3 as one random mixture c1 x1 + c2 x2 (both
    coefficients are sampling noise), so the empirical excess is a random quantity in
    [0, population] that does not shrink with m: neither the population value nor the benchmark.
    Measured over 10 seeds at m = 1e5: D = 3 from 1.0e-3 to 0.487 (median 0.28, 0.31 at m = 1e3);
    D = 6 from 2e-7 to 0.31; D = 24 below 1e-26 (the path has covered every direction)."""
    model = make_differential(3)
    G, feats, out = _path(D, 3)
    _, exc = population_fit(G, feats, model.Sigma, model.b, return_excess=True)
    assert exc[out] == pytest.approx(population, abs=1e-9)
    assert _feeding_zero_agents(G, feats, model) == [0, 1]  # the x1 and x2 agents of the first cycle
    errs = []
    for seed in range(10):
        X, y = model.sample(M_SAMPLES, random_state=820 + seed)
        est = NetworkedDAGRegressor(graph=G, feature_sets=feats, fit_intercept=False).fit(X, y)
        errs.append(excess_risk(est.coef_, model.Sigma, model.beta_star))
    errs = np.array(errs)
    assert np.all(errs <= population + SPEC_TOL)  # samples never do worse than the idealisation
    if population > 0:
        # the spec's "same numbers +- 0.01" fails here, in both directions across samples
        assert np.sum(np.abs(errs - population) > SPEC_TOL) >= 5
        assert errs.max() - errs.min() >= 0.2
    else:
        assert errs.max() <= 1e-20


def test_8_1_differential_star_is_exact_on_samples_only():
    model = make_differential(3)
    G, feats, out = _star(3)
    _, exc = population_fit(G, feats, model.Sigma, model.b, return_excess=True)
    assert exc[out] == pytest.approx(0.5, abs=1e-9)
    X, y = model.sample(M_SAMPLES, random_state=83)
    est = NetworkedDAGRegressor(graph=G, feature_sets=feats, fit_intercept=False).fit(X, y)
    assert excess_risk(est.coef_, model.Sigma, model.beta_star) <= 1e-12


GENERIC = {
    "ar1": lambda: make_gaussian(4, "ar1", rho=0.5, sigma=1.0),
    "common factor": lambda: make_common_factor(4, 0.5),
    "ar1 strong": lambda: make_gaussian(4, "ar1", rho=0.9, sigma=0.5),
}


@pytest.mark.parametrize("topology", ["path 2", "path 4", "star"])
@pytest.mark.parametrize("design", list(GENERIC))
def test_8_1_population_carries_over_where_no_message_vanishes(design, topology):
    model = GENERIC[design]()
    G, feats, out = _star(4) if topology == "star" else _path(int(topology.split()[1]), 4)
    assert zero_message_agents(G, feats, model.Sigma, model.b) == []
    _, exc = population_fit(G, feats, model.Sigma, model.b, return_excess=True)
    X, y = model.sample(M_SAMPLES, random_state=84)
    est = NetworkedDAGRegressor(graph=G, feature_sets=feats, fit_intercept=False).fit(X, y)
    e_emp = excess_risk(est.coef_, model.Sigma, model.beta_star)
    assert abs(e_emp - exc[out]) <= SPEC_TOL, (e_emp, exc[out])


def test_zero_message_agents():
    sup = make_suppressor()
    G, feats, _ = _star(2)
    assert zero_message_agents(G, feats, sup.Sigma, sup.b) == [1]
    # an agent with nothing to see is not a vanishing message; nor is an agent that predicts y
    assert zero_message_agents(make_path(2), {0: [], 1: [0]}, sup.Sigma, sup.b) == []
    # a child that hears only a zero message and sees nothing orthogonal... still predicts 0 and is listed
    # only when it has a nonzero regressor
    assert zero_message_agents(make_path(2), {0: [1], 1: []}, sup.Sigma, sup.b) == [0]
    with pytest.raises(ValueError, match=r"'tol' must be a float in \[0, inf\]"):
        zero_message_agents(G, feats, sup.Sigma, sup.b, tol=-1.0)


# --- the library computes its guaranteed quantities through theory/ ---------------------------------

def test_default_sketch_size_follows_the_theory_function(monkeypatch):
    base = default_sketch_size(8)
    assert base == th.gaussian_ose_min_k(9, 0.5, 0.05) == 131
    orig = th.gaussian_ose_min_k
    monkeypatch.setattr(th, "gaussian_ose_min_k", lambda r, eta, delta: 2 * orig(r, eta, delta))
    assert default_sketch_size(8) == 2 * base
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1000, 8))
    est = NetworkedDAGRegressor(protocol="sketch", random_state=0).fit(X, X.sum(axis=1))
    assert est.k_ == 2 * base


def test_demo_bound_follows_the_theory_function(monkeypatch):
    from algos.networked_learning._demo import _depth_curve

    (D, eD, bound, e1), = _depth_curve([10])
    monkeypatch.setattr(th, "krr_path_bound", lambda *a: 0.5 * bound)
    (_, eD2, bound2, _), = _depth_curve([10])
    assert eD2 == eD and bound2 == 0.5 * bound
