r"""
Theorem in practice: no K-memory controller beats the converse, and RECAP comes within one node
================================================================================================

**Statement** (converse, reconstructed; :func:`algos.pomdp.converse_lower_bound`, depth-1 form
:func:`theory.pomdp.converse_depth1`, kind ``exact`` on the solver's brackets). For every
finite-state controller :math:`F` with :math:`K` memory nodes,

.. math:: V^*(b_0) - V^F(b_0) \;\ge\; \min_a \Big[V^*(b_0) - Q^*(b_0, a) + \gamma\, D_K(\mu_1^a)\Big],

where :math:`D_K(\mu)` is the least total merge cost (Jensen gap of :math:`V^*`) of grouping the
successor beliefs into :math:`K` cells. Two beliefs are *decision witnesses* against each other
(:func:`theory.pomdp.decision_witnesses`) when no single plan is optimal for both: merging them
always costs something, so :math:`n` pairwise witnesses force a loss until :math:`K` can separate
them. Any controller's loss is an upper bound on the best possible; RECAP
(:class:`algos.pomdp.RECAPController`) gives one for every :math:`K`.

**Experiment.** The guessing game: a prize hides uniformly in one of :math:`n` boxes; the agent may
look (perfect observation, one step) and then guess. The :math:`n` beliefs after looking are
pairwise decision witnesses. For each :math:`K` we compute the converse and RECAP's exact loss.
Right panel, **the assumption broken**: the lossless codebook (start, the :math:`n` posteriors, the
end state) keeps witnesses apart; we merge pairs of witnesses into one codeword
(:func:`algos.pomdp.build_codebook_fsc`) and compare the loss with :math:`\gamma` times the merge
cost :func:`theory.pomdp.merge_cost` of the merged cells.

**What to look for.** The converse stays below RECAP's loss and within one witness of it
(:math:`\gamma/n`), so the best :math:`K`-node controller is pinned down to one node. The converse
reaches 0 at :math:`K = n` (enough cells to keep the :math:`n` witnesses apart; the depth-1 form
does not count the node that looks), RECAP at :math:`K = n + 1`. Merging witnesses costs exactly
:math:`\gamma J`: a codebook that merges a decision witness cannot be lossless. RECAP's closure
certificate U2 is printed too: here it is vacuous (about 40 times the trivial bound
:math:`(R_{\max}-R_{\min})/(1-\gamma)`), because it multiplies the closure distortion by
:math:`L/(1-\gamma)` with :math:`L = 10`. Quick mode uses 6 boxes instead of 8.
"""

# %%
# Set-up: the guessing game from the public POMDP constructor
# -----------------------------------------------------------
import os
import warnings

import matplotlib.pyplot as plt
import numpy as np

from algos.pomdp import (
    POMDP,
    PointBasedSolver,
    RECAPController,
    build_codebook_fsc,
    converse_lower_bound,
    evaluate_fsc,
)
from theory.pomdp import decision_witnesses, merge_cost

QUICK = os.environ.get("ALGOS_EXAMPLES_QUICK", "0") not in ("", "0")
n, g = (6 if QUICK else 8), 0.95
S, z = 2 * n + 1, 2 * n      # states: before looking (box s), after looking (box s), done
T, Z, r = np.zeros((n + 1, S, S)), np.zeros((n + 1, S, n + 1)), np.zeros((S, n + 1))
Z[:, :, n] = 1.0             # observation n: "nothing seen"
for s in range(n):
    T[0, s, n + s] = T[0, n + s, z] = 1.0                   # action 0: look
    T[1:, s, z] = T[1:, n + s, z] = 1.0                     # action 1 + j: guess box j
    Z[0, n + s] = 0.0
    Z[0, n + s, s] = 1.0                                    # looking shows the box
    r[s, 1 + s] = r[n + s, 1 + s] = 1.0
