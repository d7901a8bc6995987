"""RECAP's evaluation pieces: the CSR operator, the iterative solves, the factored block products.

* :meth:`FSCSystem.operator` is ``I - discount P`` of the dense construction (duplicates summed by
  the product), for random controllers on random models.
* The iterative node values and adjoint equal the direct solve to 1e-10, cold and warm-started
  from a perturbed solution.
* :class:`RowUpdate`'s block products ``sum_o blocks[a, o] X[row[o]]`` and their transposes,
  computed as ``T[a]`` times the observation-weighted successor values, equal the block sums.
* The policy-graph compression kept per (batch, candidates, size) returns the same controller as a
  compression from scratch.
* The lean BiCGSTAB of the Krylov solves gives SciPy's ``bicgstab`` result bit for bit (the same
  iteration), cold and warm-started, on the system and its transpose.
* A Woodbury trial (``RowUpdate.delta_value``, which reads ``Z_k rho`` on the successor rows only)
  equals the change of a direct solve.
* The compression's single merges, warm-started from the previous step's solution, choose the same
  merges as cold solves.
* The polish ranks the nearest codewords of the visited nodes only: those rows equal the ranks
  computed for every node.
"""

import numpy as np
import pytest
import scipy.sparse.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

from algos.datasets import load_pomdp
from algos.pomdp import PointBasedSolver, RECAPController
from algos.pomdp._beliefs import _arrays, _b0
from algos.pomdp._builtin import tiger
from algos.pomdp.recap import _starts
from algos.pomdp.recap._fsc_eval import SPARSE_FROM, FSCSystem, RowUpdate, _bicgstab
from tests.strategies import pomdps

ATOL = 1e-10


def _system(model):
    T, Z, r, g = _arrays(model)
    return FSCSystem(T, Z, r, g, _b0(model, None, T.shape[1]))


def _random_fsc(model, rng, K):
    A, O = model.n_actions, model.n_observations
    return rng.integers(0, A, K), rng.integers(0, K, (K, O)), int(rng.integers(0, K))


