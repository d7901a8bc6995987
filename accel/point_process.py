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

Everything is float64 (``exp(m + s/2)`` overflows in float32). torch is imported inside the functions:
importing this module (or :mod:`algos`) does not import it.
"""

from __future__ import annotations

import math

import numpy as np

from theory._checks import check_scalar_float

from .backend import torch_device as _device

__all__ = ["nngp_rows_batched", "precision_diag_inverse", "DenseTorchFactor"]



def nngp_rows_batched(coords, neighbors, counts, length_scale, nu=0.5, jitter=1e-8, device=None):
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

    Returns
    -------
    A, F : ndarray (numpy, float64)
    """
    import torch

    length_scale = check_scalar_float(length_scale, "length_scale", low=0.0, closed="neither")
    jitter = check_scalar_float(jitter, "jitter", low=0.0)
    if nu not in (0.5, 1.5):
        raise ValueError(f"'nu' must be one of {{0.5, 1.5}}; got {nu!r}.")
    dev = _device(device)
    f64 = torch.float64
    C = torch.as_tensor(np.ascontiguousarray(coords, dtype=np.float64), device=dev, dtype=f64)
    nb = torch.as_tensor(np.asarray(neighbors, dtype=np.int64), device=dev)
    cnt = torch.as_tensor(np.asarray(counts, dtype=np.int64), device=dev)
    N, k = nb.shape
    if k == 0:
        return np.zeros((N, 0)), np.full(N, 1.0 + jitter)
    valid = nb >= 0
    idx = torch.where(valid, nb, torch.zeros_like(nb))
    P = C[idx]  # (N, k, 2)
    D = torch.cdist(P, P)
    d0 = torch.linalg.norm(P - C[:, None, :], dim=-1)

    def corr(d):
        r = d / length_scale
        if nu == 0.5:
            return torch.exp(-r)
        s = math.sqrt(3.0) * r
        return (1 + s) * torch.exp(-s)

    vv = valid[:, :, None] & valid[:, None, :]
    eye = torch.eye(k, dtype=f64, device=dev).expand(N, k, k)
    R = torch.where(vv, corr(D), torch.zeros_like(D)) + eye * jitter
    # padded rows/columns: identity
    R = R + torch.diag_embed((~valid).to(f64))
    r = torch.where(valid, corr(d0), torch.zeros_like(d0))
    L = torch.linalg.cholesky(R)
    a = torch.cholesky_solve(r[:, :, None], L)[:, :, 0]
    a = torch.where(valid, a, torch.zeros_like(a))
    F = 1.0 + jitter - (a * r).sum(1)
    F = torch.clamp(F, min=jitter)
    F = torch.where(cnt == 0, torch.full_like(F, 1.0 + jitter), F)
    return a.cpu().numpy(), F.cpu().numpy()


def precision_diag_inverse(Q, diag, device=None):
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

    Returns
    -------
    diag_inverse : ndarray of shape (N,)
        Diagonal of :math:`(Q + \\mathrm{diag}(d))^{-1}`.
    logdet : float
        :math:`\\log|Q + \\mathrm{diag}(d)|`.
    """
    import torch

    dev = _device(device)
    Qd = Q.toarray() if hasattr(Q, "toarray") else np.asarray(Q, dtype=np.float64)
    d = np.asarray(diag, dtype=np.float64)
    if Qd.ndim != 2 or Qd.shape[0] != Qd.shape[1] or d.shape != (Qd.shape[0],):
        raise ValueError("'Q' must be (N, N) and 'diag' (N,).")
    P = torch.as_tensor(Qd + np.diag(d), device=dev, dtype=torch.float64)
    L, info = torch.linalg.cholesky_ex(P)
    if int(info) != 0:
        raise np.linalg.LinAlgError("precision_diag_inverse: the matrix is not positive definite.")
    S = torch.cholesky_inverse(L)
    return torch.diagonal(S).cpu().numpy(), float(2.0 * torch.log(torch.diagonal(L)).sum())


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
    """

    def __init__(self, indptr, indices, N, device=None):
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.indices = np.asarray(indices, dtype=np.int64)
        self.N = int(N)
        self.rows = np.repeat(np.arange(self.N), np.diff(self.indptr))
        self.device = _device(device)
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
        import torch

        data = np.asarray(data, dtype=np.float64)
        if not np.all(np.isfinite(data)):
            raise np.linalg.LinAlgError("DenseTorchFactor: the matrix has non-finite entries.")
        P = np.zeros((self.N, self.N))
        P[self.rows, self.indices] = data
        Pt = torch.as_tensor(P, device=self.device, dtype=torch.float64)
        L, info = torch.linalg.cholesky_ex(Pt)
        if int(info) != 0:
            raise np.linalg.LinAlgError("DenseTorchFactor: the matrix is not positive definite.")
        self.L = L
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
        import torch

        self._require("logdet")
        return float(2.0 * torch.log(torch.diagonal(self.L)).sum())

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
        import torch

        self._require("solve")
        b = np.asarray(b, dtype=np.float64)
        bt = torch.as_tensor(b.reshape(self.N, -1), device=self.device, dtype=torch.float64)
        x = torch.cholesky_solve(bt, self.L)
        return x.cpu().numpy().reshape(b.shape)

    def _inv(self):
        import torch

        self._require("inverse")
        if self.S is None:
            S = torch.cholesky_inverse(self.L)
            self.S = 0.5 * (S + S.T)
        return self.S

    def diag_inverse(self):
        r"""Diagonal of :math:`P^{-1}`.

        Returns
        -------
        ndarray of shape (N,)
            The diagonal.
        """
        import torch

        return torch.diagonal(self._inv()).cpu().numpy().copy()

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
        import torch

        S = self._inv()
        r = torch.as_tensor(np.asarray(rows, dtype=np.int64).ravel(), device=self.device)
        c = torch.as_tensor(np.asarray(cols, dtype=np.int64).ravel(), device=self.device)
        return S[r, c].cpu().numpy().reshape(np.shape(rows))

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
        import torch

        self._require("sample")
        zt = torch.as_tensor(np.asarray(z, dtype=np.float64).reshape(self.N, 1), device=self.device,
                             dtype=torch.float64)
        x = torch.linalg.solve_triangular(self.L.T, zt, upper=True)
        return x.cpu().numpy().ravel()
