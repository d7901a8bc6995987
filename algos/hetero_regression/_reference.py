r"""Plain-numpy reference twins of the kernels in :mod:`._kernels` (readable definitions; used only by
tests).

They share no code with the kernels: residuals come from a BLAS matrix-vector product, medians from
:func:`numpy.median` (a full partition), and the masks from boolean indexing.
"""

from __future__ import annotations

import numpy as np

__all__ = ["huber_pass_reference", "quickselect_median_reference", "masked_ratio_medians_reference"]


def huber_pass_reference(X, y, b, delta, sw=None):
    r"""Twin of :func:`._kernels.huber_pass`.

    Returns
    -------
    objective : float
        :math:`\sum_i s_i H_\delta(r_i)`.
    gradient : ndarray, shape (d,)
        :math:`-X^\top (s \odot \psi_\delta(r))`.
    r : ndarray, shape (n,)
        Residuals ``y - X b``.
    w : ndarray, shape (n,)
        IRLS weights ``s_i * min(1, delta / |r_i|)``.
    n_inliers : int
        ``#{i : |r_i| <= delta, s_i > 0}``.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    s = np.ones(len(y)) if sw is None or len(sw) == 0 else np.asarray(sw, dtype=float)
    r = y - X @ np.asarray(b, dtype=float)
    a = np.abs(r)
    inl = a <= delta
    h = np.where(inl, 0.5 * r**2, delta * a - 0.5 * delta**2)
    psi = np.clip(r, -delta, delta)
    with np.errstate(divide="ignore"):
        w = np.where(inl, 1.0, delta / np.maximum(a, 1e-300))
    obj = float(np.sum(s * h))
    grad = -(X.T @ (s * psi))
    return obj, grad, r, s * w, int(np.count_nonzero(inl & (s > 0)))


def quickselect_median_reference(values):
    """Twin of :func:`._kernels.quickselect_median`: :func:`numpy.median`, NaN when empty."""
    values = np.asarray(values, dtype=float)
    return float(np.median(values)) if values.size else float("nan")


def masked_ratio_medians_reference(Xw, r, threshold):
    """Twin of :func:`._kernels.masked_ratio_medians`; returns ``(out, counts)``."""
    Xw = np.asarray(Xw, dtype=float)
    r = np.asarray(r, dtype=float)
    d = Xw.shape[1]
    out = np.zeros(d)
    counts = np.zeros(d, dtype=np.int64)
    for j in range(d):
        sel = np.abs(Xw[:, j]) >= threshold
        counts[j] = int(sel.sum())
        if counts[j]:
            out[j] = np.median(r[sel] / Xw[sel, j])
    return out, counts
