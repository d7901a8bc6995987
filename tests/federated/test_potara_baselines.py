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
    A0 = FedITClassifier(n_rounds=0, rank=3, random_state=0).fit(X, y, ids).federated_model_["A"]
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
