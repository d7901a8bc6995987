r"""The base model of :mod:`algos.federated`: softmax regression with an optional low-rank adapter.

Parameters are a ``dict`` of float64 arrays:

* ``"W"`` (d, C) -- the head's weights; ``"b"`` (C,) -- the biases;
* when ``rank = r > 0``, ``"A"`` (d, r) and ``"B"`` (r, C) -- a LoRA-style adapter on the head, so that
  :math:`\text{logits} = X (W + AB) + b`.

Objective of one client (what :func:`loss_grad` returns and :func:`local_train` descends):

.. math::

    f(\theta) = \frac1n\sum_{j=1}^n \ell_{\rm CE}(\theta; x_j, y_j) + \frac{\ell_2}{2}\|\theta\|^2
    + \frac{\mu}{2}\|\theta - c\|^2,

where :math:`\|\theta\|^2` sums the squares of **all** blocks of ``params`` (the bias included; a frozen
block adds a constant) and :math:`\|\theta - c\|^2` the blocks present in the proximal centre ``c``.

The functions here are the in-process reference of a federated round: :func:`fedavg_round` is what the
Flower strategy of :mod:`algos.federated.flower` reproduces (one :func:`local_train` per client, then a
weighted mean). Full-batch GD (``batch_size=None``) is deterministic, and a client trained alone by
:func:`local_train` gets bit-for-bit the same parameters as inside :func:`fedavg_round` (same numba
kernel, same per-client code path).
"""

from __future__ import annotations

import numpy as np

from accel._federated_checks import (  # noqa: F401 - shared with the torch path; re-exported
    BLOCK_NAMES,
    _check_client_data,
    _check_model_data,
    _check_n_classes,
    _check_params,
    _check_trainable,
    _check_weights,
    _check_Xy,
)

from .._parallel import pick
from .._validation import check_random_state, check_scalar_float, check_scalar_int

__all__ = [
    "init_params",
    "loss_grad",
    "local_train",
    "predict_logits",
    "per_sample_fisher_diag",
    "fedavg_round",
    "default_trainable",
    "BLOCK_NAMES",
]

PARALLEL_MIN_CLIENTS = 4
PARALLEL_MIN_WORK = 50_000_000  # multiply-adds; below this the thread pool costs more than it saves


# --------------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------------
def _check_center(prox_center, params, mu):
    if prox_center is None:
        return None
    if not isinstance(prox_center, dict):
        raise TypeError(f"'prox_center' must be None or a dict of arrays; got {type(prox_center).__name__}.")
    for k, v in prox_center.items():
        if k not in params:
            raise ValueError(f"'prox_center' has block {k!r} that the parameters {sorted(params)} do not have.")
        v = np.asarray(v)
        if v.shape != params[k].shape:
            raise ValueError(f"'prox_center[{k!r}]' must have shape {params[k].shape}; got {v.shape}.")
        if not np.all(np.isfinite(v)):
            raise ValueError(f"'prox_center[{k!r}]' must contain only finite values.")
    return prox_center


def _check_diverged(blocks, lr, X):
    """Raise when gradient descent produced non-finite parameters (the step size is too large for
    the scale of the features); ``blocks``: the stacked parameter arrays, ``X``: the features."""
    if all(np.all(np.isfinite(a)) for a in blocks):
        return
    scale = float(np.max(np.abs(X))) if X.size else 0.0
    raise ValueError(f"gradient descent diverged (non-finite parameters) with step size 'lr' = {lr:g} on features "
                     f"'X' of magnitude up to {scale:g}: standardise 'X' or lower 'lr'.")


def default_trainable(params):
    """Blocks trained by the estimators: ``("W", "b")`` without adapter, ``("b", "A", "B")`` with one
    (the head ``W`` is then the frozen backbone).

    Parameters
    ----------
    params : dict of str to ndarray
        Parameter blocks of the model.

    Returns
    -------
    tuple of str
        Names of the trained blocks.
    """
    _check_params(params)
    return ("b", "A", "B") if "A" in params else ("W", "b")


