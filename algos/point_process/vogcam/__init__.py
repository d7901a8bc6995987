r"""VoGCAM: variational Voronoi inference for a log-Gaussian Cox process with an NNGP prior.

:class:`VoGCAM` (``_vogcam``) is the estimator; ``_vogcam_blocks`` holds the closed-form ELBO blocks and the
module's constants, ``_vogcam_solver`` the coordinate ascent, ``_vogcam_score`` the held-out scores and
``_nngp`` the nearest-neighbour GP prior (:func:`nngp_precision`, :class:`NNGPFactor`, :func:`matern`,
:func:`woodbury_solve`). Import the public names from :mod:`algos.point_process`.
"""

from ._nngp import NNGPFactor, matern, nngp_precision, woodbury_solve
from ._vogcam import HyperparameterWarning, VoGCAM

__all__ = ["VoGCAM", "HyperparameterWarning", "NNGPFactor", "matern", "nngp_precision", "woodbury_solve"]
