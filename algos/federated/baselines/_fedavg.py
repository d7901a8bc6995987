"""The FedAvg family: local only, FedAvg, FedAvg + fine-tune, fixed mixing and the oracle grid (see
:mod:`algos.federated.baselines`)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval

from ..._validation import RANDOM_STATE_CONSTRAINTS, validate_params
from .._low_rank_softmax import LowRankSoftmax
from .._model import predict_logits
from .._potara import client_generator, merge_models
from ._base import _FLBaseline, _round_constraints, _RoundBaseline

__all__ = [
    "LocalOnlyClassifier",
    "FedAvgClassifier",
    "FedAvgFTClassifier",
    "FixedMixClassifier",
    "OracleGridClassifier",
]


class LocalOnlyClassifier(_FLBaseline):
    """Each client trains its own model from :math:`\\theta^0` for ``epochs`` epochs; no communication.

    Parameters
    ----------
    epochs : int, default=100
        Local training epochs of each client, at least 1.
    base_estimator : LowRankSoftmax or None, default=None
        Base model; its ``rank``, ``l2``, ``lr``, ``batch_size`` and ``base_features`` are used
        (``None``: ``LowRankSoftmax()``).
    random_state : None, int, SeedSequence or Generator, default=None
        Seed of the initial parameters, the client sampling and the mini-batches.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True); X = (X - X.mean(0)) / X.std(0)
    >>> LocalOnlyClassifier(epochs=50).fit(X, y, np.arange(150) % 3).score(X, y, np.arange(150) % 3) > 0.8
    True
    """

    _parameter_constraints: dict = {
        "base_estimator": [LowRankSoftmax, None],
        "epochs": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINTS,
    }

    def __init__(self, *, base_estimator=None, epochs=100, random_state=None):
        self.base_estimator = base_estimator
        self.epochs = epochs
        self.random_state = random_state

    def _fit(self, X, y, client_ids):
        h, Xs, ys, C, theta0, _ = self._setup(X, y, client_ids)
        epochs = int(self.epochs)
        self._deploy(lambda m: self._finetune(h, theta0, Xs[m], ys[m], C, epochs, m), len(Xs))
        self.federated_model_ = theta0
        self.history_ = []


class FedAvgClassifier(_RoundBaseline):
    """FedAvg (McMahan et al. 2017): ``n_rounds`` rounds of ``local_epochs`` local epochs, weighted mean;
    every client uses :math:`\\theta^R`.

    Parameters
    ----------
    base_estimator : LowRankSoftmax or None, default=None
        Base model; its ``rank``, ``l2``, ``lr``, ``batch_size`` and ``base_features`` are used
        (``None``: ``LowRankSoftmax()``).
    n_rounds : int, default=50
        Number of federated rounds, at least 1.
    local_epochs : int, default=1
        Local epochs of each sampled client per round, at least 1.
    client_fraction : float, default=1.0
        Fraction of the clients sampled each round, in (0, 1].
    random_state : None, int, SeedSequence or Generator, default=None
        Seed of the initial parameters, the client sampling and the mini-batches.
    warm_start : bool, default=False
        Whether :meth:`fit` resumes the rounds of the previous fit (same clients, classes and features):
        it starts from that fit's federated model, round generator and per-client state and runs up to
        ``n_rounds`` rounds in all (``n_rounds_`` holds the rounds completed). With an int
        ``random_state``, ``n_rounds=5`` then a warm ``n_rounds=10`` equals one fit of 10 rounds.

    Attributes
    ----------
    n_rounds_ : int
        Federated rounds completed (fewer than ``n_rounds`` after an interrupt).
    interrupted_ : bool
        Whether an interrupt (Ctrl-C, ``KeyboardInterrupt``) stopped the rounds: the estimator is then
        fitted with the federated model of the last completed round and an ``InterruptedFitWarning``
        says so; a second interrupt aborts the fit.
    """

    _parameter_constraints: dict = _round_constraints()

    def _fit(self, X, y, client_ids):
        h, Xs, ys, C, theta0, rng = self._setup(X, y, client_ids)
        self._rounds(h, Xs, ys, theta0, rng)


class FedAvgFTClassifier(_RoundBaseline):
    """FedAvg, then each client fine-tunes :math:`\\theta^R` for ``finetune_epochs`` epochs (Potara's
    local model; Potara with :math:`\\lambda = 0`).

    Parameters
    ----------
    finetune_epochs : int, default=10
        Epochs of each client's fine-tuning of the federated model, at least 1.
    base_estimator, n_rounds, local_epochs, client_fraction, random_state, warm_start
        As for :class:`FedAvgClassifier`.

    Attributes
    ----------
    n_rounds_, interrupted_
        As for :class:`FedAvgClassifier`.
    """

    _parameter_constraints: dict = _round_constraints(finetune_epochs=[Interval(Integral, 0, None, closed="left")])

    def __init__(self, *, base_estimator=None, n_rounds=50, local_epochs=1, finetune_epochs=10, client_fraction=1.0,
                 random_state=None, warm_start=False):
        self.finetune_epochs = finetune_epochs
        super().__init__(base_estimator=base_estimator, n_rounds=n_rounds, local_epochs=local_epochs,
                         client_fraction=client_fraction, random_state=random_state, warm_start=warm_start)

    def _fit_ft(self, X, y, client_ids):
        h, Xs, ys, C, theta0, rng = self._setup(X, y, client_ids)
        federated = self._rounds(h, Xs, ys, theta0, rng)
        ft = int(self.finetune_epochs)
        self.local_models_ = {self._cid(m): self._finetune(h, federated, Xs[m], ys[m], C, ft, m)
                              for m in range(len(Xs))}
        return h, Xs, ys, C

    def _fit(self, X, y, client_ids):
        self._fit_ft(X, y, client_ids)
        self.personalized_models_ = dict(self.local_models_)


class FixedMixClassifier(FedAvgFTClassifier):
    r""":math:`\lambda\theta_F + (1-\lambda)\theta_{L,i}` with a fixed ``lam`` for every client.

    Parameters
    ----------
    lam : float, default=0.5
        Weight :math:`\lambda` of the federated model, in [0, 1].
    base_estimator, n_rounds, local_epochs, finetune_epochs, client_fraction, random_state, warm_start
        As for :class:`FedAvgFTClassifier`.
    """

    _parameter_constraints: dict = _round_constraints(finetune_epochs=[Interval(Integral, 0, None, closed="left")],
                                                      lam=[Interval(Real, 0, 1, closed="both")])

    def __init__(self, *, lam=0.5, base_estimator=None, n_rounds=50, local_epochs=1, finetune_epochs=10,
                 client_fraction=1.0, random_state=None, warm_start=False):
        self.lam = lam
        super().__init__(base_estimator=base_estimator, n_rounds=n_rounds, local_epochs=local_epochs,
                         finetune_epochs=finetune_epochs, client_fraction=client_fraction,
                         random_state=random_state, warm_start=warm_start)

    def _fit(self, X, y, client_ids):
        lam = float(self.lam)
        self._fit_ft(X, y, client_ids)
        self.personalized_models_ = {c: merge_models(self.federated_model_, p, lam)
                                     for c, p in self.local_models_.items()}


class OracleGridClassifier(FedAvgFTClassifier):
    r"""Per-client :math:`\lambda` from ``grid`` maximising accuracy (ties: log-likelihood) on validation
    data: the ``X_val, y_val, val_client_ids`` passed to :meth:`fit` (an upper reference when these are
    the test data), else a held-out ``val_fraction`` of each client's training data (the local model is
    then fine-tuned on the rest).

    Parameters
    ----------
    grid : int or array-like of float, default=11
        Candidate values of :math:`\lambda`: that many equally spaced points of [0, 1], or the values.
    val_fraction : float, default=0.3
        Fraction of each client's training rows held out for the choice when no validation data
        are passed to :meth:`fit`, in (0, 1).
    base_estimator, n_rounds, local_epochs, finetune_epochs, client_fraction, random_state, warm_start
        As for :class:`FedAvgFTClassifier`.

    Attributes
    ----------
    mixing_weights_ : dict client -> chosen lambda
    """

    _parameter_constraints: dict = {
        **_round_constraints(finetune_epochs=[Interval(Integral, 0, None, closed="left")],
                             grid=[Interval(Integral, 2, None, closed="left"), "array-like"]),
        "val_fraction": [Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(self, *, grid=11, val_fraction=0.3, base_estimator=None, n_rounds=50, local_epochs=1,
                 finetune_epochs=10, client_fraction=1.0, random_state=None, warm_start=False):
        self.grid = grid
        self.val_fraction = val_fraction
        super().__init__(base_estimator=base_estimator, n_rounds=n_rounds, local_epochs=local_epochs,
                         finetune_epochs=finetune_epochs, client_fraction=client_fraction,
                         random_state=random_state, warm_start=warm_start)

    def fit(self, X, y, client_ids=None, X_val=None, y_val=None, val_client_ids=None):
        r"""Train the federated model and every client's deployed model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows of all clients.
        y : array-like of shape (n_samples,)
            Class labels.
        client_ids : array-like of shape (n_samples,) or None, default=None
            Client of each row (integers or strings). ``None``: one client, every row is client ``0``.
        X_val : array-like of shape (n_val, n_features), optional
            Validation rows used to choose each client's :math:`\lambda` (with ``y_val`` and
            ``val_client_ids``); without them a ``val_fraction`` of the training rows is held out.
        y_val : array-like of shape (n_val,), optional
            Validation labels.
        val_client_ids : array-like of shape (n_val,), optional
            Client of each validation row (``None``: allowed when the model has one client).

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        if isinstance(self.grid, Integral):
            grid = np.linspace(0.0, 1.0, int(self.grid))
        else:
            grid = np.asarray(self.grid, dtype=np.float64)
            # the part of the 'grid' rule the constraints cannot say (they say "an int >= 2 or array-like")
            if grid.ndim != 1 or grid.size == 0 or not np.all((grid >= 0.0) & (grid <= 1.0)):
                raise ValueError(f"'grid' must be an int >= 2 or a non-empty 1-d array of values in [0, 1]; "
                                 f"got {self.grid!r}.")
        if X_val is None:
            vals = self._fit_held_out(X, y, client_ids)
        else:
            self._fit_ft(X, y, client_ids)
            vals = self._given_validation(X_val, y_val, val_client_ids)
        self.mixing_weights_ = {}
        for m in range(len(self.clients_)):
            cid = self._cid(m)
            best = self._best_lambda(cid, grid, *vals[m]) if m in vals else 1.0
            self.mixing_weights_[cid] = best
            self.personalized_models_[cid] = merge_models(self.federated_model_, self.local_models_[cid], best)
        return self

    def _fit_held_out(self, X, y, client_ids):
        """Fit with each client's local model fine-tuned on its rows less a held-out ``val_fraction``;
        returns the held-out rows ``{client index: (X, y)}``."""
        vf = float(self.val_fraction)
        h, Xs, ys, C = self._fit_ft(X, y, client_ids)
        ft = int(self.finetune_epochs)
        vals = {}
        for m in range(len(Xs)):
            n = len(ys[m])
            perm = client_generator(self._seed(), self._cid(m), stream=2).permutation(n)
            k = min(max(1, int(round(vf * n))), n - 1)
            va, tr = perm[:k], perm[k:]
            self.local_models_[self._cid(m)] = self._finetune(h, self.federated_model_, Xs[m][tr], ys[m][tr], C, ft, m)
            vals[m] = (Xs[m][va], ys[m][va])
        return vals

    def _given_validation(self, X_val, y_val, val_client_ids):
        """The checked validation rows passed to :meth:`fit`, ``{client index: (X, encoded y)}``."""
        Xv = self._features(self._check_X(X_val, "X_val"))
        pos = self._client_index(val_client_ids, Xv.shape[0], name="val_client_ids")
        y_val = np.asarray(y_val)
        if y_val.shape != (Xv.shape[0],):
            raise ValueError(f"'y_val' must have one label per row of X_val ({Xv.shape[0]}); got shape {y_val.shape}.")
        unseen = ~np.isin(y_val, self.classes_)
        if unseen.any():
            raise ValueError(f"'y_val' contains labels not seen in fit: {sorted(set(y_val[unseen].tolist()))[:5]}.")
        yv = np.searchsorted(self.classes_, y_val)
        return {m: (Xv[pos == m], yv[pos == m]) for m in range(len(self.clients_)) if np.any(pos == m)}

    def _best_lambda(self, cid, grid, Xv_m, yv_m):
        """The grid value whose merged model scores best on ``(Xv_m, yv_m)``: accuracy, ties by log-likelihood."""
        best, key = 1.0, None
        for lam in grid:
            Z = predict_logits(merge_models(self.federated_model_, self.local_models_[cid], float(lam)), Xv_m)
            Z = Z - Z.max(1, keepdims=True)
            ll = float(np.mean(Z[np.arange(len(yv_m)), yv_m] - np.log(np.exp(Z).sum(1))))
            score = (float(np.mean(Z.argmax(1) == yv_m)), ll)
            if key is None or score > key:
                best, key = float(lam), score
        return best

