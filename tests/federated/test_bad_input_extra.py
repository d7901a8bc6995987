"""Targeted regression tests of bad input found by the fuzz battery (each names the argument)."""

from __future__ import annotations

import argparse
import math

import numpy as np
import pytest
from scipy import stats

import algos.federated as FD
import theory.federated as T
from algos.federated import _cli


def _fed(n=60, d=4, clients=3):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] > 0).astype(int)
    return X, y, np.arange(n) % clients


# ----------------------------------------------------------------------------------------- theory
@pytest.mark.parametrize("func, kwargs, name", [
    (T.variance_trace_bound, dict(lam=0.5, v_fed=1 + 2j, v_loc=3.0), "v_fed"),
    (T.variance_trace_bound, dict(lam="x", v_fed=1.0, v_loc=3.0), "lam"),
    (T.expected_loss_bound, dict(lam=0.5, v_fed=1.0, v_loc="x", beta=1.0), "v_loc"),
    (T.expected_loss_bound, dict(lam=0.5, v_fed=1.0, v_loc=3.0, beta="x"), "beta"),
    (T.optimal_lambda, dict(v_fed=1.0, v_loc=3.0, cov=["a"]), "cov"),
    (T.optimal_bound, dict(v_fed="a", v_loc=3.0), "v_fed"),
    (T.module_bound, dict(lam=np.array([0.5 + 1j, 0.2]), v_fed=np.ones(2), v_loc=np.ones(2)), "lam"),
    (T.module_bound, dict(lam=0.5, v_fed=np.ones(2), v_loc=np.ones(2), beta=["a", "b"]), "beta"),
    (T.optimal_lambda_modules, dict(v_fed=np.array([1.0, 2.0 + 1j]), v_loc=np.ones(2)), "v_fed"),
    (T.shared_lambda, dict(v_fed=np.ones(2), v_loc=np.ones(2), cov=np.array([0.1 + 1j, 0.0])), "cov"),
    (T.ols_variance_trace, dict(X=[["a", "b"], ["c", "d"]], sigma2=1.0), "X"),
    (T.lmc_barrier, dict(lams=["a", "b"], losses=[1.0, 2.0]), "lams"),
    (T.james_stein_risk, dict(p=10, s2="x", dist_sq=0.5), "s2"),
    (T.james_stein_risk, dict(p=10, s2=1.0, dist_sq=0.5, n_terms=2.5), "n_terms"),
])
def test_theory_wrong_type_is_a_type_error_naming_the_argument(func, kwargs, name):
    with pytest.raises(TypeError, match=f"'{name}'"):
        func(**kwargs)


@pytest.mark.parametrize("func, kwargs, name", [
    (T.ols_variance_trace, dict(X=np.eye(2), sigma2=math.inf), "sigma2"),
    (T.lmc_barrier, dict(lams=[0.0, math.nan, 1.0], losses=[1.0, 1.0, 1.0]), "lams"),
    (T.module_bound, dict(lam=0.5, v_fed=1.0, v_loc=np.ones(2)), "v_fed"),
])
def test_theory_bad_value_is_a_value_error_naming_the_argument(func, kwargs, name):
    with pytest.raises(ValueError, match=f"'{name}'"):
        func(**kwargs)


def test_module_bound_still_takes_a_shared_scalar_lambda():
    vf, vl = np.array([1.0, 2.0]), np.array([3.0, 1.0])
    assert T.module_bound(0.5, vf, vl) == pytest.approx(T.module_bound(np.array([0.5, 0.5]), vf, vl), abs=0)


def test_ols_variance_trace_of_huge_features_is_the_scaled_value():
    X = np.random.default_rng(0).normal(size=(30, 3))
    # sigma^2 tr((X^T X)^-1) scales as sigma^2 / c^2 under X -> c X; here X^T X overflows
    assert T.ols_variance_trace(1e160 * X, 1e300) == pytest.approx(T.ols_variance_trace(X, 1.0) * 1e-20, rel=1e-12)
    assert T.ols_variance_trace(1e200 * X, 1.0) == 0.0  # below the smallest float


@pytest.mark.parametrize("p, s2, dist_sq", [(10, 1.0, 4.0002e7), (5, 2.0, 1e8), (3, 1.0, 4e7)])
def test_james_stein_risk_beyond_the_series_matches_the_windowed_poisson_sum(p, s2, dist_sq):
    rate = dist_sq / (2 * s2)
    half = 12 * math.sqrt(rate + 1) + 50  # the Poisson mass outside rate +- half is far below 1e-30
    k = np.arange(int(rate - half), int(rate + half) + 1)
    e_inv = float(np.sum(stats.poisson.pmf(k, rate) / (p - 2 + 2 * k)))
    assert T.james_stein_risk(p, s2, dist_sq) == pytest.approx(p * s2 - (p - 2) ** 2 * s2 * e_inv, rel=1e-13)


def test_james_stein_risk_of_a_far_target_is_finite_and_below_p_s2():
    r = T.james_stein_risk(10, 1.0, 1e200)
    assert math.isfinite(r) and r <= 10.0


