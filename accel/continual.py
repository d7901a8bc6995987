r"""torch core of :mod:`algos.continual`: the batched reservoir scan and a streaming-LDA state on torch.

* :func:`reservoir_scan_batched` runs ``D`` leaky echo-state scans of equal shape side by side -- the
  four directions of a :class:`~algos.continual.BiReservoir2D` block (rows and columns of a square
  grid), and any number of independent reservoirs stacked on the same axis -- with **one batched
  matmul per step** (``torch.bmm`` of the ``(D, N, U)`` states with the ``(D, U, U)`` recurrent
  matrices, i.e. one block-diagonal product), the activation and the leak fused in the same
  expression. The scan is launch-bound on a GPU, so batching the directions and the reservoirs is what
  makes it worth it; the input drive ``u W_in`` is precomputed by the caller in one GEMM.
* :class:`TorchStreamingLDA` keeps the streaming-LDA state (running class means, counts, the scatter
  matrix ``S`` and the total count ``n``) as torch tensors and applies the **batched
  sample-equivalent update** (Hayes & Kanan, CVPRW 2020) with no Python loop over the samples: the
  class mean each sample sees *before* its own update is computed from a per-class prefix sum
  (stable sort by class, ``cumsum``), the deviations :math:`\delta_i` and weights :math:`w_i` follow
  in closed form, and the scatter grows by one GEMM :math:`S \mathrel{+}= D^\top \mathrm{diag}(w) D`.
  ``covariance="exact"`` (Welford weight :math:`c/(c+1)`) gives the batch pooled within-class
  covariance :math:`\Sigma = S/n`; ``"hayes"`` (weight :math:`n/(n+1)`) the reference rule. The
  precision :math:`\Lambda = [(1-\varepsilon)\Sigma + \varepsilon I]^{-1}` comes from a Cholesky
  factorisation, the discriminant weights :math:`W = \Lambda M` and biases
  :math:`b_k = \tfrac12\mu_k^\top\Lambda\mu_k` from two triangular solves.

Both take float32 or float64 (the input's dtype; float64 by default for the LDA state) and run on
CPU or CUDA. Each core is written once against the array namespace ``nx`` of :mod:`accel.backend`
(:func:`_scan` for the scan, :func:`_delta_pass` for the batched delta/weight pass): run with the torch
backend it is the torch core, run with the numpy backend (``reservoir_scan_batched(..., backend="numpy")``,
``_delta_pass(get_backend(backend="numpy"), ...)``) it is the plain-numpy reference that the tests pin the
numba kernels of :mod:`algos.continual._kernels` and :mod:`algos.continual._slda_kernels` to. torch is
imported only when the torch backend is created: importing this module (or :mod:`algos`) does not import it.
"""

from __future__ import annotations

import numpy as np

from theory._checks import check_option, check_scalar_float, check_scalar_int

from .backend import get_backend
from .backend import torch_device as _resolve_device

__all__ = ["reservoir_scan_batched", "TorchStreamingLDA"]

_ACT = {0: "tanh", 1: "relu", 2: "leaky_relu", "tanh": "tanh", "relu": "relu", "leaky_relu": "leaky_relu"}

#: ``rule`` codes of :func:`_delta_pass` (those of :func:`algos.continual._slda_kernels.delta_pass`).
RULE_HAYES, RULE_WELFORD = 0, 1

def _float_dtype(torch, dtype):
    dt = np.dtype(dtype)
    if dt == np.float32:
        return torch.float32
    if dt == np.float64:
        return torch.float64
    raise ValueError(f"'dtype' must be float32 or float64; got {dt}.")


def _activation(nx, z, act, slope):
    """tanh, ReLU or leaky ReLU (slope ``slope``) of ``z``."""
    if act == "tanh":
        return nx.tanh(z)
    if act == "relu":
        return nx.maximum(z, 0.0)
    return nx.where(z > 0, z, slope * z)


