"""Core tests of networked DAG learning: graphs, the population engine, the estimator, T0/T1/T3/T4/T5.

Exact theorems (T0 Pythagoras, T1 with its explicit constant, T3 greedy step, T4 exact aggregation,
the reduction lemma) are checked on every drawn instance up to float round-off; T5 is checked
deterministically on the event where it applies.
"""

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import assume, example, given, note, settings, target
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from algos.networked_learning._estimator import NetworkedDAGRegressor, SketchSizeWarning
from algos.networked_learning._graphs import (
    check_graph,
    coverage_number,
    cyclic_allocation,
    depths,
    make_in_tree,
    make_layered_dag,
    make_path,
    make_random_dag,
    make_star,
    random_allocation,
    resolve_output_agent,
)
from algos.networked_learning._population import excess_risk, greedy_path, population_fit, whiten

RTOL_EXACT = 1e-9  # exact identities: only lstsq round-off on well-conditioned d <= 8 instances
BOUND_RTOL, BOUND_ATOL = 1e-9, 1e-12  # exact bounds: round-off of the whitened engine


# --------------------------------------------------------------------------------------------------
# helpers: small local instances (independent of the generators in _data.py)
# --------------------------------------------------------------------------------------------------
def common_factor_moments(d, rho, rng):
    """Sigma = 1 1^T + rho^2 I (scaled common factor), b = Sigma beta* for a random beta*."""
    Sigma = np.ones((d, d)) + rho**2 * np.eye(d)
    beta_star = rng.standard_normal(d)
    return Sigma, Sigma @ beta_star, beta_star


def random_moments(d, rng, n_latent=None):
    A = rng.standard_normal((d, n_latent or d + 2))
    Sigma = A @ A.T + 0.1 * np.eye(d)
    beta_star = rng.standard_normal(d)
    return Sigma, Sigma @ beta_star, beta_star


def suppressor():
    # x1 = U + Z, x2 = Z, y = U with U, Z ~ N(0, 1) independent
    Sigma = np.array([[2.0, 1.0], [1.0, 1.0]])
    b = np.array([1.0, 0.0])
    return Sigma, b, np.array([1.0, -1.0])


def pop_mse(beta, Sigma, b, y_var):
    return float(y_var - 2 * b @ beta + beta @ Sigma @ beta)


# --------------------------------------------------------------------------------------------------
# graphs and allocations
# --------------------------------------------------------------------------------------------------
def test_graph_families():
    assert list(make_path(4).edges()) == [(0, 1), (1, 2), (2, 3)]
    star = make_star(3)
    assert sorted(star.edges()) == [(0, 3), (1, 3), (2, 3)]
    tree = make_in_tree(2, 3)
    assert tree.number_of_nodes() == 15 and [v for v in tree if tree.out_degree(v) == 0] == [0]
    assert depths(tree)[0] == 4
    lay = make_layered_dag(4, 3, 2, skip=True, random_state=0)
    assert nx.is_directed_acyclic_graph(lay)
    assert all(lay.in_degree(v) == 2 for v in range(3, 6)) and all(lay.in_degree(v) == 3 for v in range(6, 12))
    assert max(depths(lay).values()) == 4
    g1, g2 = make_random_dag(12, 0.3, random_state=5), make_random_dag(12, 0.3, random_state=5)
    assert sorted(g1.edges()) == sorted(g2.edges()) and all(u < v for u, v in g1.edges())
    assert g1.number_of_nodes() == 12


def test_coverage_number():
    assert coverage_number(range(12), cyclic_allocation(range(12), 4), 4) == 4
    assert coverage_number(range(3), {0: [0, 1], 1: [1], 2: [0, 1]}, 2) == 2
    assert coverage_number(range(3), {0: [0, 1], 1: [0, 1], 2: [0, 1]}, 2) == 1
    assert coverage_number(range(3), {0: [0], 1: [0], 2: [0]}, 2) == math.inf
    assert coverage_number(make_path(6), cyclic_allocation(make_path(6), 3), 3) == 3
    # first window (agents 0..2) misses feature 2 for one step longer than the rest
    assert coverage_number(range(5), {0: [0], 1: [0], 2: [1], 3: [2], 4: [0]}, 3) == 4


