r"""The front-door estimator of the module: :class:`SubsetOfSignalsRegressor` (``method="auto"``).

It fits the convex estimator with a proven rate (fixed-threshold Huber, M1), refines it by the
shrinking-window least squares of M3 started from that fit, and keeps the candidate with the
smallest estimated asymptotic variance; when no candidate shows a reliable subset (no excess of
residuals near zero), it says so with a :class:`NoRecoveryWarning`.
"""

from __future__ import annotations

import copy
import math
import warnings
import zlib
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import validate_data

from .._validation import (
    RANDOM_STATE_CONSTRAINTS,
    OrderedStrOptions,
    check_random_state,
    validate_params,
)
from ._adaptive import adaptive_refine
from ._baselines import _check_real, _check_shape, _LinearPredictMixin, _lstsq
from ._dask import is_dask_array
from ._data import suggest_delta
from ._huber import ConvexRegimeWarning, HuberSoSRegressor, _pow2_scale
from ._huber_solvers import _init_lad
from ._inference import _InferenceMixin, _scale_cov, sandwich_cov, window_bootstrap_cov, window_residual
from ._mixture import HEAVY_LEVERAGE, design_kurtosis, mixture_refine

__all__ = ["SubsetOfSignalsRegressor", "NoRecoveryWarning"]

_METHODS = ("auto", "huber", "window", "lad", "cmed", "ols")
_INFERENCE = ("auto", "sandwich")
_REFINE = ("none", "mixture", "adaptive")
#: Window rounds at the final width (as ``IterativeWindowRegressor``: hetero_regression reconstruction notes, M3,
#: T = log2(w0/w_min) + 5).
EXTRA_ROUNDS = 5
#: The OLS fallback is kept when OLS's estimated variance is no larger than the robust fit's with a
#: pessimistic inlier count ``N_in - p - Z_PESSIMISTIC sqrt(N_in)`` (about a 2-sigma lower bound of
#: the Poisson count, minus the ``p`` residuals a fit can always interpolate).
Z_PESSIMISTIC = 2.0
#: Recovery test: the selected fit must hold ``N_in - p - B`` excess inliers with
#: ``excess >= Z_RECOVERY sqrt(B + p)``, ``B`` the background count (residual density just outside
#: the threshold times its width); a 3-sigma rule.
Z_RECOVERY = 3.0
#: Cap on the rounds of one window refinement (the schedule needs ~log2(median|r| / delta) + 5).
MAX_ROUNDS = 100
#: IRLS-for-L1 steps of the rough LAD start (``HuberSoSRegressor(init="lad")`` uses the same).
LAD_STEPS = 20
#: A window fit is a fixed point (``converged_``) when its window-condition residual
#: (:func:`window_residual`, relative) is below this: least squares on its own window, to round-off.
WINDOW_TOL = 1e-8
#: ``inference="auto"`` bootstraps a window fit only while ``n * p^2 <= BOOTSTRAP_BUDGET`` (the
#: replicates cost about ``8 n_bootstrap n p^2`` flops: ~0.1 s at the budget); beyond, the sandwich.
BOOTSTRAP_BUDGET = 2e6


class NoRecoveryWarning(UserWarning):
    r"""No estimator of the module finds a reliable subset in the data.

    Raised by :class:`SubsetOfSignalsRegressor` when the chosen fit has no significant excess of
    residuals inside ``[-delta, delta]`` over the residual density just outside it: the data show no
    group of sources with noise of the scale ``delta``. Either there are too few reliable sources
    (below :math:`m \approx 0.5\sqrt{nd}` with huge noise elsewhere, no estimator here recovers
    :math:`\beta^*`), or ``delta`` does not match their noise scale (try ``delta="auto"``).
    """


def _window_refine(X, y, b, w_min, max_rounds, halving=0.5, polish=False):
    r"""Shrinking-window least squares from ``b``: returns ``(b, n_rounds, widths)``.

    Method M3 of the hetero_regression reconstruction notes.

    :math:`w_0 = \operatorname{median}|r|`; round :math:`t` refits least squares on
    :math:`\{i : |r_i| \le w_t\}` (at least :math:`\max(2p, p+1)` rows: the smallest residuals
    otherwise) and halves the width down to ``w_min``; stops at a fixed point of the final width.
    ``polish=True`` goes on after the schedule's ``T`` rounds at ``w_min`` until the window keeps
    the same rows (an exact fixed point) or ``max_rounds`` rounds in all; the front door does not
    use it: measured over 40 seeds per cell (n = 2000, d = 5, m / sqrt(nd) in {1, 2, 4}, three noise
    laws) the exact fixed point was 0-14 % less accurate (median error) than the schedule's
    ``T``-th round.
    """
    n, p = X.shape
    n_min = min(n, max(2 * p, p + 1))
    r = y - X @ b
    w = float(np.median(np.abs(r)))
    T = EXTRA_ROUNDS
    if w > w_min:
        T += int(math.ceil(math.log(w / w_min) / math.log(1.0 / halving) - 1e-12))
    T = min(T, max_rounds)
    keep, widths = None, []
    for t in range(max_rounds):
        a = np.abs(r)
        new = a <= w
        if np.count_nonzero(new) < n_min:
            new = np.zeros(n, dtype=bool)
            new[np.argpartition(a, n_min - 1)[:n_min]] = True
        if keep is not None and w == w_min and np.array_equal(new, keep):
            break
        if t >= T and not polish:
            break
        widths.append(w)
        keep = new
        b = _lstsq(X[keep], y[keep])
        r = y - X @ b
        w = max(halving * w, w_min)
    return b, len(widths), np.asarray(widths)


