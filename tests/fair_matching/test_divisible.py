"""Divisible allocators: kernels against their numpy twins, invariants, limits, online protocol,
bad input."""

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from algos.fair_matching import (
    EqualFilling,
    OnlineMatchingInstance,
    ThresholdEqualFilling,
    WaterFilling,
    random_instance,
    triangular_instance,
)
from algos.fair_matching._pour_reference import tef_exact_reference, water_filling_reference
from algos.fair_matching.metrics import is_non_wasteful, usw_ratio
from tests.strategies import gammas, matching_instances
from theory.fair_matching import check_allocation

# Kernel vs bisection twin: the twin bisects 200 times (level exact to ~1e-16 relative) and both
# sum O(10) terms per item over <= 10 items, so 1e-12 leaves three orders of margin.
TWIN_ATOL = 1e-12
# Feasibility and non-wastefulness: float round-off on sums of <= 10 levels (spec pitfall tol).
FEAS_TOL = 1e-9


FAIR_RULES = st.sampled_from(["equal_split", "min_utility"])


@given(inst=matching_instances(), gamma=gammas(), rule=FAIR_RULES)
def test_exact_pour_matches_bisection_twin(inst, gamma, rule):
    est = ThresholdEqualFilling(gamma=gamma, fair_rule=rule).fit(inst)
    data, waste = tef_exact_reference(inst, gamma, fair_rule=rule)
    assert_allclose(est.allocation_.data, data, rtol=0, atol=TWIN_ATOL, err_msg="edge allocations")
    assert_allclose(est.wasted_, waste, rtol=0, atol=TWIN_ATOL, err_msg="wasted mass")


@given(inst=matching_instances())
def test_water_filling_matches_bisection_twin(inst):
    est = WaterFilling().fit(inst)
    data, waste = water_filling_reference(inst)
    assert_allclose(est.allocation_.data, data, rtol=0, atol=TWIN_ATOL)
    assert_allclose(est.wasted_, waste, rtol=0, atol=TWIN_ATOL)


@given(inst=matching_instances(), gamma=gammas(), exact=st.booleans(), rule=FAIR_RULES)
def test_allocation_certificate_and_state(inst, gamma, exact, rule):
    """Feasible, zero off edges, non-wasteful; fitted state agrees with the allocation."""
    est = ThresholdEqualFilling(gamma=gamma, fair_rule=rule, exact=exact, steps=40).fit(inst)
    X = est.allocation_
    cert = check_allocation(inst.biadjacency(), X, tol=FEAS_TOL)
    assert cert.ok, cert.violations
    assert is_non_wasteful(inst, X, tol=FEAS_TOL)
    loads = np.asarray(X.sum(axis=1)).ravel()
    assert_allclose(est.agent_load_, loads, atol=FEAS_TOL)
    assert_allclose(est.class_utility_, np.bincount(inst.agent_class, loads, minlength=inst.n_classes), atol=FEAS_TOL)
    assert_allclose(np.asarray(X.sum(axis=0)).ravel() + est.wasted_, 1.0, atol=FEAS_TOL)
    assert est.usw_ == pytest.approx(loads.sum(), abs=FEAS_TOL)


@given(inst=matching_instances())
def test_gamma_zero_is_water_filling(inst):
    a = ThresholdEqualFilling(gamma=0.0).fit(inst).allocation_
    b = WaterFilling().fit(inst).allocation_
    assert_array_equal(a.indices, b.indices)
    assert_allclose(a.data, b.data, rtol=0, atol=1e-12)


