"""Small helpers shared by the ``benchmarks/bench_<module>.py`` scripts.

* :func:`timeit_median` runs a callable several times and returns the median wall time (and the
  last result, so the quality check does not need another run);
* :func:`markdown_table` / :func:`print_table` print the side-by-side tables of DESIGN.md section 8;
* :func:`make_parser` builds the common command line (``--quick``, ``--repeat``, ``--sections``);
* :func:`environment` describes the machine, to print above the tables;
* :func:`add_cluster_options` / :func:`sweep_options` add ``--backend dask|ray --scheduler ADDRESS``
  to a benchmark whose Monte-Carlo grid runs through :func:`algos.experiments.run_sweep` /
  :func:`~algos.experiments.monte_carlo`, and turn them into those functions' keyword arguments;
  :func:`describe_sweep` says in one line where the grid runs.

Benchmarks are scripts, not tests: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from typing import Any, Callable, NamedTuple, Sequence

__all__ = [
    "Timing",
    "timeit_median",
    "fmt_s",
    "fmt_ratio",
    "fmt_us",
    "markdown_table",
    "print_table",
    "make_parser",
    "selected_sections",
    "environment",
    "add_cluster_options",
    "sweep_options",
    "describe_sweep",
    "ship_by_value",
]


class Timing(NamedTuple):
    """Result of :func:`timeit_median`.

    Attributes
    ----------
    median : float
        Median wall time in seconds.
    times : tuple of float
        Every measured run, in order.
    result : object
        What the last call returned.
    """

    median: float
    times: tuple
    result: Any


def timeit_median(fn: Callable[[], Any], repeat: int = 5, *, warmup: int = 0,
                  budget_s: float | None = None) -> Timing:
    """Call ``fn()`` ``warmup`` times untimed, then ``repeat`` times timed; return the median.

    As in :mod:`timeit`, the garbage collector is collected before and disabled during each timed
    call, so a collection triggered by earlier work does not land in the measurement.

    Parameters
    ----------
    fn : callable
        Takes no argument.
    repeat : int >= 1, default=5
    warmup : int >= 0, default=0
        Untimed calls first (JIT compilation, caches).
    budget_s : float, optional
        Stop repeating once the timed calls have used this many seconds (at least one call is
        always made); ``len(result.times)`` then tells how many runs the median is over.

    Returns
    -------
    Timing
        ``(median, times, result)``.
    """
    if repeat < 1:
        raise ValueError(f"'repeat' must be an int >= 1; got {repeat!r}.")
    for _ in range(warmup):
        fn()
    times = []
    result = None
    gc_was_enabled = gc.isenabled()
    try:
        for _ in range(repeat):
            gc.collect()
            gc.disable()
            t0 = time.perf_counter()
            result = fn()
            times.append(time.perf_counter() - t0)
            if gc_was_enabled:
                gc.enable()
            if budget_s is not None and sum(times) >= budget_s:
                break
    finally:
        if gc_was_enabled:
            gc.enable()
    return Timing(statistics.median(times), tuple(times), result)


def fmt_s(seconds: float) -> str:
    """Seconds with 3 significant digits (``0.0123``, ``1.58``, ``12.3``)."""
    if seconds != seconds:  # NaN
        return "n/a"
    if seconds >= 100:
        return f"{seconds:.0f}"
    return f"{seconds:.3g}"


def fmt_us(seconds: float, n: int) -> str:
    """Microseconds per unit: ``seconds / n`` in µs, 3 significant digits."""
    return f"{1e6 * seconds / n:.3g}"


def fmt_ratio(anchor: float, ours: float) -> str:
    """``anchor / ours`` as ``12.3x`` (``> 1`` means ours is faster)."""
    if ours <= 0 or anchor != anchor or ours != ours:
        return "n/a"
    r = anchor / ours
    return f"{r:.0f}x" if r >= 100 else f"{r:.3g}x"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured markdown table; cells are ``str()``-ed (``|`` escaped) and padded to align."""

    def cell(c):
        return str(c).replace("|", "\\|")

    cells = [[cell(h) for h in headers]] + [[cell(c) for c in row] for row in rows]
    for r in cells[1:]:
        if len(r) != len(headers):
            raise ValueError(f"every row must have {len(headers)} cells; got {len(r)}: {r!r}")
    width = [max(len(r[j]) for r in cells) for j in range(len(headers))]

    def line(r):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(r, width)) + " |"

    out = [line(cells[0]), "|" + "|".join("-" * (w + 2) for w in width) + "|"]
    out.extend(line(r) for r in cells[1:])
    return "\n".join(out)


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]],
                notes: Sequence[str] = ()) -> None:
    """Print ``### title``, the markdown table and one line per note (then a blank line)."""
    print(f"### {title}\n")
    print(markdown_table(headers, rows))
    if notes:
        print()
        for n in notes:
            print(f"* {n}")
    print(flush=True)


def make_parser(description: str, sections: Sequence[str]) -> argparse.ArgumentParser:
    """The common command line: ``--quick``, ``--repeat N``, ``--sections a,b,...``.

    ``--repeat`` defaults to ``None``; use ``args.repeat or (2 if args.quick else 5)``.
    """
    p = argparse.ArgumentParser(description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke run of a few seconds)")
    p.add_argument("--repeat", type=int, default=None,
                   help="timed repeats per measurement; the median is quoted (default 5, --quick 2)")
    p.add_argument("--sections", default=",".join(sections),
                   help=f"comma-separated subset of {','.join(sections)} (default: all)")
    return p


