"""Tests of the offline evaluators (algos.fair_matching.metrics) and the max-flow kernel.

Hypothesis draws sizes and a seed; numpy draws the data from ``default_rng(seed)``. Every max-flow
value is pinned to independent oracles: the Edmonds-Karp reference twin, ``linprog(highs)`` on the
edge LP, and (for ``|N_i| <= 10``) the min-cut subset formula by brute force.
"""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, note, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.optimize import linprog

from algos.fair_matching._generators import random_instance
from algos.fair_matching._instance import OnlineMatchingInstance
from algos.fair_matching._maxflow import (
    RESIDUAL_TOL,
    _build_arcs,
    _bundle_flow,
    _dinic_kernel,
    _max_flow,
    _max_flow_reference,
)
from algos.fair_matching.metrics import (
    ExAnteCEF,
    bundle_value,
    cef_matrix,
    cef_ratio,
    cef_trajectory,
    cprop_ratio,
    ex_ante_cef_ratio,
    ex_post_cef_ratio,
    is_non_wasteful,
    opt_matching_size,
    usw_ratio,
)

# Flow values are sums of at most ~20 capacities in [0, 2]. Dinic and Edmonds-Karp accumulate
# round-off of a few ulps per augmentation (~1e-15 each); HiGHS' simplex returns a basic solution
# of these tiny, well-conditioned LPs (0/1 constraint matrices), exact up to LU round-off
# (~1e-13); the residual tolerance of the kernel (1e-12) can leave at most one 1e-12 sliver per
# arc unused. 1e-9 is far above all of these and far below any real discrepancy.
ATOL_FLOW = 1e-9

SEEDS = st.integers(0, 2**32 - 1)


def _cap(n):
    """At most ``n`` examples, never more than the loaded profile asks for (linprog-heavy tests)."""
    return settings(max_examples=min(settings.default.max_examples, n))


# ============================================================================================ helpers
def _random_alloc(inst, rng, density=1.0):
    """A random feasible fractional allocation (dense, agents x items) on the instance's edges."""
    B = inst.biadjacency().toarray()
    W = rng.random(B.shape) * B * (rng.random(B.shape) < density)
    col = W.sum(axis=0)
    target = rng.random(B.shape[1])  # item sums in [0, 1)
    W = W * np.divide(target, col, out=np.zeros_like(col), where=col > 0)
    row = W.sum(axis=1)
    W = W / np.maximum(row, 1.0)[:, None] * rng.choice([0.5, 1.0, 1.0])
    return W


def _greedy_alloc(inst, rng, waste_prob=0.0):
    """A non-wasteful greedy fractional allocation (pour each item into neighbours in random order);
    with probability ``waste_prob`` an item is dropped instead (usually making it wasteful)."""
    X = np.zeros((inst.n_agents, inst.n_items))
    load = np.zeros(inst.n_agents)
    for t in range(inst.n_items):
        if rng.random() < waste_prob:
            continue
        rem = 1.0
        for a in rng.permutation(np.array(inst.neighbors(t))):  # copy: instance arrays are read-only
            give = min(rem, 1.0 - load[a], rng.choice([rem, 0.5 * rem]))
            if give > 0:
                X[a, t] += give
                load[a] += give
                rem -= give
        for a in inst.neighbors(t):  # second pass: make it non-wasteful
            give = min(rem, 1.0 - load[a])
            if give > 0:
                X[a, t] += give
                load[a] += give
                rem -= give
    return X


def _bundle_lp(inst, i, cap):
    """u_i(cap) by linprog(highs) on the edge LP: max sum f, agent sums <= 1, item sums <= cap."""
    B = inst.biadjacency().toarray()
    agents = np.flatnonzero(inst.agent_class == i)
    edges = [(a, t) for a in agents for t in range(inst.n_items) if B[a, t]]
    if not edges:
        return 0.0
    A = np.zeros((len(agents) + inst.n_items, len(edges)))
    pos = {a: r for r, a in enumerate(agents)}
    for e, (a, t) in enumerate(edges):
        A[pos[a], e] = 1.0
        A[len(agents) + t, e] = 1.0
    b = np.concatenate([np.ones(len(agents)), cap])
    res = linprog(-np.ones(len(edges)), A_ub=A, b_ub=b, bounds=(0, None), method="highs")
    assert res.status == 0, res.message
    return -res.fun


