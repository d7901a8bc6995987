r"""Seeded Monte-Carlo runs and parameter sweeps over joblib.

Every task (a grid point and a repeat, or one Monte-Carlo run) gets its own random stream, a child of
``numpy.random.SeedSequence(random_state)`` obtained with :meth:`~numpy.random.SeedSequence.spawn`. The
stream depends only on ``random_state`` and the task's position, never on which worker runs the task or
when, so results are bit-identical whatever ``n_jobs``, the joblib backend or the order of completion.

Parallelism is joblib's: ``backend="loky"`` (local processes, the default), ``"threading"``,
``"multiprocessing"``, ``"sequential"``, or a cluster engine run through
:func:`joblib.parallel_config`:

* ``backend="dask"``: the tasks go to the workers of a ``dask.distributed`` cluster. Either start a
  client first (``from dask.distributed import Client; client = Client("tcp://host:8786")``, or
  ``Client(LocalCluster(...))``), or pass ``scheduler="tcp://host:8786"`` and a client is opened for
  the call and closed after it;
* ``backend="ray"``: the tasks become Ray tasks. Either call ``ray.init(...)`` first, or pass
  ``scheduler="ray://host:10001"`` / ``"auto"`` / ``"local"`` and Ray is started for the call and shut
  down after it.

Both need the ``scale`` extra (``pip install "algos-theory[scale]"``: ``dask[distributed]`` and
``ray``). Without the engine, or without a running client and no ``scheduler``, the call raises
before any task runs, saying what to do. With an engine, ``n_jobs=1`` (the default) means every
worker of the cluster (``-1``). ``backend=None`` uses whatever an enclosing
``joblib.parallel_config(...)`` block sets. ``func`` and its arguments must be picklable for process and
cluster backends (functions defined in a module or a test file are; lambdas work with loky, dask and
ray, which use cloudpickle); the workers must be able to import the modules ``func`` needs.

Examples
--------
>>> def noisy_square(x, random_state):
...     return {"y": x**2 + random_state.normal(scale=0.0)}
>>> records = run_sweep(noisy_square, {"x": [1, 2]}, n_repeats=2, random_state=0)
>>> [(r["x"], r["repeat"], r["y"]) for r in records]
[(1, 0, 1.0), (1, 1, 1.0), (2, 0, 4.0), (2, 1, 4.0)]
>>> values = monte_carlo(lambda random_state: random_state.random(), n_runs=4, random_state=0)
>>> values.shape
(4,)
>>> summarize([1.0, 2.0, 3.0, 4.0])
{'mean': 2.5, 'se': 0.6454972243679028, 'n': 4}
"""

from __future__ import annotations

import contextlib
import itertools
import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from algos._engines import check_scheduler, dask_client, ray_session
from algos._validation import (
    check_finite,
    check_option,
    check_random_state,
    check_scalar_int,
)

__all__ = ["run_sweep", "monte_carlo", "summarize"]

_RESERVED = ("random_state", "repeat")
ENGINES = ("dask", "ray")


# --------------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------------
def _check_func(func):
    if not callable(func):
        raise TypeError(f"'func' must be callable; got {func!r} of type {type(func).__name__}.")
    return func


def _check_n_jobs(n_jobs):
    if n_jobs is None:
        return None
    if isinstance(n_jobs, (bool, np.bool_)) or not isinstance(n_jobs, numbers.Integral):
        raise TypeError(
            f"'n_jobs' must be None or a non-zero int; got {n_jobs!r} of type {type(n_jobs).__name__}."
        )
    if n_jobs == 0:
        raise ValueError("'n_jobs' must be None or a non-zero int (-1 for all cores); got 0.")
    return int(n_jobs)


def _check_param_name(name, where):
    if not isinstance(name, str):
        raise TypeError(f"'grid' keys must be parameter names (str); got {name!r} of type "
                        f"{type(name).__name__}{where}.")
    if name in _RESERVED:
        raise ValueError(f"'grid' must not use the reserved name {name!r}{where}; "
                         f"reserved: {', '.join(repr(r) for r in _RESERVED)}.")


