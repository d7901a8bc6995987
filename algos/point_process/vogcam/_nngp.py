r"""Nearest-neighbour Gaussian-process (Vecchia) precision and the Woodbury solve.

For nodes in an ordering, each node ``i`` conditions on ``N(i)``, its ``k`` nearest *earlier* nodes
(Vecchia 1988; Datta, Banerjee, Finley & Gelfand 2016):

.. math::

   a_i = R_{N(i)N(i)}^{-1} R_{N(i),i},\quad F_i = \sigma^2(1 - R_{i,N(i)} a_i),\quad
   B = I - A,\quad \tilde Q = B^\top \operatorname{diag}(F)^{-1} B,\quad \log|\tilde K| = \sum_i \log F_i,

with ``R`` the Matérn correlation (nu = 1/2 or 3/2) plus a jitter on the diagonal; ``F_i`` is floored at
``jitter * sigma^2`` (ties in the ordering can make it non-positive). With ``k = N - 1`` this is the
exact GP precision. Here ``B``, ``F`` and ``Q`` are returned in the *original* node indexing (row
``i`` of ``B`` belongs to node ``i``), so ``Q`` is the precision of the nodes as given.

The neighbour search queries a KD-tree for ``4k`` candidates, keeps those earlier in the ordering
(numba :func:`._kernels.filter_earlier`), and re-queries with more candidates where too few were found.
The ``k x k`` solves run in a numba ``prange`` (:func:`._kernels.nngp_rows`).
"""

from __future__ import annotations

import dataclasses
import math

import numba
import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree

from ..._parallel import pick, serial_twin
from ..._validation import check_array, check_option, check_random_state, check_scalar_float, check_scalar_int
from .._kernels import (
    PARALLEL_MIN_ROWS,
    _chol_solve_small,
    filter_earlier,
    matern_corr,
    nngp_rows,
    row_quadratic,
    rows_kernel,
)

__all__ = ["NNGPFactor", "nngp_precision", "nngp_neighbors", "node_ordering", "matern", "woodbury_solve",
           "NU_CODES"]

NU_CODES = {0.5: 0, 1.5: 1}
#: Default jitter added to the correlation diagonal (relative to sigma^2), the default of the point_process
#: reconstruction notes.
JITTER = 1e-8


def matern(d, length_scale, nu=0.5):
    """Matérn correlation at distances ``d`` (nu = 1/2: exp(-d/phi); nu = 3/2: (1 + sqrt3 d/phi) exp(-sqrt3 d/phi)).

    Parameters
    ----------
    d : array-like
        Distances, at least 0.
    length_scale : float
        Range :math:`\\phi`, positive.
    nu : {0.5, 1.5}, default=0.5
        Smoothness.

    Returns
    -------
    ndarray
        Correlations, of the shape of ``d``.
    """
    d = check_array(d, "d", allow_empty=True)
    if np.any(d < 0):
        raise ValueError(f"'d' must contain non-negative distances; got {float(d.min())!r}.")
    length_scale = check_scalar_float(length_scale, "length_scale", low=0.0, closed="neither")
    r = d / length_scale
    if nu == 0.5:
        return np.exp(-r)
    if nu == 1.5:
        s = math.sqrt(3.0) * r
        return (1.0 + s) * np.exp(-s)
    raise ValueError(f"'nu' must be one of {{0.5, 1.5}}; got {nu!r}.")


@numba.njit(cache=True)
def _maxmin(coords, start):
    """Exact max-min ordering (O(N^2)): each next node is the farthest from those chosen."""
    N = coords.shape[0]
    dmin = np.full(N, np.inf)
    order = np.empty(N, dtype=np.int64)
    chosen = np.zeros(N, dtype=np.bool_)
    cur = start
    for t in range(N):
        order[t] = cur
        chosen[cur] = True
        best = -1.0
        nxt = -1
        for i in range(N):
            if not chosen[i]:
                d = (coords[i, 0] - coords[cur, 0]) ** 2 + (coords[i, 1] - coords[cur, 1]) ** 2
                if d < dmin[i]:
                    dmin[i] = d
                if dmin[i] > best:
                    best = dmin[i]
                    nxt = i
        cur = nxt
    return order


