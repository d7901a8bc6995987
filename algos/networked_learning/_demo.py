"""The networked_learning section of ``algos demo``: topology matters (suppressor), depth helps at
rate 1/D on the hard instance (with KRR's bound), and a shared sketch cuts communication by m/k at
a cost governed by k, on any design (where row subsampling fails on a high-leverage one)."""

from __future__ import annotations

import numpy as np

from .._io import atomic_savefig
from .._report import Check, DemoSection
from ._data import make_krr_hard3, make_leverage_design, make_suppressor
from ._estimator import NetworkedDAGRegressor
from ._graphs import cyclic_allocation, make_path, make_star
from ._population import excess_risk, population_fit, zero_message_agents

THEORY = "docs/networked_learning.md, Theory -> function -> test"
POPULATION = "docs/networked_learning.md, Population statements and samples"


def _suppressor_checks(m=100_000, seed=0):
    """Population engine (the exact numbers of docs/networked_learning.md, Population statements and
    samples) next to the estimator on ``m`` noiseless samples.

    The two 0.5 values are properties of the population idealisation only (the ``x2`` agent's message
    is exactly zero there); the estimator on samples recovers ``x2`` from its tiny nonzero coefficient
    and reaches the benchmark (see ``zero_message_agents``)."""
    model = make_suppressor()
    X, y = model.sample(m, random_state=seed)
    cases = {
        "star hub": (make_star(2), {0: [0], 1: [1], 2: []}, 2, 0.5),
        "path x1 -> x2": (make_path(2), {0: [0], 1: [1]}, 1, 0.0),
        "path x2 -> x1": (make_path(2), {0: [1], 1: [0]}, 1, 0.5),
        "path x2 -> x1 -> x2": (make_path(3), {0: [1], 1: [0], 2: [1]}, 2, 0.0),
    }
    checks, rows = [], []
    for name, (G, feats, out, expected) in cases.items():
        betas = population_fit(G, feats, model.Sigma, model.b)
        e = excess_risk(betas[out], model.Sigma, model.beta_star)
        zero = [v for v in zero_message_agents(G, feats, model.Sigma, model.b) if G.out_degree(v) > 0]
        est = NetworkedDAGRegressor(graph=G, feature_sets=feats, fit_intercept=False).fit(X, y)
        e_emp = excess_risk(est.coef_, model.Sigma, model.beta_star)
        # population value reached by the estimator only where no message vanishes in the population
        emp_target = expected if not zero else 0.0
        rows.append(f"| {name} | {e:.6f} | {expected} | {e_emp:.2e} | {'yes' if zero else 'no'} |")
        checks.append(Check(f"suppressor, {name}, population engine: excess = {expected} (|diff|)",
                            abs(e - expected), 1e-9, relation="<=", source=f"suppressor instance; {POPULATION} [V]",
                            kind="sanity"))
        checks.append(Check(f"suppressor, {name}, estimator on m = {m} samples: excess = {emp_target} (|diff|)",
                            abs(e_emp - emp_target), 0.01, relation="<=", kind="sanity",
                            source=f"suppressor instance on samples; {POPULATION}"
                            + (" (the population value does not carry over)" if emp_target != expected else "")))
    return checks, rows


def _depth_curve(depths):
    from theory.networked_learning import krr_path_bound

    out = []  # (D, e_D, bound, e_1): e_1 is the trivial bound (errors never increase along a path, T0)
    for D in depths:
        model = make_krr_hard3(D)
        G = make_path(D)
        feats = cyclic_allocation(list(range(D)), 3)
        betas = population_fit(G, feats, model.Sigma, model.b)
        e1 = excess_risk(betas[0], model.Sigma, model.beta_star)
        eD = excess_risk(betas[D - 1], model.Sigma, model.beta_star)
        A = float(np.abs(model.beta_star).sum())
        B = float(np.sqrt(np.max(np.diag(model.Sigma))))
        out.append((D, eD, krr_path_bound(e1, A, B, 3, D), e1))
    return out


def _sketch_vs_subsample(m, ks, reps, seed):
    """Excess risk of the output agent vs k on the leverage design: sketch vs row subsampling."""
    d = 6
    model = make_leverage_design(d, 0.01)
    G = make_path(2 * d)
    feats = cyclic_allocation(list(range(2 * d)), d)
    res = {"sketch": [], "subsample": []}
    for k in ks:
        for proto in res:
            errs = []
            for r in range(reps):
                X, y = model.sample(m, random_state=seed + r)
                est = NetworkedDAGRegressor(graph=G, feature_sets=feats, protocol=proto, k=k, fit_intercept=False,
                                            random_state=seed + 100 + r).fit(X, y)
                errs.append(excess_risk(est.coef_, model.Sigma, model.beta_star))
            res[proto].append(float(np.median(errs)))
    X, y = model.sample(m, random_state=seed)
    full = NetworkedDAGRegressor(graph=G, feature_sets=feats, protocol="full", fit_intercept=False).fit(X, y)
    return res, excess_risk(full.coef_, model.Sigma, model.beta_star), G.number_of_edges()


