r"""Side-by-side benchmark of :mod:`algos.networked_learning` against its anchors (networked_learning
reconstruction notes, sections 3 and 8).

Three sections (``--sections a,b,c``):

a  **Sketch application** ``S @ A`` with ``A`` of shape (m, d) = (1e6, 20) (``--quick``: 1e5),
   ``k = 500``: our shared sketches (Gaussian, generated in Philox chunks and never held as a
   k x m matrix; SRHT; CountSketch) against scikit-learn
   ``GaussianRandomProjection(n_components=k).fit_transform(A.T).T`` (a dense k x m
   ``components_``) and ``scipy.linalg.clarkson_woodruff_transform(A, k, rng=0)`` (CountSketch).
   Reported: median wall time, peak traced memory (``tracemalloc``, a separate untimed run) and
   the embedding distortion ``eta = max_i |s_i(S U) - 1|`` with ``U`` an orthonormal basis of
   ``range(A)`` (T6: ``eta ~ (sqrt(d) + sqrt(2 ln(2/delta)))/sqrt(k)`` for the Gaussian sketch).
   Times are medians of ``--repeat`` runs (default 3), except the two dense Gaussian maps at
   m = 1e6 (ours and sklearn), which run **once** (a few seconds to half a minute each). A
   cross-check at m = 2e4 fits the sketched protocol with our Gaussian sketch and the full
   protocol on ``(R X, R y)`` where ``R`` is sklearn's projection with its ``components_``
   replaced by our matrix: the coefficients must agree to rounding.
b  **A 10-spoke star on diabetes** (442 x 10, standardised; one feature per spoke, the hub sees
   none): our ``NetworkedDAGRegressor(protocol="full")`` against scikit-learn
   ``StackingRegressor`` (single-column ``LinearRegression`` pipelines, ``cv=5``,
   ``passthrough=False``); plus a cyclic path of depth 20 (ours) and centralised OLS for
   reference. Test R^2 over 20 random 75/25 splits (median, and quartiles) and the median fit time.
c  **Statistics vs compression vs subsampling**: excess risk of the output agent (end of a cyclic
   path of depth 4d, no intercept) against the floats per edge ``k`` in {50, ..., 1600}, m = 2e4,
   on ``make_gaussian(8, "ar1", rho=0.5, sigma=1)`` and on ``make_leverage_design(6, q=0.01)``
   (sigma = 1), for the shared Gaussian sketch, the shared CountSketch, shared row subsampling
   (B2) and the full protocol (k = m); median over 5 seeds. For the Gaussian design the T8
   prediction ``sigma^2 (d/m + d/(k-d-1))`` is printed alongside; for the leverage design also the
   means and how many subsamples contain no row with ``x_1 != 0`` (probability ``(1-q)^k``).

   The grid (every k x protocol x seed cell, and the full protocol per seed) runs as one
   ``algos.experiments.run_sweep``: sequential by default, or on a cluster with
   ``--backend dask|ray --scheduler ADDRESS`` (see docs/scaling.md). Every cell uses the fixed
   seeds above, so the table is the same wherever the cells run (only the fit times differ).

Run::

    python benchmarks/bench_networked_learning.py            # full (~5 minutes on 2 cores)
    python benchmarks/bench_networked_learning.py --quick    # smoke run (~30 s)
    python benchmarks/bench_networked_learning.py --sections c --backend dask --scheduler tcp://host:8786

Benchmarks are not tests: nothing here asserts a time.
"""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
import warnings

import numpy as np

try:  # run as a module (python -m benchmarks.bench_networked_learning) or as a script
    from ._common import (
        add_cluster_options,
        describe_sweep,
        environment,
        fmt_ratio,
        fmt_s,
        make_parser,
        print_table,
        selected_sections,
        sweep_options,
        timeit_median,
    )
except ImportError:  # pragma: no cover - script mode
    from _common import (
        add_cluster_options,
        describe_sweep,
        environment,
        fmt_ratio,
        fmt_s,
        make_parser,
        print_table,
        selected_sections,
        sweep_options,
        timeit_median,
    )

SECTIONS = ("a", "b", "c")
SEED = 20260601


