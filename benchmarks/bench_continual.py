r"""Benchmark of :mod:`algos.continual` (CIRCLE) against its anchors (baselines, anchors and acceptance
experiments of the continual reconstruction notes).

Sections:

a. **Feature throughput** on MNIST-sized images (28 x 28, one channel) with the acceptance
   configuration of the continual reconstruction notes, section 8 (patch 2, 8 units per direction, leak 0.5, spectral
   radius 0.9, tanh, 2 x 2 average pooling, spatial concatenation: 1568 features): images per second of our numba
   path (``BiRC2DFeatures(backend="numpy")``), the torch path on the CPU (and on CUDA when present),
   and a straightforward numpy loop (one image, one row or column, one time step at a time; timed on
   a subset, features checked equal). Then one **row scan** (14 steps) of the same reservoir through
   ``reservoirpy`` 0.4.2 (``Reservoir(W=W.T, Win=W_in.T, lr=a, bias=0)``: same weights, states
   checked equal to 1e-10) against our kernel; the reservoirpy images/s column is extrapolated from
   the per-scan time (56 scans per image: 14 rows and 14 columns, two directions each).
   reservoirpy is not a dependency: install it anywhere (``pip install --target DIR reservoirpy``)
   and pass ``--reservoirpy-path DIR`` (or set ``ALGOS_RESERVOIRPY_PATH``); without it the column
   says why it is missing.
b. **Streaming-LDA update** on 5000 x 1568 features (10 classes, a stream of mini-batches of 100):
   the package's ``StreamingLDA.partial_fit`` (batched sample-equivalent update: a numba delta pass
   and one GEMM per batch; "exact" and "hayes" modes), the torch core ``TorchStreamingLDA`` (CPU and,
   when present, CUDA), against a per-sample reference loop of rank-1 updates in the style of Hayes &
   Kanan's ``SLDA_Model.fit`` (timed on the first ``--ref-samples`` samples and extrapolated
   linearly: each update costs the same ``O(d^2)``; the covariances are checked equal on that
   prefix). avalanche-lib's ``StreamingLDA`` is not used: it needs a full avalanche/torch-vision stack
   and wraps the same per-sample rule in a training strategy. Target: >= 50x over the loop.
c. **Accuracy** (cold-start class-incremental, 70/30 stratified split, seed 0, classes in a seed-0
   permutation) on scikit-learn digits, MNIST-5k and the CIFAR-100 first-10-classes file at T = 1, 5
   and 10 tasks, for ``CIRCLEClassifier`` (R = 4, G = 2) and every baseline of
   :data:`algos.continual.BASELINES`: A_last, A_inc and forgetting. ``--quick`` uses digits only and
   R = 2.

Run::

    python benchmarks/bench_continual.py                       # full
    python benchmarks/bench_continual.py --quick               # smoke run
    python benchmarks/bench_continual.py --reservoirpy-path /tmp/rpy --sections a

Data for (c): ``$ALGOS_SHARED_DATA`` or ``../shared/data`` (``images/mnist_5k.csv.gz`` and
``images/cifar100_first10.npz``); a missing file is reported and skipped.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

try:
    from ._common import environment, fmt_ratio, fmt_s, make_parser, print_table, selected_sections, timeit_median
except ImportError:  # pragma: no cover - script mode
    from _common import environment, fmt_ratio, fmt_s, make_parser, print_table, selected_sections, timeit_median

SECTIONS = ("a", "b", "c")
SEED = 20261130
REPO = Path(__file__).resolve().parents[1]

#: the acceptance configuration of the continual reconstruction notes, section 8 (1568 features on 28 x 28 images)
FEATURES = dict(image_shape=(1, 28, 28), patch=2, units=8, leak=0.5, spectral_radius=0.9, activation="tanh",
                init="uniform", pooling="avg", pool_size=2)


def _cpu_seconds(fn):
    """Process CPU time (all threads) of one call: less sensitive than wall time to a shared machine."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


