r"""Instance generators: random, structured (KVV triangle, stars, complete), the UB(alpha, n, k)
family of the upper bound, and the Davis Southern Women graph shipped with networkx."""

from __future__ import annotations

import numpy as np

from .._io import check_memory_budget
from .._validation import check_random_state, check_scalar_float, check_scalar_int
from ._instance import OnlineMatchingInstance

__all__ = [
    "random_instance",
    "sparse_random_instance",
    "triangular_instance",
    "upper_bound_instance",
    "complete_instance",
    "disjoint_stars_instance",
    "davis_instance",
    "random_classes",
]


#: Bytes per edge of an instance while it is built (the int64 index, the canonical copy, a sort temporary).
_EDGE_BYTES = 24
#: Bytes per agent and per item (classes, row pointers and the item arrays' headers).
_NODE_BYTES = 128


def _check_size(n_edges, n_nodes, what, where, dense=0):
    """Refuse an instance whose estimate (Python ints: no overflow) exceeds the memory budget."""
    check_memory_budget(_EDGE_BYTES * n_edges + _NODE_BYTES * n_nodes + dense, what, where,
                        hint="choose fewer agents or items")


def random_classes(n_agents, n_classes, rng):
    """Random class labels with every class non-empty (first ``n_classes`` agents seed the classes)."""
    cls = np.concatenate([np.arange(n_classes), rng.integers(0, n_classes, size=n_agents - n_classes)])
    return rng.permutation(cls)


def random_instance(n_agents, n_items, n_classes=2, p=0.5, *, random_state=None):
    r"""Erdos-Renyi bipartite instance: each (agent, item) edge present with probability ``p``.

    Classes are drawn uniformly with every class non-empty; items arrive in a random order (the
    edges are i.i.d., so the order is exchangeable).

    Parameters
    ----------
    n_agents : int, >= 1
    n_items : int, >= 0
    n_classes : int in [1, n_agents], default=2
    p : float in [0, 1], default=0.5
    random_state : None, int or Generator

    Returns
    -------
    OnlineMatchingInstance
        The instance.

    Examples
    --------
    >>> inst = random_instance(6, 8, n_classes=3, p=0.4, random_state=0)
    >>> inst.n_agents, inst.n_items, inst.n_classes
    (6, 8, 3)
    """
    n_agents = check_scalar_int(n_agents, "n_agents", low=1)
    n_items = check_scalar_int(n_items, "n_items", low=0)
    n_classes = check_scalar_int(n_classes, "n_classes", low=1, high=n_agents)
    p = check_scalar_float(p, "p", low=0.0, high=1.0)
    _check_size(int(p * n_agents * n_items) + 1, n_agents + n_items,
                f"a random instance of {n_agents} agents x {n_items} items (a dense draw of 9 bytes per pair)",
                f"'n_agents'={n_agents}, 'n_items'={n_items}", dense=9 * n_agents * n_items)
    rng = check_random_state(random_state)
    cls = random_classes(n_agents, n_classes, rng)
    B = rng.random((n_agents, n_items)) < p
    return OnlineMatchingInstance.from_biadjacency(B, cls)


_POISSON_RATE_MAX = 1e18


