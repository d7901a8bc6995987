r"""Baselines for log-Gaussian Cox process inference (point_process reconstruction notes, section 3), with VoGCAM's fit/predict API.

* :class:`GridLaplaceLGCP` — counts on a regular grid, Poisson(a e^{f_c}), Gaussian prior on the
  cell values, Laplace approximation at the posterior mode found by Newton's method
  (Rasmussen & Williams 2006, Alg. 3.1/3.2; GPstuff ``demo_lgcp``). The intercept/covariate
  coefficients are part of the Newton state (flat prior, profiled jointly). Two solvers: ``"dense"``
  (Cholesky of ``B = I + W^½ K W^½``; exact variances and the Laplace evidence) and ``"fft"`` (``K``
  applied by FFT on a circulant embedding, ``B`` solved by conjugate gradients; variances estimated
  from exact perturbation samples of the Laplace posterior).
* :class:`FRKVariationalLGCP` — VIFRK (Dovers, Stoklosa & Warton, JCGS 2023; R package ``scampr``):
  bisquare fixed-rank-kriging basis at two resolutions, a mean-field Gaussian variational posterior on
  the basis weights, one prior variance per resolution profiled in closed form, regular-grid
  quadrature, all parameters fitted jointly by L-BFGS on the analytic gradient. *Reconstructed*:
  ``FRK::auto_basis`` is mimicked (spacing ratio 3 between resolutions, radius 1.5 spacings).
* :class:`GridMALALGCP` — Metropolis-adjusted Langevin sampling of the same grid posterior as
  :class:`GridLaplaceLGCP` (hyperparameters fixed): the MCMC oracle of the tests (Møller, Syversveen
  & Waagepetersen 1998; Roberts & Rosenthal 1998 for the 0.574 acceptance target).
* :class:`SVGPCoxProcess` — a sparse variational GP (inducing points on a grid, ``gpytorch``) with the
  Poisson-process likelihood on regular-grid quadrature; the 2-D, Pyro-free port of gpytorch's
  Cox-process example (point_process reconstruction notes, section 3, item 4). Needs the ``gpu`` extra (torch, gpytorch); imported
  lazily.

Every estimator takes ``window=`` ((xmin, xmax, ymin, ymax) or a (V, 2) polygon) and implements
``fit(X, covariates=None)`` (``covariates``: a callable mapping (m, 2) locations to an (m, p) array,
without an intercept column — the intercept is always included), ``predict_log_intensity(Xq,
return_std=False)``, ``predict_intensity(Xq, alpha=None)`` and ``expected_count(region=None)``.
Fitted ``coef_`` is ``[intercept, covariate coefficients...]`` on the log-intensity scale of the
user's coordinates. Kernels: Matérn ``nu`` = 1/2, ``sigma2 exp(-r/phi)``; ``nu`` = 3/2,
``sigma2 (1 + sqrt3 r/phi) exp(-sqrt3 r/phi)``.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import scipy.linalg as sla
import scipy.optimize as sopt
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from sklearn.base import BaseEstimator

from .._validation import check_array, check_bool, check_random_state, check_scalar_float, check_scalar_int
from ._simulate import _embedding_eigenvalues, _gaussian_fields, _inside_fraction, matern_covariance
from ._vogcam_blocks import lognormal_band
from ._window import MAX_COORD, Window
from numbers import Integral, Real
from sklearn.utils._param_validation import Interval, Options, StrOptions
from .._validation import OrderedStrOptions, RANDOM_STATE_CONSTRAINTS, validate_params

__all__ = ["GridLaplaceLGCP", "FRKVariationalLGCP", "GridMALALGCP", "SVGPCoxProcess"]

#: A cell that holds a point but meets the window in (numerically) zero area gets this fraction of
#: a cell's area, so the Poisson likelihood stays bounded (point_process reconstruction notes, section 7: w > 0 where y > 0).
_MIN_CELL_FRACTION = 1e-6
#: Newton steps on the log-intensity are clipped to this sup-norm (overflow guard, point_process reconstruction notes, section 7).
_MAX_STEP = 5.0
#: Largest grid for the dense solver (M x M Cholesky).
_DENSE_MAX_CELLS = 4096


# ----------------------------------------------------------------------------- shared helpers
def _check_points(X, win):
    X = check_array(X, "X", allow_empty=True, finite=False)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"'X' must have shape (n, 2); got an array of shape {X.shape}.")
    if X.shape[0] == 0:
        raise ValueError("'X' has n = 0 points; a baseline fit needs at least one point.")
    if not np.all(np.isfinite(X)):
        bad = int(np.argwhere(~np.isfinite(X))[0, 0])
        raise ValueError(f"'X' must contain only finite coordinates; got NaN or inf in row {bad}.")
    inside = win.contains(X)
    if not np.all(inside):
        bad = int(np.flatnonzero(~inside)[0])
        raise ValueError(f"'X' has {int((~inside).sum())} point(s) outside the window, e.g. row {bad} "
                         f"= {X[bad].tolist()}; window bounds {win.bounds}.")
    return X


def _check_query(Xq):
    Xq = check_array(Xq, "Xq", allow_empty=True, finite=False)
    if Xq.ndim != 2 or Xq.shape[1] != 2:
        raise ValueError(f"'Xq' must have shape (m, 2); got an array of shape {Xq.shape}.")
    if Xq.shape[0] == 0:
        raise ValueError("'Xq' must hold at least one location (m >= 1); got an empty array.")
    if not np.all(np.isfinite(Xq)):
        raise ValueError("'Xq' must contain only finite coordinates (no NaN or inf).")
    if float(np.abs(Xq).max()) > MAX_COORD:
        raise ValueError(f"'Xq' coordinates must be at most {MAX_COORD:g} in absolute value (squared distances must "
                         f"stay in the float64 range); got {float(np.abs(Xq).max())!r}.")
    return Xq


def _design(covariates, coords, name="covariates"):
    """``[1, z(s)]`` at ``coords``: (m, 1 + p)."""
    ones = np.ones((coords.shape[0], 1))
    if covariates is None:
        return ones
    if not callable(covariates):
        raise TypeError(f"'{name}' must be a callable mapping (m, 2) locations to an (m, p) array; "
                        f"got {type(covariates).__name__}.")
    Z = np.asarray(covariates(coords), dtype=np.float64)
    if Z.ndim == 1:
        Z = Z[:, None]
    if Z.ndim != 2 or Z.shape[0] != coords.shape[0]:
        raise ValueError(f"'{name}' must return an array of shape ({coords.shape[0]}, p); got {Z.shape}.")
    if not np.all(np.isfinite(Z)):
        raise ValueError(f"'{name}' returned NaN or inf values.")
    return np.hstack([ones, Z])


def _check_nu(nu):
    if isinstance(nu, (bool, np.bool_)) or nu not in (0.5, 1.5):
        raise ValueError(f"'nu' must be one of {{0.5, 1.5}}; got {nu!r}.")
    return float(nu)


def _grid_shape(grid, name="grid"):
    if isinstance(grid, (tuple, list)):
        if len(grid) != 2:
            raise ValueError(f"'{name}' must be an int >= 2 or a pair (nx, ny); got {grid!r}.")
        return (check_scalar_int(grid[0], f"{name}[0]", low=2), check_scalar_int(grid[1], f"{name}[1]", low=2))
    g = check_scalar_int(grid, name, low=2)
    return g, g


class _Grid:
    """Regular grid of cells over the window's bounding box (row = y cell, column = x cell)."""

    def __init__(self, win, nx, ny):
        self.win = win
        self.nx, self.ny = nx, ny
        xmin, xmax, ymin, ymax = win.bounds
        self.hx, self.hy = (xmax - xmin) / nx, (ymax - ymin) / ny
        self.xgrid = xmin + (np.arange(nx) + 0.5) * self.hx
        self.ygrid = ymin + (np.arange(ny) + 0.5) * self.hy
        gx, gy = np.meshgrid(self.xgrid, self.ygrid)
        self.centres = np.column_stack([gx.ravel(), gy.ravel()])
        self.frac = _inside_fraction(win, self.xgrid, self.ygrid, self.hx, self.hy).ravel()
        self.cell_area = self.hx * self.hy

    def index(self, xy):
        xmin, xmax, ymin, ymax = self.win.bounds
        j = np.clip(np.floor((xy[:, 0] - xmin) / self.hx).astype(np.int64), 0, self.nx - 1)
        i = np.clip(np.floor((xy[:, 1] - ymin) / self.hy).astype(np.int64), 0, self.ny - 1)
        return i * self.nx + j

    def counts(self, X):
        return np.bincount(self.index(X), minlength=self.nx * self.ny).astype(np.float64)

    def areas(self, y):
        frac = self.frac.copy()
        frac[(y > 0) & (frac < _MIN_CELL_FRACTION)] = _MIN_CELL_FRACTION
        return self.cell_area * frac


