"""PotaraClassifier and the baselines: the fitted quantities against their definitions (the FedAvg
loop equals repeated fedavg_round, personalize() equals what fit stores, endpoint ablations equal the
FedAvg / fine-tune baselines), the per-client bound, communication accounting, the sklearn contract for
estimators taking client_ids, and bad input."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.exceptions import NotFittedError

from algos.federated import (
    BASELINES,
    APFLClassifier,
    FedAvgClassifier,
    FedAvgFTClassifier,
    FedITClassifier,
    FedRepClassifier,
    FedSALoRAClassifier,
    FFALoRAClassifier,
    FixedMixClassifier,
    LocalOnlyClassifier,
    LowRankSoftmax,
    OracleGridClassifier,
    PotaraClassifier,
    fedavg_round,
)

REL_TOL = 1e-12  # U(lambda*) <= min(U(0), U(1)): round-off only


@pytest.fixture(scope="module")
def fed_data():
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(y))[:700]
    X, y = X[idx], y[idx]
    X = (X - X.mean(0)) / np.maximum(X.std(0), 1e-12)
    # label-skewed clients: client c mostly holds classes {2c, 2c+1}
    ids = np.where(rng.uniform(size=len(y)) < 0.7, y // 2, rng.integers(0, 5, len(y)))
    test = rng.uniform(size=len(y)) < 0.4
    return X[~test], y[~test], ids[~test], X[test], y[test], ids[test]


FAST = dict(n_rounds=4, local_epochs=2, random_state=0)


@pytest.fixture(scope="module")
def potara(fed_data):
    X, y, ids = fed_data[:3]
    return PotaraClassifier(finetune_epochs=20, n_bootstrap=4, **FAST).fit(X, y, ids)


def test_fit_is_fedavg_rounds_then_personalize(potara, fed_data):
    X, y, ids = fed_data[:3]
    Xs = [X[ids == c] for c in potara.clients_]
    ys = [np.searchsorted(potara.classes_, y[ids == c]) for c in potara.clients_]
    g = potara.initial_params(X.shape[1], 10)
    kw = potara.local_train_kwargs(10)
    for _ in range(FAST["n_rounds"]):
        g = fedavg_round(g, list(zip(Xs, ys)), [len(v) for v in ys], **kw)
    for k in g:
        assert_array_equal(g[k], potara.federated_model_[k])
    for m, c in enumerate(potara.clients_):
        merged, lam, bound = potara.personalize(potara.federated_model_, Xs[m], ys[m], int(c))
        for k in merged:
            assert_array_equal(merged[k], potara.personalized_models_[int(c)][k])
        assert lam == potara.mixing_weights_[int(c)]


def test_fitted_attributes_bound_and_history(potara, fed_data):
    X = fed_data[0]
    assert set(potara.mixing_weights_) == set(potara.clients_.tolist())
    for c, lam in potara.mixing_weights_.items():
        assert sorted(lam) == ["W", "b"]
        assert all(0.0 <= v <= 1.0 for v in lam.values())
        b = potara.bound_[c]
        assert b["lam_star"] <= min(b["federated"], b["local"]) * (1 + REL_TOL)
    n_params = X.shape[1] * 10 + 10
    M = len(potara.clients_)
    rounds = [h for h in potara.history_ if isinstance(h["round"], int)]
    assert len(rounds) == FAST["n_rounds"]
    for h in rounds:
        assert h["bytes_sent"] == 2 * M * n_params * 8
        assert 0.0 <= h["train_accuracy"] <= 1.0
    assert potara.history_[-1]["cumulative_bytes"] == sum(h["bytes_sent"] for h in potara.history_)


def test_personalisation_helps_on_label_skew(potara, fed_data):
    X, y, ids, Xt, yt, idt = fed_data
    fed = FedAvgClassifier(**FAST).fit(X, y, ids)
    assert potara.score(Xt, yt, idt) >= fed.score(Xt, yt, idt) - 0.02


def test_endpoint_ablations_equal_baselines(fed_data):
    X, y, ids, Xt, yt, idt = fed_data
    kw = dict(finetune_epochs=15, **FAST)
    p0 = PotaraClassifier(lam_clip=(0.0, 0.0), **kw).fit(X, y, ids)
    ft = FedAvgFTClassifier(**kw).fit(X, y, ids)
    assert_array_equal(p0.predict(Xt, idt), ft.predict(Xt, idt))
    p1 = PotaraClassifier(lam_clip=(1.0, 1.0), **kw).fit(X, y, ids)
    fed = FedAvgClassifier(**FAST).fit(X, y, ids)
    assert_array_equal(p1.predict(Xt, idt), fed.predict(Xt, idt))
    assert_array_equal(FixedMixClassifier(lam=1.0, **kw).fit(X, y, ids).predict(Xt, idt), fed.predict(Xt, idt))


def test_oracle_grid_is_at_least_both_endpoints_on_its_validation_data(fed_data):
    X, y, ids, Xt, yt, idt = fed_data
    kw = dict(finetune_epochs=15, **FAST)
    orc = OracleGridClassifier(**kw).fit(X, y, ids, Xt, yt, idt)
    fed = FedAvgClassifier(**FAST).fit(X, y, ids).client_scores(Xt, yt, idt)
    ft = FedAvgFTClassifier(**kw).fit(X, y, ids).client_scores(Xt, yt, idt)
    for c, acc in orc.client_scores(Xt, yt, idt).items():
        assert acc >= max(fed[c], ft[c]) - 1e-12
    with pytest.raises(ValueError, match="not seen in fit"):
        OracleGridClassifier(**kw).fit(X, y, ids, Xt, yt + 100, idt)
    held = OracleGridClassifier(**kw).fit(X, y, ids)
    assert all(0.0 <= v <= 1.0 for v in held.mixing_weights_.values())


@pytest.mark.parametrize("granularity", ["global", "module", "coordinate"])
@pytest.mark.parametrize("method", ["plugin_fisher", "sandwich", "swag"])
def test_granularities_and_methods_run(fed_data, granularity, method):
    import warnings

    X, y, ids = fed_data[:3]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = PotaraClassifier(granularity=granularity, variance_method=method, finetune_epochs=10, **FAST)
        est.fit(X, y, ids)
    lam = next(iter(est.mixing_weights_.values()))
    if granularity == "coordinate":
        assert lam["W"].shape == (X.shape[1], 10)
    else:
        assert np.ndim(lam["W"]) == 0
    if granularity == "global":
        assert lam["W"] == lam["b"]
    for b in est.bound_.values():
        assert b["lam_star"] <= min(b["federated"], b["local"]) * (1 + REL_TOL) + 1e-300


@pytest.mark.parametrize("space, rank", [("product", None), ("product", 2), ("factors", None)])
def test_lora_base_merges(fed_data, space, rank):
    X, y, ids, Xt, yt, idt = fed_data
    est = PotaraClassifier(base_estimator=LowRankSoftmax(rank=3), merge_space=space, merge_rank=rank,
                           finetune_epochs=10, **FAST).fit(X, y, ids)
    c = est.clients_[0].item()
    lam = est.mixing_weights_[c]
    f, loc, merged = est.federated_model_, est.local_models_[c], est.personalized_models_[c]
    if space == "product":
        assert sorted(lam) == ["AB", "b"]
        want = lam["AB"] * (f["A"] @ f["B"]) + (1 - lam["AB"]) * (loc["A"] @ loc["B"])
        if rank is None:
            assert merged["A"].shape[1] == 6
            assert_allclose(merged["A"] @ merged["B"], want, atol=1e-12)
        else:
            assert merged["A"].shape[1] == 2
    else:
        assert sorted(lam) == ["A", "B", "b"]
    assert est.score(Xt, yt, idt) > 0.3


def test_deterministic_and_string_client_ids(fed_data):
    X, y, ids, Xt, yt, idt = fed_data
    names = np.array([f"site-{i}" for i in ids])
    a = PotaraClassifier(**FAST).fit(X, y, names)
    b = PotaraClassifier(**FAST).fit(X, y, names)
    pa = a.predict_proba(Xt, np.array([f"site-{i}" for i in idt]))
    assert_array_equal(pa, b.predict_proba(Xt, np.array([f"site-{i}" for i in idt])))
    assert_allclose(pa.sum(1), 1.0)


def test_sklearn_contract_for_client_id_estimators(fed_data):
    X, y, ids = fed_data[:3]
    for cls in [PotaraClassifier] + list(BASELINES.values()):
        est = cls()
        params = est.get_params()
        cl = clone(est)
        assert cl.get_params().keys() == params.keys()
        key = next(iter(params))
        est.set_params(**{key: params[key]})
        with pytest.raises(NotFittedError):
            est.predict(X, ids)
    est = PotaraClassifier(**FAST)
    assert est.fit(X, y, ids) is est
    assert clone(est).get_params() == est.get_params()


def test_client_fraction_samples_clients(fed_data):
    X, y, ids = fed_data[:3]
    est = FedAvgClassifier(n_rounds=3, client_fraction=0.4, random_state=0).fit(X, y, ids)
    assert [h["clients"] for h in est.history_[:3]] == [2, 2, 2]


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_every_baseline_fits_and_beats_chance(fed_data, name):
    X, y, ids, Xt, yt, idt = fed_data
    cls = BASELINES[name]
    import inspect

    sig = inspect.signature(cls).parameters
    kw = {k: v for k, v in dict(n_rounds=4, local_epochs=2, finetune_epochs=10, epochs=30, random_state=0).items()
          if k in sig}
    est = cls(**kw)
    assert est.fit(X, y, ids) is est
    assert est.score(Xt, yt, idt) > 0.3
    assert all(h["bytes_sent"] >= 0 for h in est.history_)


def test_lora_baseline_structure(fed_data):
    X, y, ids = fed_data[:3]
    kw = dict(rank=3, **FAST)
    ffa = FFALoRAClassifier(**kw).fit(X, y, ids)
    fedit = FedITClassifier(**kw).fit(X, y, ids)
    # FFA-LoRA never moves A; FedIT does; FFA communicates less
    A0 = _theta0(X.shape[1], 10, rank=3)["A"]
    assert_allclose(ffa.federated_model_["A"], A0, rtol=1e-14, atol=1e-15)  # weighted mean of equal A's
    assert not np.array_equal(fedit.federated_model_["A"], A0)
    assert ffa.history_[-1]["cumulative_bytes"] < fedit.history_[-1]["cumulative_bytes"]
    sa = FedSALoRAClassifier(**kw).fit(X, y, ids)
    rep = FedRepClassifier(rank=3, n_rounds=4, random_state=0).fit(X, y, ids)
    for est in (sa, rep):
        models = list(est.personalized_models_.values())
        assert all(np.array_equal(m["A"], models[0]["A"]) for m in models)   # shared body / A
        assert not all(np.array_equal(m["B"], models[0]["B"]) for m in models)  # local heads / B
    apfl = APFLClassifier(**FAST).fit(X, y, ids)
    assert all(0.0 <= a <= 1.0 for a in apfl.alphas_.values())


# --------------------------------------------------------------------------------------------------
# limit tests: each baseline reduces to a simpler one at the end of its parameter range
# --------------------------------------------------------------------------------------------------
LIMIT_ATOL = 1e-9  # the same full-batch GD run by two code paths (numba kernel vs numpy): round-off only


def _theta0(d, C, rank=None, seed=0):
    from algos.federated._model import init_params
    from algos.federated._potara import client_generator

    return init_params(d, C, rank=rank or 0, random_state=client_generator(seed, "__server__"))


def _assert_same_models(a, b, atol=LIMIT_ATOL):
    assert set(a) == set(b)
    for k in a:
        assert_allclose(a[k], b[k], rtol=0, atol=atol, err_msg=k)


@pytest.fixture(scope="module")
def iris_clients():
    """Three clients of unequal sizes (20, 45, 85 rows), each holding all three classes."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    rng = np.random.default_rng(3)
    perm = rng.permutation(150)
    ids = np.empty(150, dtype=int)
    ids[perm[:20]], ids[perm[20:65]], ids[perm[65:]] = 0, 1, 2
    for c in range(3):
        assert set(y[ids == c]) == {0, 1, 2}
    return X, y, ids


