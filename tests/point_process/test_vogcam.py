"""VoGCAM: spec section 2 (T3-T8, T10), acceptance experiments of section 8, and bad input."""

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.spatial.distance import cdist

from algos.point_process import (
    HyperparameterWarning,
    RasterCovariates,
    VoGCAM,
    build_quadrature,
    matern,
    simulate_lgcp,
)
from algos.point_process.vogcam._nngp import JITTER
from algos.point_process.vogcam._vogcam_solver import VoGCAMSolver
from theory.point_process import (
    elbo_upper_bound_check,
    expected_loglik,
    gauss_hermite_log_evidence,
    s_fixed_point_rate,
)

#: Stationarity of the m-block at convergence (spec T6).
GRAD_TOL = 1e-6
#: ||P S - I|| in dense mode (spec T6).
PS_TOL = 1e-8
#: Allowed ELBO drop per block, relative (spec T7).
MONO_RTOL = 1e-9
#: Different random starts reach the same optimum (spec T5(b): 1e-6).
START_TOL = 1e-6


def _dense_elbo(y, w, m, S, mu, K):
    """Independent dense ELBO: E_q log-lik - KL(N(m,S) || N(mu,K))."""
    Kinv = np.linalg.inv(K)
    r = m - mu
    kl = 0.5 * (np.trace(Kinv @ S) + r @ Kinv @ r - len(m) + np.linalg.slogdet(K)[1] - np.linalg.slogdet(S)[1])
    return y @ m - np.sum(w * np.exp(m + 0.5 * np.diag(S))) - kl


def _pattern(seed=0, n=120):
    rng = np.random.default_rng(seed)
    return rng.uniform(size=(n, 2))


@pytest.fixture(scope="module")
def fixed_theta_fit():
    X = simulate_lgcp((0, 1, 0, 1), math.log(150), 1.0, 0.15, grid=64, random_state=3).points
    est = VoGCAM(window=(0, 1, 0, 1), n_dummy=144, optimize_hyperparameters=(), variance=1.0, length_scale=0.15,
                 tol=1e-13, max_iter=100, solver="dense").fit(X)
    return X, est


# ----------------------------------------------------------------------------- T3, T4, T5(a)
def test_closed_form_expected_loglik_T3():
    rng = np.random.default_rng(0)
    N = 5
    y = rng.integers(0, 3, N).astype(float)
    w = rng.uniform(0.1, 1.0, N)
    m = rng.normal(0, 0.5, N)
    A = rng.normal(size=(N, N)) * 0.3
    S = A @ A.T + 0.1 * np.eye(N)
    F = rng.multivariate_normal(m, S, size=200_000)
    vals = F @ y - np.exp(F) @ w
    se = vals.std() / math.sqrt(len(vals))
    assert abs(vals.mean() - expected_loglik(y, w, m, np.diag(S))) <= 5 * se


@pytest.mark.parametrize("N", [1, 2])
def test_elbo_below_evidence_T4(N):
    rng = np.random.default_rng(N)
    X = rng.uniform(size=(N, 2))
    K = 1.3 * (matern(cdist(X, X), 0.4) + JITTER * np.eye(N))
    mu = np.full(N, 0.2)
    y = np.array([1.0, 0.0][:N])
    w = np.array([0.7, 0.4][:N])
    logZ = gauss_hermite_log_evidence(y, w, mu, K, n_nodes=60)
    for _ in range(20):
        m = rng.normal(0, 1, N)
        A = rng.normal(size=(N, N)) * 0.5
        S = A @ A.T + 0.05 * np.eye(N)
        assert elbo_upper_bound_check(_dense_elbo(y, w, m, S, mu, K), logZ)

    def neg(p):
        m = p[:N]
        Lc = np.zeros((N, N))
        Lc[np.tril_indices(N)] = p[N:]
        return -_dense_elbo(y, w, m, Lc @ Lc.T + 1e-12 * np.eye(N), mu, K)

    p0 = np.concatenate([mu, np.eye(N)[np.tril_indices(N)] * 0.5])
    best = -minimize(neg, p0, method="BFGS").fun
    assert elbo_upper_bound_check(best, logZ)
    assert best > logZ - 0.5  # the Gaussian family is close for these small problems


