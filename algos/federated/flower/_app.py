"""Potara on Flower, the Flower-free part: run-config keys, parameter records, the ClientApp and ServerApp
factories, results and the simulation runner (see :mod:`algos.federated.flower`)."""

from __future__ import annotations

import inspect
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..._io import atomic_write
from ..._validation import check_scalar_float, check_scalar_int

BLOCKS = ("W", "b", "A", "B")
STATE_LOCAL = "potara.local"
STATE_MERGED = "potara.personalized"
STATE_LAMBDA = "potara.lambda"
STATE_SUMMARY = "potara.summary"

#: ``context.run_config`` key -> :class:`~algos.federated.PotaraClassifier` parameter.
RUN_CONFIG_KEYS = {
    "num-server-rounds": "n_rounds",
    "local-epochs": "local_epochs",
    "fine-tune-epochs": "finetune_epochs",
    "variance-method": "variance_method",
    "seed": "random_state",
    "client-fraction": "client_fraction",
}
DEFAULT_NODE_TIMEOUT = 120.0  # seconds the server waits for SuperNodes before raising


def _require_flwr():
    try:
        import flwr  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "algos.federated.flower needs Flower: pip install 'algos-theory[federated]' (flwr>=1.42)."
        ) from exc


# ---------------------------------------------------------------------------------------- conversions
def params_to_arrayrecord(params):
    """A parameter dict (``W``, ``b`` [, ``A``, ``B``]) as a Flower ``ArrayRecord`` (float64 kept)."""
    _require_flwr()
    from flwr.app import Array, ArrayRecord

    return ArrayRecord({k: Array(np.ascontiguousarray(params[k], dtype=np.float64)) for k in BLOCKS if k in params})


def arrayrecord_to_params(record):
    """The inverse of :func:`params_to_arrayrecord`: a dict of float64 arrays."""
    return {k: np.asarray(v.numpy(), dtype=np.float64) for k, v in record.items()}


def _payload_bytes(record):
    """Bytes of the float payload of an ArrayRecord (what the in-process accounting counts)."""
    return int(sum(v.numpy().nbytes for v in record.values()))


def _py(cid):
    return cid.item() if hasattr(cid, "item") else cid


# ---------------------------------------------------------------------------------------- run config
def estimator_from_run_config(estimator, run_config):
    r"""``estimator`` with the hyper-parameters that ``run_config`` sets (see :data:`RUN_CONFIG_KEYS`).

    Parameters
    ----------
    estimator : PotaraClassifier
        The defaults; returned unchanged when ``run_config`` sets none of the keys, else a clone with
        ``set_params`` applied.
    run_config : mapping
        ``context.run_config`` (other keys are ignored).

    Returns
    -------
    PotaraClassifier

    Raises
    ------
    ValueError, TypeError
        When a value is out of range or of the wrong type, naming the run-config key and the estimator
        parameter (e.g. ``"run config 'local-epochs' (local_epochs): 'local_epochs' must be an int in
        [0, inf]; got -1."``).
    """
    from sklearn.base import clone

    params = {name: run_config[key] for key, name in RUN_CONFIG_KEYS.items() if key in run_config}
    if not params:
        return estimator
    if "random_state" in params and params["random_state"] is not None:
        params["random_state"] = check_scalar_int(params["random_state"], "seed", low=0)
    est = clone(estimator).set_params(**params)
    try:
        est._hparams()
    except (TypeError, ValueError) as exc:
        keys = ", ".join(f"'{k}' ({RUN_CONFIG_KEYS[k]})" for k in RUN_CONFIG_KEYS if k in run_config)
        raise type(exc)(f"run config {keys}: {exc}") from exc
    return est


def _run_value(run_config, key, default, check):
    return check(run_config[key], key) if key in run_config else default


