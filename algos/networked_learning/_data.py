r"""Population models and generators that make networked aggregation visible.

The generators follow the networked_learning reconstruction notes, section 6.

Every generator returns a :class:`PopulationModel`: a distribution of :math:`(x, y)` together with
its exact second moments

.. math:: \Sigma = E[x x^\top], \qquad b = E[x y], \qquad E[y^2], \qquad
          \beta^* = \Sigma^+ b,

so the population engine (``population_fit``) can be run on exact numbers and the samplers can be
checked against them by Monte Carlo. All generators but :func:`make_leverage_design` are exact
linear-Gaussian latent models

.. math:: z \sim N(0, I_p), \quad x = A z, \quad y = c^\top z + \sigma\,\varepsilon, \quad
          \varepsilon \sim N(0, 1),

with :math:`\Sigma = A A^\top`, :math:`b = A c`, :math:`E[y^2] = c^\top c + \sigma^2`. Nothing is
centred and there is no intercept: every variable has mean zero.

:func:`load_diabetes_agents` returns the module's real data set (scikit-learn's diabetes data,
standardised).
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import (
    check_array,
    check_array_1d,
    check_option,
    check_random_state,
    check_scalar_float,
    check_scalar_int,
)

__all__ = [
    "PopulationModel",
    "make_suppressor",
    "make_krr_hard3",
    "make_common_factor",
    "make_differential",
    "make_leverage_design",
    "make_gaussian",
    "load_diabetes_agents",
]


class PopulationModel:
    r"""A distribution of :math:`(x, y)` with exact second moments and a sampler.

    Parameters
    ----------
    Sigma : ndarray of shape (d, d)
        :math:`E[x x^\top]`.
    b : ndarray of shape (d,)
        :math:`E[x y]`.
    y_var : float
        :math:`E[y^2]` (the mean of ``y`` is 0 for every generator here, so this is also its variance).
    noise_var : float
        Variance of the additive label noise that no feature explains.
    name : str
    A, c : ndarray, optional
        Latent loadings of a linear-Gaussian model ``x = A z``, ``y = c^T z + sqrt(noise_var) eps``.
    sampler : callable ``(m, rng) -> (X, y)``, optional
        Used instead of the latent model (the leverage design).

    Attributes
    ----------
    Sigma, b, y_var, noise_var, name, A, c
    beta_star : ndarray of shape (d,)
        :math:`\Sigma^+ b`, the coefficients of :math:`f^* = P_H y`.
    d : int
        Number of features.

    Examples
    --------
    >>> pm = make_suppressor()
    >>> pm.beta_star.round(12).tolist()
    [1.0, -1.0]
    >>> pm.mse(pm.beta_star), pm.mse([0.0, 0.0])
    (0.0, 1.0)
    """

    def __init__(self, Sigma, b, y_var, noise_var=0.0, name="population", *, A=None, c=None, sampler=None):
        Sigma = check_array(Sigma, "Sigma", allow_empty=True)
        b = check_array(b, "b", allow_empty=True)
        if Sigma.ndim != 2 or Sigma.shape[0] != Sigma.shape[1]:
            raise ValueError(f"'Sigma' must be a square 2-d array; got an array of shape {Sigma.shape}.")
        if b.shape != (Sigma.shape[0],):
            raise ValueError(f"'b' must have shape ({Sigma.shape[0]},); got {b.shape}.")
        self.Sigma = Sigma
        self.b = b
        self.y_var = check_scalar_float(y_var, "y_var", low=0.0)
        self.noise_var = check_scalar_float(noise_var, "noise_var", low=0.0)
        self.name = str(name)
        self.A = None if A is None else check_array(A, "A", ndim=2, allow_empty=True)
        self.c = None if c is None else check_array(c, "c", ndim=1, allow_empty=True)
        if self.A is not None and self.A.shape[0] != Sigma.shape[0]:
            raise ValueError(f"'A' must have {Sigma.shape[0]} rows (x = A z has d entries); got shape {self.A.shape}.")
        if self.A is not None and self.c is not None and self.c.shape != (self.A.shape[1],):
            raise ValueError(f"'c' must have shape ({self.A.shape[1]},) to match 'A'; got {self.c.shape}.")
        if sampler is None and (self.A is None or self.c is None):
            raise ValueError("a PopulationModel needs either latent loadings (A, c) or a sampler.")
        self._sampler = sampler
        self.d = int(Sigma.shape[0])
        self.beta_star = np.linalg.pinv(Sigma) @ b

    @classmethod
    def from_latent(cls, A, c, noise=0.0, name="latent"):
        r"""Build the model ``x = A z``, ``y = c^T z + noise * eps`` with ``z ~ N(0, I_p)``.

        Parameters
        ----------
        A : array-like of shape (d, p)
            Loadings of the features on the latent variables.
        c : array-like of shape (p,)
            Loadings of the response.
        noise : float, default=0.0
            Standard deviation of the independent response noise, at least 0.
        name : str, default="latent"
            Name of the model.

        Returns
        -------
        PopulationModel
            The model.

        Examples
        --------
        >>> pm = PopulationModel.from_latent([[1.0, 0.0], [1.0, 1.0]], [0.0, 1.0], noise=0.5)
        >>> pm.Sigma.tolist(), pm.b.tolist(), pm.y_var
        ([[1.0, 1.0], [1.0, 2.0]], [0.0, 1.0], 1.25)
        """
        A = np.atleast_2d(check_array(A, "A", ndim=(1, 2)))
        c = check_array(c, "c", ndim=1)
        if c.shape != (A.shape[1],):
            raise ValueError(f"'c' must have shape ({A.shape[1]},); got {c.shape}.")
        noise = check_scalar_float(noise, "noise", low=0.0)
        return cls._latent(A, c, noise, name, "'A', 'c' or 'noise'")

    @classmethod
    def _latent(cls, A, c, noise, name, blame):
        """``from_latent`` on checked arrays; ``blame`` names the inputs to rescale on overflow."""
        with np.errstate(over="ignore", invalid="ignore"):
            Sigma, b, noise_var = A @ A.T, A @ c, noise * noise
            y_var = float(c @ c) + noise_var
        _check_moments_finite(Sigma, b, y_var, blame)
        return cls(Sigma, b, y_var, noise_var, name, A=A, c=c)

    def sample(self, m, random_state=None):
        """Draw ``m`` i.i.d. rows; returns ``(X, y)`` as float64 arrays of shapes (m, d) and (m,).

        Parameters
        ----------
        m : int
            Number of rows, at least 1.
        random_state : None, int, SeedSequence or Generator, default=None
            Seed.

        Returns
        -------
        X : ndarray of shape (m, d)
            Features.
        y : ndarray of shape (m,)
            Responses.

        Examples
        --------
        >>> X, y = make_differential(3).sample(5, random_state=0)
        >>> X.shape, y.shape, X.dtype
        ((5, 3), (5,), dtype('float64'))
        """
        m = check_scalar_int(m, "m", low=1)
        rng = check_random_state(random_state)
        if self._sampler is not None:
            X, y = self._sampler(m, rng)
            return np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
        Z = rng.standard_normal((m, self.A.shape[1]))
        X = Z @ self.A.T
        y = Z @ self.c
        if self.noise_var > 0:
            y = y + np.sqrt(self.noise_var) * rng.standard_normal(m)
        return X, y

    def mse(self, beta):
        r""":math:`E(y - \beta^\top x)^2 = E[y^2] - 2 b^\top\beta + \beta^\top\Sigma\beta`.

        Parameters
        ----------
        beta : array-like of shape (d,)
            Coefficients.

        Returns
        -------
        float
            The population mean squared error of ``beta``.
        """
        beta = check_array_1d(beta, "beta", dtype="float")
        if beta.shape != (self.d,):
            raise ValueError(f"'beta' must have shape ({self.d},); got {beta.shape}.")
        return float(max(self.y_var - 2.0 * self.b @ beta + beta @ self.Sigma @ beta, 0.0))

    @property
    def mse_star(self):
        """The benchmark error :math:`E(y - f^*)^2 = E[y^2] - b^T beta^*`."""
        return self.mse(self.beta_star)

    def __repr__(self):
        return f"PopulationModel(name={self.name!r}, d={self.d}, noise_var={self.noise_var:g})"


def _check_moments_finite(Sigma, b, y_var, blame):
    """``ValueError`` naming ``blame`` when a second moment is beyond the float64 range."""
    if not (math.isfinite(y_var) and np.all(np.isfinite(Sigma)) and np.all(np.isfinite(b))):
        raise ValueError(f"the second moments E[xx'], E[xy], E[y^2] overflow float64; rescale {blame}.")


def make_suppressor(noise=0.0):
    r"""The suppressor pair: :math:`x_1 = U + Z`, :math:`x_2 = Z`, :math:`y = U + \sigma\varepsilon`.

    :math:`\Sigma = \begin{pmatrix}2 & 1\\ 1 & 1\end{pmatrix}`, :math:`b = (1, 0)`,
    :math:`\beta^* = (1, -1)`: :math:`x_2` is uncorrelated with :math:`y` yet needed (it removes
    :math:`Z` from :math:`x_1`). Population excess (networked_learning reconstruction notes, section 8): star hub 0.5,
    path
    :math:`x_1\to x_2` 0, :math:`x_2\to x_1` 0.5, :math:`x_2\to x_1\to x_2` 0. Latent ``z = (U, Z)``.

    The two 0.5 values are statements about the population idealisation: they arise because the agent
    seeing only :math:`x_2` predicts exactly 0 there. On a sample its coefficient is tiny but nonzero,
    so the hub (or the :math:`x_1` agent) recovers :math:`x_2` and reaches the benchmark: with
    ``noise=0`` the estimator's excess is 0 for all four topologies at any ``m >= 2``, with noise about
    :math:`2\sigma^2/m` (see :func:`zero_message_agents`).

    Parameters
    ----------
    noise : float >= 0, default=0.0
        Standard deviation :math:`\sigma` of the label noise.

    Returns
    -------
    PopulationModel
        The model.

    Examples
    --------
    >>> pm = make_suppressor()
    >>> pm.Sigma.tolist(), pm.b.tolist()
    ([[2.0, 1.0], [1.0, 1.0]], [1.0, 0.0])
    """
    noise = check_scalar_float(noise, "noise", low=0.0)
    A = np.array([[1.0, 1.0], [0.0, 1.0]])
    return PopulationModel._latent(A, np.array([1.0, 0.0]), noise, "suppressor", "'noise'")


def make_krr_hard3(D):
    r"""The depth-tuned hard instance ("Optimal Networks", eq. (5)).

    Latent :math:`U, V, Z \sim N(0, 1)`; :math:`x_1 = Z + \rho U`, :math:`x_2 = Z + \rho V`,
    :math:`x_3 = Z - \rho(U + V)`, :math:`y = \rho U`, with :math:`\rho^2 = 1/(40 D)`. Noiseless;
    :math:`\beta^* = (2/3, -1/3, -1/3)` and :math:`E[y^2] = \rho^2`. On the cyclic path of depth
    ``D`` the networked_learning reconstruction notes report :math:`e_D \cdot D \approx 0.0116` for every ``D`` (the
    :math:`\Theta(1/D)` showcase). Latent ``z = (U, V, Z)``.

    Parameters
    ----------
    D : int >= 1
        The depth the instance is tuned for.

    Returns
    -------
    PopulationModel
        The model.

    Examples
    --------
    >>> pm = make_krr_hard3(10)
    >>> round(pm.y_var * 400, 12), pm.beta_star.round(9).tolist()
    (1.0, [0.666666667, -0.333333333, -0.333333333])
    """
    D = check_scalar_int(D, "D", low=1)
    rho = np.sqrt(1.0 / (40.0 * D))
    A = np.array([[rho, 0.0, 1.0], [0.0, rho, 1.0], [-rho, -rho, 1.0]])
    pm = PopulationModel.from_latent(A, [rho, 0.0, 0.0], 0.0, f"krr_hard3(D={D})")
    pm.rho = float(rho)
    return pm


def _default_zero_sum(d):
    """The fixed default of :func:`make_common_factor`: ``default_rng(0)`` Gaussian, centred, unit norm.

    This is the vector that reproduces the reconstruction's reference numbers (d = 8, rho = 0.1: cyclic-path
    relative excess 0.974 / 0.867 / 0.545 at D = 8 / 64 / 256); the alternating vector
    (1, -1, 1, ...) gives 0.72 / 0.57 / 0.27 instead.
    """
    a = np.random.default_rng(0).standard_normal(d)
    a -= a.mean()
    return a / np.linalg.norm(a)


def make_common_factor(d, rho, a=None, random_state=None):
    r"""Common factor plus small idiosyncratic parts: :math:`x_j = Z + \rho u_j`,
    :math:`y = \rho \sum_j a_j u_j` with :math:`\sum_j a_j = 0`.

    Because :math:`\sum_j a_j = 0`, :math:`y = \sum_j a_j x_j` exactly: :math:`\beta^* = a`,
    noiseless, :math:`E[y^2] = \rho^2\|a\|^2`. Every feature is marginally correlated with ``y``
    (:math:`b_j = \rho^2 a_j \ne 0`), so the star is exact, but a path is slow: each agent must
    cancel the common factor :math:`Z` through its parent's prediction. Latent
    ``z = (Z, u_1, ..., u_d)``.

    Parameters
    ----------
    d : int >= 2
    rho : float > 0
    a : array-like of shape (d,), optional
        Coefficients; centred to sum to zero (a constant vector is rejected). Default: a standard
        Gaussian vector drawn from ``random_state``, centred and scaled to unit norm; with
        ``random_state=None`` the draw uses the fixed seed 0 (so the default is deterministic and
        equals ``random_state=0``). This fixed default reproduces the reconstruction's reference numbers
        (d = 8, rho = 0.1: cyclic-path relative excess 0.974 / 0.867 / 0.545 at D = 8 / 64 / 256).
    random_state : None, int or Generator
        Used only to draw ``a`` when it is not given.

    Returns
    -------
    PopulationModel
        The model.

    Examples
    --------
    >>> pm = make_common_factor(4, 0.1, a=[1.0, -1.0, 1.0, -1.0])
    >>> pm.beta_star.round(9).tolist(), round(pm.y_var, 12)
    ([1.0, -1.0, 1.0, -1.0], 0.04)
    >>> round(float(make_common_factor(8, 0.1).a.sum()), 12)
    0.0
    """
    d = check_scalar_int(d, "d", low=2)
    rho = check_scalar_float(rho, "rho", low=0.0, closed="neither")
    if a is None:
        if random_state is None:
            a = _default_zero_sum(d)
        else:
            a = check_random_state(random_state).standard_normal(d)
            a -= a.mean()
            a /= np.linalg.norm(a)
    else:
        a = check_array_1d(a, "a", dtype="float")
        if a.shape != (d,):
            raise ValueError(f"'a' must have shape ({d},); got {a.shape}.")
        scale = float(np.max(np.abs(a))) if a.size else 0.0
        a = a - a.mean()
        if float(np.max(np.abs(a))) <= 1e-12 * scale or scale == 0.0:
            raise ValueError("'a' must not be constant (it is centred to sum to zero); got a constant vector.")
    A = np.hstack([np.ones((d, 1)), rho * np.eye(d)])
    c = np.concatenate([[0.0], rho * a])
    pm = PopulationModel._latent(A, c, 0.0, f"common_factor(d={d}, rho={rho:g})", "'rho' or 'a'")
    pm.a = a
    return pm


def make_differential(k):
    r"""Differences of independent variables: :math:`x_i = Z_i - Z_{i-1}` (i = 1..k), :math:`y = Z_k`.

    Here :math:`Z_1, \dots, Z_k \sim N(0, 1)` i.i.d. and :math:`Z_0 = 0`, so :math:`x_1 = Z_1` and
    :math:`y = \sum_i x_i` exactly: :math:`\beta^* = (1, \dots, 1)`, noiseless, :math:`E[y^2] = 1`.
    Only :math:`x_k` correlates with ``y`` (:math:`b = e_k`), so a star with single-feature spokes is
    stuck at excess 1/2 (for :math:`k \ge 2`), while the cyclic path goes
    :math:`1/2 \to 1/3 \to \dots \to 0` (exact for ``k = 3`` by depth 24). Latent
    ``z = (Z_1, ..., Z_k)``.

    These are population values: the agents seeing :math:`x_1, \dots, x_{k-1}` predict exactly 0 in the
    population. On samples their tiny nonzero coefficients (pure sampling noise) hand those features
    on: the star hub receives every direction and is exact (excess 0 with these noiseless labels);
    on the cyclic path a later agent receives one random mixture of the hidden directions, so its
    excess is a random number in :math:`[0, \text{population value}]` that does not shrink with ``m``
    (``k = 3``, depth 3, ``m = 1e5``: from 1e-3 to 0.49 over 10 samples, median 0.28) until the path
    has covered every direction (depth 24: exact). See :func:`zero_message_agents`.

    Parameters
    ----------
    k : int >= 1

    Returns
    -------
    PopulationModel
        The model.

    Examples
    --------
    >>> pm = make_differential(3)
    >>> pm.b.tolist(), pm.beta_star.round(9).tolist()
    ([0.0, 0.0, 1.0], [1.0, 1.0, 1.0])
    """
    k = check_scalar_int(k, "k", low=1)
    A = np.eye(k) - np.eye(k, k=-1)
    c = np.zeros(k)
    c[-1] = 1.0
    return PopulationModel.from_latent(A, c, 0.0, f"differential(k={k})")


def make_leverage_design(d, q, sigma=1.0, beta=None):
    r"""A heavy-leverage design: one sparse feature, the others Gaussian.

    :math:`x_1 = s\,\xi/\sqrt{q}` with :math:`\xi \sim \mathrm{Bernoulli}(q)` and an independent
    random sign :math:`s`, so :math:`x_1` is nonzero with probability :math:`q` and
    :math:`E x_1 = 0`, :math:`E x_1^2 = 1`; :math:`x_2, \dots, x_d \sim N(0, 1)` i.i.d.;
    :math:`y = \beta^\top x + \sigma\varepsilon`. Exactly :math:`\Sigma = I_d`, :math:`b = \beta`,
    :math:`E[y^2] = \|\beta\|^2 + \sigma^2`, :math:`\beta^* = \beta`. The few rows with
    :math:`x_1 \ne 0` carry all the information about :math:`\beta_1`: uniform row subsampling of
    ``k`` rows misses them when :math:`kq \lesssim 1`, an oblivious sketch does not.

    Parameters
    ----------
    d : int >= 1
    q : float in (0, 1]
    sigma : float >= 0, default=1.0
    beta : array-like of shape (d,), optional
        Default ``np.ones(d)``.

    Returns
    -------
    PopulationModel
        The model (its sampler draws the sparse feature as above).

    Examples
    --------
    >>> pm = make_leverage_design(3, 0.01)
    >>> pm.Sigma.tolist() == np.eye(3).tolist(), pm.y_var
    (True, 4.0)
    """
    d = check_scalar_int(d, "d", low=1)
    q = check_scalar_float(q, "q", low=0.0, high=1.0, closed="right")
    sigma = check_scalar_float(sigma, "sigma", low=0.0)
    if beta is None:
        beta = np.ones(d)
    else:
        beta = check_array_1d(beta, "beta", dtype="float")
        if beta.shape != (d,):
            raise ValueError(f"'beta' must have shape ({d},); got {beta.shape}.")

    def sampler(m, rng):
        X = np.empty((m, d))
        hit = rng.random(m) < q
        sign = np.where(rng.random(m) < 0.5, -1.0, 1.0)
        X[:, 0] = np.where(hit, sign / np.sqrt(q), 0.0)
        X[:, 1:] = rng.standard_normal((m, d - 1))
        y = X @ beta
        if sigma > 0:
            y = y + sigma * rng.standard_normal(m)
        return X, y

    with np.errstate(over="ignore", invalid="ignore"):
        y_var = float(beta @ beta) + sigma * sigma
    _check_moments_finite(np.eye(d), beta, y_var, "'beta' or 'sigma'")
    pm = PopulationModel(np.eye(d), beta.copy(), y_var, sigma * sigma,
                         f"leverage_design(d={d}, q={q:g})", sampler=sampler)
    pm.q = q
    return pm


def make_gaussian(d, kind="ar1", rho=0.5, beta=None, sigma=1.0):
    r"""Gaussian design with a structured covariance and a well-specified linear model.

    ``kind="ar1"``: :math:`\Sigma_{ij} = \rho^{|i-j|}` (:math:`|\rho| < 1`); ``kind="factor"``:
    :math:`\Sigma = \rho\,\mathbf 1\mathbf 1^\top + (1-\rho) I` (equicorrelated, :math:`0 \le \rho < 1`),
    i.e. :math:`x_j = \sqrt{\rho} Z + \sqrt{1-\rho}\,u_j`. Then :math:`y = \beta^\top x + \sigma\varepsilon`:
    :math:`b = \Sigma\beta`, :math:`E[y^2] = \beta^\top\Sigma\beta + \sigma^2`, :math:`\beta^* = \beta`.
    Latent loadings: the Cholesky factor of :math:`\Sigma` (ar1) or the factor form (factor).

    Parameters
    ----------
    d : int >= 1
    kind : {"ar1", "factor"}, default="ar1"
    rho : float, default=0.5
    beta : array-like of shape (d,), optional
        Default ``np.ones(d) / sqrt(d)``.
    sigma : float >= 0, default=1.0

    Returns
    -------
    PopulationModel
        The model.

    Examples
    --------
    >>> pm = make_gaussian(3, "ar1", rho=0.5, beta=[1.0, 0.0, 0.0], sigma=1.0)
    >>> pm.Sigma[0].tolist(), pm.b.tolist(), pm.y_var
    ([1.0, 0.5, 0.25], [1.0, 0.5, 0.25], 2.0)
    """
    d = check_scalar_int(d, "d", low=1)
    check_option(kind, "kind", ("ar1", "factor"))
    if kind == "ar1":
        rho = check_scalar_float(rho, "rho", low=-1.0, high=1.0, closed="neither")
        idx = np.arange(d)
        A = np.linalg.cholesky(rho ** np.abs(idx[:, None] - idx[None, :]))
    else:
        rho = check_scalar_float(rho, "rho", low=0.0, high=1.0, closed="left")
        A = np.hstack([np.full((d, 1), np.sqrt(rho)), np.sqrt(1.0 - rho) * np.eye(d)])
    sigma = check_scalar_float(sigma, "sigma", low=0.0)
    if beta is None:
        beta = np.ones(d) / np.sqrt(d)
    else:
        beta = check_array_1d(beta, "beta", dtype="float")
        if beta.shape != (d,):
            raise ValueError(f"'beta' must have shape ({d},); got {beta.shape}.")
    with np.errstate(over="ignore", invalid="ignore"):
        c = A.T @ beta
    pm = PopulationModel._latent(A, c, sigma, f"gaussian(d={d}, kind={kind}, rho={rho:g})", "'beta' or 'sigma'")
    pm.beta_star = beta.copy()  # exact (pinv would only add rounding)
    return pm


def load_diabetes_agents():
    """scikit-learn's diabetes data (442 x 10), every column and ``y`` standardised (mean 0, sd 1).

    The module's real data set: ten single-feature agents. Requires scikit-learn (the data ship
    with it; no download).

    Returns
    -------
    X : ndarray of shape (442, 10), float64
    y : ndarray of shape (442,), float64
    """
    from sklearn.datasets import load_diabetes

    data = load_diabetes()
    X = np.asarray(data.data, dtype=np.float64)
    y = np.asarray(data.target, dtype=np.float64)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = (y - y.mean()) / y.std()
    return X, y
