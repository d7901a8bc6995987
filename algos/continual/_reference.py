r"""Plain-numpy reference twin of the scan kernel in :mod:`._kernels` (the readable definition; used
only by tests and benchmarks).

It shares no code with the kernel: the twin steps all sequences at once with a BLAS matrix product
per step and numpy's ``tanh``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["activation_reference", "reservoir_scan_reference"]


def activation_reference(z, act, negative_slope=0.01):
    """tanh (``act = 0``), ReLU (``1``) or leaky ReLU (``2``) of an array."""
    if act == 0:
        return np.tanh(z)
    if act == 1:
        return np.maximum(z, 0)
    return np.where(z > 0, z, negative_slope * z)


def reservoir_scan_reference(Z, W, leak, act, negative_slope=0.01, reverse=False, h0=None):
    r"""Twin of :func:`._kernels.reservoir_scan`: :math:`h_t = (1-a)h_{t-1} + a f(z_t + h_{t-1}W)`.

    Parameters
    ----------
    Z : ndarray, shape (N, L, U)
    W : ndarray, shape (U, U)
    leak : float
    act : int
    negative_slope : float
    reverse : bool
    h0 : ndarray, shape (N, U), optional
        Zeros when omitted.

    Returns
    -------
    ndarray, shape (N, L, U)
    """
    Z = np.asarray(Z)
    N, L, U = Z.shape
    h = np.zeros((N, U), dtype=Z.dtype) if h0 is None else np.array(h0, dtype=Z.dtype)
    out = np.empty_like(Z)
    steps = range(L - 1, -1, -1) if reverse else range(L)
    for t in steps:
        h = (1.0 - leak) * h + leak * activation_reference(Z[:, t, :] + h @ W, act, negative_slope)
        out[:, t, :] = h
    return out
