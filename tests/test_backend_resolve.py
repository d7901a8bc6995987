"""accel.backend.resolve: the one rule every estimator's ``backend`` option follows."""

import builtins

import numpy as np
import pytest

from accel import backend as B


def test_auto_with_numpy_is_the_cpu_path():
    assert B.resolve("auto", arrays=(np.zeros(3), np.ones((2, 2)))) == "numpy"
    assert B.resolve("auto") == "numpy"
    assert B.resolve("auto", device="cpu", arrays=(np.zeros(3),)) == "numpy"


def test_numba_is_an_alias_of_numpy():
    assert B.resolve("numba") == "numpy"
    assert B.resolve("numpy", arrays=(np.zeros(2),)) == "numpy"


def test_auto_with_a_torch_tensor_is_torch():
    torch = pytest.importorskip("torch")
    assert B.resolve("auto", arrays=(np.zeros(2), torch.zeros(3))) == "torch"
    assert B.resolve("torch") == "torch"


def test_auto_with_an_accelerator_device_is_torch():
    pytest.importorskip("torch")
    assert B.resolve("auto", device="cuda", arrays=(np.zeros(3),)) == "torch"


@pytest.mark.parametrize("bad", ["gpu", "Numpy", "cuda", ""])
def test_unknown_name_names_backend_and_the_options(bad):
    with pytest.raises(ValueError) as err:
        B.resolve(bad)
    msg = str(err.value)
    assert "'backend'" in msg and repr(bad) in msg
    for option in ("auto", "numpy", "torch", "numba"):
        assert repr(option) in msg


def test_non_string_is_a_type_error():
    with pytest.raises(TypeError, match="'backend'"):
        B.resolve(None)


def _hide_torch(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("No module named 'torch'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(__import__("sys").modules, "torch", raising=False)
    monkeypatch.setattr(builtins, "__import__", fake_import)


def test_torch_missing_is_the_one_import_error(monkeypatch):
    _hide_torch(monkeypatch)
    for call in (lambda: B.resolve("torch"), lambda: B.resolve("auto", device="cuda"), B.require_torch):
        with pytest.raises(ImportError) as err:
            call()
        msg = str(err.value)
        assert "backend='torch' needs PyTorch" in msg and B.TORCH_INSTALL_HINT in msg
    # numpy input under "auto" never needs torch
    assert B.resolve("auto", arrays=(np.zeros(3),)) == "numpy"


def test_estimators_raise_the_one_import_error(monkeypatch):
    from algos.pomdp import PBVI, tiger

    _hide_torch(monkeypatch)
    with pytest.raises(ImportError, match="needs PyTorch") as err:
        PBVI(backend="torch").fit(tiger())
    assert B.TORCH_INSTALL_HINT in str(err.value)