def selected_sections(args: argparse.Namespace, sections: Sequence[str]) -> list:
    """Validate ``args.sections`` against ``sections`` and return the chosen ones, in order."""
    chosen = [s.strip() for s in args.sections.split(",") if s.strip()]
    bad = [s for s in chosen if s not in sections]
    if bad:
        raise SystemExit(f"--sections: unknown section {bad[0]!r}; choose from {','.join(sections)}.")
    return [s for s in sections if s in chosen]


def environment(extra: Sequence[str] = ()) -> str:
    """One line describing the interpreter, numpy/scipy/numba versions and the CPU count."""
    parts = [f"python {platform.python_version()}"]
    for mod in ("numpy", "scipy", "numba", "networkx"):
        m = sys.modules.get(mod)
        if m is not None:
            parts.append(f"{mod} {m.__version__}")
    try:
        ncpu = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        ncpu = os.cpu_count()
    parts.append(f"{ncpu} CPUs")
    if hasattr(os, "getloadavg"):
        parts.append("load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    numba = sys.modules.get("numba")
    if numba is not None:
        parts.append(f"numba threads {numba.get_num_threads()}")
    parts.extend(extra)
    return ", ".join(parts) + f"; {platform.platform()}"


def add_cluster_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``--backend``, ``--scheduler`` and ``--n-jobs`` for grids run by ``run_sweep``/``monte_carlo``.

    ``--backend`` is a joblib backend (default ``sequential``: every task in this process, in grid
    order) or a cluster engine, ``dask`` or ``ray``; ``--scheduler`` is the cluster's address (dask
    ``tcp://host:8786``; ray ``ray://host:10001``, ``auto`` or ``local``). See ``docs/scaling.md``.
    Returns ``parser``.
    """
    parser.add_argument("--backend", default="sequential",
                        help="where the Monte-Carlo grid runs: sequential (this process, default), loky "
                             "or threading (local, with --n-jobs N), dask or ray (a cluster)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="with --backend dask|ray: the cluster address (tcp://host:8786; "
                             "ray://host:10001, auto or local)")
    parser.add_argument("--n-jobs", type=int, default=1,
                        help="parallel jobs of the grid (with dask/ray, 1 means every worker)")
    return parser


def sweep_options(args: argparse.Namespace) -> dict:
    """``{"backend", "scheduler", "n_jobs"}`` for ``run_sweep``/``monte_carlo`` from the parsed options.

    Refuses ``--scheduler`` without a cluster backend and ``--n-jobs`` other than 1 with
    ``--backend sequential`` (``SystemExit`` with the reason, not a traceback). With a process or
    cluster backend it calls :func:`ship_by_value`, so the workers need no copy of ``benchmarks/``.
    """
    backend = getattr(args, "backend", "sequential")
    scheduler = getattr(args, "scheduler", None)
    n_jobs = getattr(args, "n_jobs", 1)
    if scheduler is not None and backend not in ("dask", "ray"):
        raise SystemExit(f"--scheduler needs --backend dask or ray; got --backend {backend}.")
    if backend == "sequential" and n_jobs != 1:
        raise SystemExit(f"--n-jobs {n_jobs} needs a parallel --backend (loky, threading, dask or ray); "
                         "got --backend sequential.")
    if backend not in ("sequential", "threading"):
        ship_by_value(backend)
    return {"backend": backend, "scheduler": scheduler, "n_jobs": n_jobs}


def ship_by_value(backend: str) -> None:
    """Have this module's functions pickled by value for the workers of ``backend``.

    A benchmark run as a script defines its cell functions in ``__main__``, which cloudpickle sends
    by value; the helpers they call from this module (:func:`timeit_median`, ...) would go by
    reference, and a worker (or the dask scheduler, which unpickles the task graph) that has no
    ``benchmarks/`` on its path could not import them. Registering this module with every
    cloudpickle in use (the ``cloudpickle`` package for dask, joblib's copy for loky, Ray's copy for
    ray) sends it along with the tasks instead.
    """
    module = sys.modules[__name__]
    picklers = []
    try:
        import cloudpickle

        picklers.append(cloudpickle)
    except ImportError:  # pragma: no cover - dask/ray bring it
        pass
    try:
        from joblib.externals import cloudpickle as joblib_cloudpickle

        picklers.append(joblib_cloudpickle)
    except ImportError:  # pragma: no cover - joblib is a dependency
        pass
    if backend == "ray":
        try:
            import ray.cloudpickle

            picklers.append(ray.cloudpickle)
        except ImportError:  # run_sweep says how to install ray
            pass
    for pickler in picklers:
        if hasattr(pickler, "register_pickle_by_value"):
            try:
                pickler.register_pickle_by_value(module)
            except ValueError:  # pragma: no cover - module not importable by name
                pass


def describe_sweep(options: dict) -> str:
    """One line for the report: where the grid of ``options`` (from :func:`sweep_options`) runs."""
    backend, scheduler, n_jobs = options["backend"], options.get("scheduler"), options.get("n_jobs", 1)
    if backend == "sequential":
        return "sequential, in this process"
    if backend in ("dask", "ray"):
        if scheduler == "local":
            where = "a Ray session started on this machine for the run"
        elif scheduler:
            where = f"the cluster at {scheduler}"
        else:
            where = "the running client" if backend == "dask" else "the running Ray session"
        jobs = "every worker" if n_jobs in (None, 1, -1) else f"{n_jobs} jobs"
        return f"{backend}, {where}, {jobs}"
    return f"joblib backend {backend}, n_jobs {n_jobs}"
