"""Boundary checks shared by the continual-learning estimators (the package wording of ``algos._validation``).

scikit-learn's ``validate_data`` already rejects NaN, infinities, complex numbers and the wrong rank
with its own wording; these helpers add what it leaves out or words without the argument's name:
non-numeric ``X`` and the labels ``y`` (which may be strings, but never NaN, infinite or complex).
"""

from __future__ import annotations

import numpy as np
from sklearn.utils._param_validation import Options, StrOptions

from .._validation import check_array, check_finite, validate_params
from ._merge import fit_dask, is_dask_array

__all__ = ["FLOAT_DTYPE", "as_float_dtype", "check_numeric", "check_labels", "check_label_kind", "LabelScoreMixin",
           "StreamFitMixin", "PredictMixin", "ScoreArgmaxMixin", "LogProbaMixin",
           "decision_from_scores"]


#: ``_parameter_constraints`` entry of a ``dtype`` parameter: numpy.float32 or numpy.float64, given as the
#: scalar type, a ``numpy.dtype`` or its name.
FLOAT_DTYPE = [
    Options(type, {np.float32, np.float64}),
    Options(np.dtype, {np.dtype(np.float32), np.dtype(np.float64)}),
    StrOptions({"float32", "float64"}),
]


def as_float_dtype(dtype):
    """The scalar type of a ``dtype`` parameter (already checked against :data:`FLOAT_DTYPE`)."""
    return np.dtype(dtype).type


def check_numeric(X, name="X"):
    """Raise ``TypeError`` naming ``name`` if ``X`` holds strings, complex numbers or other non-real values.

    ``X`` is returned unchanged (the estimators convert it themselves); real input costs one
    ``numpy.asarray`` when it is not an array already.
    """
    if X is None:
        return X
    import scipy.sparse as sp

    if sp.issparse(X):
        return X  # scikit-learn's validation words it ("Sparse data was passed ... dense data is required")
    try:
        kind = X.dtype.kind if isinstance(X, np.ndarray) else np.asarray(X).dtype.kind
    except Exception:  # noqa: BLE001 - ragged input: let check_array word it
        kind = "O"
    if kind == "c":
        # scikit-learn's estimator checks expect this wording (ValueError "Complex data not supported")
        raise ValueError(f"Complex data not supported: '{name}' must be an array of real numbers; got an array "
                         f"of dtype {np.asarray(X).dtype}.")
    if kind == "O":
        try:
            np.asarray(X, dtype=np.float64)  # numbers held as objects are converted by the estimators
            return X
        except (TypeError, ValueError) as exc:
            # keeps numpy's wording ("float() argument must be a string or a real number, ...")
            raise TypeError(f"'{name}' must be an array of real numbers; {exc}") from None
    if kind not in "iufb":
        check_array(X, name, allow_empty=True, finite=False)  # raises for strings, objects, ragged
    return X


def check_labels(y, name="y", n_samples=None, *, allow_empty=True, x_name="X"):
    """Class labels: a 1-d array of ints, finite floats or strings, of length ``n_samples`` when given.

    Labels may be any sortable, comparable values (strings included); NaN, infinities and complex
    numbers are rejected.

    Returns
    -------
    ndarray
    """
    if y is None:
        raise ValueError(f"'{name}' is None: this estimator requires y to be passed, but the target y is None.")
    try:
        arr = np.asarray(y)
    except Exception as exc:  # noqa: BLE001 - ragged input
        raise TypeError(f"'{name}' must be a 1-d array of class labels; got {type(y).__name__}.") from exc
    if arr.ndim == 2 and arr.shape[1] == 1:
        import warnings

        from sklearn.exceptions import DataConversionWarning

        warnings.warn(f"A column-vector '{name}' was passed when a 1d array was expected; it is raveled.",
                      DataConversionWarning, stacklevel=3)
        arr = arr.ravel()
    if arr.ndim != 1:
        raise ValueError(f"'{name}' must be a 1-d array of class labels; got an array of shape {arr.shape}.")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"'{name}' must be a non-empty 1-d array of class labels; got an array of shape {arr.shape}.")
    if arr.dtype.kind == "c":
        raise TypeError(f"'{name}' must hold real or string class labels; got an array of dtype {arr.dtype}.")
    if arr.dtype.kind == "f":
        check_finite(arr, name)
    elif arr.dtype.kind == "O" and arr.size:
        for v in arr:
            if isinstance(v, complex) or (isinstance(v, (float, np.floating)) and not np.isfinite(v)):
                raise ValueError(f"'{name}' must hold finite real or string class labels; got {v!r}.")
    if n_samples is not None and arr.shape[0] != n_samples:
        raise ValueError(f"'{x_name}' and '{name}' must have the same length; got {n_samples} and {arr.shape[0]}.")
    return arr


