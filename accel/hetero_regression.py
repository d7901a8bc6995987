r"""Batched core of :mod:`algos.hetero_regression`: fixed-threshold Huber IRLS for many replicates at once.

:func:`huber_irls_batched` runs the IRLS of :class:`algos.hetero_regression.HuberSoSRegressor` on
``B`` problems side by side: the residual / weight / gradient pass is a ``(B, n)`` array expression,
the weighted Gram matrices one matrix product (a GEMM of the weights with the rows' outer products
for a shared design, a batched product otherwise), and the steps one batched solve of a ``(B, d, d)``
stack (pseudo-inverse for a singular one). Each replicate stops on its own (same rule as the numpy
estimator: relative gradient norm below ``tol``) and is masked out of later iterations. Everything is
float64, so the result agrees with the numpy estimator to the solver tolerance.

The core (:func:`_irls_batched` and its helpers :func:`_evaluate`, :func:`_gram`, :func:`_ridge_solve`,
:func:`_irls_step`, :func:`_irls_loop`) is written once against the array namespace ``nx`` of
:mod:`accel.backend`: run with the torch backend it is :func:`huber_irls_batched`; run with the numpy
backend (``_irls_batched(get_backend(backend="numpy"), ...)``) it is the plain-numpy reference that the
tests pin the numba pass :func:`algos.hetero_regression._kernels.huber_pass` and the estimator's
``solver="mm"`` to.

Worth it for Monte-Carlo sweeps (Hypothesis examples, benchmark grids), especially on a GPU; for one
fit the numpy/numba path is faster. torch is imported only when the torch backend is created:
importing this module (or :mod:`algos`) does not import it.
"""

from __future__ import annotations

import numpy as np

from theory._checks import check_scalar_float, check_scalar_int

from .backend import _is_tensor, get_backend

__all__ = ["huber_irls_batched"]

# The constants of every Huber IRLS of the package, defined here once (the bottom layer):
# algos.hetero_regression._irls imports them for the in-memory, chunked and Dask loop.
RIDGE = 1e-12
MONOTONE_RTOL = 1e-11
MAX_BACKTRACKS = 40
TINY = 1e-300
# largest n * d^2 (float64 entries) for which the shared-design Gram uses precomputed outer products
_OUTER_MAX = 1 << 26


def huber_irls_batched(X, Y, delta, max_iter=500, tol=1e-10, device=None, *, coef_init=None,
                       sample_weight=None, return_history=False):
    r"""Fixed-threshold Huber regression by IRLS for ``B`` replicates at once (torch, float64).

    Replicate ``k`` minimises :math:`L_k(b) = \sum_i s_{ki} H_\delta(Y_{ki} - x_{ki}^\top b)` with the
    IRLS step :math:`b \leftarrow b + (X^\top W X + \lambda I)^{-1} X^\top(s\odot\psi_\delta(r))`,
    :math:`W = \operatorname{diag}(s_i\min(1,\delta/|r_i|))`, :math:`\lambda = 10^{-12}
    \operatorname{tr}(X^\top W X)/d`; a step that raises :math:`L_k` beyond ``1e-11 |L_k|`` is halved.
    It stops when :math:`\|\nabla L_k\|_2 / (\delta \|\operatorname{diag}(\sqrt{s_k})X_k\|_F) <`
    ``tol`` after at least one iteration, exactly as :class:`algos.hetero_regression.HuberSoSRegressor`
    with ``solver="mm"`` (the same iterates up to round-off; ``solver="irls"`` adds Newton steps and
    reaches the same minimiser in fewer iterations).

    Parameters
    ----------
    X : array-like or tensor, shape (n, d) or (B, n, d)
        One design shared by all replicates, or one per replicate.
    Y : array-like or tensor, shape (B, n) (or (n,) for B = 1)
    delta : float
        Huber threshold, ``> 0``.
    max_iter : int, default=500
    tol : float, default=1e-10
    device : None, str or torch.device, default=None
        ``None``: CUDA if available, else CPU.
    coef_init : array-like, shape (B, d), optional
        Starting points; default: the (sample-weighted) least-squares fit of each replicate.
    sample_weight : array-like, shape (n,) or (B, n), optional
        Non-negative multipliers of the rows' losses.
    return_history : bool, default=False
        Also return the objective after every iteration.

    Returns
    -------
    coef : ndarray, shape (B, d)
    n_iter : ndarray of int64, shape (B,)
        Accepted iterations of each replicate (a replicate that stalls, with no descent left at working
        precision, stops without counting the failed step, and is not marked converged).
    converged : ndarray of bool, shape (B,)
    history : ndarray, shape (B, T + 1)
        Only with ``return_history=True``: ``history[k, t]`` is :math:`L_k` after iteration ``t``
        (``t = 0``: the start), NaN where replicate ``k`` did not move at iteration ``t``.

    Raises
    ------
    ValueError
        On inconsistent shapes, non-finite input or a bad ``delta``/``max_iter``/``tol``.
    ImportError
        If torch is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> from accel.hetero_regression import huber_irls_batched
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((500, 2))
    >>> Y = X @ np.array([1.0, -1.0]) + rng.standard_normal((3, 500))
    >>> coef, n_iter, conv = huber_irls_batched(X, Y, 1.0, device="cpu")
    >>> coef.shape, bool(conv.all())
    ((3, 2), True)
    """
    delta = check_scalar_float(delta, "delta", low=0.0, closed="neither")
    max_iter = check_scalar_int(max_iter, "max_iter", low=0)
    tol = check_scalar_float(tol, "tol", low=0.0)
    nx = get_backend(backend="torch", device=device)
    return _irls_batched(nx, X, Y, delta, max_iter, tol, coef_init=coef_init, sample_weight=sample_weight,
                         return_history=return_history)


