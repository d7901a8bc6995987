"""Grid Laplace approximation of an LGCP (:class:`GridLaplaceLGCP`, see :mod:`.baselines`): the Matérn prior on
the cells and the solver of ``I + W^½ K W^½``."""

from __future__ import annotations

import math
import time
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.linalg as sla
import scipy.optimize as sopt
import scipy.sparse.linalg as spla
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, Options, StrOptions

from ..._validation import (
    RANDOM_STATE_CONSTRAINTS,
    OrderedStrOptions,
    check_random_state,
)
from .._simulate import _embedding_eigenvalues, _gaussian_fields, matern_covariance
from .._window import Window
from ._baselines_common import (
    _DENSE_MAX_CELLS,
    _MAX_STEP,
    _check_points,
    _design,
    _Grid,
    _grid_shape,
    _LGCPMixin,
    _region_mask,
    _window_and_length_scale,
)


class _GridPrior:
    """Matérn prior on the cell centres: ``apply(v) = K v``; dense matrix or FFT on a torus."""

    def __init__(self, grid, variance, length_scale, nu, mode):
        self.grid, self.mode = grid, mode
        self.variance, self.length_scale, self.nu = variance, length_scale, nu
        nx, ny = grid.nx, grid.ny
        if mode == "dense":
            c = grid.centres
            D = np.sqrt(((c[:, None, :] - c[None, :, :]) ** 2).sum(-1))
            self.K = matern_covariance(D, variance, length_scale, nu)
            self.diag = np.full(nx * ny, variance)
        else:
            mx, my = 2 * nx, 2 * ny
            ix, iy = np.arange(mx), np.arange(my)
            dx = np.minimum(ix, mx - ix) * grid.hx
            dy = np.minimum(iy, my - iy) * grid.hy
            base = matern_covariance(np.sqrt(dx[None, :] ** 2 + dy[:, None] ** 2), variance, length_scale, nu)
            self.eig = np.fft.rfft2(base)
            self.shape_t = (my, mx)
            self.diag = np.full(nx * ny, variance)

    def apply(self, v):
        if self.mode == "dense":
            return self.K @ v
        if v.ndim == 2:
            return self.apply_cols(v)
        nx, ny = self.grid.nx, self.grid.ny
        V = v.reshape(ny, nx)
        pad = np.zeros(self.shape_t)
        pad[:ny, :nx] = V
        out = np.fft.irfft2(np.fft.rfft2(pad) * self.eig, s=self.shape_t)
        return out[:ny, :nx].ravel()

    def apply_cols(self, V):
        """``K V`` for a matrix ``V`` of shape (M, r): batched FFT products."""
        if self.mode == "dense":
            return self.K @ V
        nx, ny = self.grid.nx, self.grid.ny
        r = V.shape[1]
        pad = np.zeros((r,) + self.shape_t)
        pad[:, :ny, :nx] = V.T.reshape(r, ny, nx)
        out = np.fft.irfft2(np.fft.rfft2(pad) * self.eig[None], s=self.shape_t)
        return out[:, :ny, :nx].reshape(r, nx * ny).T

    def sample(self, rng, n):
        """``n`` exact draws from N(0, K) (dense: Cholesky; fft: circulant embedding)."""
        if self.mode == "dense":
            L = np.linalg.cholesky(self.K + 1e-10 * self.variance * np.eye(self.K.shape[0]))
            return L @ rng.standard_normal((self.K.shape[0], n))
        g = self.grid
        lam = _embedding_eigenvalues(g.nx, g.ny, g.hx, g.hy, self.variance, self.length_scale, self.nu)
        return np.column_stack([f.ravel() for f in _gaussian_fields(lam, g.nx, g.ny, n, rng)])