def _counts(r, delta):
    r"""``(N_in, B)``: residuals with ``|r| <= delta``, and the background count for that width.

    ``B`` is half the count on :math:`3\delta < |r| \le 5\delta` (twice the width, and beyond the
    reach of the signal rows' own tails: ``P(|N(0, 1)| > 3) = 0.3 %``).
    """
    a = np.abs(r)
    n_in = int(np.count_nonzero(a <= delta))
    ring = int(np.count_nonzero((a > 3.0 * delta) & (a <= 5.0 * delta)))
    return n_in, 0.5 * ring


def _recovered(n_in, bg, p):
    """The reliable-subset test: ``N_in - p - B >= Z_RECOVERY sqrt(B + p)``."""
    return bool(n_in - p - bg >= Z_RECOVERY * math.sqrt(bg + p))


def _variance_huber(r, delta, n_in_eff):
    r"""Sandwich factor :math:`E\psi^2 / (E\psi')^2` of Huber at these residuals (``inf`` if no inlier)."""
    if n_in_eff <= 0:
        return math.inf
    n = r.shape[0]
    return float(np.mean(np.minimum(np.abs(r), delta) ** 2)) / (n_in_eff / n) ** 2


def _variance_window(r, w):
    r"""Sandwich factor of the skipped mean :math:`\psi(r) = r\,1\{|r| \le w\}` at these residuals.

    :math:`E\psi' = P(|r| \le w) - 2w f(w)`, with the density at the edge estimated on
    :math:`(w/2, 3w/2]`; so the denominator is :math:`P(|r| \le w/2) - P(w < |r| \le 3w/2)`, which is
    about zero for a spurious window on a flat residual density (then the variance is ``inf``).
    """
    a = np.abs(r)
    n = r.shape[0]
    den = (np.count_nonzero(a <= 0.5 * w) - np.count_nonzero((a > w) & (a <= 1.5 * w))) / n
    if den <= 0:
        return math.inf
    return float(np.mean(np.where(a <= w, r * r, 0.0))) / den**2


