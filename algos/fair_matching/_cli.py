"""``algos matching``: run the online class-matching algorithms on an instance and compare them."""

from __future__ import annotations

import numpy as np

from ..cli import command_parser, print_json, print_table

ALGORITHMS = ("tef", "equal-filling", "water-filling", "hybrid", "ranking", "greedy")

EPILOG = """\
instances:
  random        Erdos-Renyi bipartite (--n-agents, --n-items, --n-classes, --p)
  davis         Davis Southern Women (networkx): 18 women in 2 groups x 14 events
  triangular    the KVV upper-triangular instance of size --n-agents
  ub            the upper-bound family UB(--alpha, n=--n-agents, k=--n-classes)
  FILE.json     {"n_agents": n, "agent_class": [...], "items": [[agent ids], ...]}

examples:
  algos matching --gamma 0.5 --instance random --n-agents 40 --n-items 60 --n-classes 3
  algos matching --instance davis --algorithm tef,hybrid --json
"""


def add_parser(subparsers, name):
    p = command_parser(
        subparsers,
        name,
        description="Run online class-matching algorithms on an instance and print welfare (USW) and "
        "class envy-freeness (CEF) next to the paper's guarantees.",
        epilog=EPILOG,
    )
    p.add_argument("--instance", default="random",
                   help="random | davis | triangular | ub | FILE.json (default: random)")
    p.add_argument("--gamma", type=float, default=0.5, help="threshold gamma in [0, 1] (default: 0.5)")
    p.add_argument("--algorithm", default="all", help=f"comma-separated subset of {', '.join(ALGORITHMS)}, or all")
    # instance options default to None so that one given for an instance that does not use it is an error
    p.add_argument("--n-agents", type=int, default=None, help="agents (random, triangular, ub; default: 40)")
    p.add_argument("--n-items", type=int, default=None, help="items (random; default: 60)")
    p.add_argument("--n-classes", type=int, default=None, help="classes (random, triangular, ub; default: 3)")
    p.add_argument("--p", type=float, default=None, help="edge probability (random; default: 0.1)")
    p.add_argument("--alpha", type=float, default=None, help="alpha of the upper-bound family (ub; default: 0.3)")
    p.add_argument("--n-runs", type=int, default=200, help="Monte-Carlo runs of the randomised algorithms")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save-instance", metavar="FILE", help="also write the instance as JSON")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)
    return p


#: instance kind -> the instance options it uses, with their defaults (a file uses none)
INSTANCE_OPTIONS = {
    "random": {"n_agents": 40, "n_items": 60, "n_classes": 3, "p": 0.1},
    "davis": {},
    "triangular": {"n_agents": 40, "n_classes": 3},
    "ub": {"n_agents": 40, "n_classes": 3, "alpha": 0.3},
}
_ALL_INSTANCE_OPTIONS = ("n_agents", "n_items", "n_classes", "p", "alpha")


def _resolve_instance_options(args):
    """Fill in the defaults of the options the chosen instance uses; an option given for an instance
    that does not use it is an error (it would be silently ignored)."""
    kind = args.instance
    used = INSTANCE_OPTIONS.get(kind, {})
    for dest in _ALL_INSTANCE_OPTIONS:
        if dest in used:
            if getattr(args, dest) is None:
                setattr(args, dest, used[dest])
        elif getattr(args, dest) is not None:
            users = [k for k, opts in INSTANCE_OPTIONS.items() if dest in opts]
            what = "an instance file" if kind not in INSTANCE_OPTIONS else f"--instance {kind}"
            raise ValueError(f"--{dest.replace('_', '-')} applies only to --instance {' | '.join(users)}; "
                             f"it is not used with {what}.")


def _load_instance(args):
    from . import OnlineMatchingInstance, davis_instance, random_instance, triangular_instance, upper_bound_instance

    kind = args.instance
    if kind not in INSTANCE_OPTIONS:  # a file: a missing or malformed file is reported first
        inst = OnlineMatchingInstance.from_json(kind)
        _resolve_instance_options(args)
        return inst
    _resolve_instance_options(args)
    if kind == "random":
        return random_instance(args.n_agents, args.n_items, args.n_classes, args.p, random_state=args.seed)
    if kind == "davis":
        return davis_instance()
    if kind == "triangular":
        return triangular_instance(args.n_agents, n_classes=min(args.n_classes, args.n_agents))
    return upper_bound_instance(args.alpha, args.n_agents, args.n_classes)  # kind == "ub"