def _expand_grid(grid):
    """The list of points (dicts) of ``grid``, in a deterministic order."""
    if isinstance(grid, Mapping):
        names, value_lists = [], []
        for name, values in grid.items():
            _check_param_name(name, "")
            if isinstance(values, np.ndarray):
                values = list(values) if values.ndim >= 1 else values
            if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, (Sequence, range, list)):
                raise TypeError(
                    f"'grid' values must be lists of values; got {values!r} of type "
                    f"{type(values).__name__} for {name!r}. Wrap a single value in a list: [{values!r}]."
                )
            if len(values) == 0:
                raise ValueError(f"'grid' values must be non-empty lists; got an empty list for {name!r}.")
            names.append(name)
            value_lists.append(list(values))
        return [dict(zip(names, combo)) for combo in itertools.product(*value_lists)]
    if isinstance(grid, Sequence) and not isinstance(grid, (str, bytes)):
        if len(grid) == 0:
            raise ValueError("'grid' must hold at least one point; got an empty list.")
        points = []
        for i, point in enumerate(grid):
            if not isinstance(point, Mapping):
                raise TypeError(
                    "'grid' must be a dict of lists or a list of dicts; got an element of type "
                    f"{type(point).__name__} at position {i}."
                )
            for name in point:
                _check_param_name(name, f" in point {i}")
            points.append(dict(point))
        return points
    raise TypeError(f"'grid' must be a dict of lists or a list of dicts; got {type(grid).__name__}.")


def _root_sequence(random_state):
    """The SeedSequence whose children seed the tasks (same rule as ``spawn_generators``)."""
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, np.random.Generator):
        seq = random_state.bit_generator.seed_seq
        if not isinstance(seq, np.random.SeedSequence):
            raise ValueError(
                "'random_state' must be a Generator built from a SeedSequence (e.g. "
                "numpy.random.default_rng(seed)); got one with legacy seeding."
            )
        return seq.spawn(1)[0]
    return check_random_state(random_state).bit_generator.seed_seq


def _make_parallel(n_jobs, backend):
    """A joblib ``Parallel`` returning results in order, as a generator when the backend can."""
    from joblib import Parallel
    from joblib.parallel import ParallelBackendBase

    if backend is not None and not isinstance(backend, (str, ParallelBackendBase)):
        raise TypeError(
            "'backend' must be None, a joblib backend name (str) or a ParallelBackendBase; "
            f"got {backend!r} of type {type(backend).__name__}."
        )
    kwargs = {"n_jobs": n_jobs, "backend": backend}
    try:
        try:
            return Parallel(return_as="generator", **kwargs), True
        except ValueError as exc:
            if "does not support return_as" not in str(exc):
                raise
            return Parallel(return_as="list", **kwargs), False  # multiprocessing, ray
    except ValueError as exc:
        if "Invalid backend" not in str(exc):
            raise
        from joblib.parallel import BACKENDS

        options = sorted(set(BACKENDS) | set(ENGINES))
        raise ValueError(f"'backend' must be one of {{{', '.join(repr(o) for o in options)}}}; "
                         f"got {backend!r}.") from exc


def _check_scheduler(scheduler, backend):
    return check_scheduler(scheduler, backend, "backend")


@contextlib.contextmanager
def _dask_config(n_jobs, scheduler):
    from joblib import parallel_config

    with dask_client(scheduler, "backend='dask'") as client, \
            parallel_config(backend="dask", n_jobs=n_jobs, client=client):
        yield


@contextlib.contextmanager
def _ray_config(n_jobs, scheduler):
    with ray_session(scheduler, "backend='ray'"):
        from joblib import parallel_config
        from ray.util.joblib import register_ray

        register_ray()
        with parallel_config(backend="ray", n_jobs=n_jobs):
            yield


