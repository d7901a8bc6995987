r"""Side-by-side benchmarks of :mod:`algos.fair_matching` against its anchors (existing implementations).

No public implementation of class-fair online matching exists, so the anchors are what a user
would write or reach for today:

(a) ``ThresholdEqualFilling`` (exact pour, ``fair_rule="equal_split"``) and
    ``HybridRanking(n_runs=1)`` against straightforward **pure-Python** versions of the same
    algorithms (written below: plain loops over items, a sort-based water-fill per item), on
    ``sparse_random_instance`` with 10^4 agents, 5 classes, average degree 5 and 10^4, 10^5, 10^6
    items. In full mode the pure-Python versions run the whole stream (``--quick``: the first 10^3
    items); the table reports µs/item for both and the speed ratio on the same items, and checks
    that the pure-Python TEF
    gives the same allocation (max |ΔX|) and the pure-Python HybridRanking the same matching
    (same ranks and tie keys, by the estimator's documented randomness contract).
(b) ``metrics.opt_matching_size`` (scipy Hopcroft-Karp on CSR) against
    ``networkx.bipartite.hopcroft_karp_matching`` at n = m = 10^3, 10^4 (average degree 5).
(c) ``metrics.bundle_value`` (numba Dinic) against ``scipy.optimize.linprog(method="highs")`` on
    the edge LP and against ``networkx.maximum_flow_value``, on 200 x 200 instances, capacity =
    the class bundle of a random feasible fractional allocation.
(d) ``HybridRanking`` Monte Carlo, numba kernel (``backend="numpy"``) against the torch batched
    path (``backend="torch"``, CPU) for R = 1000 runs on 1000 agents x 2000 items.

In (b) every size and in (c) every instance is one task of ``algos.experiments.run_sweep``:
sequential by default, or spread over a cluster with ``--backend dask|ray --scheduler ADDRESS``
(see docs/scaling.md). The tasks use fixed seeds, so sizes, values and quality checks are the same
wherever they run; on a cluster each time is measured on the worker that ran the task (and tasks
running side by side share its machine).

Run::

    python benchmarks/bench_fair_matching.py            # full (a few minutes on 2 cores)
    python benchmarks/bench_fair_matching.py --quick    # smoke run
    python benchmarks/bench_fair_matching.py --sections a,c --repeat 3
    python benchmarks/bench_fair_matching.py --sections b,c --backend dask --scheduler tcp://host:8786

Every time is the median of ``--repeat`` runs (default 5; 2 with ``--quick``), after an untimed
warm-up call (numba compiles on first use). Anchor timings exclude building the anchor's input
(the networkx graph, the LP matrices), which favours the anchor; ours include every conversion.
"""

from __future__ import annotations

import math
import sys

import numpy as np

try:  # run as a module (python -m benchmarks.bench_fair_matching) or as a script
    from ._common import (
        add_cluster_options,
        describe_sweep,
        environment,
        fmt_ratio,
        fmt_s,
        fmt_us,
        make_parser,
        print_table,
        selected_sections,
        sweep_options,
        timeit_median,
    )
except ImportError:  # pragma: no cover - script mode
    from _common import (
        add_cluster_options,
        describe_sweep,
        environment,
        fmt_ratio,
        fmt_s,
        fmt_us,
        make_parser,
        print_table,
        selected_sections,
        sweep_options,
        timeit_median,
    )

SECTIONS = ("a", "b", "c", "d")
SEED = 20260523
TORCH_BUDGET_S = 45.0  # section (d): stop repeating a torch measurement after this many seconds


# ============================================================================ pure-Python anchors
def _fill_common_top(levels, top, mass):
    """Sort-based water-fill of ``mass`` into buckets ``[levels[j], top]`` (one common top).

    Returns the new levels (a list). The lowest buckets rise together to the level
    :math:`W = (\\text{mass} + \\sum_{j \\le q} x_{(j)}) / q` for the first ``q`` (in sorted order)
    at which :math:`W` does not exceed the next bucket's bottom.
    """
    n = len(levels)
    room = 0.0
    for v in levels:
        room += top - v
    if mass >= room:
        return [top] * n
    xs = sorted(levels)
    s = 0.0
    w = top
    for q in range(n):
        s += xs[q]
        w = (mass + s) / (q + 1)
        if q + 1 == n or w <= xs[q + 1]:
            break
    if w > top:
        w = top
    return [v if v > w else w for v in levels]


