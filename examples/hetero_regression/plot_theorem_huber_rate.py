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

**Assumption broken: m sufficiently large.** The theorem needs :math:`m \ge C'\sqrt{nd}`. The
right panel takes :math:`m` from :math:`\sqrt{nd}/2` up to the regime threshold: below about
:math:`1.5\sqrt{nd}` the convex estimator runs off to an error of the order of the noisy sigmas,
thousands of times the bound, and the fit itself warns with
:class:`algos.hetero_regression.ConvexRegimeWarning` (Compton & Schramm 2026 prove that no convex
M-estimator can do better there).
"""

# %%
# Set-up
# ------
import os
import warnings

import matplotlib.pyplot as plt
import numpy as np

from algos.hetero_regression import ConvexRegimeWarning, HuberSoSRegressor, make_subset_of_signals
from theory.hetero_regression import huber_error_bound, huber_regime_threshold, oracle_floor

QUICK = os.environ.get("ALGOS_EXAMPLES_QUICK", "0") not in ("", "0")
n, d = (4000, 3) if QUICK else (20000, 5)
reps = 10 if QUICK else 20
m0 = int(np.ceil(huber_regime_threshold(n, d)))
ms = np.unique(np.geomspace(m0, min(n // 2, 8 * m0), 5 if QUICK else 6).astype(int))


def huber_errors(m, seed):
    """Errors of Huber over ``reps`` draws with m reliable sources, and how many fits warned."""
    errs, n_warned = np.empty(reps), 0
    for r in range(reps):
        data = make_subset_of_signals(n, d, int(m), noisy_sigma=("constant", 1e5), random_state=seed + r)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvexRegimeWarning)  # expected below the regime: counted, not shown
            beta = HuberSoSRegressor(delta=1.0).fit(data.X, data.y).coef_
        n_warned += any(issubclass(w.category, ConvexRegimeWarning) for w in caught)
        errs[r] = np.linalg.norm(beta - data.beta)
    return errs, n_warned


# %%
# Experiment: error of Huber against m, inside the regime
# --------------------------------------------------------
errors = np.empty((len(ms), reps))
for i, m in enumerate(ms):
    errors[i], _ = huber_errors(m, 1000 * i)
    print(f"m = {m:5d}: median error {np.median(errors[i]):.4f}, bound {huber_error_bound(n, d, int(m)):.4f}, "
          f"{np.mean(errors[i] <= huber_error_bound(n, d, int(m))):.0%} of draws below it")

slope = np.polyfit(np.log(ms), np.log(np.median(errors, axis=1)), 1)[0]
below = np.mean(errors <= np.array([huber_error_bound(n, d, int(m)) for m in ms])[:, None])
print(f"log-log slope of the median error against m: {slope:.2f} (theory: -1); "
      f"{below:.0%} of all draws below the bound")
# high probability: most draws below the bound, and the rate 1/m within a band that rejects 1/m^2 and 1/sqrt(m)
assert below >= 0.8, f"only {below:.0%} of the draws are below the Huber bound"
assert -1.4 <= slope <= -0.6, f"log-log slope {slope:.2f} is not the rate 1/m"

# %%
# Assumption broken: m below the regime
# -------------------------------------
ms_low = np.unique(np.geomspace(np.sqrt(n * d) / 2, m0, 5).astype(int))
errors_low, warned = np.empty((len(ms_low), reps)), []
for i, m in enumerate(ms_low):
    errors_low[i], n_warned = huber_errors(m, 50_000 + 1000 * i)
    warned.append(n_warned)
    print(f"m = {m:5d} = {m / np.sqrt(n * d):.2f} sqrt(nd): median error {np.median(errors_low[i]):10.3f}, "
          f"bound {huber_error_bound(n, d, int(m)):.3f}, {n_warned} of {reps} fits warned")
assert np.median(errors_low[0]) > 10 * huber_error_bound(n, d, int(ms_low[0])), "m = sqrt(nd)/2 should break Huber"

# %%
# Plot: measured errors against the bound, inside and below the regime
# --------------------------------------------------------------------
grid = np.unique(np.geomspace(ms[0], ms[-1], 60).astype(int))
fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
for r in range(reps):
    ax.plot(ms, errors[:, r], "o", color="C0", alpha=0.35, ms=4, label="one seed" if r == 0 else None)
ax.plot(ms, np.median(errors, axis=1), "C0-", lw=2, label=f"median error (slope {slope:.2f})")
ax.plot(grid, [huber_error_bound(n, d, int(g)) for g in grid], "k--", label=r"bound $3\sqrt{nd}/m$ (high probability)")
ax.plot(grid, [oracle_floor(d, int(g)) for g in grid], "k:",
        label=r"oracle floor $\sqrt{d/m}$ (knowing the reliable set)")
ax.set_title(f"Huber, sign-only regime, n = {n}, d = {d}")
ax.legend(fontsize=8)
for r in range(reps):
    ax2.plot(ms_low, errors_low[:, r], "o", color="C3", alpha=0.35, ms=4, label="one seed" if r == 0 else None)
ax2.plot(ms_low, np.median(errors_low, axis=1), "C3-", lw=2, label="median error")
ax2.plot(ms_low, [huber_error_bound(n, d, int(m)) for m in ms_low], "k--", label=r"bound $3\sqrt{nd}/m$")
ax2.axvline(np.sqrt(n * d), color="0.5", ls=":", label=r"$m = \sqrt{nd}$")
ax2.set_title("Assumption broken: m below the regime")
ax2.legend(fontsize=8)
for a in (ax, ax2):
    a.set_xscale("log")
    a.set_yscale("log")
    a.set_xlabel("number of reliable sources m")
ax.set_ylabel(r"$\|\hat\beta - \beta^*\|_2$")
fig.tight_layout()
fig.savefig("theorem_hetero_regression.png", dpi=110)
plt.show()
