"""Bad-input fuzzing harness: draws one bad argument per case and classifies what the call does.

A *recipe* (see ``_recipes.py``) gives a valid call of one public name. A case replaces exactly one
argument of that call by a bad value drawn by Hypothesis from one of the categories below, runs the
call under a time limit and classifies the outcome:

``clean``      ValueError / TypeError (NotFittedError before fit) whose message names the argument
``valid``      a *possibly* invalid value (1e200, 0, a negative number without a documented range, an
               empty optional array) was accepted and the result is finite: a legitimate input
``unnamed``    the right exception type but the message does not name the argument
``crash``      any other exception (IndexError, LinAlgError, ZeroDivisionError, numba errors, ...)
``hang``       the call ran past the per-case time limit
``nonfinite``  the call returned NaN/inf where the valid call returns finite values
``accepted``   a *certainly* invalid value (NaN, inf, a string, a complex number, the wrong rank, a
               value outside the documented range, ...) was accepted
``mutated``    the call modified one of its input arrays

Only ``clean`` and ``valid`` pass.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import inspect
import json
import math
import os
import re
import select
import signal
import sys
import time
import warnings

import numpy as np
from hypothesis import strategies as st
from sklearn.exceptions import NotFittedError

#: Seconds one bad-input case may take (the valid call ran first, so kernels are compiled); a clean
#: error is expected well within a second, a possibly-valid value may run a small fit.
CASE_LIMIT_S = 20.0
#: Seconds the valid call of a recipe may take (it compiles the numba kernels on a fresh checkout).
BASE_LIMIT_S = 240.0

PASSING = ("clean", "valid")

#: sklearn's standard wording for bad ``X``/``y`` in ``validate_data`` (accepted as naming them).
SKLEARN_DATA_WORDING = (
    "Expected 2D array", "Expected a 2-dimensional", "Found array with 0 sample", "Found array with 0 feature",
    "Complex data not supported", "Found input variables with inconsistent numbers of samples",
    "Input contains NaN", "Input contains infinity", "Found array with dim", "dtype='numeric' is not compatible",
    "features, but", "is expecting", "Unknown label type", "y should be a 1d array",
)


class CaseTimeout(BaseException):
    """Raised by the alarm; a BaseException so that ``except Exception`` in the code under test
    cannot swallow it."""


def _on_alarm(signum, frame):
    raise CaseTimeout()


@contextlib.contextmanager
def time_limit(seconds):
    """Interrupt the block after ``seconds`` (Python-level: a running numba kernel returns first)."""
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# ---------------------------------------------------------------------------------- documented ranges
_NUM = r"[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf)"
_RANGE_IN = re.compile(rf"\b(float|int)\b[^\n:]*?\bin\s*([\[\(])\s*({_NUM}|[\w.]+)\s*,\s*({_NUM}|[\w.]+)\s*([\]\)])")
_RANGE_CMP = re.compile(rf"\b(float|int)\b,?\s*(>=|>|<=|<)\s*({_NUM})(?![\w.])")


def _num(text):
    try:
        return float(text)
    except ValueError:
        return None  # a symbolic end (n_items): unknown here


def documented_ranges(obj):
    """``{param: (low, high, low_closed, high_closed)}`` parsed from a numpydoc Parameters section."""
    doc = inspect.getdoc(obj) or ""
    out = {}
    for name, spec in re.findall(r"^(\w+) : ([^\n]+)$", doc, re.M):
        if name in out:
            continue
        spec = spec.split(" or ")[0] if "array" not in spec.split(" or ")[0] else ""
        m = _RANGE_IN.search(spec)
        if m:
            lo, hi = _num(m.group(3)), _num(m.group(4))
            out[name] = (lo, hi, m.group(2) == "[", m.group(5) == "]")
            continue
        m = _RANGE_CMP.search(spec)
        if m:
            v = float(m.group(3))
            op = m.group(2)
            out[name] = (v, None, op == ">=", False) if op in (">=", ">") else (None, v, False, op == "<=")
            continue
        if re.search(r"\b(float|int)\b", spec) and re.search(r"\bpositive\b", spec):
            out[name] = (0.0, None, False, False)
    return out


def _interval_range(c):
    """``(low, high, low_closed, high_closed)`` of a scikit-learn ``Interval``; None without a finite end."""
    if c.left is None and c.right is None:
        return None
    lo_closed = c.closed in ("left", "both") and c.left is not None
    hi_closed = c.closed in ("right", "both") and c.right is not None
    lo = None if c.left is None else float(c.left)
    hi = None if c.right is None else float(c.right)
    return (lo, hi, lo_closed, hi_closed)


def constraint_ranges(obj):
    """``{param: range or None}`` read from the ``_parameter_constraints`` of an estimator class.

    A parameter constrained by exactly one ``Interval`` (besides ``None``, types and other non-numeric
    constraints) gets that interval as ``(low, high, low_closed, high_closed)``; a parameter with
    constraints but no single interval with a finite end (options, ``"boolean"``, a type, two
    intervals) maps to None: no range. Parameters without a constraint (absent, or
    ``"no_validation"``) are left out, so the caller falls back to :func:`documented_ranges`.
    """
    from sklearn.utils._param_validation import Interval

    out = {}
    for name, cons in (getattr(obj, "_parameter_constraints", None) or {}).items():
        if isinstance(cons, str):  # "no_validation": checked by the estimator's own code
            continue
        intervals = [c for c in cons if isinstance(c, Interval)]
        out[name] = _interval_range(intervals[0]) if len(intervals) == 1 else None
    return out


def constraint_options(obj):
    """``{param: set of str}``: the allowed strings of each ``StrOptions`` constraint of ``obj``."""
    from sklearn.utils._param_validation import StrOptions

    out = {}
    for name, cons in (getattr(obj, "_parameter_constraints", None) or {}).items():
        if not isinstance(cons, str):
            opts = set().union(*[c.options for c in cons if isinstance(c, StrOptions)])
            if opts:
                out[name] = opts
    return out


def parameter_ranges(obj):
    """The ranges of ``obj``'s parameters: its ``_parameter_constraints`` where a parameter has one,
    else its docstring (:func:`documented_ranges`)."""
    ranges = documented_ranges(obj)
    if isinstance(obj, type):
        ranges.update(constraint_ranges(obj))
    return {k: v for k, v in ranges.items() if v is not None}


# ---------------------------------------------------------------------------------- value kinds
def kind_of(value):
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, np.ndarray) and value.dtype.kind in "iuf" and value.size:
        return "iarray" if value.dtype.kind in "iu" else "farray"
    if isinstance(value, (list, tuple)) and value and all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in value
    ):
        return "farray" if any(isinstance(v, (float, np.floating)) for v in value) else "iarray"
    return "obj"


_LETTERS = "abcdghjklmopqrsuvwxyz"  # no e, f, i, n, t: never parses as a number ('inf', 'nan', '1e3')
_words = st.text(alphabet=_LETTERS, min_size=1, max_size=8)


@st.composite
def _nonfinite_array(draw, x, which):
    a = np.array(x, dtype=float)
    idx = draw(st.integers(0, a.size - 1))
    bad = np.nan if which == "nan" else draw(st.sampled_from([np.inf, -np.inf]))
    a.flat[idx] = bad
    return a


@st.composite
def _wrong_rank(draw, x):
    a = np.asarray(x)
    options = [a[..., None, None]]
    if a.ndim >= 2:
        options.append(a.reshape(-1))
    options.append(np.asarray(a.flat[0]))  # a 0-d array
    return draw(st.sampled_from(options))


@st.composite
def _strings_array(draw, x):
    a = np.asarray(x)
    w = draw(_words)
    return draw(st.sampled_from([np.full(a.shape, w), np.full(a.shape, w).tolist()]))


@st.composite
def _complex_array(draw, x):
    a = np.asarray(x).astype(complex)
    a.flat[draw(st.integers(0, a.size - 1))] += 1j * draw(st.floats(0.5, 10))
    return a


@st.composite
def _huge_array(draw, x):
    return np.asarray(x, dtype=float) * draw(st.sampled_from([1.0, -1.0])) * draw(st.floats(1e150, 1e300))


@st.composite
def _outside(draw, rng, kind):
    lo, hi, lo_closed, hi_closed = rng
    options = []
    if lo is not None and math.isfinite(lo):
        step = (draw(st.sampled_from([0.0, 1e-3, 0.5, 1.0, 1e6])) if not lo_closed
                else draw(st.sampled_from([1e-3, 0.5, 1.0, 1e6])))
        v = lo - step
        if kind == "int":
            v = math.floor(lo) - (1 if lo_closed else 0) - draw(st.integers(0, 3))
        options.append(v)
    if hi is not None and math.isfinite(hi):
        step = (draw(st.sampled_from([0.0, 1e-3, 0.5, 1.0, 1e6])) if not hi_closed
                else draw(st.sampled_from([1e-3, 0.5, 1.0, 1e6])))
        v = hi + step
        if kind == "int":
            v = math.ceil(hi) + (1 if hi_closed else 0) + draw(st.integers(0, 3))
        options.append(v)
    return draw(st.sampled_from(options))


def categories(kind, value, *, rng=None, data_arg=False, elementwise=False, options=None):
    """``{category: (strategy, certainly_invalid)}`` for an argument of this kind (``rng``: its range,
    ``options``: its allowed strings, from the constraints or the docstring)."""
    cats = {}
    if kind in ("farray", "iarray"):
        cats["nan"] = (_nonfinite_array(value, "nan"), True)
        cats["inf"] = (_nonfinite_array(value, "inf"), True)
        empty = np.asarray(value)[:0]
        cats["empty"] = (st.just(empty), data_arg)
        cats["wrong_rank"] = (_wrong_rank(value), not elementwise)
        cats["strings"] = (_strings_array(value), True)
        cats["complex"] = (_complex_array(value), True)
        if kind == "farray":
            cats["1e200"] = (_huge_array(value), False)
    elif kind in ("float", "int"):
        cats["nan"] = (st.just(float("nan")), True)
        cats["inf"] = (st.sampled_from([float("inf"), float("-inf")]), True)
        cats["strings"] = (_words, True)
        cats["complex"] = (st.builds(complex, st.just(float(value)), st.floats(0.5, 10)), True)
        if kind == "float":
            cats["1e200"] = (st.sampled_from([1e200, -1e200]),
                             rng is not None and (rng[0] is not None and rng[1] is not None))
        else:
            cats["non_integer"] = (st.just(float(value) + 0.5), True)
        if rng is not None:
            try:
                cats["out_of_range"] = (_outside(rng, kind), True)
            except Exception:  # pragma: no cover - a range with no finite end
                pass
        else:
            cats["zero_or_negative"] = (st.sampled_from([0, -1] if kind == "int" else [0.0, -1.0]), False)
    elif kind == "str":
        cats["strings"] = (_words.map(lambda w: "zz" + w).filter(lambda w: w not in (options or ())), True)
        cats["wrong_type"] = (st.sampled_from([3, 2.5]), True)
    elif kind == "bool":  # a string flag is only possibly wrong (truthiness is a common idiom)
        cats["wrong_type"] = (st.sampled_from(["yes", "no"]), False)
    else:  # an object: an instance, a model, a graph, a callable
        cats["wrong_type"] = (st.one_of(_words, st.just(3)), True)
    return cats


# ---------------------------------------------------------------------------------- snapshots
def _arrays_in(value, depth=0):
    """The numpy arrays reachable from ``value`` (containers and plain objects, two levels)."""
    if isinstance(value, np.ndarray):
        yield value
    elif depth > 2:
        return
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _arrays_in(v, depth + 1)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _arrays_in(v, depth + 1)
    elif hasattr(value, "__dict__") and not inspect.isclass(value) and not callable(value):
        for v in vars(value).values():
            yield from _arrays_in(v, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _arrays_in(getattr(value, f.name), depth + 1)


def snapshot(kwargs):
    return [(name, a, a.copy()) for name, v in kwargs.items() for a in _arrays_in(v)]


def changed(snap):
    for name, a, before in snap:
        if a.shape != before.shape or not np.array_equal(a, before, equal_nan=a.dtype.kind in "fc"):
            return name
    return None


def has_nonfinite(value, depth=0, skip=()):
    """True when ``value`` (a number, array, container, dataclass or fitted estimator) holds NaN/inf.

    ``skip``: attribute names of the top-level object whose NaN/inf is documented (a sentinel such as
    an infinite variance for an empty subset)."""
    if isinstance(value, (bool, np.bool_, str)) or value is None:
        return False
    if isinstance(value, (int, float, np.number)):
        try:
            return not np.isfinite(value)
        except TypeError:
            return False
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "fc" and not np.all(np.isfinite(value))
    if depth > 2:
        return False
    if isinstance(value, (list, tuple)):
        return any(has_nonfinite(v, depth + 1) for v in value[:1000])
    if isinstance(value, dict):
        return any(has_nonfinite(v, depth + 1) for v in list(value.values())[:1000])
    if hasattr(value, "__dict__") and not inspect.isclass(value):
        items = vars(value).items()
        if hasattr(value, "get_params"):  # a fitted estimator: its learned attributes
            items = [(k, v) for k, v in items if k.endswith("_") and not k.startswith("_")]
        return any(has_nonfinite(v, depth + 1) for k, v in items if not k.startswith("_")
                   and not (depth == 0 and k in skip))
    return False


def names_argument(message, names):
    for name in names:
        if re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message):
            return True
    return False


# ---------------------------------------------------------------------------------- one case
@dataclasses.dataclass
class Outcome:
    outcome: str
    detail: str = ""
    seconds: float = 0.0

    @property
    def passed(self):
        return self.outcome in PASSING


def run_case(thunk, kwargs_list, *, limit=CASE_LIMIT_S, **kwargs):
    """Run one case (see :func:`_classify`) in a forked child that is killed after ``limit``.

    LAPACK or a numba kernel cannot be interrupted by a Python signal, so a hang there would stop
    the whole suite: the child makes the time limit hard. Where ``fork`` is missing the case
    runs in process under a SIGALRM limit.
    """
    if not hasattr(os, "fork"):
        return _classify(thunk, kwargs_list, limit=limit, **kwargs)
    out = _run_forked(thunk, kwargs_list, limit=limit, **kwargs)
    if out.outcome == "hang":
        # a forked child can deadlock on a lock that another thread of the parent (a BLAS, TBB or torch
        # pool) held at fork time: seen twice in ~3000 cases, each on a valid call that takes 0.4-2.5 s.
        # A second child tells that from a real hang, which hangs again.
        out = _run_forked(thunk, kwargs_list, limit=limit, **kwargs)
        if out.outcome == "hang":
            out.detail += " (twice)"
    return out


def _one_thread_after_fork():
    """Run the forked child on one thread: a GNU OpenMP pool that the parent used (scikit-learn's
    k-means, torch's intra-op pool) has no threads in the child, and a parallel region there
    deadlocks (a valid KMeansCodebook or SVGPCoxProcess fit hung until killed); one thread runs
    inline."""
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1)
    except Exception:  # noqa: BLE001 - best effort
        pass
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            torch.set_num_threads(1)
        except Exception:  # noqa: BLE001
            pass


def _run_forked(thunk, kwargs_list, *, limit, **kwargs):
    """One attempt of :func:`run_case` in a forked child."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: classify, report, exit without running any cleanup of the parent
        code = 0
        try:
            os.close(r)
            _one_thread_after_fork()
            out = _classify(thunk, kwargs_list, limit=limit, **kwargs)
            os.write(w, json.dumps(dataclasses.asdict(out)).encode())
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    try:
        ready, _, _ = select.select([r], [], [], limit + 10.0)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            return Outcome("hang", f"still running after {limit:g} s (killed)", limit)
        chunks = []
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    if not chunks:
        return Outcome("crash", "the process died (a signal or a fatal error in compiled code)")
    return Outcome(**json.loads(b"".join(chunks)))


def _classify(thunk, kwargs_list, *, names, certain, base_nonfinite, expect_not_fitted=False, limit=CASE_LIMIT_S,
              rejects=None, nonfinite_ok=()):
    """Run ``thunk()`` (one bad-input call) and classify it.

    ``kwargs_list``: the argument dicts the call receives (checked for modification). ``names``: the
    words a good message contains (the argument's name and aliases). ``certain``: the value is invalid
    for sure. ``base_nonfinite``: the valid call's result already holds NaN/inf. ``rejects``: for a
    certificate function (which reports violations instead of raising), ``rejects(result)`` is
    true when the result reports the input as invalid: that is a clean outcome.
    """
    snaps = [s for kw in kwargs_list for s in snapshot(kw)]
    t0 = time.perf_counter()
    result, exc = None, None
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            with time_limit(limit):
                result = thunk()
    except CaseTimeout:
        return Outcome("hang", f"still running after {limit:g} s", time.perf_counter() - t0)
    except Exception as e:  # noqa: BLE001 - classified below
        exc = e
    seconds = time.perf_counter() - t0
    if seconds > limit:
        return Outcome("hang", f"took {seconds:.1f} s (limit {limit:g} s)", seconds)
    moved = changed(snaps)
    if moved is not None:
        return Outcome("mutated", f"argument {moved!r} was modified", seconds)
    if exc is not None:
        msg = " ".join(str(exc).split())
        text = f"{type(exc).__name__}: {msg[:200]}"
        if expect_not_fitted:
            return Outcome("clean" if isinstance(exc, NotFittedError) else "crash", text, seconds)
        if not isinstance(exc, (ValueError, TypeError)) or _is_internal(exc):
            return Outcome("crash", text, seconds)
        ok = names_argument(msg, names) or (
            any(n in ("X", "y", "Xq") for n in names) and any(w in msg for w in SKLEARN_DATA_WORDING)
        )
        return Outcome("clean" if ok else "unnamed", text, seconds)
    if expect_not_fitted:
        return Outcome("accepted", "ran before fit without NotFittedError", seconds)
    if rejects is not None and rejects(result):
        return Outcome("clean", "reported as a violation", seconds)
    if certain:
        return Outcome("accepted", "invalid value accepted", seconds)
    if not base_nonfinite and has_nonfinite(result, skip=nonfinite_ok):
        return Outcome("nonfinite", "returned NaN/inf", seconds)
    return Outcome("valid", "", seconds)


def _is_internal(exc):
    """numba typing errors subclass TypeError; they are crashes, not clean errors."""
    mod = type(exc).__module__ or ""
    return mod.startswith("numba") or type(exc).__name__ in ("TypingError", "LinAlgError", "NumbaError")


def fresh(kwargs):
    """A deep copy of a dict of arguments (each case gets its own inputs)."""
    return copy.deepcopy(kwargs)