def _fill_class_caps(caps, mass):
    """Equal split of ``mass`` over classes with room ``caps``: returns the common level ``W``
    (class ``c`` receives ``min(W, caps[c])``), or ``inf`` when every class saturates."""
    total = sum(caps)
    if mass >= total:
        return math.inf
    cs = sorted(caps)
    used = 0.0
    left = len(cs)
    for c in cs:
        if used + c * left >= mass:
            return (mass - used) / left
        used += c
        left -= 1
    return math.inf  # pragma: no cover - round-off only


def tef_pure_python(indptr, indices, agent_class, n_agents, n_classes, gamma):
    """Threshold equal-filling, ``fair_rule="equal_split"``, in plain Python (the anchor).

    Per item: the classes with a neighbour below ``gamma`` share the unit equally (a class takes
    at most the room ``sum(gamma - x_a)`` of its neighbours below ``gamma``; what it cannot take
    is split among the others); inside each class a sort-based water-fill up to ``gamma``; the rest
    is water-filled over the neighbours below 1; what is left is wasted.

    Returns ``data`` (mass on every edge, aligned with ``indices``) as a list.
    """
    indptr = indptr.tolist()
    indices = indices.tolist()
    cls = agent_class.tolist()
    x = [0.0] * n_agents
    data = [0.0] * len(indices)
    for t in range(len(indptr) - 1):
        lo, hi = indptr[t], indptr[t + 1]
        rem = 1.0
        # ---- fair phase: class-level equal split, then water-filling inside each class
        below = {}  # class -> list of edge positions of neighbours below gamma
        for e in range(lo, hi):
            a = indices[e]
            if x[a] < gamma:
                below.setdefault(cls[a], []).append(e)
        if below:
            classes = list(below)
            caps = [sum(gamma - x[indices[e]] for e in below[c]) for c in classes]
            w = _fill_class_caps(caps, rem)
            for c, cap in zip(classes, caps):
                edges = below[c]
                if w >= cap:  # class saturated: its neighbours below gamma all reach gamma
                    new = [gamma] * len(edges)
                else:
                    new = _fill_common_top([x[indices[e]] for e in edges], gamma, w)
                for e, v in zip(edges, new):
                    a = indices[e]
                    inc = v - x[a]
                    data[e] += inc
                    rem -= inc
                    x[a] = v
        # ---- efficiency phase: water-filling over neighbours below 1
        if rem > 1e-15:
            edges = [e for e in range(lo, hi) if x[indices[e]] < 1.0]
            if edges:
                new = _fill_common_top([x[indices[e]] for e in edges], 1.0, rem)
                for e, v in zip(edges, new):
                    a = indices[e]
                    data[e] += v - x[a]
                    x[a] = v
    return data


def hybrid_ranking_pure_python(indptr, indices, agent_class, n_agents, n_classes, gamma, ranks, keys):
    """HybridRanking, ``fair_rule="min_utility"``, one run, in plain Python (the anchor).

    ``ranks[a]`` is agent ``a``'s rank, ``keys[t]`` the tie-breaking key of item ``t`` (both in
    [0, 1)). Returns the matched agent of every item (or -1) as a list.
    """
    indptr = indptr.tolist()
    indices = indices.tolist()
    cls = agent_class.tolist()
    y = list(ranks)
    keys = list(keys)
    matched = [False] * n_agents
    util = [0] * n_classes
    out = []
    for t in range(len(indptr) - 1):
        best = -1
        fair = {}  # class -> its unmatched neighbour below gamma of smallest rank
        for a in indices[indptr[t]:indptr[t + 1]]:  # sorted ids: strict < keeps the lowest id
            if matched[a]:
                continue
            ya = y[a]
            if best < 0 or ya < y[best]:
                best = a
            if ya < gamma:
                c = cls[a]
                b = fair.get(c)
                if b is None or ya < y[b]:
                    fair[c] = a
        if best < 0:
            out.append(-1)
            continue
        if fair:
            low = min(util[c] for c in fair)
            cands = sorted(c for c in fair if util[c] == low)
            j = min(int(math.floor(keys[t] * len(cands))), len(cands) - 1)
            best = fair[cands[j]]
        matched[best] = True
        util[cls[best]] += 1
        out.append(best)
    return out


