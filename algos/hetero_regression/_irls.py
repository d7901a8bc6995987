r"""The Huber IRLS / semismooth-Newton iteration by passes over the data, and the constants of every IRLS.

Every quantity the iteration needs is a sum over rows -- the objective :math:`L(b)`, the gradient
:math:`-X^\top \psi_\delta(r)`, the majoriser's Gram matrix :math:`X^\top W X`, the inliers' Gram
matrix :math:`X_I^\top X_I` and the sandwich's :math:`\sum_i \min(r_i^2, \delta^2) x_i x_i^\top` -- so
:func:`irls_passes` asks a *pass* (an oracle) for them at a point ``b`` and never touches the rows
itself. The passes: one over an iterable of chunks in this process (:mod:`._chunked`) and one mapped
onto the blocks of a Dask array and tree-reduced (:mod:`._dask`). The in-memory solvers
(:mod:`._huber_solvers`) and the torch core (:mod:`accel.hetero_regression`, which keeps literal
copies pinned equal by a test) use the same constants.

This file is a leaf of the package: it imports only numpy.
"""

from __future__ import annotations

import math

import numpy as np

#: IRLS ridge safety: ``RIDGE * trace(G) / p`` is added to the diagonal of the weighted Gram matrix.
#: It keeps the Cholesky factorisation defined when almost every weight is tiny (sign-only regime) and
#: does not break monotonicity (a larger quadratic majoriser is still a majoriser).
RIDGE = 1e-12
#: An accepted step may raise the objective by at most ``MONOTONE_RTOL * |L|`` (summation round-off of
#: ``n`` terms; the property test P6 allows ``1e-9 * |L|``). Beyond that, the step is backtracked.
MONOTONE_RTOL = 1e-11
#: Step halvings tried before IRLS declares that it stalls.
MAX_BACKTRACKS = 40
#: Newton acceleration: tried only with at least this many inliers per coefficient, accepted with the
#: Armijo constant ``ARMIJO_C`` at one of ``NEWTON_TRIES`` step lengths 1, 1/2, ...
NEWTON_MIN_INLIERS_PER_COEF = 2
ARMIJO_C = 1e-4
NEWTON_TRIES = 3
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


def ridge_solve(G, rhs):
    """Solve ``(G + RIDGE tr(G)/p I) x = rhs`` for a full symmetric ``G`` (least squares if singular)."""
    tr = float(np.trace(G))
    G = G + np.eye(G.shape[0]) * (RIDGE * tr / G.shape[0] if tr > 0 else 1e-300)
    try:
        return np.linalg.solve(G, rhs)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(G, rhs, rcond=None)[0]


def irls_passes(oracle, delta, fit_intercept, tol, max_iter):
    r"""Minimise :math:`\sum_i H_\delta(y_i - x_i^\top b)` by passes of ``oracle`` over the rows.

    ``oracle`` has two methods: ``gram()`` returns ``(G0, Xty, n, d, lo, hi)`` (the Gram matrix and
    :math:`X^\top y` of the design with the intercept column, the row count, the feature count and
    the columns' minima and maxima), and ``at(b, delta, grams)`` returns ``(L, g, n_inliers, G_w,
    H_in, B)`` at ``b`` (the three matrices only with ``grams=True``, else ``None``).

    The iteration: from the least-squares start, a semismooth Newton step over the inliers (with
    at least ``NEWTON_MIN_INLIERS_PER_COEF`` inliers per coefficient) accepted by the Armijo test at
    one of ``NEWTON_TRIES`` step lengths, else the majorise-minimise step, halved while round-off
    raises :math:`L` by more than ``MONOTONE_RTOL |L|``. One iteration costs two or three passes, or one or
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
    b = ridge_solve(G0, Xty)

    # An oracle whose pass is dear next to the matrices (data read or generated again at every pass) asks for them
    # at every trial point too: the accepted trial's statistics then serve as the next iterate's, one pass fewer
    # per iteration, with the same iterates (the same numbers at the same points).
    fuse = bool(getattr(oracle, "fuse_trials", False))
    L, g, nin, Gw, Hin, B = oracle.at(b, delta, True)
    n_iter, converged = 0, False
    while True:
        grad_rel = float(np.linalg.norm(g)) / gscale
        if grad_rel < tol and n_iter >= 1:
            converged = True
            break
        if n_iter >= max_iter:
            break
        n_iter += 1
        accepted, at_new = False, None
        if nin >= NEWTON_MIN_INLIERS_PER_COEF * p:  # semismooth Newton step over the inliers, Armijo test
            step = ridge_solve(Hin, -g)
            slope = float(g @ step)
            if np.all(np.isfinite(step)) and slope < 0:
                t = 1.0
                for _ in range(NEWTON_TRIES):
                    b_try = b + t * step
                    stats = oracle.at(b_try, delta, fuse)
                    if stats[0] <= L + ARMIJO_C * t * slope:
                        b, accepted = b_try, True
                        at_new = stats if fuse else None
                        break
                    t *= 0.5
        if not accepted:  # majorise-minimise step (monotone), halved if round-off raises L
            step = ridge_solve(Gw, -g)
            t = 1.0
            for _ in range(MAX_BACKTRACKS):
                b_try = b + t * step
                stats = oracle.at(b_try, delta, fuse and t == 1.0)
                if stats[0] <= L + MONOTONE_RTOL * abs(L):
                    b, accepted = b_try, True
                    at_new = stats if fuse and t == 1.0 else None
                    break
                t *= 0.5
            if not accepted:  # stalled at working precision
                n_iter -= 1
                break
        L, g, nin, Gw, Hin, B = at_new if at_new is not None else oracle.at(b, delta, True)
    return {"coef": b, "n": n, "n_iter": n_iter, "converged": converged, "grad_rel": grad_rel, "n_inliers": nin,
            "objective": L, "A": Hin, "B": B, "d": d}
