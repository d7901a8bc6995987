r"""Array cores of :mod:`algos.pomdp`: batched Bayes updates, the PBVI point backup, the sawtooth
upper bound and the per-belief backup of ``PointBasedSolver`` (:class:`PBSTorchBackup`, described
at its definition).

Each core is written once against the package's array namespace :mod:`accel.backend` (it takes the
backend ``nx`` first and uses only ``nx.<op>`` and the operators common to numpy arrays and torch
tensors). The public functions here run the cores on torch (``get_backend(backend="torch",
device=...)``); the same cores run on numpy (``get_backend(backend="numpy")``) are the readable
references that the tests pin the numba kernels of :mod:`algos.pomdp` to (``_belief_successors``,
``_pbvi_backup``, ``_sawtooth``, ``_pbs_backup``).

Same semantics as the numba kernels :func:`algos.pomdp._kernels.belief_successors` and
:func:`algos.pomdp._kernels.pbvi_backup` (the pomdp reconstruction notes §1.1), written as
batched tensor algebra so that a GPU can run them:

* :func:`belief_successors_torch` updates a (N, S) batch of beliefs under **every** action and
  observation at once: ``P`` (N, A, O), ``Bn`` (N, A, O, S), ``zero`` (N, A, O) -- the numba
  kernel's per-action outputs stacked along axis 1 (``Bn`` holds the prior-predicted belief
  ``b T_a`` where ``P(o | b, a) = 0``). A single action (``T`` of shape (S, S)) gives exactly the
  kernel's ``(P (N, O), Bn (N, O, S), zero (N, O))``.
* :func:`pbvi_backup_torch` computes the back-projections
  ``G[a, o, s, i] = sum_{s'} T[a, s, s'] Z[a, s', o] alpha_i(s')`` as one batched matmul, scores
  every belief against every projection (``B @ G``, one batched GEMM per chunk of beliefs), takes
  the argmax over the alpha vectors and then over the actions (the first maximum, i.e. the lowest
  index, on exact ties, as the kernel), and returns the new vectors, their action labels and their
  values ``b . alpha``.

Everything is float64. Results agree with the numba kernels to round-off (the summation order
differs); when two alpha vectors (or two actions) score within round-off of each other at a belief
the two paths may pick different -- equally good -- vectors, so parity is on values first.

torch is imported only when a torch backend is created: importing this module (or :mod:`algos`)
does not import it.
"""

from __future__ import annotations

import numpy as np

from theory._checks import check_scalar_float

from .backend import get_backend

__all__ = ["belief_successors_torch", "pbvi_backup_torch", "PBVITorchBackup", "PBSTorchBackup", "pbs_backup_torch"]

#: Beliefs per chunk are chosen so that a score block (chunk, A, O, n_alpha) holds at most this
#: many float64 entries (128 MiB).
_MAX_BLOCK = 2**24


def _numpy():
    """The numpy backend (the CPU reference run of the cores)."""
    return get_backend(backend="numpy")


def _as_array(nx, x, name, ndim):
    """``x`` as a float64 array of backend ``nx`` (on its device), with the package's checks."""
    if hasattr(x, "detach") and nx.name == "torch":  # a tensor: no autograd history, no numpy round trip
        t = nx.asarray(x.detach(), dtype=nx.float64)
    else:
        arr = nx.to_numpy(x)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"'{name}' must contain real numbers; got dtype {arr.dtype}.")
        t = nx.asarray(np.ascontiguousarray(arr, dtype=np.float64))
    if t.ndim not in ndim:
        raise ValueError(f"'{name}' must have {' or '.join(map(str, ndim))} dimensions; got shape {tuple(t.shape)}.")
    if not nx.all(nx.isfinite(t)):
        raise ValueError(f"'{name}' must contain only finite values.")
    return t


def _check_model(T, Z, B=None):
    """Shapes: T (A, S, S), Z (A, S, O), B (N, S)."""
    A, S, S2 = T.shape
    if S2 != S:
        raise ValueError(f"'T' must have shape (A, S, S); got {tuple(T.shape)}.")
    if Z.shape[0] != A or Z.shape[1] != S:
        raise ValueError(f"'Z' must have shape ({A}, {S}, O) to match 'T'; got {tuple(Z.shape)}.")
    if B is not None and B.shape[1] != S:
        raise ValueError(f"'B' must have shape (N, {S}); got {tuple(B.shape)}.")


