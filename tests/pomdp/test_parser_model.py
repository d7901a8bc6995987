"""POMDP model, Cassandra .POMDP parser/writer, and built-in benchmarks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from algos.pomdp._builtin import rock_sample, tiger
from algos.pomdp._model import POMDP
from algos.pomdp.io._parser import POMDPFileWarning, parse_pomdp, read_pomdp, write_pomdp

# (S, A, O, discount), copied from the table of specs/pomdp.md §5 (not from the parser). 1d.pomdp is
# not in the table: its header declares 4 named states, 2 actions, 2 observations, discount 0.75.
SPEC_TABLE = {
    "tiger.95.POMDP": (2, 3, 2, 0.95),
    "paint.95.POMDP": (4, 4, 2, 0.95),
    "network.POMDP": (7, 4, 2, 0.95),
    "shuttle.95.POMDP": (8, 3, 5, 0.95),
    "cheese.95.POMDP": (11, 4, 7, 0.95),
    "4x3.95.POMDP": (11, 4, 6, 0.95),
    "4x4.95.POMDP": (16, 4, 2, 0.95),
    "parr95.95.pomdp": (7, 3, 6, 0.95),
    "stand-tiger.95.POMDP": (4, 4, 4, 0.95),
    "tiger-grid.POMDP": (36, 5, 17, 0.95),
    "hallway.POMDP": (60, 5, 21, 0.95),
    "aloha.10.POMDP": (30, 9, 3, 0.999),
    "mini-hall2.pomdp": (13, 3, 9, 0.95),
    "1d.pomdp": (4, 2, 2, 0.75),
}


def _header(S=2, A=2, O=2, extra=""):
    return f"discount: 0.9\nvalues: reward\nstates: {S}\nactions: {A}\nobservations: {O}\n{extra}\n"


# A valid 2-state, 2-action, 2-observation base; tests append to it (later entries override).
BASE = _header() + "T: * uniform\nO: * uniform\n"


# ---------------------------------------------------------------- data files
@pytest.mark.parametrize("fname", sorted(SPEC_TABLE))
def test_data_files_parse_with_spec_sizes(shared_data_dir, fname):
    S, A, O, gamma = SPEC_TABLE[fname]
    kw = {"missing_rows": "self"} if fname == "mini-hall2.pomdp" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", POMDPFileWarning)  # none of the files needs a >1e-4 repair
        m = read_pomdp(shared_data_dir / "pomdp" / fname, **kw)
    assert (m.n_states, m.n_actions, m.n_observations) == (S, A, O)
    assert m.discount == gamma
    np.testing.assert_allclose(m.T.sum(axis=2), 1.0, atol=1e-12)
    np.testing.assert_allclose(m.Z.sum(axis=2), 1.0, atol=1e-12)
    np.testing.assert_allclose(m.b0.sum(), 1.0, atol=1e-12)
    assert np.isfinite(m.r).all()


def test_torture_file_fails_on_quoted_string(shared_data_dir):
    # pomdp-ex.pomdp uses a quoted "uniform" (line 13), which Cassandra's scanner does not accept.
    path = shared_data_dir / "pomdp" / "pomdp-ex.pomdp"
    with pytest.raises(ValueError, match=r"pomdp-ex\.pomdp, line 13: unexpected token '\"uniform\"'"):
        read_pomdp(path)


def test_tiger_file_values(shared_data_dir):
    m = read_pomdp(shared_data_dir / "pomdp" / "tiger.95.POMDP")
    assert m.states == ("tiger-left", "tiger-right")
    assert m.actions == ("listen", "open-left", "open-right")
    a = m.actions.index("listen")
    np.testing.assert_array_equal(m.T[a], np.eye(2))
    np.testing.assert_array_equal(m.Z[a], [[0.85, 0.15], [0.15, 0.85]])
    np.testing.assert_array_equal(m.r[:, a], [-1.0, -1.0])
    np.testing.assert_array_equal(m.r[:, 1], [-100.0, 10.0])
    np.testing.assert_array_equal(m.b0, [0.5, 0.5])
    assert m.allclose(tiger(0.95), atol=1e-15)


def test_4x4_rows_renormalised_silently(shared_data_dir):
    # Rows sum to 1 only to ~5e-6: below the 1e-4 warning threshold, so renormalised silently.
    path = shared_data_dir / "pomdp" / "4x4.95.POMDP"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = read_pomdp(path)
    np.testing.assert_allclose(m.T.sum(axis=2), 1.0, atol=1e-14)
    # strict mode rejects the raw file, naming the row and the deviation
    with pytest.raises(ValueError, match=r"4x4\.95\.POMDP: row T\[.*\] .*sums to .*deviation 5e-06 > 1e-09"):
        read_pomdp(path, renormalize=False)


def test_mini_hall2_zero_row(shared_data_dir):
    path = shared_data_dir / "pomdp" / "mini-hall2.pomdp"
    with pytest.raises(ValueError, match=r"mini-hall2\.pomdp: row T\['a0', s='s12'\] is missing"):
        read_pomdp(path)  # default missing_rows="error"
    m = read_pomdp(path, missing_rows="self")
    np.testing.assert_array_equal(m.T[:, 12, :], np.eye(13)[[12, 12, 12]])
    u = read_pomdp(path, missing_rows="uniform")
    np.testing.assert_allclose(u.T[:, 12, :], 1.0 / 13)
    np.testing.assert_array_equal(np.delete(u.T, 12, axis=1), np.delete(m.T, 12, axis=1))


# ---------------------------------------------------------------- round trip
@st.composite
def random_pomdps(draw):
    S = draw(st.integers(1, 5))
    A = draw(st.integers(1, 4))
    O = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)

    def stoch(shape):
        P = rng.random(shape) ** 3  # some near-zero entries
        if draw(st.booleans()):
            P[P < 0.2] = 0.0
            P[..., 0] += 1e-3
        return P / P.sum(axis=-1, keepdims=True)

    r = rng.normal(scale=draw(st.sampled_from([1.0, 1e-8, 1e5])), size=(S, A))
    names = draw(st.booleans())
    return POMDP(
        stoch((A, S, S)), stoch((A, S, O)), r, draw(st.floats(0.0, 1.0)), stoch((S,)),
        [f"st-{i}" for i in range(S)] if names else None,
        [f"act_{i}" for i in range(A)] if names else None,
        [f"ob{i}" for i in range(O)] if names else None,
    )


@given(random_pomdps())
def test_round_trip(m):
    text = write_pomdp(m)
    back = parse_pomdp(text)
    assert back.allclose(m, atol=1e-12)
    assert back == m  # in fact exact
    assert back.to_file() == text


def test_file_methods(tmp_path):
    m = tiger()
    p = tmp_path / "t.pomdp"
    text = m.to_file(p)
    assert p.read_text() == text
    assert POMDP.from_file(p) == m
    assert POMDP.parse(text, "x") == m


# ---------------------------------------------------------------- grammar forms
def test_names_vs_indices_and_single_entries():
    text = """
    discount: 0.5
    states: left right   # names
    actions: go stay
    observations: 2
    T: go : left : right 1.
    T: go : 1 : 0 1
    T: stay identity
    O: * : * : o0 .5
    O: * : * : 1 5e-1
    R: go : left : * : * 3
    """
    m = parse_pomdp(text)
    assert m.states == ("left", "right") and m.observations == ("o0", "o1")
    np.testing.assert_array_equal(m.T[0], [[0, 1], [1, 0]])
    np.testing.assert_array_equal(m.T[1], np.eye(2))
    np.testing.assert_array_equal(m.Z, 0.5)
    np.testing.assert_array_equal(m.r, [[3, 0], [0, 0]])


def test_row_and_matrix_forms_and_keywords():
    text = _header(3, 2, 2) + """
