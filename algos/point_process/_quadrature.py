r"""Voronoi (Dirichlet) quadrature for point-process likelihoods — the Berman--Turner device.

Nodes :math:`u_1..u_N` are the distinct observed points plus dummy points; the weight of a node is the
area of its Voronoi cell clipped to the window, :math:`w_j = |V(u_j)\cap W|`, so that
:math:`\int_W \lambda \approx \sum_j w_j \lambda(u_j)` (Berman & Turner 1992; Baddeley & Turner 2000).
The rule is exact for a constant intensity because the clipped cells partition the window.

* Rectangles (``method="mirror"``): the Voronoi diagram of the nodes together with their reflections
  across the four edges (the *mirror trick*): every original cell is then bounded by the window already.
* Polygons (convex or not): four far bounding points make every cell finite; the window polygon (the
  subject) is clipped against each convex cell (the clipper) by Sutherland--Hodgman and the shoelace
  formula gives the area (numba kernel :func:`._kernels.clip_areas`). This is also the default for
  rectangles (a diagram of N + 4 instead of 5N points); the clipping is applied after the mirror trick
  too, which makes nodes on the boundary (whose reflection is themselves) safe.

The dummy-grid default (``g = max(16, ceil(2 sqrt(n)))`` cell centres) is *reconstructed* (close to
spatstat's ``default.n.tiling``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import numbers
import warnings

import numpy as np
from scipy.spatial import Voronoi

from .._validation import check_option, check_random_state
from ._kernels import clip_areas, rows_kernel
from ._window import Window, coordinate_array, signed_area

__all__ = ["voronoi_weights", "build_quadrature", "Quadrature", "check_points", "default_grid_size",
           "auto_grid_size", "warn_duplicates"]

#: Far bounding points sit this many (unit-scaled) window diameters from the centre.
FAR_FACTOR = 10.0


def check_points(X, window, name="X"):
    """Validate an (n, 2) array of finite points inside ``window`` (boundary allowed); n = 0 allowed."""
    X = coordinate_array(X, name, empty_1d=True)
    if not np.all(np.isfinite(X)):
        i = int(np.argwhere(~np.isfinite(X))[0, 0])
        raise ValueError(f"'{name}' must contain only finite coordinates; got {X[i].tolist()} at row {i}.")
    if len(X):
        inside = window.contains(X)
        if not inside.all():
            i = int(np.flatnonzero(~inside)[0])
            raise ValueError(
                f"'{name}' has {int((~inside).sum())} point(s) outside the window {window!r}; "
                f"first: {X[i].tolist()} at row {i}."
            )
    return X


def warn_duplicates(X, consequence, name="X", stacklevel=3):
    """Warn (``UserWarning``) when rows of the (n, 2) array ``X`` repeat; returns how many rows equal an
    earlier row. ``consequence`` says what the caller does with the copies."""
    if len(X) < 2:
        return 0
    k = int(len(X) - len(np.unique(X, axis=0)))
    if k:
        warnings.warn(f"'{name}' has {k} duplicated point(s) (rows equal to an earlier row); {consequence}.",
                      UserWarning, stacklevel=stacklevel)
    return k


@contextlib.contextmanager
def duplicates_reported():
    """Silence the duplicated-points warning in internal calls on a pattern already checked."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"'X' has \d+ duplicated point")
        yield


def default_grid_size(n):
    """The default dummy grid side ``g = max(16, ceil(2 sqrt(n)))`` [reconstructed default], before the
    node budget of :func:`auto_grid_size`."""
    return max(16, int(math.ceil(2.0 * math.sqrt(max(n, 0)))))


#: ``n_dummy="auto"`` keeps the number of quadrature nodes (points plus dummies) at most this, or
#: ``n + 16^2`` when the pattern alone has more points: about ``4n`` dummies grow the factorisations
#: and the selected inverse of the fit five-fold for little gain once the points themselves are dense.
AUTO_NODE_BUDGET = 50_000


def auto_grid_size(n, budget=AUTO_NODE_BUDGET):
    """Side ``g`` of the ``n_dummy="auto"`` grid: :func:`default_grid_size`, lowered (to at least 16)
    so that ``n + g^2 <= max(budget, n + 256)``."""
    g = default_grid_size(n)
    n = max(int(n), 0)
    if n + g * g > budget:
        g = max(16, int(math.isqrt(max(int(budget) - n, 0))))
    return g


def window_clip_areas(ptr, vidx, verts, centres, rings):
    """Area of the window inside each convex cell: the clipped area of every ring, with its sign (outer
    rings add, holes subtract; :func:`._kernels.clip_areas` clips one ring).

    Parameters
    ----------
    ptr, vidx, verts, centres : ndarray
        The cells, as :func:`._kernels.clip_areas` takes them.
    rings : sequence of ndarray of shape (V_k, 2)
        The window's rings (in the cells' coordinates), outer rings counter-clockwise, holes clockwise.

    Returns
    -------
    ndarray
        One area per cell (NaN where the clipper's buffer overflowed).
    """
    area = np.zeros(len(ptr) - 1)
    for ring in rings:
        a = rows_kernel(clip_areas, len(ptr) - 1)(ptr, vidx, np.ascontiguousarray(verts),
                                                  np.ascontiguousarray(centres), np.ascontiguousarray(ring))
        area += a if signed_area(ring) > 0 else -a
    if len(rings) > 1:
        np.maximum(area, 0.0, out=area)  # round-off of a cell inside a hole
    return area


