"""RECAPController's interrupt support (``algos._anytime``) and its single-threaded BLAS.

* A ``KeyboardInterrupt`` raised inside the search (a search step raising on its n-th call) ends
  the fit with a valid controller: ``interrupted_`` is set, an ``InterruptedFitWarning`` is issued,
  the tables pass ``check_fsc``, ``value_`` is the exact value of the tables (an independent
  evaluation), at least the best blind policy's value, and at most the value of the uninterrupted fit.
* A SIGINT (what Ctrl-C sends) makes the search stop at its next check, the same way; a second
  SIGINT aborts the fit; the SIGINT handler is restored either way.
* During the search the BLAS libraries run one thread.
"""

import os
import signal
import warnings

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from algos._anytime import InterruptedFitWarning
from algos.pomdp import PointBasedSolver, RECAPController, read_pomdp
from algos.pomdp._beliefs import blind_policy_values, check_fsc, evaluate_fsc
from algos.pomdp.recap._search import RecapSearch

DATA = "/work/shared/data/pomdp"
K = 8
VALUE_ATOL = 1e-8


@pytest.fixture(scope="module")
def setup():
    model = read_pomdp(f"{DATA}/4x3.95.POMDP")
    solver = PointBasedSolver(time_limit=30, target_gap=1e-3, random_state=0).fit(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = RECAPController(n_memory=K, random_state=0).fit(model, alphas=solver)
    return model, solver, full


def _patch(monkeypatch, name, at, action):
    """Make ``RecapSearch.<name>`` run ``action()`` before its ``at``-th call."""
    original = getattr(RecapSearch, name)
    calls = [0]

    def step(self, *args, **kwargs):
        calls[0] += 1
        if calls[0] == at:
            action()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(RecapSearch, name, step)
    return calls


def _raise():
    raise KeyboardInterrupt


def _check_valid(model, est, full):
    assert check_fsc(est.action_, est.eta_, model.n_actions, model.n_observations).total
    assert 0 <= est.m0_ < est.n_memory_
    assert len(est.codebook_) == est.n_memory_ <= K
    assert abs(est.value_ - evaluate_fsc(model, est.action_, est.eta_, est.m0_)) <= VALUE_ATOL
    assert est.value_ >= blind_policy_values(model).best_value - VALUE_ATOL
    assert est.value_ <= full.value_ + VALUE_ATOL
    assert len(est.value_history_) == K
    assert np.all(np.diff(est.value_history_) >= -VALUE_ATOL)
    assert abs(est.value_history_[-1] - est.value_) <= VALUE_ATOL


def test_uninterrupted_fit_says_so(setup):
    _, _, full = setup
    assert full.interrupted_ is False


@pytest.mark.parametrize("name, at", [("_grow", 1), ("_polish", 3), ("_polish", 12), ("_grow", 25),
                                      ("_select_start", 1), ("_evaluate", 400)])
def test_keyboard_interrupt_in_the_search_keeps_the_best_controller_so_far(monkeypatch, setup, name, at):
    model, solver, full = setup
    calls = _patch(monkeypatch, name, at, _raise)
    before = signal.getsignal(signal.SIGINT)
    est = RECAPController(n_memory=K, random_state=0)
    with pytest.warns(InterruptedFitWarning, match="RECAPController was interrupted"):
        est.fit(model, alphas=solver)
    assert calls[0] == at  # the step raised, and the search stopped there
    assert est.interrupted_ is True
    assert signal.getsignal(signal.SIGINT) is before
    _check_valid(model, est, full)
    assert est.construction_ in ("growth", "policy_graph", "codebook", "smaller")
    assert est.start_values_ == {est.construction_: est.value_}


def test_interrupt_before_any_controller_is_settled_returns_the_blind_controller(monkeypatch, setup):
    model, solver, full = setup
    # the first step of the fit: the policy-graph start of the outer fit, which runs before the
    # smaller fits and the growth (so that a later stop has it)
    _patch(monkeypatch, "_graph_start", 1, _raise)
    est = RECAPController(n_memory=K, random_state=0)
    with pytest.warns(InterruptedFitWarning):
        est.fit(model, alphas=solver)
    assert est.n_memory_ == 1
    assert abs(est.value_ - blind_policy_values(model).best_value) <= VALUE_ATOL
    _check_valid(model, est, full)


def test_interrupt_after_the_policy_graph_start_keeps_it(monkeypatch, setup):
    model, solver, full = setup
    _patch(monkeypatch, "_build", 1, _raise)  # the first table build: the growth of the innermost smaller fit
    est = RECAPController(n_memory=K, random_state=0)
    with pytest.warns(InterruptedFitWarning):
        est.fit(model, alphas=solver)
    assert est.construction_ == "policy_graph"
    assert abs(est.value_ - full.start_values_["policy_graph"]) <= VALUE_ATOL
    _check_valid(model, est, full)


def test_sigint_stops_the_search_at_its_next_check(monkeypatch, setup):
    model, solver, full = setup
    _patch(monkeypatch, "_polish", 5, lambda: os.kill(os.getpid(), signal.SIGINT))
    before = signal.getsignal(signal.SIGINT)
    est = RECAPController(n_memory=K, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(model, alphas=solver)
    kinds = [c.category for c in caught]
    assert InterruptedFitWarning in kinds
    assert not any(issubclass(k, UserWarning) and k.__name__ == "ConvergenceWarning" for k in kinds)
    assert est.interrupted_ is True
    assert signal.getsignal(signal.SIGINT) is before
    _check_valid(model, est, full)


def test_a_second_sigint_aborts_the_fit(monkeypatch, setup):
    model, solver, _ = setup

    def twice():
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)

    _patch(monkeypatch, "_polish", 5, twice)
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        RECAPController(n_memory=K, random_state=0).fit(model, alphas=solver)
    assert signal.getsignal(signal.SIGINT) is before


def test_the_search_runs_single_threaded_blas(monkeypatch, setup):
    model, solver, _ = setup
    seen = []

    def look():
        seen.append([i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"])

    _patch(monkeypatch, "_polish", 1, look)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        RECAPController(n_memory=K, random_state=0).fit(model, alphas=solver)
    assert seen and seen[0] and all(n == 1 for n in seen[0])
