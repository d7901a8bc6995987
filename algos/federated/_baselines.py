r"""Personalised-FL baselines with Potara's interface: ``fit(X, y, client_ids)``, ``predict(X, client_ids)``.

Definitions follow federated reconstruction notes, section 3 (on the softmax head / low-rank adapter of :mod:`._model`, full-batch
GD, FedAvg weights :math:`n_i`, client sampling and communication accounting shared with
:class:`PotaraClassifier` through :class:`FederatedClassifierBase`):

* :class:`LocalOnlyClassifier` -- each client trains alone from :math:`\theta^0`.
* :class:`FedAvgClassifier` -- McMahan et al. 2017; deploys :math:`\theta^R` everywhere.
* :class:`FedAvgFTClassifier` -- FedAvg then ``finetune_epochs`` local epochs (= Potara's
  :math:`\theta_L`, i.e. Potara with :math:`\lambda = 0`).
* :class:`FixedMixClassifier` -- :math:`\lambda\theta_F + (1-\lambda)\theta_L` with a fixed :math:`\lambda`.
* :class:`OracleGridClassifier` -- :math:`\lambda` per client from the grid :math:`\{0, 0.1, \dots, 1\}` by
  accuracy on validation data (given, or held out from the client's training data).
* :class:`APFLClassifier` -- Deng, Kamani, Mahdavi 2020 (adaptive mixing :math:`\alpha_i`).
* :class:`DittoClassifier` -- Li, Hu, Beirami, Smith 2021 (proximal personal models).
* :class:`PFedMeClassifier` -- T. Dinh, Tran, Nguyen 2020 (Moreau-envelope personalisation).
* :class:`FedRepClassifier` -- Collins et al. 2021 (shared body ``A``, local head ``B, b``).
* :class:`FedITClassifier` -- FedAvg of the LoRA factors ``A`` and ``B`` separately (Zhang et al. 2024).
* :class:`FFALoRAClassifier` -- ``A`` frozen at its random init, only ``B`` trained and averaged
  (Sun et al. 2024).
* :class:`FedSALoRAClassifier` -- ``A`` averaged, ``B`` kept local (Guo et al. 2024).

The LoRA baselines (FedRep, FedIT, FFA-LoRA, FedSA-LoRA) need an adapter: they use the base estimator's
``rank``, or their own ``rank`` parameter when the base has none (the head ``W`` is then frozen at 0).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_option, check_scalar_float, check_scalar_int
from ._model import _train_clients, init_params, local_train, loss_grad
from ._potara import FederatedClassifierBase, client_generator, merge_models
from numbers import Integral, Real
from sklearn.utils._param_validation import Interval
from .._validation import OrderedStrOptions, RANDOM_STATE_CONSTRAINTS, validate_params
from ._model import LowRankSoftmax

__all__ = [
    "LocalOnlyClassifier",
    "FedAvgClassifier",
    "FedAvgFTClassifier",
    "FixedMixClassifier",
    "OracleGridClassifier",
    "APFLClassifier",
    "DittoClassifier",
    "PFedMeClassifier",
    "FedRepClassifier",
    "FedITClassifier",
    "FFALoRAClassifier",
    "FedSALoRAClassifier",
    "BASELINES",
]


class _FLBaseline(FederatedClassifierBase):
    """Common settings and set-up of the baselines (not an estimator by itself)."""

    _needs_rank = False

    def _settings(self):
        h = self._base()
        # zero rounds or zero local epochs would deploy the untrained initial model: rejected
        h["n_rounds"] = check_scalar_int(self.n_rounds, "n_rounds", low=1) if hasattr(self, "n_rounds") else 0
        h["local_epochs"] = check_scalar_int(getattr(self, "local_epochs", 1), "local_epochs", low=1)
        h["client_fraction"] = check_scalar_float(getattr(self, "client_fraction", 1.0), "client_fraction",
                                                  low=0.0, high=1.0, closed="right")
        if self._needs_rank and not h["rank"]:
            h["rank"] = check_scalar_int(self.rank, "rank", low=1)
        return h

    def _setup(self, X, y, client_ids):
        h = self._settings()
        Xs, ys = self._split(X, y, client_ids)
        C = len(self.classes_)
        seed = self._seed()
        theta0 = init_params(Xs[0].shape[1], C, rank=h["rank"], random_state=client_generator(seed, "__server__"))
        rng = client_generator(seed, "__rounds__")
        self.personalized_models_ = {}
        return h, Xs, ys, C, theta0, rng

    def _trainable(self, theta):
        return ("b", "A", "B") if "A" in theta else ("W", "b")

    def _run_fedavg(self, h, Xs, ys, theta0, rng, trainable=None, **kw):
        trainable = trainable or self._trainable(theta0)
        theta, hist = self._fedavg(theta0, Xs, ys, n_rounds=h["n_rounds"], local_epochs=h["local_epochs"],
                                   trainable=trainable, client_fraction=h["client_fraction"], lr=h["lr"], l2=h["l2"],
                                   batch_size=h["batch_size"], rng=rng, eval_fn=self._global_accuracy_fn(Xs, ys), **kw)
        return theta, hist

    def _finetune(self, h, theta, X, y, C, epochs, m):
        rng = client_generator(self._seed(), self._cid(m), stream=1)
        return local_train(theta, X, y, n_classes=C, epochs=epochs, lr=h["lr"], l2=h["l2"],
                           trainable=self._trainable(theta), batch_size=h["batch_size"], random_state=rng)


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

    def __init__(self, base_estimator=None, epochs=100, random_state=None):
        self.base_estimator = base_estimator
        self.epochs = epochs
        self.random_state = random_state

    def fit(self, X, y, client_ids):
        r"""Train the federated model and every client's deployed model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows of all clients.
        y : array-like of shape (n_samples,)
            Class labels.
        client_ids : array-like of shape (n_samples,)
            Client of each row.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        h, Xs, ys, C, theta0, _ = self._setup(X, y, client_ids)
        epochs = check_scalar_int(self.epochs, "epochs", low=1)
        for m in range(len(Xs)):
            self.personalized_models_[self._cid(m)] = self._finetune(h, theta0, Xs[m], ys[m], C, epochs, m)
        self.federated_model_ = theta0
        self.history_ = []
        return self


