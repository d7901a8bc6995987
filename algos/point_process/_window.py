r"""Observation windows for spatial point patterns: rectangles, simple polygons, and polygonal regions
with holes and several pieces.

:meth:`Window.from_any` is the single entry point every estimator of :mod:`algos.point_process` uses:

* ``(xmin, xmax, ymin, ymax)`` — a rectangle (``xmin < xmax``, ``ymin < ymax``);
* a ``(V, 2)`` array of vertices — a simple polygon (``V >= 3``). Counter-clockwise order is the
  convention; a *clockwise* polygon is accepted and **reoriented** (its vertex order reversed), as is
  a repeated closing vertex (dropped). A self-intersecting (non-simple) polygon, repeated vertices,
  or a polygon of zero area raise :class:`ValueError`, as do coordinates beyond ``1e100`` in absolute value
  (areas would leave the float64 range: rescale such coordinates first). A polygon that is an axis-aligned rectangle is
  recognised as one (``is_rectangle``), so the cheaper quadrature applies.
* a list of ``(V_k, 2)`` arrays (rings) — a polygonal region with holes and/or several pieces, as
  spatstat's ``owin(poly = list(...))`` (:meth:`Window.polygon`): outer boundaries counter-clockwise,
  holes clockwise. Either orientation is accepted on input; each ring is reoriented from its nesting
  depth (a ring inside an even number of other rings is an outer boundary, inside an odd number a
  hole). Each ring must be simple and no two rings may cross or touch.
* a :class:`Window` — returned unchanged.

Points on the boundary count as inside (:meth:`Window.contains` uses a relative tolerance).
"""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import check_array

__all__ = ["Window"]

#: Largest absolute coordinate of a window: areas and squared distances (products of two coordinates)
#: must stay far inside the float64 range. Rescale larger coordinates before building the window.
MAX_COORD = 1e100

#: Relative tolerance (in units of the window diameter) for "on the boundary" in :meth:`contains`:
#: round-off of coordinates that were computed, e.g. grid centres or reflected points.
BOUNDARY_RTOL = 1e-12

#: Edges of one ring tested at a time against another ring's edges (bounds the memory of the crossing test).
_CHUNK = 1024


def coordinate_array(X, name, rows="n", empty_1d=False):
    """``X`` as a float64 array of shape (``rows``, 2) (non-finite values allowed, checked by the caller);
    ``empty_1d``: an empty 1-d ``X`` is read as (0, 2)."""
    X = check_array(X, name, allow_empty=True, finite=False)
    if empty_1d and X.ndim == 1 and X.size == 0:
        X = X.reshape(0, 2)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"'{name}' must have shape ({rows}, 2); got an array of shape {X.shape}.")
    return X


def _segments_intersect(p1, p2, q1, q2):
    """Whether closed segments p1p2 and q1q2 intersect (including touching and collinear overlap)."""

    def orient(a, b, c):
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

    def on_seg(a, b, c):
        return min(a[0], b[0]) <= c[0] <= max(a[0], b[0]) and min(a[1], b[1]) <= c[1] <= max(a[1], b[1])

    d1, d2 = orient(q1, q2, p1), orient(q1, q2, p2)
    d3, d4 = orient(p1, p2, q1), orient(p1, p2, q2)
    if ((d1 > 0 > d2) or (d1 < 0 < d2)) and ((d3 > 0 > d4) or (d3 < 0 < d4)):
        return True
    if d1 == 0 and on_seg(q1, q2, p1):
        return True
    if d2 == 0 and on_seg(q1, q2, p2):
        return True
    if d3 == 0 and on_seg(p1, p2, q1):
        return True
    if d4 == 0 and on_seg(p1, p2, q2):
        return True
    return False