def _engine(backend, n_jobs, scheduler):
    """``(context, backend, n_jobs)`` for :func:`_run_tasks`: a ``parallel_config`` block for dask/ray."""
    scheduler = _check_scheduler(scheduler, backend)
    if backend not in ENGINES:
        return contextlib.nullcontext(), backend, n_jobs
    n_jobs = -1 if n_jobs in (None, 1) else n_jobs
    config = _dask_config if backend == "dask" else _ray_config
    return config(n_jobs, scheduler), None, n_jobs


def _run_tasks(call_args, n_jobs, backend, verbose, desc, scheduler=None):
    """Run ``_call(*args)`` for each tuple in ``call_args``; results in input order."""
    from joblib import delayed
    from tqdm import tqdm

    context, backend, n_jobs = _engine(backend, n_jobs, scheduler)
    with context, tqdm(total=len(call_args), desc=desc, disable=verbose < 1) as bar:
        parallel, streaming = _make_parallel(n_jobs, backend)
        results = []
        for out in parallel(delayed(_call)(*args) for args in call_args):
            results.append(out)
            if streaming:
                bar.update(1)
        if not streaming:
            bar.update(len(call_args))
    return results


def _call(func, params, seed_seq):
    """One task: ``func(**params, random_state=default_rng(seed_seq))`` (runs in a worker)."""
    return func(**params, random_state=np.random.default_rng(seed_seq))


