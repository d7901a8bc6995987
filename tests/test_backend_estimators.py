"""Every estimator with a ``backend`` parameter follows :func:`accel.backend.resolve`.

For each one: ``"auto"`` on numpy input (and no accelerator ``device``) runs the CPU path, recorded as
``backend_ == "numpy"``; ``"numpy"`` and its older spelling ``"numba"`` are both accepted and run the CPU
path; any other name is a ``ValueError`` naming ``backend``.
"""

import numpy as np
import pytest


def _hybrid_ranking():
    from algos.fair_matching import HybridRanking, random_instance

    inst = random_instance(5, 6, n_classes=2, p=0.5, random_state=0)
    return (lambda backend: HybridRanking(n_runs=3, backend=backend, random_state=0)), (lambda est: est.fit(inst))


CASES = {
    "HybridRanking": _hybrid_ranking,
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("backend", ["auto", "numpy", "numba"])
def test_cpu_spellings_and_auto_on_numpy_input_run_the_cpu_path(name, backend):
    make, fit = CASES[name]()
    est = fit(make(backend))
    assert est.backend_ == "numpy"
    assert est.backend == backend  # the parameter is stored as given


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("bad", ["gpu", "Numpy", "cuda"])
def test_unknown_backend_names_the_parameter(name, bad):
    make, fit = CASES[name]()
    with pytest.raises(ValueError) as err:
        fit(make(bad))
    msg = str(err.value)
    assert "backend" in msg and repr(bad) in msg
    for option in ("auto", "numpy", "torch", "numba"):
        assert repr(option) in msg

