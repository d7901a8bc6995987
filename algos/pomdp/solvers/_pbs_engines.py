"""The two search engines of :class:`~algos.pomdp.PointBasedSolver` (:mod:`._pbs`): the numba engine
(sparse model, column-wise alpha vectors, CSR belief points; kernels in :mod:`._pbs_kernels`) and the
torch engine (device tensors; per-belief work in :class:`accel.pomdp.PBSTorchBackup`), each with one
trial, the two prunings, the bounds at ``b0`` and the export of the sets, plus the array helpers they
share. The algorithm (HSVI2, Smith & Simmons 2005) is described in the docstring of :mod:`._pbs`.
"""

from __future__ import annotations

import math

import numpy as np

from . import _pbs_kernels as _k

WITNESS_PRUNING = True  # prune vectors at witness beliefs (else pointwise dominance; see :mod:`._pbs`)
#: capacity factor of the numba engine's buffers when they fill up (vectors, points, their supports); the
#: column-wise vectors are resident in full (huge pages), so the slack is at most a third of the capacity
GROWTH = 1.5
#: memory for the search tree's cached successor values (:func:`._pbs_kernels.trial`); its arrays are allocated
#: once, only the nodes reached become resident, and beyond this many bytes new nodes are evaluated afresh
TREE_CACHE_BYTES = 64 << 20


