"""Bad input of the hetero_regression module: clean errors that name the argument, and the overflow
paths (huge responses) that used to crash or return NaN."""

from __future__ import annotations

import numpy as np
import pytest

import algos.hetero_regression as H
import theory.hetero_regression as T
from algos.cli import main


@pytest.fixture(scope="module")
def data():
    return H.make_subset_of_signals(300, 2, 150, noisy_sigma=10.0, random_state=0)


ESTIMATORS = [H.SubsetOfSignalsRegressor, H.HuberSoSRegressor, H.CoordinateMedianRegressor,
              H.IterativeWindowRegressor, H.LADRegressor, H.FeasibleWLSRegressor, H.TrimmedLSRegressor]


@pytest.mark.parametrize("func", [H.ols, H.lad, H.feasible_wls, H.iterative_trimming])
def test_functions_name_a_string_argument(func, data):
    with pytest.raises(TypeError, match="'X' must be an array of real numbers"):
        func(np.full(data.X.shape, "abc"), data.y)
    with pytest.raises(TypeError, match="'y' must be an array of real numbers"):
        func(data.X, ["abc"] * len(data.y))


@pytest.mark.parametrize("Est", ESTIMATORS)
def test_estimators_name_string_data(Est, data):
    with pytest.raises(TypeError, match="'X' must be an array of real numbers"):
        Est().fit(np.full(data.X.shape, "abc"), data.y)
    with pytest.raises(TypeError, match="'y' must be an array of real numbers"):
        Est().fit(data.X, np.full(data.y.shape, "abc"))
    est = Est().fit(data.X, data.y)
    with pytest.raises(TypeError, match="'X' must be an array of real numbers"):
        est.predict(np.full(data.X.shape, "abc"))
    with pytest.raises(ValueError, match="'y' must be 1 or 2-dimensional"):
        est.score(data.X, np.asarray(2.0))
    with pytest.raises(TypeError, match="'y' must be an array of real numbers"):
        est.score(data.X, np.full(data.y.shape, "abc"))


@pytest.mark.parametrize("Est", [H.LADRegressor, H.HuberSoSRegressor])
def test_score_survives_overflowing_sums_of_squares(Est, data):
    est = Est().fit(data.X, data.y)
    pred = est.predict(data.X)
    assert est.score(data.X, data.y) == pytest.approx(1 - np.sum((data.y - pred) ** 2)
                                                      / np.sum((data.y - data.y.mean()) ** 2), abs=1e-12)
    big = 1e200
    got = est.score(data.X, data.y * big)  # squares of 1e200 overflow float64
    # reference computed in units of 1e200 (residuals y - pred / 1e200, deviations y - mean(y))
    ref = 1 - np.sum((data.y - pred / big) ** 2) / np.sum((data.y - data.y.mean()) ** 2)
    assert np.isfinite(got) and got == pytest.approx(ref, rel=1e-9)
    with pytest.raises(ValueError, match="'X'.*'y'"):  # R^2 itself below -1.8e308
        est.score(data.X * big, data.y)


@pytest.mark.filterwarnings("ignore::algos.hetero_regression.ConvexRegimeWarning")  # no inlier, by design
def test_huge_responses_fit(data):
    # y of magnitude 1e300 with delta = 1: every row is an outlier; the fit is the one of delta = 2^-997 on y
    s = 2.0 ** 997
    coef = H.HuberSoSRegressor().fit(data.X, data.y * s).coef_
    ref = H.HuberSoSRegressor(delta=1.0 / s).fit(data.X, data.y).coef_ * s
    np.testing.assert_allclose(coef, ref, rtol=1e-9)
    # feasible WLS is scale equivariant: the squared residuals of 2^600 y overflow unless rescaled
    np.testing.assert_allclose(H.feasible_wls(data.X, data.y * 2.0**600) / 2.0**600, H.feasible_wls(data.X, data.y),
                               rtol=1e-9, atol=1e-12)
    assert np.all(np.isfinite(H.FeasibleWLSRegressor().fit(data.X, data.y * 1e200).coef_))


def test_oracle_wls_checks_before_lapack(data):
    X = data.X.copy()
    X[3, 1] = np.nan  # LAPACK's least squares can loop on NaN: rejected first
    with pytest.raises(ValueError, match="'X' must contain only finite values"):
        H.oracle_wls(X, data.y, data.sigma)
    with pytest.raises(TypeError, match="'y' must be an array of real numbers"):
        H.oracle_wls(data.X, data.y + 1j, data.sigma)
    with pytest.raises(TypeError, match="'sigma'"):
        H.oracle_wls(data.X, data.y, ["a"] * len(data.y))
    with pytest.raises(ValueError, match="'y' must contain only finite values"):
        H.oracle_wls(data.X, np.r_[np.inf, data.y[1:]], data.sigma)


def test_suggest_delta_rejects_complex(data):
    with pytest.raises(TypeError, match="'X'"):
        H.suggest_delta(data.X.astype(complex) + 1j, data.y)
    with pytest.raises(TypeError, match="'y'"):
        H.suggest_delta(data.X, data.y + 1j)


def test_rate_table_checks_ms():
    table = T.rate_table(2000, 5, [100, 200])
    assert table["sos_rate"].tolist() == [T.sos_rate(2000, 5, 100), T.sos_rate(2000, 5, 200)]
    for bad, exc in (([100.5], TypeError), ([np.inf], ValueError), ([np.nan], ValueError), ([100 + 1j], TypeError),
                     (["a"], TypeError), ([[100]], ValueError), (100, ValueError), ([0], ValueError),
                     ([3000], ValueError)):
        with pytest.raises(exc, match="'ms'"):
            T.rate_table(2000, 5, bad)


def _one_line(err):
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and ": error:" in lines[0], err
    return lines[0]


def test_cli_rejects_options_of_the_other_action(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2))
    y = X @ [1.0, -1.0] + rng.normal(size=50)
    path = tmp_path / "d.csv"
    path.write_text("x1,x2,y\n" + "\n".join(f"{a},{b},{c}" for (a, b), c in zip(X, y)) + "\n")
    fit = ["hetero", "--csv", str(path), "--target", "y", "--estimator", "ols"]
    assert main(fit) == 0
    capsys.readouterr()
    for extra in (["--seed", "3"], ["--n", "100"], ["--reps", "2"], ["--ms", "10"], ["--noisy-sigma", "5"]):
        assert main(fit + extra) == 2
        assert "applies only to `algos hetero simulate`" in _one_line(capsys.readouterr().err)
    sim = ["hetero", "simulate", "--n", "200", "--d", "2", "--ms", "50", "--reps", "1", "--estimator", "ols"]
    for extra in (["--csv", str(path)], ["--target", "y"], ["--intercept"], ["--delta", "2"], ["--features", "x1"]):
        assert main(sim + extra) == 2
        assert "applies only to `algos hetero fit`" in _one_line(capsys.readouterr().err)
