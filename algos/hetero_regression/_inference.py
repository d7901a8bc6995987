r"""Sandwich standard errors, confidence intervals and a summary table for the estimators of the module.

Every estimator on the front door's path is an M-estimator :math:`\sum_i \psi(y_i - x_i^\top b)
x_i = 0`. Its asymptotic covariance is the sandwich of Huber (1967) and White (1980),

.. math:: V = A^{-1} B A^{-1}, \qquad A = \sum_i \psi'(r_i)\, x_i x_i^\top, \qquad
          B = \sum_i \psi(r_i)^2\, x_i x_i^\top,

evaluated at the fitted residuals, with no assumption on how the noise variance varies across
rows (the heteroskedasticity-consistent form, HC0 of White 1980), times the small-sample factor
:math:`n/(n-p)` (HC1 of MacKinnon & White 1985; ``p`` coefficients). The matrices for each
:math:`\psi`:

* Huber, :math:`\psi = \operatorname{clip}_\delta`: :math:`\psi' = 1\{|r| \le \delta\}` and
  :math:`\psi^2 = \min(r^2, \delta^2)`.
* The window (skipped-mean) estimator, :math:`\psi(r) = r\,1\{|r| \le w\}`: its derivative in
  expectation holds the boundary term :math:`-2w f(w)` (density of the residual at the window's
  edge), estimated row-wise as :math:`\psi'_i \approx 1\{|r_i| \le w/2\} - 1\{w < |r_i| \le 3w/2\}`
  (the count of residuals in the outer band :math:`(w/2, 3w/2]` estimates :math:`2 w f(w)`, and
  :math:`1\{|r| \le w\} - 1\{w/2 < |r| \le w\}` is the first term). The scalar version of this is
  the variance factor the front door already uses to choose among candidates.
* OLS: :math:`A = X^\top X`, :math:`B = \sum_i r_i^2/(1-h_{ii})^2\, x_i x_i^\top` (HC3 of MacKinnon &
  White 1985; no further factor).

**Not accounted for**: the front door chooses the method from the same data, and the window
estimator chooses its row subset from the data; the intervals are those of the selected fit as if
the method had been fixed in advance (the usual post-selection caveat). When no candidate shows a
reliable subset the intervals are NaN.

References: P. J. Huber, "The behavior of maximum likelihood estimates under nonstandard
conditions", Proc. 5th Berkeley Symp. 1967; H. White, "A heteroskedasticity-consistent covariance
matrix estimator and a direct test for heteroskedasticity", Econometrica 48, 1980; J. G. MacKinnon,
H. White, "Some heteroskedasticity-consistent covariance matrix estimators with improved finite
sample properties", J. Econometrics 29, 1985.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy import stats
from sklearn.utils.validation import check_is_fitted

__all__ = ["sandwich_cov", "window_residual", "window_bootstrap_cov", "Summary"]


def window_residual(X, y, b, w):
    r"""Optimality residual of the window (skipped-mean) problem at ``b``: the window condition.

    ``b`` is a fixed point of the shrinking-window iteration at width ``w`` exactly when it solves
    least squares on its own window :math:`S = \{i : |y_i - x_i^\top b| \le w\}`, i.e.
    :math:`X_S^\top (y_S - X_S b) = 0`. Returned scaled as Huber's relative gradient:
    :math:`\|X_S^\top r_S\| / (w \|X\|_F)` (0 at a fixed point, up to round-off).
    """
    r = y - X @ b
    S = np.abs(r) <= w
    g = X[S].T @ r[S]
    return float(np.linalg.norm(g)) / (w * float(np.linalg.norm(X)))


def sandwich_cov(X, r, kind, width=None, sample_weight=None):
    r"""Sandwich covariance of an M-estimator's coefficients at its residuals ``r``.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        The design the coefficients multiply (with the intercept column if any).
    r : ndarray of shape (n,)
        Residuals at the fit.
    kind : {"huber", "window", "ols"}
    width : float
        ``delta`` (Huber) or the window half-width (window).
    sample_weight : ndarray of shape (n,), optional
        Loss multipliers (Huber only): :math:`A = \sum s_i \psi'_i x_i x_i^\top`,
        :math:`B = \sum s_i^2 \psi_i^2 x_i x_i^\top`.

    Returns
    -------
    ndarray of shape (p, p)
        All NaN when :math:`A` is not positive definite (e.g. no inliers, or a window whose edge
        density cancels its inner mass: a spurious window).
    """
    n, p = X.shape
    a = np.abs(r)
    if kind == "huber":
        dpsi = (a <= width).astype(np.float64)
        psi2 = np.minimum(a, width) ** 2
        corr = n / max(n - p, 1)
    elif kind == "window":
        dpsi = (a <= 0.5 * width).astype(np.float64) - ((a > width) & (a <= 1.5 * width))
        psi2 = np.where(a <= width, r * r, 0.0)
        corr = n / max(n - p, 1)
    elif kind == "ols":
        dpsi = np.ones(n)
        G = X.T @ X
        try:
            Ginv = np.linalg.inv(G)
        except np.linalg.LinAlgError:
            return np.full((p, p), np.nan)
        h = np.einsum("ij,jk,ik->i", X, Ginv, X)
        psi2 = (r / np.maximum(1.0 - h, 1e-12)) ** 2
        corr = 1.0
    else:  # pragma: no cover - internal
        raise ValueError(f"unknown kind {kind!r}")
    if sample_weight is not None and sample_weight.shape[0]:
        dpsi = dpsi * sample_weight
        psi2 = psi2 * sample_weight**2
    A = (X * dpsi[:, None]).T @ X
    B = (X * psi2[:, None]).T @ X
    try:
        np.linalg.cholesky(A)  # positive definite, else no valid sandwich
    except np.linalg.LinAlgError:
        return np.full((p, p), np.nan)
    Ainv = np.linalg.inv(A)
    V = corr * (Ainv @ B @ Ainv)
    return 0.5 * (V + V.T)


def _check_alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"'alpha' must be a float in (0, 1); got {alpha!r} of type {type(alpha).__name__}.")
    if not (0.0 < float(alpha) < 1.0):
        raise ValueError(f"'alpha' must lie in the open interval (0, 1); got {alpha!r}.")
    return float(alpha)


class Summary:
    """The table returned by ``summary()``: ``str()`` gives plain text, notebooks render ``_repr_html_``.

    Attributes
    ----------
    title : str
    info : list of (str, str)
        Header lines (method, observations, sources treated as signals, ...).
    names : list of str
    table : ndarray of shape (p, 6)
        coef, std err, z, P>|z|, lower, upper.
    alpha : float
    """

    def __init__(self, title, info, names, table, alpha, notes):
        self.title, self.info, self.names, self.table, self.alpha, self.notes = title, info, names, table, alpha, notes

    def _columns(self):
        lo, hi = f"[{self.alpha / 2:.3g}", f"{1 - self.alpha / 2:.3g}]"
        return ["coef", "std err", "z", "P>|z|", lo, hi]

    def __str__(self):
        cols = self._columns()
        wn = max([len(n) for n in self.names] + [5])
        rows = []
        for name, row in zip(self.names, self.table):
            cells = [f"{row[0]:.4f}", f"{row[1]:.4f}", f"{row[2]:.3f}", f"{row[3]:.3f}", f"{row[4]:.4f}",
                     f"{row[5]:.4f}"]
            rows.append(name.ljust(wn) + "".join(c.rjust(11) for c in cells))
        head = " " * wn + "".join(c.rjust(11) for c in cols)
        width = max(len(head), 60)
        half_w = (width - 3) // 2
        half = []
        for k, v in self.info:
            k = k + ":"
            pad = max(half_w - len(k), len(v) + 1)
            half.append(f"{k}{v:>{pad}}")
        lines = [self.title.center(width), "=" * width]
        for i in range(0, len(half), 2):
            pair = half[i:i + 2]
            lines.append(pair[0].ljust(half_w) + ("   " + pair[1] if len(pair) > 1 else ""))
        lines += ["=" * width, head, "-" * width, *rows, "=" * width]
        lines += [f"Notes: {n}" for n in self.notes]
        return "\n".join(lines)

    def __repr__(self):
        return str(self)

    def _repr_html_(self):
        import html

        cols = self._columns()
        info = "".join(f"<tr><th>{html.escape(k)}:</th><td>{html.escape(v)}</td></tr>" for k, v in self.info)
        head = "<tr><th></th>" + "".join(f"<th>{html.escape(c)}</th>" for c in cols) + "</tr>"
        body = "".join(
            "<tr><th>" + html.escape(n) + "</th>" + "".join(f"<td>{v:.4g}</td>" for v in row) + "</tr>"
            for n, row in zip(self.names, self.table)
        )
        notes = "".join(f"<p>{html.escape(n)}</p>" for n in self.notes)
        return (f"<table class='simpletable'><caption>{html.escape(self.title)}</caption>{info}</table>"
                f"<table class='simpletable'>{head}{body}</table>{notes}")


class _InferenceMixin:
    """``coef_se_``, ``bse``, ``tvalues``, ``pvalues``, ``conf_int`` and ``summary`` from ``cov_params_``.

    ``cov_params_`` is the covariance of ``[coef_, intercept_]`` (the intercept last, when fitted).
    ``fit`` either sets it (:meth:`_set_cov`) or leaves a callable that computes it
    (:meth:`_defer_cov`); then the first access to ``cov_params_``, ``coef_se_`` or anything built
    on them runs the callable once and caches its result, and the callable (with whatever data it
    holds) is dropped.
    """

    def _set_cov(self, cov, label=None):
        self.__dict__.pop("_inference_pending", None)
        cov = np.asarray(cov, dtype=np.float64)
        self._cov_params = cov
        with np.errstate(invalid="ignore"):
            self._coef_se = np.sqrt(np.diag(cov))
        if label is not None:
            self._inference_label = label

    def _defer_cov(self, pending):
        """Leave ``pending`` (a picklable callable returning ``(cov, label)``) for the first inference call."""
        for key in ("_cov_params", "_coef_se", "_inference_label"):
            self.__dict__.pop(key, None)
        self._inference_pending = pending

    def _ensure_cov(self):
        state = self.__dict__
        if "_cov_params" in state:
            return
        pending = state.get("_inference_pending")
        if pending is None:
            raise AttributeError(f"This {type(self).__name__} instance is not fitted yet: it has no covariance.")
        cov, label = pending()
        self._set_cov(cov, label)

    @property
    def cov_params_(self):
        """ndarray of shape (p, p): covariance of ``[coef_, intercept_]`` (computed on first access)."""
        self._ensure_cov()
        return self._cov_params

    @property
    def coef_se_(self):
        """ndarray of shape (p,): standard errors, the square roots of ``diag(cov_params_)``."""
        self._ensure_cov()
        return self._coef_se

    def _params(self):
        check_is_fitted(self, "cov_params_")
        b = np.asarray(self.coef_, dtype=np.float64)
        if self.cov_params_.shape[0] == b.shape[0] + 1:
            b = np.r_[b, self.intercept_]
        return b

    def _param_names(self, xname=None):
        """Names of ``[coef_, intercept_]``: ``feature_names_in_`` (or ``x1, x2, ...``), then ``const``."""
        d = self.coef_.shape[0]
        if xname is None:
            names = [str(v) for v in getattr(self, "feature_names_in_", [f"x{j + 1}" for j in range(d)])]
        else:
            names = [str(v) for v in xname]
            if len(names) != d:
                raise ValueError(f"'xname' must name the {d} features; got {len(names)} names.")
        if self.cov_params_.shape[0] == d + 1:
            names.append("const")
        return names

    def _check_inference_available(self):
        """Raise when the fitted method has no standard errors at all (not merely NaN for these data)."""
        reason = self._no_inference_reason()
        if reason:
            raise ValueError(reason)

    def _no_inference_reason(self):  # overridden
        return ""

    def _labelled(self, values):
        """``values`` as a pandas Series named by the coefficients when fitted on a DataFrame."""
        if not hasattr(self, "feature_names_in_"):
            return values
        import pandas as pd

        return pd.Series(values, index=self._param_names())

    @property
    def bse(self):
        """Standard errors of ``[coef_, intercept_]`` (statsmodels' name; the intercept last, when fitted).

        Returns
        -------
        ndarray of shape (p,), or pandas.Series indexed by the coefficient names
            A Series (index ``feature_names_in_``, then ``"const"`` for the intercept) when ``fit``
            saw a DataFrame, as statsmodels does. The same numbers as ``coef_se_``.

        Raises
        ------
        ValueError
            When the fitted method gives no standard errors (see ``_no_inference_reason``).
        """
        self._params()
        self._check_inference_available()
        return self._labelled(np.array(self.coef_se_))

    @property
    def tvalues(self):
        r"""Wald statistics :math:`\hat b_j / \mathrm{se}_j` of ``[coef_, intercept_]`` (statsmodels' name).

        Returns
        -------
        ndarray of shape (p,), or pandas.Series indexed by the coefficient names
            Compared with the standard normal (``pvalues``): the standard errors are asymptotic.
        """
        b = self._params()
        self._check_inference_available()
        with np.errstate(divide="ignore", invalid="ignore"):
            return self._labelled(b / self.coef_se_)

    @property
    def pvalues(self):
        r"""Two-sided p-values :math:`2\,\Phi(-|\hat b_j / \mathrm{se}_j|)` for :math:`b_j = 0`.

        Returns
        -------
        ndarray of shape (p,), or pandas.Series indexed by the coefficient names
            The ``P>|z|`` column of ``summary()``; NaN where the standard errors are NaN.
        """
        t = np.asarray(self.tvalues, dtype=np.float64)
        return self._labelled(2.0 * stats.norm.sf(np.abs(t)))

    def conf_int(self, alpha=0.05):
        r"""Normal (Wald) confidence intervals :math:`\hat b_j \pm z_{1-\alpha/2}\,\mathrm{se}_j`.

        Parameters
        ----------
        alpha : float in (0, 1), default=0.05
            One minus the nominal coverage.

        Returns
        -------
        ndarray of shape (n_features, 2), or (n_features + 1, 2) with the intercept last
            Lower and upper bounds; NaN when the fit has no valid standard errors (see
            ``coef_se_``). When ``fit`` saw a pandas DataFrame: a DataFrame as statsmodels'
            ``conf_int`` returns, rows named by ``feature_names_in_`` (then ``"const"`` for the
            intercept, the name ``summary()`` and statsmodels' ``add_constant`` use) and columns
            ``0`` (lower) and ``1`` (upper).

        Raises
        ------
        ValueError
            ``alpha`` outside (0, 1), or a fitted method that gives no standard errors.
        TypeError
            ``alpha`` not a real number.
        """
        alpha = _check_alpha(alpha)
        b = self._params()
        self._check_inference_available()
        z = stats.norm.ppf(1.0 - alpha / 2.0)
        se = self.coef_se_
        ci = np.column_stack([b - z * se, b + z * se])
        if not hasattr(self, "feature_names_in_"):
            return ci
        import pandas as pd

        return pd.DataFrame(ci, index=self._param_names(), columns=[0, 1])

    def _summary_info(self):  # overridden
        return []

    def summary(self, alpha=0.05, xname=None):
        """A statsmodels-style table: coef, std err, z, P>|z| and the ``1 - alpha`` interval.

        Parameters
        ----------
        alpha : float in (0, 1), default=0.05
        xname : list of str, optional
            Names of the coefficients (default ``feature_names_in_`` or ``x1, x2, ...``; the
            intercept is ``const``).

        Returns
        -------
        Summary
            ``print(est.summary())`` gives the text table; notebooks show it as HTML.
        """
        alpha = _check_alpha(alpha)
        b = self._params()
        self._check_inference_available()
        names = self._param_names(xname)
        se = self.coef_se_
        zq = stats.norm.ppf(1.0 - alpha / 2.0)
        ci = np.column_stack([b - zq * se, b + zq * se])
        with np.errstate(divide="ignore", invalid="ignore"):
            z = b / se
        pv = 2.0 * stats.norm.sf(np.abs(z))
        table = np.column_stack([b, se, z, pv, ci])
        if getattr(self, "inference_", "sandwich") in ("mixture", "mixture_hc3"):
            notes = ["Standard errors: sandwich of the scale-mixture likelihood (the noise law estimated on a "
                     "grid of scales, each row scored under the law of the other half of the rows); the "
                     "choice of method by the data is not accounted for."]
        elif getattr(self, "inference_", "sandwich") in ("adaptive", "adaptive_outer"):
            notes = ["Standard errors: sandwich of the score estimated from the residuals (kernel density, each "
                     "fold of rows scored from the other folds); assumes noise symmetric and independent of the "
                     "design; the choice of method by the data is not accounted for."]
        elif getattr(self, "inference_", "sandwich") == "bootstrap":
            notes = ["Standard errors: pairs bootstrap of the window refinement (the window's row subset is "
                     "re-chosen in every replicate); the choice of the method by the data is not accounted for."]
        else:
            notes = ["Standard errors: sandwich (Huber 1967, White 1980) at the fitted residuals; the choice "
                     "of method and of the row subset by the data is not accounted for."]
        if not np.all(np.isfinite(se)):
            notes.append("No valid standard errors: the fit shows no reliable subset (or its curvature "
                         "matrix is not positive definite); the intervals are NaN.")
        return Summary(f"{type(self).__name__} Results", self._summary_info(), names, table, alpha, notes)


def _scale_cov(cov, col_scale, y_scale, fit_intercept):
    """Map a covariance of the internally rescaled coefficients back to the user's units."""
    f = np.asarray(col_scale, dtype=np.float64) / y_scale
    if fit_intercept:
        f = np.r_[f, 1.0 / y_scale]
    return cov * f[:, None] * f[None, :]


def normal_quantile(alpha):
    """:math:`z_{1-\\alpha/2}` (a helper for tests and benchmarks)."""
    return float(stats.norm.ppf(1.0 - _check_alpha(alpha) / 2.0))



def window_bootstrap_cov(X, y, b, w, n_boot, rng, start=8.0, extra_rounds=5):
    r"""Pairs-bootstrap covariance of the window (skipped-mean) fit ``b`` at final width ``w``.

    Each replicate reweights the rows by multinomial counts (the pairs bootstrap: resampling ``n``
    rows with replacement; Efron & Tibshirani 1993, ch. 9) and reruns the shrinking-window schedule
    from width ``start * w`` down to ``w`` (halving) plus ``extra_rounds`` rounds at ``w``, from
    ``b``: the window's row subset is re-chosen in every replicate, so its variability is included.
    (Started at ``w`` itself, a replicate keeps the full-sample window's rows and the intervals
    under-cover: measured 0.77-0.82 for nominal 0.95.) All replicates run together (batched
    least squares); memory about ``2e7`` floats per block of replicates.

    Returns ``(cov, n_valid)``: replicates whose window holds fewer than ``2p`` rows are dropped
    (NaN covariance when fewer than half remain).
    """
    n, p = X.shape
    T = int(math.ceil(math.log2(start))) + extra_rounds if start > 1 else extra_rounds
    kb_max = max(1, min(n_boot, int(2e7 // max(n * (p + 1), 1))))
    nb = max(1, int(1e7 // (p * p)))  # row block for the Gram products
    Xy = X * y[:, None]
    reps = []
    done = 0
    while done < n_boot:
        kb = min(kb_max, n_boot - done)
        done += kb
        idx = rng.integers(0, n, size=(kb, n)) + n * np.arange(kb)[:, None]  # n draws per replicate
        counts = np.bincount(idx.ravel(), minlength=kb * n).reshape(kb, n).astype(np.float64)
        B = np.tile(b, (kb, 1))
        wt = start * w
        ok = np.ones(kb, dtype=bool)
        for _ in range(T):
            M = counts * (np.abs(y[None, :] - B @ X.T) <= wt)
            ok = np.count_nonzero(M, axis=1) >= 2 * p
            G = np.zeros((kb, p * p))
            for i0 in range(0, n, nb):
                Xi = X[i0:i0 + nb]
                G += M[:, i0:i0 + nb] @ (Xi[:, :, None] * Xi[:, None, :]).reshape(-1, p * p)
            G = G.reshape(kb, p, p)
            tr = np.trace(G, axis1=1, axis2=2)
            G += (1e-12 * np.maximum(tr, 1e-300) / p)[:, None, None] * np.eye(p)[None]
            B = np.linalg.solve(G, (M @ Xy)[:, :, None])[:, :, 0]
            wt = max(0.5 * wt, w)
        reps.append(B[ok & np.all(np.isfinite(B), axis=1)])
    reps = np.concatenate(reps, axis=0)
    if reps.shape[0] < max(2, n_boot // 2):
        return np.full((p, p), np.nan), int(reps.shape[0])
    return np.atleast_2d(np.cov(reps, rowvar=False)), int(reps.shape[0])
