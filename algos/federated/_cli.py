"""``algos potara``: federated personalisation by federated/local model merging, on built-in or CSV data.

Splits the data among clients (Dirichlet label skew, or a client column of the CSV), holds out a test
part of every client, runs Potara and the chosen baselines in process (and, with ``--flower``, the same
experiment on Flower's simulation engine), and prints mean per-client accuracy, communication and lambdas.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np

from .._io import check_memory_budget
from ..cli import command_parser, print_json, print_table

EPILOG = """\
examples:
  algos potara --dataset digits --clients 20 --alpha 0.3
  algos potara --dataset digits --clients 20 --alpha 0.1 --baselines fedavg,fedavg_ft,local,ditto --json
  algos potara --dataset fedprox --syn-alpha 1 --syn-beta 1 --clients 30
  algos potara --csv data.csv --target label --client-column site
  algos potara --dataset digits --clients 10 --alpha 0.3 --flower      (needs pip install "algos-theory[federated]")
"""

DEFAULT_BASELINES = "fedavg,fedavg_ft,local"


def add_parser(subparsers, name):
    p = command_parser(
        subparsers,
        name,
        description="Potara: every client merges the federated model (FedAvg) with its own fine-tuned "
        "model using the closed-form weight lambda* = V_L / (V_F + V_L) of a variance-trace bound. Prints "
        "mean per-client test accuracy of Potara and the baselines, bytes communicated and lambdas.",
        epilog=EPILOG,
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument("--dataset", choices=("digits", "fedprox"), default=None,
                     help="built-in data: scikit-learn digits (default) or FedProx Synthetic(alpha, beta)")
    src.add_argument("--csv",
                     help="CSV with a header row: numeric features, a label column, optionally a client column")
    p.add_argument("--target", help="label column of the CSV (--csv only)")
    p.add_argument("--features", help="comma-separated feature columns of the CSV (--csv only; default: all others)")
    p.add_argument("--client-column", help="CSV column holding client ids (--csv only; default: Dirichlet split)")
    # the data-source options default to None so that one given for a source that does not use it is an error
    p.add_argument("--clients", type=int, default=None,
                   help="number of clients of the Dirichlet split or of FedProx Synthetic (default 20)")
    p.add_argument("--alpha", type=float, default=None,
                   help="Dirichlet concentration of the split (default 0.3; small = skewed)")
    p.add_argument("--syn-alpha", type=float, default=None,
                   help="FedProx synthetic alpha (--dataset fedprox; default 1)")
    p.add_argument("--syn-beta", type=float, default=None, help="FedProx synthetic beta (--dataset fedprox; default 1)")
    p.add_argument("--rounds", type=int, default=30, help="FedAvg rounds (default 30)")
    p.add_argument("--local-epochs", type=int, default=5, help="GD steps per client per round (default 5)")
    p.add_argument("--finetune-epochs", type=int, default=100, help="local fine-tune steps (default 100)")
    p.add_argument("--lr", type=float, default=0.5, help="step size (default 0.5; features are standardised)")
    p.add_argument("--rank", type=int, default=0, help="low-rank adapter rank (default 0: full softmax head)")
    p.add_argument("--variance-method", default="bootstrap",
                   choices=("bootstrap", "plugin_fisher", "fisher", "sandwich", "swag"))
    p.add_argument("--granularity", default="module", choices=("global", "module", "coordinate"))
    p.add_argument("--baselines", default=DEFAULT_BASELINES,
                   help=f"comma-separated baselines, or 'all' or 'none' (default {DEFAULT_BASELINES})")
    p.add_argument("--test-size", type=float, default=0.5, help="held-out fraction of every client (default 0.5)")
    p.add_argument("--flower", action="store_true", help="also run the experiment on Flower's simulation engine")
    p.add_argument("--per-client", action="store_true", help="print the per-client table")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)
    return p


#: the data-source options and their defaults
SOURCE_DEFAULTS = {"target": None, "features": None, "client_column": None, "clients": 20, "alpha": 0.3,
                   "syn_alpha": 1.0, "syn_beta": 1.0}


def _source_options(args):
    """(source name, the data-source options it uses): digits and a CSV without client column are split
    by Dirichlet label skew (``--clients``, ``--alpha``); FedProx Synthetic draws ``--clients`` clients."""
    if args.csv:
        # --clients is tolerated (and unused) with --client-column: the existing CLI tests pass it there
        used = {"target", "features", "client_column", "clients"}
        if not args.client_column:
            used |= {"alpha"}
        return ("--csv --client-column" if args.client_column else "--csv"), used
    if args.dataset == "fedprox":
        return "--dataset fedprox", {"clients", "syn_alpha", "syn_beta"}
    return "--dataset digits", {"clients", "alpha"}


def _resolve_source_options(args):
    """Fill in the defaults of the options the data source uses; an option given for a source that
    does not use it is an error (it would be silently ignored)."""
    source, used = _source_options(args)
    for dest, default in SOURCE_DEFAULTS.items():
        flag = "--" + dest.replace("_", "-")
        if dest in used:
            if getattr(args, dest) is None:
                setattr(args, dest, default)
        elif getattr(args, dest) is not None:
            where = {"target": "--csv", "features": "--csv", "client_column": "--csv",
                     "syn_alpha": "--dataset fedprox", "syn_beta": "--dataset fedprox",
                     "alpha": "--dataset digits and to --csv without --client-column"}[dest]
            raise ValueError(f"{flag} applies only to {where}; it is not used with {source}.")


def _load(args):
    from .._io import read_csv_columns
    from ._data import dirichlet_label_split, make_fedprox_synthetic

    if args.csv:
        if not args.target:
            raise ValueError("'target' is required with --csv.")
        feats = args.features
        if args.client_column and feats is None:
            import csv

            with open(args.csv, encoding="utf-8") as fh:
                header = next(r for r in csv.reader(fh) if r and not r[0].startswith("#"))
            feats = ",".join(h for h in header if h not in (args.target, args.client_column))
        X, y, _ = read_csv_columns(args.csv, args.target, feats)
        if args.client_column:
            _, ids, _ = read_csv_columns(args.csv, args.client_column, feats)
        else:
            ids = dirichlet_label_split(y, args.clients, args.alpha, min_size=4, random_state=args.seed)
        return X, y, np.asarray(ids), f"{args.csv} ({len(y)} rows)"
    if args.dataset == "fedprox":
        d = make_fedprox_synthetic(args.syn_alpha, args.syn_beta, n_clients=args.clients, max_per_client=400,
                                   random_state=args.seed)
        label = f"FedProx Synthetic({args.syn_alpha:g}, {args.syn_beta:g}), {args.clients} clients"
        return d.X, d.y, d.client_ids, label
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    ids = dirichlet_label_split(y, args.clients, args.alpha, min_size=4, random_state=args.seed)
    return X, y, ids, f"digits, {args.clients} clients, Dirichlet alpha = {args.alpha:g}"


def split_clients(client_ids, test_size, random_state):
    """Boolean train mask: every client keeps ``round((1 - test_size) n_i)`` (at least 2) rows for training."""
    rng = np.random.default_rng(random_state)
    train = np.zeros(len(client_ids), dtype=bool)
    for c in np.unique(client_ids):
        idx = np.flatnonzero(client_ids == c)
        rng.shuffle(idx)
        k = min(len(idx), max(2, int(round((1 - test_size) * len(idx)))))
        train[idx[:k]] = True
    return train


def standardize(X, train):
    """Standardise with the training rows' mean and scale (constant columns left at 0)."""
    mu = X[train].mean(0)
    sd = X[train].std(0)
    return (X - mu) / np.where(sd > 0, sd, 1.0)