def _successors(nx, B, T, Z):
    """Core: ``P`` (N, A, O), ``Bn`` (N, A, O, S), ``zero`` (N, A, O) (Bayes' rule, the pomdp
    reconstruction notes §1.1; the prior-predicted belief where ``P(o | b, a) = 0``)."""
    pred = nx.einsum("ns,ast->nat", B, T)                        # (N, A, S) prior-predicted beliefs
    joint = pred[:, :, None, :] * nx.swapaxes(Z, 1, 2)[None]     # (N, A, O, S) P(s', o | b, a)
    P = nx.sum(joint, axis=3)
    zero = ~(P > 0.0)
    Bn = joint / nx.where(zero, 1.0, P)[..., None]
    tot = nx.sum(pred, axis=2, keepdims=True)
    fallback = pred / nx.where(tot > 0, tot, 1.0)
    Bn = nx.where(zero[..., None], fallback[:, :, None, :], Bn)
    return P, Bn, zero


def _belief_successors(nx, B, T, Z):
    """:func:`belief_successors_torch` on backend ``nx``, returning ``nx`` arrays."""
    Bt = _as_array(nx, B, "B", (2,))
    Tt = _as_array(nx, T, "T", (2, 3))
    Zt = _as_array(nx, Z, "Z", (2, 3))
    single = Tt.ndim == 2
    if single != (Zt.ndim == 2):
        raise ValueError(f"'T' and 'Z' must both be 2-d (one action) or both 3-d; got shapes "
                         f"{tuple(Tt.shape)} and {tuple(Zt.shape)}.")
    if single:
        Tt, Zt = Tt[None], Zt[None]
    _check_model(Tt, Zt, Bt)
    P, Bn, zero = _successors(nx, Bt, Tt, Zt)
    if single:
        P, Bn, zero = P[:, 0], Bn[:, 0], zero[:, 0]
    return P, Bn, zero


def belief_successors_torch(B, T, Z, device=None, return_tensors=False):
    r"""Bayes successors of every belief of ``B`` under every action and observation.

    Parameters
    ----------
    B : array-like or tensor, shape (N, S)
        Beliefs (rows on the simplex; not re-checked, as the kernel).
    T : array-like or tensor, shape (A, S, S) or (S, S)
        ``T[a, s, s'] = P(s' | s, a)``; a 2-d ``T`` is one action's matrix (then ``Z`` is (S, O)).
    Z : array-like or tensor, shape (A, S, O) or (S, O)
        ``Z[a, s', o] = P(o | s', a)``.
    device : None, str or torch.device, default=None
        ``None``: CUDA if available, else CPU.
    return_tensors : bool, default=False
        Return torch tensors on ``device`` instead of numpy arrays.

    Returns
    -------
    P : (N, A, O) float64
        ``P(o | B[n], a)``.
    Bn : (N, A, O, S) float64
        Posteriors ``tau(B[n], a, o)``; the prior-predicted ``B[n] @ T[a]`` where ``P == 0``.
    zero : (N, A, O) bool
        ``P == 0``.
    With a 2-d ``T`` the action axis is dropped, matching
    :func:`algos.pomdp._kernels.belief_successors` (``P`` (N, O), ``Bn`` (N, O, S), ``zero`` (N, O)).

    Examples
    --------
    >>> import numpy as np
    >>> T = np.array([np.eye(2)]); Z = np.array([[[0.85, 0.15], [0.15, 0.85]]])
    >>> P, Bn, zero = belief_successors_torch(np.array([[0.5, 0.5]]), T, Z, device="cpu")
    >>> P.round(3).tolist(), Bn[0, 0, 0].round(3).tolist()
    ([[[0.5, 0.5]]], [0.85, 0.15])
    """
    nx = get_backend(backend="torch", device=device)
    P, Bn, zero = _belief_successors(nx, B, T, Z)
    if return_tensors:
        return P, Bn, zero
    return nx.to_numpy(P), nx.to_numpy(Bn), nx.to_numpy(zero)


