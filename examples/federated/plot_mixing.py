r"""
Potara: how much each client trusts the federated model
=======================================================

Every client ``i`` of a federation holds few samples from its own label distribution. Potara merges
the federated model :math:`\theta_F` (FedAvg over all clients) with the client's own model
:math:`\theta_{L,i}` (fine-tuned from :math:`\theta_F`):

.. math:: \theta_i = \lambda_i\theta_F + (1-\lambda_i)\theta_{L,i}, \qquad
   \lambda_i = \frac{\hat V_{L,i}}{\hat V_{F,i} + \hat V_{L,i}},

the minimiser of the variance-trace bound :math:`U(\lambda) = \lambda^2 V_F + (1-\lambda)^2 V_L`
(:func:`theory.federated.optimal_lambda`; reconstructed from the paper's abstract). ``V_L`` is the
bootstrap variance of the local model, ``V_F`` the plug-in :math:`\max(\|\theta_F - \theta_L\|^2 - V_L, 0)`.

This script splits scikit-learn's digits among 20 clients with Dirichlet label skew for several
concentrations ``alpha`` (small = heterogeneous), and plots

* left: each client's :math:`\lambda_i` against the entropy of its label distribution (heterogeneous
  clients lean on their own model);
* right: mean per-client test accuracy of Potara, its two endpoints (FedAvg, :math:`\lambda = 1`;
  FedAvg + fine-tune, :math:`\lambda = 0`), the oracle grid (best :math:`\lambda` per client on the test
  data), local-only training and Ditto.

Run ``python plot_mixing.py``; it writes ``federated_mixing.png``. ``ALGOS_EXAMPLES_QUICK=1`` selects the
quick mode (two alphas, fewer rounds).
"""

# %%
# Set-up: command line, quick mode, fixed seed
# --------------------------------------------
import os

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from algos.federated import (
    DittoClassifier,
    LocalOnlyClassifier,
    PotaraClassifier,
    dirichlet_label_split,
    merge_models,
    predict_logits,
)

quick = os.environ.get("ALGOS_EXAMPLES_QUICK") == "1"
alphas = [0.1, 5.0] if quick else [0.1, 0.3, 1.0, 5.0]
rounds = 15 if quick else 30
SEED = 0

# %%
# Data: digits, Dirichlet label split, half of every client held out
# ------------------------------------------------------------------
X, y = load_digits(return_X_y=True)


def split(ids, seed):
    rng = np.random.default_rng(seed)
    train = np.zeros(len(ids), bool)
    for c in np.unique(ids):
        idx = np.flatnonzero(ids == c)
        rng.shuffle(idx)
        train[idx[: max(2, len(idx) // 2)]] = True
    return train


# %%
# Fit Potara and the baselines for each alpha
# -------------------------------------------
results, scatter = {}, {}
for alpha in alphas:
    ids = dirichlet_label_split(y, 20, alpha, min_size=4, random_state=SEED)
    tr = split(ids, SEED)
    mu, sd = X[tr].mean(0), X[tr].std(0)
    Xs = (X - mu) / np.where(sd > 0, sd, 1.0)
    Xtr, ytr, itr, Xte, yte, ite = Xs[tr], y[tr], ids[tr], Xs[~tr], y[~tr], ids[~tr]
    pot = PotaraClassifier(n_rounds=rounds, local_epochs=5, finetune_epochs=100, n_bootstrap=4 if quick else 8,
                           random_state=SEED).fit(Xtr, ytr, itr)
    acc = {k: [] for k in ("FedAvg (lambda=1)", "FedAvg+FT (lambda=0)", "Potara", "oracle grid")}
    for c in pot.clients_.tolist():
        rows = ite == c
        Xc, yc = Xte[rows], np.searchsorted(pot.classes_, yte[rows])

        def score(p):
            return float(np.mean(predict_logits(p, Xc).argmax(1) == yc))

        acc["FedAvg (lambda=1)"].append(score(pot.federated_model_))
        acc["FedAvg+FT (lambda=0)"].append(score(pot.local_models_[c]))
        acc["Potara"].append(score(pot.personalized_models_[c]))
        acc["oracle grid"].append(max(score(merge_models(pot.federated_model_, pot.local_models_[c], float(t)))
                                      for t in np.linspace(0, 1, 11)))
    res = {k: float(np.mean(v)) for k, v in acc.items()}
    res["local only"] = LocalOnlyClassifier(epochs=100, random_state=SEED).fit(Xtr, ytr, itr).score(Xte, yte, ite)
    res["Ditto"] = float(np.mean(list(DittoClassifier(mu=0.1, n_rounds=rounds, local_epochs=5, random_state=SEED)
                                      .fit(Xtr, ytr, itr).client_scores(Xte, yte, ite).values())))
    results[alpha] = res
    ent, lam = [], []
    for c in pot.clients_.tolist():
        p = np.bincount(ytr[itr == c], minlength=10) / np.sum(itr == c)
        ent.append(float(-np.sum(p[p > 0] * np.log(p[p > 0]))))
        lam.append(float(np.mean([np.mean(v) for v in pot.mixing_weights_[c].values()])))
    scatter[alpha] = (ent, lam)
    print(f"alpha = {alpha:g}: " + ", ".join(f"{k} {v:.4f}" for k, v in res.items())
          + f"; mean lambda {pot.mean_lambda():.3f}")

# %%
# Plot: lambda against heterogeneity, accuracy against the endpoints and baselines
# ---------------------------------------------------------------------------------
fig, axes = plt.subplots(1, 2, figsize=(11, 4.3))
for alpha, (ent, lam) in scatter.items():
    axes[0].scatter(ent, lam, s=22, label=f"alpha = {alpha:g}")
axes[0].set_xlabel("label entropy of the client (low = heterogeneous)")
axes[0].set_ylabel(r"$\lambda_i$ (weight of the federated model)")
axes[0].set_title("closed-form mixing weights")
axes[0].legend(fontsize=8)
methods = list(next(iter(results.values())))
for j, m in enumerate(methods):
    axes[1].plot(alphas, [results[a][m] for a in alphas], "o-" if m == "Potara" else ".--",
                 lw=2.5 if m == "Potara" else 1, label=m)
axes[1].set_xscale("log")
axes[1].set_xlabel("Dirichlet alpha (small = heterogeneous)")
axes[1].set_ylabel("mean per-client test accuracy")
axes[1].set_title("digits, 20 clients")
axes[1].legend(fontsize=7)
fig.tight_layout()
fig.savefig("federated_mixing.png", dpi=110)
print("wrote federated_mixing.png")
plt.show()
