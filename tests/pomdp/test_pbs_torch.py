"""PointBasedSolver's torch backend (accel.pomdp.PBSTorchBackup) against the numba kernels: one
backup at a belief (node values, backed-up vector, H U(b)) on random models, vectors and sawtooth
points, by the same core on numpy (the kernels' reference) and on CPU torch; whole solver runs
(same trials, same bounds) on the shared models; bad backend/device values and a missing PyTorch name
the parameter / the extra."""

import numpy as np
import pytest
from hypothesis import given, settings

import accel.pomdp as ap
from accel import get_backend
from algos.pomdp import PointBasedSolver, read_pomdp, tiger
from algos.pomdp.solvers import _pbs_kernels as _k
from algos.pomdp.solvers._pbs_engines import witnesses_csr
from tests.strategies import pomdps

PARITY_TOL = 1e-12  # same float64 sums in another order
TIE_TOL = 1e-9      # choices closer than this may legitimately differ between the two paths


def test_bad_backend_and_missing_torch(monkeypatch):
    with pytest.raises(ValueError, match="'backend'"):
        PointBasedSolver(backend="jax").fit(tiger())
    import accel.backend

    monkeypatch.setattr(accel.backend, "available_backends", lambda: ("numpy",))
    with pytest.raises(ImportError, match="gpu"):
        PointBasedSolver(backend="torch").fit(tiger())
    assert PointBasedSolver(backend="numba", device="ignored", max_trials=2).fit(tiger()).n_trials_ == 2