# ------------------------------------------------------------------------------------------------
# (a) feature throughput
# ------------------------------------------------------------------------------------------------
def _numpy_loop_features(f, X):
    """Straightforward numpy reference: one image, one row/column, one time step at a time."""
    blk = f.blocks_[0]
    P, U, a = f.patch, f.units, f.leak
    out = []
    for img in X.reshape(-1, 28, 28).astype(np.float64) / 255.0:
        Nh = Nw = 28 // P
        grid = img.reshape(Nh, P, Nw, P).transpose(0, 2, 1, 3).reshape(Nh, Nw, P * P)
        states = np.zeros((Nh, Nw, 4 * U))
        for d in range(4):
            W_in, W = blk.W_in_[d].astype(np.float64), blk.W_[d].astype(np.float64)
            for k in range(Nh):
                seq = grid[k] if d < 2 else grid[:, k]
                h = np.zeros(U)
                order = range(len(seq) - 1, -1, -1) if d % 2 else range(len(seq))
                for t in order:
                    h = (1 - a) * h + a * np.tanh(seq[t] @ W_in + h @ W)
                    if d < 2:
                        states[k, t, d * U:(d + 1) * U] = h
                    else:
                        states[t, k, d * U:(d + 1) * U] = h
        out.append(states.reshape(7, 2, 7, 2, 4 * U).mean(axis=(1, 3)).reshape(-1))
    return np.array(out)


def _import_reservoirpy(path):
    if path:
        if path not in sys.path:
            sys.path.append(path)  # appended: numpy/scipy stay the ones already imported
    try:
        import reservoirpy
        from reservoirpy.nodes import Reservoir
    except Exception as exc:  # noqa: BLE001 - report any failure as the reason
        return None, f"reservoirpy not importable ({type(exc).__name__}: {exc}); pass --reservoirpy-path"
    return (reservoirpy, Reservoir), None


