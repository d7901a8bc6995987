r"""torch cores of :mod:`algos.fair_matching`: HybridRanking over many Monte-Carlo runs at once.

The numba kernel (:func:`algos.fair_matching._ranking_kernels.hybrid_ranking_batch`) loops over
runs and items. Here all ``R`` runs advance together as rows of ``R x n`` tensors while the items are
processed one after the other: for every item, a masked argmin over its neighbours picks the
efficiency-tier agent, and the fair-tier class is chosen with ``R x k`` tensor operations
(presence by ``index_add_``, min-utility mask, cumulative-sum selection of the candidate at position
``floor(key * n_candidates)``). Everything is float64/int64, and the only floating-point operations
are the comparison ``y < gamma`` and the product ``key * n_candidates`` (each correctly rounded
IEEE operations on CPU and CUDA), so the output equals the numba kernel's *exactly*.

torch is imported inside the function: importing this module (or :mod:`algos`) does not import it.
Cost: ~25 small tensor operations per item, whatever ``R``, so the per-item time is launch /
dispatch bound (tens of microseconds on CPU) until ``R`` is large. On CPU the numba kernel is always
faster; the point of this path is a GPU with very many runs (``R >= 10^3``).
"""

from __future__ import annotations

import math

import numpy as np

from .backend import torch_device as _resolve_device

__all__ = ["hybrid_ranking_batched"]

_FAIR_RULES = {"min_utility": 0, "random_class": 1}



def hybrid_ranking_batched(indptr, indices, agent_class, n_classes, gamma, fair_rule, ranks, tie_keys,
                           matched, class_utility, device=None):
    r"""HybridRanking for a batch of items, all ``R`` runs in parallel with torch.

    Same contract as the numba kernel
    :func:`algos.fair_matching._ranking_kernels.hybrid_ranking_batch`: neighbour lists in item-major
    CSR (sorted ascending within each item), ``ranks`` (R x n float64), ``tie_keys``
    (n_batch_items x R float64 in [0, 1)), ``matched`` (R x n, bool or uint8) and
    ``class_utility`` (R x k, int64 or float64) updated **in place**.

    Parameters
    ----------
    indptr, indices : ndarray of int
    agent_class : ndarray of int, shape (n,)
    n_classes : int
    gamma : float in [0, 1]
    fair_rule : {"min_utility", "random_class"} or {0, 1}
    ranks, tie_keys, matched, class_utility : ndarray
    device : str or torch.device, optional
        Where to compute. Default: ``"cuda"`` if available, else ``"cpu"``.

    Returns
    -------
    match : ndarray of int64, shape (R, n_batch_items)
        The agent each item went to in each run, or -1.
    """
    import torch

    if isinstance(fair_rule, str):
        if fair_rule not in _FAIR_RULES:
            raise ValueError(f"'fair_rule' must be one of {{'min_utility', 'random_class'}}; got {fair_rule!r}.")
        fair_rule = _FAIR_RULES[fair_rule]
    fair_rule = int(fair_rule)
    dev = _resolve_device(device)
    indptr = np.asarray(indptr, dtype=np.int64)
    R, n = ranks.shape
    k = int(n_classes)
    m = indptr.shape[0] - 1
    gamma = float(gamma)

    y = torch.as_tensor(np.ascontiguousarray(ranks, dtype=np.float64), device=dev)
    keys = torch.as_tensor(np.ascontiguousarray(tie_keys, dtype=np.float64), device=dev)
    # one dummy column (agent n, class k) absorbs the writes of runs that leave the item unmatched,
    # so that no boolean indexing (a device sync) is needed
    M = torch.zeros((R, n + 1), dtype=torch.bool, device=dev)
    M[:, :n] = torch.as_tensor(np.asarray(matched, dtype=bool), device=dev)
    cu_dtype = torch.float64 if np.asarray(class_utility).dtype.kind == "f" else torch.int64
    CU = torch.zeros((R, k + 1), dtype=cu_dtype, device=dev)
    CU[:, :k] = torch.as_tensor(np.asarray(class_utility), device=dev).to(cu_dtype)
    cls_ext = torch.as_tensor(np.append(np.asarray(agent_class, dtype=np.int64), k), device=dev)
    idx = torch.as_tensor(np.array(indices, dtype=np.int64), device=dev)  # a copy: may be read-only
    cls_edge = cls_ext[idx]
    out = torch.full((R, m), -1, dtype=torch.int64, device=dev)
    inf = torch.tensor(math.inf, dtype=torch.float64, device=dev)
    big = torch.tensor(
        math.inf if cu_dtype == torch.float64 else torch.iinfo(torch.int64).max, dtype=cu_dtype, device=dev
    )
    ones = torch.ones((R, 1), dtype=cu_dtype, device=dev)
    dummy_agent = torch.tensor(n, dtype=torch.int64, device=dev)
    use_fair = gamma > 0.0  # y >= 0, so gamma = 0 never enters the fair tier

    bounds = indptr.tolist()
    for t in range(m):
        s, e = bounds[t], bounds[t + 1]
        if s == e:
            continue
        nb = idx[s:e]
        cnb = cls_edge[s:e]
        # ranks of the unmatched neighbours, +inf for the matched ones (R x d)
        yu = torch.where(M.index_select(1, nb), inf, y.index_select(1, nb))
        # efficiency tier: smallest rank among the unmatched (first = lowest id: nb is sorted)
        low_y, j = torch.min(yu, dim=1)
        any_u = low_y < inf
        if use_fair:
            fair = yu < gamma  # unmatched and below the threshold
            any_f = low_y < gamma
            present = torch.zeros((R, k), dtype=torch.int32, device=dev)
            present.index_add_(1, cnb, fair.to(torch.int32))
            cand = present > 0
            if fair_rule == 0:  # min_utility
                util = CU[:, :k]
                low = torch.where(cand, util, big).min(dim=1, keepdim=True).values
                cand = cand & (util == low)
            nc = cand.sum(dim=1)
            # position floor(key * nc) (truncation = floor for key * nc >= 0), at most nc - 1
            pos = torch.minimum((keys[t] * nc).to(torch.int64), nc - 1)
            # the chosen class is the first label whose running count of candidates exceeds pos
            chosen = torch.argmax((torch.cumsum(cand, dim=1) > pos[:, None]).to(torch.int8), dim=1)
            jf = torch.argmin(torch.where(fair & (cnb[None, :] == chosen[:, None]), yu, inf), dim=1)
            j = torch.where(any_f, jf, j)
        agent = torch.where(any_u, nb[j], dummy_agent)
        M.scatter_(1, agent[:, None], True)
        CU.scatter_add_(1, cls_ext[agent][:, None], ones)
        out[:, t] = torch.where(any_u, agent, -1)

    matched[...] = M[:, :n].cpu().numpy().astype(matched.dtype, copy=False)
    class_utility[...] = CU[:, :k].cpu().numpy().astype(class_utility.dtype, copy=False)
    return out.cpu().numpy()
