r"""M1: fixed-threshold Huber regression for the subset-of-signals model (IRLS + a fused numba pass).

The estimator solves the convex program

.. math:: \hat\beta \in \arg\min_b L(b), \qquad L(b) = \sum_{i=1}^n s_i\, H_\delta(y_i - x_i^\top b),
          \qquad H_\delta(r) = \begin{cases} r^2/2 & |r| \le \delta \\ \delta |r| - \delta^2/2 & |r| > \delta
          \end{cases}

with a *fixed* threshold :math:`\delta` (no joint scale estimate, unlike
:class:`sklearn.linear_model.HuberRegressor`, whose scale is inflated by the noisy sources).
"""

from __future__ import annotations

import functools
import math
import warnings
from numbers import Integral, Real
from types import SimpleNamespace

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, validate_data

from accel.backend import resolve

from .._validation import (
    OrderedStrOptions,
    validate_params,
)
from ._baselines import _check_real, _LinearPredictMixin
from ._chunked import huber_fit_chunks
from ._dask import DaskPass, check_dask_xy, is_dask_array
from ._data import suggest_delta
from ._huber_solvers import (
    _init_cmed,
    _init_lad,
    _irls,
    _irls_torch,
    _lbfgs,
    _spd_solve,
    _weighted_gram,
)
from ._inference import _InferenceMixin, _scale_cov, sandwich_cov
from ._irls import RANK_RTOL, irls_passes  # noqa: F401  (RANK_RTOL: documented here)
from ._irls import check_full_rank as _check_full_rank

__all__ = ["HuberSoSRegressor", "ConvexRegimeWarning"]

#: Relative gradient tolerance of the intermediate stages of ``continuation=True``.
CONTINUATION_STAGE_TOL = 1e-4
#: Default ``regime_cap``: iterations after which a fit still without an accepted Newton step and
#: with fewer than ``2 sqrt(n p)`` inliers is stopped (failure regime). Fits outside that regime take
#: 5-20 iterations; in it, plain MM steps took up to ~365 iterations (about 35x the usual time) to
#: reach a minimiser at an error of the order of the noisy sources' scale.
REGIME_CAP = 50
#: Columns of X (and y) whose largest magnitude lies outside [2**-SCALE_EXP, 2**SCALE_EXP] are
#: rescaled by a power of two (exact in floating point) before the fit, so that Gram matrices and
#: squared residuals cannot overflow or underflow; the coefficients are mapped back.
SCALE_EXP = 60

_INITS = ("ols", "zeros", "lad", "cmed")
_SOLVERS = ("irls", "mm", "lbfgs")


class ConvexRegimeWarning(UserWarning):
    """Warns that a fit has fewer than :math:`2\\sqrt{nd}` inliers.

    Below :math:`m \\approx 1.5\\text{--}2\\sqrt{nd}` reliable sources, every convex M-estimator (Huber,
    LAD) can run off to an error of the order of the noisy sources' scale (Compton & Schramm 2026,
    Thm 4.7); the fit is not wrong as an optimiser output, but it may be far from the truth.
    """


# --------------------------------------------------------------------------------------------------
# linear algebra helpers
# --------------------------------------------------------------------------------------------------
def _pow2_scale(absmax):
    """Per-entry power-of-two factors bringing ``absmax`` into [2**-SCALE_EXP, 2**SCALE_EXP] (1 elsewhere)."""
    absmax = np.asarray(absmax, dtype=np.float64)
    out = np.ones_like(absmax)
    bad = (absmax > 2.0**SCALE_EXP) | ((absmax < 2.0**-SCALE_EXP) & (absmax > 0))
    if np.any(bad):
        out[bad] = np.ldexp(1.0, -np.frexp(absmax[bad])[1])
    return out