@given(inst=matching_instances(), gamma=gammas())
def test_gamma_one_is_equal_filling_and_fair_phase_splits_equally(inst, gamma):
    """gamma=1 is EQUAL-FILLING; and in the fair phase every class with a neighbour below gamma
    gets the same share of the item, unless all its neighbours reach gamma (it saturates)."""
    a = ThresholdEqualFilling(gamma=1.0).fit(inst)
    b = EqualFilling().fit(inst)
    assert_allclose(a.allocation_.data, b.allocation_.data, rtol=0, atol=0)
    est = ThresholdEqualFilling(gamma=gamma).fit(inst)
    X = est.allocation_
    x = np.zeros(inst.n_agents)
    for t in range(inst.n_items):
        nb = inst.neighbors(t)
        col = X[:, [t]].toarray().ravel()
        below = nb[x[nb] < gamma]
        # fair-phase share of each class: mass that went to agents while they were below gamma
        fair = np.minimum(col[below], gamma - x[below])
        share = np.bincount(inst.agent_class[below], fair, minlength=inst.n_classes)
        x[nb] += col[nb]
        eligible = np.unique(inst.agent_class[below])
        top = share[eligible].max() if eligible.size else 0.0
        for c in eligible:
            saturated = np.all(x[below[inst.agent_class[below] == c]] >= gamma - FEAS_TOL)
            assert saturated or share[c] >= top - 1e-9, (t, c, share, top)


@given(inst=matching_instances(), gamma=gammas(grid=False), rule=FAIR_RULES, data=st.data())
def test_relabelling_invariance(inst, gamma, rule, data):
    """Renaming agents inside classes or permuting class labels leaves the allocation unchanged
    up to the renaming (the exact pour needs no tie-breaking)."""
    agent_perm = np.asarray(data.draw(st.permutations(range(inst.n_agents))))
    class_perm = np.asarray(data.draw(st.permutations(range(inst.n_classes))))
    inst2 = inst.relabel(agent_perm=agent_perm, class_perm=class_perm)
    x1 = ThresholdEqualFilling(gamma=gamma, fair_rule=rule).fit(inst).agent_load_
    e2 = ThresholdEqualFilling(gamma=gamma, fair_rule=rule).fit(inst2)
    assert_allclose(e2.agent_load_[agent_perm], x1, rtol=0, atol=1e-9)
    u1 = np.bincount(inst.agent_class, x1, minlength=inst.n_classes)
    assert_allclose(e2.class_utility_[class_perm], u1, rtol=0, atol=1e-9)


@settings(max_examples=15)
@given(inst=matching_instances(), gamma=gammas(), steps=st.sampled_from([50, 400]), rule=FAIR_RULES)
def test_discretised_pour_converges_to_exact(inst, gamma, steps, rule):
    """Each item's discretised pour differs from the exact one by O(1/steps) in level terms; the
    difference feeds forward, so we bound the total-mass gap by (n_items + 1) * 2 / steps."""
    exact = ThresholdEqualFilling(gamma=gamma, fair_rule=rule).fit(inst)
    disc = ThresholdEqualFilling(gamma=gamma, fair_rule=rule, exact=False, steps=steps).fit(inst)
    gap = abs(exact.usw_ - disc.usw_)
    note(f"usw exact={exact.usw_:.6f} disc={disc.usw_:.6f}")
    assert gap <= (inst.n_items + 1) * 2.0 / steps


def test_partial_fit_chunks_equal_fit_bit_for_bit():
    inst = random_instance(30, 200, n_classes=3, p=0.1, random_state=3)
    full = ThresholdEqualFilling(gamma=0.4).fit(inst)
    online = ThresholdEqualFilling(gamma=0.4)
    items = inst.item_neighbors
    online.partial_fit(items[0], agent_class=inst.agent_class)  # one item as a flat id list
    online.partial_fit(items[1:50])
    for nb in items[50:120]:
        online.partial_fit(list(nb))
    online.partial_fit(inst.prefix(200).item_neighbors[120:])
    assert online.n_items_seen_ == 200
    assert_array_equal(online.allocation_.data, full.allocation_.data)
    assert_array_equal(online.allocation_.indptr, full.allocation_.indptr)
    assert_array_equal(online.agent_load_, full.agent_load_)
    assert_array_equal(online.wasted_, full.wasted_)