class _NumbaEngine:
    """The search state of the numba backend (sparse model, column-wise vectors, CSR points) and
    its steps: one trial, the two prunings, the bounds at ``b0``, the export of the sets."""

    def __init__(self, T_sparse, Z, r, discount, b0, Q, c, init_vectors):
        A, S, O = Z.shape
        self.Z, self.r, self.discount, self.b0, self.Q, self.c = Z, r, discount, b0, Q, c
        self.S = S
        self.Tptr, self.Tidx, self.Tval = T_sparse
        self.n_init = self.nA = len(init_vectors)
        self.prune_when_full = False  # prune the vectors when their buffer is full, before it grows
        capA, capU = 256, 256
        self.ALT = np.zeros((S, capA))  # lower vectors column-wise (see _pbs_kernels)
        self.ALT[:, :self.nA] = init_vectors.T
        self.AA = np.zeros(capA, dtype=np.int64)
        self.AA[:self.nA] = np.arange(self.nA)
        # witness belief of each vector in CSR (ptr, idx, val) (empty rows: the initial vectors)
        self.WB = (np.zeros(capA + 1, dtype=np.int64), np.zeros(capA * 4, dtype=np.int64), np.zeros(capA * 4))
        self.Uptr = np.zeros(capU + 1, dtype=np.int64)
        self.Uidx = np.zeros(capU * 4, dtype=np.int64)
        self.Uval = np.zeros(capU * 4)
        self.Uinv = np.zeros(capU * 4)
        self.Ud = np.zeros(capU)
        self.Uv = np.zeros(capU)
        self.Umask = np.zeros((capU, (S + 63) // 64), dtype=np.uint64)
        self.dense_pts = S <= _k.DENSE_POINTS_MAX_S
        self.UinvT = np.full((S, capU), np.inf) if self.dense_pts else np.zeros((0, 0))
        self.nU = 0
        self.bufs = (np.zeros((A, O)), np.zeros((A, O)), np.zeros((A, O)), np.zeros((A, O), dtype=np.int64),
                     np.zeros(A))
        self.work = (np.zeros(S), np.zeros(S), np.zeros(S, dtype=np.int8), np.zeros(S, dtype=np.int64),
                     np.zeros(S, dtype=np.int64))
        self.cand, self.wbuf, self.bsup = np.zeros(S), np.zeros(S), np.zeros(S, dtype=np.int64)
        self.vb = np.zeros(max(capA, capU))
        self.path = np.zeros((1, S))
        self.b0sup = np.flatnonzero(b0 > 0).astype(np.int64)
        self.deep = False  # SARSOP's selective deep sampling in the trials (see _pbs_kernels.trial)
        # the search tree's cached successor values (see _pbs_kernels.trial); the epoch changes with each pruning
        cap = TREE_CACHE_BYTES // (A * O * 28 + 24)
        self.tree = (np.zeros((cap, A, O), dtype=np.int32), np.zeros(cap, dtype=np.int64),
                     np.zeros(cap, dtype=np.int64), np.zeros(cap, dtype=np.int64), np.zeros((cap, A, O)),
                     np.zeros((cap, A, O)), np.zeros((cap, A, O), dtype=np.int32))
        self.n_nodes, self.epoch = 0, 1
        self.links = (np.full(S, -1, dtype=np.int64), np.zeros(capU, dtype=np.int64))  # see _k.upper_listed

    def bounds(self):
        sup = self.b0sup
        lo = _k.lower_at(self.b0, sup, len(sup), self.ALT, self.nA, self.vb)[0]
        up = _k.upper_at(self.b0, sup, len(sup), self.Q, self.c, self.Uptr, self.Uidx, self.Uinv, self.Ud,
                         self.Umask, self.UinvT, self.nU, -1, self.vb)
        return float(lo), float(max(up, lo))

    def _reserve(self, need):
        """Room for ``need`` more vectors and points (one of each per backup of a trial)."""
        S = self.S
        if self.path.shape[0] < need:
            self.path = np.zeros((need, S))
        if self.nA + need > self.ALT.shape[1] and self.prune_when_full:
            self.prune_lower()  # the vectors no witness needs go before the buffer grows (L(b0) unchanged)
        if self.nA + need > self.ALT.shape[1]:
            capA = _capacity(self.ALT.shape[1], self.nA + need)
            self.ALT = _widen_in_place(self.ALT, capA, self.nA)
            self.AA = _grow(self.AA, capA, self.nA)
            self.WB = (_grow(self.WB[0], capA + 1, self.nA + 1),) + self.WB[1:]
        if self.nU + need > len(self.Ud):
            capU = _capacity(len(self.Ud), self.nU + need)
            self.Uptr = _grow(self.Uptr, capU + 1, self.nU + 1)
            self.Ud = _grow(self.Ud, capU, self.nU)
            self.Uv = _grow(self.Uv, capU, self.nU)
            self.Umask = _grow(self.Umask, capU, self.nU)
            self.links = (self.links[0], _grow(self.links[1], capU, self.nU))
            if self.dense_pts:
                self.UinvT = _grow_columns(self.UinvT, capU, np.inf, self.nU)
        if len(self.vb) < max(self.ALT.shape[1], len(self.Ud)):
            self.vb = np.zeros(max(self.ALT.shape[1], len(self.Ud)))
        wptr, widx, wval = self.WB
        nnz = int(wptr[self.nA])
        if nnz + need * S > len(widx):
            cap = _capacity(len(widx), nnz + need * S)
            self.WB = (wptr, _grow(widx, cap, nnz), _grow(wval, cap, nnz))
        nnz = int(self.Uptr[self.nU])
        if nnz + need * S > len(self.Uidx):
            # room for ``need`` full supports; only the entries written become resident (zero pages)
            cap = _capacity(len(self.Uidx), nnz + need * S)
            self.Uidx, self.Uval, self.Uinv = (_grow(self.Uidx, cap, nnz), _grow(self.Uval, cap, nnz),
                                               _grow(self.Uinv, cap, nnz))

    def trial(self, eps, depth_cap):
        self._reserve(depth_cap + 1)
        self.nA, self.nU, depth, nb, _, self.n_nodes = _k.trial(
            self.b0, eps, depth_cap, self.Tptr, self.Tidx, self.Tval, self.Z, self.r, self.discount, self.ALT,
            self.AA, self.WB, self.nA, self.Q, self.c, self.Uptr, self.Uidx, self.Uval, self.Uinv, self.Ud, self.Uv,
            self.Umask, self.UinvT, self.nU, self.path, *self.bufs, self.work, self.cand, self.wbuf, self.bsup,
            self.vb, self.deep, self.tree, self.n_nodes, self.epoch, self.links)
        return depth, nb

    def prune_lower(self):
        self.epoch += 1  # the vectors are renumbered: the tree's cached values are stale
        nA = self.nA
        keep = (_k.prune_witness(self.ALT, nA, self.WB, self.b0, self.n_init, self.vb) if WITNESS_PRUNING
                else _k.prune_alphas(self.ALT, nA, self.n_init))
        m = int(keep.sum())
        _k.compact_columns(self.ALT, keep, nA)  # in place: no (S, m) temporary
        self.AA[:m] = self.AA[:nA][keep]
        self.WB = _compact_csr(keep, *self.WB, nA)
        self.nA = m

    def prune_upper(self):
        self.epoch += 1  # the points are renumbered: the tree's cached values are stale
        n_old = self.nU
        keep = _k.prune_points(self.Q, self.c, self.Uptr, self.Uidx, self.Uval, self.Uinv, self.Ud, self.Uv,
                               self.Umask, self.UinvT, n_old, np.zeros(self.S), self.vb)
        (self.Uptr, self.Uidx, self.Uval, self.Uinv, self.Ud, self.Uv, self.nU) = _compact_points(
            keep, self.Uptr, self.Uidx, self.Uval, self.Uinv, self.Ud, self.Uv, n_old)
        self.Umask[:self.nU] = self.Umask[:n_old][keep]
        _k.link_points(self.Uptr, self.Uidx, self.nU, *self.links)
        if self.dense_pts:
            self.UinvT[:, :self.nU] = self.UinvT[:, :n_old][:, keep]
            self.UinvT[:, self.nU:n_old] = np.inf

    def export(self):
        """``(alphas (nA, S), actions (nA,), Bu, vu (nU,))`` with ``Bu`` the points in CSR, ``(ptr (nU + 1,),
        idx, val)`` (row ``i`` of the dense ``(nU, S)`` array holds ``val[ptr[i]:ptr[i + 1]]`` at
        ``idx[ptr[i]:ptr[i + 1]]``; see :func:`points_dense`), so that no dense copy is made at the end of a fit."""
        nnz = int(self.Uptr[self.nU])
        Bu = (self.Uptr[:self.nU + 1].copy(), self.Uidx[:nnz].copy(), self.Uval[:nnz].copy())
        actions = self.AA[:self.nA].copy()
        return self._take_alphas(), actions, Bu, self.Uv[:self.nU].copy()

    def _take_alphas(self):
        """The vectors as a C-order ``(nA, S)`` array made from the engine's own buffer (transposed in place,
        then shrunk: no second copy at the end of a fit); the engine holds no vectors afterwards."""
        ALT, nA, S = self.ALT, self.nA, self.S
        self.ALT, self.nA = np.zeros((S, 0)), 0
        if not ALT.flags.owndata or not ALT.flags.c_contiguous or nA == 0:
            return np.ascontiguousarray(ALT[:, :nA].T)
        _k.transpose_in_place(ALT.reshape(-1), S, nA, ALT.shape[1])
        ALT.resize((nA * S,), refcheck=False)  # release the tail (no other view of the buffer exists)
        return ALT.reshape(nA, S)


class _TorchEngine:
    """The search state of the torch backend: vectors, witnesses and sawtooth points as dense
    device tensors with doubling capacity; the per-belief work is :class:`accel.pomdp.PBSTorchBackup`.
    The trial and the backups follow the numba kernels ``trial`` / ``update`` step for step (same
    rules, same first-maximum ties); the point pruning runs the numba kernel on a host copy."""

    def __init__(self, T, Z, r, discount, b0, Q, c, init_vectors, device):
        import torch

        from accel.pomdp import PBSTorchBackup

        self.torch = torch
        self.bk = PBSTorchBackup(T, Z, r, discount, device=device)
        dev = self.dev = self.bk.device
        self.discount = discount
        A, S, _ = T.shape
        self.S = S
        f = dict(dtype=torch.float64, device=dev)
        self.Q = torch.as_tensor(Q, **f)
        self.Qn, self.cn = Q, c
        self.c = torch.as_tensor(c, **f)
        self.b0 = torch.as_tensor(b0, **f)
        self.n_init = self.nA = len(init_vectors)
        self.AL = torch.zeros((256, S), **f)
        self.AL[:self.nA] = torch.as_tensor(init_vectors, **f)
        self.WB = torch.zeros((256, S), **f)
        self.AA = np.zeros(256, dtype=np.int64)
        self.AA[:self.nA] = np.arange(self.nA)
        self.Bu = torch.zeros((256, S), **f)
        self.Binv = torch.zeros((256, S), **f)
        self.Bmask = torch.zeros((256, S), dtype=torch.bool, device=dev)
        self.Ud = torch.zeros(256, **f)
        self.Uv = torch.zeros(256, **f)
        self.nU = 0
        self.deep = False  # SARSOP's selective deep sampling (the numba kernel's rule)

    def _views(self):
        n = self.nU
        return self.AL[:self.nA], self.Q, self.c, self.Binv[:n], self.Bmask[:n], self.Ud[:n]

    def bounds(self):
        lo, up = self.bk.lower_upper(self.b0, *self._views())
        return lo, max(up, lo)

    def _reserve(self, need):
        torch = self.torch
        if self.nA + need > self.AL.shape[0]:
            cap = max(2 * self.AL.shape[0], self.nA + need)
            self.AL = torch.cat([self.AL, torch.zeros((cap - self.AL.shape[0], self.S), dtype=self.AL.dtype,
                                                      device=self.dev)])
            self.WB = torch.cat([self.WB, torch.zeros_like(self.AL[self.WB.shape[0]:])])
            self.AA = _grow(self.AA, cap)
        if self.nU + need > self.Bu.shape[0]:
            cap = max(2 * self.Bu.shape[0], self.nU + need)
            extra = cap - self.Bu.shape[0]
            z = torch.zeros((extra, self.S), dtype=self.Bu.dtype, device=self.dev)
            self.Bu, self.Binv = torch.cat([self.Bu, z]), torch.cat([self.Binv, z])
            self.Bmask = torch.cat([self.Bmask, z > 0])
            self.Ud = torch.cat([self.Ud, z[:, 0]])
            self.Uv = torch.cat([self.Uv, z[:, 0]])

    def trial(self, eps, depth_cap):
        """HSVI2 trial (the numba ``trial``): descend, then back both bounds up deepest first."""
        torch = self.torch
        self._reserve(depth_cap + 1)
        bk, g = self.bk, self.discount
        path = [self.b0]
        t = 0
        thr = eps
        lhat = uhat = 0.0
        while True:
            b = path[t]
            alphas, Q, c, Binv, Bmask, Ud = self._views()
            lb, ub = bk.lower_upper(b, alphas, Q, c, Binv, Bmask, Ud)
            if t == 0:
                lhat, uhat = lb, lb + eps
            if t >= depth_cap:
                break
            if self.deep:
                if ub <= lhat and ub <= max(uhat, lb + thr):
                    break
                lhat, uhat = max(lhat, lb), max(uhat, lb + thr)
            elif ub - lb <= thr:
                break
            X = bk.successors(b)
            P = X.sum(dim=-1)
            pos = P > 0.0
            UV = torch.where(pos, _upper_of(bk.nx, X, Q, c, Binv, Bmask, Ud), torch.zeros_like(P))
            QU = b @ bk.r + g * UV.sum(dim=1)
            a = int(torch.argmax(QU))
            thr_next = thr / g
            LVa = (X[a] @ alphas.T).amax(dim=-1)
            UVa = torch.maximum(UV[a], LVa)
            e = torch.where(pos[a], UVa - LVa - P[a] * thr_next, torch.full_like(LVa, -math.inf))
            if not bool(pos[a].any()):
                break
            o = int(torch.argmax(e))
            if self.deep:  # the targets the successor o must reach (the numba kernel's rule)
                rest = pos[a].clone()
                rest[o] = False
                rb = float(QU[a] - g * UV[a].sum())
                den = g * float(P[a, o])
                lhat = (lhat - rb - g * float(torch.where(rest, LVa, torch.zeros_like(LVa)).sum())) / den
                uhat = (uhat - rb - g * float(torch.where(rest, UVa, torch.zeros_like(UVa)).sum())) / den
            path.append(X[a, o] / P[a, o])
            t += 1
            thr = thr_next
        for k in range(t - 1, -1, -1):
            self._update(path[k])
        return t, t

    def _update(self, b):
        """The numba ``update`` at ``b``: append the backed-up vector when it raises ``L(b)`` and the
        point ``(b, H U(b))`` when it lowers ``U(b)``."""
        torch = self.torch
        views = self._views()
        vec, a, best_v, hu, _ = self.bk.backup(b, *views)
        lb, ub = self.bk.lower_upper(b, *views)
        if best_v > lb + _k._EPS_IMPROVE * max(1.0, abs(lb)):
            self.AL[self.nA] = vec
            self.WB[self.nA] = b
            self.AA[self.nA] = a
            self.nA += 1
        if hu < ub - _k._EPS_IMPROVE * max(1.0, abs(ub)):
            i = self.nU
            mask = b > 0
            self.Bu[i] = b
            self.Bmask[i] = mask
            self.Binv[i] = torch.where(mask, 1.0 / torch.where(mask, b, torch.ones_like(b)), torch.zeros_like(b))
            self.Uv[i] = hu
            self.Ud[i] = min(hu - float(b @ self.c), 0.0)
            self.nU += 1

    def prune_lower(self):
        torch = self.torch
        nA = self.nA
        alphas = self.AL[:nA]
        if WITNESS_PRUNING:
            W = torch.cat([self.WB[:nA], self.b0[None]])
            keep = torch.zeros(nA, dtype=torch.bool, device=self.dev)
            keep[: self.n_init] = True
            keep[torch.argmax(W @ alphas.T, dim=1)] = True
            keep = keep.cpu().numpy()
        else:
            keep = _k.prune_alphas(np.ascontiguousarray(alphas.cpu().numpy().T), nA, self.n_init)
        idx = torch.as_tensor(np.flatnonzero(keep), device=self.dev)
        m = len(idx)
        self.AL[:m] = alphas[idx].clone()
        self.WB[:m] = self.WB[:nA][idx].clone()
        self.AA[:m] = self.AA[:nA][keep]
        self.nA = m

    def prune_upper(self):
        n = self.nU
        Bu = self.Bu[:n].cpu().numpy()
        Ud, Uv = self.Ud[:n].cpu().numpy(), self.Uv[:n].cpu().numpy()
        ptr, idx, val, inv, mask, inv_t = _points_csr(Bu, dense=self.S <= _k.DENSE_POINTS_MAX_S)
        keep = _k.prune_points(self.Qn, self.cn, ptr, idx, val, inv, Ud, Uv, mask, inv_t, n, np.zeros(self.S),
                               np.zeros(n))
        sel = self.torch.as_tensor(np.flatnonzero(keep), device=self.dev)
        m = len(sel)
        for name in ("Bu", "Binv", "Bmask", "Ud", "Uv"):
            arr = getattr(self, name)
            arr[:m] = arr[:n][sel].clone()
        self.nU = m

    def export(self):
        return (self.AL[:self.nA].cpu().numpy().copy(), self.AA[:self.nA].copy(),
                self.Bu[:self.nU].cpu().numpy().copy(), self.Uv[:self.nU].cpu().numpy().copy())


def _upper_of(nx, X, Q, c, Binv, Bmask, Ud):
    from accel.pomdp import _pbs_upper

    return _pbs_upper(nx, X, Q, c, Binv, Bmask, Ud)


def _points_csr(Bu, dense=True):
    """CSR arrays, bitmasks and (``dense``) column-wise inverses of the dense points ``Bu`` (n, S)."""
    n, S = Bu.shape
    nz = Bu > 0
    ptr = np.zeros(n + 1, dtype=np.int64)
    ptr[1:] = np.cumsum(nz.sum(axis=1))
    rows, cols = np.nonzero(nz)
    idx = cols.astype(np.int64)
    val = Bu[rows, cols]
    mask = np.zeros((n, (S + 63) // 64), dtype=np.uint64)
    np.bitwise_or.at(mask, (rows, cols >> 6), np.left_shift(np.uint64(1), (cols & 63).astype(np.uint64)))
    inv_t = (np.ascontiguousarray(np.where(nz.T, 1.0 / np.where(nz.T, Bu.T, 1.0), np.inf)) if dense
             else np.zeros((0, 0)))
    return ptr, idx, val, 1.0 / val, mask, inv_t


def witnesses_csr(W, n_rows=None):
    """The CSR triple ``(ptr, idx, val)`` of the kernels' witness beliefs from dense rows ``W`` (n, S) (zero
    rows: no witness), with room for ``n_rows`` rows (default ``n``) of full support."""
    n, S = W.shape
    n_rows = n if n_rows is None else n_rows
    rows, cols = np.nonzero(W > 0)
    ptr = np.zeros(n_rows + 1, dtype=np.int64)
    ptr[1:n + 1] = np.cumsum(np.bincount(rows, minlength=n))
    ptr[n + 1:] = ptr[n]
    idx = np.zeros(len(cols) + n_rows * S, dtype=np.int64)
    val = np.zeros(len(cols) + n_rows * S)
    idx[:len(cols)], val[:len(cols)] = cols, W[rows, cols]
    return ptr, idx, val


def points_dense(Bu, S):
    """The dense ``(n, S)`` points of the CSR triple ``Bu = (ptr, idx, val)`` of :meth:`_NumbaEngine.export`
    (a dense array is returned as it is)."""
    if not isinstance(Bu, tuple):
        return Bu
    ptr, idx, val = Bu
    out = np.zeros((len(ptr) - 1, S))
    out[np.repeat(np.arange(len(ptr) - 1), np.diff(ptr)), idx] = val
    return out


def _capacity(cap, need):
    """The next capacity of a buffer of capacity ``cap`` that must hold ``need`` entries: ``GROWTH`` times the
    old one (at least ``need``), so the slack after a growth is at most ``GROWTH - 1`` of the capacity."""
    return max(int(GROWTH * cap), need)


def _grow(arr, n, used=None):
    """``arr`` in a buffer of ``n`` rows; only the first ``used`` rows (all by default) are copied, so that the
    untouched zero pages of the slack of both buffers stay out of the resident memory."""
    used = len(arr) if used is None else used
    out = np.zeros((n,) + arr.shape[1:], dtype=arr.dtype)
    out[:used] = arr[:used]
    return out


def _grow_columns(arr, n, fill=0, used=None):
    """``arr`` (rows, cap) in a buffer of ``n`` columns, the first ``used`` columns copied (see :func:`_grow`)."""
    used = arr.shape[1] if used is None else used
    out = np.zeros((arr.shape[0], n), dtype=arr.dtype) if fill == 0 else np.full((arr.shape[0], n), fill,
                                                                                     dtype=arr.dtype)
    out[:, :used] = arr[:, :used]
    return out


def _widen_in_place(arr, n, used):
    """``arr`` (rows, cap), C-order and owning its data, widened to ``n`` columns in its own buffer: the buffer
    is enlarged by ``realloc`` (large blocks are remapped, not copied) and the rows re-laid at the new stride
    (:func:`._pbs_kernels.spread_rows`), so no second buffer is resident while it grows; the first ``used``
    columns are kept. Falls back to a copy for an array that does not own a contiguous buffer."""
    rows, cap = arr.shape
    if not (arr.flags.owndata and arr.flags.c_contiguous):
        return _grow_columns(arr, n, used=used)
    arr.resize((rows, n), refcheck=False)  # the kernels hold no view of the buffer between trials
    _k.spread_rows(arr.reshape(-1), rows, cap, n, used)
    return arr


def _compact_csr(keep, ptr, idx, val, n):
    """Drop the rows ``i`` with ``keep[i] = False`` of the first ``n`` rows of a CSR triple, in place (same
    capacity); returns the triple."""
    lens = np.diff(ptr[: n + 1])
    sel = np.repeat(keep, lens)
    nnz = int(lens[keep].sum())
    end = int(ptr[n])
    idx[:nnz] = idx[:end][sel]
    val[:nnz] = val[:end][sel]
    m = int(keep.sum())
    ptr[1: m + 1] = np.cumsum(lens[keep])
    ptr[m + 1: n + 1] = nnz
    return ptr, idx, val


def _compact_points(keep, Uptr, Uidx, Uval, Uinv, Ud, Uv, nU):
    """Drop the upper points with ``keep[i] = False``; CSR arrays rebuilt in place (same capacity)."""
    lens = np.diff(Uptr[: nU + 1])
    sel = np.repeat(keep, lens)
    m = int(keep.sum())
    nnz = int(lens[keep].sum())
    Uidx[:nnz] = Uidx[: Uptr[nU]][sel]
    Uval[:nnz] = Uval[: Uptr[nU]][sel]
    Uinv[:nnz] = Uinv[: Uptr[nU]][sel]
    newptr = np.zeros_like(Uptr)
    newptr[1: m + 1] = np.cumsum(lens[keep])
    Ud[:m] = Ud[:nU][keep]
    Uv[:m] = Uv[:nU][keep]
    return newptr, Uidx, Uval, Uinv, Ud, Uv, m
