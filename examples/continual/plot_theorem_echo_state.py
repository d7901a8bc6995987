r"""
Theorem in practice: a leaky reservoir forgets its initial state at a guaranteed rate
======================================================================================

**Statement** (the echo-state property, as used by CIRCLE's reservoirs). A leaky reservoir updates
its state as

.. math:: h_t = (1-a)\,h_{t-1} + a\,f(W h_{t-1} + W_{in} u_t),

with leak :math:`a \in (0, 1]` and a 1-Lipschitz activation :math:`f` (tanh, ReLU, leaky ReLU).
If the recurrent matrix has spectral *norm* :math:`\|W\|_2 = \sigma < 1`, two runs on the same
input from different initial states satisfy

.. math:: \|h_t - h'_t\| \le \big((1-a) + a\sigma\big)^t\,\|h_0 - h'_0\|.

The bound is :func:`theory.continual.esn_contraction_bound` (kind ``exact``). It is why CIRCLE's
features do not depend on the reservoir's start: the state is a function of the recent input.

**Experiment.** A reservoir of 201 units with :math:`W = \sigma Q`, :math:`Q` a random rotation (all
singular values equal :math:`\sigma`), small random inputs, and pairs of initial states; we measure
the largest distance between the two runs at each step, for two leaks. Half of the pairs differ
along a random direction, half along the rotation's axis (the eigenvector of eigenvalue 1 that a
rotation of odd dimension has): there the contraction is slowest and the bound nearly attained.

**What to look for.** Every curve lies below its bound, and along the axis (with small states,
where tanh is almost linear) the worst case decays at the bound's rate: the theorem cannot be
improved for this class of reservoirs. If the factor were
:math:`(1-a)\sigma` instead of :math:`(1-a)+a\sigma`, the dashed lines would fall below the data.
**Broken assumption** (right): :math:`\|W\|_2 = 1.1 > 1`. The factor exceeds 1, the bound grows
and says nothing (vacuous), and along the axis the two runs do not forget their start: the distance
grows like 1.1^t while tanh stays nearly linear. Quick mode uses fewer pairs and steps.
"""

# %%
# Set-up
# ------
import os

import matplotlib.pyplot as plt
import numpy as np

from theory.continual import esn_contraction_bound, esn_contraction_factor

QUICK = os.environ.get("ALGOS_EXAMPLES_QUICK", "0") not in ("", "0")
n_units, n_in, sigma = 201, 5, 0.9
n_pairs, n_steps = (20, 40) if QUICK else (100, 80)
rng = np.random.default_rng(0)
Q, R = np.linalg.qr(rng.normal(size=(n_units, n_units)))
Q *= np.sign(np.diag(R))  # a Haar-random orthogonal matrix
if np.linalg.det(Q) < 0:
    Q[:, 0] *= -1  # a rotation: odd dimension, so eigenvalue 1 is present
W = sigma * Q  # spectral norm exactly sigma
W_in = rng.normal(scale=0.01, size=(n_units, n_in))
eigvals, eigvecs = np.linalg.eig(Q)
axis = np.real(eigvecs[:, np.argmin(np.abs(eigvals - 1.0))])


def run(h0, inputs, leak, W=W):
    """States of the leaky tanh reservoir from ``h0`` (one row per step)."""
    h, out = h0.copy(), [h0.copy()]
    for u in inputs:
        h = (1 - leak) * h + leak * np.tanh(W @ h + W_in @ u)
        out.append(h.copy())
    return np.array(out)


# %%
# Experiment: the worst distance between two runs, per step
# ---------------------------------------------------------
results = {}
for leak in (0.3, 1.0):
    worst = np.zeros(n_steps + 1)
    for p in range(n_pairs):
        inputs = rng.normal(scale=0.1, size=(n_steps, n_in))
        base = rng.normal(scale=0.001, size=n_units)
        direction = axis if p % 2 == 0 else rng.normal(size=n_units)  # the rotation's axis, or random
        delta = 1e-3 * direction / np.linalg.norm(direction)
        d = np.linalg.norm(run(base, inputs, leak) - run(base + delta, inputs, leak), axis=1) / 1e-3
        worst = np.maximum(worst, d)
    results[leak] = worst
    c = esn_contraction_factor(leak, sigma)
    bound = esn_contraction_bound(leak, sigma, np.arange(n_steps + 1))
    assert np.all(worst <= bound * (1 + 1e-9)), "echo-state contraction bound violated"
    print(f"leak {leak}: factor c = {c:.3f}; worst distance after {n_steps} steps {worst[-1]:.3e}, "
          f"bound {bound[-1]:.3e} (tightness {worst[-1] / bound[-1]:.2f})")

# %%
# Broken assumption: spectral norm above 1
# ----------------------------------------
sigma_big = 1.1
inputs = rng.normal(scale=0.1, size=(n_steps, n_in))
base = rng.normal(scale=0.001, size=n_units)
broken = np.linalg.norm(run(base, inputs, 1.0, sigma_big * Q) - run(base + 1e-3 * axis, inputs, 1.0, sigma_big * Q),
                        axis=1) / 1e-3
bound_big = esn_contraction_bound(1.0, sigma_big, np.arange(n_steps + 1))
assert bound_big[-1] > 1 and broken[-1] > 1, "with ||W|| > 1 the runs should not forget their start"
print(f"||W|| = {sigma_big}: distance after {n_steps} steps {broken[-1]:.2f} (bound {bound_big[-1]:.1f}, vacuous)")

# %%
# Plot: measured distance against the bound
# -----------------------------------------
t = np.arange(n_steps + 1)
fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
for i, (leak, worst) in enumerate(results.items()):
    c = esn_contraction_factor(leak, sigma)
    ax.semilogy(t, worst, f"C{i}-", label=f"worst of {n_pairs} pairs, leak a = {leak}")
    ax.semilogy(t, esn_contraction_bound(leak, sigma, t), f"C{i}--",
                label=f"bound $c^t$, c = (1-a) + a sigma = {c:.2f}")
ax.set_xlabel("step t")
ax.set_ylabel(r"$\|h_t - h'_t\| / \|h_0 - h'_0\|$")
ax.set_title(rf"Leaky tanh reservoir, {n_units} units, $\|W\|_2 = {sigma}$")
ax.legend(fontsize=8)
bx.semilogy(t, broken, "C3-", label="distance along the axis, leak a = 1")
bx.semilogy(t, bound_big, "C3--", label=f"bound $c^t$, c = {sigma_big} > 1 (vacuous)")
bx.axhline(1.0, color="grey", lw=0.8)
bx.set_xlabel("step t")
bx.set_title(rf"broken: $\|W\|_2 = {sigma_big} > 1$, no forgetting")
bx.legend(fontsize=8)
fig.tight_layout()
fig.savefig("theorem_continual.png", dpi=110)
plt.show()
