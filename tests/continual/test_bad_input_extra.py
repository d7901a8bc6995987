"""Bad input to continual: a clean ValueError/TypeError naming the argument (regressions of the fuzz ledger)."""

from __future__ import annotations

import numpy as np
import pytest

import theory.continual as T
from algos.continual import (
    BiRC2DFeatures,
    BiReservoir2D,
    FeatureHead,
    OfflineLDA,
    RandomConvFeatures,
    SLDAEnsemble,
    SpectralRadiusWarning,
    StreamingLDA,
    StreamingRidge,
    class_incremental_split,
    evaluate_cil,
    load_image_dataset,
    make_baseline,
    resolve_image_geometry,
    scale_pixels,
)

RNG = np.random.default_rng(0)
X = RNG.uniform(size=(40, 64))
Y = np.arange(40) % 4


def test_labels_nan_inf_complex_rejected_by_the_feature_extractors():
    feats = BiRC2DFeatures(image_shape=(1, 8, 8), units=4, random_state=0, backend="numpy")
    with pytest.raises(ValueError, match="'y'"):
        feats.fit(X, np.where(Y == 1, np.nan, Y))
    with pytest.raises(ValueError, match="'y'"):
        RandomConvFeatures(image_shape=(1, 8, 8), n_filters=4, random_state=0).fit(X, np.where(Y == 1, np.inf, Y))
    with pytest.raises(ValueError, match="'y'"):
        BiReservoir2D(units=4, random_state=0, backend="numpy").fit(RNG.uniform(size=(2, 4, 4, 3)), [0.0, np.nan])
    with pytest.raises(ValueError, match="same length"):
        feats.fit(X, Y[:-1])
    # y stays optional and ignored
    assert feats.fit(X).n_features_out_ == feats.fit(X, Y).n_features_out_


def test_class_incremental_split_labels():
    with pytest.raises(TypeError, match="'y'"):
        class_incremental_split(np.arange(6) + 0.5j, 3)
    with pytest.raises(ValueError, match="'y'"):
        class_incremental_split(np.array([0, 1, 2, 3, 4, np.inf]), 3)
    with pytest.raises(ValueError, match="'y'"):  # one class, three tasks: the rule names the labels
        class_incremental_split(["a"] * 6, 3)
    assert [t.tolist() for t in class_incremental_split(["b", "a", "c"], 3, class_order_seed=None)] == [
        ["a"], ["b"], ["c"]]


def test_classifiers_name_X_and_y():
    for clf in (StreamingLDA(), StreamingRidge(), OfflineLDA(), SLDAEnsemble(group_sizes=[32, 32])):
        with pytest.raises(TypeError, match="'X'"):
            clf.fit(np.full((4, 64), "a"), Y[:4])
        clf.fit(X, Y)
        with pytest.raises(TypeError, match="'X'"):
            clf.predict(np.full((4, 64), "a"))
        with pytest.raises(ValueError, match="'y'"):
            clf.score(X, np.where(Y == 2, np.nan, Y))
        with pytest.raises(ValueError, match="'y'"):
            clf.score(X, np.array(["a"] * len(X)))  # string labels against numeric classes
        assert 0.0 <= clf.score(X, Y) <= 1.0
    # string labels remain valid labels
    assert StreamingLDA().fit(X, np.array(["u", "v"])[Y % 2]).score(X, np.array(["u", "v"])[Y % 2]) > 0.5


def test_parameters():
    with pytest.raises(ValueError, match="'shrinkage'"):
        OfflineLDA(shrinkage="lots").fit(X, Y)
    with pytest.raises(TypeError, match="'group_sizes'"):
        SLDAEnsemble(group_sizes=[32 + 1j, 32]).fit(X, Y)
    with pytest.raises(ValueError, match="'group_sizes'"):
        SLDAEnsemble(group_sizes=[[32], [32]]).fit(X, Y)
    with pytest.raises(ValueError, match="'head_dtype'"):
        SLDAEnsemble(head_dtype=2.5).fit(X, Y)
    with pytest.raises(TypeError, match="'features'"):
        FeatureHead(features="a").fit(X, Y)
    with pytest.raises(TypeError, match="'head'"):
        FeatureHead(head="a").fit(X, Y)
    with pytest.raises(ValueError, match="'alpha'"):
        make_baseline("ridge", (1, 8, 8), alpha=float("inf"))
    with pytest.raises(TypeError, match="'units'"):
        make_baseline("ncm", (1, 8, 8), units=8.5)
    with pytest.raises(TypeError, match="'backend'"):
        make_baseline("ncm", (1, 8, 8), backend=2.5)
    with pytest.raises(TypeError, match="'random_state'"):
        make_baseline("ncm", (1, 8, 8), random_state=0.5)
    with pytest.raises(TypeError, match="'image_shape'"):
        make_baseline("ncm", ("a", 8, 8))


