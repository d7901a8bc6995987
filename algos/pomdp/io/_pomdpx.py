"""A streaming reader of POMDPX, the factored XML format of APPL/SARSOP (Kurniawati et al., 2008).

The file is read with :mod:`xml.parsers.expat` in chunks; each top-level section (``<Variable>``,
``<InitialStateBelief>``, ``<StateTransitionFunction>``, ``<ObsFunction>``, ``<RewardFunction>``)
is turned into per-variable tables as soon as it closes, and its XML is dropped. Every error is a
``ValueError`` naming the file, the element and its line.

Flattening rules (the factored model to the flat ``POMDP`` arrays):

* **Joint state index**: mixed radix over the state variables in declaration order, the *first*
  variable most significant: ``s = ((v_1 * n_2 + v_2) * n_3 + v_3) ...``. Joint observations
  likewise over the observation variables. Exactly one action variable is supported.
* **Names**: with one state variable the state names are its value names; with several, a state is
  named ``"x_0=v1,y_0=v2"`` (``vnamePrev`` of each variable ``=`` its value). Observations likewise
  with ``vname``. ``<NumValues>n</NumValues>`` names the values ``s0 .. s{n-1}`` (state variables),
  ``a0 ..`` (actions) and ``o0 ..`` (observations), as APPL does.
* **Transitions**: ``T[a][s, s'] = prod_i P(x_i' | parents_i)`` with the parents among the action
  and the previous-slice state variables (a next-slice parent inside ``<StateTransitionFunction>`` is
  refused). The product is built sparsely, row by row, from each table's non-zero entries: a dense
  ``S x S`` table is never formed.
* **Observations**: ``Z[a, s', o] = prod_k P(o_k | parents_k)``, parents among the action and the
  next-slice state variables; ``Z`` is dense ``(A, S, O)``. A file without ``<ObsVar>`` (an MDP)
  gets the single observation ``"none"``.
* **Rewards**: the sum of all ``<Func>`` tables; a table with next-slice parents enters through its
  expectation ``sum_{s'} T[a][s, s'] R(a, s, s')``.
* **Fully observable state variables** (``fullyObs="true"``, the mixed-observability MOMDP of
  Ong et al., 2010) are ordinary state variables of the flat model. No observation is added for
  them: the flat observations are exactly the declared ``<ObsVar>`` values (adding them would
  multiply ``O`` by the variables' sizes). Their names are returned in ``fully_observable``.
* **Tables** (``<Parameter type="TBL">``): an ``<Instance>`` gives one token per parent and, for a
  ``<CondProb>``, one more for the variable itself. A value name fixes the value, ``*`` repeats the
  entry over every value, ``-`` enumerates the values: the table lists the numbers row-major over
  the ``-`` positions. ``identity`` needs exactly two ``-`` positions of the same size,
  ``uniform`` sets ``1 / n`` for a ``<CondProb>`` over ``n`` values. Later entries override earlier
  ones; entries never set are 0. Every conditional row must sum to 1 within ``tol`` and is then
  renormalised.
"""

from __future__ import annotations

import math
import os
from xml.parsers import expat

import numpy as np
import scipy.sparse as sp

from ..._io import check_read_budget, read_budget_bytes
from ..._validation import check_scalar_float

__all__ = ["read_pomdpx"]

_SECTIONS = ("Variable", "InitialStateBelief", "StateTransitionFunction", "ObsFunction", "RewardFunction")
_MAX_TABLE = 1 << 27  # entries of one factored table (1 GiB as float64)


class _Node:
    __slots__ = ("tag", "attrib", "line", "children", "chunks")

    def __init__(self, tag, attrib, line):
        self.tag, self.attrib, self.line = tag, attrib, line
        self.children, self.chunks = [], []

    @property
    def text(self):
        return "".join(self.chunks)

    def find(self, tag):
        for c in self.children:
            if c.tag == tag:
                return c
        return None


class _Var:
    __slots__ = ("kind", "names", "index", "name", "pos", "line", "fully_obs")

    def __init__(self, kind, names, name, pos, line, fully_obs=False):
        self.kind, self.names, self.name, self.pos, self.line = kind, names, name, pos, line
        self.index = {v: i for i, v in enumerate(names)}
        self.fully_obs = fully_obs


