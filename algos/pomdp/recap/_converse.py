r"""Converse (lower) bound on the value loss of any K-memory controller (the pomdp reconstruction notes §1.3) [R].

All histories reaching memory state ``m`` share the controller's future behaviour, so their
continuation value is linear, ``b . W_m <= V*(b)``. For the first ``t`` steps of any controller
``F`` (a tree of actions over the observation histories),

    V*(b0) - V^F(b0) >= V*(b0) - E[sum_{tau<t} g^tau r_tau] - g^t sum_m P_m V*(bbar_m)
                     = [V*(b0) - E sum g^tau r - g^t E V*(b_t)] + g^t E[J(cell of m_t)],

with ``bbar_m`` the mean belief of the histories in memory ``m`` at time ``t`` and ``J`` the
Jensen gap (merge cost) of ``V*``. With at most ``K`` cells the second term is at least
``g^t D_K(mu_t)`` (Bregman hard clustering), and ``D_K >= D_mu(log K)`` (rate-distortion,
Blahut–Arimoto). Minimising over the action trees gives controller-independent bounds; depth 1
is the reconstruction's ``min_a [V*(b0) - Q*(b0,a) + g D_K(mu_1^a)]`` (the ``V*(b_1)`` terms cancel in the
form computed here).

Brackets: ``V*`` is replaced by PBVI's lower bound where it enters with a plus sign (``V*(b0)``
and, for Blahut–Arimoto, the belief values inside the distortion) and by its upper bound where it
enters with a minus sign (the merged cell values). The hard-clustering bound is therefore rigorous
for any PBVI run. The Blahut–Arimoto bound uses the reproduction alphabet ``Gamma`` (PBVI's
alphas) as the pomdp reconstruction notes say; it is rigorous when ``Gamma`` holds the supergradients of ``V*`` at the
cell means (exact ``V*``) and otherwise may overstate the true bound by up to the solver gap.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np

from theory import pomdp as _th

from ..._validation import check_option, check_scalar_int
from .. import _kernels
from .._beliefs import _arrays, _b0, _need_discount_below_one
from ..solvers._pbvi import _sawtooth

__all__ = ["converse_lower_bound", "ConverseBound", "ConverseFallbackWarning"]


class ConverseBound(NamedTuple):
    """Result of :func:`converse_lower_bound`.

    Parameters
    ----------
    bound : float
        The lower bound on ``V*(b0) - V^F(b0)`` (clipped at 0).
    form : {"depth1", "history"}
        The form computed.
    method : {"hard", "blahut_arimoto"}
        The distortion used.
    n_memory : int
        The memory budget K.
    depth : int
        History depth (1 for the depth-1 form).
    value_lower, value_upper : float
        The solver's bracket of ``V*(b0)``.
    per_action : ndarray
        Depth 1: the bound if the first action is ``a``.
    per_depth : ndarray
        History form: the bound at each depth ``t = 1..depth``.
    distortion : ndarray
        Per first action (depth 1) the bracketed ``D_K(mu_1^a)`` (hard) or the Blahut–Arimoto
        certificate ``D(log K)`` on ``Gamma``.
    details : dict
        Other ingredients.
    """

    bound: float
    form: str
    method: str
    n_memory: int
    depth: int
    value_lower: float
    value_upper: float
    per_action: np.ndarray
    per_depth: np.ndarray
    distortion: np.ndarray
    details: dict


def _value_fns(solver):
    G = np.asarray(solver.alphas_, dtype=float)
    Q = np.asarray(solver.upper_alphas_, dtype=float)
    Bu, vu, c = solver.upper_points_
    saw = getattr(solver, "upper", "sawtooth") == "sawtooth"

    def lower(X):
        return (np.atleast_2d(X) @ G.T).max(axis=1)

    def upper(X):
        X = np.atleast_2d(X)
        u = (X @ Q.T).max(axis=1)
        if saw:
            u = np.minimum(u, _sawtooth(X, Bu, vu, c))
        return np.maximum(u, lower(X))  # V_UB >= V* >= V_LB; guard round-off

    return lower, upper


def _successors(T, Z, b, a):
    """``[(P(o|b,a), tau(b,a,o), o)]`` over the observations of positive probability, from the
    package's one Bayes-update kernel (:func:`.._kernels.belief_successors`)."""
    P, Bn, zero = _kernels.belief_successors(np.ascontiguousarray(b, dtype=float)[None, :],
                                             np.ascontiguousarray(T[a]), np.ascontiguousarray(Z[a]))
    return [(float(P[0, o]), Bn[0, o], int(o)) for o in np.flatnonzero((P[0] > 1e-15) & ~zero[0])]


