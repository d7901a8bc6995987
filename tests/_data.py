"""Missing team data: a skip on a developer's machine, a failure under ``CI=true``.

CI always has the shared data folder, so a file missing there is an error that a skip would hide.
"""

import os

import pytest


def under_ci():
    """True when the ``CI`` environment variable says so (``1``, ``true`` or ``yes``)."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing_data(what):
    """Skip the calling test because ``what`` is missing, or fail it under ``CI=true``."""
    if under_ci():
        pytest.fail(f"{what} not found under CI=true (set ALGOS_SHARED_DATA)")
    pytest.skip(f"{what} not found")
