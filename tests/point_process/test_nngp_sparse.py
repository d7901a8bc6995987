"""NNGP prior (spec T9), Woodbury, sparse Cholesky and the Takahashi selected inverse vs dense."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import cdist

from algos.point_process import SparseCholesky, matern, nngp_precision, woodbury_solve
from algos.point_process._kernels import nngp_rows
from algos.point_process._nngp import JITTER, nngp_neighbors, node_ordering
from algos.point_process._reference import nngp_rows_reference, selected_inverse_reference
from algos.point_process._sparse import dense_selected

#: k = N - 1 NNGP vs the dense inverse: conditioning of K (~1e4 here) times round-off (spec: 1e-6).
FULL_K_TOL = 1e-6
#: Cholesky / selected inverse vs LAPACK on well-conditioned matrices: round-off.
LINALG_TOL = 1e-10


def _dense_K(X, variance, phi, nu):
    return variance * (matern(cdist(X, X), phi, nu) + JITTER * np.eye(len(X)))


@pytest.mark.parametrize("nu", [0.5, 1.5])
@pytest.mark.parametrize("ordering", ["coord", "maxmin", "random"])
def test_full_neighbours_is_dense_gp_T9(nu, ordering):
    X = np.random.default_rng(0).uniform(size=(90, 2))
    K = _dense_K(X, 1.7, 0.3, nu)
    f = nngp_precision(X, n_neighbors=89, ordering=ordering, nu=nu, variance=1.7, length_scale=0.3, random_state=0)
    Kinv = np.linalg.inv(K)
    assert np.max(np.abs(f.Q.toarray() - Kinv)) <= FULL_K_TOL * np.max(np.abs(Kinv))
    assert f.logdet == pytest.approx(np.linalg.slogdet(K)[1], abs=FULL_K_TOL)
    B = f.B.toarray()
    assert np.allclose(f.Q.toarray(), B.T @ np.diag(1 / f.F) @ B)


def test_kl_non_increasing_in_k_T9():
    X = np.random.default_rng(1).uniform(size=(100, 2))
    K = _dense_K(X, 1.0, 0.2, 0.5)
    kls = []
    for k in (1, 2, 4, 8, 16, 32):
        Q = nngp_precision(X, n_neighbors=k, variance=1.0, length_scale=0.2).Q.toarray()
        # KL(N(0,K) || N(0, Q^-1))
        kls.append(0.5 * (np.trace(Q @ K) - len(X) - np.linalg.slogdet(Q)[1] - np.linalg.slogdet(K)[1]))
    assert np.all(np.diff(kls) <= 1e-9)
    assert kls[-1] < 1e-2 < kls[0]


def test_neighbours_are_earlier_and_nearest():
    X = np.random.default_rng(2).uniform(size=(300, 2))
    order = node_ordering(X, "coord")
    nbr, cnt = nngp_neighbors(X, order, 10)
    rank = np.empty(300, dtype=int)
    rank[order] = np.arange(300)
    for i in range(300):
        J = nbr[i, : cnt[i]]
        assert cnt[i] == min(10, rank[i])
        assert np.all(rank[J] < rank[i])
        earlier = np.flatnonzero(rank < rank[i])
        d = np.hypot(*(X[earlier] - X[i]).T)
        assert set(J) == set(earlier[np.argsort(d)[: cnt[i]]])


def test_nngp_rows_kernel_matches_reference():
    X = np.random.default_rng(3).uniform(size=(150, 2))
    order = node_ordering(X, "coord")
    nbr, cnt = nngp_neighbors(X, order, 8)
    A, F = nngp_rows(X, nbr, cnt, 0.2, 1, 1e-8)
    A2, F2 = nngp_rows_reference(X, nbr, cnt, lambda d: matern(d, 0.2, 1.5), 1e-8)
    assert np.allclose(A, A2, atol=1e-9) and np.allclose(F, F2, atol=1e-12)


def test_woodbury_dense_form_T9():
    rng = np.random.default_rng(4)
    X = rng.uniform(size=(60, 2))
    K = _dense_K(X, 2.0, 0.2, 0.5)
    lam = rng.uniform(0, 5, 60)
    b = rng.normal(size=(60, 3))
    direct = np.linalg.solve(np.linalg.inv(K) + np.diag(lam), b)
    got = woodbury_solve(b, K=K, diag=lam)
    assert np.max(np.abs(got - direct)) <= LINALG_TOL * np.max(np.abs(direct)) * 1e3


def test_woodbury_nugget_form_T9():
    rng = np.random.default_rng(5)
    X = rng.uniform(size=(80, 2))
    f = nngp_precision(X, n_neighbors=10, variance=1.0, length_scale=0.2)
    Kt = np.linalg.inv(f.Q.toarray())
    b = rng.normal(size=80)
    direct = np.linalg.solve(Kt + 0.3 * np.eye(80), b)
    got = woodbury_solve(b, Q=f.Q, diag=None, nugget=0.3)
    assert np.max(np.abs(got - direct)) <= 1e-9 * np.max(np.abs(direct))


@pytest.mark.parametrize("ordering", ["nd", "rcm", "natural"])
def test_sparse_cholesky_and_takahashi_vs_dense(ordering):
    rng = np.random.default_rng(6)
    X = rng.uniform(size=(500, 2))
    f = nngp_precision(X, n_neighbors=10, variance=1.3, length_scale=0.15)
    P = (f.Q + sp.diags(rng.uniform(0, 20, 500))).tocsr()
    P.sort_indices()
    fac = SparseCholesky(P, coords=X, ordering=ordering).factor(P.data)
    S, ld = dense_selected(P)
    assert fac.logdet() == pytest.approx(ld, abs=1e-8)
    assert np.max(np.abs(fac.diag_inverse() - np.diag(S))) <= LINALG_TOL * np.max(np.diag(S))
    b = rng.normal(size=500)
    assert np.max(np.abs(fac.solve(b) - S @ b)) <= 1e-8
    rows = np.repeat(np.arange(500), np.diff(P.indptr))
    ref = selected_inverse_reference(P, rows, P.indices)
    assert np.max(np.abs(fac.inverse_on_pattern() - ref)) <= LINALG_TOL * np.max(np.abs(ref))


def test_nested_dissection_reduces_fill():
    X = np.random.default_rng(7).uniform(size=(3000, 2))
    f = nngp_precision(X, n_neighbors=10, variance=1.0, length_scale=0.1)
    nd = SparseCholesky(f.Q, coords=X, ordering="nd").nnz_L
    nat = SparseCholesky(f.Q, coords=X, ordering="natural").nnz_L
    assert nd < 0.5 * nat


def test_sparse_cholesky_rejects_indefinite():
    P = sp.csr_matrix(np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(np.linalg.LinAlgError):
        SparseCholesky(P, ordering="natural").factor(P.data)
