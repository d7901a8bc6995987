"""Every teaching script ``examples/**/plot_*.py`` runs in quick mode and writes a PNG.

Each script runs in a fresh subprocess (as a user would run it) with ``ALGOS_EXAMPLES_QUICK=1``
and the Agg matplotlib backend, in an empty temporary directory that is also its working
directory; the test asserts a zero exit status and that at least one PNG appeared there. The
scripts are collected with a glob, so the examples of new modules are picked up automatically.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO_ROOT / "examples").glob("**/plot_*.py"))
TIMEOUT_S = 120  # DESIGN.md section 7: quick mode < 30 s on one CPU; generous for loaded CI machines


def _ids(path):
    return path.relative_to(REPO_ROOT / "examples").as_posix()


@pytest.mark.skipif(not EXAMPLES, reason="no examples/**/plot_*.py found")
@pytest.mark.parametrize("script", EXAMPLES, ids=_ids)
def test_example_runs_quick(script, tmp_path):
    env = dict(os.environ)
    env["ALGOS_EXAMPLES_QUICK"] = "1"
    env["MPLBACKEND"] = "Agg"
    # the scripts import the package from the repository even when it is not installed
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    try:
        proc = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{_ids(script)} did not finish within {TIMEOUT_S} s in quick mode.\n"
                    f"stdout:\n{exc.stdout}\nstderr:\n{exc.stderr}")
    assert proc.returncode == 0, (
        f"{_ids(script)} exited with status {proc.returncode}.\n"
        f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"
    )
    pngs = sorted(tmp_path.rglob("*.png"))
    assert pngs, f"{_ids(script)} wrote no PNG into its working directory {tmp_path}."
    assert all(p.stat().st_size > 0 for p in pngs), f"{_ids(script)} wrote an empty PNG: {pngs}."
