"""``algos pomdp``: solve a POMDP file with finite-memory controllers, or describe it."""

from __future__ import annotations

import sys
import time

import numpy as np

from .._io import check_memory_budget, check_output_path
from ..cli import _error_line, add_engine_options, command_parser, engine_options, print_json

CONTROLLERS = ("recap", "kmeans", "grid", "window", "bpi")

EPILOG = """\
MODEL is a Cassandra .POMDP file or a built-in model: 'tiger', 'rocksample:N,K', or one of the classic
pomdp.org models shipped with the package ({shipped}).

examples:
  algos pomdp info tiger.95
  algos pomdp solve tiger --memory 5
  algos pomdp solve shuttle.95 --memory 8 --baseline kmeans,window --json
  algos pomdp solve tiger-grid --memory 8 --time-limit 20
  algos pomdp solve rocksample:4,4 --memory 16 --simulate 20000
  algos pomdp solve hallway --solver pbs --time-limit 60 --policy-out hallway.policy
  algos pomdp solve my_model.POMDP --memory 5 --graph-out my_model.dot
  algos pomdp solve hallway --memory 2,4,8,16 --backend loky --n-jobs 2
  algos pomdp solve hallway --memory 4,8,16,32 --backend dask --scheduler tcp://head:8786
"""


def _shipped_names():
    from ..datasets import pomdp_names

    return pomdp_names()


def builtin_names():
    """The model names ``algos pomdp`` accepts besides a file path."""
    return ["tiger", "rocksample:N,K"] + _shipped_names()


#: Defaults of the options of ``solve`` (None on the parser, so that one given to ``info``, which would
#: ignore it, is detected).
SOLVE_DEFAULTS = {"memory": [8], "baseline": "", "solver": "pbs", "time_limit": 60.0, "target_gap": 1e-3,
                  "pbvi_beliefs": 200, "policy_out": None, "graph_out": None, "simulate": 0, "seed": 0}


def _resolve_options(args):
    """Fill in the defaults of ``solve``'s options; with ``info`` any of them is an error."""
    solver = args.solver or SOLVE_DEFAULTS["solver"]
    for dest, only in (("pbvi_beliefs", "pbvi"), ("time_limit", "pbs"), ("target_gap", "pbs")):
        if getattr(args, dest) is not None and args.action == "solve" and solver != only:
            raise ValueError(f"--{dest.replace('_', '-')} applies only to `--solver {only}`; it is not used by "
                             f"`--solver {solver}`.")
    for dest, default in SOLVE_DEFAULTS.items():
        if getattr(args, dest) is None:
            setattr(args, dest, default)
        elif args.action != "solve":
            raise ValueError(f"--{dest.replace('_', '-')} applies only to `algos pomdp solve`; it is not used by "
                             f"`algos pomdp {args.action}`.")


