r"""Plain-numpy twins of :mod:`algos.continual._slda_kernels` (the readable definitions; used by tests)."""

from __future__ import annotations

import numpy as np

__all__ = ["delta_pass_reference", "slda_per_sample_reference"]


def delta_pass_reference(X, yidx, means, counts, n_seen, rule):
    """Numpy twin of :func:`~algos.continual._slda_kernels.delta_pass`.

    Returns ``(means, counts, n, D, w)`` as new arrays (the inputs are not modified).
    """
    means = np.array(means, copy=True)
    counts = np.array(counts, copy=True)
    D = np.empty_like(np.asarray(X))
    w = np.empty(len(X), dtype=D.dtype)
    n = int(n_seen)
    for i, (x, k) in enumerate(zip(X, yidx)):
        c = counts[k]
        w[i] = n / (n + 1.0) if rule == 0 else c / (c + 1.0)
        D[i] = x - means[k]
        means[k] = means[k] + D[i] / (c + 1.0)
        counts[k] = c + 1
        n += 1
    return means, counts, n, D, w


def slda_per_sample_reference(X, yidx, n_classes, rule="hayes"):
    r"""The per-sample streaming LDA loop written as in the Deep SLDA reference code (float64).

    ``rule="hayes"``: :math:`\Sigma \leftarrow (n\Sigma + \tfrac{n}{n+1}\delta\delta^\top)/(n+1)`;
    ``rule="exact"``: the same with the per-class weight :math:`c_y/(c_y+1)` in place of
    :math:`n/(n+1)`. Returns ``(means, counts, Sigma)``; ``Sigma`` starts at zero, not at the
    reference's all-ones placeholder (which the first update overwrites).
    """
    X = np.asarray(X, dtype=np.float64)
    d = X.shape[1]
    mu = np.zeros((n_classes, d))
    c = np.zeros(n_classes, dtype=np.int64)
    sigma = np.zeros((d, d))
    n = 0
    for x, k in zip(X, yidx):
        delta = x - mu[k]
        w = n / (n + 1.0) if rule == "hayes" else c[k] / (c[k] + 1.0)
        sigma = (n * sigma + w * np.outer(delta, delta)) / (n + 1)
        mu[k] = mu[k] + delta / (c[k] + 1)
        c[k] += 1
        n += 1
    return mu, c, sigma
