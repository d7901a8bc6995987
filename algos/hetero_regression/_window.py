r"""Iterative shrinking-window regression (hetero_regression reconstruction notes, M3; reconstructed, opt-in)."""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from .._validation import (
    OrderedStrOptions,
    validate_params,
)
from ._baselines import _lad_lp, _LinearPredictMixin, _lstsq, _validate_fit, _with_ones
from ._data import suggest_delta
from ._inference import _InferenceMixin, sandwich_cov, window_residual

__all__ = ["IterativeWindowRegressor"]

_REFITS = ("ols", "huber")
#: Extra rounds at the final window width (hetero_regression reconstruction notes, M3: T = ceil(log2(w0 / w_min)) + 5).
EXTRA_ROUNDS = 5


def _huber_fit(X, y, delta, fit_intercept):
    """M1 (fixed-threshold Huber) on ``X`` (intercept as the first coefficient), warnings muted.

    The ``ConvexRegimeWarning`` of intermediate fits is expected (wide windows have few inliers
    relative to the final ones) and would only be noise here.
    """
    from ._huber import HuberSoSRegressor

    Xr = X[:, 1:] if fit_intercept else X
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = HuberSoSRegressor(delta=delta, fit_intercept=fit_intercept).fit(Xr, y)
    return np.r_[est.intercept_, est.coef_] if fit_intercept else est.coef_


