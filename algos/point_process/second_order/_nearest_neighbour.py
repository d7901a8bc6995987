r"""Nearest-neighbour summaries of a planar point pattern: G, F and J (Baddeley, Rubak & Turner 2015,
sections 8.11-8.14), computed as spatstat's ``Gest``, ``Fest`` and ``Jest`` compute them.

For a pattern :math:`x_1, \dots, x_n` in a window :math:`W`, with nearest-neighbour distances
:math:`d_i`, boundary distances :math:`b_i` (distance from :math:`x_i` to the boundary of W) and a
grid of distances :math:`0 = r_0 < r_1 < \dots < r_m`:

* **G** (nearest-neighbour distance distribution) from the censored pairs :math:`o_i = \min(d_i, b_i)`,
  :math:`\delta_i = 1\{d_i \le b_i\}`:

  - ``"km"`` Kaplan-Meier (Baddeley & Gill 1997): :math:`1 - \prod_{k' \le k} (1 - \#\{i: o_i \in
    B_{k'}, \delta_i\} / \#\{i: o_i \ge \text{lower end of } B_{k'}\})` over the histogram cells
    :math:`B_k = [r_{k-1}, r_k)`;
  - ``"rs"`` reduced sample (border): :math:`\#\{i: d_i \le r \le b_i\} / \#\{i: b_i \ge r\}` on the
    same cells; **NaN** where no point is farther than r from the boundary;
  - ``"han"`` Hanisch (1984): :math:`\sum_{i: \delta_i, d_i \le r} 1/|W_{\ominus d_i}|`, normalised to
    end at 1 (spatstat's rule; :math:`W_{\ominus s}` the window eroded by s); **NaN** where the
    eroded window is empty;
  - ``"none"``: the empirical distribution function of the :math:`d_i`.

* **F** (empty-space function): the same estimators with the points replaced by the centres of a
  raster of test locations, :math:`d` the distance from a test location to the nearest point of the
  pattern and :math:`b` its distance to the boundary; ``"cs"`` (Chiu & Stoyan 1998) is the Hanisch form.
  The raster and the distances are spatstat's: a ``128 x 128`` raster of the window's bounding box by
  default (``dimyx``/``eps`` to change it), and the distances by spatstat's ``exactdt`` two-pass
  propagation of nearest-point labels (Borgefors-style; exact at almost every pixel, and reproduced
  here, not replaced by the exact Euclidean distance, so that F equals spatstat's).
* **J** (van Lieshout & Baddeley 1996): :math:`J = (1 - G)/(1 - F)` per correction ("han" pairs with
  F's "cs"); NaN where :math:`F = 1`.

Distances use the cell rules of spatstat: Kaplan-Meier and border histograms put a distance equal to
:math:`r_k` in the cell above (``findInterval``), Hanisch and uncorrected ones in the cell at
:math:`r_k` (``hist(right = TRUE)``). With the default r grid (spatstat's ``rmax.rule``: up to
:math:`\min(\sqrt{\log(10^5)/(\pi\lambda)}, \text{half the diagonal of the bounding box})`, step a
512th of it; F's step a quarter of the pixel side) the values equal ``Gest``/``Fest``/``Jest``
of spatstat 3.0.3 to 1e-10 on rectangles (tests). On polygons the boundary distances are exact (spatstat
rasterises the window for F and for the Hanisch areas, so its values differ there by pixel error).

Memory: G needs O(n) (a KD-tree, ``scipy.spatial.cKDTree``); F needs O(pixels + n), 8 arrays of the
raster padded by 2 pixels (about 60 bytes per pixel: 1 MB at the default 128 x 128).
"""

from __future__ import annotations

import math
import warnings

import numba
import numpy as np
from scipy.spatial import cKDTree

from ..._validation import check_option, check_scalar_float, check_scalar_int
from ._second_order import SummaryFunction, _check_pattern, _check_radii, boundary_distance
from ._valid_range import RangeWarning

