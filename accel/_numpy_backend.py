"""The backend interface and the numpy backend (see :mod:`accel.backend`)."""

from __future__ import annotations

import numpy as np
from scipy import linalg as _sla
from scipy import special as _special

from theory._checks import check_random_state

from ._lazy import _is_tensor, _to_numpy

__all__ = ["Backend", "NumpyBackend"]


class Backend:
    """Common interface of the array backends (documentation and shared code only).

    Attributes
    ----------
    name : str
        ``"numpy"`` or ``"torch"``.
    device : str or torch.device
        ``"cpu"`` for numpy; the :class:`torch.device` arrays are created on for torch.
    float64, int64, bool : dtype
        The backend's dtypes, for ``dtype=`` arguments.
    """

    name = "base"

    def __repr__(self):
        return f"{type(self).__name__}(device={str(self.device)!r})"

    def __reduce__(self):
        # Unpickle to the cached instance of the receiving process (joblib workers, copies).
        from .backend import _cached_backend  # (the cache lives with get_backend)

        return (_cached_backend, (self.name, str(self.device)))

    def rng(self, seed=None):
        """A :class:`numpy.random.Generator` from ``seed`` (None, int, SeedSequence or Generator).

        Draws always happen in numpy, whatever the backend; move them with :meth:`asarray`.
        """
        return check_random_state(seed, "seed")

    def to_numpy(self, x):
        """Return ``x`` as a numpy array (copied to host memory if it lives on a GPU)."""
        return _to_numpy(x)


