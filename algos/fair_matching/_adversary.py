r"""A hill-climbing adversary: local search over instances that pushes a measured quantity down.

Used by the tests (the guarantees must hold on the instances it finds, not only on random ones),
by the example and by ``algos demo``.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_random_state, check_scalar_float, check_scalar_int
from ._generators import random_classes
from ._instance import OnlineMatchingInstance

__all__ = ["hill_climb_instance"]


def _mutate(B, cls, order, n_classes, rng):
    B, cls, order = B.copy(), cls.copy(), order.copy()
    n, m = B.shape
    move = rng.integers(0, 4) if n_classes > 1 else rng.integers(0, 3)
    if move <= 1:  # flip one edge (twice as likely as the other moves)
        B[rng.integers(n), rng.integers(m)] ^= True
    elif move == 2 and m > 1:  # swap two arrivals
        i, j = rng.choice(m, size=2, replace=False)
        order[i], order[j] = order[j], order[i]
    else:  # move an agent to another class, keeping every class non-empty
        a = rng.integers(n)
        if np.sum(cls == cls[a]) > 1:
            cls[a] = (cls[a] + rng.integers(1, n_classes)) % n_classes
    return B, cls, order


def hill_climb_instance(objective, n_agents, n_items, n_classes=2, *, n_steps=200, p=0.5,
                        random_state=None):
    r"""Search for an instance that minimises ``objective(instance)`` by stochastic hill climbing.

    Starting from a random instance (edge probability ``p``), each step applies one random
    mutation (flip an edge, swap two arrivals, move an agent to another class) and keeps it when
    the objective does not increase (moves along plateaus are accepted).

    Parameters
    ----------
    objective : callable
        ``objective(instance) -> float``; for example the CEF ratio of an algorithm minus its
        guaranteed bound. ``nan`` values are treated as ``+inf`` (rejected).
    n_agents, n_items, n_classes : int
    n_steps : int, default=200
    p : float in [0, 1], default=0.5
    random_state : None, int or Generator

    Returns
    -------
    instance : OnlineMatchingInstance
        The best instance found.
    value : float
        Its objective.
    history : ndarray of shape (n_steps + 1,)
        Best value after each step.

    Examples
    --------
    >>> from algos.fair_matching import WaterFilling, usw_ratio
    >>> f = lambda inst: usw_ratio(inst, WaterFilling().fit(inst).allocation_)
    >>> inst, value, hist = hill_climb_instance(f, 4, 4, n_steps=30, random_state=0)
    >>> bool(hist[-1] <= hist[0])
    True
    """
    n_agents = check_scalar_int(n_agents, "n_agents", low=1)
    n_items = check_scalar_int(n_items, "n_items", low=1)
    n_classes = check_scalar_int(n_classes, "n_classes", low=1, high=n_agents)
    n_steps = check_scalar_int(n_steps, "n_steps", low=0)
    p = check_scalar_float(p, "p", low=0.0, high=1.0)
    if not callable(objective):
        raise TypeError(f"'objective' must be callable; got {type(objective).__name__}.")
    rng = check_random_state(random_state)

    def value_of(B, cls, order):
        inst = OnlineMatchingInstance.from_biadjacency(B, cls, order=order)
        v = float(objective(inst))
        return (np.inf if np.isnan(v) else v), inst

    B = rng.random((n_agents, n_items)) < p
    cls = random_classes(n_agents, n_classes, rng)
    order = rng.permutation(n_items)
    best, best_inst = value_of(B, cls, order)
    history = np.empty(n_steps + 1)
    history[0] = best
    for s in range(n_steps):
        B2, cls2, order2 = _mutate(B, cls, order, n_classes, rng)
        v, inst = value_of(B2, cls2, order2)
        if v <= best:
            B, cls, order, best, best_inst = B2, cls2, order2, v, inst
        history[s + 1] = best
    return best_inst, best, history
