r"""Maximum flow on float capacities: a numba Dinic kernel and a plain-Python reference twin.

The network is given as an *edge list* ``(tails, heads, caps)`` on nodes ``0..n_nodes-1``.
:func:`_build_arcs` turns it into a compact residual arc list: edge ``e`` becomes arc ``2e``
(forward, capacity ``caps[e]``) and arc ``2e + 1`` (backward, capacity 0), so the partner of arc
``a`` is ``a ^ 1``; arcs leaving node ``u`` are ``adj_arc[adj_ptr[u]:adj_ptr[u + 1]]``.

:func:`_dinic_kernel` is Dinic's algorithm (BFS level graph, then blocking flows found by an
iterative depth-first search with current-arc pointers; no recursion, no ``fastmath``, no random
draws). :func:`_max_flow_reference` is an independent Edmonds-Karp (shortest augmenting paths on a
dense residual matrix) used only by tests.

:func:`_bundle_network` builds the network behind ``u_i(X_j)`` (fair_matching reconstruction notes, section 1.1): source
-> each agent of class ``i`` (capacity 1), agent -> item on input edges (capacity ``inf``), item -> sink
(capacity ``c[t]``), keeping only items with ``c[t] > 0`` that have a neighbour in class ``i``
(agents without such an item cannot carry flow and are dropped too).
"""

from __future__ import annotations

from collections import deque

import numba
import numpy as np

__all__: list[str] = []

#: a residual arc counts as usable only if its capacity exceeds this (absolute) tolerance
RESIDUAL_TOL = 1e-12


# ---------------------------------------------------------------------------------------- arcs
def _build_arcs(n_nodes, tails, heads, caps):
    """Residual arc arrays for the kernel: ``(adj_ptr, adj_arc, arc_head, arc_cap)``.

    All outputs are contiguous int64/float64; ``arc_cap`` is a fresh array (the kernel writes it).
    """
    tails = np.ascontiguousarray(tails, dtype=np.int64)
    heads = np.ascontiguousarray(heads, dtype=np.int64)
    caps = np.ascontiguousarray(caps, dtype=np.float64)
    n_edges = tails.shape[0]
    arc_tail = np.empty(2 * n_edges, dtype=np.int64)
    arc_head = np.empty(2 * n_edges, dtype=np.int64)
    arc_cap = np.zeros(2 * n_edges, dtype=np.float64)
    arc_tail[0::2], arc_tail[1::2] = tails, heads
    arc_head[0::2], arc_head[1::2] = heads, tails
    arc_cap[0::2] = caps
    adj_arc = np.argsort(arc_tail, kind="stable").astype(np.int64)
    adj_ptr = np.zeros(n_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(arc_tail, minlength=n_nodes), out=adj_ptr[1:])
    return adj_ptr, np.ascontiguousarray(adj_arc), arc_head, arc_cap


# ---------------------------------------------------------------------------------------- kernel
@numba.njit(cache=True)
def _dinic_kernel(n_nodes, source, sink, adj_ptr, adj_arc, arc_head, arc_cap, tol):  # pragma: no cover - jitted
    """Dinic max flow; ``arc_cap`` holds residual capacities and is updated in place.

    Returns the flow value. Arcs with residual capacity ``<= tol`` are treated as saturated.
    Infinite capacities are allowed as long as every source-sink path has a finite arc.
    """
    level = np.empty(n_nodes, dtype=np.int64)
    cur = np.empty(n_nodes, dtype=np.int64)
    queue = np.empty(n_nodes, dtype=np.int64)
    path = np.empty(n_nodes, dtype=np.int64)  # arcs of the current DFS path (simple path: < n_nodes arcs)
    flow = 0.0
    if source == sink:
        return flow
    while True:
        # ---- BFS: level graph on arcs with residual capacity
        for u in range(n_nodes):
            level[u] = -1
        level[source] = 0
        head = 0
        tail = 0
        queue[tail] = source
        tail += 1
        while head < tail:
            u = queue[head]
            head += 1
            for p in range(adj_ptr[u], adj_ptr[u + 1]):
                a = adj_arc[p]
                v = arc_head[a]
                if level[v] < 0 and arc_cap[a] > tol:
                    level[v] = level[u] + 1
                    queue[tail] = v
                    tail += 1
        if level[sink] < 0:
            break
        # ---- blocking flow: iterative DFS with current-arc pointers
        for u in range(n_nodes):
            cur[u] = adj_ptr[u]
        depth = 0
        u = source
        while True:
            if u == sink:
                push = np.inf
                for d in range(depth):
                    if arc_cap[path[d]] < push:
                        push = arc_cap[path[d]]
                for d in range(depth):
                    a = path[d]
                    arc_cap[a] -= push
                    arc_cap[a ^ 1] += push
                flow += push
                # retreat to the tail of the first saturated arc on the path
                new_depth = 0
                for d in range(depth):
                    if arc_cap[path[d]] <= tol:
                        new_depth = d
                        break
                depth = new_depth
                u = source if depth == 0 else arc_head[path[depth - 1]]
                continue
            advanced = False
            while cur[u] < adj_ptr[u + 1]:
                a = adj_arc[cur[u]]
                v = arc_head[a]
                if arc_cap[a] > tol and level[v] == level[u] + 1:
                    path[depth] = a
                    depth += 1
                    u = v
                    advanced = True
                    break
                cur[u] += 1
            if not advanced:
                if u == source:
                    break
                level[u] = -1  # dead end: no blocking path through u in this phase
                depth -= 1
                u = source if depth == 0 else arc_head[path[depth - 1]]
                cur[u] += 1
    return flow


