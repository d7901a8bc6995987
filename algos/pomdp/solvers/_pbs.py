r"""Heuristic-search point-based POMDP solver (HSVI2, Smith & Simmons 2005).

The solver follows HSVI2 [SS05]: two bounds on ``V*`` are refined by trials from ``b0``.

* **Lower bound** ``L(b) = max_alpha b . alpha``: a set of alpha vectors, started from the blind
  policies "always play a" (each is the value of a plan, hence below ``V*``); every point-based
  backup at a belief of a trial builds the vector of "play a, then the best current vector after
  each observation", again the value of a plan, so ``L <= V*`` throughout.
* **Upper bound** ``U(b)``: the minimum of the fast informed bound (Hauskrecht 2000; its Q-vectors
  are iterated from ``max r / (1 - discount)`` and stay above their fixed point) and the sawtooth
  interpolation of a set of belief points ``(b_i, v_i)`` over the corner values
  ``c_s = max_a Q[a, s]``. A point is added with ``v_i = H U(b_i)`` (the Bellman backup of the
  current upper bound), which is ``>= V*(b_i)``; so ``U >= V*`` throughout.
* **Trials** (HSVI2 Alg. 1): from ``b0`` at depth 0, play the action that maximises the upper
  Q-value and follow the observation with the largest weighted excess uncertainty
  ``P(o|b,a) [U - L](tau(b,a,o)) - eps discount^-(t+1)``; stop when the width at depth ``t`` is
  at most ``eps discount^-t``; back both bounds up along the path, deepest first.
* **Pruning**: when a set has grown by 10 % since the last pass, the alpha vectors that are not the
  best one at any witness belief (the belief of a backup that added a vector, and ``b0``) are
  removed (SARSOP's pruning at sampled beliefs [KHL08] §3.3 with the backup beliefs as the sample;
  ``L`` is unchanged at ``b0`` and at the surviving witnesses, may drop elsewhere, and stays a lower
  bound), and upper points that the other points already interpolate below their value are removed
  (HSVI2 §4; ``U`` unchanged). With ``_pbs_engines.WITNESS_PRUNING = False`` the vectors are pruned by pointwise
  dominance instead (HSVI2 §4; ``L`` unchanged everywhere).
* **Stopping**: when ``U(b0) - L(b0) <= target_gap`` or after ``time_limit`` seconds of the chosen
  clock (CPU time of the process by default, as SARSOP's limit; the numba kernels are compiled on a
  tiny model before the clock starts, so compilation is not charged to the budget).

Precision schedule (a project variant, not in [SS05]): trial ``k`` uses
``eps_k = max(target_gap, kappa * (U(b0) - L(b0)))`` with ``kappa = 0.5`` (SARSOP's idea of
shallow trials while the root gap is large, Kurniawati, Hsu & Lee 2008 §4), which keeps early
trials short; the final trials run at ``eps = target_gap`` exactly as in HSVI2, so the stopping
rule is the paper's.

Deep sampling (SARSOP [KHL08] Alg. 3): every ``DEEP_EVERY``-th trial, the first included, ends by
SARSOP's target rule instead of the width rule: the root's targets ``L(b0)`` and ``L(b0) + eps`` are carried down
the path as the values each successor must reach for its parent to reach them, and the trial goes on while the
upper bound says the lower target can still be reached there (``_pbs_kernels.trial``). Such trials run deeper and
carry the rewards found far from ``b0`` (RockSample's exit, Tag's capture) back to it in one pass, which raises
``L(b0)`` early; the width-rule trials between them keep the HSVI2 progress of both bounds. Only the depth of a
trial changes, never the backups, so both bounds stay valid.

Cost of a trial (the search is unchanged; every kept value equals a fresh evaluation): the descent keeps, at each
node of the path, the upper values of all successors and the lower values of the chosen action's successors, and
the backup there reads only the vectors and points the deeper backups added since; nodes met again in later trials
keep the same values in a search tree (SARSOP's per-node bounds, [KHL08]) until a pruning renumbers the sets; the
backup scores the actions in decreasing upper Q-value and stops once the next one's upper Q-value is below the best
backed-up value found (no vector of that action can be the best); the sawtooth reads only the points whose first
support state lies in the belief's support (``_pbs_kernels.upper_listed``), and the belief update runs over the
belief's support, not over all states.

The model is held sparse: transitions in CSR per action (built from a sparse
:class:`~algos.pomdp.POMDP`'s per-action CSR without a dense copy, or from a dense ``T``), observations dense ``(A, S,
O)``, belief supports used in every inner product; alpha vectors are stored column-wise and the sawtooth
ratios are screened by support bitmasks (kernels and layout in :mod:`._pbs_kernels`).

References
----------
[SS05] T. Smith and R. Simmons. Point-based POMDP algorithms: improved analysis and
implementation. UAI 2005.
[KHL08] H. Kurniawati, D. Hsu and W. S. Lee. SARSOP: efficient point-based POMDP planning by
approximating optimally reachable belief spaces. RSS 2008.
"""

