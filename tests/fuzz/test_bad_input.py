"""Bad-input battery over every public name of the seven modules and every theory function.

For each name, the valid call of its recipe (``_recipes.py``) runs once; then Hypothesis draws
cases, each replacing one argument (a constructor hyperparameter, a ``fit`` argument, a
``predict``/``transform``/``score`` argument, or a scalar left at its default) by a value drawn from
one bad-input category: NaN/inf, empty, wrong rank, strings, complex, 1e200, values outside the
declared range (the ``Interval`` of the estimator's ``_parameter_constraints``, else the range written
in the docstring), non-integers for counts, wrong types, predict before fit, mismatched features
and mismatched lengths. Every case must end in a clean ValueError/TypeError naming the argument
(NotFittedError before fit), leave its inputs unmodified and finish within
``_harness.CASE_LIMIT_S``; a value that is only *possibly* invalid (1e200, 0, a negative number
without a documented range) may instead be accepted if the result is finite. See
``_harness.py`` for the exact classification.

The cases of one name are all run and the test fails listing every failing one. Set
``ALGOS_FUZZ_REPORT=path.json`` to write the per-module counts (tried / clean) there.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import algos
from tests.fuzz._harness import (
    BASE_LIMIT_S,
    CaseTimeout,
    categories,
    constraint_options,
    has_nonfinite,
    kind_of,
    parameter_ranges,
    run_case,
    time_limit,
)
from tests.fuzz._recipes import BUILDERS, not_fuzzed_reason, public_names

#: Cases per public name: a third of the profile's ``max_examples`` (ci: 13, dev: 4), at least 4;
#: ``ALGOS_FUZZ_EXAMPLES`` overrides it.
N_CASES = int(os.environ.get("ALGOS_FUZZ_EXAMPLES", max(4, settings.default.max_examples // 3)))
DATA_ARGS = ("X", "y", "Xq", "X_tr", "y_tr", "X_te", "y_te", "client_ids")
#: Arguments documented to take strings everywhere (client ids are ints or strings).
LABEL_ARGS = ("client_ids", "client_id")
SKIP_ARGS = ("verbose",)  # any truthy value is a valid verbosity; nothing to reject

RESULTS: dict = {}

#: Open defects found by an earlier run (``tests/fuzz/open_failures.json``): failing cases listed there
#: do not fail the battery, every other failing case does. The list only shrinks: fix a case, then
#: remove it. Counts of open cases per module are in docs/testing.md ("Bad-input fuzzing").
OPEN_FAILURES: dict = json.loads((Path(__file__).with_name("open_failures.json")).read_text(encoding="utf-8"))

TARGETS = [(m, n) for m in algos.MODULES for n, obj in public_names(m) if not_fuzzed_reason(n, obj) is None]


@functools.lru_cache(None)
def _recipes(module):
    return BUILDERS[module]()


@pytest.fixture(scope="module", autouse=True)
def _write_report():
    yield
    path = os.environ.get("ALGOS_FUZZ_REPORT")
    if path:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(RESULTS, fh, indent=1)


@dataclasses.dataclass
class Slot:
    """One argument that a case may replace."""

    stage: str  # "call" | "init" | "fit" | "after" | "unfitted"
    method: str | None
    arg: str
    value: object
    range: tuple | None = None
    data: bool = False
    elementwise: bool = False
    names: tuple = ()
    labels: bool = False  # strings are valid values (labels, client ids)
    options: frozenset = frozenset()  # the allowed strings (StrOptions constraints)


def _scalar_defaults(func, skip):
    out = {}
    for p in inspect.signature(func).parameters.values():
        if (p.name in skip or p.name in SKIP_ARGS or p.name.startswith("_") or p.name == "self"
                or p.default is inspect.Parameter.empty or p.kind is inspect.Parameter.VAR_KEYWORD):
            continue
        if kind_of(p.default) in ("int", "float", "str", "bool"):
            out[p.name] = p.default
    return out


def _slots(recipe):
    slots = []
    target = recipe.target
    fixed = set(recipe.fixed)

    def add(stage, method, values, doc_obj):
        # ranges from the _parameter_constraints of an estimator class, the docstring where a
        # parameter has no constraint (and for functions and methods)
        ranges = parameter_ranges(doc_obj)
        options = constraint_options(doc_obj) if isinstance(doc_obj, type) else {}
        for arg, value in values.items():
            if arg in fixed or arg in SKIP_ARGS or arg.startswith("_"):
                continue
            data = (arg in DATA_ARGS or arg in recipe.data) and arg not in recipe.empty_ok
            slots.append(Slot(stage, method, arg, value, ranges.get(arg), data, arg in recipe.elementwise,
                              (arg, *recipe.aliases.get(arg, ())), arg in recipe.labels or arg in LABEL_ARGS,
                              frozenset(options.get(arg, ()))))

    first = "call" if recipe.kind in ("func", "class") else "init"
    given_args = recipe.args()
    defaults = _scalar_defaults(target, set(given_args) | fixed) if recipe.defaults else {}
    add(first, None, {**defaults, **given_args}, target)
    if recipe.kind == "est":
        fit_method = getattr(target, recipe.fit_method)
        add("fit", recipe.fit_method, recipe.fit(), fit_method)
        for method, kwargs in recipe.after:
            add("after", method, kwargs(), getattr(target, method))
            if recipe.unfitted and method != "partial_fit":
                slots.append(Slot("unfitted", method, "<fit first>", None))
    return slots


@dataclasses.dataclass
class Base:
    result: object
    fitted: object = None
    after: dict = dataclasses.field(default_factory=dict)


def _run_base(recipe):
    """The valid call; fails the test if it does not run (the recipe or the module is broken)."""

    def run(thunk, what):
        try:
            with time_limit(BASE_LIMIT_S):
                return thunk()
        except CaseTimeout:
            pytest.fail(f"the valid {what} ran past {BASE_LIMIT_S:g} s")
        except Exception as exc:  # noqa: BLE001
            pytest.fail(f"the valid {what} does not run: {type(exc).__name__}: {exc}")

    if recipe.kind in ("func", "class"):
        return Base(run(lambda: recipe.target(**recipe.args()), "call"))
    obj = recipe.target(**recipe.args())
    result = run(lambda: getattr(obj, recipe.fit_method)(**recipe.fit()), recipe.fit_method)
    base = Base(obj, obj)
    for method, kwargs in recipe.after:
        fitted = copy.deepcopy(obj)
        base.after[method] = run(lambda: getattr(fitted, method)(**kwargs()), method)
    del result
    return base


def _thunk(recipe, base, slot, bad):
    """(callable, argument dicts to check for modification, base result) of one case."""
    target = recipe.target
    if slot.stage == "call":
        kw = recipe.args()
        kw[slot.arg] = bad
        return (lambda: target(**kw)), [kw], base.result
    if slot.stage == "init":
        init, fitkw = recipe.args(), recipe.fit()
        init[slot.arg] = bad
        return (lambda: getattr(target(**init), recipe.fit_method)(**fitkw)), [fitkw], base.fitted
    if slot.stage == "fit":
        init, fitkw = recipe.args(), recipe.fit()
        fitkw[slot.arg] = bad
        return (lambda: getattr(target(**init), recipe.fit_method)(**fitkw)), [fitkw], base.fitted
    kwargs = dict(recipe.after)[slot.method]()
    if slot.stage == "after":
        obj = copy.deepcopy(base.fitted)
        kwargs[slot.arg] = bad
        return (lambda: getattr(obj, slot.method)(**kwargs)), [kwargs], base.after.get(slot.method)
    obj = target(**recipe.args())  # unfitted
    return (lambda: getattr(obj, slot.method)(**kwargs)), [kwargs], None


def _in_range(value, rng):
    lo, hi, lo_closed, hi_closed = rng
    try:
        v = float(value)
    except (TypeError, ValueError):
        return False
    if lo is not None and (v < lo or (v == lo and not lo_closed)):
        return False
    if hi is not None and (v > hi or (v == hi and not hi_closed)):
        return False
    return True


def _categories(slot):
    if slot.stage == "unfitted":
        return {"predict_before_fit": (st.none(), True)}
    kind = kind_of(slot.value)
    cats = categories(kind, slot.value, rng=slot.range, data_arg=slot.data, elementwise=slot.elementwise,
                      options=slot.options)
    if slot.labels and "strings" in cats:
        cats["strings"] = (cats["strings"][0], False)
    import numpy as np

    if slot.stage == "after" and slot.arg in ("X", "Xq") and kind == "farray" and np.ndim(slot.value) == 2:
        X = np.asarray(slot.value)
        cats["mismatched_features"] = (st.just(np.hstack([X, X[:, :1]])), True)
    if slot.stage == "fit" and slot.arg == "y" and kind in ("farray", "iarray"):
        cats["mismatched_length"] = (st.just(np.asarray(slot.value)[:-1]), True)
    return cats


@pytest.mark.parametrize("module, name", TARGETS, ids=[f"{m}:{n}" for m, n in TARGETS])
def test_bad_input(module, name):
    recipe = _recipes(module)[name]
    base = _run_base(recipe)
    slots = _slots(recipe)
    # names without a fuzzable argument: argument-free functions, and file readers whose bad input is a
    # bad file (covered by the parser tests, the .POMDP mutation fuzzing and the CLI battery's garbage files)
    assert slots or name.endswith(("nonwasteful_usw_lower_bound", "load_digits_images", "load_diabetes_agents",
                                   "read_pomdp", "load_mnist_csv", "load_npz_images"))
    results = RESULTS.setdefault(module, {}).setdefault(name, [])
    if not slots:
        return

    @settings(max_examples=N_CASES, phases=[Phase.explicit, Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def one_case(data):
        slot = data.draw(st.sampled_from(slots), label="argument")
        cats = _categories(slot)
        cat = data.draw(st.sampled_from(sorted(cats)), label="category")
        strategy, certain = cats[cat]
        bad = data.draw(strategy, label="value")
        if slot.range is not None and cat in ("1e200", "out_of_range", "zero_or_negative"):
            certain = not _in_range(bad, slot.range)
        thunk, inputs, base_result = _thunk(recipe, base, slot, bad)
        names = slot.names
        if cat == "mismatched_features":
            names = (*names, "feature", "features", "columns")
        out = run_case(thunk, inputs, names=names, certain=certain,
                       base_nonfinite=has_nonfinite(base_result) if slot.stage != "unfitted" else True,
                       expect_not_fitted=slot.stage == "unfitted", rejects=recipe.rejects,
                       nonfinite_ok=recipe.nonfinite_ok)
        key = f"{slot.stage}{'.' + slot.method if slot.method else ''}({slot.arg}={cat})"
        results.append({"case": key, "outcome": out.outcome, "detail": out.detail, "seconds": round(out.seconds, 3)})

    one_case()
    bad = [r for r in results if r["outcome"] not in ("clean", "valid")]
    # Cases recorded as open defects in open_failures.json are reported, not failed; any other failing
    # case fails the test (see OPEN_FAILURES).
    known = set(OPEN_FAILURES.get(f"{module}:{name}", ()))
    failing = sorted({f"{r['case']}: {r['outcome']}: {r['detail']}" for r in bad if r["case"] not in known})
    assert not failing, f"{module}.{name}: {len(failing)} failing case(s) not in open_failures.json:\n" + \
        "\n".join(failing)


@pytest.mark.parametrize("module", algos.MODULES)
def test_every_public_name_has_a_recipe_or_a_reason(module):
    recipes = _recipes(module)
    names = dict(public_names(module))
    missing = [n for n, obj in names.items() if not_fuzzed_reason(n, obj) is None and n not in recipes]
    assert not missing, f"public names of {module} without a fuzz recipe: {missing}"
    stale = [n for n in recipes if n not in names]
    assert not stale, f"fuzz recipes of {module} for names that are not public: {stale}"
