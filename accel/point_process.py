r"""torch core of :mod:`algos.point_process`: batched NNGP rows and a dense factorisation of the precision.

* :func:`nngp_rows_batched` — the Vecchia/NNGP rows :math:`a_i = R_{N(i)N(i)}^{-1}R_{N(i),i}`,
  :math:`F_i = 1 + \text{jitter} - R_{i,N(i)}a_i` (correlation scale, floored at the jitter) for all
  nodes at once: one batched :func:`torch.linalg.cholesky` on an ``(N, k, k)`` stack (nodes with fewer
  than ``k`` earlier neighbours are padded with identity rows, which give zero coefficients). Same
  numbers as the numba kernel :func:`algos.point_process._kernels.nngp_rows`.
* :func:`precision_diag_inverse` — dense mode of the S-block: for :math:`P = \tilde Q + \operatorname{diag}(\mu)`
  returns :math:`\operatorname{diag}(P^{-1})` and :math:`\log|P|` from one Cholesky (for moderate ``N``,
  e.g. up to ~2e4 on a GPU).
* :class:`DenseTorchFactor` — the dense factor of ``VoGCAM(backend="torch")`` (Cholesky, solves, the
  inverse's diagonal and pattern entries, samples), a twin of the estimator's LAPACK factor.

Everything is float64 (``exp(m + s/2)`` overflows in float32). Each core is written once against the
array namespace ``nx`` of :mod:`accel.backend`: with the torch backend it is the torch core, with the numpy
backend (``backend="numpy"``) the plain-numpy reference that the tests pin the numba kernel
:func:`algos.point_process._kernels.nngp_rows` and the sparse selected inverse to. torch is imported only
when the torch backend is created: importing this module (or :mod:`algos`) does not import it.
"""

from __future__ import annotations

import math

import numpy as np

from theory._checks import check_option, check_scalar_float

from .backend import get_backend

__all__ = ["nngp_rows_batched", "precision_diag_inverse", "DenseTorchFactor"]



def _nx(backend, device):
    check_option(backend, "backend", ("torch", "numpy"))
    return get_backend(backend=backend, device=device)


def _nngp_rows(nx, C, nb, cnt, length_scale, nu, jitter):
    r"""Core of :func:`nngp_rows_batched` on backend ``nx``: ``(A, F)`` as backend arrays."""
    N, k = nb.shape
    valid = nb >= 0
    P = C[nx.where(valid, nb, 0)]  # (N, k, 2)
    D = nx.cdist(P, P)
    d0 = nx.cdist(P, C[:, None, :])[:, :, 0]

    def corr(d):
        r = d / length_scale
        if nu == 0.5:
            return nx.exp(-r)
        s = math.sqrt(3.0) * r
        return (1 + s) * nx.exp(-s)

    vv = valid[:, :, None] & valid[:, None, :]
    eye = nx.eye(k, type_as=C)
    # padded rows/columns: identity (zero coefficients)
    R = nx.where(vv, corr(D), 0.0) + eye * jitter + eye * nx.astype(~valid, C.dtype)[:, None, :]
    r = nx.where(valid, corr(d0), 0.0)
    L = nx.cholesky(R)
    a = nx.cholesky_solve(L, r[:, :, None])[:, :, 0]
    a = nx.where(valid, a, 0.0)
    F = nx.clip(1.0 + jitter - nx.sum(a * r, axis=1), jitter, None)
    F = nx.where(cnt == 0, 1.0 + jitter, F)
    return a, F


