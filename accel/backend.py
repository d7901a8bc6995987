r"""Array backends: one numpy-like API over numpy and torch, chosen by the arrays' type.

The heavy cores of the package are written once against a small backend object ``nx`` (``nx.zeros``,
``nx.matmul``, ``nx.solve``, ``nx.cholesky``, ``nx.exp``, ...), in the style of POT's ``ot.backend``.
:func:`get_backend` picks :class:`NumpyBackend` for numpy input and :class:`TorchBackend` for torch
tensors, or the one an estimator's ``backend`` parameter names.

torch is an optional extra (``pip install "algos-theory[gpu]" -c constraints.txt``). This module never imports
it at import time: torch is imported only when a :class:`TorchBackend` is created, and tensors are
recognised through ``sys.modules`` (an object can only be a tensor if torch has already been imported).

Conventions shared by both backends:

* Floating defaults are float64 everywhere (torch's own default, float32, is never used implicitly), so
  the torch path agrees with the numpy path to round-off.
* ``axis`` means numpy's ``axis`` (torch's ``dim``); ``None`` reduces over all axes.
* Random draws always happen in numpy (:meth:`NumpyBackend.rng` returns a :class:`numpy.random.Generator`)
  and are moved with ``asarray``, so a seed gives the same numbers on every backend and device.
* Linear-algebra failures (a singular or non positive-definite matrix) raise
  :class:`numpy.linalg.LinAlgError` on both backends.

Examples
--------
>>> import numpy as np
>>> from accel import get_backend
>>> nx = get_backend(np.eye(2))
>>> nx.name
'numpy'
>>> nx is get_backend(np.ones(3))
True
>>> nx.to_numpy(nx.solve(nx.asarray([[2.0, 0.0], [0.0, 4.0]]), nx.ones(2)))
array([0.5 , 0.25])
"""

from __future__ import annotations

import importlib.util
import sys
import threading

import numpy as np
from scipy import linalg as _sla
from scipy import special as _special

from theory._checks import check_option, check_random_state

__all__ = [
    "Backend",
    "NumpyBackend",
    "TorchBackend",
    "get_backend",
    "available_backends",
    "cuda_available",
    "resolve",
    "require_torch",
    "torch_device",
]

#: Shown whenever torch is needed but missing.
TORCH_INSTALL_HINT = 'pip install "algos-theory[gpu]" -c constraints.txt'

_BACKEND_OPTIONS = ("auto", "numpy", "torch")

#: What an estimator's ``backend`` parameter accepts: ``"numba"`` is an older spelling of ``"numpy"``.
RESOLVE_OPTIONS = ("auto", "numpy", "torch", "numba")
_CACHE: dict = {}
_CACHE_LOCK = threading.Lock()


# --------------------------------------------------------------------------------------------------
# helpers that never import torch
# --------------------------------------------------------------------------------------------------
def _torch_if_imported():
    """Return the torch module if it has already been imported, else ``None`` (never imports it)."""
    mod = sys.modules.get("torch")
    return mod if mod is not None and hasattr(mod, "Tensor") else None


def _is_tensor(x):
    """True if ``x`` is a ``torch.Tensor`` (or a subclass); never imports torch.

    An object can only be a tensor once torch has been imported, so ``sys.modules`` is enough.
    """
    torch = _torch_if_imported()
    return torch is not None and isinstance(x, torch.Tensor)


def _is_torch_device(x):
    torch = _torch_if_imported()
    return torch is not None and isinstance(x, torch.device)


def _import_torch():
    """Import torch, or raise ``ImportError`` with the install hint."""
    try:
        import torch
    except ImportError as exc:
        raise ImportError(
            f"The torch backend needs PyTorch, which is not installed. Install it with: {TORCH_INSTALL_HINT}"
        ) from exc
    return torch


