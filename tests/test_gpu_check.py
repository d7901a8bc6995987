"""benchmarks/gpu_check.py in its CI mode (``--device cpu --quick``): runs, prints the table, writes
JSON, and every accel core agrees with its numba / numpy twin at the quick sizes. Its first step
(``pytest -m gpu`` on the files that hold a GPU test) is left out here (``--no-tests``): on a machine
without CUDA every one of those tests skips, as it does in this suite; the files it would run are
checked instead."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_gpu_check_quick_on_cpu(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "gpu_check.json"
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_check.py"), "--device", "cpu", "--quick",
                          "--no-tests", "--json", str(out)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    doc = json.loads(out.read_text())
    cores = {r["core"]: r for r in doc["cores"]}
    for name in ("PBVI backup", "reservoir scan", "SLDA update", "Gaussian sketch", "Huber IRLS", "HybridRanking",
                 "NNGP rows", "dense step", "FedAvg"):
        hits = [r for c, r in cores.items() if name in c]
        assert len(hits) == 1, name
        assert hits[0]["ok"] and hits[0]["max_abs_diff"] <= hits[0]["tolerance"], hits[0]
    assert "| core" in run.stdout and "twin/torch" in run.stdout


def test_gpu_check_refuses_cuda_without_a_device():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the refusal path cannot be exercised here")
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_check.py"), "--no-tests"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "no CUDA device is available" in run.stderr


def test_gpu_check_runs_the_files_that_hold_gpu_tests():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import gpu_check
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    files = gpu_check.gpu_test_files()
    marked = sorted(str(p.relative_to(REPO)) for p in (REPO / "tests").rglob("test_*.py")
                    if "@pytest.mark.gpu" in p.read_text())
    assert marked and set(marked) <= set(files), (marked, files)
    assert "tests/pomdp/test_pbs_torch.py" in files
