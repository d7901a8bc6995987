r"""Bounds of online class-fair matching (Borst & Springer 2026) and a feasibility certificate.

Pure numpy functions of the threshold :math:`\gamma`, the fairness level :math:`\alpha` and instance
sizes. Each docstring states the theorem, its assumptions, the source and the kind of bound
(also recorded in :data:`BOUND_KIND`). Status tags follow the reconstruction notes
(:doc:`/fair_matching_reconstruction`; its sections and statements T1, T2, ... are cited below):
**[C]** confirmed by the paper's abstract or a primary source, **[R]** reconstructed by the
project from prior work, **[D]** derived with a proof sketch.

Sources
-------
* [BS26] S. Borst, M. Springer, "Beyond the Half-Approximation: Fair and Efficient Online Class
  Matching", arXiv:2605.23408 (2026). Only the abstract was available.
* [H23] H. Hosseini, Z. Huang, A. Igarashi, N. Shah, "Class Fairness in Online Matching",
  AAAI 2023 (arXiv:2203.03751).
* [H24] M. Hajiaghayi, S. Chashm Jahan, M. Sharifi, S. Shin, M. Springer, "Fairness and Efficiency
  in Online Class Matching", NeurIPS 2024 (arXiv:2410.19163).

Setting: unit-demand agents in ``k`` classes, items arriving online, unweighted edges. USW is the
total matched mass divided by the offline maximum matching OPT; :math:`\alpha`-CEF means
:math:`u_i(X_i) \ge \alpha\, u_i(X_j)` for all classes :math:`i \ne j` (ex ante,
:math:`\mathbb E u_i(X_i) \ge \alpha\, \mathbb E u_i(X_j)`, for randomised algorithms).

This module imports nothing from ``algos``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from theory._checks import Bool, InBody, Int, Option, Real, domain

__all__ = [
    "BOUND_KIND",
    "BOUND_KIND_INDIVISIBLE",
    "KNOWN_BOUNDS",
    "KnownBound",
    "usw_lower_bound",
    "cef_lower_bound",
    "usw_upper_bound",
    "usw_upper_bound_finite",
    "prior_usw_upper_bound",
    "gamma_for_cef",
    "nonwasteful_usw_lower_bound",
    "known_bound",
    "check_allocation",
    "AllocationCheck",
]

#: Kind of each bound function as called with its defaults (divisible items).
BOUND_KIND = {
    "usw_lower_bound": "exact",
    "cef_lower_bound": "exact",
    "usw_upper_bound": "asymptotic",
    "usw_upper_bound_finite": "exact",
    "prior_usw_upper_bound": "asymptotic",
    "gamma_for_cef": "exact",
    "nonwasteful_usw_lower_bound": "exact",
}

#: Kind of the same functions when read for the *indivisible* (randomised, HybridRanking) algorithm.
BOUND_KIND_INDIVISIBLE = {
    "usw_lower_bound": "in expectation",
    "cef_lower_bound": "in expectation",
    "gamma_for_cef": "in expectation",
}

_E = math.e
_CEF_MAX_DIVISIBLE = 1.0 - 1.0 / _E  # 1 - e^{-1}: the CEF reached at gamma = 1
_CEF_MAX_INDIVISIBLE = 0.5  # gamma / 2 at gamma = 1


# ============================================================================================ checks
_UNIT = Real(0.0, 1.0, array=True)


def _out(x):
    """Python float for 0-d results, ndarray otherwise."""
    x = np.asarray(x, dtype=np.float64)
    return float(x) if x.ndim == 0 else x


# ============================================================================================ bounds
@domain(gamma=_UNIT)
def usw_lower_bound(gamma):
    r"""Welfare guarantee of threshold equal-filling: :math:`1 - e^{\gamma-1}/(1+\gamma)` of OPT.

    **Theorem (T1, T3 of the fair_matching reconstruction notes).** For every :math:`\gamma \in [0, 1]`, every instance
    and every arrival order, the divisible algorithm ``ThresholdEqualFilling(gamma)`` ("EFTT") allocates

    .. math:: \mathrm{ALG} \ \ge\ \Big(1 - \frac{e^{\gamma - 1}}{1 + \gamma}\Big)\,\mathrm{OPT},

    and the indivisible ``HybridRanking(gamma)`` satisfies the same inequality in expectation,
    :math:`\mathbb E[\mathrm{ALG}] \ge (1 - e^{\gamma-1}/(1+\gamma))\,\mathrm{OPT}`.

    Assumptions: unit-demand agents, unweighted edges, adversarial arrival order.

    Kind: ``exact`` (divisible); ``in expectation`` (indivisible, see
    :data:`BOUND_KIND_INDIVISIBLE`). Status: [C] formula from the abstract of [BS26];
    [D] primal-dual proof sketch with :math:`g(x) = c` on :math:`[0,\gamma)` and
    :math:`g(x) = c(1+\gamma)e^{x-\gamma}` on :math:`[\gamma, 1]`, :math:`c = e^{\gamma-1}/(1+\gamma)`
    (fair_matching reconstruction notes, section 1.2). At :math:`\gamma = 0` it is :math:`1 - 1/e` (water-filling), at
    :math:`\gamma = 1` it is 1/2 (EQUAL-FILLING). Decreasing in :math:`\gamma`.

    Parameters
    ----------
    gamma : float or array-like of float in [0, 1]

    Returns
    -------
    float or ndarray

    Raises
    ------
    TypeError
        Non-numeric ``gamma``.
    ValueError
        ``gamma`` outside [0, 1] or NaN.

    References
    ----------
    S. Borst, M. Springer, arXiv:2605.23408 (2026), abstract.

    Examples
    --------
    >>> round(usw_lower_bound(0.5), 4)
    0.5956
    >>> usw_lower_bound(1.0)
    0.5
    """
    return _out(1.0 - np.exp(np.asarray(gamma) - 1.0) / (1.0 + np.asarray(gamma)))


@domain(gamma=_UNIT, divisible=Bool())
def cef_lower_bound(gamma, divisible=True):
    r"""CEF guarantee of the threshold algorithms: :math:`1 - e^{-\gamma}` (divisible) or :math:`\gamma/2`.

    **Theorem (T2).** Divisible items: the allocation of ``ThresholdEqualFilling(gamma)`` satisfies,
    for all classes :math:`i \ne j`,

    .. math:: u_i(X_i) \ \ge\ (1 - e^{-\gamma})\, u_i(X_j).

    **Theorem (T3).** Indivisible items: ``HybridRanking(gamma)`` is :math:`\gamma/2`-CEF ex ante,

    .. math:: \mathbb E[u_i(X_i)] \ \ge\ \tfrac{\gamma}{2}\, \mathbb E[u_i(X_j)].

    Assumptions: as :func:`usw_lower_bound`. Kind: ``exact`` (divisible), ``in expectation``
    (indivisible, ex ante: a ratio of means, not a mean of ratios). Status: [C] formulas from the
    abstract of [BS26]; the divisible value is the ratio of water-filling with capacity
    :math:`\gamma` against a capacity-1 benchmark ([D] intuition, fair_matching reconstruction notes, section 1.2).
    Increasing in
    :math:`\gamma`; at :math:`\gamma = 1` it is :math:`1 - 1/e` (EQUAL-FILLING, [H23]) resp. 1/2
    ([H24]).

    .. note:: reconstructed: the indivisible rule "Hybrid Ranking" and the reading of
       :math:`\gamma/2` as an ex-ante statement follow the project's reconstruction (section 1.3 [R]).
       The divisible bound depends on the fair-phase rule: with the equal split (the package's
       default) it held on every random and hill-climbed instance we tried; the reconstruction's
       min-utility rule violates it for :math:`\gamma \ge 0.7` (counterexample in
       ``docs/fair_matching.md``).

    Parameters
    ----------
    gamma : float or array-like of float in [0, 1]
    divisible : bool, default=True

    Returns
    -------
    float or ndarray

    Raises
    ------
    TypeError, ValueError
        As :func:`usw_lower_bound`; ``TypeError`` if ``divisible`` is not a bool.

    Examples
    --------
    >>> round(cef_lower_bound(0.5), 4), cef_lower_bound(0.5, divisible=False)
    (0.3935, 0.25)
    """
    g = np.asarray(gamma, dtype=np.float64)
    return _out(-np.expm1(-g) if divisible else 0.5 * g)


@domain(alpha=_UNIT)
def usw_upper_bound(alpha):
    r"""Price of fairness: no non-wasteful :math:`\alpha`-CEF algorithm beats :math:`1 - e^{\alpha-1}/(1+\alpha)`.

    **Theorem (T4).** For every :math:`\alpha \in [0, 1]`, every non-wasteful online algorithm that
    is :math:`\alpha`-CEF has, on some instances,

    .. math:: \frac{\mathrm{ALG}}{\mathrm{OPT}} \ \le\ \frac{1 + \alpha - e^{\alpha-1}}{1 + \alpha}
              \;+\; o(1).

    The right side equals :func:`usw_lower_bound` at :math:`\gamma = \alpha`
    (:math:`1 - e^{\alpha-1}/(1+\alpha)`), so threshold equal-filling is optimal at equal
    threshold; at equal *CEF level* it lies below (it reaches only :math:`1-e^{-\gamma} < \gamma`).

    Assumptions: non-wasteful algorithms, divisible or indivisible; the bound is approached on the
    instance family UB(:math:`\alpha`, n, k) as :math:`n, k \to \infty` (fair_matching reconstruction notes, section
    2.1, [R]). Kind: ``asymptotic``. Status: [C] formula from the abstract of [BS26].

    Parameters
    ----------
    alpha : float or array-like of float in [0, 1]

    Returns
    -------
    float or ndarray

    Raises
    ------
    TypeError, ValueError
        As :func:`usw_lower_bound` (for ``alpha``).

    Examples
    --------
    >>> round(usw_upper_bound(0.25), 4)
    0.6221
    """
    a = np.asarray(alpha, dtype=np.float64)
    return _out((1.0 + a - np.exp(a - 1.0)) / (1.0 + a))


@domain(alpha=_UNIT, n=Int(1), k=Int(1))
def usw_upper_bound_finite(alpha, n, k):
    r"""Finite-size consistency check on UB(:math:`\alpha`, n, k) of the price-of-fairness bound.

    **Project check (T4, finite form).** On the instance family UB(:math:`\alpha`, n, k) of the fair_matching
    reconstruction notes, section 2.1 (classes :math:`A_1..A_k` of n agents, a victim class of
    :math:`M = \mathrm{round}(n(1+k\alpha))` agents), ``ThresholdEqualFilling`` with
    :math:`\gamma = -\ln(1-\alpha)` should satisfy

    .. math:: \frac{\mathrm{ALG}}{\mathrm{OPT}} \ \le\
              \frac{1 + k\alpha + k(1 - e^{\alpha-1})}{1 + k\alpha + k} + \frac1n ,

    where :math:`1/n` absorbs the discreteness of the triangular batches. As :math:`k \to \infty`
    the first term tends to :func:`usw_upper_bound`. The value may exceed 1 for small ``n``; it
    is not capped.

    Kind: ``exact`` on the family, for the project's algorithm only (the theorem T4 covers all
    algorithms but only asymptotically). Status: [R].

    .. note:: reconstructed: the instance family and this finite-size form are the project's
       consistency check (fair_matching reconstruction notes, section 2, T4 check), not a statement of [BS26].

    Parameters
    ----------
    alpha : float or array-like of float in [0, 1]
    n : int >= 1
        Agents per class :math:`A_i`.
    k : int >= 1
        Number of classes :math:`A_i` (the victim class not counted).

    Returns
    -------
    float or ndarray

    Raises
    ------
    TypeError
        Non-numeric ``alpha``; non-integer ``n`` or ``k``.
    ValueError
        ``alpha`` outside [0, 1]; ``n`` or ``k`` below 1.

    Examples
    --------
    >>> round(usw_upper_bound_finite(0.3, 1000, 10**6), 3) == round(usw_upper_bound(0.3) + 1e-3, 3)
    True
    """
    a = np.asarray(alpha, dtype=np.float64)
    return _out((1.0 + k * a + k * (1.0 - np.exp(a - 1.0))) / (1.0 + k * a + k) + 1.0 / n)


@domain(alpha=_UNIT)
def prior_usw_upper_bound(alpha):
    r"""Prior price-of-fairness bound of [H24], reconstructed as :math:`1/(1+\alpha)`.

    **Statement (T5).** Every :math:`\alpha`-CEF online algorithm has
    :math:`\mathrm{ALG}/\mathrm{OPT} \le 1/(1+\alpha)` on some instances. It equals :math:`1 - 1/e`
    (the USW reachable without fairness) at :math:`\alpha = 1/(e-1) \approx 0.582`, matching the
    abstract of [BS26]: the prior bound is vacuous for :math:`\alpha < 0.58`.

    Kind: ``asymptotic``. Status: [R].

    .. note:: reconstructed from [H24] via the abstract of [BS26] (the inverse-proportional form and
       the 0.58 crossing point are consistent); the exact statement in [H24] was not available.

    Parameters
    ----------
    alpha : float or array-like of float in [0, 1]

    Returns
    -------
    float or ndarray

    Raises
    ------
    TypeError, ValueError
        As :func:`usw_upper_bound`.

    Examples
    --------
    >>> prior_usw_upper_bound(1.0)
    0.5
    """
    return _out(1.0 / (1.0 + np.asarray(alpha, dtype=np.float64)))


@domain(alpha=Real(0.0, 1.0, array=True), divisible=Bool())
def gamma_for_cef(alpha, divisible=True):
    r"""Threshold that guarantees a target CEF level: :math:`-\ln(1-\alpha)` (divisible) or :math:`2\alpha`.

    The inverse of :func:`cef_lower_bound`: with :math:`\gamma` = ``gamma_for_cef(alpha)`` the
    divisible algorithm is :math:`\alpha`-CEF on every instance, and the indivisible one is
    :math:`\alpha`-CEF ex ante. The smallest such :math:`\gamma` also gives the best welfare
    guarantee, since :func:`usw_lower_bound` decreases in :math:`\gamma`. Reachable levels:
    :math:`\alpha \le 1 - 1/e` (divisible), :math:`\alpha \le 1/2` (indivisible).

    Kind: ``exact`` (divisible), ``in expectation`` (indivisible). Status: [C] (inverse of T2/T3).

    Parameters
    ----------
    alpha : float or array-like of float
        In :math:`[0, 1 - 1/e]` if ``divisible`` else in :math:`[0, 1/2]`.
    divisible : bool, default=True

    Returns
    -------
    float or ndarray
        In [0, 1].

    Raises
    ------
    TypeError
        Non-numeric ``alpha``, non-bool ``divisible``.
    ValueError
        ``alpha`` outside the reachable range.

    Examples
    --------
    >>> round(gamma_for_cef(1 - math.exp(-0.5)), 12)
    0.5
    >>> gamma_for_cef(0.25, divisible=False)
    0.5
    """
    reach = _CEF_MAX_DIVISIBLE if divisible else _CEF_MAX_INDIVISIBLE
    a = np.asarray(alpha, dtype=np.float64)
    if np.any(a > reach):  # the reachable range depends on 'divisible': checked here
        text = "1 - 1/e (about 0.632)" if divisible else "0.5"
        raise ValueError(f"'alpha' must be a float in [0, {text}]; got {float(a[a > reach].flat[0])!r}.")
    g = -np.log1p(-a) if divisible else 2.0 * a
    return _out(np.clip(g, 0.0, 1.0))


@domain()
def nonwasteful_usw_lower_bound():
    r"""Every non-wasteful algorithm is 1/2-USW: returns 0.5.

    **Fact (T6).** A non-wasteful allocation is a maximal (fractional) matching, and a maximal
    matching has at least half the size of a maximum one: :math:`\mathrm{ALG} \ge \mathrm{OPT}/2`.

    Kind: ``exact``. Status: [C] (standard; stated in [H24]).

    Returns
    -------
    float
        0.5.

    Examples
    --------
    >>> nonwasteful_usw_lower_bound()
    0.5
    """
    return 0.5


# ============================================================================================ known constants (T6)
@dataclass(frozen=True)
class KnownBound:
    """A constant from prior work, with its meaning, kind, source and status tag.

    Parameters
    ----------
    value : float
        The constant.
    statement : str
        What it bounds.
    kind : str
        Kind of bound (as in :data:`BOUND_KIND`).
    source : str
        Where it comes from.
    status : str, default="C"
        Status tag.
    """

    value: float
    statement: str
    kind: str
    source: str
    status: str = "C"


#: Constants of prior work (fair_matching reconstruction notes, T6). Keys are stable identifiers; see
#: :func:`known_bound`.
KNOWN_BOUNDS = {
    "nonwasteful_usw": KnownBound(
        0.5, "every non-wasteful algorithm is 1/2-USW (maximal matching)", "exact", "folklore; H24"
    ),
    "equal_filling_cef": KnownBound(
        _CEF_MAX_DIVISIBLE, "EQUAL-FILLING (divisible) is (1 - 1/e)-CEF", "exact", "H23"
    ),
    "equal_filling_cprop": KnownBound(
        _CEF_MAX_DIVISIBLE, "EQUAL-FILLING (divisible) is (1 - 1/e)-CPROP, and this is tight", "exact", "H23"
    ),
    "cef_upper_bound_divisible_h23": KnownBound(
        0.75, "no divisible online algorithm is alpha-CEF for alpha > 3/4", "exact", "H23"
    ),
    "cef_upper_bound_indivisible_h24": KnownBound(
        0.761, "no non-wasteful indivisible algorithm is alpha-CEF for alpha > 0.761", "exact", "H24"
    ),
    "cef_upper_bound_divisible_h24": KnownBound(
        0.677, "no non-wasteful divisible algorithm is alpha-CEF for alpha > 0.677", "exact", "H24"
    ),
    "h24_randomized_half": KnownBound(
        0.5, "H24's non-wasteful randomised algorithm is 1/2-CEF, 1/2-CPROP and 1/2-USW", "in expectation", "H24"
    ),
}


@domain(name=Option(*KNOWN_BOUNDS))
def known_bound(name):
    r"""Value of a constant from prior work (fair_matching reconstruction notes, T6), by key of :data:`KNOWN_BOUNDS`.

    Keys: ``nonwasteful_usw`` (1/2), ``equal_filling_cef`` and ``equal_filling_cprop``
    (:math:`1 - 1/e`, [H23]), ``cef_upper_bound_divisible_h23`` (3/4), ``cef_upper_bound_indivisible_h24``
    (0.761), ``cef_upper_bound_divisible_h24`` (0.677), ``h24_randomized_half`` (1/2).

    Parameters
    ----------
    name : str
        A key of :data:`KNOWN_BOUNDS`.

    Returns
    -------
    float
        The constant.

    Raises
    ------
    ValueError
        Unknown key.

    Examples
    --------
    >>> known_bound("cef_upper_bound_divisible_h23")
    0.75
    """
    return KNOWN_BOUNDS[name].value


# ============================================================================================ certificate
_MAX_LISTED = 20  # violations listed per kind; the rest are counted


@dataclass
class AllocationCheck:
    """Result of :func:`check_allocation`: ``ok`` and a list of human-readable ``violations``.

    Truthy iff ``ok``.

    Parameters
    ----------
    ok : bool
        Whether the allocation is feasible.
    violations : list of str
        Human-readable descriptions of the violations.
    """

    ok: bool
    violations: list = field(default_factory=list)

    def __bool__(self):
        return bool(self.ok)

    def __str__(self):
        if self.ok:
            return "allocation OK"
        return "allocation has violations:\n  " + "\n  ".join(self.violations)


def _as_2d(value, name):
    """Dense float64 2-d array from an ndarray/list or a scipy sparse matrix (no algos import)."""
    if hasattr(value, "toarray") and hasattr(value, "nnz"):  # scipy sparse
        import scipy.sparse as sp

        if not sp.issparse(value):  # pragma: no cover - exotic duck types
            raise TypeError(f"'{name}' must be a numpy array or a scipy sparse matrix; got {type(value).__name__}.")
        if value.dtype.kind not in "biuf":
            raise TypeError(f"'{name}' must hold real numbers; got dtype {value.dtype}.")
        arr = np.asarray(value.toarray(), dtype=np.float64)
    elif isinstance(value, (np.ndarray, list, tuple)):
        try:
            arr = np.asarray(value)
        except Exception as exc:
            raise TypeError(f"'{name}' must be a 2-d numeric array.") from exc
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"'{name}' must hold real numbers; got an array of dtype {arr.dtype}.")
        arr = arr.astype(np.float64)
    else:
        raise TypeError(
            f"'{name}' must be a numpy array or a scipy sparse matrix (agents x items); got {type(value).__name__}."
        )
    if arr.ndim != 2:
        raise ValueError(f"'{name}' must be 2-dimensional (agents x items); got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        a, t = (int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise ValueError(f"'{name}' must contain only finite values; got {float(arr[a, t])!r} at agent {a}, item {t}.")
    return arr


def _listed(msgs):
    if len(msgs) > _MAX_LISTED:
        return msgs[:_MAX_LISTED] + [f"... and {len(msgs) - _MAX_LISTED} more of this kind"]
    return msgs


@domain(biadjacency=InBody("2-d real array (dense or scipy sparse), finite"),
        allocation=InBody("2-d real array of the shape of 'biadjacency', finite"),
        integral=Bool(), non_wasteful=Bool(), tol=Real(0.0))
def check_allocation(biadjacency, allocation, *, integral=False, non_wasteful=True, tol=1e-9):
    r"""Certificate that an allocation is a feasible (fractional) matching of the instance.

    Checks, with absolute tolerance ``tol``:

    1. :math:`X_{at} \ge -\mathrm{tol}` (non-negative);
    2. :math:`|X_{at}| \le \mathrm{tol}` where :math:`B_{at} = 0` (nothing off the edges);
    3. :math:`\sum_a X_{at} \le 1 + \mathrm{tol}` for every item;
    4. :math:`\sum_t X_{at} \le 1 + \mathrm{tol}` for every agent;
    5. with ``integral=True``: every entry within ``tol`` of 0 or 1;
    6. with ``non_wasteful=True`` (online sense, columns in arrival order): if item ``t`` keeps
       :math:`1 - \sum_a X_{at} > \mathrm{tol}`, every neighbour ``a`` has load
       :math:`\sum_{s \le t} X_{as} \ge 1 - \mathrm{tol}` after item ``t``.

    Kind: certificate (not a bound). Status: [C] (definitions of fair_matching reconstruction notes, section 1.1).

    Parameters
    ----------
    biadjacency : ndarray or scipy sparse, shape (n_agents, n_items)
        Nonzero = edge (agent likes item); columns in arrival order.
    allocation : ndarray or scipy sparse, shape (n_agents, n_items)
    integral : bool, default=False
    non_wasteful : bool, default=True
    tol : float >= 0, default=1e-9

    Returns
    -------
    AllocationCheck
        ``.ok`` (bool), ``.violations`` (list of str, at most 20 listed per kind); truthy iff ok.

    Raises
    ------
    TypeError
        Non-array inputs, non-numeric dtypes, non-bool flags, non-numeric ``tol``.
    ValueError
        Not 2-d, mismatched shapes, non-finite entries, negative ``tol``.

    Examples
    --------
    >>> B = np.array([[1, 1], [0, 1]])
    >>> bool(check_allocation(B, np.array([[1.0, 0.0], [0.0, 1.0]])))
    True
    >>> check_allocation(B, np.array([[0.0, 0.0], [0.0, 1.0]])).violations
    ['wasteful: item 0 keeps 1 unallocated while neighbour agent 0 has load 0 after it']
    """
    B = _as_2d(biadjacency, "biadjacency")
    X = _as_2d(allocation, "allocation")
    if X.shape != B.shape:
        raise ValueError(f"'allocation' must have the shape of 'biadjacency' {B.shape}; got shape {X.shape}.")
    edge = B != 0
    violations = []

    msgs = [
        f"negative: X[{a}, {t}] = {X[a, t]:.6g} at agent {a}, item {t} (below 0 by {-X[a, t]:.3g})"
        for a, t in np.argwhere(X < -tol)
    ]
    violations += _listed(msgs)
    msgs = [
        f"off edge: X[{a}, {t}] = {X[a, t]:.6g} but agent {a} does not like item {t}"
        for a, t in np.argwhere(~edge & (np.abs(X) > tol))
    ]
    violations += _listed(msgs)
    item_sum = X.sum(axis=0)
    msgs = [
        f"item {t} over-allocated: total {item_sum[t]:.6g} exceeds 1 by {item_sum[t] - 1:.3g}"
        for t in np.flatnonzero(item_sum > 1.0 + tol)
    ]
    violations += _listed(msgs)
    load = X.sum(axis=1)
    msgs = [
        f"agent {a} over-allocated: load {load[a]:.6g} exceeds 1 by {load[a] - 1:.3g}"
        for a in np.flatnonzero(load > 1.0 + tol)
    ]
    violations += _listed(msgs)
    if integral:
        dist = np.minimum(np.abs(X), np.abs(X - 1.0))
        msgs = [
            f"not integral: X[{a}, {t}] = {X[a, t]:.6g} at agent {a}, item {t} ({dist[a, t]:.3g} from 0/1)"
            for a, t in np.argwhere(dist > tol)
        ]
        violations += _listed(msgs)
    if non_wasteful:
        load_after = np.cumsum(np.where(edge, X, 0.0), axis=1)  # load of a after item t (on-edge mass)
        deficit = 1.0 - item_sum
        bad = edge & (deficit[None, :] > tol) & (load_after < 1.0 - tol)
        msgs = []
        for t in np.flatnonzero(bad.any(axis=0)):
            a = int(np.flatnonzero(bad[:, t])[0])
            msgs.append(
                f"wasteful: item {t} keeps {deficit[t]:.6g} unallocated while neighbour agent {a} "
                f"has load {load_after[a, t]:.6g} after it"
            )
        violations += _listed(msgs)
    return AllocationCheck(ok=not violations, violations=violations)