def _projections(nx, alphas, T, Z):
    """``G[a, o, s, i] = sum_{s'} T[a, s, s'] Z[a, s', o] alphas[i, s']`` as one batched matmul."""
    M = nx.swapaxes(Z, 1, 2)[:, :, :, None] * alphas.T[None, None]   # (A, O, S', n)
    return nx.matmul(T[:, None], M)                                    # (A, O, S, n)


def _backup(nx, B, alphas, T, Z, r, discount):
    """Core of :func:`pbvi_backup_torch`: ``(new (N, S), acts (N,), vals (N,))`` (Pineau, Gordon and
    Thrun 2003, eq. 6-7; first maximum on exact ties)."""
    A, O = T.shape[0], Z.shape[2]
    N, S = B.shape
    n = alphas.shape[0]
    G = _projections(nx, alphas, T, Z)                                   # (A, O, S, n)
    Gt = nx.reshape(nx.swapaxes(G, 2, 3), (A * O * n, S))               # rows (a, o, i)
    Gs = nx.reshape(nx.swapaxes(nx.reshape(G, (A * O, S, n)), 0, 1), (S, A * O * n))
    chunk = max(1, _MAX_BLOCK // max(1, A * O * n))
    new = nx.empty((N, S), type_as=B)
    acts = nx.empty(N, dtype=nx.int64, type_as=B)
    vals = nx.empty(N, type_as=B)
    offs = nx.reshape(nx.arange(A * O, dtype=nx.int64, type_as=B) * n, (A, O))
    for lo in range(0, N, chunk):
        Bc = B[lo:lo + chunk]
        m = Bc.shape[0]
        scores = nx.reshape(Bc @ Gs, (m, A, O, n))
        best = nx.argmax(scores, axis=3)                                 # (m, A, O): first maximum
        rows = nx.reshape(Gt[nx.reshape(best + offs[None], (-1,))], (m, A, O, S))
        cand = r.T[None] + discount * nx.sum(rows, axis=2)              # (m, A, S)
        v = nx.einsum("ns,nas->na", Bc, cand)
        a = nx.argmax(v, axis=1)
        idx = nx.arange(m, dtype=nx.int64, type_as=B)
        new[lo:lo + m] = cand[idx, a]
        acts[lo:lo + m] = a
        vals[lo:lo + m] = v[idx, a]
    return new, acts, vals


def _checked(nx, T, Z, r, discount, B=None, alphas=None):
    """``(discount, B, alphas, T, Z, r)`` checked (in this order) and as arrays of backend ``nx``; ``B`` and
    ``alphas`` stay ``None`` when not given."""
    discount = check_scalar_float(discount, "discount", low=0.0, high=1.0)
    if B is not None:
        B = _as_array(nx, B, "B", (2,))
    if alphas is not None:
        alphas = _as_array(nx, alphas, "alphas", (2,))
    T = _as_array(nx, T, "T", (3,))
    Z = _as_array(nx, Z, "Z", (3,))
    r = _as_array(nx, r, "r", (2,))
    _check_model(T, Z, B)
    S, A = T.shape[1], T.shape[0]
    if alphas is not None and (alphas.shape[1] != S or alphas.shape[0] == 0):
        raise ValueError(f"'alphas' must have shape (n_alpha, {S}) with n_alpha >= 1; got {tuple(alphas.shape)}.")
    if tuple(r.shape) != (S, A):
        raise ValueError(f"'r' must have shape ({S}, {A}); got {tuple(r.shape)}.")
    return discount, B, alphas, T, Z, r


def _pbvi_backup(nx, B, alphas, T, Z, r, discount):
    """:func:`pbvi_backup_torch` on backend ``nx``, returning ``nx`` arrays."""
    discount, Bt, At, Tt, Zt, rt = _checked(nx, T, Z, r, discount, B, alphas)
    return _backup(nx, Bt, At, Tt, Zt, rt, discount)


def pbvi_backup_torch(B, alphas, T, Z, r, discount, device=None, return_tensors=False):
    r"""Point-based Bellman backup of ``alphas`` at every belief of ``B`` (torch, batched).

    For each belief ``b`` and action ``a``:
    ``alpha_a^b = r[:, a] + discount * sum_o G[a, o, i*(a, o)]`` with ``i*`` the argmax over ``i`` of
    ``b . G[a, o, i]``; the new vector is the ``alpha_a^b`` with the largest ``b . alpha_a^b``
    (first maximum on exact ties). Same outputs as :func:`algos.pomdp._kernels.pbvi_backup`.

    Parameters
    ----------
    B : array-like of shape (N, S)
        Beliefs.
    alphas : array-like of shape (n_alpha, S)
        Alpha vectors.
    T : array-like of shape (A, S, S)
        Transition probabilities ``T[a, s, s'] = P(s' | s, a)``.
    Z : array-like of shape (A, S, O)
        Observation probabilities ``Z[a, s', o] = P(o | s', a)``.
    r : array-like of shape (S, A)
        Expected immediate rewards.
    discount : float
        Discount factor, in [0, 1].
    device : None, str or torch.device, default=None
        ``None``: CUDA if available, else CPU.
    return_tensors : bool, default=False
        Return torch tensors on ``device`` instead of numpy arrays.

    Returns
    -------
    new : ndarray of shape (N, S)
        The backed-up vectors (float64).
    actions : ndarray of shape (N,)
        Their actions (int64).
    values : ndarray of shape (N,)
        ``b . new`` at each belief (float64).

    Examples
    --------
    >>> import numpy as np
    >>> from algos.pomdp import tiger, blind_policy_values
    >>> m = tiger()
    >>> alphas = blind_policy_values(m).vectors
    >>> new, act, val = pbvi_backup_torch(np.array([[0.5, 0.5]]), alphas, m.T, m.Z, m.r, m.discount, device="cpu")
    >>> int(act[0]), bool(val[0] >= (alphas @ [0.5, 0.5]).max())
    (0, True)
    """
    discount = check_scalar_float(discount, "discount", low=0.0, high=1.0)
    nx = get_backend(backend="torch", device=device)
    new, acts, vals = _pbvi_backup(nx, B, alphas, T, Z, r, discount)
    if return_tensors:
        return new, acts, vals
    return nx.to_numpy(new), nx.to_numpy(acts), nx.to_numpy(vals)


class _Model:
    """``T, Z, r`` and ``discount`` checked and moved once to backend ``nx`` (its device); the base
    of the backup classes below."""

    def __init__(self, T, Z, r, discount, nx):
        self.discount, _, _, self.T, self.Z, self.r = _checked(nx, T, Z, r, discount)
        self.nx = nx
        self.device = nx.device


class PBVITorchBackup(_Model):
    """The model moved once to a torch device; ``__call__(B, alphas)`` is :func:`pbvi_backup_torch`
    returning numpy arrays (used by ``PBVI(backend="torch")`` so T, Z, r are not copied per sweep).

    Parameters
    ----------
    T : array-like of shape (A, S, S)
        Transition probabilities ``T[a, s, s'] = P(s' | s, a)``.
    Z : array-like of shape (A, S, O)
        Observation probabilities ``Z[a, s', o] = P(o | s', a)``.
    r : array-like of shape (S, A)
        Expected immediate rewards.
    discount : float
        Discount factor, in [0, 1].
    device : None, str or torch.device, default=None
        ``None``: CUDA if available, else CPU.
    """

    def __init__(self, T, Z, r, discount, device=None):
        super().__init__(T, Z, r, discount, get_backend(backend="torch", device=device))

    def __call__(self, B, alphas):
        nx = self.nx
        Bt = _as_array(nx, B, "B", (2,))
        At = _as_array(nx, alphas, "alphas", (2,))
        new, acts, vals = _backup(nx, Bt, At, self.T, self.Z, self.r, self.discount)
        return nx.to_numpy(new), nx.to_numpy(acts), nx.to_numpy(vals)


# ============================================================================ PointBasedSolver
def _sawtooth(nx, X, c, Binv, Bmask, Ud):
    """Sawtooth upper bound (Hauskrecht 2000) at the (unnormalised) rows of ``X`` (..., S):
    ``x . c + min(0, min_i Ud[i] min_{s in supp(Bu_i)} x(s) / Bu_i(s))``; points in chunks of at
    most :data:`_MAX_BLOCK` ratio entries. ``Binv`` (n, S): ``1 / Bu`` on ``Bmask``; ``Ud`` (n,)."""
    base = X @ c
    n = Binv.shape[0]
    if not n:
        return base
    S = X.shape[-1]
    Xf = nx.reshape(X, (-1, S))
    step = max(1, _MAX_BLOCK // max(1, Xf.shape[0] * S))
    low = nx.zeros(Xf.shape[0], type_as=Xf)
    for lo in range(0, n, step):
        sl = slice(lo, lo + step)
        ratio = nx.min(nx.where(Bmask[None, sl], Xf[:, None, :] * Binv[None, sl], float("inf")), axis=-1)
        low = nx.minimum(low, nx.min(Ud[None, sl] * ratio, axis=-1))
    return base + nx.reshape(low, base.shape)


def _pbs_upper(nx, X, Q, c, Binv, Bmask, Ud):
    """Upper bound at the (unnormalised) rows of ``X`` (..., S): the smaller of the fast informed
    bound ``max_a Q[a] . x`` (Hauskrecht 2000) and :func:`_sawtooth`."""
    return nx.minimum(_sawtooth(nx, X, c, Binv, Bmask, Ud), nx.max(X @ Q.T, axis=-1))


class _PBSBackup(_Model):
    """The per-belief cores of :class:`PBSTorchBackup` on backend ``nx`` (``T, Z, r`` checked and
    moved once); with the numpy backend, the reference of the numba kernels of
    :mod:`algos.pomdp.solvers._pbs_kernels`. The methods' "tensor" means an array of ``nx`` (an ndarray on
    numpy)."""

    def __init__(self, T, Z, r, discount, nx):
        super().__init__(T, Z, r, discount, nx)
        self.Zt = nx.ascontiguousarray(nx.swapaxes(self.Z, 1, 2))  # (A, O, S)

    def tensor(self, x, name="x"):
        """``x`` as a float64 tensor on the device.

        Parameters
        ----------
        x : array-like or torch.Tensor
            A 1-d or 2-d array.
        name : str, default="x"
            Name used in error messages.

        Returns
        -------
        torch.Tensor
            ``x`` as float64 on the device.
        """
        return _as_array(self.nx, x, name, (1, 2))

    def successors(self, b):
        """``X`` (A, O, S): ``X[a, o] = (b T_a) * Z[a, :, o]`` (so ``P[a, o] = X[a, o].sum()``).

        Parameters
        ----------
        b : torch.Tensor of shape (S,)
            The belief.

        Returns
        -------
        torch.Tensor of shape (A, O, S)
            The unnormalised successors ``X``.
        """
        pred = self.nx.einsum("s,ast->at", b, self.T)
        return pred[:, None, :] * self.Zt

    def node(self, b, alphas, Q, c, Binv, Bmask, Ud, lower=True):
        """``(P, LV, UV, LI, QU)`` at ``b`` as the numba ``node_values`` (``lower=False``: its
        ``lower_action=-2``; ``LV``, ``LI`` then zero and ``UV`` not clipped by ``LV``): tensors
        (A, O), (A, O), (A, O), (A, O) int64, (A,).

        Parameters
        ----------
        b : torch.Tensor of shape (S,)
            The belief (float64, on the device; see :meth:`tensor`).
        alphas : torch.Tensor of shape (n_alpha, S)
            Lower-bound alpha vectors.
        Q : torch.Tensor of shape (A, S)
            Fast-informed-bound vectors.
        c : torch.Tensor of shape (S,)
            Upper-bound values at the corners of the simplex.
        Binv : torch.Tensor of shape (n, S)
            ``1 / Bu`` of the sawtooth points ``Bu`` on their support, 0 elsewhere.
        Bmask : torch.Tensor of bool, shape (n, S)
            Support ``Bu > 0`` of the sawtooth points.
        Ud : torch.Tensor of shape (n,)
            Offsets ``min(v - Bu . c, 0)`` of the sawtooth points.
        lower : bool, default=True
            Also compute the lower-bound values ``LV`` and indices ``LI``.

        Returns
        -------
        P, LV, UV : torch.Tensor of shape (A, O)
            Observation probabilities, lower and upper values of the successors.
        LI : torch.Tensor of shape (A, O), int64
            Index of the maximising alpha vector at each successor.
        QU : torch.Tensor of shape (A,)
            Upper Q-values.
        """
        nx = self.nx
        X = self.successors(b)
        P = nx.sum(X, axis=-1)
        pos = P > 0.0
        UV = _pbs_upper(nx, X, Q, c, Binv, Bmask, Ud)
        if lower:
            scores = X @ alphas.T
            LV, LI = nx.max(scores, axis=-1), nx.argmax(scores, axis=-1)
            UV = nx.maximum(UV, LV)
            LV = nx.where(pos, LV, 0.0)
            LI = nx.where(pos, LI, 0)
        else:
            LV = nx.zeros(P.shape, type_as=P)
            LI = nx.zeros(P.shape, dtype=nx.int64, type_as=P)
        UV = nx.where(pos, UV, 0.0)
        QU = b @ self.r + self.discount * nx.sum(UV, axis=1)
        return P, LV, UV, LI, QU

    def lower_upper(self, b, alphas, Q, c, Binv, Bmask, Ud):
        """``(L(b), U(b))`` as floats (``U`` is not clipped by ``L``).

        Parameters
        ----------
        b, alphas, Q, c, Binv, Bmask, Ud
            The belief and the bounds, as in :meth:`node`.

        Returns
        -------
        L, U : float
            Lower and upper bound at ``b``.
        """
        lo = self.nx.max(alphas @ b)
        up = _pbs_upper(self.nx, b[None], Q, c, Binv, Bmask, Ud)[0]
        return float(lo), float(up)

    def backup(self, b, alphas, Q, c, Binv, Bmask, Ud):
        """The point-based backup of both bounds at ``b`` (the numba ``update`` without the
        appends): ``(vector (S,), action, b . vector, H U(b), QU (A,))`` with ``H U(b) = max_a QU[a]``
        raised to ``b . vector`` where round-off puts it below.

        Parameters
        ----------
        b, alphas, Q, c, Binv, Bmask, Ud
            As in :meth:`node`.

        Returns
        -------
        vector : torch.Tensor of shape (S,)
            The backed-up alpha vector.
        action : int
            Its action.
        value : float
            ``b . vector``.
        hu : float
            ``H U(b)``.
        QU : torch.Tensor of shape (A,)
            Upper Q-values.
        """
        nx = self.nx
        P, LV, UV, LI, QU = self.node(b, alphas, Q, c, Binv, Bmask, Ud, lower=True)
        # W[a, s'] = sum_o Z[a, s', o] alpha_{LI[a, o]}(s'); cand[a] = r[:, a] + discount T[a] W[a]
        W = nx.sum(self.Zt * alphas[LI], axis=1)
        cand = self.r.T + self.discount * nx.einsum("ast,at->as", self.T, W)
        v = cand @ b
        a = int(nx.argmax(v))
        best_v = float(v[a])
        hu = max(float(QU.max()), best_v)
        return cand[a], a, best_v, hu, QU


class PBSTorchBackup(_PBSBackup):
    r"""The per-belief work of :class:`algos.pomdp.PointBasedSolver` as batched torch algebra.

    The numba kernels (:mod:`algos.pomdp.solvers._pbs_kernels`) loop over the actions and observations of a
    belief one successor at a time; here every ``(a, o)`` successor of ``b`` is formed at once
    (``X = (b T_a) * Z[a, :, o]``, shape (A, O, S), unnormalised, mass ``P(o | b, a)``) and scored
    against all alpha vectors in one matmul (``X @ alphas.T``, (A, O, n_alpha)) and against all
    sawtooth points in one masked minimum (``(A, O, n_points)``), so that a GPU runs a backup as a
    handful of kernels. Same semantics as ``node_values`` / ``update`` there (first maximum on
    ties); values agree to round-off (the summation order differs).

    Parameters
    ----------
    T : array-like of shape (A, S, S)
        Transition probabilities ``T[a, s, s'] = P(s' | s, a)``.
    Z : array-like of shape (A, S, O)
        Observation probabilities ``Z[a, s', o] = P(o | s', a)``.
    r : array-like of shape (S, A)
        Expected immediate rewards.
    discount : float
        Discount factor, in [0, 1].
    device : None, str or torch.device, default=None
        ``None``: CUDA if available, else CPU.
    """

    def __init__(self, T, Z, r, discount, device=None):
        super().__init__(T, Z, r, discount, get_backend(backend="torch", device=device))


def pbs_backup_torch(b, alphas, T, Z, r, discount, Q, c, points=None, device=None):
    r"""One PointBasedSolver backup at belief ``b`` on torch (see :class:`PBSTorchBackup`).

    Parameters
    ----------
    b : array-like of shape (S,)
        The belief.
    alphas : array-like of shape (n_alpha, S)
        Lower-bound vectors.
    T : array-like of shape (A, S, S)
        Transition probabilities ``T[a, s, s'] = P(s' | s, a)``.
    Z : array-like of shape (A, S, O)
        Observation probabilities ``Z[a, s', o] = P(o | s', a)``.
    r : array-like of shape (S, A)
        Expected immediate rewards.
    discount : float
        Discount factor, in [0, 1].
    Q : array-like of shape (A, S)
        Fast-informed-bound vectors.
    c : array-like of shape (S,)
        Upper-bound values at the corners of the simplex.
    points : None or tuple, default=None
        ``(Bu, Ud)``: sawtooth points ``Bu`` of shape (n, S) (rows on the simplex) and their offsets
        ``Ud = min(v - Bu . c, 0)`` of shape (n,).
    device : None, str or torch.device, default=None
        ``None``: CUDA if available, else CPU.

    Returns
    -------
    vector : ndarray of shape (S,)
        The backed-up alpha vector (float64).
    action : int
        Its action.
    value : float
        ``b . vector``.
    hu : float
        ``max_a`` of the upper Q-values, at least ``value``.
    node : dict of str to ndarray
        ``P``, ``LV``, ``UV``, ``LI``, ``QU`` at ``b``.
    """
    return _pbs_backup(get_backend(backend="torch", device=device), b, alphas, T, Z, r, discount, Q, c, points)


def _pbs_backup(nx, b, alphas, T, Z, r, discount, Q, c, points=None):
    """:func:`pbs_backup_torch` on backend ``nx`` (numpy arrays out)."""
    bk = _PBSBackup(T, Z, r, discount, nx)
    S = bk.T.shape[1]
    bt = _as_array(nx, b, "b", (1,))
    At = _as_array(nx, alphas, "alphas", (2,))
    if At.shape[1] != S or At.shape[0] == 0 or bt.shape[0] != S:
        raise ValueError(f"'alphas' must have shape (n_alpha, {S}) with n_alpha >= 1 and 'b' shape ({S},); got "
                         f"{tuple(At.shape)} and {tuple(bt.shape)}.")
    Qt = _as_array(nx, Q, "Q", (2,))
    ct = _as_array(nx, c, "c", (1,))
    Binv, Bmask, Ud = _dense_points(nx, points, S)
    vec, a, val, hu, _ = bk.backup(bt, At, Qt, ct, Binv, Bmask, Ud)
    P, LV, UV, LI, QU = bk.node(bt, At, Qt, ct, Binv, Bmask, Ud, lower=True)
    node = {k: nx.to_numpy(t) for k, t in zip(("P", "LV", "UV", "LI", "QU"), (P, LV, UV, LI, QU))}
    return nx.to_numpy(vec), a, val, hu, node


def _dense_points(nx, points, S):
    """``(Binv, Bmask, Ud)`` arrays of sawtooth points ``(Bu, Ud)`` on backend ``nx`` (``None``: no
    points)."""
    if points is None:
        z = nx.zeros((0, S))
        return z, z > 0, nx.zeros(0)
    Bu = _as_array(nx, points[0], "points[0]", (2,))
    Ud = _as_array(nx, points[1], "points[1]", (1,))
    if Bu.shape[1] != S or Ud.shape[0] != Bu.shape[0]:
        raise ValueError(f"'points' must be (Bu (n, {S}), Ud (n,)); got shapes {tuple(Bu.shape)} and "
                         f"{tuple(Ud.shape)}.")
    mask = Bu > 0
    return nx.where(mask, 1.0 / nx.where(mask, Bu, 1.0), 0.0), mask, Ud
