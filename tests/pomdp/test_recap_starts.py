"""RECAP's starts from the solver's knowledge (policy-graph compression, reachable-belief codebook)
and the selection among them by exact value.

* The policy graph of the solver's vectors is a controller whose tables are consistent (every
  transition points at a node, ``m0 = 0``, the action of each node its vector's label).
* ``compress`` returns exactly K nodes and the value it reports is the value of those tables, checked
  against an independent dense solve of ``(I - discount P) W = R`` written in this file.
* ``fit`` returns the best of its candidates (``value_ == max(start_values_)``, ``construction_``
  naming it), never below the blind policy's value (computed here independently), non-decreasing
  ``value_history_``.
* tiger-grid at K = 4: the blind policy earns nothing and nested growth alone stays at one node;
  the fitted controller has more than one node and a value well above the blind one.
"""

import numpy as np
import pytest

from algos.pomdp import PointBasedSolver, RECAPController, read_pomdp, tiger
from algos.pomdp._beliefs import _arrays, _b0
from algos.pomdp.recap import _starts as st
from algos.pomdp.recap._fsc_eval import FSCSystem

DATA = "/work/shared/data/pomdp"


def _independent_value(model, action, eta, m0):
    """``b0 . W[m0]`` with ``W`` solved from the FSC's (node, state) linear system, built here."""
    T, Z, r, g = _arrays(model)
    b0 = _b0(model, None, T.shape[1])
    K, S = len(action), T.shape[1]
    M = np.eye(K * S)
    R = np.zeros(K * S)
    for k in range(K):
        a = action[k]
        R[k * S:(k + 1) * S] = r[:, a]
        for o in range(Z.shape[2]):
            n = eta[k, o]
            M[k * S:(k + 1) * S, n * S:(n + 1) * S] -= g * T[a] * Z[a, :, o][None, :]
    W = np.linalg.solve(M, R).reshape(K, S)
    return float(b0 @ W[m0])


def _blind_value(model):
    """Best value of a policy that repeats one action forever, from ``b0``."""
    T, _, r, g = _arrays(model)
    b0 = _b0(model, None, T.shape[1])
    S = T.shape[1]
    return max(float(b0 @ np.linalg.solve(np.eye(S) - g * T[a], r[:, a])) for a in range(T.shape[0]))


def _system(model):
    T, Z, r, g = _arrays(model)
    return FSCSystem(T, Z, r, g, _b0(model, None, T.shape[1]))


@pytest.fixture(scope="module")
def four_by_three():
    model = read_pomdp(f"{DATA}/4x3.95.POMDP")
    solver = PointBasedSolver(time_limit=600.0, max_trials=60, random_state=0).fit(model)
    return model, solver


@pytest.fixture(scope="module")
def tiger_grid():
    model = read_pomdp(f"{DATA}/tiger-grid.POMDP")
    solver = PointBasedSolver(time_limit=600.0, max_trials=40, random_state=0).fit(model)
    return model, solver


def test_policy_graph_tables(four_by_three):
    model, solver = four_by_three
    C, tab = st.policy_graph(_system(model), solver.alphas_, solver.actions_)
    N = len(C)
    assert tab["m0"] == 0 and N >= 2
    assert tab["eta"].shape == (N, model.n_observations)
    assert tab["eta"].min() >= 0 and tab["eta"].max() < N
    np.testing.assert_allclose(C.sum(axis=1), 1.0, atol=1e-9)
    # each node plays the label of the vector winning at its witness belief
    win = np.argmax(C @ solver.alphas_.T, axis=1)
    np.testing.assert_array_equal(tab["action"], solver.actions_[win])
    # each transition goes to the node whose vector wins at the updated belief
    G = solver.alphas_
    for k in range(N):
        a = tab["action"][k]
        for o in np.flatnonzero(tab["P"][k, a] > 0):
            b = tab["Bn"][k, a, o]
            target = tab["eta"][k, o]
            assert G[win[target]] @ b == pytest.approx((G @ b).max(), abs=1e-9)


