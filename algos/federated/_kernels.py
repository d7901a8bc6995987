r"""numba kernels of :mod:`algos.federated`: local gradient descent for many clients at once, and the
per-sample softmax gradients fused with the diagonal empirical Fisher.

The model is the softmax head with an optional low-rank adapter of :mod:`._model`:
:math:`\text{logits} = X (W + AB) + b`. Tests pin the local GD kernel to the batched core
:func:`accel.federated.local_gd` run with the numpy backend (the same function is the torch path), and
the Fisher kernel to its plain-numpy twin in :mod:`._reference`.

* :func:`local_gd_clients` -- ``epochs`` passes of (mini-batch) gradient descent on the regularised
  objective :math:`\frac1{n}\sum_j \ell(\theta; z_j) + \frac{\ell_2}{2}\|\theta\|^2 +
  \frac{\mu}{2}\|\theta - c\|^2`, for ``M`` clients in parallel (``prange`` over clients; each client is
  small, so one thread runs one client's whole trajectory). The sample order of every epoch is drawn
  in Python and passed in (no random draws inside kernels). One client run through this kernel gives
  bit-for-bit the same result as the same client inside a batch of clients, which is what lets the
  Flower client (one client per process) reproduce the in-process federated run exactly.
* :func:`fisher_diag` -- one pass over the samples computing each sample's softmax residual
  :math:`r_j = p_j - e_{y_j}` and accumulating the squared per-sample gradients of every block
  (:math:`x_{jk}^2 r_{jc}^2` for ``W``, :math:`r_{jc}^2` for ``b``, :math:`x_{jk}^2 (B r_j)_s^2` for ``A``,
  :math:`(A^\top x_j)_s^2 r_{jc}^2` for ``B``) without forming the ``n x d x C`` tensor of per-sample
  gradients.

No ``fastmath``: the results are compared with bounds and with the Flower run.
"""

from __future__ import annotations

import numba
import numpy as np

from .._parallel import serial_twin

__all__ = ["local_gd_clients", "local_gd_clients_serial", "fisher_diag"]


@numba.njit
def _softmax_residual(x, y, Weff, b, r):
    """``r <- softmax(x @ Weff + b) - e_y``; returns the sample's cross-entropy."""
    d, C = Weff.shape
    for c in range(C):
        r[c] = b[c]
    for k in range(d):
        xk = x[k]
        if xk != 0.0:
            for c in range(C):
                r[c] += xk * Weff[k, c]
    mx = r[0]
    for c in range(1, C):
        if r[c] > mx:
            mx = r[c]
    zy = r[y] - mx
    s = 0.0
    for c in range(C):
        r[c] = np.exp(r[c] - mx)
        s += r[c]
    loss = np.log(s) - zy
    for c in range(C):
        r[c] /= s
    r[y] -= 1.0
    return loss


@numba.njit
def _one_client(X, y, lo, hi, W, b, A, B, cW, cb, cA, cB, train, epochs, lr, l2, mu, order, batch_size):
    d, C = W.shape
    rank = A.shape[1]
    n = hi - lo
    n_rows = order.shape[0]
    Weff = np.empty((d, C))
    gW = np.empty((d, C))
    gb = np.empty(C)
    gA = np.empty((d, rank))
    gB = np.empty((rank, C))
    r = np.empty(C)
    for e in range(epochs):
        row = e % n_rows
        start = 0
        while start < n:
            stop = min(start + batch_size, n)
            nb = stop - start
            # effective weights
            for k in range(d):
                for c in range(C):
                    acc = W[k, c]
                    for s in range(rank):
                        acc += A[k, s] * B[s, c]
                    Weff[k, c] = acc
            gW[:, :] = 0.0
            gb[:] = 0.0
            for t in range(start, stop):
                j = order[row, lo + t]
                _softmax_residual(X[j], y[j], Weff, b, r)
                for c in range(C):
                    r[c] /= nb
                    gb[c] += r[c]
                for k in range(d):
                    xk = X[j, k]
                    if xk != 0.0:
                        for c in range(C):
                            gW[k, c] += xk * r[c]
            # gradients of the factors from the effective-weight gradient (before any update)
            if train[2]:
                for k in range(d):
                    for s in range(rank):
                        acc = 0.0
                        for c in range(C):
                            acc += gW[k, c] * B[s, c]
                        gA[k, s] = acc + l2 * A[k, s] + mu * (A[k, s] - cA[k, s])
            if train[3]:
                for s in range(rank):
                    for c in range(C):
                        acc = 0.0
                        for k in range(d):
                            acc += A[k, s] * gW[k, c]
                        gB[s, c] = acc + l2 * B[s, c] + mu * (B[s, c] - cB[s, c])
            if train[0]:
                for k in range(d):
                    for c in range(C):
                        W[k, c] -= lr * (gW[k, c] + l2 * W[k, c] + mu * (W[k, c] - cW[k, c]))
            if train[1]:
                for c in range(C):
                    b[c] -= lr * (gb[c] + l2 * b[c] + mu * (b[c] - cb[c]))
            if train[2]:
                for k in range(d):
                    for s in range(rank):
                        A[k, s] -= lr * gA[k, s]
            if train[3]:
                for s in range(rank):
                    for c in range(C):
                        B[s, c] -= lr * gB[s, c]
            start = stop


