r"""RECAP: a K-node controller from a belief codebook grown through its own successors.

The pomdp reconstruction notes §1.4. .. note:: reconstructed [R] from the paper's abstract and prior work
(Saldi-Yuksel-Linder belief quantisation, Bregman clustering of Banerjee et al. 2005, PBVI alpha
vectors); the paper's own algorithm was not available.

Algorithm (nested over K = 1..n_memory):

1. Gamma: PBVI alpha vectors (lower bound of V*).
2. ``c_1 = b0`` (so the initial distortion is 0); K = 1 is the best blind policy.
3. Greedy closure growth: for every node k with its action ``pi(k)`` and every observation with
   ``P(o | c_k, pi(k)) > 0`` score the successor ``tau = tau(c_k, pi(k), o)`` by
   ``nu_k P(o | c_k, pi(k)) d(tau, C)`` (``nu`` = discounted node occupancy of the current FSC from
   ``m0``; ``d`` the decision distortion ``d_V(tau, C) = V_Gamma(tau) - max_k alpha_{c_k} . tau``,
   falling back to L1 when every decision score is below ``tol``). The ``n_candidates`` best
   successors are tried; the one whose FSC has the highest exact value is added. When every L1
   score is below ``tol`` the codebook is closed (``rho_pi = 0``) and growth stops (``K_eff < K``).
4. Safeguard: the FSC of the grown codebook (quantiser = decision distortion with L1 tie-break) is
   accepted only when its exact value does not fall below the (K-1)-controller's. Otherwise the
   (K-1)-controller's tables are kept with the generating transition redirected to the new node
   (if that does not lower the value), else with the new node unreachable -- a K-node FSC can
   always emulate a (K-1)-node one. Hence ``value_history_`` is non-decreasing in K.
5. Optional Bregman-Lloyd refinement (``refine=True``): assign beliefs reached by running the FSC
   (and the nodes' successors) to codewords by ``d_V`` (L1 tie-break), move each codeword except
   ``c_1 = b0`` to its cell's weighted mean, rebuild the FSC and keep it only when the exact value
   does not decrease.

Project additions (not in the pomdp reconstruction notes; each change is accepted only when the exact value rises, so
``value_history_`` stays non-decreasing):

6. Restart candidates (``restart=True``): at each K the codebooks of a k-means clustering of a
   belief sample reached by the Gamma-greedy policy (``n_restarts`` seeds; with and without ``b0``
   in place of its nearest centroid; decision, L1 and L2 quantisers) are evaluated exactly; the
   best is kept when it beats every controller so far (its codebook need not contain ``b0``, so
   ``delta0`` may be > 0); growth itself continues from the grown codebook, so it can still close.
   Once the grown codebook is closed no more candidates are tried.
7. Polish (``polish=True``): coordinate ascent on node actions, whole node rows (the transitions
   maximising the node's adjoint-weighted one-step backup, per action) and single transitions,
   each trial screened by its exact rank-S (Woodbury) gain; a move that improves is applied in
   product form (no refactorisation, a fresh one every few moves) and the polished controller's
   value is a direct solve. On large systems (``K * S >= 600``) a trial's exact gain is computed
   only when its first-order gain (adjoint occupancy times the Bellman residual of the changed
   rows) is positive; the incremental growth tables (``_grow``) are solved only then too.
8. Growth schedule and paths (``schedule``): the full treatment (refinement, polish of every node,
   restarts, merge) at K = 1, 2, 4, 8, ... and K >= n_memory; several growth paths (decision-only
   or decision + L1 candidates, two between-step polishes), of which the two with the best value
   at K = n_memory - 1 run the last steps (``_FINAL_BEAM``), the best final one being kept.

Because of the safeguard, ``eta_`` may differ from the plain quantiser table for a few transitions
(the table ``eta_full_`` holds the quantiser for the actions the nodes do not play).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.linalg
from sklearn.exceptions import ConvergenceWarning

from theory import pomdp as _th

from .._validation import (
    check_bool,
    check_option,
    check_random_state,
    check_scalar_float,
    check_scalar_int,
    spawn_generators,
)
from ._beliefs import _arrays, _b0, _n_states
from ._codebook import (
    DISTANCES,
    _argmax_ties,
    _CodebookController,
    _default_horizon,
    _nearest_with_l1_ties,
    _node_successors,
    _v_gamma,
    build_codebook_fsc,
    quantize,
    simulate_beliefs,
)
from ._fsc_eval import SPARSE_FROM, FSCSystem, RowUpdate
from ._recap_starts import merge_gains
from numbers import Integral, Real
from sklearn.utils._param_validation import Interval
from .._validation import OrderedStrOptions, RANDOM_STATE_CONSTRAINTS, validate_params

__all__ = ["RECAPController"]


_ACCEPT_RTOL = 1e-11  # value changes below this (relative) count as ties: float round-off of the solve


K_MAX = 2**20  # room for the per-K KMeans seeds (seed + rep * 4096 + K) below 2**31
_SUCC_CACHE = 2048  # codewords whose successors (and V_Gamma of them) RECAP keeps per fit
_FINAL_BEAM = 2  # growth paths that run the last steps (K = n_memory and the look-ahead step)
_SCREEN_SIZE = 600  # K*S from which polish trials are screened by their first-order gain (see _polish)


def trivial_loss_bound(r, discount):
    """The trivial bound ``(Rmax - Rmin) / (1 - discount)`` on any value gap (every value lies in
    ``[Rmin, Rmax] / (1 - discount)``): a certificate at or above it says nothing."""
    r = np.asarray(r, dtype=float)
    return float((r.max() - r.min()) / (1.0 - discount))


def certificate_flags(bound, r, discount):
    """``{"trivial": t, "vacuous": {"U1": bool, ...}}`` for the U-bounds in ``bound``: a bound is
    vacuous when it is not below the trivial bound ``t`` (:func:`trivial_loss_bound`)."""
    t = trivial_loss_bound(r, discount)
    return {"trivial": t, "vacuous": {k: bool(bound[k] >= t) for k in ("U1", "U2", "U3")
                                      if bound.get(k) is not None}}


def _tie(value):
    return _ACCEPT_RTOL * max(1.0, abs(value))


def _weighted_kmeans(X, w, k, rng, n_iter=50):
    """Weighted k-means (Euclidean; k-means++ seeding, Lloyd steps until the assignment repeats)."""
    n = len(X)
    p = w / w.sum()
    centers = [X[rng.choice(n, p=p)]]
    d2 = ((X - centers[0]) ** 2).sum(axis=1)
    for _ in range(1, k):
        q = w * d2
        if q.sum() <= 0:
            break
        centers.append(X[rng.choice(n, p=q / q.sum())])
        d2 = np.minimum(d2, ((X - centers[-1]) ** 2).sum(axis=1))
    C = np.array(centers)
    assign = None
    for _ in range(n_iter):
        D = ((X[:, None, :] - C[None]) ** 2).sum(axis=2)
        new = D.argmin(axis=1)
        if assign is not None and np.array_equal(new, assign):
            break
        assign = new
        for j in range(len(C)):
            cell = assign == j
            if cell.any():
                C[j] = (w[cell, None] * X[cell]).sum(axis=0) / w[cell].sum()
    return C


def _unique_rows(B):
    """``(U, inv)`` with ``U[inv] == B`` and the rows of ``U`` distinct, by a hash of the rows' bytes
    (integer arithmetic, so equal rows hash alike) sorted once; a hash collision falls back to
    :func:`numpy.unique`. The order of ``U`` is that of the hashes (callers use the grouping only)."""
    B = np.ascontiguousarray(B, dtype=float)
    n, S = B.shape
    if n == 0:
        return B.copy(), np.zeros(0, dtype=np.int64)
    mult = (np.arange(1, S + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)
    with np.errstate(over="ignore"):
        h = (B.view(np.uint64) * mult[None, :]).sum(axis=1, dtype=np.uint64)
    order = np.argsort(h, kind="stable")
    hs = h[order]
    first = np.concatenate([[True], hs[1:] != hs[:-1]])
    inv = np.empty(n, dtype=np.int64)
    inv[order] = np.cumsum(first) - 1
    U = B[order[first]]
    if not np.array_equal(U[inv], B):
        U, inv = np.unique(B, axis=0, return_inverse=True)
        inv = inv.ravel()
    return U, inv


def _quantize_decision(B, vB, C, alphas):
    """``quantize(B, C, "decision", alphas)`` with ``vB = V_Gamma(B)`` given (identical result): the
    decision distortion ``d_V(b, c_k) = V_Gamma(b) - alpha_{c_k} . b`` (clipped at 0), nearest
    codeword with the relative tie tolerance of :func:`quantize` and its L1 tie-break."""
    alpha_c = alphas[np.argmax(C @ alphas.T, axis=1)]  # (K, S), lowest index on ties
    return _nearest_with_l1_ties(np.maximum(vB[:, None] - B @ alpha_c.T, 0.0), B, C)


def _table_key(tab):
    """Hashable identity of an FSC's tables (action, eta, m0)."""
    action, eta = np.asarray(tab["action"], dtype=np.int64), np.asarray(tab["eta"], dtype=np.int64)
    return action.tobytes(), eta.shape, eta.tobytes(), int(tab["m0"])


