r"""Numba kernels of :mod:`._sparse`: the scalar column Cholesky and Takahashi recursions, and the
supernodal kernels (left-looking factorisation, block selected inverse, triangular solves) calling
scipy's BLAS/LAPACK as external symbols. Each kernel is one loop nest over the analysed pattern; the
analysis, the checks and the user-facing object are in :mod:`._sparse` (see its docstring for the
method and the references).
"""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numba
import numpy as np
from numba.extending import get_cython_function_address


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
    # row indices as int32 (nodes < 2^31; the positions in Lp stay int64): the pattern is the largest array
    # of the analysis, alive twice while it grows
    cap = max(16, 8 * indptr[N])
    Li = np.empty(cap, dtype=np.int32)
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
            Li2 = np.empty(cap, dtype=np.int32)
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
def _find_row(Ri, lo, hi, i):
    """Position of row i in the sorted Ri[lo:hi] (-1 if absent)."""
    hi -= 1
    while lo <= hi:
        mid = (lo + hi) // 2
        v = Ri[mid]
        if v < i:
            lo = mid + 1
        elif v > i:
            hi = mid - 1
        else:
            return mid
    return -1


@numba.njit(cache=True)
def _scatter_map(N, indptr, indices, Lp, Li):
    """For each entry of the full CSR (permuted) with row >= column, its position in L; -1 otherwise."""
    out = -np.ones(indptr[N], dtype=np.int64)
    for i in range(N):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if i >= j:
                out[p] = _find_row(Li, Lp[j], Lp[j + 1], i)
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
def _positions(Lp, Li, rows, cols):
    """Positions in the column storage of the pairs (rows[t], cols[t]) (permuted, symmetric); -1 if absent."""
    out = np.empty(len(rows), dtype=np.int64)
    for t in range(len(rows)):
        i, j = max(rows[t], cols[t]), min(rows[t], cols[t])
        out[t] = _find_row(Li, Lp[j], Lp[j + 1], i)
    return out


# ----------------------------------------------------------------------------- supernodal kernels
# BLAS/LAPACK through scipy's Cython exports (Fortran calling convention: every argument by pointer).
# Blocks are stored column-major per supernode in one flat array: entry (row a, column c) of supernode s
# sits at off[s] + c * nr_s + a, where rows are R_s = Ri[Rp[s]:Rp[s+1]] (the supernode's own columns
# first) and nr_s = len(R_s).
# The routines are registered as LLVM symbols and called as numba external functions, which keeps the
# kernels cacheable (a ctypes function object would be a "dynamic global" and disable numba's cache).
_C8, _I4, _F8 = numba.types.CPointer(numba.types.uint8), numba.types.CPointer(numba.types.int32), \
    numba.types.CPointer(numba.types.float64)


def _external(module, name, *argtypes):
    address = get_cython_function_address(f"scipy.linalg.cython_{module}", name)
    if numba.config.DISABLE_JIT:  # plain Python twins (NUMBA_DISABLE_JIT=1): call through ctypes
        return ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * len(argtypes)))(address)
    symbol = f"algos_point_process_{name}"
    llvm.add_symbol(symbol, address)
    return numba.types.ExternalFunction(symbol, numba.types.void(*argtypes))


_dgemm = _external("blas", "dgemm", _C8, _C8, _I4, _I4, _I4, _F8, _F8, _I4, _F8, _I4, _F8, _F8, _I4)
_dtrsm = _external("blas", "dtrsm", _C8, _C8, _C8, _C8, _I4, _I4, _F8, _F8, _I4, _F8, _I4)
_dpotrf = _external("lapack", "dpotrf", _C8, _I4, _F8, _I4, _I4)
_dpotri = _external("lapack", "dpotri", _C8, _I4, _F8, _I4, _I4)

_N, _T, _L, _R = ord("N"), ord("T"), ord("L"), ord("R")


