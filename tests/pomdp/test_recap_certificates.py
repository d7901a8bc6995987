"""RECAP's own certificates against independent computations (spec ``pomdp.md`` §2 items 5 and 7).

* ``bound_`` (fitted by ``RECAPController.fit``) holds U2 for the quantised-MDP action rule, the
  rule the spec's U2 is stated for: ``V*(b0) - V^F(b0) <= U2`` with ``V*`` replaced by the PBVI
  upper bound (so the check is conservative in the bound's favour only by the solver gap).
* The converse lower bound of any K-memory controller is respected by the fitted RECAP controller:
  ``V^F(b0) <= V*(b0) - converse(K) <= upper - converse(K)``.
* ``bound_`` reports the closure components recomputed here from the fitted tables.
"""

from hypothesis import given, note, settings, target

import theory.pomdp as th
from algos.pomdp import PBVI, RECAPController, converse_lower_bound
from tests.strategies import pomdps

TOL = 1e-6  # spec §2 item 5: actual <= bound + 1e-6 (+ the solver gap, carried by using the upper bound)
EXACT_TOL = 1e-9


def _fit(model, K, rule):
    pbvi = PBVI(n_beliefs=60, max_iter=150, tol=1e-9, random_state=0).fit(model)
    est = RECAPController(n_memory=K, action_rule=rule, n_traj=50, random_state=0).fit(model, alphas=pbvi)
    return pbvi, est


@settings(max_examples=4, deadline=None)
@given(pomdps(max_states=4))
def test_recap_bound_u2_holds_for_quantized_mdp_rule(model):
    pbvi, est = _fit(model, 4, "quantized_mdp")
    assert {"L", "rho", "rho_pi", "delta0", "U2", "trivial", "vacuous"} <= set(est.bound_)
    loss = pbvi.upper_bound_ - est.value_
    note(f"loss {loss:.6g} <= U2 {est.bound_['U2']:.6g} (trivial {est.bound_['trivial']:.6g})")
    if est.bound_["U2"] > 0:
        target(loss / est.bound_["U2"], label="loss / U2")
    assert loss <= est.bound_["U2"] + TOL
    # the components are those of the fitted tables (recomputed independently by theory.pomdp)
    cd = th.closure_distortion(model.T, model.Z, est.codebook_, est.eta_full_, action=est.action_,
                               b0=model.b0, m0=est.m0_)
    assert abs(cd["rho"] - est.bound_["rho"]) <= EXACT_TOL
    assert abs(cd["rho_pi"] - est.bound_["rho_pi"]) <= EXACT_TOL
    assert abs(cd["delta0"] - est.bound_["delta0"]) <= EXACT_TOL
    assert est.bound_["L"] == th.lipschitz_constant(model.r, model.discount)


@settings(max_examples=4, deadline=None)
@given(pomdps(max_states=4))
def test_recap_respects_the_converse(model):
    for K in (1, 3):
        pbvi, est = _fit(model, K, "lookahead")
        for form in ("depth1", "history"):
            c = converse_lower_bound(model, K, form=form, depth=2, solver=pbvi)
            note(f"K={K} {form}: converse {c.bound:.6g}, loss {pbvi.upper_bound_ - est.value_:.6g}")
            target(c.bound - (pbvi.upper_bound_ - est.value_), label=f"converse - loss, K={K}, {form}")
            assert est.value_ <= pbvi.upper_bound_ - c.bound + EXACT_TOL
        own = converse_lower_bound(model, est.n_memory_, form="history", depth=2, solver=pbvi,
                                   controller=(est.action_, est.eta_full_, est.m0_))
        assert est.value_ <= pbvi.upper_bound_ - own.bound + EXACT_TOL
