r"""Variance-trace bound of federated/local model merging (Potara) and its closed-form optimum.

Setting (federated reconstruction notes, section 1.2, **reconstructed** [R]: the paper's theorem text was not
available, only its abstract, which confirms [C] that under linear mode connectivity the expected loss has
a variance-trace upper bound whose minimiser is closed form and tighter than either model alone).
Client ``i`` merges the federated model :math:`\theta_F` and its local model :math:`\theta_L`:
:math:`\theta(\lambda) = \lambda\theta_F + (1-\lambda)\theta_L`. With errors :math:`e_F = \theta_F -
\theta^*`, :math:`e_L = \theta_L - \theta^*`, second moments :math:`V_F = E\|e_F\|^2`,
:math:`V_L = E\|e_L\|^2` and cross moment :math:`C = E\langle e_F, e_L\rangle`, a :math:`\beta`-smooth loss
with :math:`\nabla L(\theta^*) = 0` satisfies

.. math::

    E L(\theta(\lambda)) - L(\theta^*) \le \frac\beta2 U(\lambda), \qquad
    U(\lambda) = \lambda^2 V_F + (1-\lambda)^2 V_L + 2\lambda(1-\lambda) C,

minimised on :math:`[0, 1]` by :math:`\lambda^* = \mathrm{clip}((V_L - C)/(V_F + V_L - 2C))` with
:math:`U(\lambda^*) = (V_F V_L - C^2)/(V_F + V_L - 2C) \le \min(V_F, V_L)` (unclipped case). ``U`` is an
exact identity for :math:`E\|\theta(\lambda) - \theta^*\|^2` (expand the square), so the only inequality is
the smoothness step. Per-module forms: one :math:`\lambda_m` per block with weights :math:`\beta_m`.

Status tags (``STATUS``): **C** confirmed by the abstract, **R** reconstructed (implemented as in the federated
reconstruction notes writes it), **D** derived here. ``BOUND_KIND`` records the kind of each function.

Sources
-------
* [ZSBT26] Y. Zou, M. K. C. Shisher, C. G. Brinton, V. Tripathi, "Communication-Efficient Personalized
  Adaptation via Federated-Local Model Merging", arXiv:2602.18658 (2026) -- abstract only.
* [MR22] M. Matena, C. Raffel, "Merging models with Fisher-weighted averaging", NeurIPS 2022.
* [JS61] W. James, C. Stein, "Estimation with quadratic loss", Berkeley Symp. 1961; [B64] A. Baranchik,
  positive-part James-Stein dominance (1964).

Pure numpy; imports nothing from ``algos``.
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import InBody, Int, Real, domain

__all__ = [
    "BOUND_KIND",
    "STATUS",
    "variance_trace_bound",
    "expected_loss_bound",
    "optimal_lambda",
    "optimal_bound",
    "module_bound",
    "optimal_lambda_modules",
    "shared_lambda",
    "james_stein_risk",
    "ols_variance_trace",
    "lmc_barrier",
]

BOUND_KIND = {
    "variance_trace_bound": "exact",  # U(lambda) = E||theta(lambda) - theta*||^2, an identity
    "expected_loss_bound": "in expectation",
    "optimal_lambda": "exact",
    "optimal_bound": "exact",
    "module_bound": "exact",
    "optimal_lambda_modules": "exact",
    "shared_lambda": "exact",
    "james_stein_risk": "in expectation",
    "ols_variance_trace": "exact",
    "lmc_barrier": "exact",
}

STATUS = {
    "variance_trace_bound": "R",
    "expected_loss_bound": "R (statement C)",
    "optimal_lambda": "R",
    "optimal_bound": "R (tighter-than-endpoints: C)",
    "module_bound": "R",
    "optimal_lambda_modules": "R",
    "shared_lambda": "D",
    "james_stein_risk": "known theorem [JS61, B64]",
    "ols_variance_trace": "D",
    "lmc_barrier": "D (diagnostic)",
}

# relative slack on the Cauchy-Schwarz check |C| <= sqrt(V_F V_L) (round-off in estimated moments)
_CS_RTOL = 1e-9

_MOMENT = InBody("a float >= 0 or an array of such floats, broadcastable with the other moments")
_COV = InBody("a float or array with |cov| <= sqrt(v_fed * v_loc), broadcastable with the other moments")
_CLIP = InBody("a pair (low, high) with 0 <= low <= high <= 1")
_LAM = Real(0.0, 1.0, array=True)


def _real_array(value, name, text="a float or an array of real numbers"):
    """``value`` (a real number or an array of them) as float64, or a TypeError naming ``name``
    (the wording of ``algos._validation``; theory/ does not import algos)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"'{name}' must be {text}; got {value!r} of type bool.")
    try:
        arr = np.asarray(value)
    except Exception:  # ragged input and the like
        raise TypeError(f"'{name}' must be {text}; got {type(value).__name__}.") from None
    if arr.dtype.kind not in "iuf" and not (arr.size == 0 and arr.dtype.kind in "iufbO"):
        what = f"{value!r} of type {type(value).__name__}" if arr.ndim == 0 else f"an array of dtype {arr.dtype}"
        raise TypeError(f"'{name}' must be {text}; got {what}.")
    return arr.astype(np.float64)




