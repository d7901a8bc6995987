r"""torch core of :mod:`algos.federated`: all clients' models as one batched tensor.

:func:`train_clients_batched` runs full-batch gradient descent for ``M`` clients at once: the clients'
data are padded into ``X [M, n_max, d]`` (a mask zeroes the padding), their models stacked as
``W [M, d, C]``, ``b [M, C]`` (and the adapter ``A [M, d, r]``, ``B [M, r, C]``); one GD step is a few
``bmm`` calls. :func:`fedavg_round_batched` is a FedAvg round as one batched run plus a weighted mean --
the same round as :func:`algos.federated.fedavg_round` with ``batch_size=None``. :func:`merge_lora_batched`
merges many LoRA adapters in product space at once. Everything is float64, so the results agree with the
numba path of :mod:`algos.federated._model` to round-off (tested on CPU torch, and on CUDA when present).

Worth it on a GPU with many clients or large heads; on a CPU the numba kernel is as fast. torch is imported
inside the functions: importing this module (or :mod:`algos`) does not import it.
"""

from __future__ import annotations

import numpy as np

from theory._checks import check_scalar_float, check_scalar_int

from ._federated_checks import _check_client_data, _check_params, _check_trainable, _check_weights
from .backend import torch_device as _device

__all__ = ["train_clients_batched", "fedavg_round_batched", "merge_lora_batched"]



def train_clients_batched(starts, client_data, *, n_classes, epochs, lr, l2=1e-3, trainable=None, device=None):
    r"""Full-batch GD (``epochs`` steps) on every client's objective (mean cross-entropy +
    :math:`\frac{\ell_2}2\|\theta\|^2`), all clients in one batched tensor program.

    Parameters
    ----------
    starts : dict or list of dicts
        Starting parameters: one dict for all clients, or one per client (same blocks and shapes).
    client_data : list of (X, y)
    n_classes, epochs, lr, l2, trainable
        As in :func:`algos.federated.local_train` (``trainable=None``: all blocks).
    device : None, str or torch.device
        ``None``: CUDA if available, else CPU.

    Returns
    -------
    list of dicts of numpy arrays (one per client)
    """
    M = len(client_data) if isinstance(client_data, (list, tuple)) else 0
    if isinstance(starts, dict):
        starts = [starts] * max(M, 1)
    if not isinstance(starts, (list, tuple)) or len(starts) != M:
        raise ValueError(f"'starts' must be one dict or a list with one dict per client ({M}).")
    d, C, r = _check_params(starts[0], "starts[0]")
    for i, s in enumerate(starts):
        if _check_params(s, f"starts[{i}]") != (d, C, r) or set(s) != set(starts[0]):
            raise ValueError(f"'starts[{i}]' must have the blocks and shapes of 'starts[0]'.")
    if check_scalar_int(n_classes, "n_classes", low=2) != C:
        raise ValueError(f"'n_classes' must equal the number of columns of 'W' ({C}); got {n_classes}.")
    Xs, ys = _check_client_data(client_data, d, C)
    epochs = check_scalar_int(epochs, "epochs", low=0)
    lr = check_scalar_float(lr, "lr", low=0.0, closed="neither")
    l2 = check_scalar_float(l2, "l2", low=0.0)
    keys = _check_trainable(trainable, starts[0])
    dev = _device(device)
    import torch

    f64 = torch.float64
    n = np.array([len(y) for y in ys])
    nmax = int(n.max())
    Xp = np.zeros((M, nmax, d))
    Yp = np.zeros((M, nmax, C))
    mask = np.zeros((M, nmax))
    for m in range(M):
        Xp[m, : n[m]] = Xs[m]
        Yp[m, np.arange(n[m]), ys[m]] = 1.0
        mask[m, : n[m]] = 1.0
    Xt = torch.as_tensor(Xp, dtype=f64, device=dev)
    Yt = torch.as_tensor(Yp, dtype=f64, device=dev)
    Mt = torch.as_tensor(mask / n[:, None], dtype=f64, device=dev)[:, :, None]  # 1/n_i on real rows
    P = {k: torch.as_tensor(np.stack([s[k] for s in starts]), dtype=f64, device=dev).clone() for k in starts[0]}
    Xtt = Xt.transpose(1, 2)
    for _ in range(epochs):
        Weff = P["W"] + torch.bmm(P["A"], P["B"]) if r else P["W"]
        Z = torch.bmm(Xt, Weff) + P["b"][:, None, :]
        R = (torch.softmax(Z, dim=2) - Yt) * Mt
        gW = torch.bmm(Xtt, R)
        grads = {"W": gW, "b": R.sum(dim=1)}
        if r:
            grads["A"] = torch.bmm(gW, P["B"].transpose(1, 2))
            grads["B"] = torch.bmm(P["A"].transpose(1, 2), gW)
        for k in keys:
            P[k] = P[k] - lr * (grads[k] + l2 * P[k])
    out = {k: v.cpu().numpy() for k, v in P.items()}
    return [{k: out[k][m] for k in out} for m in range(M)]


