"""``algos lgcp``: fit VoGCAM to a point pattern in a CSV file and write an intensity map and a summary."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np

EPILOG = """\
examples:
  algos lgcp fit redwood.csv --window 0,1,-1,0 --out redwood_fit
  algos lgcp fit bei.csv --window 0,1000,0,500 --covariates bei_covariates.npz --out bei_fit --json
"""


def add_parser(subparsers, name):
    import argparse

    p = subparsers.add_parser(
        name,
        help="log-Gaussian Cox process intensity (VoGCAM)",
        description="Fit a log-Gaussian Cox process to a 2-d point pattern by variational Voronoi inference "
        "(VoGCAM) and write the posterior mean intensity map (PNG) and a summary (JSON).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", choices=("fit",), help="fit: fit a CSV of x,y rows ('#' lines are comments)")
    p.add_argument("points", help="CSV file with two columns x,y")
    p.add_argument("--window", required=True, help="xmin,xmax,ymin,ymax")
    p.add_argument("--covariates", help=".npz raster covariates (images + xcol, yrow), e.g. bei_covariates.npz")
    p.add_argument("--out", required=True, help="output folder (created)")
    p.add_argument("--nu", type=float, default=0.5, help="Matern smoothness, 0.5 or 1.5 (default 0.5)")
    p.add_argument("--n-neighbors", type=int, default=15, help="NNGP neighbours (default 15)")
    p.add_argument("--n-dummy", default="auto", help="dummy points: 'auto' or an int")
    p.add_argument("--grid", type=int, default=100, help="side of the prediction grid of the map (default 100)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)
    return p


def _window(text):
    try:
        vals = [float(v) for v in text.split(",")]
    except ValueError:
        raise ValueError(f"'window' must be xmin,xmax,ymin,ymax; got {text!r}.") from None
    if len(vals) != 4:
        raise ValueError(f"'window' must be xmin,xmax,ymin,ymax; got {text!r}.")
    return tuple(vals)


def run(args):
    from ._covariates import load_raster_covariates
    from ._vogcam import VoGCAM

    win = _window(args.window)
    X = np.loadtxt(args.points, delimiter=",", comments="#", ndmin=2)
    if X.size == 0:
        X = X.reshape(0, 2)
    cov = load_raster_covariates(args.covariates) if args.covariates else None
    n_dummy = args.n_dummy if args.n_dummy == "auto" else int(args.n_dummy)
    est = VoGCAM(window=win, nu=args.nu, n_neighbors=args.n_neighbors, n_dummy=n_dummy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, covariates=cov)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    xmin, xmax, ymin, ymax = win
    g = int(args.grid)
    xs = xmin + (np.arange(g) + 0.5) * (xmax - xmin) / g
    ys = ymin + (np.arange(g) + 0.5) * (ymax - ymin) / g
    G = np.column_stack([np.tile(xs, g), np.repeat(ys, g)])
    mean, lo, hi = est.predict_intensity(G, alpha=0.05)
    _, sd = est.predict_log_intensity(G, return_std=True)
    png = out / "intensity.png"
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    ext = (xmin, xmax, ymin, ymax)
    im = axes[0].imshow(mean.reshape(g, g), origin="lower", extent=ext, cmap="viridis")
    axes[0].plot(X[:, 0], X[:, 1], "w.", ms=1.5, alpha=0.6)
    axes[0].set_title("posterior mean intensity")
    fig.colorbar(im, ax=axes[0])
    im = axes[1].imshow(sd.reshape(g, g), origin="lower", extent=ext, cmap="magma")
    axes[1].set_title("posterior sd of the log-intensity")
    fig.colorbar(im, ax=axes[1])
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    names = ["intercept"] + (list(cov.names) if cov is not None else [])
    summary = {
        "points": str(args.points),
        "n": int(len(X)),
        "window": list(win),
        "n_nodes": int(est.n_nodes_),
        "coef": dict(zip(names, np.asarray(est.coef_).tolist())),
        "variance": est.variance_,
        "length_scale": est.length_scale_,
        "elbo": est.elbo_,
        "expected_count": est.expected_count(),
        "n_iter": int(est.n_iter_),
        "converged": bool(est.converged_),
        "warnings": sorted({f"{type(w.message).__name__}: {w.message}" for w in caught}),
        "map": str(png),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"{args.points}: n = {summary['n']}, {summary['n_nodes']} quadrature nodes, "
          f"{summary['n_iter']} sweeps (converged: {summary['converged']})")
    for k, v in summary["coef"].items():
        print(f"  coef[{k}] = {v:.5g}")
    print(f"  variance = {est.variance_:.4g}, length_scale = {est.length_scale_:.4g}, ELBO = {est.elbo_:.6g}")
    print(f"  expected count = {summary['expected_count']:.2f}")
    for w in summary["warnings"]:
        print(f"  warning: {w}")
    print(f"wrote {png} and {out / 'summary.json'}")
    return 0