@pytest.mark.parametrize("K", [2, 3, 5])
def test_compress_exactly_K_nodes_and_exact_value(four_by_three, K):
    model, solver = four_by_three
    ev = _system(model)
    C, tab = st.policy_graph(ev, solver.alphas_, solver.actions_)
    assert len(C) > K
    Ck, tk, v = st.compress(ev, C, tab, K, lambda t: ev.value(t["action"], t["eta"], t["m0"]))
    assert len(Ck) == K and len(tk["action"]) == K and tk["eta"].shape[0] == K
    assert tk["eta"].max() < K and 0 <= tk["m0"] < K
    assert v == pytest.approx(_independent_value(model, tk["action"], tk["eta"], tk["m0"]), abs=1e-9)


def test_compress_keeps_a_small_controller(four_by_three):
    model, solver = four_by_three
    ev = _system(model)
    C, tab = st.policy_graph(ev, solver.alphas_, solver.actions_)
    Ck, tk, v = st.compress(ev, C, tab, len(C) + 3, lambda t: ev.value(t["action"], t["eta"], t["m0"]))
    assert len(Ck) == len(C)
    assert v == pytest.approx(_independent_value(model, tab["action"], tab["eta"], 0), abs=1e-9)


@pytest.mark.parametrize("K", [2, 4])
def test_selection_is_the_best_candidate_and_above_blind(four_by_three, K):
    model, solver = four_by_three
    rc = RECAPController(n_memory=K, random_state=0).fit(model, alphas=solver)
    # the fit at the largest power of two below K is a candidate too (K = 4: the fit at 2)
    assert set(rc.start_values_) == {"growth", "policy_graph", "codebook"} | ({"smaller"} if K >= 3 else set())
    assert rc.value_ == pytest.approx(max(rc.start_values_.values()), abs=1e-9)
    assert rc.start_values_[rc.construction_] == pytest.approx(rc.value_, abs=1e-9)
    assert rc.value_ == pytest.approx(_independent_value(model, rc.action_, rc.eta_, rc.m0_), abs=1e-9)
    assert rc.value_ >= _blind_value(model) - 1e-9
    assert np.all(np.diff(rc.value_history_) >= -1e-9)
    assert rc.value_history_[-1] == pytest.approx(rc.value_, abs=1e-9)
    assert rc.n_memory_ <= K


def test_starts_off_is_growth(four_by_three):
    model, solver = four_by_three
    rc = RECAPController(n_memory=3, random_state=0, starts=False).fit(model, alphas=solver)
    assert rc.construction_ == "growth" and set(rc.start_values_) == {"growth"}
    with pytest.raises((TypeError, ValueError), match="starts"):
        RECAPController(n_memory=3, starts="yes").fit(model, alphas=solver)


def test_tiger_grid_K4_not_blind(tiger_grid):
    model, solver = tiger_grid
    blind = _blind_value(model)
    rc = RECAPController(n_memory=4, random_state=0).fit(model, alphas=solver)
    assert rc.n_memory_ > 1
    assert rc.value_ == pytest.approx(_independent_value(model, rc.action_, rc.eta_, rc.m0_), abs=1e-9)
    # well above the blind policy: at least 5 % of the span between it and the solver's bound
    assert rc.value_ >= blind + 0.05 * (solver.lower_bound_ - blind)


def test_tiger_small_models_reach_the_bound():
    model = tiger()
    solver = PointBasedSolver(time_limit=600.0, random_state=0).fit(model)
    rc = RECAPController(n_memory=8, random_state=0).fit(model, alphas=solver)
    assert rc.value_ >= 0.7 * solver.lower_bound_


