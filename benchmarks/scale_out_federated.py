"""Scale-out benchmark of the federated module: the Flower App at 1,000 virtual SuperNodes.

Starts a ``flower-superlink --simulation`` (runtime dependency installation disabled; the App's
dependency is the algos-theory installed here) and runs ``flwr run examples/federated/potara_app``
against it with ``options.num-supernodes = N`` (Flower's Ray-backed simulation runtime) and the
``digits-resample`` data generator (every SuperNode builds only its own client from its
``partition-id``). Reports the wall time of ``flwr run``, the peak resident memory of the whole process
tree (SuperLink, SuperExec, simulation, Ray's processes and actors, ``flwr run``; summed, sampled every
0.5 s with psutil, else /proc), Potara's personalised accuracy beside the FedAvg model's (both means
over the clients' held-out rows), and the in-process ``PotaraClassifier.fit`` on the same clients with
the same client sampling (its time and accuracies: the two runs should agree).

    python benchmarks/scale_out_federated.py                 # 1,000 nodes, 20 rounds, fraction 0.05
    python benchmarks/scale_out_federated.py --quick         # 200 nodes, 3 rounds, fraction 0.05

Peak RSS sums the resident sets of the processes: pages shared between them (Ray's object store in
/dev/shm, shared libraries) are counted once per process, so the sum is an upper bound.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks._common import environment, markdown_table  # noqa: E402

APP = REPO / "examples" / "federated" / "potara_app"
BIN = Path(sys.executable).parent


def _exe(name):
    path = BIN / name
    return str(path) if path.exists() else shutil.which(name) or name


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children_proc(pid):
    """Descendants of ``pid`` read from /proc (when psutil is not installed)."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = Path(f"/proc/{d}/stat").read_text()
                parent[int(d)] = int(stat[stat.rindex(")") + 2:].split()[1])
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def tree_rss(pids):
    """Sum of the resident set sizes (bytes) of ``pids`` and all their descendants."""
    try:
        import psutil
    except ImportError:
        psutil = None
    total, seen = 0, set()
    for pid in pids:
        if psutil is not None:
            with contextlib.suppress(psutil.Error):
                root = psutil.Process(pid)
                for p in [root, *root.children(recursive=True)]:
                    if p.pid not in seen:
                        seen.add(p.pid)
                        with contextlib.suppress(psutil.Error):
                            total += p.memory_info().rss
            continue
        for p in [pid, *_children_proc(pid)]:
            if p not in seen:
                seen.add(p)
                with contextlib.suppress(OSError, ValueError, IndexError):
                    total += int(Path(f"/proc/{p}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return total


class PeakRSS:
    """Background sampler of :func:`tree_rss` over a changing set of root processes."""

    def __init__(self, interval=0.5):
        self.pids, self.peak, self.interval = [], 0, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss(list(self.pids)))
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _stop(proc):
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=20)


