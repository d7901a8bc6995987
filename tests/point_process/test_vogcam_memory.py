"""VoGCAM's memory estimate: it bounds the measured peak of a fit, and an over-budget size is refused
before the quadrature or any factor is built."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from algos.point_process import VoGCAM
from algos.point_process.vogcam import _vogcam_solver
from algos.point_process.vogcam._vogcam_blocks import factor_entries_per_node, fit_memory_bytes

#: the estimate must lie within this factor of the measured peak (either way)
ESTIMATE_FACTOR = 1.5

_CHILD = r"""
import gc, json, sys, warnings
import numpy as np
from algos.point_process import VoGCAM
from algos.point_process.vogcam._vogcam_blocks import fit_memory_bytes


def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key + ":"))


n_points, n_dummy = int(sys.argv[1]), int(sys.argv[2])
X = np.random.default_rng(0).uniform(size=(n_points, 2))
# a small fit first: the kernels are compiled (on an empty numba cache that alone can pass the fit's
# own peak) and loaded; then the peak is reset (Linux: clear_refs 5 resets VmHWM) and read from there
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    VoGCAM(window=(0, 1, 0, 1), n_dummy=64, max_iter=2, random_state=0).fit(X[:200])
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = status("VmRSS")
    est = VoGCAM(window=(0, 1, 0, 1), n_dummy=n_dummy, max_iter=3, random_state=0).fit(X)
peak = status("VmHWM")
print(json.dumps({"nodes": int(est.n_nodes_), "peak": peak - base, "estimate": fit_memory_bytes(est.n_nodes_, 15)}))
"""


def _child_peak(n_points, n_dummy):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1",
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _CHILD, str(n_points), str(n_dummy)], env=env, cwd=root,
                         capture_output=True, text=True, timeout=900, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("n_points, n_dummy", [(2000, 14000), (5000, 35000)])
def test_estimate_is_within_a_factor_of_the_measured_peak(n_points, n_dummy):
    r = _child_peak(n_points, n_dummy)
    ratio = r["estimate"] / r["peak"]
    assert 1 / ESTIMATE_FACTOR <= ratio <= ESTIMATE_FACTOR, r


def test_estimate_grows_with_nodes_and_neighbours_and_uses_a_known_factor_size():
    assert fit_memory_bytes(10**5, 15) > fit_memory_bytes(10**4, 15) * 10
    assert fit_memory_bytes(10**5, 30) > fit_memory_bytes(10**5, 15)
    _, s = factor_entries_per_node(10**5, 15)
    assert fit_memory_bytes(10**5, 15, factor_entries=s) == fit_memory_bytes(10**5, 15)
    assert fit_memory_bytes(10**5, 15, factor_entries=2 * s) > fit_memory_bytes(10**5, 15)
    assert factor_entries_per_node(10, 15)[0] == 10  # q is capped at the node count


def test_explicit_n_dummy_over_budget_is_refused_fast_before_the_quadrature(monkeypatch):
    import algos.point_process.vogcam._vogcam as vogcam_module

    def no_quadrature(*args, **kwargs):
        raise AssertionError("the quadrature was built before the size was checked")

    monkeypatch.setattr(vogcam_module, "build_quadrature", no_quadrature)
    monkeypatch.setenv("ALGOS_MEMORY_BUDGET_MB", "100")
    X = np.random.default_rng(0).uniform(size=(50, 2))
    with pytest.raises(ValueError, match=r"'n_dummy'=1000000 with 1000050 nodes: .* about \d+(\.\d+)? GiB"):
        VoGCAM(window=(0, 1, 0, 1), n_dummy=10**6).fit(X)


def test_voronoi_auto_over_budget_is_refused_before_the_tessellation(monkeypatch):
    """With ``n_dummy="auto"`` every distinct point is a node: a pattern whose distinct points alone are
    over the budget is refused before the Voronoi quadrature is built (the count, a lower bound, is
    named as such; duplicates do not count)."""
    import algos.point_process.vogcam._vogcam as vogcam_module

    def no_quadrature(*args, **kwargs):
        raise AssertionError("the quadrature was built before the size was checked")

    monkeypatch.setattr(vogcam_module, "build_quadrature", no_quadrature)
    X = np.random.default_rng(0).uniform(size=(20_000, 2))
    X = np.vstack([X, X[:5000]])  # 5,000 copies: 20,000 distinct points
    need = vogcam_module.fit_memory_bytes(20_000, 15)
    monkeypatch.setenv("ALGOS_MEMORY_BUDGET_MB", str(int(need / 2**20) - 1))
    with pytest.warns(UserWarning, match="duplicated"), pytest.raises(
            ValueError, match=r"'n_dummy'='auto' with at least 20000 nodes: .* would need about \d+ MiB"):
        VoGCAM(window=(0, 1, 0, 1), quadrature="voronoi").fit(X)
    # just above the lower bound's estimate the check passes it on (to the quadrature, stubbed here)
    monkeypatch.setenv("ALGOS_MEMORY_BUDGET_MB", str(int(need / 2**20) + 1))
    with pytest.warns(UserWarning, match="duplicated"), pytest.raises(AssertionError, match="quadrature was built"):
        VoGCAM(window=(0, 1, 0, 1), quadrature="voronoi").fit(X)


def test_auto_quadrature_over_budget_is_refused_before_the_first_factorisation(monkeypatch):
    from algos.point_process._sparse import SparseCholesky

    def no_factor(self, data):
        raise AssertionError("factorised before the memory check")

    monkeypatch.setattr(SparseCholesky, "factor", no_factor)
    monkeypatch.setattr(_vogcam_solver, "_memory_budget", lambda: 2e6)
    X = np.random.default_rng(0).uniform(size=(300, 2))
    est = VoGCAM(window=(0, 1, 0, 1), solver="sparse", hyperparameters="elbo")
    with pytest.raises(ValueError, match=r"'n_dummy': \d+ quadrature nodes .* GiB .* KB per node"):
        est.fit(X)
