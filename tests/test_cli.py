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


# ---------------------------------------------------------------------------- algos hetero
def _write_csv(path, n=400, seed=0):
    from algos.hetero_regression import make_subset_of_signals

    data = make_subset_of_signals(n, 2, n // 2, noisy_sigma=100.0, random_state=seed)
    lines = ["# a comment line", "x1,x2,label,y"]
    lines += [f"{a:.10g},{b:.10g},name{i},{t:.10g}" for i, (a, b, t) in enumerate(zip(data.X[:, 0], data.X[:, 1], data.y))]
    path.write_text("\n".join(lines) + "\n")
    return data


def test_hetero_fit_csv_json(tmp_path, capsys):
    data = _write_csv(tmp_path / "d.csv")
    argv = ["hetero", "--csv", str(tmp_path / "d.csv"), "--target", "y", "--features", "x1,x2", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["estimator"]: r for r in out["results"]}
    assert set(rows) == {"huber", "cmed", "lad", "ols"}
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
    lines = {ln.split()[0]: ln.split() for ln in out.splitlines() if ln.split() and ln.split()[0] in ("huber", "lad", "ols")}
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
