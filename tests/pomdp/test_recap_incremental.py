"""RECAP's incremental FSC evaluation (``algos.pomdp.recap._fsc_eval``) and its fit path.

* The system assembled from the cached blocks ``T[a] * Z[a, :, o]`` is the matrix of the direct
  construction, entry for entry.
* The rank-S (Woodbury) change of ``V^F(b0)`` when one node's rows change equals the difference of
  two dense solves to 1e-10, for action changes, single transitions and whole rows, on random FSCs.
* The refinement's quantiser with ``V_Gamma`` of the sample cached is :func:`quantize` exactly, and
  the tables built for the three quantisers from one successor computation are those of
  :func:`build_codebook_fsc`.
* Fits on Tiger and 4x3 are identical to the direct path (every polish trial solved densely, the
  plain quantiser), and Tiger still reaches its best known value 19.371 by K = 8.
"""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from algos.pomdp._beliefs import _arrays, _b0, _fsc_system, evaluate_fsc
from algos.pomdp._builtin import tiger
from algos.pomdp.io._parser import read_pomdp
from algos.pomdp.recap import _polish as _recap_polish
from algos.pomdp.recap import _search as _recap_search
from algos.pomdp.recap._codebook import DISTANCES, build_codebook_fsc, quantize
from algos.pomdp.recap._fsc_eval import FSCSystem, RowUpdate
from algos.pomdp.recap._recap import RECAPController
from algos.pomdp.recap._search import _quantize_decision
from algos.pomdp.solvers._pbvi import PBVI
from tests.strategies import pomdps

DELTA_ATOL = 1e-10


def _random_fsc(model, rng, K):
    A, O = model.n_actions, model.n_observations
    return rng.integers(0, A, K), rng.integers(0, K, (K, O)), int(rng.integers(0, K))


@settings(max_examples=40, deadline=None)
@given(pomdps(max_states=6, max_actions=3, max_observations=3, with_rng=True), st.integers(1, 6))
def test_block_system_equals_direct_construction(case, K):
    model, rng = case
    T, Z, r, g = _arrays(model)
    action, eta, _ = _random_fsc(model, rng, K)
    R0, P0 = _fsc_system(T, Z, r, action, eta, False)
    R1, P1 = FSCSystem(T, Z, r, g, _b0(model, None, T.shape[1])).transition(action, eta)
    np.testing.assert_array_equal(R1, R0)
    np.testing.assert_array_equal(P1, P0)


@settings(max_examples=60, deadline=None)
@given(pomdps(max_states=6, max_actions=3, max_observations=4, discounts=(0.8, 0.9, 0.95), with_rng=True),
       st.integers(1, 6), st.sampled_from(["action", "one", "row"]))
def test_rank_s_update_equals_dense_solve(case, K, kind):
    model, rng = case
    T, Z, r, g = _arrays(model)
    A, O = model.n_actions, model.n_observations
    action, eta, m0 = _random_fsc(model, rng, K)
    upd = RowUpdate(FSCSystem(T, Z, r, g, _b0(model, None, T.shape[1])))
    W, _ = upd.reset(action, eta, m0)
    v0, W0 = evaluate_fsc(model, action, eta, m0, return_values=True)
    np.testing.assert_allclose(W, W0, atol=DELTA_ATOL)
    assert abs(upd.value - v0) <= DELTA_ATOL
    for _ in range(4):  # several trials on the same factors (the per-node solves are cached)
        k = int(rng.integers(0, K))
        a_new, row_new = int(action[k]), eta[k].copy()
        if kind == "action":
            a_new = int((action[k] + rng.integers(1, A)) % A)
        if kind in ("one", "action"):
            o = int(rng.integers(0, O))
            row_new[o] = rng.integers(0, K)
        if kind == "row":
            row_new = rng.integers(0, K, O)
        act2, eta2 = action.copy(), eta.copy()
        act2[k], eta2[k] = a_new, row_new
        exact = evaluate_fsc(model, act2, eta2, m0) - v0
        assert abs(upd.delta_value(k, a_new, row_new) - exact) <= DELTA_ATOL, (kind, k)


