r"""RECAP finite-memory POMDP controllers from belief codebooks (in progress).

Available now: the :class:`POMDP` model with a complete parser and writer of Cassandra's
``.POMDP`` format (:func:`read_pomdp`, :func:`parse_pomdp`, :func:`write_pomdp`), the built-in
models :func:`tiger` and :func:`rock_sample`, belief updates, exact and Monte-Carlo evaluation of
finite-state controllers, blind policies, and :class:`PBVI` with a sawtooth/FIB upper bound.
RECAP itself, the codebook baselines and the converse bound are not implemented yet.
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
from ._builtin import rock_sample, tiger
from ._model import POMDP
from ._parser import POMDPFileWarning, parse_pomdp, read_pomdp, write_pomdp
from ._pbvi import PBVI, fib_upper_bound

__all__ = [
    "POMDP",
    "POMDPFileWarning",
    "parse_pomdp",
    "read_pomdp",
    "write_pomdp",
    "tiger",
    "rock_sample",
    "update",
    "successors",
    "check_fsc",
    "evaluate_fsc",
    "evaluate_fsc_iterative",
    "simulate_fsc",
    "blind_policy_values",
    "PBVI",
    "fib_upper_bound",
]