# --------------------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------------------
def run_sweep(
    func,
    grid,
    n_repeats=1,
    random_state=None,
    n_jobs=1,
    backend="loky",
    verbose=0,
    return_as="records",
    scheduler=None,
):
    r"""Run ``func`` on every point of a parameter grid, ``n_repeats`` times each, with seeded streams.

    For grid point :math:`p` and repeat :math:`r` the call is
    ``func(**point_p, random_state=numpy.random.default_rng(s_pr))`` with
    :math:`s_{pr}` = ``SeedSequence(random_state).spawn(n_points)[p].spawn(n_repeats)[r]``. The streams are
    independent, and each depends only on ``(random_state, p, r)``: results are bit-identical for any
    ``n_jobs`` and ``backend``, and adding repeats or appending grid points leaves the earlier records
    unchanged.

    Parameters
    ----------
    func : callable
        Called with the point's parameters as keyword arguments and a ``random_state`` keyword holding a
        :class:`numpy.random.Generator`. It may return a dict (its keys are merged into the record) or
        anything else (stored under ``"value"``).
    grid : dict of str to list, or list of dict
        A dict ``{name: [values, ...]}`` means the cartesian product, in the order of nested loops over the
        keys in insertion order (the last key varies fastest); ``{}`` is one point with no parameters. A
        list of dicts lists the points explicitly, used as they are. ``"random_state"`` and ``"repeat"``
        are reserved names.
    n_repeats : int, default=1
        Number of independent repeats of each point.
    random_state : None, int, SeedSequence or numpy.random.Generator, default=None
        Root of the seeds. An int gives the same records on every call. A SeedSequence or Generator is
        advanced (numpy's ``spawn`` semantics), so two calls with the same object give fresh,
        independent streams. ``None`` draws fresh entropy.
    n_jobs : int or None, default=1
        Number of parallel jobs (``-1``: all cores; ``None``: joblib's default or an enclosing
        ``joblib.parallel_config``).
    backend : str, joblib ParallelBackendBase or None, default="loky"
        joblib backend: ``"loky"``, ``"threading"``, ``"multiprocessing"``, ``"sequential"``, or a
        cluster engine, ``"dask"`` (a running ``dask.distributed.Client`` or ``scheduler``) or ``"ray"``
        (after ``ray.init()`` or with ``scheduler``), run through ``joblib.parallel_config``.
        ``None`` uses the enclosing ``joblib.parallel_config``.
    verbose : int, default=0
        ``>= 1`` shows a tqdm progress bar.
    return_as : {"records", "columns"}, default="records"
        ``"records"``: a list of dicts, one per (point, repeat), in grid order then repeat order.
        ``"columns"``: a dict of lists (one per key), ready for ``pandas.DataFrame(...)``.
    scheduler : str or None, default=None
        Only with ``backend="dask"`` or ``"ray"``: the address of the cluster to use for this call
        (dask: ``"tcp://host:8786"``; ray: ``"ray://host:10001"``, ``"auto"`` or ``"local"``). The client
        (dask) or the Ray session is opened for the call and closed after it. ``None``: use the running
        client / Ray session.

    Returns
    -------
    list of dict or dict of list
        Each record holds the point's parameters, ``"repeat"`` (0-based), then ``func``'s output.

    Raises
    ------
    TypeError
        If ``func`` is not callable, ``grid`` is not a dict of lists / list of dicts, or an argument has a
        wrong type.
    ValueError
        If ``grid`` is empty or uses a reserved name, an argument is out of range, the joblib backend is
        unknown, ``backend="dask"`` finds no client (or no scheduler at ``scheduler``), ``backend="ray"``
        finds Ray not started and no ``scheduler``, or ``func`` returns a key that clashes with a
        parameter or ``"repeat"``.
    ImportError
        If ``backend`` is ``"dask"`` or ``"ray"`` and that engine is not installed (the ``scale`` extra).

    See Also
    --------
    monte_carlo : repeated runs of one function, no grid.
    algos._validation.spawn_generators : the seeding rule.

    Examples
    --------
    >>> def draw(n, random_state):
    ...     return float(random_state.normal(size=n).mean())
    >>> recs = run_sweep(draw, {"n": [10, 1000]}, n_repeats=3, random_state=42)
    >>> len(recs), sorted(recs[0])
    (6, ['n', 'repeat', 'value'])
    >>> recs == run_sweep(draw, {"n": [10, 1000]}, n_repeats=3, random_state=42, backend="threading", n_jobs=2)
    True
    """
    _check_func(func)
    points = _expand_grid(grid)
    n_repeats = check_scalar_int(n_repeats, "n_repeats", low=1)
    n_jobs = _check_n_jobs(n_jobs)
    verbose = check_scalar_int(verbose, "verbose", low=0)
    return_as = check_option(return_as, "return_as", ("records", "columns"))
    root = _root_sequence(random_state)

    call_args, keys = [], []
    for p, point_seq in enumerate(root.spawn(len(points))):
        for r, seq in enumerate(point_seq.spawn(n_repeats)):
            call_args.append((func, points[p], seq))
            keys.append((p, r))
    outputs = _run_tasks(call_args, n_jobs, backend, verbose, desc="sweep", scheduler=scheduler)

    records = []
    for (p, r), out in zip(keys, outputs):
        rec = dict(points[p])
        rec["repeat"] = r
        extra = out if isinstance(out, Mapping) else {"value": out}
        for k, v in extra.items():
            if k in rec:
                raise ValueError(
                    f"'func' returned the key {k!r}, which clashes with a grid parameter or 'repeat'; "
                    "rename it in func's output."
                )
            rec[k] = v
        records.append(rec)
    if return_as == "records":
        return records
    columns = {}
    for rec in records:
        for k in rec:
            columns.setdefault(k, [])
    for rec in records:
        for k in columns:
            columns[k].append(rec.get(k))
    return columns


