"""PotaraClassifier(backend="torch"): the FedAvg rounds and the fine-tuning on accel's batched core.

Parity with the numpy (numba) path on CPU torch; the same test on CUDA with ``@pytest.mark.gpu``.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.datasets import load_digits

from algos.federated import LowRankSoftmax
from algos.federated._data import dirichlet_label_split
from algos.federated._potara import PotaraClassifier

# float64 on both paths; the batched bmm sums in another order than the numba loops, and R rounds of
# GD plus the merge can amplify round-off by a few orders of magnitude: 1e-10 leaves room for that and
# still fails any algorithmic difference (one lost GD step moves parameters by ~1e-3).
ATOL = 1e-10


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    keep = np.random.default_rng(3).random(len(y)) < 0.4
    X, y = X[keep], y[keep]
    X = (X - X.mean(0)) / (X.std(0) + 1e-12)
    return X, y, dirichlet_label_split(y, 6, 0.5, min_size=10, random_state=1)


def _compare(a, b):
    for k, v in a.federated_model_.items():
        assert_allclose(b.federated_model_[k], v, rtol=0, atol=ATOL, err_msg=f"federated {k}")
    for c in a.clients_.tolist():
        for k, v in a.local_models_[c].items():
            assert_allclose(b.local_models_[c][k], v, rtol=0, atol=ATOL, err_msg=f"local {c} {k}")
        for k, v in a.personalized_models_[c].items():
            assert_allclose(b.personalized_models_[c][k], v, rtol=0, atol=ATOL, err_msg=f"merged {c} {k}")
        for k, v in a.mixing_weights_[c].items():
            assert_allclose(b.mixing_weights_[c][k], v, rtol=0, atol=ATOL, err_msg=f"lambda {c} {k}")
    assert [h["bytes_sent"] for h in a.history_] == [h["bytes_sent"] for h in b.history_]


@pytest.mark.parametrize("base, fraction, method", [
    (None, 1.0, "bootstrap"),
    (LowRankSoftmax(rank=3, lr=0.5), 0.5, "sandwich"),  # LoRA head (W frozen) and client sampling
])
def test_torch_backend_matches_numpy_on_cpu(digits, base, fraction, method):
    pytest.importorskip("torch")
    X, y, ids = digits
    kw = dict(base_estimator=base, n_rounds=3, local_epochs=2, finetune_epochs=4, client_fraction=fraction,
              variance_method=method, n_bootstrap=3, random_state=0)
    ref = PotaraClassifier(**kw).fit(X, y, ids)
    got = PotaraClassifier(**kw, backend="torch", device="cpu").fit(X, y, ids)
    _compare(ref, got)
    assert got.score(X, y, ids) == ref.score(X, y, ids)


@pytest.mark.gpu
def test_torch_backend_matches_numpy_on_cuda(digits):
    X, y, ids = digits
    kw = dict(n_rounds=3, local_epochs=2, finetune_epochs=4, n_bootstrap=3, random_state=0)
    _compare(PotaraClassifier(**kw).fit(X, y, ids),
             PotaraClassifier(**kw, backend="torch", device="cuda").fit(X, y, ids))


def test_backend_errors():
    X = np.random.default_rng(0).normal(size=(20, 3))
    y = np.arange(20) % 2
    ids = np.arange(20) % 2
    with pytest.raises(ValueError,
                       match=r"^'backend' must be one of \{'auto', 'numpy', 'torch', 'numba'\}; got 'cuda'\.$"):
        PotaraClassifier(backend="cuda").fit(X, y, ids)
    with pytest.raises(TypeError, match=r"^'device' must be None, a str or a torch\.device; got 0 of type int\.$"):
        PotaraClassifier(backend="torch", device=0).fit(X, y, ids)
    pytest.importorskip("torch")
    with pytest.raises(ValueError, match=r"^backend='torch' runs full-batch gradient descent: set the base "
                                         r"estimator's 'batch_size' to None \(got 8\)"):
        PotaraClassifier(base_estimator=LowRankSoftmax(batch_size=8), backend="torch").fit(X, y, ids)
    # auto without CUDA (or with mini-batches): the numpy path, same result as backend="numpy"
    a = PotaraClassifier(n_rounds=2, random_state=0, backend="auto").fit(X, y, ids)
    b = PotaraClassifier(n_rounds=2, random_state=0).fit(X, y, ids)
    for k in a.federated_model_:
        assert_allclose(a.federated_model_[k], b.federated_model_[k], rtol=0, atol=ATOL)
