r"""The Huber IRLS / semismooth-Newton iteration by passes over the data, and the constants of every IRLS.

Every quantity the iteration needs is a sum over rows -- the objective :math:`L(b)`, the gradient
:math:`-X^\top \psi_\delta(r)`, the majoriser's Gram matrix :math:`X^\top W X`, the inliers' Gram
matrix :math:`X_I^\top X_I` and the sandwich's :math:`\sum_i \min(r_i^2, \delta^2) x_i x_i^\top` -- so
:func:`irls_passes` asks a *pass* (an oracle) for them at a point ``b`` and never touches the rows
itself. The passes: one over an iterable of chunks in this process (:mod:`._chunked`) and one mapped
onto the blocks of a Dask array and tree-reduced (:mod:`._dask`). The in-memory solvers
(:mod:`._huber_solvers`) and the torch core (:mod:`accel.hetero_regression`, which keeps literal
copies pinned equal by a test) use the same constants.

The loop is written once here: :func:`irls_loop` (damping, Newton acceptance and back-off, the monotone
check and its backtracking, extrapolation, stopping) runs over any oracle -- the in-memory numba pass of
:mod:`._huber_solvers`, the chunked pass and the Dask pass. ``RIDGE``, ``MONOTONE_RTOL`` and ``MAX_BACKTRACKS``
are the batched torch core's own (:mod:`accel.hetero_regression`, the lower layer), imported, not copied.

This file is a leaf of the package: it imports only numpy, scipy and the batched core's constants.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg as sla

# RIDGE: ``RIDGE * trace(G) / p`` is added to the diagonal of every Gram matrix solved (keeps the Cholesky
# factorisation defined in the sign-only regime; a larger majoriser is still a majoriser). MONOTONE_RTOL: an
# accepted step may raise the objective by at most ``MONOTONE_RTOL * |L|`` (summation round-off), beyond that
# it is halved, at most MAX_BACKTRACKS times before the iteration declares that it stalls.
from accel.hetero_regression import MAX_BACKTRACKS, MONOTONE_RTOL, RIDGE

__all__ = ["RIDGE", "MONOTONE_RTOL", "MAX_BACKTRACKS", "irls_loop", "irls_passes", "ridge_solve", "check_full_rank"]

#: Newton acceleration: tried only with at least this many inliers per coefficient, accepted with the
#: Armijo constant ``ARMIJO_C`` at one of ``NEWTON_TRIES`` step lengths 1, 1/2, ...
NEWTON_MIN_INLIERS_PER_COEF = 2
ARMIJO_C = 1e-4
NEWTON_TRIES = 3
#: after a refused Newton step, the next 1, 2, 4, ... attempts (at most this many) are skipped
NEWTON_MAX_BACKOFF = 4
#: with ``extrapolate=True`` an accepted MM step is doubled while the objective keeps decreasing, up to this factor
MAX_EXTRAPOLATION = 64.0
#: Column-scaled X with a condition number above ``1 / sqrt(RANK_RTOL)`` (= 1e6) is treated as
#: rank-deficient. The check works on the Gram matrix, whose smallest eigenvalue is only known to
#: ~``p * eps`` of the largest: an exactly collinear column shows up as a ratio ~1e-16..1e-14, so the
#: threshold keeps a margin of 100 above that noise (a design this ill-conditioned would also make the
#: normal-equation steps of IRLS lose ~12 digits).
RANK_RTOL = 1e-12


def check_full_rank(X, G_upper, pos, fit_intercept):
    """Raise ``ValueError`` naming the column if ``X`` (rows with positive weight) lacks full column rank.

    ``X`` is only used for the constant-column check (its column ranges), ``G_upper`` is the upper
    triangle of the (weighted) Gram matrix.
    """
    n_cols = X.shape[1]
    d = n_cols - 1 if fit_intercept else n_cols
    diag = np.diag(G_upper).copy()
    for j in range(d):
        if diag[j] <= 0.0:
            raise ValueError(
                f"Column {j} of X is zero on every sample with positive weight; X must have full column "
                "rank. Remove the column."
            )
    if fit_intercept:
        Xp = X[pos, :d] if pos is not None else X[:, :d]
        spread = np.ptp(Xp, axis=0) if Xp.shape[0] else np.zeros(d)
        for j in range(d):
            if spread[j] == 0.0:
                raise ValueError(
                    f"Column {j} of X is constant, which duplicates the intercept added by "
                    "fit_intercept=True; remove the column or set fit_intercept=False."
                )
    scale = 1.0 / np.sqrt(diag)
    G = np.triu(G_upper) + np.triu(G_upper, 1).T
    C = G * scale[:, None] * scale[None, :]
    evals, evecs = np.linalg.eigh(C)
    if evals[0] <= RANK_RTOL * evals[-1]:
        v = np.abs(evecs[:, 0])
        involved = np.flatnonzero(v >= 1e-3 * v.max())
        j = int(involved.max())
        others = [int(k) for k in involved if k != j]

        def name(k):
            return "the intercept column (fit_intercept=True)" if fit_intercept and k == d else f"column {k}"

        cond = f"~{math.sqrt(evals[-1] / evals[0]):.1e}" if evals[0] > 0 else "infinite"
        raise ValueError(
            f"X is rank-deficient: {name(j)} is (numerically) a linear combination of "
            f"{', '.join(name(k) for k in others) or 'the other columns'} (condition number of the "
            f"column-scaled X {cond} > 1e6). Remove or combine columns so that X has full column rank."
        )


def ridge_solve(G, rhs, tiny=1e-300):
    """Solve ``(G + RIDGE tr(G)/p I) x = rhs`` for the symmetric ``G`` given by (at least) its upper triangle.

    Cholesky, else least squares on the symmetrised matrix. ``G`` is not modified. With ``tiny=None`` a
    matrix of zero trace gives ``None`` (no curvature to solve with), else ``tiny`` is the damping.
    """
    p = G.shape[0]
    tr = float(np.trace(G))
    if not tr > 0:
        if tiny is None:
            return None
        lam = tiny
    else:
        lam = RIDGE * tr / p
    Gd = G + np.eye(p) * lam
    try:
        x = sla.cho_solve(sla.cho_factor(Gd, lower=False, check_finite=False), rhs, check_finite=False)
        if np.all(np.isfinite(x)):
            return x
    except (np.linalg.LinAlgError, ValueError):
        pass
    Gs = np.triu(Gd) + np.triu(Gd, 1).T
    return np.linalg.lstsq(Gs, rhs, rcond=None)[0]


class IRLSOutcome:
    """What :func:`irls_loop` returns: the last accepted point and the iteration's counters."""

    __slots__ = ("coef", "point", "objective", "n_inliers", "n_iter", "history", "converged", "n_backtracks",
                 "n_newton", "n_extrapolations", "grad_rel", "capped")

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)


