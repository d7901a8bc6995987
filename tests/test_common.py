"""scikit-learn estimator checks over every array estimator of the package, found by discovery.

Every class in ``algos.<module>.__all__`` of the seven modules that subclasses ``BaseEstimator`` is an
array estimator, checked by ``parametrize_with_checks``, unless ``NON_ARRAY`` says why its input is not
an ``(X, y)`` array (online matching instances, POMDPs, point patterns, 4-d images); those are checked
for the parts of the contract that apply to them in their own test files (``get_params``/``set_params``/
``clone``, ``fit`` returns ``self``, fitted attributes end in ``_``). A new class is therefore checked
as soon as it is exported. An array estimator is built with its default parameters, or with the small
configurations of ``CONFIGS`` (a reason each); each expected failure needs a reason in
``EXPECTED_FAILED``.
"""

import importlib
import inspect

import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.utils.estimator_checks import parametrize_with_checks

MODULES = ("fair_matching", "hetero_regression", "networked_learning", "pomdp", "continual", "federated",
           "point_process")


def _discover():
    """``{class name: class}`` of every ``BaseEstimator`` subclass exported by the seven modules."""
    found = {}
    for module in MODULES:
        mod = importlib.import_module(f"algos.{module}")
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isclass(obj) and issubclass(obj, BaseEstimator):
                assert found.get(name, obj) is obj, f"two exported estimators are called {name}"
                found[name] = obj
    return found


DISCOVERED = _discover()

_MATCHING = "input is an online matching instance (agents, items, classes), not an (X, y) array"
_POMDP = "input is a POMDP model, not an (X, y) array"
_CODEBOOK = "input is a POMDP (beliefs are simulated from it), not an (X, y) array"
_POINTS = "input is a point pattern on a window (an intensity is learned, there are no labels)"
NON_ARRAY = {  # {class name: why check_estimator does not apply}
    "ThresholdEqualFilling": _MATCHING,
    "EqualFilling": _MATCHING,
    "WaterFilling": _MATCHING,
    "HybridRanking": _MATCHING,
    "Ranking": _MATCHING,
    "Greedy": _MATCHING,
    "PBVI": _POMDP,
    "PointBasedSolver": _POMDP,
    "RECAPController": _POMDP,
    "FiniteWindowController": _POMDP,
    "BPIController": _POMDP,
    "GridCodebook": _CODEBOOK,
    "KMeansCodebook": _CODEBOOK,
    "VoGCAM": _POINTS,
    "GridLaplaceLGCP": _POINTS,
    "FRKVariationalLGCP": _POINTS,
    "GridMALALGCP": _POINTS,
    "SVGPCoxProcess": _POINTS,
    "BiReservoir2D": "input is a 4-d grid of tokens (n, H, W, d); fit is data-free",
    "BiRC2DFeatures": "input is 4-d images (n, H, W, C); fit is data-free",
    "FederatedClassifierBase": "shared base of the federated classifiers, not an estimator by itself",
}

# few rounds and epochs: the checks fit each federated classifier some 80 times; an int random_state
# makes them deterministic, so the idempotence and pickling checks run too
_ROUNDS = {"n_rounds": 10, "random_state": 0}
CONFIGS = {  # {class name: [keyword arguments of each checked instance]}; absent: the defaults only
    "NetworkedDAGRegressor": [{}, {"protocol": "sketch", "random_state": 0}],
    "StreamingLDA": [{}, {"covariance": "hayes"}],
    # pixel_range="none": the checks feed negative, non-image arrays
    "CIRCLEClassifier": [{"n_reservoirs": 2, "n_groups": 2, "units": 2, "pixel_range": "none", "random_state": 0}],
    "LowRankSoftmax": [{}, {"rank": 2, "random_state": 0}],
    "PotaraClassifier": [{**_ROUNDS, "finetune_epochs": 5, "n_bootstrap": 2},
                         {**_ROUNDS, "finetune_epochs": 5, "n_bootstrap": 2, "variance_method": "sandwich",
                          "base_estimator": {"rank": 2}}],
    "LocalOnlyClassifier": [{"epochs": 20, "random_state": 0}],
    "FedAvgClassifier": [_ROUNDS],
    "FedAvgFTClassifier": [{**_ROUNDS, "finetune_epochs": 5}],
    "FixedMixClassifier": [{**_ROUNDS, "finetune_epochs": 5}],
    "OracleGridClassifier": [{**_ROUNDS, "finetune_epochs": 5}],
    "APFLClassifier": [_ROUNDS],
    "DittoClassifier": [_ROUNDS],
    "PFedMeClassifier": [_ROUNDS],
    "FedRepClassifier": [_ROUNDS],
    "FedITClassifier": [_ROUNDS],
    "FFALoRAClassifier": [_ROUNDS],
    "FedSALoRAClassifier": [_ROUNDS],
}
EXPECTED_FAILED = {  # {estimator class name: {check name: reason}}
    "HuberSoSRegressor": {
        # the check fits 15 x 30 data; an unpenalised Huber fit is not unique when
        # n_samples <= n_features, and the estimator raises there
        "check_sample_weight_equivalence_on_dense_data": "needs n_samples > n_features (unpenalised fit)",
    },
}

