r"""
The price of fairness: welfare and class envy-freeness of threshold equal-filling
=================================================================================

Threshold equal-filling (``ThresholdEqualFilling(gamma)``, "EFTT") pours every arriving item
into the classes *equally* while its neighbours sit below the level ``gamma``, and into the
emptiest agents (water-filling) afterwards. The threshold trades two guarantees that hold on
**every** instance and arrival order:

* welfare (USW): :math:`\mathrm{ALG} \ge (1 - e^{\gamma-1}/(1+\gamma))\,\mathrm{OPT}`
  (:func:`theory.fair_matching.usw_lower_bound`), from :math:`1-1/e` at ``gamma = 0`` down to 1/2;
* class envy-freeness (CEF): :math:`u_i(X_i) \ge (1-e^{-\gamma})\,u_i(X_j)`
  (:func:`theory.fair_matching.cef_lower_bound`), from 0 up to :math:`1-1/e`.

No non-wasteful :math:`\alpha`-CEF algorithm beats :math:`(1+\alpha-e^{\alpha-1})/(1+\alpha)` on every
instance (:func:`theory.fair_matching.usw_upper_bound`; prior bound :math:`1/(1+\alpha)`).

This script measures the **worst** USW and CEF ratios, for ``gamma`` on a grid, over small random
instances, instances found by a hill-climbing adversary
(:func:`algos.fair_matching.hill_climb_instance`) and structured ones (the KVV triangle, the
upper-bound family UB(alpha, n, k)), next to the guarantees (left) and in the USW-vs-CEF plane (right).

In the right panel each point is (worst CEF, worst USW) per ``gamma``, each minimum taken
separately. The upper-bound frontier says that *some* instance pushes any :math:`\alpha`-CEF
algorithm below it, so points above it are no contradiction; points *below the guaranteed curve*
would be. No non-wasteful divisible algorithm is more than 0.677-CEF on every instance [H24]
(shaded): a worst CEF beyond that only shows that the search missed the hard instance.

Run ``python plot_price_of_fairness.py``; it writes ``plot_price_of_fairness.png``.
``ALGOS_EXAMPLES_QUICK=1`` selects the quick mode (a few seconds).
"""

# %%
# Set-up: quick mode, fixed seed
# ------------------------------
import os

import matplotlib.pyplot as plt
import numpy as np

from algos.fair_matching import (
    ThresholdEqualFilling,
    cef_ratio,
    hill_climb_instance,
    random_instance,
    triangular_instance,
    upper_bound_instance,
    usw_ratio,
)
from theory.fair_matching import cef_lower_bound, known_bound, prior_usw_upper_bound, usw_lower_bound, usw_upper_bound

QUICK = os.environ.get("ALGOS_EXAMPLES_QUICK", "0") not in ("", "0")

SEED = 2026
TOL = 1e-7  # exact pour: only float round-off (fair_matching reconstruction notes, section 2, T1/T2 tests)
GAMMAS = np.linspace(0.0, 1.0, 5 if QUICK else 11)
N_RANDOM, N_CLIMBS, N_STEPS = (60, 2, 40) if QUICK else (400, 4, 200)
UB_ALPHAS, UB_N, UB_K, TRI_N = ((0.5, 1.0), 8, 4, 30) if QUICK else ((0.25, 0.5, 0.75, 1.0), 12, 6, 100)

# %%
# The instances
# -------------
# One batch of random instances, reused for every ``gamma`` (common random numbers make the
# curves comparable). Sizes and edge densities follow the property tests of the module.
rng = np.random.default_rng(SEED)
sizes = [(int(n), int(rng.integers(1, 11)), int(rng.integers(2, min(4, n) + 1)))
         for n in rng.integers(2, 9, N_RANDOM)]
random_batch = [random_instance(n, m, n_classes=k, p=float(rng.uniform(0.2, 0.9)), random_state=rng)
                for n, m, k in sizes]

structured = [triangular_instance(TRI_N, n_classes=2)] + [upper_bound_instance(a, UB_N, UB_K) for a in UB_ALPHAS]


def ratios(gamma, inst):
    """(USW ratio, CEF ratio) of ThresholdEqualFilling(gamma) on one instance."""
    X = ThresholdEqualFilling(gamma=gamma).fit(inst).allocation_
    return usw_ratio(inst, X), cef_ratio(inst, X)


def climb(gamma, which, seed):
    """Worst ratio ``which`` in {"usw", "cef"} that a hill-climbing adversary finds."""
    metric = usw_ratio if which == "usw" else cef_ratio
    n, m, k = [(5, 6, 2), (6, 8, 2), (6, 8, 3), (7, 9, 3)][seed % 4]

    def objective(inst):
        return metric(inst, ThresholdEqualFilling(gamma=gamma).fit(inst).allocation_)
    _, value, _ = hill_climb_instance(objective, n, m, k, n_steps=N_STEPS, random_state=seed)
    return value


