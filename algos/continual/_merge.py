r"""Merging streaming-LDA states and fitting them data-parallel over a Dask array.

Exact-mode streaming LDA keeps sufficient statistics (class counts, class means, pooled scatter) that
combine by the Chan et al. (1979) pairwise update, so states fitted on different parts of a data set
merge into the state of a fit on the whole. :func:`fit_dask` maps the per-block fits onto the workers
of a Dask cluster (``to_delayed``; features by ``map_blocks`` for :class:`CIRCLEClassifier`) and
tree-reduces them with ``merge``. Dask is optional: arrays are recognised by their type's module and
``dask`` is imported only when such an array is fitted.
"""

from __future__ import annotations

import copy
import math
from numbers import Integral

import numpy as np
from sklearn.base import clone

from .._validation import validate_params

__all__ = ["fit_dask", "is_dask_array", "check_merge_params", "ORDER_DEPENDENT"]

#: Covariance modes whose state depends on the order of the samples (they cannot be merged).
ORDER_DEPENDENT = ("hayes", "fixed")


def _same(a, b):
    try:
        return bool(np.dtype(a) == np.dtype(b)) if not isinstance(a, str) or not isinstance(b, str) else a == b
    except TypeError:
        return a == b


def check_merge_params(est, other, names):
    """Check that two estimators to merge agree on the parameters ``names`` and that ``covariance`` is
    order-free; returns the covariance mode. Raises ``ValueError`` naming the first parameter that differs."""
    mode = est.covariance
    if other.covariance in ORDER_DEPENDENT:
        mode = other.covariance
    if mode in ORDER_DEPENDENT:
        raise ValueError(
            f"'covariance' = {mode!r} cannot be merged: its state depends on the order of the samples "
            "(no merge of two states equals the fit on their union); use covariance='exact'."
        )
    for name in names:
        a, b = getattr(est, name), getattr(other, name)
        equal = _same(a, b) if name in ("dtype", "head_dtype") else (a == b)
        if not np.all(equal):
            if name in ("dtype", "head_dtype"):
                a, b = (v if isinstance(v, str) else np.dtype(v).name for v in (a, b))
            raise ValueError(f"'{name}' differs between the states to merge ({a!r} and {b!r}); "
                             "only estimators with equal parameters can be merged.")
    return mode