class FedAvgClassifier(_FLBaseline):
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

    _parameter_constraints: dict = {
        "base_estimator": [LowRankSoftmax, None],
        "client_fraction": [Interval(Real, 0, 1, closed="right")],
        "local_epochs": [Interval(Integral, 1, None, closed="left")],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "warm_start": ["boolean"],
    }

    def __init__(self, base_estimator=None, n_rounds=50, local_epochs=1, client_fraction=1.0, random_state=None, warm_start=False):
        self.base_estimator = base_estimator
        self.n_rounds = n_rounds
        self.local_epochs = local_epochs
        self.client_fraction = client_fraction
        self.random_state = random_state
        self.warm_start = warm_start

    def fit(self, X, y, client_ids):
        r"""Train the federated model and every client's deployed model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows of all clients.
        y : array-like of shape (n_samples,)
            Class labels.
        client_ids : array-like of shape (n_samples,)
            Client of each row.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        h, Xs, ys, C, theta0, rng = self._setup(X, y, client_ids)
        self.federated_model_, self.history_ = self._run_fedavg(h, Xs, ys, theta0, rng)
        self._final_broadcast(self.history_, theta0, self._trainable(theta0), len(Xs))
        return self


class FedAvgFTClassifier(_FLBaseline):
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

    _parameter_constraints: dict = {
        "base_estimator": [LowRankSoftmax, None],
        "client_fraction": [Interval(Real, 0, 1, closed="right")],
        "finetune_epochs": [Interval(Integral, 0, None, closed="left")],
        "local_epochs": [Interval(Integral, 1, None, closed="left")],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "warm_start": ["boolean"],
    }

    def __init__(self, base_estimator=None, n_rounds=50, local_epochs=1, finetune_epochs=10, client_fraction=1.0,
                 random_state=None, warm_start=False):
        self.base_estimator = base_estimator
        self.n_rounds = n_rounds
        self.local_epochs = local_epochs
        self.finetune_epochs = finetune_epochs
        self.client_fraction = client_fraction
        self.random_state = random_state
        self.warm_start = warm_start

    def _fit_ft(self, X, y, client_ids):
        h, Xs, ys, C, theta0, rng = self._setup(X, y, client_ids)
        self.federated_model_, self.history_ = self._run_fedavg(h, Xs, ys, theta0, rng)
        self._final_broadcast(self.history_, theta0, self._trainable(theta0), len(Xs))
        ft = check_scalar_int(self.finetune_epochs, "finetune_epochs", low=0)
        self.local_models_ = {self._cid(m): self._finetune(h, self.federated_model_, Xs[m], ys[m], C, ft, m)
                              for m in range(len(Xs))}
        return h, Xs, ys, C

    def fit(self, X, y, client_ids):
        r"""Train the federated model and every client's deployed model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows of all clients.
        y : array-like of shape (n_samples,)
            Class labels.
        client_ids : array-like of shape (n_samples,)
            Client of each row.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        self._fit_ft(X, y, client_ids)
        self.personalized_models_ = dict(self.local_models_)
        return self


