r"""
Posterior intensity of a log-Gaussian Cox process with VoGCAM
=============================================================

A log-Gaussian Cox process has intensity :math:`\lambda(s) = e^{f(s)}` with a Gaussian-process
log-intensity :math:`f`. :class:`algos.point_process.VoGCAM` fits it by Voronoi (Berman--Turner)
quadrature, a nearest-neighbour GP prior and coordinate ascent on a closed-form ELBO (reconstructed
from the target paper's abstract). This script

* simulates an LGCP on the unit square (exponential covariance, variance 1, range 0.1) with
  :func:`algos.point_process.simulate_lgcp`, fits VoGCAM, and draws the true log-intensity beside the
  posterior mean and the posterior standard deviation (``lgcp_simulated.png``);
* fits the redwood seedlings pattern shipped with the package (62 points, spatstat.data, GPL >= 2;
  :func:`algos.datasets.load_redwood`) and draws its posterior mean intensity and uncertainty
  (``lgcp_redwood.png``).

Set ``ALGOS_EXAMPLES_QUICK=1`` for a small, fast run.
"""

import math
import os

import matplotlib.pyplot as plt
import numpy as np

from algos.datasets import load_redwood
from algos.point_process import VoGCAM, simulate_lgcp

QUICK = os.environ.get("ALGOS_EXAMPLES_QUICK", "") == "1"


def grid(win, g):
    xmin, xmax, ymin, ymax = win
    xs = xmin + (np.arange(g) + 0.5) * (xmax - xmin) / g
    ys = ymin + (np.arange(g) + 0.5) * (ymax - ymin) / g
    return np.column_stack([np.tile(xs, g), np.repeat(ys, g)])


# --- simulated pattern, truth beside the posterior ---------------------------------------------
expected = 250 if QUICK else 500
smp = simulate_lgcp((0, 1, 0, 1), math.log(expected) - 0.5, 1.0, 0.1, grid=128, random_state=1)
X = smp.points
est = VoGCAM(window=(0, 1, 0, 1), n_dummy=196 if QUICK else "auto", max_iter=60 if QUICK else 200).fit(X)
g = 48 if QUICK else 96
G = grid((0, 1, 0, 1), g)
mu, sd = est.predict_log_intensity(G, return_std=True)
truth = smp.log_intensity_at(G)
print(f"simulated: n = {len(X)}, nodes = {est.n_nodes_}, sigma^2 = {est.variance_:.3f}, "
      f"range = {est.length_scale_:.3f}, RMSE = {np.sqrt(np.mean((mu - truth) ** 2)):.3f}")
fig, axes = plt.subplots(1, 3, figsize=(13, 4))
vmin, vmax = np.percentile(truth, [1, 99])
for ax, img, title in ((axes[0], truth, "true log-intensity"), (axes[1], mu, "VoGCAM posterior mean"),
                       (axes[2], sd, "posterior sd")):
    kw = {"vmin": vmin, "vmax": vmax} if ax is not axes[2] else {}
    im = ax.imshow(img.reshape(g, g), origin="lower", extent=(0, 1, 0, 1), cmap="viridis", **kw)
    fig.colorbar(im, ax=ax, fraction=0.046)
    ax.set_title(title)
axes[0].plot(X[:, 0], X[:, 1], "w.", ms=1, alpha=0.5)
fig.tight_layout()
fig.savefig("lgcp_simulated.png", dpi=100)

# --- redwood (shipped with the package) ---------------------------------------------------------
redwood = load_redwood()
R = redwood.data
win = redwood.window
fit = VoGCAM(window=win, n_dummy=256).fit(R)
G = grid(win, g)
mean, lo, hi = fit.predict_intensity(G, alpha=0.05)
fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
im = axes[0].imshow(mean.reshape(g, g), origin="lower", extent=win, cmap="viridis")
axes[0].plot(R[:, 0], R[:, 1], "w.", ms=3)
axes[0].set_title("redwood: posterior mean intensity")
fig.colorbar(im, ax=axes[0])
im = axes[1].imshow(((hi - lo) / mean).reshape(g, g), origin="lower", extent=win, cmap="magma")
axes[1].set_title("relative width of the 95% band")
fig.colorbar(im, ax=axes[1])
fig.tight_layout()
fig.savefig("lgcp_redwood.png", dpi=100)
print(f"redwood: n = {len(R)}, sigma^2 = {fit.variance_:.3f}, range = {fit.length_scale_:.3f}, "
      f"E[N] = {fit.expected_count():.1f}")
plt.show()
