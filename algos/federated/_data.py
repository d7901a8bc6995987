r"""Federated data: a Dirichlet label split and two synthetic task-heterogeneous families.

NOTE FOR THE CORE HELPER / CLI (the contract of this file)
----------------------------------------------------------
* ``dirichlet_label_split(y, n_clients, alpha, min_size=2, random_state=None)`` returns
  **one client id per sample**: an int64 array of shape ``(n_samples,)`` with values in
  ``0 .. n_clients-1``, every client holding at least ``min_size`` samples. It plugs straight into
  ``est.fit(X, y, client_ids)``; index lists are ``[np.flatnonzero(ids == c) for c in range(M)]``.
* ``make_fedprox_synthetic(alpha, beta, n_clients=30, ...)`` returns a :class:`FedProxSynthetic`
  named tuple ``(X, y, client_ids, W, b, mean_x)``.
* ``make_hetero_linear(n_clients, p, tau, sigma, n_per_client, random_state=None)`` returns a
  :class:`HeteroLinear` named tuple ``(X, y, client_ids, theta, theta_bar)``.

References
----------
.. [1] T.-M. H. Hsu, H. Qi, M. Brown, "Measuring the effects of non-identical data distribution for
   federated visual classification", arXiv:1909.06335, 2019 (the per-class Dirichlet split).
.. [2] M. Yurochkin et al., "Bayesian nonparametric federated learning of neural networks",
   ICML 2019 (the same split, with a minimum partition size and resampling).
.. [3] T. Li, A. K. Sahu, M. Zaheer, M. Sanjabi, A. Talwalkar, V. Smith, "Federated optimization in
   heterogeneous networks" (FedProx), MLSys 2020, section 5.1 and appendix C.1 (Synthetic(alpha, beta)).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .._validation import (
    check_array_1d,
    check_bool,
    check_finite,
    check_random_state,
    check_scalar_float,
    check_scalar_int,
)

__all__ = [
    "dirichlet_label_split",
    "FedProxSynthetic",
    "make_fedprox_synthetic",
    "HeteroLinear",
    "make_hetero_linear",
]

# ---------------------------------------------------------------------------------------- Dirichlet


def dirichlet_label_split(y, n_clients, alpha, min_size=2, *, max_tries=100, random_state=None):
    r"""Split samples among clients with label skew drawn from a symmetric Dirichlet distribution.

    For every class :math:`k` a vector of client shares :math:`p_k \sim \mathrm{Dir}(\alpha
    \mathbf{1}_M)` is drawn and the (shuffled) samples of class :math:`k` are cut into ``M``
    consecutive pieces of sizes proportional to :math:`p_k` (Hsu, Qi & Brown 2019, the module's reference [1]). If some client ends up with fewer
    than ``min_size`` samples the whole draw is repeated (as in Yurochkin et al. 2019, reference [2] of the module, and flwr-datasets'
    ``DirichletPartitioner(partition_by="label", alpha, min_partition_size)``), at most
    ``max_tries`` times. Small ``alpha`` concentrates each class on few clients (a client sees few
    classes); ``alpha -> inf`` gives every client the global class proportions (iid split with
    equal client sizes).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels (any hashable labels but NaN, infinities and complex numbers; compared with
        ``np.unique``).
    n_clients : int >= 1
    alpha : float > 0
        Dirichlet concentration.
    min_size : int >= 0, default=2
        Minimum number of samples of every client; ``n_clients * min_size`` must not exceed
        ``n_samples``.
    max_tries : int >= 1, default=100
        Number of draws before giving up.
    random_state : None, int, SeedSequence or Generator, default=None

    Returns
    -------
    client_ids : ndarray of int64, shape (n_samples,)
        ``client_ids[j]`` is the client (``0 .. n_clients-1``) that holds sample ``j``; every sample
        belongs to exactly one client.

    Raises
    ------
    ValueError
        Bad parameters, ``n_clients * min_size > n_samples``, or no draw in ``max_tries`` met
        ``min_size`` (raise ``alpha`` or lower ``min_size``/``n_clients``).

    Examples
    --------
    >>> import numpy as np
    >>> y = np.repeat(np.arange(3), 20)
    >>> ids = dirichlet_label_split(y, 4, alpha=0.5, random_state=0)
    >>> ids.shape, int(np.bincount(ids, minlength=4).min()) >= 2
    ((60,), True)
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"'y' must be 1-dimensional; got an array of shape {y.shape}.")
    if y.dtype.kind == "c":
        raise TypeError("'y' must hold class labels (integers, strings or finite floats); got complex values.")
    if y.dtype.kind == "f":
        check_finite(y, "y")
    n = y.shape[0]
    n_clients = check_scalar_int(n_clients, "n_clients", low=1)
    alpha = check_scalar_float(alpha, "alpha", low=0.0, closed="neither")
    min_size = check_scalar_int(min_size, "min_size", low=0)
    max_tries = check_scalar_int(max_tries, "max_tries", low=1)
    if n_clients * min_size > n:
        raise ValueError(
            f"'n_clients' * 'min_size' must be at most the number of samples (the length of 'y', {n}); "
            f"got {n_clients} * {min_size} = {n_clients * min_size}."
        )
    rng = check_random_state(random_state)
    _, y_idx = np.unique(y, return_inverse=True)
    by_class = [np.flatnonzero(y_idx == k) for k in range(int(y_idx.max()) + 1 if n else 0)]
    ids = np.empty(n, dtype=np.int64)
    for _ in range(max_tries):
        for idx in by_class:
            idx = rng.permutation(idx)
            p = rng.dirichlet(np.full(n_clients, alpha))
            if not np.all(np.isfinite(p)):  # alpha so small that every gamma draw underflowed
                p = np.zeros(n_clients)
                p[rng.integers(n_clients)] = 1.0
            cuts = np.floor(np.cumsum(p)[:-1] * idx.size + 0.5).astype(np.int64)  # rounded boundaries
            cuts = np.clip(cuts, 0, idx.size)
            for c, part in enumerate(np.split(idx, cuts)):
                ids[part] = c
        if np.bincount(ids, minlength=n_clients).min() >= min_size:
            return ids
    raise ValueError(
        f"no Dirichlet split with every client holding at least 'min_size' = {min_size} samples was found "
        f"in {max_tries} draws (n_samples = {n}, n_clients = {n_clients}, alpha = {alpha!r}); "
        "raise 'alpha', lower 'min_size' or 'n_clients', or raise 'max_tries'."
    )


