"""Independent checks of three pomdp quantities whose values no other test pins down.

* :func:`theory.pomdp.decision_distortion` against a brute-force evaluation of its definition
  :math:`d_V(b, c) = \\max_{\\alpha\\in\\Gamma}\\alpha\\cdot b - \\alpha_c\\cdot b`, with
  :math:`\\alpha_c` the first maximiser at :math:`c`, written with plain loops.
* :func:`algos.pomdp.fib_upper_bound` against the fixed point of the fast-informed-bound operator
  (Hauskrecht 2000), iterated here to machine precision; with observations that reveal the state
  that fixed point is the MDP's Q-function, obtained here by exact policy iteration.
* :func:`theory.pomdp.closure_bound` on instances where U1, U3 and U2 hold with equality (the
  closed forms are derived in the docstrings), so the bound can be neither loosened nor tightened
  without a test noticing.
"""

import itertools

import numpy as np
import pytest

import theory.pomdp as th
from algos.pomdp import POMDP, evaluate_fsc, fib_upper_bound

RTOL = 1e-9  # exact statements, float64 round-off of a few dozen operations on O(1/(1-g)) numbers


def _random_pomdp(seed, S, A, O, discount, reveal=False):
    rng = np.random.default_rng(seed)
    T = rng.dirichlet(np.full(S, 0.5), size=(A, S))
    if reveal:  # the observation is the next state
        Z = np.broadcast_to(np.eye(S), (A, S, S)).copy()
    else:
        Z = rng.dirichlet(np.full(O, 0.5), size=(A, S))
    r = rng.uniform(-1.0, 1.0, size=(S, A))
    return POMDP(T, Z, r, discount)


# ---------------------------------------------------------------------------- decision distortion

def _brute_distortion(B, C, G):
    out = np.zeros((len(B), len(C)))
    for i, b in enumerate(B):
        vb = max(sum(a_s * b_s for a_s, b_s in zip(alpha, b)) for alpha in G)
        for j, c in enumerate(C):
            best, best_k = -np.inf, None
            for k, alpha in enumerate(G):
                v = sum(a_s * c_s for a_s, c_s in zip(alpha, c))
                if v > best:  # strict: the lowest index wins a tie
                    best, best_k = v, k
            out[i, j] = vb - sum(a_s * b_s for a_s, b_s in zip(G[best_k], b))
    return out


@pytest.mark.parametrize("seed, S, n_alpha", [(0, 2, 3), (1, 3, 5), (2, 4, 7), (3, 5, 4)])
def test_decision_distortion_matches_its_definition(seed, S, n_alpha):
    rng = np.random.default_rng(seed)
    # each plan is good in one state (so several plans are optimal somewhere), plus noise
    G = rng.uniform(-1.0, 1.0, size=(n_alpha, S)) + 4.0 * np.eye(S)[np.arange(n_alpha) % S]
    B = rng.dirichlet(np.ones(S), size=9)
    C = np.vstack([np.eye(S), rng.dirichlet(np.ones(S), size=4)])
    got = th.decision_distortion(B, C, G)
    want = _brute_distortion(B, C, G)
    assert got.shape == (9, len(C))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert want.max() > 0.5  # the instances do separate decisions: a uniform factor would show
    # b = c and beliefs sharing c's plan cost nothing
    np.testing.assert_allclose(np.diag(th.decision_distortion(C, C, G)), 0.0, atol=1e-12)