def test_predict_returns_the_new_rows():
    inst = random_instance(10, 20, n_classes=2, p=0.3, random_state=1)
    est = ThresholdEqualFilling(gamma=0.5).fit(inst.prefix(10))
    row = est.predict(inst.neighbors(10))
    assert row.shape == (10,)
    rows = est.predict(inst.item_neighbors[11:])
    assert rows.shape == (9, 10)
    full = ThresholdEqualFilling(gamma=0.5).fit(inst).allocation_.toarray()
    assert_allclose(row, full[:, 10], atol=0)
    assert_allclose(rows, full[:, 11:].T, atol=0)


def test_items_without_neighbours_are_wasted():
    inst = OnlineMatchingInstance(2, [0, 1], [[], [0], []])
    est = ThresholdEqualFilling(gamma=0.5).fit(inst)
    assert_allclose(est.wasted_, [1.0, 0.0, 1.0])
    assert_allclose(est.agent_load_, [1.0, 0.0])


def test_hand_computed_two_classes():
    """Class 0 = {0}, class 1 = {1, 2}; gamma = 0.5 (both fair rules agree here).

    Item 0 liked by all: both classes start at 0 and rise together (class 0's room below gamma is
    0.5, class 1's is 1.0): each gets 0.5, agent 0 -> 0.5, agents 1, 2 -> 0.25 each.
    Item 1 liked by 0 and 1: below gamma are 0 (no: 0 is at 0.5, not below) and 1 (0.25);
    class 1 gets 0.25 (agent 1 -> 0.5); the remaining 0.75 water-fills agents 0 (0.5) and 1
    (0.5) to 0.875 each.
    """
    inst = OnlineMatchingInstance(3, [0, 1, 1], [[0, 1, 2], [0, 1]])
    for rule in ("equal_split", "min_utility"):
        X = ThresholdEqualFilling(gamma=0.5, fair_rule=rule).fit(inst).allocation_.toarray()
        assert_allclose(X[:, 0], [0.5, 0.25, 0.25], atol=1e-15)
        assert_allclose(X[:, 1], [0.375, 0.625, 0.0], atol=1e-15)


# Agents 0-2 in class 1, agents 3-4 in class 0. Item 0 is wanted only by agent 4.
COUNTER = ([1, 1, 1, 0, 0], [[4], [0, 1, 3, 4], [0, 1, 2], [1, 4], [0, 4], [2, 4]])


def test_hand_computed_rules_differ_on_counterexample():
    """gamma = 1. Item 1 ({0, 1, 3, 4}): class 0 has u = 1 (from item 0), class 1 has u = 0.

    * min utility: all of item 1 to class 1 (agents 0, 1 -> 0.5); item 2 raises agent 2 to 0.5,
      then all three by 1/6; items 3-5 top agents 1, 0, 2 up by 1/3 each.
    * equal split: item 1 is halved: agent 3 -> 0.5, agents 0, 1 -> 0.25; item 2 brings agent 2
      to 0.25 then all three to 0.5; items 3-5 each give 0.5 to agents 1, 0, 2.
    """
    inst = OnlineMatchingInstance(5, *COUNTER)
    X = ThresholdEqualFilling(gamma=1.0, fair_rule="min_utility").fit(inst).allocation_.toarray()
    assert_allclose(X[:, 1], [0.5, 0.5, 0, 0, 0], atol=1e-15)
    assert_allclose(X.sum(axis=1), [1, 1, 1, 0, 1], atol=1e-12)
    X = ThresholdEqualFilling(gamma=1.0).fit(inst).allocation_.toarray()
    assert_allclose(X[:, 1], [0.25, 0.25, 0, 0.5, 0], atol=1e-15)
    assert_allclose(X[:, 3:].sum(axis=0), [0.5, 0.5, 0.5], atol=1e-15)
    assert_allclose(X.sum(axis=1), [1, 1, 1, 0.5, 1], atol=1e-12)