def _growth_rank(grown):
    """Order of ``_grow`` results: the value, then (for an unreachable new node, whose value is the
    current one) the best value its tables reached."""
    return grown[2], grown[1].get("near", np.inf)


def _occupancy(P, action, eta, m0, discount):
    """Discounted node occupancy ``nu`` of the FSC run on the codeword beliefs from ``m0``."""
    K = len(action)
    Pa = P[np.arange(K), action]  # (K, O)
    M = np.zeros((K, K))
    for o in range(Pa.shape[1]):
        np.add.at(M, (np.arange(K), eta[:, o]), Pa[:, o])
    e = np.zeros(K)
    e[m0] = 1.0
    return np.linalg.solve(np.eye(K) - discount * M.T, e)


class RECAPController(_CodebookController):
    r"""RECAP finite-memory controller (pomdp reconstruction notes §1.4). [R] reconstructed, see the module docstring.

    Parameters
    ----------
    n_memory : int, default=8
        Memory budget K (number of FSC nodes); the fitted controller may use fewer (``n_memory_``)
        when the codebook closes early.
    action_rule : {"lookahead", "quantized_mdp"}, default="lookahead"
    refine : bool, default=True
        Bregman-Lloyd refinement at each K, accepted only when the exact value does not drop.
    n_refine : int, default=10
        Maximum Lloyd steps per K.
    pbvi_params : dict or None, default=None
        Keyword arguments of :class:`PBVI` (defaults ``n_beliefs=200, max_iter=200``).
    growth_metric : {"decision", "l1"}, default="decision"
    n_candidates : int, default=3
        Number of best-scored successors whose FSCs are evaluated exactly at each growth step.
    n_traj : int, default=200
        Trajectories simulated for the refinement sample.
    tol : float, default=1e-9
        Closure tolerance of the growth scores.
    polish : bool, default=True
        After growth/refinement at each K, coordinate ascent on the node actions, on whole node
        rows (for each action, the transitions that maximise the node's adjoint-weighted backup
        ``y_k . (r_a + discount sum_o T[a] Z[a, :, o] W[eta_o])``, ``y`` the discounted
        (node, state) occupancy from ``(m0, b0)``) and on single transitions (among the 3
        decision-nearest codewords of each successor), each change kept only when the exact
        value rises. Not in the pomdp reconstruction notes: a project addition, see ``_polish``.
    restart : bool, default=True
        At each K also try the codebooks of a sample clustering (weighted k-means on ``n_samples`` beliefs
        reached by the Gamma-greedy policy with 10% random actions, and the same with ``b0`` in
        place of its nearest centroid), each with the decision, L1 and L2 quantisers; the best is
        kept when its exact value beats every controller so far; growth continues from the grown
        codebook.
        Not in the pomdp reconstruction notes: a project addition (restart candidates, accepted by exact value, so the
        value stays non-decreasing in K); see ``_restart_candidates``.
    merge : bool, default=True
        Node merging: at each K the grown (K+1)-node controller (after refinement and polish) is
        also reduced to K nodes by merging one node into another (every transition into the
        merged node redirected; the ``n_candidates`` pairs with the best first-order gain are
        solved exactly, the best one polished), kept when its exact value beats every K-node
        controller so far. The growth then runs one step past ``n_memory``. Not in the pomdp reconstruction notes: a
        project addition in the spirit of the pruning step of bounded policy iteration (Poupart &
        Boutilier 2003); see ``_merge``.
    schedule : {"doubling", "every"}, default="doubling"
        Which growth steps get the full treatment (refinement, a polish of every node, the restart
        candidates and the merge candidate): ``"every"`` K, or ``"doubling"``: K = 1, 2, 4, 8, 16,
        ... and the last step(s), the steps between polishing only the new node and the nodes with
        an edge into it. Each growth step keeps the better of the quantiser tables and the
        incremental tables (see ``_grow``), so the polish of earlier steps carries over.
        ``"doubling"`` runs four growth paths (both between-step polishes, ``_local_variants``)
        where ``"every"`` runs two; under either, only the two best paths at K = n_memory - 1 run
        the last steps. On hallway and tiger-grid at K = 16 ``"doubling"`` took 6-15 s and reached
        0.83-0.94x the solver's lower bound on 16 alpha-set/seed pairs (docs/pomdp.md). Not in the
        pomdp reconstruction notes: a project addition.
    starts : bool, default=True
        Also build two K-node controllers from the solver's vectors (:mod:`._recap_starts`): the
        alpha-vector policy graph on the beliefs reachable from ``b0`` compressed to K nodes by
        node merges guided by first-order gains and exact solves (the controller compression of
        Grześ, Poupart, Yang and Hoey, IEEE Trans. Cybernetics 2015), and the decision-distortion
        quantisation of the beliefs reached by the solver's greedy policy; each is polished. With
        ``n_memory >= 3`` the fit at the largest power of two ``P < n_memory`` (same parameters and
        ``random_state``) is run first and its controller is a candidate too (a ``P``-node
        controller is an ``n_memory``-node one whose extra nodes are unreachable), so on the same
        vectors the value at ``n_memory`` is at least the value at every smaller power of two.
        The controller returned is the one of highest exact value among these and the grown one
        (``construction_``).
    n_samples : int, default=2000
        Size of the restart sample.
    n_restarts : int, default=5
        Number of k-means seeds (k-means++ seeding, Lloyd steps) per K for the restart candidates.
    random_state : None, int or Generator
    verbose : int, default=0
    solver : {"pbs", "pbvi"}, default="pbs"
        Where Gamma comes from when ``fit`` gets no ``alphas``: :class:`PointBasedSolver` (with
        ``solver_params``, default ``time_limit=60, target_gap=1e-3``; deterministic when it reaches
        the target gap, as it does on small models) or :class:`PBVI` (with ``pbvi_params``).
    solver_params : dict or None, default=None
        Keyword arguments of :class:`PointBasedSolver`.
    time_limit : float or None, default=None
        Wall-clock budget in seconds of the search (after the alpha vectors are obtained; a solver
        run by ``fit`` keeps its own ``time_limit``); must be > 0. Checked between growth steps,
        polish sweeps and nodes, refinement steps, compression rounds and codebook seeds: when it
        runs out the best controller found so far is returned (its value exact) with a
        :class:`~sklearn.exceptions.ConvergenceWarning`. The check is between steps, so a fit may
        overrun the budget by one step.

    Warns
    -----
    ConvergenceWarning
        When ``time_limit`` ran out before the search ended.
    UserWarning
        When ``n_memory`` is more than the model needs: the grown codebook closed, or the solver's
        policy reaches fewer distinct beliefs (``n_reachable_``) or has a smaller policy graph
        (``policy_graph_size_``) than ``n_memory``, and the controller returned has fewer nodes.

    Attributes
    ----------
    codebook_, action_, eta_, eta_full_, m0_, W_, value_, alphas_, pbvi_, n_memory_ : see the base class.
    value_history_ : ndarray (n_memory,)
        Exact value of the accepted controller for K = 1..n_memory (constant after closure).
    objective_history_ : ndarray (n_memory,)
        The pomdp reconstruction notes §1.4 objective ``L(C)`` (decision + closure + initial terms, lambdas = 1) per K.
    construction_ : {"growth", "policy_graph", "codebook", "smaller"}
        Which candidate was returned (ties to the earlier in this order; ``"smaller"``: the fit at
        the largest power of two below ``n_memory``); ``"growth"`` when ``starts=False``.
    start_values_ : dict
        Exact value of each candidate, by construction.
    policy_graph_size_ : int or None
        Nodes of the uncompressed policy graph (with ``starts``).
    n_reachable_ : int or None
        Distinct beliefs reached by the solver's greedy policy from ``b0`` in the simulated sample
        of the codebook start (with ``starts``).
    closed_ : bool
        Whether growth stopped because every successor is already a codeword (rho_pi = 0).
    bound_ : dict
        ``L, rho, rho_pi, delta0`` and ``U1, U2, U3`` computed by :func:`theory.pomdp.closure_bound`
        (with ``L`` from :func:`theory.pomdp.lipschitz_constant`), ``trivial`` (the trivial bound
        ``(Rmax - Rmin) / (1 - discount)`` on any loss) and ``vacuous`` (per U-bound: whether it is
        at or above ``trivial``, so that it says nothing on this model).
    """

    _parameter_constraints: dict = {
        "action_rule": [OrderedStrOptions(("lookahead", "quantized_mdp"))],
        "growth_metric": [OrderedStrOptions(("decision", "l1"))],
        "merge": ["boolean"],
        "n_candidates": [Interval(Integral, 1, None, closed="left")],
        "n_memory": [Interval(Integral, 1, None, closed="left")],
        "n_refine": [Interval(Integral, 0, None, closed="left")],
        "n_restarts": [Interval(Integral, 0, 64, closed="both")],
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "n_traj": [Interval(Integral, 1, None, closed="left")],
        "pbvi_params": "no_validation",  # passed on as keyword arguments (any mapping, or None)
        "polish": ["boolean"],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "refine": ["boolean"],
        "restart": ["boolean"],
        "schedule": [OrderedStrOptions(("doubling", "every"))],
        "solver": [OrderedStrOptions(("pbs", "pbvi"))],
        "solver_params": [dict, None],
        "starts": ["boolean"],
        "time_limit": [Interval(Real, 0, None, closed="neither"), None],
        "tol": [Interval(Real, 0, None, closed="left")],
        "verbose": [Interval(Integral, 0, None, closed="left")],
    }

    _distance = "decision"

    def __init__(self, n_memory=8, action_rule="lookahead", refine=True, n_refine=10, pbvi_params=None,
                 growth_metric="decision", n_candidates=3, n_traj=200, tol=1e-9, polish=True,
                 restart=True, n_samples=2000, n_restarts=5, random_state=None, verbose=0, solver="pbs",
                 solver_params=None, merge=True, schedule="doubling", starts=True, time_limit=None):
        self.time_limit = time_limit
        self.starts = starts
        self.schedule = schedule
        self.merge = merge
        self.solver = solver
        self.solver_params = solver_params
        self.polish = polish
        self.n_restarts = n_restarts
        self.restart = restart
        self.n_samples = n_samples
        self.n_memory = n_memory
        self.action_rule = action_rule
        self.refine = refine
        self.n_refine = n_refine
        self.pbvi_params = pbvi_params
        self.growth_metric = growth_metric
        self.n_candidates = n_candidates
        self.n_traj = n_traj
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ pieces
    def _system(self, pomdp):
        """The model's :class:`FSCSystem` (blocks ``T[a] * Z[a, :, o]`` computed once per model)."""
        fast = getattr(self, "_model_cache", None)
        if fast is None or fast[0] is not pomdp:
            T, Z, r, discount = _arrays(pomdp)
            fast = self._model_cache = (pomdp, FSCSystem(T, Z, r, discount, _b0(pomdp, None, T.shape[1])))
        return fast[1]

    def _build(self, pomdp, C, alphas):
        return self._build_all(pomdp, C, alphas, (self._distance,))[0]

    def _successors(self, ev, C, alphas):
        """``(P, Bn, zero, V_Gamma(Bn))`` of the codebook's node successors, each codeword's rows
        cached by its bytes (the successors of a codeword do not depend on the rest of the
        codebook: growth adds one row, refinement moves a few). The rows not cached are computed
        together, as :func:`_node_successors` and :func:`_v_gamma` on them would."""
        cache = getattr(self, "_succ_cache", None)
        if cache is None or cache[0] is not alphas or cache[1] is not ev:
            cache = self._succ_cache = (alphas, ev, {})
        store = cache[2]
        keys = [row.tobytes() for row in C]
        if len(store) + len(keys) > _SUCC_CACHE:
            store.clear()
        miss, seen = [], set()
        for i, key in enumerate(keys):
            if key not in store and key not in seen:
                seen.add(key)
                miss.append(i)
        if miss:
            P, Bn, zero = _node_successors(ev.T, ev.Z, np.ascontiguousarray(C[miss]))
            v = _v_gamma(alphas, Bn.reshape(-1, Bn.shape[-1])).reshape(P.shape)
            for j, i in enumerate(miss):
                store[keys[i]] = (P[j], Bn[j], zero[j], v[j])
        rows = [store[key] for key in keys]
        return tuple(np.stack([row[f] for row in rows]) for f in range(4))

    def _build_all(self, pomdp, C, alphas, distances):
        """``[build_codebook_fsc(pomdp, C, alphas, distance=d, action_rule=...) for d in distances]``
        (the same tables) with the node successors and ``V_Gamma`` of them computed once."""
        C = np.ascontiguousarray(np.asarray(C, dtype=float))
        K = C.shape[0]
        if self.action_rule != "lookahead" or K == 1:
            return [build_codebook_fsc(pomdp, C, alphas, distance=d, action_rule=self.action_rule)
                    for d in distances]
        ev = self._system(pomdp)
        S = ev.n_states
        P, Bn, zero, v = self._successors(ev, C, alphas)
        A, O = P.shape[1], P.shape[2]
        flat = Bn.reshape(-1, S)
        v_flat = v.reshape(-1)
        Q = C @ ev.r + ev.discount * (P * v).sum(axis=2)
        action = _argmax_ties(Q).astype(np.int64)
        out = []
        for d in distances:
            if d == "decision":
                q = _quantize_decision(flat, v_flat, C, alphas)
                m0 = int(_quantize_decision(ev.b0[None, :], _v_gamma(alphas, ev.b0[None, :]), C, alphas)[0])
            else:
                q = quantize(flat, C, d)
                m0 = int(quantize(ev.b0[None, :], C, d)[0])
            eta_full = np.where(zero, np.arange(K)[:, None, None], q.reshape(K, A, O)).astype(np.int64)
            out.append(dict(action=action.copy(), eta=eta_full[np.arange(K), action], eta_full=eta_full,
                            m0=m0, P=P, Bn=Bn))
        return out

    def _node_values(self, pomdp, action, eta, m0):
        """Node values ``W`` and the adjoint occupancy ``y`` of the FSC (both (K, S)); those of the
        last polished tables are kept from the polish's final solve."""
        cached = getattr(self, "_values_cache", None)
        if cached is not None and cached[0] == _table_key(dict(action=action, eta=eta, m0=m0)):
            return cached[1], cached[2]
        W, y, _ = self._system(pomdp).values_and_adjoint(action, eta, int(m0))
        return W, y

    def _distortion(self, pomdp, C, alphas, action=None):
        """:func:`decision_distortion` of the codebook's node successors (all actions, flattened
        (K*A*O, K); or those of ``action`` (K,), (K*O, K)) with ``V_Gamma`` of them from the cache."""
        C = np.ascontiguousarray(np.asarray(C, dtype=float))
        ev = self._system(pomdp)
        _, Bn, _, v = self._successors(ev, C, alphas)
        if action is not None:
            rows = np.arange(len(C))
            Bn, v = Bn[rows, action], v[rows, action]
        S = C.shape[1]
        alpha_c = alphas[np.argmax(C @ alphas.T, axis=1)]
        return np.maximum(v.reshape(-1)[:, None] - Bn.reshape(-1, S) @ alpha_c.T, 0.0)

    def _evaluate(self, pomdp, tab):
        """Exact value of the tables: the same dense solve as :func:`evaluate_fsc` (identical
        numbers) without re-validating the model on every call, the system assembled from the
        cached blocks; from ``K * S >= SPARSE_FROM`` a sparse LU (SuperLU) solve of the same system."""
        ev = self._system(pomdp)
        action = np.asarray(tab["action"], dtype=np.int64)
        eta = np.asarray(tab["eta"], dtype=np.int64)
        K, S = len(action), ev.n_states
        if K * S >= SPARSE_FROM:
            return ev.value(action, eta, tab["m0"])
        discount = ev.discount
        R, P = ev.transition(action, eta)
        W = scipy.linalg.solve(np.eye(K * S) - discount * P, R).reshape(K, S)
        return float(ev.b0 @ W[int(tab["m0"])])

    def _candidates(self, pomdp, C, tab, alphas, discount, with_l1=True):
        """Successors of the nodes under their actions, scored (pomdp reconstruction notes §1.4 step 3)."""
        K = len(C)
        P, Bn, action = tab["P"], tab["Bn"], tab["action"]
        nu = _occupancy(P, action, tab["eta"], tab["m0"], discount)
        Pa = P[np.arange(K), action]           # (K, O)
        Ba = Bn[np.arange(K), action]          # (K, O, S)
        S = C.shape[1]
        flat = Ba.reshape(-1, S)
        nu = np.maximum(nu, 0.0) / max(nu.sum(), 1e-300) + 1e-3  # unreachable nodes keep a small weight
        w = (nu[:, None] * Pa).reshape(-1)
        l1 = np.abs(flat[:, None, :] - C[None]).sum(axis=2).min(axis=1)
        live = (Pa.reshape(-1) > 0) & (l1 > self.tol)
        score_l1 = np.where(live, w * l1, 0.0)
        def top(score):
            order = np.argsort(-score, kind="stable")
            return [int(i) for i in order if score[i] > self.tol][: self.n_candidates]

        picked = top(score_l1)
        if self.growth_metric == "decision":
            score = np.where(live, w * self._distortion(pomdp, C, alphas, action).min(axis=1), 0.0)
            if score.max() > self.tol:
                lead = top(score)
                # optionally followed by the L1 leaders (see ``fit``: two growth paths)
                picked = lead + [i for i in picked if i not in lead] if with_l1 else lead
        return [(flat[i], divmod(i, Pa.shape[1])) for i in picked]

    def _grow(self, pomdp, C, tab, value, cand, alphas, full=True, current=None):
        """Codebook ``C + [cand]`` and its safeguarded FSC tables (pomdp reconstruction notes §1.4 steps 3-4).

        Up to three tables are solved exactly and the best kept: the quantiser tables of the new
        codebook (pomdp reconstruction notes §1.4; on large systems, ``current`` given, only on ``full`` steps, see
        ``_full_step``: between them it won 5 of 541 growth steps on hallway and tiger-grid at
        K = 17-31), and two incremental ones
        that keep the current (refined, polished) tables and give the new node its quantiser row:
        every edge the new quantiser sends to the new node redirected to it, and only the edge
        ``(k, o)`` whose successor became the codeword. The quantiser tables alone would discard
        what polish found at smaller K. When none reaches the current value the new node is left
        unreachable: the (K+1)-node controller has the current value exactly (node values do not
        depend on unreachable nodes), so it is not solved again. With ``current = (W, y)`` (the
        current tables' node values and adjoint occupancy) an incremental table is solved only when
        its first-order gain ``sum_(k, o) discount y_k . blocks[a_k, o] (W_new - W_eta[k, o])`` is
        positive (``W_new``: the new node's values with the others held), as polish screens its
        trials on large systems. [R] the incremental tables and the screen are project additions."""
        b, (k, o) = cand
        C2 = np.vstack([C, b[None, :]])
        K = len(C)
        new = self._build(pomdp, C2, alphas)
        # the current tables, the new node with its quantiser row
        eta_full = new["eta_full"].copy()
        eta_full[:K] = np.where(np.arange(eta_full.shape[1])[None, :, None] == tab["action"][:, None, None],
                                tab["eta"][:, None, :], eta_full[:K])
        base = dict(new, action=np.concatenate([tab["action"], new["action"][K:]]), m0=tab["m0"],
                    eta=np.vstack([tab["eta"], new["eta"][K:]]), eta_full=eta_full)
        rows = np.arange(K)
        to_new = new["eta_full"][rows, tab["action"]] == K  # (K, O): edges the quantiser sends to node K
        trials = [new] if full or current is None else []
        edge_sets = [to_new] if to_new.any() else []
        if not (to_new.sum() == 1 and to_new[k, o]):
            one_edge = np.zeros_like(to_new)
            one_edge[k, o] = True
            edge_sets.append(one_edge)
        if current is not None and edge_sets:
            gains = self._redirect_gains(pomdp, tab, base, current, edge_sets)
            edge_sets = [e for e, g in zip(edge_sets, gains) if g > _tie(value)]
        for edges in edge_sets:
            trial = dict(base, eta=base["eta"].copy(), eta_full=eta_full.copy())
            trial["eta"][:K][edges] = K
            trial["eta_full"][rows, tab["action"]] = trial["eta"][:K]
            trials.append(trial)
        best, near = None, -np.inf
        for trial in trials:
            v = self._evaluate(pomdp, trial)
            near = max(near, v)
            if v >= value - _tie(value) and (best is None or v > best[2] + _tie(best[2])):
                best = (C2, trial, v)
        if best is not None:
            return best
        # new node unreachable: the K-node controller's value; ``near`` (the best value the tables
        # of this codeword reached) ranks such candidates in ``_grow_path``
        return C2, dict(base, near=near), value

    def _redirect_gains(self, pomdp, tab, base, current, edge_sets):
        """First-order gains of redirecting each set of edges (boolean (K, O) masks) of the current
        tables to the new node ``K`` of ``base``: ``sum discount y_k . blocks[a_k, o] (W_K - W_n)``
        over the set, ``n = eta[k, o]``, with ``W_K`` solving the new node's rows of the grown
        system with the current node values ``W`` held (an S x S solve)."""
        ev = self._system(pomdp)
        W, y = current
        K, S = W.shape
        g, T, Zm = ev.discount, ev.T, ev.Z
        a = int(base["action"][K])
        row = base["eta"][K]

        def block(a_, o_):
            return ev.blocks[a_, o_] if ev.blocks is not None else T[a_] * Zm[a_, :, o_][None, :]

        lhs, rhs = np.eye(S), ev.r[:, a].copy()
        for o_ in range(len(row)):
            if row[o_] == K:
                lhs -= g * block(a, o_)
            else:
                rhs += g * block(a, o_) @ W[row[o_]]
        W_new = np.linalg.solve(lhs, rhs)
        out = []
        for edges in edge_sets:
            gain = 0.0
            for k_, o_ in zip(*np.nonzero(edges)):
                gain += g * float(y[k_] @ (block(int(tab["action"][k_]), int(o_)) @ (W_new - W[tab["eta"][k_, o_]])))
            out.append(gain)
        return out

    def _refine(self, pomdp, C, tab, value, alphas, rng, discount, n_refine):
        """Bregman-Lloyd refinement with exact-value acceptance (pomdp reconstruction notes §1.4 step 4)."""
        S = C.shape[1]
        H = _default_horizon(discount)
        B, w = simulate_beliefs(pomdp, self.n_traj, H, rng, policy=(tab["action"], tab["eta"], tab["m0"]))
        K = len(C)
        nu = _occupancy(tab["P"], tab["action"], tab["eta"], tab["m0"], discount)
        Pa = tab["P"][np.arange(K), tab["action"]]
        Ba = tab["Bn"][np.arange(K), tab["action"]].reshape(-1, S)
        wa = (np.maximum(nu, 0.0)[:, None] * Pa).reshape(-1)
        B = np.vstack([B, Ba[wa > 0]])
        w = np.concatenate([w / max(w.sum(), 1e-300), wa[wa > 0] / max(wa.sum(), 1e-300)])
        cur_C, cur_tab, cur_v = C, tab, value
        C_try = C.copy()
        prev_assign = None
        # the assignment depends on the distinct sample rows only, and V_Gamma of them not on the
        # codebook: both computed once per refinement
        Bu, inv = _unique_rows(B)
        vB = _v_gamma(alphas, Bu)
        for _ in range(n_refine):
            if self._expired():
                break
            assign = _quantize_decision(Bu, vB, C_try, alphas)[inv]
            if prev_assign is not None and np.array_equal(assign, prev_assign):
                break
            prev_assign = assign
            C_new = C_try.copy()
            for j in range(1, K):  # c_1 = b0 stays fixed
                cell = assign == j
                if cell.any() and w[cell].sum() > 0:
                    C_new[j] = (w[cell, None] * B[cell]).sum(axis=0) / w[cell].sum()
            C_new = np.clip(C_new, 0.0, None)
            C_new /= C_new.sum(axis=1, keepdims=True)
            C_try = C_new
            new = self._build(pomdp, C_try, alphas)
            v = self._evaluate(pomdp, new)
            if v >= cur_v - _tie(cur_v):
                cur_C, cur_tab, cur_v = C_try, new, v
        return cur_C, cur_tab, cur_v

    def _polish(self, pomdp, C, tab, value, alphas, n_alt=3, n_sweeps=2, rows=True, nodes=None):
        """Coordinate ascent on the FSC tables with exact-value acceptance (decision-aware
        assignment): each transition ``eta[k, o]`` may move to one of the ``n_alt`` codewords
        nearest (in d_V, L1 tie-break) to its successor belief; each node's action may change to
        another action (with that action's quantiser transitions); with ``rows``, each node's row
        may change to ``(a, argmax_n y_k . blocks[a, o] W_n per o)`` for each action ``a`` (the
        best row for the first-order gain ``y_k . delta_k``, exact when node k is not revisited).
        A change is kept only when its exact value (the product-form update of
        :meth:`RowUpdate.accept`, exact up to round-off) strictly rises, and the value returned is a
        direct solve of the final tables, so the value never drops.
        ``nodes``: the nodes visited (all when None). [R] project addition, see docs."""
        K = len(C)
        if K == 1:
            return tab, value
        S = C.shape[1]
        tab = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in tab.items()}
        # Every trial is screened by its exact gain from the rank-S (Woodbury) update of the current
        # factors (:class:`RowUpdate`, O(S^3) per trial); a trial the update says improves is applied
        # in product form (``RowUpdate.accept``: no refactorisation, a fresh one every MAX_UPDATES
        # changes) and kept when the value it gives rises by more than the tie; the value returned is
        # a direct solve of the final tables. Large systems (``K * S >= _SCREEN_SIZE``) first skip
        # trials whose first-order gain y_k . delta_k is not positive (delta_k: the Bellman residual
        # of the changed node-k rows at the current W, y: the adjoint occupancy; y_k . delta_k is the
        # first-order term of the exact gain, exact when node k is not revisited).
        ev = self._system(pomdp)
        T, Z, r, discount = ev.T, ev.Z, ev.r, ev.discount
        first_order = K * S >= _SCREEN_SIZE
        upd = RowUpdate(ev) if ev.blocks is not None else None
        screen = first_order or upd is not None
        start = (tab, value)

        def refresh(tab):
            if upd is not None:
                return upd.reset(tab["action"], tab["eta"], tab["m0"])
            W, y, _ = ev.values_and_adjoint(tab["action"], tab["eta"], int(tab["m0"]))
            return W, y

        def attempt(tab, trial, k, value):
            """``(tab, value, W, y)`` after trying ``trial`` (node k changed): with the update, the
            trial is applied when its exact gain exceeds the tie and kept when the value it gives
            does (reverted otherwise); without it, a direct solve decides."""
            if upd is None:
                v = self._evaluate(pomdp, trial)
                if v > value + _tie(value):
                    return (trial, v) + (refresh(trial) if screen else (None, None))
                return tab, value, W, y
            a_k, row_k = trial["action"][k], trial["eta"][k]
            if upd.delta_value(k, a_k, row_k) <= _tie(value):
                return tab, value, upd.W, upd.y
            v = upd.accept(k, a_k, row_k)
            if v > value + _tie(value):
                return trial, v, upd.W, upd.y
            return (tab, value) + refresh(tab)  # round-off at the tie: back to the kept tables

        W = y = None
        if screen:
            W, y = refresh(tab)
        A, O = tab["P"].shape[1], tab["P"].shape[2]
        d = self._distortion(pomdp, C, alphas)
        l1 = np.abs(tab["Bn"].reshape(-1, S)[:, None, :] - C[None]).sum(axis=2)
        rank = np.argsort(d + 1e-9 * l1, axis=1, kind="stable")
        rank = rank.reshape(K, A, O, K)[:, :, :, :n_alt]
        visit = range(K) if nodes is None else sorted({int(k) for k in nodes if 0 <= k < K})
        for _ in range(n_sweeps):
            improved = False
            for k in visit:
                if self._expired():
                    break
                for a in range(A):
                    if a == tab["action"][k]:
                        continue
                    if first_order:
                        nxt = tab["eta_full"][k, a]
                        delta = r[:, a] + discount * T[a] @ np.einsum("to,ot->t", Z[a], W[nxt]) - W[k]
                        if float(y[k] @ delta) <= _tie(value):
                            continue
                    trial = dict(tab, action=tab["action"].copy(), eta=tab["eta"].copy())
                    trial["action"][k] = a
                    trial["eta"][k] = tab["eta_full"][k, a]
                    tab, v, W, y = attempt(tab, trial, k, value)
                    improved |= tab is trial
                    value = v
                if screen and rows:
                    # row moves: for each action the transitions maximising the node's adjoint-
                    # weighted backup y_k . (r_a + discount sum_o blocks[a, o] W[eta_o]) (per
                    # observation over all nodes; the current node kept on ties)
                    for a in range(A):
                        G = Z[a].T * (T[a].T @ y[k])[None, :]          # (O, S): blocks[a, o]^T y_k
                        score = G @ W.T                                 # (O, K)
                        row = np.argmax(score, axis=1)
                        cur = tab["eta_full"][k, a] if a != tab["action"][k] else tab["eta"][k]
                        stay = score[np.arange(O), cur] >= score.max(axis=1) - _tie(value)
                        row = np.where(stay, cur, row)
                        if a == tab["action"][k] and np.array_equal(row, tab["eta"][k]):
                            continue
                        if first_order and float(y[k] @ (r[:, a] - W[k]) + discount * score[np.arange(O), row].sum()) \
                                <= _tie(value):
                            continue  # first-order gain y_k . delta_k of the row not positive
                        trial = dict(tab, action=tab["action"].copy(), eta=tab["eta"].copy())
                        trial["action"][k] = a
                        trial["eta"][k] = row
                        tab, v, W, y = attempt(tab, trial, k, value)
                        improved |= tab is trial
                        value = v
                a = tab["action"][k]
                for o in range(O):
                    if tab["P"][k, a, o] <= 0:
                        continue
                    for n in rank[k, a, o]:
                        if n == tab["eta"][k, o]:
                            continue
                        if first_order:
                            delta = discount * T[a] @ (Z[a, :, o] * (W[n] - W[tab["eta"][k, o]]))
                            if float(y[k] @ delta) <= _tie(value):
                                continue
                        trial = dict(tab, eta=tab["eta"].copy())
                        trial["eta"][k, o] = n
                        tab, v, W, y = attempt(tab, trial, k, value)
                        improved |= tab is trial
                        value = v
            if not improved or self._expired():
                break
        if tab is not start[0]:  # the value reported: a direct solve of the final tables
            if upd is not None and K * S >= SPARSE_FROM:  # (the same sparse solve as _evaluate)
                if upd.pending:
                    upd.reset(tab["action"], tab["eta"], tab["m0"])
                value = upd.value
                self._values_cache = (_table_key(tab), upd.W, upd.y)  # for _node_values
            else:
                value = self._evaluate(pomdp, tab)
            if value < start[1]:  # (never seen: the product form's round-off is ~1e-13)
                tab, value = start
        tab["eta_full"] = tab["eta_full"].copy()
        tab["eta_full"][np.arange(K), tab["action"]] = tab["eta"]
        return tab, value

    def _merge(self, pomdp, C, tab, alphas):
        """Best ``(K-1)``-node controller obtained from ``tab`` by merging one node into another:
        ``(C, tab, value)`` (value exact, after polish) or None when ``K <= 2``.

        Merging node ``j`` into ``i`` redirects every transition into ``j`` (and ``m0`` when it is
        ``j``) to ``i`` and drops ``j``'s rows. Its first-order gain is ``g_j . (W_i - W_j)``
        with ``g_j = b0 [m0 = j] + discount sum_{(k, o): eta[k, o] = j, k != j} Z[a_k, :, o] *
        (T[a_k]^T y_k)`` (``y``: the adjoint occupancy, ``W``: the node values); the
        ``n_candidates`` best pairs are solved exactly and the best is polished. A node-merging step
        in the spirit of bounded policy iteration's pruning (Poupart & Boutilier 2003): a grown
        ``K``-node controller often holds a redundant node whose merge keeps most of its value.
        [R] project addition, see ``merge``."""
        K = len(C)
        if K <= 2:
            return None
        ev = self._system(pomdp)
        action = np.asarray(tab["action"], dtype=np.int64)
        eta = np.asarray(tab["eta"], dtype=np.int64)
        m0 = int(tab["m0"])
        W, y = self._node_values(pomdp, action, eta, m0)
        gain = merge_gains(ev, action, eta, m0, W, y)                 # gain[j, i]
        order = np.argsort(-gain, axis=None, kind="stable")[: self.n_candidates]
        best = None
        for flat in order:
            j, i = divmod(int(flat), K)
            keep = np.flatnonzero(np.arange(K) != j)
            remap = np.empty(K, dtype=np.int64)
            remap[keep] = np.arange(K - 1)
            remap[j] = remap[i]
            new = dict(action=action[keep].copy(), eta=remap[eta[keep]], eta_full=remap[tab["eta_full"][keep]],
                       m0=int(remap[m0]), P=tab["P"][keep], Bn=tab["Bn"][keep])
            v = self._evaluate(pomdp, new)
            if best is None or v > best[2] + _tie(best[2]):
                best = (C[keep], new, v)
        if best is None:
            return None
        if self.polish:
            tab2, v2 = self._polish(pomdp, best[0], best[1], best[2], alphas)
            best = (best[0], tab2, v2)
        return best

    def _restart_candidates(self, pomdp, K, alphas, cache):
        """Best sample-clustering controller with at most ``K`` nodes: ``(C, tab, value)`` or None.

        The sample (``cache["sample"]``) is drawn once per fit; results are cached per K so that
        both growth paths see the same candidates. [R] project addition (see ``restart``)."""
        if K in cache:
            return cache[K]
        Bu, wu, seed = cache["sample"]
        best = None
        k = min(K, len(Bu))
        for rep in range(self.n_restarts if k >= 2 else 0):
            C = _weighted_kmeans(Bu, wu, k, np.random.default_rng(seed + rep * 4096 + K))
            C = np.clip(C, 0.0, None)
            C /= C.sum(axis=1, keepdims=True)
            b0 = cache["b0"]
            C0 = C.copy()
            j = int(np.argmin(np.abs(C0 - b0[None, :]).sum(axis=1)))
            C0[j] = b0
            C0[[0, j]] = C0[[j, 0]]  # b0 first, as in the grown codebooks
            for cb in (C0, C):
                for dist, tab in zip(DISTANCES, self._build_all(pomdp, cb, alphas, DISTANCES)):
                    v = self._evaluate(pomdp, tab)
                    if best is None or v > best[2] + _tie(best[2]):
                        best = (cb, tab, v)
        cache[K] = best
        return best

    def _objective(self, pomdp, C, tab, W, alphas, discount, b0, B=None, w=None):
        """The pomdp reconstruction notes §1.4 objective with lambda_dec = lambda_cl = lambda_0 = 1."""
        S = C.shape[1]
        K = len(C)
        G = np.vstack([alphas, W])
        nu = _occupancy(tab["P"], tab["action"], tab["eta"], tab["m0"], discount)
        Pa = tab["P"][np.arange(K), tab["action"]]
        Ba = tab["Bn"][np.arange(K), tab["action"]]
        target = C[tab["eta"]]  # (K, O, S)
        dG = np.abs(np.einsum("kos,ns->kon", Ba - target, G)).max(axis=2)
        rho = (Pa * dG).sum(axis=1)
        closure = discount / (1 - discount) * float(nu @ rho)
        Bs = Ba.reshape(-1, S)
        ws = (np.maximum(nu, 0.0)[:, None] * Pa).reshape(-1)
        dec = float(ws @ self._distortion(pomdp, C, alphas, tab["action"]).min(axis=1))
        init = float(np.abs(G @ (b0 - C[tab["m0"]])).max())
        return dec + closure + init

    def _bound(self, pomdp, C, tab, discount, r, b0):
        K = len(C)
        P, Bn = tab["P"], tab["Bn"]
        l1 = np.abs(Bn - C[tab["eta_full"]]).sum(axis=3)  # (K, A, O)
        rho_ka = (P * l1).sum(axis=2)
        comp = dict(rho=float(rho_ka.max()), rho_pi=float(rho_ka[np.arange(K), tab["action"]].max()),
                    delta0=float(np.abs(b0 - C[tab["m0"]]).sum()))
        L = float(_th.lipschitz_constant(r, discount))
        out = _th.closure_bound(L, comp["rho"], comp["rho_pi"], comp["delta0"], discount)
        bound = dict(L=L, **comp)
        bound.update({k: float(v) for k, v in out.items()})
        bound.update(certificate_flags(bound, r, discount))
        return bound

    def _local_variants(self):
        """The polish between full steps, one growth path each: of the new node and the node whose
        successor it is (``"parent"``), and of the new node and every node with an edge into it
        (``"touched"``). With ``schedule="every"`` there is no step between, so one path."""
        return ("touched",) if self.schedule == "every" else ("parent", "touched")

    def _full_step(self, K):
        """Whether growth step ``K`` gets refinement, a polish of every node, restart candidates
        and (at step K + 1) the merge candidate: every K with ``schedule="every"``; with
        ``"doubling"`` K = 1, 2, 4, 8, ... and K >= n_memory."""
        return self.schedule == "every" or K >= self.n_memory or (K & (K - 1)) == 0

    # ------------------------------------------------------------------ fit
    def _grow_path(self, pomdp, G, b0, rng, refine, n_refine, discount, verbose, with_l1, restarts=None,
                   local="touched"):
        """One nested growth K = 1..n_memory, as a generator: it yields the best value so far once,
        before step K = n_memory (the checkpoint where ``fit`` keeps the best paths), and returns
        (C, tab, value, values, objectives, closed).

        With ``merge``, the grown (K+1)-node controller is also merged down to K nodes (``_merge``)
        as a K-node candidate, so the growth runs one step past ``n_memory`` (that step without
        restart candidates); every K's accepted controller depends only on the steps up to K + 1.
        The fits for different ``n_memory`` are not nested: the steps K >= n_memory are full steps
        (``_full_step``) and the checkpoint selection depends on n_memory."""
        C = b0[None, :].copy()
        checked = False  # whether the checkpoint before the last steps was passed (see ``fit``)
        tab = self._build(pomdp, C, G)
        value = self._evaluate(pomdp, tab)
        values, objectives = [], []
        kept = (C, tab, value)  # best controller so far (growth, restart or merge candidate)
        closed = False
        merge = self.merge
        bar = None
        if verbose >= 1:
            from tqdm.auto import tqdm
            bar = tqdm(total=self.n_memory, desc="RECAP", leave=False)

        def settle(K):
            values.append(kept[2])
            if bar is not None:
                bar.update(1)
                bar.set_postfix(value=kept[2], K=len(kept[0]))

        if not merge:
            settle(1)
        merge = merge and self.n_memory >= 2
        last = self.n_memory + 1 if merge else self.n_memory
        for K in range(2, last + 1):
            if self._expired():  # anytime: the best controller so far (``fit`` warns)
                break
            if K == self.n_memory:
                checked = True
                yield kept[2]
            extra = K > self.n_memory  # the look-ahead step: its merge is an n_memory-node candidate
            if not (extra and closed):
                W, y = self._node_values(pomdp, tab["action"], tab["eta"], tab["m0"])
            if not extra:
                objectives.append(self._objective(pomdp, C, tab, W, G, discount, b0))
            grown = False
            if not closed:
                cands = self._candidates(pomdp, C, tab, G, discount, with_l1)
                if not cands:
                    closed = True
                else:
                    best = None
                    full = self._full_step(K)
                    current = (W, y) if K * b0.size >= _SCREEN_SIZE else None
                    for cand in cands:
                        out = self._grow(pomdp, C, tab, value, cand, G, full=full, current=current)
                        if best is None or _growth_rank(out) > _growth_rank(best):
                            best, parent = out, cand[1][0]
                    C, tab, value = best
                    if refine and n_refine > 0 and full:
                        C, tab, value = self._refine(pomdp, C, tab, value, G, rng, discount, n_refine)
                    if self.polish:
                        # between full steps only the new node and its parent ("parent") or every
                        # node with an edge into it ("touched")
                        if local == "parent":
                            touched = None if full else (K - 1, parent)
                        else:
                            touched = None if full else np.flatnonzero((tab["eta"] == K - 1).any(axis=1) |
                                                                        (np.arange(K) == K - 1))
                        tab, value = self._polish(pomdp, C, tab, value, G, nodes=touched)
                    grown = True
            if merge:
                # the (K-1)-node candidate merged from the grown K-node controller settles K - 1
                if grown and self._full_step(K - 1) and not self._expired():
                    mg = self._merge(pomdp, C, tab, G)
                    if mg is not None and mg[2] > kept[2] + _tie(kept[2]):
                        kept = mg
                settle(K - 1)
            if extra:
                break
            if grown:
                if value > kept[2] + _tie(kept[2]):
                    kept = (C, tab, value)
                if restarts is not None and self._full_step(K) and not self._expired():
                    # the restart candidate competes with the kept controller only; growth
                    # continues from the grown codebook (so it can still close early)
                    alt = self._restart_candidates(pomdp, K, G, restarts)
                    if alt is not None and alt[2] > kept[2] + _tie(kept[2]):
                        kept = alt
            if not merge:
                settle(K)
        if not checked:
            yield kept[2]
        if len(values) < self.n_memory:  # n_memory = 1 with merge: no step ran
            settle(self.n_memory)
        if bar is not None:
            bar.close()
        return kept[0], kept[1], kept[2], values, objectives, closed

    def _select_start(self, pomdp, G, labels, b0, rng, discount, grown):
        """The best of the grown controller and the two starts of :mod:`._recap_starts` (the
        compressed policy graph, polished; the reachable-belief codebook, polished), by exact
        value (ties to the earlier); sets ``construction_``, ``start_values_`` and
        ``n_reachable_``. A start the time budget cut short is left out."""
        from . import _recap_starts as st

        K = self.n_memory
        ev = self._system(pomdp)
        best, name = grown, "growth"
        cache = getattr(self, "_graph_cache", None)  # shared with the smaller fit (_smaller_fit)
        if not (cache is not None and cache[0] is pomdp and np.array_equal(cache[1], G)
                and np.array_equal(cache[2], labels)):
            C, tab = st.policy_graph(ev, G, labels)
            cache = self._graph_cache = (pomdp, G, labels, C, tab, {})
        C, tab, trajectories = cache[3], cache[4], cache[5]
        self.policy_graph_size_ = len(C)
        polish = (lambda C_, t, v_: self._polish(pomdp, C_, t, v_, G)) if self.polish else None
        out = None if self._expired() else st.best_compression(
            ev, C, tab, K, lambda t: self._evaluate(pomdp, t), polish, expired=self._expired,
            trajectories=trajectories)
        if out is not None:
            C, tab, v = out
            self.start_values_["policy_graph"] = v
            if v > best[2] + _tie(best[2]):
                best, name = (C, tab, v), "policy_graph"
        (crng,) = spawn_generators(rng, 1)
        B, w = st.reachable_beliefs(pomdp, G, labels, crng, self.n_traj, _default_horizon(discount))
        self.n_reachable_ = len(B)
        cb = None if self._expired() else st.codebook_start(
            B, w, K, G, crng, lambda C_: self._build_all(pomdp, C_, G, DISTANCES),
            lambda t: self._evaluate(pomdp, t), DISTANCES, b0, expired=self._expired)
        if cb is not None:
            C, tab, v = cb
            if self.polish:
                tab, v = self._polish(pomdp, C, tab, v, G)
            self.start_values_["codebook"] = v
            if v > best[2] + _tie(best[2]):
                best, name = (C, tab, v), "codebook"
        self.construction_ = name
        self._values_cache = None
        return best

    def _expired(self):
        """Whether the ``time_limit`` budget of the current fit ran out (remembered in ``_ran_out``)."""
        deadline = getattr(self, "_deadline", None)  # (None outside fit)
        if deadline is None:
            return False
        if not self._ran_out and time.perf_counter() >= deadline:
            self._ran_out = True
        return self._ran_out

    def _smaller_fit(self, pomdp, alphas):
        """The fit of this estimator at the largest power of two ``P < n_memory`` (``P >= 2``), with
        the same parameters and ``random_state`` (the remaining time budget), or None. Its
        controller is a candidate at ``n_memory`` (a ``P``-node controller is a ``K``-node one
        with unreachable nodes: the same value), so the value at ``n_memory`` is at least the
        value a fit at ``P`` returns, and by induction at every power of two below ``n_memory``."""
        K = self.n_memory
        P = 1 << ((K - 1).bit_length() - 1) if K >= 3 else 0
        if P < 2 or self._expired():
            return None
        from sklearn.base import clone

        sub = clone(self).set_params(n_memory=P, verbose=0)
        if self._deadline is not None:
            sub.set_params(time_limit=max(self._deadline - time.perf_counter(), 1e-9))
        # the model's system, the policy graph and its batch compressions are shared (the same
        # numbers as the sub-fit would compute itself)
        sub._nested = True
        sub._model_cache = getattr(self, "_model_cache", None)
        sub._graph_cache = getattr(self, "_graph_cache", None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sub.fit(pomdp, alphas=alphas)
        self._model_cache, self._graph_cache = sub._model_cache, sub._graph_cache
        if any(issubclass(c.category, ConvergenceWarning) for c in caught):
            self._ran_out = True
        return sub

    def fit(self, pomdp, alphas=None):
        """Grow the codebook for K = 1..n_memory and build the RECAP controller.

        Parameters
        ----------
        pomdp : POMDP
            The model.
        alphas : array-like of shape (n_alpha, S) or None, default=None
            Alpha vectors of ``V_Gamma`` (``None``: computed by ``solver``).

        Returns
        -------
        self
            The fitted controller.
        """
        validate_params(self)
        _, _, r, discount = self._check_common(pomdp)
        refine = check_bool(self.refine, "refine")
        n_refine = check_scalar_int(self.n_refine, "n_refine", low=0)
        check_option(self.growth_metric, "growth_metric", ("decision", "l1"))
        check_scalar_int(self.n_candidates, "n_candidates", low=1)
        check_scalar_int(self.n_traj, "n_traj", low=1)
        check_scalar_float(self.tol, "tol", low=0.0)
        verbose = check_scalar_int(self.verbose, "verbose", low=0)
        check_bool(self.polish, "polish")
        check_bool(self.merge, "merge")
        starts = check_bool(self.starts, "starts")
        check_option(self.schedule, "schedule", ("doubling", "every"))
        restart = check_bool(self.restart, "restart")
        n_samples = check_scalar_int(self.n_samples, "n_samples", low=1)
        check_scalar_int(self.n_restarts, "n_restarts", low=0, high=64)
        check_option(self.solver, "solver", ("pbs", "pbvi"))
        if self.solver_params is not None and not isinstance(self.solver_params, dict):
            raise TypeError(f"'solver_params' must be a dict or None; got {type(self.solver_params).__name__}.")
        time_limit = None if self.time_limit is None else check_scalar_float(
            self.time_limit, "time_limit", low=0.0, closed="neither")
        rng = check_random_state(self.random_state)
        G, labels, pbvi = self._get_alphas(pomdp, alphas, rng)
        self._deadline = None if time_limit is None else time.perf_counter() + time_limit
        self._ran_out = False
        self.policy_graph_size_ = self.n_reachable_ = None
        smaller = self._smaller_fit(pomdp, alphas if alphas is not None else (pbvi if pbvi is not None else G)) \
            if starts else None
        self.pbvi_ = pbvi
        self._alpha_labels = labels
        self._succ_cache = self._values_cache = None
        S = _n_states(pomdp)
        b0 = _b0(pomdp, None, S)
        restarts = None
        if restart:
            (srng,) = spawn_generators(rng, 1)
            H = _default_horizon(discount)
            B, w = simulate_beliefs(pomdp, max(1, -(-n_samples // H)), H, srng,
                                    alphas=G if labels is not None else None, actions=labels, explore=0.1)
            B, w = B[:n_samples], w[:n_samples]
            Bu, inv = np.unique(np.round(B, 12), axis=0, return_inverse=True)
            restarts = {"sample": (Bu, np.bincount(inv.ravel(), weights=w), int(srng.integers(0, 2**31 - K_MAX))),
                        "b0": b0}

        if self.growth_metric == "decision":
            # nested growth paths: decision-distortion candidates only, and decision + L1
            # candidates (each with both between-step polishes under "doubling"); the path with the
            # higher final exact value is kept (each path is non-decreasing in K, so the kept one is
            # too; costs one growth per path).
            variants = [(with_l1, local) for local in self._local_variants() for with_l1 in (False, True)]
        else:
            variants = [(True, local) for local in self._local_variants()]
        rngs = spawn_generators(rng, len(variants)) if len(variants) > 1 else [rng]
        # every path runs to K = n_memory - 1; only the _FINAL_BEAM best there (by the value kept so
        # far, ties to the earlier path) run the last steps, which cost the most (each polishes
        # every node of the largest controllers)
        paths = [self._grow_path(pomdp, G, b0, r_, refine, n_refine, discount, verbose, with_l1, restarts, local)
                 for r_, (with_l1, local) in zip(rngs, variants)]
        scores = np.array([next(path) for path in paths])
        best = None
        for i in np.argsort(-scores, kind="stable")[:_FINAL_BEAM]:
            try:
                next(paths[i])
            except StopIteration as stop:
                out = stop.value
            if best is None or out[2] > best[2]:
                best = out
        C, tab, value, values, objectives, closed = best
        self.construction_ = "growth"
        self.start_values_ = {"growth": value}
        if starts:
            C, tab, value = self._select_start(pomdp, G, labels, b0, rng, discount, (C, tab, value))
            if smaller is not None:
                self.start_values_["smaller"] = smaller.value_
                if smaller.value_ > value + _tie(value):
                    C, value, self.construction_ = smaller.codebook_, smaller.value_, "smaller"
                    tab = dict(action=smaller.action_, eta=smaller.eta_, eta_full=smaller.eta_full_,
                               m0=smaller.m0_, P=None, Bn=None)
                    tab["P"], tab["Bn"], _ = self._successors(self._system(pomdp), C, G)[:3]
        values = list(values) + [values[-1] if values else value] * (self.n_memory - len(values))
        if values:
            values[-1] = max(values[-1], value)
        self._set_tables(pomdp, C, tab, G)
        objectives.append(self._objective(pomdp, C, tab, self.W_, G, discount, b0))
        self.value_history_ = np.asarray(values)
        self.objective_history_ = np.asarray(objectives)
        self.closed_ = closed
        self.bound_ = self._bound(pomdp, C, tab, discount, r, b0)
        self._succ_cache = self._values_cache = None
        if not getattr(self, "_nested", False):
            self._graph_cache = None
        if self._ran_out:
            warnings.warn(f"RECAPController: time_limit={time_limit:g} s ran out before the search ended; "
                          f"returning the best controller found so far ({self.n_memory_} nodes, "
                          f"construction_={self.construction_!r}, value {self.value_:.6g}).",
                          ConvergenceWarning, stacklevel=2)
        reach = [n for n in (self.policy_graph_size_, self.n_reachable_) if n is not None]
        if self.n_memory_ < self.n_memory and (closed or (reach and min(reach) < self.n_memory)):
            why = "the grown codebook closed" if closed else (
                f"the solver's policy reaches {self.n_reachable_} distinct beliefs and its policy graph has "
                f"{self.policy_graph_size_} nodes")
            warnings.warn(f"RECAPController: n_memory={self.n_memory} is more than this model needs ({why}); "
                          f"returning a {self.n_memory_}-node controller.", UserWarning, stacklevel=2)
        return self
