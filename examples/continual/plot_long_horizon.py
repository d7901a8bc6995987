r"""
Long-horizon class-incremental learning: CIRCLE's final accuracy does not depend on the split
=============================================================================================

In cold-start, exemplar-free class-incremental learning the classes arrive in T disjoint tasks, the
first one small, and nothing may be stored or revisited. Methods that train a backbone drift: the
more tasks, the more they forget. CIRCLE (Jučas & Pan, 2026) never trains its features: R fixed
reservoir extractors are drawn without data, and G streaming-LDA heads keep only class means and one
shared covariance. In *exact* mode (:class:`algos.continual.StreamingLDA`) the covariance is the
pooled within-class covariance of everything seen, so the state after the stream, and the final
accuracy A_last, is the same for every task split, down to one class per task.

This script uses scikit-learn's digits (8x8, 10 classes) and

* **left**: the accuracy on all classes seen so far (A_step) after each of T = 10 one-class tasks,
  for CIRCLE and CPU baselines on the same protocol (streaming LDA and NCM on raw pixels, a fixed
  random convolution + SLDA, streaming ridge on CIRCLE features);
* **right**: A_last against the number of tasks T = 1, 2, 5, 10 (1 class per task at T = 10):
  flat for the exact streaming methods, slightly split-dependent for the order-dependent
  reference ("hayes") covariance rule.

CIRCLE's features are computed once (the extractors are data-free and batch-independent) and each
stream replays the heads on them, which is what ``CIRCLEClassifier.partial_fit`` does batch by batch.

``ALGOS_EXAMPLES_QUICK=1`` selects the quick mode (2 extractors instead of 4).
"""

# %%
# Set-up: quick mode, fixed seed
# ------------------------------
import os

import matplotlib.pyplot as plt
import numpy as np
from sklearn.base import clone
from threadpoolctl import threadpool_limits

from algos.continual import (
    CIRCLEClassifier,
    FeatureHead,
    StreamingRidge,
    class_incremental_split,
    evaluate_cil,
    load_image_dataset,
    make_baseline,
)

quick = os.environ.get("ALGOS_EXAMPLES_QUICK", "0") not in ("", "0")
SEED = 0
R, G = (2, 2) if quick else (4, 2)
TASKS = (1, 2, 5, 10)

data = load_image_dataset("digits", random_state=SEED)
Xtr, ytr, Xte, yte, shape = data["X_tr"], data["y_tr"], data["X_te"], data["y_te"], data["image_shape"]

# %%
# CIRCLE's features, drawn without data and computed once
# -------------------------------------------------------
circle = CIRCLEClassifier(n_reservoirs=R, n_groups=G, random_state=SEED, feature_params={"backend": "numpy"})
circle.partial_fit(Xtr[:0], ytr[:0])  # an empty batch draws the extractors and learns nothing
Ftr, Fte = circle.extract_features(Xtr), circle.extract_features(Xte)
print(f"{R} extractors -> {Ftr.shape[1]} features, {G} heads of {circle.ensemble_.group_sizes}")

# each model is (data it reads, factory); the CIRCLE heads are fresh clones of circle.ensemble_
models = {
    f"CIRCLE R={R} G={G} (exact)": ("features", lambda: clone(circle.ensemble_)),
    f"CIRCLE R={R} G={G} (hayes)": ("features", lambda: clone(circle.ensemble_).set_params(covariance="hayes")),
    "ridge on CIRCLE features": ("features", lambda: FeatureHead(features=None, head=StreamingRidge(alpha=1.0))),
    "SLDA, raw pixels": ("pixels", lambda: make_baseline("raw_slda", shape)),
    "NCM, raw pixels": ("pixels", lambda: make_baseline("raw_ncm", shape)),
    "random conv + SLDA": ("pixels", lambda: make_baseline("random_conv", shape, random_state=SEED, backend="numpy")),
}

# %%
# Streams for every split
# -----------------------
results = {name: {} for name in models}
with threadpool_limits(1, user_api="blas"):  # small heads: one BLAS thread is fastest
    for T in TASKS:
        tasks = class_incremental_split(ytr, T, class_order_seed=SEED)
        for name, (kind, factory) in models.items():
            A, B = (Ftr, Fte) if kind == "features" else (Xtr, Xte)
            results[name][T] = evaluate_cil(factory, A, ytr, B, yte, tasks, batch_size=64, random_state=SEED + T)

print(f"{'model':<28} " + " ".join(f"A_last T={T:<3}" for T in TASKS) + "  A_inc T=10  forgetting T=10")
for name, res in results.items():
    print(f"{name:<28} " + " ".join(f"{res[T]['A_last']:<12.4f}" for T in TASKS)
          + f"  {res[10]['A_inc']:<10.4f}  {res[10]['forgetting']:.4f}")
exact = [results[f"CIRCLE R={R} G={G} (exact)"][T]["A_last"] for T in TASKS]
print(f"CIRCLE exact: spread of A_last over T = {max(exact) - min(exact):.2e} (identical state for every split)")

# %%
# Plot
# ----
fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
for i, (name, res) in enumerate(results.items()):
    steps = res[10]["A_step"]
    ax.plot(np.arange(1, len(steps) + 1), steps, marker="o", ms=3, color=f"C{i}", label=name)
    bx.plot(TASKS, [res[T]["A_last"] for T in TASKS], marker="s", color=f"C{i}", label=name)
ax.set_xlabel("tasks learned (T = 10, one class per task)")
ax.set_ylabel("A_step: accuracy on all classes seen")
ax.set_title("accuracy after each task")
ax.legend(fontsize=7)
bx.set_xscale("log")
bx.set_xticks(TASKS, [str(T) for T in TASKS])
bx.set_xlabel("number of tasks T (same 10 classes)")
bx.set_ylabel("A_last after the whole stream")
bx.set_title("final accuracy vs the split")
fig.suptitle("scikit-learn digits, cold-start class-incremental, no exemplars")
fig.tight_layout()
fig.savefig("continual_long_horizon.png", dpi=110)
plt.show()
