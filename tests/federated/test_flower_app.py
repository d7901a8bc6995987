"""The shipped Flower App (examples/federated/potara_app) run with ``flwr run``, as users run it.

Two runs, each against Flower processes that the test starts and stops itself (127.0.0.1, insecure,
runtime dependency installation disabled: the App's dependency ``algos-theory`` is the package
installed here, as in Flower's Docker deployment guide):

* simulation: a ``flower-superlink --simulation`` and ``flwr run <app> <connection>`` with
  ``options.num-supernodes = 3``;
* deployment: a ``flower-superlink`` and 3 ``flower-supernode`` processes, each with its
  ``partition-id`` / ``num-partitions`` node config;
* scale: 200 virtual SuperNodes in the simulation runtime with the ``digits-resample`` generator (each
  SuperNode builds only its own client) and a client fraction of 0.05 (10 clients per round).

Both must give the per-client accuracies, federated parameters, lambdas and personalised parameters of
the in-process ``PotaraClassifier.fit`` on the same split. One FedAvg round keeps each run short (every
message starts a ClientApp process on a SuperNode). Needs the ``federated`` extra.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import tomllib
from numpy.testing import assert_allclose

pytest.importorskip("flwr")

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "examples" / "federated" / "potara_app"
N_NODES = 3
PARITY_TOL = 1e-6  # the acceptance tolerance on per-client accuracy
PARAM_TOL = 1e-12  # same kernels, same arithmetic, same order: equal up to (in practice exactly) rounding
RUN_TIMEOUT_S = 420  # upper bound for one `flwr run` on 2 loaded cores (about 25-90 s measured)
START_TIMEOUT_S = 60
BIN = Path(sys.executable).parent


def _exe(name):
    path = BIN / name
    return str(path) if path.exists() else shutil.which(name) or name


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _load_task():
    spec = importlib.util.spec_from_file_location("potara_app_task_under_test", APP / "potara_app" / "task.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Processes:
    """Processes started for one test; :meth:`stop_all` ends them and every descendant."""

    def __init__(self, env, logdir):
        self.env, self.logdir, self.procs = env, logdir, []

    def start(self, name, args):
        log = open(self.logdir / f"{name}.log", "w")
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=self.env, cwd=self.logdir,
                                start_new_session=True)
        log.close()
        self.procs.append((name, proc))
        return proc

    def logs(self):
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(self.logdir.glob("*.log")))

    def stop_all(self):
        try:
            import psutil
        except ImportError:  # pragma: no cover - psutil comes with ray (flwr[simulation])
            psutil = None
        victims = []
        for _, proc in self.procs:
            if psutil is not None:
                with contextlib.suppress(psutil.Error):
                    victims.extend(psutil.Process(proc.pid).children(recursive=True))
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)  # its own session: the whole group
        for _, proc in self.procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)
        if psutil is not None:  # descendants that started sessions of their own (SuperExec)
            for v in victims:
                with contextlib.suppress(psutil.Error):
                    v.terminate()
            _, alive = psutil.wait_procs(victims, timeout=10)
            for v in alive:
                with contextlib.suppress(psutil.Error):
                    v.kill()
            psutil.wait_procs(alive, timeout=10)
        self.procs.clear()


@pytest.fixture
def flower(tmp_path):
    """An isolated FLWR_HOME, a copy of the App, and process bookkeeping stopped in ``finally``."""
    home = tmp_path / "flwr-home"
    home.mkdir()
    app = tmp_path / "potara_app"
    shutil.copytree(APP, app, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    # Flower 1.42 moves [tool.flwr.federations] to $FLWR_HOME/config.toml (rewriting the file); the
    # test writes its own connections there instead, with free ports
    text = (app / "pyproject.toml").read_text()
    (app / "pyproject.toml").write_text(text[: text.index("[tool.flwr.federations]")])
    # the Flower processes import this checkout's algos (also when another copy is installed)
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "FLWR_HOME": str(home), "FLWR_DISABLE_UPDATE_CHECK": "1",
           "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0", "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}
    procs = Processes(env, tmp_path)
    try:
        yield {"home": home, "app": app, "env": env, "procs": procs, "tmp": tmp_path}
    finally:
        procs.stop_all()


def _wait_http(port, procs, proc):
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"flower-superlink exited with {proc.returncode}\n{procs.logs()}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                if r.status == 200:
                    return
        time.sleep(0.3)
    pytest.fail(f"flower-superlink not up on port {port} after {START_TIMEOUT_S} s\n{procs.logs()}")


def _write_connection(home, name, port, options=None):
    lines = ["[superlink]", f'default = "{name}"', "", f"[superlink.{name}]", f'address = "127.0.0.1:{port}"',
             "insecure = true"]
    lines += [f"options.{k} = {v}" for k, v in (options or {}).items()]
    (home / "config.toml").write_text("\n".join(lines) + "\n")


def _flwr_run(flower, connection, result_dir, run_config="num-server-rounds=1 return-models=true"):
    cfg = f"{run_config} node-timeout=240.0 result-dir='{result_dir}'"
    cmd = [_exe("flwr"), "run", str(flower["app"]), connection, "--run-config", cfg, "--stream"]
    try:
        out = subprocess.run(cmd, env=flower["env"], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"`flwr run` did not finish in {RUN_TIMEOUT_S} s\n{exc.stdout}\n{flower['procs'].logs()}")
    assert out.returncode == 0, f"{out.stdout[-4000:]}\n{out.stderr[-4000:]}\n{flower['procs'].logs()}"
    assert (result_dir / "result.json").exists(), f"no result written\n{out.stdout[-4000:]}"
    return json.loads((result_dir / "result.json").read_text()), dict(np.load(result_dir / "models.npz"))


@pytest.fixture(scope="module")
def reference():
    """The in-process run on the App's split: ``PotaraClassifier.fit`` with the run's settings."""
    task = _load_task()
    X, y, ids, is_test = task.load_all(N_NODES)
    est = task.make_estimator().set_params(n_rounds=1)
    est.fit(X[~is_test], y[~is_test], ids[~is_test])
    return est, est.client_scores(X[is_test], y[is_test], ids[is_test])


def _assert_matches_in_process(result, models, reference):
    est, acc_in = reference
    clients = result["clients"]
    assert sorted(int(c) for c in clients) == list(range(N_NODES))
    for c in range(N_NODES):
        got = clients[str(c)]
        assert abs(got["accuracy"] - acc_in[c]) <= PARITY_TOL, (c, got["accuracy"], acc_in[c])
        # read back from the client's Context.state by a later message
        assert got["accuracy-from-state"] == got["accuracy"]
        for k, v in est.personalized_models_[c].items():
            assert_allclose(models[f"client{c}/personalized/{k}"], v, rtol=0, atol=PARAM_TOL,
                            err_msg=f"client {c} personalised block {k}")
        for k, v in est.mixing_weights_[c].items():
            assert_allclose(models[f"client{c}/lambda/{k}"], v, rtol=0, atol=PARAM_TOL, err_msg=f"lambda {c} {k}")
    for k, v in est.federated_model_.items():
        assert_allclose(models[f"federated/{k}"], v, rtol=0, atol=PARAM_TOL, err_msg=f"federated block {k}")
    assert [h["bytes_sent"] for h in result["history"]] == [h["bytes_sent"] for h in est.history_]


def test_flwr_run_simulation_matches_in_process(flower, reference):
    port = _free_port()
    link = flower["procs"].start("superlink", [
        _exe("flower-superlink"), "--insecure", "--simulation", "--host", "127.0.0.1", "--port", str(port),
        "--disable-runtime-dependency-installation"])
    _wait_http(port, flower["procs"], link)
    _write_connection(flower["home"], "sim", port, {"num-supernodes": N_NODES})
    result, models = _flwr_run(flower, "sim", flower["tmp"] / "result")
    _assert_matches_in_process(result, models, reference)


@pytest.mark.slow  # about 90 s on 2 loaded cores: a ClientApp process per message and node
def test_flwr_run_deployment_superlink_and_three_supernodes(flower, reference):
    port = _free_port()
    procs = flower["procs"]
    link = procs.start("superlink", [
        _exe("flower-superlink"), "--insecure", "--host", "127.0.0.1", "--port", str(port),
        "--disable-runtime-dependency-installation"])
    _wait_http(port, procs, link)
    for i in range(N_NODES):  # runtime dependency installation is off by default on a SuperNode
        procs.start(f"supernode{i}", [
            _exe("flower-supernode"), "--insecure", "--superlink", f"127.0.0.1:{port}",
            "--node-config", f"partition-id={i} num-partitions={N_NODES}", "--host", "127.0.0.1",
            "--port", str(_free_port())])
    _write_connection(flower["home"], "deployment", port)
    result, models = _flwr_run(flower, "deployment", flower["tmp"] / "result")
    _assert_matches_in_process(result, models, reference)
    assert all(proc.poll() is None for _, proc in procs.procs)  # still serving: stopped by the fixture


def test_shipped_federations_match_flower_config_file():
    """``[tool.flwr.federations]`` of the App and ``superlinks.toml`` (Flower 1.42's format) agree."""
    app = tomllib.loads((APP / "pyproject.toml").read_text())
    new = tomllib.loads((APP / "superlinks.toml").read_text())["superlink"]
    old = app["tool"]["flwr"]["federations"]
    assert old == new
    # a SuperLink the user starts with runtime dependency installation disabled, never `:local:`
    # (whose runtime `uv sync` looks for algos-theory on the package index), no `options.` fields
    assert old["local-simulation"] == {"address": "127.0.0.1:9093", "insecure": True}
    assert old["local-deployment"] == {"address": "127.0.0.1:9093", "insecure": True}
    cfg = app["tool"]["flwr"]["app"]["config"]
    for key in ("num-server-rounds", "local-epochs", "fine-tune-epochs", "variance-method", "seed"):
        assert key in cfg, key
    assert app["tool"]["flwr"]["app"]["components"] == {"serverapp": "potara_app.server_app:app",
                                                        "clientapp": "potara_app.client_app:app"}
    assert "algos-theory[federated]" in app["project"]["dependencies"]


def _documented_simulation_commands():
    """The command block under "**Simulation**" in docs/federated.md, as argument lists."""
    import re
    import shlex

    text = (REPO / "docs" / "federated.md").read_text()
    block = re.search(r"\*\*Simulation\*\*.*?```\n(.*?)```", text, re.S)
    assert block, "docs/federated.md has no Simulation command block"
    lines = [ln.strip() for ln in block.group(1).splitlines() if ln.strip()]
    return [(shlex.split(ln.rstrip("&").strip()), ln.endswith("&")) for ln in lines]


def test_documented_simulation_commands_run_as_written(flower):
    """The exact simulation commands of docs/federated.md, run from a copy of the repository layout
    (the App at ``examples/federated/potara_app``, the App's own connections, an isolated
    ``FLWR_HOME``): the SuperLink starts, ``flwr run`` ends with status 0, the run reaches its
    personalisation round, Flower prints no deprecation warning, and the clients' mean accuracy equals
    the in-process ``PotaraClassifier.fit`` on the same 5-client split (the App's defaults)."""
    import ast
    import re

    commands = _documented_simulation_commands()
    assert [bg for _, bg in commands] == [True, False], commands
    (link_args, _), (run_args, _) = commands
    assert link_args[0] == "flower-superlink" and "--disable-runtime-dependency-installation" in link_args
    assert run_args[:3] == ["flwr", "run", "examples/federated/potara_app"] and "--stream" in run_args
    port = int(link_args[link_args.index("--port") + 1])
    with socket.socket() as s:  # the documented port must be free on this machine
        if s.connect_ex(("127.0.0.1", port)) == 0:
            pytest.fail(f"port {port} of the documented commands is in use on this machine")
    root = flower["tmp"] / "clone"
    shutil.copytree(APP, root / "examples" / "federated" / "potara_app",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    procs = flower["procs"]
    link = procs.start("superlink-documented", [_exe(link_args[0]), *link_args[1:]])
    _wait_http(port, procs, link)
    try:
        out = subprocess.run([_exe(run_args[0]), *run_args[1:]], env=flower["env"], cwd=root,
                             capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the documented `flwr run` did not finish in {RUN_TIMEOUT_S} s\n{exc.stdout}\n{procs.logs()}")
    log = out.stdout + out.stderr
    assert out.returncode == 0, f"{log[-4000:]}\n{procs.logs()}"
    assert "deprecated" not in log.lower(), log[-3000:]
    m = re.search(r"personalize: (\{.*?\})\s*$", log, re.M)
    assert m, f"the run did not reach its personalisation round\n{log[-4000:]}"
    summary = ast.literal_eval(m.group(1))
    n_nodes = int(re.search(r"num-supernodes=(\d+)", " ".join(run_args)).group(1))
    assert summary["clients"] == n_nodes
    task = _load_task()
    X, y, ids, is_test = task.load_all(n_nodes)
    est = task.make_estimator()
    est.fit(X[~is_test], y[~is_test], ids[~is_test])
    acc = est.client_scores(X[is_test], y[is_test], ids[is_test])
    assert abs(summary["accuracy-client-mean"] - float(np.mean([acc[c] for c in range(n_nodes)]))) <= PARITY_TOL


SCALE_NODES, SCALE_ROUNDS, SCALE_FRACTION = 200, 2, 0.05
SCALE_CONFIG = (f"data-generator='digits-resample' client-fraction={SCALE_FRACTION} "
                f"num-server-rounds={SCALE_ROUNDS} return-models=false")


def test_flwr_run_simulation_200_supernodes_matches_in_process(flower):
    """200 virtual SuperNodes, 2 rounds of 10 sampled clients, then all 200 personalise.

    The server samples clients with the in-process estimator's generator, so the run must equal
    ``PotaraClassifier(client_fraction=0.05).fit`` on the same 200 clients exactly: the same clients in
    every round, the same federated model (1e-12), and for every client the same personalised accuracy
    (1e-6) and the same per-block mixing weight lambda (1e-12), i.e. each client's variance estimates
    ran there as in-process."""
    port = _free_port()
    link = flower["procs"].start("superlink", [
        _exe("flower-superlink"), "--insecure", "--simulation", "--host", "127.0.0.1", "--port", str(port),
        "--disable-runtime-dependency-installation"])
    _wait_http(port, flower["procs"], link)
    _write_connection(flower["home"], "sim", port, {"num-supernodes": SCALE_NODES})
    result_dir = flower["tmp"] / "result"
    result, models = _flwr_run(flower, "sim", result_dir, SCALE_CONFIG)

    task = _load_task()
    X, y, ids, is_test = task.load_all(SCALE_NODES, generator="digits-resample")
    est = task.make_estimator().set_params(n_rounds=SCALE_ROUNDS, client_fraction=SCALE_FRACTION)
    est.fit(X[~is_test], y[~is_test], ids[~is_test])
    acc_in = est.client_scores(X[is_test], y[is_test], ids[is_test])

    clients = result["clients"]
    assert sorted(int(c) for c in clients) == list(range(SCALE_NODES))
    assert [h["clients"] for h in result["history"]] == [h["clients"] for h in est.history_]
    assert [h["clients"] for h in result["history"]][:SCALE_ROUNDS] == [10] * SCALE_ROUNDS
    assert [h["bytes_sent"] for h in result["history"]] == [h["bytes_sent"] for h in est.history_]
    for k, v in est.federated_model_.items():
        assert_allclose(models[f"federated/{k}"], v, rtol=0, atol=PARAM_TOL, err_msg=f"federated block {k}")
    for c in range(SCALE_NODES):
        got = clients[str(c)]
        assert abs(got["accuracy"] - acc_in[c]) <= PARITY_TOL, (c, got["accuracy"], acc_in[c])
        for k, v in est.mixing_weights_[c].items():
            assert abs(got[f"lam-{k}"] - float(np.mean(v))) <= PARAM_TOL, (c, k, got[f"lam-{k}"], v)
    lam = np.array([clients[str(c)]["lam-mean"] for c in range(SCALE_NODES)])
    assert 0.0 < lam.mean() < 1.0 and lam.std() > 0  # per-client weights from per-client variances


def test_app_digits_resample_partition_is_that_client_of_load_all():
    """A SuperNode's ``load_partition`` builds its own client only, equal to that client of ``load_all``;
    bad run-config values name the key."""
    from types import SimpleNamespace

    task = _load_task()
    rc = {"data-generator": "digits-resample", "samples-per-client": 12, "test-samples-per-client": 4}
    part = task.load_partition(7, SimpleNamespace(run_config=rc, node_config={"partition-id": 7,
                                                                              "num-partitions": 1000}))
    X, y, ids, is_test = task.load_all(8, generator="digits-resample", n_train=12, n_test=4)
    np.testing.assert_array_equal(part["X"], X[(ids == 7) & ~is_test])
    np.testing.assert_array_equal(part["y_test"], y[(ids == 7) & is_test])
    with pytest.raises(ValueError, match="'data-generator'"):
        task.load_partition(0, SimpleNamespace(run_config={"data-generator": "mnist"},
                                               node_config={"partition-id": 0, "num-partitions": 2}))
    with pytest.raises(ValueError, match="'num-clients'"):
        task.load_partition(5, SimpleNamespace(run_config={"num-clients": 3},
                                               node_config={"partition-id": 5, "num-partitions": 10}))
