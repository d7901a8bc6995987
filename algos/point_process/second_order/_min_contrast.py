r"""Minimum-contrast fit of a log-Gaussian Cox process (Diggle 1983; Møller, Syversveen & Waagepetersen
1998, section 6; the method of spatstat's ``kppm(X ~ 1, "LGCP")``).

The hyperparameters :math:`\theta = (\sigma^2, \phi)` minimise the contrast

.. math::

   D(\theta) = \int_{r_{\min}}^{r_{\max}} \big|\hat T(r)^q - T(r; \theta)^q\big|^p\,dr

between a nonparametric estimate :math:`\hat T` (Ripley's K, isotropic correction, or the pair-correlation
function, translation correction; :mod:`._second_order`) and the model's summary
(:func:`theory.point_process.lgcp_k_function`, :func:`theory.point_process.lgcp_pair_correlation`), with
spatstat's defaults ``q = 1/4, p = 2``, ``r_min = 0`` (K) or ``r_max / 1000`` (g) and
``r_max = min(shorter side / 4, sqrt(1000 / (pi lambda)))``. The integral is the trapezoid rule on the
``r`` grid; the search is a log-scale grid followed by Nelder--Mead. The mean follows from the intensity:
:math:`\mu = \log(n / |W|) - \sigma^2 / 2`. With an ``intensity`` (e.g. a Poisson fit with covariates)
the inhomogeneous summaries are used and ``mean`` is not defined.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.optimize import minimize

import theory.point_process as _theory

from ..._validation import check_array, check_option, check_scalar_float
from .._quadrature import duplicates_reported
from .._window import Window
from ._second_order import _check_pattern, k_function, pair_correlation

__all__ = ["MinContrastFit", "lgcp_min_contrast"]

#: Search box of the fit (sigma^2 and phi / r_max); a fit on its edge is reported by ``at_bound``.
VARIANCE_RANGE = (1e-6, 50.0)
RANGE_FACTOR = (1e-3, 20.0)
#: Starting grid (log-spaced) of the Nelder--Mead search.
START_GRID = 9


@dataclasses.dataclass
class MinContrastFit:
    """Result of :func:`lgcp_min_contrast`.

    Parameters
    ----------
    variance, length_scale : float
        Fitted variance and range of the Gaussian field.
    mean : float or None
        Intercept of the log-intensity (``None`` for an inhomogeneous fit).
    nu : float
        Matérn smoothness.
    window : Window
        The window of the pattern.
    statistic : {"K", "g"}
        The summary that was matched.
    r : ndarray
        Distances.
    observed, fitted : ndarray
        The summary of the pattern and of the fitted model on ``r``.
    contrast : float
        The minimised discrepancy D.
    n : int
        Number of points.
    at_bound : bool
        Whether the optimum lies on a bound of the search range.
    """

    variance: float
    length_scale: float
    mean: float | None
    nu: float
    window: Window
    statistic: str
    r: np.ndarray
    observed: np.ndarray
    fitted: np.ndarray
    contrast: float
    n: int
    at_bound: bool

    def k_function(self, r):
        """The fitted model's K at ``r``.

        Parameters
        ----------
        r : array-like
            Distances.

        Returns
        -------
        ndarray
            The fitted model's K at ``r``.
        """
        return _theory.lgcp_k_function(r, self.variance, self.length_scale, self.nu)

    def pair_correlation(self, r):
        """The fitted model's g at ``r``.

        Parameters
        ----------
        r : array-like
            Distances.

        Returns
        -------
        ndarray
            The fitted model's g at ``r``.
        """
        return _theory.lgcp_pair_correlation(r, self.variance, self.length_scale, self.nu)

    def simulate(self, random_state=None, grid=128):
        """A pattern from the fitted (homogeneous) LGCP, by :func:`simulate_lgcp` on a ``grid`` raster.

        Parameters
        ----------
        random_state : None, int, SeedSequence or Generator, default=None
            Seed.
        grid : int, default=128
            Raster side.

        Returns
        -------
        ndarray of shape (n, 2)
            The points.
        """
        if self.mean is None:
            raise ValueError("an inhomogeneous minimum-contrast fit has no mean: it cannot be simulated alone.")
        from .._simulate import simulate_lgcp

        return simulate_lgcp(self.window, self.mean, self.variance, self.length_scale, nu=self.nu, grid=grid,
                             random_state=random_state).points


def _default_rmax(win, n):
    xmin, xmax, ymin, ymax = win.bounds
    lam = n / win.area
    return min(0.25 * min(xmax - xmin, ymax - ymin), math.sqrt(1000.0 / (math.pi * lam)))


def _fit_curve(r, obs, statistic, nu, q, p, rmin, rmax):
    """Minimise the contrast between ``obs`` on ``r`` and the model's K or g: (sigma^2, phi, D, at_bound)."""
    sel = (r >= rmin) & (r <= rmax) & np.isfinite(obs)
    rs, os_ = r[sel], np.maximum(obs[sel], 0.0)
    if len(rs) < 5:
        raise ValueError("fewer than 5 distances with a finite summary in [rmin, rmax]; widen the range.")
    oq = os_**q
    model = _theory.lgcp_k_function if statistic == "K" else _theory.lgcp_pair_correlation
    lo = np.log([VARIANCE_RANGE[0], RANGE_FACTOR[0] * rmax])
    hi = np.log([VARIANCE_RANGE[1], RANGE_FACTOR[1] * rmax])

    def contrast(t):
        t = np.clip(t, lo, hi)
        m = model(rs, float(np.exp(t[0])), float(np.exp(t[1])), nu)
        return float(np.trapezoid(np.abs(oq - m**q) ** p, rs))

    g1 = np.linspace(math.log(0.05), math.log(10.0), START_GRID)
    g2 = np.linspace(math.log(0.02 * rmax), math.log(3.0 * rmax), START_GRID)
    best = min(((contrast(np.array([a, b])), a, b) for a in g1 for b in g2))
    res = minimize(contrast, np.array(best[1:]), method="Nelder-Mead",
                   options=dict(xatol=1e-7, fatol=1e-14 * max(best[0], 1e-300), maxiter=4000))
    t = np.clip(res.x, lo, hi)
    at_bound = bool(np.any(np.abs(t - lo) < 1e-3) or np.any(np.abs(t - hi) < 1e-3))
    return float(np.exp(t[0])), float(np.exp(t[1])), contrast(t), at_bound


