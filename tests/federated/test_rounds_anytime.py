"""The federated round loop is anytime and resumable: a KeyboardInterrupt raised during round r leaves
every round-based estimator fitted exactly as a fit of r - 1 rounds (``interrupted_``, an
``InterruptedFitWarning``), a second interrupt aborts, and ``warm_start=True`` continues the rounds of
the previous fit exactly (n rounds, then a warm fit up to m, equals one fit of m rounds)."""

import warnings

import numpy as np
import pytest

import algos.federated._federated_base as potara_module  # the round loop of every federated estimator
from algos._anytime import InterruptedFitWarning
from algos.federated import (
    APFLClassifier,
    DittoClassifier,
    FedAvgClassifier,
    FedAvgFTClassifier,
    FedITClassifier,
    FedRepClassifier,
    FedSALoRAClassifier,
    FFALoRAClassifier,
    FixedMixClassifier,
    LowRankSoftmax,
    OracleGridClassifier,
    PFedMeClassifier,
    PotaraClassifier,
)

TOL = 1e-12

# client_fraction < 1 makes every round draw from the rounds' generator; the mini-batch base draws
# per-client generators from it too
CASES = {
    "potara": (PotaraClassifier, dict(finetune_epochs=3, n_bootstrap=2, client_fraction=0.5)),
    "fedavg": (FedAvgClassifier, dict(client_fraction=0.5, base_estimator=LowRankSoftmax(batch_size=8))),
    "fedavg_ft": (FedAvgFTClassifier, dict(finetune_epochs=3, client_fraction=0.5)),
    "fixed_mix": (FixedMixClassifier, dict(finetune_epochs=3, client_fraction=0.5)),
    "oracle_grid": (OracleGridClassifier, dict(finetune_epochs=3, client_fraction=0.5)),
    "apfl": (APFLClassifier, dict(client_fraction=0.5)),
    "ditto": (DittoClassifier, dict(client_fraction=0.5)),
    "pfedme": (PFedMeClassifier, dict(K=2, client_fraction=0.5)),
    "fedrep": (FedRepClassifier, dict(rank=2, head_epochs=2, client_fraction=0.5)),
    "fedit": (FedITClassifier, dict(rank=2, client_fraction=0.5)),
    "ffa_lora": (FFALoRAClassifier, dict(rank=2, client_fraction=0.5)),
    "fedsa_lora": (FedSALoRAClassifier, dict(rank=2, client_fraction=0.5)),
}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 5))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int) + (X[:, 2] > 1.0)
    ids = np.repeat(np.arange(6), 25)
    return X, y, ids


def _make(name, **kw):
    cls, params = CASES[name]
    return cls(**{**params, "random_state": 0, **kw})


def _fit(est, data):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning)  # e.g. flat-Fisher / mixing-weight notes
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        warnings.filterwarnings("always", category=InterruptedFitWarning)
        return est.fit(*data)


def _params(est):
    """Everything a fitted estimator deploys: the federated model and the per-client models."""
    out = {f"F.{k}": v for k, v in est.federated_model_.items()}
    for cid, p in (getattr(est, "personalized_models_", None) or {}).items():
        out.update({f"{cid}.{k}": v for k, v in p.items()})
    for cid, a in (getattr(est, "alphas_", None) or {}).items():
        out[f"alpha.{cid}"] = np.asarray(a)
    return out


def _assert_same(a, b):
    pa, pb = _params(a), _params(b)
    assert pa.keys() == pb.keys()
    for k in pa:
        np.testing.assert_allclose(pa[k], pb[k], rtol=0, atol=TOL, err_msg=k)
    assert a.history_ == b.history_


from tests.test_anytime import _Bomb  # noqa: E402  (the shared KeyboardInterrupt wrapper)


@pytest.mark.parametrize("name", sorted(CASES))
def test_interrupt_in_round_r_equals_a_fit_of_r_minus_1_rounds(monkeypatch, data, name):
    r = 3
    ref = _fit(_make(name, n_rounds=r - 1), data)
    # the server's weighted mean runs once per round, after the clients' updates: the interrupt
    # comes in the middle of round r
    bomb = _Bomb(potara_module._weighted_mean, r)
    monkeypatch.setattr(potara_module, "_weighted_mean", bomb)
    est = _make(name, n_rounds=6)
    with pytest.warns(InterruptedFitWarning, match=f"interrupted after {r - 1} of 6 rounds"):
        _fit(est, data)
    assert bomb.calls == r
    assert est.interrupted_ is True and est.n_rounds_ == r - 1
    assert ref.interrupted_ is False and ref.n_rounds_ == r - 1
    _assert_same(est, ref)
    # the interrupted fit resumes: a warm fit with the same n_rounds completes the remaining rounds
    monkeypatch.setattr(potara_module, "_weighted_mean", bomb.fn)
    full = _fit(_make(name, n_rounds=6), data)
    est.set_params(warm_start=True)
    _fit(est, data)
    assert est.interrupted_ is False and est.n_rounds_ == 6
    _assert_same(est, full)


@pytest.mark.parametrize("name", sorted(CASES))
def test_warm_start_continues_the_rounds_exactly(data, name):
    full = _fit(_make(name, n_rounds=6), data)
    est = _fit(_make(name, n_rounds=3), data)
    est.set_params(n_rounds=6, warm_start=True)
    _fit(est, data)
    assert est.n_rounds_ == 6
    _assert_same(est, full)
    _fit(est, data)  # nothing left to run: the same fitted model again
    _assert_same(est, full)


def test_warm_start_false_starts_afresh(data):
    est = _fit(_make("fedavg", n_rounds=3), data)
    first = _params(est)
    est.set_params(n_rounds=3)
    _fit(est, data)
    for k, v in first.items():
        np.testing.assert_array_equal(_params(est)[k], v)


def test_warm_start_rejects_fewer_rounds_and_other_clients(data):
    X, y, ids = data
    est = _fit(_make("fedit", n_rounds=4), data)
    est.set_params(n_rounds=2, warm_start=True)
    with pytest.raises(ValueError, match="'n_rounds' must be at least the 4 rounds already run"):
        est.fit(X, y, ids)
    est.set_params(n_rounds=6)
    with pytest.raises(ValueError, match="warm_start=True resumes the previous fit's rounds"):
        est.fit(X, y, ids % 5)
    with pytest.raises(TypeError, match="'warm_start' must be a bool"):
        _make("fedit", warm_start="yes").fit(X, y, ids)


def test_a_second_interrupt_during_the_finishing_code_aborts(monkeypatch, data):
    monkeypatch.setattr(potara_module, "_weighted_mean", _Bomb(potara_module._weighted_mean, 2))
    est = _make("potara", n_rounds=5)
    monkeypatch.setattr(est, "_personalize", _Bomb(est._personalize, 1))  # the fine-tuning after the rounds
    with pytest.raises(KeyboardInterrupt), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(*data)
