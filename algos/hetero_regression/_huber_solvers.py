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

from ._irls import RIDGE, irls_loop
from ._kernels import huber_pass, masked_ratio_medians

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


class _ArrayPoint:
    """A point of the in-memory pass: ``L``, ``g``, ``nin`` and the residuals ``r`` and weights ``w``.

    Its arrays go back to the pass's pool when the point is dropped (no allocation per evaluation)."""

    __slots__ = ("L", "g", "nin", "r", "w", "delta", "pool")
    complete = True  # the matrices are computed from r and w on demand, without another pass

    def __init__(self, L, g, nin, r, w, delta, pool):
        self.L, self.g, self.nin, self.r, self.w, self.delta, self.pool = L, g, nin, r, w, delta, pool

    def __del__(self):
        self.pool.append((self.r, self.w, self.g))


class ArrayPass:
    r"""The in-memory oracle of :func:`._irls.irls_loop`: the fused numba pass :func:`._kernels.huber_pass`
    over ``X``, ``y`` (sample weights ``sw``, or an empty array), and the two Gram matrices by BLAS ``dsyrk``
    from the point's residuals and weights, only when the loop asks for them."""

    fuse_trials = False

    def __init__(self, X, y, sw):
        self.X, self.y, self.sw = X, y, sw
        n = X.shape[0]
        self.buf = np.empty_like(X)
        self.s = np.empty(n)
        self.pool = []

    def at(self, b, delta, full=True):
        if self.pool:
            r, w, g = self.pool.pop()
        else:
            n, p = self.X.shape
            r, w, g = np.empty(n), np.empty(n), np.empty(p)
        L, nin = huber_pass(self.X, self.y, b, delta, self.sw, r, w, g)
        return _ArrayPoint(L, g, nin, r, w, delta, self.pool)

    def majoriser(self, P):
        r"""Upper triangle of :math:`X^\top W X` (``W`` the point's weights, sample weights included)."""
        np.sqrt(P.w, out=self.s)
        return _weighted_gram(self.X, self.s, self.buf)

    def inlier_gram(self, P):
        r"""Upper triangle of the (sample-weighted) Gram matrix of the inliers :math:`|r_i| \le \delta`."""
        inl = np.abs(P.r) <= P.delta
        if self.sw.shape[0]:
            inl &= self.sw > 0
            XI = self.X[inl] * np.sqrt(self.sw[inl])[:, None]
        else:
            XI = self.X[inl]
        return dsyrk(1.0, XI.T, trans=0)


def _irls(X, y, sw, b0, delta, tol, max_iter, gscale, newton=True, cap=None):
    r"""IRLS (majorise-minimise) for the weighted Huber objective: :func:`._irls.irls_loop` over
    :class:`ArrayPass`, with Newton steps and extrapolation when ``newton`` (``solver="irls"``), plain MM
    steps otherwise (``solver="mm"``); ``cap`` as in :func:`._irls.irls_loop`."""
    out = irls_loop(ArrayPass(X, y, sw), b0, delta, tol, max_iter, gscale, newton=newton, extrapolate=newton,
                    cap=cap)
    return _Stage(coef=out.coef, objective=out.objective, n_inliers=out.n_inliers, n_iter=out.n_iter,
                  history=out.history, converged=out.converged, n_backtracks=out.n_backtracks,
                  n_newton=out.n_newton, n_extrapolations=out.n_extrapolations, grad_rel=out.grad_rel,
                  capped=out.capped)


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