def _to_numpy(x):
    """Any array-like (numpy, torch on any device, list, scalar) as a numpy array."""
    if _is_tensor(x):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _kind_of(x):
    """'torch', 'numpy' or None (neutral: Python scalars, lists, None) for one argument of get_backend."""
    if x is None or isinstance(x, (bool, int, float, complex, list, tuple)):
        return None
    if _is_tensor(x):
        return "torch"
    if isinstance(x, (np.ndarray, np.generic)) or hasattr(x, "__array__") or hasattr(x, "__array_interface__"):
        return "numpy"
    raise TypeError(
        "get_backend() accepts numpy arrays and torch tensors (and Python scalars or lists); "
        f"got {type(x).__module__}.{type(x).__qualname__}."
    )


def available_backends():
    """Names of the backends that can be used here.

    Returns
    -------
    list of str
        ``["numpy"]``, plus ``"torch"`` when PyTorch is installed. torch is not imported.

    Examples
    --------
    >>> "numpy" in available_backends()
    True
    """
    names = ["numpy"]
    if _torch_if_imported() is not None or importlib.util.find_spec("torch") is not None:
        names.append("torch")
    return names


def cuda_available():
    """Whether a CUDA device can be used through torch.

    Returns
    -------
    bool
        ``False`` when torch is not installed (checked without importing it); otherwise
        ``torch.cuda.is_available()``, which imports torch.
    """
    if "torch" not in available_backends():
        return False
    try:
        import torch
    except ImportError:  # installed but broken
        return False
    return bool(torch.cuda.is_available())


# --------------------------------------------------------------------------------------------------
# backends
# --------------------------------------------------------------------------------------------------
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


