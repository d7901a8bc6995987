"""Cores of the POMDP machinery (accel.pomdp, written once against the accel.backend namespace)
against the numba kernels: batched Bayes updates, the PBVI point backup and the sawtooth bound, run on
numpy (the kernels' reference), on CPU torch always and on CUDA when present; PBVI(backend="torch")
against the default backend. Also: importing the package and the accel module never imports torch."""

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given

import accel.pomdp as ap
from accel import get_backend
from algos.pomdp import PBVI, POMDP, _kernels, blind_policy_values
from tests.strategies import pomdps

#: Parity tolerance of values and vectors: both paths compute the same float64 sums in a different
#: order (numba loops vs BLAS/einsum), so they agree to a few ulps times the number of terms.
PARITY_TOL = 1e-12
#: Two alpha vectors (or actions) whose scores at a belief differ by less than this are a near-tie:
#: the two paths may legitimately pick different (equally good, up to round-off) vectors there.
TIE_TOL = 1e-9


def test_importing_the_package_does_not_import_torch():
    code = (
        "import sys; import algos, algos.pomdp, algos.pomdp.solvers._pbvi, algos.pomdp._kernels, accel, accel.pomdp; "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _random_beliefs(rng, n, S):
    B = rng.dirichlet(np.full(S, 0.5), size=n)
    B[: min(n, S)] = np.eye(S)[: min(n, S)]  # corners: observation probabilities can be exactly 0
    return B


NX = get_backend(backend="numpy")


def _sawtooth_by_loops(X, Bu, vu, c):
    """The sawtooth bound (Hauskrecht 2000) written as plain loops over rows, points and states."""
    out = np.empty(len(X))
    for k, x in enumerate(X):
        low = 0.0
        for i, bu in enumerate(Bu):
            ratio = min(x[s] / bu[s] for s in range(len(bu)) if bu[s] > 0)
            low = min(low, min(vu[i] - bu @ c, 0.0) * ratio)
        out[k] = x @ c + low
    return out


# ----------------------------------------------------------------------------- sawtooth
@given(pomdps(with_rng=True))
def test_sawtooth_kernel_core_and_loops_agree(case):
    _, rng = case
    S = int(rng.integers(2, 7))
    Bu = rng.dirichlet(np.full(S, 0.4), size=int(rng.integers(1, 12)))
    Bu[rng.random(Bu.shape) < 0.3] = 0.0
    Bu[:, 0] += 1e-3  # keep every point on the simplex with a non-empty support
    Bu /= Bu.sum(axis=1, keepdims=True)
    X = _random_beliefs(rng, 15, S)
    c = rng.normal(size=S) + 2.0
    vu = Bu @ c - rng.random(len(Bu)) * (rng.random(len(Bu)) < 0.7)  # some points below the corner plane
    kern = _kernels.sawtooth(X, Bu, vu, c)
    np.testing.assert_allclose(kern, _sawtooth_by_loops(X, Bu, vu, c), rtol=0, atol=PARITY_TOL)
    Binv, Bmask, Ud = ap._dense_points(NX, (Bu, np.minimum(vu - Bu @ c, 0.0)), S)
    np.testing.assert_allclose(ap._sawtooth(NX, X, c, Binv, Bmask, Ud), kern, rtol=0, atol=PARITY_TOL)
    # the PointBasedSolver bound is the smaller of the sawtooth and the fast informed bound
    Q = rng.normal(size=(3, S)) + 2.0
    np.testing.assert_allclose(ap._pbs_upper(NX, X, Q, c, Binv, Bmask, Ud), np.minimum(kern, (X @ Q.T).max(axis=1)),
                               rtol=0, atol=PARITY_TOL)


def test_sawtooth_chunking_is_transparent(monkeypatch):
    rng = np.random.default_rng(4)
    S = 6
    X = rng.dirichlet(np.ones(S), size=(4, 5))  # (..., S): leading axes are kept
    Bu = rng.dirichlet(np.full(S, 0.4), size=23)
    c = rng.uniform(1, 2, size=S)
    Binv, Bmask, Ud = ap._dense_points(NX, (Bu, -rng.random(23)), S)
    full = ap._sawtooth(NX, X, c, Binv, Bmask, Ud)
    monkeypatch.setattr(ap, "_MAX_BLOCK", 20 * S * 2)  # 2 points per chunk
    np.testing.assert_array_equal(ap._sawtooth(NX, X, c, Binv, Bmask, Ud), full)
    assert full.shape == (4, 5)
    np.testing.assert_allclose(full.reshape(-1), _sawtooth_by_loops(X.reshape(-1, S), Bu, Ud + Bu @ c, c),
                               rtol=0, atol=PARITY_TOL)


# ----------------------------------------------------------------------------- the cores on numpy
def _run_successors(B, T, Z, where):
    """``belief_successors_torch`` on ``where`` ("numpy": the core on the numpy backend)."""
    if where == "numpy":
        return ap._belief_successors(NX, B, T, Z)
    return ap.belief_successors_torch(B, T, Z, device=where)


def _run_backup(B, alphas, T, Z, r, discount, where):
    """``pbvi_backup_torch`` on ``where`` ("numpy": the core on the numpy backend)."""
    if where == "numpy":
        return ap._pbvi_backup(NX, B, alphas, T, Z, r, discount)
    return ap.pbvi_backup_torch(B, alphas, T, Z, r, discount, device=where)


# ----------------------------------------------------------------------------- belief updates
def _successor_parity(model, B, device):
    T, Z = np.ascontiguousarray(model.T), np.ascontiguousarray(model.Z)
    P, Bn, zero = _run_successors(B, T, Z, device)
    A = T.shape[0]
    assert P.shape == (len(B), A, Z.shape[2]) and Bn.shape == P.shape + (T.shape[1],)
    for a in range(A):
        Pk, Bnk, zk = _kernels.belief_successors(B, T[a], Z[a])
        np.testing.assert_array_equal(zero[:, a], zk)
        np.testing.assert_allclose(P[:, a], Pk, rtol=0, atol=PARITY_TOL)
        np.testing.assert_allclose(Bn[:, a], Bnk, rtol=0, atol=PARITY_TOL)
        # one action (2-d T, Z): the kernel's exact output layout
        P1, Bn1, z1 = _run_successors(B, T[a], Z[a], device)
        np.testing.assert_allclose(P1, Pk, rtol=0, atol=PARITY_TOL)
        np.testing.assert_allclose(Bn1, Bnk, rtol=0, atol=PARITY_TOL)
        np.testing.assert_array_equal(z1, zk)
    # spec §2 item 1: sum_o P(o|b,a) tau(b,a,o) = b T[a] and sum_o P = 1
    np.testing.assert_allclose(np.einsum("nao,naos->nas", P, Bn), np.einsum("ns,ast->nat", B, T), atol=1e-10)
    np.testing.assert_allclose(P.sum(axis=2), 1.0, atol=1e-10)


@given(pomdps(with_rng=True))
def test_numpy_core_successors_equal_numba_on_random_pomdps(case):
    model, rng = case
    _successor_parity(model, _random_beliefs(rng, 9, model.T.shape[1]), "numpy")


# ----------------------------------------------------------------------------- PBVI backup
def _backup_parity(B, alphas, T, Z, r, discount, device):
    """Values agree to round-off everywhere; vectors and actions agree wherever the choice is not a
    near-tie (checked on the margins of the projections). Exact ties (gap 0: e.g. every score 0 when
    P(o|b,a) = 0, or duplicated vectors) are the same sums in both paths, so both take the first."""
    new_k, act_k, val_k = _kernels.pbvi_backup(B, alphas, T, Z, r, discount)
    new_t, act_t, val_t = _run_backup(B, alphas, T, Z, r, discount, device)
    assert new_t.shape == new_k.shape and act_t.dtype == np.int64
    scale = max(1.0, float(np.abs(val_k).max()))
    np.testing.assert_allclose(val_t, val_k, rtol=0, atol=PARITY_TOL * scale)
    np.testing.assert_allclose(np.einsum("ns,ns->n", B, new_t), val_t, rtol=0, atol=PARITY_TOL * scale)
    # margins: a belief is clear when the best action and every best (a, o) alpha win by > TIE_TOL
    G = np.swapaxes(ap._projections(NX, alphas, T, Z), 2, 3)  # (A, O, n, S)
    sc = np.sort(np.einsum("ns,aois->naoi", B, G), axis=3)
    gap = sc[..., -1] - sc[..., -2] if sc.shape[3] > 1 else np.full(sc.shape[:3], np.inf)
    clear_i = np.all((gap > TIE_TOL * scale) | (gap == 0.0), axis=(1, 2))
    cand = r.T[None] + discount * np.take_along_axis(
        G[None], np.einsum("ns,aois->naoi", B, G).argmax(axis=3)[..., None, None], axis=3)[..., 0, :].sum(axis=2)
    va = np.sort(np.einsum("ns,nas->na", B, cand), axis=1)
    clear_a = (va.shape[1] == 1) | (va[:, -1] - va[:, -2] > TIE_TOL * scale)
    clear = clear_i & clear_a
    np.testing.assert_array_equal(act_t[clear], act_k[clear])
    np.testing.assert_allclose(new_t[clear], new_k[clear], rtol=0, atol=PARITY_TOL * scale)
    return clear.mean()


def _backup_case(model, rng):
    T, Z, r = (np.ascontiguousarray(x) for x in (model.T, model.Z, model.r))
    S = T.shape[1]
    alphas = np.vstack([blind_policy_values(model).vectors, rng.uniform(-2, 2, size=(4, S))])
    return _random_beliefs(rng, 12, S), alphas, T, Z, r, model.discount


@given(pomdps(with_rng=True))
def test_numpy_core_backup_equals_numba_on_random_pomdps(case):
    _backup_parity(*_backup_case(*case), "numpy")


torch = pytest.importorskip("torch")
from accel.pomdp import PBVITorchBackup, belief_successors_torch, pbvi_backup_torch  # noqa: E402


# ----------------------------------------------------------------------------- the same cores on CPU torch
@given(pomdps(with_rng=True))
def test_torch_successors_equal_numba_on_random_pomdps(case):
    model, rng = case
    _successor_parity(model, _random_beliefs(rng, 9, model.T.shape[1]), "cpu")


@given(pomdps(with_rng=True))
def test_torch_backup_equals_numba_on_random_pomdps(case):
    _backup_parity(*_backup_case(*case), "cpu")


def test_torch_successors_flag_zero_probability_observations():
    # a deterministic observation: o = state; from a corner the other observation has probability 0
    T = np.array([np.eye(2)])
    Z = np.array([np.eye(2)])
    P, Bn, zero = belief_successors_torch(np.array([[1.0, 0.0]]), T, Z, device="cpu")
    assert zero.tolist() == [[[False, True]]]
    np.testing.assert_array_equal(Bn[0, 0, 1], [1.0, 0.0])  # prior-predicted belief, as the kernel


@pytest.mark.parametrize("name", ["hallway.POMDP", "tiger.95.POMDP"])
def test_torch_backup_equals_numba_on_shared_models(shared_data_dir, name):
    model = POMDP.from_file(shared_data_dir / "pomdp" / name)
    pb = PBVI(n_beliefs=60, max_iter=8, upper="fib", random_state=0).fit(model)
    T, Z, r = (np.ascontiguousarray(x) for x in (model.T, model.Z, model.r))
    B = np.ascontiguousarray(pb.beliefs_)
    frac = _backup_parity(B, np.ascontiguousarray(pb.alphas_), T, Z, r, model.discount, "cpu")
    assert frac > 0.5  # most points are not near-ties, so vector parity is really exercised
    _successor_parity(model, B, "cpu")


def test_torch_backup_chunking_is_transparent(monkeypatch):
    rng = np.random.default_rng(3)
    S, A, O = 5, 3, 4
    T = rng.dirichlet(np.ones(S), size=(A, S))
    Z = rng.dirichlet(np.ones(O), size=(A, S))
    r = rng.uniform(-1, 1, size=(S, A))
    B = rng.dirichlet(np.ones(S), size=50)
    alphas = rng.uniform(-1, 1, size=(7, S))
    full = pbvi_backup_torch(B, alphas, T, Z, r, 0.9, device="cpu")
    monkeypatch.setattr(ap, "_MAX_BLOCK", A * O * 7 * 3)  # 3 beliefs per chunk
    chunked = pbvi_backup_torch(B, alphas, T, Z, r, 0.9, device="cpu")
    for x, y in zip(full, chunked):
        np.testing.assert_array_equal(x, y)


def test_pbvi_torch_backend_equals_default(shared_data_dir):
    model = POMDP.from_file(shared_data_dir / "pomdp" / "4x3.95.POMDP")
    a = PBVI(n_beliefs=40, max_iter=15, random_state=1).fit(model)
    b = PBVI(n_beliefs=40, max_iter=15, random_state=1, backend="torch", device="cpu").fit(model)
    assert b.get_params()["backend"] == "torch"
    # same belief points are generated; values at b0 agree to round-off (ties may pick other vectors)
    np.testing.assert_allclose(b.value_history_, a.value_history_, rtol=0, atol=1e-9)
    assert b.value_ <= b.upper_bound_ + 1e-9


def test_bad_input():
    T = np.array([np.eye(2)])
    Z = np.array([np.eye(2)])
    with pytest.raises(ValueError, match="'Z' must have shape"):
        belief_successors_torch(np.array([[0.5, 0.5]]), T, np.ones((2, 2, 2)) / 2, device="cpu")
    with pytest.raises(ValueError, match="'B' must have shape"):
        belief_successors_torch(np.ones((1, 3)) / 3, T, Z, device="cpu")
    with pytest.raises(ValueError, match="both be 2-d"):
        belief_successors_torch(np.array([[0.5, 0.5]]), T[0], Z, device="cpu")
    with pytest.raises(ValueError, match="finite"):
        belief_successors_torch(np.array([[np.nan, 0.5]]), T, Z, device="cpu")
    with pytest.raises(ValueError, match="'r' must have shape"):
        pbvi_backup_torch(np.array([[0.5, 0.5]]), np.zeros((1, 2)), T, Z, np.zeros((2, 2)), 0.9, device="cpu")
    with pytest.raises(ValueError, match="'alphas' must have shape"):
        pbvi_backup_torch(np.array([[0.5, 0.5]]), np.zeros((1, 3)), T, Z, np.zeros((2, 1)), 0.9, device="cpu")
    with pytest.raises(ValueError, match="discount"):
        pbvi_backup_torch(np.array([[0.5, 0.5]]), np.zeros((1, 2)), T, Z, np.zeros((2, 1)), 1.5, device="cpu")
    with pytest.raises(ValueError, match="device"):
        pbvi_backup_torch(np.array([[0.5, 0.5]]), np.zeros((1, 2)), T, Z, np.zeros((2, 1)), 0.9, device="tpu")
    with pytest.raises(ValueError, match="backend"):
        PBVI(backend="jax").fit(POMDP(T, Z, np.zeros((2, 1)), 0.9))
    with pytest.raises(ValueError, match="discount"):
        PBVITorchBackup(T, Z, np.zeros((2, 1)), -0.1, device="cpu")
    with pytest.raises(ValueError, match=r"'r' must have shape \(2, 1\); got \(3, 1\)"):
        PBVITorchBackup(T, Z, np.zeros((3, 1)), 0.9, device="cpu")


@pytest.mark.gpu
def test_torch_cuda_equals_numba(shared_data_dir):
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    model = POMDP.from_file(shared_data_dir / "pomdp" / "hallway.POMDP")
    pb = PBVI(n_beliefs=60, max_iter=8, upper="fib", random_state=0).fit(model)
    T, Z, r = (np.ascontiguousarray(x) for x in (model.T, model.Z, model.r))
    B = np.ascontiguousarray(pb.beliefs_)
    _backup_parity(B, np.ascontiguousarray(pb.alphas_), T, Z, r, model.discount, "cuda")
    _successor_parity(model, B, "cuda")
    rng = np.random.default_rng(0)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        S, A, O = 6, 3, 4
        m = POMDP(rng.dirichlet(np.full(S, 0.5), size=(A, S)), rng.dirichlet(np.full(O, 0.5), size=(A, S)),
                  rng.uniform(-1, 1, size=(S, A)), 0.9)
        alphas = np.vstack([blind_policy_values(m).vectors, rng.uniform(-2, 2, size=(4, S))])
        _backup_parity(_random_beliefs(rng, 20, S), alphas, m.T, m.Z, m.r, m.discount, "cuda")
        _successor_parity(m, _random_beliefs(rng, 20, S), "cuda")
