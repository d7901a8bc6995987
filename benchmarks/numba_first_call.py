"""First-call cost of each module's numba kernels: an empty cache, then a warm one.

For every module a fresh Python process imports the package and runs the module's small fit
(``algos._numba_workload.run``) twice in a row on one cache folder: the first process finds the
cache empty (it compiles everything and writes the cacheable kernels), the second finds it filled
(it loads the cached kernels and compiles only what is never cached: the ``parallel=True`` kernels,
what they call and what calls them). The figure is the child's process CPU time for the fit, import
excluded; the fit itself takes well under a second once compiled (column "compiled").

    python benchmarks/numba_first_call.py                 # every module, median of 1
    python benchmarks/numba_first_call.py --repeat 3 --modules point_process,continual
    python benchmarks/numba_first_call.py --path parallel   # the small fits forced onto the parallel kernels

On small inputs the package runs the cached serial twins of its row-wise parallel kernels
(``algos._parallel``); ``--path parallel`` measures the parallel kernels' compilation instead.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import environment, make_parser, print_table  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CHILD = (
    "import time, warnings\n"
    "warnings.simplefilter('ignore')\n"
    "from algos import _numba_workload as w\n"
    "t = time.process_time(); w.run({m!r}, ({p!r},)); a = time.process_time() - t\n"
    "t = time.process_time(); w.run({m!r}, ({p!r},)); b = time.process_time() - t\n"
    "print(a, b)\n"
)


def _child(module, cache_dir, path):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", CHILD.format(m=module, p=path)], env=env, cwd=REPO, check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[-2]), float(out[-1])


def main(argv=None):
    from algos._numba_workload import MODULES

    parser = make_parser(__doc__.splitlines()[0], ())
    parser.add_argument("--modules", default=",".join(MODULES), help="comma-separated modules")
    parser.add_argument("--path", choices=("twins", "parallel"), default="twins",
                        help="the small fit as a user runs it (the cached serial twins of the parallel kernels, "
                             "default) or forced onto the parallel kernels")
    args = parser.parse_args(argv)
    repeat = args.repeat or 1
    rows = []
    for module in args.modules.split(","):
        cold, warm, compiled = [], [], []
        for _ in range(repeat):
            with tempfile.TemporaryDirectory() as cache:
                first, _ = _child(module, cache, args.path)
                second, again = _child(module, cache, args.path)
            cold.append(first)
            warm.append(second)
            compiled.append(again)
        rows.append([module, f"{statistics.median(cold):.2f}", f"{statistics.median(warm):.2f}",
                     f"{statistics.median(compiled):.2f}"])
    print(environment())
    print_table(f"First call of each module's small fit, CPU s (median of {repeat})",
                ["module", "empty cache", "warm cache", "compiled (2nd call)"], rows)


if __name__ == "__main__":
    main()
