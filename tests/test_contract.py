"""The scikit-learn parameter contract, checked uniformly on every public estimator.

Every estimator of the seven modules (``algos.<module>.__all__``, classes deriving from
:class:`sklearn.base.BaseEstimator`) must

(a) declare ``_parameter_constraints`` (scikit-learn's format) whose keys are exactly its
    ``__init__`` parameters;
(b) reject, at ``fit``, a value outside any ``Interval`` / ``StrOptions`` constraint it declares,
    with a ``ValueError`` (scikit-learn's ``InvalidParameterError`` is one; the package's own checks,
    which run first where their message is more specific, raise ``TypeError`` for a value of the wrong
    kind) naming the parameter;
(c) raise :class:`~sklearn.exceptions.NotFittedError` from its prediction-type methods (every public
    method that reads the fitted state, :data:`PREDICT_METHODS`) before ``fit``;
(d) survive ``clone`` and ``get_params`` / ``set_params`` unchanged.

The fit inputs are the tiny valid calls of ``tests/fuzz/_recipes.py``.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import warnings
from pathlib import Path

import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import Interval, StrOptions, generate_invalid_param_val, make_constraint

sys.path.insert(0, str(Path(__file__).parent / "fuzz"))
import _recipes  # noqa: E402

MODULES = ("fair_matching", "hetero_regression", "networked_learning", "pomdp", "continual", "federated",
           "point_process")
#: methods that use the fitted state (``personalize`` of PotaraClassifier is a step of ``fit`` that
#: takes the federated parameters as an argument, so it is not listed).
PREDICT_METHODS = ("predict", "predict_proba", "predict_log_proba", "decision_function", "transform", "score",
                   "score_samples", "get_feature_names_out", "extract_features", "agent_predict", "conf_int",
                   "summary", "client_scores", "mean_lambda", "realizations", "ex_ante_cef_ratio",
                   "ex_post_cef_ratio", "evaluate", "simulate", "update", "check", "expected_count",
                   "predict_intensity", "predict_log_intensity", "sample_posterior", "value", "upper_value",
                   "policy")
#: (memory, action, observation) of a controller; a belief of a solver's bounds (checked after fit)
POSITIONAL = {"update": (0, 0, 0), "value": ([0.5, 0.5],), "upper_value": ([0.5, 0.5],), "policy": ([0.5, 0.5],)}


def _estimators():
    out = []
    for module in MODULES:
        mod = importlib.import_module(f"algos.{module}")
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isclass(obj) and issubclass(obj, BaseEstimator) and name not in _recipes.ABSTRACT:
                out.append((module, name, obj))
    return out


ESTIMATORS = _estimators()
IDS = [name for _, name, _ in ESTIMATORS]
_RECIPES = {}


def _recipe(module, name):
    if module not in _RECIPES:
        _RECIPES[module] = _recipes.BUILDERS[module]()
    return _RECIPES[module][name]


def _init_params(cls):
    return [p.name for p in inspect.signature(cls.__init__).parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _invalid_cases():
    cases = []
    for module, name, cls in ESTIMATORS:
        for param, constraints in getattr(cls, "_parameter_constraints", {}).items():
            if constraints == "no_validation":
                continue
            for c in constraints:
                c = make_constraint(c)
                if isinstance(c, (Interval, StrOptions)):
                    # the id must not depend on set order (pytest-xdist workers collect separately)
                    kind = "options" if isinstance(c, StrOptions) else repr(generate_invalid_param_val(c))
                    cases.append(pytest.param(module, name, cls, param, generate_invalid_param_val(c),
                                              id=f"{name}-{param}-{kind}"))
    return cases


def test_every_module_has_estimators():
    assert {m for m, _, _ in ESTIMATORS} == set(MODULES)
    assert len(ESTIMATORS) >= 47


@pytest.mark.parametrize("module, name, cls", ESTIMATORS, ids=IDS)
def test_constraints_cover_init_parameters(module, name, cls):
    assert "_parameter_constraints" in vars(cls), f"{name} declares no _parameter_constraints of its own"
    assert set(cls._parameter_constraints) == set(_init_params(cls))
    for param, constraints in cls._parameter_constraints.items():
        if constraints != "no_validation":
            assert isinstance(constraints, list) and constraints, (name, param)
            for c in constraints:
                make_constraint(c)  # a constraint scikit-learn understands


@pytest.mark.parametrize("module, name, cls, param, bad", _invalid_cases())
def test_invalid_value_rejected_at_fit(module, name, cls, param, bad):
    rec = _recipe(module, name)
    est = cls(**rec.args()).set_params(**{param: bad})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # TypeError too: the package's checks raise it for a value of the wrong kind (a string other
        # than "auto" for a float-or-"auto" parameter), before scikit-learn's InvalidParameterError
        with pytest.raises((ValueError, TypeError)) as info:
            getattr(est, rec.fit_method)(**rec.fit())
    assert param in str(info.value), str(info.value)


def _call_kwargs(method, rec, fn):
    """The recipe's arguments for ``method``, else those of its other calls that ``method`` takes."""
    after = dict(rec.after)
    if method in after:
        return after[method]()
    pool = rec.fit()
    for kw in after.values():
        pool.update(kw())
    sig = inspect.signature(fn).parameters
    return {k: v for k, v in pool.items() if k in sig}


@pytest.mark.parametrize("module, name, cls", ESTIMATORS, ids=IDS)
def test_predict_before_fit_raises_not_fitted(module, name, cls):
    rec = _recipe(module, name)
    methods = [m for m in PREDICT_METHODS if hasattr(cls, m)]
    est = cls(**rec.args())
    for method in methods:
        fn = getattr(est, method, None)
        if fn is None:  # available_if hides it for these parameters
            continue
        with pytest.raises(NotFittedError):
            if method in POSITIONAL:
                fn(*POSITIONAL[method])
            else:
                fn(**_call_kwargs(method, rec, fn))


@pytest.mark.parametrize("module, name, cls", ESTIMATORS, ids=IDS)
def test_clone_and_params_roundtrip(module, name, cls):
    est = cls(**_recipe(module, name).args())
    params = est.get_params(deep=False)
    twin = clone(est)
    assert type(twin) is cls
    assert set(twin.get_params(deep=False)) == set(params)
    for k, v in params.items():
        assert twin.get_params(deep=False)[k] is v or repr(twin.get_params(deep=False)[k]) == repr(v), k
    assert twin.set_params(**params) is twin
    assert not [k for k in vars(twin) if k.endswith("_") and not k.startswith("_")]