@numba.njit(cache=True)
def _gemm(ta, tb, m, n, k, alpha, A, oa, lda, B, ob, ldb, beta, C, oc, ldc):
    """C[oc:] = alpha op(A[oa:]) op(B[ob:]) + beta C[oc:] (column-major, leading dimensions given)."""
    ch = np.array([ta, tb], dtype=np.uint8)
    iv = np.array([m, n, k, lda, ldb, ldc], dtype=np.int32)
    dv = np.array([alpha, beta])
    _dgemm(ch[0:].ctypes, ch[1:].ctypes, iv[0:].ctypes, iv[1:].ctypes, iv[2:].ctypes, dv[0:].ctypes,
           A[oa:].ctypes, iv[3:].ctypes, B[ob:].ctypes, iv[4:].ctypes, dv[1:].ctypes, C[oc:].ctypes, iv[5:].ctypes)


@numba.njit(cache=True)
def _trsm(side, trans, m, n, A, oa, lda, B, ob, ldb):
    """B[ob:] <- B op(A)^{-1} (side 'R') or op(A)^{-1} B (side 'L'), A lower triangular, non-unit."""
    ch = np.array([side, _L, trans, _N], dtype=np.uint8)
    iv = np.array([m, n, lda, ldb], dtype=np.int32)
    dv = np.array([1.0])
    _dtrsm(ch[0:].ctypes, ch[1:].ctypes, ch[2:].ctypes, ch[3:].ctypes, iv[0:].ctypes, iv[1:].ctypes,
           dv.ctypes, A[oa:].ctypes, iv[2:].ctypes, B[ob:].ctypes, iv[3:].ctypes)


@numba.njit(cache=True)
def _potrf(n, A, oa, lda, inverse):
    """Lower Cholesky of A[oa:] in place (``inverse``: dpotri, the inverse from a factor); returns info."""
    ch = np.array([_L], dtype=np.uint8)
    iv = np.array([n, lda, 0], dtype=np.int32)
    if inverse:
        _dpotri(ch.ctypes, iv[0:].ctypes, A[oa:].ctypes, iv[1:].ctypes, iv[2:].ctypes)
    else:
        _dpotrf(ch.ctypes, iv[0:].ctypes, A[oa:].ctypes, iv[1:].ctypes, iv[2:].ctypes)
    return iv[2]


@numba.njit(cache=True)
def _supernodes(N, parent, Lp, relax_small, relax_mid, relax_big):
    """Relaxed supernode partition: columns j, j+1 share a supernode only when parent[j] == j + 1 (so the
    supernode's row set is {f..l-1} U struct(l)); a merge is accepted while the explicit zeros stay
    below a size-dependent fraction of the stored entries (Ashcraft & Grimes 1989)."""
    start = np.empty(N + 1, dtype=np.int64)
    ns = 0
    f = 0
    true_nz = Lp[1] - Lp[0]
    start[0] = 0
    for j in range(N - 1):
        cnt_next = Lp[j + 2] - Lp[j + 1]
        ok = parent[j] == j + 1
        if ok:
            ncol = j + 2 - f
            nr = (j + 1 - f) + cnt_next
            stored = ncol * nr - ncol * (ncol - 1) // 2
            tnz = true_nz + cnt_next
            zeros = stored - tnz
            if zeros > 0:
                frac = relax_small if ncol <= 16 else (relax_mid if ncol <= 64 else relax_big)
                ok = zeros <= frac * stored
        if ok:
            true_nz += cnt_next
        else:
            ns += 1
            start[ns] = j + 1
            f = j + 1
            true_nz = cnt_next
    ns += 1
    start[ns] = N
    return start[: ns + 1].copy()


