"""Speed machinery of the ascent on real patterns: the range objective on precomputed neighbour distances
and the boundary trial of a collapsing variance (docs/point_process.md, "Real patterns against GPBoost")."""

import warnings

import numpy as np
import pytest

from algos.point_process import VoGCAM
from algos.point_process._kernels import nngp_block_terms
from algos.point_process.vogcam import _vogcam, _vogcam_solver
from algos.point_process.vogcam._nngp import NNGPStructure, neighbour_distances, nngp_block_terms_from_distances

#: ELBO monotonicity (as in test_vogcam.py): a drop below round-off of the ELBO is not a drop.
MONO_RTOL = 1e-9
#: the two range objectives do the same floating-point operations; allow a few ulps of the sums.
SAME_RTOL = 1e-13
#: two runs of one fit: the parallel (prange) reductions may add in another order from run to run
#: (numba's TBB layer schedules chunks dynamically), so the ELBOs agree to round-off, not to the bit.
REPEAT_RTOL = 1e-10


@pytest.mark.parametrize("nu", [0.5, 1.5])
def test_block_terms_on_distances_equal_the_kernel(nu):
    rng = np.random.default_rng(3)
    U = rng.uniform(size=(250, 2))
    st = NNGPStructure(U, nu=nu, n_neighbors=10, ordering="coord", random_state=0)
    k1 = st.neighbors.shape[1] + 1
    G = rng.normal(size=(len(U), k1, k1))
    sblk = np.einsum("nij,nkj->nik", G, G) / k1  # positive semi-definite blocks
    r = rng.normal(size=len(U))
    D = st.pair_distances
    assert D is st.pair_distances  # computed once
    assert np.array_equal(D, neighbour_distances(st.coords, st.neighbors, st.counts))
    for phi in (0.02, 0.15, 0.9):
        a0, b0 = nngp_block_terms(st.coords, st.neighbors, st.counts, phi, st.nu_code, st.jitter, sblk, r)
        a1, b1 = nngp_block_terms_from_distances(D, st.neighbors, st.counts, phi, st.nu_code, st.jitter, sblk, r)
        assert a1 == pytest.approx(a0, rel=SAME_RTOL)
        assert b1 == pytest.approx(b0, rel=SAME_RTOL, abs=SAME_RTOL * len(U))


def test_distances_are_the_neighbour_distances():
    U = np.random.default_rng(4).uniform(size=(60, 2))
    st = NNGPStructure(U, n_neighbors=5, random_state=0)
    D = st.pair_distances
    for i in (0, 7, 59):
        idx = [i] + [j for j in st.neighbors[i] if j >= 0]
        P = U[idx]
        ref = np.hypot(P[:, None, 0] - P[None, :, 0], P[:, None, 1] - P[None, :, 1])
        m = len(idx)
        assert np.allclose(D[i, :m, :m], ref, rtol=0, atol=1e-15)
        assert np.all(D[i, m:, :] == 0) and np.all(D[i, :, m:] == 0)


def _fit(X, window, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return VoGCAM(window=window, hyperparameters="elbo", random_state=0, **kw).fit(X)


def test_collapsing_variance_stops_at_the_boundary(shared_data_dir, monkeypatch):
    """japanesepines: the ELBO's variance collapses; the boundary trial ends the linear crawl of
    log sigma^2 in a few sweeps, at an ELBO at least as high, with the ascent monotone."""
    X = np.loadtxt(shared_data_dir / "points" / "japanesepines.csv", delimiter=",", comments="#")
    fast = _fit(X, (0, 1, 0, 1))
    monkeypatch.setattr(_vogcam_solver, "VARIANCE_COLLAPSE_TRY", 0.0)  # no boundary trial
    slow = _fit(X, (0, 1, 0, 1))
    assert fast.converged_ and slow.converged_
    assert fast.variance_ == _vogcam.VARIANCE_FLOOR
    assert slow.variance_ > fast.variance_
    assert fast.n_iter_ < slow.n_iter_
    assert fast.elbo_ >= slow.elbo_ - MONO_RTOL * (1 + abs(slow.elbo_))
    for est in (fast, slow):
        d = np.diff(est.elbo_blocks_)
        assert np.all(d >= -MONO_RTOL * (1 + np.abs(est.elbo_blocks_[1:])))
    # the posterior is the homogeneous Poisson one either way
    assert np.allclose(fast.mean_, slow.mean_, atol=1e-2)


def test_boundary_trial_leaves_clustered_fits_alone(shared_data_dir, monkeypatch):
    """redwood (clustered): the variance never falls below the trial threshold, so the fit is unchanged."""
    X = np.loadtxt(shared_data_dir / "points" / "redwood.csv", delimiter=",", comments="#")
    win = (0.0, 1.0, -1.0, 0.0)
    a = _fit(X, win)
    monkeypatch.setattr(_vogcam_solver, "VARIANCE_COLLAPSE_TRY", 0.0)
    b = _fit(X, win)
    assert a.variance_ > 1.0
    assert a.n_iter_ == b.n_iter_
    assert b.elbo_ == pytest.approx(a.elbo_, rel=REPEAT_RTOL)
