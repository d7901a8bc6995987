r"""The Flower strategy of :mod:`algos.federated.flower`: :class:`PotaraFedAvg` (FedAvg plus Potara's
final personalisation round).

This module imports Flower at import time; :mod:`algos.federated.flower` imports it only when
``PotaraFedAvg`` is first asked for (its module ``__getattr__``), so ``import algos.federated.flower``
does not import Flower.
"""

from __future__ import annotations

import time
from logging import INFO

import numpy as np
from flwr.app import ConfigRecord, Message, MessageType, MetricRecord, RecordDict
from flwr.serverapp.strategy import FedAvg
from flwr.supercore import log

from ..._validation import check_scalar_float, check_scalar_int
from .._model import _weighted_mean
from .._potara import client_generator
from ._app import (
    DEFAULT_NODE_TIMEOUT,
    PotaraResult,
    _payload_bytes,
    arrayrecord_to_params,
    params_to_arrayrecord,
)

__all__ = ["PotaraFedAvg"]


def _raise_on_errors(replies, phase):
    """``replies`` as a list, or :class:`RuntimeError` naming up to 3 failed clients of ``phase``."""
    replies = list(replies)
    bad = [r for r in replies if r.has_error()]
    if bad:
        reasons = "; ".join(f"node {r.metadata.src_node_id}: {r.error.reason}" for r in bad[:3])
        raise RuntimeError(f"{len(bad)} client(s) failed in the {phase} phase: {reasons}")
    return replies


def _client_metrics(replies):
    """Partition id -> metrics of each personalisation reply (with its arrays when returned), sorted."""
    clients = {}
    for r in replies:
        m = dict(r.content["metrics"])
        pid = int(m["partition-id"])
        if "personalized" in r.content.array_records:
            m["personalized"] = arrayrecord_to_params(r.content["personalized"])
            m["lambda"] = {k: v.numpy() for k, v in r.content["lambda"].items()}
        clients[pid] = m
    return dict(sorted(clients.items()))


def _personalization_stats(clients):
    """Accuracy (pooled over evaluation rows and client mean) and lambda statistics over ``clients``."""
    lam = np.array([c["lam-mean"] for c in clients.values()])
    n_eval = np.array([c["num-eval"] for c in clients.values()], dtype=float)
    agg = {"clients": len(clients), "lam-mean": float(lam.mean()), "lam-std": float(lam.std()),
           "lam-min": float(lam.min()), "lam-max": float(lam.max()),
           "lam-quartiles": [float(q) for q in np.quantile(lam, [0.25, 0.5, 0.75])],
           "lam-hist": [int(c) for c in np.histogram(np.clip(lam, 0, 1), bins=10, range=(0, 1))[0]]}
    for key in ("accuracy", "accuracy-federated", "accuracy-local"):
        vals = np.array([c[key] for c in clients.values()])
        agg[key] = float(np.sum(vals * n_eval) / max(n_eval.sum(), 1))  # pooled over evaluation rows
        agg[f"{key}-client-mean"] = float(np.mean(vals))
    blocks = sorted({k[4:] for c in clients.values() for k in c if k.startswith("lam-")} - {"mean"})
    for b in blocks:
        agg[f"lam-{b}-mean"] = float(np.mean([c[f"lam-{b}"] for c in clients.values()]))
    return agg