from __future__ import annotations

import math
import time
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval

from accel.backend import RESOLVE_OPTIONS, resolve

from ..._anytime import Interruptible, unfitted_on_interrupt
from ..._validation import (
    RANDOM_STATE_CONSTRAINTS,
    OrderedStrOptions,
    validate_params,
)
from .._beliefs import (
    _arrays,
    _b0,
    _model_arrays,
    _need_discount_below_one,
    _sparse_parts,
    blind_policy_values,
    check_belief,
)
from . import _pbs_kernels as _k
from . import _upper_init as _ui
from ._alpha_bounds import AlphaBoundsMixin
from ._pbs_engines import _NumbaEngine, _TorchEngine, points_dense

__all__ = ["PointBasedSolver"]

KAPPA = 0.5          # precision schedule eps_k = max(target_gap, KAPPA * gap(b0)) (see module notes)
#: every DEEP_EVERY-th trial (the first included) uses SARSOP's selective deep sampling instead of the width rule
#: (both engines; 0: never); see the module notes
DEEP_EVERY = 2
PRUNE_GROWTH = 1.1   # prune a set when it has grown by 10 % since the last pass (HSVI2 §4)
_CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
FIB_SHARE = 0.2     # most of time_limit spent iterating the fast informed bound at start-up
PI_MAX_ITER = 100     # policy-iteration improvements for the MDP start of the upper bound (mdp_upper_pi)
PI_PERMC = "COLAMD"  # column ordering of the sparse LU of the policy evaluations
#: largest model given the policy-iteration start; larger ones (by default all: 0) start from the certified
#: Gauss-Seidel bound of _upper_init.mdp_upper_gs, the same Q_MDP to 1e-9 in a fraction of the CPU (one thread:
#: RockSample(7, 8) 0.054 s against 0.28 s, Tag 0.001 s against 0.037 s, RockSample(11, 11) from its
#: POMDPX file 21 sweeps in 0.6-1.1 s, where policy iteration needs 26 solves and ~9 s)
PI_MAX_S = 0
MAX_DEPTH = 5000     # hard cap on the trial depth (the width rule bounds it far below on real models)
#: the fixed times (seconds of ``clock`` since the start of ``fit``) at which ``history_`` records the bounds
CHECKPOINTS = (1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0)


