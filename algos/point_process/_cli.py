"""``algos lgcp``: fit VoGCAM to a point pattern in a CSV file and write an intensity map and a summary."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np

from .._io import atomic_savefig, atomic_write_text, check_memory_budget, check_output_dir
from .._validation import validate_params
from ..cli import add_engine_options, command_parser, engine_options, print_json

EPILOG = """\
examples:
  algos lgcp fit redwood --out redwood_fit
  algos lgcp fit bei --covariates bei --out bei_fit --json
  algos lgcp fit pts.csv --window -5,5,-8,2 --hyperparameters min_contrast --out fit
  algos lgcp kfunction swedishpines --nsim 39 --out swedishpines_k
  algos lgcp summary redwood --function G --correction km --nsim 39 --out redwood_g
POINTS is a CSV file or a pattern shipped with the package: redwood, japanesepines, swedishpines, bei
(spatstat.data); '--covariates bei' is bei's shipped elevation and slope.
The window is read from a '# ... window rectangle x[xmin, xmax] y[ymin, ymax]' or
'# window xmin,xmax,ymin,ymax' header line when --window is not given.
"""

#: A map whose intensity spread (max - min) is below this fraction of its mean is drawn as flat.
FLAT_RTOL = 0.01

#: argparse treats '-5,5,-8,2' as an option; this matcher makes it a (negative-number) value.
_NEGATIVE_ARG = re.compile(r"^-\d+$|^-\d*\.\d+$|^-[\d.eE]+([,eE+-][\d.eE+-]*)*$")


def add_parser(subparsers, name):
    p = command_parser(
        subparsers,
        name,
        description="Fit a log-Gaussian Cox process to a 2-d point pattern by variational Voronoi inference "
        "(VoGCAM) and write the posterior mean intensity map (PNG) and a summary (JSON); or print and plot "
        "Besag's L function, or any of the summaries K, L, g, G, F, J, with a Poisson simulation envelope.",
        epilog=EPILOG,
    )
    p._negative_number_matcher = _NEGATIVE_ARG
    p.add_argument("action", choices=("fit", "kfunction", "summary"),
                   help="fit: fit VoGCAM; kfunction: L(r) with an envelope; summary: the summary of --function "
                        "with an envelope ('#' lines of the CSV are comments)")
    p.add_argument("points", help="CSV file with two columns x,y, or a shipped pattern: redwood, japanesepines, "
                   "swedishpines, bei")
    p.add_argument("--window", default=None,
                   help="xmin,xmax,ymin,ymax (negative numbers allowed; default: the file's '# window' header)")
    p.add_argument("--covariates", help="fit: .npz raster covariates (images + xcol, yrow), or 'bei' (the shipped "
                   "elevation and slope of the bei pattern)")
    p.add_argument("--out", default=None, help="output folder (created; required for fit)")
    # options of one action default to None here (so that giving one to the other action is an error);
    # their real defaults are in FIT_DEFAULTS / KFUNCTION_DEFAULTS
    p.add_argument("--nu", type=float, default=None, help="fit: Matern smoothness, 0.5 or 1.5 (default 0.5)")
    p.add_argument("--n-neighbors", type=int, default=None, help="fit: NNGP neighbours (default 15)")
    p.add_argument("--n-dummy", default=None, help="fit: dummy points, 'auto' or an int >= 0 (default auto)")
    p.add_argument("--hyperparameters", default=None,
                   help="fit: 'auto', 'elbo', 'laplace' or 'min_contrast': variance and range by the ELBO, the Laplace "
                        "evidence or minimum contrast on K (default auto: minimum contrast without covariates and with "
                        ">= 10 points, else the ELBO)")
    p.add_argument("--grid", type=int, default=None, help="fit: side of the prediction grid of the map (default 100)")
    p.add_argument("--nsim", type=int, default=None,
                   help="kfunction, summary: Poisson simulations of the envelope (default 39)")
    p.add_argument("--function", default=None,
                   help="summary: K, L, g (pair correlation), G (nearest neighbour), F (empty space) or J "
                        "(default L)")
    p.add_argument("--correction", default=None,
                   help="kfunction, summary: edge correction; K, L: isotropic, translation, border; g: isotropic, "
                        "translation; G: km, rs, han, none; F: km, rs, cs, none; J: km, rs, han, none (default "
                        "isotropic for kfunction, the function's own default for summary)")
    p.add_argument("--seed", type=int, default=None, help="kfunction, summary: seed of the simulations (default 0)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_engine_options(p, "kfunction, summary: the envelope's simulations")
    p.set_defaults(func=run)
    return p


#: Defaults of the options that only ``fit`` takes, of those that only ``kfunction`` takes, and of those
#: that only ``summary`` takes (its correction default, None, is the chosen function's own default).
FIT_DEFAULTS = {"covariates": None, "nu": 0.5, "n_neighbors": 15, "n_dummy": "auto", "hyperparameters": "auto",
                "grid": 100}
KFUNCTION_DEFAULTS = {"nsim": 39, "correction": "isotropic", "seed": 0}
SUMMARY_DEFAULTS = {"nsim": 39, "correction": None, "seed": 0, "function": "L"}
_ACTION_DEFAULTS = {"fit": FIT_DEFAULTS, "kfunction": KFUNCTION_DEFAULTS, "summary": SUMMARY_DEFAULTS}

#: The summaries of ``lgcp summary`` and their edge corrections (the functions' own rules, named here so
#: that the command refuses a wrong pair before reading the data).
SUMMARY_CORRECTIONS = {"K": ("isotropic", "translation", "border", "none"),
                       "L": ("isotropic", "translation", "border", "none"),
                       "g": ("translation", "isotropic", "none"), "G": ("km", "rs", "han", "none"),
                       "F": ("km", "rs", "cs", "none"), "J": ("km", "rs", "han", "none")}
KFUNCTION_CORRECTIONS = ("isotropic", "translation", "border")


def _action_options(args):
    """Reject an option of another action; fill in the defaults of this action's options."""
    own = _ACTION_DEFAULTS[args.action]
    for name, other in _ACTION_DEFAULTS.items():
        for dest in other:
            if dest not in own and getattr(args, dest, None) is not None:
                raise ValueError(f"'--{dest.replace('_', '-')}' does not apply to 'lgcp {args.action}' (it is an "
                                 f"option of 'lgcp {name}'); got {getattr(args, dest)!r}.")
    for dest, default in own.items():
        if getattr(args, dest, None) is None:
            setattr(args, dest, default)
    if args.action == "kfunction" and args.correction not in KFUNCTION_CORRECTIONS:
        raise ValueError(f"'--correction' of 'lgcp kfunction' must be one of {KFUNCTION_CORRECTIONS}; got "
                         f"{args.correction!r}.")
    if args.action == "summary":
        if args.function not in SUMMARY_CORRECTIONS:
            raise ValueError(f"'--function' must be one of {tuple(SUMMARY_CORRECTIONS)}; got {args.function!r}.")
        allowed = SUMMARY_CORRECTIONS[args.function]
        if args.correction is not None and args.correction not in allowed:
            raise ValueError(f"'--correction' of '--function {args.function}' must be one of {allowed}; got "
                             f"{args.correction!r}.")