# ============================================================================ sections
def _section_a_size(m, n_agents, k, deg, gamma, prefix, repeat):
    """One size of section (a): the two table rows (the instance is freed on return)."""
    from algos.fair_matching import HybridRanking, ThresholdEqualFilling, sparse_random_instance

    inst = sparse_random_instance(n_agents, m, k, deg, random_state=SEED)
    P = min(prefix, m)
    pre = inst.prefix(P)
    ip, ix, ac = np.asarray(pre.indptr), np.asarray(pre.indices), np.asarray(pre.agent_class)

    # ---- ThresholdEqualFilling (exact pour, equal split)
    t_full = timeit_median(lambda: ThresholdEqualFilling(gamma=gamma).fit(inst), repeat)
    t_pre = timeit_median(lambda: ThresholdEqualFilling(gamma=gamma).fit(pre), repeat)
    t_py = timeit_median(lambda: tef_pure_python(ip, ix, ac, n_agents, k, gamma), repeat)
    ours_data = t_pre.result.allocation_.data  # aligned with the instance's indices
    diff = float(np.max(np.abs(ours_data - np.asarray(t_py.result)))) if ours_data.size else 0.0
    row_tef = [
        f"{m:.0e}".replace("+0", ""), fmt_s(t_full.median), fmt_us(t_full.median, m), f"{P:.0e}".replace("+0", ""),
        fmt_s(t_py.median), fmt_us(t_py.median, P), fmt_us(t_pre.median, P),
        fmt_ratio(t_py.median, t_pre.median), f"max abs dX = {diff:.1e}",
    ]

    # ---- HybridRanking, one run
    def hr():
        return HybridRanking(gamma=gamma, n_runs=1, backend="numpy", random_state=SEED).fit(inst)

    def hr_pre():
        return HybridRanking(gamma=gamma, n_runs=1, backend="numpy", random_state=SEED).fit(pre)

    h_full = timeit_median(hr, repeat)
    h_pre = timeit_median(hr_pre, repeat)
    # the estimator's randomness contract: ranks_ = rng.random((R, n)) first, then the tie keys
    # of the items as rng.random((items, R)) in arrival order (whatever the chunking)
    rng = np.random.default_rng(SEED)
    ranks = rng.random((1, n_agents))[0]
    keys = rng.random((P, 1))[:, 0]
    h_py = timeit_median(
        lambda: hybrid_ranking_pure_python(ip, ix, ac, n_agents, k, gamma, ranks.tolist(), keys.tolist()),
        repeat)
    ours_match = h_pre.result.match_
    same = np.array_equal(ours_match, np.asarray(h_py.result))
    agree = float(np.mean(ours_match == np.asarray(h_py.result))) if P else 1.0
    row_hr = [
        f"{m:.0e}".replace("+0", ""), fmt_s(h_full.median), fmt_us(h_full.median, m), f"{P:.0e}".replace("+0", ""),
        fmt_s(h_py.median), fmt_us(h_py.median, P), fmt_us(h_pre.median, P),
        fmt_ratio(h_py.median, h_pre.median),
        ("identical matching" if same else f"matching differs ({agree:.4f} agree)")
        + f", USW {int(np.sum(h_full.result.usw_runs_))}",
    ]
    return row_tef, row_hr