def test_limit_single_client_fedavg_is_local_training(iris_clients):
    X, y, ids = iris_clients
    one = np.zeros(len(y), dtype=int)
    fed = FedAvgClassifier(n_rounds=5, local_epochs=3, random_state=0).fit(X, y, one)
    loc = LocalOnlyClassifier(epochs=15, random_state=0).fit(X, y, one)
    _assert_same_models(fed.federated_model_, loc.personalized_models_[0])


def test_limit_fedavg_ft_without_finetuning_is_fedavg(iris_clients):
    X, y, ids = iris_clients
    fed = FedAvgClassifier(n_rounds=5, local_epochs=2, random_state=0).fit(X, y, ids)
    ft0 = FedAvgFTClassifier(n_rounds=5, local_epochs=2, finetune_epochs=0, random_state=0).fit(X, y, ids)
    for c in range(3):
        _assert_same_models(ft0.personalized_models_[c], fed.federated_model_, atol=0.0)
    ft = FedAvgFTClassifier(n_rounds=5, local_epochs=2, finetune_epochs=7, random_state=0).fit(X, y, ids)
    mix0 = FixedMixClassifier(lam=0.0, n_rounds=5, local_epochs=2, finetune_epochs=7, random_state=0).fit(X, y, ids)
    mix = FixedMixClassifier(lam=0.3, n_rounds=5, local_epochs=2, finetune_epochs=7, random_state=0).fit(X, y, ids)
    for c in range(3):
        _assert_same_models(mix0.personalized_models_[c], ft.personalized_models_[c], atol=0.0)
        _assert_same_models(mix.personalized_models_[c], {k: 0.3 * fed.federated_model_[k] + 0.7 *
                                                          ft.personalized_models_[c][k] for k in ft.federated_model_})


