"""theory.point_process input checks and values; accel.point_process parity with the numba/numpy path."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from algos.point_process import nngp_precision
from algos.point_process._kernels import nngp_rows
from algos.point_process._nngp import nngp_neighbors, node_ordering
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


def test_accel_nngp_rows_parity_cpu():
    pytest.importorskip("torch")
    from accel.point_process import nngp_rows_batched

    X = np.random.default_rng(0).uniform(size=(400, 2))
    order = node_ordering(X, "coord")
    nbr, cnt = nngp_neighbors(X, order, 12)
    for nu, code in ((0.5, 0), (1.5, 1)):
        A1, F1 = nngp_rows(X, nbr, cnt, 0.15, code, 1e-8)
        A2, F2 = nngp_rows_batched(X, nbr, cnt, 0.15, nu=nu, device="cpu")
        assert np.max(np.abs(A1 - A2)) <= 1e-7  # ill-conditioned R at nu = 3/2: relative round-off
        assert np.max(np.abs(F1 - F2)) <= 1e-9


def test_accel_precision_parity_cpu():
    pytest.importorskip("torch")
    from accel.point_process import precision_diag_inverse

    X = np.random.default_rng(1).uniform(size=(300, 2))
    Q = nngp_precision(X, n_neighbors=10, variance=1.0, length_scale=0.2).Q
    mu = np.random.default_rng(2).uniform(0, 5, 300)
    d, ld = precision_diag_inverse(Q, mu, device="cpu")
    P = Q.toarray() + np.diag(mu)
    assert np.allclose(d, np.diag(np.linalg.inv(P)), rtol=PARITY_TOL)
    assert ld == pytest.approx(np.linalg.slogdet(P)[1], abs=1e-8)


def test_accel_bad_input():
    pytest.importorskip("torch")
    from accel.point_process import nngp_rows_batched, precision_diag_inverse

    with pytest.raises(ValueError, match="length_scale"):
        nngp_rows_batched(np.zeros((2, 2)), -np.ones((2, 1), dtype=int), np.zeros(2, dtype=int), 0.0, device="cpu")
    with pytest.raises(np.linalg.LinAlgError):
        precision_diag_inverse(sp.csr_matrix(-np.eye(3)), np.zeros(3), device="cpu")


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
