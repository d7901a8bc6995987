r"""torch core of :mod:`algos.hetero_regression`: fixed-threshold Huber IRLS for many replicates at once.

:func:`huber_irls_batched` runs the IRLS of :class:`algos.hetero_regression.HuberSoSRegressor` on
``B`` problems side by side: the residual / weight / gradient pass is a ``(B, n)`` tensor expression,
the weighted Gram matrices a batched matmul, and the steps one :func:`torch.linalg.solve` on a
``(B, d, d)`` stack. Each replicate stops on its own (same rule as the numpy estimator: relative
gradient norm below ``tol``) and is masked out of later iterations. Everything is float64, so the
result agrees with the numpy estimator to the solver tolerance.

Worth it for Monte-Carlo sweeps (Hypothesis examples, benchmark grids), especially on a GPU; for one
fit the numpy/numba path is faster. torch is imported inside the function: importing this module (or
:mod:`algos`) does not import it.
"""

from __future__ import annotations

import math

import numpy as np

from theory._checks import check_scalar_float, check_scalar_int

from .backend import torch_device as _resolve_device

__all__ = ["huber_irls_batched"]

# the same constants as algos.hetero_regression._huber (kept literal here: importing the estimator
# module would compile nothing, but the two files must be readable on their own)
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
    dev = _resolve_device(device)
    import torch

    Xt, Yt, S = _check_data(X, Y, sample_weight, dev)
    B, d = Yt.shape[0], Xt.shape[-1]
    outer = _outer_products(Xt)
    gscale = _gradient_scale(Xt, S, delta)
    if coef_init is None:
        b = _ridge_solve(_gram(Xt, S, outer), _rmatvec(Xt, S * Yt))
    else:
        b = _as_tensor(coef_init, "coef_init", dev)
        if b.ndim == 1:
            b = b[None, :]
        if tuple(b.shape) != (B, d):
            raise ValueError(f"'coef_init' must have shape (B, d) = ({B}, {d}); got {tuple(b.shape)}.")
        b = b.clone()
    b, n_iter, converged, history = _irls_loop(Xt, Yt, S, b, delta, max_iter, tol, gscale, outer)
    out = (b.cpu().numpy(), n_iter.cpu().numpy(), converged.cpu().numpy())
    if return_history:
        return out + (torch.stack(history, dim=1).cpu().numpy(),)
    return out


# ------------------------------------------------------------------------------------------ input
def _as_tensor(a, name, dev):
    """``a`` as a float64 tensor on ``dev``; ``ValueError`` when it holds a non-finite value."""
    import torch

    if not isinstance(a, torch.Tensor):
        a = np.asarray(a, dtype=np.float64)
        if not a.flags.writeable:  # torch.as_tensor warns on read-only arrays
            a = a.copy()
    t = torch.as_tensor(a).to(device=dev, dtype=torch.float64)
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"'{name}' must contain only finite values.")
    return t


def _check_data(X, Y, sample_weight, dev):
    """Tensors ``X`` (n, d) or (B, n, d), ``Y`` (B, n) and the weights ``S`` (B, n), shapes checked."""
    import torch

    Xt = _as_tensor(X, "X", dev)
    Yt = _as_tensor(Y, "Y", dev)
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
    if sample_weight is None:
        return Xt, Yt, torch.ones((B, n), dtype=torch.float64, device=dev)
    S = _as_tensor(sample_weight, "sample_weight", dev)
    if S.ndim == 1:
        S = S[None, :].expand(B, n)
    if tuple(S.shape) != (B, n) or bool((S < 0).any()):
        raise ValueError(
            f"'sample_weight' must be non-negative of shape (n,) or (B, n) = ({B}, {n}); got shape "
            f"{tuple(S.shape)}."
        )
    return Xt, Yt, S.contiguous()


# ------------------------------------------------------------------------------------ linear algebra
def _matvec(Xs, b):
    """Rows ``X_k b_k``: (B', n) from a shared (n, d) or stacked (B', n, d) design."""
    import torch

    if Xs.ndim == 2:
        return b @ Xs.T
    return torch.bmm(Xs, b.unsqueeze(-1)).squeeze(-1)


def _rmatvec(Xs, v):
    """Rows ``X_k^T v_k``: (B', d)."""
    import torch

    if Xs.ndim == 2:
        return v @ Xs
    return torch.bmm(v.unsqueeze(1), Xs).squeeze(1)


def _outer_products(Xt):
    """The (n, d*d) row outer products of a shared design when they fit in ``_OUTER_MAX``, else None.

    With them, ``X^T diag(w_k) X`` for all ``k`` is one GEMM of the (B', n) weights (memory n d^2,
    instead of a (B', d, n) temporary).
    """
    if Xt.ndim != 2:
        return None
    n, d = Xt.shape
    return (Xt.unsqueeze(-1) * Xt.unsqueeze(-2)).reshape(n, d * d) if n * d * d <= _OUTER_MAX else None


def _gram(Xs, wt, outer):
    """Weighted Gram matrices ``X_k^T diag(w_k) X_k``: (B', d, d)."""
    import torch

    d = Xs.shape[-1]
    if Xs.ndim == 2:
        if outer is not None:
            return (wt @ outer).reshape(-1, d, d)
        return torch.matmul(Xs.T.unsqueeze(0) * wt.unsqueeze(1), Xs)
    return torch.bmm(Xs.transpose(1, 2) * wt.unsqueeze(1), Xs)


