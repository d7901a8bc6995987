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
never held as a dense ``A x S x S x O`` array: entries are replayed per action on the stored transitions
``T[a, s, s'] > 0`` of a block of source states (at most ~2e6 numbers at a time). Where ``R[a, s, :, :]``
is constant over the successors of ``s`` the value is taken exactly (no float round-off from the
expectation).

Two readers (``engine``), the same model. The dense one writes the entries into ``(A, S, S)`` and
``(A, S, O)`` arrays; the sparse one keeps, per action, the latest whole-matrix entry and the row, column
and element entries written after it (each with its order in the file), and resolves them into one CSR
matrix per action, so nothing proportional to ``S * S`` exists unless the file writes it. Row checks use
the exactly rounded sum (``math.fsum``) of every row that is judged or renormalised, so both readers give
the same numbers bit for bit. ``engine="auto"`` reads densely while the dense estimate
(:func:`_model_bytes`) is at most :data:`DENSE_READ_BYTES` (64 MiB, about S = 1,600 with A = 4), sparsely
above. The model's storage depends only on the sizes (dense ``T`` up to 256 MiB, as
``POMDP(storage="auto")``), never on the reader.

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

import math
import os
import re
import warnings

import numpy as np
import scipy.sparse

from ..._io import atomic_write, check_read_budget, read_budget_bytes
from ..._validation import check_option
from .._model import POMDP, SPARSE_AUTO_BYTES

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
    """Estimated peak bytes of reading a model of these sizes densely (Python ints, no overflow)."""
    return _DENSE_COPIES * 8 * A * S * (S + O) + 32 * A * S + _NAME_BYTES * (S + A + O) + 16 * S * A


#: Bytes per stored entry of the sparse reader: the CSR's value and index (12), the COO triplet it is
#: assembled from (24) and the temporaries of the row checks and of the reward (12).
_SPARSE_ENTRY_BYTES = 48
#: ``engine="auto"`` reads densely while :func:`_model_bytes` stays at or below this, sparsely above.
DENSE_READ_BYTES = 64 * 2**20


def _sparse_model_bytes(S, A, O):
    """Lower estimate of the peak bytes of reading a model sparsely, from the header alone.

    Assumes the fewest transitions a valid model has: one per (action, state) (a file with ``identity`` or
    one successor per row); the dense ``Z`` (A, S, O) float64 the model keeps, with the reader's copy and a
    temporary of the row checks (as the dense reader counts it); ``r``, the lines of the last entries and
    the start distribution; the names. Where the model keeps ``T`` dense (``8 * A * S * S`` at most
    :data:`~algos.pomdp._model.SPARSE_AUTO_BYTES`, 256 MiB), that dense ``T`` is counted as the dense
    reader counts it. Entries that write more transitions (``uniform``, wildcard rows, whole columns) are
    added to the estimate as they are read.
    """
    dense_T = 8 * A * S * S
    return (_SPARSE_ENTRY_BYTES * A * S + _DENSE_COPIES * 8 * A * S * O + 32 * S * A + 8 * S
            + _NAME_BYTES * (S + A + O) + (_DENSE_COPIES * dense_T if dense_T <= SPARSE_AUTO_BYTES else 0))


