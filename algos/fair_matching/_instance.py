r"""Online class-matching instances: agents in classes, and a stream of items with neighbour sets.

The instance is stored item-major in CSR form: the neighbours of item ``t`` are
``indices[indptr[t]:indptr[t + 1]]``, sorted and without duplicates. Allocations produced by the
algorithms share this layout: their ``data`` array is aligned with ``indices``, so an allocation is
``scipy.sparse.csc_array((data, indices, indptr), shape=(n_agents, n_items))`` (agents x items).
"""

from __future__ import annotations

import json
import os

import numpy as np
import scipy.sparse as sp

from .._io import atomic_write
from .._validation import check_array_1d, check_scalar_int

__all__ = ["OnlineMatchingInstance"]


def _canonical_classes(agent_class, n_agents):
    cls = check_array_1d(agent_class, "agent_class", dtype="int")
    if cls.shape[0] != n_agents:
        raise ValueError(
            f"'agent_class' must have one entry per agent (n_agents={n_agents}); got length {cls.shape[0]}."
        )
    if n_agents == 0:
        raise ValueError("'n_agents' must be at least 1; got 0.")
    if cls.min() < 0:
        raise ValueError(f"'agent_class' must contain labels >= 0; got {int(cls.min())}.")
    k = int(cls.max()) + 1
    counts = np.bincount(cls, minlength=k)
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        raise ValueError(
            f"'agent_class' must use every label 0..{k - 1} (classes may not be empty); "
            f"class {int(empty[0])} has no agent."
        )
    return cls, k


