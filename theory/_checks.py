"""Shared input checks with one error wording for the whole package.

Every public entry point validates its input once, at the boundary, with these helpers. Messages
follow scikit-learn's wording: they name the parameter, the rule, and what was received::

    'gamma' must be a float in [0, 1]; got 1.5.

Wrong *type* raises :class:`TypeError`; wrong *value* or *shape* raises :class:`ValueError`.

Where this module sits: the package has three layers, :mod:`theory` (bounds as pure functions) and
:mod:`accel` (the optional torch paths) at the bottom and :mod:`algos` (estimators) on top. These checks
are pure numpy and are needed by all three, so they live in the bottom layer that has no optional
dependency: :mod:`theory`, which imports nothing from :mod:`algos` or :mod:`accel`. :mod:`accel` imports
them from here, and ``algos._validation`` re-exports them under their old names.
"""

from __future__ import annotations

import functools
import inspect
import numbers
import operator

import numpy as np

__all__ = [
    "check_scalar_float",
    "check_scalar_int",
    "check_option",
    "check_bool",
    "check_array_1d",
    "check_array",
    "check_same_length",
    "check_finite",
    "check_random_state",
    "spawn_generators",
    "check_not_strings",
    "domain",
    "Int",
    "Real",
    "Bool",
    "Option",
    "Array",
    "InBody",
]


def _show(value):
    """``repr`` of a value with numpy scalars shown as plain Python numbers."""
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value)


def _interval_text(low, high, closed):
    left = "[" if closed in ("both", "left") else "("
    right = "]" if closed in ("both", "right") else ")"
    lo = "-inf" if low is None else f"{low:g}" if isinstance(low, float) else str(low)
    hi = "inf" if high is None else f"{high:g}" if isinstance(high, float) else str(high)
    return f"{left}{lo}, {hi}{right}"


def _in_interval(value, low, high, closed):
    if low is not None:
        if closed in ("both", "left"):
            if value < low:
                return False
        elif value <= low:
            return False
    if high is not None:
        if closed in ("both", "right"):
            if value > high:
                return False
        elif value >= high:
            return False
    return True


def check_scalar_float(value, name, *, low=None, high=None, closed="both"):
    """Return ``value`` as a Python float, checking type, finiteness and an interval.

    Parameters
    ----------
    value : object
        The value to check. Booleans are rejected; any real number (int, float, numpy scalar) is
        accepted.
    name : str
        Parameter name used in the error message.
    low, high : float or None, default=None
        Interval ends; ``None`` means unbounded.
    closed : {"both", "left", "right", "neither"}, default="both"
        Which ends are included.

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If ``value`` is NaN, infinite (when bounded) or outside the interval.

    Examples
    --------
    >>> check_scalar_float(0.5, "gamma", low=0.0, high=1.0)
    0.5
    >>> check_scalar_float(1.5, "gamma", low=0.0, high=1.0)
    Traceback (most recent call last):
    ...
    ValueError: 'gamma' must be a float in [0, 1]; got 1.5.
    """
    interval = _interval_text(low, high, closed)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"'{name}' must be a float in {interval}; got {_show(value)} of type {type(value).__name__}."
        )
    value = float(value)
    if not np.isfinite(value) or not _in_interval(value, low, high, closed):
        raise ValueError(f"'{name}' must be a float in {interval}; got {value!r}.")
    return value


def check_scalar_int(value, name, *, low=None, high=None, closed="both"):
    """Return ``value`` as a Python int, checking type and an interval.

    Integral floats (``3.0``) are rejected: a count must be an integer.

    Examples
    --------
    >>> check_scalar_int(3, "n_runs", low=1)
    3
    >>> check_scalar_int(0, "n_runs", low=1)
    Traceback (most recent call last):
    ...
    ValueError: 'n_runs' must be an int in [1, inf]; got 0.
    """
    interval = _interval_text(low, high, closed)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"'{name}' must be an int in {interval}; got {_show(value)} of type {type(value).__name__}."
        )
    value = operator.index(value)
    if not _in_interval(value, low, high, closed):
        raise ValueError(f"'{name}' must be an int in {interval}; got {value!r}.")
    return int(value)


