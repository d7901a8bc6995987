r"""
Theorem in practice: the value of a POMDP is Lipschitz in the belief
=====================================================================

**Statement** (standard; the first step of RECAP's closure certificate). For a finite POMDP with
rewards in :math:`[R_{\min}, R_{\max}]` and discount :math:`\gamma < 1`, the optimal value is
Lipschitz in the belief's :math:`L^1` norm,

.. math:: |V^*(b) - V^*(b')| \le L\,\|b - b'\|_1, \qquad L = \frac{R_{\max} - R_{\min}}{2(1-\gamma)},

and the same holds for any value :math:`V_\Gamma(b) = \max_{\alpha\in\Gamma}\alpha\cdot b` with the
tighter, computable :math:`L_\Gamma = \max_\alpha \mathrm{span}(\alpha)/2`. These are
:func:`theory.pomdp.lipschitz_constant` and :func:`theory.pomdp.alpha_lipschitz_constant` (kind
``exact``). RECAP multiplies a codebook's distortion by such a constant to bound the value it loses.

**Experiment.** On the Tiger problem we compute PBVI's alpha vectors
(:class:`algos.pomdp.PBVI`), draw many pairs of beliefs and plot the change of value against their
distance.

**What to look for.** Every point lies below both lines. The line of :math:`L_\Gamma` touches the
cloud (the bound is attained by two beliefs on the steepest alpha vector), while :math:`L` from the
reward range (1100 on Tiger, twenty times :math:`L_\Gamma`) leaves the plot almost at once: a
certificate built on it is valid but pessimistic, which the demo report shows as a small tightness.
This is background: the module's own theorem, the converse lower bound against RECAP, is taught in
the example ``plot_theorem_converse.py`` of this gallery. Quick mode uses fewer belief points in PBVI.
"""

# %%
# Set-up
# ------
import os

import matplotlib.pyplot as plt
import numpy as np

from algos.pomdp import PBVI, tiger
from theory.pomdp import alpha_lipschitz_constant, lipschitz_constant

QUICK = os.environ.get("ALGOS_EXAMPLES_QUICK", "0") not in ("", "0")
model = tiger()
pbvi = PBVI(n_beliefs=50 if QUICK else 200, max_iter=400, random_state=0).fit(model)
L = lipschitz_constant(model.r, model.discount)
L_gamma = alpha_lipschitz_constant(pbvi.alphas_)
print(f"Tiger, discount {model.discount}: L from the rewards = {L:.1f}, L_Gamma from "
      f"{len(pbvi.alphas_)} alpha vectors = {L_gamma:.1f}")

# %%
# Experiment: value differences against belief distances
# -------------------------------------------------------
rng = np.random.default_rng(0)
n_pairs = 400 if QUICK else 2000
p1, p2 = rng.uniform(size=n_pairs), rng.uniform(size=n_pairs)
B1, B2 = np.c_[p1, 1 - p1], np.c_[p2, 1 - p2]
dv = np.abs([pbvi.value(b) - pbvi.value(c) for b, c in zip(B1, B2)])
dist = np.abs(B1 - B2).sum(axis=1)
assert np.all(dv <= L_gamma * dist + 1e-9) and np.all(dv <= L * dist + 1e-9), "Lipschitz bound violated"
print(f"largest ratio |dV| / ||db||_1 over {n_pairs} pairs: {np.max(dv / dist):.2f} "
      f"(tightness against L_Gamma {np.max(dv / dist) / L_gamma:.2f}, against L {np.max(dv / dist) / L:.2f})")

# %%
# Plot: measured value changes against the two bounds
# ---------------------------------------------------
x = np.linspace(0, 2, 50)
fig, ax = plt.subplots(figsize=(7, 4.2))
ax.plot(dist, dv, ".", color="C0", alpha=0.4, ms=4, label="pairs of beliefs")
ax.plot(x, L_gamma * x, "C3-", label=rf"$L_\Gamma\,\|b-b'\|_1$, $L_\Gamma$ = {L_gamma:.0f} (alpha vectors)")
ax.plot(x, L * x, "k--", label=rf"$L\,\|b-b'\|_1$, $L$ = {L:.0f} (reward range)")
ax.set_xlim(0, 2)
ax.set_ylim(0, 1.05 * max(dv.max(), L_gamma * 2))
ax.set_xlabel(r"belief distance $\|b - b'\|_1$")
ax.set_ylabel(r"value change $|V(b) - V(b')|$")
ax.set_title("Tiger: the value function is Lipschitz in the belief")
ax.legend(fontsize=8, loc="upper left")
fig.tight_layout()
fig.savefig("theorem_pomdp.png", dpi=110)
plt.show()