class IterativeWindowRegressor(_InferenceMixin, _LinearPredictMixin, RegressorMixin, BaseEstimator):
    r"""Iterative shrinking-window least squares (**reconstructed**; opt-in).

    .. note:: Reconstructed, not from the target paper: the paper's algorithm is unknown; this is
       the project's guess at an estimator "in the style of" Liang & Yuan's iterative truncation
       (COLT 2020) carried to regression (hetero_regression reconstruction notes, M3, status [R]).
       **Opt-in**: in a reference
       prototype a trimmed-LS cousin was 2.5-5x worse than Huber
       (:class:`HuberSoSRegressor`); use Huber unless this one is shown to match it.

    1. Start from the exact LAD fit :math:`b^0` (:func:`lad`), a robust convex start; the window
       is :math:`w_0 = \operatorname{median}_i |y_i - x_i^\top b^0|`.
    2. For :math:`t = 0, \dots, T-1` with
       :math:`T = \lceil \log(w_0/w_{\min}) / \log(1/\text{halving}) \rceil + 5`:
       :math:`S_t = \{i : |y_i - x_i^\top b^t| \le w_t\}`; :math:`b^{t+1}` = least squares on
       :math:`S_t` (``refit="ols"``) or the Huber fit with :math:`\delta = w_t` on all rows
       (``refit="huber"``); :math:`w_{t+1} = \max(\text{halving}\cdot w_t, w_{\min})`.
    3. Return :math:`b^T` (stops earlier at a fixed point: final width reached and the window
       keeps the same rows, or the Huber refit no longer moves).

    The idea: while :math:`\|b^t - \beta^*\|` is large the window must be wide to keep the signal
    rows; each refit on a window that holds most signals and few noisy rows shrinks the error,
    which allows a narrower window, down to the signal scale :math:`w_{\min}` (1 in the model's
    units). At the end, ``refit="ols"`` is a hard-thresholded ("skipped") M-estimator with
    window :math:`w_{\min}`, a non-convex cousin of Huber with :math:`\delta = w_{\min}`;
    ``refit="huber"`` ends at exactly M1 with :math:`\delta = w_{\min}`.

    Parameters
    ----------
    delta_min : float > 0 or "auto", default=1.0
        Final window half-width :math:`w_{\min}`, in the units of ``y``: the noise scale of the
        reliable sources (as ``delta`` of :class:`HuberSoSRegressor`). ``"auto"``:
        :func:`suggest_delta` on the data (a heuristic).
    halving : float in (0, 1), default=0.5
        Shrink factor of the window per round.
    refit : {"ols", "huber"}, default="ols"
        Least squares on the window, or Huber (M1) with :math:`\delta = w_t` on all rows.
    max_iter : int >= 1, default=100
        Cap on the number of rounds ``T``; a ``ConvergenceWarning`` says when it bites.
    fit_intercept : bool, default=False
        Add a column of ones (an ordinary coefficient).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    n_iter_ : int
        Rounds run.
    converged_ : bool
        Whether the last window width was ``delta_min`` and the iteration reached a fixed point.
    window_path_ : ndarray
        The widths :math:`w_0, w_1, \dots` used.
    delta_min_ : float
        The final width used (resolved from ``"auto"``).
    n_inliers_ : int
        Rows in the last window (:math:`|r_i| \le w`) at the returned coefficients.
    optimality_residual_ : float
        The certificate: for ``refit="ols"`` the window condition :math:`\|X_S^\top r_S\| / (w
        \|X\|_F)` on the returned fit's own window :math:`S = \{|r_i| \le w\}` (zero at a fixed point:
        least squares on its own window); for ``refit="huber"`` the relative gradient of the Huber
        objective at :math:`\delta = w`. ``w`` is the last width used.
    coef_se_ : ndarray of shape (n_features,) or (n_features + 1,)
        Sandwich standard errors of ``coef_`` (then of ``intercept_``, last) for the skipped mean
        :math:`\psi(r) = r 1\{|r| \le w\}` (``refit="ols"``; its curvature holds the edge term
        :math:`-2wf(w)`, estimated from the residual counts around :math:`\pm w`) or Huber at
        :math:`\delta = w`, times :math:`n/(n-p)`; see :class:`SubsetOfSignalsRegressor`. The
        choice of the window by the data is not accounted for. NaN when the curvature matrix is not
        positive definite (a spurious window). With a few hundred rows in the window the edge
        density is estimated with a 20-50 % error and these standard errors are unreliable (a heavy
        tail; often NaN at d = 20): for intervals use :class:`SubsetOfSignalsRegressor`, which
        bootstraps its window fits.
    cov_params_ : ndarray of shape (p, p)
    n_features_in_ : int

    Raises
    ------
    ValueError
        On NaN/inf, ``n_samples <= n_features``, or a bad parameter.

    Notes
    -----
    *Measured here* (n = 2e4, d = 5, 5 seeds; median error, Huber = M1 with delta = 1): with noisy
    sigma log-uniform on [10, 1e3], ``refit="ols"`` gave .21/.16/.11/.06 at m = 500/1000/2000/4000
    against Huber's .50/.29/.14/.11; in the sign-only regime (noisy sigma = 1e5) .11/.10/.10/.07
    against 1.42/.49/.22/.08 (oracle WLS .09/.07/.05/.04). The "2.5-5x worse" of the prototype was
    measured for fixed 50% trimming (:class:`TrimmedLSRegressor`), which we reproduce (.60 at
    m = 2000). This estimator is non-convex, so the convex barrier of CS26 Thm 4.7 does not apply
    to it, but it has no proof either: it stays opt-in until validated more widely.
    ``refit="huber"`` ends with M1 at :math:`\delta = w_{\min}` on all rows, whose minimiser does
    not depend on the start (convexity), so it returns M1's answer at a higher cost.
    The LAD start was chosen over "M1 with a large delta": with delta = median ``|r_OLS|`` the start is
    OLS-like in the sign-only regime and the windows lock onto it (median error 160 vs 0.40 from
    LAD at m = 250, n = 2e4, d = 5).

    When a window holds fewer than :math:`\max(2p, p+1)` rows (``p`` coefficients) -- possible
    only when ``delta_min`` is far below the noise of every row -- the refit uses the
    :math:`\max(2p, p+1)` rows of smallest :math:`|r_i|` instead, so the fit is always defined.
    Cost: one LAD LP plus :math:`T` least-squares (or Huber) fits, :math:`T \approx \log_2(w_0)
    + 5` (about 15-25 for the reconstruction's instances).

    References
    ----------
    Liang, Yuan (2020), Learning entangled single-sample Gaussians in the subset-of-signals model,
    COLT (iterative truncated averaging, the 1-D ancestor).
    Yuan, Liang (2020), Learning entangled single-sample distributions via iterative trimming,
    AISTATS.

    Examples
    --------
    >>> from algos.hetero_regression._data import make_subset_of_signals
    >>> data = make_subset_of_signals(5000, 3, 1500, random_state=0)
    >>> est = IterativeWindowRegressor().fit(data.X, data.y)
    >>> bool(np.linalg.norm(est.coef_ - data.beta) < 0.3)
    True
    """

    _parameter_constraints: dict = {
        "delta_min": [Interval(Real, 0, math.inf, closed="neither"), StrOptions({"auto"})],  # finite
        "fit_intercept": ["boolean"],
        "halving": [Interval(Real, 0, 1, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "refit": [OrderedStrOptions(("ols", "huber"))],
    }

    def __init__(self, *, delta_min=1.0, halving=0.5, refit="ols", max_iter=100, fit_intercept=False):
        self.delta_min = delta_min
        self.halving = halving
        self.refit = refit
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept

    def fit(self, X, y):
        """Fit by shrinking-window refits.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), n_samples > n_features
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        validate_params(self)
        halving, refit, max_iter = float(self.halving), self.refit, int(self.max_iter)
        fit_intercept = bool(self.fit_intercept)
        X, y = _validate_fit(self, X, y)
        Xa = _with_ones(X) if fit_intercept else X
        w_min = suggest_delta(Xa, y) if isinstance(self.delta_min, str) else float(self.delta_min)
        self.delta_min_ = w_min
        n, p = Xa.shape
        n_min = min(n, max(2 * p, p + 1))

        b = _lad_lp(Xa, y)[0]
        r = y - Xa @ b
        w = float(np.median(np.abs(r)))
        T = EXTRA_ROUNDS
        if w > w_min:
            T += int(math.ceil(math.log(w / w_min) / math.log(1.0 / halving) - 1e-12))
        schedule_capped = T > max_iter
        if schedule_capped:
            warnings.warn(
                f"IterativeWindowRegressor: the window schedule needs T = {T} rounds but max_iter = "
                f"{max_iter}; stopped at width {max(w * halving ** (max_iter - 1), w_min):.3g} > "
                f"delta_min = {w_min:g}. Increase max_iter (or halving closer to 0).",
                ConvergenceWarning,
                stacklevel=2,
            )
            T = max_iter
        b, r, path, converged, n_iter = _window_rounds(Xa, y, b, r, w, w_min, halving, T, refit, n_min,
                                                      fit_intercept)
        self._store(b, fit_intercept)
        self.n_iter_ = int(n_iter)
        self.converged_ = bool(converged)
        self.window_path_ = np.asarray(path, dtype=np.float64)
        w_last = path[-1] if path else w
        self.n_inliers_ = int(np.count_nonzero(np.abs(r) <= w_last))
        cov = self._window_cov(Xa, y, b, w_last, refit, fit_intercept)
        self._set_cov(cov)
        if not self.converged_ and not schedule_capped:
            warnings.warn(
                f"IterativeWindowRegressor reached no fixed point: the schedule's T = {T} rounds "
                f"(max_iter={max_iter} not binding) ended at width {w_last:g} with optimality residual "
                f"{self.optimality_residual_:.2e}; the window's rows still change, so the returned fit is the "
                "last round's least squares, not a solution of the window problem. Use refit='huber' (convex, "
                "certified by its gradient) or HuberSoSRegressor.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def _window_cov(self, Xa, y, b, w_last, refit, fit_intercept):
        """Sets ``optimality_residual_`` at the final width; returns the sandwich covariance (intercept last)."""
        r = y - Xa @ b
        if refit == "ols":
            self.optimality_residual_ = window_residual(Xa, y, b, w_last)
            cov = sandwich_cov(Xa, r, "window", w_last)
        else:
            g = Xa.T @ np.clip(r, -w_last, w_last)
            self.optimality_residual_ = float(np.linalg.norm(g)) / (w_last * float(np.linalg.norm(Xa)))
            cov = sandwich_cov(Xa, r, "huber", w_last)
        if fit_intercept:  # intercept first in Xa, last in cov_params_
            order = np.r_[np.arange(1, Xa.shape[1]), 0]
            cov = cov[np.ix_(order, order)]
        return cov

    def _summary_info(self):
        return [("Method", f"window (refit={self.refit})"),
                ("Sources treated as signals", f"{self.n_inliers_} (|r| <= {self.delta_min_:g})"),
                ("Converged", str(self.converged_)),
                ("Optimality residual", f"{self.optimality_residual_:.2e}"),
                ("Covariance", "sandwich, HC1 factor n/(n-p)")]


def _window_rounds(Xa, y, b, r, w, w_min, halving, T, refit, n_min, fit_intercept):
    """The shrinking-window rounds from the start ``b`` (residuals ``r``) at width ``w``.

    Each round refits on the rows within the width (``refit='ols'``; at least ``n_min`` rows) or a Huber
    fit at that threshold (``'huber'``), then shrinks the width by ``halving`` down to ``w_min``.
    Returns ``(b, r, widths used, converged, rounds)``.
    """
    n = len(y)
    path, keep, converged, n_iter = [], None, False, 0
    for n_iter in range(1, T + 1):
        path.append(w)
        absr = np.abs(r)
        if refit == "ols":
            new = absr <= w
            if np.count_nonzero(new) < n_min:
                new = np.zeros(n, dtype=bool)
                new[np.argpartition(absr, n_min - 1)[:n_min]] = True
            if keep is not None and w == w_min and np.array_equal(new, keep):
                converged = True  # the same rows again at the final width: a fixed point
                n_iter -= 1
                path.pop()
                break
            keep = new
            b = _lstsq(Xa[keep], y[keep])
        else:
            b_new = _huber_fit(Xa, y, w, fit_intercept)
            moved = float(np.linalg.norm(b_new - b))
            b = b_new
            if w == w_min and moved <= 1e-10 * (1.0 + float(np.linalg.norm(b))):
                converged = True
                r = y - Xa @ b
                break
        r = y - Xa @ b
        w = max(halving * w, w_min)
    else:
        converged = converged or (refit == "ols" and path[-1] == w_min and keep is not None
                                  and np.array_equal(np.abs(r) <= w_min, keep))
    return b, r, path, converged, n_iter
