r"""Graph families, feature allocations and graph validation for networked DAG learning.

Agents are the nodes of a directed acyclic graph (``networkx.DiGraph``); an edge ``u -> v`` means that
agent ``v`` receives the prediction of agent ``u``. Each agent sees a subset :math:`S_v` of the ``d``
feature columns, given as ``feature_sets``: a dict ``node -> iterable of feature indices`` (a list or
tuple indexed by node is also accepted when the nodes are ``0 .. n-1``).

Conventions
-----------
* Depth of an agent = number of agents on the longest path ending at it (a source has depth 1).
* An agent with no features and no parents is allowed: its prediction is 0 (the projection onto the
  empty span), and its children then gain nothing from it.
* The output agent defaults to the deepest sink; when several sinks share the largest depth the choice
  is ambiguous and :func:`resolve_output_agent` raises ``ValueError`` listing them.
"""

from __future__ import annotations

import math
import numbers

import networkx as nx
import numpy as np

from .._validation import check_random_state, check_scalar_float, check_scalar_int

__all__ = [
    "make_path",
    "make_star",
    "make_in_tree",
    "make_layered_dag",
    "make_random_dag",
    "cyclic_allocation",
    "random_allocation",
    "coverage_number",
    "check_graph",
    "depths",
    "resolve_output_agent",
]


# --------------------------------------------------------------------------------------------------
# graph families
# --------------------------------------------------------------------------------------------------
def make_path(D):
    """Path ``0 -> 1 -> ... -> D-1`` of ``D`` agents (depth ``D``).

    Parameters
    ----------
    D : int
        Number of agents, at least 1.

    Returns
    -------
    networkx.DiGraph
        The graph.

    Examples
    --------
    >>> list(make_path(3).edges())
    [(0, 1), (1, 2)]
    """
    D = check_scalar_int(D, "D", low=1)
    return nx.path_graph(D, create_using=nx.DiGraph)


def make_star(n_spokes):
    """Hub-and-spokes: spokes ``0 .. n_spokes-1`` each feed the hub ``n_spokes`` (depth 2).

    Parameters
    ----------
    n_spokes : int
        Number of spokes, at least 1.

    Returns
    -------
    networkx.DiGraph
        The graph.

    Examples
    --------
    >>> sorted(make_star(2).edges())
    [(0, 2), (1, 2)]
    """
    n_spokes = check_scalar_int(n_spokes, "n_spokes", low=1)
    g = nx.DiGraph()
    g.add_nodes_from(range(n_spokes + 1))
    g.add_edges_from((i, n_spokes) for i in range(n_spokes))
    return g


def make_in_tree(r, h):
    """Balanced ``r``-ary tree of height ``h`` oriented child -> parent (the root ``0`` is the only sink).

    Parameters
    ----------
    r : int
        Arity, at least 1.
    h : int
        Height, at least 0.

    Returns
    -------
    networkx.DiGraph
        The graph.

    Examples
    --------
    >>> g = make_in_tree(2, 2)
    >>> g.number_of_nodes(), [v for v in g if g.out_degree(v) == 0]
    (7, [0])
    """
    r = check_scalar_int(r, "r", low=1)
    h = check_scalar_int(h, "h", low=0)
    tree = nx.balanced_tree(r, h)
    g = nx.DiGraph()
    g.add_nodes_from(sorted(tree.nodes()))
    g.add_edges_from((child, parent) for parent, child in nx.bfs_edges(tree, 0))
    return g


