r"""Point-based value iteration (PBVI, Pineau et al. 2003) with a fast-informed upper bound.

Lower bound: the alpha set starts from the blind-policy vectors (achievable values, pomdp reconstruction notes §3), so
every vector is the value of an actual conditional plan and ``V_Gamma(b) = max_alpha b . alpha``
never exceeds ``V*(b)``. Each iteration backs the set up at every belief of ``beliefs_``
(:func:`.._kernels.pbvi_backup`); a belief keeps its old best vector when the backup would lower its
value (the Perseus safeguard), so the value at every belief point -- in particular at ``b0``,
which is always the first point -- is non-decreasing over iterations. The set is then pruned to the
vectors that are best at some belief point (lowest index on ties).

Upper bound: the fast informed bound (FIB, Hauskrecht 2000), iterated from
``max r / (1 - discount)``. Every iterate is a valid upper bound of ``V*`` (monotone operator,
started above its fixed point). With ``upper="sawtooth"`` (default) it is then tightened by
point-based upper backups at the corners and belief points with sawtooth interpolation (HSVI-style);
each backed-up value is ``min(old, H U)`` with ``U >= V*``, so it stays ``>= V*``. Hence
``upper_bound_ >= V* >= V^F(b0)`` for every controller F, and ``upper_history_`` is non-increasing.

Belief expansion: ``"ssea"`` (stochastic simulation with explorative action: from each point, one
simulated successor per action, keep the one farthest in L1 from the set) or ``"random"``
(uniform Dirichlet draws). Expansion runs after each backup sweep until ``n_beliefs`` points.
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval

from accel.backend import RESOLVE_OPTIONS, resolve

from ..._anytime import Interruptible, unfitted_on_interrupt
from ..._validation import (
    RANDOM_STATE_CONSTRAINTS,
    OrderedStrOptions,
    check_random_state,
    check_scalar_float,
    check_scalar_int,
    validate_params,
)
from .. import _kernels
from .._beliefs import _arrays, _b0, _model_arrays, _need_discount_below_one, blind_policy_values, check_belief
from ._alpha_bounds import AlphaBoundsMixin

__all__ = ["PBVI", "fib_upper_bound"]


def fib_upper_bound(pomdp, tol=1e-9, max_iter=100_000):
    """Fast-informed-bound Q-vectors ``Q`` (A, S); ``V*(b) <= max_a b . Q[a]`` for all ``b``.

    Returns ``(Q, n_iter)``. Stops when the a-posteriori bound
    ``discount / (1 - discount) * ||Q_new - Q||_inf <= tol`` (every iterate is already valid).

    Parameters
    ----------
    pomdp : POMDP
        With ``discount < 1``.
    tol : float >= 0, default=1e-9
    max_iter : int >= 0, default=100000
        At most this many backups (``0``: the initial bound ``max r / (1 - discount)``).

    Returns
    -------
    Q : ndarray of shape (A, S)
        The fast-informed-bound vectors.
    n_iter : int
        Backups done.
    """
    tol = check_scalar_float(tol, "tol", low=0.0)
    max_iter = check_scalar_int(max_iter, "max_iter", low=0)
    T, Z, r, discount = _arrays(pomdp)
    _need_discount_below_one(discount, "the fast informed bound")
    A, S, _ = T.shape
    T = np.ascontiguousarray(T)
    Z = np.ascontiguousarray(Z)
    r = np.ascontiguousarray(r)
    Q = np.full((A, S), float(r.max()) / (1.0 - discount))
    it = 0
    for it in range(1, max_iter + 1):
        Qn = _kernels.fib_backup(Q, T, Z, r, discount)
        Qn = np.minimum(Qn, Q)  # the sequence is non-increasing; guard against round-off
        delta = float(np.max(np.abs(Qn - Q)))
        Q = Qn
        if discount * delta <= tol * (1.0 - discount):
            break
    return Q, it


def _draw(cum, u):
    """Inverse-CDF draw per row of cumulative probabilities ``cum`` with uniforms ``u``."""
    idx = (u[:, None] >= cum).sum(axis=1)
    return np.minimum(idx, cum.shape[1] - 1)


def _sawtooth(X, Bu, vu, c):
    """Sawtooth interpolation (Hauskrecht 2000) of the upper-bound points ``(Bu[i], vu[i])`` over
    the corner values ``c``: ``U(x) = x.c + min(0, min_i (vu_i - Bu_i.c) min_{s: Bu_i(s)>0} x(s)/Bu_i(s))``.
    An upper bound of ``V*`` whenever every ``vu_i >= V*(Bu_i)`` and ``c_s >= V*(e_s)``
    (numba kernel :func:`.._kernels.sawtooth`; reference: the core ``accel.pomdp._sawtooth`` on numpy)."""
    X = np.ascontiguousarray(X, dtype=float)
    if len(Bu) == 0:
        return X @ c
    return _kernels.sawtooth(X, np.ascontiguousarray(Bu, dtype=float), np.ascontiguousarray(vu, dtype=float),
                             np.ascontiguousarray(c, dtype=float))


def _upper_backup(Bu, vu, c, T, Z, r, discount):
    """One point-based upper-bound backup at the corners and at ``Bu``; returns new ``(vu, c)``."""
    A, S, _ = T.shape
    X = np.vstack([np.eye(S), Bu])
    best = np.full(len(X), -np.inf)
    for a in range(A):
        P, Bn, _ = _kernels.belief_successors(X, T[a], Z[a])
        sw = _sawtooth(Bn.reshape(-1, S), Bu, vu, c).reshape(P.shape)
        best = np.maximum(best, X @ r[:, a] + discount * (P * sw).sum(axis=1))
    return np.minimum(vu, best[S:]), np.minimum(c, best[:S])


def _min_sweeps(tol, discount):
    """Sweeps PBVI runs at least: value iteration contracts by ``discount`` per sweep, so fewer sweeps than
    ``log(tol) / log(discount)`` cannot have reached ``tol`` from the blind start, whatever the per-sweep
    change says."""
    return 1 if tol <= 0 or tol >= 1 or discount == 0 else int(math.ceil(math.log(tol) / math.log(discount)))


def _progress_bar(verbose, max_iter):
    """A tqdm bar over the sweeps when ``verbose >= 1``, else None."""
    if verbose >= 1 and max_iter > 0:
        from tqdm.auto import tqdm

        return tqdm(total=max_iter, desc="PBVI", leave=False)
    return None


class PBVI(AlphaBoundsMixin, BaseEstimator):
    """Point-based value iteration giving a lower bound (alpha vectors) and an FIB upper bound.

    Parameters
    ----------
    n_beliefs : int, default=200
        Maximum number of belief points (``b0`` is always the first).
    max_iter : int, default=200
        Maximum number of backup sweeps.
    tol : float, default=1e-6
        Convergence needs all of: the belief set complete (``n_beliefs`` points or nothing new
        reachable), no point value rising by more than ``tol`` in the last sweep, the Bellman
        residual ``max_b |(H V)(b) - V(b)|`` on the belief set below ``tol``, at least
        ``ceil(log(tol) / log(discount))`` sweeps, and (with ``target_gap``) the gap at ``b0``
        within ``target_gap``. Otherwise ``converged_`` is False and a ``ConvergenceWarning``
        names the knob (``max_iter`` or ``n_beliefs``).
    expand : {"ssea", "random"}, default="ssea"
        How new belief points are chosen: ``"ssea"`` (stochastic simulation with explorative
        action: one simulated successor per action, the one farthest in L1 from the set is kept)
        or ``"random"`` (uniform Dirichlet draws).
    upper : {"sawtooth", "fib"}, default="sawtooth"
        ``"fib"``: the fast informed bound only. ``"sawtooth"``: start from FIB, then each sweep
        also does a point-based upper backup at the corners and at every belief point, with
        sawtooth interpolation (costs ``(S + n) A O`` interpolations over ``n`` points per sweep).
    random_state : None, int, SeedSequence or Generator
        Seed of the belief expansion.
    verbose : int, default=0
        ``>= 1`` shows a tqdm progress bar over sweeps.
    target_gap : float or None, default=None
        If given, ``converged_`` also requires ``upper_bound_ - value_ <= target_gap``.
    backend : {"numpy", "torch", "auto"}, default="numpy"
        Where the point backups run: ``"numpy"`` (the older spelling ``"numba"`` is still accepted) is the
        numba kernel on the CPU;
        ``"torch"`` is the batched torch core :func:`accel.pomdp.pbvi_backup_torch` (float64, same
        semantics; pays off on large models or a GPU). Needs PyTorch (extra ``gpu``). ``"auto"`` picks
        torch when the model's ``T``, ``Z`` or ``r`` is a torch tensor or ``device`` names an accelerator,
        and the CPU path otherwise; see the "Backends: one rule" section of the scaling page.
    device : None, str or torch.device, default=None
        Device of the torch backend (``None``: CUDA when available, else CPU); ignored by the CPU path.

    Attributes
    ----------
    alphas_ : ndarray of shape (n_alpha, S)
        Alpha vectors of the lower bound.
    actions_ : ndarray of shape (n_alpha,)
        Action label of each alpha vector.
    value_ : float
        Lower bound ``max_alpha b0 . alpha`` of ``V*(b0)``.
    upper_bound_ : float
        Upper bound (FIB or sawtooth) of ``V*(b0)``.
    upper_history_ : list of float
        Upper bound at ``b0`` after each sweep.
    gap_ : float
        ``upper_bound_ - value_``.
    upper_alphas_ : ndarray of shape (A, S)
        The fast-informed-bound vectors.
    beliefs_ : ndarray of shape (n, S)
        The belief points.
    n_iter_ : int
        Number of sweeps run.
    value_history_ : list of float
        Value at ``b0`` after each sweep; index 0 is the blind start.
    residual_ : float
        Bellman residual on the belief set at the last sweep.
    converged_ : bool
        Whether the convergence test of ``tol`` (and ``target_gap``) passed.
    interrupted_ : bool
        Whether an interrupt (Ctrl-C) stopped the sweeps; the fit then holds the state after the
        last complete sweep and an ``InterruptedFitWarning`` says so. An interrupt before the first
        sweep (the set-up) or a second one is re-raised and leaves the solver unfitted; inside an
        outer fit (``RECAPController``) the outer fit stops too (:mod:`algos._anytime`).
    backend_ : {"numpy", "torch"}
        The core that ran the point backups (``backend`` resolved).
    """

    _parameter_constraints: dict = {
        "backend": [OrderedStrOptions(RESOLVE_OPTIONS)],
        # None, a str or a torch.device: not expressible without importing torch (the type is named there);
        # resolved and checked by the backend layer
        "device": "no_validation",
        "expand": [OrderedStrOptions(("ssea", "random"))],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "n_beliefs": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "target_gap": [Interval(Real, 0, None, closed="left"), None],
        "tol": [Interval(Real, 0, None, closed="left")],
        "upper": [OrderedStrOptions(("sawtooth", "fib"))],
        "verbose": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, *, n_beliefs=200, max_iter=200, tol=1e-6, expand="ssea", upper="sawtooth",
                 random_state=None, verbose=0, backend="numpy", device=None, target_gap=None):
        self.target_gap = target_gap
        self.n_beliefs = n_beliefs
        self.max_iter = max_iter
        self.tol = tol
        self.expand = expand
        self.upper = upper
        self.random_state = random_state
        self.verbose = verbose
        self.backend = backend
        self.device = device

    def _backup_fn(self, backend, T, Z, r, discount):
        """The point-backup function ``(B, alphas) -> (new, actions, values)`` of the resolved ``backend``."""
        if backend == "numpy":
            return lambda B, alphas: _kernels.pbvi_backup(B, alphas, T, Z, r, discount)
        from accel.pomdp import PBVITorchBackup

        return PBVITorchBackup(T, Z, r, discount, device=self.device)

    # ------------------------------------------------------------------ expansion
    def _expand(self, B, T, Z, rng):
        n_room = self.n_beliefs - len(B)
        if n_room <= 0:
            return B
        S = B.shape[1]
        if self.expand == "random":
            new = rng.dirichlet(np.ones(S), size=min(n_room, len(B)))
            return np.vstack([B, new])
        A = T.shape[0]
        src = B if len(B) <= n_room else B[np.sort(rng.permutation(len(B))[:n_room])]
        n = len(src)
        cand = np.empty((n, A, S))
        ok = np.zeros((n, A), dtype=bool)
        for a in range(A):  # one simulated step per (point, action); draws vectorised over points
            s = _draw(np.cumsum(src, axis=1), rng.random(n))
            s2 = _draw(np.cumsum(T[a, s], axis=1), rng.random(n))
            o = _draw(np.cumsum(Z[a, s2], axis=1), rng.random(n))
            _, Bn, zero = _kernels.belief_successors(np.ascontiguousarray(src), T[a], Z[a])
            cand[:, a] = Bn[np.arange(n), o]
            ok[:, a] = ~zero[np.arange(n), o]
        pool = [row for row in B]
        for i in range(n):  # keep, per point, the candidate farthest (L1) from the current set
            c = cand[i][ok[i]]
            if len(c) == 0:
                continue
            P = np.asarray(pool)
            dist = np.abs(c[:, None, :] - P[None, :, :]).sum(axis=2).min(axis=1)
            j = int(np.argmax(dist))
            if dist[j] > 1e-12:
                pool.append(c[j])
        return np.asarray(pool)

    # ------------------------------------------------------------------ fit
    def _grow_beliefs(self, B, vu, c, Q, T, Z, rng):
        """Expand the belief set ``B``; new points start at the current upper envelope (sawtooth over
        ``(B, vu, c)``, capped by the FIB ``Q``). Returns ``(B, vu, full)``, ``full`` when nothing new
        is reachable (then ``n_beliefs_reached_`` is set)."""
        n_before = len(B)
        B = self._expand(B, T, Z, rng)
        if len(B) > n_before:  # new points start at the current upper envelope
            fresh = np.minimum(_sawtooth(B[n_before:], B[:n_before], vu, c), (B[n_before:] @ Q.T).max(axis=1))
            vu = np.concatenate([vu, fresh])
        if len(B) == n_before:  # nothing new reachable: the set is complete
            self.n_beliefs_reached_ = len(B)
            return B, vu, True
        return B, vu, False

    def _checked_params(self, pomdp):
        """The checked ``n_beliefs``, ``max_iter``, ``tol``, resolved backend, ``verbose``, ``target_gap``
        and generator (every rule is in ``_parameter_constraints``, checked by ``validate_params``; the
        backend layer resolves ``backend`` and ``device`` for the model)."""
        validate_params(self)
        backend = resolve(self.backend, self.device, _model_arrays(pomdp))
        target_gap = None if self.target_gap is None else float(self.target_gap)
        rng = check_random_state(self.random_state)
        return int(self.n_beliefs), int(self.max_iter), float(self.tol), backend, int(self.verbose), target_gap, rng

    def fit(self, pomdp):
        r"""Run point-based value iteration on ``pomdp``.

        Parameters
        ----------
        pomdp : POMDP
            The model.

        Returns
        -------
        self
            The fitted solver.
        """
        with unfitted_on_interrupt(self):  # an interrupt in the set-up (no sweep yet) or an abort: unfitted
            return self._fit(pomdp)

    def _fit(self, pomdp):
        """The body of :meth:`fit`."""
        n_beliefs, max_iter, tol, backend, verbose, target_gap, rng = self._checked_params(pomdp)
        T, Z, r, discount = _arrays(pomdp)
        _need_discount_below_one(discount, "PBVI")
        min_sweeps = _min_sweeps(tol, discount)
        A, S, _ = T.shape
        T = np.ascontiguousarray(T)
        Z = np.ascontiguousarray(Z)
        r = np.ascontiguousarray(r)
        b0 = _b0(pomdp, None, S)
        backup = self._backup_fn(backend, T, Z, r, discount)

        blind = blind_policy_values(pomdp, b0=b0)
        alphas = np.ascontiguousarray(blind.vectors)
        actions = np.arange(A, dtype=np.int64)
        B = b0[None, :].copy()
        vals = (B @ alphas.T).max(axis=1)
        history = [float(vals[0])]

        Q, _ = fib_upper_bound(pomdp)
        self.upper_alphas_ = Q
        c = Q.max(axis=0)                      # FIB at the corners
        vu = np.array([float((Q @ b0).max())])  # upper values at the points of B
        upper_hist = [float(vu[0])]

        bar = _progress_bar(verbose, max_iter)
        converged = False
        full = False
        residual = math.inf
        it = 0
        run = Interruptible("PBVI")
        run.checkpoint(alphas=alphas, actions=actions, B=B, vu=vu, c=c, n_hist=len(history),
                       n_upper=len(upper_hist), it=0, full=full)
        with run:
            for it in range(1, max_iter + 1):
                run.checkpoint(alphas=alphas, actions=actions, B=B, vu=vu, c=c, n_hist=len(history),
                               n_upper=len(upper_hist), it=it - 1, full=full)
                alphas, actions, vals, rise, residual = _lower_sweep(backup, B, alphas, actions)
                history.append(float(vals[0]))
                if self.upper == "sawtooth":
                    vu, c = _upper_backup(B, vu, c, T, Z, r, discount)
                upper_hist.append(min(upper_hist[-1], float(vu[0])))
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(value=history[-1], n_alpha=len(alphas), n_b=len(B))
                full = len(B) >= n_beliefs
                if not full:
                    B, vu, full = self._grow_beliefs(B, vu, c, Q, T, Z, rng)
                gap_ok = target_gap is None or upper_hist[-1] - float(vals[0]) <= target_gap
                if full and rise <= tol and residual <= tol and it >= min_sweeps and gap_ok:
                    converged = True
                    break
        if run.interrupted:  # back to the top of the interrupted sweep: a whole, consistent state
            st = run.state
            alphas, actions, B, vu, c, it, full = (st["alphas"], st["actions"], st["B"], st["vu"], st["c"],
                                                   st["it"], st["full"])
            del history[st["n_hist"]:], upper_hist[st["n_upper"]:]
            converged = False
        if bar is not None:
            bar.close()
        run.finish(self, f"after {it} sweeps", stacklevel=4)
        if not converged and max_iter > 0 and not run.interrupted:
            knob = _not_converged_knob(full, len(B), n_beliefs, max_iter, target_gap, upper_hist[-1] - history[-1],
                                       residual, tol, it, min_sweeps)
            warnings.warn(f"PBVI did not converge: {knob}.", ConvergenceWarning, stacklevel=3)

        self.alphas_ = alphas
        self.actions_ = actions
        self.beliefs_ = B
        self.value_ = float((alphas @ b0).max())
        self.upper_bound_ = upper_hist[-1]
        self.upper_history_ = np.asarray(upper_hist)
        self.upper_points_ = (B.copy(), vu.copy(), c.copy())
        self.gap_ = self.upper_bound_ - self.value_
        self.n_iter_ = it
        self.value_history_ = np.asarray(history)
        self.converged_ = converged
        self.backend_ = backend
        self.residual_ = residual
        return self

    # ------------------------------------------------------------------ use
    def upper_value(self, b):
        """Upper bound at ``b``: min of FIB ``max_a b . Q[a]`` and the sawtooth interpolation.

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
        Bu, vu, c = self.upper_points_
        saw = _sawtooth(b[None, :], Bu, vu, c)[0] if self.upper == "sawtooth" else np.inf
        return float(min((self.upper_alphas_ @ b).max(), saw))


