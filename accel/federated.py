r"""torch core of :mod:`algos.federated`: all clients' models as one batched tensor.

:func:`train_clients_batched` runs full-batch gradient descent for ``M`` clients at once: the clients'
data are padded into ``X [M, n_max, d]`` (a mask zeroes the padding), their models stacked as
``W [M, d, C]``, ``b [M, C]`` (and the adapter ``A [M, d, r]``, ``B [M, r, C]``); one GD step is a few
``bmm`` calls. :func:`fedavg_round_batched` is a FedAvg round as one batched run plus a weighted mean --
the same round as :func:`algos.federated.fedavg_round` with ``batch_size=None``. :func:`merge_lora_batched`
merges many LoRA adapters in product space at once. Everything is float64, so the results agree with the
numba path of :mod:`algos.federated._model` to round-off (tested on CPU torch, and on CUDA when present).

The batched GD is written once, as :func:`local_gd` against the array backend ``nx`` of
:mod:`accel.backend` (mini-batches and the proximal term included): with the torch backend it is the core
of :func:`train_clients_batched`; with the numpy backend it is the reference the numba kernel is tested
against.

Worth it on a GPU with many clients or large heads; on a CPU the numba kernel is as fast. torch is imported
inside the functions: importing this module (or :mod:`algos`) does not import it.
"""

from __future__ import annotations

import numpy as np

from theory._checks import check_scalar_float, check_scalar_int

from ._federated_checks import _check_client_data, _check_n_classes, _check_params, _check_trainable, _check_weights
from .backend import get_backend
from .backend import torch_device as _device

__all__ = ["train_clients_batched", "fedavg_round_batched", "merge_lora_batched", "local_gd", "merge_lora_core"]


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
    _check_n_classes(n_classes, C)
    Xs, ys = _check_client_data(client_data, d, C)
    epochs = check_scalar_int(epochs, "epochs", low=0)
    lr = check_scalar_float(lr, "lr", low=0.0, closed="neither")
    l2 = check_scalar_float(l2, "l2", low=0.0)
    keys = _check_trainable(trainable, starts[0])
    nx = get_backend(backend="torch", device=_device(device))
    return local_gd(nx, starts, Xs, ys, n_classes=C, epochs=epochs, lr=lr, l2=l2, trainable=keys)


