r"""Second-order summaries of a planar point pattern: Ripley's K, Besag's L, the pair-correlation
function g, their inhomogeneous versions, and simulation envelopes.

For a pattern :math:`x_1, \dots, x_n` in a window :math:`W` with distances :math:`d_{ij}`:

* **K** (Ripley 1977): :math:`\hat K(r) = \frac{|W|}{n(n-1)}\sum_{i \ne j} e_{ij}\,1\{d_{ij} \le r\}`,
  the normalisation :math:`\hat\lambda^2 = n(n-1)/|W|^2` of spatstat's ``Kest``; edge weights
  :math:`e_{ij}`:

  - ``"translation"`` (Ohser & Stoyan 1981): :math:`e_{ij} = |W| / |W \cap (W + x_i - x_j)|`; exact for
    rectangles and, for polygons (holes and several pieces included), by a signed fan-triangle decomposition
    of every ring (:func:`._pair_kernels.polygon_overlap_area_rings`);
  - ``"isotropic"`` (Ripley 1977): :math:`e_{ij} = 1 / \text{(fraction of the circle of centre } x_i
    \text{ and radius } d_{ij} \text{ inside } W)`, exact for any polygonal window, holes and several
    pieces included (:func:`._pair_kernels.circle_fraction_inside_rings`), capped at ``MAX_ISOTROPIC_WEIGHT``
    as spatstat does;
  - ``"border"`` (reduced sample): :math:`\hat K(r) = \frac{|W|}{n}\sum_i 1\{b_i \ge r\} \#\{j \ne i:
    d_{ij} \le r\} / \#\{i: b_i \ge r\}`, :math:`b_i` the distance from :math:`x_i` to the boundary of W
    (the nearest edge of any ring);
  - ``"none"``: :math:`e_{ij} = 1`.

  **Valid range** (spatstat's rule in ``Kest``): the isotropic estimate is NaN for :math:`r \\ge` the
  window's bounding radius, the translation estimate for :math:`r \\ge` the distance from the origin to
  the boundary of the support of the set covariance (both half the diagonal for a rectangle); the
  border estimate is NaN where no point is farther than r from the boundary. A
  :class:`._valid_range.RangeWarning` says so (:mod:`._valid_range`). L and g follow K's rule.

  For a Poisson process conditioned on its number of points, the translation and isotropic estimators
  are unbiased for :math:`\pi r^2` (tests), the border estimator for :math:`(n-1)\pi r^2 / n`.
* **L** (Besag 1977): :math:`\hat L = \sqrt{\hat K/\pi}`.
* **g**: :math:`\hat g(r) = \frac{|W|}{n(n-1)}\sum_{i \ne j} e_{ij}\,k_h(r - d_{ij}) / (2\pi r)` with the
  Epanechnikov kernel of half-width :math:`h` (default :math:`0.15/\sqrt{\hat\lambda}`, Stoyan's rule,
  as in spatstat's ``pcf``); unbiased for 1 at :math:`r \ge h` for a conditioned Poisson process.
* **Inhomogeneous** versions (Baddeley, Møller & Waagepetersen 2000) given an intensity :math:`\lambda`:
  :math:`\hat K_{\text{inhom}}(r) = \frac1{|W|}\sum_{i \ne j} e_{ij}1\{d_{ij} \le r\}/(\lambda(x_i)
  \lambda(x_j))` (border: :math:`\sum_i 1\{b_i \ge r\}\lambda_i^{-1}\sum_{j}1\{d_{ij}\le r\}\lambda_j^{-1}
  / \sum_i 1\{b_i \ge r\}\lambda_i^{-1}`); unbiased for :math:`\pi r^2` under a Poisson process with the
  true intensity. ``renormalise=True`` multiplies by :math:`|W| / \sum_i \lambda(x_i)^{-1}`, which
  makes a misspecified overall level of :math:`\lambda` cancel (spatstat's ``Kinhom`` default,
  ``normpower = 1``).

:func:`envelope` simulates a model (Poisson, a fitted :class:`VoGCAM`'s posterior, a
:class:`MinContrastFit`, or any sampler) and returns pointwise min/max envelopes with the global
maximum-absolute-deviation test (Ripley 1977; Diggle 2003, section 2.7).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from theory.point_process import poisson_k_function

from ..._validation import check_array, check_option, check_scalar_float
from .._quadrature import warn_duplicates
from .._window import Window, coordinate_array
from ._pair_kernels import (
    circle_fraction_inside_rings,
    epanechnikov_pair_sum,
    grid_pair_counts,
    grid_pair_histogram,
    grid_pairs_fill,
    polygon_overlap_area_rings,
    rectangle_circle_fraction,
)
from ._valid_range import mask_beyond_range

__all__ = [
    "SummaryFunction",
    "k_function",
    "l_function",
    "pair_correlation",
    "default_radii",
    "boundary_distance",
    "translation_weights",
    "isotropic_weights",
]

#: Isotropic edge weights are capped at this value (spatstat's ``edge.Ripley(maxweight = 100)``): a
#: circle almost entirely outside the window would otherwise give an unbounded weight.
MAX_ISOTROPIC_WEIGHT = 100.0
#: simulate_poisson refuses to draw more expected points than this (memory guard).
MAX_EXPECTED_POINTS = 5e7
#: Ordered pairs handled at once by the second-order summaries (their memory is O(n + R + this)).
PAIR_BLOCK = 1 << 18
#: With ``correction=None``, K and L use the isotropic correction up to this many points and the border
#: correction above it (spatstat's ``Kest`` rule, its argument ``nlarge``).
N_LARGE = 3000
#: Default number of distances (spatstat's 513).
N_RADII = 513
#: Default largest distance: this fraction of the shorter side of the window's bounding box
#: (spatstat's rule for rectangles).
RMAX_FRACTION = 0.25
#: Stoyan's constant of the default pcf bandwidth ``h = STOYAN / sqrt(lambda)``.
STOYAN = 0.15

_CORRECTIONS = ("border", "isotropic", "translation", "none")
_ALIASES = {"ripley": "isotropic", "iso": "isotropic", "translate": "translation", "trans": "translation",
            "bord": "border", "reduced": "border"}


@dataclasses.dataclass
class SummaryFunction:
    """A second-order summary on a grid of distances.

    Parameters
    ----------
    name : {"K", "L", "g", "K_inhom", "L_inhom", "g_inhom"}
        The summary.
    r : ndarray
        Distances.
    value : ndarray
        The estimate.
    theo : ndarray
        Its value for a Poisson process (``pi r^2``, ``r`` or 1).
    correction : str
        The edge correction used.
    n : int
        Number of points used.
    """

    name: str
    r: np.ndarray
    value: np.ndarray
    theo: np.ndarray
    correction: str
    n: int

    def plot(self, ax=None, **kw):
        """Plot the estimate and the Poisson value against r (matplotlib axes returned).

        Parameters
        ----------
        ax : matplotlib Axes or None, default=None
            Axes to draw on (``None``: new axes).
        **kw
            Passed to the plot of the estimate.

        Returns
        -------
        matplotlib Axes
            The axes.
        """
        if ax is None:
            import matplotlib.pyplot as plt

            ax = plt.gca()
        ax.plot(self.r, self.value, label=f"{self.name} ({self.correction})", **kw)
        ax.plot(self.r, self.theo, "k--", lw=0.8, label="Poisson")
        ax.set_xlabel("r")
        ax.set_ylabel(self.name)
        ax.legend()
        return ax


# ============================================================================ helpers
def _check_pattern(X, window, consequence="each copy counts as a separate point at distance 0"):
    X = coordinate_array(X, "X", empty_1d=True)
    if not np.all(np.isfinite(X)):
        raise ValueError("'X' must contain only finite coordinates; got NaN or inf.")
    if window is None:
        if len(X) < 2:
            raise ValueError(f"'X' needs at least 2 points when 'window' is None; got {len(X)}.")
        lo, hi = X.min(axis=0), X.max(axis=0)
        if np.any(hi <= lo):
            raise ValueError("the bounding box of 'X' is degenerate; pass 'window'.")
        window = (lo[0], hi[0], lo[1], hi[1])
    win = Window.from_any(window)
    if not (math.isfinite(win.area) and win.area > 0 and math.isfinite(win.diameter)):
        raise ValueError(f"'window' must have a finite positive area; got area {win.area!r}.")
    inside = win.contains(X)
    if not np.all(inside):
        k = int(np.flatnonzero(~inside)[0])
        raise ValueError(f"'X' has {int((~inside).sum())} point(s) outside the window; the first is row {k}: "
                         f"{X[k].tolist()}.")
    warn_duplicates(X, consequence, stacklevel=4)
    return X, win


def _check_correction(correction, allowed=_CORRECTIONS):
    if not isinstance(correction, str):
        raise TypeError(f"'correction' must be one of {allowed}; got {correction!r}.")
    c = _ALIASES.get(correction.lower(), correction.lower())
    return check_option(c, "correction", allowed)


def default_radii(window, n=N_RADII):
    """``n`` distances from 0 to ``RMAX_FRACTION`` times the shorter side of the window's bounding box."""
    xmin, xmax, ymin, ymax = Window.from_any(window).bounds
    return np.linspace(0.0, RMAX_FRACTION * min(xmax - xmin, ymax - ymin), n)