def voronoi_weights(nodes, window, method="auto"):
    """Voronoi-cell areas of distinct ``nodes`` (N, 2) clipped to ``window``; they sum to the window area.

    Parameters
    ----------
    nodes : array-like, shape (N, 2)
        Distinct points inside the window (boundary allowed).
    window : tuple (xmin, xmax, ymin, ymax), (V, 2) polygon, or Window
    method : {"auto", "mirror", "clip"}, default="auto"
        ``"mirror"`` (rectangles only): the diagram of the nodes and their four reflections;
        ``"clip"``: the diagram of the nodes and four far points, the window clipped to each cell.
        ``"auto"`` is ``"clip"``: it gives the same areas (to round-off) from a diagram of N + 4 points
        instead of 5N, so it is about five times cheaper.

    Returns
    -------
    weights : ndarray, shape (N,)

    Examples
    --------
    >>> w = voronoi_weights([[0.25, 0.5], [0.75, 0.5]], (0, 1, 0, 1))
    >>> np.round(w, 12).tolist()
    [0.5, 0.5]
    """
    win = Window.from_any(window)
    check_option(method, "method", ("auto", "mirror", "clip"))
    if method == "mirror" and not win.is_rectangle:
        raise ValueError("method='mirror' needs a rectangular window; use 'clip' for polygons.")
    nodes = check_points(nodes, win, name="nodes")
    N = len(nodes)
    if N == 0:
        raise ValueError("'nodes' must contain at least 1 point; got 0.")
    if len(np.unique(nodes, axis=0)) != N:
        raise ValueError("'nodes' must be distinct; merge duplicate points first (build_quadrature does).")
    xmin, xmax, ymin, ymax = win.bounds
    shift = np.array([0.5 * (xmin + xmax), 0.5 * (ymin + ymax)])
    scale = max(xmax - xmin, ymax - ymin)
    P = (nodes - shift) / scale
    rings = [(ring - shift) / scale for ring in win.rings]
    bx0, bx1 = (xmin - shift[0]) / scale, (xmax - shift[0]) / scale
    by0, by1 = (ymin - shift[1]) / scale, (ymax - shift[1]) / scale
    pts = [P]
    if method == "mirror":
        for axis, edge, keep in ((0, bx0, P[:, 0] > bx0), (0, bx1, P[:, 0] < bx1), (1, by0, P[:, 1] > by0),
                                 (1, by1, P[:, 1] < by1)):
            R = P[keep].copy()
            R[:, axis] = 2.0 * edge - R[:, axis]
            pts.append(R)
    far = FAR_FACTOR * 2.0
    pts.append(np.array([[-far, -far], [far, -far], [far, far], [-far, far]]))
    allp = np.concatenate(pts)
    vor = Voronoi(allp)
    regions = [vor.regions[r] for r in vor.point_region[:N]]
    lens = np.fromiter((len(r) for r in regions), dtype=np.int64, count=N)
    if np.any(lens < 3) or any(-1 in r for r in regions):  # cannot happen with the far points; defensive
        raise RuntimeError("Voronoi diagram returned an unbounded cell for a node; please report this input.")
    ptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(lens, out=ptr[1:])
    vidx = np.fromiter((v for r in regions for v in r), dtype=np.int64, count=int(ptr[-1]))
    area = window_clip_areas(ptr, vidx, vor.vertices, P, rings)
    if not np.all(np.isfinite(area)):
        raise RuntimeError("polygon clipping overflowed its buffer; please report this window.")
    return area * scale * scale


@dataclasses.dataclass
class Quadrature:
    """Quadrature scheme: nodes, weights and counts.

    Parameters
    ----------
    nodes : ndarray of shape (N, 2)
        The nodes.
    weights : ndarray of shape (N,)
        Their weights (cell areas).
    counts : ndarray of shape (N,)
        Points at each node (``y``).
    is_data : ndarray of bool, shape (N,)
        Whether the node is a data point.
    point_node : ndarray of int, shape (n,)
        The node of each input point.
    window : Window
        The window.
    grid_size : int, default=0
        Side of the dummy grid.
    """

    nodes: np.ndarray
    weights: np.ndarray
    counts: np.ndarray
    is_data: np.ndarray
    point_node: np.ndarray
    window: Window
    grid_size: int = 0

    @property
    def n_nodes(self):
        r"""Number of quadrature nodes ``N``.
        """
        return len(self.nodes)

    def max_cell_radius(self):
        """An upper estimate of the largest cell radius: sqrt(max weight / pi) * 2 (cells are round-ish).

        Returns
        -------
        float
            The estimate.
        """
        return float(2.0 * np.sqrt(self.weights.max() / np.pi))


