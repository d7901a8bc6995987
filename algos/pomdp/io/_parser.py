"""Reader and writer for Cassandra's ``.POMDP`` file format (the pomdp reconstruction notes §5, §7).

Grammar handled (pomdp-solve ``parser.y`` / ``scanner.l``, plus leniencies):

* ``#`` comments to end of line (also inline); ``:`` is a token of its own; identifiers are a letter
  then ``[A-Za-z0-9_-]*``; numbers are ints or reals with optional sign/exponent, and ``.5``/``1.``.
* Preamble, any order: ``discount: f`` (required, in [0, 1]); ``values: reward|cost`` (``cost``
  negates every reward); ``states:``/``actions:``/``observations:`` as a count or a list of names
  (lists may span lines). Counts give the names ``s0.., a0.., o0..``. The three must be declared
  before ``start``/``T``/``O``/``R`` entries.
* ``start: p1 .. pS`` | ``start: uniform`` | ``start: <state>`` | ``start include: s..`` |
  ``start exclude: s..`` (states by name or 0-based index). Default: uniform.
* ``T: a : s : s' p`` | ``T: a : s`` + (S numbers | ``uniform`` | ``reset``) | ``T: a`` + (S x S
  numbers | ``uniform`` | ``identity``). ``reset`` copies the start distribution declared *so far*
  (uniform if none yet).
* ``O: a : s' : o p`` | ``O: a : s'`` + (O numbers | ``uniform``) | ``O: a`` + (S x O | ``uniform``).
* ``R: a : s : s' : o v`` | ``R: a : s : s'`` + O values | ``R: a : s`` + S x O values (rows s').
  Rewards default to 0.
* ``*`` is a wildcard in any field; later entries overwrite earlier ones.

The reward is reduced at once to ``r[s, a] = sum_{s', o} T[a,s,s'] Z[a,s',o] R[a,s,s',o]``. ``R`` is
never held as a dense ``A x S x S x O`` array: entries are replayed per action over blocks of
source states (at most ~2e6 numbers at a time). Where ``R[a, s, :, :]`` is constant the value is
taken exactly (no float round-off from the expectation).

Row checks, after all entries are read (``T`` rows, ``O`` rows and the start distribution):

* every number given as a probability must lie in [0, 1] (else ``ValueError`` naming line/token);
* a row summing to exactly 0 is *missing*: ``missing_rows="error"`` (default) raises, naming the
  row; ``"uniform"`` fills it uniformly; ``"self"`` makes a missing ``T`` row an absorbing self-loop
  (missing ``O`` rows, and a missing start, become uniform). mini-hall2 (state 12) needs
  ``missing_rows="self"`` or ``"uniform"``;
* with ``renormalize=True`` (default), a row deviating from 1 by at most ``1e-4`` is renormalised
  silently (4x4.95 and 1d: deviations ~1e-6), by more than ``1e-4`` and at most ``1e-2`` it is
  renormalised with a :class:`POMDPFileWarning`, and by more than ``1e-2`` it is an error naming
  the file, the row (and the line that last wrote it) and the deviation. Rows within ``1e-12`` of 1
  are left untouched, so write/read round trips are exact;
* with ``renormalize=False``, any deviation above ``1e-9`` is an error (the raw 4x4.95 is rejected).
"""

from __future__ import annotations

import os
import re
import warnings

import numpy as np

from ..._io import atomic_write, check_read_budget, read_budget_bytes
from ..._validation import check_option
from .._model import POMDP

__all__ = ["POMDPFileWarning", "parse_pomdp", "read_pomdp", "write_pomdp"]

SILENT_TOL = 1e-4
ERROR_TOL = 1e-2
STRICT_TOL = 1e-9
EXACT_TOL = 1e-12


class POMDPFileWarning(UserWarning):
    """A ``.POMDP`` file needed a visible repair (rows renormalised by more than ``1e-4``)."""


