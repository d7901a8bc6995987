r"""Belief updates, blind policies and deterministic finite-state controllers (FSCs).

Every function takes a POMDP as any object with attributes ``T`` (A, S, S), ``Z`` (A, S, O),
``r`` (S, A), ``discount`` and ``b0`` (None means uniform), the pomdp reconstruction notes §1.1:
``T[a, s, s'] = P(s'|s, a)``, ``Z[a, s', o] = P(o|s', a)``, ``r[s, a]`` expected reward.
A :class:`~algos.pomdp.POMDP` with sparse ``T`` (``is_sparse``) is used sparse by the belief updates
(:func:`update`, :func:`successors`) and :func:`blind_policy_values`; the other functions work on
dense arrays and convert it with :meth:`~algos.pomdp.POMDP.to_dense` (refused, with the estimate,
above the package's memory limit).

A deterministic FSC with K nodes is ``(action, eta, m0)``: node ``m`` plays ``action[m]`` and moves
to ``eta[m, o]`` after observation ``o`` (``eta`` may also be given as (K, A, O); then
``eta[m, action[m], o]`` is used). Its exact value solves the K*S linear system (pomdp reconstruction notes §1.2)

    W[m, s] = r[s, a_m] + discount * sum_{s'} T[a_m, s, s'] sum_o Z[a_m, s', o] W[eta[m, o], s'],

and ``V^F(b0) = b0 . W[m0]``. Monte-Carlo rollouts and value iteration only cross-check it.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg

from .._validation import check_random_state, check_scalar_float, check_scalar_int
from . import _kernels

__all__ = [
    "update",
    "successors",
    "check_belief",
    "check_fsc",
    "evaluate_fsc",
    "evaluate_fsc_iterative",
    "simulate_fsc",
    "blind_policy_values",
    "FSCCheck",
    "SimulationResult",
    "BlindPolicies",
]

SIMPLEX_TOL = 1e-6
DENSE_LIMIT = 5000  # K*S above which the FSC system is solved sparse
BLIND_DENSE_BYTES = 256 * 2**20  # a sparse model's blind-policy system is solved dense up to this (S*S*8)


# --------------------------------------------------------------------------- model access
def _arrays(pomdp):
    """``(T, Z, r, discount)`` as float64 arrays, with shapes checked against each other.

    A sparse model is converted with ``to_dense()`` (a ``ValueError`` with the estimate when too large)."""
    if getattr(pomdp, "is_sparse", False):
        pomdp = pomdp.to_dense()
    try:
        T = np.asarray(pomdp.T, dtype=float)
        Z = np.asarray(pomdp.Z, dtype=float)
        r = np.asarray(pomdp.r, dtype=float)
        discount = pomdp.discount
    except AttributeError as exc:
        raise TypeError(
            "'pomdp' must have attributes T (A,S,S), Z (A,S,O), r (S,A), discount and b0; "
            f"got {type(pomdp).__name__} ({exc})."
        ) from None
    if T.ndim != 3 or T.shape[1] != T.shape[2]:
        raise ValueError(f"'pomdp.T' must have shape (A, S, S); got {T.shape}.")
    A, S, _ = T.shape
    if Z.ndim != 3 or Z.shape[:2] != (A, S):
        raise ValueError(f"'pomdp.Z' must have shape (A={A}, S={S}, O); got {Z.shape}.")
    if r.shape != (S, A):
        raise ValueError(f"'pomdp.r' must have shape (S={S}, A={A}); got {r.shape}.")
    discount = check_scalar_float(discount, "discount", low=0.0, high=1.0)
    return T, Z, r, discount


def _model_arrays(pomdp):
    """The model's ``(T, Z, r)`` as given (``None`` where missing), for ``accel.backend.resolve``."""
    return tuple(getattr(pomdp, name, None) for name in ("T", "Z", "r"))


def _n_states(pomdp):
    """``S`` of a model without converting its ``T`` (``n_states`` when present)."""
    n = getattr(pomdp, "n_states", None)
    return int(n) if n is not None else int(np.asarray(pomdp.T).shape[1])


def _is_sparse(pomdp):
    return bool(getattr(pomdp, "is_sparse", False))


def _sparse_parts(pomdp):
    """``(Z, r, discount, A, S)`` of a sparse model (its ``T`` stays in ``pomdp.transition_csr``)."""
    Z = np.asarray(pomdp.Z, dtype=float)
    r = np.asarray(pomdp.r, dtype=float)
    discount = check_scalar_float(pomdp.discount, "discount", low=0.0, high=1.0)
    return Z, r, discount, pomdp.n_actions, pomdp.n_states


