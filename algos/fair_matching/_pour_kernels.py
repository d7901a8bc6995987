r"""numba kernels of the divisible pours: threshold equal-filling (exact and discretised) and
water-filling (BALANCE).

All kernels process a batch of items in item-major CSR form ``(indptr, indices)`` and update the
algorithm state in place: ``x`` (agent levels, shape (n_agents,)) and ``u`` (class utilities,
shape (n_classes,)). They write the mass given along every edge into ``data`` (aligned with
``indices``) and the unallocated mass of every item into ``waste``. The readable definitions
(numpy, bisection instead of event sweeps) live in :mod:`._pour_reference`; tests pin the two
together.

The exact pour rests on one observation: pouring mass continuously into the lowest buckets of a
set ("water-filling") ends in a state that depends only on the total mass poured, not on how
the pour was split in time. The fair phase is therefore a water-fill at *class* level (bucket of
class ``i``: from its utility ``u_i`` up to ``u_i + sum_{a in N_i cap L}(gamma - x_a)``), followed
by a water-fill at agent level inside every class (buckets ``[x_a, gamma]``). Tied classes are
raised together by construction, so no tie-breaking is needed and the result does not depend on
class or agent labels.
"""

from __future__ import annotations

import numba
import numpy as np

_SMALL_SORT = 32


@numba.njit(cache=True)
def _argsort_small(vals, n, order):
    """Indices sorting ``vals[:n]`` ascending into ``order[:n]`` (insertion sort for small n)."""
    if n > _SMALL_SORT:
        o = np.argsort(vals[:n], kind="mergesort")
        for i in range(n):
            order[i] = o[i]
        return
    for i in range(n):
        order[i] = i
    for i in range(1, n):
        j = i
        cur = order[i]
        v = vals[cur]
        while j > 0 and vals[order[j - 1]] > v:
            order[j] = order[j - 1]
            j -= 1
        order[j] = cur


@numba.njit(cache=True)
def _fill_buckets(bottom, top, n, mass, new_level, vals, sgn, order):
    r"""Water-fill ``mass`` into buckets ``[bottom[j], top[j]]``, ``j < n``.

    Finds the level :math:`W` with :math:`\sum_j (\min(\max(W, b_j), e_j) - b_j) = \text{mass}`
    (or fills every bucket when the mass exceeds the room) by sweeping the sorted breakpoints, and
    writes ``new_level[j] = min(max(W, b_j), e_j)``; a full bucket gets exactly ``top[j]``.
    Returns the mass used. ``vals``, ``sgn``, ``order`` are scratch arrays of length >= 2n.
    """
    if n == 1:  # fast path (most buckets hold one agent or one class at degree ~5)
        nl = bottom[0] + mass
        if nl >= top[0]:
            new_level[0] = top[0]
            return top[0] - bottom[0]
        if mass <= 0.0:
            new_level[0] = bottom[0]
            return 0.0
        new_level[0] = nl
        return mass
    room = 0.0
    for j in range(n):
        room += top[j] - bottom[j]
    if mass >= room:
        for j in range(n):
            new_level[j] = top[j]
        return room
    if mass <= 0.0:
        for j in range(n):
            new_level[j] = bottom[j]
        return 0.0
    ne = 0
    for j in range(n):
        if top[j] > bottom[j]:
            vals[ne] = bottom[j]
            sgn[ne] = 1
            ne += 1
            vals[ne] = top[j]
            sgn[ne] = -1
            ne += 1
    _argsort_small(vals, ne, order)
    slope = 0
    rem = mass
    prev = vals[order[0]]
    level = vals[order[ne - 1]]  # fallback: everything full (only reached through round-off)
    i = 0
    while i < ne:
        v = vals[order[i]]
        if slope > 0:
            need = slope * (v - prev)
            if need >= rem:
                level = prev + rem / slope
                break
            rem -= need
        prev = v
        while i < ne and vals[order[i]] == v:
            slope += sgn[order[i]]
            i += 1
    used = 0.0
    for j in range(n):
        nl = level
        if nl < bottom[j]:
            nl = bottom[j]
        if nl > top[j]:
            nl = top[j]
        new_level[j] = nl
        used += nl - bottom[j]
    return used