__all__ = ["g_function", "f_function", "j_function", "default_nn_radii", "distance_raster",
           "RangeWarning", "NPIXEL", "NN_STATS"]

#: Default raster side of F's test locations (spatstat's ``spatstat.options("npixel")``).
NPIXEL = 128
#: Upper bound on the number of raster pixels of F (memory guard, about 60 bytes a pixel).
MAX_PIXELS = 1 << 24

_G_CORR = ("km", "rs", "han", "none")
_F_CORR = ("km", "rs", "cs", "none")
_ALIASES = {"kaplan": "km", "kaplan-meier": "km", "best": "km", "border": "rs", "reduced": "rs",
            "hanisch": "han", "raw": "none", "chiu-stoyan": "cs", "chiustoyan": "cs"}


def _warn_range(name, correction, r_first):
    warnings.warn(f"{name} with correction '{correction}' is undefined from r = {r_first:.6g} on "
                  f"(NaN there, as spatstat's NA).", RangeWarning, stacklevel=3)


def _correction(correction, allowed, fmap=None):
    if not isinstance(correction, str):
        raise TypeError(f"'correction' must be one of {allowed}; got {correction!r}.")
    c = correction.lower()
    c = _ALIASES.get(c, c)
    if fmap:
        c = fmap.get(c, c)
    return check_option(c, "correction", allowed)


def _check_r(r, default):
    """K's rule for distances (:func:`_check_radii`), plus G/F/J's own: at least 2, starting at 0."""
    if r is None:
        return default
    r = _check_radii(r, None)
    if r.size < 2:
        raise ValueError(f"'r' must be an increasing array of at least 2 finite distances; got {r.tolist()}.")
    if r[0] != 0:
        raise ValueError(f"'r' must start at 0 (the histogram cells start there) and contain no negative "
                         f"distance; got r[0] = {r[0]!r}.")
    return r


def default_nn_radii(window, n, step=None):
    """spatstat's default r grid for G, F and J (``rmax.rule`` and ``handle.r.b.args``).

    Parameters
    ----------
    window : Window
        The window.
    n : int
        Number of points (the intensity is ``n / |W|``).
    step : float or None, default=None
        Pixel side ``eps``; ``None``: ``rmax / 128`` (G, J); F passes its raster's pixel side.

    Returns
    -------
    ndarray
        ``0, s, 2s, ..., ceil(rmax / s) s`` with ``s = step / 4``.
    """
    xmin, xmax, ymin, ymax = window.bounds
    lam = n / window.area
    rmax = math.hypot(xmax - xmin, ymax - ymin) / 2
    if lam > 0:
        rmax = min(rmax, math.sqrt(math.log(1e5) / (math.pi * lam)))
    eps = rmax / 128 if step is None else step
    bstep = eps / 4
    npos = int(math.ceil(rmax / bstep))
    return np.linspace(0.0, bstep * npos, npos + 1)


def _cells_left(x, r):
    """spatstat's ``whist``: counts of ``x`` in the cells ``[r_{k-1}, r_k)`` (k = 0: ``[-r_1, 0)``;
    the last closed), and the count above the last break."""
    val = np.concatenate([[-r[1]], r])
    N = len(val)
    cell = np.searchsorted(val, x, side="right")  # number of breaks <= x (R's findInterval)
    cell = np.where(x == val[-1], N - 1, cell)
    h = np.bincount(cell, minlength=N + 1).astype(np.float64)
    return h[1:N], h[N]


def _cells_right(x, r):
    """``hist(x[x <= r_m], breaks = c(-r_1, r), right = TRUE)$counts``: cells ``(r_{k-1}, r_k]``."""
    x = x[x <= r[-1]]
    return np.bincount(np.searchsorted(r, x, side="left"), minlength=len(r)).astype(np.float64)


