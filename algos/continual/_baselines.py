r"""CPU baselines for class-incremental learning with the same feature pipeline as CIRCLE.

The continual reconstruction notes, section 3, "implementable CPU baselines":

(a) streaming LDA on raw pixels; (b) NCM (streaming LDA with :math:`\Sigma = I`) on the same
features; (c) streaming ridge / analytic learning (:class:`StreamingRidge`); (d) BiRC2D with global
average pooling and an SLDA head (CIRCLE without spatial concatenation); (e) a fixed random
convolution + ReLU + pooling (:class:`RandomConvFeatures`) with an SLDA head; (f) offline LDA on all
the data seen so far (:class:`OfflineLDA`, an upper bound that stores every sample).

:class:`FeatureHead` chains a data-free transformer and a streaming head; :func:`make_baseline`
builds each baseline by name.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, clone
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import (
    RANDOM_STATE_CONSTRAINTS,
    OrderedStrOptions,
    check_option,
    check_random_state,
    check_scalar_float,
    check_scalar_int,
    spawn_generators,
    validate_params,
)
from ._checks import LabelScoreMixin, PredictMixin, ScoreArgmaxMixin, StreamFitMixin, check_labels, check_numeric
from ._slda import StreamingLDA, _Cache

__all__ = ["StreamingRidge", "OfflineLDA", "RandomConvFeatures", "FeatureHead", "make_baseline", "BASELINES"]


class _GrowingLabels:
    """Mixin: a sorted, growing ``classes_`` and a row index per label."""

    def _grow(self, y, classes=None):
        labels = np.unique(np.asarray(y)) if classes is None else np.unique(np.r_[np.asarray(classes), np.asarray(y)])
        old = getattr(self, "classes_", None)
        new = labels if old is None or old.size == 0 else np.union1d(old, labels)
        pos = None if old is None else np.searchsorted(new, old)
        self.classes_ = new
        return pos


class StreamingRidge(_GrowingLabels, StreamFitMixin, ScoreArgmaxMixin, LabelScoreMixin, ClassifierMixin, BaseEstimator):
    r"""Streaming ridge regression on one-hot targets (analytic class-incremental learning).

    Accumulates :math:`A = \sum F^\top F` and :math:`B = \sum F^\top Y` (one column per class; the
    columns grow with the classes) and predicts with :math:`W = (A + \alpha I)^{-1} B`: exactly the
    joint ridge solution on everything seen, whatever the order or task split (ACIL, Zhuang et al.,
    NeurIPS 2022). The argmax is taken over the seen classes.

    Parameters
    ----------
    alpha : float > 0, default=1.0
    fit_intercept : bool, default=True
        Append a constant feature (penalised like the others).

    Attributes
    ----------
    classes_, gram_ (d, d), cross_ (d, K), counts_ (K,), coef_ (d, K), n_features_in_
    """

    _parameter_constraints: dict = {
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "fit_intercept": ["boolean"],
    }

    def __init__(self, *, alpha=1.0, fit_intercept=True):
        self.alpha = alpha
        self.fit_intercept = fit_intercept

    def _aug(self, X):
        return np.hstack([X, np.ones((len(X), 1))]) if self.fit_intercept else X

    _fit_resets = ("classes_", "gram_", "n_features_in_")

    def _partial_fit(self, X, y, classes, allow_empty):
        first = not hasattr(self, "gram_")
        check_numeric(X, "X")
        check_labels(y, "y")
        X, y = validate_data(self, X, y, reset=first, dtype=np.float64, ensure_min_samples=0 if allow_empty else 1)
        if len(y):
            check_classification_targets(y)
        F = self._aug(X)
        with np.errstate(over="ignore", invalid="ignore"):
            gram = F.T @ F
        if not np.all(np.isfinite(gram)):
            raise ValueError(f"'X' is too large for the Gram matrix X^T X in float64 (largest |X| = "
                             f"{float(np.max(np.abs(X))):g}); scale the features first.")
        if first:
            self.gram_ = np.zeros((F.shape[1], F.shape[1]))
            self.cross_ = np.zeros((F.shape[1], 0))
            self.counts_ = np.zeros(0, dtype=np.int64)
            self.classes_ = np.zeros(0)
        if len(y) == 0 and classes is None:
            return self
        pos = self._grow(y, classes)
        cross = np.zeros((F.shape[1], self.classes_.size))
        counts = np.zeros(self.classes_.size, dtype=np.int64)
        if pos is not None and pos.size:
            cross[:, pos] = self.cross_
            counts[pos] = self.counts_
        yi = np.searchsorted(self.classes_, y)
        Y = np.zeros((len(y), self.classes_.size))
        Y[np.arange(len(y)), yi] = 1.0
        self.gram_ += gram
        cross += F.T @ Y
        np.add.at(counts, yi, 1)
        self.cross_, self.counts_ = cross, counts
        self._cache = _Cache()
        return self

    def _coef(self):
        check_is_fitted(self, "gram_")
        if not (self.counts_ > 0).any():
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("This StreamingRidge has seen no samples yet.")
        alpha = float(self.alpha)
        if self._cache.value is None or self._cache.value[0] != alpha:
            W = np.linalg.solve(self.gram_ + alpha * np.eye(self.gram_.shape[0]), self.cross_)
            self._cache.value = (alpha, W)
        return self._cache.value[1]

    @property
    def coef_(self):
        """Ridge weights :math:`(A + \\alpha I)^{-1} B`, shape (n_features [+ 1], K)."""
        return self._coef()

    def _scores(self, X):
        """Ridge outputs :math:`F W` (n, K), ``-inf`` for unseen classes."""
        W = self._coef()
        check_numeric(X, "X")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        S = self._aug(X) @ W
        S[:, self.counts_ == 0] = -np.inf
        return S


class OfflineLDA(_GrowingLabels, StreamFitMixin, PredictMixin, LabelScoreMixin, ClassifierMixin, BaseEstimator):
    r"""Offline LDA upper bound: stores every sample and refits scikit-learn's LDA on all of them.

    Not exemplar-free (it keeps the whole stream); it is the joint-training reference for the
    streaming heads. ``LinearDiscriminantAnalysis(solver="lsqr", shrinkage=shrinkage)`` is refitted
    lazily at prediction time; with one class seen it predicts that class.

    Parameters
    ----------
    shrinkage : None, "auto" or float in [0, 1], default="auto"
        scikit-learn's shrinkage. ``"auto"`` (Ledoit-Wolf) keeps the reference meaningful when the
        feature dimension exceeds the number of samples (CIRCLE features on small sets: without
        shrinkage the pooled covariance is singular and the least-squares solve falls to chance);
        ``None``: the empirical pooled covariance.

    Attributes
    ----------
    classes_, X_seen_, y_seen_, n_features_in_
    """

    _parameter_constraints: dict = {
        "shrinkage": [Interval(Real, 0, 1, closed="both"), OrderedStrOptions(("auto",)), None],
    }

    def __init__(self, *, shrinkage="auto"):
        self.shrinkage = shrinkage

    _fit_resets = ("X_seen_", "n_features_in_", "classes_")

    def _partial_fit(self, X, y, classes, allow_empty):
        first = not hasattr(self, "X_seen_")
        check_numeric(X, "X")
        check_labels(y, "y")
        X, y = validate_data(self, X, y, reset=first, dtype=np.float64, ensure_min_samples=0 if allow_empty else 1)
        if len(y):
            check_classification_targets(y)
        if first:
            self.X_seen_, self.y_seen_ = X.copy(), np.asarray(y).copy()
            self.classes_ = np.zeros(0)
        else:
            self.X_seen_ = np.vstack([self.X_seen_, X])
            self.y_seen_ = np.concatenate([self.y_seen_, y]) if len(y) else self.y_seen_
        if len(self.y_seen_):
            self._grow(self.y_seen_)
        self._model = _Cache()
        if classes is not None:
            self._grow(self.y_seen_, classes)
        return self

    def _fitted_model(self):
        check_is_fitted(self, "X_seen_")
        if len(self.y_seen_) == 0:
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("This OfflineLDA has seen no samples yet.")
        if self._model.value is None:
            seen = np.unique(self.y_seen_)
            if seen.size == 1:
                self._model.value = seen[0]
            else:
                from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

                self._model.value = LinearDiscriminantAnalysis(solver="lsqr", shrinkage=self.shrinkage).fit(
                    self.X_seen_, self.y_seen_)
        return self._model.value

    def _predict(self, X):
        """Prediction of LDA refitted on all stored samples."""
        model = self._fitted_model()
        check_numeric(X, "X")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        if not hasattr(model, "predict"):
            return np.full(len(X), model, dtype=self.y_seen_.dtype)
        return model.predict(X)


class RandomConvFeatures(TransformerMixin, BaseEstimator):
    r"""Fixed random convolution + ReLU + average pooling (the "conv2d" control of the continual reconstruction notes).

    The "conv2d" control is section 3(e) of those notes.

    A Kaiming-normal filter bank (``n_filters`` filters of size ``C x k x k``, entries
    :math:`N(0, 2/(C k^2))`, no bias) is applied with stride ``stride`` and zero padding ``k // 2``,
    followed by ReLU, ``pool_size x pool_size`` average pooling (floor: edge rows/columns that do not
    fill a window are dropped; the window shrinks to the map when the map is smaller) and
    flattening. Data-free: ``fit`` only draws the filters (``X``, if given, only fixes the size).

    Parameters
    ----------
    image_shape : "auto" or tuple (C, H, W), default="auto"
        ``"auto"``: from ``X`` in ``fit`` as in :func:`~algos.continual.resolve_image_geometry`
        (square sizes grey, ``3 s^2`` colour, else a one-row image).
    n_filters : int, default=32
    kernel_size : int, default=3
    stride : int, default=2
    pool_size : int, default=2
    random_state : None, int or Generator, default=None

    Attributes
    ----------
    filters_ : ndarray of shape (C * k * k, n_filters)
    image_shape_ : tuple (C, H, W)
    n_features_out_ : int
    """

    _parameter_constraints: dict = {
        "image_shape": [StrOptions({"auto"}), tuple, list],  # of 3 positive ints: the entries are checked in fit
        "kernel_size": [Interval(Integral, 1, None, closed="left")],
        "n_filters": [Interval(Integral, 1, None, closed="left")],
        "pool_size": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "stride": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, *, image_shape="auto", n_filters=32, kernel_size=3, stride=2, pool_size=2,
                 random_state=None):
        self.image_shape = image_shape
        self.n_filters = n_filters
        self.kernel_size = kernel_size
        self.stride = stride
        self.pool_size = pool_size
        self.random_state = random_state

    def _geometry(self, shape):
        C, H, W = shape
        k, s, q = int(self.kernel_size), int(self.stride), int(self.pool_size)
        p = k // 2
        Ho, Wo = (H + 2 * p - k) // s + 1, (W + 2 * p - k) // s + 1
        return k, s, p, (min(q, Ho), min(q, Wo)), (Ho, Wo)

    def fit(self, X=None, y=None):
        """Draw the filters (no data needed; ``X`` only fixes the image size).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or None, default=None
            Optional samples; no data are needed (see above).
        y : None
            Ignored.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        from ._circle import _geometry, _image_shape_tuple

        if X is not None:
            check_numeric(X, "X")
            X = validate_data(self, X, dtype=np.float64)
            n_feat = X.shape[1]
        if y is not None:
            check_labels(y, "y", None if X is None else X.shape[0])
        if X is None:
            if isinstance(self.image_shape, str):
                raise ValueError("image_shape='auto' needs X in fit (or pass image_shape=(C, H, W)).")
            n_feat = int(np.prod(_image_shape_tuple(self.image_shape)))
            self.n_features_in_ = n_feat
        shape, _, _ = _geometry(n_feat, self.image_shape, "auto", "auto", "avg")
        k, s, p, (qh, qw), (Ho, Wo) = self._geometry(shape)
        m = int(self.n_filters)
        rng = spawn_generators(self.random_state, 1)[0]
        fan_in = shape[0] * k * k
        self.filters_ = rng.standard_normal((fan_in, m)) * np.sqrt(2.0 / fan_in)
        self.image_shape_ = shape
        self.n_features_out_ = (Ho // qh) * (Wo // qw) * m
        return self

    def transform(self, X):
        """Features of shape (n, ``n_features_out_``) for images (n, C*H*W).

        Parameters
        ----------
        X : array-like of shape (n_samples, C*H*W)
            Flattened images.

        Returns
        -------
        ndarray of shape (n_samples, ``n_features_out_``)
            The features.
        """
        check_is_fitted(self, "filters_")
        check_numeric(X, "X")
        X = validate_data(self, X, reset=False, dtype=np.float64, ensure_min_samples=0)
        C, H, W = self.image_shape_
        k, s, p, (qh, qw), (Ho, Wo) = self._geometry(self.image_shape_)
        n = len(X)
        if n == 0:
            return np.zeros((0, self.n_features_out_))
        Xp = np.pad(X.reshape(n, C, H, W), ((0, 0), (0, 0), (p, p), (p, p)))
        win = np.lib.stride_tricks.sliding_window_view(Xp, (k, k), axis=(2, 3))[:, :, ::s, ::s][:, :, :Ho, :Wo]
        cols = np.ascontiguousarray(win.transpose(0, 2, 3, 1, 4, 5)).reshape(n * Ho * Wo, C * k * k)
        z = np.maximum(cols @ self.filters_, 0.0).reshape(n, Ho, Wo, -1)
        hq, wq = Ho // qh, Wo // qw
        z = z[:, :hq * qh, :wq * qw].reshape(n, hq, qh, wq, qw, -1).mean(axis=(2, 4))
        return z.reshape(n, -1)


class FeatureHead(StreamFitMixin, PredictMixin, LabelScoreMixin, ClassifierMixin, BaseEstimator):
    r"""A fixed (data-free) feature transformer followed by a streaming head.

    The first ``partial_fit`` fits a clone of ``features`` without data (it only draws weights) and a
    clone of ``head``; every batch is then transformed and passed to ``head.partial_fit``.

    Parameters
    ----------
    features : transformer or None, default=None
        ``None``: raw inputs (e.g. raw pixels).
    head : classifier with partial_fit or None, default=None
        ``None``: ``StreamingLDA()``.

    Attributes
    ----------
    features_, head_, classes_, n_features_in_
    """

    _parameter_constraints: dict = {
        "features": [HasMethods(["fit", "transform", "get_params"]), None],
        "head": [HasMethods(["partial_fit", "predict", "get_params"]), None],
    }

    def __init__(self, *, features=None, head=None):
        self.features = features
        self.head = head

    _fit_resets = ("features_", "head_", "classes_", "n_features_in_")

    def _partial_fit(self, X, y, classes, allow_empty):
        first = not hasattr(self, "head_")
        check_numeric(X, "X")
        check_labels(y, "y")
        if X is not None and getattr(np.asarray(X), "ndim", 2) == 4:
            X = self._flatten_images(np.asarray(X))
        X, y = validate_data(self, X, y, reset=first, dtype=np.float64, ensure_min_samples=0 if allow_empty else 1)
        if first:
            self.features_ = None if self.features is None else clone(self.features).fit(X if len(X) else None)
            self.head_ = StreamingLDA() if self.head is None else clone(self.head)
        F = X if self.features_ is None else self.features_.transform(X)
        self.head_.partial_fit(F, y, classes=classes)
        self.classes_ = self.head_.classes_
        return self

    def _flatten_images(self, X):
        """(n, C, H, W) images to (n, C*H*W), checking (C, H, W) against the extractor's ``image_shape``."""
        shape = getattr(self.features, "image_shape", None)
        if isinstance(shape, (tuple, list)) and tuple(X.shape[1:]) != tuple(shape):
            raise ValueError(f"'X' must have shape (n, {', '.join(map(str, shape))}) to match the image_shape of "
                             f"'features'; got {X.shape}.")
        return X.reshape(len(X), -1)

    def _features(self, X):
        check_is_fitted(self, "head_")
        check_numeric(X, "X")
        if getattr(np.asarray(X), "ndim", 2) == 4:
            X = self._flatten_images(np.asarray(X))
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X if self.features_ is None else self.features_.transform(X)

    def _predict(self, X):
        """The head's prediction on the transformed ``X``."""
        F = self._features(X)
        return self.head_.predict(F)

    def extract_features(self, X):
        """The transformed ``X`` (what the head sees).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        ndarray of shape (n_samples, n_output_features)
            The features.
        """
        return self._features(X)


#: Names accepted by :func:`make_baseline`, with a one-line description.
BASELINES = {
    "raw_slda": "streaming LDA on raw pixels (a)",
    "raw_ncm": "nearest class mean on raw pixels",
    "ncm": "nearest class mean on CIRCLE features (b)",
    "ridge": "streaming ridge / analytic learning on CIRCLE features (c)",
    "birc2d_gap": "BiRC2D (patchify, tanh, uniform init) + global average pooling + SLDA (d)",
    "random_conv": "fixed random conv + ReLU + average pooling + SLDA (e)",
    "offline_lda": "offline LDA on CIRCLE features, refitted on all data seen (f, upper bound)",
}


def _circle_features(image_shape, units, random_state, backend, **kw):
    from ._birc2d import BiRC2DFeatures
    from ._circle import resolve_image_geometry

    shape, patch, q = resolve_image_geometry(int(np.prod(image_shape)), tuple(image_shape))
    params = dict(image_shape=shape, patch=patch, stem="random_conv", units=units, activation="leaky_relu",
                  init="kaiming", pooling="avg", pool_size=q, dtype=np.float64, random_state=random_state,
                  backend=backend)
    params.update(kw)
    return BiRC2DFeatures(**params)


def make_baseline(name, image_shape, *, units=8, shrinkage=1e-4, alpha=1.0, random_state=0, backend="auto"):
    """Build the baseline ``name`` (a key of :data:`BASELINES`) for images of ``image_shape``.

    The CIRCLE-feature baselines use one extractor with CIRCLE's defaults (random-conv stem, leaky
    ReLU, Kaiming init, 2x2 average pooling, spatial concatenation) and ``units`` units per direction;
    ``backend`` is passed to the reservoir extractors.

    Parameters
    ----------
    name : str
        A key of :data:`BASELINES`.
    image_shape : tuple of int
        ``(C, H, W)`` of the images.
    units : int, default=8
        Reservoir units per direction of the CIRCLE-feature baselines, at least 1.
    shrinkage : float, default=1e-4
        Covariance shrinkage of the streaming-LDA heads, in [0, 1].
    alpha : float, default=1.0
        Ridge penalty of the ridge baselines, positive.
    random_state : None, int, SeedSequence or Generator, default=0
        Seed of the random features.
    backend : {"auto", "numpy", "torch", "numba"}, default="auto"
        Backend of the reservoir extractors (``"numba"`` is ``"numpy"``). ``"auto"`` is resolved by each
        extractor as in :class:`BiRC2DFeatures` (the CPU path for numpy images); see the "Backends: one
        rule" section of the scaling page.

    Returns
    -------
    FeatureHead
    """
    from ._circle import _image_shape_tuple
    from ._reservoir import _BACKENDS

    check_option(name, "name", tuple(BASELINES))
    image_shape = _image_shape_tuple(image_shape)
    units = check_scalar_int(units, "units", low=1)
    shrinkage = check_scalar_float(shrinkage, "shrinkage", low=0.0, high=1.0)
    alpha = check_scalar_float(alpha, "alpha", low=0.0, closed="neither")
    check_random_state(random_state)  # checked here; each extractor draws from it later
    check_option(backend, "backend", _BACKENDS)
    slda = StreamingLDA(shrinkage=shrinkage)
    if name == "raw_slda":
        return FeatureHead(features=None, head=slda)
    if name == "raw_ncm":
        return FeatureHead(features=None, head=StreamingLDA(covariance="identity"))
    if name == "birc2d_gap":
        from ._birc2d import BiRC2DFeatures
        from ._circle import resolve_image_geometry

        shape, patch, _ = resolve_image_geometry(int(np.prod(image_shape)), tuple(image_shape))
        feats = BiRC2DFeatures(image_shape=shape, patch=patch, stem="none", units=4 * units, activation="tanh",
                               init="uniform", pooling="gap", dtype=np.float64, random_state=random_state,
                               backend=backend)
        return FeatureHead(features=feats, head=slda)
    if name == "random_conv":
        conv = RandomConvFeatures(image_shape=tuple(image_shape), random_state=random_state)
        return FeatureHead(features=conv, head=slda)
    feats = _circle_features(image_shape, units, random_state, backend)
    if name == "ncm":
        return FeatureHead(features=feats, head=StreamingLDA(covariance="identity"))
    if name == "ridge":
        return FeatureHead(features=feats, head=StreamingRidge(alpha=alpha))
    return FeatureHead(features=feats, head=OfflineLDA())