def fib_sparse(Tptr, Tidx, Tval, Z, r, discount, tol=1e-9, max_iter=100_000, deadline=None, now=None, V0=None):
    """Fast-informed-bound Q-vectors (A, S) on the sparse model; ``V* <= max_a b . Q[a]``.

    Value iteration of the fully observable MDP from ``max r / (1 - discount)``, lowered to the
    certified policy-iteration bound of :func:`mdp_upper_pi` (already ``Q_MDP`` to round-off when
    policy iteration finished), gives ``Q_MDP`` (cheap: no observation sum), then the FIB iteration
    runs from it; each loop stops at the a-posteriori rule
    ``discount / (1 - discount) ||Q_new - Q||_inf <= tol`` or, when ``deadline`` is given, once
    ``now() >= deadline`` after at least one sweep (the start-up cap of large models).

    Every iterate is a valid upper bound, so stopping early only loosens it (Hauskrecht 2000,
    JAIR 13): both operators ``H`` (MDP and FIB) are monotone, and the FIB fixed point ``Q_FIB``
    lies below ``Q_MDP`` and above the optimal Q-values. The start ``max r / (1 - discount)`` is
    above ``Q_MDP`` and so is the policy-iteration bound; ``Q >= Q*`` (the fixed point of the loop's
    operator) implies
    ``min(H Q, Q) >= min(H Q*, Q*) = Q*``, so by induction every iterate of the MDP loop lies above
    ``Q_MDP >= Q_FIB`` and every iterate of the FIB loop above ``Q_FIB``.

    Models of more than ``PI_MAX_S`` states (by default all) start instead from the certified Gauss-Seidel bound of
    :func:`._upper_init.mdp_upper_gs`, its sweeps started at ``V0`` (e.g. the best blind-policy value per
    state; any values keep the bound valid), and the FIB sweeps use the single-successor shortcut of
    :func:`._upper_init.fib_backup_sparse_fast` (the same values)."""
    A, S = Tptr.shape[0], r.shape[0]
    Q = np.full((A, S), float(r.max()) / (1.0 - discount))
    # a certified start near Q_MDP (policy iteration; see mdp_upper_pi) saves most of the sweeps from the top
    if S <= PI_MAX_S:
        Q = np.minimum(Q, mdp_upper_pi(Tptr, Tidx, Tval, r, discount, deadline=deadline, now=now))
        fib_backup = _k.fib_backup_sparse
    else:
        Q = np.minimum(Q, _ui.mdp_upper_gs(Tptr, Tidx, Tval, r, discount, V0=V0, deadline=deadline, now=now)[0])
        fib_backup = _ui.fib_backup_sparse_fast

    def stop(d):
        return discount * d <= tol * (1.0 - discount)

    for _ in range(max_iter):
        Q, delta = _k.mdp_backup_sparse(Q, Tptr, Tidx, Tval, r, discount)
        if stop(delta) or (deadline is not None and now() >= deadline):
            break
    for _ in range(max_iter):
        if deadline is not None and now() >= deadline:
            break
        Qn = np.minimum(fib_backup(Q, Tptr, Tidx, Tval, Z, r, discount), Q)
        delta = float(np.max(np.abs(Qn - Q)))
        Q = Qn
        if stop(delta):
            break
    return Q