def fedavg_round_batched(global_params, client_data, weights, *, n_classes, epochs, lr, l2=1e-3, trainable=None,
                         device=None):
    r"""One FedAvg round as one batched GD run plus the weighted mean :math:`\sum_i w_i\theta_i/\sum_i w_i`
    (full batch; same result as :func:`algos.federated.fedavg_round` to round-off).

    Parameters
    ----------
    global_params : dict of str to ndarray
        Parameter blocks of the global model, the start of every client.
    client_data : list of tuple
        ``(X, y)`` of each client.
    weights : array-like of shape (n_clients,)
        Non-negative aggregation weights (e.g. sample counts).
    n_classes, epochs, lr, l2, trainable
        As in :func:`algos.federated.local_train` (``trainable=None``: all blocks).
    device : None, str or torch.device, default=None
        ``None``: CUDA if available, else CPU.

    Returns
    -------
    dict of str to ndarray
        The new global parameter blocks.

    Examples
    --------
    >>> import numpy as np
    >>> from algos.federated import init_params, fedavg_round
    >>> rng = np.random.default_rng(0)
    >>> data = [(rng.normal(size=(6, 3)), rng.integers(0, 2, 6)) for _ in range(4)]
    >>> a = fedavg_round_batched(init_params(3, 2), data, [6] * 4, n_classes=2, epochs=3, lr=0.5, device="cpu")
    >>> b = fedavg_round(init_params(3, 2), data, [6] * 4, n_classes=2, epochs=3, lr=0.5)
    >>> bool(np.allclose(a["W"], b["W"], atol=1e-12))
    True
    """
    M = len(client_data) if isinstance(client_data, (list, tuple)) else 0
    w = _check_weights(weights, M)
    new = train_clients_batched(global_params, client_data, n_classes=n_classes, epochs=epochs, lr=lr, l2=l2,
                                trainable=trainable, device=device)
    w = w / w.sum()
    return {k: np.tensordot(w, np.stack([p[k] for p in new]), axes=1) for k in global_params}


def merge_lora_batched(A_fed, B_fed, A_loc, B_loc, lam, device=None):
    r"""Product-space merges of ``M`` pairs of low-rank adapters at once.

    Product-space merges :math:`\Delta W_m = \lambda_m A_{F,m}B_{F,m} + (1-\lambda_m)A_{L,m}B_{L,m}` for
    ``M`` adapters at once (``A [M, d, r]``, ``B [M, r, C]``, ``lam`` scalar or ``(M,)``); returns
    ``(M, d, C)`` numpy. (A shared federated adapter may be given as ``(d, r)``/``(r, C)``.)

    Parameters
    ----------
    A_fed, B_fed : array-like of shape (M, d, r) and (M, r, C)
        Federated adapters; a shared one may be given as (d, r) and (r, C).
    A_loc, B_loc : array-like of shape (M, d, r) and (M, r, C)
        Local adapters.
    lam : float or array-like of shape (M,)
        Weights :math:`\lambda_m` of the federated adapters, in [0, 1].
    device : None, str or torch.device, default=None
        ``None``: CUDA if available, else CPU.

    Returns
    -------
    ndarray of shape (M, d, C)
        The merged :math:`\Delta W_m`.
    """
    dev = _device(device)
    import torch

    def t(a, name):
        a = np.asarray(a, dtype=np.float64)
        if not np.all(np.isfinite(a)):
            raise ValueError(f"'{name}' must contain only finite values.")
        return torch.as_tensor(a, dtype=torch.float64, device=dev)

    Af, Bf, Al, Bl = t(A_fed, "A_fed"), t(B_fed, "B_fed"), t(A_loc, "A_loc"), t(B_loc, "B_loc")
    if Al.ndim != 3 or Bl.ndim != 3 or Al.shape[2] != Bl.shape[1]:
        raise ValueError(f"'A_loc' (M, d, r) and 'B_loc' (M, r, C) must be 3-d with matching rank; got "
                         f"{tuple(Al.shape)} and {tuple(Bl.shape)}.")
    M = Al.shape[0]
    if Af.ndim == 2:
        Af = Af.expand(M, *Af.shape)
    if Bf.ndim == 2:
        Bf = Bf.expand(M, *Bf.shape)
    if Af.shape[0] != M or Bf.shape[0] != M or Af.shape[1] != Al.shape[1] or Bf.shape[2] != Bl.shape[2] \
            or Af.shape[2] != Bf.shape[1]:
        raise ValueError("the federated and local adapters must map the same spaces for every client.")
    lam = np.array(np.broadcast_to(np.asarray(lam, dtype=np.float64), (M,)))  # writable copy for torch
    if not np.all(np.isfinite(lam)) or np.any(lam < 0) or np.any(lam > 1):
        raise ValueError("'lam' must be in [0, 1].")
    L = torch.as_tensor(lam, dtype=torch.float64, device=dev)[:, None, None]
    return (L * torch.bmm(Af, Bf) + (1 - L) * torch.bmm(Al, Bl)).cpu().numpy()