def test_limit_oracle_grid_with_two_points_picks_an_endpoint(iris_clients):
    X, y, ids = iris_clients
    kw = dict(n_rounds=5, local_epochs=2, finetune_epochs=7, random_state=0)
    orc = OracleGridClassifier(grid=2, **kw).fit(X, y, ids, X, y, ids)
    fed = FedAvgClassifier(n_rounds=5, local_epochs=2, random_state=0).fit(X, y, ids)
    ft = FedAvgFTClassifier(**kw).fit(X, y, ids)
    for c in range(3):
        lam = orc.mixing_weights_[c]
        assert lam in (0.0, 1.0)
        _assert_same_models(orc.personalized_models_[c],
                            fed.federated_model_ if lam == 1.0 else ft.personalized_models_[c])
        # and it is the better endpoint on its validation data
        acc = {m: float(np.mean(np.argmax(X[ids == c] @ mod["W"] + mod["b"], 1) == y[ids == c]))
               for m, mod in ((1.0, fed.federated_model_), (0.0, ft.personalized_models_[c]))}
        assert acc[lam] >= max(acc.values())


def test_limit_ditto_mu_zero_is_local_training_and_global_track_is_fedavg(iris_clients):
    from algos.federated import DittoClassifier

    X, y, ids = iris_clients
    R, pe = 4, 3
    dit = DittoClassifier(mu=0.0, personal_epochs=pe, n_rounds=R, local_epochs=2, random_state=0).fit(X, y, ids)
    loc = LocalOnlyClassifier(epochs=R * pe, random_state=0).fit(X, y, ids)
    for c in range(3):
        _assert_same_models(dit.personalized_models_[c], loc.personalized_models_[c])
    fed = FedAvgClassifier(n_rounds=R, local_epochs=2, random_state=0).fit(X, y, ids)
    _assert_same_models(dit.federated_model_, fed.federated_model_, atol=0.0)


