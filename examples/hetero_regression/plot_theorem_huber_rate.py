r"""
Theorem in practice: Huber regression reaches the rate sqrt(nd)/m
==================================================================

**Statement** (d'Orsi, Novikov & Steurer 2021, as used by the subset-of-signals paper). Among
:math:`n` sources, each giving one measurement :math:`y_i = x_i^\top\beta^* + \sigma_i\xi_i`, only
:math:`m` have :math:`\sigma_i \le 1`; the others may be arbitrarily noisy. With a Gaussian design
and :math:`m \ge C'\sqrt{nd}`, the fixed-threshold Huber estimator satisfies, with high probability,

.. math:: \|\hat\beta - \beta^*\|_2 \le C\,\frac{\sqrt{nd}}{m}.

The bound is :func:`theory.hetero_regression.huber_error_bound` (kind ``high-probability``; the
constant :math:`C = 3` is calibrated on simulations, not proved) and its regime starts at
:func:`theory.hetero_regression.huber_regime_threshold`.

**Experiment.** Fixed :math:`n` and :math:`d`, a growing number :math:`m` of reliable sources, the
noisy ones at :math:`\sigma = 10^5` (the *sign-only* regime: their residual carries only a sign, the
hardest case for Huber). For each :math:`m` we fit :class:`algos.hetero_regression.HuberSoSRegressor`
on several seeds and record the error.

**What to look for.** The errors lie below the bound and fall like :math:`1/m` (slope -1 on the
log-log plot), parallel to it: the rate is right, and the constant is not far from tight. A bound
with the wrong exponent (:math:`\sqrt{nd}/m^2`, say) would cross the points. Quick mode uses fewer
seeds and sizes.
"""

# %%
# Set-up
# ------
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from algos.hetero_regression import HuberSoSRegressor, make_subset_of_signals  # noqa: E402
from theory.hetero_regression import huber_error_bound, huber_regime_threshold, oracle_floor  # noqa: E402

QUICK = os.environ.get("ALGOS_EXAMPLES_QUICK", "0") not in ("", "0")
n, d = (4000, 3) if QUICK else (20000, 5)
reps = 10 if QUICK else 20
m0 = int(np.ceil(huber_regime_threshold(n, d)))
ms = np.unique(np.geomspace(m0, min(n // 2, 8 * m0), 5 if QUICK else 6).astype(int))

# %%
# Experiment: error of Huber against m
# ------------------------------------
errors = np.empty((len(ms), reps))
for i, m in enumerate(ms):
    for r in range(reps):
        data = make_subset_of_signals(n, d, int(m), noisy_sigma=("constant", 1e5), random_state=1000 * i + r)
        beta = HuberSoSRegressor(delta=1.0).fit(data.X, data.y).coef_
        errors[i, r] = np.linalg.norm(beta - data.beta)
    print(f"m = {m:5d}: median error {np.median(errors[i]):.4f}, bound {huber_error_bound(n, d, int(m)):.4f}, "
          f"{np.mean(errors[i] <= huber_error_bound(n, d, int(m))):.0%} of draws below it")

slope = np.polyfit(np.log(ms), np.log(np.median(errors, axis=1)), 1)[0]
print(f"log-log slope of the median error against m: {slope:.2f} (theory: -1)")

# %%
# Plot: measured errors against the bound
# ---------------------------------------
grid = np.unique(np.geomspace(ms[0], ms[-1], 60).astype(int))
fig, ax = plt.subplots(figsize=(7, 4.2))
for r in range(reps):
    ax.plot(ms, errors[:, r], "o", color="C0", alpha=0.35, ms=4, label="one seed" if r == 0 else None)
ax.plot(ms, np.median(errors, axis=1), "C0-", lw=2, label=f"median error (slope {slope:.2f})")
ax.plot(grid, [huber_error_bound(n, d, int(g)) for g in grid], "k--", label=r"bound $3\sqrt{nd}/m$ (high probability)")
ax.plot(grid, [oracle_floor(d, int(g)) for g in grid], "k:", label=r"oracle floor $\sqrt{d/m}$ (knowing the reliable set)")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("number of reliable sources m")
ax.set_ylabel(r"$\|\hat\beta - \beta^*\|_2$")
ax.set_title(f"Huber, sign-only regime, n = {n}, d = {d}")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig("theorem_hetero_regression.png", dpi=110)
