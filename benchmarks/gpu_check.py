r"""One-command GPU validation: every ``@pytest.mark.gpu`` test on CUDA, then each accel core against
its numba (CPU) twin at GPU-sized workloads.

    python benchmarks/gpu_check.py                       # CUDA: the tests, then the timings (<= 6 min on one H200)
    python benchmarks/gpu_check.py --device cpu --quick  # the same code on CPU torch, small sizes (CI)

Steps:

1. ``pytest -m gpu`` on the test files that hold a ``@pytest.mark.gpu`` test (on a machine without CUDA
   they are reported as skipped; ``--no-tests`` leaves this step out);
2. for each core, the same inputs through the numba / numpy path (the "twin", on the CPU) and the torch
   core of ``accel/`` on ``--device``: the median wall time of ``--repeat`` runs after one untimed warm-up
   (numba compilation, CUDA context and kernels), the ratio twin / torch (``> 1``: torch faster) and the
   largest absolute difference of the outputs (parity at these sizes).

Cores: PBVI point backups and PointBasedSolver's search (pomdp), the batched reservoir scan and the
streaming-LDA update (continual), the Gaussian sketch (networked_learning), Huber IRLS batches (hetero_regression),
HybridRanking runs (fair_matching), VoGCAM's dense steps -- NNGP rows and the dense precision factorisation
(point_process) -- and FedAvg client rounds (federated).

Prints a markdown table and writes JSON (``--json PATH``, default ``gpu_check.json``). Exit status: 1 if
the tests failed or a core's outputs differ from its twin by more than its tolerance, else 0. A
benchmark, not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

try:
    from ._common import environment, fmt_ratio, fmt_s, markdown_table, timeit_median
except ImportError:  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import environment, fmt_ratio, fmt_s, markdown_table, timeit_median

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


# --------------------------------------------------------------------------------------------- cores
# Each case: (name, workload text, build(size, rng) -> (twin(), torch(device)), compare(a, b) -> max |diff|,
# tolerance). Sizes: "quick" (CPU torch, CI) and "full" (one GPU).

def _maxdiff(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def case_pbvi(size, rng):
    from accel.pomdp import pbvi_backup_torch
    from algos.pomdp import _kernels

    S, A, O, N, K = (16, 3, 4, 64, 24) if size == "quick" else (256, 8, 16, 1024, 128)
    T = rng.random((A, S, S))
    T /= T.sum(2, keepdims=True)
    Z = rng.random((A, S, O))
    Z /= Z.sum(2, keepdims=True)
    r = rng.standard_normal((S, A))
    B = rng.dirichlet(np.ones(S), size=N)
    alphas = rng.standard_normal((K, S))
    work = f"S={S}, A={A}, O={O}, {N} beliefs, {K} alpha vectors"
    return work, (lambda: _kernels.pbvi_backup(B, alphas, T, Z, r, 0.95)[2],
                  lambda dev: pbvi_backup_torch(B, alphas, T, Z, r, 0.95, device=dev)[2])


def case_pbs(size, rng):
    from algos.pomdp import POMDP, PointBasedSolver

    S, A, O, trials = (12, 3, 3, 5) if size == "quick" else (200, 5, 16, 10)
    T = rng.random((A, S, S)) ** 4  # skewed rows: beliefs with few likely states, as in grid models
    T /= T.sum(2, keepdims=True)
    Z = rng.random((A, S, O)) ** 4
    Z /= Z.sum(2, keepdims=True)
    model = POMDP(T, Z, rng.standard_normal((S, A)), 0.95)
    work = f"S={S}, A={A}, O={O}, {trials} search trials"

    def run(**kw):
        f = PointBasedSolver(time_limit=600.0, target_gap=0.0, max_trials=trials, **kw).fit(model)
        return np.array([f.lower_bound_, f.upper_bound_, f.n_backups_])

    return work, (lambda: run(), lambda dev: run(backend="torch", device=dev))


def case_reservoir(size, rng):
    from accel.continual import reservoir_scan_batched
    from algos.continual._kernels import reservoir_scan

    D, N, L, U = (4, 8, 16, 16) if size == "quick" else (16, 128, 128, 128)
    Z = rng.standard_normal((D, N, L, U))
    W = rng.standard_normal((D, U, U)) * (0.9 / np.sqrt(U))
    h0 = np.zeros((D, N, U))
    rev = [bool(d % 2) for d in range(D)]

    def twin():
        out = np.empty_like(Z)
        for d in range(D):
            reservoir_scan(Z[d], W[d], 0.3, 0, 0.01, rev[d], h0[d], out[d])
        return out

    work = f"{D} scans x {N} sequences x {L} steps, {U} units"
    return work, (twin, lambda dev: reservoir_scan_batched(Z, W, 0.3, "tanh", reverse=rev, h0=h0, device=dev))


def case_slda(size, rng):
    from accel.continual import TorchStreamingLDA
    from algos.continual._slda import StreamingLDA

    d, K, n, batch = (16, 5, 2000, 200) if size == "quick" else (512, 100, 100_000, 10_000)
    X = rng.standard_normal((n, d))
    y = rng.integers(0, K, n)
    y[:K] = np.arange(K)

    def twin():
        m = StreamingLDA()
        for a in range(0, n, batch):
            m.partial_fit(X[a:a + batch], y[a:a + batch], classes=np.arange(K))
        return m.covariance_

    def torch_core(dev):
        m = TorchStreamingLDA(d, device=dev)
        for a in range(0, n, batch):
            m.partial_fit(X[a:a + batch], y[a:a + batch])
        return m.covariance()

    work = f"{n} samples in batches of {batch}, d={d}, {K} classes"
    return work, (twin, torch_core)


def case_sketch(size, rng):
    from accel.networked_learning import gaussian_sketch_apply_torch
    from algos.networked_learning._sketch import make_sketch

    k, m, p = (64, 4096, 8) if size == "quick" else (2048, 65_536, 64)
    A = rng.standard_normal((m, p))
    sk = make_sketch("gaussian", k, m, 5)
    work = f"Gaussian sketch k={k}, m={m}, {p} columns"
    return work, (lambda: sk.apply(A), lambda dev: gaussian_sketch_apply_torch(k, m, 5, A, device=dev))


def case_huber(size, rng):
    from accel.hetero_regression import huber_irls_batched
    from algos.hetero_regression._huber import ConvexRegimeWarning, HuberSoSRegressor

    B, n, d = (4, 400, 3) if size == "quick" else (128, 10_000, 16)
    X = rng.standard_normal((n, d))
    beta = rng.standard_normal((B, d))
    Y = beta @ X.T + rng.standard_t(2.0, size=(B, n))

    def twin():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvexRegimeWarning)
            return np.stack([HuberSoSRegressor(delta=1.0, solver="mm").fit(X, Y[b]).coef_ for b in range(B)])

    work = f"{B} replicates, n={n}, d={d}, delta=1"
    return work, (twin, lambda dev: huber_irls_batched(X, Y, 1.0, device=dev)[0])


def case_ranking(size, rng):
    from accel.fair_matching import hybrid_ranking_batched
    from algos.fair_matching import sparse_random_instance
    from algos.fair_matching._ranking_kernels import hybrid_ranking_batch

    n, m, k, R = (50, 60, 3, 32) if size == "quick" else (2000, 4000, 4, 4096)
    inst = sparse_random_instance(n, m, k, avg_degree=5.0, random_state=1)
    ranks = rng.random((R, n))
    keys = rng.random((m, R))
    args = (inst.indptr, inst.indices, inst.agent_class, k, 0.5, 0, ranks, keys)

    def twin():
        return hybrid_ranking_batch(*args, np.zeros((R, n), np.uint8), np.zeros((R, k), np.int64))

    def torch_core(dev):
        return hybrid_ranking_batched(*args, np.zeros((R, n), np.uint8), np.zeros((R, k), np.int64), device=dev)

    work = f"{R} runs, {n} agents, {m} items, {k} classes"
    return work, (twin, torch_core)


def case_vogcam_rows(size, rng):
    from accel.point_process import nngp_rows_batched
    from algos.point_process._kernels import nngp_rows
    from algos.point_process.vogcam._nngp import nngp_neighbors, node_ordering

    N, kn = (400, 10) if size == "quick" else (200_000, 15)
    X = rng.random((N, 2))
    nbr, cnt = nngp_neighbors(X, node_ordering(X), kn)
    work = f"NNGP rows, {N} nodes, {kn} neighbours"
    return work, (lambda: nngp_rows(X, nbr, cnt, 0.1, 0, 1e-8)[1],
                  lambda dev: nngp_rows_batched(X, nbr, cnt, 0.1, nu=0.5, device=dev)[1])


def case_vogcam_dense(size, rng):
    from accel.point_process import precision_diag_inverse
    from algos.point_process import nngp_precision

    N = 300 if size == "quick" else 8_000
    X = rng.random((N, 2))
    Q = nngp_precision(X, n_neighbors=10, variance=1.0, length_scale=0.2).Q
    mu = np.ones(N)

    def twin():  # the numpy (LAPACK) dense path: one Cholesky, diag of the inverse, log-det
        import scipy.linalg as sl

        P = Q.toarray() + np.diag(mu)
        L = sl.cholesky(P, lower=True)
        Li = sl.solve_triangular(L, np.eye(N), lower=True)
        return np.concatenate([np.sum(Li**2, axis=0), [2 * np.sum(np.log(np.diag(L)))]])

    def torch_core(dev):
        dg, ld = precision_diag_inverse(Q, mu, device=dev)
        return np.concatenate([dg, [ld]])

    work = f"dense precision step, N={N}"
    return work, (twin, torch_core)


def case_fedavg(size, rng):
    from accel.federated import train_clients_batched
    from algos.federated._model import _train_clients, init_params

    M, n, d, C, E = (6, 60, 16, 5, 3) if size == "quick" else (128, 1000, 256, 10, 5)
    theta = init_params(d, C, random_state=0)
    Xs = [rng.standard_normal((n, d)) for _ in range(M)]
    ys = [rng.integers(0, C, n) for _ in range(M)]
    kw = dict(n_classes=C, epochs=E, lr=0.1, l2=1e-3, trainable=("W", "b"))

    def stack(ps):
        return np.stack([np.concatenate([p["W"].ravel(), p["b"]]) for p in ps])

    work = f"{M} clients x {n} rows, d={d}, C={C}, {E} local epochs"
    return work, (lambda: stack(_train_clients([theta] * M, Xs, ys, **kw)),
                  lambda dev: stack(train_clients_batched(theta, list(zip(Xs, ys)), device=dev, **kw)))


# name -> (function, tolerance on max |torch - twin|, what the tolerance covers)
CASES = {
    "pomdp: PBVI backup": (case_pbvi, 1e-8, "values b.alpha"),
    "pomdp: PointBasedSolver search": (case_pbs, 1e-8, "L(b0), U(b0), backups (same search)"),
    "continual: reservoir scan": (case_reservoir, 1e-9, "states"),
    "continual: SLDA update": (case_slda, 1e-8, "class means / covariance"),
    "networked_learning: Gaussian sketch": (case_sketch, 1e-8, "S A"),
    "hetero_regression: Huber IRLS batch": (case_huber, 1e-6, "coefficients (solver tol 1e-10)"),
    "fair_matching: HybridRanking runs": (case_ranking, 0.0, "matches (exact)"),
    "point_process: VoGCAM NNGP rows": (case_vogcam_rows, 1e-8, "F (conditional variances)"),
    "point_process: VoGCAM dense step": (case_vogcam_dense, 1e-6, "diag(P^-1), log|P|"),
    "federated: FedAvg client round": (case_fedavg, 1e-9, "client parameters"),
}


def _compare(a, b):
    if isinstance(a, tuple):
        return max(_maxdiff(x, y) for x, y in zip(a, b))
    return _maxdiff(a, b)


def run_cores(device, size, repeat, names=None):
    import torch

    rows, records = [], []
    for name, (fn, tol, what) in CASES.items():
        if names and not any(s in name for s in names):
            continue
        rng = np.random.default_rng(0)
        rec = {"core": name, "device": device, "size": size}
        try:
            work, (twin, core) = fn(size, rng)
            rec["workload"] = work

            def on_device():
                out = core(device)
                if device.startswith("cuda"):
                    torch.cuda.synchronize()
                return out

            t_twin = timeit_median(twin, repeat, warmup=1, budget_s=60)
            t_torch = timeit_median(on_device, repeat, warmup=1, budget_s=60)
            diff = _compare(t_twin.result, t_torch.result)
            rec.update(twin_s=t_twin.median, torch_s=t_torch.median, ratio=t_twin.median / t_torch.median,
                       max_abs_diff=diff, tolerance=tol, compared=what, ok=bool(diff <= tol),
                       twin_runs=len(t_twin.times), torch_runs=len(t_torch.times))
        except Exception as exc:  # reported in the table, and the exit status
            rec.update(ok=False, error=f"{type(exc).__name__}: {exc}")
        records.append(rec)
        if "error" in rec:
            rows.append([name, rec.get("workload", ""), "error", "", "", rec["error"][:80], "FAIL"])
        else:
            rows.append([name, rec["workload"], fmt_s(rec["twin_s"]), fmt_s(rec["torch_s"]),
                         fmt_ratio(rec["twin_s"], rec["torch_s"]), f"{rec['max_abs_diff']:.1e}",
                         "ok" if rec["ok"] else f"FAIL (> {tol:g})"])
        print(f"  {name}: done", file=sys.stderr, flush=True)
    return rows, records


def gpu_test_files():
    return sorted(str(p.relative_to(REPO)) for p in (REPO / "tests").rglob("test_*.py")
                  if "pytest.mark.gpu" in p.read_text())


def run_gpu_tests(timeout):
    files = gpu_test_files()
    cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-rA", "-p", "no:cacheprovider", *files]
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)
        code, text = out.returncode, out.stdout + out.stderr
    except subprocess.TimeoutExpired as exc:
        code, text = 124, f"timed out after {timeout} s\n{exc.stdout or ''}"
    summary = [ln for ln in text.strip().splitlines() if ln.strip()][-1:] or [""]
    return {"command": " ".join(cmd[1:]), "files": files, "returncode": code, "summary": summary[0],
            "wall_s": time.perf_counter() - t0, "output_tail": text[-6000:]}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda", help="torch device of the accel cores (default cuda)")
    p.add_argument("--quick", action="store_true", help="small sizes (CPU torch in CI: well under a minute)")
    p.add_argument("--repeat", type=int, default=None, help="timed runs per measurement (default 3, --quick 1)")
    p.add_argument("--cores", default="", help="comma-separated substrings selecting cores (default: all)")
    p.add_argument("--no-tests", action="store_true", help="skip the pytest -m gpu step")
    p.add_argument("--test-timeout", type=int, default=240, help="seconds for the pytest -m gpu step")
    p.add_argument("--json", default="gpu_check.json", help="where to write the JSON results")
    args = p.parse_args(argv)
    try:
        import torch
    except ImportError:
        raise SystemExit('gpu_check needs PyTorch: pip install "algos-theory[gpu]"') from None
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device is available here (torch.cuda.is_available() is "
                         "False); use --device cpu --quick for the CPU check.")
    os.environ.setdefault("ALGOS_HYPOTHESIS_PROFILE", "ci")
    size = "quick" if args.quick else "full"
    repeat = args.repeat or (1 if args.quick else 3)
    t0 = time.perf_counter()
    gpu_name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    env = environment([f"torch {torch.__version__}", f"CUDA device: {gpu_name}", f"--device {args.device}"])
    print(f"# accel GPU check ({size} sizes)\n\n{env}\n")
    tests = None
    if not args.no_tests:
        tests = run_gpu_tests(args.test_timeout)
        print(f"## pytest -m gpu\n\n`{tests['command']}`: {tests['summary']} ({tests['wall_s']:.0f} s)\n")
    names = [s.strip() for s in args.cores.split(",") if s.strip()]
    rows, records = run_cores(args.device, size, repeat, names)
    print("## accel cores against their numba / numpy twins\n")
    print(markdown_table(["core", "workload", "twin (CPU) s", f"torch ({args.device}) s", "twin/torch",
                          "max abs diff", "parity"], rows))
    wall = time.perf_counter() - t0
    print(f"\nMedians of {repeat} run(s) after one warm-up; total {wall:.0f} s. Command: "
          f"`python benchmarks/gpu_check.py{' --device ' + args.device if args.device != 'cuda' else ''}"
          f"{' --quick' if args.quick else ''}`")
    doc = {"environment": env, "device": args.device, "size": size, "repeat": repeat, "wall_s": wall,
           "tests": tests, "cores": records}
    Path(args.json).write_text(json.dumps(doc, indent=1))
    failed = (tests is not None and tests["returncode"] not in (0, 5)) or not all(r["ok"] for r in records)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