def _as_moments(v_fed, v_loc, cov):
    vf = _real_array(v_fed, "v_fed")
    vl = _real_array(v_loc, "v_loc")
    c = _real_array(cov, "cov")
    for name, a in (("v_fed", vf), ("v_loc", vl), ("cov", c)):
        if not np.all(np.isfinite(a)):
            raise ValueError(f"'{name}' must contain only finite values; got {a[~np.isfinite(a)].ravel()[0]!r}.")
    for name, a in (("v_fed", vf), ("v_loc", vl)):
        if np.any(a < 0):
            raise ValueError(f"'{name}' must be non-negative (a second moment); got {a[a < 0].ravel()[0]!r}.")
    try:
        vf, vl, c = np.broadcast_arrays(vf, vl, c)
    except ValueError:
        raise ValueError(f"'v_fed', 'v_loc' and 'cov' must have broadcastable shapes; got {vf.shape}, "
                         f"{vl.shape}, {c.shape}.") from None
    lim = np.sqrt(vf * vl)
    if np.any(np.abs(c) > lim * (1 + _CS_RTOL) + 1e-300):
        raise ValueError("'cov' must satisfy |cov| <= sqrt(v_fed * v_loc) (Cauchy-Schwarz).")
    return vf, vl, c


def _out(x):
    return float(x) if np.ndim(x) == 0 else x


def _check_clip(clip):
    try:
        lo, hi = (float(clip[0]), float(clip[1]))
    except Exception:
        raise TypeError(f"'clip' must be a pair (low, high) with 0 <= low <= high <= 1; got {clip!r}.") from None
    if not (0.0 <= lo <= hi <= 1.0):
        raise ValueError(f"'clip' must be a pair (low, high) with 0 <= low <= high <= 1; got {clip!r}.")
    return lo, hi


@domain(lam=_LAM, v_fed=_MOMENT, v_loc=_MOMENT, cov=_COV)
def variance_trace_bound(lam, v_fed, v_loc, cov=0.0):
    r"""The variance trace :math:`U(\lambda) = \lambda^2 V_F + (1-\lambda)^2 V_L + 2\lambda(1-\lambda)C`.

    Equal to :math:`E\|\theta(\lambda) - \theta^*\|^2` (an identity, kind ``exact``); times
    :math:`\beta/2` it bounds the expected excess loss (:func:`expected_loss_bound`). [R]

    Parameters
    ----------
    lam : float or array-like
        Mixing weight(s) :math:`\lambda` in [0, 1].
    v_fed, v_loc : float or array-like
        Variance traces :math:`V_F` and :math:`V_L`, at least 0.
    cov : float or array-like, default=0.0
        Cross term :math:`C`, with :math:`|C| \le \sqrt{V_F V_L}`.

    Returns
    -------
    float or ndarray
        :math:`U(\lambda)`.

    Examples
    --------
    >>> variance_trace_bound(0.5, 1.0, 3.0)
    1.0
    """
    vf, vl, c = _as_moments(v_fed, v_loc, cov)
    lam = np.asarray(lam, dtype=np.float64)
    return _out(lam**2 * vf + (1 - lam) ** 2 * vl + 2 * lam * (1 - lam) * c)


