r"""RECAP finite-memory POMDP controllers from belief codebooks, and point-based POMDP solvers.

The :class:`POMDP` model with a complete parser and writer of Cassandra's
``.POMDP`` format (:func:`read_pomdp`, :func:`parse_pomdp`, :func:`write_pomdp`), a reader of
APPL's factored POMDPX files and a flat writer (:func:`read_pomdpx`, :func:`write_pomdpx`), the built-in
models :func:`tiger`, :func:`rock_sample` (published maps: :func:`rock_sample_map`) and
:func:`tag`, belief updates, exact and Monte-Carlo evaluation of
finite-state controllers, blind policies, the heuristic-search solver :class:`PointBasedSolver`
(HSVI2) and :class:`PBVI`, both with a sawtooth/FIB upper bound, policy files
(:func:`read_policy`, :func:`write_policy`, :func:`policy_graph`), the
codebook controllers :class:`RECAPController` (reconstructed), :class:`GridCodebook`,
:class:`KMeansCodebook`, and the baselines :class:`FiniteWindowController` and
:class:`BPIController`, and :func:`converse_lower_bound` (depth-1 and history forms).
Bounds and the FSC certificate are in :mod:`theory.pomdp`.
"""

from ._beliefs import (
    blind_policy_values,
    check_fsc,
    evaluate_fsc,
    evaluate_fsc_iterative,
    simulate_fsc,
    successors,
    update,
)
from ._builtin import rock_sample, rock_sample_map, tag, tiger
from ._model import POMDP
from ._window import FiniteWindowController
from .io._parser import POMDPFileWarning, parse_pomdp, read_pomdp, write_pomdp
from .io._policy_io import AlphaPolicy, policy_graph, read_policy, write_policy, write_policy_graph
from .io._pomdpx import read_pomdpx
from .io._pomdpx_write import write_pomdpx
from .recap._codebook import GridCodebook, KMeansCodebook, build_codebook_fsc
from .recap._converse import ConverseBound, converse_lower_bound
from .recap._recap import RECAPController
from .solvers._bpi import BPIController
from .solvers._pbs import PointBasedSolver
from .solvers._pbvi import PBVI, fib_upper_bound

__all__ = [
    "POMDP",
    "POMDPFileWarning",
    "parse_pomdp",
    "read_pomdp",
    "write_pomdp",
    "read_pomdpx",
    "write_pomdpx",
    "tiger",
    "rock_sample",
    "rock_sample_map",
    "tag",
    "update",
    "successors",
    "check_fsc",
    "evaluate_fsc",
    "evaluate_fsc_iterative",
    "simulate_fsc",
    "blind_policy_values",
    "PBVI",
    "PointBasedSolver",
    "AlphaPolicy",
    "read_policy",
    "write_policy",
    "policy_graph",
    "write_policy_graph",
    "fib_upper_bound",
    "RECAPController",
    "GridCodebook",
    "KMeansCodebook",
    "build_codebook_fsc",
    "FiniteWindowController",
    "BPIController",
    "converse_lower_bound",
    "ConverseBound",
]