_TOKEN_RE = re.compile(r":|[^\s:]+")
_NUM_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")
_INT_RE = re.compile(r"\d+\Z")
_ID_RE = re.compile(r"[A-Za-z][A-Za-z0-9_\-]*\Z")
_KEYWORDS = {"discount", "values", "states", "actions", "observations", "start", "T", "O", "R"}


class _Tok:
    __slots__ = ("text", "line", "kind")

    def __init__(self, text, line, kind):
        self.text, self.line, self.kind = text, line, kind


def _tokenize(text, name):
    toks = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0]
        for m in _TOKEN_RE.finditer(line):
            t = m.group()
            if t == ":":
                kind = "colon"
            elif t == "*":
                kind = "star"
            elif _NUM_RE.match(t):
                kind = "num"
            elif _ID_RE.match(t):
                kind = "id"
            else:
                raise ValueError(f"{name}, line {lineno}: unexpected token {t!r} (not a number, a name, '*' or ':').")
            toks.append(_Tok(t, lineno, kind))
    return toks


#: Bytes of one generated name (``s123456``: the str object and the list slot).
_NAME_BYTES = 64
#: The dense arrays the reader builds, per (a, s, s') of ``T`` and (a, s', o) of ``Z``: the float64 array,
#: the copy the model keeps and a temporary of the row checks.
_DENSE_COPIES = 3


def _model_bytes(S, A, O):
    """Estimated peak bytes of reading a model of these sizes (Python ints, no overflow)."""
    return _DENSE_COPIES * 8 * A * S * (S + O) + 32 * A * S + _NAME_BYTES * (S + A + O) + 16 * S * A


