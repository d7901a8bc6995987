"""theory.hetero_regression values and input checks; the data generator's model."""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

from algos.hetero_regression._data import make_subset_of_signals, oracle_wls
from theory import hetero_regression as th


def test_values_by_hand():
    assert th.sos_rate(20000, 5, 1000) == pytest.approx(math.sqrt(1e5) / 1000)
    assert th.huber_error_bound(20000, 5, 2000) == pytest.approx(3 * math.sqrt(1e5) / 2000)
    assert th.huber_error_bound(100, 1, 10, C=1.0) == pytest.approx(1.0)
    assert th.oracle_floor(5, 2000) == pytest.approx(0.05)
    assert th.huber_regime_threshold(20000, 5) == pytest.approx(4 * math.sqrt(1e5))
    assert th.signal_fraction_alpha(100, 100) == pytest.approx(0.6826894921, rel=1e-9)
    assert th.oblivious_lower_bound(100, 4, 0.5) == pytest.approx(0.4)
    assert th.cs26_rate(16, 4, 2) == pytest.approx(2 * (16 / 16) ** (1 / 6))
    assert th.cs26_regime_threshold(16, 16) == pytest.approx(8 * 2)
    assert th.yuan_liang_trimming_requirement(100, 0.25) == pytest.approx(75)
    assert th.liang_yuan_mean_rate(100, 10) == pytest.approx(math.sqrt(100 * math.log(100)) / 10)
    assert set(th.BOUND_KIND) <= set(th.__all__)


def test_sos_rate_scales_as_stated():
    assert th.sos_rate(4 * 1000, 5, 100) == pytest.approx(2 * th.sos_rate(1000, 5, 100))
    assert th.sos_rate(1000, 5, 200) == pytest.approx(th.sos_rate(1000, 5, 100) / 2)
    # the CS26 rate is below sqrt(nd)/m once m is large enough (it improves on the regime)
    assert th.cs26_rate(10**6, 5, 10**5) < th.sos_rate(10**6, 5, 10**5)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: th.sos_rate(10, 2, 11), ValueError, r"'m' must be at most n = 10; got 11"),
        (lambda: th.sos_rate(10, 0, 1), ValueError, r"'d' must be an int in \(0, inf\)"),
        (lambda: th.sos_rate(10.5, 2, 1), TypeError, r"'n' must be an int"),
        (lambda: th.huber_error_bound(10, 2, 3, C=-1), ValueError, r"'C' must be a float in \(0, inf\)"),
        (lambda: th.oblivious_lower_bound(10, 2, 1.5), ValueError, r"'alpha' must be a float in \(0, 1\]"),
        (lambda: th.yuan_liang_trimming_requirement(10, 1.0), ValueError, r"'alpha'"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_generator_follows_the_model():
    data = make_subset_of_signals(20000, 3, 5000, noisy_sigma=("loguniform", 10, 1000), random_state=0)
    assert data.signal_mask.sum() == 5000
    assert np.all(data.sigma[data.signal_mask] == 1.0)
    assert np.all((data.sigma[~data.signal_mask] >= 10) & (data.sigma[~data.signal_mask] <= 1000))
    assert np.linalg.norm(data.beta) == pytest.approx(1.0)
    resid = data.y - data.X @ data.beta
    # standardised residuals are N(0, 1): variance within 5 % (n = 20000 gives SE ~1 %)
    assert np.var(resid / data.sigma) == pytest.approx(1.0, rel=0.05)
    again = make_subset_of_signals(20000, 3, 5000, noisy_sigma=("loguniform", 10, 1000), random_state=0)
    assert_allclose(again.y, data.y)


@pytest.mark.parametrize("design", ["gaussian", "student", "uniform", "diabetes"])
@pytest.mark.parametrize("noise", ["gaussian", "laplace", "student"])
def test_designs_and_noises_have_unit_scale(design, noise):
    data = make_subset_of_signals(20000, 4, 20000, design=design, noise=noise, random_state=1)
    assert_allclose(data.X.std(axis=0), 1.0, rtol=0.06)
    assert np.std(data.y - data.X @ data.beta) == pytest.approx(1.0, rel=0.06)


def test_groupwise_sources():
    data = make_subset_of_signals(220, 3, 60, n_groups=11, noisy_sigma=1e3, random_state=0)
    groups = np.repeat(np.arange(11), 20)
    for g in range(11):  # one sigma per group
        assert np.unique(data.sigma[groups == g]).size == 1
    assert data.signal_mask.sum() == 60  # round(60 / 20) = 3 groups of 20


def test_oracle_wls_and_bad_input():
    data = make_subset_of_signals(5000, 2, 1000, random_state=3)
    b = oracle_wls(data.X, data.y, data.sigma)
    assert np.linalg.norm(b - data.beta) < 5 * math.sqrt(2 / 1000)
    with pytest.raises(ValueError, match="'sigma' must be finite and positive"):
        oracle_wls(data.X, data.y, np.zeros(5000))
    with pytest.raises(ValueError, match=r"'m' must be an int in \[0, 10\]; got 11"):
        make_subset_of_signals(10, 2, 11)
    with pytest.raises(ValueError, match="'noisy_sigma' must be"):
        make_subset_of_signals(10, 2, 5, noisy_sigma=("weird", 1))
    with pytest.raises(ValueError, match=r"'d' must be at most 10 for design='diabetes'"):
        make_subset_of_signals(10, 11, 5, design="diabetes")
    with pytest.raises(ValueError, match=r"'design' must be one of"):
        make_subset_of_signals(10, 2, 5, design="cauchy")