start: 0.2 0.3 0.5
T: 0
0.1 0.2 0.7
0 1 0
1 0 0
T: 0 : 1
uniform
T: 1 : 2 reset
T: 1 : 0 0 0 1
T: 1 : 1 0 1 0
O: 0
1 0
0 1
.5 .5
O: 1 : * 0.25 0.75
"""
    m = parse_pomdp(text)
    np.testing.assert_allclose(m.T[0], [[0.1, 0.2, 0.7], [1 / 3, 1 / 3, 1 / 3], [1, 0, 0]])
    np.testing.assert_array_equal(m.T[1], [[0, 0, 1], [0, 1, 0], [0.2, 0.3, 0.5]])
    np.testing.assert_array_equal(m.Z[0], [[1, 0], [0, 1], [0.5, 0.5]])
    np.testing.assert_array_equal(m.Z[1], [[0.25, 0.75]] * 3)
    np.testing.assert_array_equal(m.b0, [0.2, 0.3, 0.5])


def test_wildcards_and_later_entries_override():
    text = BASE + """
R: * : * : * : * 1
R: 0 : * : * : * 2
R: 0 : 1 : * : * 5
R: * : 1 : * : * 7
R: 1 : 0 : 1 : 0 100
"""
    m = parse_pomdp(text)
    # r[0, 1] = 1 except the (s'=1, o=0) cell (prob 1/4) which is 100 -> 0.75 + 25
    np.testing.assert_allclose(m.r, [[2, 1 * 0.75 + 100 * 0.25], [7, 7]])


def test_reward_row_and_matrix_forms_expected_value():
    text = _header(2, 1, 2) + """
