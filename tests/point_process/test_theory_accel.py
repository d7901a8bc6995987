"""theory.point_process input checks and values; accel.point_process parity with the numba/numpy path."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from algos.point_process import nngp_precision
from algos.point_process._kernels import nngp_rows
from algos.point_process.vogcam._nngp import nngp_neighbors, node_ordering
from theory.point_process import (
    BOUND_KIND,
    elbo_upper_bound_check,
    expected_loglik,
    gauss_hermite_log_evidence,
    quadrature_error_bound,
    quadrature_moment_bound,
    s_fixed_point_contraction,
    s_fixed_point_rate,
)

#: float64 torch vs numba: round-off of k x k Cholesky solves.
PARITY_TOL = 1e-10


def test_theory_values():
    assert quadrature_error_bound(2.0, 3.0, 0.1) == pytest.approx(0.6)
    assert quadrature_moment_bound(2.0, [0.1, 0.2]) == pytest.approx(0.6)
    assert s_fixed_point_rate(1.5) == 0.75
    assert s_fixed_point_contraction(3.0) == (1.5, False)
    assert elbo_upper_bound_check(1.0, 2.0) and not elbo_upper_bound_check(2.0, 1.0)
    assert expected_loglik([1, 0], [1, 1], [0, 0], [0, 0]) == pytest.approx(-2.0)
    assert set(BOUND_KIND) >= {"quadrature_error_bound", "s_fixed_point_rate"}


def test_gauss_hermite_matches_poisson_gamma_free_case():
    # N = 1, w -> 0: the evidence is E exp(y f) = exp(y mu + y^2 K / 2)
    v = gauss_hermite_log_evidence([1.0], [1e-300], [0.3], [[0.5]], n_nodes=60)
    assert v == pytest.approx(0.3 + 0.25, abs=1e-10)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: quadrature_error_bound(-1, 1, 1), "lipschitz"),
        (lambda: quadrature_error_bound(1, float("nan"), 1), "window_area"),
        (lambda: s_fixed_point_rate(-0.1), "k_diag_max"),
        (lambda: gauss_hermite_log_evidence([1, 1, 1], [1, 1, 1], [0, 0, 0], np.eye(3)), "N in"),
        (lambda: expected_loglik([1], [1, 2], [0], [0]), "length"),
        (lambda: quadrature_moment_bound(1.0, [-1.0]), "first_moments"),
    ],
)
def test_theory_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def _backends():
    """The numpy backend, and CPU torch when it is installed."""
    out = [dict(backend="numpy")]
    try:
        import torch  # noqa: F401
    except ImportError:
        return out
    return out + [dict(backend="torch", device="cpu")]


def test_accel_nngp_rows_parity_cpu():
    """The nx core on numpy and on CPU torch against the independent numba kernel (per-node loop)."""
    from accel.point_process import nngp_rows_batched

    X = np.random.default_rng(0).uniform(size=(400, 2))
    order = node_ordering(X, "coord")
    nbr, cnt = nngp_neighbors(X, order, 12)
    for kw in _backends():
        for nu, code in ((0.5, 0), (1.5, 1)):
            A1, F1 = nngp_rows(X, nbr, cnt, 0.15, code, 1e-8)
            A2, F2 = nngp_rows_batched(X, nbr, cnt, 0.15, nu=nu, **kw)
            assert np.max(np.abs(A1 - A2)) <= 1e-7  # ill-conditioned R at nu = 3/2: relative round-off
            assert np.max(np.abs(F1 - F2)) <= 1e-9


def test_accel_precision_parity_cpu():
    from accel.point_process import precision_diag_inverse

    X = np.random.default_rng(1).uniform(size=(300, 2))
    Q = nngp_precision(X, n_neighbors=10, variance=1.0, length_scale=0.2).Q
    mu = np.random.default_rng(2).uniform(0, 5, 300)
    P = Q.toarray() + np.diag(mu)
    for kw in _backends():
        d, ld = precision_diag_inverse(Q, mu, **kw)
        assert np.allclose(d, np.diag(np.linalg.inv(P)), rtol=PARITY_TOL)
        assert ld == pytest.approx(np.linalg.slogdet(P)[1], abs=1e-8)


def test_accel_dense_factor_against_lapack():
    """DenseTorchFactor (numpy and CPU torch) against np.linalg: logdet, solve, inverse on the pattern, and
    sample: stacking sample(e_k) over the unit vectors gives E with E E^T = P^{-1}."""
    from accel.point_process import DenseTorchFactor

    rng = np.random.default_rng(7)
    X = rng.uniform(size=(120, 2))
    Q = nngp_precision(X, n_neighbors=8, variance=1.0, length_scale=0.2).Q
    P = (Q + sp.diags(rng.uniform(0, 5, 120))).tocsr()
    P.sort_indices()
    Pd = P.toarray()
    S = np.linalg.inv(Pd)
    rows = np.repeat(np.arange(120), np.diff(P.indptr))
    b = rng.normal(size=(120, 2))
    tol = PARITY_TOL * np.abs(S).max()
    for kw in _backends():
        f = DenseTorchFactor(P.indptr, P.indices, 120, **kw).clone().factor(P.data)
        assert f.logdet() == pytest.approx(np.linalg.slogdet(Pd)[1], abs=1e-8)
        assert np.max(np.abs(f.solve(b) - S @ b)) <= tol * np.abs(b).max() * 120
        assert np.max(np.abs(f.inverse_on_pattern() - S[rows, P.indices])) <= tol
        assert np.max(np.abs(f.diag_inverse() - np.diag(S))) <= tol
        E = np.column_stack([f.sample(e) for e in np.eye(120)])
        assert np.max(np.abs(E @ E.T - S)) <= tol
        with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
            f.factor(-P.data)


def test_accel_bad_input():
    pytest.importorskip("torch")
    from accel.point_process import nngp_rows_batched, precision_diag_inverse

    with pytest.raises(ValueError, match="length_scale"):
        nngp_rows_batched(np.zeros((2, 2)), -np.ones((2, 1), dtype=int), np.zeros(2, dtype=int), 0.0, device="cpu")
    with pytest.raises(np.linalg.LinAlgError):
        precision_diag_inverse(sp.csr_matrix(-np.eye(3)), np.zeros(3), device="cpu")
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        precision_diag_inverse(sp.csr_matrix(-np.eye(3)), np.zeros(3), backend="numpy")
    with pytest.raises(ValueError, match="'backend' must be one of"):
        nngp_rows_batched(np.zeros((2, 2)), -np.ones((2, 1), dtype=int), np.zeros(2, dtype=int), 1.0, backend="jax")


@pytest.mark.gpu
def test_accel_gpu_parity():
    from accel.point_process import nngp_rows_batched, precision_diag_inverse

    X = np.random.default_rng(3).uniform(size=(2000, 2))
    order = node_ordering(X, "coord")
    nbr, cnt = nngp_neighbors(X, order, 15)
    A1, F1 = nngp_rows(X, nbr, cnt, 0.1, 0, 1e-8)
    A2, F2 = nngp_rows_batched(X, nbr, cnt, 0.1, nu=0.5, device="cuda")
    assert np.max(np.abs(A1 - A2)) <= 1e-7 and np.max(np.abs(F1 - F2)) <= 1e-9
    Q = nngp_precision(X, n_neighbors=15, variance=1.0, length_scale=0.1).Q
    d, ld = precision_diag_inverse(Q, np.ones(2000), device="cuda")
    dc, ldc = precision_diag_inverse(Q, np.ones(2000), device="cpu")
    assert np.allclose(d, dc, rtol=1e-9) and math.isclose(ld, ldc, rel_tol=1e-10)


# ----------------------------------------------------------------------------- VoGCAM(backend="torch")
#: torch (float64) and LAPACK dense factors: round-off of N x N Cholesky solves, amplified by the
#: ascent's stopping tolerance (tol = 1e-12) ...
TORCH_FIT_TOL = 1e-7
#: ... and, with the hyperparameters fitted too, by Brent's range search (measured 1e-9).
TORCH_HYPER_RTOL = 1e-5


def _torch_pair(device, **kw):
    import warnings

    from algos.point_process import VoGCAM, simulate_lgcp

    X = simulate_lgcp((0, 1, 0, 1), math.log(150), 1.0, 0.1, grid=64, random_state=4).points
    out = []
    for backend in ("numpy", "torch"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(VoGCAM(window=(0, 1, 0, 1), n_dummy=121, solver="dense", backend=backend, device=device,
                              random_state=0, **kw).fit(X))
    return out


def _check_torch_parity(device):
    a, b = _torch_pair(device, optimize_hyperparameters=("mean",), variance=1.0, length_scale=0.1, tol=1e-12)
    assert b.solver_ == "dense"
    assert abs(a.elbo_ - b.elbo_) <= TORCH_FIT_TOL * (1 + abs(a.elbo_))
    np.testing.assert_allclose(b.mean_, a.mean_, atol=TORCH_FIT_TOL)
    np.testing.assert_allclose(b.var_, a.var_, atol=TORCH_FIT_TOL)
    G = np.random.default_rng(0).uniform(size=(30, 2))
    np.testing.assert_allclose(b.predict_log_intensity(G, return_std=True)[1],
                               a.predict_log_intensity(G, return_std=True)[1], atol=TORCH_FIT_TOL)
    np.testing.assert_allclose(b.sample_posterior(G, 2, random_state=1), a.sample_posterior(G, 2, random_state=1),
                               atol=TORCH_FIT_TOL)
    a, b = _torch_pair(device)
    np.testing.assert_allclose([b.variance_, b.length_scale_], [a.variance_, a.length_scale_], rtol=TORCH_HYPER_RTOL)


def test_vogcam_torch_backend_matches_numpy_on_cpu():
    pytest.importorskip("torch")
    _check_torch_parity("cpu")


@pytest.mark.gpu
def test_vogcam_torch_backend_matches_numpy_on_cuda():
    pytest.importorskip("torch")
    _check_torch_parity("cuda")


def test_vogcam_torch_backend_bad_input():
    from algos.point_process import VoGCAM

    X = np.random.default_rng(0).uniform(size=(30, 2))
    with pytest.raises(ValueError, match="backend='torch' runs the dense solver only"):
        VoGCAM(window=(0, 1, 0, 1), backend="torch", solver="sparse").fit(X)
    with pytest.raises(ValueError, match="'backend'"):
        VoGCAM(window=(0, 1, 0, 1), backend="jax").fit(X)


# ----------------------------------------------------------------------------- bad input of the building blocks
def test_sparse_cholesky_rejects_non_symmetric_and_unfactored_use():
    from algos.point_process import SparseCholesky

    A = sp.csr_matrix(np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 2.0]]))
    f = SparseCholesky(A)
    for call in (lambda: f.solve(np.ones(3)), f.logdet, f.diag_inverse, lambda: f.sample(np.ones(3))):
        with pytest.raises(ValueError, match="call factor"):
            call()
    with pytest.raises(ValueError, match="symmetric"):
        SparseCholesky(sp.csr_matrix(np.array([[4.0, 1.0], [0.0, 3.0]])))  # pattern
    with pytest.raises(ValueError, match="symmetric"):
        SparseCholesky(sp.csr_matrix(np.array([[4.0, 1.0], [2.0, 3.0]])))  # values
    with pytest.raises(ValueError, match="symmetric"):
        f.factor(A.data * np.array([1, 1.1, 1, 1, 1, 1, 1]))
    with pytest.raises(ValueError, match="one value per stored entry"):
        f.factor(np.ones(3))
    with pytest.raises(ValueError, match="square"):
        SparseCholesky(sp.csr_matrix(np.ones((2, 3))))
    f.factor(A.data)
    np.testing.assert_allclose(f.solve(np.ones(3)), np.linalg.solve(A.toarray(), np.ones(3)), rtol=1e-12)
    with pytest.raises(ValueError, match="'b'"):
        f.solve(np.ones(4))


def test_grid_laplace_honours_random_state():
    """The fft solver's variance samples follow random_state (same seed, same fit; another seed differs);
    the dense solver is exact and does not draw."""
    from algos.point_process import GridLaplaceLGCP

    X = np.random.default_rng(5).uniform(size=(80, 2))
    kw = dict(window=(0, 1, 0, 1), grid=16, solver="fft", n_var_samples=8)
    a = GridLaplaceLGCP(random_state=1, **kw).fit(X)
    b = GridLaplaceLGCP(random_state=1, **kw).fit(X)
    c = GridLaplaceLGCP(random_state=2, **kw).fit(X)
    np.testing.assert_array_equal(a.log_intensity_var_, b.log_intensity_var_)
    assert np.max(np.abs(a.log_intensity_var_ - c.log_intensity_var_)) > 0
    np.testing.assert_array_equal(a.log_intensity_, c.log_intensity_)


# ----------------------------------------------------------------------------- second-order theory functions
#: Gauss-Legendre (48 nodes) against adaptive quadrature.
K_QUAD_RTOL = 1e-9


@pytest.mark.parametrize("nu", [0.5, 1.5])
def test_lgcp_k_function_against_adaptive_quadrature(nu):
    from scipy.integrate import quad

    from theory.point_process import lgcp_k_function, lgcp_pair_correlation, poisson_k_function

    for r, s2, phi in ((0.3, 2.0, 0.05), (0.05, 1.0, 0.1), (1.0, 0.5, 0.2)):
        ref = 2 * math.pi * quad(lambda s: s * lgcp_pair_correlation(s, s2, phi, nu), 0, r, limit=400,
                                 epsabs=0, epsrel=1e-13)[0]
        assert lgcp_k_function(r, s2, phi, nu) == pytest.approx(ref, rel=K_QUAD_RTOL)
    assert lgcp_k_function(0.2, 0.0, 0.1) == pytest.approx(poisson_k_function(0.2), rel=1e-14)
    assert lgcp_pair_correlation(0.0, 2.0, 0.1, nu) == pytest.approx(math.exp(2.0))


def test_second_order_theory_bad_input():
    from theory.point_process import lgcp_k_function, lgcp_pair_correlation, poisson_k_function

    with pytest.raises(TypeError, match="'r'"):
        poisson_k_function("a")
    with pytest.raises(ValueError, match="'r'"):
        lgcp_k_function([0.1, -1.0], 1.0, 0.1)
    with pytest.raises(ValueError, match="'length_scale'"):
        lgcp_pair_correlation(0.1, 1.0, 0.0)
    with pytest.raises(ValueError, match="'nu'"):
        lgcp_k_function(0.1, 1.0, 0.1, nu=2.5)
    with pytest.raises(TypeError, match="'variance'"):
        lgcp_k_function(0.1, "x", 0.1)