def _estimators(names, gamma, n_runs, seed):
    from . import EqualFilling, Greedy, HybridRanking, Ranking, ThresholdEqualFilling, WaterFilling

    table = {
        "tef": lambda: ThresholdEqualFilling(gamma=gamma),
        "equal-filling": EqualFilling,
        "water-filling": WaterFilling,
        "hybrid": lambda: HybridRanking(gamma=gamma, random_state=seed),
        "ranking": lambda: Ranking(random_state=seed),
        "greedy": lambda: Greedy(random_state=seed),
    }
    return [(n, table[n]()) for n in names]


def run(args):
    from theory.fair_matching import cef_lower_bound, nonwasteful_usw_lower_bound, usw_lower_bound

    from .._io import check_output_path
    from .._validation import check_scalar_int, validate_params
    from ._divisible import ThresholdEqualFilling
    from ._evaluate import evaluate
    from .metrics import opt_matching_size

    validate_params(ThresholdEqualFilling(gamma=args.gamma))  # --gamma: the estimators' own rule
    gamma = float(args.gamma)
    # --n-runs is the number of runs of the evaluation (no estimator parameter): at least 2 for a standard error
    n_runs = check_scalar_int(args.n_runs, "n-runs", low=2)
    names = list(ALGORITHMS) if args.algorithm == "all" else [a.strip() for a in args.algorithm.split(",")]
    bad = [a for a in names if a not in ALGORITHMS]
    if bad:
        raise ValueError(f"'algorithm' must be a subset of {{{', '.join(ALGORITHMS)}}} or 'all'; got {bad[0]!r}.")
    if args.save_instance:
        check_output_path(args.save_instance, "--save-instance")  # before the instance is built
    inst = _load_instance(args)
    if args.save_instance:
        inst.to_json(args.save_instance)
    guarantees = {
        "tef": (usw_lower_bound(gamma), cef_lower_bound(gamma)),
        # EQUAL-FILLING is gamma = 1, water-filling gamma = 0 (1 - 1/e); RANKING is HybridRanking at
        # gamma = 0 (KVV's 1 - 1/e); greedy is any non-wasteful allocation (1/2)
        "equal-filling": (usw_lower_bound(1.0), cef_lower_bound(1.0)),
        "water-filling": (usw_lower_bound(0.0), np.nan),
        "hybrid": (usw_lower_bound(gamma), cef_lower_bound(gamma, divisible=False)),
        "ranking": (usw_lower_bound(0.0), np.nan),
        "greedy": (nonwasteful_usw_lower_bound(), np.nan),
    }
    rows = []
    for name, est in _estimators(names, gamma, n_runs, args.seed):
        res = evaluate(est, inst, n_runs=n_runs, random_state=args.seed)["per_instance"][0]
        g_usw, g_cef = guarantees[name]
        rows.append({
            "algorithm": name,
            "usw_ratio": res["usw_ratio"],
            "usw_se": res["usw_se"],
            "cef_ratio": res["cef_ratio"],
            "cef_ex_post": res["cef_ex_post"],
            "cprop_ratio": res["cprop_ratio"],
            "non_wasteful": bool(res["non_wasteful"]),
            "usw_guarantee": float(g_usw),
            "cef_guarantee": None if np.isnan(g_cef) else float(g_cef),
        })
    info = {"instance": args.instance, "n_agents": inst.n_agents, "n_items": inst.n_items,
            "n_classes": inst.n_classes, "n_edges": inst.n_edges, "opt": int(opt_matching_size(inst)),
            "gamma": gamma, "n_runs": n_runs}
    if args.json:
        print_json({"instance": info, "results": rows})
        return 0
    print(f"instance {args.instance}: {inst.n_agents} agents in {inst.n_classes} classes, {inst.n_items} items, "
          f"{inst.n_edges} edges, OPT = {info['opt']}; gamma = {gamma:g}; randomised: ex ante over {n_runs} runs")
    head = (f"{'algorithm':<14} {'USW/OPT':>8} {'>= bound':>9} {'CEF':>7} {'>= bound':>9} {'CEF ex-post':>11} "
            f"{'CPROP':>7} {'non-wasteful':>12}")
    def line(r):
        cg = "-" if r["cef_guarantee"] is None else f"{r['cef_guarantee']:.4f}"
        return (f"{r['algorithm']:<14} {r['usw_ratio']:>8.4f} {r['usw_guarantee']:>9.4f} {r['cef_ratio']:>7.4f} "
                f"{cg:>9} "
                f"{r['cef_ex_post']:>11.4f} {r['cprop_ratio']:>7.4f} {str(r['non_wasteful']):>12}")

    print_table(head, map(line, rows))
    return 0
