r"""Adaptive one-step refinement: Newton steps with a score estimated from the residuals, cross-fitted.

For a linear model with i.i.d. symmetric noise of density ``f`` independent of the design, the
efficient estimating equation is :math:`\sum_i \psi_f(y_i - x_i^\top \beta)\, x_i = 0` with the score
:math:`\psi_f = -f'/f`; its asymptotic covariance is :math:`(n I_f \Sigma_x)^{-1}`,
:math:`I_f = \int f'^2/f`, the smallest any regular estimator reaches without knowing ``f``
(:func:`theory.hetero_regression.scale_mixture_width_bound` evaluates it for the subset-of-signals
noise). Bickel (1982, "On adaptive estimation", Ann. Statist. 10:647-671) showed it is reached with
``f`` unknown: start from a root-n consistent pilot, estimate the score nonparametrically from the
pilot's residuals (on a part of the sample the step does not use) and take one Newton step.

:func:`adaptive_refine` does that with

* **the score by kernel density estimation in a compressed scale.** The residuals of the
  subset-of-signals model mix scales 1 and 1000 and no single bandwidth suits both, so the density is
  estimated for :math:`u = \operatorname{asinh}(r / s)` (``s`` the signal scale ``delta``;
  :math:`u \approx r/s` near zero, logarithmic in the tails), symmetrised (``u`` and ``-u``: the
  noise is assumed symmetric), with a Gaussian kernel of bandwidth
  :math:`h = 0.9 \min(\mathrm{sd}, \mathrm{IQR}/1.34)\, N^{-1/5}` times ``BANDWIDTH_FACTOR``
  (Silverman's rule of thumb) on a binned grid; the score in ``r`` follows by the change of
  variables, :math:`\psi(r) = \phi(u)\, u'(r) - u''(r)/u'(r)` with :math:`\phi = -\hat f_u'/\hat f_u`,
  and is set to zero where :math:`\hat f_u` is below ``TRIM`` of its peak (Bickel's trimming);
* **cross-fitting**: the rows are split into ``N_FOLDS`` folds (by index modulo ``N_FOLDS``) and the
  score that a fold's rows get is estimated from the residuals of the other folds only;
* **three Newton steps**: :math:`b \leftarrow b + \hat I^{-1} \sum_i \hat\psi(r_i) x_i` with the
  outer-product information :math:`\hat I = \sum_i \hat\psi(r_i)^2 x_i x_i^\top` (positive definite
  whatever the estimated score's shape), the score re-estimated at the new residuals;
* **the sandwich** :math:`A^{-1} B A^{-1}` at the final residuals,
  :math:`A = \sum_i \hat\psi'(r_i) x_i x_i^\top`, :math:`B = \sum_i \hat\psi(r_i)^2 x_i x_i^\top`
  times ``n / (n - p)`` (valid whether or not the estimated score is the true one: with asymmetric
  noise the equation still holds for the slopes of a design with mean-zero, noise-independent rows,
  and the sandwich measures the variance of what was computed), replaced by the outer-product form
  :math:`B^{-1}` when ``A`` is not positive definite.

This construction (the compressed scale, its bandwidth rule, the trimming level, two folds or five)
is the project's own (**reconstructed**), checked by simulation (``benchmarks/hetero_inference.py``).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["adaptive_refine", "score_estimate", "N_FOLDS", "N_STEPS", "BANDWIDTH_FACTOR", "TRIM"]

#: Cross-fitting folds (rows ``i`` with ``i % N_FOLDS == k`` form fold ``k``).
N_FOLDS = 5
#: Newton steps (each re-estimates the score at the current residuals).
N_STEPS = 3
#: Multiplier of Silverman's bandwidth on the compressed scale.
BANDWIDTH_FACTOR = 0.7
#: The score is set to zero where the estimated density of ``u`` is below this fraction of its peak.
TRIM = 1e-4
#: Grid points of the binned kernel density estimate.
N_GRID = 2048


def _bandwidth(u):
    """Silverman's rule of thumb on the (symmetrised) sample ``u``, times ``BANDWIDTH_FACTOR``."""
    sd = float(np.std(u))
    q75, q25 = np.percentile(u, [75, 25])
    spread = min(sd, (q75 - q25) / 1.34) if q75 > q25 else sd
    return BANDWIDTH_FACTOR * 0.9 * max(spread, 1e-12) * u.shape[0] ** -0.2