def test_elbo_concave_T5():
    rng = np.random.default_rng(11)
    N = 6
    X = rng.uniform(size=(N, 2))
    K = matern(cdist(X, X), 0.3) + JITTER * np.eye(N)
    y = rng.integers(0, 2, N).astype(float)
    w = rng.uniform(0.05, 0.3, N)
    for _ in range(25):
        ma, mb = rng.normal(size=N), rng.normal(size=N)
        A1, A2 = rng.normal(size=(N, N)), rng.normal(size=(N, N))
        Sa, Sb = A1 @ A1.T + 0.1 * np.eye(N), A2 @ A2.T + 0.1 * np.eye(N)
        t = rng.uniform(0.05, 0.95)
        ea, eb = _dense_elbo(y, w, ma, Sa, 0, K), _dense_elbo(y, w, mb, Sb, 0, K)
        ec = _dense_elbo(y, w, t * ma + (1 - t) * mb, t * Sa + (1 - t) * Sb, 0, K)
        assert ec - (t * ea + (1 - t) * eb) >= -1e-9 * (1 + abs(ea) + abs(eb))


# ----------------------------------------------------------------------------- T5(b), T6, T8, T10
def test_unique_optimum_from_random_starts_T5(fixed_theta_fit, monkeypatch):
    X, ref = fixed_theta_fit
    rng = np.random.default_rng(5)
    for scale in (0.5, 2.0):
        offset = rng.normal(0, scale, ref.n_nodes_)
        # start the ascent from m0 + offset instead of the constant m0
        monkeypatch.setattr(VoGCAMSolver, "initial_mean", staticmethod(lambda m0, n, o=offset: m0 + o))
        est = VoGCAM(**ref.get_params())
        est.fit(X)
        assert np.max(np.abs(est.mean_ - ref.mean_)) <= START_TOL
        assert np.max(np.abs(est.var_ - ref.var_)) <= START_TOL


def test_stationarity_T6(fixed_theta_fit):
    X, est = fixed_theta_fit
    assert est.converged_
    assert est.grad_norm_ <= GRAD_TOL
    st8, prior = est._state, est._prior_fac
    Q = prior.Q.toarray()
    lam = est._w * np.exp(est._m + 0.5 * st8["s"])
    P = Q + np.diag(lam)
    S = st8["fac"]._inv()
    assert np.max(np.abs(P @ S - np.eye(len(P)))) <= PS_TOL
    Kt = np.linalg.inv(Q)
    assert np.all(np.diag(S) <= np.diag(Kt) + 1e-12)
    assert np.all(1.0 / (np.diag(Q) + lam) <= np.diag(S) + 1e-12)


def test_fixed_point_contraction_T8():
    X = simulate_lgcp((0, 1, 0, 1), math.log(100), 0.5, 0.2, grid=64, random_state=4).points
    for s2 in (0.5, 1.0):
        est = VoGCAM(window=(0, 1, 0, 1), n_dummy=100, variance=s2, length_scale=0.2, optimize_hyperparameters=(),
                     solver="dense").fit(X)
        Kt = np.linalg.inv(est._prior_fac.Q.toarray())
        rate = s_fixed_point_rate(np.max(np.diag(Kt)))
        n_checked = 0
        for steps in est._ascent.fp_history:
            for a, b in zip(steps[:-1], steps[1:]):
                assert b <= rate * a + 1e-14
                n_checked += 1
        assert n_checked >= 3


def test_newton_warm_start_T10(fixed_theta_fit):
    X, est = fixed_theta_fit
    rng = np.random.default_rng(2)
    m = est._m + rng.normal(0, 0.02, len(est._m))
    est._ascent.m_block(m, est._state, est._prior_fac, est._beta, None)
    assert est._ascent.last_grad < 1e-8 * (1 + est._y.max())
    assert est._ascent.newton_iters <= 8


# ----------------------------------------------------------------------------- T7
@pytest.mark.parametrize("seed, variance, length_scale", [(0, 1.0, 0.1), (1, 1.0, 0.1), (2, 1.0, 0.1), (3, 2.0, 0.05)],
                         ids=["seed0", "seed1", "seed2", "strongly-clustered"])