def _scan(nx, Z, W, leak, act, slope, rev, h):
    r"""Core of :func:`reservoir_scan_batched` on backend ``nx``: ``D`` scans, one batched product per step.

    Parameters
    ----------
    nx : NumpyBackend or TorchBackend
    Z : array, shape (D, N, L, U)
    W : array, shape (D, U, U)
    leak : float
    act : {"tanh", "relu", "leaky_relu"}
    slope : float
    rev : list of D bools
    h : array, shape (D, N, U)
        Initial states (not modified).

    Returns
    -------
    array, shape (D, N, L, U)
    """
    L = Z.shape[2]
    if any(rev):  # backward directions: scan the time-reversed drive forward, then reverse the states back
        flip = nx.asarray(rev)[:, None, None, None]
        Z = nx.where(flip, nx.flip(Z, 2), Z)
    out = nx.empty(Z.shape, type_as=Z)
    for t in range(L):
        f = _activation(nx, nx.addmatmul(Z[:, :, t, :], h, W), act, slope)  # one block-diagonal product
        h = nx.lerp(h, f, leak) if leak != 1.0 else f  # (1 - a) h + a f
        out[:, :, t, :] = h
    if any(rev):
        out = nx.where(flip, nx.flip(out, 2), out)
    return out


def reservoir_scan_batched(Z, W, leak, activation="tanh", *, negative_slope=0.01, reverse=False, h0=None,
                           device=None, return_tensor=False, backend="torch"):
    r"""``D`` leaky echo-state scans at once: :math:`h_t = (1-a)h_{t-1} + a f(z_t + h_{t-1} W_d)`.

    Parameters
    ----------
    Z : array-like or tensor, shape (D, N, L, U)
        Input drives ``u_t W_in`` of ``D`` reservoirs, each over ``N`` sequences of length ``L``.
    W : array-like or tensor, shape (D, U, U)
        Recurrent matrices (row-vector convention ``h W``).
    leak : float
        Leak ``a`` in (0, 1].
    activation : {"tanh", "relu", "leaky_relu"} or int code 0/1/2, default="tanh"
    negative_slope : float, default=0.01
    reverse : bool or sequence of D bools, default=False
        Scan direction per reservoir; a backward scan writes its state back at position ``t``.
    h0 : array-like, shape (D, N, U), optional
        Initial states (zeros by default).
    device : None, str or torch.device
        ``None``: CUDA if available, else CPU (torch backend); only ``None`` or ``"cpu"`` for numpy.
    return_tensor : bool, default=False
        Return the torch tensor (on ``device``) instead of a numpy array.
    backend : {"torch", "numpy"}, default="torch"
        ``"numpy"`` runs the same core on numpy arrays (the plain-numpy reference of the numba kernel
        :func:`algos.continual._kernels.reservoir_scan`).

    Returns
    -------
    ndarray or tensor, shape (D, N, L, U), of the dtype of ``Z`` (float32 or float64)

    Examples
    --------
    >>> import numpy as np
    >>> Z = np.random.default_rng(0).standard_normal((4, 3, 5, 2))
    >>> W = np.zeros((4, 2, 2))
    >>> out = reservoir_scan_batched(Z, W, 1.0, "tanh", device="cpu")
    >>> bool(np.allclose(out, np.tanh(Z)))
    True
    """
    leak = check_scalar_float(leak, "leak", low=0.0, high=1.0, closed="right")
    if activation not in _ACT:
        raise ValueError(f"'activation' must be one of {{'tanh', 'relu', 'leaky_relu'}}; got {activation!r}.")
    act = _ACT[activation]
    slope = check_scalar_float(negative_slope, "negative_slope", low=0.0, high=1.0)
    check_option(backend, "backend", ("torch", "numpy"))
    nx = get_backend(backend=backend, device=device)

    def as_float(a, dtype=None):
        a = nx.asarray(a)
        if dtype is None and str(a.dtype) not in ("float32", "float64", "torch.float32", "torch.float64"):
            dtype = nx.float64
        return nx.asarray(a, dtype=dtype) if dtype is not None else a

    Zt = as_float(Z)
    if Zt.ndim != 4:
        raise ValueError(f"'Z' must have shape (D, N, L, U); got {tuple(Zt.shape)}.")
    D, N, L, U = Zt.shape
    Wt = as_float(W, Zt.dtype)
    if tuple(Wt.shape) != (D, U, U):
        raise ValueError(f"'W' must have shape {(D, U, U)} to match Z; got {tuple(Wt.shape)}.")
    rev = [bool(reverse)] * D if np.ndim(reverse) == 0 else [bool(r) for r in reverse]
    if len(rev) != D:
        raise ValueError(f"'reverse' must be a bool or {D} bools; got {len(rev)}.")
    if not bool(nx.isfinite(Zt).all()) or not bool(nx.isfinite(Wt).all()):
        raise ValueError("'Z' and 'W' must contain only finite values.")
    h = nx.zeros((D, N, U), type_as=Zt) if h0 is None else as_float(h0, Zt.dtype)
    if tuple(h.shape) != (D, N, U):
        raise ValueError(f"'h0' must have shape {(D, N, U)}; got {tuple(h.shape)}.")
    if nx.name == "torch":
        with nx._torch.no_grad():
            out = _scan(nx, Zt, Wt, leak, act, slope, rev, h)
        return out if return_tensor else out.cpu().numpy()
    return _scan(nx, Zt, Wt, leak, act, slope, rev, h)


