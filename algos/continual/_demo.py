"""The continual section of ``algos demo``: CIRCLE on scikit-learn digits, class by class.

CIRCLE's extractors are data-free, so their features are computed once and the streams replay the
heads (:class:`SLDAEnsemble`) on them; this is exactly what ``CIRCLEClassifier.partial_fit`` does
batch by batch, only faster.
"""

from __future__ import annotations

import numpy as np

from .._io import atomic_savefig
from .._report import Check, DemoSection
from ._baselines import make_baseline
from ._circle import CIRCLEClassifier
from ._data import load_image_dataset
from ._protocol import class_incremental_split, evaluate_cil

#: Where the statements checked here are listed, with their sources.
THEORY = "docs/continual.md, Theory -> function -> test"


def _figure(path, curves, invariance):
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
    for label, steps in curves.items():
        ax.plot(np.arange(1, len(steps) + 1), steps, marker="o", ms=3, label=label)
    ax.set_xlabel("tasks learned (1 class each)")
    ax.set_ylabel("accuracy on all classes seen (A_step)")
    ax.set_title("digits, 10 tasks x 1 class")
    ax.legend(fontsize=7)
    Ts = sorted(invariance)
    bx.bar([str(T) for T in Ts], [invariance[T] for T in Ts], color="C0")
    lo = min(invariance.values())
    bx.set_ylim(max(0.0, lo - 0.05), 1.0)
    for i, T in enumerate(Ts):
        bx.text(i, invariance[T], f"{invariance[T]:.4f}", ha="center", va="bottom", fontsize=8)
    bx.set_xlabel("number of tasks T")
    bx.set_ylabel("A_last (CIRCLE, exact mode)")
    bx.set_title("final accuracy does not depend on the split")
    fig.tight_layout()
    atomic_savefig(fig, path, dpi=110)
    plt.close(fig)


def shrinkage_check(heads):
    """The shrinkage-floor check: smallest eigenvalue of every head's shrunk covariance against
    :func:`theory.continual.shrinkage_eigenvalue_floor` (the trivial floor of a PSD matrix is 0)."""
    from theory import continual as tc

    eps = heads[0].shrinkage
    lam = min(float(np.linalg.eigvalsh((1 - eps) * h.covariance_ + eps * np.eye(h.covariance_.shape[0])).min())
              for h in heads)
    return Check("lambda_min((1-eps) Sigma + eps I) vs eps", lam, tc.shrinkage_eigenvalue_floor(eps),
                 tol=1e-12, source=f"theory.continual.shrinkage_eigenvalue_floor; {THEORY} [D]", kind="theorem",
                 trivial=0.0)


def run_demo(out_dir, quick=False, random_state=0):
    """Build the continual section of the demo report (figure written to ``out_dir``)."""
    from threadpoolctl import threadpool_limits

    # the heads here are small (d <= 256): one BLAS thread is fastest and avoids oversubscription
    # next to the reservoir kernels' own threads
    with threadpool_limits(1, user_api="blas"):
        return _run(out_dir, quick, int(random_state))


