"""Plain-numpy twin of the numba kernel :func:`._kernels.fib_backup` (a readable definition; tests
pin the kernel to it). The other kernels of :mod:`._kernels` and :mod:`.solvers._pbs_kernels` are pinned to
the backend-neutral cores of :mod:`accel.pomdp` run on numpy."""

from __future__ import annotations

import numpy as np


def fib_backup(Q, T, Z, r, discount):
    """Twin of :func:`._kernels.fib_backup`: the fast informed bound backup (Hauskrecht 2000)."""
    # H[a, s, o, b] = sum_t T[a,s,t] Z[a,t,o] Q[b,t]
    H = np.einsum("ast,ato,bt->asob", T, Z, Q)
    return r.T + discount * H.max(axis=3).sum(axis=2)