@numba.njit(parallel=True)
def local_gd_clients(X, y, offsets, W, b, A, B, cW, cb, cA, cB, train, epochs, lr, l2, mu, order, batch_size):
    r"""Run ``epochs`` (mini-batch) GD passes for ``M`` clients in parallel, in place.

    Parameters
    ----------
    X : ndarray of float64, shape (N, d)
        All clients' samples, client ``m`` owning rows ``offsets[m]:offsets[m+1]``.
    y : ndarray of int64, shape (N,)
        Class indices in ``[0, C)``.
    offsets : ndarray of int64, shape (M + 1,)
    W, b, A, B : ndarrays of float64, shapes (M, d, C), (M, C), (M, d, r), (M, r, C)
        Starting parameters of every client; overwritten with the final ones (``r`` may be 0).
    cW, cb, cA, cB : same shapes
        Proximal centres (ignored when ``mu == 0``).
    train : ndarray of bool, shape (4,)
        Which of ``W, b, A, B`` are updated.
    epochs : int
    lr, l2, mu : float
    order : ndarray of int64, shape (R, N)
        Epoch ``e`` visits client ``m``'s rows in the order ``order[e % R, offsets[m]:offsets[m+1]]``
        (global row indices); ``R = 1`` with ``arange(N)`` for full-batch GD.
    batch_size : int
        Rows per step (``>= n_m`` means full batch: one step per epoch).
    """
    M = offsets.shape[0] - 1
    for m in numba.prange(M):
        _one_client(X, y, offsets[m], offsets[m + 1], W[m], b[m], A[m], B[m], cW[m], cb[m], cA[m], cB[m],
                    train, epochs, lr, l2, mu, order, batch_size)


#: the serial twin of :func:`local_gd_clients` (the same function compiled without ``parallel`` and cached, so
#: bit-identical results): used for one or a few clients, where starting the thread pool costs more than the work
local_gd_clients_serial = serial_twin(local_gd_clients)


@numba.njit(cache=True)
def fisher_diag(X, y, W, b, A, B, FW, Fb, FA, FB):
    r"""Diagonal empirical Fisher of every block, :math:`\hat F = \frac1n\sum_j g_j \odot g_j`.

    Fills ``FW (d, C)``, ``Fb (C,)``, ``FA (d, r)``, ``FB (r, C)`` (overwritten) and returns the mean
    cross-entropy. ``g_j`` is the gradient of sample ``j``'s cross-entropy (no regulariser). ``FW`` is
    also the Fisher of the effective weight ``W + AB`` (the same per-sample gradient).
    """
    n, d = X.shape
    C = W.shape[1]
    rank = A.shape[1]
    Weff = W.copy()
    for k in range(d):
        for c in range(C):
            for s in range(rank):
                Weff[k, c] += A[k, s] * B[s, c]
    FW[:, :] = 0.0
    Fb[:] = 0.0
    FA[:, :] = 0.0
    FB[:, :] = 0.0
    r = np.empty(C)
    Br = np.empty(rank)
    Ax = np.empty(rank)
    loss = 0.0
    for j in range(n):
        loss += _softmax_residual(X[j], y[j], Weff, b, r)
        for s in range(rank):
            acc = 0.0
            for c in range(C):
                acc += B[s, c] * r[c]
            Br[s] = acc
            acc = 0.0
            for k in range(d):
                acc += A[k, s] * X[j, k]
            Ax[s] = acc
        for c in range(C):
            Fb[c] += r[c] * r[c]
        for k in range(d):
            x2 = X[j, k] * X[j, k]
            if x2 != 0.0:
                for c in range(C):
                    FW[k, c] += x2 * r[c] * r[c]
                for s in range(rank):
                    FA[k, s] += x2 * Br[s] * Br[s]
        for s in range(rank):
            a2 = Ax[s] * Ax[s]
            for c in range(C):
                FB[s, c] += a2 * r[c] * r[c]
    inv = 1.0 / n
    for k in range(d):
        for c in range(C):
            FW[k, c] *= inv
        for s in range(rank):
            FA[k, s] *= inv
    for c in range(C):
        Fb[c] *= inv
    for s in range(rank):
        for c in range(C):
            FB[s, c] *= inv
    return loss * inv