# --------------------------------------------------------------------------------------------------
# the estimator
# --------------------------------------------------------------------------------------------------
class HuberSoSRegressor(_InferenceMixin, _LinearPredictMixin, RegressorMixin, BaseEstimator):
    r"""Huber regression with a fixed threshold, for heteroskedastic noise with few reliable sources.

    Minimises the Huber objective with a **fixed** threshold :math:`\delta` (the noise scale of the
    reliable sources),

    .. math:: L(b) = \sum_{i=1}^n s_i\, H_\delta(y_i - x_i^\top b), \qquad
              H_\delta(r) = \begin{cases} r^2/2, & |r| \le \delta,\\
              \delta|r| - \delta^2/2, & |r| > \delta, \end{cases}

    by iteratively reweighted least squares (IRLS). In the *subset-of-signals* model, :math:`y_i =
    x_i^\top\beta^* + \sigma_i\xi_i` with :math:`\sigma_i \le 1` on an unknown set of :math:`m` of the
    :math:`n` rows and arbitrary (possibly huge) :math:`\sigma_i` elsewhere, this estimator attains

    .. math:: \|\hat\beta - \beta^*\|_2 = O\!\left(\sqrt{nd}/m\right)

    for Gaussian designs once :math:`m \gtrsim \sqrt{nd}`: this is the oblivious-noise Huber result of
    d'Orsi, Novikov & Steurer (2021), :math:`O(\sqrt{d/(\alpha^2 n)})` with :math:`\alpha = m/n`.
    Below :math:`m \approx 2\sqrt{nd}` convex estimators can fail (Compton & Schramm 2026, Thm 4.7);
    the fit then warns with :class:`ConvexRegimeWarning`.

    Parameters
    ----------
    delta : float or "auto", default=1.0
        Huber threshold :math:`\delta > 0`, in the units of ``y``: the noise scale of the reliable
        sources. ``delta=1`` assumes their noise standard deviation is about 1; rescale for real data.
        ``"auto"``: :func:`suggest_delta` on the data (a heuristic; the resolved value is ``delta_``).
    fit_intercept : bool, default=False
        Add a column of ones to ``X`` and estimate its coefficient like any other (``X`` is not
        centred). A constant column of ``X`` then duplicates the intercept and is rejected.
    init : {"ols", "zeros", "lad", "cmed"}, default="ols"
        Starting point: least squares; zero; a rough least-absolute-deviation fit (20 IRLS-for-L1 steps
        from OLS); or a coordinate-median start (10 rounds of the d'Orsi-Novikov-Steurer coordinate
        median on the whitened design). The problem is convex, so the start changes the number of
        iterations, not the minimiser (up to ``tol``; the minimiser is unique when the inliers span
        :math:`\mathbb{R}^d`).
    max_iter : int, default=500
        Maximum number of iterations (over all stages with ``continuation=True``). At least one
        iteration is always run, even from a start that already meets ``tol``.
    tol : float, default=1e-10
        Stop when the relative gradient norm :math:`\|X^\top (s\odot\psi_\delta(r))\|_2 /
        (\delta\, \|\operatorname{diag}(\sqrt{s}) X\|_F)` falls below ``tol``. The objective can reach
        :math:`10^{10}` when noisy sources have huge variance, so the fit never stops on a change of
        the objective.
    continuation : bool, default=False
        Solve a sequence of problems with :math:`\delta_k = \max(\delta, \delta_0 2^{-k})`,
        :math:`\delta_0 = \operatorname{median}|r^{(0)}|` (residuals at the start), each warm-started
        from the previous one; intermediate stages stop at a relative gradient of ``1e-4``. Useful from
        far starting points; the final problem (and minimiser) is the same.
    solver : {"irls", "mm", "lbfgs"}, default="irls"
        ``"irls"``: IRLS with the BLAS weighted Gram matrix and the fused numba pass, accelerated by
        semismooth Newton steps (see Notes): every iteration decreases :math:`L`. ``"mm"``: plain IRLS,
        every step a majorise-minimise step (what the torch core runs; slower: linear convergence).
        ``"lbfgs"``: :func:`scipy.optimize.minimize` (L-BFGS-B) with the analytic gradient; it rarely
        reaches ``tol=1e-10`` and then warns with a :class:`~sklearn.exceptions.ConvergenceWarning`.
    backend : {"numpy", "torch", "auto", "numba"}, default="numpy"
        ``"numpy"`` (or ``"numba"``): the CPU path. ``"torch"`` runs plain IRLS (the ``"mm"`` iterations,
        also for ``solver="irls"``) on the torch core (:func:`accel.hetero_regression.huber_irls_batched`;
        CUDA if available, else CPU); it needs ``solver="irls"`` or ``"mm"``. ``"auto"`` picks torch when
        ``X`` or ``y`` is a torch tensor (and ``solver`` is not ``"lbfgs"``) and the CPU path otherwise;
        see the "Backends: one rule" section of the scaling page.
    regime_cap : int >= 1 or None, default=50
        In the failure regime -- fewer than :math:`2\sqrt{np}` inliers and no accepted Newton step
        after ``regime_cap`` iterations -- stop there (``capped_`` is True) with a
        :class:`ConvexRegimeWarning` instead of crawling for hundreds of MM iterations toward a
        minimiser that is far from :math:`\beta^*` anyway. ``None``: run to ``tol``/``max_iter``.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Estimated coefficients (without the intercept).
    intercept_ : float
        Estimated intercept; ``0.0`` when ``fit_intercept=False``.
    n_iter_ : int
        Iterations run (all stages).
    backend_ : {"numpy", "torch"}
        The core that ran (``backend`` resolved).
    delta_ : float
        The threshold used (``delta``, or its value resolved from ``"auto"``).
    capped_ : bool
        Whether the fit was stopped by ``regime_cap`` (then ``converged_`` is False).
    n_inliers_ : int
        Number of samples with :math:`|r_i| \le \delta` (and positive weight) at the solution.
    objective_ : float
        :math:`L(\hat\beta)` for the final ``delta``.
    objective_history_ : ndarray
        :math:`L` at the start and after every iteration of the final stage (non-increasing up to
        ``MONOTONE_RTOL * |L|`` round-off).
    delta_path_ : ndarray
        The thresholds of the stages (just ``[delta]`` without continuation).
    converged_ : bool
        Whether the relative gradient norm fell below ``tol``.
    gradient_norm_ : float
        The final relative gradient norm.
    optimality_residual_ : float
        The certificate of the fit: the relative gradient norm :math:`\|\nabla L(\hat\beta)\| /
        (\delta \|\operatorname{diag}(\sqrt{s}) X\|_F)` at the returned solution (as
        ``gradient_norm_``); :math:`L` is convex, so a small value certifies a global minimiser.
    coef_se_ : ndarray of shape (n_features,) or (n_features + 1,)
        Sandwich standard errors of ``coef_`` (then of ``intercept_``, last): :math:`A^{-1} B
        A^{-1}` with :math:`A = \sum_i s_i 1\{|r_i| \le \delta\} x_i x_i^\top`, :math:`B = \sum_i
        s_i^2 \min(r_i^2, \delta^2) x_i x_i^\top` (Huber 1967; White 1980), times :math:`n/(n-p)`
        (HC1, MacKinnon & White 1985). NaN when fewer than ``p`` rows are inliers.
    cov_params_ : ndarray of shape (p, p)
        The covariance matrix behind ``coef_se_``; ``conf_int(alpha)`` and ``summary()`` use it.
    n_backtracks_ : int
        Number of step halvings IRLS needed (an IRLS step raises :math:`L` only through round-off).
    n_newton_steps_ : int
        Number of accepted Newton steps (``solver="irls"``, final stage).
    n_extrapolations_ : int
        Number of step doublings after MM steps (``solver="irls"``, final stage).
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of str
        Names of the features seen during ``fit`` (only when ``X`` has string column names).

    Raises
    ------
    ValueError
        On NaN/inf, on ``n_samples <= n_features`` (``+1`` with ``fit_intercept=True``; counted over
        samples with positive weight), on an all-zero, constant (with an intercept) or linearly
        dependent column (the message names it), on a bad parameter value.
    TypeError
        On sparse ``X`` (densify it with ``X.toarray()`` first) or a parameter of the wrong type.

    Columns of ``X`` (and ``y``) with entries beyond :math:`2^{\pm 60}` are rescaled internally by
    powers of two (exact), so ``X * 1e200`` gives the coefficients of ``X`` divided by 1e200.

    Warns
    -----
    ConvexRegimeWarning
        If ``n_inliers_ < 2 sqrt(n p)`` (``p`` coefficients including the intercept), or when
        ``regime_cap`` stops the fit.
    sklearn.exceptions.ConvergenceWarning
        If ``tol`` is not reached within ``max_iter`` iterations.

    See Also
    --------
    sklearn.linear_model.HuberRegressor : Huber with a jointly estimated scale (a baseline; its scale
        is inflated by the noisy sources).
    sklearn.linear_model.QuantileRegressor : LAD (``quantile=0.5, alpha=0``).

    Notes
    -----
    **Algorithm.** IRLS is majorise-minimise: at :math:`b^t` the quadratic with weights
    :math:`w_i = s_i\min(1, \delta/|r_i|)` majorises :math:`L`, so

    .. math:: b^{t+1} = b^t + (X^\top W X + \lambda I)^{-1} X^\top (s \odot \psi_\delta(r^t)),
              \qquad \lambda = 10^{-12}\operatorname{tr}(X^\top W X)/d,

    gives :math:`L(b^{t+1}) \le L(b^t)` (a larger curvature still majorises). A step that raises
    :math:`L` beyond round-off is halved (counted in ``n_backtracks_``). This MM step converges only
    linearly (factor about the share of the curvature :math:`X^\top W X` that comes from outliers), so
    ``solver="irls"`` first tries, at every iteration, the semismooth Newton step
    :math:`-(X_I^\top S_I X_I)^{-1}\nabla L(b^t)` over the current inliers
    :math:`I = \{i: |r_i| \le \delta\}` (when :math:`|I| \ge 2d`) and keeps it only if it passes an
    Armijo sufficient-decrease test with step 1, 1/2 or 1/4; otherwise it takes the MM step and
    then doubles it (2, 4, ..., 64 times) while :math:`L` keeps decreasing. Far from the minimiser (few
    inliers, e.g. an OLS start under huge noise) the MM steps are too short by a steady factor, which
    the doubling recovers. Every accepted step decreases :math:`L`, and once the inlier set is right
    the Newton step lands on the minimiser, so the fit typically takes 5-20 iterations instead of
    25-70. An MM iteration costs one BLAS ``dsyrk``
    (:math:`nd^2/2` flops) and one fused numba pass over the rows (residuals, weights, objective,
    gradient: :math:`2nd` flops); a Newton iteration costs :math:`|I|d^2/2` flops plus one to three
    passes. Weights are clipped, :math:`\delta/\max(|r|, 10^{-300})`, so a zero residual never
    divides.

    **Sample weights** multiply each row's loss: an integer weight equals repeating the row. They
    are *not* inverse variances (with known variances, use weighted least squares instead).

    **Assumptions.** Fisher consistency needs noise symmetric about zero (for every estimator of this
    module). ``delta`` must match the reliable sources' noise scale. The intercept is an ordinary
    coefficient.

    References
    ----------
    .. [1] T. d'Orsi, G. Novikov, D. Steurer, "Consistent regression when oblivious outliers
       overwhelm", ICML 2021.
    .. [2] S. Compton, T. Schramm, "Algorithms for adaptive and heteroskedastic linear regression at
       the computational threshold", 2026.
    .. [3] S. Chaudhary, A. Bhaskara, "Linear regression with heteroskedastic errors", UAI 2026
       (the probable target paper; its algorithm is not reproduced here).

    Examples
    --------
    >>> import numpy as np
    >>> from algos.hetero_regression import HuberSoSRegressor
    >>> rng = np.random.default_rng(0)
    >>> n, d, m = 4000, 3, 1000
    >>> X = rng.standard_normal((n, d))
    >>> beta = np.array([1.0, -2.0, 0.5])
    >>> sigma = np.full(n, 1e3)
    >>> sigma[:m] = 1.0                       # only m reliable sources
    >>> y = X @ beta + sigma * rng.standard_normal(n)
    >>> est = HuberSoSRegressor(delta=1.0).fit(X, y)
    >>> bool(np.linalg.norm(est.coef_ - beta) < 0.2), est.converged_
    (True, True)
    """

    _parameter_constraints: dict = {
        "backend": [OrderedStrOptions(("auto", "numpy", "torch", "numba"))],
        "continuation": ["boolean"],
        "delta": [Interval(Real, 0, math.inf, closed="neither"), StrOptions({"auto"})],  # finite
        "fit_intercept": ["boolean"],
        "init": [OrderedStrOptions(("ols", "zeros", "lad", "cmed"))],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "regime_cap": [Interval(Integral, 1, None, closed="left"), None],
        "solver": [OrderedStrOptions(("irls", "mm", "lbfgs"))],
        "tol": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, *, delta=1.0, fit_intercept=False, init="ols", max_iter=500, tol=1e-10,
                 continuation=False, solver="irls", backend="numpy", regime_cap=REGIME_CAP):
        self.regime_cap = regime_cap
        self.delta = delta
        self.fit_intercept = fit_intercept
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.continuation = continuation
        self.solver = solver
        self.backend = backend

    def _check_params(self):
        """:func:`validate_params` (the rules live in ``_parameter_constraints``), then the values as plain
        Python numbers."""
        validate_params(self)
        return {
            "delta": self.delta if isinstance(self.delta, str) else float(self.delta),
            "regime_cap": None if self.regime_cap is None else int(self.regime_cap),
            "fit_intercept": bool(self.fit_intercept),
            "init": self.init,
            "max_iter": int(self.max_iter),
            "tol": float(self.tol),
            "continuation": bool(self.continuation),
            "solver": self.solver,
            "backend": self.backend,
        }

    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Dense design matrix (float32 is computed in float64; sparse input raises ``TypeError``).
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative multipliers of each row's loss (not inverse variances).

        Returns
        -------
        self : HuberSoSRegressor

        Notes
        -----
        ``X`` and ``y`` may be row-chunked ``dask.array.Array`` objects (all features of a row in one
        block, the same row blocks for both): then every pass of the iteration of :meth:`fit_chunks`
        runs as one task per block on the active Dask scheduler and the (p, p) statistics are
        tree-reduced; ``X`` is never gathered. The same restrictions as :meth:`fit_chunks` apply
        (numeric ``delta``, no ``sample_weight``, ``continuation=False``, ``init="ols"``,
        ``solver="irls"``, a CPU ``backend``); standard errors and ``conf_int`` come from the same
        reductions.
        """
        if is_dask_array(X) or is_dask_array(y):
            return self._fit_dask(X, y, sample_weight)
        prob = self._prepare(X, y, sample_weight)
        stage, b, deltas, n_iter = self._solve(prob)
        self._set_fitted(prob, stage, b, deltas, n_iter)
        self._warn_regime(prob)
        return self

    def _prepare(self, X, y, sample_weight):
        """Validate the parameters and data; the rescaled problem (a namespace of its pieces).

        Columns of ``X`` and ``y`` (with ``delta``) get exact power-of-two scales, undone by
        :meth:`_set_fitted`; sets ``backend_`` and ``delta_``.
        """
        prm = self._check_params()
        backend = resolve(prm["backend"], None, (X, y))
        if backend == "torch" and prm["solver"] == "lbfgs":
            if prm["backend"] == "auto":  # the torch core has no L-BFGS: "auto" keeps the CPU path
                backend = "numpy"
            else:
                raise ValueError(f"'backend'='torch' needs solver='irls' or 'mm'; got solver={prm['solver']!r}.")
        _check_real(X, "X")
        _check_real(y, "y")
        X, y = validate_data(self, X, y, accept_sparse=False, dtype=np.float64, order="C", y_numeric=True)
        self.backend_ = backend
        n, d = X.shape
        # power-of-two rescaling of extreme columns (and of y, with delta): exact, undone at the end
        col_scale = _pow2_scale(np.max(np.abs(X), axis=0) if n else np.ones(d))
        if np.any(col_scale != 1.0):
            X = np.ascontiguousarray(X * col_scale)
        y_scale = float(_pow2_scale(np.array([np.max(np.abs(y)) if n else 1.0]))[0])
        if y_scale != 1.0:
            y = y * y_scale
        if sample_weight is None:
            sw, pos, n_pos = np.empty(0), None, n
        else:
            sw = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
            sw = np.ascontiguousarray(sw)
            pos = sw > 0
            n_pos = int(np.count_nonzero(pos))
        Xa = np.hstack([X, np.ones((n, 1))]) if prm["fit_intercept"] else X
        p = Xa.shape[1]
        if n_pos <= p:
            extra = " + 1 (fit_intercept=True)" if prm["fit_intercept"] else ""
            which = " with positive sample_weight" if pos is not None else ""
            raise ValueError(
                f"HuberSoSRegressor needs n_samples{which} > n_features{extra}; got n_samples = {n_pos} "
                f"and n_features = {d}."
            )
        y = np.ascontiguousarray(y, dtype=np.float64)
        if prm["delta"] == "auto":  # residual-based, so computed on the rescaled data, then mapped back
            prm["delta"] = suggest_delta(Xa, y) if pos is None else suggest_delta(Xa[pos], y[pos])
        else:
            prm["delta"] = prm["delta"] * y_scale
        self.delta_ = prm["delta"] / y_scale
        return SimpleNamespace(prm=prm, backend=backend, Xa=Xa, y=y, sw=sw, pos=pos, n=n, d=d, n_pos=n_pos, p=p,
                      col_scale=col_scale, y_scale=y_scale, threshold=2.0 * math.sqrt(n_pos * p))

    @staticmethod
    def _delta_path(delta, continuation, r0):
        """The deltas of the continuation (halving from the median absolute start residual down to
        ``delta``), or ``[delta]`` without continuation."""
        if not continuation:
            return [delta]
        delta0 = float(np.median(np.abs(r0)))
        deltas = []
        k = 0
        while True:
            dk = max(delta, delta0 * 2.0**-k)
            deltas.append(dk)
            if dk == delta:
                break
            k += 1
        return deltas

    def _solve(self, prob):
        """Rank check, start and the solver stages over the delta path; ``(stage, b, deltas, n_iter)``."""
        prm, Xa, y, sw, pos = prob.prm, prob.Xa, prob.y, prob.sw, prob.pos
        # Gram matrix of the (sample-weighted) design: rank check, OLS start, gradient scale
        buf = np.empty_like(Xa)
        G0 = _weighted_gram(Xa, np.sqrt(sw) if sw.shape[0] else np.ones(prob.n), buf)
        _check_full_rank(Xa, G0, pos, prm["fit_intercept"])
        gscale = prm["delta"] * math.sqrt(float(np.trace(G0)))  # delta * ||diag(sqrt s) X||_F

        b0 = self._start(prm["init"], Xa, y, sw, G0)

        cap = None if prm["regime_cap"] is None else (prm["regime_cap"], prob.threshold)
        solve = {"irls": functools.partial(_irls, cap=cap), "mm": functools.partial(_irls, newton=False, cap=cap),
                 "lbfgs": _lbfgs}[prm["solver"]]
        if prob.backend == "torch":
            solve = _irls_torch
        delta, tol, budget = prm["delta"], prm["tol"], prm["max_iter"]
        r0 = ((y - Xa @ b0)[pos] if pos is not None else y - Xa @ b0) if prm["continuation"] else None
        deltas = self._delta_path(delta, prm["continuation"], r0)
        n_iter = 0
        b = b0
        for k, dk in enumerate(deltas):
            last = k == len(deltas) - 1
            stage = solve(Xa, y, sw, b, dk, tol if last else max(tol, CONTINUATION_STAGE_TOL),
                          max(budget - n_iter, 0), gscale * (dk / delta))
            n_iter += stage.n_iter
            b = stage.coef
        return stage, b, deltas, n_iter

    def _set_fitted(self, prob, stage, b, deltas, n_iter):
        """The fitted attributes from the last stage, with the power-of-two scales undone."""
        prm, Xa, y, sw, d = prob.prm, prob.Xa, prob.y, prob.sw, prob.d
        col_scale, y_scale = prob.col_scale, prob.y_scale
        self.delta_path_ = np.asarray(deltas)
        self.n_iter_ = int(n_iter)
        self.objective_ = float(stage.objective)
        self.objective_history_ = np.asarray(stage.history, dtype=np.float64)
        self.n_inliers_ = int(stage.n_inliers)
        self.converged_ = bool(stage.converged)
        self.gradient_norm_ = float(stage.grad_rel)
        self.n_backtracks_ = int(stage.n_backtracks)
        self.n_newton_steps_ = int(stage.n_newton)
        self.n_extrapolations_ = int(stage.n_extrapolations)
        self.capped_ = bool(stage.capped)
        self.optimality_residual_ = self.gradient_norm_
        r_fit = y - Xa @ np.asarray(b, dtype=np.float64)
        self._set_cov(_scale_cov(sandwich_cov(Xa, r_fit, "huber", prm["delta"], sw if sw.shape[0] else None),
                                 col_scale, y_scale, prm["fit_intercept"]))
        if y_scale != 1.0:
            b = b / y_scale
            with np.errstate(over="ignore"):  # y_scale**2 can underflow; L itself may exceed float64
                self.objective_ = self.objective_ / y_scale / y_scale
                self.objective_history_ = self.objective_history_ / y_scale / y_scale
            self.delta_path_ = self.delta_path_ / y_scale
        if prm["fit_intercept"]:
            self.coef_ = np.ascontiguousarray(b[:d] * col_scale)
            self.intercept_ = float(b[d])
        else:
            self.coef_ = np.ascontiguousarray(b * col_scale)
            self.intercept_ = 0.0

    def _warn_regime(self, prob):
        """The failure-regime and convergence warnings of :meth:`fit` (attributed to its caller)."""
        delta, n_pos, threshold, prm = self.delta_, prob.n_pos, prob.threshold, prob.prm
        if self.capped_:
            warnings.warn(
                f"HuberSoSRegressor stopped after {self.n_iter_} iterations in the failure regime: only "
                f"{self.n_inliers_} of {n_pos} samples are inliers (|r_i| <= delta={delta:g}), fewer than "
                f"2 sqrt(nd) = {threshold:.0f}, and no Newton step was accepted; the minimiser is likely "
                "far from the truth (Compton & Schramm 2026, Thm 4.7). Check delta, try "
                "SubsetOfSignalsRegressor, or set regime_cap=None to run to convergence.",
                ConvexRegimeWarning,
                stacklevel=3,
            )
        elif not self.converged_:
            warnings.warn(
                f"HuberSoSRegressor did not converge: relative gradient norm {self.gradient_norm_:.2e} "
                f"> tol={prm['tol']:g} after {self.n_iter_} iterations (max_iter={prm['max_iter']}). Increase "
                "max_iter, or tol.",
                ConvergenceWarning,
                stacklevel=3,
            )
        if self.n_inliers_ < threshold and not self.capped_:
            warnings.warn(
                f"Only {self.n_inliers_} of {n_pos} samples are inliers (|r_i| <= delta={delta:g}), fewer "
                f"than 2*sqrt(n*d) = {threshold:.0f}: convex estimators can fail below m ~ 2 sqrt(nd); see "
                "Compton & Schramm 2026. Check that delta matches the noise scale of the reliable sources.",
                ConvexRegimeWarning,
                stacklevel=3,
            )

    def fit_chunks(self, chunks):
        r"""Fit from chunks of rows, for data beyond memory: O(chunk rows x d + d^2) working memory.

        The same problem as :meth:`fit` (fixed ``delta``), solved by the same iteration (semismooth
        Newton steps over the inliers with an Armijo test, else the monotone majorise-minimise
        step) with every sum -- objective, gradient, the two Gram matrices -- accumulated chunk by
        chunk; one iteration reads the data two or three times. It stops on the same relative
        gradient ``tol``, so it returns the minimiser that :meth:`fit` returns (to ``tol``).

        Parameters
        ----------
        chunks : callable
            ``chunks()`` returns a fresh iterable of ``(X_chunk, y_chunk)`` pairs covering the data
            once (e.g. reading a file block by block); it is called once per pass.

        Returns
        -------
        self : HuberSoSRegressor
            With ``coef_``, ``intercept_``, ``n_iter_``, ``converged_``, ``gradient_norm_``,
            ``optimality_residual_``, ``n_inliers_``, ``objective_``, ``delta_``, ``coef_se_`` and
            ``cov_params_`` (sandwich, as :meth:`fit`).

        Notes
        -----
        Supported: a numeric ``delta`` (not ``"auto"``, which needs all residuals at once), no
        sample weights, ``continuation=False``; ``init``, ``solver``, ``backend`` and ``regime_cap``
        are not used (OLS start, the iteration above). Entries are not rescaled: keep ``X`` and
        ``y`` within about ``1e150``.
        """
        if not callable(chunks):
            raise TypeError(f"'chunks' must be a callable returning an iterable of (X, y) pairs; got "
                            f"{type(chunks).__name__}.")
        prm = self._check_params()
        if isinstance(self.delta, str):
            raise ValueError(f"fit_chunks needs a numeric 'delta'; got {self.delta!r} ('auto' needs all residuals "
                             "at once: fit a sample first and pass its delta_).")
        delta, fit_intercept, max_iter, tol = prm["delta"], prm["fit_intercept"], prm["max_iter"], prm["tol"]
        out = huber_fit_chunks(chunks, float(delta), fit_intercept, tol, max_iter)
        return self._set_from_passes(out, float(delta), fit_intercept, tol, max_iter, "fit_chunks")

    def _fit_dask(self, X, y, sample_weight):
        """:meth:`fit` on Dask arrays: the pass iteration with every pass mapped onto the row blocks."""
        prm = self._check_params()
        if isinstance(self.delta, str):
            raise ValueError(f"fit on a dask array needs a numeric 'delta'; got {self.delta!r} ('auto' needs all "
                             "residuals at once: fit a sample in memory first and pass its delta_).")
        unsupported = [(name, prm[name], ok) for name, ok in (("continuation", False), ("init", "ols"),
                                                             ("solver", "irls"))
                       if prm[name] != ok]
        if prm["backend"] == "torch":
            unsupported.append(("backend", "torch", "numpy"))
        if unsupported:
            name, got, ok = unsupported[0]
            raise ValueError(f"fit on a dask array runs the pass iteration only: '{name}' must be {ok!r}; got "
                             f"{got!r}. Use the default, or fit an in-memory sample.")
        if sample_weight is not None:
            raise ValueError("fit on a dask array does not take 'sample_weight'; got one. Fit in memory, or "
                             "repeat rows instead of weighting them.")
        check_dask_xy(X, y)
        self.backend_ = "numpy"
        out = irls_passes(DaskPass(X, y, prm["fit_intercept"]), float(prm["delta"]), prm["fit_intercept"],
                          prm["tol"], prm["max_iter"])
        return self._set_from_passes(out, float(prm["delta"]), prm["fit_intercept"], prm["tol"], prm["max_iter"],
                                     "fit")

    def _set_from_passes(self, out, delta, fit_intercept, tol, max_iter, name):
        """The fitted attributes from the dict of :func:`._irls.irls_passes`, then its warnings."""
        b, d = out["coef"], out["d"]
        self.n_features_in_ = d
        if fit_intercept:
            self.coef_, self.intercept_ = np.ascontiguousarray(b[:d]), float(b[d])
        else:
            self.coef_, self.intercept_ = np.ascontiguousarray(b), 0.0
        self.delta_ = float(delta)
        self.n_iter_ = int(out["n_iter"])
        self.converged_ = bool(out["converged"])
        self.gradient_norm_ = self.optimality_residual_ = float(out["grad_rel"])
        self.n_inliers_ = int(out["n_inliers"])
        self.objective_ = float(out["objective"])
        self.capped_ = False
        n, p = out["n"], b.shape[0]
        try:
            np.linalg.cholesky(out["A"])
            Ainv = np.linalg.inv(out["A"])
            cov = Ainv @ out["B"] @ Ainv * (n / max(n - p, 1))
            cov = 0.5 * (cov + cov.T)
        except np.linalg.LinAlgError:
            cov = np.full((p, p), np.nan)
        self._set_cov(cov)
        if not self.converged_:
            warnings.warn(
                f"HuberSoSRegressor.{name} did not converge: relative gradient norm {self.gradient_norm_:.2e} "
                f"> tol={tol:g} after {self.n_iter_} iterations (max_iter={max_iter}). Increase max_iter, or tol.",
                ConvergenceWarning,
                stacklevel=3,
            )
        threshold = 2.0 * math.sqrt(n * p)
        if self.n_inliers_ < threshold:
            warnings.warn(
                f"Only {self.n_inliers_} of {n} samples are inliers (|r_i| <= delta={delta:g}), fewer than "
                f"2*sqrt(n*d) = {threshold:.0f}: convex estimators can fail below m ~ 2 sqrt(nd); see Compton & "
                "Schramm 2026. Check that delta matches the noise scale of the reliable sources.",
                ConvexRegimeWarning,
                stacklevel=3,
            )
        return self

    def _summary_info(self):
        return [("Method", "huber"), ("Sources treated as signals", f"{self.n_inliers_} (|r| <= delta)"),
                ("delta", f"{self.delta_:g}"), ("Converged", str(self.converged_)),
                ("Optimality residual", f"{self.optimality_residual_:.2e}"),
                ("Covariance", "sandwich, HC1 factor n/(n-p)")]

    @staticmethod
    def _start(init, X, y, sw, G0):
        if init == "zeros":
            return np.zeros(X.shape[1])
        rhs = X.T @ (y if sw.shape[0] == 0 else sw * y)
        b_ols = _spd_solve(G0, rhs)
        if init == "ols":
            return b_ols
        if init == "lad":
            return _init_lad(X, y, sw, b_ols)
        return _init_cmed(X, y, sw, G0)

