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

Layout: this module holds the estimator (parameter checks, the growth paths and their beam, the
smaller fit, the fitted attributes); the search itself (growth, refinement, polish, merge, restart
candidates, the policy-graph and codebook starts and the selection by exact value) is
:class:`._search.RecapSearch`, whose methods the names ``_grow``, ``_polish``, ``_merge``,
``_restart_candidates``, ``_local_variants`` and ``_full_step`` below refer to.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Mapping
from numbers import Integral, Real

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval
from threadpoolctl import threadpool_limits

from theory import pomdp as _th

from ..._anytime import Interruptible, is_interrupt, unfitted_on_interrupt
from ..._validation import (
    RANDOM_STATE_CONSTRAINTS,
    OrderedStrOptions,
    check_random_state,
    spawn_generators,
    validate_params,
)
from .._beliefs import _arrays, _b0, _n_states
from ._codebook import _CodebookController, _default_horizon, simulate_beliefs
from ._diagnose import diagnose, is_blind, live_observations
from ._fsc_eval import FSCSystem
from ._search import BestSoFar, RecapSearch, _tie

__all__ = ["RECAPController"]


K_MAX = 2**20  # room for the per-K KMeans seeds (seed + rep * 4096 + K) below 2**31
_FINAL_BEAM = 2  # growth paths that run the last steps (K = n_memory and the look-ahead step)


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
        Also build two K-node controllers from the solver's vectors (:mod:`._starts`): the
        alpha-vector policy graph on the beliefs reachable from ``b0`` compressed to K nodes by
        node merges guided by first-order gains (node values by Krylov solves on large graphs) and
        solves of the candidate merges (the controller compression of
        Grześ, Poupart, Yang and Hoey, IEEE Trans. Cybernetics 2015), and the decision-distortion
        quantisation of the beliefs reached by the solver's greedy policy; each is polished. With
        ``n_memory >= 3`` the fit at the largest power of two ``P < n_memory`` (same parameters and
        ``random_state``) is run first and its controller is a candidate too (a ``P``-node
        controller is an ``n_memory``-node one whose extra nodes are unreachable), so on the same
        vectors the value at ``n_memory`` is at least the value at every smaller power of two.
        The compressed policy graph is built first, before the smaller fit and the growth (it is
        cheap where the graph is small: 23 nodes, 1 s, on RockSample(5, 5)), so a ``time_limit``
        or interrupt stop has it; the selection among the candidates is unchanged.
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
        Budget in seconds of the search on the clock ``clock`` (after the alpha vectors are obtained; a solver
        run by ``fit`` keeps its own ``time_limit``); must be > 0. Checked between growth steps and
        growth candidates, polish sweeps and nodes, refinement steps (and before each refinement's
        belief simulation), compression rounds, policy-graph nodes, codebook seeds and before the
        belief simulations of the restart sample and the codebook start: when it runs out the best
        controller found so far is returned (its value exact) with a
        :class:`~sklearn.exceptions.ConvergenceWarning`. The check is between steps, so a fit may
        overrun the budget by one step (on RockSample(5, 5) at ``n_memory=32``, ``time_limit=110``
        took 114.5 s of wall time, docs/pomdp.md).
    clock : {"cpu", "wall"}, default="cpu"
        Clock of ``time_limit``: ``"cpu"``, the CPU time of the process (:func:`time.process_time`;
        the same default as :class:`PointBasedSolver` and SARSOP, so a budget means the same work on
        a loaded machine), or ``"wall"``, elapsed time (:func:`time.perf_counter`).

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
        Nodes of the uncompressed policy graph (with ``starts``; None when ``time_limit`` ran out
        before it was built).
    n_reachable_ : int or None
        Distinct beliefs reached by the solver's greedy policy from ``b0`` in the simulated sample
        of the codebook start (with ``starts``; None when ``time_limit`` ran out before the
        simulation).
    closed_ : bool
        Whether growth stopped because every successor is already a codeword (rho_pi = 0).
    bound_ : dict
        ``L, rho, rho_pi, delta0`` and ``U1, U2, U3`` computed by :func:`theory.pomdp.closure_bound`
        (with ``L`` from :func:`theory.pomdp.lipschitz_constant`), ``trivial`` (the trivial bound
        ``(Rmax - Rmin) / (1 - discount)`` on any loss) and ``vacuous`` (per U-bound: whether it is
        at or above ``trivial``, so that it says nothing on this model).
    interrupted_ : bool
        Whether an interrupt (Ctrl-C) stopped the search; the fit then holds the best controller
        found so far (see Notes) and an ``InterruptedFitWarning`` says so.
    blind_ : bool
        Whether the controller ignores its observations (every node reachable from ``m0_`` has one
        successor over the observations the model can emit).
    blind_reason_ : str or None
        Why the controller is blind or near-blind (its value closes less than half the gap between
        the best 1-node controller and the solver's lower bound at ``b0``), None otherwise: the
        converse bound for ``n_memory`` memory states and, where small enough, the exhaustive
        check (see ``certificate_``). When the value is below the solver's lower bound the same
        text is a ``UserWarning``.
    certificate_ : dict or None
        The diagnosis behind ``blind_reason_`` (:func:`._diagnose.diagnose`): ``kind`` ("blind" or
        "near_blind"), ``value``, ``solver_lower``, ``blind_value`` (best 1-node controller),
        ``converse`` (``bound``, ``solver_upper`` and ``k_node_upper``: no controller with
        ``n_memory`` memory states has a value above it; None without the solver's upper bound),
        ``exhaustive`` (every deterministic ``n_memory``-node controller evaluated exactly:
        ``n_controllers``, ``best_value``, ``optimal``; None when there are more than 50,000 of them,
        ``(A K^O)^K`` with O the observations the model can emit, or ``K S > 64``), ``certified``
        (the exhaustive check or the converse ceiling shows that no better controller exists) and
        ``size_rule``.

    Notes
    -----
    The search runs single-threaded BLAS (``threadpoolctl.threadpool_limits(1, "blas")`` for the
    duration of the fit, after the solver's vectors are obtained): its many dense solves are small
    (size ``K * S``), and a multithreaded BLAS made them slower. On tiger-grid at ``K = 16`` the fit
    took 3.7 to 10 times the CPU time with the default (2) threads for the same controller (docs/pomdp.md).

    Interrupts (:mod:`algos._anytime`): a SIGINT (Ctrl-C) in the main thread asks the search to
    stop at its next ``time_limit`` check, and the fit returns what the ``time_limit`` path returns
    then (the best controller so far, its value exact) with an ``InterruptedFitWarning`` instead of
    the ``ConvergenceWarning``; a second SIGINT aborts the fit. A ``KeyboardInterrupt`` raised
    inside the search otherwise (another thread, or code) stops it at once: the fit keeps the
    controller of highest exact value among those the search had settled (each growth path's
    kept controller, the starts, the controllers of the smaller fit), or the blind 1-node
    controller when none was, and sets ``interrupted_`` and warns in the same way. The solver that
    ``fit`` runs when it gets no ``alphas`` runs inside the same interrupt: a SIGINT during it stops
    the solver at its next consistent point (``pbvi_.interrupted_``) and the whole fit with it: the
    search is skipped and the blind 1-node controller is returned (pass ``alphas=est.pbvi_`` to a
    later fit to go on from the solver's vectors). An interrupt during the parameter checks, before
    the fit's interrupt handling starts, or a second one is re-raised and leaves the estimator
    unfitted (:mod:`algos._anytime`).
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
        "pbvi_params": [Mapping, None],  # passed on to PBVI as keyword arguments
        "polish": ["boolean"],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "refine": ["boolean"],
        "restart": ["boolean"],
        "schedule": [OrderedStrOptions(("doubling", "every"))],
        "solver": [OrderedStrOptions(("pbs", "pbvi"))],
        "solver_params": [dict, None],
        "starts": ["boolean"],
        "time_limit": [Interval(Real, 0, None, closed="neither"), None],
        "clock": [OrderedStrOptions(("cpu", "wall"))],
        "tol": [Interval(Real, 0, None, closed="left")],
        "verbose": [Interval(Integral, 0, None, closed="left")],
    }

    _distance = "decision"

    def __init__(self, *, n_memory=8, action_rule="lookahead", refine=True, n_refine=10, pbvi_params=None,
                 growth_metric="decision", n_candidates=3, n_traj=200, tol=1e-9, polish=True,
                 restart=True, n_samples=2000, n_restarts=5, random_state=None, verbose=0, solver="pbs",
                 solver_params=None, merge=True, schedule="doubling", starts=True, time_limit=None,
                 clock="cpu"):
        self.time_limit = time_limit
        self.clock = clock
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

    def _search(self, pomdp):
        """A :class:`RecapSearch` on the model's system with this estimator's parameters and time
        budget (the search itself: :mod:`._search`)."""
        best = getattr(self, "_best", None)
        record = None
        if best is not None:  # the smaller fit's candidates are "smaller" ones of the outer fit
            label = "smaller" if getattr(self, "_nested", False) else None
            record = lambda name, *args: best.offer(label or name, *args)  # noqa: E731
        return RecapSearch(self, self._system(pomdp), expired=self._expired,
                           graph_cache=getattr(self, "_graph_cache", None), record=record)

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


    def _diagnose(self, pomdp, r, discount):
        """Set ``blind_``, ``blind_reason_`` and ``certificate_`` (the smaller fit skips the
        diagnosis) and warn when the controller is blind or near-blind below the solver's bound."""
        self.blind_, self.blind_reason_, self.certificate_ = False, None, None
        if getattr(self, "_nested", False):
            return
        T, Z = _arrays(pomdp)[:2]
        b0 = _b0(pomdp, None, T.shape[1])
        self.blind_ = is_blind(self.action_, self.eta_, self.m0_, live_observations(T, Z, b0))
        if getattr(self, "interrupted_", False):  # the user asked to stop: no certificates computed
            return
        ev = self._system(pomdp)
        zero = np.zeros((1, Z.shape[2]), dtype=np.int64)
        blind_value = max(ev.value(np.array([a]), zero, 0) for a in range(T.shape[0]))
        lower = float(np.max(np.asarray(self.alphas_) @ b0))
        solver = self.pbvi_ if self.pbvi_ is not None else None
        reason, cert = diagnose(pomdp, (T, Z, r, discount), b0, self.action_, self.eta_, self.m0_, self.value_,
                                blind_value, lower, solver=solver, n_memory=self.n_memory)
        self.blind_reason_, self.certificate_ = reason, cert
        if reason is not None and self.value_ < lower - 1e-9 * max(1.0, abs(lower)):
            warnings.warn(f"RECAPController: {reason}", UserWarning, stacklevel=3)

    def _now(self):
        """The current reading of the ``clock`` that ``time_limit`` is counted on."""
        return time.process_time() if self.clock == "cpu" else time.perf_counter()

    def _expired(self):
        """Whether the ``time_limit`` budget of the current fit ran out (remembered in ``_ran_out``)
        or an interrupt (SIGINT) asked the fit to stop (the same anytime path, without the
        ``ConvergenceWarning``)."""
        run = getattr(self, "_run", None)
        if run is not None and run.requested:
            return True
        deadline = getattr(self, "_deadline", None)  # (None outside fit)
        if deadline is None:
            return False
        if not self._ran_out and self._now() >= deadline:
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
            sub.set_params(time_limit=max(self._deadline - self._now(), 1e-9))
        # the model's system, the policy graph and its batch compressions are shared (the same
        # numbers as the sub-fit would compute itself)
        sub._nested = True
        sub._run, sub._best = self._run, self._best  # one interrupt and one best-so-far record
        sub._model_cache = getattr(self, "_model_cache", None)
        sub._graph_cache = getattr(self, "_graph_cache", None)
        sub._checkpoints = getattr(self, "_checkpoints", None)  # the growth paths' states at K = P
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sub.fit(pomdp, alphas=alphas)
        self._model_cache, self._graph_cache = sub._model_cache, sub._graph_cache
        if any(issubclass(c.category, ConvergenceWarning) for c in caught):
            self._ran_out = True
        return sub

    def _search_all(self, pomdp, alphas, G, labels, pbvi, rng, discount, refine, n_refine, verbose, starts,
                    restart, n_samples):
        """The search of ``fit``: the smaller fit, the growth paths and their beam, the starts.
        Returns ``(C, tab, value, values, objectives, closed, search)`` and sets ``construction_``,
        ``start_values_``, ``policy_graph_size_`` and ``n_reachable_``."""
        if not getattr(self, "_nested", False):
            # the growth paths' checkpoints, shared with the smaller fits (no time budget: a path
            # that a budget cut short is not the same computation)
            self._checkpoints = {} if self._deadline is None else None
        if starts:  # the policy-graph start first: cheap, and what an anytime stop returns
            early = self._search(pomdp)
            early._graph_start(pomdp, G, labels)
            self._graph_cache = early.graph_cache
        smaller = self._smaller_fit(pomdp, alphas if alphas is not None else (pbvi if pbvi is not None else G)) \
            if starts else None
        search = self._search(pomdp)
        S = _n_states(pomdp)
        b0 = _b0(pomdp, None, S)
        restarts = None
        if restart and not self._expired():
            (srng,) = spawn_generators(rng, 1)
            # the sample and its candidates per K are those of the smaller fit when it drew them from
            # the same generator state (then the same numbers): shared through the checkpoints
            shared = getattr(self, "_checkpoints", None) if self._deadline is None else None
            rkey = ("restarts", (repr(srng.bit_generator.state), n_samples))
            restarts = None if shared is None else shared.get(rkey)
            if restarts is None:
                H = _default_horizon(discount)
                B, w = simulate_beliefs(pomdp, max(1, -(-n_samples // H)), H, srng,
                                        alphas=G if labels is not None else None, actions=labels, explore=0.1)
                B, w = B[:n_samples], w[:n_samples]
                Bu, inv = np.unique(np.round(B, 12), axis=0, return_inverse=True)
                restarts = {"sample": (Bu, np.bincount(inv.ravel(), weights=w),
                                       int(srng.integers(0, 2**31 - K_MAX))), "b0": b0}
                if shared is not None:
                    shared[rkey] = restarts

        if self.growth_metric == "decision":
            # nested growth paths: decision-distortion candidates only, and decision + L1
            # candidates (each with both between-step polishes under "doubling"); the path with the
            # higher final exact value is kept (each path is non-decreasing in K, so the kept one is
            # too; costs one growth per path).
            variants = [(with_l1, local) for local in search._local_variants() for with_l1 in (False, True)]
        else:
            variants = [(True, local) for local in search._local_variants()]
        rngs = spawn_generators(rng, len(variants)) if len(variants) > 1 else [rng]
        # every path runs to K = n_memory - 1; only the _FINAL_BEAM best there (by the value kept so
        # far, ties to the earlier path) run the last steps, which cost the most (each polishes
        # every node of the largest controllers)
        checkpoints = getattr(self, "_checkpoints", None) if self._deadline is None else None
        paths = [search._grow_path(pomdp, G, b0, r_, refine, n_refine, discount, verbose, with_l1, restarts, local,
                                   checkpoints=checkpoints)
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
            (C, tab, value), info = search._select_start(pomdp, G, labels, b0, rng, discount, (C, tab, value))
            self._graph_cache = search.graph_cache
            self.construction_ = info["construction"]
            self.start_values_.update(info["start_values"])
            self.policy_graph_size_, self.n_reachable_ = info["policy_graph_size"], info["n_reachable"]
            if smaller is not None:
                self.start_values_["smaller"] = smaller.value_
                if smaller.value_ > value + _tie(value):
                    C, value, self.construction_ = smaller.codebook_, smaller.value_, "smaller"
                    tab = dict(action=smaller.action_, eta=smaller.eta_, eta_full=smaller.eta_full_,
                               m0=smaller.m0_, P=None, Bn=None)
                    tab["P"], tab["Bn"], _ = search._successors(self._system(pomdp), C, G)[:3]
        return C, tab, value, values, objectives, closed, search

    def _finish(self, pomdp, search, C, tab, value, values, objectives, closed, G, discount, r):
        """Set the fitted attributes of the controller ``(C, tab)`` of exact value ``value``."""
        b0 = _b0(pomdp, None, _n_states(pomdp))
        values = list(values) + [values[-1] if values else value] * (self.n_memory - len(values))
        if values:
            values[-1] = max(values[-1], value)
        self._set_tables(pomdp, C, tab, G)
        objectives = list(objectives) + [search._objective(pomdp, C, tab, self.W_, G, discount, b0)]
        self.value_history_ = np.asarray(values)
        self.objective_history_ = np.asarray(objectives)
        self.closed_ = closed
        self.bound_ = self._bound(pomdp, C, tab, discount, r, b0)
        if not getattr(self, "_nested", False):
            self._graph_cache = self._checkpoints = None

    def _fit_search(self, pomdp, alphas, G, labels, pbvi, rng, discount, refine, n_refine, verbose, starts,
                    restart, n_samples, time_limit, solver_stopped):
        """The search of :meth:`fit` after the alpha vectors: ``_search_all``'s result, or None when
        an interrupt stopped the fit (the solver's, or one in the search: the best so far is kept)."""
        self._deadline = None if time_limit is None else self._now() + time_limit
        self._ran_out = False
        self.policy_graph_size_ = self.n_reachable_ = None
        self.pbvi_ = pbvi
        self._alpha_labels = labels
        nested = getattr(self, "_nested", False)
        run = self._run
        if solver_stopped or (not nested and run.requested):
            return None  # the solver was interrupted: the whole fit stops
        with threadpool_limits(limits=1, user_api="blas"):  # small dense solves: see Notes
            if nested:  # an interrupt propagates to the outer fit, which keeps the best so far
                return self._search_all(pomdp, alphas, G, labels, pbvi, rng, discount, refine, n_refine,
                                        verbose, starts, restart, n_samples)
            try:
                return self._search_all(pomdp, alphas, G, labels, pbvi, rng, discount, refine,
                                        n_refine, verbose, starts, restart, n_samples)
            except (KeyboardInterrupt, SystemError) as exc:
                if not is_interrupt(exc) or run.interrupted:  # not one, or the second interrupt: abort
                    raise
                run.interrupted = True
                return None

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
        refine, n_refine, verbose = bool(self.refine), int(self.n_refine), int(self.verbose)
        starts, restart, n_samples = bool(self.starts), bool(self.restart), int(self.n_samples)
        time_limit = None if self.time_limit is None else float(self.time_limit)
        rng = check_random_state(self.random_state)
        nested = getattr(self, "_nested", False)
        with unfitted_on_interrupt(self):  # an interrupt before any controller exists, or an abort: unfitted
            if not nested:  # the smaller fit shares the outer fit's interrupt and best-so-far record
                self._run, self._best = Interruptible("RECAPController", defer=True), BestSoFar()
            run = self._run
            with (contextlib.nullcontext() if nested else run):
                # the solver runs inside this fit's run: a SIGINT during it stops the solver at its next
                # consistent point and marks this fit, which then stops too
                G, labels, pbvi = self._get_alphas(pomdp, alphas, rng)
                solver_stopped = alphas is None and bool(getattr(pbvi, "interrupted_", False))
                found = self._fit_search(pomdp, alphas, G, labels, pbvi, rng, discount, refine, n_refine, verbose,
                                         starts, restart, n_samples, time_limit, solver_stopped)
            with threadpool_limits(limits=1, user_api="blas"):  # small dense solves: see Notes
                if found is None:  # interrupted: the best controller the search had settled
                    if self._best.best is None:  # nothing settled yet: the blind (1-node) controller
                        s0 = RecapSearch(self, self._system(pomdp))
                        b0 = _b0(pomdp, None, _n_states(pomdp))
                        tab0 = s0._build(pomdp, b0[None, :].copy(), G)
                        self._best.offer("growth", b0[None, :], tab0, s0._evaluate(pomdp, tab0))
                    C, tab, value, self.construction_, values = self._best.best
                    self.start_values_ = {self.construction_: value}
                    objectives, closed = [], False
                    search = RecapSearch(self, self._system(pomdp))
                else:
                    C, tab, value, values, objectives, closed, search = found
                self._finish(pomdp, search, C, tab, value, values, objectives, closed, G, discount, r)
            if not nested:
                self._best = None
                if solver_stopped:
                    run.interrupted = True
                run.finish(self, f"({self.n_memory_} nodes, construction_={self.construction_!r}, "
                                 f"value {self.value_:.6g})")
        self._diagnose(pomdp, r, discount)
        if self._ran_out:
            warnings.warn(f"RECAPController: time_limit={time_limit:g} s ({self.clock} clock) ran out before the "
                          "search ended; "
                          f"returning the best controller found so far ({self.n_memory_} nodes, "
                          f"construction_={self.construction_!r}, value {self.value_:.6g}).",
                          ConvergenceWarning, stacklevel=2)
        reach = [n for n in (self.policy_graph_size_, self.n_reachable_) if n is not None]
        if self.n_memory_ < self.n_memory and (closed or (reach and min(reach) < self.n_memory)):
            parts = ([] if self.n_reachable_ is None else
                     [f"the solver's policy reaches {self.n_reachable_} distinct beliefs"]) + (
                [] if self.policy_graph_size_ is None else [f"its policy graph has {self.policy_graph_size_} nodes"])
            why = "the grown codebook closed" if closed else " and ".join(parts)
            warnings.warn(f"RECAPController: n_memory={self.n_memory} is more than this model needs ({why}); "
                          f"returning a {self.n_memory_}-node controller.", UserWarning, stacklevel=2)
        return self