class TorchBackend(Backend):
    """The torch backend, on one device (CPU or CUDA).

    Obtain it with ``get_backend(tensor)`` or ``get_backend(backend="torch", device=...)``; instances
    are cached, one per device. Results agree with :class:`NumpyBackend` to float64 round-off
    (``rtol=1e-10`` in the tests), with two documented differences: ``solve_triangular`` also
    accepts batches, and Python scalars mixed with integer tensors follow torch's promotion rules.

    Parameters
    ----------
    device : torch.device
        A normalised device (``cpu`` or ``cuda:<index>``).
    """

    name = "torch"

    def __init__(self, device):
        torch = _import_torch()
        self._torch = torch
        self.device = device
        self.float64 = torch.float64
        self.int64 = torch.int64
        self.bool = torch.bool

    # ----- helpers -------------------------------------------------------------------------------
    def _torch_dtype(self, dtype):
        """Map a torch dtype, numpy dtype or Python type to a torch dtype."""
        torch = self._torch
        if dtype is None or isinstance(dtype, torch.dtype):
            return dtype
        return torch.from_numpy(np.empty(0, dtype=np.dtype(dtype))).dtype

    def _t(self, x):
        """Tensor as is; anything else through :meth:`asarray` (float64 for Python floats)."""
        return x if _is_tensor(x) else self.asarray(x)

    def _like(self, dtype, type_as):
        dtype = self._torch_dtype(dtype)
        device = self.device
        if type_as is not None:
            if _is_tensor(type_as):
                device = type_as.device
                dtype = type_as.dtype if dtype is None else dtype
            elif dtype is None:
                dtype = self._torch_dtype(np.asarray(type_as).dtype)
        return (self.float64 if dtype is None else dtype), device

    def _linalg_error(self, exc):
        return np.linalg.LinAlgError(str(exc))

    # ----- creation ------------------------------------------------------------------------------
    def asarray(self, x, dtype=None):
        """Convert ``x`` to a tensor on this backend's device, without copying when possible.

        Non-tensor input goes through :func:`numpy.asarray` first, so Python floats become float64
        (not torch's default float32) and integers int64.
        """
        torch = self._torch
        dtype = self._torch_dtype(dtype)
        if _is_tensor(x):
            return x.to(device=self.device, dtype=dtype) if dtype is not None else x.to(self.device)
        arr = np.asarray(x)
        if arr.dtype.kind in "OUSV":
            raise TypeError(f"cannot convert an array of dtype {arr.dtype} to a torch tensor.")
        if not arr.flags.writeable or not arr.flags.c_contiguous or arr.dtype.byteorder not in "=|":
            arr = np.array(arr, dtype=arr.dtype.newbyteorder("="), order="C", copy=True)
        return torch.as_tensor(arr, dtype=dtype, device=self.device)

    def zeros(self, shape, dtype=None, type_as=None):
        """Tensor of zeros; dtype from ``dtype``, else ``type_as``'s, else float64; device of ``type_as``
        when it is a tensor, else this backend's."""
        dtype, device = self._like(dtype, type_as)
        return self._torch.zeros(shape, dtype=dtype, device=device)

    def ones(self, shape, dtype=None, type_as=None):
        """Tensor of ones; dtype and device as in :meth:`zeros`."""
        dtype, device = self._like(dtype, type_as)
        return self._torch.ones(shape, dtype=dtype, device=device)

    def full(self, shape, fill_value, dtype=None, type_as=None):
        """Tensor filled with ``fill_value``; dtype and device as in :meth:`zeros`."""
        dtype, device = self._like(dtype, type_as)
        if isinstance(shape, int):
            shape = (shape,)
        return self._torch.full(shape, fill_value, dtype=dtype, device=device)

    def empty(self, shape, dtype=None, type_as=None):
        """Uninitialised tensor; dtype and device as in :meth:`zeros`."""
        dtype, device = self._like(dtype, type_as)
        return self._torch.empty(shape, dtype=dtype, device=device)

    def arange(self, start, stop=None, step=1, dtype=None, type_as=None):
        """Evenly spaced values in ``[start, stop)``; int64 for integer arguments, else float64."""
        if stop is None:
            start, stop = 0, start
        if dtype is None and type_as is None:
            dtype = self._torch_dtype(np.result_type(start, stop, step))
        dtype, device = self._like(dtype, type_as)
        return self._torch.arange(start, stop, step, dtype=dtype, device=device)

    # ----- linear algebra ------------------------------------------------------------------------
    def matmul(self, a, b):
        """Matrix product ``a @ b`` (batched over leading axes)."""
        return self._torch.matmul(self._t(a), self._t(b))

    def solve(self, A, b):
        """Solve ``A x = b`` with numpy's shape rules: ``b`` of shape ``(n,)`` is a vector,
        ``(..., n, k)`` a stack of matrices.

        Raises
        ------
        numpy.linalg.LinAlgError
            If ``A`` is singular.
        """
        torch = self._torch
        A, b = self._t(A), self._t(b)
        try:
            if b.ndim == 1:
                return torch.linalg.solve(A, b.unsqueeze(-1)).squeeze(-1)
            if b.ndim == A.ndim - 1:  # torch would read this as a batch of vectors; numpy as a matrix
                b = b.unsqueeze(0)
            return torch.linalg.solve(A, b)
        except torch.linalg.LinAlgError as exc:
            raise self._linalg_error(exc) from exc

    def cholesky(self, A):
        """Lower Cholesky factor ``L`` with ``A = L L^T``.

        Raises
        ------
        numpy.linalg.LinAlgError
            If ``A`` is not positive definite.
        """
        torch = self._torch
        try:
            return torch.linalg.cholesky(self._t(A))
        except torch.linalg.LinAlgError as exc:
            raise self._linalg_error(exc) from exc

    def solve_triangular(self, A, b, lower=True):
        """Solve ``A x = b`` for triangular ``A``; ``b`` of shape ``(n,)`` or ``(n, k)``."""
        A, b = self._t(A), self._t(b)
        if b.ndim == 1:
            return self._torch.linalg.solve_triangular(A, b.unsqueeze(-1), upper=not lower).squeeze(-1)
        return self._torch.linalg.solve_triangular(A, b, upper=not lower)

    def einsum(self, subscripts, *operands):
        """Einstein summation, as :func:`torch.einsum`."""
        return self._torch.einsum(subscripts, *[self._t(o) for o in operands])

    # ----- elementwise ---------------------------------------------------------------------------
    def exp(self, x):
        """Elementwise exponential."""
        return self._torch.exp(self._t(x))

    def log(self, x):
        """Elementwise natural logarithm."""
        return self._torch.log(self._t(x))

    def sqrt(self, x):
        """Elementwise square root."""
        return self._torch.sqrt(self._t(x))

    def abs(self, x):
        """Elementwise absolute value."""
        return self._torch.abs(self._t(x))

    def isfinite(self, x):
        """Boolean mask of finite entries."""
        return self._torch.isfinite(self._t(x))

    def where(self, condition, x, y):
        """``x`` where ``condition`` is true, else ``y`` (broadcasting; scalars allowed)."""
        condition = self._t(condition)
        if not _is_tensor(x) and not _is_tensor(y):
            x, y = self.asarray(x), self.asarray(y)
        return self._torch.where(condition.to(self.bool), x, y)

    def clip(self, x, a_min=None, a_max=None):
        """Clip ``x`` to ``[a_min, a_max]``; either end may be ``None``."""
        return self._torch.clamp(self._t(x), min=a_min, max=a_max)

    def maximum(self, a, b):
        """Elementwise maximum (NaN propagates)."""
        a, b = self._t(a), self._t(b)
        return self._torch.maximum(a, b.to(a.device))

    def minimum(self, a, b):
        """Elementwise minimum (NaN propagates)."""
        a, b = self._t(a), self._t(b)
        return self._torch.minimum(a, b.to(a.device))

    # ----- reductions ----------------------------------------------------------------------------
    @staticmethod
    def _dim(x, axis):
        return tuple(range(x.ndim)) if axis is None else axis

    def sum(self, x, axis=None, keepdims=False):
        """Sum over ``axis`` (all axes if ``None``)."""
        x = self._t(x)
        return self._torch.sum(x, dim=self._dim(x, axis), keepdim=keepdims)

    def mean(self, x, axis=None, keepdims=False):
        """Mean over ``axis``; integer or boolean input gives float64."""
        x = self._t(x)
        if not (x.is_floating_point() or x.is_complex()):
            x = x.to(self.float64)
        return self._torch.mean(x, dim=self._dim(x, axis), keepdim=keepdims)

    def max(self, x, axis=None, keepdims=False):
        """Maximum over ``axis``."""
        x = self._t(x)
        return self._torch.amax(x, dim=self._dim(x, axis), keepdim=keepdims)

    def min(self, x, axis=None, keepdims=False):
        """Minimum over ``axis``."""
        x = self._t(x)
        return self._torch.amin(x, dim=self._dim(x, axis), keepdim=keepdims)

    def argmin(self, x, axis=None):
        """Index of the (first) minimum along ``axis``; flat index if ``None``."""
        return self._torch.argmin(self._t(x), dim=axis)

    def argmax(self, x, axis=None):
        """Index of the (first) maximum along ``axis``; flat index if ``None``."""
        return self._torch.argmax(self._t(x), dim=axis)

    def logsumexp(self, x, axis=None, keepdims=False):
        r"""Stable :math:`\log \sum \exp(x)` over ``axis``."""
        x = self._t(x)
        return self._torch.logsumexp(x, dim=self._dim(x, axis), keepdim=keepdims)

    # ----- joining -------------------------------------------------------------------------------
    def stack(self, arrays, axis=0):
        """Stack tensors along a new axis."""
        return self._torch.stack([self._t(a) for a in arrays], dim=axis)

    def concatenate(self, arrays, axis=0):
        """Join tensors along an existing axis."""
        return self._torch.cat([self._t(a) for a in arrays], dim=axis)

    # ops used by the continual cores
    def tanh(self, x):
        """Elementwise hyperbolic tangent."""
        return self._torch.tanh(self._t(x))

    def flip(self, x, axis):
        """Reverse the order of the entries along ``axis`` (a copy for torch, a view for numpy)."""
        return self._torch.flip(self._t(x), dims=(axis,))

    def cumsum(self, x, axis):
        """Cumulative sum along ``axis``."""
        return self._torch.cumsum(self._t(x), dim=axis)

    def astype(self, x, dtype):
        """``x`` converted to ``dtype`` (a copy)."""
        return self._t(x).to(dtype=self._torch_dtype(dtype), copy=True)

    def copy(self, x):
        """A copy of ``x`` that shares no memory with it."""
        return self._t(x).clone()

    def addmatmul(self, c, a, b):
        """``c + a @ b`` (batched over leading axes; one fused call on torch)."""
        c, a, b = self._t(c), self._t(a), self._t(b)
        if a.ndim == 3 and b.ndim == 3 and c.ndim == 3:
            return self._torch.baddbmm(c, a, b)
        if a.ndim == 2 and b.ndim == 2:
            return self._torch.addmm(c, a, b)
        return c + self._torch.matmul(a, b)

    def lerp(self, a, b, weight):
        """Linear interpolation ``a + weight * (b - a)`` for a float ``weight``."""
        return self._torch.lerp(self._t(a), self._t(b), float(weight))

    # ops used by the point_process cores
    def eye(self, n, dtype=None, type_as=None):
        """Identity matrix of size ``n``; dtype and device as in :meth:`zeros`."""
        dtype, device = self._like(dtype, type_as)
        return self._torch.eye(n, dtype=dtype, device=device)

    def diagonal(self, x):
        """Diagonal of the last two axes (batched over leading axes), as a new tensor."""
        return self._torch.diagonal(self._t(x), dim1=-2, dim2=-1).clone()

    def cholesky_solve(self, L, b):
        """Solve ``A x = b`` from the lower Cholesky factor ``L`` of ``A``; ``b`` of shape ``(..., n, k)``."""
        return self._torch.cholesky_solve(self._t(b), self._t(L))

    def cholesky_inverse(self, L):
        """Inverse ``A^{-1}`` of a 2-d ``A = L L^T`` from its lower Cholesky factor ``L``."""
        return self._torch.cholesky_inverse(self._t(L))

    def cdist(self, a, b):
        """Euclidean distances between the rows of ``a (..., n, p)`` and ``b (..., m, p)``: ``(..., n, m)``."""
        return self._torch.cdist(self._t(a), self._t(b), compute_mode="donot_use_mm_for_euclid_dist")

    # ops used by the federated cores
    def swapaxes(self, x, axis1, axis2):
        """``x`` with axes ``axis1`` and ``axis2`` interchanged (a view)."""
        return self._torch.transpose(self._t(x), axis1, axis2)

    def softmax(self, x, axis):
        r"""Stable softmax :math:`e^{x_i}/\sum_j e^{x_j}` along ``axis``."""
        return self._torch.softmax(self._t(x), dim=axis)

    # ----- ops used by the pomdp cores -----------------------------------------------------------
    def reshape(self, x, shape):
        """``x`` with a new ``shape`` (one entry may be -1); a view when possible."""
        return self._torch.reshape(self._t(x), shape)

    def ascontiguousarray(self, x):
        """``x`` in row-major contiguous memory (no copy when it already is)."""
        return self._t(x).contiguous()

    def all(self, x):
        """Whether every entry of ``x`` is true (a 0-d boolean tensor; ``bool()`` of it is the answer)."""
        return self._torch.all(self._t(x))

    # ops used by the hetero_regression cores
    def solve_pinv(self, A, b):
        """Solve ``A x = b`` for a stack ``A (..., n, n)`` and vectors ``b (..., n)``; pseudo-inverse where singular.

        A matrix whose LU solve fails (exact zero pivot) or gives a non-finite solution is solved by
        its Moore-Penrose pseudo-inverse instead (the minimum-norm least-squares solution); the others
        are not touched.
        """
        torch = self._torch
        A, b = self._t(A), self._t(b)
        x, info = torch.linalg.solve_ex(A, b.unsqueeze(-1))
        x = x.squeeze(-1)
        bad = (info != 0) | ~torch.isfinite(x).all(-1)
        if bool(bad.any()):
            x[bad] = (torch.linalg.pinv(A[bad]) @ b[bad].unsqueeze(-1)).squeeze(-1)
        return x

    def norm(self, x, axis=None):
        """Euclidean (2-)norm over ``axis`` (all entries if ``None``)."""
        return self._torch.linalg.vector_norm(self._t(x), dim=axis)

    def flatnonzero(self, x):
        """int64 indices of the non-zero (true) entries of the flattened ``x``."""
        return self._torch.nonzero(self._t(x).reshape(-1)).reshape(-1)