# ----------------------------------------------------------------------------------------- model
@pytest.mark.parametrize("bad", ["abc", 3])
def test_params_of_the_wrong_type_are_a_type_error(bad):
    with pytest.raises(TypeError, match="'params'"):
        FD.effective_weights(bad)
    with pytest.raises(TypeError, match="'params'"):
        FD.default_trainable(bad)


def test_predict_logits_rejects_zero_rows():
    with pytest.raises(ValueError, match="'X'"):
        FD.predict_logits(FD.init_params(4, 4), np.zeros((0, 4)))


def test_diverging_gradient_descent_is_a_clear_error():
    X, y, _ = _fed()
    with pytest.raises(ValueError, match="'lr'.*'X'"):
        FD.local_train(FD.init_params(4, 4), X, y, n_classes=4, epochs=2, lr=1e200)
    with pytest.raises(ValueError, match="'X'"):
        FD.local_train(FD.init_params(4, 4), 1e200 * X, y, n_classes=4, epochs=2, lr=0.5)
    with pytest.raises(ValueError, match="'X'"):
        FD.per_sample_fisher_diag(FD.init_params(4, 4), 1e200 * X, y, n_classes=4)


def test_fedavg_round_weights_must_be_real():
    X, y, _ = _fed()
    data = [(X[:20], y[:20]), (X[20:], y[20:])]
    for bad in (["a", "b"], [20 + 1j, 40]):
        with pytest.raises(TypeError, match="'weights'"):
            FD.fedavg_round(FD.init_params(4, 4), data, bad, n_classes=4, epochs=1, lr=0.5)


def test_low_rank_softmax_huge_or_string_features():
    X, y, _ = _fed()
    with pytest.raises(ValueError, match="'X'"):
        FD.LowRankSoftmax(max_iter=5).fit(1e200 * X, y)
    with pytest.raises(ValueError, match="'X'"):
        FD.LowRankSoftmax(max_iter=5).fit(np.full(X.shape, "b"), y)
    est = FD.LowRankSoftmax(max_iter=5).fit(X, y)
    with pytest.raises(ValueError, match="'X'"):
        est.predict(np.full(X.shape, "b").tolist())


# ----------------------------------------------------------------------------------------- estimators
@pytest.mark.parametrize("cls, kw", [
    (FD.PotaraClassifier, dict(n_rounds=2, finetune_epochs=2, n_bootstrap=2)),
    (FD.FedAvgClassifier, dict(n_rounds=2)),
    (FD.LocalOnlyClassifier, dict(epochs=2)),
    (FD.APFLClassifier, dict(n_rounds=2)),
])
def test_federated_estimators_reject_bad_labels_and_huge_features(cls, kw):
    X, y, ids = _fed()
    for bad, err in ((np.where(np.arange(60) == 3, np.nan, y), ValueError),
                     (np.where(np.arange(60) == 3, np.inf, y), ValueError),
                     (y + 0j, TypeError)):
        with pytest.raises(err, match="'y'"):
            cls(random_state=0, **kw).fit(X, bad, ids)
    with pytest.raises(ValueError, match="'X'"):
        cls(random_state=0, **kw).fit(1e200 * X, y, ids)
    est = cls(random_state=0, **kw).fit(X, y, ids)
    for bad, err in ((np.full(60, "a"), TypeError), (np.where(np.arange(60) == 5, np.inf, y), ValueError),
                     (y + 0j, TypeError),
                     (y[:0], ValueError), (y[:, None], ValueError)):
        with pytest.raises(err, match="'y'"):
            est.score(X, bad, ids)
        with pytest.raises(err, match="'y'"):
            est.client_scores(X, bad, ids)
    assert est.score(X, y, ids) == pytest.approx(np.mean(est.predict(X, ids) == y), abs=0)


def test_string_labels_are_still_scored():
    X, y, ids = _fed()
    labels = np.array(["a", "b", "c", "d"])[y]
    est = FD.FedAvgClassifier(n_rounds=2, random_state=0).fit(X, labels, ids)
    assert est.score(X, labels, ids) == pytest.approx(np.mean(est.predict(X, ids) == labels), abs=0)
    with pytest.raises(TypeError, match="'y'"):
        est.score(X, y, ids)


def test_client_ids_of_mixed_or_unhashable_kinds():
    X, y, _ = _fed()
    mixed = np.array([0, "a"] * 30, dtype=object)
    with pytest.raises(TypeError, match="'client_ids'"):
        FD.FedAvgClassifier(n_rounds=1).fit(X, y, mixed)
    with pytest.raises(TypeError, match="'client_ids'"):
        tuples = np.empty(60, dtype=object)
        tuples[:] = [(0, 1)] * 30 + [(1, 2)] * 30
        FD.FedAvgClassifier(n_rounds=1).fit(X, y, tuples)


