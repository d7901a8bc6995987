"""Atomic writes: a writer killed mid-write (SIGKILL) leaves the previous file intact byte for byte and no
partial file under the target name; an error inside the block removes the temporary file."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from algos._io import atomic_write, atomic_write_text

ROOT = Path(__file__).resolve().parents[1]
#: Seconds the test waits for the writer's temporary file to appear and grow.
WAIT_S = 120.0

# A writer that streams a large text through atomic_write, slowly, so the test can kill it mid-write.
_SLOW_WRITER = textwrap.dedent("""
    import sys, time
    from algos._io import atomic_write
    with atomic_write(sys.argv[1], "w") as fh:
        for i in range(10**6):
            fh.write(("%d " % i) * 200 + "\\n")
            fh.flush()
            time.sleep(0.001)
""")

# The package's policy writer on a large alpha-vector set (a subclass slows the text down to a stream).
_POLICY_WRITER = textwrap.dedent("""
    import sys, time
    import numpy as np
    import algos._io as io_mod
    from algos.pomdp.io._policy_io import write_policy

    real = io_mod.atomic_write

    class Slow:
        def __init__(self, fh):
            self.fh = fh
        def write(self, text):
            for k in range(0, len(text), 4096):
                self.fh.write(text[k:k + 4096])
                self.fh.flush()
                time.sleep(0.002)
        def __getattr__(self, name):
            return getattr(self.fh, name)

    import contextlib
    @contextlib.contextmanager
    def slow(path, mode="w", **kw):
        with real(path, mode, **kw) as fh:
            yield Slow(fh)

    import algos.pomdp.io._policy_io as pio
    pio.atomic_write = slow
    rng = np.random.default_rng(0)
    G = rng.normal(size=(4000, 60))
    write_policy(sys.argv[1], G, np.zeros(4000, dtype=int))
""")


def _kill_mid_write(script, target):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", script, str(target)], cwd=str(ROOT), env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    pattern = str(target.parent / f".{target.name}.*.tmp")
    deadline = time.monotonic() + WAIT_S
    grown = False
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            tmps = glob.glob(pattern)
            if tmps and os.path.getsize(tmps[0]) > 64 * 1024:
                grown = True
                break
            time.sleep(0.02)
        assert grown, f"the writer never started writing; stderr: {proc.stderr.read()[:500] if proc.poll() else ''}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        proc.stderr.close()
    return proc.returncode, glob.glob(pattern)


@pytest.mark.parametrize("script", [_SLOW_WRITER, _POLICY_WRITER], ids=["atomic_write", "write_policy"])
def test_sigkill_mid_write_keeps_previous_file(tmp_path, script):
    target = tmp_path / "model.policy"
    previous = b"previous good contents\n" * 1000
    target.write_bytes(previous)
    rc, leftovers = _kill_mid_write(script, target)
    assert rc == -signal.SIGKILL
    assert target.read_bytes() == previous  # byte for byte
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == ["model.policy"]
    assert leftovers  # the partial file is only the (hidden) temporary, never under the target name


def test_error_in_block_keeps_previous_and_removes_temp(tmp_path):
    target = tmp_path / "x.json"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_write(target) as fh:
            fh.write("partial")
            raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_atomic_write_replaces_and_keeps_mode(tmp_path):
    target = tmp_path / "a.bin"
    with atomic_write(target, "wb") as fh:
        np.save(fh, np.arange(5))
    assert np.array_equal(np.load(target), np.arange(5))
    atomic_write_text(target, "text")
    assert target.read_text() == "text"
    mask = os.umask(0)
    os.umask(mask)
    assert (target.stat().st_mode & 0o777) == (0o666 & ~mask)


def test_atomic_write_rejects_bad_mode(tmp_path):
    with pytest.raises(ValueError, match="'mode'"):
        with atomic_write(tmp_path / "x", "a"):
            pass


def test_package_writers_leave_no_temp_files(tmp_path):
    from algos.fair_matching import random_instance
    from algos.pomdp import tiger, write_pomdpx
    from algos.pomdp.io._parser import read_pomdp, write_pomdp
    from algos.pomdp.io._policy_io import read_policy, write_policy

    m = tiger()
    write_pomdp(m, tmp_path / "t.POMDP")
    assert np.array_equal(read_pomdp(tmp_path / "t.POMDP").T, m.T)
    write_pomdpx(m, tmp_path / "t.pomdpx")
    G = np.arange(6.0).reshape(3, 2)
    write_policy(tmp_path / "t.policy", G, [0, 1, 2])
    assert np.array_equal(read_policy(tmp_path / "t.policy")[0], G)
    inst = random_instance(5, 6, random_state=0)
    inst.to_json(tmp_path / "i.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["i.json", "t.POMDP", "t.policy", "t.pomdpx"]


def test_no_plain_writes_left_in_the_package():
    """Every file the package writes goes through atomic_write (no open(..., 'w'), savefig(path), write_text)."""
    import re

    bad = []
    pat = re.compile(r"open\([^)]*[\"']w|\.write_text\(|\.write_bytes\(|fig\.savefig\("
                     r"|np\.save(z|z_compressed)?\(\s*[^f]")
    for path in (ROOT / "algos").rglob("*.py"):
        if path.name == "_io.py":
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pat.search(line) and not line.lstrip().startswith("#"):
                bad.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not bad, "\n".join(bad)


def test_federated_save_result_atomic(tmp_path):
    pytest.importorskip("flwr")
    import json

    from algos.federated.flower import PotaraResult, save_result

    res = PotaraResult(result=None, federated_params={"W": np.arange(6.0).reshape(2, 3)}, personalization={},
                       clients={0: {"accuracy": 0.5, "personalized": {"W": np.ones((2, 3))}}}, history=[])
    save_result(res, tmp_path / "run")
    with np.load(tmp_path / "run" / "models.npz") as z:
        assert np.array_equal(z["federated/W"], np.arange(6.0).reshape(2, 3))
        assert np.array_equal(z["client0/personalized/W"], np.ones((2, 3)))
    assert json.loads((tmp_path / "run" / "result.json").read_text())["clients"]["0"]["accuracy"] == 0.5
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["models.npz", "result.json"]