# --------------------------------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------------------------------
def init_params(n_features, n_classes, rank=0, random_state=None):
    r"""Initial parameters: ``W = 0``, ``b = 0``; with ``rank > 0`` also ``A`` with i.i.d.
    :math:`N(0, 1/d)` entries and ``B = 0`` (the LoRA initialisation: the adapter starts as the zero map).

    Parameters
    ----------
    n_features : int, >= 1
    n_classes : int, >= 2
    rank : int, default=0
        Adapter rank; 0 = no adapter.
    random_state : None, int or Generator
        Only used for ``A``.

    Returns
    -------
    dict of float64 arrays

    Examples
    --------
    >>> p = init_params(3, 2, rank=1, random_state=0)
    >>> sorted(p), p["A"].shape, p["B"].shape
    (['A', 'B', 'W', 'b'], (3, 1), (1, 2))
    """
    d = check_scalar_int(n_features, "n_features", low=1)
    C = check_scalar_int(n_classes, "n_classes", low=2)
    r = check_scalar_int(rank, "rank", low=0)
    params = {"W": np.zeros((d, C)), "b": np.zeros(C)}
    if r > 0:
        rng = check_random_state(random_state)
        params["A"] = rng.standard_normal((d, r)) / np.sqrt(d)
        params["B"] = np.zeros((r, C))
    return params


def effective_weights(params):
    """``W + A @ B`` (just ``W`` without adapter).

    Parameters
    ----------
    params : dict of str to ndarray
        Parameter blocks of the model.

    Returns
    -------
    ndarray of shape (d, C)
        The effective weight matrix.
    """
    _check_params(params)
    return _effective_weights(params)


def _effective_weights(params):
    """:func:`effective_weights` of a dict already validated (the estimators' inner loops)."""
    W = params["W"]
    if "A" in params:
        return W + params["A"] @ params["B"]
    return W


def predict_logits(params, X):
    """Logits :math:`X(W + AB) + b`, shape ``(n, C)``.

    Parameters
    ----------
    params : dict of str to ndarray
        Parameter blocks of the model.
    X : array-like of shape (n, d)
        Features.

    Returns
    -------
    ndarray of shape (n, C)
        The logits.
    """
    _, X, _ = _check_model_data(params, X, None)
    return X @ _effective_weights(params) + params["b"]


def _softmax(Z):
    Z = Z - Z.max(axis=1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=1, keepdims=True), Z - np.log(E.sum(axis=1, keepdims=True))


def loss_grad(params, X, y, *, n_classes, l2=1e-3, prox_center=None, mu=0.0, trainable=None):
    r"""Objective (mean cross-entropy + ``l2/2 ||theta||^2`` + ``mu/2 ||theta - center||^2``) and its
    gradient with respect to the ``trainable`` blocks (default: all).

    This is the plain-numpy definition the numba kernel of :func:`local_train` is tested against.

    Parameters
    ----------
    params : dict of str to ndarray
        Parameter blocks of the model.
    X : array-like of shape (n, d)
        Features.
    y : array-like of int, shape (n,)
        Class indices in ``[0, n_classes)``.
    n_classes : int
        Number of classes (the number of columns of ``W``).
    l2 : float, default=1e-3
        Weight of the ridge term.
    prox_center : dict or None, default=None
        Centre of the proximal term (must hold every trainable block when ``mu > 0``).
    mu : float, default=0.0
        Weight of the proximal term.
    trainable : sequence of str or None, default=None
        Blocks the gradient is taken for (``None``: all).

    Returns
    -------
    loss : float
    grads : dict
        One array per trainable block, same shapes as ``params``.
    """
    (d, C, r), X, y = _check_model_data(params, X, y, n_classes)
    l2 = check_scalar_float(l2, "l2", low=0.0)
    mu = check_scalar_float(mu, "mu", low=0.0)
    prox_center = _check_center(prox_center, params, mu)
    trainable = _check_trainable(trainable, params)
    n = X.shape[0]
    P, logP = _softmax(X @ _effective_weights(params) + params["b"])
    loss = -float(np.mean(logP[np.arange(n), y]))
    loss += 0.5 * l2 * sum(float(np.sum(v * v)) for v in params.values())
    if prox_center is not None and mu > 0:
        loss += 0.5 * mu * sum(float(np.sum((params[k] - np.asarray(c)) ** 2)) for k, c in prox_center.items())
    G = P
    G[np.arange(n), y] -= 1.0
    G /= n
    gWeff = X.T @ G
    data_grad = {"W": gWeff, "b": G.sum(axis=0)}
    if r:
        data_grad["A"] = gWeff @ params["B"].T
        data_grad["B"] = params["A"].T @ gWeff
    grads = {}
    for k in trainable:
        g = data_grad[k] + l2 * params[k]
        if prox_center is not None and mu > 0 and k in prox_center:
            g = g + mu * (params[k] - np.asarray(prox_center[k], dtype=np.float64))
        grads[k] = g
    return loss, grads


