"""Every estimator with a ``backend`` parameter follows :func:`accel.backend.resolve`.

For each one: ``"auto"`` on numpy input (and no accelerator ``device``) runs the CPU path, recorded as
``backend_ == "numpy"``; ``"numpy"`` and its older spelling ``"numba"`` are both accepted and run the CPU
path; any other name is a ``ValueError`` naming ``backend``.
"""

import numpy as np
import pytest

# short fits: whether they converge is not what these tests check
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _hybrid_ranking():
    from algos.fair_matching import HybridRanking, random_instance

    inst = random_instance(5, 6, n_classes=2, p=0.5, random_state=0)
    return (lambda backend: HybridRanking(n_runs=3, backend=backend, random_state=0)), (lambda est: est.fit(inst))


def _huber_data(n=40, d=3):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    return X, X @ np.arange(1.0, d + 1) + 0.1 * rng.standard_normal(n)


def _huber():
    from algos.hetero_regression import HuberSoSRegressor

    X, y = _huber_data()
    return (lambda backend: HuberSoSRegressor(backend=backend)), (lambda est: est.fit(X, y))


def _networked():
    from algos.networked_learning import NetworkedDAGRegressor

    X, y = _huber_data(n=60, d=4)
    return (lambda backend: NetworkedDAGRegressor(protocol="sketch", k=30, backend=backend, random_state=0)), (
        lambda est: est.fit(X, y))


def _potara_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    return X, (X[:, 0] > 0).astype(int), np.arange(40) % 2


def _potara():
    from algos.federated import PotaraClassifier

    X, y, ids = _potara_data()
    return (lambda backend: PotaraClassifier(n_rounds=2, finetune_epochs=2, n_bootstrap=2, random_state=0,
                                             backend=backend)), (lambda est: est.fit(X, y, ids))


def _reservoir():
    from algos.continual import BiReservoir2D

    X = np.random.default_rng(0).uniform(size=(2, 4, 4, 3))
    return (lambda backend: BiReservoir2D(units=4, random_state=0, backend=backend)), (lambda est: est.fit(X))


def _birc2d():
    from algos.continual import BiRC2DFeatures

    X = np.random.default_rng(0).uniform(size=(2, 16))
    return (lambda backend: BiRC2DFeatures(image_shape=(1, 4, 4), units=2, random_state=0, backend=backend)), (
        lambda est: est.fit(X))


def _pbvi():
    from algos.pomdp import PBVI, tiger

    return (lambda backend: PBVI(n_beliefs=5, max_iter=3, random_state=0, backend=backend)), (
        lambda est: est.fit(tiger()))


def _pbs():
    from algos.pomdp import PointBasedSolver, tiger

    return (lambda backend: PointBasedSolver(max_trials=2, backend=backend)), (lambda est: est.fit(tiger()))


def _vogcam_points():
    return np.random.default_rng(0).uniform(size=(20, 2))


def _vogcam():
    from algos.point_process import VoGCAM

    X = _vogcam_points()
    kw = dict(window=(0, 1, 0, 1), n_dummy=25, max_iter=3, random_state=0, optimize_hyperparameters=())
    return (lambda backend: VoGCAM(**kw, backend=backend)), (lambda est: est.fit(X))


CASES = {
    "VoGCAM": _vogcam,
    "PBVI": _pbvi,
    "PointBasedSolver": _pbs,
    "BiReservoir2D": _reservoir,
    "BiRC2DFeatures": _birc2d,
    "PotaraClassifier": _potara,
    "NetworkedDAGRegressor": _networked,
    "HybridRanking": _hybrid_ranking,
    "HuberSoSRegressor": _huber,
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("backend", ["auto", "numpy", "numba"])
def test_cpu_spellings_and_auto_on_numpy_input_run_the_cpu_path(name, backend):
    make, fit = CASES[name]()
    est = fit(make(backend))
    assert est.backend_ == "numpy"
    assert est.backend == backend  # the parameter is stored as given


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("bad", ["gpu", "Numpy", "cuda"])
def test_unknown_backend_names_the_parameter(name, bad):
    make, fit = CASES[name]()
    with pytest.raises(ValueError) as err:
        fit(make(bad))
    msg = str(err.value)
    assert "backend" in msg and repr(bad) in msg
    for option in ("auto", "numpy", "torch", "numba"):
        assert repr(option) in msg



# ------------------------------------------------------------------------- torch-path constraints
def test_huber_auto_with_tensors_is_torch_unless_lbfgs():
    torch = pytest.importorskip("torch")
    from algos.hetero_regression import HuberSoSRegressor

    X, y = _huber_data()
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    est = HuberSoSRegressor(backend="auto", solver="mm").fit(Xt, yt)
    assert est.backend_ == "torch"
    ref = HuberSoSRegressor(backend="numpy", solver="mm").fit(X, y)
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-6, atol=1e-8)
    # the torch core has no L-BFGS: "auto" falls back to the CPU path, an explicit "torch" is refused
    assert HuberSoSRegressor(backend="auto", solver="lbfgs").fit(Xt, yt).backend_ == "numpy"
    with pytest.raises(ValueError, match="backend.*solver"):
        HuberSoSRegressor(backend="torch", solver="lbfgs").fit(X, y)


