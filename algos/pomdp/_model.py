"""The finite POMDP model: dense arrays ``T[A,S,S]``, ``Z[A,S,O]``, ``r[S,A]``, ``discount`` and ``b0``.

Conventions (the pomdp reconstruction notes §1.1):

* ``T[a, s, s'] = P(s' | s, a)``;
* ``Z[a, s', o] = P(o | s', a)`` (the observation depends on the state *reached* and the action taken);
* ``r[s, a]`` is the expected immediate reward, already reduced from Cassandra's ``R[a, s, s', o]``
  by ``r(s, a) = sum_{s', o} T[a, s, s'] Z[a, s', o] R[a, s, s', o]``;
* ``discount`` is in ``[0, 1]``. The model accepts ``1`` (undiscounted files such as bridge-repair
  exist), but every discounted bound and value iteration in the package needs ``discount < 1`` and
  checks that itself;
* ``b0`` is the initial belief (default uniform).

File input/output lives in :mod:`algos.pomdp._parser`; it is exposed here as :meth:`POMDP.parse`,
:meth:`POMDP.from_file` and :meth:`POMDP.to_file` (thin wrappers that import the parser lazily, so
``_parser`` can import this module without a cycle).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_finite, check_scalar_float

__all__ = ["POMDP"]


def _default_names(prefix, n):
    return tuple(f"{prefix}{i}" for i in range(n))


def _check_names(names, n, what, prefix):
    if names is None:
        return _default_names(prefix, n)
    if isinstance(names, str):
        raise TypeError(f"'{what}' must be a sequence of {n} names; got the string {names!r}.")
    names = tuple(str(x) for x in names)
    if len(names) != n:
        raise ValueError(f"'{what}' must have {n} names; got {len(names)}.")
    if len(set(names)) != n:
        dup = next(x for x in names if names.count(x) > 1)
        raise ValueError(f"'{what}' must be distinct; got {dup!r} more than once.")
    return names


def _as_float_array(value, name, ndim):
    if np.iscomplexobj(value):
        raise TypeError(f"'{name}' must be a real numeric array; got complex entries.")
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"'{name}' must be a numeric array; got {type(value).__name__} ({exc}).") from None
    if arr.ndim != ndim:
        raise ValueError(f"'{name}' must be a {ndim}-d array; got shape {arr.shape}.")
    check_finite(arr, name)
    return arr


class POMDP:
    """A finite, dense POMDP ``(S, A, O, T, Z, r, discount, b0)``.

    Parameters
    ----------
    T : array-like of shape (A, S, S)
        ``T[a, s, s'] = P(s' | s, a)``; every row ``T[a, s, :]`` sums to 1.
    Z : array-like of shape (A, S, O)
        ``Z[a, s', o] = P(o | s', a)``; every row ``Z[a, s', :]`` sums to 1.
    r : array-like of shape (S, A)
        Expected immediate reward of taking ``a`` in ``s``.
    discount : float in [0, 1]
        ``1`` is accepted for the model; discounted algorithms and bounds require ``< 1``.
    b0 : array-like of shape (S,), default=None
        Initial belief on the simplex; ``None`` means uniform.
    states, actions, observations : sequence of str, default=None
        Names; default ``"s0", "s1", ...``, ``"a0", ...``, ``"o0", ...``.
    tol : float, default=1e-9
        Allowed deviation of each probability row (and of ``b0``) from summing to 1. Rows are stored
        as given (not renormalised); the file parser renormalises before building the model.

    Raises
    ------
    ValueError
        On inconsistent shapes (naming the array and its shape), NaN/inf, negative entries, or a
        row whose sum deviates from 1 by more than ``tol`` (naming the action, the row and the
        deviation).

    Examples
    --------
    >>> import numpy as np
    >>> m = POMDP(np.ones((1, 2, 2)) / 2, np.ones((1, 2, 1)), np.zeros((2, 1)), 0.9)
    >>> m.n_states, m.n_actions, m.n_observations
    (2, 1, 1)
    """

    def __init__(self, T, Z, r, discount, b0=None, states=None, actions=None, observations=None, *, tol=1e-9):
        tol = check_scalar_float(tol, "tol", low=0.0)
        T = _as_float_array(T, "T", 3)
        Z = _as_float_array(Z, "Z", 3)
        r = _as_float_array(r, "r", 2)
        n_actions, n_states, n_states2 = T.shape
        if n_actions < 1 or n_states < 1:
            raise ValueError(f"'T' must have shape (A, S, S) with A, S >= 1; got shape {T.shape}.")
        if n_states2 != n_states:
            raise ValueError(f"'T' must have shape (A, S, S); got shape {T.shape}.")
        if Z.shape[:2] != (n_actions, n_states) or Z.shape[2] < 1:
            raise ValueError(
                f"'Z' must have shape (A, S, O) = ({n_actions}, {n_states}, O) with O >= 1 to match "
                f"'T' of shape {T.shape}; got shape {Z.shape}."
            )
        if r.shape != (n_states, n_actions):
            raise ValueError(
                f"'r' must have shape (S, A) = ({n_states}, {n_actions}) to match 'T' of shape {T.shape}; "
                f"got shape {r.shape}."
            )
        discount = check_scalar_float(discount, "discount", low=0.0, high=1.0)
        if b0 is None:
            b0 = np.full(n_states, 1.0 / n_states)
        else:
            b0 = _as_float_array(b0, "b0", 1)
            if b0.shape != (n_states,):
                raise ValueError(f"'b0' must have shape (S,) = ({n_states},); got shape {b0.shape}.")
        self.states = _check_names(states, n_states, "states", "s")
        self.actions = _check_names(actions, n_actions, "actions", "a")
        self.observations = _check_names(observations, Z.shape[2], "observations", "o")
        self._check_stochastic(T, "T", "s", self.states, tol)
        self._check_stochastic(Z, "Z", "s'", self.states, tol)
        if (b0 < 0).any():
            i = int(np.argmax(b0 < 0))
            raise ValueError(f"'b0' must be non-negative; got {float(b0[i])!r} for state {self.states[i]!r}.")
        dev = abs(b0.sum() - 1.0)
        if dev > tol:
            raise ValueError(f"'b0' must sum to 1 (tol={tol:g}); got sum {float(b0.sum())!r} (deviation {dev:.3g}).")
        self.T = T
        self.Z = Z
        self.r = r
        self.discount = discount
        self.b0 = b0
        self.tol = tol

    def _check_stochastic(self, P, name, row_label, row_names, tol):
        if (P < 0).any():
            a, s, j = (int(i) for i in np.argwhere(P < 0)[0])
            raise ValueError(
                f"'{name}' must be non-negative; got {float(P[a, s, j])!r} at {name}[{a}, {s}, {j}] "
                f"(action {self.actions[a]!r}, {row_label}={row_names[s]!r})."
            )
        dev = np.abs(P.sum(axis=2) - 1.0)
        if (dev > tol).any():
            a, s = (int(i) for i in np.unravel_index(np.argmax(dev), dev.shape))
            raise ValueError(
                f"rows of '{name}' must sum to 1 (tol={tol:g}); row {name}[{a}, {s}, :] (action "
                f"{self.actions[a]!r}, {row_label}={row_names[s]!r}) sums to {float(P[a, s].sum())!r} "
                f"(deviation {dev[a, s]:.3g})."
            )

    # ------------------------------------------------------------------ sizes
    @property
    def n_states(self):
        """Number of states ``S``."""
        return self.T.shape[1]

    @property
    def n_actions(self):
        """Number of actions ``A``."""
        return self.T.shape[0]

    @property
    def n_observations(self):
        """Number of observations ``O``."""
        return self.Z.shape[2]

    # ------------------------------------------------------------------ helpers
    def copy(self):
        """A deep copy (arrays copied).

        Returns
        -------
        POMDP
            The copy.
        """
        return POMDP(
            self.T.copy(), self.Z.copy(), self.r.copy(), self.discount, self.b0.copy(),
            self.states, self.actions, self.observations, tol=self.tol,
        )

    def allclose(self, other, atol=1e-12, *, check_names=True):
        """True if ``other`` has the same sizes (and names) and all numbers agree within ``atol``.

        Parameters
        ----------
        other : POMDP
            The model to compare with.
        atol : float, default=1e-12
            Absolute tolerance.
        check_names : bool, default=True
            Also compare the state, action and observation names.

        Returns
        -------
        bool
            Whether the models agree.
        """
        if not isinstance(other, POMDP):
            return False
        if (self.T.shape, self.Z.shape) != (other.T.shape, other.Z.shape):
            return False
        if check_names and (self.states, self.actions, self.observations) != (
            other.states, other.actions, other.observations
        ):
            return False
        if abs(self.discount - other.discount) > atol:
            return False
        return all(
            np.allclose(x, y, rtol=0.0, atol=atol)
            for x, y in ((self.T, other.T), (self.Z, other.Z), (self.r, other.r), (self.b0, other.b0))
        )

    def __eq__(self, other):
        """Exact equality of all arrays, the discount and the names."""
        if not isinstance(other, POMDP):
            return NotImplemented
        return self.allclose(other, atol=0.0)

    __hash__ = None

    def __repr__(self):
        return (
            f"POMDP(n_states={self.n_states}, n_actions={self.n_actions}, "
            f"n_observations={self.n_observations}, discount={self.discount!r})"
        )

    # ------------------------------------------------------------------ file I/O
    @classmethod
    def parse(cls, text, name="<string>", **kwargs):
        """Parse Cassandra ``.POMDP`` text; see :func:`algos.pomdp._parser.parse_pomdp`.

        Parameters
        ----------
        text : str
            File contents.
        name : str, default="<string>"
            Name used in error messages.
        **kwargs
            Passed to :func:`algos.pomdp.parse_pomdp`.

        Returns
        -------
        POMDP
            The model.
        """
        from ._parser import parse_pomdp

        return parse_pomdp(text, name, **kwargs)

    @classmethod
    def from_file(cls, path, **kwargs):
        """Read a Cassandra ``.POMDP`` file; see :func:`algos.pomdp._parser.read_pomdp`.

        Parameters
        ----------
        path : str or path-like
            The file.
        **kwargs
            Passed to :func:`algos.pomdp.parse_pomdp`.

        Returns
        -------
        POMDP
            The model.
        """
        from ._parser import read_pomdp

        return read_pomdp(path, **kwargs)

    def to_file(self, path=None):
        """Write this model in Cassandra format (``path=None``: only return the text).

        Parameters
        ----------
        path : str, path-like or None, default=None
            Where to write (``None``: only return the text).

        Returns
        -------
        str
            The text.
        """
        from ._parser import write_pomdp

        return write_pomdp(self, path)