class _Parser:
    def __init__(self, text, name, renormalize, missing_rows, max_bytes=None):
        self.name = name
        self.max_bytes = max_bytes
        self.file_bytes = len(text)
        self.renormalize = renormalize
        self.missing_rows = missing_rows
        self.toks = _tokenize(text, name)
        self.i = 0
        self.discount = None
        self.values = None
        self.names = {"states": None, "actions": None, "observations": None}
        self.start = None
        self.start_line = None
        self.T = self.Z = None
        self.r_entries = []

    # ------------------------------------------------------------- utilities
    def err(self, tok, msg):
        if tok is None:
            line = self.toks[-1].line if self.toks else 1
            return ValueError(f"{self.name}, line {line}: {msg} (at end of file).")
        return ValueError(f"{self.name}, line {tok.line}: {msg}; got {tok.text!r}.")

    def peek(self, k=0):
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def is_entry_start(self, j):
        toks = self.toks
        if j >= len(toks) or toks[j].kind != "id" or toks[j].text not in _KEYWORDS:
            return False
        if j + 1 < len(toks) and toks[j + 1].kind == "colon":
            return True
        return (
            toks[j].text == "start"
            and j + 2 < len(toks)
            and toks[j + 1].text in ("include", "exclude")
            and toks[j + 2].kind == "colon"
        )

    def read_data(self):
        out = []
        while self.i < len(self.toks) and not self.is_entry_start(self.i):
            tok = self.toks[self.i]
            if tok.kind == "colon":
                raise self.err(tok, "unexpected ':' (a new entry must start with a keyword)")
            out.append(tok)
            self.i += 1
        return out

    def number(self, tok, what="a number"):
        if tok.kind != "num":
            raise self.err(tok, f"expected {what}")
        return float(tok.text)

    def prob(self, tok):
        p = self.number(tok, "a probability")
        if not 0.0 <= p <= 1.0:
            raise self.err(tok, "probability out of [0, 1]")
        return p

    def numbers(self, toks, count, what, prob):
        if len(toks) != count:
            where = toks[0] if toks else self.peek() or (self.toks[self.i - 1] if self.toks else None)
            raise ValueError(
                f"{self.name}, line {where.line if where else 1}: {what} expects {count} "
                f"number{'s' if count != 1 else ''}; got {len(toks)}."
            )
        conv = self.prob if prob else self.number
        return np.array([conv(t) for t in toks], dtype=np.float64)

    def need_sizes(self, tok):
        for key in ("states", "actions", "observations"):
            if self.names[key] is None:
                raise self.err(tok, f"entry before '{key}:' was declared")

    @property
    def S(self):
        return len(self.names["states"])

    @property
    def A(self):
        return len(self.names["actions"])

    @property
    def O(self):  # noqa: E743 - the paper's notation: O observations, as S states and A actions
        return len(self.names["observations"])

    def index(self, tok, key, allow_star=True):
        names = self.names[key]
        what = key[:-1]
        if tok is None:
            raise self.err(None, f"expected a {what}")
        if tok.kind == "star":
            if not allow_star:
                raise self.err(tok, f"'*' is not allowed here; expected a {what}")
            return slice(None)
        if tok.kind == "num":
            if not _INT_RE.match(tok.text):
                raise self.err(tok, f"expected a {what} name or 0-based index")
            k = int(tok.text)
            if k >= len(names):
                raise self.err(tok, f"{what} index out of range [0, {len(names) - 1}]")
            return k
        if tok.kind == "id":
            try:
                return names.index(tok.text)
            except ValueError:
                raise self.err(tok, f"unknown {what} name") from None
        raise self.err(tok, f"expected a {what}")

    # ------------------------------------------------------------- driver
    def parse(self):
        while self.i < len(self.toks):
            tok = self.toks[self.i]
            if not self.is_entry_start(self.i):
                raise self.err(tok, "expected an entry keyword (discount, values, states, actions, "
                                    "observations, start, T, O, R) followed by ':'")
            key = tok.text
            if key == "start" and self.toks[self.i + 1].kind != "colon":
                mode = self.toks[self.i + 1].text
                self.i += 3
                self.parse_start(tok, mode)
                continue
            self.i += 2
            if key == "discount":
                self.parse_discount(tok)
            elif key == "values":
                self.parse_values(tok)
            elif key in ("states", "actions", "observations"):
                self.parse_names(tok, key)
            elif key == "start":
                self.parse_start(tok, None)
            else:
                self.parse_matrix_entry(tok, key)
        return self.finish()

    def parse_discount(self, kw):
        data = self.read_data()
        if len(data) != 1:
            raise self.err(data[1] if len(data) > 1 else kw, "'discount:' expects one number")
        g = self.number(data[0])
        if not 0.0 <= g <= 1.0:
            raise self.err(data[0], "discount must be in [0, 1]")
        self.discount = g

    def parse_values(self, kw):
        data = self.read_data()
        if len(data) != 1 or data[0].text not in ("reward", "cost"):
            raise self.err(data[0] if data else kw, "'values:' expects 'reward' or 'cost'")
        self.values = data[0].text

    def parse_names(self, kw, key):
        if self.names[key] is not None:
            raise self.err(kw, f"'{key}:' declared twice")
        if self.T is not None:
            raise self.err(kw, f"'{key}:' after the first T/O/R/start entry")
        data = self.read_data()
        if not data:
            raise self.err(kw, f"'{key}:' expects a count or a list of names")
        if len(data) == 1 and data[0].kind == "num":
            if not _INT_RE.match(data[0].text) or int(data[0].text) < 1:
                raise self.err(data[0], f"'{key}:' count must be a positive integer")
            n = int(data[0].text)
            self.check_budget(data[0], {key: n})  # before any name is built
            self.names[key] = [f"{key[0]}{i}" for i in range(n)]
            return
        names = []
        for t in data:
            if t.kind != "id":
                raise self.err(t, f"'{key}:' expects a count or a list of names")
            if t.text in names:
                raise self.err(t, f"duplicate {key[:-1]} name")
            names.append(t.text)
        self.names[key] = names
        self.check_budget(data[0], {key: len(names)})

    def check_budget(self, tok, declared):
        """Refuse sizes whose dense model would exceed the memory budget, before allocating it."""
        sizes = {k: (len(v) if v is not None else 1) for k, v in self.names.items()}
        sizes.update(declared)
        S, A, O = sizes["states"], sizes["actions"], sizes["observations"]
        nbytes = _model_bytes(S, A, O)
        what = ", ".join(f"{k}: {v}" for k, v in declared.items())
        check_read_budget(
            nbytes, f"'{what}' (a dense model with S={S}, A={A}, O={O} so far: T and Z as float64)",
            f"{self.name}, line {tok.line if tok is not None else 1}", self.max_bytes, file_bytes=self.file_bytes,
            hint="the .POMDP reader builds dense arrays; for a large sparse model build a POMDP with a "
                 "sequence of sparse T matrices (storage='sparse') or write it as POMDPX",
        )

    def ensure_arrays(self, kw):
        self.need_sizes(kw)
        if self.T is None:
            self.check_budget(kw, {})
            S, A, O = self.S, self.A, self.O
            self.T = np.zeros((A, S, S))
            self.Z = np.zeros((A, S, O))
            self.T_line = np.zeros((A, S), dtype=np.int64)
            self.Z_line = np.zeros((A, S), dtype=np.int64)

    def parse_start(self, kw, mode):
        self.ensure_arrays(kw)
        S = self.S
        data = self.read_data()
        if not data:
            raise self.err(kw, "'start:' expects a distribution, 'uniform', a state, or a list of states")
        if mode is None:
            if len(data) == 1 and data[0].text == "uniform":
                b = np.full(S, 1.0 / S)
            elif len(data) == 1 and data[0].kind == "id":
                b = np.zeros(S)
                b[self.index(data[0], "states", allow_star=False)] = 1.0
            else:
                b = self.numbers(data, S, "'start:'", prob=True)
        else:
            mask = np.zeros(S, dtype=bool)
            for t in data:
                mask[self.index(t, "states", allow_star=False)] = True
            if mode == "exclude":
                mask = ~mask
            if not mask.any():
                raise self.err(kw, f"'start {mode}:' leaves no state")
            b = mask / mask.sum()
        self.start = b
        self.start_line = kw.line

    def parse_fields(self, kw, max_fields):
        fields = []
        while True:
            tok = self.peek()
            if tok is None or tok.kind == "colon":
                raise self.err(tok, f"expected a field of '{kw.text}:'")
            fields.append(tok)
            self.i += 1
            nxt = self.peek()
            if nxt is not None and nxt.kind == "colon" and len(fields) < max_fields:
                self.i += 1
            else:
                return fields

    def parse_matrix_entry(self, kw, key):
        self.ensure_arrays(kw)
        S, O = self.S, self.O
        max_fields = 4 if key == "R" else 3
        fields = self.parse_fields(kw, max_fields)
        data = self.read_data()
        a = self.index(fields[0], "actions")
        line = kw.line
        label = f"'{key}: " + " : ".join(f.text for f in fields) + "'"
        if key == "T":
            T = self.T
            if len(fields) == 3:
                s, sp = self.index(fields[1], "states"), self.index(fields[2], "states")
                T[a, s, sp] = self.numbers(data, 1, label, prob=True)[0]
                self.T_line[a, s] = line
            elif len(fields) == 2:
                s = self.index(fields[1], "states")
                if len(data) == 1 and data[0].text == "uniform":
                    row = np.full(S, 1.0 / S)
                elif len(data) == 1 and data[0].text == "reset":
                    row = self.start if self.start is not None else np.full(S, 1.0 / S)
                else:
                    row = self.numbers(data, S, label, prob=True)
                T[a, s, :] = row
                self.T_line[a, s] = line
            else:
                if len(data) == 1 and data[0].text == "uniform":
                    M = np.full((S, S), 1.0 / S)
                elif len(data) == 1 and data[0].text == "identity":
                    M = np.eye(S)
                else:
                    M = self.numbers(data, S * S, label, prob=True).reshape(S, S)
                T[a] = M
                self.T_line[a] = line
        elif key == "O":
            Z = self.Z
            if len(fields) == 3:
                sp, o = self.index(fields[1], "states"), self.index(fields[2], "observations")
                Z[a, sp, o] = self.numbers(data, 1, label, prob=True)[0]
                self.Z_line[a, sp] = line
            elif len(fields) == 2:
                sp = self.index(fields[1], "states")
                if len(data) == 1 and data[0].text == "uniform":
                    row = np.full(O, 1.0 / O)
                else:
                    row = self.numbers(data, O, label, prob=True)
                Z[a, sp, :] = row
                self.Z_line[a, sp] = line
            else:
                if len(data) == 1 and data[0].text == "uniform":
                    M = np.full((S, O), 1.0 / O)
                else:
                    M = self.numbers(data, S * O, label, prob=True).reshape(S, O)
                Z[a] = M
                self.Z_line[a] = line
        else:
            if len(fields) < 2:
                raise self.err(kw, "'R:' needs at least 'R: action : start-state'")
            s = self.index(fields[1], "states")
            if len(fields) == 4:
                sp, o = self.index(fields[2], "states"), self.index(fields[3], "observations")
                vals = self.numbers(data, 1, label, prob=False)[0]
            elif len(fields) == 3:
                sp, o = self.index(fields[2], "states"), slice(None)
                vals = self.numbers(data, O, label, prob=False)
            else:
                sp, o = slice(None), slice(None)
                vals = self.numbers(data, S * O, label, prob=False).reshape(S, O)
            self.r_entries.append((a, s, sp, o, vals))

    # ------------------------------------------------------------- checks
    def fix_rows(self, P, lines, label, row_key, is_T):
        """Missing-row handling and renormalisation of the stochastic rows of ``P`` (A, S, n)."""
        acts, states = self.names["actions"], self.names["states"]
        sums = P.sum(axis=2)
        missing = sums == 0.0
        if missing.any():
            a, s = (int(x) for x in np.argwhere(missing)[0])
            if self.missing_rows == "error":
                raise ValueError(
                    f"{self.name}: row {label}[{acts[a]!r}, {row_key}={states[s]!r}] is missing (all "
                    f"zero; {int(missing.sum())} such row(s)); pass missing_rows='self' or 'uniform' to fill it."
                )
            for a, s in np.argwhere(missing):
                if is_T and self.missing_rows == "self":
                    P[a, s, s] = 1.0
                else:
                    P[a, s, :] = 1.0 / P.shape[2]
            sums = P.sum(axis=2)
        dev = np.abs(sums - 1.0)
        worst = np.unravel_index(int(np.argmax(dev)), dev.shape)
        dmax = float(dev[worst])
        a, s = (int(x) for x in worst)

        def where():
            ln = int(lines[a, s])
            at = f" (last written at line {ln})" if ln else ""
            return (
                f"row {label}[{acts[a]!r}, {row_key}={states[s]!r}]{at} sums to {float(sums[a, s])!r}, "
                f"deviation {dmax:.3g}"
            )

        limit = ERROR_TOL if self.renormalize else STRICT_TOL
        if dmax > limit:
            n_bad = int((dev > limit).sum())
            raise ValueError(
                f"{self.name}: {where()} > {limit:g} ({n_bad} row(s) of {label} beyond it"
                + ("" if self.renormalize else "; renormalize=False") + ")."
            )
        if dmax > SILENT_TOL:
            warnings.warn(
                f"{self.name}: {int((dev > SILENT_TOL).sum())} row(s) of {label} renormalised by more than "
                f"{SILENT_TOL:g}; worst: {where()}.",
                POMDPFileWarning,
                stacklevel=4,
            )
        fix = dev > EXACT_TOL
        if fix.any():
            P[fix] /= sums[fix][:, None]

    def fix_start(self):
        S = self.S
        if self.start is None:
            return np.full(S, 1.0 / S)
        b = self.start.copy()
        tot = float(b.sum())
        if tot == 0.0:
            if self.missing_rows == "error":
                raise ValueError(f"{self.name}, line {self.start_line}: the start distribution is all zero.")
            return np.full(S, 1.0 / S)
        dev = abs(tot - 1.0)
        limit = ERROR_TOL if self.renormalize else STRICT_TOL
        msg = f"{self.name}, line {self.start_line}: the start distribution sums to {tot!r}, deviation {dev:.3g}"
        if dev > limit:
            raise ValueError(msg + f" > {limit:g}.")
        if dev > SILENT_TOL:
            warnings.warn(msg + f" > {SILENT_TOL:g}; renormalised.", POMDPFileWarning, stacklevel=4)
        if dev > EXACT_TOL:
            b /= tot
        return b

    def finish(self):
        if self.discount is None:
            raise ValueError(f"{self.name}: no 'discount:' entry.")
        for key in ("states", "actions", "observations"):
            if self.names[key] is None:
                raise ValueError(f"{self.name}: no '{key}:' entry.")
        self.ensure_arrays(None)
        self.fix_rows(self.T, self.T_line, "T", "s", True)
        self.fix_rows(self.Z, self.Z_line, "O", "s'", False)
        b0 = self.fix_start()
        r = _expected_reward(self.T, self.Z, self.r_entries)
        if self.values == "cost":
            r = -r
        return POMDP(
            self.T, self.Z, r, self.discount, b0,
            self.names["states"], self.names["actions"], self.names["observations"],
        )