def make_layered_dag(n_layers, width, n_parents, skip=False, random_state=None):
    """Layered DAG: ``n_layers`` layers of ``width`` agents; node ``l*width + i`` is agent ``i`` of layer ``l``.

    Every agent of layer ``l >= 1`` takes ``min(n_parents, width)`` distinct parents drawn uniformly from
    layer ``l-1``. With ``skip=True`` every agent of layer ``l >= 2`` also receives the agent at the same
    position two layers up (a skip edge). Layer ``n_layers-1`` holds the sinks; use ``width=1`` in the last
    layer's role via ``output_agent`` or pick ``width=1`` for a single sink.

    Parameters
    ----------
    n_layers : int
        Number of layers, at least 1.
    width : int
        Agents per layer, at least 1.
    n_parents : int
        Parents of each agent in the previous layer, at least 1.
    skip : bool, default=False
        Add the skip edges.
    random_state : None, int, SeedSequence or Generator, default=None
        Seed of the parent draws.

    Returns
    -------
    networkx.DiGraph
        The graph.

    Examples
    --------
    >>> g = make_layered_dag(3, 2, 2)
    >>> g.number_of_nodes(), g.number_of_edges()
    (6, 8)
    """
    n_layers = check_scalar_int(n_layers, "n_layers", low=1)
    width = check_scalar_int(width, "width", low=1)
    n_parents = check_scalar_int(n_parents, "n_parents", low=1)
    if not isinstance(skip, (bool, np.bool_)):
        raise TypeError(f"'skip' must be a bool; got {skip!r} of type {type(skip).__name__}.")
    rng = check_random_state(random_state)
    g = nx.DiGraph()
    g.add_nodes_from(range(n_layers * width))
    q = min(n_parents, width)
    for layer in range(1, n_layers):
        for i in range(width):
            v = layer * width + i
            parents = rng.choice(width, size=q, replace=False)
            g.add_edges_from(((layer - 1) * width + int(j), v) for j in sorted(parents))
            if skip and layer >= 2:
                g.add_edge((layer - 2) * width + i, v)
    return g


def make_random_dag(n, p, random_state=None):
    """Random DAG: ``gnp_random_graph(n, p, directed=True)`` keeping only the edges ``u < v``.

    Parameters
    ----------
    n : int
        Number of agents, at least 1.
    p : float
        Edge probability, in [0, 1].
    random_state : None, int, SeedSequence or Generator, default=None
        Seed.

    Returns
    -------
    networkx.DiGraph
        The graph.

    Examples
    --------
    >>> g = make_random_dag(5, 1.0, random_state=0)
    >>> g.number_of_edges(), nx.is_directed_acyclic_graph(g)
    (10, True)
    """
    n = check_scalar_int(n, "n", low=1)
    p = check_scalar_float(p, "p", low=0.0, high=1.0)
    rng = check_random_state(random_state)
    seed = int(rng.integers(0, 2**31 - 1))
    full = nx.gnp_random_graph(n, p, seed=seed, directed=True)
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from((u, v) for u, v in full.edges() if u < v)
    return g


# --------------------------------------------------------------------------------------------------
# allocations
# --------------------------------------------------------------------------------------------------
def cyclic_allocation(order, d):
    """Cyclic single-feature allocation: the ``t``-th agent of ``order`` sees feature ``t mod d``.

    ``order`` is a sequence of nodes, or a DAG (then its topological order is used). On a path this
    allocation has coverage number ``M = d``.

    Parameters
    ----------
    order : sequence or networkx.DiGraph
        Agents in order, or a DAG.
    d : int
        Number of features, at least 1.

    Returns
    -------
    dict
        Agent to its list of one feature.

    Examples
    --------
    >>> cyclic_allocation([0, 1, 2, 3], 3)
    {0: [0], 1: [1], 2: [2], 3: [0]}
    """
    d = check_scalar_int(d, "d", low=1)
    if isinstance(order, nx.Graph):
        order = list(nx.topological_sort(order))
    order = _node_list(order, "order")
    return {v: [t % d] for t, v in enumerate(order)}


def _node_list(nodes, name, distinct=True):
    """``nodes`` as a list of (distinct) agent labels, with errors naming ``name``.

    Labels are anything hashable except floats that are not integers (NaN, inf, 0.5) and complex
    numbers: numeric labels of agents are ints.
    """
    if isinstance(nodes, (str, bytes)) or not hasattr(nodes, "__iter__"):
        raise TypeError(f"'{name}' must be a sequence of nodes or a networkx DAG; got {type(nodes).__name__}.")
    if isinstance(nodes, np.ndarray) and nodes.ndim != 1:
        raise ValueError(f"'{name}' must be a 1-d sequence of nodes; got an array of shape {nodes.shape}.")
    out, seen = [], set()
    for v in nodes:
        u = v.item() if isinstance(v, np.generic) else v
        if isinstance(u, complex) or (isinstance(u, float) and not (math.isfinite(u) and u == int(u))):
            raise TypeError(f"'{name}' must contain node labels (ints, strings, ...); got {u!r}.")
        try:
            fresh = v not in seen
        except TypeError:
            raise TypeError(f"'{name}' must contain hashable node labels; got {type(v).__name__}.") from None
        if distinct and not fresh:
            raise ValueError(f"'{name}' must list distinct nodes; got {u!r} more than once.")
        seen.add(v)
        out.append(v)
    return out


