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

Fill-reducing ordering :math:`\pi`: nested dissection (George 1973) on the node coordinates and the
graph — split at the median of either coordinate, take as separator a minimum vertex cover of the graph's
edges across the cut (König's theorem; the separator refinement of Ashcraft & Liu 1998), keep the axis with
the smaller separator, order the two halves recursively and the separator last — or scipy's reverse
Cuthill--McKee. The pattern
is computed once per fit (elimination tree, Liu 1990; column counts), since the NNGP neighbour sets do
not change.

Two numeric kernels share that analysis:

* ``method="supernodal"`` (default): columns with nested patterns are grouped into *relaxed supernodes*
  (Ashcraft & Grimes 1989; a few explicit zeros accepted) and stored as dense column-major blocks. The
  factorisation is left-looking by supernode (Ng & Peyton 1993): one GEMM per descendant update, POTRF
  on the diagonal block, TRSM below it. The selected inverse runs the block form of the recursions
  (as in Amestoy et al. / Lin et al.'s SelInv): with :math:`U = L_{IJ}L_{JJ}^{-1}`,
  :math:`Z_{IJ} = -Z_{II}U` and :math:`Z_{JJ} = (L_{JJ}L_{JJ}^\top)^{-1} + U^\top Z_{II} U`, where
  :math:`Z_{II}` is gathered from later supernodes. BLAS/LAPACK are scipy's (``scipy.linalg.cython_blas``
  / ``cython_lapack``), called from numba as external symbols so the kernels stay cacheable.
* ``method="column"``: the scalar left-looking column Cholesky with linked column lists (George & Liu
  1981) and the column recursions above; the reference the supernodal kernels are tested against.

The dense path (:func:`dense_selected`) uses LAPACK and is the reference in tests.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import maximum_bipartite_matching

from .._validation import check_array
from ._sparse_kernels import (
    _etree,
    _lsolve,
    _ltsolve,
    _numeric,
    _positions,
    _scatter_map,
    _sn_diag,
    _sn_lsolve,
    _sn_ltsolve,
    _sn_numeric,
    _sn_positions,
    _sn_quadratic_forms,
    _sn_quadratic_forms_cut,
    _sn_scatter_map,
    _sn_structure,
    _sn_takahashi,
    _supernodes,
    _symbolic,
    _takahashi,
)

__all__ = ["SparseCholesky", "nested_dissection", "fill_reducing_order", "dense_selected"]

#: Leaf size of the nested dissection: below it a part is ordered by coordinate.
ND_LEAF = 48
#: Relaxed-supernode thresholds: the largest fraction of explicit zeros accepted in a supernode of at most
#: 16 columns, at most 64 columns, and larger (tuned on NNGP precisions; see SparseCholesky).
SUPERNODE_RELAX = (0.3, 0.15, 0.05)


# ----------------------------------------------------------------------------- orderings
def _cut_edges(indptr, indices, part, side):
    """The edges from the nodes ``part`` to nodes marked in ``side``: local index in ``part``, other end."""
    deg = np.diff(indptr)[part]
    rows = np.repeat(np.arange(len(part)), deg)
    offs = np.arange(deg.sum()) - np.repeat(np.cumsum(deg) - deg, deg)
    nb = indices[np.repeat(indptr[part], deg) + offs]
    hit = side[nb]
    return rows[hit], nb[hit]


def _min_vertex_cover(n_left, n_right, rows, cols):
    """A minimum vertex cover of the bipartite graph with edges ``(rows[e], cols[e])`` (König's theorem:
    from a maximum matching, the left vertices not reachable from an unmatched left vertex by an
    alternating path, and the right vertices that are). Returns boolean masks over left and right."""
    G = sp.csr_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(n_left, n_right))
    match = maximum_bipartite_matching(G, perm_type="column")  # the right vertex of each left one, or -1
    mate = np.full(n_right, -1, dtype=np.int64)
    matched = np.flatnonzero(match >= 0)
    mate[match[matched]] = matched
    seen_left = match < 0
    seen_right = np.zeros(n_right, dtype=bool)
    frontier = np.flatnonzero(seen_left)
    while len(frontier):
        nb = np.unique(G[frontier].indices)
        nb = nb[~seen_right[nb]]
        seen_right[nb] = True
        back = mate[nb]
        back = back[back >= 0]
        back = back[~seen_left[back]]
        seen_left[back] = True
        frontier = back
    return ~seen_left, seen_right


