"""Sparse POMDP storage: per-action CSR transitions agree with the dense model everywhere they are used."""

import numpy as np
import pytest
import scipy.sparse

from algos.datasets import load_pomdp, pomdp_names
from algos.pomdp import PBVI, POMDP, PointBasedSolver, rock_sample, tag, tiger
from algos.pomdp._beliefs import blind_policy_values, successors, update
from algos.pomdp._model import DENSE_LIMIT_BYTES, SPARSE_AUTO_BYTES


def _as_sparse(m):
    return POMDP(m.T, m.Z, m.r, m.discount, m.b0, m.states, m.actions, m.observations, tol=m.tol,
                 storage="sparse")


def _small_models():
    out = {"tiger": tiger(), "rock_sample(4,4)": rock_sample(4, 4), "tag": tag()}
    for name in pomdp_names():
        out[name] = load_pomdp(name)
    return out


SMALL = _small_models()


@pytest.fixture(params=sorted(SMALL), scope="module")
def pair(request):
    dense = SMALL[request.param]
    return dense, _as_sparse(dense)


def test_sparse_storage_round_trips(pair):
    dense, sparse = pair
    assert not dense.is_sparse and sparse.is_sparse
    assert isinstance(sparse.T, tuple) and len(sparse.T) == dense.n_actions
    assert all(isinstance(m, scipy.sparse.csr_array) and m.has_sorted_indices for m in sparse.T)
    back = sparse.to_dense()
    assert not back.is_sparse
    np.testing.assert_array_equal(back.T, dense.T)
    assert back == dense and sparse == dense and dense == sparse
    assert sparse.copy() == dense and sparse.copy().is_sparse
    assert dense.to_dense() is dense
    for a in range(dense.n_actions):
        np.testing.assert_array_equal(sparse.transition_csr(a).toarray(), dense.T[a])
        np.testing.assert_array_equal(dense.transition_csr(a).toarray(), dense.T[a])
    assert "storage='sparse'" in repr(sparse) and "storage" not in repr(dense)


