r"""Bounds for finite-memory POMDP controllers built from belief codebooks (RECAP).

Model ([C], the pomdp reconstruction notes, section 1.1): finite POMDP with ``T[a, s, s'] = P(s'|s, a)``,
``Z[a, s', o] = P(o|s', a)``, expected reward ``r[s, a]`` and discount :math:`\gamma \in [0, 1)`.
:math:`V^*` is convex on the simplex and is the supremum of linear functions :math:`b \cdot \alpha`
of achievable plans, each with :math:`R_{\min}/(1-\gamma) \le \alpha(s) \le R_{\max}/(1-\gamma)`.

A codebook :math:`C = \{c_1, \dots, c_K\}` with a quantiser gives the deterministic finite-state
controller (FSC) :math:`(\pi, \eta, m_0)`, :math:`\eta(k, a, o) = q(\tau(c_k, a, o))`; its exact
value is :math:`b_0 \cdot W_{m_0}` (pomdp reconstruction notes, section 1.2).

Status tags follow the reconstruction notes
(:doc:`/pomdp_reconstruction`; its sections and statements T1, T2, ... are cited below): **[C]** confirmed by the
abstract or a primary source, **[R]** reconstructed by the project from prior work, **[D]** derived with a proof sketch,
**[V]** checked numerically in the reference prototype. Every bound here is **[R]**: the target paper is
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

import numbers
from typing import NamedTuple

import numpy as np

from ._checks import InBody, Real, domain
from ._pomdp_checks import COUNT, DISCOUNT, NONNEG, _array, _beliefs, _index_array, _n_states, _value, array_rule
from ._pomdp_converse import (  # noqa: F401  (_n_partitions: used by algos.pomdp)
    _n_partitions,
    bregman_hard_clustering,
    converse_depth1,
    rate_distortion_lower_bound,
)

# The converse bounds live in theory/_pomdp_converse.py; their public home is this module.
for _f in (bregman_hard_clustering, converse_depth1, rate_distortion_lower_bound):
    _f.__module__ = __name__
del _f

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


# --- checks: in theory/_pomdp_checks.py (the shared scalar checks of theory/_checks.py, and the array checks
# of these bounds); hard clustering, rate-distortion and the converse: in theory/_pomdp_converse.py ---------


# --- Lipschitz constants -------------------------------------------------------------------------

@domain(r=array_rule(2, "(S, A)"), discount=DISCOUNT)
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
    if r.size == 0:
        raise ValueError("'r' must not be empty.")
    return float((r.max() - r.min()) / (2.0 * (1.0 - discount)))


@domain(alphas=array_rule(2, "(n_alpha, S)"))
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

@domain(T=array_rule(3, "(A, S, S)"), Z=array_rule(3, "(A, S, O)"), B=array_rule(2, "(n, S) or (S,)"),
        a=InBody("an int in [0, A)"))
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


@domain(T=array_rule(3, "(A, S, S)"), Z=array_rule(3, "(A, S, O)"), codebook=array_rule(2, "(K, S)"),
        eta=InBody("an int array of shape (K, A, O) with entries in [0, K)"),
        action=InBody("None or an int array of shape (K,) with entries in [0, A)"),
        b0=InBody("None or a belief of shape (S,)"), m0=InBody("None or an int in [0, K)"))
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


@domain(L=NONNEG, rho=NONNEG, rho_pi=Real(0.0, none=True), delta0=Real(0.0, none=True), discount=DISCOUNT)
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
    f = discount / (1.0 - discount)
    out = {"U1": f * L * rho}
    out["U2"] = None if delta0 is None else 2.0 * L * delta0 + 2.0 * f * L * rho
    out["U3"] = None if rho_pi is None else f * L * rho_pi
    return out


# --- decision distortion, merge cost, witnesses --------------------------------------------------

@domain(B=array_rule(2, "(n, S)"), C=array_rule(2, "(m, S)"), alphas=array_rule(2, "(n_alpha, S)"))
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


@domain(B=array_rule(2, "(n, S)"), w=InBody("non-negative weights of shape (n,)"),
        alphas=InBody("None or a finite 2-d array of shape (n_alpha, S)"),
        values=InBody("None or an array of shape (n,) (with value_at_mean)"), value_at_mean=Real(none=True))
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


@domain(B=array_rule(2, "(n, S)"), alphas=array_rule(2, "(n_alpha, S)"), tol=NONNEG)
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
        Tolerance on "maximising", at least 0.

    Returns
    -------
    ndarray of bool, shape (n, n)
        The witness matrix ``W``.
    """
    G = _array(alphas, "alphas", 2)
    B = _beliefs(B, S=G.shape[1])
    sc = B @ G.T
    opt = sc >= sc.max(axis=1, keepdims=True) - tol     # (n, |G|)
    common = (opt[:, None, :] & opt[None, :, :]).any(axis=2)
    return ~common




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


@domain(action=InBody("an int array of shape (K,)"), eta=InBody("an int array of shape (K, O) or (K, A, O)"),
        n_actions=COUNT, n_observations=COUNT, m0=InBody("None or an int in [0, K)"))
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
        ``A`` and ``O``, each at least 1.
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
    A, O = n_actions, n_observations
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
            viol.append(("eta_range",
                         f"{len(badt)} eta entries outside [0, {K}); first at {tuple(int(x) for x in badt[0])}"))
    if m0 is not None and not (isinstance(m0, numbers.Integral) and 0 <= int(m0) < K):
        viol.append(("m0_range", f"'m0' must be an int in [0, {K}); got {m0!r}"))
    return FSCCertificate(not viol, viol)

