r"""numba kernels of the POMDP belief machinery: the batched Bayes update and the PBVI point backup.

Conventions (the pomdp reconstruction notes §1.1): ``T[a, s, s'] = P(s'|s, a)``, ``Z[a, s', o] = P(o|s', a)``,
``r[s, a]`` expected immediate reward. Kernels take plain float64 arrays; their readable
references are the backend-neutral cores of :mod:`accel.pomdp` run on numpy (``_successors``,
``_backup``, ``_sawtooth``) and :func:`._reference.fib_backup`; tests pin the two together.
No random draws here.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def belief_successors(B, T_a, Z_a):
    """Bayes update of every belief in ``B`` (N, S) under one action, for every observation.

    Returns ``P`` (N, O) with ``P[n, o] = P(o | B[n], a)``, ``Bn`` (N, O, S) with the posteriors
    ``tau(B[n], a, o)``, and ``zero`` (N, O) bool flagging ``P[n, o] == 0``. For a flagged pair the
    posterior is undefined; ``Bn[n, o]`` then holds the prior-predicted belief ``B[n] @ T_a``.
    """
    N, S = B.shape
    O = Z_a.shape[1]
    P = np.zeros((N, O))
    Bn = np.zeros((N, O, S))
    zero = np.zeros((N, O), dtype=np.bool_)
    pred = np.zeros(S)
    for n in range(N):
        for t in range(S):
            acc = 0.0
            for s in range(S):
                acc += B[n, s] * T_a[s, t]
            pred[t] = acc
        tot = 0.0
        for t in range(S):
            tot += pred[t]
        for o in range(O):
            p = 0.0
            for t in range(S):
                p += pred[t] * Z_a[t, o]
            P[n, o] = p
            if p > 0.0:
                for t in range(S):
                    Bn[n, o, t] = pred[t] * Z_a[t, o] / p
            else:
                zero[n, o] = True
                for t in range(S):
                    Bn[n, o, t] = pred[t] / tot if tot > 0.0 else pred[t]
    return P, Bn, zero


@numba.njit(cache=True)
def posteriors_from_predicted(Pred, Z_a):
    """The observation step of :func:`belief_successors` from the predicted beliefs ``Pred`` (N, S)
    (``Pred[n] = B[n] @ T_a``, computed by the caller, e.g. as a sparse product): the same ``P``,
    ``Bn`` and ``zero``, with the same operations in the same order."""
    N, S = Pred.shape
    O = Z_a.shape[1]
    P = np.zeros((N, O))
    Bn = np.zeros((N, O, S))
    zero = np.zeros((N, O), dtype=np.bool_)
    for n in range(N):
        tot = 0.0
        for t in range(S):
            tot += Pred[n, t]
        for o in range(O):
            p = 0.0
            for t in range(S):
                p += Pred[n, t] * Z_a[t, o]
            P[n, o] = p
            if p > 0.0:
                for t in range(S):
                    Bn[n, o, t] = Pred[n, t] * Z_a[t, o] / p
            else:
                zero[n, o] = True
                for t in range(S):
                    Bn[n, o, t] = Pred[n, t] / tot if tot > 0.0 else Pred[n, t]
    return P, Bn, zero


@numba.njit(cache=True)
def project_alphas(alphas, T, Z):
    """``G[a, o, i, s] = sum_{s'} T[a, s, s'] Z[a, s', o] alphas[i, s']`` (the back-projections)."""
    A, S, _ = T.shape
    O = Z.shape[2]
    n_alpha = alphas.shape[0]
    G = np.zeros((A, O, n_alpha, S))
    w = np.zeros(S)
    for a in range(A):
        for o in range(O):
            for i in range(n_alpha):
                for t in range(S):
                    w[t] = Z[a, t, o] * alphas[i, t]
                for s in range(S):
                    acc = 0.0
                    for t in range(S):
                        acc += T[a, s, t] * w[t]
                    G[a, o, i, s] = acc
    return G


@numba.njit(cache=True)
def pbvi_backup(B, alphas, T, Z, r, discount):
    """Point-based Bellman backup of the alpha set ``alphas`` (n_alpha, S) at every belief of ``B``.

    For each belief b and action a: ``alpha_a^b = r[:, a] + discount * sum_o G[a, o, i*(a, o)]`` with
    ``i*`` the argmax over ``i`` of ``b . G[a, o, i]``; the new vector is the ``alpha_a^b`` with the
    largest ``b . alpha_a^b``. Ties go to the lowest index (alpha, then action). Returns the new
    vectors (N, S), their action labels (N,) and their values ``b . alpha`` (N,).
    """
    N, S = B.shape
    A = T.shape[0]
    O = Z.shape[2]
    n_alpha = alphas.shape[0]
    G = project_alphas(alphas, T, Z)
    new = np.zeros((N, S))
    acts = np.zeros(N, dtype=np.int64)
    vals = np.zeros(N)
    cand = np.zeros(S)
    for n in range(N):
        best_val = -np.inf
        best_a = 0
        for a in range(A):
            for s in range(S):
                cand[s] = r[s, a]
            for o in range(O):
                bi = 0
                bv = -np.inf
                for i in range(n_alpha):
                    v = 0.0
                    for s in range(S):
                        v += B[n, s] * G[a, o, i, s]
                    if v > bv:
                        bv = v
                        bi = i
                for s in range(S):
                    cand[s] += discount * G[a, o, bi, s]
            v = 0.0
            for s in range(S):
                v += B[n, s] * cand[s]
            if v > best_val:
                best_val = v
                best_a = a
                for s in range(S):
                    new[n, s] = cand[s]
        acts[n] = best_a
        vals[n] = best_val
    return new, acts, vals


@numba.njit(cache=True)
def fib_backup(Q, T, Z, r, discount):
    """One fast-informed-bound backup (Hauskrecht 2000) of the Q-vectors ``Q`` (A, S):

    ``Q'[a, s] = r[s, a] + discount * sum_o max_{a'} sum_{s'} T[a, s, s'] Z[a, s', o] Q[a', s']``.
    """
    A, S, _ = T.shape
    O = Z.shape[2]
    out = np.zeros((A, S))
    for a in range(A):
        for s in range(S):
            tot = 0.0
            for o in range(O):
                best = -np.inf
                for b in range(A):
                    acc = 0.0
                    for t in range(S):
                        acc += T[a, s, t] * Z[a, t, o] * Q[b, t]
                    if acc > best:
                        best = acc
                tot += best
            out[a, s] = r[s, a] + discount * tot
    return out


@numba.njit(cache=True)
def sawtooth(X, Bu, vu, c):
    """Sawtooth interpolation (Hauskrecht 2000) at every row of ``X`` (N, S) of the upper-bound
    points ``(Bu[i], vu[i])`` over the corner values ``c``:
    ``U(x) = x.c + min(0, min_i d_i min_{s: Bu_i(s) > 0} x(s) / Bu_i(s))``, ``d_i = min(vu_i - Bu_i.c, 0)``.
    Points with ``d_i = 0`` cannot lower the bound and are skipped; each ratio runs over the
    support of ``Bu_i`` only. Memory O(N + n), unlike the broadcast twin."""
    N, S = X.shape
    n = Bu.shape[0]
    out = np.empty(N)
    d = np.empty(n)
    live = 0
    idx = np.empty(n, dtype=np.int64)
    for i in range(n):
        acc = 0.0
        for s in range(S):
            acc += Bu[i, s] * c[s]
        d[i] = min(vu[i] - acc, 0.0)
        if d[i] < 0.0:
            idx[live] = i
            live += 1
    # supports of the live points (CSR)
    nnz = 0
    for j in range(live):
        for s in range(S):
            if Bu[idx[j], s] > 0.0:
                nnz += 1
    ptr = np.zeros(live + 1, dtype=np.int64)
    col = np.empty(nnz, dtype=np.int64)
    inv = np.empty(nnz)
    k = 0
    for j in range(live):
        i = idx[j]
        for s in range(S):
            if Bu[i, s] > 0.0:
                col[k] = s
                inv[k] = 1.0 / Bu[i, s]
                k += 1
        ptr[j + 1] = k
    for m in range(N):
        base = 0.0
        for s in range(S):
            base += X[m, s] * c[s]
        low = 0.0
        for j in range(live):
            ratio = np.inf
            for k in range(ptr[j], ptr[j + 1]):
                v = X[m, col[k]] * inv[k]
                if v < ratio:
                    ratio = v
                    if ratio <= 0.0:
                        break
            v = d[idx[j]] * ratio
            if v < low:
                low = v
        out[m] = base + low
    return out