def _bundle_mincut(inst, i, cap):
    """min_{T subset N_i} |N_i \\ T| + sum_{t in N(T)} cap[t], by enumerating all subsets T."""
    B = inst.biadjacency().toarray() != 0
    agents = np.flatnonzero(inst.agent_class == i)
    best = np.inf
    for r in range(len(agents) + 1):
        for T in itertools.combinations(agents, r):
            nbr = B[list(T)].any(axis=0) if T else np.zeros(inst.n_items, bool)
            best = min(best, len(agents) - r + cap[nbr].sum())
    return best


def _flow_lp(n_nodes, s, t, tails, heads, caps):
    """Max flow of a general network by linprog(highs) (conservation equalities)."""
    n_e = len(tails)
    c = np.zeros(n_e)
    for e in range(n_e):
        c[e] -= int(tails[e] == s) - int(heads[e] == s)
    A = np.zeros((n_nodes, n_e))
    for e in range(n_e):
        A[tails[e], e] += 1.0
        A[heads[e], e] -= 1.0
    keep = [v for v in range(n_nodes) if v not in (s, t)]
    bounds = [(0, None if np.isinf(cp) else cp) for cp in caps]
    res = linprog(c, A_eq=A[keep] if keep else None, b_eq=np.zeros(len(keep)) if keep else None,
                  bounds=bounds, method="highs")
    assert res.status == 0, res.message
    return -res.fun


def _nx_matching_size(inst, n_items=None):
    m = inst.n_items if n_items is None else n_items
    G = nx.Graph()
    top = [("a", a) for a in range(inst.n_agents)]
    G.add_nodes_from(top)
    G.add_nodes_from(("t", t) for t in range(m))
    for t in range(m):
        G.add_edges_from((("a", int(a)), ("t", t)) for a in inst.neighbors(t))
    M = nx.bipartite.hopcroft_karp_matching(G, top_nodes=top)
    return len(M) // 2


def _edges(inst):
    agent = np.asarray(inst.indices, dtype=np.int64)
    item = np.repeat(np.arange(inst.n_items, dtype=np.int64), np.diff(inst.indptr))
    return agent, item, np.asarray(inst.agent_class[agent], dtype=np.int64)


# ============================================================================================ kernel
@given(n_nodes=st.integers(2, 10), p=st.floats(0.1, 0.9), seed=SEEDS)
@_cap(100)
def test_dinic_matches_reference_and_linprog_on_random_networks(n_nodes, p, seed):
    rng = np.random.default_rng(seed)
    s, t = 0, n_nodes - 1
    mask = rng.random((n_nodes, n_nodes)) < p
    tails, heads = np.nonzero(mask)
    # parallel edges and self-loops are allowed
    extra = rng.integers(0, len(tails) + 1) if len(tails) else 0
    tails = np.concatenate([tails, tails[:extra], rng.integers(0, n_nodes, 1)])
    heads = np.concatenate([heads, heads[:extra], rng.integers(0, n_nodes, 1)])
    caps = np.where(rng.random(len(tails)) < 0.3, rng.integers(0, 3, len(tails)), 2 * rng.random(len(tails)))
    caps = np.where((tails != s) & (rng.random(len(tails)) < 0.2), np.inf, caps)  # inf only off the source
    dinic = _max_flow(n_nodes, s, t, tails, heads, caps)
    ref = _max_flow_reference(n_nodes, s, t, tails, heads, caps)
    lp = _flow_lp(n_nodes, s, t, tails, heads, caps)
    note(f"dinic={dinic!r} ref={ref!r} lp={lp!r}")
    assert_allclose(dinic, ref, atol=ATOL_FLOW, err_msg="Dinic vs Edmonds-Karp reference")
    assert_allclose(dinic, lp, atol=ATOL_FLOW, err_msg="Dinic vs linprog(highs)")


def test_dinic_kernel_python_mode_matches_compiled():
    # the kernel's own source, run by the Python interpreter (as under NUMBA_DISABLE_JIT=1)
    rng = np.random.default_rng(7)
    for _ in range(5):
        n = 8
        mask = rng.random((n, n)) < 0.4
        tails, heads = np.nonzero(mask)
        caps = rng.random(len(tails))
        a1 = _build_arcs(n, tails, heads, caps)
        a2 = _build_arcs(n, tails, heads, caps)
        f_jit = _dinic_kernel(n, 0, n - 1, *a1, RESIDUAL_TOL)
        py_kernel = getattr(_dinic_kernel, "py_func", _dinic_kernel)  # plain function under NUMBA_DISABLE_JIT
        f_py = py_kernel(n, 0, n - 1, *a2, RESIDUAL_TOL)
        assert_allclose(f_jit, f_py, atol=1e-12)
        assert_allclose(a1[3], a2[3], atol=1e-12, err_msg="residual capacities differ")