# ------------------------------------------------------------------------------------------- client
def _as_client_data(data, partition_id):
    """Normalise what ``data_fn`` returns to a dict with X, y, X_test, y_test, client_id."""
    if isinstance(data, dict):
        out = dict(data)
    elif isinstance(data, (tuple, list)) and len(data) in (2, 4):
        keys = ("X", "y", "X_test", "y_test")[: len(data)]
        out = dict(zip(keys, data))
    else:
        raise TypeError("'data_fn' must return a dict with keys 'X', 'y' (optionally 'X_test', 'y_test', "
                        "'client_id') or a tuple (X, y) / (X, y, X_test, y_test); "
                        f"got {type(data).__name__}.")
    if "X" not in out or "y" not in out:
        raise ValueError(f"'data_fn' must provide 'X' and 'y'; got keys {sorted(out)}.")
    out.setdefault("X_test", None)
    out.setdefault("y_test", None)
    out.setdefault("client_id", partition_id)
    return out


def make_client_app(estimator, data_fn, classes, *, partition_key="partition-id"):
    r"""Build the Flower ``ClientApp`` running Potara's client side.

    Parameters
    ----------
    estimator : PotaraClassifier
        Unfitted; its hyper-parameters (base model, ``local_epochs``, ``finetune_epochs``,
        ``variance_method``, ``granularity``, ``random_state``, ...) configure every client exactly as
        :meth:`~algos.federated.PotaraClassifier.fit` configures its in-process clients; the keys of
        :data:`RUN_CONFIG_KEYS` present in ``context.run_config`` override them for that run (see
        :func:`estimator_from_run_config`).
    data_fn : callable
        ``data_fn(partition_id) -> dict`` (or ``data_fn(partition_id, context)``, which also sees
        ``context.node_config`` / ``context.run_config``, e.g. ``num-partitions``) with ``"X"``, ``"y"``
        (training data: raw features, before
        ``base_features``, and raw labels), optionally ``"X_test"``, ``"y_test"`` (accuracy is reported
        on them; on the training data otherwise) and ``"client_id"`` (the id used in the in-process run,
        which seeds the client's random draws; default the partition id). A tuple ``(X, y)`` or
        ``(X, y, X_test, y_test)`` is accepted. Called once per process and partition (cached).
    classes : array-like
        The global sorted class list (``PotaraClassifier.classes_`` / ``np.unique(y)`` over all clients):
        every client must encode labels the same way although it sees only its own.
    partition_key : str, default="partition-id"
        Key of ``context.node_config`` holding the partition index. Flower's simulation engine sets
        ``"partition-id"`` (and ``"num-partitions"``); on a deployment pass both to each SuperNode
        with ``flower-supernode --node-config "partition-id=3 num-partitions=M"``. The ids must be
        ``0 .. M-1`` (the server checks); to reproduce an in-process run, partition ``m`` holds the
        ``m``-th client of ``np.unique(client_ids)``.

    Returns
    -------
    flwr.clientapp.ClientApp
        With handlers ``query.describe``, ``train``, ``train.personalize`` and ``evaluate``.

    Raises
    ------
    ValueError
        At message time, in the client (reported to the server as an error reply): labels outside
        ``classes``, a client with fewer than 2 samples, a node config without ``partition_key``, a
        run-config value out of range.
    """
    _require_flwr()
    from flwr.clientapp import ClientApp

    from ._client import PotaraClientHandlers

    classes = np.asarray(classes)
    if classes.ndim != 1 or classes.size < 2:
        raise ValueError(f"'classes' must be a 1-d array of at least 2 labels; got shape {classes.shape}.")
    if not np.all(classes[1:] > classes[:-1]):
        raise ValueError("'classes' must be sorted and without duplicates (use np.unique over all labels).")
    if not callable(data_fn):
        raise TypeError(f"'data_fn' must be callable; got {type(data_fn).__name__}.")
    try:
        n_args = len([p for p in inspect.signature(data_fn).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
    except (TypeError, ValueError):  # builtins without a signature
        n_args = 1
    handlers = PotaraClientHandlers(estimator, data_fn, classes, partition_key, n_args)
    app = ClientApp()
    app.query("describe")(handlers.describe)
    app.train()(handlers.train)
    app.train("personalize")(handlers.personalize)
    app.evaluate()(handlers.evaluate)
    return app


# ------------------------------------------------------------------------------------------- server
@dataclass
class PotaraResult:
    """What :meth:`PotaraFedAvg.start` returns.

    Attributes
    ----------
    result : flwr.serverapp.strategy.Result
        Flower's result of the FedAvg rounds (final arrays, per-round metrics).
    federated_params : dict
        :math:`\\theta_F` as a parameter dict.
    personalization : dict
        Aggregated metrics of the personalisation round (accuracy weighted by evaluation samples,
        lambda mean/std/min/max/quartiles, ``lam-hist`` (10 bins on [0, 1]), per-block lambda means).
    clients : dict
        Partition id -> that client's metrics (accuracy, accuracy-federated, accuracy-local, lambda per
        block, bound values, ``accuracy-from-state`` with ``check_state``) and, with ``return_models``,
        ``"personalized"`` and ``"lambda"`` arrays.
    history : list of dict
        Per round: clients, bytes_sent (float payload of the parameter arrays, down + up), cumulative;
        the last entry is the final broadcast of the personalisation round (as in ``history_`` of the
        in-process estimator). ``wire_bytes`` adds Flower's serialised size of the ArrayRecords.
    """

    result: object
    federated_params: dict
    personalization: dict
    clients: dict
    history: list = field(default_factory=list)


def _build_strategy_class():
    """:class:`PotaraFedAvg`, importing Flower and ``algos.federated.flower._strategy`` on first use."""
    _require_flwr()
    from ._strategy import PotaraFedAvg

    return PotaraFedAvg


def make_server_app(estimator, n_features, n_classes, *, min_nodes=None, node_timeout=DEFAULT_NODE_TIMEOUT,
                    sink=None, return_models=False, **strategy_kwargs):
    r"""Build the Flower ``ServerApp``: :class:`PotaraFedAvg` from ``estimator.initial_params`` for
    ``estimator.n_rounds`` rounds, with the run configuration applied.

    Parameters
    ----------
    estimator : PotaraClassifier
        The defaults; the keys of :data:`RUN_CONFIG_KEYS` in ``context.run_config`` override them for
        the run (the ClientApp of :func:`make_client_app` applies the same overrides, so both sides
        agree on the rounds, epochs and seed).
    n_features : int
        Features seen by the head (after ``base_features``).
    n_classes : int
    min_nodes : int or None, default=None
        SuperNodes to wait for. ``None``: the ``num-partitions`` that the clients report from their
        node config (set by Flower's simulation; by ``--node-config`` on a deployment). Run config
        ``min-nodes`` (``0`` for ``None``) overrides it.
    node_timeout : float, default=120
        Seconds the server waits for the SuperNodes before raising :class:`TimeoutError`; run config
        ``node-timeout`` overrides it.
    sink : dict, callable or None
        Where the :class:`PotaraResult` goes: ``sink["result"]`` for a dict (the simulation runs the
        ServerApp in a thread of the calling process), ``sink(result)`` for a callable. Independently,
        a non-empty run config ``result-dir`` makes the server write the result there with
        :func:`save_result` (what a deployment uses).
    return_models : bool, default=False
        Run config ``return-models`` overrides it.
    **strategy_kwargs
        Passed to :class:`PotaraFedAvg`.

    Raises
    ------
    ValueError, TypeError
        For bad arguments here; for bad run-config values when the run starts (in the ServerApp).
    TimeoutError
        In the ServerApp, when the SuperNodes do not all connect within ``node_timeout``.
    """
    _require_flwr()
    from flwr.serverapp import ServerApp

    n_features = check_scalar_int(n_features, "n_features", low=1)
    n_classes = check_scalar_int(n_classes, "n_classes", low=2)
    if min_nodes is not None:
        min_nodes = check_scalar_int(min_nodes, "min_nodes", low=1)
    node_timeout = check_scalar_float(node_timeout, "node_timeout", low=0.0, closed="neither")
    estimator._hparams()
    app = ServerApp()

    @app.main()
    def main(grid, context):
        rc = context.run_config
        est = estimator_from_run_config(estimator, rc)
        n_min = _run_value(rc, "min-nodes", min_nodes, lambda v, k: check_scalar_int(v, k, low=0) or None)
        timeout = _run_value(rc, "node-timeout", node_timeout,
                             lambda v, k: check_scalar_float(v, k, low=0.0, closed="neither"))
        ret = _run_value(rc, "return-models", return_models, _check_bool)
        result_dir = _run_value(rc, "result-dir", "", lambda v, k: str(v))
        init = est.initial_params(n_features, n_classes)
        trainable = est.local_train_kwargs(n_classes)["trainable"]
        trained = {k: v for k, v in init.items() if k in trainable}
        frozen = {k: v for k, v in init.items() if k not in trainable}
        strategy = _build_strategy_class()(est, min_available_nodes=n_min, node_timeout=timeout, return_models=ret,
                                           frozen_params=frozen, **strategy_kwargs)
        out = strategy.start(grid, params_to_arrayrecord(trained), num_rounds=est._hparams()["n_rounds"])
        if result_dir:
            save_result(out, result_dir)
        if callable(sink):
            sink(out)
        elif sink is not None:
            sink["result"] = out

    return app


def _check_bool(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"'{name}' must be a bool; got {value!r} of type {type(value).__name__}.")
    return bool(value)


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x


def save_result(result, directory):
    r"""Write a :class:`PotaraResult` to ``directory`` (created if needed).

    Files: ``result.json`` (``personalization``, ``history`` and, per partition id, the client's
    metrics without arrays) and ``models.npz`` with float64 arrays ``federated/<block>`` and, when the
    clients returned them (``return-models``), ``client<pid>/personalized/<block>`` and
    ``client<pid>/lambda/<block>``. Read back with :func:`numpy.load` and :func:`json.load`.

    Returns
    -------
    pathlib.Path
        The directory.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    arrays = {f"federated/{k}": np.asarray(v) for k, v in result.federated_params.items()}
    clients = {}
    for pid, c in result.clients.items():
        clients[str(pid)] = _jsonable({k: v for k, v in c.items() if k not in ("personalized", "lambda")})
        for kind in ("personalized", "lambda"):
            for k, v in c.get(kind, {}).items():
                arrays[f"client{pid}/{kind}/{k}"] = np.asarray(v, dtype=np.float64)
    with atomic_write(out / "models.npz", "wb") as fh:
        np.savez(fh, **arrays)
    doc = {"personalization": _jsonable(result.personalization), "history": _jsonable(result.history),
           "clients": clients}
    with atomic_write(out / "result.json", "w", encoding="utf-8") as fh:
        fh.write(json.dumps(doc, indent=1, allow_nan=True))
    return out


# ------------------------------------------------------------------------------------------ simulation
class _DropRunSimulationNotice:
    """A logging filter dropping only Flower's deprecation notice of ``run_simulation``."""

    def filter(self, record):
        return "`run_simulation` function is deprecated" not in record.getMessage()


@dataclass
class FlowerRun:
    """Result of :func:`run_flower_simulation` (client keys are the ``client_ids`` labels).

    Attributes
    ----------
    federated_params : dict
    client_accuracy : dict client -> accuracy of the personalised model (on its test rows, else train)
    client_accuracy_federated, client_accuracy_local : dict client -> accuracy of theta_F / theta_L
    client_accuracy_from_state : dict client -> accuracy of the personalised model as read back from the
        client's ``Context.state`` by a later message (equals ``client_accuracy``)
    mixing_weights : dict client -> {block: lambda mean}
    personalized_models : dict client -> params (only with ``return_models=True``)
    lambdas : dict client -> {block: array} (only with ``return_models=True``)
    lambda_stats : dict, the aggregated personalisation metrics of :class:`PotaraFedAvg`
    history : list of dict, per-round bytes (see :class:`PotaraResult`)
    bytes_total : int
    wall_time_s : float, the whole simulation (Ray start-up included)
    result : PotaraResult
    """

    federated_params: dict
    client_accuracy: dict
    client_accuracy_federated: dict
    client_accuracy_local: dict
    client_accuracy_from_state: dict
    mixing_weights: dict
    personalized_models: dict
    lambdas: dict
    lambda_stats: dict
    history: list
    bytes_total: int
    wall_time_s: float
    result: object


def run_flower_simulation(estimator, X, y, client_ids, X_test=None, y_test=None, test_client_ids=None, *,
                          num_actors=1, return_models=False, backend_config=None, verbose=False):
    r"""Run :class:`~algos.federated.PotaraClassifier`'s experiment on Flower's simulation engine.

    One virtual SuperNode per client (clients in ``np.unique(client_ids)`` order, as in
    :meth:`PotaraClassifier.fit`), the ClientApp of :func:`make_client_app` and the ServerApp of
    :func:`make_server_app`. With full-batch training (``base_estimator.batch_size=None``) and an int
    ``random_state``, the federated model, the lambdas, the personalised models and hence the per-client
    accuracies equal those of ``estimator.fit(X, y, client_ids)`` (the test suite checks 1e-6; in
    practice they agree bit for bit). Offline: Flower's Ray backend runs locally.

    This is a thin in-process convenience (tests, notebooks: the data stay Python objects) over
    Flower's Python simulation entry point ``flwr.simulation.run_simulation``, which Flower marks as
    deprecated in favour of the ``flwr run`` command; that one notice is dropped from Flower's log,
    nothing else is silenced. The supported way to run Potara on Flower, in simulation or on a
    deployment, is the Flower App ``examples/federated/potara_app`` with ``flwr run`` (built on the
    same :func:`make_client_app` / :func:`make_server_app`; see ``docs/federated.md``).

    Parameters
    ----------
    estimator : PotaraClassifier
    X, y, client_ids : training data, as for :meth:`PotaraClassifier.fit`
    X_test, y_test, test_client_ids : optional held-out rows (every test client must be a training client)
    num_actors : int, default=1
        Ray actors running ClientApps (each gets one CPU). One actor keeps start-up short; Flower
        runs the clients of a round on the actors in turn.
    return_models : bool, default=False
        Also bring back each client's personalised parameters and lambda arrays.
    backend_config : dict or None
        Flower backend configuration; default ``{"client_resources": {"num_cpus": 1, "num_gpus": 0},
        "init_args": {"num_cpus": num_actors, "include_dashboard": False}}``.
    verbose : bool, default=False
        Keep Flower's INFO logging.

    Returns
    -------
    FlowerRun
    """
    _require_flwr()
    import logging

    from flwr.simulation import run_simulation

    num_actors = check_scalar_int(num_actors, "num_actors", low=1)
    parts, clients, classes, n_features = _simulation_partitions(estimator, X, y, client_ids, X_test, y_test,
                                                                 test_client_ids)

    def data_fn(pid):
        return parts[pid]

    client_app = make_client_app(estimator, data_fn, classes)
    sink = {}
    server_app = make_server_app(estimator, n_features, len(classes), sink=sink, return_models=return_models)
    if backend_config is None:
        backend_config = {"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                          "init_args": {"num_cpus": num_actors, "include_dashboard": False}}
    flwr_logger = logging.getLogger("flwr")
    old_level = flwr_logger.level
    if not verbose:
        flwr_logger.setLevel(logging.WARNING)
    notice = _DropRunSimulationNotice()
    flwr_logger.addFilter(notice)
    t0 = time.perf_counter()
    try:
        run_simulation(server_app=server_app, client_app=client_app, num_supernodes=len(clients),
                       backend_config=backend_config, verbose_logging=False)
    finally:
        flwr_logger.removeFilter(notice)
        flwr_logger.setLevel(old_level)
    wall = time.perf_counter() - t0
    if "result" not in sink:
        raise RuntimeError("the Flower simulation ended without a result (see Flower's log above).")
    return _flower_run(sink["result"], clients, wall)


def _simulation_partitions(estimator, X, y, client_ids, X_test, y_test, test_client_ids):
    """Checked data split by client (``np.unique(client_ids)`` order): ``(parts, clients, classes,
    n_features)``, ``parts[m]`` the ``data_fn`` dict of partition ``m``."""
    estimator._hparams()
    Xc = estimator._check_X(X)
    y = np.asarray(y)
    ids = estimator._check_client_ids(client_ids, Xc.shape[0])
    if y.ndim != 1 or y.shape[0] != Xc.shape[0]:
        raise ValueError(f"'y' must be 1-d with one label per row of X ({Xc.shape[0]}); got shape {y.shape}.")
    classes = np.unique(y)
    if classes.size < 2:
        raise ValueError(f"'y' must contain at least 2 classes over all clients; got {classes.size}.")
    clients = np.unique(ids)
    ci = np.searchsorted(clients, ids)
    test_pos = None
    if X_test is not None:
        if y_test is None or test_client_ids is None:
            raise ValueError("'y_test' and 'test_client_ids' are required with 'X_test'.")
        Xt = estimator._check_X(X_test, "X_test")
        yt = np.asarray(y_test)
        tids = estimator._check_client_ids(test_client_ids, Xt.shape[0])
        test_pos = np.clip(np.searchsorted(clients, tids), 0, len(clients) - 1)
        if not np.all(clients[test_pos] == tids):
            raise ValueError("'test_client_ids' contains clients without training data.")
    parts = []
    for m in range(len(clients)):
        d = {"X": Xc[ci == m], "y": y[ci == m], "client_id": _py(clients[m])}
        if test_pos is not None:
            d["X_test"], d["y_test"] = Xt[test_pos == m], yt[test_pos == m]
        parts.append(d)
    return parts, clients, classes, estimator._features(Xc[:2]).shape[1]


def _flower_run(out, clients, wall):
    """:class:`FlowerRun` from the server's :class:`PotaraResult`, keyed by the ``client_ids`` labels."""
    key = {m: _py(clients[m]) for m in range(len(clients))}
    cl = out.clients
    return FlowerRun(
        federated_params=out.federated_params,
        client_accuracy={key[p]: c["accuracy"] for p, c in cl.items()},
        client_accuracy_federated={key[p]: c["accuracy-federated"] for p, c in cl.items()},
        client_accuracy_local={key[p]: c["accuracy-local"] for p, c in cl.items()},
        client_accuracy_from_state={key[p]: c["accuracy-from-state"] for p, c in cl.items()
                                    if "accuracy-from-state" in c},
        mixing_weights={key[p]: {k[4:]: v for k, v in c.items() if k.startswith("lam-") and k != "lam-mean"}
                        for p, c in cl.items()},
        personalized_models={key[p]: c["personalized"] for p, c in cl.items() if "personalized" in c},
        lambdas={key[p]: c["lambda"] for p, c in cl.items() if "lambda" in c},
        lambda_stats=out.personalization,
        history=out.history,
        bytes_total=int(out.history[-1]["cumulative_bytes"]) if out.history else 0,
        wall_time_s=wall,
        result=out,
    )
