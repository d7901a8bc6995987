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
CPU or CUDA. torch is imported inside the functions: importing this module (or :mod:`algos`) does not
import it.
"""

from __future__ import annotations

import numpy as np

from theory._checks import check_option, check_scalar_float, check_scalar_int

from .backend import torch_device as _resolve_device

__all__ = ["reservoir_scan_batched", "TorchStreamingLDA"]

_ACT = {0: "tanh", 1: "relu", 2: "leaky_relu", "tanh": "tanh", "relu": "relu", "leaky_relu": "leaky_relu"}



def _float_dtype(torch, dtype):
    dt = np.dtype(dtype)
    if dt == np.float32:
        return torch.float32
    if dt == np.float64:
        return torch.float64
    raise ValueError(f"'dtype' must be float32 or float64; got {dt}.")


def reservoir_scan_batched(Z, W, leak, activation="tanh", *, negative_slope=0.01, reverse=False, h0=None,
                           device=None, return_tensor=False):
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
        ``None``: CUDA if available, else CPU.
    return_tensor : bool, default=False
        Return the torch tensor (on ``device``) instead of a numpy array.

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
    dev = _resolve_device(device)
    import torch

    def as_t(a, dtype=None):
        if not isinstance(a, torch.Tensor):
            a = np.asarray(a)
            if a.dtype.kind != "f":
                a = a.astype(np.float64)
            if not a.flags.writeable:
                a = a.copy()
            a = torch.as_tensor(a)
        return a.to(device=dev, dtype=dtype if dtype is not None else a.dtype)

    Zt = as_t(Z)
    if Zt.dtype not in (torch.float32, torch.float64):
        Zt = Zt.to(torch.float64)
    if Zt.ndim != 4:
        raise ValueError(f"'Z' must have shape (D, N, L, U); got {tuple(Zt.shape)}.")
    D, N, L, U = Zt.shape
    Wt = as_t(W, Zt.dtype)
    if tuple(Wt.shape) != (D, U, U):
        raise ValueError(f"'W' must have shape {(D, U, U)} to match Z; got {tuple(Wt.shape)}.")
    rev = [bool(reverse)] * D if np.ndim(reverse) == 0 else [bool(r) for r in reverse]
    if len(rev) != D:
        raise ValueError(f"'reverse' must be a bool or {D} bools; got {len(rev)}.")
    if not bool(torch.isfinite(Zt).all()) or not bool(torch.isfinite(Wt).all()):
        raise ValueError("'Z' and 'W' must contain only finite values.")
    # backward directions: scan the time-reversed drive forward, then reverse the states back
    flip = torch.tensor(rev, device=dev)
    if any(rev):
        Zt = torch.where(flip[:, None, None, None], Zt.flip(2), Zt)
    h = torch.zeros((D, N, U), dtype=Zt.dtype, device=dev) if h0 is None else as_t(h0, Zt.dtype).clone()
    if tuple(h.shape) != (D, N, U):
        raise ValueError(f"'h0' must have shape {(D, N, U)}; got {tuple(h.shape)}.")
    out = torch.empty_like(Zt)
    a = leak
    with torch.no_grad():
        for t in range(L):
            z = torch.baddbmm(Zt[:, :, t, :], h, Wt)  # one block-diagonal product for all D scans
            if act == "tanh":
                f = torch.tanh(z)
            elif act == "relu":
                f = torch.relu(z)
            else:
                f = torch.nn.functional.leaky_relu(z, slope)
            h = torch.lerp(h, f, a) if a != 1.0 else f
            out[:, :, t, :] = h
    if any(rev):
        out = torch.where(flip[:, None, None, None], out.flip(2), out)
    return out if return_tensor else out.cpu().numpy()


class TorchStreamingLDA:
    r"""Streaming-LDA state on torch with the vectorised batched sample-equivalent update.

    Not a scikit-learn estimator (see :class:`algos.continual.StreamingLDA` for that); a compute core
    used by benchmarks, GPU runs and parity tests. Classes are integer indices ``0..K-1`` (the class
    list grows when a larger index appears).

    Parameters
    ----------
    n_features : int
    shrinkage : float, default=1e-4
        :math:`\varepsilon \in (0, 1]`.
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
        self.shrinkage = check_scalar_float(shrinkage, "shrinkage", low=0.0, high=1.0, closed="right")
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

    def partial_fit(self, X, y):
        """Add a batch (any order, any classes); equals the per-sample update applied row by row.

        Parameters
        ----------
        X : array-like or tensor, shape (B, d)
        y : array-like of int, shape (B,)
            Class indices ``>= 0``.

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
        # for each sample: its rank among the earlier samples of its class in this batch and their
        # sum (an exclusive cumsum per class; a loop over the classes present, not over samples)
        rank = torch.empty(B, dtype=self.dtype, device=self.device)
        prefix = torch.empty_like(Xt)
        for k in torch.unique(yt).tolist():
            idx = (yt == k).nonzero().reshape(-1)
            Xk = Xt[idx]
            rank[idx] = torch.arange(idx.shape[0], dtype=self.dtype, device=self.device)
            ex = torch.zeros_like(Xk)
            if Xk.shape[0] > 1:
                ex[1:] = torch.cumsum(Xk[:-1], dim=0)
            prefix[idx] = ex
        c_old = self.counts[yt].to(self.dtype)
        c_before = c_old + rank  # class count just before sample i
        mu_before = (c_old[:, None] * self.means[yt] + prefix) / torch.clamp(c_before, min=1.0)[:, None]
        delta = Xt - mu_before  # a never-seen class has mean 0 before its first sample: delta = x
        if self.covariance_mode == "exact":
            w = c_before / (c_before + 1.0)
        else:
            n_before = self.n_seen + torch.arange(B, device=self.device, dtype=self.dtype)
            w = n_before / (n_before + 1.0)
        self.scatter.addmm_(delta.T, delta * w[:, None])
        # means and counts after the batch
        K = self.means.shape[0]
        onehot = torch.nn.functional.one_hot(yt, K).to(self.dtype)  # (B, K)
        sums = onehot.T @ Xt
        nb = torch.bincount(yt, minlength=K)
        tot = self.counts + nb
        upd = nb > 0
        c_prev = self.counts[upd, None].to(self.dtype)
        self.means[upd] = (c_prev * self.means[upd] + sums[upd]) / tot[upd, None].to(self.dtype)
        self.counts = tot
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
