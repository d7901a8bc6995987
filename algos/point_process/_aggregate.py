r"""Aggregated-count quadrature: a regular grid of cells clipped to the window, counts as data.

The Voronoi scheme (:mod:`._quadrature`) makes every distinct point a node, so its node count grows
with ``n``. Here the window's bounding box is cut into a ``gx x gy`` grid of cells; the node of a cell
is its centre (for a cell cut by a polygon's boundary, the centroid of the part inside, estimated on a
4 x 4 sub-grid, moved to the nearest point of the window's boundary when it falls outside), its weight
the area of the cell clipped to the window, and its count the number of points in it.
The Poisson log-likelihood becomes

.. math::

   \ell(\eta) = \sum_j \big(c_j \eta_j - w_j e^{\eta_j}\big),

the Berman--Turner sum with counts :math:`c_j` in place of the 0/1 data indicators (Berman & Turner 1992);
the ``lgcp`` package and Diggle et al. (2013) fit log-Gaussian Cox processes on the same grid of counts.
A Voronoi quadrature is the special case where every cell holds 0 or 1 point (or a point's copies), and
for an intensity constant on each cell the sum is the exact log-likelihood of the pattern
(:func:`poisson_loglik`). The number of nodes is set by the grid alone: ``n`` enters only the counts.
"""

from __future__ import annotations

import math

import numpy as np

from ._quadrature import Quadrature, check_points, window_clip_areas
from ._window import Window

__all__ = ["grid_quadrature", "grid_shape", "poisson_loglik", "AUTO_GRID_SIDE", "AUTO_GRID_MIN_POINTS"]

#: ``n_dummy="auto"`` with the grid quadrature: a grid of about ``AUTO_GRID_SIDE^2`` cells over the
#: window's bounding box (fewer for small patterns: the Voronoi dummy-grid side ``max(16, ceil(2 sqrt(n)))``).
AUTO_GRID_SIDE = 128

#: ``quadrature="auto"`` in :class:`VoGCAM` is the grid quadrature from this many points on (the Voronoi
#: scheme below): above it the Voronoi fit has more than three times the grid's nodes and costs
#: several times its CPU and memory for an intensity RMSE that differs by a few per cent
#: (docs/point_process.md, "Aggregated counts").
AUTO_GRID_MIN_POINTS = 50_000

#: Sub-cells per side used to place the node of a cell cut by a polygon's boundary.
_SUB = 4


def grid_shape(window, n_cells):
    """``(gx, gy)``: a grid of about ``n_cells`` cells over the bounding box, cells as square as possible."""
    win = Window.from_any(window)
    xmin, xmax, ymin, ymax = win.bounds
    ar = (xmax - xmin) / (ymax - ymin)
    gx = max(1, int(round(math.sqrt(n_cells * ar))))
    gy = max(1, int(round(math.sqrt(n_cells / ar))))
    return gx, gy


def _clipped_areas(win, x0, y0, dx, dy):
    """Areas of the axis-aligned rectangles ``[x0, x0 + dx] x [y0, y0 + dy]`` clipped to ``win``."""
    m = len(x0)
    if win.is_rectangle:
        xmin, xmax, ymin, ymax = win.bounds
        wx = np.clip(x0 + dx, xmin, xmax) - np.clip(x0, xmin, xmax)
        wy = np.clip(y0 + dy, ymin, ymax) - np.clip(y0, ymin, ymax)
        return wx * wy
    # unit-scale the coordinates as voronoi_weights does, then the numba clipper (cells are convex)
    xmin, xmax, ymin, ymax = win.bounds
    shift = np.array([0.5 * (xmin + xmax), 0.5 * (ymin + ymax)])
    scale = max(xmax - xmin, ymax - ymin)
    corners = np.empty((m, 4, 2))
    corners[:, 0] = np.column_stack([x0, y0])
    corners[:, 1] = np.column_stack([x0 + dx, y0])
    corners[:, 2] = np.column_stack([x0 + dx, y0 + dy])
    corners[:, 3] = np.column_stack([x0, y0 + dy])
    verts = (corners.reshape(-1, 2) - shift) / scale
    centres = (np.column_stack([x0 + 0.5 * dx, y0 + 0.5 * dy]) - shift) / scale
    ptr = np.arange(0, 4 * m + 1, 4, dtype=np.int64)
    vidx = np.arange(4 * m, dtype=np.int64)
    area = window_clip_areas(ptr, vidx, verts, centres, [(ring - shift) / scale for ring in win.rings])
    if not np.all(np.isfinite(area)):
        raise RuntimeError("polygon clipping overflowed its buffer; please report this window.")
    return area * scale * scale


def _nearest_on_boundary(P, win):
    """The nearest point to each row of ``P`` on the boundary (any ring) of the window ``win``."""
    A, B = win.edges()
    AB = B - A
    t = np.einsum("mvk,vk->mv", P[:, None, :] - A[None], AB) / np.einsum("vk,vk->v", AB, AB)
    C = A[None] + np.clip(t, 0.0, 1.0)[..., None] * AB[None]
    best = np.argmin(((C - P[:, None, :]) ** 2).sum(axis=2), axis=1)
    return C[np.arange(len(P)), best]