@pytest.mark.parametrize("mu", [10.0, 100.0])
def test_limit_ditto_large_mu_tracks_the_federated_model(iris_clients, mu):
    """mu -> inf gives FedAvg: the personal model is the minimiser of L_i(v) + mu/2 ||v - theta||^2
    (up to the unconverged GD steps), which lies within ||grad L_i(theta)|| / (mu + l2) of the centre
    theta = theta^{R-1} (strong convexity). lr * mu = 0.5 keeps the proximal GD stable and makes it
    contract by at most 1 - lr (mu + l2) per step."""
    from algos.federated import DittoClassifier
    from algos.federated._model import loss_grad

    X, y, ids = iris_clients
    R, pe, lr, l2 = 4, 30, 0.5 / mu, 1e-3
    base = LowRankSoftmax(lr=lr, l2=l2)
    dit = DittoClassifier(mu=mu, personal_epochs=pe, n_rounds=R, base_estimator=base, random_state=0).fit(X, y, ids)
    center = FedAvgClassifier(n_rounds=R - 1, base_estimator=base, random_state=0).fit(X, y, ids).federated_model_
    for c in range(3):
        _, g = loss_grad(center, X[ids == c], y[ids == c], n_classes=3, l2=l2, trainable=("W", "b"))
        gnorm = np.sqrt(sum(float(np.sum(g[k] ** 2)) for k in ("W", "b")))
        v = dit.personalized_models_[c]
        dist = np.sqrt(sum(float(np.sum((v[k] - center[k]) ** 2)) for k in ("W", "b")))
        # fixed point within gnorm / (mu + l2); GD from a start within the same radius of it adds
        # at most the contraction factor (1 - lr (mu + l2))^pe = 0.5^30 of that radius
        assert dist <= gnorm / (mu + l2) * (1 + 2 * 0.5**pe) + 1e-12, (dist, gnorm / mu)
        assert dist >= 0.2 * gnorm / (mu + l2)  # and the personal model does move: O(1/mu), not 0


