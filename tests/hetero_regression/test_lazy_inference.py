"""The front door's inference computed on first use: equality with the eager computation, caching,
the random stream fixed at fit, pickling, clone; statsmodels-style bse / tvalues / pvalues and the
DataFrame-aware conf_int; converged_ (a fixed point) against schedule_completed_; bad input."""

import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from algos.hetero_regression import SubsetOfSignalsRegressor, make_subset_of_signals
from algos.hetero_regression._front import WINDOW_TOL, _rescaled
from algos.hetero_regression._inference import _scale_cov, sandwich_cov, window_bootstrap_cov

LOGU = ("loguniform", 10.0, 1e3)


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


@pytest.fixture(scope="module")
def window_data():
    """A design whose front-door fit is a bootstrapped window fit; columns on unequal scales."""
    data = make_subset_of_signals(2000, 4, 200, noisy_sigma=LOGU, random_state=3)
    X = data.X * np.array([1.0, 3.7, 0.01, 250.0]) + 5.0
    return X, data.y * 3.3 + 2.0


def _eager_cov(X, y, est, fit_intercept, rng):
    """The covariance as ``fit`` computed it before inference was deferred (same functions, same seed)."""
    _, ys, Xa, col_scale, y_scale = _rescaled(X, y, fit_intercept)
    b = np.r_[est.coef_ / col_scale, est.intercept_] if fit_intercept else est.coef_ / col_scale
    b = b * y_scale
    if est.inference_ == "bootstrap":
        cov, _ = window_bootstrap_cov(Xa, ys, b, est.delta_ * y_scale, est.n_bootstrap, rng)
    else:
        cov = sandwich_cov(Xa, ys - Xa @ b, "window" if est.method_.startswith("window") else est.method_,
                           est.delta_ * y_scale)
    return _scale_cov(cov, col_scale, y_scale, fit_intercept)


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("inference", ["auto", "sandwich"])
def test_deferred_equals_eager(window_data, fit_intercept, inference):
    X, y = window_data
    est = _fit(SubsetOfSignalsRegressor(fit_intercept=fit_intercept, inference=inference, n_bootstrap=60), X, y)
    assert est.method_.startswith("window")
    assert "_cov_params" not in vars(est) and "_inference_pending" in vars(est)  # nothing computed by fit
    cov = est.cov_params_
    assert "_inference_pending" not in vars(est)  # computed once, then the kept data are dropped
    # the window sandwich may be NaN ("none": a curvature that is not positive definite), as before
    assert est.inference_ in (("bootstrap",) if inference == "auto" else ("sandwich", "none"))
    # the coefficients pass through the user's units and back by powers of two (exact)
    assert_allclose(cov, _eager_cov(X, y, est, fit_intercept, np.random.default_rng(0)), rtol=1e-12, atol=0)
    assert est.cov_params_ is cov  # cached


def test_random_stream_fixed_at_fit(window_data):
    X, y = window_data
    g = np.random.default_rng(11)
    est = _fit(SubsetOfSignalsRegressor(random_state=g, n_bootstrap=40), X, y)
    g.random(1000)  # the caller's generator moves on after fit: the intervals must not
    ref = _fit(SubsetOfSignalsRegressor(random_state=np.random.default_rng(11), n_bootstrap=40), X, y)
    assert_array_equal(ref.conf_int(), est.conf_int())
    assert_array_equal(est.conf_int(), est.conf_int())


def test_pickle_before_and_after_first_inference(window_data):
    X, y = window_data
    est = _fit(SubsetOfSignalsRegressor(n_bootstrap=40), X, y)
    before = pickle.loads(pickle.dumps(est))
    ci = est.conf_int()
    after = pickle.loads(pickle.dumps(est))
    assert_array_equal(before.conf_int(), ci)
    assert_array_equal(after.conf_int(), ci)
    assert "_inference_pending" not in vars(after)


def test_clone_and_get_params_unaffected(window_data):
    X, y = window_data
    est = _fit(SubsetOfSignalsRegressor(n_bootstrap=40, random_state=5), X, y)
    params = est.get_params()
    est.conf_int()
    assert est.get_params() == params
    c = clone(est)
    assert c.get_params() == params and not hasattr(c, "coef_") and not hasattr(c, "cov_params_")
    with pytest.raises(NotFittedError):
        c.conf_int()
    with pytest.raises(NotFittedError):
        c.bse


