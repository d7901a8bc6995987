"""Serial twins of the row-wise ``parallel=True`` kernels (``algos._parallel``): the same values bit for
bit, cached where the parallel kernel is not, and picked for small inputs so that a small fit in a fresh
process compiles no parallel kernel."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest
from numba.core.caching import NullCache

from algos import _parallel
from algos.continual import _kernels as ck
from algos.federated import _kernels as fk
from algos.point_process import _kernels as pk
from algos.point_process.vogcam import _nngp

ROOT = Path(__file__).resolve().parents[1]
PAIRS = [(pk.clip_areas, pk.clip_areas_serial), (pk.nngp_rows, pk.nngp_rows_serial),
         (pk.predict_rows, pk.predict_rows_serial), (_nngp.neighbour_distances, _nngp.neighbour_distances_serial),
         (ck.grid_scan4, ck.grid_scan4_serial), (fk.local_gd_clients, fk.local_gd_clients_serial)]


@pytest.mark.parametrize("kernel, twin", PAIRS, ids=[k.py_func.__name__ for k, _ in PAIRS])
def test_twin_is_the_same_function_serial_and_cached(kernel, twin):
    assert twin.py_func is kernel.py_func
    assert kernel.targetoptions.get("parallel") and not twin.targetoptions.get("parallel")
    assert isinstance(kernel._cache, NullCache) and not isinstance(twin._cache, NullCache)


def _nngp_inputs(N=300, k=6, seed=0):
    rng = np.random.default_rng(seed)
    coords = rng.uniform(size=(N, 2))
    nbr = np.full((N, k), -1, dtype=np.int64)
    cnt = np.zeros(N, dtype=np.int64)
    for i in range(1, N):  # the k nearest earlier nodes
        d = np.hypot(*(coords[:i] - coords[i]).T)
        nn = np.argsort(d)[:k]
        nbr[i, :len(nn)] = nn
        cnt[i] = len(nn)
    return coords, nbr, cnt


def test_row_kernels_equal_their_twins_bit_for_bit():
    coords, nbr, cnt = _nngp_inputs()
    for kern, twin in [(pk.nngp_rows, pk.nngp_rows_serial)]:
        for a, b in zip(kern(coords, nbr, cnt, 0.1, 1, 1e-8), twin(coords, nbr, cnt, 0.1, 1, 1e-8)):
            np.testing.assert_array_equal(a, b)
    xq = np.random.default_rng(1).uniform(size=(50, 2))
    qn = np.argsort(np.hypot(xq[:, None, 0] - coords[None, :, 0], xq[:, None, 1] - coords[None, :, 1]), axis=1)[:, :6]
    qn = np.ascontiguousarray(qn, dtype=np.int64)
    qc = np.full(50, 6, dtype=np.int64)
    for a, b in zip(pk.predict_rows(xq, coords, qn, qc, 0.1, 0, 1e-8),
                    pk.predict_rows_serial(xq, coords, qn, qc, 0.1, 0, 1e-8)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(_nngp.neighbour_distances(coords, nbr, cnt),
                                  _nngp.neighbour_distances_serial(coords, nbr, cnt))


def test_clip_areas_equal_their_twin_and_sum_to_the_window():
    from scipy.spatial import Voronoi

    from algos.point_process._quadrature import voronoi_weights

    rng = np.random.default_rng(2)
    P = rng.uniform(size=(200, 2))
    far = np.array([[-10.0, -10.0], [10.0, -10.0], [10.0, 10.0], [-10.0, 10.0]])
    vor = Voronoi(np.vstack([P, far]))
    regions = [vor.regions[vor.point_region[i]] for i in range(len(P))]
    ptr = np.concatenate([[0], np.cumsum([len(r) for r in regions])]).astype(np.int64)
    vidx = np.array([v for r in regions for v in r], dtype=np.int64)
    ring = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    a = pk.clip_areas(ptr, vidx, vor.vertices, P, ring)
    b = pk.clip_areas_serial(ptr, vidx, vor.vertices, P, ring)
    np.testing.assert_array_equal(a, b)
    assert abs(b.sum() - 1.0) < 1e-12
    np.testing.assert_allclose(voronoi_weights(P, (0, 1, 0, 1)), b, rtol=1e-12, atol=1e-15)


def test_grid_scan_equals_its_twin_bit_for_bit():
    rng = np.random.default_rng(3)
    Z = rng.standard_normal((2, 5, 6, 12))
    Ws = rng.standard_normal((4, 3, 3)) * 0.3
    out_p, out_s = np.empty_like(Z), np.empty_like(Z)
    ck.grid_scan4(Z, Ws, 0.7, 0, 0.01, out_p)
    ck.grid_scan4_serial(Z, Ws, 0.7, 0, 0.01, out_s)
    np.testing.assert_array_equal(out_p, out_s)


def test_pick_takes_the_parallel_kernel_from_the_threshold_on_and_under_always_parallel(monkeypatch):
    kern, twin = pk.nngp_rows, pk.nngp_rows_serial
    monkeypatch.setattr(numba, "get_num_threads", lambda: 2)
    assert pk.rows_kernel(kern, pk.PARALLEL_MIN_ROWS - 1) is twin
    assert pk.rows_kernel(kern, pk.PARALLEL_MIN_ROWS) is kern
    assert ck.grid_scan4_for(ck.PARALLEL_MIN_PIXELS - 1) is ck.grid_scan4_serial
    assert ck.grid_scan4_for(ck.PARALLEL_MIN_PIXELS) is ck.grid_scan4
    with _parallel.always_parallel():
        assert pk.rows_kernel(kern, 1) is kern
    assert pk.rows_kernel(kern, 1) is twin
    monkeypatch.setattr(numba, "get_num_threads", lambda: 1)  # one thread: never the parallel kernel
    assert pk.rows_kernel(kern, 10 * pk.PARALLEL_MIN_ROWS) is twin
    with pytest.raises(TypeError, match="'kernel' must be a parallel=True numba kernel"):
        _parallel.serial_twin(pk.nngp_rows_serial)


_CHILD = r"""
import json, warnings
warnings.simplefilter("ignore")
import numpy as np
from algos.continual import BiReservoir2D
from algos.continual import _kernels as ck
from algos.federated import _kernels as fk
from algos.fair_matching import HybridRanking, random_instance
from algos.fair_matching import _ranking_kernels as fk
from algos.point_process import VoGCAM, simulate_lgcp
from algos.point_process import _kernels as pk
from algos.point_process.vogcam import _nngp

X = simulate_lgcp((0, 1, 0, 1), 5.0, 0.5, 0.1, grid=32, random_state=0).points
est = VoGCAM(window=(0, 1, 0, 1), max_iter=3, random_state=0).fit(X)
est.predict_log_intensity(X[:20], return_std=True)
BiReservoir2D(units=4).fit_transform(np.random.default_rng(0).random((6, 8, 8, 1)))
HybridRanking(n_runs=16).fit(random_instance(30, 30, 3, p=0.2, random_state=0))
kernels = [pk.clip_areas, pk.nngp_rows, pk.predict_rows, _nngp.neighbour_distances, ck.grid_scan4,
           fk._hybrid_ranking_parallel]
print(json.dumps({k.py_func.__name__: len(k.signatures) for k in kernels}))
"""


def test_small_fits_in_a_fresh_process_compile_no_parallel_kernel():
    out = subprocess.run([sys.executable, "-c", _CHILD], cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env={**__import__("os").environ, "NUMBA_NUM_THREADS": "2"})
    assert out.returncode == 0, out.stderr[-3000:]
    compiled = json.loads(out.stdout.strip().splitlines()[-1])
    assert compiled == {k: 0 for k in compiled}, compiled
