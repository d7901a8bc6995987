"""RECAP codebook controllers: the reconstructed :class:`RECAPController` (its search, starts and polish), the
codebook controllers :class:`GridCodebook` and :class:`KMeansCodebook`, the exact evaluation of their
finite-state controllers, and the converse lower bound on the value loss of any K-memory controller."""

from ._codebook import GridCodebook, KMeansCodebook, build_codebook_fsc
from ._converse import ConverseBound, converse_lower_bound
from ._recap import RECAPController

__all__ = ["RECAPController", "GridCodebook", "KMeansCodebook", "build_codebook_fsc", "ConverseBound",
           "converse_lower_bound"]