def is_dask_array(X):
    """Whether ``X`` is a ``dask.array.Array`` (recognised without importing dask)."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "to_delayed") and hasattr(X, "chunks")


def _fit_block(head, X, y, classes):
    """A fresh copy of the unfitted ``head`` fitted on one block."""
    est = clone(head)
    return est.partial_fit(X, y, classes=classes)


def _merge_states(first, *rest):
    """Merge fitted states into a copy of the first (the inputs are left unchanged)."""
    out = copy.deepcopy(first)
    for other in rest:
        out.merge(other)
    return out


def _check_dask_input(estimator, X, y, split_every):
    if not (hasattr(estimator, "merge") and hasattr(estimator, "_partial_fit")):
        raise TypeError(f"'estimator' must be a StreamingLDA, SLDAEnsemble or CIRCLEClassifier; "
                        f"got {type(estimator).__name__}.")
    validate_params(estimator)
    check_merge_params(estimator, estimator, ())
    if isinstance(split_every, bool) or not isinstance(split_every, Integral) or split_every < 2:
        raise ValueError(f"'split_every' must be an int >= 2; got {split_every!r}.")
    if not is_dask_array(X):
        raise TypeError(f"'X' must be a dask.array.Array; got {type(X).__name__}.")
    images = hasattr(estimator, "extract_features")
    if X.ndim != 2 and not (images and X.ndim == 4):
        raise ValueError(f"'X' must be a 2-d dask array (n_samples, n_features){' or 4-d images' if images else ''}; "
                         f"got {X.ndim} dimensions.")
    if any(math.isnan(c) for c in X.chunks[0]):
        raise ValueError("'X' has unknown chunk sizes; call X.compute_chunk_sizes() first.")
    split = [i for i in range(1, X.ndim) if len(X.chunks[i]) > 1]
    if split:
        raise ValueError(f"'X' must be chunked along rows only (whole samples per block); it is chunked along "
                         f"axis {split[0]} ({X.chunks[split[0]]}): use X.rechunk({{{split[0]}: -1}}).")
    if X.shape[0] < 1:
        raise ValueError("'X' must hold at least one sample; got 0 rows.")
    if is_dask_array(y):
        if y.ndim != 1:
            raise ValueError(f"'y' must be a 1-d array of class labels; got a dask array of shape {y.shape}.")
        if tuple(y.chunks[0]) != tuple(X.chunks[0]):
            raise ValueError(f"'y' must have the row chunks of 'X' ({X.chunks[0]}); got {y.chunks[0]}: "
                             "use y.rechunk((X.chunks[0],)).")
    else:
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != X.shape[0]:
            raise ValueError(f"'y' must be a 1-d array of {X.shape[0]} class labels (one per row of 'X'); "
                             f"got shape {y.shape}.")
    return images, y


def fit_dask(estimator, X, y, *, classes=None, split_every=8):
    r"""Fit a streaming-LDA estimator data-parallel over the row blocks of a Dask array.

    Every block of ``(X, y)`` is fitted on a worker by a fresh copy of the estimator's head
    (``to_delayed``); the per-block states are combined by a tree of ``merge`` calls (at most
    ``split_every`` states per task) and only the merged state, :math:`O(Kd + d^2)` numbers, comes
    back. For :class:`CIRCLEClassifier` the features are computed on the workers first
    (``map_blocks`` of ``extract_features``; the extractors are data-free, so they are built once
    here and shipped with the graph). The result equals the sequential ``fit`` on the whole data to
    round-off (:meth:`StreamingLDA.merge`). ``estimator.fit(X, y)`` with a Dask array ``X`` calls
    this function.

    The graph runs on the active ``distributed.Client`` if there is one (``dask.compute``), otherwise
    on Dask's default local scheduler. All checks below run before any task is submitted.

    Parameters
    ----------
    estimator : StreamingLDA, SLDAEnsemble or CIRCLEClassifier
        With ``covariance="exact"`` or ``"identity"``. It is fitted in place (its earlier state is
        forgotten, as by ``fit``).
    X : dask.array.Array of shape (n_samples, n_features) (or (n_samples, C, H, W) for CIRCLE)
        Chunked along rows only.
    y : dask.array.Array of shape (n_samples,) or array-like
        Labels; a Dask array must have the row chunks of ``X``.
    classes : array-like or None, default=None
        Labels to register even if no block holds them (as in ``partial_fit``).
    split_every : int >= 2, default=8
        Fan-in of the tree reduction.

    Returns
    -------
    estimator
        The fitted estimator.

    Raises
    ------
    ValueError
        ``covariance="hayes"`` or ``"fixed"`` (their state depends on the order of the samples and
        cannot be merged: use ``"exact"``), ``X`` chunked along features, row chunks of ``y`` that
        differ from those of ``X``, unknown chunk sizes or no rows.
    TypeError
        ``X`` not a Dask array, or an estimator without ``merge``.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> from algos.continual import StreamingLDA, fit_dask
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(1000, 8)), rng.integers(0, 3, 1000)
    >>> clf = fit_dask(StreamingLDA(), da.from_array(X, chunks=(250, 8)), da.from_array(y, chunks=250))
    >>> bool(np.allclose(clf.covariance_, StreamingLDA().fit(X, y).covariance_, rtol=0, atol=1e-12))
    True
    """
    images, y = _check_dask_input(estimator, X, y, split_every)
    import dask
    import dask.array as da

    if not is_dask_array(y):
        y = da.from_array(y, chunks=(X.chunks[0],))
    classes = None if classes is None else np.asarray(classes)
    empty_y = np.zeros(0, dtype=y.dtype)
    if images:
        proto = clone(estimator).partial_fit(np.zeros((0,) + X.shape[1:], dtype=X.dtype), empty_y)
        Xf = X.reshape(X.shape[0], -1) if X.ndim == 4 else X
        d_out = proto.ensemble_.n_features_in_
        F = Xf.map_blocks(proto.extract_features, chunks=(Xf.chunks[0], (d_out,)),
                          dtype=np.dtype(proto.dtype), meta=np.empty((0, 0), dtype=proto.dtype))
        head = clone(proto.ensemble_)
    else:
        F, head = X, clone(estimator)
    blocks = F.to_delayed().ravel()
    labels = y.to_delayed().ravel()
    fit_block = dask.delayed(_fit_block, pure=True)
    merge = dask.delayed(_merge_states, pure=True)
    states = [fit_block(head, xb, yb, classes) for xb, yb in zip(blocks, labels)]
    while len(states) > 1:
        states = [merge(*states[i:i + split_every]) for i in range(0, len(states), split_every)]
    (state,) = dask.compute(states[0])
    estimator._forget()
    if images:
        proto.ensemble_ = state
        proto.classes_ = state.classes_
        state = proto
    return estimator.merge(state)
