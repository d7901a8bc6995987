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
  (HSVI2 §4; ``U`` unchanged). With ``WITNESS_PRUNING = False`` the vectors are pruned by pointwise
  dominance instead (HSVI2 §4; ``L`` unchanged everywhere).
* **Stopping**: when ``U(b0) - L(b0) <= target_gap`` or after ``time_limit`` seconds of the chosen
  clock (CPU time of the process by default, as SARSOP's limit; the numba kernels are compiled on a
  tiny model before the clock starts, so compilation is not charged to the budget).

Precision schedule (a project variant, not in [SS05]): trial ``k`` uses
``eps_k = max(target_gap, kappa * (U(b0) - L(b0)))`` with ``kappa = 0.5`` (SARSOP's idea of
shallow trials while the root gap is large, Kurniawati, Hsu & Lee 2008 §4), which keeps early
trials short; the final trials run at ``eps = target_gap`` exactly as in HSVI2, so the stopping
rule is the paper's.

The model is held sparse: transitions in CSR per action (built from a sparse
:class:`~algos.pomdp.POMDP`'s per-action CSR without a dense copy, or from a dense ``T``), observations dense ``(A, S, O)``,
belief supports used in every inner product; alpha vectors are stored column-wise and the sawtooth
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

from .._anytime import Interruptible
from .._validation import (
    RANDOM_STATE_CONSTRAINTS,
    OrderedStrOptions,
    check_option,
    check_random_state,
    check_scalar_float,
    check_scalar_int,
    validate_params,
)
from ._alpha_bounds import AlphaBoundsMixin
from . import _pbs_kernels as _k
from ._beliefs import (
    _arrays, _b0, _model_arrays, _need_discount_below_one, _sparse_parts, blind_policy_values, check_belief,
)

__all__ = ["PointBasedSolver"]

KAPPA = 0.5          # precision schedule eps_k = max(target_gap, KAPPA * gap(b0)) (see module notes)
PRUNE_GROWTH = 1.1   # prune a set when it has grown by 10 % since the last pass (HSVI2 §4)
_CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
WITNESS_PRUNING = True  # prune vectors at witness beliefs (else pointwise dominance; module notes)
FIB_SHARE = 0.2     # most of time_limit spent iterating the fast informed bound at start-up
MAX_DEPTH = 5000     # hard cap on the trial depth (the width rule bounds it far below on real models)


def fib_sparse(Tptr, Tidx, Tval, Z, r, discount, tol=1e-9, max_iter=100_000, deadline=None, now=None):
    """Fast-informed-bound Q-vectors (A, S) on the sparse model; ``V* <= max_a b . Q[a]``.

    Value iteration of the fully observable MDP from ``max r / (1 - discount)`` gives ``Q_MDP``
    (cheap: no observation sum), then the FIB iteration runs from ``Q_MDP``; each loop stops at the
    a-posteriori rule ``discount / (1 - discount) ||Q_new - Q||_inf <= tol`` or, when ``deadline``
    is given, once ``now() >= deadline`` after at least one sweep (the start-up cap of large models).

    Every iterate is a valid upper bound, so stopping early only loosens it (Hauskrecht 2000,
    JAIR 13): both operators ``H`` (MDP and FIB) are monotone, and the FIB fixed point ``Q_FIB``
    lies below ``Q_MDP`` and above the optimal Q-values. The start ``max r / (1 - discount)`` is
    above ``Q_MDP``; ``Q >= Q*`` (the fixed point of the loop's operator) implies
    ``min(H Q, Q) >= min(H Q*, Q*) = Q*``, so by induction every iterate of the MDP loop lies above
    ``Q_MDP >= Q_FIB`` and every iterate of the FIB loop above ``Q_FIB``."""
    A, S = Tptr.shape[0], r.shape[0]
    Q = np.full((A, S), float(r.max()) / (1.0 - discount))
    stop = lambda d: discount * d <= tol * (1.0 - discount)
    for _ in range(max_iter):
        Q, delta = _k.mdp_backup_sparse(Q, Tptr, Tidx, Tval, r, discount)
        if stop(delta) or (deadline is not None and now() >= deadline):
            break
    for _ in range(max_iter):
        if deadline is not None and now() >= deadline:
            break
        Qn = np.minimum(_k.fib_backup_sparse(Q, Tptr, Tidx, Tval, Z, r, discount), Q)
        delta = float(np.max(np.abs(Qn - Q)))
        Q = Qn
        if stop(delta):
            break
    return Q


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
        (refused above the memory limit), while the numba path uses its CSR directly. ``"auto"`` picks torch when the model's ``T``, ``Z`` or ``r`` is a torch tensor or
        ``device`` names an accelerator, and the CPU path otherwise; see the "Backends: one rule"
        section of the scaling page.
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
        Rows ``(t, L(b0), U(b0))`` after the initial bounds and each trial, ``t`` the seconds
        since the start of :meth:`fit` on ``clock``.
    n_backups_ : int
        Point-based backups performed (each updates both bounds at one belief).
    n_trials_ : int
    converged_ : bool
        Whether ``gap_ <= target_gap``.
    interrupted_ : bool
        Whether a Ctrl-C (SIGINT) stopped the trials: the solver finishes the running trial, keeps
        its bounds and vectors and warns with ``InterruptedFitWarning``; a second Ctrl-C aborts.
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
        "device": "no_validation",  # None, a str or a torch.device: resolved (and checked) by the backend layer
        "max_trials": [Interval(Integral, 0, None, closed="left"), None],
        "prune": ["boolean"],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "target_gap": [Interval(Real, 0, None, closed="left")],
        "time_limit": [Interval(Real, 0, None, closed="neither")],
        "verbose": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, time_limit=60.0, target_gap=1e-3, max_trials=None, prune=True, random_state=None,
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
        time_limit = check_scalar_float(self.time_limit, "time_limit", low=0.0, closed="right")
        now = _CLOCKS[check_option(self.clock, "clock", tuple(_CLOCKS))]
        target = check_scalar_float(self.target_gap, "target_gap", low=0.0)
        max_trials = None if self.max_trials is None else check_scalar_int(self.max_trials, "max_trials", low=0)
        if not isinstance(self.prune, (bool, np.bool_)):
            raise TypeError(f"'prune' must be a bool; got {self.prune!r} of type {type(self.prune).__name__}.")
        verbose = check_scalar_int(self.verbose, "verbose", low=0)
        check_random_state(self.random_state)
        validate_params(self)  # after the checks above, whose messages are the package's
        backend = resolve(self.backend, self.device, _model_arrays(pomdp))
        _warm_kernels()  # compile before the clock starts (a no-op after the first call)
        t_start = now()
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
        b0 = _b0(pomdp, None, S)

        # initial bounds: blind policies below, fast informed bound above (HSVI2 §3)
        blind = blind_policy_values(pomdp, b0=b0)
        # the FIB loop gets at most FIB_SHARE of the budget (binds only on large models, e.g.
        # RockSample(11, 11); every iterate is a valid upper bound, see fib_sparse)
        Q = fib_sparse(Tptr, Tidx, Tval, Z, r, discount, deadline=t_start + FIB_SHARE * time_limit, now=now)
        c = Q.max(axis=0)
        if backend == "torch":
            eng = _TorchEngine(T, Z, r, discount, b0, Q, c, blind.vectors, self.device)
        else:
            eng = _NumbaEngine((Tptr, Tidx, Tval), Z, r, discount, b0, Q, c, blind.vectors)
        span = float(r.max() - r.min())
        lo, up = eng.bounds()
        history = [(now() - t_start, lo, up)]
        n_backups = n_trials = 0
        last_prune_A, last_prune_U = eng.nA, max(eng.nU, 16)
        next_report = 0.1
        out_of_time = False
        run = Interruptible("PointBasedSolver", defer=True)
        with run:
            while up - lo > target and (max_trials is None or n_trials < max_trials):
                if now() - t_start >= time_limit:
                    out_of_time = True
                    break
                if run.requested:  # Ctrl-C: stop before the next trial (the engine is whole here)
                    break
                eps = max(target, KAPPA * (up - lo))
                depth, nb = eng.trial(eps, _depth_cap(eps, span, discount))
                n_backups += nb
                n_trials += 1
                if self.prune:
                    last_prune_A, last_prune_U = _prune_grown(eng, last_prune_A, last_prune_U)
                lo_now, up_now = eng.bounds()
                # L(b0) never drops (b0 is a witness; dominated vectors have a better one); an upper
                # point pruned by HSVI2's rule can in principle raise the sawtooth at b0 slightly, so the
                # reported U(b0) is the running minimum (each value is a valid bound of V*(b0))
                lo, up = max(lo, lo_now), min(up, up_now)
                history.append((now() - t_start, lo, up))
                if depth == 0 and eps <= target:
                    break
                if verbose and history[-1][0] >= next_report * time_limit:
                    next_report += 0.1
                    print(f"PointBasedSolver: t={history[-1][0]:.1f}s trials={n_trials} L={lo:.6g} U={up:.6g} "
                          f"|alpha|={eng.nA} |points|={eng.nU}")

        alphas, actions, Bu, vu = eng.export()
        self.alphas_ = alphas
        self.actions_ = actions
        self.lower_bound_ = lo
        self.upper_bound_ = up
        self.value_ = lo
        self.gap_ = up - lo
        self.history_ = np.asarray(history)
        self.n_backups_ = int(n_backups)
        self.n_trials_ = int(n_trials)
        self.backend_ = backend
        self.converged_ = bool(up - lo <= target)
        run.finish(self, f"after {n_trials} trials (bounds [{lo:.6g}, {up:.6g}])")
        if out_of_time and not self.converged_:
            from sklearn.exceptions import ConvergenceWarning

            warnings.warn(
                f"PointBasedSolver stopped at time_limit={time_limit:g} s ({self.clock} clock) after "
                f"{n_trials} trials with gap {up - lo:.6g} > target_gap={target:g} (bounds [{lo:.6g}, "
                f"{up:.6g}]); raise time_limit or target_gap.", ConvergenceWarning, stacklevel=2)
        self.upper_alphas_ = Q
        self.upper_points_ = (Bu, vu, c.copy())
        return self

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


def _depth_cap(eps, span, discount):
    """Trial depth beyond which a discounted reward span cannot move a bound by ``eps`` (at most
    ``MAX_DEPTH``)."""
    if span > 0 and eps > 0:
        cap = min(MAX_DEPTH, int(math.ceil(math.log(eps * (1.0 - discount) / (span + 1e-300)) / math.log(discount))) + 1)
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


def _warm_kernels():
    """Compile the numba kernels of a fit (sparse model, fast informed bound, trial, both prunings)
    on the two-state Tiger model, once per process, so that no compilation is charged to a
    ``time_limit``. With numba's disk cache this loads the compiled code instead."""
    global _WARMED
    if _WARMED:
        return
    from ._builtin import tiger

    model = tiger()
    T, Z, r, discount = _arrays(model)
    b0 = _b0(model, None, T.shape[1])
    Tptr, Tidx, Tval = _k.sparse_model(T)
    blind = blind_policy_values(model, b0=b0)
    Q = fib_sparse(Tptr, Tidx, Tval, np.ascontiguousarray(Z), np.ascontiguousarray(r), discount)
    eng = _NumbaEngine((Tptr, Tidx, Tval), np.ascontiguousarray(Z), np.ascontiguousarray(r), discount, b0,
                       Q, Q.max(axis=0), blind.vectors)
    for _ in range(3):
        eng.trial(1.0, 20)
    eng.prune_lower()
    eng.prune_upper()
    eng.bounds()
    eng.export()
    _WARMED = True


class _NumbaEngine:
    """The search state of the numba backend (sparse model, column-wise vectors, CSR points) and
    its steps: one trial, the two prunings, the bounds at ``b0``, the export of the sets."""

    def __init__(self, T_sparse, Z, r, discount, b0, Q, c, init_vectors):
        A, S, O = Z.shape
        self.Z, self.r, self.discount, self.b0, self.Q, self.c = Z, r, discount, b0, Q, c
        self.S = S
        self.Tptr, self.Tidx, self.Tval = T_sparse
        self.n_init = self.nA = len(init_vectors)
        capA, capU = 256, 256
        self.ALT = np.zeros((S, capA))  # lower vectors column-wise (see _pbs_kernels)
        self.ALT[:, :self.nA] = init_vectors.T
        self.AA = np.zeros(capA, dtype=np.int64)
        self.AA[:self.nA] = np.arange(self.nA)
        self.WB = np.zeros((capA, S))  # witness belief of each vector (zero rows: the initial ones)
        self.Uptr = np.zeros(capU + 1, dtype=np.int64)
        self.Uidx = np.zeros(capU * 4, dtype=np.int64)
        self.Uval = np.zeros(capU * 4)
        self.Uinv = np.zeros(capU * 4)
        self.Ud = np.zeros(capU)
        self.Uv = np.zeros(capU)
        self.Umask = np.zeros((capU, (S + 63) // 64), dtype=np.uint64)
        self.dense_pts = S <= _k.DENSE_POINTS_MAX_S
        self.UinvT = np.full((S, capU), np.inf) if self.dense_pts else np.zeros((0, 0))
        self.nU = 0
        self.bufs = (np.zeros((A, O)), np.zeros((A, O)), np.zeros((A, O)), np.zeros((A, O), dtype=np.int64),
                     np.zeros(A))
        self.work = (np.zeros(S), np.zeros(S), np.zeros(S, dtype=np.int8), np.zeros(S, dtype=np.int64),
                     np.zeros(S, dtype=np.int64))
        self.cand, self.wbuf, self.bsup = np.zeros(S), np.zeros(S), np.zeros(S, dtype=np.int64)
        self.vb = np.zeros(max(capA, capU))
        self.path = np.zeros((1, S))
        self.b0sup = np.flatnonzero(b0 > 0).astype(np.int64)

    def bounds(self):
        sup = self.b0sup
        lo = _k.lower_at(self.b0, sup, len(sup), self.ALT, self.nA, self.vb)[0]
        up = _k.upper_at(self.b0, sup, len(sup), self.Q, self.c, self.Uptr, self.Uidx, self.Uinv, self.Ud,
                         self.Umask, self.UinvT, self.nU, -1, self.vb)
        return float(lo), float(max(up, lo))

    def _reserve(self, need):
        """Room for ``need`` more vectors and points (one of each per backup of a trial)."""
        S = self.S
        if self.path.shape[0] < need:
            self.path = np.zeros((need, S))
        if self.nA + need > self.ALT.shape[1]:
            capA = max(2 * self.ALT.shape[1], self.nA + need)
            self.ALT = _grow_columns(self.ALT, capA)
            self.AA = _grow(self.AA, capA)
            self.WB = _grow(self.WB, capA)
        if self.nU + need > len(self.Ud):
            capU = max(2 * len(self.Ud), self.nU + need)
            self.Uptr = _grow(self.Uptr, capU + 1)
            self.Ud = _grow(self.Ud, capU)
            self.Uv = _grow(self.Uv, capU)
            self.Umask = _grow(self.Umask, capU)
            if self.dense_pts:
                self.UinvT = _grow_columns(self.UinvT, capU, np.inf)
        if len(self.vb) < max(self.ALT.shape[1], len(self.Ud)):
            self.vb = np.zeros(max(self.ALT.shape[1], len(self.Ud)))
        if self.Uptr[self.nU] + need * S > len(self.Uidx):
            cap = max(2 * len(self.Uidx), int(self.Uptr[self.nU]) + need * S)
            self.Uidx, self.Uval, self.Uinv = _grow(self.Uidx, cap), _grow(self.Uval, cap), _grow(self.Uinv, cap)

    def trial(self, eps, depth_cap):
        self._reserve(depth_cap + 1)
        self.nA, self.nU, depth, nb, _ = _k.trial(
            self.b0, eps, depth_cap, self.Tptr, self.Tidx, self.Tval, self.Z, self.r, self.discount, self.ALT,
            self.AA, self.WB, self.nA, self.Q, self.c, self.Uptr, self.Uidx, self.Uval, self.Uinv, self.Ud, self.Uv,
            self.Umask, self.UinvT, self.nU, self.path, *self.bufs, self.work, self.cand, self.wbuf, self.bsup,
            self.vb)
        return depth, nb

    def prune_lower(self):
        nA = self.nA
        keep = (_k.prune_witness(self.ALT, nA, self.WB, self.b0, self.n_init, self.vb) if WITNESS_PRUNING
                else _k.prune_alphas(self.ALT, nA, self.n_init))
        m = int(keep.sum())
        self.ALT[:, :m] = self.ALT[:, :nA][:, keep]
        self.AA[:m] = self.AA[:nA][keep]
        self.WB[:m] = self.WB[:nA][keep]
        self.nA = m

    def prune_upper(self):
        n_old = self.nU
        keep = _k.prune_points(self.Q, self.c, self.Uptr, self.Uidx, self.Uval, self.Uinv, self.Ud, self.Uv,
                               self.Umask, self.UinvT, n_old, np.zeros(self.S), self.vb)
        (self.Uptr, self.Uidx, self.Uval, self.Uinv, self.Ud, self.Uv, self.nU) = _compact_points(
            keep, self.Uptr, self.Uidx, self.Uval, self.Uinv, self.Ud, self.Uv, n_old)
        self.Umask[:self.nU] = self.Umask[:n_old][keep]
        if self.dense_pts:
            self.UinvT[:, :self.nU] = self.UinvT[:, :n_old][:, keep]
            self.UinvT[:, self.nU:n_old] = np.inf

    def export(self):
        """``(alphas (nA, S), actions (nA,), Bu (nU, S), vu (nU,))``."""
        Bu = np.zeros((self.nU, self.S))
        for i in range(self.nU):
            sl = slice(self.Uptr[i], self.Uptr[i + 1])
            Bu[i, self.Uidx[sl]] = self.Uval[sl]
        return np.ascontiguousarray(self.ALT[:, :self.nA].T), self.AA[:self.nA].copy(), Bu, self.Uv[:self.nU].copy()


class _TorchEngine:
    """The search state of the torch backend: vectors, witnesses and sawtooth points as dense
    device tensors with doubling capacity; the per-belief work is :class:`accel.pomdp.PBSTorchBackup`.
    The trial and the backups follow the numba kernels ``trial`` / ``update`` step for step (same
    rules, same first-maximum ties); the point pruning runs the numba kernel on a host copy."""

    def __init__(self, T, Z, r, discount, b0, Q, c, init_vectors, device):
        import torch

        from accel.pomdp import PBSTorchBackup

        self.torch = torch
        self.bk = PBSTorchBackup(T, Z, r, discount, device=device)
        dev = self.dev = self.bk.device
        self.discount = discount
        A, S, _ = T.shape
        self.S = S
        f = dict(dtype=torch.float64, device=dev)
        self.Q = torch.as_tensor(Q, **f)
        self.Qn, self.cn = Q, c
        self.c = torch.as_tensor(c, **f)
        self.b0 = torch.as_tensor(b0, **f)
        self.n_init = self.nA = len(init_vectors)
        self.AL = torch.zeros((256, S), **f)
        self.AL[:self.nA] = torch.as_tensor(init_vectors, **f)
        self.WB = torch.zeros((256, S), **f)
        self.AA = np.zeros(256, dtype=np.int64)
        self.AA[:self.nA] = np.arange(self.nA)
        self.Bu = torch.zeros((256, S), **f)
        self.Binv = torch.zeros((256, S), **f)
        self.Bmask = torch.zeros((256, S), dtype=torch.bool, device=dev)
        self.Ud = torch.zeros(256, **f)
        self.Uv = torch.zeros(256, **f)
        self.nU = 0

    def _views(self):
        n = self.nU
        return self.AL[:self.nA], self.Q, self.c, self.Binv[:n], self.Bmask[:n], self.Ud[:n]

    def bounds(self):
        lo, up = self.bk.lower_upper(self.b0, *self._views())
        return lo, max(up, lo)

    def _reserve(self, need):
        torch = self.torch
        if self.nA + need > self.AL.shape[0]:
            cap = max(2 * self.AL.shape[0], self.nA + need)
            self.AL = torch.cat([self.AL, torch.zeros((cap - self.AL.shape[0], self.S), dtype=self.AL.dtype,
                                                      device=self.dev)])
            self.WB = torch.cat([self.WB, torch.zeros_like(self.AL[self.WB.shape[0]:])])
            self.AA = _grow(self.AA, cap)
        if self.nU + need > self.Bu.shape[0]:
            cap = max(2 * self.Bu.shape[0], self.nU + need)
            extra = cap - self.Bu.shape[0]
            z = torch.zeros((extra, self.S), dtype=self.Bu.dtype, device=self.dev)
            self.Bu, self.Binv = torch.cat([self.Bu, z]), torch.cat([self.Binv, z])
            self.Bmask = torch.cat([self.Bmask, z > 0])
            self.Ud = torch.cat([self.Ud, z[:, 0]])
            self.Uv = torch.cat([self.Uv, z[:, 0]])

    def trial(self, eps, depth_cap):
        """HSVI2 trial (the numba ``trial``): descend, then back both bounds up deepest first."""
        torch = self.torch
        self._reserve(depth_cap + 1)
        bk, g = self.bk, self.discount
        path = [self.b0]
        t = 0
        thr = eps
        while True:
            b = path[t]
            alphas, Q, c, Binv, Bmask, Ud = self._views()
            lb, ub = bk.lower_upper(b, alphas, Q, c, Binv, Bmask, Ud)
            if ub - lb <= thr or t >= depth_cap:
                break
            X = bk.successors(b)
            P = X.sum(dim=-1)
            pos = P > 0.0
            UV = torch.where(pos, _upper_of(bk.nx, X, Q, c, Binv, Bmask, Ud), torch.zeros_like(P))
            QU = b @ bk.r + g * UV.sum(dim=1)
            a = int(torch.argmax(QU))
            thr_next = thr / g
            LVa = (X[a] @ alphas.T).amax(dim=-1)
            UVa = torch.maximum(UV[a], LVa)
            e = torch.where(pos[a], UVa - LVa - P[a] * thr_next, torch.full_like(LVa, -math.inf))
            if not bool(pos[a].any()):
                break
            o = int(torch.argmax(e))
            path.append(X[a, o] / P[a, o])
            t += 1
            thr = thr_next
        for k in range(t - 1, -1, -1):
            self._update(path[k])
        return t, t

    def _update(self, b):
        """The numba ``update`` at ``b``: append the backed-up vector when it raises ``L(b)`` and the
        point ``(b, H U(b))`` when it lowers ``U(b)``."""
        torch = self.torch
        views = self._views()
        vec, a, best_v, hu, _ = self.bk.backup(b, *views)
        lb, ub = self.bk.lower_upper(b, *views)
        if best_v > lb + _k._EPS_IMPROVE * max(1.0, abs(lb)):
            self.AL[self.nA] = vec
            self.WB[self.nA] = b
            self.AA[self.nA] = a
            self.nA += 1
        if hu < ub - _k._EPS_IMPROVE * max(1.0, abs(ub)):
            i = self.nU
            mask = b > 0
            self.Bu[i] = b
            self.Bmask[i] = mask
            self.Binv[i] = torch.where(mask, 1.0 / torch.where(mask, b, torch.ones_like(b)), torch.zeros_like(b))
            self.Uv[i] = hu
            self.Ud[i] = min(hu - float(b @ self.c), 0.0)
            self.nU += 1

    def prune_lower(self):
        torch = self.torch
        nA = self.nA
        alphas = self.AL[:nA]
        if WITNESS_PRUNING:
            W = torch.cat([self.WB[:nA], self.b0[None]])
            keep = torch.zeros(nA, dtype=torch.bool, device=self.dev)
            keep[: self.n_init] = True
            keep[torch.argmax(W @ alphas.T, dim=1)] = True
            keep = keep.cpu().numpy()
        else:
            keep = _k.prune_alphas(np.ascontiguousarray(alphas.cpu().numpy().T), nA, self.n_init)
        idx = torch.as_tensor(np.flatnonzero(keep), device=self.dev)
        m = len(idx)
        self.AL[:m] = alphas[idx].clone()
        self.WB[:m] = self.WB[:nA][idx].clone()
        self.AA[:m] = self.AA[:nA][keep]
        self.nA = m

    def prune_upper(self):
        n = self.nU
        Bu = self.Bu[:n].cpu().numpy()
        Ud, Uv = self.Ud[:n].cpu().numpy(), self.Uv[:n].cpu().numpy()
        ptr, idx, val, inv, mask, inv_t = _points_csr(Bu, dense=self.S <= _k.DENSE_POINTS_MAX_S)
        keep = _k.prune_points(self.Qn, self.cn, ptr, idx, val, inv, Ud, Uv, mask, inv_t, n, np.zeros(self.S),
                               np.zeros(n))
        sel = self.torch.as_tensor(np.flatnonzero(keep), device=self.dev)
        m = len(sel)
        for name in ("Bu", "Binv", "Bmask", "Ud", "Uv"):
            arr = getattr(self, name)
            arr[:m] = arr[:n][sel].clone()
        self.nU = m

    def export(self):
        return (self.AL[:self.nA].cpu().numpy().copy(), self.AA[:self.nA].copy(),
                self.Bu[:self.nU].cpu().numpy().copy(), self.Uv[:self.nU].cpu().numpy().copy())


def _upper_of(nx, X, Q, c, Binv, Bmask, Ud):
    from accel.pomdp import _pbs_upper

    return _pbs_upper(nx, X, Q, c, Binv, Bmask, Ud)


def _points_csr(Bu, dense=True):
    """CSR arrays, bitmasks and (``dense``) column-wise inverses of the dense points ``Bu`` (n, S)."""
    n, S = Bu.shape
    nz = Bu > 0
    ptr = np.zeros(n + 1, dtype=np.int64)
    ptr[1:] = np.cumsum(nz.sum(axis=1))
    rows, cols = np.nonzero(nz)
    idx = cols.astype(np.int64)
    val = Bu[rows, cols]
    mask = np.zeros((n, (S + 63) // 64), dtype=np.uint64)
    np.bitwise_or.at(mask, (rows, cols >> 6), np.left_shift(np.uint64(1), (cols & 63).astype(np.uint64)))
    inv_t = (np.ascontiguousarray(np.where(nz.T, 1.0 / np.where(nz.T, Bu.T, 1.0), np.inf)) if dense
             else np.zeros((0, 0)))
    return ptr, idx, val, 1.0 / val, mask, inv_t


def _grow(arr, n):
    out = np.zeros((n,) + arr.shape[1:], dtype=arr.dtype)
    out[: len(arr)] = arr
    return out


def _grow_columns(arr, n, fill=0):
    out = np.full((arr.shape[0], n), fill, dtype=arr.dtype)
    out[:, : arr.shape[1]] = arr
    return out


def _compact_points(keep, Uptr, Uidx, Uval, Uinv, Ud, Uv, nU):
    """Drop the upper points with ``keep[i] = False``; CSR arrays rebuilt in place (same capacity)."""
    lens = np.diff(Uptr[: nU + 1])
    sel = np.repeat(keep, lens)
    m = int(keep.sum())
    nnz = int(lens[keep].sum())
    Uidx[:nnz] = Uidx[: Uptr[nU]][sel]
    Uval[:nnz] = Uval[: Uptr[nU]][sel]
    Uinv[:nnz] = Uinv[: Uptr[nU]][sel]
    newptr = np.zeros_like(Uptr)
    newptr[1: m + 1] = np.cumsum(lens[keep])
    Ud[:m] = Ud[:nU][keep]
    Uv[:m] = Uv[:nU][keep]
    return newptr, Uidx, Uval, Uinv, Ud, Uv, m
