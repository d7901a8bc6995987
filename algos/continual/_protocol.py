r"""Class-incremental protocol: task splits and the accuracy matrix with its summaries."""

from __future__ import annotations

import time

import numpy as np
from sklearn.base import clone

from .._validation import check_bool, check_finite, check_random_state, check_scalar_int
from ._checks import check_labels, check_numeric

__all__ = ["class_incremental_split", "evaluate_cil"]


def class_incremental_split(y, n_tasks, first_task_classes=None, class_order_seed=0):
    r"""Split the classes of ``y`` into ``n_tasks`` disjoint tasks (cold start: no large base task).

    The class order is a fixed permutation of the sorted class labels drawn from
    ``numpy.random.default_rng(class_order_seed)`` (EFC/FACIL use a seed-0 permutation); with
    ``class_order_seed=None`` the sorted order is kept. The first task gets ``first_task_classes``
    classes and the other tasks share the rest as evenly as possible (sizes differ by at most one,
    larger tasks first); by default all tasks share all classes that way.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Labels (any sortable type).
    n_tasks : int in [1, n_classes]
    first_task_classes : int or None, default=None
        Number of classes in the first task, in ``[1, n_classes - n_tasks + 1]``.
    class_order_seed : int or None, default=0

    Returns
    -------
    list of ndarray
        The class labels of each task, in task order.

    Raises
    ------
    ValueError
        If ``y`` is empty, ``n_tasks`` exceeds the number of classes, or ``first_task_classes`` leaves a
        later task without a class.

    Examples
    --------
    >>> [t.tolist() for t in class_incremental_split([0, 1, 2, 3, 4, 5], 3, class_order_seed=None)]
    [[0, 1], [2, 3], [4, 5]]
    >>> [t.tolist() for t in class_incremental_split(list(range(6)), 3, first_task_classes=4, class_order_seed=None)]
    [[0, 1, 2, 3], [4], [5]]
    """
    y = check_labels(y, "y", allow_empty=False)
    classes = np.unique(y)
    K = classes.size
    n_tasks = check_scalar_int(n_tasks, "n_tasks", low=1)
    if n_tasks > K:
        raise ValueError(f"'n_tasks' must be an int in [1, {K}] (at most the number of classes in 'y'); "
                         f"got {n_tasks}.")
    if class_order_seed is not None:
        classes = classes[check_random_state(class_order_seed, "class_order_seed").permutation(K)]
    if first_task_classes is None:
        return [np.asarray(t) for t in np.array_split(classes, n_tasks)]
    first = check_scalar_int(first_task_classes, "first_task_classes", low=1, high=K - n_tasks + 1)
    if n_tasks == 1 and first != K:
        raise ValueError(f"'first_task_classes' must equal the number of classes ({K}) when n_tasks = 1; got {first}.")
    rest = np.array_split(classes[first:], n_tasks - 1) if n_tasks > 1 else []
    return [classes[:first]] + [np.asarray(t) for t in rest]


def _check_data(X, name):
    """A non-empty array of real, finite samples (first axis) with at least one feature axis.

    The array keeps its dtype (uint8 images stay uint8): the model converts it.
    """
    if hasattr(X, "toarray") or hasattr(X, "tocsr"):
        return X  # sparse features: the model checks them
    check_numeric(X, name)
    X = np.asarray(X)
    if X.ndim < 2:
        raise ValueError(f"'{name}' must have shape (n_samples, ...) with at least 2 dimensions; got an array of "
                         f"shape {X.shape}.")
    if X.shape[0] == 0:
        raise ValueError(f"'{name}' must not be empty; got an array of shape {X.shape}.")
    if X.dtype.kind == "f" and not (np.isfinite(X.min()) and np.isfinite(X.max())):  # cheap test, then locate
        check_finite(X, name)
    return X


def _with_context(exc, context):
    """``exc`` re-created with ``context`` in front of its message (same type where it can be rebuilt)."""
    msg = f"{context}: {exc}"
    try:
        return type(exc)(msg)
    except Exception:  # noqa: BLE001 - an exception type with another constructor
        return (TypeError if isinstance(exc, TypeError) else ValueError)(msg)


def _make_model(model_factory):
    is_class = isinstance(model_factory, type)
    if not is_class and hasattr(model_factory, "partial_fit") and hasattr(model_factory, "get_params"):
        return clone(model_factory)
    if callable(model_factory):
        model = model_factory()
        if not hasattr(model, "partial_fit"):
            raise TypeError(f"'model_factory' must return an estimator with partial_fit; got {type(model).__name__}.")
        return model
    raise TypeError(
        f"'model_factory' must be a callable returning an estimator, or an estimator with partial_fit; "
        f"got {type(model_factory).__name__}."
    )


def _checked_tasks(tasks):
    """``tasks`` as a list of 1-d label arrays: non-empty, each task non-empty, the tasks disjoint."""
    if isinstance(tasks, (str, bytes)) or not hasattr(tasks, "__iter__"):
        raise TypeError(f"'tasks' must be a list of array-likes of class labels; got {tasks!r} of type "
                        f"{type(tasks).__name__}.")
    tasks = [np.atleast_1d(np.asarray(t)) for t in tasks]
    if not tasks:
        raise ValueError("'tasks' must contain at least one task; got an empty list.")
    seen = set()
    for j, t in enumerate(tasks):
        if t.size == 0:
            raise ValueError(f"'tasks' must not contain an empty task; task {j} is empty.")
        overlap = seen.intersection(t.tolist())
        if overlap:
            raise ValueError(f"'tasks' must be disjoint; class {sorted(overlap)[0]!r} appears again in task {j}.")
        seen.update(t.tolist())
    return tasks


