"""Preconditioned MALA on the grid posterior of :class:`GridLaplaceLGCP` (:class:`GridMALALGCP`, see
:mod:`.baselines`)."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import scipy.linalg as sla
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, Options, StrOptions

from ..._validation import RANDOM_STATE_CONSTRAINTS, check_random_state
from .._simulate import matern_covariance
from .._window import Window
from ._baselines_common import (
    _DENSE_MAX_CELLS,
    _check_points,
    _design,
    _grid_shape,
    _LGCPMixin,
    _region_mask,
    _window_and_length_scale,
)
from ._baselines_laplace import GridLaplaceLGCP


class GridMALALGCP(_LGCPMixin, BaseEstimator):
    r"""Preconditioned MALA on the grid posterior of :class:`GridLaplaceLGCP` (an MCMC oracle).

    The state is ``(g, beta)`` (flat prior on ``beta``, hyperparameters fixed); the proposal is
    Langevin in whitened coordinates ``(g, beta) = mode + L z`` with ``L L^T`` the Laplace posterior
    covariance (dense; so ``grid`` should stay <= ~40 x 40). The step size adapts during burn-in by
    Robbins–Monro on ``log eps`` towards the 0.574 acceptance rate of Roberts & Rosenthal (1998), then
    stays fixed. Kept: every ``thin``-th of ``n_samples * thin`` post-burn-in iterations.

    Parameters
    ----------
    window, grid, nu, variance, length_scale : as :class:`GridLaplaceLGCP` (``grid`` default 16)
    n_samples : int, default=2000
    burn_in : int, default=1000
    thin : int, default=1
    random_state : None, int or Generator

    Attributes
    ----------
    samples_ : (n_samples, ny * nx) draws of ``f`` (row-major cells)
    log_intensity_, log_intensity_var_ : (ny, nx) sample mean and variance of ``f``
    coef_ (sample mean of beta), coef_samples_, acceptance_rate_, step_size_, variance_,
    length_scale_, n_iter_, converged_ (acceptance rate after burn-in in [0.4, 0.75])
    """

    _parameter_constraints: dict = {
        "burn_in": [Interval(Integral, 0, None, closed="left")],
        "grid": [Interval(Integral, 2, None, closed="left"), tuple, list],
        "length_scale": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "nu": [Options(Real, {0.5, 1.5})],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "thin": [Interval(Integral, 1, None, closed="left")],
        "variance": [Interval(Real, 0, None, closed="neither")],
        "window": [tuple, list, np.ndarray, Window],  # required; its bounds or vertices: checked by Window.from_any
    }

    def __init__(self, *, window=None, grid=16, nu=0.5, variance=1.0, length_scale="auto", n_samples=2000,
                 burn_in=1000, thin=1, random_state=None):
        self.window = window
        self.grid = grid
        self.nu = nu
        self.variance = variance
        self.length_scale = length_scale
        self.n_samples = n_samples
        self.burn_in = burn_in
        self.thin = thin
        self.random_state = random_state

    def _fit(self, X, covariates):
        win, phi, _ = _window_and_length_scale(self.window, self.length_scale)
        X = _check_points(X, win)
        nx, ny = _grid_shape(self.grid)
        if nx * ny > _DENSE_MAX_CELLS:
            raise ValueError(f"'grid' has {nx * ny} cells; GridMALALGCP is dense, use at most "
                             f"{_DENSE_MAX_CELLS}.")
        nu, sigma2 = float(self.nu), float(self.variance)
        n_samples, burn_in, thin = int(self.n_samples), int(self.burn_in), int(self.thin)
        rng = check_random_state(self.random_state)

        lap = GridLaplaceLGCP(window=win, grid=(nx, ny), nu=nu, variance=sigma2, length_scale=phi,
                              solver="dense").fit(X, covariates=covariates)
        grid = lap.grid_
        a = lap.cell_areas_.ravel()
        Z = _design(covariates, grid.centres)
        M = a.size
        x0, L, logp_grad = _whitened_posterior(lap, Z, nu, sigma2, phi)
        keep, acc_post, eps, total = _mala(logp_grad, x0.size, burn_in, n_samples, thin, rng)
        xs = x0[None, :] + keep @ L.T
        fs = xs[:, :M] + xs[:, M:] @ Z.T
        self.window_ = win
        self.grid_ = grid
        self.samples_ = fs
        self.coef_samples_ = xs[:, M:]
        self.coef_ = xs[:, M:].mean(axis=0)
        self.log_intensity_ = fs.mean(axis=0).reshape(ny, nx)
        self.log_intensity_var_ = fs.var(axis=0, ddof=1).reshape(ny, nx) if n_samples > 1 else \
            np.zeros((ny, nx))
        self.cell_areas_ = a.reshape(ny, nx)
        self.xgrid_, self.ygrid_ = grid.xgrid, grid.ygrid
        self.acceptance_rate_ = acc_post / max(1, n_samples * thin)
        self.step_size_ = eps
        self.variance_ = sigma2
        self.length_scale_ = phi
        self.n_iter_ = total
        self.converged_ = bool(0.4 <= self.acceptance_rate_ <= 0.75)
        return self

    _log_intensity_at = GridLaplaceLGCP._log_intensity_at

    def _expected_count(self, region):
        """Sample average over the cells centred in ``region``."""
        mask = _region_mask(region, self.grid_.centres)
        return float(np.mean(np.exp(self.samples_[:, mask]) @ self.cell_areas_.ravel()[mask]))


def _whitened_posterior(lap, Z, nu, sigma2, phi):
    """The grid posterior of ``(g, beta)`` in the coordinates ``z`` of ``x = x0 + L z`` (``x0`` the mode of
    the fitted ``lap``, ``L L^T`` its Laplace covariance): returns ``x0``, ``L`` and ``z -> (log p, grad)``."""
    grid = lap.grid_
    y = lap.counts_.ravel()
    a = lap.cell_areas_.ravel()
    M, p = y.size, Z.shape[1]
    K = matern_covariance(np.sqrt(((grid.centres[:, None] - grid.centres[None]) ** 2).sum(-1)),
                          sigma2, phi, nu)
    Kc = sla.cho_factor(K + 1e-10 * sigma2 * np.eye(M), lower=True)
    f_hat = lap.log_intensity_.ravel()
    lam = a * np.exp(f_hat)
    # joint negative Hessian in (g, beta) at the mode
    Kinv = sla.cho_solve(Kc, np.eye(M))
    H = np.zeros((M + p, M + p))
    H[:M, :M] = Kinv + np.diag(lam)
    H[:M, M:] = lam[:, None] * Z
    H[M:, :M] = H[:M, M:].T
    H[M:, M:] = Z.T @ (lam[:, None] * Z)
    Hc = np.linalg.cholesky(H + 1e-12 * np.trace(H) / (M + p) * np.eye(M + p))
    # covariance C = H^-1 = L L^T with L = Hc^-T
    L = sla.solve_triangular(Hc, np.eye(M + p), lower=True).T
    beta0 = lap.coef_
    x0 = np.concatenate([f_hat - Z @ beta0, beta0])

    def logp_grad(z):
        x = x0 + L @ z
        g, b = x[:M], x[M:]
        f = g + Z @ b
        e = a * np.exp(np.minimum(f, 700.0))
        Kig = sla.cho_solve(Kc, g)
        lp = float(y @ f - e.sum() - 0.5 * g @ Kig)
        gr = np.concatenate([y - e - Kig, Z.T @ (y - e)])
        return lp, L.T @ gr

    return x0, L, logp_grad


def _mala(logp_grad, dim, burn_in, n_samples, thin, rng):
    """MALA from ``z = 0`` with the step adapted during burn-in (Robbins-Monro on ``log eps`` towards the 0.574
    acceptance rate); returns the kept states, the accepted moves after burn-in, the step and the iterations."""
    eps = 1.0 / dim ** (1.0 / 6.0)
    z = np.zeros(dim)
    lp, gr = logp_grad(z)
    total = burn_in + n_samples * thin
    keep = np.empty((n_samples, dim))
    acc_post = 0
    k = 0
    target = 0.574
    for t in range(total):
        prop = z + 0.5 * eps ** 2 * gr + eps * rng.standard_normal(dim)
        lp2, gr2 = logp_grad(prop)
        fwd = prop - z - 0.5 * eps ** 2 * gr
        bwd = z - prop - 0.5 * eps ** 2 * gr2
        log_r = lp2 - lp - (bwd @ bwd - fwd @ fwd) / (2 * eps ** 2)
        accept = math.log(rng.random()) < min(0.0, log_r)
        if accept:
            z, lp, gr = prop, lp2, gr2
        if t < burn_in:
            eps *= math.exp((float(accept) - target) / (t + 1) ** 0.6)
        else:
            acc_post += accept
            if (t - burn_in) % thin == thin - 1:
                keep[k] = z
                k += 1
    return keep, acc_post, eps, total
