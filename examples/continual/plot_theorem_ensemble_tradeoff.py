r"""
Theorem in practice: CIRCLE's trade-off between feature and prediction ensembles
================================================================================

**Statement** (CIRCLE's ensemble, as the package builds it). R reservoir extractors, each drawn
independently from its own seed, are split into G groups; head g is a streaming LDA on the
concatenated features of its group and the ensemble predicts :math:`\bar p = \frac1G\sum_g p_g`.
G = 1 is a *feature ensemble* (one rich head: low bias, but a covariance of dimension R d to
estimate); G = R is a *prediction ensemble* (small heads averaged: low variance). The averaging
gain is exact (the ambiguity decomposition of Krogh & Vedelsby, 1995): for the Brier score
:math:`B(p) = \|p - e_y\|^2`, on every test point,

.. math:: B(\bar p) = \frac1G\sum_g B(p_g) - \frac1G\sum_g \|p_g - \bar p\|^2 ,

so the ensemble beats its average head by the heads' *diversity* (the variance term), which is
never negative.

**Experiment.** scikit-learn's digits, R = 4 extractors of d = 128 features, heads trained on n
samples per class, test Brier score of the feature ensemble (G = 1), of the prediction ensemble
(G = 4), of its average head, and the diversity.

**What to look for.** The identity holds to round-off at every n (the assertion). With few samples
per class the 512-dimensional head of G = 1 cannot estimate its covariance and the prediction
ensemble wins by its diversity; with many samples the diversity shrinks and the richer feature
ensemble wins: the bias-variance trade-off. **Broken assumption** (right): the extractors are not
independent (four copies of one extractor); the heads agree, the diversity is exactly 0 and the
prediction ensemble is no better than one head. Quick mode averages over one subsample, full over five.
"""

# %%
# Set-up: features computed once
# ------------------------------
import os

import matplotlib.pyplot as plt
import numpy as np

from algos.continual import CIRCLEClassifier, SLDAEnsemble, load_image_dataset

QUICK = os.environ.get("ALGOS_EXAMPLES_QUICK", "0") not in ("", "0")
R, n_repeats = 4, (1 if QUICK else 5)
n_per_class = np.array([5, 10, 20, 40, 80, 120])
data = load_image_dataset("digits", random_state=0)
Xtr, ytr, Xte, yte = data["X_tr"], data["y_tr"], data["X_te"], data["y_te"]
circle = CIRCLEClassifier(n_reservoirs=R, n_groups=R, random_state=0, feature_params={"backend": "numpy"})
circle.partial_fit(Xtr[:0], ytr[:0])  # an empty batch draws the R extractors and learns nothing
Ftr, Fte = circle.extract_features(Xtr), circle.extract_features(Xte)
d = Ftr.shape[1] // R
onehot = np.eye(10)[yte]


def brier_terms(features_tr, y, features_te):
    """Test Brier scores: feature ensemble, prediction ensemble, mean head, diversity."""
    one = SLDAEnsemble().fit(features_tr, y)
    ens = SLDAEnsemble(group_sizes=[d] * R).fit(features_tr, y)
    p_bar = ens.predict_proba(features_te)
    p_heads = np.stack([h.predict_proba(features_te[:, g * d:(g + 1) * d]) for g, h in enumerate(ens.heads_)])
    b_one = np.sum((one.predict_proba(features_te) - onehot) ** 2, axis=1)
    b_ens = np.sum((p_bar - onehot) ** 2, axis=1)
    b_heads = np.sum((p_heads - onehot) ** 2, axis=2).mean(axis=0)
    diversity = np.sum((p_heads - p_bar) ** 2, axis=2).mean(axis=0)
    # the ambiguity decomposition, point by point
    assert np.allclose(b_ens, b_heads - diversity, rtol=0, atol=1e-10), "ensemble Brier != mean head - diversity"
    return np.array([b_one.mean(), b_ens.mean(), b_heads.mean(), diversity.mean()])


# %%
# Experiment: independent extractors, and four copies of one extractor
# --------------------------------------------------------------------
copies = (np.tile(Ftr[:, :d], R), np.tile(Fte[:, :d], R))  # R identical extractors: the assumption broken
results = {"independent": np.zeros((len(n_per_class), 4)), "copies": np.zeros((len(n_per_class), 4))}
for rep in range(n_repeats):
    rng = np.random.default_rng(rep)
    for i, n in enumerate(n_per_class):
        idx = np.concatenate([rng.permutation(np.flatnonzero(ytr == k))[:n] for k in range(10)])
        results["independent"][i] += brier_terms(Ftr[idx], ytr[idx], Fte) / n_repeats
        results["copies"][i] += brier_terms(copies[0][idx], ytr[idx], copies[1]) / n_repeats
ind, cop = results["independent"], results["copies"]
print(f"{'n/class':>8} {'G=1':>8} {'G=4':>8} {'mean head':>10} {'diversity':>10} | copies: G=4, diversity")
for n, a, b in zip(n_per_class, ind, cop):
    print(f"{n:>8} {a[0]:8.4f} {a[1]:8.4f} {a[2]:10.4f} {a[3]:10.4f} | {b[1]:.4f}, {b[3]:.1e}")
assert np.all(ind[:, 3] > 0), "independent heads must disagree somewhere"
assert ind[0, 1] < ind[0, 0] and ind[-1, 0] < ind[-1, 1], "no trade-off: G=4 should win small n, G=1 large n"
assert np.all(cop[:, 3] < 1e-20) and np.allclose(cop[:, 1], cop[:, 2], rtol=0, atol=1e-12)

# %%
# Plot: Brier score against the training set size
# -----------------------------------------------
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
for ax, (name, res) in zip(axes, results.items()):
    ax.loglog(n_per_class, res[:, 0], "C0o-", label=f"feature ensemble G=1 (one head, {R * d} features)")
    ax.loglog(n_per_class, res[:, 1], "C1s-", label=f"prediction ensemble G={R}")
    ax.loglog(n_per_class, res[:, 2], "C1--", label=f"its average head ({d} features)")
    ax.fill_between(n_per_class, res[:, 1], res[:, 2], color="C1", alpha=0.2, label="diversity (variance term)")
    ax.set_xlabel("training samples per class")
    ax.legend(fontsize=7)
axes[0].set_title(f"{R} independent extractors: the trade-off")
axes[1].set_title(f"broken: {R} copies of one extractor, diversity 0")
axes[0].set_ylabel("test Brier score")
fig.tight_layout()
fig.savefig("theorem_continual_ensemble.png", dpi=110)
plt.show()
