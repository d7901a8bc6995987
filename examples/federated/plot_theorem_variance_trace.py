r"""
Theorem in practice: the variance trace of a merged model and its optimal weight
=================================================================================

**Statement** (Potara; reconstructed from the paper's abstract). A client merges the federated
model :math:`\theta_F` and its own local model :math:`\theta_L` as
:math:`\theta(\lambda) = \lambda\theta_F + (1-\lambda)\theta_L`. If the two estimates are
independent, with :math:`V_F = E\|\theta_F - \theta^*\|^2` and :math:`V_L = E\|\theta_L - \theta^*\|^2`
around the client's true parameter :math:`\theta^*`, then

.. math:: E\|\theta(\lambda) - \theta^*\|^2 \le U(\lambda) = \lambda^2 V_F + (1-\lambda)^2 V_L,

with equality when the local estimate is unbiased, and :math:`U` is minimised by
:math:`\lambda^* = V_L/(V_F + V_L)`, where :math:`U(\lambda^*) \le \min(V_F, V_L)`. These are
:func:`theory.federated.variance_trace_bound` and :func:`theory.federated.optimal_lambda`
(kind ``exact``); :func:`theory.federated.ols_variance_trace` gives :math:`V_L` for least squares.

**Experiment.** Linear regression on 30 clients whose true parameters differ (heterogeneity
:math:`\tau`). Client 0 fits ordinary least squares on its own data (:math:`\theta_L`, unbiased);
the federated model pools the 29 other clients (:math:`\theta_F`, biased towards their mean). We
redraw the noise many times and measure the mean squared error of :math:`\theta(\lambda)` on a grid
of :math:`\lambda`.

**What to look for.** The Monte-Carlo points sit on the curve :math:`U(\lambda)` (here the bound
is an identity, so any error in a formula shows as a gap), and the best merge beats both endpoints.
Quick mode uses fewer repetitions.
"""

# %%
# Set-up
# ------
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from theory.federated import ols_variance_trace, optimal_bound, optimal_lambda, variance_trace_bound  # noqa: E402

QUICK = os.environ.get("ALGOS_EXAMPLES_QUICK", "0") not in ("", "0")
reps = 300 if QUICK else 3000
rng = np.random.default_rng(0)
M, p, sigma, tau = 30, 20, 1.0, 0.3
theta_bar = rng.normal(size=p)
thetas = theta_bar + tau * rng.normal(size=(M, p))
Xs = [rng.normal(size=(n, p)) for n in rng.integers(30, 200, M)]

# the two variances, in closed form
G_inv = np.linalg.inv(sum(X.T @ X for X in Xs[1:]))
mean_fed = G_inv @ sum(X.T @ X @ t for X, t in zip(Xs[1:], thetas[1:]))
v_loc = ols_variance_trace(Xs[0], sigma**2)
v_fed = float(np.sum((mean_fed - thetas[0]) ** 2)) + sigma**2 * float(np.trace(G_inv))
lam_star = optimal_lambda(v_fed, v_loc)
print(f"V_F = {v_fed:.4f}, V_L = {v_loc:.4f}, lambda* = {lam_star:.3f}, U(lambda*) = {optimal_bound(v_fed, v_loc):.4f}")

# %%
# Experiment: Monte-Carlo error of the merge on a grid of weights
# ---------------------------------------------------------------
lams = np.linspace(0, 1, 11)
err = np.zeros((reps, len(lams)))
for r in range(reps):
    ys = [X @ t + sigma * rng.normal(size=len(X)) for X, t in zip(Xs, thetas)]
    th_loc = np.linalg.lstsq(Xs[0], ys[0], rcond=None)[0]
    th_fed = G_inv @ sum(X.T @ y for X, y in zip(Xs[1:], ys[1:]))
    for j, lam in enumerate(lams):
        err[r, j] = np.sum((lam * th_fed + (1 - lam) * th_loc - thetas[0]) ** 2)
mc, se = err.mean(axis=0), err.std(axis=0, ddof=1) / np.sqrt(reps)
bound = variance_trace_bound(lams, v_fed, v_loc)
z = np.abs(mc - bound) / se
print(f"largest |MC - U| over the grid: {z.max():.2f} standard errors")

# %%
# Plot: measured error against U(lambda)
# --------------------------------------
grid = np.linspace(0, 1, 201)
fig, ax = plt.subplots(figsize=(7, 4.2))
ax.plot(grid, variance_trace_bound(grid, v_fed, v_loc), "k-", label=r"$U(\lambda) = \lambda^2V_F + (1-\lambda)^2V_L$")
ax.errorbar(lams, mc, yerr=2 * se, fmt="o", color="C0", capsize=3, label=f"Monte Carlo, {reps} draws (2 s.e.)")
ax.axvline(lam_star, color="C3", ls="--", label=rf"$\lambda^* = V_L/(V_F+V_L) = {lam_star:.2f}$")
ax.set_xlabel(r"weight of the federated model $\lambda$")
ax.set_ylabel(r"$E\|\theta(\lambda) - \theta^*\|^2$")
ax.set_title("Merging a local and a federated least-squares fit (client 0 of 30)")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig("theorem_federated.png", dpi=110)