def score_estimate(r_train, s):
    r"""The estimated score :math:`-\hat f'/\hat f` of the residuals ``r_train`` and its derivative.

    Parameters
    ----------
    r_train : ndarray of shape (N,)
        Residuals the density is estimated from (symmetrised: ``r`` and ``-r``).
    s : float > 0
        Scale of the compression :math:`u = \operatorname{asinh}(r / s)`.

    Returns
    -------
    callable
        ``psi(r) -> (psi, dpsi)``: the score at ``r`` (zero where trimmed) and its derivative in ``r``
        by central differences over one bandwidth of the compressed scale.
    """
    u = np.arcsinh(r_train / s)
    u = np.concatenate([u, -u])
    h = _bandwidth(u)
    top = float(np.max(np.abs(u))) + 5.0 * h
    grid = np.linspace(-top, top, N_GRID)
    du = grid[1] - grid[0]
    # linear binning
    pos = (u + top) / du
    i0 = np.clip(np.floor(pos).astype(np.int64), 0, N_GRID - 2)
    frac = pos - i0
    counts = np.bincount(i0, 1.0 - frac, minlength=N_GRID) + np.bincount(i0 + 1, frac, minlength=N_GRID)
    counts /= u.shape[0] * du
    half = int(math.ceil(5.0 * h / du))
    t = np.arange(-half, half + 1) * du / h
    k0 = np.exp(-0.5 * t * t) / math.sqrt(2.0 * math.pi) / h * du
    f = np.convolve(counts, k0, mode="same")
    f1 = np.convolve(counts, -t / h * k0, mode="same")
    ok = f > TRIM * f.max()
    fs = np.where(ok, f, 1.0)
    phi = np.where(ok, -f1 / fs, 0.0)

    okf = ok.astype(np.float64)

    def value(r):
        tt = r / s
        q = 1.0 + tt * tt
        uu = np.arcsinh(tt)
        ph = np.interp(uu, grid, phi, left=0.0, right=0.0)
        inside = np.interp(uu, grid, okf, left=0.0, right=0.0) > 0.5
        return np.where(inside, ph / (s * np.sqrt(q)) + (tt / s) / q, 0.0)   # phi(u) u'(r) - u''(r)/u'(r)

    def psi(r):
        # the derivative by central differences over one bandwidth (in u): the kernel estimate of f''
        # at the density's own bandwidth is too noisy for the sandwich's curvature
        eps = h * s * np.sqrt(1.0 + (r / s) ** 2)
        return value(r), (value(r + eps) - value(r - eps)) / (2.0 * eps)

    return psi


def _cross_fitted_score(r, s, fold, n_folds):
    """Score and derivative of every row, each fold's from the other folds' residuals."""
    psi = np.zeros_like(r)
    dpsi = np.zeros_like(r)
    for k in range(n_folds):
        rows = fold == k
        val, der = score_estimate(r[~rows], s)(r[rows])
        psi[rows], dpsi[rows] = val, der
    return psi, dpsi


def adaptive_refine(X, y, b, delta, *, n_folds=N_FOLDS, n_steps=N_STEPS):
    r"""Cross-fitted adaptive one-step (Newton) refinement of the pilot ``b``.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        Design (with the intercept column when one is fitted).
    y : ndarray of shape (n,)
    b : ndarray of shape (p,)
        The pilot fit (root-n consistent: the front door's robust fit).
    delta : float > 0
        Scale of the compression of the residuals (the signal noise scale).
    n_folds : int >= 2
    n_steps : int >= 1

    Returns
    -------
    b : ndarray of shape (p,)
    cov : ndarray of shape (p, p)
        Sandwich covariance (the outer-product form where the curvature is not positive definite;
        NaN if neither is).
    info : dict
        ``n_steps``, ``curvature`` (``"sandwich"`` or ``"outer"``), ``residual``
        (``||X' psi|| delta / ||X||_F`` at the returned fit, with the last estimated score).
    """
    n, p = X.shape
    fold = np.arange(n) % n_folds
    for _ in range(n_steps):
        r = y - X @ b
        psi, _ = _cross_fitted_score(r, delta, fold, n_folds)
        info_m = X.T @ (X * (psi * psi)[:, None])
        try:
            b = b + np.linalg.solve(info_m, X.T @ psi)
        except np.linalg.LinAlgError:
            break
    r = y - X @ b
    psi, dpsi = _cross_fitted_score(r, delta, fold, n_folds)
    A = X.T @ (X * dpsi[:, None])
    B = X.T @ (X * (psi * psi)[:, None])
    corr = n / max(n - p, 1)
    cov = np.full((p, p), np.nan)
    curvature = "sandwich"
    try:
        np.linalg.cholesky(A)
        Ai = np.linalg.inv(A)
        cov = corr * (Ai @ B @ Ai)
    except np.linalg.LinAlgError:
        curvature = "outer"
        try:
            cov = corr * np.linalg.inv(B)
        except np.linalg.LinAlgError:
            pass
    try:
        outer = corr * np.linalg.inv(B)
    except np.linalg.LinAlgError:
        outer = np.full((p, p), np.nan)
    residual = float(np.linalg.norm(X.T @ psi) * delta / max(np.linalg.norm(X), np.finfo(float).tiny))
    return b, 0.5 * (cov + cov.T), {"n_steps": n_steps, "curvature": curvature, "residual": residual, "outer": outer}