class _BSolver:
    """Solves with ``B = I + W^½ K W^½`` (dense Cholesky or CG with FFT products)."""

    def __init__(self, prior, w, cg_tol):
        self.prior, self.sw = prior, np.sqrt(w)
        self.cg_tol = cg_tol
        self.cg_iters = 0
        M = w.size
        if prior.mode == "dense":
            B = np.eye(M) + self.sw[:, None] * prior.K * self.sw[None, :]
            self.L = sla.cholesky(B, lower=True)
            self.logdet = 2.0 * float(np.sum(np.log(np.diag(self.L))))
        else:
            self.L = None
            self.logdet = float("nan")
            sw = self.sw
            self.op = spla.LinearOperator((M, M), matvec=lambda v: v + sw * prior.apply(sw * v.ravel()),
                                          dtype=np.float64)
            self.pre = 1.0 / (1.0 + w * prior.diag)

    def solve(self, r):
        if self.L is not None:
            return sla.cho_solve((self.L, True), r)
        if r.ndim == 2:
            return self._block_pcg(r)
        count = [0]

        def cb(_):
            count[0] += 1

        pre = spla.LinearOperator(self.op.shape, matvec=lambda v: self.pre * v.ravel(), dtype=np.float64)
        x, info = spla.cg(self.op, r, rtol=self.cg_tol, atol=0.0, maxiter=2000, M=pre, callback=cb)
        self.cg_iters += count[0]
        if info != 0:  # pragma: no cover - B is SPD and well conditioned
            warnings.warn(f"CG on I + W^1/2 K W^1/2 stopped after {info} iterations without reaching "
                          f"rtol={self.cg_tol:g}.", RuntimeWarning, stacklevel=3)
        return x

    def _matvec_cols(self, V):
        """``B V`` for the columns of ``V`` (one batched FFT product)."""
        return V + self.sw[:, None] * self.prior.apply_cols(self.sw[:, None] * V)

    def _block_pcg(self, R, maxiter=2000):
        """Jacobi-preconditioned CG run on every column of ``R`` at once (independent recursions)."""
        X = np.zeros_like(R)
        Res = R.copy()
        Zp = self.pre[:, None] * Res
        Pd = Zp.copy()
        rz = np.sum(Res * Zp, axis=0)
        bnorm = np.maximum(np.linalg.norm(R, axis=0), 1e-300)
        for it in range(maxiter):
            active = np.linalg.norm(Res, axis=0) > self.cg_tol * bnorm
            if not active.any():
                break
            AP = self._matvec_cols(Pd)
            pap = np.sum(Pd * AP, axis=0)
            alpha = np.where(active, rz / np.where(pap > 0, pap, 1.0), 0.0)
            X += alpha * Pd
            Res -= alpha * AP
            Zp = self.pre[:, None] * Res
            rz_new = np.sum(Res * Zp, axis=0)
            beta = np.where(active, rz_new / np.where(rz > 0, rz, 1.0), 0.0)
            Pd = Zp + beta * Pd
            rz = rz_new
            self.cg_iters += 1
        return X

    def A_inv(self, v):
        """``(K^-1 + W)^-1 v`` as ``(K c, c)``: the g-form and its alpha-form ``c = K^-1 (K c)``."""
        Kv = self.prior.apply(v)
        c = v - self.sw[:, None] * self.solve(self.sw[:, None] * Kv) if v.ndim == 2 else \
            v - self.sw * self.solve(self.sw * Kv)
        return self.prior.apply(c), c


