"""StreamingLDA: spec section 2 items 1-7 (means, exact/pooled covariance, Hayes parity, sklearn LDA,
posterior identity, shrinkage floor, probabilities), split invariance, modes, bad input."""

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.stats import multivariate_normal
from sklearn.covariance import OAS
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.exceptions import NotFittedError

from accel.backend import get_backend
from accel.continual import _delta_pass
from algos.continual import StreamingLDA, class_incremental_split, evaluate_cil, load_digits_images
from algos.continual._slda_kernels import delta_pass
from theory.continual import shrinkage_eigenvalue_floor

MEAN_RTOL = 1e-10  # spec 2.1: running means are sums of O(n) float64 terms, round-off ~1e-14
STATE_ATOL = 1e-9  # spec 2.2: two float64 summation orders of O(n) outer products of O(1) data
HAYES_ATOL = 1e-10  # spec 2.3: same outer products in a different association order
LDA_ATOL = 1e-8  # spec 8.1: two float64 solves of a well-conditioned 6x6 system (prototype: 3e-15)
#: shrinkage LDA vs sklearn: the same two float64 solves of a well-conditioned 6x6 system (relative)
SHRINK_LDA_ATOL = 1e-12
POSTERIOR_ATOL = 1e-8  # spec 2.5: differences of log-densities of size ~10, float64
PROBA_ATOL = 1e-12  # spec 2.7: a softmax row sums to 1 up to a few ulps


def _data(seed, n, d, K, shift=1.0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    X = rng.normal(size=(n, d)) + shift * rng.normal(size=(K, d))[y]
    return X, y


def _stream(model, X, y, sizes):
    start = 0
    for s in sizes:
        model.partial_fit(X[start:start + s], y[start:start + s])
        start += s
    if start < len(y):
        model.partial_fit(X[start:], y[start:])
    return model


def _pooled(X, y):
    S = np.zeros((X.shape[1], X.shape[1]))
    for k in np.unique(y):
        R = X[y == k] - X[y == k].mean(axis=0)
        S += R.T @ R
    return S / len(y)


def _hayes_loop(X, y, K):
    """The per-sample rule of spec section 1.4, written as in the Deep SLDA reference code."""
    d = X.shape[1]
    mu, c, sigma, n = np.zeros((K, d)), np.zeros(K), np.zeros((d, d)), 0
    deltas = []
    for x, k in zip(X, y):
        delta = x - mu[k]
        deltas.append(delta)
        sigma = (n * sigma + (n / (n + 1)) * np.outer(delta, delta)) / (n + 1)
        mu[k] = mu[k] + delta / (c[k] + 1)
        c[k] += 1
        n += 1
    return mu, c, sigma, np.array(deltas)


batch_sizes = st.lists(st.integers(1, 60), min_size=1, max_size=8)


@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 20), K=st.integers(1, 6), n=st.integers(1, 300),
       sizes=batch_sizes, mode=st.sampled_from(["exact", "hayes", "identity", "fixed"]))
def test_running_means_are_exact(seed, d, K, n, sizes, mode):
    X, y = _data(seed, n, d, K)
    m = _stream(StreamingLDA(covariance=mode), X, y, sizes)
    for i, k in enumerate(m.classes_):
        assert_allclose(m.means_[i], X[y == k].mean(axis=0), rtol=MEAN_RTOL, atol=1e-12)
        assert m.counts_[i] == np.sum(y == k)
    assert m.n_samples_seen_ == n


@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 12), K=st.integers(1, 6), n=st.integers(2, 300),
       sizes1=batch_sizes, sizes2=batch_sizes)
def test_exact_covariance_is_pooled_and_order_free(seed, d, K, n, sizes1, sizes2):
    X, y = _data(seed, n, d, K)
    perm = np.random.default_rng(seed + 1).permutation(n)
    a = _stream(StreamingLDA(), X, y, sizes1)
    b = _stream(StreamingLDA(), X[perm], y[perm], sizes2)
    pooled = _pooled(X, y)
    note(f"max |cov - pooled| = {np.abs(a.covariance_ - pooled).max():.3g}")
    assert_allclose(a.covariance_, pooled, atol=STATE_ATOL, rtol=0)
    assert_allclose(b.covariance_, a.covariance_, atol=STATE_ATOL, rtol=0)
    assert_allclose(b.means_, a.means_, atol=STATE_ATOL, rtol=0)
    assert_array_equal(b.counts_, a.counts_)


