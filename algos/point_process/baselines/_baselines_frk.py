"""VIFRK, the variational fixed-rank-kriging LGCP (:class:`FRKVariationalLGCP`, see :mod:`.baselines`)."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import scipy.optimize as sopt
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval

from ..._validation import check_scalar_int
from .._window import Window
from ._baselines_common import _check_points, _design, _Grid, _grid_shape, _LGCPMixin, _region_mask


def _bisquare_basis(win, per_side):
    """Centres and radii of bisquare functions, one regular lattice per resolution.

    Resolution ``l`` has ``per_side[l]`` centres along the longer side of the bounding box (and
    proportionally many along the other); the radius is 1.5 x the lattice spacing.
    """
    xmin, xmax, ymin, ymax = win.bounds
    W, H = xmax - xmin, ymax - ymin
    L = max(W, H)
    centres, radii, level = [], [], []
    for lvl, k in enumerate(per_side):
        d = L / k
        kx, ky = max(1, int(round(W / d))), max(1, int(round(H / d)))
        cx = xmin + (np.arange(kx) + 0.5) * W / kx
        cy = ymin + (np.arange(ky) + 0.5) * H / ky
        gx, gy = np.meshgrid(cx, cy)
        centres.append(np.column_stack([gx.ravel(), gy.ravel()]))
        radii.append(np.full(kx * ky, 1.5 * max(W / kx, H / ky)))
        level.append(np.full(kx * ky, lvl))
    return np.vstack(centres), np.concatenate(radii), np.concatenate(level)


def _bisquare(coords, centres, radii):
    """Sparse (m, K) CSR matrix of the bisquare functions at ``coords`` (compact support)."""
    rows, cols, vals = [], [], []
    for lo in range(0, coords.shape[0], 4096):
        c = coords[lo:lo + 4096]
        d2 = ((c[:, None, :] - centres[None, :, :]) ** 2).sum(-1)
        u = 1.0 - d2 / radii[None, :] ** 2
        r, k = np.nonzero(u > 0)
        rows.append(r + lo)
        cols.append(k)
        vals.append(u[r, k] ** 2)
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(coords.shape[0], centres.shape[0]))


class FRKVariationalLGCP(_LGCPMixin, BaseEstimator):
    r"""VIFRK: variational fixed-rank-kriging LGCP (Dovers, Stoklosa & Warton, JCGS 2023).

    ``log lambda(s) = x(s)^T beta + phi(s)^T u`` with bisquare basis functions ``phi`` at two
    resolutions, prior ``u_k ~ N(0, sigma_l^2)`` (one variance per resolution), variational
    ``q(u) = N(mu, diag tau^2)``. The ELBO (point_process reconstruction notes, section 3, item 2)::

        sum_i (x_i^T beta + phi_i^T mu) - sum_q w_q exp(x_q^T beta + phi_q^T mu + 1/2 sum_k phi_qk^2 tau_k^2)
        - 1/2 sum_k [log sigma_l^2 - log tau_k^2],   sigma_l^2 = mean over level l of (tau_k^2 + mu_k^2)

    (the prior variances profiled in closed form) is maximised jointly in ``(beta, mu, log tau)`` by
    L-BFGS-B on the analytic gradient. Quadrature: a regular grid of cell centres with weights
    ``cell area x fraction inside the window``. *Reconstructed* basis layout (see module docstring).

    Parameters
    ----------
    window : tuple or (V, 2) array
    basis_per_side : tuple of int, default=(4, 12)
        Centres along the longer side, per resolution.
    quad_grid : int or (nx, ny), default=64
    max_iter : int, default=1000
    tol : float, default=1e-9
        L-BFGS ``ftol`` (relative).

    Attributes
    ----------
    coef_, basis_centres_, basis_radii_, basis_level_, basis_mean_ (mu), basis_var_ (tau^2),
    variance_ (sigma_l^2 per resolution), elbo_, n_iter_, converged_
    """

    _parameter_constraints: dict = {
        "basis_per_side": [tuple, list],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "quad_grid": [Interval(Integral, 2, None, closed="left"), tuple, list],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "window": [tuple, list, np.ndarray, Window],  # required; its bounds or vertices: checked by Window.from_any
    }

    def __init__(self, *, window=None, basis_per_side=(4, 12), quad_grid=64, max_iter=1000, tol=1e-9):
        self.window = window
        self.basis_per_side = basis_per_side
        self.quad_grid = quad_grid
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, X, covariates):
        win = Window.from_any(self.window)
        X = _check_points(X, win)
        # element rule (the constraint language has no "a tuple of ints >= 1"); the type is a constraint
        per = tuple(check_scalar_int(k, f"basis_per_side[{i}]", low=1) for i, k in enumerate(self.basis_per_side))
        nx, ny = _grid_shape(self.quad_grid, "quad_grid")
        max_iter, tol = int(self.max_iter), float(self.tol)
        centres, radii, level = _bisquare_basis(win, per)
        grid = _Grid(win, nx, ny)
        keep = grid.frac > 0
        qc = grid.centres[keep]
        wq = grid.cell_area * grid.frac[keep]
        Xq_ = _design(covariates, qc)
        p, K = Xq_.shape[1], centres.shape[0]
        n_lvl = len(per)
        counts = np.bincount(level, minlength=n_lvl).astype(np.float64)
        f_and_g = _negative_elbo(X, _design(covariates, X), qc, wq, Xq_, centres, radii, level, counts)

        beta0 = np.zeros(p)
        beta0[0] = math.log(X.shape[0] / wq.sum())
        theta0 = np.concatenate([beta0, np.zeros(K), np.full(K, math.log(0.1))])
        bounds = [(None, None)] * (p + K) + [(math.log(1e-6), math.log(1e3))] * K
        res = sopt.minimize(f_and_g, theta0, jac=True, method="L-BFGS-B", bounds=bounds,
                            options=dict(maxiter=max_iter, ftol=tol, gtol=1e-7, maxcor=20))
        th = res.x
        self.window_ = win
        self.coef_ = th[:p]
        self.basis_mean_ = th[p:p + K]
        self.basis_var_ = np.exp(2 * th[p + K:])
        self.variance_ = np.bincount(level, weights=self.basis_var_ + self.basis_mean_ ** 2,
                                     minlength=n_lvl) / counts
        self.basis_centres_, self.basis_radii_, self.basis_level_ = centres, radii, level
        self.elbo_ = float(-res.fun)
        self.n_iter_ = int(res.nit)
        self.converged_ = bool(res.success)
        self._covariates = covariates
        self._quad = (qc, wq)
        return self

    def _log_intensity_at(self, Xq, return_std):
        """Variational mean (and sd)."""
        Phi = _bisquare(Xq, self.basis_centres_, self.basis_radii_)
        mu = _design(self._covariates, Xq) @ self.coef_ + Phi @ self.basis_mean_
        if return_std:
            return mu, np.sqrt(Phi.multiply(Phi) @ self.basis_var_)
        return mu

    def _expected_count(self, region):
        qc, wq = self._quad
        mask = _region_mask(region, qc)
        lam = self.predict_intensity(qc[mask])
        return float(wq[mask] @ lam)


def _negative_elbo(X, Xp_, qc, wq, Xq_, centres, radii, level, counts):
    """``theta = (beta, mu, log tau) -> (-ELBO, -gradient)`` of :class:`FRKVariationalLGCP` (the prior
    variances profiled), for the points ``X`` with design ``Xp_`` and the quadrature ``(qc, wq)`` with design
    ``Xq_``."""
    Phi_q = _bisquare(qc, centres, radii)
    Phi_p = _bisquare(X, centres, radii)
    p, K = Xq_.shape[1], centres.shape[0]
    n_lvl = counts.size
    sum_p = np.concatenate([Xp_.sum(0), np.asarray(Phi_p.sum(0)).ravel()])
    Phi_q2 = Phi_q.multiply(Phi_q).tocsr()
    Phi_qT, Phi_q2T = Phi_q.T.tocsr(), Phi_q2.T.tocsr()

    def f_and_g(theta):
        beta, mu, s = theta[:p], theta[p:p + K], theta[p + K:]
        t2 = np.exp(2 * s)
        eta = Xq_ @ beta + Phi_q @ mu + 0.5 * Phi_q2 @ t2
        e = wq * np.exp(np.minimum(eta, 700.0))
        sig = np.bincount(level, weights=t2 + mu ** 2, minlength=n_lvl) / counts
        elbo = sum_p[:p] @ beta + sum_p[p:] @ mu - e.sum() \
            - 0.5 * (counts @ np.log(sig) - 2 * s.sum())
        gb = sum_p[:p] - Xq_.T @ e
        gm = sum_p[p:] - Phi_qT @ e - mu / sig[level]
        gs = -t2 * (Phi_q2T @ e) - t2 / sig[level] + 1.0
        return -elbo, -np.concatenate([gb, gm, gs])

    return f_and_g