def _transition_parts(pomdp):
    """``(T, Z, A, S)`` with ``T = None`` for a sparse model (its CSR is read per action)."""
    if _is_sparse(pomdp):
        Z, _, _, A, S = _sparse_parts(pomdp)
        return None, Z, A, S
    T, Z, _, _ = _arrays(pomdp)
    return T, Z, T.shape[0], T.shape[1]


def _predicted_and_posteriors(pomdp, T, Z, a, B2):
    """``belief_successors`` for action ``a``: dense kernel, or a CSR product then the observation kernel."""
    if T is None:
        Pred = np.ascontiguousarray(np.asarray(pomdp.transition_csr(a).T @ B2.T).T)
        return _kernels.posteriors_from_predicted(Pred, np.ascontiguousarray(Z[a]))
    return _kernels.belief_successors(np.ascontiguousarray(B2), np.ascontiguousarray(T[a]), np.ascontiguousarray(Z[a]))


def _b0(pomdp, b0, S):
    if b0 is None:
        b0 = getattr(pomdp, "b0", None)
    if b0 is None:
        return np.full(S, 1.0 / S)
    return check_belief(b0, S, name="b0")


def _need_discount_below_one(discount, what):
    if not discount < 1.0:
        raise ValueError(
            f"{what} needs 'discount' < 1; got {discount!r}. At discount 1 the system "
            "(I - discount * P) is singular (an undiscounted infinite-horizon value is not finite)."
        )


def _real_array(value, name):
    """``value`` as a float64 array; ``TypeError`` naming ``name`` on strings, complex or other
    non-real entries."""
    try:
        arr = np.asarray(value)
    except Exception as exc:  # noqa: BLE001 - ragged input and the like
        raise TypeError(f"'{name}' must be an array of real numbers; got {type(value).__name__}.") from exc
    if arr.dtype.kind not in "iufb":
        try:
            if arr.dtype.kind != "O":
                raise TypeError
            return arr.astype(float)
        except (TypeError, ValueError):
            raise TypeError(f"'{name}' must be an array of real numbers; got an array of dtype {arr.dtype}.") from None
    return arr.astype(float)


def _check_step(a, o, A, O):
    """The action ``a`` in ``[0, A)`` and the observation ``o`` in ``[0, O)`` of a controller step, checked."""
    return check_scalar_int(a, "a", low=0, high=A - 1), check_scalar_int(o, "o", low=0, high=O - 1)


def check_belief(b, S, name="b", tol=SIMPLEX_TOL):
    """Return ``b`` as a float vector on the simplex (clipped and renormalised within ``tol``).

    Raises ``ValueError`` saying by how much ``b`` is off the simplex.
    """
    b = _real_array(b, name)
    if b.shape != (S,):
        raise ValueError(f"'{name}' must be a belief of shape ({S},); got shape {b.shape}.")
    if not np.all(np.isfinite(b)):
        raise ValueError(f"'{name}' must contain only finite values; got {b}.")
    low = float(b.min())
    total = float(b.sum())
    if low < -tol:
        raise ValueError(
            f"'{name}' is not on the probability simplex: entry {int(b.argmin())} is {low:g} "
            f"(negative by {-low:g}; tolerance {tol:g})."
        )
    if abs(total - 1.0) > tol:
        raise ValueError(
            f"'{name}' is not on the probability simplex: its entries sum to {total:.10g} "
            f"(off by {total - 1.0:+.3g}; tolerance {tol:g})."
        )
    b = np.clip(b, 0.0, None)
    return b / b.sum()


def _check_action(a, A, name="a"):
    return check_scalar_int(a, name, low=0, high=A - 1)