def _peak_mib(fn):
    """Peak traced memory (MiB) of one call of ``fn`` (tracemalloc; numpy buffers are traced)."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20


def _distortion(SA, R):
    """eta = max |s_i(S U) - 1| with A = U R (thin QR): S U = (S A) R^{-1}."""
    from scipy.linalg import solve_triangular

    SU = solve_triangular(R, SA.T, trans="T", lower=False).T  # (S A) R^{-1}
    s = np.linalg.svd(SU, compute_uv=False)
    return float(max(s.max() - 1.0, 1.0 - s.min()))


# ============================================================================ section a
def section_a(quick, repeat):
    from scipy.linalg import clarkson_woodruff_transform
    from sklearn.random_projection import GaussianRandomProjection

    from algos.networked_learning._sketch import make_sketch

    m = 100_000 if quick else 1_000_000
    d, k = 20, 500
    rng = np.random.default_rng(SEED)
    A = rng.standard_normal((m, d)) * np.linspace(1.0, 5.0, d)  # unequal column scales
    _, R = np.linalg.qr(A)
    slow_once = m >= 1_000_000

    # warm-up (numba compilation, lazy imports) on small data
    small = A[:4096]
    for kind in ("gaussian", "srht", "countsketch"):
        make_sketch(kind, 64, small.shape[0], 0).apply(small)
    clarkson_woodruff_transform(small, 64, rng=0)
    GaussianRandomProjection(n_components=64, random_state=0).fit_transform(small.T)
    gc.collect()
    gc.freeze()  # keep the big arrays out of the collector's way in the timed calls

    cases = [
        ("Gaussian (chunked)", "ours", lambda: make_sketch("gaussian", k, m, 1).apply(A), slow_once),
        ("sklearn GaussianRandomProjection", "anchor",
         lambda: GaussianRandomProjection(n_components=k, random_state=0).fit_transform(A.T).T, slow_once),
        ("SRHT", "ours", lambda: make_sketch("srht", k, m, 1).apply(A), False),
        ("CountSketch", "ours", lambda: make_sketch("countsketch", k, m, 1).apply(A), False),
        ("scipy clarkson_woodruff_transform", "anchor", lambda: clarkson_woodruff_transform(A, k, rng=0), False),
    ]
    res = {}
    for name, kind, fn, once in cases:
        t = timeit_median(fn, repeat=1 if once else repeat)
        peak = _peak_mib(fn)
        res[name] = (t, peak, _distortion(np.asarray(t.result), R))
    eta_theory = (np.sqrt(d) + np.sqrt(2 * np.log(2 / 0.05))) / np.sqrt(k)

    rows = []
    for ours, anchor in (("Gaussian (chunked)", "sklearn GaussianRandomProjection"),
                         ("CountSketch", "scipy clarkson_woodruff_transform"),
                         ("SRHT", "sklearn GaussianRandomProjection")):
        (to, po, eo), (ta, pa, ea) = res[ours], res[anchor]
        rows.append([f"m={m:.0e}, d={d}, k={k}", ours, fmt_s(to.median), f"{po:.0f}", f"{eo:.3f}",
                     anchor, fmt_s(ta.median), f"{pa:.0f}", f"{ea:.3f}", fmt_ratio(ta.median, to.median),
                     f"{len(to.times)}/{len(ta.times)}"])
    notes = [
        "time: median wall seconds of the timed runs (runs ours/anchor in the last column); peak: tracemalloc "
        "peak of one separate call (MiB), input excluded; eta: max |singular value of S U - 1|, U an orthonormal "
        f"basis of range(A); T6 Gaussian prediction (delta = 0.05) eta <= {eta_theory:.3f}.",
        "ratio = anchor time / our time (> 1: ours faster). The SRHT row compares against the dense Gaussian "
        "projection (no SRHT in sklearn/scipy).",
    ]
    if slow_once:
        notes.append("the two dense Gaussian maps (ours, sklearn) run once at m = 1e6 (slow); the others "
                     f"{repeat} times.")
    notes.append(f"sklearn holds components_ as a dense k x m float64 matrix ({k * m * 8 / 2**20:.0f} MiB); "
                 "ours generates S in 8192-row Philox chunks and never holds k x m.")
    gc.unfreeze()

    # cross-check: same matrix -> same fitted coefficients
    from algos.networked_learning._estimator import NetworkedDAGRegressor
    from algos.networked_learning._graphs import cyclic_allocation, make_path

    mc = 20_000
    Xc = A[:mc].copy()
    yc = Xc @ np.ones(d) / np.sqrt(d) + rng.standard_normal(mc)
    G = make_path(2 * d)
    fs = cyclic_allocation(G, d)
    est = NetworkedDAGRegressor(graph=G, feature_sets=fs, protocol="sketch", sketch="gaussian", k=k,
                                fit_intercept=False, engine="coef", random_state=3).fit(Xc, yc)
    S = make_sketch("gaussian", k, mc, est.sketch_seed_).to_dense()
    grp = GaussianRandomProjection(n_components=k, random_state=0).fit(Xc.T)
    grp.components_ = S
    Z = grp.transform(np.column_stack([Xc, yc]).T).T
    ref = NetworkedDAGRegressor(graph=G, feature_sets=fs, protocol="full", fit_intercept=False).fit(Z[:, :d], Z[:, d])
    diff = float(np.max(np.abs(est.coef_ - ref.coef_)))
    notes.append(f"cross-check (m = {mc}, d = {d}, k = {k}, path of depth {2 * d}): sketched protocol with our "
                 "Gaussian S vs the full protocol on sklearn's projection of [X, y] with components_ = our S: "
                 f"max |coef difference| = {diff:.1e} (|coef| ~ {np.abs(ref.coef_).max():.2f}).")
    print_table("(a) Applying a k x m sketch to A (m x d)",
                ["size", "ours", "time (s)", "peak (MiB)", "eta", "anchor", "time (s)", "peak (MiB)", "eta",
                 "ratio", "runs"], rows, notes)


# ============================================================================ section b
def section_b(quick, repeat):
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import StackingRegressor
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import r2_score
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline

    from algos.networked_learning._data import load_diabetes_agents
    from algos.networked_learning._estimator import NetworkedDAGRegressor
    from algos.networked_learning._graphs import cyclic_allocation, make_path, make_star

    X, y = load_diabetes_agents()
    d = X.shape[1]
    star = make_star(d)
    star_fs = {j: [j] for j in range(d)}
    star_fs[d] = []
    path = make_path(20)
    path_fs = cyclic_allocation(path, d)

    models = {
        "ours: star (10 spokes -> hub), full": lambda: NetworkedDAGRegressor(
            graph=star, feature_sets=star_fs, protocol="full", output_agent=d),
        "sklearn StackingRegressor (cv=5)": lambda: StackingRegressor(
            estimators=[(f"x{j}", make_pipeline(ColumnTransformer([("c", "passthrough", [j])]), LinearRegression()))
                        for j in range(d)],
            final_estimator=LinearRegression(), cv=5, passthrough=False),
        "ours: cyclic path, depth 20, full": lambda: NetworkedDAGRegressor(
            graph=path, feature_sets=path_fs, protocol="full"),
        "centralised OLS (LinearRegression)": lambda: LinearRegression(),
    }
    n_splits = 5 if quick else 20
    r2 = {name: [] for name in models}
    times = {name: [] for name in models}
    for name, make in models.items():  # warm-up
        make().fit(X[:100], y[:100])
    for s in range(n_splits):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=SEED + s)
        for name, make in models.items():
            t = timeit_median(lambda: make().fit(Xtr, ytr), repeat=repeat, budget_s=1.0)
            times[name].append(t.median)
            r2[name].append(r2_score(yte, t.result.predict(Xte)))
    rows = []
    ref = statistics.median(times["sklearn StackingRegressor (cv=5)"])
    for name in models:
        q1, med, q3 = np.percentile(r2[name], [25, 50, 75])
        tm = statistics.median(times[name])
        rows.append(["442 x 10", name, f"{med:.4f}", f"[{q1:.4f}, {q3:.4f}]", fmt_s(tm), fmt_ratio(ref, tm)])
    # paired difference star vs stacking
    diff = np.array(r2["ours: star (10 spokes -> hub), full"]) - np.array(r2["sklearn StackingRegressor (cv=5)"])
    ols_diff = np.array(r2["ours: star (10 spokes -> hub), full"]) - np.array(r2["centralised OLS (LinearRegression)"])
    notes = [
        f"test R^2 over {n_splits} random 75/25 splits (median, quartiles); time: median over splits of the "
        f"median of up to {repeat} fits; ratio = StackingRegressor time / this time.",
        f"paired R^2 difference star - Stacking: median {np.median(diff):+.4f}, range "
        f"[{diff.min():+.4f}, {diff.max():+.4f}]; star - OLS: max |diff| {np.abs(ols_diff).max():.1e} "
        "(with single-feature spokes the in-sample hub is exactly OLS).",
    ]
    print_table("(b) 10-spoke star on diabetes: ours vs StackingRegressor",
                ["size", "model", "test R^2 (median)", "quartiles", "fit time (s)", "ratio"], rows, notes)


# ============================================================================ section c
C_DESIGNS = ("gaussian", "leverage")
C_PROTOCOLS = {"sketch gaussian": dict(protocol="sketch", sketch="gaussian", engine="coef"),
               "sketch countsketch": dict(protocol="sketch", sketch="countsketch", engine="coef"),
               "subsample": dict(protocol="subsample")}


def _c_model(design):
    """``(title, model)`` of a design of section (c); deterministic, so every worker rebuilds the same one."""
    from algos.networked_learning._data import make_gaussian, make_leverage_design

    if design == "gaussian":
        return "gaussian(d=8, ar1 rho=0.5, sigma=1)", make_gaussian(8, "ar1", rho=0.5, sigma=1.0)
    if design == "leverage":
        return "leverage(d=6, q=0.01, sigma=1)", make_leverage_design(6, 0.01, sigma=1.0)
    raise ValueError(f"'design' must be one of {C_DESIGNS}; got {design!r}.")


def c_cell(design, protocol, k, seed, m, random_state=None):
    """One cell of grid (c): fit ``protocol`` with ``k`` floats per edge on data set ``seed``.

    The data set is ``model.sample(m, random_state=SEED + seed)`` and the estimator's
    ``random_state`` is ``SEED + 7 * seed`` (``protocol="full"`` takes neither ``k`` nor a seed), so
    a cell gives the same numbers wherever it runs; ``random_state`` (the stream ``run_sweep`` hands
    every task) is not used. Returns the excess risk, the fit time ``fit_s`` and, for the row
    subsample, whether no kept row has ``x_1 != 0`` (``missed``; ``None`` for the other protocols).
    """
    from algos.networked_learning._estimator import NetworkedDAGRegressor
    from algos.networked_learning._graphs import cyclic_allocation, make_path
    from algos.networked_learning._population import excess_risk

    _, model = _c_model(design)
    d = model.d
    G = make_path(4 * d)
    fs = cyclic_allocation(G, d)
    X, y = model.sample(m, random_state=SEED + seed)
    t0 = time.perf_counter()
    if protocol == "full":
        est = NetworkedDAGRegressor(graph=G, feature_sets=fs, protocol="full", fit_intercept=False).fit(X, y)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SketchSizeWarning at k = 50
            est = NetworkedDAGRegressor(graph=G, feature_sets=fs, k=k, fit_intercept=False,
                                        random_state=SEED + 7 * seed, **C_PROTOCOLS[protocol]).fit(X, y)
    fit_s = time.perf_counter() - t0
    missed = bool(not np.any(X[est.rows_, 0] != 0)) if protocol == "subsample" else None
    return {"excess": float(excess_risk(est.coef_, model.Sigma, model.beta_star)), "fit_s": fit_s,
            "missed": missed}


def section_c_records(m, ks, n_seeds, designs=C_DESIGNS, sweep=None):
    """Run the k x protocol x seed grid of section (c) (plus the full protocol per seed) as one sweep.

    Every cell is one :func:`c_cell` task of :func:`algos.experiments.run_sweep`; ``sweep`` holds
    its ``backend`` / ``scheduler`` / ``n_jobs`` (default: sequential, in this process). Returns the
    records in grid order: per design, the full protocol for every seed, then for every ``k`` and
    protocol every seed. Only the ``*_s`` (timing) values depend on where a cell ran.
    """
    from algos.experiments import run_sweep

    grid = []
    for design in designs:
        grid += [{"design": design, "protocol": "full", "k": None, "seed": s, "m": m} for s in range(n_seeds)]
        grid += [{"design": design, "protocol": p, "k": k, "seed": s, "m": m}
                 for k in ks for p in C_PROTOCOLS for s in range(n_seeds)]
    return run_sweep(c_cell, grid, random_state=SEED, **(sweep or {"backend": "sequential"}))


def section_c(quick, repeat, sweep=None):
    from algos.networked_learning._estimator import NetworkedDAGRegressor
    from algos.networked_learning._graphs import cyclic_allocation, make_path

    m = 4000 if quick else 20_000
    ks = (50, 200, 800) if quick else (50, 100, 200, 400, 800, 1600)
    n_seeds = 3 if quick else 5
    records = section_c_records(m, ks, n_seeds, sweep=sweep)
    for design in C_DESIGNS:
        title, model = _c_model(design)
        d = model.d
        G = make_path(4 * d)
        fs = cyclic_allocation(G, d)
        mine = [r for r in records if r["design"] == design]  # seed order inside each (k, protocol)
        full = [r["excess"] for r in mine if r["protocol"] == "full"]
        X0, y0 = model.sample(m, random_state=SEED)
        t_full = timeit_median(lambda: NetworkedDAGRegressor(graph=G, feature_sets=fs, protocol="full",
                                                             fit_intercept=False).fit(X0, y0), repeat=repeat)
        sigma2 = model.noise_var
        rows = []
        for k in ks:
            cells = {}
            fit_s = {}
            for pname in C_PROTOCOLS:
                recs = [r for r in mine if r["protocol"] == pname and r["k"] == k]
                errs = [r["excess"] for r in recs]
                cells[pname] = float(np.median(errs))
                if pname == "subsample":
                    miss = [r["missed"] for r in recs]
                    cells["miss"] = (int(sum(miss)), len(miss))
                    cells["sub_mean"] = float(np.mean(errs))
                if pname == "sketch gaussian":
                    cells["gauss_mean"] = float(np.mean(errs))
                fit_s[pname] = float(np.median([r["fit_s"] for r in recs]))
            pred = sigma2 * (d / m + d / (k - d - 1))
            row = [f"m={m}, k={k}", f"{cells['sketch gaussian']:.3e}"]
            if title.startswith("gaussian"):
                row.append(f"{pred:.3e} ({cells['sketch gaussian'] / pred:.2f} / {cells['gauss_mean'] / pred:.2f})")
            row += [f"{cells['sketch countsketch']:.3e}", f"{cells['subsample']:.3e}",
                    f"{cells['subsample'] / cells['sketch gaussian']:.3g}", f"{np.median(full):.3e}",
                    f"{fit_s['sketch gaussian']:.3g} / {fit_s['sketch countsketch']:.3g} / {fit_s['subsample']:.3g}"]
            if title.startswith("leverage"):
                q = model.q
                row.insert(5, f"{cells['sub_mean']:.3e} / {cells['gauss_mean']:.3e}")
                row.insert(6, f"{cells['miss'][0]}/{cells['miss'][1]} ({(1 - q) ** k:.2f})")
            rows.append(row)
        headers = ["size", "sketch gaussian"]
        if title.startswith("gaussian"):
            headers.append("T8 sigma^2(d/m + d/(k-d-1)) (median / mean ratio)")
        headers += ["sketch countsketch", "subsample (B2)", "subsample / gaussian", "full (k = m)",
                    "fit s (gauss / count / sub)"]
        if title.startswith("leverage"):
            headers.insert(5, "mean: subsample / gaussian")
            headers.insert(6, "subsample missed x1 (theory (1-q)^k)")
        notes = [
            f"excess risk (beta - beta*)' Sigma (beta - beta*) of the output agent (end of a cyclic path of depth "
            f"{4 * d}), median over {n_seeds} seeds (same data sets for every protocol); full-protocol fit "
            f"{fmt_s(t_full.median)} s; T8 full-sample term sigma^2 d/m = {sigma2 * d / m:.2e}.",
        ]
        if title.startswith("leverage"):
            notes.append(f"x1 is nonzero on about q m = {0.01 * m:.0f} rows; a row subsample of k rows keeps about "
                         f"{0.01:g} k of them ({', '.join(f'{0.01 * k:g}' for k in ks)} for k = "
                         f"{', '.join(map(str, ks))}); "
                         "'missed x1': seeds whose subsample has no row with x1 != 0 (then beta_1 is not "
                         "identified and the excess is about beta_1^2 = 1); (1-q)^k is the chance of that.")
        print_table(f"(c) excess risk vs k: {title}", headers, rows, notes)


def main(argv=None):
    parser = add_cluster_options(make_parser(__doc__.split("\n\n")[0], SECTIONS))
    args = parser.parse_args(argv)
    sections = selected_sections(args, SECTIONS)
    sweep = sweep_options(args)
    repeat = args.repeat or (1 if args.quick else 3)
    print(f"# bench_networked_learning ({'quick' if args.quick else 'full'})\n")
    import numpy  # noqa: F401  (so environment() lists it)
    import scipy  # noqa: F401
    import sklearn

    print(environment([f"scikit-learn {sklearn.__version__}"]) + "\n")
    if "c" in sections and sweep["backend"] != "sequential":
        print(f"section (c) grid: {describe_sweep(sweep)}\n")
    t0 = time.perf_counter()
    for s in sections:
        if s == "c":
            section_c(args.quick, repeat, sweep=sweep)
        else:
            {"a": section_a, "b": section_b}[s](args.quick, repeat)
    print(f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