def _lower_sweep(backup, B, alphas, actions):
    """One PBVI sweep of point backups over ``B``: ``(alphas, actions, values at B, largest rise,
    Bellman residual on B)``. A point whose backup would lower its value keeps its old vector
    (Perseus safeguard); the vectors best at no point are pruned (lowest index on ties)."""
    new, new_act, new_val = backup(B, alphas)
    old_scores = B @ alphas.T
    old_best = old_scores.argmax(axis=1)
    old_val = old_scores[np.arange(len(B)), old_best]
    residual = float(np.max(np.abs(new_val - old_val)))  # Bellman residual on the belief set
    keep = new_val < old_val  # Perseus safeguard: never lower a point's value
    new[keep] = alphas[old_best[keep]]
    new_act[keep] = actions[old_best[keep]]
    # prune: the vectors best at some point (lowest index on ties), deduplicated
    scores = B @ new.T
    winners = np.unique(scores.argmax(axis=1))
    alphas = np.ascontiguousarray(new[winners])
    actions = new_act[winners]
    vals = (B @ alphas.T).max(axis=1)
    return alphas, actions, vals, float(np.max(vals - old_val)), residual


def _not_converged_knob(full, n_points, n_beliefs, max_iter, target_gap, gap, residual, tol, it, min_sweeps):
    """What stopped an unconverged PBVI fit and the parameter to change, for its warning."""
    if not full:
        return (f"the belief set did not fill ({n_points} of n_beliefs={n_beliefs} points) within "
                f"max_iter={max_iter} sweeps; increase 'max_iter' or lower 'n_beliefs'")
    if target_gap is not None and gap > target_gap:
        return (f"the gap at b0 is {gap:.3g} > target_gap={target_gap:g}; increase 'n_beliefs' "
                f"(now {n_beliefs}) or 'max_iter' (now {max_iter})")
    return (f"Bellman residual {residual:.3g} vs tol={tol:g} after {it} sweeps (at least "
            f"{min_sweeps} needed); increase 'max_iter' (now {max_iter})")
