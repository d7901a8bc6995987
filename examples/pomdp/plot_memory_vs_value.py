r"""
What does memory buy? Finite-state controllers for the Tiger problem
====================================================================

A POMDP policy that acts on the exact belief needs unbounded memory. A finite-state controller
(FSC) with ``K`` memory nodes is what a robot can actually run: node ``m`` plays ``action[m]`` and
moves to ``eta[m, o]`` on observation ``o``. RECAP (reconstructed, see :doc:`/pomdp_reconstruction`, §1.4) builds
the nodes from a *codebook* of beliefs: it starts from ``b0``, adds the successor beliefs the
controller itself reaches (scored by how much merging them would change the decision), and maps
each node's successor to the nearest codeword.

Left panel: the optimal value function of Tiger, :math:`V^*(b)` (upper envelope of PBVI's alpha
vectors, as a function of :math:`b(\text{tiger-left})`), with the five RECAP codewords and the
action each plays. Listening moves the belief along the line; two consistent growls are needed
before opening a door, which is why ``K = 5`` nodes (uniform, one and two growls on each side)
reach the best known value 19.37 and ``K <= 4`` cannot beat the blind policy "always listen"
(-20): every controller with fewer nodes either never opens a door or opens it too early.

Right panel: exact :math:`V^F(b_0)` (a linear solve, no simulation) against ``K`` for RECAP and
three baselines (k-means codebook on simulated beliefs, a regular belief grid and a finite window
of the last observations), with PBVI's bracket of :math:`V^*(b_0)` and the converse ceiling
:math:`\text{upper} - \text{converse}(K)` that no K-node controller can exceed (history form, two
steps). The ceiling bites at :math:`K \le 2` and is 0 from :math:`K = 3` on: after two steps Tiger
has only three distinct beliefs (two growls left, one of each, two right), which three cells keep
apart; what forces five nodes is counting growls *across* time, which a bound on the beliefs of one
depth cannot see. The guessing game of the converse example is a model where it is tight at every
:math:`K`. RECAP's closure certificate U2 is printed, not drawn: on Tiger it exceeds the whole range
of values (:math:`L = 1100` makes even a small closure distortion expensive), so it is valid but
vacuous here. ``ALGOS_EXAMPLES_QUICK=1`` selects the quick mode (fewer memory sizes).
"""

# %%
# Set-up
# ------
import os
import warnings

import matplotlib.pyplot as plt
import numpy as np

from algos.pomdp import (
    PBVI,
    FiniteWindowController,
    GridCodebook,
    KMeansCodebook,
    RECAPController,
    blind_policy_values,
    converse_lower_bound,
    tiger,
)

quick = os.environ.get("ALGOS_EXAMPLES_QUICK", "0") not in ("", "0")
SEED = 0

# %%
# Tiger, PBVI and the K = 5 RECAP controller
# ------------------------------------------
model = tiger()
pbvi = PBVI(n_beliefs=100, max_iter=400, random_state=SEED).fit(model)
recap5 = RECAPController(n_memory=5, random_state=SEED).fit(model, alphas=pbvi)
print(f"Tiger: PBVI bracket of V*(b0) = [{pbvi.value_:.4f}, {pbvi.upper_bound_:.4f}]")
print(f"RECAP K = 5: exact V^F(b0) = {recap5.value_:.4f}")
print("node  b(tiger-left)  action       next node on (growl-left, growl-right)")
for m in range(recap5.n_memory_):
    print(f"{m:>4}  {recap5.codebook_[m, 0]:>13.3f}  {model.actions[recap5.action_[m]]:<11}  "
          f"{tuple(int(v) for v in recap5.eta_[m])}")

