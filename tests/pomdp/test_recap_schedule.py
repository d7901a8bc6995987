"""RECAP's growth schedule, incremental growth tables and node-subset polish.

* ``schedule="doubling"`` gives the full treatment (refinement, polish of every node, restarts,
  merge) at K = 1, 2, 4, 8, ... and from ``n_memory`` on; ``"every"`` at every K.
* A growth step (``_grow``) never returns tables below the current value, and the value it reports
  is the exact value of the tables it returns; when the quantiser tables of the grown codebook lose
  value, the incremental tables (the current ones plus the new node) are what it returns.
* ``_polish(nodes=...)`` changes only the rows of the nodes it visits, and its value is exact.
* Fits under both schedules report exact values with non-decreasing histories; ``schedule`` is
  validated with a message naming it.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import pomdps
from algos.pomdp._beliefs import _b0, evaluate_fsc
from algos.pomdp._builtin import tiger
from algos.pomdp._pbvi import PBVI
from algos.pomdp._recap import RECAPController

VALUE_ATOL = 1e-9  # exact solves of systems with at most 30 unknowns: round-off only


def test_full_steps_of_each_schedule():
    est = RECAPController(n_memory=12, schedule="doubling")
    assert [K for K in range(1, 15) if est._full_step(K)] == [1, 2, 4, 8, 12, 13, 14]
    est = RECAPController(n_memory=12, schedule="every")
    assert all(est._full_step(K) for K in range(1, 15))
    assert est._local_variants() == ("touched",)
    assert RECAPController(schedule="doubling")._local_variants() == ("parent", "touched")


def _codebook_case(model, rng, K, n_alphas):
    """Random alpha vectors, a K-word codebook starting at b0, its quantiser tables and their value."""
    S = model.n_states
    est = RECAPController()
    alphas = rng.normal(size=(n_alphas, S))
    C = np.vstack([_b0(model, None, S), rng.dirichlet(np.ones(S), size=K - 1)])
    tab = est._build(model, C, alphas)
    return est, alphas, C, tab, evaluate_fsc(model, tab["action"], tab["eta"], tab["m0"])


@settings(max_examples=30, deadline=None)
@given(pomdps(max_states=5, max_actions=3, max_observations=3, with_rng=True), st.integers(2, 5))
def test_grow_never_loses_value_and_reports_exact_values(case, K):
    model, rng = case
    S = model.n_states
    est, alphas, C, tab, _ = _codebook_case(model, rng, K, 4)
    # a random (not quantiser) table, so that the current tables differ from any rebuild
    tab["action"] = rng.integers(0, model.n_actions, K)
    tab["eta"] = rng.integers(0, K, (K, model.n_observations))
    tab["eta_full"] = np.repeat(tab["eta"][:, None, :], model.n_actions, axis=1)
    value = evaluate_fsc(model, tab["action"], tab["eta"], tab["m0"])
    cand = (rng.dirichlet(np.ones(S)), (int(rng.integers(0, K)), int(rng.integers(0, model.n_observations))))
    C2, new, v = est._grow(model, C, tab, value, cand, alphas)
    assert len(C2) == K + 1 and len(new["action"]) == K + 1
    assert abs(v - evaluate_fsc(model, new["action"], new["eta"], new["m0"])) <= VALUE_ATOL
    assert v >= value - VALUE_ATOL
    np.testing.assert_array_equal(new["eta_full"][np.arange(K + 1), new["action"]], new["eta"])


def test_grow_keeps_the_polished_tables_when_the_rebuild_loses():
    """Tiger: the 5-node controller at the best known value 19.371 (the codebook closes at 5),
    grown by the codeword (0.5, 0.5), whose quantiser tables fall to -10.0; the grown tables keep
    the 5 fitted rows and the value."""
    p = tiger()
    pb = PBVI(random_state=0).fit(p)
    est = RECAPController(n_memory=6, random_state=0, merge=False).fit(p, alphas=pb)
    C = est.codebook_
    n = len(C)
    assert n == 5 and est.value_ > 19.37
    tab = dict(action=est.action_.copy(), eta=est.eta_.copy(), eta_full=est.eta_full_.copy(), m0=est.m0_)
    rebuilt = est._build(p, np.vstack([C, [[0.5, 0.5]]]), est.alphas_)
    v_rebuilt = evaluate_fsc(p, rebuilt["action"], rebuilt["eta"], rebuilt["m0"])
    assert v_rebuilt < est.value_ - 1e-6  # the quantiser alone would lose value here
    C2, new, v = est._grow(p, C, tab, est.value_, (np.array([0.5, 0.5]), (0, 0)), est.alphas_)
    assert v >= est.value_ - VALUE_ATOL
    np.testing.assert_array_equal(new["action"][:n], est.action_)
    assert np.all(new["eta"][:n] <= n)  # the fitted rows, possibly with an edge into the new node


@settings(max_examples=25, deadline=None)
@given(pomdps(max_states=4, max_actions=3, max_observations=3, with_rng=True), st.integers(3, 5))
def test_polish_on_a_node_subset_changes_only_those_rows(case, K):
    model, rng = case
    est, alphas, C, tab, value = _codebook_case(model, rng, K, 3)
    nodes = sorted(rng.choice(K, size=2, replace=False).tolist())
    out, v = est._polish(model, C, tab, value, alphas, nodes=nodes)
    other = np.setdiff1d(np.arange(K), nodes)
    np.testing.assert_array_equal(out["action"][other], tab["action"][other])
    np.testing.assert_array_equal(out["eta"][other], tab["eta"][other])
    assert v >= value - VALUE_ATOL
    assert abs(v - evaluate_fsc(model, out["action"], out["eta"], out["m0"])) <= VALUE_ATOL


@pytest.mark.parametrize("schedule", ["doubling", "every"])
def test_fits_under_both_schedules_are_exact_and_monotone(schedule):
    p = tiger()
    pb = PBVI(random_state=0).fit(p)
    est = RECAPController(n_memory=6, random_state=0, schedule=schedule).fit(p, alphas=pb)
    assert abs(est.value_ - evaluate_fsc(p, est.action_, est.eta_, est.m0_)) <= VALUE_ATOL
    assert len(est.value_history_) == 6
    assert np.all(np.diff(est.value_history_) >= -VALUE_ATOL)
    assert est.value_ >= 19.37 - 1e-3 * 19.37  # Tiger's best known value (19.371) by K = 6


def test_schedule_is_validated():
    with pytest.raises(ValueError, match="schedule"):
        RECAPController(n_memory=2, schedule="sometimes").fit(tiger(), alphas=np.zeros((1, 2)))
