r"""The scikit-learn classifier over the model of :mod:`._model`: :class:`LowRankSoftmax`, a softmax
regression with an optional low-rank adapter, trained by the same local gradient descent as a client;
re-exported by :mod:`._model`.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import (
    RANDOM_STATE_CONSTRAINTS,
    check_random_state,
    validate_params,
)
from ._model import _softmax, default_trainable, effective_weights, init_params, local_train, predict_logits

__all__ = ["LowRankSoftmax"]


class LowRankSoftmax(ClassifierMixin, BaseEstimator):
    r"""Softmax regression on fixed features, optionally as a low-rank adapter (LoRA) on a frozen head.

    ``rank=None`` (or 0): multinomial logistic regression with an ``l2`` penalty, weights ``W`` and biases
    ``b`` trained by full-batch gradient descent. ``rank=r``: the head ``W`` is frozen at zero (a stand-in
    for a pretrained backbone head) and the adapter ``A`` (d, r), ``B`` (r, C) and the biases are trained:
    :math:`\text{logits} = \phi(X)(W + AB) + b` with ``A`` Gaussian and ``B = 0`` at start. This is the base
    model of :class:`PotaraClassifier` and its baselines (which read ``rank``, ``l2``, ``lr`` and
    ``batch_size`` from it).

    Parameters
    ----------
    rank : None or int, default=None
    base_features : None or callable, default=None
        Fixed feature map :math:`\phi` applied to ``X`` before the head (``None``: identity).
    l2 : float, default=1e-3
    lr : float, default=0.5
        Step size. In :meth:`fit` it is capped at :math:`1/L`, with :math:`L = \frac12\lambda_{\max}(X^\top
        X/n) + \ell_2` an upper bound on the smoothness constant of the objective in ``W`` (so unscaled
        features cannot make GD diverge); the federated estimators use ``lr`` as given (scale features).
    max_iter : int, default=100
        GD epochs (full batch: steps).
    batch_size : None or int, default=None
    random_state : None, int or Generator, default=None

    Attributes
    ----------
    classes_, n_features_in_, params_ (dict), coef_ (effective weights, (d, C)), intercept_ (C,), lr_

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> LowRankSoftmax(max_iter=300).fit(X, y).score(X, y) > 0.9
    True
    """

    _parameter_constraints: dict = {
        "base_features": [callable, None],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "l2": [Interval(Real, 0, None, closed="left")],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "rank": [Interval(Integral, 0, None, closed="left"), None],
    }

    def __init__(self, *, rank=None, base_features=None, l2=1e-3, lr=0.5, max_iter=100, batch_size=None,
                 random_state=None):
        self.rank = rank
        self.base_features = base_features
        self.l2 = l2
        self.lr = lr
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.random_state = random_state

    def _rank(self):
        if self.rank is None:
            return 0
        return int(self.rank)

    def _features(self, X):
        if self.base_features is None:
            return X
        Z = np.asarray(self.base_features(X), dtype=np.float64)
        if Z.ndim != 2 or Z.shape[0] != X.shape[0]:
            raise ValueError(f"'base_features' must map (n, d) to (n, k); got shape {Z.shape}.")
        return Z

    def _check_input(self, X, y=None, reset=True):
        """scikit-learn's ``validate_data``, with its message for non-numeric ``X`` naming ``X``."""
        try:
            if y is None:
                return validate_data(self, X, dtype=np.float64, order="C", reset=reset)
            return validate_data(self, X, y, dtype=np.float64, order="C", reset=reset)
        except ValueError as exc:
            if "could not convert" in str(exc):
                raise ValueError(f"'X' must contain real numbers; {exc}") from exc
            raise

    def fit(self, X, y):
        r"""Fit the model on one data set by gradient descent.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training features.
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        if y is None:
            raise ValueError("'y' is None: LowRankSoftmax requires y to be passed, but the target y is None.")
        X, y = self._check_input(X, y)
        check_classification_targets(y)
        r = self._rank()
        l2 = float(self.l2)
        lr = float(self.lr)
        epochs = int(self.max_iter)
        self.classes_, yi = np.unique(y, return_inverse=True)
        Z = self._features(X)
        C = max(len(self.classes_), 2)
        n = Z.shape[0]
        with np.errstate(over="ignore", invalid="ignore"):
            gram = Z.T @ Z / n
        if not np.all(np.isfinite(gram)):
            raise ValueError(f"'X' has entries too large for the step-size bound (max |x| = "
                             f"{float(np.max(np.abs(Z))):g}; X^T X overflows): standardise the features.")
        L = 0.5 * float(np.linalg.eigvalsh(gram)[-1]) + l2 if Z.shape[1] else l2
        self.lr_ = min(lr, 1.0 / L) if L > 0 else lr
        rng = check_random_state(self.random_state)
        params = init_params(Z.shape[1], C, rank=r, random_state=rng)
        self.params_ = local_train(params, Z, yi, n_classes=C, epochs=epochs, lr=self.lr_, l2=l2,
                                   trainable=default_trainable(params), batch_size=self.batch_size,
                                   random_state=rng)
        self.coef_ = effective_weights(self.params_)
        self.intercept_ = self.params_["b"]
        self.n_iter_ = epochs
        return self

    def _logits(self, X):
        check_is_fitted(self)
        X = self._check_input(X, reset=False)
        Z = predict_logits(self.params_, self._features(X))
        return Z[:, : max(len(self.classes_), 2)]

    def decision_function(self, X):
        """Logits ``(n, C)``; for two classes the margin of the second class, shape ``(n,)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.

        Returns
        -------
        ndarray of shape (n_samples, n_classes) or (n_samples,)
            Logits; the margin of the second class for two classes.
        """
        Z = self._logits(X)
        if len(self.classes_) <= 2:
            return Z[:, 1] - Z[:, 0]
        return Z

    def predict_proba(self, X):
        r"""Class probabilities (softmax of the logits).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities, in the order of ``classes_``.
        """
        P = _softmax(self._logits(X))[0]
        return P[:, : len(self.classes_)] if len(self.classes_) > 1 else np.ones((P.shape[0], 1))

    def predict_log_proba(self, X):
        r"""Logarithm of the class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Log-probabilities, in the order of ``classes_``.
        """
        return np.log(self.predict_proba(X))

    def predict(self, X):
        r"""Predicted class of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.

        Returns
        -------
        ndarray of shape (n_samples,)
            Predicted labels.
        """
        Z = self._logits(X)
        if len(self.classes_) == 1:
            return np.full(Z.shape[0], self.classes_[0])
        return self.classes_[np.argmax(Z, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        return tags