def _km_rs(o, b, d, r):
    """Kaplan-Meier and reduced-sample estimates from censored distances (spatstat's ``km.rs``)."""
    obs, upperobs = _cells_left(o, r)
    nco, _ = _cells_left(o[d], r)
    cen, uppercen = _cells_left(b, r)
    ncc, _ = _cells_left(b[d], r)
    at_risk = np.cumsum(obs[::-1])[::-1] + upperobs
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(at_risk > 0, 1.0 - nco / np.where(at_risk > 0, at_risk, 1.0), 1.0)
        km = 1.0 - np.cumprod(s)
        cc = np.cumsum(cen[::-1])[::-1] + uppercen
        u = np.cumsum(nco) - np.concatenate([[0.0], np.cumsum(ncc)[:-1]])
        rs = np.where(cc > 0, u / np.where(cc > 0, cc, 1.0), np.nan)
    return km, rs


def _hanisch(x, areas, r):
    with np.errstate(divide="ignore", invalid="ignore"):
        H = np.cumsum(_cells_right(x, r) / areas)
    fin = np.isfinite(H)
    if not fin.any() or np.max(H[fin]) <= 0:
        return np.where(fin, 0.0, np.nan)
    return np.where(fin, H / np.max(H[fin]), np.nan)


def _eroded_areas(win, r, raster=None):
    """|W eroded by r|: exact for rectangles; for polygons the pixel count of ``raster`` (spatstat's rule)."""
    if win.is_rectangle:
        xmin, xmax, ymin, ymax = win.bounds
        return np.maximum(xmax - xmin - 2 * r, 0.0) * np.maximum(ymax - ymin - 2 * r, 0.0)
    if raster is None:
        raster = distance_raster(np.empty((0, 2)), win)
    bd = np.sort(raster["b"])
    return raster["pixel_area"] * (len(bd) - np.searchsorted(bd, r, side="right"))


def _finish(name, r, value, theo, corr, n, undefined_name=None):
    bad = ~np.isfinite(value)
    value = np.where(bad, np.nan, value)
    if bad.any():
        _warn_range(undefined_name or name, corr, float(r[np.flatnonzero(bad)[0]]))
    return SummaryFunction(name, r, value, theo, corr, n)


# ============================================================================ G
def g_function(X, window=None, r=None, correction="km"):
    r"""Nearest-neighbour distance distribution G (spatstat's ``Gest``; module docstring).

    Parameters
    ----------
    X : array-like of shape (n, 2)
        The pattern, inside ``window``.
    window : tuple, array-like of shape (V, 2), Window or None, default=None
        ``None``: the bounding box of ``X``.
    r : array-like, optional
        Increasing distances starting at 0 (default: spatstat's grid, :func:`default_nn_radii`).
    correction : {"km", "rs", "han", "none"}, default="km"
        Kaplan-Meier, reduced sample (also "border"), Hanisch, or none (also "raw").

    Returns
    -------
    SummaryFunction
        ``theo = 1 - exp(-lambda pi r^2)``. NaN where the correction is undefined (``"rs"``: no point
        farther than r from the boundary; ``"han"``: empty eroded window), with a :class:`RangeWarning`.

    Examples
    --------
    >>> X = np.array([[0.4, 0.5], [0.6, 0.5], [0.5, 0.9]])
    >>> g_function(X, (0, 1, 0, 1), r=[0, 0.1, 0.2, 0.3], correction="none").value.tolist()
    [0.0, 0.0, 0.6666666666666666, 0.6666666666666666]
    """
    X, win = _check_pattern(X, window, consequence="a copy is its twin's nearest neighbour at distance 0")
    corr = _correction(correction, _G_CORR)
    n = len(X)
    if n < 2:
        raise ValueError(f"'X' needs at least 2 points for nearest-neighbour distances; got {n}.")
    r = _check_r(r, None if r is not None else default_nn_radii(win, n))
    lam = n / win.area
    theo = 1.0 - np.exp(-lam * np.pi * r * r)
    nnd = cKDTree(X).query(X, k=2)[0][:, 1]
    if corr == "none":
        return SummaryFunction("G", r, np.cumsum(_cells_right(nnd, r)) / n, theo, corr, n)
    b = boundary_distance(X, win)
    d = nnd <= b
    if corr == "han":
        return _finish("G", r, _hanisch(nnd[d], _eroded_areas(win, r), r), theo, corr, n)
    km, rs = _km_rs(np.minimum(nnd, b), b, d, r)
    return _finish("G", r, km if corr == "km" else rs, theo, corr, n)


