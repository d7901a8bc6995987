"""Bad input of the networked_learning module: clean errors that name the argument (generators at
1e200, allocations, the Sketch constructor, excess_risk) and the options of ``algos dag`` that the
chosen topology, protocol or data source does not use."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import algos.networked_learning as N
from algos.cli import main


def test_sketch_constructor_checks_like_make_sketch():
    assert N.Sketch("gaussian", 4, 10, 1, 8192) == N.make_sketch("gaussian", 4, 10, seed=1)
    S = N.Sketch("countsketch", 3, 5, 0, 8192)
    np.testing.assert_array_equal(S.apply(np.eye(5)), N.make_sketch("countsketch", 3, 5, seed=0).to_dense())
    for kwargs, exc, name in ((dict(kind="zzz"), ValueError, "kind"), (dict(kind=3), TypeError, "kind"),
                              (dict(k=4.5), TypeError, "k"), (dict(k=float("nan")), TypeError, "k"),
                              (dict(k=4 + 1j), TypeError, "k"), (dict(m=float("inf")), TypeError, "m"),
                              (dict(seed=float("inf")), TypeError, "seed"), (dict(seed=-1), ValueError, "seed"),
                              (dict(chunk=8192.5), TypeError, "chunk"),
                              (dict(kind="srht", k=17, m=10), ValueError, "k")):
        args = dict(kind="gaussian", k=4, m=10, seed=1, chunk=8192)
        args.update(kwargs)
        with pytest.raises(exc, match=f"'{name}'"):
            N.Sketch(**args)


def test_excess_risk_checks_its_arrays():
    assert N.excess_risk(np.array([1.0, 0.0]), np.eye(2), np.array([1.0, -1.0])) == 1.0
    good = dict(beta=np.array([1.0, 0.0]), Sigma=np.eye(2), beta_star=np.array([1.0, -1.0]))
    for name, bad, exc in (("Sigma", np.eye(2) + 1j, TypeError), ("Sigma", np.eye(2)[:0], ValueError),
                           ("Sigma", np.full((2, 2), np.nan), ValueError), ("Sigma", [["a", "b"]] * 2, TypeError),
                           ("Sigma", np.eye(2).ravel(), ValueError), ("Sigma", np.eye(3), ValueError),
                           ("beta", np.array([np.inf, 0.0]), ValueError), ("beta", np.array([[1.0, 0.0]]), ValueError),
                           ("beta_star", np.array([1.0 + 1j, 0.0]), TypeError), ("beta_star", np.zeros(0), ValueError),
                           ("beta_star", np.zeros(3), ValueError)):
        with pytest.raises(exc, match=f"'{name}'"):
            N.excess_risk(**{**good, name: bad})
    with pytest.raises(ValueError, match="overflows float64; rescale 'beta'"):
        N.excess_risk(np.array([1e200, 0.0]), np.eye(2), np.zeros(2))


def test_moment_functions_name_non_real_arrays():
    g = nx.DiGraph([(0, 1)])
    fs = {0: [0], 1: [1]}
    Sigma, b = np.array([[1.0, 0.5], [0.5, 1.0]]), np.array([1.0, 0.0])
    for func in (lambda S, bb: N.population_fit(g, fs, S, bb), lambda S, bb: N.zero_message_agents(g, fs, S, bb),
                 lambda S, bb: N.greedy_path(S, bb, 3)):
        func(Sigma, b)
        with pytest.raises(TypeError, match="'Sigma'"):
            func(np.full((2, 2), "abc"), b)
        with pytest.raises(TypeError, match="'Sigma'"):
            func(Sigma + 1j, b)
        with pytest.raises(TypeError, match="'b'"):
            func(Sigma, ["abc", "abc"])
        with pytest.raises(TypeError, match="'b'"):
            func(Sigma, b + 1j)
    with pytest.raises(ValueError, match="overflows float64; rescale 'b'"):
        N.greedy_path(Sigma, b * 1e200, 3)


def test_allocations_check_their_nodes():
    assert N.cyclic_allocation([0, 1, 2, 3], 3) == {0: [0], 1: [1], 2: [2], 3: [0]}
    keys = list(N.cyclic_allocation(np.arange(3), 2))
    assert keys == [0, 1, 2] and all(isinstance(k, np.integer) for k in keys)  # labels kept as given
    assert N.cyclic_allocation(["a", "b"], 2) == {"a": [0], "b": [1]}
    for bad, exc in ((np.array([0.0, np.nan, 2.0]), TypeError), (np.array([0.0, np.inf]), TypeError),
                     (np.array([0, 1 + 1j]), TypeError), (np.full(3, "a"), ValueError),
                     (np.arange(4)[:, None, None], ValueError),
                     (np.asarray(0), ValueError), ([[0], [1]], TypeError), ("abc", TypeError), (3, TypeError)):
        with pytest.raises(exc, match="'order'"):
            N.cyclic_allocation(bad, 3)
    for bad in ("abc", 3, [0, 1]):
        with pytest.raises(TypeError, match="'graph' must be a networkx graph"):
            N.random_allocation(bad, 5, 2, random_state=0)
    with pytest.raises(ValueError, match="'path' must contain at least one agent"):
        N.coverage_number([], {}, 3)
    with pytest.raises(ValueError, match="'path'"):
        N.coverage_number(np.arange(3)[:, None, None], {0: [0]}, 3)


def test_generators_reject_values_whose_moments_overflow():
    for make, name in ((lambda: N.make_suppressor(1e200), "noise"),
                       (lambda: N.make_leverage_design(3, 0.01, sigma=1e200), "sigma"),
                       (lambda: N.make_gaussian(3, sigma=1e200), "sigma"),
                       (lambda: N.make_gaussian(3, beta=[1e200, 0.0, 0.0]), "beta"),
                       (lambda: N.make_common_factor(4, 1e200, a=[1.0, -1.0, 1.0, -1.0]), "rho"),
                       (lambda: N.PopulationModel.from_latent([[1e200]], [1.0]), "A")):
        with pytest.raises(ValueError, match=f"overflow float64; rescale .*'{name}'"):
            make()
    # the valid moments are unchanged
    pm = N.make_suppressor(0.5)
    assert pm.Sigma.tolist() == [[2.0, 1.0], [1.0, 1.0]] and pm.y_var == 1.25 and pm.noise_var == 0.25
    assert N.make_leverage_design(3, 0.01, sigma=2.0).y_var == 7.0


def test_population_model_checks_its_arrays():
    ok = dict(Sigma=np.eye(2), b=np.array([1.0, 0.0]), y_var=2.0, A=np.eye(2), c=np.array([1.0, 0.0]))
    N.PopulationModel(**ok)
    for name, bad, exc in (("Sigma", np.full((2, 2), np.nan), ValueError), ("Sigma", np.eye(2) + 1j, TypeError),
                           ("Sigma", np.full((2, 2), "a"), TypeError), ("b", np.array([np.inf, 0.0]), ValueError),
                           ("A", np.full((2, 2), np.inf), ValueError), ("A", np.eye(2)[:, :, None, None], ValueError),
                           ("A", np.eye(3), ValueError), ("c", np.asarray(1.0), ValueError),
                           ("c", np.array([1.0, 0.0, 0.0]), ValueError), ("c", np.array(["a", "b"]), TypeError)):
        with pytest.raises(exc, match=f"'{name}'"):
            N.PopulationModel(**{**ok, name: bad})


@pytest.fixture(scope="module")
def Xy():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    return X, X @ np.array([1.0, -1.0, 0.5]) + 0.1 * rng.normal(size=40)


def test_regressor_input_checks(Xy):
    X, y = Xy
    for rs in ("abc", 2.5, float("nan"), 1 + 1j):
        with pytest.raises(TypeError, match="'random_state'"):
            N.NetworkedDAGRegressor(random_state=rs).fit(X, y)  # checked with the full protocol too
    with pytest.raises(TypeError, match="'X' must be an array of real numbers"):
        N.NetworkedDAGRegressor().fit(np.full(X.shape, "abc"), y)
    with pytest.raises(TypeError, match="'y' must be an array of real numbers"):
        N.NetworkedDAGRegressor().fit(X, ["abc"] * len(y))
    est = N.NetworkedDAGRegressor().fit(X, y)
    with pytest.raises(TypeError, match="'X'"):
        est.predict(np.full(X.shape, "abc"))
    with pytest.raises(ValueError, match="'y'"):
        est.score(X, np.asarray(1.0))
    pred = est.predict(X)
    assert est.score(X, y) == pytest.approx(1 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2), abs=1e-12)
    got = est.score(X, y * 1e200)
    ref = 1 - np.sum((y - pred / 1e200) ** 2) / np.sum((y - y.mean()) ** 2)
    assert np.isfinite(got) and got == pytest.approx(ref, rel=1e-9)
    with pytest.raises(ValueError, match="'X'.*'y'"):
        est.score(X * 1e200, y)
    with pytest.raises(ValueError, match="'X' or 'y'"):  # training MSE beyond float64
        N.NetworkedDAGRegressor().fit(X, y * 1e200)


def _one_line(err):
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and ": error:" in lines[0], err
    return lines[0]


def test_dag_cli_rejects_options_that_do_not_apply(capsys):
    cases = ((["--topology", "path", "--layers", "-1"], "--layers applies only to --topology layered"),
             (["--topology", "star", "--width", "2"], "--width applies only to --topology layered"),
             (["--topology", "star", "--depth", "3"], "--depth applies only to --topology path"),
             (["--k", "50"], "--k applies only to --protocol sketch | subsample"),
             (["--protocol", "subsample", "--sketch", "srht"], "--sketch applies only to --protocol sketch"),
             (["--target", "y"], "--target applies only to --csv"),
             (["--topology", "layered", "--layers", "0"], "'layers' must be an int in [1, inf]"))
    for extra, text in cases:
        assert main(["dag", *extra]) == 2
        assert text in _one_line(capsys.readouterr().err)


def test_dag_cli_layered_topology_runs(capsys):
    import json

    assert main(["dag", "--topology", "layered", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["info"]["output_agent"] == "9"  # first agent of the last of 4 layers of 3
    assert main(["dag", "--topology", "layered", "--layers", "2", "--width", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["info"]["output_agent"] == "2"
