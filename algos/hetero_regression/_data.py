r"""Synthetic subset-of-signals data, the oracle WLS floor, and the shipped-with-sklearn design."""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .._io import check_memory_budget
from .._validation import check_array, check_option, check_random_state, check_scalar_float, check_scalar_int

__all__ = ["SubsetOfSignals", "make_subset_of_signals", "oracle_wls", "suggest_delta"]

#: Largest magnitude accepted by :func:`suggest_delta` in ``X`` and ``y``: squares of larger values
#: overflow the float64 range in the least-squares fits (``1e150 ** 2 = 1e300``).
MAX_ABS = 1e150

SubsetOfSignals = namedtuple("SubsetOfSignals", ["X", "y", "beta", "sigma", "signal_mask"])
SubsetOfSignals.__doc__ = """Data drawn by :func:`make_subset_of_signals`.

Parameters
----------
X : ndarray of shape (n, d)
    The design.
y : ndarray of shape (n,)
    The responses.
beta : ndarray of shape (d,)
    The true coefficients.
sigma : ndarray of shape (n,)
    The noise standard deviation of every source.
signal_mask : ndarray of bool, shape (n,)
    True on the m reliable sources (``sigma <= signal_sigma``).
"""

_DESIGNS = ("gaussian", "student", "uniform", "diabetes")
_NOISES = ("gaussian", "laplace", "student")


def _noisy_sigmas(setting, size, rng):
    """Draw the noise levels of the unreliable sources from ``setting``."""
    if isinstance(setting, (int, float, np.integer, np.floating)) and not isinstance(setting, bool):
        value = check_scalar_float(setting, "noisy_sigma", low=0.0, closed="neither")
        return np.full(size, value)
    if not isinstance(setting, tuple) or not setting or setting[0] not in ("loguniform", "constant", "pareto"):
        raise ValueError(
            "'noisy_sigma' must be a positive float, ('constant', s), ('loguniform', low, high) or "
            f"('pareto', scale); got {setting!r}."
        )
    if setting[0] == "pareto":  # sigma = scale / U, U ~ Uniform(0, 1]: Pareto tail of index 1
        if len(setting) != 2:
            raise ValueError(f"'noisy_sigma' must be ('pareto', scale); got {setting!r}.")
        scale = check_scalar_float(setting[1], "noisy_sigma[1]", low=0.0, closed="neither")
        return scale / (1.0 - rng.uniform(0.0, 1.0, size=size))
    if setting[0] == "constant":
        if len(setting) != 2:
            raise ValueError(f"'noisy_sigma' must be ('constant', s); got {setting!r}.")
        return np.full(size, check_scalar_float(setting[1], "noisy_sigma[1]", low=0.0, closed="neither"))
    if len(setting) != 3:
        raise ValueError(f"'noisy_sigma' must be ('loguniform', low, high); got {setting!r}.")
    lo = check_scalar_float(setting[1], "noisy_sigma[1]", low=0.0, closed="neither")
    hi = check_scalar_float(setting[2], "noisy_sigma[2]", low=lo)
    return np.exp(rng.uniform(np.log(lo), np.log(hi), size=size))


def _design(kind, n, d, rng):
    if kind == "gaussian":
        return rng.standard_normal((n, d))
    if kind == "student":  # heavy-tailed, unit variance (t with 5 degrees of freedom)
        return rng.standard_t(5, size=(n, d)) / np.sqrt(5.0 / 3.0)
    if kind == "uniform":  # bounded, unit variance
        return rng.uniform(-np.sqrt(3.0), np.sqrt(3.0), size=(n, d))
    from sklearn.datasets import load_diabetes

    base = load_diabetes().data
    if d > base.shape[1]:
        raise ValueError(f"'d' must be at most {base.shape[1]} for design='diabetes'; got {d}.")
    base = base[:, :d]
    base = (base - base.mean(axis=0)) / base.std(axis=0)
    return base[rng.integers(0, base.shape[0], size=n)]


def _unit_noise(kind, n, rng):
    """Symmetric, unimodal noise with unit standard deviation."""
    if kind == "gaussian":
        return rng.standard_normal(n)
    if kind == "laplace":
        return rng.laplace(0.0, 1.0 / np.sqrt(2.0), size=n)
    return rng.standard_t(5, size=n) / np.sqrt(5.0 / 3.0)