def test_resolve_image_geometry():
    with pytest.raises(TypeError, match="'n_features'"):
        resolve_image_geometry(64.5)
    with pytest.raises(ValueError, match="'pooling'"):
        resolve_image_geometry(64, pooling="max")
    with pytest.raises(ValueError, match="'pool_size'"):
        resolve_image_geometry(64, pool_size=3)
    with pytest.raises(TypeError, match="'image_shape'"):
        resolve_image_geometry(64, image_shape=("a", 8, 8))
    assert resolve_image_geometry(64) == ((1, 8, 8), 2, 2)


def test_evaluate_cil_names_its_arrays():
    tasks = [np.array([0, 1]), np.array([2, 3])]
    for kw, name in ((dict(X_tr=X + 0.5j), "X_tr"), (dict(X_te=X[:0]), "X_te"), (dict(y_te=Y + 0.5j), "y_te"),
                     (dict(y_tr=np.where(Y == 0, np.nan, Y)), "y_tr"), (dict(X_te=np.where(X > 0.9, np.nan, X)),
                                                                       "X_te")):
        args = {**dict(X_tr=X, y_tr=Y, X_te=X, y_te=Y), **kw}
        with pytest.raises((TypeError, ValueError), match=f"'{name}'"):
            evaluate_cil(StreamingLDA, tasks=tasks, **args)
    with pytest.raises(TypeError, match="'tasks'"):
        evaluate_cil(StreamingLDA, X, Y, X, Y, "k")


def test_data_helpers():
    with pytest.raises(TypeError, match="'X'"):
        scale_pixels([[0, 255, 51 + 1j]])
    with pytest.raises(ValueError, match="'X'"):
        scale_pixels([])
    with pytest.raises(ValueError, match="'X'"):
        scale_pixels([[-1e300, 0.0]])
    with pytest.raises(ValueError, match="'name' must be"):
        load_image_dataset("zzz")
    with pytest.raises(TypeError, match="'name'"):
        load_image_dataset(2.5)
    with pytest.raises(TypeError, match="'max_samples'"):
        load_image_dataset("digits", max_samples=100.5)


def test_ridge_overflow_and_theory():
    with pytest.raises(ValueError, match="'X'"):
        StreamingRidge().fit(X * 1e200, Y)
    with pytest.raises(ValueError, match="'sigma'"):
        T.esn_contraction_bound(0.5, 1e200, 2)
    with pytest.warns(SpectralRadiusWarning), pytest.raises(ValueError, match="'spectral_radius'"):
        BiReservoir2D(units=4, spectral_radius=1e200, random_state=0, backend="numpy").fit(input_dim=3)


def test_overflowing_features_and_states_are_named():
    from algos.continual import CIRCLEClassifier

    with pytest.raises(ValueError, match="'X'"):
        StreamingLDA().fit(X * 1e200, Y)
    with pytest.warns(SpectralRadiusWarning), pytest.raises(ValueError, match="'spectral_radius'"):
        CIRCLEClassifier(n_reservoirs=1, n_groups=1, units=4, image_shape=(1, 8, 8), spectral_radius=1e200,
                         random_state=0).fit(X, Y)
    # a model's own error during the stream names the protocol's arrays too
    with pytest.raises(ValueError, match="'X_tr'"):
        evaluate_cil(StreamingLDA, X[..., None, None], Y, X, Y, [np.array([0, 1]), np.array([2, 3])])