def test_dinic_hand_network():
    # classic 6-node example (CLRS fig. 26.1): max flow 23
    edges = [(0, 1, 16), (0, 2, 13), (1, 3, 12), (2, 1, 4), (2, 4, 14), (3, 2, 9), (3, 5, 20), (4, 3, 7), (4, 5, 4)]
    tails, heads, caps = (np.array(c) for c in zip(*edges))
    assert _max_flow(6, 0, 5, tails, heads, caps.astype(float)) == 23.0
    assert _max_flow_reference(6, 0, 5, tails, heads, caps.astype(float)) == 23.0
    assert _max_flow(6, 0, 0, tails, heads, caps.astype(float)) == 0.0


def test_residual_residue_below_tolerance_is_ignored():
    # a sink arc of 1e-13 < RESIDUAL_TOL counts as saturated: the flow misses at most that sliver
    tails, heads, caps = np.array([0, 1]), np.array([1, 2]), np.array([1.0, 1e-13])
    assert _max_flow(3, 0, 2, tails, heads, caps) == 0.0


# ============================================================================================ bundle_value
@given(
    n=st.integers(1, 10), m=st.integers(1, 10), k=st.integers(1, 3), p=st.floats(0.1, 0.9),
    seed=SEEDS, cls_i=st.integers(0, 2),
)
@_cap(100)
def test_bundle_value_four_ways(n, m, k, p, seed, cls_i):
    k = min(k, n)
    i = cls_i % k
    inst = random_instance(n, m, n_classes=k, p=p, random_state=seed)
    rng = np.random.default_rng(seed)
    cap = np.where(rng.random(m) < 0.25, 0.0, rng.random(m) * 1.5)
    cap = np.where(rng.random(m) < 0.2, 1.0, cap)
    val = bundle_value(inst, i, cap)
    ag, it, cl = _edges(inst)
    ref = _bundle_flow(ag, it, cl, i, cap, reference=True)
    lp = _bundle_lp(inst, i, cap)
    cut = _bundle_mincut(inst, i, cap)  # |N_i| <= n <= 10
    note(f"dinic={val!r} ref={ref!r} lp={lp!r} mincut={cut!r}")
    assert isinstance(val, float)
    assert_allclose(val, ref, atol=ATOL_FLOW, err_msg="Dinic vs reference twin")
    assert_allclose(val, lp, atol=ATOL_FLOW, err_msg="Dinic vs linprog(highs)")
    assert_allclose(val, cut, atol=ATOL_FLOW, err_msg="Dinic vs min-cut subset formula")


@given(n=st.integers(1, 12), m=st.integers(0, 12), p=st.floats(0.1, 0.9), seed=SEEDS)
def test_bundle_value_unit_caps_is_class_matching(n, m, p, seed):
    inst = random_instance(n, m, n_classes=min(2, n), p=p, random_state=seed)
    for i in range(inst.n_classes):
        rows = np.flatnonzero(inst.agent_class == i)
        sub = OnlineMatchingInstance.from_biadjacency(inst.biadjacency()[rows], np.zeros(len(rows), int))
        assert bundle_value(inst, i, np.ones(m)) == float(_nx_matching_size(sub))


def test_bundle_value_hand():
    # class 0 = agents {0, 1}: both like item 0 (cap .7), agent 0 also likes item 1 (cap .2).
    # min cut: T={} -> 2, T={0} -> 1 + .9, T={1} -> 1 + .7, T={0,1} -> .9; so u_0 = .9
    inst = OnlineMatchingInstance(3, [0, 0, 1], [[0, 1, 2], [0], [2]])
    assert_allclose(bundle_value(inst, 0, [0.7, 0.2, 5.0]), 0.9, atol=1e-15)
    # one agent, two items of capacity 1: limited by |N_i| = 1
    assert bundle_value(inst, 1, [1.0, 0.0, 1.0]) == 1.0
    assert bundle_value(inst, 1, [0.0, 1.0, 0.0]) == 0.0  # agent 2 does not like item 1
    # capacities above 1 are allowed (generic b-matching)
    assert bundle_value(inst, 0, [3.0, 0.0, 0.0]) == 2.0


