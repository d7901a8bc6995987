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

**Assumption broken: independent federated and local models.** In a real federation client 0 also
trains the federated model, so both estimates share its noise and the cross term
:math:`C = E\langle\theta_F - \theta^*, \theta_L - \theta^*\rangle` is not zero. The right panel
pools client 0 with four similar clients: the independent curve :math:`U(\lambda)` (with
:math:`C = 0`) now lies visibly below the measured error, and only the full identity
:math:`U(\lambda) + 2\lambda(1-\lambda)C` (``cov=C``) fits.
"""

# %%
# Set-up
# ------
import os

import matplotlib.pyplot as plt
import numpy as np

from theory.federated import ols_variance_trace, optimal_bound, optimal_lambda, variance_trace_bound

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

# dependent pair: client 0 and four near-identical clients (tau = 0.05), all of them in the federated fit
th_dep = thetas[0] + 0.05 * rng.normal(size=(5, p))
th_dep[0] = thetas[0]
Xd = [Xs[0]] + [rng.normal(size=(len(Xs[0]), p)) for _ in range(4)]
Gd_inv = np.linalg.inv(sum(X.T @ X for X in Xd))
bias_d = Gd_inv @ sum(X.T @ X @ t for X, t in zip(Xd, th_dep)) - thetas[0]
vf_d = float(bias_d @ bias_d) + sigma**2 * float(np.trace(Gd_inv))
cov_d = sigma**2 * float(np.trace(Gd_inv))  # E<F - theta*, L - theta*>: the shared noise of client 0
print(f"dependent pair: V_F = {vf_d:.4f}, V_L = {v_loc:.4f}, C = {cov_d:.4f}")

# %%
# Experiment: Monte-Carlo error of the merge on a grid of weights
# ---------------------------------------------------------------
lams = np.linspace(0, 1, 11)
err, err_d = np.zeros((reps, len(lams))), np.zeros((reps, len(lams)))
for r in range(reps):
    ys = [X @ t + sigma * rng.normal(size=len(X)) for X, t in zip(Xs, thetas)]
    th_loc = np.linalg.lstsq(Xs[0], ys[0], rcond=None)[0]
    th_fed = G_inv @ sum(X.T @ y for X, y in zip(Xs[1:], ys[1:]))
    yd = [ys[0]] + [X @ t + sigma * rng.normal(size=len(X)) for X, t in zip(Xd[1:], th_dep[1:])]
    th_fed_d = Gd_inv @ sum(X.T @ y for X, y in zip(Xd, yd))
    for j, lam in enumerate(lams):
        err[r, j] = np.sum((lam * th_fed + (1 - lam) * th_loc - thetas[0]) ** 2)
        err_d[r, j] = np.sum((lam * th_fed_d + (1 - lam) * th_loc - thetas[0]) ** 2)
mc, se = err.mean(axis=0), err.std(axis=0, ddof=1) / np.sqrt(reps)
bound = variance_trace_bound(lams, v_fed, v_loc)
z = np.abs(mc - bound) / se
print(f"independent: largest |MC - U| over the grid: {z.max():.2f} standard errors")
mc_d, se_d = err_d.mean(axis=0), err_d.std(axis=0, ddof=1) / np.sqrt(reps)
z_indep = (mc_d - variance_trace_bound(lams, vf_d, v_loc)) / se_d
z_cov = np.abs(mc_d - variance_trace_bound(lams, vf_d, v_loc, cov=cov_d)) / se_d
print(f"dependent: MC above U(cov=0) by up to {z_indep.max():.1f} s.e.; |MC - U(cov=C)| <= {z_cov.max():.2f} s.e.")

# the identity holds within Monte-Carlo noise (5 s.e. over 11 correlated grid points), and the merge
# at lambda* is no worse than either endpoint; with shared noise the independent formula is off
assert z.max() < 5.0, f"Monte Carlo is {z.max():.1f} s.e. from U(lambda)"
u_star = optimal_bound(v_fed, v_loc)
assert np.isclose(u_star, variance_trace_bound(lam_star, v_fed, v_loc)), "U(lambda*) is not U at lambda*"
assert u_star <= min(v_fed, v_loc), "the best merge is worse than an endpoint"
assert np.all(mc >= u_star - 5.0 * se), "a weight on the grid beats the optimum U(lambda*)"
assert z_cov.max() < 5.0 and z_indep.max() > 5.0, "dependence should show only in the independent formula"

# %%
# Plot: measured error against U(lambda), independent and dependent models
# -------------------------------------------------------------------------
grid = np.linspace(0, 1, 201)
fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
ax.plot(grid, variance_trace_bound(grid, v_fed, v_loc), "k-", label=r"$U(\lambda) = \lambda^2V_F + (1-\lambda)^2V_L$")
ax.errorbar(lams, mc, yerr=2 * se, fmt="o", color="C0", capsize=3, label=f"Monte Carlo, {reps} draws (2 s.e.)")
ax.axvline(lam_star, color="C3", ls="--", label=rf"$\lambda^* = V_L/(V_F+V_L) = {lam_star:.2f}$")
ax.set_xlabel(r"weight of the federated model $\lambda$")
ax.set_ylabel(r"$E\|\theta(\lambda) - \theta^*\|^2$")
ax.set_title("Independent models: client 0 of 30")
ax.legend(fontsize=8)
ax2.plot(grid, variance_trace_bound(grid, vf_d, v_loc), "k--", label="U with C = 0 (assumes independence)")
ax2.plot(grid, variance_trace_bound(grid, vf_d, v_loc, cov=cov_d), "k-", label=rf"U with C = {cov_d:.3f}")
ax2.errorbar(lams, mc_d, yerr=2 * se_d, fmt="o", color="C1", capsize=3, label="Monte Carlo (2 s.e.)")
ax2.set_xlabel(r"weight of the federated model $\lambda$")
ax2.set_title("Assumption broken: client 0 is in the federation")
ax2.legend(fontsize=8)
fig.tight_layout()
fig.savefig("theorem_federated.png", dpi=110)
plt.show()