def _run(out_dir, quick, seed):
    R, G = (2, 2) if quick else (4, 2)
    data = load_image_dataset("digits", random_state=seed)
    Xtr, ytr, Xte, yte, shape = data["X_tr"], data["y_tr"], data["X_te"], data["y_te"], data["image_shape"]
    circle = CIRCLEClassifier(n_reservoirs=R, n_groups=G, random_state=seed, feature_params={"backend": "numpy"})
    circle.partial_fit(Xtr[:0], ytr[:0])  # draws the extractors (data-free), learns nothing
    Ftr, Fte = circle.extract_features(Xtr), circle.extract_features(Xte)  # data-free: computed once
    heads = circle.ensemble_

    a_last, results = {}, {}
    for T in (1, 5, 10):
        tasks = class_incremental_split(ytr, T, class_order_seed=seed)
        results[T] = evaluate_cil(heads, Ftr, ytr, Fte, yte, tasks, batch_size=50, random_state=seed + T,
                                  return_model=True)
        a_last[T] = results[T]["A_last"]
    tasks10 = class_incremental_split(ytr, 10, class_order_seed=seed)
    hayes = evaluate_cil(heads.set_params(covariance="hayes"), Ftr, ytr, Fte, yte, tasks10, batch_size=50,
                         random_state=seed)
    heads.set_params(covariance="exact")
    curves = {f"CIRCLE R={R} G={G}": results[10]["A_step"]}
    base = {}
    for name, label in (("raw_slda", "SLDA, raw pixels"), ("raw_ncm", "NCM, raw pixels"),
                        ("random_conv", "random conv + SLDA"), ("birc2d_gap", "BiRC2D + GAP + SLDA")):
        def factory(n=name):
            return make_baseline(n, shape, random_state=seed, backend="numpy")

        base[name] = evaluate_cil(factory, Xtr, ytr, Xte, yte, tasks10, random_state=seed)
        curves[label] = base[name]["A_step"]

    model = results[10]["model"]
    P = model.predict_proba(Fte)
    row_err = float(np.abs(P.sum(axis=1) - 1.0).max())
    pooled_err = 0.0
    for head, (a, b) in zip(model.heads_, model._slices):
        F = Ftr[:, a:b]
        S = np.zeros((b - a, b - a))
        for k in np.unique(ytr):
            Rk = F[ytr == k] - F[ytr == k].mean(axis=0)
            S += Rk.T @ Rk
        pooled_err = max(pooled_err, float(np.abs(head.covariance_ - S / len(ytr)).max()))
    spread = max(a_last.values()) - min(a_last.values())
    checks = [
        # accuracies lie in [0, 1]: a spread of 1 is the trivial bound
        Check("max spread of A_last over T = 1, 5, 10 (exact mode)", spread, 1e-9, relation="<=",
              source=f"split invariance of exact streaming LDA; {THEORY} [D]", kind="theorem", trivial=1.0),
        Check("max abs. entry of streamed minus batch pooled covariance", pooled_err, 1e-9, relation="<=",
              source=f"exact mode = batch pooled covariance; {THEORY} [D][V]", kind="sanity"),
        Check("A_step after task 1 of 10 (one class seen)", results[10]["A_step"][0], 1.0,
              source="identity: with one class seen, every prediction is that class", kind="sanity"),
        Check("max abs(sum_k p(k given x) - 1) over the test set", row_err, 1e-12, relation="<=",
              source=f"ensemble rows are distributions; {THEORY} [D]", kind="sanity"),
        shrinkage_check(model.heads_),
        Check("A_last CIRCLE - A_last NCM on raw pixels (T = 10)", a_last[10] - base["raw_ncm"]["A_last"], 0.0,
              source="baseline (b), NCM; docs/continual.md, Baselines (expected > 0)", kind="target",
              trivial=None),
        Check("abs(A_last exact - A_last hayes) (T = 10)", abs(a_last[10] - hayes["A_last"]), 0.01, relation="<=",
              source=f"Hayes parity (Deep SLDA, Hayes & Kanan 2020); {THEORY} [C][V]", kind="target",
              trivial=1.0),
    ]
    fig = "continual_digits.png"
    _figure(out_dir / fig, curves, a_last)
    rows = ["| model | A_last | A_inc | forgetting |", "|---|---|---|---|",
            f"| CIRCLE R={R} G={G}, exact | {a_last[10]:.4f} | {results[10]['A_inc']:.4f} | "
            f"{results[10]['forgetting']:.4f} |",
            f"| CIRCLE R={R} G={G}, hayes | {hayes['A_last']:.4f} | {hayes['A_inc']:.4f} | {hayes['forgetting']:.4f} |"]
    for name, res in base.items():
        rows.append(f"| {name} | {res['A_last']:.4f} | {res['A_inc']:.4f} | {res['forgetting']:.4f} |")
    body = f"""
Cold-start class-incremental learning on scikit-learn digits ({len(ytr)} train / {len(yte)} test, 8x8):
10 tasks of one class each, no exemplars, one pass. CIRCLE draws {R} fixed reservoir extractors (random
conv stem, leaky-ReLU BiReservoir2D, 2x2 average pooling, spatial concatenation) without looking at data
and learns {G} streaming-LDA heads; predictions average the heads' softmax. In exact mode the heads'
state after the stream equals the batch state, so A_last is the same for T = 1, 5 and 10
({a_last[1]:.4f}, {a_last[5]:.4f}, {a_last[10]:.4f}).

{chr(10).join(rows)}
"""
    return DemoSection(module="continual", title="Class-incremental learning with reservoir features (CIRCLE)",
                       body=body, checks=checks, figures=[fig])
