"""``algos circle`` (through add_parser/run) and the continual section of ``algos demo``."""

import argparse
import json

import pytest

from algos.continual import _cli
from algos.continual._demo import run_demo


def _parse(*argv):
    parser = argparse.ArgumentParser(prog="algos")
    sub = parser.add_subparsers(dest="command")
    _cli.add_parser(sub, "circle")
    return parser.parse_args(["circle", *argv])


def test_cli_json_summary(capsys):
    args = _parse("--dataset", "digits", "--tasks", "3", "--reservoirs", "1", "--groups", "1", "--units", "2",
                  "--max-samples", "300", "--baselines", "raw_slda", "--json")
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["data"]["tasks"]) == 3
    circle, raw = out["results"]
    assert circle["model"].startswith("CIRCLE") and raw["model"] == "raw_slda"
    for r in out["results"]:
        assert len(r["A_step"]) == 3 and r["A_last"] == r["A_step"][-1]
        assert r["acc_matrix"][0][1] is None  # above the diagonal: not yet learned
        assert 0.0 <= r["forgetting"] <= 1.0


def test_cli_text_table(capsys):
    args = _parse("--dataset", "digits", "--tasks", "2", "--reservoirs", "2", "--groups", "2", "--units", "2",
                  "--max-samples", "200")
    assert _cli.run(args) == 0
    text = capsys.readouterr().out
    assert "A_last" in text and "CIRCLE (R=2, G=2)" in text and "accuracy matrix" in text


def test_cli_bad_input(tmp_path):
    with pytest.raises(ValueError, match="'baselines' must be a subset"):
        _cli.run(_parse("--baselines", "lwf"))
    with pytest.raises(ValueError, match=r"'--groups' must be <= '--reservoirs' = 2; got 3"):
        _cli.run(_parse("--reservoirs", "2", "--groups", "3"))
    # the estimator's own constraints, reported under the option's name, before any data is loaded
    with pytest.raises(ValueError, match="'--reservoirs'"):
        _cli.run(_parse("--reservoirs", "0", "--groups", "1", "--dataset", str(tmp_path / "missing.npz")))
    with pytest.raises(ValueError, match="'--shrinkage'"):
        _cli.run(_parse("--shrinkage", "2", "--dataset", str(tmp_path / "missing.npz")))
    with pytest.raises(ValueError, match="'dataset' must be"):
        _cli.run(_parse("--dataset", str(tmp_path / "x.png")))
    with pytest.raises(ValueError, match=r"'n_tasks' must be an int in \[1, 10\]"):
        _cli.run(_parse("--tasks", "11"))


def test_cli_npz_path(tmp_path, capsys):
    import numpy as np

    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 20)
    x = (rng.random((60, 4, 4, 3)) * 80 + 60 * y[:, None, None, None]).astype(np.uint8)
    path = tmp_path / "tiny.npz"
    np.savez(path, x=x, y=y)
    args = _parse("--dataset", str(path), "--tasks", "3", "--reservoirs", "1", "--groups", "1", "--units", "2",
                  "--json")
    assert _cli.run(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["data"]["image_shape"] == [3, 4, 4]
    assert out["results"][0]["A_last"] > 0.5


def test_demo_quick_section_passes(tmp_path):
    section = run_demo(tmp_path, quick=True, random_state=0)
    assert section.module == "continual"
    failed = [c.name for c in section.checks if not c.passed]
    assert not failed, failed
    assert len(section.checks) >= 6
    for fig in section.figures:
        assert (tmp_path / fig).stat().st_size > 0


def test_cli_resolves_mnist5k(shared_data_dir, monkeypatch):
    monkeypatch.setenv("ALGOS_SHARED_DATA", str(shared_data_dir))
    assert _cli._resolve_dataset("mnist5k").endswith("mnist_5k.csv.gz")
    monkeypatch.setenv("ALGOS_SHARED_DATA", "/nonexistent/folder")
    with pytest.raises(FileNotFoundError, match="mnist5k is not shipped"):
        _cli._resolve_dataset("mnist5k")
