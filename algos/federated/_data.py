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
.. [4] A. Mora et al., "Flower Datasets" (flwr-datasets), ``DirichletPartitioner``,
   https://flower.ai/docs/datasets/ (the partitioner users know; see :func:`dirichlet_mixture_sample`).
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
    "dirichlet_mixture_sample",
    "DigitsClients",
    "make_digits_clients",
]

# ---------------------------------------------------------------------------------------- Dirichlet


def dirichlet_label_split(y, n_clients, alpha, min_size=2, *, max_tries=100, random_state=None):
    r"""Split samples among clients with label skew drawn from a symmetric Dirichlet distribution.

    For every class :math:`k` a vector of client shares :math:`p_k \sim \mathrm{Dir}(\alpha
    \mathbf{1}_M)` is drawn and the (shuffled) samples of class :math:`k` are cut into ``M``
    consecutive pieces of sizes proportional to :math:`p_k` (Hsu, Qi & Brown 2019, the module's reference [1]). If some
    client ends up with fewer
    than ``min_size`` samples the whole draw is repeated (as in Yurochkin et al. 2019, reference [2] of the module, and
    flwr-datasets' ``DirichletPartitioner(partition_by="label", alpha, min_partition_size)``), at most
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


# ------------------------------------------------------------------ per-client Dirichlet mixtures

def _client_rng(random_state, client):
    """The generator of one client: ``default_rng([seed, client])`` (independent of the other clients)."""
    seed = check_scalar_int(random_state, "random_state", low=0)
    client = check_scalar_int(client, "client", low=0)
    return np.random.default_rng([seed, client, 0x5EED])


def dirichlet_mixture_sample(y, client, alpha, n_samples, *, random_state=0):
    r"""Rows of a labelled pool drawn for one client whose label mixture is Dirichlet-distributed.

    Client ``client`` draws its label proportions :math:`p \sim \mathrm{Dir}(\alpha\mathbf{1}_K)` over the
    ``K`` classes of ``y``, then ``n_samples`` labels from :math:`p` and, for each, a row of that class
    uniformly **with replacement**. Everything comes from the client's own generator
    ``numpy.random.default_rng([random_state, client, ...])``, so a SuperNode can build its own partition
    from its ``partition-id`` alone, in :math:`O(n_{\text{samples}} + K)` time and memory, whatever the
    number of clients: the population is unbounded, and client ``c``'s rows do not depend on how many
    other clients exist or which ones were built.

    Relation to flwr-datasets' ``DirichletPartitioner(partition_by="label", alpha=...)`` (reference [4] of
    the module) and :func:`dirichlet_label_split`: those draw, for each class, a Dirichlet vector over the
    *clients* and cut the data set into disjoint pieces, so the number of clients is bounded by the data
    (a few dozen clients of at least 20 rows from the 1,797 digits) and building one partition needs the
    whole split. Here the Dirichlet is over the *classes*, per client (the label skew is the same kind:
    small ``alpha`` puts a client's mass on few classes; ``alpha -> inf`` gives uniform labels), and
    clients share pool rows (with replacement), which is what lets 1,000 clients hold 20-50 rows each.
    Pair it with augmentation (:func:`make_digits_clients`) so that repeated rows differ.

    Parameters
    ----------
    y : array-like of shape (n_pool,)
        Labels of the pool (every class present at least once).
    client : int >= 0
        The client (partition id).
    alpha : float > 0
        Dirichlet concentration of the client's label mixture.
    n_samples : int >= 0
    random_state : int >= 0, default=0
        The population seed (shared by all clients).

    Returns
    -------
    rows : ndarray of int64, shape (n_samples,)
        Row indices into ``y`` (repeats possible).
    proportions : ndarray of float64, shape (K,)
        The client's label mixture :math:`p` (classes in ``np.unique(y)`` order).

    Examples
    --------
    >>> y = np.repeat(np.arange(3), 5)
    >>> rows, p = dirichlet_mixture_sample(y, client=7, alpha=0.5, n_samples=4, random_state=0)
    >>> rows.shape, p.shape, bool(np.isclose(p.sum(), 1.0))
    ((4,), (3,), True)
    """
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] == 0:
        raise ValueError(f"'y' must be a non-empty 1-d array of labels; got shape {y.shape}.")
    if y.dtype.kind == "c":
        raise TypeError("'y' must hold class labels (integers, strings or finite floats); got complex values.")
    if y.dtype.kind == "f":
        check_finite(y, "y")
    alpha = check_scalar_float(alpha, "alpha", low=0.0, closed="neither")
    n_samples = check_scalar_int(n_samples, "n_samples", low=0)
    rng = _client_rng(random_state, client)
    _, y_idx = np.unique(y, return_inverse=True)
    K = int(y_idx.max()) + 1
    p = rng.dirichlet(np.full(K, alpha))
    if not np.all(np.isfinite(p)) or p.sum() <= 0:  # alpha so small that every gamma draw underflowed
        p = np.zeros(K)
        p[rng.integers(K)] = 1.0
    return _rows_for_mixture(y_idx, K, p, n_samples, rng), p


def _rows_for_mixture(y_idx, K, p, n_samples, rng):
    """``n_samples`` rows of a pool with class indices ``y_idx``: labels from ``p``, rows uniform in class."""
    labels = rng.choice(K, size=n_samples, p=p / p.sum())
    order = np.argsort(y_idx, kind="stable")
    starts = np.searchsorted(y_idx[order], np.arange(K + 1))
    counts = np.diff(starts)
    if np.any(counts[labels] == 0):
        raise ValueError("the pool has no row of a class that the client's mixture drew; every class of 'y' "
                         "must appear in the pool.")
    pick = starts[labels] + (rng.random(n_samples) * counts[labels]).astype(np.int64)
    return order[np.minimum(pick, starts[labels + 1] - 1)].astype(np.int64)


DigitsClients = namedtuple("DigitsClients", ["X", "y", "client_ids", "X_test", "y_test", "test_client_ids"])
DigitsClients.__doc__ = """Data built by :func:`make_digits_clients`.

X : ndarray (n, 64) standardised pixels; y : ndarray of int64 (n,); client_ids : ndarray of int64 (n,)
(contiguous blocks in the order of ``clients``); X_test, y_test, test_client_ids: the same for the
held-out rows of every client (drawn from the same mixture, from digits images no client trains on)."""

_DIGITS = {}


def _digits_pools(split_seed):
    """Standardised digits images (8 x 8) and labels, split once into a training and a test pool."""
    if split_seed not in _DIGITS:
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        test = np.random.default_rng([split_seed, 1]).random(len(y)) < 0.3
        _DIGITS[split_seed] = (X.reshape(-1, 8, 8), y.astype(np.int64), test)
    return _DIGITS[split_seed]


def _augment(images, rng, shift, noise):
    """Shift every 8 x 8 image by up to ``shift`` pixels (zero fill) and add N(0, noise^2) per pixel."""
    out = np.zeros_like(images)
    dx = rng.integers(-shift, shift + 1, size=len(images))
    dy = rng.integers(-shift, shift + 1, size=len(images))
    for j in range(len(images)):
        sx, sy = int(dx[j]), int(dy[j])
        src = images[j, max(0, -sy):8 - max(0, sy), max(0, -sx):8 - max(0, sx)]
        out[j, max(0, sy):max(0, sy) + src.shape[0], max(0, sx):max(0, sx) + src.shape[1]] = src
    out = out.reshape(len(images), 64) / 16.0  # digits pixels are 0..16
    return out + noise * rng.standard_normal(out.shape)


def _standardise(X, pool, noise):
    """``(X - mean) / scale`` with the pool's pixel means and noisy-pixel standard deviations (+ 0.1)."""
    flat = pool.reshape(len(pool), 64) / 16.0
    return (X - flat.mean(0)) / (np.sqrt(flat.var(0) + noise**2) + 0.1)


def make_digits_clients(clients, *, alpha=0.5, n_train=30, n_test=15, noise=0.2, shift=0, random_state=0):
    r"""A population of digits clients of any size, each built from its own seed.

    Client ``c`` draws its label mixture from :math:`\mathrm{Dir}(\alpha\mathbf{1}_{10})` and its rows with
    :func:`dirichlet_mixture_sample` (``random_state``, ``c``): ``n_train`` training rows from 70 % of
    scikit-learn's packaged digits (1,797 images of 8 x 8 pixels, no download) and ``n_test`` held-out rows
    from the other 30 % (the same mixture; no held-out image is ever a training image). Every row is
    augmented: the pixels are scaled to [0, 1] and perturbed by Gaussian noise of standard deviation
    ``noise`` (and, with ``shift > 0``, the image is first shifted by up to ``shift`` pixels in each
    direction, zero fill), so clients sharing a pool image see different rows; the 64 features are then
    standardised with constants of the pool (the pixel means, and standard deviations including the
    noise, plus 0.1), the same for every client. The label skew makes the local label prior worth personalising (as a
    Dirichlet split of a real data set does), while the population can hold 1,000 or 100,000 clients.

    Only the listed ``clients`` are built: a Flower SuperNode calls ``make_digits_clients(partition_id)``
    and never materialises the others. Time and memory are :math:`O((n_{train} + n_{test}) \cdot 64)` per
    client (about 23 KB of float64 rows for the defaults; 1,000 clients: 23 MB) plus the digits pool
    (0.9 MB, loaded once per process). Deterministic: client ``c``'s rows depend only on ``c``, the
    keyword arguments and ``random_state``, not on the other clients listed.

    Parameters
    ----------
    clients : int or array-like of ints >= 0
        The clients to build (an int: that one client; ``range(M)`` for a population of ``M``).
    alpha : float > 0, default=0.5
        Label-mixture concentration (small: few classes per client).
    n_train, n_test : int >= 1 and >= 0, default=30 and 15
        Rows per client.
    shift : int in [0, 3], default=0
        Largest random shift in pixels (a harder task for a linear head: a one-pixel shift of an 8 x 8
        digit costs a softmax model about a third of its accuracy).
    noise : float >= 0, default=0.2
        Pixel noise (pixels are in [0, 1]).
    random_state : int >= 0, default=0
        Population seed.

    Returns
    -------
    DigitsClients
        ``(X, y, client_ids, X_test, y_test, test_client_ids)``, clients in the order given.

    Examples
    --------
    >>> d = make_digits_clients([3, 999], n_train=20, n_test=5, random_state=0)
    >>> d.X.shape, d.X_test.shape, sorted(set(d.client_ids.tolist()))
    ((40, 64), (10, 64), [3, 999])
    >>> bool(np.array_equal(make_digits_clients(999, n_train=20, n_test=5).X, d.X[20:]))
    True
    """
    ids = np.atleast_1d(np.asarray(clients))
    if ids.ndim != 1 or ids.dtype.kind not in "iu" or (ids.size and ids.min() < 0):
        raise ValueError(f"'clients' must be an int >= 0 or a 1-d array of ints >= 0; got {clients!r}.")
    alpha = check_scalar_float(alpha, "alpha", low=0.0, closed="neither")
    n_train = check_scalar_int(n_train, "n_train", low=1)
    n_test = check_scalar_int(n_test, "n_test", low=0)
    shift = check_scalar_int(shift, "shift", low=0, high=3)
    noise = check_scalar_float(noise, "noise", low=0.0)
    seed = check_scalar_int(random_state, "random_state", low=0)
    images, labels, is_test = _digits_pools(seed)
    tr_rows, te_rows = np.flatnonzero(~is_test), np.flatnonzero(is_test)
    out = {k: [] for k in DigitsClients._fields}
    for c in ids.tolist():
        rows, p = dirichlet_mixture_sample(labels[tr_rows], c, alpha, n_train, random_state=seed)
        # the held-out rows follow the same mixture p, from the test pool; augmentation has its own stream
        te = _rows_for_mixture(labels[te_rows], 10, p, n_test, np.random.default_rng([seed, c, 0x5EED, 1]))
        rng_a = np.random.default_rng([seed, c, 0x5EED, 2])
        out["X"].append(_augment(images[tr_rows[rows]], rng_a, shift, noise))
        out["y"].append(labels[tr_rows[rows]])
        out["client_ids"].append(np.full(n_train, c, dtype=np.int64))
        out["X_test"].append(_augment(images[te_rows[te]], rng_a, shift, noise) if n_test else np.zeros((0, 64)))
        out["y_test"].append(labels[te_rows[te]])
        out["test_client_ids"].append(np.full(n_test, c, dtype=np.int64))
    pool = images[tr_rows]
    for k in ("X", "X_test"):
        out[k] = [_standardise(x, pool, noise) for x in out[k]]
    if not ids.size:
        return DigitsClients(np.zeros((0, 64)), np.zeros(0, np.int64), np.zeros(0, np.int64),
                             np.zeros((0, 64)), np.zeros(0, np.int64), np.zeros(0, np.int64))
    return DigitsClients(*(np.concatenate(out[k]) for k in DigitsClients._fields))