# ------------------------------------------------------------------------------------------ input
def _as_float(nx, a, name):
    """``a`` as a float64 array of ``nx`` (on its device); ``ValueError`` when it holds a non-finite value."""
    if not _is_tensor(a):
        a = np.asarray(a, dtype=np.float64)
    t = nx.asarray(a, dtype=nx.float64)
    if not bool(nx.all(nx.isfinite(t))):
        raise ValueError(f"'{name}' must contain only finite values.")
    return t


def _check_data(nx, X, Y, sample_weight):
    """Arrays ``X`` (n, d) or (B, n, d), ``Y`` (B, n) and the weights ``S`` (B, n), shapes checked."""
    Xt = _as_float(nx, X, "X")
    Yt = _as_float(nx, Y, "Y")
    if Yt.ndim == 1:
        Yt = Yt[None, :]
    if Xt.ndim not in (2, 3) or Yt.ndim != 2:
        raise ValueError(
            f"'X' must have shape (n, d) or (B, n, d) and 'Y' shape (B, n); got {tuple(Xt.shape)} and "
            f"{tuple(Yt.shape)}."
        )
    B, n = Yt.shape
    shared = Xt.ndim == 2
    if (shared and Xt.shape[0] != n) or (not shared and tuple(Xt.shape[:2]) != (B, n)):
        raise ValueError(
            f"'X' of shape {tuple(Xt.shape)} does not match 'Y' of shape {tuple(Yt.shape)} "
            "(need X (n, d) or (B, n, d) with Y (B, n))."
        )
    ones = nx.ones((B, n), type_as=Yt)
    if sample_weight is None:
        return Xt, Yt, ones
    S = _as_float(nx, sample_weight, "sample_weight")
    if S.ndim == 1 and S.shape[0] == n:
        S = ones * S[None, :]
    if tuple(S.shape) != (B, n) or bool((S < 0).any()):
        raise ValueError(
            f"'sample_weight' must be non-negative of shape (n,) or (B, n) = ({B}, {n}); got shape "
            f"{tuple(S.shape)}."
        )
    return Xt, Yt, S