def _region_mask(region, coords):
    if region is None:
        return np.ones(coords.shape[0], dtype=bool)
    return Window.from_any(region).contains(coords)


class _LGCPMixin:
    """``predict_intensity`` from ``predict_log_intensity`` (lognormal mean and quantiles)."""

    def predict_intensity(self, Xq, alpha=None):
        """Posterior mean intensity ``exp(mu + v/2)``; with ``alpha``, also the lognormal
        ``(1 - alpha)`` band ``exp(mu -/+ z_{alpha/2} sqrt(v))``: returns ``(mean, lower, upper)``."""
        mu, sd = self.predict_log_intensity(Xq, return_std=True)
        return lognormal_band(mu, sd, alpha)

    def _check_fitted(self):
        if not hasattr(self, "coef_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call 'fit' first.")


def _window_and_length_scale(window, length_scale):
    win = Window.from_any(window)
    xmin, xmax, ymin, ymax = win.bounds
    diam = math.hypot(xmax - xmin, ymax - ymin)
    if isinstance(length_scale, str):
        if length_scale != "auto":
            raise ValueError(f"'length_scale' must be a positive float or 'auto'; got {length_scale!r}.")
        phi = 0.1 * diam
    else:
        phi = check_scalar_float(length_scale, "length_scale", low=0.0, closed="neither")
    return win, phi, diam