def _baseline_names(text):
    from .baselines import BASELINES

    if text in ("", "none"):
        return []
    if text == "all":
        return list(BASELINES)
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in BASELINES]
    if bad:
        raise ValueError(f"'baselines' must be a subset of {{{', '.join(BASELINES)}}}, 'all' or 'none'; got {text!r}.")
    return names


def make_estimators(args, names):
    """Potara and the named baselines with the CLI's settings (shared by the demo and the benchmark)."""
    import inspect

    from ._low_rank_softmax import LowRankSoftmax
    from ._potara import PotaraClassifier
    from .baselines import BASELINES

    base = LowRankSoftmax(rank=args.rank or None, lr=args.lr)
    common = dict(base_estimator=base, n_rounds=args.rounds, local_epochs=args.local_epochs,
                  finetune_epochs=args.finetune_epochs, random_state=args.seed, epochs=args.finetune_epochs)
    out = {"potara": PotaraClassifier(variance_method=args.variance_method, granularity=args.granularity,
                                      **{k: v for k, v in common.items() if k != "epochs"})}
    for n in names:
        cls = BASELINES[n]
        sig = inspect.signature(cls).parameters
        out[n] = cls(**{k: v for k, v in common.items() if k in sig})
    return out


def run_experiment(X, y, ids, args, names):
    """Fit everything; return (rows, per_client, potara, train mask, split data).

    An interrupt (Ctrl-C) during a fit's rounds leaves that estimator fitted with the rounds it
    completed (its row has ``"interrupted": True``); the methods after it are not fitted.
    """
    train = split_clients(ids, args.test_size, args.seed)
    Xs = standardize(np.asarray(X, dtype=np.float64), train)
    Xtr, ytr, itr, Xte, yte, ite = Xs[train], y[train], ids[train], Xs[~train], y[~train], ids[~train]
    ests = make_estimators(args, names)
    rows, per_client = [], {}
    for name, est in ests.items():
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if name == "oracle_grid":
                est.fit(Xtr, ytr, itr, Xte, yte, ite)
            else:
                est.fit(Xtr, ytr, itr)
        secs = time.perf_counter() - t0
        acc = est.client_scores(Xte, yte, ite) if len(yte) else {}
        per_client[name] = acc
        rows.append({"method": name,
                     "mean_client_accuracy": float(np.mean(list(acc.values()))) if acc else float("nan"),
                     "bytes": int(est.history_[-1]["cumulative_bytes"]) if est.history_ else 0,
                     "seconds": secs, "warnings": sorted({f"{type(w.message).__name__}: {w.message}" for w in caught}),
                     "interrupted": bool(getattr(est, "interrupted_", False))})
        if rows[-1]["interrupted"]:
            break
    return rows, per_client, ests["potara"], (Xtr, ytr, itr, Xte, yte, ite)