def _irls_batched(nx, X, Y, delta, max_iter, tol, coef_init=None, sample_weight=None, return_history=False):
    """:func:`huber_irls_batched` on the backend ``nx`` (parameters already checked); numpy results.

    Run with ``get_backend(backend="numpy")`` it is the plain-numpy reference of the torch core.
    """
    Xt, Yt, S = _check_data(nx, X, Y, sample_weight)
    B, d = Yt.shape[0], Xt.shape[-1]
    outer = _outer_products(nx, Xt)
    gscale = _gradient_scale(nx, Xt, S, delta)
    if coef_init is None:
        b = _ridge_solve(nx, _gram(nx, Xt, S, outer), _rmatvec(Xt, S * Yt))
    else:
        b = _as_float(nx, coef_init, "coef_init")
        if b.ndim == 1:
            b = b[None, :]
        if tuple(b.shape) != (B, d):
            raise ValueError(f"'coef_init' must have shape (B, d) = ({B}, {d}); got {tuple(b.shape)}.")
        b = nx.copy(b)
    b, n_iter, converged, history = _irls_loop(nx, Xt, Yt, S, b, delta, max_iter, tol, gscale, outer)
    out = (nx.to_numpy(b), nx.to_numpy(n_iter), nx.to_numpy(converged))
    if return_history:
        return out + (nx.to_numpy(nx.stack(history, axis=1)),)
    return out


# ------------------------------------------------------------------------------------ linear algebra
def _matvec(Xs, b):
    """Rows ``X_k b_k``: (B', n) from a shared (n, d) or stacked (B', n, d) design."""
    if Xs.ndim == 2:
        return b @ Xs.T
    return (Xs @ b[:, :, None])[:, :, 0]


def _rmatvec(Xs, v):
    """Rows ``X_k^T v_k``: (B', d)."""
    if Xs.ndim == 2:
        return v @ Xs
    return (v[:, None, :] @ Xs)[:, 0, :]


def _outer_products(nx, Xt):
    """The (n, d*d) row outer products of a shared design when they fit in ``_OUTER_MAX``, else None.

    With them, ``X^T diag(w_k) X`` for all ``k`` is one GEMM of the (B', n) weights (memory n d^2,
    instead of a (B', d, n) temporary).
    """
    if Xt.ndim != 2:
        return None
    n, d = Xt.shape
    return nx.reshape(Xt[:, :, None] * Xt[:, None, :], (n, d * d)) if n * d * d <= _OUTER_MAX else None


def _gram(nx, Xs, wt, outer):
    """Weighted Gram matrices ``X_k^T diag(w_k) X_k``: (B', d, d)."""
    d = Xs.shape[-1]
    if Xs.ndim == 2:
        if outer is not None:
            return nx.reshape(wt @ outer, (-1, d, d))
        return (Xs.T[None, :, :] * wt[:, None, :]) @ Xs
    return (nx.swapaxes(Xs, 1, 2) * wt[:, None, :]) @ Xs


def _ridge_solve(nx, G, rhs):
    """Solve ``(G + lambda I) x = rhs`` per replicate, ``lambda = RIDGE tr(G) / d``; pinv where singular."""
    d = G.shape[-1]
    tr = nx.sum(nx.diagonal(G), axis=-1)
    lam = nx.where(tr > 0, RIDGE * tr / d, TINY)
    return nx.solve_pinv(G + lam[:, None, None] * nx.eye(d, type_as=G), rhs)


# ------------------------------------------------------------------------------------------ Huber
def _evaluate(nx, Xs, Ys, Ss, b, delta):
    r"""Objective ``L`` (B',), gradient ``g`` (B', d) and IRLS weights ``w`` (B', n) at ``b``.

    :math:`L_k = \sum_i s_{ki} H_\delta(r_{ki})`, :math:`g_k = -X_k^\top(s_k \odot \psi_\delta(r_k))`,
    :math:`w_{ki} = s_{ki}\min(1, \delta/|r_{ki}|)` with :math:`r_k = Y_k - X_k b_k`.
    """
    r = Ys - _matvec(Xs, b)
    a = nx.abs(r)
    inl = a <= delta
    h = nx.where(inl, 0.5 * r * r, delta * a - 0.5 * delta * delta)
    L = nx.sum(Ss * h, axis=-1)
    g = -_rmatvec(Xs, Ss * nx.clip(r, -delta, delta))
    w = Ss * nx.where(inl, 1.0, delta / nx.clip(a, TINY, None))
    return L, g, w


