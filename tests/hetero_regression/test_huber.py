"""HuberSoSRegressor (M1) and its numba kernels.

The fused Huber pass against the Huber evaluation of the batched IRLS core
(:func:`accel.hetero_regression._evaluate`, run on numpy), the median kernels against their numpy
twins (Hypothesis sizes and seeds); the estimator against cvxpy's Huber
program and a brute-force 1-D grid; the spec's properties P3 (equivariance), P4 (homoskedastic
sanity), P6 (monotone objective, final gradient); intercept, sample weights, warnings, bad input;
the scikit-learn estimator checks.
"""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, note, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning

from accel.backend import get_backend
from accel.hetero_regression import _evaluate
from algos.hetero_regression._data import make_subset_of_signals
from algos.hetero_regression._huber import ConvexRegimeWarning, HuberSoSRegressor
from algos.hetero_regression._kernels import huber_pass, masked_ratio_medians, quickselect_median
from algos.hetero_regression._reference import masked_ratio_medians_reference, quickselect_median_reference

SEEDS = st.integers(0, 2**32 - 1)
SIGN_ONLY = 1e5  # noisy sigma of the spec's "sign-only" regime

# kernel vs the nx core: the kernel sums rows serially, the core through BLAS; both are exact up to
# summation round-off, ~n * eps * (sum of |terms|)
KERNEL_RTOL = 1e-12
# equivariance (P3) is exact for the minimiser; two fits each stop at a relative gradient of 1e-10,
# which moves the coefficients by ~1e-10 * sqrt(nd) / m, far below the spec's 1e-6
EQUIV_RTOL = 1e-6


