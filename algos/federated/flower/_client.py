"""The client side of :mod:`algos.federated.flower`: the message handlers of the ClientApp that
:func:`~algos.federated.flower.make_client_app` builds.

This module imports Flower at import time; :func:`~algos.federated.flower.make_client_app` imports it
on first use, so ``import algos.federated.flower`` does not import Flower.
"""

from __future__ import annotations

import numbers

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict

from .._model import local_train, predict_logits
from ._app import (
    STATE_LAMBDA,
    STATE_LOCAL,
    STATE_MERGED,
    STATE_SUMMARY,
    _as_client_data,
    _py,
    arrayrecord_to_params,
    estimator_from_run_config,
    params_to_arrayrecord,
)


class PotaraClientHandlers:
    """Potara's client handlers (``query.describe``, ``train``, ``train.personalize``, ``evaluate``).

    One object serves every run of the process: the estimator (defaults plus the run config), the
    data of each partition and the frozen blocks are cached per run id.

    Parameters
    ----------
    estimator : PotaraClassifier
        The defaults (see :func:`~algos.federated.flower.make_client_app`).
    data_fn : callable
        ``data_fn(partition_id)`` or ``data_fn(partition_id, context)``.
    classes : numpy.ndarray
        The global sorted class list (checked by the caller).
    partition_key : str
        Key of ``context.node_config`` holding the partition index.
    n_args : int
        Positional parameters of ``data_fn`` (2: it also gets the context).

    Notes
    -----
    Each handler ``handler(msg, context)`` takes the received ``flwr.app.Message`` and the node's
    ``flwr.app.Context`` and returns the reply ``flwr.app.Message``; the methods that take only the
    ``context`` take the message's context.
    """

    def __init__(self, estimator, data_fn, classes, partition_key, n_args):
        self.estimator = estimator
        self.data_fn = data_fn
        self.classes = classes
        self.n_classes = len(classes)
        self.partition_key = partition_key
        self.n_args = n_args
        self.runs = {}  # run id -> {"est", "data", "frozen"}: one entry per run this process serves

    # ------------------------------------------------------------------ per-run state
    def session(self, context):
        """The estimator (defaults + run config), data and frozen blocks of this run.

        Returns
        -------
        dict
            With keys ``"est"``, ``"data"`` and ``"frozen"``.
        """
        run = self.runs.get(context.run_id)
        if run is None:
            run = self.runs[context.run_id] = {"est": estimator_from_run_config(self.estimator, context.run_config),
                                               "data": {}, "frozen": {}}
        return run

    def _partition_id(self, context):
        key = self.partition_key
        if key not in context.node_config:
            raise ValueError(f"the node config has no {key!r} (start the SuperNode with "
                             f"--node-config '{key}=0 num-partitions=M'); got keys "
                             f"{sorted(context.node_config)}.")
        return int(context.node_config[key])

    def _load_partition(self, est, pid, context):
        """Call ``data_fn``, check the labels and sizes, compute the features."""
        classes = self.classes
        raw = self.data_fn(pid, context) if self.n_args >= 2 else self.data_fn(pid)
        raw = _as_client_data(raw, pid)
        X = est._check_X(raw["X"])
        y = np.asarray(raw["y"])
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"partition {pid}: 'y' must be 1-d with one label per row of X.")
        pos = np.clip(np.searchsorted(classes, y), 0, self.n_classes - 1)
        if not np.all(classes[pos] == y):
            raise ValueError(f"partition {pid}: labels {sorted(set(y[classes[pos] != y].tolist()))[:5]} "
                             "are not in 'classes'.")
        if X.shape[0] < 2:
            raise ValueError(f"every client needs at least 2 training samples; partition {pid} has {X.shape[0]}.")
        Z = est._features(X)
        test = None
        if raw["X_test"] is not None:
            Xt = est._check_X(raw["X_test"], "X_test")
            test = (est._features(Xt), np.asarray(raw["y_test"]))
        n_parts = context.node_config.get("num-partitions", -1)
        return {"Z": np.ascontiguousarray(Z), "y": pos.astype(np.int64), "test": test,
                "client_id": _py(raw["client_id"]), "pid": pid, "num-partitions": int(n_parts)}

    def client_data(self, context):
        """The run's state and this node's partition (loaded once per run and partition).

        Returns
        -------
        run : dict
            See :meth:`session`.
        data : dict
            Features ``Z``, encoded labels ``y``, ``test`` (features, raw labels) or ``None``,
            ``client_id``, ``pid`` and ``num-partitions``.
        """
        run = self.session(context)
        pid = self._partition_id(context)
        cache = run["data"]
        if pid not in cache:
            cache[pid] = self._load_partition(run["est"], pid, context)
        return run, cache[pid]

    def full_params(self, record, run, data):
        """Received (trainable) blocks plus the frozen ones, rebuilt from the seeded initialisation.

        Parameters
        ----------
        record : flwr.app.ArrayRecord
            The received blocks.
        run : dict
            See :meth:`session`.
        data : dict
            See :meth:`client_data`.

        Returns
        -------
        dict
            All parameter blocks.
        """
        received = arrayrecord_to_params(record)
        d = data["Z"].shape[1]
        frozen = run["frozen"]
        if d not in frozen:
            init = run["est"].initial_params(d, self.n_classes)
            trainable = run["est"].local_train_kwargs(self.n_classes)["trainable"]
            frozen[d] = {k: v for k, v in init.items() if k not in trainable}
        return {**frozen[d], **received}

    def _trainable_only(self, params, est):
        trainable = est.local_train_kwargs(self.n_classes)["trainable"]
        return params_to_arrayrecord({k: v for k, v in params.items() if k in trainable})

    def accuracy(self, params, data):
        """Accuracy of ``params`` on the client's test rows (its training rows without them).

        Parameters
        ----------
        params : dict
            Parameter blocks.
        data : dict
            See :meth:`client_data`.

        Returns
        -------
        accuracy : float
            NaN without rows.
        n_rows : int
        """
        classes = self.classes
        Z, y_raw = data["test"] if data["test"] is not None else (data["Z"], classes[data["y"]])
        if Z.shape[0] == 0:
            return float("nan"), 0
        pred = classes[np.argmax(predict_logits(params, Z), axis=1)]
        return float(np.mean(pred == y_raw)), int(Z.shape[0])

    # ------------------------------------------------------------------ handlers
    def describe(self, msg, context):
        """``query.describe``: partition id, training-set size, ``num-partitions`` and client id."""
        _, data = self.client_data(context)
        cid = data["client_id"]
        metrics = MetricRecord({"partition-id": data["pid"], "num-examples": int(data["y"].size),
                                "num-partitions": data["num-partitions"],
                                "client-id-int": int(cid) if isinstance(cid, numbers.Integral) else -1})
        return Message(RecordDict({"metrics": metrics, "client": ConfigRecord({"client-id": str(cid)})}),
                       reply_to=msg)

    def train(self, msg, context):
        """``train``: :func:`~algos.federated.local_train` from the received parameters.

        Replies with the trained blocks and ``num-examples``.
        """
        run, data = self.client_data(context)
        est = run["est"]
        params = self.full_params(msg.content["arrays"], run, data)
        config = msg.content["config"]
        kw = est.local_train_kwargs(self.n_classes)
        seed = config.get("batch-seed", None)
        if kw["batch_size"] is not None and seed is not None:
            kw["random_state"] = np.random.default_rng(int(seed))
        new = local_train(params, data["Z"], data["y"], **kw)
        metrics = MetricRecord({"num-examples": int(data["y"].size), "partition-id": data["pid"]})
        return Message(RecordDict({"arrays": self._trainable_only(new, est), "metrics": metrics}), reply_to=msg)

    def _store_state(self, context, theta_l, merged, lam):
        """Persistent client state: survives between messages (and ClientApp instances in simulation)."""
        context.state[STATE_LOCAL] = params_to_arrayrecord(theta_l)
        context.state[STATE_MERGED] = params_to_arrayrecord(merged)
        context.state[STATE_LAMBDA] = ArrayRecord({k: Array(np.array(v, dtype=np.float64)) for k, v in lam.items()})

    def personalize(self, msg, context):
        """``train.personalize``: personalise from :math:`\\theta_F`, keep the models in the state.

        Replies with metrics (and, with ``return-models``, the personalised model and lambdas).
        """
        run, data = self.client_data(context)
        theta_f = self.full_params(msg.content["arrays"], run, data)
        config = msg.content["config"]
        n_total = config.get("n-total", None)
        merged, lam, bound = run["est"].personalize(theta_f, data["Z"], data["y"], data["client_id"],
                                                    n_total=None if n_total is None else int(n_total))
        theta_l = bound.pop("local_model")
        self._store_state(context, theta_l, merged, lam)
        acc, n_eval = self.accuracy(merged, data)
        acc_fed, _ = self.accuracy(theta_f, data)
        acc_loc, _ = self.accuracy(theta_l, data)
        lam_means = {k: float(np.mean(v)) for k, v in lam.items()}
        summary = {"accuracy": acc, "accuracy-federated": acc_fed, "accuracy-local": acc_loc,
                   "lam-mean": float(np.mean(list(lam_means.values()))), "bound-lam-star": float(bound["lam_star"]),
                   "bound-federated": float(bound["federated"]), "bound-local": float(bound["local"])}
        context.state[STATE_SUMMARY] = MetricRecord(summary)
        metrics = {"num-examples": int(data["y"].size), "num-eval": n_eval, "partition-id": data["pid"], **summary}
        metrics.update({f"lam-{k}": v for k, v in lam_means.items()})
        content = {"metrics": MetricRecord(metrics)}
        if bool(config.get("return-models", False)):
            content["personalized"] = params_to_arrayrecord(merged)
            content["lambda"] = context.state[STATE_LAMBDA]
        return Message(RecordDict(content), reply_to=msg)

    def evaluate(self, msg, context):
        """``evaluate``: accuracy of the global model (when sent) and of the personalised one (when kept)."""
        run, data = self.client_data(context)
        n_eval = int(data["test"][0].shape[0]) if data["test"] is not None else int(data["y"].size)
        metrics = {"num-examples": max(n_eval, 1), "partition-id": data["pid"]}
        if "arrays" in msg.content.array_records:  # the global model, when sent
            metrics["accuracy-federated"] = self.accuracy(self.full_params(msg.content["arrays"], run, data), data)[0]
        if STATE_MERGED in context.state:  # the personalised model kept from the personalisation round
            metrics["accuracy"] = self.accuracy(arrayrecord_to_params(context.state[STATE_MERGED]), data)[0]
        return Message(RecordDict({"metrics": MetricRecord(metrics)}), reply_to=msg)