@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 10), K=st.integers(1, 5), n=st.integers(1, 200),
       sizes=batch_sizes)
def test_hayes_matches_reference_loop_and_closed_form(seed, d, K, n, sizes):
    X, y = _data(seed, n, d, K)
    m = _stream(StreamingLDA(covariance="hayes"), X, y, sizes)
    mu, c, sigma, deltas = _hayes_loop(X, y, K)
    idx = np.searchsorted(np.arange(K), m.classes_)
    assert_allclose(m.covariance_, sigma, atol=HAYES_ATOL, rtol=0)
    assert_allclose(m.means_, mu[idx], atol=HAYES_ATOL, rtol=0)
    # closed form: n Sigma_n = sum_t t/(t+1) delta_t delta_t^T
    t = np.arange(n)
    closed = (deltas * (t / (t + 1))[:, None]).T @ deltas
    assert_allclose(n * m.covariance_, closed, atol=HAYES_ATOL * n, rtol=0)


def test_hayes_depends_on_order_exact_does_not():
    """Documented difference (spec 7): the first sample of a class enters Hayes' Sigma as x x^T."""
    X, y = _data(3, 200, 4, 4, shift=3.0)
    order = np.argsort(y, kind="stable")  # classes one after the other
    h1 = StreamingLDA(covariance="hayes").fit(X, y)
    h2 = StreamingLDA(covariance="hayes").partial_fit(X[order], y[order])
    assert np.abs(h1.covariance_ - h2.covariance_).max() > 1e-3
    e1 = StreamingLDA().fit(X, y)
    e2 = StreamingLDA().partial_fit(X[order], y[order])
    assert_allclose(e1.covariance_, e2.covariance_, atol=STATE_ATOL)
    # the Hayes covariance is inflated relative to the pooled one (spec 1.4)
    assert np.trace(h1.covariance_) > np.trace(e1.covariance_)


@pytest.mark.parametrize("rule", [0, 1])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_delta_pass_kernel_matches_twin(rule, dtype):
    X, y = _data(5, 57, 7, 4)
    X = X.astype(dtype)
    rng = np.random.default_rng(1)
    means0 = rng.normal(size=(5, 7)).astype(dtype)
    counts0 = rng.integers(0, 4, 5).astype(np.int64)
    mr, cr, nr, Dr, wr = _delta_pass(get_backend(backend="numpy"), X, y, means0, counts0, 11, rule)
    means, counts = means0.copy(), counts0.copy()
    D, w = np.empty_like(X), np.empty(len(X), dtype=dtype)
    n = delta_pass(X, y.astype(np.int64), means, counts, 11, rule, D, w)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    assert n == nr == 11 + len(X)
    assert_array_equal(counts, cr)
    assert_allclose(means, mr, atol=tol)
    assert_allclose(D, Dr, atol=tol)
    assert_allclose(w, wr, atol=tol)


@pytest.mark.parametrize("balanced", [True, False])
def test_equivalence_with_sklearn_lda(balanced):
    """Spec 2.4 / 8.1. With shrinkage 0 and exact mode, sklearn's lsqr LDA with its default priors
    (class frequencies pi_k) uses the covariance sum_k pi_k Sigma_k = our pooled Sigma, so
    coef_[k] = Lambda mu_k and intercept_[k] = -b_k + log pi_k (our scores assume equal priors)."""
    rng = np.random.default_rng(0)
    K, d = 4, 6
    sizes = [100] * K if balanced else [40, 160, 70, 130]
    y = np.repeat(np.arange(K), sizes)
    X = rng.normal(size=(len(y), d)) @ rng.normal(size=(d, d)) + 2 * rng.normal(size=(K, d))[y]
    perm = rng.permutation(len(y))
    X, y = X[perm], y[perm]
    ours = _stream(StreamingLDA(shrinkage=0.0), X, y, [17, 50, 3, 120])
    lda = LinearDiscriminantAnalysis(solver="lsqr").fit(X, y)
    W, b, _ = ours._weights()
    pi = ours.counts_ / ours.n_samples_seen_
    assert_allclose(W.T, lda.coef_, atol=LDA_ATOL, rtol=0)
    assert_allclose(-b + np.log(pi), lda.intercept_, atol=LDA_ATOL, rtol=0)
    assert_allclose(ours.decision_function(X) + np.log(pi), lda.decision_function(X), atol=1e-7)
    if balanced:  # equal priors: the same decisions
        assert_array_equal(ours.predict(X), lda.predict(X))


