"""Data and model of the App: digits (sklearn's copy, no download) split among clients.

Every SuperNode calls :func:`load_partition` with its ``partition-id`` and ``num-partitions`` (node
config) and the run config's ``dirichlet-alpha`` and ``data-seed``; :func:`load_all` gives the same
split as one data set with client ids, for the in-process reference
``PotaraClassifier().fit(X, y, client_ids)``. Partition ``m`` is client ``m`` of that split.
"""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_digits

from algos.federated import PotaraClassifier
from algos.federated._data import dirichlet_label_split

N_FEATURES = 64
CLASSES = np.arange(10)
TEST_FRACTION = 0.3
MIN_CLIENT_SIZE = 20


def make_estimator():
    """The App's PotaraClassifier; ``[tool.flwr.app.config]`` / ``--run-config`` override its
    rounds, epochs, variance method and seed (``algos.federated.flower.RUN_CONFIG_KEYS``)."""
    return PotaraClassifier(n_rounds=3, local_epochs=2, finetune_epochs=5, variance_method="bootstrap",
                            n_bootstrap=4, random_state=0)


def load_all(num_partitions, alpha=0.5, data_seed=0):
    """``(X, y, client_ids, is_test)`` over all clients (standardised features)."""
    X, y = load_digits(return_X_y=True)
    X = (X - X.mean(0)) / (X.std(0) + 1e-12)
    ids = dirichlet_label_split(y, int(num_partitions), float(alpha), min_size=MIN_CLIENT_SIZE,
                                random_state=int(data_seed))
    is_test = np.random.default_rng([int(data_seed), 1]).random(len(y)) < TEST_FRACTION
    return X, y, ids, is_test


def load_partition(partition_id, context):
    """The training and test rows of one client (``data_fn`` of ``make_client_app``)."""
    rc, nc = context.run_config, context.node_config
    X, y, ids, is_test = load_all(nc["num-partitions"], rc.get("dirichlet-alpha", 0.5), rc.get("data-seed", 0))
    mine = ids == partition_id
    return {"X": X[mine & ~is_test], "y": y[mine & ~is_test], "X_test": X[mine & is_test],
            "y_test": y[mine & is_test], "client_id": int(partition_id)}