#: The options of ``lgcp fit`` that are parameters of :class:`VoGCAM`: their rules are its constraints.
ESTIMATOR_OPTIONS = {"nu": "--nu", "n_neighbors": "--n-neighbors", "n_dummy": "--n-dummy",
                     "hyperparameters": "--hyperparameters"}


def _n_dummy(text):
    """``--n-dummy`` as text: 'auto', or parsed as an int (its range is VoGCAM's constraint)."""
    if text == "auto":
        return "auto"
    try:
        return int(text)
    except (TypeError, ValueError):
        return text  # not an int: VoGCAM's constraint rejects it, with the option's name


def _check_estimator(est):
    """Check the options of ``ESTIMATOR_OPTIONS`` by ``est``'s own ``_parameter_constraints``, before any
    work; the error names the command-line option."""
    try:
        validate_params(est)
    except (ValueError, TypeError) as err:
        msg = str(err)
        for param, option in ESTIMATOR_OPTIONS.items():
            msg = msg.replace(f"'{param}'", f"'{option}'")
        raise (ValueError if isinstance(err, ValueError) else TypeError)(msg) from None


def _window(text):
    try:
        vals = [float(v) for v in text.split(",")]
    except ValueError:
        raise ValueError(f"'window' must be xmin,xmax,ymin,ymax; got {text!r}.") from None
    if len(vals) != 4 or not all(np.isfinite(vals)):
        raise ValueError(f"'window' must be xmin,xmax,ymin,ymax (four finite numbers); got {text!r}.")
    if not (vals[0] < vals[1] and vals[2] < vals[3]):
        raise ValueError(f"'window' must have xmin < xmax and ymin < ymax; got {text!r}.")
    return tuple(vals)


_NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
_HEADER_RECT = re.compile(rf"window\s+rectangle\s+x\[\s*{_NUM}\s*,\s*{_NUM}\s*\]\s*y\[\s*{_NUM}\s*,\s*{_NUM}\s*\]")
_HEADER_LIST = re.compile(rf"window\s*[:=]?\s*{_NUM}\s*,\s*{_NUM}\s*,\s*{_NUM}\s*,\s*{_NUM}")


def window_from_header(path):
    """The window of a '# ...' header line ('window rectangle x[a, b] y[c, d]' or 'window a,b,c,d'), or None."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.startswith("#"):
                if line.strip():
                    break
                continue
            m = _HEADER_RECT.search(line) or _HEADER_LIST.search(line)
            if m:
                return _window(",".join(m.groups()))
    return None


def read_points(path, window):
    """Points of a CSV file (x,y rows, '#' comments): a ValueError naming the file for an empty file, a
    row that does not parse, or points outside the window."""
    from ._window import Window

    rows = []
    with open(path, encoding="utf-8") as fh:
        for ln, line in enumerate(fh, 1):
            t = line.strip()
            if not t or t.startswith("#"):
                continue
            parts = [v.strip() for v in t.split(",")]
            if len(parts) == 2 and ln == 1 and not _is_float(parts[0]):  # an 'x,y' header row
                continue
            try:
                if len(parts) != 2:
                    raise ValueError
                rows.append((float(parts[0]), float(parts[1])))
            except ValueError:
                raise ValueError(f"{path}, line {ln}: expected two numbers 'x,y'; got {t!r}.") from None
            if not all(np.isfinite(rows[-1])):
                raise ValueError(f"{path}, line {ln}: coordinates must be finite; got {t!r}.")
    if not rows:
        raise ValueError(f"{path}: the file has no points (at least one x,y row is needed).")
    X = np.array(rows, dtype=np.float64)
    inside = Window.from_any(window).contains(X)
    if not inside.all():
        k = int(np.flatnonzero(~inside)[0])
        raise ValueError(f"{path}: {int((~inside).sum())} point(s) outside the window {list(window)}; the first is "
                         f"{X[k].tolist()}.")
    return X


def _is_float(t):
    try:
        float(t)
    except ValueError:
        return False
    return True


def _points_path(args):
    """The CSV of ``args.points``: the file itself, or the shipped pattern of that name."""
    import os

    from ..datasets import list_datasets, load_point_pattern

    text = str(args.points)
    if not os.path.exists(text) and text in list_datasets("points"):
        return load_point_pattern(text).filename
    if not os.path.exists(text):
        raise FileNotFoundError(2, f"no such file: {text} (shipped patterns: "
                                f"{', '.join(list_datasets('points'))})", text)
    return text


def _covariates_path(text):
    import os

    if not os.path.exists(text) and text == "bei":
        from ..datasets import load_bei_covariates

        return load_bei_covariates().filename
    return text


def _resolve_window(args):
    if args.window is not None:
        return _window(args.window)
    win = window_from_header(_points_path(args))
    if win is None:
        raise ValueError(f"'window' is required: pass --window xmin,xmax,ymin,ymax (no '# window' header in "
                         f"{args.points}).")
    return win


#: How ``lgcp summary`` names each function in its output.
SUMMARY_NAMES = {"K": "Ripley's K(r)", "L": "L(r) = sqrt(K(r)/pi)", "g": "the pair correlation g(r)",
                 "G": "the nearest-neighbour distribution G(r)", "F": "the empty-space function F(r)",
                 "J": "J(r) = (1 - G(r))/(1 - F(r))"}


def run_kfunction(args):
    """``lgcp kfunction`` (L with a Poisson envelope) and ``lgcp summary`` (any of K, L, g, G, F, J)."""
    from .second_order._envelope import envelope

    engine = engine_options(args)  # checked before any work
    stat = "L" if args.action == "kfunction" else args.function
    win = _resolve_window(args)
    X = read_points(_points_path(args), win)
    if len(X) < 2:
        raise ValueError(f"{args.points}: the {stat} function needs at least 2 points; got {len(X)}.")
    if args.nsim < 1:
        raise ValueError(f"'nsim' must be an int >= 1; got {args.nsim}.")
    kw = {} if args.correction is None else {"correction": args.correction}
    with warnings.catch_warnings(record=True) as caught:  # the valid-range warning goes to the summary
        warnings.simplefilter("always")
        env = envelope("poisson", stat, n_sim=args.nsim, X=X, window=win, random_state=args.seed, **kw,
                       **engine)
    correction = args.correction if args.correction is not None else _default_correction(stat, len(X))
    idx = np.unique(np.linspace(0, len(env.r) - 1, 11).astype(int))[1:]

    def listed(a):  # JSON has no NaN: beyond a correction's valid range the values are null
        return [None if not np.isfinite(v) else float(v) for v in a[idx]]

    summary = {
        "points": str(args.points), "n": int(len(X)), "window": list(win), "function": stat,
        "correction": correction, "n_sim": int(args.nsim), "p_value": env.p_value, "max_deviation": env.deviation,
        "r": env.r[idx].tolist(), stat: listed(env.observed), "theo": listed(env.theo), "lo": listed(env.lo),
        "hi": listed(env.hi), "warnings": sorted({str(w.message) for w in caught}),
    }
    if args.action == "kfunction":
        del summary["function"], summary["theo"], summary["warnings"]
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5.5, 4.2))
        env.plot(ax)
        ax.set_title(f"{stat}(r), {correction} correction; Poisson envelope ({args.nsim} sims)")
        fig.tight_layout()
        stem = "lfunction" if args.action == "kfunction" else f"{stat}function"
        png = out / f"{stem}.png"
        atomic_savefig(fig, png, dpi=110)
        plt.close(fig)
        summary["plot"] = str(png)
        atomic_write_text(out / ("kfunction.json" if args.action == "kfunction" else "summary.json"),
                          json.dumps(summary, indent=2))
    if args.json:
        print_json(summary)
        return 0
    print(f"{args.points}: n = {len(X)}, {SUMMARY_NAMES[stat]} ({correction} correction) against a Poisson "
          f"envelope of {args.nsim} simulations (intensity n/|W|)")
    print(f"  {'r':>10} {stat + '(r)':>10} {'lo':>10} {'hi':>10}")
    for r, v, lo, hi in zip(summary["r"], summary[stat], summary["lo"], summary["hi"]):
        if v is None:
            print(f"  {r:10.4g} {'NaN':>10} (beyond the correction's valid range)")
            continue
        flag = "  above" if v > hi else ("  below" if v < lo else "")
        print(f"  {r:10.4g} {v:10.4g} {lo:10.4g} {hi:10.4g}{flag}")
    if env.deviation is not None:
        print(f"  global deviation test: max |{stat} - theo| = {env.deviation:.4g}, Monte-Carlo p = "
              f"{env.p_value:.3g}")
    for w in summary.get("warnings", []):
        print(f"  warning: {w}")
    if args.out:
        print(f"wrote {summary['plot']}")
    return 0


def _default_correction(stat, n):
    """The correction a summary uses when none is given (the function's own default)."""
    if stat in ("G", "F", "J"):
        return "km"
    if stat == "g":
        return "translation"
    from .second_order._second_order import N_LARGE

    return "isotropic" if n <= N_LARGE else "border"


def run(args):
    from ._covariates import load_raster_covariates
    from .vogcam._vogcam import VoGCAM

    _action_options(args)
    if args.out is not None:
        check_output_dir(args.out, "--out")  # before the data are read and the model fitted
    if args.action in ("kfunction", "summary"):
        return run_kfunction(args)
    if args.out is None:
        raise ValueError("'out' is required for fit: pass --out FOLDER.")
    win = _resolve_window(args)
    n_dummy = _n_dummy(args.n_dummy)
    est = VoGCAM(window=win, nu=args.nu, n_neighbors=args.n_neighbors, n_dummy=n_dummy,
                 hyperparameters=args.hyperparameters)
    _check_estimator(est)
    if args.grid < 1:  # --grid is the map's, not the estimator's
        raise ValueError(f"'grid' must be an int >= 1; got {args.grid}.")
    _check_sizes(n_dummy, int(args.grid), args.n_neighbors)
    X = read_points(_points_path(args), win)
    cov = load_raster_covariates(_covariates_path(args.covariates)) if args.covariates else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, covariates=cov)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    png = out / "intensity.png"
    flat, centre = _intensity_map(est, X, win, int(args.grid), png)
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
        "hyperparameters": est.hyperparameter_method_,
        "map_flat": flat,
        "n_iter": int(est.n_iter_),
        "converged": bool(est.converged_),
        "warnings": sorted({f"{type(w.message).__name__}: {w.message}" for w in caught}),
        "map": str(png),
    }
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2))
    if args.json:
        print_json(summary)
        return 0
    print(f"{args.points}: n = {summary['n']}, {summary['n_nodes']} quadrature nodes, "
          f"{summary['n_iter']} sweeps (converged: {summary['converged']})")
    for k, v in summary["coef"].items():
        print(f"  coef[{k}] = {v:.5g}")
    print(f"  variance = {est.variance_:.4g}, length_scale = {est.length_scale_:.4g}, ELBO = {est.elbo_:.6g}")
    print(f"  expected count = {summary['expected_count']:.2f}")
    if flat:
        print(f"  the map is flat: the posterior mean intensity varies by less than 1 % around {centre:.4g}")
    for w in summary["warnings"]:
        print(f"  warning: {w}")
    print(f"wrote {png} and {out / 'summary.json'}")
    return 0