# ============================================================================================ OPT
@given(n=st.integers(1, 15), m=st.integers(0, 15), p=st.floats(0.0, 1.0), seed=SEEDS, frac=st.floats(0, 1))
def test_opt_matching_size_matches_networkx(n, m, p, seed, frac):
    inst = random_instance(n, m, n_classes=1, p=p, random_state=seed)
    assert opt_matching_size(inst) == _nx_matching_size(inst)
    pre = int(round(frac * m))
    assert opt_matching_size(inst, n_items=pre) == _nx_matching_size(inst, pre)


def test_opt_matching_size_hand():
    inst = OnlineMatchingInstance(3, [0, 1, 1], [[0], [0], [1, 2], []])
    assert opt_matching_size(inst) == 2
    assert opt_matching_size(inst, n_items=0) == 0
    assert opt_matching_size(OnlineMatchingInstance(2, [0, 1], [])) == 0


# ============================================================================================ CEF
def _tiny():
    """Agents 0, 1 in class 0, agent 2 in class 1; item 0 <- {0, 2}, item 1 <- {1, 2}, item 2 <- {2}.
    Allocation: item 0 -> agent 2 (1.0), item 1 -> agent 1 (0.5), item 2 unallocated."""
    inst = OnlineMatchingInstance(3, [0, 0, 1], [[0, 2], [1, 2], [2]])
    X = np.zeros((3, 3))
    X[2, 0] = 1.0
    X[1, 1] = 0.5
    return inst, X


def test_cef_matrix_and_ratios_hand():
    inst, X = _tiny()
    # by hand: u_0(X_0) = .5, u_1(X_1) = 1; c_1 = (1, 0, 0): agent 0 likes item 0 -> u_0(X_1) = 1;
    # c_0 = (0, .5, 0): agent 2 likes item 1 -> u_1(X_0) = .5
    expected = np.array([[0.5, 1.0], [0.5, 1.0]])
    assert_allclose(cef_matrix(inst, X), expected, atol=1e-15)
    assert cef_ratio(inst, X) == 0.5  # min(.5 / 1, 1 / .5)
    # OPT = 3 (item t -> agent t), allocated 1.5
    assert usw_ratio(inst, X) == 0.5
    # u_0(M) = 2 (0-0, 1-1), share 1 -> .5; u_1(M) = 1, share .5 -> 2; min = .5
    assert cprop_ratio(inst, X) == 0.5
    # item 1 keeps .5 while agent 1 has .5: wasteful
    assert is_non_wasteful(inst, X) is False
    # prefix of one item: only item 0 -> agent 2; V = [[0, 1], [0, 1]] -> ratio 0; OPT = 1
    assert cef_ratio(inst, X, n_items=1) == 0.0
    assert usw_ratio(inst, X, n_items=1) == 1.0
    assert_allclose(cef_trajectory(inst, X), [0.0, 0.5, 0.5])


def test_cef_ratio_not_capped_at_one():
    # class 0 = {0}, class 1 = {1}; item 0 <- {0, 1} goes to agent 0, item 1 <- {0, 1} half to agent 1:
    # V = [[1, .5], [1, .5]]: ratios 1/.5 = 2 and .5/1 = .5
    inst = OnlineMatchingInstance(2, [0, 1], [[0, 1], [0, 1]])
    X = np.array([[1.0, 0.0], [0.0, 0.5]])
    assert cef_ratio(inst, X) == 0.5
    # only agent 0 can use item 1: class 1 envies nobody, class 0 values c_1 = (0, .5) at .5 -> 2
    inst2 = OnlineMatchingInstance(2, [0, 1], [[0], [0, 1]])
    X2 = np.array([[1.0, 0.0], [0.0, 0.5]])
    assert cef_ratio(inst2, X2) == 2.0


def test_cef_ratio_vacuous_cases():
    inst = random_instance(5, 6, n_classes=1, p=0.6, random_state=0)
    X = _greedy_alloc(inst, np.random.default_rng(0))
    assert cef_ratio(inst, X) == 1.0  # k == 1
    assert cef_matrix(inst, X).shape == (1, 1)
    inst2 = OnlineMatchingInstance(2, [0, 1], [[0], [1]])
    assert cef_ratio(inst2, np.zeros((2, 2))) == 1.0  # every u_i(X_j) = 0
    assert cef_ratio(inst2, np.eye(2)) == 1.0  # disjoint edges: no envy possible
    assert_allclose(cef_trajectory(inst2, np.eye(2)), [1.0, 1.0])
    assert cef_trajectory(OnlineMatchingInstance(2, [0, 1], []), np.zeros((2, 0))).shape == (0,)