def _is_simple(v):
    """No two non-adjacent edges of the closed polygon ``v`` (V, 2) meet; adjacent edges share only their vertex.

    The edge pairs are tested in blocks of ``_CHUNK`` edges against all edges (numpy), so a ring of
    thousands of vertices is checked in seconds."""
    v = np.asarray(v, dtype=np.float64)
    n = len(v)
    a, b = v, np.roll(v, -1, axis=0)
    if n > 3:
        # adjacent edges (e, e + 1) fold back on each other: collinear with the far ends on the same side
        o1, shared, o2 = v, b, np.roll(v, -2, axis=0)
        u, w = o1 - shared, o2 - shared
        cross = u[:, 0] * w[:, 1] - u[:, 1] * w[:, 0]
        dot = u[:, 0] * w[:, 0] + u[:, 1] * w[:, 1]
        if np.any((cross == 0) & (dot > 0)):
            return False
    idx = np.arange(n)
    for s in range(0, n, _CHUNK):
        rows = idx[s:s + _CHUNK]
        hit = _edge_crossings(a[rows], b[rows], a, b)
        # an edge meets itself and its two neighbours at shared vertices: not a crossing
        diff = (idx[None, :] - rows[:, None]) % n
        hit &= (diff != 0) & (diff != 1) & (diff != n - 1)
        if hit.any():
            return False
    return True


def signed_area(v):
    """Shoelace signed area of a closed polygon ``v`` (V, 2); positive when counter-clockwise."""
    v = np.asarray(v, dtype=np.float64)
    x, y = v[:, 0], v[:, 1]
    return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(np.roll(x, -1), y))


def _looks_like_rings(w):
    """Whether ``w`` is a list of rings (each a 2-d ``(V_k, 2)`` array-like) rather than one (V, 2) polygon."""
    if isinstance(w, np.ndarray):
        return w.ndim == 3
    if not isinstance(w, (list, tuple)) or len(w) == 0:
        return False
    try:
        return all(np.ndim(r) == 2 for r in w)
    except ValueError:  # ragged element
        return False


def _edge_crossings(a1, a2, b1, b2):
    """Boolean matrix: whether closed segment ``a1[i] a2[i]`` meets ``b1[j] b2[j]`` (touching included)."""

    def orient(p, q, r):
        return (q[..., 0] - p[..., 0]) * (r[..., 1] - p[..., 1]) - (q[..., 1] - p[..., 1]) * (r[..., 0] - p[..., 0])

    def on_seg(p, q, r):
        return ((np.minimum(p[..., 0], q[..., 0]) <= r[..., 0]) & (r[..., 0] <= np.maximum(p[..., 0], q[..., 0]))
                & (np.minimum(p[..., 1], q[..., 1]) <= r[..., 1]) & (r[..., 1] <= np.maximum(p[..., 1], q[..., 1])))

    P1, P2 = a1[:, None, :], a2[:, None, :]
    Q1, Q2 = b1[None, :, :], b2[None, :, :]
    d1, d2 = orient(Q1, Q2, P1), orient(Q1, Q2, P2)
    d3, d4 = orient(P1, P2, Q1), orient(P1, P2, Q2)
    proper = (((d1 > 0) & (d2 < 0)) | ((d1 < 0) & (d2 > 0))) & (((d3 > 0) & (d4 < 0)) | ((d3 < 0) & (d4 > 0)))
    return (proper | ((d1 == 0) & on_seg(Q1, Q2, P1)) | ((d2 == 0) & on_seg(Q1, Q2, P2))
            | ((d3 == 0) & on_seg(P1, P2, Q1)) | ((d4 == 0) & on_seg(P1, P2, Q2)))


def _crossing_parity(x, y, v):
    """Crossing-number test (half-open rule on y) of points (x, y) against the closed ring ``v`` (V, 2)."""
    inside = np.zeros(np.shape(x), dtype=bool)
    nv = len(v)
    for i in range(nv):
        x1, y1 = v[i]
        x2, y2 = v[(i + 1) % nv]
        cond = (y1 > y) != (y2 > y)
        with np.errstate(divide="ignore", invalid="ignore"):
            xc = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
        inside ^= cond & (x < xc)
    return inside


