r"""Side-by-side benchmark of :mod:`algos.point_process` (VoGCAM) against its anchors (point_process
reconstruction notes, sections 3 and 8).

Three sections (``--sections sim,bei,recovery``):

sim  **Simulated LGCPs, scaling in the node count N** (unit square, exponential kernel, sigma^2 = 1,
     phi = 0.1, truth on a 256^2 grid by circulant embedding). The intensity is chosen so that about N/2
     nodes are points and N/2 are dummies (``n_dummy = N/2``); N in {2e3, 5e3, 1e4, 2e4, 3e4}
     (``--quick``: {2e3, 4e3}). For each N: VoGCAM (all hyperparameters fitted by the ELBO) wall time, ELBO,
     RMSE of the posterior mean against the true log-intensity on a 64^2 grid, 95% coverage, relative
     count error; GPBoost's Laplace-Vecchia on **the same nodes, counts and offsets log w**
     (``GPModel(likelihood="poisson", gp_approx="vecchia", num_neighbors=15, cov_fct_shape=0.5)``,
     hyperparameters fitted) with its time, log-likelihood and the correlation of its posterior means
     with VoGCAM's at the nodes and the median ratio of posterior sds; the grid Laplace baseline
     (``GridLaplaceLGCP`` with about N cells, FFT/CG solver, hyperparameters fixed at VoGCAM's
     estimates because the FFT solver has no evidence) and, at the smallest N only, the gpytorch
     SVGP baseline. The log-log slope of VoGCAM's time against N is printed (target <= 1.3).
bei  **Barro Colorado Island trees** (``../shared/data/points/bei.csv``, 3604 points, window
     [0,1000] x [0,500] m), without and with the standardised ``elev`` and ``grad`` rasters of
     ``bei_covariates.npz`` (bilinear sampling with :class:`RasterCovariates`): the same columns, and
     the fitted coefficients, variance and range. Target: with covariates, fitted in < 120 s on one
     core (run with ``OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1`` for the one-core figure).

recovery  **Acceptance experiment 8.3 of the point_process reconstruction notes**: unit square, exponential kernel,
     sigma^2 = 1, phi = 0.1, beta = log 500 - 1/2, truth on a 128^2 grid, ``--seeds`` seeds (default 20), VoGCAM
     with its default nodes and all hyperparameters fitted. Per seed: RMSE of the posterior mean of f against
     the truth at the 128^2 cell centres and, after averaging both over 2x2 blocks, on the 64^2 grid;
     pointwise 95% coverage at the 128^2 centres; |E[N] - n|/n; sigma^2 and phi estimates; fit time.
     Against ``GridLaplaceLGCP`` with about as many cells as VoGCAM has nodes (FFT/CG solver,
     VoGCAM's hyperparameters, so the two differ only in the approximation). Medians are printed.

second_order  **Second-order summaries against spatstat** on the shared patterns (bei, japanesepines,
     redwood, swedishpines; rectangles as in their headers, plus swedishpines in an L-shaped polygon):
     K with the isotropic, translation and border corrections and g (translation, Epanechnikov,
     Stoyan's bandwidth) on 513 distances up to a quarter of the shorter side, the largest relative
     difference to spatstat's ``Kest`` / ``pcf`` (computed by ``Rscript``, ``--rscript``; the column is
     skipped without R), and the CPU time of one K (isotropic) and of a 39-simulation L envelope.
hyper  **Hyperparameters users can trust**: simulated LGCPs with sigma^2 = 2 and range
     0.05, 0.10, 0.15 on the unit square (E n ~ 500 / e, ``--seeds`` seeds, default 20): median
     sigma^2_hat / sigma^2 and phi_hat / phi of the minimum-contrast fit on K (``lgcp_min_contrast``),
     of VoGCAM's ELBO hyperparameters and of its Laplace-evidence hyperparameters (the default
     ``hyperparameters="auto"`` is the minimum contrast there);
     target: median variance ratio in [0.8, 1.25] and range ratio in [0.7, 1.4]. On the shared real
     patterns: minimum contrast, spatstat's ``kppm(X ~ 1, "LGCP")`` and VoGCAM's ELBO, and the held-out
     score (fit on a 70 % independent thinning, ``score(X_test, thinning=0.3)`` with the mean and median
     plug-ins and the full predictive) of ``hyperparameters="elbo"`` and ``"min_contrast"``.

real  **Real patterns against GPBoost** (bei, japanesepines, redwood, swedishpines; ``--patterns``): on
     VoGCAM's nodes (``--real-dummy``, default the default dummy grid and 2000 dummies; bei with a 50^2
     grid, its default 18,310 nodes with ``--real-bei-default``), VoGCAM with ``hyperparameters="elbo"``
     (sweeps, median CPU of ``--repeat`` fits, ELBO, sigma^2 / range) against GPBoost's Laplace-Vecchia
     with its hyperparameters fitted (median CPU, its sigma^2 / range), and both at the same fixed
     hyperparameters (the minimum contrast's): CPU of each, correlation of the posterior means at the
     nodes and the median sd ratio.

scale  **Second-order summaries at scale**: K (isotropic and border) of a uniform pattern in the unit
     square at ``--scale-sizes`` points (default 2e3, 2e4, 1e5, 1e6; isotropic up to ``--scale-iso-max``,
     default 2e4), 513 distances up to 0.25, or up to spatstat's large-n rule sqrt(1000 / (pi n)) above
     2e4 points: our CPU (one thread, median of ``--repeat`` up to 2e4 points), traced peak memory and
     peak RSS, each in a fresh process; spatstat's ``Kest`` CPU with ``--rscript`` (skipped without R).

large  **VoGCAM on large simulated LGCPs** (variance 1, range 0.05, unit square, simulated on a 256^2 grid,
     E n = ``--large-sizes``, default 1e5, 1e6, 1e7; ``--quick`` 1e4, 1e5): each fit in its own child
     process, one thread (``benchmarks/vogcam_aggregate.py``'s child), with the Voronoi quadrature (every
     point a node) and the aggregated-count grid (``quadrature="grid"``), ``n_dummy="auto"`` and the
     default hyperparameters (minimum contrast on K): nodes, process CPU, peak RSS of the child
     (simulation, fit and 65,536 predictions), fitted variance and range, relative RMSE of the posterior
     mean intensity against the true one, and of the grid fit against the Voronoi fit. A fit whose memory
     estimate exceeds the budget is refused before allocation: the row gives the refusal. spatstat's
     ``kppm(X ~ 1, "LGCP")`` on the same pattern (CPU, variance, range) up to ``--large-spatstat-max``
     points (default 1e6) with ``--rscript``.

GPBoost is not a dependency: it is imported from the environment or from ``--gpboost-path`` (e.g.
``pip install --target /tmp/gpb gpboost``); when it cannot be imported the reason is printed and its
columns are omitted.

Run::

    python benchmarks/bench_point_process.py --gpboost-path /tmp/gpb            # full (~15-30 min on 2 cores)
    python benchmarks/bench_point_process.py --quick --gpboost-path /tmp/gpb    # smoke run

Benchmarks are not tests: nothing here asserts a time.
"""