def test_water_filling_on_triangle_is_one_minus_one_over_e():
    """Spec acceptance 8.2: on the KVV triangle with n = 200, BALANCE reaches 1 - 1/e +- 0.01."""
    inst = triangular_instance(200)
    r = usw_ratio(inst, WaterFilling().fit(inst).allocation_)
    assert abs(r - (1 - np.exp(-1))) <= 0.01


def test_same_seed_same_result_random_tie_break():
    inst = random_instance(12, 30, n_classes=4, p=0.4, random_state=2)
    a = ThresholdEqualFilling(gamma=0.7, exact=False, steps=30, tie_break="random", random_state=5).fit(inst)
    b = clone(a).fit(inst)
    assert_array_equal(a.allocation_.data, b.allocation_.data)


def test_sklearn_contract():
    est = ThresholdEqualFilling(gamma=0.2)
    with pytest.raises(NotFittedError):
        est.allocation_
    with pytest.raises(NotFittedError):
        est.predict([0])
    inst = random_instance(5, 5, random_state=0)
    assert est.fit(inst) is est
    assert est.get_params()["gamma"] == 0.2
    assert "gamma" not in EqualFilling().get_params()
    assert clone(est).get_params() == est.get_params()


@pytest.mark.parametrize(
    "params, exc, match",
    [
        ({"gamma": 1.5}, ValueError, r"'gamma' must be a float in \[0, 1\]; got 1.5"),
        ({"gamma": -0.1}, ValueError, r"'gamma' must be a float in \[0, 1\]"),
        ({"gamma": float("nan")}, ValueError, r"'gamma'"),
        ({"gamma": "0.5"}, TypeError, r"'gamma' must be a float"),
        ({"steps": 0}, ValueError, r"'steps' must be an int in \[1, inf\]"),
        ({"exact": "yes"}, TypeError, r"'exact' must be a bool"),
        ({"tie_break": "first"}, ValueError, r"'tie_break' must be one of"),
    ],
)
def test_bad_parameters(params, exc, match):
    inst = random_instance(4, 3, random_state=0)
    with pytest.raises(exc, match=match):
        ThresholdEqualFilling(**params).fit(inst)


def test_bad_inputs():
    with pytest.raises(TypeError, match="OnlineMatchingInstance"):
        ThresholdEqualFilling().fit(np.ones((3, 3)))
    with pytest.raises(ValueError, match="'agent_class' must be given"):
        ThresholdEqualFilling().partial_fit([0, 1])
    est = ThresholdEqualFilling().partial_fit([0, 1], agent_class=[0, 1])
    with pytest.raises(ValueError, match=r"agent ids must be in \[0, 1\]"):
        est.partial_fit([0, 5])
    with pytest.raises(TypeError, match="integers"):
        est.partial_fit([0.5])
    with pytest.raises(ValueError, match="class 1 has no agent"):
        OnlineMatchingInstance(3, [0, 2, 2], [[0]])
    with pytest.raises(TypeError, match="'agent_class' must contain integers"):
        OnlineMatchingInstance(2, [0.5, 1], [[0]])
    with pytest.raises(ValueError, match=r"item 1 lists agent -1"):
        OnlineMatchingInstance(2, [0, 1], [[0], [-1]])


def test_neighbour_lists_are_canonicalised():
    inst = OnlineMatchingInstance(3, [0, 1, 1], [[2, 0, 2, 1], [1, 1]])
    assert_array_equal(inst.neighbors(0), [0, 1, 2])
    assert_array_equal(inst.neighbors(1), [1])
    est = ThresholdEqualFilling(gamma=0.5).fit(inst)
    assert est.allocation_.nnz == 4


def test_single_class_is_allowed():
    inst = OnlineMatchingInstance(3, [0, 0, 0], [[0, 1], [1, 2]])
    est = ThresholdEqualFilling(gamma=0.5).fit(inst)
    w = WaterFilling().fit(inst)
    # one class: the fair phase is water-filling capped at gamma, then water-filling: the same
    # as BALANCE on this instance (levels stay equal among neighbours)
    assert_allclose(est.agent_load_, w.agent_load_, atol=1e-12)
