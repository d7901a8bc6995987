"""Bad input to point_process: a clean ValueError/TypeError naming the argument (regressions of the fuzz ledger)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

import theory.point_process as T
from algos.point_process import (
    RasterCovariates,
    SparseCholesky,
    Window,
    _cli,
    k_function,
    matern,
    nngp_precision,
    voronoi_weights,
    woodbury_solve,
)
from algos.point_process._sparse import SparseCholeskyError

SQUARE = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
PTS = np.random.default_rng(0).uniform(size=(30, 2))


def _spd(n=6):
    A = np.eye(n) * 4.0 + np.diag(np.ones(n - 1), 1) + np.diag(np.ones(n - 1), -1)
    return sp.csr_matrix(A)


@pytest.mark.parametrize("vertices, exc, words", [
    (SQUARE * 1e200, ValueError, "at most 1e+100"),
    (SQUARE + 0.5j, TypeError, "real numbers"),
    (np.full((4, 2), "ab"), TypeError, "real numbers"),
    (np.where(SQUARE == 1, np.nan, SQUARE), ValueError, "finite"),
    (SQUARE[..., None, None], ValueError, "(V, 2)"),
])
def test_window_vertices_rejected_with_their_name(vertices, exc, words):
    with pytest.raises(exc, match="'vertices'") as info:
        Window(vertices)
    assert words in str(info.value)


def test_window_bounds_too_large_and_not_real():
    with pytest.raises(ValueError, match=r"'window' bounds must be at most 1e\+100"):
        Window.from_any((0.0, 1e200, 0.0, 1.0))
    with pytest.raises(TypeError, match="'window' bounds"):
        Window.from_any((0.0, 1j, 0.0, 1.0))
    # large but representable coordinates still work, and the area is exact
    w = Window.from_any((0.0, 1e90, 0.0, 1e90))
    assert w.area == pytest.approx(1e180)


def test_complex_points_and_radii_are_not_silently_truncated():
    with pytest.raises(TypeError, match="'nodes'"):
        voronoi_weights(PTS[:6] + 0.1j, (0, 1, 0, 1))
    with pytest.raises(TypeError, match="'r'"):
        k_function(PTS, (0, 1, 0, 1), r=np.array([0.0, 0.05 + 1j]))
    with pytest.raises(TypeError, match="'d'"):
        matern(np.array([0.0, 1.0 + 1j]), 0.2)
    with pytest.raises(TypeError, match="'d'"):
        matern(np.array(["a", "b"]), 0.2)
    with pytest.raises(TypeError, match="'length_scale'"):
        matern(np.linspace(0, 1, 3), 0.2 + 1j)
    with pytest.raises(ValueError, match="'d'"):
        matern(np.array([0.0, np.nan]), 0.2)
    assert matern(np.array([0.0]), 0.2)[0] == 1.0


def test_sparse_cholesky_bad_input():
    P = _spd()
    with pytest.raises(TypeError, match="'P'"):
        SparseCholesky(3, ordering="natural")
    with pytest.raises(ValueError, match="'P'"):
        SparseCholesky(sp.csr_matrix((0, 0)), ordering="natural")
    chol = SparseCholesky(P, ordering="natural")
    with pytest.raises(NotFittedError, match="factor"):
        chol.solve(np.ones(6))
    with pytest.raises(TypeError, match="'data'"):
        chol.factor(P.data + 1j)
    with pytest.raises(SparseCholeskyError, match="'data'"):
        chol.factor(np.where(np.arange(P.nnz) == 0, np.inf, P.data))
    with pytest.raises(ValueError, match="'data'"):  # SparseCholeskyError is a LinAlgError and a ValueError
        chol.factor(-P.data)
    # huge (but SPD) values factor by scaling: the same solution, scaled
    x1 = chol.factor(P.data).solve(np.ones(6))
    x2 = chol.factor(P.data * 1e200).solve(np.ones(6))
    np.testing.assert_allclose(x2 * 1e200, x1, rtol=1e-12)
    assert chol.logdet() == pytest.approx(SparseCholesky(P, ordering="natural").factor(P.data).logdet()
                                          + 6 * np.log(1e200), rel=1e-12)


def test_woodbury_and_nngp_bad_input():
    Q = _spd()
    with pytest.raises(TypeError, match="'Q'"):
        woodbury_solve(np.ones(6), Q="abc", diag=None, nugget=0.1)
    with pytest.raises(ValueError, match="'b'"):
        woodbury_solve(np.array([1.0, np.inf, 1, 1, 1, 1]), Q=Q, diag=None, nugget=0.1)
    with pytest.raises(ValueError, match="'b'"):
        woodbury_solve(np.ones((6, 1, 1)), Q=Q, diag=None, nugget=0.1)
    with pytest.raises(ValueError, match="'diag'"):
        woodbury_solve(np.ones(6), Q=Q, diag=np.full(6, np.nan), nugget=0.1)
    with pytest.raises(TypeError, match="'coords'"):
        nngp_precision(np.full((5, 2), "x"))
    with pytest.raises(TypeError, match="'random_state'"):
        nngp_precision(PTS, n_neighbors=4, random_state=0.5)


def test_raster_covariates_axes():
    im = {"elev": np.zeros((4, 5))}
    with pytest.raises(ValueError, match="'xcol'"):
        RasterCovariates(im, np.array([0.0, 0.2, np.nan, 0.7, 1.0]), np.linspace(0, 1, 4))
    with pytest.raises(TypeError, match="'xcol'"):
        RasterCovariates(im, np.array(["a"] * 5), np.linspace(0, 1, 4))
    with pytest.raises(ValueError, match="'yrow'"):
        RasterCovariates(im, np.linspace(0, 1, 5), np.array([0.0, np.inf, 0.5, 1.0]))


def test_theory_bad_input():
    with pytest.raises(ValueError, match="'r'"):
        T.poisson_k_function(np.array([1e200]))
    with pytest.raises(TypeError, match="'r'"):
        T.poisson_k_function(np.array([0.1 + 1j]))
    with pytest.raises(TypeError, match="'first_moments'"):
        T.quadrature_moment_bound(1.0, np.array([0.01 + 1j]))
    with pytest.raises(TypeError, match="'s'"):
        T.expected_loglik(np.ones(2), np.ones(2), np.zeros(2), np.array(["a", "b"]))
    with pytest.raises(ValueError, match="'y'"):
        T.gauss_hermite_log_evidence(np.array([]), np.array([0.5]), np.array([0.0]), np.array([[1.0]]))
    with pytest.raises(ValueError, match="'prior_cov'"):  # e^f overflows at the nodes: no finite quadrature
        T.gauss_hermite_log_evidence(np.array([1.0]), np.array([0.5]), np.array([0.0]), np.array([[1e200]]))
    with pytest.raises(ValueError, match="'prior_cov'"):
        T.gauss_hermite_log_evidence(np.array([1.0]), np.array([0.5]), np.array([0.0]), np.array([[-1.0]]))


def _cli_args(*argv):
    import argparse

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    _cli.add_parser(sub, "lgcp")
    return parser.parse_args(["lgcp", *argv])


def test_cli_rejects_options_of_the_other_action_and_zero_dummies(tmp_path):
    csv = tmp_path / "pts.csv"
    csv.write_text("\n".join(f"{a:.6g},{b:.6g}" for a, b in PTS) + "\n")
    with pytest.raises(ValueError, match="'--nsim' does not apply to 'lgcp fit'"):
        _cli.run(_cli_args("fit", str(csv), "--window", "0,1,0,1", "--out", str(tmp_path / "o"), "--nsim", "5"))
    with pytest.raises(ValueError, match="'--n-dummy' does not apply to 'lgcp kfunction'"):
        _cli.run(_cli_args("kfunction", str(csv), "--window", "0,1,0,1", "--n-dummy", "16"))
    with pytest.raises(ValueError, match=r"The '--n-dummy' parameter of VoGCAM must be .* range \[0, inf\)"):
        _cli.run(_cli_args("fit", str(csv), "--window", "0,1,0,1", "--out", str(tmp_path / "o"), "--n-dummy", "-1"))


def test_query_points_distances_and_radii():
    from algos.point_process import VoGCAM, lgcp_min_contrast, pair_correlation

    est = VoGCAM(window=(0, 1, 0, 1), n_dummy=16, max_iter=50, optimize_hyperparameters=(), random_state=0).fit(PTS)
    with pytest.raises(ValueError, match="'Xq'"):  # squared distances would overflow: no silent IndexError
        est.predict_intensity(PTS[:3] * 1e200)
    assert np.all(np.isfinite(est.predict_intensity(PTS[:3])))
    with pytest.raises(ValueError, match="'d'"):
        matern(np.array([0.0, -1.0]), 0.2)
    with pytest.raises(ValueError, match="'r'"):
        pair_correlation(PTS, (0, 1, 0, 1), r=np.array([0.05, 0.1])[:, None, None])
    with pytest.raises(ValueError, match="'r'"):
        lgcp_min_contrast(PTS, (0, 1, 0, 1), r=np.array([]))
    with pytest.raises(ValueError, match="'r'"):
        lgcp_min_contrast(PTS, (0, 1, 0, 1), r=np.linspace(0, 0.2, 21) * 1e200)
    with pytest.raises(TypeError, match="'r'"):
        lgcp_min_contrast(PTS, (0, 1, 0, 1), r=np.array(["a"] * 21))
    with pytest.raises(ValueError, match="'m'"):
        T.expected_loglik(np.ones(2), np.ones(2), np.array([0.0, 1e200]), np.ones(2))


def test_envelope_of_an_empty_or_single_point_pattern_is_an_error():
    from algos.point_process import envelope

    for X in (np.empty((0, 2)), np.array([[0.5, 0.5]])):
        with pytest.raises(ValueError, match="'X' needs at least 2 points"):
            envelope("poisson", n_sim=3, X=X, window=(0, 1, 0, 1), random_state=0)


def test_woodbury_solve_with_a_huge_nugget_is_finite():
    import scipy.sparse as sp

    from algos.point_process import woodbury_solve

    Q = sp.csr_matrix(np.array([[2.0, -0.5], [-0.5, 2.0]]))
    b = np.array([1.0, 2.0])
    out = woodbury_solve(b, Q=Q, diag=None, nugget=1e200)
    # (Q^-1 + tau2 I)^-1 b -> b / tau2 for a large nugget
    assert np.all(np.isfinite(out)) and np.allclose(out * 1e200, b, rtol=1e-12)


@pytest.mark.parametrize("fn", ["lgcp_pair_correlation", "lgcp_k_function"])
def test_lgcp_second_order_theory_names_an_overflowing_variance(fn):
    import theory.point_process as T

    with pytest.raises(ValueError, match="'variance' must be <="):
        getattr(T, fn)(0.1, 1e200, 0.1)
    assert np.isfinite(getattr(T, fn)(0.1, 700.0, 0.1))


def test_vogcam_n_dummy_is_checked_by_its_constraint_and_its_memory_before_any_work(monkeypatch):
    from sklearn.utils._param_validation import InvalidParameterError

    import algos.point_process.vogcam._vogcam as vogcam_module
    from algos.point_process import VoGCAM

    X = np.random.default_rng(0).random((50, 2))
    for bad in (-1, 2.5, "many", None):
        with pytest.raises(InvalidParameterError, match="'n_dummy' parameter of VoGCAM"):
            VoGCAM(window=(0, 1, 0, 1), n_dummy=bad).fit(X)

    def no_quadrature(*args, **kwargs):
        raise AssertionError("the quadrature was built before the size was checked")

    monkeypatch.setattr(vogcam_module, "build_quadrature", no_quadrature)
    with pytest.raises(ValueError, match=r"'n_dummy'=1000000000 with 1000000050 nodes: 1000000050 quadrature nodes "
                                         r"\(about \d+ KB each\) would need about \d+(\.\d+)? [TG]iB"):
        VoGCAM(window=(0, 1, 0, 1), n_dummy=10**9).fit(X)