def _ridge_solve(G, rhs):
    """Solve ``(G + lambda I) x = rhs`` per replicate, ``lambda = RIDGE tr(G) / d``; pinv where singular."""
    import torch

    d = G.shape[-1]
    tr = torch.diagonal(G, dim1=-2, dim2=-1).sum(-1)
    lam = torch.where(tr > 0, RIDGE * tr / d, torch.full_like(tr, TINY))
    G = G + lam[:, None, None] * torch.eye(d, dtype=G.dtype, device=G.device)
    sol, info = torch.linalg.solve_ex(G, rhs.unsqueeze(-1))
    sol = sol.squeeze(-1)
    bad = (info != 0) | ~torch.isfinite(sol).all(-1)
    if bool(bad.any()):
        sol[bad] = (torch.linalg.pinv(G[bad]) @ rhs[bad].unsqueeze(-1)).squeeze(-1)
    return sol


# ------------------------------------------------------------------------------------------ Huber
def _evaluate(Xs, Ys, Ss, b, delta):
    """Objective ``L`` (B',), gradient ``g`` (B', d) and IRLS weights ``w`` (B', n) at ``b``."""
    import torch

    r = Ys - _matvec(Xs, b)
    a = r.abs()
    inl = a <= delta
    h = torch.where(inl, 0.5 * r * r, delta * a - 0.5 * delta * delta)
    L = (Ss * h).sum(-1)
    g = -_rmatvec(Xs, Ss * r.clamp(-delta, delta))
    w = Ss * torch.where(inl, torch.ones_like(a), delta / a.clamp_min(TINY))
    return L, g, w


def _gradient_scale(Xt, S, delta):
    """``delta * ||diag(sqrt s_k) X_k||_F`` per replicate."""
    import torch

    if Xt.ndim == 2:
        return delta * torch.sqrt(S @ (Xt * Xt).sum(-1))
    return delta * torch.sqrt((S * (Xt * Xt).sum(-1)).sum(-1))


def _backtrack(Xs, Ys, Ss, delta, b_old, step, bound, new, bad):
    """Halve the steps of the replicates ``bad`` (objective above ``bound``) up to ``MAX_BACKTRACKS``
    times; ``new = (b, L, g, w)`` updated where a shorter step was tried, and the still-bad mask.

    Round-off only: IRLS is majorise-minimise, so a full step never raises the objective in exact
    arithmetic.
    """
    import torch

    b_new, L_new, g_new, w_new = new
    t = torch.ones_like(L_new)
    for _ in range(MAX_BACKTRACKS):
        t = torch.where(bad, 0.5 * t, t)
        b_try = b_old + t[:, None] * step
        L_try, g_try, w_try = _evaluate(Xs, Ys, Ss, b_try, delta)
        b_new = torch.where(bad[:, None], b_try, b_new)
        L_new = torch.where(bad, L_try, L_new)
        g_new = torch.where(bad[:, None], g_try, g_new)
        w_new = torch.where(bad[:, None], w_try, w_new)
        bad = ~(L_new <= bound)
        if not bool(bad.any()):
            break
    return (b_new, L_new, g_new, w_new), bad


def _irls_step(Xs, Ys, Ss, delta, outer, state):
    """One IRLS step from ``state = (b, L, g, w)`` of the selected replicates, with backtracking;
    returns the new state and the mask of replicates without descent."""
    b_old, L_old, g, w = state
    step = _ridge_solve(_gram(Xs, w, outer), -g)
    bound = L_old + MONOTONE_RTOL * L_old.abs()
    b_new = b_old + step
    new = (b_new,) + _evaluate(Xs, Ys, Ss, b_new, delta)
    bad = ~(new[1] <= bound)
    if bool(bad.any()):
        new, bad = _backtrack(Xs, Ys, Ss, delta, b_old, step, bound, new, bad)
    return new, bad


def _irls_loop(Xt, Yt, S, b, delta, max_iter, tol, gscale, outer):
    """IRLS from ``b`` until every replicate converged or stalled, or ``max_iter`` iterations;
    returns ``(b, n_iter, converged, history)`` (tensors; ``history`` a list of (B,) objectives)."""
    import torch

    B, dev = b.shape[0], b.device
    L, g, w = _evaluate(Xt, Yt, S, b, delta)
    active = torch.ones(B, dtype=torch.bool, device=dev)
    converged = torch.zeros(B, dtype=torch.bool, device=dev)
    n_iter = torch.zeros(B, dtype=torch.int64, device=dev)
    history = [L.clone()]
    it = 0
    while True:
        grad_rel = torch.linalg.vector_norm(g, dim=-1) / gscale
        newly = active & (grad_rel < tol) if (it >= 1 or max_iter == 0) else torch.zeros_like(active)
        converged |= newly
        active &= ~newly
        if it >= max_iter or not bool(active.any()):
            break
        it += 1
        if bool(active.all()):
            Xs, Ys, Ss, state = Xt, Yt, S, (b, L, g, w)
        else:
            idx = torch.nonzero(active).squeeze(-1)
            Xs = Xt if Xt.ndim == 2 else Xt[idx]
            Ys, Ss, state = Yt[idx], S[idx], (b[idx], L[idx], g[idx], w[idx])
        (b_new, L_new, g_new, w_new), bad = _irls_step(Xs, Ys, Ss, delta, outer, state)
        ok = ~bad  # replicates with no descent left at working precision stall (not converged)
        rows = torch.nonzero(active).squeeze(-1)
        acc = rows[ok]
        n_iter[acc] += 1
        b[acc], L[acc], g[acc], w[acc] = b_new[ok], L_new[ok], g_new[ok], w_new[ok]
        active[rows[bad]] = False
        h = torch.full_like(L, float("nan"))
        h[acc] = L[acc]
        history.append(h)
    return b, n_iter, converged, history