# --------------------------------------------------------------------------------------------------
# selection and caching
# --------------------------------------------------------------------------------------------------
def _cached_backend(kind, device_key):
    """The cached backend for ``(kind, device_key)``; ``device_key`` is ``str`` of a normalised device."""
    key = (kind, device_key)
    with _CACHE_LOCK:
        nx = _CACHE.get(key)
        if nx is None:
            if kind == "numpy":
                nx = NumpyBackend()
            else:
                torch = _import_torch()
                nx = TorchBackend(torch.device(device_key))
            _CACHE[key] = nx
        return nx


def _torch_device(device, tensors):
    """Normalise ``device`` (None, str, torch.device) to a torch.device with an explicit CUDA index."""
    torch = _import_torch()
    if device is None:
        devices = {t.device for t in tensors}
        if len(devices) > 1:
            names = ", ".join(sorted(str(d) for d in devices))
            raise ValueError(f"All tensors must be on one device; got tensors on {names}.")
        if devices:
            device = devices.pop()
        else:
            device = "cuda" if torch.cuda.is_available() else "cpu"
    if not isinstance(device, (str, torch.device)):
        raise TypeError(
            f"'device' must be None, a str or a torch.device; got {device!r} of type {type(device).__name__}."
        )
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise ValueError(
            f"'device' must be None, 'cpu', 'cuda', 'cuda:<index>' or a torch.device; got {device!r}."
        ) from exc
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"'device' is {str(device)!r} but CUDA is not available (torch.cuda.is_available() is False)."
            )
        index = torch.cuda.current_device() if dev.index is None else dev.index
        if index >= torch.cuda.device_count():
            raise ValueError(
                f"'device' must name one of the {torch.cuda.device_count()} CUDA device(s); got {str(device)!r}."
            )
        dev = torch.device("cuda", index)
    return dev