@domain(lam=_LAM, v_fed=_MOMENT, v_loc=_MOMENT, beta=Real(0.0), cov=_COV)
def expected_loss_bound(lam, v_fed, v_loc, beta, cov=0.0):
    r"""Bound :math:`\frac\beta2 U(\lambda)` on the expected excess loss of the merged model [R; statement C].

    :math:`\frac\beta2 U(\lambda)`: bound on :math:`E L(\theta(\lambda)) - L(\theta^*)` for a
    :math:`\beta`-smooth loss with :math:`\nabla L(\theta^*) = 0` on the segment (LMC). [R; statement C]

    Parameters
    ----------
    lam : float or array-like
        Mixing weight(s) :math:`\lambda` in [0, 1].
    v_fed, v_loc : float or array-like
        Variance traces :math:`V_F` and :math:`V_L`, at least 0.
    beta : float
        Smoothness constant :math:`\beta` of the loss, at least 0.
    cov : float or array-like, default=0.0
        Cross term :math:`C`, with :math:`|C| \le \sqrt{V_F V_L}`.

    Returns
    -------
    float or ndarray
        :math:`\frac\beta2 U(\lambda)`.
    """
    return _out(0.5 * beta * np.asarray(variance_trace_bound(lam, v_fed, v_loc, cov)))


@domain(v_fed=_MOMENT, v_loc=_MOMENT, cov=_COV, clip=_CLIP)
def optimal_lambda(v_fed, v_loc, cov=0.0, clip=(0.0, 1.0)):
    r"""Closed-form minimiser :math:`\lambda^*` of the variance trace :math:`U` on ``clip`` [R].

    Closed-form minimiser :math:`\lambda^* = \mathrm{clip}\big((V_L - C)/(V_F + V_L - 2C)\big)` of
    :math:`U` on ``clip``; with :math:`C = 0`, inverse-variance weighting :math:`V_L/(V_F + V_L)`. [R]

    When :math:`V_F + V_L - 2C = 0` (then :math:`e_F = e_L` almost surely and :math:`U` is constant in
    :math:`\lambda`) the value 1/2 is returned (clipped). Vectorised over modules.

    Parameters
    ----------
    v_fed, v_loc : float or array-like
        Variance traces :math:`V_F` and :math:`V_L`, at least 0.
    cov : float or array-like, default=0.0
        Cross term :math:`C`, with :math:`|C| \le \sqrt{V_F V_L}`.
    clip : tuple of float, default=(0.0, 1.0)
        Interval ``(low, high)`` within [0, 1] that :math:`\lambda^*` is clipped to.

    Returns
    -------
    float or ndarray
        :math:`\lambda^*`, one per module for array input.

    Examples
    --------
    >>> optimal_lambda(1.0, 3.0)
    0.75
    >>> optimal_lambda([1.0, 0.0], [1.0, 2.0]).tolist()
    [0.5, 1.0]
    """
    vf, vl, c = _as_moments(v_fed, v_loc, cov)
    lo, hi = _check_clip(clip)
    den = vf + vl - 2 * c
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(den > 0, (vl - c) / np.where(den > 0, den, 1.0), 0.5)
    return _out(np.clip(lam, lo, hi))


@domain(v_fed=_MOMENT, v_loc=_MOMENT, cov=_COV, clip=_CLIP)
def optimal_bound(v_fed, v_loc, cov=0.0, clip=(0.0, 1.0)):
    r"""The minimal variance trace :math:`U(\lambda^*)` [R/C].

    :math:`U(\lambda^*)`; unclipped it equals :math:`(V_F V_L - C^2)/(V_F + V_L - 2C)`, with
    :math:`C = 0` the half harmonic mean :math:`(1/V_F + 1/V_L)^{-1}`; always
    :math:`\le \min(V_F, V_L)` (strict when both are positive and finite and :math:`C < \min(V_F, V_L)`). [R/C]

    Parameters
    ----------
    v_fed, v_loc : float or array-like
        Variance traces :math:`V_F` and :math:`V_L`, at least 0.
    cov : float or array-like, default=0.0
        Cross term :math:`C`, with :math:`|C| \le \sqrt{V_F V_L}`.
    clip : tuple of float, default=(0.0, 1.0)
        Interval ``(low, high)`` within [0, 1] that :math:`\lambda^*` is clipped to.

    Returns
    -------
    float or ndarray
        :math:`U(\lambda^*)`.

    Examples
    --------
    >>> optimal_bound(1.0, 3.0)
    0.75
    """
    lam = optimal_lambda(v_fed, v_loc, cov, clip)
    return variance_trace_bound(lam, v_fed, v_loc, cov)


def _check_beta(beta, shape):
    b = _real_array(beta, "beta")
    try:
        b = np.broadcast_to(b, shape)
    except ValueError:
        raise ValueError(f"'beta' must be a scalar or have the shape {shape} of 'v_fed'; got shape "
                         f"{b.shape}.") from None
    if not np.all(np.isfinite(b)) or np.any(b < 0):
        raise ValueError("'beta' must contain finite non-negative smoothness constants.")
    return b