from __future__ import annotations

import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

try:  # run as a module (python -m benchmarks.bench_point_process) or as a script
    from ._common import environment, fmt_s, make_parser, print_table, selected_sections
except ImportError:  # pragma: no cover - script mode
    from _common import environment, fmt_s, make_parser, print_table, selected_sections

SECTIONS = ("sim", "bei", "recovery", "second_order", "hyper", "real", "scale", "large")
PATTERNS = ("bei", "japanesepines", "redwood", "swedishpines")
SEED = 20261130
DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "points"


class _Clock:
    """Wall and process-CPU seconds of a block (CPU time is robust to other jobs on a shared machine)."""

    def __enter__(self):
        self.w0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.w0
        self.cpu = time.process_time() - self.c0
        return False


def _import_gpboost(path):
    if path:
        sys.path.append(path)  # appended: the folder may hold its own numpy, which must not shadow ours
    try:
        import gpboost as gpb  # noqa: F401
    except Exception as exc:  # ImportError, or a missing shared library
        return None, f"{type(exc).__name__}: {exc}"
    return gpb, None


def _fit_gpboost(gpb, nodes, counts, weights, Z, cov_pars=None):
    """GPBoost Laplace-Vecchia on VoGCAM's quadrature (same nodes, counts and offsets log w); with
    ``cov_pars`` = (sigma^2, range) fixed there."""
    clock = _Clock().__enter__()
    model = gpb.GPModel(gp_coords=nodes, cov_function="matern", cov_fct_shape=0.5, likelihood="poisson",
                        gp_approx="vecchia", num_neighbors=15)
    model.fit(y=counts, X=Z, offset=np.log(weights), params=_gpboost_params(cov_pars))
    pred = model.predict(gp_coords_pred=nodes, X_pred=Z, offset_pred=np.zeros(len(nodes)), predict_var=True,
                         predict_response=False)
    clock.__exit__()
    mu = np.asarray(pred["mu"], dtype=np.float64)
    var = np.asarray(pred["var"], dtype=np.float64)
    try:
        ll = -float(model.get_current_neg_log_likelihood())
    except Exception:  # pragma: no cover - older gpboost
        ll = float("nan")
    cov = np.asarray(model.get_cov_pars()).ravel()
    return dict(time=clock.wall, cpu=clock.cpu, mean=mu, sd=np.sqrt(np.maximum(var, 0.0)), loglik=ll, cov_pars=cov)


def _agree(a_mean, a_sd, b_mean, b_sd):
    corr = float(np.corrcoef(a_mean, b_mean)[0, 1])
    ratio = float(np.median(b_sd / np.maximum(a_sd, 1e-300)))
    return corr, ratio


def _svgp_iter(args):
    return args.svgp_iter or (100 if args.quick else 300)


def _eval_grid(g=64):
    xs = (np.arange(g) + 0.5) / g
    gx, gy = np.meshgrid(xs, xs)
    return np.column_stack([gx.ravel(), gy.ravel()])


def _vogcam():
    try:
        from algos.point_process import VoGCAM
    except ImportError:  # the package export is added with the module's __init__
        from algos.point_process.vogcam._vogcam import VoGCAM
    return VoGCAM