def section_a(quick, repeat):
    from algos.fair_matching import HybridRanking, ThresholdEqualFilling, sparse_random_instance

    n_agents, k, deg, gamma = (10**3, 5, 5.0, 0.5) if quick else (10**4, 5, 5.0, 0.5)
    sizes = (10**3, 10**4) if quick else (10**4, 10**5, 10**6)
    prefix = 10**3 if quick else 10**6  # full mode: the anchor runs the whole stream too
    # warm up the numba kernels (compilation is cached on disk, loading still costs)
    warm = sparse_random_instance(50, 50, k, deg, random_state=0)
    ThresholdEqualFilling(gamma=gamma).fit(warm)
    HybridRanking(gamma=gamma, n_runs=1, backend="numpy", random_state=0).fit(warm)

    rows_tef, rows_hr = [], []
    for m in sizes:
        row_tef, row_hr = _section_a_size(m, n_agents, k, deg, gamma, prefix, repeat)
        rows_tef.append(row_tef)
        rows_hr.append(row_hr)

    headers = ["items m", "ours (median s, all m)", "ours µs/item (all m)", "prefix P",
               "anchor (median s, P)", "anchor µs/item (P)", "ours µs/item (P)",
               "ratio anchor/ours (P)", "quality check (P)"]
    common = [
        f"sparse_random_instance: {n_agents} agents, {k} classes, average degree {deg:g}, gamma = {gamma}, "
        f"seed {SEED}.",
        "The anchor is timed on the first P items only; the ratio compares µs/item on that same prefix "
        "(the per-item cost changes along the stream as agents fill up, so 'ours, all m' is the "
        "steady-state figure).",
    ]
    print_table("(a1) ThresholdEqualFilling (exact pour, equal_split) vs a pure-Python loop", headers, rows_tef,
                common + ["quality: max |ΔX| between the two allocations on the prefix (same edges)."])
    print_table("(a2) HybridRanking(n_runs=1, min_utility) vs a pure-Python loop", headers, rows_hr,
                common + ["quality: same ranks and tie keys fed to the pure-Python loop; the matchings "
                          "must be identical. USW = matching size of ours on all m items."])


def _nx_bipartite(inst):
    import networkx as nx

    G = nx.Graph()
    n = inst.n_agents
    G.add_nodes_from(range(n))
    G.add_nodes_from(range(n, n + inst.n_items))
    item_of = np.repeat(np.arange(inst.n_items), np.diff(inst.indptr))
    G.add_edges_from(zip(inst.indices.tolist(), (n + item_of).tolist()))
    return G


def b_cell(n, repeat, random_state=None):
    """One size of section (b): time ``opt_matching_size`` and networkx Hopcroft-Karp at n = m = ``n``.

    The instance is ``sparse_random_instance(n, n, 2, 5.0, random_state=SEED)``, the same wherever the
    cell runs; ``random_state`` (the stream ``run_sweep`` hands every task) is not used. Returns the
    edge count, both matching sizes and the median times ``ours_s`` / ``anchor_s``.
    """
    import networkx as nx

    from algos.fair_matching import sparse_random_instance
    from algos.fair_matching.metrics import opt_matching_size

    inst = sparse_random_instance(n, n, 2, 5.0, random_state=SEED)
    G = _nx_bipartite(inst)
    top = range(n)
    opt_matching_size(inst)  # warm-up
    ours = timeit_median(lambda: opt_matching_size(inst), repeat)
    anc = timeit_median(lambda: nx.bipartite.hopcroft_karp_matching(G, top_nodes=top), repeat)
    return {"edges": int(inst.n_edges), "ours_size": int(ours.result), "nx_size": len(anc.result) // 2,
            "ours_s": ours.median, "anchor_s": anc.median}


def _sweep(cell, grid, repeat, sweep):
    """Run ``cell(**point, repeat=repeat)`` over ``grid`` with :func:`algos.experiments.run_sweep`."""
    import functools

    from algos.experiments import run_sweep

    return run_sweep(functools.partial(cell, repeat=repeat), grid, random_state=SEED,
                     **(sweep or {"backend": "sequential"}))


def section_b_records(sizes, repeat, sweep=None):
    """The records of section (b), one :func:`b_cell` task per size (``sweep``: where they run)."""
    return _sweep(b_cell, [{"n": n} for n in sizes], repeat, sweep)


