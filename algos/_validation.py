"""Shared input checks with one error wording for the whole package.

The generic checks live in :mod:`theory._checks` (the bottom layer, which :mod:`theory` and
:mod:`accel` import too) and are re-exported here under their usual names; this module adds the checks
that need scikit-learn.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval, Options, StrOptions

from theory._checks import (  # noqa: F401 - re-exported: algos imports them from here
    _in_interval,
    _interval_text,
    _show,
    check_array,
    check_array_1d,
    check_bool,
    check_finite,
    check_not_strings,
    check_option,
    check_random_state,
    check_same_length,
    check_scalar_float,
    check_scalar_int,
    spawn_generators,
)

__all__ = [
    "check_scalar_float",
    "check_scalar_int",
    "check_option",
    "check_bool",
    "check_array_1d",
    "check_array",
    "check_same_length",
    "check_finite",
    "check_random_state",
    "spawn_generators",
]


def r2_score_checked(y, y_pred, sample_weight=None):
    r""":math:`R^2` of ``y_pred`` (a regressor's ``predict(X)``) against ``y``, as scikit-learn computes it.

    ``y`` is checked (real, 1-d or one column, as long as ``y_pred``). Where the sums of squares overflow
    float64 (entries near 1e154 and beyond) they are computed on residuals and deviations divided by one
    power of two, which leaves :math:`R^2` unchanged; ``ValueError`` when :math:`R^2` itself is beyond
    float64 (residuals some 1e154 times the spread of ``y``).
    """
    import math

    from sklearn.metrics import r2_score

    y = check_array(y, "y", ndim=(1, 2))
    if y.ndim == 2:
        if y.shape[1] != 1:
            raise ValueError(f"'y' must be 1-dimensional (or one column); got an array of shape {y.shape}.")
        y = y[:, 0]
    check_same_length("X", y_pred, "y", y)
    with np.errstate(over="ignore", invalid="ignore"):
        score = float(r2_score(y, y_pred, sample_weight=sample_weight))
        if math.isfinite(score):
            return score
        w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        r = y - y_pred
        dev = y - np.average(y, weights=w)
        big = max(float(np.max(np.abs(r))), float(np.max(np.abs(dev))))
        if math.isfinite(big) and big > 0:
            scale = math.ldexp(1.0, -math.frexp(big)[1])
            den = float(np.sum(w * (dev * scale) ** 2))
            if den > 0:
                score = 1.0 - float(np.sum(w * (r * scale) ** 2)) / den
    if not math.isfinite(score):
        raise ValueError(
            "R^2 of predict('X') against 'y' is beyond float64: the residuals are too large against the "
            "spread of 'y'; rescale the data."
        )
    return score


class OrderedStrOptions(StrOptions):
    """scikit-learn's ``StrOptions`` that also keeps the order of the options, for messages.

    An error lists the options as the package's checks do (``OrderedStrOptions(("ols", "zeros"))``).

    Parameters
    ----------
    options : sequence of str
        The valid strings, in the order the error messages list them.
    """

    def __init__(self, options):
        super().__init__(set(options))
        self.ordered = tuple(options)


#: ``_parameter_constraints`` entry for ``random_state`` (scikit-learn's format): what
#: :func:`check_random_state` accepts (None, an int >= 0, a SeedSequence, a Generator, a RandomState).
RANDOM_STATE_CONSTRAINTS = [None, Interval(Integral, 0, None, closed="left"), np.random.SeedSequence,
                            np.random.Generator, np.random.RandomState]


def validate_params(estimator):
    """Check ``estimator``'s parameters against its ``_parameter_constraints`` (scikit-learn's format).

    Called by ``fit`` (and ``partial_fit``) before it uses a parameter. A parameter whose constraint
    is one interval, one set of options or ``"boolean"`` (each possibly ``or None``) is checked first
    with the package's own checks, so the error keeps the package wording (``TypeError`` for a wrong
    type, ``ValueError`` naming the parameter, the rule and the value); every other violation raises
    scikit-learn's ``InvalidParameterError`` (a ``ValueError`` and a ``TypeError``) from
    ``estimator._validate_params()``.

    Parameters
    ----------
    estimator : BaseEstimator
        An estimator declaring ``_parameter_constraints``.

    Examples
    --------
    >>> from algos.fair_matching import Ranking
    >>> validate_params(Ranking(n_runs=0))
    Traceback (most recent call last):
    ...
    ValueError: 'n_runs' must be an int in [1, inf]; got 0.
    """
    params = estimator.get_params(deep=False)
    for name, constraints in estimator._parameter_constraints.items():
        if isinstance(constraints, str) or name not in params:
            continue
        value = params[name]
        if constraints is RANDOM_STATE_CONSTRAINTS:
            check_random_state(value, name)
            continue
        rest = [c for c in constraints if c is not None]
        if value is None and len(rest) < len(constraints):
            continue
        if rest and all(isinstance(c, type) for c in rest):  # types only: "a dict or None"
            if not isinstance(value, tuple(rest)):
                kinds = [f"a {c.__name__}" for c in rest] + (["None"] if len(rest) < len(constraints) else [])
                kinds = " or ".join(kinds)
                raise TypeError(f"'{name}' must be {kinds}; got {type(value).__name__}.")
            continue
        if len(rest) != 1:
            continue
        (c,) = rest
        if isinstance(c, Interval):
            # an unbounded end is written "inf" with the bracket of the bounded end ("[1, inf]",
            # "(0, inf)"), as the package's checks write it
            left = c.closed in ("left", "both")
            right = c.closed in ("right", "both")
            left, right = (right if c.left is None else left), (left if c.right is None else right)
            closed = {(True, True): "both", (True, False): "left", (False, True): "right"}.get((left, right), "neither")
            check = check_scalar_int if c.type is Integral else check_scalar_float
            check(value, name, low=c.left, high=c.right, closed=closed)
        elif isinstance(c, StrOptions):
            check_option(value, name, getattr(c, "ordered", None) or tuple(sorted(c.options)))
        elif isinstance(c, Options):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, c.type) or value not in c.options:
                opts = ", ".join(repr(o) for o in sorted(c.options))
                raise ValueError(f"'{name}' must be one of {{{opts}}}; got {_show(value)}.")
        elif c == "boolean":
            check_bool(value, name)
    estimator._validate_params()
