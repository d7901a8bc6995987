"""Tests of the array helpers of algos._validation used by the bad-input fixes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.testing import assert_array_equal

from algos._validation import check_array, check_same_length


@given(arrays(np.float64, st.integers(1, 5), elements=st.floats(-1e300, 1e300)))
def test_check_array_returns_an_equal_float_copy(x):
    out = check_array(x, "w", ndim=1)
    assert out.dtype == np.float64
    assert_array_equal(out, x)


@pytest.mark.parametrize(
    "value, kwargs, exc, match",
    [
        (["a", "b"], {}, TypeError, r"^'w' must be an array of real numbers; got an array of dtype <U1\.$"),
        ([1 + 2j], {}, TypeError, r"^'w' must be an array of real numbers; got an array of dtype complex128\.$"),
        ([[1.0], [1.0, 2.0]], {}, TypeError, r"^'w' must be an array of real numbers; got list\.$"),
        ([1.0, np.nan], {}, ValueError, r"^'w' must contain only finite values; got nan at index 1\.$"),
        ([[1.0, np.inf]], {}, ValueError, r"got inf at index \(0, 1\)\.$"),
        ([], {}, ValueError, r"^'w' must not be empty; got an array of shape \(0,\)\.$"),
        ([1.0, 2.0], {"ndim": 2}, ValueError, r"^'w' must be 2-dimensional; got an array of shape \(2,\)\.$"),
        ([1.0, 2.0], {"ndim": (0, 2)}, ValueError, r"^'w' must be 0 or 2-dimensional"),
        ([1.0, 2.0], {"shape": (3,)}, ValueError, r"^'w' must have shape \(3,\); got an array of shape \(2,\)\.$"),
        ([[1.0, 2.0]], {"shape": (None, 3)}, ValueError, r"^'w' must have shape \(\*, 3\)"),
        ([1.5], {"dtype": "int"}, TypeError, r"^'w' must contain integers; got non-integer value 1\.5\.$"),
        ([np.nan], {"dtype": "int"}, ValueError, r"^'w' must contain only finite values"),
    ],
)
def test_check_array_errors(value, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        check_array(value, "w", **kwargs)


def test_check_array_options():
    assert check_array([], "w", allow_empty=True).shape == (0,)
    assert check_array([1.0, np.nan], "w", finite=False).shape == (2,)
    assert check_array([1.0, 2.0], "w", dtype="int").dtype == np.int64
    x = np.array([1.0, 2.0])
    check_array(x, "w")[0] = 5.0  # the result is a new array: the input is never changed
    assert x[0] == 1.0
    assert check_array(np.array([3]), "w").dtype == np.float64


def test_check_same_length():
    check_same_length("X", np.zeros((3, 2)), "y", np.zeros(3))
    with pytest.raises(ValueError, match=r"^'X' and 'y' must have the same length; got 3 and 2\.$"):
        check_same_length("X", np.zeros((3, 2)), "y", np.zeros(2))
