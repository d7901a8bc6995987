r"""Bounded policy iteration (BPI; Poupart & Boutilier 2003) for a fixed-size stochastic FSC.

The pomdp reconstruction notes §3. A stochastic K-node FSC has action probabilities ``psi[n, a]`` and successor
probabilities ``eta[n, a, o, n']``. Its node values solve the K*S linear system

    V(n, s) = sum_a psi[n,a] ( r[s,a] + discount * sum_{s',o} T[a,s,s'] Z[a,s',o] sum_{n'} eta[n,a,o,n'] V(n',s') ).

Improvement of node ``n`` is one LP (``scipy.optimize.linprog``, HiGHS): maximise ``eps`` subject to

    V(n,s) + eps <= sum_a c_a r[s,a]
                    + discount * sum_{a,o,n'} c_{a,o,n'} sum_{s'} T[a,s,s'] Z[a,s',o] V(n',s')   (all s),
    sum_a c_a = 1,   sum_{n'} c_{a,o,n'} = c_a,   c >= 0,

then ``psi[n] = c_a`` and ``eta[n,a,o] = c_{a,o,.} / c_a``. The current node is feasible with
``eps = 0``, and a new node vector that dominates the old one pointwise makes every node value
non-decreasing (monotone Bellman operator of the controller), so ``value_history_`` never decreases.
A node is changed only when ``eps > tol_lp`` and the re-evaluated values do not drop (beyond
1e-9, the LP's float error) anywhere; otherwise it is restored. No node addition (fixed budget;
no escape step).

The reported value is ``max_n b0 . V(n)`` and ``m0_`` its node (the controller starts in the best
node for ``b0``, Poupart & Boutilier's convention).
"""

from __future__ import annotations

import math
import time
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.linalg
from scipy.optimize import linprog
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from ..._validation import (
    RANDOM_STATE_CONSTRAINTS,
    OrderedStrOptions,
    check_random_state,
    check_scalar_int,
    validate_params,
)
from .._beliefs import (
    SimulationResult,
    _arrays,
    _b0,
    _check_step,
    _need_discount_below_one,
    _sample_rows,
    _simulation_params,
    blind_policy_values,
)

__all__ = [
    "BPIController",
    "check_stochastic_fsc",
    "evaluate_stochastic_fsc",
    "evaluate_stochastic_fsc_iterative",
    "simulate_stochastic_fsc",
]

PROB_TOL = 1e-9


def check_stochastic_fsc(psi, eta, n_actions, n_observations, tol=PROB_TOL):
    """Certificate of a stochastic FSC: ``psi`` (K, A) and ``eta`` (K, A, O, K) are non-negative,
    finite, and every row sums to 1 within ``tol``. Returns ``(ok, message)``."""
    psi = np.asarray(psi, dtype=float)
    eta = np.asarray(eta, dtype=float)
    if psi.ndim != 2 or psi.shape[1] != n_actions or psi.shape[0] < 1:
        return False, f"'psi' must have shape (K, A={n_actions}); got {psi.shape}."
    K = psi.shape[0]
    if eta.shape != (K, n_actions, n_observations, K):
        return False, f"'eta' must have shape ({K}, {n_actions}, {n_observations}, {K}); got {eta.shape}."
    for name, arr, sums in (("psi", psi, psi.sum(axis=-1)), ("eta", eta, eta.sum(axis=-1))):
        if not np.all(np.isfinite(arr)):
            return False, f"'{name}' has non-finite entries."
        if arr.min() < -tol:
            idx = tuple(int(i) for i in np.unravel_index(arr.argmin(), arr.shape))
            return False, f"'{name}{list(idx)}' is negative ({arr.min():g})."
        dev = np.abs(sums - 1.0)
        if dev.max() > tol:
            idx = tuple(int(i) for i in np.unravel_index(dev.argmax(), dev.shape))
            return False, f"row {list(idx)} of '{name}' sums to {sums[idx]:.12g} (off by {dev.max():.3g})."
    return True, "stochastic FSC is valid."


def _stochastic_system(T, Z, r, psi, eta):
    K, A = psi.shape
    S = T.shape[1]
    R = psi @ r.T                                                # (K, S)
    M = np.einsum("ast,ato->aost", T, Z)                         # (A, O, S, S')
    P = np.einsum("na,naoq,aost->nsqt", psi, eta, M).reshape(K * S, K * S)
    return R.reshape(-1), P