def test_monotone_elbo_T7(seed, variance, length_scale):
    mean = math.log(200) - 0.5 * variance
    X = simulate_lgcp((0, 1, 0, 1), mean, variance, length_scale, grid=64, random_state=seed).points
    # the ELBO's own hyperparameter ascent (the default "auto" fixes them at the minimum contrast)
    est = VoGCAM(window=(0, 1, 0, 1), n_dummy=121, max_iter=25, tol=1e-7, hyperparameters="elbo")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
    d = np.diff(est.elbo_blocks_)
    assert np.all(d >= -MONO_RTOL * (1 + np.abs(est.elbo_blocks_[1:])))
    assert np.all(np.diff(est.elbo_history_) >= -MONO_RTOL * (1 + abs(est.elbo_)))


# ----------------------------------------------------------------------------- acceptance 8.1 / 8.2 / 8.3
@pytest.mark.parametrize("window", [(0, 2, 0, 1), [[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]]])
def test_homogeneous_poisson_recovery(window):
    from algos.point_process import Window

    win = Window.from_any(window)
    rng = np.random.default_rng(8)
    xmin, xmax, ymin, ymax = win.bounds
    n_box = rng.poisson(200 * (xmax - xmin) * (ymax - ymin))
    X = np.column_stack([rng.uniform(xmin, xmax, n_box), rng.uniform(ymin, ymax, n_box)])
    X = X[win.contains(X)]
    est = VoGCAM(window=window, variance=1e-6, optimize_hyperparameters=("mean",), tol=1e-12, n_dummy=400).fit(X)
    assert abs(est.weights_.sum() - win.area) <= 1e-10 * win.area
    assert abs(est.coef_[0] - math.log(len(X) / win.area)) <= 1e-4
    assert abs(est.expected_count() / len(X) - 1) <= 1e-3
    lam = est.predict_intensity(X[:20])
    assert np.allclose(lam, len(X) / win.area, rtol=1e-3)


def _dense_vg(y, w, mu, K, iters=200):
    """Independent dense variational Gaussian fit with fixed prior (Newton on m, fixed point on S)."""
    Kinv = np.linalg.inv(K)
    m = mu.copy()
    s = np.diag(K).copy()
    for _ in range(iters):
        lam = w * np.exp(m + 0.5 * s)
        g = y - lam - Kinv @ (m - mu)
        m = m + np.linalg.solve(Kinv + np.diag(lam), g)
        lam = w * np.exp(m + 0.5 * s)
        S = np.linalg.inv(Kinv + np.diag(lam))
        s_new = np.diag(S)
        if np.max(np.abs(s_new - s)) < 1e-13 and np.max(np.abs(g)) < 1e-11:
            break
        s = s_new
    return m, s


def test_dense_equals_full_k_and_k15_close(shared_data_dir):
    X = np.loadtxt(shared_data_dir / "points" / "redwood.csv", delimiter=",", comments="#")
    win = (0, 1, -1, 0)
    q = build_quadrature(X, win, n_dummy=256)
    N = q.n_nodes
    kw = dict(window=win, n_dummy=256, variance=1.0, length_scale=0.1, optimize_hyperparameters=(), tol=1e-13)
    full = VoGCAM(n_neighbors=N - 1, **kw).fit(X)
    K = matern(cdist(q.nodes, q.nodes), 0.1) + JITTER * np.eye(N)
    mu = np.full(N, full.coef_[0])
    m_ref, s_ref = _dense_vg(q.counts, q.weights, mu, K)
    assert np.max(np.abs(full.mean_ - m_ref)) <= 1e-6
    assert np.max(np.abs(full.var_ - s_ref)) <= 1e-6
    k15 = VoGCAM(n_neighbors=15, **kw).fit(X)
    assert abs(k15.elbo_ - full.elbo_) <= 0.005 * abs(full.elbo_)
    assert np.sqrt(np.mean((k15.mean_ - full.mean_) ** 2)) < 0.02
    assert np.all(np.diff(k15.elbo_history_) >= -MONO_RTOL * (1 + abs(k15.elbo_)))