def _warm_up(VoGCAM):
    """One small untimed fit, so numba's compilation is not charged to the first timed fit."""
    X = np.random.default_rng(0).uniform(size=(50, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        VoGCAM(window=(0, 1, 0, 1), n_dummy=64, max_iter=3, hyperparameters="elbo").fit(X)


def section_sim(args, gpb, gpb_reason):
    VoGCAM = _vogcam()
    _warm_up(VoGCAM)
    from algos.point_process._simulate import simulate_lgcp
    from algos.point_process.baselines import GridLaplaceLGCP, SVGPCoxProcess

    sizes = tuple(int(float(v)) for v in args.sizes.split(",")) if args.sizes else \
        ((2000, 4000) if args.quick else (2000, 5000, 10000, 20000, 30000))
    P = _eval_grid()
    rows, times = [], []
    for k, N in enumerate(sizes):
        # E n = exp(beta + sigma^2/2) |W| = N/2
        beta = math.log(N / 2) - 0.5
        s = simulate_lgcp((0, 1, 0, 1), mean=beta, variance=1.0, length_scale=0.1, grid=256, random_state=SEED + k)
        truth = s.log_intensity_at(P)
        with warnings.catch_warnings(), _Clock() as ck:
            warnings.simplefilter("ignore")
            est = VoGCAM(window=(0, 1, 0, 1), n_dummy=N // 2, random_state=0, hyperparameters="elbo").fit(s.points)
        t_v = ck.wall
        times.append((est.n_nodes_, ck.cpu))
        mu, sd = est.predict_log_intensity(P, return_std=True)
        rmse = float(np.sqrt(np.mean((mu - truth) ** 2)))
        cover = float(np.mean(np.abs(mu - truth) <= 1.96 * sd))
        cnt_err = abs(est.expected_count() - s.expected_count) / s.expected_count
        row = [est.n_nodes_, s.n, fmt_s(t_v), fmt_s(ck.cpu), f"{est.elbo_:.1f}", f"{rmse:.3f}", f"{cover:.3f}",
               f"{cnt_err:.3f}",
               f"{est.variance_:.2f}/{est.length_scale_:.3f}"]
        vsd = np.sqrt(est.var_)
        if gpb is not None and est.n_nodes_ > args.gpboost_max_nodes:
            row += [f"skipped (N > {args.gpboost_max_nodes})"] + [""] * 5
        elif gpb is not None:
            try:
                g = _fit_gpboost(gpb, est.nodes_, est.counts_, est.weights_, np.ones((est.n_nodes_, 1)))
                corr, ratio = _agree(est.mean_, vsd, g["mean"], g["sd"])
                row += [fmt_s(g["time"]), fmt_s(g["cpu"]), f"{g['loglik']:.1f}", f"{corr:.3f}", f"{ratio:.2f}",
                        f"{g['cpu'] / ck.cpu:.2f}x"]
            except Exception as exc:  # pragma: no cover - report, do not abort the table
                row += [f"failed: {type(exc).__name__}"] + [""] * 5
        gside = max(8, int(round(math.sqrt(est.n_nodes_))))
        t0 = time.perf_counter()
        gl = GridLaplaceLGCP(window=(0, 1, 0, 1), grid=gside, variance=est.variance_, length_scale=est.length_scale_,
                             solver="fft", n_var_samples=64, random_state=0).fit(s.points)
        t_g = time.perf_counter() - t0
        gm, gs = gl.predict_log_intensity(P, return_std=True)
        gm_n, gs_n = gl.predict_log_intensity(est.nodes_, return_std=True)
        corr_g, _ = _agree(est.mean_, vsd, gm_n, gs_n)
        row += [f"{gside}^2", fmt_s(t_g), f"{np.sqrt(np.mean((gm - truth) ** 2)):.3f}",
                f"{np.mean(np.abs(gm - truth) <= 1.96 * gs):.3f}", f"{corr_g:.3f}"]
        if k == 0:
            try:
                t0 = time.perf_counter()
                sv = SVGPCoxProcess(window=(0, 1, 0, 1), n_inducing=256, quad_grid=64,
                                    max_iter=_svgp_iter(args), random_state=0).fit(s.points)
                t_s = time.perf_counter() - t0
                sm, ss = sv.predict_log_intensity(P, return_std=True)
                corr_s, _ = _agree(est.mean_, vsd, *sv.predict_log_intensity(est.nodes_, return_std=True))
                row += [fmt_s(t_s), f"{np.sqrt(np.mean((sm - truth) ** 2)):.3f}",
                        f"{np.mean(np.abs(sm - truth) <= 1.96 * ss):.3f}", f"{corr_s:.3f}"]
            except ImportError as exc:  # pragma: no cover
                row += [f"n/a ({exc})", "", "", ""]
        else:
            row += ["-", "-", "-", "-"]
        rows.append(row)
        print("  [sim] row: | " + " | ".join(str(c) for c in row) + " |", flush=True)
    headers = ["N nodes", "n", "VoGCAM s", "VoGCAM cpu s", "ELBO", "RMSE", "cover95", "|dN|/N", "sigma2/phi"]
    if gpb is not None:
        headers += ["GPBoost s", "GPB cpu s", "GPB loglik", "corr(mean)", "sd ratio GPB/VoG", "GPB/VoG cpu"]
    headers += ["grid", "GridLaplace s", "GL RMSE", "GL cover95", "GL corr"]
    headers += ["SVGP s", "SVGP RMSE", "SVGP cover95", "SVGP corr"]
    Ns = np.log([t[0] for t in times])
    Ts = np.log([t[1] for t in times])
    slope = float(np.polyfit(Ns, Ts, 1)[0]) if len(times) > 1 else float("nan")
    notes = [f"log-log slope of VoGCAM CPU time vs N: {slope:.2f} (target <= 1.3)",
             "s = wall seconds, cpu s = process CPU seconds (all threads; robust to other jobs on a shared machine)",
             "RMSE/cover95: against the true log-intensity on a 64^2 grid of cell centres; corr: posterior means "
             "at VoGCAM's nodes",
             "GridLaplace: FFT/CG solver, variances from 64 exact perturbation samples, hyperparameters fixed at "
             "VoGCAM's estimates; SVGP: 256 inducing points, 64^2 quadrature, Adam lr 0.05, smallest N only, "
             "iterations: --svgp-iter"]
    if gpb is None:
        notes.append(f"GPBoost columns omitted: {gpb_reason}")
    print_table("Simulated LGCPs (unit square, sigma^2 = 1, phi = 0.1)", headers, rows, notes)


def section_bei(args, gpb, gpb_reason):
    VoGCAM = _vogcam()
    _warm_up(VoGCAM)
    from algos.point_process._covariates import load_raster_covariates
    from algos.point_process.baselines import GridLaplaceLGCP, SVGPCoxProcess

    path = DATA / "bei.csv"
    if not path.exists():
        print(f"### bei\n\nskipped: {path} not found\n")
        return
    X = np.loadtxt(path, delimiter=",", comments="#")
    window = (0.0, 1000.0, 0.0, 500.0)
    cov = load_raster_covariates(DATA / "bei_covariates.npz", keys=["elev", "grad"])
    rows = []
    for label, covariates in (("none", None), ("elev+grad", cov)):
        with warnings.catch_warnings(), _Clock() as ck:
            warnings.simplefilter("ignore")
            est = VoGCAM(window=window, random_state=0, hyperparameters="elbo").fit(X, covariates=covariates)
        t_v = ck.wall
        vsd = np.sqrt(est.var_)
        coef = "[" + ", ".join(f"{c:.3f}" for c in est.coef_) + "]"
        row = [label, est.n_nodes_, fmt_s(t_v), fmt_s(ck.cpu), f"{est.elbo_:.1f}", coef,
               f"{est.variance_:.2f}/{est.length_scale_:.1f}"]
        if gpb is not None and est.n_nodes_ > args.gpboost_max_nodes:
            row += [f"skipped (N > {args.gpboost_max_nodes})"] + [""] * 4
        elif gpb is not None:
            Z = np.ones((est.n_nodes_, 1)) if covariates is None else \
                np.column_stack([np.ones(est.n_nodes_), covariates(est.nodes_)])
            try:
                g = _fit_gpboost(gpb, est.nodes_, est.counts_, est.weights_, Z)
                corr, ratio = _agree(est.mean_, vsd, g["mean"], g["sd"])
                row += [fmt_s(g["time"]), fmt_s(g["cpu"]), f"{g['loglik']:.1f}", f"{corr:.3f}", f"{ratio:.2f}"]
            except Exception as exc:  # pragma: no cover
                row += [f"failed: {type(exc).__name__}: {exc}"[:60], "", "", "", ""]
        t0 = time.perf_counter()
        gl = GridLaplaceLGCP(window=window, grid=(100, 50), variance=est.variance_, length_scale=est.length_scale_,
                             solver="fft", n_var_samples=64, random_state=0).fit(X, covariates=covariates)
        t_g = time.perf_counter() - t0
        corr_g, ratio_g = _agree(est.mean_, vsd, *gl.predict_log_intensity(est.nodes_, return_std=True))
        row += [fmt_s(t_g), f"{corr_g:.3f}", f"{ratio_g:.2f}"]
        if covariates is None:
            try:
                t0 = time.perf_counter()
                sv = SVGPCoxProcess(window=window, n_inducing=256, quad_grid=(100, 50),
                                    max_iter=_svgp_iter(args), random_state=0).fit(X)
                t_s = time.perf_counter() - t0
                corr_s, ratio_s = _agree(est.mean_, vsd, *sv.predict_log_intensity(est.nodes_, return_std=True))
                row += [fmt_s(t_s), f"{corr_s:.3f}", f"{ratio_s:.2f}"]
            except ImportError as exc:  # pragma: no cover
                row += [f"n/a ({exc})", "", ""]
        else:
            row += ["-", "-", "-"]
        rows.append(row)
        print("  [bei] row: | " + " | ".join(str(c) for c in row) + " |", flush=True)
    headers = ["covariates", "N nodes", "VoGCAM s", "VoGCAM cpu s", "ELBO", "coef", "sigma2/phi (m)"]
    if gpb is not None:
        headers += ["GPBoost s", "GPB cpu s", "GPB loglik", "corr(mean)", "sd ratio GPB/VoG"]
    headers += ["GridLaplace 100x50 s", "GL corr", "GL sd ratio", "SVGP s", "SVGP corr", "SVGP sd ratio"]
    notes = ["bei: 3604 trees, spatstat.data (GPL >= 2); covariates standardised, bilinear sampling",
             "corr / sd ratio: against VoGCAM's posterior mean / sd at its nodes; GridLaplace uses VoGCAM's "
             "hyperparameters; SVGP without covariates only",
             f"threads: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
             f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'unset')}"]
    if gpb is None:
        notes.append(f"GPBoost columns omitted: {gpb_reason}")
    print_table("bei (Barro Colorado Island), window [0,1000] x [0,500] m", headers, rows, notes)


def _block_mean(a, b=2):
    ny, nx = a.shape
    return a.reshape(ny // b, b, nx // b, b).mean(axis=(1, 3))


def section_recovery(args):
    VoGCAM = _vogcam()
    _warm_up(VoGCAM)
    from algos.point_process._simulate import simulate_lgcp
    from algos.point_process.baselines import GridLaplaceLGCP

    n_seeds = args.seeds or (5 if args.quick else 20)
    beta = math.log(500) - 0.5
    rows, summary = [], []
    for seed in range(n_seeds):
        s = simulate_lgcp((0, 1, 0, 1), mean=beta, variance=1.0, length_scale=0.1, grid=128, random_state=seed)
        C = s.cell_centres()
        truth = s.log_intensity
        with warnings.catch_warnings(), _Clock() as ck:
            warnings.simplefilter("ignore")
            est = VoGCAM(window=(0, 1, 0, 1), random_state=0, hyperparameters="elbo").fit(s.points)
        mu, sd = est.predict_log_intensity(C, return_std=True)
        mu, sd = mu.reshape(truth.shape), sd.reshape(truth.shape)
        rmse128 = float(np.sqrt(np.mean((mu - truth) ** 2)))
        rmse64 = float(np.sqrt(np.mean((_block_mean(mu) - _block_mean(truth)) ** 2)))
        cover = float(np.mean(np.abs(mu - truth) <= 1.959964 * sd))
        # against the field's TRUE expected count (n itself is pinned to E_q N by stationarity)
        cnt = abs(est.expected_count() - s.expected_count) / s.expected_count
        post_sd = float(np.sqrt(np.mean(sd ** 2)))  # what RMSE a calibrated posterior predicts
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            oracle = VoGCAM(window=(0, 1, 0, 1), variance=1.0, length_scale=0.1, optimize_hyperparameters=("mean",),
                            random_state=0).fit(s.points)
        om = oracle.predict_log_intensity(C).reshape(truth.shape)
        rmse_true_theta = float(np.sqrt(np.mean((om - truth) ** 2)))
        gside = max(8, int(round(math.sqrt(est.n_nodes_))))
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gl = GridLaplaceLGCP(window=(0, 1, 0, 1), grid=gside, variance=est.variance_,
                                 length_scale=est.length_scale_, solver="fft", n_var_samples=64,
                                 random_state=0).fit(s.points)
        t_g = time.perf_counter() - t0
        gm, gs = gl.predict_log_intensity(C, return_std=True)
        gm, gs = gm.reshape(truth.shape), gs.reshape(truth.shape)
        g128 = float(np.sqrt(np.mean((gm - truth) ** 2)))
        g64 = float(np.sqrt(np.mean((_block_mean(gm) - _block_mean(truth)) ** 2)))
        gcov = float(np.mean(np.abs(gm - truth) <= 1.959964 * gs))
        vals = [s.n, est.n_nodes_, rmse128, rmse64, cover, cnt, est.variance_, est.length_scale_, ck.wall, ck.cpu,
                g128, g64, gcov, t_g, post_sd, rmse_true_theta]
        summary.append(vals)
        row = [seed, s.n, est.n_nodes_, f"{rmse128:.3f}", f"{rmse64:.3f}", f"{post_sd:.3f}", f"{rmse_true_theta:.3f}",
               f"{cover:.3f}", f"{cnt:.4f}",
               f"{est.variance_:.2f}", f"{est.length_scale_:.3f}", fmt_s(ck.wall), fmt_s(ck.cpu), f"{gside}^2",
               f"{g128:.3f}", f"{g64:.3f}", f"{gcov:.3f}", fmt_s(t_g)]
        rows.append(row)
        print("  [recovery] row: | " + " | ".join(str(c) for c in row) + " |", flush=True)
    med = np.median(np.array(summary, dtype=float), axis=0)
    rows.append(["median", f"{med[0]:.0f}", f"{med[1]:.0f}", f"{med[2]:.3f}", f"{med[3]:.3f}", f"{med[14]:.3f}",
                 f"{med[15]:.3f}", f"{med[4]:.3f}",
                 f"{med[5]:.4f}", f"{med[6]:.2f}", f"{med[7]:.3f}", fmt_s(med[8]), fmt_s(med[9]), "",
                 f"{med[10]:.3f}", f"{med[11]:.3f}", f"{med[12]:.3f}", fmt_s(med[13])])
    S = np.array(summary, dtype=float)
    wins = int(np.sum(S[:, 2] < S[:, 10]))
    headers = ["seed", "n", "N nodes", "RMSE 128^2", "RMSE 64^2", "post sd", "RMSE true theta", "cover95",
               "|E N - Lambda|/Lambda", "sigma2", "phi",
               "VoGCAM s", "cpu s", "grid", "GL RMSE 128^2", "GL RMSE 64^2", "GL cover95", "GL s"]
    notes = [f"VoGCAM RMSE (128^2) below GridLaplace's on {wins}/{n_seeds} seeds",
             "reconstruction targets [R]: median RMSE (64^2) <= 0.45; coverage in [0.85, 0.99]; median |E N - "
             "Lambda|/Lambda < 0.05 "
             "(Lambda the simulated field's expected count; E_q N = n exactly by stationarity); "
             "median sigma2 in [0.5, 2]; each fit < 20 s on 2 cores",
             "post sd: root mean posterior variance of f at the 128^2 centres (the RMSE a calibrated posterior "
             "predicts); RMSE true theta: VoGCAM with sigma2 = 1 and phi = 0.1 fixed at the truth (128^2)",
             "RMSE 64^2: posterior mean and truth both averaged over 2x2 blocks of the 128^2 cells; "
             "GridLaplace: FFT/CG solver, 64 variance samples, VoGCAM's sigma2 and phi, about as many cells as VoGCAM "
             "nodes"]
    print_table("Simulated recovery (target 8.3): unit square, sigma^2 = 1, phi = 0.1, E n = 500", headers, rows, notes)


def _patterns(args):
    names = getattr(args, "patterns", None)
    return tuple(v.strip() for v in names.split(",")) if names else PATTERNS


def _read_pattern(name):
    import re

    path = DATA / f"{name}.csv"
    head = path.open().readline()
    b = [float(v) for pair in re.findall(r"\[([-\d.]+), ([-\d.]+)\]", head) for v in pair]
    return path, np.loadtxt(path, delimiter=",", comments="#"), tuple(b)


_R_SUMMARIES = r"""
suppressMessages(library(spatstat))
a <- commandArgs(TRUE)
d <- read.csv(a[1], comment.char="#", header=FALSE)
w <- as.numeric(strsplit(a[2], ",")[[1]])
if (length(w) == 4) W <- owin(w[1:2], w[3:4]) else W <- owin(poly=list(x=w[seq(1, length(w), 2)],
                                                                        y=w[seq(2, length(w), 2)]))
ok <- inside.owin(d[,1], d[,2], W)
X <- ppp(d[ok,1], d[ok,2], window=W)
rr <- seq(0, as.numeric(a[3]), length.out=513)
t0 <- proc.time()[["user.self"]]
K <- Kest(X, r=rr, correction=c("border","isotropic","translate"))
t1 <- proc.time()[["user.self"]]
g <- pcf(X, r=rr, correction="translate", divisor="r")
write.csv(data.frame(r=rr, border=K$border, iso=K$iso, trans=K$trans, gtrans=g$trans), a[4], row.names=FALSE)
f <- kppm(X ~ 1, "LGCP")
cat(f$modelpar[["sigma2"]], f$modelpar[["alpha"]], t1 - t0, "\n")
"""


def _run_r(rscript, path, window, rmax, tmp):
    """spatstat's K, g and kppm on one pattern, or the reason R did not run."""
    import shutil
    import subprocess

    if shutil.which(rscript) is None:
        return None, f"{rscript} not found"
    script = Path(tmp) / "summaries.R"
    script.write_text(_R_SUMMARIES)
    out = Path(tmp) / "r.csv"
    wtxt = ",".join(f"{v:.10g}" for v in np.ravel(window))
    try:
        res = subprocess.run([rscript, str(script), str(path), wtxt, repr(float(rmax)), str(out)],
                             capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc)
    if res.returncode != 0:
        return None, res.stderr.strip().splitlines()[-1] if res.stderr.strip() else f"exit {res.returncode}"
    R = np.genfromtxt(out, delimiter=",", names=True)
    s2, scale, t_k = (float(v) for v in res.stdout.split()[-3:])
    return {"R": R, "kppm": (s2, scale), "k_cpu": t_k}, None


def _maxrel(a, b, mask):
    ok = mask & np.isfinite(a) & np.isfinite(b) & (np.abs(b) > 0)
    return float(np.max(np.abs(a[ok] - b[ok]) / np.abs(b[ok]))) if ok.any() else float("nan")


def section_second_order(args):
    import tempfile

    from algos.point_process import envelope, k_function, pair_correlation
    from algos.point_process._window import Window

    cases = [(name, name) for name in _patterns(args)]
    cases.append(("swedishpines", "swedishpines-L"))
    headers = ["pattern", "n", "window", "K iso", "K trans", "K border", "g trans", "K cpu s (ours)",
               "K cpu s (spatstat)", "envelope 39 cpu s"]
    rows, notes = [], []
    k_function(np.random.default_rng(0).uniform(size=(20, 2)), (0, 1, 0, 1))  # compile the kernels
    with tempfile.TemporaryDirectory() as tmp:
        for name, label in cases:
            path, X, win = _read_pattern(name)
            if label.endswith("-L"):
                xmin, xmax, ymin, ymax = win
                xm, ym = 0.5 * (xmin + xmax), 0.5 * (ymin + ymax)
                win = np.array([[xmin, ymin], [xmax, ymin], [xmax, ym], [xm, ym], [xm, ymax], [xmin, ymax]])
                X = X[Window.from_any(win).contains(X)]
            w = Window.from_any(win)
            xmin, xmax, ymin, ymax = w.bounds
            # a grid step that is not a multiple of the data's resolution: no distance equals a grid r
            # exactly (spatstat bins distances, we compare them, so exact ties would differ by one pair)
            rmax = 0.25 * min(xmax - xmin, ymax - ymin) * (1 - 1 / 1024 / math.pi)
            r = np.linspace(0, rmax, 513)
            ours = {}
            with _Clock() as ck:
                ours["iso"] = k_function(X, win, r=r, correction="isotropic").value
            ours["trans"] = k_function(X, win, r=r, correction="translation").value
            ours["border"] = k_function(X, win, r=r, correction="border").value
            ours["gtrans"] = pair_correlation(X, win, r=r, correction="translation").value
            with _Clock() as ce:
                envelope("poisson", "L", n_sim=39, X=X, window=win, r=r, random_state=0)
            res, why = _run_r(args.rscript, path, win, rmax, tmp)
            mask = r > 0.05 * rmax
            if res is None:
                diffs = ["-"] * 4
                rk = "-"
                notes.append(f"{label}: spatstat column skipped ({why})")
            else:
                R = res["R"]
                diffs = [f"{_maxrel(ours[c], R[c], mask):.1e}" for c in ("iso", "trans", "border", "gtrans")]
                rk = fmt_s(res["k_cpu"])
            rows.append([label, len(X), "polygon" if not w.is_rectangle else "rectangle", *diffs, fmt_s(ck.cpu), rk,
                         fmt_s(ce.cpu)])
            print("  [second_order] row: | " + " | ".join(str(c) for c in rows[-1]) + " |", flush=True)
    notes.append("differences: max over r in (0.05 rmax, rmax] of |ours - spatstat| / |spatstat| (spatstat 3.x "
                 "Kest / pcf, same r grid, chosen so that no distance equals a grid r); the border correction differs "
                 "where a boundary distance lies within one grid step below r "
                 "(spatstat bins the boundary distances on its r grid, we compare them exactly: on integer "
                 "coordinates, "
                 "swedishpines, that is every integer r); spatstat's polygon translation weights are a pixel "
                 "approximation of "
                 "the set covariance (ours exact)")
    notes.append("spatstat's CPU time is R's user time for Kest with three corrections; ours is one correction")
    print_table("Second-order summaries against spatstat", headers, rows, notes)


def section_hyper(args):
    import tempfile

    from algos.point_process import VoGCAM, lgcp_min_contrast, simulate_lgcp

    n_seeds = args.seeds or (5 if args.quick else 20)
    headers = ["range", "seeds", "median n", "MC var ratio", "MC range ratio", "ELBO var ratio", "ELBO range ratio",
               "Laplace var ratio", "Laplace range ratio", "MC cpu s", "ELBO cpu s", "Laplace cpu s"]
    rows = []
    if getattr(args, "ranges", None):
        ranges = tuple(float(v) for v in args.ranges.split(","))
    else:
        ranges = (0.1,) if args.quick else (0.05, 0.1, 0.15)
    for phi in ranges:
        acc = {k: [] for k in ("n", "mv", "mr", "ev", "er", "sv", "sr", "mt", "et", "st")}
        for seed in range(n_seeds):
            X = simulate_lgcp((0, 1, 0, 1), math.log(500) - 1.0, 2.0, phi, grid=128, random_state=seed).points
            with _Clock() as c1:
                mc = lgcp_min_contrast(X, (0, 1, 0, 1))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with _Clock() as c2:
                    e = VoGCAM(window=(0, 1, 0, 1), hyperparameters="elbo").fit(X)
                with _Clock() as c3:
                    s = VoGCAM(window=(0, 1, 0, 1), hyperparameters="laplace").fit(X)
            for k, v in (("n", len(X)), ("mv", mc.variance / 2), ("mr", mc.length_scale / phi),
                         ("ev", e.variance_ / 2), ("er", e.length_scale_ / phi), ("sv", s.variance_ / 2),
                         ("sr", s.length_scale_ / phi), ("mt", c1.cpu), ("et", c2.cpu), ("st", c3.cpu)):
                acc[k].append(v)
        med = {k: float(np.median(v)) for k, v in acc.items()}
        rows.append([phi, n_seeds, int(med["n"]), f"{med['mv']:.2f}", f"{med['mr']:.2f}", f"{med['ev']:.2f}",
                     f"{med['er']:.2f}", f"{med['sv']:.2f}", f"{med['sr']:.2f}", fmt_s(med["mt"]), fmt_s(med["et"]),
                     fmt_s(med["st"])])
        print("  [hyper] row: | " + " | ".join(str(c) for c in rows[-1]) + " |", flush=True)
    print_table("Hyperparameter recovery: sigma^2 = 2, unit square, E n = 500/e (target: var ratio in [0.8, 1.25], "
                "range ratio in [0.7, 1.4])", headers, rows,
                ["MC: lgcp_min_contrast on K (isotropic, q = 1/4, p = 2); ELBO: VoGCAM default; "
                 "Laplace: hyperparameters='laplace' (Laplace evidence, Nelder-Mead)"])
    headers = ["pattern", "n", "MC var", "MC range", "spatstat var", "spatstat range", "ELBO var", "ELBO range",
               "score mean (ELBO / MC)", "score median (ELBO / MC)", "score predictive (ELBO / MC)"]
    rows, notes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name in _patterns(args):
            path, X, win = _read_pattern(name)
            mc = lgcp_min_contrast(X, win)
            xmin, xmax, ymin, ymax = win
            res, why = _run_r(args.rscript, path, win, 0.25 * min(xmax - xmin, ymax - ymin), tmp)
            keep = np.random.default_rng(SEED).random(len(X)) < 0.7
            fits = {}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for h in ("elbo", "min_contrast"):
                    fits[h] = VoGCAM(window=win, hyperparameters=h, random_state=0).fit(X[keep])
                full = VoGCAM(window=win, hyperparameters="elbo").fit(X)
            sc = {m: [fits[h].score(X[~keep], thinning=0.3, method=m, random_state=0) for h in ("elbo", "min_contrast")]
                  for m in ("mean", "median", "predictive")}
            sp_ = ("-", "-") if res is None else (f"{res['kppm'][0]:.3g}", f"{res['kppm'][1]:.3g}")
            if res is None:
                notes.append(f"{name}: spatstat column skipped ({why})")
            rows.append([name, len(X), f"{mc.variance:.3g}", f"{mc.length_scale:.3g}", *sp_, f"{full.variance_:.3g}",
                         f"{full.length_scale_:.3g}", *[f"{a:.1f} / {b:.1f}" for a, b in sc.values()]])
            print("  [hyper] row: | " + " | ".join(str(c) for c in rows[-1]) + " |", flush=True)
    notes.append("score: Poisson log-likelihood of the held-out 30 % (independent thinning, seed "
                 f"{SEED}) under rho = 0.3/0.7 times the intensity fitted on the other 70 %; higher is better")
    print_table("Shared real patterns: minimum contrast, spatstat kppm, VoGCAM ELBO, held-out scores", headers, rows,
                notes)


def _gpboost_params(cov_pars=None):
    """GPBoost's fit parameters: everything fitted, or the covariance parameters fixed at ``cov_pars``
    (``init_cov_pars`` with ``estimate_cov_par_index`` all zero: only the coefficients are estimated)."""
    params = {"trace": False}
    if cov_pars is not None:
        params["init_cov_pars"] = np.asarray(cov_pars, dtype=np.float64)
        params["estimate_cov_par_index"] = np.zeros(len(cov_pars), dtype=np.int32)
    return params


def _median_cpu(fn, repeat):
    """Median process-CPU seconds of ``repeat`` calls of ``fn`` and the last call's result."""
    cpus, out = [], None
    for _ in range(max(1, repeat)):
        with _Clock() as ck:
            out = fn()
        cpus.append(ck.cpu)
    return float(np.median(cpus)), out


def section_real(args, gpb, gpb_reason):
    """Real patterns: VoGCAM (ELBO hyperparameters) against GPBoost on VoGCAM's own nodes, and both at the
    same fixed hyperparameters (the minimum contrast's), where the posterior means are comparable."""
    VoGCAM = _vogcam()
    _warm_up(VoGCAM)
    repeat = args.repeat or (1 if args.quick else 3)
    dummies = [v.strip() for v in args.real_dummy.split(",")] if args.real_dummy else ["auto", "2000"]
    headers = ["pattern", "n", "n_dummy", "N nodes", "sweeps", "VoG cpu s", "ELBO", "VoG sigma2 / range",
               "GPB cpu s", "GPB sigma2 / range", "GPB/VoG cpu", "corr (own theta)",
               "fixed theta (MC)", "fixed: VoG sweeps", "VoG cpu s", "GPB cpu s", "GPB/VoG cpu", "corr(mean)",
               "sd ratio GPB/VoG"]
    rows, notes = [], []
    for name in _patterns(args):
        path, X, win = _read_pattern(name)
        # bei (3,604 trees): a 50^2 dummy grid (about 6,100 nodes); its default nodes (18,310, minutes per
        # fit) with --real-bei-default
        for nd in ((["2500"] + (["auto"] if args.real_bei_default else [])) if name == "bei" else dummies):
            n_dummy = nd if nd == "auto" else int(nd)

            def fit_elbo():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return VoGCAM(window=win, n_dummy=n_dummy, random_state=0, hyperparameters="elbo").fit(X)

            v_cpu, est = _median_cpu(fit_elbo, repeat)
            Z = np.ones((est.n_nodes_, 1))
            row = [name, len(X), nd, est.n_nodes_, est.n_iter_, fmt_s(v_cpu), f"{est.elbo_:.3f}",
                   f"{est.variance_:.3g} / {est.length_scale_:.3g}"]
            if gpb is None:
                rows.append(row + ["-"] * (len(headers) - len(row)))
                continue
            g_cpu, g = _median_cpu(lambda: _fit_gpboost(gpb, est.nodes_, est.counts_, est.weights_, Z), repeat)
            s2g, phig = (float(v) for v in g["cov_pars"][:2])
            corr_own, _ = _agree(est.mean_, np.sqrt(est.var_), g["mean"], g["sd"])
            row += [fmt_s(g_cpu), f"{s2g:.3g} / {phig:.3g}", f"{g_cpu / v_cpu:.2f}x", f"{corr_own:.3f}"]

            def fit_fixed():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return VoGCAM(window=win, n_dummy=n_dummy, random_state=0, hyperparameters="min_contrast").fit(X)

            vf_cpu, ef = _median_cpu(fit_fixed, repeat)
            theta = (ef.variance_, ef.length_scale_)
            gf_cpu, gf = _median_cpu(lambda: _fit_gpboost(gpb, ef.nodes_, ef.counts_, ef.weights_, Z,
                                                          cov_pars=theta), repeat)
            corr, ratio = _agree(ef.mean_, np.sqrt(ef.var_), gf["mean"], gf["sd"])
            row += [f"{theta[0]:.3g} / {theta[1]:.3g}", ef.n_iter_, fmt_s(vf_cpu), fmt_s(gf_cpu),
                    f"{gf_cpu / vf_cpu:.2f}x", f"{corr:.3f}", f"{ratio:.2f}"]
            rows.append(row)
            print("  [real] row: | " + " | ".join(str(c) for c in row) + " |", flush=True)
    notes += [f"CPU s: median process CPU seconds of {repeat} fits, one thread per method; GPBoost: "
              "GPModel(likelihood='poisson', gp_approx='vecchia', num_neighbors=15, cov_fct_shape=0.5) on VoGCAM's "
              "nodes, counts and offsets log w, all parameters fitted",
              "corr (own theta): posterior means at the nodes, each method at its own hyperparameters",
              "fixed theta: both at the minimum-contrast (sigma2, range) of the pattern: VoGCAM with "
              "hyperparameters='min_contrast' (mean and q fitted), GPBoost with init_cov_pars and "
              "estimate_cov_par_index = 0 (only the intercept fitted)"]
    if gpb is None:
        notes.append(f"GPBoost columns omitted: {gpb_reason}")
    print_table("Real patterns against GPBoost on the same nodes", headers, rows, notes)


_SCALE_WORKER = r"""
import resource, sys, time, tracemalloc
import numpy as np
from algos.point_process import k_function
n, corr, repeat, rmax = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
k_function(np.random.default_rng(0).uniform(size=(50, 2)), (0, 1, 0, 1), correction=corr)  # compile
X = np.random.default_rng(1).uniform(size=(n, 2))
r = np.linspace(0.0, rmax, 513)
cpus = []
for t in range(repeat):
    if t == 0:
        tracemalloc.start()
    c0 = time.process_time()
    k_function(X, (0, 1, 0, 1), r=r, correction=corr)
    cpus.append(time.process_time() - c0)
    if t == 0:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
print(float(np.median(cpus)), peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""

_R_SCALE = r"""
suppressMessages(library(spatstat))
a <- commandArgs(trailingOnly = TRUE)
n <- as.integer(a[1]); corr <- a[2]; repeat_n <- as.integer(a[3]); rmax <- as.numeric(a[4])
set.seed(1)
X <- runifpoint(n, owin(c(0, 1), c(0, 1)))
r <- seq(0, rmax, length.out = 513)
cpu <- c()
for (t in seq_len(repeat_n)) {
  t0 <- proc.time()[["user.self"]]
  K <- Kest(X, r = r, correction = corr)
  cpu <- c(cpu, proc.time()[["user.self"]] - t0)
}
cat(median(cpu), "\n")
"""


def _scale_run(cmd, timeout):
    import subprocess

    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, type(exc).__name__
    if res.returncode != 0:
        err = res.stderr.strip().splitlines()
        return None, err[-1] if err else f"exit {res.returncode}"
    return [float(v) for v in res.stdout.split()[-3:]], None


def section_scale(args):
    """K of a uniform pattern in the unit square at growing n, 513 values of r up to 0.25 (up to 20,000 points)
    or up to spatstat's large-n rule ``sqrt(1000 / (pi n))`` (above; 1000 expected neighbours): our CPU (median of
    ``--repeat``, one thread), the traced peak (tracemalloc) and the process's peak RSS, each measurement in a
    fresh process; spatstat's ``Kest`` user CPU with the same correction when ``--rscript`` runs."""
    import os
    import shutil
    import tempfile

    quick = args.quick
    sizes = ([int(float(v)) for v in args.scale_sizes.split(",")] if args.scale_sizes
             else ([2000, 5000] if quick else [2000, 20000, 100000, 1000000]))
    iso_max = args.scale_iso_max if args.scale_iso_max is not None else (5000 if quick else 20000)
    repeat = args.repeat or (1 if quick else 3)
    have_r = shutil.which(args.rscript) is not None
    headers = ["n", "correction", "r max", "ours cpu s", "ours traced peak MiB", "ours peak RSS MiB", "spatstat cpu s"]
    rows, notes = [], []
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with tempfile.TemporaryDirectory() as tmp:
        rfile = Path(tmp) / "scale.R"
        rfile.write_text(_R_SCALE)
        for n in sizes:
            for corr in ("isotropic", "border"):
                if corr == "isotropic" and n > iso_max:
                    continue
                reps = repeat if n <= 20000 else 1
                rmax = 0.25 if n <= 20000 else min(0.25, math.sqrt(1000.0 / (math.pi * n)))
                import subprocess

                res = subprocess.run([sys.executable, "-c", _SCALE_WORKER, str(n), corr, str(reps), repr(rmax)],
                                     capture_output=True, text=True, env=env, timeout=3600)
                if res.returncode != 0:
                    err = res.stderr.strip().splitlines()
                    rows.append([n, corr, f"{rmax:.3g}", "failed: " + (err[-1] if err else str(res.returncode)), "-",
                                 "-",
                                 "-"])
                    continue
                cpu, peak, rss = (float(v) for v in res.stdout.split()[-3:])
                rk = "-"
                if have_r:
                    out, why = _scale_run([args.rscript, str(rfile), str(n), corr, str(reps), repr(rmax)], 3600)
                    rk = fmt_s(out[-1]) if out else f"failed: {why}"
                rows.append([n, corr, f"{rmax:.3g}", fmt_s(cpu), f"{peak / 2**20:.0f}", f"{rss / 2**20:.0f}", rk])
                print("  [scale] row: | " + " | ".join(str(c) for c in rows[-1]) + " |", flush=True)
    if not have_r:
        notes.append(f"spatstat column skipped ({args.rscript} not found)")
    notes.append(f"median of {repeat} runs up to 20,000 points, one run above; isotropic only up to {iso_max} points "
                 "(--scale-iso-max); the peak RSS includes the interpreter and the compiled kernels (about 250 MiB)")
    print_table("Second-order summaries at scale", headers, rows, notes)


_R_KPPM = r"""
suppressMessages(library(spatstat))
a <- commandArgs(trailingOnly = TRUE)
xy <- read.csv(a[1], header = FALSE)
X <- ppp(xy[[1]], xy[[2]], window = owin(c(0, 1), c(0, 1)), check = FALSE)
t0 <- proc.time()[["user.self"]]
f <- kppm(X ~ 1, "LGCP")
cpu <- proc.time()[["user.self"]] - t0
cat(cpu, f$modelpar[["sigma2"]], f$modelpar[["alpha"]], "\n")
"""


def section_large(args):
    """VoGCAM at 10^5-10^7 points: Voronoi against aggregated counts (and spatstat's kppm where it runs)."""
    import json
    import shutil
    import subprocess
    import tempfile

    import numpy as np

    here = Path(__file__).resolve().parent
    script = here / "vogcam_aggregate.py"
    sys.path.insert(0, str(here))
    from vogcam_aggregate import _sample

    sizes = ([float(v) for v in args.large_sizes.split(",")] if args.large_sizes
             else ([1e4, 1e5] if args.quick else [1e5, 1e6, 1e7]))
    have_r = shutil.which(args.rscript) is not None
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1", MKL_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1")
    root = str(here.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    headers = ["E n", "points", "quadrature", "nodes", "CPU s", "peak RSS MiB", "variance", "range",
               "rel. RMSE intensity", "rel. RMSE vs Voronoi", "spatstat kppm CPU s", "kppm variance", "kppm range"]
    rows, notes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        rfile = Path(tmp) / "kppm.R"
        rfile.write_text(_R_KPPM)
        for n in sizes:
            pred, n_points = {}, "-"
            for q in ("voronoi", "grid"):
                out = os.path.join(tmp, f"{q}_{n:g}.npy")
                res = subprocess.run([sys.executable, str(script), "--seed", "1", "--child", repr(n), q, "auto", out],
                                     env=env, capture_output=True, text=True, timeout=args.large_timeout)
                if res.returncode:
                    err = res.stderr.strip().splitlines()
                    why = err[-1] if err else f"exit {res.returncode}"
                    rows.append([f"{n:g}", n_points, q, "-", "refused" if "memory" in why.lower() else "failed",
                                 "-", "-", "-", "-", "-", "", "", ""])
                    notes.append(f"{q} at E n = {n:g}: {why[:300]}")
                    print(f"  [large] {q} {n:g}: {why[:300]}", flush=True)
                    continue
                d = json.loads(res.stdout.strip().splitlines()[-1])
                n_points = d["n"]
                pred[q] = np.load(out)
                vs = "-"
                if q == "grid" and "voronoi" in pred:
                    vs = f"{np.sqrt(np.mean((pred['grid'] - pred['voronoi']) ** 2)) / pred['voronoi'].mean():.4f}"
                rows.append([f"{n:g}", d["n"], q, d["nodes"], f"{d['cpu']:.1f}", f"{d['rss_mb']:.0f}",
                             f"{d['variance']:.3f}", f"{d['range']:.4f}", f"{d['rmse']:.4f}", vs, "", "", ""])
                print("  [large] row: | " + " | ".join(str(c) for c in rows[-1]) + " |", flush=True)
            if have_r and n <= args.large_spatstat_max:
                csv = Path(tmp) / "points.csv"
                np.savetxt(csv, _sample(n, 1).points, delimiter=",", fmt="%.17g")
                r_out, why = _scale_run([args.rscript, str(rfile), str(csv)], args.large_timeout)
                cells = (["failed: " + str(why), "-", "-"] if r_out is None
                         else [fmt_s(r_out[0]), f"{r_out[1]:.3f}", f"{r_out[2]:.4f}"])
                rows[-1][-3:] = cells
                print("  [large] kppm: " + " | ".join(cells), flush=True)
    if not have_r:
        notes.append(f"spatstat columns skipped ({args.rscript} not found)")
    notes.append("truth: variance 1, range 0.05; one fit per cell, one thread; the kppm columns are on the grid row "
                 "of the same pattern (spatstat's minimum contrast does not depend on the quadrature)")
    print_table("VoGCAM on large simulated LGCPs: Voronoi quadrature, aggregated counts, spatstat kppm", headers,
                rows, notes)


def main(argv=None):
    parser = make_parser(__doc__.split("\n")[0], SECTIONS)
    parser.add_argument("--gpboost-path", default=None,
                        help="a folder to put on sys.path before importing gpboost (pip install --target DIR gpboost)")
    parser.add_argument("--gpboost-max-nodes", type=int, default=40000,
                        help="skip GPBoost above this node count (its hyperparameter fit is slow)")
    parser.add_argument("--sizes", default=None,
                        help="comma-separated node counts for section sim (default 2e3,5e3,1e4,2e4,3e4; --quick "
                             "2e3,4e3)")
    parser.add_argument("--svgp-iter", type=int, default=None,
                        help="Adam iterations of the SVGP baseline (default 300, --quick 100)")
    parser.add_argument("--seeds", type=int, default=None,
                        help="seeds of sections recovery and hyper (default 20, --quick 5)")
    parser.add_argument("--ranges", default=None,
                        help="section hyper: comma-separated ranges of the simulated fields (default 0.05,0.1,0.15; "
                             "--quick 0.1)")
    parser.add_argument("--patterns", default=None,
                        help="sections second_order, hyper and real: comma-separated shared patterns (default "
                             f"{','.join(PATTERNS)})")
    parser.add_argument("--rscript", default="Rscript",
                        help="the Rscript command of an R with spatstat (Debian: apt-get install r-cran-spatstat)")
    parser.add_argument("--real-dummy", default=None,
                        help="section real: comma-separated n_dummy values ('auto' = VoGCAM's default; default "
                             "auto,2000)")
    parser.add_argument("--real-bei-default", action="store_true",
                        help="section real: also run bei at its default nodes (18,310; minutes per fit)")
    parser.add_argument("--scale-sizes", default=None,
                        help="section scale: comma-separated numbers of points (default 2e3,2e4,1e5,1e6; --quick "
                             "2e3,5e3)")
    parser.add_argument("--scale-iso-max", type=int, default=None,
                        help="section scale: isotropic K up to this many points (default 20000, --quick 5000)")
    parser.add_argument("--large-sizes", default=None,
                        help="section large: comma-separated expected point counts (default 1e5,1e6,1e7; --quick "
                             "1e4,1e5)")
    parser.add_argument("--large-spatstat-max", type=float, default=1e6,
                        help="section large: run spatstat's kppm up to this many expected points (default 1e6)")
    parser.add_argument("--large-timeout", type=float, default=7200.0,
                        help="section large: seconds allowed to one fit or one kppm (default 7200)")
    args = parser.parse_args(argv)
    sections = selected_sections(args, SECTIONS)
    gpb, reason = _import_gpboost(args.gpboost_path)
    import numba  # noqa: F401  (so environment() lists it)
    import scipy  # noqa: F401

    extra = [f"gpboost {gpb.__version__}" if gpb is not None else "gpboost unavailable"]
    print(environment(extra) + "\n")
    if "sim" in sections:
        section_sim(args, gpb, reason)
    if "bei" in sections:
        section_bei(args, gpb, reason)
    if "recovery" in sections:
        section_recovery(args)
    if "second_order" in sections:
        section_second_order(args)
    if "hyper" in sections:
        section_hyper(args)
    if "real" in sections:
        section_real(args, gpb, reason)
    if "scale" in sections:
        section_scale(args)
    if "large" in sections:
        section_large(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
