"""The agents as Dask tasks and Ray tasks: equal to the in-process run, measured message bytes, bad input.

One real ``LocalCluster`` (2 process workers x 1 thread) and one local Ray session (2 CPUs) serve the
module; both are shut down at its end.
"""

import os
import pickle
import subprocess
import sys

import networkx as nx
import numpy as np
import pytest

from algos.networked_learning import NetworkedDAGRegressor, cyclic_allocation, make_gaussian
from algos.networked_learning._message import AgentMessage, message_nbytes
from tests._clusters import local_dask_cluster, local_ray

PRED_TOL = 1e-12
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _data(m=3000, d=8, seed=0):
    model = make_gaussian(d, kind="ar1", rho=0.5)
    return model.sample(m, random_state=seed)


def _graph(n_agents=12, d=8, seed=3):
    """A random DAG with one sink (edges towards agent 0) and a cyclic feature allocation."""
    g = nx.gn_graph(n_agents, seed=seed)
    return g, cyclic_allocation(g, d)


CASES = {
    "full": dict(protocol="full"),
    "gaussian": dict(protocol="sketch", sketch="gaussian", random_state=1),
    "srht": dict(protocol="sketch", sketch="srht", random_state=2),
    "countsketch": dict(protocol="sketch", sketch="countsketch", random_state=3),
    "subsample": dict(protocol="subsample", k=200, random_state=4),
}


def _assert_same_fit(got, ref):
    X, _ = _data(500, seed=9)
    np.testing.assert_allclose(got.predict(X), ref.predict(X), rtol=0, atol=PRED_TOL)
    for v in ref.graph_.nodes():
        np.testing.assert_allclose(got.global_coefs_[v], ref.global_coefs_[v], rtol=0, atol=PRED_TOL)
        for a, b in zip(got.local_coefs_[v], ref.local_coefs_[v]):
            np.testing.assert_allclose(a, b, rtol=0, atol=PRED_TOL)
        assert got.intercepts_[v] == pytest.approx(ref.intercepts_[v], abs=PRED_TOL)
        assert got.train_mse_[v] == pytest.approx(ref.train_mse_[v], rel=1e-12)
    assert (got.k_, got.sketch_seed_, got.comm_floats_) == (ref.k_, ref.sketch_seed_, ref.comm_floats_)
    assert got.communication_bytes_ == ref.communication_bytes_
    assert got.communication_nominal_bytes_ == ref.communication_nominal_bytes_


@pytest.fixture(scope="module")
def dask_cluster():
    """A 2-worker LocalCluster and a client that is not the default one (tests enter ``as_current``)."""
    distributed = pytest.importorskip("distributed")
    with local_dask_cluster() as cluster, distributed.Client(cluster, set_as_default=False, timeout="60s") as client:
        yield cluster, client


@pytest.fixture(scope="module")
def ray_session():
    """One local Ray session for the module, 2 CPUs."""
    with local_ray() as ray:
        yield ray


# ----------------------------------------------------------------------------------------------------
# the message and its measured size (no cluster)
# ----------------------------------------------------------------------------------------------------
def test_message_round_trips_and_overhead_is_fixed():
    rng = np.random.default_rng(0)
    sizes = {}
    for n in (1, 131, 1000, 100_000):
        msg = AgentMessage(rng.standard_normal(n))
        back = pickle.loads(pickle.dumps(msg, protocol=5))
        np.testing.assert_array_equal(back.values, msg.values)
        assert back.values.dtype == np.dtype("<f8") and back.values.flags.c_contiguous
        sizes[n] = message_nbytes(msg) - 8 * n
    # a fixed overhead under 100 bytes (pickle starts a second frame for a payload of 64 KiB or more)
    assert sizes[1] == sizes[131] == sizes[1000] and all(0 < s < 100 for s in sizes.values()), sizes
    assert message_nbytes(AgentMessage(np.zeros(131))) <= 1.10 * 8 * 131  # the default k for d = 8


def test_inprocess_reports_measured_and_nominal_bytes():
    X, y = _data()
    g, fs = _graph()
    full = NetworkedDAGRegressor(graph=g, feature_sets=fs, output_agent=0).fit(X, y)
    sk = NetworkedDAGRegressor(graph=g, feature_sets=fs, output_agent=0, protocol="sketch", random_state=0).fit(X, y)
    assert set(full.communication_bytes_) == set(g.edges()) == set(sk.communication_nominal_bytes_)
    overhead = message_nbytes(AgentMessage(np.zeros(1))) - 8
    assert set(full.communication_nominal_bytes_.values()) == {8 * 3000}
    assert set(full.communication_bytes_.values()) == {8 * 3000 + overhead}
    assert sk.k_ == 131 and set(sk.communication_nominal_bytes_.values()) == {8 * 131}
    assert set(sk.communication_bytes_.values()) == {8 * 131 + overhead}
    assert max(b / n for b, n in zip(sk.communication_bytes_.values(), sk.communication_nominal_bytes_.values())) <= 1.1
    assert full.executor_ == "inprocess"


