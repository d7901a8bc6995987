"""Protocol (task splits, accuracy matrix and summaries), CPU baselines and data loaders."""

import gzip

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.signal import correlate2d
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import Ridge

from algos.continual import (
    BASELINES,
    FeatureHead,
    OfflineLDA,
    RandomConvFeatures,
    StreamingLDA,
    StreamingRidge,
    class_incremental_split,
    evaluate_cil,
    load_digits_images,
    load_image_dataset,
    load_mnist_csv,
    load_npz_images,
    make_baseline,
    scale_pixels,
)

RIDGE_ATOL = 1e-9  # two float64 solves of the same well-conditioned normal equations


# ------------------------------------------------------------------ protocol
def test_class_incremental_split_partitions_the_classes():
    y = np.repeat(np.arange(10), 3)
    tasks = class_incremental_split(y, 4)
    assert [len(t) for t in tasks] == [3, 3, 2, 2]
    assert_array_equal(np.sort(np.concatenate(tasks)), np.arange(10))
    again = class_incremental_split(y, 4)
    assert all(np.array_equal(a, b) for a, b in zip(tasks, again))  # fixed seed-0 order
    assert not np.array_equal(np.concatenate(tasks), np.arange(10))  # permuted
    assert [t.tolist() for t in class_incremental_split(y, 10, class_order_seed=None)] == [[k] for k in range(10)]
    first = class_incremental_split(y, 3, first_task_classes=6, class_order_seed=None)
    assert [t.tolist() for t in first] == [[0, 1, 2, 3, 4, 5], [6, 7], [8, 9]]
    with pytest.raises(ValueError, match=r"'n_tasks' must be an int in \[1, 10\]"):
        class_incremental_split(y, 11)
    with pytest.raises(ValueError, match=r"'first_task_classes' must be an int in \[1, 8\]"):
        class_incremental_split(y, 3, first_task_classes=9)
    with pytest.raises(ValueError, match="non-empty"):
        class_incremental_split([], 1)


class _LastTaskOnly(ClassifierMixin, BaseEstimator):
    """A model that forgets everything but its last batch: a scripted, hand-checkable forgetter."""

    def partial_fit(self, X, y):
        self.classes_ = np.unique(y)
        self.means_ = np.array([X[y == k].mean(axis=0) for k in self.classes_])
        return self

    def predict(self, X):
        return self.classes_[((X[:, None] - self.means_[None]) ** 2).sum(-1).argmin(axis=1)]


def test_evaluate_cil_metrics_by_hand():
    """Well-separated classes; the model only knows its last task, so a_{t,j} = 1 if j == t else 0.
    With test counts n = (2, 4, 6): A_step = (1, 4/6, 6/12), A_inc = mean, forgetting = 1."""
    centers = np.array([[0.0, 0.0], [100.0, 0.0], [0.0, 100.0]])
    y_tr = np.repeat([0, 1, 2], 5)
    y_te = np.repeat([0, 1, 2], [2, 4, 6])
    X_tr, X_te = centers[y_tr], centers[y_te] + 0.1
    res = evaluate_cil(_LastTaskOnly, X_tr, y_tr, X_te, y_te, [[0], [1], [2]])
    expected = np.array([[1, np.nan, np.nan], [0, 1, np.nan], [0, 0, 1]])
    assert_array_equal(res["acc_matrix"], expected)
    assert_allclose(res["A_step"], [1.0, 4 / 6, 6 / 12])
    assert res["A_last"] == 0.5
    assert_allclose(res["A_inc"], np.mean([1.0, 4 / 6, 0.5]))
    assert res["forgetting"] == 1.0
    assert res["n_test"] == [2, 4, 6]
    one = evaluate_cil(StreamingLDA(), X_tr, y_tr, X_te, y_te, [[0, 1, 2]])  # an estimator is cloned
    assert one["forgetting"] == 0.0 and one["A_last"] == 1.0


