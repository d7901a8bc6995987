r"""Log-Gaussian Cox processes: VoGCAM, variational Voronoi inference with an NNGP prior.

:class:`VoGCAM` fits the intensity of a spatial point pattern in a rectangular or polygonal window by
Voronoi (Berman--Turner) quadrature, a nearest-neighbour GP prior and coordinate ascent on a closed-form
ELBO [reconstructed from the target paper's abstract; the point_process reconstruction notes]. Building blocks:
:func:`voronoi_weights`, :func:`build_quadrature`, :func:`nngp_precision`, :func:`woodbury_solve`,
:class:`SparseCholesky` (numba sparse Cholesky + Takahashi selected inverse), :class:`RasterCovariates`.
Minimum-contrast hyperparameters (spatstat's ``kppm`` method): :func:`lgcp_min_contrast`.
Second-order summaries with edge corrections: :func:`k_function`, :func:`l_function`,
:func:`pair_correlation` (homogeneous and inhomogeneous), nearest-neighbour summaries :func:`g_function`,
:func:`f_function`, :func:`j_function` and simulation envelopes (:func:`envelope`).
Bounds in :mod:`theory.point_process`; torch kernels in :mod:`accel.point_process`.

Layout: the shared pieces (window, quadrature, simulation, covariates, kernels, sparse Cholesky) at the top;
the subpackages ``vogcam`` (the estimator, its ELBO blocks, solver and NNGP prior), ``baselines`` (the four
comparison methods; :mod:`algos.point_process.baselines` is public) and ``second_order`` (K, L, g,
envelopes, minimum contrast). Import every public name from here.
"""

from ._covariates import RasterCovariates, load_raster_covariates
from ._quadrature import Quadrature, build_quadrature, voronoi_weights
from ._simulate import LGCPSample, simulate_lgcp
from ._sparse import SparseCholesky
from ._window import Window
from .baselines._baselines_frk import FRKVariationalLGCP
from .baselines._baselines_laplace import GridLaplaceLGCP
from .baselines._baselines_mala import GridMALALGCP
from .baselines._baselines_svgp import SVGPCoxProcess
from .second_order._envelope import Envelope, envelope, simulate_poisson
from .second_order._min_contrast import MinContrastFit, lgcp_min_contrast
from .second_order._nearest_neighbour import f_function, g_function, j_function
from .second_order._second_order import SummaryFunction, k_function, l_function, pair_correlation
from .second_order._valid_range import RangeWarning
from .vogcam._nngp import NNGPFactor, matern, nngp_precision, woodbury_solve
from .vogcam._vogcam import HyperparameterWarning, VoGCAM

__all__ = [
    "VoGCAM",
    "HyperparameterWarning",
    "Window",
    "voronoi_weights",
    "build_quadrature",
    "Quadrature",
    "nngp_precision",
    "NNGPFactor",
    "matern",
    "woodbury_solve",
    "SparseCholesky",
    "RasterCovariates",
    "load_raster_covariates",
    "simulate_lgcp",
    "LGCPSample",
    "GridLaplaceLGCP",
    "FRKVariationalLGCP",
    "GridMALALGCP",
    "SVGPCoxProcess",
    "k_function",
    "l_function",
    "pair_correlation",
    "g_function",
    "f_function",
    "j_function",
    "RangeWarning",
    "envelope",
    "simulate_poisson",
    "SummaryFunction",
    "Envelope",
    "lgcp_min_contrast",
    "MinContrastFit",
]
