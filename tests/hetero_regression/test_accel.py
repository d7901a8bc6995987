"""The batched Huber IRLS of accel.hetero_regression, written once against accel.backend: run on numpy
(the reference) against the numpy estimator (numba pass, BLAS Gram, Cholesky) and a gradient computed
here; run on torch (huber_irls_batched) against the numpy run and the estimator, replicate by replicate,
on CPU always and on CUDA when one is present. Also: importing the package and the accel module never
imports torch."""

import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from accel.backend import get_backend
from accel.hetero_regression import _irls_batched
from algos.hetero_regression._data import make_subset_of_signals
from algos.hetero_regression._huber import ConvexRegimeWarning, HuberSoSRegressor

# both paths stop at a relative gradient of 1e-10 on the same strictly convex problem; the distance
# between two such points is ~1e-10 * delta * ||X||_F / lambda_min(X_I^T X_I) ~ 1e-10 * sqrt(nd) / m
PARITY_ATOL = 1e-8


def test_importing_does_not_import_torch():
    code = (
        "import sys; import algos, accel, accel.hetero_regression, algos.hetero_regression._huber, "
        "algos.hetero_regression._kernels; assert 'torch' not in sys.modules, 'torch was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _numpy_core(X, Y, delta, max_iter=500, tol=1e-10, **kw):
    """The IRLS core run with the numpy backend (the plain-numpy reference of huber_irls_batched)."""
    return _irls_batched(get_backend(backend="numpy"), X, Y, delta, max_iter, tol, **kw)


@pytest.mark.parametrize("shared, weighted", [(True, False), (False, False), (True, True)])
def test_numpy_core_equals_numpy_estimator_iteration_for_iteration(shared, weighted):
    """The core on numpy against HuberSoSRegressor(solver="mm"), which shares no code with it (numba
    fused pass, BLAS dsyrk Gram, Cholesky solve): same minimiser, same iteration count, same objective
    history (summation round-off apart); and the final gradient, computed here from its closed form
    -X^T (s * clip(r, -delta, delta)), below the stopping tolerance."""
    X, Y = _replicates(4, 2000, 3, 400, 1e4, 11, shared)
    rng = np.random.default_rng(2)
    sw = rng.integers(0, 3, size=2000).astype(float) if weighted else None
    delta = 1.0
    coef, n_iter, conv, hist = _numpy_core(X, Y, delta, sample_weight=sw, return_history=True)
    assert isinstance(coef, np.ndarray) and coef.shape == (4, 3) and conv.all()
    s = np.ones(2000) if sw is None else sw
    for k, est in enumerate(_numpy_fits(X, Y, delta, sw)):
        Xk = X if shared else X[k]
        assert n_iter[k] == est.n_iter_, f"replicate {k}: same iterations as the numpy MM solver"
        assert_allclose(coef[k], est.coef_, rtol=0, atol=PARITY_ATOL, err_msg=f"replicate {k}")
        h = hist[k][np.isfinite(hist[k])]
        assert_allclose(h, est.objective_history_, rtol=1e-10, err_msg=f"replicate {k}: objective history")
        r = Y[k] - Xk @ coef[k]
        g = -Xk.T @ (s * np.clip(r, -delta, delta))
        gscale = delta * np.sqrt(np.sum(s[:, None] * Xk**2))
        assert np.linalg.norm(g) / gscale < 1e-10


def test_numpy_core_matches_lbfgs_minimiser():
    """Independent optimum: the objective sum_i H_delta(r_i) and its gradient written here, minimised by
    scipy's L-BFGS-B from zero (scikit-learn's HuberRegressor estimates the scale jointly, so its
    objective is a different one); the core's objective is no larger, and its coefficients agree."""
    from scipy.optimize import minimize

    X, Y = _replicates(2, 1500, 3, 600, 1e3, 4)
    delta = 1.5

    def huber(b, y):
        r = y - X @ b
        a = np.abs(r)
        return np.sum(np.where(a <= delta, 0.5 * r**2, delta * a - 0.5 * delta**2)), -X.T @ np.clip(r, -delta, delta)

    coef, _, conv = _numpy_core(X, Y, delta)
    assert conv.all()
    for k in range(2):
        res = minimize(huber, np.zeros(3), args=(Y[k],), jac=True, method="L-BFGS-B",
                       options={"gtol": 1e-12, "ftol": 0.0, "maxiter": 10_000})
        assert huber(coef[k], Y[k])[0] <= res.fun * (1 + 1e-12)
        assert_allclose(coef[k], res.x, rtol=0, atol=1e-5)


def test_numpy_core_rejects_bad_input_and_max_iter_zero():
    X, Y = _replicates(2, 200, 2, 100, 1e3, 0)
    with pytest.raises(ValueError, match="does not match"):
        _numpy_core(X[:-1], Y, 1.0)
    with pytest.raises(ValueError, match="'sample_weight' must be non-negative"):
        _numpy_core(X, Y, 1.0, sample_weight=np.ones(199))
    coef, n_iter, conv, hist = _numpy_core(X, Y, 1.0, max_iter=0, return_history=True, coef_init=np.zeros((2, 2)))
    assert_array_equal(coef, 0.0)
    assert_array_equal(n_iter, 0)
    assert hist.shape == (2, 1) and not conv.any()


torch = pytest.importorskip("torch")
from accel.hetero_regression import huber_irls_batched  # noqa: E402


def _numpy_fits(X, Y, delta, sw=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvexRegimeWarning)
        Xs = X if X.ndim == 3 else [X] * len(Y)
        return [HuberSoSRegressor(delta=delta, solver="mm").fit(Xk, yk, sample_weight=sw) for Xk, yk in zip(Xs, Y)]


def _replicates(B, n, d, m, noisy, seed, shared=True):
    rng = np.random.default_rng(seed)
    data = [make_subset_of_signals(n, d, m, noisy_sigma=noisy, random_state=rng) for _ in range(B)]
    Y = np.stack([dt.y for dt in data])
    if shared:  # same design, fresh noise and coefficients
        X = data[0].X
        Y = np.stack([X @ dt.beta + (dt.y - dt.X @ dt.beta) for dt in data])
    else:
        X = np.stack([dt.X for dt in data])
    return X, Y


@settings(max_examples=8)
@given(seed=st.integers(0, 2**32 - 1), B=st.integers(1, 5), d=st.integers(1, 5),
       noisy=st.sampled_from([30.0, 1e3, 1e5]), shared=st.booleans(), delta=st.sampled_from([0.5, 1.0, 3.0]))
def test_batched_cpu_equals_numpy_estimator(seed, B, d, noisy, shared, delta):
    X, Y = _replicates(B, 1500, d, 500, noisy, seed, shared)
    coef, n_iter, conv, hist = huber_irls_batched(X, Y, delta, device="cpu", return_history=True)
    assert coef.shape == (B, d) and coef.dtype == np.float64
    assert n_iter.shape == (B,) and conv.shape == (B,)
    assert conv.all()
    for k, est in enumerate(_numpy_fits(X, Y, delta)):
        assert_allclose(coef[k], est.coef_, rtol=0, atol=PARITY_ATOL, err_msg=f"replicate {k}")
        h = hist[k][np.isfinite(hist[k])]
        assert len(h) == n_iter[k] + 1
        assert np.all(np.diff(h) <= 1e-9 * np.abs(h[:-1])), "monotone objective per replicate"
        assert h[-1] == pytest.approx(est.objective_, rel=1e-10)


def test_batched_masks_converged_replicates_and_counts_iterations():
    X, Y = _replicates(3, 2000, 3, 2000, 1.0, 0)  # easy: homoskedastic
    rng = np.random.default_rng(1)
    sigma = np.full(2000, 1e5)
    sigma[:300] = 1.0  # hard: sign-only with 300 signals, needs more iterations
    Y = np.vstack([Y, X @ np.ones(3) + sigma * rng.standard_normal(2000)])
    coef, n_iter, conv = huber_irls_batched(X, Y, 1.0, device="cpu")
    assert conv.all()
    assert n_iter[:3].max() < n_iter[3], "the hard replicate runs longer; the others stopped early"
    for k, est in enumerate(_numpy_fits(X, Y, 1.0)):
        assert_allclose(coef[k], est.coef_, rtol=0, atol=PARITY_ATOL)
        assert n_iter[k] == est.n_iter_, "same iterations as the numpy MM solver"


def test_batched_sample_weight_and_coef_init():
    X, Y = _replicates(2, 1000, 3, 400, 1e3, 5)
    sw = np.random.default_rng(0).integers(0, 3, size=1000).astype(float)
    coef, _, conv = huber_irls_batched(X, Y, 1.0, device="cpu", sample_weight=sw, coef_init=np.zeros((2, 3)))
    assert conv.all()
    for k, est in enumerate(_numpy_fits(X, Y, 1.0, sw)):
        assert_allclose(coef[k], est.coef_, rtol=0, atol=PARITY_ATOL)


@pytest.mark.parametrize("shared", [True, False])
def test_core_numpy_equals_cpu_torch(shared):
    """The same core on the two backends: same iterations and convergence, coefficients and histories
    equal to round-off (the sign-only regime, with stalls and backtracking possible, max_iter hit by
    some replicates)."""
    X, Y = _replicates(5, 3000, 4, 300, 1e5, 8, shared)
    sw = np.random.default_rng(3).uniform(0.0, 2.0, size=3000)
    for kw in ({}, {"sample_weight": sw}, {"max_iter": 4}):
        a = _numpy_core(X, Y, 0.7, return_history=True, **kw)
        b = huber_irls_batched(X, Y, 0.7, device="cpu", return_history=True, **kw)
        assert_array_equal(a[1], b[1])
        assert_array_equal(a[2], b[2])
        assert_allclose(a[0], b[0], rtol=1e-9, atol=1e-12)
        assert_allclose(a[3], b[3], rtol=1e-10, equal_nan=True)


def test_batched_accepts_tensors_and_one_replicate():
    X, Y = _replicates(1, 800, 2, 400, 1e3, 2)
    a = huber_irls_batched(X, Y[0], 1.0, device="cpu")[0]
    b = huber_irls_batched(torch.as_tensor(X), torch.as_tensor(Y), 1.0, device="cpu")[0]
    assert a.shape == (1, 2)
    assert_array_equal(a, b)


def test_batched_rejects_bad_input():
    X, Y = _replicates(2, 200, 2, 100, 1e3, 0)
    with pytest.raises(ValueError, match="does not match"):
        huber_irls_batched(X[:-1], Y, 1.0, device="cpu")
    with pytest.raises(ValueError, match="'delta' must be a float in \\(0, inf\\)"):
        huber_irls_batched(X, Y, 0.0, device="cpu")
    Y[0, 3] = np.nan
    with pytest.raises(ValueError, match="'Y' must contain only finite values"):
        huber_irls_batched(X, Y, 1.0, device="cpu")
    with pytest.raises(ValueError, match="'sample_weight' must be non-negative"):
        huber_irls_batched(X, np.nan_to_num(Y), 1.0, device="cpu", sample_weight=-np.ones(200))


def test_estimator_torch_backend_equals_numpy():
    data = make_subset_of_signals(3000, 4, 800, noisy_sigma=1e3, random_state=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvexRegimeWarning)
        a = HuberSoSRegressor(backend="torch", fit_intercept=True).fit(data.X, data.y)
        b = HuberSoSRegressor(fit_intercept=True).fit(data.X, data.y)
    assert_allclose(a.coef_, b.coef_, rtol=0, atol=PARITY_ATOL)
    assert a.intercept_ == pytest.approx(b.intercept_, abs=PARITY_ATOL)
    assert a.converged_ and a.n_iter_ >= 1
    assert np.all(np.diff(a.objective_history_) <= 1e-9 * np.abs(a.objective_history_[:-1]))


@pytest.mark.gpu
def test_batched_cuda_equals_cpu():
    X, Y = _replicates(6, 5000, 5, 1500, 1e5, 3, shared=False)
    cpu = huber_irls_batched(X, Y, 1.0, device="cpu")
    gpu = huber_irls_batched(X, Y, 1.0, device="cuda")
    assert gpu[2].all()
    assert_allclose(gpu[0], cpu[0], rtol=0, atol=PARITY_ATOL)
    for k, est in enumerate(_numpy_fits(X, Y, 1.0)):
        assert_allclose(gpu[0][k], est.coef_, rtol=0, atol=PARITY_ATOL)