def random_allocation(graph, d, size, random_state=None):
    """Every agent sees ``size`` distinct features drawn uniformly from ``range(d)`` (sorted lists).

    Parameters
    ----------
    graph : networkx.DiGraph
        The agents.
    d : int
        Number of features, at least 1.
    size : int
        Features per agent, in [0, d].
    random_state : None, int, SeedSequence or Generator, default=None
        Seed.

    Returns
    -------
    dict
        Agent to its sorted list of features.

    Examples
    --------
    >>> fs = random_allocation(make_path(3), 5, 2, random_state=0)
    >>> all(len(s) == 2 for s in fs.values())
    True
    """
    if not isinstance(graph, nx.Graph):
        raise TypeError(f"'graph' must be a networkx graph; got {type(graph).__name__}.")
    d = check_scalar_int(d, "d", low=1)
    size = check_scalar_int(size, "size", low=0, high=d)
    rng = check_random_state(random_state)
    return {v: sorted(int(j) for j in rng.choice(d, size=size, replace=False)) for v in graph.nodes()}


def _as_feature_dict(feature_sets):
    if isinstance(feature_sets, dict):
        return dict(feature_sets)
    if isinstance(feature_sets, (list, tuple)):
        return dict(enumerate(feature_sets))
    raise TypeError(
        "'feature_sets' must be a dict node -> list of feature indices (or a list indexed by node); "
        f"got {type(feature_sets).__name__}."
    )


def coverage_number(path, feature_sets, d=None):
    r"""Smallest ``M`` such that every ``M`` consecutive agents of ``path`` jointly see all ``d`` features.

    .. math:: M = \min\{M : \textstyle\bigcup_{i=s}^{s+M-1} S_{A_i} = [d] \ \forall s \le D-M+1\}

    Parameters
    ----------
    path : sequence of nodes, or a path-shaped ``networkx.DiGraph``
        The agents ``A_1, ..., A_D`` in order (a DiGraph is read in topological order).
    feature_sets : dict node -> iterable of int
    d : int or None, default=None
        Number of features; ``None`` uses ``1 + max`` feature index seen (so features never seen by any
        agent of the path are not counted: pass ``d`` explicitly to detect them).

    Returns
    -------
    int or float
        ``M`` (an int in ``[1, D]``), or ``math.inf`` when the whole path does not see every feature.

    Examples
    --------
    >>> coverage_number(range(6), cyclic_allocation(range(6), 3), 3)
    3
    >>> coverage_number(range(2), {0: [0], 1: [0]}, 2)
    inf
    """
    if isinstance(path, nx.Graph):
        path = list(nx.topological_sort(path))
    path = _node_list(path, "path", distinct=False)
    if not path:
        raise ValueError("'path' must contain at least one agent; got an empty sequence.")
    fs = _as_feature_dict(feature_sets)
    sets = []
    for v in path:
        if v not in fs:
            raise ValueError(f"'feature_sets' has no entry for agent {v!r} of the path.")
        sets.append({int(j) for j in fs[v]})
    if d is None:
        d = 1 + max((max(s) for s in sets if s), default=-1)
    d = check_scalar_int(d, "d", low=0)
    D = len(path)
    if d == 0:
        return 1 if D else math.inf
    # two pointers: c[s] = smallest length L with S_s u ... u S_{s+L-1} = [d] (inf if none)
    counts = np.zeros(d, dtype=np.int64)
    covered = 0
    c = np.full(D, np.inf)
    end = 0  # window is [s, end)
    for s in range(D):
        while covered < d and end < D:
            for j in sets[end]:
                if 0 <= j < d:
                    if counts[j] == 0:
                        covered += 1
                    counts[j] += 1
            end += 1
        if covered < d:
            break
        c[s] = end - s
        for j in sets[s]:
            if 0 <= j < d:
                counts[j] -= 1
                if counts[j] == 0:
                    covered -= 1
    for M in range(1, D + 1):
        if np.all(c[: D - M + 1] <= M):
            return M
    return math.inf