def mdp_upper_pi(Tptr, Tidx, Tval, r, discount, max_iter=PI_MAX_ITER, deadline=None, now=None):
    """Q-vectors (A, S) above the fully observable MDP's ``Q_MDP``, by policy iteration and a certificate.

    Policy iteration (Howard 1960; exact evaluation by a sparse LU solve of ``(I - discount P_pi) V = r_pi``)
    from the policy greedy on ``r`` stops when the policy is stable, after ``max_iter`` improvements or
    at ``deadline``. Whatever ``V`` it ends with, with ``delta = max(0, max_s (H V - V)(s))`` (``H`` the
    MDP Bellman operator) the function ``V + delta / (1 - discount)`` is a fixed point bound from above
    (``H(V + k) = H V + discount k <= V + delta + discount k = V + k`` for ``k = delta / (1 - discount)``),
    hence ``>= V_MDP`` by monotonicity; one backup of it gives the returned ``Q >= Q_MDP``. At a stable
    policy ``delta`` is round-off, so the start is ``Q_MDP`` to ~1e-12 in a few sparse solves instead of
    hundreds of value-iteration sweeps."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import spsolve

    A, S = Tptr.shape[0], r.shape[0]
    Ts = [sp.csr_matrix((Tval[Tptr[a, 0]:Tptr[a, S]], Tidx[Tptr[a, 0]:Tptr[a, S]], Tptr[a] - Tptr[a, 0]),
                        shape=(S, S)) for a in range(A)]
    rows = np.arange(S)
    pi = np.argmax(r, axis=1)
    eye = sp.identity(S, format="csr")
    V = np.full(S, float(r.max()) / (1.0 - discount))
    for _ in range(max_iter):
        # P_pi: row s of T[pi(s)], gathered from the per-action CSR
        start, stop = Tptr[pi, rows], Tptr[pi, rows + 1]
        ptr = np.zeros(S + 1, dtype=np.int64)
        np.cumsum(stop - start, out=ptr[1:])
        take = np.repeat(start - ptr[:-1], stop - start) + np.arange(ptr[-1])
        P = sp.csr_matrix((Tval[take], Tidx[take], ptr), shape=(S, S))
        V = spsolve((eye - discount * P).tocsc(), r[rows, pi], permc_spec=PI_PERMC)
        Qr = np.stack([r[:, a] + discount * (Ts[a] @ V) for a in range(A)])
        best = Qr.max(axis=0)
        # change the action only where it gains beyond round-off (no cycling between tied actions)
        change = Qr[pi, rows] < best - 1e-12 * np.maximum(1.0, np.abs(best))
        if not change.any() or (deadline is not None and now() >= deadline):
            break
        pi = np.where(change, np.argmax(Qr, axis=0), pi)
    Qr = np.stack([r[:, a] + discount * (Ts[a] @ V) for a in range(A)])
    delta = max(0.0, float(np.max(Qr.max(axis=0) - V)))
    Vc = V + delta / (1.0 - discount)
    return np.stack([r[:, a] + discount * (Ts[a] @ Vc) for a in range(A)])


class PointBasedSolver(AlphaBoundsMixin, BaseEstimator):
    r"""HSVI2-style point-based solver: alpha-vector lower bound, sawtooth upper bound, trials from b0.

    See the module docstring for the algorithm ([SS05] HSVI2, with a SARSOP-style precision
    schedule [KHL08]).

    Parameters
    ----------
    time_limit : float, default=60.0
        Budget in seconds (> 0) of the clock ``clock``, counted from the start of :meth:`fit`
        (model conversion and the initial bounds included) and checked between trials. The numba
        kernels are compiled (or loaded from numba's disk cache) on a two-state model before the
        clock starts, so a first call in a fresh process gets the same budget as later ones.
    clock : {"cpu", "wall"}, default="cpu"
        ``"cpu"``: CPU time of the process (:func:`time.process_time`, all its threads; SARSOP's
        time limit also counts CPU time), so a loaded machine does not shrink the budget;
        ``"wall"``: elapsed time (:func:`time.perf_counter`). ``history_`` uses the same clock.
    target_gap : float, default=1e-3
        Stop when ``upper_bound_ - lower_bound_ <= target_gap`` at ``b0`` (>= 0; 0 runs until the
        time limit or until the bounds meet).
    max_trials : int or None, default=None
        Optional cap on the number of trials.
    prune : bool, default=True
        Pruning of the alpha vectors (at the witness beliefs) and of the upper points.
    random_state : None, int or Generator, default=None
        Accepted for the estimator contract; the search is deterministic (ties: lowest index).
    verbose : int, default=0
        ``>= 1`` prints one line per 10 % of the time budget.
    backend : {"numpy", "torch", "auto"}, default="numpy"
        Where the per-belief work runs: ``"numpy"`` (the older spelling ``"numba"`` is still accepted) is
        the sparse numba kernels on the CPU;
        ``"torch"`` forms every ``(a, o)`` successor of a belief at once and scores it against all
        vectors and sawtooth points in batched tensor algebra
        (:class:`accel.pomdp.PBSTorchBackup`, float64; the same trials and backups, values equal to
        round-off, so runs can part where two choices tie within round-off). It pays off on a GPU
        and on large vector sets; on the CPU the numba kernels are faster. Needs PyTorch (the
        ``gpu`` extra) and dense transitions: a sparse model is converted with ``to_dense()``
        (refused above the memory limit), while the numba path uses its CSR directly. ``"auto"`` picks torch when the
        model's ``T``, ``Z`` or ``r`` is a torch tensor or ``device`` names an accelerator, and the CPU path otherwise;
        see the "Backends: one rule" section of the scaling page.
    device : None, str or torch.device, default=None
        Device of the torch backend (``None``: CUDA when available, else CPU); ignored by the CPU path.

    Attributes
    ----------
    backend_ : {"numpy", "torch"}
        The core that ran the search (``backend`` resolved; the numba kernels are ``"numpy"``).
    alphas_ : ndarray (n_alpha, S)
        Lower-bound vectors; ``L(b) = max_i alphas_[i] . b <= V*(b)``.
    actions_ : ndarray (n_alpha,)
        The first action of each vector's plan.
    lower_bound_, upper_bound_ : float
        ``L(b0)`` and ``U(b0)``, so ``lower_bound_ <= V*(b0) <= upper_bound_``.
    gap_ : float
        ``upper_bound_ - lower_bound_``.
    history_ : ndarray (n, 3)
        The anytime profile: rows ``(t, L(b0), U(b0))`` with ``t`` the seconds of ``clock`` since the
        start of :meth:`fit`; the first row is the initial bounds (at the time they were ready), then
        one row per fixed checkpoint ``t`` in ``CHECKPOINTS`` (1, 2, 5, 10, 20, 30, 60, 120, 300, ... s)
        reached during the run, holding the bounds a user stopping the solver at ``t`` would have got
        (those of the last trial finished by ``t``), and a last row with the final bounds at the end of
        the run. ``L`` is non-decreasing and ``U`` non-increasing down the rows, and the last row is
        ``(t_end, lower_bound_, upper_bound_)``; SARSOP's progress table reads the same way.
    trace_ : ndarray (n_trials + 1, 3)
        Rows ``(t, L(b0), U(b0))`` after the initial bounds and after each trial.
    n_backups_ : int
        Point-based backups performed (each updates both bounds at one belief).
    n_trials_ : int
    converged_ : bool
        Whether ``gap_ <= target_gap``.
    interrupted_ : bool
        Whether a Ctrl-C (SIGINT) stopped the solver: from the set-up on (after the kernels are
        compiled) it finishes the running trial (or fast-informed-bound sweep), keeps its bounds and
        vectors and warns with ``InterruptedFitWarning``; a second Ctrl-C aborts, and an interrupt
        during the compilation is re-raised, both leaving the solver unfitted (:mod:`algos._anytime`).
        Inside an outer fit (``RECAPController``), a SIGINT the outer fit received stops it too.
    upper_alphas_ : ndarray (A, S)
        Fast-informed-bound Q-vectors.
    upper_points_ : tuple (Bu (n, S), vu (n,), c (S,))
        Sawtooth points, their values and the corner values.
    value_ : float
        Alias of ``lower_bound_`` (the name :class:`PBVI` uses), so RECAP and the converse accept
        either solver.

    Raises
    ------
    ValueError
        ``time_limit <= 0``, ``target_gap < 0``, ``discount >= 1``, an unknown ``clock``,
        ``backend`` or ``device``.
    ImportError
        ``backend="torch"`` without PyTorch.

    Warns
    -----
    sklearn.exceptions.ConvergenceWarning
        When ``time_limit`` stops the run with ``gap_`` still above ``target_gap`` (``converged_``
        is then False); raise ``time_limit`` or ``target_gap``. A stop by ``max_trials`` does not
        warn (the cap is the user's own choice).

    Examples
    --------
    >>> from algos.pomdp import tiger
    >>> s = PointBasedSolver(time_limit=5.0, target_gap=1e-2).fit(tiger())
    >>> s.lower_bound_ <= s.upper_bound_ <= s.lower_bound_ + 1e-2
    True
    """

    upper = "sawtooth"  # read by the converse bound (same upper-bound interface as PBVI)

    _parameter_constraints: dict = {
        "backend": [OrderedStrOptions(RESOLVE_OPTIONS)],
        "clock": [OrderedStrOptions(tuple(_CLOCKS))],
        # None, a str or a torch.device: not expressible without importing torch (the type is named there);
        # resolved and checked by the backend layer
        "device": "no_validation",
        "max_trials": [Interval(Integral, 0, None, closed="left"), None],
        "prune": ["boolean"],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "target_gap": [Interval(Real, 0, None, closed="left")],
        "time_limit": [Interval(Real, 0, None, closed="neither")],
        "verbose": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, *, time_limit=60.0, target_gap=1e-3, max_trials=None, prune=True, random_state=None,
                 verbose=0, backend="numpy", device=None, clock="cpu"):
        self.time_limit = time_limit
        self.clock = clock
        self.target_gap = target_gap
        self.max_trials = max_trials
        self.prune = prune
        self.random_state = random_state
        self.verbose = verbose
        self.backend = backend
        self.device = device

    # ------------------------------------------------------------------ fit
    def _checked_params(self):
        """The checked ``time_limit``, clock function, ``target_gap``, ``max_trials`` and ``verbose``
        (every rule is in ``_parameter_constraints``, checked by ``validate_params``)."""
        validate_params(self)
        max_trials = None if self.max_trials is None else int(self.max_trials)
        return float(self.time_limit), _CLOCKS[self.clock], float(self.target_gap), max_trials, int(self.verbose)

    def fit(self, pomdp):
        """Run trials from ``b0`` until the target gap or the time limit; returns ``self``.

        Parameters
        ----------
        pomdp : POMDP
            The model.

        Returns
        -------
        self
            The fitted solver.
        """
        with unfitted_on_interrupt(self):  # an interrupt that escapes (compilation, abort): unfitted
            return self._fit(pomdp)

    def _fit(self, pomdp):
        """The body of :meth:`fit`."""
        time_limit, now, target, max_trials, verbose = self._checked_params()
        backend = resolve(self.backend, self.device, _model_arrays(pomdp))
        warm = _warm_kernels(now)  # compile before the clock starts (a no-op after the first call)
        if warm > time_limit:
            warnings.warn(
                f"PointBasedSolver: time_limit={time_limit:g} s ({self.clock} clock) is shorter than the "
                f"one-off warm-up of its kernels ({warm:.3g} s in this process, compiled or loaded before the "
                f"clock starts and not counted against time_limit); the whole fit takes longer than "
                f"time_limit this once.", UserWarning, stacklevel=3)
        run = Interruptible("PointBasedSolver", defer=True)
        with run:  # from the set-up on, SIGINT asks the solver to stop at its next consistent point
            t_start = now()
            T, Z, r, discount, S, (Tptr, Tidx, Tval) = _model_layout(pomdp, backend)
            b0 = _b0(pomdp, None, S)

            # initial bounds: blind policies below, fast informed bound above (HSVI2 §3)
            blind = blind_policy_values(pomdp, b0=b0)
            # the FIB loop gets at most FIB_SHARE of the budget from its own start, not shared with the
            # set-up and blind policies before it (binds only on large models, e.g. RockSample(11, 11), with
            # short budgets; every iterate is a valid upper bound, see fib_sparse); an interrupt ends it
            # after the current sweep
            Q = fib_sparse(Tptr, Tidx, Tval, Z, r, discount, deadline=now() + FIB_SHARE * time_limit,
                           now=lambda: math.inf if run.requested else now(), V0=blind.vectors.max(axis=0))
            c = Q.max(axis=0)
            if backend == "torch":
                eng = _TorchEngine(T, Z, r, discount, b0, Q, c, blind.vectors, self.device)
            else:
                eng = _NumbaEngine((Tptr, Tidx, Tval), Z, r, discount, b0, Q, c, blind.vectors)
                eng.prune_when_full = self.prune
            span = float(r.max() - r.min())
            lo, up = eng.bounds()
            trace = [(now() - t_start, lo, up)]
            history = [trace[0]]
            # checkpoints passed before the initial bounds were ready have no bounds to report
            n_cp = int(np.searchsorted(CHECKPOINTS, trace[0][0], side="right"))
            n_backups = n_trials = 0
            last_prune_A, last_prune_U = eng.nA, max(eng.nU, 16)
            next_report = 0.1
            out_of_time = False
            while up - lo > target and (max_trials is None or n_trials < max_trials):
                if now() - t_start >= time_limit:
                    out_of_time = True
                    break
                if run.requested:  # Ctrl-C: stop before the next trial (the engine is whole here)
                    break
                eps = max(target, KAPPA * (up - lo))
                eng.deep = DEEP_EVERY > 0 and n_trials % DEEP_EVERY == 0
                depth, nb = eng.trial(eps, _depth_cap(eps, span, discount))
                n_backups += nb
                n_trials += 1
                if self.prune:
                    last_prune_A, last_prune_U = _prune_grown(eng, last_prune_A, last_prune_U)
                lo_now, up_now = eng.bounds()
                t_now = now() - t_start
                # the checkpoints this trial ran across: a stop there would have returned the bounds before it
                while n_cp < len(CHECKPOINTS) and CHECKPOINTS[n_cp] < t_now:
                    history.append((CHECKPOINTS[n_cp], lo, up))
                    n_cp += 1
                # L(b0) never drops (b0 is a witness; dominated vectors have a better one); an upper
                # point pruned by HSVI2's rule can in principle raise the sawtooth at b0 slightly, so the
                # reported U(b0) is the running minimum (each value is a valid bound of V*(b0))
                lo, up = max(lo, lo_now), min(up, up_now)
                trace.append((t_now, lo, up))
                if depth == 0 and eps <= target:
                    break
                if verbose and t_now >= next_report * time_limit:
                    next_report += 0.1
                    print(f"PointBasedSolver: t={t_now:.1f}s trials={n_trials} L={lo:.6g} U={up:.6g} "
                          f"|alpha|={eng.nA} |points|={eng.nU}")

            t_end = now() - t_start
            while n_cp < len(CHECKPOINTS) and CHECKPOINTS[n_cp] < t_end:
                history.append((CHECKPOINTS[n_cp], lo, up))
                n_cp += 1
            history.append((max(t_end, history[-1][0]), lo, up))

        alphas, actions, Bu, vu = eng.export()
        self.alphas_ = alphas
        self.actions_ = actions
        self.lower_bound_ = lo
        self.upper_bound_ = up
        self.value_ = lo
        self.gap_ = up - lo
        self.history_ = np.asarray(history)
        self.trace_ = np.asarray(trace)
        self.n_backups_ = int(n_backups)
        self.n_trials_ = int(n_trials)
        self.backend_ = backend
        self.converged_ = bool(up - lo <= target)
        run.finish(self, f"after {n_trials} trials (bounds [{lo:.6g}, {up:.6g}])", stacklevel=4)
        if out_of_time and not self.converged_:
            from sklearn.exceptions import ConvergenceWarning

            warnings.warn(
                f"PointBasedSolver stopped at time_limit={time_limit:g} s ({self.clock} clock) after "
                f"{n_trials} trials with gap {up - lo:.6g} > target_gap={target:g} (bounds [{lo:.6g}, "
                f"{up:.6g}]); raise time_limit or target_gap.", ConvergenceWarning, stacklevel=3)
        self.upper_alphas_ = Q
        self._upper_points = (Bu, vu, c.copy())  # Bu in CSR from the numba engine: dense on access
        return self

    @property
    def upper_points_(self):
        """``(Bu (n, S), vu (n,), c (S,))``: the sawtooth points, their values and the corner values (the
        dense ``Bu`` is built on each access from the sparse points the fit keeps)."""
        if "_upper_points" not in vars(self):
            raise AttributeError("upper_points_")
        Bu, vu, c = self._upper_points
        return points_dense(Bu, len(c)), vu, c

    # ------------------------------------------------------------------ use
    def upper_value(self, b):
        """Upper bound at ``b``: min of the fast informed bound and the sawtooth interpolation.

        Parameters
        ----------
        b : array-like of shape (S,) or (n, S)
            Belief(s).

        Returns
        -------
        float or ndarray of shape (n,)
            The upper bound.
        """
        self._check_fitted()
        b = check_belief(b, self.alphas_.shape[1])
        from ._pbvi import _sawtooth

        Bu, vu, c = self.upper_points_
        return float(max(min((self.upper_alphas_ @ b).max(), _sawtooth(b[None, :], Bu, vu, c)[0]),
                         (self.alphas_ @ b).max()))


def _model_layout(pomdp, backend):
    """``(T, Z, r, discount, S, (Tptr, Tidx, Tval))`` of a model for a fit: the transitions in CSR per
    action (from a sparse model's per-action CSR without a dense copy, ``T = None``, unless the torch
    path needs dense ``T``), ``Z`` and ``r`` C-contiguous; refuses ``discount >= 1``."""
    if getattr(pomdp, "is_sparse", False) and backend != "torch":
        # sparse model: the CSR layout straight from the per-action CSR (no dense S x S array)
        T = None
        Z, r, discount, A, S = _sparse_parts(pomdp)
        Tptr, Tidx, Tval = _k.sparse_model_from_csr([pomdp.transition_csr(a) for a in range(A)])
    else:
        T, Z, r, discount = _arrays(pomdp)  # the torch path needs dense T (to_dense, budget-checked)
        A, S, _ = T.shape
        Tptr, Tidx, Tval = _k.sparse_model(T)
    _need_discount_below_one(discount, "PointBasedSolver")
    Z = np.ascontiguousarray(Z)
    r = np.ascontiguousarray(r)
    return T, Z, r, discount, S, (Tptr, Tidx, Tval)


def _depth_cap(eps, span, discount):
    """Trial depth beyond which a discounted reward span cannot move a bound by ``eps`` (at most
    ``MAX_DEPTH``)."""
    if span > 0 and eps > 0:
        cap = min(MAX_DEPTH,
                  int(math.ceil(math.log(eps * (1.0 - discount) / (span + 1e-300)) / math.log(discount))) + 1)
        return max(cap, 1)
    return MAX_DEPTH


def _prune_grown(eng, last_A, last_U):
    """Prune a bound's set once it has grown by ``PRUNE_GROWTH`` since its last pruning (HSVI2 §4);
    returns the sizes to compare with next time."""
    if eng.nA > PRUNE_GROWTH * last_A:
        eng.prune_lower()
        last_A = eng.nA
    if eng.nU > PRUNE_GROWTH * last_U:
        eng.prune_upper()
        last_U = max(eng.nU, 16)
    return last_A, last_U


_WARMED = False


def _warm_kernels(now=time.process_time):
    """Compile the numba kernels of a fit (sparse model, fast informed bound, trial, both prunings)
    on the two-state Tiger model, once per process, so that no compilation is charged to a
    ``time_limit``. With numba's disk cache this loads the compiled code instead. Returns the seconds
    it took on the clock ``now`` (0 after the first call)."""
    global _WARMED
    if _WARMED:
        return 0.0
    t0 = now()
    from .._builtin import tiger

    model = tiger()
    T, Z, r, discount = _arrays(model)
    b0 = _b0(model, None, T.shape[1])
    Tptr, Tidx, Tval = _k.sparse_model(T)
    blind = blind_policy_values(model, b0=b0)
    Q = fib_sparse(Tptr, Tidx, Tval, np.ascontiguousarray(Z), np.ascontiguousarray(r), discount)
    # the large-model start (Gauss-Seidel certificate, FIB shortcut) compiled as well
    _ui.mdp_upper_gs(Tptr, Tidx, Tval, np.ascontiguousarray(r), discount, max_sweeps=2)
    _ui.fib_backup_sparse_fast(Q, Tptr, Tidx, Tval, np.ascontiguousarray(Z), np.ascontiguousarray(r), discount)
    eng = _NumbaEngine((Tptr, Tidx, Tval), np.ascontiguousarray(Z), np.ascontiguousarray(r), discount, b0,
                       Q, Q.max(axis=0), blind.vectors)
    for _ in range(3):
        eng.trial(1.0, 20)
    eng.prune_lower()
    eng.prune_upper()
    eng.bounds()
    eng.export()
    _WARMED = True
    return now() - t0
