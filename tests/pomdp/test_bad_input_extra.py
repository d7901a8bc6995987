"""Bad input of the pomdp module: clean errors that name the argument (model arrays, beliefs, policy
graphs and files, the codebook FSC, the converse bound, the theory helpers) and the options of
``algos pomdp info`` that only ``solve`` uses."""

from __future__ import annotations

import json

import numpy as np
import pytest

import algos.pomdp as P
import theory.pomdp as T
from algos.cli import main


@pytest.fixture(scope="module")
def model():
    return P.tiger()


@pytest.fixture(scope="module")
def pbvi(model):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return P.PBVI(n_beliefs=10, max_iter=20, random_state=0).fit(model)


@pytest.fixture(scope="module")
def fsc(model, pbvi):
    out = P.build_codebook_fsc(model, np.array([[0.5, 0.5], [0.85, 0.15]]), pbvi.alphas_)
    return out["action"], out["eta_full"]


def test_model_rejects_complex_arrays():
    T0, Z0, r0 = np.ones((1, 2, 2)) / 2, np.ones((1, 2, 1)), np.zeros((2, 1))
    P.POMDP(T0, Z0, r0, 0.9)
    for name, args in (("T", (T0 + 0j, Z0, r0)), ("Z", (T0, Z0 + 1j, r0)), ("r", (T0, Z0, r0 + 1j))):
        with pytest.raises(TypeError, match=f"'{name}' must be a real numeric array"):
            P.POMDP(*args, 0.9)


def test_beliefs_must_be_real(model):
    with pytest.raises(TypeError, match="'b' must be an array of real numbers"):
        P.update(model, np.array(["a", "a"]), 0, 0)
    with pytest.raises(TypeError, match="'b'"):
        P.update(model, np.array([0.5 + 0.5j, 0.5]), 0, 0)
    with pytest.raises(TypeError, match="'B'"):
        P.successors(model, np.array([[0.5 + 1j, 0.5]]), 0)
    with pytest.raises(ValueError, match="'B'"):
        P.successors(model, np.array([[0.5, 0.5], [0.9, 0.1]]).ravel(), 0)
    one, many = P.successors(model, np.array([0.5, 0.5]), 0), P.successors(model, np.array([[0.5, 0.5]]), 0)
    np.testing.assert_array_equal(one[1], many[1][0])  # one belief (S,) is still accepted


def test_policy_graph_checks_tables(model, fsc):
    action, eta = fsc
    eta2 = eta[np.arange(len(action)), action]
    text = P.policy_graph(action=action, eta=eta, m0=0, format="json", pomdp=model)
    assert text == P.policy_graph(action=action, eta=eta2, m0=0, format="json", pomdp=model)
    assert json.loads(text)["m0"] == 0
    cases = ((dict(action=action.astype(complex)), TypeError, "action"),
             (dict(action=np.array([np.inf, 0.0])), TypeError, "action"),
             (dict(action=np.array(["a", "a"])), TypeError, "action"),
             (dict(action=np.asarray(0)), ValueError, "action"), (dict(action=action[:0]), ValueError, "action"),
             (dict(action=np.array([-1, 0])), ValueError, "action"),
             (dict(eta=eta[:0]), ValueError, "eta"), (dict(eta=np.where(eta == 0, np.nan, eta)), TypeError, "eta"),
             (dict(eta=eta2[:, :1]), ValueError, "eta"),
             (dict(m0=0.5), TypeError, "m0"), (dict(m0=float("nan")), TypeError, "m0"), (dict(m0="a"), TypeError, "m0"),
             (dict(m0=2), ValueError, "m0"), (dict(pomdp="abc"), TypeError, "pomdp"),
             (dict(pomdp=3), TypeError, "pomdp"))
    for kwargs, exc, name in cases:
        args = dict(action=action, eta=eta, m0=0, pomdp=model)
        args.update(kwargs)
        with pytest.raises(exc, match=f"'{name}'"):
            P.policy_graph(**args)
    with pytest.raises(TypeError, match="'action'"):
        P.write_policy_graph("unused.dot", action=np.array([np.nan, 0.0]), eta=eta2)


def test_policy_files_check_their_arguments(tmp_path, pbvi):
    path = tmp_path / "p.alpha"
    P.write_policy(path, pbvi)
    for bad in ("abc", 3):
        with pytest.raises(TypeError, match="'pomdp' must be a POMDP"):
            P.read_policy(path, pomdp=bad)
    with pytest.raises(TypeError, match="'alphas' must be an array of real numbers"):
        P.write_policy(tmp_path / "q.alpha", np.full(pbvi.alphas_.shape, "a"), np.asarray(pbvi.actions_))
    with pytest.raises(TypeError, match="'alphas'"):
        P.write_policy(tmp_path / "q.alpha", pbvi.alphas_ + 1j, np.asarray(pbvi.actions_))


def test_fib_upper_bound_checks_its_knobs(model):
    Q, n = P.fib_upper_bound(model, max_iter=0)
    assert n == 0 and np.all(Q == model.r.max() / (1 - model.discount))
    for kwargs, exc, name in ((dict(tol=float("inf")), ValueError, "tol"), (dict(tol="a"), TypeError, "tol"),
                              (dict(max_iter=2.5), TypeError, "max_iter"),
                              (dict(max_iter=float("inf")), TypeError, "max_iter"),
                              (dict(max_iter=-1), ValueError, "max_iter")):
        with pytest.raises(exc, match=f"'{name}'"):
            P.fib_upper_bound(model, **kwargs)