def local_gd(nx, starts, Xs, ys, *, n_classes, epochs, lr, l2, trainable, centers=None, mu=0.0, orders=None,
             batch_size=None):
    r"""(Mini-batch) gradient descent for ``M`` clients at once, written against the array backend ``nx``.

    The clients' data are padded into ``X [M, n_max, d]`` with one-hot labels ``Y [M, n_max, C]``; a step
    takes the gradient of each client's mean cross-entropy over its batch plus
    :math:`\frac{\ell_2}2\|\theta\|^2 + \frac\mu2\|\theta - c\|^2` and moves the ``trainable`` blocks by
    ``-lr`` times it. Epoch ``e`` visits client ``m``'s rows in the order ``orders[m][e % E]`` (``None``:
    ``0..n_m-1``), in consecutive batches of ``batch_size`` rows (``None``: one full batch); a client with
    fewer batches than the largest one simply stays put for the missing steps. With the numpy backend this
    is the reference the numba kernel :func:`algos.federated._kernels.local_gd_clients` is tested against;
    with the torch backend it is the core of :func:`train_clients_batched`. Arguments are not validated.

    Parameters
    ----------
    nx : NumpyBackend or TorchBackend
        The backend to compute with.
    starts : list of dict of str to ndarray
        Starting parameter blocks of each client (same blocks and shapes).
    Xs, ys : list of ndarray
        Each client's features ``(n_m, d)`` and class indices ``(n_m,)``.
    n_classes : int
        Number of classes ``C``.
    epochs : int
        Number of passes over the data.
    lr, l2 : float
        Step size and weight of the ridge term.
    trainable : sequence of str
        Blocks that are updated.
    centers : list of dict or None, default=None
        Centre of each client's proximal term (every trainable block), used when ``mu > 0``.
    mu : float, default=0.0
        Weight of the proximal term.
    orders : list of ndarray of shape (E, n_m), or None, default=None
        Per-epoch visiting orders of each client's rows.
    batch_size : int or None, default=None
        Rows per step (``None``: all of a client's rows).

    Returns
    -------
    list of dict of str to ndarray
        The new numpy parameter blocks of each client.
    """
    M = len(Xs)
    d, C = starts[0]["W"].shape
    r = starts[0]["A"].shape[1] if "A" in starts[0] else 0
    n = np.array([len(y) for y in ys])
    nmax = int(n.max())
    Xp = np.zeros((M, nmax, d))
    Yp = np.zeros((M, nmax, C))
    mask = np.zeros((M, nmax))
    for m in range(M):
        Xp[m, : n[m]] = Xs[m]
        Yp[m, np.arange(n[m]), ys[m]] = 1.0
        mask[m, : n[m]] = 1.0
    X, Y = nx.asarray(Xp), nx.asarray(Yp)
    P = {k: nx.asarray(np.stack([s[k] for s in starts])) for k in starts[0]}
    Cn = None
    if centers is not None and mu > 0:
        Cn = {k: nx.asarray(np.stack([c[k] for c in centers])) for k in trainable}
    bs = nmax if batch_size is None else min(int(batch_size), nmax)
    if orders is None and bs == nmax:  # full batch: no gathering, weights 1/n_m on real rows
        batches = [(X, nx.swapaxes(X, 1, 2), Y, nx.asarray(mask / n[:, None])[:, :, None], None)]
        perms = None
    else:
        # per epoch, each client's order then its padding rows; batches are windows of bs positions
        E = 1 if orders is None else max(len(o) for o in orders)
        perm = np.tile(np.arange(nmax), (E, M, 1))
        if orders is not None:
            for m in range(M):
                perm[:, m, : n[m]] = np.asarray(orders[m])[np.arange(E) % len(orders[m])]
        rows = np.arange(M)[:, None]
        perms = []
        for e in range(E):
            steps = []
            for s in range(0, nmax, bs):
                idx = perm[e, :, s:s + bs]
                mb = mask[rows, idx]
                cnt = mb.sum(axis=1)
                wts = mb / np.maximum(cnt, 1.0)[:, None]
                steps.append((nx.asarray(idx), nx.asarray(wts)[:, :, None], nx.asarray(1.0 * (cnt > 0))))
            perms.append(steps)
        rows = nx.asarray(rows)
    for e in range(epochs):
        if perms is not None:
            batches = []
            for idx, wts, act in perms[e % len(perms)]:
                Xb = X[rows, idx]
                batches.append((Xb, nx.swapaxes(Xb, 1, 2), Y[rows, idx], wts, act))
        for Xb, XbT, Yb, wts, act in batches:
            Weff = P["W"] + nx.matmul(P["A"], P["B"]) if r else P["W"]
            Z = nx.matmul(Xb, Weff) + P["b"][:, None, :]
            R = (nx.softmax(Z, axis=2) - Yb) * wts
            gW = nx.matmul(XbT, R)
            grads = {"W": gW, "b": nx.sum(R, axis=1)}
            if r:
                grads["A"] = nx.matmul(gW, nx.swapaxes(P["B"], 1, 2))
                grads["B"] = nx.matmul(nx.swapaxes(P["A"], 1, 2), gW)
            for k in trainable:
                g = grads[k] + l2 * P[k]
                if Cn is not None:
                    g = g + mu * (P[k] - Cn[k])
                step = lr if act is None else lr * act.reshape((M,) + (1,) * (g.ndim - 1))
                P[k] = P[k] - step * g
    out = {k: nx.to_numpy(v) for k, v in P.items()}
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
    nx = get_backend(backend="torch", device=_device(device))

    def t(a, name):
        a = np.asarray(a, dtype=np.float64)
        if not np.all(np.isfinite(a)):
            raise ValueError(f"'{name}' must contain only finite values.")
        return a

    Af, Bf, Al, Bl = t(A_fed, "A_fed"), t(B_fed, "B_fed"), t(A_loc, "A_loc"), t(B_loc, "B_loc")
    if Al.ndim != 3 or Bl.ndim != 3 or Al.shape[2] != Bl.shape[1]:
        raise ValueError(f"'A_loc' (M, d, r) and 'B_loc' (M, r, C) must be 3-d with matching rank; got "
                         f"{tuple(Al.shape)} and {tuple(Bl.shape)}.")
    M = Al.shape[0]
    if Af.ndim == 2:
        Af = np.broadcast_to(Af, (M, *Af.shape))
    if Bf.ndim == 2:
        Bf = np.broadcast_to(Bf, (M, *Bf.shape))
    if Af.ndim != 3 or Bf.ndim != 3 or Af.shape[0] != M or Bf.shape[0] != M or Af.shape[1] != Al.shape[1] \
            or Bf.shape[2] != Bl.shape[2] or Af.shape[2] != Bf.shape[1]:
        raise ValueError("the federated and local adapters must map the same spaces for every client.")
    lam = np.broadcast_to(np.asarray(lam, dtype=np.float64), (M,))
    if not np.all(np.isfinite(lam)) or np.any(lam < 0) or np.any(lam > 1):
        raise ValueError("'lam' must be in [0, 1].")
    return nx.to_numpy(merge_lora_core(nx, *(nx.asarray(np.ascontiguousarray(a)) for a in (Af, Bf, Al, Bl, lam))))


def merge_lora_core(nx, A_fed, B_fed, A_loc, B_loc, lam):
    r"""The product-space merges :math:`\lambda_m A_{F,m}B_{F,m} + (1-\lambda_m)A_{L,m}B_{L,m}` on the
    backend ``nx`` (arguments of :func:`merge_lora_batched`, already checked, as ``nx`` arrays).

    Parameters
    ----------
    nx : NumpyBackend or TorchBackend
        The backend to compute with.
    A_fed, B_fed, A_loc, B_loc : array of shape (M, d, r) or (M, r, C)
        The adapters.
    lam : array of shape (M,)
        Weights of the federated adapters.

    Returns
    -------
    array of shape (M, d, C)
        The merged updates.
    """
    L = lam[:, None, None]
    return L * nx.matmul(A_fed, B_fed) + (1 - L) * nx.matmul(A_loc, B_loc)