def _fit(X, y, **kw):
    """Fit quietly (the regime and convergence warnings are tested on their own)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvexRegimeWarning)
        return HuberSoSRegressor(**kw).fit(X, y)


def _core_pass(X, y, b, delta, sw=None):
    """Objective, gradient, residuals, IRLS weights and inlier count at ``b``, from the Huber evaluation
    of the batched IRLS core (:func:`accel.hetero_regression._evaluate`) run on numpy with one replicate;
    the residuals and the inlier count are computed here."""
    X, y, b = (np.asarray(a, dtype=float) for a in (X, y, b))
    s = np.ones(len(y)) if sw is None or len(sw) == 0 else np.asarray(sw, dtype=float)
    L, g, w = _evaluate(get_backend(backend="numpy"), X, y[None, :], s[None, :], b[None, :], delta)
    r = y - X @ b
    return float(L[0]), g[0], r, w[0], int(np.count_nonzero((np.abs(r) <= delta) & (s > 0)))


def _objective(X, y, b, delta, sw=None):
    return _core_pass(X, y, b, delta, sw)[0]


# --------------------------------------------------------------------------------------------------
# kernels vs the nx core on numpy (the fused pass) and vs twins (the medians)
# --------------------------------------------------------------------------------------------------
@settings(max_examples=40)
@given(n=st.integers(1, 300), d=st.integers(1, 8), seed=SEEDS, delta=st.floats(0.01, 100.0),
       weighted=st.booleans(), scale=st.sampled_from([1.0, 1e3, 1e5]))
def test_huber_pass_matches_nx_core(n, d, seed, delta, weighted, scale):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    b = rng.standard_normal(d)
    y = X @ b + scale * rng.standard_normal(n)
    y[: n // 5] = (X @ b)[: n // 5]  # some exact zero residuals: no division by zero
    sw = rng.integers(0, 4, size=n).astype(float) if weighted else np.empty(0)
    r, w, g = np.empty(n), np.empty(n), np.empty(d)
    obj, nin = huber_pass(X, y, b, delta, sw, r, w, g)
    obj2, g2, r2, w2, nin2 = _core_pass(X, y, b, delta, sw if weighted else None)
    note(f"obj={obj} ref={obj2} nin={nin} ref={nin2}")
    assert_allclose(r, r2, rtol=KERNEL_RTOL, atol=1e-12 * scale, err_msg="residuals")
    assert np.all(np.isfinite(w)), "weights must be finite (zero residuals)"
    assert_allclose(w, w2, rtol=1e-10, err_msg="IRLS weights")
    assert_allclose(obj, obj2, rtol=KERNEL_RTOL, atol=1e-300, err_msg="objective")
    gscale = delta * np.abs(X).sum()
    assert_allclose(g, g2, rtol=0, atol=KERNEL_RTOL * gscale + 1e-300, err_msg="gradient")
    # away from the |r| = delta boundary, the inlier count is exact
    assert abs(nin - nin2) <= int(np.sum(np.isclose(np.abs(r2), delta, rtol=1e-12, atol=0)))


def test_huber_pass_hand_example():
    X = np.array([[1.0], [1.0], [1.0]])
    y = np.array([0.0, 0.5, 3.0])
    r, w, g = np.empty(3), np.empty(3), np.empty(1)
    obj, nin = huber_pass(X, y, np.array([0.0]), 1.0, np.empty(0), r, w, g)
    # H(0) + H(0.5) + H(3) = 0 + 0.125 + (3 - 0.5)
    assert obj == pytest.approx(2.625, abs=1e-15)
    assert nin == 2
    assert_allclose(w, [1.0, 1.0, 1.0 / 3.0])
    assert_allclose(g, [-(0.0 + 0.5 + 1.0)])


@settings(max_examples=60)
@given(n=st.integers(0, 600), seed=SEEDS, kind=st.sampled_from(["normal", "ties", "sorted", "reversed", "const"]))
def test_quickselect_median_matches_numpy(n, seed, kind):
    rng = np.random.default_rng(seed)
    v = {
        "normal": lambda: rng.standard_normal(n),
        "ties": lambda: rng.integers(0, 4, size=n).astype(float),
        "sorted": lambda: np.sort(rng.standard_normal(n)),
        "reversed": lambda: np.sort(rng.standard_normal(n))[::-1].copy(),
        "const": lambda: np.full(n, 2.5),
    }[kind]()
    before = v.copy()
    got, ref = quickselect_median(v), quickselect_median_reference(v)
    assert_array_equal(v, before, err_msg="the input must not be modified")
    if n == 0:
        assert math.isnan(got) and math.isnan(ref)
    else:
        assert got == ref  # selection is exact: same two middle values, same mean


def test_quickselect_median_adversarial_pattern_is_exact():
    # organ-pipe and sawtooth patterns defeat naive pivots; the sort fallback keeps it exact and fast
    n = 20001
    pipe = np.concatenate([np.arange(n // 2), np.arange(n - n // 2)[::-1]]).astype(float)
    saw = (np.arange(n) % 7).astype(float)
    for v in (pipe, saw):
        assert quickselect_median(v) == np.median(v)


@settings(max_examples=40)
@given(n=st.integers(1, 300), d=st.integers(1, 6), seed=SEEDS, threshold=st.floats(0.1, 3.0))
def test_masked_ratio_medians_matches_twin(n, d, seed, threshold):
    rng = np.random.default_rng(seed)
    Xw = rng.standard_normal((n, d))
    Xw[:, -1] *= 0.01  # a column with (almost surely) no selected row for threshold >= 0.1 ... mostly
    r = 10 * rng.standard_normal(n)
    out, counts = np.empty(d), np.empty(d, dtype=np.int64)
    n_empty = masked_ratio_medians(Xw, r, threshold, out, counts)
    out2, counts2 = masked_ratio_medians_reference(Xw, r, threshold)
    assert_array_equal(counts, counts2, err_msg="selected rows per column")
    assert n_empty == int(np.sum(counts2 == 0))
    assert np.all(np.isfinite(out)), "no NaN, also for empty columns"
    assert_array_equal(out[counts2 == 0], 0.0)
    assert_allclose(out, out2, rtol=1e-15, atol=0, err_msg="medians")


# --------------------------------------------------------------------------------------------------
# against independent references
# --------------------------------------------------------------------------------------------------
CVX_OBJ_RTOL = 1e-6  # spec: objective within 1e-6 relative of cvxpy's (an interior-point solution)
# coefficients: Clarabel run to gap 1e-14 lands within ~1e-9 of our minimiser; the spec's acceptance
# experiment asks for 1e-5. (At noisy sigma = 1e5, Clarabel reports the problem "infeasible": the
# sign-only regime is checked against the 1-D grid and the solvers' agreement instead.)
CVX_COEF_ATOL = 1e-6
CLARABEL_TIGHT = {"solver": "CLARABEL", "tol_gap_abs": 1e-14, "tol_gap_rel": 1e-14, "tol_feas": 1e-14, "max_iter": 500}


@pytest.mark.parametrize("seed, noisy, intercept", [(0, 30.0, False), (1, 1e3, True), (2, 1e4, False)])
def test_matches_cvxpy_huber(seed, noisy, intercept):
    cp = pytest.importorskip("cvxpy")
    data = make_subset_of_signals(400, 4, 150, noisy_sigma=noisy, random_state=seed)
    X, y = data.X, data.y + (2.0 if intercept else 0.0)
    delta = 1.0
    est = _fit(X, y, delta=delta, fit_intercept=intercept)
    Xa = np.hstack([X, np.ones((len(y), 1))]) if intercept else X
    b = cp.Variable(Xa.shape[1])
    # cvxpy's huber(x, M) = x^2 for |x| <= M and 2M|x| - M^2 otherwise, i.e. 2 * H_M(x)
    prob = cp.Problem(cp.Minimize(cp.sum(cp.huber(y - Xa @ b, delta)) / 2))
    prob.solve(**CLARABEL_TIGHT)
    assert prob.status == "optimal"
    b_cvx = np.asarray(b.value)
    ours = np.append(est.coef_, est.intercept_) if intercept else est.coef_
    L_ours, L_cvx = _objective(Xa, y, ours, delta), _objective(Xa, y, b_cvx, delta)
    info = f"L_ours={L_ours!r} L_cvx={L_cvx!r} cvxpy value={prob.value!r}"
    assert est.objective_ == pytest.approx(L_ours, rel=1e-12)
    assert abs(prob.value - L_cvx) <= CVX_OBJ_RTOL * L_cvx, "cvxpy's value is half its huber sum"
    assert L_ours <= L_cvx * (1 + 1e-12), "ours is at least as good as the interior-point solution"
    assert (L_cvx - L_ours) <= CVX_OBJ_RTOL * L_cvx, info
    assert_allclose(ours, b_cvx, atol=CVX_COEF_ATOL, err_msg="coefficients vs cvxpy")


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_one_dimension_equals_brute_force_grid(seed, weighted):
    """d = 1, no intercept: the fit is the minimiser of a 1-D convex function, found here by brute
    force: a grid of 20001 points over the central 98% of the ratios y_i / x_i, then bisection on the
    sign of the derivative inside the best grid cell (to ~1e-15). Tolerance 1e-9: the fit stops at a
    relative gradient of 1e-10, i.e. |c - c*| <~ 1e-10 * delta * ||x|| / curvature ~ 1e-10."""
    rng = np.random.default_rng(seed)
    n = 301
    x = rng.standard_normal(n)
    y = 0.7 * x + np.where(rng.random(n) < 0.3, 1.0, 50.0) * rng.standard_normal(n)
    sw = rng.integers(0, 3, size=n).astype(float) if weighted else None
    delta = 1.0

    def L(c):
        return _objective(x[:, None], y, np.array([c]), delta, sw)

    def dL(c):  # derivative of L, non-decreasing in c
        return _core_pass(x[:, None], y, np.array([c]), delta, sw)[1][0]

    ratios = y / x
    lo, hi = np.percentile(ratios, [1, 99])
    grid = np.linspace(lo, hi, 20001)
    R = np.abs(y[None, :] - grid[:, None] * x[None, :])  # all grid points at once
    H = np.where(R <= delta, 0.5 * R**2, delta * R - 0.5 * delta**2)
    vals = H @ (np.ones(n) if sw is None else sw)
    k = int(np.argmin(vals))
    assert vals[k] == pytest.approx(L(grid[k]), rel=1e-12)
    assert 0 < k < len(grid) - 1, "the minimiser lies inside the grid"
    a, b = grid[k - 1], grid[k + 1]
    assert dL(a) <= 0 <= dL(b)
    for _ in range(200):  # bisection on the sign of the derivative (objective values cannot
        mid = 0.5 * (a + b)  # resolve the minimiser below ~sqrt(eps |L| / curvature) ~ 1e-5)
        if mid in (a, b):
            break
        if dL(mid) < 0:
            a = mid
        else:
            b = mid
    c_star = 0.5 * (a + b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvexRegimeWarning)
        est = HuberSoSRegressor(delta=delta).fit(x[:, None], y, sample_weight=sw)
    assert est.coef_[0] == pytest.approx(c_star, abs=1e-9), f"grid={c_star!r} fit={est.coef_[0]!r}"
    assert est.objective_ <= L(c_star) * (1 + 1e-12)


# --------------------------------------------------------------------------------------------------
# P3: equivariances
# --------------------------------------------------------------------------------------------------
@settings(max_examples=10)
@given(seed=SEEDS, d=st.integers(1, 6), noisy=st.sampled_from([30.0, 1e3, SIGN_ONLY]))
def test_p3_equivariances(seed, d, noisy):
    rng = np.random.default_rng(seed)
    n = 1500
    data = make_subset_of_signals(n, d, 600, noisy_sigma=noisy, random_state=rng)
    X, y = data.X, data.y
    base = _fit(X, y).coef_
    scale = 1.0 + np.linalg.norm(base)

    v = rng.standard_normal(d)
    shifted = _fit(X, y + X @ v).coef_
    assert_allclose(shifted, base + v, rtol=0, atol=EQUIV_RTOL * (scale + np.linalg.norm(v)),
                    err_msg="y + Xv -> b + v")

    A = np.eye(d) + 0.3 * rng.standard_normal((d, d)) / math.sqrt(d)  # well conditioned
    assert np.linalg.cond(A) < 10
    transformed = _fit(X @ A, y).coef_
    assert_allclose(A @ transformed, base, rtol=0, atol=EQUIV_RTOL * scale, err_msg="XA -> A^-1 b")

    perm = rng.permutation(n)
    assert_allclose(_fit(X[perm], y[perm]).coef_, base, rtol=0, atol=EQUIV_RTOL * scale,
                    err_msg="row permutation")

    c = float(rng.choice([0.01, 3.0, 250.0]))
    scaled = _fit(X, c * y, delta=c).coef_
    assert_allclose(scaled, c * base, rtol=0, atol=EQUIV_RTOL * c * scale, err_msg="(cy, delta=c) -> cb")


# --------------------------------------------------------------------------------------------------
# P4, P6 and the rate
# --------------------------------------------------------------------------------------------------
def test_p4_homoskedastic_close_to_ols():
    """m = n, sigma = 1: Huber(1) has Gaussian efficiency ~0.9, so its error is ~1.05x OLS's; the
    spec allows 1.3x for the median over reps."""
    errs_h, errs_o = [], []
    for seed in range(12):
        data = make_subset_of_signals(2000, 5, 2000, random_state=seed)
        errs_h.append(np.linalg.norm(_fit(data.X, data.y).coef_ - data.beta))
        ols = np.linalg.lstsq(data.X, data.y, rcond=None)[0]
        errs_o.append(np.linalg.norm(ols - data.beta))
    assert np.median(errs_h) <= 1.3 * np.median(errs_o), (np.median(errs_h), np.median(errs_o))


@settings(max_examples=12)
@given(seed=SEEDS, solver=st.sampled_from(["irls", "mm", "lbfgs"]),
       init=st.sampled_from(["ols", "zeros", "lad", "cmed"]),
       noisy=st.sampled_from([30.0, SIGN_ONLY]), weighted=st.booleans())
def test_p6_monotone_objective_and_final_gradient(seed, solver, init, noisy, weighted):
    data = make_subset_of_signals(3000, 4, 600, noisy_sigma=noisy, random_state=seed)
    sw = np.random.default_rng(seed).integers(1, 4, size=3000).astype(float) if weighted else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvexRegimeWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)  # lbfgs may stop above tol
        est = HuberSoSRegressor(solver=solver, init=init).fit(data.X, data.y, sample_weight=sw)
    h = est.objective_history_
    assert len(h) == est.n_iter_ + 1
    steps = np.diff(h)
    note(f"max relative increase {np.max(steps / np.abs(h[:-1])):.3e}")
    assert np.all(steps <= 1e-9 * np.abs(h[:-1])), "P6: L(b_t+1) <= L(b_t) + 1e-9 |L|"
    assert est.objective_ == h[-1]
    if solver != "lbfgs":
        assert est.converged_
        assert est.gradient_norm_ < est.tol
    # recompute the gradient independently
    _, g, *_ = _core_pass(data.X, data.y, est.coef_, est.delta, sw)
    s = np.ones(3000) if sw is None else sw
    rel = np.linalg.norm(g) / (est.delta * np.sqrt(np.sum(s[:, None] * data.X**2)))
    assert rel == pytest.approx(est.gradient_norm_, rel=1e-3, abs=1e-13)


def test_sign_only_rate_and_all_solvers_agree():
    """P1-style sanity at one point (n=20000, d=5, m = 4 sqrt(nd)): error <= 3 sqrt(nd)/m, and the
    solvers, starts and continuation all reach the same minimiser."""
    n, d = 20000, 5
    m = int(4 * math.sqrt(n * d))
    data = make_subset_of_signals(n, d, m, noisy_sigma=SIGN_ONLY, random_state=11)
    ref = _fit(data.X, data.y)
    assert ref.converged_
    assert np.linalg.norm(ref.coef_ - data.beta) <= 3 * math.sqrt(n * d) / m
    for kw in ({"solver": "mm"}, {"init": "zeros"}, {"init": "lad"}, {"init": "cmed"}, {"continuation": True}):
        other = _fit(data.X, data.y, **kw)
        assert other.converged_, kw
        assert_allclose(other.coef_, ref.coef_, rtol=0, atol=1e-8, err_msg=str(kw))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        lb = _fit(data.X, data.y, solver="lbfgs")
    assert lb.objective_ <= ref.objective_ * (1 + 1e-9)
    assert_allclose(lb.coef_, ref.coef_, rtol=0, atol=1e-3)


def test_continuation_records_the_delta_path():
    data = make_subset_of_signals(2000, 3, 800, noisy_sigma=1e3, random_state=0)
    est = _fit(data.X, data.y, continuation=True, init="zeros")
    path = est.delta_path_
    assert path[-1] == 1.0 and len(path) > 1
    assert np.all(np.diff(path) < 0)
    assert_allclose(path[:-1][1:] / path[:-1][:-1], 0.5)


# --------------------------------------------------------------------------------------------------
# intercept, sample weights, determinism
# --------------------------------------------------------------------------------------------------
def test_intercept_is_an_ordinary_coefficient():
    data = make_subset_of_signals(3000, 3, 1200, noisy_sigma=1e3, random_state=4)
    y = data.y + 5.0
    est = _fit(data.X, y, fit_intercept=True)
    ones = _fit(np.hstack([data.X, np.ones((3000, 1))]), y)
    assert_allclose(est.coef_, ones.coef_[:3], rtol=0, atol=1e-9)
    assert est.intercept_ == pytest.approx(ones.coef_[3], abs=1e-9)
    assert est.intercept_ == pytest.approx(5.0, abs=0.2)
    assert_allclose(est.predict(data.X), data.X @ est.coef_ + est.intercept_)
    assert _fit(data.X, data.y).intercept_ == 0.0


@settings(max_examples=10)
@given(seed=SEEDS, intercept=st.booleans())
def test_integer_sample_weight_equals_row_duplication(seed, intercept):
    rng = np.random.default_rng(seed)
    data = make_subset_of_signals(400, 3, 150, noisy_sigma=100.0, random_state=rng)
    sw = rng.integers(0, 4, size=400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvexRegimeWarning)
        weighted = HuberSoSRegressor(fit_intercept=intercept).fit(data.X, data.y, sample_weight=sw)
    dup = _fit(np.repeat(data.X, sw, axis=0), np.repeat(data.y, sw), fit_intercept=intercept)
    assert_allclose(weighted.coef_, dup.coef_, rtol=0, atol=1e-8)
    assert weighted.intercept_ == pytest.approx(dup.intercept_, abs=1e-8)
    assert weighted.objective_ == pytest.approx(dup.objective_, rel=1e-10)
    assert weighted.n_inliers_ == int(np.count_nonzero((np.abs(data.y - data.X @ weighted.coef_
                                                              - weighted.intercept_) <= 1.0) & (sw > 0)))


def test_refit_is_bit_identical():
    data = make_subset_of_signals(5000, 4, 800, noisy_sigma=SIGN_ONLY, random_state=3)
    a = _fit(data.X, data.y)
    b = _fit(data.X.copy(), data.y.copy())
    assert_array_equal(a.coef_, b.coef_)
    assert_array_equal(a.objective_history_, b.objective_history_)


# --------------------------------------------------------------------------------------------------
# warnings
# --------------------------------------------------------------------------------------------------
def test_convex_regime_warning_below_sqrt_nd():
    n, d = 20000, 5
    m = int(0.8 * math.sqrt(n * d))  # m < sqrt(nd), sign-only: the convex barrier
    data = make_subset_of_signals(n, d, m, noisy_sigma=SIGN_ONLY, random_state=0)
    with pytest.warns(ConvexRegimeWarning, match=r"2 sqrt\(nd\).*Compton & Schramm 2026"):
        est = HuberSoSRegressor().fit(data.X, data.y)
    assert est.n_inliers_ < 2 * math.sqrt(n * d)
    assert issubclass(ConvexRegimeWarning, UserWarning)


def test_no_regime_warning_with_many_signals():
    data = make_subset_of_signals(4000, 4, 3000, noisy_sigma=1e3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        HuberSoSRegressor().fit(data.X, data.y)


def test_convergence_warning_names_max_iter_and_tol():
    data = make_subset_of_signals(3000, 4, 600, noisy_sigma=1e3, random_state=0)
    with pytest.warns(ConvergenceWarning, match=r"max_iter=1\b.*tol"):
        est = _fit(data.X, data.y, solver="mm", max_iter=1)
    assert not est.converged_ and est.n_iter_ == 1


# --------------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------------
@pytest.fixture
def small():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    return X, X @ np.array([1.0, 2.0, -1.0]) + rng.standard_normal(50)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["X", "y"])
def test_rejects_non_finite(small, bad, where):
    X, y = small[0].copy(), small[1].copy()
    (X if where == "X" else y).flat[7] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        HuberSoSRegressor().fit(X, y)


@pytest.mark.parametrize("n, d, intercept", [(3, 3, False), (2, 5, False), (4, 3, True)])
def test_rejects_n_samples_not_above_n_features(n, d, intercept):
    X = np.random.default_rng(0).standard_normal((n, d))
    with pytest.raises(ValueError, match=rf"n_samples > n_features.*got n_samples = {n} and n_features = {d}"):
        HuberSoSRegressor(fit_intercept=intercept).fit(X, np.ones(n))


def test_rejects_rows_left_by_zero_weights(small):
    X, y = small
    sw = np.zeros(50)
    sw[:3] = 1.0
    with pytest.raises(ValueError, match="n_samples with positive sample_weight > n_features"):
        HuberSoSRegressor().fit(X, y, sample_weight=sw)


def test_rejects_zero_constant_and_collinear_columns(small):
    X, y = small
    Z = X.copy()
    Z[:, 1] = 0.0
    with pytest.raises(ValueError, match="Column 1 of X is zero"):
        HuberSoSRegressor().fit(Z, y)
    C = X.copy()
    C[:, 2] = 4.0
    with pytest.raises(ValueError, match="Column 2 of X is constant.*fit_intercept=True"):
        HuberSoSRegressor(fit_intercept=True).fit(C, y)
    _fit(C, y)  # without an intercept a constant column is the intercept: fine
    D = np.hstack([X, (X[:, 0] - 2 * X[:, 2])[:, None]])
    with pytest.raises(ValueError,
                       match=r"rank-deficient: column 3 is \(numerically\) a linear combination of column 0, column 2"):
        HuberSoSRegressor().fit(D, y)
    E = np.hstack([X, (1.0 + 2.0 * X[:, 1])[:, None]])  # collinear with column 1 and the intercept
    with pytest.raises(ValueError,
                       match=r"the intercept column \(fit_intercept=True\) is .* combination of column 1, column 3"):
        HuberSoSRegressor(fit_intercept=True).fit(E, y)


#: scikit-learn's wording of the rule on ``delta`` (a number in (0, inf) or "auto": two constraints)
_DELTA_RULE = (r"'delta' parameter of HuberSoSRegressor must be a float in the range \(0\.0, inf\) "
               r"or a str among \{'auto'\}")


@pytest.mark.parametrize("param, value, exc, msg", [
    ("delta", 0.0, ValueError, _DELTA_RULE + r"\. Got 0\.0"),
    ("delta", -1.0, ValueError, _DELTA_RULE + r"\. Got -1\.0"),
    ("delta", "1", TypeError, _DELTA_RULE),
    ("tol", -1e-3, ValueError, r"'tol' must be a float in \[0, inf\]; got -0.001"),
    ("max_iter", 0, ValueError, r"'max_iter' must be an int in \[1, inf\]; got 0"),
    ("max_iter", 2.5, TypeError, r"'max_iter' must be an int"),
    ("init", "median", ValueError, r"'init' must be one of \{'ols', 'zeros', 'lad', 'cmed'\}; got 'median'"),
    ("solver", "newton", ValueError, r"'solver' must be one of"),
    ("backend", "jax", ValueError, r"'backend' must be one of"),
    ("fit_intercept", 1, TypeError, r"'fit_intercept' must be a bool"),
    ("continuation", "yes", TypeError, r"'continuation' must be a bool"),
])
def test_rejects_bad_parameters(small, param, value, exc, msg):
    with pytest.raises(exc, match=msg):
        HuberSoSRegressor(**{param: value}).fit(*small)


def test_rejects_wrong_y_length_and_sparse_and_negative_weights(small):
    X, y = small
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        HuberSoSRegressor().fit(X, y[:-1])
    with pytest.raises(TypeError, match="[Ss]parse data was passed.*dense data is required"):
        HuberSoSRegressor().fit(sp.csr_matrix(X), y)
    with pytest.raises(ValueError, match="Negative values in data passed to `sample_weight`"):
        HuberSoSRegressor().fit(X, y, sample_weight=-np.ones(50))
    with pytest.raises(ValueError, match="X has 2 features, but HuberSoSRegressor is expecting 3"):
        _fit(X, y).predict(X[:, :2])


def test_float32_input_is_computed_in_float64(small):
    X, y = small
    est = _fit(X.astype(np.float32), y.astype(np.float32))
    assert est.coef_.dtype == np.float64
    ref = _fit(X.astype(np.float32).astype(np.float64), y.astype(np.float32).astype(np.float64))
    assert_array_equal(est.coef_, ref.coef_)
    assert est.predict(X.astype(np.float32)).dtype == np.float64


def test_torch_backend_refuses_lbfgs(small):
    with pytest.raises(ValueError, match="'backend'='torch' needs solver='irls' or 'mm'"):
        HuberSoSRegressor(backend="torch", solver="lbfgs").fit(*small)


# --------------------------------------------------------------------------------------------------
# scikit-learn contract
# --------------------------------------------------------------------------------------------------
EXPECTED_FAILED = {
    # the check fits 15 x 30 data; an unpenalised Huber fit is not unique when n_samples <= n_features,
    # and the spec (section 7) asks to raise there
    "check_sample_weight_equivalence_on_dense_data": "needs n_samples > n_features (unpenalised fit)",
}


@pytest.mark.parametrize(
    # the default configuration runs in tests/test_common.py with every array estimator
    "est", [HuberSoSRegressor(fit_intercept=True, init="cmed", continuation=True)],
    ids=["intercept-cmed-continuation"],
)
def test_sklearn_check_estimator(est):
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(est, on_fail=None, expected_failed_checks=EXPECTED_FAILED)
    failed = [(r["check_name"], str(r["exception"])[:300]) for r in results if r["status"] == "failed"]
    assert not failed, failed
    xfailed = {r["check_name"] for r in results if r["status"] == "xfail"}
    assert xfailed <= set(EXPECTED_FAILED)
