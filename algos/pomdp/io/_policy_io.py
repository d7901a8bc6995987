r"""Policy files: alpha-vector policies (SARSOP ``.policy`` XML, pomdp-solve ``.alpha``) and
finite-state controllers as policy graphs (Graphviz ``dot``, JSON, pomdp-solve ``.pg``).

Formats (as written by the public tools):

* SARSOP / APPL ``.policy``: ``<Policy ...><AlphaVector vectorLength="S" numObsValue="1"
  numVectors="n">`` holding ``<Vector action="a" obsValue="0">v_1 ... v_S </Vector>`` (dense) or
  ``<SparseVector action="a" obsValue="0"><Entry>s v</Entry>...</SparseVector>`` rows.
* pomdp-solve ``.alpha``: per vector, a line with the action index and a line with ``S`` numbers,
  vectors separated by blank lines.
* pomdp-solve ``.pg``: one line per node, ``node action next_0 ... next_{O-1}`` (the successor node
  after each observation).
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from typing import NamedTuple

import numpy as np

from ..._io import atomic_write
from ..._validation import check_scalar_int
from .._beliefs import _fsc_arrays, _real_array, check_fsc

__all__ = ["AlphaPolicy", "read_policy", "write_policy", "policy_graph", "write_policy_graph"]

FORMATS = ("sarsop", "alpha")
GRAPH_FORMATS = ("dot", "json", "pg")


class AlphaPolicy(NamedTuple):
    """An alpha-vector policy: ``alphas`` (n, S), ``actions`` (n,), and the file's format.

    Parameters
    ----------
    alphas : ndarray of shape (n, S)
        The alpha vectors.
    actions : ndarray of int, shape (n,)
        Their actions.
    format : str
        The file format read (``"sarsop"`` or ``"alpha"``).
    """

    alphas: np.ndarray
    actions: np.ndarray
    format: str

    def value(self, b):
        """``max_i alphas[i] . b``.

        Parameters
        ----------
        b : array-like of shape (S,) or (n, S)
            Belief(s).

        Returns
        -------
        float or ndarray of shape (n,)
            ``max_alpha b . alpha``.
        """
        return float((self.alphas @ np.asarray(b, dtype=float)).max())

    def action(self, b):
        """Action of the best vector at ``b`` (lowest index on ties).

        Parameters
        ----------
        b : array-like of shape (S,) or (n, S)
            Belief(s).

        Returns
        -------
        int or ndarray of shape (n,)
            Action of the best vector.
        """
        return int(self.actions[int(np.argmax(self.alphas @ np.asarray(b, dtype=float)))])


def _check_model(pomdp):
    """``pomdp`` must be a model with state, action and observation names (a :class:`POMDP`)."""
    if not all(hasattr(pomdp, k) for k in ("n_states", "n_actions", "n_observations", "actions", "observations")):
        raise TypeError(f"'pomdp' must be a POMDP; got {type(pomdp).__name__}.")
    return pomdp


def _format_of(path, fmt):
    if fmt is not None:
        if fmt not in FORMATS:
            raise ValueError(f"'format' must be one of {{'sarsop', 'alpha'}}; got {fmt!r}.")
        return fmt
    low = str(path).lower()
    if low.endswith(".policy") or low.endswith(".xml"):
        return "sarsop"
    if low.endswith(".alpha"):
        return "alpha"
    raise ValueError(f"cannot tell the policy format of {str(path)!r} from its extension; use a '.policy' "
                     "(SARSOP XML) or '.alpha' (pomdp-solve) file name or pass format='sarsop' or 'alpha'.")


def _numbers(text, where, expected=None):
    try:
        vals = [float(t) for t in text.split()]
    except ValueError:
        bad = next(t for t in text.split() if not _is_float(t))
        raise ValueError(f"{where}: expected numbers, got {bad!r}.") from None
    if expected is not None and len(vals) != expected:
        raise ValueError(f"{where}: expected {expected} numbers, got {len(vals)}.")
    arr = np.asarray(vals)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{where}: values must be finite.")
    return arr


def _is_float(t):
    try:
        float(t)
        return True
    except ValueError:
        return False


def _int_attr(el, name, where):
    v = el.get(name)
    if v is None:
        raise ValueError(f"{where}: missing attribute {name!r}.")
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"{where}: attribute {name!r} must be an integer; got {v!r}.") from None


def _read_sarsop(path, text):
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        line, col = exc.position
        raise ValueError(f"{path}, line {line}: malformed policy XML "
                         f"({exc.msg if hasattr(exc, 'msg') else exc}).") from None
    av = root if root.tag == "AlphaVector" else root.find("AlphaVector")
    if av is None:
        raise ValueError(f"{path}: no <AlphaVector> element (not a SARSOP .policy file).")
    S = _int_attr(av, "vectorLength", f"{path}: <AlphaVector>")
    n_decl = av.get("numVectors")
    alphas, actions = [], []
    for i, el in enumerate(av):
        where = f"{path}: vector {i}"
        a = _int_attr(el, "action", where)
        if el.tag == "Vector":
            alphas.append(_numbers(el.text or "", where, S))
        elif el.tag == "SparseVector":
            v = np.zeros(S)
            for e in el.findall("Entry"):
                parts = _numbers(e.text or "", where, 2)
                s = int(parts[0])
                if parts[0] != s or not 0 <= s < S:
                    raise ValueError(f"{where}: entry index {parts[0]!r} outside [0, {S}).")
                v[s] = parts[1]
            alphas.append(v)
        else:
            raise ValueError(f"{where}: unexpected element <{el.tag}>.")
        actions.append(a)
    if n_decl is not None and str(len(alphas)) != n_decl.strip():
        raise ValueError(f"{path}: numVectors=\"{n_decl}\" but the file holds {len(alphas)} vectors (truncated?).")
    if not alphas:
        raise ValueError(f"{path}: the policy holds no vectors.")
    return np.vstack(alphas), np.asarray(actions, dtype=np.int64)


def _read_alpha(path, text):
    lines = text.splitlines()
    alphas, actions = [], []
    i, n = 0, len(lines)
    S = None
    while i < n:
        if not lines[i].strip():
            i += 1
            continue
        head = lines[i].split()
        if len(head) != 1 or not head[0].lstrip("-").isdigit():
            raise ValueError(f"{path}, line {i + 1}: expected an action index, got {lines[i].strip()!r}.")
        a = int(head[0])
        j = i + 1
        while j < n and not lines[j].strip():
            j += 1
        if j >= n:
            raise ValueError(f"{path}, line {i + 1}: action {a} has no vector (truncated file).")
        vec = _numbers(lines[j], f"{path}, line {j + 1}", S)
        S = len(vec) if S is None else S
        alphas.append(vec)
        actions.append(a)
        i = j + 1
    if not alphas:
        raise ValueError(f"{path}: the policy holds no vectors.")
    return np.vstack(alphas), np.asarray(actions, dtype=np.int64)


def read_policy(path, pomdp=None, *, format=None):
    """Read an alpha-vector policy written by SARSOP (``.policy``) or pomdp-solve (``.alpha``).

    Parameters
    ----------
    path : str or path-like
    pomdp : POMDP, optional
        When given, the vector length must be its number of states and every action index in
        ``[0, n_actions)``.
    format : {"sarsop", "alpha"} or None
        ``None``: from the extension.

    Returns
    -------
    AlphaPolicy

    Raises
    ------
    ValueError
        A malformed or truncated file (naming the file and the line or vector), or sizes that do
        not match ``pomdp``.
    """
    fmt = _format_of(path, format)
    if pomdp is not None:
        _check_model(pomdp)
    try:
        with open(path, encoding="latin-1") as fh:
            text = fh.read()
    except OSError as exc:
        raise ValueError(f"cannot read policy file {str(path)!r}: {exc.strerror or exc}.") from None
    alphas, actions = (_read_sarsop if fmt == "sarsop" else _read_alpha)(path, text)
    if pomdp is not None:
        S, A = int(pomdp.n_states), int(pomdp.n_actions)
        if alphas.shape[1] != S:
            raise ValueError(f"{path}: vectors have length {alphas.shape[1]} but the model has {S} states.")
        bad = np.flatnonzero((actions < 0) | (actions >= A))
        if bad.size:
            raise ValueError(f"{path}: vector {int(bad[0])} has action {int(actions[bad[0]])} outside [0, {A}) "
                             "(the model's actions).")
    return AlphaPolicy(alphas, actions, fmt)


def write_policy(path, alphas, actions=None, *, format=None, model_name="model"):
    """Write alpha vectors (and their actions) as a SARSOP ``.policy`` or pomdp-solve ``.alpha`` file.

    ``alphas`` may also be a fitted solver (``alphas_`` and ``actions_``) or an :class:`AlphaPolicy`.
    Numbers are written with 17 significant digits, so reading the file back is exact.
    Returns the text written.

    Parameters
    ----------
    path : str or path-like
        The file; ``.policy`` (SARSOP) or ``.alpha`` (pomdp-solve) sets the format.
    alphas : array-like of shape (n, S), fitted solver or AlphaPolicy
        The vectors.
    actions : array-like of int, shape (n,), optional
        Their actions (taken from ``alphas`` when it is a solver or a policy).
    format : {"sarsop", "alpha"} or None, default=None
        Overrides the extension.
    model_name : str, default="model"
        Model name written in a SARSOP file.

    Returns
    -------
    str
        The text written.
    """
    if hasattr(alphas, "alphas_"):
        alphas, actions = alphas.alphas_, alphas.actions_ if actions is None else actions
    elif isinstance(alphas, AlphaPolicy):
        alphas, actions = alphas.alphas, alphas.actions if actions is None else actions
    G = _real_array(alphas, "alphas")
    if G.ndim != 2 or G.shape[0] == 0:
        raise ValueError(f"'alphas' must have shape (n_alpha, S) with n_alpha >= 1; got {G.shape}.")
    if not np.all(np.isfinite(G)):
        raise ValueError("'alphas' must contain only finite values.")
    if actions is None:
        raise ValueError("'actions' must be given (one action index per vector).")
    act = np.asarray(actions)
    if act.shape != (G.shape[0],) or act.dtype.kind not in "iu":
        raise ValueError(f"'actions' must be {G.shape[0]} integers; got shape {act.shape} of dtype {act.dtype}.")
    fmt = _format_of(path, format)
    if fmt == "sarsop":
        rows = [f'<Vector action="{int(a)}" obsValue="0">' + " ".join(f"{v:.17g}" for v in g) + " </Vector>"
                for g, a in zip(G, act)]
        text = ('<?xml version="1.0" encoding="ISO-8859-1"?>\n'
                f'<Policy version="0.1" type="value" model="{model_name}">\n'
                f'<AlphaVector vectorLength="{G.shape[1]}" numObsValue="1" numVectors="{G.shape[0]}">\n'
                + "\n".join(rows) + "\n</AlphaVector> </Policy>\n")
    else:
        text = "\n".join(f"{int(a)}\n" + " ".join(f"{v:.17g}" for v in g) + "\n" for g, a in zip(G, act))
    if path is not None:
        with atomic_write(path, "w", encoding="latin-1") as fh:
            fh.write(text)
    return text


def _fsc_tables(controller, action=None, eta=None, m0=0):
    """``(action, eta, m0)`` of a fitted controller or of the given tables, as int arrays (``eta`` as
    given: (K, O) or (K, A, O)); ``m0`` is checked by the caller against ``K``."""
    if controller is not None:
        if not hasattr(controller, "action_"):
            raise ValueError("'controller' is not fitted; call its fit(pomdp) first.")
        action, eta, m0 = controller.action_, controller.eta_, controller.m0_
    act, et = _fsc_arrays(action, eta)
    if et.ndim not in (2, 3) or et.shape[0] != len(act):
        raise ValueError(f"'eta' must have shape (K={len(act)}, O) or (K={len(act)}, A, O); got {et.shape}.")
    if act.min() < 0:
        raise ValueError(f"'action' must hold action indices >= 0; got {int(act.min())}.")
    return act, et, m0


def policy_graph(controller=None, *, action=None, eta=None, m0=0, format="dot", pomdp=None):
    """A finite-state controller as a policy graph: Graphviz ``dot``, ``json`` or pomdp-solve ``pg``.

    Give a fitted controller (``action_``, ``eta_`` (K, O), ``m0_``) or the tables. With ``pomdp``
    the dot and JSON outputs use its action and observation names. The ``.pg`` output numbers
    nodes from 0 with the initial node first (nodes renumbered so ``m0`` is 0), as pomdp-solve
    starts from node 0 only when told; the JSON keeps the original numbering and names ``m0``.

    Parameters
    ----------
    controller : fitted controller or None, default=None
        A controller with ``action_``, ``eta_`` (K, O) and ``m0_``.
    action : int array-like of shape (K,), optional
        The action table, instead of ``controller``.
    eta : int array-like of shape (K, O), optional
        The memory update, instead of ``controller``.
    m0 : int, default=0
        Initial node, with the tables.
    format : {"dot", "json", "pg"}, default="dot"
        Output format.
    pomdp : POMDP or None, default=None
        Model whose action and observation names label the dot and JSON output.

    Returns
    -------
    str
        The policy graph.
    """
    if format not in GRAPH_FORMATS:
        raise ValueError(f"'format' must be one of {{'dot', 'json', 'pg'}}; got {format!r}.")
    if pomdp is not None:
        _check_model(pomdp)
    act, et, m0 = _fsc_tables(controller, action, eta, m0)
    K = len(act)
    if pomdp is not None:
        A, O = int(pomdp.n_actions), int(pomdp.n_observations)
    else:
        A, O = (et.shape[1] if et.ndim == 3 else int(act.max()) + 1), et.shape[-1]
    cert = check_fsc(act, et, A, max(O, 1))
    if not cert.total:
        raise ValueError(cert.message)
    if et.ndim == 3:
        et = et[np.arange(K), act]
    m0 = check_scalar_int(m0, "m0", low=0, high=K - 1)
    aname = (lambda a: pomdp.actions[a]) if pomdp is not None else (lambda a: f"a{a}")
    oname = (lambda o: pomdp.observations[o]) if pomdp is not None else (lambda o: f"o{o}")
    if format == "json":
        return json.dumps({"m0": m0, "nodes": [
            {"node": m, "action": int(act[m]), "action_name": aname(int(act[m])),
             "next": {oname(o): int(et[m, o]) for o in range(O)}} for m in range(K)]}, indent=1)
    if format == "dot":
        lines = ["digraph fsc {", "  rankdir=LR;", '  start [shape=point];', f"  start -> n{m0};"]
        for m in range(K):
            lines.append(f'  n{m} [label="{m}: {aname(int(act[m]))}"];')
        for m in range(K):
            by_target = {}
            for o in range(O):
                by_target.setdefault(int(et[m, o]), []).append(oname(o))
            for k, obs in by_target.items():
                lines.append(f'  n{m} -> n{k} [label="{", ".join(obs)}"];')
        lines.append("}")
        return "\n".join(lines) + "\n"
    order = [m0] + [m for m in range(K) if m != m0]
    new = {m: i for i, m in enumerate(order)}
    return "".join(f"{new[m]} {int(act[m])} " + " ".join(str(new[int(et[m, o])]) for o in range(O)) + "\n"
                   for m in order)


def write_policy_graph(path, controller=None, *, format=None, **kwargs):
    """Write :func:`policy_graph` to ``path`` (format from the extension ``.dot``/``.json``/``.pg``
    unless given); returns the text.

    Parameters
    ----------
    path : str or path-like
        The file.
    controller : fitted controller or None, default=None
        As for :func:`policy_graph`.
    format : {"dot", "json", "pg"} or None, default=None
        Overrides the extension.
    **kwargs
        Passed to :func:`policy_graph`.

    Returns
    -------
    str
        The text written.
    """
    if format is None:
        ext = os.path.splitext(str(path))[1].lower().lstrip(".")
        if ext not in GRAPH_FORMATS:
            raise ValueError(f"cannot tell the graph format of {str(path)!r}; use a .dot, .json or .pg name or "
                             "pass format=.")
        format = ext
    text = policy_graph(controller, format=format, **kwargs)
    with atomic_write(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return text
