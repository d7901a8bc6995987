"""Point-based POMDP solvers: the heuristic-search :class:`PointBasedSolver` (HSVI2, numba or torch engines),
:class:`PBVI`, their shared sawtooth/FIB upper bound, and the bounded policy iteration baseline
:class:`BPIController`."""

from ._bpi import BPIController
from ._pbs import PointBasedSolver
from ._pbvi import PBVI, fib_upper_bound

__all__ = ["PointBasedSolver", "PBVI", "fib_upper_bound", "BPIController"]
