"""The base model of algos.federated: loss_grad against finite differences and scikit-learn, the numba
kernels against the backend core run on numpy (local GD, :func:`accel.federated.local_gd`) and a numpy
twin (Fisher), and the single-client / in-round identity the Flower path relies on."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from accel.backend import get_backend
from accel.federated import local_gd
from algos.federated import (
    LowRankSoftmax,
    fedavg_round,
    init_params,
    local_train,
    loss_grad,
    per_sample_fisher_diag,
    predict_logits,
)
from algos.federated._kernels import local_gd_clients, local_gd_clients_serial
from algos.federated._model import _train_clients
from algos.federated._reference import fisher_reference

# kernel loops vs BLAS matrix products: only summation order differs; over <= 20 GD steps on O(1)
# parameters the drift stays ~1e-14, so 1e-10 leaves ample room without hiding a wrong formula
TWIN_ATOL = 1e-10
# central differences with h = 1e-6 on a smooth O(1) objective: truncation ~h^2, round-off ~1e-16/h
FD_ATOL = 1e-6
# GD on a 0.1-strongly convex problem for 4000 steps converges far below this; sklearn's lbfgs tol 1e-12
SKLEARN_ATOL = 1e-5


def _problem(seed, n=23, d=5, C=3, rank=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.integers(0, C, n)
    p = init_params(d, C, rank=rank, random_state=rng)
    p["W"] = 0.3 * rng.normal(size=(d, C))
    p["b"] = 0.1 * rng.normal(size=C)
    if rank:
        p["B"] = 0.3 * rng.normal(size=(rank, C))
    return X, y, p, rng


@pytest.mark.parametrize("rank", [0, 2])
def test_loss_grad_matches_finite_differences(rank):
    X, y, p, rng = _problem(0, rank=rank)
    center = {k: v + 0.2 * rng.normal(size=v.shape) for k, v in p.items()}
    f = lambda q: loss_grad(q, X, y, n_classes=3, l2=0.05, prox_center=center, mu=0.7)[0]  # noqa: E731
    _, g = loss_grad(p, X, y, n_classes=3, l2=0.05, prox_center=center, mu=0.7)
    h = 1e-6
    for k, v in p.items():
        num = np.zeros_like(v)
        for idx in np.ndindex(v.shape):
            qp = {kk: vv.copy() for kk, vv in p.items()}
            qm = {kk: vv.copy() for kk, vv in p.items()}
            qp[k][idx] += h
            qm[k][idx] -= h
            num[idx] = (f(qp) - f(qm)) / (2 * h)
        assert_allclose(g[k], num, atol=FD_ATOL, err_msg=f"block {k}")


def test_loss_grad_trainable_subset_only():
    X, y, p, _ = _problem(1, rank=2)
    _, g = loss_grad(p, X, y, n_classes=3, trainable=("A", "b"))
    assert sorted(g) == ["A", "b"]


def test_low_rank_softmax_matches_sklearn_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 4))
    y = rng.integers(0, 3, 60)
    l2 = 0.1
    est = LowRankSoftmax(l2=l2, lr=0.5, max_iter=4000).fit(X, y)
    Xa = np.column_stack([X, np.ones(len(y))])  # our bias is penalised like a weight
    ref = LogisticRegression(C=1.0 / (len(y) * l2), fit_intercept=False, tol=1e-12, max_iter=10000).fit(Xa, y)
    W_ref = ref.coef_.T  # (d + 1, C), softmax parametrisation made unique by the penalty
    assert_allclose(est.coef_, W_ref[:-1], atol=SKLEARN_ATOL)
    assert_allclose(est.intercept_, W_ref[-1], atol=SKLEARN_ATOL)
    assert_allclose(est.predict_proba(X), ref.predict_proba(Xa), atol=SKLEARN_ATOL)


@settings(max_examples=12)
@given(seed=st.integers(0, 2**31), rank=st.sampled_from([0, 1, 3]), M=st.integers(1, 5),
       batch=st.sampled_from([None, 3, 7]), mu=st.sampled_from([0.0, 0.5]),
       trainable=st.sampled_from([None, ("W", "b"), ("b", "A", "B"), ("B",)]))
def test_local_gd_kernel_matches_backend_core(seed, rank, M, batch, mu, trainable):
    rng = np.random.default_rng(seed)
    d, C, epochs, lr, l2 = 4, 3, 4, 0.3, 0.01
    sizes = rng.integers(2, 12, M)
    Xs = [rng.normal(size=(n, d)) for n in sizes]
    ys = [rng.integers(0, C, n) for n in sizes]
    starts = []
    for _ in range(M):
        p = init_params(d, C, rank=rank, random_state=rng)
        p["W"] = 0.1 * rng.normal(size=(d, C))
        if rank:
            p["B"] = 0.1 * rng.normal(size=(rank, C))
        starts.append(p)
    keys = tuple(k for k in (trainable or ("W", "b", "A", "B")) if k in starts[0])
    if not keys:
        keys = ("b",)
    centers = [{k: v + 0.1 for k, v in s.items()} for s in starts] if mu else None
    seeds = rng.integers(0, 2**31, M)
    got = _train_clients(starts, Xs, ys, n_classes=C, epochs=epochs, lr=lr, l2=l2, centers=centers, mu=mu,
                         trainable=keys, batch_size=batch, rngs=[np.random.default_rng(s) for s in seeds])
    # the same visiting orders for the backend core run on numpy
    orders = None
    if batch is not None and not all(batch >= n for n in sizes):
        orders = []
        for m in range(M):
            g = np.random.default_rng(seeds[m])
            orders.append(np.stack([g.permutation(sizes[m]) for _ in range(epochs)]))
    want = local_gd(get_backend(backend="numpy"), starts, Xs, ys, n_classes=C, epochs=epochs, lr=lr, l2=l2,
                    trainable=keys, centers=centers, mu=mu, orders=orders, batch_size=batch)
    for m in range(M):
        for k in starts[m]:
            assert_allclose(got[m][k], want[m][k], atol=TWIN_ATOL, err_msg=f"client {m} block {k}")


@settings(max_examples=10)
@given(seed=st.integers(0, 2**31), rank=st.sampled_from([0, 2]), n=st.integers(1, 15))
def test_fisher_kernel_matches_twin(seed, rank, n):
    X, y, p, _ = _problem(seed, n=n, rank=rank)
    got = per_sample_fisher_diag(p, X, y, 3)
    want = fisher_reference(p, X, y, 3)
    assert sorted(got) == sorted(want)
    for k in want:
        assert_allclose(got[k], want[k], atol=1e-13, rtol=1e-12, err_msg=k)


def test_parallel_and_serial_kernels_bit_identical():
    rng = np.random.default_rng(5)
    M, d, C, r = 6, 5, 3, 2
    sizes = rng.integers(3, 9, M)
    N = int(sizes.sum())
    X, y = rng.normal(size=(N, d)), rng.integers(0, C, N)
    off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    args0 = [rng.normal(size=s) * 0.1 for s in [(M, d, C), (M, C), (M, d, r), (M, r, C)]]
    outs = []
    for kern in (local_gd_clients, local_gd_clients_serial):
        a = [v.copy() for v in args0]
        kern(X, y, off, *a, *[np.zeros_like(v) for v in a], np.ones(4, bool), 5, 0.3, 0.01, 0.0,
             np.arange(N)[None, :], N)
        outs.append(a)
    for u, v in zip(*outs):
        assert_array_equal(u, v)


def test_single_client_equals_client_inside_round():
    """What lets a Flower client (one process per client) reproduce the in-process round exactly."""
    rng = np.random.default_rng(7)
    data = [(rng.normal(size=(n, 6)), rng.integers(0, 4, n)) for n in (5, 9, 13, 4, 8)]
    g = init_params(6, 4, rank=2, random_state=0)
    kw = dict(n_classes=4, epochs=3, lr=0.4, l2=1e-3, trainable=("b", "A", "B"))
    new = fedavg_round(g, data, [len(d[1]) for d in data], **kw)
    singles = [local_train(g, X, y, **kw) for X, y in data]
    w = np.array([len(d[1]) for d in data], float)
    w /= w.sum()
    for k in g:
        acc = np.zeros_like(g[k])
        for wi, p in zip(w, singles):
            acc += wi * p[k]
        assert_array_equal(new[k], acc, err_msg=k)


def test_local_train_does_not_modify_input_and_is_deterministic():
    X, y, p, _ = _problem(2, rank=1)
    before = {k: v.copy() for k, v in p.items()}
    a = local_train(p, X, y, n_classes=3, epochs=5, lr=0.2)
    b = local_train(p, X, y, n_classes=3, epochs=5, lr=0.2)
    for k in p:
        assert_array_equal(p[k], before[k])
        assert_array_equal(a[k], b[k])
    c = local_train(p, X, y, n_classes=3, epochs=5, lr=0.2, batch_size=4, random_state=1)
    d = local_train(p, X, y, n_classes=3, epochs=5, lr=0.2, batch_size=4, random_state=1)
    for k in p:
        assert_array_equal(c[k], d[k])


def test_gd_decreases_the_objective():
    X, y, p, _ = _problem(4)
    losses = [loss_grad(p, X, y, n_classes=3)[0]]
    for _ in range(5):
        p = local_train(p, X, y, n_classes=3, epochs=1, lr=0.2)
        losses.append(loss_grad(p, X, y, n_classes=3)[0])
    assert np.all(np.diff(losses) < 0), losses


def test_predict_logits_definition():
    X, _, p, _ = _problem(6, rank=2)
    assert_allclose(predict_logits(p, X), X @ (p["W"] + p["A"] @ p["B"]) + p["b"], atol=1e-14)


@pytest.mark.parametrize("bad, match", [
    ({"W": np.zeros((3, 2))}, "keys"),
    ({"W": np.zeros((3, 2)), "b": np.zeros(3)}, "shape"),
    ({"W": np.zeros((3, 2)), "b": np.zeros(2), "A": np.zeros((3, 1))}, "both adapter"),
    ({"W": np.zeros((3, 2)), "b": np.zeros(2), "A": np.zeros((4, 1)), "B": np.zeros((1, 2))}, "adapter"),
    ({"W": np.full((3, 2), np.nan), "b": np.zeros(2)}, "finite"),
    ({"W": np.zeros((3, 2)), "b": np.zeros(2), "V": np.zeros(2)}, "keys"),
])
def test_bad_params_raise(bad, match):
    with pytest.raises(ValueError, match=match):
        loss_grad(bad, np.zeros((2, 3)), np.array([0, 1]), n_classes=2)


def test_bad_data_raise():
    p = init_params(3, 2)
    with pytest.raises(ValueError, match="features"):
        local_train(p, np.zeros((4, 2)), np.zeros(4, int), n_classes=2, epochs=1, lr=0.1)
    with pytest.raises(ValueError, match=r"class indices in \[0, 2\)"):
        local_train(p, np.zeros((4, 3)), np.array([0, 1, 2, 0]), n_classes=2, epochs=1, lr=0.1)
    with pytest.raises(ValueError, match="at least one row"):
        local_train(p, np.zeros((0, 3)), np.zeros(0, int), n_classes=2, epochs=1, lr=0.1)
    with pytest.raises(ValueError, match="'lr' must be a float"):
        local_train(p, np.zeros((4, 3)), np.zeros(4, int), n_classes=2, epochs=1, lr=0.0)
    with pytest.raises(ValueError, match="n_classes"):
        local_train(p, np.zeros((4, 3)), np.zeros(4, int), n_classes=3, epochs=1, lr=0.1)
    with pytest.raises(ValueError, match="prox_center"):
        local_train(p, np.zeros((4, 3)), np.zeros(4, int), n_classes=2, epochs=1, lr=0.1, mu=1.0,
                    prox_center={"b": np.zeros(2)})
    with pytest.raises(ValueError, match="weights"):
        fedavg_round(p, [(np.zeros((2, 3)), np.array([0, 1]))], [1.0, 2.0], n_classes=2, epochs=1, lr=0.1)
    with pytest.raises(ValueError, match="at least one sample"):
        fedavg_round(p, [(np.zeros((0, 3)), np.zeros(0, int))], [1.0], n_classes=2, epochs=1, lr=0.1)
    with pytest.raises(ValueError, match="trainable"):
        local_train(p, np.zeros((4, 3)), np.zeros(4, int), n_classes=2, epochs=1, lr=0.1, trainable=("A",))


def test_low_rank_softmax_adapter_learns_and_unscaled_features_do_not_diverge():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)  # raw pixels 0..16: the step cap keeps GD stable
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        raw = LowRankSoftmax(lr=50.0, max_iter=50, random_state=0).fit(X, y)
    assert np.all(np.isfinite(raw.coef_)) and raw.lr_ < 50.0
    Xs = (X - X.mean(0)) / np.maximum(X.std(0), 1e-12)
    est = LowRankSoftmax(rank=4, max_iter=300, random_state=0).fit(Xs, y)
    assert est.score(Xs, y) > 0.8
    assert np.linalg.matrix_rank(est.coef_) <= 4
