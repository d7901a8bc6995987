r"""Linear regression under heteroskedastic noise, subset-of-signals model.

``n`` sources each give one linear measurement of :math:`\beta^*`; only an unknown subset of
``m`` has noise variance at most 1. :class:`SubsetOfSignalsRegressor` is the front door: it
combines the estimators below by a data-driven rule and says when none recovers the coefficients.
:class:`HuberSoSRegressor` (fixed-threshold Huber, the main
estimator) reaches error :math:`\tilde O(\sqrt{nd}/m)`; :class:`CoordinateMedianRegressor` is the
whitened coordinate-median reduction, :class:`IterativeWindowRegressor` a reconstructed
shrinking-window estimator. Baselines: OLS, exact LAD, feasible WLS, iterative trimming, and the
oracle WLS. Rates in :mod:`theory.hetero_regression`.
"""

from ._baselines import (
    FeasibleWLSRegressor,
    LADRegressor,
    TrimmedLSRegressor,
    feasible_wls,
    iterative_trimming,
    lad,
    ols,
)
from ._data import SubsetOfSignals, make_subset_of_signals, oracle_wls, suggest_delta
from ._front import NoRecoveryWarning, SubsetOfSignalsRegressor
from ._huber import ConvexRegimeWarning, HuberSoSRegressor
from ._median import CoordinateMedianRegressor
from ._window import IterativeWindowRegressor

__all__ = [
    "SubsetOfSignalsRegressor",
    "HuberSoSRegressor",
    "CoordinateMedianRegressor",
    "IterativeWindowRegressor",
    "LADRegressor",
    "FeasibleWLSRegressor",
    "TrimmedLSRegressor",
    "ConvexRegimeWarning",
    "NoRecoveryWarning",
    "make_subset_of_signals",
    "SubsetOfSignals",
    "oracle_wls",
    "suggest_delta",
    "ols",
    "lad",
    "feasible_wls",
    "iterative_trimming",
]
