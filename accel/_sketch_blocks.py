"""The Gaussian sketch's random blocks, drawn by numpy (a leaf shared by both layers).

The shared Gaussian sketch of :mod:`algos.networked_learning` is defined by the blocks generated here,
from Philox streams keyed by ``(seed, tag)``. The numpy path and the torch path
(:func:`accel.networked_learning.gaussian_sketch_apply_torch`) both draw their blocks from this module,
so the matrix is the same on every backend; it lives in :mod:`accel` (the bottom layer) so that the torch
path needs nothing from :mod:`algos`. Pure numpy.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

# domain-separation tags: one key stream per use of the seed
_TAG = {"gaussian": 0, "srht": 1, "countsketch": 2, "subsample": 3}

# how many chunks may be generated ahead of the one being applied
_LOOKAHEAD = 4


def _philox(seed, tag, counter=0):
    """A Generator on a Philox stream keyed by ``(seed, tag)``, at block ``counter`` (high word)."""
    key = np.random.SeedSequence([seed, tag]).generate_state(2, dtype=np.uint64)
    return np.random.Generator(np.random.Philox(key=key, counter=[0, 0, 0, counter]))



def _gaussian_block(seed, k, chunk, c, m):
    """Chunk ``c`` of a Gaussian sketch: ``standard_normal((c_len, k))`` (unscaled), rows of ``A``."""
    start = c * chunk
    c_len = min(chunk, m - start)
    return _philox(seed, _TAG["gaussian"], c).standard_normal((c_len, k))


def gaussian_blocks(seed, k, m, chunk, *, n_threads=None):
    """Yield ``(start, stop, G)`` for every chunk of a Gaussian sketch, ``G`` of shape (stop-start, k).

    ``G`` is :math:`\\sqrt{k}\\,S^\\top` on rows ``start:stop``. Blocks are drawn in up to
    ``n_threads`` threads (numpy releases the GIL while filling), in order, at most a few ahead.
    Shared with :mod:`accel.networked_learning`, which moves each block to the device.
    """
    n_chunks = -(-m // chunk)
    if n_threads is None:
        n_threads = min(4, os.cpu_count() or 1)
    if n_chunks == 1 or n_threads <= 1:
        for c in range(n_chunks):
            yield c * chunk, min(m, (c + 1) * chunk), _gaussian_block(seed, k, chunk, c, m)
        return
    with ThreadPoolExecutor(max_workers=n_threads) as ex:
        pending = [ex.submit(_gaussian_block, seed, k, chunk, c, m) for c in range(min(n_chunks, _LOOKAHEAD))]
        for c in range(n_chunks):
            G = pending[c].result()
            pending[c] = None  # free the block once used
            nxt = c + _LOOKAHEAD
            if nxt < n_chunks:
                pending.append(ex.submit(_gaussian_block, seed, k, chunk, nxt, m))
            yield c * chunk, min(m, (c + 1) * chunk), G
