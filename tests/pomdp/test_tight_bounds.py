"""Closure bounds U1/U2/U3 and the depth-1 converse on instances built so that each is nearly
attained, through the theory functions and through what the library reports (``bound_``, the
converse); patching a theory function must change the reported number.

Instances (all numbers in closed form, derived in the docstrings of the builders):

* ``chain``: one action, s0 (reward -1) -> s1 (absorbing, reward +1), codebook {e_s0}. Every
  step of the U1/U3 proof is an equality except the last contraction, so the gaps equal
  ``(1 - discount)`` times the bounds.
* ``fork``: s0 -> H (+1 forever) or Lo (-1 forever); codebook {e_s0, e_Lo} with the tie of the
  L1 quantiser broken towards Lo, so the quantised MDP is indifferent and plays "go Lo": the loss
  is ``(1 - discount) / 2`` times U2.
* ``guess``: look at a uniformly hidden one of n boxes (perfect observation), then guess; a
  K-memory controller can tell apart at most K outcomes. The depth-1 converse
  ``min(discount (n - K) / n, discount - 1 / n)`` is within 15 % of the loss of the best
  2-memory controller (guess at once) for n = 8 and exact for K = 1.
"""

import numpy as np
import pytest

import theory.pomdp as th
from algos.pomdp import POMDP, PointBasedSolver, RECAPController, converse_lower_bound, evaluate_fsc

RTOL = 1e-9   # exact statements; float64 round-off of a few dozen operations on O(1/(1-g)^2) numbers
ATOL = 1e-9
G_CHAIN = 0.2  # a small discount makes (1 - discount), the slack of the contraction step, small
TIGHT_U13 = 0.75  # the chain attains (1 - 0.2) = 0.8 of U1 and U3
TIGHT_U2 = 0.35   # the fork attains (1 - 0.2) / 2 = 0.4 of U2
TIGHT_CONVERSE = 0.8  # the guessing game attains 0.864 (K = 2) and 1.0 (K = 1) of the loss


def chain(g=G_CHAIN):
    """V*(e0) = -1 + g/(1-g); the 1-node codebook {e0} has V_C = -1/(1-g), rho = rho_pi = 2, so
    |V* - V_C| = 2g/(1-g) while U1 = U3 = g L rho/(1-g) = 2g/(1-g)^2 (L = 1/(1-g))."""
    T = np.array([[[0.0, 1.0], [0.0, 1.0]]])
    Z = np.ones((1, 2, 1))
    r = np.array([[-1.0], [1.0]])
    return POMDP(T, Z, r, g, b0=[1.0, 0.0])


def fork(g=G_CHAIN):
    """States (s0, H, Lo), actions (go-H, go-Lo), one observation. V*(b0) = g/(1-g); the FSC that
    plays go-Lo has V^F(b0) = -g/(1-g): loss 2g/(1-g) against U2 = 2 g L rho/(1-g) = 4g/(1-g)^2."""
    T = np.zeros((2, 3, 3))
    T[0, 0, 1] = T[1, 0, 2] = 1.0
    T[:, 1, 1] = T[:, 2, 2] = 1.0
    Z = np.ones((2, 3, 1))
    r = np.array([[0.0, 0.0], [1.0, 1.0], [-1.0, -1.0]])
    return POMDP(T, Z, r, g, b0=[1.0, 0.0, 0.0])


def guess(n=8, g=0.95):
    """States p1_s (box s, before looking), p2_s (after looking), z (done); actions look,
    guess_0..guess_{n-1}; observations o_0..o_{n-1}, none. look: p1_s -> p2_s showing o_s,
    p2_s -> z; guess_j: -> z with reward 1 if j = s. V*(b0) = g."""
    S, A, O = 2 * n + 1, n + 1, n + 1
    z = 2 * n
    T = np.zeros((A, S, S))
    Z = np.zeros((A, S, O))
    Z[:, :, n] = 1.0
    r = np.zeros((S, A))
    for s in range(n):
        T[0, s, n + s] = 1.0
        T[0, n + s, z] = 1.0
        T[1:, s, z] = T[1:, n + s, z] = 1.0
        Z[0, n + s] = 0.0
        Z[0, n + s, s] = 1.0
        r[s, 1 + s] = r[n + s, 1 + s] = 1.0
    T[:, z, z] = 1.0
    b0 = np.zeros(S)
    b0[:n] = 1.0 / n
    return POMDP(T, Z, r, g, b0=b0)


def _vc(model, C, action, eta_full):
    """Value of the quantised MDP M_C (optimal, and of ``action``) by a linear solve / iteration."""
    K = len(C)
    A = model.n_actions
    Pk = np.zeros((K, A, K))
    for a in range(A):
        P, _ = th.bayes_successors(model.T, model.Z, C, a)
        for k in range(K):
            for o in range(P.shape[1]):
                Pk[k, a, eta_full[k, a, o]] += P[k, o]
    R = C @ model.r
    g = model.discount
    V = np.zeros(K)
    for _ in range(2000):
        V = (R + g * Pk @ V).max(axis=1)
    Ppi = Pk[np.arange(K), action]
    Vpi = np.linalg.solve(np.eye(K) - g * Ppi, R[np.arange(K), action])
    return V, Vpi


def _closure(model, C, action, eta_full, m0=0):
    cd = th.closure_distortion(model.T, model.Z, C, eta_full, action=action, b0=model.b0, m0=m0)
    L = th.lipschitz_constant(model.r, model.discount)
    return th.closure_bound(L, cd["rho"], cd["rho_pi"], cd["delta0"], model.discount)


