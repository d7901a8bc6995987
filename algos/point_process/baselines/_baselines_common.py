"""Shared checks, grid and public methods of the LGCP baselines of :mod:`.baselines`."""

from __future__ import annotations

import math

import numpy as np

from ..._validation import check_scalar_int, validate_params
from .._simulate import _inside_fraction
from .._window import MAX_COORD, Window, coordinate_array
from ..vogcam._vogcam_blocks import lognormal_band

#: A cell that holds a point but meets the window in (numerically) zero area gets this fraction of
#: a cell's area, so the Poisson likelihood stays bounded (point_process reconstruction notes, section 7: w > 0 where y
#: > 0).
_MIN_CELL_FRACTION = 1e-6
#: Newton steps on the log-intensity are clipped to this sup-norm (overflow guard, point_process reconstruction notes,
#: section 7).
_MAX_STEP = 5.0
#: Largest grid for the dense solver (M x M Cholesky).
_DENSE_MAX_CELLS = 4096


def _check_points(X, win):
    X = coordinate_array(X, "X")
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
    Xq = coordinate_array(Xq, "Xq", "m")
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


def _grid_shape(grid, name="grid"):
    """``(nx, ny)`` of ``grid``: an int >= 2 (its ``_parameter_constraints``) or a pair of them."""
    if isinstance(grid, (tuple, list)):
        # element rule (the constraint language has no "a pair of ints >= 2")
        if len(grid) != 2:
            raise ValueError(f"'{name}' must be an int >= 2 or a pair (nx, ny); got {grid!r}.")
        return (check_scalar_int(grid[0], f"{name}[0]", low=2), check_scalar_int(grid[1], f"{name}[1]", low=2))
    return int(grid), int(grid)


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
    """The public ``fit``, ``predict_log_intensity``, ``predict_intensity`` and ``expected_count`` of the
    baselines; a baseline implements ``_fit(X, covariates)``, ``_log_intensity_at(Xq, return_std)`` and
    ``_expected_count(region)``."""

    def fit(self, X, covariates=None):
        """Fit the posterior of the log-intensity to the points ``X`` (n, 2) inside the window.

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
        return self._fit(X, covariates)

    def predict_log_intensity(self, Xq, return_std=False):
        """Posterior (Laplace, sampled or variational) mean, and sd, of the log-intensity at ``Xq``.

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
        return self._log_intensity_at(_check_query(Xq), return_std)

    def predict_intensity(self, Xq, alpha=None):
        """Posterior mean intensity ``exp(mu + v/2)``; with ``alpha``, also the lognormal
        ``(1 - alpha)`` band ``exp(mu -/+ z_{alpha/2} sqrt(v))``: returns ``(mean, lower, upper)``.

        Parameters
        ----------
        Xq : array-like of shape (m, 2)
            Query locations, in the units of the fitted pattern.
        alpha : float or None, default=None
            Level of the pointwise band, in (0, 1).

        Returns
        -------
        mean : ndarray of shape (m,)
            Posterior mean intensity.
        lower, upper : ndarray of shape (m,)
            The band; only when ``alpha`` is given.
        """
        mu, sd = self.predict_log_intensity(Xq, return_std=True)
        return lognormal_band(mu, sd, alpha)

    def expected_count(self, region=None):
        """Posterior expected number of points in ``region``: ``sum_c a_c E exp(f_c)`` over the grid cells
        (:class:`GridLaplaceLGCP`, :class:`GridMALALGCP`: cells centred in ``region``) or the quadrature
        nodes (:class:`FRKVariationalLGCP`, :class:`SVGPCoxProcess`) in ``region``.

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
        return self._expected_count(region)

    def _check_fitted(self):
        if not hasattr(self, "coef_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call 'fit' first.")


def _window_and_length_scale(window, length_scale):
    win = Window.from_any(window)
    xmin, xmax, ymin, ymax = win.bounds
    diam = math.hypot(xmax - xmin, ymax - ymin)
    # "auto" or a positive float: _parameter_constraints
    phi = 0.1 * diam if isinstance(length_scale, str) else float(length_scale)
    return win, phi, diam