@given(
    n=st.integers(2, 8), m=st.integers(1, 10), k=st.integers(2, 4), p=st.floats(0.2, 0.9), seed=SEEDS,
)
@_cap(100)
def test_cef_matrix_against_oracles(n, m, k, p, seed):
    k = min(k, n)
    inst = random_instance(n, m, n_classes=k, p=p, random_state=seed)
    rng = np.random.default_rng(seed)
    X = _random_alloc(inst, rng, density=rng.choice([0.3, 1.0]))
    V = cef_matrix(inst, sp.csc_array(X))
    loads = X.sum(axis=1)
    assert_allclose(np.diag(V), np.bincount(inst.agent_class, weights=loads, minlength=k), atol=1e-12,
                    err_msg="diagonal must equal the class loads")
    ratio_oracle = np.inf
    for i in range(k):
        for j in range(k):
            if i == j:
                continue
            c_j = X[inst.agent_class == j].sum(axis=0)
            oracle = _bundle_mincut(inst, i, c_j)
            assert_allclose(V[i, j], oracle, atol=ATOL_FLOW, err_msg=f"V[{i}, {j}] vs min-cut")
            if oracle > 1e-9 + ATOL_FLOW:
                ratio_oracle = min(ratio_oracle, V[i, i] / oracle)
    r = cef_ratio(inst, X)
    if ratio_oracle < np.inf:
        assert_allclose(r, ratio_oracle, rtol=1e-6)
    traj = cef_trajectory(inst, X)
    assert_allclose(traj[-1], r, rtol=1e-12)
    for t in range(m):
        assert_allclose(traj[t], cef_ratio(inst, X, n_items=t + 1), rtol=1e-12, err_msg=f"prefix {t + 1}")


def test_cef_matrix_sampled_pairs():
    inst = random_instance(8, 10, n_classes=4, p=0.5, random_state=3)
    X = _greedy_alloc(inst, np.random.default_rng(3))
    full = cef_matrix(inst, X)
    S = cef_matrix(inst, X, pairs="sampled", n_pairs=5, random_state=0)
    computed = ~np.isnan(S)
    assert computed.sum() == 4 + 5  # diagonal + 5 sampled pairs
    assert_allclose(S[computed], full[computed])
    assert_allclose(cef_matrix(inst, X, pairs="sampled", n_pairs=100, random_state=1), full)
    assert_allclose(S, cef_matrix(inst, X, pairs="sampled", n_pairs=5, random_state=0))  # seeded


def test_allocation_layouts_agree():
    inst = random_instance(6, 7, n_classes=3, p=0.5, random_state=11)
    X = _random_alloc(inst, np.random.default_rng(11))
    ref = cef_matrix(inst, X)
    for conv in (sp.csc_array, sp.csr_array, sp.coo_array, sp.csr_matrix, lambda a: a.tolist()):
        assert_allclose(cef_matrix(inst, conv(X)), ref, atol=1e-14)
    # a prefix-shaped allocation is accepted with n_items
    assert_allclose(cef_matrix(inst, X[:, :4], n_items=4), cef_matrix(inst, X, n_items=4), atol=1e-14)
    # explicit zeros off the edges are fine; tiny negative round-off is clipped
    Y = X.copy()
    Y[inst.biadjacency().toarray() == 0] = 0.0
    Y[Y == 0] = -1e-12
    assert_allclose(cef_matrix(inst, Y), ref, atol=1e-10)


# ============================================================================================ USW / CPROP
@given(n=st.integers(1, 10), m=st.integers(0, 10), p=st.floats(0.0, 1.0), seed=SEEDS)
def test_usw_ratio_matches_mass_over_networkx_opt(n, m, p, seed):
    inst = random_instance(n, m, n_classes=1, p=p, random_state=seed)
    X = _random_alloc(inst, np.random.default_rng(seed))
    opt = _nx_matching_size(inst)
    r = usw_ratio(inst, X)
    if opt == 0:
        assert r == 1.0
    else:
        assert_allclose(r, X.sum() / opt, rtol=1e-12)
        assert 0.0 <= r <= 1.0 + 1e-9


