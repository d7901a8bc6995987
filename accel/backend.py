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
import threading

import numpy as np

from theory._checks import check_option

from ._lazy import (  # noqa: F401  (re-exported: the helpers that never import torch)
    TORCH_INSTALL_HINT,
    _import_torch,
    _is_tensor,
    _is_torch_device,
    _to_numpy,
    _torch_if_imported,
)
from ._numpy_backend import Backend, NumpyBackend
from ._torch_backend import TorchBackend

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

_BACKEND_OPTIONS = ("auto", "numpy", "torch")

#: What an estimator's ``backend`` parameter accepts: ``"numba"`` is an older spelling of ``"numpy"``.
RESOLVE_OPTIONS = ("auto", "numpy", "torch", "numba")
_CACHE: dict = {}
_CACHE_LOCK = threading.Lock()


# --------------------------------------------------------------------------------------------------
# helpers that never import torch (the others are in ._lazy)
# --------------------------------------------------------------------------------------------------
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
