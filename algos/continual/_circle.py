r"""``CIRCLEClassifier``: R fixed reservoir extractors, G streaming-LDA heads, averaged softmax."""

from __future__ import annotations

import copy
import math
import numbers
from numbers import Integral, Real

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import (
    RANDOM_STATE_CONSTRAINTS,
    OrderedStrOptions,
    check_array,
    check_option,
    check_scalar_int,
    spawn_generators,
    validate_params,
)
from ._checks import (
    FLOAT_DTYPE,
    LabelScoreMixin,
    LogProbaMixin,
    StreamFitMixin,
    as_float_dtype,
    check_labels,
    check_numeric,
)
from ._merge import check_merge_params
from ._slda import LARGE_D, StreamingLDA, _log_softmax

__all__ = ["CIRCLEClassifier", "SLDAEnsemble", "resolve_image_geometry"]

#: BiRC2DFeatures parameters that CIRCLEClassifier sets itself (not accepted in ``feature_params``).
_OWN = ("image_shape", "patch", "stem", "units", "leak", "spectral_radius", "activation", "init", "pooling",
        "pool_size", "projection_dim", "pixel_range", "random_state", "dtype")


def _head_dtype(head_dtype, d):
    """The dtype of a head with ``d`` features: float32 above ``LARGE_D`` under ``"auto"`` (``head_dtype`` is
    checked by ``_parameter_constraints``)."""
    if isinstance(head_dtype, str) and head_dtype == "auto":
        return np.float32 if d > LARGE_D else np.float64
    return as_float_dtype(head_dtype)


def _image_shape_tuple(image_shape):
    """``image_shape`` as a tuple (C, H, W) of 3 positive ints, or a TypeError/ValueError naming it."""
    if (not isinstance(image_shape, (tuple, list)) or len(image_shape) != 3
            or not all(isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) for v in image_shape)):
        raise TypeError(f"'image_shape' must be 'auto' or a tuple (C, H, W) of 3 positive ints; "
                        f"got {image_shape!r}.")
    image_shape = tuple(int(v) for v in image_shape)
    if min(image_shape) < 1:
        raise ValueError(f"'image_shape' must be 'auto' or a tuple (C, H, W) of 3 positive ints; "
                         f"got {image_shape!r}.")
    return image_shape


def resolve_image_geometry(n_features, image_shape="auto", patch="auto", pool_size="auto", pooling="avg"):
    r"""Resolve the ``"auto"`` image shape, patch size and pooling factor of :class:`CIRCLEClassifier`.

    * ``image_shape="auto"``: ``n_features = s^2`` gives a grey image ``(1, s, s)``;
      ``n_features = 3 s^2`` a colour image ``(3, s, s)`` (channel-first); any other size is read as a
      one-row image ``(1, 1, n_features)``, i.e. a 1-D sequence: the horizontal scans run along the
      features and the vertical scans see sequences of length 1.
    * ``patch="auto"``: 2 when both image sides are even, else 1.
    * ``pool_size="auto"`` (``pooling="avg"`` only): 2 when both token-grid sides are even, else 1.

    Parameters
    ----------
    n_features : int
        Number of features of a flattened image.
    image_shape : "auto" or tuple of int, default="auto"
        ``(C, H, W)``, or ``"auto"`` as above.
    patch : "auto" or int, default="auto"
        Patch size / stem stride.
    pool_size : "auto" or int, default="auto"
        Average-pooling factor.
    pooling : {"avg", "gap", "none"}, default="avg"
        Pooling of :class:`CIRCLEClassifier`.

    Returns
    -------
    (image_shape, patch, pool_size) : (tuple of 3 ints, int, int)
    """
    n_features = check_scalar_int(n_features, "n_features", low=1)
    pooling = check_option(pooling, "pooling", ("gap", "avg", "none"))
    if isinstance(image_shape, str) and image_shape != "auto":
        raise ValueError(f"'image_shape' must be 'auto' or a tuple (C, H, W); got {image_shape!r}.")
    if isinstance(patch, str) and patch != "auto":
        raise ValueError(f"'patch' must be 'auto' or an int >= 1; got {patch!r}.")
    if not isinstance(patch, str):
        patch = check_scalar_int(patch, "patch", low=1)
    if isinstance(pool_size, str) and pool_size != "auto":
        raise ValueError(f"'pool_size' must be 'auto' or an int >= 1; got {pool_size!r}.")
    if not isinstance(pool_size, str):
        pool_size = check_scalar_int(pool_size, "pool_size", low=1)
    return _geometry(n_features, image_shape, patch, pool_size, pooling)