def section_b(quick, repeat, sweep=None):
    sizes = (10**3,) if quick else (10**3, 10**4)
    rows = []
    for r in section_b_records(sizes, repeat, sweep):
        n, size, nx_size = r["n"], r["ours_size"], r["nx_size"]
        check = f"sizes {size} / {nx_size} " + ("equal" if size == nx_size else "DIFFER")
        rows.append([f"n = m = {n:.0e}".replace("+0", ""), f"{r['edges']}", fmt_s(r["ours_s"]),
                     fmt_s(r["anchor_s"]), fmt_ratio(r["anchor_s"], r["ours_s"]), check])
    print_table(
        "(b) opt_matching_size vs networkx.bipartite.hopcroft_karp_matching",
        ["size", "edges", "ours (median s)", "anchor (median s)", "ratio anchor/ours", "quality check"],
        rows,
        ["sparse_random_instance, average degree 5. Ours: scipy.sparse.csgraph.maximum_bipartite_matching "
         "on the CSR biadjacency (conversion included). Anchor: on a prebuilt networkx graph."],
    )


def _random_allocation(inst, rng):
    """A random feasible fractional allocation (data aligned with ``inst.indices``): random edge
    weights, each item scaled to a random total in [0.5, 1], then agents over 1 scaled down."""
    w = rng.random(inst.n_edges)
    item_of = np.repeat(np.arange(inst.n_items), np.diff(inst.indptr))
    col = np.bincount(item_of, weights=w, minlength=inst.n_items)
    target = rng.uniform(0.5, 1.0, size=inst.n_items)
    w = w * (target / np.where(col > 0, col, 1.0))[item_of]
    row = np.bincount(inst.indices, weights=w, minlength=inst.n_agents)
    w = w / np.maximum(row, 1.0)[inst.indices]
    return w, item_of


def _edge_lp(inst, class_i, cap, item_of):
    """The edge LP of u_i(c): max sum f_e, agent rows <= 1, item rows <= c[t], f >= 0."""
    import scipy.sparse as sp

    sel = np.flatnonzero(np.asarray(inst.agent_class)[inst.indices] == class_i)
    a, t = np.asarray(inst.indices)[sel], item_of[sel]
    ne = sel.shape[0]
    ar = np.arange(ne)
    A = sp.vstack([sp.csr_array((np.ones(ne), (a, ar)), shape=(inst.n_agents, ne)),
                   sp.csr_array((np.ones(ne), (t, ar)), shape=(inst.n_items, ne))]).tocsr()
    b = np.concatenate([np.ones(inst.n_agents), cap])
    return -np.ones(ne), A, b


def _flow_graph(inst, class_i, cap, item_of):
    import networkx as nx

    G = nx.DiGraph()
    n = inst.n_agents
    cls = np.asarray(inst.agent_class)
    for a in np.flatnonzero(cls == class_i).tolist():
        G.add_edge("s", a, capacity=1.0)
    for a, t in zip(inst.indices.tolist(), item_of.tolist()):
        if cls[a] == class_i and cap[t] > 0:
            G.add_edge(a, n + t)  # no capacity attribute: infinite
    for t in np.flatnonzero(cap > 0).tolist():
        G.add_edge(n + t, "z", capacity=float(cap[t]))
    G.add_node("s")
    G.add_node("z")
    return G


C_CLASSES = 3


def _c_instance(case, n):
    """``(label, instance)`` of case ``case`` (0 or 1) of section (c), built from ``SEED``."""
    from algos.fair_matching import random_instance, sparse_random_instance

    if case == 0:
        return f"{n}x{n}, deg 5", sparse_random_instance(n, n, C_CLASSES, 5.0, random_state=SEED)
    if case == 1:
        return f"{n}x{n}, p = 0.2", random_instance(n, n, C_CLASSES, p=0.2, random_state=SEED)
    raise ValueError(f"'case' must be 0 or 1; got {case!r}.")


