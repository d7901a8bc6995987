"""Small fits that compile every numba kernel family of each module (used by the cache stress test
and by ``benchmarks/numba_first_call.py``).

``run(module)`` runs, in the calling process, a fit small enough to take well under a second once
compiled, twice: as a user's small fit runs (the cached serial twins of the parallel kernels, see
:mod:`algos._parallel`) and with :func:`algos._parallel.always_parallel`, which reaches the module's
``parallel=True`` kernels (where it has them) on the same small input.
"""

from __future__ import annotations

import numpy as np

MODULES = ("fair_matching", "hetero_regression", "networked_learning", "pomdp", "continual", "federated",
           "point_process")


def _fair_matching():
    from algos.fair_matching import Greedy, HybridRanking, Ranking, random_instance

    inst = random_instance(30, 30, 3, p=0.2, random_state=0)
    HybridRanking(n_runs=16).fit(inst)  # >= 8 runs: the parallel kernel under always_parallel
    Ranking(n_runs=16, random_state=0).fit(inst)
    Greedy(n_runs=16, random_state=0).fit(inst)


def _hetero_regression():
    from algos.hetero_regression import HuberSoSRegressor, make_subset_of_signals

    data = make_subset_of_signals(400, 3, 100, random_state=0)
    HuberSoSRegressor(delta=3.0).fit(data.X, data.y)


def _networked_learning():
    from algos.networked_learning import NetworkedDAGRegressor, make_path

    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 4))
    y = X @ np.array([1.0, 0.0, -1.0, 2.0]) + rng.standard_normal(200)
    NetworkedDAGRegressor(graph=make_path(4), protocol="sketch", k=16, random_state=0).fit(X, y)


def _pomdp():
    from algos.pomdp import PointBasedSolver, tiger

    PointBasedSolver(time_limit=0.2, random_state=0).fit(tiger())


def _continual():
    from algos.continual import BiReservoir2D

    rng = np.random.default_rng(0)
    BiReservoir2D(units=4).fit_transform(rng.random((6, 8, 8, 1)))


def _federated():
    from algos.federated import PotaraClassifier, make_fedprox_synthetic

    data = make_fedprox_synthetic(0.5, 0.5, n_clients=4, n_features=6, n_classes=3, random_state=0)
    PotaraClassifier(n_rounds=2, random_state=0).fit(data.X, data.y, data.client_ids)


def _point_process():
    from algos.point_process import VoGCAM, Window, simulate_lgcp

    window = Window.from_any((0.0, 1.0, 0.0, 1.0))
    sample = simulate_lgcp(window, 5.0, 0.5, 0.1, grid=32, random_state=0)
    est = VoGCAM(window=window, max_iter=3, random_state=0).fit(sample.points)
    est.predict_log_intensity(sample.points[:20])


def run(module, paths=("twins", "parallel")):
    """Run the small fit of ``module`` (one of :data:`MODULES`) once per entry of ``paths``:
    ``"twins"`` as a user's small fit runs (the cached serial twins of the parallel kernels),
    ``"parallel"`` under :func:`algos._parallel.always_parallel` (the parallel kernels themselves)."""
    if module not in MODULES:
        raise ValueError(f"'module' must be one of {MODULES}; got {module!r}.")
    if not set(paths) <= {"twins", "parallel"}:
        raise ValueError(f"'paths' must hold 'twins' and/or 'parallel'; got {paths!r}.")
    from algos._parallel import always_parallel

    for path in paths:
        if path == "parallel":
            with always_parallel():
                globals()["_" + module]()
        else:
            globals()["_" + module]()
