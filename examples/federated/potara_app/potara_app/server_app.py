"""ServerApp: FedAvg rounds then Potara's personalisation round (algos.federated.flower)."""

from algos.federated.flower import make_server_app

from .task import CLASSES, N_FEATURES, make_estimator

app = make_server_app(make_estimator(), N_FEATURES, len(CLASSES))