def evaluate_stochastic_fsc(pomdp, psi, eta, b0=None):
    """Node values ``W`` (K, S) of a stochastic FSC by one dense K*S linear solve; returns
    ``(max_n b0 . W[n], W)``."""
    T, Z, r, discount = _arrays(pomdp)
    _need_discount_below_one(discount, "stochastic FSC evaluation")
    psi = np.asarray(psi, dtype=float)
    eta = np.asarray(eta, dtype=float)
    ok, msg = check_stochastic_fsc(psi, eta, T.shape[0], Z.shape[2], tol=1e-6)
    if not ok:
        raise ValueError(msg)
    K, S = psi.shape[0], T.shape[1]
    R, P = _stochastic_system(T, Z, r, psi, eta)
    W = scipy.linalg.solve(np.eye(K * S) - discount * P, R).reshape(K, S)
    b0 = _b0(pomdp, b0, S)
    return float((W @ b0).max()), W


def evaluate_stochastic_fsc_iterative(pomdp, psi, eta, b0=None, tol=1e-11, max_iter=1_000_000):
    """Iterative policy evaluation (cross-check of :func:`evaluate_stochastic_fsc`)."""
    T, Z, r, discount = _arrays(pomdp)
    _need_discount_below_one(discount, "stochastic FSC evaluation")
    psi = np.asarray(psi, dtype=float)
    eta = np.asarray(eta, dtype=float)
    K, S = psi.shape[0], T.shape[1]
    R, P = _stochastic_system(T, Z, r, psi, eta)
    W = np.zeros(K * S)
    for _ in range(max_iter):
        W_new = R + discount * P @ W
        delta = float(np.max(np.abs(W_new - W)))
        W = W_new
        if discount * delta <= tol * (1 - discount):
            break
    W = W.reshape(K, S)
    b0 = _b0(pomdp, b0, S)
    return float((W @ b0).max()), W


def simulate_stochastic_fsc(pomdp, psi, eta, m0, n_episodes=10_000, horizon=None, random_state=None,
                            b0=None):
    """Monte-Carlo discounted return of a stochastic FSC started in node ``m0`` (vectorised)."""
    T, Z, r, discount = _arrays(pomdp)
    psi = np.asarray(psi, dtype=float)
    eta = np.asarray(eta, dtype=float)
    K, S = psi.shape[0], T.shape[1]
    m0 = check_scalar_int(m0, "m0", low=0, high=K - 1)
    n_episodes, horizon, rng = _simulation_params(n_episodes, horizon, random_state, r, discount,
                                                  "simulate with horizon=None")
    b0 = _b0(pomdp, b0, S)
    cumT, cumZ = np.cumsum(T, axis=2), np.cumsum(Z, axis=2)
    cumPsi, cumEta = np.cumsum(psi, axis=1), np.cumsum(eta, axis=3)
    s = _sample_rows(np.cumsum(b0)[None, :].repeat(n_episodes, 0), rng.random(n_episodes))
    m = np.full(n_episodes, m0, dtype=np.int64)
    ret = np.zeros(n_episodes)
    g = 1.0
    for _ in range(horizon):
        a = _sample_rows(cumPsi[m], rng.random(n_episodes))
        ret += g * r[s, a]
        s = _sample_rows(cumT[a, s], rng.random(n_episodes))
        o = _sample_rows(cumZ[a, s], rng.random(n_episodes))
        m = _sample_rows(cumEta[m, a, o], rng.random(n_episodes))
        g *= discount
    trunc = g * float(np.max(np.abs(r))) / (1.0 - discount) if discount < 1 else math.inf
    return SimulationResult(float(ret.mean()), float(ret.std(ddof=1) / math.sqrt(n_episodes)), ret,
                            horizon, trunc)


def _clean(x):
    x = np.clip(x, 0.0, None)
    s = x.sum(axis=-1, keepdims=True)
    return x / np.where(s > 0, s, 1.0)


