"""The ``algos`` command line: ``algos demo`` and one subcommand per module.

Every module registers two hooks, imported lazily so that ``algos --version`` and ``algos --help``
import none of the modules (no numpy, numba or torch):

* ``algos.<module>._cli``: ``add_parser(subparsers, name)`` and ``run(args) -> int``;
* ``algos.<module>._demo``: ``run_demo(out_dir, quick, random_state) -> DemoSection``.

Only the subcommand named on the command line gets its real parser; the others are listed from the
static table :data:`SUBCOMMANDS`.

Exit codes: 0 success; 1 a guarantee failed, a demo section failed, or an unexpected error; 2 a
usage error or bad input (one line on stderr, never a traceback; set ``ALGOS_DEBUG=1`` to see it).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from pathlib import Path

from . import __version__

# (subcommand name, module folder, one-line help); the help is static so that `algos --help` imports
# no module. Each module's own parser repeats (and may extend) it.
SUBCOMMANDS = [
    ("matching", "fair_matching", "online class-fair matching (threshold equal-filling, HybridRanking, baselines)"),
    ("hetero", "hetero_regression", "regression under heteroskedastic noise (subset-of-signals model)"),
    ("dag", "networked_learning", "networked learning on a DAG of agents (full messages or shared sketches)"),
    ("pomdp", "pomdp", "finite-memory POMDP controllers from belief codebooks (RECAP)"),
    ("circle", "continual", "class-incremental learning with reservoir features and streaming LDA (CIRCLE)"),
    ("potara", "federated", "federated personalisation by merging federated and local models (Potara)"),
    ("lgcp", "point_process", "log-Gaussian Cox process intensity (VoGCAM) and second-order summaries"),
]
DEMOS = [m for _, m, _ in SUBCOMMANDS]

SEED_HELP = "random seed, a non-negative int (default: %(default)s)"
COMPILE_NOTE = (
    "note: the first run compiles and caches numba kernels (a minute or more); later runs start faster."
)

#: Exit codes.
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def command_parser(subparsers, name, *, description, epilog=None):
    """The parser of one module subcommand, for its ``add_parser`` hook.

    Its one-line help is the static one of :data:`SUBCOMMANDS` (so ``algos --help`` and the module agree);
    ``description`` and ``epilog`` are printed as written (line breaks kept).
    """
    help_text = next(h for n, _, h in SUBCOMMANDS if n == name)
    return subparsers.add_parser(name, help=help_text, description=description, epilog=epilog,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)


ENGINE_BACKENDS = ("sequential", "loky", "threading", "dask", "ray")


def add_engine_options(parser, what):
    """``--backend``, ``--scheduler`` and ``--n-jobs`` for a subcommand whose repeated work (``what``)
    runs through :mod:`algos.experiments`; :func:`engine_options` turns them into keyword arguments."""
    group = parser.add_argument_group("where the repeated work runs")
    group.add_argument("--backend", choices=ENGINE_BACKENDS, default="sequential",
                       help=f"{what}: this process in order (sequential, the default), local processes (loky) "
                            "or threads, or a Dask / Ray cluster; the results are identical whatever runs them")
    group.add_argument("--scheduler", default=None,
                       help="dask: the scheduler's address (tcp://host:8786); ray: ray://host:10001, 'auto' or "
                            "'local' (a Ray session started for the command). Required with dask/ray.")
    group.add_argument("--n-jobs", type=int, default=None,
                       help="parallel jobs of loky/threading (default 2); with dask/ray every worker is used")


def engine_options(args):
    """``{"backend", "n_jobs", "scheduler"}`` from the options of :func:`add_engine_options`, checked."""
    backend, scheduler, n_jobs = args.backend, args.scheduler, args.n_jobs
    if backend in ("dask", "ray"):
        if scheduler is None:
            raise ValueError(f"'--scheduler' is required with --backend {backend} (a command starts no cluster of "
                             "its own): pass the address, e.g. tcp://host:8786 for dask, or 'local' for a Ray "
                             "session on this machine.")
        if n_jobs is not None:
            raise ValueError(f"'--n-jobs' is for the local backends; --backend {backend} uses every worker.")
        return {"backend": backend, "n_jobs": 1, "scheduler": scheduler}
    if scheduler is not None:
        raise ValueError(f"'--scheduler' is only used with --backend dask or ray; got --backend {backend}.")
    if n_jobs is not None and (n_jobs == 0 or n_jobs < -1):
        raise ValueError(f"'--n-jobs' must be a positive int or -1 (every core); got {n_jobs}.")
    return {"backend": backend, "n_jobs": 1 if backend == "sequential" else (n_jobs or 2), "scheduler": None}


def print_json(payload, **kwargs):
    """Print ``payload`` as indented JSON on stdout (``kwargs`` go to :func:`json.dumps`)."""
    print(json.dumps(payload, indent=2, **kwargs))


def print_table(head, lines):
    """Print a text table: the ``head`` line, a rule as wide as it, then ``lines``."""
    print(head)
    print("-" * len(head))
    for line in lines:
        print(line)


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line on stderr (exit code 2).

    An error about the arguments of a subcommand points to that subcommand's help, and an unknown
    option close to a real one gets a suggestion (``--memroy``: did you mean ``--memory``?).
    """

    #: The subcommand's parser, set on the top-level parser once the subcommand is known.
    command_parser = None

    def error(self, message):
        target = self.command_parser if self.command_parser is not None else self
        hint = _suggestion(message, target)
        self.exit(EXIT_USAGE, f"{target.prog}: error: {message}{hint} (see '{target.prog} --help')\n")