def node_ordering(coords, ordering="coord", random_state=None):
    """Ordering of the nodes (new -> old): ``"coord"`` (by x, then y), ``"maxmin"`` (max-min distance,
    started at the node nearest the centroid), or ``"random"``."""
    check_option(ordering, "ordering", ("coord", "maxmin", "random"))
    coords = np.asarray(coords, dtype=np.float64)
    N = len(coords)
    if ordering == "coord":
        return np.lexsort((coords[:, 1], coords[:, 0])).astype(np.int64)
    if ordering == "maxmin":
        start = int(np.argmin(((coords - coords.mean(0)) ** 2).sum(1)))
        return _maxmin(np.ascontiguousarray(coords), start)
    rng = np.random.default_rng(random_state)
    return rng.permutation(N).astype(np.int64)


def nngp_neighbors(coords, order, n_neighbors):
    """``(nbr (N, k) -1 padded, cnt (N,))``: for node ``i`` its ``min(k, rank_i)`` nearest earlier nodes."""
    coords = np.asarray(coords, dtype=np.float64)
    N = len(coords)
    k = int(min(n_neighbors, max(N - 1, 0)))
    rank = np.empty(N, dtype=np.int64)
    rank[order] = np.arange(N)
    if k == 0:
        return -np.ones((N, 0), dtype=np.int64), np.zeros(N, dtype=np.int64)
    tree = cKDTree(coords)
    m = min(N, 4 * k + 1)
    _, cand = tree.query(coords, k=m)
    cand = np.asarray(cand, dtype=np.int64).reshape(N, m)
    nbr, cnt = filter_earlier(cand, rank, rank, k)
    need = np.flatnonzero(cnt < np.minimum(k, rank))
    while len(need) and m < N:
        m = min(N, 4 * m)
        _, cand = tree.query(coords[need], k=m)
        cand = np.asarray(cand, dtype=np.int64).reshape(len(need), m)
        sub_nbr, sub_cnt = filter_earlier(cand, rank, rank[need], k)
        nbr[need] = sub_nbr
        cnt[need] = sub_cnt
        need = need[sub_cnt < np.minimum(k, rank[need])]
    return nbr, cnt


@numba.njit(parallel=True)
def neighbour_distances(coords, nbr, cnt):
    """``D (N, k+1, k+1)``: the distances within ``{i} U N(i)`` (position 0 is ``i``; 0 where padded),
    computed as in :func:`._kernels.nngp_rows`, so objectives built on them agree to the last bit."""
    N, k = nbr.shape
    D = np.zeros((N, k + 1, k + 1))
    for i in numba.prange(N):
        m = cnt[i]
        for p in range(m):
            jp = nbr[i, p]
            for q in range(p, m):
                jq = nbr[i, q]
                d = math.hypot(coords[jp, 0] - coords[jq, 0], coords[jp, 1] - coords[jq, 1])
                D[i, p + 1, q + 1] = d
                D[i, q + 1, p + 1] = d
            d = math.hypot(coords[jp, 0] - coords[i, 0], coords[jp, 1] - coords[i, 1])
            D[i, 0, p + 1] = d
            D[i, p + 1, 0] = d
    return D


neighbour_distances_serial = serial_twin(neighbour_distances)  # cached, same values (algos._parallel)


@numba.njit(parallel=True)
def nngp_block_terms_from_distances(D, nbr, cnt, phi, nu_code, jitter, sblk, r):
    """:func:`._kernels.nngp_block_terms` on precomputed distances ``D`` (:func:`neighbour_distances`):
    ``(sum_i b_i^T (S_[i] + r_[i] r_[i]^T) b_i / F_i, sum_i log F_i)`` on the correlation scale. The range
    step evaluates this a few times per sweep at new ranges and fixed neighbour sets, so the distances
    are computed once per fit."""
    N, k = nbr.shape
    out = np.empty(N)
    out2 = np.empty(N)
    for i in numba.prange(N):
        m = cnt[i]
        if m == 0:
            f = 1.0 + jitter
            q = sblk[i, 0, 0]
            br = r[i]
            out[i] = (q + br * br) / f
            out2[i] = math.log(f)
            continue
        R = np.empty((m, m))
        rr = np.empty(m)
        for p in range(m):
            for q in range(p, m):
                v = matern_corr(D[i, p + 1, q + 1], phi, nu_code)
                R[p, q] = v
                R[q, p] = v
            R[p, p] = 1.0 + jitter
            rr[p] = matern_corr(D[i, 0, p + 1], phi, nu_code)
        a = _chol_solve_small(R, rr, m)
        f = 1.0 + jitter
        for p in range(m):
            f -= rr[p] * a[p]
        if not f > jitter:
            f = jitter
        out[i] = row_quadratic(sblk[i], a, m, r, nbr[i], r[i]) / f
        out2[i] = math.log(f)
    return out.sum(), out2.sum()


