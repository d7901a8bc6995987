"""The aggregated-count (grid) quadrature and VoGCAM's ``quadrature`` parameter."""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from algos.point_process import VoGCAM, build_quadrature, simulate_lgcp
from algos.point_process._aggregate import AUTO_GRID_MIN_POINTS, grid_quadrature, poisson_loglik
from algos.point_process._window import Window

REPO = Path(__file__).resolve().parents[2]
NOTCH = np.array([[0, 0], [1, 0], [1, 1], [0.5, 0.4], [0, 1]], dtype=float)  # non-convex, area 0.7


def _uniform(n, win, seed):
    rng = np.random.default_rng(seed)
    W = Window.from_any(win)
    P = rng.uniform(size=(3 * n + 10, 2))
    return P[W.contains(P)][:n]


@pytest.mark.parametrize("win, area", [((0, 1, 0, 1), 1.0), ((0, 2, -1, 0.5), 3.0), (NOTCH, 0.7)])
@pytest.mark.parametrize("n_cells", [16, 400, 2500])
def test_weights_sum_to_area_counts_to_n(win, area, n_cells):
    X = _uniform(777, win, 0)
    q = grid_quadrature(X, win, n_cells)
    assert q.weights.sum() == pytest.approx(area, rel=1e-12)
    assert q.counts.sum() == len(X)
    assert np.all(q.weights > 0)
    assert Window.from_any(win).contains(q.nodes).all()  # every node lies in the window
    # each point's node is the cell that holds it: the node count per point reproduces the counts
    np.testing.assert_array_equal(np.bincount(q.point_node, minlength=q.n_nodes), q.counts)
    np.testing.assert_array_equal(q.is_data, q.counts > 0)


def test_node_count_independent_of_n():
    win = (0, 1, 0, 1)
    small = grid_quadrature(_uniform(10, win, 1), win, 900)
    large = grid_quadrature(_uniform(200_000, win, 2), win, 900)
    assert small.n_nodes == large.n_nodes == 900
    np.testing.assert_array_equal(small.nodes, large.nodes)
    np.testing.assert_array_equal(small.weights, large.weights)
    assert large.counts.sum() == 200_000


def test_points_on_the_far_edges_are_counted():
    q = grid_quadrature([[1.0, 1.0], [0.0, 0.0], [1.0, 0.0]], (0, 1, 0, 1), 4)
    assert q.counts.tolist() == [1.0, 0.0, 1.0, 1.0]


def test_likelihood_is_exact_for_a_cellwise_constant_intensity():
    """For eta constant on each cell, the count quadrature's sum is the pattern's exact Poisson
    log-likelihood sum_i eta(x_i) - int_W exp(eta), computed here point by point and cell by cell."""
    X = _uniform(500, (0, 1, 0, 1), 3)
    q = grid_quadrature(X, (0, 1, 0, 1), 64)  # 8 x 8 cells of area 1/64
    eta = np.random.default_rng(4).normal(size=q.n_nodes)
    cell = np.floor(X[:, 0] * 8).astype(int) * 8 + np.floor(X[:, 1] * 8).astype(int)
    exact = eta[cell].sum() - np.exp(eta).sum() / 64
    assert poisson_loglik(q, eta) == pytest.approx(exact, rel=1e-13)


def _lattice(g):
    c = (np.arange(g) + 0.5) / g
    return np.column_stack([np.repeat(c, g), np.tile(c, g)])


def test_one_point_per_cell_is_the_voronoi_quadrature():
    """A point at every cell centre: the Voronoi cells (no dummies) are the grid cells, so both schemes
    give the same nodes, weights and 0/1 counts, and the same likelihood."""
    X = _lattice(12)
    g = grid_quadrature(X, (0, 1, 0, 1), 144)
    v = build_quadrature(X, (0, 1, 0, 1), n_dummy=0)
    np.testing.assert_allclose(g.nodes, v.nodes, atol=1e-15)
    np.testing.assert_allclose(g.weights, v.weights, rtol=1e-10)
    np.testing.assert_array_equal(g.counts, v.counts)
    eta = np.random.default_rng(5).normal(size=144)
    assert poisson_loglik(g, eta) == pytest.approx(poisson_loglik(v, eta), rel=1e-10)


def test_one_point_per_cell_vogcam_fits_agree():
    # the cell centres exactly as the grid computes them (a one-ulp shift would reorder the NNGP's ties)
    X = grid_quadrature(np.empty((0, 2)), (0, 1, 0, 1), 100).nodes
    kw = dict(window=(0, 1, 0, 1), optimize_hyperparameters=("mean",), length_scale=0.2, random_state=0)
    fv = VoGCAM(quadrature="voronoi", n_dummy=0, **kw).fit(X)
    fg = VoGCAM(quadrature="grid", n_dummy=100, **kw).fit(X)
    assert (fv.quadrature_, fg.quadrature_) == ("voronoi", "grid")
    np.testing.assert_array_equal(fg.nodes_, fv.nodes_)
    assert fg.elbo_ == pytest.approx(fv.elbo_, rel=1e-10)
    np.testing.assert_allclose(fg.mean_, fv.mean_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fg.var_, fv.var_, rtol=1e-7, atol=1e-12)


