"""Anytime fits: a KeyboardInterrupt raised inside an estimator's loop leaves it fitted with the state
of its last complete iteration, ``interrupted_ = True`` and an ``InterruptedFitWarning``; a second
interrupt (during the finishing code) aborts."""

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
    with pytest.warns(Warning):
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