@numba.njit(inline="always")
def _pattern_position(indptr, indices, row, col):
    """Position of ``(row, col)`` in a CSR structure with sorted column indices (-1 if absent)."""
    lo = indptr[row]
    hi = indptr[row + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        c = indices[mid]
        if c < col:
            lo = mid + 1
        elif c > col:
            hi = mid
        else:
            return mid
    return -1


@numba.njit(parallel=True)
def nngp_block_terms_on_pattern(coords, nbr, cnt, phi, nu_code, jitter, Sq, indptr, indices, r):
    """:func:`nngp_block_terms_from_distances` without any ``(N, k+1, k+1)`` array: the block of ``S`` on
    ``{i} U N(i)`` is read from ``Sq`` (``S`` on the precision's CSR structure ``indptr``/``indices``, which
    holds every such pair) and the distances are computed in place as in :func:`neighbour_distances`, so
    the terms agree with it to the last bit. Memory: O(k^2) per thread."""
    N, k = nbr.shape
    out = np.empty(N)
    out2 = np.empty(N)
    for i in numba.prange(N):
        m = cnt[i]
        if m == 0:
            f = 1.0 + jitter
            q = Sq[_pattern_position(indptr, indices, i, i)]
            br = r[i]
            out[i] = (q + br * br) / f
            out2[i] = math.log(f)
            continue
        S_i = np.zeros((m + 1, m + 1))
        S_i[0, 0] = Sq[_pattern_position(indptr, indices, i, i)]
        R = np.empty((m, m))
        rr = np.empty(m)
        for p in range(m):
            jp = nbr[i, p]
            S_i[0, p + 1] = Sq[_pattern_position(indptr, indices, i, jp)]
            S_i[p + 1, 0] = Sq[_pattern_position(indptr, indices, jp, i)]
            for q in range(p, m):
                jq = nbr[i, q]
                d = math.hypot(coords[jp, 0] - coords[jq, 0], coords[jp, 1] - coords[jq, 1])
                c = matern_corr(d, phi, nu_code)
                R[p, q] = c
                R[q, p] = c
                S_i[p + 1, q + 1] = Sq[_pattern_position(indptr, indices, jp, jq)]
                S_i[q + 1, p + 1] = Sq[_pattern_position(indptr, indices, jq, jp)]
            R[p, p] = 1.0 + jitter
            d = math.hypot(coords[jp, 0] - coords[i, 0], coords[jp, 1] - coords[i, 1])
            rr[p] = matern_corr(d, phi, nu_code)
        a = _chol_solve_small(R, rr, m)
        f = 1.0 + jitter
        for p in range(m):
            f -= rr[p] * a[p]
        if not f > jitter:
            f = jitter
        out[i] = row_quadratic(S_i, a, m, r, nbr[i], r[i]) / f
        out2[i] = math.log(f)
    return out.sum(), out2.sum()


@dataclasses.dataclass
class NNGPFactor:
    """NNGP prior factor in the original node indexing.

    Parameters
    ----------
    B : scipy.sparse.csr_matrix of shape (N, N) or None
        Unit lower-triangular factor (unit diagonal); None from ``NNGPStructure.factor(..., rows=False)``.
    F : ndarray of shape (N,)
        Conditional variances, including sigma^2.
    order : ndarray of int, shape (N,)
        The ordering (new -> old).
    logdet : float
        ``sum log F = log|K~|``.
    Q : scipy.sparse.csr_matrix of shape (N, N)
        The precision ``B^T F^-1 B``.
    neighbors : ndarray of int32, shape (N, k)
        Neighbours of each node (-1 padded).
    counts : ndarray of int32, shape (N,)
        Neighbours per node.
    A : ndarray of shape (N, k) or None
        Coefficients a_i; None from ``NNGPStructure.factor(..., rows=False)``.
    """

    B: sp.csr_matrix
    F: np.ndarray
    order: np.ndarray
    logdet: float
    Q: sp.csr_matrix
    neighbors: np.ndarray
    counts: np.ndarray
    A: np.ndarray


class NNGPStructure:
    """The fixed part of an NNGP prior (neighbour sets and the precision's pattern); values for any
    ``(variance, length_scale)`` by :meth:`factor`. The precision's CSR structure is the same for every
    value (entries are never dropped), so a sparse Cholesky analysed once can be reused."""

    def __init__(self, coords, nu=0.5, n_neighbors=15, ordering="coord", jitter=JITTER, random_state=None):
        self.coords = np.ascontiguousarray(coords, dtype=np.float64)
        if nu not in NU_CODES:
            raise ValueError(f"'nu' must be one of {{0.5, 1.5}}; got {nu!r}.")
        self.nu = nu
        self.nu_code = NU_CODES[nu]
        self.jitter = float(jitter)
        N = len(self.coords)
        self.order = node_ordering(self.coords, ordering, random_state)
        self.neighbors, self.counts = nngp_neighbors(self.coords, self.order, n_neighbors)
        # neighbour lists as int32 (half the bytes per node; a structure of 2^31 nodes is far past any memory budget)
        if N >= 2**31:
            raise ValueError(f"'coords' must hold fewer than 2**31 nodes; got {N}.")
        self.neighbors = self.neighbors.astype(np.int32)
        self.counts = self.counts.astype(np.int32)
        rows, cols, _ = self._b_pattern()
        Bpat = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(N, N))
        del rows, cols
        Qpat = (Bpat.T @ Bpat).tocsr()
        del Bpat
        Qpat.sort_indices()
        self.Q_indptr = Qpat.indptr
        self.Q_indices = Qpat.indices
        self._pair_index = None
        self.diag_index = self._positions(np.arange(N), np.arange(N))

    def _b_pattern(self):
        """The pattern of ``B`` (row ``i``: ``{i} U N(i)``) as int32 ``(rows, cols)`` and the positions of its
        entries in the ``(N, k+1)`` row-major ``[1, -a]`` layout; recomputed where needed (a few vector
        operations per new range) rather than kept, since nothing else needs it."""
        N = self.N
        k = self.neighbors.shape[1]
        rows = np.repeat(np.arange(N, dtype=np.int32), k + 1)
        cols = np.column_stack([np.arange(N, dtype=np.int32), self.neighbors]).ravel()
        pos = np.flatnonzero(cols >= 0).astype(np.int32)
        return rows[pos], cols[pos], pos

    def _positions(self, rows, cols):
        """Index into the precision's ``data`` of the entries (rows, cols) (all must be in the pattern)."""
        N = self.N
        key_pat = np.repeat(np.arange(N, dtype=np.int64), np.diff(self.Q_indptr)) * N + self.Q_indices
        key = np.asarray(rows, dtype=np.int64) * N + np.asarray(cols, dtype=np.int64)
        pos = np.searchsorted(key_pat, key)
        return pos

    @property
    def pair_index(self):
        """``(N, k+1, k+1)`` positions in ``Q.data`` of the pairs of ``{i} U N(i)`` (-1 where padded)."""
        if self._pair_index is None:
            N = self.N
            C = np.column_stack([np.arange(N), self.neighbors])  # (N, k+1), -1 padded
            R = np.repeat(C[:, :, None], C.shape[1], axis=2)
            T = np.repeat(C[:, None, :], C.shape[1], axis=1)
            valid = (R >= 0) & (T >= 0)
            idx = -np.ones(R.shape, dtype=np.int64)
            idx[valid] = self._positions(R[valid], T[valid])
            self._pair_index = idx
        return self._pair_index

    @property
    def pair_distances(self):
        """``(N, k+1, k+1)`` distances within ``{i} U N(i)`` (:func:`neighbour_distances`), computed once."""
        if getattr(self, "_pair_distances", None) is None:
            self._pair_distances = pick(neighbour_distances, neighbour_distances_serial, len(self.coords),
                                       PARALLEL_MIN_ROWS)(self.coords, self.neighbors, self.counts)
        return self._pair_distances

    @property
    def N(self):
        return len(self.coords)

    def factor(self, variance, length_scale, rows=True, cache=True):
        """An :class:`NNGPFactor` at ``(variance, length_scale)``.

        The variance scales out exactly (``Q = R^-1 / sigma^2``, ``F = sigma^2 F_c``), so the
        correlation-scale precision of the last range is cached and a new variance at the same range costs
        one rescaling (the variance steps of VoGCAM change sigma^2 alone). With ``rows=False`` the factor
        carries no ``B`` and ``A`` (None): the cache keeps only ``F_c``, the precision's values and
        ``log|K~|``, and ``B``/``A`` are recomputed (same kernel, same values) when asked for. With
        ``cache=False`` nothing is kept (and a cached range is dropped): for a caller whose variance does
        not change, the cache would be a second precision-sized array for nothing."""
        N = self.N
        key = float(length_scale)
        cached = getattr(self, "_corr_cache", None)
        A = B = None
        if cached is None or cached[0] != key:
            self._corr_cache = None  # the previous range's precision is freed before the new one is built
            A, Fc, B = self._rows(key)
            Qc = self._on_pattern((B.T @ sp.diags(1.0 / Fc) @ B).tocsr())
            cached = (key, Fc, Qc.data, float(np.sum(np.log(Fc))))
            del Qc
            if cache:
                self._corr_cache = cached
            if not rows:
                A = B = None
        elif rows:
            A, _, B = self._rows(key)
        _, Fc, qc_data, logdet_c = cached
        if not cache:
            # nothing kept: the precision is scaled in place (the same division, no second array)
            fresh = self._corr_cache is not cached
            self._corr_cache = None
            q_data = np.divide(qc_data, variance, out=qc_data) if fresh else qc_data / variance
        else:
            q_data = qc_data / variance
        # the structure arrays are the structure's own (only data is new)
        Q = sp.csr_matrix((q_data, self.Q_indices, self.Q_indptr), shape=(N, N), copy=False)
        del qc_data, cached
        return NNGPFactor(B=B, F=variance * Fc, order=self.order, logdet=logdet_c + N * math.log(variance), Q=Q,
                          neighbors=self.neighbors, counts=self.counts, A=A)

    def _rows(self, phi):
        """``(A, F_c, B)`` on the correlation scale at range ``phi``."""
        N = self.N
        k = self.neighbors.shape[1]
        A, Fc = rows_kernel(nngp_rows, len(self.coords))(self.coords, self.neighbors, self.counts, phi, self.nu_code,
                                                          self.jitter)
        b_rows, b_cols, b_pos = self._b_pattern()
        vals = np.column_stack([np.ones(N), -A]).ravel()[b_pos] if k else np.ones(N)
        B = sp.csr_matrix((vals, (b_rows, b_cols)), shape=(N, N))
        return A, Fc, B

    def _on_pattern(self, Q):
        """``Q`` re-expressed on the fixed structure (explicit zeros kept)."""
        Q = Q.tocsr()
        Q.sort_indices()
        if np.array_equal(Q.indptr, self.Q_indptr) and np.array_equal(Q.indices, self.Q_indices):
            return sp.csr_matrix((Q.data, self.Q_indices, self.Q_indptr), shape=Q.shape, copy=False)
        N = Q.shape[0]
        data = np.zeros(len(self.Q_indices))
        key_pat = np.repeat(np.arange(N, dtype=np.int64), np.diff(self.Q_indptr)) * N + self.Q_indices
        key_q = np.repeat(np.arange(N, dtype=np.int64), np.diff(Q.indptr)) * N + Q.indices
        data[np.searchsorted(key_pat, key_q)] = Q.data
        return sp.csr_matrix((data, self.Q_indices, self.Q_indptr), shape=Q.shape, copy=False)