def sparse_random_instance(n_agents, n_items, n_classes=2, avg_degree=5.0, *, random_state=None):
    r"""Large sparse random instance: each item picks ``Poisson(avg_degree)`` (capped at
    ``n_agents``) neighbours uniformly without replacement. Built in O(n_edges) vectorised numpy;
    10^6 items x 10^4 agents takes about a second.

    Parameters
    ----------
    n_agents : int
        Number of agents, at least 1.
    n_items : int
        Number of items, at least 0.
    n_classes : int, default=2
        Number of classes, in [1, n_agents].
    avg_degree : float, default=5.0
        Mean number of neighbours of an item, at least 0.
    random_state : None, int, SeedSequence or Generator, default=None
        Seed.

    Returns
    -------
    OnlineMatchingInstance
        The instance.
    """
    n_agents = check_scalar_int(n_agents, "n_agents", low=1)
    n_items = check_scalar_int(n_items, "n_items", low=0)
    n_classes = check_scalar_int(n_classes, "n_classes", low=1, high=n_agents)
    avg_degree = check_scalar_float(avg_degree, "avg_degree", low=0.0)
    _check_size(int(min(avg_degree, n_agents) * n_items) + 1, n_agents + n_items,
                f"a sparse random instance of {n_items} items of mean degree {min(avg_degree, n_agents):g}",
                f"'n_items'={n_items}, 'avg_degree'={avg_degree:g}")
    rng = check_random_state(random_state)
    cls = random_classes(n_agents, n_classes, rng)
    # numpy's Poisson sampler takes rates up to about 9.2e18; far beyond n_agents every draw is
    # capped at n_agents anyway, so a larger avg_degree (every agent likes every item) uses 1e18
    deg = np.minimum(rng.poisson(min(avg_degree, _POISSON_RATE_MAX), size=n_items), n_agents).astype(np.int64)
    indptr = np.zeros(n_items + 1, dtype=np.int64)
    np.cumsum(deg, out=indptr[1:])
    # draw with replacement, then the canonicalisation in the constructor drops duplicates:
    # the expected loss is ~avg_degree^2 / (2 n_agents) edges per item (negligible for n >> d)
    indices = rng.integers(0, n_agents, size=int(indptr[-1]))
    return OnlineMatchingInstance.from_csr(indptr, indices, cls, n_agents)


def triangular_instance(n, n_classes=1, *, reverse=False):
    r"""The KVV upper-triangular instance: item ``s`` is liked by agents ``s..n-1``.

    OPT = n (item s -> agent s); water-filling and RANKING reach :math:`1 - 1/e` of it as
    ``n -> infinity`` (Karp, Vazirani, Vazirani 1990). Agents are split into ``n_classes`` classes
    round-robin. With ``reverse=True`` item ``s`` is liked by agents ``0..n-1-s``.

    Parameters
    ----------
    n : int
        Number of agents and items, at least 1.
    n_classes : int, default=1
        Number of classes.
    reverse : bool, default=False
        Reverse the arrival order, as above.

    Returns
    -------
    OnlineMatchingInstance
        The instance.
    """
    n = check_scalar_int(n, "n", low=1)
    n_classes = check_scalar_int(n_classes, "n_classes", low=1, high=n)
    _check_size(n * (n + 1) // 2, 2 * n, f"the triangular instance of size {n} ({n * (n + 1) // 2} edges)",
                f"'n'={n}")
    cls = np.arange(n) % n_classes
    if reverse:
        items = [np.arange(0, n - s) for s in range(n)]
    else:
        items = [np.arange(s, n) for s in range(n)]
    return OnlineMatchingInstance(n, cls, items)


