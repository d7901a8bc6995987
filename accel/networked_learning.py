r"""torch cores of :mod:`algos.networked_learning`: the Gaussian sketch on a device and batched lstsq.

* :func:`gaussian_sketch_apply_torch` applies exactly the Gaussian sketch of
  ``algos.networked_learning._sketch.make_sketch("gaussian", k, m, seed, chunk=chunk)``: each column
  chunk's block is drawn by numpy from the same Philox stream (so the matrix is the same on every
  backend and device), moved to the device and multiplied there, accumulating in float64. The result
  agrees with :meth:`Sketch.apply` to round-off (different summation order; not bit-identical). It is
  written once, as :func:`gaussian_sketch_apply` against the array backend ``nx`` of :mod:`accel.backend`:
  run with the numpy backend, the same function is the reference of the numba kernel.
* :func:`batched_lstsq` solves many small least-squares problems (the per-agent solves of one
  topological generation) in one batched call, returning min-norm solutions as numpy arrays.

torch is imported inside the functions: importing this module (or :mod:`algos`) does not import it.
"""

from __future__ import annotations

import numpy as np

from theory._checks import check_finite, check_scalar_float, check_scalar_int

from ._sketch_blocks import gaussian_blocks
from .backend import get_backend
from .backend import torch_device as _resolve_device

__all__ = ["gaussian_sketch_apply_torch", "gaussian_sketch_apply", "batched_lstsq"]



def _check_gaussian_args(k, m, seed, chunk, A):
    """The checks of ``make_sketch("gaussian", k, m, seed, chunk=chunk).apply(A)``, same wording."""
    m = check_scalar_int(m, "m", low=1)
    k = check_scalar_int(k, "k", low=1)
    seed = check_scalar_int(seed, "seed", low=0)
    chunk = check_scalar_int(chunk, "chunk", low=1)
    if isinstance(A, (str, bytes)) or not hasattr(A, "__len__") and not hasattr(A, "__array__"):
        raise TypeError(f"'A' must be an array of shape ({m},) or ({m}, p); got {type(A).__name__}.")
    A = np.asarray(A)
    if A.dtype.kind not in "biuf":
        raise TypeError(f"'A' must contain real numbers; got an array of dtype {A.dtype}.")
    if A.ndim not in (1, 2) or A.shape[0] != m:
        raise ValueError(f"'A' must have shape ({m},) or ({m}, p); got an array of shape {A.shape}.")
    A = A.astype(np.float64, copy=False)
    check_finite(A, "A")
    return k, m, seed, chunk, A


def gaussian_sketch_apply_torch(k, m, seed, A, chunk=8192, device=None):
    r"""Return :math:`S A` for the shared Gaussian sketch, with the matmuls on a torch device.

    Parameters
    ----------
    k, m, seed, chunk : int
        As in :func:`algos.networked_learning._sketch.make_sketch` with ``kind="gaussian"``.
    A : array-like, shape (m,) or (m, p)
        Finite real entries.
    device : None, str or torch.device, default=None
        ``None``: CUDA if available, else CPU.

    Returns
    -------
    ndarray of float64, shape (k,) or (k, p)
        Equal to ``make_sketch("gaussian", k, m, seed, chunk=chunk).apply(A)`` up to round-off
        (relative ``~1e-15 sqrt(m)``).

    Raises
    ------
    ValueError, TypeError
        As :meth:`Sketch.apply` and :func:`make_sketch`.
    ImportError
        If torch is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> from algos.networked_learning._sketch import make_sketch
    >>> A = np.random.default_rng(0).standard_normal((100, 3))
    >>> out = gaussian_sketch_apply_torch(5, 100, 7, A, chunk=32, device="cpu")
    >>> bool(np.allclose(out, make_sketch("gaussian", 5, 100, 7, chunk=32).apply(A), rtol=1e-12, atol=1e-12))
    True
    """
    k, m, seed, chunk, A = _check_gaussian_args(k, m, seed, chunk, A)
    nx = get_backend(backend="torch", device=_resolve_device(device))
    out = nx.to_numpy(gaussian_sketch_apply(nx, k, m, seed, A.reshape(m, -1), chunk))
    return out[:, 0] if A.ndim == 1 else out


def gaussian_sketch_apply(nx, k, m, seed, A, chunk):
    r"""Return :math:`S A` for the shared Gaussian sketch on the backend ``nx`` (arguments not checked).

    Each column chunk's block :math:`G = \sqrt{k}\,S^\top_{[start:stop]}` is drawn by numpy
    (:func:`accel._sketch_blocks.gaussian_blocks`), moved with ``nx.asarray`` and accumulated as
    ``out += G^T A[start:stop]``. With the numpy backend this is the reference the numba path of
    :meth:`algos.networked_learning._sketch.Sketch.apply` is tested against; with the torch backend it is
    the core of :func:`gaussian_sketch_apply_torch`.

    Parameters
    ----------
    nx : NumpyBackend or TorchBackend
        The backend to compute with.
    k, m, seed, chunk : int
        As in :func:`algos.networked_learning._sketch.make_sketch` with ``kind="gaussian"``.
    A : ndarray of float64, shape (m, p)
        The matrix to sketch.

    Returns
    -------
    array of shape (k, p)
        :math:`S A`, an ``nx`` array.
    """
    At = nx.asarray(np.ascontiguousarray(A, dtype=np.float64))
    out = nx.zeros((k, A.shape[1]), type_as=At)
    for start, stop, G in gaussian_blocks(seed, k, m, chunk):
        out += nx.matmul(nx.asarray(G).T, At[start:stop])
    out *= 1.0 / np.sqrt(k)
    return out


