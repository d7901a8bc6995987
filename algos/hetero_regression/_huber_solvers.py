r"""The solvers of :class:`~algos.hetero_regression.HuberSoSRegressor` for one threshold ``delta``.

IRLS (majorise-minimise steps with an Armijo-tested semismooth Newton acceleration), L-BFGS, the torch
IRLS of :mod:`accel.hetero_regression`, and the robust starting points (``init="lad"``, ``"cmed"``);
the estimator (:mod:`algos.hetero_regression._huber`) checks the data, rescales it and chains these
solvers over the ``delta`` path.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg as sla
from scipy.linalg.blas import dsyrk

from ._irls import (  # noqa: F401  (RIDGE ... are part of this file's documented interface)
    ARMIJO_C,
    MAX_BACKTRACKS,
    MONOTONE_RTOL,
    NEWTON_MIN_INLIERS_PER_COEF,
    NEWTON_TRIES,
    RIDGE,
)
from ._kernels import huber_pass, masked_ratio_medians

#: after a refused Newton step, the next 1, 2, 4, ... attempts (at most this many) are skipped
NEWTON_MAX_BACKOFF = 4
#: solver="irls" doubles an accepted MM step while the objective keeps decreasing, up to this factor
MAX_EXTRAPOLATION = 64.0
#: IRLS-for-L1 steps of ``init="lad"``, and coordinate-median rounds of ``init="cmed"``.
LAD_INIT_STEPS = 20
CMED_INIT_ROUNDS = 10


def _weighted_gram(X, s, buf):
    """Upper triangle of ``X^T diag(s^2) X`` with BLAS ``dsyrk`` (``buf`` receives ``s * X``)."""
    np.multiply(X, s[:, None], out=buf)
    return dsyrk(1.0, buf.T, trans=0)  # buf.T is Fortran-contiguous: no copy


def _spd_solve(G_upper, rhs):
    """Solve ``G x = rhs`` for the symmetric ``G`` given by its upper triangle (Cholesky, else lstsq)."""
    try:
        c = sla.cho_factor(G_upper, lower=False, check_finite=False)
        x = sla.cho_solve(c, rhs, check_finite=False)
        if np.all(np.isfinite(x)):
            return x
    except (np.linalg.LinAlgError, ValueError):
        pass
    G = np.triu(G_upper) + np.triu(G_upper, 1).T
    return np.linalg.lstsq(G, rhs, rcond=None)[0]

# --------------------------------------------------------------------------------------------------
# solvers of one stage (one delta)
# --------------------------------------------------------------------------------------------------
class _Stage:
    """Outcome of minimising ``L`` for one ``delta``."""

    __slots__ = ("coef", "objective", "n_inliers", "n_iter", "history", "converged", "n_backtracks",
                 "n_newton", "n_extrapolations", "grad_rel", "capped")

    def __init__(self, **kw):
        self.n_newton = self.n_extrapolations = 0
        self.capped = False
        for k, v in kw.items():
            setattr(self, k, v)


def _newton_step(X, y, sw, b, r, g, L, delta, bufs):
    r"""Try one semismooth Newton step; return ``(b_new, L_new, nin_new)`` or ``None``.

    The generalised Hessian of :math:`L` is :math:`X_I^\top \operatorname{diag}(s_I) X_I` over the
    inliers :math:`I = \{i : |r_i| \le \delta\}` (cost :math:`|I| d^2`, cheap when few rows are
    inliers). The step :math:`-H^{-1}\nabla L` is accepted only if it passes the Armijo test
    :math:`L(b + t p) \le L(b) + c\, t\, \nabla L^\top p` for some :math:`t \in \{1, 1/2, 1/4\}`
    (``c = 1e-4``); otherwise the caller takes the majorise-minimise step.
    """
    p = X.shape[1]
    inl = np.abs(r) <= delta
    if sw.shape[0]:
        inl &= sw > 0
        XI = X[inl] * np.sqrt(sw[inl])[:, None]
    else:
        XI = X[inl]
    H = dsyrk(1.0, XI.T, trans=0)
    tr = float(np.trace(H))
    if not tr > 0:
        return None
    H[np.diag_indices(p)] += RIDGE * tr / p
    try:
        step = sla.cho_solve(sla.cho_factor(H, lower=False, check_finite=False), -g, check_finite=False)
    except (np.linalg.LinAlgError, ValueError):
        return None
    slope = float(g @ step)
    if not (np.all(np.isfinite(step)) and slope < 0.0):
        return None
    r2, w2, g2 = bufs
    gnorm = float(np.linalg.norm(g))
    t = 1.0
    for _ in range(NEWTON_TRIES):
        b_new = b + t * step
        L_new, nin_new = huber_pass(X, y, b_new, delta, sw, r2, w2, g2)
        if L_new <= L + ARMIJO_C * t * slope:
            return b_new, L_new, nin_new
        # near the minimiser the decrease is below round-off: accept a step that keeps L within
        # round-off (the MM step's own tolerance) and halves the gradient
        if L_new <= L + MONOTONE_RTOL * abs(L) and float(np.linalg.norm(g2)) <= 0.5 * gnorm:
            return b_new, L_new, nin_new
        t *= 0.5
    return None


def _irls(X, y, sw, b0, delta, tol, max_iter, gscale, newton=True, cap=None):
    r"""IRLS (majorise-minimise) for the weighted Huber objective, stopping on the relative gradient.

    MM step: :math:`b \leftarrow b + (X^\top W X + \lambda I)^{-1} X^\top (s \odot \psi_\delta(r))`
    with :math:`W = \operatorname{diag}(s_i \min(1, \delta/|r_i|))`. The quadratic with curvature
    :math:`X^\top W X` majorises :math:`L` at the current point, so each step decreases :math:`L`; a
    step that raises it beyond round-off (``MONOTONE_RTOL``) is halved until it does not. With
    ``newton=True`` every iteration first tries a semismooth Newton step (:func:`_newton_step`,
    accepted only with sufficient decrease) and takes the MM step when it is refused, then doubles the
    MM step (up to ``MAX_EXTRAPOLATION``) while :math:`L` keeps decreasing.

    ``cap = (k, m_min)``: stop after ``k`` iterations if no Newton step was accepted and fewer than
    ``m_min`` rows are inliers (the failure regime, where the MM steps crawl for hundreds of
    iterations toward a minimiser that is far from the truth anyway); the stage is marked ``capped``.
    """
    n, p = X.shape
    r, w, g = np.empty(n), np.empty(n), np.empty(p)
    r2, w2, g2 = np.empty(n), np.empty(n), np.empty(p)
    r3, w3, g3 = (np.empty(n), np.empty(n), np.empty(p)) if newton else (None, None, None)
    buf = np.empty_like(X)
    s = np.empty(n)
    b = np.array(b0, dtype=np.float64, copy=True)
    L, nin = huber_pass(X, y, b, delta, sw, r, w, g)
    history = [L]
    n_iter = n_back = n_newton = n_extra = 0
    skip = backoff = 0  # after a refused Newton step, skip the next 1, 2, 4, ... attempts
    converged = capped = False
    while True:
        grad_rel = float(np.linalg.norm(g)) / gscale
        if grad_rel < tol and (n_iter >= 1 or max_iter == 0):  # at least one iteration (sklearn's n_iter_ >= 1)
            converged = True
            break
        if n_iter >= max_iter:
            break
        if cap is not None and n_iter >= cap[0] and n_newton == 0 and nin < cap[1]:
            capped = True
            break
        n_iter += 1
        trial = None
        if newton and skip == 0 and nin >= NEWTON_MIN_INLIERS_PER_COEF * p:
            trial = _newton_step(X, y, sw, b, r, g, L, delta, (r2, w2, g2))
            if trial is None:
                backoff = min(2 * backoff, NEWTON_MAX_BACKOFF) if backoff else 1
                skip = backoff
            else:
                backoff = 0
        elif skip:
            skip -= 1
        if trial is not None:
            n_newton += 1
            b_new, L_new, nin_new = trial
        else:
            np.sqrt(w, out=s)
            G = _weighted_gram(X, s, buf)
            tr = float(np.trace(G))
            G[np.diag_indices(p)] += RIDGE * tr / p if tr > 0 else 1e-300
            step = _spd_solve(G, -g)
            b_new = b + step
            L_new, nin_new = huber_pass(X, y, b_new, delta, sw, r2, w2, g2)
            if not L_new <= L + MONOTONE_RTOL * abs(L):  # also catches NaN
                t = 1.0
                ok = False
                for _ in range(MAX_BACKTRACKS):
                    t *= 0.5
                    n_back += 1
                    b_new = b + t * step
                    L_new, nin_new = huber_pass(X, y, b_new, delta, sw, r2, w2, g2)
                    if L_new <= L + MONOTONE_RTOL * abs(L):
                        ok = True
                        break
                if not ok:  # no descent left at working precision: stalled (not counted)
                    n_iter -= 1
                    break
            elif newton:  # extrapolate: double the step while L keeps decreasing
                t = 1.0
                while t < MAX_EXTRAPOLATION:
                    L_try, nin_try = huber_pass(X, y, b + 2.0 * t * step, delta, sw, r3, w3, g3)
                    if not L_try < L_new:
                        break
                    t *= 2.0
                    n_extra += 1
                    b_new, L_new, nin_new = b + t * step, L_try, nin_try
                    r2, r3, w2, w3, g2, g3 = r3, r2, w3, w2, g3, g2
        b, L, nin = b_new, L_new, nin_new
        r, r2, w, w2, g, g2 = r2, r, w2, w, g2, g
        history.append(L)
    return _Stage(coef=b, objective=L, n_inliers=int(nin), n_iter=n_iter, history=history,
                  converged=converged, n_backtracks=n_back, n_newton=n_newton, n_extrapolations=n_extra,
                  grad_rel=grad_rel, capped=capped)


def _lbfgs(X, y, sw, b0, delta, tol, max_iter, gscale):
    """scipy L-BFGS-B on ``L`` with the analytic gradient (fallback solver; monotone by line search)."""
    from scipy.optimize import minimize

    n, p = X.shape
    r, w, g = np.empty(n), np.empty(n), np.empty(p)

    def fun(b):
        L, _ = huber_pass(X, y, np.ascontiguousarray(b), delta, sw, r, w, g)
        return L, g.copy()

    L0, _ = fun(np.asarray(b0, dtype=np.float64))
    history = [L0]
    if max_iter == 0:
        grad_rel = float(np.linalg.norm(g)) / gscale
        nin = huber_pass(X, y, np.asarray(b0, dtype=np.float64), delta, sw, r, w, g)[1]
        return _Stage(coef=np.asarray(b0, dtype=np.float64), objective=L0, n_inliers=int(nin), n_iter=0,
                      history=history, converged=grad_rel < tol, n_backtracks=0, grad_rel=grad_rel)

    def callback(intermediate_result):
        history.append(float(intermediate_result.fun))

    res = minimize(
        fun, np.asarray(b0, dtype=np.float64), jac=True, method="L-BFGS-B", callback=callback,
        # gtol bounds the max-norm; ||g||_2 <= sqrt(p) ||g||_inf. ftol=0: never stop on objective change.
        options={"maxiter": max_iter, "gtol": tol * gscale / math.sqrt(p), "ftol": 0.0, "maxcor": 20,
                 "maxls": 50},
    )
    b = np.asarray(res.x, dtype=np.float64)
    L, nin = huber_pass(X, y, b, delta, sw, r, w, g)
    grad_rel = float(np.linalg.norm(g)) / gscale
    return _Stage(coef=b, objective=L, n_inliers=int(nin), n_iter=int(res.nit), history=history,
                  converged=grad_rel < tol, n_backtracks=0, grad_rel=grad_rel)


def _irls_torch(X, y, sw, b0, delta, tol, max_iter, gscale):
    """The IRLS stage on the torch core (:func:`accel.hetero_regression.huber_irls_batched`, B = 1)."""
    from accel.hetero_regression import huber_irls_batched

    coef, n_iter, conv, hist = huber_irls_batched(
        X, y[None, :], delta, max_iter=max_iter, tol=tol, coef_init=b0[None, :],
        sample_weight=None if sw.shape[0] == 0 else sw, return_history=True,
    )
    b = np.ascontiguousarray(coef[0])
    n = X.shape[0]
    r, w, g = np.empty(n), np.empty(n), np.empty(X.shape[1])
    L, nin = huber_pass(X, y, b, delta, sw, r, w, g)
    history = [float(v) for v in hist[0] if np.isfinite(v)]
    return _Stage(coef=b, objective=L, n_inliers=int(nin), n_iter=int(n_iter[0]), history=history,
                  converged=bool(conv[0]), n_backtracks=0, grad_rel=float(np.linalg.norm(g)) / gscale)


# --------------------------------------------------------------------------------------------------
# starting points
# --------------------------------------------------------------------------------------------------
def _init_lad(X, y, sw, b_ols):
    """A rough LAD start: ``LAD_INIT_STEPS`` IRLS-for-L1 steps (weights ``s_i / max(|r_i|, eps)``)."""
    n, p = X.shape
    s_w = np.ones(n) if sw.shape[0] == 0 else sw
    b = b_ols.copy()
    buf = np.empty_like(X)
    for _ in range(LAD_INIT_STEPS):
        r = y - X @ b
        a = np.abs(r)
        floor = max(1e-6 * float(np.median(a)), 1e-12)
        wt = s_w / np.maximum(a, floor)
        G = _weighted_gram(X, np.sqrt(wt), buf)
        tr = float(np.trace(G))
        G[np.diag_indices(p)] += RIDGE * tr / p if tr > 0 else 1e-300
        b = _spd_solve(G, X.T @ (wt * y))
    return b


def _init_cmed(X, y, sw, G_upper):
    r"""A coordinate-median start in the style of d'Orsi, Novikov & Steurer (2021).

    Whiten with the Cholesky factor of the (sample-weighted) Gram matrix, :math:`Z = X R^{-1}
    \sqrt{n}` (so :math:`Z^\top Z / n = I`), then run ``CMED_INIT_ROUNDS`` rounds of
    :math:`\theta \leftarrow \theta + \operatorname{median}\{r_i / Z_{ij} : |Z_{ij}| \ge 1\}` (all
    coordinates at once), and map back, :math:`b = \sqrt{n} R^{-1}\theta`. Rows with zero weight are
    left out; the weights' magnitudes are ignored (it is only a start).
    """
    if sw.shape[0]:
        keep = sw > 0
        X, y = X[keep], y[keep]
    n, p = X.shape
    if sw.shape[0]:  # whiten with the unweighted Gram of the kept rows
        R = sla.cholesky(X.T @ X, lower=False, check_finite=False)
    else:
        R = sla.cholesky(np.triu(G_upper) + np.triu(G_upper, 1).T, lower=False, check_finite=False)
    Z = np.ascontiguousarray(sla.solve_triangular(R, X.T, trans="T", lower=False).T) * math.sqrt(n)
    theta = np.zeros(p)
    out = np.empty(p)
    counts = np.empty(p, dtype=np.int64)
    for _ in range(CMED_INIT_ROUNDS):
        r = np.ascontiguousarray(y - Z @ theta)
        masked_ratio_medians(Z, r, 1.0, out, counts)
        theta += out
    return sla.solve_triangular(R, theta, lower=False) * math.sqrt(n)