@given(n=st.integers(2, 8), m=st.integers(1, 10), k=st.integers(2, 3), p=st.floats(0.2, 0.9), seed=SEEDS)
def test_cprop_ratio_matches_definition(n, m, k, p, seed):
    k = min(k, n)
    inst = random_instance(n, m, n_classes=k, p=p, random_state=seed)
    X = _greedy_alloc(inst, np.random.default_rng(seed))
    util = np.bincount(inst.agent_class, weights=X.sum(axis=1), minlength=k)
    ratios = []
    for i in range(k):
        uM = bundle_value(inst, i, np.ones(m))  # class i's max matching on all items
        if uM > 0:
            ratios.append(util[i] / (uM / k))
    assert_allclose(cprop_ratio(inst, X), min(ratios) if ratios else 1.0, rtol=1e-12)


# ============================================================================================ non-wasteful
def test_is_non_wasteful_online_definition():
    # item 0 <- {0} dropped; item 1 <- {0} fills agent 0. At the end agent 0 is full, but when item 0
    # left, agent 0 was empty: wasteful in the online sense.
    inst = OnlineMatchingInstance(1, [0], [[0], [0]])
    assert is_non_wasteful(inst, np.array([[0.0, 1.0]])) is False
    assert is_non_wasteful(inst, np.array([[1.0, 0.0]])) is True
    # item 0 keeps .4 while agent 0 has only .6 after it: wasteful, although agent 0 ends full
    assert is_non_wasteful(inst, np.array([[0.6, 0.4]])) is False
    # with tol = .45 the .4 left by item 0 is tolerated; item 1 keeps .7 but agent 0 ends at .9 >= .55
    assert is_non_wasteful(inst, np.array([[0.6, 0.3]]), tol=0.45) is True
    assert is_non_wasteful(inst, np.array([[0.6, 0.3]]), tol=0.35) is False
    # two agents: item 0 fills agent 0, item 1 <- {0} keeps 1 but its only neighbour is full
    inst1 = OnlineMatchingInstance(2, [0, 1], [[0, 1], [0]])
    assert is_non_wasteful(inst1, np.array([[1.0, 0.0], [0.0, 0.0]])) is True
    # items without neighbours never count as waste
    inst2 = OnlineMatchingInstance(2, [0, 1], [[], [1]])
    assert is_non_wasteful(inst2, np.array([[0.0, 0.0], [0.0, 1.0]])) is True
    assert is_non_wasteful(OnlineMatchingInstance(2, [0, 1], [[], []]), np.zeros((2, 2))) is True


def test_is_non_wasteful_integral():
    inst = OnlineMatchingInstance(2, [0, 1], [[0, 1], [0]])
    assert is_non_wasteful(inst, np.array([[0, 1], [1, 0]]), integral=True) is True
    assert is_non_wasteful(inst, np.array([[1, 0], [0, 0]]), integral=True) is True
    assert is_non_wasteful(inst, np.array([[0, 0], [1, 0]]), integral=True) is False
    with pytest.raises(ValueError, match=r"'allocation' must be 0/1 when integral=True.*X\[0, 0\] = 0.5"):
        is_non_wasteful(inst, np.array([[0.5, 0], [0.5, 0]]), integral=True)


@given(n=st.integers(1, 8), m=st.integers(0, 10), k=st.integers(1, 3), p=st.floats(0.1, 0.9),
       waste=st.sampled_from([0.0, 0.3]), seed=SEEDS)
def test_is_non_wasteful_agrees_with_theory_certificate(n, m, k, p, waste, seed):
    from theory.fair_matching import check_allocation

    inst = random_instance(n, m, n_classes=min(k, n), p=p, random_state=seed)
    X = _greedy_alloc(inst, np.random.default_rng(seed), waste_prob=waste)
    cert = check_allocation(inst.biadjacency(), X, non_wasteful=True)
    assert is_non_wasteful(inst, X) == cert.ok
    if waste == 0.0:
        assert cert.ok, cert.violations


