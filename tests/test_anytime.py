"""Anytime fits: a KeyboardInterrupt raised inside an estimator's loop leaves it fitted with the state
of its last complete iteration, ``interrupted_ = True`` and an ``InterruptedFitWarning``; a second
interrupt (during the finishing code) aborts."""

import math
import warnings

import numpy as np
import pytest

from algos._anytime import InterruptedFitWarning, Interruptible
from algos.pomdp import PBVI, tiger


class _Bomb:
    """Wrap a callable so that its ``at``-th call raises KeyboardInterrupt."""

    def __init__(self, fn, at):
        self.fn, self.at, self.calls = fn, at, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return self.fn(*args, **kwargs)


def test_interruptible_keeps_the_last_checkpoint_and_lets_a_second_interrupt_through():
    run = Interruptible("loop")
    with run:
        for k in range(10):
            run.checkpoint(k=k)
            if k == 4:
                raise KeyboardInterrupt
    assert run.interrupted and run.state == {"k": 4} and run.n_checkpoints == 5

    class Est:
        pass

    est = Est()
    with pytest.warns(InterruptedFitWarning, match="loop was interrupted after 4 steps"):
        run.finish(est, "after 4 steps")
    assert est.interrupted_ is True
    with pytest.raises(KeyboardInterrupt):  # outside the block: not caught
        with run:
            pass
        raise KeyboardInterrupt
    with pytest.raises(ValueError):  # other errors pass through
        with Interruptible("x"):
            raise ValueError("boom")


