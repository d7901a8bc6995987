r"""numba kernels of :mod:`algos.point_process`.

Each kernel has a plain-numpy twin in :mod:`._reference` (the readable definition; tests pin the two
together):

* :func:`convex_cell_areas` -- shoelace areas of convex cells given as unordered vertex lists (the
  vertices are sorted by angle around an interior point first).
* :func:`clip_areas` -- for every convex cell, the area of the (possibly non-convex) window polygon
  clipped to the cell by Sutherland--Hodgman (Sutherland & Hodgman 1974), shoelace area of the result.
  A clipped piece that splits into parts is returned as one polygon joined by degenerate edges, which
  add zero area.
* :func:`filter_earlier` -- the ``k`` nearest *earlier* nodes (in an ordering) among KD-tree candidates.
* :func:`nngp_rows` -- the Vecchia/NNGP rows (Vecchia 1988; Datta et al. 2016): per node one ``k x k``
  Cholesky solve :math:`a_i = R_{N(i),N(i)}^{-1} R_{N(i),i}`, :math:`F_i = 1 - R_{i,N(i)}a_i`, in
  ``prange``.
* :func:`nngp_block_objective` -- the range objective of the hyperparameter step:
  :math:`\sum_i F_i^{-1} b_i^\top (S_{[i]} + r_{[i]} r_{[i]}^\top) b_i / \sigma^2 + \sum_i \log F_i`.
* :func:`predict_rows` -- kriging weights and conditional variances at query points.

The kernels of the second-order summaries (edge weights, the grid pair pass) are in
:mod:`._pair_kernels`; the sparse Cholesky and the selected inverse in :mod:`._sparse`.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from .._parallel import pick, serial_twin

__all__ = [
    "convex_cell_areas",
    "clip_areas",
    "filter_earlier",
    "nngp_rows",
    "nngp_block_objective",
    "nngp_block_terms",
    "predict_rows",
    "matern_corr",
    "PARALLEL_MIN_ROWS",
    "rows_kernel",
]

#: inputs of fewer rows (cells, nodes, query points) run the cached serial twin of a row-wise parallel
#: kernel (:mod:`algos._parallel`): below it the threads save less than the kernel's compilation
PARALLEL_MIN_ROWS = 20_000


@numba.njit
def matern_corr(d, phi, nu_code):
    """Matérn correlation at distance ``d``: ``nu_code`` 0 is nu = 1/2, 1 is nu = 3/2."""
    r = d / phi
    if nu_code == 0:
        return math.exp(-r)
    s = math.sqrt(3.0) * r
    return (1.0 + s) * math.exp(-s)


@numba.njit
def _sort_by_angle(xs, ys, cx, cy, n):
    ang = np.empty(n)
    for t in range(n):
        ang[t] = math.atan2(ys[t] - cy, xs[t] - cx)
    idx = np.argsort(ang)
    return xs[idx], ys[idx]


@numba.njit
def _shoelace(xs, ys, n):
    a = 0.0
    for t in range(n):
        u = t + 1 if t + 1 < n else 0
        a += xs[t] * ys[u] - xs[u] * ys[t]
    return 0.5 * a


@numba.njit
def _cell_polygon(ptr, vidx, verts, centres, c):
    """The vertices of convex cell ``c`` sorted by angle around ``centres[c]`` (a CCW polygon)."""
    n = ptr[c + 1] - ptr[c]
    xs = np.empty(n)
    ys = np.empty(n)
    for t in range(n):
        xs[t] = verts[vidx[ptr[c] + t], 0]
        ys[t] = verts[vidx[ptr[c] + t], 1]
    return _sort_by_angle(xs, ys, centres[c, 0], centres[c, 1], n)


@numba.njit(parallel=True)
def convex_cell_areas(ptr, vidx, verts, centres):
    """Areas of convex cells: cell ``c`` has vertices ``verts[vidx[ptr[c]:ptr[c+1]]]`` (any order);
    ``centres[c]`` is a point inside it (its generator)."""
    nc = len(ptr) - 1
    out = np.empty(nc)
    for c in prange(nc):
        n = ptr[c + 1] - ptr[c]
        xs, ys = _cell_polygon(ptr, vidx, verts, centres, c)
        out[c] = abs(_shoelace(xs, ys, n))
    return out


@numba.njit
def _clip_halfplane(sx, sy, ns, ax, ay, bx, by, ox, oy):
    """Keep the part of polygon (sx, sy)[:ns] left of the directed line a->b; write into (ox, oy).

    Returns the output length, or -1 if the output buffer would overflow."""
    no = 0
    cap = len(ox)
    ex = bx - ax
    ey = by - ay
    for t in range(ns):
        u = t + 1 if t + 1 < ns else 0
        px, py = sx[t], sy[t]
        qx, qy = sx[u], sy[u]
        dp = ex * (py - ay) - ey * (px - ax)
        dq = ex * (qy - ay) - ey * (qx - ax)
        pin = dp >= 0.0
        qin = dq >= 0.0
        if no + 2 > cap:
            return -1
        if pin:
            ox[no] = px
            oy[no] = py
            no += 1
        if pin != qin:
            tt = dp / (dp - dq)
            ox[no] = px + tt * (qx - px)
            oy[no] = py + tt * (qy - py)
            no += 1
    return no


@numba.njit(parallel=True)
def clip_areas(ptr, vidx, verts, centres, window):
    """Area of ``window`` (W, 2), a CCW simple polygon, clipped to each convex cell.

    Cell ``c`` is ``verts[vidx[ptr[c]:ptr[c+1]]]`` (any order; sorted by angle around ``centres[c]``).
    """
    nc = len(ptr) - 1
    nw = window.shape[0]
    out = np.empty(nc)
    for c in prange(nc):
        n = ptr[c + 1] - ptr[c]
        xs, ys = _cell_polygon(ptr, vidx, verts, centres, c)
        cap = 2 * nw * (n + 1) + 2 * n + 8
        ax_ = np.empty(cap)
        ay_ = np.empty(cap)
        bx_ = np.empty(cap)
        by_ = np.empty(cap)
        ns = nw
        for t in range(nw):
            ax_[t] = window[t, 0]
            ay_[t] = window[t, 1]
        for e in range(n):
            f = e + 1 if e + 1 < n else 0
            ns = _clip_halfplane(ax_, ay_, ns, xs[e], ys[e], xs[f], ys[f], bx_, by_)
            ax_, bx_ = bx_, ax_
            ay_, by_ = by_, ay_
            if ns <= 0:
                break
        if ns < 0:
            out[c] = np.nan
        else:
            out[c] = abs(_shoelace(ax_, ay_, ns)) if ns >= 3 else 0.0
    return out


@numba.njit(cache=True)
def filter_earlier(cand, rank, own_rank, k):
    """For row ``i`` of ``cand`` (KD-tree candidates of one node sorted by distance, -1 padded, indices
    into ``rank``; indices outside ``[0, len(rank))`` -- the padding and the KD-tree's "missing" index -- are
    skipped), the first ``k`` candidates with ``rank < own_rank[i]``. Returns (nbr (M, k) -1 padded,
    count (M,))."""
    M, m = cand.shape
    N = rank.shape[0]
    nbr = -np.ones((M, k), dtype=np.int64)
    cnt = np.zeros(M, dtype=np.int64)
    for i in range(M):
        c = 0
        for t in range(m):
            j = cand[i, t]
            if 0 <= j < N and rank[j] < own_rank[i]:
                nbr[i, c] = j
                c += 1
                if c == k:
                    break
        cnt[i] = c
    return nbr, cnt


@numba.njit
def _chol_solve_small(R, rhs, m):
    """Solve R x = rhs (R SPD m x m) by Cholesky in place on a copy; returns x."""
    L = R.copy()
    for j in range(m):
        s = L[j, j]
        for t in range(j):
            s -= L[j, t] * L[j, t]
        if s <= 0.0:
            s = 1e-300
        L[j, j] = math.sqrt(s)
        for i in range(j + 1, m):
            s2 = L[i, j]
            for t in range(j):
                s2 -= L[i, t] * L[j, t]
            L[i, j] = s2 / L[j, j]
    x = rhs.copy()
    for i in range(m):
        s = x[i]
        for t in range(i):
            s -= L[i, t] * x[t]
        x[i] = s / L[i, i]
    for i in range(m - 1, -1, -1):
        s = x[i]
        for t in range(i + 1, m):
            s -= L[t, i] * x[t]
        x[i] = s / L[i, i]
    return x


@numba.njit
def _kriging_row(coords, nbr_i, m, x, y, phi, nu_code, jitter, A_row):
    """Kriging weights of a target at ``(x, y)`` on the ``m`` nodes ``nbr_i[:m]`` (correlation scale,
    ``jitter`` on the diagonal), written into ``A_row``; returns ``1 + jitter - r . a``."""
    R = np.empty((m, m))
    r = np.empty(m)
    for p in range(m):
        jp = nbr_i[p]
        for q in range(p, m):
            jq = nbr_i[q]
            d = math.hypot(coords[jp, 0] - coords[jq, 0], coords[jp, 1] - coords[jq, 1])
            v = matern_corr(d, phi, nu_code)
            R[p, q] = v
            R[q, p] = v
        R[p, p] = 1.0 + jitter
        d = math.hypot(coords[jp, 0] - x, coords[jp, 1] - y)
        r[p] = matern_corr(d, phi, nu_code)
    a = _chol_solve_small(R, r, m)
    f = 1.0 + jitter
    for p in range(m):
        A_row[p] = a[p]
        f -= r[p] * a[p]
    return f


@numba.njit(parallel=True)
def nngp_rows(coords, nbr, cnt, phi, nu_code, jitter):
    """NNGP rows on the correlation scale: ``a (N, k)`` and ``F (N,)`` with F floored at ``jitter``.

    ``R`` gets ``jitter`` added on its diagonal (so ``F_i = 1 + jitter - r^T a`` before flooring).
    """
    N, k = nbr.shape
    A = np.zeros((N, k))
    F = np.empty(N)
    for i in prange(N):
        m = cnt[i]
        if m == 0:
            F[i] = 1.0 + jitter
            continue
        f = _kriging_row(coords, nbr[i], m, coords[i, 0], coords[i, 1], phi, nu_code, jitter, A[i])
        F[i] = f if f > jitter else jitter
    return A, F


@numba.njit
def row_quadratic(S_i, a, m, r, nbr_i, r_i):
    """``b^T S_i b + (b . r_[i])^2`` with ``b = (1, -a_1..a_m)`` on ``(i, N(i))``: one row's term of
    :func:`nngp_block_terms` before the division by ``F_i``."""
    b = np.empty(m + 1)
    b[0] = 1.0
    br = r_i
    for p in range(m):
        b[p + 1] = -a[p]
        br -= a[p] * r[nbr_i[p]]
    q = 0.0
    for p in range(m + 1):
        s = 0.0
        for t in range(m + 1):
            s += S_i[p, t] * b[t]
        q += b[p] * s
    return q + br * br


@numba.njit(parallel=True)
def nngp_block_objective(coords, nbr, cnt, phi, nu_code, jitter, sblk, r, variance):
    r"""``sum_i [b_i^T (S_[i] + r_[i] r_[i]^T) b_i / (variance F_i) + log(variance F_i)]``.

    ``sblk[i]`` is the ``(k+1) x (k+1)`` block of S on ``(i, N(i)...)`` (position 0 is ``i``).
    This is ``tr(Q S) + r^T Q r + log|K|`` for the NNGP precision ``Q`` at range ``phi``.
    """
    q_sum, logf_sum = nngp_block_terms(coords, nbr, cnt, phi, nu_code, jitter, sblk, r)
    return q_sum / variance + logf_sum + nbr.shape[0] * math.log(variance)


@numba.njit(parallel=True)
def nngp_block_terms(coords, nbr, cnt, phi, nu_code, jitter, sblk, r):
    """``(sum_i b_i^T (S_[i] + r_[i] r_[i]^T) b_i / F_i, sum_i log F_i)`` on the correlation scale."""
    N, k = nbr.shape
    A, F = nngp_rows(coords, nbr, cnt, phi, nu_code, jitter)
    out = np.empty(N)
    out2 = np.empty(N)
    for i in prange(N):
        out[i] = row_quadratic(sblk[i], A[i], cnt[i], r, nbr[i], r[i]) / F[i]
        out2[i] = math.log(F[i])
    return out.sum(), out2.sum()


@numba.njit(parallel=True)
def predict_rows(xq, coords, nbr, cnt, phi, nu_code, jitter):
    """Kriging weights ``a (M, k)`` on the nodes ``nbr`` and conditional variances ``F (M,)`` (correlation scale)."""
    M, k = nbr.shape
    A = np.zeros((M, k))
    F = np.empty(M)
    for i in prange(M):
        m = cnt[i]
        f = _kriging_row(coords, nbr[i], m, xq[i, 0], xq[i, 1], phi, nu_code, jitter, A[i])
        F[i] = f if f > 0.0 else 0.0
    return A, F


# serial twins of the row-wise parallel kernels (same values; cached): see :mod:`algos._parallel`
clip_areas_serial = serial_twin(clip_areas)
nngp_rows_serial = serial_twin(nngp_rows)
predict_rows_serial = serial_twin(predict_rows)
_TWINS = {clip_areas: clip_areas_serial, nngp_rows: nngp_rows_serial, predict_rows: predict_rows_serial}


def rows_kernel(kernel, n_rows):
    """``kernel`` (one of :func:`clip_areas`, :func:`nngp_rows`, :func:`predict_rows`) for ``n_rows`` rows:
    the parallel kernel from ``PARALLEL_MIN_ROWS`` rows on (with more than one numba thread), else its
    cached serial twin."""
    return pick(kernel, _TWINS[kernel], n_rows, PARALLEL_MIN_ROWS)
