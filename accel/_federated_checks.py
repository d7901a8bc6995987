"""Checks of the federated model's parameter dicts and client data (a leaf shared by both layers).

The numpy/numba path (:mod:`algos.federated`) and the torch path (:mod:`accel.federated`) validate
their inputs with these functions, so both raise the same errors; they live in :mod:`accel` (the bottom
layer) so that the torch path needs nothing from :mod:`algos`. Pure numpy.
"""

from __future__ import annotations

import numpy as np

from theory._checks import check_array, check_scalar_int

BLOCK_NAMES = ("W", "b", "A", "B")


def _check_params(params, name="params"):
    """Validate a parameter dict; return ``(d, C, r)``."""
    if not isinstance(params, dict):
        raise TypeError(f"'{name}' must be a dict of arrays with keys 'W', 'b' (and 'A', 'B'); "
                        f"got {type(params).__name__}.")
    unknown = sorted(set(params) - set(BLOCK_NAMES))
    if unknown or "W" not in params or "b" not in params:
        raise ValueError(f"'{name}' must have keys 'W', 'b' and optionally both 'A', 'B'; got keys {sorted(params)}.")
    if ("A" in params) != ("B" in params):
        raise ValueError(f"'{name}' must hold both adapter factors 'A' and 'B' or neither; got keys {sorted(params)}.")
    for k, v in params.items():
        if not isinstance(v, np.ndarray) or v.dtype != np.float64:
            raise TypeError(f"'{name}[{k!r}]' must be a float64 numpy array; got {type(v).__name__}"
                            f"{' of dtype ' + str(v.dtype) if isinstance(v, np.ndarray) else ''}.")
        if not np.all(np.isfinite(v)):
            raise ValueError(f"'{name}[{k!r}]' must contain only finite values.")
    W, b = params["W"], params["b"]
    if W.ndim != 2 or b.shape != (W.shape[1],):
        raise ValueError(f"'{name}' must have 'W' of shape (d, C) and 'b' of shape (C,); got "
                         f"{W.shape} and {b.shape}.")
    d, C = W.shape
    r = 0
    if "A" in params:
        A, B = params["A"], params["B"]
        if A.ndim != 2 or B.ndim != 2 or A.shape[0] != d or B.shape[1] != C or A.shape[1] != B.shape[0]:
            raise ValueError(f"'{name}' adapter must have 'A' of shape (d, r) = ({d}, r) and 'B' of shape "
                             f"(r, {C}); got {A.shape} and {B.shape}.")
        r = A.shape[1]
    return d, C, r


def _check_real_2d(X, name="X"):
    """``X`` as a C-contiguous float64 2-d array of finite real numbers."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"'{name}' must be a 2-d array; got shape {X.shape}.")
    if X.dtype.kind not in "iuf":
        raise TypeError(f"'{name}' must contain real numbers; got dtype {X.dtype}.")
    X = np.ascontiguousarray(X, dtype=np.float64)
    if not np.all(np.isfinite(X)):
        raise ValueError(f"'{name}' must contain only finite values.")
    return X


def _check_Xy(X, y, n_features, n_classes, name="X"):
    X = _check_real_2d(X, name)
    if X.shape[1] != n_features:
        raise ValueError(f"'{name}' has {X.shape[1]} features; the parameters expect {n_features}.")
    if y is None:
        return X, None
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"'y' must be 1-d with {X.shape[0]} entries (one per row of '{name}'); got shape {y.shape}.")
    if y.size and (y.dtype.kind not in "iu" and not (y.dtype.kind == "f" and np.all(y == np.round(y)))):
        raise TypeError("'y' must contain class indices (integers in [0, n_classes)); "
                        f"got dtype {y.dtype}.")
    y = y.astype(np.int64)
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        raise ValueError(f"'y' must contain class indices in [0, {n_classes}); got values in "
                         f"[{y.min()}, {y.max()}].")
    return X, y


def _check_n_classes(n_classes, C):
    """``n_classes`` must be an int >= 2 equal to ``C``, the number of columns of ``W``."""
    if check_scalar_int(n_classes, "n_classes", low=2) != C:
        raise ValueError(f"'n_classes' must equal the number of columns of 'W' ({C}); got {n_classes}.")


def _check_model_data(params, X, y, n_classes=None):
    """``(d, C, r)`` of ``params``, ``X`` and ``y`` checked against them (at least one row); ``n_classes`` if given."""
    d, C, r = _check_params(params)
    if n_classes is not None:
        _check_n_classes(n_classes, C)
    X, y = _check_Xy(X, y, d, C)
    if X.shape[0] == 0:
        raise ValueError("'X' must have at least one row; got 0.")
    return (d, C, r), X, y


def _check_trainable(trainable, params):
    if trainable is None:
        return tuple(k for k in BLOCK_NAMES if k in params)
    if isinstance(trainable, str):
        trainable = (trainable,)
    trainable = tuple(trainable)
    bad = [k for k in trainable if k not in params]
    if bad:
        raise ValueError(f"'trainable' must name blocks of the parameters {sorted(params)}; got {list(trainable)}.")
    return trainable


def _check_client_data(client_data, d, C):
    if not isinstance(client_data, (list, tuple)) or len(client_data) == 0:
        raise ValueError("'client_data' must be a non-empty list of (X, y) pairs.")
    Xs, ys = [], []
    for i, pair in enumerate(client_data):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"'client_data[{i}]' must be an (X, y) pair.")
        X, y = _check_Xy(pair[0], pair[1], d, C, name=f"client_data[{i}][0]")
        if X.shape[0] == 0:
            raise ValueError(f"'client_data[{i}]' must have at least one sample; got 0.")
        Xs.append(X)
        ys.append(y)
    return Xs, ys


def _check_weights(weights, M):
    w = check_array(weights, "weights", allow_empty=True, finite=False) if weights is not None else None
    if w is None or w.shape != (M,):
        raise ValueError(f"'weights' must be a 1-d array with one weight per client ({M}); got "
                         f"{None if w is None else w.shape}.")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError("'weights' must be finite, non-negative and not all zero.")
    return w
