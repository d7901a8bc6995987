"""``algos dag``: learn over a DAG of agents from a CSV and print per-agent error and communication."""

from __future__ import annotations

import numpy as np

from ..cli import command_parser, print_json

EPILOG = """\
topologies (agents see single features, allocated cyclically along the order):
  path       D agents in a chain (--depth, default 2 x number of features)
  star       one spoke per feature, all feeding a hub that sees no feature
  layered    --layers layers of --width agents, each taking 2 parents in the previous layer; the
             output is the first agent of the last layer
options that the chosen topology, protocol or data source does not use are errors (--depth: path;
--layers, --width: layered; --sketch: sketch; --k: sketch, subsample; --target, --features: --csv)
examples:
  algos dag --csv data.csv --target y --topology path --protocol sketch --k 200
  algos dag --diabetes --topology star --json
"""


#: Defaults of the options of --topology layered (None on the parser, so that giving one of them with
#: another topology is detected).
LAYERED_DEFAULTS = {"layers": 4, "width": 3}


def _resolve_options(args):
    """Reject the options that the chosen topology, protocol or data source does not use (they would be
    silently ignored), and fill in the defaults of those it does use."""
    uses = {
        "depth": ("--topology path", args.topology == "path", f"--topology {args.topology}"),
        "layers": ("--topology layered", args.topology == "layered", f"--topology {args.topology}"),
        "width": ("--topology layered", args.topology == "layered", f"--topology {args.topology}"),
        "sketch": ("--protocol sketch", args.protocol == "sketch", f"--protocol {args.protocol}"),
        "k": ("--protocol sketch | subsample", args.protocol != "full", f"--protocol {args.protocol}"),
        "target": ("--csv", bool(args.csv), "the diabetes data"),
        "features": ("--csv", bool(args.csv), "the diabetes data"),
    }
    for dest, (where, used, chosen) in uses.items():
        if not used and getattr(args, dest) is not None:
            raise ValueError(f"--{dest} applies only to {where}; it is not used with {chosen}.")
    for dest, default in LAYERED_DEFAULTS.items():
        if getattr(args, dest) is None:
            setattr(args, dest, default)
    if args.sketch is None:
        args.sketch = "gaussian"