T: 0
0.25 0.75
1 0
O: 0
0.5 0.5
0.1 0.9
R: 0 : 0
1 2
3 4
R: 0 : 1 : 0
10 20
"""
    m = parse_pomdp(text)
    r0 = 0.25 * (0.5 * 1 + 0.5 * 2) + 0.75 * (0.1 * 3 + 0.9 * 4)
    r1 = 1.0 * (0.5 * 10 + 0.5 * 20)
    np.testing.assert_allclose(m.r[:, 0], [r0, r1], rtol=1e-14)


def test_values_cost_negates():
    m = parse_pomdp(BASE.replace("values: reward", "values: cost") + "R: * : * : * : * 4\n")
    np.testing.assert_array_equal(m.r, -4.0)


@pytest.mark.parametrize(
    "start, expected",
    [
        ("start: uniform", [1 / 3] * 3),
        ("start: s1", [0, 1, 0]),
        ("start: 0.5 0 .5", [0.5, 0, 0.5]),
        ("start include: s0 2", [0.5, 0, 0.5]),
        ("start exclude: 0", [0, 0.5, 0.5]),
        ("start exclude: s0 s1", [0, 0, 1]),
        ("", [1 / 3] * 3),
    ],
)
def test_start_forms(start, expected):
    m = parse_pomdp(_header(3, 1, 1, start) + "T: 0 identity\nO: 0 uniform\n")
    np.testing.assert_allclose(m.b0, expected, rtol=1e-15)


def test_comments_numbers_and_multiline_lists():
    text = """# leading comment
discount: 9.5e-1 # inline
states: a b
  c d        # a list spread over lines
