r"""Numba kernels for the indivisible online matchers (HybridRanking, RANKING, Greedy), with
plain-Python reference twins.

All kernels process a *batch* of items for ``R`` independent Monte-Carlo runs at once and carry
their state between calls, so a stream can be fed in any chunking and gives the same result:

* ``indptr, indices`` : item-major CSR of the batch (``indices[indptr[t]:indptr[t+1]]`` are the
  neighbours of item ``t``, sorted ascending and without duplicates, as in
  :class:`~algos.fair_matching.OnlineMatchingInstance`);
* ``agent_class`` : int64, shape (n,), labels ``0..k-1``;
* ``ranks`` : float64, shape (R, n), the ranks :math:`y_a \in [0, 1)` of every run;
* ``tie_keys`` : float64, shape (n_batch_items, R), one key in ``[0, 1)`` per item and run
  (item-major, so that drawing keys batch by batch consumes the random stream in arrival order);
* ``matched`` : shape (R, n), **updated in place** (uint8 or bool are used without a copy; other
  dtypes are converted and written back);
* ``class_utility`` : shape (R, k), realized class utilities (number of matched agents of each
  class), **updated in place** (computed in int64; other dtypes are converted and written back);
* ``match_out`` : int64, shape (R, n_batch_items), receives the matched agent of every item, or -1.

No random numbers are drawn inside the kernels and no ``fastmath`` is used: a kernel's output is
a deterministic function of its inputs, bit for bit. Every run is independent of the others, so
the ``prange`` variants (used for many runs) give exactly the same output as the serial ones.

The ``*_reference`` functions are the readable definitions; they are slow and only used by tests.

Selection rule shared by the random tie-breaks: with ``c`` candidates (sorted ascending) and key
``u``, the candidate at position ``min(floor(u * c), c - 1)`` is chosen; for ``u ~ U[0, 1)`` this is
a uniform choice.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .._parallel import use_parallel

__all__ = [
    "FAIR_RULES",
    "GREEDY_TIES",
    "hybrid_ranking_batch",
    "ranking_batch",
    "greedy_batch",
    "edge_counts",
    "hybrid_ranking_reference",
    "ranking_reference",
    "greedy_reference",
]

#: fair-tier rule name -> kernel code
FAIR_RULES = {"min_utility": 0, "random_class": 1}
#: greedy tie rule name -> kernel code
GREEDY_TIES = {"first": 0, "random": 1}

# Use the prange variants when there are at least this many runs, at least this much work (runs x
# edges of the batch) and numba has > 1 thread: a prange kernel is compiled in every process (1-4 CPU-s,
# see algos._parallel), the serial ones are cached; the outputs are identical either way.
_PARALLEL_MIN_RUNS = 8
_PARALLEL_MIN_WORK = 2_000_000


# --------------------------------------------------------------------------------------------
# HybridRanking
# --------------------------------------------------------------------------------------------
@numba.njit
def _pick_index(key, n):
    """``min(floor(key * n), n - 1)``: position of a uniform choice among ``n`` sorted candidates."""
    j = int(math.floor(key * n))
    if j >= n:
        j = n - 1
    if j < 0:
        j = 0
    return j


@numba.njit
def _sift_down(buf, root, end):
    while True:
        child = 2 * root + 1
        if child >= end:
            return
        if child + 1 < end and buf[child + 1] > buf[child]:
            child += 1
        if buf[root] >= buf[child]:
            return
        buf[root], buf[child] = buf[child], buf[root]
        root = child


@numba.njit
def _sort_small(buf, n):
    """Sort ``buf[:n]`` ascending in place, without allocating: insertion sort for short lists
    (the usual case: a handful of classes per item), heapsort beyond 16 entries."""
    if n <= 16:
        for i in range(1, n):
            v = buf[i]
            j = i - 1
            while j >= 0 and buf[j] > v:
                buf[j + 1] = buf[j]
                j -= 1
            buf[j + 1] = v
        return
    for root in range(n // 2 - 1, -1, -1):
        _sift_down(buf, root, n)
    for end in range(n - 1, 0, -1):
        buf[0], buf[end] = buf[end], buf[0]
        _sift_down(buf, 0, end)


@numba.njit
def _hybrid_one_run(r, indptr, indices, agent_class, gamma, fair_rule, ranks, tie_keys, matched,
                    class_utility, match_out, stamp, best_agent, present):
    """Run ``r`` of HybridRanking over the batch. Scratch: ``stamp`` (k, int64, all -1 on entry),
    ``best_agent`` and ``present`` (k, int64). O(deg(t) + c log c) per item, c = classes present."""
    m = indptr.shape[0] - 1
    for t in range(m):
        eff_a = -1
        eff_y = 0.0
        n_present = 0
        for e in range(indptr[t], indptr[t + 1]):
            a = indices[e]
            if matched[r, a]:
                continue
            ya = ranks[r, a]
            # efficiency tier candidate: smallest rank, ties -> lowest agent id
            if eff_a < 0 or ya < eff_y or (ya == eff_y and a < eff_a):
                eff_a = a
                eff_y = ya
            if ya < gamma:
                c = agent_class[a]
                if stamp[c] != t:  # first fair agent of class c for this item
                    stamp[c] = t
                    present[n_present] = c
                    n_present += 1
                    best_agent[c] = a
                else:
                    b = best_agent[c]
                    yb = ranks[r, b]
                    if ya < yb or (ya == yb and a < b):
                        best_agent[c] = a
        if eff_a < 0:  # no unmatched neighbour: the item is dropped
            match_out[r, t] = -1
            continue
        if n_present > 0:  # fair tier
            nc = n_present
            if fair_rule == 0:  # min_utility: keep the present classes of least realized utility
                minu = class_utility[r, present[0]]
                for j in range(1, n_present):
                    u = class_utility[r, present[j]]
                    if u < minu:
                        minu = u
                nc = 0
                for j in range(n_present):
                    c = present[j]
                    if class_utility[r, c] == minu:
                        present[nc] = c
                        nc += 1
            _sort_small(present, nc)
            chosen = present[_pick_index(tie_keys[t, r], nc)]
            a = best_agent[chosen]
        else:  # efficiency tier: KVV RANKING
            a = eff_a
        matched[r, a] = 1
        class_utility[r, agent_class[a]] += 1
        match_out[r, t] = a
    # reset the stamps so the scratch can be reused by the next call / run
    for c in range(stamp.shape[0]):
        stamp[c] = -1


@numba.njit(cache=True)
def _hybrid_ranking_serial(indptr, indices, agent_class, n_classes, gamma, fair_rule, ranks,
                           tie_keys, matched, class_utility, match_out):
    R = ranks.shape[0]
    stamp = np.full(n_classes, -1, dtype=np.int64)
    best_agent = np.zeros(n_classes, dtype=np.int64)
    present = np.zeros(n_classes, dtype=np.int64)
    for r in range(R):
        _hybrid_one_run(r, indptr, indices, agent_class, gamma, fair_rule, ranks, tie_keys, matched,
                        class_utility, match_out, stamp, best_agent, present)


@numba.njit(parallel=True)
def _hybrid_ranking_parallel(indptr, indices, agent_class, n_classes, gamma, fair_rule, ranks,
                             tie_keys, matched, class_utility, match_out):
    R = ranks.shape[0]
    for r in numba.prange(R):
        stamp = np.full(n_classes, -1, dtype=np.int64)
        best_agent = np.zeros(n_classes, dtype=np.int64)
        present = np.zeros(n_classes, dtype=np.int64)
        _hybrid_one_run(r, indptr, indices, agent_class, gamma, fair_rule, ranks, tie_keys, matched,
                        class_utility, match_out, stamp, best_agent, present)


def _check_kernel_inputs(indptr, indices, ranks, tie_keys, matched, class_utility, need_keys=True):
    R, n = ranks.shape
    m = indptr.shape[0] - 1
    if matched.shape != (R, n):
        raise ValueError(f"'matched' must have shape {(R, n)}; got {matched.shape}.")
    if class_utility.ndim != 2 or class_utility.shape[0] != R:
        raise ValueError(f"'class_utility' must have shape (R={R}, k); got {class_utility.shape}.")
    if need_keys and tie_keys.shape != (m, R):
        raise ValueError(f"'tie_keys' must have shape {(m, R)} (items x runs); got {tie_keys.shape}.")
    if indices.size and (indices.min() < 0 or indices.max() >= n):
        raise ValueError(f"agent ids must be in [0, {n - 1}]; got {int(indices.min())}..{int(indices.max())}.")
    return R, n, m


def _code(value, name, options):
    """Kernel code of an option given by name or by code."""
    if isinstance(value, str):
        if value not in options:
            opts = ", ".join(repr(o) for o in options)
            raise ValueError(f"'{name}' must be one of {{{opts}}}; got {value!r}.")
        return options[value]
    if int(value) not in options.values():
        raise ValueError(f"'{name}' must be one of {sorted(options.values())} (or a name); got {value!r}.")
    return int(value)


def _state_arrays(matched, class_utility):
    """uint8 / int64 working views of the state (one compiled specialisation per kernel), and a
    function writing them back when a copy had to be made."""
    m_work, m_copied = matched, False
    if matched.dtype == np.bool_ and matched.flags.c_contiguous:
        m_work = matched.view(np.uint8)  # same memory: writes land in `matched`
    elif matched.dtype != np.uint8 or not matched.flags.c_contiguous:
        m_work, m_copied = np.ascontiguousarray(matched, dtype=np.uint8), True
    u_work = class_utility
    if class_utility.dtype != np.int64 or not class_utility.flags.c_contiguous:
        u_work = np.ascontiguousarray(class_utility, dtype=np.int64)

    def write_back():
        if m_copied:
            matched[...] = m_work
        if u_work is not class_utility:
            class_utility[...] = u_work

    return m_work, u_work, write_back


def _use_parallel(R, parallel, n_edges):
    if parallel is None:
        return R >= _PARALLEL_MIN_RUNS and use_parallel(R * n_edges, _PARALLEL_MIN_WORK)
    return bool(parallel)


def hybrid_ranking_batch(indptr, indices, agent_class, n_classes, gamma, fair_rule, ranks, tie_keys,
                         matched, class_utility, *, parallel=None):
    r"""HybridRanking (fair_matching reconstruction notes, section 1.3) on a batch of items, ``R`` runs at once.

    A numba kernel.

    For item ``t`` in run ``r``: let ``U`` be its unmatched neighbours (if empty, output -1) and
    :math:`U_\gamma = \{a \in U : y_a < \gamma\}`.

    * Fair tier (:math:`U_\gamma \ne \emptyset`): the candidate classes are the classes present in
      :math:`U_\gamma` (``fair_rule=1``, "random_class") or those of them with the smallest current
      realized utility (``fair_rule=0``, "min_utility"). Sorted by label, the candidate at position
      ``floor(tie_keys[t, r] * n_candidates)`` is chosen, and ``t`` goes to that class's agent in
      :math:`U_\gamma` with the smallest rank (ties: lowest id).
    * Efficiency tier: ``t`` goes to :math:`\arg\min_{a \in U} y_a` (ties: lowest id).

    ``matched`` and ``class_utility`` are updated in place. Returns ``match`` (R x n_batch, int64).
    ``fair_rule`` is the code (0, 1) or the name. ``parallel=None`` runs the runs in parallel
    threads when ``R >= 8`` and ``R * len(indices) >= 2e6`` (identical output).
    """
    fair_rule = _code(fair_rule, "fair_rule", FAIR_RULES)
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    indices = np.ascontiguousarray(indices, dtype=np.int64)
    agent_class = np.ascontiguousarray(agent_class, dtype=np.int64)
    R, n, m = _check_kernel_inputs(indptr, indices, ranks, tie_keys, matched, class_utility)
    match = np.empty((R, m), dtype=np.int64)
    if m == 0 or R == 0:
        return match
    kern = _hybrid_ranking_parallel if _use_parallel(R, parallel, len(indices)) else _hybrid_ranking_serial
    m_work, u_work, write_back = _state_arrays(matched, class_utility)
    kern(indptr, indices, agent_class, int(n_classes), float(gamma), int(fair_rule),
         np.ascontiguousarray(ranks, dtype=np.float64), np.ascontiguousarray(tie_keys, dtype=np.float64),
         m_work, u_work, match)
    write_back()
    return match


def hybrid_ranking_reference(indptr, indices, agent_class, n_classes, gamma, fair_rule, ranks, tie_keys,
                             matched, class_utility):
    """Readable definition of :func:`hybrid_ranking_batch` (plain Python; tests only).

    ``fair_rule`` may be the code (0/1) or the name. Updates ``matched``/``class_utility`` in place.
    """
    if isinstance(fair_rule, str):
        fair_rule = FAIR_RULES[fair_rule]
    R = ranks.shape[0]
    m = len(indptr) - 1
    match = np.full((R, m), -1, dtype=np.int64)
    for r in range(R):
        y = ranks[r]
        for t in range(m):
            nbrs = [int(a) for a in indices[indptr[t]:indptr[t + 1]]]
            U = [a for a in nbrs if not matched[r, a]]
            if not U:
                continue
            U_gamma = [a for a in U if y[a] < gamma]
            if U_gamma:
                classes = sorted({int(agent_class[a]) for a in U_gamma})
                if fair_rule == 0:
                    low = min(class_utility[r, c] for c in classes)
                    classes = [c for c in classes if class_utility[r, c] == low]
                j = min(int(math.floor(tie_keys[t, r] * len(classes))), len(classes) - 1)
                chosen = classes[j]
                a = min((a for a in U_gamma if agent_class[a] == chosen), key=lambda a: (y[a], a))
            else:
                a = min(U, key=lambda a: (y[a], a))
            match[r, t] = a
            matched[r, a] = 1
            class_utility[r, agent_class[a]] += 1
    return match


# --------------------------------------------------------------------------------------------
# RANKING (KVV) baseline
# --------------------------------------------------------------------------------------------
@numba.njit
def _ranking_one_run(r, indptr, indices, agent_class, ranks, matched, class_utility, match_out):
    m = indptr.shape[0] - 1
    for t in range(m):
        best = -1
        best_y = 0.0
        for e in range(indptr[t], indptr[t + 1]):
            a = indices[e]
            if matched[r, a]:
                continue
            ya = ranks[r, a]
            if best < 0 or ya < best_y or (ya == best_y and a < best):
                best = a
                best_y = ya
        match_out[r, t] = best
        if best >= 0:
            matched[r, best] = 1
            class_utility[r, agent_class[best]] += 1


@numba.njit(cache=True)
def _ranking_serial(indptr, indices, agent_class, ranks, matched, class_utility, match_out):
    for r in range(ranks.shape[0]):
        _ranking_one_run(r, indptr, indices, agent_class, ranks, matched, class_utility, match_out)


@numba.njit(parallel=True)
def _ranking_parallel(indptr, indices, agent_class, ranks, matched, class_utility, match_out):
    for r in numba.prange(ranks.shape[0]):
        _ranking_one_run(r, indptr, indices, agent_class, ranks, matched, class_utility, match_out)


def ranking_batch(indptr, indices, agent_class, ranks, matched, class_utility, *, parallel=None):
    """KVV RANKING for a batch, ``R`` runs: each item goes to its unmatched neighbour of smallest
    rank (ties: lowest id), or -1. Updates ``matched``/``class_utility``; returns ``match``."""
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    indices = np.ascontiguousarray(indices, dtype=np.int64)
    agent_class = np.ascontiguousarray(agent_class, dtype=np.int64)
    R, n, m = _check_kernel_inputs(indptr, indices, ranks, None, matched, class_utility, need_keys=False)
    match = np.empty((R, m), dtype=np.int64)
    if m == 0 or R == 0:
        return match
    kern = _ranking_parallel if _use_parallel(R, parallel, len(indices)) else _ranking_serial
    m_work, u_work, write_back = _state_arrays(matched, class_utility)
    kern(indptr, indices, agent_class, np.ascontiguousarray(ranks, dtype=np.float64), m_work, u_work, match)
    write_back()
    return match


def ranking_reference(indptr, indices, agent_class, ranks, matched, class_utility):
    """Readable definition of :func:`ranking_batch` (tests only)."""
    R = ranks.shape[0]
    m = len(indptr) - 1
    match = np.full((R, m), -1, dtype=np.int64)
    for r in range(R):
        for t in range(m):
            U = [int(a) for a in indices[indptr[t]:indptr[t + 1]] if not matched[r, a]]
            if U:
                a = min(U, key=lambda a: (ranks[r, a], a))
                match[r, t] = a
                matched[r, a] = 1
                class_utility[r, agent_class[a]] += 1
    return match


# --------------------------------------------------------------------------------------------
# Greedy baseline
# --------------------------------------------------------------------------------------------
@numba.njit
def _greedy_one_run(r, indptr, indices, agent_class, tie, tie_keys, matched, class_utility, match_out):
    m = indptr.shape[0] - 1
    for t in range(m):
        chosen = -1
        if tie == 0:  # lowest-id unmatched neighbour
            for e in range(indptr[t], indptr[t + 1]):
                a = indices[e]
                if not matched[r, a] and (chosen < 0 or a < chosen):
                    chosen = a
        else:  # uniform among the unmatched neighbours (in the order of `indices`)
            cnt = 0
            for e in range(indptr[t], indptr[t + 1]):
                if not matched[r, indices[e]]:
                    cnt += 1
            if cnt > 0:
                j = _pick_index(tie_keys[t, r], cnt)
                for e in range(indptr[t], indptr[t + 1]):
                    a = indices[e]
                    if not matched[r, a]:
                        if j == 0:
                            chosen = a
                            break
                        j -= 1
        match_out[r, t] = chosen
        if chosen >= 0:
            matched[r, chosen] = 1
            class_utility[r, agent_class[chosen]] += 1


@numba.njit(cache=True)
def _greedy_serial(indptr, indices, agent_class, tie, tie_keys, matched, class_utility, match_out):
    for r in range(matched.shape[0]):
        _greedy_one_run(r, indptr, indices, agent_class, tie, tie_keys, matched, class_utility, match_out)


@numba.njit(parallel=True)
def _greedy_parallel(indptr, indices, agent_class, tie, tie_keys, matched, class_utility, match_out):
    for r in numba.prange(matched.shape[0]):
        _greedy_one_run(r, indptr, indices, agent_class, tie, tie_keys, matched, class_utility, match_out)


def greedy_batch(indptr, indices, agent_class, tie, tie_keys, matched, class_utility, *, parallel=None):
    """Greedy for a batch, ``R`` runs: ``tie=0`` ("first") takes the lowest-id unmatched neighbour,
    ``tie=1`` ("random") the one at position ``floor(tie_keys[t, r] * |U|)`` of the unmatched
    neighbours in ascending id order. ``tie_keys`` may be None for ``tie=0``."""
    tie = _code(tie, "tie", GREEDY_TIES)
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    indices = np.ascontiguousarray(indices, dtype=np.int64)
    agent_class = np.ascontiguousarray(agent_class, dtype=np.int64)
    R = matched.shape[0]
    m = indptr.shape[0] - 1
    if tie_keys is None:
        if tie != 0:
            raise ValueError("'tie_keys' are needed for tie='random'.")
        tie_keys = np.zeros((m, R))
    fake_ranks = np.empty((R, matched.shape[1]))
    _check_kernel_inputs(indptr, indices, fake_ranks, tie_keys, matched, class_utility)
    match = np.empty((R, m), dtype=np.int64)
    if m == 0 or R == 0:
        return match
    kern = _greedy_parallel if _use_parallel(R, parallel, len(indices)) else _greedy_serial
    m_work, u_work, write_back = _state_arrays(matched, class_utility)
    kern(indptr, indices, agent_class, int(tie), np.ascontiguousarray(tie_keys, dtype=np.float64), m_work,
         u_work, match)
    write_back()
    return match


def greedy_reference(indptr, indices, agent_class, tie, tie_keys, matched, class_utility):
    """Readable definition of :func:`greedy_batch` (tests only)."""
    if isinstance(tie, str):
        tie = GREEDY_TIES[tie]
    R = matched.shape[0]
    m = len(indptr) - 1
    match = np.full((R, m), -1, dtype=np.int64)
    for r in range(R):
        for t in range(m):
            U = sorted(int(a) for a in indices[indptr[t]:indptr[t + 1]] if not matched[r, a])
            if not U:
                continue
            if tie == 0:
                a = U[0]
            else:
                a = U[min(int(math.floor(tie_keys[t, r] * len(U))), len(U) - 1)]
            match[r, t] = a
            matched[r, a] = 1
            class_utility[r, agent_class[a]] += 1
    return match


# --------------------------------------------------------------------------------------------
# edge usage counts (for the empirical ex-ante allocation)
# --------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _edge_counts(indptr, indices, match, counts):
    R, m = match.shape
    for r in range(R):
        for t in range(m):
            a = match[r, t]
            if a < 0:
                continue
            for e in range(indptr[t], indptr[t + 1]):
                if indices[e] == a:
                    counts[e] += 1
                    break


def edge_counts(indptr, indices, match):
    """Number of runs in which each edge of the batch was used, int64 aligned with ``indices``."""
    counts = np.zeros(indices.shape[0], dtype=np.int64)
    if match.size:
        _edge_counts(np.ascontiguousarray(indptr, dtype=np.int64), np.ascontiguousarray(indices, dtype=np.int64),
                     np.ascontiguousarray(match, dtype=np.int64), counts)
    return counts
