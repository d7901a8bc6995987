"""The fuzz harness reads parameter ranges from ``_parameter_constraints`` (the docstring is the fallback
for parameters without a constraint), and the two agree where both state a range."""

from __future__ import annotations

import importlib
import inspect
import math
from numbers import Integral, Real

import pytest
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions

from tests.fuzz._harness import constraint_options, constraint_ranges, documented_ranges, parameter_ranges

MODULES = ("fair_matching", "hetero_regression", "networked_learning", "pomdp", "continual", "federated",
           "point_process")


class _Toy(BaseEstimator):
    """A toy estimator.

    Parameters
    ----------
    a : int
        Count.
    b : float in (0, 1]
        Fraction.
    c : float in [0, 5]
        Documented only.
    d : float, default=1.0
        Open interval.
    e : str
        Mode.
    f : float in [0, 2]
        Unchecked by the constraints (the docstring range is used).
    """

    _parameter_constraints = {
        "a": [Interval(Integral, 1, None, closed="left"), None],
        "b": [Interval(Real, 0, 1, closed="right")],
        "d": [Interval(Real, 0, 10, closed="neither")],
        "e": [StrOptions({"x", "y"}), None],
        "f": "no_validation",
        "g": [Interval(Integral, 1, None, closed="left"), Interval(Real, 0, 1, closed="neither")],
        "h": ["boolean"],
        "k": [Interval(Real, None, None, closed="neither")],
    }


def test_ranges_come_from_the_constraints_and_fall_back_to_the_docstring():
    assert constraint_ranges(_Toy) == {"a": (1.0, None, True, False), "b": (0.0, 1.0, False, True),
                                       "d": (0.0, 10.0, False, False), "e": None, "g": None, "h": None,
                                       "k": None}
    assert constraint_options(_Toy) == {"e": {"x", "y"}}
    # c and f have no constraint: their documented ranges; e, g, h, k have constraints but no range
    assert parameter_ranges(_Toy) == {"a": (1.0, None, True, False), "b": (0.0, 1.0, False, True),
                                      "c": (0.0, 5.0, True, True), "d": (0.0, 10.0, False, False),
                                      "f": (0.0, 2.0, True, True)}


def _norm(r):
    lo, hi, lo_closed, hi_closed = r
    lo = None if lo == -math.inf else lo  # an Interval to +-inf (which refuses inf itself) is "(0, inf)"
    hi = None if hi == math.inf else hi
    return (lo, hi, lo_closed and lo is not None, hi_closed and hi is not None)  # "[1, inf]" == "[1, inf)"


def _estimators():
    for module in MODULES:
        mod = importlib.import_module(f"algos.{module}")
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isclass(obj) and issubclass(obj, BaseEstimator) and "_parameter_constraints" in vars(obj):
                yield name, obj


@pytest.mark.parametrize("name, cls", list(_estimators()), ids=[n for n, _ in _estimators()])
def test_documented_ranges_agree_with_the_constraints(name, cls):
    cons, doc = constraint_ranges(cls), documented_ranges(cls)
    assert set(cons) <= set(inspect.signature(cls).parameters)
    bad = {k: (doc[k], cons[k]) for k in doc if cons.get(k) is not None and _norm(doc[k]) != _norm(cons[k])}
    assert not bad, f"{name}: docstring range != constraint range: {bad}"
