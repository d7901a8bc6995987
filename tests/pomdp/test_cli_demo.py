"""``algos pomdp`` subcommand and the pomdp section of ``algos demo``."""

import json

import pytest

from algos.cli import main
from algos.pomdp import PBVI, RECAPController, tiger

EXACT_TOL = 1e-9  # two float64 exact evaluations of the same FSC


def test_info_tiger_json(capsys):
    assert main(["pomdp", "info", "tiger", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["states"], out["actions"], out["observations"]) == (2, 3, 2)
    assert out["discount"] == 0.95
    assert out["reward_range"] == [-100.0, 10.0]


def test_info_shared_file_matches_spec_table(shared_data_dir, capsys):
    # spec pomdp.md §5 table: hallway S = 60, A = 5, O = 21, discount 0.95
    assert main(["pomdp", "info", str(shared_data_dir / "pomdp" / "hallway.POMDP"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["states"], out["actions"], out["observations"]) == (60, 5, 21)
    assert out["discount"] == 0.95


def test_solve_tiger_reports_exact_values_inside_pbvi_bracket(capsys):
    assert main(["pomdp", "solve", "tiger", "--memory", "5", "--baseline", "kmeans,window",
                 "--solver", "pbvi", "--pbvi-beliefs", "60", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["controller"]: r for r in out["controllers"]}
    assert list(rows) == ["RECAPController", "KMeansCodebook", "FiniteWindowController"]
    assert out["blind_value"] == pytest.approx(-20.0, abs=EXACT_TOL)
    for r in rows.values():  # achievability: no FSC beats V*(b0) <= the PBVI upper bound
        assert r["value"] <= out["solver"]["upper"] + EXACT_TOL
    # the CLI reports the same number as the library with the same seed and PBVI run
    pbvi = PBVI(n_beliefs=60, random_state=0).fit(tiger())
    ref = RECAPController(n_memory=5, random_state=0).fit(tiger(), alphas=pbvi).value_
    assert rows["RECAPController"]["value"] == pytest.approx(ref, abs=EXACT_TOL)
    assert rows["RECAPController"]["value"] >= 19.0  # issue 5: >= 19.0 by K = 5
    assert rows["RECAPController"]["bound"]["U2"] >= out["solver"]["lower"] - rows["RECAPController"]["value"]
    # the controller table is the fitted controller: total, and its initial node is node m0
    table = rows["RECAPController"]["table"]
    assert len(table) == rows["RECAPController"]["nodes"]
    assert sum(r["initial"] for r in table) == 1
    for r in table:
        assert r["action"] in ("listen", "open-left", "open-right")
        assert set(r["next"]) == {"tiger-left", "tiger-right"}
        assert all(0 <= k < len(table) for k in r["next"].values())
        assert abs(sum(r["belief_top"].values()) - 1.0) <= EXACT_TOL  # S = 2: the top states are all states


def test_solve_text_output_with_simulation(capsys):
    assert main(["pomdp", "solve", "tiger", "--memory", "2", "--simulate", "2000"]) == 0
    out = capsys.readouterr().out
    assert "PBS bracket" in out and "RECAPController" in out and "+-" in out
    assert "trivial bound" in out and "U2" in out
    assert "RECAP controller (" in out and "next: tiger-left->" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["pomdp", "solve", "tiger", "--memory", "0"],
         "'--memory'=0 (RECAPController's n_memory): 'n_memory' must be an int in [1, inf]; got 0."),
        (["pomdp", "solve", "tiger", "--memory", "x"],
         "argument --memory: 'memory' must be an int or a comma-separated list of ints; got 'x'"),
        (["pomdp", "solve", "tiger", "--solver", "pbvi", "--pbvi-beliefs", "0"],
         "'--pbvi-beliefs'=0 (PBVI's n_beliefs): 'n_beliefs' must be an int in [1, inf]; got 0."),
        (["pomdp", "solve", "tiger", "--baseline", "sarsop"], "got 'sarsop'"),
        (["pomdp", "info", "rocksample:4"], "'model' must be 'rocksample:N,K'"),
        (["pomdp", "info", "no_such_file.POMDP"], "no_such_file.POMDP"),
        (["pomdp", "solve", "tiger", "--discount", "1.0"], "discount"),
        (["pomdp", "solve", "tiger", "--time-limit", "0"],
         "'--time-limit'=0.0 (PointBasedSolver's time_limit): 'time_limit' must be a float in (0, inf); got 0.0."),
        (["pomdp", "solve", "tiger", "--target-gap", "-1"],
         "'--target-gap'=-1.0 (PointBasedSolver's target_gap): 'target_gap' must be a float in [0, inf]; got -1.0."),
        (["pomdp", "solve", "tiger", "--policy-out", "x.txt"], "'--policy-out' must end in .policy or .alpha"),
        (["pomdp", "solve", "tiger", "--graph-out", "x.png"], "'--graph-out'"),
    ],
)
def test_bad_input_is_a_clear_error(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_solve_writes_policy_and_graph(tmp_path, capsys):
    from algos.pomdp import read_policy

    pol, graph = tmp_path / "t.policy", tmp_path / "t.pg"
    assert main(["pomdp", "solve", "tiger", "--memory", "3", "--solver", "pbs", "--time-limit", "10",
                 "--policy-out", str(pol), "--graph-out", str(graph), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    p = read_policy(pol, tiger())
    assert p.value(tiger().b0) == pytest.approx(out["solver"]["lower"], abs=1e-12)
    assert out["solver"]["upper"] - out["solver"]["lower"] <= 1e-3
    rows = [list(map(int, line.split())) for line in graph.read_text().splitlines()]
    assert len(rows) == out["controllers"][0]["nodes"]
    rec = out["controllers"][0]["bound"]
    assert rec["vacuous"] == {k: rec[k] >= rec["trivial"] for k in ("U1", "U2", "U3")}


def test_malformed_file_names_line(tmp_path, capsys):
    path = tmp_path / "bad.POMDP"
    path.write_text("discount: 0.9\nvalues: reward\nstates: 2\nactions: 2\nobservations: 2\nT: 0 : 0 : 7 1.0\n")
    assert main(["pomdp", "info", str(path)]) == 2
    err = capsys.readouterr().err
    assert "bad.POMDP" in err and "line 6" in err


def test_demo_section_full_checks_hold(tmp_path):
    from algos.pomdp._demo import run_demo

    section = run_demo(tmp_path, quick=True, random_state=3)
    assert section.checks and all(c.passed for c in section.checks), [
        (c.name, c.measured, c.guarantee) for c in section.checks if not c.passed]
    assert (tmp_path / "pomdp_memory_vs_value.png").stat().st_size > 10_000
    names = " ".join(c.name for c in section.checks)
    assert "achievability" in names and "converse" in names


@pytest.mark.parametrize("argv, message", [
    (["--pbvi-beliefs", "10"], "--pbvi-beliefs applies only to `--solver pbvi`"),
    (["--solver", "pbvi", "--time-limit", "5"], "--time-limit applies only to `--solver pbs`"),
    (["--solver", "pbvi", "--target-gap", "0.1"], "--target-gap applies only to `--solver pbs`"),
])
def test_cli_rejects_options_of_the_other_solver(argv, message, capsys):
    assert main(["pomdp", "solve", "tiger", "--memory", "2", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_solve_with_several_memory_values_is_a_sweep_equal_to_single_runs(capsys):
    """``--memory 2,4`` fits every K on one PBVI run (one sweep task per K), sequentially or on local
    processes, and reports what each single-K run reports."""
    common = ["pomdp", "solve", "tiger", "--solver", "pbvi", "--pbvi-beliefs", "40", "--baseline", "kmeans", "--json"]
    single = {}
    for K in (2, 4):
        assert main(common + ["--memory", str(K)]) == 0
        single[K] = [r["value"] for r in json.loads(capsys.readouterr().out)["controllers"]]
    for engine in ([], ["--backend", "loky", "--n-jobs", "2"]):
        assert main(common + ["--memory", "2,4"] + engine) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["memory"] == [2, 4] and "controllers" not in out
        assert {s["memory"]: [r["value"] for r in s["controllers"]] for s in out["sweep"]} == single
    assert main(common + ["--memory", "2,4", "--backend", "ray"]) == 2
    assert "'--scheduler' is required with --backend ray" in capsys.readouterr().err
    assert main(common + ["--memory", "2,4", "--graph-out", "g.dot"]) == 2
    assert "give one --memory value" in capsys.readouterr().err
