r"""Merging a federated and a local model: closed-form mixing weights, parameter and LoRA merges.

* :func:`optimal_mixing_weight` -- :math:`\lambda^* = \mathrm{clip}((V_L - C)/(V_F + V_L - 2C))`, the
  minimiser of the variance-trace bound :math:`U(\lambda)` of :mod:`theory.federated` (reconstructed [R]),
  vectorised over modules, with the edge cases of federated reconstruction notes, section 7: :math:`V_F = 0 \Rightarrow
  \lambda = 1`,
  :math:`V_L = 0 \Rightarrow \lambda = 0`, :math:`V_F = V_L = 0` (0/0) :math:`\Rightarrow \lambda = 1/2` with a
  :class:`MixingWeightWarning`, NaN/inf :math:`\Rightarrow` ``ValueError``.
* :func:`merge_params` -- :math:`\lambda\theta_F + (1-\lambda)\theta_L` for arrays or dicts of named blocks,
  one :math:`\lambda` per block (or per coordinate) allowed; bitwise :math:`\theta_F` at :math:`\lambda = 1`
  and :math:`\theta_L` at :math:`\lambda = 0`.
* :func:`merge_lora` -- LoRA adapters (convention ``delta W = A @ B``, ``A`` (d, r), ``B`` (r, C)): exact
  merge in product space (rank concatenation, like PEFT's ``"cat"``; optionally SVD-truncated to ``rank``)
  or factor-space averaging (FedIT-style, inexact: cross terms).
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from .._validation import check_array

__all__ = ["optimal_mixing_weight", "merge_params", "merge_lora", "MixingWeightWarning"]


class MixingWeightWarning(UserWarning):
    """The mixing weight was set by convention (0/0 variances) or collapsed to an endpoint."""


def optimal_mixing_weight(v_fed, v_loc, cov=0.0, clip=(0.0, 1.0)):
    r"""Closed-form mixing weight of the federated model, :math:`\lambda^* = (V_L - C)/(V_F + V_L - 2C)`
    clipped to ``clip`` (with ``cov = 0``: :math:`V_L/(V_F + V_L)`, inverse-variance weighting).

    Parameters
    ----------
    v_fed, v_loc : float or array-like, >= 0
        Second moments :math:`V_F = E\|\theta_F - \theta^*\|^2`, :math:`V_L` (one per module if arrays).
    cov : float or array-like, default=0.0
        Cross moment :math:`C = E\langle\theta_F - \theta^*, \theta_L - \theta^*\rangle`.
    clip : (float, float), default=(0.0, 1.0)

    Returns
    -------
    float or ndarray

    Raises
    ------
    ValueError
        NaN/inf or negative variances, :math:`|C| > \sqrt{V_F V_L}`, a bad ``clip``.

    Warns
    -----
    MixingWeightWarning
        Where :math:`V_F + V_L - 2C = 0` (e.g. both variances 0): :math:`\lambda = 1/2` by convention.

    Examples
    --------
    >>> optimal_mixing_weight(1.0, 3.0)
    0.75
    >>> optimal_mixing_weight([0.0, 2.0], [1.0, 0.0]).tolist()
    [1.0, 0.0]
    """
    from theory.federated import _as_moments, optimal_lambda

    vf, vl, c = _as_moments(v_fed, v_loc, cov)
    if np.any(vf + vl - 2 * c <= 0):
        warnings.warn("V_F + V_L - 2C = 0 (e.g. V_F = V_L = 0): the bound does not depend on lambda; "
                      "using lambda = 0.5 there.", MixingWeightWarning, stacklevel=2)
    return optimal_lambda(v_fed, v_loc, cov, clip)


def _check_lam(lam, name="lam"):
    if isinstance(lam, (bool, np.bool_)):
        raise TypeError(f"'{name}' must be a float in [0, 1] or an array of such; got a bool.")
    if isinstance(lam, dict):
        raise TypeError(f"'{name}' must be a float or an array; got a dict.")
    raw = np.asarray(lam) if not isinstance(lam, (str, bytes)) else None
    if raw is None or raw.dtype.kind not in "iuf":
        if raw is None or raw.ndim == 0:
            what = f"{lam!r} of type {type(lam).__name__}"
        else:
            what = f"an array of dtype {raw.dtype}"
        raise TypeError(f"'{name}' must be a float in [0, 1] or an array of such; got {what}.")
    arr = raw.astype(np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(f"'{name}' must be in [0, 1]; got {lam!r}.")
    return arr


def _merge_array(a, b, lam, name):
    a = check_array(a, f"theta_fed{name}", allow_empty=True, finite=False)
    b = check_array(b, f"theta_loc{name}", allow_empty=True, finite=False)
    if a.shape != b.shape:
        raise ValueError(f"'theta_fed{name}' and 'theta_loc{name}' must have the same shape; got {a.shape} and "
                         f"{b.shape}.")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError(f"'theta_fed{name}' and 'theta_loc{name}' must contain only finite values.")
    if lam.ndim and lam.shape != a.shape:
        raise ValueError(f"'lam{name}' must be a scalar or have the block's shape {a.shape}; got {lam.shape}.")
    return lam * a + (1.0 - lam) * b


def merge_params(theta_fed, theta_loc, lam):
    r"""Merged parameters :math:`\lambda\theta_F + (1-\lambda)\theta_L`.

    Parameters
    ----------
    theta_fed, theta_loc : ndarray or dict of ndarrays
        Same type, same shapes (and the same block names for dicts).
    lam : float, ndarray or dict
        One weight for everything, one per coordinate (an array of the parameter's shape), or for dicts
        a dict with one entry (float or block-shaped array) per block.

    Returns
    -------
    same type as ``theta_fed`` (a new object)

    Examples
    --------
    >>> merge_params({"W": np.ones(2), "b": np.zeros(1)}, {"W": np.zeros(2), "b": np.ones(1)},
    ...              {"W": 0.25, "b": 1.0})
    {'W': array([0.25, 0.25]), 'b': array([0.])}
    """
    if isinstance(theta_fed, dict) or isinstance(theta_loc, dict):
        if not (isinstance(theta_fed, dict) and isinstance(theta_loc, dict)):
            raise TypeError("'theta_fed' and 'theta_loc' must both be dicts or both be arrays.")
        if set(theta_fed) != set(theta_loc):
            raise ValueError(f"'theta_fed' and 'theta_loc' must have the same block names; got "
                             f"{sorted(theta_fed)} and {sorted(theta_loc)}.")
        if isinstance(lam, dict):
            if set(lam) != set(theta_fed):
                raise ValueError(f"'lam' must have one entry per block {sorted(theta_fed)}; got {sorted(lam)}.")
            lams = {k: _check_lam(v, f"lam[{k!r}]") for k, v in lam.items()}
        else:
            one = _check_lam(lam)
            if one.ndim:
                raise ValueError("'lam' must be a float or a dict of per-block weights when merging dicts.")
            lams = {k: one for k in theta_fed}
        return {k: _merge_array(theta_fed[k], theta_loc[k], lams[k], f"[{k!r}]") for k in theta_fed}
    if isinstance(lam, dict):
        raise TypeError("'lam' must be a float or an array when merging arrays; got a dict.")
    return _merge_array(theta_fed, theta_loc, _check_lam(lam), "")


def _check_factor_pair(A, B, which):
    A = check_array(A, f"A_{which}", allow_empty=True, finite=False)
    B = check_array(B, f"B_{which}", allow_empty=True, finite=False)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"'A_{which}' (d, r) and 'B_{which}' (r, C) must be 2-d with matching rank; got "
                         f"{A.shape} and {B.shape}.")
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(B))):
        raise ValueError(f"'A_{which}' and 'B_{which}' must contain only finite values.")
    return A, B


def _truncate(A, B, rank):
    """Best rank-``rank`` factorisation of ``A @ B`` (SVD via QR of the thin factors)."""
    Qa, Ra = np.linalg.qr(A)
    Qb, Rb = np.linalg.qr(B.T)
    U, s, Vt = np.linalg.svd(Ra @ Rb.T)
    k = min(rank, len(s))
    sq = np.sqrt(s[:k])
    return (Qa @ U[:, :k]) * sq, (sq[:, None] * Vt[:k]) @ Qb.T


def merge_lora(A_fed, B_fed, A_loc, B_loc, lam, space="product", rank=None):
    r"""Merge two low-rank adapters :math:`\Delta W = AB`.

    ``space="product"`` (exact): :math:`\lambda A_F B_F + (1-\lambda)A_L B_L` returned as factors of rank
    :math:`r_F + r_L`: :math:`A = [A_F, A_L]`, :math:`B = [\lambda B_F; (1-\lambda)B_L]` (ranks may differ);
    with ``rank`` the product is truncated to its best rank-``rank`` approximation (SVD).
    ``space="factors"``: :math:`A = \lambda A_F + (1-\lambda)A_L`, :math:`B = \lambda B_F + (1-\lambda)B_L`
    (equal ranks required; inexact: :math:`AB` has cross terms).

    Parameters
    ----------
    A_fed, B_fed : ndarray of shape (d, r_F) and (r_F, C)
        Factors of the federated adapter.
    A_loc, B_loc : ndarray of shape (d, r_L) and (r_L, C)
        Factors of the local adapter.
    lam : float
        Weight :math:`\lambda` of the federated adapter, in [0, 1].
    space : {"product", "factors"}, default="product"
        Exact product-space merge or factor-space averaging.
    rank : int or None, default=None
        Rank the product-space merge is truncated to (``None``: no truncation).

    Returns
    -------
    A : ndarray of shape (d, r)
        Left factor of the merged adapter.
    B : ndarray of shape (r, C)
        Right factor of the merged adapter.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Af, Bf = rng.normal(size=(4, 2)), rng.normal(size=(2, 3))
    >>> Al, Bl = rng.normal(size=(4, 1)), rng.normal(size=(1, 3))
    >>> A, B = merge_lora(Af, Bf, Al, Bl, 0.3)
    >>> bool(np.allclose(A @ B, 0.3 * Af @ Bf + 0.7 * Al @ Bl))
    True
    """
    A_fed, B_fed = _check_factor_pair(A_fed, B_fed, "fed")
    A_loc, B_loc = _check_factor_pair(A_loc, B_loc, "loc")
    if A_fed.shape[0] != A_loc.shape[0] or B_fed.shape[1] != B_loc.shape[1]:
        raise ValueError(f"the two adapters must map the same spaces: 'A_fed' and 'A_loc' need the same number of "
                         f"rows, 'B_fed' and 'B_loc' the same number of columns; got delta W shapes "
                         f"{(A_fed.shape[0], B_fed.shape[1])} and {(A_loc.shape[0], B_loc.shape[1])}.")
    lam_a = _check_lam(lam)
    if lam_a.ndim:
        raise ValueError("'lam' must be a single float for a LoRA merge.")
    lam = float(lam_a)
    if space not in ("product", "factors"):
        raise ValueError(f"'space' must be one of {{'product', 'factors'}}; got {space!r}.")
    if rank is not None:
        if isinstance(rank, (bool, np.bool_)) or not isinstance(rank, numbers.Integral) or rank < 1:
            raise ValueError(f"'rank' must be None or an int >= 1; got {rank!r}.")
    if space == "factors":
        if A_fed.shape != A_loc.shape:
            raise ValueError(f"factor-space merging needs equal ranks; got {A_fed.shape[1]} and {A_loc.shape[1]}.")
        A = lam * A_fed + (1 - lam) * A_loc
        B = lam * B_fed + (1 - lam) * B_loc
    else:
        A = np.concatenate([A_fed, A_loc], axis=1)
        B = np.concatenate([lam * B_fed, (1 - lam) * B_loc], axis=0)
    if rank is not None and rank < A.shape[1]:
        A, B = _truncate(A, B, int(rank))
    return A, B
