"""The built-in benchmarks at published scale: RockSample's published maps (against the model files
they come from) and Tag (state by state against SARSOP's TagAvoid.pomdpx), with value checks
against published figures."""

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from algos.pomdp import PointBasedSolver, read_pomdpx
from algos.pomdp._builtin import rock_sample, rock_sample_map, tag
from tests._data import missing_data


def _pomdpx(shared_data_dir, name):
    path = shared_data_dir / "pomdp" / "pomdpx" / name
    if not path.exists():
        missing_data(path)
    return path


# ------------------------------------------------------------------------------------ RockSample
def test_rock_sample_7_8_map_is_the_published_one(shared_data_dir):
    """Start cell, rock cells and sensor efficiency of the (7, 8) map against the POMDPX file: its
    Description and every check action's observation probability."""
    path = _pomdpx(shared_data_dir, "RockSample_7_8.pomdpx")
    text = path.read_text(encoding="latin-1")
    desc = ET.fromstring(text.split("?>", 1)[1]).find("Description").text
    start, rocks, d0 = rock_sample_map(7, 8)
    m = re.search(r"initial position is at \((\d+) (\d+)\)", desc)
    assert start == (int(m.group(1)), int(m.group(2)))
    listed = {int(i): (int(x), int(y)) for i, x, y in re.findall(r"Rock(\d+) is at \((\d+),(\d+)\)", desc)}
    assert [listed[i] for i in range(8)] == [tuple(p) for p in rocks.tolist()]
    # check action ac<i> at robot cell s<x><y>: P(ogood | rock good) = (1 + 2^(-d/d0)) / 2
    n_checked = 0
    for inst, table in re.findall(r"<Instance>(ac\d s\d\d [-* ]+)</Instance>\s*<ProbTable>([^<]*)</ProbTable>", text):
        a, cell = inst.split()[:2]
        i, x, y = int(a[2:]), int(cell[1]), int(cell[2])
        p = [float(v) for v in table.split()]
        d = np.hypot(x - rocks[i, 0], y - rocks[i, 1])
        acc = 0.5 * (1 + 2.0 ** (-d / d0))
        # rows: the rock bad, good; columns: ogood, obad
        assert p == pytest.approx([1 - acc, acc, acc, 1 - acc], abs=1e-6)
        n_checked += 1
    assert n_checked == 8 * 49


def test_rock_sample_standard_layout_default_and_random_layout():
    m = rock_sample(4, 4)
    start, rocks, d0 = rock_sample_map(4, 4)
    np.testing.assert_array_equal(m.rock_positions, rocks)
    assert m == rock_sample(4, 4, layout="standard")
    nb = 16
    sx, sy = start
    assert np.allclose(m.b0[(sx * 4 + sy) * nb + np.arange(nb)], 1 / nb)
    # the (4, 4) file's sensor: efficiency exp(-d) (d0 = ln 2); check_1 at the start cell, rock 1 good
    s = (sx * 4 + sy) * nb + 1
    d = np.hypot(sx - rocks[0, 0], sy - rocks[0, 1])
    assert m.Z[5, s, 1] == pytest.approx(0.5 * (1 + np.exp(-d)), rel=1e-12)
    # the random layout stays, drawn from random_state; sizes without a map default to it
    r1 = rock_sample(4, 4, random_state=1, layout="random")
    assert r1 == rock_sample(4, 4, random_state=1, layout="random")
    assert not np.array_equal(r1.rock_positions, rocks)
    assert r1.Z[5, s, 1] == pytest.approx(0.5 * (1 + 2.0 ** (-np.hypot(sx - r1.rock_positions[0, 0],
                                                                        sy - r1.rock_positions[0, 1]) / 20)))
    assert rock_sample(3, 2) == rock_sample(3, 2, layout="random")
    assert rock_sample(5, 5).rock_positions.tolist() == rock_sample_map(5, 5)[1].tolist()