def grid_quadrature(X, window, n_cells):
    """Aggregated-count quadrature of the points ``X``: about ``n_cells`` grid cells clipped to ``window``.

    Parameters
    ----------
    X : array-like, shape (n, 2)
        Points inside the window (boundary allowed); ``n = 0`` is allowed. Duplicates are simply counted.
    window : tuple (xmin, xmax, ymin, ymax), (V, 2) polygon, or Window
    n_cells : int >= 4
        About how many cells the bounding box is cut into (:func:`grid_shape`); cells outside a polygon
        window are dropped.

    Returns
    -------
    Quadrature
        ``nodes`` the cell centres (a boundary cell of a polygon: the centroid of its part inside),
        ``weights`` the clipped cell areas (they sum to the window area), ``counts`` the points per cell
        (they sum to ``n``), ``is_data`` whether a cell holds a point, ``point_node`` the node of each
        point and ``grid_size = max(gx, gy)``.

    Examples
    --------
    >>> q = grid_quadrature([[0.1, 0.1], [0.2, 0.15], [0.9, 0.9]], (0, 1, 0, 1), 4)
    >>> q.counts.tolist(), q.weights.tolist()
    ([2.0, 0.0, 0.0, 1.0], [0.25, 0.25, 0.25, 0.25])
    """
    win = Window.from_any(window)
    X = check_points(X, win)
    n_cells = int(n_cells)
    if n_cells < 4:
        raise ValueError(f"'n_dummy' (grid cells) must be at least 4; got {n_cells}.")
    xmin, xmax, ymin, ymax = win.bounds
    gx, gy = grid_shape(win, n_cells)
    dx, dy = (xmax - xmin) / gx, (ymax - ymin) / gy
    ix, iy = np.meshgrid(np.arange(gx), np.arange(gy), indexing="ij")
    ix, iy = ix.ravel(), iy.ravel()
    x0, y0 = xmin + ix * dx, ymin + iy * dy
    w = _clipped_areas(win, x0, y0, dx, dy)
    w[w <= 1e-12 * dx * dy] = 0.0  # cells that touch the window along an edge only (round-off)
    nodes = np.column_stack([x0 + 0.5 * dx, y0 + 0.5 * dy])
    if not win.is_rectangle:
        cut = (w > 0.0) & (w < (1.0 - 1e-12) * dx * dy)
        if cut.any():
            # the node of a cut cell: the area-weighted centre of its sub-cells (inside the window)
            c = np.flatnonzero(cut)
            s = (np.arange(_SUB) + 0.0) / _SUB
            shape = (len(c), _SUB, _SUB)
            sx = np.broadcast_to(x0[c, None, None] + s[None, :, None] * dx, shape).reshape(-1)
            sy = np.broadcast_to(y0[c, None, None] + s[None, None, :] * dy, shape).reshape(-1)
            sub = _clipped_areas(win, sx, sy, dx / _SUB, dy / _SUB).reshape(len(c), _SUB * _SUB)
            cx = (sx + 0.5 * dx / _SUB).reshape(len(c), -1)
            cy = (sy + 0.5 * dy / _SUB).reshape(len(c), -1)
            tot = sub.sum(axis=1)
            ok = tot > 0.0
            nodes[c[ok], 0] = (sub[ok] * cx[ok]).sum(axis=1) / tot[ok]
            nodes[c[ok], 1] = (sub[ok] * cy[ok]).sum(axis=1) / tot[ok]
            # a centroid outside (the part inside is not convex): its nearest point on the window's boundary
            out = c[~win.contains(nodes[c])]
            if len(out):
                nodes[out] = _nearest_on_boundary(nodes[out], win)
    # the cell of each point (points on the far edges belong to the last cell)
    px = np.clip(np.floor((X[:, 0] - xmin) / dx).astype(np.int64), 0, gx - 1)
    py = np.clip(np.floor((X[:, 1] - ymin) / dy).astype(np.int64), 0, gy - 1)
    cell = px * gy + py
    counts = np.bincount(cell, minlength=gx * gy).astype(np.float64)
    if np.any(w[counts > 0] <= 0.0):
        raise ValueError("a cell holding a point received zero area; the likelihood would be unbounded.")
    keep = w > 0.0
    new = np.cumsum(keep) - 1
    return Quadrature(nodes=nodes[keep], weights=w[keep], counts=counts[keep], is_data=counts[keep] > 0,
                      point_node=new[cell].astype(np.int64), window=win, grid_size=max(gx, gy))


def poisson_loglik(quad, eta):
    r"""The Berman--Turner Poisson log-likelihood :math:`\sum_j (c_j \eta_j - w_j e^{\eta_j})` of the
    log-intensity values ``eta`` (N,) at the nodes of ``quad`` (any quadrature: counts or 0/1 indicators).

    For the grid quadrature and an intensity constant on each cell it equals the exact log-likelihood
    :math:`\sum_i \eta(x_i) - \int_W e^{\eta}` of the pattern.

    Parameters
    ----------
    quad : Quadrature
    eta : array-like of shape (N,)

    Returns
    -------
    float
    """
    eta = np.asarray(eta, dtype=np.float64)
    if eta.shape != quad.weights.shape:
        raise ValueError(f"'eta' must have shape {quad.weights.shape}; got {eta.shape}.")
    return float(quad.counts @ eta - quad.weights @ np.exp(eta))
