"""algos.testing: lazily imported strategies and the assert_* checkers (pass on the library's own
objects, fail on broken ones)."""

from __future__ import annotations

import copy
import subprocess
import sys

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings

import algos.testing as at
from algos.testing import strategies as sts


def test_importing_algos_testing_does_not_import_hypothesis():
    code = "import sys, algos.testing; assert 'hypothesis' not in sys.modules, 'hypothesis imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_strategies_without_hypothesis_name_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "hypothesis", None)
    monkeypatch.delitem(sys.modules, "algos.testing.strategies", raising=False)
    monkeypatch.delattr(at, "strategies", raising=False)
    with pytest.raises(ImportError, match=r"algos-theory\[testing\]"):
        at.pomdps  # noqa: B018


def test_every_public_name_resolves():
    for name in at.__all__:
        assert getattr(at, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        at.nope  # noqa: B018


# ----------------------------------------------------------------------------- strategies
@settings(max_examples=8)
@given(inst=sts.matching_instances(max_agents=6, max_items=7), g=sts.gammas())
def test_matching_instances_and_gammas(inst, g):
    assert 2 <= inst.n_agents <= 6 and 1 <= inst.n_items <= 7
    assert 0.0 <= g <= 1.0


@settings(max_examples=8)
@given(model=sts.pomdps(max_states=4))
def test_pomdps_are_stochastic(model):
    np.testing.assert_allclose(np.asarray(model.T).sum(axis=2), 1.0, err_msg="transition rows")
    np.testing.assert_allclose(np.asarray(model.Z).sum(axis=2), 1.0, err_msg="observation rows")


@settings(max_examples=8)
@given(data=sts.subset_of_signals(max_n=200))
def test_subset_of_signals(data):
    n, d = data.X.shape
    assert data.y.shape == (n,) and data.beta.shape == (d,)
    assert int(data.signal_mask.sum()) > d


@settings(max_examples=8)
@given(case=sts.dags_with_feature_maps())
def test_dags_with_feature_maps(case):
    g, fs, d = case
    assert nx.is_directed_acyclic_graph(g)
    assert set(fs) == set(g.nodes())
    assert all(0 <= j < d for cols in fs.values() for j in cols)


@settings(max_examples=8)
@given(case=sts.point_patterns(max_points=60))
def test_point_patterns_inside_their_window(case):
    from algos.point_process import Window

    pts, win = case
    w = win if isinstance(win, Window) else Window.from_bounds(*win) if hasattr(Window, "from_bounds") else None
    assert len(np.unique(pts, axis=0)) == len(pts)
    if w is not None:
        assert w.contains(pts).all()


@settings(max_examples=8)
@given(case=sts.client_splits())
def test_client_splits(case):
    X, y, ids = case
    assert len(X) == len(y) == len(ids)
    assert set(np.unique(y)) == set(range(y.max() + 1))
    assert len(np.unique(ids)) >= 2


# ----------------------------------------------------------------------------- checkers
def test_matching_checker_catches_a_threshold_below_the_claimed_one():
    from algos.fair_matching import ThresholdEqualFilling

    assert at.assert_matching_guarantees(ThresholdEqualFilling(gamma=0.8), 0.8).tightness <= 1.0
    with pytest.raises(AssertionError, match="class envy-freeness"):
        at.assert_matching_guarantees(ThresholdEqualFilling(gamma=0.0), 0.8)


def test_huber_checker_catches_a_wrong_threshold_scale():
    from algos.hetero_regression import HuberSoSRegressor

    at.assert_huber_rate(HuberSoSRegressor(), n_draws=10)
    with pytest.raises(AssertionError, match="Huber rate"):
        at.assert_huber_rate(HuberSoSRegressor(delta=100.0), n_draws=10)


def test_path_checker_on_the_population_engine():
    from algos.networked_learning import population_fit

    res = at.assert_krr_path_bound(lambda g, fs, S, b: population_fit(g, fs, S, b, return_excess=True)[1])
    assert 0.0 < res.tightness <= 1.0


def test_controller_checker_uses_the_upper_bound():
    from algos.pomdp import PBVI, RECAPController, tiger

    model = tiger()
    solver = PBVI(n_beliefs=100, max_iter=1000, tol=1e-9, random_state=0).fit(model)
    ctrl = RECAPController(n_memory=3, random_state=0).fit(model)
    res = at.assert_controller_certificates(ctrl, model, solver=solver)
    assert res.rows[0]["value"] <= res.rows[0]["upper"]
    low = copy.copy(solver)
    low.upper_bound_ = ctrl.value_ - 1.0  # a solver that claims less than this controller achieves
    with pytest.raises(AssertionError, match="above the upper bound"):
        at.assert_controller_certificates(ctrl, model, solver=low)


def test_streaming_checker_catches_a_merge_without_the_mean_correction():
    from sklearn.datasets import load_iris

    from algos.continual import StreamingLDA

    X, y = load_iris(return_X_y=True)
    at.assert_streaming_matches_batch(StreamingLDA(shrinkage=0.1), X, y, n_tasks=3)

    class ForgetfulLDA(StreamingLDA):  # keeps only the latest task's scatter
        def partial_fit(self, X, y, classes=None):
            if hasattr(self, "_scatter"):
                self._scatter[:] = 0.0
            return super().partial_fit(X, y, classes)

    with pytest.raises(AssertionError, match="streaming vs batch"):
        at.assert_streaming_matches_batch(ForgetfulLDA(shrinkage=0.1), X, y, n_tasks=3)


def test_mixing_checker_catches_the_swapped_formula():
    from theory.federated import optimal_lambda

    at.assert_mixing_rule_optimal(optimal_lambda, n_draws=2000)
    with pytest.raises(AssertionError, match="mixing rule"):
        at.assert_mixing_rule_optimal(lambda vf, vl: vf / (vf + vl), n_draws=2000)


def test_quadrature_checker_catches_cells_of_the_wrong_window():
    from algos.point_process import voronoi_weights

    res = at.assert_quadrature_bound(voronoi_weights)
    assert 0.0 < res.tightness <= 1.0
    with pytest.raises(AssertionError, match="do not partition the window"):
        at.assert_quadrature_bound(lambda X, win: voronoi_weights(X, (0.0, 1.1, 0.0, 1.0)))
