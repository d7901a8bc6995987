r"""Finite-window controllers (Kara & Yüksel): memory = the last ``N`` (action, observation) pairs.

The pomdp reconstruction notes §3 (baselines built as K-node FSCs with the same evaluation as RECAP, §1.2).

Nodes are all windows of length ``0, 1, ..., N`` (the short ones are the start of an episode), so
with ``n_sym`` symbols per step (``|A||O|`` for (a, o) pairs, ``|O|`` for the observation-only
variant) there are ``sum_{j=0}^N n_sym**j`` nodes, and ``N`` is the largest window with this count
``<= n_memory`` (pomdp reconstruction notes §3: ``N = max{n : sum_{j<=n} (|A||O|)^j <= K}``; the sum starts at ``j = 0``
for the empty window, so ``K = 1`` gives ``N = 0``, the blind policy). The memory update is a shift
register: append the new symbol, drop the oldest one once the window is full.

Each window ``w`` carries a belief ``c_w``: ``b0`` pushed through the window's Bayes updates (pomdp reconstruction notes
§3; exact for windows shorter than ``N``, which only occur at times ``t < N``; an approximation for
full windows). A zero-probability step keeps the prior-predicted belief (pomdp reconstruction notes §7). Actions come
from one of the reconstruction's rules over these beliefs:

* ``"lookahead"`` -- ``pi(w) = argmax_a c_w . r_a + discount * sum_o P(o|c_w,a) V_Gamma(tau(c_w,a,o))``
  with ``V_Gamma(b) = max_alpha alpha . b`` from PBVI alpha vectors;
* ``"quantized_mdp"`` -- value iteration on the finite MDP over windows with reward ``c_w . r_a`` and
  ``p(w'|w,a) = sum_o P(o|c_w,a) 1[eta(w,a,o) = w']`` (Saldi–Yüksel style).

Two safeguards (project additions, not in the pomdp reconstruction notes; switch off with ``improve=False``): start
from the better (exact value at ``b0``) of the rule's table and the constant best-blind table, then
improve the table by coordinate ascent on the exact value: per reachable node, the action with the
highest exact ``V^F(b0)`` is kept (lowest index on ties, only strict gains > 1e-12). Every accepted
change raises the exact value, so ``value_ >= max(rule value, blind value)``.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from .._validation import (
    RANDOM_STATE_CONSTRAINTS,
    OrderedStrOptions,
    check_scalar_int,
    validate_params,
)
from ._beliefs import (
    _arrays,
    _b0,
    _check_step,
    _need_discount_below_one,
    blind_policy_values,
    evaluate_fsc,
    simulate_fsc,
)

__all__ = ["FiniteWindowController", "window_length"]

_GAIN_TOL = 1e-12


def window_length(n_memory, n_symbols):
    """Largest ``N`` with ``sum_{j=0}^N n_symbols**j <= n_memory``; returns ``(N, n_nodes)``."""
    n_memory = check_scalar_int(n_memory, "n_memory", low=1)
    return _window_length(n_memory, check_scalar_int(n_symbols, "n_symbols", low=1))


def _window_length(n_memory, n_symbols):
    """:func:`window_length` of checked arguments (the estimator's ``n_memory`` is checked by its constraints)."""
    N, count = 0, 1
    while True:
        nxt = count + n_symbols ** (N + 1)
        if nxt > n_memory or (n_symbols == 1 and N + 1 > n_memory):
            return N, count
        N, count = N + 1, nxt


def _alpha_matrix(alphas, S):
    if alphas is None:
        return None
    alphas = getattr(alphas, "alphas_", alphas)
    alphas = np.asarray(alphas, dtype=float)
    if alphas.ndim != 2 or alphas.shape[1] != S or len(alphas) == 0:
        raise ValueError(f"'alphas' must have shape (n_alpha, S={S}) with n_alpha >= 1; got {alphas.shape}.")
    if not np.all(np.isfinite(alphas)):
        raise ValueError("'alphas' must contain only finite values.")
    return alphas


def _reachable(action, eta, m0):
    """Nodes reachable from ``m0`` in the graph ``m -> eta[m, action[m], o]`` (all o)."""
    seen = np.zeros(len(action), dtype=bool)
    stack = [m0]
    seen[m0] = True
    while stack:
        m = stack.pop()
        for n in eta[m, action[m]]:
            if not seen[n]:
                seen[n] = True
                stack.append(int(n))
    return np.flatnonzero(seen)


class FiniteWindowController(BaseEstimator):
    r"""Finite-window FSC: memory is the last ``N`` (a, o) pairs (or observations).

    Parameters
    ----------
    n_memory : int
        Memory budget ``K >= 1``; the window ``N`` is the largest with
        ``sum_{j=0}^N n_sym**j <= n_memory`` (``n_sym = |A||O|``, or ``|O|`` if ``obs_only``).
        The controller uses ``n_nodes_ <= n_memory`` nodes.
    obs_only : bool, default=False
        Remember observations only (``n_sym = |O|``). The window beliefs then use the actions the
        controller itself played at the window's prefixes (computed in order of window length,
        with the lookahead rule).
    action_rule : {"lookahead", "quantized_mdp"}, default="lookahead"
        The pomdp reconstruction notes §1.2 (a) / (b), applied at the window beliefs.
    improve : bool, default=True
        Blind safeguard plus exact coordinate-ascent improvement of the action table (module doc).
    max_iter : int, default=20
        Maximum number of improvement sweeps over the nodes.
    n_beliefs : int, default=200
        Belief points of the internal PBVI run when ``fit`` gets no ``alphas`` (lookahead rule).
    random_state : None, int or Generator
        Seed of that PBVI run.

    Attributes
    ----------
    window_length_ : int (``N``); ``n_nodes_`` : int; ``windows_`` : list of tuples (oldest symbol first;
    a symbol is ``a * |O| + o``, or ``o`` with ``obs_only``); beliefs_ (K, S);
    action_ (K,); eta_ (K, A, O) shift-register update; m0_ (=0, the empty window);
    W_ (K, S) exact node values; value_ (``b0 . W_[m0_]``); rule_value_ (value of the rule's table);
    blind_value_; value_history_ (value after each improvement sweep, index 0 = start); n_iter_.

    Notes
    -----
    Reconstructed baseline [R] (Kara & Yüksel finite-window policies; pomdp reconstruction notes §3). The window error
    decays in ``N`` only under filter stability (asymptotic; no constant is asserted).
    """

    _parameter_constraints: dict = {
        "action_rule": [OrderedStrOptions(("lookahead", "quantized_mdp"))],
        "improve": ["boolean"],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "n_beliefs": [Interval(Integral, 1, None, closed="left")],
        "n_memory": [Interval(Integral, 1, None, closed="left")],
        "obs_only": ["boolean"],
        "random_state": RANDOM_STATE_CONSTRAINTS,
    }

    def __init__(self, *, n_memory, obs_only=False, action_rule="lookahead", improve=True, max_iter=20,
                 n_beliefs=200, random_state=None):
        self.n_memory = n_memory
        self.obs_only = obs_only
        self.action_rule = action_rule
        self.improve = improve
        self.max_iter = max_iter
        self.n_beliefs = n_beliefs
        self.random_state = random_state

    # ------------------------------------------------------------------ construction
    def _build_windows(self, N, n_sym):
        windows = [()]
        level = [()]
        for _ in range(N):
            level = [w + (x,) for w in level for x in range(n_sym)]
            windows.extend(level)
        index = {w: i for i, w in enumerate(windows)}
        return windows, index

    def fit(self, pomdp, alphas=None):
        """Build the window FSC for ``pomdp``; ``alphas`` (n, S) or a fitted PBVI (lookahead rule).

        Parameters
        ----------
        pomdp : POMDP
            The model.
        alphas : array-like of shape (n_alpha, S) or None, default=None
            Alpha vectors of ``V_Gamma`` (``None``: computed by a solver).

        Returns
        -------
        self
            The fitted controller.
        """
        validate_params(self)
        n_memory, max_iter = int(self.n_memory), int(self.max_iter)
        obs_only, improve = bool(self.obs_only), bool(self.improve)
        T, Z, r, discount = _arrays(pomdp)
        _need_discount_below_one(discount, "FiniteWindowController")
        A, S, _ = T.shape
        O = Z.shape[2]
        b0 = _b0(pomdp, None, S)
        G = _alpha_matrix(alphas, S)
        if G is None and (self.action_rule == "lookahead" or obs_only):
            from .solvers._pbvi import PBVI

            G = PBVI(n_beliefs=self.n_beliefs, random_state=self.random_state).fit(pomdp).alphas_

        n_sym = O if obs_only else A * O
        N, K = _window_length(n_memory, n_sym)
        windows, index = self._build_windows(N, n_sym)

        eta = _shift_register(windows, index, N, A, O, obs_only)
        # joint (unnormalised) successor weights: U[a, o, s, s'] = T[a, s, s'] Z[a, s', o]
        U = np.einsum("ast,ato->aost", T, Z)
        beliefs, rule_action = _window_beliefs(windows, index, b0, T, U, r, discount, G, obs_only)
        if self.action_rule == "quantized_mdp":
            rule_action = self._quantized_mdp(beliefs, eta, U, r, discount)

        rule_value = evaluate_fsc(pomdp, rule_action, eta, 0)
        blind = blind_policy_values(pomdp)
        action, history, it = rule_action.copy(), [rule_value], 0
        if improve:
            action, history, it = _improve_actions(pomdp, action, rule_value, eta, blind.best_action, max_iter)
        value, W = evaluate_fsc(pomdp, action, eta, 0, return_values=True)
        self.window_length_ = N
        self.n_nodes_ = K
        self.windows_ = windows
        self.beliefs_ = beliefs
        self.action_ = action
        self.eta_ = eta
        self.m0_ = 0
        self.W_ = W
        self.value_ = value
        self.rule_value_ = rule_value
        self.blind_value_ = blind.best_value
        self.value_history_ = np.asarray(history)
        self.n_iter_ = it
        return self

    @staticmethod
    def _quantized_mdp(beliefs, eta, U, r, discount, tol=1e-10, max_iter=100_000):
        K = len(beliefs)
        A, O = U.shape[:2]
        R = beliefs @ r                                     # (K, A)
        P = np.zeros((K, A, K))
        for a in range(A):
            for o in range(O):
                p = (beliefs @ U[a, o]).sum(axis=1)         # P(o | c_k, a)
                np.add.at(P, (np.arange(K), a, eta[:, a, o]), p)
        V = np.zeros(K)
        for _ in range(max_iter):
            Q = R + discount * P @ V
            V_new = Q.max(axis=1)
            done = np.max(np.abs(V_new - V)) * discount <= tol * (1 - discount)
            V = V_new
            if done:
                break
        return np.argmax(R + discount * P @ V, axis=1).astype(np.int64)

    # ------------------------------------------------------------------ use
    def _check_memory(self, memory):
        check_is_fitted(self, "action_")
        return check_scalar_int(memory, "memory", low=0, high=self.n_nodes_ - 1)

    def predict(self, memory):
        """Action of memory node ``memory``.

        Parameters
        ----------
        memory : int
            Memory node.

        Returns
        -------
        int
            The action.
        """
        m = self._check_memory(memory)
        return int(self.action_[m])

    def update(self, memory, a, o):
        """Next memory node after playing ``a`` and observing ``o`` in node ``memory``.

        Parameters
        ----------
        memory : int
            Memory node.
        a : int
            The action played.
        o : int
            The observation.

        Returns
        -------
        int
            The next memory node.
        """
        m = self._check_memory(memory)
        A, O = self.eta_.shape[1:]
        a, o = _check_step(a, o, A, O)
        return int(self.eta_[m, a, o])

    def evaluate(self, pomdp, b=None):
        """Exact value ``b . W[m0]`` on ``pomdp`` (``b`` defaults to ``pomdp.b0``).

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
        check_is_fitted(self, "action_")
        return evaluate_fsc(pomdp, self.action_, self.eta_, self.m0_, b0=b)

    def simulate(self, pomdp, n_episodes=10_000, horizon=None, random_state=None):
        """Monte-Carlo returns (a :class:`~algos.pomdp._beliefs.SimulationResult`).

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
        check_is_fitted(self, "action_")
        return simulate_fsc(pomdp, self.action_, self.eta_, self.m0_, n_episodes=n_episodes,
                            horizon=horizon, random_state=random_state)


def _shift_register(windows, index, N, A, O, obs_only):
    """The shift-register update ``eta[m, a, o]``: window ``m`` followed by symbol ``(a, o)`` (or ``o``),
    cut to its last ``N`` symbols."""
    eta = np.empty((len(windows), A, O), dtype=np.int64)
    for m, w in enumerate(windows):
        for a in range(A):
            for o in range(O):
                x = o if obs_only else a * O + o
                nw = (w + (x,))[-N:] if N > 0 else ()
                eta[m, a, o] = index[nw]
    return eta


def _window_beliefs(windows, index, b0, T, U, r, discount, G, obs_only):
    """Each window's belief from ``b0`` (prefixes first) and the one-step lookahead action at it
    (zeros without ``G``); with ``obs_only`` the actions of the window are the rule's own."""
    A, O, S = U.shape[0], U.shape[1], U.shape[2]

    def step(b, a, o):
        u = b @ U[a, o]
        p = u.sum()
        return (u / p) if p > 1e-300 else b @ T[a]

    def lookahead(b):
        q = b @ r + discount * np.array(
            [sum(float((b @ U[a, o] @ G.T).max()) for o in range(O)) for a in range(A)])
        return int(np.argmax(q)), q

    K = len(windows)
    beliefs = np.empty((K, S))
    rule_action = np.zeros(K, dtype=np.int64)
    beliefs[0] = b0
    for m, w in enumerate(windows):
        if m > 0:
            parent = index[w[:-1]]
            x = w[-1]
            if obs_only:
                a, o = int(rule_action[parent]), x
            else:
                a, o = divmod(x, O)
            beliefs[m] = step(beliefs[parent], a, o)
        if G is not None:
            rule_action[m] = lookahead(beliefs[m])[0]
    return beliefs, rule_action


def _improve_actions(pomdp, action, value, eta, blind_action, max_iter):
    """``improve=True``: the constant blind action if it does better, then coordinate ascent on each
    reachable node's action, each change kept when the exact value rises by more than ``_GAIN_TOL``.
    Returns ``(action, value history, sweeps)``."""
    A = eta.shape[1]
    const = np.full(len(action), blind_action, dtype=np.int64)
    v_const = evaluate_fsc(pomdp, const, eta, 0)
    if v_const > value + _GAIN_TOL:
        action, value = const, v_const
    history = [value]
    it = 0
    for it in range(1, max_iter + 1):
        changed = False
        for m in _reachable(action, eta, 0):
            best_a, best_v = int(action[m]), value
            for a in range(A):
                if a == action[m]:
                    continue
                trial = action.copy()
                trial[m] = a
                v = evaluate_fsc(pomdp, trial, eta, 0)
                if v > best_v + _GAIN_TOL:
                    best_a, best_v = a, v
            if best_a != action[m]:
                action[m] = best_a
                value = best_v
                changed = True
        history.append(value)
        if not changed:
            break
    return action, history, it