def test_u1_u3_nearly_attained_on_chain():
    m = chain()
    g = m.discount
    C = np.array([[1.0, 0.0]])
    action = np.array([0])
    eta_full = np.zeros((1, 1, 1), dtype=np.int64)
    U = _closure(m, C, action, eta_full)
    vstar = -1.0 + g / (1.0 - g)                       # exact: one action, deterministic chain
    VC, VCpi = _vc(m, C, action, eta_full)
    e1 = abs(vstar - VC[0])
    _, W = evaluate_fsc(m, action, eta_full[:, 0, :], 0, return_values=True)
    e3 = abs(float(C[0] @ W[0]) - VCpi[0])
    for gap, key in ((e1, "U1"), (e3, "U3")):
        assert gap <= U[key] * (1 + RTOL) + ATOL, (key, gap, U[key])
        assert gap >= TIGHT_U13 * U[key], (key, gap, U[key])
    # the library reports the same certificate for its K = 1 controller (codebook {b0} = {e0})
    est = RECAPController(n_memory=1, random_state=0, restart=False).fit(m)
    assert e1 <= est.bound_["U1"] * (1 + RTOL) + ATOL and e1 >= TIGHT_U13 * est.bound_["U1"]
    assert e3 <= est.bound_["U3"] * (1 + RTOL) + ATOL and e3 >= TIGHT_U13 * est.bound_["U3"]
    assert est.bound_["trivial"] == pytest.approx(2.0 / (1.0 - g), rel=1e-12)
    assert est.bound_["vacuous"] == {k: est.bound_[k] >= est.bound_["trivial"] for k in ("U1", "U2", "U3")}
    assert not est.bound_["vacuous"]["U1"]


def test_u2_nearly_attained_on_fork():
    m = fork()
    g = m.discount
    C = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    action = np.array([1, 1])                           # go-Lo: optimal in M_C (a tie there)
    eta_full = np.ones((2, 2, 1), dtype=np.int64)       # go-H's successor e_H tied in L1: sent to Lo
    VC, VCpi = _vc(m, C, action, eta_full)
    assert VCpi[0] == pytest.approx(VC[0], abs=1e-12)  # pi is optimal in M_C, as U2 requires
    U = _closure(m, C, action, eta_full)
    loss = g / (1 - g) - evaluate_fsc(m, action, eta_full[:, 1, :], 0)
    assert loss == pytest.approx(2 * g / (1 - g), rel=1e-12)
    assert loss <= U["U2"] * (1 + RTOL) + ATOL
    assert loss >= TIGHT_U2 * U["U2"], (loss, U["U2"])


@pytest.mark.parametrize("K", [1, 2])
def test_converse_depth1_nearly_attained_on_guessing_game(K):
    m = guess()
    n, g = 8, m.discount
    sol = PointBasedSolver(time_limit=20.0, target_gap=1e-7).fit(m)
    assert sol.lower_bound_ == pytest.approx(g, abs=1e-6)
    c = converse_lower_bound(m, K, solver=sol)
    # the best K-memory controller for K <= 2 guesses at once: value 1/n (two nodes cannot use a look)
    action = np.array([1] * K)
    eta = np.zeros((K, m.n_observations), dtype=np.int64)
    loss = sol.upper_bound_ - evaluate_fsc(m, action, eta, 0)
    expected = min(g * (n - K) / n, g - 1.0 / n)
    assert c.bound == pytest.approx(expected, abs=1e-5)
    assert c.bound <= loss * (1 + RTOL) + ATOL
    assert c.bound >= TIGHT_CONVERSE * loss, (c.bound, loss)


def test_reported_numbers_follow_the_theory_functions(monkeypatch):
    """bound_ and the converse are computed by theory.pomdp: patching it changes them."""
    m = chain()
    base = RECAPController(n_memory=1, random_state=0, restart=False).fit(m).bound_
    orig_cb = th.closure_bound
    monkeypatch.setattr(th, "closure_bound", lambda *a: {k: 3.0 * v for k, v in orig_cb(*a).items()})
    patched = RECAPController(n_memory=1, random_state=0, restart=False).fit(m).bound_
    for k in ("U1", "U2", "U3"):
        assert patched[k] == pytest.approx(3.0 * base[k], rel=1e-12)
    g = guess()
    sol = PointBasedSolver(time_limit=20.0, target_gap=1e-7).fit(g)
    c0 = converse_lower_bound(g, 2, solver=sol).bound
    orig = th.converse_depth1
    monkeypatch.setattr(th, "converse_depth1", lambda *a: 0.5 * orig(*a))
    assert converse_lower_bound(g, 2, solver=sol).bound == pytest.approx(0.5 * c0, rel=1e-12)


def test_converse_falls_back_instead_of_raising():
    from algos.pomdp.recap._converse import ConverseFallbackWarning

    m = guess()
    sol = PointBasedSolver(time_limit=20.0, target_gap=1e-7).fit(m)
    with pytest.warns(ConverseFallbackWarning, match="max_partitions"):
        c = converse_lower_bound(m, 3, solver=sol, max_partitions=10)
    exact = converse_lower_bound(m, 3, solver=sol)
    assert 0.0 <= c.bound <= exact.bound + 1e-6   # the Blahut-Arimoto certificate is below D_K


def test_theory_bad_input():
    with pytest.raises(ValueError, match="'p' must be a probability vector"):
        th.rate_distortion_lower_bound([0.7, 0.7], [[0.0, 1.0], [1.0, 0.0]], 0.5)
    with pytest.raises(ValueError, match="'p'"):
        th.rate_distortion_lower_bound([1.5, -0.5], [[0.0, 1.0], [1.0, 0.0]], 0.5)
    with pytest.raises(TypeError, match="'n_actions'"):
        th.check_fsc([0], [[0]], 2.5, 1)
    with pytest.raises(TypeError, match="'n_observations'"):
        th.check_fsc([0], [[0]], 2, 1.0)