def test_evaluate_cil_bad_input():
    X, y = np.zeros((6, 2)), np.array([0, 0, 1, 1, 2, 2])
    with pytest.raises(ValueError, match="disjoint"):
        evaluate_cil(StreamingLDA, X, y, X, y, [[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="task 1 .* no training sample"):
        evaluate_cil(StreamingLDA, X, y, X, y, [[0], [5]])
    with pytest.raises(ValueError, match="empty"):
        evaluate_cil(StreamingLDA, X, y, X, y, [[0], []])
    with pytest.raises(TypeError, match="model_factory"):
        evaluate_cil(3, X, y, X, y, [[0]])


# ------------------------------------------------------------------ baselines
def test_streaming_ridge_equals_joint_ridge_in_any_order():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 6))
    y = rng.integers(0, 4, 200)
    r = StreamingRidge(alpha=0.7)
    for t in [[2], [0, 3], [1]]:
        m = np.isin(y, t)
        r.partial_fit(X[m], y[m])
    Xa = np.c_[X, np.ones(200)]
    Y = np.eye(4)[y]
    ref = Ridge(alpha=0.7, fit_intercept=False).fit(Xa, Y)
    assert_allclose(r.coef_, ref.coef_.T, atol=RIDGE_ATOL)
    assert_array_equal(r.predict(X), ref.predict(Xa).argmax(axis=1))
    only = StreamingRidge().partial_fit(X[y == 1], y[y == 1], classes=[1, 2])
    assert set(only.predict(X)) == {1}
    with pytest.raises(ValueError, match=r"'alpha' must be a float in \(0, inf\)"):
        StreamingRidge(alpha=0).fit(X, y)


def test_offline_lda_is_sklearn_on_everything_seen():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 4)) + np.repeat(np.eye(3, 4) * 3, 50, axis=0)
    y = np.repeat([0, 1, 2], 50)
    off = OfflineLDA()
    off.partial_fit(X[y == 0], y[y == 0])
    assert_array_equal(off.predict(X), 0)  # one class seen: predict it
    off.partial_fit(X[y > 0], y[y > 0])
    ref = LinearDiscriminantAnalysis(solver="lsqr", shrinkage="auto").fit(X, y)
    assert_array_equal(off.predict(X), ref.predict(X))
    plain = OfflineLDA(shrinkage=None).fit(X, y)
    assert_array_equal(plain.predict(X), LinearDiscriminantAnalysis(solver="lsqr").fit(X, y).predict(X))


def test_offline_lda_stays_informative_when_features_outnumber_samples():
    """d > n: the empirical pooled covariance is singular; the default Ledoit-Wolf shrinkage keeps
    the offline reference far above chance (1/3) on well-separated classes."""
    rng = np.random.default_rng(4)
    d = 200
    means = rng.normal(size=(3, d)) * 0.6
    y = np.repeat([0, 1, 2], 20)
    X = means[y] + rng.normal(size=(60, d))
    yt = np.repeat([0, 1, 2], 100)
    Xt = means[yt] + rng.normal(size=(300, d))
    assert (OfflineLDA().fit(X, y).predict(Xt) == yt).mean() >= 0.9


def test_random_conv_features_match_direct_correlation():
    """Independent reference: scipy.signal.correlate2d per filter, stride, ReLU, 2x2 mean pooling."""
    rng = np.random.default_rng(2)
    X = rng.random((3, 2 * 8 * 8))
    f = RandomConvFeatures(image_shape=(2, 8, 8), n_filters=3, kernel_size=3, stride=2, pool_size=2,
                           random_state=0).fit()
    out = f.transform(X)
    assert out.shape == (3, f.n_features_out_) and f.transform(X[:0]).shape == (0, f.n_features_out_)
    Wf = f.filters_.reshape(2, 3, 3, 3)  # (C, k, k, filters)
    for i in range(3):
        img = X[i].reshape(2, 8, 8)
        maps = []
        for m in range(3):
            z = sum(correlate2d(np.pad(img[c], 1), Wf[c, :, :, m], mode="valid") for c in range(2))[::2, ::2]
            z = np.maximum(z, 0)
            maps.append(z.reshape(2, 2, 2, 2).mean(axis=(1, 3)))
        ref = np.stack(maps, axis=-1).reshape(-1)
        assert_allclose(out[i], ref, atol=1e-12)