@domain(lam=_LAM, v_fed=_MOMENT, v_loc=_MOMENT, cov=_COV, beta=Real(0.0, array=True))
def module_bound(lam, v_fed, v_loc, cov=0.0, beta=1.0):
    r"""Per-module bound :math:`\sum_m \beta_m U_m(\lambda_m)` [R].

    Per-module bound :math:`\sum_m \beta_m U_m(\lambda_m)` (``lam`` one value per module, or a
    shared scalar); the expected excess loss is at most half of it. [R]

    ``v_fed`` and ``v_loc`` are 1-d of one length (one entry per module); ``cov`` and ``beta`` a
    scalar or one entry per module.

    Parameters
    ----------
    lam : float or array-like of shape (n_modules,)
        One mixing weight per module, or a shared scalar, in [0, 1].
    v_fed, v_loc : array-like of shape (n_modules,)
        Variance traces :math:`V_{F,m}` and :math:`V_{L,m}`, at least 0.
    cov : float or array-like of shape (n_modules,), default=0.0
        Cross terms :math:`C_m`.
    beta : float or array-like of shape (n_modules,), default=1.0
        Smoothness constants :math:`\beta_m`, at least 0.

    Returns
    -------
    float
        The bound; the expected excess loss is at most half of it.
    """
    _check_module_shapes(v_fed, v_loc, cov)
    vf, vl, c = _as_moments(v_fed, v_loc, cov)
    if vf.ndim != 1:
        raise ValueError(f"'v_fed' and 'v_loc' must be 1-d (one entry per module); got shape {vf.shape}.")
    b = _check_beta(beta, vf.shape)
    lam = _real_array(lam, "lam")
    try:
        lam = np.broadcast_to(lam, vf.shape)
    except ValueError:
        raise ValueError(f"'lam' must be a scalar or have the shape {vf.shape} of 'v_fed'; got shape "
                         f"{lam.shape}.") from None
    return float(np.sum(b * np.asarray(variance_trace_bound(lam, vf, vl, c))))


def _check_module_shapes(v_fed, v_loc, cov):
    """Per-module moments: ``v_fed`` and ``v_loc`` 1-d of the same length, ``cov`` a scalar or the same
    shape (no broadcasting of one module's variance over several)."""
    sf, sl, sc = np.shape(v_fed), np.shape(v_loc), np.shape(cov)
    if len(sf) != 1 or sf != sl or sf[0] == 0:
        raise ValueError(f"'v_fed' and 'v_loc' must be 1-d of the same nonzero length (one entry per module); "
                         f"got shapes {sf} and {sl}.")
    if sc not in ((), sf):
        raise ValueError(f"'cov' must be a scalar or have the shape {sf} of 'v_fed'; got shape {sc}.")


@domain(v_fed=_MOMENT, v_loc=_MOMENT, cov=_COV, clip=_CLIP)
def optimal_lambda_modules(v_fed, v_loc, cov=0.0, clip=(0.0, 1.0)):
    r"""One optimal mixing weight :math:`\lambda_m^*` per module [R].

    One :math:`\lambda_m^*` per module (the per-module bound separates, so :math:`\beta_m` drops
    out). Same as :func:`optimal_lambda` on 1-d input. [R]

    Parameters
    ----------
    v_fed, v_loc : array-like of shape (n_modules,)
        Variance traces :math:`V_{F,m}` and :math:`V_{L,m}`, at least 0.
    cov : float or array-like of shape (n_modules,), default=0.0
        Cross terms :math:`C_m`.
    clip : tuple of float, default=(0.0, 1.0)
        Interval ``(low, high)`` within [0, 1] that each :math:`\lambda_m^*` is clipped to.

    Returns
    -------
    ndarray of shape (n_modules,)
        :math:`\lambda_m^*`.

    Raises
    ------
    ValueError
        ``v_fed`` and ``v_loc`` not 1-d of one length, ``cov`` neither scalar nor of that shape, or the
        moment rules of :func:`optimal_lambda`.
    """
    _check_module_shapes(v_fed, v_loc, cov)
    vf, vl, c = _as_moments(v_fed, v_loc, cov)
    if vf.ndim != 1:
        raise ValueError(f"'v_fed' and 'v_loc' must be 1-d (one entry per module); got shape {vf.shape}.")
    return np.atleast_1d(optimal_lambda(vf, vl, c, clip))


