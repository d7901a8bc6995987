"""``ThresholdEqualFilling()`` with its documented default threshold ``gamma=0.5``.

The guarantees (T1, T2) are tested elsewhere for explicit thresholds; here the estimator built
with no argument must behave as ``gamma=0.5`` and meet the guarantees at 0.5, on an instance where
a smaller threshold would not (CEF 1/3 at gamma = 0.3, below 1 - e^{-0.5} = 0.393).
"""

import numpy as np
import pytest
from hypothesis import given, settings

from algos.fair_matching import OnlineMatchingInstance, ThresholdEqualFilling
from algos.fair_matching.metrics import cef_ratio, opt_matching_size, usw_ratio
from tests.strategies import matching_instances
from theory.fair_matching import cef_lower_bound, usw_lower_bound

EXACT_ATOL = 1e-7  # as in tests/fair_matching/test_bounds.py: float round-off of the exact pour
DEFAULT_GAMMA = 0.5  # the documented default


def _instance():
    """Agents 0..5 of classes (0, 0, 0, 2, 1, 0); item 0 wants agents {0, 4, 5}, item 1 {1, 2, 3, 4}."""
    return OnlineMatchingInstance(6, [0, 0, 0, 2, 1, 0], [[0, 4, 5], [1, 2, 3, 4]])


def test_default_threshold_is_documented_value():
    assert ThresholdEqualFilling().get_params()["gamma"] == DEFAULT_GAMMA


def test_default_meets_the_guarantees_at_one_half_on_a_hand_computed_instance():
    """Hand computation at gamma = 1/2. Item 0: classes 0 and 1 share it at equal rates; class 1's
    only agent 4 reaches 1/2 when the item is used up, class 0 water-fills agents 0 and 5 to 1/4.
    Item 1: agent 4 is at the threshold, so classes 0 (agents 1, 2) and 2 (agent 3) share it:
    agent 3 gets 1/2, agents 1 and 2 get 1/4. Class 1 holds 1/2 and values class 0's bundle at
    min(1, 1/2 + 1/2) = 1: CEF = 1/2 >= 1 - e^{-1/2}. (At gamma = 0.3 every agent ends at 1/3 and
    the CEF is 1/3, below that bound.)"""
    inst = _instance()
    X = ThresholdEqualFilling().fit(inst).allocation_
    want = np.array([[0.25, 0.0], [0.0, 0.25], [0.0, 0.25], [0.0, 0.5], [0.5, 0.0], [0.25, 0.0]])
    np.testing.assert_allclose(X.toarray(), want, rtol=0, atol=1e-12)
    cef = cef_ratio(inst, X)
    assert cef == pytest.approx(0.5, abs=1e-12)
    assert cef >= cef_lower_bound(DEFAULT_GAMMA) - EXACT_ATOL
    assert usw_ratio(inst, X) >= usw_lower_bound(DEFAULT_GAMMA) - EXACT_ATOL
    low = ThresholdEqualFilling(gamma=0.3).fit(inst).allocation_
    np.testing.assert_allclose(low.toarray(), np.where(want > 0, 1.0 / 3.0, 0.0), rtol=0, atol=1e-12)
    assert cef_ratio(inst, low) == pytest.approx(1.0 / 3.0, abs=1e-12)
    assert 1.0 / 3.0 < cef_lower_bound(DEFAULT_GAMMA)  # the instance separates the two thresholds


@settings(max_examples=30)
@given(inst=matching_instances())
def test_default_equals_explicit_one_half(inst):
    X = ThresholdEqualFilling().fit(inst).allocation_.toarray()
    Y = ThresholdEqualFilling(gamma=DEFAULT_GAMMA).fit(inst).allocation_.toarray()
    np.testing.assert_array_equal(X, Y)
    assert cef_ratio(inst, X) >= cef_lower_bound(DEFAULT_GAMMA) - EXACT_ATOL
    if opt_matching_size(inst):
        assert usw_ratio(inst, X) >= usw_lower_bound(DEFAULT_GAMMA) - EXACT_ATOL