# --------------------------------------------------------------------------- belief updates
def successors(pomdp, B, a):
    """Batched Bayes update of the beliefs ``B`` (N, S) (or one belief (S,)) under action ``a``.

    Returns ``(P, Bn, zero)``: ``P[n, o] = P(o | B[n], a)``, ``Bn[n, o] = tau(B[n], a, o)``, and the
    flags ``zero[n, o]`` of zero-probability observations, for which ``Bn[n, o]`` holds the
    prior-predicted belief ``B[n] @ T[a]`` (the posterior is undefined there; never branch on it).

    Parameters
    ----------
    pomdp : POMDP
        The model.
    B : array-like of shape (N, S) or (S,)
        Beliefs.
    a : int
        The action.

    Returns
    -------
    P : ndarray of shape (N, O)
        Observation probabilities.
    Bn : ndarray of shape (N, O, S)
        Successor beliefs.
    zero : ndarray of bool, shape (N, O)
        Zero-probability observations.
    """
    T, Z, A, S = _transition_parts(pomdp)
    a = _check_action(a, A)
    B = _real_array(B, "B")
    single = B.ndim == 1
    B2 = np.atleast_2d(B)
    if B2.ndim != 2 or B2.shape[1] != S:
        raise ValueError(f"'B' must have shape (N, {S}); got {B.shape}.")
    B2 = np.stack([check_belief(b, S, name=f"B[{i}]") for i, b in enumerate(B2)]) if len(B2) else B2
    P, Bn, zero = _predicted_and_posteriors(pomdp, T, Z, a, B2)
    if single:
        return P[0], Bn[0], zero[0]
    return P, Bn, zero


def update(pomdp, b, a, o):
    """Bayes update ``tau(b, a, o)``; returns ``(b_next, p_o)`` with ``p_o = P(o | b, a)``.

    Raises ``ValueError`` when ``b`` is not on the simplex or when ``P(o | b, a) = 0``.

    Parameters
    ----------
    pomdp : POMDP
        The model.
    b : array-like of shape (S,)
        The belief.
    a : int
        The action.
    o : int
        The observation.

    Returns
    -------
    b_next : ndarray of shape (S,)
        ``tau(b, a, o)``.
    p_o : float
        ``P(o | b, a)``.
    """
    T, Z, A, S = _transition_parts(pomdp)
    O = Z.shape[2]
    a = _check_action(a, A)
    o = check_scalar_int(o, "o", low=0, high=O - 1)
    b = check_belief(b, S)
    P, Bn, zero = _predicted_and_posteriors(pomdp, T, Z, a, b[None, :])
    if zero[0, o]:
        raise ValueError(
            f"observation o={o} has probability 0 after action a={a} from this belief "
            "(P(o | b, a) = 0), so the Bayes update tau(b, a, o) is undefined."
        )
    return Bn[0, o], float(P[0, o])


# --------------------------------------------------------------------------- FSCs
class FSCCheck(NamedTuple):
    """Totality certificate of a deterministic FSC (see :func:`check_fsc`)."""

    total: bool
    bad_nodes: np.ndarray        # nodes whose action is out of range
    bad_transitions: np.ndarray  # (n_bad, 2) pairs (node, observation) with successor out of range
    message: str

    def __bool__(self):
        return self.total


def _fsc_arrays(action, eta):
    action = np.asarray(action)
    eta = np.asarray(eta)
    if action.ndim != 1 or action.size == 0:
        raise ValueError(f"'action' must be a non-empty 1-d array (one action per node); got shape {action.shape}.")
    for name, arr in (("action", action), ("eta", eta)):
        if arr.size and arr.dtype.kind not in "iu":
            if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
                continue
            raise TypeError(f"'{name}' must contain integers; got an array of dtype {arr.dtype}.")
    return action.astype(np.int64), eta.astype(np.int64)


def check_fsc(action, eta, n_actions, n_observations):
    """Certify that the FSC ``(action, eta)`` is total: every node has an action in
    ``[0, n_actions)`` and every (node, observation) a successor node in ``[0, K)``.

    ``eta`` is (K, O) or (K, A, O) (then only the entries ``eta[m, action[m], :]`` matter).
    Returns an :class:`FSCCheck` (truthy iff total) listing the offending entries.

    Parameters
    ----------
    action : int array-like of shape (K,)
        Action of each memory node.
    eta : int array-like of shape (K, O) or (K, A, O)
        Memory update.
    n_actions, n_observations : int
        ``A`` and ``O``.

    Returns
    -------
    FSCCheck
        Truthy iff the controller is total.
    """
    action, eta = _fsc_arrays(action, eta)
    K = action.shape[0]
    A = check_scalar_int(n_actions, "n_actions", low=1)
    O = check_scalar_int(n_observations, "n_observations", low=1)
    if eta.shape not in ((K, O), (K, A, O)):
        raise ValueError(f"'eta' must have shape (K={K}, O={O}) or (K={K}, A={A}, O={O}); got {eta.shape}.")
    bad_nodes = np.flatnonzero((action < 0) | (action >= A))
    if eta.ndim == 3:
        eta = eta[np.arange(K), np.clip(action, 0, A - 1)]
    bad_tr = np.argwhere((eta < 0) | (eta >= K))
    parts = []
    if bad_nodes.size:
        m = int(bad_nodes[0])
        parts.append(
            f"{bad_nodes.size} node(s) have an action outside [0, {A}) (first: node {m} has action {int(action[m])})"
        )
    if bad_tr.size:
        m, o = (int(x) for x in bad_tr[0])
        parts.append(
            f"{len(bad_tr)} (node, observation) pair(s) have a successor outside [0, {K}) "
            f"(first: eta[{m}, {o}] = {int(eta[m, o])})"
        )
    total = not parts
    msg = "FSC is total." if total else "FSC is not total: " + "; ".join(parts) + "."
    return FSCCheck(total, bad_nodes, bad_tr, msg)