def test_allocations():
    assert cyclic_allocation(make_path(5), 2) == {0: [0], 1: [1], 2: [0], 3: [1], 4: [0]}
    fs = random_allocation(make_star(4), 6, 3, random_state=1)
    assert set(fs) == set(range(5)) and all(len(set(s)) == 3 and max(s) < 6 for s in fs.values())


def test_bad_graphs():
    cyc = nx.DiGraph([(0, 1), (1, 2), (2, 0)])
    with pytest.raises(ValueError, match=r"directed acyclic graph; found the cycle"):
        check_graph(cyc, {0: [0], 1: [0], 2: [0]}, 2)
    with pytest.raises(ValueError, match=r"'feature_sets\[1\]' must contain ints in \[0, 1\]; got 5"):
        check_graph(make_path(2), {0: [0], 1: [5]}, 2)
    with pytest.raises(ValueError, match="must match the nodes of 'graph'"):
        check_graph(make_path(2), {0: [0]}, 2)
    with pytest.raises(TypeError, match="networkx.DiGraph"):
        check_graph(nx.path_graph(2), {0: [0], 1: [0]}, 2)
    # two sinks at the same depth: ambiguous output agent
    with pytest.raises(ValueError, match=r"several sinks \[1, 2\]"):
        resolve_output_agent(nx.DiGraph([(0, 1), (0, 2)]))
    # several sinks but a unique deepest one: chosen
    assert resolve_output_agent(nx.DiGraph([(0, 1), (0, 2), (2, 3)])) == 3
    # an agent with no feature and no parent is allowed and predicts 0
    assert check_graph(make_star(2), {0: [], 1: [1], 2: []}, 2)[0] == ()


# --------------------------------------------------------------------------------------------------
# population engine: exact numbers
# --------------------------------------------------------------------------------------------------
def test_suppressor_topologies_exact():
    Sigma, b, beta_star = suppressor()
    cases = [  # (graph, feature_sets, output agent, excess)
        (make_star(2), {0: [0], 1: [1], 2: []}, 2, 0.5),
        (make_path(2), {0: [0], 1: [1]}, 1, 0.0),
        (make_path(2), {0: [1], 1: [0]}, 1, 0.5),
        (make_path(3), {0: [1], 1: [0], 2: [1]}, 2, 0.0),
    ]
    for graph, fs, out, expected in cases:
        betas, exc = population_fit(graph, fs, Sigma, b, return_excess=True)
        assert abs(exc[out] - expected) <= 1e-9, (fs, exc)
        assert abs(excess_risk(betas[out], Sigma, beta_star) - expected) <= 1e-9


def test_whiten_psd_and_pinv():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((5, 3))
    Sigma = A @ A.T  # rank 3
    beta = rng.standard_normal(5)
    b = Sigma @ beta
    LT, t = whiten(Sigma, b)
    assert LT.shape == (3, 5)
    assert_allclose(LT.T @ LT, Sigma, atol=1e-12)
    assert_allclose(LT.T @ t, b, atol=1e-12)  # L t = b
    with pytest.raises(ValueError, match="positive semidefinite"):
        whiten(-np.eye(2))
    with pytest.raises(ValueError, match="symmetric"):
        whiten(np.array([[1.0, 0.5], [0.0, 1.0]]))


