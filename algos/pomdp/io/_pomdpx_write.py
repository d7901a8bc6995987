"""The flat POMDPX writer (:func:`write_pomdpx`); the reader and the format's rules are in :mod:`._pomdpx`."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..._io import atomic_write


def _check_token_names(names, what):
    for x in names:
        if not x or x in ("*", "-", "null", "identity", "uniform") or any(c.isspace() for c in x):
            raise ValueError(f"'{what}' names must be non-empty, without whitespace and not one of '*', '-', "
                             f"'null', 'identity', 'uniform' to be written as POMDPX values; got {x!r}.")


def write_pomdpx(pomdp, path=None):
    """Write ``pomdp`` as a flat POMDPX file and return the text (also saved to ``path`` if given).

    One state variable (``state_0``/``state_1``), one observation variable ``obs``, one action
    variable ``action`` and one reward variable ``reward``, each with the model's names as
    ``<ValueEnum>``. Transitions are written one ``<Entry>`` per non-zero ``T[a, s, s']`` (so a
    sparse model stays small), observations as one full ``-`` table per action, rewards as one
    ``<ValueTable>`` per action and ``b0`` as one row. Numbers use ``repr``, so :func:`read_pomdpx`
    gives the model back (to the rounding of its row renormalisation).

    Parameters
    ----------
    pomdp : POMDP
        The model.
    path : str, path-like or None, default=None
        Where to write (``None``: only return the text).

    Returns
    -------
    str
        The XML text.

    Raises
    ------
    TypeError
        If ``pomdp`` is not a :class:`POMDP`.
    ValueError
        If a state, action or observation name cannot be a POMDPX value (whitespace, ``*``, ``-``).

    Examples
    --------
    >>> from algos.pomdp import read_pomdpx, tiger
    >>> text = write_pomdpx(tiger())
    >>> import io
    >>> back = read_pomdpx(io.StringIO(text))
    >>> back.states == tiger().states and bool((back.r == tiger().r).all())
    True
    """
    from xml.sax.saxutils import escape

    from .._model import POMDP

    if not isinstance(pomdp, POMDP):
        raise TypeError(f"'pomdp' must be a POMDP; got {type(pomdp).__name__}.")
    for names, what in ((pomdp.states, "states"), (pomdp.actions, "actions"), (pomdp.observations, "observations")):
        _check_token_names(names, what)
    st = [escape(x) for x in pomdp.states]
    ac = [escape(x) for x in pomdp.actions]
    ob = [escape(x) for x in pomdp.observations]

    def fmt(v):
        return " ".join(repr(float(x)) for x in np.ravel(v))

    out = ['<?xml version="1.0" encoding="UTF-8"?>', '<pomdpx version="1.0" id="algos">',
           "<Description>written by algos.pomdp.write_pomdpx</Description>",
           f"<Discount>{float(pomdp.discount)!r}</Discount>", "<Variable>",
           '<StateVar vnamePrev="state_0" vnameCurr="state_1" fullyObs="false">'
           f'<ValueEnum>{" ".join(st)}</ValueEnum></StateVar>',
           f'<ObsVar vname="obs"><ValueEnum>{" ".join(ob)}</ValueEnum></ObsVar>',
           f'<ActionVar vname="action"><ValueEnum>{" ".join(ac)}</ValueEnum></ActionVar>',
           '<RewardVar vname="reward"/>', "</Variable>",
           "<InitialStateBelief><CondProb><Var>state_0</Var><Parent>null</Parent><Parameter type=\"TBL\">",
           f"<Entry><Instance>-</Instance><ProbTable>{fmt(pomdp.b0)}</ProbTable></Entry>",
           "</Parameter></CondProb></InitialStateBelief>",
           "<StateTransitionFunction><CondProb><Var>state_1</Var><Parent>action state_0</Parent>"
           '<Parameter type="TBL">']
    for a in range(pomdp.n_actions):
        Ta = pomdp.T[a]
        coo = sp.coo_array(Ta) if sp.issparse(Ta) else None
        src, dst = coo.coords if coo is not None else np.nonzero(Ta)
        vals = coo.data if coo is not None else Ta[src, dst]
        for s, s2, p in zip(src.tolist(), dst.tolist(), vals.tolist()):
            if p != 0.0:
                out.append(f"<Entry><Instance>{ac[a]} {st[s]} {st[s2]}</Instance><ProbTable>{p!r}</ProbTable></Entry>")
    out.append("</Parameter></CondProb></StateTransitionFunction>")
    out.append("<ObsFunction><CondProb><Var>obs</Var><Parent>action state_1</Parent><Parameter type=\"TBL\">")
    for a in range(pomdp.n_actions):
        out.append(f"<Entry><Instance>{ac[a]} - -</Instance><ProbTable>{fmt(pomdp.Z[a])}</ProbTable></Entry>")
    out.append("</Parameter></CondProb></ObsFunction>")
    out.append("<RewardFunction><Func><Var>reward</Var><Parent>action state_0</Parent><Parameter type=\"TBL\">")
    for a in range(pomdp.n_actions):
        out.append(f"<Entry><Instance>{ac[a]} -</Instance><ValueTable>{fmt(pomdp.r[:, a])}</ValueTable></Entry>")
    out += ["</Parameter></Func></RewardFunction>", "</pomdpx>", ""]
    text = "\n".join(out)
    if path is not None:
        with atomic_write(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    return text
