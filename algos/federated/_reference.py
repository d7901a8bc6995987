r"""Plain-numpy twin of the Fisher kernel in :mod:`._kernels` (a readable definition, used by tests).

:func:`fisher_reference` -- the diagonal empirical Fisher from the explicit per-sample gradient tensors
(``n x d x C`` for ``W``: fine for the small inputs of the tests, exactly what the kernel avoids).

The local GD kernel has no twin here: its reference is :func:`accel.federated.local_gd` run with the
numpy backend (the same function is the torch core).
"""

from __future__ import annotations

import numpy as np

__all__ = ["fisher_reference"]


def fisher_reference(params, X, y, n_classes):
    """Diagonal empirical Fisher from explicit per-sample gradients."""
    n = X.shape[0]
    W = params["W"] + (params["A"] @ params["B"] if "A" in params else 0.0)
    Z = X @ W + params["b"]
    Z = Z - Z.max(1, keepdims=True)
    P = np.exp(Z) / np.exp(Z).sum(1, keepdims=True)
    R = P.copy()
    R[np.arange(n), y] -= 1.0
    gW = X[:, :, None] * R[:, None, :]                      # (n, d, C) per-sample gradients
    out = {"W": np.mean(gW**2, axis=0), "b": np.mean(R**2, axis=0)}
    if "A" in params:
        gA = np.einsum("jk,jc,sc->jks", X, R, params["B"])  # x_j (B r_j)^T
        gB = np.einsum("jk,ks,jc->jsc", X, params["A"], R)  # (A^T x_j) r_j^T
        out["A"] = np.mean(gA**2, axis=0)
        out["B"] = np.mean(gB**2, axis=0)
    return out
