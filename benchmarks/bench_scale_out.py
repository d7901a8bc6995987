"""The ``scale_out`` benchmark section: every module's fit past one process, next to its in-process fit.

Each section is one script, run here in its own process (each starts and stops its own engine: a
``distributed.LocalCluster`` of 2 workers x 1 thread, or Flower's simulation runtime on 2 Ray CPUs):

* ``hetero_regression``: ``HuberSoSRegressor.fit`` on a lazily generated row-chunked Dask array;
* ``continual``: exact streaming LDA fitted block by block on the workers and tree-merged;
* ``networked_learning``: the 50-agent DAG as Dask tasks, with the bytes each message costs;
* ``federated``: the Flower App with 1,000 virtual SuperNodes.

    python benchmarks/bench_scale_out.py                      # every section, full sizes
    python benchmarks/bench_scale_out.py --quick              # small sizes
    python benchmarks/bench_scale_out.py --sections continual,federated
    python benchmarks/scale_out_hetero_regression.py --help   # one section's own options

Tables and the figures measured on the development machine are in docs/scaling.md.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECTIONS = ("hetero_regression", "continual", "networked_learning", "federated")


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="each section's small sizes")
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"comma-separated subset of {','.join(SECTIONS)} (default: all)")
    args = parser.parse_args(argv)
    chosen = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in SECTIONS]
    if unknown:
        raise SystemExit(f"--sections: unknown section {unknown[0]!r}; choose from {','.join(SECTIONS)}.")
    failed = []
    for section in chosen:
        print(f"\n## scale_out: {section}\n", flush=True)
        cmd = [sys.executable, str(HERE / f"scale_out_{section}.py")] + (["--quick"] if args.quick else [])
        if subprocess.run(cmd, cwd=HERE.parent).returncode != 0:
            failed.append(section)
    if failed:
        raise SystemExit(f"scale_out: section(s) failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