@given(seed=st.integers(0, 2**32 - 1), d=st.integers(2, 6), n=st.integers(2, 9), p=st.floats(0.1, 0.9))
def test_T0_pythagoras_population(seed, d, n, p):
    """T0 under the population measure: MSE(f_u) - MSE(f_v) = ||f_u - f_v||^2 on every edge."""
    rng = np.random.default_rng(seed)
    g = make_random_dag(n, p, random_state=rng)
    fs = random_allocation(g, d, int(rng.integers(0, d + 1)), random_state=rng)
    Sigma, b, beta_star = random_moments(d, rng)
    y_var = float(beta_star @ Sigma @ beta_star) + 0.3
    betas = population_fit(g, fs, Sigma, b)
    scale = y_var
    for u, v in g.edges():
        lhs = pop_mse(betas[u], Sigma, b, y_var) - pop_mse(betas[v], Sigma, b, y_var)
        diff = betas[u] - betas[v]
        rhs = float(diff @ Sigma @ diff)
        assert abs(lhs - rhs) <= RTOL_EXACT * scale, (u, v, lhs, rhs)
        assert lhs >= -RTOL_EXACT * scale


@given(seed=st.integers(0, 2**32 - 1), d=st.integers(2, 5), n=st.integers(2, 8), p=st.floats(0.1, 0.9))
@settings(max_examples=20)
def test_T0_pythagoras_empirical(seed, d, n, p):
    """T0 under the empirical measure (the fitted estimator), train MSE non-increasing along edges."""
    rng = np.random.default_rng(seed)
    g = make_random_dag(n, p, random_state=rng)
    fs = random_allocation(g, d, int(rng.integers(1, d + 1)), random_state=rng)
    # several sinks are possible: pick the last node as output agent (any node works)
    X = rng.standard_normal((60, d))
    y = X @ rng.standard_normal(d) + rng.standard_normal(60)
    est = NetworkedDAGRegressor(graph=g, feature_sets=fs, output_agent=n - 1).fit(X, y)
    preds = est.agent_predict(X)
    for u, v in g.edges():
        lhs = est.train_mse_[u] - est.train_mse_[v]
        rhs = float(np.mean((preds[u] - preds[v]) ** 2))
        assert abs(lhs - rhs) <= RTOL_EXACT * float(np.mean(y**2)), (u, v, lhs, rhs)
        assert lhs >= -RTOL_EXACT * float(np.mean(y**2))


