"""File readers check declared sizes against a memory budget before allocating anything proportional to
them: small hostile files raise a ValueError naming the file, the line and the estimate, and reading any
file under 1 MB, whatever it declares, raises the peak RSS by less than 200 MB."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from algos._io import READ_BUDGET_ENV, check_read_budget, read_budget_bytes
from algos.pomdp import read_pomdpx, tiger, write_pomdpx
from algos.pomdp.io._parser import parse_pomdp, read_pomdp

ROOT = Path(__file__).resolve().parents[1]
MB = 2**20

HEAD = "discount: 0.95\nvalues: reward\n"

#: (file text, line of the refused declaration)
HOSTILE_POMDP = {
    "states-1e9": (HEAD + "states: 1000000000\nactions: 2\nobservations: 2\n", 3),
    "observations-2e9": (HEAD + "states: 3\nactions: 2\nobservations: 2000000000\n", 5),
    "actions-1e9": (HEAD + "states: 3\nactions: 1000000000\nobservations: 2\n", 4),
    "dense-T": (HEAD + "states: 2000\nactions: 3\nobservations: 2\nT: * uniform\n", 4),
    "product": (HEAD + "states: 300\nactions: 20\nobservations: 5000\n", 5),
}


def _pomdpx(n_values, obs_values=2):
    return textwrap.dedent(f"""\
        <pomdpx version="1.0">
        <Discount>0.95</Discount>
        <Variable>
         <StateVar vnamePrev="s_0" vnameCurr="s_1"><NumValues>{n_values}</NumValues></StateVar>
         <ObsVar vname="o"><NumValues>{obs_values}</NumValues></ObsVar>
         <ActionVar vname="a"><ValueEnum>x y</ValueEnum></ActionVar>
         <RewardVar vname="r"/>
        </Variable>
        </pomdpx>
        """)


@pytest.mark.parametrize("key", sorted(HOSTILE_POMDP))
def test_hostile_pomdp_names_file_line_and_estimate(tmp_path, key):
    text, line = HOSTILE_POMDP[key]
    path = tmp_path / "hostile.POMDP"
    path.write_text(text)
    assert path.stat().st_size < 200
    with pytest.raises(ValueError) as info:
        read_pomdp(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}, line {line}: ")
    assert "would need about" in msg and "memory budget of 128 MiB" in msg and READ_BUDGET_ENV in msg


def test_pomdp_budget_knobs(monkeypatch):
    text = HEAD + "states: 1500\nactions: 2\nobservations: 2\nT: * identity\nO: * uniform\n"
    with pytest.raises(ValueError, match=r"<string>, line 4: .*'actions: 2'.*max_bytes="):
        parse_pomdp(text, max_bytes=80 * MB)
    m = parse_pomdp(text, max_bytes=400 * MB)
    assert m.n_states == 1500 and np.array_equal(m.T[1], np.eye(1500))
    monkeypatch.setenv(READ_BUDGET_ENV, "80")
    assert read_budget_bytes() == 80 * MB
    with pytest.raises(ValueError, match=READ_BUDGET_ENV):
        parse_pomdp(text)
    monkeypatch.setenv(READ_BUDGET_ENV, "400")
    assert parse_pomdp(text).n_states == 1500
    monkeypatch.setenv(READ_BUDGET_ENV, "lots")
    with pytest.raises(ValueError, match=f"{READ_BUDGET_ENV} must be a positive number"):
        parse_pomdp(text)


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "1"])
def test_bad_max_bytes(bad):
    with pytest.raises(ValueError, match="'max_bytes' must be a positive integer"):
        parse_pomdp(HEAD + "states: 2\nactions: 2\nobservations: 2\n", max_bytes=bad)


def test_shipped_models_fit_the_default_budget():
    from algos.datasets import load_pomdp

    for name in ("hallway", "tiger-grid", "aloha.10"):
        assert load_pomdp(name).n_states > 0


def test_check_read_budget_estimate_is_exact_python_int():
    with pytest.raises(ValueError, match=r"f.POMDP, line 7: x would need about .* TiB"):
        check_read_budget(10**40, "x", "f.POMDP, line 7")
    check_read_budget(5, "x", "here", max_bytes=5)


@pytest.mark.parametrize("n_values, obs, tag, line", [(10**9, 2, "NumValues", 4), (10**6, 10**3, "Variable", 3)])
def test_hostile_pomdpx_names_element_line_and_estimate(tmp_path, n_values, obs, tag, line):
    path = tmp_path / "hostile.pomdpx"
    path.write_text(_pomdpx(n_values, obs))
    with pytest.raises(ValueError) as info:
        read_pomdpx(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: <{tag}> at line {line}: ") and "would need about" in msg


def test_pomdpx_round_trip_within_budget(tmp_path):
    m = tiger()
    write_pomdpx(m, tmp_path / "t.pomdpx")
    back = read_pomdpx(tmp_path / "t.pomdpx")
    assert np.allclose(back.to_dense().T, m.T) and np.allclose(back.r, m.r)
    with pytest.raises(ValueError, match="max_bytes="):
        read_pomdpx(tmp_path / "t.pomdpx", max_bytes=100)


# Reading in a fresh process: the peak RSS gained over the imports (ru_maxrss) is under 200 MB whatever the
# small file declares; the read either succeeds or is refused.
_RSS_SCRIPT = textwrap.dedent("""
    import json, resource, sys
    import numpy as np
    from algos.pomdp import POMDP, read_pomdpx
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = []
    for path in sys.argv[1:]:
        try:
            if path.endswith(".pomdpx"):
                read_pomdpx(path)
            else:
                POMDP.from_file(path, missing_rows="uniform")
            out.append("ok")
        except ValueError as exc:
            out.append("refused: " + str(exc)[:120])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"gain_kib": peak - base, "results": out}))
