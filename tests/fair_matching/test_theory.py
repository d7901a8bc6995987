"""Tests of theory.fair_matching: bound values, identities, monotonicity, the certificate, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import theory.fair_matching as tfm
from theory.fair_matching import (
    BOUND_KIND,
    BOUND_KIND_INDIVISIBLE,
    KNOWN_BOUNDS,
    AllocationCheck,
    cef_lower_bound,
    check_allocation,
    gamma_for_cef,
    known_bound,
    nonwasteful_usw_lower_bound,
    prior_usw_upper_bound,
    usw_lower_bound,
    usw_upper_bound,
    usw_upper_bound_finite,
)

# the spec's table is printed to 4 decimals, so agreement is to half a unit in the last place
TABLE_ATOL = 1e-4
GRID = np.linspace(0.0, 1.0, 101)
UNIT = st.floats(0.0, 1.0, allow_nan=False)

# spec section 2, "Values"
TABLE_GAMMA = [0.0, 0.25, 0.5, 0.75, 1.0]
TABLE_CEF_DIV = [0.0, 0.2212, 0.3935, 0.5276, 0.6321]
TABLE_USW = [0.6321, 0.6221, 0.5956, 0.5550, 0.5000]
TABLE_CEF_INDIV = [0.0, 0.125, 0.25, 0.375, 0.5]


# ============================================================================================ values
@pytest.mark.parametrize("g, cef, usw, cef_ind", list(zip(TABLE_GAMMA, TABLE_CEF_DIV, TABLE_USW, TABLE_CEF_INDIV)))
def test_spec_table(g, cef, usw, cef_ind):
    assert_allclose(cef_lower_bound(g), cef, atol=TABLE_ATOL)
    assert_allclose(usw_lower_bound(g), usw, atol=TABLE_ATOL)
    assert_allclose(cef_lower_bound(g, divisible=False), cef_ind, atol=TABLE_ATOL)
    assert_allclose(usw_upper_bound(g), usw, atol=TABLE_ATOL)  # UB(alpha) row of the same table


def test_endpoints_exact():
    assert usw_lower_bound(0.0) == pytest.approx(1 - 1 / math.e, abs=1e-15)  # water-filling
    assert usw_lower_bound(1.0) == 0.5  # EQUAL-FILLING
    assert cef_lower_bound(0.0) == 0.0
    assert cef_lower_bound(1.0) == pytest.approx(1 - 1 / math.e, abs=1e-15)
    assert cef_lower_bound(1.0) == pytest.approx(known_bound("equal_filling_cef"), abs=1e-15)
    assert nonwasteful_usw_lower_bound() == 0.5 == known_bound("nonwasteful_usw")


def test_known_bounds_t6():
    assert known_bound("cef_upper_bound_divisible_h23") == 0.75
    assert known_bound("cef_upper_bound_indivisible_h24") == 0.761
    assert known_bound("cef_upper_bound_divisible_h24") == 0.677
    assert known_bound("equal_filling_cprop") == pytest.approx(1 - 1 / math.e, abs=1e-15)
    assert known_bound("h24_randomized_half") == 0.5
    # the lower bounds of the algorithms never exceed the impossibility results
    assert cef_lower_bound(1.0) <= known_bound("cef_upper_bound_divisible_h24")
    assert cef_lower_bound(1.0, divisible=False) <= known_bound("cef_upper_bound_indivisible_h24")
    for entry in KNOWN_BOUNDS.values():
        assert entry.source and entry.statement and entry.kind in {"exact", "in expectation"}


def test_bound_kind_registry():
    kinds = {"exact", "high-probability", "in expectation", "up to constants", "asymptotic"}
    for name, kind in {**BOUND_KIND, **BOUND_KIND_INDIVISIBLE}.items():
        assert callable(getattr(tfm, name)), name
        assert kind in kinds, (name, kind)
    for name in tfm.__all__:
        obj = getattr(tfm, name)
        if callable(obj) and name.endswith("_bound") and name != "known_bound":
            assert name in BOUND_KIND, f"{name} has no BOUND_KIND entry"


# ============================================================================================ identities
def test_upper_bound_equals_lower_bound_at_gamma_equal_alpha():
    # (1 + a - e^{a-1}) / (1 + a) == 1 - e^{a-1} / (1 + a): an algebraic identity
    assert_allclose(usw_upper_bound(GRID), usw_lower_bound(GRID), rtol=0, atol=1e-15)


def test_prior_bound_crossing_point():
    a = 1.0 / (math.e - 1.0)
    assert prior_usw_upper_bound(a) == pytest.approx(1 - 1 / math.e, abs=1e-15)
    assert abs(a - 0.582) < 1e-3
    # the new bound is below the prior one on (0, 1) (it improves on H24); both are 1/2 at alpha = 1
    assert np.all(usw_upper_bound(GRID[1:-1]) < prior_usw_upper_bound(GRID[1:-1]))
    assert usw_upper_bound(1.0) == prior_usw_upper_bound(1.0) == 0.5


@given(gamma=UNIT)
def test_gamma_for_cef_inverts_cef_lower_bound(gamma):
    assert_allclose(gamma_for_cef(cef_lower_bound(gamma)), gamma, atol=1e-12)
    assert_allclose(gamma_for_cef(cef_lower_bound(gamma, divisible=False), divisible=False), gamma, atol=1e-15)


@given(alpha=st.floats(0.0, 1 - 1 / math.e))
def test_cef_lower_bound_inverts_gamma_for_cef(alpha):
    assert_allclose(cef_lower_bound(gamma_for_cef(alpha)), alpha, atol=1e-12)


def test_gamma_for_cef_endpoints():
    assert gamma_for_cef(0.0) == 0.0
    assert gamma_for_cef(1 - 1 / math.e) == pytest.approx(1.0, abs=1e-15)
    assert gamma_for_cef(0.5, divisible=False) == 1.0


def test_monotonicity():
    usw = usw_lower_bound(GRID)
    cef = cef_lower_bound(GRID)
    cef_ind = cef_lower_bound(GRID, divisible=False)
    assert np.all(np.diff(usw) < 0), "usw_lower_bound must decrease in gamma"
    assert np.all(np.diff(cef) > 0), "cef_lower_bound must increase in gamma"
    assert np.all(np.diff(cef_ind) > 0)
    assert np.all(np.diff(prior_usw_upper_bound(GRID)) < 0)
    assert np.all(cef <= GRID + 1e-15)  # 1 - e^{-g} <= g: the CEF level lags the threshold
    assert np.all(usw >= 0.5 - 1e-15)  # never below the non-wasteful guarantee


def test_finite_upper_bound():
    # hand value: alpha = .5, n = 10, k = 2: (1 + 1 + 2(1 - e^{-.5})) / (1 + 1 + 2) + .1
    expected = (2 + 2 * (1 - math.exp(-0.5))) / 4 + 0.1
    assert usw_upper_bound_finite(0.5, 10, 2) == pytest.approx(expected, abs=1e-15)
    # tends to usw_upper_bound as n, k -> infinity, from above
    big = usw_upper_bound_finite(GRID, 10**9, 10**9)
    assert_allclose(big, usw_upper_bound(GRID), atol=1e-8)
    gaps = [usw_upper_bound_finite(0.3, n, n) - usw_upper_bound(0.3) for n in (10, 100, 1000, 10**4)]
    assert all(g > 0 for g in gaps) and all(np.diff(gaps) < 0)


# ============================================================================================ vectorisation
def test_scalars_give_python_floats_and_arrays_give_arrays():
    for fn in (usw_lower_bound, cef_lower_bound, usw_upper_bound, prior_usw_upper_bound):
        assert type(fn(0.5)) is float
        assert type(fn(np.float32(0.5))) is float
        out = fn(np.array([[0.0, 0.5], [0.75, 1.0]]))
        assert isinstance(out, np.ndarray) and out.shape == (2, 2)
        assert_allclose(out.ravel(), [fn(g) for g in (0.0, 0.5, 0.75, 1.0)], atol=0, rtol=0)
        assert isinstance(fn([0.1, 0.2]), np.ndarray)
    assert type(gamma_for_cef(0.3)) is float
    assert type(usw_upper_bound_finite(0.3, 5, 5)) is float
    assert type(cef_lower_bound(1, divisible=False)) is float  # ints are accepted


# ============================================================================================ bad input
@pytest.mark.parametrize("fn", [usw_lower_bound, cef_lower_bound])
def test_bad_gamma(fn):
    with pytest.raises(ValueError, match=r"^'gamma' must be a float in \[0, 1\]; got 1\.5\.$"):
        fn(1.5)
    with pytest.raises(ValueError, match=r"'gamma' must be a float in \[0, 1\]; got -0\.1"):
        fn(-0.1)
    with pytest.raises(ValueError, match=r"'gamma' must be a float in \[0, 1\]; got nan"):
        fn(float("nan"))
    with pytest.raises(ValueError, match=r"'gamma' must be a float in \[0, 1\]; got 2\.0 at index 1"):
        fn(np.array([0.5, 2.0]))
    with pytest.raises(TypeError, match="'gamma' must be a float in"):
        fn("0.5")
    with pytest.raises(TypeError, match="'gamma' must be a float in"):
        fn(True)
    with pytest.raises(TypeError, match="'gamma' must be a float in"):
        fn(np.array(["a"]))


@pytest.mark.parametrize("fn", [usw_upper_bound, prior_usw_upper_bound, lambda a: usw_upper_bound_finite(a, 3, 3)])
def test_bad_alpha(fn):
    with pytest.raises(ValueError, match=r"'alpha' must be a float in \[0, 1\]; got 1\.5\."):
        fn(1.5)
    with pytest.raises(TypeError, match="'alpha' must be a float"):
        fn(None)


def test_bad_divisible_and_sizes():
    with pytest.raises(TypeError, match="'divisible' must be a bool"):
        cef_lower_bound(0.5, divisible="no")
    with pytest.raises(TypeError, match="'divisible' must be a bool"):
        gamma_for_cef(0.5, divisible=0)
    with pytest.raises(ValueError, match=r"'n' must be an int in \[1, inf\]; got 0"):
        usw_upper_bound_finite(0.5, 0, 3)
    with pytest.raises(ValueError, match=r"'k' must be an int in \[1, inf\]; got -2"):
        usw_upper_bound_finite(0.5, 3, -2)
    with pytest.raises(TypeError, match="'n' must be an int"):
        usw_upper_bound_finite(0.5, 2.5, 3)
    with pytest.raises(ValueError, match="'name' must be one of"):
        known_bound("nope")


def test_gamma_for_cef_out_of_reach():
    with pytest.raises(ValueError, match=r"'alpha' must be a float in \[0, 1 - 1/e \(about 0\.632\)\]; got 0\.7\."):
        gamma_for_cef(0.7)
    with pytest.raises(ValueError, match=r"'alpha' must be a float in \[0, 0\.5\]; got 0\.6\."):
        gamma_for_cef(0.6, divisible=False)
    with pytest.raises(ValueError, match="'alpha' must be a float"):
        gamma_for_cef(-0.1)


# ============================================================================================ certificate
B = np.array([[1, 1, 0], [1, 0, 1], [0, 1, 1]])  # 3 agents x 3 items, a 6-cycle


def _valid():
    X = np.zeros((3, 3))
    X[0, 0] = X[2, 1] = X[1, 2] = 1.0  # a perfect matching
    return X


def test_accepts_valid_matching():
    for conv in (np.asarray, sp.csc_array, sp.csr_matrix, lambda a: a.tolist()):
        res = check_allocation(conv(B), conv(_valid()), integral=True)
        assert isinstance(res, AllocationCheck)
        assert res.ok and bool(res) and res.violations == []
        assert str(res) == "allocation OK"
    # a fractional, non-wasteful allocation
    X = np.array([[0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.5]])
    assert check_allocation(B, X)
    # round-off within tol is accepted
    assert check_allocation(B, X * (1 + 1e-12) - 1e-13 * (B == 0))


def _only(res, word):
    assert not res.ok and not bool(res)
    assert res.violations, "expected a violation"
    assert all(v.startswith(word) for v in res.violations), res.violations
    return res.violations


def test_flags_negative_entry():
    X = _valid()
    X[1, 0] = -0.25
    (msg,) = _only(check_allocation(B, X, non_wasteful=False), "negative")
    assert "agent 1, item 0" in msg and "0.25" in msg


def test_flags_off_edge_mass():
    X = np.zeros((3, 3))
    X[0, 2] = 0.5  # agent 0 does not like item 2
    (msg,) = _only(check_allocation(B, X, non_wasteful=False), "off edge")
    assert "agent 0 does not like item 2" in msg and "0.5" in msg


def test_flags_over_allocated_item():
    X = np.zeros((3, 3))
    X[0, 0] = X[1, 0] = 0.75
    (msg,) = _only(check_allocation(B, X, non_wasteful=False), "item 0 over-allocated")
    assert "1.5" in msg and "by 0.5" in msg


def test_flags_over_allocated_agent():
    X = np.zeros((3, 3))
    X[0, 0] = X[0, 1] = 0.75
    (msg,) = _only(check_allocation(B, X, non_wasteful=False), "agent 0 over-allocated")
    assert "1.5" in msg and "by 0.5" in msg


def test_flags_non_integral():
    X = _valid() * 0.5
    assert check_allocation(B, X, non_wasteful=False)  # fine as a fractional allocation
    msgs = _only(check_allocation(B, X, integral=True, non_wasteful=False), "not integral")
    assert len(msgs) == 3 and "agent 0, item 0" in msgs[0]


def test_flags_waste_in_the_online_sense():
    X = np.zeros((3, 3))
    X[2, 1] = X[1, 2] = 1.0  # item 0 dropped while agents 0 and 1 were empty
    (msg,) = _only(check_allocation(B, X), "wasteful")
    assert "item 0 keeps 1 unallocated" in msg and "agent 0" in msg
    # agent 1 ends full, but it was empty when item 0 left: still wasteful (agent 0 named first)
    X = np.zeros((1, 2))
    X[0, 1] = 1.0
    (msg,) = _only(check_allocation(np.ones((1, 2)), X), "wasteful")
    assert "item 0" in msg and "load 0 after it" in msg
    assert check_allocation(np.ones((1, 2)), np.array([[1.0, 0.0]]))
    assert check_allocation(B, np.zeros((3, 3)), non_wasteful=False)


def test_many_violations_are_truncated():
    n = 30
    X = -np.eye(n)
    res = check_allocation(np.eye(n), X, non_wasteful=False)
    assert len(res.violations) == 21 and res.violations[-1] == "... and 10 more of this kind"


def test_check_allocation_bad_input():
    with pytest.raises(TypeError, match="'biadjacency' must be a numpy array or a scipy sparse matrix"):
        check_allocation("B", _valid())
    with pytest.raises(TypeError, match="'allocation' must hold real numbers"):
        check_allocation(B, np.full((3, 3), "x"))
    with pytest.raises(ValueError,
                       match=r"'allocation' must have the shape of 'biadjacency' \(3, 3\); got shape \(3, 2\)"):
        check_allocation(B, _valid()[:, :2])
    with pytest.raises(ValueError, match=r"'biadjacency' must be 2-dimensional"):
        check_allocation(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="'allocation' must contain only finite values; got nan at agent 0, item 1"):
        check_allocation(B, np.array([[0, np.nan, 0], [0, 0, 0], [0, 0, 0]]))
    with pytest.raises(ValueError, match=r"'tol' must be a float in \[0, inf\]; got -1\.0"):
        check_allocation(B, _valid(), tol=-1.0)
    with pytest.raises(TypeError, match="'tol' must be a float"):
        check_allocation(B, _valid(), tol="1e-9")
    with pytest.raises(TypeError, match="'integral' must be a bool"):
        check_allocation(B, _valid(), integral=1)
    with pytest.raises(TypeError, match="'non_wasteful' must be a bool"):
        check_allocation(B, _valid(), non_wasteful=None)
    with pytest.raises(TypeError):
        check_allocation(B, _valid(), True)  # flags are keyword-only


# --- the CLI reports the guarantees theory/ computes ---------------------------------------------------

def test_cli_guarantees_follow_the_theory_functions(monkeypatch, capsys):
    import json

    import theory.fair_matching as tfm
    from algos.cli import main

    argv = ["matching", "--n-agents", "8", "--n-items", "10", "--n-classes", "2", "--p", "0.4", "--n-runs", "4",
            "--algorithm", "tef,hybrid,water-filling,equal-filling,greedy", "--json"]
    assert main(argv) == 0
    base = {r["algorithm"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    assert base["tef"]["usw_guarantee"] == pytest.approx(tfm.usw_lower_bound(0.5))
    assert base["water-filling"]["usw_guarantee"] == pytest.approx(1 - math.exp(-1))
    assert base["equal-filling"]["cef_guarantee"] == pytest.approx(1 - math.exp(-1))
    assert base["greedy"]["usw_guarantee"] == 0.5
    orig_u, orig_c = tfm.usw_lower_bound, tfm.cef_lower_bound
    monkeypatch.setattr(tfm, "usw_lower_bound", lambda g: 0.5 * orig_u(g))
    monkeypatch.setattr(tfm, "cef_lower_bound", lambda g, divisible=True: 0.5 * orig_c(g, divisible))
    monkeypatch.setattr(tfm, "nonwasteful_usw_lower_bound", lambda: 0.25)
    assert main(argv) == 0
    mut = {r["algorithm"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    for name in base:
        assert mut[name]["usw_guarantee"] == pytest.approx(0.5 * base[name]["usw_guarantee"]), name
        if base[name]["cef_guarantee"] is not None:
            assert mut[name]["cef_guarantee"] == pytest.approx(0.5 * base[name]["cef_guarantee"]), name
