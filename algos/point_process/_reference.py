"""Plain-numpy twins of the numba kernels in :mod:`._kernels` and :mod:`._pair_kernels` that have no torch
core (readable definitions for the tests). The NNGP rows and the dense inverse are references through
:mod:`accel.point_process` run on numpy (``nngp_rows_batched(..., backend="numpy")``,
``DenseTorchFactor(..., backend="numpy")``)."""

from __future__ import annotations

import numpy as np

__all__ = ["clip_area_reference", "circle_fraction_reference", "overlap_area_reference"]


def _sort_ccw(V, c):
    ang = np.arctan2(V[:, 1] - c[1], V[:, 0] - c[0])
    return V[np.argsort(ang)]


def _shoelace(P):
    x, y = P[:, 0], P[:, 1]
    return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(np.roll(x, -1), y))


def clip_area_reference(cell_vertices, centre, window):
    """Area of the polygon ``window`` clipped to the convex cell (Sutherland--Hodgman, pure numpy)."""
    C = _sort_ccw(np.asarray(cell_vertices, dtype=float), centre)
    poly = [tuple(p) for p in np.asarray(window, dtype=float)]
    for e in range(len(C)):
        a, b = C[e], C[(e + 1) % len(C)]
        side = lambda p: (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])  # noqa: E731
        out = []
        for t in range(len(poly)):
            p, q = np.array(poly[t]), np.array(poly[(t + 1) % len(poly)])
            dp, dq = side(p), side(q)
            if dp >= 0:
                out.append(tuple(p))
            if (dp >= 0) != (dq >= 0):
                out.append(tuple(p + dp / (dp - dq) * (q - p)))
        poly = out
        if not poly:
            return 0.0
    return abs(_shoelace(np.array(poly))) if len(poly) >= 3 else 0.0


def circle_fraction_reference(centre, radius, window, n_angles=200_000):
    """Fraction of the circle (centre, radius) inside ``window``, by ``n_angles`` equally spaced points."""
    from ._window import Window

    t = (np.arange(n_angles) + 0.5) * (2 * np.pi / n_angles)
    P = np.column_stack([centre[0] + radius * np.cos(t), centre[1] + radius * np.sin(t)])
    return float(np.mean(Window.from_any(window).contains(P)))


def overlap_area_reference(shift, window, n_grid=1500):
    """|W intersect (W + shift)| by the midpoint rule on an ``n_grid x n_grid`` raster of a box holding both."""
    from ._window import Window

    w = Window.from_any(window)
    xmin, xmax, ymin, ymax = w.bounds
    lo = np.array([xmin + min(0, shift[0]), ymin + min(0, shift[1])])
    hi = np.array([xmax + max(0, shift[0]), ymax + max(0, shift[1])])
    xs = lo[0] + (np.arange(n_grid) + 0.5) * (hi[0] - lo[0]) / n_grid
    ys = lo[1] + (np.arange(n_grid) + 0.5) * (hi[1] - lo[1]) / n_grid
    XX, YY = np.meshgrid(xs, ys)
    P = np.column_stack([XX.ravel(), YY.ravel()])
    inside = w.contains(P) & w.contains(P - np.asarray(shift, dtype=float))
    return float(inside.sum() * (hi[0] - lo[0]) * (hi[1] - lo[1]) / n_grid**2)