def test_data_modified_after_fit_is_refused(window_data):
    X, y = (a.copy() for a in window_data)
    est = _fit(SubsetOfSignalsRegressor(n_bootstrap=40), X, y)
    y[0] += 1.0
    with pytest.raises(RuntimeError, match="modified in place after fit"):
        est.conf_int()


def test_statsmodels_attributes_match_summary(window_data):
    X, y = window_data
    est = _fit(SubsetOfSignalsRegressor(fit_intercept=True, n_bootstrap=40), X, y)
    b = np.r_[est.coef_, est.intercept_]
    assert_array_equal(est.bse, est.coef_se_)
    assert_allclose(est.tvalues, b / est.coef_se_, rtol=1e-15)
    assert_allclose(est.pvalues, 2.0 * stats.norm.sf(np.abs(b / est.coef_se_)), rtol=1e-15)
    table = est.summary().table
    assert_allclose(table[:, 1], est.bse, rtol=1e-15)
    assert_allclose(table[:, 3], est.pvalues, rtol=1e-15)
    assert_allclose(table[:, 4:], est.conf_int(), rtol=1e-15)


def test_dataframe_conf_int_and_series():
    pd = pytest.importorskip("pandas")
    data = make_subset_of_signals(2000, 3, 400, noisy_sigma=1e3, random_state=1)
    df = pd.DataFrame(data.X, columns=["age", "bmi", "bp"])
    est = _fit(SubsetOfSignalsRegressor(fit_intercept=True, n_bootstrap=40), df, data.y)
    ci = est.conf_int(0.1)
    assert isinstance(ci, pd.DataFrame)
    assert list(ci.index) == ["age", "bmi", "bp", "const"] and list(ci.columns) == [0, 1]
    plain = _fit(SubsetOfSignalsRegressor(fit_intercept=True, n_bootstrap=40), data.X, data.y)
    assert_allclose(ci.to_numpy(), plain.conf_int(0.1), rtol=1e-12)
    for attr in ("bse", "tvalues", "pvalues"):
        s = getattr(est, attr)
        assert isinstance(s, pd.Series) and list(s.index) == list(ci.index)
        assert_allclose(s.to_numpy(), getattr(plain, attr), rtol=1e-12)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.5, 2.0])
def test_alpha_outside_unit_interval_named(window_data, alpha):
    X, y = window_data
    est = _fit(SubsetOfSignalsRegressor(n_bootstrap=40), X, y)
    with pytest.raises(ValueError, match=r"'alpha' must lie in the open interval \(0, 1\)"):
        est.conf_int(alpha)


@pytest.mark.parametrize("method", ["lad", "cmed"])
def test_method_without_inference_says_so(method):
    data = make_subset_of_signals(1000, 2, 300, random_state=1)
    est = _fit(SubsetOfSignalsRegressor(method=method), data.X, data.y)
    for call in (lambda: est.conf_int(), lambda: est.bse, lambda: est.pvalues, lambda: est.tvalues,
                 lambda: est.summary()):
        with pytest.raises(ValueError, match=rf"method='{method}'\) gives no standard errors"):
            call()
    assert np.all(np.isnan(est.coef_se_))  # the attribute stays, NaN as documented


def test_converged_means_fixed_point_schedule_completed_the_schedule():
    """Seed 3: the window schedule reaches delta but its last round is not a fixed point."""
    data = make_subset_of_signals(2000, 5, 200, noisy_sigma=LOGU, random_state=3)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        est = SubsetOfSignalsRegressor(method="window", n_bootstrap=40).fit(data.X, data.y)
    assert est.schedule_completed_ and not est.converged_
    assert est.optimality_residual_ > WINDOW_TOL and est.fixed_point_ == est.converged_
    assert not any("did not converge" in str(w.message) for w in rec)  # the schedule ran: no warning
    data = make_subset_of_signals(2000, 5, 200, noisy_sigma=LOGU, random_state=0)
    est = _fit(SubsetOfSignalsRegressor(method="window", n_bootstrap=40), data.X, data.y)
    assert est.schedule_completed_ and est.converged_ and est.optimality_residual_ <= WINDOW_TOL
