r"""VoGCAM: variational Voronoi Gaussian coordinate-ascent maximisation for log-Gaussian Cox processes.

Model (Møller, Syversveen & Waagepetersen 1998): given :math:`\lambda(s) = e^{f(s)}` the points form a
Poisson process on the window ``W``, with :math:`f \sim GP(z(s)^\top\beta, \sigma^2\rho_\phi)`, Matérn
:math:`\rho_\phi` (nu = 1/2 or 3/2). Most of the method is *reconstructed* from the abstract of the
target paper (NeurIPS 2026) and the prior work it builds on (the point_process reconstruction notes, section 1):

* **Voronoi quadrature** (Berman & Turner 1992): nodes = distinct points + a dummy grid, weights = clipped
  Voronoi areas, so :math:`\ell(f) = y^\top f - \sum_j w_j e^{f_j}` (:mod:`._quadrature`).
* **NNGP prior** (Vecchia 1988; Datta et al. 2016) at the nodes, sparse precision :math:`\tilde Q`
  (:mod:`._nngp`).
* **Gaussian variational family** :math:`q = N(m, S)` (Opper & Archambeau 2009; Challis & Barber 2013)
  with the closed-form ELBO

  .. math::

     \mathcal L = y^\top m - \sum_j w_j e^{m_j + S_{jj}/2}
       - \tfrac12\big[\operatorname{tr}(\tilde Q S) + (m - Z\beta)^\top \tilde Q (m - Z\beta) - N
       + \log|\tilde K| - \log|S|\big].

* **Coordinate ascent** [reconstructed], each sweep: a Newton m-block with step halving (the ELBO never
  drops), a fixed-point S-block :math:`s \leftarrow \operatorname{diag}((\tilde Q + \operatorname{diag}
  (w e^{m + s/2}))^{-1})` kept in sparse *precision form* :math:`S = P^{-1}` (damped in
  :math:`\lambda`-space when a step would lower the ELBO; :mod:`._sparse` gives ``diag S``, ``log|P|`` and
  ``S`` on the pattern by sparse Cholesky + Takahashi), closed-form :math:`\beta` (GLS on ``m``) and
  :math:`\sigma^2`, and a bounded Brent search on :math:`\log\phi` (accepted only if it does not lower
  the ELBO).

For fixed hyperparameters the ELBO is strictly concave in (m, S), so its maximiser is unique (point_process reconstruction notes, T5);
the block updates never lower it (T7). Coordinates are rescaled internally to the unit box (largest side
1); every fitted quantity is reported in the user's units.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.optimize import minimize_scalar
from scipy.spatial import cKDTree
from scipy.stats import norm
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from accel.backend import RESOLVE_OPTIONS, resolve

from .._anytime import Interruptible
from .._validation import (
    check_array,
    check_option,
    check_random_state,
    check_scalar_float,
    check_scalar_int,
)
from ._kernels import predict_rows
from ._nngp import NU_CODES, NNGPStructure, nngp_block_terms_from_distances
from ._quadrature import build_quadrature, check_points, duplicates_reported, warn_duplicates
from ._sparse import SparseCholesky
from ._window import MAX_COORD, Window
from numbers import Integral, Real
from sklearn.utils._param_validation import Interval, Options, StrOptions
from .._validation import OrderedStrOptions, RANDOM_STATE_CONSTRAINTS, validate_params

__all__ = ["VoGCAM", "HyperparameterWarning", "elbo_terms"]

#: Newton step clipped to this sup-norm (keeps exp(m + s/2) finite; pitfall of the point_process reconstruction notes, "overflow").
MAX_NEWTON_STEP = 5.0
#: Step halvings tried before a block gives up (the state is then left unchanged).
MAX_HALVINGS = 40
#: Up to this many nodes the linear algebra is dense (LAPACK) by default (the supernodal sparse path is as fast
#: from about 100 nodes and 5-9x faster at 1000-2000 nodes).
DENSE_MAX_NODES = 200
#: Largest number of nodes of the dense torch path (an N x N float64 matrix and its inverse: 6.4 GB at 2e4).
TORCH_MAX_NODES = 20000
#: Relative ELBO drop tolerated inside the S fixed point before damping (point_process reconstruction notes: 1e-10 |ELBO|).
S_DAMP_RTOL = 1e-10
#: Floor of the variance when it is optimised (a collapse is reported by a warning).
VARIANCE_FLOOR = 1e-8
#: A fitted variance below this triggers the collapse warning.
VARIANCE_COLLAPSE = 1e-4
#: A range within this relative distance (in log scale) of a bound triggers the boundary warning.
BOUND_RTOL = 1e-2
HYPERS = ("mean", "variance", "length_scale")
#: Relative round-off level of the ELBO sums: smaller changes are not distinguishable from zero.
ROUNDOFF_RTOL = 1e-13
#: Half-width (in log range) of the Brent bracket around the current range, and Brent's x tolerance.
PHI_BRACKET = 0.3
PHI_XATOL = 1e-4
#: Fewest points for a minimum-contrast fit of (sigma^2, phi) (below it K's estimate is mostly noise);
#: ``hyperparameters="auto"`` falls back to the ELBO there.
MIN_CONTRAST_MIN_POINTS = 10
#: Arrays of the factor's size alive at once in a sparse fit (the factor and selected inverse of the current
#: and of a trial point), for the memory check before the first factorisation.
SPARSE_FACTOR_COPIES = 4
#: A sparse fit whose estimated factor memory exceeds this fraction of the machine's memory is refused.
MEMORY_BUDGET_FRACTION = 0.8
#: S fixed-point steps per sweep while the hyperparameters still move (the ELBO rises with each).
FIXED_POINT_STEPS_WHILE_MOVING = 2
#: Below this relative ELBO change per sweep the S fixed point runs to its full tolerance ...
FULL_FIXED_POINT_RTOL = 1e-6
#: ... provided the hyperparameters (log sigma^2, log phi) moved by less than this in the last sweep.
THETA_MOVING_TOL = 1e-4
#: Sweeps between two Aitken extrapolations of the hyperparameters (every 2 sweeps was tried: over nine
#: fits of 1.9k-18k nodes the total CPU time was the same within noise, 0.6x-1.6x per fit).
AITKEN_EVERY = 3
#: Newton steps of the m-block per sweep while the hyperparameters move (full tolerance afterwards).
NEWTON_STEPS_WHILE_MOVING = 2
#: Brent's tolerance on log(phi) while the hyperparameters move (PHI_XATOL afterwards).
PHI_XATOL_MOVING = 1e-3
#: smallest half-width of the range step's first bracket in log phi: near convergence the bracket is a few
#: times the last change of log phi (Brent then needs fewer evaluations; an optimum at the edge widens it)
PHI_BRACKET_MIN = 0.1
#: a variance below this that fell on two sweeps in a row is tried at the boundary ``VARIANCE_FLOOR`` (a
#: collapsing variance converges to 0 only linearly in log sigma^2: a constant factor per sweep)
VARIANCE_COLLAPSE_TRY = 0.1


class HyperparameterWarning(UserWarning):
    """A hyperparameter ended at a bound, or the variance collapsed."""


def elbo_terms(y, w, m, s, Qdata_dot_S, r_Q_r, logdetK, logdetS, N):
    """The closed-form ELBO from its pieces (``Qdata_dot_S = tr(Q S)``, ``r_Q_r = r^T Q r``)."""
    lam = w * np.exp(m + 0.5 * s)
    return float(y @ m - lam.sum() - 0.5 * (Qdata_dot_S + r_Q_r - N + logdetK - logdetS))


class _DenseFactor:
    """Dense twin of :class:`SparseCholesky` (LAPACK), same interface."""

    def __init__(self, indptr, indices, N):
        self.indptr, self.indices, self.N = indptr, indices, N
        self.rows = np.repeat(np.arange(N), np.diff(indptr))
        self.c = None
        self.S = None

    def clone(self):
        return _DenseFactor(self.indptr, self.indices, self.N)

    def factor(self, data):
        P = np.zeros((self.N, self.N))
        P[self.rows, self.indices] = data
        try:
            self.c = sla.cho_factor(P, lower=True, check_finite=True)
        except (sla.LinAlgError, ValueError) as exc:
            raise np.linalg.LinAlgError(str(exc)) from None
        self.S = None
        return self

    def logdet(self):
        return float(2.0 * np.sum(np.log(np.diag(self.c[0]))))

    def solve(self, b):
        return sla.cho_solve(self.c, b)

    def _inv(self):
        if self.S is None:
            S = sla.cho_solve(self.c, np.eye(self.N))
            self.S = 0.5 * (S + S.T)
        return self.S

    def diag_inverse(self):
        return np.diag(self._inv()).copy()

    def inverse_on_pattern(self):
        return self._inv()[self.rows, self.indices]

    def inverse_entries(self, rows, cols):
        return self._inv()[rows, cols]

    def sample(self, z):
        """x with cov P^{-1}: solve L^T x = z."""
        L = np.tril(self.c[0])
        return sla.solve_triangular(L, z, lower=True, trans="T")


class _ScaledFactor:
    """The factor of ``P / c2`` from a factor of ``P`` (so its inverse is ``c2 P^{-1}``)."""

    def __init__(self, fac, c2):
        self.inner = fac.inner if isinstance(fac, _ScaledFactor) else fac
        self.c2 = c2 * (fac.c2 if isinstance(fac, _ScaledFactor) else 1.0)

    def diag_inverse(self):
        return self.c2 * self.inner.diag_inverse()

    def inverse_on_pattern(self):
        return self.c2 * self.inner.inverse_on_pattern()

    def inverse_entries(self, rows, cols):
        return self.c2 * self.inner.inverse_entries(rows, cols)

    def solve(self, b):
        return self.c2 * self.inner.solve(b)

    def logdet(self):
        return self.inner.logdet() - self.inner.N * math.log(self.c2)

    def sample_into(self, z):
        return math.sqrt(self.c2) * _sample(self.inner, z)


def _sample(fac, z):
    """x ~ N(0, P^{-1}) from standard normal z, for any factor type."""
    if isinstance(fac, _ScaledFactor):
        return fac.sample_into(z)
    if isinstance(fac, _DenseFactor):
        return fac.sample(z)
    return fac.sample(z)



def _memory_budget():
    """``MEMORY_BUDGET_FRACTION`` of the physical memory in bytes (inf where the platform does not say)."""
    import os

    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return math.inf
    return MEMORY_BUDGET_FRACTION * float(total) if total > 0 else math.inf

class VoGCAM(BaseEstimator):
    r"""Variational inference for a log-Gaussian Cox process by Voronoi quadrature, an NNGP prior and
    coordinate ascent on the closed-form ELBO [reconstructed from the target paper's abstract].

    Parameters
    ----------
    window : tuple (xmin, xmax, ymin, ymax), (V, 2) polygon, Window or None, default=None
        The observation window; ``None`` uses the bounding box of the points.
    kernel : "matern", default="matern"
    nu : {0.5, 1.5}, default=0.5
        Matérn smoothness (0.5 is the exponential covariance).
    variance : float, default=1.0
        Initial (or fixed) prior variance :math:`\sigma^2`.
    length_scale : float or "auto", default="auto"
        Initial (or fixed) range :math:`\phi` in the user's units; ``"auto"`` is 0.1 * diameter(W).
    n_neighbors : int, default=15
        NNGP neighbours ``k``.
    prior : {"nngp", "dense"}, default="nngp"
        ``"dense"``: the exact GP (NNGP with ``k = N - 1``; for small ``N``).
    covariance : {"full", "diag"}, default="full"
        Full ``S`` (sparse precision form) or mean field.
    n_dummy : "auto" or int, default="auto"
        Dummy points: ``"auto"`` is a ``g x g`` grid, ``g = max(16, ceil(2 sqrt(n)))``, lowered so that
        the nodes number at most 50,000 (``AUTO_NODE_BUDGET``) or ``n + 256`` for larger patterns.
    optimize_hyperparameters : tuple, default=("mean", "variance", "length_scale")
        Which of :math:`\beta`, :math:`\sigma^2`, :math:`\phi` are updated; ``()`` freezes all.
    length_scale_bounds : "auto" or (low, high), default="auto"
        ``"auto"``: [0.01, 2] * diameter(W) (user units).
    max_iter : int, default=200
        Sweeps.
    tol : float, default=1e-8
        Stop when :math:`|\Delta\mathcal L| < tol (1 + |\mathcal L|)`.
    newton_max_iter, fixed_point_max_iter : int, default=20
    ordering : {"coord", "maxmin", "random"}, default="coord"
        NNGP node ordering.
    solver : {"auto", "dense", "sparse"}, default="auto"
        Linear algebra: dense LAPACK (``N <= 200`` under "auto") or the numba supernodal sparse Cholesky.
    backend : {"auto", "numpy", "torch", "numba"}, default="numpy"
        ``"numpy"`` (or ``"numba"``): the CPU path. ``"torch"``: the dense linear algebra (Cholesky,
        solves, the inverse) runs in torch float64 on ``device`` (:class:`accel.point_process.DenseTorchFactor`),
        for moderate ``N`` (up to ``TORCH_MAX_NODES``); the sparse solver is numpy/numba only. ``"auto"``
        picks torch when ``X`` or ``covariates`` is a torch tensor or ``device`` names an accelerator (and
        the dense torch path applies), and the CPU path otherwise; see the "Backends: one rule" section of
        the scaling page.
    device : None, str or torch.device
        torch device (``None``: CUDA when available, else CPU).
    random_state : None, int or Generator
        For random dummies / orderings and the default of :meth:`sample_posterior`.
    verbose : int, default=0
    hyperparameters : {"auto", "elbo", "laplace", "min_contrast"}, default="auto"
        How :math:`(\sigma^2, \phi)` are chosen (among those in ``optimize_hyperparameters``).
        ``"auto"`` is ``"min_contrast"`` without covariates and with at least 10 points (the method that
        recovers variance and range best on the simulated benchmark of docs/point_process.md) unless
        ``hyperparameter_start="min_contrast"``, else ``"elbo"``; ``hyperparameter_method_`` says which ran.
        ``"elbo"`` maximises the ELBO over them with (m, S) (variational hyperparameter learning, which
        can under-estimate :math:`\sigma^2` where q is far from the posterior; on simulated fields with
        :math:`\sigma^2 = 2`, range 0.1 its median range is 1.55x too long, its variance unbiased:
        docs/point_process.md); ``"min_contrast"`` fixes them at :func:`lgcp_min_contrast` (spatstat's
        ``kppm`` method on K) and fits only the mean and q; ``"laplace"`` maximises the Laplace
        approximation of the evidence (mode by Newton on the same factorisation, beta profiled) by
        Nelder-Mead, then fits the mean and q at those values [project addition]. With covariates, the minimum contrast uses the
        inhomogeneous K of a Poisson fit (covariates must then be callable).
    hyperparameter_start : {"given", "min_contrast"}, default="given"
        Start of the ELBO ascent: ``variance`` / ``length_scale`` as given, or the minimum-contrast fit.

    Attributes
    ----------
    nodes_, weights_, counts_ : ndarray
        Quadrature nodes (N, 2), weights (N,) and counts (N,), user units.
    mean_, var_ : ndarray (N,)
        Posterior mean and variance of the log-intensity at the nodes (user units).
    coef_ : ndarray (p,)
        :math:`\beta`; ``coef_[0]`` is the intercept (log-intensity per user unit area).
    variance_, length_scale_ : float
        The hyperparameters chosen by ``hyperparameters``. The ELBO's and the Laplace evidence's
        over-estimate the range on strong short-range fields (about 1.5x at sigma^2 = 2, range 0.1); the
        minimum contrast (the default where it applies) recovers both there; docs/point_process.md has the
        measurements.
    elbo_ : float
    elbo_history_ : ndarray
        ELBO after each sweep (the first entry is the initial state).
    elbo_blocks_ : ndarray
        ELBO after every block update.
    n_iter_ : int
    converged_ : bool
    interrupted_ : bool
        Whether an interrupt (Ctrl-C) stopped the sweeps: the fit then keeps the state at the start
        of the interrupted sweep (no final pass) and an ``InterruptedFitWarning`` says so.
    min_contrast_ : MinContrastFit or None
        The minimum-contrast fit used (``hyperparameters`` or ``hyperparameter_start`` "min_contrast").
    laplace_log_evidence_ : float or None
        The maximised Laplace log evidence (``hyperparameters="laplace"``).
    hyperparameter_method_ : str
        The method ``hyperparameters`` resolved to ("min_contrast", "elbo" or "laplace").
    backend_ : {"numpy", "torch"}
        The core that ran the linear algebra (``backend`` resolved).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(size=(100, 2))
    >>> est = VoGCAM(window=(0, 1, 0, 1), optimize_hyperparameters=("mean",), n_dummy=64).fit(X)
    >>> bool(abs(est.expected_count() - 100) < 10)
    True
    """

    _parameter_constraints: dict = {
        "backend": [OrderedStrOptions(("auto", "numpy", "torch", "numba"))],
        "covariance": [OrderedStrOptions(("full", "diag"))],
        "device": "no_validation",  # None, a str or a torch.device: resolved (and checked) by the backend layer
        "fixed_point_max_iter": [Interval(Integral, 1, None, closed="left")],
        "hyperparameter_start": [OrderedStrOptions(("given", "min_contrast"))],
        "hyperparameters": [OrderedStrOptions(("auto", "elbo", "laplace", "min_contrast"))],
        "kernel": [OrderedStrOptions(("matern",))],
        "length_scale": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "length_scale_bounds": [OrderedStrOptions(("auto",)), tuple, list],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "n_dummy": "no_validation",  # "auto" or an int: checked in fit
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "newton_max_iter": [Interval(Integral, 1, None, closed="left")],
        "nu": [Options(Real, {0.5, 1.5})],
        "optimize_hyperparameters": [tuple, list],
        "ordering": [OrderedStrOptions(("coord", "maxmin", "random"))],
        "prior": [OrderedStrOptions(("nngp", "dense"))],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "solver": [OrderedStrOptions(("auto", "dense", "sparse"))],
        "tol": [Interval(Real, 0, None, closed="left")],
        "variance": [Interval(Real, 0, None, closed="neither")],
        "verbose": [Interval(Integral, 0, None, closed="left")],
        "window": "no_validation",  # a tuple, a (V, 2) polygon, a Window or None: checked when the window is built
    }

    def __init__(self, window=None, kernel="matern", nu=0.5, variance=1.0, length_scale="auto", n_neighbors=15,
                 prior="nngp", covariance="full", n_dummy="auto", optimize_hyperparameters=HYPERS,
                 length_scale_bounds="auto", max_iter=200, tol=1e-8, newton_max_iter=20, fixed_point_max_iter=20,
                 ordering="coord", solver="auto", backend="numpy", random_state=None, verbose=0,
                 hyperparameters="auto", hyperparameter_start="given", device=None):
        self.window = window
        self.kernel = kernel
        self.nu = nu
        self.variance = variance
        self.length_scale = length_scale
        self.n_neighbors = n_neighbors
        self.prior = prior
        self.covariance = covariance
        self.n_dummy = n_dummy
        self.optimize_hyperparameters = optimize_hyperparameters
        self.length_scale_bounds = length_scale_bounds
        self.max_iter = max_iter
        self.tol = tol
        self.newton_max_iter = newton_max_iter
        self.fixed_point_max_iter = fixed_point_max_iter
        self.ordering = ordering
        self.solver = solver
        self.backend = backend
        self.random_state = random_state
        self.verbose = verbose
        self.hyperparameters = hyperparameters
        self.hyperparameter_start = hyperparameter_start
        self.device = device

    # ================================================================== validation
    def _validate(self):
        check_option(self.kernel, "kernel", ("matern",))
        if isinstance(self.nu, (bool, np.bool_)) or self.nu not in NU_CODES:
            raise ValueError(f"'nu' must be one of {{0.5, 1.5}}; got {self.nu!r}.")
        check_scalar_float(self.variance, "variance", low=0.0, closed="neither")
        if not (isinstance(self.length_scale, str) and self.length_scale == "auto"):
            if isinstance(self.length_scale, str):
                raise ValueError(f"'length_scale' must be a positive float or 'auto'; got {self.length_scale!r}.")
            check_scalar_float(self.length_scale, "length_scale", low=0.0, closed="neither")
        check_scalar_int(self.n_neighbors, "n_neighbors", low=1)
        check_option(self.prior, "prior", ("nngp", "dense"))
        check_option(self.covariance, "covariance", ("full", "diag"))
        opt = self.optimize_hyperparameters
        if isinstance(opt, str) or not all(isinstance(o, str) and o in HYPERS for o in opt):
            raise ValueError(f"'optimize_hyperparameters' must be a tuple of names from {HYPERS}; got {opt!r}.")
        check_scalar_int(self.max_iter, "max_iter", low=1)
        check_scalar_float(self.tol, "tol", low=0.0)
        check_scalar_int(self.newton_max_iter, "newton_max_iter", low=1)
        check_scalar_int(self.fixed_point_max_iter, "fixed_point_max_iter", low=1)
        check_option(self.ordering, "ordering", ("coord", "maxmin", "random"))
        check_option(self.solver, "solver", ("auto", "dense", "sparse"))
        check_option(self.backend, "backend", RESOLVE_OPTIONS)
        if self.backend == "torch" and self.solver == "sparse":
            raise ValueError("backend='torch' runs the dense solver only; got solver='sparse' (use solver='auto' "
                             "or 'dense', or backend='numpy' for the sparse path).")
        check_scalar_int(self.verbose, "verbose", low=0)
        check_option(self.hyperparameters, "hyperparameters", ("auto", "elbo", "laplace", "min_contrast"))
        check_option(self.hyperparameter_start, "hyperparameter_start", ("given", "min_contrast"))

    def _covariate_matrix(self, cov, coords_user, n_rows, name="covariates"):
        """(n_rows, p) design: intercept column + user covariates."""
        ones = np.ones((n_rows, 1))
        if cov is None:
            return ones
        if callable(cov):
            Zc = np.asarray(cov(coords_user), dtype=np.float64)
        else:
            Zc = np.asarray(cov, dtype=np.float64)
        if Zc.ndim == 1:
            Zc = Zc[:, None]
        if Zc.ndim != 2 or Zc.shape[0] != n_rows:
            raise ValueError(f"'{name}' must give an array of shape ({n_rows}, p); got {Zc.shape}.")
        if not np.all(np.isfinite(Zc)):
            raise ValueError(f"'{name}' must contain only finite values.")
        return np.column_stack([ones, Zc])

    # ================================================================== fit
    def fit(self, X, covariates=None):
        """Fit to the point pattern ``X`` (n, 2).

        Parameters
        ----------
        X : array-like, shape (n, 2)
            Points in the window (boundary allowed; at least one; duplicates merged into counts, with a
            warning).
        covariates : callable or array-like, optional
            A callable mapping an ``(m, 2)`` array of coordinates (user units) to ``(m, p)``, e.g.
            :class:`RasterCovariates`; or an ``(N, p)`` array of values at the quadrature nodes (the
            nodes of ``build_quadrature(X, window, n_dummy)``). An intercept is always added.

        Returns
        -------
        self
            The fitted estimator.
        """
        validate_params(self)
        self._validate()
        backend = resolve(self.backend, self.device, (X, covariates))
        if backend == "torch" and self.solver == "sparse":  # "auto": the torch core is dense only
            backend = "numpy"
        if self.window is None:
            Xa = check_array(X, "X", allow_empty=True, finite=False)
            if len(Xa) < 2:
                raise ValueError(f"'X' needs at least 2 points when 'window' is None; got {len(Xa)}.")
            if Xa.ndim != 2 or Xa.shape[1] != 2 or not np.all(np.isfinite(Xa)):
                raise ValueError("'window' is None: X must be an (n >= 2, 2) finite array to take its bounding box.")
            lo, hi = Xa.min(0), Xa.max(0)
            if np.any(hi <= lo):
                raise ValueError("'window' is None and the points' bounding box is degenerate; pass a window.")
            win = Window.rectangle(lo[0], hi[0], lo[1], hi[1])
        else:
            win = Window.from_any(self.window)
        X = check_points(X, win)
        if len(X) == 0:
            raise ValueError("'X' needs at least 1 point to fit an intensity; got 0 (n = 0).")
        warn_duplicates(X, "the copies are merged into one node with their count")
        rng = check_random_state(self.random_state)
        quad = build_quadrature(X, win, n_dummy=self.n_dummy, random_state=rng)
        # ---- rescale to the unit box
        xmin, xmax, ymin, ymax = win.bounds
        self.shift_ = np.array([xmin, ymin])
        self.scale_ = float(max(xmax - xmin, ymax - ymin))
        c = self.scale_
        U = (quad.nodes - self.shift_) / c
        w = quad.weights / c**2
        y = quad.counts
        N = len(U)
        Z = self._covariate_matrix(covariates, quad.nodes, N)
        if np.linalg.matrix_rank(Z) < Z.shape[1]:
            raise ValueError("the covariates are collinear with each other or with the intercept at the nodes.")
        self.n_covariates_ = Z.shape[1] - 1
        self._cov_callable = covariates if callable(covariates) else None
        diam_u = win.diameter / c
        if isinstance(self.length_scale_bounds, str):
            check_option(self.length_scale_bounds, "length_scale_bounds", ("auto",))
            lo_b, hi_b = 0.01 * diam_u, 2.0 * diam_u
        else:
            try:
                lo_b, hi_b = (float(v) / c for v in self.length_scale_bounds)
            except (TypeError, ValueError):
                raise ValueError(f"'length_scale_bounds' must be 'auto' or (low, high); got {self.length_scale_bounds!r}.") from None
            if not (0 < lo_b < hi_b and np.isfinite(hi_b)):
                raise ValueError(f"'length_scale_bounds' must satisfy 0 < low < high; got {self.length_scale_bounds!r}.")
        phi = 0.1 * diam_u if isinstance(self.length_scale, str) else float(self.length_scale) / c
        sigma2 = float(self.variance)
        self._opt = set(self.optimize_hyperparameters)
        self.min_contrast_ = None
        method = self.hyperparameters
        if method == "auto":
            # the method that recovers (sigma^2, phi) best on the simulated benchmark (docs/point_process.md,
            # "Recovery"), where it applies: no covariates and at least MIN_CONTRAST_MIN_POINTS points
            # (a minimum-contrast *start* asks for the ELBO ascent from there)
            method = ("min_contrast" if (covariates is None and len(X) >= MIN_CONTRAST_MIN_POINTS
                                         and self.hyperparameter_start == "given"
                                         and self._opt & {"variance", "length_scale"}) else "elbo")
        self.hyperparameter_method_ = method
        if method == "min_contrast" or self.hyperparameter_start == "min_contrast":
            mc = self._min_contrast(X, win, covariates)
            self.min_contrast_ = mc
            if "variance" in self._opt:
                sigma2 = max(float(mc.variance), VARIANCE_FLOOR)
            if "length_scale" in self._opt:
                phi = float(mc.length_scale) / c
            if method == "min_contrast":
                self._opt -= {"variance", "length_scale"}
        if "length_scale" in self._opt:
            phi = float(np.clip(phi, lo_b, hi_b))
        k = N - 1 if self.prior == "dense" else min(int(self.n_neighbors), N - 1)
        st = NNGPStructure(U, nu=self.nu, n_neighbors=k, ordering=self.ordering, random_state=rng)
        solver = self.solver
        if backend == "torch" and N > TORCH_MAX_NODES and self.backend == "auto":
            backend = "numpy"  # the torch core is dense: "auto" keeps the CPU path
        if backend == "torch":
            if N > TORCH_MAX_NODES:
                raise ValueError(f"backend='torch' is dense: {N} quadrature nodes exceed TORCH_MAX_NODES = "
                                 f"{TORCH_MAX_NODES}; lower 'n_dummy' or use backend='numpy'.")
            solver = "dense"
        elif solver == "auto":
            solver = "dense" if (N <= DENSE_MAX_NODES or self.prior == "dense") else "sparse"
        if backend == "torch":
            from accel.point_process import DenseTorchFactor

            base = DenseTorchFactor(st.Q_indptr, st.Q_indices, N, device=self.device)
        elif solver == "dense":
            base = _DenseFactor(st.Q_indptr, st.Q_indices, N)
        else:
            Qpat = sp.csr_matrix((np.ones(len(st.Q_indices)), st.Q_indices, st.Q_indptr), shape=(N, N))
            base = SparseCholesky(Qpat, coords=U, ordering="nd")
            # the symbolic analysis sized the factor: check the numeric work fits before the first factorisation
            need = SPARSE_FACTOR_COPIES * 8.0 * base.n_stored
            budget = _memory_budget()
            if need > budget:
                nd = int(quad.is_data.sum())
                raise ValueError(
                    f"'n_dummy': {N} quadrature nodes ({nd} distinct points and {N - nd} dummies) need about "
                    f"{need / 2**30:.1f} GiB for the sparse factor and its selected inverse ({base.n_stored} stored "
                    f"entries x {SPARSE_FACTOR_COPIES} arrays of 8 bytes), more than the {budget / 2**30:.1f} GiB "
                    f"budget ({MEMORY_BUDGET_FRACTION:g} of this machine's memory); lower 'n_dummy'.")
        self._st, self._base, self._solver = st, base, solver
        self._backend = backend
        self._U, self._w, self._y, self._Z = U, w, y, Z
        self._quad, self.window_ = quad, win
        self._phi_bounds = (lo_b, hi_b)
        from threadpoolctl import threadpool_limits

        # one BLAS thread: the dense factorisations are moderate and multithreaded BLAS degrades badly
        # when the cores are shared (the numba kernels are parallel already)
        with threadpool_limits(limits=1, user_api="blas"):
            self.laplace_log_evidence_ = None
            if method == "laplace" and self._opt & {"variance", "length_scale"}:
                sigma2, phi = self._laplace_hyperparameters(sigma2, phi)
                self._opt -= {"variance", "length_scale"}
            self._run(sigma2, phi, rng)
        return self

    def _laplace_mode(self, prior, f, beta, max_iter=50):
        """Mode of ``y'f - sum w e^f - (f - Z beta)'Q(f - Z beta)/2`` over (f, beta) by Newton in f with
        the GLS beta, on the estimator's factor; returns (f, beta, log Laplace evidence)."""
        y, w, Z = self._y, self._w, self._Z

        def psi(ff, bb):
            r = ff - Z @ bb
            return float(y @ ff - np.sum(w * np.exp(ff)) - 0.5 * r @ (prior.Q @ r))

        cur = psi(f, beta)
        for _ in range(max_iter):
            lam = w * np.exp(f)
            g = y - lam - prior.Q @ (f - Z @ beta)
            fac = self._factor(prior, lam)
            d = fac.solve(g)
            dn = float(np.max(np.abs(d)))
            if dn > MAX_NEWTON_STEP:
                d *= MAX_NEWTON_STEP / dn
            tau = 1.0
            for _h in range(MAX_HALVINGS):
                fn = f + tau * d
                bn = self._beta_block(fn, prior) if "mean" in self._opt else beta
                new = psi(fn, bn)
                if np.isfinite(new) and new >= cur - ROUNDOFF_RTOL * (1.0 + abs(cur)):
                    break
                tau *= 0.5
            else:
                break
            f, beta, gain, cur = fn, bn, new - cur, new
            if abs(gain) < 1e-10 * (1.0 + abs(cur)) and dn * tau < 1e-8:
                break
        fac = self._factor(prior, w * np.exp(f))
        # log N(f; Z beta, Q^-1) + (N/2) log 2 pi - (1/2) log|Q + W| with log|Q| = -log|K|
        return f, beta, cur - 0.5 * prior.logdet - 0.5 * fac.logdet()

    def _laplace_hyperparameters(self, sigma2, phi):
        """(sigma^2, phi) maximising the Laplace approximation of the evidence (beta profiled out), by
        Nelder-Mead in (log sigma^2, log phi) from the given start [project addition]."""
        from scipy.optimize import minimize

        y, w, Z = self._y, self._w, self._Z
        n = float(y.sum())
        beta = np.zeros(Z.shape[1])
        beta[0] = math.log(max(n, 0.5) / float(w.sum()))
        state = {"f": np.full(len(y), beta[0]), "beta": beta}
        lo_b, hi_b = self._phi_bounds
        opt_v, opt_p = "variance" in self._opt, "length_scale" in self._opt
        lo = np.log([VARIANCE_FLOOR, lo_b])
        hi = np.log([50.0, hi_b])

        def neg(t):
            t = np.clip(t, lo, hi)
            s2 = float(np.exp(t[0])) if opt_v else sigma2
            ph = float(np.exp(t[1])) if opt_p else phi
            f, b, lev = self._laplace_mode(self._prior(s2, ph), state["f"], state["beta"])
            if np.isfinite(lev):
                state["f"], state["beta"] = f, b
            return -lev if np.isfinite(lev) else np.inf

        t0 = np.log([max(sigma2, 1e-3), float(np.clip(phi, lo_b, hi_b))])
        res = minimize(neg, t0, method="Nelder-Mead", options=dict(xatol=1e-3, fatol=1e-6, maxfev=200))
        t = np.clip(res.x, lo, hi)
        self.laplace_log_evidence_ = float(-res.fun)
        return (float(np.exp(t[0])) if opt_v else sigma2), (float(np.exp(t[1])) if opt_p else phi)

    def _min_contrast(self, X, win, covariates):
        """The minimum-contrast fit of (sigma^2, phi): on K, or on the inhomogeneous K of a Poisson fit."""
        from ._min_contrast import lgcp_min_contrast

        if len(X) < MIN_CONTRAST_MIN_POINTS:
            raise ValueError(f"'hyperparameters' = 'min_contrast' needs at least {MIN_CONTRAST_MIN_POINTS} points; "
                             f"got {len(X)}.")
        if covariates is None:
            with duplicates_reported():
                return lgcp_min_contrast(X, win, nu=self.nu)
        if not callable(covariates):
            raise ValueError("'hyperparameters' = 'min_contrast' with covariates needs callable covariates "
                             "(the Poisson fit's intensity is evaluated at the points).")
        pois = VoGCAM(window=win, nu=self.nu, variance=VARIANCE_FLOOR, optimize_hyperparameters=("mean",),
                      n_dummy=self.n_dummy, solver=self.solver, random_state=self.random_state)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pois.fit(X, covariates=covariates)
        with duplicates_reported():
            return lgcp_min_contrast(X, win, nu=self.nu, intensity=pois.predict_intensity(X))

    # ------------------------------------------------------------------ ELBO pieces
    def _prior(self, sigma2, phi):
        fac = self._st.factor(sigma2, phi)
        return fac

    def _elbo(self, m, st8, prior, beta):
        r = m - self._Z @ beta
        rQr = float(r @ (prior.Q @ r))
        trQS = float(prior.Q.data @ st8["Sq"])
        return elbo_terms(self._y, self._w, m, st8["s"], trQS, rQr, prior.logdet, st8["logdetS"], len(m))

    def _diag_state(self, s, Qdiag_idx, nnzQ):
        Sq = np.zeros(nnzQ)
        Sq[Qdiag_idx] = s
        return {"kind": "diag", "s": s, "Sq": Sq, "logdetS": float(np.sum(np.log(s))), "fac": None}

    def _factor(self, prior, diag_add):
        data = prior.Q.data.copy()
        data[self._st.diag_index] += diag_add
        return self._base.clone().factor(data)

    # ------------------------------------------------------------------ blocks
    def _m_block(self, m, st8, prior, beta, elbo, max_iter=None):
        y, w, Z = self._y, self._w, self._Z
        s = st8["s"]
        ytol = 1e-8 * (1.0 + np.max(np.abs(y), initial=0.0))
        mu0 = Z @ beta

        def f_m(mm):
            r = mm - mu0
            return float(y @ mm - np.sum(w * np.exp(mm + 0.5 * s)) - 0.5 * r @ (prior.Q @ r))

        fcur = f_m(m)
        gnorm = np.inf
        n_newton = 0
        n_max = int(self.newton_max_iter) if max_iter is None else min(int(max_iter), int(self.newton_max_iter))
        for _ in range(n_max):
            lam = w * np.exp(m + 0.5 * s)
            g = y - lam - prior.Q @ (m - mu0)
            gnorm = float(np.max(np.abs(g)))
            if gnorm < ytol:
                break
            n_newton += 1
            fac = self._factor(prior, lam)
            d = fac.solve(g)
            dn = np.max(np.abs(d))
            if dn > MAX_NEWTON_STEP:
                d *= MAX_NEWTON_STEP / dn
            tau = 1.0
            for _h in range(MAX_HALVINGS):
                mn = m + tau * d
                fn = f_m(mn)
                # a drop below round-off of f is not a drop (near the optimum the gain is ~|g|^2)
                if np.isfinite(fn) and fn >= fcur - ROUNDOFF_RTOL * (1.0 + abs(fcur)):
                    break
                tau *= 0.5
            else:
                break
            m, fcur = mn, max(fn, fcur) if fn < fcur else fn
        self._last_grad = gnorm
        self._newton_iters = n_newton
        return m

    def _s_block(self, m, st8, prior, beta, max_steps=None):
        w = self._w
        N = len(m)
        Qd = prior.Q.data[self._st.diag_index]
        if self.covariance == "diag":
            # per-node scalar fixed point: s = 1 / (Q_jj + w e^{m + s/2}), solved by safeguarded Newton on s
            s = st8["s"].copy()
            lo = np.zeros(N)
            hi = 1.0 / Qd
            s = np.clip(s, 1e-300, hi)
            for _ in range(100):
                e = w * np.exp(m + 0.5 * s)
                h = 1.0 / s - Qd - e
                dh = -1.0 / s**2 - 0.5 * e
                lo = np.where(h > 0, s, lo)
                hi = np.where(h < 0, s, hi)
                sn = s - h / dh
                bad = (sn <= lo) | (sn >= hi)
                sn = np.where(bad, 0.5 * (lo + hi), sn)
                if np.max(np.abs(sn - s) / np.maximum(s, 1e-300)) < 1e-14:
                    s = sn
                    break
                s = sn
            return self._diag_state(s, self._st.diag_index, len(prior.Q.data)), 0

        def evaluate(mu):
            fac = self._factor(prior, mu)
            s_new = fac.diag_inverse()
            logdetS = -fac.logdet()
            # in precision form tr(Q S) = N - mu^T diag(S)
            trQS = N - float(mu @ s_new)
            val = float(-np.sum(w * np.exp(m + 0.5 * s_new)) - 0.5 * trQS + 0.5 * logdetS)
            return fac, s_new, logdetS, val

        def cur_value(state):
            trQS = float(prior.Q.data @ state["Sq"])
            return float(-np.sum(w * np.exp(m + 0.5 * state["s"])) - 0.5 * trQS + 0.5 * state["logdetS"])

        best = cur_value(st8)
        scale = abs(self._elbo(m, st8, prior, beta)) + 1.0
        state = st8
        mu_old = state.get("mu")
        s = state["s"]
        if mu_old is None:
            # a diagonal starting state s has no precision-form mu; damp towards the mu whose diagonal
            # precision Q_jj + mu_j gives s (w e^m for the default start), so a rejected first full step
            # can still be shortened instead of leaving S at its start
            mu_old = np.maximum(1.0 / np.maximum(s, 1e-300) - Qd, 0.0)
        n_steps = 0
        self._fp_steps = []
        for _ in range(int(self.fixed_point_max_iter if max_steps is None else max_steps)):
            mu_new = w * np.exp(m + 0.5 * s)
            rho = 1.0
            accepted = None
            while rho > 1e-8:
                mu_try = mu_new if rho == 1.0 else (1 - rho) * mu_old + rho * mu_new
                try:
                    fac, s_try, ld, val = evaluate(mu_try)
                except np.linalg.LinAlgError:
                    val = -np.inf
                if val >= best - S_DAMP_RTOL * scale:
                    accepted = (fac, s_try, ld, val, mu_try)
                    break
                rho *= 0.5
            if accepted is None:
                break
            fac, s_try, ld, val, mu_try = accepted
            ds = float(np.max(np.abs(s_try - s)))
            self._fp_steps.append(ds)
            n_steps += 1
            state = {"kind": "factor", "s": s_try, "logdetS": ld, "fac": fac, "mu": mu_try, "Sq": None}
            best = max(best, val)
            s, mu_old = s_try, mu_try
            if ds < 1e-10:
                break
        if state is not st8:
            state["Sq"] = state["fac"].inverse_on_pattern()
        return state, n_steps

    def _beta_block(self, m, prior):
        Z = self._Z
        QZ = prior.Q @ Z
        A = Z.T @ QZ
        return np.linalg.solve(A, QZ.T @ m)

    def _shift_block(self, m, st8, beta):
        """Non-centred intercept step: ``m + delta``, ``beta_0 + delta`` (so ``r`` is unchanged); the ELBO
        changes only through the expected log-likelihood, maximised at ``delta = log(n / sum lambda)``
        [project addition]. Afterwards the expected count equals ``n`` exactly."""
        n = float(self._y.sum())
        lam = float(np.sum(self._w * np.exp(m + 0.5 * st8["s"])))
        if n <= 0 or lam <= 0:
            return m, beta
        delta = math.log(n / lam)
        b = beta.copy()
        b[0] += delta
        return m + delta, b

    def _sigma_block(self, m, st8, prior, beta, sigma2):
        r = m - self._Z @ beta
        # R^{-1} = sigma2 * Q
        val = sigma2 * (float(prior.Q.data @ st8["Sq"]) + float(r @ (prior.Q @ r))) / len(m)
        return max(val, VARIANCE_FLOOR)

    def _scale_block(self, m, st8, beta, sigma2):
        r"""Non-centred variance step: move along ``m = Z beta + c r``, ``S = c^2 S``, ``sigma^2 = c^2 sigma^2``.

        Along this path ``tr(QS)``, ``r^T Q r`` and ``log|K| - log|S|`` are invariant, so only the expected
        log-likelihood changes: :math:`g(c) = y^\top(Z\beta + c r) - \sum_j w_j e^{(Z\beta)_j + c r_j + c^2 s_j/2}`,
        concave in ``c``; one-dimensional Newton with step halving. Alternating it with the centred
        closed-form step removes most of the slow coupling of ``sigma^2`` and ``m`` (the interweaving idea
        of Yu & Meng 2011) [project addition, not in the point_process reconstruction notes]. Returns ``(m, state, sigma2)``."""
        y, w = self._y, self._w
        mu0 = self._Z @ beta
        r = m - mu0
        s = st8["s"]

        def g(c):
            return float(y @ (mu0 + c * r) - np.sum(w * np.exp(mu0 + c * r + 0.5 * c * c * s)))

        c = 1.0
        gc = g(c)
        for _ in range(30):
            e = w * np.exp(mu0 + c * r + 0.5 * c * c * s)
            d1 = float(y @ r - np.sum(e * (r + c * s)))
            d2 = float(-np.sum(e * ((r + c * s) ** 2 + s)))
            if d2 >= 0 or abs(d1) < 1e-12 * (1 + abs(gc)):
                break
            step = -d1 / d2
            t = 1.0
            while t > 1e-10:
                cn = c + t * step
                if cn > 0 and sigma2 * cn * cn >= VARIANCE_FLOOR:
                    gn = g(cn)
                    if gn >= gc:
                        break
                t *= 0.5
            else:
                break
            if abs(cn - c) < 1e-12:
                c, gc = cn, gn
                break
            c, gc = cn, gn
        if c == 1.0:
            return m, st8, sigma2
        m_new, new = self._scaled_state(m, st8, beta, c)
        return m_new, new, sigma2 * c * c

    def _scaled_state(self, m, st8, beta, c):
        """``(Z beta + c r, c^2 S)``: the state moved along the non-centred variance path by ``c``."""
        mu0 = self._Z @ beta
        c2 = c * c
        new = dict(st8)
        new["s"] = st8["s"] * c2
        new["Sq"] = st8["Sq"] * c2
        new["logdetS"] = st8["logdetS"] + len(m) * math.log(c2)
        if st8.get("fac") is not None:
            new["fac"] = _ScaledFactor(st8["fac"], c2)
            new["mu"] = st8["mu"] / c2
        return mu0 + c * (m - mu0), new

    def _phi_block(self, m, st8, beta, sigma2, phi, profile_variance, xatol=None, half=None):
        r"""Range step: bounded Brent on :math:`\log\phi` of
        :math:`\operatorname{tr}(\tilde Q_\phi S) + r^\top\tilde Q_\phi r + \log|\tilde K_\phi|` (only the
        blocks of ``S`` on ``{i} U N(i)`` are needed). With ``profile_variance`` the variance is profiled
        out in closed form (``sigma^2(phi) = A(phi)/N``), so the step maximises jointly over
        ``(sigma^2, phi)`` — it moves along the ridge ``sigma^2/phi ~ const`` of the exponential
        covariance in one step [project addition to the reconstruction's separate updates]. Accepted only if the
        ELBO does not drop. Returns ``(sigma2, phi)``."""
        st = self._st
        N = len(m)
        r = m - self._Z @ beta
        pidx = st.pair_index
        Sq = st8["Sq"]
        sblk = np.where(pidx >= 0, Sq[np.maximum(pidx, 0)], 0.0)
        nu_code = NU_CODES[self.nu]
        D = st.pair_distances  # neighbour distances, computed once per fit

        cache = {}

        def terms(logphi):  # memoised: the current point and Brent's optimum are asked for again
            key = float(logphi)
            if key not in cache:
                cache[key] = nngp_block_terms_from_distances(D, st.neighbors, st.counts, float(np.exp(key)),
                                                             nu_code, st.jitter, sblk, r)
            return cache[key]

        def obj(logphi):
            a, b = terms(logphi)
            if profile_variance:
                s2 = max(a / N, VARIANCE_FLOOR)
                return a / s2 + b + N * math.log(s2)
            return a / sigma2 + b + N * math.log(sigma2)

        lo, hi = np.log(self._phi_bounds)
        x0 = float(np.log(phi))
        a0, b0 = terms(x0)
        f0 = a0 / sigma2 + b0 + N * math.log(sigma2)  # the current state (sigma2 not yet profiled)
        best_x, best_f = x0, obj(x0)
        half = PHI_BRACKET if half is None else float(half)
        xatol = PHI_XATOL if xatol is None else xatol
        for _ in range(8):
            a, b = max(lo, best_x - half), min(hi, best_x + half)
            res = minimize_scalar(obj, bounds=(a, b), method="bounded", options={"xatol": xatol})
            if res.fun < best_f:
                best_x, best_f = float(res.x), float(res.fun)
            at_edge = (best_x - a < 2 * xatol and a > lo) or (b - best_x < 2 * xatol and b < hi)
            if not at_edge:
                break
            half *= 2.0
        if best_f >= f0:
            return sigma2, phi
        new_phi = float(np.exp(best_x))
        if profile_variance:
            a, _ = terms(best_x)
            return max(a / N, VARIANCE_FLOOR), new_phi
        return sigma2, new_phi

    # ------------------------------------------------------------------ the ascent
    @staticmethod
    def _initial_mean(m0, n_nodes):
        """The ascent's starting posterior mean: the constant log intensity ``m0`` at every node."""
        return np.full(n_nodes, m0)

    def _run(self, sigma2, phi, rng):
        y, w, Z = self._y, self._w, self._Z
        N = len(y)
        n = float(y.sum())
        area_u = float(w.sum())
        opt = set(self._opt)
        m0 = math.log(max(n, 0.5) / area_u)
        beta = np.zeros(Z.shape[1])
        beta[0] = m0
        prior = self._prior(sigma2, phi)
        m = self._initial_mean(m0, N)
        Qd = prior.Q.data[self._st.diag_index]
        s0 = 1.0 / (Qd + w * np.exp(m))
        st8 = self._diag_state(s0, self._st.diag_index, len(prior.Q.data))
        elbo = self._elbo(m, st8, prior, beta)
        hist, blocks = [elbo], [elbo]
        converged = False
        self._fp_history = []
        it = 0
        hyper = [h for h in ("variance", "length_scale") if h in opt]
        theta_hist = []
        # while the hyperparameters move, the S fixed point runs a few steps per sweep only (each accepted
        # step raises the ELBO, so the ascent stays monotone); the full tolerance applies near convergence
        few = FIXED_POINT_STEPS_WHILE_MOVING if (hyper or "mean" in opt) else None

        def sweep(m, st8, prior, beta, sigma2, phi, fp, record):
            # while the hyperparameters move, the inner blocks run a few steps only (each raises the ELBO)
            m = self._m_block(m, st8, prior, beta, None, max_iter=None if fp is None else NEWTON_STEPS_WHILE_MOVING)
            record(self._elbo(m, st8, prior, beta))
            st8, _ = self._s_block(m, st8, prior, beta, max_steps=fp)
            self._fp_history.append(list(getattr(self, "_fp_steps", [])))
            record(self._elbo(m, st8, prior, beta))
            if "mean" in opt:
                beta = self._beta_block(m, prior)
                record(self._elbo(m, st8, prior, beta))
                m, beta = self._shift_block(m, st8, beta)
                record(self._elbo(m, st8, prior, beta))
            if "variance" in opt:
                sigma2 = self._sigma_block(m, st8, prior, beta, sigma2)
                prior = self._prior(sigma2, phi)
                record(self._elbo(m, st8, prior, beta))
                m, st8, sigma2 = self._scale_block(m, st8, beta, sigma2)
                prior = self._prior(sigma2, phi)
                record(self._elbo(m, st8, prior, beta))
            if "length_scale" in opt:
                sigma2, phi = self._phi_block(m, st8, beta, sigma2, phi, "variance" in opt,
                                              xatol=ctl["xatol"], half=ctl["half"])
                prior = self._prior(sigma2, phi)
                record(self._elbo(m, st8, prior, beta))
            return m, st8, prior, beta, sigma2, phi

        rel = np.inf
        moving = True  # the hyperparameters still move by more than THETA_MOVING_TOL (log scale) per sweep
        ctl = {}
        collapse_tried = np.inf  # the variance at the last rejected boundary trial
        run = Interruptible("VoGCAM")
        run.checkpoint(m=m, st8=st8, prior=prior, beta=beta, sigma2=sigma2, phi=phi, elbo=elbo, rel=rel,
                       n_hist=len(hist), n_blocks=len(blocks), n_theta=len(theta_hist), it=it)
        with run:
            for it in range(1, int(self.max_iter) + 1):
                run.checkpoint(m=m, st8=st8, prior=prior, beta=beta, sigma2=sigma2, phi=phi, elbo=elbo,
                               rel=rel, n_hist=len(hist), n_blocks=len(blocks), n_theta=len(theta_hist), it=it - 1)
                fp = few if (rel > FULL_FIXED_POINT_RTOL or (hyper and moving)) else None
                # Brent's tolerance: coarse while the ELBO still moves, fine once it is flat (a coarse range
                # step jitters by its tolerance, which alone would keep the hyperparameters "moving"); the
                # first bracket a few times the last change of log phi
                ctl["xatol"] = PHI_XATOL if (fp is None or rel < FULL_FIXED_POINT_RTOL) else PHI_XATOL_MOVING
                ctl["half"] = (float(np.clip(4.0 * abs(theta_hist[-1][1] - theta_hist[-2][1]), PHI_BRACKET_MIN, PHI_BRACKET))
                               if len(theta_hist) >= 2 else PHI_BRACKET)
                m, st8, prior, beta, sigma2, phi = sweep(m, st8, prior, beta, sigma2, phi, fp, blocks.append)
                new = blocks[-1]
                theta_hist.append(np.log([sigma2, phi]))
                if len(theta_hist) >= 2:
                    moving = bool(np.max(np.abs(theta_hist[-1] - theta_hist[-2])) > THETA_MOVING_TOL)
                # Aitken-type extrapolation of (log sigma^2, log phi) every third sweep while they move (the
                # coordinate ascent on the hyperparameters converges linearly, with ratios near 0.9 on large
                # patterns): tried on a copy and kept only if the ELBO after an inner (m, S) update is higher
                # [project addition]
                if (hyper and len(theta_hist) >= 3 and it % AITKEN_EVERY == 0
                        and (moving or rel > FULL_FIXED_POINT_RTOL)):
                    d1 = theta_hist[-1] - theta_hist[-2]
                    d0 = theta_hist[-2] - theta_hist[-3]
                    with np.errstate(divide="ignore", invalid="ignore"):
                        ratio = np.where(np.abs(d0) > 0, d1 / d0, 0.0)
                    ratio = np.clip(ratio, 0.0, 0.95)
                    jump = d1 * ratio / (1.0 - ratio)
                    if np.any(np.abs(jump) > 1e-6):
                        jump = np.clip(jump, -1.0, 1.0)
                        ls2, lphi = theta_hist[-1] + jump
                        s2j = max(float(np.exp(ls2)), VARIANCE_FLOOR) if "variance" in opt else sigma2
                        phj = float(np.clip(np.exp(lphi), *self._phi_bounds)) if "length_scale" in opt else phi
                        trial = []
                        pj = self._prior(s2j, phj)
                        mj = self._m_block(m, st8, pj, beta, None, max_iter=NEWTON_STEPS_WHILE_MOVING)
                        sj, _ = self._s_block(mj, st8, pj, beta, max_steps=few)
                        ej = self._elbo(mj, sj, pj, beta)
                        if ej > new:
                            m, st8, prior, sigma2, phi = mj, sj, pj, s2j, phj
                            blocks.append(ej)
                            new = ej
                            theta_hist.append(np.log([sigma2, phi]))
                # a collapsing variance (log sigma^2 falling two sweeps in a row below VARIANCE_COLLAPSE_TRY) is
                # tried at the boundary: the state scaled non-centred to sigma^2 = VARIANCE_FLOOR, then an inner
                # (m, S) update; kept only if the ELBO is higher (else retried once the variance has halved)
                # [project addition]
                if ("variance" in opt and len(theta_hist) >= 3 and VARIANCE_FLOOR < sigma2 < VARIANCE_COLLAPSE_TRY
                        and sigma2 < 0.5 * collapse_tried
                        and theta_hist[-1][0] < theta_hist[-2][0] < theta_hist[-3][0]):
                    c = math.sqrt(VARIANCE_FLOOR / sigma2)
                    mc, sc = self._scaled_state(m, st8, beta, c)
                    pj = self._prior(VARIANCE_FLOOR, phi)
                    mj = self._m_block(mc, sc, pj, beta, None, max_iter=NEWTON_STEPS_WHILE_MOVING)
                    sj, _ = self._s_block(mj, sc, pj, beta, max_steps=few)
                    ej = self._elbo(mj, sj, pj, beta)
                    if ej > new:
                        m, st8, prior, sigma2 = mj, sj, pj, VARIANCE_FLOOR
                        blocks.append(ej)
                        new = ej
                        theta_hist.append(np.log([sigma2, phi]))
                    else:
                        collapse_tried = sigma2
                hist.append(new)
                rel_prev, rel = rel, abs(new - elbo) / (1.0 + abs(new))
                if self.verbose:
                    print(f"[VoGCAM] sweep {it}: ELBO {new:.10g}, sigma2 {sigma2:.6g}, phi {phi * self.scale_:.6g}, "
                          f"relative change {rel:.2g}, hyperparameters moving: {moving}")
                # converged: the ELBO is flat to tol, after a sweep whose S fixed point ran to full tolerance or
                # for two sweeps in a row (the hyperparameters may still creep along a flat ridge; the final
                # pass below brings (m, S, beta) to full tolerance either way)
                if rel < self.tol and it > 1 and (fp is None or rel_prev < self.tol):
                    elbo = new
                    converged = True
                    break
                elbo = new
        if run.interrupted:  # back to the start of the interrupted sweep (a whole state)
            st = run.state
            m, st8, prior, beta, sigma2, phi, elbo, it = (st["m"], st["st8"], st["prior"], st["beta"],
                                                          st["sigma2"], st["phi"], st["elbo"], st["it"])
            del hist[st["n_hist"]:], blocks[st["n_blocks"]:], theta_hist[st["n_theta"]:]
            converged = False
        # final pass at the last hyperparameters: m, S (to full tolerance) and beta, so the returned state
        # is stationary in (m, S, beta) (e.g. the expected count equals n) -- each block raises the ELBO
        # (skipped after an interrupt: the fit keeps the state of its last complete sweep)
        if not run.interrupted:
            m = self._m_block(m, st8, prior, beta, None)
            blocks.append(self._elbo(m, st8, prior, beta))
            st8, _ = self._s_block(m, st8, prior, beta)
            blocks.append(self._elbo(m, st8, prior, beta))
            if "mean" in opt:
                beta = self._beta_block(m, prior)
                blocks.append(self._elbo(m, st8, prior, beta))
                m = self._m_block(m, st8, prior, beta, None)
                blocks.append(self._elbo(m, st8, prior, beta))
                m, beta = self._shift_block(m, st8, beta)
                blocks.append(self._elbo(m, st8, prior, beta))
            elbo = blocks[-1]
            hist.append(elbo)
        self._m, self._state, self._prior_fac, self._beta = m, st8, prior, beta
        self._sigma2, self._phi = sigma2, phi
        c = self.scale_
        log_c2 = 2.0 * math.log(c)
        self.nodes_ = self._quad.nodes
        self.weights_ = self._quad.weights
        self.counts_ = y
        self.is_data_ = self._quad.is_data
        self.mean_ = m - log_c2
        self.var_ = st8["s"].copy()
        self.coef_ = beta.copy()
        self.coef_[0] -= log_c2
        self.variance_ = float(sigma2)
        self.length_scale_ = float(phi * c)
        self.elbo_ = float(elbo) - n * log_c2
        self.elbo_history_ = np.asarray(hist) - n * log_c2
        self.elbo_blocks_ = np.asarray(blocks) - n * log_c2
        self.n_iter_ = it
        self.converged_ = converged
        self.n_nodes_ = N
        self.solver_ = self._solver
        self.backend_ = self._backend
        self.grad_norm_ = float(np.max(np.abs(y - w * np.exp(m + 0.5 * st8["s"]) - prior.Q @ (m - Z @ beta))))
        self._tree = cKDTree(self._U)
        run.finish(self, f"after {it} sweeps")
        if not converged and not run.interrupted:
            warnings.warn(f"VoGCAM did not converge in {self.max_iter} sweeps (last ELBO change "
                          f"{abs(hist[-1] - hist[-2]) if len(hist) > 1 else np.nan:.3g}); increase max_iter.",
                          ConvergenceWarning, stacklevel=3)
        if "length_scale" in opt:
            lo, hi = self._phi_bounds
            if math.log(phi / lo) < BOUND_RTOL or math.log(hi / phi) < BOUND_RTOL:
                warnings.warn(f"the fitted length_scale {self.length_scale_:.4g} is at its bound "
                              f"[{lo * c:.4g}, {hi * c:.4g}]; the data do not identify the range.",
                              HyperparameterWarning, stacklevel=3)
        # estimated by any method (the minimum contrast removes it from ``opt`` before the sweeps)
        if "variance" in self.optimize_hyperparameters and sigma2 < VARIANCE_COLLAPSE:
            what = ("beyond the covariates (the fit is close to an inhomogeneous Poisson process)" if self.n_covariates_
                    else "(the fit is close to a homogeneous Poisson process)")
            warnings.warn(f"the fitted variance collapsed to {sigma2:.3g}: the pattern shows no spatial structure "
                          f"{what}.", HyperparameterWarning, stacklevel=3)
        rmax = float(np.sqrt(w.max() / np.pi)) * 2.0
        if rmax > phi / 2 and self.verbose:
            print(f"[VoGCAM] quadrature cells (radius ~{rmax * c:.3g}) are coarse relative to the range; raise n_dummy.")

    # ================================================================== prediction
    def _conditional(self, Xq, covariates=None):
        check_is_fitted(self, "mean_")
        Xq = check_array(Xq, "Xq", allow_empty=True, finite=False)
        if Xq.ndim != 2 or Xq.shape[1] != 2:
            raise ValueError(f"'Xq' must have shape (m, 2); got an array of shape {Xq.shape}.")
        if not np.all(np.isfinite(Xq)):
            raise ValueError("'Xq' must contain only finite coordinates.")
        if Xq.size and float(np.abs(Xq).max()) > MAX_COORD:
            raise ValueError(f"'Xq' coordinates must be at most {MAX_COORD:g} in absolute value (squared distances "
                             f"must stay in the float64 range); got {float(np.abs(Xq).max())!r}.")
        M = len(Xq)
        U = (Xq - self.shift_) / self.scale_
        if self.n_covariates_ == 0:
            Zq = np.ones((M, 1))
        elif covariates is not None:
            Zq = self._covariate_matrix(covariates, Xq, M, name="covariates")
        elif self._cov_callable is not None:
            Zq = self._covariate_matrix(self._cov_callable, Xq, M)
        else:
            raise ValueError("the model was fitted with covariates given at the nodes: pass 'covariates' at Xq.")
        if Zq.shape[1] != self._Z.shape[1]:
            raise ValueError(f"'covariates' must have {self._Z.shape[1] - 1} columns; got {Zq.shape[1] - 1}.")
        k = min(int(self.n_neighbors), len(self._U))
        _, nb = self._tree.query(U, k=k)
        nb = np.asarray(nb, dtype=np.int64).reshape(M, k)
        A, Fc = predict_rows(np.ascontiguousarray(U), self._U, nb, np.full(M, k, dtype=np.int64), self._phi,
                             NU_CODES[self.nu], self._st.jitter)
        return U, Zq, nb, A, Fc

    def _s_block_entries(self, nb):
        """S on nb[i] x nb[i] for every query row (M, k, k)."""
        st8 = self._state
        M, k = nb.shape
        if st8["kind"] == "diag":
            out = np.zeros((M, k, k))
            idx = np.arange(k)
            out[:, idx, idx] = st8["s"][nb]
            return out
        fac = st8["fac"]
        R = np.repeat(nb[:, :, None], k, axis=2)
        C = np.repeat(nb[:, None, :], k, axis=1)
        vals = fac.inverse_entries(R.ravel(), C.ravel()).reshape(M, k, k)
        miss = np.isnan(vals)
        if miss.any():
            # pairs outside the factor's pattern: exact columns of S by solves with the cached factor
            cols = np.unique(np.minimum(R[miss], C[miss]))
            colpos = {int(j): t for t, j in enumerate(cols)}
            E = np.zeros((len(self._U), len(cols)))
            E[cols, np.arange(len(cols))] = 1.0
            Scols = fac.solve(E)
            rr, cc = R[miss], C[miss]
            lo = np.minimum(rr, cc)
            hi = np.maximum(rr, cc)
            vals[miss] = Scols[hi, [colpos[int(j)] for j in lo]]
        return vals

    def predict_log_intensity(self, Xq, return_std=False, covariates=None):
        """Posterior mean (and sd) of the log-intensity at ``Xq`` (m, 2), per user unit area.

        Kriging from the ``k`` nearest nodes: ``mu* = z*^T beta + a*^T (m_N* - Z_N* beta)``,
        ``v* = sigma^2 F* + a*^T S_N*N* a*``.

        Parameters
        ----------
        Xq : array-like of shape (m, 2)
            Query locations, in the units of the fitted pattern.
        return_std : bool, default=False
            Also return the posterior standard deviation.
        covariates : callable or array-like, optional
            As in :meth:`fit`: a callable mapping (m, 2) coordinates to (m, p), or an (m, p) array of values
            at ``Xq``; needed when the model was fitted with covariates.

        Returns
        -------
        mean : ndarray of shape (m,)
            Posterior mean of the log-intensity.
        std : ndarray of shape (m,)
            Posterior standard deviation; only with ``return_std=True``.
        """
        U, Zq, nb, A, Fc = self._conditional(Xq, covariates)
        beta = self._beta
        res = self._m - self._Z @ beta
        mu = Zq @ beta + np.einsum("ij,ij->i", A, res[nb]) - 2.0 * math.log(self.scale_)
        if not return_std:
            return mu
        Sb = self._s_block_entries(nb)
        v = self._sigma2 * Fc + np.einsum("ij,ijk,ik->i", A, Sb, A)
        return mu, np.sqrt(np.maximum(v, 0.0))

    def predict_intensity(self, Xq, alpha=None, covariates=None):
        """Posterior mean intensity ``exp(mu* + v*/2)`` at ``Xq``; with ``alpha``, also the lognormal
        ``(1 - alpha)`` band ``exp(mu* -/+ z_{alpha/2} sd*)``: returns ``(mean, lower, upper)``.

        Parameters
        ----------
        Xq : array-like of shape (m, 2)
            Query locations, in the units of the fitted pattern.
        alpha : float or None, default=None
            Level of the pointwise band, in (0, 1).
        covariates : callable or array-like, optional
            As in :meth:`fit`: a callable mapping (m, 2) coordinates to (m, p), or an (m, p) array of values
            at ``Xq``; needed when the model was fitted with covariates.

        Returns
        -------
        mean : ndarray of shape (m,)
            Posterior mean intensity.
        lower, upper : ndarray of shape (m,)
            The band; only when ``alpha`` is given.
        """
        mu, sd = self.predict_log_intensity(Xq, return_std=True, covariates=covariates)
        mean = np.exp(mu + 0.5 * sd**2)
        if alpha is None:
            return mean
        alpha = check_scalar_float(alpha, "alpha", low=0.0, high=1.0, closed="neither")
        z = norm.ppf(1 - alpha / 2)
        return mean, np.exp(mu - z * sd), np.exp(mu + z * sd)

    def expected_count(self, region=None):
        """Posterior expected number of points, ``sum_j w_j exp(m_j + S_jj/2)`` over the nodes in
        ``region`` (a window description; ``None``: the whole window).

        Parameters
        ----------
        region : None or window, default=None
            A rectangle ``(xmin, xmax, ymin, ymax)``, a polygon (V, 2) or a :class:`Window` (``None``: the
            whole window).

        Returns
        -------
        float
            The posterior expected count.
        """
        check_is_fitted(self, "mean_")
        lam = self.weights_ * np.exp(self.mean_ + 0.5 * self.var_)
        if region is None:
            return float(lam.sum())
        reg = Window.from_any(region)
        return float(lam[reg.contains(self.nodes_)].sum())

    def sample_posterior(self, Xq, n_samples=1, random_state=None, covariates=None):
        """Joint draws of the log-intensity at ``Xq`` (returns ``(n_samples, m)``): the node field from
        ``q = N(m, S)``, then the NNGP conditional at each query point given the nodes.

        Parameters
        ----------
        Xq : array-like of shape (m, 2)
            Query locations, in the units of the fitted pattern.
        n_samples : int, default=1
            Number of joint draws, at least 1.
        random_state : None, int, SeedSequence or Generator, default=None
            Seed of the draws.
        covariates : callable or array-like, optional
            As in :meth:`fit`: a callable mapping (m, 2) coordinates to (m, p), or an (m, p) array of values
            at ``Xq``; needed when the model was fitted with covariates.

        Returns
        -------
        ndarray of shape (n_samples, m)
            The draws of the log-intensity.
        """
        n_samples = check_scalar_int(n_samples, "n_samples", low=1)
        rng = check_random_state(self.random_state if random_state is None else random_state)
        U, Zq, nb, A, Fc = self._conditional(Xq, covariates)
        st8 = self._state
        N = len(self._U)
        out = np.empty((n_samples, len(U)))
        res_base = Zq @ self._beta - 2.0 * math.log(self.scale_)
        for t in range(n_samples):
            z = rng.standard_normal(N)
            if st8["kind"] == "diag":
                x = np.sqrt(st8["s"]) * z
            else:
                x = _sample(st8["fac"], z)
            f = self._m + x - self._Z @ self._beta
            out[t] = res_base + np.einsum("ij,ij->i", A, f[nb]) + np.sqrt(self._sigma2 * Fc) * rng.standard_normal(len(U))
        return out

    def _joint_sample(self, Xq, n_samples, rng, covariates=None):
        """Joint draws (user units) of the log-intensity at the nodes ``(n_samples, N)`` and at ``Xq``."""
        U, Zq, nb, A, Fc = self._conditional(Xq, covariates)
        st8 = self._state
        N = len(self._U)
        log_c2 = 2.0 * math.log(self.scale_)
        nodes = np.empty((n_samples, N))
        out = np.empty((n_samples, len(U)))
        res_base = Zq @ self._beta - log_c2
        for t in range(n_samples):
            z = rng.standard_normal(N)
            x = np.sqrt(st8["s"]) * z if st8["kind"] == "diag" else _sample(st8["fac"], z)
            nodes[t] = self._m + x - log_c2
            f = self._m + x - self._Z @ self._beta
            out[t] = (res_base + np.einsum("ij,ij->i", A, f[nb])
                      + np.sqrt(self._sigma2 * Fc) * rng.standard_normal(len(U)))
        return nodes, out

    def score(self, X=None, thinning=None, method="expected", n_samples=200, random_state=None):
        r"""Held-out predictive score of a test pattern; ``X=None``: the ELBO of the fit.

        Poisson log-likelihood :math:`\sum_i \log\lambda_{\text{test}}(x_i) - \int_W \lambda_{\text{test}}`
        of the pattern ``X`` in the fitted window, where :math:`\lambda_{\text{test}} = \rho\lambda` and
        ``thinning = p`` says that ``X`` holds the points an independent p-thinning sent to the test set
        while the model was fitted to the other points (so :math:`\rho = p / (1 - p)`; ``None``:
        :math:`\rho = 1`, a new pattern of the same process). ``method``:

        * ``"expected"``: the posterior expectation :math:`E_q[\ell]` (:math:`\sum_i \mu_i + n\log\rho -
          \rho E_q N(W)`);
        * ``"mean"`` / ``"median"``: the plug-in of the posterior mean :math:`e^{\mu + v/2}` / median
          :math:`e^{\mu}` intensity;
        * ``"predictive"``: the full predictive :math:`\log E_q[e^{\ell}]` by ``n_samples`` joint draws of
          the field from q (log-mean-exp; the integral by the quadrature at the nodes).

        ``"mean" >= "expected"`` always (Jensen on each point; same integral term).

        Parameters
        ----------
        X : array-like of shape (n, 2) or None, default=None
            The test pattern (``None``: return the ELBO of the fit).
        thinning : float or None, default=None
            Thinning probability ``p`` in (0, 1) that sent the points of ``X`` to the test set.
        method : {"expected", "mean", "median", "predictive"}, default="expected"
            The score, as above.
        n_samples : int, default=200
            Draws of the field for ``method="predictive"``.
        random_state : None, int, SeedSequence or Generator, default=None
            Seed of those draws.

        Returns
        -------
        float
            The score (higher is better).
        """
        check_is_fitted(self, "mean_")
        if X is None:
            return float(self.elbo_)
        check_option(method, "method", ("expected", "mean", "median", "predictive"))
        if thinning is None:
            rho = 1.0
        else:
            p = check_scalar_float(thinning, "thinning", low=0.0, high=1.0, closed="neither")
            rho = p / (1.0 - p)
        X = check_points(X, self.window_)
        if self._cov_callable is None and self.n_covariates_:
            raise ValueError("score(X) needs callable covariates (the model was fitted with covariates at the nodes).")
        n = len(X)
        lr = math.log(rho)
        if method == "expected":
            mu = self.predict_log_intensity(X) if n else np.zeros(0)
            return float(np.sum(mu) + n * lr - rho * self.expected_count())
        if method in ("mean", "median"):
            if n:
                mu, sd = self.predict_log_intensity(X, return_std=True)
            else:
                mu = sd = np.zeros(0)
            if method == "mean":
                return float(np.sum(mu + 0.5 * sd**2) + n * lr - rho * self.expected_count())
            return float(np.sum(mu) + n * lr - rho * float(np.sum(self.weights_ * np.exp(self.mean_))))
        n_samples = check_scalar_int(n_samples, "n_samples", low=1)
        rng = check_random_state(self.random_state if random_state is None else random_state)
        Xq = X if n else self.nodes_[:1]
        nodes, fq = self._joint_sample(Xq, n_samples, rng)
        ll = (fq.sum(axis=1) if n else 0.0) + n * lr - rho * (np.exp(nodes) @ self.weights_)
        mx = float(np.max(ll))
        return float(mx + math.log(np.mean(np.exp(ll - mx))))
