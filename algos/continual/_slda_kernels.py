r"""numba kernel of :class:`~algos.continual.StreamingLDA`: the sequential delta/weight pass.

The streaming LDA update of Hayes & Kanan (2020) is sequential in the class means: the deviation of
sample :math:`i` is taken from the mean *before* sample :math:`i` is added,

.. math::

    \delta_i = x_i - \mu_{y_i}, \qquad \mu_{y_i} \leftarrow \mu_{y_i} + \delta_i / (c_{y_i} + 1),
    \qquad c_{y_i} \leftarrow c_{y_i} + 1,

and the covariance update is a weighted sum of outer products of the :math:`\delta_i`. The pass below
does the :math:`O(Bd)` sequential part (means, counts, deltas, weights) in one loop; the estimator
then adds :math:`D^\top \operatorname{diag}(w) D` to the scatter matrix with one GEMM, which gives the
same result as the per-sample loop (the batched, sample-equivalent update).

Weights (``rule``):

* ``0`` -- the reference ("hayes") rule: :math:`w_i = n/(n+1)` with :math:`n` the *total* count
  before sample :math:`i`; then :math:`n\Sigma_n = \sum_t \tfrac{t}{t+1}\delta_t\delta_t^\top`.
* ``1`` -- the per-class Welford weight :math:`w_i = c_{y_i}/(c_{y_i}+1)`; the scatter is then the
  pooled within-class scatter :math:`\sum_k\sum_{i\in k}(x_i-\mu_k)(x_i-\mu_k)^\top` exactly.

Its plain-numpy reference is the batched core :func:`accel.continual._delta_pass` run on numpy (the same
code as the torch core of :class:`accel.continual.TorchStreamingLDA`). Serial (the
means are a running state); no ``fastmath``.
"""

from __future__ import annotations

import numba

__all__ = ["delta_pass"]

RULE_HAYES = 0
RULE_WELFORD = 1


@numba.njit(cache=True)
def delta_pass(X, yidx, means, counts, n_seen, rule, D_out, w_out):
    r"""Sequential delta/weight pass; updates ``means`` and ``counts`` in place.

    Parameters
    ----------
    X : ndarray of float, shape (B, d)
    yidx : ndarray of int64, shape (B,)
        Row index of each sample's class in ``means``.
    means : ndarray of float, shape (K, d)
        Class means before the batch (an unseen class has mean 0); updated in place.
    counts : ndarray of int64, shape (K,)
        Class counts before the batch; updated in place.
    n_seen : int
        Total count before the batch.
    rule : int
        ``0`` for the reference (Hayes) weight ``n/(n+1)``, ``1`` for the Welford weight ``c/(c+1)``.
    D_out : ndarray of float, shape (B, d)
        Receives the deltas.
    w_out : ndarray of float, shape (B,)
        Receives the weights.

    Returns
    -------
    int
        The total count after the batch.
    """
    B, d = X.shape
    n = n_seen
    for i in range(B):
        k = yidx[i]
        c = counts[k]
        if rule == 0:
            w_out[i] = n / (n + 1.0)
        else:
            w_out[i] = c / (c + 1.0)
        inv = 1.0 / (c + 1.0)
        for j in range(d):
            delta = X[i, j] - means[k, j]
            D_out[i, j] = delta
            means[k, j] += delta * inv
        counts[k] = c + 1
        n += 1
    return n
