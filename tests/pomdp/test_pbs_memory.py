"""Compact storage of PointBasedSolver's numba engine: in-place buffer moves, witness beliefs in CSR, the
vectors exported from their own buffer, the sawtooth points kept sparse; the bounds are those of the
plain layout."""

import numpy as np
import pytest

from algos.pomdp import PointBasedSolver, rock_sample
from algos.pomdp.solvers import _pbs_engines as E
from algos.pomdp.solvers import _pbs_kernels as _k


@pytest.mark.parametrize("S,cap,nA", [(1, 1, 1), (2, 3, 2), (5, 7, 3), (7, 4, 4), (13, 20, 11), (64, 100, 1)])
def test_transpose_in_place_equals_the_copy(S, cap, nA):
    rng = np.random.default_rng(S * 100 + cap)
    A = rng.normal(size=(S, cap))
    ref = A[:, :nA].T.copy()
    _k.transpose_in_place(A.reshape(-1), S, nA, cap)
    assert np.array_equal(A.reshape(-1)[:nA * S].reshape(nA, S), ref)


@pytest.mark.parametrize("S,cap,n,used", [(3, 4, 6, 2), (5, 5, 8, 5), (40, 7, 11, 7)])
def test_widen_in_place_keeps_the_columns_and_the_buffer(S, cap, n, used):
    rng = np.random.default_rng(cap)
    A = np.zeros((S, cap))
    A[:, :used] = rng.normal(size=(S, used))
    ref = A[:, :used].copy()
    B = E._widen_in_place(A, n, used)
    assert B.shape == (S, n) and B.flags.owndata and B.flags.c_contiguous
    assert np.array_equal(B[:, :used], ref) and not B[:, used:].any()


def _fit_capturing(model, monkeypatch, **kw):
    """Fit and return ``(solver, engine, its vectors (nA, S) and witness rows (nA, S) before the export)``."""
    seen = {}
    export = E._NumbaEngine.export

    def spy(self):
        seen["eng"] = self
        seen["alphas"] = self.ALT[:, :self.nA].T.copy()
        ptr, idx, val = self.WB
        W = np.zeros((self.nA, self.S))
        for i in range(self.nA):
            W[i, idx[ptr[i]:ptr[i + 1]]] = val[ptr[i]:ptr[i + 1]]
        seen["W"] = W
        return export(self)

    monkeypatch.setattr(E._NumbaEngine, "export", spy)
    s = PointBasedSolver(time_limit=60.0, max_trials=40, random_state=0, **kw).fit(model)
    return s, seen["eng"], seen["alphas"], seen["W"]


def test_exported_vectors_are_the_engine_columns_and_buffers_keep_bounded_slack(monkeypatch):
    s, eng, alphas, W = _fit_capturing(rock_sample(4, 4), monkeypatch)
    assert s.alphas_.flags.c_contiguous and np.array_equal(s.alphas_, alphas)
    assert len(s.actions_) == len(s.alphas_)
    # each witness row is a belief (or empty for the initial vectors), held only on its support
    mass = W.sum(axis=1)
    assert np.allclose(mass[mass > 0], 1.0) and (mass[:eng.n_init] == 0).all()
    nnz = int(eng.WB[0][len(s.alphas_)])
    assert nnz == int((W > 0).sum())
    # the witness CSR holds room for at most GROWTH times what a trial may need beyond its entries
    need = len(eng.path)
    assert len(eng.WB[1]) <= max(256 * 4, E.GROWTH * (nnz + need * eng.S)) + 1
    # the sawtooth points: dense on access, equal to the sparse rows the fit keeps
    Bu, vu, c = s.upper_points_
    ptr, idx, val = s._upper_points[0]
    assert Bu.shape == (len(vu), len(c)) and len(ptr) == len(vu) + 1
    for i in range(len(vu)):
        np.testing.assert_array_equal(np.flatnonzero(Bu[i]), idx[ptr[i]:ptr[i + 1]])
        np.testing.assert_array_equal(Bu[i, idx[ptr[i]:ptr[i + 1]]], val[ptr[i]:ptr[i + 1]])


def test_pruning_before_growth_keeps_the_bound_at_b0_and_the_witness_rows(monkeypatch):
    """prune_lower (also run when the vector buffer is full) keeps L(b0) and L at every surviving witness, and
    compacts the witness CSR to the surviving vectors' rows."""
    model = rock_sample(4, 4)
    s, eng, alphas, W = _fit_capturing(model, monkeypatch, prune=False)
    b0 = np.asarray(model.b0, dtype=float)
    # a fresh engine holding the same vectors and witnesses, then pruned
    n = len(alphas)
    eng2 = E._NumbaEngine((eng.Tptr, eng.Tidx, eng.Tval), eng.Z, eng.r, eng.discount, b0, eng.Q, eng.c, alphas)
    eng2.n_init = eng.n_init
    eng2.WB = E.witnesses_csr(W, n + 8)
    eng2.AA = np.arange(n + 8)
    lo_before = eng2.bounds()[0]
    eng2.prune_lower()
    m = eng2.nA
    assert eng.n_init <= m < n
    assert eng2.bounds()[0] == lo_before
    kept = eng2.ALT[:, :m].T
    ptr, idx, val = eng2.WB
    for i in range(m):
        j = int(eng2.AA[i])  # the original index of the survivor
        np.testing.assert_array_equal(kept[i], alphas[j])
        w = np.zeros(eng.S)
        w[idx[ptr[i]:ptr[i + 1]]] = val[ptr[i]:ptr[i + 1]]
        np.testing.assert_array_equal(w, W[j])
        if w.any():
            assert (kept @ w).max() == pytest.approx((alphas @ w).max(), rel=1e-12)  # ties: round-off