@pytest.mark.parametrize("alpha", [0.01, 0.3, 0.9])
@pytest.mark.parametrize("balanced", [True, False])
def test_equivalence_with_sklearn_shrinkage_lda(balanced, alpha):
    """Exact mode with shrinkage > 0 against sklearn's lsqr LDA with ``shrinkage=alpha``. sklearn shrinks
    each class covariance to (1 - alpha) S_k + alpha (tr S_k / d) I and averages them with the priors,
    giving (1 - alpha) Sigma + alpha m I with m = tr(Sigma) / d. Ours is (1 - eps) Sigma + eps I; the
    two are proportional, (1 - alpha) Sigma + alpha m I = c ((1 - eps) Sigma + eps I), exactly when
    eps = alpha m / (1 - alpha + alpha m), with c = (1 - alpha) / (1 - eps). So coef_ = W / c and
    intercept_ = -b / c + log pi (the same ulp-level solves: 1e-12)."""
    rng = np.random.default_rng(1)
    K, d = 4, 6
    sizes = [100] * K if balanced else [40, 160, 70, 130]
    y = np.repeat(np.arange(K), sizes)
    X = rng.normal(size=(len(y), d)) @ rng.normal(size=(d, d)) + 2 * rng.normal(size=(K, d))[y]
    perm = rng.permutation(len(y))
    X, y = X[perm], y[perm]
    plain = _stream(StreamingLDA(shrinkage=0.0), X, y, [len(y)])
    m = float(np.trace(plain.covariance_)) / d
    eps = alpha * m / (1 - alpha + alpha * m)
    ours = _stream(StreamingLDA(shrinkage=eps), X, y, [17, 50, 3, 120, len(y)])
    lda = LinearDiscriminantAnalysis(solver="lsqr", shrinkage=alpha).fit(X, y)
    c = (1 - alpha) / (1 - eps)
    W, b, _ = ours._weights()
    pi = ours.counts_ / ours.n_samples_seen_
    scale = max(1.0, float(np.abs(lda.coef_).max()), float(np.abs(lda.intercept_).max()))
    assert_allclose(W.T / c, lda.coef_, atol=SHRINK_LDA_ATOL * scale, rtol=0)
    assert_allclose(-b / c + np.log(pi), lda.intercept_, atol=SHRINK_LDA_ATOL * scale, rtol=0)
    # a wrong mapping (eps = alpha) is far off: the test is not blind to it
    wrong = _stream(StreamingLDA(shrinkage=alpha), X, y, [len(y)])._weights()[0]
    assert np.abs(wrong.T / c - lda.coef_).max() > 1e3 * SHRINK_LDA_ATOL * scale or abs(m - 1) < 1e-3
    if balanced:
        assert_array_equal(ours.predict(X), lda.predict(X))


@pytest.mark.parametrize("eps", [0.0, 1e-4, 0.3])
def test_posterior_identity(eps):
    """Spec 2.5: s_k - s_j = log N(x; mu_k, S) - log N(x; mu_j, S), S = (1-eps) Sigma + eps I."""
    X, y = _data(7, 300, 5, 3, shift=2.0)
    m = StreamingLDA(shrinkage=eps).fit(X, y)
    S = (1 - eps) * m.covariance_ + eps * np.eye(5)
    s = m.decision_function(X[:20])
    logpdf = np.column_stack([multivariate_normal(mu, S).logpdf(X[:20]) for mu in m.means_])
    assert_allclose(s - s[:, :1], logpdf - logpdf[:, :1], atol=POSTERIOR_ATOL)
    # and softmax(s) is the equal-prior Gaussian posterior
    post = np.exp(logpdf - logpdf.max(axis=1, keepdims=True))
    assert_allclose(m.predict_proba(X[:20]), post / post.sum(axis=1, keepdims=True), atol=1e-10)


@settings(max_examples=15)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(5, 40), n=st.integers(1, 4),
       eps=st.floats(1e-6, 1.0), mode=st.sampled_from(["exact", "hayes", "fixed"]))