class OnlineMatchingInstance:
    r"""An online class-matching instance: ``n_agents`` agents split into classes, and items.

    Agents are known in advance and belong to classes ``0..k-1`` (every class non-empty). Items
    arrive one at a time in the stored order; item ``t`` reveals the set of agents that like it.
    Edges are unweighted and agents have unit capacity (fair_matching reconstruction notes, section 1.1 of the module).

    Parameters
    ----------
    n_agents : int
        Number of agents (offline side), at least 1.
    agent_class : array-like of int, shape (n_agents,)
        Class label of every agent; labels are ``0..k-1`` and every label is used.
    item_neighbors : sequence of array-like of int
        ``item_neighbors[t]`` lists the agents that like item ``t`` (may be empty). Lists are
        canonicalised: sorted, duplicates removed.

    Attributes
    ----------
    indptr : ndarray of int64, shape (n_items + 1,)
    indices : ndarray of int64, shape (n_edges,)
        Item-major CSR layout of the neighbour sets.
    agent_class : ndarray of int64, shape (n_agents,)
    n_agents, n_items, n_classes, n_edges : int

    Raises
    ------
    TypeError
        Non-integer agent ids or class labels.
    ValueError
        Agent ids out of range, an empty class, mismatched lengths.

    Examples
    --------
    >>> inst = OnlineMatchingInstance(3, [0, 0, 1], [[2, 0], [1], []])
    >>> inst.n_items, inst.n_classes
    (3, 2)
    >>> inst.neighbors(0)
    array([0, 2])
    """

    def __init__(self, n_agents, agent_class, item_neighbors):
        n_agents = check_scalar_int(n_agents, "n_agents", low=1)
        if isinstance(item_neighbors, (str, bytes)) or not hasattr(item_neighbors, "__len__"):
            raise TypeError(
                f"'item_neighbors' must be a sequence of agent-id arrays; got {type(item_neighbors).__name__}."
            )
        lists = []
        for t, nb in enumerate(item_neighbors):
            arr = check_array_1d(nb, f"item_neighbors[{t}]", dtype="int")
            lists.append(arr)
        indptr = np.zeros(len(lists) + 1, dtype=np.int64)
        if lists:
            indptr[1:] = np.cumsum([a.shape[0] for a in lists])
            indices = np.concatenate(lists).astype(np.int64) if indptr[-1] else np.zeros(0, np.int64)
        else:
            indices = np.zeros(0, dtype=np.int64)
        self._set(n_agents, agent_class, indptr, indices, canonicalise=True)

    # ------------------------------------------------------------------ construction
    def _set(self, n_agents, agent_class, indptr, indices, *, canonicalise):
        self.n_agents = int(n_agents)
        self.agent_class, self.n_classes = _canonical_classes(agent_class, self.n_agents)
        indptr = np.asarray(indptr, dtype=np.int64)
        indices = np.asarray(indices, dtype=np.int64)
        if indices.size:
            bad = (indices < 0) | (indices >= self.n_agents)
            if bad.any():
                e = int(np.flatnonzero(bad)[0])
                t = int(np.searchsorted(indptr, e, side="right") - 1)
                raise ValueError(
                    f"agent ids must be in [0, {self.n_agents - 1}] (n_agents={self.n_agents}); "
                    f"item {t} lists agent {int(indices[e])}."
                )
        if canonicalise and indices.size:
            # sort within each item and drop duplicates, vectorised
            m = indptr.shape[0] - 1
            item_of = np.repeat(np.arange(m, dtype=np.int64), np.diff(indptr))
            order = np.lexsort((indices, item_of))
            item_s, idx_s = item_of[order], indices[order]
            keep = np.ones(idx_s.shape[0], dtype=bool)
            keep[1:] = (item_s[1:] != item_s[:-1]) | (idx_s[1:] != idx_s[:-1])
            item_s, idx_s = item_s[keep], idx_s[keep]
            indptr = np.zeros(m + 1, dtype=np.int64)
            np.cumsum(np.bincount(item_s, minlength=m), out=indptr[1:])
            indices = idx_s
        self.indptr = np.ascontiguousarray(indptr)
        self.indices = np.ascontiguousarray(indices)
        self.n_items = int(self.indptr.shape[0] - 1)
        self.n_edges = int(self.indices.shape[0])
        self.indptr.setflags(write=False)
        self.indices.setflags(write=False)
        self.agent_class.setflags(write=False)

    @classmethod
    def from_csr(cls, indptr, indices, agent_class, n_agents=None):
        """Build from item-major CSR arrays (``indices[indptr[t]:indptr[t+1]]`` = neighbours of t).

        ``n_agents`` defaults to ``len(agent_class)``. Neighbour lists are canonicalised.

        Parameters
        ----------
        indptr : array-like of int, shape (n_items + 1,)
            Item pointers.
        indices : array-like of int
            Agent ids.
        agent_class : array-like of int, shape (n_agents,)
            Class of each agent.
        n_agents : int or None, default=None
            Number of agents (``None``: ``len(agent_class)``).
        """
        agent_class = check_array_1d(agent_class, "agent_class", dtype="int")
        if n_agents is None:
            n_agents = agent_class.shape[0]
        n_agents = check_scalar_int(n_agents, "n_agents", low=1)
        indptr = check_array_1d(indptr, "indptr", dtype="int", allow_empty=False)
        indices = check_array_1d(indices, "indices", dtype="int")
        if indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] != indices.shape[0]:
            raise ValueError(
                "'indptr' must start at 0, be non-decreasing and end at len(indices) "
                f"= {indices.shape[0]}; got indptr[0]={int(indptr[0])}, indptr[-1]={int(indptr[-1])}."
            )
        self = cls.__new__(cls)
        self._set(n_agents, agent_class, indptr, indices, canonicalise=True)
        return self

    @classmethod
    def from_biadjacency(cls, B, agent_class, order=None):
        """Build from a biadjacency matrix ``B`` (agents x items, nonzero = edge).

        Parameters
        ----------
        B : array-like or scipy sparse, shape (n_agents, n_items)
        agent_class : array-like of int, shape (n_agents,)
        order : array-like of int, optional
            Arrival order: ``order[s]`` is the column of ``B`` that arrives ``s``-th. Default: column
            order.
        """
        if sp.issparse(B):
            B = sp.csc_array(B)
        else:
            B = np.asarray(B)
            if B.ndim != 2:
                raise ValueError(f"'B' must be a 2-d agents x items matrix; got shape {B.shape}.")
            if B.dtype.kind not in "biuf":
                raise TypeError(f"'B' must be numeric or boolean; got dtype {B.dtype}.")
            B = sp.csc_array(B)
        B.eliminate_zeros()
        n_agents, n_items = B.shape
        if order is not None:
            order = check_array_1d(order, "order", dtype="int")
            if order.shape[0] != n_items or not np.array_equal(np.sort(order), np.arange(n_items)):
                raise ValueError(f"'order' must be a permutation of 0..{n_items - 1}; got {order!r}.")
            B = B[:, order]
        B = sp.csc_array(B)
        B.sort_indices()
        return cls.from_csr(B.indptr, B.indices, agent_class, n_agents=n_agents)

    @classmethod
    def from_networkx(cls, G, agent_nodes, class_attr=None, agent_class=None, order=None):
        """Build from a bipartite networkx graph.

        Parameters
        ----------
        G : networkx.Graph
        agent_nodes : sequence
            The agent-side nodes, in the order that defines agent ids ``0..n-1``. All other nodes
            are items, arriving in ``order`` (a sequence of item nodes) or in ``G``'s node order.
        class_attr : str, optional
            Node attribute holding each agent's class (any hashable; mapped to ``0..k-1`` in order
            of first appearance). Exactly one of ``class_attr`` / ``agent_class`` may be given;
            with neither, all agents are in class 0.
        agent_class : array-like of int, optional
        order : sequence of item nodes, optional
        """
        agent_nodes = list(agent_nodes)
        pos = {a: i for i, a in enumerate(agent_nodes)}
        if len(pos) != len(agent_nodes):
            raise ValueError("'agent_nodes' must not contain duplicates.")
        missing = [a for a in agent_nodes if a not in G]
        if missing:
            raise ValueError(f"'agent_nodes' must be nodes of G; {missing[0]!r} is not.")
        if class_attr is not None and agent_class is not None:
            raise ValueError("pass at most one of 'class_attr' and 'agent_class'.")
        if class_attr is not None:
            labels = {}
            cls_arr = []
            for a in agent_nodes:
                if class_attr not in G.nodes[a]:
                    raise ValueError(f"agent node {a!r} has no attribute {class_attr!r}.")
                cls_arr.append(labels.setdefault(G.nodes[a][class_attr], len(labels)))
            agent_class = np.asarray(cls_arr)
        elif agent_class is None:
            agent_class = np.zeros(len(agent_nodes), dtype=np.int64)
        items = [v for v in G.nodes if v not in pos] if order is None else list(order)
        for v in items:
            if v in pos or v not in G:
                raise ValueError(f"'order' must list item nodes of G; got {v!r}.")
        nbrs = [[pos[u] for u in G.neighbors(v) if u in pos] for v in items]
        return cls(len(agent_nodes), agent_class, nbrs)

    # ------------------------------------------------------------------ views and transforms
    def neighbors(self, t):
        """Sorted agent ids that like item ``t``.

        Parameters
        ----------
        t : int
            Item index.

        Returns
        -------
        ndarray of int
            The agents.
        """
        t = check_scalar_int(t, "t", low=0, high=self.n_items - 1)
        return np.asarray(self.indices[self.indptr[t] : self.indptr[t + 1]])

    @property
    def item_neighbors(self):
        """List of neighbour arrays, one per item."""
        return [np.asarray(self.indices[self.indptr[t] : self.indptr[t + 1]]) for t in range(self.n_items)]

    @property
    def class_sizes(self):
        """Number of agents in each class, shape (n_classes,)."""
        return np.bincount(self.agent_class, minlength=self.n_classes)

    def biadjacency(self, n_items=None):
        """Sparse 0/1 biadjacency, agents x items (``csc_array``), optionally of a prefix.

        Parameters
        ----------
        n_items : int or None, default=None
            Length of the prefix (``None``: all items).

        Returns
        -------
        scipy.sparse.csc_array of shape (n_agents, n_items)
            The biadjacency matrix.
        """
        m = self.n_items if n_items is None else check_scalar_int(n_items, "n_items", low=0, high=self.n_items)
        nnz = int(self.indptr[m])
        return sp.csc_array(
            (np.ones(nnz), self.indices[:nnz].copy(), self.indptr[: m + 1].copy()), shape=(self.n_agents, m)
        )

    def prefix(self, n_items):
        """The instance truncated to its first ``n_items`` items.

        Parameters
        ----------
        n_items : int
            Number of items kept.

        Returns
        -------
        OnlineMatchingInstance
            The instance.
        """
        m = check_scalar_int(n_items, "n_items", low=0, high=self.n_items)
        out = OnlineMatchingInstance.__new__(OnlineMatchingInstance)
        out._set(self.n_agents, self.agent_class, self.indptr[: m + 1], self.indices[: self.indptr[m]],
                 canonicalise=False)
        return out

    def reorder(self, order):
        """The same items arriving in ``order`` (``order[s]`` = old index of the s-th arrival).

        Parameters
        ----------
        order : array-like of int, shape (n_items,)
            A permutation of the items.

        Returns
        -------
        OnlineMatchingInstance
            The instance.
        """
        return OnlineMatchingInstance.from_biadjacency(self.biadjacency(), self.agent_class, order=order)

    def relabel(self, agent_perm=None, class_perm=None):
        """Rename agents (``agent_perm[a]`` = new id of agent a) and/or classes (``class_perm[i]``).

        Parameters
        ----------
        agent_perm : array-like of int, shape (n_agents,), optional
            New id of each agent.
        class_perm : array-like of int, shape (n_classes,), optional
            New label of each class.

        Returns
        -------
        OnlineMatchingInstance
            The instance.
        """
        agent_perm = np.arange(self.n_agents) if agent_perm is None else check_array_1d(agent_perm, "agent_perm")
        class_perm = np.arange(self.n_classes) if class_perm is None else check_array_1d(class_perm, "class_perm")
        if not np.array_equal(np.sort(agent_perm), np.arange(self.n_agents)):
            raise ValueError("'agent_perm' must be a permutation of the agent ids.")
        if not np.array_equal(np.sort(class_perm), np.arange(self.n_classes)):
            raise ValueError("'class_perm' must be a permutation of the class labels.")
        new_cls = np.empty(self.n_agents, dtype=np.int64)
        new_cls[agent_perm] = class_perm[self.agent_class]
        return OnlineMatchingInstance.from_csr(self.indptr, agent_perm[self.indices], new_cls, self.n_agents)

    def to_networkx(self):
        """Bipartite ``networkx.Graph``: agent nodes ``("a", i)`` with ``cls``, item nodes ``("t", j)``.

        Returns
        -------
        networkx.Graph
            The bipartite graph.
        """
        import networkx as nx

        G = nx.Graph()
        G.add_nodes_from((("a", i), {"bipartite": 0, "cls": int(c)}) for i, c in enumerate(self.agent_class))
        G.add_nodes_from((("t", t), {"bipartite": 1}) for t in range(self.n_items))
        item_of = np.repeat(np.arange(self.n_items), np.diff(self.indptr))
        G.add_edges_from((("a", int(a)), ("t", int(t))) for a, t in zip(self.indices, item_of))
        return G

    # ------------------------------------------------------------------ files
    def to_json(self, path):
        """Write ``{"n_agents", "agent_class", "items"}`` JSON (the CLI's instance format).

        Parameters
        ----------
        path : str or path-like
            The file.
        """
        payload = {
            "n_agents": self.n_agents,
            "agent_class": self.agent_class.tolist(),
            "items": [nb.tolist() for nb in self.item_neighbors],
        }
        with atomic_write(path, "w", encoding="utf-8") as fh:
            json.dump(payload, fh)

    @classmethod
    def from_json(cls, path):
        """Read the JSON format written by :meth:`to_json`; errors name the file.

        Parameters
        ----------
        path : str or path-like
            The file.
        """
        name = os.fspath(path)
        try:
            with open(path, encoding="utf-8") as fh:
                payload = json.load(fh)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{name}: line {exc.lineno}: not valid JSON ({exc.msg}).") from exc
        if not isinstance(payload, dict):
            raise ValueError(f"{name}: expected a JSON object with keys 'n_agents', 'agent_class', 'items'.")
        missing = [k for k in ("n_agents", "agent_class", "items") if k not in payload]
        if missing:
            raise ValueError(f"{name}: missing key {missing[0]!r}.")
        try:
            return cls(payload["n_agents"], payload["agent_class"], payload["items"])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}: {exc}") from exc

    # ------------------------------------------------------------------ dunder
    def __repr__(self):
        return (
            f"OnlineMatchingInstance(n_agents={self.n_agents}, n_items={self.n_items}, "
            f"n_classes={self.n_classes}, n_edges={self.n_edges})"
        )

    def __eq__(self, other):
        if not isinstance(other, OnlineMatchingInstance):
            return NotImplemented
        return (
            self.n_agents == other.n_agents
            and np.array_equal(self.agent_class, other.agent_class)
            and np.array_equal(self.indptr, other.indptr)
            and np.array_equal(self.indices, other.indices)
        )

    __hash__ = None


def as_instance(instance, name="instance"):
    """Check that ``instance`` is an :class:`OnlineMatchingInstance` (TypeError otherwise)."""
    if not isinstance(instance, OnlineMatchingInstance):
        raise TypeError(
            f"'{name}' must be an OnlineMatchingInstance; got {type(instance).__name__}. "
            "Build one with OnlineMatchingInstance.from_biadjacency(B, agent_class)."
        )
    return instance
