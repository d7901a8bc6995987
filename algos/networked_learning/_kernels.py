r"""numba kernels of :mod:`algos.networked_learning`: the three ways of applying a shared sketch.

The CountSketch and FWHT kernels have plain-numpy twins in :mod:`._sketch_reference` (the readable
definitions, with dense matrices); the Gaussian block kernel is pinned to
:func:`accel.networked_learning.gaussian_sketch_apply` run with the numpy backend (the same function is
the torch path):

* :func:`countsketch_apply` -- the CountSketch scatter-add :math:`(SA)_{h(i)} \mathrel{+}= s(i) A_i`
  for a bucket map :math:`h : [m] \to [k]` and signs :math:`s(i) \in \{\pm 1\}`, in :math:`O(mp)`.
* :func:`fwht_inplace` -- the unnormalised fast Walsh-Hadamard transform :math:`a \leftarrow H_n a`
  along axis 0 (:math:`H_n` the Sylvester-Hadamard matrix, entries :math:`\pm 1`), in
  :math:`O(n p \log n)`; the core of the SRHT.
* :func:`gaussian_block_apply` -- the accumulation :math:`\text{out} \mathrel{+}= G^\top A` of one
  column chunk of a Gaussian sketch (``G`` holds the chunk's block of :math:`S^\top`).

Bit-identical column splits. Every entry ``out[i, j]`` is computed from column ``j`` of ``A`` alone,
with the same sequence of floating-point operations whatever the number of columns: the loop over
the columns is innermost and carries no reduction, and no ``fastmath`` (no reassociation, no FMA
contraction) is used. So ``S @ [A1, A2]`` equals ``[S @ A1, S @ A2]`` bit for bit, which is what lets
every agent of the networked protocol sketch its own columns and still agree with the others. (A
BLAS GEMM does not promise this: its kernels and blocking depend on the matrix shapes.)

All kernels are serial (``gaussian_block_apply`` releases the GIL, so the next Gaussian blocks are
drawn in other threads meanwhile) and draw no random numbers: the hashes, signs and Gaussian blocks are drawn
in Python from counter-based generators (:mod:`._sketch`) and passed in.
"""

from __future__ import annotations

import numba

__all__ = ["countsketch_apply", "fwht_inplace", "gaussian_block_apply"]


@numba.njit(cache=True)
def countsketch_apply(rows_bucket, rows_sign, A, out):
    r"""CountSketch scatter-add: ``out[rows_bucket[i]] += rows_sign[i] * A[i]`` for every row ``i``.

    Parameters
    ----------
    rows_bucket : ndarray of int64, shape (m,)
        Bucket :math:`h(i) \in \{0, \dots, k-1\}` of each row of ``A``.
    rows_sign : ndarray of float64, shape (m,)
        Sign :math:`s(i) \in \{-1, +1\}` of each row.
    A : ndarray of float64, shape (m, p)
    out : ndarray of float64, shape (k, p)
        Accumulated into (not zeroed first), so a matrix can be sketched in row chunks.
    """
    m, p = A.shape
    for i in range(m):
        b = rows_bucket[i]
        s = rows_sign[i]
        for j in range(p):
            out[b, j] += s * A[i, j]


@numba.njit(cache=True)
def fwht_inplace(a):
    r"""Unnormalised fast Walsh-Hadamard transform along axis 0, in place: ``a <- H_n @ a``.

    ``H_n`` is the Sylvester-ordered Hadamard matrix (``scipy.linalg.hadamard(n)``),
    :math:`(H_n)_{ij} = (-1)^{\mathrm{popcount}(i \,\&\, j)}`, so :math:`H_n^2 = n I`.

    Parameters
    ----------
    a : ndarray of float64, shape (n, p)
        ``n`` must be a power of two (checked by the caller); overwritten with the transform.
    """
    n, p = a.shape
    h = 1
    while h < n:
        step = 2 * h
        for start in range(0, n, step):
            for i in range(start, start + h):
                for j in range(p):
                    x = a[i, j]
                    y = a[i + h, j]
                    a[i, j] = x + y
                    a[i + h, j] = x - y
        h = step


@numba.njit(cache=True, nogil=True)
def gaussian_block_apply(G, A, out):
    r"""Accumulate one chunk of a dense sketch: ``out += G.T @ A``, column by column of ``A``.

    Parameters
    ----------
    G : ndarray of float64, shape (c, k)
        The chunk's block of :math:`S^\top` (rows of ``G`` match rows of ``A``), C-contiguous.
    A : ndarray of float64, shape (c, p)
        The chunk's rows of the matrix being sketched.
    out : ndarray of float64, shape (k, p)
        Accumulated into; ``out[i, j]`` receives the terms ``G[r, i] * A[r, j]`` in the order
        ``r = 0, 1, ..., c-1``.
    """
    c, k = G.shape
    p = A.shape[1]
    for r in range(c):
        for i in range(k):
            g = G[r, i]
            for j in range(p):
                out[i, j] += g * A[r, j]