def _fsc_prepare(pomdp, action, eta, m0, b0):
    T, Z, r, discount = _arrays(pomdp)
    A, S, _ = T.shape
    O = Z.shape[2]
    cert = check_fsc(action, eta, A, O)
    if not cert.total:
        raise ValueError(cert.message)
    action, eta = _fsc_arrays(action, eta)
    K = action.shape[0]
    if eta.ndim == 3:
        eta = eta[np.arange(K), action]
    m0 = check_scalar_int(m0, "m0", low=0, high=K - 1)
    b0 = _b0(pomdp, b0, S)
    return T, Z, r, discount, action, eta, m0, b0


def _fsc_system(T, Z, r, action, eta, sparse):
    """Reward vector R (K*S,) and transition matrix P (K*S, K*S), index m*S + s."""
    K = action.shape[0]
    S = T.shape[1]
    O = Z.shape[2]
    R = r[:, action].T.reshape(-1)
    if not sparse:
        # blocks[m, o] = T[a_m] * Z[a_m, :, o] (row s, column s'); one vectorised add per o (within
        # one o every node m appears once, so the fancy-indexed += has no duplicates)
        P = np.zeros((K, S, K, S))
        Ta, Za = T[action], Z[action]  # (K, S, S), (K, S, O)
        rows = np.arange(K)
        for o in range(O):
            P[rows, :, eta[:, o], :] += Ta * Za[:, None, :, o]
        return R, P.reshape(K * S, K * S)
    rows, cols, vals = [], [], []
    for m in range(K):
        a = action[m]
        for o in range(O):
            blk = T[a] * Z[a, :, o][None, :]
            i, j = np.nonzero(blk)
            rows.append(m * S + i)
            cols.append(eta[m, o] * S + j)
            vals.append(blk[i, j])
    P = scipy.sparse.coo_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(K * S, K * S)
    ).tocsc()  # duplicates are summed
    return R, P


def evaluate_fsc(pomdp, action, eta, m0=0, b0=None, *, return_values=False, sparse=None):
    """Exact value ``V^F(b0) = b0 . W[m0]`` of a deterministic FSC (pomdp reconstruction notes §1.2).

    Solves ``(I - discount * P_F) W = R_F`` over the K*S unknowns; dense LU up to
    ``K*S = 5000``, ``scipy.sparse.linalg.spsolve`` beyond (or as forced by ``sparse``).
    With ``return_values=True`` returns ``(value, W)`` with ``W`` of shape (K, S).

    Parameters
    ----------
    pomdp : POMDP
        The model.
    action : int array-like of shape (K,)
        Action of each memory node.
    eta : int array-like of shape (K, O) or (K, A, O)
        Memory update.
    m0 : int, default=0
        Initial memory node.
    b0 : array-like of shape (S,) or None, default=None
        Initial belief (``None``: the model's ``b0``).
    return_values : bool, default=False
        Also return the node values ``W``.
    sparse : bool or None, default=None
        Force the sparse (True) or dense (False) solver (``None``: by size).

    Returns
    -------
    value : float
        ``V^F(b0)``.
    W : ndarray of shape (K, S)
        Node values; only with ``return_values=True``.
    """
    T, Z, r, discount, action, eta, m0, b0 = _fsc_prepare(pomdp, action, eta, m0, b0)
    _need_discount_below_one(discount, "exact FSC evaluation")
    K, S = action.shape[0], T.shape[1]
    if sparse is None:
        sparse = K * S > DENSE_LIMIT
    R, P = _fsc_system(T, Z, r, action, eta, sparse)
    if sparse:
        M = scipy.sparse.identity(K * S, format="csc") - discount * P
        W = scipy.sparse.linalg.spsolve(M, R)
    else:
        M = np.eye(K * S) - discount * P
        try:
            W = scipy.linalg.solve(M, R)
        except np.linalg.LinAlgError as exc:  # cannot happen for discount < 1 and stochastic P
            raise ValueError(f"the FSC evaluation system is singular ({exc}).") from None
    W = np.asarray(W).reshape(K, S)
    value = float(b0 @ W[m0])
    return (value, W) if return_values else value