ARRAY_NAMES = [name for name in DISCOVERED if name not in NON_ARRAY]


def _build(name, kwargs):
    kwargs = dict(kwargs)
    if isinstance(kwargs.get("base_estimator"), dict):  # a fresh base model per instance
        from algos.federated import LowRankSoftmax

        kwargs["base_estimator"] = LowRankSoftmax(**kwargs["base_estimator"])
    return DISCOVERED[name](**kwargs)


ARRAY_ESTIMATORS = [_build(name, kw) for name in ARRAY_NAMES for kw in CONFIGS.get(name, [{}])]


def test_every_discovered_estimator_is_classified():
    """Each exported estimator class is checked here or has a reason in NON_ARRAY, never both; the tables
    name no class that is gone."""
    assert len(DISCOVERED) >= 47
    assert set(NON_ARRAY) <= set(DISCOVERED), sorted(set(NON_ARRAY) - set(DISCOVERED))
    assert set(CONFIGS) <= set(ARRAY_NAMES), sorted(set(CONFIGS) - set(ARRAY_NAMES))
    assert set(EXPECTED_FAILED) <= set(ARRAY_NAMES), sorted(set(EXPECTED_FAILED) - set(ARRAY_NAMES))
    checked = {type(est).__name__ for est in ARRAY_ESTIMATORS}
    for name in DISCOVERED:
        assert (name in checked) != (name in NON_ARRAY), f"{name} must be checked or listed in NON_ARRAY, once"
    assert all(reason.strip() for reason in NON_ARRAY.values())
    assert all(reason.strip() for failed in EXPECTED_FAILED.values() for reason in failed.values())


def test_federated_classifiers_are_array_estimators():
    from algos.federated import BASELINES, FederatedClassifierBase

    federated = {n for n, cls in DISCOVERED.items() if issubclass(cls, FederatedClassifierBase)} - set(NON_ARRAY)
    assert federated == {"PotaraClassifier"} | {cls.__name__ for cls in BASELINES.values()}
    assert federated <= set(ARRAY_NAMES)


@parametrize_with_checks(ARRAY_ESTIMATORS,
                         expected_failed_checks=lambda est: EXPECTED_FAILED.get(type(est).__name__, {}))
@pytest.mark.filterwarnings("ignore::algos.hetero_regression.ConvexRegimeWarning")
@pytest.mark.filterwarnings("ignore::algos.networked_learning.SketchSizeWarning")
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def _non_array_fair_matching():
    from algos.fair_matching import EqualFilling, Greedy, HybridRanking, Ranking, ThresholdEqualFilling, WaterFilling

    return [
        ThresholdEqualFilling(gamma=0.3, exact=False, steps=50, tie_break="random", random_state=1),
        EqualFilling(),
        WaterFilling(verbose=0),
        HybridRanking(gamma=0.4, fair_rule="random_class", n_runs=3, random_state=0),
        Ranking(n_runs=2, random_state=1),
        Greedy(tie="first"),
    ]


NON_ARRAY_ESTIMATORS = _non_array_fair_matching()


@pytest.mark.parametrize("est", NON_ARRAY_ESTIMATORS, ids=lambda e: type(e).__name__)
def test_non_array_estimator_params_roundtrip(est):
    params = est.get_params()
    twin = clone(est)
    assert type(twin) is type(est)
    assert twin.get_params() == params
    assert twin.set_params(**params) is twin
    assert not [k for k in vars(twin) if k.endswith("_")], "clone must not carry fitted state"


@pytest.mark.parametrize("est", NON_ARRAY_ESTIMATORS, ids=lambda e: type(e).__name__)
def test_non_array_estimator_fit_contract(est):
    """fit returns self, learns attributes ending in '_', and refitting a clone gives the same
    allocation (fixed random_state)."""
    from algos.fair_matching import random_instance

    inst = random_instance(7, 9, n_classes=3, p=0.4, random_state=0)
    assert est.fit(inst) is est
    assert est.allocation_.shape == (7, 9)
    assert est.n_items_seen_ == 9 and est.n_classes_ == 3
    again = clone(est).fit(inst)
    assert (again.allocation_ != est.allocation_).nnz == 0