class _SparseRows:
    """The entries of ``T`` (or ``O``) of one file, held without a dense array: per action the latest
    whole-matrix entry, then row, column and single-element entries written after it, each with its sequence
    number, so that the last writer of every element is known ("later entries overwrite earlier ones").

    Resolved into one CSR (rows ``S``, columns ``n``) per action by :meth:`csr`; the values are the numbers
    of the file (or ``1/n`` for ``uniform``, ``1`` for ``identity``), exactly what a dense array gets.
    """

    def __init__(self, A, S, n):
        self.S, self.n = S, n
        self.M = [(-1, "zero", None)] * A       # (seq, kind, data): zero | identity | const p | dense M | row v
        self.rows = [{} for _ in range(A)]       # s -> (seq, kind, data): vec v | const p
        self.cols = [{} for _ in range(A)]       # j -> (seq, p)
        self.elems = [{} for _ in range(A)]      # s -> {j: (seq, p)}
        self.all_line = [(-1, 0)] * A            # (seq, line) of the latest entry writing every row
        self.row_line = [{} for _ in range(A)]   # s -> (seq, line)

    def matrix(self, a, seq, line, kind, data):
        self.M[a] = (seq, kind, data)
        self.rows[a], self.cols[a], self.elems[a], self.row_line[a] = {}, {}, {}, {}
        self.all_line[a] = (seq, line)

    def row(self, a, s, seq, line, kind, data):
        self.rows[a][s] = (seq, kind, data)
        self.elems[a].pop(s, None)
        self.row_line[a][s] = (seq, line)

    def col(self, a, j, seq, line, p):
        self.cols[a][j] = (seq, p)
        self.all_line[a] = (seq, line)

    def elem(self, a, s, j, seq, line, p):
        self.elems[a].setdefault(s, {})[j] = (seq, p)
        self.row_line[a][s] = (seq, line)

    def line(self, a, s):
        """The line of the last entry that wrote row ``s`` of action ``a`` (0: none)."""
        return max(self.all_line[a], self.row_line[a].get(s, (-1, 0)))[1]

    def _base_row(self, kind, data, s):
        """Row ``s`` of a whole-matrix or row entry as ``{column: value}`` (zeros dropped)."""
        if kind == "zero":
            return {}
        if kind == "identity":
            return {s: 1.0}
        if kind == "const":
            return dict.fromkeys(range(self.n), data) if data != 0.0 else {}
        v = data[s] if kind == "dense" else data  # "dense": a matrix; "row"/"vec": one vector
        nz = np.flatnonzero(v)
        return dict(zip(nz.tolist(), v[nz].tolist()))

    def csr(self, a):
        """The resolved ``(S, n)`` matrix of action ``a`` as a canonical ``csr_array`` (float64, sorted)."""
        S, n = self.S, self.n
        mseq, kind, data = self.M[a]
        rows, cols, elems = self.rows[a], self.cols[a], self.elems[a]
        special = np.zeros(S, dtype=bool)
        special[list(rows)] = True
        special[list(elems)] = True
        # rows that only the whole-matrix entry (and the columns written after it) decide: vectorised
        if kind == "zero":
            ri, ci, vi = (np.zeros(0, np.int64),) * 2 + (np.zeros(0),)
        elif kind == "identity":
            ri = ci = np.arange(S, dtype=np.int64)
            vi = np.ones(S)
        elif kind == "const":
            if data == 0.0:
                ri, ci, vi = (np.zeros(0, np.int64),) * 2 + (np.zeros(0),)
            else:
                ri = np.repeat(np.arange(S, dtype=np.int64), n)
                ci = np.tile(np.arange(n, dtype=np.int64), S)
                vi = np.full(S * n, float(data))
        elif kind == "dense":
            ri, ci = np.nonzero(data)
            vi = data[ri, ci]
        else:  # "row": one vector for every row
            nz = np.flatnonzero(data)
            ri = np.repeat(np.arange(S, dtype=np.int64), len(nz))
            ci = np.tile(nz.astype(np.int64), S)
            vi = np.tile(data[nz], S)
        keep = ~special[ri]
        if cols:
            cj = np.fromiter(cols, dtype=np.int64, count=len(cols))
            keep &= ~np.isin(ci, cj)
        parts = [(ri[keep], ci[keep], vi[keep])]
        if cols:
            bulk = np.flatnonzero(~special)
            for j, (_, p) in cols.items():
                if p != 0.0:
                    parts.append((bulk, np.full(len(bulk), j, np.int64), np.full(len(bulk), p)))
        # rows with their own entries: one dictionary each, the last writer of every element wins
        sr, sc, sv = [], [], []
        for s in np.flatnonzero(special).tolist():
            if s in rows:
                bseq, bkind, bdata = rows[s]
                row = self._base_row("vec" if bkind == "vec" else "const", bdata, s)
            else:
                bseq = mseq
                row = self._base_row(kind, data, s)
            for j, (cseq, p) in cols.items():
                if cseq > bseq:
                    row[j] = p
            for j, (eseq, p) in elems.get(s, {}).items():
                if eseq > bseq and eseq > cols.get(j, (-1, 0.0))[0]:
                    row[j] = p
            for j, p in row.items():
                if p != 0.0:
                    sr.append(s)
                    sc.append(j)
                    sv.append(p)
        parts.append((np.array(sr, np.int64), np.array(sc, np.int64), np.array(sv, np.float64)))
        r_all = np.concatenate([p[0] for p in parts])
        c_all = np.concatenate([p[1] for p in parts])
        v_all = np.concatenate([p[2] for p in parts])
        nz = v_all != 0.0
        m = scipy.sparse.csr_array((v_all[nz], (r_all[nz], c_all[nz])), shape=(S, n))
        m.sum_duplicates()
        m.sort_indices()
        return m


