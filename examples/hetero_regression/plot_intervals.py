r"""
How sure is beta? Confidence intervals when most sources are noise
===================================================================

The front door :class:`~algos.hetero_regression.SubsetOfSignalsRegressor` reports standard
errors (``coef_se_``), intervals (``conf_int(alpha)``) and a statsmodels-style ``summary()``. Huber
and OLS fits use the sandwich (Huber 1967; White 1980; HC1 / HC3 of MacKinnon & White 1985);
window fits a pairs bootstrap of the window refinement (the window's own sandwich needs the
residual density at its edge, which a few hundred reliable rows estimate poorly).

**Simulated subset-of-signals design.** n = 2000 sources, d = 5, m = 2 sqrt(nd) = 200 of them
with noise sigma = 1, the others log-uniform on [10, 1e3]. Over ``R`` replications we draw the
95 % intervals of the front door, of ``HuberSoSRegressor`` (sandwich) and of OLS with HC3
standard errors, and the oracle WLS interval (true variances known, unreachable): coverage and
width per estimator. (statsmodels' RLM + HC3 and OLS + HC3 would be added when statsmodels is
installed; our OLS + HC3 is the same formula.)

**Engel food expenditure** (235 households, shipped with the package): ``foodexp ~ 1 + income``
with ``delta="auto"``; the summary table shows which estimator the front door returned and how
many households it treated as reliable.

Run ``python plot_intervals.py``; it writes ``plot_intervals.png`` (``ALGOS_EXAMPLES_QUICK=1``: fewer
replications).
"""

# %%
# Set-up
# ------
import os
import warnings

import matplotlib.pyplot as plt
import numpy as np

from algos.datasets import load_engel
from algos.hetero_regression import (
    ConvexRegimeWarning,
    HuberSoSRegressor,
    SubsetOfSignalsRegressor,
    make_subset_of_signals,
)

QUICK = os.environ.get("ALGOS_EXAMPLES_QUICK", "0") not in ("", "0")
R = 20 if QUICK else 100

Z = 1.959963984540054  # 97.5 % normal quantile

# %%
# Simulated design: coverage and width over R replications
# --------------------------------------------------------
n, d = 2000, 5
m = int(round(2 * np.sqrt(n * d)))
fits = {
    "front door": lambda X, y: SubsetOfSignalsRegressor().fit(X, y),
    "HuberSoS": lambda X, y: HuberSoSRegressor().fit(X, y),
    "OLS + HC3": lambda X, y: SubsetOfSignalsRegressor(method="ols").fit(X, y),
}
cover = {k: [] for k in [*fits, "oracle WLS"]}
width = {k: [] for k in cover}
first = None
for seed in range(R):
    data = make_subset_of_signals(n, d, m, random_state=seed)
    Xw = data.X / data.sigma[:, None]
    cov_or = np.linalg.inv(Xw.T @ Xw)
    b_or = cov_or @ (Xw.T @ (data.y / data.sigma))
    se_or = np.sqrt(np.diag(cov_or))
    cis = {"oracle WLS": np.column_stack([b_or - Z * se_or, b_or + Z * se_or])}
    for name, fit in fits.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvexRegimeWarning)  # expected on some draws; coverage shows its effect
            cis[name] = fit(data.X, data.y).conf_int(0.05)
    for name, ci in cis.items():
        if np.all(np.isfinite(ci)):
            cover[name].append(np.mean((ci[:, 0] <= data.beta) & (data.beta <= ci[:, 1])))
            width[name].append(np.mean((ci[:, 1] - ci[:, 0]) / (2 * Z * se_or)))
    if first is None:
        first = (data.beta, cis)

print(f"simulated: n={n}, d={d}, m={m}, {R} replications")
for name in cover:
    print(f"  {name:12s} coverage {np.mean(cover[name]):.3f}   width / oracle {np.mean(width[name]):7.2f}")

# %%
# Engel: the summary table
# ------------------------
engel = load_engel()
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvexRegimeWarning)  # Engel has few reliable households; the table shows it
    est = SubsetOfSignalsRegressor(delta="auto", fit_intercept=True).fit(engel.data, engel.target)
print()
print(est.summary(xname=["income"]))

# %%
# Plot: the intervals of the first replication, and coverage / width over all
# ---------------------------------------------------------------------------
beta, cis = first
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
ax = axes[0]
for k, (name, ci) in enumerate(cis.items()):
    pos = np.arange(d) + 0.18 * (k - 1.5)
    ax.errorbar(pos, ci.mean(axis=1), yerr=0.5 * (ci[:, 1] - ci[:, 0]), fmt="o", ms=3, capsize=2, label=name)
ax.scatter(np.arange(d), beta, marker="x", color="k", zorder=5, label="true beta")
ax.set_ylim(beta.min() - 1.0, beta.max() + 1.0)  # OLS's intervals run far beyond
ax.set_xlabel("coordinate")
ax.set_title("95 % intervals, one replication")
ax.legend(fontsize=7)
ax = axes[1]
names = list(cover)
ax.bar(names, [np.mean(width[k]) for k in names], color="C0")
ax.set_yscale("log")
ax.set_ylabel("mean width / oracle WLS width")
for i, k in enumerate(names):
    ax.text(i, np.mean(width[k]), f"cov {np.mean(cover[k]):.2f}", ha="center", va="bottom", fontsize=8)
ax.set_title(f"{R} replications (coverage on the bars)")
fig.tight_layout()
fig.savefig("plot_intervals.png", dpi=90)
print("\nsaved plot_intervals.png")
plt.show()