def c_cell(case, n, repeat, random_state=None):
    """One case of section (c): ``bundle_value`` against linprog and networkx max-flow on all pairs.

    The allocation of case ``case`` is drawn from ``numpy.random.default_rng(SEED)`` after the draws
    of the cases before it (their instances are rebuilt and their allocations drawn, then dropped):
    one stream shared in case order, as when the cases ran one after the other, but each cell
    rebuilds its own position in it, so it gives the same numbers wherever and in whatever order the
    cells run. ``random_state`` (the stream ``run_sweep`` hands every task) is not used. Returns the
    label, edge count, the values of the three methods per ordered pair (i, j) and the median times
    of all pairs ``ours_s`` / ``lp_s`` / ``nx_s``.
    """
    import networkx as nx
    from scipy.optimize import linprog

    from algos.fair_matching.metrics import bundle_value

    k = C_CLASSES
    rng = np.random.default_rng(SEED)
    for earlier in range(case):  # advance the shared stream past the earlier cases' draws
        _random_allocation(_c_instance(earlier, n)[1], rng)
    label, inst = _c_instance(case, n)
    w, item_of = _random_allocation(inst, rng)
    cls_e = np.asarray(inst.agent_class)[inst.indices]
    pairs = [(i, j) for i in range(k) for j in range(k) if i != j]
    caps = {j: np.bincount(item_of, weights=np.where(cls_e == j, w, 0.0), minlength=inst.n_items)
            for j in range(k)}
    lps = {(i, j): _edge_lp(inst, i, caps[j], item_of) for i, j in pairs}
    graphs = {(i, j): _flow_graph(inst, i, caps[j], item_of) for i, j in pairs}
    bundle_value(inst, 0, caps[1])  # warm-up

    ours = timeit_median(lambda: [bundle_value(inst, i, caps[j]) for i, j in pairs], repeat)

    def lp_all():
        out = []
        for p in pairs:
            c, A, b = lps[p]
            res = linprog(c, A_ub=A, b_ub=b, bounds=(0, None), method="highs")
            out.append(-res.fun)
        return out

    lp = timeit_median(lp_all, repeat)
    mf = timeit_median(lambda: [nx.maximum_flow_value(graphs[p], "s", "z") for p in pairs], repeat)
    return {"label": label, "edges": int(inst.n_edges), "pairs": len(pairs),
            "ours": [float(v) for v in ours.result], "lp": [float(v) for v in lp.result],
            "nx": [float(v) for v in mf.result],
            "ours_s": ours.median, "lp_s": lp.median, "nx_s": mf.median}


def section_c_records(n, repeat, cases=(0, 1), sweep=None):
    """The records of section (c), one :func:`c_cell` task per case (``sweep``: where they run)."""
    return _sweep(c_cell, [{"case": c, "n": n} for c in cases], repeat, sweep)


def section_c(quick, repeat, sweep=None):
    n = 100 if quick else 200
    k = C_CLASSES
    rows = []
    for r in section_c_records(n, repeat, sweep=sweep):
        v_ours, v_lp, v_nx = (np.asarray(r[key], dtype=float) for key in ("ours", "lp", "nx"))
        d_lp, d_nx = float(np.max(np.abs(v_ours - v_lp))), float(np.max(np.abs(v_ours - v_nx)))
        ok = "equal" if max(d_lp, d_nx) <= 1e-7 else "DIFFER"
        per = r["pairs"]
        ours_s, lp_s, nx_s = r["ours_s"], r["lp_s"], r["nx_s"]
        rows.append([r["label"], f"{r['edges']}", fmt_s(ours_s / per), fmt_s(lp_s / per),
                     fmt_ratio(lp_s, ours_s), fmt_s(nx_s / per), fmt_ratio(nx_s, ours_s),
                     f"{ok}: max abs diff LP {d_lp:.1e}, nx {d_nx:.1e} (values "
                     f"{v_ours.min():.2f}..{v_ours.max():.2f})"])
    print_table(
        "(c) bundle_value (numba Dinic) vs linprog(highs) edge LP and networkx.maximum_flow_value",
        ["size", "edges", "ours (median s/call)", "linprog (median s/call)", "ratio linprog/ours",
         "nx maxflow (median s/call)", "ratio nx/ours", "quality check (tol 1e-7)"],
        rows,
        [f"{k} classes; every ordered pair (i, j), i != j, is one call: u_i(c_j) with c_j the class-j bundle of a "
         "random feasible fractional allocation. Times are per call (median over repeats of all "
         f"{k * (k - 1)} pairs).",
         "Anchors are timed on prebuilt inputs (LP matrices, networkx DiGraph); ours builds its network "
         "inside the call."],
    )