class BPIController(BaseEstimator):
    r"""Bounded policy iteration: a K-node stochastic FSC improved by one LP per node.

    Parameters
    ----------
    n_memory : int
        Number of nodes ``K >= 1``.
    max_iter : int, default=50
        Maximum number of sweeps over the nodes (pomdp reconstruction notes §3 calls it ``max_sweeps``, default 200);
        a ``ConvergenceWarning`` is raised when it bites.
    tol : float, default=1e-6
        Stop when the largest LP improvement ``eps`` of a sweep is below ``tol``.
    init : {"blind", "random"}, default="blind"
        ``"blind"``: every node plays the best blind action and loops on itself (so
        ``value_ >= `` the blind value); ``"random"``: Dirichlet(1) rows from ``random_state``.
    random_state : None, int or Generator
    time_limit : float or None, default=None
        Wall-clock budget in seconds: no new sweep starts after it is spent (the controller is
        then the last accepted one, ``converged_ = False``, and a ``ConvergenceWarning`` is raised).

    Attributes
    ----------
    action_probs_ (K, A) ``psi``; successor_probs_ (K, A, O, K) ``eta``; W_ (K, S) node values;
    m0_ (best node for b0); value_ (``max_n b0 . W_[n]``); value_history_ (value after each sweep,
    index 0 = start; non-decreasing); eps_history_ (max LP ``eps`` per sweep); n_iter_; converged_;
    blind_value_.
    """

    _parameter_constraints: dict = {
        "init": [OrderedStrOptions(("blind", "random"))],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "n_memory": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "time_limit": [Interval(Real, 0, None, closed="neither"), None],
        "tol": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, *, n_memory, max_iter=50, tol=1e-6, init="blind", random_state=None, time_limit=None):
        self.n_memory = n_memory
        self.time_limit = time_limit
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.random_state = random_state

    def _improve_node(self, n, W, psi, eta, T, Z, r, discount):
        K, A = psi.shape
        S, O = T.shape[1], Z.shape[2]
        # G[a, o, n', s] = sum_{s'} T[a,s,s'] Z[a,s',o] W[n', s']
        G = np.einsum("ast,ato,qt->aoqs", T, Z, W)
        nv = 1 + A + A * O * K
        c = np.zeros(nv)
        c[0] = -1.0
        A_ub = np.zeros((S, nv))
        A_ub[:, 0] = 1.0
        A_ub[:, 1:1 + A] = -r
        A_ub[:, 1 + A:] = -discount * G.reshape(A * O * K, S).T
        b_ub = -W[n]
        A_eq = np.zeros((1 + A * O, nv))
        A_eq[0, 1:1 + A] = 1.0
        for a in range(A):
            for o in range(O):
                row = 1 + a * O + o
                A_eq[row, 1 + a] = -1.0
                start = 1 + A + (a * O + o) * K
                A_eq[row, start:start + K] = 1.0
        b_eq = np.zeros(1 + A * O)
        b_eq[0] = 1.0
        bounds = [(None, None)] + [(0.0, None)] * (nv - 1)
        res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")
        if res.status != 0:
            return 0.0, None, None
        x = res.x
        ca = np.clip(x[1:1 + A], 0.0, None)
        cao = np.clip(x[1 + A:], 0.0, None).reshape(A, O, K)
        new_psi = _clean(ca)
        sums = cao.sum(axis=2, keepdims=True)
        new_eta = np.where(sums > 1e-12, cao / np.where(sums > 0, sums, 1.0), eta[n])
        return float(x[0]), new_psi, _clean(new_eta)

    def fit(self, pomdp, alphas=None):
        """Run BPI on ``pomdp`` (``alphas`` is accepted for API symmetry and ignored).

        Parameters
        ----------
        pomdp : POMDP
            The model.
        alphas : array-like or None, default=None
            Ignored.

        Returns
        -------
        self
            The fitted controller.
        """
        validate_params(self)
        K, max_iter, tol = int(self.n_memory), int(self.max_iter), float(self.tol)
        time_limit = None if self.time_limit is None else float(self.time_limit)
        t_start = time.perf_counter()
        T, Z, r, discount = _arrays(pomdp)
        _need_discount_below_one(discount, "BPIController")
        A, S, _ = T.shape
        O = Z.shape[2]
        b0 = _b0(pomdp, None, S)
        rng = check_random_state(self.random_state)
        blind = blind_policy_values(pomdp)
        if self.init == "blind":
            psi = np.zeros((K, A))
            psi[:, blind.best_action] = 1.0
            eta = np.zeros((K, A, O, K))
            eta[np.arange(K), :, :, np.arange(K)] = 1.0
        else:
            psi = rng.dirichlet(np.ones(A), size=K)
            eta = rng.dirichlet(np.ones(K), size=(K, A, O))
        value, W = evaluate_stochastic_fsc(pomdp, psi, eta)
        history, eps_hist = [value], []
        converged = False
        it = 0
        timed_out = False
        for it in range(1, max_iter + 1):
            if time_limit is not None and time.perf_counter() - t_start > time_limit:
                timed_out = True
                it -= 1
                break
            max_eps = 0.0
            for n in range(K):
                if time_limit is not None and time.perf_counter() - t_start > time_limit:
                    timed_out = True  # a partial sweep: every accepted node change kept the values monotone
                    break
                eps, new_psi, new_eta = self._improve_node(n, W, psi, eta, T, Z, r, discount)
                if new_psi is None or eps <= 1e-10:
                    continue
                old = psi[n].copy(), eta[n].copy()
                psi[n], eta[n] = new_psi, new_eta
                v_new, W_new = evaluate_stochastic_fsc(pomdp, psi, eta)
                if np.all(W_new >= W - 1e-9):
                    max_eps = max(max_eps, eps)
                    value, W = v_new, W_new
                else:  # LP float error made things worse: restore
                    psi[n], eta[n] = old
            history.append(value)
            eps_hist.append(max_eps)
            if timed_out:
                break
            if max_eps < tol:
                converged = True
                break
        if timed_out:
            warnings.warn(
                f"BPIController stopped after {it} sweeps: time_limit={time_limit:g} s was spent before "
                "convergence.", ConvergenceWarning, stacklevel=2)
        elif not converged and max_iter > 0:
            warnings.warn(
                f"BPIController did not converge in max_iter={max_iter} sweeps (last max eps "
                f"{eps_hist[-1]:.3g} >= tol={tol:g}); increase 'max_iter'.", ConvergenceWarning, stacklevel=2)
        self.action_probs_ = psi
        self.successor_probs_ = eta
        self.W_ = W
        self.m0_ = int(np.argmax(W @ b0))
        self.value_ = float(W[self.m0_] @ b0)
        self.value_history_ = np.asarray(history)
        self.eps_history_ = np.asarray(eps_hist)
        self.n_iter_ = it
        self.converged_ = converged
        self.blind_value_ = blind.best_value
        return self

    # ------------------------------------------------------------------ use
    def _check_memory(self, memory):
        check_is_fitted(self, "action_probs_")
        return check_scalar_int(memory, "memory", low=0, high=self.action_probs_.shape[0] - 1)

    def predict_proba(self, memory):
        """Action distribution ``psi[memory]``.

        Parameters
        ----------
        memory : int
            Memory node.

        Returns
        -------
        ndarray of shape (A,)
            The action distribution.
        """
        m = self._check_memory(memory)
        return self.action_probs_[m].copy()

    def predict(self, memory, random_state=None):
        """An action drawn from ``psi[memory]`` (the most probable one, lowest index on ties, when
        ``random_state`` is None).

        Parameters
        ----------
        memory : int
            Memory node.
        random_state : None, int, SeedSequence or Generator, default=None
            Seed of the draw (``None``: the most probable action).

        Returns
        -------
        int
            The action.
        """
        p = self.predict_proba(memory)
        if random_state is None:
            return int(np.argmax(p))
        return int(check_random_state(random_state).choice(len(p), p=p))

    def update(self, memory, a, o, random_state=None):
        """Next node after ``(a, o)``: drawn from ``eta[memory, a, o]`` (the most probable one
        when ``random_state`` is None).

        Parameters
        ----------
        memory : int
            Memory node.
        a : int
            The action played.
        o : int
            The observation.
        random_state : None, int, SeedSequence or Generator, default=None
            Seed of the draw (``None``: the most probable node).

        Returns
        -------
        int
            The next memory node.
        """
        m = self._check_memory(memory)
        A, O = self.successor_probs_.shape[1:3]
        a, o = _check_step(a, o, A, O)
        p = self.successor_probs_[m, a, o]
        if random_state is None:
            return int(np.argmax(p))
        return int(check_random_state(random_state).choice(len(p), p=p))

    def evaluate(self, pomdp, b=None):
        """Exact value ``max_n b . W[n]`` on ``pomdp``.

        Parameters
        ----------
        pomdp : POMDP
            The model.
        b : array-like of shape (S,) or None, default=None
            Belief (``None``: the model's ``b0``).

        Returns
        -------
        float
            The exact value.
        """
        check_is_fitted(self, "action_probs_")
        return evaluate_stochastic_fsc(pomdp, self.action_probs_, self.successor_probs_, b0=b)[0]

    def simulate(self, pomdp, n_episodes=10_000, horizon=None, random_state=None):
        """Monte-Carlo returns from node ``m0_``.

        Parameters
        ----------
        pomdp : POMDP
            The model.
        n_episodes : int, default=10000
            Number of episodes.
        horizon : int or None, default=None
            Steps per episode (``None``: as in :func:`simulate_fsc`).
        random_state : None, int, SeedSequence or Generator, default=None
            Seed of the simulation.

        Returns
        -------
        SimulationResult
            Mean, standard error and per-episode returns.
        """
        check_is_fitted(self, "action_probs_")
        return simulate_stochastic_fsc(pomdp, self.action_probs_, self.successor_probs_, self.m0_,
                                       n_episodes=n_episodes, horizon=horizon, random_state=random_state)