def _expected_reward(T, Z, entries, block_elems=2_000_000):
    """``r[s, a] = sum_{s',o} T[a,s,s'] Z[a,s',o] R[a,s,s',o]`` replaying the R entries in order.

    Holds at most a ``(block, S, O)`` slice of ``R`` at a time (one action, a block of source states).
    """
    A, S, _ = T.shape
    O = Z.shape[2]
    r = np.zeros((S, A))
    if not entries:
        return r
    block = max(1, block_elems // (S * O))
    for a in range(A):
        ent = [e for e in entries if e[0] == slice(None) or e[0] == a]
        if not ent:
            continue
        for lo in range(0, S, block):
            hi = min(S, lo + block)
            Rb = np.zeros((hi - lo, S, O))
            for _, s, sp, o, vals in ent:
                if isinstance(s, slice):
                    Rb[:, sp, o] = vals
                elif lo <= s < hi:
                    Rb[s - lo, sp, o] = vals
            const = Rb[:, 0, 0]
            is_const = (Rb == const[:, None, None]).all(axis=(1, 2))
            ev = np.einsum("ip,po,ipo->i", T[a, lo:hi], Z[a], Rb)
            r[lo:hi, a] = np.where(is_const, const, ev)
    return r


def parse_pomdp(text, name="<string>", *, renormalize=True, missing_rows="error", max_bytes=None):
    """Parse Cassandra ``.POMDP`` text into a :class:`POMDP`.

    Parameters
    ----------
    text : str
        File contents.
    name : str, default="<string>"
        Name used in error messages (the file name for :func:`read_pomdp`).
    renormalize : bool, default=True
        Renormalise probability rows that deviate from 1: silently up to ``1e-4``, with a
        :class:`POMDPFileWarning` up to ``1e-2``; beyond ``1e-2`` raise. ``False``: raise on any
        deviation above ``1e-9``.
    missing_rows : {"error", "uniform", "self"}, default="error"
        What to do with an all-zero ``T`` or ``O`` row: raise (naming the row), fill uniformly, or
        (``"self"``) make a ``T`` row an absorbing self-loop (``O`` rows then become uniform).
    max_bytes : int or None, default=None
        Memory budget of the reader in bytes. ``None``: the environment variable
        ``ALGOS_READ_BUDGET_MB`` (MiB) if set, else the larger of 128 MiB and 1024 times the size of
        the file (at most half the physical memory). Declared sizes whose dense model
        (``T`` (A, S, S) and ``Z`` (A, S, O), float64, with the reader's copies) would exceed it are
        refused when they are read, before anything proportional to them is allocated.

    Returns
    -------
    POMDP
        The model.

    Raises
    ------
    ValueError
        With the file name, line number and offending token for syntax errors, unknown names,
        probabilities outside [0, 1], wrong counts of numbers, a discount outside [0, 1]; with the
        row and deviation for rows that do not sum to 1; with the line and the estimate in bytes when
        the declared sizes exceed the memory budget.
    """
    if not isinstance(text, str):
        raise TypeError(f"'text' must be a str; got {type(text).__name__}.")
    if not isinstance(renormalize, (bool, np.bool_)):
        raise TypeError(f"'renormalize' must be a bool; got {renormalize!r} of type {type(renormalize).__name__}.")
    check_option(missing_rows, "missing_rows", ("error", "uniform", "self"))
    read_budget_bytes(max_bytes)  # a bad max_bytes is reported before parsing
    return _Parser(text, str(name), bool(renormalize), missing_rows, max_bytes).parse()


def read_pomdp(path, **kwargs):
    """Read a ``.POMDP`` file; keyword arguments as for :func:`parse_pomdp`.

    Parameters
    ----------
    path : str or path-like
        The file.
    **kwargs
        As for :func:`parse_pomdp`.

    Returns
    -------
    POMDP
        The model.
    """
    path = os.fspath(path)
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    return parse_pomdp(text, path, **kwargs)


def _names_line(names, prefix):
    if tuple(names) == tuple(f"{prefix}{i}" for i in range(len(names))):
        return str(len(names))
    for n in names:
        if not _ID_RE.match(n) or n in ("uniform", "identity", "reset", "include", "exclude"):
            raise ValueError(
                f"cannot write name {n!r}: names must be a letter then [A-Za-z0-9_-]* and not a keyword."
            )
    return " ".join(names)


def _fmt(x):
    return repr(float(x))


def write_pomdp(pomdp, path=None):
    """Write ``pomdp`` in Cassandra format and return the text (also saved to ``path`` if given).

    Writes the preamble, ``start:`` as a full distribution, ``T: a`` and ``O: a`` as explicit
    matrices, and the expected reward as ``R: a : s : * : * r[s, a]``. Numbers use ``repr``, so
    :func:`parse_pomdp` gives back the same model exactly (Cassandra's ``R[a,s,s',o]`` is not kept:
    only ``r[s, a]`` is part of the model).

    Parameters
    ----------
    pomdp : POMDP
        The model.
    path : str, path-like or None, default=None
        Where to write (``None``: only return the text).

    Returns
    -------
    str
        The text.
    """
    if not isinstance(pomdp, POMDP):
        raise TypeError(f"'pomdp' must be a POMDP; got {type(pomdp).__name__}.")
    pomdp = pomdp.to_dense()  # rows are written dense; a sparse model beyond the memory limit is refused
    lines = [
        "# written by algos.pomdp.write_pomdp",
        f"discount: {_fmt(pomdp.discount)}",
        "values: reward",
        f"states: {_names_line(pomdp.states, 's')}",
        f"actions: {_names_line(pomdp.actions, 'a')}",
        f"observations: {_names_line(pomdp.observations, 'o')}",
        "",
        "start:",
        " ".join(_fmt(x) for x in pomdp.b0),
        "",
    ]
    for key, P in (("T", pomdp.T), ("O", pomdp.Z)):
        for a in range(pomdp.n_actions):
            lines.append(f"{key}: {a}")
            lines.extend(" ".join(_fmt(x) for x in row) for row in P[a])
            lines.append("")
    for a in range(pomdp.n_actions):
        for s in range(pomdp.n_states):
            lines.append(f"R: {a} : {s} : * : * {_fmt(pomdp.r[s, a])}")
    text = "\n".join(lines) + "\n"
    if path is not None:
        with atomic_write(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    return text
