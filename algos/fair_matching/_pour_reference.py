r"""Plain-numpy reference twins of the pour kernels (readable definitions; used only by tests).

They solve every water-fill by bisection on the fill level instead of sweeping sorted
breakpoints, so they share no code with :mod:`._pour_kernels`.
"""

from __future__ import annotations

import numpy as np


def _bisect_fill(bottom, top, mass, iters=200):
    """Levels ``min(max(W, bottom), top)`` with total increase ``min(mass, room)``, W by bisection."""
    bottom = np.asarray(bottom, dtype=float)
    top = np.asarray(top, dtype=float)
    room = float(np.sum(top - bottom))
    if mass >= room:
        return top.copy()
    lo, hi = float(bottom.min()), float(top.max())
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if np.sum(np.clip(mid, bottom, top) - bottom) < mass:
            lo = mid
        else:
            hi = mid
    return np.clip(0.5 * (lo + hi), bottom, top)


def tef_exact_reference(instance, gamma, fair_rule="equal_split"):
    """Threshold equal-filling (exact pour), returns ``(data, waste)`` aligned with the instance.

    ``fair_rule="equal_split"``: eligible classes receive the item at equal rates until they
    saturate; ``"min_utility"``: the classes of lowest utility receive it first.
    """
    x = np.zeros(instance.n_agents)
    u = np.zeros(instance.n_classes)
    data = np.zeros(instance.n_edges)
    waste = np.zeros(instance.n_items)
    cls = instance.agent_class
    for t in range(instance.n_items):
        lo, hi = instance.indptr[t], instance.indptr[t + 1]
        nb = np.asarray(instance.indices[lo:hi])
        before = x[nb].copy()
        rem = 1.0
        below = nb[x[nb] < gamma]
        if below.size:
            classes = np.unique(cls[below])
            caps = np.array([np.sum(gamma - x[below[cls[below] == c]]) for c in classes])
            base = u[classes] if fair_rule == "min_utility" else np.zeros(classes.size)
            levels = _bisect_fill(base, base + caps, rem)
            for c, b, cap_c, lvl in zip(classes, base, caps, levels):
                members = below[cls[below] == c]
                if lvl >= b + cap_c:
                    new = np.full(members.size, gamma)
                else:
                    new = _bisect_fill(x[members], np.full(members.size, gamma), lvl - b)
                gained = new - x[members]
                x[members] = new
                u[c] += gained.sum()
                rem -= gained.sum()
        open_ = nb[x[nb] < 1.0]
        if rem > 1e-15 and open_.size:
            new = _bisect_fill(x[open_], np.ones(open_.size), rem)
            gained = new - x[open_]
            x[open_] = new
            np.add.at(u, cls[open_], gained)
            rem -= gained.sum()
        data[lo:hi] = x[nb] - before
        waste[t] = max(rem, 0.0)
    return data, waste


def water_filling_reference(instance):
    """Water-filling / BALANCE, returns ``(data, waste)``."""
    x = np.zeros(instance.n_agents)
    data = np.zeros(instance.n_edges)
    waste = np.zeros(instance.n_items)
    for t in range(instance.n_items):
        lo, hi = instance.indptr[t], instance.indptr[t + 1]
        nb = np.asarray(instance.indices[lo:hi])
        open_ = x[nb] < 1.0
        if not open_.any():
            waste[t] = 1.0
            continue
        new = _bisect_fill(x[nb][open_], np.ones(int(open_.sum())), 1.0)
        inc = np.zeros(nb.size)
        inc[open_] = new - x[nb][open_]
        data[lo:hi] = inc
        x[nb] += inc
        waste[t] = max(1.0 - inc.sum(), 0.0)
    return data, waste