def evaluate_fsc_iterative(pomdp, action, eta, m0=0, b0=None, *, tol=1e-11, max_iter=1_000_000,
                           return_values=False):
    """Iterative policy evaluation of the FSC (cross-check of :func:`evaluate_fsc`).

    Iterates ``W <- R + discount * P W`` from 0 until the a-posteriori error bound
    ``discount / (1 - discount) * ||W_new - W||_inf`` is below ``tol``.

    Parameters
    ----------
    pomdp : POMDP
        The model.
    action : int array-like of shape (K,)
        Action of each memory node.
    eta : int array-like of shape (K, O) or (K, A, O)
        Memory update.
    m0 : int, default=0
        Initial memory node.
    b0 : array-like of shape (S,) or None, default=None
        Initial belief (``None``: the model's ``b0``).
    tol : float, default=1e-11
        Target a-posteriori error.
    max_iter : int, default=1000000
        Maximum number of iterations.
    return_values : bool, default=False
        Also return the node values ``W``.

    Returns
    -------
    value : float
        ``V^F(b0)``.
    W : ndarray of shape (K, S)
        Node values; only with ``return_values=True``.
    """
    T, Z, r, discount, action, eta, m0, b0 = _fsc_prepare(pomdp, action, eta, m0, b0)
    _need_discount_below_one(discount, "iterative FSC evaluation")
    tol = check_scalar_float(tol, "tol", low=0.0, closed="neither")
    max_iter = check_scalar_int(max_iter, "max_iter", low=1)
    K, S = action.shape[0], T.shape[1]
    Ta = T[action]                 # (K, S, S)
    Za = Z[action]                 # (K, S, O)
    R = r[:, action].T             # (K, S)
    W = np.zeros((K, S))
    for _ in range(max_iter):
        X = np.einsum("kto,kot->kt", Za, W[eta])        # sum_o Z[a_m, s', o] W[eta[m,o], s']
        W_new = R + discount * np.einsum("kst,kt->ks", Ta, X)
        delta = float(np.max(np.abs(W_new - W)))
        W = W_new
        if discount * delta <= tol * (1.0 - discount):
            break
    value = float(b0 @ W[m0])
    return (value, W) if return_values else value


class SimulationResult(NamedTuple):
    """Monte-Carlo estimate of an FSC's discounted return."""

    mean: float
    stderr: float
    returns: np.ndarray
    horizon: int
    truncation_bound: float  # |true value - E[truncated return]| <= this


def _default_horizon(r, discount, eps=1e-8):
    rmax = float(np.max(np.abs(r)))
    if discount == 0.0 or rmax == 0.0:
        return 1
    # discount**H * rmax / (1 - discount) <= eps
    return max(1, math.ceil(math.log(eps * (1.0 - discount) / rmax) / math.log(discount)))


def _sample_rows(cum, u):
    """Index of the category drawn with uniform ``u`` from rows of cumulative probabilities."""
    idx = (u[:, None] >= cum).sum(axis=1)
    return np.minimum(idx, cum.shape[1] - 1)


def _simulation_params(n_episodes, horizon, random_state, r, discount, who):
    """The checked ``(n_episodes, horizon, rng)`` of a Monte-Carlo simulation; ``horizon=None`` is the
    default horizon of ``r`` and ``discount`` (which needs ``discount < 1``; ``who`` names the caller
    in that error)."""
    n_episodes = check_scalar_int(n_episodes, "n_episodes", low=2)
    if horizon is None:
        _need_discount_below_one(discount, who)
        horizon = _default_horizon(r, discount)
    horizon = check_scalar_int(horizon, "horizon", low=1)
    return n_episodes, horizon, check_random_state(random_state)