def test_limit_apfl_alpha_one_is_local_alpha_zero_is_fedavg(iris_clients):
    X, y, ids = iris_clients
    R, E = 4, 2
    a1 = APFLClassifier(alpha0=1.0, lr_alpha=0.0, n_rounds=R, local_epochs=E, random_state=0).fit(X, y, ids)
    loc = LocalOnlyClassifier(epochs=R * E, random_state=0).fit(X, y, ids)
    a0 = APFLClassifier(alpha0=0.0, lr_alpha=0.0, n_rounds=R, local_epochs=E, random_state=0).fit(X, y, ids)
    fed = FedAvgClassifier(n_rounds=R, local_epochs=E, random_state=0).fit(X, y, ids)
    _assert_same_models(a0.federated_model_, fed.federated_model_)
    for c in range(3):
        _assert_same_models(a1.personalized_models_[c], loc.personalized_models_[c])
        _assert_same_models(a0.personalized_models_[c], fed.federated_model_)
        assert a1.alphas_[c] == 1.0 and a0.alphas_[c] == 0.0


def test_limit_fedrep_without_head_or_body_epochs():
    from algos.federated._model import local_train

    X, y = load_digits(return_X_y=True)
    X = (X[:300] - X[:300].mean(0)) / np.maximum(X[:300].std(0), 1e-12)
    y = y[:300]
    ids = np.arange(300) % 3
    R, he = 3, 4
    theta0 = _theta0(64, 10, rank=3)
    # no head epochs: every client deploys the shared body with the initial head
    rep = FedRepClassifier(head_epochs=0, body_epochs=2, rank=3, n_rounds=R, random_state=0).fit(X, y, ids)
    for c in range(3):
        m = rep.personalized_models_[c]
        _assert_same_models({"B": m["B"], "b": m["b"]}, {"B": theta0["B"], "b": theta0["b"]})
        assert_array_equal(m["A"], rep.federated_model_["A"])
    assert not np.array_equal(rep.federated_model_["A"], theta0["A"])
    # no body epochs: the body stays at its init and each head is (R + 1) he epochs of local head training
    rep = FedRepClassifier(head_epochs=he, body_epochs=0, rank=3, n_rounds=R, random_state=0).fit(X, y, ids)
    assert_allclose(rep.federated_model_["A"], theta0["A"], rtol=1e-14, atol=1e-15)  # weighted mean of equal A's
    for c in range(3):
        yc = np.searchsorted(rep.classes_, y[ids == c])
        ref = local_train(theta0, X[ids == c], yc, n_classes=10, epochs=(R + 1) * he, lr=0.5, l2=1e-3,
                          trainable=("B", "b"))
        _assert_same_models(rep.personalized_models_[c], ref)