# ----------------------------------------------------------------------------------- FedProx synthetic

FedProxSynthetic = namedtuple("FedProxSynthetic", ["X", "y", "client_ids", "W", "b", "mean_x"])
FedProxSynthetic.__doc__ = """Data drawn by :func:`make_fedprox_synthetic`.

X : ndarray (n, d); y : ndarray of int64 (n,), labels in 0 .. n_classes-1;
client_ids : ndarray of int64 (n,), the client of every sample (clients are contiguous blocks);
W : ndarray (n_clients, d, n_classes) and b : ndarray (n_clients, n_classes), each client's true
softmax model (``y = argmax(x @ W[i] + b[i])``); mean_x : ndarray (n_clients, d), the feature mean
``v_i`` of every client."""


def make_fedprox_synthetic(alpha, beta, n_clients=30, *, n_features=60, n_classes=10, iid=False,
                           n_per_client=None, max_per_client=None, random_state=None):
    r"""Draw the FedProx Synthetic(alpha, beta) federated classification family (Li et al. 2020, FedProx,
    section 5.1; reference [3] of the module).

    Client :math:`i` has a softmax model :math:`y = \arg\max_k (x^\top W_i + b_i)_k` and features
    :math:`x \sim N(v_i, \Sigma)`, :math:`\Sigma = \mathrm{diag}(j^{-1.2})_{j=1..d}`, with

    .. math::
        u_i \sim N(0, \alpha^2),\quad W_i[j,k] \sim N(u_i, 1),\quad b_i[k] \sim N(u_i, 1),\\
        B_i \sim N(0, \beta^2),\quad v_i[j] \sim N(B_i, 1),\quad n_i = \lfloor
        \mathrm{LogNormal}(4, 2)\rfloor + 50.

    ``alpha`` controls how much the local models differ (concept shift), ``beta`` how much the
    feature distributions differ (covariate shift). As in the authors' generator (which draws
    ``np.random.normal(0, alpha)``), ``alpha`` and ``beta`` are **standard deviations**; the
    paper's text writes :math:`N(0, \alpha)`. With ``iid=True`` every client shares one model
    :math:`W, b \sim N(0, 1)` and has :math:`v_i = B_i \mathbf{1}` (the paper's Synthetic-IID uses
    ``alpha = beta = 0``).

    Parameters
    ----------
    alpha, beta : float >= 0
    n_clients : int >= 1, default=30
    n_features : int >= 1, default=60
    n_classes : int >= 2, default=10
    iid : bool, default=False
    n_per_client : None, int >= 1 or array-like of ints, default=None
        Samples per client; ``None`` draws the paper's heavy-tailed
        :math:`\lfloor\mathrm{LogNormal}(4, 2)\rfloor + 50` (median about 100, but a few clients may
        hold tens of thousands of samples).
    max_per_client : None or int >= 1, default=None
        Cap on every client's sample count (applied after the draw; the labels and features of the kept
        samples follow the same model).
    random_state : None, int, SeedSequence or Generator, default=None

    Returns
    -------
    FedProxSynthetic
        ``(X, y, client_ids, W, b, mean_x)``.

    Examples
    --------
    >>> data = make_fedprox_synthetic(1.0, 1.0, n_clients=5, n_per_client=20, random_state=0)
    >>> data.X.shape, data.W.shape, sorted(set(data.client_ids.tolist()))
    ((100, 60), (5, 60, 10), [0, 1, 2, 3, 4])
    """
    alpha = check_scalar_float(alpha, "alpha", low=0.0)
    beta = check_scalar_float(beta, "beta", low=0.0)
    M = check_scalar_int(n_clients, "n_clients", low=1)
    d = check_scalar_int(n_features, "n_features", low=1)
    C = check_scalar_int(n_classes, "n_classes", low=2)
    iid = check_bool(iid, "iid")
    rng = check_random_state(random_state)
    sizes = _client_sizes(n_per_client, M, rng)
    if sizes is None:
        sizes = rng.lognormal(4.0, 2.0, size=M).astype(np.int64) + 50
    if max_per_client is not None:
        sizes = np.minimum(sizes, check_scalar_int(max_per_client, "max_per_client", low=1))

    u = rng.normal(0.0, alpha, size=M)
    B = rng.normal(0.0, beta, size=M)
    sd_x = np.arange(1, d + 1, dtype=np.float64) ** -0.6  # sqrt of diag(j^-1.2)
    if iid:
        mean_x = np.repeat(B[:, None], d, axis=1)
        W_glob = rng.normal(0.0, 1.0, size=(d, C))
        b_glob = rng.normal(0.0, 1.0, size=C)
        W = np.broadcast_to(W_glob, (M, d, C)).copy()
        b = np.broadcast_to(b_glob, (M, C)).copy()
    else:
        mean_x = rng.normal(B[:, None], 1.0, size=(M, d))
        W = rng.normal(u[:, None, None], 1.0, size=(M, d, C))
        b = rng.normal(u[:, None], 1.0, size=(M, C))
    Xs, ys = [], []
    for i in range(M):
        x = mean_x[i] + rng.standard_normal((int(sizes[i]), d)) * sd_x
        Xs.append(x)
        ys.append(np.argmax(x @ W[i] + b[i], axis=1).astype(np.int64))
    client_ids = np.repeat(np.arange(M, dtype=np.int64), sizes)
    return FedProxSynthetic(np.concatenate(Xs), np.concatenate(ys), client_ids, W, b, mean_x)