def _check_ring(vertices, _name, label):
    """One ring as a float64 (V, 2) array: finite, within ``MAX_COORD``, closing repeat dropped, at least 3
    distinct vertices, simple, non-zero area (orientation kept)."""
    try:
        raw = np.asarray(vertices)
    except (TypeError, ValueError):
        raw = np.asarray([0j])  # ragged input: reported as not real below
    if raw.dtype.kind == "O":
        try:
            raw = raw.astype(np.float64)
        except (TypeError, ValueError):
            pass
    if raw.dtype.kind not in "iuf":
        raise TypeError(f"'{_name}' polygon{label} must be a (V, 2) array of real numbers; got "
                        f"{type(vertices).__name__} of dtype {raw.dtype}.")
    v = np.array(raw, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] != 2:
        raise ValueError(f"'{_name}' polygon{label} must have shape (V, 2); got an array of shape {v.shape}.")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"'{_name}' polygon{label} must contain only finite coordinates; got NaN or inf.")
    if v.size and float(np.abs(v).max()) > MAX_COORD:
        raise ValueError(f"'{_name}' polygon{label} coordinates must be at most {MAX_COORD:g} in absolute value "
                         f"(rescale the coordinates); got {float(np.abs(v).max())!r}.")
    if len(v) >= 2 and np.array_equal(v[0], v[-1]):
        v = v[:-1]
    if len(v) < 3:
        raise ValueError(f"'{_name}' polygon{label} needs at least 3 distinct vertices; got {len(v)}.")
    if len(np.unique(v, axis=0)) != len(v):
        raise ValueError(f"'{_name}' polygon{label} has repeated vertices; a simple polygon visits each vertex once.")
    if not _is_simple(v):
        raise ValueError(f"'{_name}' polygon{label} is not simple: its edges intersect each other "
                         f"(self-intersecting).")
    a = signed_area(v)
    scale = float(np.ptp(v, axis=0).max()) ** 2
    if abs(a) <= 1e-14 * scale:
        raise ValueError(f"'{_name}' polygon{label} has zero area (all vertices collinear).")
    return v


