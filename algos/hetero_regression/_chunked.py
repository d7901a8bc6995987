r"""Fixed-threshold Huber regression by passes over chunks of rows: O(d^2) memory beyond one chunk.

Every quantity the IRLS / semismooth-Newton iteration of :class:`HuberSoSRegressor` needs is a sum
over rows, so it accumulates chunk by chunk: the objective :math:`L(b)`, the gradient
:math:`-X^\top \psi_\delta(r)`, the majoriser's Gram matrix :math:`X^\top W X` and the inliers'
Gram matrix :math:`X_I^\top X_I`. One iteration reads the data two or three times (accumulate at
``b``; evaluate the objective at the Newton and, if refused, the MM trial point). The iteration
itself is :func:`._irls.irls_passes`; this file holds the statistics of one block of rows
(:func:`block_gram`, :func:`block_stats`, also mapped onto Dask blocks by :mod:`._dask`) and the pass
over an iterable of chunks in this process (:class:`ChunkPass`).
"""

from __future__ import annotations

import numpy as np

from ._irls import irls_passes
from ._kernels import huber_pass

__all__ = ["huber_fit_chunks", "ChunkPass", "block_gram", "block_stats", "sum_block_stats"]


def _iter_chunks(make_chunks, d_expected=None):
    """Validate and yield ``(X, y)`` float64 blocks from a fresh iterable ``make_chunks()``."""
    it = make_chunks()
    for k, chunk in enumerate(it):
        try:
            Xc, yc = chunk
        except (TypeError, ValueError):
            raise TypeError(f"'chunks' must yield (X, y) pairs; chunk {k} is {type(chunk).__name__}.") from None
        yield check_block(Xc, yc, k, d_expected, "'chunks': chunk")


def check_block(Xc, yc, k, d_expected, what):
    """``(X, y)`` of block ``k`` as C-contiguous float64, checked for shapes and finiteness."""
    Xc = np.ascontiguousarray(Xc, dtype=np.float64)
    yc = np.ascontiguousarray(yc, dtype=np.float64)
    if Xc.ndim != 2 or yc.shape != (Xc.shape[0],):
        raise ValueError(f"{what} {k} must be X of shape (rows, d) and y of shape (rows,); got "
                         f"{Xc.shape} and {yc.shape}.")
    if d_expected is not None and Xc.shape[1] != d_expected:
        raise ValueError(f"{what} {k} has {Xc.shape[1]} columns, the first had {d_expected}.")
    if not (np.all(np.isfinite(Xc)) and np.all(np.isfinite(yc))):
        raise ValueError(f"{what} {k} holds NaN or inf.")
    return Xc, yc


#: Rows of a block handled at once: the copy of those rows (with the intercept column) and the temporaries of
#: their Gram matrices stay in cache, and a block of any size or layout needs only O(SUB_ROWS * p) more memory.
SUB_ROWS = 8192


def _sub_blocks(Xc, yc, fit_intercept):
    """Yield ``(Xa, ya)``: float64 C-contiguous copies of ``SUB_ROWS`` rows at a time, intercept column last."""
    m, d = Xc.shape
    rows = min(m, SUB_ROWS)
    Xa = np.empty((rows, d + 1 if fit_intercept else d))
    ya = np.empty(rows)
    if fit_intercept:
        Xa[:, d] = 1.0
    for s in range(0, m, SUB_ROWS):
        k = min(m - s, SUB_ROWS)
        Xa[:k, :d] = Xc[s:s + k]
        ya[:k] = yc[s:s + k]
        yield Xa[:k], ya[:k]


def block_gram(Xc, yc, fit_intercept):
    """Pass 0 on one block: ``(X^T X, X^T y, rows, column minima, column maxima)`` (intercept column last)."""
    m, d = Xc.shape
    p = d + 1 if fit_intercept else d
    G, Xty = np.zeros((p, p)), np.zeros(p)
    lo, hi = np.full(d, np.inf), np.full(d, -np.inf)
    for Xa, ya in _sub_blocks(Xc, yc, fit_intercept):
        G += Xa.T @ Xa
        Xty += Xa.T @ ya
        lo = np.minimum(lo, Xa[:, :d].min(axis=0))
        hi = np.maximum(hi, Xa[:, :d].max(axis=0))
    return G, Xty, m, lo, hi


