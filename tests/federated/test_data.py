"""Federated data generators: the Dirichlet split's semantics and the synthetic families' models."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.stats import norm

from algos.federated._data import (
    _digits_pools,
    dirichlet_label_split,
    dirichlet_mixture_sample,
    make_digits_clients,
    make_fedprox_synthetic,
    make_hetero_linear,
)

N_SE = 4.0  # Monte-Carlo checks: pass within 4 standard errors (two-sided miss probability ~6e-5)


# ------------------------------------------------------------------------------------------ Dirichlet
@settings(max_examples=30)
@given(n_classes=st.integers(1, 6), per_class=st.integers(1, 40), n_clients=st.integers(1, 12),
       alpha=st.floats(0.05, 100.0), min_size=st.integers(0, 2), seed=st.integers(0, 2**32 - 1))
def test_dirichlet_split_is_a_partition_with_min_size(n_classes, per_class, n_clients, alpha, min_size, seed):
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.repeat(np.arange(n_classes), per_class))
    if n_clients * min_size > y.size:
        with pytest.raises(ValueError, match="'min_size'"):
            dirichlet_label_split(y, n_clients, alpha, min_size, random_state=seed)
        return
    try:
        ids = dirichlet_label_split(y, n_clients, alpha, min_size, random_state=seed)
    except ValueError as exc:  # tiny alpha + tight min_size: documented failure, never a wrong split
        assert "no Dirichlet split" in str(exc)
        return
    assert ids.shape == y.shape and ids.dtype == np.int64
    assert ids.min() >= 0 and ids.max() < n_clients  # every sample in exactly one client
    counts = np.bincount(ids, minlength=n_clients)
    assert counts.sum() == y.size and counts.min() >= min_size
    parts = [np.flatnonzero(ids == c) for c in range(n_clients)]
    assert_array_equal(np.sort(np.concatenate(parts)), np.arange(y.size))


def test_dirichlet_split_concentration_matches_dirichlet_moment():
    """Per class, E sum_c p_c^2 = (alpha + 1) / (M alpha + 1) for p ~ Dir(alpha 1_M).

    Small alpha: -> 1 (each class on one client); large alpha: -> 1/M (iid proportions).
    min_size = 0 so that no resampling conditions the draw.
    """
    n_classes, per_class, M = 200, 1000, 10
    y = np.repeat(np.arange(n_classes), per_class)
    round_atol = 2.0 / per_class  # shares are rounded to whole samples: |sum p^2 error| <= 2/n_k
    for alpha in (0.02, 0.3, 3.0, 300.0):
        ids = dirichlet_label_split(y, M, alpha, min_size=0, random_state=1)
        shares = np.stack([np.bincount(ids[y == k], minlength=M) / per_class for k in range(n_classes)])
        herf = (shares**2).sum(axis=1)
        expected = (alpha + 1) / (M * alpha + 1)
        se = herf.std(ddof=1) / np.sqrt(n_classes)
        assert abs(herf.mean() - expected) <= N_SE * se + round_atol, (alpha, herf.mean(), expected, se)


def test_dirichlet_split_limits():
    y = np.repeat(np.arange(10), 500)
    M = 10
    # alpha -> inf: every client holds the global class proportions and n/M samples
    ids = dirichlet_label_split(y, M, 1e6, random_state=0)
    props = np.stack([np.bincount(y[ids == c], minlength=10) / (ids == c).sum() for c in range(M)])
    assert_allclose(props, 0.1, atol=0.005, err_msg="alpha=1e6 should give iid class proportions")
    assert_allclose(np.bincount(ids), y.size / M, rtol=0.02)
    # alpha -> 0: every class lands (almost) entirely on one client
    ids = dirichlet_label_split(y, M, 1e-3, min_size=0, random_state=0)
    top = [np.bincount(ids[y == k], minlength=M).max() / 500 for k in range(10)]
    assert np.mean(top) > 0.95


def test_dirichlet_split_reproducible_and_label_agnostic():
    y = np.repeat(np.array(["cat", "dog", "eel"]), 30)
    a = dirichlet_label_split(y, 5, 0.5, random_state=3)
    b = dirichlet_label_split(np.repeat([7, 8, 9], 30), 5, 0.5, random_state=3)
    assert_array_equal(a, b)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(y=np.zeros((4, 2)), n_clients=2, alpha=1.0), ValueError, "'y' must be 1-dimensional"),
        (dict(y=np.arange(10), n_clients=0, alpha=1.0), ValueError, r"'n_clients' must be an int in \[1, inf\]"),
        (dict(y=np.arange(10), n_clients=2, alpha=0.0), ValueError, r"'alpha' must be a float in \(0, inf\)"),
        (dict(y=np.arange(10), n_clients=2, alpha=float("nan")), ValueError, "'alpha' must be a float"),
        (dict(y=np.arange(10), n_clients=6, alpha=1.0, min_size=2), ValueError, "at most the number of samples"),
        (dict(y=np.arange(10), n_clients=2.0, alpha=1.0), TypeError, "'n_clients' must be an int"),
        (dict(y=np.repeat([0, 1], 50), n_clients=40, alpha=1e-3, min_size=2, max_tries=3), ValueError,
         "no Dirichlet split"),
    ],
)
def test_dirichlet_split_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        dirichlet_label_split(random_state=0, **kwargs)


# ---------------------------------------------------------------------------------- FedProx synthetic
def test_fedprox_labels_are_argmax_of_client_models():
    data = make_fedprox_synthetic(0.5, 0.5, n_clients=8, random_state=0)
    for i in range(8):
        m = data.client_ids == i
        assert_array_equal(data.y[m], np.argmax(data.X[m] @ data.W[i] + data.b[i], axis=1))
    assert data.X.shape[1] == 60 and data.W.shape == (8, 60, 10) and data.y.max() < 10


def test_fedprox_feature_distribution():
    """x ~ N(v_i, diag(j^-1.2)): check mean and covariance of one large client."""
    n, d = 20_000, 60
    data = make_fedprox_synthetic(1.0, 1.0, n_clients=2, n_per_client=[n, 3], random_state=1)
    X = data.X[data.client_ids == 0]
    var = np.arange(1, d + 1) ** -1.2
    assert np.all(np.abs(X.mean(axis=0) - data.mean_x[0]) <= N_SE * np.sqrt(var / n))
    cov = np.cov(X, rowvar=False)
    # sample variance: se = var sqrt(2/(n-1)); covariance (i != j): se = sqrt(var_i var_j / n)
    assert np.all(np.abs(np.diag(cov) - var) <= N_SE * var * np.sqrt(2 / (n - 1)))
    off = cov - np.diag(np.diag(cov))
    bound = N_SE * np.sqrt(np.outer(var, var) / n) + 1e-15
    assert np.mean(np.abs(off) <= bound) > 0.99  # 3540 entries at 4 se: expect ~0 misses


def test_fedprox_prior_spreads_alpha_beta():
    """u_i ~ N(0, alpha^2), W_i, b_i ~ N(u_i, 1); B_i ~ N(0, beta^2), v_i ~ N(B_i, 1)."""
    M, d, C, alpha, beta = 3000, 60, 10, 0.7, 1.6
    data = make_fedprox_synthetic(alpha, beta, n_clients=M, n_features=d, n_classes=C, n_per_client=1, random_state=2)
    wb = np.concatenate([data.W.reshape(M, -1), data.b], axis=1)  # d*C + C entries with mean u_i
    k = wb.shape[1]
    # client mean of the entries = u_i + N(0, 1/k): variance alpha^2 + 1/k across clients
    for sample, target in ((wb.mean(axis=1), alpha**2 + 1 / k), (data.mean_x.mean(axis=1), beta**2 + 1 / d)):
        v = sample.var(ddof=1)
        assert abs(v - target) <= N_SE * target * np.sqrt(2 / (M - 1)), (v, target)
    within = wb.var(axis=1, ddof=1).mean()  # within-client variance of the entries is 1
    assert abs(within - 1.0) <= N_SE * np.sqrt(2 / (k - 1) / M)


def test_fedprox_default_sizes_are_lognormal_plus_50():
    M = 4000
    data = make_fedprox_synthetic(0.0, 0.0, n_clients=M, n_features=1, n_classes=2, random_state=3)
    sizes = np.bincount(data.client_ids, minlength=M)
    assert sizes.min() >= 50
    for t in (55, 404, 20):  # floor(L) >= t  <=>  L >= t, L ~ LogNormal(4, 2)
        p = norm.sf((np.log(t) - 4.0) / 2.0)
        count = np.sum(sizes - 50 >= t)
        assert abs(count - M * p) <= N_SE * np.sqrt(M * p * (1 - p)), (t, count, M * p)


def test_fedprox_iid_variant_shares_one_model():
    data = make_fedprox_synthetic(0.0, 1.0, n_clients=4, n_per_client=5, iid=True, random_state=0)
    assert_array_equal(data.W, np.broadcast_to(data.W[0], data.W.shape))
    assert_array_equal(data.mean_x, np.repeat(data.mean_x[:, :1], 60, axis=1))


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(alpha=-1.0, beta=0.0), ValueError, r"'alpha' must be a float in \[0, inf\]"),
        (dict(alpha=0.0, beta=float("inf")), ValueError, "'beta' must be a float"),
        (dict(alpha=0.0, beta=0.0, n_classes=1), ValueError, "'n_classes' must be an int in"),
        (dict(alpha=0.0, beta=0.0, n_clients=3, n_per_client=[1, 2]), ValueError, "length n_clients = 3"),
        (dict(alpha=0.0, beta=0.0, n_per_client=0), ValueError, "'n_per_client' must be an int"),
        (dict(alpha=0.0, beta=0.0, iid=1), TypeError, "'iid' must be a bool"),
    ],
)
def test_fedprox_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        make_fedprox_synthetic(random_state=0, **kwargs)


# -------------------------------------------------------------------------------- heterogeneous linear
def test_hetero_linear_parameter_spread_is_tau():
    M, p, tau = 500, 20, 0.3
    data = make_hetero_linear(M, p, tau, 1.0, 2, random_state=0)
    dev = (data.theta - data.theta_bar).ravel()
    v = dev.var(ddof=0)  # centre known: E v = tau^2, se = tau^2 sqrt(2/(M p))
    assert abs(np.mean(dev**2) - tau**2) <= N_SE * tau**2 * np.sqrt(2 / dev.size), v


def test_hetero_linear_regression_model():
    M, p, sigma = 3, 5, 0.7
    sizes = [4000, 10, 20]
    data = make_hetero_linear(M, p, 0.5, sigma, sizes, random_state=1)
    assert_array_equal(np.bincount(data.client_ids), sizes)
    resid = data.y - np.einsum("ij,ij->i", data.X, data.theta[data.client_ids])
    n = resid.size
    assert abs(resid.var() - sigma**2) <= N_SE * sigma**2 * np.sqrt(2 / n)
    X0 = data.X[data.client_ids == 0]
    assert_allclose(X0.T @ X0 / X0.shape[0], np.eye(p), atol=N_SE * np.sqrt(2 / 4000))  # E xx' = I
    exact = make_hetero_linear(M, p, 0.0, 0.0, sizes, theta_bar=np.arange(p), random_state=1)
    assert_array_equal(exact.theta, np.broadcast_to(np.arange(p, dtype=float), (M, p)))
    assert_allclose(exact.y, exact.X @ np.arange(p), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(n_clients=2, p=3, tau=-0.1, sigma=1.0, n_per_client=5), ValueError, "'tau' must be a float"),
        (dict(n_clients=2, p=0, tau=0.1, sigma=1.0, n_per_client=5), ValueError, "'p' must be an int"),
        (dict(n_clients=2, p=3, tau=0.1, sigma=1.0, n_per_client=None), TypeError, "'n_per_client' must be"),
        (dict(n_clients=2, p=3, tau=0.1, sigma=1.0, n_per_client=[1, 2, 3]), ValueError, "length n_clients"),
        (dict(n_clients=2, p=3, tau=0.1, sigma=1.0, n_per_client=5, theta_bar=[1.0]), ValueError,
         "'theta_bar' must have length p = 3"),
    ],
)
def test_hetero_linear_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        make_hetero_linear(random_state=0, **kwargs)


def test_fedprox_max_per_client_caps_sizes():
    free = make_fedprox_synthetic(1.0, 1.0, n_clients=40, n_features=2, random_state=5)
    capped = make_fedprox_synthetic(1.0, 1.0, n_clients=40, n_features=2, max_per_client=120, random_state=5)
    assert_array_equal(np.bincount(capped.client_ids), np.minimum(np.bincount(free.client_ids), 120))
    with pytest.raises(ValueError, match="'max_per_client' must be an int"):
        make_fedprox_synthetic(1.0, 1.0, max_per_client=0)


def test_client_generator_honours_the_spawn_key_of_a_generator():
    """Children of one SeedSequence give different client streams; an int seed equals its root."""
    from algos.federated._potara import client_generator

    a, b = np.random.SeedSequence(5).spawn(2)
    draw = lambda rs: client_generator(rs, client_id=3).random(4)  # noqa: E731
    assert not np.array_equal(draw(np.random.default_rng(a)), draw(np.random.default_rng(b)))
    np.testing.assert_array_equal(draw(np.random.default_rng(np.random.SeedSequence(5))), draw(5))
    np.testing.assert_array_equal(draw(np.random.default_rng(a)), draw(np.random.default_rng(a)))


# ----------------------------------------------------------------- per-client Dirichlet mixtures
def test_digits_clients_each_client_from_its_own_seed():
    """A client's rows depend only on its id and the seed, not on the other clients built with it."""
    many = make_digits_clients([5, 999, 0], n_train=20, n_test=7, random_state=3)
    for pos, c in enumerate([5, 999, 0]):
        one = make_digits_clients(c, n_train=20, n_test=7, random_state=3)
        assert_array_equal(one.X, many.X[20 * pos:20 * (pos + 1)])
        assert_array_equal(one.y, many.y[20 * pos:20 * (pos + 1)])
        assert_array_equal(one.X_test, many.X_test[7 * pos:7 * (pos + 1)])
        assert_array_equal(one.client_ids, np.full(20, c))
    assert not np.array_equal(make_digits_clients(5, random_state=4).X, make_digits_clients(5, random_state=3).X)
    assert many.X.shape == (60, 64) and many.X_test.shape == (21, 64)
    assert np.all(np.isfinite(many.X))


