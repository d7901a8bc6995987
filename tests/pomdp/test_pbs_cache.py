"""PointBasedSolver's kept successor values: the search tree's cached upper and lower values equal fresh
evaluations at every node after every trial, the chained sawtooth equals the full one, and the search with the
cache is the search without it (same vectors, points and bounds at equal trials)."""

import numpy as np
import pytest

from algos.pomdp import PointBasedSolver, rock_sample, tiger
from algos.pomdp._beliefs import _b0, blind_policy_values
from algos.pomdp.solvers import _pbs, _pbs_engines
from algos.pomdp.solvers import _pbs_kernels as _k
from algos.pomdp.solvers._pbs_engines import _NumbaEngine

MODELS = {"tiger": tiger(), "rocksample-3-2": rock_sample(3, 2)}


def _successor(eng, b, a, o):
    """``(x, sup, n, p)``: the unnormalised successor of ``b`` by the kernels' own arithmetic (as the trial)."""
    S = eng.S
    bsup = np.flatnonzero(b > 0).astype(np.int64)
    pred, x = np.zeros(S), np.zeros(S)
    mark, psup, xsup = np.zeros(S, np.int8), np.zeros(S, np.int64), np.zeros(S, np.int64)
    npred = _k.predict(b, bsup, len(bsup), a, eng.Tptr, eng.Tidx, eng.Tval, pred, mark, psup)
    p, n = _k.observe(pred, psup, npred, a, o, eng.Z, x, xsup)
    return x, xsup[:n].copy(), n, p


def _check_tree(eng):
    """Every node whose cache is current: its successors' cached values equal fresh evaluations with the
    points and vectors of their stamps, and the chained sawtooth equals the full one. Returns the nodes seen."""
    child, Cep, CnA, CnU, CUV, CLV, CLI = eng.tree
    A, _, O = eng.Z.shape
    vb = np.zeros(max(eng.nA, eng.nU, 1))
    stack, seen = [(0, eng.b0.copy())], 0
    while stack:
        i, b = stack.pop()
        seen += 1
        for a in range(A):
            for o in range(O):
                x, sup, n, p = _successor(eng, b, a, o)
                if p <= 0.0:
                    continue
                args = (eng.Q, eng.c, eng.Uptr, eng.Uidx, eng.Uinv, eng.Ud, eng.Umask, eng.UinvT)
                full = _k.upper_at(x, sup, n, *args, eng.nU, -1, vb)
                assert _k.upper_listed(x, sup, n, *args, eng.nU, vb, eng.links) == full
                if Cep[i] == eng.epoch:
                    assert CUV[i, a, o] == _k.upper_at(x, sup, n, *args, CnU[i], -1, vb)
                    if CnA[i] >= 0:
                        lv, li = _k.lower_at(x, sup, n, eng.ALT, CnA[i], vb)
                        assert (CLV[i, a, o], CLI[i, a, o]) == (lv, li)
                if child[i, a, o] > 0:
                    b2 = np.zeros(eng.S)
                    b2[sup] = x[sup] / p
                    stack.append((child[i, a, o] - 1, b2))
    return seen


@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("name", list(MODELS))
def test_cached_values_equal_fresh_evaluations_after_every_trial(name, dense, monkeypatch):
    if not dense:  # the CSR sawtooth (and its chains), as on models of more than DENSE_POINTS_MAX_S states
        monkeypatch.setattr(_k, "DENSE_POINTS_MAX_S", 0)
    model = MODELS[name]
    _, Z, r, discount, S, sp = _pbs._model_layout(model, "numpy")
    b0 = _b0(model, None, S)
    Q = _pbs.fib_sparse(*sp, Z, r, discount)
    eng = _NumbaEngine(sp, Z, r, discount, b0, Q, Q.max(axis=0), blind_policy_values(model, b0=b0).vectors)
    assert eng.dense_pts == dense
    last_A, last_U = eng.nA, 16
    span = float(r.max() - r.min())
    hits = 0
    for k in range(30):
        lo, up = eng.bounds()
        eng.deep = k % 2 == 0
        eps = max(1e-6, _pbs.KAPPA * (up - lo))
        eng.trial(eps, _pbs._depth_cap(eps, span, discount))
        seen = _check_tree(eng)
        assert seen == eng.n_nodes
        hits += int((eng.tree[1][:eng.n_nodes] == eng.epoch).sum())
        last_A, last_U = _pbs._prune_grown(eng, last_A, last_U)  # renumbers the sets: new epoch
    assert hits > 0  # the check saw current caches


@pytest.mark.parametrize("name", list(MODELS))
def test_search_with_the_tree_cache_is_the_search_without_it(name, monkeypatch):
    kw = dict(time_limit=60.0, target_gap=0.0, max_trials=60, clock="wall", random_state=0)
    with_cache = PointBasedSolver(**kw).fit(MODELS[name])
    monkeypatch.setattr(_pbs_engines, "TREE_CACHE_BYTES", 0)
    without = PointBasedSolver(**kw).fit(MODELS[name])
    assert (with_cache.lower_bound_, with_cache.upper_bound_) == (without.lower_bound_, without.upper_bound_)
    np.testing.assert_array_equal(with_cache.alphas_, without.alphas_)
    np.testing.assert_array_equal(with_cache.actions_, without.actions_)
    for p, q in zip(with_cache.upper_points_, without.upper_points_):
        np.testing.assert_array_equal(p, q)
    assert with_cache.n_backups_ == without.n_backups_