def _max_flow(n_nodes, source, sink, tails, heads, caps):
    """Max-flow value of the edge-list network (numba Dinic)."""
    if len(tails) == 0 or source == sink:
        return 0.0
    adj_ptr, adj_arc, arc_head, arc_cap = _build_arcs(n_nodes, tails, heads, caps)
    return float(
        _dinic_kernel(
            np.int64(n_nodes), np.int64(source), np.int64(sink), adj_ptr, adj_arc, arc_head, arc_cap,
            np.float64(RESIDUAL_TOL),
        )
    )


# ---------------------------------------------------------------------------------------- reference twin
def _max_flow_reference(n_nodes, source, sink, tails, heads, caps, tol=RESIDUAL_TOL):
    """Edmonds-Karp on a dense residual matrix (plain Python + numpy); for tests only.

    Written independently of the kernel: parallel edges are merged into one residual entry, each
    augmenting path is a BFS shortest path, and the bottleneck is pushed along it.
    """
    R = np.zeros((n_nodes, n_nodes), dtype=np.float64)
    for u, v, c in zip(np.asarray(tails), np.asarray(heads), np.asarray(caps, dtype=float)):
        if u != v:
            R[u, v] += c
    if source == sink:
        return 0.0
    flow = 0.0
    while True:
        parent = [-1] * n_nodes
        parent[source] = source
        q = deque([source])
        while q and parent[sink] < 0:
            u = q.popleft()
            for v in np.flatnonzero(R[u] > tol):
                if parent[v] < 0:
                    parent[v] = u
                    q.append(v)
        if parent[sink] < 0:
            return flow
        push, v = np.inf, sink
        while v != source:
            push = min(push, R[parent[v], v])
            v = parent[v]
        v = sink
        while v != source:
            u = parent[v]
            R[u, v] -= push
            R[v, u] += push
            v = u
        flow += push


# ---------------------------------------------------------------------------------------- bundle network
def _bundle_network(edge_agent, edge_item, edge_class, class_i, cap):
    """Edge list of the network whose max flow is ``u_i`` of the item capacities ``cap``.

    Parameters
    ----------
    edge_agent, edge_item, edge_class : ndarray of int64, shape (n_edges,)
        The instance's edges (agent, item, class of the agent).
    class_i : int
    cap : ndarray of float64, shape (n_items,)
        Item capacities (``c_j``), non-negative.

    Returns
    -------
    n_nodes, source, sink, tails, heads, caps
        ``n_nodes == 0`` when no edge can carry flow.
    """
    keep = edge_class == class_i
    keep &= cap[edge_item] > 0.0
    ea = edge_agent[keep]
    et = edge_item[keep]
    if ea.shape[0] == 0:
        return 0, 0, 0, None, None, None
    ua, a_loc = np.unique(ea, return_inverse=True)
    ut, t_loc = np.unique(et, return_inverse=True)
    na, nt = ua.shape[0], ut.shape[0]
    source, sink = 0, na + nt + 1
    tails = np.concatenate([np.zeros(na, np.int64), 1 + a_loc, 1 + na + np.arange(nt)]).astype(np.int64)
    heads = np.concatenate([1 + np.arange(na), 1 + na + t_loc, np.full(nt, sink)]).astype(np.int64)
    caps = np.concatenate([np.ones(na), np.full(ea.shape[0], np.inf), cap[ut]]).astype(np.float64)
    return na + nt + 2, source, sink, tails, heads, caps


def _bundle_flow(edge_agent, edge_item, edge_class, class_i, cap, reference=False):
    """``u_i`` of item capacities ``cap`` by max flow (kernel, or the reference twin)."""
    n_nodes, source, sink, tails, heads, caps = _bundle_network(edge_agent, edge_item, edge_class, class_i, cap)
    if n_nodes == 0:
        return 0.0
    if reference:
        return _max_flow_reference(n_nodes, source, sink, tails, heads, caps)
    return _max_flow(n_nodes, source, sink, tails, heads, caps)