def test_pfedme_uniform_server_mean_and_server_mix(iris_clients):
    """pFedMe's server mean is uniform over clients (the paper's Algorithm 1), not weighted by n_i:
    with one round, beta = 1 and unequal client sizes, the federated model is the plain mean of the
    models each client reaches alone from the same start; with beta < 1 it is (1 - beta) theta0 +
    beta * that mean."""
    from algos.federated import PFedMeClassifier

    X, y, ids = iris_clients
    kw = dict(lam=2.0, K=3, n_rounds=1, local_epochs=2, random_state=0)
    alone = []
    for c in range(3):
        one = PFedMeClassifier(**kw).fit(X[ids == c], y[ids == c], np.zeros(int(np.sum(ids == c)), dtype=int))
        alone.append(one.federated_model_)
    n = np.array([np.sum(ids == c) for c in range(3)], dtype=float)
    uni = PFedMeClassifier(**kw).fit(X, y, ids)
    _assert_same_models(uni.federated_model_, {k: np.mean([a[k] for a in alone], axis=0) for k in alone[0]})
    smp = PFedMeClassifier(aggregation="samples", **kw).fit(X, y, ids)
    _assert_same_models(smp.federated_model_, {k: sum(w * a[k] for w, a in zip(n / n.sum(), alone))
                                               for k in alone[0]})
    assert not np.allclose(uni.federated_model_["W"], smp.federated_model_["W"])
    theta0 = _theta0(4, 3)
    half = PFedMeClassifier(beta=0.5, **kw).fit(X, y, ids)
    _assert_same_models(half.federated_model_, {k: 0.5 * theta0[k] + 0.5 * uni.federated_model_[k] for k in theta0})
    with pytest.raises(ValueError, match="'aggregation' must be one of"):
        PFedMeClassifier(aggregation="median", **kw).fit(X, y, ids)


def test_limit_ffa_lora_never_moves_A_and_fedsa_keeps_B_local(iris_clients):
    X, y, ids = iris_clients
    theta0 = _theta0(4, 3, rank=2)
    ffa = FFALoRAClassifier(rank=2, n_rounds=3, random_state=0).fit(X, y, ids)
    assert_allclose(ffa.federated_model_["A"], theta0["A"], rtol=1e-14, atol=1e-15)
    fedit = FedITClassifier(rank=2, n_rounds=3, random_state=0).fit(X, y, ids)
    assert fedit.history_[-1]["cumulative_bytes"] > ffa.history_[-1]["cumulative_bytes"]
    # one client: FedSA-LoRA (A averaged over one client, B local) is FedIT (both averaged over one client)
    one = np.zeros(len(y), dtype=int)
    sa = FedSALoRAClassifier(rank=2, n_rounds=3, random_state=0).fit(X, y, one)
    it = FedITClassifier(rank=2, n_rounds=3, random_state=0).fit(X, y, one)
    _assert_same_models(sa.personalized_models_[0], it.federated_model_)


@pytest.mark.parametrize("cls, kw, match", [
    (FedAvgClassifier, dict(n_rounds=0), r"'n_rounds' must be an int in \[1, inf\]; got 0"),
    (FedAvgClassifier, dict(local_epochs=0), r"'local_epochs' must be an int in \[1, inf\]; got 0"),
    (FedAvgClassifier, dict(client_fraction=1.5), r"'client_fraction' must be a float in \(0, 1\]; got 1.5"),
    (LocalOnlyClassifier, dict(epochs=0), r"'epochs' must be an int in \[1, inf\]; got 0"),
    (APFLClassifier, dict(alpha0=1.2), r"'alpha0' must be a float in \[0, 1\]; got 1.2"),
    (FixedMixClassifier, dict(lam=-0.1), r"'lam' must be a float in \[0, 1\]"),
    (OracleGridClassifier, dict(val_fraction=1.0), r"'val_fraction' must be a float in \(0, 1\)"),
    (FedRepClassifier, dict(n_rounds=0), r"'n_rounds' must be an int in \[1, inf\]"),
])
def test_constructors_reject_zero_rounds_and_bad_probabilities(iris_clients, cls, kw, match):
    X, y, ids = iris_clients
    with pytest.raises(ValueError, match=match):
        cls(**kw).fit(X, y, ids)


