r"""numba kernel of :mod:`algos.continual`'s reservoir features: the leaky echo-state scan.

Its plain-numpy reference is the scan core of :mod:`accel.continual` run on numpy
(``reservoir_scan_batched(..., backend="numpy")``, the same code as the torch core; tests pin the two
together):

* :func:`reservoir_scan` -- the leaky echo-state recursion (tfa ``ESNCell`` convention)

  .. math:: h_t = (1-a)\,h_{t-1} + a\,f(z_t + h_{t-1} W), \qquad z_t = u_t W_{\mathrm{in}},

  over a batch of ``N`` sequences of length ``L``, forward (``t = 1..L``) or backward
  (``t = L..1``, the state written back at position ``t``). The input drive ``z = u W_in`` is
  precomputed for all steps in one GEMM by the caller; the kernel fuses the recurrent
  matrix-vector product, the activation ``f`` and the leak into one pass per step, with ``prange``
  over the sequences (each sequence is independent, so the result does not depend on the thread
  schedule and a sequence's states do not depend on the other sequences of the batch).

* :func:`grid_scan4` -- the same recursion for the four directions of a
  :class:`~algos.continual.BiReservoir2D` block in one call: every row forward and backward and
  every column forward and backward of a ``(B, N_h, N_w, 4U)`` drive, read and written in place
  (no reshaped copies of the grid), ``prange`` over all ``2B(N_h + N_w)`` sequences.

The streaming-LDA delta pass is in :mod:`._slda_kernels`.

Activations are coded as integers: ``0`` tanh, ``1`` ReLU, ``2`` leaky ReLU with slope
``negative_slope``. No ``fastmath``: the parity tests compare with the numpy reference at round-off level.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .._parallel import pick, serial_twin

__all__ = ["ACTIVATION_CODES", "reservoir_scan", "grid_scan4", "grid_scan4_for", "PARALLEL_MIN_PIXELS"]

#: grids of fewer pixels (images x height x width) run the cached serial twin of :func:`grid_scan4`
#: (:mod:`algos._parallel`): below it the threads save less than the kernel's compilation
PARALLEL_MIN_PIXELS = 20_000

#: Integer codes of the activations understood by the kernels.
ACTIVATION_CODES = {"tanh": 0, "relu": 1, "leaky_relu": 2}


@numba.njit(inline="always")
def _tanh(z):
    """tanh through ``expm1`` (relative error ~1e-16; about twice as fast as libm's ``tanh`` here)."""
    e = math.expm1(-2.0 * abs(z))
    t = -e / (2.0 + e)
    return t if z >= 0.0 else -t


@numba.njit(inline="always")
def _activate(z, act, negative_slope):
    """Activation code ``act``: 0 tanh, 1 ReLU, 2 leaky ReLU with ``negative_slope``."""
    if act == 0:
        return _tanh(z)
    if act == 1:
        return z if z > 0.0 else 0.0 * z
    return z if z > 0.0 else negative_slope * z


@numba.njit(inline="always")
def _leaky_step(h, pre, W, leak, one_minus, act, negative_slope):
    """One step in place: ``pre += h W`` (``pre`` holds the drive on entry), then
    ``h = (1 - a) h + a f(pre)``."""
    U = W.shape[0]
    for i in range(U):
        hi = h[i]
        for j in range(U):
            pre[j] += hi * W[i, j]
    for j in range(U):
        z = pre[j]
        f = _activate(z, act, negative_slope)
        h[j] = one_minus * h[j] + leak * f


@numba.njit(parallel=True)
def reservoir_scan(Z, W, leak, act, negative_slope, reverse, h0, out):
    r"""Leaky echo-state scan over ``N`` sequences at once (fused recurrence, activation and leak).

    Parameters
    ----------
    Z : ndarray, shape (N, L, U)
        Input drive ``u_t W_in`` of every sequence and step (float32 or float64).
    W : ndarray, shape (U, U)
        Recurrent matrix (row-vector convention: ``h W``), same dtype as ``Z``.
    leak : float
        Leak ``a`` in (0, 1].
    act : int
        Activation code (``0`` tanh, ``1`` ReLU, ``2`` leaky ReLU).
    negative_slope : float
        Slope of the leaky ReLU for negative input (ignored otherwise).
    reverse : bool
        Scan ``t = L-1..0`` instead of ``0..L-1``.
    h0 : ndarray, shape (N, U)
        Initial states (zeros for the feature extractor).
    out : ndarray, shape (N, L, U)
        Receives the states, ``out[n, t]`` = state after reading step ``t``.
    """
    N, L, U = Z.shape
    one_minus = 1.0 - leak
    for n in numba.prange(N):
        h = np.empty(U, dtype=Z.dtype)
        pre = np.empty(U, dtype=Z.dtype)
        for j in range(U):
            h[j] = h0[n, j]
        for s in range(L):
            t = L - 1 - s if reverse else s
            for j in range(U):
                pre[j] = Z[n, t, j]
            _leaky_step(h, pre, W, leak, one_minus, act, negative_slope)
            for j in range(U):
                out[n, t, j] = h[j]
    return out


@numba.njit(inline="always")
def _scan_strided(Z, W, leak, act, negative_slope, out, h, pre, b, fixed, along_rows, c0, reverse):
    """One sequence of a grid: row ``fixed`` (``along_rows``) or column ``fixed``, channels ``c0:c0+U``."""
    L = Z.shape[2] if along_rows else Z.shape[1]
    U = W.shape[0]
    one_minus = 1.0 - leak
    for j in range(U):
        h[j] = 0.0
    for s in range(L):
        t = L - 1 - s if reverse else s
        if along_rows:
            for j in range(U):
                pre[j] = Z[b, fixed, t, c0 + j]
        else:
            for j in range(U):
                pre[j] = Z[b, t, fixed, c0 + j]
        _leaky_step(h, pre, W, leak, one_minus, act, negative_slope)
        if along_rows:
            for j in range(U):
                out[b, fixed, t, c0 + j] = h[j]
        else:
            for j in range(U):
                out[b, t, fixed, c0 + j] = h[j]


@numba.njit(parallel=True)
def grid_scan4(Z, Ws, leak, act, negative_slope, out):
    r"""All four scans of a BiReservoir2D block, in place on the grid layout.

    Parameters
    ----------
    Z : ndarray, shape (B, N_h, N_w, 4U)
        Input drives; channels ``[0:U]`` row-forward, ``[U:2U]`` row-backward, ``[2U:3U]``
        column-forward, ``[3U:4U]`` column-backward.
    Ws : ndarray, shape (4, U, U)
        Recurrent matrices of the four directions, same order.
    leak, act, negative_slope :
        As in :func:`reservoir_scan`.
    out : ndarray, shape (B, N_h, N_w, 4U)
        Receives the states (zero initial state), channels in the same order.
    """
    B, Nh, Nw, C4 = Z.shape
    U = Ws.shape[1]
    n_row = B * Nh
    n_col = B * Nw
    total = 2 * n_row + 2 * n_col
    for task in numba.prange(total):
        h = np.empty(U, dtype=Z.dtype)
        pre = np.empty(U, dtype=Z.dtype)
        if task < 2 * n_row:
            d = task // n_row  # 0 forward, 1 backward
            r = task - d * n_row
            b = r // Nh
            i = r - b * Nh
            _scan_strided(Z, Ws[d], leak, act, negative_slope, out, h, pre, b, i, True, d * U, d == 1)
        else:
            r0 = task - 2 * n_row
            d = r0 // n_col
            r = r0 - d * n_col
            b = r // Nw
            j = r - b * Nw
            _scan_strided(Z, Ws[2 + d], leak, act, negative_slope, out, h, pre, b, j, False, (2 + d) * U, d == 1)
    return out


grid_scan4_serial = serial_twin(grid_scan4)  # cached, the same values (algos._parallel)


def grid_scan4_for(n_pixels):
    """:func:`grid_scan4` for a grid of ``n_pixels`` pixels: the parallel kernel from
    ``PARALLEL_MIN_PIXELS`` on (with more than one numba thread), else its cached serial twin."""
    return pick(grid_scan4, grid_scan4_serial, n_pixels, PARALLEL_MIN_PIXELS)
