r"""Where the isotropic and translation edge corrections of K are valid (spatstat's rule, ``Kest``).

spatstat sets ``Kest``'s isotropic estimate to NA for :math:`r \ge` the window's *bounding radius*
(``boundingradius``: the radius of the smallest disc centred in W that contains W) and its translation
estimate for :math:`r \ge` the distance from the origin to the boundary of the support of the set
covariance :math:`h \mapsto |W \cap (W + h)|` (``rmax.Trans``). For a rectangle (its ``Krect.engine``)
both limits are half the diagonal. spatstat computes the polygon limits on a pixel raster; here they
are computed from the polygon itself (bounding radius: exact, by minimising the convex function
:math:`x \mapsto \max_v |x - v|` over the polygon; translation: the first zero of the overlap area
along 720 rays, bisected to 1e-12 of the diameter), so they differ from spatstat's by at most about a
pixel (tests).
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from ._pair_kernels import polygon_overlap_area_rings

__all__ = ["RangeWarning", "valid_rmax", "mask_beyond_range"]

#: Rays scanned for the translation limit of a polygon.
N_RAYS = 720
_GOLD = (math.sqrt(5.0) - 1.0) / 2.0


class RangeWarning(UserWarning):
    """An edge-corrected summary was asked for distances where its correction is undefined (NaN there)."""


def _far(px, py, v):
    """max over vertices of the distance from each (px, py)."""
    return np.sqrt(np.max((px[..., None] - v[:, 0]) ** 2 + (py[..., None] - v[:, 1]) ** 2, axis=-1))


def _golden(f, lo, hi, iters=64):
    """Minimise a convex function elementwise on [lo, hi] (arrays) by golden sections, both inner points
    evaluated in one call of ``f``; 64 steps shrink the bracket by 0.618^64 (4e-14). Returns (argmin, min)."""
    a, b = np.array(lo, dtype=np.float64), np.array(hi, dtype=np.float64)
    for _ in range(iters):
        c = b - _GOLD * (b - a)
        d = a + _GOLD * (b - a)
        fc, fd = f(np.stack([c, d]))
        left = fc <= fd
        b = np.where(left, d, b)
        a = np.where(left, a, c)
    x = 0.5 * (a + b)
    return x, f(x[None])[0]


def bounding_radius(win):
    """Radius of the smallest disc centred in the window that contains it (spatstat's ``boundingradius``)."""
    xmin, xmax, ymin, ymax = win.bounds
    if win.is_rectangle:
        return 0.5 * math.hypot(xmax - xmin, ymax - ymin)
    v = win.vertices

    def g(x):  # min over y of the far distance, for each x (convex in x)
        return _golden(lambda y: _far(np.broadcast_to(x, np.shape(y)), y, v), np.full(np.shape(x), ymin),
                       np.full(np.shape(x), ymax))[1]

    x_star, _ = _golden(g, np.array(xmin), np.array(xmax))
    y_star, best = _golden(lambda y: _far(np.broadcast_to(x_star, np.shape(y)), y, v), np.array(ymin), np.array(ymax))
    if win.contains(np.array([[float(x_star), float(y_star)]]))[0]:
        return float(best)
    # the minimiser lies on the boundary: a 1-d convex problem on each edge
    a, b = win.edges()
    _, fmin = _golden(lambda t: _far(a[:, 0] + t * (b[:, 0] - a[:, 0]), a[:, 1] + t * (b[:, 1] - a[:, 1]), v),
                      np.zeros(len(v)), np.ones(len(v)))
    return float(np.min(fmin))


def translation_rmax(win):
    """Distance from the origin to the boundary of ``{h: |W n (W + h)| > 0}`` (spatstat's ``rmax.Trans``)."""
    xmin, xmax, ymin, ymax = win.bounds
    if win.is_rectangle:
        return 0.5 * math.hypot(xmax - xmin, ymax - ymin)
    v = win.vertices
    vx, vy = np.ascontiguousarray(v[:, 0]), np.ascontiguousarray(v[:, 1])
    ptr = np.ascontiguousarray(win.ring_ptr)
    diam = 2.0 * math.hypot(xmax - xmin, ymax - ymin)
    th = np.arange(N_RAYS) * (2 * np.pi / N_RAYS)
    ux, uy = np.cos(th), np.sin(th)
    tiny = 1e-12 * win.area
    # first grid step with zero overlap on each ray, then bisection below it
    ts = np.linspace(0.0, diam, 257)[1:]
    ov = polygon_overlap_area_rings(np.ascontiguousarray(np.outer(ux, ts).ravel()),
                                    np.ascontiguousarray(np.outer(uy, ts).ravel()), vx, vy, ptr).reshape(N_RAYS, -1)
    first = np.argmax(ov <= tiny, axis=1)
    hi = ts[first]
    lo = np.where(first > 0, ts[np.maximum(first - 1, 0)], 0.0)
    while np.max(hi - lo) > 1e-12 * diam:
        mid = 0.5 * (lo + hi)
        zero = polygon_overlap_area_rings(np.ascontiguousarray(ux * mid), np.ascontiguousarray(uy * mid), vx, vy,
                                          ptr) <= tiny
        hi = np.where(zero, mid, hi)
        lo = np.where(zero, lo, mid)
    return float(np.min(hi))


@functools.lru_cache(maxsize=64)
def valid_rmax(win, correction):
    """Distance from which ``correction`` ("isotropic", "translation") is undefined (NA in spatstat); inf else
    (cached per window: an envelope asks once)."""
    if correction == "isotropic":
        return bounding_radius(win)
    if correction == "translation":
        return translation_rmax(win)
    return math.inf


def mask_beyond_range(value, r, win, correction, name):
    """``value`` with NaN at ``r >= valid_rmax(win, correction)``; one :class:`RangeWarning` if any."""
    if correction not in ("isotropic", "translation"):
        return value
    xmin, xmax, ymin, ymax = win.bounds
    if correction == "isotropic" and r[-1] < 0.5 * max(xmax - xmin, ymax - ymin):
        return value  # the bounding radius is at least half the diameter
    h = valid_rmax(win, correction)
    bad = r >= h
    if bad.any():
        value = np.where(bad, np.nan, value)
        warnings.warn(f"{name} with the {correction} correction is undefined for r >= {h:.6g} (spatstat's rule; "
                      f"NaN there, as spatstat's NA).", RangeWarning, stacklevel=3)
    return value
