r"""
Theorem in practice: Ripley's K function of a log-Gaussian Cox process
=======================================================================

**Statement** (a property of the model). A log-Gaussian Cox process whose log-intensity is a
stationary Gaussian field with covariance :math:`C(r)` has pair-correlation function
:math:`g(r) = \exp(C(r))` and Ripley's K function

.. math:: K(r) = 2\pi\int_0^r s\,g(s)\,ds \;\ge\; \pi r^2,

the K function of a Poisson process with the same intensity: the points cluster. These are
:func:`theory.point_process.lgcp_k_function` and :func:`theory.point_process.poisson_k_function`
(kind ``exact``, a model property).

**Experiment.** We draw LGCPs on the unit square with :func:`algos.point_process.simulate_lgcp`
(exponential covariance, :math:`\sigma^2 = 1`, range 0.1, about 400 points each) and estimate K with
:func:`algos.point_process.k_function` (isotropic edge correction), averaged over the draws.

**What to look for.** The mean estimate follows the theoretical curve, clearly above the Poisson
curve; single draws scatter around it (K is an expectation over the process). A K estimator with a
wrong edge correction or normalisation, or a simulator with the wrong covariance, shows as a
systematic gap. Quick mode uses fewer draws and a coarser simulation grid.
"""

# %%
# Set-up
# ------
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from algos.point_process import k_function, simulate_lgcp  # noqa: E402
from theory.point_process import lgcp_k_function, poisson_k_function  # noqa: E402

QUICK = os.environ.get("ALGOS_EXAMPLES_QUICK", "0") not in ("", "0")
n_draws, grid = (8, 64) if QUICK else (40, 128)
variance, length_scale = 1.0, 0.1
mean = np.log(400.0) - variance / 2  # E[intensity] = exp(mean + variance / 2) = 400
r = np.linspace(0.0, 0.2, 41)

# %%
# Experiment: estimate K on independent draws
# --------------------------------------------
estimates = []
for seed in range(n_draws):
    sample = simulate_lgcp((0, 1, 0, 1), mean=mean, variance=variance, length_scale=length_scale, grid=grid,
                           random_state=seed)
    estimates.append(k_function(sample.points, (0, 1, 0, 1), r=r, correction="isotropic").value)
estimates = np.array(estimates)
k_mean = estimates.mean(axis=0)
k_theory = lgcp_k_function(r, variance, length_scale)
print(f"{n_draws} draws; at r = 0.1: mean estimate {k_mean[20]:.4f}, LGCP theory {k_theory[20]:.4f}, "
      f"Poisson {poisson_k_function(r[20]):.4f}")

# %%
# Plot: estimates against the model's K function
# -----------------------------------------------
fig, ax = plt.subplots(figsize=(7, 4.2))
for i, est in enumerate(estimates):
    ax.plot(r, est - np.pi * r**2, color="C0", alpha=0.25, lw=0.8, label="one draw" if i == 0 else None)
ax.plot(r, k_mean - np.pi * r**2, "C0-", lw=2, label=f"mean of {n_draws} draws")
ax.plot(r, k_theory - np.pi * r**2, "k--", lw=2, label=r"LGCP theory $2\pi\int_0^r s\,e^{C(s)}ds$")
ax.axhline(0.0, color="grey", lw=1, label=r"Poisson $\pi r^2$")
ax.set_xlabel("distance r")
ax.set_ylabel(r"$K(r) - \pi r^2$")
ax.set_title(r"Clustering of an LGCP ($\sigma^2 = 1$, range 0.1): K above the Poisson value")
ax.legend(fontsize=8, loc="upper left")
fig.tight_layout()
fig.savefig("theorem_point_process.png", dpi=110)