class FixedMixClassifier(FedAvgFTClassifier):
    r""":math:`\lambda\theta_F + (1-\lambda)\theta_{L,i}` with a fixed ``lam`` for every client.

    Parameters
    ----------
    lam : float, default=0.5
        Weight :math:`\lambda` of the federated model, in [0, 1].
    base_estimator, n_rounds, local_epochs, finetune_epochs, client_fraction, random_state, warm_start
        As for :class:`FedAvgFTClassifier`.
    """

    _parameter_constraints: dict = {
        "base_estimator": [LowRankSoftmax, None],
        "client_fraction": [Interval(Real, 0, 1, closed="right")],
        "finetune_epochs": [Interval(Integral, 0, None, closed="left")],
        "lam": [Interval(Real, 0, 1, closed="both")],
        "local_epochs": [Interval(Integral, 1, None, closed="left")],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "warm_start": ["boolean"],
    }

    def __init__(self, lam=0.5, base_estimator=None, n_rounds=50, local_epochs=1, finetune_epochs=10,
                 client_fraction=1.0, random_state=None, warm_start=False):
        self.lam = lam
        super().__init__(base_estimator, n_rounds, local_epochs, finetune_epochs, client_fraction, random_state,
                         warm_start)

    def fit(self, X, y, client_ids):
        r"""Train the federated model and every client's deployed model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows of all clients.
        y : array-like of shape (n_samples,)
            Class labels.
        client_ids : array-like of shape (n_samples,)
            Client of each row.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        lam = check_scalar_float(self.lam, "lam", low=0.0, high=1.0)
        self._fit_ft(X, y, client_ids)
        self.personalized_models_ = {c: merge_models(self.federated_model_, p, lam) for c, p in self.local_models_.items()}
        return self


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
        "base_estimator": [LowRankSoftmax, None],
        "client_fraction": [Interval(Real, 0, 1, closed="right")],
        "finetune_epochs": [Interval(Integral, 0, None, closed="left")],
        "grid": [Interval(Integral, 2, None, closed="left"), "array-like"],
        "local_epochs": [Interval(Integral, 1, None, closed="left")],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "warm_start": ["boolean"],
        "val_fraction": [Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(self, grid=11, val_fraction=0.3, base_estimator=None, n_rounds=50, local_epochs=1,
                 finetune_epochs=10, client_fraction=1.0, random_state=None, warm_start=False):
        self.grid = grid
        self.val_fraction = val_fraction
        super().__init__(base_estimator, n_rounds, local_epochs, finetune_epochs, client_fraction, random_state,
                         warm_start)

    def fit(self, X, y, client_ids, X_val=None, y_val=None, val_client_ids=None):
        r"""Train the federated model and every client's deployed model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows of all clients.
        y : array-like of shape (n_samples,)
            Class labels.
        client_ids : array-like of shape (n_samples,)
            Client of each row.
        X_val : array-like of shape (n_val, n_features), optional
            Validation rows used to choose each client's :math:`\lambda` (with ``y_val`` and
            ``val_client_ids``); without them a ``val_fraction`` of the training rows is held out.
        y_val : array-like of shape (n_val,), optional
            Validation labels.
        val_client_ids : array-like of shape (n_val,), optional
            Client of each validation row.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        from ._model import predict_logits

        G = check_scalar_int(self.grid, "grid", low=2)
        grid = np.linspace(0.0, 1.0, G)
        if X_val is None:
            vf = check_scalar_float(self.val_fraction, "val_fraction", low=0.0, high=1.0, closed="neither")
            h, Xs, ys, C = self._fit_ft(X, y, client_ids)
            ft = check_scalar_int(self.finetune_epochs, "finetune_epochs", low=0)
            vals = {}
            for m in range(len(Xs)):
                n = len(ys[m])
                perm = client_generator(self._seed(), self._cid(m), stream=2).permutation(n)
                k = min(max(1, int(round(vf * n))), n - 1)
                va, tr = perm[:k], perm[k:]
                self.local_models_[self._cid(m)] = self._finetune(h, self.federated_model_, Xs[m][tr], ys[m][tr], C, ft, m)
                vals[m] = (Xs[m][va], ys[m][va])
        else:
            h, Xs, ys, C = self._fit_ft(X, y, client_ids)
            Xv = self._features(self._check_X(X_val, "X_val"))
            pos = self._client_index(val_client_ids, Xv.shape[0])
            y_val = np.asarray(y_val)
            if y_val.shape != (Xv.shape[0],):
                raise ValueError(f"'y_val' must have one label per row of X_val ({Xv.shape[0]}); got shape {y_val.shape}.")
            unseen = ~np.isin(y_val, self.classes_)
            if unseen.any():
                raise ValueError(f"'y_val' contains labels not seen in fit: {sorted(set(y_val[unseen].tolist()))[:5]}.")
            yv = np.searchsorted(self.classes_, y_val)
            vals = {m: (Xv[pos == m], yv[pos == m]) for m in range(len(Xs)) if np.any(pos == m)}
        self.mixing_weights_ = {}
        for m in range(len(Xs)):
            cid = self._cid(m)
            best, key = 1.0, None
            if m in vals:
                Xv_m, yv_m = vals[m]
                for lam in grid:
                    Z = predict_logits(merge_models(self.federated_model_, self.local_models_[cid], float(lam)), Xv_m)
                    Z = Z - Z.max(1, keepdims=True)
                    ll = float(np.mean(Z[np.arange(len(yv_m)), yv_m] - np.log(np.exp(Z).sum(1))))
                    score = (float(np.mean(Z.argmax(1) == yv_m)), ll)
                    if key is None or score > key:
                        best, key = float(lam), score
            self.mixing_weights_[cid] = best
            self.personalized_models_[cid] = merge_models(self.federated_model_, self.local_models_[cid], best)
        return self