def _numba_state(model, alphas, Bu, vu, Q, c):
    """The numba update's arrays for the given vectors and points (CSR, masks, dense inverses)."""
    S = model.T.shape[1]
    cap = len(alphas) + 2
    ALT = np.zeros((S, cap))
    ALT[:, :len(alphas)] = alphas.T
    n = len(Bu)
    ptr = np.zeros(n + 2, np.int64)
    idx, val = np.zeros((n + 1) * S, np.int64), np.zeros((n + 1) * S)
    mask = np.zeros((n + 1, (S + 63) // 64), np.uint64)
    inv_t = np.full((S, n + 1), np.inf)
    k = 0
    for i, row in enumerate(Bu):
        for s in np.flatnonzero(row > 0):
            idx[k], val[k] = s, row[s]
            mask[i, s >> 6] |= np.uint64(1) << np.uint64(s & 63)
            inv_t[s, i] = 1.0 / row[s]
            k += 1
        ptr[i + 1] = k
    inv = np.where(val > 0, 1.0 / np.where(val > 0, val, 1.0), 0.0)
    Ud = np.zeros(n + 1)
    Ud[:n] = np.minimum(vu - Bu @ c, 0.0)
    Uv = np.zeros(n + 1)
    Uv[:n] = vu
    return ALT, ptr, idx, val, inv, Ud, Uv, mask, inv_t


def _backup_equals_numba_update(case, where):
    """One backup at a random belief by the PBS core on ``where`` ("numpy": the core on the numpy
    backend, else a torch device) against the numba ``update``."""
    model, rng = case
    T, Z, r, g = model.T, np.ascontiguousarray(model.Z), np.ascontiguousarray(model.r), model.discount
    A, S, _ = T.shape
    O = Z.shape[2]
    alphas = rng.uniform(-3, 1, size=(int(rng.integers(1, 6)), S))
    Q = rng.uniform(2, 4, size=(A, S))
    c = Q.max(axis=0)
    Bu = rng.dirichlet(np.full(S, 0.5), size=int(rng.integers(0, 6)))
    Bu[rng.random(Bu.shape) < 0.3] = 0.0
    Bu[:, 0] += 1e-3
    Bu /= np.maximum(Bu.sum(axis=1, keepdims=True), 1e-300)
    vu = Bu @ c - rng.uniform(0, 1, size=len(Bu))
    b = rng.dirichlet(np.full(S, 0.7)) * (rng.random(S) < 0.8)
    b[int(rng.integers(S))] += 0.1
    b /= b.sum()
    ALT, ptr, idx, val, inv, Ud, Uv, mask, inv_t = _numba_state(model, alphas, Bu, vu, Q, c)
    nA0, nU0 = len(alphas), len(Bu)
    bufs = (np.zeros((A, O)), np.zeros((A, O)), np.zeros((A, O)), np.zeros((A, O), np.int64), np.zeros(A))
    work = (np.zeros(S), np.zeros(S), np.zeros(S, np.int8), np.zeros(S, np.int64), np.zeros(S, np.int64))
    Tptr, Tidx, Tval = _k.sparse_model(T)
    WB = witnesses_csr(np.zeros((nA0 + 2, S)))
    nA, nU = _k.update(b, Tptr, Tidx, Tval, Z, r, g, ALT, np.zeros(nA0 + 2, np.int64), WB, nA0,
                       Q, c, ptr, idx, val, inv, Ud, Uv, mask, inv_t, nU0, *bufs, work, np.zeros(S), np.zeros(S),
                       np.zeros(S, np.int64), np.zeros(nA0 + nU0 + 2))
    P_k, LV_k, UV_k, LI_k, QU_k = bufs
    points = (Bu, Ud[:nU0]) if nU0 else None
    if where == "numpy":
        vec, a, v, hu, node = ap._pbs_backup(get_backend(backend="numpy"), b, alphas, T, Z, r, g, Q, c, points)
    else:
        vec, a, v, hu, node = ap.pbs_backup_torch(b, alphas, T, Z, r, g, Q, c, points=points, device=where)
    scale = max(1.0, float(np.abs(QU_k).max()), float(np.abs(alphas).max()))
    for key, ref in (("P", P_k), ("LV", LV_k), ("UV", UV_k), ("QU", QU_k)):
        np.testing.assert_allclose(node[key], ref, rtol=0, atol=PARITY_TOL * scale, err_msg=key)
    # the best sub-plan per (a, o) wherever it is not a near-tie
    X = np.einsum("s,ast->at", b, T)[:, None, :] * np.transpose(Z, (0, 2, 1))
    sc = np.sort(X @ alphas.T, axis=2)
    clear = (np.ones(sc.shape[:2], bool) if sc.shape[2] == 1
             else sc[..., -1] - sc[..., -2] > TIE_TOL * scale)
    np.testing.assert_array_equal(node["LI"][clear], LI_k[clear])
    assert abs(hu - max(float(QU_k.max()), v)) <= PARITY_TOL * scale
    lb = float((alphas @ b).max())
    if nA == nA0 + 1:  # the kernel appended the backup: torch finds the same vector and value
        np.testing.assert_allclose(vec, ALT[:, nA0], rtol=0, atol=1e-10 * scale)
        assert abs(v - float(b @ ALT[:, nA0])) <= 1e-10 * scale and v > lb
    else:
        assert v <= lb + 1e-10 * scale
    if nU == nU0 + 1:  # the kernel appended (b, H U(b)): torch's H U(b) is the same number
        assert abs(Uv[nU0] - hu) <= PARITY_TOL * scale


@settings(max_examples=40)
@given(pomdps(max_states=6, with_rng=True))
def test_numpy_core_backup_equals_numba_update(case):
    _backup_equals_numba_update(case, "numpy")


torch = pytest.importorskip("torch")
from accel.pomdp import PBSTorchBackup, pbs_backup_torch  # noqa: E402


def test_bad_device():
    with pytest.raises(ValueError, match="device"):
        PointBasedSolver(backend="torch", device="tpu").fit(tiger())


@settings(max_examples=40)
@given(pomdps(max_states=6, with_rng=True))
def test_torch_backup_equals_numba_update(case):
    _backup_equals_numba_update(case, "cpu")


@pytest.mark.parametrize("name, trials", [("tiger.95.POMDP", 30), ("4x3.95.POMDP", 30), ("shuttle.95.POMDP", 20),
                                          ("cheese.95.POMDP", 20)])
def test_torch_solver_runs_the_same_search(shared_data_dir, name, trials):
    """A fixed number of trials: the torch backend makes the same choices as the numba one on these
    models (no near-ties), so the histories of both bounds agree to round-off and the vector sets
    match."""
    model = read_pomdp(shared_data_dir / "pomdp" / name)
    a = PointBasedSolver(time_limit=600.0, target_gap=0.0, max_trials=trials).fit(model)
    b = PointBasedSolver(time_limit=600.0, target_gap=0.0, max_trials=trials, backend="torch", device="cpu").fit(model)
    assert b.get_params()["backend"] == "torch" and b.n_trials_ == a.n_trials_
    assert b.n_backups_ == a.n_backups_
    np.testing.assert_allclose(b.trace_[:, 1:], a.trace_[:, 1:], rtol=0, atol=1e-9)
    np.testing.assert_allclose(b.alphas_, a.alphas_, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(b.actions_, a.actions_)
    np.testing.assert_allclose(b.upper_points_[1], a.upper_points_[1], rtol=0, atol=1e-9)
    assert b.lower_bound_ <= b.upper_bound_


def test_torch_backup_class_checks_its_model():
    T = np.array([np.eye(2)])
    Z = np.array([np.eye(2)])
    with pytest.raises(ValueError, match="'r' must have shape"):
        PBSTorchBackup(T, Z, np.zeros((3, 1)), 0.9, device="cpu")
    with pytest.raises(ValueError, match="discount"):
        PBSTorchBackup(T, Z, np.zeros((2, 1)), 1.5, device="cpu")
    with pytest.raises(ValueError, match="'alphas' must have shape"):
        pbs_backup_torch(np.array([0.5, 0.5]), np.zeros((1, 3)), T, Z, np.zeros((2, 1)), 0.9, np.zeros((1, 2)),
                         np.zeros(2), device="cpu")


@pytest.mark.gpu
def test_torch_solver_on_cuda_runs_the_same_search(shared_data_dir):
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    for name in ("4x3.95.POMDP", "hallway.POMDP"):
        model = read_pomdp(shared_data_dir / "pomdp" / name)
        a = PointBasedSolver(time_limit=600.0, target_gap=0.0, max_trials=10).fit(model)
        b = PointBasedSolver(time_limit=600.0, target_gap=0.0, max_trials=10, backend="torch", device="cuda").fit(model)
        np.testing.assert_allclose(b.trace_[:, 1:], a.trace_[:, 1:], rtol=0, atol=1e-9)
