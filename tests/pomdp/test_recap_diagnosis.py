"""RECAP's diagnosis of blind controllers (``blind_``, ``blind_reason_``, ``certificate_``).

* On a Tiger whose listening is weak (accuracy 0.6) no controller with at most 3 nodes gains from
  listening: the blind controller is optimal among the deterministic 2-node controllers, which the
  exhaustive check proves (all 144 evaluated), while the solver (more memory) does better.
* On a Tiger whose listening is sharp (accuracy 0.99) RECAP's 3-node controller listens and opens:
  no diagnosis, no warning; and the diagnosis of the blind controller there is no false certificate
  (the exhaustive check finds the better controller).
"""

import warnings

import numpy as np
import pytest

from algos.pomdp import POMDP, PointBasedSolver, RECAPController, evaluate_fsc
from algos.pomdp.recap._diagnose import diagnose, exhaustive_best, is_blind


def _tiger(accuracy):
    T = np.empty((3, 2, 2))
    T[0] = np.eye(2)
    T[1:] = 0.5
    Z = np.empty((3, 2, 2))
    Z[0] = [[accuracy, 1 - accuracy], [1 - accuracy, accuracy]]
    Z[1:] = 0.5
    r = np.array([[-1.0, -100.0, 10.0], [-1.0, 10.0, -100.0]])
    return POMDP(T, Z, r, 0.95, np.array([0.5, 0.5]))


@pytest.fixture(scope="module")
def weak():
    model = _tiger(0.6)
    return model, PointBasedSolver(time_limit=2, target_gap=1e-2, random_state=0).fit(model)


@pytest.fixture(scope="module")
def sharp():
    model = _tiger(0.99)
    return model, PointBasedSolver(time_limit=2, target_gap=1e-2, random_state=0).fit(model)


def _fit(model, solver, K):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = RECAPController(n_memory=K, random_state=0, n_traj=50, n_samples=200).fit(model, alphas=solver)
    return est, [str(c.message) for c in caught if issubclass(c.category, UserWarning)]


def test_blind_optimal_at_two_nodes_is_certified(weak):
    model, solver = weak
    est, messages = _fit(model, solver, 2)
    lower = float(np.max(solver.alphas_ @ model.b0))
    assert est.blind_ and est.value_ < lower - 1.0  # blind, and well below the solver's lower bound
    cert = est.certificate_
    assert cert["kind"] == "blind" and cert["certified"]
    assert cert["exhaustive"]["n_controllers"] == (3 * 2 ** 2) ** 2
    assert cert["exhaustive"]["optimal"]
    assert cert["exhaustive"]["best_value"] <= est.value_ + 1e-9
    # the converse bound is a valid ceiling for this controller
    assert cert["converse"]["k_node_upper"] >= est.value_ - 1e-9
    assert "none beats this one" in est.blind_reason_ and "converse bound" in est.blind_reason_
    assert any("none beats this one" in m for m in messages)
    # independent check on a few observation-dependent 2-node controllers: none beats the blind one
    for a0, a1 in [(0, 1), (0, 2), (1, 0)]:
        for eta in ([[0, 1], [0, 0]], [[1, 0], [0, 0]], [[0, 1], [1, 1]]):
            v = evaluate_fsc(model, np.array([a0, a1]), np.array(eta), m0=0)
            assert v <= est.value_ + 1e-9


def test_sharp_listening_no_diagnosis(sharp):
    model, solver = sharp
    est, messages = _fit(model, solver, 3)
    assert not est.blind_
    assert est.blind_reason_ is None and est.certificate_ is None
    assert not any("blind" in m for m in messages)


def test_no_false_certificate_for_a_blind_controller_that_is_beaten(sharp):
    model, solver = sharp
    T, Z, r, g = model.T, model.Z, model.r, model.discount
    action, eta = np.array([0, 0, 0]), np.zeros((3, 2), dtype=np.int64)  # listen forever, 3 nodes
    assert is_blind(action, eta, 0)
    value = evaluate_fsc(model, action, eta, m0=0)
    lower = float(np.max(solver.alphas_ @ model.b0))
    reason, cert = diagnose(model, (T, Z, r, g), model.b0, action, eta, 0, value, value, lower, solver=solver)
    assert not cert["exhaustive"]["optimal"] and not cert["certified"]
    assert cert["exhaustive"]["best_value"] > value + 50
    assert "the best reaches" in reason
    best_v, (ba, be), _ = exhaustive_best(T, Z, r, g, model.b0, 3)
    assert abs(evaluate_fsc(model, ba, be, m0=0) - best_v) <= 1e-9


def test_exhaustive_check_skipped_above_size_rule(weak):
    model, solver = weak
    T, Z, r, g = model.T, model.Z, model.r, model.discount
    assert exhaustive_best(T, Z, r, g, model.b0, 4, max_controllers=1000) is None
    action, eta = np.zeros(4, dtype=np.int64), np.zeros((4, 2), dtype=np.int64)
    value = evaluate_fsc(model, action, eta, m0=0)
    reason, cert = diagnose(model, (T, Z, r, g), model.b0, action, eta, 0, value, value,
                            float(np.max(solver.alphas_ @ model.b0)), solver=solver, max_controllers=1000)
    assert cert["exhaustive"] is None and "no exhaustive check" in reason
    assert "(A K^O)^K <= 1000" in cert["size_rule"]
