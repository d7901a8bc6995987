r"""Fixed-threshold Huber regression by passes over chunks of rows: O(d^2) memory beyond one chunk.

Every quantity the IRLS / semismooth-Newton iteration of :class:`HuberSoSRegressor` needs is a sum
over rows, so it accumulates chunk by chunk: the objective :math:`L(b)`, the gradient
:math:`-X^\top \psi_\delta(r)`, the majoriser's Gram matrix :math:`X^\top W X` and the inliers'
Gram matrix :math:`X_I^\top X_I`. One iteration reads the data two or three times (accumulate at
``b``; evaluate the objective at the Newton and, if refused, the MM trial point).
"""

from __future__ import annotations

import math

import numpy as np

from ._kernels import huber_pass

__all__ = ["huber_fit_chunks"]

ARMIJO_C = 1e-4
MONOTONE_RTOL = 1e-11
MAX_BACKTRACKS = 40
RIDGE = 1e-12


def _iter_chunks(make_chunks, d_expected=None):
    """Validate and yield ``(X, y)`` float64 blocks from a fresh iterable ``make_chunks()``."""
    it = make_chunks()
    for k, chunk in enumerate(it):
        try:
            Xc, yc = chunk
        except (TypeError, ValueError):
            raise TypeError(f"'chunks' must yield (X, y) pairs; chunk {k} is {type(chunk).__name__}.") from None
        Xc = np.ascontiguousarray(Xc, dtype=np.float64)
        yc = np.ascontiguousarray(yc, dtype=np.float64)
        if Xc.ndim != 2 or yc.shape != (Xc.shape[0],):
            raise ValueError(f"'chunks': chunk {k} must be X of shape (rows, d) and y of shape (rows,); got "
                             f"{Xc.shape} and {yc.shape}.")
        if d_expected is not None and Xc.shape[1] != d_expected:
            raise ValueError(f"'chunks': chunk {k} has {Xc.shape[1]} columns, the first had {d_expected}.")
        if not (np.all(np.isfinite(Xc)) and np.all(np.isfinite(yc))):
            raise ValueError(f"'chunks': chunk {k} holds NaN or inf.")
        yield Xc, yc


def _with_one(Xc, fit_intercept):
    return np.hstack([Xc, np.ones((Xc.shape[0], 1))]) if fit_intercept else Xc


def _accumulate(make_chunks, d, fit_intercept, b, delta, grams=True):
    """One pass at ``b``: ``(L, g, n_inliers, G_w, H_in, B)`` (the Gram matrices only with ``grams``)."""
    p = b.shape[0]
    L, g, nin = 0.0, np.zeros(p), 0
    Gw, Hin, B = (np.zeros((p, p)), np.zeros((p, p)), np.zeros((p, p))) if grams else (None, None, None)
    empty = np.empty(0)
    for Xc, yc in _iter_chunks(make_chunks, d):
        Xa = _with_one(Xc, fit_intercept)
        m = Xa.shape[0]
        r, w, gc = np.empty(m), np.empty(m), np.empty(p)
        Lc, nc = huber_pass(Xa, yc, b, delta, empty, r, w, gc)
        L += Lc
        g += gc
        nin += int(nc)
        if grams:
            Gw += (Xa * w[:, None]).T @ Xa
            inl = np.abs(r) <= delta
            XI = Xa[inl]
            Hin += XI.T @ XI
            B += (Xa * np.minimum(r * r, delta * delta)[:, None]).T @ Xa
    return L, g, nin, Gw, Hin, B


def _solve(G, rhs):
    tr = float(np.trace(G))
    G = G + np.eye(G.shape[0]) * (RIDGE * tr / G.shape[0] if tr > 0 else 1e-300)
    try:
        return np.linalg.solve(G, rhs)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(G, rhs, rcond=None)[0]


