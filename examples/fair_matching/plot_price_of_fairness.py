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

No non-wasteful algorithm can do much better: an :math:`\alpha`-CEF algorithm has USW at most
:math:`(1+\alpha-e^{\alpha-1})/(1+\alpha)` on some instances
(:func:`theory.fair_matching.usw_upper_bound`), which improves the prior bound
:math:`1/(1+\alpha)` (:func:`theory.fair_matching.prior_usw_upper_bound`).

This script measures the **worst** USW ratio and CEF ratio of the algorithm, for ``gamma`` on a
grid, over three families of instances:

1. a batch of small random instances (2-8 agents, 1-10 items, 2-4 classes);
2. instances found by a hill-climbing adversary that mutates edges, arrival order and classes to
   push each ratio down (:func:`algos.fair_matching.hill_climb_instance`);
3. structured instances: the KVV upper triangle and the upper-bound family UB(alpha, n, k).

and draws them next to the guarantees (left) and in the USW-vs-CEF plane (right).

Reading the right panel: the measured point for ``gamma`` is (worst CEF, worst USW) over the
instances tried, each minimum taken separately. The upper-bound frontier says that *some*
instance pushes any :math:`\alpha`-CEF algorithm below it, so measured points above the
frontier are no contradiction; points *below the guaranteed curve* would be. Likewise no
non-wasteful divisible algorithm is more than 0.677-CEF on every instance [H24] (shaded), so a
measured worst CEF beyond that only shows that the search did not find the hard instance.

