"""Variance estimation for Potara's mixing weights (algos.federated.variance): definitions, the
plug-in James-Stein form, the flat-Fisher collapse warning (spec E3), and bootstrap against Monte Carlo."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from algos.federated import FlatFisherWarning, init_params, local_train, per_sample_fisher_diag
from algos.federated.variance import (
    bootstrap_variance,
    diag_fisher,
    estimate_variances,
    fisher_variance,
    iterate_variance,
    mixing_weights,
    model_blocks,
    plugin_fed_variance,
    pool_moments,
    sandwich_variance,
    untouched_mask,
)

# bootstrap vs Monte-Carlo variance of the local fine-tune: the bootstrap is consistent but with n = 150
# and B = 20 its trace is within ~30% of the truth; a factor 2 band fails only on a wrong estimator
BOOT_FACTOR = 2.0


def _client(seed, n=60, d=5, C=3, dead=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if dead:
        X[:, -dead:] = 0.0  # constant (dead) features, like the border pixels of digits
    W = rng.normal(size=(d, C))
    y = np.argmax(X @ W + rng.gumbel(size=(n, C)), axis=1)
    return X, y, rng


def _pair(seed, dead=0, rank=0, epochs_f=20, epochs_l=30):
    X, y, rng = _client(seed, dead=dead)
    other = _client(seed + 1000)
    theta_f = local_train(init_params(X.shape[1], 3, rank=rank, random_state=rng), other[0], other[1],
                          n_classes=3, epochs=epochs_f, lr=0.5)
    kw = dict(epochs=epochs_l, lr=0.5, l2=1e-3, trainable=("b", "A", "B") if rank else ("W", "b"))
    theta_l = local_train(theta_f, X, y, n_classes=3, **kw)
    return X, y, theta_f, theta_l, kw


def test_diag_fisher_and_fisher_variance_definitions():
    g = np.random.default_rng(0).normal(size=(7, 3, 2))
    assert_allclose(diag_fisher(g), (g**2).sum(0) / 7)
    F = np.array([0.0, 1.0, 4.0])
    assert_allclose(fisher_variance(F, 10, 0.1), 1.0 / (10 * F + 1.0))
    assert_allclose(fisher_variance(F, 10, 0.1, mask=[False, True, True]), [0.0, 1 / 11, 1 / 41])
    with pytest.raises(ValueError, match="infinite"):
        fisher_variance(F, 10, 0.0)
    assert_allclose(sandwich_variance(F, 10, 0.5), F / (10 * (F + 0.5) ** 2))
    assert np.all(sandwich_variance(np.linspace(0, 10, 50), 10, 0.5) <= 1 / (4 * 10 * 0.5) + 1e-15)


def test_bootstrap_iterate_plugin_helpers():
    s = np.random.default_rng(1).normal(size=(9, 4))
    assert_allclose(bootstrap_variance(s), np.var(s, axis=0, ddof=1))
    assert_allclose(iterate_variance(s, burn_in=2, scale=3.0), 3 * np.var(s[2:], axis=0, ddof=1))
    assert plugin_fed_variance(5.0, 2.0) == 3.0 and plugin_fed_variance(1.0, 2.0) == 0.0
    assert_array_equal(untouched_mask(np.array([1.0, 2.0]), np.array([1.0, 2.5])), [False, True])
    with pytest.raises(ValueError, match="at least 2"):
        bootstrap_variance(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="finite"):
        plugin_fed_variance(np.nan, 1.0)
    with pytest.raises(ValueError, match="same shape"):
        untouched_mask(np.zeros(2), np.zeros(3))


def test_per_sample_fisher_matches_diag_fisher_of_explicit_gradients():
    X, y, theta_f, _, _ = _pair(2)
    Z = X @ theta_f["W"] + theta_f["b"]
    P = np.exp(Z - Z.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    P[np.arange(len(y)), y] -= 1
    assert_allclose(per_sample_fisher_diag(theta_f, X, y, 3)["W"], diag_fisher(X[:, :, None] * P[:, None, :]),
                    atol=1e-14)


@pytest.mark.parametrize("method", ["plugin_fisher", "sandwich", "bootstrap"])
def test_plugin_is_positive_part_james_stein(method):
    X, y, f, loc, kw = _pair(3)
    est = estimate_variances(f, loc, X, y, n_classes=3, method=method, train_kwargs=kw, random_state=0)
    lam, moments = mixing_weights(est, "module")
    for k in ("W", "b"):
        D = float(np.sum(est.diff_sq[k] * est.mask[k]))
        vl = float(np.sum(est.v_loc[k]))
        assert_allclose(lam[k], min(1.0, vl / D), rtol=1e-12)
        assert_allclose(moments[k], (max(D - vl, 0.0), vl), rtol=1e-12)
    lam_g, _ = mixing_weights(est, "global")
    assert lam_g["W"] == lam_g["b"]
    lam_c, _ = mixing_weights(est, "coordinate")
    assert lam_c["W"].shape == f["W"].shape and np.all((lam_c["W"] >= 0) & (lam_c["W"] <= 1))


def test_flat_fisher_collapse_warns_and_masking_prevents_it():
    """Spec E3 / pitfall: dead features with no floor blow up the inverse Fisher -> lambda = 1."""
    X, y, f, loc, kw = _pair(4, dead=3)
    est = estimate_variances(f, loc, X, y, n_classes=3, method="plugin_fisher", fisher_floor=1e-12,
                             mask_untouched=False)
    with pytest.warns(FlatFisherWarning, match="flat coordinates"):
        lam, _ = mixing_weights(est, "module")
    assert lam["W"] == 1.0
    est = estimate_variances(f, loc, X, y, n_classes=3, method="plugin_fisher", fisher_floor=1e-12, mask_untouched=True)
    assert not est.mask["W"][-3:].any()
    with warnings.catch_warnings():
        warnings.simplefilter("error", FlatFisherWarning)
        mixing_weights(est, "module")


def test_bootstrap_variance_tracks_monte_carlo_variance_of_the_local_model():
    rng = np.random.default_rng(5)
    d, C, n = 4, 3, 150
    W = rng.normal(size=(d, C))

    def draw(g):
        X = g.normal(size=(n, d))
        return X, np.argmax(X @ W + g.gumbel(size=(n, C)), axis=1)

    theta_f = {"W": 0.5 * W + 0.3 * rng.normal(size=(d, C)), "b": np.zeros(C)}
    kw = dict(epochs=30, lr=0.5, l2=1e-3, trainable=("W", "b"))
    fits = [local_train(theta_f, *draw(rng), n_classes=C, **kw) for _ in range(150)]
    true_v = float(sum(np.sum(np.var(np.stack([p[k] for p in fits]), axis=0, ddof=1)) for k in ("W", "b")))
    boots = []
    for s in range(6):
        X, y = draw(rng)
        loc = local_train(theta_f, X, y, n_classes=C, **kw)
        est = estimate_variances(theta_f, loc, X, y, n_classes=C, method="bootstrap", train_kwargs=kw,
                                 n_bootstrap=20, random_state=s)
        boots.append(sum(float(np.sum(v)) for v in est.v_loc.values()))
    ratio = np.mean(boots) / true_v
    assert 1 / BOOT_FACTOR <= ratio <= BOOT_FACTOR, ratio


def test_product_space_blocks_for_an_adapter():
    X, y, f, loc, kw = _pair(6, rank=2)
    blocks = model_blocks(f, "product")
    assert sorted(blocks) == ["AB", "b"]
    assert_allclose(blocks["AB"], f["W"] + f["A"] @ f["B"])
    assert sorted(model_blocks(f, "factors")) == ["A", "B", "b"]
    est = estimate_variances(f, loc, X, y, n_classes=3, method="bootstrap", train_kwargs=kw, random_state=1)
    pooled = pool_moments(est, "module")
    assert sorted(pooled) == ["AB", "b"]


def test_bad_input():
    X, y, f, loc, kw = _pair(7)
    with pytest.raises(ValueError, match="method"):
        estimate_variances(f, loc, X, y, n_classes=3, method="laplace")
    with pytest.raises(ValueError, match="same blocks"):
        estimate_variances(f, {"W": loc["W"], "b": loc["b"], "A": np.zeros((5, 1)), "B": np.zeros((1, 3))},
                           X, y, n_classes=3)
    with pytest.raises(ValueError, match="at least 2 samples"):
        estimate_variances(f, loc, X[:1], y[:1], n_classes=3, method="bootstrap", train_kwargs=kw)
    with pytest.raises(ValueError, match="finite"):
        estimate_variances(f, loc, np.full_like(X, np.nan), y, n_classes=3)
    with pytest.raises(ValueError, match="granularity"):
        pool_moments(estimate_variances(f, loc, X, y, n_classes=3), "layer")
