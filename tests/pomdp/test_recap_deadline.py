"""RECAPController's ``time_limit`` is honoured inside the steps that can run long.

The fit's clocks (``time.process_time`` and ``time.perf_counter`` as ``algos.pomdp.recap._recap`` sees them) is replaced
by a fake one that jumps past the deadline inside a step: during the first belief simulation of a refinement (the
step that ran for minutes on RockSample(5, 5)), or while the policy graph is being built. The fit
must then stop at its next check: no belief simulation (refinement, restart sample or
reachable-belief start) and no growth step runs after the jump, a ``ConvergenceWarning`` says the
budget ran out, and the controller returned is valid, of exact value at least the best blind
policy's, and (when the policy-graph start was settled before the jump) at least that start's value.
No timing is measured: the clock only moves when the test moves it.
"""

import types
import warnings

import pytest
from sklearn.exceptions import ConvergenceWarning

from algos.pomdp import PointBasedSolver, RECAPController, _kernels, read_pomdp
from algos.pomdp._beliefs import blind_policy_values, check_fsc, evaluate_fsc
from algos.pomdp.recap import _codebook, _recap
from algos.pomdp.recap import _search as _recap_search
from algos.pomdp.recap import _starts as _recap_starts

DATA = "/work/shared/data/pomdp"
K = 8
VALUE_ATOL = 1e-8
LATE = 1e9  # the fake clock after the jump: far past any deadline


@pytest.fixture(scope="module")
def setup():
    model = read_pomdp(f"{DATA}/4x3.95.POMDP")
    solver = PointBasedSolver(time_limit=30, target_gap=1e-3, random_state=0).fit(model)
    return model, solver


class _Trace:
    """A fake clock for ``_recap`` and counters of the long steps run after it jumped."""

    def __init__(self):
        self.now = 0.0
        self.jumped = False
        self.after = {"simulate_beliefs": 0, "_grow": 0}

    def perf_counter(self):
        return self.now

    def jump(self):
        self.now, self.jumped = LATE, True


def _install(monkeypatch, trace, where):
    # both clocks (time_limit counts CPU time by default, wall time with clock="wall")
    monkeypatch.setattr(_recap, "time", types.SimpleNamespace(perf_counter=trace.perf_counter,
                                                               process_time=trace.perf_counter))
    original = _codebook.simulate_beliefs

    def simulate(*args, _from=None, **kwargs):
        if trace.jumped:
            trace.after["simulate_beliefs"] += 1
        out = original(*args, **kwargs)
        if _from == "refine" and where == "refine" and not trace.jumped:
            trace.jump()  # the deadline passes during the refinement's simulation
        return out

    monkeypatch.setattr(_recap_search, "simulate_beliefs", lambda *a, **k: simulate(*a, _from="refine", **k))
    monkeypatch.setattr(_recap_starts, "simulate_beliefs", lambda *a, **k: simulate(*a, _from="starts", **k))
    monkeypatch.setattr(_recap, "simulate_beliefs", lambda *a, **k: simulate(*a, _from="restart", **k))

    grow = _recap_search.RecapSearch._grow

    def counted_grow(self, *args, **kwargs):
        if trace.jumped:
            trace.after["_grow"] += 1
        return grow(self, *args, **kwargs)

    monkeypatch.setattr(_recap_search.RecapSearch, "_grow", counted_grow)
    if where == "policy_graph":
        successors = _kernels.belief_successors
        calls = [0]

        def jumping(*args, **kwargs):
            calls[0] += 1
            if calls[0] == 2:  # the second node of the policy graph is being expanded
                trace.jump()
            return successors(*args, **kwargs)

        monkeypatch.setattr(_kernels, "belief_successors", jumping)


@pytest.mark.parametrize("where", ["refine", "policy_graph"])
def test_time_limit_stops_the_fit_at_the_next_check(monkeypatch, setup, where):
    model, solver = setup
    trace = _Trace()
    _install(monkeypatch, trace, where)
    est = RECAPController(n_memory=K, random_state=0, time_limit=100.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(model, alphas=solver)
    assert trace.jumped
    assert trace.after == {"simulate_beliefs": 0, "_grow": 0}
    assert any(issubclass(c.category, ConvergenceWarning) and "time_limit" in str(c.message) for c in caught)
    assert check_fsc(est.action_, est.eta_, model.n_actions, model.n_observations).total
    assert 1 <= est.n_memory_ <= K
    assert abs(est.value_ - evaluate_fsc(model, est.action_, est.eta_, est.m0_)) <= VALUE_ATOL
    assert est.value_ >= blind_policy_values(model).best_value - VALUE_ATOL
    if where == "refine":  # the policy-graph start was settled before the jump, and is kept
        assert "policy_graph" in est.start_values_
        assert est.value_ >= est.start_values_["policy_graph"] - VALUE_ATOL
        graph = RECAPController(n_memory=K, random_state=0, restart=False).fit(model, alphas=solver)
        assert est.value_ >= graph.start_values_["policy_graph"] - VALUE_ATOL


@pytest.mark.parametrize("clock", ["cpu", "wall"])
def test_time_limit_counts_on_the_chosen_clock(monkeypatch, setup, clock):
    """Only the chosen clock jumps past the deadline during the refinement: the fit stops; the
    other clock jumping does nothing (the search runs to its end, no ConvergenceWarning)."""
    model, solver = setup
    for jumping_clock, stops in ((clock, True), ({"cpu": "wall", "wall": "cpu"}[clock], False)):
        trace, still = _Trace(), _Trace()
        _install(monkeypatch, trace, "refine")
        clocks = {"cpu": trace.perf_counter, "wall": still.perf_counter}
        if jumping_clock == "wall":
            clocks = {"cpu": still.perf_counter, "wall": trace.perf_counter}
        monkeypatch.setattr(_recap, "time", types.SimpleNamespace(process_time=clocks["cpu"],
                                                                   perf_counter=clocks["wall"]))
        est = RECAPController(n_memory=K, random_state=0, time_limit=100.0, clock=clock)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(model, alphas=solver)
        ran_out = any(issubclass(c.category, ConvergenceWarning) and "time_limit" in str(c.message)
                      for c in caught)
        assert trace.jumped and ran_out == stops, (clock, jumping_clock)
        if stops:
            assert trace.after == {"simulate_beliefs": 0, "_grow": 0}
        else:
            assert trace.after["simulate_beliefs"] + trace.after["_grow"] > 0


def test_unknown_clock_is_rejected(setup):
    model, solver = setup
    with pytest.raises(ValueError, match="clock"):
        RECAPController(n_memory=2, clock="gpu").fit(model, alphas=solver)
