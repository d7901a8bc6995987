"""Anytime profile of PointBasedSolver against SARSOP: bounds and peak memory at fixed CPU checkpoints.

For each model (SARSOP's own POMDPX files) one run of each tool with a CPU budget equal to the last
checkpoint, in a fresh child process on one thread; the table gives, at 1, 2, 5, 10, 20, 30 and 60
CPU-s of solving, the lower bound ``L(b0)``, the upper bound ``U(b0)`` and the peak RSS reached so far.

* Ours: ``PointBasedSolver(clock="cpu").history_`` (the bounds a stop at that checkpoint returns; the
  clock starts with ``fit``, after the file is read). SARSOP: the last row of its progress table at or
  before the checkpoint (its clock starts after loading).
* Peak RSS so far: the parent samples the child's ``VmHWM`` and CPU time (``/proc/<pid>``) every
  50 ms; the figure at a checkpoint is the high-water mark at the last sample whose child CPU is at most
  the checkpoint plus the child's CPU before its solving clock started (ours: interpreter, imports,
  numba cache and file; SARSOP: its printed loading time). The "end" column is ``ru_maxrss`` of the
  whole child (``os.wait4``).

Usage::

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/anytime_pomdp.py --sarsop /tmp/sarsop/src/pomdpsol
    python benchmarks/anytime_pomdp.py --quick --sarsop /tmp/sarsop/src/pomdpsol      # checkpoints up to 10 s

A model's file is looked up in ``--pomdpx-dir`` (e.g. SARSOP's ``examples/POMDPX``) first, then in the
project's data folder ``<data>/pomdpx``; a model whose file is in neither is skipped with a note.

RockSample(11, 11) (SARSOP's file; its size needs a larger read budget)::

    ALGOS_READ_BUDGET_MB=4000 OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/anytime_pomdp.py \
        --sarsop /tmp/sarsop/src/pomdpsol --pomdpx-dir /tmp/pomdpx/examples/POMDPX --models RockSample_11_11.pomdpx
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

try:  # run as a module (python -m benchmarks.anytime_pomdp) or as a script
    from ._common import environment, make_parser, print_table
    from .bench_pomdp import _at, _data_dir
except ImportError:  # pragma: no cover - script mode
    from _common import environment, make_parser, print_table
    from bench_pomdp import _at, _data_dir

CHECKPOINTS = (1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0)
MODELS = (("RockSample(7,8)", "RockSample_7_8.pomdpx"), ("TagAvoid", "TagAvoid.pomdpx"),
          ("Hallway2", "Hallway2.pomdpx"))
_TICK = os.sysconf("SC_CLK_TCK")

#: our child process: read the file, fit, print one JSON line (history_ and the CPU at the start of fit)
_CHILD = r"""
import json, sys, time, warnings
path, budget = sys.argv[1], float(sys.argv[2])
from algos.pomdp import PointBasedSolver, read_pomdpx
from algos.pomdp.solvers._pbs import _warm_kernels
_warm_kernels()
model = read_pomdpx(path)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    s = PointBasedSolver(time_limit=budget, clock="cpu")
    c0 = time.process_time()
    s.fit(model)
print("RESULT " + json.dumps(dict(cpu0=c0, history=s.history_.tolist(), L=s.lower_bound_, U=s.upper_bound_)))
"""


def _proc_sample(pid):
    """``(CPU s, VmHWM MiB)`` of a running process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime
        with open(f"/proc/{pid}/status") as f:
            hwm = next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM"))
        return cpu, hwm / 1024.0
    except (OSError, StopIteration, IndexError, ValueError):
        return None


def _run_sampled(cmd, limit, cwd=None, env=None):
    """Run ``cmd``; ``(stdout, samples (n, 2) of child CPU s and VmHWM MiB, peak RSS MiB, CPU s)``."""
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        proc = subprocess.Popen(cmd, stdout=fo, stderr=fe, cwd=cwd, env=env)
        samples = []
        t_end = time.monotonic() + limit
        while True:
            smp = _proc_sample(proc.pid)
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if smp is not None:
                samples.append(smp)
            if time.monotonic() > t_end:
                proc.kill()
                pid, status, ru = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        proc.returncode = 0  # reaped here
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read(), fe.read()
    if status != 0:
        print(f"(anytime) child {cmd[0]} exited with status {status}: {err[-1500:]}", file=sys.stderr)
    return out, np.asarray(samples).reshape(-1, 2), ru.ru_maxrss / 1024.0, ru.ru_utime + ru.ru_stime