class SubsetOfSignalsRegressor(_InferenceMixin, _LinearPredictMixin, RegressorMixin, BaseEstimator):
    r"""Linear regression under heteroskedastic noise with few reliable sources: the front door.

    With ``method="auto"`` (default) it combines the module's estimators by a data-driven rule:

    1. fit fixed-threshold Huber (:class:`HuberSoSRegressor`, M1; rate :math:`\sqrt{nd}/m` proven
       by d'Orsi, Novikov & Steurer 2021);
    2. refine it by shrinking-window least squares (the window estimator M3,
       :class:`IterativeWindowRegressor`, **reconstructed**) started from the Huber fit, and once
       more from a rough LAD start (20 IRLS-for-L1 steps);
    3. estimate for each candidate the asymptotic variance factor of its M-estimator from its own
       residuals (the sandwich :math:`E\psi^2/(E\psi')^2`; the design term :math:`(X^\top X)^{-1}`
       is common to all and cancels) and keep the smallest;
    4. test that fit for a reliable subset: an excess of residuals inside :math:`[-\delta,
       \delta]` over the residual density further out (:func:`_counts`), beyond the ``p`` residuals
       any fit can interpolate, of at least 3 standard deviations;
    5. compare with OLS (variance :math:`E r^2`) and keep OLS when it is no worse -- with the robust
       fit's point estimate when the test of step 4 passes (e.g. homoskedastic Gaussian noise, where
       OLS is efficient), with a pessimistic inlier count (:math:`N_{in} - p - 2\sqrt{N_{in}}`)
       when it fails (huge near-homoskedastic noise and no usable subset: a handful of inliers
       would otherwise make any robust fit look better than OLS);
    6. when the returned fit fails the test of step 4, warn with :class:`NoRecoveryWarning` (no
       estimator of the module recovers :math:`\beta^*` there).

    **Why this rule.** In the subset-of-signals model every candidate is an M-estimator
    :math:`\sum_i \psi(y_i - x_i^\top b) x_i = 0` with a Gaussian-like design, whose error is
    :math:`\approx \sqrt{V d/n}` with :math:`V = E\psi(r)^2 / (E\psi'(r))^2`. Huber
    (:math:`\psi = \operatorname{clip}_\delta`) pays :math:`E\psi^2 \approx \delta^2` on every
    noisy row, which gives its rate :math:`\sqrt{nd}/m`; the skipped mean of the window estimator
    (:math:`\psi(r) = r\,1\{|r|\le\delta\}`) gives zero weight to the rows outside the window and
    reaches about :math:`\sqrt{d/m}` (the oracle floor) once its window sits on the signals, but
    is non-convex and can lock onto a spurious window; its :math:`E\psi'` contains the boundary
    term :math:`-2\delta f(\delta)`, which is about zero for a spurious window on a flat residual
    density, so a spurious window gets an infinite variance and is never chosen. Every quantity
    is computed on the candidates' own residuals; nothing is tuned to the benchmark's noise laws.
    The rule is a heuristic *selection*: no rate is claimed for ``auto`` beyond that of its
    candidates (measured in ``benchmarks/bench_hetero_regression.py``).

    Parameters
    ----------
    method : {"auto", "huber", "window", "lad", "cmed", "ols"}, default="auto"
        ``"auto"``: the rule above. ``"huber"``: :class:`HuberSoSRegressor`; ``"window"``: the
        window refinement of the Huber fit (step 2 only); ``"lad"``: exact LAD
        (:class:`LADRegressor`); ``"cmed"``: :class:`CoordinateMedianRegressor`; ``"ols"``.
    delta : float > 0 or "auto", default=1.0
        Noise scale of the reliable sources, in the units of ``y`` (the Huber threshold and the final
        window). ``"auto"``: :func:`suggest_delta` (a heuristic) on the data.
    fit_intercept : bool, default=False
        Add a column of ones (an ordinary coefficient).
    max_iter : int >= 1, default=500
        Iteration cap of the Huber fit (see :class:`HuberSoSRegressor`); the window rounds are capped
        at 100.
    inference : {"auto", "sandwich"}, default="auto"
        How ``coef_se_`` is computed. ``"sandwich"``: the sandwich of the returned fit (cheap).
        ``"auto"``: the sandwich for Huber and OLS fits, and a pairs bootstrap of the window
        refinement (``n_bootstrap`` replicates, each rerunning the window schedule from 8 ``delta``)
        for window fits, whose sandwich is unreliable at a few hundred reliable rows (see Notes),
        while :math:`n p^2 \le 2 \cdot 10^6` (``p`` coefficients); beyond, the sandwich (the
        bootstrap's cost grows as :math:`n p^2`; ``inference_`` says which was used).
    n_bootstrap : int >= 10, default=200
        Bootstrap replicates (``inference="auto"``, window fits).
    random_state : None, int or numpy Generator, default=0
        Seed of the bootstrap (fixed by default, so refits give the same standard errors). ``fit``
        copies the generator's state, and the bootstrap (run on the first inference call) draws from
        that copy: the intervals do not depend on when they are first asked for, and a Generator
        passed here is not advanced by the bootstrap.
    refine : {"none", "mixture", "adaptive"}, default="none"
        ``"mixture"``: when the returned fit is a robust one (Huber or window) with a reliable
        subset, refine it by the joint maximum likelihood of the coefficients and a Gaussian
        scale mixture of the noise (its law estimated on a grid of scales, cross-fitted; see
        :mod:`algos.hetero_regression._mixture`), with the sandwich of that likelihood as
        ``cov_params_``. It approaches the best width any estimator can reach without knowing
        the signal rows (:func:`theory.hetero_regression.scale_mixture_width_bound`, a floor that
        assumes noise independent of the design: it does not apply when the noise scale depends on
        the features): measured
        width 1.4x the oracle WLS interval against the front door's 2x at n = 2000, d = 5
        (docs, section "Coverage and width"). Opt-in and **reconstructed** (the project's own).
        On rows with heavy-tailed leverage its sandwich takes the HC3 form (``inference_`` is then
        ``"mixture_hc3"``; see :mod:`algos.hetero_regression._mixture`).
        ``"adaptive"``: on the same fits, three Newton steps with the noise's score estimated by a
        kernel density of the residuals, each fold of rows scored from the other folds' residuals
        (Bickel's 1982 adaptive one-step estimator, cross-fitted; see
        :mod:`algos.hetero_regression._adaptive`), with the sandwich of the estimated score
        (``inference_`` ``"adaptive"``). Assumes noise symmetric and independent of the design.
        On rows with heavy-tailed leverage (the rule of ``"mixture"``), where its sandwich
        under-covers (measured 0.88), it is refused: the mixture refinement with its HC3 sandwich
        runs instead and ``inference_`` says ``"mixture_hc3"``.
        Measured against ``"mixture"`` in ``benchmarks/hetero_inference.py`` (docs, "Adaptive
        refinement"): not narrower there, so it is not chosen automatically.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    method_ : str
        The estimator whose fit is returned: ``"huber"``, ``"window"`` (from the Huber start),
        ``"window_lad"`` (from the LAD start), ``"ols"``, or the requested method.
    candidates_ : dict
        ``auto`` only: ``{name: {"variance": V, "n_inliers": N_in, "background": B}}`` for every
        candidate (``V = inf`` when it has no usable inliers).
    recovered_ : bool
        Whether the returned fit passed the reliable-subset test (``auto``; always computed).
    excess_inliers_ : float
        ``N_in - p - B`` of the returned fit.
    n_inliers_ : int
        Residuals of the returned fit with ``|r_i| <= delta_``.
    n_iter_ : int
        Iterations behind the returned fit (Huber IRLS iterations plus window rounds; 1 for OLS/LAD).
    delta_ : float
        The threshold used (resolved from ``"auto"``).
    coef_se_ : ndarray of shape (n_features,) or (n_features + 1,)
        Computed on first access, like ``cov_params_`` and ``inference_`` (see "Inference on first
        use" in Notes). Standard errors of ``coef_`` (then of ``intercept_``, last, with
        ``fit_intercept=True``):
        the sandwich of the returned fit's M-estimator at its residuals (see Notes). NaN where the
        returned fit shows no reliable subset (``recovered_`` False, ``auto``), for ``"lad"`` and
        ``"cmed"`` (no sandwich implemented), or when the curvature matrix is not positive definite.
    cov_params_ : ndarray of shape (p, p)
        The covariance matrix behind ``coef_se_``.
    inference_ : str
        ``"sandwich"``, ``"bootstrap"``, ``"mixture"`` (``refine="mixture"``), ``"mixture_hc3"``
        (``refine="mixture"`` on rows with heavy-tailed leverage: the design's standardised Mahalanobis
        kurtosis, :func:`~algos.hetero_regression._mixture.design_kurtosis`, above 2; the HC3 form of
        the sandwich), ``"adaptive"`` (``refine="adaptive"``: the sandwich of the estimated score;
        ``"adaptive_outer"`` when its curvature is not positive definite and the outer-product form
        is used) or ``"none"`` (NaN standard errors). Known only once the covariance is computed:
        reading it computes it.
    bse, tvalues, pvalues : ndarray of shape (p,) or pandas.Series
        statsmodels' names: standard errors, Wald statistics ``b / se`` and two-sided normal
        p-values of ``[coef_, intercept_]`` (properties, computed on first use; a Series indexed by
        ``feature_names_in_`` and ``"const"`` when ``fit`` saw a DataFrame). They raise
        ``ValueError`` for ``method="lad"`` and ``"cmed"``, which give no standard errors.
    refined_ : bool
        Whether the scale-mixture refinement ran (``refine="mixture"`` on a recovered robust fit).
    noise_scales_, noise_weights_ : ndarray of shape (n_scales,)
        ``refine="mixture"``: the estimated noise law (grid scales in the units of ``y`` and their
        weights, averaged over the two folds). Only when ``refined_``.
    optimality_residual_ : float
        The certificate of the returned fit: for ``"huber"`` the relative gradient norm
        :math:`\|\nabla L\| / (\delta \|X\|_F)` of the Huber objective at the solution; for a window
        fit the window condition :math:`\|X_S^\top r_S\| / (\delta \|X\|_F)` on its own window
        :math:`S = \{|r_i| \le \delta\}` (zero at a fixed point); 0 for the closed-form fits
        (OLS, LAD's LP, the coordinate median), which are exact solutions.
    converged_ : bool
        Whether the returned fit is a fixed point of its estimating equation within tolerance:
        Huber reached ``tol`` (1e-10, relative gradient) within ``max_iter``; a window fit has a
        window-condition residual (``optimality_residual_``) at most 1e-8, i.e. it is least squares on
        its own window; ``refine="mixture"``: the refinement moved less than 1e-4 standard errors
        before its cap; closed-form fits: True. A window fit that ran its whole schedule need not be
        a fixed point (measured: 6 of 12 fits at n = 2000, d = 5 were not): then ``converged_`` is
        False and ``schedule_completed_`` True, and no warning is raised (the window estimator is
        defined by its schedule, whose ``T``-th round was measured 0-14 % more accurate than the
        exact fixed point).
    schedule_completed_ : bool
        Whether the returned fit's algorithm ran to its end: Huber reached ``tol``; a window fit ran
        its schedule down to the width ``delta`` (what ``converged_`` meant for window fits in earlier
        versions); with ``refine="mixture"`` also the refinement stopped before its cap; closed-form
        fits: True. A ``ConvergenceWarning`` is raised exactly when it is False.
    fixed_point_ : bool
        The same as ``converged_`` (kept for compatibility).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string column names.

    Raises
    ------
    ValueError
        On NaN/inf, ``n_samples <= n_features`` (+1 with an intercept), a rank-deficient ``X``, or a
        bad parameter value. TypeError on a parameter of the wrong type or sparse ``X``.

    Warns
    -----
    NoRecoveryWarning
        When the returned fit shows no reliable subset (``recovered_`` is False); the intervals are
        then NaN.
    sklearn.exceptions.ConvergenceWarning
        When the returned fit's algorithm did not run to its end (``schedule_completed_`` False): the
        message names ``max_iter`` (Huber) or the window round cap.

    See Also
    --------
    HuberSoSRegressor, IterativeWindowRegressor, LADRegressor, CoordinateMedianRegressor

    Notes
    -----
    Cost of ``auto``: one Huber fit (5-50 IRLS iterations, capped in the failure regime), 20
    IRLS-for-L1 steps, and two window refinements of :math:`\approx \log_2(\operatorname{median}|r|
    / \delta) + 5` least-squares fits on shrinking row subsets; measured at 1.5-4x the time of
    :class:`HuberSoSRegressor` alone. Where no estimator recovers :math:`\beta^*` (e.g. m = 0.5
    sqrt(nd) reliable sources with noise 1e4 elsewhere), ``auto`` returns the better of OLS and the
    robust fit by the variance rule and warns.

    **Inference.** ``conf_int(alpha)`` gives Wald intervals :math:`\hat b_j \pm z_{1-\alpha/2}
    \mathrm{se}_j` and ``summary()`` a table in the style of statsmodels. For Huber and OLS fits
    the standard errors are the sandwich :math:`A^{-1} B A^{-1}` (Huber 1967; White 1980) of the
    fit's M-estimator on all rows, :math:`A = \sum_i \psi'(r_i) x_i x_i^\top`, :math:`B = \sum_i
    \psi(r_i)^2 x_i x_i^\top`, times :math:`n/(n-p)` (HC1, MacKinnon & White 1985); HC3 for OLS.
    It is the matrix form of the variance factor the rule above compares (details in
    :mod:`algos.hetero_regression._inference`). For a window fit the sandwich's curvature holds
    the edge term :math:`-2\delta f(\delta)`, a density that a few hundred reliable rows estimate
    with a 20-50 % error (measured: standard errors with a heavy right tail, some too small), so
    ``inference="auto"`` replaces it by a pairs bootstrap of the window refinement (each replicate
    reruns the shrinking window from :math:`8\delta` on resampled rows, so the variability of the
    window's row subset is included). The choice of this bootstrap is the project's own
    (reconstructed), checked by simulation: coverage of nominal 95 % intervals 0.92-0.985 per
    coordinate (mean 0.944-0.965) over 200 replications at n = 2000, d in {5, 20}, m = 2 sqrt(nd)
    (``benchmarks/bench_hetero_regression.py``, section ``inference``). The choice of the *method*
    by the rule is not accounted for: the intervals are those of the returned fit as if its method
    had been fixed in advance.

    **Inference on first use.** ``fit`` computes the point estimate only; the covariance is computed
    on the first access to ``cov_params_``, ``coef_se_``, ``inference_``, ``bse``, ``tvalues``,
    ``pvalues``, ``conf_int()`` or ``summary()``, and cached (so cross-validation and grid search,
    which never ask, do not pay for the window bootstrap, otherwise most of the cost: measured 0.5
    of 0.55 CPU-s at n = 20,000, d = 5; docs, "Inference on first use"). The results are the same
    numbers as an eager computation: the bootstrap's random generator is copied at ``fit``. Until
    then the estimator keeps *references* to the validated ``X`` and ``y`` (no copy: the caller's
    own arrays when they are C-contiguous float64 without missing values, otherwise the float64 copy
    that ``fit`` makes anyway, e.g. from a DataFrame; ``8 n (d + 1)`` bytes), the scaled
    coefficients, a copy of the random generator and CRC-32 checksums of the data; the first
    inference call drops them. Do not modify ``X`` or ``y`` in place between ``fit`` and the first
    inference call: the checksums detect it and the call raises ``RuntimeError``. A pickle of a
    fitted estimator holds the data until then (ask for ``coef_se_`` before pickling to store only
    the covariance). Fits without a covariance to compute (NaN standard errors, ``refine="mixture"``
    whose sandwich is a by-product of the refinement, ``method="lad"`` / ``"cmed"``) keep nothing.

    Examples
    --------
    >>> import numpy as np
    >>> from algos.hetero_regression import SubsetOfSignalsRegressor, make_subset_of_signals
    >>> data = make_subset_of_signals(4000, 3, 400, noisy_sigma=1e4, random_state=0)
    >>> est = SubsetOfSignalsRegressor().fit(data.X, data.y)
    >>> est.method_, bool(np.linalg.norm(est.coef_ - data.beta) < 0.3), est.recovered_
    ('window', True, True)
    """

    _parameter_constraints: dict = {
        "delta": [Interval(Real, 0, math.inf, closed="neither"), StrOptions({"auto"})],  # finite
        "fit_intercept": ["boolean"],
        "inference": [OrderedStrOptions(("auto", "sandwich"))],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "method": [OrderedStrOptions(("auto", "huber", "window", "lad", "cmed", "ols"))],
        "n_bootstrap": [Interval(Integral, 10, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "refine": [OrderedStrOptions(("none", "mixture", "adaptive"))],
    }

    def __init__(self, *, method="auto", delta=1.0, fit_intercept=False, max_iter=500, inference="auto",
                 n_bootstrap=200, random_state=0, refine="none"):
        self.method = method
        self.delta = delta
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.inference = inference
        self.n_bootstrap = n_bootstrap
        self.random_state = random_state
        self.refine = refine

    def fit(self, X, y):
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Or a row-chunked ``dask.array.Array`` (with ``y`` one too), for ``method="huber"`` only:
            the fit of :meth:`HuberSoSRegressor.fit` on Dask arrays, by passes over the blocks.
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : SubsetOfSignalsRegressor
        """
        validate_params(self)
        method, fit_intercept, max_iter = self.method, bool(self.fit_intercept), int(self.max_iter)
        inference, n_bootstrap, refine = self.inference, int(self.n_bootstrap), self.refine
        rng = check_random_state(self.random_state)
        if is_dask_array(X) or is_dask_array(y):
            return self._fit_dask(X, y, method, fit_intercept, max_iter)
        _check_real(X, "X")
        _check_real(y, "y")
        X, y = validate_data(self, X, y, accept_sparse=False, dtype=np.float64, order="C", y_numeric=True)
        n, d = X.shape
        p = d + 1 if fit_intercept else d
        _check_shape(n, p, type(self).__name__ + (" (with the intercept column)" if fit_intercept else ""))
        Xs, ys, Xa, col_scale, y_scale = _rescaled(X, y, fit_intercept)
        delta = suggest_delta(Xa, ys) if isinstance(self.delta, str) else float(self.delta) * y_scale
        self.delta_ = delta / y_scale

        cands, iters, widths, huber = _candidates(method, Xs, ys, Xa, delta, fit_intercept, max_iter)
        info = _candidate_info(cands, ys, Xa, delta, n, p)
        if method == "auto":
            chosen = _choose_auto(cands, info, ys, Xa, delta, p)
            self.candidates_ = info
        else:
            chosen = "window" if method == "window" else method
        self.method_ = chosen
        self.n_iter_ = int(max(iters.get(chosen, 1), 1))
        b = cands[chosen]
        kind = self._set_diagnostics(chosen, b, Xa, ys, delta, p, huber, widths)
        self.refined_ = False
        cov = None
        if refine == "mixture" and kind in ("huber", "window") and self.recovered_:
            b, cov = self._refine_mixture(Xa, ys, b, delta, p, y_scale)
        elif refine == "adaptive" and kind in ("huber", "window") and self.recovered_:
            if design_kurtosis(Xa) > HEAVY_LEVERAGE:
                # data-dependent: heavy-tailed leverage, where the adaptive sandwich under-covers
                # (measured 0.88); the mixture refinement with its HC3 sandwich is used instead
                b, cov = self._refine_mixture(Xa, ys, b, delta, p, y_scale)
            else:
                b, cov = self._refine_adaptive(Xa, ys, b, delta, p)
        if kind is None or (method == "auto" and not self.recovered_) or self.refined_:
            # nothing to compute later: NaN (no inference), or the refinement's sandwich
            cov = np.full((p, p), np.nan) if cov is None else cov
            label = self._refined_label if self.refined_ and np.all(np.isfinite(cov)) else "none"
            self._set_cov(_scale_cov(cov, col_scale, y_scale, fit_intercept), label)
        else:
            self._defer_cov(_DeferredCov(X, y, fit_intercept, b, delta, kind, inference, n_bootstrap, rng))
        b = b / y_scale
        if fit_intercept:
            self.coef_ = np.ascontiguousarray(b[:d] * col_scale)
            self.intercept_ = float(b[d])
        else:
            self.coef_ = np.ascontiguousarray(b * col_scale)
            self.intercept_ = 0.0
        self._warn(method, chosen, p, max_iter)
        return self

    def _fit_dask(self, X, y, method, fit_intercept, max_iter):
        """``method="huber"`` on row-chunked Dask arrays: :meth:`HuberSoSRegressor.fit` by passes over the blocks."""
        if method != "huber":
            raise ValueError(f"SubsetOfSignalsRegressor(method={method!r}) needs X in memory; of its methods only "
                             "method='huber' runs out of core, on dask arrays (one pass per iteration over the "
                             "blocks). Set method='huber', or fit an in-memory sample (e.g. X[:n].compute()).")
        if isinstance(self.delta, str):
            raise ValueError(f"SubsetOfSignalsRegressor on a dask array needs a numeric 'delta'; got {self.delta!r}. "
                             "Fit an in-memory sample first and pass its delta_.")
        import dask

        huber = HuberSoSRegressor(delta=self.delta, fit_intercept=fit_intercept, max_iter=max_iter).fit(X, y)
        delta = huber.delta_
        r = y - X @ huber.coef_ - huber.intercept_
        a = abs(r)
        n_in, ring = dask.compute((a <= delta).sum(), ((a > 3.0 * delta) & (a <= 5.0 * delta)).sum())
        p = huber.coef_.shape[0] + (1 if fit_intercept else 0)
        self.n_features_in_ = huber.n_features_in_
        self.delta_ = delta
        self.method_ = "huber"
        self.n_iter_ = max(int(huber.n_iter_), 1)
        self.n_inliers_ = int(n_in)
        self.excess_inliers_ = float(n_in - p - 0.5 * ring)
        self.recovered_ = _recovered(int(n_in), 0.5 * int(ring), p)
        self.fixed_point_ = self.converged_ = self.schedule_completed_ = bool(huber.converged_)
        self.optimality_residual_ = float(huber.gradient_norm_)
        self.refined_ = False
        self._set_cov(huber.cov_params_, "sandwich" if np.all(np.isfinite(huber.cov_params_)) else "none")
        self.coef_, self.intercept_ = huber.coef_, huber.intercept_
        self._warn(method, "huber", p, max_iter)
        return self

    def _set_diagnostics(self, chosen, b, Xa, ys, delta, p, huber, widths):
        """Inlier counts and convergence diagnostics of the chosen fit; returns its kind for inference."""
        n_in, bg = _counts(ys - Xa @ b, delta)
        self.n_inliers_ = n_in
        self.excess_inliers_ = float(n_in - p - bg)
        self.recovered_ = _recovered(n_in, bg, p)
        if chosen == "huber":
            self.fixed_point_ = self.converged_ = self.schedule_completed_ = bool(huber.converged_)
            self.optimality_residual_ = float(huber.gradient_norm_)
            return "huber"
        if chosen.startswith("window"):
            self.optimality_residual_ = window_residual(Xa, ys, b, delta)
            w_path = widths[chosen]
            self.schedule_completed_ = bool(len(w_path) and w_path[-1] == delta)  # the schedule reached delta
            self.fixed_point_ = self.converged_ = bool(self.optimality_residual_ <= WINDOW_TOL)
            return "window"
        # closed-form solutions
        self.fixed_point_ = self.converged_ = self.schedule_completed_ = True
        self.optimality_residual_ = 0.0
        return "ols" if chosen == "ols" else None

    def _refine_adaptive(self, Xa, ys, b, delta, p):
        """``refine='adaptive'``: cross-fitted adaptive Newton steps from ``b``; returns them and their covariance."""
        b, cov, info = adaptive_refine(Xa, ys, b, delta)
        self.refined_ = True
        self._refined_label = "adaptive" if info["curvature"] == "sandwich" else "adaptive_outer"
        self.n_iter_ += int(info["n_steps"])
        self.optimality_residual_ = info["residual"]
        n_in, bg = _counts(ys - Xa @ b, delta)
        self.n_inliers_ = n_in
        self.excess_inliers_ = float(n_in - p - bg)
        return b, cov

    def _refine_mixture(self, Xa, ys, b, delta, p, y_scale):
        """``refine='mixture'``: the scale-mixture refinement of ``b``; returns it and its covariance."""
        b, cov, mix = mixture_refine(Xa, ys, b, delta)
        self.refined_ = True
        self._refined_label = "mixture_hc3" if mix["covariance"] == "hc3" else "mixture"
        self.noise_scales_ = mix["scales"] / y_scale
        self.noise_weights_ = mix["weights"]
        self.n_iter_ += int(mix["n_iter"])
        self.optimality_residual_ = mix["residual"]
        self.schedule_completed_ = bool(self.schedule_completed_ and mix["converged"])
        self.fixed_point_ = self.converged_ = bool(mix["converged"])
        n_in, bg = _counts(ys - Xa @ b, delta)
        self.n_inliers_ = n_in
        self.excess_inliers_ = float(n_in - p - bg)
        return b, cov

    @property
    def inference_(self):
        """str: how ``cov_params_`` was (or will be, on first access) computed; see the class docstring."""
        if "_inference_label" not in self.__dict__:
            self._ensure_cov()
        return self._inference_label

    def _no_inference_reason(self):
        method = getattr(self, "method_", None)
        if method in ("lad", "cmed"):
            name = {"lad": "LAD", "cmed": "the coordinate median"}[method]
            return (f"SubsetOfSignalsRegressor(method={method!r}) gives no standard errors (no sandwich is "
                    f"implemented for {name}), so it has no conf_int, bse, tvalues, pvalues or summary; fit with "
                    "method='auto', 'huber', 'window' or 'ols' for inference.")
        return ""

    def _warn(self, method, chosen, p, max_iter):
        """``NoRecoveryWarning`` and ``ConvergenceWarning`` of a finished fit."""
        n_in, bg = self.n_inliers_, self.n_inliers_ - p - self.excess_inliers_
        if not self.recovered_ and method == "auto":
            warnings.warn(
                f"SubsetOfSignalsRegressor found no reliable subset: the returned fit ({chosen}) has "
                f"{n_in} residuals within delta={self.delta_:g}, an excess of {self.excess_inliers_:.1f} "
                f"over the {p} a fit can interpolate and the background density ({bg:.1f}), below "
                f"{Z_RECOVERY:g} sqrt(background + p) = {Z_RECOVERY * math.sqrt(bg + p):.1f}. No estimator "
                "of this module recovers beta here (too few reliable sources, below ~0.5 sqrt(nd), or "
                "delta does not match their noise scale: try delta='auto').",
                NoRecoveryWarning,
                stacklevel=3,
            )
        if not self.schedule_completed_:
            if self.refined_ and not self.fixed_point_:
                why = ("the scale-mixture refinement (refine='mixture') stopped at its cap of 500 coefficient "
                       "updates before moving less than 1e-4 standard errors; the coefficients are its last "
                       "iterate")
            elif chosen == "huber":
                why = (f"the Huber fit stopped at relative gradient {self.optimality_residual_:.2e} > tol=1e-10 "
                       f"after {self.n_iter_} iterations; increase max_iter (now {max_iter})")
            else:
                why = (f"the window refinement ({chosen}) was stopped by its cap of {MAX_ROUNDS} rounds before "
                       f"its width reached delta={self.delta_:g} (window-condition residual "
                       f"{self.optimality_residual_:.2e}); check delta, or use method='huber' (a convex fit "
                       "certified by its gradient)")
            warnings.warn(f"SubsetOfSignalsRegressor did not converge: {why}.", ConvergenceWarning, stacklevel=3)

    def _summary_info(self):
        n_sig = self.n_inliers_
        return [("Method", self.method_), ("Sources treated as signals", f"{n_sig} (|r| <= delta)"),
                ("delta", f"{self.delta_:g}"), ("Reliable subset found", str(self.recovered_)),
                ("Converged (fixed point)", str(self.converged_)),
                ("Schedule completed", str(self.schedule_completed_)),
                ("Optimality residual", f"{self.optimality_residual_:.2e}"),
                ("Covariance", {"bootstrap": f"pairs bootstrap, {self.n_bootstrap} replicates",
                                "mixture": "sandwich of the scale-mixture likelihood (cross-fitted law)",
                                "mixture_hc3": "HC3 sandwich of the scale-mixture likelihood (heavy leverage)",
                                "adaptive": "sandwich of the cross-fitted estimated score",
                                "adaptive_outer": "outer product of the cross-fitted estimated score",
                                "none": "none"}.get(self.inference_, "HC3 (OLS)" if self.method_ == "ols"
                                                    else "sandwich, HC1 factor n/(n-p)"))]


def _fingerprint(X, y):
    """CRC-32 checksums of the data (about 3 ms per MB): inference refuses data modified in place after ``fit``."""
    return zlib.crc32(np.ascontiguousarray(X)), zlib.crc32(np.ascontiguousarray(y))


class _DeferredCov:
    """What ``fit`` keeps so that the covariance can be computed on first use (picklable).

    It holds references to the validated ``X`` and ``y`` (no copy: the caller's own arrays when they
    are C-contiguous float64, otherwise the converted arrays ``fit`` made), the scaled coefficients
    and ``delta``, the options, a copy of the bootstrap's random generator taken at ``fit`` (so the
    intervals do not depend on when they are first asked for) and CRC-32 checksums of the data.
    """

    def __init__(self, X, y, fit_intercept, b, delta, kind, inference, n_bootstrap, rng):
        self.X, self.y, self.fit_intercept = X, y, fit_intercept
        self.b, self.delta, self.kind, self.inference, self.n_bootstrap = b, delta, kind, inference, n_bootstrap
        self.rng = copy.deepcopy(rng)
        self.digest = _fingerprint(X, y)

    def __call__(self):
        if _fingerprint(self.X, self.y) != self.digest:
            raise RuntimeError("SubsetOfSignalsRegressor: the X or y passed to fit was modified in place after fit, "
                               "and the standard errors are computed from it on first use (conf_int, coef_se_, "
                               "bse, summary, ...). Refit on the current data, or ask for the intervals before "
                               "modifying the arrays.")
        _, ys, Xa, col_scale, y_scale = _rescaled(self.X, self.y, self.fit_intercept)
        n, p = Xa.shape
        b, delta = self.b, self.delta
        if self.kind == "window" and self.inference == "auto" and n * p * p <= BOOTSTRAP_BUDGET:
            cov, _ = window_bootstrap_cov(Xa, ys, b, delta, self.n_bootstrap, copy.deepcopy(self.rng))
            label = "bootstrap"
        else:
            cov = sandwich_cov(Xa, ys - Xa @ b, self.kind, delta)
            label = "sandwich"
        if not np.all(np.isfinite(cov)):
            label = "none"
        return _scale_cov(cov, col_scale, y_scale, self.fit_intercept), label


def _rescaled(X, y, fit_intercept):
    """Power-of-two rescaling (exact) so that squares cannot overflow; undone at the end of ``fit``.

    Returns ``(Xs, ys, Xa, col_scale, y_scale)``; ``Xa`` is ``Xs`` with the intercept column if asked.
    """
    col_scale = _pow2_scale(np.max(np.abs(X), axis=0))
    Xs = X * col_scale if np.any(col_scale != 1.0) else X
    y_scale = float(_pow2_scale(np.array([np.max(np.abs(y))]))[0])
    ys = y * y_scale if y_scale != 1.0 else y
    Xa = np.hstack([Xs, np.ones((len(X), 1))]) if fit_intercept else Xs
    return Xs, ys, Xa, col_scale, y_scale


def _candidates(method, Xs, ys, Xa, delta, fit_intercept, max_iter):
    """The candidate fits ``method`` asks for: ``(coefficients, iterations, window widths, Huber fit)`` by name."""
    cands, iters, widths, h = {}, {}, {}, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvexRegimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        if method in ("auto", "huber", "window"):
            h = HuberSoSRegressor(delta=delta, fit_intercept=fit_intercept, max_iter=max_iter).fit(Xs, ys)
            b_h = np.r_[h.coef_, h.intercept_] if fit_intercept else h.coef_.copy()
            cands["huber"], iters["huber"] = b_h, h.n_iter_
        if method in ("auto", "window"):
            cands["window"], k, widths["window"] = _window_refine(Xa, ys, b_h, delta, MAX_ROUNDS)
            iters["window"] = h.n_iter_ + k
        if method == "auto":
            b_ols = _lstsq(Xa, ys)
            start = _init_lad(Xa, ys, np.empty(0), b_ols)
            cands["window_lad"], k, widths["window_lad"] = _window_refine(Xa, ys, start, delta, MAX_ROUNDS)
            iters["window_lad"] = LAD_STEPS + k
            cands["ols"] = b_ols
        if method == "ols":
            cands["ols"] = _lstsq(Xa, ys)
        if method == "lad":
            from ._baselines import _lad_lp

            cands["lad"] = _lad_lp(Xa, ys)[0]
        if method == "cmed":
            from ._median import CoordinateMedianRegressor

            c = CoordinateMedianRegressor(fit_intercept=fit_intercept).fit(Xs, ys)
            cands["cmed"] = np.r_[c.coef_, c.intercept_] if fit_intercept else c.coef_
            iters["cmed"] = c.n_iter_
    return cands, iters, widths, h


def _candidate_info(cands, ys, Xa, delta, n, p):
    """Per candidate: its noise-variance estimate, inlier count and background density."""
    info = {}
    for name, b in cands.items():
        r = ys - Xa @ b
        n_in, bg = _counts(r, delta)
        if name == "ols":
            V = float(np.mean(r * r)) * n / max(n - p, 1)
        elif name.startswith("window"):
            V = _variance_window(r, delta)
        else:
            V = _variance_huber(r, delta, n_in)
        info[name] = {"variance": V, "n_inliers": n_in, "background": bg}
    return info


def _choose_auto(cands, info, ys, Xa, delta, p):
    """``method='auto'``: the robust candidate of least variance, or OLS when it does at least as well."""
    robust = min(("huber", "window", "window_lad"), key=lambda k: info[k]["variance"])
    n_in, bg = info[robust]["n_inliers"], info[robust]["background"]
    if _recovered(n_in, bg, p):  # a reliable subset is visible: point estimates decide
        v_robust = info[robust]["variance"]
    else:  # none visible: the robust fit must beat OLS with a pessimistic inlier count
        v_robust = _variance_huber(ys - Xa @ cands[robust], delta, n_in - p - Z_PESSIMISTIC * math.sqrt(n_in))
    return "ols" if info["ols"]["variance"] <= v_robust else robust
