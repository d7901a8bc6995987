"""PointBasedSolver (HSVI2-style search): valid brackets of V*(b0), agreement with SARSOP's
published lower bounds, the backup kernel against a dense reference, sparse large models, bad input."""

import warnings

import numpy as np
import pytest
from hypothesis import given, note, settings, target
from sklearn.exceptions import ConvergenceWarning

from algos.pomdp import PBVI, POMDP, PointBasedSolver, read_policy, read_pomdp
from algos.pomdp._beliefs import blind_policy_values
from algos.pomdp.solvers import _pbs_kernels as _k
from algos.pomdp.solvers._pbs_engines import witnesses_csr
from tests._data import missing_data
from tests.strategies import pomdps

# The bounds are exact statements (lower: values of plans; upper: Bellman backups of an upper
# bound); the only slack is float64 round-off of sums of O(S A O) terms of size max|r|/(1-discount).
ATOL = 1e-9
GAP = 1e-3  # the target gap the solver is asked for


def _data(shared_data_dir, name):
    path = shared_data_dir / "pomdp" / name
    if not path.exists():
        missing_data(path)
    return path


@pytest.mark.parametrize("name", ["tiger.95.POMDP", "4x3.95.POMDP"])
def test_bracket_contains_sarsop_lower_bound(shared_data_dir, name):
    """SARSOP's own policy (a lower bound L_S <= V*) must sit inside our bracket; at gap 1e-3 our
    lower bound must be within the gap of it (V* <= U and U - L <= gap)."""
    model = read_pomdp(_data(shared_data_dir, name))
    sarsop = read_policy(_data(shared_data_dir, f"policies/{name}.policy"), model)
    ls = sarsop.value(model.b0)
    s = PointBasedSolver(time_limit=30.0, target_gap=GAP).fit(model)
    assert s.converged_ and s.gap_ <= GAP
    assert ls <= s.upper_bound_ + ATOL, (ls, s.upper_bound_)
    assert s.lower_bound_ >= ls - GAP - ATOL, (s.lower_bound_, ls)
    h = s.history_
    assert np.all(np.diff(h[:, 1]) >= -ATOL) and np.all(np.diff(h[:, 2]) <= ATOL)
    assert h[-1, 1] == s.lower_bound_ and h[-1, 2] == s.upper_bound_
    assert s.n_backups_ > 0 and len(s.alphas_) == len(s.actions_)


@settings(max_examples=15)
@given(pomdps(max_states=4, discounts=(0.7, 0.8)))
def test_bracket_against_pbvi(model):
    """Both solvers bracket V*(b0): each lower bound is below the other's upper bound."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a clock stop still gives valid bounds
        s = PointBasedSolver(time_limit=5.0, target_gap=1e-4).fit(model)
        p = PBVI(n_beliefs=60, max_iter=300, tol=1e-9, random_state=0).fit(model)
    note(f"PBS [{s.lower_bound_}, {s.upper_bound_}], PBVI [{p.value_}, {p.upper_bound_}]")
    target(s.lower_bound_ - p.upper_bound_, label="PBS lower above PBVI upper")
    assert s.lower_bound_ <= p.upper_bound_ + ATOL
    assert p.value_ <= s.upper_bound_ + ATOL
    assert s.lower_bound_ >= blind_policy_values(model).best_value - ATOL
    # the upper bound at b0 equals the fitted upper function there (same sawtooth/FIB data)
    assert s.upper_value(model.b0) >= s.upper_bound_ - ATOL


def _dense_backup(b, alphas, T, Z, r, g):
    """Dense twin of the kernel's lower backup at ``b``: (vector, action, value)."""
    best = None
    for a in range(T.shape[0]):
        pred = b @ T[a]
        vec = r[:, a].copy()
        for o in range(Z.shape[2]):
            x = pred * Z[a, :, o]
            i = int(np.argmax(alphas @ x))
            vec += g * T[a] @ (Z[a, :, o] * alphas[i])
        v = float(b @ vec)
        if best is None or v > best[2]:
            best = (vec, a, v)
    return best