T[:, z, z] = 1.0
b0 = np.r_[np.full(n, 1.0 / n), np.zeros(n + 1)]
model = POMDP(T, Z, r, g, b0=b0)
solver = PointBasedSolver(time_limit=20.0, target_gap=1e-7).fit(model)
posteriors = np.eye(S)[n:z]
W = decision_witnesses(posteriors, solver.alphas_)
print(f"V*(b0) in [{solver.lower_bound_:.6f}, {solver.upper_bound_:.6f}]; "
      f"{int(W.sum()) // 2} of {n * (n - 1) // 2} posterior pairs are decision witnesses")

# %%
# Experiment 1: converse against RECAP's loss, per memory size
# -------------------------------------------------------------
Ks = np.arange(1, n + 3)
conv = np.array([converse_lower_bound(model, int(K), solver=solver).bound for K in Ks])
with warnings.catch_warnings():
    # K = 2: RECAP's grown codebook closes with one node (a 2-node controller cannot use a look)
    warnings.filterwarnings("ignore", message=".*more than this model needs", category=UserWarning)
    recap = [RECAPController(n_memory=int(K), random_state=0).fit(model, alphas=solver) for K in Ks]
loss = np.array([solver.upper_bound_ - est.value_ for est in recap])
for K, c, lo, est in zip(Ks, conv, loss, recap):
    print(f"K = {K:2d}: converse {c:.4f} <= best K-node loss <= RECAP loss {lo:.4f}; "
          f"U2 = {est.bound_['U2']:.0f} (trivial {est.bound_['trivial']:.0f})")
assert np.all(conv <= loss + 1e-6), "a controller beat the converse lower bound"
assert np.all(loss - conv <= g / n + 1e-6), "converse and RECAP differ by more than one witness"
assert conv[Ks == n][0] < 1e-6 < conv[Ks == n - 1][0], "the converse must vanish exactly at K = n"

# %%
# Experiment 2 (assumption broken): a codebook that merges decision witnesses
# ----------------------------------------------------------------------------
merged, lost, predicted = np.arange(n // 2 + 1), [], []
for j in merged:
    pairs = [(posteriors[2 * i] + posteriors[2 * i + 1]) / 2 for i in range(j)]
    C = np.vstack([b0, *pairs, *posteriors[2 * j:], np.eye(S)[z]])
    fsc = build_codebook_fsc(model, C, solver.alphas_)
    lost.append(solver.upper_bound_ - evaluate_fsc(model, fsc["action"], fsc["eta"], fsc["m0"]))
    predicted.append(g * sum(merge_cost(posteriors[2 * i:2 * i + 2], [1 / n, 1 / n], solver.alphas_)
                             for i in range(j)))
    print(f"{j} witness pairs merged ({len(C)} codewords): loss {lost[-1]:.4f}, gamma * J = {predicted[-1]:.4f}")
assert np.allclose(lost, predicted, atol=1e-6) and lost[0] < 1e-6 < lost[1], "merge cost does not match loss"

# %%
# Plot
# ----
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4.2))
ax0.fill_between(Ks, conv, loss, step=None, color="C0", alpha=0.15, label="where the best K-node loss lies")
ax0.plot(Ks, loss, "C0o-", label="RECAP's loss (achievable: an upper bound)")
ax0.plot(Ks, conv, "C3s--", label="converse (no K-node controller does better)")
ax0.axvline(n, color="0.5", lw=0.8, ls=":", label=f"K = n = {n}: enough cells for every witness")
ax0.set_xlabel("memory K (controller nodes)")
ax0.set_ylabel(r"loss $V^*(b_0) - V^F(b_0)$")
ax0.set_title(f"Guessing game, n = {n} boxes, discount {g}")
ax0.legend(fontsize=8)
ax1.bar(merged - 0.18, lost, 0.36, color="C0", label="measured loss")
ax1.bar(merged + 0.18, predicted, 0.36, color="C3", alpha=0.6, label=r"$\gamma\,J$ of the merged cells")
ax1.set_xticks(merged)
ax1.set_xlabel("pairs of decision witnesses merged into one codeword")
ax1.set_ylabel("loss")
ax1.set_title("Assumption broken: the codebook merges witnesses")
ax1.legend(fontsize=8)
fig.tight_layout()
fig.savefig("theorem_pomdp_converse.png", dpi=110)
plt.show()
