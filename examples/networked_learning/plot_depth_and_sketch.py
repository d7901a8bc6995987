r"""
Depth helps at rate 1/D, and a shared sketch compresses messages where subsampling fails
========================================================================================

**Left panel: depth.** On the depth-tuned hard instance
:func:`algos.networked_learning.make_krr_hard3` (three features, :math:`\rho^2 = 1/(40D)`, "Optimal
Networks" eq. (5)) a cyclic path of depth ``D`` (agent ``t`` sees feature ``t mod 3``, ``M = 3``)
has excess risk :math:`e_D \approx 0.0116/D` (population engine): the :math:`\Theta(M^2/D)`
worst-case rate. KRR's bound :math:`AB\sqrt{(M-1) e_1/\lfloor D/M\rfloor}`
(:func:`theory.networked_learning.krr_path_bound`) also falls like :math:`1/D` here (:math:`e_1
\propto 1/D` on this instance) but with a much larger constant.

**Right panel: compression.** With the shared-sketch protocol every edge carries ``k`` floats
(``S yhat`` for a shared random ``S``) instead of ``m``. Excess risk of the output agent (end of a
cyclic path of depth 4d, sampled data, median over seeds) against ``k`` for the Gaussian sketch,
shared row subsampling of ``k`` rows, and the full protocol (``k = m``), on two designs:

* a Gaussian AR(1) design (d = 8): sketch and subsampling are of the same order,
  :math:`\sigma^2(d/m + d/(k-d-1))` (consequence of T8 in :doc:`/networked_learning_reconstruction`, dotted);
* the leverage design (d = 6, ``x_1`` nonzero on a fraction ``q = 0.01`` of the rows): a row
  subsample of ``k`` rows sees about ``q k`` informative rows and misses :math:`\beta_1` when
  :math:`qk \lesssim 1`; the oblivious sketch mixes every row into every message and does not care.

Quick mode (``ALGOS_EXAMPLES_QUICK=1``): D up to 300, m = 4000, fewer k and seeds.
"""

# %%
# Set-up: quick mode, fixed seed
# ------------------------------
import os
import warnings

import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np

import algos.networked_learning as nl
from theory.networked_learning import krr_path_bound

QUICK = os.environ.get("ALGOS_EXAMPLES_QUICK", "0") not in ("", "0")
SEED = 2026
if QUICK:
    DEPTHS = np.unique(np.round(np.logspace(np.log10(3), np.log10(300), 8)).astype(int))
    M_SAMPLES, KS, N_SEEDS = 4000, (25, 50, 100, 200, 400, 800), 3
else:
    DEPTHS = np.unique(np.round(np.logspace(np.log10(3), 3, 15)).astype(int))
    M_SAMPLES, KS, N_SEEDS = 20_000, (25, 50, 100, 200, 400, 800, 1600), 7

# %%
# Depth on the hard instance (population engine)
# ----------------------------------------------
# ``population_fit`` runs the protocol on the exact moments (whitened QR engine: the Gram-matrix
# normal equations would square the condition number and overestimate e_D).
depth_rows = []
for D in map(int, DEPTHS):
    model, G = nl.make_krr_hard3(D), nl.make_path(D)
    betas = nl.population_fit(G, nl.cyclic_allocation(G, 3), model.Sigma, model.b)
    e1, eD = (nl.excess_risk(betas[v], model.Sigma, model.beta_star) for v in (0, D - 1))
    A, B = float(np.abs(model.beta_star).sum()), float(np.sqrt(np.max(np.diag(model.Sigma))))
    depth_rows.append((D, eD, krr_path_bound(e1, A, B, 3, D)))
D_arr, eD_arr, bound_arr = (np.array(col, dtype=float) for col in zip(*depth_rows))
slope_D = float(np.polyfit(np.log(D_arr), np.log(eD_arr), 1)[0])

print(f"Depth on make_krr_hard3(D), cyclic path, M = 3 ({'quick' if QUICK else 'full'} mode)\n")
print("| D | e_D | e_D * D | KRR bound | bound / e_D |")
print("|---|---|---|---|---|")
for D, eD, b in depth_rows:
    print(f"| {D} | {eD:.3e} | {eD * D:.4f} | {b:.3e} | {b / eD:.0f} |")
print(f"\nlog-log slope of e_D in D: {slope_D:.3f} (theory: -1)\n")