def _client_sizes(n_per_client, M, rng):
    """``None`` -> None; int -> constant; array-like -> validated int array of length M."""
    if n_per_client is None:
        return None
    if np.isscalar(n_per_client):
        return np.full(M, check_scalar_int(n_per_client, "n_per_client", low=1), dtype=np.int64)
    sizes = check_array_1d(n_per_client, "n_per_client", dtype="int")
    if sizes.shape[0] != M:
        raise ValueError(f"'n_per_client' must have length n_clients = {M}; got length {sizes.shape[0]}.")
    if sizes.min() < 1:
        raise ValueError(f"'n_per_client' must contain ints >= 1; got {int(sizes.min())}.")
    return sizes


# -------------------------------------------------------------------------------- heterogeneous linear

HeteroLinear = namedtuple("HeteroLinear", ["X", "y", "client_ids", "theta", "theta_bar"])
HeteroLinear.__doc__ = """Data drawn by :func:`make_hetero_linear`.

X : ndarray (n, p); y : ndarray (n,); client_ids : ndarray of int64 (n,) (contiguous blocks);
theta : ndarray (n_clients, p), every client's true parameter theta_i*; theta_bar : ndarray (p,),
their common centre."""


def make_hetero_linear(n_clients, p, tau, sigma, n_per_client, *, theta_bar=None, random_state=None):
    r"""Linear regression with client-specific parameters (task-heterogeneous, federated reconstruction notes, T4/E1).

    .. math::
        y = x^\top \theta_i^* + \varepsilon,\quad x \sim N(0, I_p),\quad
        \varepsilon \sim N(0, \sigma^2),\quad \theta_i^* = \bar\theta + \delta_i,\quad
        \delta_i \sim N(0, \tau^2 I_p),

    so ``tau`` is the per-coordinate standard deviation of the client parameters around
    :math:`\bar\theta` (:math:`E\|\theta_i^* - \bar\theta\|^2 = p\tau^2`) and :math:`E xx^\top = I`.
    By default :math:`\bar\theta \sim N(0, I_p)`. This is the model on which the Potara variance
    bound is exact (local OLS has :math:`V_L = \sigma^2 \mathrm{tr}(X_i^\top X_i)^{-1}`).

    Parameters
    ----------
    n_clients : int >= 1
    p : int >= 1
    tau : float >= 0
    sigma : float >= 0
    n_per_client : int >= 1 or array-like of ints of length n_clients
    theta_bar : None or array-like of shape (p,), default=None
        The common centre; drawn from :math:`N(0, I_p)` when None.
    random_state : None, int, SeedSequence or Generator, default=None

    Returns
    -------
    HeteroLinear
        ``(X, y, client_ids, theta, theta_bar)``.

    Examples
    --------
    >>> data = make_hetero_linear(3, 2, tau=0.5, sigma=1.0, n_per_client=[5, 6, 7], random_state=0)
    >>> data.X.shape, data.theta.shape, int((data.client_ids == 2).sum())
    ((18, 2), (3, 2), 7)
    """
    M = check_scalar_int(n_clients, "n_clients", low=1)
    p = check_scalar_int(p, "p", low=1)
    tau = check_scalar_float(tau, "tau", low=0.0)
    sigma = check_scalar_float(sigma, "sigma", low=0.0)
    rng = check_random_state(random_state)
    sizes = _client_sizes(n_per_client, M, rng)
    if sizes is None:
        raise TypeError("'n_per_client' must be an int >= 1 or an array-like of ints; got None.")
    if theta_bar is None:
        theta_bar = rng.standard_normal(p)
    else:
        theta_bar = check_array_1d(theta_bar, "theta_bar", dtype="float")
        if theta_bar.shape[0] != p:
            raise ValueError(f"'theta_bar' must have length p = {p}; got length {theta_bar.shape[0]}.")
    theta = theta_bar + tau * rng.standard_normal((M, p))
    client_ids = np.repeat(np.arange(M, dtype=np.int64), sizes)
    X = rng.standard_normal((client_ids.shape[0], p))
    y = np.einsum("ij,ij->i", X, theta[client_ids]) + sigma * rng.standard_normal(client_ids.shape[0])
    return HeteroLinear(X, y, client_ids, theta, theta_bar.copy())
