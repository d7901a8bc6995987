r"""The pass of the Huber iteration over a row-chunked Dask array: block statistics on the workers, tree sums.

Every pass of :func:`._irls.irls_passes` maps :func:`._chunked.block_gram` or
:func:`._chunked.block_stats` onto the row blocks of ``X`` and ``y`` (one task per block, built from
``X.to_delayed()``), then adds the results in a tree of ``SPLIT_EVERY``-way sums; only the (p, p)
and (p,) totals come back to the caller. ``X`` is never gathered: no ``np.asarray`` of it, no
``compute()`` of anything of its size. The graph runs on the active scheduler (a
``distributed.Client`` if one is running, else Dask's default threaded scheduler).

Dask is optional: :func:`is_dask_array` recognises its arrays without importing it.
"""

from __future__ import annotations

import math

import numpy as np

from ._chunked import block_gram, block_stats, check_block

__all__ = ["is_dask_array", "check_dask_xy", "DaskPass"]

#: Partial sums added per task of the reduction tree.
SPLIT_EVERY = 8


def is_dask_array(a):
    """Whether ``a`` is a ``dask.array.Array`` (decided without importing dask)."""
    t = type(a)
    return t.__module__.startswith("dask") and t.__name__ == "Array"


def check_dask_xy(X, y):
    """Check a Dask ``X`` (rows in blocks, all features in one) and ``y`` (the same row blocks) before any task."""
    if not is_dask_array(X):
        raise TypeError(f"'X' must be a dask.array.Array when 'y' is one; got {type(X).__name__}. Wrap it with "
                        "dask.array.from_array(X, chunks=(rows_per_block, -1)).")
    if not is_dask_array(y):
        raise TypeError(f"'y' must be a dask.array.Array when 'X' is one; got {type(y).__name__}. Wrap it with "
                        "dask.array.from_array(y, chunks=(X.chunks[0],)).")
    if X.ndim != 2:
        raise ValueError(f"'X' must be 2-D (n_samples, n_features); got a dask array of shape {X.shape}.")
    if y.ndim != 1:
        raise ValueError(f"'y' must be 1-D (n_samples,); got a dask array of shape {y.shape}. A column vector "
                         "becomes 1-D with y[:, 0].")
    for name, a in (("X", X), ("y", y)):
        if any(math.isnan(c) for cs in a.chunks for c in cs):
            raise ValueError(f"'{name}' has unknown chunk sizes (nan), e.g. after boolean indexing; call "
                             f"{name} = {name}.compute_chunk_sizes() first.")
    if len(X.chunks[1]) != 1:
        raise ValueError(f"'X' must be chunked along rows only, with all {X.shape[1]} features in one block; got "
                         f"{len(X.chunks[1])} column blocks {X.chunks[1]}. Rechunk it with X.rechunk({{1: -1}}).")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"'X' and 'y' must have the same number of rows; got {X.shape[0]} and {y.shape[0]}.")
    if tuple(X.chunks[0]) != tuple(y.chunks[0]):
        raise ValueError(f"'X' and 'y' must have the same row chunks; got X.chunks[0] = {_short(X.chunks[0])} and "
                         f"y.chunks[0] = {_short(y.chunks[0])}. Rechunk y with y.rechunk((X.chunks[0],)).")
    if not (np.issubdtype(X.dtype, np.number) and np.issubdtype(y.dtype, np.number)) or \
            np.issubdtype(X.dtype, np.complexfloating) or np.issubdtype(y.dtype, np.complexfloating):
        raise ValueError(f"'X' and 'y' must hold real numbers; got dtypes {X.dtype} and {y.dtype}.")


def _short(chunks):
    chunks = tuple(int(c) for c in chunks)
    return str(chunks) if len(chunks) <= 6 else f"({', '.join(map(str, chunks[:3]))}, ..., {chunks[-1]}) " \
        f"[{len(chunks)} blocks]"


def _checked_gram(Xc, yc, k, fit_intercept):
    Xc, yc = check_block(Xc, yc, k, None, "'X' block")
    return block_gram(Xc, yc, fit_intercept)


def _stats(Xc, yc, fit_intercept, b, delta, grams):
    return block_stats(np.ascontiguousarray(Xc, dtype=np.float64), np.ascontiguousarray(yc, dtype=np.float64),
                       fit_intercept, b, delta, grams)


def _add_grams(*parts):
    G, xy, n, lo, hi = parts[0]
    G, xy = G.copy(), xy.copy()
    for Gc, xyc, m, loc, hic in parts[1:]:
        G += Gc
        xy += xyc
        n += m
        lo = np.minimum(lo, loc)
        hi = np.maximum(hi, hic)
    return G, xy, n, lo, hi


def _add_stats(*parts):
    L, g, nin, Gw, Hin, B = parts[0]
    g = g.copy()
    grams = Gw is not None
    if grams:
        Gw, Hin, B = Gw.copy(), Hin.copy(), B.copy()
    for Lc, gc, nc, Gc, Hc, Bc in parts[1:]:
        L += Lc
        g += gc
        nin += nc
        if grams:
            Gw += Gc
            Hin += Hc
            B += Bc
    return L, g, nin, Gw, Hin, B


class DaskPass:
    """The pass over the row blocks of Dask arrays ``X``, ``y`` (the oracle of :func:`._irls.irls_passes`)."""

    def __init__(self, X, y, fit_intercept):
        self.X_blocks = list(X.to_delayed().ravel())
        self.y_blocks = list(y.to_delayed().ravel())
        self.fit_intercept = fit_intercept
        self.d = X.shape[1]

    def _reduce(self, parts, add):
        import dask

        while len(parts) > 1:
            parts = [dask.delayed(add, pure=False)(*parts[i:i + SPLIT_EVERY])
                     for i in range(0, len(parts), SPLIT_EVERY)]
        return dask.compute(parts[0])[0]

    def gram(self):
        import dask

        if not self.X_blocks:
            raise ValueError("'X' has no rows.")
        f = dask.delayed(_checked_gram, pure=False)
        parts = [f(xb, yb, k, self.fit_intercept) for k, (xb, yb) in enumerate(zip(self.X_blocks, self.y_blocks))]
        G0, Xty, n, lo, hi = self._reduce(parts, _add_grams)
        if n == 0:
            raise ValueError("'X' has no rows.")
        return G0, Xty, int(n), self.d, lo, hi

    def at(self, b, delta, grams):
        import dask

        f = dask.delayed(_stats, pure=False)
        parts = [f(xb, yb, self.fit_intercept, b, delta, grams) for xb, yb in zip(self.X_blocks, self.y_blocks)]
        L, g, nin, Gw, Hin, B = self._reduce(parts, _add_stats)
        return float(L), g, int(nin), Gw, Hin, B
