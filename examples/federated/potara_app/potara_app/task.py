"""Data and model of the App: digits (sklearn's copy, no download) among clients.

Every SuperNode calls :func:`load_partition` with its ``partition-id`` and ``num-partitions`` (node
config) and the run config's ``data-generator``, ``dirichlet-alpha``, ``data-seed`` (and, for the
``digits-resample`` generator, ``samples-per-client`` / ``test-samples-per-client``); :func:`load_all`
gives the same clients as one data set with client ids, for the in-process reference
``PotaraClassifier().fit(X, y, client_ids)``. Partition ``m`` is client ``m``.

Generators (run config ``data-generator``):

* ``"dirichlet-split"`` (default): the 1,797 digits cut into disjoint, label-skewed pieces
  (:func:`algos.federated.dirichlet_label_split`, the split of flwr-datasets' ``DirichletPartitioner``);
  at least 20 training rows per client bounds it to a few dozen clients, and every SuperNode builds
  the whole split to take its piece.
* ``"digits-resample"``: :func:`algos.federated.make_digits_clients`, each client's label mixture drawn
  from a Dirichlet and its rows resampled (with noise) from the digits, from the client's own seed: a
  SuperNode builds only its own partition, in about 23 KB, for any number of clients (1,000 and more).
"""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_digits

from algos.federated import PotaraClassifier, make_digits_clients
from algos.federated._data import dirichlet_label_split

N_FEATURES = 64
CLASSES = np.arange(10)
TEST_FRACTION = 0.3
MIN_CLIENT_SIZE = 20
GENERATORS = ("dirichlet-split", "digits-resample")


def make_estimator():
    """The App's PotaraClassifier; ``[tool.flwr.app.config]`` / ``--run-config`` override its
    rounds, epochs, variance method, client fraction and seed (``algos.federated.flower.RUN_CONFIG_KEYS``)."""
    return PotaraClassifier(n_rounds=3, local_epochs=2, finetune_epochs=5, variance_method="bootstrap",
                            n_bootstrap=4, random_state=0)


def _generator(name):
    if name not in GENERATORS:
        raise ValueError(f"run config 'data-generator' must be one of {GENERATORS}; got {name!r}.")
    return name


def load_all(num_partitions, alpha=0.5, data_seed=0, generator="dirichlet-split", n_train=30, n_test=15):
    """``(X, y, client_ids, is_test)`` over all ``num_partitions`` clients (standardised features)."""
    if _generator(generator) == "digits-resample":
        d = make_digits_clients(np.arange(int(num_partitions)), alpha=float(alpha), n_train=int(n_train),
                                n_test=int(n_test), random_state=int(data_seed))
        is_test = np.r_[np.zeros(len(d.y), bool), np.ones(len(d.y_test), bool)]
        return np.vstack([d.X, d.X_test]), np.r_[d.y, d.y_test], np.r_[d.client_ids, d.test_client_ids], is_test
    X, y = load_digits(return_X_y=True)
    X = (X - X.mean(0)) / (X.std(0) + 1e-12)
    ids = dirichlet_label_split(y, int(num_partitions), float(alpha), min_size=MIN_CLIENT_SIZE,
                                random_state=int(data_seed))
    is_test = np.random.default_rng([int(data_seed), 1]).random(len(y)) < TEST_FRACTION
    return X, y, ids, is_test


def num_clients(context):
    """Clients of the run: run config ``num-clients``, or (0, the default) the node config's ``num-partitions``."""
    n = int(context.run_config.get("num-clients", 0)) or int(context.node_config["num-partitions"])
    pid = int(context.node_config["partition-id"])
    if not 0 <= pid < n:
        raise ValueError(f"partition-id {pid} is outside 0 .. num-clients - 1 = {n - 1} (run config 'num-clients').")
    return n


def load_partition(partition_id, context):
    """The training and test rows of one client (``data_fn`` of ``make_client_app``)."""
    rc = context.run_config
    generator = _generator(rc.get("data-generator", "dirichlet-split"))
    alpha, seed = float(rc.get("dirichlet-alpha", 0.5)), int(rc.get("data-seed", 0))
    n = num_clients(context)
    if generator == "digits-resample":  # only this client's rows, from its own seed
        d = make_digits_clients(int(partition_id), alpha=alpha, n_train=int(rc.get("samples-per-client", 30)),
                                n_test=int(rc.get("test-samples-per-client", 15)), random_state=seed)
        return {"X": d.X, "y": d.y, "X_test": d.X_test, "y_test": d.y_test, "client_id": int(partition_id)}
    X, y, ids, is_test = load_all(n, alpha, seed)
    mine = ids == partition_id
    return {"X": X[mine & ~is_test], "y": y[mine & ~is_test], "X_test": X[mine & is_test],
            "y_test": y[mine & is_test], "client_id": int(partition_id)}