# ----------------------------------------------------------------------------- grid Laplace
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
        "window": "no_validation",  # a tuple, a (V, 2) polygon, a Window or None: checked when the window is built
    }

    def __init__(self, window=None, grid=32, nu=0.5, variance=1.0, length_scale="auto",
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

    def fit(self, X, covariates=None):
        """Fit to the points ``X`` (n, 2) inside the window; ``covariates`` as in the module docstring.

        Parameters
        ----------
        X : array-like of shape (n, 2)
            The points, inside the window.
        covariates : callable or array-like, optional
            Covariates, as in the module docstring.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        win, phi, diam = _window_and_length_scale(self.window, self.length_scale)
        X = _check_points(X, win)
        nx, ny = _grid_shape(self.grid)
        nu = _check_nu(self.nu)
        sigma2 = check_scalar_float(self.variance, "variance", low=0.0, closed="neither")
        opt = check_bool(self.optimize_hyperparameters, "optimize_hyperparameters")
        if self.solver not in ("auto", "dense", "fft"):
            raise ValueError(f"'solver' must be one of {{'auto', 'dense', 'fft'}}; got {self.solver!r}.")
        max_iter = check_scalar_int(self.max_iter, "max_iter", low=1)
        tol = check_scalar_float(self.tol, "tol", low=0.0, closed="neither")
        nvs = check_scalar_int(self.n_var_samples, "n_var_samples", low=2)
        mode = self.solver if self.solver != "auto" else ("dense" if nx * ny <= _DENSE_MAX_CELLS else "fft")
        if mode == "dense" and nx * ny > 4 * _DENSE_MAX_CELLS:
            raise ValueError(f"solver='dense' on {nx * ny} cells needs too much memory; use solver='fft'.")
        if opt and mode != "dense":
            raise ValueError("optimize_hyperparameters=True needs the dense solver (the fft solver has no "
                             "log-determinant); use a grid with <= 4096 cells or fix the hyperparameters.")
        rng = check_random_state(self.random_state)
        self._cg_tol = 1e-10

        grid = _Grid(win, nx, ny)
        y = grid.counts(X)
        a = grid.areas(y)
        Z = _design(covariates, grid.centres)
        t0 = time.perf_counter()
        n_total = 0
        if opt:
            state = [None]

            def negev(theta):
                nonlocal n_total
                s2, ph = math.exp(theta[0]), math.exp(theta[1])
                pr = _GridPrior(grid, s2, ph, nu, "dense")
                st, obj, solver, _, it, _ = self._newton(pr, y, a, Z, state[0], max_iter, tol)
                n_total += it
                state[0] = st
                return -self._evidence(obj, solver)

            lo = np.log([1e-4, 0.01 * diam])
            hi = np.log([20.0, 2.0 * diam])
            res = sopt.minimize(negev, np.log([sigma2, phi]), method="Nelder-Mead",
                                bounds=list(zip(lo, hi)), options=dict(xatol=1e-3, fatol=1e-4, maxfev=80))
            sigma2, phi = float(np.exp(res.x[0])), float(np.exp(res.x[1]))
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
    def predict_log_intensity(self, Xq, return_std=False):
        """Posterior mean (and sd) of the log-intensity at ``Xq`` (piecewise constant on cells).

        Parameters
        ----------
        Xq : array-like of shape (m, 2)
            Query locations, in the units of the fitted pattern.
        return_std : bool, default=False
            Also return the posterior standard deviation.

        Returns
        -------
        mean : ndarray of shape (m,)
            Posterior mean of the log-intensity.
        std : ndarray of shape (m,)
            Posterior standard deviation; only with ``return_std=True``.
        """
        self._check_fitted()
        Xq = _check_query(Xq)
        idx = self.grid_.index(Xq)
        mu = self.log_intensity_.ravel()[idx]
        if return_std:
            return mu, np.sqrt(self.log_intensity_var_.ravel()[idx])
        return mu

    def expected_count(self, region=None):
        """``sum_c a_c E exp(f_c)`` over the cells whose centre lies in ``region`` (all if None).

        Parameters
        ----------
        region : None or window, default=None
            A rectangle ``(xmin, xmax, ymin, ymax)``, a polygon (V, 2) or a :class:`Window` (``None``: the
            whole window).

        Returns
        -------
        float
            The posterior expected count.
        """
        self._check_fitted()
        mask = _region_mask(region, self.grid_.centres)
        lam = np.exp(self.log_intensity_.ravel() + 0.5 * self.log_intensity_var_.ravel())
        return float(np.sum((self.cell_areas_.ravel() * lam)[mask]))


# ----------------------------------------------------------------------------- MALA oracle
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
        "window": "no_validation",  # a tuple, a (V, 2) polygon, a Window or None: checked when the window is built
    }

    def __init__(self, window=None, grid=16, nu=0.5, variance=1.0, length_scale="auto", n_samples=2000,
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

    def fit(self, X, covariates=None):
        """Sample the grid posterior given the points ``X`` (n, 2).

        Parameters
        ----------
        X : array-like of shape (n, 2)
            The points, inside the window.
        covariates : callable or array-like, optional
            Covariates, as in the module docstring.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        win, phi, _ = _window_and_length_scale(self.window, self.length_scale)
        X = _check_points(X, win)
        nx, ny = _grid_shape(self.grid)
        if nx * ny > _DENSE_MAX_CELLS:
            raise ValueError(f"'grid' has {nx * ny} cells; GridMALALGCP is dense, use at most "
                             f"{_DENSE_MAX_CELLS}.")
        nu = _check_nu(self.nu)
        sigma2 = check_scalar_float(self.variance, "variance", low=0.0, closed="neither")
        n_samples = check_scalar_int(self.n_samples, "n_samples", low=1)
        burn_in = check_scalar_int(self.burn_in, "burn_in", low=0)
        thin = check_scalar_int(self.thin, "thin", low=1)
        rng = check_random_state(self.random_state)

        lap = GridLaplaceLGCP(window=win, grid=(nx, ny), nu=nu, variance=sigma2, length_scale=phi,
                              solver="dense").fit(X, covariates=covariates)
        grid = lap.grid_
        y = lap.counts_.ravel()
        a = lap.cell_areas_.ravel()
        Z = _design(covariates, grid.centres)
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

        eps = 1.0 / (M + p) ** (1.0 / 6.0)
        z = np.zeros(M + p)
        lp, gr = logp_grad(z)
        total = burn_in + n_samples * thin
        keep = np.empty((n_samples, M + p))
        acc_post = 0
        k = 0
        target = 0.574
        for t in range(total):
            prop = z + 0.5 * eps ** 2 * gr + eps * rng.standard_normal(M + p)
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

    predict_log_intensity = GridLaplaceLGCP.predict_log_intensity

    def expected_count(self, region=None):
        """Posterior mean of ``sum_c a_c exp(f_c)`` over cells centred in ``region`` (sample average).

        Parameters
        ----------
        region : None or window, default=None
            A rectangle ``(xmin, xmax, ymin, ymax)``, a polygon (V, 2) or a :class:`Window` (``None``: the
            whole window).

        Returns
        -------
        float
            The posterior expected count.
        """
        self._check_fitted()
        mask = _region_mask(region, self.grid_.centres)
        return float(np.mean(np.exp(self.samples_[:, mask]) @ self.cell_areas_.ravel()[mask]))


# ----------------------------------------------------------------------------- VIFRK
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
        "window": "no_validation",  # a tuple, a (V, 2) polygon, a Window or None: checked when the window is built
    }

    def __init__(self, window=None, basis_per_side=(4, 12), quad_grid=64, max_iter=1000, tol=1e-9):
        self.window = window
        self.basis_per_side = basis_per_side
        self.quad_grid = quad_grid
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, X, covariates=None):
        """Fit to the points ``X`` (n, 2).

        Parameters
        ----------
        X : array-like of shape (n, 2)
            The points, inside the window.
        covariates : callable or array-like, optional
            Covariates, as in the module docstring.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        win = Window.from_any(self.window)
        X = _check_points(X, win)
        per = tuple(check_scalar_int(k, "basis_per_side", low=1) for k in self.basis_per_side)
        nx, ny = _grid_shape(self.quad_grid, "quad_grid")
        max_iter = check_scalar_int(self.max_iter, "max_iter", low=1)
        tol = check_scalar_float(self.tol, "tol", low=0.0, closed="neither")
        centres, radii, level = _bisquare_basis(win, per)
        grid = _Grid(win, nx, ny)
        keep = grid.frac > 0
        qc = grid.centres[keep]
        wq = grid.cell_area * grid.frac[keep]
        Phi_q = _bisquare(qc, centres, radii)
        Phi_p = _bisquare(X, centres, radii)
        Xq_ = _design(covariates, qc)
        Xp_ = _design(covariates, X)
        p, K = Xq_.shape[1], centres.shape[0]
        n_lvl = len(per)
        counts = np.bincount(level, minlength=n_lvl).astype(np.float64)
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

    def predict_log_intensity(self, Xq, return_std=False):
        """Variational mean (and sd) of the log-intensity at ``Xq``.

        Parameters
        ----------
        Xq : array-like of shape (m, 2)
            Query locations, in the units of the fitted pattern.
        return_std : bool, default=False
            Also return the posterior standard deviation.

        Returns
        -------
        mean : ndarray of shape (m,)
            Posterior mean of the log-intensity.
        std : ndarray of shape (m,)
            Posterior standard deviation; only with ``return_std=True``.
        """
        self._check_fitted()
        Xq = _check_query(Xq)
        Phi = _bisquare(Xq, self.basis_centres_, self.basis_radii_)
        mu = _design(self._covariates, Xq) @ self.coef_ + Phi @ self.basis_mean_
        if return_std:
            return mu, np.sqrt(Phi.multiply(Phi) @ self.basis_var_)
        return mu

    def expected_count(self, region=None):
        """``sum_q w_q E exp(f(u_q))`` over the quadrature nodes in ``region`` (all if None).

        Parameters
        ----------
        region : None or window, default=None
            A rectangle ``(xmin, xmax, ymin, ymax)``, a polygon (V, 2) or a :class:`Window` (``None``: the
            whole window).

        Returns
        -------
        float
            The posterior expected count.
        """
        self._check_fitted()
        qc, wq = self._quad
        mask = _region_mask(region, qc)
        lam = self.predict_intensity(qc[mask])
        return float(wq[mask] @ lam)


# ----------------------------------------------------------------------------- gpytorch SVGP
class SVGPCoxProcess(_LGCPMixin, BaseEstimator):
    r"""Sparse variational GP Cox process (gpytorch; point_process reconstruction notes, section 3, item 4).

    ``f(s) = x(s)^T beta + g(s)``, ``g ~ GP(0, ScaleKernel(Matern(nu)))`` with a
    ``CholeskyVariationalDistribution`` on ``n_inducing`` inducing points on a fixed regular grid
    (``VariationalStrategy``, whitened). The ELBO::

        sum_i E_q f(x_i) - sum_j w_j exp(E_q f(u_j) + Var_q f(u_j) / 2) - KL(q(u) || p(u))

    with regular-grid quadrature ``(u_j, w_j)``, maximised by Adam over the variational
    parameters, ``beta`` and the kernel hyperparameters. Coordinates are rescaled to the unit box
    internally (reported back in the user's units). float64 throughout; CPU unless ``device=``.

    Parameters
    ----------
    window : tuple or (V, 2) array
    nu : {0.5, 1.5}, default=0.5
    n_inducing : int, default=256 (a sqrt(n) x sqrt(n) grid, rounded)
    quad_grid : int or (nx, ny), default=64
    max_iter : int, default=500
    lr : float, default=0.05
    tol : float, default=1e-7
        Stop when the ELBO, averaged over the last 20 iterations, changes by less than
        ``tol * (1 + |ELBO|)`` per iteration.
    random_state : None or int (torch seed for the parameter initialisation)
    device : str, default="cpu"

    Attributes
    ----------
    coef_, variance_, length_scale_, elbo_, elbo_history_, n_iter_, converged_
    """

    _parameter_constraints: dict = {
        "device": "no_validation",  # None, a str or a torch.device: resolved (and checked) by the backend layer
        "lr": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "n_inducing": [Interval(Integral, 4, None, closed="left")],
        "nu": [Options(Real, {0.5, 1.5})],
        "quad_grid": [Interval(Integral, 2, None, closed="left"), tuple, list],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "tol": [Interval(Real, 0, None, closed="left")],
        "window": "no_validation",  # a tuple, a (V, 2) polygon, a Window or None: checked when the window is built
    }

    def __init__(self, window=None, nu=0.5, n_inducing=256, quad_grid=64, max_iter=500, lr=0.05, tol=1e-7,
                 random_state=None, device="cpu"):
        self.window = window
        self.nu = nu
        self.n_inducing = n_inducing
        self.quad_grid = quad_grid
        self.max_iter = max_iter
        self.lr = lr
        self.tol = tol
        self.random_state = random_state
        self.device = device

    def fit(self, X, covariates=None):
        """Fit to the points ``X`` (n, 2).

        Parameters
        ----------
        X : array-like of shape (n, 2)
            The points, inside the window.
        covariates : callable or array-like, optional
            Covariates, as in the module docstring.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        win = Window.from_any(self.window)
        X = _check_points(X, win)
        nu = _check_nu(self.nu)
        n_ind = check_scalar_int(self.n_inducing, "n_inducing", low=4)
        nx, ny = _grid_shape(self.quad_grid, "quad_grid")
        max_iter = check_scalar_int(self.max_iter, "max_iter", low=1)
        lr = check_scalar_float(self.lr, "lr", low=0.0, closed="neither")
        tol = check_scalar_float(self.tol, "tol", low=0.0)
        try:
            import gpytorch
            import torch
        except ImportError as exc:  # pragma: no cover - the gpu extra is installed in CI
            raise ImportError("SVGPCoxProcess needs torch and gpytorch: pip install 'algos-theory[gpu]'.") from exc
        if self.random_state is not None:
            seed = check_scalar_int(self.random_state, "random_state", low=0)
            torch.manual_seed(seed)
        device = torch.device(self.device)
        dt = torch.float64

        xmin, xmax, ymin, ymax = win.bounds
        shift = np.array([xmin, ymin])
        scale = max(xmax - xmin, ymax - ymin)
        grid = _Grid(win, nx, ny)
        keep = grid.frac > 0
        qc = grid.centres[keep]
        wq = grid.cell_area * grid.frac[keep] / scale ** 2
        Zq = _design(covariates, qc)
        Zp = _design(covariates, X)
        k = max(2, int(round(math.sqrt(n_ind))))
        W, H = (xmax - xmin) / scale, (ymax - ymin) / scale
        kx = max(2, int(round(k * W / max(W, H))))
        ky = max(2, int(round(k * H / max(W, H))))
        gx, gy = np.meshgrid((np.arange(kx) + 0.5) / kx * W, (np.arange(ky) + 0.5) / ky * H)
        inducing = torch.as_tensor(np.column_stack([gx.ravel(), gy.ravel()]), dtype=dt, device=device)

        class _GP(gpytorch.models.ApproximateGP):
            def __init__(self):
                vd = gpytorch.variational.CholeskyVariationalDistribution(inducing.shape[0])
                vs = gpytorch.variational.VariationalStrategy(self, inducing, vd, learn_inducing_locations=False)
                super().__init__(vs)
                self.mean_module = gpytorch.means.ZeroMean()
                self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.MaternKernel(nu=nu))

            def forward(self, x):
                return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

        model = _GP().to(device=device, dtype=dt)
        model.covar_module.base_kernel.lengthscale = 0.1
        model.covar_module.outputscale = 1.0
        beta0 = np.zeros(Zq.shape[1])
        beta0[0] = math.log(X.shape[0] / wq.sum())
        beta = torch.nn.Parameter(torch.as_tensor(beta0, dtype=dt, device=device))
        tq = torch.as_tensor((qc - shift) / scale, dtype=dt, device=device)
        tp = torch.as_tensor((X - shift) / scale, dtype=dt, device=device)
        tZq = torch.as_tensor(Zq, dtype=dt, device=device)
        tZp = torch.as_tensor(Zp, dtype=dt, device=device)
        tw = torch.as_tensor(wq, dtype=dt, device=device)
        n_p = X.shape[0]
        opt = torch.optim.Adam(list(model.parameters()) + [beta], lr=lr)
        history = []
        converged = False
        model.train()
        it = 0
        from gpytorch.utils.errors import NanError, NotPSDError

        def diverged(it, what):
            return ValueError(f"the SVGP optimisation diverged at iteration {it} ({what}) with 'lr' = {lr!r}; use a "
                              f"smaller learning rate.")

        with gpytorch.settings.cholesky_jitter(double_value=1e-8):
            for it in range(1, max_iter + 1):
                opt.zero_grad()
                try:
                    both = model(torch.cat([tp, tq], 0))
                    m, v = both.mean, both.variance
                    fp = m[:n_p] + tZp @ beta
                    fq = m[n_p:] + tZq @ beta
                    elbo = fp.sum() - (tw * torch.exp(torch.clamp(fq + 0.5 * v[n_p:], max=700.0))).sum() \
                        - model.variational_strategy.kl_divergence()
                except (NanError, NotPSDError) as exc:
                    raise diverged(it, type(exc).__name__) from None
                if not math.isfinite(float(elbo.detach())):
                    raise diverged(it, "a non-finite ELBO")
                (-elbo).backward()
                opt.step()
                history.append(float(elbo.detach()))
                if it > 40:
                    recent = np.mean(history[-20:])
                    before = np.mean(history[-40:-20])
                    if abs(recent - before) / 20 < tol * (1 + abs(recent)):
                        converged = True
                        break
        model.eval()
        self._model = model  # no module object on the estimator: it must stay picklable/copyable
        self._shift, self._scale = shift, scale
        self._covariates = covariates
        self._quad = (qc, wq * scale ** 2)
        self._dtype, self._device = dt, device
        self.window_ = win
        self.coef_ = beta.detach().cpu().numpy().copy()
        self.coef_[0] -= 2 * math.log(scale)  # the Jacobian: intensity per unit area of the user's units
        self.variance_ = float(model.covar_module.outputscale.detach())
        self.length_scale_ = float(model.covar_module.base_kernel.lengthscale.detach()) * scale
        self.elbo_ = history[-1]
        self.elbo_history_ = np.asarray(history)
        self.n_iter_ = it
        self.converged_ = converged
        return self

    def predict_log_intensity(self, Xq, return_std=False):
        """Variational mean (and sd) of the log-intensity at ``Xq`` (user's units).

        Parameters
        ----------
        Xq : array-like of shape (m, 2)
            Query locations, in the units of the fitted pattern.
        return_std : bool, default=False
            Also return the posterior standard deviation.

        Returns
        -------
        mean : ndarray of shape (m,)
            Posterior mean of the log-intensity.
        std : ndarray of shape (m,)
            Posterior standard deviation; only with ``return_std=True``.
        """
        self._check_fitted()
        Xq = _check_query(Xq)
        import gpytorch
        import torch

        t = torch.as_tensor((Xq - self._shift) / self._scale, dtype=self._dtype, device=self._device)
        with torch.no_grad(), gpytorch.settings.cholesky_jitter(double_value=1e-8):
            out = self._model(t)
            m = out.mean.cpu().numpy()
            v = out.variance.cpu().numpy()
        mu = m + _design(self._covariates, Xq) @ self.coef_
        if return_std:
            return mu, np.sqrt(np.maximum(v, 0.0))
        return mu

    def expected_count(self, region=None):
        """``sum_j w_j E exp(f(u_j))`` over the quadrature nodes in ``region`` (all if None).

        Parameters
        ----------
        region : None or window, default=None
            A rectangle ``(xmin, xmax, ymin, ymax)``, a polygon (V, 2) or a :class:`Window` (``None``: the
            whole window).

        Returns
        -------
        float
            The posterior expected count.
        """
        self._check_fitted()
        qc, wq = self._quad
        mask = _region_mask(region, qc)
        if not mask.any():
            return 0.0
        return float(wq[mask] @ self.predict_intensity(qc[mask]))