def _bisect(coords, indptr, indices, idx, axis, side):
    """Split ``idx`` at the median of coordinate ``axis``; the separator is a minimum vertex cover of the
    graph's edges across the cut (so drawn from both halves). Returns (left, right, separator)."""
    c = coords[idx, axis]
    left = c <= np.median(c)
    if left.all() or not left.any():  # ties: split by rank instead
        left = np.zeros(len(idx), dtype=bool)
        left[np.argsort(c, kind="stable")[: len(idx) // 2]] = True
    L, R = idx[left], idx[~left]
    side[R] = True
    rows, nb = _cut_edges(indptr, indices, L, side)
    side[R] = False
    if len(rows) == 0:
        return L, R, idx[:0]
    ul, ri = np.unique(rows, return_inverse=True)
    Rs = np.sort(R)
    ur, ci = np.unique(np.searchsorted(Rs, nb), return_inverse=True)
    cover_l, cover_r = _min_vertex_cover(len(ul), len(ur), ri.ravel(), ci.ravel())
    in_l = np.zeros(len(L), dtype=bool)
    in_l[ul[cover_l]] = True
    in_r = np.zeros(len(Rs), dtype=bool)
    in_r[ur[cover_r]] = True
    return L[~in_l], Rs[~in_r], np.concatenate([L[in_l], Rs[in_r]])


def nested_dissection(coords, indptr, indices, leaf=ND_LEAF):
    """Nested-dissection permutation (new -> old) of the graph (indptr, indices) on ``coords``.

    Each part is cut at the median of each coordinate; the separator of a cut is a minimum vertex cover of
    the graph's edges across it (König's theorem on a maximum bipartite matching), and the cut with the
    smaller separator is kept. The two halves are ordered recursively and the separator last; parts of at
    most ``leaf`` nodes are ordered by coordinate.
    """
    N = len(coords)
    order = np.empty(N, dtype=np.int64)
    side = np.zeros(N, dtype=bool)
    pos = [0]

    def emit(sub):
        order[pos[0]:pos[0] + len(sub)] = sub
        pos[0] += len(sub)

    def rec(idx):
        if len(idx) <= leaf:
            emit(idx[np.lexsort((coords[idx, 1], coords[idx, 0]))])
            return
        cuts = [_bisect(coords, indptr, indices, idx, axis, side) for axis in (0, 1)]
        L, R, S = min(cuts, key=lambda cut: len(cut[2]))
        if len(S) == len(idx) or (len(L) == 0 and len(R) == 0):
            emit(idx[np.lexsort((coords[idx, 1], coords[idx, 0]))])
            return
        if len(L):
            rec(L)
        if len(R):
            rec(R)
        emit(S)

    rec(np.arange(N, dtype=np.int64))
    rec = None  # the closure refers to itself: break the cycle, so the graph's arrays (and side) are freed now
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

#: Relative asymmetry |P - P^T| / max|P| above which a matrix is rejected as non-symmetric.
SYMMETRY_RTOL = 1e-12


# ----------------------------------------------------------------------------- the factor object
class SparseCholeskyError(np.linalg.LinAlgError):
    """The values given to :meth:`SparseCholesky.factor` have no Cholesky factor (non-finite, or not
    numerically positive definite).

    A :class:`numpy.linalg.LinAlgError`, hence also a :class:`ValueError`: ``data`` is bad input."""


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
    method : {"supernodal", "column"}, default="supernodal"
        ``"supernodal"``: relaxed supernodes (columns with nested patterns stored as dense blocks) with
        BLAS/LAPACK on the blocks, for both the factorisation and the selected inverse; several times
        faster once the separators are large. ``"column"``: the scalar left-looking column algorithm
        and column Takahashi recursions (the reference the supernodal kernels are tested against).
    """

    def __init__(self, P, coords=None, ordering="nd", method="supernodal"):
        if method not in ("supernodal", "column"):
            raise ValueError(f"'method' must be one of {{'supernodal', 'column'}}; got {method!r}.")
        if sp.issparse(P):
            if P.dtype.kind not in "iufb":
                raise TypeError(f"'P' must hold real numbers; got a sparse matrix of dtype {P.dtype}.")
            P = sp.csr_matrix(P, dtype=np.float64)
        else:
            if isinstance(P, (str, bytes, numbers.Number)) or np.ndim(P) != 2:
                raise TypeError(f"'P' must be a square scipy sparse matrix or 2-d array; got {P!r} of type "
                                f"{type(P).__name__}.")
            P = sp.csr_matrix(check_array(P, "P", ndim=2, finite=False))
        if P.ndim != 2 or P.shape[0] != P.shape[1] or P.shape[0] == 0:
            raise ValueError(f"'P' must be a non-empty square matrix; got shape {P.shape}.")
        if not np.all(np.isfinite(P.data)):
            raise ValueError("'P' must contain only finite values; got NaN or inf.")
        P.sort_indices()
        # the pattern must be symmetric (and the values, when P carries them)
        T = sp.csr_matrix((np.arange(1, P.nnz + 1, dtype=np.float64), P.indices, P.indptr), shape=P.shape).T.tocsr()
        T.sort_indices()
        if not (np.array_equal(T.indptr, P.indptr) and np.array_equal(T.indices, P.indices)):
            raise ValueError("'P' must be symmetric: its sparsity pattern differs from that of its transpose.")
        self._tpos = T.data.astype(np.int64) - 1  # position of entry (j, i) for each stored (i, j)
        scale = float(np.max(np.abs(P.data), initial=0.0))
        asym = float(np.max(np.abs(P.data - P.data[self._tpos]), initial=0.0))
        if asym > SYMMETRY_RTOL * scale:
            raise ValueError(f"'P' must be symmetric; got max |P - P^T| = {asym:.3g} (max |P| = {scale:.3g}).")
        self.N = N = P.shape[0]
        if N >= 2**31:  # the kernels keep row indices as int32
            raise ValueError(f"'P' must have fewer than 2**31 rows; got {N}.")
        self.method = method
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
        if method == "supernodal":
            start = _supernodes(N, parent, self.Lp, *SUPERNODE_RELAX)
            sn_of, Rp, Ri, off = _sn_structure(N, start, self.Lp, self.Li)
            self._sn = (start, sn_of, Rp, Ri, off)
            self._size = int(off[-1])
            smap = _sn_scatter_map(N, pip, pii, start, sn_of, Rp, Ri, off)
        else:
            self._sn = None
            self._size = int(len(self.Li))
            smap = _scatter_map(N, pip, pii, self.Lp, self.Li)
        keep = smap >= 0
        # int32 maps where they fit (per node they are the largest arrays of the symbolic analysis)
        itype = np.int32 if max(self._size, P.nnz) < 2**31 else np.int64
        self._dst = smap[keep].astype(itype)
        self._src = self._pp_src[keep].astype(itype)
        # the mirror (j, i) of each lower entry: together with _src it pairs every entry with its transpose,
        # which is all the symmetry check and inverse_on_pattern need (the full _tpos is twice its size)
        self._tsrc = self._tpos[self._src].astype(itype)
        del self._tpos
        # past the symbolic analysis the column indices only size ``data``: keep their count, not them
        self.nnz_P = int(P.nnz)
        del self.indices
        del self._pp_src, smap, keep
        self._nnz_L = int(len(self.Li))
        if method == "supernodal":
            self.Li = None  # the column pattern is in the supernodes' row lists (``Ri``) from here on
        self.Lx = None
        self.Zx = None
        self._logdet = None

    def clone(self):
        """A factor sharing this one's symbolic analysis, with no numeric values yet.

        Returns
        -------
        SparseCholesky
            A factor of the same pattern, sharing the symbolic analysis, not yet factorised.
        """
        import copy

        out = copy.copy(self)
        out.Lx = None
        out.Zx = None
        out._logdet = None
        return out

    @property
    def nnz_L(self):
        """Structural non-zeros of the Cholesky factor (the column pattern, diagonal included)."""
        return self._nnz_L

    @property
    def n_supernodes(self):
        """Number of supernodes (``N`` for the column method)."""
        return self.N if self._sn is None else int(len(self._sn[0]) - 1)

    @property
    def n_stored(self):
        """Stored entries of the factor (the supernodal blocks include explicit zeros of the relaxation)."""
        return self._size

    def factor(self, data):
        """Factor the matrix with values ``data`` (aligned with the CSR structure given at construction).

        Returns ``self``; raises :class:`SparseCholeskyError` (a :class:`numpy.linalg.LinAlgError`)
        if it has non-finite entries or is not positive definite. Values of any magnitude are factored: a matrix with
        entries beyond ``1e100`` (or all below ``1e-100``) is factored scaled, and the factor rescaled.

        Parameters
        ----------
        data : array-like of shape (nnz,)
            Entries of the matrix, aligned with the CSR structure of ``P``.

        Returns
        -------
        SparseCholesky
            ``self``.
        """
        data = check_array(data, "data", ndim=1, allow_empty=True, finite=False)
        if data.shape != (self.nnz_P,):
            raise ValueError(f"'data' must have one value per stored entry ({self.nnz_P},); got shape "
                             f"{data.shape}.")
        if not np.all(np.isfinite(data)):
            raise SparseCholeskyError("sparse Cholesky: 'data' must contain only finite values; got NaN or inf.")
        scale = float(np.max(np.abs(data), initial=0.0))
        asym = float(np.max(np.abs(data[self._src] - data[self._tsrc]), initial=0.0))
        if asym > SYMMETRY_RTOL * scale:
            raise ValueError(f"'data' must give a symmetric matrix; got max |P - P^T| = {asym:.3g} "
                             f"(max |P| = {scale:.3g}).")
        # extreme magnitudes: factor data / scale (its squares stay in range), then L = sqrt(scale) L_scaled
        rescale = scale > 1e100 or 0.0 < scale < 1e-100
        Ax = np.zeros(self._size)
        Ax[self._dst] = data[self._src] / scale if rescale else data[self._src]
        if self._sn is None:
            Lx, ok = _numeric(self.N, self.Lp, self.Li, Ax)
        else:
            start, sn_of, Rp, Ri, off = self._sn
            ok = _sn_numeric(self.N, start, sn_of, Rp, Ri, off, Ax)
            Lx = Ax
        if not ok:
            raise SparseCholeskyError("sparse Cholesky: the matrix given by 'data' is not positive definite.")
        if rescale:
            Lx *= np.sqrt(scale)
        self.Lx = Lx
        self.Zx = None
        self._logdet = None
        return self

    def _require(self, what):
        if self.Lx is None:
            from sklearn.exceptions import NotFittedError

            why = ("the factor was overwritten by its selected inverse (selected_inverse(overwrite=True))"
                   if self.Zx is not None else "call factor(data) first")
            raise NotFittedError(f"SparseCholesky.{what}() needs a factorisation: {why}.")

    def _diag_of(self, X):
        if self._sn is None:
            return X[self.Lp[:-1]]
        start, _, Rp, _, off = self._sn
        return _sn_diag(start, Rp, off, X)

    def logdet(self):
        """log|P| of the factored matrix.

        Returns
        -------
        float
            The log-determinant of the factorised matrix.
        """
        if self.Lx is None and self._logdet is not None:
            return self._logdet
        self._require("logdet")
        return float(2.0 * np.sum(np.log(self._diag_of(self.Lx))))

    def _triangular(self, simplicial, supernodal, b):
        """``b`` through the triangular kernel of the factor's layout (``simplicial`` or ``supernodal``)."""
        if self._sn is None:
            return simplicial(self.N, self.Lp, self.Li, self.Lx, b)
        start, _, Rp, Ri, off = self._sn
        return supernodal(self.N, start, Rp, Ri, off, self.Lx, b)

    def _unpermuted(self, x):
        """``x`` (in the factor's order) back in the original node order."""
        out = np.empty(self.N)
        out[self.perm] = x
        return out

    def _lsolve(self, b):
        return self._triangular(_lsolve, _sn_lsolve, b)

    def _ltsolve(self, b):
        return self._triangular(_ltsolve, _sn_ltsolve, b)

    def solve(self, b):
        """P^{-1} b (b of shape (N,) or (N, r)).

        Parameters
        ----------
        b : array-like of shape (N,) or (N, k)
            Right-hand side(s).

        Returns
        -------
        ndarray
            The solution, of the shape of ``b``.
        """
        self._require("solve")
        b = check_array(b, "b", ndim=(1, 2))
        if b.shape[:1] != (self.N,) or b.ndim > 2:
            raise ValueError(f"'b' must have shape ({self.N},) or ({self.N}, r); got {b.shape}.")
        if b.ndim == 2:
            return np.column_stack([self.solve(b[:, t]) for t in range(b.shape[1])])
        x = self._ltsolve(self._lsolve(np.ascontiguousarray(b[self.perm])))
        return self._unpermuted(x)

    def half_solve(self, b):
        """L^{-1} (b permuted): ``||half_solve(b)||^2 = b^T P^{-1} b``.

        Parameters
        ----------
        b : array-like of shape (N,) or (N, k)
            Right-hand side(s).

        Returns
        -------
        ndarray
            The solution, of the shape of ``b``.
        """
        self._require("half_solve")
        return self._lsolve(np.ascontiguousarray(np.asarray(b, dtype=np.float64)[self.perm]))

    def sample(self, z):
        """``x = pi^T L^{-T} z``: for standard normal ``z`` of length N, ``x ~ N(0, P^{-1})``.

        Parameters
        ----------
        z : array-like of shape (N,)
            Standard normal draws.

        Returns
        -------
        ndarray of shape (N,)
            A draw with covariance the inverse of the factorised matrix.
        """
        self._require("sample")
        x = self._ltsolve(np.ascontiguousarray(np.asarray(z, dtype=np.float64)))
        return self._unpermuted(x)

    def inverse_quadratic_forms(self, rows, vals, selected=True):
        """``b_q^T P^{-1} b_q`` for sparse vectors ``b_q``, one per row of ``rows``/``vals``, without forming
        any entry of ``P^{-1}``.

        ``b_q`` holds ``vals[q, t]`` at node ``rows[q, t]`` (original indices; repeated indices add). With
        ``P = L L^T`` the form is ``||L^{-1} b_q||^2``; the forward solve touches only the reach of ``b_q``,
        the elimination-tree paths from its nodes to the root (Gilbert 1994). With ``selected=True`` it
        stops at the lowest common ancestor ``s`` of those nodes (by supernode): ``L`` has no entry in the
        rows outside the ancestors ``H`` of ``s`` and the columns in ``H``, so the Schur complement of ``P``
        on ``H`` is ``L_HH L_HH^T`` and the rest of the form is ``c^T (P^{-1})_HH c`` for what is left of
        the right-hand side, ``c``; ``c`` lies on the rows of ``s`` below its columns, a clique of the
        factor's pattern, where the selected inverse (:meth:`selected_inverse`, computed once and kept)
        has every entry. Nearby nodes have a low common ancestor, so the work per form is a small subtree
        and one dense form, instead of the separators up to the root.

        Parameters
        ----------
        rows : array-like of int, shape (M, k)
            Node indices of each vector's non-zeros.
        vals : array-like of float, shape (M, k)
            Their values.
        selected : bool, default=True
            Use the selected inverse above the common ancestor (computed on the first call if needed,
            keeping the factor); ``False``: forward solves up to the root.

        Returns
        -------
        ndarray of shape (M,)
            The quadratic forms.
        """
        self._require("inverse_quadratic_forms")
        rows = np.asarray(rows)
        if rows.ndim != 2 or rows.dtype.kind not in "iu":
            raise ValueError(f"'rows' must be a 2-d integer array; got shape {rows.shape}, dtype {rows.dtype}.")
        vals = check_array(vals, "vals", ndim=2, allow_empty=True)
        if vals.shape != rows.shape:
            raise ValueError(f"'vals' must have the shape of 'rows' {rows.shape}; got {vals.shape}.")
        if rows.size and (rows.min() < 0 or rows.max() >= self.N):
            raise ValueError(f"'rows' must hold node indices in [0, {self.N}); got values in "
                             f"[{rows.min()}, {rows.max()}].")
        r = np.ascontiguousarray(self.iperm[rows.astype(np.int64)])
        v = np.ascontiguousarray(vals)
        if self._sn is None:
            ar = np.arange(self.N + 1, dtype=np.int64)
            layout = (ar, ar[:-1], self.Lp, self.Li, self.Lp)
        else:
            layout = self._sn
        if rows.shape[1] == 0 or not selected:
            return _sn_quadratic_forms(*layout, self.Lx, r, v)
        return _sn_quadratic_forms_cut(*layout, self.Lx, self.selected_inverse(), r, v)

    def selected_inverse(self, overwrite=False):
        """Run the Takahashi recursions (cached until the next :meth:`factor`).

        Parameters
        ----------
        overwrite : bool, default=False
            Write the selected inverse over the factor (supernodal method; the column method copies):
            no second factor-sized array is allocated, and the factor is gone afterwards (only the
            inverse's methods, :meth:`diag_inverse`, :meth:`inverse_entries`, :meth:`inverse_on_pattern`,
            remain; :meth:`logdet` stays available, its value kept from before).

        Returns
        -------
        ndarray of shape (nnz,)
            Entries of the inverse on the pattern of the factor.
        """
        if self.Zx is None:
            self._require("selected_inverse")
            if self._sn is None:
                self.Zx = _takahashi(self.N, self.Lp, self.Li, self.Lx)
            else:
                start, sn_of, Rp, Ri, off = self._sn
                if overwrite:
                    self._logdet = self.logdet()
                    self.Zx = _sn_takahashi(self.N, start, sn_of, Rp, Ri, off, self.Lx, True)
                    self.Lx = None
                else:
                    self.Zx = _sn_takahashi(self.N, start, sn_of, Rp, Ri, off, self.Lx, False)
        return self.Zx

    def diag_inverse(self):
        """diag(P^{-1}) in the original node order.

        Returns
        -------
        ndarray of shape (N,)
            Diagonal of the inverse.
        """
        d = self._diag_of(self.selected_inverse())
        return self._unpermuted(d)

    def inverse_entries(self, rows, cols):
        """(P^{-1})[rows, cols] (original indices); NaN where a pair is outside the stored pattern.

        Parameters
        ----------
        rows, cols : array-like of int
            Row and column indices, of one shape.

        Returns
        -------
        ndarray
            The entries of the inverse, of the shape of ``rows``.
        """
        Zx = self.selected_inverse()
        r = self.iperm[np.asarray(rows, dtype=np.int64).ravel()]
        c = self.iperm[np.asarray(cols, dtype=np.int64).ravel()]
        if self._sn is None:
            pos = _positions(self.Lp, self.Li, r, c)
        else:
            start, sn_of, Rp, Ri, off = self._sn
            pos = _sn_positions(start, sn_of, Rp, Ri, off, r, c)
        out = np.where(pos >= 0, Zx[np.maximum(pos, 0)], np.nan)
        return out.reshape(np.shape(rows))

    def inverse_on_pattern(self):
        """P^{-1} on the CSR structure given at construction (aligned with its ``data``).

        Returns
        -------
        ndarray of shape (nnz,)
            Entries of the inverse on the CSR structure of ``P``.
        """
        # the scatter map of the factorisation already holds the factor's position of every lower entry of
        # the permuted pattern (and Z is symmetric): no per-entry row/column/position arrays
        Zx = self.selected_inverse()
        vals = Zx[self._dst]
        out = np.empty(self.nnz_P)
        out[self._src] = vals
        out[self._tsrc] = vals
        return out


def dense_selected(P):
    """Dense reference: (S = P^{-1}, log|P|) by LAPACK Cholesky."""
    import scipy.linalg as sla

    P = P.toarray() if sp.issparse(P) else np.asarray(P, dtype=np.float64)
    c, low = sla.cho_factor(P, lower=True)
    S = sla.cho_solve((c, low), np.eye(len(P)))
    return 0.5 * (S + S.T), float(2.0 * np.sum(np.log(np.diag(c))))