def section_a(quick, repeat, args):
    from algos.continual import BiRC2DFeatures
    from algos.continual._kernels import ACTIVATION_CODES, reservoir_scan

    rng = np.random.default_rng(SEED)
    n = 500 if quick else 5000
    X = rng.integers(0, 256, (n, 784)).astype(np.uint8)
    rows = []
    f64 = BiRC2DFeatures(backend="numpy", dtype=np.float64, random_state=0, **FEATURES).fit()
    f32 = BiRC2DFeatures(backend="numpy", dtype=np.float32, random_state=0, **FEATURES).fit()
    f64.transform(X[:8])
    f32.transform(X[:8])  # compile
    t64 = timeit_median(lambda: f64.transform(X), repeat)
    t32 = timeit_median(lambda: f32.transform(X), repeat)
    c32 = _cpu_seconds(lambda: f32.transform(X))
    c64 = _cpu_seconds(lambda: f64.transform(X))
    rows.append(["ours: numba (float32)", n, fmt_s(t32.median), f"{n / t32.median:,.0f}", fmt_s(c32), "1x",
                 "reference"])
    rows.append(["ours: numba (float64)", n, fmt_s(t64.median), f"{n / t64.median:,.0f}", fmt_s(c64),
                 fmt_ratio(t64.median, t32.median), "reference"])
    F64 = t64.result
    try:
        import torch  # noqa: F401

        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    except ImportError:
        devices = []
    for dev in devices:
        ft = BiRC2DFeatures(backend="torch", device=dev, dtype=np.float32, random_state=0, batch_size=n,
                            **FEATURES).fit()
        ft.transform(X[:8])
        tt = timeit_median(lambda: ft.transform(X), repeat)
        err = np.max(np.abs(tt.result - t32.result)) / np.max(np.abs(t32.result))
        ct = _cpu_seconds(lambda: ft.transform(X))
        rows.append([f"ours: torch {dev} (float32)", n, fmt_s(tt.median), f"{n / tt.median:,.0f}", fmt_s(ct),
                     fmt_ratio(tt.median, t32.median), f"max rel diff {err:.1e}"])
    m = 20 if quick else 100
    t0 = time.process_time()
    tl = timeit_median(lambda: _numpy_loop_features(f64, X[:m]), 1)
    cl = time.process_time() - t0
    err = np.max(np.abs(tl.result - F64[:m]))
    rows.append(["numpy loop (per image/row/step)", m, fmt_s(tl.median), f"{m / tl.median:,.0f}", fmt_s(cl),
                 fmt_ratio(tl.median * n / m, t32.median), f"max abs diff {err:.1e}"])
    # reservoirpy: a single row scan with the same weights
    blk = f64.blocks_[0]
    W_in, W = blk.W_in_[0], blk.W_[0]
    grid = (X[:1].reshape(14, 2, 14, 2).transpose(0, 2, 1, 3).reshape(14, 14, 4) / 255.0)
    u = grid[7]  # one row: 14 tokens of 4 pixels
    Z = (u @ W_in)[None]
    ours_state = np.empty_like(Z)
    h0 = np.zeros((1, W.shape[0]))
    act = ACTIVATION_CODES["tanh"]
    reservoir_scan(Z, W, 0.5, act, 0.01, False, h0, ours_state)
    reps = 200 if quick else 2000

    def ours_scan():
        for _ in range(reps):
            reservoir_scan(u[None] @ W_in, W, 0.5, act, 0.01, False, h0, ours_state)

    import numba

    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # one sequence: no thread pool to wake (reservoirpy is serial too)
    try:
        ours_scan()
        to = timeit_median(ours_scan, repeat).median / reps
    finally:
        numba.set_num_threads(threads)
    notes = [f"{n} random uint8 28x28 images, batch_size 256 (torch: one batch); medians of {repeat} runs",
             "speed-up column: wall time of that row scaled to the same image count, over ours (float32)",
             "CPU s: process CPU time of one call, all threads (robust to other jobs on the machine)"]
    rpy, why = _import_reservoirpy(args.reservoirpy_path or os.environ.get("ALGOS_RESERVOIRPY_PATH"))
    scan_rows = [["ours: numba scan kernel (one sequence)", f"{1e6 * to:.3g}", "1x", "reference"]]
    if rpy is None:
        scan_rows.append(["reservoirpy Reservoir.run", "skipped", "-", why])
    else:
        reservoirpy, Reservoir = rpy
        node = Reservoir(units=W.shape[0], lr=0.5, W=W.T.copy(), Win=W_in.T.copy(), bias=0.0, activation="tanh")
        node.reset() if getattr(node, "initialized", False) else None
        states = node.run(u)
        diff = float(np.max(np.abs(states - ours_state[0])))
        rreps = 20 if quick else 200

        def rpy_scan():
            for _ in range(rreps):
                node.reset()
                node.run(u)

        tr = timeit_median(rpy_scan, repeat).median / rreps
        scan_rows.append([f"reservoirpy {reservoirpy.__version__} Reservoir.run", f"{1e6 * tr:.3g}",
                          fmt_ratio(tr, to), f"max abs state diff {diff:.1e} ({'ok' if diff <= 1e-10 else 'FAIL'})"])
        per_image = 56 * tr
        rows.append(["reservoirpy (56 row/column scans per image, extrapolated)", "-", "-",
                     f"{1 / per_image:,.0f}", "-", fmt_ratio(per_image * n, t32.median), "from the scan below"])
    print_table("(a) feature throughput, 28x28 images -> 1568 features",
                ["method", "images", "time (s)", "images/s", "CPU s", "ours faster by", "check"], rows, notes)
    print_table("(a') one row scan (14 steps, 8 units, tanh), same weights",
                ["method", "µs per scan", "ours faster by", "check"], scan_rows)


# ------------------------------------------------------------------------------------------------
# (b) streaming LDA update
# ------------------------------------------------------------------------------------------------
def _hayes_reference_loop(X, y, K):
    """Per-sample rank-1 updates as in Hayes & Kanan's SLDA_Model.fit (numpy, float64)."""
    d = X.shape[1]
    mu = np.zeros((K, d))
    c = np.zeros(K)
    Sigma = np.zeros((d, d))
    n = 0
    for x, k in zip(X, y):
        delta = x - mu[k]
        Sigma = (n * Sigma + (n / (n + 1)) * np.outer(delta, delta)) / (n + 1)
        mu[k] += delta / (c[k] + 1)
        c[k] += 1
        n += 1
    return Sigma, mu