class APFLClassifier(_FLBaseline):
    r"""APFL (Deng, Kamani, Mahdavi 2020): per local step :math:`w \leftarrow w - \eta\nabla L_i(w)`,
    :math:`v_i \leftarrow v_i - \eta\alpha_i\nabla L_i(\bar v_i)`, :math:`\alpha_i \leftarrow
    \mathrm{clip}(\alpha_i - \eta_\alpha\langle v_i - w, \nabla L_i(\bar v_i)\rangle, 0, 1)` with
    :math:`\bar v_i = \alpha_i v_i + (1-\alpha_i)w`; the server averages :math:`w`; deployed:
    :math:`\alpha_i v_i + (1-\alpha_i)\theta^R`.

    Attributes: ``alphas_`` (dict client -> alpha).

    Parameters
    ----------
    alpha0 : float, default=0.5
        Initial mixing weight :math:`\alpha_i` of every client, in [0, 1].
    lr_alpha : float, default=0.1
        Step size :math:`\eta_\alpha` of the mixing weights, positive.
    base_estimator, n_rounds, local_epochs, client_fraction, random_state, warm_start
        As for :class:`FedAvgClassifier`.
    """

    _parameter_constraints: dict = {
        "alpha0": [Interval(Real, 0, 1, closed="both")],
        "base_estimator": [LowRankSoftmax, None],
        "client_fraction": [Interval(Real, 0, 1, closed="right")],
        "local_epochs": [Interval(Integral, 1, None, closed="left")],
        "lr_alpha": [Interval(Real, 0, None, closed="left")],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "warm_start": ["boolean"],
    }

    def __init__(self, alpha0=0.5, lr_alpha=0.1, base_estimator=None, n_rounds=50, local_epochs=1,
                 client_fraction=1.0, random_state=None, warm_start=False):
        self.alpha0 = alpha0
        self.lr_alpha = lr_alpha
        self.base_estimator = base_estimator
        self.n_rounds = n_rounds
        self.local_epochs = local_epochs
        self.client_fraction = client_fraction
        self.random_state = random_state
        self.warm_start = warm_start

    def fit(self, X, y, client_ids):
        r"""Train the federated model and every client's deployed model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows of all clients.
        y : array-like of shape (n_samples,)
            Class labels.
        client_ids : array-like of shape (n_samples,)
            Client of each row.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        h, Xs, ys, C, theta0, rng = self._setup(X, y, client_ids)
        a0 = check_scalar_float(self.alpha0, "alpha0", low=0.0, high=1.0)
        la = check_scalar_float(self.lr_alpha, "lr_alpha", low=0.0)
        keys = self._trainable(theta0)
        v = [dict(theta0) for _ in Xs]
        alpha = np.full(len(Xs), a0)
        lr, l2 = h["lr"], h["l2"]

        def update(t, theta, sel):
            out = []
            for i in sel:
                w = {k: a.copy() for k, a in theta.items()}
                for _ in range(h["local_epochs"]):
                    _, gw = loss_grad(w, Xs[i], ys[i], n_classes=C, l2=l2, trainable=keys)
                    vbar = {k: alpha[i] * v[i][k] + (1 - alpha[i]) * w[k] for k in w}
                    _, gv = loss_grad(vbar, Xs[i], ys[i], n_classes=C, l2=l2, trainable=keys)
                    inner = sum(float(np.sum((v[i][k] - w[k]) * gv[k])) for k in keys)
                    v[i] = {k: (v[i][k] - lr * alpha[i] * gv[k] if k in keys else v[i][k]) for k in w}
                    alpha[i] = float(np.clip(alpha[i] - la * inner, 0.0, 1.0))
                    w = {k: (w[k] - lr * gw[k] if k in keys else w[k]) for k in w}
                out.append(w)
            return out

        self.federated_model_, self.history_ = self._run_fedavg(h, Xs, ys, theta0, rng, local_update=update,
                                                                client_state=(v, alpha))
        self._final_broadcast(self.history_, theta0, keys, len(Xs))
        self.alphas_ = {}
        for m in range(len(Xs)):
            cid = self._cid(m)
            self.alphas_[cid] = float(alpha[m])
            self.personalized_models_[cid] = {k: alpha[m] * v[m][k] + (1 - alpha[m]) * self.federated_model_[k]
                                              for k in theta0}
        return self


class DittoClassifier(_FLBaseline):
    r"""Ditto (Li, Hu, Beirami, Smith 2021): FedAvg for :math:`\theta`; each sampled client also runs
    ``personal_epochs`` steps of :math:`v_i \leftarrow v_i - \eta(\nabla L_i(v_i) + \mu(v_i - \theta^t))`;
    deploys :math:`v_i`.

    Parameters
    ----------
    mu : float, default=0.1
        Proximal weight :math:`\mu`, at least 0.
    personal_epochs : int or None, default=None
        Epochs of the personal update per round (``None``: ``local_epochs``).
    base_estimator, n_rounds, local_epochs, client_fraction, random_state, warm_start
        As for :class:`FedAvgClassifier`.
    """

    _parameter_constraints: dict = {
        "base_estimator": [LowRankSoftmax, None],
        "client_fraction": [Interval(Real, 0, 1, closed="right")],
        "local_epochs": [Interval(Integral, 1, None, closed="left")],
        "mu": [Interval(Real, 0, None, closed="left")],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "personal_epochs": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "warm_start": ["boolean"],
    }

    def __init__(self, mu=0.1, personal_epochs=None, base_estimator=None, n_rounds=50, local_epochs=1,
                 client_fraction=1.0, random_state=None, warm_start=False):
        self.mu = mu
        self.personal_epochs = personal_epochs
        self.base_estimator = base_estimator
        self.n_rounds = n_rounds
        self.local_epochs = local_epochs
        self.client_fraction = client_fraction
        self.random_state = random_state
        self.warm_start = warm_start

    def fit(self, X, y, client_ids):
        r"""Train the federated model and every client's deployed model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows of all clients.
        y : array-like of shape (n_samples,)
            Class labels.
        client_ids : array-like of shape (n_samples,)
            Client of each row.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        h, Xs, ys, C, theta0, rng = self._setup(X, y, client_ids)
        mu = check_scalar_float(self.mu, "mu", low=0.0)
        pe = h["local_epochs"] if self.personal_epochs is None else check_scalar_int(self.personal_epochs, "personal_epochs", low=1)
        keys = self._trainable(theta0)
        v = [theta0] * len(Xs)

        def hook(t, theta_prev, new, sel):
            center = {k: theta_prev[k] for k in keys}
            starts = [v[i] for i in sel]
            upd = _train_clients(starts, [Xs[i] for i in sel], [ys[i] for i in sel], n_classes=C, epochs=pe,
                                 lr=h["lr"], l2=h["l2"], centers=[center] * len(sel), mu=mu, trainable=keys)
            for j, i in enumerate(sel):
                v[i] = upd[j]
            return new

        self.federated_model_, self.history_ = self._run_fedavg(h, Xs, ys, theta0, rng, client_hook=hook,
                                                                client_state=(v,))
        self._final_broadcast(self.history_, theta0, keys, len(Xs))
        self.personalized_models_ = {self._cid(m): v[m] for m in range(len(Xs))}
        return self