def nngp_rows_batched(coords, neighbors, counts, length_scale, nu=0.5, jitter=1e-8, device=None, *,
                      backend="torch"):
    """NNGP coefficients ``A (N, k)`` and conditional variances ``F (N,)`` on the correlation scale.

    Parameters
    ----------
    coords : array (N, 2)
    neighbors : int array (N, k), -1 padded
    counts : int array (N,)
    length_scale : float
    nu : {0.5, 1.5}
    jitter : float
    device : None, str or torch.device
    backend : {"torch", "numpy"}, default="torch"
        ``"numpy"`` runs the same core on numpy arrays (the plain-numpy reference of the numba kernel
        :func:`algos.point_process._kernels.nngp_rows`).

    Returns
    -------
    A, F : ndarray (numpy, float64)
    """
    length_scale = check_scalar_float(length_scale, "length_scale", low=0.0, closed="neither")
    jitter = check_scalar_float(jitter, "jitter", low=0.0)
    if nu not in (0.5, 1.5):
        raise ValueError(f"'nu' must be one of {{0.5, 1.5}}; got {nu!r}.")
    nx = _nx(backend, device)
    C = nx.asarray(np.ascontiguousarray(coords, dtype=np.float64))
    nb = nx.asarray(np.asarray(neighbors, dtype=np.int64))
    cnt = nx.asarray(np.asarray(counts, dtype=np.int64))
    N, k = nb.shape
    if k == 0:
        return np.zeros((N, 0)), np.full(N, 1.0 + jitter)
    a, F = _nngp_rows(nx, C, nb, cnt, length_scale, nu, jitter)
    return nx.to_numpy(a), nx.to_numpy(F)


def _cholesky(nx, P, who):
    try:
        return nx.cholesky(P)
    except np.linalg.LinAlgError as exc:
        raise np.linalg.LinAlgError(f"{who}: the matrix is not positive definite.") from exc


def precision_diag_inverse(Q, diag, device=None, *, backend="torch"):
    """Diagonal of the inverse and log-determinant of ``Q + diag(diag)`` by a dense Cholesky in torch.

    ``Q`` may be a scipy sparse matrix or a dense array (N, N); the factorisation is in float64.

    Parameters
    ----------
    Q : ndarray or scipy.sparse matrix of shape (N, N)
        Symmetric matrix (a prior precision).
    diag : array-like of shape (N,)
        Added to the diagonal of ``Q``.
    device : None, str or torch.device, default=None
        ``None``: CUDA if available, else CPU.
    backend : {"torch", "numpy"}, default="torch"
        ``"numpy"`` runs the same core with numpy/LAPACK.

    Returns
    -------
    diag_inverse : ndarray of shape (N,)
        Diagonal of :math:`(Q + \\mathrm{diag}(d))^{-1}`.
    logdet : float
        :math:`\\log|Q + \\mathrm{diag}(d)|`.
    """
    nx = _nx(backend, device)
    Qd = Q.toarray() if hasattr(Q, "toarray") else np.asarray(Q, dtype=np.float64)
    d = np.asarray(diag, dtype=np.float64)
    if Qd.ndim != 2 or Qd.shape[0] != Qd.shape[1] or d.shape != (Qd.shape[0],):
        raise ValueError("'Q' must be (N, N) and 'diag' (N,).")
    L = _cholesky(nx, nx.asarray(Qd + np.diag(d), dtype=nx.float64), "precision_diag_inverse")
    S = nx.cholesky_inverse(L)
    return nx.to_numpy(nx.diagonal(S)), float(2.0 * nx.sum(nx.log(nx.diagonal(L))))