# --------------------------------------------------------------------------------------------------
# T1, T3, T4
# --------------------------------------------------------------------------------------------------
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(2, 8),
    mult=st.integers(1, 6),
    extra=st.integers(0, 7),
    log_rho=st.floats(math.log(1e-2), 0.0),
)
def test_T1_krr_path_bound(seed, d, mult, extra, log_rho):
    """T1 with the explicit constant: e_D <= A B sqrt((M-1) e_1 / floor(D/M)) on a cyclic path (M = d)."""
    rng = np.random.default_rng(seed)
    rho = math.exp(log_rho)
    M = d
    D = M * mult + min(extra, M - 1)  # D in [M, 6M + M - 1], floor(D/M) = mult
    Sigma, b, beta_star = common_factor_moments(d, rho, rng)
    g = make_path(D)
    fs = cyclic_allocation(g, d)
    assert coverage_number(range(D), fs, d) == M
    _, exc = population_fit(g, fs, Sigma, b, return_excess=True)
    A = float(np.abs(beta_star).sum())
    B = math.sqrt(float(np.max(np.diag(Sigma))))
    bound = A * B * math.sqrt((M - 1) * exc[0] / (D // M))
    try:
        from theory.networked_learning import krr_path_bound

        assert_allclose(krr_path_bound(exc[0], A, B, M, D), bound, rtol=1e-12)
    except ImportError:
        pass
    note(f"e_D={exc[D - 1]:.3e} bound={bound:.3e}")
    target(exc[D - 1] / max(bound, 1e-300))
    # e is monotone along the path
    assert all(exc[t + 1] <= exc[t] * (1 + 1e-9) + 1e-15 for t in range(D - 1))
    assert exc[D - 1] <= bound * (1 + BOUND_RTOL) + BOUND_ATOL


def test_T1_M_equals_1_is_exact():
    rng = np.random.default_rng(0)
    Sigma, b, beta_star = common_factor_moments(5, 0.05, rng)
    _, exc = population_fit(make_path(3), {v: list(range(5)) for v in range(3)}, Sigma, b, return_excess=True)
    assert coverage_number(range(3), {v: list(range(5)) for v in range(3)}, 5) == 1
    assert exc[2] <= 1e-12 * float(beta_star @ Sigma @ beta_star)


@given(seed=st.integers(0, 2**32 - 1), d=st.integers(2, 8), D=st.integers(1, 12))
def test_T3_greedy_step(seed, d, D):
    """T3: e_{t+1} <= e_t - e_t^2/(AB)^2 for the greedy path, on normalised instances (A = B = 1)."""
    rng = np.random.default_rng(seed)
    Sigma, b, beta_star = random_moments(d, rng)
    s = 1.0 / np.sqrt(np.max(np.diag(Sigma)))  # rescale x so that B = 1
    Sigma = Sigma * s**2
    beta_star = beta_star / s / np.abs(beta_star / s).sum()  # A = 1
    b = Sigma @ beta_star
    A = float(np.abs(beta_star).sum())
    B = math.sqrt(float(np.max(np.diag(Sigma))))
    feats, betas, exc = greedy_path(Sigma, b, D)
    assert len(feats) == D and len(betas) == D
    for t in range(D):
        bound = exc[t] - exc[t] ** 2 / (A * B) ** 2
        note(f"t={t} e_t={exc[t]:.3e} e_t+1={exc[t + 1]:.3e} bound={bound:.3e}")
        assert exc[t + 1] <= bound * (1 + BOUND_RTOL) + BOUND_ATOL
        assert abs(excess_risk(betas[t], Sigma, beta_star) - exc[t + 1]) <= 1e-9
    assert exc[D] <= (A * B) ** 2 / (D + 1) * (1 + BOUND_RTOL) + BOUND_ATOL


@given(seed=st.integers(0, 2**32 - 1))
def test_T4_d2_path_121_exact(seed):
    """T4 for d = 2: x1, x2, x1 (and x2, x1, x2) is exact for every Sigma, and the first two agents'
    predictions are the projections the construction uses (closed-form 1x1 and 2x2 normal equations,
    well conditioned cases only)."""
    rng = np.random.default_rng(seed)
    Sigma, b, beta_star = random_moments(2, rng, n_latent=2)
    scale = max(1.0, float(beta_star @ Sigma @ beta_star))
    betas, exc = population_fit(make_path(3), {0: [0], 1: [1], 2: [0]}, Sigma, b, return_excess=True)
    assert exc[2] <= 1e-12 * scale
    betas2, exc2 = population_fit(make_path(3), {0: [1], 1: [0], 2: [1]}, Sigma, b, return_excess=True)
    assert exc2[2] <= 1e-12 * scale  # and the mirror path x2, x1, x2
    # agent 1: P_{x1} y = (b1 / S11) x1; agent 2: projection onto span(x2, f1) by the 2x2 normal equations
    assert_allclose(betas[0], [b[0] / Sigma[0, 0], 0.0], rtol=1e-9, atol=1e-12 * scale)
    f1 = betas[0]
    G2 = np.array([[Sigma[1, 1], Sigma[1] @ f1], [Sigma[1] @ f1, f1 @ Sigma @ f1]])
    rhs = np.array([b[1], b @ f1])
    if np.linalg.cond(G2) < 1e8:
        c = np.linalg.solve(G2, rhs)
        assert_allclose(betas[1], c[0] * np.array([0.0, 1.0]) + c[1] * f1, rtol=1e-7, atol=1e-9 * np.sqrt(scale))
    e_first = float((betas[0] - beta_star) @ Sigma @ (betas[0] - beta_star))
    assert exc[0] == pytest.approx(e_first, rel=1e-9, abs=1e-12 * scale)


# --------------------------------------------------------------------------------------------------
# estimator: message passing == population engine on the empirical measure; reduction lemma
# --------------------------------------------------------------------------------------------------
@example(seed=0, d=4, n=4)  # agents 6 and 7 predict the same projection: exactly collinear parents of the sink
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(2, 6), n=st.integers(2, 8))
@settings(max_examples=15)
def test_messages_equal_population_on_empirical_measure(seed, d, n):
    rng = np.random.default_rng(seed)
    g = make_layered_dag(n, 2, 2, random_state=rng)
    g.add_edges_from((v, 2 * n) for v in (2 * n - 2, 2 * n - 1))  # single sink
    fs = random_allocation(g, d, 1, random_state=rng)
    m = 80
    X = rng.standard_normal((m, d))
    y = X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(m)
    est = NetworkedDAGRegressor(graph=g, feature_sets=fs, fit_intercept=False).fit(X, y)
    betas = population_fit(g, fs, X.T @ X / m, X.T @ y / m)
    preds = est.agent_predict(X)
    for v in g.nodes():
        # predictions are unique (coefficients need not be when a parent is collinear)
        assert_allclose(preds[v], X @ betas[v], rtol=0, atol=1e-9 * np.abs(y).max(), err_msg=f"agent {v}")
    assert est.depth_[2 * n] == n + 1
    assert est.comm_floats_ == m * g.number_of_edges()


def test_engines_agree_full_protocol():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((100, 4))
    y = X @ [1.0, 0.0, -1.0, 2.0] + rng.standard_normal(100)
    a = NetworkedDAGRegressor(graph=make_path(8)).fit(X, y)
    c = NetworkedDAGRegressor(graph=make_path(8), engine="coef").fit(X, y)
    assert_allclose(a.predict(X), c.predict(X), atol=1e-10)
    assert a.order_ == list(range(8)) and a.output_agent_ == 7
    assert set(a.local_coefs_) == set(range(8)) and a.n_features_in_ == 4


def test_reduction_lemma_and_communication():
    """Spec 8.2: path D = 24, cyclic d = 8, m = 4000, k = 200: messages == coef == full on (SX, Sy)."""
    from algos.networked_learning._sketch import make_sketch

    rng = np.random.default_rng(7)
    d, D, m, k = 8, 24, 4000, 200
    X = rng.standard_normal((m, d)) @ rng.standard_normal((d, d))
    y = X @ rng.standard_normal(d) + rng.standard_normal(m)
    g = make_path(D)
    fs = cyclic_allocation(g, d)
    kw = dict(graph=g, feature_sets=fs, protocol="sketch", k=k, random_state=3)
    msg = NetworkedDAGRegressor(**kw, engine="messages").fit(X, y)
    coef = NetworkedDAGRegressor(**kw, engine="coef").fit(X, y)
    assert msg.sketch_seed_ == coef.sketch_seed_
    S = make_sketch("gaussian", k, m, msg.sketch_seed_)
    Xc, yc = X - X.mean(axis=0), y - y.mean()
    full = NetworkedDAGRegressor(graph=g, feature_sets=fs, fit_intercept=False).fit(S.apply(Xc), S.apply(yc))
    scale = np.abs(full.coef_).max()
    for v in g.nodes():
        assert_allclose(msg.global_coefs_[v], full.global_coefs_[v], rtol=0, atol=1e-10 * scale, err_msg=str(v))
        assert_allclose(coef.global_coefs_[v], full.global_coefs_[v], rtol=0, atol=1e-10 * scale, err_msg=str(v))
    assert msg.comm_floats_ == 4600
    full_data = NetworkedDAGRegressor(graph=g, feature_sets=fs).fit(X, y)
    assert full_data.comm_floats_ == 92000
    # deterministic from random_state
    again = NetworkedDAGRegressor(**kw).fit(X, y)
    assert np.array_equal(again.coef_, msg.coef_)


def test_subsample_protocol():
    from algos.networked_learning._sketch import subsample_rows

    rng = np.random.default_rng(2)
    X = rng.standard_normal((500, 3))
    y = X @ [1.0, 2.0, 3.0] + 0.1 * rng.standard_normal(500)
    g = make_path(6)
    est = NetworkedDAGRegressor(graph=g, protocol="subsample", k=60, random_state=0).fit(X, y)
    rows = subsample_rows(60, 500, est.sketch_seed_)
    assert np.array_equal(est.rows_, rows)
    # centring uses the shared means of all m rows, then the full protocol runs on the k rows
    Xc, yc = X - X.mean(axis=0), y - y.mean()
    ref = NetworkedDAGRegressor(graph=g, fit_intercept=False).fit(Xc[rows], yc[rows])
    assert_allclose(est.coef_, ref.coef_, atol=1e-12)
    assert est.comm_floats_ == 60 * 5


# --------------------------------------------------------------------------------------------------
# T5 (full-message finite sample) on E_cov
# --------------------------------------------------------------------------------------------------
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(2, 5), mult=st.integers(1, 4), m=st.integers(20, 200))
@settings(max_examples=25)
def test_T5_full_message_on_Ecov(seed, d, mult, m):
    rng = np.random.default_rng(seed)
    Sigma, _, beta_star = random_moments(d, rng)
    Lc = np.linalg.cholesky(Sigma)
    X = rng.standard_normal((m, d)) @ Lc.T
    y = X @ beta_star + rng.standard_normal(m)
    Sigma_hat = X.T @ X / m
    Li = np.linalg.inv(Lc)
    lam_min = float(np.linalg.eigvalsh(Li @ Sigma_hat @ Li.T).min())
    assume(lam_min >= 0.5)  # outside E_cov T5 says nothing (about 95% of these draws are inside)
    M, D = d, d * mult
    g = make_path(D)
    est = NetworkedDAGRegressor(graph=g, feature_sets=cyclic_allocation(g, d), fit_intercept=False).fit(X, y)
    beta_hat = np.linalg.lstsq(X, y, rcond=None)[0]
    L_hat = lambda beta: float(np.mean((y - X @ beta) ** 2))  # noqa: E731
    e1_hat = L_hat(est.global_coefs_[0]) - L_hat(beta_hat)
    A_hat = float(np.abs(beta_hat).sum())
    B_hat = math.sqrt(float(np.max(np.sum(X**2, axis=0) / m)))
    agg = A_hat * B_hat * math.sqrt((M - 1) * max(e1_hat, 0.0) / (D // M))
    stat = excess_risk(beta_hat, Sigma, beta_star)
    bound = 2 * stat + 4 * agg
    lhs = excess_risk(est.coef_, Sigma, beta_star)
    note(f"lhs={lhs:.3e} bound={bound:.3e}")
    target(lhs / max(bound, 1e-300))
    assert lhs <= bound * (1 + BOUND_RTOL) + BOUND_ATOL
    # the empirical aggregation step itself (T1 on the empirical measure)
    assert L_hat(est.coef_) - L_hat(beta_hat) <= agg * (1 + BOUND_RTOL) + BOUND_ATOL


# --------------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------------
def test_estimator_bad_input():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    y = rng.standard_normal(50)
    g = make_star(3)
    fs = {0: [0], 1: [1], 2: [2], 3: [0]}
    with pytest.raises(ValueError, match=r"'k' must be an int in \[5, inf\]"):
        NetworkedDAGRegressor(graph=g, feature_sets=fs, protocol="sketch", k=4).fit(X, y)
    with pytest.raises(ValueError, match=r"'k' must be an int in \[1, inf\]; got 0\."):
        NetworkedDAGRegressor(graph=g, feature_sets=fs, protocol="sketch", k=0).fit(X, y)
    with pytest.warns(SketchSizeWarning, match="increase 'k'"):
        NetworkedDAGRegressor(graph=g, feature_sets=fs, protocol="sketch", k=6, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="found the cycle"):
        NetworkedDAGRegressor(graph=nx.DiGraph([(0, 1), (1, 0)])).fit(X, y)
    with pytest.raises(ValueError, match=r"must contain ints in \[0, 2\]; got 3"):
        NetworkedDAGRegressor(graph=make_path(2), feature_sets={0: [0], 1: [3]}).fit(X, y)
    with pytest.raises(ValueError, match="several sinks"):
        NetworkedDAGRegressor(graph=nx.DiGraph([(0, 1), (0, 2)])).fit(X, y)
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        NetworkedDAGRegressor().fit(Xn, y)
    with pytest.raises(ValueError, match="'protocol' must be one of"):
        NetworkedDAGRegressor(protocol="gossip").fit(X, y)
    with pytest.raises(ValueError, match="'agent' must be a node"):
        NetworkedDAGRegressor().fit(X, y).predict(X, agent=99)


def test_engine_auto_is_the_reduction_for_sketches():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((600, 4))
    y = X @ [1.0, -1.0, 0.5, 2.0] + rng.standard_normal(600)
    kw = dict(graph=make_path(8), protocol="sketch", k=60, random_state=1)
    auto = NetworkedDAGRegressor(**kw).fit(X, y)
    assert NetworkedDAGRegressor().engine == "auto" and auto.engine_ == "coef"
    msg = NetworkedDAGRegressor(**kw, engine="messages").fit(X, y)
    assert msg.engine_ == "messages"
    assert_allclose(auto.coef_, msg.coef_, rtol=1e-9, atol=1e-12)
    assert NetworkedDAGRegressor(graph=make_path(8)).fit(X, y).engine_ == "messages"
    with pytest.raises(ValueError, match="'engine' must be one of"):
        NetworkedDAGRegressor(engine="fast").fit(X, y)


def test_k_is_bounded_by_the_sample_count():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 3))
    y = X.sum(axis=1)
    for protocol in ("sketch", "subsample"):
        with pytest.raises(ValueError, match=r"'k' must be an int in \[3, 80\] \(at most n_samples = 80"):
            NetworkedDAGRegressor(protocol=protocol, k=10**6).fit(X, y)
        # the default k (default_sketch_size(3) = 93) is capped at n_samples
        with pytest.warns(SketchSizeWarning):
            est = NetworkedDAGRegressor(protocol=protocol, random_state=0).fit(X[:10], y[:10])
        assert est.k_ == 10
        assert NetworkedDAGRegressor(protocol=protocol, random_state=0).fit(X, y).k_ == 80