def test_grid_fit_close_to_voronoi_fit_on_a_small_lgcp():
    """ELBO-fitted hyperparameters (the method that uses the quadrature; the default minimum contrast uses
    the points alone) of the grid fit within 25 % of the Voronoi fit's, and the intensities close."""
    s = simulate_lgcp((0, 1, 0, 1), mean=np.log(600) - 0.5, variance=1.0, length_scale=0.1, grid=64,
                      random_state=3)
    X = s.points
    kw = dict(window=(0, 1, 0, 1), hyperparameters="elbo", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fv = VoGCAM(quadrature="voronoi", **kw).fit(X)
        fg = VoGCAM(quadrature="grid", n_dummy=1024, **kw).fit(X)
    assert fg.n_nodes_ == 1024
    assert fg.variance_ == pytest.approx(fv.variance_, rel=0.25)
    assert fg.length_scale_ == pytest.approx(fv.length_scale_, rel=0.25)
    assert fg.expected_count() == pytest.approx(fv.expected_count(), rel=0.05)
    Q = _lattice(32)
    lv, lg = fv.predict_intensity(Q), fg.predict_intensity(Q)
    assert np.sqrt(np.mean((lg - lv) ** 2)) / lv.mean() < 0.25


def test_auto_switches_at_the_documented_size():
    X = _uniform(200, (0, 1, 0, 1), 6)
    kw = dict(window=(0, 1, 0, 1), optimize_hyperparameters=("mean",), n_dummy=64)
    assert VoGCAM(quadrature="auto", **kw).fit(X).quadrature_ == "voronoi"
    assert VoGCAM(quadrature="grid", **kw).fit(X).n_nodes_ == 64
    assert AUTO_GRID_MIN_POINTS == 50_000


@pytest.mark.parametrize("bad", ["grids", "Voronoi", 1, None])
def test_bad_quadrature_named(bad):
    with pytest.raises((ValueError, TypeError), match="quadrature"):
        VoGCAM(quadrature=bad).fit(_uniform(50, (0, 1, 0, 1), 7))


def test_grid_needs_cells():
    with pytest.raises(ValueError, match="'n_dummy' must be at least 4"):
        VoGCAM(quadrature="grid", n_dummy=2, window=(0, 1, 0, 1)).fit(_uniform(50, (0, 1, 0, 1), 8))


_CHILD = """
import json, resource, sys, warnings
import numpy as np
from algos.point_process import VoGCAM
n = int(sys.argv[1])
rng = np.random.default_rng(0)
X = rng.uniform(size=(n, 2))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    est = VoGCAM(window=(0, 1, 0, 1), quadrature="auto", n_dummy=1024, optimize_hyperparameters=("mean",),
                 random_state=0).fit(X)
print(json.dumps(dict(rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, nodes=est.n_nodes_,
                      q=est.quadrature_, count=est.expected_count())))
"""


def _child(n):
    out = subprocess.run([sys.executable, "-c", _CHILD, str(n)], capture_output=True, text=True, check=True,
                         cwd=REPO, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_million_points_in_bounded_memory():
    """10^6 points ("auto" picks the grid): 1024 nodes as for 10^5 points, and the child's peak RSS
    grows by less than 400 MB over the 10^5-point run (the Voronoi scheme's 10 KB per node would need
    about 11 GB)."""
    small, big = _child(100_000), _child(1_000_000)
    assert small["q"] == big["q"] == "grid"
    assert small["nodes"] == big["nodes"] == 1024
    assert big["count"] == pytest.approx(1e6, rel=0.01)
    assert big["rss"] - small["rss"] < 400 * 2**20


def test_predictions_in_blocks_equal_one_pass():
    """Predictions over more query points than PREDICT_BLOCK run in blocks (bounded memory) and equal
    the one-pass result, covariates given as an array sliced per block included."""
    from algos.point_process.vogcam import _vogcam

    rng = np.random.default_rng(4)
    X = simulate_lgcp((0, 1, 0, 1), mean=np.log(300), variance=1.0, length_scale=0.1, grid=64, random_state=4).points
    cov = lambda P: P[:, :1] - 0.5  # noqa: E731
    est = VoGCAM(window=(0, 1, 0, 1), n_dummy=100, max_iter=5, optimize_hyperparameters=("mean",),
                 length_scale=0.1).fit(X, covariates=cov)
    assert est.variance_ > 0.1  # a field with spread: the sd part of the comparison is not trivial
    Q = rng.uniform(size=(2500, 2))
    whole = est.predict_log_intensity(Q, return_std=True, covariates=cov(Q))
    old = _vogcam.PREDICT_BLOCK
    try:
        _vogcam.PREDICT_BLOCK = 700
        parts = est.predict_log_intensity(Q, return_std=True, covariates=cov(Q))
        by_callable = est.predict_log_intensity(Q, covariates=cov)
    finally:
        _vogcam.PREDICT_BLOCK = old
    np.testing.assert_allclose(parts[0], whole[0], rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(parts[1], whole[1], rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(by_callable, whole[0], rtol=1e-13, atol=1e-13)
    with pytest.raises(ValueError, match="covariates"):
        est.predict_log_intensity(Q, covariates=cov(Q)[:10])


def test_min_contrast_runs_on_an_independent_thinning_of_a_large_pattern(monkeypatch):
    """Above MIN_CONTRAST_MAX_POINTS the minimum contrast is that of an independent thinning drawn from
    random_state (K is unchanged by thinning: the whole pattern on the same distances gives the same fit
    within sampling error), which keeps its distances up to the field's range; below the threshold the
    whole pattern is used."""
    from algos.point_process import lgcp_min_contrast
    from algos.point_process.vogcam import _vogcam

    X = simulate_lgcp((0, 1, 0, 1), mean=np.log(1.5e5) - 0.5, variance=1.0, length_scale=0.05, grid=256,
                      random_state=1).points
    win = Window.from_any((0, 1, 0, 1))
    est = VoGCAM(window=(0, 1, 0, 1), random_state=3)
    monkeypatch.setattr(_vogcam, "MIN_CONTRAST_MAX_POINTS", 20_000)
    keep = np.flatnonzero(np.random.default_rng(3).random(len(X)) < 20_000 / len(X))
    thin = est._min_contrast(X, win, None)
    direct = lgcp_min_contrast(X[keep], win)
    assert (thin.variance, thin.length_scale) == (direct.variance, direct.length_scale)
    # the whole pattern's K on the thinned fit's distances gives the same fit (K is thinning-invariant),
    # and the thinned fit is within 30 % of the truth (this realisation's own range is short: ~0.039)
    full = lgcp_min_contrast(X, win, rmax=float(thin.r[-1]))
    assert thin.variance == pytest.approx(full.variance, rel=0.15)
    assert thin.length_scale == pytest.approx(full.length_scale, rel=0.15)
    assert thin.variance == pytest.approx(1.0, rel=0.3) and thin.length_scale == pytest.approx(0.05, rel=0.3)
    monkeypatch.setattr(_vogcam, "MIN_CONTRAST_MAX_POINTS", len(X))
    whole = est._min_contrast(X[:5000], win, None)
    assert whole.length_scale == lgcp_min_contrast(X[:5000], win).length_scale


def test_entries_of_s_outside_the_factor_pattern_are_solved_in_chunks(monkeypatch):
    """Predictive sds of a sparse fit with ``std_method="neighbourhood"`` need entries of S outside the
    factor's pattern: solved a chunk of SOLVE_COLUMNS right-hand sides at a time (memory 8 n bytes per
    column, not one n x m block), with the same values as one block; the default ``std_method="reach"``
    solves nothing with the whole factor and gives the same sds to round-off (REACH_RTOL)."""
    REACH_RTOL = 1e-12
    from algos.point_process.vogcam import _vogcam_blocks

    X = simulate_lgcp((0, 1, 0, 1), mean=np.log(400), variance=1.0, length_scale=0.05, grid=64,
                      random_state=2).points
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = VoGCAM(window=(0, 1, 0, 1), quadrature="voronoi", solver="sparse", random_state=0, max_iter=3).fit(X)
    Q = np.random.default_rng(1).uniform(size=(400, 2))
    widths = []
    solve = est._state["fac"].solve

    def counted(E, *args, **kwargs):
        if np.ndim(E) == 2:  # the blocks of unit columns (a mean solve passes one vector)
            widths.append(E.shape[1])
        return solve(E, *args, **kwargs)

    monkeypatch.setattr(est._state["fac"], "solve", counted)
    monkeypatch.setattr(_vogcam_blocks, "SOLVE_COLUMNS", 10**9)
    _, whole = est.predict_log_intensity(Q, return_std=True, std_method="neighbourhood")
    assert len(widths) == 1 and widths[0] > 7  # the path is taken, in one block
    widths.clear()
    monkeypatch.setattr(_vogcam_blocks, "SOLVE_COLUMNS", 7)
    _, chunked = est.predict_log_intensity(Q, return_std=True, std_method="neighbourhood")
    assert len(widths) > 1 and max(widths) == 7
    np.testing.assert_array_equal(chunked, whole)
    widths.clear()
    _, reach = est.predict_log_intensity(Q, return_std=True)
    assert not widths
    assert np.max(np.abs(reach - whole) / whole) <= REACH_RTOL
