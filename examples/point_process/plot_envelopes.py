r"""
Goodness of fit of LGCP hyperparameters: L-function envelopes on real patterns
==============================================================================

Besag's :math:`L(r) = \sqrt{K(r)/\pi}` summarises how many neighbours a typical point has within
distance :math:`r`; a Poisson process has :math:`L(r) = r`. For each shared pattern (bei,
japanesepines, redwood, swedishpines; spatstat.data, GPL >= 2) this script

* estimates :math:`L` with Ripley's isotropic edge correction (:func:`algos.point_process.l_function`);
* fits the LGCP's variance and range by minimum contrast on K (:func:`algos.point_process.lgcp_min_contrast`,
  the method of spatstat's ``kppm``);
* draws the pointwise envelope of 39 simulations of the fitted LGCP (:func:`algos.point_process.envelope`,
  grey) beside the Poisson envelope (dashed band), and prints the global deviation tests' p-values.

What to look for: the clustered patterns (redwood, bei) leave the Poisson band from above; whether the
observed curve stays inside the fitted LGCP's band is the goodness-of-fit check (the printed deviation
test's p-value says how often a simulated curve strays as far). The regular patterns (swedishpines
below r = 10; japanesepines is close to Poisson) collapse the fitted variance to zero, so the two bands
coincide, and swedishpines leaves both from below: no LGCP (a clustering model) fits inhibition. The patterns are read from ``../shared/data/points`` (or ``$ALGOS_SHARED_DATA``); a
simulated pair of patterns replaces them when the folder is absent. ``ALGOS_EXAMPLES_QUICK=1``: 9
simulations and fewer distances.
"""

import math
import os
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from algos.point_process import envelope, lgcp_min_contrast, simulate_lgcp  # noqa: E402

QUICK = os.environ.get("ALGOS_EXAMPLES_QUICK", "") == "1"
N_SIM = 9 if QUICK else 39


def shared_patterns():
    here = Path(__file__).resolve()
    root = Path(os.environ.get("ALGOS_SHARED_DATA", here.parents[2].parent / "shared" / "data")) / "points"
    out = []
    for name in ("bei", "japanesepines", "redwood", "swedishpines"):
        path = root / f"{name}.csv"
        if not path.exists():
            continue
        head = path.open().readline()
        win = tuple(float(v) for pair in re.findall(r"\[([-\d.]+), ([-\d.]+)\]", head) for v in pair)
        out.append((name, np.loadtxt(path, delimiter=",", comments="#"), win))
    if out and QUICK:
        out = [p for p in out if p[0] != "bei"]  # bei's 3604 points make the quick run slow
    if not out:
        for seed, (s2, phi) in enumerate(((2.0, 0.05), (1e-6, 0.1))):
            smp = simulate_lgcp((0, 1, 0, 1), math.log(300) - s2 / 2, s2, phi, grid=64, random_state=seed)
            out.append((f"simulated sigma2={s2:g}", smp.points, (0, 1, 0, 1)))
    return out


patterns = shared_patterns()
fig, axes = plt.subplots(1, len(patterns), figsize=(4.2 * len(patterns), 3.8), squeeze=False)
for ax, (name, X, win) in zip(axes[0], patterns):
    xmin, xmax, ymin, ymax = win
    r = np.linspace(0, 0.25 * min(xmax - xmin, ymax - ymin), 65 if QUICK else 129)
    fit = lgcp_min_contrast(X, win)
    lg = envelope(fit, "L", n_sim=N_SIM, X=X, window=win, r=r, random_state=0)
    po = envelope("poisson", "L", n_sim=N_SIM, X=X, window=win, r=r, random_state=0)
    ax.fill_between(r, lg.lo - r, lg.hi - r, color="0.75", label=f"LGCP envelope ({N_SIM})")
    ax.plot(r, po.lo - r, "k--", lw=0.8, label="Poisson envelope")
    ax.plot(r, po.hi - r, "k--", lw=0.8)
    ax.plot(r, lg.observed - r, "C3", lw=1.5, label="observed")
    ax.axhline(0, color="k", lw=0.5)
    ax.set_title(f"{name} (n={len(X)})\nsigma2={fit.variance:.2g}, range={fit.length_scale:.2g}", fontsize=9)
    ax.set_xlabel("r")
    print(f"{name}: n = {len(X)}, min-contrast sigma2 = {fit.variance:.3g}, range = {fit.length_scale:.3g}; "
          f"deviation test p-value: Poisson {po.p_value:.3f}, fitted LGCP {lg.p_value:.3f}")
axes[0][0].set_ylabel("L(r) - r")
axes[0][0].legend(fontsize=7, loc="best")
fig.tight_layout()
fig.savefig("lgcp_envelopes.png", dpi=100)