class _Parser:
    def __init__(self, text, name, renormalize, missing_rows, max_bytes=None, engine="auto"):
        self.name = name
        self.engine = engine
        self.sparse = None  # decided with the sizes, at the first T/O/R/start entry
        self.seq = 0  # order of the T and O entries (later entries overwrite earlier ones)
        self.extra_nnz = 0  # entries beyond the sparse estimate's one per (action, state), of T and O
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
        if self.sparse is not None:
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
        """Refuse sizes whose model would exceed the memory budget, before allocating it.

        The dense reader's estimate counts ``T`` and ``Z`` as dense float64 arrays; the sparse reader's
        (``engine="sparse"`` or ``"auto"``) is the lower estimate of :func:`_sparse_model_bytes` plus the
        entries read so far that write more than one element per row.
        """
        sizes = {k: (len(v) if v is not None else 1) for k, v in self.names.items()}
        sizes.update(declared)
        S, A, O = sizes["states"], sizes["actions"], sizes["observations"]
        what = ", ".join(f"{k}: {v}" for k, v in declared.items())
        if self.engine == "dense" or self.sparse is False:
            nbytes = _model_bytes(S, A, O)
            desc = f"a dense model with S={S}, A={A}, O={O} so far: T and Z as float64"
            hint = ("engine='dense' builds dense arrays; read it with engine='sparse' (per-action sparse T), "
                    "build a POMDP with a sequence of sparse T matrices (storage='sparse') or write it as POMDPX")
        else:
            nbytes = _sparse_model_bytes(S, A, O) + _SPARSE_ENTRY_BYTES * self.extra_nnz
            desc = (f"a sparse model with S={S}, A={A}, O={O} so far: at least one transition per action "
                    f"and state, a dense Z (A, S, O) float64"
                    + (f", and {self.extra_nnz} more entries written by the file so far" if self.extra_nnz else ""))
            hint = "a model this size needs fewer states, actions or observations, or fewer dense rows"
        what = f"'{what}' ({desc})" if what else f"the entries read ({desc})"
        check_read_budget(
            nbytes, what, f"{self.name}, line {tok.line if tok is not None else 1}", self.max_bytes,
            file_bytes=self.file_bytes, hint=hint,
        )

    def ensure_arrays(self, kw):
        self.need_sizes(kw)
        if self.sparse is None:
            S, A, O = self.S, self.A, self.O
            self.sparse = self.engine == "sparse" or (
                self.engine == "auto" and _DENSE_COPIES * 8 * A * S * S > DENSE_READ_BYTES)
            self.check_budget(kw, {})
            # Z is dense in the model: both readers write it in place
            self.Z = np.zeros((A, S, O))
            self.Z_line = np.zeros((A, S), dtype=np.int64)
            if self.sparse:
                self.T = _SparseRows(A, S, S)
            else:
                self.T = np.zeros((A, S, S))
                self.T_line = np.zeros((A, S), dtype=np.int64)

    def assign(self, key, kw, a, op, *args):
        """Write one ``T`` or ``O`` entry: ``op`` is ``"elem"`` (row, column, p; either may be ``*``),
        ``"row"`` (row or ``*``, then ``"vec"`` and a vector or ``"const"`` and a number) or ``"matrix"``
        (``"identity"``, ``"const"`` and a number, or ``"dense"`` and a matrix)."""
        line = kw.line
        self.seq += 1
        if key == "O" or not self.sparse:
            P, lines = (self.T, self.T_line) if key == "T" else (self.Z, self.Z_line)
            if op == "elem":
                s, j, p = args
                P[a, s, j] = p
                lines[a, s] = line
            elif op == "row":
                s, kind, data = args
                P[a, s, :] = data
                lines[a, s] = line
            else:
                kind, data = args
                P[a] = np.eye(P.shape[1]) if kind == "identity" else data
                lines[a] = line
            return
        store = self.T
        acts = range(self.A) if isinstance(a, slice) else (a,)
        S, n = store.S, store.n
        extra = 0
        if op == "elem":
            s, j, p = args
            if isinstance(s, slice) and isinstance(j, slice):
                op, args = "matrix", ("const", p)
            elif isinstance(s, slice):
                extra = S if p != 0.0 else 0
                for b in acts:
                    store.col(b, j, self.seq, line, p)
            elif isinstance(j, slice):
                extra = n if p != 0.0 else 0
                for b in acts:
                    store.row(b, s, self.seq, line, "const", p)
            else:
                for b in acts:
                    store.elem(b, s, j, self.seq, line, p)
        elif op == "row":
            s, kind, data = args
            if isinstance(s, slice):
                op, args = "matrix", ("row" if kind == "vec" else "const", data)
            else:
                extra = (n if kind == "const" else int(np.count_nonzero(data))) - 1
                for b in acts:
                    store.row(b, s, self.seq, line, kind, data)
        if op == "matrix":
            kind, data = args
            if kind == "identity":
                per_row = 1
            elif kind == "const":
                per_row = n if data != 0.0 else 0
            else:
                per_row = int(np.count_nonzero(data)) / (S if kind == "dense" else 1)
            extra = max(0, int(math.ceil(S * per_row)) - S)
            for b in acts:
                store.matrix(b, self.seq, line, kind, data)
        if extra > 0:
            self.extra_nnz += extra * len(acts)
            self.check_budget(kw, {})

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
        label = f"'{key}: " + " : ".join(f.text for f in fields) + "'"
        if key in ("T", "O"):
            n, cols = (S, "states") if key == "T" else (O, "observations")
            if len(fields) == 3:
                s, j = self.index(fields[1], "states"), self.index(fields[2], cols)
                self.assign(key, kw, a, "elem", s, j, self.numbers(data, 1, label, prob=True)[0])
            elif len(fields) == 2:
                s = self.index(fields[1], "states")
                if len(data) == 1 and data[0].text == "uniform":
                    self.assign(key, kw, a, "row", s, "const", 1.0 / n)
                elif key == "T" and len(data) == 1 and data[0].text == "reset":
                    if self.start is not None:
                        self.assign(key, kw, a, "row", s, "vec", self.start.copy())
                    else:
                        self.assign(key, kw, a, "row", s, "const", 1.0 / S)
                else:
                    self.assign(key, kw, a, "row", s, "vec", self.numbers(data, n, label, prob=True))
            else:
                if len(data) == 1 and data[0].text == "uniform":
                    self.assign(key, kw, a, "matrix", "const", 1.0 / n)
                elif key == "T" and len(data) == 1 and data[0].text == "identity":
                    self.assign(key, kw, a, "matrix", "identity", None)
                else:
                    self.assign(key, kw, a, "matrix", "dense",
                                self.numbers(data, S * n, label, prob=True).reshape(S, n))
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
        """Missing-row handling and renormalisation of the stochastic rows of ``P``: a dense array
        (A, S, n) with ``lines`` (A, S), or a list of A CSR arrays (S, n) with ``lines`` a function
        ``(a, s) -> line``. Returns ``P`` (a new list for CSR)."""
        dense = isinstance(P, np.ndarray)
        line_of = (lambda a, s: int(lines[a, s])) if dense else lines
        n = P.shape[2] if dense else P[0].shape[1]
        sums = P.sum(axis=2) if dense else np.stack([np.asarray(m.sum(axis=1)).ravel() for m in P])
        missing = sums == 0.0
        if missing.any():
            a, s = (int(x) for x in np.argwhere(missing)[0])
            if self.missing_rows == "error":
                acts, states = self.names["actions"], self.names["states"]
                raise ValueError(
                    f"{self.name}: row {label}[{acts[a]!r}, {row_key}={states[s]!r}] is missing (all "
                    f"zero; {int(missing.sum())} such row(s)); pass missing_rows='self' or 'uniform' to fill it."
                )
            self_loop = is_T and self.missing_rows == "self"
            if dense:
                for a, s in np.argwhere(missing):
                    if self_loop:
                        P[a, s, s] = 1.0
                    else:
                        P[a, s, :] = 1.0 / n
                sums = P.sum(axis=2)
            else:
                if not self_loop:  # a uniform row writes n entries: checked before they are built
                    self.extra_nnz += int(missing.sum()) * n
                    check_read_budget(
                        _sparse_model_bytes(self.S, self.A, self.O) + _SPARSE_ENTRY_BYTES * self.extra_nnz,
                        f"filling {int(missing.sum())} missing rows of {label} uniformly ({n} entries each)",
                        self.name, self.max_bytes, file_bytes=self.file_bytes,
                        hint="pass missing_rows='self' or write the rows")
                P = list(P)
                for a in np.flatnonzero(missing.any(axis=1)):
                    rows = np.flatnonzero(missing[a])
                    if self_loop:
                        add = scipy.sparse.csr_array((np.ones(len(rows)), (rows, rows)), shape=P[a].shape)
                    else:
                        add = scipy.sparse.csr_array(
                            (np.full(len(rows) * n, 1.0 / n), (np.repeat(rows, n), np.tile(np.arange(n), len(rows)))),
                            shape=P[a].shape)
                    P[a] = _canonical(P[a] + add)
                    sums[a] = np.asarray(P[a].sum(axis=1)).ravel()
        # the rows that are renormalised (or judged) get their exactly rounded sum (math.fsum), the same
        # whichever the storage, so that the dense and the sparse reader give the same numbers
        for a, s in np.argwhere(np.abs(sums - 1.0) > 1e-13):
            if dense:
                sums[a, s] = math.fsum(P[a, s])
            else:
                m = P[a]
                sums[a, s] = math.fsum(m.data[m.indptr[s]:m.indptr[s + 1]])
        dev = np.abs(sums - 1.0)
        worst = np.unravel_index(int(np.argmax(dev)), dev.shape)
        dmax = float(dev[worst])
        a, s = (int(x) for x in worst)

        def where():
            acts, states = self.names["actions"], self.names["states"]
            ln = line_of(a, s)
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
            if dense:
                P[fix] /= sums[fix][:, None]
            else:
                for a in np.flatnonzero(fix.any(axis=1)):
                    m = P[a]
                    rid = np.repeat(np.arange(m.shape[0]), np.diff(m.indptr))
                    sel = fix[a][rid]
                    m.data[sel] /= sums[a][rid[sel]]
        return P

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
        S, A = self.S, self.A
        if self.sparse:
            T = self.fix_rows([self.T.csr(a) for a in range(A)], self.T.line, "T", "s", True)
            self.T = None
            self.fix_rows(self.Z, self.Z_line, "O", "s'", False)
            Z = self.Z
            T_csr = T
        else:
            self.fix_rows(self.T, self.T_line, "T", "s", True)
            self.fix_rows(self.Z, self.Z_line, "O", "s'", False)
            T, Z = self.T, self.Z
            T_csr = [_canonical(scipy.sparse.csr_array(T[a])) for a in range(A)]
        b0 = self.fix_start()
        r = _expected_reward(T_csr, Z, self.r_entries)
        del T_csr
        if self.values == "cost":
            r = -r
        # the storage depends on the sizes only (as POMDP's storage="auto"), not on the reader
        storage = "dense" if 8 * A * S * S <= SPARSE_AUTO_BYTES else "sparse"
        if storage == "dense" and self.sparse:  # filled in place: no list of A dense arrays and their stack
            T_dense = np.zeros((A, S, S))
            for a in range(A):
                T[a].toarray(out=T_dense[a])
            T = T_dense
        return POMDP(
            T, Z, r, self.discount, b0,
            self.names["states"], self.names["actions"], self.names["observations"], storage=storage,
        )


