r"""Compiled BiCGSTAB on a CSR matrix (or its transpose) for RECAP's controller evaluations.

The evaluation systems ``I - discount P`` of a controller have their spectrum in the disc of radius
``discount`` around 1, so BiCGSTAB (van der Vorst, "Bi-CGSTAB: a fast and smoothly converging variant
of Bi-CG", SIAM J. Sci. Stat. Comput. 13(2), 1992) converges in a few dozen products. Here the whole
iteration runs in one compiled call on the CSR arrays (duplicate entries allowed: a product sums
them), so a solve costs its products and nothing else; with ``trans=True`` the products are with the
transpose (a scatter over the same arrays), so the adjoint needs no second matrix.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["bicgstab_csr"]


@numba.njit(cache=True)
def _matvec(indptr, indices, data, x, out, trans):
    n = indptr.size - 1
    if trans:
        out[:] = 0.0
        for i in range(n):
            xi = x[i]
            for p in range(indptr[i], indptr[i + 1]):
                out[indices[p]] += data[p] * xi
    else:
        for i in range(n):
            s = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                s += data[p] * x[indices[p]]
            out[i] = s


@numba.njit(cache=True)
def _bicgstab(indptr, indices, data, b, x0, trans, rtol, maxiter):
    n = b.size
    x = x0.copy()
    r = np.empty(n)
    _matvec(indptr, indices, data, x, r, trans)
    r = b - r
    tol = rtol * np.sqrt(np.dot(b, b))
    if np.sqrt(np.dot(r, r)) <= tol:
        return x, True
    rhat = r.copy()
    p = np.zeros(n)
    v = np.zeros(n)
    t = np.empty(n)
    rho_old = alpha = omega = 1.0
    for it in range(maxiter):
        rho = np.dot(rhat, r)
        if rho == 0.0:
            return x, False
        if it == 0:
            p[:] = r
        else:
            beta = (rho / rho_old) * (alpha / omega)
            p = r + beta * (p - omega * v)
        _matvec(indptr, indices, data, p, v, trans)
        den = np.dot(rhat, v)
        if den == 0.0:
            return x, False
        alpha = rho / den
        s = r - alpha * v
        if np.sqrt(np.dot(s, s)) <= tol:
            x += alpha * p
            return x, True
        _matvec(indptr, indices, data, s, t, trans)
        tt = np.dot(t, t)
        if tt == 0.0:
            return x, False
        omega = np.dot(t, s) / tt
        x += alpha * p + omega * s
        r = s - omega * t
        if np.sqrt(np.dot(r, r)) <= tol:
            return x, True
        if omega == 0.0:
            return x, False
        rho_old = rho
    return x, False


def bicgstab_csr(M, b, x0=None, trans=False, rtol=1e-12, maxiter=2000):
    """``M^{-1} b`` (``trans``: ``M^{-T} b``) by BiCGSTAB from ``x0`` on the CSR matrix ``M``:
    ``(x, converged)``, ``converged`` when the recursive residual reached ``rtol * |b|`` (callers
    check the true residual)."""
    b = np.ascontiguousarray(b, dtype=np.float64)
    x0 = np.zeros_like(b) if x0 is None else np.ascontiguousarray(x0, dtype=np.float64)
    return _bicgstab(M.indptr.astype(np.int64, copy=False), M.indices.astype(np.int64, copy=False),
                     np.ascontiguousarray(M.data, dtype=np.float64), b, x0, bool(trans), float(rtol), int(maxiter))