class NumpyBackend(Backend):
    """The numpy (and scipy) backend; the reference implementation.

    Obtain it with ``get_backend(np_array)`` or ``get_backend(backend="numpy")``; never instantiate it
    twice (instances are cached).
    """

    name = "numpy"
    float64 = np.float64
    int64 = np.int64
    bool = np.bool_

    def __init__(self):
        self.device = "cpu"

    # ----- creation ------------------------------------------------------------------------------
    def asarray(self, x, dtype=None):
        """Convert ``x`` (numpy, torch tensor, list, scalar) to an ndarray, without copying when possible."""
        if _is_tensor(x):
            x = _to_numpy(x)
        return np.asarray(x, dtype=dtype)

    def _dtype(self, dtype, type_as):
        if dtype is not None:
            return dtype
        if type_as is not None:
            if _is_tensor(type_as):
                return _to_numpy(type_as.reshape(-1)[:0]).dtype
            return np.asarray(type_as).dtype
        return np.float64

    def zeros(self, shape, dtype=None, type_as=None):
        """Array of zeros; dtype from ``dtype``, else ``type_as``'s dtype, else float64."""
        return np.zeros(shape, dtype=self._dtype(dtype, type_as))

    def ones(self, shape, dtype=None, type_as=None):
        """Array of ones; dtype as in :meth:`zeros`."""
        return np.ones(shape, dtype=self._dtype(dtype, type_as))

    def full(self, shape, fill_value, dtype=None, type_as=None):
        """Array filled with ``fill_value``; dtype as in :meth:`zeros`."""
        return np.full(shape, fill_value, dtype=self._dtype(dtype, type_as))

    def empty(self, shape, dtype=None, type_as=None):
        """Uninitialised array; dtype as in :meth:`zeros`."""
        return np.empty(shape, dtype=self._dtype(dtype, type_as))

    def arange(self, start, stop=None, step=1, dtype=None, type_as=None):
        """Evenly spaced values in ``[start, stop)``; int64 for integer arguments, else float64."""
        if dtype is None and type_as is not None:
            dtype = self._dtype(None, type_as)
        if stop is None:
            start, stop = 0, start
        return np.arange(start, stop, step, dtype=dtype)

    # ----- linear algebra ------------------------------------------------------------------------
    def matmul(self, a, b):
        """Matrix product ``a @ b`` (batched over leading axes)."""
        return np.matmul(a, b)

    def solve(self, A, b):
        """Solve ``A x = b``; ``b`` of shape ``(n,)`` is a vector, ``(..., n, k)`` a stack of matrices.

        Raises
        ------
        numpy.linalg.LinAlgError
            If ``A`` is singular.
        """
        return np.linalg.solve(A, b)

    def cholesky(self, A):
        """Lower Cholesky factor ``L`` with ``A = L L^T``.

        Raises
        ------
        numpy.linalg.LinAlgError
            If ``A`` is not positive definite.
        """
        return np.linalg.cholesky(A)

    def solve_triangular(self, A, b, lower=True):
        """Solve ``A x = b`` for triangular 2-d ``A``; ``b`` of shape ``(n,)`` or ``(n, k)``."""
        return _sla.solve_triangular(A, b, lower=lower)

    def einsum(self, subscripts, *operands):
        """Einstein summation, as :func:`numpy.einsum`."""
        return np.einsum(subscripts, *operands)

    # ----- elementwise ---------------------------------------------------------------------------
    def exp(self, x):
        """Elementwise exponential."""
        return np.exp(x)

    def log(self, x):
        """Elementwise natural logarithm."""
        return np.log(x)

    def sqrt(self, x):
        """Elementwise square root."""
        return np.sqrt(x)

    def abs(self, x):
        """Elementwise absolute value."""
        return np.abs(x)

    def isfinite(self, x):
        """Boolean mask of finite entries."""
        return np.isfinite(x)

    def where(self, condition, x, y):
        """``x`` where ``condition`` is true, else ``y`` (broadcasting)."""
        return np.where(condition, x, y)

    def clip(self, x, a_min=None, a_max=None):
        """Clip ``x`` to ``[a_min, a_max]``; either end may be ``None``."""
        return np.clip(x, a_min, a_max)

    def maximum(self, a, b):
        """Elementwise maximum (NaN propagates)."""
        return np.maximum(a, b)

    def minimum(self, a, b):
        """Elementwise minimum (NaN propagates)."""
        return np.minimum(a, b)

    # ----- reductions ----------------------------------------------------------------------------
    def sum(self, x, axis=None, keepdims=False):
        """Sum over ``axis`` (all axes if ``None``)."""
        return np.sum(x, axis=axis, keepdims=keepdims)

    def mean(self, x, axis=None, keepdims=False):
        """Mean over ``axis``; integer input gives float64."""
        return np.mean(x, axis=axis, keepdims=keepdims)

    def max(self, x, axis=None, keepdims=False):
        """Maximum over ``axis``."""
        return np.max(x, axis=axis, keepdims=keepdims)

    def min(self, x, axis=None, keepdims=False):
        """Minimum over ``axis``."""
        return np.min(x, axis=axis, keepdims=keepdims)

    def argmin(self, x, axis=None):
        """Index of the (first) minimum along ``axis``; flat index if ``None``."""
        return np.argmin(x, axis=axis)

    def argmax(self, x, axis=None):
        """Index of the (first) maximum along ``axis``; flat index if ``None``."""
        return np.argmax(x, axis=axis)

    def logsumexp(self, x, axis=None, keepdims=False):
        r"""Stable :math:`\log \sum \exp(x)` over ``axis``."""
        return _special.logsumexp(x, axis=axis, keepdims=keepdims)

    # ----- joining -------------------------------------------------------------------------------
    def stack(self, arrays, axis=0):
        """Stack arrays along a new axis."""
        return np.stack(arrays, axis=axis)

    def concatenate(self, arrays, axis=0):
        """Join arrays along an existing axis."""
        return np.concatenate(arrays, axis=axis)

    # ops used by the continual cores
    def tanh(self, x):
        """Elementwise hyperbolic tangent."""
        return np.tanh(x)

    def flip(self, x, axis):
        """Reverse the order of the entries along ``axis`` (a copy for torch, a view for numpy)."""
        return np.flip(x, axis=axis)

    def cumsum(self, x, axis):
        """Cumulative sum along ``axis``."""
        return np.cumsum(x, axis=axis)

    def astype(self, x, dtype):
        """``x`` converted to ``dtype`` (a copy)."""
        return np.asarray(x).astype(dtype)

    def copy(self, x):
        """A copy of ``x`` that shares no memory with it."""
        return np.array(x, copy=True)

    def addmatmul(self, c, a, b):
        """``c + a @ b`` (batched over leading axes; one fused call on torch)."""
        return c + np.matmul(a, b)

    def lerp(self, a, b, weight):
        """Linear interpolation ``a + weight * (b - a)`` for a float ``weight``."""
        return a + weight * (b - a)

    # ops used by the point_process cores
    def eye(self, n, dtype=None, type_as=None):
        """Identity matrix of size ``n``; dtype as in :meth:`zeros`."""
        return np.eye(n, dtype=self._dtype(dtype, type_as))

    def diagonal(self, x):
        """Diagonal of the last two axes (batched over leading axes), as a new array."""
        return np.diagonal(x, axis1=-2, axis2=-1).copy()

    def cholesky_solve(self, L, b):
        """Solve ``A x = b`` from the lower Cholesky factor ``L`` of ``A``; ``b`` of shape ``(..., n, k)``."""
        if L.ndim == 2:
            return _sla.cho_solve((L, True), b)
        y = np.linalg.solve(L, b)
        return np.linalg.solve(np.swapaxes(L, -1, -2), y)

    def cholesky_inverse(self, L):
        """Inverse ``A^{-1}`` of a 2-d ``A = L L^T`` from its lower Cholesky factor ``L``."""
        return _sla.cho_solve((L, True), np.eye(L.shape[0], dtype=L.dtype))

    def cdist(self, a, b):
        """Euclidean distances between the rows of ``a (..., n, p)`` and ``b (..., m, p)``: ``(..., n, m)``."""
        return np.sqrt(np.sum((a[..., :, None, :] - b[..., None, :, :]) ** 2, axis=-1))

    # ops used by the federated cores
    def swapaxes(self, x, axis1, axis2):
        """``x`` with axes ``axis1`` and ``axis2`` interchanged (a view)."""
        return np.swapaxes(x, axis1, axis2)

    def softmax(self, x, axis):
        r"""Stable softmax :math:`e^{x_i}/\sum_j e^{x_j}` along ``axis``."""
        return _special.softmax(x, axis=axis)

    # ----- ops used by the pomdp cores -----------------------------------------------------------
    def reshape(self, x, shape):
        """``x`` with a new ``shape`` (one entry may be -1); a view when possible."""
        return np.reshape(x, shape)

    def ascontiguousarray(self, x):
        """``x`` in row-major contiguous memory (no copy when it already is)."""
        return np.ascontiguousarray(x)

    def all(self, x):
        """Whether every entry of ``x`` is true (a 0-d boolean array; ``bool()`` of it is the answer)."""
        return np.all(x)

    # ops used by the hetero_regression cores
    def solve_pinv(self, A, b):
        """Solve ``A x = b`` for a stack ``A (..., n, n)`` and vectors ``b (..., n)``; pseudo-inverse where singular.

        A matrix whose LU solve fails (exact zero pivot) or gives a non-finite solution is solved by
        its Moore-Penrose pseudo-inverse instead (the minimum-norm least-squares solution); the others
        are not touched.
        """
        A, b = np.asarray(A), np.asarray(b)
        try:
            x = np.linalg.solve(A, b[..., None])[..., 0]
        except np.linalg.LinAlgError:  # numpy fails the whole stack: solve matrix by matrix
            x = np.full(b.shape, np.nan, dtype=np.result_type(A, b))
            for i in np.ndindex(A.shape[:-2]):
                try:
                    x[i] = np.linalg.solve(A[i], b[i])
                except np.linalg.LinAlgError:
                    pass
        bad = ~np.isfinite(x).all(axis=-1)
        if bad.any():
            x[bad] = (np.linalg.pinv(A[bad]) @ b[bad][..., None])[..., 0]
        return x

    def norm(self, x, axis=None):
        """Euclidean (2-)norm over ``axis`` (all entries if ``None``)."""
        return np.linalg.norm(x, axis=axis) if axis is not None else np.linalg.norm(np.ravel(x))

    def flatnonzero(self, x):
        """int64 indices of the non-zero (true) entries of the flattened ``x``."""
        return np.flatnonzero(x).astype(np.int64, copy=False)
