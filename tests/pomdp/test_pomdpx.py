"""The POMDPX reader: the four APPL example files against the flat models they encode, random
factored models against a brute-force product, and every kind of bad input (file, element, line)."""

import io
import itertools

import numpy as np
import pytest

from algos.pomdp import POMDP, read_pomdpx, rock_sample_map, tag, tiger
from algos.pomdp.io._pomdpx import _read_pomdpx_arrays
from tests._data import missing_data


def _path(shared_data_dir, *parts):
    path = shared_data_dir.joinpath("pomdp", *parts)
    if not path.exists():
        missing_data(path)
    return path


def _dense_T(d):
    return np.stack([t.toarray() for t in d["T"]])


def _T(m):
    """The model's transitions as a dense (A, S, S) array, whether it holds them dense or sparse."""
    return m.T if isinstance(m.T, np.ndarray) else np.stack([t.toarray() for t in m.T])


def _assert_same(m, ref, atol=1e-12):
    np.testing.assert_allclose(_T(m), _T(ref), atol=atol, rtol=0)
    np.testing.assert_allclose(m.Z, ref.Z, atol=atol, rtol=0)
    np.testing.assert_allclose(m.r, ref.r, atol=atol, rtol=0)
    np.testing.assert_allclose(m.b0, ref.b0, atol=atol, rtol=0)
    assert m.discount == ref.discount


# ------------------------------------------------------------------------------ the example files
def test_tiger_file_equals_cassandra_file_and_builtin(shared_data_dir):
    m = read_pomdpx(_path(shared_data_dir, "pomdpx", "Tiger.pomdpx"))
    ref = POMDP.from_file(_path(shared_data_dir, "tiger.95.POMDP"))
    assert m.states == ref.states == ("tiger-left", "tiger-right")
    assert m.actions == ref.actions == tiger().actions
    # the observations are named after the sensor in the POMDPX file, after the state in the others
    assert m.observations == ("obs-left", "obs-right")
    _assert_same(m, ref)
    _assert_same(m, tiger())


def test_hallway_file_equals_cassandra_file(shared_data_dir):
    """Same discount (0.95), start belief, transitions (to rounding of the renormalisation),
    observations and rewards; both files name states, actions and observations by index."""
    m = read_pomdpx(_path(shared_data_dir, "pomdpx", "Hallway.pomdpx"))
    ref = POMDP.from_file(_path(shared_data_dir, "hallway.POMDP"))
    assert (m.n_states, m.n_actions, m.n_observations) == (60, 5, 21)
    assert (m.states, m.actions, m.observations) == (ref.states, ref.actions, ref.observations)
    _assert_same(m, ref)


def test_tagavoid_file_equals_builtin_tag_state_by_state(shared_data_dir):
    d = _read_pomdpx_arrays(_path(shared_data_dir, "pomdpx", "TagAvoid.pomdpx"))
    m = tag()
    assert d["state_variables"] == ("robot_0", "target_0") and d["state_sizes"] == (29, 30)
    assert d["fully_observable"] == ("robot_0",)

    # the file's names Srv<v>rh<h> / Ttv<v>th<h> / tagged are ours r<v><h>_t<v><h> / _tagged
    def ours(name):
        robot, target = (part.split("=")[1] for part in name.split(","))
        t = "tagged" if target == "tagged" else f"t{target[3]}{target[6]}"
        return f"r{robot[3]}{robot[6]}_{t}"

    assert [ours(s) for s in d["states"]] == list(m.states)
    assert [a.lower() for a in d["actions"]] == list(m.actions)
    assert [o if o == "yes" else f"r{o[3]}{o[6]}" for o in d["observations"]] == list(m.observations)
    np.testing.assert_allclose(_dense_T(d), m.T, atol=1e-12, rtol=0)
    np.testing.assert_allclose(d["Z"], m.Z, atol=1e-12, rtol=0)
    np.testing.assert_array_equal(d["r"], m.r)
    np.testing.assert_allclose(d["b0"], m.b0, atol=1e-12, rtol=0)
    assert d["discount"] == m.discount
    # S = 870 is small enough for the dense model
    full = read_pomdpx(_path(shared_data_dir, "pomdpx", "TagAvoid.pomdpx"))
    np.testing.assert_array_equal(_T(full), _dense_T(d))


