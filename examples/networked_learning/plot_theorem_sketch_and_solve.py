r"""
Theorem in practice: what a shared Gaussian sketch costs a least-squares fit
=============================================================================

**Statement** (classical background, theorem T8 of the module's page; the paper's own bounds T5
and T7 are taught in the example ``plot_theorem_message_bounds.py`` of this gallery). For a fixed
full-rank design
:math:`X \in \mathbb R^{m\times p}`, a response :math:`y` and a Gaussian sketch
:math:`S \in \mathbb R^{k\times m}` with :math:`k > p + 1`, the sketch-and-solve estimate
:math:`\tilde\beta = \arg\min_\beta \|S(y - X\beta)\|` has in-sample loss

.. math:: E_S\,\|y - X\tilde\beta\|^2 = \|y - X\hat\beta\|^2\Big(1 + \frac{p}{k-p-1}\Big),

where :math:`\hat\beta` is the full least-squares fit. This is
:func:`theory.networked_learning.sketch_ls_expectation_factor` (kind ``in expectation``). It is the
price an agent of :class:`algos.networked_learning.NetworkedDAGRegressor` pays when its parents
send :math:`k` sketched floats instead of :math:`m` predictions.

**Experiment.** One design (:math:`m = 2000` rows, :math:`p = 10`), one response; for each sketch
size :math:`k` we draw many shared sketches with :func:`algos.networked_learning.make_sketch`
(a different seed each), solve the sketched problem and record the loss inflation
:math:`\|y - X\tilde\beta\|^2 / \|y - X\hat\beta\|^2`.

**What to look for.** The Monte-Carlo mean sits on the curve within its error bars (an identity in
expectation: a wrong exponent or an off-by-one in :math:`k - p - 1` shows at small :math:`k`), and
single sketches scatter above and below it. Quick mode uses fewer sketches.
"""

# %%
# Set-up
# ------
import os

import matplotlib.pyplot as plt
import numpy as np

from algos.networked_learning import make_sketch
from theory.networked_learning import sketch_ls_expectation_factor

QUICK = os.environ.get("ALGOS_EXAMPLES_QUICK", "0") not in ("", "0")
m, p = 2000, 10
n_sketches = 60 if QUICK else 400
ks = np.array([15, 20, 30, 50, 80, 150, 300])
rng = np.random.default_rng(0)
X = rng.normal(size=(m, p))
y = X @ rng.normal(size=p) + rng.normal(size=m)
full_loss = np.sum((y - X @ np.linalg.lstsq(X, y, rcond=None)[0]) ** 2)

# %%
# Experiment: loss inflation of sketch-and-solve, per sketch size
# ----------------------------------------------------------------
ratios = np.empty((len(ks), n_sketches))
for i, k in enumerate(ks):
    for s in range(n_sketches):
        S = make_sketch("gaussian", int(k), m, seed=s)
        beta = np.linalg.lstsq(S.apply(X), S.apply(y), rcond=None)[0]
        ratios[i, s] = np.sum((y - X @ beta) ** 2) / full_loss
mean, se = ratios.mean(axis=1), ratios.std(axis=1, ddof=1) / np.sqrt(n_sketches)
theory = np.array([sketch_ls_expectation_factor(p, int(k)) for k in ks])
for k, mu, e, th in zip(ks, mean, se, theory):
    print(f"k = {k:4d}: mean inflation {mu:.4f} +- {2 * e:.4f} (2 s.e.), theory {th:.4f}")

# %%
# Plot: measured inflation against the theorem
# ---------------------------------------------
grid = np.arange(p + 2, ks[-1] + 1)
fig, ax = plt.subplots(figsize=(7, 4.2))
for i, k in enumerate(ks):
    ax.plot(np.full(n_sketches, k), ratios[i], ".", color="C0", alpha=0.15, ms=4,
            label="one sketch" if i == 0 else None)
ax.errorbar(ks, mean, yerr=2 * se, fmt="o", color="C3", capsize=3, label=f"mean of {n_sketches} sketches (2 s.e.)")
ax.plot(grid, [sketch_ls_expectation_factor(p, int(k)) for k in grid], "k-", label=r"theorem $1 + p/(k-p-1)$")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("sketch size k (floats per edge)")
ax.set_ylabel(r"$\|y - X\tilde\beta\|^2 / \|y - X\hat\beta\|^2$")
ax.set_title(f"Sketch-and-solve least squares, m = {m}, p = {p}")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig("theorem_networked_learning.png", dpi=110)
plt.show()
