r"""torch core of :mod:`algos.point_process`: batched NNGP rows and a dense factorisation of the precision.

* :func:`nngp_rows_batched` — the Vecchia/NNGP rows :math:`a_i = R_{N(i)N(i)}^{-1}R_{N(i),i}`,
  :math:`F_i = 1 + \text{jitter} - R_{i,N(i)}a_i` (correlation scale, floored at the jitter) for all
  nodes at once: one batched :func:`torch.linalg.cholesky` on an ``(N, k, k)`` stack (nodes with fewer
  than ``k`` earlier neighbours are padded with identity rows, which give zero coefficients). Same
  numbers as the numba kernel :func:`algos.point_process._kernels.nngp_rows`.
* :func:`precision_diag_inverse` — dense mode of the S-block: for :math:`P = \tilde Q + \operatorname{diag}(\mu)`
  returns :math:`\operatorname{diag}(P^{-1})` and :math:`\log|P|` from one Cholesky (for moderate ``N``,
  e.g. up to ~2e4 on a GPU).

Everything is float64 (``exp(m + s/2)`` overflows in float32). torch is imported inside the functions:
importing this module (or :mod:`algos`) does not import it.
"""

from __future__ import annotations

import math

import numpy as np

from algos._validation import check_scalar_float

__all__ = ["nngp_rows_batched", "precision_diag_inverse"]


def _device(device):
    from .backend import get_backend

    return get_backend(backend="torch", device=device).device


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
    """``(diag((Q + diag(diag))^{-1}), log|Q + diag(diag)|)`` by a dense float64 Cholesky in torch.

    ``Q`` may be a scipy sparse matrix or a dense array (N, N)."""
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