def _as_problem(A, b, i):
    A = np.asarray(A)
    b = np.asarray(b)
    if A.dtype.kind not in "biuf" or b.dtype.kind not in "biuf":
        raise TypeError(f"'As[{i}]' and 'bs[{i}]' must contain real numbers; got dtypes {A.dtype} and {b.dtype}.")
    if A.ndim != 2:
        raise ValueError(f"'As[{i}]' must be 2-dimensional; got an array of shape {A.shape}.")
    if b.ndim not in (1, 2) or b.shape[0] != A.shape[0]:
        raise ValueError(
            f"'bs[{i}]' must have shape ({A.shape[0]},) or ({A.shape[0]}, q) to match 'As[{i}]'; "
            f"got an array of shape {b.shape}."
        )
    A = check_finite(A.astype(np.float64), f"As[{i}]")
    b = check_finite(b.astype(np.float64), f"bs[{i}]")
    return A, b


def batched_lstsq(As, bs, device=None, rcond=None):
    r"""Min-norm least-squares solutions :math:`x_i = A_i^+ b_i` of many small problems, batched.

    Problems of the same shape are stacked and solved by one call: on CPU
    ``torch.linalg.lstsq(..., driver="gelsd")`` (SVD based, min-norm for rank-deficient ``A_i``); on
    CUDA, where ``torch.linalg.lstsq`` only offers the full-rank QR driver, the same min-norm solution
    through a batched SVD. Singular values at or below ``rcond * s_max`` count as zero, as in
    :func:`numpy.linalg.lstsq`.

    Parameters
    ----------
    As : sequence of array-like (n_i, p_i), or array of shape (B, n, p)
    bs : sequence of array-like (n_i,) or (n_i, q), or array of shape (B, n) or (B, n, q)
    device : None, str or torch.device, default=None
        ``None``: CUDA if available, else CPU.
    rcond : float or None, default=None
        Relative cut-off; ``None`` means ``eps * max(n_i, p_i)`` (numpy's default).

    Returns
    -------
    list of ndarray, or ndarray
        ``x_i`` of shape (p_i,) or (p_i, q); a stacked array when ``As`` was given as one 3-d array.

    Raises
    ------
    ValueError
        If the numbers of problems differ, a shape is inconsistent or an entry is not finite.
    ImportError
        If torch is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[1.0, 1.0], [1.0, 1.0]])          # rank 1: min-norm solution
    >>> batched_lstsq([A], [np.array([2.0, 2.0])], device="cpu")[0]
    array([1., 1.])
    """
    stacked = isinstance(As, np.ndarray) and As.ndim == 3
    As, bs = list(As), list(bs)
    if len(As) != len(bs):
        raise ValueError(f"'As' and 'bs' must hold the same number of problems; got {len(As)} and {len(bs)}.")
    if rcond is not None:
        rcond = check_scalar_float(rcond, "rcond", low=0.0)
    probs = [_as_problem(A, b, i) for i, (A, b) in enumerate(zip(As, bs))]
    dev = _resolve_device(device)
    import torch

    groups = {}
    for i, (A, b) in enumerate(probs):
        groups.setdefault((A.shape, b.shape), []).append(i)
    sols = [None] * len(probs)
    for (ashape, bshape), idx in groups.items():
        n, p = ashape
        At = torch.as_tensor(np.stack([probs[i][0] for i in idx]), device=dev)
        bt = torch.as_tensor(np.stack([probs[i][1].reshape(n, -1) for i in idx]), device=dev)
        rc = float(np.finfo(np.float64).eps * max(n, p)) if rcond is None else rcond
        if n == 0 or p == 0:
            X = torch.zeros((len(idx), p, bt.shape[2]), dtype=torch.float64, device=dev)
        elif dev.type == "cpu":
            X = torch.linalg.lstsq(At, bt, rcond=rc, driver="gelsd").solution
        else:
            U, s, Vh = torch.linalg.svd(At, full_matrices=False)
            keep = s > rc * s[:, :1]
            s_inv = torch.where(keep, 1.0 / torch.where(keep, s, torch.ones_like(s)), torch.zeros_like(s))
            X = Vh.transpose(-1, -2) @ (s_inv[..., None] * (U.transpose(-1, -2) @ bt))
        X = X.cpu().numpy()
        for j, i in enumerate(idx):
            sols[i] = X[j, :, 0] if len(bshape) == 1 else X[j]
    if stacked:
        return np.stack(sols) if sols else np.zeros((0,))
    return sols