def _check_sizes(n_dummy, grid, n_neighbors):
    """Refuse a ``--n-dummy`` or ``--grid`` whose memory would exceed the budget (before the data are read).

    Per quadrature node: VoGCAM's own estimate (``fit_memory_bytes``, the rule its ``fit`` applies); per map
    cell: the cell centre, the mean, the bounds, the sd and the neighbour lists of the prediction
    (``2 * n_neighbors + 10`` numbers of 8 bytes, a lower bound).
    """
    from .vogcam._vogcam_blocks import fit_memory_bytes

    k = int(n_neighbors)  # checked by VoGCAM's constraint before
    if n_dummy != "auto":
        need = fit_memory_bytes(n_dummy, k)
        check_memory_budget(need, f"{n_dummy} dummy quadrature nodes (about {need / max(n_dummy, 1) / 1024:.0f} KB "
                            "each)", f"'--n-dummy'={n_dummy}", hint="lower --n-dummy (or use 'auto')")
    check_memory_budget(8 * (2 * k + 10) * grid * grid, f"a {grid} x {grid} map", f"'--grid'={grid}",
                        hint="lower --grid")


def _intensity_map(est, X, win, g, png):
    """Write the posterior mean intensity and the sd of the log-intensity on a ``g`` x ``g`` grid to
    ``png``; returns whether the mean map is flat (spread under ``FLAT_RTOL``) and its centre."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xmin, xmax, ymin, ymax = win
    xs = xmin + (np.arange(g) + 0.5) * (xmax - xmin) / g
    ys = ymin + (np.arange(g) + 0.5) * (ymax - ymin) / g
    G = np.column_stack([np.tile(xs, g), np.repeat(ys, g)])
    mean, lo, hi = est.predict_intensity(G, alpha=0.05)
    _, sd = est.predict_log_intensity(G, return_std=True)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    ext = (xmin, xmax, ymin, ymax)
    centre = float(np.mean(mean))
    flat = bool(np.ptp(mean) < FLAT_RTOL * centre)
    kw = dict(vmin=centre * (1 - FLAT_RTOL), vmax=centre * (1 + FLAT_RTOL)) if flat else {}
    im = axes[0].imshow(mean.reshape(g, g), origin="lower", extent=ext, cmap="viridis", **kw)
    ms = 3.0 if len(X) <= 500 else (2.0 if len(X) <= 5000 else 1.2)
    axes[0].plot(X[:, 0], X[:, 1], "o", ms=ms, mfc="white", mec="black", mew=0.3, alpha=0.9,
                 label=f"points (n = {len(X)})")
    axes[0].legend(loc="upper right", fontsize=8, framealpha=0.8)
    axes[0].set_title(f"posterior mean intensity: flat ({centre:.4g}, spread < 1 %)" if flat
                      else "posterior mean intensity")
    fig.colorbar(im, ax=axes[0], label="intensity (points per unit area)")
    im = axes[1].imshow(sd.reshape(g, g), origin="lower", extent=ext, cmap="magma")
    axes[1].set_title("posterior sd of the log-intensity")
    fig.colorbar(im, ax=axes[1], label="sd of log-intensity")
    for ax in axes:
        ax.set_xlabel("x")
        ax.set_ylabel("y")
    fig.tight_layout()
    atomic_savefig(fig, png, dpi=110)
    plt.close(fig)
    return flat, centre