def test_best_compression_exact_and_no_worse_than_each_schedule(four_by_three):
    model, solver = four_by_three
    ev = _system(model)
    C, tab = st.policy_graph(ev, solver.alphas_, solver.actions_)

    def value(t):
        return ev.value(t["action"], t["eta"], t["m0"])

    Ck, tk, v = st.best_compression(ev, C, tab, 3, value)
    assert len(Ck) == 3
    assert v == pytest.approx(_independent_value(model, tk["action"], tk["eta"], tk["m0"]), abs=1e-9)
    for batch, n_cand, _ in st.COMPRESSIONS:
        assert v >= st.compress(ev, C, tab, 3, value, n_cand, batch)[2] - 1e-9


# ---------------------------------------------------------------- bad input and the time budget
@pytest.fixture(scope="module")
def tiger95():
    from algos.datasets import load_pomdp

    model = load_pomdp("tiger.95")
    return model, PointBasedSolver(time_limit=600.0, random_state=0).fit(model)


@pytest.mark.parametrize("bad", [0, 0.0, -1.0])
def test_time_limit_not_positive_is_rejected(four_by_three, bad):
    model, solver = four_by_three
    with pytest.raises(ValueError, match="time_limit"):
        RECAPController(n_memory=3, time_limit=bad).fit(model, alphas=solver)


def test_time_limit_wrong_type_is_rejected(four_by_three):
    model, solver = four_by_three
    with pytest.raises(TypeError, match="time_limit"):
        RECAPController(n_memory=3, time_limit="10").fit(model, alphas=solver)


def test_time_limit_returns_the_best_so_far_with_a_warning(four_by_three):
    from sklearn.exceptions import ConvergenceWarning

    model, solver = four_by_three
    with pytest.warns(ConvergenceWarning, match="time_limit"):
        rc = RECAPController(n_memory=8, random_state=0, time_limit=1e-6).fit(model, alphas=solver)
    # a valid controller whose reported value is its exact value, at least the blind policy's
    assert 1 <= rc.n_memory_ <= 8 and rc.eta_.max() < rc.n_memory_
    assert rc.value_ == pytest.approx(_independent_value(model, rc.action_, rc.eta_, rc.m0_), abs=1e-9)
    assert rc.value_ >= _blind_value(model) - 1e-9


def test_no_time_warning_without_a_limit(four_by_three):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    model, solver = four_by_three
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        RECAPController(n_memory=3, random_state=0, time_limit=600.0).fit(model, alphas=solver)


def test_n_memory_above_reachable_beliefs_warns_and_returns_fewer_nodes(tiger95):
    model, solver = tiger95
    with pytest.warns(UserWarning, match="n_memory=16"):
        rc = RECAPController(n_memory=16, random_state=0).fit(model, alphas=solver)
    assert rc.n_memory_ < 16
    assert rc.n_memory_ <= max(rc.policy_graph_size_, rc.n_reachable_)
    assert rc.value_ >= solver.lower_bound_ - 1e-6


def test_alphas_from_another_model_are_rejected(tiger95):
    model, _ = tiger95
    other = read_pomdp(f"{DATA}/4x3.95.POMDP")
    solver = PointBasedSolver(time_limit=600.0, max_trials=5, random_state=0).fit(other)
    with pytest.raises(ValueError, match="alphas"):
        RECAPController(n_memory=2).fit(model, alphas=solver)  # a fitted solver
    with pytest.raises(ValueError, match="alphas"):
        RECAPController(n_memory=2).fit(model, alphas=solver.alphas_)  # its vectors


# ---------------------------------------------------------------- guarantees
def test_value_non_decreasing_in_K_on_the_same_vectors(four_by_three):
    model, solver = four_by_three
    blind = _blind_value(model)
    prev = -np.inf
    for K in (2, 4, 8):
        rc = RECAPController(n_memory=K, random_state=0).fit(model, alphas=solver)
        assert rc.value_ == pytest.approx(_independent_value(model, rc.action_, rc.eta_, rc.m0_), abs=1e-9)
        assert rc.value_ >= blind - 1e-9
        assert rc.value_ >= prev - 1e-9  # at least the fit at every smaller power of two
        # at least every K-node candidate it evaluated
        assert rc.value_ >= max(rc.start_values_.values()) - 1e-9
        prev = rc.value_


