r"""Codebook -> finite-state controller (FSC) construction and two codebook baselines.

The pomdp reconstruction notes §1.2 [R, reconstructed: the natural construction; the paper's text was not
available]. A codebook ``C = {c_1..c_K}`` of beliefs and a quantiser ``q`` give a deterministic
K-node FSC:

* memory init ``m0 = q(b0)``;
* memory update ``eta(k, a, o) = q(tau(c_k, a, o))``, precomputed as a (K, A, O) table; entries with
  ``P(o | c_k, a) = 0`` map to ``k`` (the posterior is undefined there, pomdp reconstruction notes §7);
* action rule ``"lookahead"`` (default): ``pi(k) = argmax_a r(c_k, a) + discount * sum_o P(o|c_k,a)
  V_Gamma(tau(c_k, a, o))`` with ``V_Gamma(b) = max_alpha alpha . b`` (PBVI alphas); or
  ``"quantized_mdp"`` (Saldi-Yuksel style): value iteration on the K-state MDP with reward
  ``r(c_k, a)`` and ``p(k'|k, a) = sum_o P(o|c_k,a) 1[eta(k,a,o) = k']``, ``pi(k) = argmax_a Q_C(k, a)``.
* K = 1 always plays the best blind action (pomdp reconstruction notes §7: a one-node FSC *is* a blind policy, and the
  best one is known exactly), whatever the action rule says.

Quantisers: ``"l1"`` (nearest in L1), ``"l2"`` (nearest in Euclidean distance) and ``"decision"``:
nearest in the decision (Bregman) distortion ``d_V(b, c) = V_Gamma(b) - alpha_c . b`` with
``alpha_c = argmax_{alpha} alpha . c`` (pomdp reconstruction notes §1.3), L1 as tie-break. All ties go to the lowest
index.

Baselines (pomdp reconstruction notes §3): :class:`GridCodebook` (Freudenthal/Lovejoy regular grid, or a random grid)
with the L1 quantiser and :class:`KMeansCodebook` (scikit-learn ``KMeans`` on simulated beliefs) with the
L2 quantiser; both use the same action rule as RECAP, so only the codebook differs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from itertools import combinations
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval

from ..._validation import (
    RANDOM_STATE_CONSTRAINTS,
    OrderedStrOptions,
    check_option,
    check_random_state,
    check_scalar_float,
    check_scalar_int,
    validate_params,
)
from .. import _kernels
from .._beliefs import (
    SIMPLEX_TOL,
    _arrays,
    _b0,
    _check_step,
    _n_states,
    _need_discount_below_one,
    _real_array,
    blind_policy_values,
    check_fsc,
    evaluate_fsc,
    simulate_fsc,
)

__all__ = ["GridCodebook", "KMeansCodebook", "build_codebook_fsc", "quantize"]

ACTION_RULES = ("lookahead", "quantized_mdp")
DISTANCES = ("l1", "l2", "decision")
_TIE_RTOL = 1e-10  # relative tolerance under which two scores count as tied (lowest index wins)


# --------------------------------------------------------------------------- helpers
def _v_gamma(alphas, B):
    return (B @ alphas.T).max(axis=-1)


def decision_distortion(B, C, alphas):
    """``d_V(b_i, c_k) = V_Gamma(b_i) - alpha_{c_k} . b_i >= 0`` for all pairs; shape (N, K)."""
    alpha_c = alphas[np.argmax(C @ alphas.T, axis=1)]  # (K, S), lowest index on ties
    d = _v_gamma(alphas, B)[:, None] - B @ alpha_c.T
    return np.maximum(d, 0.0)


def _argmin_ties(D, tie=None):
    """Row-wise argmin of ``D`` treating entries within a relative tolerance as tied; ties are
    broken by ``tie`` (same shape, smaller wins) and then by the lowest index."""
    scale = max(1.0, float(np.max(np.abs(D[np.isfinite(D)]))) if D.size else 1.0)
    best = D.min(axis=1, keepdims=True)
    near = D <= best + _TIE_RTOL * scale
    if tie is None:
        return np.argmax(near, axis=1)
    return np.argmin(np.where(near, tie, np.inf), axis=1)


_PAIR_CHUNK = 1 << 18  # (row, codeword, state) differences formed at once by :func:`pairwise_distance`


def pairwise_distance(B, C, power=1):
    """``sum_s |B[i, s] - C[j, s]| ** power`` (``power`` 1 or 2) as an (n, K) matrix: the same numbers
    as ``(np.abs(B[:, None, :] - C[None]) ** power).sum(axis=2)`` (each entry the same sum over
    ``s``), formed a block of rows at a time instead of as one (n, K, S) temporary."""
    B, C = np.atleast_2d(B), np.atleast_2d(C)
    n, K = B.shape[0], C.shape[0]
    out = np.empty((n, K))
    step = max(1, _PAIR_CHUNK // max(1, K * B.shape[1]))
    for i in range(0, n, step):
        diff = B[i:i + step, None, :] - C[None, :, :]
        out[i:i + step] = (np.abs(diff) if power == 1 else diff ** 2).sum(axis=2)
    return out


def quantize(B, C, distance="l1", alphas=None):
    """Index of the nearest codeword of ``C`` (K, S) for each belief of ``B`` (N, S)."""
    B = np.atleast_2d(B)
    if distance == "l1":
        return _argmin_ties(pairwise_distance(B, C))
    if distance == "l2":
        return _argmin_ties(pairwise_distance(B, C, power=2))
    # decision distortion with the L1 tie-break; L1 is computed only for the rows with a tie
    return _nearest_with_l1_ties(decision_distortion(B, C, alphas), B, C)


def _nearest_with_l1_ties(D, B, C):
    """Nearest codeword under the distortion matrix ``D`` (n, K): ties within the relative tolerance
    ``_TIE_RTOL`` go to the codeword nearest in L1 (computed only for the rows with a tie)."""
    scale = max(1.0, float(np.max(np.abs(D[np.isfinite(D)]))) if D.size else 1.0)
    near = D <= D.min(axis=1, keepdims=True) + _TIE_RTOL * scale
    out = np.argmax(near, axis=1)
    multi = near.sum(axis=1) > 1
    if multi.any():
        l1 = pairwise_distance(B[multi], C)
        out[multi] = np.argmin(np.where(near[multi], l1, np.inf), axis=1)
    return out


def _argmax_ties(Q):
    return _argmin_ties(-Q)


def _node_successors(T, Z, C):
    """``P`` (K, A, O), ``Bn`` (K, A, O, S), ``zero`` (K, A, O) for every codeword and action."""
    A = T.shape[0]
    out = [_kernels.belief_successors(np.ascontiguousarray(C), np.ascontiguousarray(T[a]),
                                      np.ascontiguousarray(Z[a])) for a in range(A)]
    P = np.stack([o[0] for o in out], axis=1)
    Bn = np.stack([o[1] for o in out], axis=1)
    zero = np.stack([o[2] for o in out], axis=1)
    return P, Bn, zero


def build_codebook_fsc(pomdp, C, alphas, *, distance="l1", action_rule="lookahead", b0=None,
                       vi_tol=1e-10, max_vi_iter=100_000):
    r"""The deterministic FSC of the codebook ``C`` (pomdp reconstruction notes §1.2).

    Returns a dict with ``action`` (K,), ``eta`` (K, O), ``eta_full`` (K, A, O), ``m0``, and the
    node successor arrays ``P`` (K, A, O), ``Bn`` (K, A, O, S) used by the callers.

    Parameters
    ----------
    pomdp : POMDP
    C : array-like of shape (K, S)
        The codebook: K >= 1 beliefs (rows on the probability simplex).
    alphas : array-like of shape (n_alpha, S)
        The alpha vectors of ``V_Gamma`` (used by the ``"lookahead"`` rule and the ``"decision"``
        quantiser; may be None otherwise).
    distance : {"l1", "l2", "decision"}, default="l1"
    action_rule : {"lookahead", "quantized_mdp"}, default="lookahead"
    b0 : array-like of shape (S,), optional
        Default: the model's initial belief.
    vi_tol : float >= 0, default=1e-10
        Stopping tolerance of the value iteration of ``"quantized_mdp"``.
    max_vi_iter : int >= 0, default=100000
        Iteration cap of that value iteration.

    Returns
    -------
    dict
        ``action`` (K,), ``eta`` (K, O), ``eta_full`` (K, A, O), ``m0``, ``P`` (K, A, O) and ``Bn``
        (K, A, O, S).
    """
    distance = check_option(distance, "distance", DISTANCES)
    action_rule = check_option(action_rule, "action_rule", ACTION_RULES)
    vi_tol = check_scalar_float(vi_tol, "vi_tol", low=0.0)
    max_vi_iter = check_scalar_int(max_vi_iter, "max_vi_iter", low=0)
    return _build_codebook_fsc(pomdp, C, alphas, distance=distance, action_rule=action_rule, b0=b0, vi_tol=vi_tol,
                               max_vi_iter=max_vi_iter)


def _build_codebook_fsc(pomdp, C, alphas, *, distance="l1", action_rule="lookahead", b0=None, vi_tol=1e-10,
                        max_vi_iter=100_000):
    """:func:`build_codebook_fsc` of checked options (the estimators' ``action_rule`` is checked by their
    ``_parameter_constraints``; the model, ``C`` and ``alphas`` are checked here)."""
    T, Z, r, discount = _arrays(pomdp)
    S = T.shape[1]
    b0 = _b0(pomdp, b0, S)
    C = np.ascontiguousarray(_check_codebook(C, S))
    alphas = _check_alphas(alphas, S, required=action_rule == "lookahead" or distance == "decision")
    K = C.shape[0]
    P, Bn, zero = _node_successors(T, Z, C)
    A, O = P.shape[1], P.shape[2]
    q = quantize(Bn.reshape(-1, S), C, distance, alphas).reshape(K, A, O)
    eta_full = np.where(zero, np.arange(K)[:, None, None], q).astype(np.int64)
    R = C @ r  # (K, A)
    if action_rule == "lookahead":
        Q = R + discount * (P * _v_gamma(alphas, Bn)).sum(axis=2)
    else:  # quantized MDP on the K codewords, value iteration
        V = np.zeros(K)
        Q = R.copy()
        for _ in range(max_vi_iter):
            Q = R + discount * (P * V[eta_full]).sum(axis=2)
            Vn = Q.max(axis=1)
            delta = float(np.max(np.abs(Vn - V)))
            V = Vn
            if discount * delta <= vi_tol * (1.0 - discount):
                break
    action = _argmax_ties(Q).astype(np.int64)
    if K == 1:
        action[0] = blind_policy_values(pomdp, b0=b0).best_action
    eta = eta_full[np.arange(K), action]
    m0 = int(quantize(b0[None, :], C, distance, alphas)[0])
    return dict(action=action, eta=eta, eta_full=eta_full, m0=m0, P=P, Bn=Bn)


def _check_codebook(C, S):
    """``C`` as a (K, S) float array of beliefs (not renormalised), with errors naming ``C``."""
    C = _real_array(C, "C")
    if C.ndim != 2 or C.shape[0] == 0 or C.shape[1] != S:
        raise ValueError(f"'C' must have shape (K, {S}) with K >= 1 (one belief per row); got shape {C.shape}.")
    if not np.all(np.isfinite(C)):
        raise ValueError("'C' must contain only finite values.")
    low, dev = float(C.min()), float(np.max(np.abs(C.sum(axis=1) - 1.0)))
    if low < -SIMPLEX_TOL or dev > SIMPLEX_TOL:
        raise ValueError(f"the rows of 'C' must be beliefs on the probability simplex; got a smallest entry "
                         f"{low:g} and a row sum off 1 by {dev:.3g} (tolerance {SIMPLEX_TOL:g}).")
    return C


def _check_alphas(alphas, S, required):
    """``alphas`` as an (n, S) finite float array (``None`` allowed when not ``required``)."""
    if alphas is None:
        if required:
            raise ValueError("'alphas' must be given for action_rule='lookahead' or distance='decision'.")
        return None
    G = _real_array(alphas, "alphas")
    if G.ndim != 2 or G.shape[0] == 0 or G.shape[1] != S:
        raise ValueError(f"'alphas' must have shape (n_alpha, {S}) with n_alpha >= 1; got shape {G.shape}.")
    if not np.all(np.isfinite(G)):
        raise ValueError("'alphas' must contain only finite values.")
    return G


_GATHER_LIMIT = 1 << 24  # n*S*S above which simulate_beliefs multiplies per action (no (n, S, S) gather)


def simulate_beliefs(pomdp, n_traj, horizon, rng, *, policy=None, alphas=None, actions=None,
                     explore=0.1, b0=None):
    """Beliefs reached from ``b0`` along simulated trajectories, with weights ``discount**t``.

    ``policy``: ``None`` (Gamma-greedy: the action label of the best alpha, needs ``alphas`` and
    ``actions``; uniform random if ``alphas`` is None) or an FSC ``(action, eta, m0)`` (the
    controller is run while the true belief is tracked). With probability ``explore`` a uniformly
    random action is taken instead (Gamma-greedy mode only). Returns ``(B, w)``.
    """
    T, Z, _, discount = _arrays(pomdp)
    A, S, _ = T.shape
    b0 = _b0(pomdp, b0, S)
    cumT, cumZ = np.cumsum(T, axis=2), np.cumsum(Z, axis=2)
    n = n_traj
    B = np.repeat(b0[None, :], n, axis=0)
    s = np.minimum((rng.random(n)[:, None] >= np.cumsum(b0)[None, :]).sum(1), S - 1)
    m = None if policy is None else np.full(n, policy[2], dtype=np.int64)
    out_B, out_w = [], []
    g = 1.0
    for _ in range(horizon):
        out_B.append(B.copy())
        out_w.append(np.full(n, g))
        if policy is not None:
            a = policy[0][m]
        elif alphas is None:
            a = rng.integers(0, A, size=n)
        else:
            a = np.asarray(actions)[np.argmax(B @ alphas.T, axis=1)]
            flip = rng.random(n) < explore
            a = np.where(flip, rng.integers(0, A, size=n), a)
        s = np.minimum((rng.random(n)[:, None] >= cumT[a, s]).sum(1), S - 1)
        o = np.minimum((rng.random(n)[:, None] >= cumZ[a, s]).sum(1), Z.shape[2] - 1)
        if n * S * S <= _GATHER_LIMIT:
            pred = np.einsum("ns,nst->nt", B, T[a]) * Z[a, :, o]
        else:  # large models: one product per action instead of gathering an (n, S, S) array
            pred = np.empty_like(B)
            for act in np.unique(a):
                rows = np.flatnonzero(a == act)
                pred[rows] = B[rows] @ T[act]
            pred *= Z[a, :, o]
        B = pred / pred.sum(axis=1, keepdims=True)  # o was drawn, so its probability is > 0
        if policy is not None:
            m = policy[1][m, o]
        g *= discount
    return np.concatenate(out_B), np.concatenate(out_w)


def _default_horizon(discount, cap=60):
    if discount <= 0.0:
        return 1
    return int(min(cap, max(1, math.ceil(math.log(1e-2) / math.log(discount)))))


# --------------------------------------------------------------------------- base class
class _CodebookController(BaseEstimator):
    """Common interface of codebook controllers (pomdp reconstruction notes §1.2). [R] reconstructed.

    Subclasses implement ``_fit_codebook(pomdp, alphas, rng)`` and set ``_distance``.

    Fitted attributes: ``codebook_`` (K, S), ``action_`` (K,), ``eta_`` (K, O) (node ``m`` plays
    ``action_[m]`` and moves to ``eta_[m, o]``), ``eta_full_`` (K, A, O), ``m0_``, ``W_`` (K, S)
    per-node state values, ``value_`` = exact ``V^F(b0) = b0 . W_[m0_]``, ``alphas_`` (the Gamma
    used), ``pbvi_`` (the fitted PBVI, or None when ``alphas`` were passed), ``n_memory_`` (K).
    """

    _distance = "l1"

    # ---------------------------------------------------------------- shared fitting pieces
    def _check_common(self, pomdp):
        """The model's arrays, after the model-dependent check (the parameters are checked by
        ``validate_params`` against ``_parameter_constraints``)."""
        T, Z, r, discount = _arrays(pomdp)
        _need_discount_below_one(discount, type(self).__name__)
        return T, Z, r, discount

    def _get_alphas(self, pomdp, alphas, rng):
        """``(Gamma, labels, solver)``: from ``alphas`` (a fitted :class:`PBVI` or
        :class:`PointBasedSolver`, or an (n, S) array), else from a fresh solver run: the
        estimator's ``solver`` (``"pbs"``: PointBasedSolver with ``solver_params``; ``"pbvi"``, the
        default for estimators without that parameter: PBVI with ``pbvi_params``)."""
        from ..solvers._pbvi import PBVI

        if alphas is None:
            if getattr(self, "solver", "pbvi") == "pbs":
                from ..solvers._pbs import PointBasedSolver

                params = {"time_limit": 60.0, "target_gap": 1e-3}
                params.update(getattr(self, "solver_params", None) or {})
                solver = PointBasedSolver(**params).fit(pomdp)
                return np.ascontiguousarray(solver.alphas_), np.asarray(solver.actions_), solver
            params = {"n_beliefs": 200, "max_iter": 200, "random_state": rng}
            params.update(getattr(self, "pbvi_params", None) or {})
            import warnings

            from sklearn.exceptions import ConvergenceWarning

            with warnings.catch_warnings():  # the alphas are a valid lower bound either way
                warnings.simplefilter("ignore", ConvergenceWarning)
                pbvi = PBVI(**params).fit(pomdp)
            return np.ascontiguousarray(pbvi.alphas_), np.asarray(pbvi.actions_), pbvi
        if hasattr(alphas, "fit") and hasattr(alphas, "get_params"):  # a solver instance
            if not hasattr(alphas, "alphas_"):
                raise ValueError(f"'alphas' is a {type(alphas).__name__} instance that is not fitted; call its "
                                 "fit(pomdp) first.")
            S = _n_states(pomdp)
            if alphas.alphas_.shape[1] != S:
                raise ValueError(f"'alphas' was fitted on a model with {alphas.alphas_.shape[1]} states; this "
                                 f"model has {S}.")
            return np.ascontiguousarray(alphas.alphas_), np.asarray(alphas.actions_), alphas
        G = np.asarray(alphas, dtype=float)
        S = _n_states(pomdp)
        if G.ndim != 2 or G.shape[1] != S or G.shape[0] == 0:
            raise ValueError(f"'alphas' must have shape (n_alpha, {S}); got {G.shape}.")
        if not np.all(np.isfinite(G)):
            raise ValueError("'alphas' must contain only finite values.")
        return np.ascontiguousarray(G), None, None

    def _build(self, pomdp, C, alphas):
        return _build_codebook_fsc(pomdp, C, alphas, distance=self._distance, action_rule=self.action_rule)

    def _set_tables(self, pomdp, C, tables, alphas):
        value, W = evaluate_fsc(pomdp, tables["action"], tables["eta"], tables["m0"], return_values=True)
        self.codebook_ = np.asarray(C, dtype=float)
        self.action_ = tables["action"]
        self.eta_ = tables["eta"]
        self.eta_full_ = tables["eta_full"]
        self.m0_ = int(tables["m0"])
        self.W_ = W
        self.value_ = float(value)
        self.alphas_ = alphas
        self.n_memory_ = int(len(C))
        return self

    def fit(self, pomdp, alphas=None):
        """Build the codebook and its FSC.

        Parameters
        ----------
        pomdp : POMDP
            The model.
        alphas : None, fitted PBVI or array-like of shape (n, S), default=None
            The alpha vectors the codebook is built from: None fits a PBVI on ``pomdp`` first.

        Returns
        -------
        self
            The fitted controller.
        """
        validate_params(self)
        self._check_common(pomdp)
        rng = check_random_state(getattr(self, "random_state", None))
        G, labels, pbvi = self._get_alphas(pomdp, alphas, rng)
        self.pbvi_ = pbvi
        self._alpha_labels = labels
        C = self._fit_codebook(pomdp, G, rng)
        return self._set_tables(pomdp, C, self._build(pomdp, C, G), G)

    # ---------------------------------------------------------------- using the controller
    def _check_fitted(self):
        if not hasattr(self, "action_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call fit(pomdp) first.")

    def predict(self, memory):
        """Action of memory node ``memory``.

        Parameters
        ----------
        memory : int
            A memory node, ``0 <= memory < n_memory_``.

        Returns
        -------
        int
            The action the controller plays in that node.
        """
        self._check_fitted()
        m = check_scalar_int(memory, "memory", low=0, high=len(self.action_) - 1)
        return int(self.action_[m])

    def update(self, memory, a, o):
        """Next memory node after playing ``a`` in node ``memory`` and observing ``o``.

        Parameters
        ----------
        memory : int
            The current memory node.
        a : int
            The action played (any action: off the controller's own action, the full table ``eta_full_``
            answers).
        o : int
            The observation received.

        Returns
        -------
        int
            The next memory node.
        """
        self._check_fitted()
        K, A, O = self.eta_full_.shape
        m = check_scalar_int(memory, "memory", low=0, high=K - 1)
        a, o = _check_step(a, o, A, O)
        return int(self.eta_[m, o] if a == self.action_[m] else self.eta_full_[m, a, o])

    def check(self, pomdp):
        """Totality certificate (:func:`check_fsc`) of the fitted tables.

        Parameters
        ----------
        pomdp : POMDP
            The model whose action and observation counts the tables must cover.

        Returns
        -------
        FSCCertificate
            ``ok`` and the list of violations.
        """
        self._check_fitted()
        T, Z, _, _ = _arrays(pomdp)
        return check_fsc(self.action_, self.eta_, T.shape[0], Z.shape[2])

    def evaluate(self, pomdp, b=None):
        """Exact value ``b . W[m0]`` of the fitted FSC.

        Parameters
        ----------
        pomdp : POMDP
            The model.
        b : array-like of shape (S,), default=None
            The start belief; None means the model's ``b0``.

        Returns
        -------
        float
            The controller's expected discounted return from ``b``.
        """
        self._check_fitted()
        return evaluate_fsc(pomdp, self.action_, self.eta_, self.m0_, b0=b)

    def simulate(self, pomdp, n_episodes=10_000, horizon=None, random_state=None):
        """Monte-Carlo returns of the fitted FSC.

        Parameters
        ----------
        pomdp : POMDP
            The model.
        n_episodes : int, default=10000
            Number of episodes.
        horizon : int or None, default=None
            Steps per episode (``None``: the smallest horizon whose truncation bound is at most 1e-8).
        random_state : None, int, SeedSequence or Generator, default=None
            Seed of the simulation.

        Returns
        -------
        SimulationResult
            Mean, standard error, per-episode returns and truncation bound (:func:`simulate_fsc`).
        """
        self._check_fitted()
        return simulate_fsc(pomdp, self.action_, self.eta_, self.m0_, n_episodes=n_episodes,
                            horizon=horizon, random_state=random_state)


# --------------------------------------------------------------------------- baselines
def freudenthal_grid(S, M):
    """All beliefs with coordinates in ``{0, 1/M, ..., 1}`` (C(M+S-1, S-1) points), lexicographic."""
    pts = []
    for bars in combinations(range(M + S - 1), S - 1):  # stars and bars
        prev, counts = -1, []
        for b in bars:
            counts.append(b - prev - 1)
            prev = b
        counts.append(M + S - 2 - prev)
        pts.append(np.array(counts, dtype=float) / M)
    return np.array(pts)


class GridCodebook(_CodebookController):
    r"""Uniform (Freudenthal/Lovejoy) or random belief grid as codebook (pomdp reconstruction notes §3 baseline) [R].

    ``kind="regular"``: all beliefs with coordinates in ``{0, 1/M, ..., 1}``, ``M`` the largest with
    ``C(M+S-1, S-1) <= n_memory`` (or the given ``M``). When even the S corners exceed the budget the
    grid is infeasible: the codebook is then ``b0`` plus the ``n_memory - 1`` corners with the largest
    b0-reachable mass (``infeasible_ = True``). ``kind="random"``: the corners (when they fit, else as
    in the infeasible case) plus uniform Dirichlet draws up to ``n_memory``. Quantiser: nearest L1.
    The codebook may have fewer than ``n_memory`` points (``n_memory_``).

    Parameters
    ----------
    n_memory : int, default=8
    M : int or None, default=None
    kind : {"regular", "random"}, default="regular"
    action_rule : {"lookahead", "quantized_mdp"}, default="lookahead"
    pbvi_params : dict or None
    random_state : None, int or Generator
    """

    _parameter_constraints: dict = {
        "M": [Interval(Integral, 1, None, closed="left"), None],
        "action_rule": [OrderedStrOptions(("lookahead", "quantized_mdp"))],
        "kind": [OrderedStrOptions(("regular", "random"))],
        "n_memory": [Interval(Integral, 1, None, closed="left")],
        "pbvi_params": [Mapping, None],  # passed on to PBVI as keyword arguments
        "random_state": RANDOM_STATE_CONSTRAINTS,
    }

    _distance = "l1"

    def __init__(self, *, n_memory=8, M=None, kind="regular", action_rule="lookahead", pbvi_params=None,
                 random_state=None):
        self.n_memory = n_memory
        self.M = M
        self.kind = kind
        self.action_rule = action_rule
        self.pbvi_params = pbvi_params
        self.random_state = random_state

    def _fit_codebook(self, pomdp, alphas, rng):
        T, _, _, discount = _arrays(pomdp)
        S = T.shape[1]
        K = self.n_memory
        b0 = _b0(pomdp, None, S)
        self.infeasible_ = S > K
        if self.infeasible_:
            # b0-reachable mass of each state: discounted occupancy under uniformly random actions
            Tbar = T.mean(axis=0)
            mass = np.linalg.solve(np.eye(S) - discount * Tbar.T, b0)
            corners = np.argsort(-mass, kind="stable")[: K - 1]
            return np.vstack([b0[None, :], np.eye(S)[np.sort(corners)]])
        if self.kind == "random":
            extra = rng.dirichlet(np.ones(S), size=K - S) if K > S else np.empty((0, S))
            return np.vstack([np.eye(S), extra])
        if self.M is not None:
            M = int(self.M)
        else:
            M = 1
            while math.comb(M + 1 + S - 1, S - 1) <= K:
                M += 1
        self.M_ = M
        return freudenthal_grid(S, M)


class KMeansCodebook(_CodebookController):
    r"""k-means codebook on simulated beliefs (pomdp reconstruction notes §3 baseline) [R].

    ``n_samples`` beliefs are collected along trajectories from ``b0`` under the Gamma-greedy policy
    with ``explore`` random actions (weights ``discount**t``); scikit-learn ``KMeans(n_clusters=K,
    n_init=10)`` clusters them (Euclidean); centroids are clipped and renormalised onto the
    simplex. Quantiser: nearest L2. With fewer distinct beliefs than K, ``n_memory_ < n_memory``.

    Parameters
    ----------
    n_memory : int, default=8
    n_samples : int >= 1, default=2000
    explore : float in [0, 1], default=0.1
        Probability of a uniformly random action at each simulated step.
    action_rule : {"lookahead", "quantized_mdp"}, default="lookahead"
    pbvi_params : dict or None
    random_state : None, int or Generator
    """

    _parameter_constraints: dict = {
        "action_rule": [OrderedStrOptions(("lookahead", "quantized_mdp"))],
        "explore": [Interval(Real, 0, 1, closed="both")],
        "n_memory": [Interval(Integral, 1, None, closed="left")],
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "pbvi_params": [Mapping, None],  # passed on to PBVI as keyword arguments
        "random_state": RANDOM_STATE_CONSTRAINTS,
    }

    _distance = "l2"

    def __init__(self, *, n_memory=8, n_samples=2000, explore=0.1, action_rule="lookahead", pbvi_params=None,
                 random_state=None):
        self.n_memory = n_memory
        self.n_samples = n_samples
        self.explore = explore
        self.action_rule = action_rule
        self.pbvi_params = pbvi_params
        self.random_state = random_state

    def _fit_codebook(self, pomdp, alphas, rng):
        from sklearn.cluster import KMeans

        n_samples, explore = int(self.n_samples), float(self.explore)
        _, _, _, discount = _arrays(pomdp)
        H = _default_horizon(discount)
        n_traj = max(1, math.ceil(n_samples / H))
        labels = self._alpha_labels
        B, w = simulate_beliefs(pomdp, n_traj, H, rng, alphas=alphas if labels is not None else None,
                                actions=labels, explore=explore)
        B, w = B[:n_samples], w[:n_samples]
        Bu, inv = np.unique(np.round(B, 12), axis=0, return_inverse=True)
        wu = np.bincount(inv.ravel(), weights=w)
        k = min(self.n_memory, len(Bu))
        km = KMeans(n_clusters=k, n_init=10, random_state=int(rng.integers(0, 2**31 - 1)))
        km.fit(Bu, sample_weight=wu)
        C = np.clip(km.cluster_centers_, 0.0, None)
        return C / C.sum(axis=1, keepdims=True)