actions: 1
observations: 1
T: 0 : * : * 0.25   # wildcard single entries
O: 0 uniform
R: 0 : * : * : * -1.
"""
    m = parse_pomdp(text)
    assert m.discount == 0.95 and m.states == ("a", "b", "c", "d")
    np.testing.assert_array_equal(m.T, 0.25)
    np.testing.assert_array_equal(m.r, -1.0)


def test_renormalisation_thresholds():
    small = BASE + "T: 0 : 0\n0.5 0.50005\n"  # deviation 5e-5 <= 1e-4: silent
    mid = BASE + "T: 0 : 0\n0.5 0.505\n"  # deviation 5e-3: warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = parse_pomdp(small)
    np.testing.assert_allclose(m.T[0, 0].sum(), 1.0, atol=1e-15)
    with pytest.warns(POMDPFileWarning, match=r"row T\['a0', s='s0'\].*deviation 0.005"):
        m = parse_pomdp(mid, "mid.pomdp")
    np.testing.assert_allclose(m.T[0, 0], [0.5 / 1.005, 0.505 / 1.005])


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "text, pattern",
    [
        (BASE + "T: 0 : 0\n0.5 0.5x\n", r"bad\.pomdp, line 10: unexpected token '0\.5x'"),
        (BASE + "T: 0 : 0\n0.5 [0.5]\n", r"line 10: unexpected token '\[0\.5\]'"),
        (BASE + "T: 0 : 0 : 1 1.5\n", r"line 9: probability out of \[0, 1\]; got '1\.5'"),
        (BASE + "O: 0 : 0 : 1 -0.2\n", r"line 9: probability out of \[0, 1\]; got '-0\.2'"),
        (BASE.replace("discount: 0.9", "discount: 1.5"), r"line 1: discount must be in \[0, 1\]; got '1\.5'"),
        (BASE + "T: 0 : 0\n0.3 0.5\n",
         r"bad\.pomdp: row T\['a0', s='s0'\] \(last written at line 9\) sums to 0\.8, deviation 0\.2 > 0\.01"),
        (BASE + "O: 1\n0.9 0.9\n0.5 0.5\n", r"row O\['a1', s'='s0'\].*deviation 0\.8 > 0\.01"),
        (BASE + "T: 0 : bogus : 0 1\n", r"line 9: unknown state name; got 'bogus'"),
        (BASE + "T: 0 : 0 : 5 1\n", r"line 9: state index out of range \[0, 1\]; got '5'"),
        (BASE + "T: jump uniform\n", r"line 9: unknown action name; got 'jump'"),
        (BASE + "T: 0 : 0\n0.5 0.25 0.25\n", r"line 10: 'T: 0 : 0' expects 2 numbers; got 3"),
        (BASE + "T: 0\n0.5 0.5\n0.5\n", r"line 10: 'T: 0' expects 4 numbers; got 3"),
        (BASE + "R: 0 : 0 : 0\n1\n", r"line 10: 'R: 0 : 0 : 0' expects 2 numbers; got 1"),
        (_header(2, 1, 1, "start: 0.5") + "T: 0 identity\nO: 0 uniform\n",
         r"line 6: 'start:' expects 2 numbers; got 1"),
        (BASE + "T: 0 : 0 : 0 yes\n", r"line 9: expected a probability; got 'yes'"),
        ("states: 2\nT: 0 uniform\n", r"line 2: entry before 'actions:' was declared; got 'T'"),
        (BASE.replace("discount: 0.9\n", ""), r"no 'discount:' entry"),
        (BASE + "O: 0 identity\n", r"line 9: expected a number; got 'identity'|'O: 0' expects 4 numbers"),
    ],
)
def test_bad_input_messages(text, pattern):
    with pytest.raises(ValueError, match=pattern):
        parse_pomdp(text, "bad.pomdp")


def test_parse_option_checks():
    with pytest.raises(ValueError, match=r"'missing_rows' must be one of"):
        parse_pomdp(BASE, missing_rows="loop")
    with pytest.raises(TypeError):
        parse_pomdp(b"discount: 1")


# ---------------------------------------------------------------- model
def _tiny(**kw):
    args = dict(T=np.ones((2, 3, 3)) / 3, Z=np.ones((2, 3, 2)) / 2, r=np.zeros((3, 2)), discount=0.9)
    args.update(kw)
    return POMDP(**args)


def test_model_basics():
    m = _tiny()
    assert (m.n_states, m.n_actions, m.n_observations) == (3, 2, 2)
    assert m.states == ("s0", "s1", "s2") and m.actions == ("a0", "a1") and m.observations == ("o0", "o1")
    np.testing.assert_allclose(m.b0, 1 / 3)
    c = m.copy()
    assert c == m and c is not m and c.T is not m.T
    c.r[0, 0] = 1e-13
    assert c != m and c.allclose(m, 1e-12) and not c.allclose(m, 1e-14)
    assert repr(m) == "POMDP(n_states=3, n_actions=2, n_observations=2, discount=0.9)"
    assert _tiny(discount=1.0).discount == 1.0  # allowed for the model


@pytest.mark.parametrize(
    "kw, exc, pattern",
    [
        (dict(T=np.ones((2, 3, 2)) / 2), ValueError, r"'T' must have shape \(A, S, S\); got shape \(2, 3, 2\)"),
        (dict(Z=np.ones((2, 4, 2)) / 2), ValueError, r"'Z' must have shape .*got shape \(2, 4, 2\)"),
        (dict(r=np.zeros((2, 3))), ValueError, r"'r' must have shape \(S, A\) = \(3, 2\).*got shape \(2, 3\)"),
        (dict(b0=np.ones(2) / 2), ValueError, r"'b0' must have shape"),
        (dict(discount=1.5), ValueError, r"'discount' must be a float in \[0, 1\]; got 1.5"),
        (dict(discount="x"), TypeError, r"'discount' must be a float"),
        (dict(r=np.full((3, 2), np.nan)), ValueError, r"'r' must contain only finite values"),
        (dict(T=np.full((2, 3, 3), np.nan)), ValueError, r"'T' must contain only finite values"),
        (dict(b0=[0.5, 0.6, -0.1]), ValueError, r"'b0' must be non-negative"),
        (dict(b0=[0.5, 0.6, 0.1]), ValueError, r"'b0' must sum to 1"),
        (dict(states=["x", "x", "y"]), ValueError, r"'states' must be distinct"),
        (dict(actions=["x"]), ValueError, r"'actions' must have 2 names; got 1"),
    ],
)
def test_model_validation(kw, exc, pattern):
    with pytest.raises(exc, match=pattern):
        _tiny(**kw)


def test_model_row_errors_name_action_row_and_deviation():
    T = np.ones((2, 3, 3)) / 3
    T[1, 2] = [0.5, 0.5, 0.01]
    with pytest.raises(ValueError, match=r"row T\[1, 2, :\] \(action 'a1', s='s2'\) sums to 1\.01 \(deviation 0\.01\)"):
        _tiny(T=T)
    Z = np.ones((2, 3, 2)) / 2
    Z[0, 1] = [1.2, -0.2]
    with pytest.raises(ValueError, match=r"'Z' must be non-negative; got -0\.2 at Z\[0, 1, 1\]"):
        _tiny(Z=Z)
    T = np.ones((2, 3, 3)) / 3
    T[0, 0, 0] += 1e-10  # within tol
    _tiny(T=T)
    with pytest.raises(ValueError, match="deviation 1e-10"):
        _tiny(T=T, tol=1e-11)


# ---------------------------------------------------------------- builtins
def test_tiger_structure():
    m = tiger(0.9)
    assert m.discount == 0.9 and (m.n_states, m.n_actions, m.n_observations) == (2, 3, 2)
    np.testing.assert_array_equal(m.T[0], np.eye(2))
    np.testing.assert_array_equal(m.T[1:], 0.5)  # opening a door resets
    np.testing.assert_array_equal(m.Z[0], [[0.85, 0.15], [0.15, 0.85]])
    np.testing.assert_array_equal(m.Z[1:], 0.5)
    np.testing.assert_array_equal(m.r, [[-1, -100, 10], [-1, 10, -100]])


@pytest.mark.parametrize("n, k", [(1, 1), (2, 1), (3, 2), (4, 3)])
def test_rock_sample_sizes_and_structure(n, k):
    m = rock_sample(n, k, random_state=1)
    S = n * n * 2**k + 1
    assert (m.n_states, m.n_actions, m.n_observations) == (S, 5 + k, 3)
    assert m.actions[:5] == ("north", "south", "east", "west", "sample")
    assert m.actions[5:] == tuple(f"check_{i + 1}" for i in range(k))
    term = S - 1
    np.testing.assert_array_equal(m.T[:, term, term], 1.0)
    np.testing.assert_array_equal(m.r[term], 0.0)
    assert m.r.max() == 10.0 and m.r.min() == -10.0
    # east from the last column exits with +10
    nb = 2**k
    s_edge = ((n - 1) * n + 0) * nb
    assert m.T[2, s_edge, term] == 1.0 and m.r[s_edge, 2] == 10.0
    # a good rock sampled gives +10 and becomes bad
    rx, ry = m.rock_positions[0]
    s_good = (rx * n + ry) * nb + 1
    assert m.r[s_good, 4] == 10.0 and m.T[4, s_good, s_good - 1] == 1.0
    assert m.r[s_good - 1, 4] == -10.0
    # check_1 at the rock's own cell is accurate with prob (1 + 1) / 2 = 1
    assert m.Z[5, s_good, 1] == 1.0
    # b0 uniform over rock configurations at (0, n // 2)
    assert np.count_nonzero(m.b0) == nb
    assert np.allclose(m.b0[(0 * n + n // 2) * nb + np.arange(nb)], 1 / nb)
    assert rock_sample(n, k, random_state=1) == m


def test_rock_sample_sensor_decay_and_seed():
    m = rock_sample(5, 1, random_state=3)
    rx, ry = m.rock_positions[0]
    nb = 2
    accs = []
    for x in range(5):
        s = (x * 5 + ry) * nb + 1  # rock good
        accs.append(m.Z[5, s, 1])
    d = np.abs(np.arange(5) - rx)
    np.testing.assert_allclose(accs, 0.5 * (1 + 2.0 ** (-d / 20.0)))
    assert not np.array_equal(rock_sample(5, 3, random_state=0).rock_positions,
                              rock_sample(5, 3, random_state=1).rock_positions)
    with pytest.raises(ValueError, match=r"'k' must be an int in \[0, 4\]"):
        rock_sample(2, 5)
    with pytest.raises(ValueError, match=r"dense T would need"):
        rock_sample(7, 8, storage="dense")
