"""``algos hetero``: fit subset-of-signals regressions to a CSV, or reproduce the rate table."""

from __future__ import annotations

import numpy as np

from .._io import read_csv_columns
from ..cli import command_parser, print_json

ESTIMATORS = ("auto", "huber", "cmed", "window", "lad", "ols")
#: Shipped tables for ``--dataset``: name -> (target, features); see :mod:`algos.datasets`.
DATASETS = {"engel": ("foodexp", "income"), "grunfeld": ("invest", "value,capital")}

EPILOG = """\
examples:
  algos hetero --dataset engel --intercept --delta auto
  algos hetero --dataset grunfeld --intercept --estimator auto,lad,ols
  algos hetero --csv engel.csv --target foodexp --intercept --delta auto
  algos hetero --csv data.csv --target y --features x1,x2 --estimator auto,lad --json
  algos hetero simulate --n 20000 --d 5 --ms 1000,2000,4000 --reps 3
"""


#: Defaults of the options of each action (None on the parser, so that an option given to the other
#: action, which would ignore it, is detected).
FIT_DEFAULTS = {"csv": None, "dataset": None, "target": None, "features": None, "intercept": False, "delta": "1.0"}
SIMULATE_DEFAULTS = {"n": 20000, "d": 5, "ms": "1000,2000,4000,8000", "reps": 3, "noisy_sigma": 1e5, "seed": 0}


def _resolve_options(args):
    """Fill in the defaults of the chosen action's options; an option of the other action is an error."""
    own, other = (SIMULATE_DEFAULTS, FIT_DEFAULTS) if args.action == "simulate" else (FIT_DEFAULTS, SIMULATE_DEFAULTS)
    other_name = "fit" if args.action == "simulate" else "simulate"
    for dest in other:
        if getattr(args, dest) is not None:
            raise ValueError(f"--{dest.replace('_', '-')} applies only to `algos hetero {other_name}`; it is not "
                             f"used by `algos hetero {args.action}`.")
    for dest, default in own.items():
        if getattr(args, dest) is None:
            setattr(args, dest, default)


def add_parser(subparsers, name):
    p = command_parser(
        subparsers,
        name,
        description="Fit robust regressions for the subset-of-signals model (only m of n sources are "
        "reliable) to a CSV file, or simulate the model and print the error against sqrt(nd)/m.",
        epilog=EPILOG,
    )
    p.add_argument("action", nargs="?", choices=("fit", "simulate"), default="fit",
                   help="fit (default): fit a CSV; simulate: the rate table on synthetic data")
    p.add_argument("--csv", help="CSV file with a header row (fit)")
    p.add_argument("--dataset", help="fit a shipped data set instead of a CSV: " + ", ".join(DATASETS)
                   + " (target and features default to the data set's)")
    p.add_argument("--target", help="name of the response column (fit)")
    p.add_argument("--features", help="comma-separated feature columns (fit; default: all others)")
    p.add_argument("--intercept", action="store_true", default=None, help="fit an intercept (fit)")
    p.add_argument("--delta", help="Huber threshold in units of the response, or 'auto' (fit; heuristic; "
                   f"default {FIT_DEFAULTS['delta']})")
    p.add_argument("--estimator", default="auto,huber,cmed,lad,ols",
                   help=f"comma-separated subset of {', '.join(ESTIMATORS)} (default: auto,huber,cmed,lad,ols; auto "
                   "is SubsetOfSignalsRegressor, the front door)")
    d = SIMULATE_DEFAULTS
    p.add_argument("--n", type=int, help=f"simulate: number of sources (default {d['n']})")
    p.add_argument("--d", type=int, help=f"simulate: number of features (default {d['d']})")
    p.add_argument("--ms", help=f"simulate: reliable sources, comma-separated (default {d['ms']})")
    p.add_argument("--reps", type=int, help=f"simulate: seeds per point (default {d['reps']})")
    p.add_argument("--noisy-sigma", type=float,
                   help=f"simulate: sigma of the other sources (default {d['noisy_sigma']:g})")
    p.add_argument("--seed", type=int, help=f"simulate: seed of the first repetition (default {d['seed']})")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)
    return p


def _make(name, delta, intercept):
    from ._baselines import LADRegressor
    from ._front import SubsetOfSignalsRegressor
    from ._huber import HuberSoSRegressor
    from ._median import CoordinateMedianRegressor
    from ._window import IterativeWindowRegressor

    if name == "auto":
        return SubsetOfSignalsRegressor(delta=delta, fit_intercept=intercept)
    if name == "huber":
        return HuberSoSRegressor(delta=delta, fit_intercept=intercept)
    if name == "cmed":
        return CoordinateMedianRegressor(fit_intercept=intercept)
    if name == "window":
        return IterativeWindowRegressor(delta_min=delta, fit_intercept=intercept)
    if name == "lad":
        return LADRegressor(fit_intercept=intercept)
    from sklearn.linear_model import LinearRegression

    return LinearRegression(fit_intercept=intercept)


def _parse_delta(text):
    """``--delta`` as a float, checked by :class:`HuberSoSRegressor`'s constraint on ``delta``."""
    from .._validation import validate_params
    from ._huber import HuberSoSRegressor

    try:
        delta = float(text)
    except ValueError:
        raise ValueError(f"'delta' must be a float in (0, inf) or 'auto'; got {text!r}.") from None
    validate_params(HuberSoSRegressor(delta=delta))
    return delta


