r"""The pass of the Huber iteration over a row-chunked Dask array: block statistics on the workers, tree sums.

Every pass of :func:`._irls.irls_passes` maps :func:`._chunked.block_gram` or
:func:`._chunked.block_stats` onto the row blocks of ``X`` and ``y`` (one ``map_blocks`` task per block, fused by
Dask's graph optimisation with the tasks that produce the block), then adds the results in a tree of
``SPLIT_EVERY``-way sums; only the (p, p) and (p,) totals come back to the caller. ``X`` is never gathered:
no ``np.asarray`` of it, no ``compute()`` of anything of its size. The graph runs on the active scheduler (a
``distributed.Client`` if one is running, else Dask's default threaded scheduler).

Dask is optional: :func:`is_dask_array` recognises its arrays without importing it.
"""

from __future__ import annotations

import math

import numpy as np

from ._chunked import block_gram, block_stats, check_block, sum_block_stats

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


def _one(value):
    """A block task's result as the one-element object array that stands for a block of the pass's array."""
    out = np.empty(1, dtype=object)
    out[0] = value
    return out


def _gram_task(Xc, yc, fit_intercept, block_id=None):
    Xc, yc = check_block(Xc, yc[:, 0], block_id[0], None, "'X' block")
    return _one(block_gram(Xc, yc, fit_intercept))


def _stats_task(Xc, yc, fit_intercept, b, delta, grams):
    return _one(block_stats(Xc, yc[:, 0], fit_intercept, b, delta, grams))  # copied a few rows at a time


def _leaf(part):
    return part[0] if isinstance(part, np.ndarray) else part


def _add_grams(*parts):
    G, xy, n, lo, hi = _leaf(parts[0])
    G, xy = G.copy(), xy.copy()
    for part in parts[1:]:
        Gc, xyc, m, loc, hic = _leaf(part)
        G += Gc
        xy += xyc
        n += m
        lo = np.minimum(lo, loc)
        hi = np.maximum(hi, hic)
    return G, xy, n, lo, hi


def _add_stats(*parts):
    first = _leaf(parts[0])
    return sum_block_stats((_leaf(part) for part in parts), first[1].shape[0], first[3] is not None)


class DaskPass:
    """The pass over the row blocks of Dask arrays ``X``, ``y`` (the oracle of :func:`._irls.irls_passes`).

    Each pass is one ``map_blocks`` over ``X`` and ``y`` (one task per block, which Dask's graph
    optimisation fuses with the tasks that produce the block where it can) and a tree of sums: the graph
    has O(n_blocks) tasks, and a block of ``X`` is produced once per pass (not once per consumer).
    ``fuse_trials``: a pass recomputes the blocks, so the trial points of the line search also return the
    matrices, which saves the pass at the accepted point.
    """

    fuse_trials = True

    def __init__(self, X, y, fit_intercept):
        self.X, self.y1 = X, y[:, None]
        self.n_blocks = X.numblocks[0]
        self.fit_intercept = fit_intercept
        self.d = X.shape[1]

    def _run(self, func, add, **kwargs):
        import dask
        import dask.array as da

        S = da.map_blocks(func, self.X, self.y1, drop_axis=1, chunks=((1,) * self.n_blocks,), dtype=object,
                          meta=np.empty(0, dtype=object), **kwargs)
        parts = list(S.to_delayed().ravel())
        add = dask.delayed(add, pure=False)
        while len(parts) > 1:
            parts = [add(*parts[i:i + SPLIT_EVERY]) for i in range(0, len(parts), SPLIT_EVERY)]
        return _leaf(dask.compute(parts[0])[0])

    def gram(self):
        if self.n_blocks == 0 or self.X.shape[0] == 0:
            raise ValueError("'X' has no rows.")
        G0, Xty, n, lo, hi = self._run(_gram_task, _add_grams, fit_intercept=self.fit_intercept)
        if n == 0:
            raise ValueError("'X' has no rows.")
        return G0, Xty, int(n), self.d, lo, hi

    def at(self, b, delta, grams):
        L, g, nin, Gw, Hin, B = self._run(_stats_task, _add_stats, fit_intercept=self.fit_intercept, b=b,
                                          delta=delta, grams=grams)
        return float(L), g, int(nin), Gw, Hin, B
