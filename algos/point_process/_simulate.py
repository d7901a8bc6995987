r"""Exact simulation of log-Gaussian Cox processes on a grid (circulant embedding).

:func:`simulate_lgcp` draws a stationary Gaussian field with a Matérn covariance (``nu`` = 1/2, the
exponential, or 3/2) on the cell centres of a regular grid over the window's bounding box, by
circulant embedding (Dietrich & Newsam, SIAM J. Sci. Comput. 18, 1997; Wood & Chan, JCGS 3, 1994):
the covariance is wrapped on a torus of at least twice the grid size in each direction, the torus
is enlarged until the embedding is nonnegative definite, and one FFT turns complex white noise into
two independent exact draws on the grid (we use the real part). The log-intensity is piecewise
constant on the cells, and the points are exact for that piecewise-constant intensity: each cell
gets a Poisson number of points with mean ``exp(f_c) * cell area``, placed uniformly in the cell.
For a polygon window the pattern is drawn on the bounding box and thinned by ``Window.contains``
(exact: a Poisson process restricted to a subset is the Poisson process on that subset).

The recipe is the simulation protocol of point_process reconstruction notes, section 5 (marked *reconstructed* there:
the acceptance experiments' ground truth, not a claim of the paper).

Kernels (``r`` the distance, ``phi`` the length-scale, ``sigma2`` the variance)::

    nu = 0.5:  sigma2 * exp(-r / phi)
    nu = 1.5:  sigma2 * (1 + sqrt(3) r / phi) * exp(-sqrt(3) r / phi)
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field

import numpy as np

from theory.point_process import _matern_cov

from .._validation import check_array, check_random_state, check_scalar_float, check_scalar_int
from ._window import signed_area

__all__ = ["LGCPSample", "simulate_lgcp", "matern_covariance"]

#: Negative eigenvalues of the embedding above ``-_EIG_RTOL * max eigenvalue`` are rounding and
#: are set to zero; below it the torus is enlarged.
_EIG_RTOL = 1e-10
#: The torus is enlarged at most until it is this many times the grid (then the negative part is
#: clipped, with a warning giving its relative size).
_MAX_PAD_FACTOR = 16
#: Refuse fields whose expected number of points exceeds this (memory guard).
_MAX_EXPECTED_POINTS = 5e7


def matern_covariance(r, variance, length_scale, nu=0.5):
    """Matérn covariance at distances ``r`` for ``nu`` in {0.5, 1.5} (module docstring form).

    Parameters
    ----------
    r : array-like of float >= 0
    variance : float > 0
    length_scale : float > 0
    nu : {0.5, 1.5}

    Returns
    -------
    ndarray of the shape of ``r``

    Examples
    --------
    >>> float(matern_covariance(0.0, 2.0, 0.1))
    2.0
    >>> round(float(matern_covariance(0.1, 1.0, 0.1)), 6)  # exp(-1)
    0.367879
    """
    return _matern_cov(np.asarray(r, dtype=np.float64), variance, length_scale, nu)


def _window(window):
    from ._window import Window

    return Window.from_any(window)


@dataclass
class LGCPSample:
    """One simulated log-Gaussian Cox process (returned by :func:`simulate_lgcp`).

    Parameters
    ----------
    points : ndarray of shape (n, 2)
        The points, all inside ``window``.
    log_intensity : ndarray of shape (ny, nx)
        The log-intensity on the grid cells: **row index = y cell, column index = x cell**, so
        ``log_intensity[i, j]`` is the value on the cell centred at ``(xgrid[j], ygrid[i])``
        (the ``imshow(..., origin="lower")`` layout). It includes the mean and the covariate term.
    gp : ndarray of shape (ny, nx)
        The zero-mean Gaussian field alone (same layout).
    xgrid, ygrid : ndarray of shape (nx,), (ny,)
        Cell centres.
    window : Window
        The window.
    cell_area : float
        Area of one grid cell.
    inside_fraction : ndarray of shape (ny, nx)
        The fraction of each cell's area inside the window (all ones for a rectangle).
    mean, variance, length_scale, nu : float
        The parameters the sample was drawn with.
    covariate_term : ndarray of shape (ny, nx) or None, default=None
        The covariate part of the log-intensity, if any.
    """

    points: np.ndarray
    log_intensity: np.ndarray
    gp: np.ndarray
    xgrid: np.ndarray
    ygrid: np.ndarray
    window: object
    cell_area: float
    inside_fraction: np.ndarray
    mean: float
    variance: float
    length_scale: float
    nu: float
    covariate_term: np.ndarray = field(default=None, repr=False)

    def __iter__(self):
        """Unpack as ``points, log_intensity``."""
        return iter((self.points, self.log_intensity))

    @property
    def n(self):
        """Number of points."""
        return int(self.points.shape[0])

    @property
    def expected_count(self):
        """``sum_c exp(f_c) |cell_c ∩ W|``: the exact expected number of points given the field."""
        return float(np.sum(np.exp(self.log_intensity) * self.cell_area * self.inside_fraction))

    def cell_index(self, xy):
        """Row (y) and column (x) cell indices of the points ``xy`` (clipped to the grid).

        Parameters
        ----------
        xy : array-like of shape (m, 2)
            Points.

        Returns
        -------
        rows, cols : ndarray of int, shape (m,)
            The cell indices.
        """
        xy = _check_xy(xy, "xy")
        xmin, xmax, ymin, ymax = self.window.bounds
        nx, ny = self.xgrid.size, self.ygrid.size
        j = np.floor((xy[:, 0] - xmin) / (xmax - xmin) * nx).astype(np.int64)
        i = np.floor((xy[:, 1] - ymin) / (ymax - ymin) * ny).astype(np.int64)
        return np.clip(i, 0, ny - 1), np.clip(j, 0, nx - 1)

    def log_intensity_at(self, xy):
        """The (piecewise-constant) true log-intensity at the locations ``xy`` of shape (m, 2).

        Locations outside the bounding box take the value of the nearest boundary cell.

        Parameters
        ----------
        xy : array-like of shape (m, 2)
            Points.

        Returns
        -------
        ndarray of shape (m,)
            The log-intensity of the cell of each point.
        """
        i, j = self.cell_index(xy)
        return self.log_intensity[i, j]

    def intensity_at(self, xy):
        """``exp(log_intensity_at(xy))``.

        Parameters
        ----------
        xy : array-like of shape (m, 2)
            Points.

        Returns
        -------
        ndarray of shape (m,)
            The intensity of the cell of each point.
        """
        return np.exp(self.log_intensity_at(xy))

    def cell_centres(self):
        """The (ny * nx, 2) cell centres in the row-major order of ``log_intensity.ravel()``.

        Returns
        -------
        ndarray of shape (ny * nx, 2)
            The cell centres.
        """
        gx, gy = np.meshgrid(self.xgrid, self.ygrid)
        return np.column_stack([gx.ravel(), gy.ravel()])


def _check_xy(xy, name):
    xy = check_array(xy, name, allow_empty=True, finite=False)
    if xy.ndim != 2 or xy.shape[1] != 2:
        raise ValueError(f"'{name}' must have shape (m, 2); got {xy.shape}.")
    if not np.all(np.isfinite(xy)):
        raise ValueError(f"'{name}' must contain only finite values (no NaN or inf).")
    return xy


@functools.lru_cache(maxsize=16)
def _embedding_eigenvalues(nx, ny, hx, hy, variance, length_scale, nu):
    """Eigenvalues (``(My, Mx)`` real array) of the smallest nonnegative-definite torus embedding.

    Cached (read-only result): repeated draws with the same parameters reuse the embedding.
    """
    mx, my = 2 * max(nx - 1, 1), 2 * max(ny - 1, 1)
    mx, my = max(mx, 2), max(my, 2)
    max_mx, max_my = _MAX_PAD_FACTOR * max(nx, 2), _MAX_PAD_FACTOR * max(ny, 2)
    while True:
        ix = np.arange(mx)
        iy = np.arange(my)
        dx = np.minimum(ix, mx - ix) * hx
        dy = np.minimum(iy, my - iy) * hy
        r = np.sqrt(dx[None, :] ** 2 + dy[:, None] ** 2)
        base = matern_covariance(r, variance, length_scale, nu)
        lam = np.fft.fft2(base).real
        lmax = lam.max()
        lmin = lam.min()
        if lmin >= -_EIG_RTOL * lmax:
            return _readonly(np.maximum(lam, 0.0))
        if mx >= max_mx and my >= max_my:
            neg = -lam[lam < 0].sum() / lam.sum()
            warnings.warn(
                f"circulant embedding still not nonnegative definite at a {mx} x {my} torus "
                f"({_MAX_PAD_FACTOR}x the grid); negative eigenvalues clipped (relative mass {neg:.2e}): "
                "the field covariance is approximate. Use a finer grid or a shorter length_scale.",
                RuntimeWarning,
                stacklevel=3,
            )
            return _readonly(np.maximum(lam, 0.0))
        # enlarge by ~25% (even sizes keep the torus symmetric)
        mx = min(max_mx, mx + 2 * max(1, mx // 8))
        my = min(max_my, my + 2 * max(1, my // 8))


def _readonly(a):
    a.setflags(write=False)
    return a


def _gaussian_fields(lam, nx, ny, n_fields, rng):
    """``n_fields`` independent exact zero-mean draws on the ``ny x nx`` grid from the embedding."""
    my, mx = lam.shape
    scale = np.sqrt(lam / (mx * my))
    out = []
    while len(out) < n_fields:
        z = rng.standard_normal((my, mx)) + 1j * rng.standard_normal((my, mx))
        y = np.fft.fft2(scale * z)
        out.append(y.real[:ny, :nx].copy())
        if len(out) < n_fields:
            out.append(y.imag[:ny, :nx].copy())
    return out


def _clip_polygon_to_box(poly, x0, x1, y0, y1):
    """Sutherland–Hodgman: clip the polygon ``poly`` (V, 2) to the box; return the clipped vertices."""
    pts = [tuple(p) for p in poly]
    for axis, bound, keep_greater in ((0, x0, True), (0, x1, False), (1, y0, True), (1, y1, False)):
        if not pts:
            break
        out = []
        n = len(pts)
        for k in range(n):
            p, q = pts[k - 1], pts[k]
            p_in = (p[axis] >= bound) if keep_greater else (p[axis] <= bound)
            q_in = (q[axis] >= bound) if keep_greater else (q[axis] <= bound)
            if q_in != p_in:
                t = (bound - p[axis]) / (q[axis] - p[axis])
                out.append((p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])))
            if q_in:
                out.append(q)
        pts = out
    return np.asarray(pts, dtype=np.float64).reshape(-1, 2)


def _shoelace(poly):
    if poly.shape[0] < 3:
        return 0.0
    x, y = poly[:, 0], poly[:, 1]
    return 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


def _inside_fraction(win, xgrid, ygrid, hx, hy):
    """Fraction of each cell inside the window: exact (polygon clipping) on cells cut by an edge."""
    ny, nx = ygrid.size, xgrid.size
    if win.is_rectangle:
        return np.ones((ny, nx))
    return _polygon_fraction(win, nx, ny).copy()


@functools.lru_cache(maxsize=8)
def _polygon_fraction(win, nx, ny):
    xmin, xmax, ymin, ymax = win.bounds
    hx, hy = (xmax - xmin) / nx, (ymax - ymin) / ny
    xgrid = xmin + (np.arange(nx) + 0.5) * hx
    ygrid = ymin + (np.arange(ny) + 0.5) * hy
    gx, gy = np.meshgrid(xgrid, ygrid)
    frac = win.contains(np.column_stack([gx.ravel(), gy.ravel()])).astype(np.float64).reshape(ny, nx)
    ea, eb = win.edges()
    xmin, _, ymin, _ = win.bounds
    cut = np.zeros((ny, nx), dtype=bool)
    x0c = xmin + np.arange(nx) * hx  # left edges
    y0c = ymin + np.arange(ny) * hy  # bottom edges
    for k in range(len(ea)):
        p, q = ea[k], eb[k]
        # Liang–Barsky: does the segment p->q meet the closed cell [x0, x0+hx] x [y0, y0+hy]?
        d = q - p
        tlo = np.zeros((ny, nx))
        thi = np.ones((ny, nx))
        for axis, lo_edges, h in ((0, x0c[None, :], hx), (1, y0c[:, None], hy)):
            lo = np.broadcast_to(lo_edges, (ny, nx))
            hi = lo + h
            if abs(d[axis]) < 1e-300:
                outside = (p[axis] < lo) | (p[axis] > hi)
                thi = np.where(outside, -1.0, thi)
            else:
                t1 = (lo - p[axis]) / d[axis]
                t2 = (hi - p[axis]) / d[axis]
                tlo = np.maximum(tlo, np.minimum(t1, t2))
                thi = np.minimum(thi, np.maximum(t1, t2))
        cut |= tlo <= thi
    for i, j in zip(*np.nonzero(cut)):
        # every ring clipped to the cell: outer rings add their area, holes (clockwise) subtract it
        a = sum(np.sign(signed_area(ring)) * _shoelace(_clip_polygon_to_box(ring, x0c[j], x0c[j] + hx, y0c[i],
                                                                            y0c[i] + hy)) for ring in win.rings)
        frac[i, j] = min(1.0, max(0.0, a / (hx * hy)))
    return _readonly(frac)


def simulate_lgcp(window, mean, variance, length_scale, nu=0.5, grid=128, covariates=None,
                  random_state=None):
    r"""Simulate a log-Gaussian Cox process exactly on a grid (circulant embedding).

    The log-intensity on cell ``c`` is ``f_c = mean + z(s_c)^T coef + g_c`` with ``g`` a zero-mean
    Gaussian field with Matérn covariance (module docstring) evaluated at the cell centres ``s_c``;
    given ``f`` the points are a Poisson process with the piecewise-constant intensity ``exp(f)``.
    *Reconstructed* (point_process reconstruction notes, section 5 simulation protocol).

    Parameters
    ----------
    window : tuple (xmin, xmax, ymin, ymax) or array of shape (V, 2) or Window
        A polygon window is simulated on its bounding box and thinned (exact).
    mean : float
        The constant part of the log-intensity (the intercept).
    variance : float >= 0
        Marginal variance ``sigma^2`` of the Gaussian field (0 gives an inhomogeneous/homogeneous
        Poisson process).
    length_scale : float > 0
        Range ``phi`` (in the window's units).
    nu : {0.5, 1.5}, default=0.5
    grid : int >= 2 or tuple (nx, ny), default=128
        Number of cells in x and y over the bounding box.
    covariates : tuple (callable, coef), optional
        ``callable`` maps an (m, 2) array of locations to an (m, p) array (no intercept column:
        ``mean`` is the intercept); ``coef`` has length p. It is evaluated at the cell centres.
    random_state : None, int, SeedSequence or Generator

    Returns
    -------
    LGCPSample

    Examples
    --------
    >>> s = simulate_lgcp((0, 1, 0, 1), mean=np.log(200), variance=1.0, length_scale=0.1,
    ...                   grid=64, random_state=0)
    >>> s.log_intensity.shape, s.points.shape[1]
    ((64, 64), 2)
    """
    win = _window(window)
    mean = check_scalar_float(mean, "mean")
    variance = check_scalar_float(variance, "variance", low=0.0)
    length_scale = check_scalar_float(length_scale, "length_scale", low=0.0, closed="neither")
    if isinstance(nu, (bool, np.bool_)) or nu not in (0.5, 1.5):
        raise ValueError(f"'nu' must be one of {{0.5, 1.5}}; got {nu!r}.")
    nu = float(nu)
    if isinstance(grid, (tuple, list)):
        if len(grid) != 2:
            raise ValueError(f"'grid' must be an int >= 2 or a pair (nx, ny); got {grid!r}.")
        nx = check_scalar_int(grid[0], "grid[0]", low=2, high=4096)
        ny = check_scalar_int(grid[1], "grid[1]", low=2, high=4096)
    else:
        nx = ny = check_scalar_int(grid, "grid", low=2, high=4096)
    rng = check_random_state(random_state)

    xmin, xmax, ymin, ymax = (float(b) for b in win.bounds)
    hx, hy = (xmax - xmin) / nx, (ymax - ymin) / ny
    xgrid = xmin + (np.arange(nx) + 0.5) * hx
    ygrid = ymin + (np.arange(ny) + 0.5) * hy
    cell_area = hx * hy

    if variance > 0:
        lam = _embedding_eigenvalues(nx, ny, hx, hy, variance, length_scale, nu)
        gp = _gaussian_fields(lam, nx, ny, 1, rng)[0]
    else:
        gp = np.zeros((ny, nx))

    cov_term = np.zeros((ny, nx))
    if covariates is not None:
        if not (isinstance(covariates, (tuple, list)) and len(covariates) == 2 and callable(covariates[0])):
            raise TypeError("'covariates' must be a pair (callable, coef); got "
                            f"{type(covariates).__name__}.")
        fn, coef = covariates
        coef = np.atleast_1d(np.asarray(coef, dtype=np.float64))
        gx, gy = np.meshgrid(xgrid, ygrid)
        Z = np.asarray(fn(np.column_stack([gx.ravel(), gy.ravel()])), dtype=np.float64)
        if Z.ndim == 1:
            Z = Z[:, None]
        if Z.shape != (nx * ny, coef.size):
            raise ValueError(f"the covariate callable must return shape ({nx * ny}, {coef.size}) for "
                             f"{nx * ny} locations and {coef.size} coefficients; got {Z.shape}.")
        if not np.all(np.isfinite(Z)) or not np.all(np.isfinite(coef)):
            raise ValueError("'covariates' must give finite values (no NaN or inf).")
        cov_term = (Z @ coef).reshape(ny, nx)

    log_int = mean + cov_term + gp
    frac = _inside_fraction(win, xgrid, ygrid, hx, hy)
    mu = np.exp(np.minimum(log_int, 700.0)) * cell_area
    total = float(mu.sum())
    if not np.isfinite(total) or total > _MAX_EXPECTED_POINTS:
        raise ValueError(f"the simulated field expects {total:.3g} points (more than "
                         f"{_MAX_EXPECTED_POINTS:.0e}); lower 'mean' or 'variance'.")
    counts = rng.poisson(mu)
    cells = np.repeat(np.arange(nx * ny), counts.ravel())
    ii, jj = np.divmod(cells, nx)
    u = rng.random((cells.size, 2))
    pts = np.column_stack([xmin + (jj + u[:, 0]) * hx, ymin + (ii + u[:, 1]) * hy])
    if not win.is_rectangle and pts.shape[0]:
        pts = pts[np.asarray(win.contains(pts), dtype=bool)]
    return LGCPSample(points=pts, log_intensity=log_int, gp=gp, xgrid=xgrid, ygrid=ygrid, window=win,
                      cell_area=cell_area, inside_fraction=frac, mean=mean, variance=variance,
                      length_scale=length_scale, nu=nu, covariate_term=cov_term)