@domain(v_fed=_MOMENT, v_loc=_MOMENT, cov=_COV, beta=Real(0.0, array=True), clip=_CLIP)
def shared_lambda(v_fed, v_loc, cov=0.0, beta=1.0, clip=(0.0, 1.0)):
    r"""Best single mixing weight :math:`\lambda` for :math:`\sum_m \beta_m U_m(\lambda)` [D].

    Best single :math:`\lambda` for :math:`\sum_m \beta_m U_m(\lambda)`:
    :math:`\mathrm{clip}(\sum\beta_m(V_{L,m} - C_m)/\sum\beta_m(V_{F,m} + V_{L,m} - 2C_m))`. [D]

    Parameters
    ----------
    v_fed, v_loc : float or array-like of shape (n_modules,)
        Variance traces :math:`V_{F,m}` and :math:`V_{L,m}`, at least 0.
    cov : float or array-like of shape (n_modules,), default=0.0
        Cross terms :math:`C_m`.
    beta : float or array-like of shape (n_modules,), default=1.0
        Smoothness constants :math:`\beta_m`, at least 0.
    clip : tuple of float, default=(0.0, 1.0)
        Interval ``(low, high)`` within [0, 1] that :math:`\lambda` is clipped to.

    Returns
    -------
    float
        :math:`\mathrm{clip}(\sum\beta_m(V_{L,m} - C_m)/\sum\beta_m(V_{F,m} + V_{L,m} - 2C_m))`.
    """
    if np.ndim(v_fed) > 0 or np.ndim(v_loc) > 0:
        _check_module_shapes(v_fed, v_loc, cov)
    vf, vl, c = _as_moments(v_fed, v_loc, cov)
    b = _check_beta(beta, vf.shape)
    return optimal_lambda(float(np.sum(b * vf)), float(np.sum(b * vl)), float(np.sum(b * c)), clip)


#: Poisson rate above which :func:`james_stein_risk` uses the moment expansion instead of the series
_JS_SERIES_MAX_RATE = 1e7


@domain(p=Int(3), s2=Real(0.0), dist_sq=Real(0.0), n_terms=Int(0, none=True))
def james_stein_risk(p, s2, dist_sq, n_terms=None):
    r"""Exact risk of the James-Stein estimator shrinking toward a fixed point.

    Exact risk :math:`E\|\hat\theta_{JS} - \theta^*\|^2` of the James-Stein estimator shrinking
    :math:`\theta_L \sim N(\theta^*, s^2 I_p)` toward a fixed point :math:`\theta_F` at distance
    :math:`\|\theta^* - \theta_F\| = \sqrt{\text{dist\_sq}}`:

    .. math::

        \hat\theta_{JS} = \theta_F + \Big(1 - \frac{(p-2)s^2}{\|\theta_L - \theta_F\|^2}\Big)(\theta_L - \theta_F),
        \qquad R = p s^2 - (p-2)^2 s^2\, E\Big[\frac1{p - 2 + 2K}\Big],\
        K\sim\mathrm{Poisson}\Big(\frac{\text{dist\_sq}}{2s^2}\Big).

    Valid for :math:`p \ge 3`; :math:`R < p s^2` (dominance [JS61]). The positive-part estimator (the
    communication-free plug-in :math:`\hat\lambda = \min(1, (p-2)s^2/\|\theta_F - \theta_L\|^2)`) has
    risk at most ``R`` [B64]. Kind: in expectation.

    Parameters
    ----------
    p : int
        Dimension, at least 3.
    s2 : float
        Noise variance :math:`s^2` of :math:`\theta_L`, at least 0 (0 gives risk 0).
    dist_sq : float
        :math:`\|\theta^* - \theta_F\|^2`, at least 0.
    n_terms : int >= 0 or None, default=None
        Number of terms of the Poisson series (default: enough for double precision).

    Returns
    -------
    float
        The risk :math:`R`.

    Examples
    --------
    >>> round(james_stein_risk(10, 1.0, 0.0), 12)   # at theta_F = theta*: p - (p - 2) = 2
    2.0
    """
    if s2 == 0:
        return 0.0
    from scipy import stats

    rate = dist_sq / (2.0 * s2)
    if n_terms is None and rate > _JS_SERIES_MAX_RATE:
        # the Poisson series would need more than ~1e7 terms: the moment expansion of E[1/(a + 2K)]
        # about K = rate (cumulants of the Poisson: all equal to rate), relative error O(rate^-3)
        u = 1.0 / (p - 2 + 2 * rate)
        r = rate * u  # <= 1/2: no overflow for any finite rate
        e_inv = u * (1.0 + 4.0 * r * u - 8.0 * r * u**2 + 16.0 * (3.0 * r * r * u**2 + r * u**3))
        return float(p * s2 - (p - 2) ** 2 * s2 * e_inv)
    kmax = int(rate + 12 * math.sqrt(rate + 1) + 50) if n_terms is None else int(n_terms)
    k = np.arange(kmax + 1)
    w = stats.poisson.pmf(k, rate)
    e_inv = float(np.sum(w / (p - 2 + 2 * k)))
    return float(p * s2 - (p - 2) ** 2 * s2 * e_inv)


