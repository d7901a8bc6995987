"""An interrupt stops the whole fit, whatever phase it lands in.

Each long fit is interrupted at several points of its run (set-up, first iterations, late; for the
nested fits, inside the inner fit): a real SIGINT (what Ctrl-C sends) is delivered to the process
before the k-th call of one internal step (the step is monkeypatched in the test). The fit must
then end soon, and either

* return fitted, with ``interrupted_ is True``, an ``InterruptedFitWarning`` and a usable estimator
  (its value, policy or prediction is computed and valid), or
* raise ``KeyboardInterrupt`` with the estimator cleanly unfitted (``check_is_fitted`` raises
  ``NotFittedError``; a previous fit is dropped, never left half-overwritten).

The wall time from the interrupt to the end of the fit is measured only to bound it generously
(``STOP_BOUND_S``): an interrupt that an outer fit ignored would run the fit to its end (a solver
given a 60 s budget, a search of many steps), far beyond it.
"""

import math
import os
import signal
import time
import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from algos._anytime import InterruptedFitWarning, Interruptible, is_interrupt, unfitted_on_interrupt
from algos.pomdp import PBVI, PointBasedSolver, RECAPController, read_pomdp, tiger
from algos.pomdp._beliefs import check_fsc, evaluate_fsc
from algos.pomdp.recap._search import RecapSearch
from algos.pomdp.solvers import _pbs, _pbvi
from algos.pomdp.solvers._pbs_engines import _NumbaEngine

DATA = "/work/shared/data/pomdp"
STOP_BOUND_S = 10.0  # generous: the target is 2 s, a missed interrupt runs the whole fit (60 s and more)
VALUE_ATOL = 1e-8


class _At:
    """Before the ``at``-th call of ``owner.name`` (monkeypatched), run ``action`` (send a SIGINT or
    raise); remembers when it fired."""

    def __init__(self, monkeypatch, owner, name, at, action="sigint", times=1):
        self.fn, self.at, self.calls, self.fired_at = getattr(owner, name), at, 0, None
        self.action, self.times = action, times
        is_static = isinstance(owner, type) and isinstance(vars(owner).get(name), staticmethod)
        wrapper = self.__call__
        monkeypatch.setattr(owner, name, staticmethod(wrapper) if is_static else
                            (wrapper if not isinstance(owner, type) else lambda *a, **k: wrapper(*a, **k)))

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls == self.at:
            self.fired_at = time.perf_counter()
            if self.action == "raise":
                raise KeyboardInterrupt
            for _ in range(self.times):
                os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C sends; handled at the next bytecode
        return self.fn(*args, **kwargs)


def _interrupted(est, fit, hook):
    """Run ``fit()``; returns ``"fitted"`` (with the warnings checked) or ``"unfitted"``."""
    before = signal.getsignal(signal.SIGINT)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit()
        outcome = "fitted"
    except KeyboardInterrupt:
        outcome = "unfitted"
    end = time.perf_counter()
    assert hook.fired_at is not None, "the interrupt was not delivered: the hooked step did not run"
    assert end - hook.fired_at < STOP_BOUND_S
    assert signal.getsignal(signal.SIGINT) is before  # every handler restored
    if outcome == "fitted":
        assert est.interrupted_ is True
        assert any(issubclass(w.category, InterruptedFitWarning) for w in caught)
        check_is_fitted(est)
    else:
        assert not [k for k in vars(est) if k.endswith("_") and not k.startswith("_")]
        with pytest.raises(NotFittedError):
            check_is_fitted(est)
    return outcome


# ------------------------------------------------------------------ the mechanism
def test_a_run_nested_in_an_interrupted_run_stops_and_marks_its_parents():
    outer = Interruptible("outer", defer=True)
    with outer:
        os.kill(os.getpid(), signal.SIGINT)  # the outer (deferred) run receives it
        assert outer.requested
        inner = Interruptible("inner")
        with inner:
            for k in range(100):
                inner.checkpoint(k=k)  # the first checkpoint in the block raises
        assert inner.interrupted and inner.state == {"k": 0}
        deferred = Interruptible("deferred", defer=True)
        with deferred:
            assert deferred.requested
    # an inner loop that catches its own interrupt marks the enclosing run
    outer = Interruptible("outer", defer=True)
    with outer:
        with Interruptible("inner") as inner:
            inner.checkpoint(k=0)
            raise KeyboardInterrupt
        assert inner.interrupted and outer.requested


def test_unfitted_on_interrupt_removes_fitted_attributes_and_reraises():
    class Est:
        pass

    est = Est()
    est.old_, est._private, est.param = 1, 2, 3
    with pytest.raises(KeyboardInterrupt):
        with unfitted_on_interrupt(est):
            est.coef_ = 1.0
            raise KeyboardInterrupt
    assert vars(est) == {"_private": 2, "param": 3}
    with pytest.raises(ValueError):  # other errors pass through untouched
        with unfitted_on_interrupt(est):
            est.coef_ = 1.0
            raise ValueError("x")
    assert est.coef_ == 1.0



