"""Argument checks shared by the bounds of :mod:`theory.pomdp` (scalar checks from ``theory/_checks.py``,
array checks of beliefs, alpha vectors and index tables).

Pure numpy; imports nothing from ``algos``.
"""

from __future__ import annotations

import numpy as np

from ._checks import InBody, Int, Real

#: The discounted bounds need ``0 <= discount < 1`` (at 1 the factors 1/(1-discount) blow up).
DISCOUNT = Real(0.0, 1.0, closed="left")
COUNT = Int(1)
NONNEG = Real(0.0)


def array_rule(ndim, shape):
    """The rule of a finite, non-empty real array (checked in the body, where shapes tie arguments)."""
    return InBody(f"a finite non-empty real {ndim}-d array of shape {shape}")


def _array(x, name, ndim):
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError) as exc:  # ragged input
        raise TypeError(f"'{name}' must be an array of real numbers; got {type(x).__name__}.") from exc
    if raw.dtype.kind not in "biuf":
        raise TypeError(f"'{name}' must be an array of real numbers; got an array of dtype {raw.dtype}.")
    x = raw.astype(float)
    if x.ndim != ndim:
        raise ValueError(f"'{name}' must be a {ndim}-d array; got shape {x.shape}.")
    if x.size == 0:
        raise ValueError(f"'{name}' must not be empty; got shape {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"'{name}' must contain only finite values.")
    return x


def _index_array(x, name, n):
    """An integer array with entries in ``[0, n)`` (integral floats accepted, NaN and 2.5 refused)."""
    raw = np.asarray(x)
    if raw.dtype.kind == "f" and raw.size and np.all(np.isfinite(raw)) and np.all(raw == np.round(raw)):
        raw = raw.astype(np.int64)
    if raw.size == 0 or raw.dtype.kind not in "iu":
        raise TypeError(f"'{name}' must be a non-empty array of ints in [0, {n}); got an array of dtype "
                        f"{raw.dtype} and shape {raw.shape}.")
    if raw.min() < 0 or raw.max() >= n:
        bad = raw[(raw < 0) | (raw >= n)].flat[0]
        raise ValueError(f"'{name}' must hold ints in [0, {n}); got {int(bad)}.")
    return raw.astype(np.int64)


def _beliefs(B, name="B", S=None):
    """Beliefs as an (n, S) array; one belief (S,) is read as n = 1. ``S``: the number of states the
    other arguments fix (checked when given)."""
    if np.ndim(B) not in (1, 2):
        raise ValueError(f"'{name}' must have shape (n, S) or (S,); got shape {np.shape(B)}.")
    B = np.atleast_2d(_array(B, name, np.ndim(B)))
    if S is not None and B.shape[1] != S:
        raise ValueError(f"'{name}' must have S = {S} columns (one per state); got shape {B.shape}.")
    return B


def _n_states(alphas):
    """The number of states of an (n, S) array of alpha vectors (``None`` when it is not 2-d)."""
    return np.shape(alphas)[1] if np.ndim(alphas) == 2 else None


def _value(alphas, B):
    return (np.atleast_2d(B) @ _array(alphas, "alphas", 2).T).max(axis=1)

