r"""CIRCLE: exemplar-free class-incremental learning with fixed, data-free reservoir features.

:class:`BiRC2DFeatures` (built from :class:`BiReservoir2D` blocks) maps images to vectors without
looking at data; :class:`StreamingLDA` heads learn class means and a shared covariance from a stream
in any order; :class:`CIRCLEClassifier` averages the softmax of G heads over R extractors
(Jučas & Pan, arXiv:2606.27095, 2026). :meth:`StreamingLDA.merge` combines states fitted apart and
:func:`fit_dask` fits over the blocks of a Dask array; :func:`class_incremental_split` and :func:`evaluate_cil` run
the cold-start protocol; :mod:`._baselines` holds the CPU baselines; bounds live in
:mod:`theory.continual`.
"""

from ._baselines import BASELINES, FeatureHead, OfflineLDA, RandomConvFeatures, StreamingRidge, make_baseline
from ._birc2d import BiRC2DFeatures
from ._circle import CIRCLEClassifier, SLDAEnsemble, resolve_image_geometry
from ._data import load_digits_images, load_image_dataset, load_mnist_csv, load_npz_images, scale_pixels
from ._merge import fit_dask
from ._protocol import class_incremental_split, evaluate_cil
from ._reservoir import BiReservoir2D, SpectralRadiusWarning
from ._slda import StreamingLDA

__all__ = [
    "BiReservoir2D",
    "BiRC2DFeatures",
    "SpectralRadiusWarning",
    "StreamingLDA",
    "fit_dask",
    "SLDAEnsemble",
    "CIRCLEClassifier",
    "resolve_image_geometry",
    "class_incremental_split",
    "evaluate_cil",
    "StreamingRidge",
    "OfflineLDA",
    "RandomConvFeatures",
    "FeatureHead",
    "make_baseline",
    "BASELINES",
    "scale_pixels",
    "load_digits_images",
    "load_mnist_csv",
    "load_npz_images",
    "load_image_dataset",
]
