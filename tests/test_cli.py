"""The ``algos`` command line: demo report and module subcommands."""

import json
import subprocess
import sys

import pytest

from algos.cli import main


def test_help_lists_subcommands(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "demo" in out and "matching" in out


def test_demo_quick_writes_report_with_passing_guarantees(tmp_path, capsys):
    rc = main(["demo", "--quick", "--out", str(tmp_path), "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert rc == 0, summary
    assert summary["passed"] is True
    report = (tmp_path / "report.md").read_text()
    assert "## Online class-fair matching" in report
    assert "**FAIL**" not in report
    sections = {s["module"]: s for s in summary["sections"]}
    assert len(sections["fair_matching"]["checks"]) >= 10
    for fig in tmp_path.glob("*.png"):
        assert fig.stat().st_size > 10_000  # a real plot, not an empty canvas
    assert list(tmp_path.glob("fair_matching*.png"))


def test_demo_rejects_unknown_module(tmp_path):
    with pytest.raises(SystemExit, match="unknown module 'nope'"):
        main(["demo", "--quick", "--out", str(tmp_path), "--modules", "nope"])


def test_matching_json_on_davis(capsys):
    assert main(["matching", "--instance", "davis", "--algorithm", "tef,hybrid", "--n-runs", "20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["instance"]["n_agents"] == 18 and out["instance"]["n_items"] == 14
    assert out["instance"]["opt"] == 14
    rows = {r["algorithm"]: r for r in out["results"]}
    assert set(rows) == {"tef", "hybrid"}
    assert rows["tef"]["usw_ratio"] >= rows["tef"]["usw_guarantee"]
    assert rows["tef"]["non_wasteful"] is True


def test_matching_table_and_instance_file_roundtrip(tmp_path, capsys):
    path = tmp_path / "inst.json"
    assert main(["matching", "--n-agents", "10", "--n-items", "12", "--algorithm", "tef", "--save-instance", str(path)]) == 0
    first = capsys.readouterr().out
    assert "USW/OPT" in first and "tef" in first
    assert main(["matching", "--instance", str(path), "--algorithm", "tef"]) == 0
    second = capsys.readouterr().out
    # same instance, same numbers (the header names the source, the table must agree)
    assert first.splitlines()[-1] == second.splitlines()[-1]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["matching", "--gamma", "1.5"], "'gamma' must be a float in [0, 1]; got 1.5."),
        (["matching", "--algorithm", "foo"], "'algorithm' must be a subset of"),
        (["matching", "--instance", "missing.json"], "missing.json"),
    ],
)
def test_matching_bad_input_is_a_clear_error(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_bad_json_file_names_file_and_line(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text('{"n_agents": 2,\n "agent_class": [0, 1],\n "items": [[0], [5]]}')
    assert main(["matching", "--instance", str(path)]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and "agent 5" in err
    path.write_text('{"n_agents": 2,\n oops}')
    assert main(["matching", "--instance", str(path)]) == 2
    assert "line 2" in capsys.readouterr().err


def test_console_script_entry_point():
    out = subprocess.run([sys.executable, "-m", "algos.cli", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("algos ")