def _newton_trial(oracle, b, P, delta, fuse):
    r"""One semismooth Newton step over the inliers with the Armijo test: ``(b_new, P_new)`` or ``None``.

    The step :math:`-H_I^{-1} \nabla L` (``H_I`` the inliers' Gram matrix) is tried at lengths 1, 1/2, ...
    (``NEWTON_TRIES``) and accepted at sufficient decrease, or -- near the minimiser, where the decrease is
    below round-off -- when ``L`` stays within ``MONOTONE_RTOL |L|`` and the gradient halves.
    """
    step = ridge_solve(oracle.inlier_gram(P), -P.g, tiny=None)
    if step is None:
        return None
    slope = float(P.g @ step)
    if not (np.all(np.isfinite(step)) and slope < 0.0):
        return None
    gnorm = float(np.linalg.norm(P.g))
    t = 1.0
    for _ in range(NEWTON_TRIES):
        b_new = b + t * step
        Q = oracle.at(b_new, delta, fuse)
        if Q.L <= P.L + ARMIJO_C * t * slope:
            return b_new, Q
        if Q.L <= P.L + MONOTONE_RTOL * abs(P.L) and float(np.linalg.norm(Q.g)) <= 0.5 * gnorm:
            return b_new, Q
        t *= 0.5
    return None


