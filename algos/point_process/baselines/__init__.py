r"""Baselines for log-Gaussian Cox process inference, with VoGCAM's fit/predict API.

The baselines are those of the point_process reconstruction notes, section 3.

* :class:`GridLaplaceLGCP` — counts on a regular grid, Poisson(a e^{f_c}), Gaussian prior on the
  cell values, Laplace approximation at the posterior mode found by Newton's method
  (Rasmussen & Williams 2006, Alg. 3.1/3.2; GPstuff ``demo_lgcp``). The intercept/covariate
  coefficients are part of the Newton state (flat prior, profiled jointly). Two solvers: ``"dense"``
  (Cholesky of ``B = I + W^½ K W^½``; exact variances and the Laplace evidence) and ``"fft"`` (``K``
  applied by FFT on a circulant embedding, ``B`` solved by conjugate gradients; variances estimated
  from exact perturbation samples of the Laplace posterior).
* :class:`FRKVariationalLGCP` — VIFRK (Dovers, Stoklosa & Warton, JCGS 2023; R package ``scampr``):
  bisquare fixed-rank-kriging basis at two resolutions, a mean-field Gaussian variational posterior on
  the basis weights, one prior variance per resolution profiled in closed form, regular-grid
  quadrature, all parameters fitted jointly by L-BFGS on the analytic gradient. *Reconstructed*:
  ``FRK::auto_basis`` is mimicked (spacing ratio 3 between resolutions, radius 1.5 spacings).
* :class:`GridMALALGCP` — Metropolis-adjusted Langevin sampling of the same grid posterior as
  :class:`GridLaplaceLGCP` (hyperparameters fixed): the MCMC oracle of the tests (Møller, Syversveen
  & Waagepetersen 1998; Roberts & Rosenthal 1998 for the 0.574 acceptance target).
* :class:`SVGPCoxProcess` — a sparse variational GP (inducing points on a grid, ``gpytorch``) with the
  Poisson-process likelihood on regular-grid quadrature; the 2-D, Pyro-free port of gpytorch's
  Cox-process example (point_process reconstruction notes, section 3, item 4). Needs the ``gpu`` extra (torch,
  gpytorch); imported lazily.

Every estimator takes ``window=`` ((xmin, xmax, ymin, ymax) or a (V, 2) polygon) and implements
``fit(X, covariates=None)`` (``covariates``: a callable mapping (m, 2) locations to an (m, p) array,
without an intercept column — the intercept is always included), ``predict_log_intensity(Xq,
return_std=False)``, ``predict_intensity(Xq, alpha=None)`` and ``expected_count(region=None)``.
Fitted ``coef_`` is ``[intercept, covariate coefficients...]`` on the log-intensity scale of the
user's coordinates. Kernels: Matérn ``nu`` = 1/2, ``sigma2 exp(-r/phi)``; ``nu`` = 3/2,
``sigma2 (1 + sqrt3 r/phi) exp(-sqrt3 r/phi)``.

The estimators live in package-private modules of this subpackage, one per method (``_baselines_laplace``,
``_baselines_mala``, ``_baselines_frk``, ``_baselines_svgp``; shared checks and methods in
``_baselines_common``); import them from here or from :mod:`algos.point_process`.
"""

from ._baselines_frk import FRKVariationalLGCP
from ._baselines_laplace import GridLaplaceLGCP
from ._baselines_mala import GridMALALGCP
from ._baselines_svgp import SVGPCoxProcess

__all__ = ["GridLaplaceLGCP", "FRKVariationalLGCP", "GridMALALGCP", "SVGPCoxProcess"]