class PotaraFedAvg(FedAvg):
    r"""Flower's FedAvg plus Potara's final personalisation round.

    Differences from ``flwr.serverapp.strategy.FedAvg`` (everything else is inherited):

    * client sampling follows the estimator's ``client_fraction`` with the same generator as the
      in-process :meth:`PotaraClassifier.fit` (all clients when 1.0), after waiting for all
      ``min_available_nodes`` SuperNodes (FedAvg computes the sample size before waiting);
    * replies are averaged in partition order with :func:`fedavg_round`'s arithmetic, so the global
      model equals the in-process one bit for bit; a failed client reply raises;
    * :meth:`start` first asks every client for its size (``query.describe``), then runs the FedAvg
      rounds, then the ``train.personalize`` round, whose lambda statistics are aggregated by
      :meth:`aggregate_personalize`.

    Parameters
    ----------
    estimator : PotaraClassifier
        Its ``client_fraction`` and ``random_state`` drive the sampling (and the mini-batch seeds
        sent to the clients when the base model has a ``batch_size``).
    min_available_nodes : int or None, default=None
        Number of SuperNodes to wait for. ``None``: as many as the clients report in their node
        config's ``num-partitions`` (Flower's simulation sets it; on a deployment pass
        ``--node-config "partition-id=i num-partitions=M"`` to each SuperNode).
    node_timeout : float, default=120
        Seconds to wait for the SuperNodes (at the start and before each round); then
        :class:`TimeoutError` naming how many connected.
    return_models : bool, default=False
        Ask clients to send their personalised parameters and lambdas back in the personalisation
        round (diagnostics only: Potara itself needs no upload there).
    frozen_params : dict or None
        Blocks that are not trained (``W`` of a LoRA head): never sent; added back to the final
        ``federated_params``.
    check_state : bool, default=True
        After personalisation, send every client an ``evaluate`` message **without** parameters; the
        client answers with the accuracy of the personalised model read back from its
        ``Context.state`` (``clients[pid]["accuracy-from-state"]``): proof that the state persisted.
        Not counted in ``history`` (evaluation traffic, as Flower's per-round evaluation).
    fraction_evaluate : float, default=0.0
        Passed to ``FedAvg`` (0: no per-round evaluation).
    **fedavg_kwargs
        Passed to ``FedAvg``.
    """

    def __init__(self, estimator, *, min_available_nodes=None, node_timeout=DEFAULT_NODE_TIMEOUT,
                 return_models=False, frozen_params=None, check_state=True, fraction_evaluate=0.0,
                 **fedavg_kwargs):
        h = estimator._hparams()
        fedavg_kwargs.setdefault("min_train_nodes", 1)
        fedavg_kwargs.setdefault("min_evaluate_nodes", 1)
        self.expected_nodes = (None if min_available_nodes is None
                               else check_scalar_int(min_available_nodes, "min_available_nodes", low=1))
        self.node_timeout = check_scalar_float(node_timeout, "node_timeout", low=0.0, closed="neither")
        super().__init__(fraction_train=h["client_fraction"], fraction_evaluate=fraction_evaluate,
                         min_available_nodes=self.expected_nodes or 1, **fedavg_kwargs)
        self.estimator = estimator
        self.frozen_params = dict(frozen_params or {})
        self.check_state = bool(check_state)
        self.return_models = bool(return_models)
        self._h = h
        self._seed = estimator._seed()
        self._rng = client_generator(self._seed, "__rounds__")
        self.node_partition = {}  # node id -> partition id
        self.partition_size = {}  # partition id -> n_i
        self.history = []
        self._total = 0

    # ------------------------------------------------------------------ discovery
    def _wait_nodes(self, grid, n=None, deadline=None):
        """The connected node ids once at least ``n`` (default: the known clients) are there;
        :class:`TimeoutError` after ``node_timeout`` seconds."""
        n = n or self.min_available_nodes
        deadline = time.monotonic() + self.node_timeout if deadline is None else deadline
        while len(nodes := list(grid.get_node_ids())) < n:
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"only {len(nodes)} of {n} SuperNodes connected after {self.node_timeout:g} s "
                    "('node_timeout' / run config 'node-timeout'): start the missing SuperNodes, or "
                    "check their --superlink address and --node-config.")
            time.sleep(0.2)
        return nodes

    def _describe_nodes(self, grid, nodes, timeout, expected):
        """Send ``query.describe`` to ``nodes``, record their partitions and sizes; the updated count of
        expected clients."""
        msgs = [Message(content=RecordDict({"config": ConfigRecord({})}), message_type="query.describe",
                        dst_node_id=n) for n in nodes]
        replies = _raise_on_errors(grid.send_and_receive(messages=msgs, timeout=timeout), "describe")
        for r in replies:
            m = r.content["metrics"]
            self.node_partition[r.metadata.src_node_id] = int(m["partition-id"])
            self.partition_size[int(m["partition-id"])] = int(m["num-examples"])
            reported = int(m.get("num-partitions", -1))
            if self.expected_nodes is None:
                if reported < 1:
                    raise RuntimeError(
                        "the SuperNodes do not report 'num-partitions' in their node config: pass "
                        "min_nodes (run config 'min-nodes') or start each SuperNode with "
                        "--node-config \"partition-id=i num-partitions=M\".")
                expected = max(expected or 0, reported)
        return expected

    def describe(self, grid, timeout=3600):
        """Learn each node's partition id and training-set size (``query.describe``).

        Waits (at most ``node_timeout`` s) until all clients are known: ``min_available_nodes`` of
        them, or as many as the ``num-partitions`` the clients report.

        Parameters
        ----------
        grid : flwr.serverapp.Grid
            The grid of the running ServerApp.
        timeout : float, default=3600
            Seconds to wait for the replies.

        Returns
        -------
        dict
            Partition id -> number of training samples.
        """
        deadline = time.monotonic() + self.node_timeout
        expected = self.expected_nodes
        while True:
            nodes = self._wait_nodes(grid, max(1, len(self.node_partition) + 1) if expected is None
                                     else expected, deadline)
            new = [n for n in nodes if n not in self.node_partition]
            if new:
                expected = self._describe_nodes(grid, new, timeout, expected)
            if len(self.node_partition) >= expected:
                break
        pids = sorted(self.partition_size)
        if pids != list(range(len(pids))) or len(pids) != len(self.node_partition):
            raise RuntimeError(f"partition ids must be 0..M-1, one per SuperNode, without gaps; got {pids[:10]} "
                               f"from {len(self.node_partition)} SuperNodes.")
        self.min_available_nodes = len(self.node_partition)
        return self.partition_size

    @staticmethod
    def _raise_on_errors(replies, phase):
        return _raise_on_errors(replies, phase)

    # ------------------------------------------------------------------ FedAvg rounds
    def _sample_partitions(self, M):
        """The sampled partition ids of a round and their mini-batch seeds (``None`` in full batch)."""
        k = M if self.fraction_train >= 1.0 else max(1, int(round(self.fraction_train * M)))
        sel = np.arange(M) if k == M else np.sort(self._rng.choice(M, size=k, replace=False))
        seeds = None
        if self._h["batch_size"] is not None:
            seeds = [int(self._rng.integers(2**63)) for _ in sel]
        return sel, seeds

    def configure_train(self, server_round, arrays, config, grid):
        """One ``train`` message per sampled client (the in-process run's sampling).

        Parameters
        ----------
        server_round : int
            The round number (sent as ``server-round`` in the config).
        arrays : flwr.app.ArrayRecord
            The global (trainable) parameters.
        config : flwr.app.ConfigRecord
            Configuration sent to every client.
        grid : flwr.serverapp.Grid
            The grid of the running ServerApp.

        Returns
        -------
        list of flwr.app.Message
        """
        if self.fraction_train == 0.0:
            return []
        self._wait_nodes(grid)
        by_pid = {p: n for n, p in self.node_partition.items()}
        M = len(by_pid)
        sel, seeds = self._sample_partitions(M)
        config["server-round"] = server_round
        msgs = []
        for j, pid in enumerate(sel):
            cfg = ConfigRecord(dict(config))
            if seeds is not None:
                cfg["batch-seed"] = seeds[j]
            msgs.append(Message(content=RecordDict({self.arrayrecord_key: arrays, self.configrecord_key: cfg}),
                                message_type=MessageType.TRAIN, dst_node_id=by_pid[int(pid)]))
        log(INFO, "configure_train: %d of %d clients", len(msgs), M)
        self._down = _payload_bytes(arrays) * len(msgs)
        self._wire_down = arrays.count_bytes() * len(msgs)
        return msgs

    def aggregate_train(self, server_round, replies):
        """Average the replies in partition order with :func:`fedavg_round`'s arithmetic.

        Parameters
        ----------
        server_round : int
            The round number.
        replies : iterable of flwr.app.Message
            The clients' replies; a failed one raises :class:`RuntimeError`.

        Returns
        -------
        arrays : flwr.app.ArrayRecord or None
            The new global parameters (``None`` without replies).
        metrics : flwr.app.MetricRecord or None
            ``num-examples`` and ``clients``.
        """
        replies = _raise_on_errors(replies, f"train (round {server_round})")
        if not replies:
            return None, None
        replies.sort(key=lambda r: int(r.content["metrics"]["partition-id"]))
        params = [arrayrecord_to_params(r.content[self.arrayrecord_key]) for r in replies]
        weights = [float(r.content["metrics"][self.weighted_by_key]) for r in replies]
        theta = _weighted_mean(params, weights)  # the arithmetic of fedavg_round
        up = sum(_payload_bytes(r.content[self.arrayrecord_key]) for r in replies)
        wire_up = sum(r.content[self.arrayrecord_key].count_bytes() for r in replies)
        self._total += self._down + up
        self.history.append({"round": server_round, "clients": len(replies), "bytes_sent": self._down + up,
                             "cumulative_bytes": self._total, "wire_bytes": self._wire_down + wire_up})
        metrics = MetricRecord({"num-examples": int(sum(weights)), "clients": len(replies)})
        return params_to_arrayrecord(theta), metrics

    # ------------------------------------------------------------------ personalisation round
    def configure_personalize(self, arrays, grid):
        r"""One ``train.personalize`` message per client carrying :math:`\theta_F`.

        Parameters
        ----------
        arrays : flwr.app.ArrayRecord
            The federated (trainable) parameters :math:`\theta_F`.
        grid : flwr.serverapp.Grid
            The grid of the running ServerApp.

        Returns
        -------
        list of flwr.app.Message
        """
        self._wait_nodes(grid)
        cfg = {"n-total": int(sum(self.partition_size.values())), "return-models": self.return_models}
        content = {self.arrayrecord_key: arrays, self.configrecord_key: ConfigRecord(cfg)}
        msgs = [Message(content=RecordDict(dict(content)), message_type="train.personalize", dst_node_id=n)
                for n in sorted(self.node_partition)]
        sent = _payload_bytes(arrays) * len(msgs)
        self._total += sent
        self.history.append({"round": "final broadcast", "clients": len(msgs), "bytes_sent": sent,
                             "cumulative_bytes": self._total, "wire_bytes": arrays.count_bytes() * len(msgs)})
        return msgs

    def aggregate_personalize(self, replies):
        """Per-client metrics and the aggregated accuracy / lambda statistics.

        Parameters
        ----------
        replies : iterable of flwr.app.Message
            The ``train.personalize`` replies; a failed one raises :class:`RuntimeError`.

        Returns
        -------
        agg : dict
            Accuracies (pooled and client mean) and lambda statistics.
        clients : dict
            Partition id -> that client's metrics.
        """
        clients = _client_metrics(_raise_on_errors(replies, "personalize"))
        return _personalization_stats(clients), clients

    # ------------------------------------------------------------------ driver
    def _check_client_state(self, grid, clients, timeout):
        """Evaluate messages without arrays: clients answer from their stored state."""
        msgs = [Message(content=RecordDict({self.configrecord_key: ConfigRecord({"phase": "state-check"})}),
                        message_type=MessageType.EVALUATE, dst_node_id=n) for n in sorted(self.node_partition)]
        replies = _raise_on_errors(grid.send_and_receive(messages=msgs, timeout=timeout), "state check")
        for r in replies:
            m = r.content["metrics"]
            clients[int(m["partition-id"])]["accuracy-from-state"] = float(m.get("accuracy", float("nan")))

    def start(self, grid, initial_arrays, num_rounds=3, timeout=3600, train_config=None, evaluate_config=None,
              evaluate_fn=None):
        """Describe, ``num_rounds`` FedAvg rounds, then the personalisation round.

        Parameters
        ----------
        grid : flwr.serverapp.Grid
            The grid of the running ServerApp.
        initial_arrays : flwr.app.ArrayRecord
            The initial (trainable) parameters.
        num_rounds : int, default=3
            FedAvg rounds.
        timeout : float, default=3600
            Seconds to wait for the replies of each phase.
        train_config, evaluate_config : flwr.app.ConfigRecord or None
            Passed to ``FedAvg.start``.
        evaluate_fn : callable or None
            Passed to ``FedAvg.start``.

        Returns
        -------
        PotaraResult
        """
        self.describe(grid, timeout)
        result = super().start(grid, initial_arrays, num_rounds=num_rounds, timeout=timeout,
                               train_config=train_config, evaluate_config=evaluate_config, evaluate_fn=evaluate_fn)
        arrays = result.arrays if num_rounds > 0 and len(result.arrays) else initial_arrays
        replies = grid.send_and_receive(messages=self.configure_personalize(arrays, grid), timeout=timeout)
        agg, clients = self.aggregate_personalize(replies)
        if self.check_state:
            self._check_client_state(grid, clients, timeout)
        log(INFO, "personalize: %s", {k: v for k, v in agg.items() if not isinstance(v, list)})
        federated = {**self.frozen_params, **arrayrecord_to_params(arrays)}
        return PotaraResult(result=result, federated_params=federated, personalization=agg,
                            clients=clients, history=list(self.history))