def check_label_kind(y, classes, name="y"):
    """Raise ``ValueError`` if ``y`` mixes string and numeric labels with the fitted ``classes``."""
    if len(y) == 0 or classes is None or len(classes) == 0:
        return
    y_str = np.asarray(y).dtype.kind in "USO" and any(isinstance(v, str) for v in np.asarray(y).ravel()[:1000])
    c_str = np.asarray(classes).dtype.kind in "USO" and any(isinstance(v, str) for v in np.asarray(classes).ravel())
    if y_str != c_str:
        kinds = ("strings", "numbers")
        raise ValueError(
            f"'{name}' must hold labels of the kind seen in fit ({kinds[not c_str]}); got {kinds[not y_str]} "
            f"such as {np.asarray(y).ravel()[0]!r}."
        )


class LabelScoreMixin:
    """``score`` (mean accuracy) with the package's checks of ``X`` and ``y`` before predicting."""

    def score(self, X, y, sample_weight=None):
        """Mean accuracy of :meth:`predict` on ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,) or None, default=None

        Returns
        -------
        float
        """
        from sklearn.metrics import accuracy_score

        check_numeric(X, "X")
        y = check_labels(y, "y")
        pred = self.predict(X)
        if len(pred) != len(y):
            raise ValueError(f"'X' and 'y' must have the same length; got {len(pred)} and {len(y)}.")
        check_label_kind(y, getattr(self, "classes_", None), "y")
        return float(accuracy_score(y, pred, sample_weight=sample_weight))


class StreamFitMixin:
    """``fit`` and ``partial_fit`` of the streaming classifiers, over ``_partial_fit(X, y, classes, allow_empty)``.

    ``fit`` first drops the fitted attributes named in ``_fit_resets``, so that the next update starts afresh.
    """

    _fit_resets: tuple = ()

    def fit(self, X, y):
        """Forget the state and learn ``(X, y)`` in one batch.

        Parameters
        ----------
        X : array-like or dask.array.Array of shape (n_samples, n_features)
            Samples. A Dask array (chunked along rows) is fitted data-parallel on its blocks by
            :func:`~algos.continual.fit_dask`, with the same result to round-off.
        y : array-like or dask.array.Array of shape (n_samples,)
            Labels.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        if is_dask_array(X):
            return fit_dask(self, X, y)
        self._forget()
        return self._partial_fit(X, y, None, allow_empty=False)

    def _forget(self):
        """Drop the fitted attributes named in ``_fit_resets``."""
        for attr in self._fit_resets:
            self.__dict__.pop(attr, None)

    def partial_fit(self, X, y, classes=None):
        """Learn one batch (any classes, any order; labels never seen before extend ``classes_``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples; ``n_samples`` may be 0.
        y : array-like of shape (n_samples,)
            Labels.
        classes : array-like or None, default=None
            Optional labels to register now (they are predicted only once seen).

        Returns
        -------
        self
            The updated estimator.
        """
        validate_params(self)
        return self._partial_fit(X, y, classes, allow_empty=True)


def decision_from_scores(S):
    """Per-class scores ``S`` (n, K) in scikit-learn's shape: ``S[:, 1] - S[:, 0]`` if K == 2, ``S[:, 0]`` if K == 1."""
    if S.shape[1] == 2:
        return S[:, 1] - S[:, 0]
    if S.shape[1] == 1:
        return S[:, 0]
    return S


class PredictMixin:
    """``predict`` over ``_predict(X)``."""

    def predict(self, X):
        """The predicted class of each row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        ndarray of shape (n_samples,)
            Predicted class labels.
        """
        return self._predict(X)


class ScoreArgmaxMixin(PredictMixin):
    """``decision_function`` and ``predict`` (the seen class with the highest score) over ``_scores(X)``: (n, K)
    scores, ``-inf`` for unseen classes."""

    def decision_function(self, X):
        """Per-class scores (n, K) (``-inf`` for classes not seen yet); (n,) when K == 2 (``s_1 - s_0``) or K == 1.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        ndarray of shape (n_samples, n_classes) or (n_samples,)
            Scores, one column per class (see above for the shape with one or two classes).
        """
        return decision_from_scores(self._scores(X))

    def _predict(self, X):
        S = self._scores(X)
        return self.classes_[np.argmax(S, axis=1)]


class LogProbaMixin(ScoreArgmaxMixin):
    """The prediction methods over ``_log_proba(X)``, the log class probabilities (scores too unless ``_scores``)."""

    def _scores(self, X):
        return self._log_proba(X)

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba` (``-inf`` for classes not seen yet).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Logarithm of :meth:`predict_proba`.
        """
        return self._log_proba(X)

    def predict_proba(self, X):
        """Tempered softmax probabilities of the seen classes (0 for the others; rows sum to 1).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Class probabilities; rows sum to 1.
        """
        return np.exp(self._log_proba(X))
