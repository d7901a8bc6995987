"""Tests of accel.backend: numpy/torch parity of every op, type_as, caching, errors, lazy torch import."""

from __future__ import annotations

import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

import accel
from accel import backend as B
from accel.backend import NumpyBackend, TorchBackend, available_backends, cuda_available, get_backend

# Tolerance of the torch-vs-numpy parity tests. Both run in float64; elementwise functions differ by at
# most a few ulp (different libm), reductions by summation order (~n * eps), and the linear-algebra ops
# (solve, cholesky, triangular solves) by LAPACK implementation on well-conditioned matrices (condition
# number <= ~100 here), i.e. ~1e-13 relative. 1e-10 leaves three orders of margin.
RTOL, ATOL = 1e-10, 1e-12

SEEDS = st.integers(0, 2**32 - 1)


def _data(seed, n, m):
    """Inputs for every op, drawn by numpy from ``default_rng(seed)`` (numpy arrays)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    G = rng.normal(size=(n, n))
    spd = G @ G.T + n * np.eye(n)
    Gb = rng.normal(size=(2, n, n))
    spd_batch = Gb @ np.swapaxes(Gb, 1, 2) + n * np.eye(n)
    L = np.tril(rng.normal(size=(n, n)), -1) + np.diag(rng.uniform(1.0, 2.0, size=n))
    Y = rng.normal(size=(n, m))
    Xnf = X.copy()
    Xnf[0, 0] = np.inf
    Xnf[-1, -1] = np.nan
    Xlse = X.copy()
    Xlse[0, :] = -np.inf
    return {
        "X": X,
        "Y": Y,
        "Xint": rng.integers(-5, 5, size=(n, m)),
        "Xpos": np.abs(X) + 0.1,
        "Xnf": Xnf,
        "Xlse": Xlse,
        "mask": X > 0,
        "spd": spd,
        "spd_batch": spd_batch,
        "L": L,
        "U": L.T.copy(),
        "v": rng.normal(size=n),
        "Bm": rng.normal(size=(n, 3)),
        "Bbatch": rng.normal(size=(2, n, 3)),
        "w": rng.normal(size=m),
    }


# Every op of the backend API, as a function of (backend, inputs already converted by nx.asarray).
OPS = {
    "asarray": lambda nx, d: nx.asarray(d["X"]),
    "asarray_dtype": lambda nx, d: nx.asarray(d["Xint"], dtype=nx.float64),
    "asarray_list": lambda nx, d: nx.asarray([[1.5, 2.0], [3.0, 4.0]]),
    "asarray_int_list": lambda nx, d: nx.asarray([1, 2, 3]),
    "zeros": lambda nx, d: nx.zeros((3, 2)),
    "zeros_int": lambda nx, d: nx.zeros(4, dtype=nx.int64),
    "ones": lambda nx, d: nx.ones((2, 3)),
    "full": lambda nx, d: nx.full((2, 2), 0.25),
    "full_type_as": lambda nx, d: nx.full(3, 7, type_as=d["Xint"]),
    "empty_shape": lambda nx, d: nx.empty((2, 5)).shape,
    "arange_int": lambda nx, d: nx.arange(5),
    "arange_start_stop": lambda nx, d: nx.arange(2, 9, 3),
    "arange_float": lambda nx, d: nx.arange(0.0, 1.0, 0.25),
    "matmul": lambda nx, d: nx.matmul(d["X"].T, d["Y"]),
    "matmul_vec": lambda nx, d: nx.matmul(d["X"], d["w"]),
    "solve_vec": lambda nx, d: nx.solve(d["spd"], d["v"]),
    "solve_mat": lambda nx, d: nx.solve(d["spd"], d["Bm"]),
    "solve_batch_vec": lambda nx, d: nx.solve(d["spd_batch"], d["v"]),
    "solve_batch_mat": lambda nx, d: nx.solve(d["spd_batch"], d["Bbatch"]),
    "solve_batch_shared_mat": lambda nx, d: nx.solve(d["spd_batch"], d["Bm"]),
    "cholesky": lambda nx, d: nx.cholesky(d["spd"]),
    "cholesky_batch": lambda nx, d: nx.cholesky(d["spd_batch"]),
    "solve_triangular_lower_vec": lambda nx, d: nx.solve_triangular(d["L"], d["v"]),
    "solve_triangular_lower_mat": lambda nx, d: nx.solve_triangular(d["L"], d["Bm"], lower=True),
    "solve_triangular_upper": lambda nx, d: nx.solve_triangular(d["U"], d["Bm"], lower=False),
    "exp": lambda nx, d: nx.exp(d["X"]),
    "log": lambda nx, d: nx.log(d["Xpos"]),
    "sqrt": lambda nx, d: nx.sqrt(d["Xpos"]),
    "abs": lambda nx, d: nx.abs(d["X"]),
    "abs_int": lambda nx, d: nx.abs(d["Xint"]),
    "sum_all": lambda nx, d: nx.sum(d["X"]),
    "sum_axis0": lambda nx, d: nx.sum(d["X"], axis=0),
    "sum_axis1_keepdims": lambda nx, d: nx.sum(d["X"], axis=1, keepdims=True),
    "sum_bool": lambda nx, d: nx.sum(d["mask"]),
    "mean_all": lambda nx, d: nx.mean(d["X"]),
    "mean_axis1": lambda nx, d: nx.mean(d["X"], axis=1),
    "mean_int": lambda nx, d: nx.mean(d["Xint"], axis=0),
    "max_all": lambda nx, d: nx.max(d["X"]),
    "max_axis0": lambda nx, d: nx.max(d["X"], axis=0),
    "min_all": lambda nx, d: nx.min(d["X"]),
    "min_axis1": lambda nx, d: nx.min(d["X"], axis=1),
    "argmin_axis0": lambda nx, d: nx.argmin(d["X"], axis=0),
    "argmin_flat": lambda nx, d: nx.argmin(d["X"]),
    "argmax_axis1": lambda nx, d: nx.argmax(d["X"], axis=1),
    "argmax_flat": lambda nx, d: nx.argmax(d["X"]),
    "where": lambda nx, d: nx.where(d["mask"], d["X"], d["Y"]),
    "where_scalars": lambda nx, d: nx.where(d["mask"], 1.0, 0.0),
    "where_scalar_other": lambda nx, d: nx.where(d["mask"], d["X"], 0.0),
    "clip": lambda nx, d: nx.clip(d["X"], -0.5, 0.5),
    "clip_low_only": lambda nx, d: nx.clip(d["X"], 0.0, None),
    "maximum": lambda nx, d: nx.maximum(d["X"], d["Y"]),
    "maximum_scalar": lambda nx, d: nx.maximum(d["X"], 0.0),
    "minimum": lambda nx, d: nx.minimum(d["X"], d["Y"]),
    "einsum": lambda nx, d: nx.einsum("ij,ik->jk", d["X"], d["Y"]),
    "einsum_trace": lambda nx, d: nx.einsum("ii->", d["spd"]),
    "stack": lambda nx, d: nx.stack([d["X"], d["Y"]]),
    "stack_axis1": lambda nx, d: nx.stack([d["X"], d["Y"]], axis=1),
    "concatenate": lambda nx, d: nx.concatenate([d["X"], d["Y"]]),
    "concatenate_axis1": lambda nx, d: nx.concatenate([d["X"], d["Y"]], axis=1),
    "isfinite": lambda nx, d: nx.isfinite(d["Xnf"]),
    "logsumexp_all": lambda nx, d: nx.logsumexp(d["X"]),
    "logsumexp_axis1": lambda nx, d: nx.logsumexp(d["X"], axis=1),
    "logsumexp_neg_inf_row": lambda nx, d: nx.logsumexp(d["Xlse"], axis=1),
    "logsumexp_keepdims": lambda nx, d: nx.logsumexp(d["X"], axis=0, keepdims=True),
    "rng": lambda nx, d: nx.asarray(nx.rng(7).normal(size=3)),
    "to_numpy": lambda nx, d: nx.to_numpy(d["X"]),
    # ops used by the continual cores
    "tanh": lambda nx, d: nx.tanh(d["X"]),
    "flip_axis0": lambda nx, d: nx.flip(d["X"], 0),
    "flip_axis1": lambda nx, d: nx.flip(d["X"], 1),
    "cumsum_axis0": lambda nx, d: nx.cumsum(d["X"], axis=0),
    "cumsum_int": lambda nx, d: nx.cumsum(d["Xint"], axis=1),
    "astype_float": lambda nx, d: nx.astype(d["Xint"], nx.float64),
    "astype_bool_to_int": lambda nx, d: nx.astype(d["mask"], nx.int64),
    "copy": lambda nx, d: nx.copy(d["X"]),
    "addmatmul": lambda nx, d: nx.addmatmul(d["spd"], d["X"], d["Y"].T),
    "addmatmul_batch": lambda nx, d: nx.addmatmul(d["Bbatch"], d["spd_batch"], d["Bbatch"]),
    "lerp": lambda nx, d: nx.lerp(d["X"], d["Y"], 0.3),
    # ops used by the point_process cores
    "eye": lambda nx, d: nx.eye(3),
    "eye_type_as": lambda nx, d: nx.eye(2, type_as=d["Xint"]),
    "diagonal": lambda nx, d: nx.diagonal(d["spd"]),
    "diagonal_batch": lambda nx, d: nx.diagonal(d["spd_batch"]),
    "cholesky_solve": lambda nx, d: nx.cholesky_solve(nx.cholesky(d["spd"]), d["Bm"]),
    "cholesky_solve_batch": lambda nx, d: nx.cholesky_solve(nx.cholesky(d["spd_batch"]), d["Bbatch"]),
    "cholesky_inverse": lambda nx, d: nx.cholesky_inverse(nx.cholesky(d["spd"])),
    "cdist": lambda nx, d: nx.cdist(d["X"], d["Y"]),
    "cdist_batch": lambda nx, d: nx.cdist(d["Bbatch"], d["Bbatch"]),
    # ops used by the federated cores
    "swapaxes": lambda nx, d: nx.swapaxes(d["Bbatch"], 1, 2),
    "softmax": lambda nx, d: nx.softmax(d["X"], axis=1),
    "softmax_axis0_with_inf": lambda nx, d: nx.softmax(d["Xlse"], axis=0),
    # ops used by the pomdp cores
    "swapaxes_then_matmul": lambda nx, d: nx.matmul(nx.swapaxes(d["Bbatch"], 1, 2), d["v"]),
    "reshape": lambda nx, d: nx.reshape(d["X"], (-1,)),
    "reshape_swapped": lambda nx, d: nx.reshape(nx.swapaxes(d["Bbatch"], 1, 2), (6, -1)),
    "ascontiguousarray": lambda nx, d: nx.ascontiguousarray(nx.swapaxes(d["X"], 0, 1)),
    "all": lambda nx, d: nx.all(d["mask"]),
    "all_true": lambda nx, d: nx.all(d["Xpos"] > 0),
    "all_empty": lambda nx, d: nx.all(d["X"][:0] > 0),
    # ops used by the hetero_regression cores
    "solve_pinv": lambda nx, d: nx.solve_pinv(d["spd"], d["v"]),
    "solve_pinv_batch": lambda nx, d: nx.solve_pinv(d["spd_batch"], d["Bm"].T[:2]),
    "solve_pinv_singular": lambda nx, d: nx.solve_pinv(  # exact zero pivots: a zero matrix, eye without e_0
        nx.stack([d["spd"], 0.0 * d["spd"], nx.eye(len(d["v"])) * (nx.arange(len(d["v"])) > 0)]),
        nx.stack([d["v"], d["v"], d["v"]])),
    "norm_axis": lambda nx, d: nx.norm(d["X"], axis=-1),
    "norm_all": lambda nx, d: nx.norm(d["X"]),
    "flatnonzero": lambda nx, d: nx.flatnonzero(d["mask"]),
}


def _convert(nx, data):
    return {k: nx.asarray(v) for k, v in data.items()}


def _run(nx, op, data):
    return OPS[op](nx, _convert(nx, data))


@pytest.fixture(scope="module")
def torch_cpu():
    pytest.importorskip("torch")
    return get_backend(backend="torch", device="cpu")


@pytest.mark.parametrize("op", sorted(OPS))
def test_numpy_ops_return_numpy(op):
    nx = get_backend(backend="numpy")
    out = _run(nx, op, _data(0, 4, 3))
    assert isinstance(out, (np.ndarray, np.generic, tuple, float, int)), f"{op}: {type(out)}"


def _assert_parity(nx_ref, nx, data, label):
    """Every op of ``nx`` agrees with ``nx_ref`` (numpy): value to RTOL/ATOL, shape, dtype, device."""
    ref_data, nx_data = _convert(nx_ref, data), _convert(nx, data)
    for op in sorted(OPS):
        expected = OPS[op](nx_ref, ref_data)
        got = OPS[op](nx, nx_data)
        msg = f"op {op!r}, {label}"
        if isinstance(expected, tuple):  # shapes
            assert tuple(got) == expected, msg
            continue
        if op == "to_numpy":
            assert isinstance(got, np.ndarray), msg
        else:
            assert type(got).__module__.startswith("torch"), f"{msg}: returned {type(got).__name__}"
            assert got.device == nx.device, msg
        got_np = nx.to_numpy(got)
        expected = np.asarray(expected)
        assert got_np.shape == expected.shape, f"{msg}: shape {got_np.shape} != {expected.shape}"
        assert got_np.dtype == expected.dtype, f"{msg}: dtype {got_np.dtype} != {expected.dtype}"
        if expected.dtype.kind in "biu":
            assert_array_equal(got_np, expected, err_msg=msg)
        else:
            assert_allclose(got_np, expected, rtol=RTOL, atol=ATOL, err_msg=msg)


@given(seed=SEEDS, n=st.integers(2, 6), m=st.integers(1, 5))
def test_torch_cpu_parity(seed, n, m):
    """Every op gives the numpy result (value, shape and dtype) on CPU torch, to RTOL/ATOL."""
    pytest.importorskip("torch")
    nx_np = get_backend(backend="numpy")
    nx_t = get_backend(backend="torch", device="cpu")
    _assert_parity(nx_np, nx_t, _data(seed, n, m), f"seed {seed}, n={n}, m={m}")


def test_every_documented_op_is_tested():
    api = {
        "asarray", "to_numpy", "zeros", "ones", "full", "empty", "arange", "matmul", "solve", "cholesky",
        "solve_triangular", "exp", "log", "sqrt", "abs", "sum", "mean", "max", "min", "argmin", "argmax",
        "where", "clip", "maximum", "minimum", "einsum", "stack", "concatenate", "isfinite", "logsumexp",
        "rng",
        "tanh", "flip", "cumsum", "astype", "copy", "addmatmul", "lerp",  # continual cores
        "eye", "diagonal", "cholesky_solve", "cholesky_inverse", "cdist",  # point_process cores
        "swapaxes", "reshape", "ascontiguousarray", "all",  # ops used by the pomdp cores
        "solve_pinv", "norm", "flatnonzero",  # hetero_regression cores
    }
    untested = {name for name in api if not any(k == name or k.startswith(name + "_") for k in OPS)}
    assert not untested, f"ops without a parity case: {sorted(untested)}"
    for cls in (NumpyBackend, TorchBackend):
        for name in api:
            assert callable(getattr(cls, name)), (cls, name)
            assert getattr(cls, name).__doc__, f"{cls.__name__}.{name} has no docstring"


def test_arg_ties_pick_first_occurrence(torch_cpu):
    x = np.array([[1.0, 0.0, 0.0], [3.0, 3.0, 0.0]])
    nx_np = get_backend(backend="numpy")
    for axis in (None, 0, 1):
        for op in ("argmin", "argmax"):
            expected = getattr(nx_np, op)(x, axis=axis)
            got = torch_cpu.to_numpy(getattr(torch_cpu, op)(torch_cpu.asarray(x), axis=axis))
            assert_array_equal(got, expected, err_msg=f"{op} axis={axis}")


def test_linalg_errors_are_numpy_linalgerror(torch_cpu):
    not_pd = np.array([[1.0, 2.0], [2.0, 1.0]])
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    for nx in (get_backend(backend="numpy"), torch_cpu):
        with pytest.raises(np.linalg.LinAlgError):
            nx.cholesky(nx.asarray(not_pd))
        with pytest.raises(np.linalg.LinAlgError):
            nx.solve(nx.asarray(singular), nx.asarray([1.0, 1.0]))


# ----------------------------------------------------------------------------------------------------
# dtypes, type_as and asarray
# ----------------------------------------------------------------------------------------------------
def test_numpy_type_as_and_defaults():
    nx = get_backend(backend="numpy")
    assert nx.zeros(3).dtype == np.float64
    assert nx.zeros(3, type_as=np.arange(3)).dtype == np.int64
    assert nx.ones((2, 2), type_as=np.zeros(1, dtype=np.float32)).dtype == np.float32
    assert nx.full(2, 1, dtype=np.float32, type_as=np.arange(3)).dtype == np.float32  # dtype wins
    assert nx.empty(2, type_as=np.zeros(1, dtype=bool)).dtype == np.bool_
    assert nx.arange(3, type_as=np.zeros(1)).dtype == np.float64
    assert (nx.float64, nx.int64, nx.bool) == (np.float64, np.int64, np.bool_)
    assert nx.device == "cpu" and nx.name == "numpy"


def test_torch_type_as_and_defaults(torch_cpu):
    import torch

    nx = torch_cpu
    assert nx.zeros(3).dtype == torch.float64, "never torch's float32 default"
    assert nx.asarray([0.5, 1.5]).dtype == torch.float64
    assert nx.asarray(2.0).dtype == torch.float64
    assert nx.arange(0.0, 1.0, 0.5).dtype == torch.float64
    t32 = torch.zeros(2, dtype=torch.float32)
    assert nx.zeros(3, type_as=t32).dtype == torch.float32
    assert nx.full(3, 2, type_as=torch.arange(3)).dtype == torch.int64
    assert nx.ones(2, dtype=nx.float64, type_as=t32).dtype == torch.float64  # dtype wins
    assert nx.zeros(2, type_as=np.zeros(1, dtype=np.float32)).dtype == torch.float32  # numpy type_as
    assert nx.zeros(2, dtype=np.int64).dtype == torch.int64  # numpy dtypes are mapped
    assert nx.zeros(2, type_as=t32).device == t32.device
    assert (nx.float64, nx.int64, nx.bool) == (torch.float64, torch.int64, torch.bool)
    assert nx.name == "torch" and nx.device == torch.device("cpu")
    gen = nx.rng(3)
    assert isinstance(gen, np.random.Generator)
    assert gen.random() == np.random.default_rng(3).random()


def test_torch_asarray_awkward_numpy_inputs(torch_cpu):
    base = np.arange(12.0).reshape(3, 4)
    readonly = base.copy()
    readonly.flags.writeable = False
    cases = {
        "readonly": readonly,
        "negative_stride": base[::-1],
        "non_contiguous": base[:, ::2],
        "big_endian": base.astype(">f8"),
        "numpy_scalar": np.float64(2.5),
        "bool": base > 3,
    }
    for name, arr in cases.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            t = torch_cpu.asarray(arr)
        assert_array_equal(torch_cpu.to_numpy(t), np.asarray(arr), err_msg=name)
    with pytest.raises(TypeError, match="dtype <U1"):
        torch_cpu.asarray(np.array(["a"]))


def test_conversion_between_backends(torch_cpu):
    import torch

    x = np.arange(6.0).reshape(2, 3)
    t = torch_cpu.asarray(x)
    nx_np = get_backend(backend="numpy")
    back = nx_np.asarray(t)
    assert isinstance(back, np.ndarray)
    assert_array_equal(back, x)
    assert_array_equal(nx_np.to_numpy(t.requires_grad_(False)), x)
    assert torch_cpu.asarray(t) is t or torch.equal(torch_cpu.asarray(t), t)
    assert torch_cpu.asarray(t, dtype=torch.float32).dtype == torch.float32
    assert_array_equal(torch_cpu.to_numpy([1, 2]), [1, 2])


# ----------------------------------------------------------------------------------------------------
# selection and caching
# ----------------------------------------------------------------------------------------------------
def test_numpy_selection_and_cache():
    a, b = np.zeros(3), np.ones((2, 2))
    nx = get_backend(a, b)
    assert isinstance(nx, NumpyBackend)
    assert nx is get_backend(b) is get_backend() is get_backend(backend="numpy", device="cpu")
    assert get_backend(a, 1.0, [1, 2], None) is nx  # scalars, lists and None do not vote
    assert get_backend(np.float64(1.0)) is nx
    assert pickle.loads(pickle.dumps(nx)) is nx
    assert repr(nx) == "NumpyBackend(device='cpu')"


def test_torch_selection_and_cache(torch_cpu):
    import torch

    t = torch.zeros(3, dtype=torch.float64)
    nx = get_backend(t)
    assert isinstance(nx, TorchBackend)
    assert nx is torch_cpu
    assert nx is get_backend(t, 2.0, None) is get_backend(backend="torch", device=torch.device("cpu"))
    assert get_backend(t, torch.ones(2)) is nx
    assert get_backend(torch.nn.Parameter(torch.zeros(2))) is nx  # subclasses count as tensors
    assert pickle.loads(pickle.dumps(nx)) is nx
    # forcing a backend overrides the inputs' type
    assert get_backend(t, backend="numpy") is get_backend(np.zeros(1))
    assert get_backend(np.zeros(2), backend="torch", device="cpu") is nx


def test_mixing_numpy_and_torch_raises_typeerror(torch_cpu):
    import torch

    with pytest.raises(TypeError, match=r"numpy\.ndarray \(argument 0\) and torch\.Tensor \(argument 2\)"):
        get_backend(np.zeros(2), 1.0, torch.zeros(2))


def test_bad_backend_and_device():
    with pytest.raises(ValueError, match=r"^'backend' must be one of \{'auto', 'numpy', 'torch'\}; got 'jax'\.$"):
        get_backend(backend="jax")
    with pytest.raises(TypeError, match="'backend' must be one of"):
        get_backend(backend=None)
    with pytest.raises(ValueError, match=r"^'device' must be None or 'cpu' for the numpy backend; got 'cuda'\."):
        get_backend(np.zeros(2), device="cuda")
    with pytest.raises(TypeError, match=r"^'device' must be None, a str or a torch\.device; got 3 of type int\.$"):
        get_backend(np.zeros(2), device=3)

    class NotAnArray:
        pass

    with pytest.raises(TypeError, match=r"accepts numpy arrays and torch tensors.*NotAnArray"):
        get_backend(NotAnArray())


def test_bad_torch_device(torch_cpu):
    msg = r"^'device' must be None, 'cpu', 'cuda', 'cuda:<index>' or a torch\.device; got 'gpu0'\.$"
    with pytest.raises(ValueError, match=msg):
        get_backend(backend="torch", device="gpu0")
    with pytest.raises(TypeError, match="'device' must be None, a str or a torch.device; got 1.5"):
        get_backend(backend="torch", device=1.5)
    if not cuda_available():
        with pytest.raises(ValueError, match=r"'device' is 'cuda' but CUDA is not available"):
            get_backend(backend="torch", device="cuda")
        assert get_backend(backend="torch") is torch_cpu  # device=None -> CPU without CUDA


def test_missing_torch_gives_install_hint(monkeypatch):
    """With torch not importable: ImportError with the hint, and the discovery helpers say so."""
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    with pytest.raises(ImportError, match=r'pip install "algos-theory\[gpu\]" -c constraints\.txt'):
        get_backend(backend="torch")
    assert available_backends() == ["numpy"]
    assert cuda_available() is False
    assert isinstance(get_backend(np.zeros(2)), NumpyBackend)


def test_available_backends_and_package_exports():
    names = available_backends()
    assert names[0] == "numpy"
    assert set(names) <= {"numpy", "torch"}
    assert accel.get_backend is get_backend
    assert set(accel.__all__) == {"get_backend", "available_backends", "cuda_available"}
    assert B.TORCH_INSTALL_HINT == 'pip install "algos-theory[gpu]" -c constraints.txt'


def test_importing_accel_never_imports_torch():
    # The brief's check (`import accel.backend, sys; assert 'torch' not in sys.modules`), extended to
    # the package, the sweep module and a few numpy-backend calls.
    code = (
        "import accel.backend, sys\n"
        "assert 'torch' not in sys.modules, 'import accel.backend imported torch'\n"
        "import numpy as np, accel, algos.experiments\n"
        "from accel import get_backend, available_backends\n"
        "nx = get_backend(np.zeros(2)); nx.solve(np.eye(2), np.ones(2)); nx.logsumexp(np.zeros(3))\n"
        "available_backends()\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


# ----------------------------------------------------------------------------------------------------
# CUDA (skipped without a device)
# ----------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_cuda_parity_and_devices():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    nx = get_backend(backend="torch", device="cuda")
    assert nx is get_backend(backend="torch", device="cuda:0")
    assert nx is get_backend(backend="torch", device=torch.device("cuda"))
    assert str(nx.device) == "cuda:0"
    assert get_backend(backend="torch") is nx  # device=None -> CUDA when available
    # auto keeps the tensors' device: CPU tensors stay on CPU even with CUDA present
    assert get_backend(torch.zeros(2)).device == torch.device("cpu")
    assert get_backend(torch.zeros(2, device="cuda")) is nx
    with pytest.raises(ValueError, match="All tensors must be on one device; got tensors on cpu, cuda:0"):
        get_backend(torch.zeros(2), torch.zeros(2, device="cuda"))
    z = nx.zeros(3)
    assert z.device.type == "cuda" and z.dtype == torch.float64
    cpu = get_backend(backend="torch", device="cpu")
    assert nx.zeros(2, type_as=torch.zeros(1)).device.type == "cpu"  # type_as carries the device
    assert cpu.zeros(2, type_as=z).device.type == "cuda"
    # cuSOLVER/cuBLAS use other algorithms than LAPACK; the same float64 tolerance holds.
    _assert_parity(get_backend(backend="numpy"), nx, _data(123, 5, 4), "cuda")
    assert nx.to_numpy(nx.exp(nx.asarray([0.0]))).tolist() == [1.0]


@pytest.mark.parametrize("name", ["numpy", "torch"])
def test_copy_and_diagonal_share_no_memory_and_cholesky_ops_invert(name):
    """``copy`` and ``diagonal`` return new arrays; ``cholesky_solve`` / ``cholesky_inverse`` invert A = L L^T."""
    if name == "torch":
        pytest.importorskip("torch")
    nx = get_backend(backend=name, device="cpu")
    d = _convert(nx, _data(3, 4, 2))
    X, spd = d["X"], d["spd"]
    c, g = nx.copy(X), nx.diagonal(spd)
    c[0, 0] += 1.0
    g[0] += 1.0
    assert float(c[0, 0]) == float(X[0, 0]) + 1.0 and float(g[0]) == float(spd[0, 0]) + 1.0
    L = nx.cholesky(spd)
    A = nx.to_numpy(spd)
    assert_allclose(nx.to_numpy(nx.cholesky_inverse(L)) @ A, np.eye(4), atol=1e-12)
    assert_allclose(A @ nx.to_numpy(nx.cholesky_solve(L, d["Bm"])), nx.to_numpy(d["Bm"]), atol=1e-12)


def test_pomdp_ops_layout_and_truth(torch_cpu):
    """``ascontiguousarray`` gives row-major memory on both backends; ``all`` answers through ``bool()``."""
    nx_np = get_backend(backend="numpy")
    X = np.arange(6.0).reshape(2, 3)
    for nx in (nx_np, torch_cpu):
        t = nx.swapaxes(nx.asarray(X), 0, 1)
        c = nx.ascontiguousarray(t)
        assert (c.flags.c_contiguous if nx is nx_np else c.is_contiguous())
        assert_array_equal(nx.to_numpy(c), X.T)
        assert bool(nx.all(nx.asarray(X) >= 0)) and not bool(nx.all(nx.asarray(X) > 0))
        assert nx.to_numpy(nx.reshape(nx.asarray(X), (3, -1))).shape == (3, 2)