def _check_radii(r, win):
    if r is None:
        return default_radii(win)
    r = check_array(r, "r", ndim=(0, 1), allow_empty=True, finite=False).reshape(-1)
    if r.size == 0 or not np.all(np.isfinite(r)) or np.any(r < 0) or np.any(np.diff(r) <= 0):
        raise ValueError("'r' must be a non-empty increasing array of finite distances >= 0.")
    return r


def boundary_distance(X, window):
    """Distance from each point of ``X`` (n, 2) to the boundary of ``window`` (the border correction's b_i)."""
    return Window.from_any(window).boundary_distance(X)


def translation_weights(dx, dy, window):
    r"""Translation edge weights :math:`|W| / |W \cap (W + h)|` for shifts ``h = (dx, dy)``."""
    win = Window.from_any(window)
    dx = np.ascontiguousarray(dx, dtype=np.float64)
    dy = np.ascontiguousarray(dy, dtype=np.float64)
    if win.is_rectangle:
        xmin, xmax, ymin, ymax = win.bounds
        ov = np.maximum(xmax - xmin - np.abs(dx), 0.0) * np.maximum(ymax - ymin - np.abs(dy), 0.0)
    else:
        v = win.vertices
        ov = polygon_overlap_area_rings(dx, dy, np.ascontiguousarray(v[:, 0]), np.ascontiguousarray(v[:, 1]),
                                        np.ascontiguousarray(win.ring_ptr))
    with np.errstate(divide="ignore"):
        return np.where(ov > 0, win.area / np.maximum(ov, 1e-300), np.inf)


