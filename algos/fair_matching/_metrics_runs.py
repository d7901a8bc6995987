r"""Evaluators over time and over runs: the CEF trajectory of one allocation and the ex-ante / ex-post
CEF of a randomised algorithm's runs. Re-exported by :mod:`algos.fair_matching.metrics`, whose
docstring defines the quantities and the feasibility checks.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._validation import check_bool, check_scalar_float
from ._instance import OnlineMatchingInstance, as_instance  # noqa: F401 (the docstring examples build instances)
from ._metrics_core import _cef_matrix_core, _Edges, _prepare, _ratio_from_matrix, _run_matrices

__all__ = ["cef_trajectory", "ex_ante_cef_ratio", "ex_post_cef_ratio", "ExAnteCEF"]


def cef_trajectory(instance, allocation):
    r"""CEF ratio after each arrival: entry ``t`` is :func:`cef_ratio` of the prefix of items ``0..t``.

    The lower bound of the paper is a prefix property (it holds after every arrival); this curve
    shows it, and is handy for teaching plots.

    Parameters
    ----------
    instance : OnlineMatchingInstance
    allocation : scipy sparse matrix or ndarray, shape (n_agents, n_items)

    Returns
    -------
    ndarray of float64, shape (n_items,)

    Raises
    ------
    TypeError, ValueError
        As :func:`cef_matrix`.

    Notes
    -----
    Incremental: when item ``t`` arrives, :math:`u_i(X_j)` can change only if
    :math:`c_j[t] > 0` and ``t`` has a neighbour in class ``i`` (otherwise item ``t`` is not in the
    flow network and the network is unchanged), so only those pairs are re-solved. Worst case
    :math:`O(m k^2)` max flows.

    Examples
    --------
    >>> inst = OnlineMatchingInstance(2, [0, 1], [[0, 1], [0, 1]])
    >>> cef_trajectory(inst, np.array([[1.0, 0.0], [0.0, 0.5]]))
    array([0. , 0.5])
    """
    instance = as_instance(instance)
    m = instance.n_items
    E = _prepare(instance, allocation, m)
    k = instance.n_classes
    out = np.ones(m, dtype=np.float64)
    if k == 1 or m == 0:
        return out
    sizes = instance.class_sizes.astype(np.float64)
    V = np.zeros((k, k), dtype=np.float64)
    util = np.zeros(k, dtype=np.float64)
    indptr = instance.indptr
    for t in range(m):
        lo, hi = int(indptr[t]), int(indptr[t + 1])
        if hi > lo:
            cls_t, x_t = E.cls[lo:hi], E.x[lo:hi]
            util += np.bincount(cls_t, weights=x_t, minlength=k)
            js = np.unique(cls_t[x_t > 0.0])
            if js.size:
                is_ = np.unique(cls_t)
                need = np.zeros((k, k), dtype=bool)
                need[np.ix_(is_, js)] = True
                np.fill_diagonal(need, False)
                if need.any():
                    P = _Edges(t + 1, E.agent[:hi], E.item[:hi], E.cls[:hi], E.x[:hi])
                    W = _cef_matrix_core(P, k, sizes, need)
                    V[need] = W[need]
        V[np.diag_indices(k)] = util
        out[t] = _ratio_from_matrix(V)[0]
    return out


class ExAnteCEF(NamedTuple):
    r"""Ex-ante CEF of a randomised algorithm (ratio of means) with its delta-method standard error.

    Attributes
    ----------
    ratio : float
        :math:`\min_{i \ne j} \overline{V}_{ii} / \overline{V}_{ij}` over pairs with
        :math:`\overline{V}_{ij} > 10^{-9}` (1.0 if none).
    se : float
        Delta-method standard error of ``ratio`` at the minimising pair:
        :math:`\mathrm{sd}(V_{ii} - r V_{ij}) / (\sqrt{R}\, \overline{V}_{ij})`; 0.0 if no pair.
    pair : tuple of int or None
        The minimising ordered pair ``(i, j)``.
    mean_matrix : ndarray, shape (k, k)
        :math:`\overline{V}`, the mean of the per-run matrices.
    run_matrices : ndarray, shape (R, k, k)
        The per-run matrices :math:`V^{(r)}_{ij} = u_i(X^{(r)}_j)`.
    """

    ratio: float
    se: float
    pair: tuple | None
    mean_matrix: np.ndarray
    run_matrices: np.ndarray

    def gap(self, alpha):
        r"""Per-pair margin of the ex-ante :math:`\alpha`-CEF inequality and its standard error.

        Returns ``(gap, se)``, two k x k arrays with
        :math:`\mathrm{gap}_{ij} = \overline{V}_{ii} - \alpha \overline{V}_{ij}` and
        :math:`\mathrm{se}_{ij} = \mathrm{sd}_r(V^{(r)}_{ii} - \alpha V^{(r)}_{ij}) / \sqrt{R}`
        (the "combined" standard error of fair_matching reconstruction notes, section 2, T3; the diagonal is 0). The
        ex-ante bound passes a 4-SE test when ``(gap >= -4 * se - 1e-3).all()``.
        """
        alpha = check_scalar_float(alpha, "alpha", low=0.0)
        Vr = self.run_matrices
        R, k = Vr.shape[0], Vr.shape[1]
        diag = np.einsum("rii->ri", Vr)[:, :, None]
        D = diag - alpha * Vr
        gap = D.mean(axis=0)
        se = D.std(axis=0, ddof=1) / np.sqrt(R) if R > 1 else np.full((k, k), np.inf)
        eye = np.eye(k, dtype=bool)
        gap[eye], se[eye] = 0.0, 0.0
        return gap, se


def _checked_runs(instance, allocations, return_se):
    """``return_se`` checked, the per-run value matrices ``Vr`` (R, k, k) and ``R`` (at least 2 with ``return_se``)."""
    instance = as_instance(instance)
    return_se = check_bool(return_se, "return_se")
    Vr = _run_matrices(instance, allocations)
    R = Vr.shape[0]
    if return_se and R < 2:
        raise ValueError(f"'allocations' must hold at least 2 allocations when return_se=True; got {R}.")
    return return_se, Vr, R


def ex_ante_cef_ratio(instance, allocations, *, return_se=False):
    r"""**Ex-ante** CEF of a randomised algorithm: a ratio of means over Monte-Carlo runs.

    .. math:: \min_{i \ne j} \frac{\tfrac1R \sum_r u_i(X^{(r)}_i)}{\tfrac1R \sum_r u_i(X^{(r)}_j)}

    over pairs whose mean value exceeds ``1e-9`` (1.0 if none). This estimates the ex-ante notion
    :math:`\mathbb E[u_i(X_i)] \ge \alpha\, \mathbb E[u_i(X_j)]` used for randomised algorithms
    (fair_matching reconstruction notes, section 1.1 [R], H24's convention). It differs from :func:`ex_post_cef_ratio`,
    the mean of the per-run ratios; report both and label them.

    Parameters
    ----------
    instance : OnlineMatchingInstance
    allocations : sequence of allocations, or ndarray of shape (R, n_agents, n_items)
        One allocation per run (e.g. Monte-Carlo realisations of ``HybridRanking``).
    return_se : bool, default=False
        Also return the standard error and the per-run matrices (needs ``R >= 2``).

    Returns
    -------
    float or ExAnteCEF
        The ratio; with ``return_se=True`` an :class:`ExAnteCEF` ``(ratio, se, pair, mean_matrix,
        run_matrices)`` whose :meth:`ExAnteCEF.gap` gives the per-pair "combined SE" test of the fair_matching
        reconstruction notes, section 2 (T3).

    Raises
    ------
    TypeError
        ``allocations`` is a single matrix or not a sequence; wrong types inside.
    ValueError
        Empty ``allocations``; fewer than 2 runs with ``return_se=True``; an infeasible allocation
        (the message names ``allocations[r]``).

    See Also
    --------
    ex_post_cef_ratio, cef_ratio, theory.fair_matching.cef_lower_bound

    Examples
    --------
    >>> inst = OnlineMatchingInstance(2, [0, 1], [[0, 1]])
    >>> runs = [np.array([[1.0], [0.0]]), np.array([[0.0], [1.0]])]
    >>> ex_ante_cef_ratio(inst, runs), ex_post_cef_ratio(inst, runs)
    (1.0, 0.0)
    """
    return_se, Vr, R = _checked_runs(instance, allocations, return_se)
    Vbar = Vr.mean(axis=0)
    ratio, pair = _ratio_from_matrix(Vbar)
    if not return_se:
        return ratio
    if pair is None:
        se = 0.0
    else:
        i, j = pair
        g = Vr[:, i, i] - ratio * Vr[:, i, j]
        se = float(g.std(ddof=1) / np.sqrt(R) / Vbar[i, j])
    return ExAnteCEF(ratio, se, pair, Vbar, Vr)


def ex_post_cef_ratio(instance, allocations, *, return_se=False):
    r"""**Ex-post** CEF of a randomised algorithm: the mean over runs of the realised CEF ratio.

    .. math:: \frac1R \sum_r \min_{i \ne j} u_i(X^{(r)}_i) / u_i(X^{(r)}_j)

    (each run's ratio as in :func:`cef_ratio`). By Jensen-type effects this is usually *not* the
    quantity the ex-ante guarantees bound; see :func:`ex_ante_cef_ratio` for the ratio of means.

    Parameters
    ----------
    instance : OnlineMatchingInstance
    allocations : sequence of allocations, or ndarray of shape (R, n_agents, n_items)
    return_se : bool, default=False
        Also return the standard error of the mean (needs ``R >= 2``).

    Returns
    -------
    float or tuple of (float, float)

    Raises
    ------
    TypeError, ValueError
        As :func:`ex_ante_cef_ratio`.

    Examples
    --------
    >>> inst = OnlineMatchingInstance(2, [0, 1], [[0, 1], [0, 1]])
    >>> runs = [np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0, 0.0], [0.0, 0.0]])]
    >>> ex_post_cef_ratio(inst, runs)
    0.5
    """
    return_se, Vr, R = _checked_runs(instance, allocations, return_se)
    ratios = np.array([_ratio_from_matrix(V)[0] for V in Vr])
    mean = float(ratios.mean())
    if not return_se:
        return mean
    return mean, float(ratios.std(ddof=1) / np.sqrt(R))
