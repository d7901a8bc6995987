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
* **Stopping**: when ``U(b0) - L(b0) <= target_gap`` or after ``time_limit`` seconds.

Precision schedule (a project variant, not in [SS05]): trial ``k`` uses
``eps_k = max(target_gap, kappa * (U(b0) - L(b0)))`` with ``kappa = 0.5`` (SARSOP's idea of
shallow trials while the root gap is large, Kurniawati, Hsu & Lee 2008 §4), which keeps early
trials short; the final trials run at ``eps = target_gap`` exactly as in HSVI2, so the stopping
rule is the paper's.

The model is held sparse: transitions in CSR per action, observations dense ``(A, S, O)``,
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

import numpy as np

from .._validation import check_random_state, check_scalar_float, check_scalar_int
from . import _pbs_kernels as _k
from ._beliefs import _arrays, _b0, _need_discount_below_one, blind_policy_values, check_belief

__all__ = ["PointBasedSolver"]

KAPPA = 0.5          # precision schedule eps_k = max(target_gap, KAPPA * gap(b0)) (see module notes)
PRUNE_GROWTH = 1.1   # prune a set when it has grown by 10 % since the last pass (HSVI2 §4)
WITNESS_PRUNING = True  # prune vectors at witness beliefs (else pointwise dominance; module notes)
MAX_DEPTH = 5000     # hard cap on the trial depth (the width rule bounds it far below on real models)


def fib_sparse(Tptr, Tidx, Tval, Z, r, discount, tol=1e-9, max_iter=100_000):
    """Fast-informed-bound Q-vectors (A, S) on the sparse model; ``V* <= max_a b . Q[a]``.

    Iterated from ``max r / (1 - discount)`` (every iterate is a valid bound) until the
    a-posteriori rule ``discount / (1 - discount) ||Q_new - Q||_inf <= tol``."""
    A, S = Tptr.shape[0], r.shape[0]
    Q = np.full((A, S), float(r.max()) / (1.0 - discount))
    for _ in range(max_iter):
        Qn = np.minimum(_k.fib_backup_sparse(Q, Tptr, Tidx, Tval, Z, r, discount), Q)
        delta = float(np.max(np.abs(Qn - Q)))
        Q = Qn
        if discount * delta <= tol * (1.0 - discount):
            break
    return Q


