r"""PotaraClassifier: federated training, then per-client merging of the federated and local models.

The base class it shares with the baselines of :mod:`.baselines` (data split by client, the FedAvg
loop with client sampling and communication accounting, per-client prediction) is in
:mod:`._federated_base`, re-exported here.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from .._validation import (
    RANDOM_STATE_CONSTRAINTS,
    OrderedStrOptions,
    validate_params,
)
from ._federated_base import FederatedClassifierBase, client_generator, merge_models
from ._low_rank_softmax import LowRankSoftmax
from ._model import _check_params, _check_Xy, default_trainable, init_params, local_train
from .variance import estimate_variances, mixing_weights, pool_moments

__all__ = ["PotaraClassifier", "FederatedClassifierBase", "merge_models", "client_generator"]


class PotaraClassifier(FederatedClassifierBase):
    r"""Potara: per-client merge :math:`\lambda_i\theta_F + (1-\lambda_i)\theta_{L,i}` of the federated
    and local models with the closed-form mixing weight of the variance-trace bound.

    Steps (federated reconstruction notes, section 1.4, reconstructed [R]): (1) ``n_rounds`` FedAvg rounds of
    ``local_epochs`` GD epochs (fraction ``client_fraction`` of the clients per round, weights :math:`n_i`) give
    :math:`\theta_F`; (2) every client fine-tunes :math:`\theta_{L,i}` from :math:`\theta_F` for
    ``finetune_epochs`` epochs (no communication); (3) estimates :math:`\hat V_{F}, \hat V_{L}` per group
    (``variance_method``, :mod:`algos.federated.variance`) and sets
    :math:`\lambda = \hat V_L/(\hat V_F + \hat V_L)` clipped to ``lam_clip``; (4) merges (in product space for
    a LoRA base: :math:`\lambda A_F B_F + (1-\lambda)A_L B_L`, exact, rank :math:`2r`, or SVD-truncated to
    ``merge_rank``).

    Parameters
    ----------
    base_estimator : LowRankSoftmax or None, default=None
        Base model; its ``rank``, ``l2``, ``lr``, ``batch_size``, ``base_features`` are used
        (``None``: ``LowRankSoftmax()``).
    n_rounds : int, default=50
    local_epochs : int, default=1
    finetune_epochs : int, default=10
    client_fraction : float in (0, 1], default=1.0
    variance_method : {"bootstrap", "plugin_fisher", "fisher", "sandwich", "swag"}, default="bootstrap"
        How :math:`\hat V_L` is estimated (:func:`algos.federated.variance.estimate_variances`);
        :math:`\hat V_F` is always the plug-in :math:`\max(\|\theta_F - \theta_L\|^2 - \hat V_L, \cdot)`.
        ``"plugin_fisher"`` was the first design choice for the default (federated reconstruction
        notes, section 1.3), but on digits its raw inverse-Fisher trace
        sets :math:`\lambda = 1` for every client (flat coordinates; a :class:`FlatFisherWarning` says
        so), as the reconstruction's own prototype found; ``"bootstrap"`` (the reconstruction's E2 setting) is the
        default. ``"sandwich"`` is a cheap alternative with similar weights.
    granularity : {"global", "module", "coordinate"}, default="module"
    merge_space : {"product", "factors"}, default="product"
    lam_clip : (float, float), default=(0.0, 1.0)
    fisher_floor : float, default=1e-4
        :math:`\delta/n_i` of the Fisher floor.
    mask_untouched : bool, default=True
    n_bootstrap : int, default=8
    merge_rank : None or int, default=None
    random_state : None or int, default=None
    verbose : int, default=0
    backend : {"auto", "numpy", "torch", "numba"}, default="numpy"
        Where the clients' gradient steps run in :meth:`fit`. ``"numpy"`` (or ``"numba"``): the CPU path.
        ``"torch"``: every FedAvg round and the clients' fine-tuning run as one batched float64 tensor
        program over all clients (:func:`accel.federated.train_clients_batched`, on ``device``); needs
        full-batch training (``base_estimator.batch_size=None``) and the ``gpu`` extra; the fitted models
        equal the numpy path's to round-off (tested at 1e-10 on CPU torch). The variance estimation and
        the merge stay on numpy. ``"auto"`` picks torch when ``X`` or ``y`` is a torch tensor or ``device``
        names an accelerator (and training is full batch), and the CPU path otherwise; see the
        "Backends: one rule" section of the scaling page. :meth:`personalize` (one client, e.g. a Flower
        client) always runs the numpy path.
    device : None, str or torch.device, default=None
        torch device for ``backend="torch"`` (``None``: CUDA when available, else CPU).
    warm_start : bool, default=False
        Whether :meth:`fit` resumes the federated rounds of the previous fit (same clients, classes and
        features): it starts from that fit's federated model and round generator, runs up to ``n_rounds``
        rounds in all, then personalises every client afresh. With an int ``random_state``,
        ``n_rounds=5`` then a warm ``n_rounds=10`` equals one fit of 10 rounds.

    Attributes
    ----------
    classes_, clients_, n_features_in_
    federated_model_ : dict
    local_models_ : dict client -> params
    personalized_models_ : dict client -> merged params
    mixing_weights_ : dict client -> {block: lambda}
    bound_ : dict client -> {"lam_star": U(lambda*), "federated": U(1), "local": U(0)}
    history_ : list of dicts (per round: clients, bytes_sent, cumulative_bytes, train_accuracy of the
        federated model)
    backend_ : {"numpy", "torch"}
        The core that ran the clients' gradient steps in :meth:`fit` (``backend`` resolved).
    n_rounds_ : int
        Federated rounds completed (fewer than ``n_rounds`` after an interrupt).
    interrupted_ : bool
        Whether an interrupt (Ctrl-C, ``KeyboardInterrupt``) stopped the rounds: the clients are then
        personalised from the federated model of the last completed round and an
        ``InterruptedFitWarning`` says so; a second interrupt aborts the fit.

    Notes
    -----
    ``y`` passed to :meth:`personalize` are class *indices* (positions in ``classes_``), as in the
    functions of :mod:`._model`; :meth:`fit` encodes labels itself. A client whose data hold one class
    only is accepted (its local model never sees the others; the merge keeps them through
    :math:`\theta_F`); every client needs at least 2 samples. :meth:`predict` raises for clients not seen
    in :meth:`fit`.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True); X = (X - X.mean(0)) / X.std(0)
    >>> ids = np.arange(len(y)) % 3
    >>> est = PotaraClassifier(n_rounds=5, random_state=0).fit(X, y, ids)
    >>> sorted(est.mixing_weights_[0])
    ['W', 'b']
    >>> est.score(X, y, ids) > 0.8
    True
    """

    _parameter_constraints: dict = {
        "backend": [OrderedStrOptions(("auto", "numpy", "torch", "numba"))],
        "base_estimator": [LowRankSoftmax, None],
        "client_fraction": [Interval(Real, 0, 1, closed="right")],
        "device": "no_validation",  # None, a str or a torch.device: resolved (and checked) by the backend layer
        "finetune_epochs": [Interval(Integral, 0, None, closed="left")],
        "fisher_floor": [Interval(Real, 0, None, closed="left")],
        "granularity": [OrderedStrOptions(("global", "module", "coordinate"))],
        # a pair (low, high) with 0 <= low <= high <= 1: the constraint language cannot relate two entries
        # of one value, so the rule is stated once, in _hparams
        "lam_clip": "no_validation",
        "local_epochs": [Interval(Integral, 0, None, closed="left")],
        "mask_untouched": ["boolean"],
        "merge_rank": [Interval(Integral, 1, None, closed="left"), None],
        "merge_space": [OrderedStrOptions(("product", "factors"))],
        "n_bootstrap": [Interval(Integral, 2, None, closed="left")],
        "n_rounds": [Interval(Integral, 0, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "variance_method": [OrderedStrOptions(("plugin_fisher", "fisher", "sandwich", "bootstrap", "swag"))],
        "verbose": [Interval(Integral, 0, None, closed="left")],
        "warm_start": ["boolean"],
    }

    def __init__(self, *, base_estimator=None, n_rounds=50, local_epochs=1, finetune_epochs=10, client_fraction=1.0,
                 variance_method="bootstrap", granularity="module", merge_space="product", lam_clip=(0.0, 1.0),
                 fisher_floor=1e-4, mask_untouched=True, n_bootstrap=8, merge_rank=None, random_state=None,
                 verbose=0, backend="numpy", device=None, warm_start=False):
        self.base_estimator = base_estimator
        self.n_rounds = n_rounds
        self.local_epochs = local_epochs
        self.finetune_epochs = finetune_epochs
        self.client_fraction = client_fraction
        self.variance_method = variance_method
        self.granularity = granularity
        self.merge_space = merge_space
        self.lam_clip = lam_clip
        self.fisher_floor = fisher_floor
        self.mask_untouched = mask_untouched
        self.n_bootstrap = n_bootstrap
        self.merge_rank = merge_rank
        self.random_state = random_state
        self.verbose = verbose
        self.backend = backend
        self.device = device
        self.warm_start = warm_start

    # ------------------------------------------------------------------ settings shared with Flower
    def _hparams(self):
        validate_params(self)  # the estimator's constraints (Flower builds its settings here too)
        h = self._base()
        h["n_rounds"] = int(self.n_rounds)
        h["local_epochs"] = int(self.local_epochs)
        h["finetune_epochs"] = int(self.finetune_epochs)
        h["client_fraction"] = float(self.client_fraction)
        h["variance_method"] = self.variance_method
        h["granularity"] = self.granularity
        h["merge_space"] = self.merge_space
        try:
            lo, hi = float(self.lam_clip[0]), float(self.lam_clip[1])
        except Exception:
            raise TypeError("'lam_clip' must be a pair (low, high) with 0 <= low <= high <= 1; got "
                            f"{self.lam_clip!r}.") from None
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError("'lam_clip' must be a pair (low, high) with 0 <= low <= high <= 1; got "
                             f"{self.lam_clip!r}.")
        h["lam_clip"] = (lo, hi)
        h["fisher_floor"] = float(self.fisher_floor)
        h["n_bootstrap"] = int(self.n_bootstrap)
        h["backend"] = self._resolve_backend(h)
        return h

    def _resolve_backend(self, h, arrays=()):
        """'numpy' or 'torch': ``accel.backend.resolve`` of ``backend`` / ``device`` on ``arrays``, then the
        torch path's constraint (full-batch training)."""
        from accel.backend import resolve

        backend = getattr(self, "backend", "numpy")
        device = getattr(self, "device", None)
        if device is not None and not isinstance(device, str) and type(device).__name__ != "device":
            raise TypeError(f"'device' must be None, a str or a torch.device; got {device!r} of type "
                            f"{type(device).__name__}.")
        resolved = resolve(backend, device, arrays)
        if resolved == "torch" and h["batch_size"] is not None:
            if backend == "auto":  # the torch core runs full batches only: keep the CPU path
                return "numpy"
            raise ValueError("backend='torch' runs full-batch gradient descent: set the base estimator's "
                             f"'batch_size' to None (got {h['batch_size']}) or use backend='numpy'.")
        return resolved

    def local_train_kwargs(self, n_classes):
        """Keyword arguments of :func:`algos.federated.local_train` / :func:`fedavg_round` for one FL
        round of this estimator (what a Flower client runs each round).

        Parameters
        ----------
        n_classes : int
            Number of classes.

        Returns
        -------
        dict
            Keyword arguments (epochs, step size, regularisation, trainable blocks, batch size).
        """
        h = self._hparams()
        trainable = ("b", "A", "B") if h["rank"] else ("W", "b")
        return {"n_classes": int(n_classes), "epochs": h["local_epochs"], "lr": h["lr"], "l2": h["l2"],
                "trainable": trainable, "batch_size": h["batch_size"]}

    def initial_params(self, n_features, n_classes):
        """The server's initial parameters (the same as :meth:`fit` uses for this ``random_state``).

        Parameters
        ----------
        n_features : int
            Number of input features.
        n_classes : int
            Number of classes.

        Returns
        -------
        dict of str to ndarray
            The parameter blocks.
        """
        h = self._hparams()
        return init_params(n_features, n_classes, rank=h["rank"],
                           random_state=client_generator(self._seed(), "__server__"))

    # ------------------------------------------------------------------ personalisation
    def personalize(self, federated_params, X, y, client_id, *, n_total=None):
        r"""Final personalisation round of one client: fine-tune from the federated model, estimate the
        variances, set :math:`\lambda^*`, merge.

        Parameters
        ----------
        federated_params : dict
        X : ndarray (n, d) -- the client's features (after ``base_features``)
        y : ndarray of int (n,) -- class indices in ``[0, C)``
        client_id : int or str -- seeds the client's random draws
        n_total : int or None -- all clients' training samples (``variance_method="fisher"`` only;
            :meth:`fit` passes it)

        Returns
        -------
        merged : dict
        lam : dict block -> float (or array for ``granularity="coordinate"``)
        bound : dict with ``"lam_star"``, ``"federated"``, ``"local"`` (U at lambda*, 1, 0), ``"moments"``
            (group -> (V_F, V_L)) and ``"local_model"`` (the fine-tuned parameters).
        """
        return self._personalize(federated_params, X, y, client_id, n_total=n_total)

    def _personalize(self, theta_f, X, y, client_id, n_total, theta_l=None):
        from theory.federated import variance_trace_bound

        h = self._hparams()
        d, C, r = _check_params(theta_f, "federated_params")
        X, y = _check_Xy(X, y, d, C)
        if X.shape[0] < 2:
            raise ValueError(f"client {client_id!r} needs at least 2 samples to personalise; got {X.shape[0]}.")
        rng = client_generator(self._seed(), client_id, stream=1)
        trainable = default_trainable(theta_f)
        kw = {"epochs": h["finetune_epochs"], "lr": h["lr"], "l2": h["l2"], "trainable": trainable,
              "batch_size": h["batch_size"]}
        if theta_l is None:  # else fine-tuned already (full batch: no draw from rng either way)
            theta_l = local_train(theta_f, X, y, n_classes=C, random_state=rng, **kw)
        est = estimate_variances(theta_f, theta_l, X, y, n_classes=C, method=h["variance_method"],
                                 merge_space=h["merge_space"], fisher_floor=h["fisher_floor"],
                                 mask_untouched=bool(self.mask_untouched), n_total=n_total, train_kwargs=kw,
                                 n_bootstrap=h["n_bootstrap"], random_state=rng)
        lam, moments = mixing_weights(est, h["granularity"], h["lam_clip"])
        pooled = pool_moments(est, h["granularity"])
        groups = {"global": list(lam)} if h["granularity"] == "global" else {k: [k] for k in lam}
        u_star = u_fed = u_loc = 0.0
        for g, (vf, vl, _) in pooled.items():
            lg = lam[groups[g][0]]
            u_star += float(np.sum(variance_trace_bound(lg, vf, vl)))
            u_fed += float(np.sum(vf))
            u_loc += float(np.sum(vl))
        merged = self._merge(theta_f, theta_l, lam, h)
        bound = {"lam_star": u_star, "federated": u_fed, "local": u_loc, "moments": moments, "local_model": theta_l}
        return merged, lam, bound

    def _merge(self, theta_f, theta_l, lam, h):
        return merge_models(theta_f, theta_l, lam, h["merge_space"], self.merge_rank)

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, client_ids=None):
        """Federated rounds, then personalise every client.

        Federated rounds, then personalise every client. Returns ``self``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows of all clients.
        y : array-like of shape (n_samples,)
            Class labels.
        client_ids : array-like of shape (n_samples,) or None, default=None
            Client of each row (integers or strings). ``None``: one client, every row is client ``0``.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        h = self._hparams()
        h["backend"] = self._resolve_backend(h, (X, y))
        Xs, ys = self._split(X, y, client_ids)
        self.backend_ = h["backend"]
        C = len(self.classes_)
        seed = self._seed()
        theta0 = self.initial_params(Xs[0].shape[1], C)
        trainable = default_trainable(theta0)
        rng = client_generator(seed, "__rounds__")
        local_update = finetuned = None
        if h["backend"] == "torch":
            from accel.federated import train_clients_batched

            def batched(theta, sel, epochs):
                return train_clients_batched(theta, [(Xs[i], ys[i]) for i in sel], n_classes=C, epochs=epochs,
                                             lr=h["lr"], l2=h["l2"], trainable=trainable, device=self.device)

            def local_update(t, theta, sel):
                return batched(theta, sel, h["local_epochs"])

        self.federated_model_, self.history_ = self._fedavg(
            theta0, Xs, ys, n_rounds=h["n_rounds"], local_epochs=h["local_epochs"], trainable=trainable,
            client_fraction=h["client_fraction"], lr=h["lr"], l2=h["l2"], batch_size=h["batch_size"], rng=rng,
            eval_fn=self._global_accuracy_fn(Xs, ys), local_update=local_update)
        if h["backend"] == "torch":  # every client's fine-tuning from theta_F in one batched run
            finetuned = batched(self.federated_model_, range(len(Xs)), h["finetune_epochs"])
        self._final_broadcast(self.history_, theta0, trainable, len(Xs))
        n_total = int(sum(len(v) for v in ys))
        self.local_models_, self.personalized_models_, self.mixing_weights_, self.bound_ = {}, {}, {}, {}
        it = range(len(Xs))
        if self.verbose:
            from tqdm import tqdm

            it = tqdm(it, desc="personalise")
        for m in it:
            cid = self.clients_[m].item() if hasattr(self.clients_[m], "item") else self.clients_[m]
            merged, lam, bound = self._personalize(self.federated_model_, Xs[m], ys[m], cid, n_total,
                                                   theta_l=None if finetuned is None else finetuned[m])
            self.local_models_[cid] = bound.pop("local_model")
            self.personalized_models_[cid] = merged
            self.mixing_weights_[cid] = lam
            self.bound_[cid] = bound
        return self

    def mean_lambda(self):
        """Mean over clients and blocks of the fitted mixing weights.

        Returns
        -------
        float
            The mean mixing weight.
        """
        check_is_fitted(self, "mixing_weights_")
        return float(np.mean([np.mean([np.mean(v) for v in lam.values()]) for lam in self.mixing_weights_.values()]))