def upper_bound_instance(alpha, n, k):
    r"""The UB(alpha, n, k) family behind the price-of-fairness upper bound (fair_matching reconstruction notes, 2.1).

    Classes ``A_1..A_k`` (labels ``0..k-1``) have ``n`` agents each; class ``V`` (label ``k``) has
    :math:`M = \mathrm{round}(n(1 + k\alpha))` agents.

    * Phase 0: ``M`` items liked by every agent.
    * Phase 1: for each ``A_i`` an upper-triangular batch of ``n`` items; item ``s`` of the batch
      is liked by the agents at positions ``s..n-1`` of ``A_i``.

    OPT = M + kn. For an algorithm that is symmetric inside each class, the fixed order is as bad
    as the adaptive one (all agents of ``A_i`` sit at the same level after phase 0).

    .. note:: reconstructed: the construction is the project's reading of the paper's abstract; it
       reproduces :math:`(1+\alpha-e^{\alpha-1})/(1+\alpha)` in the limit ``k, n -> infinity``.

    Parameters
    ----------
    alpha : float
        The parameter :math:`\alpha` of the family, in [0, 1].
    n : int
        Agents per class ``A_i``, at least 1.
    k : int
        Number of classes ``A_i``, at least 1.

    Returns
    -------
    OnlineMatchingInstance
        The instance.
    """
    alpha = check_scalar_float(alpha, "alpha", low=0.0, high=1.0)
    n = check_scalar_int(n, "n", low=1)
    k = check_scalar_int(k, "k", low=1)
    M = int(round(n * (1 + k * alpha)))
    n_agents = k * n + M
    _check_size(M * n_agents + k * (n * (n + 1) // 2), n_agents + M + k * n,
                f"UB({alpha:g}, {n}, {k}) with {n_agents} agents", f"'n'={n}, 'k'={k}")
    cls = np.concatenate([np.repeat(np.arange(k), n), np.full(M, k)])
    everyone = np.arange(n_agents)
    items = [everyone] * M
    for i in range(k):
        base = i * n
        items.extend(np.arange(base + s, base + n) for s in range(n))
    return OnlineMatchingInstance(n_agents, cls, items)


def complete_instance(n_agents, n_items, n_classes=2):
    """Complete bipartite instance (every agent likes every item); classes round-robin.

    Parameters
    ----------
    n_agents : int
        Number of agents, at least 1.
    n_items : int
        Number of items, at least 0.
    n_classes : int, default=2
        Number of classes.

    Returns
    -------
    OnlineMatchingInstance
        The instance.
    """
    n_agents = check_scalar_int(n_agents, "n_agents", low=1)
    n_items = check_scalar_int(n_items, "n_items", low=0)
    n_classes = check_scalar_int(n_classes, "n_classes", low=1, high=n_agents)
    _check_size(n_agents * n_items, n_agents + n_items, f"the complete instance of {n_agents} x {n_items}",
                f"'n_agents'={n_agents}, 'n_items'={n_items}")
    everyone = np.arange(n_agents)
    return OnlineMatchingInstance(n_agents, np.arange(n_agents) % n_classes, [everyone] * n_items)


def disjoint_stars_instance(n_stars, items_per_star, n_classes=2):
    """``n_stars`` agents, each the centre of its own star of ``items_per_star`` items (items of
    all stars interleaved). OPT = n_stars when ``items_per_star >= 1``.

    Parameters
    ----------
    n_stars : int
        Number of agents (star centres), at least 1.
    items_per_star : int
        Items of each star, at least 0.
    n_classes : int, default=2
        Number of classes.

    Returns
    -------
    OnlineMatchingInstance
        The instance.
    """
    n_stars = check_scalar_int(n_stars, "n_stars", low=1)
    items_per_star = check_scalar_int(items_per_star, "items_per_star", low=0)
    _check_size(n_stars * items_per_star, n_stars * (items_per_star + 1),
                f"{n_stars} stars of {items_per_star} items", f"'n_stars'={n_stars}, 'items_per_star'={items_per_star}")
    n_classes = check_scalar_int(n_classes, "n_classes", low=1, high=n_stars)
    items = [np.array([a]) for _ in range(items_per_star) for a in range(n_stars)]
    return OnlineMatchingInstance(n_stars, np.arange(n_stars) % n_classes, items)


def davis_instance(split="cliques"):
    r"""Davis Southern Women (networkx): 18 women (agents) x 14 events (items), 89 edges.

    Parameters
    ----------
    split : {"cliques", "alternate"}, default="cliques"
        ``"cliques"``: women 0-8 (the first group in Davis's ordering) form class 0 and women
        9-17 class 1; ``"alternate"``: classes by parity of the index. Events arrive in
        networkx's node order (E1..E14, chronological).

    Returns
    -------
    OnlineMatchingInstance
        The instance.

    References
    ----------
    A. Davis, B. B. Gardner, M. R. Gardner, *Deep South*, 1941; networkx ``davis_southern_women_graph``.
    """
    import networkx as nx

    from .._validation import check_option

    check_option(split, "split", ("cliques", "alternate"))
    G = nx.davis_southern_women_graph()
    women = G.graph["top"]
    events = G.graph["bottom"]
    idx = np.arange(len(women))
    cls = (idx >= 9).astype(int) if split == "cliques" else idx % 2
    return OnlineMatchingInstance.from_networkx(G, women, agent_class=cls, order=events)