def _rss_at(samples, cpu):
    idx = np.flatnonzero(samples[:, 0] <= cpu)
    return None if idx.size == 0 else float(samples[idx[-1], 1])


def _ours(path, budget):
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    out, samples, peak, cpu = _run_sampled([sys.executable, "-c", _CHILD, str(path), str(budget)], budget * 4 + 600,
                                           env=env)
    line = next((ln for ln in out.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        return None
    res = json.loads(line[7:])
    return dict(hist=np.asarray(res["history"]).reshape(-1, 3), offset=res["cpu0"], samples=samples, peak=peak,
                cpu=cpu)


def _sarsop(exe, path, budget):
    import re

    with tempfile.TemporaryDirectory() as tmp:
        out, samples, peak, cpu = _run_sampled([exe, "--timeout", str(budget), "--output",
                                                os.path.join(tmp, "out.policy"), str(path)], budget * 4 + 600, cwd=tmp)
    rows = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 6:
            try:
                rows.append((float(parts[0]), float(parts[3]), float(parts[4])))
            except ValueError:
                continue
    if not rows:
        return None
    m = re.search(r"loading time\s*:\s*([0-9.]+)", out)
    return dict(hist=np.asarray(rows), offset=float(m.group(1)) if m else 0.0, samples=samples, peak=peak, cpu=cpu)


def _cell(res, t):
    if res is None:
        return "fail"
    lu = _at(res["hist"], t)
    rss = _rss_at(res["samples"], t + res["offset"]) if len(res["samples"]) else None
    if lu is None:
        return "not started" + (f" · {rss:.0f} MiB" if rss is not None else "")
    return f"{lu[0]:.3f} / {lu[1]:.3f} · {rss:.0f} MiB" if rss is not None else f"{lu[0]:.3f} / {lu[1]:.3f}"


def main(argv=None):
    parser = make_parser(__doc__.split("\n")[0], ("anytime",))
    parser.add_argument("--sarsop", default=os.environ.get("ALGOS_SARSOP"), help="path of SARSOP's pomdpsol")
    parser.add_argument("--models", default=None, help="comma-separated POMDPX file names in <data>/pomdpx")
    parser.add_argument("--pomdpx-dir", default=None,
                        help="folder searched first for the POMDPX files (e.g. SARSOP's examples/POMDPX)")
    args = parser.parse_args(argv)
    cps = tuple(c for c in CHECKPOINTS if c <= (10.0 if args.quick else 60.0))
    budget = cps[-1]
    files = [(f, f) for f in args.models.split(",")] if args.models else MODELS
    print(f"# anytime_pomdp ({'quick' if args.quick else 'full'})\n")
    import numba

    print(environment([f"numba {numba.__version__}",
                       f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}",
                       f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS')}"]) + "\n")
    rows = []
    for name, fname in files:
        dirs = ([Path(args.pomdpx_dir)] if args.pomdpx_dir else []) + [_data_dir() / "pomdpx"]
        path = next((d / fname for d in dirs if (d / fname).is_file()), None)
        if path is None:
            print(f"(skipped {name}: {fname} not found in {', '.join(map(str, dirs))})", file=sys.stderr)
            continue
        ours = _ours(path, budget)
        ss = _sarsop(args.sarsop, path, budget) if args.sarsop else None
        for tool, res in (("ours", ours), ("SARSOP", ss)):
            if tool == "SARSOP" and not args.sarsop:
                continue
            end = ("fail" if res is None
                   else f"{res['hist'][-1, 1]:.3f} / {res['hist'][-1, 2]:.3f} · {res['peak']:.0f} MiB")
            rows.append([name, tool] + [_cell(res, t) for t in cps] + [end])
        print(f"(done {name})", file=sys.stderr, flush=True)
    print_table("anytime: L(b0) / U(b0) · peak RSS so far, at CPU seconds of solving",
                ["model", "tool"] + [f"{c:g} s" for c in cps] + ["end (L / U · peak RSS)"], rows,
                notes=["one run per cell, a fresh child process each; CPU seconds since the start of solving "
                       "(ours: fit(); SARSOP: its progress clock, after loading)",
                       "bounds: ours history_ row at the checkpoint; SARSOP its last progress row at or before it",
                       "RSS: VmHWM sampled every 50 ms at child CPU <= checkpoint + CPU spent before solving"])


if __name__ == "__main__":
    main()