# %%
# Sketch size vs row subsampling (sampled data)
# ---------------------------------------------
# The same data sets for every protocol; the sketch/subsample seed changes with the data seed.
# ``engine="coef"`` applies S once to (X, y), which by the reduction lemma gives the same fit as
# literal message passing.
DESIGNS = {
    "Gaussian AR(1), d=8": nl.make_gaussian(8, "ar1", rho=0.5, sigma=1.0),
    "leverage, d=6, q=0.01": nl.make_leverage_design(6, 0.01, sigma=1.0),
}
PROTOCOLS = {
    "Gaussian sketch": {"protocol": "sketch", "sketch": "gaussian", "engine": "coef"},
    "row subsample": {"protocol": "subsample"},
}
curves, means, full_excess = {}, {}, {}
for dname, model in DESIGNS.items():
    G = nl.make_path(4 * model.d)
    fs = nl.cyclic_allocation(G, model.d)
    data = [model.sample(M_SAMPLES, random_state=SEED + s) for s in range(N_SEEDS)]
    full = [nl.NetworkedDAGRegressor(graph=G, feature_sets=fs, fit_intercept=False).fit(X, y).coef_ for X, y in data]
    full_excess[dname] = float(np.median([nl.excess_risk(c, model.Sigma, model.beta_star) for c in full]))
    for pname, kw in PROTOCOLS.items():
        med, avg = [], []
        for k in KS:
            errs = []
            for s, (X, y) in enumerate(data):
                with warnings.catch_warnings():
                    # the smallest k are below the subspace-embedding size on purpose
                    warnings.filterwarnings("ignore", category=nl.SketchSizeWarning)
                    est = nl.NetworkedDAGRegressor(graph=G, feature_sets=fs, k=k, fit_intercept=False,
                                                   random_state=SEED + 31 * s, **kw).fit(X, y)
                errs.append(nl.excess_risk(est.coef_, model.Sigma, model.beta_star))
            med.append(float(np.median(errs)))
            avg.append(float(np.mean(errs)))
        curves[(dname, pname)], means[(dname, pname)] = np.array(med), np.array(avg)

print(f"Excess risk of the output agent vs k (m = {M_SAMPLES}, depth 4d, median of {N_SEEDS} seeds)\n")
print("| design | protocol | " + " | ".join(f"k={k}" for k in KS) + " | full (k=m) |")
print("|---|---|" + "---|" * (len(KS) + 1))
for dname in DESIGNS:
    for pname in PROTOCOLS:
        cells = " | ".join(f"{e:.3e}" for e in curves[(dname, pname)])
        print(f"| {dname} | {pname} | {cells} | {full_excess[dname]:.3e} |")
lev = "leverage, d=6, q=0.01"
print("\nleverage design, means (subsample / sketch): " + ", ".join(
    f"k={k}: {a:.3g} / {b:.3g}" for k, a, b in zip(KS, means[(lev, "row subsample")], means[(lev, "Gaussian sketch")])))
print("chance that a k-row subsample misses every row with x1 != 0, (1-q)^k: " + ", ".join(
    f"k={k}: {(1 - 0.01) ** k:.2f}" for k in KS))

# %%
# The figure
# ----------
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
ax1.loglog(D_arr, eD_arr, "C0o-", label=f"$e_D$, cyclic path (slope {slope_D:.2f})")
ax1.loglog(D_arr, 0.0116 / D_arr, "k:", label="0.0116 / D")
ax1.loglog(D_arr, bound_arr, "C3--", label="KRR bound $AB\\sqrt{(M-1)e_1/\\lfloor D/M\\rfloor}$")
ax1.set(xlabel="depth D (agents on the path; M = 3)", ylabel="excess risk (population)",
        title="Depth on the hard instance make_krr_hard3(D)")
ax1.grid(alpha=0.3, which="both")
ax1.legend(fontsize=8)
colors = {"Gaussian AR(1), d=8": "C0", lev: "C1"}
for dname, model in DESIGNS.items():
    c = colors[dname]
    ax2.loglog(KS, curves[(dname, "Gaussian sketch")], "o-", color=c, label=f"{dname}: Gaussian sketch")
    ax2.loglog(KS, curves[(dname, "row subsample")], "s--", color=c, mfc="none", label=f"{dname}: row subsample")
    ax2.axhline(full_excess[dname], color=c, lw=0.8, ls="-.", label=f"{dname}: full (k = m)")
    if dname.startswith("Gaussian"):
        t8 = [model.noise_var * (model.d / M_SAMPLES + model.d / (k - model.d - 1)) for k in KS]
        ax2.loglog(KS, t8, ":", color="k", label=r"T8: $\sigma^2(d/m + d/(k-d-1))$, d = 8")
ax2.loglog(KS, means[(lev, "row subsample")], "s:", color="C1", lw=0.9, ms=3, label=f"{lev}: row subsample (mean)")
ax2.set_xticks(KS, [str(k) for k in KS])
ax2.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
ax2.set(xlabel="floats per edge k", ylabel="excess risk of the output agent (median)",
        title=f"Compression vs subsampling, m = {M_SAMPLES}")
ax2.grid(alpha=0.3, which="both")
ax2.legend(fontsize=7, loc="lower left")
fig.tight_layout()
fig.savefig("plot_depth_and_sketch.png", dpi=120)
plt.show()