# ============================================================================ F
@numba.njit(cache=True)
def _propagate_labels(px, py, x0, y0, xstep, ystep, nr, nc):  # pragma: no cover - compiled
    """spatstat's ``exactdt``: nearest-point labels seeded at the 4 pixels around each point, then one
    forward and one backward raster pass over a grid padded by 2 pixels. Returns squared distances."""
    m = 2
    NR, NC = nr + 2 * m, nc + 2 * m
    x1 = x0 + xstep * (nc - 1)
    y1 = y0 + ystep * (nr - 1)
    init = 2.0 * ((x0 - x1) * (x0 - x1) + (y0 - y1) * (y0 - y1))
    dist = np.full((NR, NC), init)
    idx = np.full((NR, NC), -1, dtype=np.int64)
    for i in range(len(px)):
        j = m + int(math.floor((py[i] - y0) / ystep))
        k = m + int(math.floor((px[i] - x0) / xstep))
        for l in range(j, j + 2):
            for q in range(k, k + 2):
                xx = x0 + xstep * (q - m)
                yy = y0 + ystep * (l - m)
                dd = (px[i] - xx) * (px[i] - xx) + (py[i] - yy) * (py[i] - yy)
                if idx[l, q] < 0 or dist[l, q] > dd:
                    idx[l, q] = i
                    dist[l, q] = dd
    fwd = ((-1, -1), (-1, 0), (-1, 1), (0, -1))
    for j in range(m, m + nr):
        for k in range(m, m + nc):
            for t in range(4):
                _compare(dist, idx, px, py, x0, y0, xstep, ystep, m, j, k, j + fwd[t][0], k + fwd[t][1])
    for j in range(m + nr - 1, m - 1, -1):
        for k in range(m + nc - 1, m - 1, -1):
            for t in range(4):
                _compare(dist, idx, px, py, x0, y0, xstep, ystep, m, j, k, j - fwd[t][0], k - fwd[t][1])
    return dist[m:m + nr, m:m + nc].copy()


@numba.njit(cache=True, inline="always")
def _compare(dist, idx, px, py, x0, y0, xstep, ystep, m, j, k, jj, kk):  # pragma: no cover - compiled
    d = dist[j, k]
    ii = idx[jj, kk]
    if ii >= 0 and dist[jj, kk] < d:
        xx = x0 + xstep * (k - m)
        yy = y0 + ystep * (j - m)
        dd = (px[ii] - xx) * (px[ii] - xx) + (py[ii] - yy) * (py[ii] - yy)
        if dd < d:
            idx[j, k] = ii
            dist[j, k] = dd


def _raster_shape(win, eps, dimyx):
    xmin, xmax, ymin, ymax = win.bounds
    if eps is not None and dimyx is not None:
        raise ValueError("give at most one of 'eps' and 'dimyx'.")
    if eps is not None:
        if np.ndim(eps) == 0:
            eps = (eps, eps)
        ex = check_scalar_float(eps[0], "eps", low=0.0, closed="neither")
        ey = check_scalar_float(eps[1], "eps", low=0.0, closed="neither")
        nc, nr = max(int(math.ceil((xmax - xmin) / ex)), 2), max(int(math.ceil((ymax - ymin) / ey)), 2)
    elif dimyx is not None:
        if np.ndim(dimyx) == 0:
            dimyx = (dimyx, dimyx)
        nr = check_scalar_int(dimyx[0], "dimyx", low=2, high=1 << 14)
        nc = check_scalar_int(dimyx[1], "dimyx", low=2, high=1 << 14)
    else:
        nr = nc = NPIXEL
    if nr * nc > MAX_PIXELS:
        raise ValueError(f"the raster of 'eps'/'dimyx' has {nr * nc} pixels; at most {MAX_PIXELS} are allowed "
                         f"(about 60 bytes each).")
    return nr, nc