def test_shrinkage_floor_when_d_exceeds_n(seed, d, n, eps, mode):
    """Spec 2.6: lambda_min((1-eps) Sigma + eps I) >= eps (theory.continual), all outputs finite."""
    X, y = _data(seed, n, d, 2)
    m = StreamingLDA(shrinkage=eps, covariance=mode).fit(X, y)
    lam = np.linalg.eigvalsh((1 - eps) * m.covariance_ + eps * np.eye(d)).min()
    floor = shrinkage_eigenvalue_floor(eps)
    note(f"lambda_min={lam:.3g} floor={floor:.3g}")
    assert lam >= floor * (1 - 1e-9) - 1e-12  # eigvalsh round-off ~ d * ulp * ||Sigma||
    P = m.predict_proba(X)
    assert np.all(np.isfinite(m.decision_function(X))) and np.all(np.isfinite(P))


@given(seed=st.integers(0, 2**32 - 1), K=st.integers(1, 6), tau=st.sampled_from([1e-3, 0.1, 1.0, 50.0]),
       mode=st.sampled_from(["exact", "hayes", "identity"]))
def test_probabilities_are_a_distribution(seed, K, tau, mode):
    X, y = _data(seed, 120, 6, K, shift=5.0)
    m = StreamingLDA(temperature=tau, covariance=mode).fit(X, y)
    P = m.predict_proba(X * 10)  # a large score range: the softmax must subtract the max
    assert np.all(P >= 0)
    assert_allclose(P.sum(axis=1), 1.0, atol=PROBA_ATOL)
    assert_array_equal(m.classes_[P.argmax(axis=1)], m.predict(X * 10))


def test_identity_mode_is_nearest_class_mean():
    X, y = _data(11, 300, 5, 4)
    m = StreamingLDA(covariance="identity").fit(X, y)
    dist = ((X[:, None, :] - m.means_[None]) ** 2).sum(-1)
    assert_array_equal(m.predict(X), m.classes_[dist.argmin(axis=1)])
    assert_array_equal(m.covariance_, np.eye(5))


def test_fixed_mode_freezes_first_batch_and_fit_base_is_oas():
    X, y = _data(12, 400, 5, 3)
    m = StreamingLDA(covariance="fixed").partial_fit(X[:100], y[:100]).partial_fit(X[100:], y[100:])
    assert_allclose(m.covariance_, _pooled(X[:100], y[:100]), atol=1e-12)
    assert_allclose(m.means_[0], X[y == 0].mean(axis=0), rtol=MEAN_RTOL)
    base = StreamingLDA(covariance="fixed").fit_base(X[:100], y[:100])
    mu = np.array([X[:100][y[:100] == k].mean(axis=0) for k in base.classes_])
    oas = OAS(assume_centered=True).fit(X[:100] - mu[np.searchsorted(base.classes_, y[:100])]).covariance_
    assert_allclose(base.covariance_, oas, atol=1e-12)
    base.partial_fit(X[100:], y[100:])
    assert_allclose(base.covariance_, oas, atol=1e-12)
    # exact mode continues from the OAS state: S = n * OAS + later pooled scatter
    ex = StreamingLDA().fit_base(X[:100], y[:100]).partial_fit(X[100:200], y[100:200])
    assert ex.n_samples_seen_ == 200 and np.all(np.isfinite(ex.covariance_))


def test_split_invariance_of_a_last_on_digits():
    """Spec 8.2 on raw digits pixels: exact mode gives the same final state, so A_last is identical
    for T = 1, 5, 10, with shuffled within-task order; A_step^1 = 1 when T = 10 (one class)."""
    X, y, _ = load_digits_images()
    rng = np.random.default_rng(0)
    test = rng.random(len(y)) < 0.3
    results = {}
    for T in (1, 5, 10):
        tasks = class_incremental_split(y[~test], T)
        results[T] = evaluate_cil(lambda: StreamingLDA(), X[~test], y[~test], X[test], y[test], tasks,
                                  batch_size=64, random_state=T, return_model=True)
    ref = results[1]["model"]
    for T in (5, 10):
        assert abs(results[T]["A_last"] - results[1]["A_last"]) <= 1e-9
        assert_allclose(results[T]["model"].covariance_, ref.covariance_, atol=STATE_ATOL)
    assert results[10]["A_step"][0] == 1.0
    assert results[1]["A_last"] > 0.9


def test_float32_state_close_to_float64():
    X, y = _data(13, 500, 8, 4)
    a = StreamingLDA(dtype=np.float64).fit(X, y)
    b = _stream(StreamingLDA(dtype=np.float32), X, y, [100, 100])
    assert b.means_.dtype == np.float32 and b.covariance_.dtype == np.float32
    assert_allclose(b.covariance_, a.covariance_, atol=1e-5)
    assert np.mean(a.predict(X) == b.predict(X)) > 0.99