def test_an_interrupt_reported_by_a_compiled_function_as_system_error_is_an_interrupt():
    """numba reports a SIGINT's KeyboardInterrupt set during a compiled call as a SystemError."""
    class Est:
        pass

    est = Est()
    with pytest.raises(KeyboardInterrupt):
        with unfitted_on_interrupt(est):
            est.coef_ = 1.0
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as ki:
                raise SystemError("returned a result with an exception set") from ki
    assert not hasattr(est, "coef_")
    assert not is_interrupt(SystemError("other")) and is_interrupt(KeyboardInterrupt())
    run = Interruptible("loop")
    with run:  # swallowed like a KeyboardInterrupt, the state restored
        run.checkpoint(k=1)
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as ki:
            raise SystemError("returned a result with an exception set") from ki
    assert run.interrupted and run.state == {"k": 1}
    with pytest.raises(SystemError):  # any other SystemError passes through
        with unfitted_on_interrupt(est):
            raise SystemError("other")


# ------------------------------------------------------------------ PointBasedSolver
def _check_pbs(model, est):
    b0 = model.b0
    assert est.lower_bound_ <= est.upper_bound_ + VALUE_ATOL
    assert abs(est.value(b0) - est.lower_bound_) <= 1e-6
    assert 0 <= est.policy(b0) < model.n_actions


@pytest.mark.parametrize("phase, owner, name, at", [
    ("set-up (fast informed bound)", _pbs, "fib_sparse", 1),
    ("first trial", _NumbaEngine, "trial", 1),
    ("late trial", _NumbaEngine, "trial", 40),
])
def test_point_based_solver(monkeypatch, phase, owner, name, at):
    model = read_pomdp(f"{DATA}/4x3.95.POMDP")
    PointBasedSolver(time_limit=1, random_state=0).fit(tiger())  # compile outside the hooks
    hook = _At(monkeypatch, owner, name, at)
    est = PointBasedSolver(time_limit=60, target_gap=1e-9, random_state=0)
    assert _interrupted(est, lambda: est.fit(model), hook) == "fitted"
    assert est.n_trials_ == (at if name == "trial" else 0)  # the running trial finishes
    _check_pbs(model, est)


def test_point_based_solver_interrupted_while_compiling_is_unfitted(monkeypatch):
    est = PointBasedSolver(time_limit=1, random_state=0).fit(tiger())  # a previous fit is dropped too
    hook = _At(monkeypatch, _pbs, "_warm_kernels", 1)
    assert _interrupted(est, lambda: est.fit(tiger()), hook) == "unfitted"


def test_point_based_solver_second_sigint_aborts_unfitted(monkeypatch):
    PointBasedSolver(time_limit=1, random_state=0).fit(tiger())
    hook = _At(monkeypatch, _NumbaEngine, "trial", 2, times=2)
    est = PointBasedSolver(time_limit=60, target_gap=1e-12, random_state=0)
    assert _interrupted(est, lambda: est.fit(tiger()), hook) == "unfitted"


# ------------------------------------------------------------------ PBVI
@pytest.mark.parametrize("phase, owner, name, at, expected", [
    ("set-up (fast informed bound)", _pbvi, "fib_upper_bound", 1, "unfitted"),
    ("first sweep", PBVI, "_expand", 1, "fitted"),
    ("late sweep", PBVI, "_expand", 8, "fitted"),
])
def test_pbvi(monkeypatch, phase, owner, name, at, expected):
    model = tiger()
    hook = _At(monkeypatch, owner, name, at)
    est = PBVI(n_beliefs=30, max_iter=400, tol=0.0, random_state=0)
    assert _interrupted(est, lambda: est.fit(model), hook) == expected
    if expected == "fitted":
        assert est.n_iter_ == at - 1
        assert abs(est.value(model.b0) - est.value_) <= VALUE_ATOL


# ------------------------------------------------------------------ RECAPController and its solver
def _check_recap(model, est, K):
    assert check_fsc(est.action_, est.eta_, model.n_actions, model.n_observations).total
    assert 1 <= est.n_memory_ <= K
    assert abs(est.value_ - evaluate_fsc(model, est.action_, est.eta_, est.m0_)) <= VALUE_ATOL
    assert 0 <= est.predict(est.m0_) < model.n_actions