def _dedupe(W, B, tol=1e-12):
    keys, ws, bs = {}, [], []
    for w, b in zip(W, B):
        k = tuple(np.round(b / max(tol, 1e-12)).astype(np.int64)) if tol else tuple(b)
        if k in keys:
            ws[keys[k]] += w
        else:
            keys[k] = len(ws)
            ws.append(w)
            bs.append(b)
    return np.asarray(ws), np.asarray(bs)


def _trees(T, Z, r, g, b, p, level, t, max_trees):
    """All action trees of depth t - level from (b, p): list of (discounted reward mass, leaves)."""
    if level == t:
        return [(0.0, [(p, b)])]
    out = []
    for a in range(T.shape[0]):
        here = p * (g ** level) * float(b @ r[:, a])
        combos = [(here, [])]
        for po, bo, _ in _successors(T, Z, b, a):
            sub = _trees(T, Z, r, g, bo, p * po, level + 1, t, max_trees)
            combos = [(x + y, lx + ly) for x, lx in combos for y, ly in sub]
            if len(combos) > max_trees:
                raise ValueError(
                    f"depth {t} needs more than max_trees={max_trees} action trees; lower 'depth' "
                    "or raise 'max_trees'."
                )
        if level == 0:
            out.extend((x, lv, a) for x, lv in combos)
        else:
            out.extend(combos)
        if len(out) > max_trees:
            raise ValueError(f"depth {t} needs more than max_trees={max_trees} action trees.")
    return out


class ConverseFallbackWarning(UserWarning):
    """The exact hard clustering was too large; a cheaper bound was used instead."""


def _leaf_term(leaves, K, method, lower, upper, G, max_partitions):
    """Return ``(merged_upper, D)`` for the leaves ``[(p, b), ...]``: ``D`` a lower bound of the
    Bregman distortion ``D_K`` of the leaf law with ``V*`` bracketed (``sum p V_lower(b)`` minus the
    best ``<= K``-cell ``sum P_m V_upper(bbar_m)``, :func:`theory.pomdp.bregman_hard_clustering`),
    or the Blahut-Arimoto certificate ``D(log K)`` (:func:`theory.pomdp.rate_distortion_lower_bound`)
    when ``method="blahut_arimoto"`` or when the exact enumeration would exceed
    ``max_partitions`` (then with a :class:`ConverseFallbackWarning`). ``merged_upper`` is
    ``sum p V_lower(b) - D``."""
    w, B = _dedupe([x[0] for x in leaves], [x[1] for x in leaves])
    spread = float(w @ lower(B))
    if method == "hard":
        n, k = len(w), min(K, len(w))
        if _th._n_partitions(n, k) <= max_partitions:
            D, merged, _ = _th.bregman_hard_clustering(B, w, K, upper, values=lower(B),
                                                       max_partitions=max_partitions)
            return merged, D
        warnings.warn(
            f"exact hard clustering of {n} beliefs into <= {k} cells needs more than max_partitions="
            f"{max_partitions} partitions; using the Blahut-Arimoto certificate D(log K) instead (cheaper, "
            "and rigorous when the solver's alphas hold the supergradients of V*).",
            ConverseFallbackWarning, stacklevel=3)
    W = float(w.sum())
    d = np.maximum(lower(B)[:, None] - B @ G.T, 0.0)
    D_lo, _ = _th.rate_distortion_lower_bound(w / W, d, math.log(K))
    D = W * D_lo
    return spread - D, D


