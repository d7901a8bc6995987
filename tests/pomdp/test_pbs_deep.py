"""PointBasedSolver's deep-sampling trials (SARSOP's target rule): they keep both bounds valid, and one trial
of either rule from the initial bounds moves ``L(b0)`` up and ``U(b0)`` down, never the other way."""

import numpy as np
import pytest

from algos.pomdp import PointBasedSolver, rock_sample, tiger
from algos.pomdp._beliefs import _b0, blind_policy_values
from algos.pomdp.solvers import _pbs
from algos.pomdp.solvers._pbs_engines import _NumbaEngine

TOL = 1e-7
MODELS = {"tiger": tiger(), "rocksample-3-2": rock_sample(3, 2)}


@pytest.fixture(scope="module")
def references():
    """Converged width-rule solves (gap <= 1e-3): the interval [L, U] holds V*(b0)."""
    out = {}
    for name, model in MODELS.items():
        _pbs.DEEP_EVERY, saved = 0, _pbs.DEEP_EVERY
        try:
            out[name] = PointBasedSolver(time_limit=120.0, target_gap=1e-3, clock="wall").fit(model)
        finally:
            _pbs.DEEP_EVERY = saved
        assert out[name].converged_
    return out


@pytest.mark.parametrize("name", list(MODELS))
def test_deep_trials_keep_both_bounds_valid(name, references, monkeypatch):
    monkeypatch.setattr(_pbs, "DEEP_EVERY", 1)  # every trial deep
    ref = references[name]
    s = PointBasedSolver(time_limit=60.0, target_gap=0.0, max_trials=40, clock="wall").fit(MODELS[name])
    assert ref.lower_bound_ - TOL <= s.upper_bound_ and s.lower_bound_ <= ref.upper_bound_ + TOL
    # everywhere, not only at b0: the deep run's vectors lie below the reference's upper bound, its upper bound
    # above the reference's vectors
    rng = np.random.default_rng(0)
    S = s.alphas_.shape[1]
    for b in rng.dirichlet(np.ones(S) * 0.3, size=40):
        assert (s.alphas_ @ b).max() <= ref.upper_value(b) + TOL
        assert s.upper_value(b) >= (ref.alphas_ @ b).max() - TOL


@pytest.mark.parametrize("name", list(MODELS))
def test_one_trial_of_either_rule_from_the_initial_bounds(name):
    model = MODELS[name]
    T, Z, r, discount, S, sp = _pbs._model_layout(model, "numpy")
    b0 = _b0(model, None, S)
    Q = _pbs.fib_sparse(*sp, Z, r, discount)
    blind = blind_policy_values(model, b0=b0).vectors
    depths = {}
    for deep in (False, True):
        eng = _NumbaEngine(sp, Z, r, discount, b0, Q, Q.max(axis=0), blind)
        lo, up = eng.bounds()
        eng.deep = deep
        eps = _pbs.KAPPA * (up - lo)
        depths[deep], _ = eng.trial(eps, _pbs._depth_cap(eps, float(r.max() - r.min()), discount))
        lo2, up2 = eng.bounds()
        assert lo2 >= lo - TOL and up2 <= up + TOL
    assert min(depths.values()) >= 1  # both rules leave the root of a model with a gap
