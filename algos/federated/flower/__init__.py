r"""Potara on Flower (extra ``federated``): a ``ClientApp`` factory, the ``PotaraFedAvg`` strategy and a
simulation runner that reproduces :meth:`PotaraClassifier.fit <algos.federated.PotaraClassifier.fit>`.

Flower (https://flower.ai, Apache-2.0) runs the same client code on a laptop (its Ray-based simulation
engine) or on real devices (SuperNodes connected to a SuperLink). Potara changes nothing on the server:
the federated model is plain FedAvg on the model's parameter blocks; personalisation happens on the
clients, after training, without extra communication.

Protocol (Flower's Message API, ``flwr>=1.21``; tested with 1.42):

1. ``query.describe`` (once): every client reports its ``partition-id`` and training-set size, so the
   server knows the clients, their FedAvg weights :math:`n_i` and the total :math:`N`.
2. ``train`` (rounds ``1..n_rounds``): the server sends the global parameters (an ``ArrayRecord`` with
   blocks ``W``, ``b`` and, with an adapter, ``A``, ``B``); every sampled client runs
   :func:`~algos.federated.local_train` with the estimator's
   :meth:`~algos.federated.PotaraClassifier.local_train_kwargs` and returns its parameters; the server
   sets :math:`\theta \leftarrow \sum_i n_i\theta_i/\sum_i n_i` (only the trained blocks travel: for a
   LoRA head ``b``, ``A``, ``B``; every client rebuilds the frozen ``W`` from the seeded initialisation).
   Replies are averaged **in partition
   order with the same arithmetic as** :func:`~algos.federated.fedavg_round`, and clients are sampled
   with the same generator as the in-process run, so with the same ``random_state`` the global model is
   bit-for-bit the in-process one.
3. ``train.personalize`` (once, the final personalisation round): the server broadcasts
   :math:`\theta_F`; every client calls :meth:`PotaraClassifier.personalize
   <algos.federated.PotaraClassifier.personalize>` (fine-tune :math:`\theta_{L,i}` from :math:`\theta_F`,
   estimate the variances, set :math:`\lambda_i`, merge), keeps the **local model, the merged model and
   lambda in its persistent state** (``Context.state``, a ``RecordDict`` that survives between messages,
   also in simulation where ClientApp objects are ephemeral), evaluates the merged model on its test data
   and replies with metrics only. The strategy aggregates accuracy and the lambda statistics (mean, std,
   quantiles, a 10-bin histogram on [0, 1], per-block means).
4. ``evaluate`` (optional, FedAvg's per-round evaluation): accuracy of the global model and, once the
   client holds one in its state, of its personalised model.

State kept by a client (keys of ``context.state``): ``"potara.local"`` and ``"potara.personalized"``
(``ArrayRecord`` of parameter blocks), ``"potara.lambda"`` (``ArrayRecord``: one array per block, 0-d for
module/global granularity) and ``"potara.summary"`` (``MetricRecord``).

Run configuration (``context.run_config``: ``[tool.flwr.app.config]`` of a Flower App, overridden by
``flwr run --run-config``) is read by both factories, so server and clients agree: see
:data:`RUN_CONFIG_KEYS` (``num-server-rounds``, ``local-epochs``, ``fine-tune-epochs``,
``variance-method``, ``seed``, ``client-fraction``) and the server-only keys ``min-nodes``,
``node-timeout``, ``return-models`` and ``result-dir`` of :func:`make_server_app`. The node
configuration (``context.node_config``) gives each client its ``partition-id`` and
``num-partitions``. The Flower App ``examples/federated/potara_app`` is built on these factories.

``import algos.federated.flower`` does not import Flower: the ClientApp's handlers
(``algos.federated.flower._client``) and the strategy :data:`PotaraFedAvg`
(``algos.federated.flower._strategy``) live in modules imported on first use (the strategy through
this package's ``__getattr__``); the factories, the records and the simulation runner live in
``algos.federated.flower._app``.
"""

from ._app import (
    RUN_CONFIG_KEYS,
    FlowerRun,
    PotaraResult,
    _build_strategy_class,
    arrayrecord_to_params,
    estimator_from_run_config,
    make_client_app,
    make_server_app,
    params_to_arrayrecord,
    run_flower_simulation,
    save_result,
)

__all__ = [
    "make_client_app",
    "make_server_app",
    "estimator_from_run_config",
    "save_result",
    "RUN_CONFIG_KEYS",
    "PotaraFedAvg",  # noqa: F822 (resolved lazily by the module __getattr__: Flower is imported on first use)
    "PotaraResult",
    "FlowerRun",
    "run_flower_simulation",
    "params_to_arrayrecord",
    "arrayrecord_to_params",
]


def __getattr__(name):  # PEP 562: import the Flower subclass only when asked for
    if name == "PotaraFedAvg":
        return _build_strategy_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
