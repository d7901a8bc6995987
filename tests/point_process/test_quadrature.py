"""Voronoi quadrature (spec T1, T2) and windows: partition of the window, O(h) error, bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial import ConvexHull, Voronoi

from algos.point_process import Window, build_quadrature, voronoi_weights
from algos.point_process._kernels import clip_areas
from algos.point_process._reference import clip_area_reference
from theory.point_process import quadrature_error_bound

#: Sum of weights vs window area: round-off of ~N shoelace sums (spec T1 asks 1e-9 relative).
PARTITION_RTOL = 1e-9
L_SHAPE = [[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]]


def _random_convex(rng, n=9):
    P = rng.uniform(-1, 1, size=(n, 2)) * rng.uniform(0.5, 3.0, size=2)
    return P[ConvexHull(P).vertices]


def _nodes_in(win, rng, n):
    xmin, xmax, ymin, ymax = win.bounds
    out = []
    while sum(len(o) for o in out) < n:
        D = np.column_stack([rng.uniform(xmin, xmax, 4 * n), rng.uniform(ymin, ymax, 4 * n)])
        out.append(D[win.contains(D)])
    return np.unique(np.concatenate(out)[:n], axis=0)


@given(kind=st.sampled_from(["rect", "L", "convex"]), n=st.integers(1, 500), seed=st.integers(0, 2**31 - 1))
@settings(max_examples=25)
def test_weights_partition_window(kind, n, seed):
    rng = np.random.default_rng(seed)
    if kind == "rect":
        x0, y0 = rng.uniform(-5, 5, 2)
        win = Window.from_any((x0, x0 + rng.uniform(0.1, 10), y0, y0 + rng.uniform(0.1, 10)))
    elif kind == "L":
        win = Window.from_any(np.asarray(L_SHAPE, dtype=float) * rng.uniform(0.5, 4))
    else:
        win = Window.from_any(_random_convex(rng))
    X = _nodes_in(win, rng, n)
    w = voronoi_weights(X, win)
    assert abs(w.sum() - win.area) <= PARTITION_RTOL * win.area
    assert np.all(w >= 0)
    # interior nodes (not on the boundary) get positive area
    assert np.all(w > 0)


def test_mirror_equals_clip_on_rectangle():
    rng = np.random.default_rng(3)
    X = np.vstack([rng.uniform(size=(200, 2)) * [3, 1], [[0, 0.5], [3, 1], [1.5, 0]]])
    a = voronoi_weights(X, (0, 3, 0, 1), method="mirror")
    b = voronoi_weights(X, (0, 3, 0, 1), method="clip")
    assert np.allclose(a, b, rtol=0, atol=1e-13)
    assert abs(a.sum() - 3.0) < 1e-12


def test_two_nodes_halves():
    w = voronoi_weights([[0.25, 0.5], [0.75, 0.5]], (0, 1, 0, 1))
    assert np.allclose(w, 0.5, atol=1e-14)


def test_clip_kernel_matches_reference():
    rng = np.random.default_rng(0)
    win = Window.from_any(L_SHAPE)
    X = _nodes_in(win, rng, 60)
    far = np.array([[-50, -50], [50, -50], [50, 50], [-50, 50.0]])
    vor = Voronoi(np.vstack([X, far]))
    regions = [vor.regions[r] for r in vor.point_region[: len(X)]]
    ptr = np.concatenate([[0], np.cumsum([len(r) for r in regions])]).astype(np.int64)
    vidx = np.concatenate(regions).astype(np.int64)
    a = clip_areas(ptr, vidx, vor.vertices, X, win.vertices)
    b = np.array([clip_area_reference(vor.vertices[r], X[i], win.vertices) for i, r in enumerate(regions)])
    assert np.allclose(a, b, rtol=1e-12, atol=1e-14)


def _cell_radius_rect(X, b):
    """Largest node-to-cell distance by the mirror Voronoi diagram (independent of the package)."""
    xmin, xmax, ymin, ymax = b
    R = [X]
    for ax, e in ((0, xmin), (0, xmax), (1, ymin), (1, ymax)):
        Y = X.copy()
        Y[:, ax] = 2 * e - Y[:, ax]
        R.append(Y)
    vor = Voronoi(np.vstack(R))
    h = 0.0
    for i in range(len(X)):
        V = vor.vertices[vor.regions[vor.point_region[i]]]
        h = max(h, np.max(np.hypot(*(V - X[i]).T)))
    return h


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_quadrature_error_bound_T2(seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=2)
    a *= rng.uniform(0.5, 3.0) / np.linalg.norm(a)
    X = rng.uniform(size=(80, 2))
    w = voronoi_weights(X, (0, 1, 0, 1))
    lam = np.exp(X @ a)
    exact = np.prod([(math.exp(ai) - 1) / ai for ai in a])
    lip = np.linalg.norm(a) * math.exp(np.sum(np.maximum(a, 0)))  # sup of |grad lambda| on the square
    bound = quadrature_error_bound(lip, 1.0, _cell_radius_rect(X, (0, 1, 0, 1)))
    assert abs(exact - w @ lam) <= bound


def test_quadrature_error_slope_T2():
    rng = np.random.default_rng(7)
    a = np.array([1.7, -2.2])
    data = rng.uniform(size=(50, 2))
    exact = np.prod([(math.exp(ai) - 1) / ai for ai in a])
    hs, errs = [], []
    for g in (8, 16, 32, 64, 128):
        q = build_quadrature(data, (0, 1, 0, 1), n_dummy=g * g)
        errs.append(abs(exact - q.weights @ np.exp(q.nodes @ a)))
        hs.append(1.0 / g)
    slope = np.polyfit(np.log(hs), np.log(errs), 1)[0]
    assert slope >= 0.9


def test_build_quadrature_merges_duplicates():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(30, 2))
    Xd = np.vstack([X, X[:3], X[:1]])
    q = build_quadrature(Xd, (0, 1, 0, 1))
    assert q.counts.sum() == len(Xd)
    assert q.counts.max() == 3
    assert np.array_equal(q.nodes[q.point_node], Xd)
    assert np.all(q.weights[q.counts > 0] > 0)
    assert abs(q.weights.sum() - 1.0) < 1e-12
    assert q.grid_size == 16


def test_build_quadrature_default_grid_and_polygon():
    X = np.array([[0.5, 0.5], [1.5, 0.5], [0.5, 1.5]])
    q = build_quadrature(X, L_SHAPE)
    assert abs(q.weights.sum() - 3.0) < 1e-12
    assert Window.from_any(L_SHAPE).contains(q.nodes).all()


@pytest.mark.parametrize(
    "X, window, match",
    [
        ([[0.5, 0.5], [1.5, 0.5]], (0, 1, 0, 1), "outside the window"),
        ([[np.nan, 0.5]], (0, 1, 0, 1), "finite"),
        (np.zeros((3, 3)), (0, 1, 0, 1), r"shape \(n, 2\)"),
        ([[0.5, 0.5]], (0, 1, 1, 1), "ymin < ymax"),
        ([[0.5, 0.5]], [[0, 0], [1, 1], [1, 0], [0, 1]], "not simple"),
        ([[0.5, 0.5]], [[0, 0], [1, 0]], "at least 3"),
    ],
)
def test_bad_input(X, window, match):
    with pytest.raises(ValueError, match=match):
        build_quadrature(X, window)


def test_fewer_than_four_nodes():
    with pytest.raises(ValueError, match="at least 4 nodes"):
        build_quadrature([[0.5, 0.5], [0.2, 0.2]], (0, 1, 0, 1), n_dummy=0)
    q = build_quadrature(np.empty((0, 2)), (0, 1, 0, 1), n_dummy=4)  # n = 0 is fine with dummies
    assert q.n_nodes == 4 and q.counts.sum() == 0


def test_clockwise_polygon_reoriented():
    cw = np.asarray(L_SHAPE, dtype=float)[::-1]
    w = Window.from_any(cw)
    assert w.area == pytest.approx(3.0)
    from algos.point_process._window import signed_area

    assert signed_area(w.vertices) > 0
    assert {tuple(v) for v in w.vertices} == {tuple(v) for v in cw}
    assert Window.from_any([[0, 0], [0, 1], [1, 1], [1, 0]]).is_rectangle


def test_window_contains_boundary():
    w = Window.from_any(L_SHAPE)
    inside = w.contains([[1.0, 1.5], [2.0, 0.0], [1.5, 1.5], [0.5, 0.5]])
    assert inside.tolist() == [True, True, False, True]


def test_auto_dummy_grid_keeps_the_node_budget():
    from algos.point_process._quadrature import AUTO_NODE_BUDGET, auto_grid_size, default_grid_size

    # below the budget the grid is the uncapped g = max(16, ceil(2 sqrt n)); above it the nodes stay
    # within max(budget, n + 256), never fewer than a 16 x 16 grid
    for n in (0, 10, 1000, 5000, 9000):
        assert auto_grid_size(n) == default_grid_size(n)
        assert n + auto_grid_size(n) ** 2 <= AUTO_NODE_BUDGET
    for n in (12_000, 20_000, 33_000, 49_000, 49_900, 100_000, 10**6):
        g = auto_grid_size(n)
        assert g >= 16 and g < default_grid_size(n)
        assert n + g * g <= max(AUTO_NODE_BUDGET, n + 256)
        if n + 256 < AUTO_NODE_BUDGET:  # the largest grid that fits
            assert n + (g + 1) ** 2 > AUTO_NODE_BUDGET
    # the quadrature built with n_dummy="auto" follows it (a grid over the unit square)
    X = np.random.default_rng(0).uniform(size=(30_000, 2))
    q = build_quadrature(X, (0, 1, 0, 1))
    assert q.nodes.shape[0] <= AUTO_NODE_BUDGET
    assert q.nodes.shape[0] >= 30_000 + 0.95 * (AUTO_NODE_BUDGET - 30_000)
    assert abs(q.weights.sum() - 1.0) < 1e-9