def test_decision_distortion_hand_example():
    """Two plans on two states: alpha_0 = (2, -1), alpha_1 = (0, 1). At c = e_1 plan 1 is optimal;
    at b = (0.8, 0.2) V(b) = max(1.4, 0.2) = 1.4 and plan 1 gives 0.2: distortion 1.2."""
    G = [[2.0, -1.0], [0.0, 1.0]]
    d = th.decision_distortion([[0.8, 0.2], [0.1, 0.9]], [[0.0, 1.0], [1.0, 0.0]], G)
    # row 2: V((0.1, 0.9)) = max(-0.7, 0.9) = 0.9; plan 1 gives 0.9 (0), plan 0 gives -0.7 (1.6)
    np.testing.assert_allclose(d, [[1.2, 0.0], [0.0, 1.6]], rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------- fast informed bound

def _fib_operator(Q, T, Z, r, g):
    """Q'[a, s] = r[s, a] + g sum_o max_a' sum_s' T[a, s, s'] Z[a, s', o] Q[a', s'] (loops)."""
    A, S, _ = T.shape
    O = Z.shape[2]
    out = np.empty((A, S))
    for a, s in itertools.product(range(A), range(S)):
        tot = 0.0
        for o in range(O):
            tot += max(sum(T[a, s, t] * Z[a, t, o] * Q[b, t] for t in range(S)) for b in range(A))
        out[a, s] = r[s, a] + g * tot
    return out


def _fib_fixed_point(m, n_iter):
    T, Z, r, g = m.T, m.Z, m.r, m.discount
    Q = np.full((m.n_actions, m.n_states), r.max() / (1 - g))
    for _ in range(n_iter):
        Q = _fib_operator(Q, T, Z, r, g)
    return Q


@pytest.mark.parametrize("seed, S, A, O", [(0, 3, 2, 2), (1, 4, 3, 2), (2, 2, 2, 3)])
def test_fib_reaches_the_fixed_point_of_its_operator(seed, S, A, O):
    m = _random_pomdp(seed, S, A, O, 0.9)
    Q, n_iter = fib_upper_bound(m)
    # the FIB operator is a 0.9-contraction: 400 sweeps from a start within 2/(1-g) = 20 of the fixed
    # point leave 20 * 0.9**400 ~ 1e-17
    Qstar = _fib_fixed_point(m, 400)
    residual = np.abs(_fib_operator(Q, m.T, m.Z, m.r, m.discount) - Q).max()
    assert residual <= 1e-8, residual
    np.testing.assert_allclose(Q, Qstar, rtol=0, atol=1e-8)
    assert n_iter > 1


def test_fib_with_revealing_observations_is_the_mdp_q_function():
    """When the observation is the next state, the FIB fixed point is Q_MDP; policy iteration
    (exact linear solves) gives it independently."""
    m = _random_pomdp(5, 4, 3, 4, 0.95, reveal=True)
    T, r, g = m.T, m.r, m.discount
    S = m.n_states
    pi = np.zeros(S, dtype=int)
    for _ in range(100):
        P = T[pi, np.arange(S)]                               # (S, S)
        V = np.linalg.solve(np.eye(S) - g * P, r[np.arange(S), pi])
        Qmdp = r.T + g * np.einsum("ast,t->as", T, V)          # (A, S)
        new = Qmdp.argmax(axis=0)
        if np.array_equal(new, pi):
            break
        pi = new
    Q, _ = fib_upper_bound(m)
    np.testing.assert_allclose(Q, Qmdp, rtol=0, atol=1e-8)


# ---------------------------------------------------------------------------- closure bounds

def test_u1_u3_attained_with_the_alpha_lipschitz_constant():
    """Chain s0 (reward -1) -> s1 (absorbing, reward +1), one action, codebook {e_s0}.

    V*(e0) = -1 + g/(1-g), V*(e1) = 1/(1-g): the value is the linear function alpha* = W_0 =
    (-1 + g/(1-g), 1/(1-g)) of span 2, so L_Gamma = 1 over Gamma u {W_0}. The one-state quantised
    MDP has V_C = V_C^pi = -1/(1-g); rho = rho_pi = ||e1 - e0||_1 = 2. Hence
    |V*(c_0) - V_C(0)| = |c_0.W_0 - V_C^pi(0)| = 2g/(1-g) = g L_Gamma rho/(1-g): U1 and U3 are
    equalities (the Bellman error of V* in M_C is g (V*(e1) - V*(e0)) = 2g = g L_Gamma rho at the
    only state, so the contraction step is an equality too)."""
    for g in (0.2, 0.5, 0.9):
        T = np.array([[[0.0, 1.0], [0.0, 1.0]]])
        Z = np.ones((1, 2, 1))
        r = np.array([[-1.0], [1.0]])
        m = POMDP(T, Z, r, g, b0=[1.0, 0.0])
        C = np.array([[1.0, 0.0]])
        action = np.array([0])
        eta = np.zeros((1, 1, 1), dtype=np.int64)
        alpha_star = np.array([-1.0 + g / (1 - g), 1.0 / (1 - g)])
        _, W = evaluate_fsc(m, action, eta[:, 0, :], 0, return_values=True)
        np.testing.assert_allclose(W[0], alpha_star, rtol=1e-12)
        cd = th.closure_distortion(T, Z, C, eta, action=action, b0=m.b0, m0=0)
        assert cd["rho"] == pytest.approx(2.0, rel=1e-12) and cd["rho_pi"] == pytest.approx(2.0, rel=1e-12)
        L = th.alpha_lipschitz_constant(np.vstack([alpha_star, W[0]]))
        assert L == pytest.approx(1.0, rel=1e-12)
        U = th.closure_bound(L, cd["rho"], cd["rho_pi"], cd["delta0"], g)
        vc = vcpi = -1.0 / (1 - g)
        e1 = abs(float(C[0] @ alpha_star) - vc)
        e3 = abs(float(C[0] @ W[0]) - vcpi)
        for gap, key in ((e1, "U1"), (e3, "U3")):
            assert gap == pytest.approx(2 * g / (1 - g), rel=1e-12)
            assert gap <= U[key] * (1 + RTOL), (g, key, gap, U[key])
            assert gap >= U[key] * (1 - RTOL), (g, key, gap, U[key])


@pytest.mark.parametrize("g, eps", [(0.5, 0.1), (0.9, 0.25), (0.3, 0.05)])
def test_u2_attained_by_a_tie_at_the_codeword(g, eps):
    """Two absorbing states, no information; action 0 pays +1 in s0 and -1 in s1, action 1 the
    reverse. V*(b) = |b(s0) - b(s1)|/(1-g) (the belief never moves, so a constant action is optimal).

    Codebook {c = (1/2, 1/2)}: both actions earn 0 there, so the quantised MDP is indifferent and
    action 1 is optimal in M_C, as U2 requires; c is its own successor (rho = 0). From
    b0 = (1/2 + eps, 1/2 - eps) the FSC plays action 1 forever: V^F(b0) = -2 eps/(1-g), while
    V*(b0) = 2 eps/(1-g). Loss 4 eps/(1-g) = 2 L delta0 with L = 1/(1-g), delta0 = 2 eps: U2 is an
    equality (both Lipschitz steps at b0 are attained, one by V*, one by the node value)."""
    T = np.broadcast_to(np.eye(2), (2, 2, 2)).copy()
    Z = np.ones((2, 2, 1))
    r = np.array([[1.0, -1.0], [-1.0, 1.0]])
    b0 = np.array([0.5 + eps, 0.5 - eps])
    m = POMDP(T, Z, r, g, b0=b0)
    C = np.array([[0.5, 0.5]])
    action = np.array([1])
    eta = np.zeros((1, 2, 1), dtype=np.int64)
    assert np.allclose(C @ r, 0.0)  # the tie in M_C: action 1 is optimal there
    vstar = abs(b0[0] - b0[1]) / (1 - g)
    vf = evaluate_fsc(m, action, eta[:, 1, :], 0)
    assert vf == pytest.approx(-2 * eps / (1 - g), rel=1e-12)
    loss = vstar - vf
    cd = th.closure_distortion(T, Z, C, eta, action=action, b0=b0, m0=0)
    assert cd["rho"] == pytest.approx(0.0, abs=1e-15)
    assert cd["delta0"] == pytest.approx(2 * eps, rel=1e-12)
    L = th.lipschitz_constant(r, g)
    assert L == pytest.approx(1.0 / (1 - g), rel=1e-12)
    U = th.closure_bound(L, cd["rho"], cd["rho_pi"], cd["delta0"], g)
    assert loss == pytest.approx(4 * eps / (1 - g), rel=1e-12)
    assert loss <= U["U2"] * (1 + RTOL), (loss, U["U2"])
    assert loss >= U["U2"] * (1 - RTOL), (loss, U["U2"])