@domain(X=InBody("a 2-d finite real array of full column rank (n >= p)"), sigma2=Real(0.0))
def ols_variance_trace(X, sigma2):
    r"""Exact variance trace of least squares for a fixed design [D].

    :math:`\sigma^2\,\mathrm{tr}(X^\top X)^{-1}`: the exact :math:`E\|\hat\theta_{OLS} - \theta\|^2` for
    fixed design and noise variance :math:`\sigma^2` (used for the exact linear-regression case). [D]

    Parameters
    ----------
    X : array-like of shape (n, p)
        The design, of full column rank.
    sigma2 : float
        Noise variance :math:`\sigma^2`, at least 0.

    Returns
    -------
    float
        :math:`\sigma^2\,\mathrm{tr}(X^\top X)^{-1}`.
    """
    X = _real_array(X, "X", "a 2-d array of real numbers")
    if X.ndim != 2 or X.shape[0] < X.shape[1]:
        raise ValueError(f"'X' must be 2-d with at least as many rows as columns; got shape {X.shape}.")
    if not np.all(np.isfinite(X)):
        raise ValueError("'X' must contain only finite values.")
    with np.errstate(over="ignore", invalid="ignore"):
        gram = X.T @ X
    if np.all(np.isfinite(gram)):
        ev = np.linalg.eigvalsh(gram)
        if ev[0] <= 0:
            raise ValueError("'X' must have full column rank.")
        return float(sigma2 * np.sum(1.0 / ev))
    # X^T X overflows: sigma^2 tr((X^T X)^-1) = (sigma^2 / s^2) tr((Y^T Y)^-1) with Y = X / s
    s = float(np.max(np.abs(X)))
    Y = X / s
    ev = np.linalg.eigvalsh(Y.T @ Y)
    if ev[0] <= 0:
        raise ValueError("'X' must have full column rank.")
    return float(sigma2 / s / s * np.sum(1.0 / ev))


@domain(lams=InBody("a 1-d array of floats in [0, 1] containing 0 and 1"),
        losses=InBody("a finite 1-d array of the length of 'lams'"))
def lmc_barrier(lams, losses):
    r"""Loss barrier along the segment between the federated and the local model [D].

    Loss barrier :math:`\max_k L(\theta(\lambda_k)) - [\lambda_k L(\theta_F) + (1-\lambda_k)L(\theta_L)]`
    on a grid containing 0 and 1 (linear mode connectivity holds when it is :math:`\le 0`; for a convex
    loss it is always :math:`\le 0`). [D]

    Parameters
    ----------
    lams : array-like of shape (n,)
        Grid of mixing weights in [0, 1], containing 0 and 1.
    losses : array-like of shape (n,)
        Loss :math:`L(\theta(\lambda_k))` of the merged model at each grid point.

    Returns
    -------
    float
        The barrier.
    """
    lams = _real_array(lams, "lams", "a 1-d array of real numbers")
    losses = _real_array(losses, "losses", "a 1-d array of real numbers")
    if lams.ndim != 1 or losses.shape != lams.shape:
        raise ValueError(f"'lams' and 'losses' must be 1-d of equal length; got {lams.shape} and {losses.shape}.")
    if not np.all(np.isfinite(lams)):
        raise ValueError("'lams' must contain only finite values in [0, 1]; got "
                         f"{float(lams[~np.isfinite(lams)][0])!r}.")
    if not (np.any(lams == 0) and np.any(lams == 1)):
        raise ValueError("'lams' must contain both endpoints 0 and 1.")
    if not np.all(np.isfinite(losses)) or np.any((lams < 0) | (lams > 1)):
        raise ValueError("'losses' must be finite and 'lams' in [0, 1].")
    lf = losses[lams == 1][0]
    ll = losses[lams == 0][0]
    return float(np.max(losses - (lams * lf + (1 - lams) * ll)))
