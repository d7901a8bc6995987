"""The large-model start of PointBasedSolver's upper bound: the certified Gauss-Seidel MDP bound and the FIB
shortcut give valid upper bounds at every stop and the same fixed point as the policy-iteration start."""

import numpy as np
import pytest

from algos.pomdp import rock_sample, tiger
from algos.pomdp._beliefs import blind_policy_values
from algos.pomdp.solvers import _pbs
from algos.pomdp.solvers import _pbs_kernels as _k
from algos.pomdp.solvers import _upper_init as _ui


def _random_model(S=30, A=3, O=4, seed=0):
    """A stochastic model with 1-3 successors per row (exercises both FIB branches)."""
    rng = np.random.default_rng(seed)
    T = np.zeros((A, S, S))
    for a in range(A):
        for s in range(S):
            succ = rng.choice(S, size=rng.integers(1, 4), replace=False)
            T[a, s, succ] = rng.dirichlet(np.ones(succ.size))
    Z = rng.dirichlet(np.ones(O), size=(A, S))
    Z[0] = np.eye(O)[rng.integers(0, O, size=S)]  # one action with deterministic observations
    r = rng.normal(size=(S, A)) * 5
    return (*_k.sparse_model(T), np.ascontiguousarray(Z), r, 0.95)


def _layout(model):
    _, Z, r, discount, _, (Tptr, Tidx, Tval) = _pbs._model_layout(model, "numba")
    return Tptr, Tidx, Tval, Z, r, discount


MODELS = {
    "random": _random_model,
    "tiger": lambda: _layout(tiger()),
    "rock_sample(4,4)": lambda: _layout(rock_sample(4, 4)),
}


def _q_mdp(Tptr, Tidx, Tval, r, discount, n=3000):
    """Q_MDP by plain value iteration to round-off (discount^3000 ~ 1e-67)."""
    V = np.zeros(r.shape[0])
    for _ in range(n):
        Q = _ui.mdp_q(V, Tptr, Tidx, Tval, r, discount)
        V = Q.max(axis=0)
    return _ui.mdp_q(V, Tptr, Tidx, Tval, r, discount)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_gs_converged_equals_policy_iteration(name):
    Tptr, Tidx, Tval, Z, r, discount = MODELS[name]()
    Q_gs, _ = _ui.mdp_upper_gs(Tptr, Tidx, Tval, r, discount)
    Q_pi = _pbs.mdp_upper_pi(Tptr, Tidx, Tval, r, discount)
    Q_ref = _q_mdp(Tptr, Tidx, Tval, r, discount)
    np.testing.assert_allclose(Q_gs, Q_pi, rtol=0, atol=1e-9)
    np.testing.assert_allclose(Q_gs, Q_ref, rtol=0, atol=1e-9)
    assert np.all(Q_gs >= Q_ref - 1e-12)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_fib_start_paths_share_the_fixed_point(name, monkeypatch):
    Tptr, Tidx, Tval, Z, r, discount = MODELS[name]()
    monkeypatch.setattr(_pbs, "PI_MAX_S", 10**9)  # the policy-iteration start
    old = _pbs.fib_sparse(Tptr, Tidx, Tval, Z, r, discount)
    monkeypatch.setattr(_pbs, "PI_MAX_S", 0)  # the Gauss-Seidel start
    new = _pbs.fib_sparse(Tptr, Tidx, Tval, Z, r, discount, V0=np.zeros(r.shape[0]))
    np.testing.assert_allclose(new, old, rtol=0, atol=1e-9)


@pytest.mark.parametrize("name, start", [(n, s) for n in sorted(MODELS) for s in ("zeros", "random", "blind", "top",
                                                                                   "default")
                                          if (n, s) != ("random", "blind")])  # the random arrays have no POMDP
def test_gs_bound_valid_after_every_sweep_count(name, start):
    Tptr, Tidx, Tval, Z, r, discount = MODELS[name]()
    S = r.shape[0]
    Q_ref = _q_mdp(Tptr, Tidx, Tval, r, discount)
    top = r.max() / (1 - discount)
    V0 = {"zeros": np.zeros(S), "random": np.random.default_rng(1).normal(size=S) * 50,
          "top": np.full(S, top), "default": None}.get(start)
    if start == "blind":
        model = tiger() if name == "tiger" else rock_sample(4, 4)
        V0 = blind_policy_values(model).vectors.max(axis=0)
    for sweeps in (1, 2, 3, 5, 8):
        Q, n = _ui.mdp_upper_gs(Tptr, Tidx, Tval, r, discount, V0=V0, max_sweeps=sweeps)
        assert n <= sweeps
        assert np.all(Q >= Q_ref - 1e-10), (sweeps, float((Q_ref - Q).max()))
        assert np.all(Q <= top + 1e-12)


class _Clock:
    """A fake clock that reaches the deadline (1.0) after ``k`` reads."""

    def __init__(self, k):
        self.k = k

    def __call__(self):
        self.k -= 1
        return 2.0 if self.k < 0 else 0.0


@pytest.mark.parametrize("name", sorted(MODELS))
def test_fib_deadline_iterates_stay_above_fixed_point(name, monkeypatch):
    Tptr, Tidx, Tval, Z, r, discount = MODELS[name]()
    monkeypatch.setattr(_pbs, "PI_MAX_S", 0)
    Q_fib = _pbs.fib_sparse(Tptr, Tidx, Tval, Z, r, discount)  # converged (tol 1e-9)
    for k in (0, 1, 2, 4, 8, 16):
        Q = _pbs.fib_sparse(Tptr, Tidx, Tval, Z, r, discount, deadline=1.0, now=_Clock(k), V0=np.zeros(r.shape[0]))
        # the converged Q is within discount / (1 - discount) * change <= tol of the fixed point
        assert np.all(Q >= Q_fib - 1e-8), (k, float((Q_fib - Q).max()))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fib_shortcut_equals_reference_backup(seed):
    Tptr, Tidx, Tval, Z, r, discount = _random_model(seed=seed)
    Q = np.random.default_rng(seed).normal(size=(Tptr.shape[0], r.shape[0])) * 10
    np.testing.assert_array_equal(_ui.fib_backup_sparse_fast(Q, Tptr, Tidx, Tval, Z, r, discount),
                                  _k.fib_backup_sparse(Q, Tptr, Tidx, Tval, Z, r, discount))


def test_gs_start_shape_checked():
    Tptr, Tidx, Tval, Z, r, discount = _random_model()
    with pytest.raises(ValueError, match="V0 must have shape"):
        _ui.mdp_upper_gs(Tptr, Tidx, Tval, r, discount, V0=np.zeros(3))


def test_solver_upper_bound_valid_on_large_model_path(monkeypatch):
    """The solver on the large-model start, stopped after few trials, keeps U(b0) above a converged L(b0)."""
    model = rock_sample(4, 4)
    ref = _pbs.PointBasedSolver(time_limit=60.0, target_gap=1e-3, random_state=0).fit(model)
    monkeypatch.setattr(_pbs, "PI_MAX_S", 0)
    for trials in (1, 3):
        s = _pbs.PointBasedSolver(time_limit=60.0, max_trials=trials, random_state=0).fit(model)
        assert s.upper_bound_ >= ref.lower_bound_ - 1e-9
        assert s.upper_bound_ >= ref.upper_bound_ - 1e-3 - 1e-9
