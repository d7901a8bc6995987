"""Targeted regression tests of bad input found by the fuzz battery (each names the argument)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from algos.cli import main
from algos.fair_matching import HybridRanking, ThresholdEqualFilling, evaluate, random_instance, sparse_random_instance
from theory.fair_matching import check_allocation

INST = random_instance(6, 8, 2, 0.5, random_state=0)


@pytest.mark.parametrize("bad", ["k", 3, None, INST])
def test_evaluate_estimator_must_be_an_allocator(bad):
    with pytest.raises(TypeError, match="'estimator'"):
        evaluate(bad, [INST])


@pytest.mark.parametrize("bad", [3, "abc", 2.5])
def test_evaluate_instances_must_be_instances(bad):
    with pytest.raises(TypeError, match="'instances'"):
        evaluate(ThresholdEqualFilling(), bad)


@pytest.mark.parametrize("bad, err", [(math.nan, TypeError), (math.inf, TypeError), (2.5, TypeError),
                                      ("a", TypeError), (2 + 1j, TypeError), (-1, ValueError), (1, ValueError)])
def test_evaluate_n_runs_is_checked_for_every_allocator(bad, err):
    for est in (ThresholdEqualFilling(gamma=0.5), HybridRanking(gamma=0.5)):
        with pytest.raises(err, match="'n_runs'"):
            evaluate(est, [INST], n_runs=bad, random_state=0)


def test_evaluate_valid_calls_unchanged():
    det = evaluate(ThresholdEqualFilling(gamma=0.5), INST, n_runs=2)
    assert det["randomized"] is False and det["per_instance"][0]["usw_se"] == 0.0
    rnd = evaluate(HybridRanking(gamma=0.5), (INST,), n_runs=5, random_state=0)
    assert rnd["randomized"] is True and rnd["usw_ratio"]["n"] == 1


def test_sparse_random_instance_with_a_huge_degree_links_every_agent():
    inst = sparse_random_instance(5, 4, 2, avg_degree=1e200, random_state=0)
    # every item draws n_agents = 5 neighbours with replacement: at least one, at most 5 distinct
    degrees = np.diff(inst.indptr)
    assert inst.n_items == 4 and degrees.min() >= 1 and degrees.max() <= 5


@pytest.mark.parametrize("bad", [math.inf, -math.inf])
def test_check_allocation_rejects_an_infinite_tolerance(bad):
    with pytest.raises(ValueError, match="'tol'"):
        check_allocation(np.eye(2), np.eye(2), tol=bad)


BASE = ["matching", "--algorithm", "tef", "--n-runs", "2"]


@pytest.mark.parametrize("extra, flag", [
    (["--instance", "davis", "--p", "0.3"], "--p"),
    (["--alpha", "nan"], "--alpha"),
    (["--alpha", "0.3"], "--alpha"),
    (["--instance", "triangular", "--n-items", "3"], "--n-items"),
    (["--instance", "ub", "--p", "0.2"], "--p"),
    (["--instance", "davis", "--n-agents", "6"], "--n-agents"),
])
def test_matching_cli_rejects_options_of_another_instance(extra, flag, capsys):
    assert main([*BASE, *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"algos matching: error: {flag} applies only to --instance")


def test_matching_cli_options_of_the_chosen_instance_still_work(capsys):
    assert main([*BASE, "--instance", "ub", "--alpha", "0.5", "--n-agents", "4", "--n-classes", "2", "--json"]) == 0
    assert main([*BASE, "--instance", "triangular", "--n-agents", "5", "--json"]) == 0
    assert main([*BASE, "--n-agents", "6", "--n-items", "8", "--p", "0.4", "--json"]) == 0
    capsys.readouterr()
    assert main([*BASE, "--instance", "ub", "--alpha", "nan"]) == 2
    assert "'alpha'" in capsys.readouterr().err


def test_matching_cli_reports_a_missing_instance_file_before_unused_options(tmp_path, capsys):
    missing = str(tmp_path / "missing.json")
    assert main([*BASE, "--instance", missing, "--n-agents", "3"]) == 2
    assert "missing.json" in capsys.readouterr().err
    path = tmp_path / "inst.json"
    INST.to_json(path)
    assert main([*BASE, "--instance", str(path), "--n-agents", "3"]) == 2
    assert "--n-agents applies only to" in capsys.readouterr().err