# ----------------------------------------------------------------------------------------- helpers
@pytest.mark.parametrize("kwargs, err, name", [
    (dict(client_id=1 + 2j), TypeError, "client_id"),
    (dict(client_id=math.nan), TypeError, "client_id"),
    (dict(client_id=1.5), TypeError, "client_id"),
    (dict(client_id=1, stream=math.inf), TypeError, "stream"),
    (dict(client_id=1, stream=0.5), TypeError, "stream"),
    (dict(client_id=1, stream=-1), ValueError, "stream"),
])
def test_client_generator_bad_input(kwargs, err, name):
    with pytest.raises(err, match=f"'{name}'"):
        FD.client_generator(0, **kwargs)


def test_client_generator_valid_ids_unchanged():
    a = FD.client_generator(0, 3, stream=1).integers(1 << 30)
    b = np.random.default_rng(np.random.SeedSequence(0, spawn_key=(3, 1))).integers(1 << 30)
    assert a == b
    assert FD.client_generator(0, "site", 0).integers(1 << 30) == FD.client_generator(0, "site").integers(1 << 30)


def test_merge_models_bad_input():
    p = FD.init_params(4, 4)
    for bad in ("abc", 3):
        with pytest.raises(TypeError, match="'theta_f'"):
            FD.merge_models(bad, p, 0.5)
        with pytest.raises(TypeError, match="'theta_l'"):
            FD.merge_models(p, bad, 0.5)
    for bad in ("a", 0.5 + 1j):
        with pytest.raises(TypeError, match="'lam'"):
            FD.merge_models(p, p, bad)
    with pytest.raises(ValueError, match="'lam'"):
        FD.merge_models(p, p, {"W": 0.5})


def test_merge_lora_and_mixing_weight_bad_arrays():
    A, B = np.ones((3, 2)), np.ones((2, 4))
    with pytest.raises(TypeError, match="'A_loc'"):
        FD.merge_lora(A, B, A + 0j, B, 0.3)
    with pytest.raises(TypeError, match="'B_fed'"):
        FD.merge_lora(A, np.full(B.shape, "s"), A, B, 0.3)
    with pytest.raises(ValueError, match="'A_fed'"):
        FD.merge_lora(A[:0], B, A, B, 0.3)
    with pytest.raises(TypeError, match="'v_fed'"):
        FD.optimal_mixing_weight("x", 3.0)
    with pytest.raises(TypeError, match="'cov'"):
        FD.optimal_mixing_weight(1.0, 3.0, cov=0.1 + 1j)


def test_variance_estimate_counts_and_type():
    X, y, _ = _fed()
    p = FD.init_params(4, 4)
    for kw, err in ((dict(n_bootstrap="a"), TypeError), (dict(n_bootstrap=2.5), TypeError),
                    (dict(swag_epochs=math.nan), TypeError), (dict(n_bootstrap=1), ValueError)):
        with pytest.raises(err, match=f"'{next(iter(kw))}'"):
            FD.estimate_variances(p, p, X, y, n_classes=4, **kw)
    for bad in ("abc", 3):
        with pytest.raises(TypeError, match="'est'"):
            FD.mixing_weights(bad)


def test_dirichlet_label_split_bad_labels():
    y = (np.arange(40) % 4).astype(float)
    for bad, err in ((np.where(np.arange(40) == 2, np.nan, y), ValueError),
                     (np.where(np.arange(40) == 2, -np.inf, y), ValueError), (y + 1j, TypeError)):
        with pytest.raises(err, match="'y'"):
            FD.dirichlet_label_split(bad, 4, 0.5, random_state=0)
    with pytest.raises(ValueError, match="'y'"):
        FD.dirichlet_label_split(y[:0], 4, 0.5)
    assert FD.dirichlet_label_split(y[:0], 4, 0.5, min_size=0).shape == (0,)  # allowed when min_size is 0
    ids = FD.dirichlet_label_split(np.array(["a", "b"] * 20), 4, 0.5, random_state=0)  # string labels
    assert ids.shape == (40,) and np.bincount(ids, minlength=4).min() >= 2


# ----------------------------------------------------------------------------------------- CLI
def _parse(argv):
    ap = argparse.ArgumentParser(prog="algos")
    sub = ap.add_subparsers(dest="command")
    _cli.add_parser(sub, "potara")
    return ap.parse_args(["potara", *argv])


@pytest.mark.parametrize("argv, flag", [
    (["--dataset", "fedprox", "--target", "y"], "--target"),
    (["--dataset", "fedprox", "--features", "a,b"], "--features"),
    (["--dataset", "fedprox", "--client-column", "site"], "--client-column"),
    (["--dataset", "fedprox", "--alpha", "0.3"], "--alpha"),
    (["--dataset", "digits", "--syn-alpha", "1"], "--syn-alpha"),
    (["--syn-beta", "1"], "--syn-beta"),
    (["--csv", "x.csv", "--target", "y", "--client-column", "site", "--alpha", "0.3"], "--alpha"),
])
def test_potara_cli_rejects_options_of_another_data_source(argv, flag):
    args = _parse(argv)
    with pytest.raises(ValueError, match=f"^{flag} applies only to"):
        args.func(args)


def test_potara_cli_checks_the_synthetic_parameters():
    args = _parse(["--dataset", "fedprox", "--syn-alpha", "nan"])
    with pytest.raises(ValueError, match="'syn_alpha'"):
        args.func(args)
