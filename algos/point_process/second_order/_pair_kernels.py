r"""numba kernels of the second-order summaries of :mod:`algos.point_process` (:mod:`._second_order`).

Each kernel has a plain-numpy twin in :mod:`._reference` or in the numpy blocks of
:mod:`._second_order` (the readable definition; tests pin the two together):

* :func:`circle_fraction_inside`, :func:`polygon_overlap_area`, :func:`epanechnikov_pair_sum` -- the
  isotropic (Ripley) and translation edge weights and the kernel sum.
* :func:`grid_pair_counts`, :func:`grid_pairs_fill` -- the pairs closer than ``r`` found on a grid of
  cells, counted first and then written into preallocated arrays.
* :func:`rectangle_circle_fraction` -- the isotropic weight in closed form when the window is a rectangle.
* :func:`grid_pair_histogram` -- the summaries' pass on a grid of cells: each unordered pair closer
  than ``r_max`` visited once, its edge weights in closed form (rectangles), added straight into the
  histogram over ``r`` or smoothed over it.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = [
    "circle_fraction_inside",
    "circle_fraction_inside_rings",
    "polygon_overlap_area",
    "polygon_overlap_area_rings",
    "single_ring",
    "epanechnikov_pair_sum",
    "grid_pair_counts",
    "grid_pairs_fill",
    "rectangle_circle_fraction",
    "grid_pair_histogram",
]


@numba.njit(cache=True)
def _inside_polygon(x, y, vx, vy, nxt):
    """Crossing-number test (half-open rule on y) of the point (x, y) against the rings (vx, vy); edge ``e``
    runs from vertex ``e`` to vertex ``nxt[e]`` (even-odd over all rings)."""
    nv = vx.shape[0]
    inside = False
    for e in range(nv):
        x1, y1 = vx[e], vy[e]
        x2, y2 = vx[nxt[e]], vy[nxt[e]]
        if (y1 > y) != (y2 > y):
            xc = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
            if x < xc:
                inside = not inside
    return inside


@numba.njit(cache=True)
def _distance_to_boundary(x, y, vx, vy, nxt):
    """Distance from (x, y) to the nearest edge (vertex ``e`` to ``nxt[e]``) of the rings (vx, vy)."""
    nv = vx.shape[0]
    best = math.inf
    for e in range(nv):
        x1, y1 = vx[e], vy[e]
        dx, dy = vx[nxt[e]] - x1, vy[nxt[e]] - y1
        L2 = dx * dx + dy * dy
        t = 0.0 if L2 <= 0.0 else ((x - x1) * dx + (y - y1) * dy) / L2
        t = min(max(t, 0.0), 1.0)
        d = math.hypot(x - (x1 + t * dx), y - (y1 + t * dy))
        if d < best:
            best = d
    return best


#: Relative tolerance of the tangency decisions of :func:`circle_fraction_inside`.
TANGENT_RTOL = 1e-9


@numba.njit(cache=True)
def single_ring(nv):
    """``nxt`` and ``ptr`` of one ring of ``nv`` vertices."""
    nxt = np.empty(nv, dtype=np.int64)
    for e in range(nv):
        nxt[e] = e + 1 if e + 1 < nv else 0
    ptr = np.empty(2, dtype=np.int64)
    ptr[0] = 0
    ptr[1] = nv
    return nxt, ptr


@numba.njit(cache=True)
def circle_fraction_inside(cx, cy, rad, vx, vy):
    """:func:`circle_fraction_inside_rings` for one simple polygon (vx, vy)."""
    nxt, _ = single_ring(vx.shape[0])
    return circle_fraction_inside_rings(cx, cy, rad, vx, vy, nxt)


@numba.njit(cache=True)
def circle_fraction_inside_rings(cx, cy, rad, vx, vy, nxt):
    """For each circle (cx[p], cy[p], rad[p]) the fraction of its circumference inside the polygon.

    The circle meets the polygon's edges at angles found from one quadratic per edge; the arcs between
    consecutive crossings are classified by the crossing-number test of their midpoints (exact up to
    round-off, any simple polygon). A discriminant that is negative by round-off only (relative
    ``TANGENT_RTOL``) is a tangency: a double root. A circle with no crossing is inside iff its centre is
    inside and its radius is at most the centre's distance to the boundary (within ``TANGENT_RTOL``),
    so a circle tangent to an edge from inside counts as inside (its tangent point lies on the boundary
    and decides nothing). The window may have several rings (holes, pieces): edge ``e`` runs from vertex
    ``e`` to vertex ``nxt[e]``."""
    P = cx.shape[0]
    nv = vx.shape[0]
    out = np.empty(P)
    ang = np.empty(2 * nv + 2)
    twopi = 2.0 * math.pi
    for p in range(P):
        x0, y0, r = cx[p], cy[p], rad[p]
        if r <= 0.0:
            out[p] = 1.0
            continue
        na = 0
        for e in range(nv):
            ax, ay = vx[e] - x0, vy[e] - y0
            dx, dy = vx[nxt[e]] - vx[e], vy[nxt[e]] - vy[e]
            a = dx * dx + dy * dy
            b = 2.0 * (ax * dx + ay * dy)
            c = ax * ax + ay * ay - r * r
            disc = b * b - 4.0 * a * c
            if a <= 0.0:
                continue
            if disc < 0.0:
                # disc / (4a) = r^2 - (distance from the centre to the edge's line)^2
                if -disc > TANGENT_RTOL * 8.0 * a * r * r:
                    continue
                disc = 0.0
            sq = math.sqrt(disc)
            for sgn in (-1.0, 1.0):
                u = (-b + sgn * sq) / (2.0 * a)
                if 0.0 <= u <= 1.0:
                    t = math.atan2(ay + u * dy, ax + u * dx)
                    if t < 0.0:
                        t += twopi
                    ang[na] = t
                    na += 1
        if na == 0:
            inside = _inside_polygon(x0, y0, vx, vy, nxt) and \
                r <= _distance_to_boundary(x0, y0, vx, vy, nxt) * (1.0 + TANGENT_RTOL)
            out[p] = 1.0 if inside else 0.0
            continue
        a_s = np.sort(ang[:na])
        total = 0.0
        for k in range(na):
            t0 = a_s[k]
            t1 = a_s[k + 1] if k + 1 < na else a_s[0] + twopi
            length = t1 - t0
            if length <= 0.0:
                continue
            tm = 0.5 * (t0 + t1)
            if _inside_polygon(x0 + r * math.cos(tm), y0 + r * math.sin(tm), vx, vy, nxt):
                total += length
        out[p] = total / twopi
    return out


@numba.njit(cache=True)
def _clip_convex(px, py, n, ax, ay, bx, by, qx, qy):
    """Sutherland--Hodgman: clip the convex polygon (px, py)[:n] to the half-plane left of a->b."""
    m = 0
    for t in range(n):
        x1, y1 = px[t], py[t]
        x2, y2 = px[(t + 1) % n], py[(t + 1) % n]
        s1 = (bx - ax) * (y1 - ay) - (by - ay) * (x1 - ax)
        s2 = (bx - ax) * (y2 - ay) - (by - ay) * (x2 - ax)
        if s1 >= 0.0:
            qx[m] = x1
            qy[m] = y1
            m += 1
        if (s1 >= 0.0) != (s2 >= 0.0):
            u = s1 / (s1 - s2)
            qx[m] = x1 + u * (x2 - x1)
            qy[m] = y1 + u * (y2 - y1)
            m += 1
    return m


@numba.njit(cache=True)
def _triangle_overlap(t1x, t1y, t2x, t2y, bufx, bufy, tmpx, tmpy):
    """Area of the intersection of two counter-clockwise triangles."""
    n = 3
    for k in range(3):
        bufx[k] = t1x[k]
        bufy[k] = t1y[k]
    for e in range(3):
        ax, ay = t2x[e], t2y[e]
        bx, by = t2x[(e + 1) % 3], t2y[(e + 1) % 3]
        n = _clip_convex(bufx, bufy, n, ax, ay, bx, by, tmpx, tmpy)
        if n < 3:
            return 0.0
        for k in range(n):
            bufx[k] = tmpx[k]
            bufy[k] = tmpy[k]
    a = 0.0
    for k in range(n):
        a += bufx[k] * bufy[(k + 1) % n] - bufx[(k + 1) % n] * bufy[k]
    return 0.5 * a


@numba.njit(cache=True)
def polygon_overlap_area(dx, dy, vx, vy):
    """:func:`polygon_overlap_area_rings` for one simple polygon (vx, vy)."""
    _, ptr = single_ring(vx.shape[0])
    return polygon_overlap_area_rings(dx, dy, vx, vy, ptr)


@numba.njit(cache=True)
def polygon_overlap_area_rings(dx, dy, vx, vy, ptr):
    """For each shift h = (dx[p], dy[p]) the area |W intersect (W + h)| of a polygonal region W whose ring
    ``k`` is (vx, vy)[ptr[k]:ptr[k+1]] (outer rings counter-clockwise, holes clockwise).

    Exact: the fan triangles T_i = (v_0, v_i, v_{i+1}) of every ring carry signs s_i with
    1_W = sum_i s_i 1_{T_i} almost everywhere (winding numbers; a clockwise hole's triangles count -1), so
    |W n (W + h)| = sum_{i,j} s_i s_j |T_i n (T_j + h)|, each term a convex clip (inclusion-exclusion over
    all pairs of rings)."""
    P = dx.shape[0]
    R = ptr.shape[0] - 1
    nt = 0
    for k in range(R):
        nt += ptr[k + 1] - ptr[k] - 2
    tx = np.empty((nt, 3))
    ty = np.empty((nt, 3))
    sg = np.empty(nt)
    i = -1
    for k in range(R):
        o = ptr[k]
        for m in range(ptr[k + 1] - ptr[k] - 2):
            i += 1
            xs = (vx[o], vx[o + m + 1], vx[o + m + 2])
            ys = (vy[o], vy[o + m + 1], vy[o + m + 2])
            cr = (xs[1] - xs[0]) * (ys[2] - ys[0]) - (ys[1] - ys[0]) * (xs[2] - xs[0])
            sg[i] = 1.0 if cr > 0 else (-1.0 if cr < 0 else 0.0)
            if cr >= 0:
                for q in range(3):
                    tx[i, q] = xs[q]
                    ty[i, q] = ys[q]
            else:
                for q in range(3):
                    tx[i, q] = xs[2 - q]
                    ty[i, q] = ys[2 - q]
    out = np.empty(P)
    bufx = np.empty(16)
    bufy = np.empty(16)
    tmpx = np.empty(16)
    tmpy = np.empty(16)
    t2x = np.empty(3)
    t2y = np.empty(3)
    for p in range(P):
        tot = 0.0
        for j in range(nt):
            if sg[j] == 0.0:
                continue
            for k in range(3):
                t2x[k] = tx[j, k] + dx[p]
                t2y[k] = ty[j, k] + dy[p]
            for i in range(nt):
                if sg[i] == 0.0:
                    continue
                tot += sg[i] * sg[j] * _triangle_overlap(tx[i], ty[i], t2x, t2y, bufx, bufy, tmpx, tmpy)
        out[p] = tot
    return out


@numba.njit(cache=True)
def epanechnikov_pair_sum(d, wts, r, h):
    """``out[k] = sum_p wts[p] k_h(r[k] - d[p])`` with the Epanechnikov kernel of half-width ``h``,
    ``k_h(u) = 3/(4h) (1 - (u/h)^2)`` on ``|u| <= h`` (``r`` sorted increasingly)."""
    R = r.shape[0]
    out = np.zeros(R)
    c = 0.75 / h
    for p in range(d.shape[0]):
        lo = np.searchsorted(r, d[p] - h)
        for k in range(lo, R):
            u = (r[k] - d[p]) / h
            if u > 1.0:
                break
            if u >= -1.0:
                out[k] += wts[p] * c * (1.0 - u * u)
    return out


# ============================================================================ close pairs by blocks
@numba.njit(cache=True)
def grid_pair_counts(X, order, starts, cell, gx, gy, r2):
    """Per point ``i``, the number of points ``j != i`` with squared distance ``<= r2``.

    The points are binned in a ``gx x gy`` grid of cells of side at least ``sqrt(r2)``: point ``i`` is
    in cell ``cell[i]`` (row-major, ``cx + gx * cy``), the points of cell ``c`` are
    ``order[starts[c]:starts[c + 1]]``; only the 3 x 3 cells around ``i`` are searched."""
    n = X.shape[0]
    cnt = np.zeros(n, dtype=np.int64)
    for i in range(n):
        cx = cell[i] % gx
        cy = cell[i] // gx
        xi, yi = X[i, 0], X[i, 1]
        c = 0
        for qy in range(max(cy - 1, 0), min(cy + 2, gy)):
            for qx in range(max(cx - 1, 0), min(cx + 2, gx)):
                q = qx + gx * qy
                for t in range(starts[q], starts[q + 1]):
                    j = order[t]
                    if j == i:
                        continue
                    dx = X[j, 0] - xi
                    dy = X[j, 1] - yi
                    if dx * dx + dy * dy <= r2:
                        c += 1
        cnt[i] = c
    return cnt


@numba.njit(cache=True)
def grid_pairs_fill(X, order, starts, cell, gx, gy, r2, lo, hi, out_i, out_j):
    """The ordered pairs ``(i, j)``, ``lo <= i < hi``, counted by :func:`grid_pair_counts`, written
    into ``out_i``/``out_j`` (sized by those counts); returns how many were written."""
    m = 0
    for i in range(lo, hi):
        cx = cell[i] % gx
        cy = cell[i] // gx
        xi, yi = X[i, 0], X[i, 1]
        for qy in range(max(cy - 1, 0), min(cy + 2, gy)):
            for qx in range(max(cx - 1, 0), min(cx + 2, gx)):
                q = qx + gx * qy
                for t in range(starts[q], starts[q + 1]):
                    j = order[t]
                    if j == i:
                        continue
                    dx = X[j, 0] - xi
                    dy = X[j, 1] - yi
                    if dx * dx + dy * dy <= r2:
                        out_i[m] = i
                        out_j[m] = j
                        m += 1
    return m


@numba.njit(cache=True)
def _cut_half_angle(q):
    """Half the angle of the arc cut off by a line at distance ``q`` radii from the centre."""
    return 0.0 if q >= 1.0 else math.acos(max(q, -1.0))


@numba.njit(cache=True)
def _rect_fraction_one(x0, y0, r, xmin, xmax, ymin, ymax):
    """Fraction of the circle ``(x0, y0, r)``, ``r > 0``, inside the rectangle (see
    :func:`rectangle_circle_fraction`)."""
    half_pi = 0.5 * math.pi
    # left, bottom, right, top: consecutive ones are adjacent edges
    # an edge at distance >= r cuts nothing (the quotient would be >= 1: no division needed)
    dL, dB, dR, dT = x0 - xmin, y0 - ymin, xmax - x0, ymax - y0
    aL = _cut_half_angle(dL / r) if dL < r else 0.0
    aB = _cut_half_angle(dB / r) if dB < r else 0.0
    aR = _cut_half_angle(dR / r) if dR < r else 0.0
    aT = _cut_half_angle(dT / r) if dT < r else 0.0
    outside = 2.0 * (aL + aB + aR + aT)
    outside -= max(aL + aB - half_pi, 0.0) + max(aB + aR - half_pi, 0.0)
    outside -= max(aR + aT - half_pi, 0.0) + max(aT + aL - half_pi, 0.0)
    f = 1.0 - outside / (2.0 * math.pi)
    return min(max(f, 0.0), 1.0)


@numba.njit(cache=True)
def rectangle_circle_fraction(cx, cy, rad, xmin, xmax, ymin, ymax):
    """:func:`circle_fraction_inside` for the rectangle ``[xmin, xmax] x [ymin, ymax]`` and centres inside it,
    in closed form: an edge at distance ``d < r`` from the centre cuts off an arc of angle
    ``2 arccos(d / r)`` around its normal; two adjacent edges' arcs overlap by
    ``arccos(d1 / r) + arccos(d2 / r) - pi / 2`` when that is positive (their corner inside the circle),
    and opposite edges' arcs never overlap (each is at most a half circle), so inclusion--exclusion over
    the four edges and four corners is exact."""
    P = cx.shape[0]
    out = np.empty(P)
    for p in range(P):
        r = rad[p]
        if r <= 0.0:
            out[p] = 1.0
            continue
        out[p] = _rect_fraction_one(cx[p], cy[p], r, xmin, xmax, ymin, ymax)
    return out


# ============================================================================ fused pair histogram
@numba.njit(cache=True)
def _bin_left(r, d, r0, inv_dr):
    """``np.searchsorted(r, d, side="left")``: the first ``k`` with ``r[k] >= d`` (``len(r)`` if none).
    ``inv_dr > 0``: start from the guess ``ceil((d - r0) * inv_dr)`` of an evenly spaced grid and walk
    to the exact index; otherwise bisect."""
    R = r.shape[0]
    if inv_dr > 0.0:
        g = (d - r0) * inv_dr
        k = 0 if g <= 0.0 else (R if g >= R else int(math.ceil(g)))
        while k > 0 and r[k - 1] >= d:
            k -= 1
        while k < R and r[k] < d:
            k += 1
        return k
    lo, hi = 0, R
    while lo < hi:
        mid = (lo + hi) >> 1
        if r[mid] < d:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True)
def _pair_weight(mode, x0, y0, d, dx, dy, bnd, area, maxw):
    """Edge weight of the pair seen from the centre ``(x0, y0)`` at distance ``d``, shift ``(dx, dy)``:
    mode 1 isotropic (capped at ``maxw``), 2 translation, anything else 1."""
    xmin, xmax, ymin, ymax = bnd[0], bnd[1], bnd[2], bnd[3]
    if mode == 1:
        if d <= 0.0:
            return 1.0
        # a circle within every edge's distance lies inside: fraction 1 exactly
        if (d <= x0 - xmin and d <= y0 - ymin and d <= xmax - x0 and d <= ymax - y0):
            return 1.0
        f = _rect_fraction_one(x0, y0, d, xmin, xmax, ymin, ymax)
        return min(1.0 / max(f, 1e-300), maxw)
    if mode == 2:
        ov = max(xmax - xmin - abs(dx), 0.0) * max(ymax - ymin - abs(dy), 0.0)
        if ov > 0.0:
            return area / max(ov, 1e-300)
        return np.inf
    return 1.0


@numba.njit(cache=True)
def grid_pair_histogram(X, order, starts, gx, gy, csx, csy, x0g, y0g, reach, rmax, r2, r, r0, inv_dr, mode,
                        bnd, area, maxw, w, b, bin_b, h=0.0):
    """Every ordered pair ``(i, j)``, ``i != j``, with ``d_ij <= rmax`` accumulated straight into the
    histogram ``acc`` (length ``len(r) + 1``) over the bins ``k = searchsorted(r, d_ij, "left")``, so that
    ``cumsum(acc)[m]`` sums over the pairs with ``d_ij <= r[m]``.

    Points are binned in a ``gx x gy`` grid of cells of sides ``csx, csy`` (at least ``rmax / reach``)
    anchored at ``(x0g, y0g)``; cell ``c`` holds ``order[starts[c]:starts[c + 1]]``. Each unordered pair
    is visited once (its own cell with the later points, then half of the ``(2 reach + 1)^2`` stencil);
    cells farther than ``rmax`` from the point are skipped; candidates with squared distance ``> r2`` or
    distance ``> rmax`` (``math.hypot``) are dropped.

    Per ordered pair the term is ``w[i] w[j] e_ij`` with ``e_ij`` from :func:`_pair_weight` for modes
    0 (none), 1 (isotropic, rectangle ``bnd`` = (xmin, xmax, ymin, ymax)), 2 (translation, same); mode 3
    (border) adds ``w[i] w[j]`` at the pair's bin and subtracts it at ``bin_b[i]`` (the first ``k`` with
    ``r[k] > b[i]``) when ``d_ij <= b[i]``.

    ``h > 0`` (modes 0-2): the term is instead spread over ``r`` with the Epanechnikov kernel of
    half-width ``h``, ``acc[k] += term * k_h(r[k] - d_ij)`` (as :func:`epanechnikov_pair_sum`)."""
    R = r.shape[0]
    acc = np.zeros(R + 1)
    b2 = b * b * (1.0 + 1e-9) + 1e-300
    # border: the largest squared boundary distance in each cell (a cell farther from point i than both
    # that and b_i holds no pair that counts)
    cb2 = np.zeros(gx * gy)
    if mode == 3:
        for c in range(gx * gy):
            for t in range(starts[c], starts[c + 1]):
                cb2[c] = max(cb2[c], b2[order[t]])
    for c in range(gx * gy):
        cx = c % gx
        cy = c // gx
        for t in range(starts[c], starts[c + 1]):
            i = order[t]
            xi = X[i, 0]
            yi = X[i, 1]
            wi = w[i]
            b2i = b2[i]
            for oy in range(0, reach + 1):
                qy = cy + oy
                if qy >= gy:
                    break
                # distance in y from the point to the row of cells qy
                if oy == 0:
                    ry = 0.0
                else:
                    ry = y0g + qy * csy - yi
                if ry * ry > r2:
                    break
                oxlo = 0 if oy == 0 else -reach
                for ox in range(oxlo, reach + 1):
                    qx = cx + ox
                    if qx < 0:
                        continue
                    if qx >= gx:
                        break
                    if ox > 0:
                        rx = x0g + qx * csx - xi
                    elif ox < 0:
                        rx = xi - (x0g + (qx + 1) * csx)
                    else:
                        rx = 0.0
                    if rx < 0.0:
                        rx = 0.0
                    if rx * rx + ry * ry > r2:
                        continue
                    q = qx + gx * qy
                    if mode == 3 and rx * rx + ry * ry > b2i and rx * rx + ry * ry > cb2[q]:
                        continue
                    u0 = starts[q]
                    if ox == 0 and oy == 0:
                        u0 = t + 1
                    for u in range(u0, starts[q + 1]):
                        j = order[u]
                        dx = xi - X[j, 0]
                        dy = yi - X[j, 1]
                        d2 = dx * dx + dy * dy
                        if d2 > r2:
                            continue
                        # border: a pair farther than both boundary distances counts for neither point
                        # (a fast reject on squares with a margin; the exact test is on d below)
                        if mode == 3 and d2 > b2i and d2 > b2[j]:
                            continue
                        d = math.hypot(dx, dy)
                        if d > rmax:
                            continue
                        k = _bin_left(r, d, r0, inv_dr)
                        ww = wi * w[j]
                        if mode == 3:
                            if d <= b[i]:
                                acc[k] += ww
                                acc[bin_b[i]] -= ww
                            if d <= b[j]:
                                acc[k] += ww
                                acc[bin_b[j]] -= ww
                            continue
                        if mode == 0:
                            val = 2.0 * ww
                        else:
                            eij = _pair_weight(mode, xi, yi, d, dx, dy, bnd, area, maxw)
                            eji = _pair_weight(mode, X[j, 0], X[j, 1], d, -dx, -dy, bnd, area, maxw)
                            val = ww * (eij + eji)
                        if h > 0.0:
                            ck = val * 0.75 / h
                            for kk in range(_bin_left(r, d - h, r0, inv_dr), R):
                                uu = (r[kk] - d) / h
                                if uu > 1.0:
                                    break
                                if uu >= -1.0:
                                    acc[kk] += ck * (1.0 - uu * uu)
                        else:
                            acc[k] += val
    return acc