class Window:
    """A rectangle, a simple polygon, or a polygonal region with holes and several pieces.

    Build it with :meth:`from_any` (or :meth:`rectangle`, :meth:`polygon`). The region is stored as
    closed rings (spatstat's ``owin(poly = list(...))`` convention): outer boundaries counter-clockwise,
    holes clockwise, so the area is the sum of the rings' signed (shoelace) areas and a point is inside
    when it is inside an odd number of rings.

    Attributes: ``rings`` (tuple of (V_k, 2) arrays), ``vertices`` (all rings' vertices, concatenated,
    (V, 2)), ``ring_ptr`` (ring ``k`` is ``vertices[ring_ptr[k]:ring_ptr[k + 1]]``), ``n_rings``,
    ``bounds`` ``(xmin, xmax, ymin, ymax)``, ``area``, ``is_rectangle``, ``diameter`` (of the bounding box).

    Parameters
    ----------
    vertices : array-like of shape (V, 2)
        The vertices (of all rings, concatenated).
    ring_ptr : array-like of int, optional
        Ring offsets into ``vertices`` (``[0, V]``, one ring, when omitted).
    _checked : bool, default=False
        Internal: the vertices were already validated.

    Examples
    --------
    >>> w = Window.from_any((0, 2, 0, 1))
    >>> w.area, w.is_rectangle
    (2.0, True)
    >>> L = Window.from_any([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]])
    >>> L.area, L.is_rectangle, L.contains([[1.5, 1.5], [0.5, 1.5]]).tolist()
    (3.0, False, [False, True])
    >>> holed = Window.polygon([[[0, 0], [4, 0], [4, 4], [0, 4]], [[1, 1], [3, 1], [3, 3], [1, 3]]])
    >>> holed.area, holed.n_rings, holed.contains([[2, 2], [0.5, 2]]).tolist()
    (12.0, 2, [False, True])
    """

    def __init__(self, vertices, *, ring_ptr=None, _checked=False):
        if not _checked:
            w = Window.from_any(vertices, _name="vertices")
            vertices, ring_ptr = w.vertices, w.ring_ptr
        self.vertices = np.ascontiguousarray(vertices, dtype=np.float64)
        self.vertices.setflags(write=False)
        if ring_ptr is None:
            ring_ptr = [0, len(self.vertices)]
        self.ring_ptr = np.asarray(ring_ptr, dtype=np.int64).copy()
        self.ring_ptr.setflags(write=False)
        self.n_rings = len(self.ring_ptr) - 1
        self.rings = tuple(self.vertices[self.ring_ptr[k]:self.ring_ptr[k + 1]] for k in range(self.n_rings))
        x, y = self.vertices[:, 0], self.vertices[:, 1]
        self.bounds = (float(x.min()), float(x.max()), float(y.min()), float(y.max()))
        self.area = float(sum(signed_area(r) for r in self.rings))
        xmin, xmax, ymin, ymax = self.bounds
        self.is_rectangle = bool(
            self.n_rings == 1 and len(self.vertices) == 4
            and np.isclose(self.area, (xmax - xmin) * (ymax - ymin), rtol=1e-14, atol=0.0)
            and np.all((np.isclose(x, xmin, rtol=0, atol=0) | np.isclose(x, xmax, rtol=0, atol=0))
                       & (np.isclose(y, ymin, rtol=0, atol=0) | np.isclose(y, ymax, rtol=0, atol=0)))
        )
        self.diameter = float(np.hypot(xmax - xmin, ymax - ymin))

    # ------------------------------------------------------------------ constructors
    @classmethod
    def rectangle(cls, xmin, xmax, ymin, ymax, *, _name="window"):
        """The rectangle ``[xmin, xmax] x [ymin, ymax]``.

        Parameters
        ----------
        xmin, xmax, ymin, ymax : float
            The bounds, with ``xmin < xmax`` and ``ymin < ymax``.
        _name : str, default="window"
            Internal: the name used in error messages.
        """
        vals = []
        for name, v in zip(("xmin", "xmax", "ymin", "ymax"), (xmin, xmax, ymin, ymax)):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
                raise TypeError(f"'{_name}' bounds must be finite real numbers; got {name} = {v!r} of type "
                                f"{type(v).__name__}.")
            if not np.isfinite(v):
                raise ValueError(f"'{_name}' bounds must be finite real numbers; got {name} = {v!r}.")
            if abs(float(v)) > MAX_COORD:
                raise ValueError(f"'{_name}' bounds must be at most {MAX_COORD:g} in absolute value (rescale the "
                                 f"coordinates); got {name} = {float(v)!r}.")
            vals.append(float(v))
        xmin, xmax, ymin, ymax = vals
        if not (xmin < xmax and ymin < ymax):
            raise ValueError(
                f"'{_name}' must be (xmin, xmax, ymin, ymax) with xmin < xmax and ymin < ymax; "
                f"got {(xmin, xmax, ymin, ymax)}."
            )
        v = np.array([[xmin, ymin], [xmax, ymin], [xmax, ymax], [xmin, ymax]])
        return cls(v, _checked=True)

    @classmethod
    def polygon(cls, vertices, *, _name="window"):
        """A simple polygon, or a region bounded by several rings (holes, several pieces).

        Parameters
        ----------
        vertices : array-like of shape (V, 2), or list of array-likes of shape (V_k, 2)
            One simple polygon, or a list of rings as spatstat's ``owin(poly = list(...))``: the outer
            boundary of each piece and the boundary of each hole. Either orientation is accepted; the
            stored orientation follows the nesting: a ring inside an even number of other rings is an outer
            boundary (stored counter-clockwise), inside an odd number a hole (stored clockwise); spatstat
            asks for this orientation on input. A closing repeat of a ring's first vertex is dropped.
        _name : str, default="window"
            Internal: the name used in error messages.

        Returns
        -------
        Window
            The region.

        Raises
        ------
        ValueError
            A ring with fewer than 3 distinct vertices, repeated vertices, zero area or self-intersecting
            edges (the message names the ring's index), or two rings that cross or touch.

        Examples
        --------
        >>> two = Window.polygon([[[0, 0], [1, 0], [1, 1], [0, 1]], [[2, 0], [3, 0], [3, 1], [2, 1]]])
        >>> two.area, two.n_rings
        (2.0, 2)
        """
        if not _looks_like_rings(vertices):
            v = _check_ring(vertices, _name, "")
            if signed_area(v) < 0:  # clockwise: documented reorientation to counter-clockwise
                v = v[::-1].copy()
            return cls(v, _checked=True)
        rings = [_check_ring(r, _name, f" ring {k}") for k, r in enumerate(vertices)]
        if len(rings) == 1:
            v = rings[0] if signed_area(rings[0]) > 0 else rings[0][::-1].copy()
            return cls(v, _checked=True)
        edges = [(r, np.roll(r, -1, axis=0)) for r in rings]
        boxes = [(r[:, 0].min(), r[:, 0].max(), r[:, 1].min(), r[:, 1].max()) for r in rings]
        for j in range(len(rings)):
            for k in range(j):
                bj, bk = boxes[j], boxes[k]
                if bj[0] > bk[1] or bk[0] > bj[1] or bj[2] > bk[3] or bk[2] > bj[3]:
                    continue
                if any(_edge_crossings(edges[j][0][s:s + _CHUNK], edges[j][1][s:s + _CHUNK], edges[k][0],
                                       edges[k][1]).any() for s in range(0, len(rings[j]), _CHUNK)):
                    raise ValueError(f"'{_name}' rings {k} and {j} cross or touch each other; the rings of a "
                                     f"window must be disjoint (holes strictly inside their outer boundary).")
        depth = np.zeros(len(rings), dtype=np.int64)
        for j, rj in enumerate(rings):
            for k, rk in enumerate(rings):
                if j != k and _crossing_parity(np.array([rj[0, 0]]), np.array([rj[0, 1]]), rk)[0]:
                    depth[j] += 1
        out = []
        for r, dep in zip(rings, depth):
            want_ccw = dep % 2 == 0
            out.append(r if (signed_area(r) > 0) == want_ccw else r[::-1].copy())
        ptr = np.concatenate([[0], np.cumsum([len(r) for r in out])])
        return cls(np.concatenate(out), ring_ptr=ptr, _checked=True)

    @classmethod
    def from_any(cls, w, *, _name="window"):
        """A :class:`Window` from ``(xmin, xmax, ymin, ymax)``, a ``(V, 2)`` polygon, a list of rings, or a Window.

        Parameters
        ----------
        w : tuple, array-like of shape (V, 2), list of (V_k, 2) array-likes, or Window
            ``(xmin, xmax, ymin, ymax)``, polygon vertices, rings (:meth:`polygon`) or a window.
        _name : str, default="window"
            Internal: the name used in error messages.
        """
        if isinstance(w, Window):
            return w
        if w is None:
            raise ValueError(f"'{_name}' is required: (xmin, xmax, ymin, ymax) or a (V, 2) polygon; got None.")
        if isinstance(w, str):
            raise TypeError(f"'{_name}' must be (xmin, xmax, ymin, ymax) or a (V, 2) polygon; got a string {w!r}.")
        if _looks_like_rings(w):
            return cls.polygon(w, _name=_name)
        try:
            arr = np.asarray(w, dtype=object)
        except Exception:  # ragged nested input
            arr = None
        if arr is None:
            raise TypeError(f"'{_name}' must be (xmin, xmax, ymin, ymax) or a (V, 2) polygon; got a ragged "
                            f"{type(w).__name__}.")
        if arr.ndim == 1 and arr.shape[0] == 4:
            return cls.rectangle(*list(arr), _name=_name)
        if arr.ndim != 2 or arr.shape[1:] != (2,):
            raise ValueError(f"'{_name}' must be (xmin, xmax, ymin, ymax) or a (V, 2) polygon; got an array of shape "
                             f"{arr.shape}.")
        return cls.polygon(w, _name=_name)

    # ------------------------------------------------------------------ geometry
    def edges(self):
        """The directed boundary edges of all rings.

        Returns
        -------
        a, b : ndarray of shape (V, 2)
            Edge ``e`` runs from ``a[e]`` to ``b[e]``; the window lies to its left.
        """
        b = np.concatenate([np.roll(r, -1, axis=0) for r in self.rings])
        return self.vertices, b

    def next_vertex(self):
        """Index of the next vertex of the same ring, for each vertex.

        Returns
        -------
        ndarray of int64, shape (V,)
            ``nxt[i]``: the vertex after ``i`` along its ring (the ring's first after its last).
        """
        nxt = np.arange(1, len(self.vertices) + 1, dtype=np.int64)
        nxt[self.ring_ptr[1:] - 1] = self.ring_ptr[:-1]
        return nxt

    def boundary_distance(self, xy):
        """Distance from each point to the nearest edge of any ring (the border correction's ``b_i``).

        Parameters
        ----------
        xy : array-like of shape (m, 2)
            Points.

        Returns
        -------
        ndarray of shape (m,)
            The distances.
        """
        X = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        a, b = self.edges()
        d = b - a
        L2 = np.einsum("ij,ij->i", d, d)
        out = np.full(len(X), np.inf)
        for e in range(len(a)):
            t = np.clip(((X - a[e]) @ d[e]) / L2[e], 0.0, 1.0)
            q = a[e] + t[:, None] * d[e]
            out = np.minimum(out, np.hypot(X[:, 0] - q[:, 0], X[:, 1] - q[:, 1]))
        return out

    def contains(self, xy):
        """Boolean array: which rows of ``xy`` (m, 2) lie in the closed window (boundary included).

        Parameters
        ----------
        xy : array-like of shape (m, 2)
            Points.

        Returns
        -------
        ndarray of bool, shape (m,)
            Whether each point lies in the window (inside an odd number of rings, or on an edge).
        """
        xy = np.asarray(xy, dtype=np.float64)
        if xy.ndim == 1 and xy.shape[0] == 2:
            xy = xy[None, :]
        if xy.ndim != 2 or xy.shape[1] != 2:
            raise ValueError(f"'xy' must have shape (m, 2); got an array of shape {xy.shape}.")
        tol = BOUNDARY_RTOL * max(self.diameter, 1e-300)
        x, y = xy[:, 0], xy[:, 1]
        xmin, xmax, ymin, ymax = self.bounds
        inbox = (x >= xmin - tol) & (x <= xmax + tol) & (y >= ymin - tol) & (y <= ymax + tol)
        if self.is_rectangle:
            return inbox & np.isfinite(x) & np.isfinite(y)
        inside = np.zeros(len(xy), dtype=bool)
        onb = np.zeros(len(xy), dtype=bool)
        a, b = self.edges()
        for i in range(len(a)):
            x1, y1 = a[i]
            x2, y2 = b[i]
            # crossing number (half-open rule on y), even-odd over all rings
            cond = (y1 > y) != (y2 > y)
            with np.errstate(divide="ignore", invalid="ignore"):
                xc = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
            inside ^= cond & (x < xc)
            # distance to the edge, for the boundary
            dx, dy = x2 - x1, y2 - y1
            L2 = dx * dx + dy * dy
            t = np.clip(((x - x1) * dx + (y - y1) * dy) / L2, 0.0, 1.0)
            d2 = (x - (x1 + t * dx)) ** 2 + (y - (y1 + t * dy)) ** 2
            onb |= d2 <= tol * tol
        return inbox & (inside | onb)

    def __repr__(self):
        if self.is_rectangle:
            return f"Window(rectangle {self.bounds})"
        if self.n_rings > 1:
            return f"Window(polygonal region with {self.n_rings} rings, {len(self.vertices)} vertices, " \
                   f"area {self.area:.6g})"
        return f"Window(polygon with {len(self.vertices)} vertices, area {self.area:.6g})"

    def __eq__(self, other):
        return (isinstance(other, Window) and np.array_equal(self.ring_ptr, other.ring_ptr)
                and np.array_equal(self.vertices, other.vertices))

    def __hash__(self):
        return hash((self.vertices.tobytes(), self.ring_ptr.tobytes()))

    def scaled(self, shift, scale):
        """The window mapped by ``s -> (s - shift) / scale`` (used to rescale large coordinates).

        Parameters
        ----------
        shift : array-like of shape (2,)
            Subtracted from the coordinates.
        scale : float
            The coordinates are then divided by it (positive).

        Returns
        -------
        Window
            The mapped window (same rings, same orientation).
        """
        v = (self.vertices - np.asarray(shift, dtype=np.float64)) / float(scale)
        return Window(v, ring_ptr=self.ring_ptr, _checked=True)


def window_or_bounding_box(window, X):
    """``Window.from_any(window)``, or the bounding box of the points ``X`` (n >= 2, 2) when ``window`` is None.

    Parameters
    ----------
    window : tuple, array-like of shape (V, 2), Window or None
        The window description; ``None`` takes the bounding box of ``X``.
    X : array-like of shape (n, 2)
        The points (used only when ``window`` is None).

    Returns
    -------
    Window
        The window.
    """
    if window is not None:
        return Window.from_any(window)
    Xa = check_array(X, "X", allow_empty=True, finite=False)
    if len(Xa) < 2:
        raise ValueError(f"'X' needs at least 2 points when 'window' is None; got {len(Xa)}.")
    if Xa.ndim != 2 or Xa.shape[1] != 2 or not np.all(np.isfinite(Xa)):
        raise ValueError("'window' is None: X must be an (n >= 2, 2) finite array to take its bounding box.")
    lo, hi = Xa.min(0), Xa.max(0)
    if np.any(hi <= lo):
        raise ValueError("'window' is None and the points' bounding box is degenerate; pass a window.")
    return Window.rectangle(lo[0], hi[0], lo[1], hi[1])