def test_constructors_reject_zero_personal_epochs(iris_clients):
    from algos.federated import DittoClassifier, PFedMeClassifier

    X, y, ids = iris_clients
    with pytest.raises(ValueError, match=r"'personal_epochs' must be an int in \[1, inf\]"):
        DittoClassifier(personal_epochs=0).fit(X, y, ids)
    with pytest.raises(ValueError, match=r"'beta' must be a float in \(0, 1\]"):
        PFedMeClassifier(beta=1.5).fit(X, y, ids)


def test_bad_input(fed_data):
    X, y, ids, Xt, yt, idt = fed_data
    with pytest.raises(ValueError, match="at least 2 training samples"):
        PotaraClassifier(**FAST).fit(X, y, np.r_[ids[:-1], 99])
    with pytest.raises(ValueError, match="one entry per row"):
        PotaraClassifier(**FAST).fit(X, y, ids[:-1])
    est = PotaraClassifier(**FAST).fit(X, y, ids)
    with pytest.raises(ValueError, match="not seen in fit"):
        est.predict(Xt, np.full(len(yt), 42))
    with pytest.raises(ValueError, match="features"):
        est.predict(Xt[:, :5], idt)
    with pytest.raises(ValueError, match="variance_method"):
        PotaraClassifier(variance_method="laplace", **FAST).fit(X, y, ids)
    with pytest.raises(ValueError, match="lam_clip"):
        PotaraClassifier(lam_clip=(0.8, 0.2), **FAST).fit(X, y, ids)
    with pytest.raises(TypeError, match="base_estimator"):
        PotaraClassifier(base_estimator="softmax", **FAST).fit(X, y, ids)
    with pytest.raises(ValueError, match="at least 2 classes"):
        PotaraClassifier(**FAST).fit(X, np.zeros(len(y)), ids)
    with pytest.raises(ValueError, match="finite"):
        PotaraClassifier(**FAST).fit(np.full_like(X, np.nan), y, ids)
    with pytest.raises(ValueError, match="at least 2 samples"):
        est.personalize(est.federated_model_, X[:1], np.zeros(1, int), 0)


def test_one_class_client_and_unseen_labels_are_handled(fed_data):
    """Documented behaviour: a client holding one class is accepted; its local model has never seen the
    other classes, so the merge (lambda > 0) keeps them through the federated model."""
    X, y, ids, Xt, yt, idt = fed_data
    ids = ids.copy()
    only0 = y == 0
    ids[only0] = 7  # client 7 holds class 0 only
    ids[(ids == 7) & ~only0] = 0
    est = PotaraClassifier(finetune_epochs=20, **FAST).fit(X, y, ids)
    lam = est.mixing_weights_[7]
    assert lam["W"] > 0.0
    Xo = Xt[yt == 1][:10]
    pred = est.predict(Xo, np.full(len(Xo), 7))
    assert np.mean(pred == 1) > 0.0  # an unseen class can still be predicted for client 7


def test_oracle_grid_accepts_the_candidate_values_as_an_array(iris_clients):
    X, y, ids = iris_clients
    kw = dict(n_rounds=5, local_epochs=2, finetune_epochs=7, random_state=0)
    by_count = OracleGridClassifier(grid=2, **kw).fit(X, y, ids, X, y, ids)
    by_values = OracleGridClassifier(grid=[0.0, 1.0], **kw).fit(X, y, ids, X, y, ids)
    assert by_values.mixing_weights_ == by_count.mixing_weights_
    for bad in ([], [0.5, 1.5], [[0.0, 1.0]]):
        with pytest.raises(ValueError, match=r"^'grid' must be an int >= 2 or a non-empty 1-d array"):
            OracleGridClassifier(grid=bad, **kw).fit(X, y, ids)