def _delta_pass(nx, X, yidx, means, counts, n_seen, rule):
    r"""Batched delta/weight pass of streaming LDA on backend ``nx`` (no loop over the samples).

    The class mean that sample :math:`i` sees *before* its own update comes from a per-class exclusive
    prefix sum (a loop over the classes present, not over the samples); the deviations
    :math:`\delta_i = x_i - \mu_{y_i}` and the weights :math:`w_i` (Hayes & Kanan, CVPRW 2020) follow in
    closed form. The same numbers as the sequential numba kernel
    :func:`algos.continual._slda_kernels.delta_pass`, to round-off.

    Parameters
    ----------
    nx : NumpyBackend or TorchBackend
    X : array of float, shape (B, d)
    yidx : array of int, shape (B,)
        Row of each sample's class in ``means``.
    means : array of float, shape (K, d)
        Class means before the batch (an unseen class has mean 0); not modified.
    counts : array of int, shape (K,)
        Class counts before the batch; not modified.
    n_seen : int
        Total count before the batch.
    rule : {0, 1}
        ``0`` (:data:`RULE_HAYES`): :math:`w_i = n/(n+1)` with :math:`n` the total count before sample
        :math:`i`; ``1`` (:data:`RULE_WELFORD`): :math:`w_i = c_{y_i}/(c_{y_i}+1)`.

    Returns
    -------
    means : array, shape (K, d)
        Class means after the batch.
    counts : array, shape (K,)
        Class counts after the batch.
    n : int
        Total count after the batch.
    D : array, shape (B, d)
        The deviations :math:`\delta_i`.
    w : array, shape (B,)
        The weights :math:`w_i`.
    """
    B, d = X.shape
    K = means.shape[0]
    rank = nx.zeros(B, type_as=X)
    prefix = nx.zeros((B, d), type_as=X)
    y_host = nx.to_numpy(yidx)
    for k in np.unique(y_host).tolist():
        idx = nx.asarray(np.flatnonzero(y_host == k))
        nk = idx.shape[0]
        rank[idx] = nx.arange(nk, type_as=X)
        if nk > 1:
            prefix[idx[1:]] = nx.cumsum(X[idx[:-1]], axis=0)
    # means and counts after the batch: class sums by one GEMM with the one-hot matrix
    onehot = nx.astype(yidx[:, None] == nx.arange(K, type_as=yidx)[None, :], X.dtype)  # (B, K)
    nb = nx.sum(onehot, axis=0)
    c_prev = nx.astype(counts, X.dtype)
    tot = c_prev + nb
    new_means = nx.where((nb > 0)[:, None], (c_prev[:, None] * means + nx.matmul(onehot.T, X))
                         / nx.clip(tot, 1.0, None)[:, None], means)
    new_counts = counts + nx.astype(nb, counts.dtype)
    c_before = nx.astype(counts[yidx], X.dtype) + rank  # class count just before sample i
    # mean before sample i: (c mu + prefix) / (c + rank), written so that a class with count 0 keeps
    # its stored mean until its first sample (as the sequential kernel does)
    m_old = means[yidx]
    mu_before = m_old + (prefix - rank[:, None] * m_old) / nx.clip(c_before, 1.0, None)[:, None]
    delta = X - mu_before
    if rule == RULE_WELFORD:
        w = c_before / (c_before + 1.0)
    else:
        n_before = n_seen + nx.arange(B, type_as=X)
        w = n_before / (n_before + 1.0)
    return new_means, new_counts, int(n_seen) + B, delta, w