def check_option(value, name, options):
    """Check that ``value`` is one of ``options`` (strings compared exactly).

    Examples
    --------
    >>> check_option("index", "tie_break", ("index", "random"))
    'index'
    >>> check_option("foo", "tie_break", ("index", "random"))
    Traceback (most recent call last):
    ...
    ValueError: 'tie_break' must be one of {'index', 'random'}; got 'foo'.
    """
    opts = ", ".join(repr(o) for o in options)
    if not isinstance(value, str):
        raise TypeError(f"'{name}' must be one of {{{opts}}}; got {_show(value)} of type {type(value).__name__}.")
    if value not in options:
        raise ValueError(f"'{name}' must be one of {{{opts}}}; got {value!r}.")
    return value


def check_bool(value, name):
    """Check that ``value`` is a bool (Python or numpy)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"'{name}' must be a bool; got {value!r} of type {type(value).__name__}.")
    return bool(value)


def check_finite(array, name):
    """Raise ``ValueError`` if a float array contains NaN or inf, saying where."""
    array = np.asarray(array)
    if array.dtype.kind in "fc":
        bad = ~np.isfinite(array)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            idx_txt = idx[0] if len(idx) == 1 else idx
            raise ValueError(
                f"'{name}' must contain only finite values; got {_show(array[bad][0])} at index {idx_txt}."
            )
    return array


def check_array_1d(value, name, *, dtype="int", allow_empty=True):
    """Convert ``value`` to a 1-d numpy array of integers or floats, with clear errors.

    Parameters
    ----------
    value : array-like
    name : str
    dtype : {"int", "float"}, default="int"
        ``"int"`` accepts integer arrays and float arrays whose entries are all integral;
        anything else (non-integral floats, strings, booleans, objects) raises ``TypeError``.
    allow_empty : bool, default=True

    Returns
    -------
    ndarray of int64 or float64
    """
    try:
        arr = np.asarray(value)
    except Exception as exc:  # ragged input and the like
        raise TypeError(f"'{name}' must be a 1-d array of {dtype}s; got {type(value).__name__}.") from exc
    if arr.ndim != 1:
        raise ValueError(f"'{name}' must be 1-dimensional; got an array of shape {arr.shape}.")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"'{name}' must not be empty; got an array of length 0.")
    if dtype == "int":
        if arr.size == 0:
            return arr.astype(np.int64)
        if arr.dtype.kind in "iu":
            return arr.astype(np.int64)
        if arr.dtype.kind == "f":
            check_finite(arr, name)
            if np.all(arr == np.round(arr)):
                return arr.astype(np.int64)
            bad = arr[arr != np.round(arr)][0]
            raise TypeError(f"'{name}' must contain integers; got non-integer value {_show(bad)}.")
        raise TypeError(f"'{name}' must contain integers; got an array of dtype {arr.dtype}.")
    if dtype == "float":
        if arr.size and arr.dtype.kind not in "iuf":
            raise TypeError(f"'{name}' must contain real numbers; got an array of dtype {arr.dtype}.")
        arr = arr.astype(np.float64)
        check_finite(arr, name)
        return arr
    raise ValueError(f"unknown dtype {dtype!r}")  # programming error, not user input


def check_array(value, name, *, ndim=None, dtype="float", allow_empty=False, finite=True, shape=None):
    """Convert ``value`` to a numpy array of real numbers, with errors that name ``name``.

    Parameters
    ----------
    value : array-like
    name : str
        Parameter name used in the error messages.
    ndim : int, tuple of int or None, default=None
        Allowed numbers of dimensions (``None``: any).
    dtype : {"float", "int"}, default="float"
        ``"float"`` returns float64 (integers and booleans-free real input accepted); ``"int"``
        returns int64 and accepts floats only when every entry is integral.
    allow_empty : bool, default=False
    finite : bool, default=True
        Reject NaN and infinities.
    shape : tuple or None, default=None
        Expected shape; ``None`` entries match any length.

    Raises
    ------
    TypeError
        Strings, complex numbers, objects, ragged input, or non-integral values for ``dtype="int"``.
    ValueError
        Wrong number of dimensions, wrong shape, empty, NaN or infinite entries.

    Examples
    --------
    >>> check_array([[1, 2], [3, 4]], "X", ndim=2).dtype
    dtype('float64')
    >>> check_array([1.0, float("nan")], "w")
    Traceback (most recent call last):
    ...
    ValueError: 'w' must contain only finite values; got nan at index 1.
    >>> check_array(["a", "b"], "w")
    Traceback (most recent call last):
    ...
    TypeError: 'w' must be an array of real numbers; got an array of dtype <U1.
    """
    kind = "integers" if dtype == "int" else "real numbers"
    try:
        arr = np.asarray(value)
    except Exception as exc:  # ragged input and the like
        raise TypeError(f"'{name}' must be an array of {kind}; got {type(value).__name__}.") from exc
    if arr.dtype.kind not in "iuf" and not (arr.size == 0 and arr.dtype.kind in "iufbO"):
        raise TypeError(f"'{name}' must be an array of {kind}; got an array of dtype {arr.dtype}.")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(str(k) for k in allowed)
            raise ValueError(f"'{name}' must be {want}-dimensional; got an array of shape {arr.shape}.")
    if shape is not None and (arr.ndim != len(shape) or any(s is not None and s != t for s, t in zip(shape,
                                                                                                     arr.shape))):
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
        raise ValueError(f"'{name}' must have shape {want}; got an array of shape {arr.shape}.")
    if arr.size == 0:
        if not allow_empty:
            raise ValueError(f"'{name}' must not be empty; got an array of shape {arr.shape}.")
        return arr.astype(np.int64 if dtype == "int" else np.float64)
    if dtype == "int":
        if arr.dtype.kind == "f":
            check_finite(arr, name)
            if not np.all(arr == np.round(arr)):
                bad = arr[arr != np.round(arr)][0]
                raise TypeError(f"'{name}' must contain integers; got non-integer value {_show(bad)}.")
        return arr.astype(np.int64)
    arr = arr.astype(np.float64)
    if finite:
        check_finite(arr, name)
    return arr


def check_same_length(name_a, a, name_b, b):
    """Raise ``ValueError`` unless ``len(a) == len(b)`` (first axes), naming both arguments."""
    na, nb = len(a), len(b)
    if na != nb:
        raise ValueError(f"'{name_a}' and '{name_b}' must have the same length; got {na} and {nb}.")


def check_random_state(random_state, name="random_state"):
    """Turn ``None``, an int, a ``SeedSequence`` or a ``Generator`` into a ``numpy.random.Generator``.

    A ``RandomState`` is accepted for scikit-learn compatibility: a seed is drawn from it.

    Examples
    --------
    >>> g = check_random_state(0)
    >>> float(g.random()) == float(np.random.default_rng(0).random())
    True
    """
    if isinstance(random_state, (bool, np.bool_)):
        raise TypeError(
            f"'{name}' must be None, an int, a SeedSequence or a numpy Generator; got {type(random_state).__name__}."
        )
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        if isinstance(random_state, numbers.Integral) and random_state < 0:
            raise ValueError(f"'{name}' must be a non-negative int; got {_show(random_state)}.")
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    raise TypeError(
        f"'{name}' must be None, an int, a SeedSequence or a numpy Generator; "
        f"got {type(random_state).__name__}."
    )


def spawn_generators(random_state, n):
    """Return ``n`` independent generators derived from ``random_state`` via ``SeedSequence.spawn``.

    Same int ``random_state``, same children, whatever the order of use: this is how Monte-Carlo
    replicates and sweep points get their own streams. A ``SeedSequence`` or ``Generator`` passed
    twice gives fresh children the second time (numpy's ``spawn`` semantics).
    """
    n = check_scalar_int(n, "n", low=0)
    if isinstance(random_state, np.random.Generator):
        seq = getattr(random_state.bit_generator, "seed_seq", None)
        if seq is None:  # a generator built on legacy seeding has no SeedSequence: draw one
            seq = np.random.SeedSequence(int(random_state.integers(0, 2**63 - 1)))
        else:
            seq = seq.spawn(1)[0]
    elif isinstance(random_state, np.random.SeedSequence):
        seq = random_state
    else:
        rng = check_random_state(random_state)
        seq = rng.bit_generator.seed_seq
    return [np.random.default_rng(child) for child in seq.spawn(n)]


def check_not_strings(value, name):
    """Reject a string array with a ``TypeError`` naming ``name``.

    Runs before scikit-learn's conversion (whose message for a string does not say which argument
    holds it); ``None``, sparse matrices and anything :func:`numpy.asarray` cannot read are left to it,
    and so are complex and object input (scikit-learn's own errors).
    """
    import scipy.sparse as sp

    if value is None or sp.issparse(value):
        return
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001 - ragged input and the like: scikit-learn reports it
        return
    if arr.dtype.kind in "US" and arr.size:
        raise TypeError(f"'{name}' must be an array of real numbers; got an array of dtype {arr.dtype}.")



# ============================================================================================ declared domains
def _interval_expr(var, low, high, closed):
    """Source of the test ``low (<|<=) var (<|<=) high`` (``True`` when unbounded)."""
    parts = []
    low = low if low is None or isinstance(low, int) else float(low)
    high = high if high is None or isinstance(high, int) else float(high)
    if low is not None:
        parts.append(f"{low!r} {'<=' if closed in ('both', 'left') else '<'} {var}")
    if high is not None:
        parts.append(f"{var} {'<=' if closed in ('both', 'right') else '<'} {high!r}")
    return " and ".join(parts) or "True"


def _interval_test(low, high, closed):
    """A one-comparison test of ``low (<|<=) value (<|<=) high`` (the fast path of :func:`domain`)."""
    lo = -float("inf") if low is None else low
    hi = float("inf") if high is None else high
    if closed == "both":
        return lambda v: lo <= v <= hi
    if closed == "left":
        return lambda v: lo <= v < hi
    if closed == "right":
        return lambda v: lo < v <= hi
    return lambda v: lo < v < hi


class _Rule:
    """A documented domain of one argument; ``check(value, name)`` returns the value converted."""

    __slots__ = ("none",)

    def _none_text(self):
        return " or None" if self.none else ""


class Int(_Rule):
    """An int in an interval (``low``/``high`` ``None``: unbounded); ``none=True`` also admits ``None``."""

    __slots__ = ("low", "high", "closed", "fast")

    def __init__(self, low=None, high=None, closed="both", *, none=False):
        self.low, self.high, self.closed, self.none = low, high, closed, none
        self.fast = _interval_test(low, high, closed)

    def fast_expr(self, var):
        return f"type({var}) is int and {_interval_expr(var, self.low, self.high, self.closed)}"

    def check(self, value, name):
        if type(value) is int and self.fast(value):
            return value
        if value is None and self.none:
            return None
        return check_scalar_int(value, name, low=self.low, high=self.high, closed=self.closed)

    def __repr__(self):
        return f"an int in {_interval_text(self.low, self.high, self.closed)}{self._none_text()}"


class Real(_Rule):
    """A finite real number in an interval; ``array=True`` also admits an array of such numbers."""

    __slots__ = ("low", "high", "closed", "array", "fast")

    def __init__(self, low=None, high=None, closed="both", *, none=False, array=False):
        self.low, self.high, self.closed, self.none, self.array = low, high, closed, none, array
        self.fast = _interval_test(low, high, closed)

    def fast_expr(self, var):
        finite = "" if self.low is not None and self.high is not None else f" and {var} - {var} == 0.0"
        return f"type({var}) is float and {_interval_expr(var, self.low, self.high, self.closed)}{finite}"

    def check(self, value, name):
        if type(value) is float and value - value == 0.0 and self.fast(value):  # finite and inside
            return value
        if value is None and self.none:
            return None
        if self.array and isinstance(value, (np.ndarray, list, tuple)):
            return _check_real_array(value, name, self.low, self.high, self.closed)
        return check_scalar_float(value, name, low=self.low, high=self.high, closed=self.closed)

    def __repr__(self):
        text = f"a float in {_interval_text(self.low, self.high, self.closed)}"
        return text + (" or an array of such floats" if self.array else "") + self._none_text()


class Bool(_Rule):
    """A bool (Python or numpy)."""

    def __init__(self):
        self.none = False

    def fast_expr(self, var):
        return f"{var} is True or {var} is False"

    def check(self, value, name):
        return value if type(value) is bool else check_bool(value, name)

    def __repr__(self):
        return "a bool"


class Option(_Rule):
    """One of a fixed set of strings or numbers (numbers compared by value, bools refused)."""

    __slots__ = ("options",)

    def __init__(self, *options, none=False):
        self.options, self.none = tuple(options), none

    def check(self, value, name):
        if value is None and self.none:
            return None
        if all(isinstance(o, str) for o in self.options):
            return check_option(value, name, self.options)
        opts = ", ".join(repr(o) for o in self.options)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"'{name}' must be one of {{{opts}}}; got {_show(value)} of type {type(value).__name__}.")
        if value not in self.options:
            raise ValueError(f"'{name}' must be one of {{{opts}}}; got {_show(value)}.")
        return value

    def __repr__(self):
        return "one of {" + ", ".join(repr(o) for o in self.options) + "}" + self._none_text()


class Array(_Rule):
    """An array of real numbers (:func:`check_array` rules: ``ndim``, ``dtype``, ``allow_empty``, ``finite``),
    optionally ``nonnegative``."""

    __slots__ = ("kwargs", "nonnegative")

    def __init__(self, *, nonnegative=False, none=False, **kwargs):
        self.kwargs, self.nonnegative, self.none = kwargs, nonnegative, none

    def check(self, value, name):
        if value is None and self.none:
            return None
        arr = check_array(value, name, **self.kwargs)
        if self.nonnegative and arr.size and arr.min() < 0:
            bad = arr[arr < 0].flat[0]
            raise ValueError(f"'{name}' must contain only non-negative values; got {_show(bad)}.")
        return arr

    def __repr__(self):
        opts = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"an array ({opts}{', non-negative' if self.nonnegative else ''}){self._none_text()}"


class InBody(_Rule):
    """A rule that depends on other arguments (shapes, counts, a callable): checked in the function body.

    ``text`` states the rule as the docstring does; nothing is checked by :func:`domain`.
    """

    __slots__ = ("text",)

    def __init__(self, text):
        self.text, self.none = text, False

    check = None

    def __repr__(self):
        return self.text


def _check_real_array(value, name, low, high, closed):
    """Float64 array of finite reals inside an interval; the first offender is named with its index."""
    rule = f"a float in {_interval_text(low, high, closed)}"
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf" and not (arr.size == 0 and arr.dtype.kind in "fO"):
        raise TypeError(f"'{name}' must be {rule} or an array of such floats; got an array of dtype {arr.dtype}.")
    arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr)
    if low is not None:
        bad |= (arr < low) if closed in ("both", "left") else (arr <= low)
    if high is not None:
        bad |= (arr > high) if closed in ("both", "right") else (arr >= high)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        where = idx[0] if len(idx) == 1 else idx
        raise ValueError(f"'{name}' must be {rule}; got {float(arr[bad][0])!r} at index {where}.")
    return arr


def domain(**rules):
    """Declare and check the documented domain of a function's arguments.

    Each keyword names a parameter of the decorated function and gives its rule (:class:`Int`,
    :class:`Real`, :class:`Bool`, :class:`Option`, :class:`Array`, or :class:`InBody` for rules that
    depend on other arguments). The wrapper checks every argument passed, with the wording of
    :func:`check_scalar_int` and friends, and hands the converted value on; defaults are not re-checked
    (they lie inside their domain). The rules are kept as ``fn.__domain__``.

    Examples
    --------
    >>> @domain(d=Int(low=1), delta=Real(0, 1, closed="neither"))
    ... def f(d, delta=0.1):
    ...     return d * delta
    >>> f(2)
    0.2
    >>> f(0)
    Traceback (most recent call last):
    ...
    ValueError: 'd' must be an int in [1, inf]; got 0.
    >>> f.__domain__["delta"]
    a float in (0, 1)
    """
    def decorate(fn):
        sig = inspect.signature(fn)
        unknown = set(rules) - set(sig.parameters)
        if unknown:
            raise TypeError(f"domain of {fn.__name__} names unknown parameters {sorted(unknown)}")
        checked = _compile_checks(fn, sig, rules)
        functools.update_wrapper(checked, fn)
        checked.__domain__ = dict(rules)
        return checked

    return decorate


def _compile_checks(fn, sig, rules):
    """Build a wrapper with ``fn``'s own signature whose body tests each argument inline.

    The common case (a plain int or float inside its interval) costs one comparison chain per
    argument; anything else goes to the rule's ``check``, which converts or raises. Defaults are passed
    on untouched (``x is <default>``), so a ``None`` default costs nothing.
    """
    env = {"_fn": fn}
    params, call, lines = [], [], []
    star_seen = False
    for i, p in enumerate(sig.parameters.values()):
        name = p.name
        text = name
        if p.default is not inspect.Parameter.empty:
            env[f"_d{i}"] = p.default
            text = f"{name}=_d{i}"
        if p.kind is p.VAR_POSITIONAL:
            text, star_seen = f"*{name}", True
            call.append(f"*{name}")
        elif p.kind is p.VAR_KEYWORD:
            text = f"**{name}"
            call.append(f"**{name}")
        elif p.kind is p.KEYWORD_ONLY:
            if not star_seen:
                params.append("*")
                star_seen = True
            call.append(f"{name}={name}")
        elif p.kind is p.POSITIONAL_ONLY:
            call.append(name)
        else:
            call.append(name)
        params.append(text)
        if p.kind is p.POSITIONAL_ONLY and (i + 1 == len(sig.parameters)
                                           or list(sig.parameters.values())[i + 1].kind is not p.POSITIONAL_ONLY):
            params.append("/")
        rule = rules.get(name)
        if rule is None or rule.check is None:
            continue
        env[f"_r{i}"] = rule.check
        fast = rule.fast_expr(name) if hasattr(rule, "fast_expr") else None
        skip = f"{name} is _d{i}" if p.default is not inspect.Parameter.empty else None
        cond = " or ".join(c for c in (skip, fast) if c)
        if cond:
            lines.append(f"    if not ({cond}):\n        {name} = _r{i}({name}, {name!r})")
        else:
            lines.append(f"    {name} = _r{i}({name}, {name!r})")
    src = f"def {fn.__name__}({', '.join(params)}):\n" + "\n".join(lines) + \
        f"\n    return _fn({', '.join(call)})\n"
    exec(compile(src, f"<domain of {fn.__qualname__}>", "exec"), env)  # noqa: S102 - source built above
    return env[fn.__name__]