def add_parser(subparsers, name):
    p = command_parser(
        subparsers,
        name,
        description="Agents on a DAG each see some features plus their parents' predictions and fit "
        "least squares in topological order; messages are full prediction vectors, a shared sketch "
        "of them (k floats per edge) or a shared row subsample.",
        epilog=EPILOG,
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument("--csv", help="CSV file with a header row (numeric columns)")
    src.add_argument("--diabetes", action="store_true", help="use scikit-learn's diabetes data (default)")
    p.add_argument("--target", help="response column of the CSV (--csv)")
    p.add_argument("--features", help="comma-separated feature columns (--csv; default: all others)")
    p.add_argument("--topology", choices=("path", "star", "layered"), default="path")
    p.add_argument("--depth", type=int, help="path length (--topology path; default: 2 x number of features)")
    p.add_argument("--layers", type=int,
                   help=f"number of layers (--topology layered; default {LAYERED_DEFAULTS['layers']})")
    p.add_argument("--width", type=int,
                   help=f"agents per layer (--topology layered; default {LAYERED_DEFAULTS['width']})")
    p.add_argument("--protocol", default="full", help="full, sketch or subsample (default full)")
    p.add_argument("--sketch", help="gaussian, srht or countsketch (--protocol sketch; default gaussian)")
    p.add_argument("--k", type=int, help="sketch size / subsample rows (--protocol sketch or subsample; "
                   "default: the 1/2-subspace-embedding size (sqrt(d+1) + sqrt(2 ln 40))^2 / 0.25, capped at "
                   "the number of training rows)")
    p.add_argument("--test-size", type=float, default=0.25, help="held-out fraction (default 0.25)")
    p.add_argument("--seed", type=int, default=0, help="seed of the train/test split, the layered graph and the "
                   "shared sketch (default 0)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)
    return p


def _graph(args, d):
    import networkx as nx

    from .._validation import check_scalar_int
    from ._graphs import cyclic_allocation, make_layered_dag, make_path, make_star

    if args.topology == "path":
        D = args.depth if args.depth is not None else 2 * d
        if D < 1:
            raise ValueError(f"'depth' must be an int in [1, inf]; got {D}.")
        G = make_path(D)
        return G, cyclic_allocation(list(nx.topological_sort(G)), d)
    if args.topology == "star":
        G = make_star(d)
        feats = {v: [v] for v in range(d)}
        feats[d] = []
        return G, feats
    layers = check_scalar_int(args.layers, "layers", low=1)
    width = check_scalar_int(args.width, "width", low=1)
    G = make_layered_dag(layers, width, 2, random_state=args.seed)
    return G, cyclic_allocation(list(nx.topological_sort(G)), d)


def _output_agent(args):
    """The agent whose prediction is the output: the deepest sink, except on the layered DAG, whose
    last layer holds several sinks (its first agent is then the output)."""
    return (args.layers - 1) * args.width if args.topology == "layered" else None


def run(args):
    from sklearn.model_selection import train_test_split

    from .._io import read_csv_columns
    from .._validation import validate_params
    from ._estimator import NetworkedDAGRegressor

    # the estimator's parameters are checked by its own rules, before any data is read
    validate_params(NetworkedDAGRegressor(protocol=args.protocol, sketch=args.sketch or "gaussian", k=args.k,
                                          random_state=args.seed))
    _resolve_options(args)
    if args.csv:
        if not args.target:
            raise ValueError("'target' is required with --csv.")
        X, y, names = read_csv_columns(args.csv, args.target, args.features)
    else:
        from sklearn.datasets import load_diabetes

        data = load_diabetes()
        X, y, names = data.data, data.target, list(data.feature_names)
    if not 0.0 < args.test_size < 1.0:
        raise ValueError(f"'test-size' must be a float in (0, 1); got {args.test_size}.")
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=args.test_size, random_state=args.seed)
    G, feats = _graph(args, X.shape[1])
    est = NetworkedDAGRegressor(graph=G, feature_sets=feats, protocol=args.protocol, sketch=args.sketch,
                                k=args.k, output_agent=_output_agent(args), random_state=args.seed)
    est.fit(Xtr, ytr)
    test_pred = est.agent_predict(Xte)
    central = np.linalg.lstsq(np.column_stack([np.ones(len(ytr)), Xtr]), ytr, rcond=None)[0]
    central_mse = float(np.mean((yte - np.column_stack([np.ones(len(yte)), Xte]) @ central) ** 2))
    rows = []
    for v in est.order_:
        rows.append({
            "agent": str(v),
            "depth": int(est.depth_[v]),
            "features": [names[j] for j in feats.get(v, [])],
            "parents": [str(u) for u in G.predecessors(v)],
            "train_mse": float(est.train_mse_[v]),
            "test_mse": float(np.mean((yte - test_pred[v]) ** 2)),
        })
    m = len(ytr)
    info = {"n_train": int(m), "n_test": int(len(yte)), "topology": args.topology, "protocol": args.protocol,
            "k": est.k_, "edges": G.number_of_edges(), "comm_floats": int(est.comm_floats_),
            "full_message_floats": int(m * G.number_of_edges()), "output_agent": str(est.output_agent_),
            "centralised_test_mse": central_mse}
    if args.json:
        print_json({"info": info, "agents": rows})
        return 0
    print(f"{args.topology} DAG, {G.number_of_nodes()} agents, {G.number_of_edges()} edges; protocol {args.protocol}"
          + (f" (k = {est.k_}, {args.sketch})" if args.protocol != "full" else "")
          + f"; {m} training rows, {len(yte)} held out")
    print(f"communication: {info['comm_floats']} floats (full messages: {info['full_message_floats']})")
    print(f"{'agent':>6} {'depth':>5} {'train MSE':>11} {'test MSE':>11}  sees")
    for r in rows:
        sees = ", ".join(r["features"]) or "-"
        print(f"{r['agent']:>6} {r['depth']:>5} {r['train_mse']:>11.5g} {r['test_mse']:>11.5g}  {sees}"
              + (f" + parents {', '.join(r['parents'])}" if r["parents"] else ""))
    print(f"centralised OLS on all features: test MSE {central_mse:.5g}; output agent {info['output_agent']}")
    return 0