def get_backend(*arrays, backend="auto", device=None):
    """Return the (cached) backend for ``arrays``, or the one ``backend`` names.

    Parameters
    ----------
    *arrays : array-like
        The inputs of the computation. With ``backend="auto"``, numpy arrays select
        :class:`NumpyBackend` and torch tensors :class:`TorchBackend`; Python scalars, lists and
        ``None`` do not vote. No arrays (or only neutral ones) means numpy.
    backend : {"auto", "numpy", "torch"}, default="auto"
        ``"numpy"`` or ``"torch"`` forces that backend whatever the inputs (convert them with
        ``nx.asarray``); ``"auto"`` chooses by the inputs' type.
    device : None, str or torch.device, default=None
        For torch: ``None`` means the device of the input tensors, or CUDA if available else CPU when
        there are none; otherwise ``"cpu"``, ``"cuda"``, ``"cuda:0"``, ... or a :class:`torch.device`.
        For numpy only ``None`` and ``"cpu"`` are valid.

    Returns
    -------
    NumpyBackend or TorchBackend
        One instance per (backend, device): ``get_backend(a) is get_backend(b)`` for two numpy arrays.

    Raises
    ------
    TypeError
        If ``arrays`` mix numpy arrays and torch tensors (with ``backend="auto"``), contain another
        array type, or ``device`` has a wrong type.
    ValueError
        If ``backend`` is not one of the options, ``device`` is not valid for the backend, CUDA is
        requested but unavailable, or tensors live on different devices.
    ImportError
        If the torch backend is requested but torch is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> get_backend(np.zeros(3)).name
    'numpy'
    >>> get_backend(np.zeros(3), backend="numpy", device="cpu").device
    'cpu'
    """
    check_option(backend, "backend", _BACKEND_OPTIONS)
    tensors = []
    if backend == "auto":
        seen = {}
        for i, a in enumerate(arrays):
            kind = _kind_of(a)
            if kind is not None:
                seen.setdefault(kind, (i, a))
                if kind == "torch":
                    tensors.append(a)
        if len(seen) > 1:
            (i, a), (j, b) = seen["numpy"], seen["torch"]
            raise TypeError(
                "get_backend() needs all arrays from one library; got "
                f"{type(a).__module__}.{type(a).__qualname__} (argument {i}) and "
                f"{type(b).__module__}.{type(b).__qualname__} (argument {j}). "
                "Convert them first, or pass backend='numpy' or backend='torch'."
            )
        kind = next(iter(seen), "numpy")
    else:
        kind = backend
        if kind == "torch":
            tensors = [a for a in arrays if _is_tensor(a)] if device is None else []

    if kind == "numpy":
        if device is not None and not isinstance(device, str) and not _is_torch_device(device):
            raise TypeError(
                f"'device' must be None, a str or a torch.device; got {device!r} of type {type(device).__name__}."
            )
        if device is not None and str(device) != "cpu":
            raise ValueError(
                f"'device' must be None or 'cpu' for the numpy backend; got {str(device)!r}. "
                "Pass backend='torch' to run on another device."
            )
        return _cached_backend("numpy", "cpu")
    dev = _torch_device(device, tensors)
    return _cached_backend("torch", str(dev))