def _estimator_names(text):
    names = [e.strip() for e in text.split(",") if e.strip()]
    bad = [e for e in names if e not in ESTIMATORS]
    if bad or not names:
        raise ValueError(f"'estimator' must be a subset of {{{', '.join(ESTIMATORS)}}}; got {text!r}.")
    return names


def _fit(args):
    import warnings

    from ._data import suggest_delta

    if args.dataset is not None:
        if args.csv:
            raise ValueError("pass either --csv or --dataset, not both.")
        if args.dataset not in DATASETS:
            raise ValueError(f"'dataset' must be one of {', '.join(DATASETS)}; got {args.dataset!r}.")
        from ..datasets import _data_path

        target, features = DATASETS[args.dataset]
        args.target = args.target or target
        args.features = args.features or (features if args.target == target else None)
        path, source = str(_data_path("regression", f"{args.dataset}.csv")), args.dataset
    else:
        path, source = args.csv, args.csv
    if not path or not args.target:
        raise ValueError("'csv' and 'target' (or 'dataset') are required to fit (or run `algos hetero simulate`).")
    if args.delta != "auto":  # checked by the estimator's own rule, before the data is read
        _parse_delta(args.delta)
    X, y, feats = read_csv_columns(path, args.target, args.features)
    if args.delta == "auto":
        Xd = np.column_stack([np.ones(len(y)), X]) if args.intercept else X
        delta = suggest_delta(Xd, y)
    else:
        delta = _parse_delta(args.delta)
    results = []
    for name in _estimator_names(args.estimator):
        est = _make(name, delta, args.intercept)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(X, y)
        row = {
            "estimator": name,
            "coef": dict(zip(feats, np.asarray(est.coef_, dtype=float).tolist())),
            "intercept": float(getattr(est, "intercept_", 0.0)),
            "mean_abs_residual": float(np.mean(np.abs(y - est.predict(X)))),
            "warnings": sorted({f"{type(w.message).__name__}: {w.message}" for w in caught}),
        }
        for attr in ("method_", "recovered_", "n_iter_", "n_inliers_", "objective_", "converged_"):
            if hasattr(est, attr):
                val = getattr(est, attr)
                row[attr.rstrip("_")] = val.item() if hasattr(val, "item") else val
        results.append(row)
    info = {"csv": args.csv, "dataset": args.dataset, "target": args.target, "features": feats, "n": int(len(y)),
            "delta": delta}
    if args.json:
        print_json({"data": info, "results": results})
        return 0
    print(f"{source}: {len(y)} rows, target {args.target!r}, features {feats}; Huber delta = {delta:.6g}")
    head = (f"{'estimator':<9} {'intercept':>11} " + " ".join(f"{f[:11]:>11}" for f in feats)
            + f" {'mean|res|':>10}  diagnostics")
    print(head)
    print("-" * len(head))
    for r in results:
        diag = ", ".join(f"{k}={r[k]}" for k in ("method", "recovered", "n_iter", "n_inliers", "converged") if k in r)
        coefs = " ".join(f"{r['coef'][f]:>11.5g}" for f in feats)
        print(f"{r['estimator']:<9} {r['intercept']:>11.5g} {coefs} {r['mean_abs_residual']:>10.4g}  {diag}")
        for w in r["warnings"]:
            print(f"          warning: {w}")
    return 0


def _simulate(args):
    from theory.hetero_regression import oracle_floor, sos_rate

    from .._validation import check_scalar_int
    from ._data import make_subset_of_signals, oracle_wls

    n = check_scalar_int(args.n, "n", low=2)
    d = check_scalar_int(args.d, "d", low=1, high=n - 1)
    reps = check_scalar_int(args.reps, "reps", low=1)
    try:
        ms = [int(v) for v in args.ms.split(",")]
    except ValueError:
        raise ValueError(f"'ms' must be comma-separated integers; got {args.ms!r}.") from None
    for m in ms:
        check_scalar_int(m, "ms", low=1, high=n)
    names = _estimator_names(args.estimator)
    rows = []
    for m in ms:
        errs = {name: [] for name in names + ["oracle"]}
        for r in range(reps):
            data = make_subset_of_signals(n, d, m, noisy_sigma=args.noisy_sigma, random_state=args.seed + r)
            for name in names:
                import warnings

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    coef = _make(name, 1.0, False).fit(data.X, data.y).coef_
                errs[name].append(float(np.linalg.norm(coef - data.beta)))
            errs["oracle"].append(float(np.linalg.norm(oracle_wls(data.X, data.y, data.sigma) - data.beta)))
        rows.append({"m": m, "sqrt(nd)/m": sos_rate(n, d, m), "sqrt(d/m)": oracle_floor(d, m),
                     **{k: float(np.median(v)) for k, v in errs.items()}})
    if args.json:
        print_json({"n": n, "d": d, "reps": reps, "noisy_sigma": args.noisy_sigma, "rows": rows})
        return 0
    print(f"median ||beta_hat - beta*|| over {reps} seeds; n = {n}, d = {d}, noisy sigma = {args.noisy_sigma:g}")
    cols = ["m", "sqrt(nd)/m", "sqrt(d/m)"] + names + ["oracle"]
    print(" ".join(f"{c:>11}" for c in cols))
    for r in rows:
        print(" ".join(f"{r[c]:>11d}" if c == "m" else f"{r[c]:>11.4g}" for c in cols))
    return 0


def run(args):
    _resolve_options(args)
    return _simulate(args) if args.action == "simulate" else _fit(args)