# %%
# Measure the worst cases
# -----------------------
families = ("random", "hill-climbed", "structured")
worst = {f: {"usw": np.empty(GAMMAS.size), "cef": np.empty(GAMMAS.size)} for f in families}
for g_idx, gamma in enumerate(GAMMAS):
    for f, batch in (("random", random_batch), ("structured", structured)):
        worst[f]["usw"][g_idx], worst[f]["cef"][g_idx] = np.min([ratios(gamma, inst) for inst in batch], axis=0)
    for m in ("usw", "cef"):
        worst["hill-climbed"][m][g_idx] = min(climb(gamma, m, SEED + 1000 * g_idx + c) for c in range(N_CLIMBS))

overall = {m: np.min([worst[f][m] for f in families], axis=0) for m in ("usw", "cef")}
usw_bound, cef_bound = usw_lower_bound(GAMMAS), cef_lower_bound(GAMMAS)

# %%
# The worst cases against the guarantees
# --------------------------------------
# Both guarantees hold on every instance, up to the float round-off of the exact pour.
print(f"ThresholdEqualFilling, {N_RANDOM} random + {2 * N_CLIMBS} hill-climbed ({N_STEPS} steps) + "
      f"{len(structured)} structured instances per gamma")
for i, gamma in enumerate(GAMMAS):
    print(f"gamma = {gamma:.2f}: worst USW {overall['usw'][i]:.4f} >= {usw_bound[i]:.4f}, "
          f"worst CEF {overall['cef'][i]:.4f} >= {cef_bound[i]:.4f}")
assert np.all(overall["usw"] >= usw_bound - TOL), "welfare guarantee violated"
assert np.all(overall["cef"] >= cef_bound - TOL), "envy-freeness guarantee violated"

# %%
# The figure
# ----------
# Left: guarantees as lines, worst cases as markers (colour = metric, marker = family). Right: trade-off.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 6.2))
markers = {"random": "o", "hill-climbed": "^", "structured": "s"}
colors = {"usw": "tab:blue", "cef": "tab:orange"}
g_fine = np.linspace(0.0, 1.0, 201)
ax1.plot(g_fine, usw_lower_bound(g_fine), color=colors["usw"], label=r"USW guarantee $1 - e^{\gamma-1}/(1+\gamma)$")
ax1.plot(g_fine, cef_lower_bound(g_fine), color=colors["cef"], label=r"CEF guarantee $1 - e^{-\gamma}$")
for f in families:
    for m in ("usw", "cef"):
        ax1.plot(GAMMAS, worst[f][m], linestyle="none", marker=markers[f], color=colors[m],
                 markerfacecolor="none" if f != "hill-climbed" else colors[m], alpha=0.85,
                 label=f"worst {m.upper()}, {f}")
ax1.set(xlabel=r"threshold $\gamma$", ylabel="ratio", ylim=(-0.03, 1.05), title="Guarantee vs measured worst case")

alpha = np.linspace(0.0, 1.0, 201)
ax2.plot(cef_lower_bound(g_fine), usw_lower_bound(g_fine), color="k",
         label=r"EFTT guarantee $(1-e^{-\gamma},\ 1-e^{\gamma-1}/(1+\gamma))$")
ax2.plot(alpha, usw_upper_bound(alpha), "--", color="tab:red",
         label=r"upper bound $(1+\alpha-e^{\alpha-1})/(1+\alpha)$")
ax2.plot(alpha, prior_usw_upper_bound(alpha), ":", color="tab:purple", label=r"prior bound $1/(1+\alpha)$")
ax2.axhline(1 - np.exp(-1), color="grey", linewidth=0.8, linestyle="-.", label=r"$1-1/e$ (no fairness)")
cef_max = known_bound("cef_upper_bound_divisible_h24")  # no non-wasteful algorithm is more CEF
ax2.axvspan(cef_max, 1.02, color="grey", alpha=0.12, linewidth=0,
            label=rf"$\alpha > {cef_max}$: no non-wasteful algorithm guarantees it [H24]")
sc = ax2.scatter(overall["cef"], overall["usw"], c=GAMMAS, cmap="viridis", zorder=3,
                 edgecolor="k", label=r"measured (worst CEF, worst USW) per $\gamma$")
fig.colorbar(sc, ax=ax2, label=r"$\gamma$")
ax2.set(xlabel=r"CEF level $\alpha$", ylabel="USW ratio", xlim=(-0.02, 1.02), ylim=(0.45, 1.02),
        title="The USW-vs-CEF trade-off")
for ax in (ax1, ax2):
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
    ax.grid(alpha=0.3)
fig.suptitle("Threshold equal-filling: the price of class fairness")
fig.tight_layout()
fig.savefig("plot_price_of_fairness.png", dpi=120)
print("\nsaved plot_price_of_fairness.png")
plt.show()
