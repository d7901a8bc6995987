r"""Second-order summaries of a point pattern, simulation envelopes and the minimum-contrast LGCP fit.

``_second_order``: Ripley's :func:`k_function`, :func:`l_function` and :func:`pair_correlation` with edge
corrections (:class:`SummaryFunction`); ``_pair_kernels``: their numba pair kernels; ``_envelope``:
:func:`envelope` (:class:`Envelope`) and :func:`simulate_poisson`; ``_min_contrast``:
:func:`lgcp_min_contrast` (:class:`MinContrastFit`). Import the public names from :mod:`algos.point_process`.
"""

from ._envelope import Envelope, envelope, simulate_poisson
from ._min_contrast import MinContrastFit, lgcp_min_contrast
from ._second_order import SummaryFunction, k_function, l_function, pair_correlation

__all__ = ["k_function", "l_function", "pair_correlation", "SummaryFunction", "envelope", "simulate_poisson",
           "Envelope", "lgcp_min_contrast", "MinContrastFit"]
