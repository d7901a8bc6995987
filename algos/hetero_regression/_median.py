r"""Coordinate-median regression (d'Orsi, Novikov & Steurer 2021, section 4.2.1).

The estimator is method M2 of the hetero_regression reconstruction notes.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils._param_validation import Interval

from .._validation import (
    OrderedStrOptions,
    validate_params,
)
from ._baselines import _LinearPredictMixin, _lstsq, _validate_fit
from ._kernels import masked_ratio_medians

__all__ = ["CoordinateMedianRegressor", "shorth"]

_LOCATIONS = ("median", "shorth")


def shorth(values):
    r"""Midpoint of the shortest interval holding half of the points (the *shorth* location).

    With the values sorted, :math:`v_{(1)} \le \dots \le v_{(n)}` and :math:`k = \lfloor n/2
    \rfloor + 1`, the windows :math:`[v_{(i)}, v_{(i+k-1)}]` hold ``k`` points; the estimate is
    the midpoint of the narrowest one. When several windows tie for the narrowest width, their
    midpoints are averaged, so that ``shorth(-v) == -shorth(v)``.

    It is a mode-seeking location estimator: under heteroskedastic symmetric noise it
    concentrates on the densest region, i.e. on the low-noise points (Chierichetti et al. 2014
    use the k-shorth in the 1-D subset-of-signals problem). Cost :math:`O(n \log n)` (a sort).

    Parameters
    ----------
    values : array-like of shape (n,), n >= 1, finite

    Returns
    -------
    float

    Examples
    --------
    >>> shorth([0.0, 0.1, 0.2, 5.0, 9.0])
    0.1
    >>> shorth([0.0, 1.0, 2.0, 3.0])  # two windows of width 2 tie: midpoints 1 and 2
    1.5
    """
    v = np.sort(np.asarray(values, dtype=np.float64).ravel())
    n = v.shape[0]
    if n == 0:
        raise ValueError("'values' must not be empty; got an array of length 0.")
    if not np.all(np.isfinite(v)):
        raise ValueError("'values' must contain only finite values.")
    return _shorth_sorted(v)


def _shorth_sorted(v):
    n = v.shape[0]
    k = n // 2 + 1
    width = v[k - 1 :] - v[: n - k + 1]
    best = np.flatnonzero(width == width.min())
    return float(np.mean(0.5 * (v[best] + v[best + k - 1])))


def _median_1d(values):
    return float(np.median(values))


def _location_1d(location):
    return _median_1d if location == "median" else lambda v: _shorth_sorted(np.sort(v))


def _column_locations(columns, r, locate):
    """``h_j = locate(r_i / Xw_ij over the rows i with |Xw_ij| >= threshold)`` for every column.

    numpy path, used for ``location="shorth"`` (the median goes through the numba kernel
    :func:`._kernels.masked_ratio_medians`; this function with ``np.median`` is its twin).
    """
    return np.array([locate(r[idx] / x) for idx, x in columns])


def _canonical_whitening(X):
    r"""An affine-equivariant whitening ``Xw = X @ M`` with ``Xw.T @ Xw / n = I``.

    ``X = Q R`` (thin QR). Any whitening is ``sqrt(n) Q O`` for an orthogonal ``O``; the
    coordinate median is not rotation invariant, so ``O`` must not depend on how ``X`` is
    parametrised. It is fixed from the column space alone: a rank-revealing (pivoted QR) choice
    of ``d`` rows ``B`` of ``Q`` -- invariant under ``Q -> Q O'`` -- and ``O`` the transposed
    orthogonal polar factor of ``Q_B`` (so that the whitened rows ``B`` form a symmetric positive
    definite block). Replacing ``X`` by ``X A`` (``A`` invertible) leaves ``Xw`` unchanged, which
    makes the estimator equivariant: ``beta(XA) = A^{-1} beta(X)``.

    Returns ``(Xw, M)``; raises ``ValueError`` if ``X`` does not have full column rank.
    """
    n, d = X.shape
    Q, R = np.linalg.qr(X)
    diag = np.abs(np.diag(R))
    if diag.min() <= diag.max() * max(n, d) * np.finfo(float).eps:
        raise ValueError(
            "whitening needs X of full column rank (after centring when fit_intercept=True); got a "
            "rank-deficient X (constant or collinear columns?). Drop the redundant columns or use "
            "whiten=False."
        )
    _, piv = scipy.linalg.qr(Q.T, mode="r", pivoting=True)
    U, _, Vt = np.linalg.svd(Q[piv[:d]])
    O = Vt.T @ U.T  # transpose of the polar factor U Vt of Q_B
    Xw = np.sqrt(n) * (Q @ O)
    M = np.sqrt(n) * scipy.linalg.solve_triangular(R, O)
    return Xw, M


class CoordinateMedianRegressor(_LinearPredictMixin, RegressorMixin, BaseEstimator):
    r"""Coordinate-median regression: d'Orsi-Novikov-Steurer's linear-time estimator for
    Gaussian designs under oblivious (here: heteroskedastic) noise.

    The algorithm of dNS21, section 4.2.1, as described in Compton & Schramm (2026), section 2.1
    (hetero_regression reconstruction notes, M2):

    1. Whiten: :math:`\tilde X = X\hat\Sigma^{-1/2}O` with :math:`\hat\Sigma = X^\top X/n` and a
       canonical rotation ``O`` (see Notes), so that :math:`\tilde X^\top\tilde X/n = I`.
    2. Start from OLS, :math:`b = \tilde X^\top y / n`. Repeat ``n_rounds`` times (or until the
       step is below ``tol``): :math:`r = y - \tilde X b`; for every coordinate ``j`` let
       :math:`A_j = \{i : |\tilde X_{ij}| \ge \text{threshold}\}` (about 32% of the rows for
       threshold 1) and :math:`\hat h_j = \operatorname{median}_{i\in A_j} r_i/\tilde X_{ij}`;
       :math:`b \leftarrow b + \hat h`.
    3. Map back, :math:`\hat\beta = M b` with :math:`\tilde X = XM`.

    **Why it works.** For Gaussian whitened rows and current error :math:`h = \beta - b`,

    .. math:: \frac{r_i}{\tilde X_{ij}} = h_j + \frac{\varepsilon_i + \sum_{k\ne j}\tilde X_{ik}h_k}{\tilde X_{ij}},

    and, given :math:`\tilde X_{ij}`, the second term is a symmetric variable with standard
    deviation :math:`\sqrt{\sigma_i^2 + \|h_{-j}\|^2}/|\tilde X_{ij}|`, independent across rows.
    So each coordinate becomes a **1-D heteroskedastic location problem** with the same
    subset-of-signals structure: the ``m`` signal rows contribute density
    :math:`\gtrsim m/\sqrt{1+\|h\|^2}` near :math:`h_j`, and the median of ``n`` symmetric
    variables is off by about :math:`\sqrt n` over that density. Restricting to
    :math:`|\tilde X_{ij}| \ge 1` keeps the ratio noise of the signals bounded. One round
    therefore maps an error :math:`\|h\|` to about :math:`C\sqrt{nd}/m \cdot \sqrt{1+\|h\|^2}`,
    a contraction once :math:`m \gg \sqrt{nd}`, with fixed point :math:`O(\sqrt{nd}/m)`: the
    same rate as Huber. Any 1-D heteroskedastic location estimator can replace the median
    (``location="shorth"``: the midpoint of the shortest half, see :func:`shorth`).

    Parameters
    ----------
    n_rounds : int >= 1, default=30
        Maximal number of rounds.
    threshold : float > 0, default=1.0
        Rows with :math:`|\tilde X_{ij}| \ge` ``threshold`` vote on coordinate ``j``.
    whiten : bool, default=True
        Whiten the design first (needed unless ``X`` is already isotropic; with ``whiten=False``
        the raw entries are compared with ``threshold``).
    location : {"median", "shorth"}, default="median"
        The 1-D location estimator used for every coordinate (and for the intercept).
    fit_intercept : bool, default=False
        Centre the columns of ``X``, estimate the slopes (the intercept is updated each round as
        the location of the residuals), and set ``intercept_`` to the location (median by
        default) of the final residuals ``y - X @ coef_`` (hetero_regression reconstruction notes,
        section 7: the ``|X_ij| >= 1`` rule would break on a column of ones).
    tol : float >= 0, default=1e-10
        Stop when the step :math:`\|\hat h\|` (intercept step included) is at most ``tol`` times
        the median absolute OLS residual (a scale that is invariant under ``y -> y + Xv``).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
        0.0 when ``fit_intercept=False``.
    n_iter_ : int
        Rounds run.
    converged_ : bool
        Whether the last step was below the ``tol`` criterion. Usually ``False``, and that is not an
        error: the iterates reach the statistical accuracy in a few rounds and then jitter at that
        level (steps about a tenth of the error) instead of settling on an exact fixed point, so
        the rounds are a fixed budget as in dNS21 and no ``ConvergenceWarning`` is raised.
    n_features_in_ : int

    Raises
    ------
    ValueError
        On NaN/inf, ``n_samples <= n_features``, a rank-deficient ``X`` with ``whiten=True``, a
        column with no entry above ``threshold``, or a bad parameter.

    See Also
    --------
    HuberSoSRegressor : the primary estimator (same rate, any design).
    shorth : the alternative location estimator.

    Notes
    -----
    *Equivariances.* The whitening is canonical: it depends on the column space of ``X`` only
    (a pivoted-QR choice of ``d`` rows fixes the rotation), so with ``whiten=True`` the estimate
    satisfies :math:`\hat\beta(XA, y) = A^{-1}\hat\beta(X, y)` for every invertible ``A``, and,
    because the start is OLS and each round depends on the residuals only,
    :math:`\hat\beta(X, y + Xv) = \hat\beta(X, y) + v`. With ``whiten=False`` only sign flips and
    permutations of the columns are allowed for ``A``. Row permutations never matter.

    *Design.* The analysis needs a Gaussian (or at least symmetric, isotropic after whitening)
    design; on heavy-tailed or discrete designs the per-coordinate noise is not symmetric given
    the other coordinates and the rate degrades.

    *Cost.* :math:`O(nd^2)` for the whitening and :math:`O(nd)` per round (medians by
    selection).

    References
    ----------
    T. d'Orsi, G. Novikov, D. Steurer (2021), Consistent regression when oblivious outliers
    overwhelm, ICML, section 4.2.1.
    S. Compton, T. Schramm (2026), Algorithms for adaptive and heteroskedastic linear regression
    at the computational threshold, section 2.1.

    Examples
    --------
    >>> from algos.hetero_regression._data import make_subset_of_signals
    >>> data = make_subset_of_signals(20000, 5, 2000, random_state=0)
    >>> est = CoordinateMedianRegressor().fit(data.X, data.y)
    >>> bool(np.linalg.norm(est.coef_ - data.beta) < 0.5)
    True
    """

    _parameter_constraints: dict = {
        "fit_intercept": ["boolean"],
        "location": [OrderedStrOptions(("median", "shorth"))],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "threshold": [Interval(Real, 0, None, closed="neither")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "whiten": ["boolean"],
    }

    def __init__(self, *, n_rounds=30, threshold=1.0, whiten=True, location="median", fit_intercept=False,
                 tol=1e-10):
        self.n_rounds = n_rounds
        self.threshold = threshold
        self.whiten = whiten
        self.location = location
        self.fit_intercept = fit_intercept
        self.tol = tol

    def fit(self, X, y):
        """Fit by coordinate-median rounds.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), n_samples > n_features
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        validate_params(self)
        n_rounds, threshold, whiten = int(self.n_rounds), float(self.threshold), bool(self.whiten)
        location, fit_intercept, tol = self.location, bool(self.fit_intercept), float(self.tol)
        X, y = _validate_fit(self, X, y)
        n, d = X.shape

        Xc = X - X.mean(axis=0) if fit_intercept else X
        if whiten:
            Xw, M = _canonical_whitening(Xc)
        else:
            Xw, M = Xc, None
        columns = []
        for j in range(d):
            idx = np.flatnonzero(np.abs(Xw[:, j]) >= threshold)
            if idx.size == 0:
                raise ValueError(
                    f"no row has |X_ij| >= threshold = {threshold!r} in column {j}"
                    f"{' of the whitened design' if whiten else ''}; lower 'threshold'"
                    f"{'' if whiten else ' or use whiten=True'}."
                )
            columns.append((idx, Xw[idx, j]))
        locate = _location_1d(location)
        if location == "median":
            Xw = np.ascontiguousarray(Xw)
            out, counts = np.empty(d), np.empty(d, dtype=np.int64)

            def step(r):
                masked_ratio_medians(Xw, r, threshold, out, counts)
                return out.copy()
        else:

            def step(r):
                return _column_locations(columns, r, locate)

        # OLS start (makes the estimate equivariant under y -> y + Xv).
        b = Xw.T @ y / n if whiten else _lstsq(Xw, y - y.mean() if fit_intercept else y)
        a = locate(y - Xw @ b) if fit_intercept else 0.0
        r = y - a - Xw @ b
        scale = float(np.median(np.abs(r)))
        converged, n_iter = False, 0
        for n_iter in range(1, n_rounds + 1):
            h = step(r)
            b = b + h
            r = y - a - Xw @ b
            step2 = float(h @ h)
            if fit_intercept:
                ha = locate(r)
                a += ha
                r = r - ha
                step2 += ha * ha
            if np.sqrt(step2) <= tol * scale:
                converged = True
                break
        coef = M @ b if whiten else b
        self.coef_ = np.asarray(coef, dtype=np.float64)
        self.intercept_ = locate(y - X @ self.coef_) if fit_intercept else 0.0
        self.n_iter_ = n_iter
        self.converged_ = converged
        return self