def test_sparse_belief_updates_match_dense(pair):
    dense, sparse = pair
    rng = np.random.default_rng(0)
    B = rng.dirichlet(np.ones(dense.n_states), size=4)
    B[0] = dense.b0
    for a in range(dense.n_actions):
        Pd, Bd, zd = successors(dense, B, a)
        Ps, Bs, zs = successors(sparse, B, a)
        np.testing.assert_allclose(Ps, Pd, rtol=0, atol=1e-12)
        np.testing.assert_allclose(Bs, Bd, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(zs, zd)
        o = int(np.argmax(Pd[0]))
        bd, pd = update(dense, dense.b0, a, o)
        bs, ps = update(sparse, dense.b0, a, o)
        np.testing.assert_allclose(bs, bd, rtol=0, atol=1e-12)
        assert abs(ps - pd) <= 1e-12


def test_sparse_point_based_bounds_match_dense(pair):
    dense, sparse = pair
    if dense.discount >= 1.0:  # undiscounted file: both storages refuse the same way
        for m in (dense, sparse):
            with pytest.raises(ValueError, match=r"needs 'discount' < 1"):
                PointBasedSolver(max_trials=5, time_limit=1e6, target_gap=0.0).fit(m)
        return
    np.testing.assert_allclose(blind_policy_values(sparse).vectors, blind_policy_values(dense).vectors,
                               rtol=0, atol=1e-9)
    fits = [PointBasedSolver(max_trials=15, time_limit=1e6, target_gap=0.0, random_state=0).fit(m)
            for m in (dense, sparse)]
    assert fits[0].n_trials_ == fits[1].n_trials_ == 15 or fits[0].converged_
    assert abs(fits[0].lower_bound_ - fits[1].lower_bound_) <= 1e-9
    assert abs(fits[0].upper_bound_ - fits[1].upper_bound_) <= 1e-9
    np.testing.assert_allclose(fits[1].trace_[:, 1:], fits[0].trace_[:, 1:], rtol=0, atol=1e-9)


def test_dense_consumers_accept_small_sparse_models():
    dense = tiger()
    sparse = _as_sparse(dense)
    vd = PBVI(n_beliefs=20, max_iter=500, tol=1e-4, random_state=0).fit(dense).value_
    vs = PBVI(n_beliefs=20, max_iter=500, tol=1e-4, random_state=0).fit(sparse).value_
    assert abs(vd - vs) <= 1e-9
    assert sparse.to_file() == dense.to_file()


def test_auto_storage_rule():
    m = tiger()
    assert not POMDP(m.T, m.Z, m.r, m.discount).is_sparse
    assert POMDP([scipy.sparse.coo_array(t) for t in m.T], m.Z, m.r, m.discount).is_sparse
    assert not POMDP([scipy.sparse.coo_array(t) for t in m.T], m.Z, m.r, m.discount, storage="dense").is_sparse
    assert SPARSE_AUTO_BYTES < DENSE_LIMIT_BYTES
    # RockSample(5, 7): a dense T of 0.92 GiB, above the auto budget, so built sparse; (4, 4) stays dense
    big = rock_sample(5, 7)
    assert big.is_sparse and big.n_states == 3201
    assert not rock_sample(4, 4).is_sparse
    assert rock_sample(4, 4, storage="sparse") == rock_sample(4, 4)


def test_rock_sample_7_8_sparse():
    m = rock_sample(7, 8)
    assert m.is_sparse and m.n_states == 12545 and m.n_actions == 13
    for a in range(m.n_actions):
        Ta = m.transition_csr(a)
        np.testing.assert_allclose(np.asarray(Ta.sum(axis=1)).ravel(), 1.0, rtol=0, atol=1e-12)
        assert (Ta.data >= 0).all() and Ta.nnz == m.n_states
    with pytest.raises(ValueError, match=r"to_dense\(\) of a sparse POMDP \(A=13, S=12545\).*15\.2 GiB"):
        m.to_dense()
    with pytest.raises(ValueError, match=r"15\.2 GiB"):
        PBVI(n_beliefs=5, max_iter=2).fit(m)
    b1, p = update(m, m.b0, 5, 1)  # check_1 from b0
    assert 0 < p < 1 and abs(b1.sum() - 1) < 1e-12
    s = PointBasedSolver(max_trials=5, time_limit=1e6, target_gap=0.0).fit(m)
    assert s.lower_bound_ > s.history_[0, 1] and s.upper_bound_ >= s.lower_bound_
    assert s.alphas_.shape[1] == 12545


def _sparse_T(m):
    return [scipy.sparse.csr_array(t) for t in m.T]


def test_sparse_bad_inputs():
    m = tiger()
    T = _sparse_T(m)
    T[1] = T[1].copy()
    T[1].data[0] = -0.5
    with pytest.raises(ValueError,
                       match=r"'T' must be non-negative; got -0\.5 at T\[1, 0, 0\] \(action 'a1', s='s0'\)"):
        POMDP(T, m.Z, m.r, m.discount)
    T = _sparse_T(m)
    T[2] = scipy.sparse.csr_array(np.array([[0.5, 0.5], [0.5, 0.4]]))
    with pytest.raises(ValueError, match=r"rows of 'T' must sum to 1 .* row T\[2, 1, :\] .* sums to 0\.9"):
        POMDP(T, m.Z, m.r, m.discount)
    T = _sparse_T(m)
    T[0] = scipy.sparse.csr_array(np.eye(3))
    with pytest.raises(ValueError, match=r"'T' must hold A square \(S, S\) matrices of one size"):
        POMDP(T, m.Z, m.r, m.discount)
    T = _sparse_T(m)
    T[0] = scipy.sparse.csr_array(np.array([[np.nan, 1.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match=r"T\[0\]"):
        POMDP(T, m.Z, m.r, m.discount)
    with pytest.raises(TypeError, match=r"sequence of A sparse \(S, S\) matrices"):
        POMDP(scipy.sparse.csr_array(np.eye(2)), m.Z[:1], m.r[:, :1], m.discount)
    with pytest.raises(TypeError, match=r"scipy.sparse matrices only; got ndarray at T\[1\]"):
        POMDP([T[1], np.eye(2)], m.Z[:2], m.r[:, :2], m.discount)
    with pytest.raises(ValueError, match=r"'storage' must be one of"):
        POMDP(m.T, m.Z, m.r, m.discount, storage="csr")
    big = rock_sample(7, 8)
    with pytest.raises(ValueError, match=r"storage='dense' of 'T' \(A=13, S=12545\).*15\.2 GiB \(limit 4 GiB\)"):
        POMDP(big.T, big.Z, big.r, big.discount, big.b0, storage="dense")
    with pytest.raises(ValueError, match=r"RockSample\(7, 8\) has S=12545.*dense T would need 15\.2 GiB"):
        rock_sample(7, 8, storage="dense")


def test_sparse_T_is_read_only():
    s = _as_sparse(tiger())
    with pytest.raises(ValueError, match="read-only"):
        s.T[0].data[0] = 2.0