# ----------------------------------------------------------------------------------------------------
# Dask
# ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(CASES))
def test_dask_equals_inprocess(dask_cluster, case):
    cluster, client = dask_cluster
    X, y = _data()
    g, fs = _graph()
    kw = dict(graph=g, feature_sets=fs, output_agent=0, **CASES[case])
    ref = NetworkedDAGRegressor(**kw).fit(X, y)
    import distributed

    with client.as_current(), distributed.get_task_stream(client) as stream:
        got = NetworkedDAGRegressor(**kw, executor="dask").fit(X, y)
    _assert_same_fit(got, ref)
    assert got.executor_ == "dask" and got.engine_ == "messages"
    ran = [t for t in stream.data if t["key"].startswith("agent_step")]
    assert len(ran) == g.number_of_nodes()  # one task per agent, on the cluster's workers
    assert {t["worker"] for t in ran} <= set(cluster.scheduler_info["workers"])
    if case != "full":  # bytes within 10 % of k float64s
        ratios = [got.communication_bytes_[e] / got.communication_nominal_bytes_[e] for e in g.edges()]
        assert max(ratios) <= 1.10 and min(ratios) > 1.0


def test_dask_scheduler_address_opens_its_own_client(dask_cluster):
    cluster, _ = dask_cluster
    X, y = _data()
    g, fs = _graph()
    kw = dict(graph=g, feature_sets=fs, output_agent=0, protocol="sketch", random_state=5)
    got = NetworkedDAGRegressor(**kw, executor="dask", scheduler=cluster.scheduler_address).fit(X, y)
    _assert_same_fit(got, NetworkedDAGRegressor(**kw, engine="messages").fit(X, y))


# ----------------------------------------------------------------------------------------------------
# Ray
# ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["full", "gaussian", "countsketch", "subsample"])
def test_ray_equals_inprocess(ray_session, case):
    X, y = _data()
    g, fs = _graph()
    kw = dict(graph=g, feature_sets=fs, output_agent=0, **CASES[case])
    ref = NetworkedDAGRegressor(**kw).fit(X, y)
    got = NetworkedDAGRegressor(**kw, executor="ray").fit(X, y)
    _assert_same_fit(got, ref)
    assert got.executor_ == "ray"
    if case != "full":
        ratios = [got.communication_bytes_[e] / got.communication_nominal_bytes_[e] for e in g.edges()]
        assert max(ratios) <= 1.10


# ----------------------------------------------------------------------------------------------------
# bad input, before any task is submitted
# ----------------------------------------------------------------------------------------------------
def test_unknown_executor_and_bad_scheduler():
    X, y = _data(200)
    with pytest.raises(ValueError, match="'executor'.*'inprocess', 'dask', 'ray'"):
        NetworkedDAGRegressor(executor="spark").fit(X, y)
    with pytest.raises(ValueError, match="'scheduler' is only used with executor 'dask' or 'ray'"):
        NetworkedDAGRegressor(scheduler="tcp://127.0.0.1:8786").fit(X, y)
    with pytest.raises((TypeError, ValueError), match="'scheduler'"):
        NetworkedDAGRegressor(executor="dask", scheduler=8786).fit(X, y)
    with pytest.raises(ValueError, match="engine='coef'.*executor='dask'"):
        NetworkedDAGRegressor(executor="dask", engine="coef").fit(X, y)


@pytest.mark.parametrize("executor, module", [("dask", "distributed"), ("ray", "ray")])
def test_engine_not_installed_names_the_scale_extra(monkeypatch, executor, module):
    X, y = _data(200)
    monkeypatch.setitem(sys.modules, module, None)  # import of the engine fails as when it is absent
    with pytest.raises(ImportError, match=r"executor='%s'.*algos-theory\[scale\]" % executor):
        NetworkedDAGRegressor(executor=executor).fit(X, y)


_NO_CLIENT = """
import numpy as np
from algos.networked_learning import NetworkedDAGRegressor
X = np.random.default_rng(0).standard_normal((100, 3)); y = X.sum(axis=1)
try:
    NetworkedDAGRegressor(executor={executor!r}).fit(X, y)
except ValueError as exc:
    print(exc)
"""


@pytest.mark.parametrize("executor, hint", [("dask", "Client(LocalCluster())"), ("ray", "ray.init()")])
def test_no_running_client_says_how_to_start_one(executor, hint):
    """In a fresh interpreter (no client, no Ray session): a ValueError saying how to start one."""
    pytest.importorskip("distributed" if executor == "dask" else "ray")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _NO_CLIENT.format(executor=executor)], capture_output=True,
                         text=True, timeout=120, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr
    assert f"executor='{executor}' needs a running" in out.stdout and hint in out.stdout, out.stdout
    assert "scheduler=" in out.stdout


def test_ray_scheduler_with_a_running_session_is_refused(ray_session):
    X, y = _data(200)
    with pytest.raises(ValueError, match="Ray is already started in this process; drop .scheduler."):
        NetworkedDAGRegressor(executor="ray", scheduler="local").fit(X, y)