def simulate_fsc(pomdp, action, eta, m0=0, n_episodes=10_000, horizon=None, random_state=None, b0=None):
    """Monte-Carlo discounted return of the FSC from ``b0``, vectorised over episodes.

    Each step adds ``discount**t * r[s_t, a_t]`` (the expected immediate reward; same mean as the
    sampled reward), then draws ``s' ~ T[a, s]``, ``o ~ Z[a, s']`` and moves to ``eta[m, o]``.
    All draws come from the numpy generator ``random_state``. Returns a :class:`SimulationResult`
    with the mean, its standard error, the per-episode returns and the truncation bound
    ``discount**horizon * max|r| / (1 - discount)``.

    Parameters
    ----------
    pomdp : POMDP
        The model.
    action : int array-like of shape (K,)
        Action of each memory node.
    eta : int array-like of shape (K, O) or (K, A, O)
        Memory update.
    m0 : int, default=0
        Initial memory node.
    n_episodes : int, default=10000
        Number of episodes.
    horizon : int or None, default=None
        Steps per episode (``None``: the smallest horizon whose truncation bound is at most 1e-8).
    random_state : None, int, SeedSequence or Generator, default=None
        Seed of the simulation.
    b0 : array-like of shape (S,) or None, default=None
        Initial belief (``None``: the model's ``b0``).

    Returns
    -------
    SimulationResult
        Mean, standard error, per-episode returns and truncation bound.
    """
    T, Z, r, discount, action, eta, m0, b0 = _fsc_prepare(pomdp, action, eta, m0, b0)
    n_episodes, horizon, rng = _simulation_params(n_episodes, horizon, random_state, r, discount,
                                                  "simulate_fsc with horizon=None")
    cumT = np.cumsum(T, axis=2)
    cumZ = np.cumsum(Z, axis=2)
    s = _sample_rows(np.cumsum(b0)[None, :].repeat(n_episodes, 0), rng.random(n_episodes))
    m = np.full(n_episodes, m0, dtype=np.int64)
    ret = np.zeros(n_episodes)
    g = 1.0
    for _ in range(horizon):
        a = action[m]
        ret += g * r[s, a]
        s = _sample_rows(cumT[a, s], rng.random(n_episodes))
        o = _sample_rows(cumZ[a, s], rng.random(n_episodes))
        m = eta[m, o]
        g *= discount
    trunc = g * float(np.max(np.abs(r))) / (1.0 - discount) if discount < 1 else math.inf
    return SimulationResult(float(ret.mean()), float(ret.std(ddof=1) / math.sqrt(n_episodes)), ret,
                            horizon, trunc)


class BlindPolicies(NamedTuple):
    """Values of the blind (open-loop constant-action) policies."""

    values: np.ndarray   # (A,) value from b0 of "always play a"
    vectors: np.ndarray  # (A, S) alpha vectors v_a = (I - discount T_a)^{-1} r[:, a]
    best_action: int     # lowest index among the best
    best_value: float


def blind_policy_values(pomdp, b0=None):
    """Exact values of the A blind policies "always play a" (pomdp reconstruction notes §8.1):
    ``v_a = (I - discount * T[a])^{-1} r[:, a]`` and ``b0 . v_a``; also the best one.

    These are the K = 1 FSCs; their vectors are valid (achievable) PBVI lower-bound alphas.

    Parameters
    ----------
    pomdp : POMDP
        The model.
    b0 : array-like of shape (S,) or None, default=None
        Initial belief (``None``: the model's ``b0``).

    Returns
    -------
    BlindPolicies
        The values ``b0 . v_a``, the vectors ``v_a``, the best action and its value.
    """
    if _is_sparse(pomdp):
        _, r, discount, A, S = _sparse_parts(pomdp)
        _need_discount_below_one(discount, "blind policy evaluation")
        b0 = _b0(pomdp, b0, S)
        vectors = np.empty((A, S))
        for a in range(A):
            if S * S * 8 <= BLIND_DENSE_BYTES:  # small: the dense solve, as for a dense model
                vectors[a] = scipy.linalg.solve(np.eye(S) - discount * pomdp.transition_csr(a).toarray(), r[:, a])
            else:
                M = scipy.sparse.identity(S, format="csc") - discount * pomdp.transition_csr(a).tocsc()
                vectors[a] = scipy.sparse.linalg.spsolve(M, r[:, a])
        values = vectors @ b0
        best = int(np.argmax(values))
        return BlindPolicies(values, vectors, best, float(values[best]))
    T, Z, r, discount = _arrays(pomdp)
    A, S, _ = T.shape
    _need_discount_below_one(discount, "blind policy evaluation")
    b0 = _b0(pomdp, b0, S)
    I = np.eye(S)
    vectors = np.stack([scipy.linalg.solve(I - discount * T[a], r[:, a]) for a in range(A)])
    values = vectors @ b0
    best = int(np.argmax(values))
    return BlindPolicies(values, vectors, best, float(values[best]))