def _gradient_scale(nx, Xt, S, delta):
    """``delta * ||diag(sqrt s_k) X_k||_F`` per replicate."""
    if Xt.ndim == 2:
        return delta * nx.sqrt(S @ nx.sum(Xt * Xt, axis=-1))
    return delta * nx.sqrt(nx.sum(S * nx.sum(Xt * Xt, axis=-1), axis=-1))


def _backtrack(nx, Xs, Ys, Ss, delta, b_old, step, bound, new, bad):
    """Halve the steps of the replicates ``bad`` (objective above ``bound``) up to ``MAX_BACKTRACKS``
    times; ``new = (b, L, g, w)`` updated where a shorter step was tried, and the still-bad mask.

    Round-off only: IRLS is majorise-minimise, so a full step never raises the objective in exact
    arithmetic.
    """
    b_new, L_new, g_new, w_new = new
    t = nx.ones(L_new.shape, type_as=L_new)
    for _ in range(MAX_BACKTRACKS):
        t = nx.where(bad, 0.5 * t, t)
        b_try = b_old + t[:, None] * step
        L_try, g_try, w_try = _evaluate(nx, Xs, Ys, Ss, b_try, delta)
        b_new = nx.where(bad[:, None], b_try, b_new)
        L_new = nx.where(bad, L_try, L_new)
        g_new = nx.where(bad[:, None], g_try, g_new)
        w_new = nx.where(bad[:, None], w_try, w_new)
        bad = ~(L_new <= bound)
        if not bool(bad.any()):
            break
    return (b_new, L_new, g_new, w_new), bad


def _irls_step(nx, Xs, Ys, Ss, delta, outer, state):
    """One IRLS step from ``state = (b, L, g, w)`` of the selected replicates, with backtracking;
    returns the new state and the mask of replicates without descent."""
    b_old, L_old, g, w = state
    step = _ridge_solve(nx, _gram(nx, Xs, w, outer), -g)
    bound = L_old + MONOTONE_RTOL * nx.abs(L_old)
    b_new = b_old + step
    new = (b_new,) + _evaluate(nx, Xs, Ys, Ss, b_new, delta)
    bad = ~(new[1] <= bound)
    if bool(bad.any()):
        new, bad = _backtrack(nx, Xs, Ys, Ss, delta, b_old, step, bound, new, bad)
    return new, bad


def _irls_loop(nx, Xt, Yt, S, b, delta, max_iter, tol, gscale, outer):
    """IRLS from ``b`` until every replicate converged or stalled, or ``max_iter`` iterations;
    returns ``(b, n_iter, converged, history)`` (arrays of ``nx``; ``history`` a list of (B,) objectives)."""
    B = b.shape[0]
    L, g, w = _evaluate(nx, Xt, Yt, S, b, delta)
    active = nx.ones(B, dtype=nx.bool)
    converged = nx.zeros(B, dtype=nx.bool)
    n_iter = nx.zeros(B, dtype=nx.int64)
    history = [nx.copy(L)]
    it = 0
    while True:
        grad_rel = nx.norm(g, axis=-1) / gscale
        newly = active & (grad_rel < tol) if (it >= 1 or max_iter == 0) else nx.zeros(B, dtype=nx.bool)
        converged |= newly
        active &= ~newly
        if it >= max_iter or not bool(active.any()):
            break
        it += 1
        rows = nx.flatnonzero(active)
        if bool(nx.all(active)):
            Xs, Ys, Ss, state = Xt, Yt, S, (b, L, g, w)
        else:
            Xs = Xt if Xt.ndim == 2 else Xt[rows]
            Ys, Ss, state = Yt[rows], S[rows], (b[rows], L[rows], g[rows], w[rows])
        (b_new, L_new, g_new, w_new), bad = _irls_step(nx, Xs, Ys, Ss, delta, outer, state)
        ok = ~bad  # replicates with no descent left at working precision stall (not converged)
        acc = rows[ok]
        n_iter[acc] += 1
        b[acc], L[acc], g[acc], w[acc] = b_new[ok], L_new[ok], g_new[ok], w_new[ok]
        active[rows[bad]] = False
        h = nx.full(L.shape, float("nan"), type_as=L)
        h[acc] = L[acc]
        history.append(h)
    return b, n_iter, converged, history