class PFedMeClassifier(_FLBaseline):
    r"""pFedMe (T. Dinh, Tran, Nguyen 2020): each local step approximately solves
    :math:`\tilde\theta_i = \arg\min_v L_i(v) + \frac{\lambda}2\|v - w_i\|^2` by ``K`` GD steps
    (step ``personal_lr``, default :math:`\eta/(1 + \eta\lambda)` for stability), then
    :math:`w_i \leftarrow w_i - \eta'\lambda(w_i - \tilde\theta_i)`; the server sets
    :math:`w \leftarrow (1-\beta)w + \beta\,\bar w` with :math:`\bar w` the mean of the sampled
    clients' :math:`w_i`; deployed: :math:`\tilde\theta_i` computed from :math:`w^R`.

    Two points where an implementation has to choose, both as in the paper by default:

    * ``aggregation="uniform"``: :math:`\bar w = \frac1{|S|}\sum_{i\in S} w_i` (the paper's
      Algorithm 1); ``"samples"`` weights by the clients' sample counts :math:`n_i` like FedAvg.
    * The outer step is :math:`\eta' = \min(\eta, 1/\lambda)`, :math:`\eta` the base estimator's
      ``lr``. The paper uses :math:`\eta' = \eta`; the two coincide whenever :math:`\eta\lambda \le 1`
      (the defaults: ``lr = 0.5``, ``lam = 1``). The cap only acts when :math:`\eta\lambda > 1`, where
      the paper's step overshoots :math:`\tilde\theta_i` (the move :math:`w_i \to \tilde\theta_i` is
      at most the whole way).

    Parameters
    ----------
    lam : float > 0, default=1.0
        Moreau-envelope regularisation :math:`\lambda`.
    beta : float in (0, 1], default=1.0
        Server mixing :math:`\beta` (1: plain averaging).
    K : int >= 1, default=5
        Inner GD steps per local step.
    personal_lr : float > 0 or None, default=None
    aggregation : {"uniform", "samples"}, default="uniform"
    base_estimator, n_rounds, local_epochs, client_fraction, random_state, warm_start
        As for :class:`FedAvgClassifier`.
    """

    _parameter_constraints: dict = {
        "K": [Interval(Integral, 1, None, closed="left")],
        "aggregation": [OrderedStrOptions(("uniform", "samples"))],
        "base_estimator": [LowRankSoftmax, None],
        "beta": [Interval(Real, 0, 1, closed="right")],
        "client_fraction": [Interval(Real, 0, 1, closed="right")],
        "lam": [Interval(Real, 0, None, closed="neither")],
        "local_epochs": [Interval(Integral, 1, None, closed="left")],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "personal_lr": [Interval(Real, 0, None, closed="neither"), None],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "warm_start": ["boolean"],
    }

    def __init__(self, lam=1.0, beta=1.0, K=5, personal_lr=None, base_estimator=None, n_rounds=50, local_epochs=1,
                 client_fraction=1.0, aggregation="uniform", random_state=None, warm_start=False):
        self.lam = lam
        self.beta = beta
        self.K = K
        self.personal_lr = personal_lr
        self.base_estimator = base_estimator
        self.n_rounds = n_rounds
        self.local_epochs = local_epochs
        self.client_fraction = client_fraction
        self.aggregation = aggregation
        self.random_state = random_state
        self.warm_start = warm_start

    def fit(self, X, y, client_ids):
        r"""Train the federated model and every client's deployed model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows of all clients.
        y : array-like of shape (n_samples,)
            Class labels.
        client_ids : array-like of shape (n_samples,)
            Client of each row.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        h, Xs, ys, C, theta0, rng = self._setup(X, y, client_ids)
        lam = check_scalar_float(self.lam, "lam", low=0.0, closed="neither")
        beta = check_scalar_float(self.beta, "beta", low=0.0, high=1.0, closed="right")
        K = check_scalar_int(self.K, "K", low=1)
        aggregation = check_option(self.aggregation, "aggregation", ("uniform", "samples"))
        lr = h["lr"]
        plr = lr / (1 + lr * lam) if self.personal_lr is None else check_scalar_float(
            self.personal_lr, "personal_lr", low=0.0, closed="neither")
        eta = min(lr, 1.0 / lam)  # outer step: w moves at most all the way to theta_tilde (see the docstring)
        keys = self._trainable(theta0)
        n = np.array([len(v) for v in ys], dtype=np.float64)

        def inner(w, i):
            return local_train(w, Xs[i], ys[i], n_classes=C, epochs=K, lr=plr, l2=h["l2"],
                               prox_center={k: w[k] for k in keys}, mu=lam, trainable=keys)

        def update(t, theta, sel):
            out = []
            for i in sel:
                w = theta
                for _ in range(h["local_epochs"]):
                    tt = inner(w, i)
                    w = {k: (w[k] - eta * lam * (w[k] - tt[k]) if k in keys else w[k]) for k in w}
                out.append(w)
            return out

        def uniform(t, theta_prev, new, sel):
            # the server's mean is weighted by n_i; rescaling each client's move by N / (|S| n_i) makes
            # that weighted mean the uniform mean of the clients' models (exact, linear in the moves)
            scale = n[sel].sum() / (len(sel) * n[sel])
            return [{k: (theta_prev[k] + c * (p[k] - theta_prev[k]) if k in keys else p[k]) for k in p}
                    for c, p in zip(scale, new)]

        hook = uniform if aggregation == "uniform" else None
        self.federated_model_, self.history_ = self._run_fedavg(h, Xs, ys, theta0, rng, local_update=update,
                                                                client_hook=hook, server_mix=beta)
        self._final_broadcast(self.history_, theta0, keys, len(Xs))
        self.personalized_models_ = {self._cid(m): inner(self.federated_model_, m) for m in range(len(Xs))}
        return self


class _LoRABaseline(_FLBaseline):
    _needs_rank = True


class FedRepClassifier(_LoRABaseline):
    """FedRep (Collins et al. 2021) on the adapter: body :math:`\\phi = A` shared and averaged, head
    ``B, b`` local; per round ``head_epochs`` epochs on the head (body fixed), then ``body_epochs`` on the
    body (head fixed). Deployed: final body with each client's head (refreshed once on the final body).
    Communicates ``A`` only.

    Parameters
    ----------
    head_epochs : int, default=5
        Epochs on the local head per round, at least 1.
    body_epochs : int, default=1
        Epochs on the shared body per round, at least 1.
    rank : int, default=8
        Rank of the adapter, at least 1.
    base_estimator, n_rounds, client_fraction, random_state, warm_start
        As for :class:`FedAvgClassifier`.
    """

    _parameter_constraints: dict = {
        "base_estimator": [LowRankSoftmax, None],
        "body_epochs": [Interval(Integral, 0, None, closed="left")],
        "client_fraction": [Interval(Real, 0, 1, closed="right")],
        "head_epochs": [Interval(Integral, 0, None, closed="left")],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "warm_start": ["boolean"],
        "rank": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, head_epochs=5, body_epochs=1, rank=8, base_estimator=None, n_rounds=50, client_fraction=1.0,
                 random_state=None, warm_start=False):
        self.head_epochs = head_epochs
        self.body_epochs = body_epochs
        self.rank = rank
        self.base_estimator = base_estimator
        self.n_rounds = n_rounds
        self.client_fraction = client_fraction
        self.random_state = random_state
        self.warm_start = warm_start

    def fit(self, X, y, client_ids):
        r"""Train the federated model and every client's deployed model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows of all clients.
        y : array-like of shape (n_samples,)
            Class labels.
        client_ids : array-like of shape (n_samples,)
            Client of each row.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        h, Xs, ys, C, theta0, rng = self._setup(X, y, client_ids)
        he = check_scalar_int(self.head_epochs, "head_epochs", low=0)
        be = check_scalar_int(self.body_epochs, "body_epochs", low=0)
        heads = [{"B": theta0["B"], "b": theta0["b"]} for _ in Xs]

        def step(body, i, epochs_head):
            p = {"W": body["W"], "A": body["A"], **heads[i]}
            p = local_train(p, Xs[i], ys[i], n_classes=C, epochs=epochs_head, lr=h["lr"], l2=h["l2"], trainable=("B", "b"))
            heads[i] = {"B": p["B"], "b": p["b"]}
            return p

        def update(t, theta, sel):
            out = []
            for i in sel:
                p = step(theta, i, he)
                p = local_train(p, Xs[i], ys[i], n_classes=C, epochs=be, lr=h["lr"], l2=h["l2"], trainable=("A",))
                out.append(p)
            return out

        def keep_body_only(t, theta_prev, new, sel):
            return [{"W": theta_prev["W"], "A": p["A"], "B": theta_prev["B"], "b": theta_prev["b"]} for p in new]

        self.federated_model_, self.history_ = self._run_fedavg(h, Xs, ys, theta0, rng, local_update=update,
                                                                client_hook=keep_body_only, comm_keys=("A",),
                                                                client_state=(heads,))
        self._final_broadcast(self.history_, theta0, ("A",), len(Xs))
        self.personalized_models_ = {self._cid(m): step(self.federated_model_, m, he) for m in range(len(Xs))}
        return self


