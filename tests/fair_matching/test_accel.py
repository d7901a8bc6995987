"""The torch path of HybridRanking (accel.fair_matching) against the numba kernel: exact parity
(same matches, same state) on CPU, and on CUDA when one is present. Also: importing the package
never imports torch."""

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal

from algos.fair_matching import random_instance, sparse_random_instance
from algos.fair_matching._indivisible import HybridRanking
from algos.fair_matching._ranking_kernels import hybrid_ranking_batch
from tests.strategies import SEEDS, gammas


def test_importing_the_package_does_not_import_torch():
    code = (
        "import sys; import algos, algos.fair_matching, algos.fair_matching._indivisible, "
        "algos.fair_matching._ranking_kernels, accel, accel.fair_matching; "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


torch = pytest.importorskip("torch")
from accel.fair_matching import hybrid_ranking_batched  # noqa: E402


def _both(inst, gamma, rule, R, seed, *, ties=False, busy=False, util_dtype=np.int64, device="cpu"):
    """Run the numba kernel and the torch path from the same inputs; return both results."""
    rng = np.random.default_rng(seed)
    n, k, m = inst.n_agents, inst.n_classes, inst.n_items
    ranks = rng.integers(0, 4, size=(R, n)) / 4.0 if ties else rng.random((R, n))
    keys = rng.random((m, R))
    matched = (rng.random((R, n)) < 0.3).astype(np.uint8) if busy else np.zeros((R, n), np.uint8)
    util = (rng.integers(0, 3, size=(R, k)) if busy else np.zeros((R, k))).astype(util_dtype)
    args = (inst.indptr, inst.indices, inst.agent_class, k, gamma, rule, ranks, keys)
    m1, u1 = matched.copy(), util.copy()
    a = hybrid_ranking_batch(*args, m1, u1)
    m2, u2 = matched.copy(), util.copy()
    b = hybrid_ranking_batched(*args, m2, u2, device=device)
    return (a, m1, u1), (b, m2, u2)


def _assert_same(x, y):
    for got, ref, what in zip(y, x, ("matches", "matched flags", "class utilities")):
        assert isinstance(got, np.ndarray)
        assert_array_equal(got, ref, err_msg=what)


@settings(max_examples=30)
@given(
    n=st.integers(2, 8),
    m=st.integers(0, 10),
    k=st.integers(2, 4),
    p=st.floats(0.2, 0.9),
    gamma=gammas(),
    rule=st.sampled_from([0, 1]),
    R=st.integers(1, 40),
    ties=st.booleans(),
    busy=st.booleans(),
    float_util=st.booleans(),
    seed=SEEDS,
)
def test_torch_cpu_equals_numba(n, m, k, p, gamma, rule, R, ties, busy, float_util, seed):
    inst = random_instance(n, m, n_classes=min(k, n), p=p, random_state=seed)
    x, y = _both(inst, gamma, rule, R, seed, ties=ties, busy=busy,
                 util_dtype=np.float64 if float_util else np.int64)
    _assert_same(x, y)


@pytest.mark.parametrize("gamma", [0.0, 0.3, 0.7, 1.0])
@pytest.mark.parametrize("rule", ["min_utility", "random_class"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_torch_cpu_equals_numba_medium(gamma, rule, seed):
    """More agents, classes and degree than the Hypothesis cases (40 agents, 6 classes, 120 items)."""
    inst = sparse_random_instance(40, 120, n_classes=6, avg_degree=6.0, random_state=seed)
    x, y = _both(inst, gamma, rule, 25, seed)
    _assert_same(x, y)


@pytest.mark.parametrize("rule", ["min_utility", "random_class"])
def test_estimator_torch_backend_equals_numpy(rule):
    inst = random_instance(8, 30, n_classes=3, p=0.4, random_state=3)
    a = HybridRanking(gamma=0.6, fair_rule=rule, n_runs=50, backend="numpy", random_state=4).fit(inst)
    b = HybridRanking(gamma=0.6, fair_rule=rule, n_runs=50, backend="torch", device="cpu", random_state=4).fit(inst)
    assert b.backend_ == "torch"
    assert_array_equal(b.matches_, a.matches_)
    assert_array_equal(b.allocation_.toarray(), a.allocation_.toarray())
    # online use on the torch backend: chunked partial_fit equals fit
    c = HybridRanking(gamma=0.6, fair_rule=rule, n_runs=50, backend="torch", device="cpu", random_state=4)
    items = inst.item_neighbors
    c.partial_fit(items[:7], agent_class=inst.agent_class)
    c.partial_fit(items[7:8])
    c.partial_fit(items[8:])
    assert_array_equal(c.matches_, a.matches_)


def test_fair_rule_names_and_bad_device():
    inst = random_instance(5, 6, n_classes=2, p=0.5, random_state=0)
    x, y = _both(inst, 0.5, 1, 3, 0)
    rng = np.random.default_rng(0)
    ranks, keys = rng.random((3, 5)), rng.random((6, 3))
    b = hybrid_ranking_batched(inst.indptr, inst.indices, inst.agent_class, 2, 0.5, "random_class", ranks, keys,
                               np.zeros((3, 5), np.uint8), np.zeros((3, 2), np.int64), device="cpu")
    assert_array_equal(b, y[0])
    with pytest.raises(ValueError, match="fair_rule"):
        hybrid_ranking_batched(inst.indptr, inst.indices, inst.agent_class, 2, 0.5, "fairest", ranks, keys,
                               np.zeros((3, 5), np.uint8), np.zeros((3, 2), np.int64), device="cpu")
    with pytest.raises(ValueError, match="device"):
        hybrid_ranking_batched(inst.indptr, inst.indices, inst.agent_class, 2, 0.5, 0, ranks, keys,
                               np.zeros((3, 5), np.uint8), np.zeros((3, 2), np.int64), device="tpu")


def test_backend_auto_rule():
    # "auto" follows accel.backend.resolve: numpy input and no accelerator device -> the CPU path,
    # whatever the number of runs and whether CUDA is present; device="cuda" -> torch
    inst = random_instance(5, 6, n_classes=2, p=0.5, random_state=0)
    est = HybridRanking(n_runs=1000, random_state=0).fit(inst)
    assert est.backend_ == "numpy"
    if torch.cuda.is_available():
        assert HybridRanking(n_runs=10, device="cuda", random_state=0).fit(inst).backend_ == "torch"


@pytest.mark.gpu
@pytest.mark.parametrize("gamma", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("rule", [0, 1])
def test_torch_cuda_equals_numba(gamma, rule):
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    for seed in range(3):
        inst = sparse_random_instance(60, 200, n_classes=5, avg_degree=5.0, random_state=seed)
        x, y = _both(inst, gamma, rule, 257, seed, device="cuda")
        _assert_same(x, y)
        small = random_instance(6, 10, n_classes=3, p=0.6, random_state=seed)
        x, y = _both(small, gamma, rule, 64, seed, ties=True, busy=True, device="cuda")
        _assert_same(x, y)