def huber_fit_chunks(make_chunks, delta, fit_intercept, tol, max_iter):
    r"""Minimise :math:`\sum_i H_\delta(y_i - x_i^\top b)` by passes over ``make_chunks()``.

    Returns a dict: ``coef`` (with the intercept last), ``n``, ``n_iter``, ``converged``,
    ``grad_rel`` (the relative gradient :math:`\|\nabla L\| / (\delta \|X\|_F)`), ``n_inliers``,
    ``objective``, ``A`` and ``B`` (the sandwich's matrices at the solution) and ``G0``.
    """
    # pass 0: Gram matrix, X^T y, column ranges (for the rank / constant-column checks)
    G0 = Xty = None
    n = 0
    d = None
    lo = hi = None
    for Xc, yc in _iter_chunks(make_chunks):
        if d is None:
            d = Xc.shape[1]
        elif Xc.shape[1] != d:
            raise ValueError(f"'chunks': a chunk has {Xc.shape[1]} columns, the first had {d}.")
        Xa = _with_one(Xc, fit_intercept)
        if G0 is None:
            G0, Xty = np.zeros((Xa.shape[1],) * 2), np.zeros(Xa.shape[1])
            lo, hi = np.full(d, np.inf), np.full(d, -np.inf)
        G0 += Xa.T @ Xa
        Xty += Xa.T @ yc
        n += Xa.shape[0]
        if Xc.shape[0]:
            lo = np.minimum(lo, Xc.min(axis=0))
            hi = np.maximum(hi, Xc.max(axis=0))
    if d is None or n == 0:
        raise ValueError("'chunks' yielded no rows.")
    p = G0.shape[0]
    if n <= p:
        raise ValueError(f"HuberSoSRegressor needs n_samples > n_features{' + 1' if fit_intercept else ''}; got "
                         f"n_samples = {n} and n_features = {d}.")
    from ._huber import _check_full_rank

    proxy = np.vstack([lo, hi])  # the same column ranges as the data: the constant-column check
    _check_full_rank(_with_one(proxy, fit_intercept), np.triu(G0), None, fit_intercept)
    gscale = delta * math.sqrt(float(np.trace(G0)))
    b = _solve(G0, Xty)

    L, g, nin, Gw, Hin, B = _accumulate(make_chunks, d, fit_intercept, b, delta)
    n_iter, converged = 0, False
    while True:
        grad_rel = float(np.linalg.norm(g)) / gscale
        if grad_rel < tol and n_iter >= 1:
            converged = True
            break
        if n_iter >= max_iter:
            break
        n_iter += 1
        accepted = False
        if nin >= 2 * p:  # semismooth Newton step over the inliers, Armijo test
            step = _solve(Hin, -g)
            slope = float(g @ step)
            if np.all(np.isfinite(step)) and slope < 0:
                t = 1.0
                for _ in range(3):
                    L_new = _accumulate(make_chunks, d, fit_intercept, b + t * step, delta, grams=False)[0]
                    if L_new <= L + ARMIJO_C * t * slope:
                        b = b + t * step
                        accepted = True
                        break
                    t *= 0.5
        if not accepted:  # majorise-minimise step (monotone), halved if round-off raises L
            step = _solve(Gw, -g)
            t = 1.0
            for _ in range(MAX_BACKTRACKS):
                L_new = _accumulate(make_chunks, d, fit_intercept, b + t * step, delta, grams=False)[0]
                if L_new <= L + MONOTONE_RTOL * abs(L):
                    b = b + t * step
                    accepted = True
                    break
                t *= 0.5
            if not accepted:  # stalled at working precision
                n_iter -= 1
                break
        L, g, nin, Gw, Hin, B = _accumulate(make_chunks, d, fit_intercept, b, delta)
    return {"coef": b, "n": n, "n_iter": n_iter, "converged": converged, "grad_rel": grad_rel, "n_inliers": nin,
            "objective": L, "A": Hin, "B": B, "d": d}