class FedITClassifier(_LoRABaseline):
    """FedIT: FedAvg of the adapter factors ``A`` and ``B`` (and ``b``) averaged separately; deploys
    the global adapter.

    Parameters
    ----------
    rank : int, default=8
        Rank of the adapter, at least 1.
    base_estimator, n_rounds, local_epochs, client_fraction, random_state, warm_start
        As for :class:`FedAvgClassifier`.
    """

    _parameter_constraints: dict = {
        **FedAvgClassifier._parameter_constraints,  # the FedAvg parameters, plus the adapter's rank
        "rank": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, rank=8, base_estimator=None, n_rounds=50, local_epochs=1, client_fraction=1.0,
                 random_state=None, warm_start=False):
        self.rank = rank
        self.base_estimator = base_estimator
        self.n_rounds = n_rounds
        self.local_epochs = local_epochs
        self.client_fraction = client_fraction
        self.random_state = random_state
        self.warm_start = warm_start

    def _keys(self):
        return ("b", "A", "B")

    def fit(self, X, y, client_ids):
        r"""Train the federated model and every client's deployed model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows of all clients.
        y : array-like of shape (n_samples,)
            Class labels.
        client_ids : array-like of shape (n_samples,)
            Client of each row.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        h, Xs, ys, C, theta0, rng = self._setup(X, y, client_ids)
        keys = self._keys()
        self.federated_model_, self.history_ = self._run_fedavg(h, Xs, ys, theta0, rng, trainable=keys, comm_keys=keys)
        self._final_broadcast(self.history_, theta0, keys, len(Xs))
        return self


class FFALoRAClassifier(FedITClassifier):
    """FFA-LoRA: ``A`` frozen at its (shared-seed) random initialisation; only ``B`` and ``b`` are trained
    and averaged (exact aggregation: the product is linear in ``B``); half the communication of FedIT.

    Parameters
    ----------
    rank : int, default=8
        Rank of the adapter, at least 1.
    base_estimator, n_rounds, local_epochs, client_fraction, random_state, warm_start
        As for :class:`FedAvgClassifier`.
    """

    _parameter_constraints: dict = dict(FedITClassifier._parameter_constraints)  # the same parameters

    def _keys(self):
        return ("b", "B")


class FedSALoRAClassifier(_LoRABaseline):
    """FedSA-LoRA: all adapter factors trained locally each round; ``A`` is averaged by the server,
    ``B`` and ``b`` stay on the client. Deployed: global ``A`` with the client's ``B, b``.

    Parameters
    ----------
    rank : int, default=8
        Rank of the adapter, at least 1.
    base_estimator, n_rounds, local_epochs, client_fraction, random_state, warm_start
        As for :class:`FedAvgClassifier`.
    """

    _parameter_constraints: dict = dict(FedITClassifier._parameter_constraints)  # the same parameters

    def __init__(self, rank=8, base_estimator=None, n_rounds=50, local_epochs=1, client_fraction=1.0,
                 random_state=None, warm_start=False):
        self.rank = rank
        self.base_estimator = base_estimator
        self.n_rounds = n_rounds
        self.local_epochs = local_epochs
        self.client_fraction = client_fraction
        self.random_state = random_state
        self.warm_start = warm_start

    def fit(self, X, y, client_ids):
        r"""Train the federated model and every client's deployed model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows of all clients.
        y : array-like of shape (n_samples,)
            Class labels.
        client_ids : array-like of shape (n_samples,)
            Client of each row.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        h, Xs, ys, C, theta0, rng = self._setup(X, y, client_ids)
        local = [{"B": theta0["B"], "b": theta0["b"]} for _ in Xs]

        def update(t, theta, sel):
            starts = [{"W": theta["W"], "A": theta["A"], **local[i]} for i in sel]
            new = _train_clients(starts, [Xs[i] for i in sel], [ys[i] for i in sel], n_classes=C,
                                 epochs=h["local_epochs"], lr=h["lr"], l2=h["l2"], trainable=("b", "A", "B"))
            for j, i in enumerate(sel):
                local[i] = {"B": new[j]["B"], "b": new[j]["b"]}
            return [{"W": theta["W"], "A": p["A"], "B": theta["B"], "b": theta["b"]} for p in new]

        self.federated_model_, self.history_ = self._run_fedavg(h, Xs, ys, theta0, rng, local_update=update,
                                                                comm_keys=("A",), client_state=(local,))
        self._final_broadcast(self.history_, theta0, ("A",), len(Xs))
        self.personalized_models_ = {self._cid(m): {"W": self.federated_model_["W"], "A": self.federated_model_["A"],
                                                    **local[m]} for m in range(len(Xs))}
        return self


BASELINES = {
    "local": LocalOnlyClassifier,
    "fedavg": FedAvgClassifier,
    "fedavg_ft": FedAvgFTClassifier,
    "fixed_mix": FixedMixClassifier,
    "oracle_grid": OracleGridClassifier,
    "apfl": APFLClassifier,
    "ditto": DittoClassifier,
    "pfedme": PFedMeClassifier,
    "fedrep": FedRepClassifier,
    "fedit": FedITClassifier,
    "ffa_lora": FFALoRAClassifier,
    "fedsa_lora": FedSALoRAClassifier,
}