#: Posterior expected counts within this many Poisson standard deviations of the field's true count:
#: 3 sd of the sum of two errors of about sqrt(Lambda) each (the data's Poisson noise n - Lambda, and the
#: posterior's smoothing of region counts, E_q N(A) - n(A)), so 3 * sqrt(2).
COUNT_Z = 3.0 * math.sqrt(2.0)


def _true_count(smp, region=None):
    """Expected number of points of the simulated field in ``region`` (cells whose centre lies in it)."""
    from algos.point_process import Window

    lam = np.exp(smp.log_intensity) * smp.cell_area * smp.inside_fraction
    if region is None:
        return float(lam.sum())
    inside = Window.from_any(region).contains(smp.cell_centres()).reshape(lam.shape)
    return float(lam[inside].sum())


def test_expected_count_tracks_the_true_field_on_a_strongly_clustered_pattern():
    """sigma^2 = 2, range 0.05: the posterior count in each quarter of the window against the field's
    true expected count there (the total is pinned to n by stationarity; the quarters are not)."""
    smp = simulate_lgcp((0, 1, 0, 1), math.log(400) - 1.0, 2.0, 0.05, grid=128, random_state=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = VoGCAM(window=(0, 1, 0, 1), hyperparameters="min_contrast", n_dummy=256).fit(smp.points)
    for region in ((0, 0.5, 0, 0.5), (0.5, 1, 0, 0.5), (0, 0.5, 0.5, 1), (0.5, 1, 0.5, 1)):
        lam = _true_count(smp, region)
        assert abs(est.expected_count(region) - lam) <= COUNT_Z * math.sqrt(lam) + 0.05 * lam, region


def test_simulated_lgcp_recovery():
    smp = simulate_lgcp((0, 1, 0, 1), math.log(300) - 0.5, 1.0, 0.1, grid=128, random_state=1)
    est = VoGCAM(window=(0, 1, 0, 1), n_dummy=400).fit(smp.points)
    g = (np.arange(64) + 0.5) / 64
    G = np.column_stack([np.repeat(g, 64), np.tile(g, 64)])
    mu, sd = est.predict_log_intensity(G, return_std=True)
    truth = smp.log_intensity_at(G)
    rmse = np.sqrt(np.mean((mu - truth) ** 2))
    cover = np.mean(np.abs(mu - truth) <= 1.959964 * sd)
    # spec [R]: median over 20 seeds <= 0.45 with 500 expected points on default nodes; here one seed, 300
    # expected points and 400 dummies (CI budget), so the information per cell is lower
    assert rmse <= 0.8
    assert 0.85 <= cover <= 0.99
    # the expected count against the TRUE expected count of the simulated field, in the window and in
    # its left half (n is Poisson around it: COUNT_Z Poisson standard deviations); the identity
    # E_q N = n that stationarity forces with an intercept is only a sanity check
    for region in (None, (0, 0.5, 0, 1)):
        lam = _true_count(smp, region)
        assert abs(est.expected_count(region) - lam) <= COUNT_Z * math.sqrt(lam)
    assert abs(est.expected_count() / len(smp.points) - 1) < 1e-3
    assert 0.5 <= est.variance_ <= 2.0


def test_recovery_beats_grid_laplace_at_equal_node_count():
    """Spec 8.3 on three seeds at the spec's setting (E n = 500, default nodes, all hyperparameters fitted):
    coverage in [0.85, 0.99], variance in [0.5, 2], and a lower mean RMSE than GridLaplaceLGCP with about as
    many cells as VoGCAM has nodes and VoGCAM's hyperparameters (so only the approximation differs). The
    benchmark's 20-seed run (docs/point_process.md) has VoGCAM ahead on 19 of 20 seeds by 0.04 median."""
    from algos.point_process.baselines import GridLaplaceLGCP

    rm_v, rm_g = [], []
    for seed in (0, 1, 2):
        s = simulate_lgcp((0, 1, 0, 1), math.log(500) - 0.5, 1.0, 0.1, grid=128, random_state=seed)
        C = s.cell_centres()
        truth = s.log_intensity.ravel()
        est = VoGCAM(window=(0, 1, 0, 1), random_state=0).fit(s.points)
        mu, sd = est.predict_log_intensity(C, return_std=True)
        cover = np.mean(np.abs(mu - truth) <= 1.959964 * sd)
        assert 0.85 <= cover <= 0.99
        assert 0.5 <= est.variance_ <= 2.0
        side = int(round(math.sqrt(est.n_nodes_)))
        gl = GridLaplaceLGCP(window=(0, 1, 0, 1), grid=side, variance=est.variance_, length_scale=est.length_scale_,
                             solver="fft", n_var_samples=16, random_state=0).fit(s.points)
        rm_v.append(np.sqrt(np.mean((mu - truth) ** 2)))
        rm_g.append(np.sqrt(np.mean((gl.predict_log_intensity(C) - truth) ** 2)))
    assert np.mean(rm_v) < np.mean(rm_g)


# ----------------------------------------------------------------------------- API, covariates, modes
def test_predict_sample_and_bands(fixed_theta_fit):
    X, est = fixed_theta_fit
    Xq = np.random.default_rng(0).uniform(size=(30, 2))
    mean, lo, hi = est.predict_intensity(Xq, alpha=0.1)
    assert np.all(lo < mean) and np.all(mean < hi)
    mu, sd = est.predict_log_intensity(Xq, return_std=True)
    draws = est.sample_posterior(Xq, n_samples=3000, random_state=0)
    assert np.all(np.abs(draws.mean(0) - mu) <= 5 * sd / math.sqrt(3000) + 1e-12)
    assert np.allclose(draws.std(0), sd, rtol=0.1)
    # at a node the prediction reproduces the node posterior
    j = 7
    mu_j, sd_j = est.predict_log_intensity(est.nodes_[j:j + 1], return_std=True)
    assert mu_j[0] == pytest.approx(est.mean_[j], abs=1e-5)
    assert sd_j[0] ** 2 == pytest.approx(est.var_[j], abs=1e-5)
    assert est.score() == est.elbo_
    assert np.isfinite(est.score(X))
    assert est.expected_count((0, 0.5, 0, 1)) < est.expected_count()


def test_sparse_and_dense_solvers_agree():
    X = simulate_lgcp((0, 1, 0, 1), math.log(200), 1.0, 0.15, grid=64, random_state=6).points
    kw = dict(window=(0, 1, 0, 1), n_dummy=225, optimize_hyperparameters=(), tol=1e-12)
    a = VoGCAM(solver="dense", **kw).fit(X)
    b = VoGCAM(solver="sparse", **kw).fit(X)
    assert np.max(np.abs(a.mean_ - b.mean_)) < 1e-7
    assert np.max(np.abs(a.var_ - b.var_)) < 1e-7
    Xq = np.random.default_rng(1).uniform(size=(40, 2))
    assert np.allclose(a.predict_log_intensity(Xq, return_std=True), b.predict_log_intensity(Xq, return_std=True),
                       atol=1e-6)
    # both std_method give the sd of the kriging predictor under the sparse fit's dense posterior
    # covariance S = P^{-1} (columns by solves), at STD_RTOL
    STD_RTOL = 1e-10
    _, _, nb, A, Fc = b._conditional(Xq)
    S = b._state["fac"].solve(np.eye(b.n_nodes_))
    sd_dense = np.sqrt(b._sigma2 * Fc + np.einsum("ij,ijk,ik->i", A, S[nb[:, :, None], nb[:, None, :]], A))
    for how in ("reach", "neighbourhood"):
        assert np.max(np.abs(b.predict_log_intensity(Xq, return_std=True, std_method=how)[1] - sd_dense)
                      / sd_dense) <= STD_RTOL
    with pytest.raises(ValueError, match="std_method"):
        b.predict_intensity(Xq, std_method="exact")
    # joint draws through the sparse factor (pi^T L^{-T} z) have the predicted moments: mean within 5
    # standard errors, sd within 10% (the sd of a 3000-draw sd estimate is ~1.3%)
    assert b.solver_ == "sparse"
    draws = b.sample_posterior(Xq, n_samples=3000, random_state=0)
    mu, sd = b.predict_log_intensity(Xq, return_std=True)
    assert np.all(np.abs(draws.mean(0) - mu) <= 5 * sd / math.sqrt(3000))
    assert np.allclose(draws.std(0), sd, rtol=0.1)


def test_mean_field_lower_elbo():
    X = simulate_lgcp((0, 1, 0, 1), math.log(200), 1.0, 0.15, grid=64, random_state=6).points
    kw = dict(window=(0, 1, 0, 1), n_dummy=225, optimize_hyperparameters=(), tol=1e-12)
    full = VoGCAM(**kw).fit(X)
    diag = VoGCAM(covariance="diag", **kw).fit(X)
    assert diag.elbo_ < full.elbo_
    assert np.all(np.diff(diag.elbo_blocks_) >= -MONO_RTOL * (1 + abs(diag.elbo_)))


def test_covariates_callable_raster_and_array():
    xs = np.linspace(0, 1, 21)
    ys = np.linspace(0, 1, 11)
    img = np.add.outer(ys * 0, xs)  # covariate = x
    cov = RasterCovariates({"x": img}, xs, ys, standardize=False)
    smp = simulate_lgcp((0, 1, 0, 1), math.log(300), 0.3, 0.2, grid=64, covariates=None, random_state=2)
    # thin by exp(1.5 x) / exp(1.5) to plant a covariate effect
    rng = np.random.default_rng(0)
    X = smp.points[rng.uniform(size=len(smp.points)) < np.exp(1.5 * (smp.points[:, 0] - 1))]
    kw = dict(window=(0, 1, 0, 1), n_dummy=144, variance=0.3, length_scale=0.2, optimize_hyperparameters=("mean",),
              tol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = VoGCAM(**kw).fit(X, covariates=cov)
        q = build_quadrature(X, (0, 1, 0, 1), n_dummy=144)
        b = VoGCAM(**kw).fit(X, covariates=q.nodes[:, :1])
    assert a.coef_.shape == (2,)
    assert np.allclose(a.coef_, b.coef_, atol=1e-6)
    assert 0.3 < a.coef_[1] < 3.0
    Xq = np.array([[0.2, 0.5], [0.8, 0.5]])
    assert np.allclose(a.predict_log_intensity(Xq), b.predict_log_intensity(Xq, covariates=Xq[:, :1]), atol=1e-6)
    with pytest.raises(ValueError, match="covariates"):
        b.predict_log_intensity(Xq)


# ----------------------------------------------------------------------------- bad input
def test_bad_input_errors():
    X = _pattern()
    with pytest.raises(ValueError, match="outside the window"):
        VoGCAM(window=(0, 0.5, 0, 1)).fit(X)
    Xn = X.copy()
    Xn[3, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        VoGCAM(window=(0, 1, 0, 1)).fit(Xn)
    with pytest.raises(ValueError, match="not simple"):
        VoGCAM(window=[[0, 0], [1, 1], [1, 0], [0, 1]]).fit(X)
    with pytest.raises(ValueError, match="at least 4 nodes"):
        VoGCAM(window=(0, 1, 0, 1), n_dummy=0).fit(X[:2])
    with pytest.raises(ValueError, match="'nu'"):
        VoGCAM(window=(0, 1, 0, 1), nu=2.5).fit(X)
    with pytest.raises(ValueError, match="'covariance'"):
        VoGCAM(window=(0, 1, 0, 1), covariance="low-rank").fit(X)
    with pytest.raises(ValueError, match="collinear"):
        VoGCAM(window=(0, 1, 0, 1), n_dummy=64).fit(X, covariates=lambda s: np.ones((len(s), 1)))


def test_empty_and_duplicates_and_clockwise():
    # an empty pattern is refused as by the summaries (k_function([]) raises too)
    for empty in (np.empty((0, 2)), []):
        with pytest.raises(ValueError, match="'X' needs at least 1 point"):
            VoGCAM(window=(0, 1, 0, 1), n_dummy=64, variance=0.5, optimize_hyperparameters=()).fit(empty)
    X = _pattern(1, 50)
    dup = np.vstack([X, X[:5]])
    with pytest.warns(UserWarning, match="'X' has 5 duplicated point"):
        a = VoGCAM(window=(0, 1, 0, 1), n_dummy=64, optimize_hyperparameters=("mean",), tol=1e-13).fit(dup)
    assert a.counts_.sum() == 55 and a.counts_.max() == 2
    assert abs(a.expected_count() - 55) < 1e-3
    cw = [[0, 0], [0, 1], [1, 1], [1, 0]]  # clockwise square: reoriented
    b = VoGCAM(window=cw, n_dummy=64, optimize_hyperparameters=("mean",)).fit(X)
    c = VoGCAM(window=(0, 1, 0, 1), n_dummy=64, optimize_hyperparameters=("mean",)).fit(X)
    assert b.elbo_ == pytest.approx(c.elbo_, rel=1e-10)


def test_large_units_rescaled():
    X = simulate_lgcp((0, 1, 0, 0.5), math.log(300), 1.0, 0.1, grid=64, random_state=9).points
    kw = dict(n_dummy=100, max_iter=30, tol=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = VoGCAM(window=(0, 1, 0, 0.5), **kw).fit(X)
        b = VoGCAM(window=(0, 1000, 0, 500), **kw).fit(X * 1000)
    assert b.length_scale_ == pytest.approx(1000 * a.length_scale_, rel=1e-5)
    assert b.variance_ == pytest.approx(a.variance_, rel=1e-5)
    assert np.allclose(b.mean_, a.mean_ - 2 * math.log(1000), atol=1e-5)
    assert b.expected_count() == pytest.approx(a.expected_count(), rel=1e-8)
    assert b.predict_intensity(X[:5] * 1000) == pytest.approx(a.predict_intensity(X[:5]) / 1e6, rel=1e-5)


def test_range_at_bound_warns():
    X = simulate_lgcp((0, 1, 0, 1), math.log(150), 1.0, 0.05, grid=64, random_state=2).points
    with pytest.warns(HyperparameterWarning, match="bound"):
        VoGCAM(window=(0, 1, 0, 1), n_dummy=64, max_iter=15, length_scale_bounds=(0.5, 0.6),
               hyperparameters="elbo").fit(X)


@pytest.mark.parametrize("seed, variance", [(1, 20.0), (2, 30.0)])
def test_full_covariance_beats_mean_field_where_s_is_no_contraction(seed, variance):
    """The full-covariance family contains the mean-field one, so at fixed hyperparameters its maximised
    ELBO is at least the mean-field maximum. With a large prior variance the S fixed point is no
    contraction (T8 needs sigma^2 < 2) and the first full step from the diagonal start is rejected: the
    damped step must still move S (a fit left at the diagonal start sat 66 nats below mean field)."""
    X = simulate_lgcp((0, 1, 0, 1), math.log(100) - 1, 2.0, 0.1, grid=64, random_state=seed).points
    kw = dict(window=(0, 1, 0, 1), variance=variance, length_scale=0.1, optimize_hyperparameters=(),
              solver="dense", n_dummy=100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = VoGCAM(**kw).fit(X)
        diag = VoGCAM(covariance="diag", **kw).fit(X)
    assert full.elbo_ >= diag.elbo_ - 1e-6 * abs(diag.elbo_)
    assert np.all(np.diff(full.elbo_blocks_) >= -MONO_RTOL * (1 + np.abs(full.elbo_blocks_[1:])))


def test_sparse_fit_too_large_for_memory_is_refused_before_factorising(monkeypatch):
    from algos.point_process._sparse import SparseCholesky
    from algos.point_process.vogcam import _vogcam_solver

    def no_factor(self, data):
        raise AssertionError("factorised before the memory check")

    monkeypatch.setattr(SparseCholesky, "factor", no_factor)
    monkeypatch.setattr(_vogcam_solver, "_memory_budget", lambda: 1e5)  # 100 kB
    X = np.random.default_rng(0).uniform(size=(300, 2))
    est = VoGCAM(window=(0, 1, 0, 1), n_dummy=400, solver="sparse", hyperparameters="elbo")
    with pytest.raises(ValueError, match=r"'n_dummy': \d+ quadrature nodes .* GiB .* lower 'n_dummy'"):
        est.fit(X)
