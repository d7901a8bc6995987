"""One Huber IRLS loop: the in-memory numba pass, the chunked pass and the batched core agree, and share constants.

The loop (:func:`algos.hetero_regression._irls.irls_loop`) runs over the in-memory oracle (``HuberSoSRegressor.fit``)
and the chunked one (``fit_chunks``); the batched torch-free core (:mod:`accel.hetero_regression` run on numpy) is
the same majorise-minimise iteration for many replicates. All three reach the same minimiser.
"""

import numpy as np
import pytest

import accel.hetero_regression as core
from accel.backend import get_backend
from algos.hetero_regression import HuberSoSRegressor
from algos.hetero_regression import _huber_solvers as solvers
from algos.hetero_regression import _irls as irls


def _data(seed, n=600, d=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    noise = np.where(rng.random(n) < 0.4, 0.2, 25.0) * rng.standard_normal(n)
    return X, X @ rng.standard_normal(d) + noise


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_in_memory_chunked_and_batched_coefficients_agree(seed):
    X, y = _data(seed)
    kw = dict(delta=1.0, fit_intercept=False, tol=1e-13, max_iter=2000)
    mem = HuberSoSRegressor(**kw, init="ols", regime_cap=None).fit(X, y).coef_
    mm = HuberSoSRegressor(**kw, init="ols", solver="mm", regime_cap=None).fit(X, y).coef_
    chunked = HuberSoSRegressor(**kw).fit_chunks(lambda: ((X[i:i + 97], y[i:i + 97]) for i in range(0, len(y), 97)))
    batched = core._irls_batched(get_backend(backend="numpy"), X, y[None, :], 1.0, 2000, 1e-13)[0][0]
    np.testing.assert_allclose(mm, mem, rtol=0, atol=1e-10)
    np.testing.assert_allclose(chunked.coef_, mem, rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.asarray(batched), mem, rtol=0, atol=1e-10)


def test_constants_are_defined_once():
    for name in ("RIDGE", "MONOTONE_RTOL", "MAX_BACKTRACKS"):
        assert getattr(irls, name) is getattr(core, name), name
    # the in-memory solvers hold no loop or constants of their own: they call the one loop
    assert solvers.irls_loop is irls.irls_loop
    assert solvers.RIDGE is core.RIDGE
    for name in ("MONOTONE_RTOL", "MAX_BACKTRACKS", "NEWTON_TRIES", "ARMIJO_C"):
        assert not hasattr(solvers, name), name


def test_in_memory_and_chunked_run_the_same_iterates_with_plain_mm_steps():
    """Without Newton steps and extrapolation the in-memory oracle and the chunked one give the same iterates."""
    from algos.hetero_regression._chunked import ChunkPass

    X, y = _data(5, n=400, d=3)
    G0 = X.T @ X
    b0 = np.linalg.solve(G0, X.T @ y)
    gscale = 1.0 * np.sqrt(np.trace(G0))
    a = irls.irls_loop(solvers.ArrayPass(X, y, np.empty(0)), b0, 1.0, 1e-12, 25, gscale, newton=False)
    chunks = ChunkPass(lambda: ((X[i:i + 64], y[i:i + 64]) for i in range(0, len(y), 64)), False)
    chunks.gram()
    b = irls.irls_loop(irls._PassAdapter(chunks), b0, 1.0, 1e-12, 25, gscale, newton=False)
    assert a.n_iter == b.n_iter
    np.testing.assert_allclose(a.history, b.history, rtol=1e-12)
    np.testing.assert_allclose(a.coef, b.coef, rtol=0, atol=1e-10)