# --------------------------------------------------------------------------------------------------
# the one rule estimators use to pick their core
# --------------------------------------------------------------------------------------------------
def require_torch(name="backend"):
    """Import torch for ``name='torch'``, or raise the package's one "needs PyTorch" ``ImportError``."""
    message = (f"{name}='torch' needs PyTorch, which is not installed; install it with `{TORCH_INSTALL_HINT}` "
               f"or use {name}='numpy'.")
    if "torch" not in available_backends():
        raise ImportError(message)
    try:
        import torch
    except ImportError as exc:  # installed but broken
        raise ImportError(message) from exc
    return torch


def resolve(backend, device=None, arrays=(), *, name="backend"):
    """Which core an estimator runs: ``"numpy"`` (the CPU path: numpy and numba) or ``"torch"``.

    The rule, the same for every estimator with a ``backend`` parameter:

    * ``"numpy"`` (or its older spelling ``"numba"``) runs the CPU path; ``"torch"`` the torch path
      (``ImportError`` when torch is not installed).
    * ``"auto"``: the array type decides, as in POT and scikit-learn's array API support: a torch tensor
      among ``arrays`` selects torch; otherwise a ``device`` naming an accelerator (anything but
      ``None`` and ``"cpu"``, e.g. ``"cuda"``) selects torch; otherwise the CPU path.

    Torch is never imported to decide ``"auto"`` on numpy input without a device.

    Parameters
    ----------
    backend : {"auto", "numpy", "torch", "numba"}
        The estimator's ``backend`` parameter.
    device : None, str or torch.device, default=None
        The estimator's ``device`` parameter (checked by the core that uses it).
    arrays : iterable, default=()
        The inputs of the computation.
    name : str, default="backend"
        Parameter name used in the error messages.

    Returns
    -------
    {"numpy", "torch"}

    Raises
    ------
    ValueError
        If ``backend`` is not one of the options.
    TypeError
        If ``backend`` is not a string.
    ImportError
        If torch is selected but not installed.

    Examples
    --------
    >>> import numpy as np
    >>> resolve("auto", arrays=(np.zeros(3),))
    'numpy'
    >>> resolve("numba")
    'numpy'
    """
    check_option(backend, name, RESOLVE_OPTIONS)
    if backend == "numba":
        return "numpy"
    if backend == "auto":
        accelerator = device is not None and str(device) != "cpu"
        if not accelerator and not any(_is_tensor(a) for a in arrays):
            return "numpy"
        backend = "torch"
    if backend == "torch":
        require_torch(name)
    return backend


def torch_device(device):
    """A :class:`torch.device` for an ``accel`` core: ``None`` -> CUDA if available, else CPU; otherwise
    ``device`` checked as :func:`get_backend` checks it."""
    return get_backend(backend="torch", device=device).device
