"""``merge`` of streaming-LDA states: the merge of fits on the parts equals the fit on the union."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import NotFittedError

from algos.continual import CIRCLEClassifier, SLDAEnsemble, StreamingLDA, load_digits_images

TOL = 1e-10


def _data(seed, n, d, K):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    X = rng.normal(size=(n, d)) + 2.0 * rng.normal(size=(K, d))[y]
    return X, y


def _merge_in_random_tree(states, rng):
    """Merge a list of states pairwise in a random order and grouping (a random binary tree)."""
    states = list(states)
    while len(states) > 1:
        i, j = rng.choice(len(states), 2, replace=False)
        a, b = states[i], states[j]
        merged = copy.deepcopy(a).merge(b)
        states = [s for k, s in enumerate(states) if k not in (i, j)] + [merged]
    return states[0]


def _assert_same_state(m, w, X):
    assert_array_equal(m.classes_, w.classes_)
    assert_array_equal(m.counts_, w.counts_)
    assert m.n_samples_seen_ == w.n_samples_seen_
    assert_allclose(m.means_, w.means_, rtol=0, atol=TOL)
    assert_allclose(m.covariance_, w.covariance_, rtol=0, atol=TOL)
    assert_allclose(m.predict_proba(X), w.predict_proba(X), rtol=0, atol=TOL)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 300), d=st.integers(1, 12), K=st.integers(1, 6),
       k=st.integers(1, 8), mode=st.sampled_from(["exact", "identity"]))
def test_merge_of_parts_equals_fit_on_union_in_any_tree(seed, n, d, K, k, mode):
    X, y = _data(seed, n, d, K)
    rng = np.random.default_rng(seed + 1)
    part = rng.integers(0, k, n)  # k random parts (some may be empty or miss classes)
    states = []
    for p in range(k):
        est = StreamingLDA(covariance=mode)
        if (part == p).any():
            est.fit(X[part == p], y[part == p])
        states.append(est)  # an unfitted part adds nothing
    note(f"part sizes {np.bincount(part, minlength=k).tolist()}")
    merged = _merge_in_random_tree(states, rng)
    _assert_same_state(merged, StreamingLDA(covariance=mode).fit(X, y), X)


def test_merge_unions_disjoint_class_lists_and_leaves_other_unchanged():
    X, y = _data(0, 400, 5, 6)
    a = StreamingLDA().fit(X[y < 3], y[y < 3])
    b = StreamingLDA().fit(X[y >= 2], y[y >= 2])
    b_before = copy.deepcopy(b)
    out = a.merge(b)
    assert out is a
    w = StreamingLDA().fit(np.r_[X[y < 3], X[y >= 2]], np.r_[y[y < 3], y[y >= 2]])
    _assert_same_state(a, w, X)
    _assert_same_state(b, b_before, X)


def test_merge_with_unfitted_is_identity_and_into_unfitted_copies():
    X, y = _data(1, 100, 4, 3)
    w = StreamingLDA().fit(X, y)
    a = copy.deepcopy(w).merge(StreamingLDA())
    _assert_same_state(a, w, X)
    c = StreamingLDA().merge(w)
    _assert_same_state(c, w, X)
    c.means_[0, 0] += 1.0  # a copy, not a view of w's state
    assert c.means_[0, 0] != w.means_[0, 0]
    with pytest.raises(NotFittedError):
        StreamingLDA().merge(StreamingLDA()).predict(X)


def test_merge_registered_but_unseen_classes_and_float32():
    X, y = _data(2, 200, 3, 3)
    a = StreamingLDA(dtype=np.float32).partial_fit(X[:100], y[:100], classes=[0, 1, 2, 7])
    b = StreamingLDA(dtype=np.float32).partial_fit(X[100:], y[100:])
    a.merge(b)
    w = StreamingLDA(dtype=np.float32).partial_fit(X, y, classes=[0, 1, 2, 7])
    assert_array_equal(a.classes_, w.classes_)
    assert_array_equal(a.counts_, w.counts_)
    assert a.means_.dtype == np.float32
    assert_allclose(a.covariance_, w.covariance_, rtol=0, atol=1e-5)


@pytest.mark.parametrize("mode", ["hayes", "fixed"])
def test_order_dependent_modes_refuse_to_merge(mode):
    X, y = _data(3, 100, 3, 2)
    a = StreamingLDA(covariance=mode).fit(X[:50], y[:50])
    b = StreamingLDA(covariance=mode).fit(X[50:], y[50:])
    with pytest.raises(ValueError, match=rf"'covariance' = '{mode}' cannot be merged.*order.*covariance='exact'"):
        a.merge(b)
    exact = StreamingLDA().fit(X, y)
    with pytest.raises(ValueError, match="order of the samples"):
        exact.merge(b)


@pytest.mark.parametrize("param, value", [("shrinkage", 0.1), ("temperature", 2.0), ("dtype", np.float32),
                                          ("covariance", "identity")])
def test_merge_refuses_differing_parameters(param, value):
    X, y = _data(4, 80, 3, 2)
    a = StreamingLDA().fit(X, y)
    b = StreamingLDA(**{param: value}).fit(X, y)
    with pytest.raises(ValueError, match=rf"'{param}' differs between the states to merge"):
        a.merge(b)


def test_merge_refuses_other_feature_count_type_and_fit_base():
    X, y = _data(5, 80, 3, 2)
    a = StreamingLDA().fit(X, y)
    with pytest.raises(ValueError, match="n_features_in_ = 2"):
        a.merge(StreamingLDA().fit(X[:, :2], y))
    with pytest.raises(TypeError, match="'other' must be a StreamingLDA; got SLDAEnsemble"):
        a.merge(SLDAEnsemble())
    with pytest.raises(ValueError, match="'other' was initialised by fit_base"):
        a.merge(StreamingLDA().fit_base(X, y))


def test_ensemble_merge_equals_fit_on_union():
    X, y = _data(6, 300, 7, 4)
    kw = dict(group_sizes=[3, 4])
    a = SLDAEnsemble(**kw).fit(X[:120], y[:120])
    b = SLDAEnsemble(**kw).fit(X[120:], y[120:])
    w = SLDAEnsemble(**kw).fit(X, y)
    m = SLDAEnsemble(**kw).merge(b).merge(a)
    assert_allclose(m.predict_proba(X), w.predict_proba(X), rtol=0, atol=TOL)
    for hm, hw, cols in zip(m.heads_, w.heads_, (slice(0, 3), slice(3, 7))):
        _assert_same_state(hm, hw, X[:, cols])
    with pytest.raises(ValueError, match="'group_sizes' differs"):
        SLDAEnsemble(group_sizes=[4, 3]).fit(X, y).merge(a)
    with pytest.raises(ValueError, match="'covariance' = 'hayes' cannot be merged"):
        SLDAEnsemble(covariance="hayes").fit(X, y).merge(SLDAEnsemble(covariance="hayes").fit(X, y))


def test_circle_merge_equals_fit_on_union():
    X, y, _ = load_digits_images()
    X, y = X[:600], y[:600]
    kw = dict(n_reservoirs=2, n_groups=2, random_state=0)
    w = CIRCLEClassifier(**kw).fit(X, y)
    a = CIRCLEClassifier(**kw).fit(X[y < 5], y[y < 5])
    b = CIRCLEClassifier(**kw).fit(X[y >= 5], y[y >= 5])
    m = CIRCLEClassifier(**kw).merge(b).merge(a)
    assert_array_equal(m.classes_, w.classes_)
    assert_allclose(m.predict_proba(X), w.predict_proba(X), rtol=0, atol=TOL)
    for hm, hw in zip(m.heads_, w.heads_):
        assert_allclose(hm.covariance_, hw.covariance_, rtol=0, atol=TOL)
    with pytest.raises(ValueError, match="the extractors differ"):
        a.merge(CIRCLEClassifier(n_reservoirs=2, n_groups=2, random_state=1).fit(X[:50], y[:50]))
    with pytest.raises(ValueError, match="'units' differs"):
        a.merge(CIRCLEClassifier(n_reservoirs=2, n_groups=2, units=4, random_state=0).fit(X[:50], y[:50]))