def _check_solver(solver, S):
    """``solver`` must be a fitted PointBasedSolver or PBVI (alpha vectors and upper bounds) of a model
    with ``S`` states."""
    if not (hasattr(solver, "fit") and hasattr(solver, "get_params")):
        raise TypeError(f"'solver' must be a fitted PointBasedSolver or PBVI; got {type(solver).__name__}.")
    if not all(hasattr(solver, k) for k in ("alphas_", "upper_alphas_", "upper_points_")):
        raise ValueError(f"'solver' is a {type(solver).__name__} instance that is not fitted (or gives no upper "
                         "bound); call its fit(pomdp) first.")
    if np.shape(solver.alphas_)[-1] != S:
        raise ValueError(f"'solver' was fitted on a model with {np.shape(solver.alphas_)[-1]} states; this model "
                         f"has {S}.")


def _default_solver(pomdp):
    from ..solvers._pbs import PointBasedSolver

    return PointBasedSolver(time_limit=20.0, target_gap=1e-4).fit(pomdp)


def _controller_bound(pomdp_arrays, b0, controller, upper, bracket, K, depth, details):
    """History form for one controller ``(action, eta, m0)``: its own memory cells merge the beliefs."""
    T, Z, r, g = pomdp_arrays
    A = T.shape[0]
    vlo, vup = bracket
    form = "history"
    action, eta, m0 = controller
    cert = _th.check_fsc(action, eta, A, Z.shape[2], m0=m0)
    if not cert.ok:
        raise ValueError(f"invalid controller: {cert.violations}")
    action = np.asarray(action, dtype=np.int64)
    eta = np.asarray(eta, dtype=np.int64)
    if eta.ndim == 3:
        eta = eta[np.arange(len(action)), action]
    nodes = [(1.0, b0, int(m0))]
    rew = 0.0
    per_depth = []
    for t in range(1, depth + 1):
        new = []
        for p, b, m in nodes:
            a = int(action[m])
            rew += p * g ** (t - 1) * float(b @ r[:, a])
            for po, bo, o in _successors(T, Z, b, a):
                new.append((p * po, bo, int(eta[m, o])))
        nodes = new
        merged = 0.0
        for m in {x[2] for x in nodes}:
            w = np.array([x[0] for x in nodes if x[2] == m])
            Bm = np.array([x[1] for x in nodes if x[2] == m])
            P = float(w.sum())
            merged += P * float(upper((w @ Bm) / P)[0])
        per_depth.append(vlo - rew - g ** t * merged)
    per_depth = np.asarray(per_depth)
    return ConverseBound(max(0.0, float(per_depth.max())), form, "controller", K, depth, vlo, vup,
                         np.zeros(0), per_depth, np.zeros(0), details)