@numba.njit(cache=True)
def _level_fill(indices, lo, hi, agent_class, cap_level, x, u, rem, data, bottom, top, new_level, pos, vals, sgn,
                order):
    """Water-fill ``rem`` into the neighbours ``indices[lo:hi]`` whose level is below
    ``cap_level``, up to ``cap_level``; updates ``x``, ``u`` and ``data``; returns the mass used."""
    n = 0
    for e in range(lo, hi):
        a = indices[e]
        if x[a] < cap_level:
            bottom[n] = x[a]
            top[n] = cap_level
            pos[n] = e
            n += 1
    if n == 0:
        return 0.0
    _fill_buckets(bottom, top, n, rem, new_level, vals, sgn, order)
    used = 0.0
    for j in range(n):
        e = pos[j]
        a = indices[e]
        inc = new_level[j] - x[a]
        data[e] += inc
        u[agent_class[a]] += inc
        used += inc
        x[a] = new_level[j]
    return used


@numba.njit(cache=True)
def tef_exact_kernel(indptr, indices, agent_class, n_classes, gamma, fair_rule, x, u, data, waste):
    r"""Exact event-driven threshold equal-filling over a batch of items (Algorithm A).

    For each item (mass 1): a class-level water-fill over the classes that have a neighbour below
    ``gamma``: bucket of class ``i`` from ``b_i`` up to ``b_i + sum_{a in N_i cap L} (gamma - x_a)``
    with ``b_i = 0`` for ``fair_rule=1`` (equal split: all eligible classes get mass at the same
    rate until they saturate) and ``b_i = u_i`` for ``fair_rule=0`` (min utility: lowest classes
    first);
    an agent-level water-fill inside every class (cap ``gamma``), then water-filling of the rest
    over neighbours below 1 (cap 1); mass that fits nowhere is wasted.
    Cost: O(d log d) per item of degree d (insertion sort below 32 breakpoints).
    """
    m = indptr.shape[0] - 1
    maxd = 1
    for t in range(m):
        d = indptr[t + 1] - indptr[t]
        if d > maxd:
            maxd = d
    bottom = np.empty(maxd)
    top = np.empty(maxd)
    new_level = np.empty(maxd)
    pos = np.empty(maxd, dtype=np.int64)
    vals = np.empty(2 * maxd)
    sgn = np.empty(2 * maxd, dtype=np.int64)
    order = np.empty(2 * maxd, dtype=np.int64)
    # per-class scratch (reset through the list of touched classes)
    cap = np.zeros(n_classes)
    seen = np.zeros(n_classes, dtype=np.bool_)
    cls_list = np.empty(maxd, dtype=np.int64)
    c_bottom = np.empty(maxd)
    c_top = np.empty(maxd)
    c_new = np.empty(maxd)
    for t in range(m):
        lo = indptr[t]
        hi = indptr[t + 1]
        rem = 1.0
        # ---- fair phase: neighbours strictly below the threshold
        nc = 0
        n_open = 0
        for e in range(lo, hi):
            a = indices[e]
            if x[a] < 1.0:
                n_open += 1
            if x[a] < gamma:
                c = agent_class[a]
                if not seen[c]:
                    seen[c] = True
                    cls_list[nc] = c
                    nc += 1
                cap[c] += gamma - x[a]
        if nc > 0:
            for j in range(nc):
                c = cls_list[j]
                # equal split (rule 1): every eligible class rises from 0 at the same rate;
                # min utility (rule 0): classes rise from their utilities (lowest first)
                base = u[c] if fair_rule == 0 else 0.0
                c_bottom[j] = base
                c_top[j] = base + cap[c]
            _fill_buckets(c_bottom, c_top, nc, rem, c_new, vals, sgn, order)
            for j in range(nc):
                c = cls_list[j]
                saturated = c_new[j] >= c_top[j]
                delta = c_new[j] - c_bottom[j]
                # agent-level water-fill inside class c, cap gamma
                n = 0
                for e in range(lo, hi):
                    a = indices[e]
                    if agent_class[a] == c and x[a] < gamma:
                        bottom[n] = x[a]
                        top[n] = gamma
                        pos[n] = e
                        n += 1
                if saturated:
                    for q in range(n):
                        new_level[q] = gamma
                else:
                    _fill_buckets(bottom, top, n, delta, new_level, vals, sgn, order)
                gained = 0.0
                for q in range(n):
                    e = pos[q]
                    a = indices[e]
                    inc = new_level[q] - x[a]
                    data[e] += inc
                    gained += inc
                    x[a] = new_level[q]
                u[c] += gained
                rem -= gained
                cap[c] = 0.0
                seen[c] = False
        # ---- efficiency phase: water-filling (BALANCE) of what is left, cap 1
        # (skipped when every neighbour was already full: the common case late in a stream)
        if rem > 1e-15 and n_open > 0:  # below 1e-15 the fair phase took the unit up to round-off
            rem -= _level_fill(indices, lo, hi, agent_class, 1.0, x, u, rem, data, bottom, top, new_level, pos, vals,
                               sgn, order)
        waste[t] = rem if rem > 0.0 else 0.0
    return 0


