"""Potara on Flower: the ServerApp and ClientApp of algos.federated.flower on the digits data."""
