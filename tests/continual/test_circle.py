"""CIRCLEClassifier and SLDAEnsemble: spec section 2 item 7 (ensemble output, G = 1 and R = G = 1
reductions), split/order invariance end to end, determinism, input geometry, bad input."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone

from algos.continual import (
    BiRC2DFeatures,
    CIRCLEClassifier,
    SLDAEnsemble,
    StreamingLDA,
    load_digits_images,
    resolve_image_geometry,
)

PROBA_ATOL = 1e-12  # spec 2.7: averages of softmax rows sum to 1 up to a few ulps
STATE_ATOL = 1e-9  # spec 2.2: float64 sums in a different order
SMALL = dict(n_reservoirs=2, units=4, random_state=0)  # small extractors keep the tests fast


@pytest.fixture(scope="module")
def digits():
    X, y, shape = load_digits_images()
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(y))[:400]
    return X[idx[:300]], y[idx[:300]], X[idx[300:]], y[idx[300:]]


@pytest.fixture(scope="module")
def fitted(digits):
    X, y, _, _ = digits
    return CIRCLEClassifier(n_groups=2, **SMALL).fit(X, y)


def test_probabilities_are_a_distribution_and_match_predict(fitted, digits):
    _, _, Xt, _ = digits
    P = fitted.predict_proba(Xt)
    assert P.shape == (len(Xt), 10) and np.all(P >= 0)
    assert_allclose(P.sum(axis=1), 1.0, atol=PROBA_ATOL)
    assert_array_equal(fitted.classes_[P.argmax(axis=1)], fitted.predict(Xt))
    assert_allclose(np.exp(fitted.decision_function(Xt)), P, atol=1e-12)


def test_ensemble_is_the_mean_of_head_softmaxes(fitted, digits):
    _, _, Xt, _ = digits
    F = fitted.extract_features(Xt)
    sizes = fitted.ensemble_.group_sizes
    assert F.shape[1] == sum(sizes) and len(fitted.heads_) == 2
    edges = np.cumsum([0] + sizes)
    manual = np.zeros((len(Xt), 10))
    for g, head in enumerate(fitted.heads_):
        s = head.decision_function(F[:, edges[g]:edges[g + 1]])
        e = np.exp(s - s.max(axis=1, keepdims=True))
        manual += e / e.sum(axis=1, keepdims=True) / 2
    assert_allclose(fitted.predict_proba(Xt), manual, atol=1e-12)
    # the features of group g are the concatenation of its extractors
    f0 = fitted.extractors_[fitted.groups_[0][0]].transform(Xt)
    assert_allclose(F[:, :f0.shape[1]], f0, atol=0)


def test_one_group_is_a_single_head_and_one_reservoir_is_slda_alone(digits):
    X, y, Xt, _ = digits
    c1 = CIRCLEClassifier(n_groups=1, **SMALL).fit(X, y)
    head = StreamingLDA().fit(c1.extract_features(X), y)
    assert_allclose(c1.predict_proba(Xt), head.predict_proba(c1.extract_features(Xt)), atol=1e-12)
    c11 = CIRCLEClassifier(n_reservoirs=1, n_groups=1, units=4, random_state=0).fit(X, y)
    phi = c11.extractors_[0]
    assert isinstance(phi, BiRC2DFeatures)
    alone = StreamingLDA().fit(phi.transform(X), y)
    assert_allclose(c11.predict_proba(Xt), alone.predict_proba(phi.transform(Xt)), atol=1e-12)


def test_stream_without_task_boundaries_equals_joint_fit(digits):
    """Exact mode: any order and batching of the stream gives the joint state (spec 2.2), end to end."""
    X, y, Xt, _ = digits
    joint = CIRCLEClassifier(**SMALL).fit(X, y)
    rng = np.random.default_rng(1)
    perm = rng.permutation(len(y))
    stream = CIRCLEClassifier(**SMALL)
    for start in range(0, len(y), 37):
        b = perm[start:start + 37]
        stream.partial_fit(X[b], y[b])
    for hj, hs in zip(joint.heads_, stream.heads_):
        assert_allclose(hs.means_, hj.means_, atol=STATE_ATOL)
        assert_allclose(hs.covariance_, hj.covariance_, atol=STATE_ATOL)
    assert_allclose(stream.predict_proba(Xt), joint.predict_proba(Xt), atol=1e-6)


def test_determinism_and_seeds(digits):
    X, y, Xt, _ = digits
    a = CIRCLEClassifier(**SMALL).fit(X[:100], y[:100]).predict_proba(Xt)
    b = CIRCLEClassifier(**SMALL).fit(X[:100], y[:100]).predict_proba(Xt)
    assert_array_equal(a, b)
    c = CIRCLEClassifier(n_reservoirs=2, units=4, random_state=1).fit(X[:100], y[:100])
    assert not np.allclose(c.predict_proba(Xt), a)
    e0, e1 = c.extractors_[0], c.extractors_[1]
    assert not np.allclose(e0.transform(Xt[:3]), e1.transform(Xt[:3]))  # distinct child seeds


def test_image_input_equals_flat_input(digits):
    X, y, Xt, _ = digits
    flat = CIRCLEClassifier(**SMALL).fit(X, y)
    img = CIRCLEClassifier(**SMALL).fit(X.reshape(-1, 1, 8, 8), y)
    assert img.image_shape_ == flat.image_shape_ == (1, 8, 8)
    assert_allclose(img.predict_proba(Xt.reshape(-1, 1, 8, 8)), flat.predict_proba(Xt), atol=0)
    with pytest.raises(ValueError, match="match image_shape"):
        img.predict(Xt.reshape(-1, 1, 4, 16))


def test_resolve_image_geometry():
    assert resolve_image_geometry(64) == ((1, 8, 8), 2, 2)
    assert resolve_image_geometry(784) == ((1, 28, 28), 2, 2)  # 14 x 14 token grid, pooled to 7 x 7
    assert resolve_image_geometry(3 * 32 * 32) == ((3, 32, 32), 2, 2)
    assert resolve_image_geometry(5) == ((1, 1, 5), 1, 1)
    assert resolve_image_geometry(12, (3, 2, 2), pooling="gap") == ((3, 2, 2), 2, 1)
    with pytest.raises(ValueError, match="needs C\\*H\\*W"):
        resolve_image_geometry(10, (1, 2, 2))


def test_non_image_arrays_are_one_row_sequences():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 5))
    y = (X[:, 0] > 0).astype(int)
    clf = CIRCLEClassifier(n_reservoirs=1, n_groups=1, units=2, pixel_range="none", random_state=0).fit(X, y)
    assert clf.image_shape_ == (1, 1, 5)
    assert clf.score(X, y) > 0.8
    with pytest.raises(ValueError, match="pixel values"):
        CIRCLEClassifier(n_reservoirs=1, n_groups=1, units=2, random_state=0).fit(X, y)  # negatives, "auto"


def test_single_class_empty_batch_and_unseen_labels(digits):
    X, y, Xt, _ = digits
    clf = CIRCLEClassifier(**SMALL).partial_fit(X[:0], y[:0])  # draws the extractors only
    assert len(clf.extractors_) == 2 and clf.classes_.size == 0
    clf.partial_fit(X[y == 3], y[y == 3], classes=[3, 7])
    assert_array_equal(clf.predict(Xt), 3)
    P = clf.predict_proba(Xt)
    assert_allclose(P[:, 0], 1.0) and np.all(P[:, 1] == 0)
    clf.partial_fit(X[y == 7], y[y == 7])
    assert set(clf.predict(Xt)) <= {3, 7}


def test_bad_parameters(digits):
    X, y, _, _ = digits
    with pytest.raises(ValueError, match=r"'n_groups' must be <= 'n_reservoirs' = 2; got 3"):
        CIRCLEClassifier(n_reservoirs=2, n_groups=3).fit(X, y)
    with pytest.raises(ValueError, match="'feature_params' must not contain 'units'"):
        CIRCLEClassifier(feature_params={"units": 3}).fit(X, y)
    with pytest.raises(TypeError, match="'feature_params' must be a dict"):
        CIRCLEClassifier(feature_params=[("n_blocks", 2)]).fit(X, y)
    with pytest.raises(ValueError, match=r"'shrinkage' must be a float in \[0, 1\]"):
        CIRCLEClassifier(shrinkage=2.0).fit(X, y)
    with pytest.raises(ValueError, match="not divisible by 'patch'"):
        CIRCLEClassifier(patch=3, **SMALL).fit(X, y)
    with pytest.raises(ValueError, match="pixel values"):
        CIRCLEClassifier(**SMALL).fit(X * 300, y)


def test_params_roundtrip_and_feature_params():
    est = CIRCLEClassifier(feature_params={"n_blocks": 2, "stem_channels": 8}, random_state=3)
    twin = clone(est)
    assert twin.get_params() == est.get_params()
    X, y, _ = load_digits_images()
    fitted = twin.set_params(n_reservoirs=1, n_groups=1, units=2).fit(X[:50], y[:50])
    f = fitted.extractors_[0]
    assert f.n_blocks == 2 and f.stem_channels == 8 and f.units == 2


def test_slda_ensemble_bad_group_sizes():
    X = np.random.default_rng(0).normal(size=(20, 6))
    y = np.arange(20) % 2
    with pytest.raises(ValueError, match="'group_sizes' must be positive ints summing to n_features = 6"):
        SLDAEnsemble(group_sizes=[2, 3]).fit(X, y)
    ens = SLDAEnsemble(group_sizes=[2, 4]).fit(X, y)
    assert_allclose(ens.predict_proba(X).sum(axis=1), 1.0, atol=PROBA_ATOL)


def test_head_dtype_is_float32_for_large_heads(monkeypatch):
    import warnings

    import algos.continual._circle as circle_mod
    import algos.continual._slda as slda_mod
    from algos.continual import SLDAEnsemble

    LARGE_D = 16  # the real limit (8192) with a small state, so the test stays fast
    monkeypatch.setattr(slda_mod, "LARGE_D", LARGE_D)
    monkeypatch.setattr(circle_mod, "LARGE_D", LARGE_D)
    rng = np.random.default_rng(0)
    y = np.arange(6) % 2
    X = rng.standard_normal((6, LARGE_D + 8))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)  # the float64 state would warn
        big = SLDAEnsemble().fit(X, y)
    assert [h.means_.dtype for h in big.heads_] == [np.dtype(np.float32)]
    # split into two heads under the limit: float64 both
    two = SLDAEnsemble(group_sizes=[LARGE_D // 2 + 4] * 2, head_dtype="auto").fit(X, y)
    assert [h.means_.dtype for h in two.heads_] == [np.dtype(np.float64)] * 2
    assert SLDAEnsemble(head_dtype=np.float32).fit(X[:, :10], y).heads_[0].means_.dtype == np.float32
    with pytest.raises(ValueError, match="'head_dtype' parameter of SLDAEnsemble must be .* Got 'half'"):
        SLDAEnsemble(head_dtype="half").fit(X[:, :10], y)
    with pytest.raises(ValueError, match="'head_dtype' parameter of CIRCLEClassifier must be"):
        CIRCLEClassifier(head_dtype=np.int32, n_reservoirs=1, n_groups=1).partial_fit(np.zeros((0, 64)), [])
    assert CIRCLEClassifier().get_params()["head_dtype"] == "auto"


def test_demo_shrinkage_check_follows_the_theory_function(monkeypatch):
    import theory.continual as tc
    from algos.continual import StreamingLDA
    from algos.continual._demo import shrinkage_check

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((8, 20)), np.arange(8) % 2  # d > n: lambda_min(Sigma) = 0, floor attained
    head = StreamingLDA(shrinkage=0.01).fit(X, y)
    c = shrinkage_check([head])
    assert c.passed and c.kind == "theorem" and c.guarantee == 0.01
    assert c.measured == pytest.approx(0.01, abs=1e-12)  # tight: lambda_min = eps exactly
    orig = tc.shrinkage_eigenvalue_floor
    monkeypatch.setattr(tc, "shrinkage_eigenvalue_floor", lambda *a: 2.0 * orig(*a))
    c2 = shrinkage_check([head])
    assert c2.guarantee == 0.02 and not c2.passed
