"""The ``algos`` command line: ``algos demo`` and one subcommand per module.

Every module registers two hooks, imported lazily so that ``algos --help`` stays fast:

* ``algos.<module>._cli``: ``add_parser(subparsers)`` and ``run(args) -> int``;
* ``algos.<module>._demo``: ``run_demo(out_dir, quick, random_state) -> DemoSection``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

from . import __version__

# (subcommand name, module folder); each module issue adds its line
SUBCOMMANDS = [
    ("matching", "fair_matching"),
    ("hetero", "hetero_regression"),
    ("dag", "networked_learning"),
    ("pomdp", "pomdp"),
    ("circle", "continual"),
    ("potara", "federated"),
    ("lgcp", "point_process"),
]
DEMOS = [m for _, m in SUBCOMMANDS]


def _build_parser():
    parser = argparse.ArgumentParser(
        prog="algos",
        description="Seven recent theory papers as tested, fast software. "
        "Run `algos demo` for a report on every module, or `algos <module> --help`.",
    )
    parser.add_argument("--version", action="version", version=f"algos {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="run every module on built-in data and write a report")
    demo.add_argument("--out", default="algos-report", help="output folder (default: %(default)s)")
    demo.add_argument("--quick", action="store_true", help="small sizes (about a minute in all)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    demo.add_argument(
        "--modules",
        default=",".join(DEMOS),
        help="comma-separated modules to run (default: all: %(default)s)",
    )
    demo.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
    for name, module in SUBCOMMANDS:
        importlib.import_module(f"algos.{module}._cli").add_parser(sub, name)
    return parser


def _run_demo(args):
    import matplotlib

    matplotlib.use("Agg")
    from ._report import write_report

    modules = [m.strip() for m in args.modules.split(",") if m.strip()]
    unknown = [m for m in modules if m not in DEMOS]
    if unknown:
        raise SystemExit(f"algos demo: error: unknown module {unknown[0]!r}; choose from {', '.join(DEMOS)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sections = []
    for module in modules:
        t0 = time.perf_counter()
        demo = importlib.import_module(f"algos.{module}._demo")
        section = demo.run_demo(out, quick=args.quick, random_state=args.seed)
        section.seconds = time.perf_counter() - t0
        sections.append(section)
        if not args.json:
            status = "all guarantees hold" if section.passed else "SOME GUARANTEE FAILED"
            print(f"[{module}] {len(section.checks)} checks, {status} ({section.seconds:.1f} s)")
    header = f"algos {__version__}; seed {args.seed}; {'quick' if args.quick else 'full'} mode."
    path = write_report(sections, out, header=header)
    ok = all(s.passed for s in sections)
    if args.json:
        print(json.dumps({
            "report": str(path),
            "passed": ok,
            "sections": [
                {"module": s.module, "passed": s.passed, "seconds": round(s.seconds, 2),
                 "checks": [{"name": c.name, "measured": c.measured, "guarantee": c.guarantee,
                             "relation": c.relation, "passed": c.passed} for c in s.checks]}
                for s in sections
            ],
        }, indent=2))
    else:
        print(f"report written to {path}")
    return 0 if ok else 1


def main(argv=None):
    """Entry point of the ``algos`` console script."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "demo":
        return _run_demo(args)
    try:
        return args.func(args)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        print(f"algos {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