def test_networked_torch_needs_the_gaussian_sketch():
    torch = pytest.importorskip("torch")
    from algos.networked_learning import NetworkedDAGRegressor

    X, y = _huber_data(n=60, d=4)
    # tensor input under "auto" -> the torch core, the same sketch as the CPU path
    est = NetworkedDAGRegressor(protocol="sketch", k=30, random_state=0, backend="auto", device="cpu")
    est.fit(torch.from_numpy(X), torch.from_numpy(y))
    ref = NetworkedDAGRegressor(protocol="sketch", k=30, random_state=0, backend="numpy").fit(X, y)
    assert (est.backend_, ref.backend_) == ("torch", "numpy")
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-8, atol=1e-10)
    # "auto" with an accelerator device: only the Gaussian sketch has a torch core, so "full" keeps the CPU path
    est = NetworkedDAGRegressor(protocol="full", backend="auto", device="cuda").fit(X, y)
    assert est.backend_ == "numpy"
    for kw in ({"protocol": "full"}, {"protocol": "sketch", "sketch": "srht", "k": 30}):
        with pytest.raises(ValueError, match="backend.*protocol.*sketch"):
            NetworkedDAGRegressor(backend="torch", **kw).fit(X, y)


def test_potara_torch_needs_full_batch():
    torch = pytest.importorskip("torch")
    from algos.federated import LowRankSoftmax, PotaraClassifier

    X, y, ids = _potara_data()
    kw = dict(n_rounds=2, finetune_epochs=2, n_bootstrap=2, random_state=0)
    # tensor input under "auto" -> the batched torch core; with mini-batches "auto" keeps the CPU path
    est = PotaraClassifier(**kw, backend="auto", device="cpu").fit(torch.from_numpy(X), torch.from_numpy(y), ids)
    assert est.backend_ == "torch"
    est = PotaraClassifier(base_estimator=LowRankSoftmax(batch_size=8), **kw, backend="auto", device="cuda")
    est = est.fit(X, y, ids)
    assert est.backend_ == "numpy"
    with pytest.raises(ValueError, match="backend='torch'.*'batch_size'"):
        PotaraClassifier(base_estimator=LowRankSoftmax(batch_size=8), **kw, backend="torch").fit(X, y, ids)


def test_reservoir_features_pass_the_resolved_backend_to_their_blocks():
    torch = pytest.importorskip("torch")
    from algos.continual import BiRC2DFeatures, BiReservoir2D

    X = np.random.default_rng(0).uniform(size=(2, 16))
    for backend in ("auto", "numba"):
        f = BiRC2DFeatures(image_shape=(1, 4, 4), units=2, random_state=0, backend=backend).fit(X)
        assert [b.backend_ for b in f.blocks_] == ["numpy"] * len(f.blocks_)
    # a torch tensor given to fit under "auto" selects the torch scans, with the same features
    f = BiRC2DFeatures(image_shape=(1, 4, 4), units=2, random_state=0, backend="auto", device="cpu",
                       dtype=np.float64).fit(torch.from_numpy(X))
    ref = BiRC2DFeatures(image_shape=(1, 4, 4), units=2, random_state=0, backend="numpy", dtype=np.float64).fit(X)
    assert f.backend_ == "torch" and {b.backend_ for b in f.blocks_} == {"torch"}
    np.testing.assert_allclose(f.transform(X), ref.transform(X), rtol=1e-9, atol=1e-12)
    Xg = np.random.default_rng(1).uniform(size=(2, 4, 4, 3))
    assert BiReservoir2D(units=4, random_state=0, backend="auto").fit(torch.from_numpy(Xg)).backend_ == "torch"


def test_pomdp_solvers_auto_with_a_tensor_model_is_torch():
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    from algos.pomdp import PBVI, PointBasedSolver, tiger

    m = tiger()
    tm = SimpleNamespace(T=torch.from_numpy(np.asarray(m.T, float)), Z=np.asarray(m.Z, float),
                         r=np.asarray(m.r, float), discount=m.discount, b0=getattr(m, "b0", None))
    a = PBVI(n_beliefs=5, max_iter=3, random_state=0, backend="auto", device="cpu").fit(tm)
    ref = PBVI(n_beliefs=5, max_iter=3, random_state=0, backend="numpy").fit(m)
    assert (a.backend_, ref.backend_) == ("torch", "numpy")
    np.testing.assert_allclose(a.value_, ref.value_, rtol=1e-9)
    assert PointBasedSolver(max_trials=2, backend="auto", device="cpu").fit(tm).backend_ == "torch"


def test_vogcam_auto_keeps_the_cpu_path_for_the_sparse_solver():
    torch = pytest.importorskip("torch")
    from algos.point_process import VoGCAM

    X = _vogcam_points()
    kw = dict(window=(0, 1, 0, 1), n_dummy=25, max_iter=3, random_state=0, optimize_hyperparameters=())
    assert VoGCAM(**kw, backend="auto", device="cpu").fit(torch.from_numpy(X)).backend_ == "torch"
    assert VoGCAM(**kw, backend="auto", solver="sparse", device="cuda").fit(X).backend_ == "numpy"
    with pytest.raises(ValueError, match="backend='torch'.*solver='sparse'"):
        VoGCAM(**kw, backend="torch", solver="sparse").fit(X)
