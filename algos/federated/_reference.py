r"""Plain-numpy twins of the numba kernels in :mod:`._kernels` (readable definitions, used by tests).

* :func:`local_gd_reference` -- the same (mini-batch) GD trajectories as
  :func:`._kernels.local_gd_clients`, one client at a time, each step ``theta <- theta - lr * grad`` with
  the gradient of :func:`._model.loss_grad` (matrix products instead of the kernel's loops).
* :func:`fisher_reference` -- the diagonal empirical Fisher from the explicit per-sample gradient tensors
  (``n x d x C`` for ``W``: fine for the small inputs of the tests, exactly what the kernel avoids).
"""

from __future__ import annotations

import numpy as np

from ._model import loss_grad

__all__ = ["local_gd_reference", "fisher_reference"]


def local_gd_reference(X, y, offsets, starts, centers, trainable, epochs, lr, l2, mu, order, batch_size, n_classes):
    """Return the list of per-client parameter dicts after ``epochs`` passes (see the kernel)."""
    out = []
    for m, start in enumerate(starts):
        lo, hi = int(offsets[m]), int(offsets[m + 1])
        p = {k: v.copy() for k, v in start.items()}
        for e in range(epochs):
            rows = order[e % order.shape[0], lo:hi]
            for s in range(0, hi - lo, batch_size):
                idx = rows[s:s + batch_size]
                center = centers[m] if centers is not None else None
                _, g = loss_grad(p, X[idx], y[idx], n_classes=n_classes, l2=l2, prox_center=center,
                                 mu=mu if center is not None else 0.0, trainable=trainable)
                p = {k: (p[k] - lr * g[k] if k in g else p[k]) for k in p}
        out.append(p)
    return out


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
