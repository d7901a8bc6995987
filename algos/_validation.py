"""Shared input checks with one error wording for the whole package.

The generic checks live in :mod:`theory._checks` (the bottom layer, which :mod:`theory` and
:mod:`accel` import too) and are re-exported here under their usual names; this module adds the checks
that need scikit-learn.
"""

from __future__ import annotations

import numpy as np

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


def _random_state_constraints():
    from numbers import Integral

    from sklearn.utils._param_validation import Interval

    return [None, Interval(Integral, 0, None, closed="left"), np.random.SeedSequence, np.random.Generator,
            np.random.RandomState]


#: ``_parameter_constraints`` entry for ``random_state`` (scikit-learn's format): what
#: :func:`check_random_state` accepts (None, an int >= 0, a SeedSequence, a Generator, a RandomState).
RANDOM_STATE_CONSTRAINTS = _random_state_constraints()