def _geometry(n_features, image_shape, patch, pool_size, pooling):
    """:func:`resolve_image_geometry` on arguments whose single-value rules are already checked (by it, or
    by ``_parameter_constraints``); what remains depends on ``n_features`` or ties arguments together."""
    if isinstance(image_shape, str):
        s = math.isqrt(n_features)
        s3 = math.isqrt(n_features // 3)
        if s * s == n_features:
            image_shape = (1, s, s)
        elif n_features % 3 == 0 and 3 * s3 * s3 == n_features:
            image_shape = (3, s3, s3)
        else:
            image_shape = (1, 1, int(n_features))
    else:
        image_shape = _image_shape_tuple(image_shape)
        if int(np.prod(image_shape)) != n_features:
            raise ValueError(f"'X' has {n_features} features per row but image_shape = {image_shape} needs "
                             f"C*H*W = {int(np.prod(image_shape))}.")
    _, H, W = image_shape
    if isinstance(patch, str):
        patch = 2 if H % 2 == 0 and W % 2 == 0 else 1
    else:
        patch = int(patch)
        if H % patch or W % patch:
            raise ValueError(f"image size {H}x{W} is not divisible by 'patch' = {patch}; crop or pad the images to a "
                             f"multiple of the patch size first.")
    if isinstance(pool_size, str):
        nh, nw = H // patch, W // patch
        pool_size = 2 if pooling == "avg" and nh % 2 == 0 and nw % 2 == 0 else 1
    else:
        pool_size = int(pool_size)
        nh, nw = H // patch, W // patch
        if pooling == "avg" and (nh % pool_size or nw % pool_size):
            raise ValueError(f"the {nh}x{nw} token grid (image {H}x{W}, patch {patch}) is not divisible by "
                             f"'pool_size' = {pool_size}.")
    return image_shape, patch, pool_size


class SLDAEnsemble(StreamFitMixin, LogProbaMixin, LabelScoreMixin, ClassifierMixin, BaseEstimator):
    r"""Prediction ensemble of streaming LDA heads over contiguous column blocks of ``X``.

    Head :math:`g` is a :class:`StreamingLDA` on the columns of block :math:`g`;
    :math:`p(k\mid x) = \frac1G\sum_g \operatorname{softmax}_k(s_g(x)/\tau)` over the seen classes.
    This is the head of :class:`CIRCLEClassifier`; use it directly on features computed once
    (``CIRCLEClassifier.extract_features``) to replay many streams without recomputing features.

    Parameters
    ----------
    group_sizes : list of int or None, default=None
        Column count of each block, summing to ``n_features``; ``None`` means one block (a single
        :class:`StreamingLDA`).
    temperature, shrinkage, covariance :
        As in :class:`StreamingLDA`.
    head_dtype : "auto", numpy.float64 or numpy.float32, default="auto"
        Dtype of each head's state (:class:`StreamingLDA` ``dtype``). ``"auto"``: float32 for a head
        with more than ``LARGE_D`` (8192) features, whose float64 covariance and Cholesky factor
        would take over 1 GiB (a ResourceWarning otherwise), float64 below.

    Attributes
    ----------
    heads_ : list of StreamingLDA
    classes_ : ndarray
    n_features_in_ : int
    """

    _parameter_constraints: dict = {
        "covariance": [OrderedStrOptions(("exact", "hayes", "identity", "fixed"))],
        "group_sizes": ["array-like", None],
        "head_dtype": [StrOptions({"auto"}), *FLOAT_DTYPE],
        "shrinkage": [Interval(Real, 0, 1, closed="both")],
        "temperature": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, *, group_sizes=None, temperature=1.0, shrinkage=1e-4, covariance="exact", head_dtype="auto"):
        self.group_sizes = group_sizes
        self.temperature = temperature
        self.shrinkage = shrinkage
        self.covariance = covariance
        self.head_dtype = head_dtype

    _fit_resets = ("heads_", "classes_", "n_features_in_")

    def _bounds(self, d):
        if self.group_sizes is None:
            sizes = [d]
        else:
            arr = check_array(self.group_sizes, "group_sizes", ndim=1, dtype="int", allow_empty=True)
            sizes = [int(s) for s in arr]
        if not sizes or min(sizes) < 1 or sum(sizes) != d:
            raise ValueError(f"'group_sizes' must be positive ints summing to n_features = {d}; "
                             f"got {self.group_sizes!r}.")
        edges = np.concatenate([[0], np.cumsum(sizes)])
        return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]

    def _partial_fit(self, X, y, classes, allow_empty):
        first = not hasattr(self, "heads_")
        check_numeric(X, "X")
        check_labels(y, "y")
        X, y = validate_data(self, X, y, reset=first, ensure_min_samples=0 if allow_empty else 1,
                             dtype=[np.float64, np.float32])
        if first:
            bounds = self._bounds(X.shape[1])
            heads = [StreamingLDA(shrinkage=self.shrinkage, covariance=self.covariance,
                                  temperature=self.temperature, dtype=_head_dtype(self.head_dtype, b - a))
                     for a, b in bounds]
            self._slices = bounds
            self.heads_ = heads
        for head, (a, b) in zip(self.heads_, self._slices):
            head.partial_fit(X[:, a:b], y, classes=classes)
        self.classes_ = self.heads_[0].classes_
        return self

    def merge(self, other):
        """Merge the heads of another fitted ``SLDAEnsemble`` into this one, in place (see :meth:`StreamingLDA.merge`).

        Head :math:`g` merges with head :math:`g` of ``other``; the result equals the fit on the
        union of both estimators' samples to round-off. An unfitted ``other`` adds nothing.

        Parameters
        ----------
        other : SLDAEnsemble
            Same ``group_sizes`` (column blocks), ``shrinkage``, ``covariance``, ``temperature``
            and ``head_dtype``.

        Returns
        -------
        self : SLDAEnsemble
            The merged estimator.

        Raises
        ------
        ValueError
            For ``covariance="hayes"`` or ``"fixed"`` (order-dependent; use ``"exact"``), or a
            parameter, column block or feature count that differs (the message names it).
        """
        if not isinstance(other, SLDAEnsemble):
            raise TypeError(f"'other' must be an SLDAEnsemble; got {type(other).__name__}.")
        validate_params(self)
        validate_params(other)
        check_merge_params(self, other, ("covariance", "shrinkage", "temperature", "head_dtype"))
        if not hasattr(other, "heads_"):
            return self
        if not hasattr(self, "heads_"):
            for attr in ("heads_", "_slices", "classes_", "n_features_in_", "feature_names_in_"):
                if hasattr(other, attr):
                    setattr(self, attr, copy.deepcopy(getattr(other, attr)))
            return self
        if other._slices != self._slices:
            raise ValueError(f"'group_sizes' differs between the states to merge (column blocks {self._slices} "
                             f"and {other._slices}); only estimators with equal parameters can be merged.")
        for head, other_head in zip(self.heads_, other.heads_):
            head.merge(other_head)
        self.classes_ = self.heads_[0].classes_
        return self

    def _log_proba(self, X):
        check_is_fitted(self, "heads_")
        check_numeric(X, "X")
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        tau = float(self.temperature)
        logs = [_log_softmax(h._scores(X[:, a:b]) / tau, h.counts_ > 0) for h, (a, b) in zip(self.heads_, self._slices)]
        if len(logs) == 1:
            return logs[0]
        with np.errstate(divide="ignore"):
            return logsumexp(np.stack(logs), axis=0) - np.log(len(logs))


