r"""Potara: federated personalization by merging a federated and a local model per client.

Each client merges the federated model :math:`\theta_F` (FedAvg over all clients) with its own local
model :math:`\theta_L` (fine-tuned from :math:`\theta_F`) as :math:`\lambda\theta_F + (1-\lambda)\theta_L`, with
the closed-form weight :math:`\lambda^* = V_L/(V_F + V_L)` that minimises a variance-trace bound on the
expected loss (Zou, Shisher, Brinton, Tripathi 2026, arXiv:2602.18658; the bound and the estimators of
:math:`V_F, V_L` are reconstructed, see :mod:`theory.federated`). Base model: :class:`LowRankSoftmax`
(softmax head with an optional low-rank adapter). Baselines: local only, FedAvg, FedAvg + fine-tune,
fixed-lambda mixing, oracle grid, APFL, Ditto, pFedMe, FedRep, FedIT, FFA-LoRA, FedSA-LoRA.
Data: :func:`dirichlet_label_split`, :func:`make_fedprox_synthetic`, :func:`make_hetero_linear`,
:func:`make_digits_clients` (any number of clients, each built from its own seed).
Deployment on Flower: :mod:`algos.federated.flower` (extra ``federated``; imported on demand).
"""

from ._data import (
    dirichlet_label_split,
    dirichlet_mixture_sample,
    make_digits_clients,
    make_fedprox_synthetic,
    make_hetero_linear,
)
from ._low_rank_softmax import LowRankSoftmax
from ._model import (
    default_trainable,
    effective_weights,
    fedavg_round,
    init_params,
    local_train,
    loss_grad,
    per_sample_fisher_diag,
    predict_logits,
)
from ._potara import FederatedClassifierBase, PotaraClassifier, client_generator, merge_models
from .baselines import (  # noqa: F401  (re-exported through _BASELINE_NAMES)
    BASELINES,
    APFLClassifier,
    DittoClassifier,
    FedAvgClassifier,
    FedAvgFTClassifier,
    FedITClassifier,
    FedRepClassifier,
    FedSALoRAClassifier,
    FFALoRAClassifier,
    FixedMixClassifier,
    LocalOnlyClassifier,
    OracleGridClassifier,
    PFedMeClassifier,
)
from .baselines import __all__ as _BASELINE_NAMES
from .merge import MixingWeightWarning, merge_lora, merge_params, optimal_mixing_weight
from .variance import FlatFisherWarning, estimate_variances, mixing_weights

__all__ = [
    "PotaraClassifier",
    "LowRankSoftmax",
    *_BASELINE_NAMES,
    "FederatedClassifierBase",
    "init_params",
    "loss_grad",
    "local_train",
    "predict_logits",
    "per_sample_fisher_diag",
    "fedavg_round",
    "default_trainable",
    "effective_weights",
    "client_generator",
    "merge_models",
    "optimal_mixing_weight",
    "merge_params",
    "merge_lora",
    "estimate_variances",
    "mixing_weights",
    "MixingWeightWarning",
    "FlatFisherWarning",
    "dirichlet_label_split",
    "make_fedprox_synthetic",
    "make_hetero_linear",
    "dirichlet_mixture_sample",
    "make_digits_clients",
]
