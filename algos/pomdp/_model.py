"""The finite POMDP model: transitions ``T`` (A, S, S), dense or sparse, dense ``Z[A,S,O]``, ``r[S,A]``,
``discount`` and ``b0``.

Conventions (the pomdp reconstruction notes §1.1):

* ``T[a, s, s'] = P(s' | s, a)``;
* ``Z[a, s', o] = P(o | s', a)`` (the observation depends on the state *reached* and the action taken);
* ``r[s, a]`` is the expected immediate reward, already reduced from Cassandra's ``R[a, s, s', o]``
  by ``r(s, a) = sum_{s', o} T[a, s, s'] Z[a, s', o] R[a, s, s', o]``;
* ``discount`` is in ``[0, 1]``. The model accepts ``1`` (undiscounted files such as bridge-repair
  exist), but every discounted bound and value iteration in the package needs ``discount < 1`` and
  checks that itself;
* ``b0`` is the initial belief (default uniform).

File input/output lives in :mod:`algos.pomdp.io._parser`; it is exposed here as :meth:`POMDP.parse`,
:meth:`POMDP.from_file` and :meth:`POMDP.to_file` (thin wrappers that import the parser lazily, so
``_parser`` can import this module without a cycle).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse

from .._validation import check_finite, check_option, check_scalar_float

__all__ = ["POMDP", "DENSE_LIMIT_BYTES", "SPARSE_AUTO_BYTES"]

#: The package's memory limit for one dense model array (float64): a dense ``T`` (or ``Z``) above
#: it is refused with a ``ValueError`` that gives the estimate.
DENSE_LIMIT_BYTES = 4 * 2**30
#: ``storage="auto"`` keeps ``T`` sparse (per-action CSR) when the dense ``(A, S, S)`` float64 array
#: would take more than this.
SPARSE_AUTO_BYTES = 256 * 2**20


def check_dense_budget(nbytes, what, limit=DENSE_LIMIT_BYTES):
    """Raise ``ValueError`` when a dense array of ``nbytes`` bytes exceeds ``limit``.

    Parameters
    ----------
    nbytes : int
        Size of the dense array in bytes.
    what : str
        Description used in the message, e.g. ``"a dense T (A=13, S=12545)"``.
    limit : int, default=DENSE_LIMIT_BYTES
        The limit in bytes.

    Raises
    ------
    ValueError
        Naming ``what``, the estimate and the limit in GiB.
    """
    if nbytes > limit:
        raise ValueError(f"{what} would need {nbytes / 2**30:.1f} GiB (limit {limit / 2**30:g} GiB).")


def _is_sparse_sequence(T):
    if scipy.sparse.issparse(T):
        raise TypeError(
            f"'T' given sparse must be a sequence of A sparse (S, S) matrices, one per action; got a single "
            f"{type(T).__name__} of shape {T.shape}."
        )
    return isinstance(T, (list, tuple)) and len(T) > 0 and any(scipy.sparse.issparse(x) for x in T)


def _as_csr_sequence(T):
    """Per-action ``csr_array`` float64 (duplicates summed, zeros dropped, indices sorted)."""
    out = []
    for a, x in enumerate(T):
        if not scipy.sparse.issparse(x):
            raise TypeError(
                f"'T' given as a sequence must hold scipy.sparse matrices only; got {type(x).__name__} at T[{a}]."
            )
        if np.iscomplexobj(x.data if hasattr(x, "data") else x.tocoo().data):
            raise TypeError(f"'T' must be real; got complex entries in T[{a}].")
        if x.ndim != 2:
            raise ValueError(f"'T[{a}]' must be a 2-d (S, S) matrix; got shape {x.shape}.")
        m = scipy.sparse.csr_array(x, dtype=np.float64, copy=True)
        m.sum_duplicates()
        check_finite(m.data, f"T[{a}]")
        m.eliminate_zeros()
        m.sort_indices()
        out.append(m)
    shapes = {m.shape for m in out}
    S = out[0].shape[0]
    if len(shapes) != 1 or out[0].shape != (S, S) or S < 1:
        raise ValueError(
            f"'T' must hold A square (S, S) matrices of one size; got shapes {[m.shape for m in out]}."
        )
    return tuple(out)


def _freeze(m):
    for arr in (m.data, m.indices, m.indptr):
        arr.flags.writeable = False
    return m


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
    """A finite POMDP ``(S, A, O, T, Z, r, discount, b0)`` with dense or sparse transitions.

    Parameters
    ----------
    T : array-like of shape (A, S, S), or sequence of A scipy.sparse matrices (S, S)
        ``T[a, s, s'] = P(s' | s, a)``; every row ``T[a, s, :]`` sums to 1. A sequence of sparse
        matrices or arrays (any format) gives the transitions per action without a dense copy.
    Z : array-like of shape (A, S, O)
        ``Z[a, s', o] = P(o | s', a)``; every row ``Z[a, s', :]`` sums to 1. ``Z`` is always held
        dense; one larger than :data:`DENSE_LIMIT_BYTES` (4 GiB of float64) is refused.
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
    storage : {"auto", "dense", "sparse"}, default="auto"
        How ``T`` is held. ``"dense"``: one float64 array (A, S, S), refused with a ``ValueError``
        giving the estimate in GiB above :data:`DENSE_LIMIT_BYTES` (4 GiB). ``"sparse"``: one
        ``scipy.sparse.csr_array`` (S, S) float64 per action (duplicates summed, explicit zeros
        dropped, indices sorted). ``"auto"``: sparse when ``T`` is given sparse or when the dense
        array would exceed :data:`SPARSE_AUTO_BYTES` (256 MiB), dense otherwise.

    Attributes
    ----------
    T : ndarray of shape (A, S, S) or tuple of A scipy.sparse.csr_array
        The one rule: ``T`` is the stored transitions and never converts. A dense model gives its
        (A, S, S) array; a sparse model (``is_sparse``) gives a tuple of A read-only CSR arrays (S, S).
        Use :meth:`transition_csr` for CSR of one action with either storage, and :meth:`to_dense`
        for a dense model.
    Z : ndarray of shape (A, S, O)
    r : ndarray of shape (S, A)
    discount : float
    b0 : ndarray of shape (S,)
    is_sparse : bool
        Whether ``T`` is held sparse.

    Raises
    ------
    ValueError
        On inconsistent shapes (naming the array and its shape), NaN/inf, negative entries, or a
        row whose sum deviates from 1 by more than ``tol`` (naming the action, the row and the
        deviation); on ``storage="dense"`` (or a ``Z``) above the memory limit, giving the estimate.
    TypeError
        On non-numeric or complex input, or a sequence for ``T`` that mixes sparse and dense entries.

    Examples
    --------
    >>> import numpy as np
    >>> m = POMDP(np.ones((1, 2, 2)) / 2, np.ones((1, 2, 1)), np.zeros((2, 1)), 0.9)
    >>> m.n_states, m.n_actions, m.n_observations
    (2, 1, 1)
    >>> import scipy.sparse
    >>> ms = POMDP([scipy.sparse.identity(2, format="csr")], np.ones((1, 2, 1)), np.zeros((2, 1)), 0.9)
    >>> ms.is_sparse, ms.transition_csr(0).nnz
    (True, 2)
    """

    def __init__(self, T, Z, r, discount, b0=None, states=None, actions=None, observations=None, *, tol=1e-9,
                 storage="auto"):
        tol = check_scalar_float(tol, "tol", low=0.0)
        storage = check_option(storage, "storage", ("auto", "dense", "sparse"))
        if _is_sparse_sequence(T):
            T_csr = _as_csr_sequence(T)
            n_actions, n_states = len(T_csr), T_csr[0].shape[0]
            T_dense = None
            t_shape = (n_actions, n_states, n_states)
        else:
            T_dense = _as_float_array(T, "T", 3)
            T_csr = None
            t_shape = T_dense.shape
        n_actions, n_states, n_states2 = t_shape
        if n_actions < 1 or n_states < 1:
            raise ValueError(f"'T' must have shape (A, S, S) with A, S >= 1; got shape {t_shape}.")
        if n_states2 != n_states:
            raise ValueError(f"'T' must have shape (A, S, S); got shape {t_shape}.")
        Z = _as_float_array(Z, "Z", 3)
        r = _as_float_array(r, "r", 2)
        if Z.shape[:2] != (n_actions, n_states) or Z.shape[2] < 1:
            raise ValueError(
                f"'Z' must have shape (A, S, O) = ({n_actions}, {n_states}, O) with O >= 1 to match "
                f"'T' of shape {t_shape}; got shape {Z.shape}."
            )
        check_dense_budget(Z.nbytes, f"a dense Z (A={n_actions}, S={n_states}, O={Z.shape[2]})")
        if r.shape != (n_states, n_actions):
            raise ValueError(
                f"'r' must have shape (S, A) = ({n_states}, {n_actions}) to match 'T' of shape {t_shape}; "
                f"got shape {r.shape}."
            )
        discount = check_scalar_float(discount, "discount", low=0.0, high=1.0)
        if b0 is None:
            b0 = np.full(n_states, 1.0 / n_states)
        else:
            b0 = _as_float_array(b0, "b0", 1)
            if b0.shape != (n_states,):
                raise ValueError(f"'b0' must have shape (S,) = ({n_states},); got shape {b0.shape}.")
        dense_bytes = n_actions * n_states * n_states * 8
        sparse = storage == "sparse" or (storage == "auto" and (T_csr is not None or dense_bytes > SPARSE_AUTO_BYTES))
        if not sparse:
            check_dense_budget(dense_bytes, f"storage='dense' of 'T' (A={n_actions}, S={n_states}): a dense T")
        self.states = _check_names(states, n_states, "states", "s")
        self.actions = _check_names(actions, n_actions, "actions", "a")
        self.observations = _check_names(observations, Z.shape[2], "observations", "o")
        if T_csr is not None:
            self._check_stochastic_csr(T_csr, "T", "s", self.states, tol)
        else:
            self._check_stochastic(T_dense, "T", "s", self.states, tol)
        self._check_stochastic(Z, "Z", "s'", self.states, tol)
        if (b0 < 0).any():
            i = int(np.argmax(b0 < 0))
            raise ValueError(f"'b0' must be non-negative; got {float(b0[i])!r} for state {self.states[i]!r}.")
        dev = abs(b0.sum() - 1.0)
        if dev > tol:
            raise ValueError(f"'b0' must sum to 1 (tol={tol:g}); got sum {float(b0.sum())!r} (deviation {dev:.3g}).")
        if sparse:
            if T_csr is None:
                T_csr = _as_csr_sequence([scipy.sparse.csr_array(T_dense[a]) for a in range(n_actions)])
            self._T = tuple(_freeze(m) for m in T_csr)
        else:
            if T_dense is None:
                T_dense = np.stack([m.toarray() for m in T_csr])
            self._T = T_dense
        self._shape = (n_actions, n_states, n_states)
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
            self._raise_row_sum(name, row_label, row_names, tol, dev, lambda a, s: P[a, s].sum())

    def _raise_row_sum(self, name, row_label, row_names, tol, dev, row_sum):
        """Raise the ``ValueError`` for the row of ``name`` deviating most from a sum of 1 (``dev`` of
        shape (A, n): the deviations; ``row_sum(a, s)``: that row's sum, as reported)."""
        a, s = (int(i) for i in np.unravel_index(np.argmax(dev), dev.shape))
        raise ValueError(
            f"rows of '{name}' must sum to 1 (tol={tol:g}); row {name}[{a}, {s}, :] (action "
            f"{self.actions[a]!r}, {row_label}={row_names[s]!r}) sums to {float(row_sum(a, s))!r} "
            f"(deviation {dev[a, s]:.3g})."
        )

    def _check_stochastic_csr(self, mats, name, row_label, row_names, tol):
        """The checks of :meth:`_check_stochastic` on per-action CSR, without densifying."""
        for a, m in enumerate(mats):
            neg = np.flatnonzero(m.data < 0)
            if len(neg):
                k = int(neg[0])
                s = int(np.searchsorted(m.indptr, k, side="right") - 1)
                j = int(m.indices[k])
                raise ValueError(
                    f"'{name}' must be non-negative; got {float(m.data[k])!r} at {name}[{a}, {s}, {j}] "
                    f"(action {self.actions[a]!r}, {row_label}={row_names[s]!r})."
                )
        sums = np.stack([np.asarray(m.sum(axis=1)).ravel() for m in mats])
        dev = np.abs(sums - 1.0)
        if (dev > tol).any():
            self._raise_row_sum(name, row_label, row_names, tol, dev, lambda a, s: sums[a, s])

    # ------------------------------------------------------------------ storage
    @property
    def T(self):
        """The stored transitions: ndarray (A, S, S) when dense, tuple of A read-only CSR (S, S) when sparse."""
        return self._T

    @property
    def is_sparse(self):
        """Whether ``T`` is held as per-action CSR arrays."""
        return isinstance(self._T, tuple)

    def transition_csr(self, a):
        """``T[a]`` as a ``scipy.sparse.csr_array`` (S, S) float64 with sorted indices (either storage).

        Parameters
        ----------
        a : int
            The action index.

        Returns
        -------
        scipy.sparse.csr_array
            The transitions of action ``a`` (read-only arrays for a sparse model; a new array for a
            dense one).
        """
        from .._validation import check_scalar_int

        a = check_scalar_int(a, "a", low=0, high=self.n_actions - 1)
        if self.is_sparse:
            return self._T[a]
        m = scipy.sparse.csr_array(self._T[a])
        m.sort_indices()
        return m

    def to_dense(self):
        """This model with dense ``T`` (the model itself when already dense).

        Returns
        -------
        POMDP
            A dense model (a new one for a sparse model; arrays other than ``T`` are shared).

        Raises
        ------
        ValueError
            When the dense ``T`` would exceed :data:`DENSE_LIMIT_BYTES`, giving the estimate in GiB.
        """
        if not self.is_sparse:
            return self
        A, S, _ = self._shape
        check_dense_budget(A * S * S * 8, f"to_dense() of a sparse POMDP (A={A}, S={S}): a dense T")
        out = object.__new__(POMDP)
        out.__dict__.update(self.__dict__)
        out._T = np.stack([m.toarray() for m in self._T])
        return out

    # ------------------------------------------------------------------ sizes
    @property
    def n_states(self):
        """Number of states ``S``."""
        return self._shape[1]

    @property
    def n_actions(self):
        """Number of actions ``A``."""
        return self._shape[0]

    @property
    def n_observations(self):
        """Number of observations ``O``."""
        return self.Z.shape[2]

    # ------------------------------------------------------------------ helpers
    def copy(self):
        """A deep copy (arrays copied), with the same storage.

        Returns
        -------
        POMDP
            The copy.
        """
        if self.is_sparse:
            T = [m.copy() for m in self._T]
        else:
            T = self._T.copy()
        out = POMDP(
            T, self.Z.copy(), self.r.copy(), self.discount, self.b0.copy(),
            self.states, self.actions, self.observations, tol=self.tol,
            storage="sparse" if self.is_sparse else "dense",
        )
        for key, value in self.__dict__.items():  # extras such as rock_positions
            if key not in out.__dict__:
                out.__dict__[key] = value.copy() if isinstance(value, np.ndarray) else value
        return out

    def allclose(self, other, atol=1e-12, *, check_names=True):
        """True if ``other`` has the same sizes (and names) and all numbers agree within ``atol``.

        The storage (dense or sparse) does not matter; sparse transitions are compared without
        densifying.

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
        if (self._shape, self.Z.shape) != (other._shape, other.Z.shape):
            return False
        if check_names and (self.states, self.actions, self.observations) != (
            other.states, other.actions, other.observations
        ):
            return False
        if abs(self.discount - other.discount) > atol:
            return False
        if not all(
            np.allclose(x, y, rtol=0.0, atol=atol)
            for x, y in ((self.Z, other.Z), (self.r, other.r), (self.b0, other.b0))
        ):
            return False
        if not (self.is_sparse or other.is_sparse):
            return bool(np.allclose(self._T, other._T, rtol=0.0, atol=atol))
        for a in range(self.n_actions):
            d = self.transition_csr(a) - other.transition_csr(a)
            if d.nnz and float(np.abs(d.data).max()) > atol:
                return False
        return True

    def __eq__(self, other):
        """Exact equality of all arrays, the discount and the names (either storage)."""
        if not isinstance(other, POMDP):
            return NotImplemented
        return self.allclose(other, atol=0.0)

    __hash__ = None

    def __repr__(self):
        extra = ""
        if self.is_sparse:
            extra = f", storage='sparse', nnz_T={sum(m.nnz for m in self._T)}"
        return (
            f"POMDP(n_states={self.n_states}, n_actions={self.n_actions}, "
            f"n_observations={self.n_observations}, discount={self.discount!r}{extra})"
        )

    # ------------------------------------------------------------------ file I/O
    @classmethod
    def parse(cls, text, name="<string>", **kwargs):
        """Parse Cassandra ``.POMDP`` text; see :func:`algos.pomdp.io._parser.parse_pomdp`.

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
        from .io._parser import parse_pomdp

        return parse_pomdp(text, name, **kwargs)

    @classmethod
    def from_file(cls, path, **kwargs):
        """Read a Cassandra ``.POMDP`` file; see :func:`algos.pomdp.io._parser.read_pomdp`.

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
        from .io._parser import read_pomdp

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
        from .io._parser import write_pomdp

        return write_pomdp(self, path)
