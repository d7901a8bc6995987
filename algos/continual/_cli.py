"""``algos circle``: run CIRCLE and baselines through a class-incremental stream and print the
accuracy-matrix summary."""

from __future__ import annotations

import numpy as np

from .._io import check_memory_budget
from ..cli import command_parser, print_json, print_table

EPILOG = """\
examples:
  algos circle --dataset digits --tasks 10
  algos circle --dataset mnist5k --tasks 5 --reservoirs 4 --groups 2 --baselines raw_slda,ncm
  algos circle --dataset images.npz --tasks 10 --reservoirs 2 --groups 2 --json
mnist5k is not shipped: it is read from $ALGOS_SHARED_DATA/images/mnist_5k.csv.gz (see algos.datasets).
"""


def add_parser(subparsers, name):
    from ._baselines import BASELINES

    p = command_parser(
        subparsers,
        name,
        description="Split the classes of an image dataset into tasks, learn them one after the other "
        "(no exemplars, one pass) with CIRCLE and optional baselines, and print the accuracy after each "
        "task (A_step), A_last, A_inc and forgetting.",
        epilog=EPILOG,
    )
    p.add_argument("--dataset", default="digits",
                   help="'digits' (scikit-learn), 'mnist5k' (read from $ALGOS_SHARED_DATA/images), or a path to a .npz "
                        "(x: (n, H, W[, C]), y) or an MNIST-layout .csv[.gz] (default: digits)")
    p.add_argument("--tasks", type=int, default=10, help="number of tasks T (default: 10)")
    p.add_argument("--first-task-classes", type=int, default=None,
                   help="classes in the first task (default: even split)")
    p.add_argument("--reservoirs", type=int, default=4, help="extractors R (default: 4)")
    p.add_argument("--groups", type=int, default=2, help="SLDA heads G (default: 2)")
    p.add_argument("--units", type=int, default=8, help="units per reservoir direction (default: 8)")
    p.add_argument("--covariance", default="exact", choices=("exact", "hayes", "identity", "fixed"))
    p.add_argument("--shrinkage", type=float, default=1e-4)
    p.add_argument("--batch-size", type=int, default=None,
                   help="mini-batch size of partial_fit (default: one per task)")
    p.add_argument("--baselines", default="",
                   help=f"comma-separated baselines to run too: {', '.join(BASELINES)} (default: none)")
    p.add_argument("--max-samples", type=int, default=None, help="use a stratified subset of this many images")
    p.add_argument("--seed", type=int, default=0, help="class order, split and extractor seed (default: 0)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)
    return p


def _resolve_dataset(text):
    if text == "mnist5k":
        from ..datasets import mnist5k_path

        return str(mnist5k_path())
    if text != "digits" and not text.endswith((".npz", ".csv", ".csv.gz")):
        raise ValueError(f"'dataset' must be 'digits', 'mnist5k', a .csv/.csv.gz (MNIST layout) or an .npz path; "
                         f"got {text!r}.")
    return text


def _features_once(model, X_tr, y_tr, X_te):
    """Split a model into (unfitted head, train features, test features).

    The extractors are data-free and batch-independent, so computing the features once and streaming
    the head over them gives the same run as streaming the whole model (and is T times cheaper at
    evaluation). An empty ``partial_fit`` draws the extractors without learning anything.
    """
    from sklearn.base import clone

    model.partial_fit(X_tr[:0], y_tr[:0])
    head = model.ensemble_ if hasattr(model, "ensemble_") else model.head_
    return clone(head), model.extract_features(X_tr), model.extract_features(X_te)


#: CLI option of each CIRCLEClassifier parameter that the command sets.
_OPTIONS = {"n_reservoirs": "--reservoirs", "n_groups": "--groups", "units": "--units", "covariance": "--covariance",
            "shrinkage": "--shrinkage", "random_state": "--seed"}


def _checked_circle(args, image_shape="auto"):
    """The CIRCLEClassifier the options describe, its parameters checked by its own constraints; an error
    names the option."""
    from .._validation import validate_params
    from ._circle import CIRCLEClassifier

    est = CIRCLEClassifier(n_reservoirs=args.reservoirs, n_groups=args.groups, units=args.units,
                           covariance=args.covariance, shrinkage=args.shrinkage, image_shape=image_shape,
                           random_state=args.seed)
    try:
        validate_params(est)
        est._check_groups()
    except (ValueError, TypeError) as err:
        msg = str(err)
        for param, option in _OPTIONS.items():
            msg = msg.replace(f"'{param}'", f"'{option}'")
        raise ValueError(msg) from None
    return est


def run(args):
    from sklearn.base import clone

    from ._baselines import BASELINES, make_baseline
    from ._data import load_image_dataset
    from ._protocol import class_incremental_split, evaluate_cil

    names = [b.strip() for b in args.baselines.split(",") if b.strip()]
    bad = [b for b in names if b not in BASELINES]
    if bad:
        raise ValueError(f"'baselines' must be a subset of {{{', '.join(BASELINES)}}}; got {bad[0]!r}.")
    circle = _checked_circle(args)
    R, G, U = args.reservoirs, args.groups, args.units
    # the size only (each value is checked by the estimator's constraints above): at least the recurrent
    # weights of R reservoirs x 2 directions (U x U) and a covariance over R*U features
    check_memory_budget(8 * (2 * R * U * U + (R * U) ** 2), f"{R} reservoirs of {U} units",
                        f"'--units'={U}, '--reservoirs'={R}", hint="use fewer units or reservoirs")
    data = load_image_dataset(_resolve_dataset(args.dataset), random_state=args.seed, max_samples=args.max_samples)
    tasks = class_incremental_split(data["y_tr"], args.tasks, first_task_classes=args.first_task_classes,
                                    class_order_seed=args.seed)
    shape = data["image_shape"]
    models = {f"CIRCLE (R={R}, G={G})": lambda: clone(circle).set_params(image_shape=shape)}
    for b in names:
        models[b] = (lambda b=b: make_baseline(b, shape, units=args.units, shrinkage=args.shrinkage,
                                                random_state=args.seed))
    rows = []
    for label, factory in models.items():
        head, F_tr, F_te = _features_once(factory(), data["X_tr"], data["y_tr"], data["X_te"])
        res = evaluate_cil(head, F_tr, data["y_tr"], F_te, data["y_te"], tasks,
                           batch_size=args.batch_size, random_state=args.seed)
        rows.append({"model": label, "A_last": res["A_last"], "A_inc": res["A_inc"],
                     "forgetting": res["forgetting"], "A_step": res["A_step"],
                     "acc_matrix": [[None if np.isnan(v) else float(v) for v in row] for row in res["acc_matrix"]],
                     "seconds": res["fit_seconds"] + res["predict_seconds"]})
    info = {"dataset": data["name"], "image_shape": list(shape), "n_train": int(len(data["y_tr"])),
            "n_test": int(len(data["y_te"])), "tasks": [t.tolist() for t in tasks]}
    if args.json:
        print_json({"data": info, "results": rows}, default=str)
        return 0
    T = len(tasks)
    print(f"{data['name']}: {info['n_train']} train / {info['n_test']} test images {tuple(shape)}, "
          f"T = {T} tasks of {[len(t) for t in tasks]} classes (class order seed {args.seed})")
    head = f"{'model':<22} {'A_last':>7} {'A_inc':>7} {'forget':>7} {'time s':>7}  A_step after each task"
    print_table(head, (f"{r['model']:<22} {r['A_last']:>7.4f} {r['A_inc']:>7.4f} {r['forgetting']:>7.4f} "
                       f"{r['seconds']:>7.1f}  " + " ".join(f"{a:.3f}" for a in r["A_step"]) for r in rows))
    first = rows[0]
    print(f"\naccuracy matrix of {first['model']} (row t: after task t; column j: test samples of task j)")
    for t, row in enumerate(first["acc_matrix"]):
        print(f"  t={t + 1:<3} " + " ".join("  .  " if v is None else f"{v:.3f}" for v in row))
    return 0