@numba.njit(cache=True)
def class_utilities(x, agent_class, n_classes):
    """``u_i = sum_{a in N_i} x_a``."""
    u = np.zeros(n_classes)
    for a in range(x.shape[0]):
        u[agent_class[a]] += x[a]
    return u


@numba.njit(cache=True)
def _scratch_degree(indptr):
    maxd = 1
    for t in range(indptr.shape[0] - 1):
        d = indptr[t + 1] - indptr[t]
        if d > maxd:
            maxd = d
    return maxd


@numba.njit(cache=True)
def water_filling_kernel(indptr, indices, agent_class, x, u, data, waste):
    r"""Water-filling / BALANCE (Kalyanasundaram & Pruhs 2000): every item raises the common level
    of its lowest neighbours until its unit of mass is spent or all of them are full."""
    maxd = _scratch_degree(indptr)
    bottom = np.empty(maxd)
    top = np.empty(maxd)
    new_level = np.empty(maxd)
    pos = np.empty(maxd, dtype=np.int64)
    vals = np.empty(2 * maxd)
    sgn = np.empty(2 * maxd, dtype=np.int64)
    order = np.empty(2 * maxd, dtype=np.int64)
    for t in range(indptr.shape[0] - 1):
        used = _level_fill(indices, indptr[t], indptr[t + 1], agent_class, 1.0, x, u, 1.0, data,
                           bottom, top, new_level, pos, vals, sgn, order)
        rem = 1.0 - used
        waste[t] = rem if rem > 0.0 else 0.0
    return 0


@numba.njit(cache=True)
def tef_discrete_kernel(indptr, indices, agent_class, n_classes, gamma, fair_rule, steps, class_priority, x, u, data,
                        waste):
    r"""Discretised threshold equal-filling: each item is poured in ``steps`` pieces of
    ``1/steps``. A piece goes, while some neighbour is below ``gamma``, to the class of smallest
    utility (``fair_rule=0``) or that has received least of this item so far (``fair_rule=1``, equal
    split) among the classes with such a neighbour (ties: smallest ``class_priority``), and inside
    it to the lowest-level neighbour below ``gamma`` (ties: lowest id), capped at ``gamma``;
    otherwise to the lowest-level neighbour below 1, capped at 1. Cut pieces continue with the
    next choice. Error O(1/steps) per item against the exact pour. Cost O(steps * d) per item.
    """
    delta = 1.0 / steps
    got = np.zeros(n_classes)  # mass of the current item received by each class
    for t in range(indptr.shape[0] - 1):
        lo = indptr[t]
        hi = indptr[t + 1]
        rem = 1.0
        for e in range(lo, hi):
            got[agent_class[indices[e]]] = 0.0
        key = u if fair_rule == 0 else got
        for s in range(steps):
            piece = delta if s < steps - 1 else rem
            while piece > 0.0:
                best_e = -1
                # fair tier
                best_c = -1
                for e in range(lo, hi):
                    a = indices[e]
                    if x[a] < gamma:
                        c = agent_class[a]
                        if best_c < 0 or key[c] < key[best_c] or (
                                key[c] == key[best_c] and class_priority[c] < class_priority[best_c]):
                            best_c = c
                cap_level = gamma
                if best_c >= 0:
                    for e in range(lo, hi):
                        a = indices[e]
                        if agent_class[a] == best_c and x[a] < gamma:
                            if best_e < 0 or x[a] < x[indices[best_e]]:
                                best_e = e
                else:
                    cap_level = 1.0
                    for e in range(lo, hi):
                        a = indices[e]
                        if x[a] < 1.0:
                            if best_e < 0 or x[a] < x[indices[best_e]]:
                                best_e = e
                if best_e < 0:
                    break
                a = indices[best_e]
                give = cap_level - x[a]
                if give >= piece:
                    give = piece
                    x[a] += give
                else:
                    x[a] = cap_level
                data[best_e] += give
                u[agent_class[a]] += give
                got[agent_class[a]] += give
                piece -= give
                rem -= give
            if best_e < 0:
                break
        waste[t] = rem if rem > 0.0 else 0.0
    return 0