# ============================================================================================ ex ante / ex post
def test_ex_ante_vs_ex_post_hand():
    # one item liked by both classes; run 1 gives it to class 0, run 2 to class 1.
    inst = OnlineMatchingInstance(2, [0, 1], [[0, 1]])
    runs = [np.array([[1.0], [0.0]]), np.array([[0.0], [1.0]])]
    # means: V00 = V11 = .5, V01 = V10 = .5 -> ratio of means 1; each run has ratio 0
    assert ex_ante_cef_ratio(inst, runs) == 1.0
    assert ex_post_cef_ratio(inst, runs) == 0.0
    res = ex_ante_cef_ratio(inst, runs, return_se=True)
    assert isinstance(res, ExAnteCEF)
    assert res.ratio == 1.0 and res.pair == (0, 1)
    # delta method: g_r = V00 - 1 * V01 = (1, -1), sd = sqrt(2), se = sqrt(2)/sqrt(2)/.5 = 2
    assert_allclose(res.se, 2.0)
    assert res.run_matrices.shape == (2, 2, 2)
    assert_allclose(res.mean_matrix, np.full((2, 2), 0.5))
    gap, se = res.gap(0.5)  # V00 - .5 V01 = (1, -.5): mean .25, sd = 1.5/sqrt(2)*... -> se = .75
    assert_allclose(gap, [[0.0, 0.25], [0.25, 0.0]])
    assert_allclose(se, [[0.0, 0.75], [0.75, 0.0]])
    mean, se_post = ex_post_cef_ratio(inst, runs, return_se=True)
    assert mean == 0.0 and se_post == 0.0
    # a 3-d array of runs is accepted too
    assert ex_ante_cef_ratio(inst, np.stack(runs)) == 1.0


def test_ex_ante_matches_mean_of_matrices():
    inst = random_instance(6, 8, n_classes=3, p=0.5, random_state=5)
    rng = np.random.default_rng(5)
    runs = [_greedy_alloc(inst, rng) for _ in range(6)]
    Vbar = np.mean([cef_matrix(inst, X) for X in runs], axis=0)
    expected = min(
        (Vbar[i, i] / Vbar[i, j] for i in range(3) for j in range(3) if i != j and Vbar[i, j] > 1e-9),
        default=1.0,
    )
    assert_allclose(ex_ante_cef_ratio(inst, runs), expected, rtol=1e-12)
    assert_allclose(ex_post_cef_ratio(inst, runs), np.mean([cef_ratio(inst, X) for X in runs]), rtol=1e-12)


def test_ex_ante_no_envy_pairs():
    inst = OnlineMatchingInstance(2, [0, 1], [[0], [1]])
    res = ex_ante_cef_ratio(inst, [np.eye(2), np.zeros((2, 2))], return_se=True)
    assert res.ratio == 1.0 and res.se == 0.0 and res.pair is None


# ============================================================================================ bad input
def test_bad_instance_everywhere():
    X = np.zeros((2, 2))
    for fn, args in [
        (opt_matching_size, ()), (bundle_value, (0, [1.0, 1.0])), (cef_matrix, (X,)), (cef_ratio, (X,)),
        (usw_ratio, (X,)), (cprop_ratio, (X,)), (is_non_wasteful, (X,)), (cef_trajectory, (X,)),
        (ex_ante_cef_ratio, ([X],)), (ex_post_cef_ratio, ([X],)),
    ]:
        with pytest.raises(TypeError, match="'instance' must be an OnlineMatchingInstance"):
            fn(np.ones((2, 2)), *args)


def test_bad_n_items():
    inst, X = _tiny()
    for fn in (opt_matching_size, lambda i, n_items: cef_ratio(i, X, n_items),
               lambda i, n_items: usw_ratio(i, X, n_items), lambda i, n_items: cef_matrix(i, X, n_items)):
        with pytest.raises(ValueError, match=r"'n_items' must be an int in \[0, 3\]; got 4"):
            fn(inst, n_items=4)
        with pytest.raises(TypeError, match="'n_items' must be an int"):
            fn(inst, n_items=1.5)


