"""The ``algos`` command line: demo report and module subcommands."""

import json
import subprocess
import sys

import numpy as np
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


def test_demo_rejects_unknown_module(tmp_path, capsys):
    # a usage error (exit 2), not a failed guarantee (exit 1)
    assert main(["demo", "--quick", "--out", str(tmp_path), "--modules", "fair_matching,nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown module 'nope'" in err and len(err.strip().splitlines()) == 1


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
    assert main(["matching", "--n-agents", "10", "--n-items", "12", "--algorithm", "tef", "--save-instance",
                 str(path)]) == 0
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


# ---------------------------------------------------------------------------- algos hetero
def _write_csv(path, n=400, seed=0):
    from algos.hetero_regression import make_subset_of_signals

    data = make_subset_of_signals(n, 2, n // 2, noisy_sigma=100.0, random_state=seed)
    lines = ["# a comment line", "x1,x2,label,y"]
    lines += [f"{a:.10g},{b:.10g},name{i},{t:.10g}" for i, (a, b,
                                                            t) in enumerate(zip(data.X[:, 0], data.X[:, 1], data.y))]
    path.write_text("\n".join(lines) + "\n")
    return data


def test_hetero_fit_csv_json(tmp_path, capsys):
    data = _write_csv(tmp_path / "d.csv")
    argv = ["hetero", "--csv", str(tmp_path / "d.csv"), "--target", "y", "--features", "x1,x2", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["estimator"]: r for r in out["results"]}
    assert set(rows) == {"auto", "huber", "cmed", "lad", "ols"}
    huber = np.array([rows["huber"]["coef"]["x1"], rows["huber"]["coef"]["x2"]])
    ols = np.array([rows["ols"]["coef"]["x1"], rows["ols"]["coef"]["x2"]])
    # half the sources have sigma = 100: Huber must be far closer to the truth than OLS
    assert np.linalg.norm(huber - data.beta) < 0.5 * np.linalg.norm(ols - data.beta)
    assert rows["huber"]["converged"] is True


def test_hetero_fit_needs_numeric_columns(tmp_path, capsys):
    _write_csv(tmp_path / "d.csv")
    assert main(["hetero", "--csv", str(tmp_path / "d.csv"), "--target", "y"]) == 2
    err = capsys.readouterr().err
    assert "line 3" in err and "'label'" in err and "--features" in err
    assert main(["hetero", "--csv", str(tmp_path / "d.csv"), "--target", "nope"]) == 2
    assert "'target' must be a column" in capsys.readouterr().err
    assert main(["hetero", "--csv", str(tmp_path / "d.csv"), "--target", "y", "--features", "x1", "--delta", "-1"]) == 2
    assert "'delta'" in capsys.readouterr().err


def test_hetero_on_engel(shared_data_dir, capsys):
    path = shared_data_dir / "regression" / "engel.csv"
    assert main(["hetero", "--csv", str(path), "--target", "foodexp", "--intercept", "--delta", "auto",
                 "--estimator", "huber,lad,ols"]) == 0
    out = capsys.readouterr().out
    assert "235 rows" in out
    lines = {ln.split()[0]: ln.split() for ln in out.splitlines() if ln.split() and ln.split()[0] in ("huber", "lad",
                                                                                                      "ols")}
    # food expenditure rises with income with slope ~0.56 (LAD, Koenker & Bassett 1982)
    assert 0.5 < float(lines["lad"][2]) < 0.6
    assert 0.5 < float(lines["huber"][2]) < 0.6


def test_hetero_simulate_table(capsys):
    assert main(["hetero", "simulate", "--n", "3000", "--d", "2", "--ms", "300,600", "--reps", "2",
                 "--estimator", "huber,ols", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["m"] for r in out["rows"]] == [300, 600]
    for r in out["rows"]:
        assert r["huber"] < r["ols"] / 10
        assert r["huber"] < 3 * r["sqrt(nd)/m"]


# ---------------------------------------------------------------------------- algos dag
def test_dag_on_diabetes_json(capsys):
    assert main(["dag", "--diabetes", "--topology", "star", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    info, agents = out["info"], out["agents"]
    assert info["edges"] == 10 and info["comm_floats"] == info["full_message_floats"]
    hub = [a for a in agents if a["agent"] == info["output_agent"]][0]
    assert hub["depth"] == 2 and len(hub["parents"]) == 10
    # the hub combines ten one-feature agents: it fits the training set better than any spoke
    assert hub["train_mse"] < min(a["train_mse"] for a in agents if a["agent"] != hub["agent"])


def test_dag_sketch_protocol_counts_k_floats_per_edge(tmp_path, capsys):
    _write_csv(tmp_path / "d.csv", n=600)
    argv = ["dag", "--csv", str(tmp_path / "d.csv"), "--target", "y", "--features", "x1,x2", "--topology", "path",
            "--depth", "6", "--protocol", "sketch", "--k", "60", "--json"]
    assert main(argv) == 0
    info = json.loads(capsys.readouterr().out)["info"]
    assert info["comm_floats"] == 60 * 5
    assert info["full_message_floats"] == info["n_train"] * 5
    assert main(["dag", "--csv", str(tmp_path / "d.csv"), "--target", "y", "--features", "x1,x2",
                 "--protocol", "sketch", "--k", "1"]) == 2
    assert "'k' must be an int in" in capsys.readouterr().err


# ---------------------------------------------------------------------------- demo robustness
def _one_line_error(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and "error" in lines[0], err
    return lines[0]


def test_demo_negative_seed_is_a_usage_error(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--seed", "-1"]) == 2
    assert "'seed' must be a non-negative int; got -1" in _one_line_error(capsys.readouterr().err)


def test_demo_out_existing_file_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "report.txt"
    path.write_text("not a folder")
    assert main(["demo", "--quick", "--out", str(path), "--modules", "fair_matching"]) == 2
    assert "'out' must be a folder" in _one_line_error(capsys.readouterr().err)
    assert path.read_text() == "not a folder"


def _fake_demo(monkeypatch, module, run_demo):
    import types

    fake = types.ModuleType(f"algos.{module}._demo")
    fake.run_demo = run_demo
    monkeypatch.setitem(sys.modules, f"algos.{module}._demo", fake)


def test_failing_section_is_reported_and_the_run_goes_on(tmp_path, monkeypatch, capsys):
    from algos._report import Check, DemoSection

    def boom(out_dir, quick=False, random_state=0):
        raise RuntimeError("kernel exploded\nsecond line")

    def fine(out_dir, quick=False, random_state=0):
        return DemoSection("hetero_regression", "Hetero", checks=[Check("c", 1.0, 0.5, ">=")])

    _fake_demo(monkeypatch, "fair_matching", boom)
    _fake_demo(monkeypatch, "hetero_regression", fine)
    rc = main(["demo", "--out", str(tmp_path), "--modules", "fair_matching,hetero_regression"])
    out = capsys.readouterr().out
    assert rc == 1  # the exit code says that a section failed
    # a line when each section starts, before its result, and the note on first-run compilation
    assert "compiles" in out.splitlines()[0]
    assert out.index("[fair_matching] section 1/2 started") < out.index("[fair_matching] 0 checks, SECTION FAILED")
    assert "[hetero_regression] section 2/2 started" in out
    assert "[hetero_regression] 1 checks, all guarantees hold" in out
    report = (tmp_path / "report.md").read_text()
    assert "RuntimeError: kernel exploded second line" in report  # the error, on one line
    assert "| [hetero_regression]" in report  # the later section is in the report too


def test_report_is_written_after_each_section(tmp_path, monkeypatch, capsys):
    from algos._report import DemoSection

    def first(out_dir, quick=False, random_state=0):
        return DemoSection("fair_matching", "First")

    def interrupted(out_dir, quick=False, random_state=0):
        assert "First" in (tmp_path / "report.md").read_text()
        raise KeyboardInterrupt

    _fake_demo(monkeypatch, "fair_matching", first)
    _fake_demo(monkeypatch, "pomdp", interrupted)
    assert main(["demo", "--out", str(tmp_path), "--modules", "fair_matching,pomdp"]) == 130
    assert "First" in (tmp_path / "report.md").read_text()


def test_failed_guarantee_exits_1_and_json_names_the_error(tmp_path, monkeypatch, capsys):
    from algos._report import Check, DemoSection

    def failing(out_dir, quick=False, random_state=0):
        return DemoSection("pomdp", "P", checks=[Check("c", 0.1, 0.5, ">=")])

    def boom(out_dir, quick=False, random_state=0):
        raise ValueError("bad")

    _fake_demo(monkeypatch, "pomdp", failing)
    _fake_demo(monkeypatch, "continual", boom)
    assert main(["demo", "--out", str(tmp_path), "--modules", "pomdp,continual", "--json"]) == 1
    captured = capsys.readouterr()
    summary = json.loads(captured.out)  # progress lines go to stderr in JSON mode
    assert summary["passed"] is False
    secs = {s["module"]: s for s in summary["sections"]}
    assert secs["pomdp"]["error"] == "" and secs["pomdp"]["passed"] is False
    assert secs["continual"]["error"] == "ValueError: bad"
    assert "[continual] section 2/2 started" in captured.err


def test_unexpected_error_in_a_command_is_one_line_exit_1(monkeypatch, capsys):
    import algos.fair_matching._cli as mcli

    def crash(args):
        raise RuntimeError("unexpected")

    monkeypatch.setattr(mcli, "run", crash)
    assert main(["matching"]) == 1
    line = _one_line_error(capsys.readouterr().err)
    assert line.startswith("algos matching: internal error: RuntimeError: unexpected")


# ---------------------------------------------------------------------------- lazy parser
_IMPORTED = (
    "import sys; from algos.cli import main; rc = main({argv!r}); "
    "print(rc, sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'numba', 'torch', 'sklearn') "
    "and '.' not in m or m.count('.') == 1 and m.startswith('algos.')))"
)


@pytest.mark.parametrize("argv", [["--version"], ["--help"], [], ["demo", "--help"]])
def test_version_and_help_import_no_module(argv):
    out = subprocess.run([sys.executable, "-c", _IMPORTED.format(argv=argv)], capture_output=True, text=True,
                         check=True).stdout
    last = out.strip().splitlines()[-1]
    assert last.endswith("['algos.cli']"), last  # no numpy, numba, torch, sklearn, no module package
    if argv in (["--help"], []):
        for name in ("matching", "hetero", "dag", "pomdp", "circle", "potara", "lgcp"):
            assert name in out


def test_module_help_imports_only_that_module():
    out = subprocess.run([sys.executable, "-c", _IMPORTED.format(argv=["pomdp", "--help"])], capture_output=True,
                         text=True, check=True).stdout
    assert "algos pomdp" in out
    last = out.strip().splitlines()[-1]
    others = [m for m in ("fair_matching", "hetero_regression", "networked_learning", "continual", "federated",
                          "point_process") if f"'algos.{m}'" in last]
    assert not others, last


@pytest.mark.parametrize("name", ["demo", "matching", "hetero", "dag", "pomdp", "circle", "potara"])
def test_every_seed_option_has_help_and_rejects_negatives(name, capsys):
    from algos.cli import _build_parser

    parser = _build_parser([name])
    sub = parser._subparsers._group_actions[0].choices[name]
    seed = [a for a in sub._actions if "--seed" in a.option_strings]
    assert seed and seed[0].help and "seed" in seed[0].help
    argv = [name, "--seed", "-3"] + (["solve", "tiger"] if name == "pomdp" else [])
    assert main(argv) == 2
    assert "'seed' must be a non-negative int" in _one_line_error(capsys.readouterr().err)


def test_missing_flower_extra_is_one_line_naming_pyproject_version(monkeypatch, capsys):
    import re

    import tomllib

    from algos.cli import main as cli_main

    from .conftest import REPO_ROOT

    deps = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    required = re.search(r"flwr(?:\[[^\]]*\])?>=([0-9.]+)", " ".join(deps["federated"])).group(1)
    monkeypatch.setitem(sys.modules, "flwr", None)  # import flwr raises ImportError
    monkeypatch.delitem(sys.modules, "algos.federated.flower", raising=False)
    argv = ["potara", "--dataset", "fedprox", "--clients", "3", "--rounds", "1", "--local-epochs", "1",
            "--finetune-epochs", "1", "--baselines", "", "--flower"]
    assert cli_main(argv) == 2
    line = _one_line_error(capsys.readouterr().err)
    assert "algos-theory[federated]" in line
    named = re.findall(r"flwr>=([0-9.]+)", line)
    assert named and set(named) == {required}, line