@pytest.fixture(scope="module")
def rocksample(shared_data_dir):
    return _read_pomdpx_arrays(_path(shared_data_dir, "pomdpx", "RockSample_7_8.pomdpx"))


def test_rocksample_7_8_sizes_rows_and_lean(rocksample):
    """The file has the rover's 49 cells plus a terminal value ``st`` as one variable and eight
    rock bits, so S = 50 * 2**8 = 12800 (the flat model with one terminal state has 49 * 256 + 1 =
    12545; the file keeps the rock bits in the terminal cell)."""
    d = rocksample
    S, A = len(d["states"]), len(d["actions"])
    assert (S, A, d["Z"].shape[2]) == (12800, 13, 2)
    assert d["state_sizes"] == (50,) + (2,) * 8
    assert d["fully_observable"] == ("robot_0",) and d["observations"] == ("ogood", "obad")
    for t in d["T"]:
        np.testing.assert_allclose(t.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(d["Z"].sum(axis=2), 1.0, atol=1e-12)
    # the structure stays sparse: moves, checks and samples are deterministic
    assert sum(t.nnz for t in d["T"]) <= 20 * S * A
    assert sum(t.nnz for t in d["T"]) == S * A
    # start: rover at (0, 3), rocks uniform
    start, _, _ = rock_sample_map(7, 8)
    on = np.flatnonzero(d["b0"])
    assert on.size == 256 and np.allclose(d["b0"][on], 1 / 256)
    assert set(on // 256) == {start[0] * 7 + start[1]}


def _rocksample_rule(cell, bits, action, rocks, d0):
    """Next (cell, bits), reward and P(ogood) per the published RockSample files: a move into a
    wall or a sample away from a rock ends in the terminal cell with -100, east from x = 6 ends
    there with +10; ``sample`` on rock i gives +10 (good, then bad) or -10; ``check i`` observes
    rock i right with probability (1 + 2^(-d/d0)) / 2; everything else observes ``ogood``."""
    term = 49
    if cell == term:
        return term, bits, 0.0
    x, y = divmod(cell, 7)
    rock_at = {(int(rx), int(ry)): i for i, (rx, ry) in enumerate(rocks)}
    if action in ("amn", "ams", "ame", "amw"):
        dx, dy = {"amn": (0, 1), "ams": (0, -1), "ame": (1, 0), "amw": (-1, 0)}[action]
        nx, ny = x + dx, y + dy
        if nx == 7:
            return term, bits, 10.0
        if not (0 <= nx < 7 and 0 <= ny < 7):
            return term, bits, -100.0
        return nx * 7 + ny, bits, 0.0
    if action == "as":
        if (x, y) not in rock_at:
            return term, bits, -100.0
        i = rock_at[(x, y)]
        good = bits[i]
        nb = list(bits)
        nb[i] = 0
        return cell, tuple(nb), 10.0 if good else -10.0
    return cell, bits, 0.0


def test_rocksample_7_8_rows_follow_the_rule(rocksample):
    d = rocksample
    start, rocks, d0 = rock_sample_map(7, 8)
    actions = list(d["actions"])
    rng = np.random.default_rng(20261205)
    for s in rng.choice(12800, size=300, replace=False):
        cell, rest = divmod(int(s), 256)
        bits = tuple((rest >> (7 - i)) & 1 for i in range(8))  # rock 0 most significant
        for a, name in enumerate(actions):
            ncell, nbits, rew = _rocksample_rule(cell, bits, name, rocks, d0)
            s2 = ncell * 256 + sum(b << (7 - i) for i, b in enumerate(nbits))
            row = d["T"][a][[int(s)], :].toarray().ravel()
            assert row[s2] == 1.0, (d["states"][s], name)
            assert d["r"][s, a] == rew, (d["states"][s], name)
            # observation in the state reached (s2)
            pgood = d["Z"][a, s2, d["observations"].index("ogood")]
            if name.startswith("ac") and ncell != 49:
                i = int(name[2:])
                x, y = divmod(ncell, 7)
                acc = 0.5 * (1 + 2.0 ** (-np.hypot(x - rocks[i, 0], y - rocks[i, 1]) / d0))
                assert pgood == pytest.approx(acc if nbits[i] else 1 - acc, abs=1e-6)
            else:
                assert pgood == 1.0


# ------------------------------------------------------------------- random factored models
def _random_factored(rng):
    """A random model with 2-3 state variables (one with a next-slice reward), 1-2 observation
    variables and 2 reward functions, as XML with full '-' tables, plus the brute-force flat
    arrays."""
    nvars = int(rng.integers(2, 4))
    sizes = [int(rng.integers(2, 4)) for _ in range(nvars)]
    osizes = [int(rng.integers(2, 4)) for _ in range(int(rng.integers(1, 3)))]
    A = 2
    svals = [[f"v{i}_{j}" for j in range(n)] for i, n in enumerate(sizes)]
    lines = ['<?xml version="1.0"?>', "<pomdpx>", "<Discount>0.9</Discount>", "<Variable>"]
    for i, vals in enumerate(svals):
        lines.append(f'<StateVar vnamePrev="x{i}_0" vnameCurr="x{i}_1">'
                     f'<ValueEnum>{" ".join(vals)}</ValueEnum></StateVar>')
    for k, n in enumerate(osizes):
        lines.append(f'<ObsVar vname="o{k}"><NumValues>{n}</NumValues></ObsVar>')
    lines += ['<ActionVar vname="act"><ValueEnum>go stay</ValueEnum></ActionVar>', '<RewardVar vname="rw"/>',
              "</Variable>"]

    def fmt(a):
        return " ".join(repr(float(x)) for x in np.ravel(a))

    def cpt(var, parents, table):
        dashes = " ".join("-" for _ in range(table.ndim))
        return (f"<CondProb><Var>{var}</Var><Parent>{' '.join(parents) or 'null'}</Parent><Parameter type=\"TBL\">"
                f"<Entry><Instance>{dashes}</Instance><ProbTable>{fmt(table)}</ProbTable></Entry>"
                "</Parameter></CondProb>")

    def dist(shape):
        p = rng.random(shape) * (rng.random(shape) < 0.6) + 1e-3 * (rng.random(shape) < 0.2)
        p[..., 0] += 0.05
        return p / p.sum(axis=-1, keepdims=True)

    # initial: x0 independent, x_i (i > 0) depends on x0
    init = [dist((sizes[0],))] + [dist((sizes[0], n)) for n in sizes[1:]]
    lines.append("<InitialStateBelief>" + cpt("x0_0", [], init[0])
                 + "".join(cpt(f"x{i}_0", ["x0_0"], init[i]) for i in range(1, nvars)) + "</InitialStateBelief>")
    # transitions: x_i' depends on the action, x_i and x_{i-1}
    par = [[i, (i - 1) % nvars] for i in range(nvars)]
    trans = [dist((A, sizes[p[0]], sizes[p[1]], sizes[i])) for i, p in enumerate(par)]
    lines.append("<StateTransitionFunction>" + "".join(
        cpt(f"x{i}_1", ["act", f"x{p[0]}_0", f"x{p[1]}_0"], trans[i]) for i, p in enumerate(par))
        + "</StateTransitionFunction>")
    # observations: o_k depends on the action and x_k' (k < nvars)
    obs = [dist((A, sizes[k], n)) for k, n in enumerate(osizes)]
    lines.append("<ObsFunction>" + "".join(cpt(f"o{k}", ["act", f"x{k}_1"], obs[k]) for k in range(len(osizes)))
                 + "</ObsFunction>")
    # rewards: R1(a, x0), R2(x0, x_last') (a next-slice parent)
    r1 = rng.normal(size=(A, sizes[0]))
    r2 = rng.normal(size=(sizes[0], sizes[-1]))
    lines.append("<RewardFunction>"
                 f"<Func><Var>rw</Var><Parent>act x0_0</Parent><Parameter><Entry><Instance>- -</Instance>"
                 f"<ValueTable>{fmt(r1)}</ValueTable></Entry></Parameter></Func>"
                 f"<Func><Var>rw</Var><Parent>x0_0 x{nvars - 1}_1</Parent><Parameter><Entry><Instance>- -</Instance>"
                 f"<ValueTable>{fmt(r2)}</ValueTable></Entry></Parameter></Func></RewardFunction></pomdpx>")
    # brute force over joint states
    states = list(itertools.product(*[range(n) for n in sizes]))
    S = len(states)
    T = np.zeros((A, S, S))
    for a in range(A):
        for si, s in enumerate(states):
            for ti, t in enumerate(states):
                T[a, si, ti] = np.prod([trans[i][a, s[p[0]], s[p[1]], t[i]] for i, p in enumerate(par)])
    ostates = list(itertools.product(*[range(n) for n in osizes]))
    Z = np.array([[[np.prod([obs[k][a, t[k], o[k]] for k in range(len(osizes))]) for o in ostates]
                   for t in states] for a in range(A)])
    b0 = np.array([init[0][s[0]] * np.prod([init[i][s[0], s[i]] for i in range(1, nvars)]) for s in states])
    R2 = np.array([[r2[s[0], t[-1]] for t in states] for s in states])
    r = np.array([[r1[a, s[0]] + T[a, si] @ R2[si] for a in range(A)] for si, s in enumerate(states)])
    return "\n".join(lines), dict(T=T, Z=Z, r=r, b0=b0), svals


@pytest.mark.parametrize("seed", range(6))
def test_random_factored_model_equals_brute_force_product(seed):
    text, ref, svals = _random_factored(np.random.default_rng(seed))
    d = _read_pomdpx_arrays(io.StringIO(text))
    np.testing.assert_allclose(_dense_T(d), ref["T"], atol=1e-12, rtol=0)
    np.testing.assert_allclose(d["Z"], ref["Z"], atol=1e-12, rtol=0)
    np.testing.assert_allclose(d["r"], ref["r"], atol=1e-12, rtol=0)
    np.testing.assert_allclose(d["b0"], ref["b0"], atol=1e-12, rtol=0)
    # names: mixed radix, the first variable most significant
    assert d["states"][1] == ",".join(f"x{i}_0={v[1 if i == len(svals) - 1 else 0]}" for i, v in enumerate(svals))
    assert d["discount"] == 0.9


def test_wildcards_and_later_entries_override():
    text = _TIGER.replace(
        "<Entry><Instance>listen - -</Instance><ProbTable>identity</ProbTable></Entry>",
        "<Entry><Instance>listen * *</Instance><ProbTable>0.5</ProbTable></Entry>"
        "<Entry><Instance>listen tiger-left -</Instance><ProbTable>1 0</ProbTable></Entry>"
        "<Entry><Instance>listen tiger-right tiger-right</Instance><ProbTable>0.9</ProbTable></Entry>"
        "<Entry><Instance>listen tiger-right tiger-left</Instance><ProbTable>0.1</ProbTable></Entry>")
    m = read_pomdpx(io.StringIO(text))
    np.testing.assert_allclose(_T(m)[0], [[1, 0], [0.1, 0.9]])
    np.testing.assert_allclose(_T(m)[1], 0.5)


# ------------------------------------------------------------------------------------ bad input
_TIGER = """<?xml version="1.0"?>
<pomdpx version="1.0">
<Discount>0.95</Discount>
<Variable>
<StateVar vnamePrev="s_0" vnameCurr="s_1" fullyObs="false"><ValueEnum>tiger-left tiger-right</ValueEnum></StateVar>
<ObsVar vname="o"><ValueEnum>obs-left obs-right</ValueEnum></ObsVar>
<ActionVar vname="a"><ValueEnum>listen open-left open-right</ValueEnum></ActionVar>
<RewardVar vname="r"/>
</Variable>
<InitialStateBelief><CondProb><Var>s_0</Var><Parent>null</Parent>
<Parameter><Entry><Instance>-</Instance><ProbTable>uniform</ProbTable></Entry></Parameter>
</CondProb></InitialStateBelief>
<StateTransitionFunction><CondProb><Var>s_1</Var><Parent>a s_0</Parent><Parameter>
<Entry><Instance>listen - -</Instance><ProbTable>identity</ProbTable></Entry>
<Entry><Instance>open-left * *</Instance><ProbTable>0.5</ProbTable></Entry>
<Entry><Instance>open-right * *</Instance><ProbTable>0.5</ProbTable></Entry>
</Parameter></CondProb></StateTransitionFunction>
<ObsFunction><CondProb><Var>o</Var><Parent>a s_1</Parent><Parameter>
<Entry><Instance>listen - -</Instance><ProbTable>0.85 0.15 0.15 0.85</ProbTable></Entry>
<Entry><Instance>open-left * *</Instance><ProbTable>0.5</ProbTable></Entry>
<Entry><Instance>open-right * *</Instance><ProbTable>0.5</ProbTable></Entry>
</Parameter></CondProb></ObsFunction>
<RewardFunction><Func><Var>r</Var><Parent>a s_0</Parent><Parameter>
<Entry><Instance>listen *</Instance><ValueTable>-1</ValueTable></Entry>
<Entry><Instance>open-left -</Instance><ValueTable>-100 10</ValueTable></Entry>
<Entry><Instance>open-right -</Instance><ValueTable>10 -100</ValueTable></Entry>
</Parameter></Func></RewardFunction>
</pomdpx>"""


def test_inline_tiger_equals_builtin():
    _assert_same(read_pomdpx(io.StringIO(_TIGER)), tiger())


@pytest.mark.parametrize(
    "old, new, pattern",
    [
        ("<Var>s_1</Var>", "<Var>s_9</Var>", r"<Var> at line 13: unknown variable 's_9'"),
        ("<Parent>a s_1</Parent>", "<Parent>a s_7</Parent>", r"<Parent> at line 18: unknown parent variable 's_7'"),
        ("<Parent>a s_0</Parent><Parameter>\n<Entry><Instance>listen - -",
         "<Parent>a s_1</Parent><Parameter>\n<Entry><Instance>listen - -",
         r"<Parent> at line 13: parent 's_1' \(curr variable\) is not supported"),
        ("<Instance>listen - -</Instance><ProbTable>0.85",
         "<Instance>listen - tiger-middle</Instance><ProbTable>0.85",
         r"<Instance> at line 19: 'tiger-middle' is not a value of variable 'o'"),
        ("<Instance>listen *</Instance>", "<Instance>shout *</Instance>",
         r"<Instance> at line 24: 'shout' is not a value of variable 'a'"),
        ("0.85 0.15 0.15 0.85", "0.85 0.15 0.15 0.80",
         r"<CondProb> at line 18: the distribution of 'o' given 'listen tiger-right' sums to 0.95"),
        ("0.85 0.15 0.15 0.85", "0.85 0.15 0.15", r"<ProbTable> at line 19: expected 4 numbers"),
        ("0.85 0.15 0.15 0.85", "0.85 0.15 0.15 x", r"<ProbTable> at line 19: expected numbers.*'x'"),
        ("0.85 0.15 0.15 0.85", "1.2 -0.2 0.15 0.85", r"<ProbTable> at line 19: probabilities must be non-negative"),
        ("<Instance>listen - -</Instance><ProbTable>identity", "<Instance>listen * -</Instance><ProbTable>identity",
         r"<ProbTable> at line 14: 'identity' needs exactly two '-'"),
        ("<Instance>listen *</Instance>", "<Instance>listen * *</Instance>",
         r"<Instance> at line 24: expected 2 tokens \(a s_0\); got 3"),
        ("<Parameter><Entry><Instance>-</Instance>", '<Parameter type="DD"><Entry><Instance>-</Instance>',
         r"<Parameter> at line 11: only type='TBL'"),
        ("<Discount>0.95</Discount>", "<Discount>ninety</Discount>",
         r"<Discount> at line 3: the discount must be a number"),
        ('<StateVar vnamePrev="s_0" vnameCurr="s_1" fullyObs="false"><ValueEnum>tiger-left tiger-right</ValueEnum>',
         '<StateVar vnamePrev="s_0" vnameCurr="s_1"><ValueEnum>tiger-left tiger-left</ValueEnum>',
         r"<ValueEnum> at line 5: value 'tiger-left' listed twice"),
        ('<ActionVar vname="a"><ValueEnum>', '<ActionVar vname="s_0"><ValueEnum>',
         r"<ActionVar> at line 7: variable 's_0' declared twice"),
    ],
)
def test_bad_input_names_file_element_and_line(old, new, pattern):
    assert old in _TIGER
    text = _TIGER.replace(old, new)
    with pytest.raises(ValueError, match=pattern):
        read_pomdpx(io.StringIO(text))


def test_missing_sections_and_tables():
    no_reward = _TIGER.split("<RewardFunction>")[0] + "</pomdpx>"
    with pytest.raises(ValueError, match=r"missing required section <RewardFunction>"):
        read_pomdpx(io.StringIO(no_reward))
    no_discount = _TIGER.replace("<Discount>0.95</Discount>", "")
    with pytest.raises(ValueError, match=r"missing required section <Discount>"):
        read_pomdpx(io.StringIO(no_discount))
    early = _TIGER.replace("<Discount>0.95</Discount>", "<Discount>0.95</Discount><ObsFunction></ObsFunction>")
    with pytest.raises(ValueError, match=r"<ObsFunction> at line 3: section comes before <Variable>"):
        read_pomdpx(io.StringIO(early))
    no_table = _TIGER.replace("<ObsFunction><CondProb>", "<ObsFunction><Nothing/><CondProb>")
    with pytest.raises(ValueError, match=r"<Nothing> at line 18: expected <CondProb>"):
        read_pomdpx(io.StringIO(no_table))
    empty_obs = _TIGER.split("<ObsFunction>")[0] + "<ObsFunction></ObsFunction>" + _TIGER.split("</ObsFunction>")[1]
    with pytest.raises(ValueError, match=r"<ObsFunction> has no <CondProb> for 'o'"):
        read_pomdpx(io.StringIO(empty_obs))


def test_truncated_and_malformed_xml_name_the_line(tmp_path):
    path = tmp_path / "cut.pomdpx"
    path.write_text(_TIGER[: _TIGER.index("<ObsFunction>") + 40])
    with pytest.raises(ValueError, match=rf"{path.name}: malformed XML at line 18"):
        read_pomdpx(path)
    bad = _TIGER.replace("<Entry><Instance>listen *</Instance>", "<Entry><Instance>listen *</Instance")
    with pytest.raises(ValueError, match=r"malformed XML at line 24"):
        read_pomdpx(io.StringIO(bad))
    with pytest.raises(ValueError, match=r"the root element must be <pomdpx>"):
        read_pomdpx(io.StringIO("<pomdp></pomdp>"))


def test_dense_fallback_refuses_large_models_with_the_memory(shared_data_dir):
    import inspect

    path = _path(shared_data_dir, "pomdpx", "RockSample_7_8.pomdpx")
    if "storage" in inspect.signature(POMDP).parameters:
        m = read_pomdpx(path)
        assert m.n_states == 12800
    else:
        with pytest.raises(ValueError, match=r"S = 12800 states; a dense POMDP needs .*15\.9 GiB"):
            read_pomdpx(path)


# ------------------------------------------------------------------------------------- writer
def test_write_then_read_gives_the_model_back(shared_data_dir, tmp_path):
    from algos.pomdp import write_pomdpx

    for m in (tiger(), tag(), POMDP.from_file(_path(shared_data_dir, "hallway.POMDP"))):
        path = tmp_path / "m.pomdpx"
        text = write_pomdpx(m, path)
        assert path.read_text(encoding="utf-8") == text
        back = read_pomdpx(path)
        assert (back.states, back.actions, back.observations) == (m.states, m.actions, m.observations)
        _assert_same(back, m, atol=1e-15)


def test_write_refuses_names_that_are_not_values():
    from algos.pomdp import write_pomdpx

    m = tiger()
    bad = POMDP(m.T, m.Z, m.r, m.discount, m.b0, states=("tiger left", "tiger-right"))
    with pytest.raises(ValueError, match=r"'states' names must be .*'tiger left'"):
        write_pomdpx(bad)
    with pytest.raises(TypeError, match=r"'pomdp' must be a POMDP; got dict"):
        write_pomdpx({})


def test_initial_belief_parents_must_be_acyclic():
    two = _TIGER.replace(
        '<ObsVar vname="o">',
        '<StateVar vnamePrev="k_0" vnameCurr="k_1"><ValueEnum>x y</ValueEnum></StateVar>\n<ObsVar vname="o">')
    two = two.replace(
        "</CondProb></InitialStateBelief>",
        "</CondProb><CondProb><Var>k_0</Var><Parent>s_0</Parent><Parameter>"
        "<Entry><Instance>* -</Instance><ProbTable>0.25 0.75</ProbTable></Entry></Parameter></CondProb>"
        "</InitialStateBelief>")
    two = two.replace("</StateTransitionFunction>",
                      "<CondProb><Var>k_1</Var><Parent>k_0</Parent><Parameter>"
                      "<Entry><Instance>- -</Instance><ProbTable>identity</ProbTable></Entry></Parameter></CondProb>"
                      "</StateTransitionFunction>")
    d = _read_pomdpx_arrays(io.StringIO(two))
    assert d["states"] == ("s_0=tiger-left,k_0=x", "s_0=tiger-left,k_0=y",
                           "s_0=tiger-right,k_0=x", "s_0=tiger-right,k_0=y")
    np.testing.assert_allclose(d["b0"], [0.125, 0.375, 0.125, 0.375])
    # the listen action keeps both variables: identity over the 4 joint states
    np.testing.assert_array_equal(_dense_T(d)[0], np.eye(4))
    cyc = two.replace("<Var>s_0</Var><Parent>null</Parent>\n<Parameter><Entry><Instance>-</Instance>",
                      "<Var>s_0</Var><Parent>k_0</Parent>\n<Parameter><Entry><Instance>* -</Instance>")
    assert cyc != two
    with pytest.raises(ValueError, match=r"<CondProb> at line \d+: the parents in <InitialStateBelief> form a cycle"):
        _read_pomdpx_arrays(io.StringIO(cyc))


def test_rows_within_tol_are_renormalised_and_mdp_files_read():
    close = _TIGER.replace("0.85 0.15 0.15 0.85", "0.8500004 0.15 0.15 0.85")
    m = read_pomdpx(io.StringIO(close))
    np.testing.assert_allclose(m.Z[0, 0], [0.8500004 / 1.0000004, 0.15 / 1.0000004], rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match=r"sums to 1\.0000004, not 1 \(tol=1e-07\)"):
        read_pomdpx(io.StringIO(close), tol=1e-7)
    mdp = _TIGER.split('<ObsVar vname="o">')[0] + _TIGER.split("</ObsVar>\n")[1]
    mdp = mdp.split("<ObsFunction>")[0] + mdp.split("</ObsFunction>\n")[1]
    m = read_pomdpx(io.StringIO(mdp))
    assert m.observations == ("none",) and m.Z.shape == (3, 2, 1)
    np.testing.assert_array_equal(m.r, tiger().r)