def _suggestion(message, parser):
    """'; did you mean --x?' for the first unrecognised option of ``message`` close to an option of ``parser``."""
    import difflib

    prefix = "unrecognized arguments:"
    if not message.startswith(prefix):
        return ""
    known = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    for token in message[len(prefix):].split():
        if token.startswith("-"):
            close = difflib.get_close_matches(token.split("=", 1)[0], known, n=1, cutoff=0.6)
            if close:
                return f"; did you mean {close[0]}?"
    return ""


def _seed(text):
    """argparse type of ``--seed``: a non-negative int."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'seed' must be a non-negative int; got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"'seed' must be a non-negative int; got {value}")
    return value


def _modules_list(text):
    """argparse type of ``demo --modules``: comma-separated names from :data:`DEMOS`."""
    modules = [m.strip() for m in text.split(",") if m.strip()]
    if not modules:
        raise argparse.ArgumentTypeError(f"'modules' must name at least one of {', '.join(DEMOS)}; got {text!r}")
    for m in modules:
        if m not in DEMOS:
            raise argparse.ArgumentTypeError(f"unknown module {m!r}; choose from {', '.join(DEMOS)}")
    return modules


def _command_of(argv):
    """The subcommand named in ``argv`` (the first token that is not an option), or None."""
    for token in argv:
        if token == "--":
            return None
        if not token.startswith("-"):
            return token
    return None


def _normalise_seed_options(parser):
    """Give every ``--seed`` of a module parser help text and the non-negative int type."""
    for action in parser._actions:
        if "--seed" in action.option_strings:
            if not action.help:
                action.help = SEED_HELP
            if action.type is int:
                action.type = _seed


def _build_parser(argv=()):
    """The ``algos`` parser; only the module subcommand named in ``argv`` is built for real."""
    parser = _Parser(
        prog="algos",
        description="Seven recent theory papers as tested, fast software. "
        "Run `algos demo` for a report on every module, or `algos <command> --help`.",
        epilog="exit codes: 0 success, 1 a guarantee or a demo section failed, 2 usage error or bad input.",
    )
    parser.add_argument("--version", action="version", version=f"algos {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    demo = sub.add_parser("demo", help="run every module on built-in data and write a report",
                          description="Run every module on built-in data and write report.md (and figures) "
                          "into --out. " + COMPILE_NOTE)
    demo.add_argument("--out", default="algos-report", help="output folder (default: %(default)s)")
    demo.add_argument("--quick", action="store_true", help="small sizes (about a minute in all)")
    demo.add_argument("--seed", type=_seed, default=0, help=SEED_HELP)
    demo.add_argument(
        "--modules",
        type=_modules_list,
        default=list(DEMOS),
        help=f"comma-separated modules to run (default: all: {','.join(DEMOS)})",
    )
    demo.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
    wanted = _command_of(list(argv))
    if wanted == "demo":
        parser.command_parser = demo
    for name, module, help_text in SUBCOMMANDS:
        if name == wanted:
            importlib.import_module(f"algos.{module}._cli").add_parser(sub, name)
            _normalise_seed_options(sub.choices[name])
            parser.command_parser = sub.choices[name]
        else:
            sub.add_parser(name, help=help_text, add_help=False)
    return parser


def _error_line(exc):
    """``exc`` as one line: its message with newlines folded; a missing file as ``no such file: X``."""
    if isinstance(exc, FileNotFoundError) and exc.filename is not None:
        own = exc.strerror or ""
        text = own if own.startswith("no such file") else f"no such file: {exc.filename}"
    else:
        text = str(exc)
    text = " ".join(text.split())
    return text or type(exc).__name__


def _failed_section(module, exc):
    from ._report import DemoSection

    return DemoSection(module=module, title=f"{module} (section failed)",
                       body=f"The section stopped before its checks were complete; "
                       f"`ALGOS_DEBUG=1 algos demo --modules {module}` shows the traceback.",
                       error=f"{type(exc).__name__}: {_error_line(exc)}")


def _run_demo(args):
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"'out' must be a folder; {str(out)!r} exists and is a file.")
    from ._io import check_output_dir

    check_output_dir(out, "--out")  # a folder that cannot be created or written is reported before any work
    import matplotlib

    matplotlib.use("Agg")
    from ._report import write_report

    out.mkdir(parents=True, exist_ok=True)
    log = sys.stderr if args.json else sys.stdout
    header = f"algos {__version__}; seed {args.seed}; {'quick' if args.quick else 'full'} mode."
    print(COMPILE_NOTE, file=log, flush=True)
    sections = []
    path = None
    for i, module in enumerate(args.modules, 1):
        print(f"[{module}] section {i}/{len(args.modules)} started", file=log, flush=True)
        t0 = time.perf_counter()
        try:
            demo = importlib.import_module(f"algos.{module}._demo")
            section = demo.run_demo(out, quick=args.quick, random_state=args.seed)
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # a failing section is reported and the run goes on
            if os.environ.get("ALGOS_DEBUG"):
                raise
            section = _failed_section(module, exc)
        section.seconds = time.perf_counter() - t0
        sections.append(section)
        if section.error:
            status = f"SECTION FAILED: {section.error}"
        else:
            status = "all guarantees hold" if section.passed else "SOME GUARANTEE FAILED"
        print(f"[{module}] {len(section.checks)} checks, {status} ({section.seconds:.1f} s)", file=log, flush=True)
        # written after every section: a later failure or an interrupt keeps what is done
        path = write_report(sections, out, header=header)
    ok = all(s.passed for s in sections)
    if args.json:
        print(json.dumps({
            "report": str(path),
            "passed": ok,
            # per check: name, kind, measured, guarantee, relation, tol, trivial, tightness, vacuous,
            # passed, status, source (DemoSection.to_dict)
            "sections": [s.to_dict() for s in sections],
        }, indent=2))
    else:
        html = Path(path).with_name("report.html")
        print(f"report written to {path}")
        if html.is_file():
            print(f"open {html} in a browser (one self-contained file)")
    return EXIT_OK if ok else EXIT_FAILED


def main(argv=None):
    """Entry point of the ``algos`` console script; returns the exit code.

    Every error ends as one line on stderr: bad input, a missing file or a missing optional extra
    exit with 2, an unexpected error with 1 (``ALGOS_DEBUG=1`` re-raises it with its traceback).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command_of(argv) or "algos"
    prog = "algos" if command == "algos" else f"algos {command}"
    try:
        parser = _build_parser(argv)
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_OK
        if args.command == "demo":
            return _run_demo(args)
        return args.func(args)
    except SystemExit as exc:  # argparse (usage error: 2, --help/--version: 0) or a module's exit
        code = exc.code
        if code is None or isinstance(code, int):
            return 0 if code is None else code
        print(f"{prog}: error: {_error_line(code)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except ImportError as exc:  # a missing optional extra: the message says what to install
        if os.environ.get("ALGOS_DEBUG"):
            raise
        print(f"{prog}: error: {_error_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, TypeError, OSError) as exc:
        if os.environ.get("ALGOS_DEBUG"):
            raise
        print(f"{prog}: error: {_error_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - never a traceback in front of the user
        if os.environ.get("ALGOS_DEBUG"):
            raise
        print(f"{prog}: internal error: {type(exc).__name__}: {_error_line(exc)} "
              "(set ALGOS_DEBUG=1 for the traceback)", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