def section_b(quick, repeat, args):
    from algos.continual import StreamingLDA

    rng = np.random.default_rng(SEED + 1)
    n, d, K, bs = (1000, 392, 10, 100) if quick else (5000, 1568, 10, 100)
    y = rng.integers(0, K, n)
    X = rng.standard_normal((n, d)) + rng.standard_normal((K, d))[y]
    m = min(args.ref_samples or (100 if quick else 300), n)
    c0 = time.process_time()
    tref = timeit_median(lambda: _hayes_reference_loop(X[:m], y[:m], K), 1)
    ref_total = tref.median * n / m
    ref_cpu = (time.process_time() - c0) * n / m
    rows = [["per-sample reference loop (Hayes rank-1)", f"{m} (x{n / m:.3g} extrapolated)", fmt_s(ref_total),
             fmt_s(ref_cpu), "1x", "1x", "-"]]

    def stream(model):
        for a in range(0, n, bs):
            model.partial_fit(X[a:a + bs], y[a:a + bs])
        return model

    for mode in ("hayes", "exact"):
        StreamingLDA(covariance=mode).partial_fit(X[:10], y[:10])  # compile
        t = timeit_median(lambda: stream(StreamingLDA(covariance=mode)), repeat)
        chk = "-"
        if mode == "hayes":
            sub = StreamingLDA(covariance=mode)
            for a in range(0, m, bs):
                sub.partial_fit(X[a:min(a + bs, m)], y[a:min(a + bs, m)])
            err = np.max(np.abs(sub.covariance_ - tref.result[0])) / np.max(np.abs(tref.result[0]))
            chk = f"Sigma vs loop on {m}: rel {err:.1e}"
        cpu = _cpu_seconds(lambda: stream(StreamingLDA(covariance=mode)))
        rows.append([f"ours: StreamingLDA({mode!r}).partial_fit, batches of {bs}", n, fmt_s(t.median), fmt_s(cpu),
                     fmt_ratio(ref_total, t.median), fmt_ratio(ref_cpu, cpu), chk])
    try:
        import torch

        from accel.continual import TorchStreamingLDA

        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    except ImportError:
        devices = []
    for dev in devices:
        for dt in (np.float64, np.float32):
            def run():
                model = TorchStreamingLDA(d, covariance="exact", device=dev, dtype=dt)
                stream(model)
                if dev == "cuda":
                    torch.cuda.synchronize()
                return model

            run()
            t = timeit_median(run, repeat)
            cpu = _cpu_seconds(run)
            rows.append([f"ours: TorchStreamingLDA('exact') {dev} {np.dtype(dt).name}", n, fmt_s(t.median),
                         fmt_s(cpu), fmt_ratio(ref_total, t.median), fmt_ratio(ref_cpu, cpu), "-"])
    ok = all(ref_total / float(r[2]) >= 50 for r in rows[1:3])
    ok_cpu = all(ref_cpu / float(r[3]) >= 50 for r in rows[1:3])
    print_table(f"(b) streaming-LDA update, {n} x {d} features, {K} classes",
                ["method", "samples", "time (s)", "CPU s", "faster (wall)", "faster (CPU)", "check"], rows,
                [f"target >= 50x over the per-sample loop for StreamingLDA (both modes): wall time "
                 f"{'met' if ok else 'MISSED'}, CPU time {'met' if ok_cpu else 'MISSED'}",
                 "avalanche-lib StreamingLDA: not installed (needs the avalanche/torchvision stack); the loop "
                 "above is its per-sample rule"])


