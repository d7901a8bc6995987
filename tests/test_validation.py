"""Tests of algos._validation: accepted values, TypeError vs ValueError, and the exact house wording."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_array_equal

from algos._validation import (
    check_array_1d,
    check_bool,
    check_finite,
    check_option,
    check_random_state,
    check_scalar_float,
    check_scalar_int,
    spawn_generators,
)


# ----------------------------------------------------------------------------------------------------
# check_scalar_float
# ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [0.5, 0, 1, np.float64(0.25), np.float32(0.5), np.int64(1), np.int8(0)])
def test_float_accepts_real_numbers(value):
    out = check_scalar_float(value, "gamma", low=0.0, high=1.0)
    assert type(out) is float
    assert out == float(value)


@given(x=st.floats(allow_nan=False, allow_infinity=False))
def test_float_unbounded_accepts_every_finite_float(x):
    assert check_scalar_float(x, "x") == x


@pytest.mark.parametrize(
    "value, kwargs, match",
    [
        (1.5, {"low": 0.0, "high": 1.0}, r"^'gamma' must be a float in \[0, 1\]; got 1\.5\.$"),
        (-0.1, {"low": 0.0, "high": 1.0}, r"^'gamma' must be a float in \[0, 1\]; got -0\.1\.$"),
        (0.0, {"low": 0.0, "high": 1.0, "closed": "right"}, r"^'gamma' must be a float in \(0, 1\]; got 0\.0\.$"),
        (1.0, {"low": 0.0, "high": 1.0, "closed": "left"}, r"^'gamma' must be a float in \[0, 1\); got 1\.0\.$"),
        (0.0, {"low": 0.0, "closed": "neither"}, r"^'gamma' must be a float in \(0, inf\); got 0\.0\.$"),
        (2, {"high": 1}, r"^'gamma' must be a float in \[-inf, 1\]; got 2\.0\.$"),
        (np.float64(2.0), {"low": 0.0, "high": 1.0}, r"^'gamma' must be a float in \[0, 1\]; got 2\.0\.$"),
        (float("nan"), {}, r"^'gamma' must be a float in \[-inf, inf\]; got nan\.$"),
        (np.nan, {"low": 0.0}, r"^'gamma' must be a float in \[0, inf\]; got nan\.$"),
        (float("inf"), {"high": 1.0}, r"^'gamma' must be a float in \[-inf, 1\]; got inf\.$"),
        (1e-9, {"low": 1e-8}, r"^'gamma' must be a float in \[1e-08, inf\]; got 1e-09\.$"),
    ],
)
def test_float_value_errors(value, kwargs, match):
    with pytest.raises(ValueError, match=match):
        check_scalar_float(value, "gamma", **kwargs)


@pytest.mark.parametrize(
    "value, match",
    [
        ("0.5", r"^'gamma' must be a float in \[0, 1\]; got '0\.5' of type str\.$"),
        (None, r"^'gamma' must be a float in \[0, 1\]; got None of type NoneType\.$"),
        (True, r"^'gamma' must be a float in \[0, 1\]; got True of type bool\.$"),
        (np.True_, r"of type bool\.$"),
        (1 + 0j, r"got \(1\+0j\) of type complex\.$"),
        ([0.5], r"got \[0\.5\] of type list\.$"),
        (np.array(0.5), r"of type ndarray\.$"),
    ],
)
def test_float_type_errors(value, match):
    with pytest.raises(TypeError, match=match):
        check_scalar_float(value, "gamma", low=0.0, high=1.0)


def test_float_infinity_is_never_a_valid_parameter():
    # Parameters must be finite even where the interval is unbounded.
    with pytest.raises(ValueError, match=r"^'x' must be a float in \[0, inf\]; got inf\.$"):
        check_scalar_float(float("inf"), "x", low=0.0)
    with pytest.raises(ValueError, match=r"got -inf"):
        check_scalar_float(-float("inf"), "x", closed="neither")


def test_float_rejects_infinity_at_an_open_unbounded_end():
    with pytest.raises(ValueError, match=r"^'x' must be a float in \[0, inf\); got inf\.$"):
        check_scalar_float(float("inf"), "x", low=0.0, closed="left")


# ----------------------------------------------------------------------------------------------------
# check_scalar_int
# ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [3, np.int64(3), np.int32(3), np.uint8(3)])
def test_int_accepts_integers(value):
    out = check_scalar_int(value, "n_runs", low=1)
    assert type(out) is int and out == 3


@given(x=st.integers(-(2**70), 2**70))
def test_int_unbounded_accepts_every_int(x):
    assert check_scalar_int(x, "k") == x


@pytest.mark.parametrize(
    "value, kwargs, match",
    [
        (0, {"low": 1}, r"^'n_runs' must be an int in \[1, inf\]; got 0\.$"),
        (np.int64(0), {"low": 1}, r"^'n_runs' must be an int in \[1, inf\]; got 0\.$"),
        (11, {"low": 1, "high": 10}, r"^'n_runs' must be an int in \[1, 10\]; got 11\.$"),
        (1, {"low": 1, "closed": "neither"}, r"^'n_runs' must be an int in \(1, inf\); got 1\.$"),
        (5, {"high": 5, "closed": "left"}, r"^'n_runs' must be an int in \[-inf, 5\); got 5\.$"),
    ],
)
def test_int_value_errors(value, kwargs, match):
    with pytest.raises(ValueError, match=match):
        check_scalar_int(value, "n_runs", **kwargs)


@pytest.mark.parametrize(
    "value, match",
    [
        (3.0, r"^'n_runs' must be an int in \[1, inf\]; got 3\.0 of type float\.$"),
        ("3", r"^'n_runs' must be an int in \[1, inf\]; got '3' of type str\.$"),
        (True, r"^'n_runs' must be an int in \[1, inf\]; got True of type bool\.$"),
        (np.True_, r"of type bool\.$"),
        (np.float64(3.0), r"of type float64\.$"),
        (None, r"got None of type NoneType\.$"),
    ],
)
def test_int_type_errors(value, match):
    with pytest.raises(TypeError, match=match):
        check_scalar_int(value, "n_runs", low=1)


# ----------------------------------------------------------------------------------------------------
# check_option and check_bool
# ----------------------------------------------------------------------------------------------------
def test_option_accepts_and_rejects():
    assert check_option("index", "tie_break", ("index", "random")) == "index"
    with pytest.raises(ValueError, match=r"^'tie_break' must be one of \{'index', 'random'\}; got 'foo'\.$"):
        check_option("foo", "tie_break", ("index", "random"))
    with pytest.raises(ValueError, match=r"got 'Index'\.$"):  # compared exactly, case included
        check_option("Index", "tie_break", ("index", "random"))


@pytest.mark.parametrize("value", [3, None, ["index"]])
def test_option_non_string(value):
    # The message is the same; the class is ValueError today (section 4 would say TypeError for a
    # wrong type; sklearn's InvalidParameterError is both). Accept either so that a fix does not break this.
    with pytest.raises((ValueError, TypeError), match=r"^'tie_break' must be one of \{'index', 'random'\}; got "):
        check_option(value, "tie_break", ("index", "random"))


@pytest.mark.parametrize("value", [True, False, np.True_, np.False_])
def test_bool_accepts(value):
    out = check_bool(value, "verify")
    assert type(out) is bool and out == bool(value)


@pytest.mark.parametrize("value, match", [(1, "got 1 of type int"), ("yes", "got 'yes' of type str"),
                                          (None, "got None of type NoneType")])
def test_bool_rejects(value, match):
    with pytest.raises(TypeError, match=rf"^'verify' must be a bool; {match}\.$"):
        check_bool(value, "verify")


# ----------------------------------------------------------------------------------------------------
# check_finite and check_array_1d
# ----------------------------------------------------------------------------------------------------
def test_finite_passes_and_reports_first_bad_entry():
    x = np.array([[1.0, 2.0], [3.0, np.inf]])
    with pytest.raises(ValueError, match=r"^'X' must contain only finite values; got .*inf.* at index \(1, 1\)\.$"):
        check_finite(x, "X")
    with pytest.raises(ValueError, match=r"^'y' must contain only finite values; got .*nan.* at index 1\.$"):
        check_finite([0.0, np.nan, np.inf], "y")
    ok = np.array([1.0, 2.0])
    assert check_finite(ok, "y") is ok
    assert_array_equal(check_finite([1, 2], "y"), [1, 2])  # integer arrays are always finite


def test_finite_message_shows_plain_value():
    with pytest.raises(ValueError, match=r"^'y' must contain only finite values; got nan at index 1\.$"):
        check_finite([0.0, np.nan], "y")


def test_array_1d_int():
    for value in ([1, 2, 3], np.array([1, 2, 3], dtype=np.int32), [1.0, 2.0, 3.0], np.array([1, 2, 3], dtype=np.uint8)):
        out = check_array_1d(value, "idx")
        assert out.dtype == np.int64
        assert_array_equal(out, [1, 2, 3])
    assert check_array_1d([], "idx").dtype == np.int64


def test_array_1d_float():
    out = check_array_1d([1, 2.5], "w", dtype="float")
    assert out.dtype == np.float64
    assert_array_equal(out, [1.0, 2.5])


@pytest.mark.parametrize(
    "value, kwargs, exc, match",
    [
        ([[1, 2]], {}, ValueError, r"^'idx' must be 1-dimensional; got an array of shape \(1, 2\)\.$"),
        (5, {}, ValueError, r"^'idx' must be 1-dimensional; got an array of shape \(\)\.$"),
        ([], {"allow_empty": False}, ValueError, r"^'idx' must not be empty; got an array of length 0\.$"),
        ([1.5, 2.0], {}, TypeError, r"^'idx' must contain integers; got non-integer value .*1\.5.*\.$"),
        (["a"], {}, TypeError, r"^'idx' must contain integers; got an array of dtype <U1\.$"),
        ([True, False], {}, TypeError, r"^'idx' must contain integers; got an array of dtype bool\.$"),
        ([1, [2, 3]], {}, TypeError, r"^'idx' must be a 1-d array of ints; got list\.$"),
        ([1.0, np.nan], {}, ValueError, r"^'idx' must contain only finite values"),
        (["a"], {"dtype": "float"}, TypeError, r"^'idx' must contain real numbers; got an array of dtype <U1\.$"),
        ([1.0, np.inf], {"dtype": "float"}, ValueError,
         r"^'idx' must contain only finite values; got .*inf.* at index 1\.$"),
    ],
)
def test_array_1d_errors(value, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        check_array_1d(value, "idx", **kwargs)


# ----------------------------------------------------------------------------------------------------
# check_random_state and spawn_generators
# ----------------------------------------------------------------------------------------------------
def test_random_state_int_none_seedsequence():
    assert check_random_state(0).random() == np.random.default_rng(0).random()
    assert check_random_state(np.int64(5)).random() == np.random.default_rng(5).random()
    assert isinstance(check_random_state(None), np.random.Generator)
    seq = np.random.SeedSequence(42)
    assert check_random_state(seq).random() == np.random.default_rng(np.random.SeedSequence(42)).random()
    assert check_random_state(2**100).random() == np.random.default_rng(2**100).random()


def test_random_state_generator_is_passed_through():
    g = np.random.default_rng(1)
    assert check_random_state(g) is g


def test_random_state_randomstate_draws_a_seed():
    a = check_random_state(np.random.RandomState(3))
    b = check_random_state(np.random.RandomState(3))
    assert isinstance(a, np.random.Generator)
    assert a.random() == b.random()


@pytest.mark.parametrize(
    "value, exc, match",
    [
        (-1, ValueError, r"^'random_state' must be a non-negative int; got -1\.$"),
        (np.int64(-3), ValueError, r"^'random_state' must be a non-negative int; got "),
        (1.5, TypeError, r"^'random_state' must be None, an int, a SeedSequence or a numpy Generator; got float\.$"),
        ("0", TypeError, r"^'random_state' must be None, an int, a SeedSequence or a numpy Generator; got str\.$"),
        (np.random.PCG64(0), TypeError, r"got PCG64\.$"),
        (np.True_, TypeError, r"^'random_state' must be None, an int"),
        (True, TypeError, r"^'random_state' must be None, an int"),  # wording differs for Python bools
    ],
)
def test_random_state_errors(value, exc, match):
    with pytest.raises(exc, match=match):
        check_random_state(value)


def test_random_state_numpy_int_message_shows_plain_value():
    with pytest.raises(ValueError, match=r"^'random_state' must be a non-negative int; got -3\.$"):
        check_random_state(np.int64(-3))


def test_random_state_custom_name():
    with pytest.raises(ValueError, match=r"^'seed' must be a non-negative int; got -1\.$"):
        check_random_state(-1, "seed")


@given(seed=st.integers(0, 2**63), n=st.integers(0, 8))
def test_spawn_generators_deterministic_and_prefix_stable(seed, n):
    a = [g.random() for g in spawn_generators(seed, n)]
    b = [g.random() for g in spawn_generators(seed, n)]
    assert a == b
    longer = [g.random() for g in spawn_generators(seed, n + 2)]
    assert longer[:n] == a  # asking for more children does not change the first ones
    expected = [np.random.default_rng(c).random() for c in np.random.SeedSequence(seed).spawn(n)]
    assert a == expected
    assert len(set(longer)) == n + 2


def test_spawn_generators_from_generator_and_seedsequence():
    gens = spawn_generators(np.random.default_rng(0), 3)
    assert len(gens) == 3 and all(isinstance(g, np.random.Generator) for g in gens)
    # The children do not depend on how far the parent generator has been used ...
    used = np.random.default_rng(0)
    used.random(10)
    fresh = np.random.default_rng(0)
    assert [g.random() for g in spawn_generators(used, 3)] == [g.random() for g in spawn_generators(fresh, 3)]
    # ... and a SeedSequence spawns its own children.
    seq = np.random.SeedSequence(9)
    assert [g.random() for g in spawn_generators(seq, 2)] == [
        np.random.default_rng(c).random() for c in np.random.SeedSequence(9).spawn(2)
    ]
    assert spawn_generators(0, 0) == []
    assert spawn_generators(None, 2)[0].random() != spawn_generators(None, 2)[0].random()


def test_spawn_generators_bad_n():
    with pytest.raises(ValueError, match=r"^'n' must be an int in \[0, inf\]; got -1\.$"):
        spawn_generators(0, -1)
    with pytest.raises(TypeError, match=r"^'n' must be an int in \[0, inf\]; got 2\.0 of type float\.$"):
        spawn_generators(0, 2.0)
    with pytest.raises(TypeError, match=r"^'random_state' must be None, an int, a SeedSequence or a numpy "):
        spawn_generators("seed", 2)


def test_spawn_generators_legacy_generator_still_spawns():
    """A Generator on a legacy-seeded bit generator has no SeedSequence; a seed is drawn from it."""
    legacy = np.random.Generator(np.random.RandomState(0)._bit_generator)
    a, b = spawn_generators(legacy, 2)
    assert a.random() != b.random()
    again = spawn_generators(np.random.Generator(np.random.RandomState(0)._bit_generator), 2)
    assert again[0].random() == spawn_generators(np.random.Generator(np.random.RandomState(0)._bit_generator),
                                                 2)[0].random()