@settings(max_examples=20)
@given(pomdps(max_states=5, with_rng=True))
def test_update_kernel_matches_dense_backup(args):
    model, rng = args
    T, Z, r, g = model.T, np.ascontiguousarray(model.Z), np.ascontiguousarray(model.r), model.discount
    A, S, _ = T.shape
    O = Z.shape[2]
    Tptr, Tidx, Tval = _k.sparse_model(T)
    AL = np.zeros((8, S))
    AL[:2] = rng.uniform(-3, 0, size=(2, S))  # low vectors: the backup improves on them
    AA = np.zeros(8, dtype=np.int64)
    Q = np.full((A, S), 50.0)
    c = Q.max(axis=0)
    Uptr, Uidx, Uval, Uinv = np.zeros(9, np.int64), np.zeros(8 * S, np.int64), np.zeros(8 * S), np.zeros(8 * S)
    Ud, Uv = np.zeros(8), np.zeros(8)
    b = rng.dirichlet(np.ones(S))
    work = (np.zeros(S), np.zeros(S), np.zeros(S, np.int8), np.zeros(S, np.int64), np.zeros(S, np.int64))
    bufs = (np.zeros((A, O)), np.zeros((A, O)), np.zeros((A, O)), np.zeros((A, O), np.int64), np.zeros(A))
    ALT = np.ascontiguousarray(AL.T)  # the kernels hold the vectors column-wise
    WB = witnesses_csr(np.zeros((8, S)))
    nA, nU = _k.update(b, Tptr, Tidx, Tval, Z, r, g, ALT, AA, WB, 2, Q, c, Uptr, Uidx, Uval, Uinv,
                       Ud, Uv,
                       np.zeros((8, (S + 63) // 64), np.uint64), np.full((S, 8), np.inf), 0, *bufs, work, np.zeros(S),
                       np.zeros(S), np.zeros(S, np.int64), np.zeros(8))
    AL = np.ascontiguousarray(ALT.T)
    vec, a, v = _dense_backup(b, AL[:2], T, Z, r, g)
    if v > float((AL[:2] @ b).max()) + 1e-9:
        assert nA == 3
        np.testing.assert_allclose(AL[2], vec, rtol=1e-12, atol=1e-12, err_msg="backed-up vector")
        assert AA[2] == a
    # upper backup: H U(b) with U = min(FIB, corners) = b . Q[0] here (all Q equal): 50 + reward part
    hu = max(float(b @ r[:, a2]) + g * 50.0 for a2 in range(A))
    assert nU == 1 and abs(Uv[0] - max(hu, v)) <= 1e-9


def test_sparse_thousand_states():
    """A 1000-state model (3 successors per row) runs in memory and gives an ordered bracket."""
    rng = np.random.default_rng(0)
    S, A, O = 1000, 3, 4
    T = np.zeros((A, S, S))
    for a in range(A):
        for s in range(S):
            nxt = rng.choice(S, size=3, replace=False)
            T[a, s, nxt] = rng.dirichlet(np.ones(3))
    Z = rng.dirichlet(np.ones(O), size=(A, S))
    r = rng.uniform(-1, 1, size=(S, A))
    b0 = np.zeros(S)
    b0[:5] = 0.2
    model = POMDP(T, Z, r, 0.9, b0=b0)
    s = PointBasedSolver(time_limit=600.0, target_gap=1e-3, max_trials=10).fit(model)  # fixed work, no clock
    assert blind_policy_values(model).best_value - ATOL <= s.lower_bound_ <= s.upper_bound_ + ATOL
    assert s.n_trials_ == 10 or s.converged_
    assert s.history_[-1, 2] < s.history_[0, 2]  # the search tightened the upper bound


def test_deterministic_with_max_trials():
    from algos.pomdp import tiger

    model = tiger()
    a = PointBasedSolver(time_limit=60.0, target_gap=0.0, max_trials=20).fit(model)
    b = PointBasedSolver(time_limit=60.0, target_gap=0.0, max_trials=20).fit(model)
    assert a.n_trials_ == 20
    np.testing.assert_array_equal(a.alphas_, b.alphas_)
    assert a.upper_bound_ == b.upper_bound_


@pytest.mark.parametrize("params, name", [
    ({"time_limit": 0.0}, "time_limit"), ({"time_limit": -1.0}, "time_limit"),
    ({"target_gap": -1e-3}, "target_gap"), ({"max_trials": -1}, "max_trials"),
    ({"clock": "process"}, "clock"), ({"clock": "CPU"}, "clock"),
])
def test_bad_parameters(params, name):
    from algos.pomdp import tiger

    with pytest.raises(ValueError, match=f"'{name}'"):
        PointBasedSolver(**params).fit(tiger())


def test_bad_types_and_discount_one():
    from algos.pomdp import tiger

    with pytest.raises(TypeError, match="'time_limit'"):
        PointBasedSolver(time_limit="5").fit(tiger())
    m = tiger()
    m1 = POMDP(m.T, m.Z, m.r, 1.0, m.b0)
    with pytest.raises(ValueError, match="discount"):
        PointBasedSolver().fit(m1)


# ----------------------------------------------------------------------------- the clock
@pytest.mark.slow  # compiles every kernel from scratch (about 45 s on 2 loaded cores)
def test_time_limit_excludes_compilation_in_a_fresh_process(tmp_path):
    """In a new interpreter with an empty numba cache (nothing compiled, nothing to load) a
    1-second budget still runs trials and improves both initial bounds: the kernels are compiled
    before the clock starts."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import json, warnings\n"
        "from algos.pomdp import PointBasedSolver, tiger\n"
        "from algos.pomdp._beliefs import blind_policy_values\n"
        "warnings.simplefilter('ignore')\n"
        "m = tiger()\n"
        "s = PointBasedSolver(time_limit=1).fit(m)\n"
        "print(json.dumps({'trials': s.n_trials_, 'lo': s.lower_bound_, 'up': s.upper_bound_,\n"
        "                  'lo0': s.history_[0, 1], 'up0': s.history_[0, 2],\n"
        "                  'blind': float(blind_policy_values(m).vectors.dot(m.b0).max())}))\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
               NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root,
                         timeout=600, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["trials"] > 0
    assert res["lo0"] == pytest.approx(res["blind"])  # the run starts from the blind-policy bound
    assert res["lo"] > res["blind"] + 1.0 and res["up"] < res["up0"] - 1.0


@pytest.mark.parametrize("clock", ["cpu", "wall"])
def test_clock_stop_warns_with_time_limit_and_gap(clock):
    from algos.pomdp import tiger

    with pytest.warns(ConvergenceWarning, match=r"time_limit=1e-09 .*gap .*target_gap=0"):
        s = PointBasedSolver(time_limit=1e-9, target_gap=0.0, clock=clock).fit(tiger())
    assert not s.converged_ and s.gap_ > 0
    assert s.get_params()["clock"] == clock


def test_no_warning_when_converged_or_capped_by_max_trials():
    from algos.pomdp import tiger

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        s = PointBasedSolver(time_limit=600.0, target_gap=1e-2).fit(tiger())
        assert s.converged_
        s = PointBasedSolver(time_limit=600.0, target_gap=0.0, max_trials=2).fit(tiger())
        assert s.n_trials_ == 2 and not s.converged_


# ----------------------------------------------------------------------------- PBVI stopping rule
def test_pbvi_convergence_rule():
    """converged_ needs the Bellman residual on the belief set below tol after at least
    log(tol)/log(discount) sweeps, and the requested gap at b0; otherwise a ConvergenceWarning
    names the knob."""
    from algos.pomdp import tiger

    m = tiger()
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        p = PBVI(n_beliefs=20, max_iter=30, tol=1e-6, random_state=0).fit(m)
    assert not p.converged_  # 30 < log(1e-6)/log(0.95) = 270 sweeps
    with pytest.warns(ConvergenceWarning, match="n_beliefs"):
        p = PBVI(n_beliefs=3, max_iter=400, tol=1e-3, target_gap=1e-6, random_state=0).fit(m)
    assert not p.converged_ and p.gap_ > 1e-6
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        p = PBVI(n_beliefs=60, max_iter=400, tol=1e-3, target_gap=0.5, random_state=0).fit(m)
    assert p.converged_ and p.gap_ <= 0.5 and p.residual_ <= 1e-3 and p.n_iter_ >= 135


# ----------------------------------------------------------------------------- kernel layouts
def _points_csr(Bu):
    S = Bu.shape[1]
    ptr = np.zeros(len(Bu) + 1, np.int64)
    idx, val = [], []
    for i, row in enumerate(Bu):
        nz = np.flatnonzero(row > 0)
        idx.append(nz)
        val.append(row[nz])
        ptr[i + 1] = ptr[i] + len(nz)
    idx, val = np.concatenate(idx).astype(np.int64), np.concatenate(val)
    mask = np.zeros((len(Bu), (S + 63) // 64), np.uint64)
    for i, row in enumerate(Bu):
        for s in np.flatnonzero(row > 0):
            mask[i, s >> 6] |= np.uint64(1) << np.uint64(s & 63)
    inv_t = np.where(Bu.T > 0, 1.0 / np.where(Bu.T > 0, Bu.T, 1.0), np.inf)
    return ptr, idx, val, 1.0 / val, mask, np.ascontiguousarray(inv_t)


@pytest.mark.parametrize("S", [5, 70, 130])  # one, two and three mask words
def test_sawtooth_dense_and_csr_paths_agree_with_the_formula(S):
    """upper_at (dense inverses and CSR loop) equals the sawtooth formula computed densely here:
    x.c + min(0, min_i d_i min_{s in supp(Bu_i)} x(s)/Bu_i(s)) (Hauskrecht 2000), min with the FIB."""
    rng = np.random.default_rng(S)
    n = 40
    Bu = rng.dirichlet(np.full(S, 0.3), size=n)
    Bu[rng.random(Bu.shape) < 0.6] = 0.0
    Bu[:, 0] += 1e-3
    Bu /= Bu.sum(axis=1, keepdims=True)
    c = rng.uniform(1, 2, size=S)
    Ud = np.minimum(rng.uniform(0.5, 1.0, size=n) - Bu @ c, 0.0)
    Q = np.full((2, S), 10.0)
    ptr, idx, val, inv, mask, inv_t = _points_csr(Bu)
    vb = np.zeros(n)
    for k in range(30):
        x = rng.dirichlet(np.full(S, 0.5)) * (rng.random(S) < (0.9 if k % 2 else 0.3))
        x[0] += 1e-3 if k % 3 else 0.0
        if x.sum() == 0:
            x[1] = 1.0
        sup = np.flatnonzero(x > 0).astype(np.int64)
        ratios = [min(x[s] / Bu[i, s] for s in np.flatnonzero(Bu[i] > 0)) for i in range(n)]
        want = min(float(x @ c) + min(0.0, min(Ud[i] * ratios[i] for i in range(n))), float((Q @ x).max()))
        dense = _k.upper_at(x, sup, len(sup), Q, c, ptr, idx, inv, Ud, mask, inv_t, n, -1, vb)
        csr = _k.upper_at(x, sup, len(sup), Q, c, ptr, idx, inv, Ud, mask, np.zeros((0, 0)), n, -1, vb)
        assert dense == csr
        assert abs(dense - want) <= 1e-12 * max(1.0, abs(want))


def test_sawtooth_first_state_screen_keeps_points_inside_the_support():
    """Points on blocks of consecutive states (Tag's beliefs: one robot cell, several target cells)
    whose first support state lies outside supp(x), inside it, or whose later states leave it:
    upper_at (both paths) equals the sawtooth formula, so the first-state screen drops only
    points whose ratio is 0."""
    rng = np.random.default_rng(7)
    S, n, block = 150, 60, 6
    Bu = np.zeros((n, S))
    for i in range(n):
        start = int(rng.integers(0, S - 2 * block))
        width = int(rng.integers(1, 2 * block))
        Bu[i, start:start + width] = rng.uniform(0.1, 1.0, size=width)
    Bu /= Bu.sum(axis=1, keepdims=True)
    c = rng.uniform(1, 2, size=S)
    Ud = np.minimum(rng.uniform(0.5, 1.0, size=n) - Bu @ c, 0.0)
    Q = np.full((2, S), 10.0)
    ptr, idx, val, inv, mask, inv_t = _points_csr(Bu)
    vb = np.zeros(n)
    n_inside = 0
    for k in range(40):
        i = int(rng.integers(n))
        x = np.where(Bu[i] > 0, rng.uniform(0.1, 1.0, size=S), 0.0)
        first = int(np.flatnonzero(Bu[i] > 0)[0])
        if k % 3 == 1:
            x[first] = 0.0  # first support state outside supp(x)
        elif k % 3 == 2:
            x[first + 1:first + block] = rng.uniform(0.1, 1.0, size=block - 1)  # a wider support
        if x.sum() == 0:
            x[first] = 1.0
        x /= x.sum()
        sup = np.flatnonzero(x > 0).astype(np.int64)
        inside = [set(np.flatnonzero(Bu[j] > 0)) <= set(sup) for j in range(n)]
        n_inside += sum(inside)
        ratios = [min(x[s] / Bu[j, s] for s in np.flatnonzero(Bu[j] > 0)) for j in range(n)]
        want = min(float(x @ c) + min(0.0, min(Ud[j] * ratios[j] for j in range(n))), float((Q @ x).max()))
        dense = _k.upper_at(x, sup, len(sup), Q, c, ptr, idx, inv, Ud, mask, inv_t, n, -1, vb)
        csr = _k.upper_at(x, sup, len(sup), Q, c, ptr, idx, inv, Ud, mask, np.zeros((0, 0)), n, -1, vb)
        assert dense == csr
        assert abs(dense - want) <= 1e-12 * max(1.0, abs(want))
    assert n_inside > 20  # the screen was passed as well as failed


def test_tag_trial_budget_bounds_builtin_and_pomdpx(shared_data_dir):
    """100 trials on Tag give the same bracket from tag() (dense) and TagAvoid.pomdpx (sparse
    storage): the search is deterministic and the two containers hold the same model, so a fixed
    trial budget (not a clock) must give the same vectors. The bracket is valid and the search
    moved both bounds off their starting values (blind-policy lower bound, FIB upper bound)."""
    from algos.pomdp import read_pomdpx, tag

    file_model = read_pomdpx(_data(shared_data_dir, "pomdpx/TagAvoid.pomdpx"))
    runs = [PointBasedSolver(time_limit=600.0, target_gap=0.0, max_trials=100).fit(m)
            for m in (tag(), file_model)]
    assert [s.n_trials_ for s in runs] == [100, 100]
    start = PointBasedSolver(time_limit=600.0, target_gap=0.0, max_trials=0).fit(tag())
    assert start.lower_bound_ < runs[0].lower_bound_ <= runs[0].upper_bound_ < start.upper_bound_
    assert runs[1].lower_bound_ == pytest.approx(runs[0].lower_bound_, abs=1e-9)
    assert runs[1].upper_bound_ == pytest.approx(runs[0].upper_bound_, abs=1e-9)
    assert len(runs[1].alphas_) == len(runs[0].alphas_)


def test_witness_pruning_keeps_the_best_vector_at_every_witness():
    """prune_witness keeps, at b0 and at every witness belief, the vector attaining the max, so L
    there is unchanged; the initial vectors survive."""
    rng = np.random.default_rng(1)
    S, nA = 6, 50
    AL = rng.normal(size=(nA, S))
    WB = rng.dirichlet(np.full(S, 0.5), size=nA)
    WB[:3] = 0.0  # the initial vectors have no witness
    b0 = np.full(S, 1.0 / S)
    keep = _k.prune_witness(np.ascontiguousarray(AL.T), nA, witnesses_csr(WB), b0, 3, np.zeros(nA))
    assert keep[:3].all() and 3 < keep.sum() < nA
    for w in np.vstack([WB[3:], b0]):
        assert (AL[keep] @ w).max() == (AL @ w).max()
