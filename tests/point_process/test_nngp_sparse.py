"""NNGP prior (spec T9), Woodbury, sparse Cholesky and the Takahashi selected inverse vs dense."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import cdist

from accel.point_process import DenseTorchFactor, nngp_rows_batched
from algos.point_process import SparseCholesky, matern, nngp_precision, woodbury_solve
from algos.point_process._kernels import nngp_rows
from algos.point_process._sparse import dense_selected
from algos.point_process.vogcam._nngp import JITTER, nngp_neighbors, node_ordering

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
    A2, F2 = nngp_rows_batched(X, nbr, cnt, 0.2, nu=1.5, jitter=1e-8, backend="numpy")  # the nx core on numpy
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


@pytest.mark.parametrize("method", ["supernodal", "column"])
@pytest.mark.parametrize("ordering", ["nd", "rcm", "natural"])
def test_sparse_cholesky_and_takahashi_vs_dense(ordering, method):
    rng = np.random.default_rng(6)
    X = rng.uniform(size=(500, 2))
    f = nngp_precision(X, n_neighbors=10, variance=1.3, length_scale=0.15)
    P = (f.Q + sp.diags(rng.uniform(0, 20, 500))).tocsr()
    P.sort_indices()
    fac = SparseCholesky(P, coords=X, ordering=ordering, method=method).factor(P.data)
    if method == "supernodal":  # the test must exercise real blocks, not 500 one-column supernodes
        assert fac.n_supernodes < 250
        assert fac.n_stored >= fac.nnz_L
    S, ld = dense_selected(P)
    assert fac.logdet() == pytest.approx(ld, abs=1e-8)
    assert np.max(np.abs(fac.diag_inverse() - np.diag(S))) <= LINALG_TOL * np.max(np.diag(S))
    b = rng.normal(size=500)
    assert np.max(np.abs(fac.solve(b) - S @ b)) <= 1e-8
    ref = DenseTorchFactor(P.indptr, P.indices, 500, backend="numpy").factor(P.data).inverse_on_pattern()
    assert np.max(np.abs(fac.inverse_on_pattern() - ref)) <= LINALG_TOL * np.max(np.abs(ref))


@pytest.mark.parametrize("method", ["supernodal", "column"])
def test_sparse_sample_has_covariance_inverse_P(method):
    """sample(z) = pi^T L^{-T} z, so stacking sample(e_k) over the unit vectors gives X with X X^T = P^{-1}."""
    rng = np.random.default_rng(16)
    X = rng.uniform(size=(200, 2))
    f = nngp_precision(X, n_neighbors=8, variance=0.8, length_scale=0.2)
    P = (f.Q + sp.diags(rng.uniform(0, 5, 200))).tocsr()
    P.sort_indices()
    fac = SparseCholesky(P, coords=X, method=method).factor(P.data)
    E = np.column_stack([fac.sample(e) for e in np.eye(200)])
    S, _ = dense_selected(P)
    assert np.max(np.abs(E @ E.T - S)) <= LINALG_TOL * np.max(np.abs(S))
    # and the half solve is its transpose partner: ||L^{-1} pi b||^2 = b^T P^{-1} b
    b = rng.normal(size=200)
    assert np.sum(fac.half_solve(b) ** 2) == pytest.approx(b @ S @ b, rel=1e-10)


@pytest.mark.parametrize("method", ["supernodal", "column"])
def test_inverse_quadratic_forms_equal_the_dense_inverse(method):
    """``b^T P^{-1} b`` for sparse ``b`` on 15 nearest nodes of query points (and on scattered nodes, whose
    common ancestor is the root), both by forward solves to the root and by the solve stopped at the common
    ancestor plus the selected inverse: equal to the forms with the dense inverse at QUAD_RTOL."""
    from scipy.spatial import cKDTree

    QUAD_RTOL = 1e-10
    rng = np.random.default_rng(19)
    X = rng.uniform(size=(1200, 2))
    f = nngp_precision(X, n_neighbors=12, variance=1.0, length_scale=0.1)
    P = (f.Q + sp.diags(rng.uniform(0.1, 30, 1200))).tocsr()
    P.sort_indices()
    S, _ = dense_selected(P)
    _, near = cKDTree(X).query(rng.uniform(size=(300, 2)), k=15)
    rows = np.vstack([near, rng.integers(0, 1200, size=(40, 15))])
    vals = rng.normal(size=rows.shape)
    ref = np.einsum("ij,ijk,ik->i", vals, S[rows[:, :, None], rows[:, None, :]], vals)
    fac = SparseCholesky(P, coords=X, method=method).factor(P.data)
    for selected in (False, True):
        got = fac.inverse_quadratic_forms(rows, vals, selected=selected)
        assert np.max(np.abs(got - ref) / ref) <= QUAD_RTOL
    assert fac.Lx is not None  # the selected inverse was computed beside the factor, not over it
    with pytest.raises(ValueError, match="'vals' must have the shape of 'rows'"):
        fac.inverse_quadratic_forms(rows, vals[:, :3])
    with pytest.raises(ValueError, match="'rows' must hold node indices in \\[0, 1200\\)"):
        fac.inverse_quadratic_forms(rows + 1200, vals)
    with pytest.raises(ValueError, match="'rows' must be a 2-d integer array"):
        fac.inverse_quadratic_forms(rows.astype(float), vals)


def test_supernodal_matches_column_on_a_large_pattern():
    """Both kernels on an NNGP precision with big separators (N = 3000): same factor values, log-det and
    selected inverse on the pattern, to round-off (1e-10 relative: LAPACK blocks vs scalar loops)."""
    rng = np.random.default_rng(17)
    X = rng.uniform(size=(3000, 2))
    f = nngp_precision(X, n_neighbors=15, variance=1.0, length_scale=0.1)
    P = (f.Q + sp.diags(rng.uniform(0.1, 30, 3000))).tocsr()
    P.sort_indices()
    a = SparseCholesky(P, coords=X, method="supernodal").factor(P.data)
    b = SparseCholesky(P, coords=X, method="column").factor(P.data)
    assert a.logdet() == pytest.approx(b.logdet(), rel=1e-12)
    za, zb = a.inverse_on_pattern(), b.inverse_on_pattern()
    assert np.max(np.abs(za - zb)) <= 1e-10 * np.max(np.abs(zb))
    v = rng.normal(size=3000)
    assert np.max(np.abs(a.solve(v) - b.solve(v))) <= 1e-10 * np.max(np.abs(b.solve(v)))


@pytest.mark.parametrize("method", ["supernodal", "column"])
def test_selected_inverse_over_the_factor_equals_the_copy(method):
    """``selected_inverse(overwrite=True)`` writes Z over L (no second factor-sized array): the same values
    bit for bit, the same log-determinant afterwards, and a clear error where the factor is asked for."""
    from sklearn.exceptions import NotFittedError

    rng = np.random.default_rng(18)
    X = rng.uniform(size=(1500, 2))
    f = nngp_precision(X, n_neighbors=12, variance=1.0, length_scale=0.1)
    P = (f.Q + sp.diags(rng.uniform(0.1, 30, 1500))).tocsr()
    P.sort_indices()
    a = SparseCholesky(P, coords=X, method=method).factor(P.data)
    b = SparseCholesky(P, coords=X, method=method).factor(P.data)
    ld = a.logdet()
    za = a.selected_inverse()
    lx = b.Lx
    zb = b.selected_inverse(overwrite=True)
    assert np.array_equal(za, zb)
    assert b.logdet() == ld
    assert np.array_equal(a.inverse_on_pattern(), b.inverse_on_pattern())
    if method == "supernodal":
        assert zb is lx  # written in place
        with pytest.raises(NotFittedError, match="overwritten by its selected inverse"):
            b.solve(np.ones(1500))


def test_sparse_cholesky_rejects_bad_method():
    with pytest.raises(ValueError, match="'method'"):
        SparseCholesky(sp.identity(3, format="csr"), ordering="natural", method="multifrontal")


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
    with pytest.raises(np.linalg.LinAlgError):
        SparseCholesky(P, ordering="natural", method="column").factor(P.data)


#: a fit's results depend on the fill-reducing ordering only through round-off (the ordering changes the
#: order of the factor's sums): ELBO, hyperparameters and posterior means agree to this relative tolerance.
ORDERING_RTOL = 1e-8


def test_min_vertex_cover_covers_every_edge_and_has_the_matching_size():
    from scipy.sparse.csgraph import maximum_bipartite_matching

    from algos.point_process._sparse import _min_vertex_cover

    rng = np.random.default_rng(3)
    for n_left, n_right, n_edges in [(1, 1, 1), (6, 4, 9), (40, 30, 120), (200, 150, 300)]:
        rows, cols = rng.integers(0, n_left, n_edges), rng.integers(0, n_right, n_edges)
        cl, cr = _min_vertex_cover(n_left, n_right, rows, cols)
        assert np.all(cl[rows] | cr[cols])  # a cover
        G = sp.csr_matrix((np.ones(n_edges), (rows, cols)), shape=(n_left, n_right))
        matched = int(np.sum(maximum_bipartite_matching(G, perm_type="column") >= 0))
        assert cl.sum() + cr.sum() == matched  # minimum (König)


def test_nested_dissection_is_a_permutation_with_less_fill_than_rcm():
    from algos.point_process._sparse import nested_dissection

    X = np.random.default_rng(8).uniform(size=(4000, 2))
    f = nngp_precision(X, n_neighbors=15, variance=1.0, length_scale=0.05)
    Q = sp.csr_matrix(f.Q)
    order = nested_dissection(X, Q.indptr.astype(np.int64), Q.indices.astype(np.int64))
    assert np.array_equal(np.sort(order), np.arange(len(X)))
    nd = SparseCholesky(Q, coords=X, ordering="nd")
    rcm = SparseCholesky(Q, coords=X, ordering="rcm")
    assert nd.nnz_L < 0.8 * rcm.nnz_L
    data = Q.data + 2.0 * (np.repeat(np.arange(len(X)), np.diff(Q.indptr)) == Q.indices)
    assert nd.factor(data).logdet() == pytest.approx(rcm.factor(data).logdet(), rel=LINALG_TOL)


def test_vogcam_fit_agrees_across_fill_reducing_orderings(monkeypatch):
    """The ordering is an implementation choice: a fit with reverse Cuthill--McKee in place of nested
    dissection gives the same ELBO, hyperparameters and posterior to round-off (ORDERING_RTOL), not to
    the bit (the factor's sums run in another order)."""
    import warnings

    from algos.point_process import VoGCAM, _sparse

    X = np.random.default_rng(5).uniform(size=(400, 2)) ** np.array([1.0, 2.0])

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return VoGCAM(window=(0, 1, 0, 1), n_dummy=900, solver="sparse", random_state=0).fit(X)

    a = fit()
    nd_order = _sparse.fill_reducing_order
    monkeypatch.setattr(_sparse, "fill_reducing_order", lambda P, coords=None, method="nd": nd_order(P, coords, "rcm"))
    b = fit()
    assert a.n_iter_ == b.n_iter_
    for name in ("elbo_", "variance_", "length_scale_"):
        assert getattr(b, name) == pytest.approx(getattr(a, name), rel=ORDERING_RTOL), name
    np.testing.assert_allclose(b.mean_, a.mean_, rtol=ORDERING_RTOL, atol=ORDERING_RTOL * np.abs(a.mean_).max())
    np.testing.assert_allclose(b.var_, a.var_, rtol=ORDERING_RTOL)