def _dummy_points(win, n_dummy, n, dummy, rng):
    xmin, xmax, ymin, ymax = win.bounds
    if isinstance(n_dummy, str):
        check_option(n_dummy, "n_dummy", ("auto",))
        g = auto_grid_size(n)  # a g x g grid over the bounding box (polygons: the part inside)
        total = g * g
    else:
        if isinstance(n_dummy, (bool, np.bool_)) or not isinstance(n_dummy, numbers.Integral):
            raise TypeError(f"'n_dummy' must be 'auto' or an int >= 0; got {n_dummy!r}.")
        if n_dummy < 0:
            raise ValueError(f"'n_dummy' must be 'auto' or an int >= 0; got {n_dummy!r}.")
        total = int(n_dummy)
        g = int(math.ceil(math.sqrt(total))) if total > 0 else 0
    if total == 0:
        return np.empty((0, 2)), 0
    if dummy == "grid":
        # a gx x gy grid of cell centres with cells as square as possible and about g*g of them
        ar = (xmax - xmin) / (ymax - ymin)
        gx = max(1, int(round(g * math.sqrt(ar))))
        gy = max(1, int(round(g / math.sqrt(ar))))
        if not isinstance(n_dummy, str):
            gx, gy = max(1, int(round(math.sqrt(total * ar)))), max(1, int(round(math.sqrt(total / ar))))
        xs = xmin + (np.arange(gx) + 0.5) * (xmax - xmin) / gx
        ys = ymin + (np.arange(gy) + 0.5) * (ymax - ymin) / gy
        D = np.column_stack([np.repeat(xs, gy), np.tile(ys, gx)])
        if not win.is_rectangle:
            D = D[win.contains(D)]
        return D, max(gx, gy)
    # uniform random dummies in the window (rejection from the bounding box)
    out = []
    need = total
    while need > 0:
        D = np.column_stack([rng.uniform(xmin, xmax, 2 * need + 16), rng.uniform(ymin, ymax, 2 * need + 16)])
        D = D[win.contains(D)][:need]
        out.append(D)
        need -= len(D)
    return np.concatenate(out), g


def build_quadrature(X, window, n_dummy="auto", dummy="grid", random_state=None):
    """Voronoi quadrature scheme for the points ``X`` in ``window``: distinct points plus dummies.

    Duplicate points are merged into one node with count ``y_j > 1`` (``point_node`` keeps the map);
    a dummy that coincides with a data point is dropped.

    Parameters
    ----------
    X : array-like, shape (n, 2)
        Points inside the window (boundary allowed); ``n = 0`` is allowed.
    window : tuple, (V, 2) polygon or Window
    n_dummy : "auto" or int, default="auto"
        ``"auto"``: a ``g x g`` grid with ``g = max(16, ceil(2 sqrt(n)))`` [reconstructed default],
        lowered so that the nodes number at most ``AUTO_NODE_BUDGET`` (50,000) or ``n + 256`` when
        the pattern alone is larger (:func:`auto_grid_size`); an int: about that many dummies.
    dummy : {"grid", "random"}, default="grid"
    random_state : None, int or Generator
        Used only for ``dummy="random"``.

    Returns
    -------
    Quadrature

    Raises
    ------
    ValueError
        Points outside the window, NaN coordinates, or fewer than 4 nodes in total.
    """
    win = Window.from_any(window)
    X = check_points(X, win)
    check_option(dummy, "dummy", ("grid", "random"))
    rng = check_random_state(random_state)
    n = len(X)
    if n:
        U, inv, cnt = np.unique(X, axis=0, return_inverse=True, return_counts=True)
        inv = inv.reshape(-1)
    else:
        U, inv, cnt = np.empty((0, 2)), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    D, g = _dummy_points(win, n_dummy, n, dummy, rng)
    if len(D) and len(U):
        # drop dummies that coincide with a data point
        from scipy.spatial import cKDTree

        d, _ = cKDTree(U).query(D, k=1)
        D = D[d > 0.0]
    nodes = np.concatenate([U, D]) if len(D) else U.copy()
    N = len(nodes)
    if N < 4:
        raise ValueError(
            f"the quadrature needs at least 4 nodes (data points plus dummies); got {N}. Increase 'n_dummy'."
        )
    w = voronoi_weights(nodes, win)
    counts = np.concatenate([cnt.astype(np.float64), np.zeros(len(D))])
    is_data = np.concatenate([np.ones(len(U), dtype=bool), np.zeros(len(D), dtype=bool)])
    if np.any(w[counts > 0] <= 0.0):
        raise ValueError("a data node received zero quadrature weight; the likelihood would be unbounded.")
    return Quadrature(nodes=nodes, weights=w, counts=counts, is_data=is_data, point_node=inv.astype(np.int64),
                      window=win, grid_size=g)
