"""Shared Hypothesis strategies.

Hypothesis draws sizes, kinds and a seed; numpy draws the data from ``default_rng(seed)``. Every
strategy is a small ``@st.composite`` function with keyword-only bounds.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

SEEDS = st.integers(0, 2**32 - 1)


@st.composite
def matching_instances(draw, *, min_agents=2, max_agents=8, max_items=10, max_classes=4, structured=True):
    """An :class:`~algos.fair_matching.OnlineMatchingInstance` (spec section 2 generators).

    Kinds: Erdos-Renyi with ``p`` in [0.2, 0.9] (most draws); and, when ``structured``, complete
    bipartite, upper-triangular (KVV), disjoint stars, one class of size 1 against a big class, and
    random instances with some items that have no neighbour. The arrival order is a permutation
    drawn by Hypothesis.
    """
    from algos.fair_matching import OnlineMatchingInstance

    n = draw(st.integers(min_agents, max_agents))
    m = draw(st.integers(1, max_items))
    k = draw(st.integers(min(2, n), max(min(2, n), min(max_classes, n))))
    seed = draw(SEEDS)
    rng = np.random.default_rng(seed)
    kinds = ["random"] * 4 + (["complete", "triangular", "stars", "singleton", "holes"] if structured else [])
    kind = draw(st.sampled_from(kinds))
    cls = np.concatenate([np.arange(k), rng.integers(0, k, size=n - k)])
    rng.shuffle(cls)
    if kind == "random":
        p = draw(st.floats(0.2, 0.9))
        B = rng.random((n, m)) < p
    elif kind == "complete":
        B = np.ones((n, m), dtype=bool)
    elif kind == "triangular":
        B = np.zeros((n, m), dtype=bool)
        for s in range(m):
            B[s % n :, s] = True
    elif kind == "stars":
        B = np.zeros((n, m), dtype=bool)
        B[np.arange(m) % n, np.arange(m)] = True
    elif kind == "singleton":
        cls = np.ones(n, dtype=np.int64)
        cls[0] = 0
        k = 2
        B = rng.random((n, m)) < 0.6
    else:  # "holes": random with some items that nobody likes
        B = rng.random((n, m)) < 0.5
        B[:, rng.random(m) < 0.3] = False
    order = draw(st.permutations(range(m)))
    return OnlineMatchingInstance.from_biadjacency(B, cls, order=np.asarray(order, dtype=np.int64))


@st.composite
def gammas(draw, *, grid=True):
    """gamma in [0, 1]: the grid {0, 0.1, ..., 1} (to hit the limits) or any float."""
    if grid and draw(st.booleans()):
        return draw(st.sampled_from([round(0.1 * i, 1) for i in range(11)]))
    return draw(st.floats(0.0, 1.0))


@st.composite
def pomdps(draw, *, min_states=2, max_states=5, max_actions=3, max_observations=3,
           discounts=(0.7, 0.8, 0.9), with_rng=False):
    """A random :class:`~algos.pomdp.POMDP`: Dirichlet(0.5) transition and observation rows,
    rewards uniform on [-1, 1], a Dirichlet(1) start belief and a discount from ``discounts``.
    With ``with_rng`` also returns the numpy generator (after the model's draws) for the test's
    own randomness."""
    from algos.pomdp import POMDP

    S = draw(st.integers(min_states, max_states))
    A = draw(st.integers(2, max_actions))
    O = draw(st.integers(2, max_observations))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    T = rng.dirichlet(np.full(S, 0.5), size=(A, S))
    Z = rng.dirichlet(np.full(O, 0.5), size=(A, S))
    r = rng.uniform(-1, 1, size=(S, A))
    g = draw(st.sampled_from(list(discounts)))
    model = POMDP(T, Z, r, g, b0=rng.dirichlet(np.ones(S)))
    return (model, rng) if with_rng else model