def run_flower(nodes, rounds, fraction, alpha, n_train, n_test, workdir, num_cpus=2, timeout=3600):
    """One ``flwr run`` of the App: ``(result dict, wall seconds, peak tree RSS bytes)``."""
    home, app = workdir / "flwr-home", workdir / "potara_app"
    home.mkdir()
    shutil.copytree(APP, app, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    text = (app / "pyproject.toml").read_text()  # connections go to FLWR_HOME/config.toml instead
    (app / "pyproject.toml").write_text(text[: text.index("[tool.flwr.federations]")])
    port = _free_port()
    (home / "config.toml").write_text(
        f'[superlink]\ndefault = "sim"\n\n[superlink.sim]\naddress = "127.0.0.1:{port}"\ninsecure = true\n'
        f"options.num-supernodes = {nodes}\noptions.backend.client-resources.num-cpus = 1\n"
        f"options.backend.init-args.num-cpus = {num_cpus}\n")
    # the Flower processes import this checkout's algos (also when another copy is installed)
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "FLWR_HOME": str(home), "FLWR_DISABLE_UPDATE_CHECK": "1",
           "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0", "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}
    result_dir = workdir / "result"
    cfg = (f"data-generator='digits-resample' num-server-rounds={rounds} client-fraction={fraction} "
           f"dirichlet-alpha={alpha} samples-per-client={n_train} test-samples-per-client={n_test} "
           f"node-timeout=600.0 result-dir='{result_dir}'")
    log = open(workdir / "superlink.log", "w")
    link = subprocess.Popen([_exe("flower-superlink"), "--insecure", "--simulation", "--host", "127.0.0.1",
                             "--port", str(port), "--disable-runtime-dependency-installation"],
                            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=workdir, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                    if r.status == 200:
                        break
            if time.monotonic() > deadline or link.poll() is not None:
                raise RuntimeError(f"flower-superlink did not start\n{(workdir / 'superlink.log').read_text()}")
            time.sleep(0.3)
        with PeakRSS() as rss:
            rss.pids.append(link.pid)
            t0 = time.perf_counter()
            run = subprocess.Popen([_exe("flwr"), "run", str(app), "sim", "--run-config", cfg, "--stream"],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
            rss.pids.append(run.pid)
            out, _ = run.communicate(timeout=timeout)
            wall = time.perf_counter() - t0
        if run.returncode != 0 or not (result_dir / "result.json").exists():
            raise RuntimeError(f"flwr run failed ({run.returncode})\n{out[-4000:]}")
    finally:
        _stop(link)
        log.close()
    return json.loads((result_dir / "result.json").read_text()), wall, rss.peak


def run_in_process(nodes, rounds, fraction, alpha, n_train, n_test):
    """The App's estimator fitted in this process on the same clients: ``(per-client accuracies, seconds)``."""
    import importlib.util

    from algos.federated._model import predict_logits

    spec = importlib.util.spec_from_file_location("potara_app_task", APP / "potara_app" / "task.py")
    task = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(task)
    t0 = time.perf_counter()
    X, y, ids, te = task.load_all(nodes, alpha, 0, "digits-resample", n_train, n_test)
    est = task.make_estimator().set_params(n_rounds=rounds, client_fraction=fraction)
    est.fit(X[~te], y[~te], ids[~te])
    acc = est.client_scores(X[te], y[te], ids[te])
    wall = time.perf_counter() - t0
    pred = np.argmax(predict_logits(est.federated_model_, X[te]), axis=1)
    fed = {c: float(np.mean(pred[ids[te] == c] == y[te][ids[te] == c])) for c in range(nodes)}
    return acc, fed, wall


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="200 nodes, 3 rounds")
    ap.add_argument("--nodes", type=int, default=None, help="virtual SuperNodes (default 1000; --quick 200)")
    ap.add_argument("--rounds", type=int, default=None, help="FedAvg rounds (default 20; --quick 3)")
    ap.add_argument("--fraction", type=float, default=0.05, help="client fraction per round")
    ap.add_argument("--alpha", type=float, default=0.1, help="Dirichlet concentration of the label mixtures")
    ap.add_argument("--n-train", type=int, default=30)
    ap.add_argument("--n-test", type=int, default=15)
    ap.add_argument("--num-cpus", type=int, default=2, help="CPUs given to Ray (one ClientApp actor each)")
    args = ap.parse_args(argv)
    nodes = args.nodes or (200 if args.quick else 1000)
    rounds = args.rounds or (3 if args.quick else 20)
    print(environment())
    with tempfile.TemporaryDirectory(prefix="scale_out_federated_") as tmp:
        result, wall, peak = run_flower(nodes, rounds, args.fraction, args.alpha, args.n_train, args.n_test,
                                        Path(tmp), num_cpus=args.num_cpus)
    acc_in, fed_in, wall_in = run_in_process(nodes, rounds, args.fraction, args.alpha, args.n_train, args.n_test)
    cl = result["clients"]
    pot = float(np.mean([cl[str(c)]["accuracy"] for c in range(nodes)]))
    fed = float(np.mean([cl[str(c)]["accuracy-federated"] for c in range(nodes)]))
    gap = max(abs(cl[str(c)]["accuracy"] - acc_in[c]) for c in range(nodes))
    per_round = [h["clients"] for h in result["history"] if h["round"] != "final broadcast"]
    rows = [
        ["Flower simulation (`flwr run`)", nodes, rounds, f"{args.fraction} ({per_round[0]} per round)",
         f"{wall:.0f} s", f"{peak / 2**30:.2f} GB", f"{pot:.3f}", f"{fed:.3f}",
         f"{result['personalization']['lam-mean']:.2f}"],
        ["in-process `PotaraClassifier.fit`", nodes, rounds, args.fraction, f"{wall_in:.1f} s", "-",
         f"{np.mean(list(acc_in.values())):.3f}", f"{np.mean(list(fed_in.values())):.3f}", "-"],
    ]
    print(f"\nclients {nodes}, digits-resample (alpha {args.alpha}, {args.n_train} train + {args.n_test} test rows), "
          f"Ray CPUs {args.num_cpus}; max |Flower - in-process| per-client accuracy: {gap:.1e}\n")
    print(markdown_table(["run", "SuperNodes", "rounds", "client fraction", "wall", "peak RSS (tree)",
                          "Potara acc.", "FedAvg acc.", "mean lambda"], rows))


if __name__ == "__main__":
    main()