@pytest.mark.parametrize("n, k", [(4, 4), (5, 5), (5, 7), (7, 8), (11, 11)])
def test_rock_sample_maps_are_well_formed(n, k):
    start, rocks, d0 = rock_sample_map(n, k)
    assert start == (0, n // 2) and rocks.shape == (k, 2) and d0 > 0
    assert ((rocks >= 0) & (rocks < n)).all()
    assert len({tuple(p) for p in rocks.tolist()}) == k


def test_rock_sample_large_maps_hit_the_memory_budget_when_dense():
    with pytest.raises(ValueError, match=r"RockSample\(7, 8\) has S=12545.*dense T would need 15\.2 GiB"):
        rock_sample(7, 8, storage="dense")
    with pytest.raises(ValueError, match=r"RockSample\(11, 11\) has S=247809"):
        rock_sample(11, 11, layout="standard", storage="dense")


def test_rock_sample_bad_layout():
    with pytest.raises(ValueError, match=r"'layout'='standard' needs a published map .*\(3, 2\)"):
        rock_sample(3, 2, layout="standard")
    with pytest.raises(ValueError, match=r"'layout' must be one of"):
        rock_sample(4, 4, layout="smith")
    with pytest.raises(ValueError, match=r"no published RockSample map for \(n, k\) = \(6, 6\)"):
        rock_sample_map(6, 6)


def test_rock_sample_4_4_value_matches_published():
    """RockSample(4, 4) on the published map: V*(b0) about 17.92 (SARSOP, Kurniawati, Hsu & Lee,
    RSS 2008; HSVI 18.0 in Smith & Simmons, UAI 2004); the solver's bracket must sit there."""
    s = PointBasedSolver(time_limit=600.0, target_gap=1e-2).fit(rock_sample(4, 4))
    assert s.converged_
    assert 17.8 <= s.lower_bound_ <= s.upper_bound_ <= 18.1


# ------------------------------------------------------------------------------------------- Tag
def test_tag_equals_tagavoid_file_state_by_state(shared_data_dir):
    """The built-in Tag against SARSOP's TagAvoid.pomdpx read by :func:`read_pomdpx` (the file's
    cells Srv<v>rh<h> / Ttv<v>th<h> are our r<v><h> / t<v><h>, in the same order)."""
    path = _pomdpx(shared_data_dir, "TagAvoid.pomdpx")
    f = read_pomdpx(path)
    m = tag()
    assert [f"r{c.split(',')[0][-4]}{c.split(',')[0][-1]}" for c in f.states[::30]] == list(m.observations[:29])
    assert f.states[29].endswith("target_0=tagged") and f.observations[-1] == "yes"
    assert [a.lower() for a in f.actions] == list(m.actions)
    fT = f.T if isinstance(f.T, np.ndarray) else np.stack([t.toarray() for t in f.T])  # dense or sparse storage
    np.testing.assert_allclose(m.T, fT, atol=1e-12)
    np.testing.assert_allclose(m.Z, f.Z, atol=1e-12)
    np.testing.assert_array_equal(m.r, f.r)
    np.testing.assert_allclose(m.b0, f.b0, atol=1e-12)


def test_tag_structure_and_rewards():
    m = tag()
    assert (m.n_states, m.n_actions, m.n_observations) == (870, 5, 30)
    np.testing.assert_allclose(m.T.sum(axis=2), 1.0, atol=1e-12)
    np.testing.assert_allclose(m.Z.sum(axis=2), 1.0, atol=1e-12)
    assert m.discount == 0.95 and np.count_nonzero(m.b0) == 29 * 29
    np.testing.assert_allclose(m.b0[m.b0 > 0], 1 / 841)
    # Pineau et al.: -1 per move, +10 for a successful tag, -10 for a failed one
    assert set(np.unique(m.r[:, :4])) == {-1.0}
    assert set(np.unique(m.r[:, 4])) == {-10.0, 0.0, 10.0}
    same = [rc * 30 + rc for rc in range(29)]
    np.testing.assert_array_equal(m.r[same, 4], 10.0)
    tagged = [rc * 30 + 29 for rc in range(29)]
    np.testing.assert_array_equal(m.r[tagged, 4], 0.0)
    np.testing.assert_array_equal(m.T[4, same, tagged], 1.0)
    # the robot's cell is observed; "yes" exactly where robot and target share a cell after a move
    yes = 29
    for s2 in range(870):
        rc, t = divmod(s2, 30)
        assert m.Z[0, s2, yes] == (1.0 if t == rc else 0.0)
        assert m.Z[4, s2, rc] == 1.0
    # the target runs away: from the robot at (4, 0), a target at (4, 2) moves east w.p. 0.4
    r40, t42, t43 = 0, 2, 3
    assert m.T[4, r40 * 30 + t42, r40 * 30 + t42] == 1.0  # catch: the target stays
    assert m.T[0, r40 * 30 + t42, 10 * 30 + t43] == pytest.approx(0.4)  # robot north to (3, 0)


def test_tag_value_in_published_range():
    """A short point-based run on Tag brackets V*(b0); its lower bound lands in the published
    range (PBVI -9.18, HSVI -6.37, SARSOP -6.03)."""
    s = PointBasedSolver(time_limit=600.0, target_gap=0.0, max_trials=60).fit(tag())
    assert s.lower_bound_ <= s.upper_bound_
    assert -10.0 <= s.lower_bound_ <= -5.0