class CIRCLEClassifier(StreamFitMixin, LogProbaMixin, LabelScoreMixin, ClassifierMixin, BaseEstimator):
    r"""CIRCLE: fixed data-free reservoir features, streaming LDA heads and a softmax ensemble.

    ``n_reservoirs`` (R) :class:`~algos.continual.BiRC2DFeatures` extractors, each fully specified by
    its own child seed, are split into ``n_groups`` (G) contiguous groups; head :math:`g` is a
    :class:`~algos.continual.StreamingLDA` on the concatenated features of its group, and

    .. math:: p(k \mid x) = \frac1G \sum_g \operatorname{softmax}_k\big(s_g(x)/\tau\big)

    over the classes seen so far; the prediction is its argmax. ``partial_fit`` takes any mini-batch
    of any classes in any order: no task boundaries or task ids are needed, and with
    ``covariance="exact"`` the final state does not depend on the order or on how the stream was cut
    into tasks. G = 1 is pure feature ensembling, G = R pure prediction ensembling.

    Parameters
    ----------
    n_reservoirs : int >= 1, default=4
    n_groups : int in [1, n_reservoirs], default=2
        Groups are contiguous and their sizes differ by at most one (``numpy.array_split``).
    temperature : float > 0, default=1.0
    shrinkage : float in [0, 1], default=1e-4
    covariance : {"exact", "hayes", "identity", "fixed"}, default="exact"
        Passed to each head (see :class:`StreamingLDA`).
    image_shape : "auto" or tuple (C, H, W), default="auto"
        ``"auto"``: taken from 4-D input ``(n, C, H, W)``; for flat input see
        :func:`resolve_image_geometry` (square sizes are grey images, ``3 s^2`` colour images,
        anything else a 1-D sequence ``(1, 1, n_features)``).
    patch : "auto" or int, default="auto"
        Patch size / stem stride (``"auto"``: 2 when the image sides are even, else 1).
    stem : {"random_conv", "none"}, default="random_conv"
        CIRCLE's fixed random convolution stem [T], or BiRC2D's plain patchify.
    units : int, default=8
        Units per direction (a block outputs ``4 * units`` channels per grid cell) [R].
    leak : float in (0, 1], default=0.5
    spectral_radius : float, default=0.9
    activation : {"leaky_relu", "tanh", "relu"}, default="leaky_relu"
    init : {"kaiming", "uniform"}, default="kaiming"
    pooling : {"avg", "gap", "none"}, default="avg"
        ``"avg"`` with flattening is CIRCLE's spatial concatenation [T]; ``"gap"`` is BiRC2D.
    pool_size : "auto" or int, default="auto"
    projection_dim : int or None, default=None
        Optional fixed random projection (+ ReLU) after pooling [R].
    pixel_range : {"auto", "unit", "byte", "none"}, default="auto"
        Pixel scaling of the extractors: ``"auto"`` accepts [0, 1] or [0, 255] and rejects the rest;
        ``"none"`` feeds any finite values unchanged (non-image arrays).
    dtype : numpy.float64 or numpy.float32, default=numpy.float64
        Dtype of the features (the heads' dtype is ``head_dtype``). float64 keeps the features of
        an image independent of the batch it comes in to round-off level (float32 GEMMs differ by
        ~1e-7 between batch compositions); float32 halves time and memory of the extractors.
    head_dtype : "auto", numpy.float64 or numpy.float32, default="auto"
        Dtype of the streaming-LDA heads (see :class:`SLDAEnsemble`): ``"auto"`` is float32 for a
        head with more than 8192 features (its float64 covariance would exceed 1 GiB), else float64.
    feature_params : dict or None, default=None
        Any other :class:`BiRC2DFeatures` parameter (``n_blocks``, ``stem_channels``,
        ``connectivity``, ``input_scaling``, ``backend``, ``dtype``, ...), passed to every extractor.
    random_state : None, int, SeedSequence or Generator, default=None
        Extractor ``r`` gets the ``r``-th child seed (``SeedSequence.spawn``).
    n_jobs : int, default=1
        Extractors transformed concurrently (threads). The reservoir scan itself is already
        parallel over sequences, so values above 1 mainly help with many small extractors.

    Attributes
    ----------
    extractors_ : list of BiRC2DFeatures
    groups_ : list of ndarray
        Extractor indices of each head.
    ensemble_ : SLDAEnsemble
        The G heads (``heads_`` is ``ensemble_.heads_``) on the concatenated features.
    classes_ : ndarray
    image_shape_ : tuple (C, H, W)
    n_features_in_ : int
        ``C * H * W``.

    Notes
    -----
    **Design of the parameters.** scikit-learn's ``get_params``/``clone`` need every constructor
    argument to be named, so the reconstruction's ``**feature_kw`` is split into the feature parameters that
    define CIRCLE (explicit arguments above, with CIRCLE's defaults: random-conv stem, leaky ReLU,
    Kaiming init, average pooling and spatial concatenation) and a ``feature_params`` dict for the
    rest. A key of ``feature_params`` that is also an explicit argument raises ``ValueError``.

    **Cost.** With :math:`d_g` features per head, memory :math:`\sum_g d_g^2` and a Cholesky of
    :math:`O(d_g^3/3)` per head after each update; G heads of dimension d/G cost d^2/G and d^3/G^2.

    Status: the grouping and averaging scheme is from the paper's abstract; its exact form, the
    stem sizes and the pooling are reconstructed [R] (see ``docs/continual.md``).

    References
    ----------
    Jučas & Pan, "Data-Free Reservoir Features for Efficient Long-Horizon Cold-Start Continual
    Learning", arXiv:2606.27095 (2026). Hayes & Kanan, CVPR Workshops 2020 (streaming LDA).

    Examples
    --------
    >>> from algos.continual import CIRCLEClassifier, load_digits_images
    >>> X, y, shape = load_digits_images()
    >>> clf = CIRCLEClassifier(n_reservoirs=2, n_groups=2, random_state=0)
    >>> clf = clf.partial_fit(X[y < 5], y[y < 5]).partial_fit(X[y >= 5], y[y >= 5])
    >>> clf.classes_.tolist()
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    _parameter_constraints: dict = {
        "activation": [OrderedStrOptions(("tanh", "relu", "leaky_relu"))],
        "covariance": [OrderedStrOptions(("exact", "hayes", "identity", "fixed"))],
        "dtype": FLOAT_DTYPE,
        "feature_params": [dict, None],
        "head_dtype": [StrOptions({"auto"}), *FLOAT_DTYPE],
        "image_shape": [StrOptions({"auto"}), tuple, list],  # of 3 positive ints: the entries are checked in fit
        "init": [OrderedStrOptions(("uniform", "kaiming"))],
        "leak": [Interval(Real, 0, 1, closed="right")],
        "n_groups": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [Interval(Integral, 1, None, closed="left"), Options(Integral, {-1})],
        "n_reservoirs": [Interval(Integral, 1, None, closed="left")],
        "patch": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "pixel_range": [OrderedStrOptions(("auto", "unit", "byte", "none"))],
        "pool_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "pooling": [OrderedStrOptions(("gap", "avg", "none"))],
        "projection_dim": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "shrinkage": [Interval(Real, 0, 1, closed="both")],
        "spectral_radius": [Interval(Real, 0, None, closed="left")],
        "stem": [OrderedStrOptions(("none", "random_conv"))],
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "units": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, *, n_reservoirs=4, n_groups=2, temperature=1.0, shrinkage=1e-4, covariance="exact",
                 image_shape="auto", patch="auto", stem="random_conv", units=8, leak=0.5, spectral_radius=0.9,
                 activation="leaky_relu", init="kaiming", pooling="avg", pool_size="auto", projection_dim=None,
                 pixel_range="auto", dtype=np.float64, head_dtype="auto", feature_params=None, random_state=None,
                 n_jobs=1):
        self.n_reservoirs = n_reservoirs
        self.n_groups = n_groups
        self.temperature = temperature
        self.shrinkage = shrinkage
        self.covariance = covariance
        self.image_shape = image_shape
        self.patch = patch
        self.stem = stem
        self.units = units
        self.leak = leak
        self.spectral_radius = spectral_radius
        self.activation = activation
        self.init = init
        self.pooling = pooling
        self.pool_size = pool_size
        self.projection_dim = projection_dim
        self.pixel_range = pixel_range
        self.dtype = dtype
        self.head_dtype = head_dtype
        self.feature_params = feature_params
        self.random_state = random_state
        self.n_jobs = n_jobs

    _fit_resets = ("extractors_", "ensemble_", "groups_", "classes_", "image_shape_", "n_features_in_")

    # ------------------------------------------------------------------ construction
    def _check_groups(self):
        """``(R, G)``, with the cross-parameter rule ``n_groups <= n_reservoirs`` (not expressible in
        ``_parameter_constraints``, which check each of them)."""
        R, G = int(self.n_reservoirs), int(self.n_groups)
        if G > R:
            raise ValueError(f"'n_groups' must be <= 'n_reservoirs' = {R}; got {G}.")
        return R, G

    def _build(self, n_features, image_shape):
        from ._birc2d import BiRC2DFeatures

        R, G = self._check_groups()
        extra = {} if self.feature_params is None else self.feature_params
        # the keys: data-independent but not expressible in _parameter_constraints
        clash = sorted(set(extra) & set(_OWN))
        if clash:
            raise ValueError(f"'feature_params' must not contain {clash[0]!r}: it is an argument of "
                             f"CIRCLEClassifier itself.")
        shape, patch, q = _geometry(n_features, image_shape, self.patch, self.pool_size, self.pooling)
        gens = spawn_generators(self.random_state, R)
        extractors = []
        for r in range(R):
            f = BiRC2DFeatures(image_shape=shape, patch=patch, stem=self.stem, units=self.units, leak=self.leak,
                               spectral_radius=self.spectral_radius, activation=self.activation, init=self.init,
                               pooling=self.pooling, pool_size=q, projection_dim=self.projection_dim,
                               pixel_range=self.pixel_range, dtype=self.dtype, random_state=gens[r], **extra)
            extractors.append(f.fit())
        self.extractors_ = extractors
        self.groups_ = [np.asarray(g) for g in np.array_split(np.arange(R), G)]
        sizes = [sum(extractors[r].n_features_out_ for r in g) for g in self.groups_]
        self.ensemble_ = SLDAEnsemble(group_sizes=sizes, temperature=self.temperature, shrinkage=self.shrinkage,
                                      covariance=self.covariance, head_dtype=self.head_dtype)
        self.image_shape_ = shape

    def _flatten(self, X, first):
        """Accept (n, C, H, W) or (n, C*H*W); returns flat X and the 4-D image shape (or None)."""
        X_arr = X if hasattr(X, "shape") else np.asarray(X)
        if getattr(X_arr, "ndim", 2) != 4:
            return X, None
        shape = tuple(int(v) for v in X_arr.shape[1:])
        expected = None
        if not first:
            expected = self.image_shape_
        elif not isinstance(self.image_shape, str):
            expected = tuple(self.image_shape)
        if expected is not None and shape != tuple(expected):
            raise ValueError(f"'X' must have shape (n, {', '.join(map(str, expected))}) to match image_shape; "
                             f"got {X_arr.shape}.")
        return np.asarray(X_arr).reshape(X_arr.shape[0], math.prod(shape)), shape

    def extract_features(self, X):
        """Concatenated features of all R extractors, ``[phi_1(X), ..., phi_R(X)]``.

        Group ``g`` is the column block of the extractors in ``groups_[g]``;
        ``ensemble_.predict_proba(extract_features(X))`` equals ``predict_proba(X)``.

        Parameters
        ----------
        X : array-like of shape (n, C*H*W) or (n, C, H, W)

        Returns
        -------
        ndarray of shape (n, sum_r d_r)
        """
        check_is_fitted(self, "extractors_")
        check_numeric(X, "X")
        X, _ = self._flatten(X, first=False)
        X = validate_data(self, X, reset=False, ensure_min_samples=0, dtype=[np.float64, np.float32])
        return self._transform(X)

    def _transform(self, X):
        n_jobs = int(self.n_jobs)
        if n_jobs == 1 or len(self.extractors_) == 1:
            feats = [f.transform(X) for f in self.extractors_]
        else:
            from joblib import Parallel, delayed

            feats = Parallel(n_jobs=n_jobs, prefer="threads")(delayed(f.transform)(X) for f in self.extractors_)
        order = np.concatenate(self.groups_)
        return np.hstack([feats[r] for r in order])

    # ------------------------------------------------------------------ fitting
    def _partial_fit(self, X, y, classes, allow_empty):
        first = not hasattr(self, "extractors_")
        check_numeric(X, "X")
        check_labels(y, "y")
        X, img = self._flatten(X, first)
        X, y = validate_data(self, X, y, reset=first, ensure_min_samples=0 if allow_empty else 1,
                             dtype=[np.float64, np.float32])
        if first:
            self._build(X.shape[1], img if img is not None else self.image_shape)
        self.ensemble_.partial_fit(self._transform(X), y, classes=classes)
        self.classes_ = self.ensemble_.classes_
        return self

    def merge(self, other):
        """Merge the heads of another fitted ``CIRCLEClassifier`` into this one, in place.

        Both estimators must compute the same features (equal parameters and equal extractors: an
        int ``random_state`` makes them reproducible on every worker); head :math:`g` then merges
        with head :math:`g` of ``other`` (:meth:`StreamingLDA.merge`) and the result equals the fit
        on the union of both estimators' samples to round-off. An unfitted ``other`` adds nothing.

        Parameters
        ----------
        other : CIRCLEClassifier

        Returns
        -------
        self : CIRCLEClassifier
            The merged estimator.

        Raises
        ------
        ValueError
            For ``covariance="hayes"`` or ``"fixed"`` (order-dependent; use ``"exact"``), a
            parameter that differs (the message names it) or extractors whose features differ.
        """
        if not isinstance(other, CIRCLEClassifier):
            raise TypeError(f"'other' must be a CIRCLEClassifier; got {type(other).__name__}.")
        validate_params(self)
        validate_params(other)
        names = [k for k in self.get_params(deep=False) if k not in ("n_jobs", "random_state")]
        check_merge_params(self, other, names)
        if not hasattr(other, "ensemble_"):
            return self
        if not hasattr(self, "ensemble_"):
            for attr in self._fit_resets + ("feature_names_in_",):
                if hasattr(other, attr):
                    setattr(self, attr, copy.deepcopy(getattr(other, attr)))
            return self
        if other.image_shape_ != self.image_shape_:
            raise ValueError(f"'image_shape' differs between the states to merge ({self.image_shape_} and "
                             f"{other.image_shape_}); only estimators with equal parameters can be merged.")
        scale = 255.0 if self.pixel_range == "byte" else 1.0
        probe = np.random.default_rng(0).random((2, self.n_features_in_)) * scale
        if not np.array_equal(self._transform(probe), other._transform(probe)):
            raise ValueError("the extractors differ ('random_state' gave different reservoirs): only "
                             "CIRCLEClassifiers with the same features can be merged; pass the same int "
                             "'random_state' to both.")
        self.ensemble_.merge(other.ensemble_)
        self.classes_ = self.ensemble_.classes_
        return self

    @property
    def heads_(self):
        """The G :class:`StreamingLDA` heads (``ensemble_.heads_``)."""
        return self.ensemble_.heads_

    # ------------------------------------------------------------------ prediction
    def _log_proba(self, X):
        check_is_fitted(self, "ensemble_")
        check_numeric(X, "X")
        X, _ = self._flatten(X, first=False)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        self.ensemble_.temperature = self.temperature
        return self.ensemble_._log_proba(self._transform(X))
