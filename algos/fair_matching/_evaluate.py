r"""Evaluate an online allocator on instances: USW, CEF (ex-ante and ex-post), CPROP, with SEs."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from sklearn.base import clone

from .._validation import check_scalar_int, spawn_generators
from ._base import OnlineAllocatorMixin
from ._instance import OnlineMatchingInstance, as_instance
from .metrics import (
    _ratio_from_matrix,
    cef_ratio,
    cprop_ratio,
    ex_ante_cef_ratio,
    is_non_wasteful,
    opt_matching_size,
    usw_ratio,
)

__all__ = ["evaluate"]


def _runs_non_wasteful(instance, matches):
    """Whether every run of an integral online matching is non-wasteful: no item is left
    unmatched while one of its neighbours is still unmatched at its arrival. Vectorised over runs
    (``matches``: runs x items, agent or -1)."""
    R, m = matches.shape
    matched_at = np.full((R, instance.n_agents), np.iinfo(np.int64).max)
    for t in range(m - 1, -1, -1):  # backwards, so the first item matched to an agent wins
        rows = np.flatnonzero(matches[:, t] >= 0)
        matched_at[rows, matches[rows, t]] = t
    for t in range(m):
        dropped = np.flatnonzero(matches[:, t] < 0)
        nb = instance.neighbors(t)
        if dropped.size and nb.size and np.any(matched_at[np.ix_(dropped, nb)] > t):
            return False
    return True


def _summary(values):
    values = np.asarray(values, dtype=float)
    n = values.shape[0]
    se = float(values.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0
    return {"mean": float(values.mean()), "se": se, "min": float(values.min()), "n": int(n)}


def evaluate(estimator, instances, *, n_runs=1000, random_state=None):
    r"""Run ``estimator`` on every instance and summarise welfare and fairness.

    Deterministic (divisible) allocators are run once per instance. Randomised ones (those with
    an ``n_runs`` parameter: :class:`HybridRanking`, :class:`Ranking`, :class:`Greedy`) are
    cloned with ``n_runs`` Monte-Carlo replicates and a child seed per instance
    (``SeedSequence.spawn``), and reported both **ex ante** (ratio of means over runs, the notion
    the guarantees bound) and **ex post** (mean over runs of the realised ratio).

    Parameters
    ----------
    estimator : allocator
        An unfitted allocator of :mod:`algos.fair_matching` (it is cloned, not modified).
    instances : OnlineMatchingInstance or sequence of them
    n_runs : int >= 2, default=1000
        Monte-Carlo replicates for randomised allocators (checked for every allocator).
    random_state : None, int or Generator

    Returns
    -------
    dict
        ``"per_instance"``: a list of dicts (``usw_ratio``, ``usw_se``, ``cef_ratio`` (ex ante for
        randomised allocators), ``cef_se``, ``cef_ex_post``, ``cprop_ratio``, ``non_wasteful``);
        ``"usw_ratio"``, ``"cef_ratio"``, ``"cprop_ratio"``: ``{"mean", "se", "min", "n"}`` over
        the instances; ``"randomized"``: bool.

    Examples
    --------
    >>> from algos.fair_matching import ThresholdEqualFilling, random_instance
    >>> insts = [random_instance(6, 6, 2, 0.5, random_state=s) for s in range(3)]
    >>> res = evaluate(ThresholdEqualFilling(gamma=0.5), insts)
    >>> res["usw_ratio"]["min"] >= 0.5956
    True
    """
    if not (isinstance(estimator, OnlineAllocatorMixin) and hasattr(estimator, "get_params")):
        raise TypeError("'estimator' must be an allocator of algos.fair_matching (e.g. ThresholdEqualFilling(), "
                        f"HybridRanking()); got {estimator!r} of type {type(estimator).__name__}.")
    if isinstance(instances, OnlineMatchingInstance):
        instances = [instances]
    if isinstance(instances, (str, bytes)) or not isinstance(instances, Iterable):
        raise TypeError("'instances' must be an OnlineMatchingInstance or a sequence of them; got "
                        f"{instances!r} of type {type(instances).__name__}.")
    instances = [as_instance(inst, f"instances[{i}]") for i, inst in enumerate(instances)]
    if not instances:
        raise ValueError("'instances' must hold at least one instance; got an empty sequence.")
    n_runs = check_scalar_int(n_runs, "n_runs", low=2)  # checked for every allocator, used by randomised ones
    randomized = "n_runs" in estimator.get_params()
    n_runs = n_runs if randomized else 1
    gens = spawn_generators(random_state, len(instances))
    rows = []
    for inst, gen in zip(instances, gens):
        est = clone(estimator)
        if randomized:
            est.set_params(n_runs=n_runs, random_state=gen)
        est.fit(inst)
        X = est.allocation_
        row = {"cprop_ratio": cprop_ratio(inst, X) if not randomized else np.nan}
        if randomized:
            runs = est.realizations()
            opt = opt_matching_size(inst)
            usw = est.usw_runs_ / opt if opt else np.ones(n_runs)
            ex_ante = ex_ante_cef_ratio(inst, runs, return_se=True)
            row.update(
                usw_ratio=float(usw.mean()),
                usw_se=float(usw.std(ddof=1) / np.sqrt(n_runs)),
                cef_ratio=float(ex_ante.ratio),
                cef_se=float(ex_ante.se),
                cef_ex_post=float(np.mean([_ratio_from_matrix(V)[0] for V in ex_ante.run_matrices])),
                non_wasteful=_runs_non_wasteful(inst, est.matches_),
            )
            row["cprop_ratio"] = cprop_ratio(inst, X)  # CPROP of the expected allocation
        else:
            c = cef_ratio(inst, X)
            row.update(
                usw_ratio=usw_ratio(inst, X), usw_se=0.0, cef_ratio=c, cef_se=0.0, cef_ex_post=c,
                non_wasteful=bool(is_non_wasteful(inst, X)),
            )
        rows.append(row)
    out = {"per_instance": rows, "randomized": randomized}
    for key in ("usw_ratio", "cef_ratio", "cprop_ratio"):
        out[key] = _summary([r[key] for r in rows])
    return out
