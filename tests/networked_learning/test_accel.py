"""torch cores of networked_learning (accel.networked_learning) against the numpy path; CPU always,
CUDA when present. Also: importing the package and the accel module never imports torch."""

import subprocess
import sys

import numpy as np
import pytest
from numpy.testing import assert_allclose

from algos.networked_learning._sketch import make_sketch

# different summation order (chunked GEMM vs the column-wise kernel): round-off ~1e-16 * sqrt(m)
PARITY_RTOL = 1e-12


def test_importing_does_not_import_torch():
    code = (
        "import sys; import algos, accel, accel.networked_learning, algos.networked_learning._sketch, "
        "algos.networked_learning._kernels; assert 'torch' not in sys.modules, 'torch was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


torch = pytest.importorskip("torch")
from accel.networked_learning import batched_lstsq, gaussian_sketch_apply_torch  # noqa: E402


def _check_sketch_parity(device):
    rng = np.random.default_rng(1)
    for m, k, p, chunk in [(1, 1, 1, 8192), (257, 9, 3, 64), (5000, 40, 6, 1000)]:
        A = rng.standard_normal((m, p))
        ref = make_sketch("gaussian", k, m, 5, chunk=chunk).apply(A)
        out = gaussian_sketch_apply_torch(k, m, 5, A, chunk=chunk, device=device)
        atol = PARITY_RTOL * np.sqrt(m) * np.abs(A).max()
        assert_allclose(out, ref, rtol=PARITY_RTOL, atol=atol, err_msg=f"m={m} k={k}")
        assert_allclose(gaussian_sketch_apply_torch(k, m, 5, A[:, 0], chunk=chunk, device=device), ref[:, 0],
                        rtol=PARITY_RTOL, atol=atol)


def _problems(rng):
    As, bs = [], []
    for n, p in [(30, 4), (30, 4), (12, 7), (30, 4), (5, 9)]:  # tall, wide (underdetermined)
        As.append(rng.standard_normal((n, p)))
        bs.append(rng.standard_normal(n))
    As[1][:, 3] = 2.0 * As[1][:, 0]  # rank-deficient: duplicate (scaled) column
    As.append(np.zeros((6, 2)))
    bs.append(rng.standard_normal((6, 2)))
    return As, bs


def _check_lstsq_parity(device):
    rng = np.random.default_rng(2)
    As, bs = _problems(rng)
    sols = batched_lstsq(As, bs, device=device)
    for A, b, x in zip(As, bs, sols):
        ref = np.linalg.lstsq(A, b, rcond=None)[0]
        assert x.shape == ref.shape
        assert_allclose(x, ref, rtol=1e-9, atol=1e-10)
    stack_A = np.stack([rng.standard_normal((20, 3)) for _ in range(4)])
    stack_b = rng.standard_normal((4, 20))
    X = batched_lstsq(stack_A, stack_b, device=device)
    assert X.shape == (4, 3)
    assert_allclose(X, [np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(stack_A, stack_b)], rtol=1e-10, atol=1e-12)


def test_gaussian_sketch_torch_cpu_matches_numpy():
    _check_sketch_parity("cpu")


def test_batched_lstsq_cpu_min_norm():
    _check_lstsq_parity("cpu")


def test_bad_input():
    with pytest.raises(ValueError, match="same number of problems"):
        batched_lstsq([np.ones((2, 2))], [], device="cpu")
    with pytest.raises(ValueError, match=r"'bs\[0\]' must have shape \(2,\)"):
        batched_lstsq([np.ones((2, 2))], [np.ones(3)], device="cpu")
    with pytest.raises(ValueError, match="'A' must have shape"):
        gaussian_sketch_apply_torch(3, 10, 0, np.ones(4), device="cpu")
    with pytest.raises(ValueError, match="'k' must be an int"):
        gaussian_sketch_apply_torch(0, 10, 0, np.ones(10), device="cpu")


@pytest.mark.gpu
def test_cuda_matches_numpy():
    _check_sketch_parity("cuda")
    _check_lstsq_parity("cuda")


def test_estimator_torch_backend_equals_numpy():
    """NetworkedDAGRegressor(backend="torch") applies the same Gaussian sketch with torch: the
    fitted network is the numpy one up to float round-off (1e-10)."""
    pytest.importorskip("torch")
    from algos.networked_learning import NetworkedDAGRegressor, cyclic_allocation, make_path

    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 8))
    y = X @ np.ones(8) + rng.standard_normal(3000)
    G = make_path(16)
    fs = cyclic_allocation(G, 8)
    a = NetworkedDAGRegressor(graph=G, feature_sets=fs, protocol="sketch", k=200, random_state=0).fit(X, y)
    b = NetworkedDAGRegressor(graph=G, feature_sets=fs, protocol="sketch", k=200, random_state=0,
                              backend="torch", device="cpu").fit(X, y)
    assert (a.backend_, b.backend_) == ("numpy", "torch")
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=0, atol=1e-10)