def sum_block_stats(parts, p, grams):
    """The sum of per-block ``(L, g, n_inliers, G_w, H_in, B)`` tuples, in the order given (the Gram
    matrices are ``None`` without ``grams``); zeros for no block."""
    L, g, nin = 0.0, np.zeros(p), 0
    Gw, Hin, B = (np.zeros((p, p)), np.zeros((p, p)), np.zeros((p, p))) if grams else (None, None, None)
    for Lc, gc, nc, Gc, Hc, Bc in parts:
        L += Lc
        g += gc
        nin += nc
        if grams:
            Gw += Gc
            Hin += Hc
            B += Bc
    return L, g, nin, Gw, Hin, B


def block_stats(Xc, yc, fit_intercept, b, delta, grams):
    """One block's share of a pass at ``b``: ``(L, g, n_inliers, G_w, H_in, B)`` (matrices only with ``grams``).

    ``Xc`` and ``yc`` may have any layout and real dtype (they are copied ``SUB_ROWS`` rows at a time).
    """
    p = b.shape[0]
    L, nin, g = 0.0, 0, np.zeros(p)
    Gw, Hin, B = (np.zeros((p, p)), np.zeros((p, p)), np.zeros((p, p))) if grams else (None, None, None)
    rows = min(Xc.shape[0], SUB_ROWS)
    r, w, gc = np.empty(rows), np.empty(rows), np.empty(p)
    d2 = delta * delta
    for Xa, ya in _sub_blocks(Xc, yc, fit_intercept):
        k = ya.shape[0]
        rk, wk = r[:k], w[:k]
        Lc, nc = huber_pass(Xa, ya, b, delta, np.empty(0), rk, wk, gc)
        L += Lc
        nin += nc
        g += gc
        if grams:
            Gw += (Xa * wk[:, None]).T @ Xa
            XI = Xa[np.abs(rk) <= delta]
            Hin += XI.T @ XI
            B += (Xa * np.minimum(rk * rk, d2)[:, None]).T @ Xa
    return L, g, int(nin), Gw, Hin, B


class ChunkPass:
    """The pass over ``make_chunks()`` in this process, one chunk at a time (the oracle of ``irls_passes``)."""

    def __init__(self, make_chunks, fit_intercept):
        self.make_chunks = make_chunks
        self.fit_intercept = fit_intercept
        self.d = None

    def gram(self):
        G0 = Xty = None
        n = 0
        d = None
        lo = hi = None
        for Xc, yc in _iter_chunks(self.make_chunks):
            if d is None:
                d = Xc.shape[1]
            elif Xc.shape[1] != d:
                raise ValueError(f"'chunks': a chunk has {Xc.shape[1]} columns, the first had {d}.")
            Gc, xyc, m, loc, hic = block_gram(Xc, yc, self.fit_intercept)
            if G0 is None:
                G0, Xty = np.zeros(Gc.shape), np.zeros(xyc.shape)
                lo, hi = np.full(d, np.inf), np.full(d, -np.inf)
            G0 += Gc
            Xty += xyc
            n += m
            lo = np.minimum(lo, loc)
            hi = np.maximum(hi, hic)
        if d is None or n == 0:
            raise ValueError("'chunks' yielded no rows.")
        self.d = d
        return G0, Xty, n, d, lo, hi

    def at(self, b, delta, grams):
        parts = (block_stats(Xc, yc, self.fit_intercept, b, delta, grams)
                 for Xc, yc in _iter_chunks(self.make_chunks, self.d))
        return sum_block_stats(parts, b.shape[0], grams)


def huber_fit_chunks(make_chunks, delta, fit_intercept, tol, max_iter):
    r"""Minimise :math:`\sum_i H_\delta(y_i - x_i^\top b)` by passes over ``make_chunks()``.

    Returns the dict of :func:`._irls.irls_passes`: ``coef`` (with the intercept last), ``n``,
    ``n_iter``, ``converged``, ``grad_rel``, ``n_inliers``, ``objective``, ``A`` and ``B``.
    """
    return irls_passes(ChunkPass(make_chunks, fit_intercept), delta, fit_intercept, tol, max_iter)