# %%
# Value against memory
# --------------------
target, pbvi_t = model, pbvi
Ks = [1, 2, 4, 5, 8] if quick else [1, 2, 3, 4, 5, 6, 8, 12, 16]
makers = {
    "RECAP": lambda K: RECAPController(n_memory=K, random_state=SEED),
    "k-means codebook": lambda K: KMeansCodebook(n_memory=K, random_state=SEED),
    "regular grid": lambda K: GridCodebook(n_memory=K),
    "finite window": lambda K: FiniteWindowController(n_memory=K, random_state=SEED),
}
values = {name: [] for name in makers}
u2 = []  # RECAP's closure certificate: V*(b0) - V^F(b0) <= U2 (pomdp reconstruction notes §1.3, reconstructed)
for K in Ks:
    for name, make in makers.items():
        with warnings.catch_warnings():
            # RECAP at K = 8, 12, 16: more nodes than Tiger needs; it returns its 5-node controller
            warnings.filterwarnings("ignore", message=".*more than this model needs", category=UserWarning)
            est = make(K).fit(target, alphas=pbvi_t)
        values[name].append(est.value_)
        if name == "RECAP":
            u2.append(est.bound_["U2"] if getattr(est, "bound_", None) else np.nan)
u2 = np.asarray(u2)
conv = np.array([converse_lower_bound(target, K, form="history", depth=2, solver=pbvi_t).bound for K in Ks])
print("converse (history form, depth 2) by K:", " ".join(f"{x:.3f}" for x in conv))
blind = blind_policy_values(target).best_value
for name, v in values.items():
    print(f"{name:<18}" + " ".join(f"{x:9.3f}" for x in v))

# %%
# Figure
# ------
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(12, 4.6))
grid = np.linspace(0, 1, 401)
B = np.stack([grid, 1 - grid], axis=1)
ax0.plot(grid, (B @ pbvi.alphas_.T).max(axis=1), "k-", lw=1.2, label=r"$V^*(b)$ (PBVI alphas)")
colors = {"listen": "C0", "open-left": "C3", "open-right": "C2"}
for m in range(recap5.n_memory_):
    b = recap5.codebook_[m]
    a = model.actions[recap5.action_[m]]
    ax0.plot(b[0], recap5.W_[m] @ b, "o", color=colors[a], ms=9)
    ax0.annotate(f"node {m}: {a}", (b[0], recap5.W_[m] @ b), textcoords="offset points", xytext=(4, -14), fontsize=8)
ax0.set_xlabel("b(tiger-left)")
ax0.set_ylabel("value")
ax0.set_title("Tiger: optimal value and the K = 5 RECAP codebook")
ax0.legend(fontsize=8, loc="upper center")

styles = {"RECAP": "C0o-", "k-means codebook": "C1s--", "regular grid": "C2^:", "finite window": "C4v-."}
for name, v in values.items():
    ax1.plot(Ks, v, styles[name], label=name)
ax1.axhline(pbvi_t.upper_bound_, color="k", lw=0.8, label=r"PBVI upper bound on $V^*(b_0)$")
ax1.axhline(blind, color="0.5", lw=0.8, ls=":", label="best blind policy (K = 1)")
ax1.plot(Ks, pbvi_t.upper_bound_ - conv, "r_", ms=14, mew=2, label="converse ceiling")
print("RECAP's U2 by K:", " ".join(f"{x:.4g}" for x in u2),
      f"(vacuous: the values span {pbvi_t.upper_bound_ - blind:.1f})")
assert np.all(np.array(list(values.values())) <= pbvi_t.upper_bound_ - conv + 1e-6), "a controller beat the converse"
span = pbvi_t.upper_bound_ - blind
ax1.set_ylim(blind - 0.25 * span, pbvi_t.upper_bound_ + 0.1 * span)  # very poor controllers fall off the chart
ax1.set_xscale("log", base=2)
ax1.set_xticks(Ks, [str(k) for k in Ks])
ax1.set_xlabel("memory K (controller nodes)")
ax1.set_ylabel(r"exact $V^F(b_0)$")
ax1.set_title("Tiger: value against memory")
ax1.legend(fontsize=8, loc="lower right")
fig.tight_layout()
fig.savefig("pomdp_memory_vs_value.png", dpi=120)
plt.show()