def add_parser(subparsers, name):
    p = command_parser(
        subparsers,
        name,
        description="Build a K-node finite-state controller for a POMDP with RECAP and baselines, "
        "evaluate each exactly (V^F(b0) by a linear solve) next to the PBVI bracket, or print a "
        "model's sizes.",
        epilog=EPILOG.format(shipped=", ".join(_shipped_names())),
    )
    p.add_argument("action", choices=("solve", "info"), help="solve: fit controllers; info: describe the model")
    p.add_argument("model", help="a .POMDP file, 'tiger', 'rocksample:N,K' or a shipped model such as 'tiger-grid'")
    p.add_argument("--memory", type=_memory_list,
                   help="memory budget K, number of controller nodes (solve; default 8); a comma-separated list "
                   "(2,4,8,16) fits the controllers for every K on the same solver run, one task per K")
    p.add_argument("--baseline", help="comma-separated baselines to fit next to RECAP (solve): "
                   + ", ".join(CONTROLLERS[1:]))
    p.add_argument("--solver", choices=("pbs", "pbvi"),
                   help="solver of the shared alpha vectors and the V*(b0) bracket (solve): pbs (PointBasedSolver, "
                   "HSVI2 search; default) or pbvi")
    p.add_argument("--time-limit", type=float,
                   help="time limit of the pbs solver in seconds (solve; default 60; it stops earlier at --target-gap)")
    p.add_argument("--target-gap", type=float, help="target gap at b0 of the pbs solver (solve; default 1e-3)")
    p.add_argument("--pbvi-beliefs", type=int, help="belief points of the PBVI run (solve; default 200)")
    p.add_argument("--policy-out",
                   help="write the solver's alpha vectors to this file (solve; .policy: SARSOP XML; .alpha: "
                        "pomdp-solve)")
    p.add_argument("--graph-out",
                   help="write RECAP's controller as a policy graph (solve; .dot Graphviz, .json, .pg pomdp-solve)")
    p.add_argument("--simulate", type=int,
                   help="also estimate each controller's value from this many Monte-Carlo episodes (solve)")
    p.add_argument("--discount", type=float, default=None, help="override the model's discount")
    p.add_argument("--seed", type=int, help="random seed of the controllers (solve; default 0)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_engine_options(p, "solve with several --memory values: the controllers of each K")
    p.set_defaults(func=run)
    return p


def _memory_list(text):
    """argparse type of ``--memory``: one int, or a comma-separated list of distinct ints (each one the
    controllers' ``n_memory``, whose rule their own constraints check: :func:`_check_params`)."""
    import argparse

    parts = [t.strip() for t in str(text).split(",") if t.strip()]
    try:
        values = [int(t) for t in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'memory' must be an int or a comma-separated list of ints; "
                                         f"got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError(f"'memory' must be an int or a comma-separated list of ints; "
                                         f"got {text!r}")
    if len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"'memory' lists a value twice; got {text!r}")
    return values


def load_model(spec, discount=None):
    """A :class:`POMDP` from a file path or a built-in name (``tiger``, ``rocksample:N,K``, or a model
    shipped in :mod:`algos.datasets` such as ``tiger-grid``; an existing file of that name wins)."""
    import os

    from ..datasets import load_pomdp
    from ._builtin import rock_sample, tiger
    from ._model import POMDP

    text = str(spec)
    low = text.lower()
    if low == "tiger":
        model = tiger()
    elif low.startswith("rocksample"):
        try:
            n, k = (int(v) for v in text.split(":", 1)[1].split(","))
        except (IndexError, ValueError):
            raise ValueError(f"'model' must be 'rocksample:N,K' with integers N, K; got {text!r}.") from None
        model = rock_sample(n, k)
    elif not os.path.exists(text) and text in _shipped_names():
        model = load_pomdp(text)
    elif not os.path.exists(text):
        raise FileNotFoundError(2, f"no such file: {text} (built-in models: {', '.join(builtin_names())})", text)
    else:
        model = POMDP.from_file(text)
    if discount is not None:
        model = POMDP(model.T, model.Z, model.r, discount, model.b0,
                      model.states, model.actions, model.observations,
                      storage="sparse" if model.is_sparse else "dense")
    return model


def _info(model, spec):
    A, S = int(model.n_actions), int(model.n_states)
    if getattr(model, "is_sparse", False):
        nnz = sum(int(model.transition_csr(a).nnz) for a in range(A))
    else:
        nnz = int(np.count_nonzero(model.T))
    return {
        "model": spec,
        "states": int(model.n_states),
        "actions": int(model.n_actions),
        "observations": int(model.n_observations),
        "discount": float(model.discount),
        "reward_range": [float(np.min(model.r)), float(np.max(model.r))],
        "transition_density": nnz / (A * S * S),
        "b0_support": int(np.count_nonzero(model.b0)),
        "action_names": list(model.actions),
        "observation_names": list(model.observations),
    }


def _make(name, K, seed, pbvi):
    from ._window import FiniteWindowController
    from .recap._codebook import GridCodebook, KMeansCodebook
    from .recap._recap import RECAPController
    from .solvers._bpi import BPIController

    if name == "recap":
        return RECAPController(n_memory=K, random_state=seed)
    if name == "kmeans":
        return KMeansCodebook(n_memory=K, random_state=seed)
    if name == "grid":
        return GridCodebook(n_memory=K, random_state=seed)
    if name == "window":
        return FiniteWindowController(n_memory=K, random_state=seed)
    return BPIController(n_memory=K, random_state=seed)


