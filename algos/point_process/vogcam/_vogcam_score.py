"""Held-out scores of a fitted :class:`VoGCAM` (the body of :meth:`VoGCAM.score` for a test pattern)."""

from __future__ import annotations

import math

import numpy as np

from ..._validation import check_option, check_random_state, check_scalar_float, check_scalar_int
from .._quadrature import check_points


def predictive_score(est, X, thinning, method, n_samples, random_state):
    """The score of the test pattern ``X`` under the fitted ``est``; the arguments are those of
    :meth:`VoGCAM.score` (``X`` not None)."""
    check_option(method, "method", ("expected", "mean", "median", "predictive"))
    if thinning is None:
        rho = 1.0
    else:
        p = check_scalar_float(thinning, "thinning", low=0.0, high=1.0, closed="neither")
        rho = p / (1.0 - p)
    X = check_points(X, est.window_)
    if est._cov_callable is None and est.n_covariates_:
        raise ValueError("score(X) needs callable covariates (the model was fitted with covariates at the nodes).")
    n = len(X)
    lr = math.log(rho)
    if method == "expected":
        mu = est.predict_log_intensity(X) if n else np.zeros(0)
        return float(np.sum(mu) + n * lr - rho * est.expected_count())
    if method in ("mean", "median"):
        if n:
            mu, sd = est.predict_log_intensity(X, return_std=True)
        else:
            mu = sd = np.zeros(0)
        if method == "mean":
            return float(np.sum(mu + 0.5 * sd**2) + n * lr - rho * est.expected_count())
        return float(np.sum(mu) + n * lr - rho * float(np.sum(est.weights_ * np.exp(est.mean_))))
    n_samples = check_scalar_int(n_samples, "n_samples", low=1)
    rng = check_random_state(est.random_state if random_state is None else random_state)
    Xq = X if n else est.nodes_[:1]
    nodes, fq = est._joint_sample(Xq, n_samples, rng)
    ll = (fq.sum(axis=1) if n else 0.0) + n * lr - rho * (np.exp(nodes) @ est.weights_)
    mx = float(np.max(ll))
    return float(mx + math.log(np.mean(np.exp(ll - mx))))
