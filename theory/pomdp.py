r"""Bounds for finite-memory POMDP controllers built from belief codebooks (RECAP).

Model ([C], the pomdp reconstruction notes, section 1.1): finite POMDP with ``T[a, s, s'] = P(s'|s, a)``,
``Z[a, s', o] = P(o|s', a)``, expected reward ``r[s, a]`` and discount :math:`\gamma \in [0, 1)`.
:math:`V^*` is convex on the simplex and is the supremum of linear functions :math:`b \cdot \alpha`
of achievable plans, each with :math:`R_{\min}/(1-\gamma) \le \alpha(s) \le R_{\max}/(1-\gamma)`.

A codebook :math:`C = \{c_1, \dots, c_K\}` with a quantiser gives the deterministic finite-state
controller (FSC) :math:`(\pi, \eta, m_0)`, :math:`\eta(k, a, o) = q(\tau(c_k, a, o))`; its exact
value is :math:`b_0 \cdot W_{m_0}` (pomdp reconstruction notes, section 1.2).

Status tags follow the reconstruction notes
(:doc:`/pomdp_reconstruction`; its sections and statements T1, T2, ... are cited below): **[C]** confirmed by the abstract or a primary source,
**[R]** reconstructed by the project from prior work, **[D]** derived with a proof sketch, **[V]**
checked numerically in the reference prototype. Every bound here is **[R]**: the target paper is
known only from its abstract.

Sources
-------
* [RECAP] the target NeurIPS 2026 paper "RECAP", known only from its abstract ("computable upper
  bounds and a converse lower bound on the value loss of finite-memory controllers").
* [SYL] N. Saldi, S. Yüksel, T. Linder, "Finite model approximations for partially observed
  Markov decision processes with discounted cost", IEEE TAC 2020 (belief quantisation).
* [KY] A. D. Kara, S. Yüksel, "Near optimality of finite memory feedback policies in partially
  observed Markov decision processes", JMLR 2022.
* [BMDG] A. Banerjee, S. Merugu, I. Dhillon, J. Ghosh, "Clustering with Bregman divergences",
  JMLR 2005 (Bregman information, hard clustering, rate-distortion).
* [Csi74] I. Csiszár, "On the computation of rate-distortion functions", IEEE TIT 1974 (the dual
  used to certify Blahut–Arimoto lower bounds).

Pure numpy; imports nothing from ``algos``.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np

from ._checks import check_scalar_float, check_scalar_int

__all__ = [
    "BOUND_KIND",
    "lipschitz_constant",
    "alpha_lipschitz_constant",
    "bayes_successors",
    "closure_distortion",
    "closure_bound",
    "decision_distortion",
    "merge_cost",
    "decision_witnesses",
    "bregman_hard_clustering",
    "rate_distortion_lower_bound",
    "converse_depth1",
    "check_fsc",
    "FSCCertificate",
]

BOUND_KIND = {
    "lipschitz_constant": "exact",
    "alpha_lipschitz_constant": "exact",
    "closure_bound": "exact",
    "decision_distortion": "exact",
    "merge_cost": "exact",
    "bregman_hard_clustering": "exact",
    "rate_distortion_lower_bound": "exact",
    "converse_depth1": "exact",
}

_TOL = 1e-12


# --- checks: the shared scalar checks of theory/_checks.py, and the array checks of these bounds ----

def _float(value, name, *, low=None, high=None, high_open=False):
    """A finite real scalar in ``[low, high]`` (``[low, high)`` with ``high_open``): the shared check."""
    return check_scalar_float(value, name, low=low, high=high, closed="left" if high_open else "both")


def _count(value, name):
    """A positive integer count (``2.5``, ``True`` or ``"3"`` are refused, not truncated)."""
    return check_scalar_int(value, name, low=1)


def _discount(discount):
    """The discounted bounds need ``0 <= discount < 1`` (at 1 the factors 1/(1-discount) blow up)."""
    return _float(discount, "discount", low=0.0, high=1.0, high_open=True)


def _array(x, name, ndim):
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError) as exc:  # ragged input
        raise TypeError(f"'{name}' must be an array of real numbers; got {type(x).__name__}.") from exc
    if raw.dtype.kind not in "biuf":
        raise TypeError(f"'{name}' must be an array of real numbers; got an array of dtype {raw.dtype}.")
    x = raw.astype(float)
    if x.ndim != ndim:
        raise ValueError(f"'{name}' must be a {ndim}-d array; got shape {x.shape}.")
    if x.size == 0:
        raise ValueError(f"'{name}' must not be empty; got shape {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"'{name}' must contain only finite values.")
    return x


def _index_array(x, name, n):
    """An integer array with entries in ``[0, n)`` (integral floats accepted, NaN and 2.5 refused)."""
    raw = np.asarray(x)
    if raw.dtype.kind == "f" and raw.size and np.all(np.isfinite(raw)) and np.all(raw == np.round(raw)):
        raw = raw.astype(np.int64)
    if raw.size == 0 or raw.dtype.kind not in "iu":
        raise TypeError(f"'{name}' must be a non-empty array of ints in [0, {n}); got an array of dtype "
                        f"{raw.dtype} and shape {raw.shape}.")
    if raw.min() < 0 or raw.max() >= n:
        bad = raw[(raw < 0) | (raw >= n)].flat[0]
        raise ValueError(f"'{name}' must hold ints in [0, {n}); got {int(bad)}.")
    return raw.astype(np.int64)


def _beliefs(B, name="B", S=None):
    """Beliefs as an (n, S) array; one belief (S,) is read as n = 1. ``S``: the number of states the
    other arguments fix (checked when given)."""
    if np.ndim(B) not in (1, 2):
        raise ValueError(f"'{name}' must have shape (n, S) or (S,); got shape {np.shape(B)}.")
    B = np.atleast_2d(_array(B, name, np.ndim(B)))
    if S is not None and B.shape[1] != S:
        raise ValueError(f"'{name}' must have S = {S} columns (one per state); got shape {B.shape}.")
    return B


def _n_states(alphas):
    """The number of states of an (n, S) array of alpha vectors (``None`` when it is not 2-d)."""
    return np.shape(alphas)[1] if np.ndim(alphas) == 2 else None


def _value(alphas, B):
    return (np.atleast_2d(B) @ _array(alphas, "alphas", 2).T).max(axis=1)


# --- Lipschitz constants -------------------------------------------------------------------------

def lipschitz_constant(r, discount):
    r"""Lipschitz constant of :math:`V^*` in the belief's :math:`L^1` norm.

    **Statement ([R], pomdp reconstruction notes, section 1.1).** For all beliefs :math:`b, b'`,

    .. math:: |V^*(b) - V^*(b')| \le L\,\|b - b'\|_1, \qquad
              L = \frac{R_{\max} - R_{\min}}{2(1-\gamma)},

    with :math:`R_{\min}, R_{\max}` the min and max of ``r``. Proof: :math:`V^* = \sup_\sigma
    b\cdot\alpha_\sigma` with every :math:`\alpha_\sigma` in :math:`[R_{\min}, R_{\max}]/(1-\gamma)`;
    since :math:`b - b'` sums to 0, :math:`|\alpha\cdot(b-b')| \le \tfrac12 \mathrm{span}(\alpha)
    \|b-b'\|_1`. (In total variation the constant is twice this.) The same constant bounds
    :math:`b \mapsto b\cdot W_m` for any controller node.

    Assumptions: finite POMDP, :math:`0 \le \gamma < 1`. Source: standard; used by [RECAP] (the reconstruction's
    reconstruction). Kind: ``exact``. Status: reconstructed.

    .. note:: reconstructed from [SYL] and the pomdp reconstruction notes (section 1.1).

    Parameters
    ----------
    r : array-like of shape (S, A)
        Expected immediate rewards.
    discount : float
        Discount factor, in [0, 1).

    Returns
    -------
    float
        :math:`L = (R_{\max} - R_{\min}) / (2(1-\gamma))`.

    Examples
    --------
    >>> lipschitz_constant([[0.0, 1.0], [-1.0, 0.5]], 0.5)
    2.0
    """
    r = _array(r, "r", 2)
    discount = _discount(discount)
    if r.size == 0:
        raise ValueError("'r' must not be empty.")
    return float((r.max() - r.min()) / (2.0 * (1.0 - discount)))


def alpha_lipschitz_constant(alphas):
    r"""Tighter computable constant :math:`L_\Gamma = \max_{\alpha \in \Gamma} \mathrm{span}(\alpha)/2`.

    **Statement ([R], pomdp reconstruction notes, section 1.3).** :math:`|V_\Gamma(b) - V_\Gamma(b')| \le L_\Gamma
    \|b - b'\|_1` for :math:`V_\Gamma(b) = \max_{\alpha\in\Gamma} \alpha\cdot b`, and
    :math:`L_\Gamma \le L` when every :math:`\alpha` is achievable. Pass
    :math:`\Gamma \cup \{W_m\}` to cover a controller's node values too.

    Source: pomdp reconstruction notes, section 1.3 (reconstruction). Kind: ``exact``. Status: reconstructed.

    .. note:: reconstructed by the project (pomdp reconstruction notes, section 1.3).

    Parameters
    ----------
    alphas : array-like of shape (n_alpha, S)
        The alpha vectors :math:`\Gamma`.

    Returns
    -------
    float
        :math:`L_\Gamma = \max_{\alpha \in \Gamma} \mathrm{span}(\alpha)/2`.

    Examples
    --------
    >>> alpha_lipschitz_constant([[0.0, 4.0], [1.0, 2.0]])
    2.0
    """
    alphas = _array(alphas, "alphas", 2)
    if alphas.size == 0:
        raise ValueError("'alphas' must hold at least one vector.")
    return float((alphas.max(axis=1) - alphas.min(axis=1)).max() / 2.0)


# --- closure distortion and the upper bounds U1, U2, U3 -------------------------------------------

def bayes_successors(T, Z, B, a):
    r"""Batched Bayes update: ``P[n, o] = P(o | B[n], a)`` and ``Bn[n, o] = tau(B[n], a, o)``.

    Rows with ``P[n, o] = 0`` hold the predicted belief ``B[n] @ T[a]`` (the posterior is
    undefined there). Pure numpy helper for :func:`closure_distortion`.

    Parameters
    ----------
    T : array-like of shape (A, S, S)
        Transition probabilities ``T[a, s, s'] = P(s' | s, a)``.
    Z : array-like of shape (A, S, O)
        Observation probabilities ``Z[a, s', o] = P(o | s', a)``.
    B : array-like of shape (n, S)
        Beliefs.
    a : int
        The action.

    Returns
    -------
    P : ndarray of shape (n, O)
        Observation probabilities ``P(o | B[n], a)``.
    Bn : ndarray of shape (n, O, S)
        Successor beliefs ``tau(B[n], a, o)``.
    """
    T = _array(T, "T", 3)
    Z = _array(Z, "Z", 3)
    B = _beliefs(B, S=T.shape[1])
    if isinstance(a, (bool, np.bool_)) or not isinstance(a, numbers.Integral) or not 0 <= int(a) < T.shape[0]:
        raise ValueError(f"'a' must be an int in [0, {T.shape[0]}); got {a!r}.")
    pred = B @ T[a]                                  # (n, S')
    joint = pred[:, None, :] * Z[a].T[None, :, :]    # (n, O, S')
    P = joint.sum(axis=2)
    zero = P <= _TOL
    Bn = np.where(zero[:, :, None], pred[:, None, :], joint / np.where(zero, 1.0, P)[:, :, None])
    return np.where(zero, 0.0, P), Bn


def closure_distortion(T, Z, codebook, eta, action=None, b0=None, m0=None):
    r"""Closure distortions :math:`\rho(k, a)`, :math:`\rho`, :math:`\rho_\pi` and :math:`\delta_0`.

    **Definitions ([R], pomdp reconstruction notes, section 1.3).** For a codebook :math:`C` and memory update
    :math:`\eta(k, a, o)` (any quantiser),

    .. math:: \rho(k,a) = \sum_o P(o\mid c_k,a)\,\|\tau(c_k,a,o) - c_{\eta(k,a,o)}\|_1,\quad
              \rho = \max_{k,a}\rho(k,a),\quad \rho_\pi = \max_k \rho(k,\pi(k)),\quad
              \delta_0 = \|b_0 - c_{m_0}\|_1 .

    Status: reconstructed (definitions of the pomdp reconstruction notes). Source: pomdp
    reconstruction notes, section 1.3.

    Parameters
    ----------
    T : array-like of shape (A, S, S)
        Transition probabilities ``T[a, s, s'] = P(s' | s, a)``.
    Z : array-like of shape (A, S, O)
        Observation probabilities ``Z[a, s', o] = P(o | s', a)``.
    codebook : array-like of shape (K, S)
        The codebook beliefs :math:`c_k`.
    eta : int array-like of shape (K, A, O)
        Memory update :math:`\eta(k, a, o)`.
    action : int array-like of shape (K,), optional
        :math:`\pi`; needed for ``rho_pi``.
    b0 : array-like of shape (S,), optional
        Initial belief; with ``m0``, needed for ``delta0``.
    m0 : int, optional
        Initial memory state; with ``b0``, needed for ``delta0``.

    Returns
    -------
    dict
        ``rho_table`` (K, A), ``rho``, ``rho_pi`` (None without ``action``) and ``delta0`` (None
        without ``b0`` and ``m0``).
    """
    T = _array(T, "T", 3)
    Z = _array(Z, "Z", 3)
    C = _beliefs(codebook, "codebook", S=T.shape[1])
    K, S = C.shape
    A, O = T.shape[0], Z.shape[2]
    eta = _index_array(eta, "eta", K)
    if eta.shape != (K, A, O):
        raise ValueError(f"'eta' must have shape (K, A, O) = ({K}, {A}, {O}); got {eta.shape}.")
    table = np.zeros((K, A))
    for a in range(A):
        P, Bn = bayes_successors(T, Z, C, a)
        tgt = C[eta[:, a, :]]                       # (K, O, S)
        table[:, a] = (P * np.abs(Bn - tgt).sum(axis=2)).sum(axis=1)
    out = {"rho_table": table, "rho": float(table.max()), "rho_pi": None, "delta0": None}
    if action is not None:
        action = _index_array(action, "action", A)
        if action.shape != (K,):
            raise ValueError(f"'action' must have shape (K,) = ({K},); got {action.shape}.")
        out["rho_pi"] = float(table[np.arange(K), action].max())
    if b0 is not None and m0 is not None:
        if isinstance(m0, (bool, np.bool_)) or not isinstance(m0, numbers.Integral) or not 0 <= int(m0) < K:
            raise ValueError(f"'m0' must be an int in [0, {K}); got {m0!r}.")
        b0 = _array(b0, "b0", 1)
        if b0.shape != (S,):
            raise ValueError(f"'b0' must have shape ({S},); got {b0.shape}.")
        out["delta0"] = float(np.abs(b0 - C[int(m0)]).sum())
    return out


def closure_bound(L, rho, rho_pi, delta0, discount):
    r"""Upper bounds U1, U3 and U2 on the value loss of a codebook controller.

    **Statements ([R], pomdp reconstruction notes, section 1.3)**, for any codebook and any quantiser, with
    :math:`L` from :func:`lipschitz_constant` (or :math:`L_\Gamma` over :math:`\Gamma\cup\{W_m\}`):

    .. math::
        \text{U1:}\quad & \max_k |V^*(c_k) - V_C(k)| \le \frac{\gamma L \rho}{1-\gamma}, \\
        \text{U3:}\quad & \max_k |c_k\cdot W_k - V_C^\pi(k)| \le \frac{\gamma L \rho_\pi}{1-\gamma}, \\
        \text{U2:}\quad & V^*(b_0) - V^F(b_0) \le 2L\delta_0 + \frac{2\gamma L\rho}{1-\gamma},

    :math:`V_C` the optimal value of the finite MDP :math:`M_C` (rewards :math:`r(c_k, a)`,
    :math:`p(k'|k,a) = \sum_o P(o|c_k,a) 1[\eta(k,a,o)=k']`), :math:`V_C^\pi` the value of
    :math:`\pi` in :math:`M_C`, :math:`W` the exact node values of the FSC. U1 and U3 hold for any
    :math:`\pi`; U2 needs :math:`\pi` optimal in :math:`M_C` (action rule (b), quantized MDP).
    Proof sketch: the Bellman errors of :math:`V^*` (resp. :math:`c\cdot W`) in :math:`M_C` are at
    most :math:`\gamma L \rho` (resp. :math:`\gamma L \rho_\pi`) by the Lipschitz property, and a
    :math:`\gamma`-contraction turns them into the stated sup-norm gaps; U2 = Lipschitz at
    :math:`b_0` (twice) + U1 + U3, with :math:`\rho_\pi \le \rho`.

    Assumptions: :math:`0 \le \gamma < 1`; codewords on the simplex. Source: [RECAP] (abstract:
    "computable upper bounds"), reconstructed from [SYL] by the pomdp reconstruction notes. Kind: ``exact``. Status:
    reconstructed; checked numerically [V] in the reference prototype (and by this project's
    tests).

    .. note:: reconstructed from [SYL] (pomdp reconstruction notes, section 1.3, U1/U2/U3).

    Parameters
    ----------
    L, rho, rho_pi, delta0 : float >= 0 (``rho_pi`` or ``delta0`` may be None: then U3 / U2 are None)
    discount : float in [0, 1)

    Returns
    -------
    dict with ``U1``, ``U2``, ``U3``.

    Examples
    --------
    >>> closure_bound(1.0, 0.1, 0.05, 0.0, 0.5)
    {'U1': 0.1, 'U2': 0.2, 'U3': 0.05}
    """
    discount = _discount(discount)
    L = _float(L, "L", low=0.0)
    rho = _float(rho, "rho", low=0.0)
    f = discount / (1.0 - discount)
    out = {"U1": f * L * rho}
    out["U2"] = None if delta0 is None else 2.0 * L * _float(delta0, "delta0", low=0.0) + 2.0 * f * L * rho
    out["U3"] = None if rho_pi is None else f * L * _float(rho_pi, "rho_pi", low=0.0)
    return out


# --- decision distortion, merge cost, witnesses --------------------------------------------------

def decision_distortion(B, C, alphas):
    r"""Decision (Bregman) distortion :math:`d_V(b, c) = V(b) - \alpha_c\cdot b \ge 0`.

    **Definition ([R], pomdp reconstruction notes, section 1.3).** :math:`V = V_\Gamma`, :math:`\alpha_c =
    \arg\max_{\alpha\in\Gamma}\alpha\cdot c` (lowest index on ties): the loss of committing to
    :math:`c`'s plan while the belief is :math:`b`; the Bregman divergence of the convex
    piecewise-linear :math:`V_\Gamma` with the subgradient chosen at :math:`c`.

    Kind: ``exact``. Status: reconstructed.

    .. note:: reconstructed from [BMDG] (pomdp reconstruction notes, section 1.3).

    Parameters
    ----------
    B : array-like of shape (n, S)
        Beliefs :math:`b`.
    C : array-like of shape (m, S)
        Codebook beliefs :math:`c`.
    alphas : array-like of shape (n_alpha, S)
        The alpha vectors :math:`\Gamma` defining :math:`V_\Gamma`.

    Returns
    -------
    ndarray of shape (n, m)
        ``d[i, j] = d_V(B[i], C[j])``.

    Examples
    --------
    >>> decision_distortion([[1.0, 0.0]], [[0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]])
    array([[1.]])
    """
    G = _array(alphas, "alphas", 2)
    B = _beliefs(B, S=G.shape[1])
    C = _beliefs(C, "C", S=G.shape[1])
    ac = G[np.argmax(C @ G.T, axis=1)]               # (m, S)
    return np.maximum(_value(G, B)[:, None] - B @ ac.T, 0.0)


def merge_cost(B, w, alphas=None, *, values=None, value_at_mean=None):
    r"""Merge (confusion) cost, the Jensen gap of :math:`V` over one memory cell.

    **Definition ([R], pomdp reconstruction notes, section 1.3).**

    .. math:: J(\text{cell}) = \sum_i p_i V(b_i) - P\,V(\bar b), \quad P = \sum_i p_i,
              \ \bar b = \sum_i p_i b_i / P .

    :math:`J \ge 0` by convexity, and :math:`J = 0` iff some :math:`\alpha\in\Gamma` is optimal for
    every :math:`b_i` with :math:`p_i > 0` (the beliefs are not decision witnesses against each
    other). With ``alphas``, :math:`V = V_\Gamma`; alternatively pass ``values`` (at the ``B``) and
    ``value_at_mean`` (a float) to use brackets (then the result may be negative by the gap).

    Kind: ``exact``. Status: reconstructed.

    .. note:: reconstructed from [BMDG] (Bregman information; pomdp reconstruction notes, section 1.3).

    Parameters
    ----------
    B : array-like of shape (n, S)
        The beliefs of the cell.
    w : array-like of shape (n,)
        Their non-negative weights :math:`p_i`.
    alphas : array-like of shape (n_alpha, S), optional
        The alpha vectors defining :math:`V = V_\Gamma`.
    values : array-like of shape (n,), optional
        Values at the ``B``, used instead of ``alphas`` (with ``value_at_mean``).
    value_at_mean : float, optional
        Value at the cell mean :math:`\bar b`, used instead of ``alphas`` (with ``values``).

    Returns
    -------
    float
        The Jensen gap :math:`J`.

    Examples
    --------
    >>> G = [[1.0, 0.0], [0.0, 1.0]]
    >>> merge_cost([[1.0, 0.0], [0.0, 1.0]], [0.5, 0.5], G)
    0.5
    """
    B = _beliefs(B, S=None if alphas is None else _n_states(alphas))
    w = _array(w, "w", 1)
    if w.shape[0] != B.shape[0] or np.any(w < 0):
        raise ValueError(f"'w' must hold one non-negative weight per row of 'B'; got {w.shape[0]} weights for "
                         f"{B.shape[0]} beliefs{' (some negative)' if np.any(w < 0) else ''}.")
    P = float(w.sum())
    if P <= 0:
        return 0.0
    if alphas is not None:
        values = _value(alphas, B)
        value_at_mean = float(_value(alphas, (w @ B) / P)[0])
    return float(w @ np.asarray(values, dtype=float) - P * float(value_at_mean))


def decision_witnesses(B, alphas, tol=1e-9):
    r"""Pairwise decision-witness matrix: ``W[i, j]`` is True iff ``B[i]`` and ``B[j]`` have no
    common maximising alpha vector (within ``tol``), i.e. their equal-weight merge cost is > 0.

    Definition [R] (pomdp reconstruction notes, section 1.3). Status: reconstructed.

    Parameters
    ----------
    B : array-like of shape (n, S)
        Beliefs.
    alphas : array-like of shape (n_alpha, S)
        The alpha vectors.
    tol : float, default=1e-9
        Tolerance on "maximising".

    Returns
    -------
    ndarray of bool, shape (n, n)
        The witness matrix ``W``.
    """
    G = _array(alphas, "alphas", 2)
    B = _beliefs(B, S=G.shape[1])
    sc = B @ G.T
    tol = _float(tol, "tol", low=0.0)
    opt = sc >= sc.max(axis=1, keepdims=True) - tol     # (n, |G|)
    common = (opt[:, None, :] & opt[None, :, :]).any(axis=2)
    return ~common


# --- hard clustering and rate-distortion ---------------------------------------------------------

def _partitions(n, k):
    """All restricted-growth label vectors of n items into at most k non-empty cells."""
    out = []

    def rec(prefix, m):
        if len(prefix) == n:
            out.append(tuple(prefix))
            return
        for c in range(min(m + 1, k)):
            prefix.append(c)
            rec(prefix, max(m, c + 1))
            prefix.pop()

    rec([], 0)
    return np.asarray(out, dtype=np.int64).reshape(len(out), n)


def _n_partitions(n, k):
    # sum_{j<=k} Stirling2(n, j)
    S = [[0] * (k + 1) for _ in range(n + 1)]
    S[0][0] = 1
    for i in range(1, n + 1):
        for j in range(1, k + 1):
            S[i][j] = j * S[i - 1][j] + S[i - 1][j - 1]
    return sum(S[n][1:k + 1])


def bregman_hard_clustering(B, w, n_clusters, value_fn, values=None, *, max_partitions=500_000):
    r"""Exact Bregman hard-clustering distortion :math:`D_K(\mu)` of a finite belief law.

    **Definition ([R], pomdp reconstruction notes, section 1.3).** For :math:`\mu = \sum_i p_i \delta_{b_i}`,

    .. math:: D_K(\mu) = \min_{\text{partitions into } \le K \text{ cells}} \sum_{\text{cells}} J(\text{cell})
              = \sum_i p_i V(b_i) - \max_{\text{partitions}} \sum_m P_m V(\bar b_m).

    Soft assignments cannot do better (:math:`\sum_m P_m V(\bar b_m)` is a convex function of the
    assignment, so its maximum over the assignment polytope is at a vertex). Computed by exhaustive
    enumeration of partitions (exact; refused above ``max_partitions``).

    Kind: ``exact``. Status: reconstructed.

    .. note:: reconstructed from [BMDG] (pomdp reconstruction notes, section 1.3).

    Parameters
    ----------
    B : array-like of shape (n, S)
        The beliefs :math:`b_i`.
    w : array-like of shape (n,)
        Their non-negative weights :math:`p_i`.
    n_clusters : int
        :math:`K`, at least 1.
    value_fn : callable
        Maps an (m, S) array to (m,) values: the value used at the cell means (e.g. an upper bound
        of :math:`V^*` for a rigorous lower bound of the true :math:`D_K`).
    values : array-like of shape (n,), optional
        Values at the ``B`` (default ``value_fn(B)``; a lower bound of :math:`V^*` for rigour).
    max_partitions : int, default=500000
        Largest number of partitions enumerated; above it a ``ValueError`` is raised.

    Returns
    -------
    D : float
        :math:`D_K(\mu)`.
    merged : float
        The maximal :math:`\sum_m P_m V(\bar b_m)`.
    labels : ndarray of int, shape (n,)
        The optimal cell of each belief.
    """
    B = _beliefs(B)
    w = _array(w, "w", 1)
    n = B.shape[0]
    if w.shape[0] != n:
        raise ValueError(f"'w' must hold one weight per row of 'B'; got {w.shape[0]} weights for {n} beliefs.")
    k = _count(n_clusters, "n_clusters")
    max_partitions = _count(max_partitions, "max_partitions")
    if values is None:
        values = value_fn(B)
    spread = float(w @ np.asarray(values, dtype=float))
    if n == 0:
        return 0.0, 0.0, np.zeros(0, dtype=np.int64)
    k = min(k, n)
    count = _n_partitions(n, k)
    if count > max_partitions:
        raise ValueError(
            f"exact hard clustering of {n} beliefs into <= {k} cells needs {count} partitions "
            f"(> max_partitions={max_partitions})."
        )
    labels = _partitions(n, k)                      # (np, n)
    onehot = (labels[:, :, None] == np.arange(k)[None, None, :]).astype(float)   # (np, n, k)
    mass = np.einsum("pnk,n->pk", onehot, w)                                     # (np, k)
    sums = np.einsum("pnk,n,ns->pks", onehot, w, B)                              # (np, k, S)
    nz = mass > 0
    means = sums[nz] / mass[nz][:, None]
    vals = np.zeros_like(mass)
    vals[nz] = mass[nz] * np.asarray(value_fn(means), dtype=float)
    merged_all = vals.sum(axis=1)
    best = int(np.argmax(merged_all))
    merged = float(merged_all[best])
    return spread - merged, merged, labels[best]


def rate_distortion_lower_bound(p, d, rate, *, lambdas=None, n_iter=200):
    r"""Certified lower bound on the distortion-rate function :math:`D_\mu(R)` by Blahut–Arimoto.

    **Definition ([R], pomdp reconstruction notes, section 1.3).** :math:`D_\mu(R) = \min\{E\,d(B, \hat A) :
    I(B; \hat A) \le R\}` over test channels into the finite reproduction alphabet (columns of
    ``d``). For the converse, :math:`d(b, \alpha) = V^*(b) - \alpha\cdot b`, :math:`R = \log K`
    (nats) and :math:`D_\mu(\log K) \le D_K(\mu)`, because a hard :math:`K`-cell assignment has
    :math:`I \le H \le \log K`.

    For each slope :math:`\lambda` of a grid, Blahut–Arimoto gives an output law :math:`q`; then
    :math:`c_i = 1/\sum_j q_j e^{-\lambda d_{ij}}`, rescaled so that
    :math:`\max_j \sum_i p_i c_i e^{-\lambda d_{ij}} \le 1`, is dual feasible and [Csi74]

    .. math:: D_\mu(R) \ge \frac{\sum_i p_i \log c_i - R}{\lambda}.

    The returned value is the maximum of these certificates and 0, hence a rigorous lower bound
    regardless of Blahut–Arimoto's convergence. Kind: ``exact``. Status: reconstructed.

    .. note:: reconstructed from [BMDG] and [Csi74] (pomdp reconstruction notes, section 1.3).

    Parameters
    ----------
    p : array-like of shape (n,)
        The law :math:`\mu` on the source points.
    d : array-like of shape (n, m)
        Distortions :math:`d(b_i, \alpha_j)` to the reproduction letters.
    rate : float
        :math:`R` in nats (``log K`` for the converse).
    lambdas : array-like of float, optional
        Grid of slopes :math:`\lambda > 0`; a default grid is used when omitted.
    n_iter : int, default=200
        Blahut-Arimoto iterations per slope.

    Returns
    -------
    D_lower : float
        The certified lower bound of :math:`D_\mu(R)`.
    D_achieved : float
        The smallest distortion reached by a Blahut-Arimoto test channel of rate at most ``rate``
        (an upper bound of :math:`D_\mu(R)`; ``inf`` if none).

    Examples
    --------
    >>> lo, hi = rate_distortion_lower_bound([0.5, 0.5], [[0.0, 1.0], [1.0, 0.0]], math.log(2))
    >>> abs(lo) < 1e-6 and hi < 1e-3
    True
    """
    p = _array(p, "p", 1)
    d = _array(d, "d", 2)
    rate = _float(rate, "rate", low=0.0)
    if d.shape[0] != p.shape[0]:
        raise ValueError(f"'d' must have one row per mass of 'p'; got {d.shape[0]} rows for {p.shape[0]} masses.")
    if p.size and (p.min() < 0.0 or abs(float(p.sum()) - 1.0) > 1e-9):
        raise ValueError(f"'p' must be a probability vector (non-negative, summing to 1 within 1e-9); got "
                         f"min {float(p.min())!r} and sum {float(p.sum())!r}.")
    keep = p > 0
    p, d = p[keep] / p[keep].sum(), d[keep]
    if p.size == 0:
        return 0.0, 0.0
    dmin = d.min(axis=1, keepdims=True)
    base = float(p @ dmin[:, 0])                    # D >= E min_j d_ij always
    d0 = d - dmin                                   # shift: exact for the bound (added back)
    scale = float(d0.max())
    if scale <= 0:
        return base, base
    if rate <= 0.0:                                 # D(0) = min_j sum_i p_i d_ij (closed form)
        v = float((p @ d0).min())
        return base + v, base + v
    if rate >= math.log(p.size) - 1e-12:            # one cell per point: D = E min_j d_ij
        return base, base
    if lambdas is None:
        lambdas = np.geomspace(1e-3, 1e4, 40) / scale
    lam = np.asarray(lambdas, dtype=float)[:, None, None]
    E = np.exp(-lam * d0[None])                     # (L, n, m), all slopes at once
    m = d.shape[1]
    q = np.full((lam.shape[0], m), 1.0 / m)
    for _ in range(_count(n_iter, "n_iter")):
        den = np.einsum("lnm,lm->ln", E, q)
        q = q * np.einsum("n,lnm->lm", p, E / den[:, :, None])
        q = np.maximum(q, 0.0)
        q /= q.sum(axis=1, keepdims=True)
    den = np.einsum("lnm,lm->ln", E, q)
    c = 1.0 / den                                   # (L, n)
    s = np.einsum("n,ln,lnm->lm", p, c, E).max(axis=1)
    c = c / s[:, None]
    lo = ((np.log(c) @ p) - rate) / lam[:, 0, 0]
    best_lo = max(0.0, float(lo.max()))
    Q = E * q[:, None, :] / den[:, :, None]         # test channels (L, n, m)
    qa = np.einsum("n,lnm->lm", p, Q)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(Q > 0, Q / qa[:, None, :], 1.0)
        R = np.einsum("n,lnm->l", p, Q * np.log(ratio))
    Dq = np.einsum("n,lnm,nm->l", p, Q, d0)
    ok = R <= rate + 1e-9
    best_hi = float(Dq[ok].min()) if ok.any() else math.inf
    return base + best_lo, base + best_hi


def converse_depth1(value_b0, q_values, distortions, discount):
    r"""Controller-independent depth-1 converse on the loss of any K-memory controller.

    **Statement ([R], pomdp reconstruction notes, section 1.3).** For every controller :math:`F` with :math:`K` memory
    states,

    .. math:: L_K := V^*(b_0) - V^F(b_0) \ge \min_a \Big[V^*(b_0) - Q^*(b_0, a) + \gamma\,
              D_K(\mu_1^a)\Big], \qquad \mu_1^a = \sum_o P(o|b_0,a)\,\delta_{\tau(b_0,a,o)} .

    Proof sketch: with first action :math:`a`, :math:`Q^*(b_0,a) - V^F(b_0) = \gamma\sum_o
    P(o|b_0,a)[V^*(b_1^o) - b_1^o\cdot W_{m_1}]`; the histories reaching one memory state share the
    linear continuation :math:`b\cdot W_m \le V^*(b)`, so the cell's contribution is at least its
    Jensen gap; at most :math:`K` cells give at least :math:`D_K`. Also valid with
    :math:`D_\mu(\log K) \le D_K` in place of :math:`D_K`.

    Kind: ``exact``. Status: reconstructed by the project (pomdp reconstruction notes, section 1.3,
    converse).

    Parameters
    ----------
    value_b0 : float
        :math:`V^*(b_0)`; a lower bound of it keeps the result a valid lower bound.
    q_values : array-like of shape (A,)
        :math:`Q^*(b_0, a)` per first action; upper bounds keep the result valid.
    distortions : array-like of shape (A,)
        :math:`D_K(\mu_1^a)` per first action; lower bounds keep the result valid.
    discount : float
        Discount factor :math:`\gamma`, in [0, 1).

    Returns
    -------
    float
        The lower bound on :math:`L_K`, clipped at 0.

    Examples
    --------
    >>> converse_depth1(10.0, [10.0, 4.0], [2.0, 0.0], 0.5)
    1.0
    """
    discount = _discount(discount)
    v = _float(value_b0, "value_b0")
    q = _array(q_values, "q_values", 1)
    D = _array(distortions, "distortions", 1)
    if q.shape != D.shape:
        raise ValueError("'q_values' and 'distortions' must have the same shape (A,).")
    return float(max(0.0, np.min(v - q + discount * D)))


# --- FSC certificate -----------------------------------------------------------------------------

class FSCCertificate(NamedTuple):
    """Result of :func:`check_fsc`: ``ok`` and a list of ``(kind, detail)`` violations.

    Kinds: ``"action_shape"``, ``"eta_shape"``, ``"not_integer"``, ``"action_range"``,
    ``"eta_range"``, ``"m0_range"``.

    Parameters
    ----------
    ok : bool
        Whether the controller is total.
    violations : list of tuple
        ``(kind, detail)`` pairs, one per violation.
    """

    ok: bool
    violations: list

    def __bool__(self):
        return self.ok


def check_fsc(action, eta, n_actions, n_observations, m0=None):
    r"""Certificate that a deterministic FSC ``(action, eta[, m0])`` is total.

    Checks that ``action`` is a non-empty 1-d integer array with values in ``[0, n_actions)``,
    that ``eta`` has shape (K, O) or (K, A, O) with integer values in ``[0, K)`` (for (K, A, O) all
    entries are checked: the memory table must be total for every action), and that ``m0`` (if
    given) is in ``[0, K)``. Never raises on a bad controller; returns the violations.

    Parameters
    ----------
    action : int array-like of shape (K,)
        Action of each memory state.
    eta : int array-like of shape (K, O) or (K, A, O)
        Memory update.
    n_actions, n_observations : int
        ``A`` and ``O``.
    m0 : int, optional
        Initial memory state.

    Returns
    -------
    FSCCertificate
        ``ok`` and the list of violations.

    Examples
    --------
    >>> check_fsc([0, 1], [[0, 1], [1, 0]], 2, 2).ok
    True
    >>> [v[0] for v in check_fsc([0, 5], [[0, 2], [1, 0]], 2, 2).violations]
    ['action_range', 'eta_range']
    """
    viol = []
    A = _count(n_actions, "n_actions")
    O = _count(n_observations, "n_observations")
    act = np.asarray(action)
    et = np.asarray(eta)
    if act.ndim != 1 or act.size == 0:
        viol.append(("action_shape", f"'action' must be a non-empty 1-d array; got shape {act.shape}"))
        return FSCCertificate(False, viol)
    K = act.shape[0]
    for name, arr in (("action", act), ("eta", et)):
        if arr.size and arr.dtype.kind not in "iu":
            if not (arr.dtype.kind in "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
                viol.append(("not_integer", f"'{name}' must hold integers; got dtype {arr.dtype}"))
    if viol:
        return FSCCertificate(False, viol)
    if et.shape not in ((K, O), (K, A, O)):
        viol.append(("eta_shape", f"'eta' must have shape ({K}, {O}) or ({K}, {A}, {O}); got {et.shape}"))
    bad = np.flatnonzero((act < 0) | (act >= A))
    if bad.size:
        viol.append(("action_range", f"{bad.size} node(s) with action outside [0, {A}); first node {int(bad[0])}"))
    if et.shape in ((K, O), (K, A, O)):
        badt = np.argwhere((et < 0) | (et >= K))
        if len(badt):
            viol.append(("eta_range", f"{len(badt)} eta entries outside [0, {K}); first at {tuple(int(x) for x in badt[0])}"))
    if m0 is not None and not (isinstance(m0, numbers.Integral) and 0 <= int(m0) < K):
        viol.append(("m0_range", f"'m0' must be an int in [0, {K}); got {m0!r}"))
    return FSCCertificate(not viol, viol)

