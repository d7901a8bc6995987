"""The ``algos potara`` subcommand (through its own argparse parser) and the demo section."""

import argparse
import json
import sys

import numpy as np
import pytest

from algos.federated import _cli

SMALL = ["--clients", "5", "--rounds", "3", "--local-epochs", "2", "--finetune-epochs", "10"]


def _parse(argv):
    ap = argparse.ArgumentParser(prog="algos")
    sub = ap.add_subparsers(dest="command")
    _cli.add_parser(sub, "potara")
    return ap.parse_args(["potara", *argv])


def test_cli_json_on_digits(capsys):
    args = _parse(["--dataset", "digits", "--alpha", "0.3", "--baselines", "fedavg,fedavg_ft", "--json", *SMALL])
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    methods = [r["method"] for r in out["results"]]
    assert methods == ["potara", "fedavg", "fedavg_ft"]
    assert out["clients"] == 5 and 0.0 <= out["mean_lambda"] <= 1.0
    assert all(0.0 <= r["mean_client_accuracy"] <= 1.0 for r in out["results"])
    fed = next(r for r in out["results"] if r["method"] == "fedavg")
    assert fed["bytes"] == next(r for r in out["results"] if r["method"] == "potara")["bytes"]


def test_cli_text_and_csv_with_client_column(tmp_path, capsys):
    rng = np.random.default_rng(0)
    n = 120
    X = rng.normal(size=(n, 3))
    site = rng.integers(0, 3, n)
    y = (X[:, 0] + 0.5 * site > 0.5).astype(int)
    path = tmp_path / "fed.csv"
    lines = ["x1,x2,x3,label,site"] + [f"{a:.4f},{b:.4f},{c:.4f},{t},{s}" for (a, b, c), t, s in zip(X, y, site)]
    path.write_text("\n".join(lines) + "\n")
    args = _parse(["--csv", str(path), "--target", "label", "--client-column", "site", "--baselines", "none",
                   "--per-client", *SMALL])
    assert args.func(args) == 0
    text = capsys.readouterr().out
    assert "potara" in text and "mean lambda" in text and "n_train" in text


def test_cli_bad_input():
    with pytest.raises(ValueError, match="baselines"):
        args = _parse(["--baselines", "fedavg,nope", *SMALL])
        args.func(args)
    with pytest.raises(ValueError, match="alpha"):
        args = _parse(["--alpha", "0", *SMALL])
        args.func(args)
    with pytest.raises(ValueError, match="target"):
        args = _parse(["--csv", "x.csv", *SMALL])
        args.func(args)


def test_cli_flower_without_flwr_gives_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "flwr", None)  # import flwr -> ImportError
    for mod in [m for m in sys.modules if m.startswith("flwr.")]:
        monkeypatch.setitem(sys.modules, mod, None)
    args = _parse(["--flower", "--baselines", "none", *SMALL])
    with pytest.raises(ImportError, match=r"algos-theory\[federated\]"):
        args.func(args)


def test_demo_section_quick(tmp_path):
    from algos.federated._demo import run_demo

    sec = run_demo(tmp_path, quick=True, random_state=0)
    assert sec.module == "federated"
    failed = [c.name for c in sec.checks if not c.passed]
    assert not failed, failed
    assert all((tmp_path / f).is_file() for f in sec.figures)


def test_cli_interrupted_fit_prints_what_it_has_and_exits_130(monkeypatch, capsys):
    import algos.federated._federated_base as potara_module

    calls = {"n": 0}
    mean = potara_module._weighted_mean

    def interrupt_in_round_2_of_the_second_method(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5:  # potara runs rounds 1-3, then fedavg is interrupted in its round 2
            raise KeyboardInterrupt
        return mean(*args, **kwargs)

    monkeypatch.setattr(potara_module, "_weighted_mean", interrupt_in_round_2_of_the_second_method)
    args = _parse(["--dataset", "digits", "--alpha", "0.3", "--baselines", "fedavg,fedavg_ft", "--json", *SMALL])
    assert args.func(args) == 130
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert [(r["method"], r["interrupted"]) for r in out["results"]] == [("potara", False), ("fedavg", True)]
    assert any("InterruptedFitWarning" in w and "after 1 of 3 rounds" in w for w in out["results"][1]["warnings"])
    assert "interrupted" in captured.err