def irls_loop(oracle, b0, delta, tol, max_iter, gscale, *, newton=True, extrapolate=False, cap=None):
    r"""Minimise the Huber objective from ``b0`` by IRLS steps at points evaluated by ``oracle``.

    ``oracle.at(b, delta, full)`` returns a point with ``L`` (objective), ``g`` (gradient), ``nin`` (inliers)
    and ``complete`` (whether :meth:`majoriser` and :meth:`inlier_gram` can answer for it without another
    pass; ``full`` asks for that); ``oracle.majoriser(P)`` is :math:`X^\top W X`, ``oracle.inlier_gram(P)``
    :math:`X_I^\top X_I` (upper triangles suffice); ``oracle.fuse_trials`` says whether trial points should
    be complete (a pass is dear next to the matrices).

    Each iteration: with ``newton``, a semismooth Newton step (:func:`_newton_trial`; after a refusal the
    next 1, 2, 4, ... attempts are skipped, at most ``NEWTON_MAX_BACKOFF``), else the majorise-minimise
    step :math:`-(X^\top W X + \lambda I)^{-1} \nabla L`, halved (at most ``MAX_BACKTRACKS`` times) while
    it raises :math:`L` beyond ``MONOTONE_RTOL |L|`` (no descent left: stalled, not counted) and, with
    ``extrapolate``, doubled while :math:`L` keeps decreasing (up to ``MAX_EXTRAPOLATION``). It stops when
    :math:`\|\nabla L\| /` ``gscale`` ``< tol`` after at least one iteration, at ``max_iter``, or with
    ``cap = (k, m_min)`` after ``k`` iterations without an accepted Newton step while fewer than ``m_min``
    rows are inliers (``capped``).
    """
    fuse = bool(getattr(oracle, "fuse_trials", False))
    b = np.array(b0, dtype=np.float64, copy=True)
    P = oracle.at(b, delta, True)
    p = b.shape[0]
    history = [P.L]
    n_iter = n_back = n_newton = n_extra = 0
    skip = backoff = 0
    converged = capped = False
    while True:
        grad_rel = float(np.linalg.norm(P.g)) / gscale
        if grad_rel < tol and (n_iter >= 1 or max_iter == 0):
            converged = True
            break
        if n_iter >= max_iter:
            break
        if cap is not None and n_iter >= cap[0] and n_newton == 0 and P.nin < cap[1]:
            capped = True
            break
        n_iter += 1
        trial = None
        if newton and skip == 0 and P.nin >= NEWTON_MIN_INLIERS_PER_COEF * p:
            trial = _newton_trial(oracle, b, P, delta, fuse)
            if trial is None:
                backoff = min(2 * backoff, NEWTON_MAX_BACKOFF) if backoff else 1
                skip = backoff
            else:
                backoff = 0
        elif skip:
            skip -= 1
        if trial is not None:
            n_newton += 1
            b_new, Q = trial
        else:  # majorise-minimise step (monotone), halved if round-off raises L
            step = ridge_solve(oracle.majoriser(P), -P.g)
            bound = P.L + MONOTONE_RTOL * abs(P.L)
            b_new = b + step
            Q = oracle.at(b_new, delta, fuse)
            if not Q.L <= bound:  # also catches NaN
                t, ok = 1.0, False
                for _ in range(MAX_BACKTRACKS):
                    t *= 0.5
                    n_back += 1
                    b_new = b + t * step
                    Q = oracle.at(b_new, delta, fuse)
                    if Q.L <= bound:
                        ok = True
                        break
                if not ok:  # no descent left at working precision: stalled (not counted)
                    n_iter -= 1
                    break
            elif extrapolate:  # double the step while L keeps decreasing
                t = 1.0
                while t < MAX_EXTRAPOLATION:
                    R = oracle.at(b + 2.0 * t * step, delta, fuse)
                    if not R.L < Q.L:
                        break
                    t *= 2.0
                    n_extra += 1
                    b_new, Q = b + t * step, R
        b, P = b_new, Q if Q.complete else oracle.at(b_new, delta, True)
        history.append(P.L)
    return IRLSOutcome(coef=b, point=P, objective=P.L, n_inliers=int(P.nin), n_iter=n_iter, history=history,
                       converged=converged, n_backtracks=n_back, n_newton=n_newton, n_extrapolations=n_extra,
                       grad_rel=grad_rel, capped=capped)


