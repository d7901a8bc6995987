"""Reading large Cassandra ``.POMDP`` files: the sparse and the dense reader, process CPU of the read and the
peak RSS of a child process above the interpreter with the package imported (Linux: ``/proc/self/clear_refs``).

    python benchmarks/pomdp_sparse_reader.py [--quick]

Prints a markdown table. One thread (``OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1``), the default read budget.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r'''
import sys, time
from algos.pomdp.io._parser import read_pomdp
def vm(k):
    return next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith(k)) / 1024
open("/proc/self/clear_refs", "w").write("5")
base = vm("VmRSS"); t = time.process_time()
m = read_pomdp(sys.argv[1], engine=sys.argv[2])
print(f"{time.process_time() - t:.2f} {vm('VmHWM') - base:.0f} {m.is_sparse}")
'''


def model(S, form):
    """A two-action model of ``S`` states: ``T: * identity`` or one line per transition (a ring)."""
    head = ["discount: 0.95", "values: reward", f"states: {S}", "actions: 2", "observations: 2"]
    if form == "identity":
        body = ["T: * identity", "O: * : * : 0 1.0", "R: * : * : * : * -1", f"R: 1 : {S - 1} : * : * 10"]
    else:
        body = [f"T: {a} : {s} : {(s + 1 + a) % S} 0.9\nT: {a} : {s} : {s} 0.1" for a in range(2) for s in range(S)]
        body += ["O: * : * : 0 0.5", "O: * : * : 1 0.5", "R: * : * : * : * -1"]
    return "\n".join(head + body) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small models only")
    args = ap.parse_args(argv)
    cases = [(20_000, "identity"), (2_000, "lines")] if args.quick else [
        (200_000, "identity"), (20_000, "lines"), (100_000, "lines"), (2_000, "identity")]
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    print("| S | T entries | file MiB | engine | read CPU s | peak RSS over imports MB | T stored sparse |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for S, form in cases:
            path = os.path.join(d, f"{form}-{S}.POMDP")
            with open(path, "w") as fh:
                fh.write(model(S, form))
            size = os.path.getsize(path) / 2**20
            for engine in ("sparse", "dense"):
                p = subprocess.run([sys.executable, "-c", CHILD, path, engine], capture_output=True, text=True,
                                   env=env, cwd=ROOT)
                out = p.stdout.split() if p.returncode == 0 else [
                    "refused", "-", p.stderr.strip().splitlines()[-1].split(": ", 2)[-1][:70]]
                print("| " + " | ".join(str(x) for x in (S, form, f"{size:.2f}", engine, *out)) + " |")


if __name__ == "__main__":
    main()