def per_sample_fisher_diag(params, X, y, n_classes):
    r"""Diagonal empirical Fisher :math:`\hat F = \frac1n\sum_j g_j\odot g_j` of every block, where
    :math:`g_j` is the gradient of sample ``j``'s cross-entropy (fused numba kernel: one pass over the
    samples, no ``n x d x C`` tensor).

    Parameters
    ----------
    params : dict of str to ndarray
        Parameter blocks of the model.
    X : array-like of shape (n, d)
        Features.
    y : array-like of int, shape (n,)
        Class indices in ``[0, n_classes)``.
    n_classes : int
        Number of classes.

    Returns
    -------
    dict of str to ndarray
        One array per key of ``params``; ``"W"`` is also the Fisher of the effective weight
        ``W + AB`` (the per-sample gradient is the same).
    """
    from ._kernels import fisher_diag

    (d, C, r), X, y = _check_model_data(params, X, y, n_classes)
    A = params.get("A", np.zeros((d, 0)))
    B = params.get("B", np.zeros((0, C)))
    FW, Fb, FA, FB = np.empty((d, C)), np.empty(C), np.empty((d, r)), np.empty((r, C))
    fisher_diag(X, y, np.ascontiguousarray(params["W"]), np.ascontiguousarray(params["b"]),
                np.ascontiguousarray(A), np.ascontiguousarray(B), FW, Fb, FA, FB)
    if not all(np.all(np.isfinite(F)) for F in (FW, Fb, FA, FB)):
        raise ValueError(f"the per-sample Fisher overflows: 'X' has entries of magnitude up to "
                         f"{float(np.max(np.abs(X))):g}; standardise the features.")
    out = {"W": FW, "b": Fb}
    if r:
        out["A"], out["B"] = FA, FB
    return out


# --------------------------------------------------------------------------------------------------
# local training (one or many clients through the same kernel)
# --------------------------------------------------------------------------------------------------
def _check_train_args(epochs, lr, l2, mu, batch_size):
    epochs = check_scalar_int(epochs, "epochs", low=0)
    lr = check_scalar_float(lr, "lr", low=0.0, closed="neither")
    l2 = check_scalar_float(l2, "l2", low=0.0)
    mu = check_scalar_float(mu, "mu", low=0.0)
    if batch_size is not None:
        batch_size = check_scalar_int(batch_size, "batch_size", low=1)
    return epochs, lr, l2, mu, batch_size