class _Reader:
    """Collects the factored model while the XML streams by."""

    def __init__(self, fname, tol, max_bytes=None, file_bytes=0):
        self.fname, self.tol, self.max_bytes, self.file_bytes = fname, tol, max_bytes, file_bytes
        self.discount = None
        self.vars = {}  # variable name -> _Var
        self.state_vars, self.obs_vars, self.action_vars, self.reward_vars = [], [], [], []
        self.seen = set()
        self.init, self.trans, self.obs = {}, {}, {}  # variable -> (parents, table, line)
        self.rewards = []  # (parents, table, line)

    def budget(self, node, nbytes, what, tag=None, line=None):
        """Refuse an allocation of ``nbytes`` over the memory budget, naming the element and its line."""
        tag = node.tag if node is not None else tag
        line = node.line if node is not None else line
        check_read_budget(nbytes, what, f"{self.fname}: <{tag}> at line {line}", self.max_bytes,
                          hint="declare fewer values", file_bytes=self.file_bytes)

    def err(self, node, msg, line=None):
        where = node.tag if node is not None else "file"
        line = node.line if line is None and node is not None else line
        return ValueError(f"{self.fname}: <{where}> at line {line}: {msg}")

    # ---------------------------------------------------------------- sections
    def section(self, node):
        tag = node.tag
        if tag in self.seen and tag in _SECTIONS + ("Discount",):
            raise self.err(node, f"section <{tag}> given twice.")
        self.seen.add(tag)
        if tag == "Discount":
            try:
                self.discount = float(node.text.strip())
            except ValueError:
                raise self.err(node, f"the discount must be a number; got {node.text.strip()!r}.") from None
            if not 0.0 <= self.discount <= 1.0:
                raise self.err(node, f"the discount must be in [0, 1]; got {self.discount!r}.")
        elif tag == "Variable":
            self.variables(node)
        elif tag in _SECTIONS:
            if "Variable" not in self.seen:
                raise self.err(node, "section comes before <Variable>; variables must be declared first.")
            if tag == "RewardFunction":
                for f in node.children:
                    if f.tag != "Func":
                        raise self.err(f, "expected <Func> inside <RewardFunction>.")
                    var, parents, table = self.table(f, tag)
                    self.rewards.append((parents, table, f.line))
            else:
                store = {"InitialStateBelief": self.init, "StateTransitionFunction": self.trans,
                         "ObsFunction": self.obs}[tag]
                for c in node.children:
                    if c.tag != "CondProb":
                        raise self.err(c, f"expected <CondProb> inside <{tag}>.")
                    var, parents, table = self.table(c, tag)
                    if var in store:
                        raise self.err(c, f"variable {var!r} has a second <CondProb> in <{tag}>.")
                    store[var] = (parents, table, c.line)

    def variables(self, node):
        for v in node.children:
            if v.tag == "StateVar":
                prev, curr = v.attrib.get("vnamePrev"), v.attrib.get("vnameCurr")
                if not prev or not curr:
                    raise self.err(v, "a <StateVar> needs both vnamePrev and vnameCurr.")
                fobs = v.attrib.get("fullyObs", "false").strip().lower()
                if fobs not in ("true", "false"):
                    raise self.err(v, f"fullyObs must be 'true' or 'false'; got {fobs!r}.")
                names = self.values(v, "s")
                pos = len(self.state_vars)
                self.add(v, _Var("prev", names, prev, pos, v.line, fobs == "true"))
                self.add(v, _Var("curr", names, curr, pos, v.line, fobs == "true"))
                self.state_vars.append(prev)
            elif v.tag in ("ObsVar", "ActionVar", "RewardVar"):
                name = v.attrib.get("vname")
                if not name:
                    raise self.err(v, f"a <{v.tag}> needs a vname.")
                if v.tag == "RewardVar":
                    self.add(v, _Var("reward", (), name, len(self.reward_vars), v.line))
                    self.reward_vars.append(name)
                elif v.tag == "ObsVar":
                    self.add(v, _Var("obs", self.values(v, "o"), name, len(self.obs_vars), v.line))
                    self.obs_vars.append(name)
                else:
                    self.add(v, _Var("action", self.values(v, "a"), name, 0, v.line))
                    self.action_vars.append(name)
            else:
                raise self.err(v, "unknown element inside <Variable>.")
        for what, lst in (("<StateVar>", self.state_vars), ("<ActionVar>", self.action_vars),
                          ("<RewardVar>", self.reward_vars)):
            if not lst:
                raise self.err(node, f"no {what} declared; a model needs at least one.")
        if len(self.action_vars) > 1:
            raise self.err(node, f"only one <ActionVar> is supported; got {len(self.action_vars)}.")
        # the flat model before any table is read: joint names and value indices of the states, a sparse T
        # with at least one entry per (a, s) and its build temporaries, a dense Z (A, S, O) and its temporary
        S = math.prod(len(self.vars[n].names) for n in self.state_vars)
        A = len(self.vars[self.action_vars[0]].names)
        O = math.prod(len(self.vars[n].names) for n in self.obs_vars)
        nbytes = S * (64 + 8 * len(self.state_vars)) + 72 * A * S + 16 * A * S * O + 64 * O
        self.budget(node, nbytes, f"the flat model (S={S} joint states, A={A} actions, O={O} joint observations)")

    def add(self, node, var):
        if var.name in self.vars:
            raise self.err(node, f"variable {var.name!r} declared twice.")
        self.vars[var.name] = var

    def values(self, v, prefix):
        enum, num = v.find("ValueEnum"), v.find("NumValues")
        if (enum is None) == (num is None):
            raise self.err(v, "give exactly one of <ValueEnum> and <NumValues>.")
        if enum is not None:
            names = tuple(enum.text.split())
            if not names:
                raise self.err(enum, "empty <ValueEnum>.")
            if len(set(names)) != len(names):
                dup = next(x for x in names if names.count(x) > 1)
                raise self.err(enum, f"value {dup!r} listed twice.")
            return names
        try:
            n = int(num.text.strip())
        except ValueError:
            raise self.err(num, f"<NumValues> must be a positive integer; got {num.text.strip()!r}.") from None
        if n < 1:
            raise self.err(num, f"<NumValues> must be a positive integer; got {n}.")
        self.budget(num, 64 * n, f"<NumValues>{n}</NumValues> ({n} value names)")
        return tuple(f"{prefix}{i}" for i in range(n))

    # ---------------------------------------------------------------- tables
    def table(self, node, section):
        """One ``<CondProb>`` or ``<Func>``: its variable, parent names and dense table
        ``(|p_1|, ..., |p_k|[, |var|])``."""
        cond = node.tag == "CondProb"
        var, parents, param = self._table_header(node, section)
        order = [self.vars[p] for p in parents] + ([self.vars[var]] if cond else [])
        shape = tuple(len(v.names) for v in order)
        size = math.prod(shape)
        if size > _MAX_TABLE:
            raise self.err(node, f"the table has {size} entries (shape {shape}); at most {_MAX_TABLE} are supported.")
        self.budget(node, 16 * size, f"a table of shape {shape} (float64, with its sums)")
        arr = np.zeros(shape)
        value_tag = "ProbTable" if cond else "ValueTable"
        for entry in param.children:
            if entry.tag != "Entry":
                raise self.err(entry, "expected <Entry> inside <Parameter>.")
            inst, val = entry.find("Instance"), entry.find(value_tag)
            if inst is None or val is None:
                raise self.err(entry, f"an <Entry> needs <Instance> and <{value_tag}>.")
            idx, dash = self._instance(inst, order)
            block = self._block(val, tuple(shape[d] for d in dash), shape, cond)
            # place block: '-' axes of the block go to the '-' positions, '*' broadcast
            sub = arr[tuple(idx)]
            # axes of sub are the slice positions in order; reshape block to broadcast over '*'
            bshape = [shape[i] if i in dash else 1 for i, ix in enumerate(idx) if isinstance(ix, slice)]
            arr[tuple(idx)] = np.broadcast_to(block.reshape(bshape), sub.shape) if bshape else block
        if cond:
            sums = arr.sum(axis=-1)
            dev = np.abs(sums - 1.0)
            if (dev > self.tol).any():
                bad = np.unravel_index(int(np.argmax(dev)), sums.shape)
                row = " ".join(order[i].names[j] for i, j in enumerate(bad)) or "(no parents)"
                raise self.err(node, f"the distribution of {var!r} given {row!r} sums to "
                                     f"{float(sums[bad])!r}, not 1 (tol={self.tol:g}).")
            arr /= sums[..., None]
        return var, parents, arr

    def _table_header(self, node, section):
        """The checked ``<Var>`` name, ``<Parent>`` names and ``<Parameter>`` element of a table."""
        var_el, par_el, param = node.find("Var"), node.find("Parent"), node.find("Parameter")
        for el, nm in ((var_el, "Var"), (par_el, "Parent"), (param, "Parameter")):
            if el is None:
                raise self.err(node, f"missing <{nm}>.")
        var = var_el.text.strip()
        if var not in self.vars:
            raise self.err(var_el, f"unknown variable {var!r}.")
        allowed_var = {"InitialStateBelief": ("prev", "curr"), "StateTransitionFunction": ("curr",),
                       "ObsFunction": ("obs",), "RewardFunction": ("reward",)}[section]
        if self.vars[var].kind not in allowed_var:
            raise self.err(var_el, f"variable {var!r} ({self.vars[var].kind}) cannot be the <Var> of <{section}>.")
        toks = par_el.text.split()
        parents = [] if toks == ["null"] else toks
        allowed = {"InitialStateBelief": ("prev", "curr"), "StateTransitionFunction": ("action", "prev"),
                   "ObsFunction": ("action", "curr"), "RewardFunction": ("action", "prev", "curr")}[section]
        for p in parents:
            if p not in self.vars:
                raise self.err(par_el, f"unknown parent variable {p!r}.")
            if self.vars[p].kind not in allowed:
                raise self.err(par_el, f"parent {p!r} ({self.vars[p].kind} variable) is not supported in "
                                       f"<{section}>; allowed kinds: {', '.join(allowed)}.")
            if p == var:
                raise self.err(par_el, f"variable {var!r} is its own parent.")
        if len(set(parents)) != len(parents):
            raise self.err(par_el, "a parent is listed twice.")
        ptype = param.attrib.get("type", "TBL").strip()
        if ptype != "TBL":
            raise self.err(param, f"only type='TBL' tables are supported; got type={ptype!r}.")
        return var, parents, param

    def _instance(self, inst, order):
        """An ``<Instance>``: the index into the table (slices at ``*``/``-``) and the ``-`` positions."""
        itoks = inst.text.split()
        if len(itoks) != len(order):
            raise self.err(inst, f"expected {len(order)} tokens ({' '.join(v.name for v in order) or 'none'}); "
                                 f"got {len(itoks)}: {inst.text.strip()!r}.")
        idx, dash = [], []
        for t, v in zip(itoks, order):
            if t == "*" or t == "-":
                idx.append(slice(None))
                if t == "-":
                    dash.append(len(idx) - 1)
            elif t in v.index:
                idx.append(v.index[t])
            else:
                raise self.err(inst, f"{t!r} is not a value of variable {v.name!r} "
                                     f"(values: {' '.join(v.names[:8])}{' ...' if len(v.names) > 8 else ''}).")
        return idx, dash

    def _block(self, val, dshape, shape, cond):
        """A ``<ProbTable>``/``<ValueTable>``: the block of shape ``dshape`` it fills at the ``-`` positions."""
        words = val.text.split()
        if words == ["identity"]:
            if len(dshape) != 2 or dshape[0] != dshape[1]:
                raise self.err(val, "'identity' needs exactly two '-' positions of equal size; "
                                    f"got shape {dshape}.")
            return np.eye(dshape[0])
        if words == ["uniform"]:
            if not cond:
                raise self.err(val, "'uniform' is only meaningful in a <ProbTable>.")
            return np.full(dshape, 1.0 / shape[-1])
        try:
            nums = np.array([float(w) for w in words])
        except ValueError:
            bad = next(w for w in words if not _is_float(w))
            raise self.err(val, f"expected numbers, 'identity' or 'uniform'; got {bad!r}.") from None
        if not np.isfinite(nums).all():
            raise self.err(val, "the table has a non-finite number.")
        need = math.prod(dshape)
        if nums.size == need:
            block = nums.reshape(dshape)
        elif nums.size == 1:
            block = np.full(dshape, nums[0])
        else:
            raise self.err(val, f"expected {need} numbers for the '-' positions {dshape}; got {nums.size}.")
        if cond and (nums < 0).any():
            raise self.err(val, f"probabilities must be non-negative; got {float(nums.min())!r}.")
        return block

    # ---------------------------------------------------------------- flattening
    def finish(self, root_seen):
        if not root_seen:
            raise ValueError(f"{self.fname}: no <pomdpx> root element.")
        for tag in ("Discount",) + _SECTIONS:
            if tag not in self.seen and not (tag == "ObsFunction" and not self.obs_vars):
                raise ValueError(f"{self.fname}: missing required section <{tag}>.")
        svars = [self.vars[n] for n in self.state_vars]
        sizes = [len(v.names) for v in svars]
        S = math.prod(sizes)
        act = self.vars[self.action_vars[0]]
        A = len(act.names)
        # value of state variable i in joint state s (first variable most significant)
        self._strides = np.cumprod([1] + sizes[::-1])[:-1][::-1]
        self._svals = [(np.arange(S) // self._strides[i]) % sizes[i] for i in range(len(svars))]
        self._sizes = sizes
        # initial belief: a product of conditionals, so the parents must form an acyclic graph
        self.check_acyclic(svars)
        b0 = self._initial_belief(svars, S)
        T = self._transitions(svars, S, A)
        Z, obs_names = self._observations(S, A)
        r = self._rewards(T, S, A)
        return {
            "states": _joint_names(svars),
            "actions": tuple(act.names),
            "observations": obs_names,
            "T": T,
            "Z": Z,
            "r": r,
            "b0": b0,
            "discount": self.discount,
            "state_variables": tuple(v.name for v in svars),
            "state_sizes": tuple(sizes),
            "fully_observable": tuple(v.name for v in svars if v.fully_obs),
        }

    def _gather(self, parents, a):
        """Flat index into the parents' configurations for every joint state, for action ``a``."""
        flat = np.zeros(len(self._svals[0]), dtype=np.int64)
        for p in parents:
            v = self.vars[p]
            flat = flat * len(v.names) + (a if v.kind == "action" else self._svals[v.pos])
        return flat

    def _initial_belief(self, svars, S):
        """``b0`` over the joint states: the product of the state variables' initial conditionals."""
        b0 = np.ones(S)
        for v in svars:
            key = v.name if v.name in self.init else self.vars_curr(v)
            if key not in self.init:
                raise ValueError(f"{self.fname}: <InitialStateBelief> has no <CondProb> for state variable {v.name!r}.")
            parents, tab, _ = self.init[key]
            b0 *= tab.reshape(-1, tab.shape[-1])[self._gather(parents, 0), self._svals[v.pos]]
        return b0 / b0.sum()

    def _transitions(self, svars, S, A):
        """One sparse (S, S) matrix per action: the product of the state variables' transition tables."""
        tabs = []
        for v in svars:
            curr = self.vars_curr(v)
            if curr not in self.trans:
                raise ValueError(f"{self.fname}: <StateTransitionFunction> has no <CondProb> for {curr!r}.")
            parents, tab, line = self.trans[curr]
            tabs.append((parents, sp.csr_array(tab.reshape(-1, tab.shape[-1])), line))
        T = []
        kept = 0  # entries of the actions already built
        for a in range(A):
            rows, cols, vals = np.arange(S), np.zeros(S, dtype=np.int64), np.ones(S)
            for i, (parents, csr, line) in enumerate(tabs):
                cfg = self._gather(parents, a)[rows]
                counts = np.diff(csr.indptr)[cfg]
                total = int(counts.sum())
                # this product's index and value arrays (and their temporaries) beside the actions kept so far
                self.budget(None, 20 * kept + 96 * total,
                            f"the flat transitions ({kept + total} nonzero entries by action {a})",
                            tag="CondProb", line=line)
                starts = np.repeat(csr.indptr[cfg], counts)
                offs = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
                pick = starts + offs
                rows = np.repeat(rows, counts)
                cols = np.repeat(cols, counts) * self._sizes[i] + csr.indices[pick]
                vals = np.repeat(vals, counts) * csr.data[pick]
            T.append(sp.csr_array((vals, (rows, cols)), shape=(S, S)))
            kept += T[-1].nnz
        return T

    def _observations(self, S, A):
        """``Z`` (A, S, O) over the joint observations and their names (one ``'none'`` without any)."""
        if not self.obs_vars:
            return np.ones((A, S, 1)), ("none",)
        ovars = [self.vars[n] for n in self.obs_vars]
        O = math.prod(len(v.names) for v in ovars)
        Z = np.empty((A, S, O))
        for a in range(A):
            za = np.ones((S, 1))
            for ov in ovars:
                if ov.name not in self.obs:
                    raise ValueError(f"{self.fname}: <ObsFunction> has no <CondProb> for {ov.name!r}.")
                parents, tab, _ = self.obs[ov.name]
                pk = tab.reshape(-1, tab.shape[-1])[self._gather(parents, a)]
                za = (za[:, :, None] * pk[:, None, :]).reshape(S, -1)
            Z[a] = za
        return Z, _joint_names(ovars)

    def _rewards(self, T, S, A):
        """``r`` (S, A): the sum of the reward functions, those of the next state taken in expectation."""
        r = np.zeros((S, A))
        for parents, tab, _ in self.rewards:
            flat_tab = tab.reshape(-1)
            if not any(self.vars[p].kind == "curr" for p in parents):
                for a in range(A):
                    r[:, a] += flat_tab[self._gather(parents, a)]
                continue
            for a in range(A):
                coo = T[a].tocoo()
                src, dst = coo.coords
                flat = np.zeros(src.size, dtype=np.int64)
                for p in parents:
                    v = self.vars[p]
                    if v.kind == "action":
                        val = a
                    else:
                        j = dst if v.kind == "curr" else src
                        val = (j // self._strides[v.pos]) % self._sizes[v.pos]
                    flat = flat * len(v.names) + val
                r[:, a] += np.bincount(src, weights=coo.data * flat_tab[flat], minlength=S)
        return r

    def check_acyclic(self, svars):
        keys = {v.pos: (v.name if v.name in self.init else self.vars_curr(v)) for v in svars}
        deps = {pos: [self.vars[p].pos for p in self.init[k][0]] for pos, k in keys.items() if k in self.init}
        done, active = set(), set()

        def visit(pos):
            if pos in done:
                return
            if pos in active:
                _, _, line = self.init[keys[pos]]
                raise ValueError(f"{self.fname}: <CondProb> at line {line}: the parents in <InitialStateBelief> form "
                                 f"a cycle through {keys[pos]!r}; the initial belief must be a product of "
                                 f"conditionals over an acyclic graph.")
            active.add(pos)
            for q in deps.get(pos, ()):
                visit(q)
            active.discard(pos)
            done.add(pos)

        for pos in deps:
            visit(pos)

    def vars_curr(self, prev_var):
        return next(n for n, v in self.vars.items() if v.kind == "curr" and v.pos == prev_var.pos)


def _is_float(w):
    try:
        float(w)
    except ValueError:
        return False
    return True


def _joint_names(variables):
    if len(variables) == 1:
        return tuple(variables[0].names)
    out = [""]
    for k, v in enumerate(variables):
        sep = "," if k else ""
        out = [f"{o}{sep}{v.name}={x}" for o in out for x in v.names]
    return tuple(out)


def _read_pomdpx_arrays(path_or_file, *, tol=1e-6, max_bytes=None):
    """Read a POMDPX file into flat arrays, without a dense ``S x S`` table.

    Parameters
    ----------
    path_or_file : str, path-like or file-like
        The file, or an open binary or text file object.
    tol : float, default=1e-6
        Allowed deviation of each conditional distribution's sum from 1 (rows are renormalised).
    max_bytes : int or None, default=None
        Memory budget (see :func:`read_pomdpx`).

    Returns
    -------
    dict
        ``states``, ``actions``, ``observations`` (tuples of names); ``T`` (list of ``A``
        ``scipy.sparse.csr_array`` of shape ``(S, S)``, ``T[a][s, s'] = P(s' | s, a)``); ``Z``
        (``(A, S, O)``, ``Z[a, s', o] = P(o | s', a)``); ``r`` (``(S, A)``); ``b0`` (``(S,)``);
        ``discount``; ``state_variables`` (``vnamePrev`` names in declaration order, the first
        most significant in the joint index); ``state_sizes``; ``fully_observable``.

    Raises
    ------
    ValueError
        On malformed or truncated XML, an unknown variable or value, a row not summing to 1, a
        missing section or table: the message names the file, the element and the line.
    """
    tol = check_scalar_float(tol, "tol", low=0.0)
    read_budget_bytes(max_bytes)  # a bad max_bytes is reported before reading
    if hasattr(path_or_file, "read"):
        fh, close = path_or_file, False
        fname = getattr(path_or_file, "name", "<stream>")
    else:
        fname = os.fspath(path_or_file)
        fh, close = open(fname, "rb"), True
    try:
        file_bytes = os.fstat(fh.fileno()).st_size
    except (AttributeError, OSError, ValueError):  # a stream without a file behind it
        file_bytes = 0
    reader = _Reader(str(fname), tol, max_bytes, file_bytes)
    stack = []
    state = {"root": False}
    parser = expat.ParserCreate()

    def start(tag, attrib):
        node = _Node(tag, attrib, parser.CurrentLineNumber)
        if not stack:
            if tag != "pomdpx":
                raise reader.err(node, "the root element must be <pomdpx>.")
            state["root"] = True
        stack.append(node)

    def end(tag):
        node = stack.pop()
        if len(stack) == 1:
            reader.section(node)  # a complete top-level section: flatten it, drop its XML
        elif stack:
            stack[-1].children.append(node)

    def chars(data):
        if len(stack) > 1:
            stack[-1].chunks.append(data)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    try:
        while True:
            chunk = fh.read(1 << 16)
            if not chunk:
                parser.Parse(b"", True)
                break
            parser.Parse(chunk, False)
    except expat.ExpatError as exc:
        raise ValueError(f"{fname}: malformed XML at line {exc.lineno}, column {exc.offset}: "
                         f"{expat.ErrorString(exc.code)}.") from None
    finally:
        if close:
            fh.close()
    return reader.finish(state["root"])


def read_pomdpx(path, *, tol=1e-6, max_bytes=None):
    """Read a POMDPX file (the factored XML format of APPL/SARSOP) into a :class:`POMDP`.

    The factored model is flattened as described in :mod:`algos.pomdp.io._pomdpx`: the joint state
    index is mixed radix over the state variables in declaration order (first variable most
    significant), the joint observation likewise over the observation variables, transitions are
    the product of the per-variable tables (built sparsely), rewards the sum of all reward tables
    (in expectation over the next state where they depend on it). Fully observable state variables
    are ordinary state variables; no observation is added for them.

    Parameters
    ----------
    path : str, path-like or file-like
        The ``.pomdpx`` file, or an open file object.
    tol : float, default=1e-6
        Allowed deviation of each conditional distribution's sum from 1; rows are renormalised.
    max_bytes : int or None, default=None
        Memory budget of the reader in bytes. ``None``: the environment variable
        ``ALGOS_READ_BUDGET_MB`` (MiB) if set, else the larger of 128 MiB and 1024 times the size of
        the file (at most half the physical memory). ``<NumValues>``, the flat model the
        variables declare and every table are checked against it before they are allocated.

    Returns
    -------
    POMDP
        The flat model: with sparse per-action transitions where :class:`POMDP` supports them
        (``storage="sparse"``), dense otherwise.

    Raises
    ------
    ValueError
        On bad input (the message names the file, the element and the line), or when the model
        would be dense and too large (``S > 4096``; the message gives the memory it would take).

    References
    ----------
    Kurniawati, H., Hsu, D., Lee, W. S. (2008). SARSOP: Efficient point-based POMDP planning by
    approximating optimally reachable belief spaces. RSS.

    Examples
    --------
    >>> import io
    >>> text = '''<pomdpx version="1.0">
    ... <Discount>0.95</Discount>
    ... <Variable>
    ...  <StateVar vnamePrev="s_0" vnameCurr="s_1"><ValueEnum>tiger-left tiger-right</ValueEnum></StateVar>
    ...  <ObsVar vname="o"><ValueEnum>obs-left obs-right</ValueEnum></ObsVar>
    ...  <ActionVar vname="a"><ValueEnum>listen open-left open-right</ValueEnum></ActionVar>
    ...  <RewardVar vname="r"/>
    ... </Variable>
    ... <InitialStateBelief><CondProb><Var>s_0</Var><Parent>null</Parent>
    ...  <Parameter><Entry><Instance>-</Instance><ProbTable>uniform</ProbTable></Entry></Parameter>
    ... </CondProb></InitialStateBelief>
    ... <StateTransitionFunction><CondProb><Var>s_1</Var><Parent>a s_0</Parent><Parameter>
    ...  <Entry><Instance>listen - -</Instance><ProbTable>identity</ProbTable></Entry>
    ...  <Entry><Instance>open-left * *</Instance><ProbTable>0.5</ProbTable></Entry>
    ...  <Entry><Instance>open-right * *</Instance><ProbTable>0.5</ProbTable></Entry>
    ... </Parameter></CondProb></StateTransitionFunction>
    ... <ObsFunction><CondProb><Var>o</Var><Parent>a s_1</Parent><Parameter>
    ...  <Entry><Instance>listen - -</Instance><ProbTable>0.85 0.15 0.15 0.85</ProbTable></Entry>
    ...  <Entry><Instance>open-left * *</Instance><ProbTable>0.5</ProbTable></Entry>
    ...  <Entry><Instance>open-right * *</Instance><ProbTable>0.5</ProbTable></Entry>
    ... </Parameter></CondProb></ObsFunction>
    ... <RewardFunction><Func><Var>r</Var><Parent>a s_0</Parent><Parameter>
    ...  <Entry><Instance>listen *</Instance><ValueTable>-1</ValueTable></Entry>
    ...  <Entry><Instance>open-left -</Instance><ValueTable>-100 10</ValueTable></Entry>
    ...  <Entry><Instance>open-right -</Instance><ValueTable>10 -100</ValueTable></Entry>
    ... </Parameter></Func></RewardFunction>
    ... </pomdpx>'''
    >>> m = read_pomdpx(io.StringIO(text))
    >>> m.states, m.actions
    (('tiger-left', 'tiger-right'), ('listen', 'open-left', 'open-right'))
    >>> m.r[:, 1].tolist()
    [-100.0, 10.0]
    """
    import inspect

    from .._model import POMDP

    d = _read_pomdpx_arrays(path, tol=tol, max_bytes=max_bytes)
    S, A = len(d["states"]), len(d["actions"])
    names = dict(states=d["states"], actions=d["actions"], observations=d["observations"])
    if "storage" in inspect.signature(POMDP).parameters:
        return POMDP(d["T"], d["Z"], d["r"], d["discount"], d["b0"], **names, storage="sparse")
    if S > 4096:
        gib = A * S * S * 8 / 2**30
        raise ValueError(f"{getattr(path, 'name', path)!s}: the model has S = {S} states; a dense POMDP needs "
                         f"A * S * S * 8 bytes = {gib:.1f} GiB for T. Dense models are built up to S = 4096; "
                         f"use _read_pomdpx_arrays for the sparse arrays.")
    T = np.stack([t.toarray() for t in d["T"]])
    return POMDP(T, d["Z"], d["r"], d["discount"], d["b0"], **names)