@settings(max_examples=40, deadline=None)
@given(pomdps(max_states=6, max_actions=3, max_observations=4, discounts=(0.8, 0.9, 0.95), with_rng=True),
       st.integers(1, 6), st.sampled_from([3, 100]))
def test_product_form_changes_equal_direct_solves(case, K, max_updates):
    """Six accepted changes in product form (``RowUpdate.accept``, refactored every ``max_updates``):
    after each, the values, the adjoint, the value and both solves equal the direct solves of the
    changed tables, and the next change's Woodbury gain is still exact."""
    model, rng = case
    T, Z, r, g = _arrays(model)
    A, O = model.n_actions, model.n_observations
    action, eta, m0 = _random_fsc(model, rng, K)
    ev = FSCSystem(T, Z, r, g, _b0(model, None, T.shape[1]))
    upd = RowUpdate(ev, max_updates=max_updates)
    upd.reset(action, eta, m0)
    S, n_changed = T.shape[1], 0
    for step in range(6):
        k = int(rng.integers(0, K))
        a_new, row_new = int(rng.integers(0, A)), eta[k].copy()
        if step % 2:
            row_new = rng.integers(0, K, O)
        else:
            row_new[int(rng.integers(0, O))] = rng.integers(0, K)
        v_old = upd.value
        gain = upd.delta_value(k, a_new, row_new)
        n_changed += a_new != action[k] or not np.array_equal(row_new, eta[k])
        action[k], eta[k] = a_new, row_new
        v = upd.accept(k, a_new, row_new)
        W_d, y_d, lu = ev.values_and_adjoint(action, eta, m0)
        v_d = evaluate_fsc(model, action, eta, m0)
        assert abs(v - v_d) <= DELTA_ATOL and abs(v_old + gain - v_d) <= DELTA_ATOL, step
        np.testing.assert_allclose(upd.W, W_d, rtol=0, atol=DELTA_ATOL)
        np.testing.assert_allclose(upd.y, y_d, rtol=0, atol=DELTA_ATOL)
        b = rng.normal(size=(K * S, 2))
        np.testing.assert_allclose(upd.solve(b), lu.solve(b), rtol=0, atol=DELTA_ATOL)
        np.testing.assert_allclose(upd.solve(b[:, 0], trans=1), lu.solve(b[:, 0], trans=1), rtol=0, atol=DELTA_ATOL)
    assert len(upd._file) == n_changed % max_updates  # refactored after every max_updates changes


def test_rank_s_update_on_hallway_scale_fsc(shared_data_dir):
    """A 16-node FSC of hallway (S = 60, K*S = 960): the update stays within 1e-10 of the dense solve."""
    model = read_pomdp(Path(shared_data_dir) / "pomdp" / "hallway.POMDP")
    T, Z, r, g = _arrays(model)
    rng = np.random.default_rng(3)
    K = 16
    action, eta, m0 = _random_fsc(model, rng, K)
    upd = RowUpdate(FSCSystem(T, Z, r, g, _b0(model, None, T.shape[1])))
    upd.reset(action, eta, m0)
    v0 = evaluate_fsc(model, action, eta, m0)
    for trial in range(3):
        k = int(rng.integers(0, K))
        act2, eta2 = action.copy(), eta.copy()
        if trial == 0:
            eta2[k, int(rng.integers(0, model.n_observations))] = (eta[k, 0] + 1) % K
        else:
            act2[k] = (action[k] + trial) % model.n_actions
            eta2[k] = rng.integers(0, K, model.n_observations)
        exact = evaluate_fsc(model, act2, eta2, m0) - v0
        assert abs(upd.delta_value(k, act2[k], eta2[k]) - exact) <= DELTA_ATOL