def nngp_precision(coords, kernel="matern", n_neighbors=15, ordering="coord", *, nu=0.5, variance=1.0,
                   length_scale=0.1, jitter=JITTER, random_state=None):
    """NNGP (Vecchia) prior precision of a zero-mean GP at ``coords``.

    Parameters
    ----------
    coords : array-like, shape (N, 2)
    kernel : "matern"
        The covariance family (Matérn; ``nu`` selects 1/2 or 3/2).
    n_neighbors : int, default=15
        ``k``; ``k >= N - 1`` gives the exact GP.
    ordering : {"coord", "maxmin", "random"}, default="coord"
    nu : {0.5, 1.5}, default=0.5
    variance, length_scale : float
        ``sigma^2`` and the range ``phi``.
    jitter : float, default=1e-8
        Added to the correlation diagonal; ``F_i`` is floored at ``jitter * variance``.
    random_state : None, int, SeedSequence or Generator, default=None
        Seed of the ``"random"`` ordering.

    Returns
    -------
    NNGPFactor
        ``B`` csr, ``F``, ``order``, ``logdet``, ``Q`` csr (original node indexing).
    """
    check_option(kernel, "kernel", ("matern",))
    coords = check_array(coords, "coords", allow_empty=True)
    if coords.ndim != 2 or coords.shape[1] != 2:
        raise ValueError(f"'coords' must have shape (N, 2); got an array of shape {coords.shape}.")
    if random_state is not None and not isinstance(random_state, np.random.Generator):
        check_random_state(random_state)  # type and sign; the ordering draws from it
    n_neighbors = check_scalar_int(n_neighbors, "n_neighbors", low=1)
    variance = check_scalar_float(variance, "variance", low=0.0, closed="neither")
    length_scale = check_scalar_float(length_scale, "length_scale", low=0.0, closed="neither")
    jitter = check_scalar_float(jitter, "jitter", low=0.0)
    st = NNGPStructure(coords, nu=nu, n_neighbors=n_neighbors, ordering=ordering, jitter=jitter,
                       random_state=random_state)
    return st.factor(variance, length_scale)


