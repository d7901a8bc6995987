"""benchmarks/gpu_check.py in its CI mode (``--device cpu --quick``): runs, prints the table, writes
JSON, and every accel core agrees with its numba / numpy twin at the quick sizes."""

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
                          "--json", str(out)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    doc = json.loads(out.read_text())
    cores = {r["core"]: r for r in doc["cores"]}
    for name in ("PBVI backup", "reservoir scan", "SLDA update", "Gaussian sketch", "Huber IRLS", "HybridRanking",
                 "NNGP rows", "dense step", "FedAvg"):
        hits = [r for c, r in cores.items() if name in c]
        assert len(hits) == 1, name
        assert hits[0]["ok"] and hits[0]["max_abs_diff"] <= hits[0]["tolerance"], hits[0]
    assert doc["tests"]["returncode"] in (0, 5), doc["tests"]["output_tail"]  # passed, or none selected
    assert "| core" in run.stdout and "twin/torch" in run.stdout


def test_gpu_check_refuses_cuda_without_a_device():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the refusal path cannot be exercised here")
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_check.py"), "--no-tests"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "no CUDA device is available" in run.stderr