def test_feature_head_raw_is_streaming_lda_and_all_baselines_run():
    X, y, shape = load_digits_images()
    Xtr, ytr, Xte = X[:200], y[:200], X[200:300]
    raw = make_baseline("raw_slda", shape).partial_fit(Xtr, ytr)
    assert_array_equal(raw.predict(Xte), StreamingLDA().fit(Xtr, ytr).predict(Xte))
    for name in BASELINES:
        est = make_baseline(name, shape, units=2)
        est.partial_fit(Xtr[ytr < 5], ytr[ytr < 5]).partial_fit(Xtr[ytr >= 5], ytr[ytr >= 5])
        assert set(est.predict(Xte)) <= set(range(10)), name
    with pytest.raises(ValueError, match="'name' must be one of"):
        make_baseline("lwf", shape)


# ------------------------------------------------------------------ data
def test_scale_pixels_ranges_and_errors():
    assert_allclose(scale_pixels([[0, 255]]), [[0.0, 1.0]])
    assert_allclose(scale_pixels([[0, 0.5]]), [[0.0, 0.5]])
    assert_allclose(scale_pixels([[0, 8]], max_value=16), [[0.0, 0.5]])
    with pytest.raises(ValueError, match="must be >= 0"):
        scale_pixels([[-1, 3]])
    with pytest.raises(ValueError, match=r"must lie in \[0, 255\]"):
        scale_pixels([[0, 300]])
    with pytest.raises(ValueError, match="'max_value'"):
        scale_pixels([[0, 1]], max_value=-2)


def test_loaders_on_shared_data(shared_data_dir):
    X, y, shape = load_mnist_csv(shared_data_dir / "images" / "mnist_5k.csv.gz")
    assert X.shape == (5000, 784) and shape == (1, 28, 28) and 0 <= X.min() and X.max() <= 1
    assert_array_equal(np.bincount(y), 500)
    Xc, yc, shape_c = load_npz_images(shared_data_dir / "images" / "cifar100_first10.npz")
    assert Xc.shape == (1834, 3072) and shape_c == (3, 32, 32) and set(np.unique(yc)) == set(range(10))
    raw = np.load(shared_data_dir / "images" / "cifar100_first10.npz")["x"]
    assert_allclose(Xc[5].reshape(3, 32, 32)[1], raw[5][:, :, 1] / 255.0)  # channel-first, scaled


def test_loader_errors_and_dataset_split(tmp_path):
    bad = tmp_path / "bad.csv.gz"
    with gzip.open(bad, "wt") as fh:
        fh.write("1,2,3\n4,5,6\n")
    with pytest.raises(ValueError, match="bad.csv.gz: expected 785 columns"):
        load_mnist_csv(bad)
    npz = tmp_path / "imgs.npz"
    np.savez(npz, x=np.zeros((4, 6, 6), dtype=np.uint8), y=np.arange(4))
    X, y, shape = load_npz_images(npz)
    assert shape == (1, 6, 6) and X.shape == (4, 36)
    np.savez(tmp_path / "nokey.npz", images=np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="missing key 'x'"):
        load_npz_images(tmp_path / "nokey.npz")
    d = load_image_dataset("digits")
    assert len(d["y_tr"]) + len(d["y_te"]) == 1797 and d["image_shape"] == (1, 8, 8)
    with pytest.raises(ValueError, match="'name' must be"):
        load_image_dataset("fashion")
    with pytest.raises(ValueError, match="pixel values"):
        FeatureHead(features=make_baseline("ncm", (1, 8, 8)).features).fit(-np.ones((4, 64)), np.arange(4))