@numba.njit(cache=True)
def _sn_structure(N, start, Lp, Li):
    """Row sets R_s, block offsets and the column -> supernode map."""
    ns = len(start) - 1
    sn_of = np.empty(N, dtype=np.int64)
    Rp = np.zeros(ns + 1, dtype=np.int64)
    off = np.zeros(ns + 1, dtype=np.int64)
    for s in range(ns):
        f, l = start[s], start[s + 1] - 1
        for c in range(f, l + 1):
            sn_of[c] = s
        nr = (l - f) + (Lp[l + 1] - Lp[l])
        Rp[s + 1] = Rp[s] + nr
        off[s + 1] = off[s] + nr * (l - f + 1)
    Ri = np.empty(Rp[ns], dtype=np.int32)
    for s in range(ns):
        f, l = start[s], start[s + 1] - 1
        p = Rp[s]
        for c in range(f, l):
            Ri[p] = c
            p += 1
        for q in range(Lp[l], Lp[l + 1]):
            Ri[p] = Li[q]
            p += 1
    return sn_of, Rp, Ri, off


@numba.njit(cache=True)
def _sn_scatter_map(N, indptr, indices, start, sn_of, Rp, Ri, off):
    """Flat position in the supernodal storage of each lower entry of the permuted full CSR; -1 above."""
    out = -np.ones(indptr[N], dtype=np.int64)
    for i in range(N):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if i >= j:
                s = sn_of[j]
                a = _find_row(Ri, Rp[s], Rp[s + 1], i)
                if a >= 0:
                    out[p] = off[s] + (j - start[s]) * (Rp[s + 1] - Rp[s]) + (a - Rp[s])
    return out


@numba.njit(cache=True)
def _sn_dims(s, start, Rp, off):
    """Supernode s: first column, column count, start of its rows in Ri, row count, block offset."""
    f = start[s]
    r0 = Rp[s]
    return f, start[s + 1] - f, r0, Rp[s + 1] - r0, off[s]


@numba.njit(cache=True)
def _sn_max_sizes(start, Rp):
    """The largest row count and the largest column count of the supernodes (work-array sizes)."""
    max_nr = 0
    max_nc = 0
    for s in range(len(start) - 1):
        max_nr = max(max_nr, Rp[s + 1] - Rp[s])
        max_nc = max(max_nc, start[s + 1] - start[s])
    return max_nr, max_nc


@numba.njit(cache=True)
def _sn_numeric(N, start, sn_of, Rp, Ri, off, Lx):
    """Left-looking supernodal Cholesky in place on ``Lx`` (the input's lower part already scattered).

    Each supernode gathers the updates of the descendants that touch its columns (one GEMM each,
    linked lists keyed by the next row a descendant has to update, as in the column algorithm), then
    factors its diagonal block (POTRF) and solves for the rows below it (TRSM). Returns ok."""
    ns = len(start) - 1
    head = -np.ones(ns, dtype=np.int64)
    nxt = -np.ones(ns, dtype=np.int64)
    pos = np.zeros(ns, dtype=np.int64)
    relpos = np.zeros(N, dtype=np.int64)
    max_nr, max_nc = _sn_max_sizes(start, Rp)
    work = np.empty(max(1, max_nr * max_nc))
    for s in range(ns):
        f, ncol, r0, nr, os = _sn_dims(s, start, Rp, off)
        for a in range(nr):
            relpos[Ri[r0 + a]] = a
        d = head[s]
        while d != -1:
            dn = nxt[d]
            rd = Rp[d]
            nrd = Rp[d + 1] - rd
            p1 = pos[d]
            p2 = p1
            while p2 < nrd and Ri[rd + p2] < f + ncol:
                p2 += 1
            m = nrd - p1
            n = p2 - p1
            _gemm(_N, _T, m, n, start[d + 1] - start[d], 1.0, Lx, off[d] + p1, nrd, Lx, off[d] + p1, nrd,
                  0.0, work, 0, m)
            for c in range(n):
                base = os + (Ri[rd + p1 + c] - f) * nr
                wc = c * m
                for i in range(c, m):
                    Lx[base + relpos[Ri[rd + p1 + i]]] -= work[wc + i]
            pos[d] = p2
            if p2 < nrd:
                t = sn_of[Ri[rd + p2]]
                nxt[d] = head[t]
                head[t] = d
            d = dn
        if _potrf(ncol, Lx, os, nr, False) != 0:
            return False
        for c in range(1, ncol):  # clear the (unused) strict upper triangle of the diagonal block
            for a in range(c):
                Lx[os + c * nr + a] = 0.0
        if nr > ncol:
            _trsm(_R, _T, nr - ncol, ncol, Lx, os, nr, Lx, os + ncol, nr)
            pos[s] = ncol
            t = sn_of[Ri[r0 + ncol]]
            nxt[s] = head[t]
            head[t] = s
    return True


