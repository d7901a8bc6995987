r"""Personalised-FL baselines with Potara's interface: ``fit(X, y, client_ids)``, ``predict(X, client_ids)``.

Definitions follow federated reconstruction notes, section 3 (on the softmax head / low-rank adapter of
:mod:`algos.federated._model`, full-batch GD, FedAvg weights :math:`n_i`, client sampling and communication
accounting shared with :class:`PotaraClassifier` through :class:`FederatedClassifierBase`):

* :class:`LocalOnlyClassifier` -- each client trains alone from :math:`\theta^0`.
* :class:`FedAvgClassifier` -- McMahan et al. 2017; deploys :math:`\theta^R` everywhere.
* :class:`FedAvgFTClassifier` -- FedAvg then ``finetune_epochs`` local epochs (= Potara's
  :math:`\theta_L`, i.e. Potara with :math:`\lambda = 0`).
* :class:`FixedMixClassifier` -- :math:`\lambda\theta_F + (1-\lambda)\theta_L` with a fixed :math:`\lambda`.
* :class:`OracleGridClassifier` -- :math:`\lambda` per client from the grid :math:`\{0, 0.1, \dots, 1\}` by
  accuracy on validation data (given, or held out from the client's training data).
* :class:`APFLClassifier` -- Deng, Kamani, Mahdavi 2020 (adaptive mixing :math:`\alpha_i`).
* :class:`DittoClassifier` -- Li, Hu, Beirami, Smith 2021 (proximal personal models).
* :class:`PFedMeClassifier` -- T. Dinh, Tran, Nguyen 2020 (Moreau-envelope personalisation).
* :class:`FedRepClassifier` -- Collins et al. 2021 (shared body ``A``, local head ``B, b``).
* :class:`FedITClassifier` -- FedAvg of the LoRA factors ``A`` and ``B`` separately (Zhang et al. 2024).
* :class:`FFALoRAClassifier` -- ``A`` frozen at its random init, only ``B`` trained and averaged
  (Sun et al. 2024).
* :class:`FedSALoRAClassifier` -- ``A`` averaged, ``B`` kept local (Guo et al. 2024).

The LoRA baselines (FedRep, FedIT, FFA-LoRA, FedSA-LoRA) need an adapter: they use the base estimator's
``rank``, or their own ``rank`` parameter when the base has none (the head ``W`` is then frozen at 0).
"""

from ._fedavg import FedAvgClassifier, FedAvgFTClassifier, FixedMixClassifier, LocalOnlyClassifier, OracleGridClassifier
from ._lora import FedITClassifier, FedRepClassifier, FedSALoRAClassifier, FFALoRAClassifier
from ._personal import APFLClassifier, DittoClassifier, PFedMeClassifier
from ._registry import BASELINES

__all__ = [
    "LocalOnlyClassifier",
    "FedAvgClassifier",
    "FedAvgFTClassifier",
    "FixedMixClassifier",
    "OracleGridClassifier",
    "APFLClassifier",
    "DittoClassifier",
    "PFedMeClassifier",
    "FedRepClassifier",
    "FedITClassifier",
    "FFALoRAClassifier",
    "FedSALoRAClassifier",
    "BASELINES",
]