def _controller_names(args):
    """``recap`` and the ``--baseline`` controllers, each once."""
    names = ["recap"] + [b.strip() for b in args.baseline.split(",") if b.strip()]
    bad = [b for b in names if b not in CONTROLLERS]
    if bad:
        raise ValueError(f"'--baseline' must be a comma-separated subset of {', '.join(CONTROLLERS[1:])}; "
                         f"got {bad[0]!r}.")
    return list(dict.fromkeys(names))


def _make_solver(args):
    """The solver of the shared alpha vectors that ``--solver`` names, with the options' parameters."""
    if args.solver == "pbs":
        from .solvers._pbs import PointBasedSolver

        return PointBasedSolver(time_limit=args.time_limit, target_gap=args.target_gap)
    from .solvers._pbvi import PBVI

    return PBVI(n_beliefs=args.pbvi_beliefs, random_state=args.seed)


#: The option that sets each estimator parameter (named in the error message of a bad value).
_OPTION_OF = {"time_limit": "--time-limit", "target_gap": "--target-gap", "n_beliefs": "--pbvi-beliefs",
              "n_memory": "--memory", "random_state": "--seed"}


def _check_params(args, names):
    """Check the parameters the options give the solver and every controller with the estimators' own
    constraints (:func:`algos._validation.validate_params`), before the model is built and solved; a bad
    value is a ``ValueError`` naming the option."""
    from .._validation import validate_params

    for est in [_make_solver(args)] + [_make(name, K, args.seed, None) for K in args.memory for name in names]:
        try:
            validate_params(est)
        except (TypeError, ValueError) as exc:
            bad = next((n for n in _OPTION_OF if f"'{n}'" in str(exc)), None)
            where = type(est).__name__
            if bad is not None:
                where = f"'{_OPTION_OF[bad]}'={est.get_params(deep=False)[bad]!r} ({where}'s {bad})"
            raise ValueError(f"{where}: {_error_line(exc)}") from None


def _solve(model, args):
    import warnings

    from ._beliefs import blind_policy_values

    names = _controller_names(args)
    t0 = time.perf_counter()
    solver = _make_solver(args)
    with warnings.catch_warnings():
        if args.solver != "pbs":
            warnings.simplefilter("ignore")
        pbvi = solver.fit(model)
    pbvi_s = time.perf_counter() - t0
    if args.policy_out:
        from .io._policy_io import write_policy

        write_policy(args.policy_out, pbvi, model_name=str(args.model))
    memories = args.memory
    if len(memories) == 1:
        rows, interrupted = _controller_rows(memories[0], model=model, pbvi=pbvi, names=names, seed=args.seed,
                                             simulate=args.simulate, graph_out=args.graph_out)
        sweep = None
    else:  # one task per K on the chosen engine; each returns plain rows (no estimator travels back)
        import functools

        from ..experiments import run_sweep

        task = functools.partial(_controller_rows, model=model, pbvi=pbvi, names=names, seed=args.seed,
                                 simulate=args.simulate)
        records = run_sweep(task, {"K": memories}, random_state=args.seed, **engine_options(args))
        sweep = [{"memory": r["K"], "controllers": r["value"][0]} for r in records]
        rows, interrupted = sweep[0]["controllers"], any(r["value"][1] for r in records)
    blind = float(blind_policy_values(model).best_value)
    out = {
        "interrupted": bool(getattr(pbvi, "interrupted_", False)) or interrupted,
        "model": args.model,
        "memory": memories[0] if len(memories) == 1 else memories,
        "solver": {"name": args.solver, "lower": float(pbvi.value_), "upper": float(pbvi.upper_bound_),
                   "seconds": pbvi_s, "n_alpha": int(len(pbvi.alphas_)),
                   "trivial_gap": float((np.max(model.r) - np.min(model.r)) / (1.0 - model.discount))},
        "blind_value": blind,
        "controllers": rows,
    }
    if sweep is not None:
        out["sweep"] = sweep
        del out["controllers"]
    return out


