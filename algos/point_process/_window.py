r"""Observation windows for spatial point patterns: axis-aligned rectangles and simple polygons.

:meth:`Window.from_any` is the single entry point every estimator of :mod:`algos.point_process` uses:

* ``(xmin, xmax, ymin, ymax)`` — a rectangle (``xmin < xmax``, ``ymin < ymax``);
* a ``(V, 2)`` array of vertices — a simple polygon (``V >= 3``). Counter-clockwise order is the
  convention; a *clockwise* polygon is accepted and **reoriented** (its vertex order reversed), as is
  a repeated closing vertex (dropped). A self-intersecting (non-simple) polygon, repeated vertices,
  or a polygon of zero area raise :class:`ValueError`, as do coordinates beyond ``1e100`` in absolute value
  (areas would leave the float64 range: rescale such coordinates first). A polygon that is an axis-aligned rectangle is
  recognised as one (``is_rectangle``), so the cheaper quadrature applies.
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
    """No two non-adjacent edges of the closed polygon ``v`` (V, 2) meet; adjacent edges share only their vertex."""
    n = len(v)
    for i in range(n):
        a1, a2 = v[i], v[(i + 1) % n]
        for j in range(i + 1, n):
            if j == i or (j + 1) % n == i or (i + 1) % n == j:
                # adjacent edges: they must not overlap (fold back on each other)
                if n > 3:
                    shared = v[(i + 1) % n] if (i + 1) % n == j else v[i]
                    o1 = a1 if (i + 1) % n == j else a2
                    b1, b2 = v[j], v[(j + 1) % n]
                    o2 = b2 if (i + 1) % n == j else b1
                    cross = (o1[0] - shared[0]) * (o2[1] - shared[1]) - (o1[1] - shared[1]) * (o2[0] - shared[0])
                    dot = (o1[0] - shared[0]) * (o2[0] - shared[0]) + (o1[1] - shared[1]) * (o2[1] - shared[1])
                    if cross == 0 and dot > 0:
                        return False
                continue
            if _segments_intersect(a1, a2, v[j], v[(j + 1) % n]):
                return False
    return True


def signed_area(v):
    """Shoelace signed area of a closed polygon ``v`` (V, 2); positive when counter-clockwise."""
    v = np.asarray(v, dtype=np.float64)
    x, y = v[:, 0], v[:, 1]
    return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(np.roll(x, -1), y))


class Window:
    """A rectangle or simple polygon in the plane (vertices stored counter-clockwise).

    Build it with :meth:`from_any`. Attributes: ``vertices`` (V, 2), ``bounds``
    ``(xmin, xmax, ymin, ymax)``, ``area``, ``is_rectangle``, ``diameter`` (of the bounding box).

    Parameters
    ----------
    vertices : array-like of shape (V, 2)
        The vertices.
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
    """

    def __init__(self, vertices, *, _checked=False):
        if not _checked:
            w = Window.from_any(vertices, _name="vertices")
            vertices = w.vertices
        self.vertices = np.ascontiguousarray(vertices, dtype=np.float64)
        self.vertices.setflags(write=False)
        x, y = self.vertices[:, 0], self.vertices[:, 1]
        self.bounds = (float(x.min()), float(x.max()), float(y.min()), float(y.max()))
        self.area = float(signed_area(self.vertices))
        xmin, xmax, ymin, ymax = self.bounds
        self.is_rectangle = bool(
            len(self.vertices) == 4 and np.isclose(self.area, (xmax - xmin) * (ymax - ymin), rtol=1e-14, atol=0.0)
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
        """A simple polygon; clockwise input is reoriented, a closing repeat of vertex 0 dropped.

        Parameters
        ----------
        vertices : array-like of shape (V, 2)
            Vertices of a simple polygon, in either orientation.
        _name : str, default="window"
            Internal: the name used in error messages.
        """
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
            raise TypeError(f"'{_name}' polygon must be a (V, 2) array of real numbers; got {type(vertices).__name__} "
                            f"of dtype {raw.dtype}.")
        v = np.array(raw, dtype=np.float64)
        if v.ndim != 2 or v.shape[1] != 2:
            raise ValueError(f"'{_name}' polygon must have shape (V, 2); got an array of shape {v.shape}.")
        if not np.all(np.isfinite(v)):
            raise ValueError(f"'{_name}' polygon must contain only finite coordinates; got NaN or inf.")
        if v.size and float(np.abs(v).max()) > MAX_COORD:
            raise ValueError(f"'{_name}' polygon coordinates must be at most {MAX_COORD:g} in absolute value "
                             f"(rescale the coordinates); got {float(np.abs(v).max())!r}.")
        if len(v) >= 2 and np.array_equal(v[0], v[-1]):
            v = v[:-1]
        if len(v) < 3:
            raise ValueError(f"'{_name}' polygon needs at least 3 distinct vertices; got {len(v)}.")
        if len(np.unique(v, axis=0)) != len(v):
            raise ValueError(f"'{_name}' polygon has repeated vertices; a simple polygon visits each vertex once.")
        if not _is_simple(v):
            raise ValueError(f"'{_name}' polygon is not simple: its edges intersect each other (self-intersecting).")
        a = signed_area(v)
        scale = float(np.ptp(v, axis=0).max()) ** 2
        if abs(a) <= 1e-14 * scale:
            raise ValueError(f"'{_name}' polygon has zero area (all vertices collinear).")
        if a < 0:  # clockwise: documented reorientation to counter-clockwise
            v = v[::-1].copy()
        return cls(v, _checked=True)

    @classmethod
    def from_any(cls, w, *, _name="window"):
        """A :class:`Window` from ``(xmin, xmax, ymin, ymax)``, a ``(V, 2)`` polygon, or a Window.

        Parameters
        ----------
        w : tuple, array-like of shape (V, 2) or Window
            ``(xmin, xmax, ymin, ymax)``, polygon vertices or a window.
        _name : str, default="window"
            Internal: the name used in error messages.
        """
        if isinstance(w, Window):
            return w
        if w is None:
            raise ValueError(f"'{_name}' is required: (xmin, xmax, ymin, ymax) or a (V, 2) polygon; got None.")
        if isinstance(w, str):
            raise TypeError(f"'{_name}' must be (xmin, xmax, ymin, ymax) or a (V, 2) polygon; got a string {w!r}.")
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
    def contains(self, xy):
        """Boolean array: which rows of ``xy`` (m, 2) lie in the closed window (boundary included).

        Parameters
        ----------
        xy : array-like of shape (m, 2)
            Points.

        Returns
        -------
        ndarray of bool, shape (m,)
            Whether each point lies in the window.
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
        v = self.vertices
        inside = np.zeros(len(xy), dtype=bool)
        onb = np.zeros(len(xy), dtype=bool)
        nv = len(v)
        for i in range(nv):
            x1, y1 = v[i]
            x2, y2 = v[(i + 1) % nv]
            # crossing number (half-open rule on y)
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
        return f"Window(polygon with {len(self.vertices)} vertices, area {self.area:.6g})"

    def __eq__(self, other):
        return isinstance(other, Window) and np.array_equal(self.vertices, other.vertices)

    def __hash__(self):
        return hash(self.vertices.tobytes())

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
            The mapped window.
        """
        v = (self.vertices - np.asarray(shift, dtype=np.float64)) / float(scale)
        return Window(v, _checked=True)


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
