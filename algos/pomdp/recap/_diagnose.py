r"""Why a RECAP controller is blind or far below the solver's lower bound: a diagnosis with certificates.

A deterministic K-node controller is *blind* when its actions do not depend on the observations:
every node reachable from ``m0`` moves to one successor whatever it observes (a 1-node controller,
or a fixed cycle of actions). It is *near-blind* when its value closes less than half the gap
between the best 1-node (blind, stationary) controller and the solver's lower bound ``L``.

Two certificates explain such a result:

* the converse bound (:func:`._converse.converse_lower_bound`, depth-1 form): every controller with
  K memory states loses at least ``B`` to ``V*(b0)``, so none exceeds ``U - B`` (``U`` the solver's
  upper bound at ``b0``). Available when the vectors come from a fitted :class:`PointBasedSolver` or
  :class:`PBVI` (they carry the upper bound).
* an exhaustive check: every deterministic K-node controller (``(A K^O)^K`` of them with the initial
  node fixed; the observations of zero probability from every reachable belief are dropped first)
  is evaluated exactly, and the best value is reported. Run only when that count is at most
  ``MAX_EXHAUSTIVE`` and ``K S <= MAX_SYSTEM``; its verdict is about deterministic controllers
  (stochastic ones can do better on some models).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np

from ._converse import ConverseFallbackWarning, converse_lower_bound
from ._fsc_eval import FSCSystem

__all__ = ["is_blind", "live_observations", "diagnose", "exhaustive_best", "MAX_EXHAUSTIVE", "MAX_SYSTEM"]

MAX_EXHAUSTIVE = 50_000  # deterministic K-node controllers evaluated at most by the exhaustive check
MAX_SYSTEM = 64  # K * S at most for the exhaustive check (each controller is one dense solve of this size)
NEAR_BLIND = 0.5  # near-blind: closes less than this share of the gap between the blind value and L


def _reachable_nodes(action, eta, m0):
    seen, todo = {int(m0)}, [int(m0)]
    while todo:
        k = todo.pop()
        for n in np.unique(eta[k]):
            if int(n) not in seen:
                seen.add(int(n))
                todo.append(int(n))
    return sorted(seen)


def is_blind(action, eta, m0, live_obs=None):
    """Whether the controller ignores its observations: every node reachable from ``m0`` has one
    successor over the observations ``live_obs`` (default all) it can receive."""
    eta = np.asarray(eta)
    cols = slice(None) if live_obs is None else np.asarray(live_obs)
    return all(len(np.unique(eta[k][cols])) == 1 for k in _reachable_nodes(action, eta, m0))


def live_observations(T, Z, b0, horizon=50):
    """Observations of positive probability from some belief reachable from ``b0`` (all actions):
    those with positive probability from some reachable state."""
    A = T.shape[0]
    reach = b0 > 0
    for _ in range(horizon):
        nxt = reach | (np.einsum("s,ast->t", reach.astype(float), T) > 0)
        if np.array_equal(nxt, reach):
            break
        reach = nxt
    # o is live when some action a reaches a state t with Z[a, t, o] > 0 from a reachable state
    hit = np.einsum("s,ast,ato->o", reach.astype(float), T, Z) > 0
    return np.flatnonzero(hit) if A else np.arange(Z.shape[2])


def exhaustive_count(A, O, K):
    """Number of deterministic K-node controllers with the initial node fixed: ``(A K^O)^K``."""
    return (A * K ** O) ** K


def exhaustive_best(T, Z, r, discount, b0, K, max_controllers=MAX_EXHAUSTIVE, live_obs=None):
    """The best exact value ``V^F(b0)`` over every deterministic K-node controller (initial node 0),
    ``(value, (action, eta), n_evaluated)``, or None when there are more than ``max_controllers``
    (counted on the live observations ``live_obs``; the others keep node 0's successor, which no
    reachable belief exercises)."""
    A, S, _ = T.shape
    O = Z.shape[2]
    live = np.arange(O) if live_obs is None else np.asarray(live_obs, dtype=np.int64)
    n = exhaustive_count(A, len(live), K)
    if n > max_controllers or K * S > MAX_SYSTEM:
        return None
    system = FSCSystem(T, Z, r, discount, b0)  # the exact evaluation RECAP itself uses
    rows = [(a, succ) for a in range(A) for succ in itertools.product(range(K), repeat=len(live))]
    best = None
    for combo in itertools.product(range(len(rows)), repeat=K):
        action = np.empty(K, dtype=np.int64)
        eta = np.zeros((K, O), dtype=np.int64)
        for k, idx in enumerate(combo):
            action[k], eta[k, live] = rows[idx]
        v = system.value(action, eta, 0)
        if best is None or v > best[0]:
            best = (v, (action, eta))
    return best[0], best[1], n


def diagnose(pomdp, arrays, b0, action, eta, m0, value, blind_value, lower, solver=None, n_memory=None,
             max_controllers=MAX_EXHAUSTIVE, tol=1e-9):
    """The diagnosis of a fitted controller ``(action, eta, m0)`` of exact value ``value``:
    ``(reason, certificate)``, both None when the controller is neither blind nor near-blind.

    ``blind_value`` is the best 1-node controller's value, ``lower`` the solver's lower bound at
    ``b0``. ``certificate`` holds ``kind`` ("blind" or "near_blind"), ``value``, ``solver_lower``,
    ``converse`` (None, or ``bound``, ``solver_upper`` and ``k_node_upper = solver_upper - bound``:
    no K-memory controller exceeds it), ``exhaustive`` (None, or ``n_controllers``, ``best_value``
    and ``optimal``: whether no deterministic K-node controller beats ``value`` by more than a
    tie tolerance), ``certified`` (the exhaustive check says optimal, or the converse ceiling is
    within 1e-6 of ``value``) and ``size_rule`` (why the exhaustive check did or did not run)."""
    T, Z, r, discount = arrays
    A, S, _ = T.shape
    K = len(action) if n_memory is None else int(n_memory)
    live = live_observations(T, Z, b0)
    blind = is_blind(action, eta, m0, live)
    span = lower - blind_value
    near = (not blind) and span > tol * max(1.0, abs(lower)) and value - blind_value < NEAR_BLIND * span
    if not (blind or near):
        return None, None
    tie = tol * max(1.0, abs(value))
    cert = dict(kind="blind" if blind else "near_blind", value=float(value), solver_lower=float(lower),
                blind_value=float(blind_value), converse=None, exhaustive=None)
    parts = []
    if solver is not None and all(hasattr(solver, k) for k in ("alphas_", "upper_alphas_", "upper_points_")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConverseFallbackWarning)
            cb = converse_lower_bound(pomdp, K, solver=solver)
        cert["converse"] = dict(bound=float(cb.bound), solver_upper=float(cb.value_upper),
                                k_node_upper=float(cb.value_upper - cb.bound))
        room = cb.value_upper - cb.bound - value
        parts.append(f"the converse bound: every {K}-memory controller loses at least {cb.bound:.6g} to V*(b0), "
                     f"so none exceeds {cb.value_upper - cb.bound:.6g} (this one is {room:.6g} below that)")
    else:
        parts.append("no converse bound (it needs a fitted PointBasedSolver or PBVI, with its upper bound)")
    n = exhaustive_count(A, len(live), K)
    cert["size_rule"] = (f"exhaustive check when (A K^O)^K <= {max_controllers} and K S <= {MAX_SYSTEM}: "
                         f"(A={A}, K={K}, O={len(live)} live observations, S={S}) gives "
                         f"{n if n < 10**6 else format(float(n), '.3g')} controllers")
    ex = exhaustive_best(T, Z, r, discount, b0, K, max_controllers, live) if n <= max_controllers else None
    if ex is not None:
        best_v, _, count = ex
        optimal = bool(best_v <= value + tie)
        cert["exhaustive"] = dict(n_controllers=int(count), best_value=float(best_v), optimal=optimal)
        parts.append(f"all {count} deterministic {K}-node controllers evaluated exactly: "
                     + ("none beats this one" if optimal else f"the best reaches {best_v:.6g}"))
    else:
        shown = n if n < 10**6 else format(float(n), ".3g")
        parts.append(f"no exhaustive check ({shown} deterministic {K}-node controllers, more than "
                     f"{max_controllers}, or K S = {K * S} > {MAX_SYSTEM})")
    ex_opt = cert["exhaustive"] is not None and cert["exhaustive"]["optimal"]
    conv_tight = cert["converse"] is not None and cert["converse"]["k_node_upper"] <= value + max(tie, 1e-6)
    if ex_opt:
        parts.append(f"so no deterministic {K}-node controller does better on this model")
    elif conv_tight:
        parts.append(f"so no {K}-memory controller does better (up to the solver's gap)")
    elif cert["exhaustive"] is None:
        parts.append(f"neither certificate rules out a better {K}-node controller: the search may have missed one "
                     "(a larger n_memory or a longer solver run may help)")
    cert["certified"] = bool(ex_opt or conv_tight)
    what = "blind (its actions ignore the observations)" if blind else "near-blind"
    reason = (f"the {K}-node controller is {what}: value {value:.6g} against the solver's lower bound "
              f"{lower:.6g} (best 1-node value {blind_value:.6g}); " + "; ".join(parts) + ".")
    return reason, cert
