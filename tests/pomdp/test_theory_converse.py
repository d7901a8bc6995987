"""theory.pomdp (Lipschitz constant, closure bounds U1/U2/U3, converse pieces, check_fsc) and
algos.pomdp.recap._converse (converse lower bound). Spec ``pomdp.md`` §1.1, §1.3, §2 items 2, 5, 6, 7."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from algos.pomdp._beliefs import blind_policy_values, evaluate_fsc
from algos.pomdp._builtin import tiger
from algos.pomdp.recap._converse import _value_fns, converse_lower_bound
from algos.pomdp.solvers._pbvi import PBVI
from tests.strategies import pomdps
from theory import pomdp as th


def _solve(m):
    return PBVI(n_beliefs=60, max_iter=200, tol=1e-9, random_state=0).fit(m)


_TIGER = {}


def _tiger():
    if not _TIGER:
        m = tiger()
        _TIGER["m"] = m
        _TIGER["sol"] = PBVI(n_beliefs=300, max_iter=300, tol=1e-9, random_state=0).fit(m)
    return _TIGER["m"], _TIGER["sol"]


def _nearest_l1(X, C):
    return np.abs(X[..., None, :] - C).sum(axis=-1).argmin(axis=-1)


def _codebook_fsc(m, C):
    """eta = nearest L1 codeword of the Bayes successor (all k, a, o); pi from the quantized MDP
    M_C (spec §1.2 rule (b)); returns action, eta, V_C, V_C^pi machinery."""
    T, Z, r, g = m.T, m.Z, m.r, m.discount
    K, S = C.shape
    A, O = T.shape[0], Z.shape[2]
    eta = np.zeros((K, A, O), dtype=np.int64)
    Pk = np.zeros((K, A, K))
    for a in range(A):
        P, Bn = th.bayes_successors(T, Z, C, a)
        eta[:, a, :] = _nearest_l1(Bn, C)
        zero = P <= 1e-12
        eta[:, a, :][zero] = np.nonzero(zero)[0]
        for k in range(K):
            for o in range(O):
                Pk[k, a, eta[k, a, o]] += P[k, o]
    R = C @ r                                        # (K, A)
    V = np.zeros(K)
    for _ in range(5000):
        Vn = (R + g * Pk @ V).max(axis=1)
        if np.max(np.abs(Vn - V)) < 1e-13:
            V = Vn
            break
        V = Vn
    Qc = R + g * Pk @ V
    action = np.argmax(Qc, axis=1)
    return action, eta, V, Pk, R


def _m0(m, C):
    return int(_nearest_l1(np.asarray(m.b0)[None, :], C)[0])


# ----------------------------------------------------------------------------- Lipschitz (§2.2)
@settings(max_examples=15)
@given(pomdps(with_rng=True))
def test_lipschitz_constant_brackets(case):
    m, rng = case
    sol = _solve(m)
    lower, upper = _value_fns(sol)
    L = th.lipschitz_constant(m.r, m.discount)
    LG = th.alpha_lipschitz_constant(sol.alphas_)
    assert LG <= L + 1e-9
    S = m.T.shape[1]
    B1 = rng.dirichlet(np.full(S, 0.5), size=20)
    B2 = rng.dirichlet(np.full(S, 0.5), size=20)
    dist = np.abs(B1 - B2).sum(axis=1)
    gap = upper(B2) - lower(B2)
    assert np.all(lower(B1) - upper(B2) <= L * dist + 1e-9)
    assert np.all(lower(B2) - upper(B1) <= L * dist + (upper(B1) - lower(B1)) + gap + 1e-9)
    assert np.all(np.abs(lower(B1) - lower(B2)) <= LG * dist + 1e-9)


def test_lipschitz_tiger_value_and_discount_error():
    m, _ = _tiger()
    assert th.lipschitz_constant(m.r, m.discount) == pytest.approx(110 / (2 * 0.05))
    for f in (lambda: th.lipschitz_constant(m.r, 1.0),
              lambda: th.closure_bound(1.0, 0.1, 0.1, 0.0, 1.0),
              lambda: th.converse_depth1(0.0, [0.0], [0.0], 1.2)):
        with pytest.raises(ValueError, match="discount"):
            f()
    m1 = tiger(discount=1.0)
    with pytest.raises(ValueError, match="discount"):
        converse_lower_bound(m1, 1)


# ----------------------------------------------------------------------------- U1, U2, U3 (§2.5)
@settings(max_examples=15)
@given(pomdps(with_rng=True), st.sampled_from(["corners", "corners+b0", "grid2"]))
def test_closure_bounds_hold(case, kind):
    m, rng = case
    S = m.T.shape[1]
    C = np.eye(S)
    if kind == "corners+b0":
        C = np.vstack([m.b0, C])
    elif kind == "grid2":
        pairs = [(np.eye(S)[i] + np.eye(S)[j]) / 2 for i in range(S) for j in range(i + 1, S)]
        C = np.vstack([C] + pairs)
    sol = _solve(m)
    lower, upper = _value_fns(sol)
    action, eta, VC, Pk, R = _codebook_fsc(m, C)
    m0 = _m0(m, C)
    VF, W = evaluate_fsc(m, action, eta, m0, return_values=True)
    K = C.shape[0]
    # V_C^pi: value of pi in M_C
    Ppi = Pk[np.arange(K), action]
    VCpi = np.linalg.solve(np.eye(K) - m.discount * Ppi, R[np.arange(K), action])
    L = th.lipschitz_constant(m.r, m.discount)
    cd = th.closure_distortion(m.T, m.Z, C, eta, action=action, b0=m.b0, m0=m0)
    U = th.closure_bound(L, cd["rho"], cd["rho_pi"], cd["delta0"], m.discount)
    gapC = upper(C) - lower(C)
    tol = 1e-6
    # U1 with brackets of V*(c_k)
    assert np.all(VC - upper(C) <= U["U1"] + tol)
    assert np.all(lower(C) - VC <= U["U1"] + tol)
    # U3
    cW = np.einsum("ks,ks->k", C, W)
    assert np.all(np.abs(cW - VCpi) <= U["U3"] + tol)
    # U2 (pi optimal in M_C)
    assert sol.value_ - VF <= U["U2"] + tol
    assert float(gapC.max()) >= -1e-9
    assert cd["rho_pi"] <= cd["rho"] + 1e-12


def test_tiger_closure_bounds_numbers():
    m, sol = _tiger()
    C = np.array([[0.5, 0.5], [0.85, 0.15], [0.15, 0.85], [1.0, 0.0], [0.0, 1.0]])
    action, eta, VC, Pk, R = _codebook_fsc(m, C)
    VF = evaluate_fsc(m, action, eta, 0)
    cd = th.closure_distortion(m.T, m.Z, C, eta, action=action, b0=m.b0, m0=0)
    U = th.closure_bound(th.lipschitz_constant(m.r, m.discount), cd["rho"], cd["rho_pi"], 0.0, m.discount)
    assert sol.upper_bound_ - VF <= U["U2"] + 1e-6
    assert cd["delta0"] == 0.0


# ----------------------------------------------------------------------------- converse (§1.3, §2.7)
def test_tiger_converse_k1_sound_and_monotone():
    m, sol = _tiger()
    blind = blind_policy_values(m).best_value
    prev = math.inf
    for K in range(1, 5):
        for form in ("depth1", "history"):
            c = converse_lower_bound(m, K, form=form, depth=3, solver=sol)
            assert c.value_lower <= c.value_upper + 1e-12
            if K == 1:  # the best K = 1 controller is the best blind policy
                assert blind <= c.value_upper - c.bound + 1e-9
                assert c.bound > 0
            if form == "history":
                assert c.bound <= prev + 1e-12
                prev = c.bound
    c1 = converse_lower_bound(m, 1, solver=sol)
    assert c1.bound == pytest.approx(1.9685, abs=2e-3)


@pytest.mark.slow
@settings(max_examples=3)
@given(pomdps(with_rng=True))
def test_converse_never_exceeds_actual_loss(case):
    m, rng = case
    S = m.T.shape[1]
    sol = _solve(m)
    vup = sol.upper_bound_
    # blind policies (K = 1)
    blind = blind_policy_values(m).best_value
    b1 = [converse_lower_bound(m, 1, form=f, depth=2, solver=sol).bound for f in ("depth1", "history")]
    assert max(b1) <= vup - blind + 1e-9
    # corner codebook controllers (K = S) and random controllers
    C = np.eye(S)
    action, eta, *_ = _codebook_fsc(m, C)
    m0 = _m0(m, C)
    VF = evaluate_fsc(m, action, eta, m0)
    cK = converse_lower_bound(m, S, form="history", depth=2, solver=sol)
    assert cK.bound <= vup - VF + 1e-9
    own = converse_lower_bound(m, S, form="history", depth=2, solver=sol, controller=(action, eta, m0))
    assert own.bound <= vup - VF + 1e-9
    A, O = m.T.shape[0], m.Z.shape[2]
    for K in (1, 2):
        act = rng.integers(0, A, size=K)
        et = rng.integers(0, K, size=(K, O))
        VF = evaluate_fsc(m, act, et, 0)
        cK = converse_lower_bound(m, K, form="history", depth=2, solver=sol)
        assert cK.bound <= vup - VF + 1e-9
        own = converse_lower_bound(m, K, form="history", depth=2, solver=sol, controller=(act, et, 0))
        assert own.bound <= vup - VF + 1e-9
    # monotone in K
    bs = [converse_lower_bound(m, K, form="history", depth=2, solver=sol).bound for K in (1, 2, 3)]
    assert all(x >= y - 1e-12 for x, y in zip(bs, bs[1:]))


@settings(max_examples=15)
@given(pomdps(with_rng=True), st.integers(1, 4))
def test_blahut_arimoto_below_hard_clustering_and_merge_cost(case, K):
    m, rng = case
    S = m.T.shape[1]
    G = rng.normal(size=(4, S))
    n = 6
    B = rng.dirichlet(np.full(S, 0.5), size=n)
    w = rng.dirichlet(np.ones(n))

    def vfn(X):
        return (np.atleast_2d(X) @ G.T).max(axis=1)

    D, merged, labels = th.bregman_hard_clustering(B, w, K, vfn)
    d = vfn(B)[:, None] - B @ G.T
    lo, hi = th.rate_distortion_lower_bound(w, d, math.log(K))
    assert lo <= D + 1e-9
    assert 0.0 <= D + 1e-12
    # merge cost: >= 0, and 0 iff a common optimal alpha (decision witnesses)
    for i in range(n):
        for j in range(n):
            J = th.merge_cost(B[[i, j]], [0.5, 0.5], G)
            assert J >= -1e-12
            wit = th.decision_witnesses(B[[i, j]], G, tol=1e-12)[0, 1]
            if not wit:
                assert J <= 1e-9
            elif J <= 1e-12:
                pytest.fail("witness pair with zero merge cost")
    dd = th.decision_distortion(B, B, G)
    assert np.all(dd >= 0) and np.allclose(np.diag(dd), 0.0, atol=1e-12)


def test_converse_blahut_arimoto_tiger_runs():
    m, sol = _tiger()
    c = converse_lower_bound(m, 1, method="blahut_arimoto", solver=sol)
    h = converse_lower_bound(m, 1, method="hard", solver=sol)
    assert c.bound == pytest.approx(h.bound, abs=1e-3)
    assert converse_lower_bound(m, 2, method="blahut_arimoto", solver=sol).bound <= c.bound + 1e-12


# ----------------------------------------------------------------------------- check_fsc
def test_check_fsc_flags_each_violation():
    ok = th.check_fsc([0, 1], np.zeros((2, 3, 2), dtype=int), 3, 2, m0=1)
    assert ok.ok and not ok.violations and bool(ok)
    cases = {
        "action_shape": ([], [[0]], 2, 1, None),
        "not_integer": ([0.5, 1], [[0], [1]], 2, 1, None),
        "eta_shape": ([0, 1], [[0, 1, 0], [1, 0, 0]], 2, 2, None),
        "action_range": ([0, 2], [[0, 1], [1, 0]], 2, 2, None),
        "eta_range": ([0, 1], [[0, -1], [1, 0]], 2, 2, None),
        "m0_range": ([0, 1], [[0, 1], [1, 0]], 2, 2, 2),
    }
    for kind, (a, e, A, O, m0) in cases.items():
        cert = th.check_fsc(a, e, A, O, m0=m0)
        assert not cert.ok
        assert kind in [v[0] for v in cert.violations], (kind, cert.violations)