def section_d(quick, repeat):
    from algos.fair_matching import HybridRanking, sparse_random_instance

    try:
        import torch
    except ImportError:
        print("### (d) HybridRanking Monte Carlo: numba vs torch\n\nskipped: torch is not installed "
              "(pip install 'algos-theory[gpu]').\n")
        return
    R, n, m = (100, 200, 400) if quick else (1000, 1000, 2000)
    k, gamma = 5, 0.5
    inst = sparse_random_instance(n, m, k, 5.0, random_state=SEED)
    warm = sparse_random_instance(20, 20, k, 3.0, random_state=0)
    HybridRanking(gamma=gamma, n_runs=R, backend="numpy", random_state=0).fit(warm)  # compiles the prange kernel
    HybridRanking(gamma=gamma, n_runs=R, backend="torch", device="cpu", random_state=0).fit(warm)

    def run(backend):
        kw = {"device": "cpu"} if backend == "torch" else {}
        return HybridRanking(gamma=gamma, n_runs=R, backend=backend, random_state=SEED, **kw).fit(inst)

    ours = timeit_median(lambda: run("numpy"), repeat)
    usw = ours.result.usw_runs_
    rows = []
    default_threads = torch.get_num_threads()
    thread_counts = [default_threads] + ([1] if default_threads > 1 else [])
    try:
        for th in thread_counts:
            torch.set_num_threads(th)
            # the multi-threaded torch path can be very slow on a busy machine: cap its time
            anc = timeit_median(lambda: run("torch"), repeat, budget_s=TORCH_BUDGET_S)
            same = np.array_equal(ours.result.matches_, anc.result.matches_)
            check = ("identical matches" if same else "matches DIFFER") + \
                f", mean USW {usw.mean():.1f} ± {usw.std(ddof=1) / np.sqrt(R):.2f}"
            runs = "" if len(anc.times) == repeat else f" ({len(anc.times)} runs: time budget)"
            rows.append([f"R = {R}, {n} agents x {m} items", fmt_s(ours.median), f"{th}", fmt_s(anc.median) + runs,
                         fmt_ratio(anc.median, ours.median), check])
    finally:
        torch.set_num_threads(default_threads)
    import numba

    print_table(
        "(d) HybridRanking Monte Carlo: numba kernel (backend='numpy') vs torch batched (backend='torch', CPU)",
        ["size", "ours numba (median s)", "torch threads", "torch CPU (median s)", "ratio torch/numba",
         "quality check"],
        rows,
        [f"sparse_random_instance, {k} classes, average degree 5, gamma = {gamma}, min_utility; numba runs "
         f"the R runs in {numba.get_num_threads()} threads (prange); torch {torch.__version__}.",
         "The torch path advances all runs together, one item at a time (~25 small tensor ops per item), so "
         "on CPU it is bound by per-op dispatch (and by intra-op thread synchronisation on a busy machine); "
         "it is meant for CUDA with many runs. Mean USW: mean matching size over the R runs ± SE."],
    )


def main(argv=None):
    parser = add_cluster_options(make_parser(__doc__.split("\n\n")[0], SECTIONS))
    args = parser.parse_args(argv)
    repeat = args.repeat or (2 if args.quick else 5)
    chosen = selected_sections(args, SECTIONS)
    sweep = sweep_options(args)
    import networkx  # noqa: F401  (imported for the environment line)
    import numba  # noqa: F401
    import scipy  # noqa: F401

    import algos.fair_matching  # noqa: F401

    print(f"# bench_fair_matching ({'quick' if args.quick else 'full'}; median of {repeat} runs)\n")
    print(environment() + "\n")
    if sweep["backend"] != "sequential" and {"b", "c"} & set(chosen):
        print(f"sections (b), (c): every size / case is one task, {describe_sweep(sweep)}\n")
    for s in chosen:
        if s in ("b", "c"):
            {"b": section_b, "c": section_c}[s](args.quick, repeat, sweep=sweep)
        else:
            {"a": section_a, "d": section_d}[s](args.quick, repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
