"""ClientApp: Potara's client side (local FedAvg steps, then personalisation) on one partition."""

from algos.federated.flower import make_client_app

from .task import CLASSES, load_partition, make_estimator

app = make_client_app(make_estimator(), load_partition, CLASSES)