def isotropic_weights(X, radii, window):
    """Ripley's isotropic weights ``1 / (fraction of the circle (X[p], radii[p]) inside W)``, capped."""
    win = Window.from_any(window)
    X = np.asarray(X, dtype=np.float64)
    v = win.vertices
    if win.is_rectangle:
        xmin, xmax, ymin, ymax = (float(t) for t in win.bounds)
        frac = rectangle_circle_fraction(np.ascontiguousarray(X[:, 0]), np.ascontiguousarray(X[:, 1]),
                                         np.ascontiguousarray(radii, dtype=np.float64), xmin, xmax, ymin, ymax)
    else:
        frac = circle_fraction_inside_rings(np.ascontiguousarray(X[:, 0]), np.ascontiguousarray(X[:, 1]),
                                            np.ascontiguousarray(radii, dtype=np.float64),
                                            np.ascontiguousarray(v[:, 0]), np.ascontiguousarray(v[:, 1]),
                                            win.next_vertex())
    with np.errstate(divide="ignore"):
        return np.minimum(1.0 / np.maximum(frac, 1e-300), MAX_ISOTROPIC_WEIGHT)


class _PairBlocks:
    """The ordered pairs (i, j), i != j, with d_ij <= rmax, produced in blocks of consecutive ``i`` of
    about ``block`` pairs each (a grid of cells of side >= rmax; memory O(n + block), no global sort).

    ``n_pairs`` is the number of ordered pairs (counted before any block is made); iterating yields
    arrays ``i, j, d`` per block."""

    def __init__(self, X, win, rmax, block=None):
        n = len(X)
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.rmax = float(rmax)
        self.block = int(PAIR_BLOCK if block is None else block)
        xmin, xmax, ymin, ymax = win.bounds
        # squared search radius a hair above rmax: the pairs are then filtered on np.hypot(...) <= rmax
        rq = self.rmax * (1.0 + 1e-9) + 1e-300
        cs = max(rq, math.sqrt((xmax - xmin) * (ymax - ymin) / max(n, 1)))
        gx = max(1, min(int(math.ceil((xmax - xmin) / cs)), 1 << 15))
        gy = max(1, min(int(math.ceil((ymax - ymin) / cs)), 1 << 15))
        csx, csy = max(cs, (xmax - xmin) / gx), max(cs, (ymax - ymin) / gy)
        cx = np.clip(((self.X[:, 0] - xmin) / csx).astype(np.int64), 0, gx - 1)
        cy = np.clip(((self.X[:, 1] - ymin) / csy).astype(np.int64), 0, gy - 1)
        self.cell = cx + gx * cy
        self.order = np.argsort(self.cell, kind="stable").astype(np.int64)
        self.starts = np.searchsorted(self.cell[self.order], np.arange(gx * gy + 1)).astype(np.int64)
        self.gx, self.gy, self.r2 = gx, gy, rq * rq
        self.counts = grid_pair_counts(self.X, self.order, self.starts, self.cell, gx, gy, self.r2)
        self.n_pairs = int(self.counts.sum())

    def __iter__(self):
        n = len(self.X)
        cum = np.concatenate([[0], np.cumsum(self.counts)])
        lo = 0
        while lo < n:
            hi = int(np.searchsorted(cum, cum[lo] + self.block, side="right")) - 1
            hi = min(max(hi, lo + 1), n)
            m = int(cum[hi] - cum[lo])
            if m:
                i = np.empty(m, dtype=np.int64)
                j = np.empty(m, dtype=np.int64)
                grid_pairs_fill(self.X, self.order, self.starts, self.cell, self.gx, self.gy, self.r2, lo, hi, i, j)
                d = np.hypot(self.X[i, 0] - self.X[j, 0], self.X[i, 1] - self.X[j, 1])
                keep = d <= self.rmax
                if not keep.all():
                    i, j, d = i[keep], j[keep], d[keep]
                yield i, j, d
            lo = hi