@numba.njit(cache=True)
def _sn_takahashi(N, start, sn_of, Rp, Ri, off, Lx, overwrite=False):
    """Supernodal selected inverse Z = (L L^T)^{-1} on the supernodal pattern (same layout as ``Lx``).

    For a supernode with columns J and rows I below them, with U = L_IJ L_JJ^{-1}:
    Z_IJ = -Z_II U and Z_JJ = (L_JJ L_JJ^T)^{-1} + U^T Z_II U, where Z_II (already computed: every
    row of I lies in a later supernode, and I x I lies in the pattern because it is chordal) is
    gathered into a dense block.

    ``overwrite``: ``Z`` replaces ``L`` in ``Lx`` (returned; no second factor-sized array). Supernode ``s``
    reads ``L`` only in its own block (copied to ``U`` and used by the TRSM before its diagonal block is
    inverted) and ``Z`` only in later supernodes, so the sweep from the last supernode back can write
    each block's ``Z`` over its ``L``."""
    ns = len(start) - 1
    Zx = Lx if overwrite else np.zeros(len(Lx))
    relpos = np.zeros(N, dtype=np.int64)
    max_nr, max_nc = _sn_max_sizes(start, Rp)
    Zii = np.empty(max(1, max_nr * max_nr))
    U = np.empty(max(1, max_nr * max_nc))
    Y = np.empty(max(1, max_nr * max_nc))
    for s in range(ns - 1, -1, -1):
        f = start[s]
        ncol = start[s + 1] - f
        r0 = Rp[s]
        nr = Rp[s + 1] - r0
        nb = nr - ncol
        os = off[s]
        if nb > 0:  # U = L_IJ L_JJ^{-1}, read before the block is overwritten
            for c in range(ncol):
                for a in range(nb):
                    U[c * nb + a] = Lx[os + c * nr + ncol + a]
            _trsm(_R, _N, nb, ncol, Lx, os, nr, U, 0, nb)
        if not overwrite:
            for c in range(ncol):
                for a in range(c, ncol):
                    Zx[os + c * nr + a] = Lx[os + c * nr + a]
        _potrf(ncol, Zx, os, nr, True)
        for c in range(ncol):  # symmetrise the diagonal block
            for a in range(c + 1, ncol):
                Zx[os + a * nr + c] = Zx[os + c * nr + a]
        if nb == 0:
            continue
        b = 0
        while b < nb:
            t = sn_of[Ri[r0 + ncol + b]]
            ft = start[t]
            rt = Rp[t]
            nrt = Rp[t + 1] - rt
            ot = off[t]
            for q in range(nrt):
                relpos[Ri[rt + q]] = q
            while b < nb and Ri[r0 + ncol + b] < start[t + 1]:
                base = ot + (Ri[r0 + ncol + b] - ft) * nrt
                for a in range(b, nb):
                    v = Zx[base + relpos[Ri[r0 + ncol + a]]]
                    Zii[b * nb + a] = v
                    Zii[a * nb + b] = v
                b += 1
        _gemm(_N, _N, nb, ncol, nb, 1.0, Zii, 0, nb, U, 0, nb, 0.0, Y, 0, nb)
        for c in range(ncol):
            for a in range(nb):
                Zx[os + c * nr + ncol + a] = -Y[c * nb + a]
        _gemm(_T, _N, ncol, ncol, nb, 1.0, U, 0, nb, Y, 0, nb, 1.0, Zx, os, nr)
    return Zx


