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

__all__ = ["huber_fit_chunks", "ChunkPass", "block_gram", "block_stats"]


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


def _with_one(Xc, fit_intercept):
    return np.hstack([Xc, np.ones((Xc.shape[0], 1))]) if fit_intercept else Xc


def block_gram(Xc, yc, fit_intercept):
    """Pass 0 on one block: ``(X^T X, X^T y, rows, column minima, column maxima)`` (intercept column last)."""
    Xa = _with_one(Xc, fit_intercept)
    d = Xc.shape[1]
    if Xc.shape[0]:
        lo, hi = Xc.min(axis=0), Xc.max(axis=0)
    else:
        lo, hi = np.full(d, np.inf), np.full(d, -np.inf)
    return Xa.T @ Xa, Xa.T @ yc, Xa.shape[0], lo, hi


def block_stats(Xc, yc, fit_intercept, b, delta, grams):
    """One block's share of a pass at ``b``: ``(L, g, n_inliers, G_w, H_in, B)`` (matrices only with ``grams``)."""
    p = b.shape[0]
    Xa = _with_one(Xc, fit_intercept)
    m = Xa.shape[0]
    r, w, gc = np.empty(m), np.empty(m), np.empty(p)
    Lc, nc = huber_pass(Xa, yc, b, delta, np.empty(0), r, w, gc)
    if not grams:
        return Lc, gc, int(nc), None, None, None
    inl = np.abs(r) <= delta
    XI = Xa[inl]
    return (Lc, gc, int(nc), (Xa * w[:, None]).T @ Xa, XI.T @ XI,
            (Xa * np.minimum(r * r, delta * delta)[:, None]).T @ Xa)


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
        p = b.shape[0]
        L, g, nin = 0.0, np.zeros(p), 0
        Gw, Hin, B = (np.zeros((p, p)), np.zeros((p, p)), np.zeros((p, p))) if grams else (None, None, None)
        for Xc, yc in _iter_chunks(self.make_chunks, self.d):
            Lc, gc, nc, Gc, Hc, Bc = block_stats(Xc, yc, self.fit_intercept, b, delta, grams)
            L += Lc
            g += gc
            nin += nc
            if grams:
                Gw += Gc
                Hin += Hc
                B += Bc
        return L, g, nin, Gw, Hin, B


def huber_fit_chunks(make_chunks, delta, fit_intercept, tol, max_iter):
    r"""Minimise :math:`\sum_i H_\delta(y_i - x_i^\top b)` by passes over ``make_chunks()``.

    Returns the dict of :func:`._irls.irls_passes`: ``coef`` (with the intercept last), ``n``,
    ``n_iter``, ``converged``, ``grad_rel``, ``n_inliers``, ``objective``, ``A`` and ``B``.
    """
    return irls_passes(ChunkPass(make_chunks, fit_intercept), delta, fit_intercept, tol, max_iter)