@pytest.mark.parametrize("at", [1, 3, 6])
def test_pbvi_interrupted_in_sweep_k_equals_a_fit_of_k_minus_1_sweeps(monkeypatch, at):
    model = tiger()
    kw = dict(n_beliefs=30, random_state=0, tol=0.0)
    ref = PBVI(max_iter=at - 1, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short fit does not converge
        ref.fit(model)
    bomb = _Bomb(PBVI._expand, at)
    monkeypatch.setattr(PBVI, "_expand", lambda self, *a: bomb(self, *a))
    est = PBVI(max_iter=50, **kw)
    with pytest.warns(InterruptedFitWarning, match=f"PBVI was interrupted after {at - 1} sweeps"):
        est.fit(model)
    assert est.interrupted_ and not est.converged_ and est.n_iter_ == at - 1
    np.testing.assert_array_equal(est.alphas_, ref.alphas_)
    np.testing.assert_array_equal(est.beliefs_, ref.beliefs_)
    assert est.value_ == ref.value_ and est.upper_bound_ == ref.upper_bound_


def test_uninterrupted_fit_says_so():
    est = PBVI(n_beliefs=20, max_iter=400, random_state=0).fit(tiger())
    assert est.interrupted_ is False


def test_vogcam_interrupted_in_sweep_k_keeps_the_state_after_sweep_k_minus_1(monkeypatch):
    from algos.point_process import VoGCAM, simulate_lgcp
    from algos.point_process.vogcam._vogcam_solver import VoGCAMSolver

    X = simulate_lgcp((0, 1, 0, 1), math.log(200) - 0.5, 1.0, 0.1, grid=64, random_state=0).points
    kw = dict(window=(0, 1, 0, 1), n_dummy=121, max_iter=25, tol=1e-9, hyperparameters="elbo")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = VoGCAM(**kw).fit(X)
    assert ref.n_iter_ >= 4
    at = 4  # the 4th sweep's variance block raises: sweeps 1-3 are complete
    bomb = _Bomb(VoGCAMSolver.sigma_block, at)
    monkeypatch.setattr(VoGCAMSolver, "sigma_block", lambda self, *a, **k: bomb(self, *a, **k))
    est = VoGCAM(**kw)
    with pytest.warns(InterruptedFitWarning, match="VoGCAM was interrupted after 3 sweeps"):
        est.fit(X)
    assert est.interrupted_ and not est.converged_ and est.n_iter_ == 3
    # the state of the uninterrupted fit after its third sweep. Two fits in one process agree to
    # round-off, not bit for bit: numpy's and BLAS's SIMD reductions depend on the arrays' memory
    # alignment (CI saw 9e-16 relative). A state from another sweep is 1.7e-4 relative away (sweep 3
    # -> 4 raises the ELBO by 0.165 here), so 1e-12 separates them by eight orders of magnitude.
    np.testing.assert_allclose(est.elbo_history_, ref.elbo_history_[:4], rtol=1e-12, atol=0)
    assert abs(est.elbo_ - ref.elbo_history_[3]) <= 1e-12 * abs(ref.elbo_history_[3])
    assert abs(ref.elbo_history_[4] - ref.elbo_history_[3]) > 1e-6 * abs(ref.elbo_history_[3])
    assert np.all(np.diff(est.elbo_blocks_) >= -1e-9 * abs(est.elbo_))
    assert np.all(np.isfinite(est.predict_log_intensity(X[:5])))
    assert ref.interrupted_ is False


def test_cli_writes_the_interrupted_solver_policy_and_exits_130(monkeypatch, tmp_path, capsys):
    import json

    from algos.cli import main
    from algos.pomdp import read_policy

    bomb = _Bomb(PBVI._expand, 3)
    monkeypatch.setattr(PBVI, "_expand", lambda self, *a: bomb(self, *a))
    pol = tmp_path / "t.policy"
    code = main(["pomdp", "solve", "tiger", "--memory", "2", "--baseline", "", "--solver", "pbvi",
                 "--pbvi-beliefs", "30", "--policy-out", str(pol), "--json"])
    captured = capsys.readouterr()
    assert code == 130 and "interrupted" in captured.err
    out = json.loads(captured.out)
    assert out["interrupted"] is True
    # the written policy is the interrupted fit's: its value at b0 is the reported lower bound
    assert read_policy(pol, tiger()).value(tiger().b0) == pytest.approx(out["solver"]["lower"], abs=1e-12)


def test_point_based_solver_stops_at_a_sigint_and_keeps_valid_bounds(monkeypatch):
    import os
    import signal

    from algos.pomdp import PointBasedSolver
    from algos.pomdp.solvers._pbs import _NumbaEngine

    model = tiger()
    calls = {"n": 0}
    trial = _NumbaEngine.trial

    def trial_then_sigint(self, *a):
        out = trial(self, *a)
        if signal.getsignal(signal.SIGINT) is before:  # the compilation warm-up, before the loop
            return out
        calls["n"] += 1
        if calls["n"] == 3:
            os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C sends
        return out

    before = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(_NumbaEngine, "trial", trial_then_sigint)
    est = PointBasedSolver(time_limit=30, target_gap=1e-12, random_state=0)
    with pytest.warns(InterruptedFitWarning, match="PointBasedSolver was interrupted after 3 trials"):
        est.fit(model)
    assert signal.getsignal(signal.SIGINT) is before  # the handler is restored
    assert est.interrupted_ and est.n_trials_ == 3 and not est.converged_
    # the same three trials uninterrupted: identical bounds and vectors
    ref = PointBasedSolver(time_limit=30, target_gap=1e-12, max_trials=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref.fit(model)
    assert (est.lower_bound_, est.upper_bound_) == (ref.lower_bound_, ref.upper_bound_)
    np.testing.assert_array_equal(est.alphas_, ref.alphas_)


def test_a_second_sigint_aborts_the_solver(monkeypatch):
    import os
    import signal

    from algos.pomdp import PointBasedSolver
    from algos.pomdp.solvers._pbs import _NumbaEngine

    trial = _NumbaEngine.trial

    def trial_then_two_sigints(self, *a):
        out = trial(self, *a)
        if signal.getsignal(signal.SIGINT) is before:  # the compilation warm-up, before the loop
            return out
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
        return out

    before = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(_NumbaEngine, "trial", trial_then_two_sigints)
    with pytest.raises(KeyboardInterrupt):
        PointBasedSolver(time_limit=30, target_gap=1e-12, random_state=0).fit(tiger())
    assert signal.getsignal(signal.SIGINT) is before
