"""Flower integration: the simulation reproduces PotaraClassifier.fit (spec: per-client accuracy to 1e-6).

Needs the ``federated`` extra (flwr); CI installs it. The simulation test starts Ray once (module fixture).
"""

import os
import subprocess
import sys
import time

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_digits

from algos.federated._data import dirichlet_label_split
from algos.federated._model import predict_logits
from algos.federated._potara import PotaraClassifier

PARITY_TOL = 1e-6  # the acceptance tolerance on per-client accuracy
PARAM_TOL = 1e-12  # same kernels, same arithmetic, same order: equal up to (in practice exactly) rounding


def test_import_does_not_load_flower():
    code = ("import sys, algos.federated.flower as f; assert 'flwr' not in sys.modules, 'flwr imported'; "
            "print(f.__all__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_client_data_normalisation():
    from algos.federated.flower._app import _as_client_data

    d = _as_client_data((np.zeros((2, 3)), [0, 1]), 4)
    assert d["client_id"] == 4 and d["X_test"] is None
    d = _as_client_data({"X": 1, "y": 2, "client_id": "a"}, 0)
    assert d["client_id"] == "a"
    with pytest.raises(TypeError, match="'data_fn' must return a dict"):
        _as_client_data(np.zeros(3), 0)
    with pytest.raises(ValueError, match="must provide 'X' and 'y'"):
        _as_client_data({"X": 1}, 0)


def test_arrayrecord_roundtrip_and_bad_arguments():
    pytest.importorskip("flwr")
    from algos.federated.flower import arrayrecord_to_params, make_client_app, params_to_arrayrecord

    rng = np.random.default_rng(0)
    p = {"W": rng.standard_normal((4, 3)), "b": rng.standard_normal(3), "A": rng.standard_normal((4, 2)),
         "B": rng.standard_normal((2, 3))}
    q = arrayrecord_to_params(params_to_arrayrecord(p))
    assert sorted(q) == sorted(p)
    for k in p:
        assert q[k].dtype == np.float64
        assert_array_equal(q[k], p[k])
    est = PotaraClassifier()
    with pytest.raises(ValueError, match="'classes' must be sorted"):
        make_client_app(est, lambda pid: None, [2, 1])
    with pytest.raises(ValueError, match="'classes' must be a 1-d array of at least 2"):
        make_client_app(est, lambda pid: None, [1])
    with pytest.raises(TypeError, match="'data_fn' must be callable"):
        make_client_app(est, None, [0, 1])


@pytest.fixture(scope="module")
def parity_run():
    pytest.importorskip("flwr")
    from algos.federated import LowRankSoftmax
    from algos.federated.flower import run_flower_simulation

    X, y = load_digits(return_X_y=True)
    keep = np.random.default_rng(1).random(len(y)) < 0.5  # ~900 rows: keeps the run small
    X, y = X[keep], y[keep]
    X = (X - X.mean(0)) / (X.std(0) + 1e-12)
    ids = dirichlet_label_split(y, 5, 0.5, min_size=10, random_state=0)
    test = np.random.default_rng(2).random(len(y)) < 0.5
    # a LoRA head (W frozen, adapter A B + biases trained) and bootstrap variances: exercises every block,
    # the product-space merge and the clients' seeded random draws
    est = PotaraClassifier(base_estimator=LowRankSoftmax(rank=3, lr=0.5), n_rounds=3, local_epochs=2, finetune_epochs=5,
                           variance_method="bootstrap", n_bootstrap=4, random_state=0)
    est.fit(X[~test], y[~test], ids[~test])
    # Ray's default (no GPU masking) without its FutureWarning about a future default change
    had = "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO" in os.environ
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    try:
        run = run_flower_simulation(est, X[~test], y[~test], ids[~test], X[test], y[test], ids[test],
                                    return_models=True)
    finally:
        if not had:
            os.environ.pop("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", None)
    return est, run, (X[test], y[test], ids[test])


def test_flower_reproduces_in_process_accuracies(parity_run):
    est, run, (Xt, yt, idt) = parity_run
    acc_in = est.client_scores(Xt, yt, idt)
    assert sorted(run.client_accuracy) == sorted(acc_in) == list(range(5))
    for c in acc_in:
        assert abs(run.client_accuracy[c] - acc_in[c]) <= PARITY_TOL, (c, run.client_accuracy[c], acc_in[c])
    # a later message (evaluate, no parameters sent) finds the personalised model in the client's state
    assert run.client_accuracy_from_state == run.client_accuracy
    # the federated model's accuracy reported by the clients, against an independent evaluation
    for c in acc_in:
        rows = idt == c
        pred = est.classes_[np.argmax(predict_logits(est.federated_model_, Xt[rows]), axis=1)]
        assert abs(run.client_accuracy_federated[c] - np.mean(pred == yt[rows])) <= PARITY_TOL


def test_flower_reproduces_models_and_lambdas(parity_run):
    est, run, _ = parity_run
    for k, v in est.federated_model_.items():
        assert_allclose(run.federated_params[k], v, rtol=0, atol=PARAM_TOL, err_msg=f"federated block {k}")
    for c in est.clients_.tolist():
        for k, v in est.mixing_weights_[c].items():
            assert_allclose(run.lambdas[c][k], v, rtol=0, atol=PARAM_TOL, err_msg=f"lambda {c} {k}")
            assert_allclose(run.mixing_weights[c][k], np.mean(v), rtol=0, atol=PARAM_TOL)
        for k, v in est.personalized_models_[c].items():
            assert_allclose(run.personalized_models[c][k], v, rtol=0, atol=PARAM_TOL, err_msg=f"client {c} {k}")


def test_flower_communication_and_lambda_statistics(parity_run):
    est, run, _ = parity_run
    assert [h["bytes_sent"] for h in run.history] == [h["bytes_sent"] for h in est.history_]
    assert run.bytes_total == est.history_[-1]["cumulative_bytes"]
    assert all(h["wire_bytes"] >= h["bytes_sent"] for h in run.history)  # serialisation adds headers
    lam = np.array([np.mean([np.mean(v) for v in est.mixing_weights_[c].values()]) for c in est.clients_.tolist()])
    stats = run.lambda_stats
    assert stats["clients"] == 5 and sum(stats["lam-hist"]) == 5
    assert_allclose([stats["lam-mean"], stats["lam-min"], stats["lam-max"]], [lam.mean(), lam.min(), lam.max()],
                    rtol=0, atol=PARAM_TOL)
    assert 0.0 <= stats["lam-min"] <= stats["lam-max"] <= 1.0


def test_run_config_sets_the_estimator_and_names_bad_keys():
    from algos.federated.flower import RUN_CONFIG_KEYS, estimator_from_run_config

    est = PotaraClassifier(n_rounds=7, random_state=3)
    assert estimator_from_run_config(est, {"dirichlet-alpha": 0.5}) is est  # no estimator key: unchanged
    got = estimator_from_run_config(est, {"num-server-rounds": 2, "local-epochs": 4, "fine-tune-epochs": 1,
                                          "variance-method": "plugin_fisher", "seed": 11, "client-fraction": 0.5})
    assert got is not est and est.n_rounds == 7
    assert (got.n_rounds, got.local_epochs, got.finetune_epochs, got.variance_method, got.random_state,
            got.client_fraction) == (2, 4, 1, "plugin_fisher", 11, 0.5)
    assert set(RUN_CONFIG_KEYS.values()) <= set(est.get_params())
    with pytest.raises(ValueError, match=r"^run config 'local-epochs' \(local_epochs\): 'local_epochs' must be an "
                                         r"int in \[0, inf\]; got -1\.$"):
        estimator_from_run_config(est, {"local-epochs": -1})
    with pytest.raises(ValueError, match=r"'variance-method' \(variance_method\): 'variance_method' must be one of"):
        estimator_from_run_config(est, {"variance-method": "nope"})
    with pytest.raises(ValueError, match=r"^'seed' must be an int in \[0, inf\]; got -2\.$"):
        estimator_from_run_config(est, {"seed": -2})


class _Grid:
    """The part of Flower's Grid that the node wait uses."""

    def __init__(self, nodes):
        self.nodes = nodes

    def get_node_ids(self):
        return list(self.nodes)


def test_wait_for_nodes_honours_the_timeout():
    pytest.importorskip("flwr")
    from algos.federated.flower import PotaraFedAvg

    strategy = PotaraFedAvg(PotaraClassifier(), min_available_nodes=3, node_timeout=0.3)
    assert strategy._wait_nodes(_Grid([1, 2, 3])) == [1, 2, 3]
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match=r"^only 2 of 3 SuperNodes connected after 0\.3 s \('node_timeout'"):
        strategy._wait_nodes(_Grid([1, 2]))
    assert time.monotonic() - t0 < 10  # it gave up (0.3 s asked; generous for a loaded machine)
    with pytest.raises(TimeoutError, match="only 0 of 1 SuperNodes"):
        PotaraFedAvg(PotaraClassifier(), node_timeout=0.2).describe(_Grid([]))
    with pytest.raises(ValueError, match=r"^'node_timeout' must be a float in \(0, inf\); got 0\.0\.$"):
        PotaraFedAvg(PotaraClassifier(), node_timeout=0)
