"""The scikit-learn parameter contract, checked uniformly on every public estimator.

Every estimator of the seven modules (``algos.<module>.__all__``, classes deriving from
:class:`sklearn.base.BaseEstimator`) must

(a) declare ``_parameter_constraints`` (scikit-learn's format) whose keys are exactly its
    ``__init__`` parameters;
(b) reject, at ``fit``, a value outside any ``Interval`` / ``StrOptions`` constraint it declares,
    and a value of a kind that none of its type-only constraints (types, ``"boolean"``,
    ``HasMethods``) allows, with a ``ValueError`` (scikit-learn's ``InvalidParameterError`` is one;
    the package's own checks, which run first where their message is more specific, raise ``TypeError``
    for a value of the wrong kind) naming the parameter in quotes (``'k'``, so that a short name cannot
    pass by matching any word of the message);
(b') check each such rule in one place only: with the ``_parameter_constraints`` validation switched
    off, the same bad value must no longer be rejected by an error naming the parameter (an inline copy
    of the rule), except for the rules listed in :data:`DATA_DEPENDENT`, whose full form depends on the
    data;
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
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    StrOptions,
    generate_invalid_param_val,
    make_constraint,
)

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


class _Alien:
    """A value of a kind no constraint of the package allows (no type, no method, not a bool)."""

    def __repr__(self):
        return "_Alien()"


def _type_only(constraints):
    """True when every constraint says only what kind of object is allowed (no interval, no options)."""
    kinds = []
    for c in constraints:
        if c is None or c == "boolean" or isinstance(c, (type, HasMethods)):
            kinds.append(c)
        else:
            return False
    return any(c is not None for c in kinds)


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
            if _type_only(constraints):
                cases.append(pytest.param(module, name, cls, param, _Alien(), id=f"{name}-{param}-alien"))
    return cases


#: Rules whose complete form depends on the data, so that fit checks them inline after the data-free
#: part has been checked by ``_parameter_constraints``: ``(estimator, parameter) -> the rule``. A bad
#: value of the data-free part may be caught again there, which is not a second copy of the rule.
DATA_DEPENDENT = {
    ("CIRCLEClassifier", "n_reservoirs"): "n_groups <= n_reservoirs ties two parameters",
    ("NetworkedDAGRegressor", "feature_sets"): "checked against the graph's nodes and the number of features",
    ("NetworkedDAGRegressor", "output_agent"): "must be a node of the graph",
}
#: Parameters interpreted by one shared converter that every caller (estimators and plain functions)
#: goes through, and which must refuse what it cannot convert: their second refusal is that converter,
#: the same code for the whole package, not a copy of the rule.
SHARED_CONVERTERS = {
    "random_state": "theory._checks.check_random_state (and spawn_generators) turn it into generators",
    "backend": "accel.backend.resolve turns it into a compute backend",
}
#: Bad values that, with their rule switched off, make fit run without end instead of failing (a test of the
#: rule's single home needs the fit to return): the rule itself is checked by test_invalid_value_rejected_at_fit.
RUNS_FOREVER_UNCHECKED = {
    ("RECAPController", "n_memory"): "K = 0 leaves the compression search with no node to remove or add",
}
#: Public functions (and methods of public classes) that ``fit`` calls and that check their own arguments
#: at their own boundary, as every public entry point of the package does: a refusal raised inside one of
#: them is that function's contract, not a copy of the estimator's rule. Keyed by ``__qualname__``.
PUBLIC_CALLEES = {
    "Window.from_any": "algos.point_process.Window: checks the bounds or vertices it is given",
    "build_quadrature": "algos.point_process.build_quadrature: checks n_dummy",
    "NNGPStructure.__init__": "the NNGP structure behind algos.point_process.nngp_precision: checks ordering",
    "estimate_variances": "algos.federated.variance.estimate_variances: checks its settings",
    "mixing_weights": "algos.federated.mixing_weights: checks granularity",
    "init_params": "algos.federated.init_params: checks rank",
    "local_train": "algos.federated.local_train: checks lr, l2, batch_size",
    "merge_models": "algos.federated.merge_models: checks lam",
}


def _raised_in_public_callee(err):
    """The name of the :data:`PUBLIC_CALLEES` entry whose frame the error passed through, or None."""
    tb = err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_qualname in PUBLIC_CALLEES:
            return tb.tb_frame.f_code.co_qualname
        tb = tb.tb_next
    return None


def _validation_off(monkeypatch):
    """Switch off every path by which ``_parameter_constraints`` are checked."""
    from algos import _validation

    original = _validation.validate_params

    def nothing(*args, **kwargs):
        return None

    monkeypatch.setattr(BaseEstimator, "_validate_params", nothing)
    for mod_name, mod in list(sys.modules.items()):
        if mod_name.split(".")[0] in ("algos", "accel") and getattr(mod, "validate_params", None) is original:
            monkeypatch.setattr(mod, "validate_params", nothing)


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
    assert f"'{param}'" in str(info.value), str(info.value)


@pytest.mark.parametrize("module, name, cls, param, bad",
                         [c for c in _invalid_cases()
                          if (c.values[1], c.values[3]) not in {**DATA_DEPENDENT, **RUNS_FOREVER_UNCHECKED}
                          and c.values[3] not in SHARED_CONVERTERS])
def test_rule_checked_once(module, name, cls, param, bad, monkeypatch):
    """With the declared constraints switched off, no inline copy of the rule rejects the bad value."""
    rec = _recipe(module, name)
    est = cls(**rec.args()).set_params(**{param: bad})
    _validation_off(monkeypatch)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(est, rec.fit_method)(**rec.fit())
    except (ValueError, TypeError) as err:
        assert f"'{param}'" not in str(err) or _raised_in_public_callee(err), (
            f"{name}.{param}={bad!r} is rejected a second time, outside _parameter_constraints: {err}")
    except Exception:  # noqa: BLE001 - any other failure of a bad value is not a second copy of the rule
        pass


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
