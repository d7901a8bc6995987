"""Every command of the README's "Command line" paragraph, run as written from an empty data folder.

What a user of a bare clone (no team data beside the checkout) types must work: each command runs in
a fresh process with ``ALGOS_SHARED_DATA`` pointing at an empty folder, in an empty working folder
(``DIR`` replaced by a folder there), and must exit 0 with no traceback. The commands are read from
the README itself, so a command added there is tested without editing this file.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TIMEOUT_S = 600  # the slowest (tiger-grid with a 20 CPU-s limit, numba compiling) takes ~60 s here


def _readme_commands():
    text = (REPO / "README.md").read_text()
    para = re.search(r"^Command line: (.*?)(?:\n\n|\Z)", text, re.S | re.M)
    assert para, "README has no 'Command line:' paragraph"
    cmds = re.findall(r"`(algos [^`]+)`", para.group(1))
    return [c for c in cmds if "<command>" not in c]


COMMANDS = _readme_commands()


def test_readme_lists_the_module_commands():
    names = {shlex.split(c)[1] for c in COMMANDS}
    assert {"matching", "hetero", "dag", "pomdp", "circle", "potara", "lgcp"} <= names, names


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs_from_a_bare_clone(command, tmp_path):
    empty = tmp_path / "no-shared-data"
    empty.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    args = [a if a != "DIR" else str(work / "out") for a in shlex.split(command)[1:]]
    env = {**os.environ, "ALGOS_SHARED_DATA": str(empty), "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, "-c", "import sys; from algos.cli import main; sys.exit(main())", *args],
                          capture_output=True, text=True, timeout=TIMEOUT_S, env=env, cwd=work)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"`{command}` exited with {proc.returncode}:\n{out[-3000:]}"
    assert "Traceback" not in out, out[-3000:]