class PointBasedSolver:
    r"""HSVI2-style point-based solver: alpha-vector lower bound, sawtooth upper bound, trials from b0.

    See the module docstring for the algorithm ([SS05] HSVI2, with a SARSOP-style precision
    schedule [KHL08]).

    Parameters
    ----------
    time_limit : float, default=60.0
        Wall-clock budget in seconds (> 0); checked between trials.
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

    Attributes
    ----------
    alphas_ : ndarray (n_alpha, S)
        Lower-bound vectors; ``L(b) = max_i alphas_[i] . b <= V*(b)``.
    actions_ : ndarray (n_alpha,)
        The first action of each vector's plan.
    lower_bound_, upper_bound_ : float
        ``L(b0)`` and ``U(b0)``, so ``lower_bound_ <= V*(b0) <= upper_bound_``.
    gap_ : float
        ``upper_bound_ - lower_bound_``.
    history_ : ndarray (n, 3)
        Rows ``(seconds since fit start, L(b0), U(b0))`` after the initial bounds and each trial.
    n_backups_ : int
        Point-based backups performed (each updates both bounds at one belief).
    n_trials_ : int
    converged_ : bool
        Whether ``gap_ <= target_gap``.
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
        ``time_limit <= 0``, ``target_gap < 0``, ``discount >= 1``.

    Examples
    --------
    >>> from algos.pomdp import tiger
    >>> s = PointBasedSolver(time_limit=5.0, target_gap=1e-2).fit(tiger())
    >>> s.lower_bound_ <= s.upper_bound_ <= s.lower_bound_ + 1e-2
    True
    """

    upper = "sawtooth"  # read by the converse bound (same upper-bound interface as PBVI)

    def __init__(self, time_limit=60.0, target_gap=1e-3, max_trials=None, prune=True, random_state=None,
                 verbose=0):
        self.time_limit = time_limit
        self.target_gap = target_gap
        self.max_trials = max_trials
        self.prune = prune
        self.random_state = random_state
        self.verbose = verbose

    def get_params(self, deep=True):
        return {k: getattr(self, k) for k in
                ("time_limit", "target_gap", "max_trials", "prune", "random_state", "verbose")}

    def set_params(self, **params):
        for k, v in params.items():
            if k not in self.get_params():
                raise ValueError(f"invalid parameter {k!r} for PointBasedSolver; valid: {sorted(self.get_params())}.")
            setattr(self, k, v)
        return self

    # ------------------------------------------------------------------ fit
    def fit(self, pomdp):
        """Run trials from ``b0`` until the target gap or the time limit; returns ``self``."""
        t_start = time.perf_counter()
        time_limit = check_scalar_float(self.time_limit, "time_limit", low=0.0, closed="right")
        target = check_scalar_float(self.target_gap, "target_gap", low=0.0)
        max_trials = None if self.max_trials is None else check_scalar_int(self.max_trials, "max_trials", low=0)
        if not isinstance(self.prune, (bool, np.bool_)):
            raise TypeError(f"'prune' must be a bool; got {self.prune!r} of type {type(self.prune).__name__}.")
        verbose = check_scalar_int(self.verbose, "verbose", low=0)
        check_random_state(self.random_state)
        T, Z, r, discount = _arrays(pomdp)
        _need_discount_below_one(discount, "PointBasedSolver")
        A, S, _ = T.shape
        O = Z.shape[2]
        Z = np.ascontiguousarray(Z)
        r = np.ascontiguousarray(r)
        b0 = _b0(pomdp, None, S)
        Tptr, Tidx, Tval = _k.sparse_model(T)

        # initial bounds: blind policies below, fast informed bound above (HSVI2 §3)
        blind = blind_policy_values(pomdp, b0=b0)
        Q = fib_sparse(Tptr, Tidx, Tval, Z, r, discount)
        c = Q.max(axis=0)
        n_init = A
        capA, capU = 256, 256
        ALT = np.zeros((S, capA))  # lower vectors column-wise (see _pbs_kernels)
        ALT[:, :A] = blind.vectors.T
        AA = np.zeros(capA, dtype=np.int64)
        AA[:A] = np.arange(A)
        WB = np.zeros((capA, S))  # witness belief of each vector (zero rows: the initial ones)
        nA = A
        Uptr = np.zeros(capU + 1, dtype=np.int64)
        Uidx = np.zeros(capU * 4, dtype=np.int64)
        Uval = np.zeros(capU * 4)
        Uinv = np.zeros(capU * 4)
        Ud = np.zeros(capU)
        Uv = np.zeros(capU)
        Umask = np.zeros((capU, (S + 63) // 64), dtype=np.uint64)
        dense_pts = S <= _k.DENSE_POINTS_MAX_S
        UinvT = np.full((S, capU), np.inf) if dense_pts else np.zeros((0, 0))
        nU = 0

        span = float(r.max() - r.min())
        P = np.zeros((A, O))
        LV = np.zeros((A, O))
        UV = np.zeros((A, O))
        LI = np.zeros((A, O), dtype=np.int64)
        QU = np.zeros(A)
        work = (np.zeros(S), np.zeros(S), np.zeros(S, dtype=np.int8), np.zeros(S, dtype=np.int64),
                np.zeros(S, dtype=np.int64))
        cand, wbuf, bsup = np.zeros(S), np.zeros(S), np.zeros(S, dtype=np.int64)
        vb = np.zeros(max(capA, capU))

        def bounds():
            sup = np.flatnonzero(b0 > 0).astype(np.int64)
            lo = _k.lower_at(b0, sup, len(sup), ALT, nA, vb)[0]
            up = _k.upper_at(b0, sup, len(sup), Q, c, Uptr, Uidx, Uinv, Ud, Umask, UinvT, nU, -1, vb)
            return float(lo), float(max(up, lo))

        lo, up = bounds()
        history = [(time.perf_counter() - t_start, lo, up)]
        n_backups = n_trials = 0
        last_prune_A, last_prune_U = nA, max(nU, 16)
        next_report = 0.1
        path = np.zeros((1, S))
        while up - lo > target and (max_trials is None or n_trials < max_trials):
            if time.perf_counter() - t_start >= time_limit:
                break
            eps = max(target, KAPPA * (up - lo))
            depth_cap = MAX_DEPTH
            if span > 0 and eps > 0:
                depth_cap = min(MAX_DEPTH, int(math.ceil(
                    math.log(eps * (1.0 - discount) / (span + 1e-300)) / math.log(discount))) + 1)
                depth_cap = max(depth_cap, 1)
            # room for one vector and one point per backup of this trial
            need = depth_cap + 1
            if path.shape[0] < need:
                path = np.zeros((need, S))
            if nA + need > capA:
                capA = max(2 * capA, nA + need)
                ALT = _grow_columns(ALT, capA)
                AA = _grow(AA, capA)
                WB = _grow(WB, capA)
            if nU + need > capU:
                capU = max(2 * capU, nU + need)
                Uptr = _grow(Uptr, capU + 1)
                Ud = _grow(Ud, capU)
                Uv = _grow(Uv, capU)
                Umask = _grow(Umask, capU)
                if dense_pts:
                    UinvT = _grow_columns(UinvT, capU, np.inf)
            if len(vb) < max(capA, capU):
                vb = np.zeros(max(capA, capU))
            if Uptr[nU] + need * S > len(Uidx):
                cap = max(2 * len(Uidx), int(Uptr[nU]) + need * S)
                Uidx, Uval, Uinv = _grow(Uidx, cap), _grow(Uval, cap), _grow(Uinv, cap)
            nA, nU, depth, nb, _ = _k.trial(b0, eps, depth_cap, Tptr, Tidx, Tval, Z, r, discount, ALT, AA, WB, nA, Q,
                                            c, Uptr, Uidx, Uval, Uinv, Ud, Uv, Umask, UinvT, nU, path, P, LV, UV, LI, QU,
                                            work, cand, wbuf, bsup, vb)
            n_backups += nb
            n_trials += 1
            if self.prune and nA > PRUNE_GROWTH * last_prune_A:
                keep = _k.prune_witness(ALT, nA, WB, b0, n_init, vb) if WITNESS_PRUNING else \
                    _k.prune_alphas(ALT, nA, n_init)
                m = int(keep.sum())
                ALT[:, :m] = ALT[:, :nA][:, keep]
                AA[:m] = AA[:nA][keep]
                WB[:m] = WB[:nA][keep]
                nA = last_prune_A = m
            if self.prune and nU > PRUNE_GROWTH * last_prune_U:
                keep = _k.prune_points(Q, c, Uptr, Uidx, Uval, Uinv, Ud, Uv, Umask, UinvT, nU, np.zeros(S), vb)
                n_old = nU
                Uptr, Uidx, Uval, Uinv, Ud, Uv, nU = _compact_points(keep, Uptr, Uidx, Uval, Uinv, Ud, Uv, nU)
                Umask[:nU] = Umask[:n_old][keep]
                if dense_pts:
                    UinvT[:, :nU] = UinvT[:, :n_old][:, keep]
                    UinvT[:, nU:n_old] = np.inf
                last_prune_U = max(nU, 16)
            lo_now, up_now = bounds()
            # both sets only grow or lose redundant members, so L(b0) never drops; an upper point
            # pruned by HSVI2's rule can in principle raise the sawtooth at b0 slightly, so the
            # reported U(b0) is the running minimum (each value is a valid bound of V*(b0))
            lo, up = max(lo, lo_now), min(up, up_now)
            history.append((time.perf_counter() - t_start, lo, up))
            if depth == 0 and eps <= target:
                break
            if verbose and history[-1][0] >= next_report * time_limit:
                next_report += 0.1
                print(f"PointBasedSolver: t={history[-1][0]:.1f}s trials={n_trials} L={lo:.6g} U={up:.6g} "
                      f"|alpha|={nA} |points|={nU}")

        self.alphas_ = np.ascontiguousarray(ALT[:, :nA].T)
        self.actions_ = AA[:nA].copy()
        self.lower_bound_ = lo
        self.upper_bound_ = up
        self.value_ = lo
        self.gap_ = up - lo
        self.history_ = np.asarray(history)
        self.n_backups_ = int(n_backups)
        self.n_trials_ = int(n_trials)
        self.converged_ = bool(up - lo <= target)
        self.upper_alphas_ = Q
        Bu = np.zeros((nU, S))
        for i in range(nU):
            sl = slice(Uptr[i], Uptr[i + 1])
            Bu[i, Uidx[sl]] = Uval[sl]
        self.upper_points_ = (Bu, Uv[:nU].copy(), c.copy())
        return self

    # ------------------------------------------------------------------ use
    def _check_fitted(self):
        if not hasattr(self, "alphas_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("This PointBasedSolver instance is not fitted yet; call fit(pomdp) first.")

    def value(self, b):
        """Lower bound ``max_alpha b . alpha`` at belief ``b``."""
        self._check_fitted()
        b = check_belief(b, self.alphas_.shape[1])
        return float((self.alphas_ @ b).max())

    def upper_value(self, b):
        """Upper bound at ``b``: min of the fast informed bound and the sawtooth interpolation."""
        self._check_fitted()
        b = check_belief(b, self.alphas_.shape[1])
        from ._pbvi import _sawtooth

        Bu, vu, c = self.upper_points_
        return float(max(min((self.upper_alphas_ @ b).max(), _sawtooth(b[None, :], Bu, vu, c)[0]),
                         (self.alphas_ @ b).max()))

    def policy(self, b):
        """Action of the best lower-bound vector at ``b`` (lowest index on ties)."""
        self._check_fitted()
        b = check_belief(b, self.alphas_.shape[1])
        return int(self.actions_[int(np.argmax(self.alphas_ @ b))])


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
