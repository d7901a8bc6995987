"""``envelope(..., backend=...)``: the simulations on local processes and on a real Dask cluster give the
sequential envelope exactly (same child seed for simulation ``i`` whatever runs it)."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from algos.point_process import MinContrastFit, envelope, lgcp_min_contrast

WINDOW = (0.0, 1.0, 0.0, 1.0)


def _pattern():
    rng = np.random.default_rng(3)
    parents = rng.random((12, 2))
    kids = parents[rng.integers(0, 12, 150)] + 0.03 * rng.standard_normal((150, 2))
    return kids[(kids >= 0).all(1) & (kids <= 1).all(1)]


def _same(a, b):
    assert_array_equal(a.sims, b.sims)
    assert_array_equal(a.lo, b.lo)
    assert_array_equal(a.hi, b.hi)
    assert a.p_value == b.p_value and a.deviation == b.deviation


@pytest.fixture(scope="module")
def sequential():
    X = _pattern()
    return X, envelope("poisson", "L", n_sim=19, X=X, window=WINDOW, random_state=7)


def test_local_processes_give_the_sequential_envelope(sequential):
    X, seq = sequential
    _same(seq, envelope("poisson", "L", n_sim=19, X=X, window=WINDOW, random_state=7, backend="loky", n_jobs=2))
    _same(seq, envelope("poisson", "L", n_sim=19, X=X, window=WINDOW, random_state=7, backend="threading",
                        n_jobs=2))


def test_a_fitted_model_on_a_dask_cluster_gives_the_sequential_envelope():
    distributed = pytest.importorskip("distributed")
    X = _pattern()
    fit = lgcp_min_contrast(X, WINDOW)
    assert isinstance(fit, MinContrastFit)
    seq = envelope(fit, "K", n_sim=9, X=X, window=WINDOW, random_state=11)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  host="127.0.0.1") as cluster, distributed.Client(cluster):
        _same(seq, envelope(fit, "K", n_sim=9, X=X, window=WINDOW, random_state=11, backend="dask"))


def test_engine_arguments_are_checked_before_any_simulation(sequential):
    X, _ = sequential
    with pytest.raises(TypeError, match="'backend' must be"):
        envelope("poisson", n_sim=3, X=X, window=WINDOW, backend=2)
    with pytest.raises(ValueError, match="'scheduler' is only used with backend 'dask' or 'ray'"):
        envelope("poisson", n_sim=3, X=X, window=WINDOW, scheduler="tcp://127.0.0.1:1")
    with pytest.raises(ValueError, match="'backend' must be one of"):
        envelope("poisson", n_sim=3, X=X, window=WINDOW, backend="nonsense")
    pytest.importorskip("distributed")
    with pytest.raises(ValueError, match="needs a running dask.distributed client"):
        envelope("poisson", n_sim=3, X=X, window=WINDOW, backend="dask")


def test_cli_kfunction_runs_its_envelope_on_an_engine_with_the_same_result(tmp_path, capsys):
    from algos.cli import main

    path = tmp_path / "points.csv"
    np.savetxt(path, _pattern(), delimiter=",", header="window 0,1,0,1")
    assert main(["lgcp", "kfunction", str(path), "--nsim", "9", "--json"]) == 0
    sequential = capsys.readouterr().out
    assert main(["lgcp", "kfunction", str(path), "--nsim", "9", "--json", "--backend", "loky", "--n-jobs", "2"]) == 0
    assert capsys.readouterr().out == sequential
    assert main(["lgcp", "kfunction", str(path), "--nsim", "9", "--backend", "dask"]) == 2
    assert "'--scheduler' is required with --backend dask" in capsys.readouterr().err
    assert main(["lgcp", "kfunction", str(path), "--nsim", "9", "--scheduler", "tcp://127.0.0.1:1"]) == 2
    assert "'--scheduler' is only used with --backend dask or ray" in capsys.readouterr().err
