r"""Exact evaluation of deterministic FSCs of one model, with the model's blocks cached once.

A K-node FSC ``(action, eta)`` on a POMDP ``(T, Z, r, discount)`` has the node values ``W`` (K, S)
solving ``(I - discount P) W = R`` with ``R[m] = r[:, action[m]]`` and the block rows

    P[m, :, n, :] = sum_{o : eta[m, o] = n} blocks[action[m], o],   blocks[a, o] = T[a] * Z[a, :, o],

(``blocks[a, o, s, s'] = T[a, s, s'] Z[a, s', o]``). The blocks depend on the model only, so they are
computed once per fit (:class:`FSCSystem`) and every system is assembled from them by gathers.

:class:`RowUpdate` gives the exact change of ``V^F(b0)`` when the rows of one node change (its
action and/or its transitions): the Woodbury identity on the current LU factors (a rank-S update),
``O(S^3)`` per trial after ``S`` solves per node, instead of a fresh ``(K S)^3 / 3`` factorisation.
An accepted change is applied in product form (:meth:`RowUpdate.accept`): the factors stay, and each
change adds one rank-S Woodbury step to every later solve, until ``max_updates`` changes ask for a
fresh factorisation.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg
from scipy.sparse import _sparsetools

__all__ = ["FSCSystem", "RowUpdate", "fsc_blocks"]

_BLOCK_LIMIT = 20_000_000  # A*O*S*S floats (160 MB) above which the blocks are not cached
SPARSE_FROM = 512  # K*S from which the system is factored sparse (SuperLU) instead of dense LU
_WEIGHTS_CACHE = 4096  # (action, row) pairs whose successor weights a RowUpdate keeps
MAX_UPDATES = 8  # product-form changes (RowUpdate.accept) after which the system is factored afresh
KRYLOV_RTOL = 1e-12  # relative residual of the iterative solves (checked; a direct solve when not met)


def _matvec(M):
    """``x -> M @ x`` for a CSC matrix ``M`` by the sparse kernel itself (the same product as
    ``M @ x``, without the dispatch of each call); ``M @ x`` for other formats."""
    if M.format != "csc" or M.indptr.dtype != M.indices.dtype:
        return lambda x: M @ x
    n_row, n_col = M.shape
    indptr, indices, data = M.indptr, M.indices, M.data

    def product(x):
        out = np.zeros(n_row)
        _sparsetools.csc_matvec(n_row, n_col, indptr, indices, data, x, out)
        return out

    return product


def _bicgstab(M, b, x0=None, rtol=KRYLOV_RTOL, atol=0.0, maxiter=2000):
    """``scipy.sparse.linalg.bicgstab(M, b, x0=x0, rtol=rtol, atol=0, maxiter=maxiter)`` for a real
    sparse ``M`` without a preconditioner: the same iteration, operation by operation (the same
    iterates and result), without the linear-operator layers around each product (a third of the
    cost of the compression's solves on small policy graphs)."""
    b = np.asarray(b, dtype=float).ravel()
    x = np.zeros_like(b) if x0 is None else np.array(x0, dtype=float).ravel()
    bnrm2 = np.linalg.norm(b)
    atol = max(float(atol), float(rtol) * float(bnrm2))
    if bnrm2 == 0:
        return b, 0
    matvec = _matvec(M)
    dot = np.dot
    rhotol = omegatol = np.finfo(float).eps ** 2
    rho_prev = omega = alpha = p = v = s = None
    r = b - matvec(x) if x.any() else b.copy()
    rtilde = r.copy()
    for iteration in range(maxiter):
        if np.linalg.norm(r) < atol:
            return x, 0
        rho = dot(rtilde, r)
        if np.abs(rho) < rhotol:
            return x, -10
        if iteration > 0:
            if np.abs(omega) < omegatol:
                return x, -11
            beta = (rho / rho_prev) * (alpha / omega)
            p -= omega * v
            p *= beta
            p += r
        else:
            s = np.empty_like(r)
            p = r.copy()
        v = matvec(p)
        rv = dot(rtilde, v)
        if rv == 0:
            return x, -11
        alpha = rho / rv
        r -= alpha * v
        s[:] = r[:]
        if np.linalg.norm(s) < atol:
            x += alpha * p
            return x, 0
        t = matvec(s)
        omega = dot(t, s) / dot(t, t)
        x += alpha * p
        x += omega * s
        r -= omega * t
        rho_prev = rho
    return x, maxiter


def _krylov(M, b, x0=None, rtol=KRYLOV_RTOL):
    """``M^{-1} b`` by BiCGSTAB (then GMRES) from ``x0``, or None when neither reaches the relative
    residual ``rtol`` (checked afterwards on the returned vector)."""
    nb = float(np.linalg.norm(b))
    if nb == 0.0:
        return np.zeros_like(b)
    for method in (_bicgstab, scipy.sparse.linalg.gmres):
        x, _ = method(M, b, x0=x0, rtol=rtol, atol=0.0, maxiter=2000)
        if np.all(np.isfinite(x)) and np.linalg.norm(M @ x - b) <= 10 * rtol * nb:
            return x
    return None


class Factor:
    """LU factors of ``I - discount P``: dense (``scipy.linalg.lu_factor``) or sparse
    (``scipy.sparse.linalg.splu``); :meth:`solve` solves with the matrix or its transpose."""

    def __init__(self, dense=None, sparse=None):
        self.dense, self.sparse = dense, sparse

    def solve(self, b, trans=0):
        if self.sparse is not None:
            return self.sparse.solve(np.asarray(b, dtype=float), trans="T" if trans else "N")
        return scipy.linalg.lu_solve(self.dense, b, trans=trans, check_finite=False)


def fsc_blocks(T, Z):
    """``blocks[a, o, s, s'] = T[a, s, s'] Z[a, s', o]`` (None when larger than ``_BLOCK_LIMIT``)."""
    A, S, _ = T.shape
    O = Z.shape[2]
    if A * O * S * S > _BLOCK_LIMIT:
        return None
    return np.ascontiguousarray(np.einsum("ast,ato->aost", T, Z))


class FSCSystem:
    """The evaluation systems of one model's FSCs, assembled from cached blocks.

    ``P`` is the same matrix as :func:`algos.pomdp._beliefs._fsc_system` builds (the same products
    added in the same order), so the solves give the same numbers."""

    def __init__(self, T, Z, r, discount, b0):
        self.T, self.Z, self.r, self.discount, self.b0 = T, Z, r, discount, b0
        self.blocks = fsc_blocks(T, Z)
        self._nz = None
        self._rows = {}  # per action: the CSR template of one node's rows (see :meth:`operator`)

    def _nonzeros(self):
        """Per action ``a``: the nonzero entries ``(o, s, s', value)`` of the blocks
        ``T[a] * Z[a, :, o]`` over all ``o`` (four flat arrays)."""
        if self._nz is None:
            A = self.T.shape[0]
            self._nz = []
            for a in range(A):
                blk = self.blocks[a] if self.blocks is not None else np.einsum("st,to->ost", self.T[a], self.Z[a])
                o, s, t = np.nonzero(blk)
                self._nz.append((o, s, t, blk[o, s, t]))
        return self._nz

    def sparse_matrix(self, action, eta):
        """``I - discount P`` as a CSC matrix (the entries of :meth:`transition`, duplicates summed):
        :meth:`operator` converted, for the sparse LU."""
        M = self.operator(action, eta).tocsc()
        M.sum_duplicates()
        return M

    def _row_template(self, a):
        """One node's rows of ``I - discount P`` under action ``a`` in CSR order: ``(length per row
        (S,), local row, observation, target state, value, diagonal flag)`` (the diagonal first in
        each row, then the block entries by observation)."""
        if a not in self._rows:
            S = self.n_states
            o, s, t, v = self._nonzeros()[a]
            rows = np.concatenate([np.arange(S), s])
            order = np.argsort(rows, kind="stable")
            diag = np.concatenate([np.ones(S, dtype=bool), np.zeros(s.size, dtype=bool)])[order]
            self._rows[a] = (np.bincount(rows, minlength=S), rows[order],
                             np.concatenate([np.zeros(S, dtype=np.int64), o])[order],
                             np.concatenate([np.arange(S), t])[order],
                             np.concatenate([np.ones(S), -self.discount * v])[order], diag)
        return self._rows[a]

    def operator(self, action, eta):
        """``I - discount P`` as a CSR matrix with duplicate entries kept (a product sums them: the
        same operator as :meth:`sparse_matrix`), assembled from per-action row templates without
        the sort and sum of a format conversion; for the iterative solves."""
        action = np.asarray(action, dtype=np.int64)
        eta = np.asarray(eta, dtype=np.int64)
        K, S = len(action), self.n_states
        temps = [self._row_template(int(a)) for a in action]
        lens = np.array([tp[1].size for tp in temps], dtype=np.int64)
        if K:  # the node rows one after another: node m's entries go to m * S + t (diagonal) or eta[m, o] * S + t
            node = np.repeat(np.arange(K), lens)
            o, t = np.concatenate([tp[2] for tp in temps]), np.concatenate([tp[3] for tp in temps])
            indices = np.where(np.concatenate([tp[5] for tp in temps]), node * S + t, eta[node, o] * S + t)
            data = np.concatenate([tp[4] for tp in temps])
        else:
            indices, data = np.zeros(0, dtype=np.int64), np.zeros(0)
        counts = np.concatenate([tp[0] for tp in temps]) if K else np.zeros(0, dtype=np.int64)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return scipy.sparse.csr_matrix((data, indices, indptr), shape=(K * S, K * S))

    def factor(self, action, eta):
        """``(R, Factor)``: the reward vector and the LU factors of ``I - discount P`` (sparse from
        ``K * S >= SPARSE_FROM``)."""
        action = np.asarray(action, dtype=np.int64)
        K, S = len(action), self.n_states
        if K * S >= SPARSE_FROM:
            R = self.r[:, action].T.reshape(-1)
            return R, Factor(sparse=scipy.sparse.linalg.splu(self.sparse_matrix(action, eta)))
        R, P = self.transition(action, eta)
        return R, Factor(dense=scipy.linalg.lu_factor(np.eye(K * S) - self.discount * P, check_finite=False))

    def value(self, action, eta, m0):
        """Exact ``V^F(b0)`` (a direct solve; sparse LU from ``K * S >= SPARSE_FROM``)."""
        K, S = len(action), self.n_states
        if K * S >= SPARSE_FROM:
            R, lu = self.factor(action, eta)
            W = lu.solve(R).reshape(K, S)
        else:
            R, P = self.transition(action, eta)
            W = scipy.linalg.solve(np.eye(K * S) - self.discount * P, R).reshape(K, S)
        return float(self.b0 @ W[int(m0)])

    @property
    def n_states(self):
        return self.T.shape[1]

    def transition(self, action, eta):
        """``(R, P)``: the reward vector (K*S,) and the dense transition matrix (K*S, K*S)."""
        action = np.asarray(action, dtype=np.int64)
        eta = np.asarray(eta, dtype=np.int64)
        K, S = len(action), self.n_states
        R = self.r[:, action].T.reshape(-1)
        P = np.zeros((K, S, K, S))
        rows = np.arange(K)
        if self.blocks is None:
            Ta, Za = self.T[action], self.Z[action]
            for o in range(self.Z.shape[2]):
                P[rows, :, eta[:, o], :] += Ta * Za[:, None, :, o]
        else:
            for o in range(self.blocks.shape[1]):
                # within one o every node m appears once: the fancy-indexed += has no duplicates
                P[rows, :, eta[:, o], :] += self.blocks[action, o]
        return R, P.reshape(K * S, K * S)

    def values_and_adjoint_iterative(self, action, eta, m0, W0=None, y0=None):
        """``(W, y)`` as :meth:`values_and_adjoint` returns them, by Krylov solves of the sparse system
        (warm-started from ``W0``, ``y0`` when given) to the relative residual ``KRYLOV_RTOL``; a
        sparse LU where they do not reach it. For ranking merges on large controllers: ``I - discount P``
        has its spectrum in the disc of radius ``discount`` around 1, so the solves converge in a few
        dozen products where the LU of a policy graph of a few hundred nodes fills in (tiger-grid's
        253-node graph: 0.03 s against 1.3 s)."""
        action = np.asarray(action, dtype=np.int64)
        K, S = len(action), self.n_states
        M = self.sparse_matrix(action, eta)
        R = self.r[:, action].T.reshape(-1)
        e = np.zeros(K * S)
        e[int(m0) * S:(int(m0) + 1) * S] = self.b0
        flat = (lambda x: None if x is None else np.asarray(x, dtype=float).reshape(-1))  # noqa: E731
        W = _krylov(M, R, flat(W0))
        y = None if W is None else _krylov(M.T.tocsc(), e, flat(y0))
        if y is None:
            W, y, _ = self.values_and_adjoint(action, eta, m0)
            return W, y
        return W.reshape(K, S), y.reshape(K, S)

    def value_iterative(self, action, eta, m0, W0=None):
        """``V^F(b0)`` by a Krylov solve (see :meth:`values_and_adjoint_iterative`; a direct solve
        where it does not converge)."""
        action = np.asarray(action, dtype=np.int64)
        K, S = len(action), self.n_states
        M = self.sparse_matrix(action, eta)
        W = _krylov(M, self.r[:, action].T.reshape(-1), None if W0 is None else np.asarray(W0, dtype=float).reshape(-1))
        if W is None:
            return self.value(action, eta, m0)
        return float(self.b0 @ W.reshape(K, S)[int(m0)])

    def values_and_adjoint(self, action, eta, m0):
        """Node values ``W`` (K, S), the adjoint ``y`` (K, S) with ``(I - discount P)^T y = e_{m0} (x) b0``
        (discounted occupancy of the (node, state) pairs from ``(m0, b0)``) and the LU factors
        (:class:`Factor`)."""
        K, S = len(action), self.n_states
        R, lu = self.factor(action, eta)
        W = lu.solve(R).reshape(K, S)
        e = np.zeros(K * S)
        e[m0 * S:(m0 + 1) * S] = self.b0
        y = lu.solve(e, trans=1).reshape(K, S)
        return W, y, lu


class RowUpdate:
    r"""Exact change of ``V^F(b0)`` when node ``k``'s rows change, from the current LU factors.

    With ``M = I - discount P``, the change is ``M' = M + E_k D`` (``D``: the change of node ``k``'s
    S rows, ``E_k`` the matching identity columns) and ``R' = R + E_k rho``. By the Woodbury identity

        V' - V = y_k . rho - y_k^T (I + D Z_k)^{-1} D (W + Z_k rho),   Z_k = M^{-1} E_k,

    ``y`` the adjoint (``M^T y = e_{m0} (x) b0``). ``Z_k`` costs S solves with the factors (cached per
    node until the tables change); a trial then costs ``O((d + S) S^2)`` (an action change, ``d``
    distinct successor nodes: the block products go through ``T[a]``, see :meth:`_apply`) or ``O(S^3)``
    (one transition) instead of a fresh ``(K S)^3 / 3`` factorisation. The result equals the direct
    solve up to round-off (see ``tests/pomdp/test_recap_incremental.py``).

    :meth:`accept` applies a change without refactoring (product form, as the simplex method keeps
    its basis inverse): with ``G = Z_k C^{-1}`` (``C = I + D Z_k``) the new inverse is
    ``M'^{-1} = (I - G D) M^{-1}``, so ``W' = W + G (rho - D W)``, ``y' = y - M^{-T} D^T G^T e``
    (one transposed solve) and ``Z'_k = G``; every later solve applies the stored ``(G, D)`` steps
    to the solve with the factors. After ``max_updates`` changes the system is factored afresh
    (each step costs about ``4 (d + S) S^2 + 2 K S^3`` flops per ``S`` right-hand sides, against one
    sparse LU per change without it)."""

    def __init__(self, system, max_updates=MAX_UPDATES):
        if system.blocks is None:
            raise ValueError("RowUpdate needs the cached blocks (the model is above the block limit).")
        self.sys, self.blocks = system, system.blocks
        self.r, self.g = system.r, system.discount
        self.max_updates = int(max_updates)
        self._weights = {}  # (action, row) -> (successor nodes, summed observation weights)
        self._file = []

    def reset(self, action, eta, m0):
        """Factor the system of ``(action, eta, m0)``; returns ``(W, y)``."""
        self.action = np.asarray(action, dtype=np.int64).copy()
        self.eta = np.asarray(eta, dtype=np.int64).copy()
        self.m0 = int(m0)
        self.W, self.y, self.lu = self.sys.values_and_adjoint(self.action, self.eta, self.m0)
        self.value = float(self.sys.b0 @ self.W[self.m0])
        self.Zk, self.Zold, self._last_c = {}, {}, None
        self._file = []  # product-form steps since the factorisation: (G, (a_new, row_new), (a_old, row_old))
        return self.W, self.y

    def solve(self, b, trans=0):
        """``M^{-1} b`` (``trans``: ``M^{-T} b``) for the current tables, ``b`` of shape (K*S,) or
        (K*S, m): the solve with the factors and the product-form steps of :meth:`accept`."""
        K, S = self.W.shape
        if not trans:
            x = self.lu.solve(b)
            for G, new, old in self._file:
                x = x - G @ self._D(new, old, x.reshape((K, S) + x.shape[1:]))
            return x
        u = np.array(b, dtype=float)
        for G, new, old in reversed(self._file):
            u = u - self._DT(new, old, G.T @ u).reshape(u.shape)
        return self.lu.solve(u, trans=1)

    def _D(self, new, old, X):
        """The change of one node's rows of ``I - discount P`` (from ``old = (a, row)`` to ``new``)
        applied to X (K, S, ...): shape (S, ...)."""
        return -self.g * (self._apply(*new, X) - self._apply(*old, X))

    def _DT(self, new, old, v):
        """The transpose of :meth:`_D` applied to v (S, ...): shape (K, S, ...)."""
        K, S = self.W.shape
        out = np.zeros((K, S) + v.shape[1:])
        for (a, row), sign in ((new, -self.g), (old, self.g)):
            # blocks[a, o]^T v = Z[a, :, o] * (T[a]^T v): one product, then per successor node the
            # summed observation weights
            n, zs = self._successor_weights(a, row)
            Tv = (self.sys.T[a].T @ v.reshape(S, -1)).reshape((S,) + v.shape[1:])
            zs = zs.reshape(zs.shape + (1,) * (v.ndim - 1))
            for j, node in enumerate(n):
                out[node] += sign * zs[:, j] * Tv
        return out

    def _z(self, k):
        if k not in self.Zk:
            K, S = self.W.shape
            E = np.zeros((K * S, S))
            E[k * S:(k + 1) * S] = np.eye(S)
            self.Zk[k] = self.solve(E).reshape(K, S, S)
        return self.Zk[k]

    def accept(self, k, a_new, row_new):
        """Change node ``k`` to play ``a_new`` with the transitions ``row_new``; ``W``, ``y`` and
        ``value`` follow by the product form (see the class docstring), exact up to round-off.
        Returns the new value."""
        k, a_new = int(k), int(a_new)
        row_new = np.asarray(row_new, dtype=np.int64).copy()
        a_old, row_old = int(self.action[k]), self.eta[k].copy()
        if a_new == a_old and np.array_equal(row_new, row_old):
            return self.value
        if len(self._file) + 1 >= self.max_updates:  # time for a fresh factorisation
            self.action[k], self.eta[k] = a_new, row_new
            self.reset(self.action, self.eta, self.m0)
            return self.value
        K, S = self.W.shape
        new, old = (a_new, row_new), (a_old, row_old)
        Zk = self._z(k)
        last = getattr(self, "_last_c", None)  # C of the trial just screened, when it is this one
        if last is not None and last[:3] == (k, a_new, row_new.tobytes()):
            C = last[3]
        else:
            C = self._capacitance(k, new, Zk)
        G = scipy.linalg.solve(C.T, Zk.reshape(K * S, S).T, check_finite=False).T  # Z_k C^{-1}
        rho = self.r[:, a_new] - self.r[:, a_old]
        W = self.W + (G @ (rho - self._D(new, old, self.W))).reshape(K, S)
        Ge = scipy.linalg.solve(C.T, self.y[k], check_finite=False)  # G^T e = C^{-T} y_k
        y = self.y - self.solve(self._DT(new, old, Ge).reshape(-1), trans=1).reshape(K, S)
        self._file.append((G, new, old))
        self.action[k], self.eta[k] = a_new, row_new
        self.W, self.y = W, y
        self.value = float(self.sys.b0 @ W[self.m0])
        self.Zk, self.Zold, self._last_c = {k: G.reshape(K, S, S)}, {}, None
        return self.value

    @property
    def pending(self):
        """Product-form steps since the last factorisation (0: ``W``, ``y`` are a direct solve)."""
        return len(self._file)

    def _successor_weights(self, a, row):
        """The distinct successor nodes ``n`` (d,) of the row and ``zs`` (S, d): the observation
        probabilities ``Z[a, :, o]`` summed over the observations ``o`` that lead to each."""
        row = np.asarray(row, dtype=np.int64)
        key = (int(a), row.tobytes())
        hit = self._weights.get(key)
        if hit is None:
            onehot = np.zeros((len(row), int(row.max()) + 1))
            onehot[np.arange(len(row)), row] = 1.0
            n = np.flatnonzero(onehot.any(axis=0))
            if len(self._weights) >= _WEIGHTS_CACHE:
                self._weights.clear()
            hit = self._weights[key] = (n, self.sys.Z[a] @ onehot[:, n])
        return hit

    def _apply(self, a, row, X):
        """``sum_o blocks[a, o] @ X[row[o]]`` for X of shape (K, S, ...). As ``blocks[a, o] =
        T[a] diag(Z[a, :, o])``, this is ``T[a] @ sum_n zs_n * X[n]`` over the distinct successor
        nodes ``n`` of the row (``zs_n``: the summed observation probabilities of the observations
        leading to ``n``): ``(d + S) S m`` flops for ``X[n]`` of ``m`` columns instead of ``O S^2 m``."""
        n, zs = self._successor_weights(a, row)
        S = X.shape[1]
        Xn = X[n].reshape(len(n), S, -1)
        U = zs[:, 0, None] * Xn[0]
        for j in range(1, len(n)):
            U += zs[:, j, None] * Xn[j]
        return (self.sys.T[a] @ U).reshape(X.shape[1:])

    def delta_value(self, k, a_new, row_new):
        """``V' - V`` for node ``k`` playing ``a_new`` with the transitions ``row_new`` (O,)."""
        k, a_new = int(k), int(a_new)
        row_new = np.asarray(row_new, dtype=np.int64)
        S = self.W.shape[1]
        Zk = self._z(k)
        a_old, row_old = int(self.action[k]), self.eta[k]
        yk = self.y[k]
        if a_new == a_old:
            diff = np.flatnonzero(row_new != row_old)
            if diff.size == 0:
                return 0.0
            if diff.size == 1:  # one transition: D X = -g blocks[a, o] (X[n] - X[n_old])
                o = int(diff[0])
                B = self.blocks[a_new, o]
                n, n_old = row_new[o], row_old[o]
                C = np.eye(S) - self.g * B @ (Zk[n] - Zk[n_old])
                self._last_c = (k, a_new, row_new.tobytes(), C)
                Dx = -self.g * B @ (self.W[n] - self.W[n_old])
                return float(-yk @ np.linalg.solve(C, Dx))
        rho = self.r[:, a_new] - self.r[:, a_old]
        C = self._capacitance(k, (a_new, row_new), Zk)
        # D x reads x = W + Z_k rho on the successor nodes of the two rows only: those rows alone
        n = np.union1d(self._successor_weights(a_new, row_new)[0], self._successor_weights(a_old, row_old)[0])
        x = self.W.copy()
        x[n] += np.einsum("kst,t->ks", Zk[n], rho)
        return float(yk @ rho - yk @ np.linalg.solve(C, self._D((a_new, row_new), (a_old, row_old), x)))

    def _capacitance(self, k, new, Zk):
        """``C = I + D Z_k`` for node ``k`` changing to ``new = (a, row)`` (node k's current rows
        applied to ``Z_k`` cached per node: the same for every trial at k); kept for :meth:`accept`."""
        if k not in self.Zold:
            self.Zold[k] = self._apply(int(self.action[k]), self.eta[k], Zk)
        C = np.eye(Zk.shape[1]) - self.g * (self._apply(*new, Zk) - self.Zold[k])
        self._last_c = (k, new[0], new[1].tobytes(), C)
        return C
