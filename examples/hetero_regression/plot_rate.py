r"""
The sqrt(nd)/m rate of heteroskedastic regression with m reliable sources
=========================================================================

In the *subset-of-signals* model every source ``i`` gives one sample
:math:`y_i = x_i^\top\beta^* + \varepsilon_i` with :math:`\varepsilon_i \sim N(0, \sigma_i^2)`;
only an unknown set of ``m`` sources has :math:`\sigma_i \le 1` and the others can be arbitrarily
noisy. The estimator sees ``(X, y)`` only. The Huber loss with a **fixed** threshold
:math:`\delta = 1` reaches

.. math:: \|\hat\beta - \beta^*\|_2 \lesssim \sqrt{nd}/m
   \qquad (m \gtrsim \sqrt{nd}),

(:func:`theory.hetero_regression.sos_rate`; d'Orsi, Novikov & Steurer 2021), while knowing the
reliable set would give :math:`\sqrt{d/m}` (:func:`theory.hetero_regression.oracle_floor`).

This script draws data in the *sign-only* layout (σ_i = 1 on the m reliable sources and
σ_i = 1e5 elsewhere: the noisy rows carry essentially only the sign of their residual, the
hardest case for Huber), Gaussian design, ``n = 20000``, ``d = 5``, and plots the median error
over seeds against ``m`` on log-log axes for

``HuberSoSRegressor(delta=1)`` (the main estimator), ``CoordinateMedianRegressor`` (the dNS21
coordinate-median reduction), ``LADRegressor`` (exact LP), ordinary least squares, scikit-learn's
``HuberRegressor`` (its *jointly estimated* scale is inflated by the noisy sources, so it is far
from fixed-δ Huber) and the oracle weighted least squares (weights :math:`1/\sigma_i^2`, not reachable),

with the reference line :math:`\sqrt{nd}/m` and the floor :math:`\sqrt{d/m}`. The slope of each
curve (least squares on log error vs log m) is printed with the table: the theory says -1 for
the robust estimators, -1/2 for the oracle.

Run ``python plot_rate.py``; it writes ``plot_rate.png``. ``ALGOS_EXAMPLES_QUICK=1`` selects
the quick mode (n = 4000, 5 seeds, a few seconds).
"""

# %%
# Set-up: quick mode, fixed seed
# ------------------------------
import os
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import HuberRegressor, LinearRegression

from algos.hetero_regression import (
    ConvexRegimeWarning,
    CoordinateMedianRegressor,
    HuberSoSRegressor,
    LADRegressor,
    make_subset_of_signals,
    oracle_wls,
)
from theory.hetero_regression import oracle_floor, sos_rate

QUICK = os.environ.get("ALGOS_EXAMPLES_QUICK", "0") not in ("", "0")

SEED, D, NOISY_SIGMA = 2026, 5, 1e5  # sign-only layout
N, MS, N_SEEDS = (4_000, (400, 800, 1600, 3200), 5) if QUICK else (20_000, (1000, 2000, 4000, 8000, 16000), 8)
t_start = time.perf_counter()

# %%
# The estimators
# --------------
# Every estimator is a function ``(X, y, sigma) -> coef``; only the oracle uses ``sigma``. No
# intercept: the model has none.
ESTIMATORS = {
    "HuberSoS (delta=1)": lambda X, y, s: HuberSoSRegressor(delta=1.0).fit(X, y).coef_,
    "CoordinateMedian": lambda X, y, s: CoordinateMedianRegressor().fit(X, y).coef_,
    "LAD": lambda X, y, s: LADRegressor().fit(X, y).coef_,
    "OLS": lambda X, y, s: LinearRegression(fit_intercept=False).fit(X, y).coef_,
    "sklearn HuberRegressor": lambda X, y, s: HuberRegressor(max_iter=1000, fit_intercept=False).fit(X, y).coef_,
    "oracle WLS": lambda X, y, s: oracle_wls(X, y, s),
}
STYLE = {
    "HuberSoS (delta=1)": dict(color="tab:blue", marker="o", linewidth=2.2),
    "CoordinateMedian": dict(color="tab:green", marker="s"),
    "LAD": dict(color="tab:orange", marker="^"),
    "OLS": dict(color="tab:red", marker="x"),
    "sklearn HuberRegressor": dict(color="tab:purple", marker="v"),
    "oracle WLS": dict(color="k", marker="D", markersize=4),
}