def _controller_rows(K, random_state=None, *, model, pbvi, names, seed, simulate, graph_out=None):
    """Fit the controllers ``names`` with ``K`` nodes on the shared solver run ``pbvi``: ``(rows, interrupted)``.

    One task of the ``--memory`` sweep (``random_state`` is the sweep's stream, unused: the controllers
    are seeded by ``seed`` so that every K gets the same seed as a single-K run).
    """
    import warnings

    rows, interrupted = [], False
    for name in names:
        est = _make(name, K, seed, pbvi)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(model, alphas=pbvi) if name != "bpi" else est.fit(model)
        row = {"controller": type(est).__name__, "value": float(est.value_),
               "nodes": int(getattr(est, "n_memory_", getattr(est, "n_nodes_", K))),
               "fit_seconds": time.perf_counter() - t0}
        if simulate:
            mean, se = _simulated(est, model, simulate, seed)
            row["simulated_mean"], row["simulated_se"] = mean, se
        if name == "recap" and getattr(est, "bound_", None):
            row["bound"] = {k: (dict(v) if isinstance(v, dict) else float(v)) for k, v in est.bound_.items()}
        if name == "recap":
            row["table"] = _controller_table(est, model)
            if graph_out:
                from .io._policy_io import write_policy_graph

                write_policy_graph(graph_out, est, pomdp=model)
        interrupted = interrupted or bool(getattr(est, "interrupted_", False))
        rows.append(row)
    return rows, interrupted


def _controller_table(est, model, top=3):
    """One row per node: its action, its successor for each observation, and its codeword's top
    states (the belief the node stands for)."""
    rows = []
    for m in range(len(est.action_)):
        b = est.codebook_[m]
        idx = np.argsort(-b, kind="stable")[:top]
        rows.append({
            "node": m,
            "initial": m == est.m0_,
            "action": model.actions[int(est.action_[m])],
            "next": {model.observations[o]: int(est.eta_[m, o]) for o in range(est.eta_.shape[1])},
            "belief_top": {model.states[int(s)]: float(b[s]) for s in idx if b[s] > 0},
        })
    return rows


def _simulated(est, model, n, seed):
    out = est.simulate(model, n_episodes=n, random_state=seed)
    return float(out.mean), float(out.stderr)


