"""The shared core of the fair-matching metrics: allocation checks, the edge list of an allocation, the
CEF matrix over classes and its ratio (used by :mod:`algos.fair_matching.metrics` and the evaluators over
time and over runs)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .._validation import check_scalar_int
from ._maxflow import _bundle_flow

#: feasibility tolerance applied to every allocation (fair_matching reconstruction notes, section 2, "agent sums <= 1
#: (+1e-9)")
FEASIBILITY_TOL = 1e-9
#: pairs (i, j) with u_i(X_j) at or below this are skipped by the CEF ratio (fair_matching reconstruction notes, section
#: 2, T2)
ZERO_VALUE_TOL = 1e-9


# ============================================================================================ helpers
class _Edges(NamedTuple):
    m: int  # prefix length (number of items)
    agent: np.ndarray  # int64, agent of each edge of the prefix, item-major order
    item: np.ndarray  # int64, item of each edge
    cls: np.ndarray  # int64, class of the agent of each edge
    x: np.ndarray  # float64, allocation on each edge (0 where nothing is allocated)


def _prefix_len(instance, n_items):
    if n_items is None:
        return instance.n_items
    return check_scalar_int(n_items, "n_items", low=0, high=instance.n_items)


def _edge_arrays(instance, m):
    nnz = int(instance.indptr[m])
    agent = np.ascontiguousarray(instance.indices[:nnz], dtype=np.int64)
    item = np.repeat(np.arange(m, dtype=np.int64), np.diff(instance.indptr[: m + 1]))
    cls = np.ascontiguousarray(instance.agent_class[agent], dtype=np.int64)
    return agent, item, cls


def _to_csc(allocation, name):
    """Convert to a float64 ``csc_array`` with a clear TypeError/ValueError on bad input."""
    if sp.issparse(allocation):
        if allocation.dtype.kind not in "biuf":
            raise TypeError(f"'{name}' must hold real numbers; got a sparse matrix of dtype {allocation.dtype}.")
        if allocation.ndim != 2:
            raise ValueError(f"'{name}' must be a 2-d agents x items matrix; got shape {allocation.shape}.")
        return sp.csc_array(allocation, dtype=np.float64)
    if isinstance(allocation, (np.ndarray, list, tuple)):
        try:
            arr = np.asarray(allocation)
        except Exception as exc:  # ragged lists
            raise TypeError(f"'{name}' must be a 2-d numeric array or scipy sparse matrix.") from exc
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"'{name}' must hold real numbers; got an array of dtype {arr.dtype}.")
        if arr.ndim != 2:
            raise ValueError(f"'{name}' must be a 2-d agents x items matrix; got shape {arr.shape}.")
        return sp.csc_array(arr.astype(np.float64))
    raise TypeError(
        f"'{name}' must be a scipy sparse matrix or a 2-d numpy array (agents x items); "
        f"got {type(allocation).__name__}."
    )


def _prepare(instance, allocation, m, name="allocation", tol=FEASIBILITY_TOL):
    """Validate ``allocation`` against the prefix of length ``m`` and align it with the edges.

    The allocation may have ``instance.n_items`` columns (only the first ``m`` are used) or
    exactly ``m`` columns. Returns an :class:`_Edges`.
    """
    X = _to_csc(allocation, name)
    n = instance.n_agents
    if X.shape[0] != n or X.shape[1] not in (instance.n_items, m):
        want = f"({n}, {instance.n_items})" if m == instance.n_items else f"({n}, {instance.n_items}) or ({n}, {m})"
        raise ValueError(f"'{name}' must have shape {want} (agents x items); got shape {X.shape}.")
    if X.shape[1] != m:
        X = sp.csc_array(X[:, :m])
    X.sum_duplicates()
    rows = X.indices.astype(np.int64)
    cols = np.repeat(np.arange(m, dtype=np.int64), np.diff(X.indptr))
    vals = X.data
    bad = ~np.isfinite(vals)
    if bad.any():
        e = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"'{name}' must contain only finite values; got X[{rows[e]}, {cols[e]}] = {float(vals[e])!r}."
        )
    bad = vals < -tol
    if bad.any():
        e = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"'{name}' must be non-negative (tolerance {tol:g}); got X[{rows[e]}, {cols[e]}] = {float(vals[e])!r}."
        )
    agent, item, cls = _edge_arrays(instance, m)
    edge_key = item * n + agent  # sorted: item-major, agents sorted within an item
    key = cols * n + rows
    pos = np.searchsorted(edge_key, key)
    on = pos < edge_key.shape[0]
    on[on] = edge_key[pos[on]] == key[on]
    off = ~on & (np.abs(vals) > tol)
    if off.any():
        e = int(np.flatnonzero(off)[0])
        raise ValueError(
            f"'{name}' must be zero off the instance's edges (tolerance {tol:g}); got "
            f"X[{rows[e]}, {cols[e]}] = {float(vals[e])!r}, but agent {rows[e]} does not like item {cols[e]}."
        )
    x = np.zeros(edge_key.shape[0], dtype=np.float64)
    x[pos[on]] = np.maximum(vals[on], 0.0)
    item_sum = np.bincount(item, weights=x, minlength=m)
    bad = item_sum > 1.0 + tol
    if bad.any():
        t = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"'{name}' must give each item at most 1 (tolerance {tol:g}); item {t} is given {float(item_sum[t])!r}."
        )
    load = np.bincount(agent, weights=x, minlength=n)
    bad = load > 1.0 + tol
    if bad.any():
        a = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"'{name}' must give each agent at most 1 (tolerance {tol:g}); agent {a} receives {float(load[a])!r}."
        )
    return _Edges(m, agent, item, cls, x)


def _class_utility(E, k):
    return np.bincount(E.cls, weights=E.x, minlength=k)


def _cef_matrix_core(E, k, class_sizes, need=None):
    """The k x k matrix V[i, j] = u_i(X_j) on the edges ``E``.

    ``need`` is an optional boolean k x k mask of the off-diagonal entries to compute; the others
    are NaN. The diagonal is always the class utility.
    """
    m = E.m
    V = np.zeros((k, k), dtype=np.float64)
    if need is not None:
        V[~need] = np.nan
    V[np.diag_indices(k)] = _class_utility(E, k)
    if k == 1 or E.x.shape[0] == 0:
        if need is None:
            return V
        off = need & ~np.eye(k, dtype=bool)
        V[off] = 0.0
        return V
    # unique (class, item) pairs: item t has a neighbour in class i
    pair_key = np.unique(E.cls * m + E.item)
    pair_cls, pair_item = pair_key // m, pair_key % m
    for j in range(k):
        rows = [i for i in range(k) if i != j and (need is None or need[i, j])]
        if not rows:
            continue
        in_j = E.cls == j
        c_j = np.bincount(E.item[in_j], weights=E.x[in_j], minlength=m)
        # cheap upper bound u_i(X_j) <= min(|N_i|, sum of c_j over items with a neighbour in N_i)
        ub = np.minimum(np.bincount(pair_cls, weights=c_j[pair_item], minlength=k), class_sizes)
        for i in rows:
            V[i, j] = 0.0 if ub[i] <= 0.0 else _bundle_flow(E.agent, E.item, E.cls, i, c_j)
    return V


def _ratio_from_matrix(V, zero_tol=ZERO_VALUE_TOL):
    """min over i != j with V[i, j] > zero_tol of V[i, i] / V[i, j] (NaN entries skipped); 1.0 if none.

    Returns ``(ratio, (i, j) or None)``.
    """
    k = V.shape[0]
    best, arg = np.inf, None
    for i in range(k):
        for j in range(k):
            if i != j and V[i, j] > zero_tol:  # NaN compares False: skipped
                r = V[i, i] / V[i, j]
                if r < best:
                    best, arg = r, (i, j)
    return (1.0, None) if arg is None else (float(best), arg)


def _check_allocations(allocations, name="allocations"):
    if sp.issparse(allocations) or (isinstance(allocations, np.ndarray) and allocations.ndim != 3):
        raise TypeError(
            f"'{name}' must be a sequence of allocations (one per run) or a 3-d array (runs x agents x "
            f"items); got a single {type(allocations).__name__}"
            + (f" of shape {allocations.shape}." if hasattr(allocations, "shape") else ".")
        )
    if isinstance(allocations, (str, bytes, dict)) or not hasattr(allocations, "__len__"):
        raise TypeError(
            f"'{name}' must be a sequence of allocations (one per run); got {type(allocations).__name__}."
        )
    if len(allocations) == 0:
        raise ValueError(f"'{name}' must hold at least one allocation; got an empty sequence.")
    return list(allocations)


def _run_matrices(instance, allocations, name="allocations"):
    allocations = _check_allocations(allocations, name)
    k = instance.n_classes
    sizes = instance.class_sizes.astype(np.float64)
    out = np.empty((len(allocations), k, k), dtype=np.float64)
    for r, alloc in enumerate(allocations):
        E = _prepare(instance, alloc, instance.n_items, name=f"{name}[{r}]")
        out[r] = _cef_matrix_core(E, k, sizes)
    return out


# ============================================================================================ public