# ------------------------------------------------------------------ labels and bad input
def test_growing_classes_unseen_never_predicted_and_strings():
    X, y = _data(14, 200, 4, 3)
    labels = np.array(["cat", "dog", "emu"])[y]
    m = StreamingLDA().partial_fit(X[y == 1], labels[y == 1], classes=["ant", "dog"])
    assert m.classes_.tolist() == ["ant", "dog"]
    assert set(m.predict(X)) == {"dog"}
    P = m.predict_proba(X)
    assert_allclose(P[:, 1], 1.0) and np.all(P[:, 0] == 0)
    assert np.all(np.isposinf(m.decision_function(X)))  # binary convention: s_dog - s_ant, ant unseen
    m.partial_fit(X[y != 1], labels[y != 1])
    assert m.classes_.tolist() == ["ant", "cat", "dog", "emu"]
    assert "ant" not in set(m.predict(X))
    assert_allclose(m.means_[1], X[y == 0].mean(axis=0), rtol=MEAN_RTOL)
    # a test label outside classes_ simply counts as an error in score
    assert m.score(X[:5], np.array(["zebra"] * 5)) == 0.0


def test_single_class_predicts_it_with_probability_one():
    X, y = _data(15, 30, 3, 1)
    m = StreamingLDA().fit(X, y)
    assert_array_equal(m.predict(X), y)
    assert_allclose(m.predict_proba(X), 1.0)


def test_empty_batch_is_a_no_op():
    X, y = _data(16, 50, 3, 2)
    m = StreamingLDA().partial_fit(X, y)
    before = (m.means_.copy(), m.covariance_.copy(), m.n_samples_seen_)
    m.partial_fit(np.zeros((0, 3)), np.zeros(0))
    assert_array_equal(m.means_, before[0]) and m.n_samples_seen_ == before[2]
    empty = StreamingLDA().partial_fit(np.zeros((0, 3)), np.zeros(0))
    with pytest.raises(NotFittedError, match="seen no samples"):
        empty.predict(X)


@pytest.mark.parametrize("eps", [-0.1, 1.5, np.nan])
def test_shrinkage_outside_unit_interval_raises(eps):
    X, y = _data(17, 20, 3, 2)
    with pytest.raises(ValueError, match=r"'shrinkage' must be a float in \[0, 1\]"):
        StreamingLDA(shrinkage=eps).fit(X, y)


def test_bad_parameters_and_inputs():
    X, y = _data(18, 40, 3, 2)
    with pytest.raises(ValueError, match="'covariance' must be one of"):
        StreamingLDA(covariance="full").fit(X, y)
    with pytest.raises(ValueError, match=r"'temperature' must be a float in \(0, inf\)"):
        StreamingLDA(temperature=0.0).fit(X, y)
    with pytest.raises(ValueError, match="'dtype' parameter of StreamingLDA must be"):
        StreamingLDA(dtype=np.int32).fit(X, y)
    with pytest.raises(NotFittedError):
        StreamingLDA().predict(X)
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        StreamingLDA().fit(Xn, y)
    with pytest.raises(ValueError, match="Unknown label type"):
        StreamingLDA().fit(X, np.linspace(0, 1, 40))
    m = StreamingLDA().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        m.partial_fit(X[:, :2], y)
    with pytest.raises(ValueError, match="features"):
        m.predict(X[:, :2])
    # shrinkage 0 is plain LDA: a singular covariance is reported, not silently inverted
    m0 = StreamingLDA(shrinkage=0.0).fit(np.c_[X, X[:, 0]], y)
    with pytest.raises(ValueError, match="singular"):
        m0.predict(np.c_[X, X[:, 0]])


def test_large_float64_state_warns(monkeypatch):
    import algos.continual._slda as slda_module

    monkeypatch.setattr(slda_module, "LARGE_D", 10)
    X, y = _data(19, 30, 11, 2)
    with pytest.warns(ResourceWarning, match="float64 covariance"):
        StreamingLDA().fit(X, y)
    import warnings

    with warnings.catch_warnings():  # float32 state: no warning
        warnings.simplefilter("error", ResourceWarning)
        StreamingLDA(dtype=np.float32).fit(X, y)
