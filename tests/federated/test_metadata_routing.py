"""``client_ids`` optional (one client) and routed as metadata through scikit-learn meta-estimators."""

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score

import algos.federated as FD

FEDERATED = [name for name in FD.__all__ if isinstance(getattr(FD, name), type)
             and issubclass(getattr(FD, name), FD.FederatedClassifierBase) and name != "FederatedClassifierBase"]


def _data():
    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    return X, y, np.arange(len(y)) % 3


@pytest.fixture
def routing():
    sklearn.set_config(enable_metadata_routing=True)
    yield
    sklearn.set_config(enable_metadata_routing=False)


def test_every_federated_classifier_is_covered():
    assert set(FEDERATED) == {"PotaraClassifier"} | {cls.__name__ for cls in FD.BASELINES.values()}


@pytest.mark.parametrize("name", FEDERATED)
def test_client_ids_none_is_one_client(name):
    X, y, _ = _data()
    est = getattr(FD, name)(random_state=0).fit(X, y)
    assert est.clients_.tolist() == [0]
    zeros = np.zeros(len(y), dtype=int)
    twin = getattr(FD, name)(random_state=0).fit(X, y, zeros)
    for method in ("predict", "predict_proba", "decision_function"):
        np.testing.assert_array_equal(getattr(est, method)(X), getattr(twin, method)(X, zeros))
    assert est.score(X, y) == twin.score(X, y, zeros)
    assert est.client_scores(X, y) == twin.client_scores(X, y, zeros) == {0: est.score(X, y)}


@pytest.mark.parametrize("name", ["PotaraClassifier", "FedAvgClassifier", "LocalOnlyClassifier"])
def test_client_ids_none_after_several_clients_is_an_error(name):
    X, y, ids = _data()
    est = getattr(FD, name)(random_state=0).fit(X, y, ids)
    for method in ("predict", "predict_proba", "decision_function"):
        with pytest.raises(ValueError, match=r"^the model was fitted on 3 clients: pass 'client_ids'"):
            getattr(est, method)(X)
    for method in ("score", "client_scores"):
        with pytest.raises(ValueError, match=r"^the model was fitted on 3 clients: pass 'client_ids'"):
            getattr(est, method)(X, y)


def test_one_string_client_keeps_its_name():
    X, y, _ = _data()
    est = FD.FedAvgClassifier(n_rounds=3, random_state=0).fit(X, y, np.full(len(y), "site-a"))
    assert list(est.client_scores(X, y)) == ["site-a"]
    np.testing.assert_array_equal(est.predict(X), est.predict(X, np.full(len(y), "site-a")))


def test_oracle_grid_validation_ids_none_needs_one_client():
    X, y, ids = _data()
    one = FD.OracleGridClassifier(n_rounds=3, random_state=0).fit(X, y, None, X, y)
    assert set(one.mixing_weights_) == {0}
    with pytest.raises(ValueError, match="fitted on 3 clients: pass 'val_client_ids'"):
        FD.OracleGridClassifier(n_rounds=3, random_state=0).fit(X, y, ids, X, y)


def test_binary_decision_function_is_the_margin_of_the_second_class():
    X, y, ids = _data()
    keep = y < 2
    est = FD.FedAvgClassifier(n_rounds=3, random_state=0).fit(X[keep], y[keep], ids[keep])
    d = est.decision_function(X[keep], ids[keep])
    assert d.shape == (keep.sum(),)
    np.testing.assert_array_equal(est.predict(X[keep], ids[keep]), est.classes_[(d > 0).astype(int)])


@pytest.mark.parametrize("name", ["PotaraClassifier", "FedAvgClassifier", "DittoClassifier"])
def test_grid_search_routes_client_ids_to_fit_and_score(routing, name):
    X, y, ids = _data()
    est = getattr(FD, name)(random_state=0).set_fit_request(client_ids=True).set_score_request(client_ids=True)
    grid = {"n_rounds": [2, 6]}
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    search = GridSearchCV(est, grid, cv=cv, error_score="raise").fit(X, y, client_ids=ids)
    # the same folds by hand: the fold's ids to fit, the held-out ids to score
    for i, n_rounds in enumerate(grid["n_rounds"]):
        scores = []
        for train, test in cv.split(X, y):
            fold = clone(est).set_params(n_rounds=n_rounds).fit(X[train], y[train], ids[train])
            assert fold.clients_.tolist() == [0, 1, 2]
            scores.append(fold.score(X[test], y[test], ids[test]))
        assert search.cv_results_["mean_test_score"][i] == pytest.approx(np.mean(scores), abs=1e-12)
    best = search.best_estimator_
    assert best.clients_.tolist() == [0, 1, 2]
    assert search.score(X, y, client_ids=ids) == best.score(X, y, ids)


def test_cross_val_score_routes_client_ids(routing):
    X, y, ids = _data()
    est = FD.LocalOnlyClassifier(epochs=20, random_state=0)
    est.set_fit_request(client_ids=True).set_score_request(client_ids=True)
    got = cross_val_score(est, X, y, cv=3, params={"client_ids": ids}, error_score="raise")
    cv = StratifiedKFold(3)
    want = [clone(est).fit(X[tr], y[tr], ids[tr]).score(X[te], y[te], ids[te]) for tr, te in cv.split(X, y)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_without_routing_the_api_is_unchanged():
    X, y, ids = _data()
    assert not sklearn.get_config()["enable_metadata_routing"]
    est = FD.FedAvgClassifier(n_rounds=3, random_state=0)
    assert est.fit(X, y, ids) is est  # positional, as before
    assert est.score(X, y, ids) == pytest.approx(np.mean(est.predict(X, ids) == y), abs=0)
    kw = FD.FedAvgClassifier(n_rounds=3, random_state=0).fit(X, y, client_ids=ids)
    np.testing.assert_array_equal(kw.predict(X, client_ids=ids), est.predict(X, ids))
    with pytest.raises(RuntimeError, match="metadata routing is enabled"):
        est.set_fit_request(client_ids=True)
    # fit parameters still reach fit; score has no ids then, and says what is missing
    search = GridSearchCV(FD.FedAvgClassifier(random_state=0), {"n_rounds": [2]}, cv=3, error_score="raise")
    with pytest.raises(ValueError, match="fitted on 3 clients: pass 'client_ids'"):
        search.fit(X, y, client_ids=ids)
