"""Plain-numpy twins of :mod:`._kernels` (readable definitions; tests pin the kernels to them)."""

from __future__ import annotations

import numpy as np


def belief_successors(B, T_a, Z_a):
    """Twin of :func:`._kernels.belief_successors`: ``(P (N,O), Bn (N,O,S), zero (N,O))``."""
    B = np.asarray(B, dtype=float)
    pred = B @ T_a                                   # (N, S): prior-predicted beliefs
    joint = pred[:, None, :] * Z_a.T[None, :, :]     # (N, O, S): P(s', o | b, a)
    P = joint.sum(axis=2)
    zero = ~(P > 0.0)
    safe = np.where(zero, 1.0, P)
    Bn = joint / safe[:, :, None]
    tot = pred.sum(axis=1, keepdims=True)
    fallback = pred / np.where(tot > 0, tot, 1.0)
    Bn = np.where(zero[:, :, None], fallback[:, None, :], Bn)
    return P, Bn, zero


def project_alphas(alphas, T, Z):
    """``G[a, o, i, s] = sum_{s'} T[a, s, s'] Z[a, s', o] alphas[i, s']``."""
    return np.einsum("ast,ato,it->aois", T, Z, alphas)


def pbvi_backup(B, alphas, T, Z, r, discount):
    """Twin of :func:`._kernels.pbvi_backup`: ``(new (N,S), actions (N,), values (N,))``."""
    B = np.asarray(B, dtype=float)
    G = project_alphas(alphas, T, Z)                 # (A, O, n, S)
    scores = np.einsum("ns,aois->naoi", B, G)        # (N, A, O, n)
    best_i = scores.argmax(axis=3)                   # first max = lowest index
    A, O = G.shape[0], G.shape[1]
    chosen = G[np.arange(A)[None, :, None], np.arange(O)[None, None, :], best_i]  # (N, A, O, S)
    cand = r.T[None, :, :] + discount * chosen.sum(axis=2)                        # (N, A, S)
    vals = np.einsum("ns,nas->na", B, cand)
    acts = vals.argmax(axis=1)
    new = cand[np.arange(B.shape[0]), acts]
    return new, acts.astype(np.int64), vals[np.arange(B.shape[0]), acts]


def fib_backup(Q, T, Z, r, discount):
    """Twin of :func:`._kernels.fib_backup`."""
    # H[a, s, o, b] = sum_t T[a,s,t] Z[a,t,o] Q[b,t]
    H = np.einsum("ast,ato,bt->asob", T, Z, Q)
    return r.T + discount * H.max(axis=3).sum(axis=2)


def sawtooth(X, Bu, vu, c):
    """Twin of :func:`._kernels.sawtooth` (broadcast over all (row, point, state) triples)."""
    base = X @ c
    if len(Bu) == 0:
        return base
    d = np.minimum(vu - Bu @ c, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(Bu[None, :, :] > 0, X[:, None, :] / np.where(Bu > 0, Bu, 1.0)[None], np.inf)
    ratio = ratio.min(axis=2)
    return base + np.minimum(0.0, (d[None, :] * ratio).min(axis=1))