def default_f_radii(window, n, eps=None, dimyx=None):
    """spatstat's default r grid for F: :func:`default_nn_radii` with the step of F's raster (``Fest``
    takes its r step from the pixel side of ``as.mask(W, eps, dimyx)``)."""
    nr, nc = _raster_shape(window, eps, dimyx)
    xmin, xmax, ymin, ymax = window.bounds
    return default_nn_radii(window, n, min((xmax - xmin) / nc, (ymax - ymin) / nr))


def distance_raster(X, window, eps=None, dimyx=None):
    """F's test locations: pixel centres of a raster of the bounding box (those inside the window), their
    distance ``d`` to the nearest point of ``X`` (spatstat's ``exactdt``) and ``b`` to the boundary.

    Parameters
    ----------
    X : ndarray of shape (n, 2)
        The pattern.
    window : Window
        The window.
    eps : float or (float, float), optional
        Pixel side: ``ceil(width / eps)`` columns (spatstat's ``as.mask(eps=)``).
    dimyx : int or (int, int), optional
        Raster rows and columns (default ``NPIXEL x NPIXEL``).

    Returns
    -------
    dict
        ``d``, ``b`` (1-d, pixels inside the window), ``pixel_area``, ``step`` (smaller pixel side),
        ``shape``.
    """
    win = window
    nr, nc = _raster_shape(win, eps, dimyx)
    xmin, xmax, ymin, ymax = win.bounds
    sx, sy = (xmax - xmin) / nc, (ymax - ymin) / nr
    xcol = xmin + (np.arange(nc) + 0.5) * sx
    yrow = ymin + (np.arange(nr) + 0.5) * sy
    x0, y0 = float(xcol[0]), float(yrow[0])
    xstep, ystep = (float(xcol[-1]) - x0) / (nc - 1), (float(yrow[-1]) - y0) / (nr - 1)
    X = np.asarray(X, dtype=np.float64).reshape(-1, 2)
    if len(X):
        d2 = _propagate_labels(np.ascontiguousarray(X[:, 0]), np.ascontiguousarray(X[:, 1]), x0, y0, xstep, ystep,
                               nr, nc)
        d = np.sqrt(d2)
    else:
        d = np.full((nr, nc), np.inf)
    gx = x0 + xstep * np.arange(nc)
    gy = y0 + ystep * np.arange(nr)
    if win.is_rectangle:
        bx = np.minimum(gx - (x0 - xstep / 2), (gx[-1] + xstep / 2) - gx)
        by = np.minimum(gy - (y0 - ystep / 2), (gy[-1] + ystep / 2) - gy)
        b = np.minimum(by[:, None], bx[None, :]).ravel()
        d = d.ravel()
    else:
        P = np.column_stack([np.tile(gx, nr), np.repeat(gy, nc)])
        inside = win.contains(P)
        b = boundary_distance(P[inside], win)
        d = d.ravel()[inside]
    return {"d": d, "b": b, "pixel_area": sx * sy, "step": min(sx, sy), "shape": (nr, nc)}


