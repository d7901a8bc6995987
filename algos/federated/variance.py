r"""Estimating the second moments :math:`V_F, V_L` that set Potara's mixing weight.

The federated reconstruction notes, section 1.3 (reconstructed [R]; the diagonal-Fisher ingredient is confirmed [C]).
Per coordinate ``k`` of a parameter block:

* **Fisher / Laplace** (:func:`fisher_variance`): :math:`\sigma^2_{L,k} = 1/(n\hat F_k(\theta_L) + \delta)`,
  :math:`\hat F = \frac1n\sum_j g_j\odot g_j` the diagonal empirical Fisher (:func:`diag_fisher`), floor
  :math:`\delta = \text{fisher\_floor}\cdot n` (a prior precision); coordinates never touched by local
  training (:math:`\theta_{F,k} = \theta_{L,k}`) or with :math:`\hat F_k = 0` (dead features: constant
  pixels) are masked out (``mask_untouched=True``).
* **Plug-in** (:func:`plugin_fed_variance`, the communication-free default of the federated reconstruction notes): since
  :math:`E\|\theta_F - \theta_L\|^2 = V_F + V_L - 2C`, :math:`\hat V_F = \max(\|\theta_F - \theta_L\|^2 -
  \hat V_L, 0)` (:math:`C \approx 0`), so :math:`\hat\lambda = \min(1, \hat V_L/\|\theta_F - \theta_L\|^2)` --
  positive-part James-Stein shrinkage of the local model toward the federated one.

  **Degenerate in practice.** With the Fisher :math:`\hat V_L` (``method="plugin_fisher"``) the ratio
  :math:`\hat V_L/\|\theta_F - \theta_L\|^2` exceeds 1 on every data set tried (digits with
  Dirichlet label skew, the FedProx Synthetic sets): the inverse Fisher of a softmax head with
  :math:`p \gg n` parameters per client is far larger than the distance local fine-tuning moves, so
  :math:`\hat\lambda = 1` and the merged model is the federated model, i.e. FedAvg exactly. It is
  kept as the reconstruction's reference point and warns (:class:`FlatFisherWarning`) when flat coordinates
  cause it; use ``"bootstrap"`` for a working estimate. The benchmark omits it unless asked
  (``--plugin-fisher``).
* **Bootstrap** (:func:`bootstrap_variance`): refit the local model from :math:`\theta_F` on ``B``
  resamples; robust when :math:`n < p`.
* **Iterate variance** (:func:`iterate_variance`, SWAG-diagonal): variance of constant-step SGD
  iterates after burn-in (cheap, biased).

:func:`estimate_variances` computes per-coordinate pieces for one client; :func:`pool_moments` sums
them per group (``"global"``, ``"module"``, ``"coordinate"``) and :func:`mixing_weights` turns them into
:math:`\lambda`'s, warning (:class:`FlatFisherWarning`) when a Fisher estimate collapses
:math:`\lambda` to 1 because flat (floored) coordinates dominate :math:`\hat V_L` -- the failure mode
seen on digits in the reconstruction's reference prototype.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from .._validation import check_option, check_random_state, check_scalar_float, check_scalar_int
from .merge import MixingWeightWarning, optimal_mixing_weight

__all__ = [
    "METHODS",
    "GRANULARITIES",
    "FlatFisherWarning",
    "VarianceEstimate",
    "diag_fisher",
    "fisher_variance",
    "untouched_mask",
    "plugin_fed_variance",
    "bootstrap_variance",
    "iterate_variance",
    "model_blocks",
    "estimate_variances",
    "pool_moments",
    "mixing_weights",
]

METHODS = ("plugin_fisher", "fisher", "sandwich", "bootstrap", "swag")
GRANULARITIES = ("global", "module", "coordinate")
# relative size below which a coordinate difference counts as "untouched" (round-off of one GD step)
UNTOUCHED_RTOL = 1e-12
# share of V_L coming from floored (flat) Fisher coordinates above which a lambda = 1 is blamed on them
FLAT_SHARE_WARN = 0.5


class FlatFisherWarning(MixingWeightWarning):
    """A Fisher-based variance collapsed lambda to 1 because flat coordinates dominate it."""


def diag_fisher(per_sample_grads):
    r"""Diagonal empirical Fisher :math:`\frac1n\sum_j g_j\odot g_j` from per-sample gradients
    (axis 0 = samples). For the model of :mod:`._model` use :func:`per_sample_fisher_diag`, which never
    forms the per-sample gradients.

    Examples
    --------
    >>> diag_fisher(np.array([[1.0, 2.0], [3.0, 0.0]])).tolist()
    [5.0, 2.0]
    """
    g = np.asarray(per_sample_grads, dtype=np.float64)
    if g.ndim < 1 or g.shape[0] == 0:
        raise ValueError(f"'per_sample_grads' must have at least one sample on axis 0; got shape {g.shape}.")
    if not np.all(np.isfinite(g)):
        raise ValueError("'per_sample_grads' must contain only finite values.")
    return np.mean(g * g, axis=0)


def fisher_variance(fisher, n, fisher_floor=1e-4, mask=None):
    r"""Per-coordinate Laplace variance :math:`1/(n\hat F_k + \delta)`, :math:`\delta = \text{fisher\_floor}\cdot n`;
    masked coordinates (``mask`` False) get 0.

    Raises ``ValueError`` when ``fisher_floor = 0`` and an unmasked coordinate has :math:`\hat F_k = 0`
    (infinite variance).
    """
    F = np.asarray(fisher, dtype=np.float64)
    if not np.all(np.isfinite(F)) or np.any(F < 0):
        raise ValueError("'fisher' must be finite and non-negative.")
    n = check_scalar_int(n, "n", low=1)
    floor = check_scalar_float(fisher_floor, "fisher_floor", low=0.0)
    den = n * F + floor * n
    keep = np.ones(F.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if keep.shape != F.shape:
        raise ValueError(f"'mask' must have the Fisher's shape {F.shape}; got {keep.shape}.")
    if np.any(keep & (den <= 0)):
        raise ValueError("a coordinate has zero Fisher information and 'fisher_floor' is 0: its variance is "
                         "infinite; use fisher_floor > 0 or mask it.")
    out = np.zeros(F.shape)
    out[keep] = 1.0 / den[keep]
    return out


def untouched_mask(theta_fed, theta_loc, fisher=None):
    """Boolean mask of the coordinates to keep: moved by local training (relative change above
    ``UNTOUCHED_RTOL``) and, if ``fisher`` is given, with non-zero Fisher information."""
    a = np.asarray(theta_fed, dtype=np.float64)
    b = np.asarray(theta_loc, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"'theta_fed' and 'theta_loc' must have the same shape; got {a.shape} and {b.shape}.")
    keep = np.abs(a - b) > UNTOUCHED_RTOL * (1.0 + np.abs(a))
    if fisher is not None:
        keep &= np.asarray(fisher) > 0
    return keep


def _implicit_ridge(kw):
    """l2 plus the implicit ridge 1/(lr * epochs) of early-stopped gradient descent."""
    l2 = float(kw.get("l2", 1e-3))
    steps = max(int(kw.get("epochs", 1)), 1)
    return l2 + 1.0 / (float(kw["lr"]) * steps)


def sandwich_variance(fisher, n, rho, mask=None):
    r"""Per-coordinate sandwich variance of a ridge-regularised M-estimator with the empirical Fisher in
    place of both the Hessian and the gradient covariance: :math:`\hat F_k/(n(\hat F_k + \rho)^2)`
    (bounded by :math:`1/(4n\rho)`; tends to 0 on flat coordinates instead of exploding). Our own
    variant [D], not from the federated reconstruction notes."""
    F = np.asarray(fisher, dtype=np.float64)
    if not np.all(np.isfinite(F)) or np.any(F < 0):
        raise ValueError("'fisher' must be finite and non-negative.")
    n = check_scalar_int(n, "n", low=1)
    rho = check_scalar_float(rho, "rho", low=0.0, closed="neither")
    keep = np.ones(F.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    return np.where(keep, F / (n * (F + rho) ** 2), 0.0)


def plugin_fed_variance(dist_sq, v_loc):
    r"""Communication-free :math:`\hat V_F = \max(\|\theta_F - \theta_L\|^2 - \hat V_L, 0)`."""
    d = np.asarray(dist_sq, dtype=np.float64)
    v = np.asarray(v_loc, dtype=np.float64)
    if not (np.all(np.isfinite(d)) and np.all(np.isfinite(v))) or np.any(d < 0) or np.any(v < 0):
        raise ValueError("'dist_sq' and 'v_loc' must be finite and non-negative.")
    out = np.maximum(d - v, 0.0)
    return float(out) if out.ndim == 0 else out


def bootstrap_variance(samples):
    r"""Per-coordinate unbiased variance across bootstrap refits (axis 0 = refits, at least 2)."""
    s = np.asarray(samples, dtype=np.float64)
    if s.ndim < 1 or s.shape[0] < 2:
        raise ValueError(f"'samples' must hold at least 2 refits on axis 0; got shape {s.shape}.")
    if not np.all(np.isfinite(s)):
        raise ValueError("'samples' must contain only finite values.")
    return np.var(s, axis=0, ddof=1)


def iterate_variance(iterates, burn_in=0, scale=1.0):
    r"""SWAG-diagonal: ``scale`` times the per-coordinate variance of the iterates after ``burn_in``."""
    s = np.asarray(iterates, dtype=np.float64)
    burn_in = check_scalar_int(burn_in, "burn_in", low=0)
    scale = check_scalar_float(scale, "scale", low=0.0)
    if s.ndim < 1 or s.shape[0] - burn_in < 2:
        raise ValueError(f"'iterates' must hold at least burn_in + 2 = {burn_in + 2} iterates; got "
                         f"{s.shape[0] if s.ndim else 0}.")
    return scale * np.var(s[burn_in:], axis=0, ddof=1)


# --------------------------------------------------------------------------------------------------
# the model's blocks
# --------------------------------------------------------------------------------------------------
_FISHER_KEY = {"W": "W", "AB": "W", "b": "b", "A": "A", "B": "B"}


def model_blocks(params, merge_space="product"):
    r"""The blocks that are merged: ``{"W", "b"}`` without adapter; with one, ``{"AB", "b"}`` in product
    space (``"AB"`` = the effective weight :math:`W + AB`) or ``{"A", "B", "b"}`` in factor space."""
    check_option(merge_space, "merge_space", ("product", "factors"))
    if "A" not in params:
        return {"W": params["W"], "b": params["b"]}
    if merge_space == "product":
        return {"AB": params["W"] + params["A"] @ params["B"], "b": params["b"]}
    return {"A": params["A"], "B": params["B"], "b": params["b"]}


@dataclasses.dataclass
class VarianceEstimate:
    """Per-coordinate pieces of one client's variance estimate (dicts keyed by block name).

    ``v_loc``: :math:`\\hat\\sigma^2_{L,k}`; ``v_fed``: a variance floor for the federated model (Fisher
    method: :math:`1/(N\\hat F_k(\\theta_F) + \\delta)`; otherwise 0); ``diff_sq``:
    :math:`(\\theta_{F,k} - \\theta_{L,k})^2`; ``mask``: kept coordinates; ``flat``: coordinates whose Fisher
    is below the floor.
    """

    method: str
    v_loc: dict
    v_fed: dict
    diff_sq: dict
    mask: dict
    flat: dict


def estimate_variances(params_fed, params_loc, X, y, *, n_classes, method="plugin_fisher", merge_space="product",
                       fisher_floor=1e-4, mask_untouched=True, n_total=None, train_kwargs=None, n_bootstrap=8,
                       swag_epochs=10, random_state=None):
    r"""Per-coordinate variance pieces of one client (see the module docstring).

    Parameters
    ----------
    params_fed, params_loc : dict
        Federated and local parameters (same blocks).
    X, y : client data (``y`` class indices)
    n_classes : int
    method : {"plugin_fisher", "fisher", "sandwich", "bootstrap", "swag"}
        ``"plugin_fisher"`` is degenerate on the data sets tried (it gives :math:`\lambda = 1`, FedAvg;
        see the module docstring); ``"bootstrap"`` is the working choice.
    merge_space : {"product", "factors"}
    fisher_floor : float, default=1e-4
        :math:`\delta/n`.
    mask_untouched : bool, default=True
    n_total : int or None
        Total training samples of all clients (``method="fisher"`` only: the federated model's Fisher
        variance uses it); default ``n``.
    train_kwargs : dict
        The local fine-tune settings (``epochs, lr, l2, trainable, batch_size``) for bootstrap/swag refits.
    n_bootstrap : int, default=8
    swag_epochs : int, default=10
    random_state : None, int or Generator

    Returns
    -------
    VarianceEstimate
    """
    from ._model import _check_params, _check_Xy, _train_clients, local_train, per_sample_fisher_diag

    method = check_option(method, "method", METHODS)
    # both counts are checked whatever the method (each is used by one method only)
    n_bootstrap = check_scalar_int(n_bootstrap, "n_bootstrap", low=2)
    swag_epochs = check_scalar_int(swag_epochs, "swag_epochs", low=2)
    d, C, r = _check_params(params_fed, "params_fed")
    if _check_params(params_loc, "params_loc") != (d, C, r) or set(params_fed) != set(params_loc):
        raise ValueError("'params_fed' and 'params_loc' must have the same blocks and shapes.")
    X, y = _check_Xy(X, y, d, C)
    n = X.shape[0]
    if n < 2 and method in ("bootstrap", "swag"):
        raise ValueError(f"method={method!r} needs at least 2 samples on the client; got {n}.")
    if n < 1:
        raise ValueError("'X' must have at least one row; got 0.")
    fed_b = model_blocks(params_fed, merge_space)
    loc_b = model_blocks(params_loc, merge_space)
    diff_sq = {k: (fed_b[k] - loc_b[k]) ** 2 for k in fed_b}
    F_loc = per_sample_fisher_diag(params_loc, X, y, n_classes)
    F_blocks = {k: F_loc[_FISHER_KEY[k]] for k in fed_b}
    mask = {k: (untouched_mask(fed_b[k], loc_b[k], F_blocks[k]) if mask_untouched else np.ones(fed_b[k].shape, bool))
            for k in fed_b}
    floor = check_scalar_float(fisher_floor, "fisher_floor", low=0.0)
    flat = {k: F_blocks[k] < floor for k in fed_b}
    v_fed = {k: np.zeros(fed_b[k].shape) for k in fed_b}
    kw = dict(train_kwargs or {})
    if method in ("plugin_fisher", "fisher"):
        v_loc = {k: fisher_variance(F_blocks[k], n, floor, mask[k]) for k in fed_b}
        if method == "fisher":
            N = n if n_total is None else check_scalar_int(n_total, "n_total", low=n)
            F_fed = per_sample_fisher_diag(params_fed, X, y, n_classes)
            v_fed = {k: fisher_variance(F_fed[_FISHER_KEY[k]], N, floor, mask[k]) for k in fed_b}
    elif method == "sandwich":
        rho = _implicit_ridge(kw)
        v_loc = {k: sandwich_variance(F_blocks[k], n, rho, mask[k]) for k in fed_b}
    elif method == "bootstrap":
        B = check_scalar_int(n_bootstrap, "n_bootstrap", low=2)
        rng = check_random_state(random_state)
        idx = [rng.integers(0, n, n) for _ in range(B)]
        trainable = kw.get("trainable") or tuple(k for k in ("W", "b", "A", "B") if k in params_fed)
        refits = _train_clients([params_fed] * B, [X[i] for i in idx], [y[i] for i in idx], n_classes=C,
                                epochs=kw["epochs"], lr=kw["lr"], l2=kw.get("l2", 1e-3), trainable=trainable,
                                batch_size=kw.get("batch_size"),
                                rngs=[np.random.default_rng(rng.integers(2**63)) for _ in range(B)])
        blocks = [model_blocks(p, merge_space) for p in refits]
        v_loc = {k: bootstrap_variance(np.stack([b[k] for b in blocks])) * mask[k] for k in fed_b}
    else:  # swag
        T = check_scalar_int(swag_epochs, "swag_epochs", low=2)
        rng = check_random_state(random_state)
        bs = max(1, n // 4)
        p = params_loc
        its = []
        for _ in range(T):
            p = local_train(p, X, y, n_classes=C, epochs=1, lr=kw["lr"], l2=kw.get("l2", 1e-3),
                            trainable=kw.get("trainable"), batch_size=bs, random_state=rng)
            its.append(model_blocks(p, merge_space))
        v_loc = {k: iterate_variance(np.stack([it[k] for it in its])) * mask[k] for k in fed_b}
    return VarianceEstimate(method=method, v_loc=v_loc, v_fed=v_fed, diff_sq=diff_sq, mask=mask, flat=flat)


def pool_moments(est, granularity="module"):
    r"""Sum the per-coordinate pieces into :math:`(\hat V_F, \hat V_L)` per group.

    ``"global"``: one group ``"global"``; ``"module"``: one per block; ``"coordinate"``: per-coordinate
    arrays per block. :math:`\hat V_L = \sum_{k\in g} \hat\sigma^2_{L,k}` over kept coordinates and
    :math:`\hat V_F = \max(\sum_{k\in g}(\theta_{F,k} - \theta_{L,k})^2 - \hat V_L, \sum_{k\in g}\hat\sigma^2_{F,k})`.

    Returns
    -------
    dict group -> (V_F, V_L, flat_share)
        ``flat_share``: fraction of :math:`\hat V_L` contributed by flat (floored) coordinates.
    """
    if not isinstance(est, VarianceEstimate):
        raise TypeError(f"'est' must be a VarianceEstimate (what estimate_variances returns); got {est!r} of type "
                        f"{type(est).__name__}.")
    check_option(granularity, "granularity", GRANULARITIES)
    out = {}

    def pooled(keys, axis=None):
        if axis is None:
            vl = sum(float(np.sum(est.v_loc[k])) for k in keys)
            ds = sum(float(np.sum(est.diff_sq[k] * est.mask[k])) for k in keys)
            vfv = sum(float(np.sum(est.v_fed[k])) for k in keys)
            fl = sum(float(np.sum(est.v_loc[k] * est.flat[k])) for k in keys)
        else:
            (k,) = keys
            vl, ds, vfv = est.v_loc[k], est.diff_sq[k] * est.mask[k], est.v_fed[k]
            fl = est.v_loc[k] * est.flat[k]
        vf = np.maximum(np.asarray(ds) - vl, vfv)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(np.asarray(vl) > 0, np.asarray(fl) / np.where(np.asarray(vl) > 0, vl, 1.0), 0.0)
        if axis is None:
            return float(vf), float(vl), float(share)
        return vf, vl, share

    if granularity == "global":
        out["global"] = pooled(list(est.v_loc))
    elif granularity == "module":
        for k in est.v_loc:
            out[k] = pooled([k])
    else:
        for k in est.v_loc:
            out[k] = pooled([k], axis=True)
    return out


def mixing_weights(est, granularity="module", clip=(0.0, 1.0)):
    r"""Mixing weights per block from a :class:`VarianceEstimate`.

    Parameters
    ----------
    est : VarianceEstimate
        Output of :func:`estimate_variances`.
    granularity : {"global", "module", "coordinate"}, default="module"
        One weight for the whole model, one per block, or one per coordinate (see
        :func:`pool_moments`).
    clip : tuple of float, default=(0.0, 1.0)
        Interval ``(low, high)`` within [0, 1] that each weight is clipped to.

    Returns
    -------
    lam : dict block -> float (global, module) or block-shaped array (coordinate)
    moments : dict group -> (V_F, V_L)
        (summed to floats for the coordinate granularity too, for reporting).

    Warns
    -----
    FlatFisherWarning
        Fisher methods only: a group's :math:`\lambda` reaches the upper clip while more than half of its
        :math:`\hat V_L` comes from coordinates whose Fisher is below the floor (raise ``fisher_floor``,
        keep ``mask_untouched=True`` or use ``variance_method="bootstrap"``).
    """
    if not isinstance(est, VarianceEstimate):
        raise TypeError(f"'est' must be a VarianceEstimate (what estimate_variances returns); got {est!r} of type "
                        f"{type(est).__name__}.")
    pooled = pool_moments(est, granularity)
    lam, moments = {}, {}
    collapsed = []
    for g, (vf, vl, share) in pooled.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MixingWeightWarning)  # 0/0 on masked coordinates is routine
            lg = optimal_mixing_weight(vf, vl, 0.0, clip)
        if est.method in ("plugin_fisher", "fisher"):
            hit = np.asarray(lg) >= clip[1]
            if np.any(hit & (np.asarray(share) > FLAT_SHARE_WARN)):
                collapsed.append(g)
        lam[g] = lg
        moments[g] = (float(np.sum(vf)), float(np.sum(vl)))
    if collapsed:
        warnings.warn(f"the Fisher variance estimate sets lambda to {clip[1]} (merged = federated model) in "
                      f"{collapsed} because flat coordinates (Fisher below the floor) dominate V_L; raise "
                      "'fisher_floor', keep 'mask_untouched=True' or use variance_method='bootstrap'.",
                      FlatFisherWarning, stacklevel=2)
    if granularity == "global":
        lam = {k: lam["global"] for k in est.v_loc}
    return lam, moments
