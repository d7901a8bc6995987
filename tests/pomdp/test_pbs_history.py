"""PointBasedSolver.history_: the anytime profile at fixed checkpoints is monotone, agrees with the
per-trial trace at every checkpoint and ends at the final bounds."""

import numpy as np
import pytest

from algos.pomdp import PointBasedSolver, rock_sample, tiger
from algos.pomdp.solvers import _pbs

ATOL = 1e-12


def _check_profile(s):
    h, tr = s.history_, s.trace_
    assert h.ndim == 2 and h.shape[1] == 3 and len(h) >= 2
    assert np.all(np.diff(h[:, 0]) >= 0)                  # times in order
    assert np.all(np.diff(h[:, 1]) >= -ATOL)              # L non-decreasing
    assert np.all(np.diff(h[:, 2]) <= ATOL)               # U non-increasing
    assert np.all(h[:, 1] <= h[:, 2] + ATOL)
    assert h[-1, 1] == s.lower_bound_ and h[-1, 2] == s.upper_bound_
    assert tuple(h[0]) == tuple(tr[0])                    # the initial bounds
    # every checkpoint row holds the bounds of the last trial finished by that checkpoint
    for t, lo, up in h[1:-1]:
        assert t in _pbs.CHECKPOINTS
        k = int(np.flatnonzero(tr[:, 0] <= t)[-1])
        assert (lo, up) == (tr[k, 1], tr[k, 2])


@pytest.mark.parametrize("model", [tiger(), rock_sample(3, 2)], ids=["tiger", "rocksample-3-2"])
def test_history_is_monotone_and_ends_at_the_final_bounds(model, monkeypatch):
    # checkpoints a few trials apart on a small model (the defaults are 1, 2, 5, ... seconds): 430 per
    # decade (0.5 % apart), since rocksample(3, 2) is solved exactly within about 10 ms of a start-up
    # that takes 10-150 ms (more when kernels compile)
    monkeypatch.setattr(_pbs, "CHECKPOINTS", tuple(np.geomspace(1e-6, 10.0, 3001)))
    s = PointBasedSolver(time_limit=30.0, target_gap=0.0, max_trials=60, clock="wall").fit(model)
    _check_profile(s)
    assert len(s.trace_) == s.n_trials_ + 1
    assert len(s.history_) > 2  # some checkpoints were passed


def test_history_default_checkpoints_short_run():
    """A run shorter than the first checkpoint: the initial bounds and the final bounds."""
    s = PointBasedSolver(time_limit=30.0, target_gap=1e-2).fit(tiger())
    _check_profile(s)
    if s.trace_[-1, 0] < _pbs.CHECKPOINTS[0]:
        assert len(s.history_) == 2


@pytest.mark.parametrize("model", [tiger(), rock_sample(3, 2)], ids=["tiger", "rocksample-3-2"])
def test_mdp_start_by_policy_iteration_is_an_upper_bound(model):
    """The policy-iteration start of the upper bound equals Q_MDP (value iteration from above, run to
    1e-12) to round-off, and stays above it when policy iteration is cut after one improvement (the
    certificate V + delta / (1 - discount))."""
    from algos.pomdp.solvers import _pbs_kernels as _k

    _, _, r, discount, S, (Tptr, Tidx, Tval) = _pbs._model_layout(model, "numpy")
    Q = np.full((Tptr.shape[0], S), float(r.max()) / (1.0 - discount))
    for _ in range(100_000):
        Q, delta = _k.mdp_backup_sparse(Q, Tptr, Tidx, Tval, r, discount)
        if discount * delta <= 1e-12 * (1.0 - discount):
            break
    Qpi = _pbs.mdp_upper_pi(Tptr, Tidx, Tval, r, discount)
    np.testing.assert_allclose(Qpi, Q, rtol=0, atol=1e-8)
    for it in (0, 1):
        Qcut = _pbs.mdp_upper_pi(Tptr, Tidx, Tval, r, discount, max_iter=it)
        assert np.all(Qcut >= Q - 1e-9), float((Q - Qcut).max())