class GridLaplaceLGCP(_LGCPMixin, BaseEstimator):
    r"""Laplace approximation of an LGCP on a regular grid (point_process reconstruction notes, section 3, item 3).

    Model: counts ``y_c`` in cell ``c`` (area ``a_c`` inside the window) are Poisson(``a_c e^{f_c}``),
    ``f = Z beta + g`` with ``g ~ N(0, K)`` (Matérn on the cell centres) and a flat prior on ``beta``.
    The mode of ``(g, beta)`` is found by damped Newton steps (Rasmussen & Williams 2006, Alg. 3.1,
    extended with the ``beta`` block by a p x p Schur complement); the posterior is the Gaussian at
    the mode with precision the negative Hessian.

    Parameters
    ----------
    window : tuple or (V, 2) array
    grid : int or (nx, ny), default=32
    nu : {0.5, 1.5}, default=0.5
    variance : float > 0, default=1.0
    length_scale : float > 0 or "auto", default="auto" (0.1 x the bounding-box diagonal)
    optimize_hyperparameters : bool, default=False
        Maximise the Laplace evidence over (log variance, log length_scale) by Nelder-Mead
        (dense solver only).
    solver : {"auto", "dense", "fft"}, default="auto"
        ``"auto"``: dense up to 4096 cells, else fft.
    n_var_samples : int, default=64
        fft solver: exact perturbation samples of the Laplace posterior used to estimate the
        variances (relative sd error about sqrt(2 / n_var_samples)).
    max_iter : int, default=50
        Newton iterations.
    tol : float, default=1e-8
        Stop when the objective changes by less than ``tol * (1 + |objective|)``.
    random_state : None, int or Generator
        fft solver: the variance samples.

    Attributes
    ----------
    log_intensity_ : (ny, nx) posterior mean of ``f`` on the cells (row = y)
    log_intensity_var_ : (ny, nx) posterior variance of ``f``
    coef_, variance_, length_scale_, log_marginal_likelihood_ (dense only; NaN for fft),
    n_iter_, converged_, xgrid_, ygrid_, cell_areas_ (ny, nx)
    """

    _parameter_constraints: dict = {
        "grid": [Interval(Integral, 2, None, closed="left"), tuple, list],
        "length_scale": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "n_var_samples": [Interval(Integral, 2, None, closed="left")],
        "nu": [Options(Real, {0.5, 1.5})],
        "optimize_hyperparameters": ["boolean"],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "solver": [OrderedStrOptions(("auto", "dense", "fft"))],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "variance": [Interval(Real, 0, None, closed="neither")],
        "window": [tuple, list, np.ndarray, Window],  # required; its bounds or vertices: checked by Window.from_any
    }

    def __init__(self, *, window=None, grid=32, nu=0.5, variance=1.0, length_scale="auto",
                 optimize_hyperparameters=False, solver="auto", n_var_samples=64, max_iter=50, tol=1e-8,
                 random_state=None):
        self.window = window
        self.grid = grid
        self.nu = nu
        self.variance = variance
        self.length_scale = length_scale
        self.optimize_hyperparameters = optimize_hyperparameters
        self.solver = solver
        self.n_var_samples = n_var_samples
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    # -- mode finding ---------------------------------------------------------------
    def _newton(self, prior, y, a, Z, state, max_iter, tol):
        M = y.size
        if state is None:
            alpha = np.zeros(M)
            beta = np.linalg.lstsq(Z, np.full(M, math.log(max(y.sum(), 0.5) / a.sum())), rcond=None)[0]
        else:  # warm start from another prior: keep alpha and beta, make g = K alpha consistent
            alpha, beta = state[1].copy(), state[2].copy()
        g = prior.apply(alpha)

        def psi(g_, al_, b_):
            f_ = g_ + Z @ b_
            return float(y @ f_ - a @ np.exp(np.minimum(f_, 700.0)) - 0.5 * g_ @ al_)

        obj = psi(g, alpha, beta)
        converged = False
        it = 0
        solver = None
        for it in range(1, max_iter + 1):
            f = g + Z @ beta
            lam = a * np.exp(np.minimum(f, 700.0))
            w = np.maximum(lam, 1e-300)
            solver = _BSolver(prior, w, self._cg_tol)
            b = w * g + (y - lam)
            gb, cb = solver.A_inv(b)
            WZ = w[:, None] * Z
            gWZ, cWZ = solver.A_inv(WZ)
            S = Z.T @ WZ - WZ.T @ gWZ
            rhs = Z.T @ (y - lam) - WZ.T @ gb + WZ.T @ g
            dbeta = np.linalg.solve(S + 1e-12 * np.trace(S) * np.eye(S.shape[0]), rhs)
            g_new = gb - gWZ @ dbeta
            a_new = cb - cWZ @ dbeta
            dg, dal = g_new - g, a_new - alpha
            step = max(np.max(np.abs(dg + Z @ dbeta)), 1e-300)
            tau = min(1.0, _MAX_STEP / step)
            while True:
                cand = psi(g + tau * dg, alpha + tau * dal, beta + tau * dbeta)
                if cand >= obj - 1e-12 * abs(obj) or tau < 1e-10:
                    break
                tau *= 0.5
            g, alpha, beta = g + tau * dg, alpha + tau * dal, beta + tau * dbeta
            change = cand - obj
            obj = cand
            if abs(change) < tol * (1.0 + abs(obj)) and tau == 1.0:
                converged = True
                break
        # final curvature at the mode
        f = g + Z @ beta
        w = np.maximum(a * np.exp(np.minimum(f, 700.0)), 1e-300)
        solver = _BSolver(prior, w, self._cg_tol)
        return (g, alpha, beta), obj, solver, w, it, converged

    def _evidence(self, obj, solver):
        return obj - 0.5 * solver.logdet

    def _fit(self, X, covariates):
        win, phi, diam = _window_and_length_scale(self.window, self.length_scale)
        X = _check_points(X, win)
        nx, ny, nu, sigma2, opt, mode, max_iter, tol, nvs, rng = self._settings()
        self._cg_tol = 1e-10

        grid = _Grid(win, nx, ny)
        y = grid.counts(X)
        a = grid.areas(y)
        Z = _design(covariates, grid.centres)
        t0 = time.perf_counter()
        n_total = 0
        if opt:
            sigma2, phi, n_total = self._search_hyperparameters(grid, y, a, Z, nu, sigma2, phi, diam, max_iter, tol)
            # the mode is recomputed from scratch: the warm start is not reused for the final fit
        prior = _GridPrior(grid, sigma2, phi, nu, mode)
        state, obj, solver, w, it, converged = self._newton(prior, y, a, Z, None, max_iter, tol)
        g, alpha, beta = state
        mean = g + Z @ beta
        var = self._posterior_var(prior, solver, w, Z, rng, nvs)

        self.window_ = win
        self.grid_ = grid
        self.solver_ = mode
        self.coef_ = beta
        self.variance_ = sigma2
        self.length_scale_ = phi
        self.log_intensity_ = mean.reshape(ny, nx)
        self.log_intensity_var_ = var.reshape(ny, nx)
        self.log_marginal_likelihood_ = self._evidence(obj, solver) if mode == "dense" else float("nan")
        self.objective_ = obj
        self.n_iter_ = it + n_total
        self.converged_ = bool(converged)
        self.xgrid_, self.ygrid_ = grid.xgrid, grid.ygrid
        self.cell_areas_ = a.reshape(ny, nx)
        self.counts_ = y.reshape(ny, nx)
        self.fit_time_ = time.perf_counter() - t0
        return self

    def _settings(self):
        """The checked grid shape, ``nu``, variance, search flag, solver, ``max_iter``, ``tol``,
        ``n_var_samples`` and random generator."""
        nx, ny = _grid_shape(self.grid)
        nu, sigma2, opt = float(self.nu), float(self.variance), bool(self.optimize_hyperparameters)
        max_iter, tol, nvs = int(self.max_iter), float(self.tol), int(self.n_var_samples)
        mode = self.solver if self.solver != "auto" else ("dense" if nx * ny <= _DENSE_MAX_CELLS else "fft")
        if mode == "dense" and nx * ny > 4 * _DENSE_MAX_CELLS:
            raise ValueError(f"solver='dense' on {nx * ny} cells needs too much memory; use solver='fft'.")
        if opt and mode != "dense":
            raise ValueError("optimize_hyperparameters=True needs the dense solver (the fft solver has no "
                             "log-determinant); use a grid with <= 4096 cells or fix the hyperparameters.")
        rng = check_random_state(self.random_state)
        return nx, ny, nu, sigma2, opt, mode, max_iter, tol, nvs, rng

    def _search_hyperparameters(self, grid, y, a, Z, nu, sigma2, phi, diam, max_iter, tol):
        """Maximise the Laplace evidence over (log variance, log length scale) by Nelder-Mead, each Newton
        solve warm-started from the previous mode; returns the variance, the length scale and the Newton
        iterations spent."""
        state = [None]
        n_total = [0]

        def negev(theta):
            s2, ph = math.exp(theta[0]), math.exp(theta[1])
            pr = _GridPrior(grid, s2, ph, nu, "dense")
            st, obj, solver, _, it, _ = self._newton(pr, y, a, Z, state[0], max_iter, tol)
            n_total[0] += it
            state[0] = st
            return -self._evidence(obj, solver)

        lo = np.log([1e-4, 0.01 * diam])
        hi = np.log([20.0, 2.0 * diam])
        res = sopt.minimize(negev, np.log([sigma2, phi]), method="Nelder-Mead",
                            bounds=list(zip(lo, hi)), options=dict(xatol=1e-3, fatol=1e-4, maxfev=80))
        return float(np.exp(res.x[0])), float(np.exp(res.x[1])), n_total[0]

    def _posterior_var(self, prior, solver, w, Z, rng, nvs):
        """diag of the posterior covariance of ``f = g + Z beta`` (g, beta jointly Gaussian)."""
        WZ = w[:, None] * Z
        gWZ, _ = solver.A_inv(WZ)
        S = Z.T @ WZ - WZ.T @ gWZ
        U = Z - gWZ
        beta_part = np.einsum("ij,jk,ik->i", U, np.linalg.inv(S), U)
        if prior.mode == "dense":
            V = sla.solve_triangular(solver.L, solver.sw[:, None] * prior.K, lower=True)
            dA = np.diag(prior.K) - np.sum(V * V, axis=0)
        else:
            # exact samples x ~ N(0, (K^-1 + W)^-1):  x = u + K v - K W^1/2 B^-1 W^1/2 (u + K v)
            # with u ~ N(0, K), v = W^1/2 e, e ~ N(0, I)
            u = prior.sample(rng, nvs)
            v = solver.sw[:, None] * rng.standard_normal((w.size, nvs))
            s = u + prior.apply(v)
            x = s - prior.apply(solver.sw[:, None] * solver.solve(solver.sw[:, None] * s))
            dA = np.mean(x * x, axis=1)
        return np.maximum(dA + beta_part, 1e-300)

    # -- prediction ------------------------------------------------------------------
    def _log_intensity_at(self, Xq, return_std):
        """Piecewise constant on the cells."""
        idx = self.grid_.index(Xq)
        mu = self.log_intensity_.ravel()[idx]
        if return_std:
            return mu, np.sqrt(self.log_intensity_var_.ravel()[idx])
        return mu

    def _expected_count(self, region):
        mask = _region_mask(region, self.grid_.centres)
        lam = np.exp(self.log_intensity_.ravel() + 0.5 * self.log_intensity_var_.ravel())
        return float(np.sum((self.cell_areas_.ravel() * lam)[mask]))
