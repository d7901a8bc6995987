r"""Sparse Cholesky factorisation and the Takahashi selected inverse (numba), plus a dense reference.

The variational covariance of :class:`~algos.point_process.VoGCAM` is kept in *precision form*
:math:`S = P^{-1}`, :math:`P = \tilde Q + \operatorname{diag}\mu` (sparse, the pattern of the NNGP
precision). What the algorithm needs from :math:`S` is its diagonal, :math:`\log|P|`, and the entries of
:math:`S` on the pattern of :math:`\tilde Q`. All three come from one Cholesky factor
:math:`L L^\top = P_{\pi\pi}` and the Takahashi recursions (Takahashi, Fagan & Chin 1973; Erisman &
Tinney 1975), which give :math:`Z = P^{-1}` on the pattern of :math:`L` — a superset of the pattern of
:math:`P` — in about the cost of the factorisation:

.. math::

   Z_{ij} = -\frac{1}{L_{jj}}\sum_{k\in\mathcal L_j,\,k>j} L_{kj} Z_{ik}\ (i>j),\qquad
   Z_{jj} = \frac{1}{L_{jj}^2} - \frac{1}{L_{jj}}\sum_{k\in\mathcal L_j,\,k>j} L_{kj} Z_{kj},

run for :math:`j = N-1, \dots, 0`; every :math:`Z_{ik}` on the right lies in the pattern of :math:`L`
because that pattern is chordal.

Fill-reducing ordering :math:`\pi`: geometric nested dissection (George 1973) on the node coordinates —
split at the median of the longer side, order the two halves recursively and the separator (the nodes
of one half with a graph edge to the other half) last — or scipy's reverse Cuthill--McKee. The
factorisation is a left-looking column Cholesky with linked column lists (George & Liu 1981), after an
elimination-tree symbolic phase (Liu 1990); the pattern is computed once per fit, since the NNGP
neighbour sets do not change.

The dense path (:func:`dense_selected`) uses LAPACK and is the reference in tests.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

__all__ = ["SparseCholesky", "nested_dissection", "fill_reducing_order", "dense_selected"]

#: Leaf size of the nested dissection: below it a part is ordered by coordinate.
ND_LEAF = 48


# ----------------------------------------------------------------------------- orderings
def nested_dissection(coords, indptr, indices, leaf=ND_LEAF):
    """Geometric nested-dissection permutation (new -> old) of the graph (indptr, indices) on ``coords``."""
    N = len(coords)
    order = np.empty(N, dtype=np.int64)
    side = np.zeros(N, dtype=np.int8)
    pos = [0]
    deg = np.diff(indptr)

    def rec(idx):
        if len(idx) <= leaf:
            sub = idx[np.lexsort((coords[idx, 1], coords[idx, 0]))]
            order[pos[0]:pos[0] + len(sub)] = sub
            pos[0] += len(sub)
            return
        c = coords[idx]
        ext = np.ptp(c, axis=0)
        ax = 0 if ext[0] >= ext[1] else 1
        med = np.median(c[:, ax])
        left = c[:, ax] <= med
        if left.all() or not left.any():  # ties: split by rank instead
            rk = np.argsort(c[:, ax], kind="stable")
            left = np.zeros(len(idx), dtype=bool)
            left[rk[: len(idx) // 2]] = True
        L, R = idx[left], idx[~left]
        # separator: nodes of L with an edge into R
        side[R] = 2
        d = deg[L]
        starts = indptr[L]
        rows = np.repeat(np.arange(len(L)), d)
        offs = np.arange(d.sum()) - np.repeat(np.cumsum(d) - d, d)
        nb = indices[np.repeat(starts, d) + offs]
        hit = np.zeros(len(L), dtype=bool)
        hit[rows[side[nb] == 2]] = True
        side[R] = 0
        S, L = L[hit], L[~hit]
        if len(S) == len(idx) or (len(L) == 0 and len(R) == 0):
            sub = idx[np.lexsort((coords[idx, 1], coords[idx, 0]))]
            order[pos[0]:pos[0] + len(sub)] = sub
            pos[0] += len(sub)
            return
        if len(L):
            rec(L)
        if len(R):
            rec(R)
        order[pos[0]:pos[0] + len(S)] = S
        pos[0] += len(S)

    rec(np.arange(N, dtype=np.int64))
    assert pos[0] == N
    return order


def fill_reducing_order(P, coords=None, method="nd"):
    """A fill-reducing permutation (new -> old) of the symmetric sparse matrix ``P``.

    ``"nd"``: geometric nested dissection (needs ``coords``); ``"rcm"``: reverse Cuthill--McKee;
    ``"natural"``: the identity.
    """
    P = sp.csr_matrix(P)
    N = P.shape[0]
    if method == "natural":
        return np.arange(N, dtype=np.int64)
    if method == "rcm":
        from scipy.sparse.csgraph import reverse_cuthill_mckee

        return np.asarray(reverse_cuthill_mckee(P, symmetric_mode=True), dtype=np.int64)
    if method == "nd":
        if coords is None:
            raise ValueError("ordering 'nd' needs the node coordinates.")
        return nested_dissection(np.asarray(coords, dtype=np.float64), P.indptr.astype(np.int64),
                                 P.indices.astype(np.int64))
    raise ValueError(f"'ordering' must be one of {{'nd', 'rcm', 'natural'}}; got {method!r}.")


# ----------------------------------------------------------------------------- numba kernels
@numba.njit(cache=True)
def _etree(N, indptr, indices):
    """Elimination tree of a symmetric pattern given as full CSR (Liu's algorithm)."""
    parent = -np.ones(N, dtype=np.int64)
    ancestor = -np.ones(N, dtype=np.int64)
    for j in range(N):
        for p in range(indptr[j], indptr[j + 1]):
            i = indices[p]
            while i != -1 and i < j:
                nxt = ancestor[i]
                ancestor[i] = j
                if nxt == -1:
                    parent[i] = j
                i = nxt
    return parent


@numba.njit(cache=True)
def _symbolic(N, indptr, indices, parent):
    """Column patterns of L (CSC, rows sorted, diagonal first) from the full CSR pattern and etree."""
    # children lists
    nchild = np.zeros(N + 1, dtype=np.int64)
    for j in range(N):
        if parent[j] >= 0:
            nchild[parent[j] + 1] += 1
    cptr = np.cumsum(nchild)
    cfill = cptr[:-1].copy()
    child = np.empty(max(cptr[-1], 1), dtype=np.int64)
    for j in range(N):
        pj = parent[j]
        if pj >= 0:
            child[cfill[pj]] = j
            cfill[pj] += 1
    Lp = np.zeros(N + 1, dtype=np.int64)
    cap = max(16, 4 * indptr[N])
    Li = np.empty(cap, dtype=np.int64)
    mark = -np.ones(N, dtype=np.int64)
    buf = np.empty(N, dtype=np.int64)
    nz = 0
    for j in range(N):
        m = 0
        mark[j] = j
        buf[m] = j
        m += 1
        for p in range(indptr[j], indptr[j + 1]):
            i = indices[p]
            if i > j and mark[i] != j:
                mark[i] = j
                buf[m] = i
                m += 1
        for t in range(cptr[j], cptr[j + 1]):
            c = child[t]
            for p in range(Lp[c] + 1, Lp[c + 1]):
                i = Li[p]
                if mark[i] != j:
                    mark[i] = j
                    buf[m] = i
                    m += 1
        if nz + m > cap:
            while nz + m > cap:
                cap *= 2
            Li2 = np.empty(cap, dtype=np.int64)
            Li2[:nz] = Li[:nz]
            Li = Li2
        srt = np.sort(buf[1:m])
        Li[nz] = j
        for t in range(m - 1):
            Li[nz + 1 + t] = srt[t]
        nz += m
        Lp[j + 1] = nz
    return Lp, Li[:nz].copy()


@numba.njit(cache=True)
def _scatter_map(N, indptr, indices, Lp, Li):
    """For each entry of the full CSR (permuted) with row >= column, its position in L; -1 otherwise."""
    out = -np.ones(indptr[N], dtype=np.int64)
    for i in range(N):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if i >= j:
                # find row i in column j of L
                lo = Lp[j]
                hi = Lp[j + 1] - 1
                while lo <= hi:
                    mid = (lo + hi) // 2
                    if Li[mid] < i:
                        lo = mid + 1
                    elif Li[mid] > i:
                        hi = mid - 1
                    else:
                        out[p] = mid
                        break
    return out


@numba.njit(cache=True)
def _numeric(N, Lp, Li, Ax):
    """Left-looking Cholesky: ``Ax`` holds the input's lower part scattered on L's pattern.

    Returns (Lx, ok): ok is False when a pivot is not positive."""
    Lx = np.zeros(len(Li))
    work = np.zeros(N)
    head = -np.ones(N, dtype=np.int64)  # linked lists of columns k waiting on row j
    nxt = -np.ones(N, dtype=np.int64)
    pos = np.zeros(N, dtype=np.int64)
    for j in range(N):
        for p in range(Lp[j], Lp[j + 1]):
            work[Li[p]] = Ax[p]
        k = head[j]
        while k != -1:
            k_next = nxt[k]
            pk = pos[k]
            ljk = Lx[pk]
            for p in range(pk, Lp[k + 1]):
                work[Li[p]] -= Lx[p] * ljk
            pk += 1
            pos[k] = pk
            if pk < Lp[k + 1]:
                r = Li[pk]
                nxt[k] = head[r]
                head[r] = k
            k = k_next
        d = work[j]
        if not (d > 0.0):
            return Lx, False
        d = np.sqrt(d)
        Lx[Lp[j]] = d
        work[j] = 0.0
        for p in range(Lp[j] + 1, Lp[j + 1]):
            Lx[p] = work[Li[p]] / d
            work[Li[p]] = 0.0
        if Lp[j] + 1 < Lp[j + 1]:
            pos[j] = Lp[j] + 1
            r = Li[Lp[j] + 1]
            nxt[j] = head[r]
            head[r] = j
    return Lx, True


@numba.njit(cache=True)
def _lsolve(N, Lp, Li, Lx, b):
    x = b.copy()
    for j in range(N):
        x[j] /= Lx[Lp[j]]
        xj = x[j]
        for p in range(Lp[j] + 1, Lp[j + 1]):
            x[Li[p]] -= Lx[p] * xj
    return x


@numba.njit(cache=True)
def _ltsolve(N, Lp, Li, Lx, b):
    x = b.copy()
    for j in range(N - 1, -1, -1):
        s = x[j]
        for p in range(Lp[j] + 1, Lp[j + 1]):
            s -= Lx[p] * x[Li[p]]
        x[j] = s / Lx[Lp[j]]
    return x


@numba.njit(cache=True)
def _takahashi(N, Lp, Li, Lx):
    """Selected inverse Z = (L L^T)^{-1} on the pattern of L (same layout as Lx)."""
    Zx = np.zeros(len(Li))
    m_max = 0
    for j in range(N):
        if Lp[j + 1] - Lp[j] > m_max:
            m_max = Lp[j + 1] - Lp[j]
    blk = np.empty((m_max, m_max))
    loc = -np.ones(N, dtype=np.int64)
    for j in range(N - 1, -1, -1):
        p0 = Lp[j] + 1
        m = Lp[j + 1] - p0
        ljj = Lx[Lp[j]]
        for a in range(m):
            loc[Li[p0 + a]] = a
        # gather Z on struct x struct (rows r_a, cols r_b, b >= a)
        r_last = Li[Lp[j + 1] - 1] if m > 0 else -1
        for a in range(m):
            ra = Li[p0 + a]
            for q in range(Lp[ra], Lp[ra + 1]):
                rq = Li[q]
                if rq > r_last:  # rows are sorted: nothing of the struct beyond this point
                    break
                b = loc[rq]
                if b >= 0:
                    blk[a, b] = Zx[q]
                    blk[b, a] = Zx[q]
        for a in range(m):
            s = 0.0
            for b in range(m):
                s += Lx[p0 + b] * blk[a, b]
            Zx[p0 + a] = -s / ljj
        s = 0.0
        for b in range(m):
            s += Lx[p0 + b] * Zx[p0 + b]
        Zx[Lp[j]] = 1.0 / (ljj * ljj) - s / ljj
        for a in range(m):
            loc[Li[p0 + a]] = -1
    return Zx


@numba.njit(cache=True)
def _lookup(Lp, Li, Zx, rows, cols):
    """Z[rows[t], cols[t]] (permuted indices, symmetric); NaN where the pair is not in the pattern."""
    out = np.empty(len(rows))
    for t in range(len(rows)):
        i = rows[t]
        j = cols[t]
        if i < j:
            i, j = j, i
        lo = Lp[j]
        hi = Lp[j + 1] - 1
        v = np.nan
        while lo <= hi:
            mid = (lo + hi) // 2
            if Li[mid] < i:
                lo = mid + 1
            elif Li[mid] > i:
                hi = mid - 1
            else:
                v = Zx[mid]
                break
        out[t] = v
    return out


# ----------------------------------------------------------------------------- the factor object
class SparseCholesky:
    """Cholesky factor of SPD matrices sharing one sparsity pattern (symbolic analysis done once).

    Parameters
    ----------
    P : scipy sparse matrix, shape (N, N)
        A symmetric matrix whose *structure* (not values) fixes the pattern; every later matrix passed
        to :meth:`factor` must have exactly this CSR structure (``indptr``/``indices``).
    coords : ndarray (N, 2), optional
        Node coordinates for the nested-dissection ordering.
    ordering : {"nd", "rcm", "natural"}
    """

    def __init__(self, P, coords=None, ordering="nd"):
        P = sp.csr_matrix(P)
        P.sort_indices()
        self.N = N = P.shape[0]
        self.indptr = P.indptr.astype(np.int64)
        self.indices = P.indices.astype(np.int64)
        self.perm = fill_reducing_order(P, coords, ordering if coords is not None or ordering != "nd" else "rcm")
        self.iperm = np.empty(N, dtype=np.int64)
        self.iperm[self.perm] = np.arange(N)
        # permuted full CSR pattern and the map from P.data to it
        Pp = sp.csr_matrix((np.arange(1, P.nnz + 1, dtype=np.float64), self.indices, self.indptr), shape=(N, N))
        Pp = Pp[self.perm][:, self.perm].tocsr()
        Pp.sort_indices()
        self._pp_src = (Pp.data.astype(np.int64) - 1)  # index into P.data for each permuted entry
        pip = Pp.indptr.astype(np.int64)
        pii = Pp.indices.astype(np.int64)
        parent = _etree(N, pip, pii)
        self.Lp, self.Li = _symbolic(N, pip, pii, parent)
        smap = _scatter_map(N, pip, pii, self.Lp, self.Li)
        keep = smap >= 0
        self._dst = smap[keep]
        self._src = self._pp_src[keep]
        self.Lx = None
        self.Zx = None

    def clone(self):
        """A factor sharing this one's symbolic analysis, with no numeric values yet."""
        import copy

        out = copy.copy(self)
        out.Lx = None
        out.Zx = None
        return out

    @property
    def nnz_L(self):
        return int(len(self.Li))

    def factor(self, data):
        """Factor the matrix with values ``data`` (aligned with the CSR structure given at construction).

        Returns ``self``; raises :class:`numpy.linalg.LinAlgError` if it is not positive definite."""
        Ax = np.zeros(len(self.Li))
        Ax[self._dst] = data[self._src]
        Lx, ok = _numeric(self.N, self.Lp, self.Li, Ax)
        if not ok:
            raise np.linalg.LinAlgError("sparse Cholesky: the matrix is not positive definite.")
        self.Lx = Lx
        self.Zx = None
        return self

    def logdet(self):
        """log|P| of the factored matrix."""
        return float(2.0 * np.sum(np.log(self.Lx[self.Lp[:-1]])))

    def solve(self, b):
        """P^{-1} b (b of shape (N,) or (N, r))."""
        b = np.asarray(b, dtype=np.float64)
        if b.ndim == 2:
            return np.column_stack([self.solve(b[:, t]) for t in range(b.shape[1])])
        y = _lsolve(self.N, self.Lp, self.Li, self.Lx, np.ascontiguousarray(b[self.perm]))
        x = _ltsolve(self.N, self.Lp, self.Li, self.Lx, y)
        out = np.empty(self.N)
        out[self.perm] = x
        return out

    def half_solve(self, b):
        """L^{-1} (b permuted): ``||half_solve(b)||^2 = b^T P^{-1} b``."""
        return _lsolve(self.N, self.Lp, self.Li, self.Lx, np.ascontiguousarray(np.asarray(b, dtype=np.float64)[self.perm]))

    def selected_inverse(self):
        """Run the Takahashi recursions (cached until the next :meth:`factor`)."""
        if self.Zx is None:
            self.Zx = _takahashi(self.N, self.Lp, self.Li, self.Lx)
        return self.Zx

    def diag_inverse(self):
        """diag(P^{-1}) in the original node order."""
        Zx = self.selected_inverse()
        d = Zx[self.Lp[:-1]]
        out = np.empty(self.N)
        out[self.perm] = d
        return out

    def inverse_entries(self, rows, cols):
        """(P^{-1})[rows, cols] (original indices); NaN where a pair is outside the pattern of L."""
        Zx = self.selected_inverse()
        r = self.iperm[np.asarray(rows, dtype=np.int64).ravel()]
        c = self.iperm[np.asarray(cols, dtype=np.int64).ravel()]
        return _lookup(self.Lp, self.Li, Zx, r, c).reshape(np.shape(rows))

    def inverse_on_pattern(self):
        """P^{-1} on the CSR structure given at construction (aligned with its ``data``)."""
        rows = np.repeat(np.arange(self.N, dtype=np.int64), np.diff(self.indptr))
        return self.inverse_entries(rows, self.indices)


def dense_selected(P):
    """Dense reference: (S = P^{-1}, log|P|) by LAPACK Cholesky."""
    import scipy.linalg as sla

    P = P.toarray() if sp.issparse(P) else np.asarray(P, dtype=np.float64)
    c, low = sla.cho_factor(P, lower=True)
    S = sla.cho_solve((c, low), np.eye(len(P)))
    return 0.5 * (S + S.T), float(2.0 * np.sum(np.log(np.diag(c))))