def test_bad_bundle_value_input():
    inst, _ = _tiny()
    with pytest.raises(ValueError, match=r"'class_i' must be an int in \[0, 1\]; got 2"):
        bundle_value(inst, 2, [1.0, 1.0, 1.0])
    with pytest.raises(TypeError, match="'class_i' must be an int"):
        bundle_value(inst, "0", [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"'item_capacity' must have one entry per item \(n_items=3\); got length 2"):
        bundle_value(inst, 0, [1.0, 1.0])
    with pytest.raises(ValueError, match=r"'item_capacity' must be non-negative; got -0.5 at index 1"):
        bundle_value(inst, 0, [1.0, -0.5, 1.0])
    with pytest.raises(ValueError, match="'item_capacity' must contain only finite values"):
        bundle_value(inst, 0, [1.0, np.nan, 1.0])
    with pytest.raises(TypeError, match="'item_capacity' must contain real numbers"):
        bundle_value(inst, 0, ["a", "b", "c"])
    with pytest.raises(ValueError, match="'item_capacity' must be 1-dimensional"):
        bundle_value(inst, 0, np.ones((3, 1)))


def test_bad_allocation():
    inst, X = _tiny()
    with pytest.raises(TypeError, match="'allocation' must be a scipy sparse matrix or a 2-d numpy array"):
        cef_ratio(inst, None)
    with pytest.raises(TypeError, match="'allocation' must hold real numbers"):
        usw_ratio(inst, np.full((3, 3), "x"))
    with pytest.raises(ValueError, match=r"'allocation' must have shape \(3, 3\).*got shape \(3, 2\)"):
        cef_matrix(inst, X[:, :2])
    with pytest.raises(ValueError, match=r"'allocation' must be a 2-d"):
        cef_matrix(inst, X.ravel())
    Y = X.copy()
    Y[0, 1] = 0.3  # agent 0 does not like item 1
    with pytest.raises(ValueError, match=r"'allocation' must be zero off the instance's edges.*X\[0, 1\] = 0.3"):
        cef_ratio(inst, Y)
    Y = X.copy()
    Y[0, 0] = -0.1
    with pytest.raises(ValueError, match=r"'allocation' must be non-negative.*X\[0, 0\] = -0.1"):
        cprop_ratio(inst, Y)
    Y = X.copy()
    Y[0, 0] = 0.5  # item 0 now gets 1.5
    with pytest.raises(ValueError, match="'allocation' must give each item at most 1.*item 0 is given 1.5"):
        is_non_wasteful(inst, Y)
    Y = X.copy()
    Y[2, 1] = 0.5  # agent 2 now receives 1.5
    with pytest.raises(ValueError, match="'allocation' must give each agent at most 1.*agent 2 receives 1.5"):
        cef_trajectory(inst, Y)
    Y = X.copy()
    Y[2, 0] = np.inf
    with pytest.raises(ValueError, match="'allocation' must contain only finite values"):
        cef_matrix(inst, sp.csc_array(Y))


def test_bad_options():
    inst, X = _tiny()
    with pytest.raises(ValueError, match="'pairs' must be one of"):
        cef_matrix(inst, X, pairs="some")
    with pytest.raises(ValueError, match="'n_pairs' must be an int"):
        cef_matrix(inst, X, pairs="sampled")
    with pytest.raises(ValueError, match=r"'n_pairs' must be an int in \[1, inf\]; got 0"):
        cef_matrix(inst, X, pairs="sampled", n_pairs=0)
    with pytest.raises(ValueError, match=r"'tol' must be a float in \[0, inf\]; got -1.0"):
        is_non_wasteful(inst, X, tol=-1.0)
    with pytest.raises(TypeError, match="'integral' must be a bool"):
        is_non_wasteful(inst, X, integral=1)


def test_bad_allocations_sequence():
    inst, X = _tiny()
    with pytest.raises(TypeError, match="'allocations' must be a sequence of allocations"):
        ex_ante_cef_ratio(inst, X)
    with pytest.raises(TypeError, match="'allocations' must be a sequence of allocations"):
        ex_post_cef_ratio(inst, sp.csc_array(X))
    with pytest.raises(TypeError, match="'allocations' must be a sequence of allocations"):
        ex_post_cef_ratio(inst, 3)
    with pytest.raises(ValueError, match="'allocations' must hold at least one allocation"):
        ex_ante_cef_ratio(inst, [])
    with pytest.raises(ValueError, match="'allocations' must hold at least 2 allocations when return_se=True"):
        ex_ante_cef_ratio(inst, [X], return_se=True)
    with pytest.raises(ValueError, match="'allocations' must hold at least 2 allocations when return_se=True"):
        ex_post_cef_ratio(inst, [X], return_se=True)
    Y = X.copy()
    Y[0, 1] = 0.3
    with pytest.raises(ValueError, match=r"'allocations\[1\]' must be zero off the instance's edges"):
        ex_ante_cef_ratio(inst, [X, Y])
    with pytest.raises(TypeError, match="'return_se' must be a bool"):
        ex_ante_cef_ratio(inst, [X, X], return_se="yes")
    res = ex_ante_cef_ratio(inst, [X, X], return_se=True)
    with pytest.raises(ValueError, match=r"'alpha' must be a float in \[0, inf\]; got -0.5"):
        res.gap(-0.5)