def run(args):
    try:
        _resolve_options(args)
        for opt, val, exts in (("--policy-out", args.policy_out, (".policy", ".alpha")),
                               ("--graph-out", args.graph_out, (".dot", ".json", ".pg"))):
            if val is not None and not str(val).lower().endswith(exts):
                raise ValueError(f"'{opt}' must end in {' or '.join(exts)}; got {val!r}.")
            if val is not None:
                check_output_path(val, opt)  # before the model is built and solved
        if args.action == "solve":
            _check_params(args, _controller_names(args))
        model = load_model(args.model, args.discount)
        if args.action == "info":
            out = _info(model, args.model)
            if args.json:
                print_json(out)
            else:
                print(f"{args.model}: S = {out['states']}, A = {out['actions']}, O = {out['observations']}, "
                      f"discount = {out['discount']:g}")
                print(f"  rewards in [{out['reward_range'][0]:g}, {out['reward_range'][1]:g}]; "
                      f"T density {out['transition_density']:.3f}; b0 support {out['b0_support']} states")
                print(f"  actions: {', '.join(out['action_names'])}")
                print(f"  observations: {', '.join(out['observation_names'])}")
            return 0
        if len(args.memory) > 1 and args.graph_out:
            raise ValueError("'--graph-out' writes one controller graph: give one --memory value with it; got "
                             f"--memory {','.join(map(str, args.memory))}.")
        engine_options(args)  # --backend / --scheduler / --n-jobs checked before the solve
        if args.simulate:  # per episode: its return, discount, state, node and random draws (8 numbers)
            check_memory_budget(64 * args.simulate, f"{args.simulate} simulated episodes",
                                f"'--simulate'={args.simulate}", hint="simulate fewer episodes")
        out = _solve(model, args)
    except (ValueError, OSError) as exc:

        print(f"algos pomdp: error: {_error_line(exc)}", file=sys.stderr)
        return 2
    if args.json:
        print_json(out)
        return _exit_code(out)
    pb = out["solver"]
    if "sweep" in out:
        return _print_sweep(out, args)
    print(f"{args.model}: K = {out['memory']}; {pb['name'].upper()} bracket of V*(b0) [{pb['lower']:.4f}, "
          f"{pb['upper']:.4f}] (gap {pb['upper'] - pb['lower']:.3g}; {pb['n_alpha']} alpha vectors, "
          f"{pb['seconds']:.1f} s); best blind policy {out['blind_value']:.4f}")
    print(f"{'controller':<24}{'nodes':>6}{'V^F(b0) exact':>16}{'fit s':>9}"
          + ("  Monte Carlo" if args.simulate else ""))
    for row in out["controllers"]:
        line = f"{row['controller']:<24}{row['nodes']:>6}{row['value']:>16.4f}{row['fit_seconds']:>9.2f}"
        if "simulated_mean" in row:
            line += f"  {row['simulated_mean']:.4f} +- {2 * row['simulated_se']:.4f}"
        print(line)
    rec = out["controllers"][0]
    print(f"RECAP controller ({len(rec['table'])} nodes; '*' = initial node m0):")
    for row in rec["table"]:
        nxt = ", ".join(f"{o}->{k}" for o, k in row["next"].items())
        bel = ", ".join(f"{s}:{p:.2f}" for s, p in row["belief_top"].items())
        print(f"  {'*' if row['initial'] else ' '}{row['node']:>3}  {row['action']:<14} next: {nxt}   belief: {bel}")
    if "bound" in rec and "U2" in rec["bound"]:
        b = rec["bound"]
        print(f"RECAP closure certificates (rho = {b['rho']:.3g}, rho_pi = {b['rho_pi']:.3g}, L = {b['L']:.3g}); "
              f"trivial bound (Rmax - Rmin)/(1 - discount) = {b['trivial']:.4g}:")
        print(f"  {'bound':<6}{'value':>12}  informative")
        for k, what in (("U1", "max_k |V*(c_k) - V_C(k)|"), ("U2", "V*(b0) - V^F(b0)"),
                        ("U3", "max_k |c_k.W_k - V_C^pi(k)|")):
            flag = "no (vacuous: >= trivial)" if b["vacuous"].get(k) else "yes"
            print(f"  {k:<6}{b[k]:>12.4g}  {flag}   ({what})")
    if args.policy_out:
        print(f"alpha vectors written to {args.policy_out}")
    if args.graph_out:
        print(f"controller graph written to {args.graph_out}")
    return _exit_code(out)


def _print_sweep(out, args):
    pb = out["solver"]
    print(f"{args.model}: K in {out['memory']}; {pb['name'].upper()} bracket of V*(b0) [{pb['lower']:.4f}, "
          f"{pb['upper']:.4f}] ({pb['n_alpha']} alpha vectors, {pb['seconds']:.1f} s); best blind policy "
          f"{out['blind_value']:.4f}")
    names = [row["controller"] for row in out["sweep"][0]["controllers"]]
    print(f"{'K':>5}" + "".join(f"{n:>22}" for n in names) + "   (V^F(b0) exact)")
    for entry in out["sweep"]:
        print(f"{entry['memory']:>5}" + "".join(f"{row['value']:>22.4f}" for row in entry["controllers"]))
    if args.policy_out:
        print(f"alpha vectors written to {args.policy_out}")
    return _exit_code(out)


def _exit_code(out):
    """130 (as for SIGINT) when an interrupt stopped a fit early: what it had was written first."""
    if out.get("interrupted"):
        print("algos pomdp: interrupted: the results and files above are those fitted before the interrupt",
              file=sys.stderr)
        return 130
    return 0
