"""accel.federated (batched clients as one torch tensor) against the numba path of algos.federated,
on CPU torch always and on CUDA when present; importing never imports torch."""

import subprocess
import sys

import numpy as np
import pytest
from numpy.testing import assert_allclose

from algos.federated import fedavg_round, init_params, local_train, merge_lora


def test_importing_does_not_import_torch():
    code = ("import sys, algos, accel, accel.federated, algos.federated, algos.federated._kernels; "
            "assert 'torch' not in sys.modules and 'flwr' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


torch = pytest.importorskip("torch")
from accel.federated import fedavg_round_batched, merge_lora_batched, train_clients_batched  # noqa: E402

# float64 both ways; bmm/softmax vs the kernel's loops differ only in summation order (~1e-16 per op),
# accumulated over <= 10 GD steps
PARITY_ATOL = 1e-11


def _clients(seed, M=5, d=6, C=4):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(n, d)), rng.integers(0, C, n)) for n in rng.integers(2, 15, M)], rng


@pytest.mark.parametrize("rank", [0, 3])
def test_fedavg_round_batched_equals_numba_round(rank):
    data, rng = _clients(0)
    g = init_params(6, 4, rank=rank, random_state=rng)
    g["W"] = 0.1 * rng.normal(size=g["W"].shape)
    if rank:
        g["B"] = 0.1 * rng.normal(size=g["B"].shape)
    w = [len(y) for _, y in data]
    kw = dict(n_classes=4, epochs=7, lr=0.4, l2=1e-3, trainable=("b", "A", "B") if rank else None)
    a = fedavg_round_batched(g, data, w, device="cpu", **kw)
    b = fedavg_round(g, data, w, **kw)
    for k in g:
        assert_allclose(a[k], b[k], atol=PARITY_ATOL, err_msg=k)


def test_train_clients_batched_per_client_starts():
    data, rng = _clients(1, M=3)
    starts = [{"W": 0.1 * rng.normal(size=(6, 4)), "b": rng.normal(size=4)} for _ in data]
    got = train_clients_batched(starts, data, n_classes=4, epochs=5, lr=0.3, device="cpu")
    for s, (X, y), p in zip(starts, data, got):
        ref = local_train(s, X, y, n_classes=4, epochs=5, lr=0.3)
        for k in s:
            assert_allclose(p[k], ref[k], atol=PARITY_ATOL)


def test_merge_lora_batched_equals_merge_lora():
    rng = np.random.default_rng(2)
    M, d, r, C = 4, 5, 2, 3
    Af, Bf = rng.normal(size=(d, r)), rng.normal(size=(r, C))
    Al, Bl = rng.normal(size=(M, d, r)), rng.normal(size=(M, r, C))
    lam = rng.uniform(size=M)
    got = merge_lora_batched(Af, Bf, Al, Bl, lam, device="cpu")
    for m in range(M):
        A, B = merge_lora(Af, Bf, Al[m], Bl[m], lam[m])
        assert_allclose(got[m], A @ B, atol=1e-13)


def test_bad_input():
    data, _ = _clients(3, M=2)
    with pytest.raises(ValueError, match="weights"):
        fedavg_round_batched(init_params(6, 4), data, [1.0], n_classes=4, epochs=1, lr=0.1, device="cpu")
    with pytest.raises(ValueError, match="lam"):
        merge_lora_batched(np.ones((2, 1)), np.ones((1, 2)), np.ones((1, 2, 1)), np.ones((1, 1, 2)), 1.5, device="cpu")


@pytest.mark.gpu
def test_cuda_parity():
    data, rng = _clients(4)
    g = init_params(6, 4, rank=2, random_state=rng)
    w = [len(y) for _, y in data]
    a = fedavg_round_batched(g, data, w, n_classes=4, epochs=5, lr=0.4, device="cuda")
    b = fedavg_round(g, data, w, n_classes=4, epochs=5, lr=0.4)
    for k in g:
        assert_allclose(a[k], b[k], atol=PARITY_ATOL)