def _intensity_at(intensity, X):
    """Intensity at the points from an array, a callable or a fitted model with ``predict_intensity``."""
    if hasattr(intensity, "predict_intensity"):
        lam = intensity.predict_intensity(X)
    elif callable(intensity):
        lam = intensity(X)
    else:
        lam = intensity
    try:
        lam = np.asarray(lam, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise TypeError("'intensity' must be an array of length n, a callable or a fitted model.") from None
    if lam.shape != (len(X),):
        raise ValueError(f"'intensity' must give {len(X)} values (one per point); got shape {lam.shape}.")
    if not np.all(np.isfinite(lam)) or np.any(lam <= 0):
        raise ValueError("'intensity' must be finite and > 0 at every point.")
    return lam


def _pair_weights(X, win, i, j, d, correction):
    if correction == "translation":
        return translation_weights(X[i, 0] - X[j, 0], X[i, 1] - X[j, 1], win)
    if correction == "isotropic":
        return isotropic_weights(X[i], d, win)
    return np.ones(len(d))


def _pair_histogram_blocks(X, win, r, correction, w, b=None, h=0.0):
    """The pair histogram of :func:`_pair_histogram` from blocks of pairs (numpy; any window): the
    readable twin of the fused kernel, and the path for isotropic and translation weights on polygons."""
    R = len(r)
    acc = np.zeros(R + 1)
    for i, j, d in _PairBlocks(X, win, float(r[-1]) + h):
        wpair = w[i] * w[j]
        if h > 0:
            e = _pair_weights(X, win, i, j, d, correction) * wpair
            acc[:R] += epanechnikov_pair_sum(np.ascontiguousarray(d), e, np.ascontiguousarray(r), float(h))
        elif correction == "border":
            bi = b[i]
            keep = d <= bi
            acc += np.bincount(np.searchsorted(r, d[keep], side="left"), wpair[keep], minlength=R + 1)
            acc -= np.bincount(np.searchsorted(r, bi[keep], side="right"), wpair[keep], minlength=R + 1)
        else:
            e = _pair_weights(X, win, i, j, d, correction) * wpair
            acc += np.bincount(np.searchsorted(r, d, side="left"), e, minlength=R + 1)
    return acc


def _pair_histogram(X, win, r, correction, w, b=None, reach=4, h=0.0):
    """``acc`` of length ``len(r) + 1`` over the bins ``searchsorted(r, d_ij, "left")`` of the ordered
    pairs with ``d_ij <= r[-1]``: the sum of ``w_i w_j e_ij`` (``e_ij`` the edge weight of
    ``correction``), or for ``"border"`` the difference array of ``w_i w_j 1{d_ij <= r <= b_i}``.

    One pass of a compiled kernel over a grid of cells (:func:`._pair_kernels.grid_pair_histogram`: no pair
    is stored, memory O(n + len(r))) unless the correction needs the polygon of a non-rectangular window
    (isotropic, translation), which goes through :func:`_pair_histogram_blocks`."""
    if correction in ("isotropic", "translation") and not win.is_rectangle:
        return _pair_histogram_blocks(X, win, r, correction, w, b, h)
    n = len(X)
    X = np.ascontiguousarray(X, dtype=np.float64)
    r = np.ascontiguousarray(r, dtype=np.float64)
    rmax = float(r[-1]) + h
    xmin, xmax, ymin, ymax = (float(t) for t in win.bounds)
    rq = rmax * (1.0 + 1e-9) + 1e-300
    cs = max(rq / reach, math.sqrt((xmax - xmin) * (ymax - ymin) / max(n, 1)))
    gx = max(1, min(int(math.ceil((xmax - xmin) / cs)), 1 << 15))
    gy = max(1, min(int(math.ceil((ymax - ymin) / cs)), 1 << 15))
    csx, csy = max(cs, (xmax - xmin) / gx), max(cs, (ymax - ymin) / gy)
    cx = np.clip(((X[:, 0] - xmin) / csx).astype(np.int64), 0, gx - 1)
    cy = np.clip(((X[:, 1] - ymin) / csy).astype(np.int64), 0, gy - 1)
    cell = cx + gx * cy
    order = np.argsort(cell, kind="stable").astype(np.int64)
    starts = np.searchsorted(cell[order], np.arange(gx * gy + 1)).astype(np.int64)
    R = len(r)
    # an evenly spaced r (the usual case) lets the kernel find a bin by arithmetic
    step = (r[-1] - r[0]) / (R - 1) if R > 1 else 0.0
    even = R > 2 and step > 0 and np.allclose(np.diff(r), step, rtol=1e-6, atol=0.0)
    inv_dr = 1.0 / step if even else 0.0
    mode = {"none": 0, "isotropic": 1, "translation": 2, "border": 3}[correction]
    if b is None:
        b = np.zeros(n)
        bin_b = np.zeros(n, dtype=np.int64)
    else:
        b = np.ascontiguousarray(b, dtype=np.float64)
        bin_b = np.searchsorted(r, b, side="right").astype(np.int64)
    bnd = np.array([xmin, xmax, ymin, ymax])
    # the points relabelled in cell order: a cell's points are then contiguous in memory
    w = np.asarray(w, dtype=np.float64)
    return grid_pair_histogram(np.ascontiguousarray(X[order]), np.arange(n, dtype=np.int64), starts, gx, gy,
                               float(csx), float(csy), xmin, ymin, int(reach), rmax, rq * rq, r, float(r[0]),
                               float(inv_dr), mode, bnd, float(win.area), MAX_ISOTROPIC_WEIGHT,
                               np.ascontiguousarray(w[order]), np.ascontiguousarray(b[order]),
                               np.ascontiguousarray(bin_b[order]), float(h))


# ============================================================================ K, L, g
def k_function(X, window=None, r=None, correction=None, intensity=None, renormalise=True):
    r"""Ripley's K function (module docstring for the estimators), homogeneous or inhomogeneous.

    Parameters
    ----------
    X : array-like (n, 2)
        The pattern, inside ``window``.
    window : tuple, (V, 2) polygon, list of (V_k, 2) rings, Window or None
        ``None``: the bounding box of ``X``. Rings: a window with holes and several pieces
        (:meth:`~algos.point_process.Window.polygon`).
    r : array-like, optional
        Increasing distances (default: 513 values up to a quarter of the shorter side).
    correction : {"isotropic", "translation", "border", "none"} or None, default=None
        Also accepted: "ripley", "translate". None: "isotropic" up to ``N_LARGE`` (3000) points, "border"
        above (spatstat's ``Kest`` rule). Every correction runs in memory O(n + len(r)): on a rectangle
        the pairs are found, weighted and binned in one compiled pass, on a polygon the isotropic and
        translation weights go through blocks of ``PAIR_BLOCK`` pairs; the time is in proportion to
        the number of pairs closer than ``r[-1]``.
    intensity : None, array (n,), callable or fitted model, optional
        Given: the inhomogeneous K with these intensities at the points.
    renormalise : bool, default=True
        Inhomogeneous only: multiply by ``|W| / sum_i 1/lambda(x_i)``.

    Returns
    -------
    SummaryFunction
        ``theo = pi r^2`` (:func:`theory.point_process.poisson_k_function`).

    Examples
    --------
    >>> X = np.array([[0.05, 0.5], [0.15, 0.5]])
    >>> round(float(k_function(X, (0, 1, 0, 1), r=[0.0, 0.1], correction="isotropic").value[1]), 12)
    1.25
    """
    X, win = _check_pattern(X, window)
    r = _check_radii(r, win)
    n = len(X)
    if correction is None:
        correction = "isotropic" if n <= N_LARGE else "border"
    correction = _check_correction(correction)
    if n < 2:
        raise ValueError(f"'X' needs at least 2 points for a second-order summary; got {n}.")
    inhom = intensity is not None
    lam = _intensity_at(intensity, X) if inhom else None
    R = len(r)
    w = 1.0 / lam if inhom else np.ones(n)
    if correction == "border":
        b = boundary_distance(X, win)
        # numerator(r) = sum over pairs with d_ij <= r <= b_i (a difference array over the r grid);
        # denominator(r) = sum_i 1{b_i >= r} w_i
        num = np.cumsum(_pair_histogram(X, win, r, correction, w, b))[:R]
        if not inhom:
            num = num * (win.area / n)
        ob = np.argsort(b)
        tail = np.concatenate([np.cumsum(w[ob][::-1])[::-1], [0.0]])
        den = tail[np.searchsorted(b[ob], r, side="left")]
        with np.errstate(divide="ignore", invalid="ignore"):
            K = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    else:
        # a pair at distance d counts at every r_k >= d
        K = np.cumsum(_pair_histogram(X, win, r, correction, w))[:R]
        if inhom:
            K = K / win.area
            if renormalise:
                K = K * (win.area / np.sum(1.0 / lam))
        else:
            K = K * (win.area / (n * (n - 1)))
    name = "K_inhom" if inhom else "K"
    K = mask_beyond_range(K, r, win, correction, name)
    return SummaryFunction(name, r, K, poisson_k_function(r), correction, n)


def l_function(X, window=None, r=None, correction=None, intensity=None, renormalise=True):
    r"""Besag's :math:`L(r) = \sqrt{K(r)/\pi}` (same parameters as :func:`k_function`; ``theo = r``).

    Parameters
    ----------
    X : array-like of shape (n, 2)
        The pattern, inside ``window``.
    window : tuple, array-like of shape (V, 2), Window or None, default=None
        ``None``: the bounding box of ``X``.
    r : array-like, optional
        Increasing distances (default as in :func:`k_function`).
    correction : {"isotropic", "translation", "border", "none"} or None, default=None
        Edge correction; ``None``: isotropic up to 3,000 points and border above (spatstat's rule
        for ``Kest``), as in :func:`k_function`.
    intensity : None, array-like of shape (n,), callable or fitted model, optional
        Given: the inhomogeneous L with these intensities at the points.
    renormalise : bool, default=True
        Inhomogeneous only: multiply K by ``|W| / sum_i 1/lambda(x_i)``.

    Returns
    -------
    SummaryFunction
        ``theo = r``.
    """
    Kf = k_function(X, window, r, correction, intensity, renormalise)
    name = "L_inhom" if intensity is not None else "L"
    return SummaryFunction(name, Kf.r, np.sqrt(np.maximum(Kf.value, 0.0) / np.pi), Kf.r.copy(), Kf.correction, Kf.n)


def pair_correlation(X, window=None, r=None, correction="translation", intensity=None, bandwidth=None,
                     renormalise=True):
    r"""Pair-correlation function by Epanechnikov kernel smoothing (module docstring), ``theo = 1``.

    Parameters as :func:`k_function` (``correction`` in {"translation", "isotropic", "none"});
    ``bandwidth`` is the kernel's half-width ``h`` (default ``0.15 / sqrt(n / |W|)``). At ``r = 0`` the
    estimate is undefined (NaN).

    Parameters
    ----------
    X : array-like of shape (n, 2)
        The pattern, inside ``window``.
    window : tuple, array-like of shape (V, 2), Window or None, default=None
        ``None``: the bounding box of ``X``.
    r : array-like, optional
        Increasing distances (default as in :func:`k_function`).
    correction : {"translation", "isotropic", "none"}, default="translation"
        Edge correction.
    intensity : None, array-like of shape (n,), callable or fitted model, optional
        Given: the inhomogeneous g with these intensities at the points.
    bandwidth : float or None, default=None
        Half-width ``h`` of the kernel.
    renormalise : bool, default=True
        Inhomogeneous only: renormalise as in :func:`k_function`.

    Returns
    -------
    SummaryFunction
        ``theo = 1``.
    """
    X, win = _check_pattern(X, window)
    r = _check_radii(r, win)
    correction = _check_correction(correction, ("isotropic", "translation", "none"))
    n = len(X)
    if n < 2:
        raise ValueError(f"'X' needs at least 2 points for a second-order summary; got {n}.")
    if bandwidth is None:
        h = STOYAN / math.sqrt(n / win.area)
    else:
        h = check_scalar_float(bandwidth, "bandwidth", low=0.0, closed="neither")
    inhom = intensity is not None
    lam = _intensity_at(intensity, X) if inhom else None
    S = _pair_histogram(X, win, r, correction, 1.0 / lam if inhom else np.ones(n), h=float(h))[:len(r)]
    if inhom:
        S = S / win.area
        if renormalise:
            S = S * (win.area / np.sum(1.0 / lam))
    else:
        S = S * (win.area / (n * (n - 1)))
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(r > 0, S / (2.0 * np.pi * np.where(r > 0, r, 1.0)), np.nan)
    g = mask_beyond_range(g, r, win, correction, "g_inhom" if inhom else "g")
    return SummaryFunction("g_inhom" if inhom else "g", r, g, np.ones_like(r), correction, n)


_STATS = {"K": k_function, "L": l_function, "g": pair_correlation, "pcf": pair_correlation}
