"""``BASELINES``: the name of each personalised-FL baseline (as the CLI and the benchmarks spell it) -> its class."""

from ._fedavg import FedAvgClassifier, FedAvgFTClassifier, FixedMixClassifier, LocalOnlyClassifier, OracleGridClassifier
from ._lora import FedITClassifier, FedRepClassifier, FedSALoRAClassifier, FFALoRAClassifier
from ._personal import APFLClassifier, DittoClassifier, PFedMeClassifier

BASELINES = {
    "local": LocalOnlyClassifier,
    "fedavg": FedAvgClassifier,
    "fedavg_ft": FedAvgFTClassifier,
    "fixed_mix": FixedMixClassifier,
    "oracle_grid": OracleGridClassifier,
    "apfl": APFLClassifier,
    "ditto": DittoClassifier,
    "pfedme": PFedMeClassifier,
    "fedrep": FedRepClassifier,
    "fedit": FedITClassifier,
    "ffa_lora": FFALoRAClassifier,
    "fedsa_lora": FedSALoRAClassifier,
}