@settings(max_examples=40, deadline=None)
@given(pomdps(max_states=6, max_actions=3, max_observations=4, with_rng=True), st.integers(1, 8))
def test_operator_is_the_dense_system(case, K):
    model, rng = case
    ev = _system(model)
    action, eta, _ = _random_fsc(model, rng, K)
    _, P = ev.transition(action, eta)
    S = ev.n_states
    np.testing.assert_allclose(ev.operator(action, eta).toarray(), np.eye(K * S) - ev.discount * P,
                               rtol=0, atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(pomdps(max_states=6, max_actions=3, max_observations=4, discounts=(0.8, 0.95), with_rng=True),
       st.integers(1, 8))
def test_iterative_values_and_adjoint_equal_the_direct_solve(case, K):
    model, rng = case
    ev = _system(model)
    action, eta, m0 = _random_fsc(model, rng, K)
    W, y, _ = ev.values_and_adjoint(action, eta, m0)
    W_i, y_i = ev.values_and_adjoint_iterative(action, eta, m0)
    np.testing.assert_allclose(W_i, W, rtol=0, atol=ATOL * max(1.0, np.abs(W).max()))
    np.testing.assert_allclose(y_i, y, rtol=0, atol=ATOL * max(1.0, np.abs(y).max()))
    noise = rng.normal(size=W.shape)
    W_w, y_w = ev.values_and_adjoint_iterative(action, eta, m0, W0=W + noise, y0=y + noise)
    np.testing.assert_allclose(W_w, W, rtol=0, atol=ATOL * max(1.0, np.abs(W).max()))
    np.testing.assert_allclose(y_w, y, rtol=0, atol=ATOL * max(1.0, np.abs(y).max()))
    assert ev.value_iterative(action, eta, m0) == pytest.approx(ev.value(action, eta, m0), abs=ATOL)


@settings(max_examples=40, deadline=None)
@given(pomdps(max_states=6, max_actions=3, max_observations=4, with_rng=True), st.integers(1, 8))
def test_factored_block_products_equal_the_blocks(case, K):
    # sum_o blocks[a, o] @ X[row[o]] (and its transpose) computed as T[a] @ (summed observation
    # weights * X[n]) over the distinct successors n
    model, rng = case
    ev = _system(model)
    upd = RowUpdate(ev)
    S, O = ev.n_states, model.n_observations
    upd.W = np.zeros((K, S))
    for _ in range(3):
        a = int(rng.integers(0, model.n_actions))
        row = rng.integers(0, K, O)
        X = rng.normal(size=(K, S, 3))
        direct = sum(ev.blocks[a, o] @ X[row[o]] for o in range(O))
        np.testing.assert_allclose(upd._apply(a, row, X), direct, rtol=0, atol=1e-12)
        np.testing.assert_allclose(upd._apply(a, row, X[:, :, 0]), direct[:, 0], rtol=0, atol=1e-12)
        a2, row2 = int(rng.integers(0, model.n_actions)), rng.integers(0, K, O)
        v = rng.normal(size=(S, 2))
        D = np.zeros((S, K, S))  # D X = -g (sum blocks[a2] X[row2] - sum blocks[a] X[row])
        for o in range(O):
            D[:, row2[o]] -= ev.discount * ev.blocks[a2, o]
            D[:, row[o]] += ev.discount * ev.blocks[a, o]
        expect = np.einsum("skt,sm->ktm", D, v)
        np.testing.assert_allclose(upd._DT((a2, row2), (a, row), v), expect, rtol=0, atol=1e-12)


def test_kept_compression_equals_a_fresh_one():
    model = tiger()
    solver = PointBasedSolver(time_limit=1.0, random_state=0).fit(model)
    ev = _system(model)
    C, tab = _starts.policy_graph(ev, solver.alphas_, solver.actions_)
    assert len(C) > 2  # (so that K = 2 compresses)
    evaluate = lambda t: ev.value(t["action"], t["eta"], t["m0"])  # noqa: E731
    K = 2
    shared = {}
    first = _starts.best_compression(ev, C, tab, K, evaluate, trajectories=shared)
    again = _starts.best_compression(ev, C, tab, K, evaluate, trajectories=shared)
    fresh = _starts.best_compression(ev, C, tab, K, evaluate)
    assert any(isinstance(k, tuple) for k in shared)
    for out in (again, fresh):
        assert out[2] == first[2]
        np.testing.assert_array_equal(out[1]["action"], first[1]["action"])
        np.testing.assert_array_equal(out[1]["eta"], first[1]["eta"])


@settings(max_examples=40, deadline=None)
@given(pomdps(max_states=6, max_actions=3, max_observations=4, discounts=(0.8, 0.95), with_rng=True),
       st.integers(1, 8))
def test_lean_bicgstab_is_scipys_iteration(case, K):
    model, rng = case
    ev = _system(model)
    action, eta, _ = _random_fsc(model, rng, K)
    M = ev.sparse_matrix(action, eta)
    b = ev.r[:, action].T.reshape(-1)
    for A_ in (M, M.T.tocsc()):
        for x0 in (None, rng.normal(size=b.size)):
            x_ref, info_ref = scipy.sparse.linalg.bicgstab(A_, b, x0=x0, rtol=1e-12, atol=0.0, maxiter=2000)
            x, info = _bicgstab(A_, b, x0=x0, rtol=1e-12, atol=0.0, maxiter=2000)
            assert info == info_ref
            np.testing.assert_array_equal(x, x_ref)


@settings(max_examples=30, deadline=None)
@given(pomdps(max_states=6, max_actions=3, max_observations=4, discounts=(0.8, 0.95), with_rng=True),
       st.integers(2, 7))
def test_woodbury_trial_equals_the_direct_change(case, K):
    model, rng = case
    ev = _system(model)
    action, eta, m0 = _random_fsc(model, rng, K)
    upd = RowUpdate(ev)
    upd.reset(action, eta, m0)
    before = ev.value(action, eta, m0)
    for _ in range(3):
        k = int(rng.integers(0, K))
        a = int(rng.integers(0, model.n_actions))
        row = rng.integers(0, K, model.n_observations)
        a2, eta2 = action.copy(), eta.copy()
        a2[k], eta2[k] = a, row
        scale = max(1.0, abs(before))
        assert upd.delta_value(k, a, row) == pytest.approx(ev.value(a2, eta2, m0) - before, abs=1e-9 * scale)


@pytest.mark.parametrize("seed", [0, 1])
def test_polish_ranks_of_visited_nodes_equal_the_full_ranks(seed):
    model = tiger()
    solver = PointBasedSolver(time_limit=0.5, random_state=0).fit(model)
    est = RECAPController(n_memory=4, random_state=seed)
    search = est._search(model)
    rng = np.random.default_rng(seed)
    C = rng.dirichlet(np.ones(model.n_states), size=5)
    full = search._distortion(model, C, solver.alphas_)
    rows = np.array([3, 1])
    A, O = model.n_actions, model.n_observations
    part = search._distortion(model, C, solver.alphas_, rows=rows)
    np.testing.assert_array_equal(part, full.reshape(5, A * O, 5)[rows].reshape(-1, 5))


def test_warm_started_single_merges_equal_cold_ones(monkeypatch):
    # the single-merge phase warm-starts the Krylov solves of each step from the previous step's
    # node values and adjoint: the merges chosen (and the value) are those of cold solves
    model = load_pomdp("tiger-grid")
    solver = PointBasedSolver(time_limit=600.0, max_trials=30, random_state=0).fit(model)
    ev = _system(model)
    C, tab = _starts.policy_graph(ev, solver.alphas_, solver.actions_)
    K = 12
    assert len(C) > 2 * K and (K + 3) * ev.n_states >= SPARSE_FROM  # (warm Krylov solves in the single merges)
    evaluate = lambda t: ev.value(t["action"], t["eta"], t["m0"])  # noqa: E731
    warm = _starts.compress(ev, C, tab, K, evaluate, n_candidates=3, batch=0.25)
    cold_values = _starts._values
    monkeypatch.setattr(_starts, "_values", lambda ev_, tab_, W0=None, y0=None: cold_values(ev_, tab_))
    cold = _starts.compress(ev, C, tab, K, evaluate, n_candidates=3, batch=0.25)
    assert warm[2] == cold[2]
    np.testing.assert_array_equal(warm[1]["action"], cold[1]["action"])
    np.testing.assert_array_equal(warm[1]["eta"], cold[1]["eta"])