class TorchStreamingLDA:
    r"""Streaming-LDA state on torch with the vectorised batched sample-equivalent update.

    Not a scikit-learn estimator (see :class:`algos.continual.StreamingLDA` for that); a compute core
    used by benchmarks, GPU runs and parity tests. Classes are integer indices ``0..K-1`` (the class
    list grows when a larger index appears).

    Parameters
    ----------
    n_features : int
    shrinkage : float, default=1e-4
        :math:`\varepsilon \in [0, 1]` (``0``: plain LDA; the factorisation then raises
        ``numpy.linalg.LinAlgError`` when :math:`\Sigma` is singular).
    covariance : {"exact", "hayes"}, default="exact"
    device : None, str or torch.device, default=None
    dtype : numpy.float32 or numpy.float64, default=numpy.float64

    Attributes
    ----------
    means, counts, scatter : torch tensors, shapes (K, d), (K,), (d, d)
    n_seen : int

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.standard_normal((50, 3)), rng.integers(0, 2, 50)
    >>> slda = TorchStreamingLDA(3, device="cpu").partial_fit(X, y)
    >>> Sw = sum((X[y == k] - X[y == k].mean(0)).T @ (X[y == k] - X[y == k].mean(0)) for k in (0, 1))
    >>> bool(np.allclose(slda.covariance(), Sw / 50))
    True
    """

    def __init__(self, n_features, shrinkage=1e-4, covariance="exact", device=None, dtype=np.float64):
        import torch

        self.n_features = check_scalar_int(n_features, "n_features", low=1)
        self.shrinkage = check_scalar_float(shrinkage, "shrinkage", low=0.0, high=1.0)
        self.covariance_mode = check_option(covariance, "covariance", ("exact", "hayes"))
        self.device = _resolve_device(device)
        self.dtype = _float_dtype(torch, dtype)
        d = self.n_features
        self.means = torch.zeros((0, d), dtype=self.dtype, device=self.device)
        self.counts = torch.zeros(0, dtype=torch.int64, device=self.device)
        self.scatter = torch.zeros((d, d), dtype=self.dtype, device=self.device)
        self.n_seen = 0
        self._cache = None

    def _grow(self, K):
        import torch

        k0 = self.means.shape[0]
        if K > k0:
            self.means = torch.cat([self.means, self.means.new_zeros((K - k0, self.n_features))])
            self.counts = torch.cat([self.counts, self.counts.new_zeros(K - k0)])

    def load_state(self, means, counts, scatter, n_seen):
        r"""Replace the state by the given arrays (copied to ``device`` in the state's dtype).

        Used by :class:`algos.continual.StreamingLDA` with ``backend="torch"``, whose fitted state is
        kept as numpy arrays between calls.

        Parameters
        ----------
        means : array-like, shape (K, d)
        counts : array-like of int, shape (K,)
        scatter : array-like, shape (d, d)
            The full symmetric scatter :math:`S` (so that :math:`\Sigma = S/\max(n, 1)`).
        n_seen : int

        Returns
        -------
        self
        """
        import torch

        d = self.n_features
        means = torch.as_tensor(np.asarray(means)).to(device=self.device, dtype=self.dtype)
        scatter = torch.as_tensor(np.asarray(scatter)).to(device=self.device, dtype=self.dtype)
        if means.ndim != 2 or means.shape[1] != d or tuple(scatter.shape) != (d, d):
            raise ValueError(f"'means' must have shape (K, {d}) and 'scatter' ({d}, {d}); got "
                             f"{tuple(means.shape)} and {tuple(scatter.shape)}.")
        counts = torch.as_tensor(np.asarray(counts, dtype=np.int64), device=self.device).reshape(-1)
        if counts.shape[0] != means.shape[0]:
            raise ValueError(f"'counts' must have {means.shape[0]} entries; got {counts.shape[0]}.")
        self.means, self.counts, self.n_seen = means.clone(), counts.clone(), int(n_seen)
        self.scatter = scatter.clone()
        self._cache = None
        return self

    def partial_fit(self, X, y, update_scatter=True):
        """Add a batch (any order, any classes); equals the per-sample update applied row by row.

        Parameters
        ----------
        X : array-like or tensor, shape (B, d)
        y : array-like of int, shape (B,)
            Class indices ``>= 0``.
        update_scatter : bool, default=True
            ``False`` updates the means, counts and ``n_seen`` only (a frozen or identity covariance).

        Returns
        -------
        self
        """
        import torch

        Xt = X if isinstance(X, torch.Tensor) else torch.as_tensor(np.asarray(X, dtype=np.float64))
        Xt = Xt.to(device=self.device, dtype=self.dtype)
        if Xt.ndim != 2 or Xt.shape[1] != self.n_features:
            raise ValueError(f"'X' must have shape (B, {self.n_features}); got {tuple(Xt.shape)}.")
        yt = torch.as_tensor(np.asarray(y), device=self.device).to(torch.int64).reshape(-1)
        if yt.shape[0] != Xt.shape[0]:
            raise ValueError(f"'X' and 'y' have different lengths: {Xt.shape[0]} and {yt.shape[0]}.")
        B = Xt.shape[0]
        if B == 0:
            return self
        if not bool(torch.isfinite(Xt).all()):
            raise ValueError("'X' must contain only finite values.")
        if int(yt.min()) < 0:
            raise ValueError("'y' must contain class indices >= 0.")
        self._grow(int(yt.max()) + 1)
        nx = get_backend(backend="torch", device=self.device)
        rule = RULE_WELFORD if self.covariance_mode == "exact" else RULE_HAYES
        self.means, self.counts, _, delta, w = _delta_pass(nx, Xt, yt, self.means, self.counts, self.n_seen, rule)
        if update_scatter:
            self.scatter.addmm_(delta.T, delta * w[:, None])
        self.n_seen += B
        self._cache = None
        return self

    def covariance(self, as_numpy=True):
        r""":math:`\Sigma = S/n` (zeros before any sample).

        Parameters
        ----------
        as_numpy : bool, default=True
            Return a numpy array instead of a torch tensor.

        Returns
        -------
        ndarray or torch.Tensor of shape (d, d)
            :math:`\Sigma`.
        """
        cov = self.scatter / max(self.n_seen, 1)
        return cov.cpu().numpy() if as_numpy else cov

    def precision(self, as_numpy=True):
        r""":math:`\Lambda = [(1-\varepsilon)\Sigma + \varepsilon I]^{-1}` by Cholesky (cached).

        Parameters
        ----------
        as_numpy : bool, default=True
            Return a numpy array instead of a torch tensor.

        Returns
        -------
        ndarray or torch.Tensor of shape (d, d)
            :math:`\Lambda`.
        """
        L = self._factor()
        import torch

        eye = torch.eye(self.n_features, dtype=self.dtype, device=self.device)
        P = torch.cholesky_solve(eye, L)
        return P.cpu().numpy() if as_numpy else P

    def _factor(self):
        import torch

        if self._cache is None:
            eps = self.shrinkage
            A = (1.0 - eps) * self.covariance(as_numpy=False)
            A = A + eps * torch.eye(self.n_features, dtype=self.dtype, device=self.device)
            L, info = torch.linalg.cholesky_ex(A)
            if int(info) != 0:
                raise np.linalg.LinAlgError("the shrunk covariance is not positive definite.")
            self._cache = {"L": L}
        return self._cache["L"]

    def seen(self):
        """Indices of the classes with a positive count.

        Returns
        -------
        ndarray of int
            The class indices, increasing.
        """
        return (self.counts > 0).nonzero().reshape(-1).cpu().numpy()

    def linear_weights(self, as_numpy=True):
        r"""``(W, b, seen)``: :math:`W = \Lambda M` (d, K_seen), :math:`b_k = \tfrac12\mu_k^\top\Lambda\mu_k`.

        Scores are :math:`s_k(x) = x^\top W_k - b_k` over the seen classes ``seen``.

        Parameters
        ----------
        as_numpy : bool, default=True
            Return numpy arrays instead of torch tensors.

        Returns
        -------
        W : ndarray or torch.Tensor of shape (d, K_seen)
            :math:`\Lambda M`.
        b : ndarray or torch.Tensor of shape (K_seen,)
            :math:`\tfrac12\mu_k^\top\Lambda\mu_k`.
        seen : ndarray of int
            The seen classes.
        """
        import torch

        L = self._factor()
        if "W" not in self._cache:
            idx = torch.as_tensor(self.seen(), device=self.device)
            M = self.means[idx].T  # (d, K_seen)
            Wm = torch.cholesky_solve(M, L)
            b = 0.5 * (M * Wm).sum(dim=0)
            self._cache.update(W=Wm, b=b, seen=idx)
        c = self._cache
        if as_numpy:
            return c["W"].cpu().numpy(), c["b"].cpu().numpy(), c["seen"].cpu().numpy()
        return c["W"], c["b"], c["seen"]

    def decision_function(self, X):
        """Scores ``(n, K_seen)`` over the seen classes (columns in the order of :meth:`seen`).

        Parameters
        ----------
        X : array-like or torch.Tensor of shape (n, d)
            Features.

        Returns
        -------
        ndarray of shape (n, K_seen)
            Scores over the seen classes.
        """
        import torch

        Wm, b, _ = self.linear_weights(as_numpy=False)
        Xt = X if isinstance(X, torch.Tensor) else torch.as_tensor(np.asarray(X, dtype=np.float64))
        Xt = Xt.to(device=self.device, dtype=self.dtype)
        return (Xt @ Wm - b).cpu().numpy()