def evaluate_cil(model_factory, X_tr, y_tr, X_te, y_te, tasks, *, batch_size=None, shuffle=True, random_state=0,
                 return_model=False):
    r"""Run a class-incremental stream and return the accuracy matrix and its summaries.

    Tasks are learned one after the other with ``partial_fit`` (in mini-batches of ``batch_size``,
    within-task order shuffled with ``random_state`` when ``shuffle``); after each task the model is
    scored, task-agnostically (over every class it has seen), on the test samples of every task so far.

    Let :math:`a_{t,j}` be the accuracy on the test samples of task :math:`j` after task :math:`t`:

    * ``acc_matrix[t, j]`` = :math:`a_{t,j}` for :math:`j \le t` (NaN above the diagonal);
    * ``A_step[t]`` = accuracy over all test samples of tasks :math:`1..t` (sample-weighted);
    * ``A_last`` = ``A_step[-1]``; ``A_inc`` = mean of ``A_step``;
    * ``forgetting`` = :math:`\frac{1}{T-1}\sum_{j<T}\max_{t<T}(a_{t,j} - a_{T,j})` (0 when T = 1).

    Parameters
    ----------
    model_factory : callable or estimator
        A callable returning a fresh estimator with ``partial_fit``, or such an estimator (cloned).
    X_tr, y_tr, X_te, y_te : arrays
        Training and test data; the first axis indexes samples (any further shape is passed through).
    tasks : list of array-like
        The class labels of each task (:func:`class_incremental_split`); disjoint.
    batch_size : int or None, default=None
        ``None``: one ``partial_fit`` call per task.
    shuffle : bool, default=True
    random_state : int, Generator or None, default=0
    return_model : bool, default=False
        Also return the final model under the key ``"model"``.

    Returns
    -------
    dict
        ``acc_matrix`` (T, T), ``A_step`` (list of T floats), ``A_last``, ``A_inc``, ``forgetting``,
        ``n_test`` (test samples per task), ``fit_seconds`` and ``predict_seconds``.

    Raises
    ------
    ValueError
        If the tasks overlap, are empty, or a task has no training or no test sample.
    """
    X_tr, X_te = _check_data(X_tr, "X_tr"), _check_data(X_te, "X_te")
    y_tr = check_labels(y_tr, "y_tr", allow_empty=False)
    y_te = check_labels(y_te, "y_te", allow_empty=False)
    for xn, X, yn, y in (("X_tr", X_tr, "y_tr", y_tr), ("X_te", X_te, "y_te", y_te)):
        if len(X) != len(y):
            raise ValueError(f"'{xn}' and '{yn}' must have the same length; got {len(X)} and {len(y)}.")
    tasks = _checked_tasks(tasks)
    if batch_size is not None:
        batch_size = check_scalar_int(batch_size, "batch_size", low=1)
    shuffle = check_bool(shuffle, "shuffle")
    rng = check_random_state(random_state)
    tr_idx = [np.flatnonzero(np.isin(y_tr, t)) for t in tasks]
    te_idx = [np.flatnonzero(np.isin(y_te, t)) for t in tasks]
    for j, (a, b) in enumerate(zip(tr_idx, te_idx)):
        if a.size == 0 or b.size == 0:
            kind, where = ("training", "y_tr") if a.size == 0 else ("test", "y_te")
            raise ValueError(f"task {j} of 'tasks' (classes {tasks[j].tolist()}) has no {kind} sample in '{where}'.")
    T = len(tasks)
    model = _make_model(model_factory)
    acc = np.full((T, T), np.nan)
    correct = np.zeros((T, T))
    fit_s = pred_s = 0.0
    for t in range(T):
        idx = rng.permutation(tr_idx[t]) if shuffle else tr_idx[t]
        step = idx.size if batch_size is None else batch_size
        t0 = time.perf_counter()
        for s in range(0, idx.size, step):
            b = idx[s:s + step]
            try:
                model.partial_fit(X_tr[b], y_tr[b])
            except (ValueError, TypeError) as exc:
                raise _with_context(exc,
                                    f"{type(model).__name__}.partial_fit rejected task {t} of 'X_tr'/'y_tr'") from exc
        fit_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        ev = np.concatenate(te_idx[:t + 1])
        try:
            pred = np.asarray(model.predict(X_te[ev]))
        except (ValueError, TypeError) as exc:
            raise _with_context(exc, f"{type(model).__name__}.predict rejected 'X_te' after task {t} (the model "
                                      f"fitted on tasks 0-{t} of 'X_tr'/'y_tr')") from exc
        pred_s += time.perf_counter() - t0
        hit = pred == y_te[ev]
        start = 0
        for j in range(t + 1):
            n = te_idx[j].size
            correct[t, j] = hit[start:start + n].sum()
            acc[t, j] = correct[t, j] / n
            start += n
    n_test = np.array([i.size for i in te_idx])
    a_step = [float(correct[t, :t + 1].sum() / n_test[:t + 1].sum()) for t in range(T)]
    if T > 1:
        forgetting = float(np.mean([np.max(acc[j:T - 1, j]) - acc[T - 1, j] for j in range(T - 1)]))
    else:
        forgetting = 0.0
    out = {
        "acc_matrix": acc,
        "A_step": a_step,
        "A_last": a_step[-1],
        "A_inc": float(np.mean(a_step)),
        "forgetting": forgetting,
        "n_test": n_test.tolist(),
        "fit_seconds": fit_s,
        "predict_seconds": pred_s,
    }
    if return_model:
        out["model"] = model
    return out
