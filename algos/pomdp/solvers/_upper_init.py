r"""Start of the upper bound on large models: the fully observable MDP's values by Gauss-Seidel sweeps and a
certificate, and the fast-informed-bound sweep with its single-successor shortcut.

* :func:`mdp_upper_gs` -- value iteration of the MDP in place (Gauss-Seidel: each state's update reads the
  values already updated in the same sweep), alternating the state order forward and backward, from the
  per-state maximum of a lower bound (e.g. the blind-policy values). Whatever ``V`` it ends with (converged,
  interrupted at a deadline, from any start), ``V + delta / (1 - discount)`` with
  ``delta = max(0, max_s (H V - V)(s))`` is above ``V_MDP`` (``H`` the MDP Bellman operator, monotone, and
  ``H(V + k) = H V + discount k <= V + k`` for ``k = delta / (1 - discount)``; Puterman 1994, §6.3), so the
  returned Q-vectors are valid upper bounds at every stop. Gauss-Seidel sweeps converge in far fewer sweeps
  than synchronous ones when the state order follows the model's paths (Puterman 1994, §6.3.3; Bertsekas &
  Tsitsiklis 1989, §2.6); starting below ``V_MDP`` avoids the ``discount^k max r / (1 - discount)`` tail of
  a start from the top.
* :func:`fib_backup_sparse_fast` -- the fast-informed-bound backup (Hauskrecht 2000) with a shortcut for a
  transition row with one successor ``t``: there ``sum_o max_a' T Z[a, t, o] Q[a', t] =
  T sum_o Z[a, t, o] max_a' Q[a', t]``, the MDP term, in ``O(A)`` instead of ``O(O A)`` (a model with
  deterministic transitions, e.g. RockSample, has ``Q_FIB = Q_MDP``).
"""

from __future__ import annotations

import numba
import numpy as np

from ._pbs_kernels import column_max, fib_row

GS_TOL = 1e-12  # Gauss-Seidel stops when a sweep moves no value by more than this times max(1, max |V|)
GS_MAX_SWEEPS = 10_000


@numba.njit(cache=True)
def _q_value(V, Tptr, Tidx, Tval, r, discount, a, s):
    """``r[s, a] + discount T[a, s] . V``."""
    tot = 0.0
    for k in range(Tptr[a, s], Tptr[a, s + 1]):
        tot += Tval[k] * V[Tidx[k]]
    return r[s, a] + discount * tot


@numba.njit(cache=True)
def _backup(V, Tptr, Tidx, Tval, r, discount, s):
    """``(H V)(s) = max_a r[s, a] + discount T[a, s] . V``."""
    best = -np.inf
    for a in range(Tptr.shape[0]):
        v = _q_value(V, Tptr, Tidx, Tval, r, discount, a, s)
        if v > best:
            best = v
    return best


@numba.njit(cache=True)
def gs_sweep(V, Tptr, Tidx, Tval, r, discount, backward):
    """One in-place Gauss-Seidel sweep of the MDP backup ``V(s) <- max_a r[s, a] + discount T[a, s] . V``;
    returns the largest change."""
    S = r.shape[0]
    delta = 0.0
    for i in range(S):
        s = S - 1 - i if backward else i
        best = _backup(V, Tptr, Tidx, Tval, r, discount, s)
        d = abs(best - V[s])
        if d > delta:
            delta = d
        V[s] = best
    return delta


@numba.njit(cache=True)
def mdp_q(V, Tptr, Tidx, Tval, r, discount):
    """``Q[a, s] = r[s, a] + discount T[a, s] . V`` (A, S)."""
    A, S = Tptr.shape[0], r.shape[0]
    Q = np.empty((A, S))
    for a in range(A):
        for s in range(S):
            Q[a, s] = _q_value(V, Tptr, Tidx, Tval, r, discount, a, s)
    return Q


@numba.njit(cache=True)
def bellman_excess(V, Tptr, Tidx, Tval, r, discount):
    """``max_s (H V - V)(s)`` (``H`` the MDP Bellman operator), without forming the Q-values."""
    worst = -np.inf
    for s in range(r.shape[0]):
        d = _backup(V, Tptr, Tidx, Tval, r, discount, s) - V[s]
        if d > worst:
            worst = d
    return worst


def mdp_upper_gs(Tptr, Tidx, Tval, r, discount, V0=None, tol=GS_TOL, max_sweeps=GS_MAX_SWEEPS, deadline=None,
                 now=None):
    """Q-vectors (A, S) above the fully observable MDP's ``Q_MDP``, by Gauss-Seidel sweeps and a certificate.

    Parameters
    ----------
    Tptr, Tidx, Tval : ndarray
        The transitions in the per-action CSR layout of :mod:`._pbs_kernels`.
    r : ndarray of shape (S, A)
        Rewards.
    discount : float
        Discount factor, below 1.
    V0 : ndarray of shape (S,), optional
        Start of the sweeps (any values; a lower bound of ``V_MDP`` such as the best blind-policy value per
        state converges fastest). Default: the per-state maximum immediate reward over ``1 - discount``.
    tol : float
        The sweeps stop when one moves no value by more than ``tol * max(1, max |V|)`` (relative, so that
        round-off cannot keep large values from stopping).
    max_sweeps : int
        At most this many sweeps.
    deadline, now : float and callable, optional
        Stop the sweeps once ``now() >= deadline`` (after at least one sweep).

    Returns
    -------
    Q : ndarray of shape (A, S)
        ``Q >= Q_MDP`` elementwise, whatever the stop (see the module notes), and at most ``max r / (1 -
        discount)``.
    n_sweeps : int
        Sweeps run.
    """
    S = r.shape[0]
    top = float(r.max()) / (1.0 - discount)
    V = np.array(V0, dtype=np.float64, copy=True) if V0 is not None else r.max(axis=1) / (1.0 - discount)
    if V.shape != (S,):
        raise ValueError(f"V0 must have shape ({S},), got {V.shape}")
    n = 0
    for n in range(1, max_sweeps + 1):
        d = gs_sweep(V, Tptr, Tidx, Tval, r, discount, n % 2 == 0)
        if d <= tol * max(1.0, float(np.abs(V).max())) or (deadline is not None and now() >= deadline):
            break
    delta = max(0.0, float(bellman_excess(V, Tptr, Tidx, Tval, r, discount)))
    Vc = V + delta / (1.0 - discount)
    return np.minimum(mdp_q(Vc, Tptr, Tidx, Tval, r, discount), top), n


@numba.njit(cache=True)
def fib_backup_sparse_fast(Qm, Tptr, Tidx, Tval, Z, r, discount):
    """The fast-informed-bound backup of :func:`._pbs_kernels.fib_backup_sparse` (same values), with the
    single-successor rows done as ``T sum_o Z[a, t, o] max_a' Q[a', t]`` (see the module notes)."""
    A, S = Qm.shape
    O = Z.shape[2]
    V = column_max(Qm)
    out = np.empty((A, S))
    acc = np.empty(A)
    for a in range(A):
        for s in range(S):
            k0, k1 = Tptr[a, s], Tptr[a, s + 1]
            tot = 0.0
            if k1 - k0 == 1:
                t = Tidx[k0]
                zs = 0.0
                for o in range(O):
                    if Z[a, t, o] != 0.0:
                        zs += Tval[k0] * Z[a, t, o] * V[t]
                tot = zs
            else:
                tot = fib_row(Qm, Tptr, Tidx, Tval, Z, a, s, acc)
            out[a, s] = r[s, a] + discount * tot
    return out