def _train_clients(starts, Xs, ys, *, n_classes, epochs, lr, l2=1e-3, centers=None, mu=0.0, trainable=None,
                   batch_size=None, rngs=None):
    """Train ``M`` clients from their own starting dicts (validated by the callers); return dicts."""
    from ._kernels import local_gd_clients, local_gd_clients_serial

    M = len(starts)
    d, C = starts[0]["W"].shape
    r = starts[0]["A"].shape[1] if "A" in starts[0] else 0
    sizes = np.array([len(y) for y in ys], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    X = np.ascontiguousarray(np.concatenate(Xs, axis=0), dtype=np.float64) if M else np.zeros((0, d))
    y = np.ascontiguousarray(np.concatenate(ys), dtype=np.int64)
    N = int(offsets[-1])

    def stack(key, shape):
        if key in ("A", "B") and r == 0:
            return np.zeros((M,) + shape)
        return np.ascontiguousarray(np.stack([s[key] for s in starts]), dtype=np.float64)

    W, b = stack("W", (d, C)), stack("b", (C,))
    A, B = stack("A", (d, r)), stack("B", (r, C))
    cW, cb, cA, cB = (np.zeros_like(W), np.zeros_like(b), np.zeros_like(A), np.zeros_like(B))
    if centers is not None and mu > 0:
        for m, c in enumerate(centers):
            for key, arr in (("W", cW), ("b", cb), ("A", cA), ("B", cB)):
                if c is not None and key in c:
                    arr[m] = c[key]
                elif key in starts[m]:  # frozen block without centre: never updated, value irrelevant
                    arr[m] = starts[m][key]
    train = np.array([k in trainable for k in ("W", "b", "A", "B")], dtype=np.bool_)
    if r == 0:
        train[2] = train[3] = False
    if batch_size is None or all(batch_size >= n for n in sizes):
        order = np.arange(N, dtype=np.int64)[None, :]
        bs = max(int(sizes.max()) if M else 1, 1)
    else:
        order = np.empty((max(epochs, 1), N), dtype=np.int64)
        for m in range(M):
            lo, hi = offsets[m], offsets[m + 1]
            for e in range(max(epochs, 1)):
                order[e, lo:hi] = lo + rngs[m].permutation(hi - lo)
        bs = batch_size
    # parallel only when there is enough work to amortise the thread pool (results are bit-identical)
    kernel = (pick(local_gd_clients, local_gd_clients_serial, N * d * C * max(epochs, 1), PARALLEL_MIN_WORK)
              if M >= PARALLEL_MIN_CLIENTS else local_gd_clients_serial)
    kernel(X, y, offsets, W, b, A, B, cW, cb, cA, cB, train, epochs, lr, l2, mu, order, bs)
    _check_diverged((W, b, A, B), lr, X)
    out = []
    for m in range(M):
        p = {"W": W[m], "b": b[m]}
        if r:
            p["A"], p["B"] = A[m], B[m]
        out.append(p)
    return out


def _prox_blocks_ok(prox_center, trainable):
    # a centre block for a key with no centre given would silently pull toward the start; forbid it
    return prox_center is None or set(trainable) <= set(prox_center)


def local_train(params, X, y, *, n_classes, epochs, lr, l2=1e-3, prox_center=None, mu=0.0, trainable=None,
                batch_size=None, random_state=None):
    r"""``epochs`` passes of gradient descent on one client's objective (see the module docstring),
    starting from ``params`` (not modified); returns the new parameter dict.

    Full-batch GD (``batch_size=None``, one step per epoch) is deterministic; with a ``batch_size`` the
    rows are visited in a fresh permutation every epoch, drawn from ``random_state``.

    Parameters
    ----------
    params : dict
    X : array-like, shape (n, d)
    y : array-like of int, shape (n,)
        Class indices in ``[0, n_classes)``.
    n_classes : int
    epochs : int, >= 0
    lr : float, > 0
    l2 : float, default=1e-3
    prox_center : dict or None, default=None
        Centre :math:`c` of the proximal term (must hold every trainable block when ``mu > 0``).
    mu : float, default=0.0
    trainable : sequence of block names or None (all)
    batch_size : int or None
    random_state : None, int or Generator

    Returns
    -------
    dict of str to ndarray
        The new parameter blocks.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]]); y = np.array([0, 1])
    >>> p = local_train(init_params(2, 2), X, y, n_classes=2, epochs=50, lr=1.0)
    >>> bool((predict_logits(p, X).argmax(1) == y).all())
    True
    """
    (d, C, r), X, y = _check_model_data(params, X, y, n_classes)
    epochs, lr, l2, mu, batch_size = _check_train_args(epochs, lr, l2, mu, batch_size)
    trainable = _check_trainable(trainable, params)
    prox_center = _check_center(prox_center, params, mu)
    if mu > 0 and not _prox_blocks_ok(prox_center, trainable):
        raise ValueError(f"'prox_center' must hold every trainable block {list(trainable)} when mu > 0; "
                         f"got {sorted(prox_center) if prox_center is not None else None}.")
    rngs = [check_random_state(random_state)] if batch_size is not None else None
    return _train_clients([params], [X], [y], n_classes=C, epochs=epochs, lr=lr, l2=l2,
                          centers=[prox_center] if mu > 0 else None, mu=mu, trainable=trainable,
                          batch_size=batch_size, rngs=rngs)[0]


def _weighted_mean(param_list, weights):
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    out = {}
    for k in param_list[0]:
        acc = np.zeros_like(param_list[0][k])
        for wi, p in zip(w, param_list):
            acc += wi * p[k]
        out[k] = acc
    return out


def fedavg_round(global_params, client_data, weights, **local_train_kwargs):
    r"""One FedAvg round in process: every client runs :func:`local_train` from ``global_params``; the
    new global parameters are the ``weights``-weighted mean :math:`\sum_i w_i\theta_i/\sum_i w_i` (use the
    clients' training counts :math:`n_i` for McMahan et al.'s FedAvg).

    Parameters
    ----------
    global_params : dict
    client_data : list of (X, y)
    weights : array-like, shape (M,)
    **local_train_kwargs
        ``n_classes, epochs, lr`` (required) and ``l2, prox_center, mu, trainable, batch_size,
        random_state`` of :func:`local_train`. ``random_state`` (used only with ``batch_size``) may be a
        list with one seed or generator per client; a single seed is split with ``SeedSequence.spawn``.

    Returns
    -------
    dict
        The new global parameters (every block averaged; untrained blocks are unchanged).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> data = [(rng.normal(size=(5, 3)), np.array([0, 1, 0, 1, 1])) for _ in range(3)]
    >>> g = fedavg_round(init_params(3, 2), data, [5, 5, 5], n_classes=2, epochs=2, lr=0.5)
    >>> one = [local_train(init_params(3, 2), X, y, n_classes=2, epochs=2, lr=0.5) for X, y in data]
    >>> bool(np.allclose(g["W"], sum(p["W"] for p in one) / 3, rtol=0, atol=1e-15))
    True
    """
    d, C, r = _check_params(global_params, "global_params")
    kw = dict(local_train_kwargs)
    for req in ("n_classes", "epochs", "lr"):
        if req not in kw:
            raise TypeError(f"fedavg_round() missing required keyword argument {req!r}.")
    allowed = {"n_classes", "epochs", "lr", "l2", "prox_center", "mu", "trainable", "batch_size", "random_state"}
    extra = sorted(set(kw) - allowed)
    if extra:
        raise TypeError(f"fedavg_round() got unexpected keyword arguments {extra}.")
    _check_n_classes(kw["n_classes"], C)
    Xs, ys = _check_client_data(client_data, d, C)
    w = _check_weights(weights, len(Xs))
    epochs, lr, l2, mu, batch_size = _check_train_args(kw["epochs"], kw["lr"], kw.get("l2", 1e-3),
                                                       kw.get("mu", 0.0), kw.get("batch_size"))
    trainable = _check_trainable(kw.get("trainable"), global_params)
    center = _check_center(kw.get("prox_center"), global_params, mu)
    if mu > 0 and not _prox_blocks_ok(center, trainable):
        raise ValueError(f"'prox_center' must hold every trainable block {list(trainable)} when mu > 0.")
    rngs = None
    if batch_size is not None:
        rs = kw.get("random_state")
        if isinstance(rs, (list, tuple)):
            if len(rs) != len(Xs):
                raise ValueError(f"'random_state' list must have one entry per client ({len(Xs)}); got {len(rs)}.")
            rngs = [check_random_state(s) for s in rs]
        else:
            from .._validation import spawn_generators

            rngs = spawn_generators(rs, len(Xs))
    new = _train_clients([global_params] * len(Xs), Xs, ys, n_classes=C, epochs=epochs, lr=lr, l2=l2,
                         centers=[center] * len(Xs) if mu > 0 else None, mu=mu, trainable=trainable,
                         batch_size=batch_size, rngs=rngs)
    return _weighted_mean(new, w)
