"""Shared set-up, round loop and deployment of the personalised-FL baselines of :mod:`algos.federated.baselines`."""

from __future__ import annotations

from numbers import Integral, Real

from sklearn.utils._param_validation import Interval

from ..._validation import RANDOM_STATE_CONSTRAINTS, validate_params
from .._low_rank_softmax import LowRankSoftmax
from .._model import init_params, local_train
from .._potara import FederatedClassifierBase, client_generator

#: Constraints of the parameters that every round-based baseline shares (see :func:`_round_constraints`).
_ROUND_CONSTRAINTS = {
    "base_estimator": [LowRankSoftmax, None],
    "client_fraction": [Interval(Real, 0, 1, closed="right")],
    "local_epochs": [Interval(Integral, 1, None, closed="left")],
    "n_rounds": [Interval(Integral, 1, None, closed="left")],
    "random_state": RANDOM_STATE_CONSTRAINTS,
    "warm_start": ["boolean"],
}
_RANK_CONSTRAINT = [Interval(Integral, 1, None, closed="left")]


def _round_constraints(*without, rank=False, **extra):
    """The round-based baselines' ``_parameter_constraints``: the shared ones less ``without``, plus ``extra``,
    in name order, then the adapter's ``rank`` when ``rank`` is set."""
    merged = {k: v for k, v in _ROUND_CONSTRAINTS.items() if k not in without}
    merged.update(extra)
    out = dict(sorted(merged.items()))
    if rank:
        out["rank"] = _RANK_CONSTRAINT
    return out


class _FLBaseline(FederatedClassifierBase):
    """Common settings, set-up and ``fit`` of the baselines (not an estimator by itself).

    A subclass implements ``_fit(X, y, client_ids)``, which sets the fitted attributes.
    """

    _needs_rank = False

    def fit(self, X, y, client_ids=None):
        r"""Train the federated model and every client's deployed model.

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
        self._fit(X, y, client_ids)
        return self

    def _settings(self):
        h = self._base()
        # zero rounds or zero local epochs would deploy the untrained initial model: rejected
        h["n_rounds"] = int(self.n_rounds) if hasattr(self, "n_rounds") else 0
        h["local_epochs"] = int(getattr(self, "local_epochs", 1))
        h["client_fraction"] = float(getattr(self, "client_fraction", 1.0))
        if self._needs_rank and not h["rank"]:
            h["rank"] = int(self.rank)
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

    def _rounds(self, h, Xs, ys, theta0, rng, trainable=None, comm_keys=None, **kw):
        """Run the FedAvg rounds (:meth:`_fedavg`) into ``federated_model_`` and ``history_``, then count
        the final broadcast of the communicated keys (``comm_keys``, default the trained ones) to every
        client; returns ``federated_model_``."""
        trainable = trainable or self._trainable(theta0)
        self.federated_model_, self.history_ = self._fedavg(
            theta0, Xs, ys, n_rounds=h["n_rounds"], local_epochs=h["local_epochs"], trainable=trainable,
            comm_keys=comm_keys, client_fraction=h["client_fraction"], lr=h["lr"], l2=h["l2"],
            batch_size=h["batch_size"], rng=rng, eval_fn=self._global_accuracy_fn(Xs, ys), **kw)
        self._final_broadcast(self.history_, theta0, trainable if comm_keys is None else comm_keys, len(Xs))
        return self.federated_model_

    def _deploy(self, model_of, n_clients):
        """``personalized_models_``: ``model_of(m)`` for every client index ``m``."""
        self.personalized_models_ = {self._cid(m): model_of(m) for m in range(n_clients)}

    def _finetune(self, h, theta, X, y, C, epochs, m):
        rng = client_generator(self._seed(), self._cid(m), stream=1)
        return local_train(theta, X, y, n_classes=C, epochs=epochs, lr=h["lr"], l2=h["l2"],
                           trainable=self._trainable(theta), batch_size=h["batch_size"], random_state=rng)


class _RoundBaseline(_FLBaseline):
    """A baseline with the FedAvg round parameters (not an estimator by itself)."""

    def __init__(self, *, base_estimator=None, n_rounds=50, local_epochs=1, client_fraction=1.0, random_state=None,
                 warm_start=False):
        self.base_estimator = base_estimator
        self.n_rounds = n_rounds
        self.local_epochs = local_epochs
        self.client_fraction = client_fraction
        self.random_state = random_state
        self.warm_start = warm_start


class _LoRABaseline(_RoundBaseline):
    """A baseline on the low-rank adapter: the base estimator's ``rank``, else its own ``rank``."""

    _needs_rank = True

    def __init__(self, *, rank=8, base_estimator=None, n_rounds=50, local_epochs=1, client_fraction=1.0,
                 random_state=None, warm_start=False):
        self.rank = rank
        super().__init__(base_estimator=base_estimator, n_rounds=n_rounds, local_epochs=local_epochs,
                         client_fraction=client_fraction, random_state=random_state, warm_start=warm_start)
