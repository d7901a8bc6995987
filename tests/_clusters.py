"""The local engines the scale-out tests start and stop themselves (127.0.0.1, 2 workers or CPUs)."""

from __future__ import annotations

import contextlib
import os

import pytest


@contextlib.contextmanager
def local_ray():
    """A local Ray session with 2 CPUs for the block (``ray`` is yielded); an already running one is reused."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():  # pragma: no cover - someone else's session
        yield ray
        return
    # keep Ray's default (no GPU masking) without its FutureWarning about a future default change
    had = "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO" in os.environ
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
        if not had:
            os.environ.pop("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", None)


@contextlib.contextmanager
def local_dask_cluster(processes=True):
    """A ``distributed.LocalCluster`` of 2 workers x 1 thread on 127.0.0.1 (no dashboard) for the block."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=processes, host="127.0.0.1",
                                       dashboard_address=None)
    try:
        yield cluster
    finally:
        cluster.close()
