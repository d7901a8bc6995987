r"""The package's theorem checks as a user feature.

* ``assert_*`` checkers take any allocator, estimator, controller or rule of yours and assert the
  corresponding module's theorem on instances where it is nearly tight, through the ``theory``
  functions (no Hypothesis needed):

  ==========================  =====================================================================
  module                      checker
  ==========================  =====================================================================
  fair_matching               :func:`assert_matching_guarantees` (USW and CEF lower bounds)
  hetero_regression           :func:`assert_huber_rate` (error bound at the calibrated coverage)
  networked_learning          :func:`assert_krr_path_bound` (depth bound on a path)
  pomdp                       :func:`assert_controller_certificates` (totality, V* bracket, converse)
  continual                   :func:`assert_streaming_matches_batch` (streaming = batch LDA)
  federated                   :func:`assert_mixing_rule_optimal` (merge attains U(lambda*))
  point_process               :func:`assert_quadrature_bound` (partition and T2 error bound)
  ==========================  =====================================================================

* Hypothesis strategies for the package's objects (:mod:`algos.testing.strategies`): matching
  instances, gammas, POMDPs, subset-of-signals data, DAGs with feature maps, point patterns and
  client splits. They are imported lazily: ``from algos.testing import pomdps`` needs
  ``hypothesis`` (``pip install "algos-theory[testing]"``); ``import algos.testing`` does not.
"""

from __future__ import annotations

from ._checks import (
    CheckResult,
    assert_controller_certificates,
    assert_huber_rate,
    assert_krr_path_bound,
    assert_matching_guarantees,
    assert_mixing_rule_optimal,
    assert_quadrature_bound,
    assert_streaming_matches_batch,
)

_STRATEGIES = (
    "SEEDS",
    "matching_instances",
    "gammas",
    "pomdps",
    "subset_of_signals",
    "dags_with_feature_maps",
    "point_patterns",
    "client_splits",
)

__all__ = [
    "CheckResult",
    "assert_matching_guarantees",
    "assert_huber_rate",
    "assert_krr_path_bound",
    "assert_controller_certificates",
    "assert_streaming_matches_batch",
    "assert_mixing_rule_optimal",
    "assert_quadrature_bound",
    *_STRATEGIES,
]


def __getattr__(name):
    if name in _STRATEGIES or name == "strategies":
        import importlib

        try:
            strategies = importlib.import_module(__name__ + ".strategies")
        except ImportError as exc:  # hypothesis missing
            raise ImportError(
                f"algos.testing.{name} needs Hypothesis: pip install \"algos-theory[testing]\" ({exc})."
            ) from exc
        return strategies if name == "strategies" else getattr(strategies, name)
    raise AttributeError(f"module 'algos.testing' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_STRATEGIES))