@numba.njit(cache=True)
def _sn_lsolve(N, start, Rp, Ri, off, Lx, b):
    """L^{-1} b (permuted order)."""
    x = b.copy()
    ns = len(start) - 1
    for s in range(ns):
        f, ncol, r0, nr, os = _sn_dims(s, start, Rp, off)
        for c in range(ncol):
            xc = x[f + c] / Lx[os + c * nr + c]
            x[f + c] = xc
            for a in range(c + 1, nr):
                x[Ri[r0 + a]] -= Lx[os + c * nr + a] * xc
    return x


@numba.njit(cache=True)
def _sn_ltsolve(N, start, Rp, Ri, off, Lx, b):
    """L^{-T} b (permuted order)."""
    x = b.copy()
    ns = len(start) - 1
    for s in range(ns - 1, -1, -1):
        f, ncol, r0, nr, os = _sn_dims(s, start, Rp, off)
        for c in range(ncol - 1, -1, -1):
            acc = x[f + c]
            for a in range(c + 1, nr):
                acc -= Lx[os + c * nr + a] * x[Ri[r0 + a]]
            x[f + c] = acc / Lx[os + c * nr + c]
    return x


@numba.njit(cache=True)
def _sn_diag(start, Rp, off, X):
    """The diagonal entries of a supernodal array (permuted order)."""
    ns = len(start) - 1
    out = np.empty(start[ns])
    for s in range(ns):
        f = start[s]
        nr = Rp[s + 1] - Rp[s]
        for c in range(start[s + 1] - f):
            out[f + c] = X[off[s] + c * nr + c]
    return out


@numba.njit(cache=True)
def _sn_positions(start, sn_of, Rp, Ri, off, rows, cols):
    """Positions in the supernodal storage of the pairs (rows[t], cols[t]) (permuted, symmetric); -1 if absent."""
    out = np.empty(len(rows), dtype=np.int64)
    for t in range(len(rows)):
        i, j = max(rows[t], cols[t]), min(rows[t], cols[t])
        s = sn_of[j]
        a = _find_row(Ri, Rp[s], Rp[s + 1], i)
        out[t] = -1 if a < 0 else off[s] + (j - start[s]) * (Rp[s + 1] - Rp[s]) + (a - Rp[s])
    return out


@numba.njit(cache=True)
def _sn_parent(s, start, sn_of, Rp, Ri):
    """The elimination-tree parent of supernode ``s`` (the supernode of its first row below its columns;
    -1 at a root)."""
    ncol = start[s + 1] - start[s]
    return sn_of[Ri[Rp[s] + ncol]] if Rp[s + 1] - Rp[s] > ncol else -1


@numba.njit(cache=True)
def _sn_forward_norm2(path, start, Rp, Ri, off, Lx, x):
    """``||y||^2`` of the forward solve ``L y = x`` restricted to the supernodes ``path`` (increasing, closed
    under the updates they make); ``x`` is consumed on ``path``'s columns (zeroed) and updated below them."""
    acc = 0.0
    for i in range(len(path)):
        f, ncol, r0, nr, os = _sn_dims(path[i], start, Rp, off)
        for c in range(ncol):
            xc = x[f + c] / Lx[os + c * nr + c]
            x[f + c] = 0.0
            if xc != 0.0:
                acc += xc * xc
                for a in range(c + 1, nr):
                    x[Ri[r0 + a]] -= Lx[os + c * nr + a] * xc
    return acc