# %%
# The experiment
# --------------
# The same data sets (one per seed and m) for every estimator; medians over seeds.
errors = {name: np.empty((len(MS), N_SEEDS)) for name in ESTIMATORS}
fit_time = {name: 0.0 for name in ESTIMATORS}
for i, m in enumerate(MS):
    for k in range(N_SEEDS):
        data = make_subset_of_signals(N, D, m, noisy_sigma=NOISY_SIGMA, random_state=SEED + 1000 * i + k)
        for name, fit in ESTIMATORS.items():
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                # expected at small m: sklearn's Huber hits max_iter, HuberSoS warns of the convex regime
                warnings.simplefilter("ignore", ConvergenceWarning)
                warnings.simplefilter("ignore", ConvexRegimeWarning)
                coef = np.asarray(fit(data.X, data.y, data.sigma), dtype=float)
            fit_time[name] += time.perf_counter() - t0
            errors[name][i, k] = np.linalg.norm(coef - data.beta)
median = {name: np.median(e, axis=1) for name, e in errors.items()}
rate, floor = np.array([sos_rate(N, D, m) for m in MS]), np.array([oracle_floor(D, m) for m in MS])


def slope(values):
    """Least-squares slope of log(values) against log(m)."""
    return float(np.polyfit(np.log(MS), np.log(values), 1)[0])


# %%
# The table
# ---------
# Median error over seeds, its ratio to sqrt(nd)/m in brackets, the log-log slope in m and the
# mean time of one fit.
print(f"n = {N}, d = {D}, noisy sigma = {NOISY_SIGMA:g} (sign-only), {N_SEEDS} seeds per m, "
      f"{'quick' if QUICK else 'full'} mode\n")
header = ["estimator"] + [f"m={m}" for m in MS] + ["slope in m", "s/fit"]
print("| " + " | ".join(header) + " |")
print("|" + "|".join("---" for _ in header) + "|")
print("| sqrt(nd)/m | " + " | ".join(f"{r:.3g}" for r in rate) + f" | {slope(rate):.2f} | |")
print("| sqrt(d/m) (oracle floor) | " + " | ".join(f"{f:.3g}" for f in floor) + f" | {slope(floor):.2f} | |")
for name in ESTIMATORS:
    cells = [f"{e:.3g} ({e / r:.2f})" for e, r in zip(median[name], rate)]
    print(f"| {name} | " + " | ".join(cells) + f" | {slope(median[name]):.2f} | "
          f"{fit_time[name] / (len(MS) * N_SEEDS):.3g} |")
assert -1.5 <= slope(median["HuberSoS (delta=1)"]) <= -0.6, "HuberSoS does not follow the rate sqrt(nd)/m"

# %%
# The figure
# ----------
# Log-log axes: slope -1 is the sqrt(nd)/m rate, -1/2 the oracle floor; OLS sits far above (noisy sigma).
fig, ax = plt.subplots(figsize=(8, 6))
ax.plot(MS, rate, color="grey", linestyle="--", linewidth=1.5, label=r"$\sqrt{nd}/m$ (rate)")
ax.plot(MS, floor, color="grey", linestyle=":", linewidth=1.5, label=r"$\sqrt{d/m}$ (oracle floor)")
for name in ESTIMATORS:
    q25, q75 = np.percentile(errors[name], [25, 75], axis=1)
    ax.plot(MS, median[name], label=f"{name} (slope {slope(median[name]):.2f})", **STYLE[name])
    ax.fill_between(MS, q25, q75, color=STYLE[name]["color"], alpha=0.12, linewidth=0)
ax.set(xscale="log", yscale="log", xlabel="m (number of sources with sigma <= 1)",
       ylabel=r"$\|\hat\beta - \beta^*\|_2$ (median over seeds; band: quartiles)",
       title=f"Subset-of-signals regression: n = {N}, d = {D}, other sources sigma = 1e5")
ax.grid(alpha=0.3)
ax.legend(fontsize=8, loc="center right")
fig.tight_layout()
fig.savefig("plot_rate.png", dpi=120)
print(f"\nsaved plot_rate.png ({time.perf_counter() - t_start:.1f} s)")
plt.show()
