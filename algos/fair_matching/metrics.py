r"""Offline evaluators for online class matching: OPT, bundle values, CEF, USW, CPROP, waste.

All functions take an :class:`~algos.fair_matching.OnlineMatchingInstance` and an *allocation*: a
scipy sparse matrix or a dense array of shape ``(n_agents, n_items)``, agents x items, column ``t``
= item ``t`` in arrival order. The algorithms of this package return a ``scipy.sparse.csc_array``
with the instance's own ``indptr``/``indices`` layout, but any layout is accepted.

Definitions (fair_matching reconstruction notes, section 1.1). Agent ``a`` has load :math:`x_a = \sum_t X_{a t}`; class
``i`` has utility :math:`u_i(X_i) = \sum_{a \in N_i} x_a`; the bundle of class ``j`` is the item vector
:math:`c_j[t] = \sum_{b \in N_j} X_{b t}`, and :math:`u_i(X_j)` is the value of a maximum
fractional b-matching between the agents :math:`N_i` (capacity 1) and the items (capacity
:math:`c_j[t]`) on the input edges, i.e. a maximum flow.

Every allocation is checked first (tolerance ``1e-9``): finite, non-negative, zero off the
instance's edges, each item given at most 1 and each agent at most 1. An infeasible allocation
raises ``ValueError`` naming the agent/item and the amount (use
:func:`theory.fair_matching.check_allocation` to list all violations instead of raising).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import maximum_bipartite_matching

from .._validation import (
    check_array_1d,
    check_bool,
    check_option,
    check_random_state,
    check_scalar_float,
    check_scalar_int,
)
from ._instance import OnlineMatchingInstance, as_instance  # noqa: F401 (the docstring examples build instances)
from ._maxflow import _bundle_flow
from ._metrics_core import (
    _cef_matrix_core,
    _class_utility,
    _edge_arrays,
    _prefix_len,
    _prepare,
    _ratio_from_matrix,
)
from ._metrics_runs import ExAnteCEF, cef_trajectory, ex_ante_cef_ratio, ex_post_cef_ratio

__all__ = [
    "opt_matching_size",
    "bundle_value",
    "cef_matrix",
    "cef_ratio",
    "usw_ratio",
    "cprop_ratio",
    "is_non_wasteful",
    "cef_trajectory",
    "ex_ante_cef_ratio",
    "ex_post_cef_ratio",
    "ExAnteCEF",
]

def opt_matching_size(instance, n_items=None):
    r"""Size of a maximum matching of the (prefix of the) instance: the offline optimum OPT.

    OPT is the maximum-cardinality matching of the bipartite graph agents x items. The fractional
    optimum (max fractional matching) equals it because the bipartite incidence matrix is totally
    unimodular, so OPT is also the benchmark for divisible algorithms (fair_matching reconstruction notes, section 1.1,
    USW).

    Parameters
    ----------
    instance : OnlineMatchingInstance
    n_items : int in [0, instance.n_items], default=None
        Use only the first ``n_items`` arrivals; ``None`` means the whole instance.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        If ``instance`` is not an :class:`OnlineMatchingInstance` or ``n_items`` is not an int.
    ValueError
        If ``n_items`` is out of range.

    See Also
    --------
    usw_ratio : allocated mass divided by OPT.

    Notes
    -----
    Hopcroft-Karp via :func:`scipy.sparse.csgraph.maximum_bipartite_matching`,
    :math:`O(|E| \sqrt{|V|})`.

    Examples
    --------
    >>> inst = OnlineMatchingInstance(3, [0, 0, 1], [[0, 1, 2], [0], [0]])
    >>> opt_matching_size(inst), opt_matching_size(inst, n_items=1)
    (2, 1)
    """
    instance = as_instance(instance)
    m = _prefix_len(instance, n_items)
    nnz = int(instance.indptr[m])
    if nnz == 0:
        return 0
    B = sp.csr_array(instance.biadjacency(m))
    match = maximum_bipartite_matching(B, perm_type="column")
    return int(np.count_nonzero(match >= 0))


def bundle_value(instance, class_i, item_capacity):
    r"""Value :math:`u_i(c)` of an item-capacity vector for class ``i``, by maximum flow.

    The value is the largest fractional b-matching between the agents :math:`N_i` of class ``i``
    (capacity 1 each) and the items (capacity ``item_capacity[t]``), using only the instance's
    edges. With ``item_capacity`` = the bundle :math:`c_j` of class ``j`` this is
    :math:`u_i(X_j)` (fair_matching reconstruction notes, section 1.1).

    Parameters
    ----------
    instance : OnlineMatchingInstance
    class_i : int in [0, n_classes - 1]
    item_capacity : array-like of float, shape (n_items,)
        Non-negative, finite capacities, one per item in arrival order.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        Wrong types (not an instance, a non-integer class, non-numeric capacities).
    ValueError
        Class out of range, wrong length, negative or non-finite capacity.

    See Also
    --------
    cef_matrix : all values :math:`u_i(X_j)` at once.

    Notes
    -----
    Max flow on the network source -> agent (1) -> item (:math:`\infty`, on edges) -> sink
    (:math:`c[t]`), keeping only items with :math:`c[t] > 0` that have a neighbour in class ``i``.
    It is solved by a numba Dinic kernel (BFS level graph + iterative DFS with current-arc pointers;
    residual capacities below ``1e-12`` count as saturated). By max-flow/min-cut and total
    unimodularity,

    .. math:: u_i(c) = \min_{T \subseteq N_i} \Big( |N_i \setminus T| + \sum_{t \in N(T)} c[t] \Big).

    With 0/1 item capacities the network is a unit network and Dinic needs
    :math:`O(\sqrt{|V|})` phases of :math:`O(|E|)` work each; for fractional capacities the
    general bound :math:`O(|V|^2 |E|)` applies.

    Examples
    --------
    >>> inst = OnlineMatchingInstance(3, [0, 0, 1], [[0, 1, 2], [0], [0]])
    >>> bundle_value(inst, 0, [0.5, 1.0, 1.0])
    1.5
    >>> bundle_value(inst, 1, [0.5, 1.0, 1.0])
    0.5
    """
    instance = as_instance(instance)
    class_i = check_scalar_int(class_i, "class_i", low=0, high=instance.n_classes - 1)
    cap = check_array_1d(item_capacity, "item_capacity", dtype="float")
    if cap.shape[0] != instance.n_items:
        raise ValueError(
            f"'item_capacity' must have one entry per item (n_items={instance.n_items}); got length {cap.shape[0]}."
        )
    if cap.size and cap.min() < 0:
        t = int(np.argmin(cap))
        raise ValueError(f"'item_capacity' must be non-negative; got {float(cap[t])!r} at index {t}.")
    agent, item, cls = _edge_arrays(instance, instance.n_items)
    return _bundle_flow(agent, item, cls, class_i, np.ascontiguousarray(cap))


def cef_matrix(instance, allocation, n_items=None, pairs="all", *, n_pairs=None, random_state=None):
    r"""Matrix of class values :math:`V_{ij} = u_i(X_j)`: what class ``i`` gets from class ``j``'s bundle.

    The diagonal is the class utility :math:`u_i(X_i) = \sum_{a \in N_i} x_a` (the allocation
    restricted to a class is already a matching, so no flow is needed). An off-diagonal entry is the
    max-flow value of class ``j``'s bundle :math:`c_j` for class ``i`` (see :func:`bundle_value`).

    Parameters
    ----------
    instance : OnlineMatchingInstance
    allocation : scipy sparse matrix or ndarray, shape (n_agents, n_items)
        Agents x items; with ``n_items`` set, shape ``(n_agents, n_items)`` of the prefix is also
        accepted.
    n_items : int in [0, instance.n_items], default=None
        Evaluate after the first ``n_items`` arrivals (prefix); ``None`` means all items.
    pairs : {"all", "sampled"}, default="all"
        ``"all"`` computes every off-diagonal entry (``k (k - 1)`` max flows at most).
        ``"sampled"`` computes ``n_pairs`` ordered pairs ``(i, j)``, ``i != j``, drawn uniformly
        without replacement; the other off-diagonal entries are NaN.
    n_pairs : int >= 1, default=None
        Required when ``pairs="sampled"`` (capped at ``k (k - 1)``).
    random_state : None, int or numpy Generator, default=None
        Seed for the pair sample.

    Returns
    -------
    ndarray of float64, shape (n_classes, n_classes)

    Raises
    ------
    TypeError
        Wrong types.
    ValueError
        Wrong shape, an infeasible allocation (negative, off-edge, item or agent over-allocated,
        tolerance ``1e-9``), ``n_items`` out of range, an unknown ``pairs``.

    See Also
    --------
    cef_ratio, bundle_value

    Notes
    -----
    Before each flow the cheap bound
    :math:`u_i(X_j) \le \min(|N_i|, \sum_{t:\, N(t) \cap N_i \ne \emptyset} c_j[t])` is evaluated,
    and the flow is skipped when it is 0. Cost: :math:`O(k \cdot |E|)` numpy work plus at most
    :math:`k(k-1)` max flows.

    Examples
    --------
    >>> inst = OnlineMatchingInstance(2, [0, 1], [[0, 1], [0, 1]])
    >>> X = np.array([[1.0, 0.0], [0.0, 0.5]])
    >>> cef_matrix(inst, X)
    array([[1. , 0.5],
           [1. , 0.5]])
    """
    instance = as_instance(instance)
    m = _prefix_len(instance, n_items)
    check_option(pairs, "pairs", ("all", "sampled"))
    k = instance.n_classes
    need = None
    if pairs == "sampled":
        if n_pairs is None:
            raise ValueError("'n_pairs' must be an int in [1, inf] when pairs='sampled'; got None.")
        n_pairs = check_scalar_int(n_pairs, "n_pairs", low=1)
        rng = check_random_state(random_state)
        off = np.flatnonzero(~np.eye(k, dtype=bool).ravel())
        chosen = rng.choice(off, size=min(n_pairs, off.shape[0]), replace=False) if off.size else off
        need = np.zeros(k * k, dtype=bool)
        need[chosen] = True
        need = need.reshape(k, k)
    E = _prepare(instance, allocation, m)
    return _cef_matrix_core(E, k, instance.class_sizes.astype(np.float64), need)


def cef_ratio(instance, allocation, n_items=None):
    r"""Realised class envy-freeness ratio :math:`\min_{i \ne j} u_i(X_i) / u_i(X_j)`.

    The minimum runs over ordered pairs with :math:`u_i(X_j) > 10^{-9}`; pairs where class ``i``
    values ``j``'s bundle at (about) 0 cannot envy and are skipped. The ratio is 1.0 when
    ``k == 1`` or when every such value is about 0 (CEF is then vacuous). An allocation is
    :math:`\alpha`-CEF iff the ratio is at least :math:`\alpha`.

    The ratio is **not capped at 1**: if every class strictly prefers its own bundle the value
    exceeds 1 (it can be as large as :math:`|N_i|/10^{-9}` in principle).

    Parameters
    ----------
    instance : OnlineMatchingInstance
    allocation : scipy sparse matrix or ndarray, shape (n_agents, n_items)
    n_items : int, default=None
        Prefix length (see :func:`cef_matrix`).

    Returns
    -------
    float

    Raises
    ------
    TypeError, ValueError
        As :func:`cef_matrix`.

    See Also
    --------
    cef_matrix, cef_trajectory, ex_ante_cef_ratio, theory.fair_matching.cef_lower_bound

    Examples
    --------
    >>> inst = OnlineMatchingInstance(2, [0, 1], [[0, 1], [0, 1]])
    >>> cef_ratio(inst, np.array([[1.0, 0.0], [0.0, 0.5]]))
    0.5
    """
    V = cef_matrix(instance, allocation, n_items)
    return _ratio_from_matrix(V)[0]


def usw_ratio(instance, allocation, n_items=None):
    r"""Utilitarian welfare ratio: total allocated mass :math:`\sum_a x_a` divided by OPT.

    OPT is the maximum matching of the same prefix (:func:`opt_matching_size`). The ratio is 1.0
    when OPT == 0 (then nothing can be allocated on an edge).

    Parameters
    ----------
    instance : OnlineMatchingInstance
    allocation : scipy sparse matrix or ndarray, shape (n_agents, n_items)
    n_items : int, default=None
        Prefix length; both the allocated mass and OPT use the first ``n_items`` items.

    Returns
    -------
    float
        In [0, 1] for feasible allocations (up to the ``1e-9`` feasibility tolerance).

    Raises
    ------
    TypeError, ValueError
        As :func:`cef_matrix`.

    See Also
    --------
    theory.fair_matching.usw_lower_bound

    Examples
    --------
    >>> inst = OnlineMatchingInstance(2, [0, 1], [[0, 1], [0]])
    >>> usw_ratio(inst, np.array([[1.0, 0.0], [0.0, 0.0]]))
    0.5
    """
    instance = as_instance(instance)
    m = _prefix_len(instance, n_items)
    E = _prepare(instance, allocation, m)
    total = float(E.x.sum())
    opt = opt_matching_size(instance, m)
    if opt == 0:
        return 1.0
    return total / opt


def cprop_ratio(instance, allocation):
    r"""Class proportionality ratio :math:`\min_i u_i(X_i) / (\tfrac1k u_i(M))` (reconstructed).

    :math:`u_i(M)` is the size of a maximum matching between class ``i``'s agents and *all* items
    (class ``i``'s value of the whole item set). Classes with :math:`u_i(M) = 0` are skipped; the
    ratio is 1.0 if every class is skipped. An allocation is :math:`\alpha`-CPROP iff the ratio is
    at least :math:`\alpha`. The ratio is not capped at 1 (it can reach ``k``).

    .. note:: reconstructed: the proportional share :math:`u_i(M)/k` is the project's reading of
       H23/H24 (fair_matching reconstruction notes, section 1.1, CPROP [R]); the papers may define the share slightly
       differently.

    Parameters
    ----------
    instance : OnlineMatchingInstance
    allocation : scipy sparse matrix or ndarray, shape (n_agents, n_items)

    Returns
    -------
    float

    Raises
    ------
    TypeError, ValueError
        As :func:`cef_matrix`.

    References
    ----------
    .. [1] H. Hosseini, Z. Huang, A. Igarashi, N. Shah, "Class Fairness in Online Matching",
       AAAI 2023 (arXiv:2203.03751).

    Examples
    --------
    >>> inst = OnlineMatchingInstance(2, [0, 1], [[0, 1], [0, 1]])
    >>> cprop_ratio(inst, np.array([[1.0, 0.0], [0.0, 0.5]]))
    1.0
    """
    instance = as_instance(instance)
    m = instance.n_items
    E = _prepare(instance, allocation, m)
    k = instance.n_classes
    util = _class_utility(E, k)
    B = sp.csr_array(instance.biadjacency(m))
    best = np.inf
    for i in range(k):
        rows = np.flatnonzero(instance.agent_class == i)
        Bi = sp.csr_array(B[rows])
        if Bi.nnz == 0:
            continue
        share = np.count_nonzero(maximum_bipartite_matching(Bi, perm_type="column") >= 0) / k
        best = min(best, util[i] / share)
    return 1.0 if best == np.inf else float(best)


def is_non_wasteful(instance, allocation, tol=1e-9, integral=False):
    r"""Whether no item kept unallocated mass while one of its neighbours still had room.

    Checked in the online sense: for every item ``t`` with :math:`1 - \sum_a X_{at} > \mathrm{tol}`,
    every neighbour ``a`` of ``t`` must have load :math:`\sum_{s \le t} X_{as} \ge 1 - \mathrm{tol}`
    *after* item ``t`` was processed (loads only grow, so this is the condition at the moment
    ``t`` left; it implies the end-of-stream condition). With ``integral=True`` the allocation must
    be a 0/1 matching (indivisible case: no item left unmatched while a neighbour was unmatched).

    A non-wasteful algorithm builds a maximal fractional matching and so is at least 1/2-USW
    (:func:`theory.fair_matching.nonwasteful_usw_lower_bound`).

    Parameters
    ----------
    instance : OnlineMatchingInstance
    allocation : scipy sparse matrix or ndarray, shape (n_agents, n_items)
    tol : float >= 0, default=1e-9
        Tolerance for "unallocated", "full", integrality and feasibility.
    integral : bool, default=False
        Require (and check) a 0/1 allocation.

    Returns
    -------
    bool

    Raises
    ------
    TypeError
        Wrong types.
    ValueError
        Wrong shape, an infeasible allocation, or a fractional entry when ``integral=True``.

    Examples
    --------
    >>> inst = OnlineMatchingInstance(2, [0, 1], [[0, 1], [0]])
    >>> is_non_wasteful(inst, np.array([[0.0, 1.0], [1.0, 0.0]]))
    True
    >>> is_non_wasteful(inst, np.array([[1.0, 0.0], [0.0, 0.0]]))
    True
    >>> is_non_wasteful(inst, np.array([[0.0, 0.0], [1.0, 0.0]]))  # item 1 dropped, agent 0 empty
    False
    """
    instance = as_instance(instance)
    tol = check_scalar_float(tol, "tol", low=0.0)
    integral = check_bool(integral, "integral")
    E = _prepare(instance, allocation, instance.n_items, tol=tol)
    if integral:
        frac = np.minimum(np.abs(E.x), np.abs(E.x - 1.0)) > tol
        if frac.any():
            e = int(np.flatnonzero(frac)[0])
            raise ValueError(
                f"'allocation' must be 0/1 when integral=True (tolerance {tol:g}); got "
                f"X[{E.agent[e]}, {E.item[e]}] = {float(E.x[e])!r}."
            )
    if E.x.shape[0] == 0:
        return True
    # load of each edge's agent after the edge's item: cumulative sums per agent in item order
    order = np.lexsort((E.item, E.agent))
    xs = E.x[order]
    cs = np.cumsum(xs)
    ag = E.agent[order]
    start = np.ones(ag.shape[0], dtype=bool)
    start[1:] = ag[1:] != ag[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(ag.shape[0]), 0))
    load_after = np.empty_like(cs)
    load_after[order] = cs - cs[first] + xs[first]
    deficit = 1.0 - np.bincount(E.item, weights=E.x, minlength=E.m)
    wasteful = (deficit[E.item] > tol) & (load_after < 1.0 - tol)
    return not bool(wasteful.any())