def lgcp_min_contrast(X, window=None, statistic="K", nu=0.5, r=None, rmin=None, rmax=None, q=0.25, p=2.0,
                      intensity=None):
    r"""Fit :math:`(\sigma^2, \phi)` of a stationary (or, given ``intensity``, inhomogeneous) LGCP by
    minimum contrast on K or g (module docstring).

    Parameters
    ----------
    X : array-like (n, 2)
    window : tuple, (V, 2) polygon, Window or None
    statistic : {"K", "g"}, default="K"
    nu : {0.5, 1.5}, default=0.5
        Matérn smoothness of the model (0.5: exponential covariance, spatstat's default LGCP model).
    r : array-like, optional
        Distances of the summary (default 513 values on ``[0, rmax]``).
    rmin, rmax : float, optional
        Range of the contrast integral (defaults in the module docstring).
    q, p : float, default 0.25 and 2
    intensity : None, array (n,), callable or fitted model
        Inhomogeneous fit: the summaries are reweighted by this intensity.

    Returns
    -------
    MinContrastFit

    Examples
    --------
    >>> from algos.point_process import simulate_lgcp
    >>> X = simulate_lgcp((0, 1, 0, 1), 5.0, 1.0, 0.1, grid=64, random_state=0).points
    >>> fit = lgcp_min_contrast(X, (0, 1, 0, 1))
    >>> bool(0.3 < fit.variance < 3.0), bool(0.03 < fit.length_scale < 0.3)
    (True, True)
    """
    X, win = _check_pattern(X, window)
    n = len(X)
    if n < 10:
        raise ValueError(f"'X' needs at least 10 points for a minimum-contrast fit; got {n}.")
    check_option(statistic, "statistic", ("K", "g"))
    if isinstance(nu, (bool, np.bool_)) or nu not in (0.5, 1.5):
        raise ValueError(f"'nu' must be one of {{0.5, 1.5}}; got {nu!r}.")
    q = check_scalar_float(q, "q", low=0.0, closed="neither")
    p = check_scalar_float(p, "p", low=0.0, closed="neither")
    if r is not None:
        r = check_array(r, "r", ndim=1)
        if rmax is None and not 0.0 < float(r[-1]) <= win.diameter:
            raise ValueError(f"'r' must end in (0, {win.diameter:g}] (the window diameter), its last value being the "
                             f"default 'rmax'; got {float(r[-1])!r}.")
    if rmax is None:
        rmax = float(r[-1]) if r is not None else _default_rmax(win, n)
    rmax = check_scalar_float(rmax, "rmax", low=0.0, high=win.diameter, closed="right")
    if r is None:
        r = np.linspace(0.0, rmax, 513)
    if rmin is None:
        rmin = rmax / 1000.0 if statistic == "g" else 0.0
    rmin = check_scalar_float(rmin, "rmin", low=0.0)
    if not rmin < rmax:
        raise ValueError(f"'rmin' must be < 'rmax'; got rmin = {rmin!r}, rmax = {rmax!r}.")
    if statistic == "K":
        with duplicates_reported():
            obs = k_function(X, win, r=r, correction="isotropic", intensity=intensity).value
    else:
        with duplicates_reported():
            obs = pair_correlation(X, win, r=r, correction="translation", intensity=intensity).value
    s2, phi, D, at_bound = _fit_curve(r, obs, statistic, nu, q, p, rmin, rmax)
    model = _theory.lgcp_k_function if statistic == "K" else _theory.lgcp_pair_correlation
    mean = None if intensity is not None else math.log(n / win.area) - 0.5 * s2
    return MinContrastFit(variance=s2, length_scale=phi, mean=mean, nu=float(nu), window=win, statistic=statistic,
                          r=r, observed=obs, fitted=model(r, s2, phi, nu), contrast=D, n=n,
                          at_bound=at_bound)