def _canonical(m):
    """``m`` as a ``csr_array`` float64 with duplicates summed, explicit zeros dropped, indices sorted."""
    m = scipy.sparse.csr_array(m, dtype=np.float64)
    m.sum_duplicates()
    m.eliminate_zeros()
    m.sort_indices()
    return m


def _expected_reward(T, Z, entries, block_elems=2_000_000):
    """``r[s, a] = sum_{s',o} T[a,s,s'] Z[a,s',o] R[a,s,s',o]`` replaying the R entries in order.

    ``T`` is a list of A CSR arrays (S, S). ``R`` is only evaluated where ``T[a, s, s'] > 0``, on the stored
    transitions of a block of source states at a time (at most about ``block_elems`` numbers of ``R``).
    Where ``R[a, s, s', o]`` is constant over the successors ``s'`` of ``s`` and every ``o``, the value is
    taken exactly (no float round-off from the expectation).
    """
    A = len(T)
    S = T[0].shape[0]
    O = Z.shape[2]
    r = np.zeros((S, A))
    per_block = max(1, block_elems // O)
    for a in range(A):
        ent = [k for k, e in enumerate(entries) if isinstance(e[0], slice) or e[0] == a]
        if not ent:
            continue
        glob = [k for k in ent if isinstance(entries[k][1], slice)]
        spec = sorted((entries[k][1], k) for k in ent if not isinstance(entries[k][1], slice))
        spec_s = np.array([s for s, _ in spec], dtype=np.int64)
        m = T[a]
        lo = 0
        while lo < S:
            hi = max(lo + 1, int(np.searchsorted(m.indptr, m.indptr[lo] + per_block, side="right")) - 1)
            hi = min(hi, S)
            ptr = m.indptr[lo:hi + 1]
            k0, k1 = int(ptr[0]), int(ptr[-1])
            col = m.indices[k0:k1]
            rid = np.repeat(np.arange(hi - lo), np.diff(ptr))
            Rn = np.zeros((k1 - k0, O))
            i0, i1 = np.searchsorted(spec_s, lo), np.searchsorted(spec_s, hi)
            for k in sorted(glob + [k for _, k in spec[i0:i1]]):
                _, s, sp, o, vals = entries[k]
                if isinstance(s, slice):
                    sel = slice(None) if isinstance(sp, slice) else np.flatnonzero(col == sp)
                else:
                    a0, a1 = int(ptr[s - lo] - k0), int(ptr[s - lo + 1] - k0)
                    sel = slice(a0, a1) if isinstance(sp, slice) else a0 + np.flatnonzero(col[a0:a1] == sp)
                if np.ndim(vals) == 2:  # one (S, O) table: rows s'
                    Rn[sel, o] = vals[col[sel]]
                else:
                    Rn[sel, o] = vals
            contrib = m.data[k0:k1] * np.einsum("ko,ko->k", Z[a][col], Rn)
            ev = np.bincount(rid, weights=contrib, minlength=hi - lo)
            first = np.zeros(hi - lo)
            has = np.diff(ptr) > 0
            first[has] = Rn[ptr[:-1][has] - k0, 0]
            n_diff = np.bincount(rid, weights=(Rn != first[rid][:, None]).any(axis=1), minlength=hi - lo)
            r[lo:hi, a] = np.where(n_diff == 0, first, ev)
            lo = hi
    return r


def parse_pomdp(text, name="<string>", *, renormalize=True, missing_rows="error", max_bytes=None, engine="auto"):
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
        the file (at most half the physical memory). Declared sizes whose estimate would exceed it are
        refused when they are read, before anything proportional to them is allocated. The sparse
        reader's estimate is a lower one, from the header alone: one ``T`` and one ``O`` entry per
        (action, state) (48 bytes each: CSR, its COO assembly and temporaries), the dense ``Z``
        (A, S, O) float64 the model keeps, ``r``, the start distribution and the names; entries that
        write more (``uniform``, a row or a column for every state) are added as they are read, and
        refused at their line. The dense reader's estimate counts ``T`` and ``Z`` dense (three
        copies).
    engine : {"auto", "dense", "sparse"}, default="auto"
        How the entries are held while reading: ``"dense"`` arrays, ``"sparse"`` per-action CSR, or
        ``"auto"`` (dense while the dense estimate is at most :data:`DENSE_READ_BYTES`, 64 MiB). The
        model is the same, array for array, whichever reader built it.

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
    check_option(engine, "engine", ("auto", "dense", "sparse"))
    read_budget_bytes(max_bytes)  # a bad max_bytes is reported before parsing
    return _Parser(text, str(name), bool(renormalize), missing_rows, max_bytes, engine).parse()


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