def test_tiger95_K4_reaches_the_best_deterministic_four_node_controller(tiger95):
    # listen; on one observation listen again and open on a confirmation, on the other go to a
    # second listening node that opens after two agreeing observations. An exhaustive search over
    # the 81 * 4**8 deterministic 4-node controllers (m0 = 0) finds no better value than this one.
    model, solver = tiger95
    action = np.array([0, 0, 1, 0])
    eta = np.array([[1, 3], [1, 1], [0, 0], [0, 2]])
    target = _independent_value(model, action, eta, 0)
    rc = RECAPController(n_memory=4, random_state=0).fit(model, alphas=solver)
    assert rc.n_memory_ <= 4
    assert rc.value_ >= target - 1e-9


# ---------------------------------------------------------------- steps shared with the smaller fit
def test_compression_polish_shared_between_sizes_is_the_fresh_one(four_by_three):
    """The staged schedule's first stage at K (compress to 2 K, polish) reuses the polish of the
    unstaged schedule at 2 K kept in ``trajectories``: the result equals a fresh run's, one polish fewer."""
    model, solver = four_by_three
    ev = _system(model)
    C, tab = st.policy_graph(ev, solver.alphas_, solver.actions_)
    est = RECAPController(n_memory=2, random_state=0)
    est._check_common(model)
    search = est._search(model)
    calls = []

    def value(t):
        return ev.value(t["action"], t["eta"], t["m0"])

    def polish(C_, t, v):
        calls.append(len(C_))
        return search._polish(model, C_, t, v, solver.alphas_)

    shared = {}
    st.best_compression(ev, C, tab, 4, value, polish, trajectories=shared)
    n_big = len(calls)
    Cs, ts, vs = st.best_compression(ev, C, tab, 2, value, polish, trajectories=shared)
    n_shared = len(calls) - n_big
    calls.clear()
    Cf, tf, vf = st.best_compression(ev, C, tab, 2, value, polish)
    assert n_shared == len(calls) - 1  # the 4-node polish of the staged schedule came from the cache
    assert vs == vf
    assert np.array_equal(Cs, Cf)
    for key in ("action", "eta", "eta_full", "m0"):
        assert np.array_equal(ts[key], tf[key])


def test_fit_resuming_the_smaller_fits_steps_equals_the_fit_without(four_by_three, monkeypatch):
    """Without a time budget the growth paths resume from the smaller fit's checkpoints (and share
    its restart sample); with one (never reached) every step runs: the same controller, bit for bit."""
    from algos.pomdp.recap._search import RecapSearch

    model, solver = four_by_three
    steps = []
    grow_step = RecapSearch._grow_step

    def counting(self, *args, **kwargs):
        steps.append(self.n_memory)
        return grow_step(self, *args, **kwargs)

    monkeypatch.setattr(RecapSearch, "_grow_step", counting)
    shared = RECAPController(n_memory=8, random_state=0).fit(model, alphas=solver)
    n_shared = len(steps)
    steps.clear()
    full = RECAPController(n_memory=8, random_state=0, time_limit=1e9).fit(model, alphas=solver)
    assert n_shared < len(steps)
    assert shared.value_ == full.value_ and shared.construction_ == full.construction_
    assert shared.start_values_ == full.start_values_
    for name in ("action_", "eta_", "eta_full_", "codebook_", "value_history_", "objective_history_"):
        assert np.array_equal(getattr(shared, name), getattr(full, name)), name
    assert shared.m0_ == full.m0_
    assert getattr(shared, "_checkpoints", None) is None  # not kept after the fit