def _flower_missing(exc):
    """One ImportError carrying the install hint once (the library's own message may already hold it)."""
    import re

    # the library's own message names the required version (flwr>=X); keep that, not its whole text
    version = re.search(r"flwr>=[0-9.]*[0-9]", str(exc))
    missing = version.group(0) if version else (getattr(exc, "name", None) or "flwr")
    return ImportError(f"--flower needs Flower, which is not installed (missing: {missing}); "
                       "install it with: pip install \"algos-theory[federated]\"")


def _flower(potara, split, per_client):
    try:
        from .flower import run_flower_simulation

        Xtr, ytr, itr, Xte, yte, ite = split
        res = run_flower_simulation(potara, Xtr, ytr, itr, Xte, yte, ite)
    except ImportError as exc:
        raise _flower_missing(exc) from None
    ours = per_client["potara"]
    diff = max(abs(float(res.client_accuracy[c]) - ours[c]) for c in ours)
    return {"mean_client_accuracy": float(np.mean(list(res.client_accuracy.values()))),
            "max_abs_diff_vs_in_process": diff, "bytes": int(res.bytes_total), "seconds": float(res.wall_time_s)}


def run(args):
    from .._validation import check_scalar_float, check_scalar_int, validate_params

    _resolve_source_options(args)
    if args.clients is not None:
        check_scalar_int(args.clients, "clients", low=1)
        # per client at least its data split, model copy and metrics: 4 KiB is a floor, not an estimate
        check_memory_budget(4096 * args.clients, f"{args.clients} clients (at least 4 KiB each)",
                            f"'--clients'={args.clients}", hint="use fewer clients")
    if args.alpha is not None:
        check_scalar_float(args.alpha, "alpha", low=0.0, closed="neither")
    for dest in ("syn_alpha", "syn_beta"):
        if getattr(args, dest) is not None:
            check_scalar_float(getattr(args, dest), dest, low=0.0)
    check_scalar_float(args.test_size, "test_size", low=0.0, high=1.0, closed="left")
    names = _baseline_names(args.baselines)
    for est in make_estimators(args, names).values():  # the estimators' own rules, before the data is built
        validate_params(est.base_estimator)
        validate_params(est)
    X, y, ids, label = _load(args)
    rows, per_client, potara, split = run_experiment(X, y, ids, args, names)
    lam = {str(c): {k: float(np.mean(v)) for k, v in l.items()} for c, l in potara.mixing_weights_.items()}
    interrupted = any(r["interrupted"] for r in rows)
    flower = _flower(potara, split, per_client) if args.flower and not interrupted else None
    if args.json:
        print_json({"data": label, "clients": int(len(potara.clients_)), "results": rows,
                          "mean_lambda": potara.mean_lambda(), "lambda": lam, "flower": flower,
                          "per_client_accuracy": {m: {str(c): a for c, a in v.items()} for m, v in per_client.items()}})
        return _exit_code(interrupted)
    print(f"{label}; {len(potara.clients_)} clients, test fraction {args.test_size:g}, "
          f"{args.rounds} rounds x {args.local_epochs} local steps, fine-tune {args.finetune_epochs} steps")
    head = f"{'method':<12} {'mean client acc':>15} {'MB sent':>9} {'seconds':>8}"
    print_table(head, (f"{r['method']:<12} {r['mean_client_accuracy']:>15.4f} {r['bytes'] / 1e6:>9.3f} "
                       f"{r['seconds']:>8.2f}" for r in rows))
    for r in rows:
        for w in r["warnings"][:2]:
            print(f"  {r['method']}: warning: {w}")
    print(f"Potara mean lambda (weight of the federated model): {potara.mean_lambda():.3f} "
          f"(variance method {args.variance_method!r}, granularity {args.granularity!r})")
    if args.per_client:
        print(f"{'client':>8} {'n_train':>7} {'lambda':>7} {'potara':>7}" + "".join(f" {n[:9]:>9}" for n in names))
        for m, c in enumerate(potara.clients_):
            c = c.item() if hasattr(c, "item") else c
            lm = float(np.mean([np.mean(v) for v in potara.mixing_weights_[c].values()]))
            accs = "".join(f" {per_client.get(n, {}).get(c, float('nan')):>9.4f}" for n in names)
            print(f"{str(c):>8} {potara.n_samples_per_client_[m]:>7} {lm:>7.3f} "
                  f"{per_client['potara'].get(c, float('nan')):>7.4f}{accs}")
    if flower:
        print(f"Flower simulation: mean client acc {flower['mean_client_accuracy']:.4f}, max |diff| vs in-process "
              f"{flower['max_abs_diff_vs_in_process']:.2e}, {flower['bytes'] / 1e6:.3f} MB, {flower['seconds']:.1f} s")
    return _exit_code(interrupted)


def _exit_code(interrupted):
    """130 (as for SIGINT) when an interrupt stopped a fit early: the results above were printed first."""
    if interrupted:
        print("algos potara: interrupted: the results above are those fitted before the interrupt (the "
              "interrupted method with the rounds it completed; the methods after it were not run)",
              file=sys.stderr)
        return 130
    return 0