def test_default_sketch_size_and_depths_bad_input():
    from algos.networked_learning import default_sketch_size, depths

    assert default_sketch_size(8) == 131
    with pytest.raises(ValueError, match=r"'eta' must be a float in \(0, 1\); got 0\.0\."):
        default_sketch_size(10, eta=0.0)
    with pytest.raises(ValueError, match=r"'delta' must be a float in \(0, 1\)"):
        default_sketch_size(10, delta=1.5)
    with pytest.raises(ValueError, match=r"'d' must be an int in \[1, inf\]; got 0"):
        default_sketch_size(0)
    with pytest.raises(ValueError, match=r"'d' must be an int in \[1, inf\]"):
        default_sketch_size(-1)
    with pytest.raises(TypeError, match=r"'d' must be an int"):
        default_sketch_size(2.5)
    with pytest.raises(ValueError, match=r"'graph' must be a directed acyclic graph; found the cycle"):
        depths(nx.DiGraph([(0, 1), (1, 2), (2, 0)]))
    with pytest.raises(TypeError, match=r"'graph' must be a networkx.DiGraph"):
        depths(nx.Graph([(0, 1)]))


def test_default_construction_and_empty_agent():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    X[:, 2] = 1.0  # constant column: kept, coefficient 0
    y = X[:, 0] - X[:, 1] + 2.0
    est = NetworkedDAGRegressor().fit(X, y)
    assert est.order_ == [0, 1, 2] and est.feature_sets_ == {0: (0,), 1: (1,), 2: (2,)}
    assert list(est.constant_features_) == [2] and est.coef_[2] == 0.0
    assert_allclose(est.predict(X), y, atol=1e-10)
    # a hub without features whose only parent has no features either predicts the mean
    g = make_path(2)
    est = NetworkedDAGRegressor(graph=g, feature_sets={0: [], 1: []}).fit(X, y)
    assert_allclose(est.predict(X), np.full(40, y.mean()), atol=1e-12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.SkipTestWarning")
def test_check_estimator_default():
    from sklearn.utils.estimator_checks import check_estimator

    results = check_estimator(NetworkedDAGRegressor(), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed, failed
