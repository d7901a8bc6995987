"""Shared test configuration: Hypothesis profiles and data fixtures.

Profiles (choose with ``ALGOS_HYPOTHESIS_PROFILE``; CI uses ``ci``):

* ``dev``: few examples, for quick local iterations.
* ``ci``: the default; ``derandomize=True`` (a fixed example sequence, so CI is reproducible) and
  ``deadline=None`` (numba compiles on first call); example counts sized so the whole suite stays
  well under 20 minutes on 2 cores.
* ``thorough``: many examples, for a release.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from tests._data import missing_data

settings.register_profile(
    "ci",
    max_examples=40,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", max_examples=10, deadline=None, derandomize=True)
settings.register_profile(
    "thorough", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("ALGOS_HYPOTHESIS_PROFILE", "ci"))

REPO_ROOT = Path(__file__).resolve().parents[1]


def _cuda_available():
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture(scope="session")
def shared_data_dir():
    """The shared data folder: ``$ALGOS_SHARED_DATA`` or ``<repo>/../shared/data``.

    Tests that need it skip (with the reason) only when the folder does not exist, and fail instead
    under ``CI=true``: CI has the folder, so a missing one there is an error, not a skip.
    """
    path = Path(os.environ.get("ALGOS_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
    if not path.is_dir():
        missing_data(f"shared data folder {path}")
    return path


@pytest.fixture
def rng():
    """A fixed-seed numpy Generator for tests that need one ad hoc."""
    return np.random.default_rng(20261130)


@pytest.fixture(params=["numpy", "torch"])
def backend_name(request):
    """Both array backends; the torch one is skipped when torch is not installed."""
    if request.param == "torch":
        pytest.importorskip("torch")
    return request.param
