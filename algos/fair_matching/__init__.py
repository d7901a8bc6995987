r"""Online class-envy-free matching with a fairness threshold gamma (Borst & Springer, 2026).

Agents known in advance belong to classes; items arrive one by one and are allocated
irrevocably. :class:`ThresholdEqualFilling` (divisible) and :class:`HybridRanking`
(indivisible) equalise allocations across classes up to level ``gamma``, then maximise welfare;
the baselines are :class:`WaterFilling`, :class:`EqualFilling`, :class:`Ranking` and
:class:`Greedy`. Metrics (USW, CEF, CPROP, non-wastefulness) live in
:mod:`algos.fair_matching.metrics`; the guarantees in :mod:`theory.fair_matching`.
"""

from ._adversary import hill_climb_instance
from ._divisible import EqualFilling, ThresholdEqualFilling, WaterFilling
from ._evaluate import evaluate
from ._generators import (
    complete_instance,
    davis_instance,
    disjoint_stars_instance,
    random_instance,
    sparse_random_instance,
    triangular_instance,
    upper_bound_instance,
)
from ._indivisible import Greedy, HybridRanking, Ranking
from ._instance import OnlineMatchingInstance
from .metrics import (
    bundle_value,
    cef_matrix,
    cef_ratio,
    cef_trajectory,
    cprop_ratio,
    ex_ante_cef_ratio,
    ex_post_cef_ratio,
    is_non_wasteful,
    opt_matching_size,
    usw_ratio,
)

__all__ = [
    "OnlineMatchingInstance",
    "ThresholdEqualFilling",
    "EqualFilling",
    "WaterFilling",
    "HybridRanking",
    "Ranking",
    "Greedy",
    "evaluate",
    "hill_climb_instance",
    "opt_matching_size",
    "bundle_value",
    "cef_matrix",
    "cef_ratio",
    "cef_trajectory",
    "cprop_ratio",
    "ex_ante_cef_ratio",
    "ex_post_cef_ratio",
    "is_non_wasteful",
    "usw_ratio",
    "random_instance",
    "sparse_random_instance",
    "triangular_instance",
    "upper_bound_instance",
    "complete_instance",
    "disjoint_stars_instance",
    "davis_instance",
]