def converse_lower_bound(pomdp, n_memory, *, form="depth1", depth=2, method="hard", solver=None,
                         controller=None, max_partitions=200_000, max_trees=20_000):
    r"""Lower bound on the loss ``V*(b0) - V^F(b0)`` of every controller ``F`` with ``n_memory``
    memory states (pomdp reconstruction notes §1.3, [R]).

    The depth-1 form is :func:`theory.pomdp.converse_depth1` applied to ``V_lower(b0)``, the upper
    Q-values ``Q_upper(b0, a) = r(b0, a) + discount sum_o P(o|b0,a) V_upper(tau)`` and lower bounds
    of the distortions (each ingredient on its valid side, as that function asks).

    Parameters
    ----------
    pomdp : POMDP
        The model; its ``discount`` must be below 1.
    n_memory : int >= 1
        K, the memory budget.
    form : {"depth1", "history"}
        ``"depth1"``: the controller-independent ``min_a [V*(b0) - Q*(b0,a) + g D_K(mu_1^a)]``.
        ``"history"``: enumerate histories up to ``depth`` and report the best bound over
        ``t = 1..depth``. Without ``controller`` it minimises over all action trees of depth ``t``
        (controller-independent); with ``controller = (action, eta, m0)`` it uses that controller's
        own memory cells (controller-dependent, a certificate for that controller only).
    depth : int >= 1
        History depth for ``form="history"``.
    method : {"hard", "blahut_arimoto"}
        Exact Bregman hard clustering ``D_K`` (rigorous with PBVI brackets), or the certified
        Blahut–Arimoto ``D(log K)`` over ``Gamma`` (see the module note). Ignored with ``controller``.
    solver : fitted PointBasedSolver or PBVI, optional
        Brackets of ``V*``; default ``PointBasedSolver(time_limit=20, target_gap=1e-4)``.
    controller : tuple, optional
        ``(action, eta, m0)`` with ``action`` of shape (K,), ``eta`` of shape (K, O) or (K, A, O)
        and the initial memory state ``m0``: the controller whose own memory cells the history form
        uses.
    max_partitions, max_trees : int
        Enumeration limits. Above ``max_partitions`` the exact clustering gives way to the
        Blahut-Arimoto certificate (with a :class:`ConverseFallbackWarning`); above ``max_trees``
        (history form) a ``ValueError`` says to lower ``depth``.

    Returns
    -------
    ConverseBound
        The bound, the ingredients it was computed from and the form and method used.
    """
    T, Z, r, g = _arrays(pomdp)
    _need_discount_below_one(g, "the converse bound")
    K = check_scalar_int(n_memory, "n_memory", low=1)
    check_option(form, "form", ("depth1", "history"))
    check_option(method, "method", ("hard", "blahut_arimoto"))
    depth = check_scalar_int(depth, "depth", low=1)
    max_partitions = check_scalar_int(max_partitions, "max_partitions", low=1)
    max_trees = check_scalar_int(max_trees, "max_trees", low=1)
    A, S, _ = T.shape
    b0 = _b0(pomdp, None, S)
    if solver is None:
        solver = _default_solver(pomdp)
    _check_solver(solver, S)
    lower, upper = _value_fns(solver)
    G = np.asarray(solver.alphas_, dtype=float)
    vlo = float(lower(b0)[0])
    vup = float(upper(b0)[0])
    details = {"gap": vup - vlo}

    if controller is not None:
        if form != "history":
            raise ValueError("'controller' needs form='history' (the depth-1 form is controller-independent).")
        return _controller_bound(pomdp_arrays=(T, Z, r, g), b0=b0, controller=controller, upper=upper,
                                 bracket=(vlo, vup), K=K, depth=depth, details=details)

    q_upper = np.array([
        float(b0 @ r[:, a]) + g * sum(po * float(upper(bo)[0]) for po, bo, _ in _successors(T, Z, b0, a))
        for a in range(A)
    ])
    details["q_upper"] = q_upper
    if form == "depth1":
        distortion = np.zeros(A)
        for a in range(A):
            leaves = [(po, bo) for po, bo, _ in _successors(T, Z, b0, a)]
            distortion[a] = _leaf_term(leaves, K, method, lower, upper, G, max_partitions)[1]
        bound = _th.converse_depth1(vlo, q_upper, distortion, g)
        per_action = vlo - q_upper + g * distortion
        return ConverseBound(float(bound), form, method, K, 1, vlo, vup, per_action, np.array([bound]),
                             distortion, details)

    per_depth = []
    per_action = np.full(A, np.inf)
    distortion = np.zeros(A)
    for t in range(1, depth + 1):
        trees = _trees(T, Z, r, g, b0, 1.0, 0, t, max_trees)
        best = math.inf
        for rew, leaves, a in trees:
            merged, D = _leaf_term(leaves, K, method, lower, upper, G, max_partitions)
            val = vlo - rew - g ** t * merged
            if t == 1 and val < per_action[a]:
                per_action[a] = val
                distortion[a] = D
            best = min(best, val)
        per_depth.append(best)
    per_depth = np.asarray(per_depth)
    return ConverseBound(max(0.0, float(per_depth.max())), form, method, K, depth, vlo, vup, per_action,
                         per_depth, distortion, details)