def monte_carlo(func, n_runs, random_state=None, n_jobs=1, backend="loky", verbose=0, scheduler=None):
    r"""Run ``func(random_state=generator)`` ``n_runs`` times with independent seeded generators.

    Run :math:`i` receives ``numpy.random.default_rng(SeedSequence(random_state).spawn(n_runs)[i])``, i.e.
    the :math:`i`-th generator of :func:`algos._validation.spawn_generators` ``(random_state, n_runs)``
    (for an int ``random_state``): results are bit-identical for any ``n_jobs`` and ``backend``.

    Parameters
    ----------
    func : callable
        Called as ``func(random_state=generator)``; use :func:`functools.partial` to fix other arguments.
    n_runs : int
        Number of runs (>= 1).
    random_state : None, int, SeedSequence or numpy.random.Generator, default=None
        Root of the seeds (see :func:`run_sweep`).
    n_jobs : int or None, default=1
        Number of parallel jobs (see :func:`run_sweep`).
    backend : str, joblib ParallelBackendBase or None, default="loky"
        joblib backend (see :func:`run_sweep` for dask and ray).
    verbose : int, default=0
        ``>= 1`` shows a tqdm progress bar.
    scheduler : str or None, default=None
        The dask or ray cluster address for this call (see :func:`run_sweep`).

    Returns
    -------
    ndarray or list
        An ndarray of shape ``(n_runs, ...)`` when every run returns a real number (or bool) or a numeric
        array of one common shape; otherwise the list of the ``n_runs`` results, in run order.

    Raises
    ------
    TypeError, ValueError
        For a non-callable ``func`` or bad ``n_runs``, ``n_jobs``, ``backend``, ``verbose``, ``scheduler``;
        for dask/ray without a running client or session (see :func:`run_sweep`).
    ImportError
        For ``backend="dask"`` / ``"ray"`` when the engine is not installed.

    Examples
    --------
    >>> x = monte_carlo(lambda random_state: random_state.normal(size=2), n_runs=3, random_state=1)
    >>> x.shape
    (3, 2)
    """
    _check_func(func)
    n_runs = check_scalar_int(n_runs, "n_runs", low=1)
    n_jobs = _check_n_jobs(n_jobs)
    verbose = check_scalar_int(verbose, "verbose", low=0)
    seqs = _root_sequence(random_state).spawn(n_runs)
    results = _run_tasks([(func, {}, s) for s in seqs], n_jobs, backend, verbose, desc="monte_carlo",
                         scheduler=scheduler)
    return _maybe_stack(results)


def _maybe_stack(results):
    def numeric(x):
        if isinstance(x, (numbers.Real, np.bool_, bool)):
            return True
        return isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind in "biuf"

    if all(numeric(x) for x in results):
        shapes = {np.shape(x) for x in results}
        if len(shapes) == 1:
            return np.asarray(results)
    return results


def summarize(values, axis=0):
    r"""Monte-Carlo mean and its standard error along ``axis``.

    :math:`\bar x = \frac1n \sum_i x_i` and :math:`\mathrm{SE} = s / \sqrt n` with the unbiased
    sample standard deviation :math:`s` (``ddof=1``).

    Parameters
    ----------
    values : array-like of real numbers
        Finite values; at least two along ``axis``.
    axis : int or None, default=0
        Axis of the runs; ``None`` pools all values.

    Returns
    -------
    dict
        ``{"mean": ..., "se": ..., "n": n}``; mean and se are floats for 1-d input (or ``axis=None``),
        arrays otherwise; ``n`` is an int.

    Raises
    ------
    TypeError
        If ``values`` is not numeric or ``axis`` is not an int or None.
    ValueError
        If ``values`` holds NaN or inf, fewer than two values along ``axis``, or ``axis`` is out of range.

    Examples
    --------
    >>> summarize([[1.0, 10.0], [3.0, 30.0]])
    {'mean': array([ 2., 20.]), 'se': array([ 1., 10.]), 'n': 2}
    """
    try:
        arr = np.asarray(values)
    except ValueError as exc:  # ragged
        raise TypeError(f"'values' must be an array of real numbers; got a ragged {type(values).__name__}.") from exc
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"'values' must contain real numbers; got an array of dtype {arr.dtype}.")
    arr = check_finite(arr.astype(np.float64), "values")
    if axis is None:
        arr, axis = arr.reshape(-1), 0
    elif arr.ndim == 0:
        raise ValueError("'values' must have at least 1 dimension; got a scalar.")
    else:
        axis = check_scalar_int(axis, "axis", low=-arr.ndim, high=arr.ndim - 1)
    n = arr.shape[axis]
    if n < 2:
        raise ValueError(
            f"'values' must hold at least 2 values along axis {axis} to estimate a standard error; got {n}."
        )
    mean = arr.mean(axis=axis)
    se = arr.std(axis=axis, ddof=1) / np.sqrt(n)
    if mean.ndim == 0:
        mean, se = float(mean), float(se)
    return {"mean": mean, "se": se, "n": int(n)}
