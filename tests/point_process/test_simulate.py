"""Tests of the exact LGCP simulator (circulant embedding) in ``algos.point_process._simulate``."""

from __future__ import annotations

import numpy as np
import pytest

from algos.point_process._simulate import LGCPSample, matern_covariance, simulate_lgcp

#: Replicates for the covariance check: the Monte-Carlo standard error of one covariance entry is
#: sqrt((K_ii K_jj + K_ij^2) / R) <= sqrt(2 / R) = 0.058 for unit variance.
N_REP = 600
#: |z| bound for each tested covariance entry: a normal z-score; with ~200 entries per kernel the
#: chance that an exact simulator exceeds 5 anywhere is ~1e-4 (and the seed is fixed).
Z_MAX = 5.0
L_SHAPE = [[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]]


def _cell_centres(s):
    return s.cell_centres()


@pytest.mark.parametrize("nu, length_scale", [(0.5, 0.2), (1.5, 0.15), (1.5, 0.8)])
def test_field_covariance_matches_matern(nu, length_scale):
    # (1.5, 0.8): a long range for a smooth kernel, where the minimal 2(g-1) torus is not
    # nonnegative definite and the embedding must be padded.
    g = 10
    rng = np.random.default_rng(123)
    fields = np.empty((N_REP, g * g))
    for r in range(N_REP):
        s = simulate_lgcp((0, 1, 0, 1), mean=0.0, variance=1.3, length_scale=length_scale, nu=nu,
                          grid=g, random_state=rng)
        fields[r] = s.gp.ravel()
    P = _cell_centres(s)
    D = np.sqrt(((P[:, None, :] - P[None, :, :]) ** 2).sum(-1))
    K = 1.3 * np.exp(-D / length_scale) if nu == 0.5 else \
        1.3 * (1 + np.sqrt(3) * D / length_scale) * np.exp(-np.sqrt(3) * D / length_scale)
    C = fields.T @ fields / N_REP  # zero-mean field: no centring
    rows = [0, g * (g // 2) + g // 2, g * g - 1]  # a corner, the centre, the opposite corner
    for i in rows:
        se = np.sqrt((K[i, i] * np.diag(K) + K[i] ** 2) / N_REP)
        z = (C[i] - K[i]) / se
        assert np.max(np.abs(z)) < Z_MAX, (nu, length_scale, i, np.max(np.abs(z)))
    # the field has mean zero: the grand mean over R*g^2 correlated values, within 5 sd of
    # its exact sd sqrt(1' K 1) / (g^2 sqrt(R))
    sd_mean = np.sqrt(K.sum()) / (g * g * np.sqrt(N_REP))
    assert abs(fields.mean()) < 5 * sd_mean


def test_matern_covariance_values():
    r = np.array([0.0, 0.1, 0.5])
    np.testing.assert_allclose(matern_covariance(r, 2.0, 0.1, 0.5), 2.0 * np.exp(-r / 0.1), rtol=1e-15)
    t = np.sqrt(3) * r / 0.1
    np.testing.assert_allclose(matern_covariance(r, 2.0, 0.1, 1.5), 2.0 * (1 + t) * np.exp(-t), rtol=1e-15)


@pytest.mark.parametrize("window", [(0, 2, 0, 1), L_SHAPE])
def test_counts_are_poisson_given_the_field(window):
    # Given the field, n ~ Poisson(expected_count): z = (n - EC)/sqrt(EC) has mean 0 and variance 1.
    R = 300
    z = np.empty(R)
    rng = np.random.default_rng(7)
    for r in range(R):
        s = simulate_lgcp(window, mean=np.log(60.0), variance=0.5, length_scale=0.2, grid=24,
                          random_state=rng)
        assert np.all(s.window.contains(s.points))
        z[r] = (s.n - s.expected_count) / np.sqrt(s.expected_count)
    # mean within 4 standard errors; sum z^2 ~ chi2_R: within 4 sd sqrt(2R) of R
    assert abs(z.mean()) < 4 / np.sqrt(R)
    assert abs(np.sum(z ** 2) - R) < 4 * np.sqrt(2 * R)


def test_inside_fraction_partitions_polygon_area():
    for poly, area in ((L_SHAPE, 3.0), ([[0, 0], [1, 0], [0.3, 0.9]], 0.45)):
        s = simulate_lgcp(poly, mean=0.0, variance=0.0, length_scale=0.1, grid=37, random_state=0)
        assert np.all((s.inside_fraction >= 0) & (s.inside_fraction <= 1))
        assert abs(s.inside_fraction.sum() * s.cell_area - area) < 1e-12 * area
        # homogeneous field: expected count = rate * |W| exactly
        assert abs(s.expected_count - area) < 1e-12 * area


def test_layout_rows_are_y_columns_are_x():
    # a covariate in x only: log_intensity[i, j] = mean + 2 * xgrid[j] for every row i
    s = simulate_lgcp((0, 2, 0, 1), mean=3.0, variance=0.0, length_scale=0.1, grid=(20, 10),
                      covariates=(lambda xy: xy[:, :1], [2.0]), random_state=1)
    assert s.log_intensity.shape == (10, 20)
    np.testing.assert_allclose(s.log_intensity, 3.0 + 2.0 * np.broadcast_to(s.xgrid, (10, 20)), rtol=1e-14)
    # piecewise-constant lookup: independent cell computation
    xy = np.array([[0.01, 0.99], [1.99, 0.01], [1.05, 0.5]])
    expect = 3.0 + 2.0 * (np.floor(xy[:, 0] / 0.1) * 0.1 + 0.05)
    np.testing.assert_allclose(s.log_intensity_at(xy), expect, rtol=1e-14)
    # more points on the right, where the intensity is e^4 times higher
    assert np.mean(s.points[:, 0] > 1.0) > 0.8


def test_seed_determinism_and_unpacking():
    a = simulate_lgcp((0, 1, 0, 1), mean=5.0, variance=1.0, length_scale=0.1, grid=32, random_state=11)
    b = simulate_lgcp((0, 1, 0, 1), mean=5.0, variance=1.0, length_scale=0.1, grid=32, random_state=11)
    c = simulate_lgcp((0, 1, 0, 1), mean=5.0, variance=1.0, length_scale=0.1, grid=32, random_state=12)
    assert isinstance(a, LGCPSample)
    np.testing.assert_array_equal(a.points, b.points)
    np.testing.assert_array_equal(a.log_intensity, b.log_intensity)
    assert not np.array_equal(a.log_intensity, c.log_intensity)
    pts, field = a
    assert pts is a.points and field is a.log_intensity
    assert a.xgrid.shape == (32,) and a.ygrid.shape == (32,)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(variance=-1.0), ValueError, "'variance'"),
        (dict(length_scale=0.0), ValueError, "'length_scale'"),
        (dict(nu=2.5), ValueError, "'nu' must be one of"),
        (dict(grid=1), ValueError, "'grid'"),
        (dict(grid=(10, 10, 10)), ValueError, "'grid'"),
        (dict(mean=float("nan")), ValueError, "'mean'"),
        (dict(mean=30.0), ValueError, "expects"),
        (dict(covariates=(lambda xy: xy, [1.0])), ValueError, "covariate callable must return"),
        (dict(covariates=[1.0, 2.0]), TypeError, "'covariates' must be a pair"),
        (dict(window=(0, 0, 0, 1)), ValueError, "'window'"),
        (dict(random_state=-1), ValueError, "'random_state'"),
    ],
)
def test_bad_input(kwargs, exc, match):
    args = dict(window=(0, 1, 0, 1), mean=1.0, variance=1.0, length_scale=0.1, grid=16, random_state=0)
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        simulate_lgcp(**args)


def test_log_intensity_at_rejects_nan():
    s = simulate_lgcp((0, 1, 0, 1), mean=1.0, variance=1.0, length_scale=0.1, grid=8, random_state=0)
    with pytest.raises(ValueError, match="finite"):
        s.log_intensity_at([[np.nan, 0.5]])
    with pytest.raises(ValueError, match="shape"):
        s.log_intensity_at([0.5, 0.5, 0.5])