# ------------------------------------------------------------------------------------------------
# (c) accuracy
# ------------------------------------------------------------------------------------------------
def _cached_models(D, R, quick):
    """(name, F_tr, F_te, head factory) per method: the features are drawn (data-free) and computed
    once per data set, then every task split streams the same feature rows through a fresh head.

    CIRCLE: ``CIRCLEClassifier``'s own extractors (``extractors_``, grouped by ``groups_``) and a clone
    of its unfitted ``ensemble_`` head -- the same computation as ``CIRCLEClassifier.partial_fit``,
    without recomputing the features for every split. Baselines: ``make_baseline(name)``'s
    ``features`` (fitted without data) and ``head``.
    """
    from sklearn.base import clone

    from algos.continual import BASELINES, CIRCLEClassifier, StreamingLDA, make_baseline

    X_tr = np.asarray(D["X_tr"]).reshape(len(D["X_tr"]), -1)
    X_te = np.asarray(D["X_te"]).reshape(len(D["X_te"]), -1)
    shape = D["image_shape"]
    clf = CIRCLEClassifier(n_reservoirs=R, n_groups=2, image_shape=shape, random_state=0)
    clf.partial_fit(X_tr[:2], np.asarray(D["y_tr"])[:2])  # draws the extractors (data-free)
    order = np.concatenate(clf.groups_)

    def circle_feats(X):
        return np.hstack([clf.extractors_[r].transform(X) for r in order])

    ens = clf.ensemble_
    yield f"CIRCLE (R={R}, G=2)", circle_feats(X_tr), circle_feats(X_te), lambda: clone(ens)
    # the same extractor alone (R = 1, one head): the reservoir at the feature count of one extractor,
    # which is what the random_conv stem and birc2d baselines have (an ablation at equal feature count)
    one = clf.extractors_[order[0]]
    yield "CIRCLE (R=1, G=1)", one.transform(X_tr), one.transform(X_te), lambda: StreamingLDA()
    cache = {}
    for name in BASELINES:
        model = make_baseline(name, shape, random_state=0)
        head = StreamingLDA() if model.head is None else model.head
        if model.features is None:
            F_tr, F_te = X_tr.astype(np.float64), X_te.astype(np.float64)
        else:
            key = repr(model.features.get_params())
            if key not in cache:
                feats = clone(model.features).fit()
                cache[key] = (feats.transform(X_tr), feats.transform(X_te))
            F_tr, F_te = cache[key]
        yield name, F_tr, F_te, lambda head=head: clone(head)


def section_c(quick, repeat, args):
    from algos.continual import class_incremental_split, evaluate_cil, load_image_dataset

    data_dir = Path(os.environ.get("ALGOS_SHARED_DATA", REPO.parent / "shared" / "data"))
    sets = [("digits", "digits")]
    if not quick:
        sets += [("mnist5k", data_dir / "images" / "mnist_5k.csv.gz"),
                 ("cifar100-10", data_dir / "images" / "cifar100_first10.npz")]
    R = 2 if quick else 4
    for label, src in sets:
        if src != "digits" and not Path(src).is_file():
            print(f"* (c) {label}: {src} not found; skipped.\n")
            continue
        t0 = time.perf_counter()
        D = load_image_dataset(str(src), random_state=0)
        rows = []
        for mname, F_tr, F_te, factory in _cached_models(D, R, quick):
            cells = [mname, str(F_tr.shape[1])]
            for T in (1, 5, 10):
                tasks = class_incremental_split(D["y_tr"], T, class_order_seed=0)
                res = evaluate_cil(factory, F_tr, D["y_tr"], F_te, D["y_te"], tasks, random_state=0)
                cells.append(f"{res['A_last']:.4f} / {res['A_inc']:.4f} / {res['forgetting']:.3f}")
            rows.append(cells)
            print(f"  ... {label}: {mname} done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
        print_table(f"(c) {label}: A_last / A_inc / forgetting ({len(D['y_tr'])} train, {len(D['y_te'])} test, "
                    f"image {D['image_shape']})", ["method", "features", "T = 1", "T = 5", "T = 10"], rows,
                    ["features computed once per method and data set; each split streams them through a fresh "
                     "head (one partial_fit per task, within-task order shuffled, seed 0)",
                     f"{time.perf_counter() - t0:.0f} s for this table"])


def main(argv=None):
    parser = make_parser(__doc__.split("\n\n")[0], SECTIONS)
    parser.add_argument("--reservoirpy-path", default=None,
                        help="folder holding an installed reservoirpy (appended to sys.path)")
    parser.add_argument("--ref-samples", type=int, default=None,
                        help="samples timed in the per-sample SLDA loop of (b) (default 300, --quick 100)")
    args = parser.parse_args(argv)
    sections = selected_sections(args, SECTIONS)
    repeat = args.repeat or (2 if args.quick else 3)
    print(f"# bench_continual ({'quick' if args.quick else 'full'})\n")
    import numba  # noqa: F401
    import scipy  # noqa: F401
    import sklearn

    extra = [f"scikit-learn {sklearn.__version__}"]
    try:
        import torch

        extra.append(f"torch {torch.__version__} (cuda: {torch.cuda.is_available()}, "
                     f"{torch.get_num_threads()} threads)")
    except ImportError:
        extra.append("torch not installed")
    print(environment(extra) + "\n")
    t0 = time.perf_counter()
    for s in sections:
        {"a": section_a, "b": section_b, "c": section_c}[s](args.quick, repeat, args)
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
