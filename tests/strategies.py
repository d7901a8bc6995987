"""Shared Hypothesis strategies of the test suite.

They are the public strategies of :mod:`algos.testing.strategies` (one definition, used by the suite
and offered to users); this module keeps the names the tests import.
"""

from __future__ import annotations

from algos.testing.strategies import (  # noqa: F401  (re-exported)
    SEEDS,
    client_splits,
    dags_with_feature_maps,
    gammas,
    matching_instances,
    point_patterns,
    pomdps,
    subset_of_signals,
)