class PassPoint:
    """A point evaluated by one pass: ``L``, ``g``, ``nin`` and, when ``complete``, the pass's matrices
    ``Gw`` (majoriser), ``Hin`` (inliers' Gram) and ``B`` (the sandwich's middle)."""

    __slots__ = ("L", "g", "nin", "Gw", "Hin", "B", "complete")

    def __init__(self, L, g, nin, Gw, Hin, B):
        self.L, self.g, self.nin, self.Gw, self.Hin, self.B = float(L), g, int(nin), Gw, Hin, B
        self.complete = Gw is not None


class _PassAdapter:
    """The :func:`irls_loop` oracle of a pass with ``at(b, delta, grams) -> (L, g, nin, G_w, H_in, B)``."""

    def __init__(self, passes):
        self.passes = passes
        self.fuse_trials = bool(getattr(passes, "fuse_trials", False))

    def at(self, b, delta, full):
        return PassPoint(*self.passes.at(b, delta, full))

    @staticmethod
    def majoriser(P):
        return P.Gw

    @staticmethod
    def inlier_gram(P):
        return P.Hin


def irls_passes(oracle, delta, fit_intercept, tol, max_iter):
    r"""Minimise :math:`\sum_i H_\delta(y_i - x_i^\top b)` by passes of ``oracle`` over the rows.

    ``oracle`` has two methods: ``gram()`` returns ``(G0, Xty, n, d, lo, hi)`` (the Gram matrix and
    :math:`X^\top y` of the design with the intercept column, the row count, the feature count and
    the columns' minima and maxima), and ``at(b, delta, grams)`` returns ``(L, g, n_inliers, G_w,
    H_in, B)`` at ``b`` (the three matrices only with ``grams=True``, else ``None``).

    After the rank check, from the least-squares start, the iteration is :func:`irls_loop` (Newton steps
    with back-off, monotone MM steps, no extrapolation). One iteration costs two or three passes, or one or
    two when the oracle has ``fuse_trials = True`` (its trial points then return the matrices too, and the
    accepted one's statistics are reused: the same iterates with one pass fewer).

    Returns a dict: ``coef`` (with the intercept last), ``n``, ``d``, ``n_iter``, ``converged``,
    ``grad_rel`` (:math:`\|\nabla L\| / (\delta \|X\|_F)`), ``n_inliers``, ``objective``, and ``A``
    and ``B`` (the sandwich's matrices at the solution).
    """
    G0, Xty, n, d, lo, hi = oracle.gram()
    p = G0.shape[0]
    if n <= p:
        raise ValueError(f"HuberSoSRegressor needs n_samples > n_features{' + 1' if fit_intercept else ''}; got "
                         f"n_samples = {n} and n_features = {d}.")
    proxy = np.vstack([lo, hi])  # the same column ranges as the data: the constant-column check
    if fit_intercept:
        proxy = np.hstack([proxy, np.ones((2, 1))])
    check_full_rank(proxy, np.triu(G0), None, fit_intercept)
    gscale = delta * math.sqrt(float(np.trace(G0)))
    out = irls_loop(_PassAdapter(oracle), ridge_solve(G0, Xty), delta, tol, max_iter, gscale)
    P = out.point
    return {"coef": out.coef, "n": n, "n_iter": out.n_iter, "converged": out.converged, "grad_rel": out.grad_rel,
            "n_inliers": out.n_inliers, "objective": out.objective, "A": P.Hin, "B": P.B, "d": d}