def test_unchanged_rows_give_zero():
    model = tiger()
    T, Z, r, g = _arrays(model)
    upd = RowUpdate(FSCSystem(T, Z, r, g, _b0(model, None, 2)))
    action, eta = np.array([0, 1, 2]), np.array([[1, 2], [0, 0], [2, 1]])
    upd.reset(action, eta, 0)
    assert upd.delta_value(1, 1, eta[1]) == 0.0


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 5), st.integers(1, 6), st.booleans())
def test_cached_decision_quantiser_is_quantize(seed, S, K, with_ties):
    rng = np.random.default_rng(seed)
    alphas = rng.normal(size=(int(rng.integers(1, 6)), S))
    C = rng.dirichlet(np.ones(S), size=K)
    B = rng.dirichlet(np.ones(S), size=30)
    if with_ties:  # beliefs on codewords, a repeated codeword and a repeated alpha vector
        B[:K] = C
        C = np.vstack([C, C[:1]])
        alphas = np.vstack([alphas, alphas[:1]])
    vB = (B @ alphas.T).max(axis=1)
    np.testing.assert_array_equal(_quantize_decision(B, vB, C, alphas), quantize(B, C, "decision", alphas))


@settings(max_examples=40, deadline=None)
@given(pomdps(max_states=5, max_actions=3, max_observations=3, with_rng=True), st.integers(2, 5))
def test_shared_successor_build_is_build_codebook_fsc(case, K):
    model, rng = case
    S = model.n_states
    alphas = rng.normal(size=(4, S))
    C = np.vstack([_b0(model, None, S), rng.dirichlet(np.ones(S), size=K - 1)])
    tabs = RECAPController()._search(model)._build_all(model, C, alphas, DISTANCES)
    for dist, tab in zip(DISTANCES, tabs):
        ref = build_codebook_fsc(model, C, alphas, distance=dist, action_rule="lookahead")
        for key in ("action", "eta", "eta_full", "P", "Bn"):
            np.testing.assert_array_equal(tab[key], ref[key], err_msg=f"{dist} {key}")
        assert tab["m0"] == ref["m0"]


class _DirectOnly(RowUpdate):
    """Screen that passes every trial on to the direct solve, and a change applied by factoring the
    changed tables afresh (the path without the update and its product form)."""

    def delta_value(self, k, a_new, row_new):
        return np.inf

    def accept(self, k, a_new, row_new):
        action, eta = self.action.copy(), self.eta.copy()
        action[k], eta[k] = a_new, row_new
        self.reset(action, eta, self.m0)
        return self.value


def _fit(model, sol, K):
    return RECAPController(n_memory=K, random_state=0).fit(model, alphas=sol)


@pytest.fixture(scope="module")
def small_models(shared_data_dir):
    out = []
    for model in (tiger(), read_pomdp(Path(shared_data_dir) / "pomdp" / "4x3.95.POMDP")):
        out.append((model, PBVI(random_state=0).fit(model)))
    return out


@pytest.mark.parametrize("K", [4, 8])
def test_fits_identical_to_the_direct_path(small_models, monkeypatch, K):
    fast = [_fit(model, sol, K) for model, sol in small_models]
    monkeypatch.setattr(_recap_polish, "RowUpdate", _DirectOnly)  # the polish's product-form updates
    monkeypatch.setattr(_recap_search, "_quantize_decision", lambda B, vB, C,
                        alphas: quantize(B, C, "decision", alphas))
    direct = [_fit(model, sol, K) for model, sol in small_models]
    for (model, _), f, d in zip(small_models, fast, direct):
        np.testing.assert_array_equal(f.action_, d.action_)
        np.testing.assert_array_equal(f.eta_, d.eta_)
        np.testing.assert_allclose(f.value_history_, d.value_history_, rtol=0, atol=1e-12)
        assert f.value_ == evaluate_fsc(model, f.action_, f.eta_, f.m0_)  # reported: an exact solve


def test_tiger_reaches_best_known_by_k8(small_models):
    model, sol = small_models[0]
    rc = _fit(model, sol, 8)
    assert rc.value_ >= 19.37  # best known 19.371 (Cassandra's tiger, discount 0.95)
    assert rc.value_ == evaluate_fsc(model, rc.action_, rc.eta_, rc.m0_)
