r"""Hard clustering, rate-distortion and the depth-1 converse of :mod:`theory.pomdp` (importable from there).

Sources: [BMDG] A. Banerjee, S. Merugu, I. Dhillon, J. Ghosh, "Clustering with Bregman divergences",
JMLR 2005; [Csi74] I. Csiszár, "On the computation of rate-distortion functions", IEEE TIT 1974;
the converse follows the pomdp reconstruction notes, section 1.3.

Pure numpy; imports nothing from ``algos``.
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import InBody, Real, domain
from ._pomdp_checks import COUNT, DISCOUNT, NONNEG, _array, _beliefs, array_rule


def _partitions(n, k):
    """All restricted-growth label vectors of n items into at most k non-empty cells."""
    out = []

    def rec(prefix, m):
        if len(prefix) == n:
            out.append(tuple(prefix))
            return
        for c in range(min(m + 1, k)):
            prefix.append(c)
            rec(prefix, max(m, c + 1))
            prefix.pop()

    rec([], 0)
    return np.asarray(out, dtype=np.int64).reshape(len(out), n)


def _n_partitions(n, k):
    # sum_{j<=k} Stirling2(n, j)
    S = [[0] * (k + 1) for _ in range(n + 1)]
    S[0][0] = 1
    for i in range(1, n + 1):
        for j in range(1, k + 1):
            S[i][j] = j * S[i - 1][j] + S[i - 1][j - 1]
    return sum(S[n][1:k + 1])


@domain(B=array_rule(2, "(n, S)"), w=InBody("weights of shape (n,)"), n_clusters=COUNT,
        value_fn=InBody("a callable mapping beliefs (n, S) to values (n,)"),
        values=InBody("None or an array of shape (n,)"), max_partitions=COUNT)
def bregman_hard_clustering(B, w, n_clusters, value_fn, values=None, *, max_partitions=500_000):
    r"""Exact Bregman hard-clustering distortion :math:`D_K(\mu)` of a finite belief law.

    **Definition ([R], pomdp reconstruction notes, section 1.3).** For :math:`\mu = \sum_i p_i \delta_{b_i}`,

    .. math:: D_K(\mu) = \min_{\text{partitions into } \le K \text{ cells}} \sum_{\text{cells}} J(\text{cell})
              = \sum_i p_i V(b_i) - \max_{\text{partitions}} \sum_m P_m V(\bar b_m).

    Soft assignments cannot do better (:math:`\sum_m P_m V(\bar b_m)` is a convex function of the
    assignment, so its maximum over the assignment polytope is at a vertex). Computed by exhaustive
    enumeration of partitions (exact; refused above ``max_partitions``).

    Kind: ``exact``. Status: reconstructed.

    .. note:: reconstructed from [BMDG] (pomdp reconstruction notes, section 1.3).

    Parameters
    ----------
    B : array-like of shape (n, S)
        The beliefs :math:`b_i`.
    w : array-like of shape (n,)
        Their non-negative weights :math:`p_i`.
    n_clusters : int
        :math:`K`, at least 1.
    value_fn : callable
        Maps an (m, S) array to (m,) values: the value used at the cell means (e.g. an upper bound
        of :math:`V^*` for a rigorous lower bound of the true :math:`D_K`).
    values : array-like of shape (n,), optional
        Values at the ``B`` (default ``value_fn(B)``; a lower bound of :math:`V^*` for rigour).
    max_partitions : int, default=500000
        Largest number of partitions enumerated (at least 1); above it a ``ValueError`` is raised.

    Returns
    -------
    D : float
        :math:`D_K(\mu)`.
    merged : float
        The maximal :math:`\sum_m P_m V(\bar b_m)`.
    labels : ndarray of int, shape (n,)
        The optimal cell of each belief.
    """
    B = _beliefs(B)
    w = _array(w, "w", 1)
    n = B.shape[0]
    if w.shape[0] != n:
        raise ValueError(f"'w' must hold one weight per row of 'B'; got {w.shape[0]} weights for {n} beliefs.")
    k = n_clusters
    if values is None:
        values = value_fn(B)
    spread = float(w @ np.asarray(values, dtype=float))
    if n == 0:
        return 0.0, 0.0, np.zeros(0, dtype=np.int64)
    k = min(k, n)
    count = _n_partitions(n, k)
    if count > max_partitions:
        raise ValueError(
            f"exact hard clustering of {n} beliefs into <= {k} cells needs {count} partitions "
            f"(> max_partitions={max_partitions})."
        )
    labels = _partitions(n, k)                      # (np, n)
    onehot = (labels[:, :, None] == np.arange(k)[None, None, :]).astype(float)   # (np, n, k)
    mass = np.einsum("pnk,n->pk", onehot, w)                                     # (np, k)
    sums = np.einsum("pnk,n,ns->pks", onehot, w, B)                              # (np, k, S)
    nz = mass > 0
    means = sums[nz] / mass[nz][:, None]
    vals = np.zeros_like(mass)
    vals[nz] = mass[nz] * np.asarray(value_fn(means), dtype=float)
    merged_all = vals.sum(axis=1)
    best = int(np.argmax(merged_all))
    merged = float(merged_all[best])
    return spread - merged, merged, labels[best]


@domain(p=InBody("a probability vector of shape (n,)"), d=array_rule(2, "(n, m)"), rate=NONNEG,
        lambdas=InBody("None or an array of slopes > 0"), n_iter=COUNT)
def rate_distortion_lower_bound(p, d, rate, *, lambdas=None, n_iter=200):
    r"""Certified lower bound on the distortion-rate function :math:`D_\mu(R)` by Blahut–Arimoto.

    **Definition ([R], pomdp reconstruction notes, section 1.3).** :math:`D_\mu(R) = \min\{E\,d(B, \hat A) :
    I(B; \hat A) \le R\}` over test channels into the finite reproduction alphabet (columns of
    ``d``). For the converse, :math:`d(b, \alpha) = V^*(b) - \alpha\cdot b`, :math:`R = \log K`
    (nats) and :math:`D_\mu(\log K) \le D_K(\mu)`, because a hard :math:`K`-cell assignment has
    :math:`I \le H \le \log K`.

    For each slope :math:`\lambda` of a grid, Blahut–Arimoto gives an output law :math:`q`; then
    :math:`c_i = 1/\sum_j q_j e^{-\lambda d_{ij}}`, rescaled so that
    :math:`\max_j \sum_i p_i c_i e^{-\lambda d_{ij}} \le 1`, is dual feasible and [Csi74]

    .. math:: D_\mu(R) \ge \frac{\sum_i p_i \log c_i - R}{\lambda}.

    The returned value is the maximum of these certificates and 0, hence a rigorous lower bound
    regardless of Blahut–Arimoto's convergence. Kind: ``exact``. Status: reconstructed.

    .. note:: reconstructed from [BMDG] and [Csi74] (pomdp reconstruction notes, section 1.3).

    Parameters
    ----------
    p : array-like of shape (n,)
        The law :math:`\mu` on the source points.
    d : array-like of shape (n, m)
        Distortions :math:`d(b_i, \alpha_j)` to the reproduction letters.
    rate : float
        :math:`R \ge 0` in nats (``log K`` for the converse).
    lambdas : array-like of float, optional
        Grid of slopes :math:`\lambda > 0`; a default grid is used when omitted.
    n_iter : int, default=200
        Blahut-Arimoto iterations per slope, at least 1.

    Returns
    -------
    D_lower : float
        The certified lower bound of :math:`D_\mu(R)`.
    D_achieved : float
        The smallest distortion reached by a Blahut-Arimoto test channel of rate at most ``rate``
        (an upper bound of :math:`D_\mu(R)`; ``inf`` if none).

    Examples
    --------
    >>> lo, hi = rate_distortion_lower_bound([0.5, 0.5], [[0.0, 1.0], [1.0, 0.0]], np.log(2))
    >>> abs(lo) < 1e-6 and hi < 1e-3
    True
    """
    p = _array(p, "p", 1)
    d = _array(d, "d", 2)
    if d.shape[0] != p.shape[0]:
        raise ValueError(f"'d' must have one row per mass of 'p'; got {d.shape[0]} rows for {p.shape[0]} masses.")
    if p.size and (p.min() < 0.0 or abs(float(p.sum()) - 1.0) > 1e-9):
        raise ValueError(f"'p' must be a probability vector (non-negative, summing to 1 within 1e-9); got "
                         f"min {float(p.min())!r} and sum {float(p.sum())!r}.")
    keep = p > 0
    p, d = p[keep] / p[keep].sum(), d[keep]
    if p.size == 0:
        return 0.0, 0.0
    dmin = d.min(axis=1, keepdims=True)
    base = float(p @ dmin[:, 0])                    # D >= E min_j d_ij always
    d0 = d - dmin                                   # shift: exact for the bound (added back)
    scale = float(d0.max())
    if scale <= 0:
        return base, base
    if rate <= 0.0:                                 # D(0) = min_j sum_i p_i d_ij (closed form)
        v = float((p @ d0).min())
        return base + v, base + v
    if rate >= math.log(p.size) - 1e-12:            # one cell per point: D = E min_j d_ij
        return base, base
    if lambdas is None:
        lambdas = np.geomspace(1e-3, 1e4, 40) / scale
    lam = np.asarray(lambdas, dtype=float)[:, None, None]
    E = np.exp(-lam * d0[None])                     # (L, n, m), all slopes at once
    m = d.shape[1]
    q = np.full((lam.shape[0], m), 1.0 / m)
    for _ in range(n_iter):
        den = np.einsum("lnm,lm->ln", E, q)
        q = q * np.einsum("n,lnm->lm", p, E / den[:, :, None])
        q = np.maximum(q, 0.0)
        q /= q.sum(axis=1, keepdims=True)
    den = np.einsum("lnm,lm->ln", E, q)
    c = 1.0 / den                                   # (L, n)
    s = np.einsum("n,ln,lnm->lm", p, c, E).max(axis=1)
    c = c / s[:, None]
    lo = ((np.log(c) @ p) - rate) / lam[:, 0, 0]
    best_lo = max(0.0, float(lo.max()))
    Q = E * q[:, None, :] / den[:, :, None]         # test channels (L, n, m)
    qa = np.einsum("n,lnm->lm", p, Q)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(Q > 0, Q / qa[:, None, :], 1.0)
        R = np.einsum("n,lnm->l", p, Q * np.log(ratio))
    Dq = np.einsum("n,lnm,nm->l", p, Q, d0)
    ok = R <= rate + 1e-9
    best_hi = float(Dq[ok].min()) if ok.any() else math.inf
    return base + best_lo, base + best_hi


@domain(value_b0=Real(), q_values=array_rule(1, "(A,)"), distortions=array_rule(1, "(A,)"), discount=DISCOUNT)
def converse_depth1(value_b0, q_values, distortions, discount):
    r"""Controller-independent depth-1 converse on the loss of any K-memory controller.

    **Statement ([R], pomdp reconstruction notes, section 1.3).** For every controller :math:`F` with :math:`K` memory
    states,

    .. math:: L_K := V^*(b_0) - V^F(b_0) \ge \min_a \Big[V^*(b_0) - Q^*(b_0, a) + \gamma\,
              D_K(\mu_1^a)\Big], \qquad \mu_1^a = \sum_o P(o|b_0,a)\,\delta_{\tau(b_0,a,o)} .

    Proof sketch: with first action :math:`a`, :math:`Q^*(b_0,a) - V^F(b_0) = \gamma\sum_o
    P(o|b_0,a)[V^*(b_1^o) - b_1^o\cdot W_{m_1}]`; the histories reaching one memory state share the
    linear continuation :math:`b\cdot W_m \le V^*(b)`, so the cell's contribution is at least its
    Jensen gap; at most :math:`K` cells give at least :math:`D_K`. Also valid with
    :math:`D_\mu(\log K) \le D_K` in place of :math:`D_K`.

    Kind: ``exact``. Status: reconstructed by the project (pomdp reconstruction notes, section 1.3,
    converse).

    Parameters
    ----------
    value_b0 : float
        :math:`V^*(b_0)`; a lower bound of it keeps the result a valid lower bound.
    q_values : array-like of shape (A,)
        :math:`Q^*(b_0, a)` per first action; upper bounds keep the result valid.
    distortions : array-like of shape (A,)
        :math:`D_K(\mu_1^a)` per first action; lower bounds keep the result valid.
    discount : float
        Discount factor :math:`\gamma`, in [0, 1).

    Returns
    -------
    float
        The lower bound on :math:`L_K`, clipped at 0.

    Examples
    --------
    >>> converse_depth1(10.0, [10.0, 4.0], [2.0, 0.0], 0.5)
    1.0
    """
    v = value_b0
    q = _array(q_values, "q_values", 1)
    D = _array(distortions, "distortions", 1)
    if q.shape != D.shape:
        raise ValueError("'q_values' and 'distortions' must have the same shape (A,).")
    return float(max(0.0, np.min(v - q + discount * D)))
