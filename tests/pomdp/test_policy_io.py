"""Policy files: SARSOP .policy and pomdp-solve .alpha (read, write, round trip, bad files) and
policy-graph export of finite-state controllers (dot, JSON, .pg)."""

import json

import numpy as np
import pytest

from algos.pomdp import (
    PointBasedSolver,
    evaluate_fsc,
    policy_graph,
    read_policy,
    read_pomdp,
    tiger,
    write_policy,
    write_policy_graph,
)
from tests._data import missing_data


def _data(shared_data_dir, name):
    path = shared_data_dir / "pomdp" / name
    if not path.exists():
        missing_data(path)
    return path


def test_read_sarsop_files(shared_data_dir):
    """The two files SARSOP wrote: sizes, and the values at b0 SARSOP reports (its lower bounds
    19.3711 on tiger.95 and 1.88988 on 4x3.95, printed to 6 digits)."""
    for name, n, S, v in (("tiger.95.POMDP", 5, 2, 19.3711), ("4x3.95.POMDP", 1273, 11, 1.88988)):
        model = read_pomdp(_data(shared_data_dir, name))
        pol = read_policy(_data(shared_data_dir, f"policies/{name}.policy"), model)
        assert pol.alphas.shape == (n, S) and pol.format == "sarsop"
        assert abs(pol.value(model.b0) - v) <= 5e-5 * max(1.0, abs(v))


@pytest.mark.parametrize("ext", [".policy", ".alpha"])
def test_round_trip_exact(tmp_path, ext):
    s = PointBasedSolver(time_limit=5.0, target_gap=1e-2).fit(tiger())
    path = tmp_path / f"tiger{ext}"
    write_policy(path, s)
    pol = read_policy(path, tiger())
    np.testing.assert_array_equal(pol.alphas, s.alphas_)
    np.testing.assert_array_equal(pol.actions, s.actions_)


def test_size_mismatch(shared_data_dir):
    model = tiger()
    with pytest.raises(ValueError, match=r"4x3\.95\.POMDP\.policy.*length 11.*2 states"):
        read_policy(_data(shared_data_dir, "policies/4x3.95.POMDP.policy"), model)


@pytest.mark.parametrize("text, pattern", [
    ('<Policy><AlphaVector vectorLength="2" numVectors="2"><Vector action="0">1 2 </Vector>'
     '</AlphaVector></Policy>', "numVectors"),                        # truncated: fewer vectors
    ('<Policy><AlphaVector vectorLength="2" numVectors="1"><Vector action="0">1 x </Vector>'
     '</AlphaVector></Policy>', "expected numbers, got 'x'"),
    ('<Policy><AlphaVector vectorLength="3" numVectors="1"><Vector action="0">1 2 </Vector>'
     '</AlphaVector></Policy>', "expected 3 numbers, got 2"),
    ('<Policy><AlphaVector vectorLength="2"><Vector action="0">1 2 </Vector>', "line 1"),  # cut XML
    ('<Policy><AlphaVector vectorLength="2" numVectors="1"><Vector>1 2</Vector></AlphaVector></Policy>',
     "attribute 'action'"),
])
def test_malformed_sarsop(tmp_path, text, pattern):
    path = tmp_path / "bad.policy"
    path.write_text(text)
    with pytest.raises(ValueError, match=pattern) as err:
        read_policy(path)
    assert "bad.policy" in str(err.value)


@pytest.mark.parametrize("text, pattern", [
    ("0\n1 2\n\n1\n", "line 4: action 1 has no vector"),
    ("0\n1 2\n\n1\n1 2 3\n", "line 5: expected 2 numbers, got 3"),
    ("zero\n1 2\n", "line 1: expected an action index"),
])
def test_malformed_alpha(tmp_path, text, pattern):
    path = tmp_path / "bad.alpha"
    path.write_text(text)
    with pytest.raises(ValueError, match=pattern):
        read_policy(path)


def test_bad_format_and_action_range(tmp_path):
    with pytest.raises(ValueError, match="format"):
        read_policy(tmp_path / "x.txt")
    path = tmp_path / "p.alpha"
    path.write_text("7\n1 2\n")
    with pytest.raises(ValueError, match="action 7 outside"):
        read_policy(path, tiger())
    with pytest.raises(ValueError, match="cannot read"):
        read_policy(tmp_path / "missing.alpha")


def _pg_tables(text):
    rows = [list(map(int, line.split())) for line in text.strip().splitlines()]
    return np.array([r[1] for r in rows]), np.array([r[2:] for r in rows])


def test_policy_graph_formats(tmp_path):
    """The .pg and JSON exports describe the same controller: evaluating the tables read back
    gives the controller's exact value."""
    model = tiger()
    action = np.array([1, 0, 0])
    eta = np.array([[1, 2], [0, 2], [1, 0]])  # m0 = 1: renumbered to 0 in .pg
    v = evaluate_fsc(model, action, eta, m0=1)
    pg = policy_graph(action=action, eta=eta, m0=1, format="pg")
    a2, e2 = _pg_tables(pg)
    assert abs(evaluate_fsc(model, a2, e2, m0=0) - v) <= 1e-12
    js = json.loads(policy_graph(action=action, eta=eta, m0=1, format="json", pomdp=model))
    a3 = np.array([n["action"] for n in js["nodes"]])
    e3 = np.array([[n["next"][o] for o in model.observations] for n in js["nodes"]])
    assert abs(evaluate_fsc(model, a3, e3, m0=js["m0"]) - v) <= 1e-12
    dot = write_policy_graph(tmp_path / "f.dot", action=action, eta=eta, m0=1, pomdp=model)
    assert dot.startswith("digraph") and "start -> n1" in dot and (tmp_path / "f.dot").read_text() == dot
    with pytest.raises(ValueError, match="not total"):
        policy_graph(action=action, eta=np.array([[1, 5], [0, 2], [1, 0]]), format="pg")
    with pytest.raises(ValueError, match="'format'"):
        policy_graph(action=action, eta=eta, format="svg")