def test_digits_clients_label_skew_follows_alpha_and_pools_are_disjoint():
    small = make_digits_clients(np.arange(100), alpha=0.05, n_train=40, n_test=0)
    large = make_digits_clients(np.arange(100), alpha=100.0, n_train=40, n_test=0)

    def classes_per_client(d):
        return np.mean([np.unique(d.y[d.client_ids == c]).size for c in range(100)])

    assert classes_per_client(small) < 4.0 < 8.0 < classes_per_client(large)
    # train rows come from the training pool, test rows from the test pool: same mixture, no shared image
    _, labels, is_test = _digits_pools(0)
    rows, p = dirichlet_mixture_sample(labels[~is_test], 7, 0.5, 500, random_state=0)
    assert rows.max() < int((~is_test).sum()) and np.isclose(p.sum(), 1.0)
    freq = np.bincount(labels[~is_test][rows], minlength=10) / 500
    assert np.max(np.abs(freq - p)) < N_SE * np.sqrt(0.25 / 500)


def test_dirichlet_mixture_sample_rows_have_the_drawn_labels():
    y = np.array(["a", "b", "c"] * 4)
    rows, p = dirichlet_mixture_sample(y, 0, 1.0, 50, random_state=1)
    again, p2 = dirichlet_mixture_sample(y, 0, 1.0, 50, random_state=1)
    assert_array_equal(rows, again) and assert_allclose(p, p2) is None
    assert rows.dtype == np.int64 and rows.min() >= 0 and rows.max() < y.size


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"clients": -1}, ValueError, "'clients'"),
    ({"clients": [1.5]}, ValueError, "'clients'"),
    ({"clients": 1, "alpha": 0.0}, ValueError, "'alpha'"),
    ({"clients": 1, "n_train": 0}, ValueError, "'n_train'"),
    ({"clients": 1, "shift": 4}, ValueError, "'shift'"),
    ({"clients": 1, "noise": -1.0}, ValueError, "'noise'"),
    ({"clients": 1, "random_state": -2}, ValueError, "'random_state'"),
])
def test_digits_clients_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        make_digits_clients(**kwargs)
