r"""Population (or any-measure) engine for linear agents on a DAG, in whitened coordinates.

For a distribution with second moments :math:`\Sigma = E[xx^\top]` and :math:`b = E[xy]`, agent ``v``
predicts the :math:`L^2` projection of :math:`y` onto
:math:`V_v = \mathrm{span}(\{x_l\}_{l\in S_v} \cup \{f_u\}_{u\in \mathrm{Pa}(v)})`. Every prediction is
linear, :math:`f_v = \beta_v^\top x`.

Engine. Factor :math:`\Sigma = LL^\top` (Cholesky, or ``eigh`` when :math:`\Sigma` is only PSD). The map
:math:`\beta^\top x \mapsto L^\top\beta` is an isometry from :math:`H = \mathrm{span}(x_1..x_d)` into
:math:`\mathbb{R}^r`; feature :math:`l` becomes the column :math:`L^\top e_l`, agent ``u``'s prediction the
vector :math:`L^\top\beta_u`, and since projecting :math:`y` or :math:`f^* = P_H y` onto
:math:`V_v \subseteq H` gives the same result (KRR fact (ii)), the target is :math:`t = L^\top\beta^*` with
:math:`\beta^* = \Sigma^+ b` (computed as :math:`L^{-1}b`, never through :math:`\Sigma^{-1}`). Each agent
then solves a small least-squares problem on its regressor columns with min-norm ``lstsq`` (SVD). The
normal equations (Gram matrices :math:`\Sigma_{VV}`) are deliberately avoided: they square the condition
number and lose the answer on near-collinear instances (networked_learning reconstruction notes, section 7: ``e_D D =
0.025`` instead of ``0.0116`` on the hard instance at ``D = 1000``).

The same engine is exact for the empirical measure: pass :math:`\hat\Sigma = X^\top X/m` and
:math:`\hat b = X^\top y/m`.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import scipy.linalg

from .._validation import check_array, check_scalar_float, check_scalar_int
from ._graphs import check_graph

__all__ = ["population_fit", "excess_risk", "greedy_path", "whiten", "zero_message_agents"]



#: Default singular-value cut-off (relative) of :func:`population_fit`'s per-agent least squares.
POPULATION_RCOND = 1e-8

def _check_moments(Sigma, b):
    Sigma = check_array(Sigma, "Sigma", allow_empty=True)
    if Sigma.ndim != 2 or Sigma.shape[0] != Sigma.shape[1] or Sigma.shape[0] == 0:
        raise ValueError(f"'Sigma' must be a square (d, d) matrix with d >= 1; got shape {Sigma.shape}.")
    d = Sigma.shape[0]
    scale = max(float(np.max(np.abs(Sigma))), np.finfo(float).tiny)
    asym = float(np.max(np.abs(Sigma - Sigma.T)))
    if asym > 1e-10 * scale:
        raise ValueError(f"'Sigma' must be symmetric; got max |Sigma - Sigma^T| = {asym:.3g}.")
    Sigma = 0.5 * (Sigma + Sigma.T)
    if b is not None:
        b = check_array(b, "b", allow_empty=True)
        if b.shape != (d,):
            raise ValueError(f"'b' must have shape ({d},) to match 'Sigma'; got {b.shape}.")
    return Sigma, b


def whiten(Sigma, b=None):
    r"""Factor :math:`\Sigma = LL^\top` and return ``(LT, t)`` with ``LT = L^T`` and ``t = L^T Sigma^+ b``.

    Cholesky when :math:`\Sigma` is numerically positive definite; otherwise the eigendecomposition
    :math:`\Sigma = Q\Lambda Q^\top` with :math:`L^\top = \Lambda_+^{1/2}Q^\top` restricted to the
    eigenvalues above ``d * eps * lambda_max`` (then ``LT`` has ``r = rank`` rows).

    Raises
    ------
    ValueError
        ``Sigma`` not symmetric, or with an eigenvalue below ``-1e-8 * lambda_max`` (not PSD).
    """
    Sigma, b = _check_moments(Sigma, b)
    d = Sigma.shape[0]
    try:
        L = scipy.linalg.cholesky(Sigma, lower=True, check_finite=False)
        diag = np.abs(np.diag(L))
        if np.min(diag) <= 1e-7 * max(np.max(diag), 1e-300):  # numerically singular: use eigh
            raise np.linalg.LinAlgError
        LT = L.T.copy()
        t = None if b is None else scipy.linalg.solve_triangular(L, b, lower=True, check_finite=False)
        return LT, t
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        pass
    lam, Q = np.linalg.eigh(Sigma)
    lmax = max(float(lam[-1]), 0.0)
    if lam[0] < -1e-8 * max(lmax, 1e-300):
        raise ValueError(f"'Sigma' must be positive semidefinite; got smallest eigenvalue {lam[0]:.3g}.")
    keep = lam > d * np.finfo(float).eps * lmax
    if not np.any(keep):  # Sigma = 0: every feature is the zero function
        return np.zeros((0, d)), (None if b is None else np.zeros(0))
    sq = np.sqrt(lam[keep])
    LT = sq[:, None] * Q[:, keep].T
    t = None if b is None else (Q[:, keep].T @ b) / sq
    return LT, t


def _beta_star(LT, t):
    """Min-norm beta with L^T beta = t (equals Sigma^+ b when b lies in range(Sigma))."""
    if LT.shape[0] == 0:
        return np.zeros(LT.shape[1])
    return np.linalg.lstsq(LT, t, rcond=None)[0]


def excess_risk(beta, Sigma, beta_star):
    r"""Excess risk :math:`e(\beta) = (\beta-\beta^*)^\top\Sigma(\beta-\beta^*) = \|f_\beta - f^*\|^2`.

    Parameters
    ----------
    beta : array-like of shape (d,)
    Sigma : array-like of shape (d, d)
    beta_star : array-like of shape (d,)

    Returns
    -------
    float

    Raises
    ------
    ValueError
        On NaN/inf entries, mismatched shapes, or a risk beyond the float64 range.
    TypeError
        On non-real entries.

    Examples
    --------
    >>> excess_risk(np.array([1.0, 0.0]), np.eye(2), np.array([1.0, -1.0]))
    1.0
    """
    beta = check_array(beta, "beta", ndim=1)
    beta_star = check_array(beta_star, "beta_star", ndim=1)
    Sigma = check_array(Sigma, "Sigma", ndim=2)
    d = beta.shape[0]
    if beta_star.shape != (d,):
        raise ValueError(f"'beta_star' must have shape ({d},) to match 'beta'; got {beta_star.shape}.")
    if Sigma.shape != (d, d):
        raise ValueError(f"'Sigma' must have shape ({d}, {d}) to match 'beta'; got {Sigma.shape}.")
    diff = beta - beta_star
    with np.errstate(over="ignore", invalid="ignore"):
        risk = float(max(diff @ Sigma @ diff, 0.0))
    if not math.isfinite(risk):
        raise ValueError(
            "the excess risk (beta - beta_star)' Sigma (beta - beta_star) overflows float64; rescale "
            "'beta', 'beta_star' and 'Sigma'."
        )
    return risk


def population_fit(graph, feature_sets, Sigma, b, *, rcond=None, return_excess=False):
    r"""Global coefficients :math:`\beta_v` of every agent, from the moments :math:`(\Sigma, b)`.

    Parameters
    ----------
    graph : networkx.DiGraph
        The DAG of agents (validated by :func:`check_graph`).
    feature_sets : dict node -> iterable of int
    Sigma : ndarray of shape (d, d)
        Second-moment matrix :math:`E[xx^\top]` (symmetric PSD).
    b : ndarray of shape (d,)
        Cross moment :math:`E[xy]`.
    rcond : float or None, default=None
        Cut-off for small singular values (relative to the largest) in each agent's ``lstsq``; ``None``
        means ``POPULATION_RCOND = 1e-8``. Not numpy's default ``eps * max(d, k)``: this engine works on
        only ``d`` whitened rows, and two parents whose predictions are equal in exact arithmetic (two
        paths through the same features) reach an agent with different round-off, about ``1e-16``
        relative, which that default keeps as a direction, so the agent would fit noise.
    return_excess : bool, default=False
        Also return ``{v: e_v}`` with :math:`e_v = \|f_v - f^*\|^2`, computed from the whitened residual
        (more accurate than the quadratic form when :math:`\Sigma` is ill conditioned).

    Returns
    -------
    betas : dict node -> ndarray of shape (d,)
        The prediction :math:`\beta_v^\top x` is unique; the coefficients are unique up to the null space
        of :math:`\Sigma` (this engine returns the ones built from each agent's min-norm local solution).
    excess : dict node -> float
        Only with ``return_excess=True``.

    Examples
    --------
    Suppressor: :math:`x_1 = U+Z`, :math:`x_2 = Z`, :math:`y = U`; the path ``x2 -> x1`` keeps half the
    error, ``x1 -> x2`` none.

    >>> Sigma, b = np.array([[2.0, 1.0], [1.0, 1.0]]), np.array([1.0, 0.0])
    >>> g = nx.DiGraph([(0, 1)])
    >>> _, e = population_fit(g, {0: [1], 1: [0]}, Sigma, b, return_excess=True)
    >>> round(e[1], 12)
    0.5
    >>> _, e = population_fit(g, {0: [0], 1: [1]}, Sigma, b, return_excess=True)
    >>> round(e[1], 12)
    0.0

    Notes
    -----
    **A population idealisation.** When an agent's population prediction is exactly zero although it
    sees a feature (``x2`` in the suppressor: uncorrelated with ``y``), its message carries nothing here,
    but on any finite sample its least-squares coefficient is tiny and nonzero, so its prediction still
    hands the direction ``x2`` to its children, which rescale it. The estimator on samples then reaches
    the benchmark where this engine reports an error: the suppressor star hub has population excess 0.5
    but empirical excess 0 with noiseless labels (about ``d sigma^2 / m`` with noise), and the same holds
    for ``x2 -> x1``. When several hidden directions reach an agent as one random mixture (short cyclic
    paths of :func:`make_differential`), the empirical excess is a random number between 0 and the
    population value that does not shrink with ``m``. The population value is not the large-sample
    limit of the estimator at such designs (it is discontinuous there); where no agent's message
    vanishes it is (the estimator converges to it as ``m`` grows).
    :func:`zero_message_agents` lists the agents concerned.
    """
    Sigma, b = _check_moments(Sigma, b)
    d = Sigma.shape[0]
    fs = check_graph(graph, feature_sets, d)
    LT, t = whiten(Sigma, b)
    betas, preds, excess = {}, {}, {}
    for v in nx.topological_sort(graph):
        cols = list(fs[v])
        parents = list(graph.predecessors(v))
        W = np.concatenate([LT[:, cols], np.column_stack([preds[u] for u in parents]) if parents
                            else np.zeros((LT.shape[0], 0))], axis=1)
        if W.shape[1] == 0 or W.shape[0] == 0:
            c = np.zeros(W.shape[1])
        else:
            c = np.linalg.lstsq(W, t, rcond=POPULATION_RCOND if rcond is None else rcond)[0]
        beta = np.zeros(d)
        np.add.at(beta, cols, c[: len(cols)])
        for w, u in zip(c[len(cols):], parents):
            beta += w * betas[u]
        betas[v] = beta
        preds[v] = W @ c
        r = t - preds[v]
        excess[v] = float(r @ r)
    betas = {v: betas[v] for v in graph.nodes()}
    if return_excess:
        return betas, {v: excess[v] for v in graph.nodes()}
    return betas


def zero_message_agents(graph, feature_sets, Sigma, b, *, tol=1e-10):
    r"""Agents whose population prediction is zero although their regressors are not.

    Such an agent (it sees a feature of nonzero variance, or a parent with a nonzero prediction, yet
    :math:`f_v = 0` because everything it sees is orthogonal to ``y``) sends a zero message under the
    population measure but a nonzero multiple of its regressors on every finite sample. Wherever one
    of them has children, :func:`population_fit` describes the population idealisation only: the
    estimator can use the direction the zero message would hide (see the Notes of
    :func:`population_fit`).

    Parameters
    ----------
    graph, feature_sets, Sigma, b
        As in :func:`population_fit`.
    tol : float, default=1e-10
        Relative threshold: a prediction counts as zero when :math:`\|f_v\|^2 \le` ``tol`` times
        :math:`\|f^*\|^2`, a regressor as nonzero when its variance exceeds ``tol`` times the largest
        feature variance.

    Returns
    -------
    list of nodes
        In topological order.

    Examples
    --------
    >>> Sigma, b = np.array([[2.0, 1.0], [1.0, 1.0]]), np.array([1.0, 0.0])
    >>> zero_message_agents(nx.DiGraph([(0, 2), (1, 2)]), {0: [0], 1: [1], 2: []}, Sigma, b)
    [1]
    """
    tol = check_scalar_float(tol, "tol", low=0.0)
    Sigma, b = _check_moments(Sigma, b)
    betas = population_fit(graph, feature_sets, Sigma, b)
    fs = check_graph(graph, feature_sets, Sigma.shape[0])
    LT, t = whiten(Sigma, b)
    scale = float(t @ t)
    var_max = float(np.max(np.diag(Sigma))) if Sigma.size else 0.0
    out = []
    for v in nx.topological_sort(graph):
        f = LT @ betas[v]
        if float(f @ f) > tol * scale:
            continue
        sees = any(Sigma[j, j] > tol * var_max for j in fs[v])
        hears = any(float((LT @ betas[u]) @ (LT @ betas[u])) > tol * scale for u in graph.predecessors(v))
        if sees or hears:
            out.append(v)
    return out


def greedy_path(Sigma, b, D):
    r"""Greedy one-parent path (T3): agent ``t+1`` sees :math:`\arg\max_i |\langle y-f_t, x_i\rangle|/\|x_i\|`.

    Agent 1 (no parent, :math:`f_0 = 0`) sees the feature most correlated with ``y``; every later agent
    sees its parent's prediction plus the feature most correlated with the current residual. Guarantee
    (Optimal Networks, [C]): :math:`e_{t+1} \le e_t - e_t^2/(AB)^2`, hence :math:`e_D \le (AB)^2/(D+1)`,
    with :math:`A = \|\beta^*\|_1`, :math:`B^2 = \max_l \Sigma_{ll}`. Ties go to the smallest index;
    zero-variance features are never chosen.

    Parameters
    ----------
    Sigma : array-like of shape (d, d)
        Covariance of the features.
    b : array-like of shape (d,)
        ``E[x y]``.
    D : int
        Number of agents, at least 1.

    Returns
    -------
    features : list of int
        Feature seen by agents ``1..D``.
    betas : list of ndarray of shape (d,)
        Global coefficients of agents ``1..D``.
    excess : list of float
        :math:`e_t = \|f_t - f^*\|^2` for ``t = 0..D`` (``excess[0]`` is :math:`\|f^*\|^2`).
    """
    Sigma, b = _check_moments(Sigma, b)
    D = check_scalar_int(D, "D", low=1)
    d = Sigma.shape[0]
    LT, t = whiten(Sigma, b)
    with np.errstate(over="ignore"):
        if not math.isfinite(float(t @ t)):
            raise ValueError("||f*||^2 = b' Sigma^+ b overflows float64; rescale 'b' (or 'Sigma').")
    norms = np.sqrt(np.maximum(np.diag(Sigma), 0.0))
    beta = np.zeros(d)
    pred = np.zeros(LT.shape[0])
    features, betas, excess = [], [], [float(t @ t)]
    for step in range(D):
        r = t - pred
        corr = LT.T @ r  # <y - f_t, x_i> = <f* - f_t, x_i>
        score = np.where(norms > 0, np.abs(corr) / np.where(norms > 0, norms, 1.0), -1.0)
        i = int(np.argmax(score))
        if step == 0:
            W = LT[:, [i]]
        else:
            W = np.column_stack([LT[:, i], pred])
        c = np.linalg.lstsq(W, t, rcond=None)[0] if LT.shape[0] else np.zeros(W.shape[1])
        new = np.zeros(d)
        new[i] = c[0]
        if step > 0:
            new += c[1] * beta
        beta = new
        pred = W @ c
        features.append(i)
        betas.append(beta)
        res = t - pred
        excess.append(float(res @ res))
    return features, betas, excess