def test_build_codebook_fsc_checks_its_arguments(model, pbvi):
    C = np.array([[0.5, 0.5], [0.85, 0.15]])
    cases = ((dict(C=C + 1j), TypeError, "C"), (dict(C=C.ravel()), ValueError, "C"),
             (dict(C=np.array([[0.5, 0.6], [0.85, 0.15]])), ValueError, "C"),
             (dict(C=np.full((2, 2), np.nan)), ValueError, "C"),
             (dict(alphas=pbvi.alphas_[:, :1]), ValueError, "alphas"),
             (dict(alphas=np.full((2, 2), np.inf)), ValueError, "alphas"),
             (dict(alphas=None), ValueError, "alphas"), (dict(distance="zz"), ValueError, "distance"),
             (dict(distance=3), TypeError, "distance"), (dict(action_rule="zz"), ValueError, "action_rule"),
             (dict(vi_tol="a"), TypeError, "vi_tol"), (dict(vi_tol=float("nan")), ValueError, "vi_tol"),
             (dict(max_vi_iter=2.5), TypeError, "max_vi_iter"),
             (dict(max_vi_iter=float("nan")), TypeError, "max_vi_iter"))
    for kwargs, exc, name in cases:
        args = dict(pomdp=model, C=C, alphas=pbvi.alphas_)
        args.update(kwargs)
        with pytest.raises(exc, match=f"'{name}'"):
            P.build_codebook_fsc(**args)
    # alphas are not needed by the quantized MDP with the L1 quantiser
    out = P.build_codebook_fsc(model, C, None, action_rule="quantized_mdp")
    assert out["action"].shape == (2,)


def test_kmeans_explore_is_checked_before_the_solver_runs(model):
    for bad, exc in ((1.5, ValueError), (float("inf"), ValueError), (0.1 + 1j, TypeError), ("a", TypeError)):
        with pytest.raises(exc, match="'explore'"):
            P.KMeansCodebook(n_memory=2, explore=bad, pbvi_params={"n_beliefs": 5000, "max_iter": 10**6}).fit(model)


def test_converse_lower_bound_checks_solver_and_limits(model, pbvi):
    assert P.converse_lower_bound(model, 2, solver=pbvi).bound >= 0.0
    for kwargs, exc, name in ((dict(max_partitions=float("inf")), TypeError, "max_partitions"),
                              (dict(max_partitions="a"), TypeError, "max_partitions"),
                              (dict(max_trees=10.5), TypeError, "max_trees"), (dict(solver="abc"), TypeError, "solver"),
                              (dict(solver=P.PBVI()), ValueError, "solver")):
        args = dict(solver=pbvi)
        args.update(kwargs)
        with pytest.raises(exc, match=f"'{name}'"):
            P.converse_lower_bound(model, 2, **args)


def test_theory_beliefs_must_match_the_states():
    B = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    G = np.array([[1.0, 0.0], [0.0, 1.0]])
    w = np.array([0.3, 0.4, 0.3])
    vfn = lambda M: np.max(M @ G.T, axis=1)  # noqa: E731
    with pytest.raises(ValueError, match="'B' must have S = 2 columns"):
        T.decision_witnesses(B.ravel(), G)
    with pytest.raises(ValueError, match="'B'"):
        T.merge_cost(np.eye(2).ravel(), [0.5, 0.5], G)
    with pytest.raises(ValueError, match="'B'"):
        T.bregman_hard_clustering(B.ravel(), w, 2, vfn)
    with pytest.raises(ValueError, match="'B' must have shape"):
        T.decision_distortion(np.asarray(1.0), [[0.0, 1.0]], G)
    with pytest.raises(ValueError, match="'codebook'"):
        m = P.tiger()
        T.closure_distortion(m.T, m.Z, np.array([[0.5, 0.5], [0.85, 0.15]]).ravel(), np.zeros((1, 3, 2), int))
    for bad, exc in ((float("inf"), TypeError), (10.5, TypeError), ("a", TypeError), (1 + 1j, TypeError),
                     (0, ValueError)):
        with pytest.raises(exc, match="'max_partitions'"):
            T.bregman_hard_clustering(B, w, 2, vfn, max_partitions=bad)
    np.testing.assert_allclose(T.decision_distortion([1.0, 0.0], [[0.0, 1.0]], G), [[1.0]])  # one belief (S,)


def test_info_rejects_solve_options(capsys):
    assert main(["pomdp", "info", "tiger"]) == 0
    capsys.readouterr()
    for extra in (["--memory", "3"], ["--solver", "pbvi"], ["--seed", "1"], ["--simulate", "10"],
                  ["--graph-out", "g.dot"], ["--pbvi-beliefs", "10"], ["--time-limit", "5"]):
        assert main(["pomdp", "info", "tiger", *extra]) == 2
        lines = [ln for ln in capsys.readouterr().err.strip().splitlines() if ln.strip()]
        assert len(lines) == 1 and "applies only to `algos pomdp solve`" in lines[0]