class DenseTorchFactor:
    """Dense Cholesky factor of the precision ``P = Q + diag(.)`` in torch (float64, on ``device``).

    The torch twin of VoGCAM's dense LAPACK factor (same interface: ``clone``, ``factor(data)`` with
    ``data`` aligned with the CSR pattern ``(indptr, indices)``, ``logdet``, ``solve``, ``diag_inverse``,
    ``inverse_on_pattern``, ``inverse_entries``, ``sample``), used by ``VoGCAM(backend="torch")`` for its
    dense / moderate-N path: the O(N^3) factorisation and inverse run on the device, inputs and outputs
    are numpy arrays.

    Parameters
    ----------
    indptr : array-like of int, shape (N + 1,)
        CSR row pointers of the sparsity pattern of ``P``.
    indices : array-like of int
        CSR column indices of the pattern.
    N : int
        Size of ``P``.
    device : None, str or torch.device, default=None
        ``None``: CUDA if available, else CPU.
    backend : {"torch", "numpy"}, default="torch"
        ``"numpy"`` runs the same code with numpy/LAPACK (the dense reference of the sparse selected
        inverse in the tests).
    """

    def __init__(self, indptr, indices, N, device=None, *, backend="torch"):
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.indices = np.asarray(indices, dtype=np.int64)
        self.N = int(N)
        self.rows = np.repeat(np.arange(self.N), np.diff(self.indptr))
        self._nx = _nx(backend, device)
        self.device = self._nx.device
        self.L = None
        self.S = None

    def clone(self):
        r"""A factor of the same pattern and device, not yet factorised.

        Returns
        -------
        DenseTorchFactor
            The copy.
        """
        out = DenseTorchFactor.__new__(DenseTorchFactor)
        out.indptr, out.indices, out.N, out.rows, out.device = self.indptr, self.indices, self.N, self.rows, self.device
        out._nx = self._nx
        out.L = None
        out.S = None
        return out

    def factor(self, data):
        r"""Cholesky factorisation of ``P`` given its entries on the pattern.

        Parameters
        ----------
        data : array-like of shape (nnz,)
            Entries of ``P``, aligned with ``(indptr, indices)``.

        Returns
        -------
        DenseTorchFactor
            ``self``.

        Raises
        ------
        numpy.linalg.LinAlgError
            ``P`` has non-finite entries or is not positive definite.
        """
        data = np.asarray(data, dtype=np.float64)
        if not np.all(np.isfinite(data)):
            raise np.linalg.LinAlgError("DenseTorchFactor: the matrix has non-finite entries.")
        P = np.zeros((self.N, self.N))
        P[self.rows, self.indices] = data
        self.L = _cholesky(self._nx, self._nx.asarray(P), "DenseTorchFactor")
        self.S = None
        return self

    def _require(self, what):
        if self.L is None:
            raise ValueError(f"DenseTorchFactor.{what}() needs a factorisation: call factor(data) first.")

    def logdet(self):
        r"""Log-determinant of ``P``.

        Returns
        -------
        float
            :math:`\log|P|`.
        """
        self._require("logdet")
        nx = self._nx
        return float(2.0 * nx.sum(nx.log(nx.diagonal(self.L))))

    def solve(self, b):
        r"""Solve ``P x = b``.

        Parameters
        ----------
        b : array-like of shape (N,) or (N, k)
            Right-hand side(s).

        Returns
        -------
        ndarray
            ``x``, of the shape of ``b``.
        """
        self._require("solve")
        nx = self._nx
        b = np.asarray(b, dtype=np.float64)
        x = nx.cholesky_solve(self.L, nx.asarray(b.reshape(self.N, -1)))
        return nx.to_numpy(x).reshape(b.shape)

    def _inv(self):
        self._require("inverse")
        if self.S is None:
            S = self._nx.cholesky_inverse(self.L)
            self.S = 0.5 * (S + S.T)
        return self.S

    def diag_inverse(self):
        r"""Diagonal of :math:`P^{-1}`.

        Returns
        -------
        ndarray of shape (N,)
            The diagonal.
        """
        return self._nx.to_numpy(self._nx.diagonal(self._inv())).copy()

    def inverse_entries(self, rows, cols):
        r"""Selected entries of :math:`P^{-1}`.

        Parameters
        ----------
        rows, cols : array-like of int
            Row and column indices, of one shape.

        Returns
        -------
        ndarray
            ``inv(P)[rows, cols]``, of the shape of ``rows``.
        """
        nx = self._nx
        S = self._inv()
        r = nx.asarray(np.asarray(rows, dtype=np.int64).ravel())
        c = nx.asarray(np.asarray(cols, dtype=np.int64).ravel())
        return nx.to_numpy(S[r, c]).reshape(np.shape(rows))

    def inverse_on_pattern(self):
        r"""Entries of :math:`P^{-1}` on the sparsity pattern of ``P``.

        Returns
        -------
        ndarray of shape (nnz,)
            Aligned with ``(indptr, indices)``.
        """
        return self.inverse_entries(self.rows, self.indices)

    def sample(self, z):
        """Map a standard normal vector to a draw with covariance :math:`P^{-1}`.

        Parameters
        ----------
        z : array-like of shape (N,)
            Standard normal draws.

        Returns
        -------
        ndarray of shape (N,)
            ``x`` solving :math:`L^\\top x = z`.
        """
        self._require("sample")
        nx = self._nx
        zt = nx.asarray(np.asarray(z, dtype=np.float64).reshape(self.N, 1))
        x = nx.solve_triangular(self.L.T, zt, lower=False)
        return nx.to_numpy(x).ravel()