def _figure(path, depth_rows, ks, sk, full_excess):
    import matplotlib.pyplot as plt
    from matplotlib.ticker import LogFormatterSciNotation, LogLocator, NullFormatter, NullLocator

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    D = np.array([r[0] for r in depth_rows])
    ax1.loglog(D, [r[1] for r in depth_rows], "C0o-", label="excess risk $e_D$ (population)")
    ax1.loglog(D, [r[2] for r in depth_rows], "C3--", label="KRR bound (explicit constant)")
    ax1.loglog(D, 0.0116 / D, "k:", label="0.0116 / D")
    ax1.set_xlabel("depth D (cyclic path, 3 features)")
    ax1.set_ylabel("excess risk")
    ax1.set_title("Depth on the hard instance")
    ax1.legend(fontsize=8)
    ax2.loglog(ks, sk["sketch"], "C0o-", label="shared Gaussian sketch")
    ax2.loglog(ks, sk["subsample"], "C1s-", label="shared row subsample")
    ax2.axhline(full_excess, color="k", lw=0.8, label="full messages (k = m)")
    # ticks at the k values only (plain numbers, no minor labels: those overlapped) and at 1, 2, 5 x 10^j
    ax2.set_xticks(ks, [str(k) for k in ks])
    ax2.xaxis.set_minor_formatter(NullFormatter())
    ax2.xaxis.set_minor_locator(NullLocator())
    ax2.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax2.yaxis.set_major_formatter(LogFormatterSciNotation(labelOnlyBase=False))
    ax2.yaxis.set_minor_formatter(NullFormatter())
    ax2.set_xlabel("floats per edge k")
    ax2.set_ylabel("excess risk of the output agent")
    ax2.set_title("Compression vs subsampling, high-leverage design")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    atomic_savefig(fig, path, dpi=110)
    plt.close(fig)


def run_demo(out_dir, quick=False, random_state=0):
    """Build the networked_learning section of the demo report (figure written to ``out_dir``)."""
    seed = int(random_state)
    checks, sup_rows = _suppressor_checks(20_000 if quick else 100_000, seed)
    depths = [10, 30, 100, 300] if quick else [10, 30, 100, 300, 1000]
    depth_rows = _depth_curve(depths)
    for D, eD, bound, e1 in depth_rows:
        checks.append(Check(f"hard instance (population), depth {D}: e_D <= KRR bound", eD, bound, relation="<=",
                            source=f"Kearns, Roth & Ryu 2026, path bound; {THEORY} T1 [C/R]", kind="theorem",
                            trivial=e1))
    slope = float(np.polyfit(np.log([r[0] for r in depth_rows]), np.log([r[1] for r in depth_rows]), 1)[0])
    checks.append(Check("log-log slope of e_D in D on the depth-tuned instance (band [-1.1, -0.9])", slope, -0.9,
                        relation="<=", source=f"Bateni et al. 2026, Theta(1/D) rate; {THEORY} T2 [C]", kind="target",
                        trivial=None))
    checks.append(Check("same slope, lower end", slope, -1.1, relation=">=",
                        source=f"Bateni et al. 2026, Theta(1/D) rate; {THEORY} T2 [C]", kind="target", trivial=None))
    m = 4000 if quick else 20000
    ks = [50, 100, 200, 400] if quick else [50, 100, 200, 400, 800]
    sk, full_excess, n_edges = _sketch_vs_subsample(m, ks, 3 if quick else 5, seed)
    # the subsample fails when its k rows miss the ~q m rare rows: probability (1 - q)^k = 0.61 at
    # k = 50, so at the smallest k the median subsample run is a miss; at large k both are alike
    checks.append(Check(f"leverage design, k = {ks[0]}: sketch excess / subsample excess (median)",
                        sk["sketch"][0] / sk["subsample"][0], 0.5, relation="<=",
                        source=f"target abstract (sketch vs row subsampling); consequence of {THEORY} T8 [R]",
                        kind="target", trivial=None))
    fig = "networked_learning_depth_and_sketch.png"
    _figure(out_dir / fig, depth_rows, ks, sk, full_excess)
    depth_table = ["| D | e_D | e_D * D | KRR bound |", "|---|---|---|---|"]
    depth_table += [f"| {D} | {eD:.3e} | {eD * D:.4f} | {b:.3e} |" for D, eD, b, _ in depth_rows]
    k_table = ["| k | sketch | subsample | floats sent (sketch) |", "|---|---|---|---|"]
    k_table += [f"| {k} | {a:.3e} | {b:.3e} | {k * n_edges} |" for k, a, b in zip(ks, sk["sketch"], sk["subsample"])]
    m_sup = 20_000 if quick else 100_000
    body = f"""
Agents on a DAG each see some features plus their parents' predictions and fit least squares in
topological order (Kearns, Roth & Ryu 2026). In the population, order and depth matter
(suppressor: x2 is uncorrelated with y, yet lets a later agent remove the noise in x1). The 0.5
values are a property of the population idealisation only: there the agent that sees x2 alone
predicts exactly 0, so its message is empty; on samples its coefficient is tiny but nonzero, its
message still carries the direction x2, and the estimator reaches the benchmark on every topology
(noiseless labels, {m_sup} samples):

| topology | population excess | population value (expected) | estimator excess | a message vanishes in the population |
|---|---|---|---|---|
{chr(10).join(sup_rows)}

On the depth-tuned hard instance (population engine) the excess decays like 1/D
(e_D * D ~ 0.0116), below KRR's explicit bound. That bound is reported as vacuous here: it exceeds
e_1, and e_D <= e_1 holds on every path anyway (errors never increase along an edge, T0); what
the instance shows is the 1/D rate, not the bound's level:

{chr(10).join(depth_table)}

Shared-sketch protocol: every edge carries k floats instead of m = {m}. On a design where one
feature is nonzero on only 1 % of the rows, a shared row subsample of k rows misses all of them
with probability 0.99^k (0.61 at k = 50) and the output agent then cannot learn that feature; the
oblivious sketch always sees them. Once k is large enough to catch the rare rows, subsampling is
as good (a sketch is statistically no better than k rows; its advantage is obliviousness). Median
excess risk of the output agent; full messages: {full_excess:.3e}:

{chr(10).join(k_table)}
"""
    return DemoSection(module="networked_learning", title="Networked learning on DAGs", body=body,
                       checks=checks, figures=[fig])