""")


def _near_budget_files(d):
    """Small files that declare models just under and far over the default budget."""
    files = {
        "under-T.POMDP": HEAD + "states: 1600\nactions: 1\nobservations: 1\nT: * uniform\n",
        "under-Z.POMDP": HEAD + "states: 60\nactions: 1\nobservations: 80000\nO: * uniform\n",
        "under-R.POMDP": HEAD + "states: 1100\nactions: 2\nobservations: 2\nT: * identity\nO: * uniform\n"
                         + "R: * : * : * : * 1\n",
        "names.POMDP": HEAD + "states: " + " ".join(f"s{i}" for i in range(60000)) + "\nactions: 1\nobservations: 1\n",
        "over.POMDP": HEAD + "states: 1000000000\nactions: 2\nobservations: 2\n",
        "tokens.POMDP": HEAD + "states: 250\nactions: 1\nobservations: 1\nT: 0\n"
                        + "\n".join(" ".join(["0.004"] * 250) for _ in range(250)) + "\n",
        "entries.POMDP": HEAD + "states: 20\nactions: 2\nobservations: 2\nT: * identity\nO: * uniform\n"
                         + "R: * : * : * : * 1\n" * 50000,
        "over.pomdpx": _pomdpx(10**9),
        "partial.pomdpx": _pomdpx(40000, 2),
    }
    paths = []
    for name, text in files.items():
        p = d / name
        p.write_text(text)
        assert p.stat().st_size < 2**20
        paths.append(str(p))
    return paths


def test_peak_rss_bounded_for_small_files(tmp_path):
    import resource

    paths = _near_budget_files(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop(READ_BUDGET_ENV, None)
    res = subprocess.run([sys.executable, "-c", _RSS_SCRIPT, *paths], cwd=str(ROOT), env=env, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    results = dict(zip((Path(p).name for p in paths), out["results"]))
    assert all(results[k] == "ok" for k in ("under-T.POMDP", "under-Z.POMDP", "tokens.POMDP", "entries.POMDP"))
    assert results["over.POMDP"].startswith("refused") and results["over.pomdpx"].startswith("refused")
    scale = 1 if sys.platform.startswith("linux") else 1024  # ru_maxrss is KiB on Linux, bytes on macOS
    gain_mb = out["gain_kib"] * 1024 / scale / 1e6
    assert gain_mb < 200, (gain_mb, results)
    assert resource.RLIMIT_AS  # the bound is measured, not imposed


def test_the_default_budget_grows_with_the_file_so_large_model_files_still_read(monkeypatch):
    monkeypatch.delenv(READ_BUDGET_ENV, raising=False)
    small, large = read_budget_bytes(None, 1000), read_budget_bytes(None, 10 * 2**20)
    assert small == 128 * 2**20  # a small file: the floor
    assert large == min(1024 * 10 * 2**20, large) and large > small  # 10 MiB of file: up to 10 GiB
    # a .POMDP declaring S = 2000, A = 5 (about 0.5 GB dense) is refused as a 100-byte file...
    text = "discount: 0.9\nvalues: reward\nstates: 2000\nactions: 5\nobservations: 2\n"
    with pytest.raises(ValueError, match="memory budget"):
        check_read_budget(5 * 2000 * 2000 * 24, "states: 2000", "f.POMDP, line 3", file_bytes=len(text))
    # ... and accepted when the file is large enough to be a real dense model of that size
    check_read_budget(5 * 2000 * 2000 * 24, "states: 2000", "f.POMDP, line 3", file_bytes=2 * 2**20)