def woodbury_solve(b, *, K=None, Q=None, diag, nugget=None):
    r"""Solve with a prior-plus-diagonal system by the Woodbury identity, without inverting ``K``.

    Two forms (Rasmussen & Williams 2006, sec. 3.4; point_process reconstruction notes, section 1, uses (a) and (b)):

    * ``K`` given (a dense prior covariance), returns :math:`S b` with
      :math:`S = (K^{-1} + \Lambda)^{-1} = K - K\Lambda^{1/2}(I + \Lambda^{1/2}K\Lambda^{1/2})^{-1}\Lambda^{1/2}K`,
      ``Lambda = diag(diag)`` (``diag >= 0``); only the well-conditioned matrix
      :math:`I + \Lambda^{1/2}K\Lambda^{1/2}` is factorised.
    * ``Q`` given (a sparse NNGP precision) and ``nugget`` :math:`\tau^2 > 0`: returns
      :math:`(\tilde K + \tau^2 I)^{-1} b = \tau^{-2} b - \tau^{-4}(\tilde Q + \tau^{-2} I)^{-1} b`
      (``diag`` is not used and may be None; when given it is still checked); the inner solve is sparse.

    Parameters
    ----------
    b : array-like, shape (N,) or (N, r)
    K : ndarray (N, N), optional
    Q : sparse or dense (N, N), optional
    diag : array-like (N,) or None
    nugget : float, optional

    Returns
    -------
    ndarray
        The solution, of the shape of ``b``.
    """
    b = check_array(b, "b", ndim=(1, 2))
    if (K is None) == (Q is None):
        raise ValueError("woodbury_solve needs exactly one of 'K' (dense covariance) or 'Q' (precision).")
    N = b.shape[0]
    if diag is not None:
        lam = check_array(diag, "diag", shape=(N,))
        if np.any(lam < 0):
            raise ValueError(f"'diag' must be non-negative; got {float(lam.min())!r}.")
    if K is not None:
        import scipy.linalg as sla

        K = check_array(K, "K", shape=(N, N))
        if diag is None:
            raise ValueError("'diag' is required with 'K': a non-negative vector of length N.")
        sq = np.sqrt(lam)
        Bm = np.eye(len(K)) + sq[:, None] * K * sq[None, :]
        c = sla.cho_factor(Bm, lower=True)
        Kb = K @ b
        inner = sla.cho_solve(c, (sq[:, None] * Kb) if b.ndim == 2 else sq * Kb)
        corr = K @ ((sq[:, None] * inner) if b.ndim == 2 else sq * inner)
        return Kb - corr
    tau2 = check_scalar_float(nugget, "nugget", low=0.0, closed="neither")
    if sp.issparse(Q):
        if Q.shape != (N, N):
            raise ValueError(f"'Q' must have shape ({N}, {N}) to match 'b'; got {Q.shape}.")
        if Q.dtype.kind not in "iuf":
            raise TypeError(f"'Q' must hold real numbers; got a sparse matrix of dtype {Q.dtype}.")
        if not np.all(np.isfinite(Q.data)):
            raise ValueError("'Q' must contain only finite values; got NaN or inf.")
    else:
        Q = check_array(Q, "Q", shape=(N, N))
    Qs = sp.csc_matrix(Q) + sp.eye(N) / tau2
    from scipy.sparse.linalg import splu

    lu = splu(Qs.tocsc())
    return b / tau2 - lu.solve(b) / tau2 / tau2  # (not tau2**2: it overflows a float past 1e154)