def make_subset_of_signals(n, d, m, *, noisy_sigma=("loguniform", 10.0, 1e3), signal_sigma=1.0,
                           design="gaussian", noise="gaussian", n_groups=None, beta=None,
                           random_state=None):
    r"""Draw data from the subset-of-signals model.

    .. math:: y_i = x_i^\top \beta^* + \varepsilon_i, \qquad \varepsilon_i = \sigma_i \xi_i,

    with :math:`\xi_i` i.i.d. symmetric unimodal noise of unit variance, :math:`\sigma_i \le 1`
    (``signal_sigma``) on an unknown set of ``m`` sources and large elsewhere. The estimator sees
    only ``(X, y)``.

    Parameters
    ----------
    n, d : int
        Number of sources (rows) and of features, ``n >= 1``, ``d >= 1``.
    m : int in [0, n]
        Number of reliable sources. With ``n_groups`` it is rounded to whole groups.
    noisy_sigma : float, ("constant", s), ("loguniform", lo, hi) or ("pareto", scale), default=("loguniform", 10, 1e3)
        Noise level of the other sources. ``1e5`` gives the *sign-only* regime of the hetero_regression
        reconstruction notes (the noisy rows carry only the sign of the residual; the hardest case for Huber);
        ``("pareto", 10)`` draws :math:`\sigma_i = 10/U_i`, :math:`U_i` uniform on (0, 1] (a
        heavy tail: :math:`P(\sigma_i > s) = 10/s`, infinite mean).
    signal_sigma : float > 0, default=1.0
    design : {"gaussian", "student", "uniform", "diabetes"}, default="gaussian"
        Rows i.i.d. N(0, I); Student-t(5) or uniform entries scaled to unit variance; or rows
        resampled from scikit-learn's diabetes design (first ``d <= 10`` columns, standardised):
        a real non-Gaussian design.
    noise : {"gaussian", "laplace", "student"}, default="gaussian"
    n_groups : int, optional
        Groupwise sources: rows are split into ``n_groups`` contiguous groups sharing one sigma;
        ``round(m / (n / n_groups))`` groups are reliable.
    beta : array-like of shape (d,), optional
        True coefficients; default uniform on the unit sphere.
    random_state : None, int or Generator

    Returns
    -------
    SubsetOfSignals
        Named tuple ``(X, y, beta, sigma, signal_mask)``.

    Examples
    --------
    >>> data = make_subset_of_signals(1000, 3, 200, random_state=0)
    >>> data.X.shape, int(data.signal_mask.sum())
    ((1000, 3), 200)
    """
    n = check_scalar_int(n, "n", low=1)
    d = check_scalar_int(d, "d", low=1)
    m = check_scalar_int(m, "m", low=0, high=n)
    # X (n, d) and the draws behind it, y, the noise scales: a Python-int estimate, before any draw
    check_memory_budget(8 * n * (2 * d + 4), f"simulated data of {n} sources x {d} features", f"'n'={n}, 'd'={d}",
                        hint="choose fewer sources or features")
    signal_sigma = check_scalar_float(signal_sigma, "signal_sigma", low=0.0, closed="neither")
    check_option(design, "design", _DESIGNS)
    check_option(noise, "noise", _NOISES)
    rng = check_random_state(random_state)
    if beta is None:
        beta = rng.standard_normal(d)
        beta /= np.linalg.norm(beta)
    else:
        beta = np.asarray(beta, dtype=np.float64)
        if beta.shape != (d,):
            raise ValueError(f"'beta' must have shape ({d},); got {beta.shape}.")
    X = _design(design, n, d, rng)
    if n_groups is None:
        signal = np.zeros(n, dtype=bool)
        signal[rng.choice(n, size=m, replace=False)] = True
        sigma = np.full(n, signal_sigma)
        sigma[~signal] = _noisy_sigmas(noisy_sigma, int((~signal).sum()), rng)
    else:
        n_groups = check_scalar_int(n_groups, "n_groups", low=1, high=n)
        group = np.repeat(np.arange(n_groups), -(-n // n_groups))[:n]
        n_good = int(round(m / (n / n_groups)))
        good = np.zeros(n_groups, dtype=bool)
        good[rng.choice(n_groups, size=min(n_good, n_groups), replace=False)] = True
        group_sigma = np.where(good, signal_sigma, _noisy_sigmas(noisy_sigma, n_groups, rng))
        sigma = group_sigma[group]
        signal = good[group]
    y = X @ beta + sigma * _unit_noise(noise, n, rng)
    return SubsetOfSignals(X, y, beta, sigma, signal)


def oracle_wls(X, y, sigma):
    r"""Weighted least squares with the true weights :math:`1/\sigma_i^2`: the unreachable floor.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    sigma : ndarray of shape (n,), positive

    Returns
    -------
    ndarray of shape (d,)

    Examples
    --------
    >>> data = make_subset_of_signals(2000, 2, 500, random_state=1)
    >>> b = oracle_wls(data.X, data.y, data.sigma)
    >>> bool(np.linalg.norm(b - data.beta) < 0.2)
    True
    """
    X = check_array(X, "X", ndim=2)  # finite first: LAPACK's least squares can loop on NaN
    y = check_array(y, "y", ndim=1)
    sigma = check_array(sigma, "sigma", ndim=1)
    if y.shape != (X.shape[0],) or sigma.shape != (X.shape[0],):
        raise ValueError(
            f"'X' must be (n, d) with 'y' and 'sigma' of length n; got {X.shape}, {y.shape}, {sigma.shape}."
        )
    if np.any(sigma <= 0):
        raise ValueError(f"'sigma' must be finite and positive; got {float(sigma.min())!r}.")
    w = 1.0 / sigma
    coef, *_ = np.linalg.lstsq(X * w[:, None], y * w, rcond=None)
    return coef


def suggest_delta(X, y, *, factor=1.5):
    r"""Heuristic Huber threshold in the units of ``y`` (for real data, where the signal noise is
    not known to be about 1).

    Fits least absolute deviations (iteratively reweighted, a few steps), takes the residuals,
    and returns ``factor`` times the half-length of the shortest interval holding
    :math:`k = \lceil 2\sqrt{nd}\rceil` of them: the scale of the tightest group of
    :math:`2\sqrt{nd}` sources, the fewest for which the convex estimators are trusted (below it
    :class:`HuberSoSRegressor` warns, so the suggested threshold never triggers that warning by
    construction).

    .. note:: heuristic; the hetero_regression reconstruction notes (section 7) suggest
       :math:`k \approx \sqrt{nd}`, which puts fewer than :math:`2\sqrt{nd}` residuals inside the
       threshold and so always triggers the estimator's regime warning; we use :math:`2\sqrt{nd}`. Not covered
       by the theory.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    factor : float > 0, default=1.5

    Returns
    -------
    float
        A positive threshold.

    Examples
    --------
    >>> data = make_subset_of_signals(4000, 2, 1000, random_state=0)
    >>> 0.05 < suggest_delta(data.X, data.y) < 5
    True
    """
    factor = check_scalar_float(factor, "factor", low=0.0, closed="neither")
    try:
        X = check_array(X, "X", ndim=2, allow_empty=True)
        y = check_array(y, "y", ndim=1, allow_empty=True)
    except TypeError as exc:  # strings, complex numbers, objects, ragged input
        raise TypeError(f"'X' and 'y' must be real numeric arrays; {exc}") from None
    if y.shape != (X.shape[0],):
        raise ValueError(f"'X' must be (n, d) and 'y' of length n; got {X.shape} and {y.shape}.")
    for name, a in (("X", X), ("y", y)):
        if a.size and float(np.max(np.abs(a))) > MAX_ABS:
            raise ValueError(f"'{name}' must have entries of absolute value at most {MAX_ABS:g}; got "
                             f"{float(np.max(np.abs(a))):.3g} (rescale the data).")
    n, d = X.shape
    if n <= d:
        raise ValueError(f"suggest_delta needs n_samples > n_features; got n_samples = {n} and "
                         f"n_features = {d}.")
    b, *_ = np.linalg.lstsq(X, y, rcond=None)
    for _ in range(30):  # IRLS for least absolute deviations
        r = y - X @ b
        w = 1.0 / np.maximum(np.abs(r), 1e-12 * (1.0 + np.abs(y).max()))
        sw = np.sqrt(w)
        b, *_ = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)
    r = np.sort(y - X @ b)
    k = int(min(n, max(2, math.ceil(2.0 * math.sqrt(n * d)))))
    half = 0.5 * float(np.min(r[k - 1:] - r[: n - k + 1]))
    if half <= 0:  # many exact fits: fall back to a robust scale of all residuals
        half = float(np.median(np.abs(r - np.median(r))))
    if not half > 0:  # y fitted exactly (or constant): any positive threshold gives the same fit
        half = float(np.max(np.abs(y))) or 1.0
    out = factor * half
    if not (math.isfinite(out) and out > 0):
        raise ValueError(f"suggest_delta could not compute a finite positive threshold; got {out!r}.")
    return out
