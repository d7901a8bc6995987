"""What the backends need to know about torch without importing it: whether it is already imported,
whether an object is a tensor, and the one way to import it (with the install hint when missing)."""

from __future__ import annotations

import sys

import numpy as np

#: Shown whenever torch is needed but missing.
TORCH_INSTALL_HINT = 'pip install "algos-theory[gpu]" -c constraints.txt'


def _torch_if_imported():
    """Return the torch module if it has already been imported, else ``None`` (never imports it)."""
    mod = sys.modules.get("torch")
    return mod if mod is not None and hasattr(mod, "Tensor") else None


def _is_tensor(x):
    """True if ``x`` is a ``torch.Tensor`` (or a subclass); never imports torch.

    An object can only be a tensor once torch has been imported, so ``sys.modules`` is enough.
    """
    torch = _torch_if_imported()
    return torch is not None and isinstance(x, torch.Tensor)


def _is_torch_device(x):
    torch = _torch_if_imported()
    return torch is not None and isinstance(x, torch.device)


def _import_torch():
    """Import torch, or raise ``ImportError`` with the install hint."""
    try:
        import torch
    except ImportError as exc:
        raise ImportError(
            f"The torch backend needs PyTorch, which is not installed. Install it with: {TORCH_INSTALL_HINT}"
        ) from exc
    return torch


def _to_numpy(x):
    """Any array-like (numpy, torch on any device, list, scalar) as a numpy array."""
    if _is_tensor(x):
        return x.detach().cpu().numpy()
    return np.asarray(x)
