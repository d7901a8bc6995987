r"""Hypothesis strategies for the package's objects (the ones its own test suite uses).

Hypothesis draws sizes, kinds and a seed; numpy draws the data from ``default_rng(seed)``, so a
failing example shrinks to small sizes and reproduces from one integer. Every strategy is a small
``@st.composite`` function with keyword-only bounds. Needs ``hypothesis`` (``pip install
"algos-theory[testing]"``); importing :mod:`algos.testing` alone does not.

Examples
--------
>>> from hypothesis import given, settings
>>> from algos.testing.strategies import matching_instances
>>> @settings(max_examples=5, derandomize=True, database=None)
... @given(inst=matching_instances(max_agents=5, max_items=6))
... def test_sizes(inst):
...     assert inst.n_agents <= 5
>>> test_sizes()
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

__all__ = [
    "SEEDS",
    "matching_instances",
    "gammas",
    "pomdps",
    "subset_of_signals",
    "dags_with_feature_maps",
    "point_patterns",
    "client_splits",
]

#: A seed for ``numpy.random.default_rng``.
SEEDS = st.integers(0, 2**32 - 1)


@st.composite
def matching_instances(draw, *, min_agents=2, max_agents=8, max_items=10, max_classes=4, structured=True):
    """An :class:`~algos.fair_matching.OnlineMatchingInstance`.

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


@st.composite
def subset_of_signals(draw, *, min_n=50, max_n=400, max_d=5, min_signal_fraction=0.3, noisy_sigma=None):
    """Data of the subset-of-signals model (:func:`algos.hetero_regression.make_subset_of_signals`):
    ``n`` sources, ``d`` features, ``m`` of them with noise sd at most 1, the rest noisy.

    ``m`` is at least ``min_signal_fraction * n`` (and above ``d``); ``noisy_sigma`` is drawn from
    constant, log-uniform and Pareto scales unless given. Returns the named tuple
    ``(X, y, beta, sigma, signal_mask)``.
    """
    from algos.hetero_regression import make_subset_of_signals

    n = draw(st.integers(min_n, max_n))
    d = draw(st.integers(1, max_d))
    low = min(n, max(d + 1, int(np.ceil(min_signal_fraction * n))))
    m = draw(st.integers(low, n))
    if noisy_sigma is None:
        noisy_sigma = draw(st.sampled_from([("constant", 100.0), ("loguniform", 10.0, 1e3), ("pareto", 10.0)]))
    return make_subset_of_signals(n, d, m, noisy_sigma=noisy_sigma, random_state=draw(SEEDS))


@st.composite
def dags_with_feature_maps(draw, *, max_agents=8, max_features=6, kinds=("path", "star", "random")):
    """``(graph, feature_sets, d)``: a DAG of agents (``networkx.DiGraph``) and the features each sees.

    Kinds: a path, a star into one hub, or a random DAG (edges from lower to higher index with
    probability 0.4); features are allocated cyclically along a topological order or at random (each
    agent sees 1 to 3 features).
    """
    import networkx as nx

    from algos.networked_learning import cyclic_allocation, make_path, make_star

    n = draw(st.integers(1, max_agents))
    d = draw(st.integers(1, max_features))
    rng = np.random.default_rng(draw(SEEDS))
    kind = draw(st.sampled_from(list(kinds)))
    if kind == "path":
        g = make_path(n)
    elif kind == "star" and n >= 2:
        g = make_star(n - 1)
    else:
        g = nx.DiGraph()
        g.add_nodes_from(range(n))
        g.add_edges_from((i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.4)
    if draw(st.booleans()):
        fs = cyclic_allocation(list(nx.topological_sort(g)), d)
    else:
        fs = {v: sorted(rng.choice(d, size=int(rng.integers(1, min(3, d) + 1)), replace=False).tolist())
              for v in g.nodes()}
    return g, fs, d


@st.composite
def point_patterns(draw, *, min_points=1, max_points=200, windows=("unit", "rectangle", "L")):
    """``(points, window)``: a homogeneous Poisson-like pattern (``n`` uniform points) in a window.

    Windows: the unit square ``(0, 1, 0, 1)``, a random rectangle ``(xmin, xmax, ymin, ymax)``, or
    the L-shaped polygon of side 2 (a :class:`~algos.point_process.Window`). The points are distinct
    and strictly inside.
    """
    from algos.point_process import Window

    n = draw(st.integers(min_points, max_points))
    rng = np.random.default_rng(draw(SEEDS))
    kind = draw(st.sampled_from(list(windows)))
    if kind == "unit":
        win, box = (0.0, 1.0, 0.0, 1.0), (0.0, 1.0, 0.0, 1.0)
    elif kind == "rectangle":
        x0, y0 = rng.uniform(-5, 5, size=2)
        w, h = rng.uniform(0.5, 5.0, size=2)
        win = box = (float(x0), float(x0 + w), float(y0), float(y0 + h))
    else:
        win = Window([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]])
        box = (0.0, 2.0, 0.0, 2.0)
    pts = np.empty((0, 2))
    while len(pts) < n:
        P = np.column_stack([rng.uniform(box[0], box[1], 4 * n), rng.uniform(box[2], box[3], 4 * n)])
        if kind == "L":
            P = P[~((P[:, 0] >= 1) & (P[:, 1] >= 1))]
        pts = np.unique(np.concatenate([pts, P]), axis=0)
    return pts[rng.permutation(len(pts))[:n]], win


@st.composite
def client_splits(draw, *, max_clients=6, max_features=5, max_classes=3, min_per_client=4, max_per_client=30):
    """``(X, y, client_ids)``: a labelled data set split over clients with label skew.

    Each client's labels follow its own Dirichlet(alpha) class mixture (``alpha`` in {0.1, 1, 10}:
    strong to mild skew); features are Gaussian around a class mean. ``y`` takes every class at
    least once overall.
    """
    n_clients = draw(st.integers(2, max_clients))
    d = draw(st.integers(1, max_features))
    C = draw(st.integers(2, max_classes))
    alpha = draw(st.sampled_from([0.1, 1.0, 10.0]))
    rng = np.random.default_rng(draw(SEEDS))
    means = rng.normal(scale=2.0, size=(C, d))
    X, y, ids = [], [], []
    for c in range(n_clients):
        size = int(rng.integers(min_per_client, max_per_client + 1))
        labels = rng.choice(C, size=size, p=rng.dirichlet(np.full(C, alpha)))
        X.append(means[labels] + rng.normal(size=(size, d)))
        y.append(labels)
        ids.append(np.full(size, c))
    X, y, ids = np.concatenate(X), np.concatenate(y), np.concatenate(ids)
    y[:C] = np.arange(C)  # every class present
    return X, y, ids