@pytest.mark.parametrize("phase, solver, owner, name, at", [
    ("solver set-up (compilation)", "pbs", _pbs, "_warm_kernels", 1),
    ("solver, first trial", "pbs", _NumbaEngine, "trial", 1),
    ("solver, later trial", "pbs", _NumbaEngine, "trial", 15),
    ("solver PBVI, second sweep", "pbvi", PBVI, "_expand", 2),
    ("compression, first growth step", "pbs", RecapSearch, "_grow", 1),
    ("compression, polish", "pbs", RecapSearch, "_polish", 3),
    ("compression, late (the starts)", "pbs", RecapSearch, "_select_start", 1),
])
def test_recap_with_its_solver(monkeypatch, phase, solver, owner, name, at):
    model = read_pomdp(f"{DATA}/4x3.95.POMDP")
    K = 4
    PointBasedSolver(time_limit=1, random_state=0).fit(tiger())  # compile outside the hooks
    hook = _At(monkeypatch, owner, name, at)
    est = RECAPController(n_memory=K, random_state=0, solver=solver,
                          solver_params=dict(time_limit=60, target_gap=1e-3, random_state=0),
                          pbvi_params=dict(n_beliefs=30, max_iter=400, tol=0.0))
    assert _interrupted(est, lambda: est.fit(model), hook) == "fitted"
    _check_recap(model, est, K)
    in_solver = owner is not RecapSearch
    assert est.pbvi_.interrupted_ is in_solver  # the solver stopped too, or had finished
    if in_solver:  # the search never ran: the blind controller, and the solver's vectors to reuse
        assert est.n_memory_ == 1
        if solver == "pbs":
            assert est.pbvi_.n_trials_ == (at if name == "trial" else 0)


def test_recap_keyboard_interrupt_raised_in_the_solver_leaves_it_unfitted(monkeypatch):
    """A ``KeyboardInterrupt`` raised (not signalled) in the solver's deferred loop is an abort."""
    model = read_pomdp(f"{DATA}/4x3.95.POMDP")
    PointBasedSolver(time_limit=1, random_state=0).fit(tiger())
    est = RECAPController(n_memory=4, random_state=0, solver_params=dict(time_limit=60, random_state=0))
    hook = _At(monkeypatch, _NumbaEngine, "trial", 3, action="raise")
    assert _interrupted(est, lambda: est.fit(model), hook) == "unfitted"


def test_recap_second_sigint_aborts_unfitted(monkeypatch):
    model = read_pomdp(f"{DATA}/4x3.95.POMDP")
    hook = _At(monkeypatch, RecapSearch, "_polish", 2, times=2)
    est = RECAPController(n_memory=4, random_state=0, solver_params=dict(time_limit=60, random_state=0))
    assert _interrupted(est, lambda: est.fit(model), hook) == "unfitted"


# ------------------------------------------------------------------ VoGCAM
@pytest.fixture(scope="module")
def pattern():
    from algos.point_process import simulate_lgcp

    return simulate_lgcp((0, 1, 0, 1), math.log(200) - 0.5, 1.0, 0.1, grid=64, random_state=0).points


VOGCAM = dict(window=(0, 1, 0, 1), n_dummy=121, max_iter=25, tol=1e-9)


def _vogcam_cases():
    from algos.point_process.second_order import _min_contrast
    from algos.point_process.vogcam import _vogcam
    from algos.point_process.vogcam._vogcam_solver import VoGCAMSolver

    elbo = dict(hyperparameters="elbo")
    return [
        ("set-up (quadrature)", _vogcam, "build_quadrature", 1, elbo, "unfitted"),
        ("set-up (NNGP structure)", _vogcam, "NNGPStructure", 1, elbo, "unfitted"),
        ("hyperparameter step (minimum contrast)", _min_contrast, "lgcp_min_contrast", 1,
         dict(hyperparameters="min_contrast"), "unfitted"),
        ("hyperparameter step (Laplace evidence)", VoGCAMSolver, "laplace_mode", 3,
         dict(hyperparameters="laplace"), "unfitted"),
        ("hyperparameter step (nested Poisson fit)", VoGCAMSolver, "beta_block", 2,
         dict(hyperparameters="elbo", hyperparameter_start="min_contrast", covariates=True), "unfitted"),
        ("ascent, first sweep", VoGCAMSolver, "sigma_block", 1, elbo, "fitted"),
        ("ascent, length-scale step", VoGCAMSolver, "phi_block", 3, elbo, "fitted"),
        ("ascent, late sweep", VoGCAMSolver, "sigma_block", 6, elbo, "fitted"),
    ]


@pytest.mark.parametrize("case", _vogcam_cases(), ids=lambda c: c[0])
def test_vogcam(monkeypatch, pattern, case):
    from algos.point_process import VoGCAM

    phase, owner, name, at, kw, expected = case
    kw = dict(kw)
    covariates = (lambda P: P[:, :1]) if kw.pop("covariates", False) else None
    X = pattern
    est = VoGCAM(**VOGCAM, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, covariates=covariates)  # compiled, and fitted once: an unfitted end drops this fit
    hook = _At(monkeypatch, owner, name, at)
    assert _interrupted(est, lambda: est.fit(X, covariates=covariates), hook) == expected
    if expected == "fitted":
        assert est.n_iter_ == (at - 1 if name == "sigma_block" else est.n_iter_)
        assert len(est.elbo_history_) == est.n_iter_ + 1
        assert np.all(np.isfinite(est.predict_log_intensity(X[:5])))
