"""Serial twins of the ``parallel=True`` numba kernels, and the rule that picks one of the two.

numba's on-disk cache is not safe for a ``parallel=True`` kernel (see ``tests/test_numba_cache.py``), so
such a kernel is compiled in every process that calls it: 1-5 CPU-s per kernel, paid again by every CLI
call, script, Dask/Ray worker and notebook kernel. On small inputs the threads save far less than that
(the VoGCAM fit of a 30-point pattern spent 9.4 of its 11 CPU-s compiling three parallel kernels). Each
such kernel whose iterations are independent (every ``prange`` iteration writes its own outputs, no
reduction) therefore has a serial twin: the same Python function compiled without ``parallel`` (numba
runs ``prange`` as ``range`` there) and cached on disk. :func:`pick` returns the parallel kernel only
for inputs of at least ``min_work`` units and when numba runs more than one thread. The two return the
same values bit for bit, as every iteration does the same arithmetic in either.
"""

from __future__ import annotations

import contextlib

import numba

__all__ = ["serial_twin", "pick", "use_parallel", "always_parallel"]

_ALWAYS = [False]


def serial_twin(kernel):
    """The serial, cached twin of the ``parallel=True`` dispatcher ``kernel`` (same Python function).

    Parameters
    ----------
    kernel : numba dispatcher
        A kernel compiled with ``parallel=True`` whose ``prange`` iterations are independent.

    Returns
    -------
    numba dispatcher
        ``numba.njit(cache=True)`` of ``kernel.py_func``.
    """
    if numba.config.DISABLE_JIT:  # NUMBA_DISABLE_JIT=1: the kernels are the Python functions themselves
        return kernel
    if not kernel.targetoptions.get("parallel"):
        raise TypeError(f"'kernel' must be a parallel=True numba kernel; got {kernel.py_func.__qualname__}.")
    return numba.njit(cache=True)(kernel.py_func)


def pick(kernel, twin, work, min_work):
    """``kernel`` (parallel) when ``work >= min_work`` and numba runs more than one thread, else ``twin``.

    Parameters
    ----------
    kernel, twin : numba dispatcher
        A ``parallel=True`` kernel and its :func:`serial_twin`.
    work : int
        The size of the input in the units of ``min_work`` (rows, cells, runs times edges...).
    min_work : int
        The smallest input for which the threads are worth the kernel's compilation in this process.

    Returns
    -------
    numba dispatcher
    """
    return kernel if use_parallel(work, min_work) else twin


def use_parallel(work, min_work):
    """Whether an input of ``work`` units runs the parallel kernel: ``work >= min_work`` and numba runs more than
    one thread, or within :func:`always_parallel` (the rule of :func:`pick`, for callers that choose between
    kernels of their own)."""
    return _ALWAYS[0] or (work >= min_work and numba.get_num_threads() > 1)


@contextlib.contextmanager
def always_parallel():
    """Within the block :func:`pick` returns the parallel kernel at any size (tests and the numba cache
    stress workload use it to reach the parallel kernels on small inputs)."""
    old = _ALWAYS[0]
    _ALWAYS[0] = True
    try:
        yield
    finally:
        _ALWAYS[0] = old
