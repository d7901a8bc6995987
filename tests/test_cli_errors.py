"""Command-line errors: one line on stderr, exit code 2, no traceback; unknown options point to the
subcommand's help with a suggestion for near misses; a missing file is 'no such file: X'; a missing
optional extra is named once."""

from __future__ import annotations

import sys

import pytest

from algos.cli import main


def _one_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("argv,command,suggestion", [
    (["pomdp", "solve", "tiger", "--memroy", "3"], "pomdp", "--memory"),
    (["hetero", "--dataset", "engel", "--interecpt"], "hetero", "--intercept"),
    (["lgcp", "fit", "redwood", "--out", "x", "--windw", "0,1,0,1"], "lgcp", "--window"),
    (["demo", "--quik"], "demo", "--quick"),
])
def test_unknown_option_points_to_the_subcommand_help_with_a_suggestion(argv, command, suggestion, capsys):
    assert main(argv) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"algos {command}: error: unrecognized arguments:")
    assert f"did you mean {suggestion}?" in line
    assert f"(see 'algos {command} --help')" in line


def test_unknown_option_without_a_near_miss_has_no_suggestion(capsys):
    assert main(["hetero", "--memroy"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "did you mean" not in line and "(see 'algos hetero --help')" in line


def test_top_level_unknown_option_points_to_the_top_level_help(capsys):
    assert main(["--verison"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("algos: error:") and "did you mean --version?" in line and "'algos --help'" in line


def test_bad_choice_in_a_subcommand_names_the_subcommand_help(capsys):
    assert main(["pomdp", "solv", "tiger"]) == 2
    assert "(see 'algos pomdp --help')" in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("argv,name", [
    (["hetero", "--csv", "no_such_table.csv", "--target", "y"], "no_such_table.csv"),
    (["lgcp", "kfunction", "no_such_points.csv"], "no_such_points.csv"),
    (["lgcp", "fit", "redwood", "--out", "OUT", "--covariates", "no_such_cov.npz"], "no_such_cov.npz"),
    (["matching", "--instance", "no_such_instance.json"], "no_such_instance.json"),
])
def test_missing_file_is_no_such_file(argv, name, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    line = _one_line(capsys.readouterr().err)
    assert f"no such file: {name}" in line and "Errno" not in line


def test_pomdp_missing_file_lists_the_built_in_models(capsys, tmp_path, monkeypatch):
    from algos.datasets import pomdp_names

    monkeypatch.chdir(tmp_path)
    assert main(["pomdp", "solve", "tigr-grid"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("algos pomdp: error: no such file: tigr-grid (built-in models: tiger, rocksample:N,K")
    for name in pomdp_names():
        assert name in line


def test_pomdp_file_of_a_shipped_name_takes_precedence(capsys, tmp_path, monkeypatch):
    from algos.pomdp import tiger

    monkeypatch.chdir(tmp_path)
    tiger().to_file(tmp_path / "hallway")  # a local file named like a shipped model
    assert main(["pomdp", "info", "hallway"]) == 0
    assert capsys.readouterr().out.startswith("hallway: S = 2, A = 3, O = 2")


def test_flower_hint_is_printed_once(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "flwr", None)  # `import flwr` raises ImportError
    monkeypatch.delitem(sys.modules, "algos.federated.flower", raising=False)
    code = main(["potara", "--dataset", "digits", "--clients", "4", "--rounds", "1", "--local-epochs", "1",
                 "--finetune-epochs", "1", "--baselines", "fedavg", "--flower"])
    assert code == 2
    line = _one_line(capsys.readouterr().err)
    assert line.count("pip install") == 1 and line.count("needs Flower") == 1
    assert 'pip install "algos-theory[federated]"' in line
