"""Run the catalogue: one pytest subprocess per mutant, killed / survived / timeout / seconds.

``python -m tests.mutation [--module M ...] [--quick] [--json FILE] [--list] [--mutant NAME ...]``

Every mutant runs its module's tests (``tests/<module>``) with the ``ci`` Hypothesis profile,
``-x`` (stop at the first failure) and ``-p no:cacheprovider``, in a fresh interpreter with the
mutant applied by :mod:`tests.mutation.plugin`; nothing in the work tree is written. A full run
starts each module with an unmutated baseline run: tests that already fail there are deselected
for that module's mutants (and listed), so a test being edited cannot count as a kill.

Outcomes: ``killed`` (a test failed or errored), ``timeout`` (ran past ``--timeout``; counted as
killed, as mutation tools do: the tests noticed that the code stopped working), ``survived`` (all
tests passed), ``error`` (the mutant could not be applied, or pytest found no test). The kill rate
of a module is ``(killed + timeout) / (mutants - equivalent - error)``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
MODULES = ("fair_matching", "hetero_regression", "networked_learning", "pomdp", "continual",
           "federated", "point_process")
QUICK_PER_MODULE = 2
_FAILED_RE = re.compile(r"^(FAILED|ERROR) (\S+)", re.M)


def load_catalogue(name=None):
    import importlib

    from tests.mutation.plugin import DEFAULT_CATALOGUE, ENV_CATALOGUE

    return importlib.import_module(name or os.environ.get(ENV_CATALOGUE) or DEFAULT_CATALOGUE).MUTANTS


def quick_sample(mutants):
    """The fixed quick sample: the mutants flagged ``quick``, else the first two non-equivalent."""
    out = []
    for module in dict.fromkeys(m.module for m in mutants):
        mine = [m for m in mutants if m.module == module and m.equivalent is None]
        flagged = [m for m in mine if m.quick]
        out.extend(flagged or mine[:QUICK_PER_MODULE])
    return out


def _test_files(module, root):
    folder = Path(root) / "tests" / module
    return sorted(str(p.relative_to(root)) for p in folder.glob("test_*.py"))


def pytest_command(paths, *, deselect=(), extra=()):
    cmd = [sys.executable, "-m", "pytest", *paths, "-x", "-q", "-p", "no:cacheprovider",
           "-p", "tests.mutation.plugin", "--no-header", "-rfE", *extra]
    for nodeid in deselect:
        cmd += ["--deselect", nodeid]
    return cmd


def run_pytest(paths, *, mutant=None, catalogue=None, profile="ci", timeout=600.0, cwd=REPO_ROOT,
               deselect=(), stop_first=True, extra_env=None, extra_args=()):
    """One pytest subprocess; returns a dict with outcome, rc, seconds, failed test ids and the tail."""
    env = dict(os.environ)
    env.pop("ALGOS_MUTANT", None)
    env["ALGOS_HYPOTHESIS_PROFILE"] = profile
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # Hypothesis's example database and failure patches go to a temporary folder, not the work tree
    env.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(Path(tempfile.gettempdir()) / "algos-mutants" / ".hypothesis"))
    pythonpath = [str(REPO_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    if mutant is not None:
        env["ALGOS_MUTANT"] = mutant
    if catalogue is not None:
        env["ALGOS_MUTATION_CATALOGUE"] = catalogue
    if extra_env:
        extra_env = dict(extra_env)
        if "PYTHONPATH" in extra_env:
            env["PYTHONPATH"] = os.pathsep.join([extra_env.pop("PYTHONPATH"), env["PYTHONPATH"]])
        env.update(extra_env)
    marker = None
    if mutant is not None:
        fd, marker = tempfile.mkstemp(prefix="algos-mutant-", suffix=".applied")
        os.close(fd)
        os.unlink(marker)
        env["ALGOS_MUTANT_APPLIED_FILE"] = marker
    cmd = pytest_command(paths, deselect=deselect, extra=extra_args)
    if not stop_first:
        cmd.remove("-x")
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:  # the whole process group: pytest and any worker it started
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
        return {"outcome": "timeout", "rc": None, "seconds": round(time.perf_counter() - start, 1),
                "failed": [], "tail": (out or "")[-2000:]}
    seconds = round(time.perf_counter() - start, 1)
    text = out or ""
    failed = [m.group(2) for m in _FAILED_RE.finditer(text)]
    applied = marker is None or os.path.exists(marker)
    if marker is not None and applied:
        os.unlink(marker)
    if not applied:  # the plugin never confirmed the mutant: whatever failed, it was not the mutant
        outcome = "error"
    elif proc.returncode == 0:
        outcome = "survived"
    elif proc.returncode in (1, 2):  # test failures; collection errors / interrupted by -x
        outcome = "killed"
    else:  # 3 internal error, 4 usage error (mutant not applied), 5 no tests collected
        outcome = "error"
    return {"outcome": outcome, "rc": proc.returncode, "seconds": seconds, "failed": failed,
            "tail": text[-2000:]}


def kill_rate(results):
    """``(killed + timeout) / counted`` over non-equivalent, non-error results; None when empty."""
    counted = [r for r in results if r["outcome"] in ("killed", "timeout", "survived")]
    if not counted:
        return None
    return sum(r["outcome"] != "survived" for r in counted) / len(counted)


def killers_from(reports):
    """``{mutant: test file}``: the file whose test killed each mutant in earlier JSON reports."""
    out = {}
    for path in reports or ():
        for entry in json.loads(Path(path).read_text())["modules"].values():
            for row in entry["mutants"]:
                if row.get("killed_by"):
                    out[row["name"]] = row["killed_by"][0].split("::")[0]
    return out


def run(mutants, *, quick=False, profile="ci", timeout=None, baseline=None, log=print,
        catalogue=None, root=REPO_ROOT, first_files=None):
    """Run ``mutants`` (grouped by module); returns the JSON-ready report.

    ``first_files`` (``{mutant: test file}``, e.g. from :func:`killers_from`) only reorders a full
    run (that file first, then the declared ones, then the rest): the same tests run until the first
    failure, so the verdict is the same and a kill comes sooner.
    """
    first_files = first_files or {}
    fixed_timeout = timeout
    timeout = timeout or (180.0 if quick else 900.0)
    baseline = (not quick) if baseline is None else baseline
    report = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "quick": quick,
              "profile": profile, "timeout_s": timeout, "modules": {}}
    for module in dict.fromkeys(m.module for m in mutants):
        mine = [m for m in mutants if m.module == module]
        files = _test_files(module, root)
        entry = {"baseline": None, "deselected": [], "mutants": []}
        module_timeout = timeout
        report["modules"][module] = entry
        if baseline:
            base = run_pytest(files, profile=profile, timeout=max(timeout, 1800.0), stop_first=False,
                              catalogue=catalogue, cwd=root)
            entry["baseline"] = {k: base[k] for k in ("outcome", "rc", "seconds", "failed")}
            entry["deselected"] = [f for f in base["failed"] if "::" in f]
            # a file that does not even collect on the unmutated code is left out whole
            entry["ignored_files"] = [f for f in base["failed"] if "::" not in f]
            files = [f for f in files if f not in entry["ignored_files"]]
            log(f"[{module}] baseline: {'clean' if base['rc'] == 0 else base['failed'] or base['rc']}"
                f" ({base['seconds']} s)")
            # a mutant that makes the suite hang is stopped at 5x the baseline's time (+ 2 min of start-up)
            module_timeout = fixed_timeout or min(timeout, 5.0 * base["seconds"] + 120.0)
        for m in mine:
            if m.equivalent is not None:
                res = {"outcome": "equivalent", "reason": m.equivalent, "seconds": 0.0, "failed": []}
            else:
                if quick and m.tests:
                    paths = [t for t in m.tests if t not in entry.get("ignored_files", ())]
                else:
                    first = [t for t in dict.fromkeys([first_files.get(m.name), *m.tests]) if t in files]
                    paths = first + [f for f in files if f not in first]
                res = run_pytest(paths, mutant=m.name, profile=profile, timeout=module_timeout,
                                 deselect=entry["deselected"], catalogue=catalogue, cwd=root)
            row = {"name": m.name, "kind": m.kind, "intent": m.intent, "outcome": res["outcome"],
                   "seconds": res["seconds"], "killed_by": res["failed"][:1]}
            if res["outcome"] == "equivalent":
                row["reason"] = m.equivalent
            if res["outcome"] == "error":
                row["detail"] = res["tail"][-600:]
            entry["mutants"].append(row)
            log(f"[{module}] {m.name:<44} {row['outcome']:<10} {row['seconds']:>7.1f} s "
                f"{row['killed_by'][0] if row['killed_by'] else ''}")
        entry["kill_rate"] = kill_rate(entry["mutants"])
        n = {o: sum(r["outcome"] == o for r in entry["mutants"])
             for o in ("killed", "timeout", "survived", "equivalent", "error")}
        entry["counts"] = n
        rate = entry["kill_rate"]
        log(f"[{module}] kill rate {'n/a' if rate is None else f'{100 * rate:.0f} %'} {n}")
    return report


def table(report):
    """Markdown table of a report (the one in docs/testing.md)."""
    lines = ["| module | mutants | killed | timeout | survived | equivalent | error | kill rate |",
             "|---|---|---|---|---|---|---|---|"]
    for module, entry in report["modules"].items():
        n, rate = entry["counts"], entry["kill_rate"]
        lines.append(f"| {module} | {len(entry['mutants'])} | {n['killed']} | {n['timeout']} | "
                     f"{n['survived']} | {n['equivalent']} | {n['error']} | "
                     f"{'n/a' if rate is None else f'{100 * rate:.0f} %'} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tests.mutation", description=__doc__.split("\n\n")[0])
    p.add_argument("--module", action="append", choices=MODULES, help="restrict to a module (repeatable)")
    p.add_argument("--mutant", action="append", help="run only the named mutant(s)")
    p.add_argument("--quick", action="store_true",
                   help=f"the fixed sample ({QUICK_PER_MODULE} per module) on their declared test files")
    p.add_argument("--json", metavar="FILE", help="write the report as JSON")
    p.add_argument("--list", action="store_true", help="list the catalogue and exit")
    p.add_argument("--timeout", type=float,
                   help="seconds per mutant (default: 5x the baseline + 120, at most 900; quick 180)")
    p.add_argument("--profile", default="ci", help="Hypothesis profile (default ci)")
    p.add_argument("--no-baseline", action="store_true", help="skip the unmutated baseline run")
    p.add_argument("--catalogue", help="importable module with a MUTANTS list (default tests.mutation.catalogue)")
    p.add_argument("--order-from", metavar="JSON", action="append",
                   help="earlier report(s): run the test file that killed each mutant first (same verdict, sooner)")
    args = p.parse_args(argv)

    mutants = load_catalogue(args.catalogue)
    if args.module:
        mutants = [m for m in mutants if m.module in args.module]
    if args.mutant:
        unknown = set(args.mutant) - {m.name for m in mutants}
        if unknown:
            p.error(f"unknown mutant(s): {', '.join(sorted(unknown))}")
        mutants = [m for m in mutants if m.name in args.mutant]
    if args.quick:
        mutants = quick_sample(mutants)
    if args.list:
        for m in mutants:
            tag = f"  [equivalent: {m.equivalent}]" if m.equivalent else ""
            print(f"{m.name:<46} {m.kind:<9} {'Q' if m.quick else ' '} {m.intent}{tag}")
        return 0
    report = run(mutants, quick=args.quick, profile=args.profile, timeout=args.timeout,
                 baseline=False if args.no_baseline else None, catalogue=args.catalogue,
                 log=lambda s: print(s, flush=True), first_files=killers_from(args.order_from))
    print()
    print(table(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    bad = [r for e in report["modules"].values() for r in e["mutants"] if r["outcome"] in ("survived", "error")]
    if bad:
        print("\nsurvived or not applied: " + ", ".join(f"{r['name']} ({r['outcome']})" for r in bad))
    return 1 if bad else 0