@numba.njit(cache=True)
def _sn_quadratic_forms(start, sn_of, Rp, Ri, off, Lx, rows, vals):
    """``||L^{-1} b_q||^2 = b_q^T P^{-1} b_q`` for each row ``q`` of ``rows``/``vals`` (M, k): ``b_q`` has the
    values ``vals[q]`` at the (permuted) positions ``rows[q]``. Each forward solve is restricted to the reach
    of ``b_q``: the supernodes on the elimination-tree paths from its positions to the root (Gilbert 1994),
    visited in increasing order; the work vector is zeroed as it is consumed."""
    M, k = rows.shape
    ns = len(start) - 1
    x = np.zeros(start[ns])
    mark = np.full(ns, -1, dtype=np.int64)
    reach = np.empty(ns, dtype=np.int64)
    out = np.empty(M)
    for q in range(M):
        n_reach = 0
        for t in range(k):
            s = sn_of[rows[q, t]]
            while s >= 0 and mark[s] != q:
                mark[s] = q
                reach[n_reach] = s
                n_reach += 1
                s = _sn_parent(s, start, sn_of, Rp, Ri)
        for t in range(k):
            x[rows[q, t]] += vals[q, t]
        out[q] = _sn_forward_norm2(np.sort(reach[:n_reach]), start, Rp, Ri, off, Lx, x)
    return out


@numba.njit(cache=True)
def _sn_quadratic_forms_cut(start, sn_of, Rp, Ri, off, Lx, Zx, rows, vals):
    """As :func:`_sn_quadratic_forms`, with the forward solve stopped at the lowest common ancestor ``s`` of
    the supernodes of ``rows[q]``. With ``H`` the ancestors of ``s`` (``L[not H, H] = 0``), the Schur
    complement of ``P`` on ``H`` is ``L_HH L_HH^T``, so ``||L_HH^{-1} c||^2 = c^T Z_HH c``; ``c`` (what is left
    of the right-hand side on ``H``) lies on the rows of ``s`` below its columns, a clique of the factor's
    pattern, where the selected inverse ``Zx`` holds every pair."""
    M, k = rows.shape
    ns = len(start) - 1
    x = np.zeros(start[ns])
    mark = np.full(ns, -1, dtype=np.int64)
    reach = np.empty(ns, dtype=np.int64)
    out = np.empty(M)
    for q in range(M):
        # the first node's path to the root, marked; the others' walks stop on a marked supernode
        n_reach = 0
        s = sn_of[rows[q, 0]]
        while s >= 0:
            mark[s] = q
            reach[n_reach] = s
            n_reach += 1
            s = _sn_parent(s, start, sn_of, Rp, Ri)
        n_path = n_reach
        top = reach[0]
        for t in range(1, k):
            s = sn_of[rows[q, t]]
            while mark[s] != q:  # a marked ancestor (the root is marked) ends the walk
                mark[s] = q
                reach[n_reach] = s
                n_reach += 1
                s = _sn_parent(s, start, sn_of, Rp, Ri)
            if s > top:
                top = s
        # keep the first path up to the common ancestor ``top``
        m = 0
        for i in range(n_reach):
            if i >= n_path or reach[i] <= top:
                reach[m] = reach[i]
                m += 1
        for t in range(k):
            x[rows[q, t]] += vals[q, t]
        acc = _sn_forward_norm2(np.sort(reach[:m]), start, Rp, Ri, off, Lx, x)
        # c^T Z c on the rows of ``top`` below its columns
        f, ncol, r0, nr, os = _sn_dims(top, start, Rp, off)
        for a in range(ncol, nr):
            i = Ri[r0 + a]
            ci = x[i]
            if ci == 0.0:
                continue
            st = sn_of[i]
            ft, nct, rt, nrt, ot = _sn_dims(st, start, Rp, off)
            cc = i - ft
            base = ot + cc * nrt
            lower = 0.0
            for b in range(cc + 1, nrt):
                lower += Zx[base + b] * x[Ri[rt + b]]
            acc += ci * (ci * Zx[base + cc] + 2.0 * lower)
        for a in range(ncol, nr):
            x[Ri[r0 + a]] = 0.0
        out[q] = acc
    return out
