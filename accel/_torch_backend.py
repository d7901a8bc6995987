"""The torch backend (see :mod:`accel.backend`); torch is imported when an instance is created."""

from __future__ import annotations

import numpy as np

from ._lazy import _import_torch, _is_tensor
from ._numpy_backend import Backend

__all__ = ["TorchBackend"]


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