Run ``python plot_price_of_fairness.py``; it writes ``plot_price_of_fairness.png``.
``ALGOS_EXAMPLES_QUICK=1`` selects the quick mode (a few seconds).
"""

# %%
# Set-up: command line, quick mode, fixed seed
# --------------------------------------------
import os
import time

import matplotlib.pyplot as plt
import numpy as np

from algos.fair_matching import (
    ThresholdEqualFilling,
    random_instance,
    triangular_instance,
    upper_bound_instance,
)
from algos.fair_matching import hill_climb_instance
from algos.fair_matching.metrics import cef_ratio, usw_ratio
from theory.fair_matching import (
    cef_lower_bound,
    known_bound,
    prior_usw_upper_bound,
    usw_lower_bound,
    usw_upper_bound,
)

QUICK = os.environ.get("ALGOS_EXAMPLES_QUICK", "0") not in ("", "0")

SEED = 2026
TOL = 1e-7  # exact pour: only float round-off (fair_matching reconstruction notes, section 2, T1/T2 tests)
if QUICK:
    GAMMAS = np.linspace(0.0, 1.0, 5)
    N_RANDOM, N_CLIMBS, N_STEPS = 60, 2, 40
    UB_ALPHAS, UB_N, UB_K, TRI_N = (0.5, 1.0), 8, 4, 30
else:
    GAMMAS = np.linspace(0.0, 1.0, 11)
    N_RANDOM, N_CLIMBS, N_STEPS = 400, 4, 200
    UB_ALPHAS, UB_N, UB_K, TRI_N = (0.25, 0.5, 0.75, 1.0), 12, 6, 100
t_start = time.perf_counter()

# %%
# The instances
# -------------
# One batch of random instances, reused for every ``gamma`` (common random numbers make the
# curves comparable). Sizes and edge densities follow the property tests of the module.
rng = np.random.default_rng(SEED)
random_batch = []
for _ in range(N_RANDOM):
    n = int(rng.integers(2, 9))
    m = int(rng.integers(1, 11))
    k = int(rng.integers(2, min(4, n) + 1))
    p = float(rng.uniform(0.2, 0.9))
    random_batch.append(random_instance(n, m, n_classes=k, p=p, random_state=rng))

structured = [triangular_instance(TRI_N, n_classes=2)]
structured += [upper_bound_instance(a, UB_N, UB_K) for a in UB_ALPHAS]


def ratios(gamma, inst):
    """(USW ratio, CEF ratio) of ThresholdEqualFilling(gamma) on one instance."""
    X = ThresholdEqualFilling(gamma=gamma).fit(inst).allocation_
    return usw_ratio(inst, X), cef_ratio(inst, X)


def climb(gamma, which, seed):
    """Worst ratio ``which`` in {"usw", "cef"} that a hill-climbing adversary finds."""
    metric = usw_ratio if which == "usw" else cef_ratio
    sizes = [(5, 6, 2), (6, 8, 2), (6, 8, 3), (7, 9, 3)]
    n, m, k = sizes[seed % len(sizes)]

    def objective(inst):
        return metric(inst, ThresholdEqualFilling(gamma=gamma).fit(inst).allocation_)

    _, value, _ = hill_climb_instance(objective, n, m, k, n_steps=N_STEPS, random_state=seed)
    return value


# %%
# Measure the worst cases
# -----------------------
# ``worst[family][metric]`` holds one minimum per ``gamma``.
families = ("random", "hill-climbed", "structured")
worst = {f: {"usw": np.empty(GAMMAS.size), "cef": np.empty(GAMMAS.size)} for f in families}
for g_idx, gamma in enumerate(GAMMAS):
    r = np.array([ratios(gamma, inst) for inst in random_batch])
    worst["random"]["usw"][g_idx], worst["random"]["cef"][g_idx] = r.min(axis=0)
    s = np.array([ratios(gamma, inst) for inst in structured])
    worst["structured"]["usw"][g_idx], worst["structured"]["cef"][g_idx] = s.min(axis=0)
    seeds = [SEED + 1000 * g_idx + c for c in range(N_CLIMBS)]
    worst["hill-climbed"]["usw"][g_idx] = min(climb(gamma, "usw", sd) for sd in seeds)
    worst["hill-climbed"]["cef"][g_idx] = min(climb(gamma, "cef", sd) for sd in seeds)

overall = {m: np.min([worst[f][m] for f in families], axis=0) for m in ("usw", "cef")}
usw_bound = usw_lower_bound(GAMMAS)
cef_bound = cef_lower_bound(GAMMAS)

# %%
# The table
# ---------
# ``ok`` checks both guarantees with the tolerance of the exact pour.
print(f"ThresholdEqualFilling (equal_split rule), {'quick' if QUICK else 'full'} mode: "
      f"{N_RANDOM} random + {2 * N_CLIMBS} hill-climbed ({N_STEPS} steps) + {len(structured)} "
      f"structured instances per gamma\n")
header = ("gamma", "USW bound", "worst USW", "(rand/climb/struct)", "CEF bound", "worst CEF",
          "(rand/climb/struct)", "ok")
print("| " + " | ".join(header) + " |")
print("|" + "|".join("---" for _ in header) + "|")
violations = []
for i, gamma in enumerate(GAMMAS):
    ok_u = overall["usw"][i] >= usw_bound[i] - TOL
    ok_c = overall["cef"][i] >= cef_bound[i] - TOL
    if not (ok_u and ok_c):
        violations.append(float(gamma))
    parts = {m: "/".join(f"{worst[f][m][i]:.3f}" for f in families) for m in ("usw", "cef")}
    print(f"| {gamma:.2f} | {usw_bound[i]:.4f} | {overall['usw'][i]:.4f} | {parts['usw']} | "
          f"{cef_bound[i]:.4f} | {overall['cef'][i]:.4f} | {parts['cef']} | "
          f"{'yes' if ok_u and ok_c else 'NO'} |")
if violations:
    print(f"\nWARNING: a guarantee looks violated at gamma = {violations} (see the table).")

# %%
# The figure
# ----------
# Left: the guarantees as lines, the measured worst cases as markers (colour = metric, marker =
# family). Right: the trade-off plane.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 6.2))
markers = {"random": "o", "hill-climbed": "^", "structured": "s"}
colors = {"usw": "tab:blue", "cef": "tab:orange"}
g_fine = np.linspace(0.0, 1.0, 201)
ax1.plot(g_fine, usw_lower_bound(g_fine), color=colors["usw"],
         label=r"USW guarantee $1 - e^{\gamma-1}/(1+\gamma)$")
ax1.plot(g_fine, cef_lower_bound(g_fine), color=colors["cef"], label=r"CEF guarantee $1 - e^{-\gamma}$")
for f in families:
    for m in ("usw", "cef"):
        ax1.plot(GAMMAS, worst[f][m], linestyle="none", marker=markers[f], color=colors[m],
                 markerfacecolor="none" if f != "hill-climbed" else colors[m], alpha=0.85,
                 label=f"worst {m.upper()}, {f}")
ax1.set_xlabel(r"threshold $\gamma$")
ax1.set_ylabel("ratio")
ax1.set_ylim(-0.03, 1.05)
ax1.set_title("Guarantee vs measured worst case")
ax1.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
ax1.grid(alpha=0.3)

alpha = np.linspace(0.0, 1.0, 201)
ax2.plot(cef_lower_bound(g_fine), usw_lower_bound(g_fine), color="k",
         label=r"EFTT guarantee $(1-e^{-\gamma},\ 1-e^{\gamma-1}/(1+\gamma))$")
ax2.plot(alpha, usw_upper_bound(alpha), color="tab:red", linestyle="--",
         label=r"upper bound $(1+\alpha-e^{\alpha-1})/(1+\alpha)$")
ax2.plot(alpha, prior_usw_upper_bound(alpha), color="tab:purple", linestyle=":",
         label=r"prior bound $1/(1+\alpha)$")
ax2.axhline(1 - np.exp(-1), color="grey", linewidth=0.8, linestyle="-.", label=r"$1-1/e$ (no fairness)")
cef_max = known_bound("cef_upper_bound_divisible_h24")  # no non-wasteful algorithm is more CEF
ax2.axvspan(cef_max, 1.02, color="grey", alpha=0.12, linewidth=0,
            label=rf"$\alpha > {cef_max}$: no non-wasteful algorithm guarantees it [H24]")
sc = ax2.scatter(overall["cef"], overall["usw"], c=GAMMAS, cmap="viridis", zorder=3,
                 edgecolor="k", label=r"measured (worst CEF, worst USW) per $\gamma$")
for i, gamma in enumerate(GAMMAS):
    if QUICK or i % 2 == 0:
        ax2.annotate(f"{gamma:.2g}", (overall["cef"][i], overall["usw"][i]), textcoords="offset points",
                     xytext=(4, 4), fontsize=7)
fig.colorbar(sc, ax=ax2, label=r"$\gamma$")
ax2.set_xlabel(r"CEF level $\alpha$")
ax2.set_ylabel("USW ratio")
ax2.set_xlim(-0.02, 1.02)
ax2.set_ylim(0.45, 1.02)
ax2.set_title("The USW-vs-CEF trade-off")
ax2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
ax2.grid(alpha=0.3)
fig.suptitle("Threshold equal-filling: the price of class fairness")
fig.tight_layout()
fig.savefig("plot_price_of_fairness.png", dpi=120)
print(f"\nsaved plot_price_of_fairness.png ({time.perf_counter() - t_start:.1f} s)")
plt.show()
