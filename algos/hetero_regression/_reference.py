r"""Plain-numpy reference twins of the median kernels in :mod:`._kernels` (readable definitions; used
only by tests).

They share no code with the kernels: medians come from :func:`numpy.median` (a full partition), and the
masks from boolean indexing. The fused Huber pass has no twin here: its reference is the Huber evaluation
of the batched IRLS core, :func:`accel.hetero_regression._evaluate`, run on numpy.
"""

from __future__ import annotations

import numpy as np

__all__ = ["quickselect_median_reference", "masked_ratio_medians_reference"]


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