# --------------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------------
def check_graph(graph, feature_sets, d):
    """Validate a DAG of agents and its feature allocation; return the allocation as ``{v: tuple}``.

    Rules: ``graph`` is a ``networkx.DiGraph`` with at least one node and no directed cycle; the nodes
    of ``feature_sets`` are exactly the nodes of ``graph``; every feature index is an int in
    ``[0, d-1]`` (duplicates are dropped, each set is sorted). An agent with no feature and no parent is
    allowed and predicts 0.

    Parameters
    ----------
    graph : networkx.DiGraph
        The agents.
    feature_sets : dict
        Agent to its feature indices.
    d : int
        Number of features.

    Returns
    -------
    dict
        Agent to its sorted tuple of features.

    Raises
    ------
    TypeError
        ``graph`` is not a DiGraph, ``feature_sets`` is not a dict/list, or an index is not an int.
    ValueError
        A cycle (named), an index out of range, or mismatched node sets.
    """
    if not isinstance(graph, nx.DiGraph):
        raise TypeError(f"'graph' must be a networkx.DiGraph; got {type(graph).__name__}.")
    if graph.number_of_nodes() == 0:
        raise ValueError("'graph' must have at least one agent; got an empty graph.")
    if not nx.is_directed_acyclic_graph(graph):
        cycle = nx.find_cycle(graph)
        path = " -> ".join(repr(u) for u, _ in cycle) + f" -> {cycle[0][0]!r}"
        raise ValueError(f"'graph' must be a directed acyclic graph; found the cycle {path}.")
    d = check_scalar_int(d, "d", low=1)
    fs = _as_feature_dict(feature_sets)
    nodes = set(graph.nodes())
    missing = [v for v in graph.nodes() if v not in fs]
    extra = [v for v in fs if v not in nodes]
    if missing or extra:
        raise ValueError(
            "the nodes of 'feature_sets' must match the nodes of 'graph'; "
            f"missing: {missing[:10]!r}, not in the graph: {extra[:10]!r}."
        )
    out = {}
    for v in graph.nodes():
        raw = fs[v]
        if isinstance(raw, numbers.Integral) and not isinstance(raw, (bool, np.bool_)):
            raw = [raw]
        items = []
        for j in raw:
            if isinstance(j, (bool, np.bool_)) or not isinstance(j, numbers.Integral):
                raise TypeError(
                    f"'feature_sets[{v!r}]' must contain ints in [0, {d - 1}]; got {j!r} of type {type(j).__name__}."
                )
            j = int(j)
            if not 0 <= j < d:
                raise ValueError(f"'feature_sets[{v!r}]' must contain ints in [0, {d - 1}]; got {j}.")
            items.append(j)
        out[v] = tuple(sorted(set(items)))
    return out


def depths(graph):
    """Depth of every agent: the number of agents on the longest path ending at it (sources: 1).

    Parameters
    ----------
    graph : networkx.DiGraph
        A DAG of agents.

    Returns
    -------
    dict
        Agent to its depth.

    Examples
    --------
    >>> depths(make_star(2))
    {0: 1, 1: 1, 2: 2}

    Raises
    ------
    TypeError
        ``graph`` is not a ``networkx.DiGraph``.
    ValueError
        ``graph`` has a directed cycle (named in the message): depth is defined on DAGs only.
    """
    if not isinstance(graph, nx.DiGraph):
        raise TypeError(f"'graph' must be a networkx.DiGraph; got {type(graph).__name__}.")
    if not nx.is_directed_acyclic_graph(graph):
        cycle = nx.find_cycle(graph)
        path = " -> ".join(repr(u) for u, _ in cycle) + f" -> {cycle[0][0]!r}"
        raise ValueError(f"'graph' must be a directed acyclic graph; found the cycle {path}.")
    dep = {}
    for v in nx.topological_sort(graph):
        dep[v] = 1 + max((dep[u] for u in graph.predecessors(v)), default=0)
    return {v: dep[v] for v in graph.nodes()}


def resolve_output_agent(graph, output_agent=None, depth=None):
    """The agent whose prediction is the network's output.

    ``output_agent`` given: it must be a node of ``graph``. ``None``: the deepest sink; ``ValueError``
    listing the sinks when several sinks share the largest depth.
    """
    if output_agent is not None:
        if output_agent not in graph:
            raise ValueError(f"'output_agent' must be a node of 'graph'; got {output_agent!r}.")
        return output_agent
    depth = depths(graph) if depth is None else depth
    sinks = [v for v in graph.nodes() if graph.out_degree(v) == 0]
    deepest = max(depth[v] for v in sinks)
    top = [v for v in sinks if depth[v] == deepest]
    if len(top) > 1:
        raise ValueError(
            f"the graph has several sinks {sinks!r} ({len(top)} of them at the largest depth {deepest}); "
            "pass 'output_agent' to choose the agent whose prediction is the output."
        )
    return top[0]