def f_function(X, window=None, r=None, correction="km", eps=None, dimyx=None):
    r"""Empty-space function F (spatstat's ``Fest``; module docstring).

    Parameters
    ----------
    X : array-like of shape (n, 2)
        The pattern, inside ``window``.
    window : tuple, array-like of shape (V, 2), Window or None, default=None
        ``None``: the bounding box of ``X``.
    r : array-like, optional
        Increasing distances starting at 0 (default: spatstat's grid, step a quarter of the pixel side).
    correction : {"km", "rs", "cs", "none"}, default="km"
        Kaplan-Meier, reduced sample (also "border"), Chiu-Stoyan (also "han"), or none.
    eps : float or (float, float), optional
        Pixel side of the raster of test locations.
    dimyx : int or (int, int), optional
        Rows and columns of that raster (default 128 x 128, spatstat's default).

    Returns
    -------
    SummaryFunction
        ``theo = 1 - exp(-lambda pi r^2)``; NaN where the correction is undefined (with a
        :class:`RangeWarning`).
    """
    X, win = _check_pattern(X, window, consequence="copies do not change F")
    corr = _correction(correction, _F_CORR, {"han": "cs"})
    n = len(X)
    if n < 1:
        raise ValueError("'X' needs at least 1 point for the empty-space function; got 0.")
    ras = distance_raster(X, win, eps, dimyx)
    r = _check_r(r, None if r is not None else default_nn_radii(win, n, ras["step"]))
    return _f_from_raster(ras, win, r, corr, n)


def _f_from_raster(ras, win, r, corr, n):
    theo = 1.0 - np.exp(-(n / win.area) * np.pi * r * r)
    dist, b = ras["d"], ras["b"]
    if corr == "none":
        return SummaryFunction("F", r, np.cumsum(_cells_right(dist, r)) / len(dist), theo, corr, n)
    d = dist <= b
    if corr == "cs":
        return _finish("F", r, _hanisch(dist[d], _eroded_areas(win, r, ras), r), theo, corr, n)
    km, rs = _km_rs(np.minimum(dist, b), b, d, r)
    return _finish("F", r, km if corr == "km" else rs, theo, corr, n)


# ============================================================================ J
def j_function(X, window=None, r=None, correction="km", eps=None, dimyx=None):
    r"""J function ``(1 - G) / (1 - F)`` (spatstat's ``Jest``; module docstring).

    Parameters
    ----------
    X : array-like of shape (n, 2)
        The pattern, inside ``window``.
    window : tuple, array-like of shape (V, 2), Window or None, default=None
        ``None``: the bounding box of ``X``.
    r : array-like, optional
        Increasing distances starting at 0 (default: G's grid, :func:`default_nn_radii`).
    correction : {"km", "rs", "han", "none"}, default="km"
        The correction of G and F ("han": Hanisch G with Chiu-Stoyan F).
    eps, dimyx : optional
        F's raster (:func:`f_function`).

    Returns
    -------
    SummaryFunction
        ``theo = 1``; NaN where ``F = 1`` or a correction is undefined (with a :class:`RangeWarning`).
    """
    X, win = _check_pattern(X, window, consequence="a copy is its twin's nearest neighbour at distance 0")
    corr = _correction(correction, _G_CORR, {"cs": "han"})
    n = len(X)
    if n < 2:
        raise ValueError(f"'X' needs at least 2 points for nearest-neighbour distances; got {n}.")
    r = _check_r(r, None if r is not None else default_nn_radii(win, n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RangeWarning)
        G = g_function(X, win, r, corr).value
        F = _f_from_raster(distance_raster(X, win, eps, dimyx), win, r, {"han": "cs"}.get(corr, corr), n).value
    with np.errstate(divide="ignore", invalid="ignore"):
        J = np.where(1.0 - F != 0, (1.0 - G) / (1.0 - F), np.nan)
    return _finish("J", r, J, np.ones_like(r), corr, n)


#: Statistics of :func:`envelope` by name: the function and its default r grid.
NN_STATS = {"G": (g_function, default_nn_radii), "F": (f_function, default_f_radii),
            "J": (j_function, default_nn_radii)}
