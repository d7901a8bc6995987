r"""Starts of RECAP's search built from what the solver knows: functions of the FSC system.

Two starts, each returning a K-node controller whose value is an exact solve:

* :func:`policy_graph` and :func:`compress`: the alpha-vector policy of the solver read as a
  finite-state controller on the beliefs reachable from ``b0`` (node = alpha vector, action = its
  label, successor on ``o`` = the vector that wins at the updated witness belief), then compressed
  to K nodes by node merges guided by first-order gains and exact evaluation. The policy graph is
  the controller of Hansen's policy iteration ("Solving POMDPs by searching in policy space",
  UAI 1998); reducing it by merging nodes whose values differ least on the reachable occupancy
  follows the controller compression of Grześ, Poupart, Yang and Hoey ("Energy efficient
  execution of POMDP policies", IEEE Trans. Cybernetics 45(11), 2015) and the node pruning of
  bounded policy iteration (Poupart and Boutilier, "Bounded finite state controllers", NIPS 2003).
* :func:`reachable_beliefs` and :func:`codebook_start`: the beliefs reached by the solver's greedy
  policy from ``b0`` (discounted occupancy weights), quantised to K codewords by weighted k-means
  followed by Lloyd steps under the decision distortion ``d_V(b, c) = V_Gamma(b) - alpha_c . b``
  (a Bregman-style clustering, Banerjee, Merugu, Dhillon and Ghosh, "Clustering with Bregman
  divergences", JMLR 2005), turned into a controller by the codebook construction.
"""

from __future__ import annotations

import numpy as np

from .. import _kernels
from ._codebook import _v_gamma, simulate_beliefs
from ._fsc_eval import SPARSE_FROM

__all__ = ["policy_graph", "compress", "best_compression", "merge_gains", "reachable_beliefs", "codebook_start"]

MAX_GRAPH_NODES = 4000  # cap on the nodes of the policy graph (the reachable part of Gamma)


def _successors(ev, C):
    """``P`` (N, A, O), ``Bn`` (N, A, O, S), ``zero`` (N, A, O) of the beliefs ``C`` under every action."""
    A = ev.T.shape[0]
    C = np.ascontiguousarray(C, dtype=float)
    out = [_kernels.belief_successors(C, np.ascontiguousarray(ev.T[a]), np.ascontiguousarray(ev.Z[a]))
           for a in range(A)]
    return (np.stack([o[0] for o in out], axis=1), np.stack([o[1] for o in out], axis=1),
            np.stack([o[2] for o in out], axis=1))


def _greedy_action(ev, alphas, labels, b):
    """The action of the policy at belief ``b``: the label of the winning vector, or (no labels) the
    one-step look-ahead on ``V_Gamma``."""
    if labels is not None:
        return int(labels[int(np.argmax(alphas @ b))])
    P, Bn, _ = _successors(ev, b[None, :])
    v = _v_gamma(alphas, Bn.reshape(-1, Bn.shape[-1])).reshape(P.shape)
    return int(np.argmax(b @ ev.r + ev.discount * (P[0] * v[0]).sum(axis=1)))


def policy_graph(ev, alphas, labels=None, max_nodes=MAX_GRAPH_NODES, expired=None):
    """The alpha-vector policy as a controller on the beliefs reachable from ``b0``.

    Breadth-first from ``b0``: a node is an alpha vector (the first belief at which it wins is its
    witness), it plays its label (``labels``; without labels the look-ahead action at the witness)
    and moves on ``o`` to the node of the vector that wins at ``tau(witness, action, o)`` (itself
    when ``P(o) = 0``). Vectors beyond ``max_nodes`` are replaced by the best vector already in
    the graph. Returns ``(C, tab)``: the witnesses (N, S) and the tables ``action``, ``eta``,
    ``eta_full`` (the winning node among the graph's vectors for every action), ``m0 = 0``, ``P``,
    ``Bn`` (as :func:`build_codebook_fsc` returns them). ``expired()`` (optional) is asked before
    each node is expanded: when it says True the construction stops and None is returned."""
    alphas = np.asarray(alphas, dtype=float)
    b0 = ev.b0
    node_of = {int(np.argmax(alphas @ b0)): 0}
    vec, wit, action = [next(iter(node_of))], [b0.copy()], [_greedy_action(ev, alphas, labels, b0)]
    eta = []
    head = 0
    while head < len(wit):
        if expired is not None and expired():
            return None
        b, a = wit[head], action[head]
        P, Bn, zero = _kernels.belief_successors(b[None, :], np.ascontiguousarray(ev.T[a]),
                                                 np.ascontiguousarray(ev.Z[a]))
        row = np.full(P.shape[1], head, dtype=np.int64)
        for o in np.flatnonzero(~zero[0]):
            bo = Bn[0, o]
            scores = alphas @ bo
            j = int(np.argmax(scores))
            if j not in node_of:
                if len(wit) >= max_nodes:
                    inside = np.array(vec)
                    row[o] = int(np.argmax(scores[inside]))
                    continue
                node_of[j] = len(wit)
                vec.append(j)
                wit.append(bo.copy())
                action.append(_greedy_action(ev, alphas, labels, bo))
            row[o] = node_of[j]
        eta.append(row)
        head += 1
    C = np.array(wit)
    action = np.array(action, dtype=np.int64)
    P, Bn, zero = _successors(ev, C)
    N, A, O, S = Bn.shape
    node_alphas = alphas[np.array(vec)]
    eta_full = np.argmax(Bn.reshape(-1, S) @ node_alphas.T, axis=1).reshape(N, A, O)
    eta_full = np.where(zero, np.arange(N)[:, None, None], eta_full).astype(np.int64)
    eta = np.array(eta, dtype=np.int64)
    eta_full[np.arange(N), action] = eta
    return C, dict(action=action, eta=eta, eta_full=eta_full, m0=0, P=P, Bn=Bn)


def merge_gains(ev, action, eta, m0, W, y):
    """First-order gains ``gain[j, i]`` of merging node ``j`` into node ``i`` (every transition into
    ``j``, and ``m0`` when it is ``j``, redirected to ``i``; ``j``'s rows dropped):
    ``g_j . (W_i - W_j)`` with ``g_j`` the discounted state occupancy entering ``j`` from the other
    nodes (``y`` the adjoint occupancy, ``W`` the node values). The diagonal is ``-inf``."""
    K = len(action)
    T, Z, discount = ev.T, ev.Z, ev.discount
    Ty = np.einsum("kst,ks->kt", T[action], y)                         # (K, S): T[a_k]^T y_k
    contrib = discount * Z[action].transpose(0, 2, 1) * Ty[:, None, :]   # (K, O, S)
    self_edge = eta == np.arange(K)[:, None]
    g = np.zeros_like(W)
    np.add.at(g, eta[~self_edge], contrib[~self_edge])
    g[int(m0)] += ev.b0
    gain = g @ W.T - (g * W).sum(axis=1)[:, None]
    np.fill_diagonal(gain, -np.inf)
    return gain


def _apply_merges(C, tab, pairs):
    """Tables after merging every ``j`` into ``i`` for ``(j, i)`` in ``pairs`` (sources distinct and
    never a target)."""
    K = len(C)
    remap = np.arange(K)
    drop = np.zeros(K, dtype=bool)
    for j, i in pairs:
        remap[j] = i
        drop[j] = True
    keep = np.flatnonzero(~drop)
    new_index = np.full(K, -1, dtype=np.int64)
    new_index[keep] = np.arange(len(keep))
    remap = new_index[remap]
    out = dict(action=tab["action"][keep].copy(), eta=remap[tab["eta"][keep]],
               eta_full=remap[tab["eta_full"][keep]], m0=int(remap[int(tab["m0"])]),
               P=tab["P"][keep], Bn=tab["Bn"][keep])
    return C[keep], out


def _values(ev, tab, W0=None, y0=None):
    """Node values and adjoint of the tables for ranking merges: Krylov solves on large systems
    (``N * S >= SPARSE_FROM``, where a sparse LU of a policy graph fills in; warm-started from
    ``W0``, ``y0`` when given), a direct solve below."""
    if len(tab["action"]) * ev.n_states >= SPARSE_FROM:
        return ev.values_and_adjoint_iterative(tab["action"], tab["eta"], int(tab["m0"]), W0=W0, y0=y0)
    W, y, _ = ev.values_and_adjoint(tab["action"], tab["eta"], int(tab["m0"]))
    return W, y


def _batch_round(ev, C, tab, m):
    """Merge the ``m`` best disjoint pairs (by :func:`merge_gains`) of ``(C, tab)`` at once."""
    N = len(C)
    W, y = _values(ev, tab)
    gain = merge_gains(ev, tab["action"], tab["eta"], tab["m0"], W, y)
    order = np.argsort(-gain, axis=None, kind="stable")
    pairs, used_src, used_dst = [], set(), set()
    for flat in order:
        j, i = divmod(int(flat), N)
        if i == j or j in used_src or j in used_dst or i in used_src:
            continue
        pairs.append((j, i))
        used_src.add(j)
        used_dst.add(i)
        if len(pairs) == m:
            break
    return _apply_merges(C, tab, pairs)


def compress(ev, C, tab, K, evaluate, n_candidates=3, batch=0.25, expired=None, trajectory=None):
    """Merge the controller ``(C, tab)`` down to ``K`` nodes; returns ``(C, tab, value)``.

    While more than ``2 K`` nodes remain, a round solves the current controller once for its node
    values and adjoint occupancy, ranks the merges by :func:`merge_gains` and merges the best
    disjoint pairs at once: a share ``batch`` of the nodes (at least one; fewer when that would
    go below ``2 K``). Below ``2 K`` nodes, the ``n_candidates`` best single merges are solved
    exactly (``evaluate(tab)``) and the best one is kept. A controller with at most ``K`` nodes is
    returned as it is. On systems of ``N S >= SPARSE_FROM`` unknowns the node values and adjoint
    that rank the merges, and the values of the candidate merges, are Krylov solves to a relative
    residual of 1e-12 (:meth:`FSCSystem.values_and_adjoint_iterative`; the sparse LU of a policy
    graph of a few hundred nodes fills in), and the returned value is ``evaluate(tab)`` (exact).
    The batch rounds do not depend on ``K`` until the last one, so with
    ``trajectory`` (a list, empty at first, kept by the caller for this ``(C, tab)`` and ``batch``)
    the controllers after each unclipped round are stored and reused by later calls with another
    ``K``. ``expired()`` (optional) is asked before each round: when it says True the compression
    stops and None is returned (the tables in between have more than ``K`` nodes)."""
    if trajectory is not None:
        if not trajectory:
            trajectory.append((C, tab))
        for Ct, tt in trajectory:  # the last stored controller with at least 2 K nodes
            if len(Ct) >= 2 * K:
                C, tab = Ct, tt
    warm = None  # (W, y) of the last single merge's controller before it, the merged node's rows dropped
    while len(C) > K:
        if expired is not None and expired():
            return None
        N = len(C)
        if N > 2 * K:
            m = max(1, int(batch * N))
            clipped = N - m < 2 * K
            if trajectory is not None and not clipped and trajectory[-1][0] is C:
                C, tab = _batch_round(ev, C, tab, m)
                trajectory.append((C, tab))
            else:
                C, tab = _batch_round(ev, C, tab, N - 2 * K if clipped else m)
            continue
        # warm-started from the previous step's solution without the merged node's rows
        W, y = _values(ev, tab, *(warm if warm is not None else (None, None)))
        gain = merge_gains(ev, tab["action"], tab["eta"], tab["m0"], W, y)
        order = np.argsort(-gain, axis=None, kind="stable")
        order = order[order // N != order % N]  # (the diagonal, -inf, is no merge: N <= 3 reaches it)
        best = None
        for flat in order[:n_candidates]:
            j, i = divmod(int(flat), N)
            Cn, tn = _apply_merges(C, tab, [(j, i)])
            # large systems: the candidates are ranked by a Krylov solve warm-started from W without
            # row j; the controller returned is solved exactly below
            v = (ev.value_iterative(tn["action"], tn["eta"], tn["m0"], W0=np.delete(W, j, axis=0))
                 if (N - 1) * ev.n_states >= SPARSE_FROM else evaluate(tn))
            if best is None or v > best[2]:
                best = (Cn, tn, v, j)
        C, tab = best[0], best[1]
        warm = (np.delete(W, best[3], axis=0), np.delete(y, best[3], axis=0))
    return C, tab, evaluate(tab)


def _copy_tables(tab):
    """A copy of the tables ``tab`` (its arrays copied: the caller may change them in place)."""
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in tab.items()}


#: compression schedules tried by :func:`best_compression`: (share of the excess merged per batch
#: round, single merges solved exactly per step, staged)
COMPRESSIONS = ((0.25, 3, False), (0.1, 8, False), (0.1, 8, True))


def best_compression(ev, C, tab, K, evaluate, polish=None, schedules=COMPRESSIONS, expired=None,
                     trajectories=None):
    """Best K-node compression of ``(C, tab)`` over ``schedules``: ``(C, tab, value)``.

    Each schedule runs :func:`compress` (staged: down to ``2 K``, then ``K`` nodes,
    with ``polish(C, tab, value) -> (tab, value)`` after each stage; otherwise straight to ``K``,
    then polished); the result of highest exact value is kept (ties to the earlier schedule).
    ``trajectories`` (a dict, optional): the batch rounds of :func:`compress` per batch share,
    shared by the schedules and by later calls on the same ``(C, tab)`` with another ``K``; it also
    keeps each compression of ``(C, tab)`` itself per (batch share, candidates, size), and its polish,
    so the staged schedule's first stage at ``K`` is the unstaged schedule at ``2 K`` (the same
    controller, polished once).
    With ``expired()`` given, the schedules stop once it says True: the best K-node result of the
    completed schedules is returned, or None when none completed."""
    if len(C) <= K:  # the graph has at most K nodes: polished as it is
        v = evaluate(tab)
        if polish is not None:
            tab, v = polish(C, tab, v)
        return C, tab, v
    trajectories = {} if trajectories is None else trajectories
    best = None
    for batch, n_cand, staged in schedules:
        if expired is not None and expired():
            break
        Cs, ts = C, tab
        for stage in ((2 * K, K) if staged else (K,)):
            if len(Cs) > stage:
                # a compression of the graph itself is kept per (batch, candidates, size): the staged
                # schedule's first stage at K is the unstaged one at 2 K (the fit at 2 K reuses it)
                key = ("compressed", batch, n_cand, stage)
                out = trajectories.get(key) if Cs is C else None
                if out is None:
                    out = compress(ev, Cs, ts, stage, evaluate, n_cand, batch, expired=expired,
                                   trajectory=trajectories.setdefault(batch, []) if Cs is C else None)
                    if out is not None and Cs is C:
                        trajectories[key] = out
                if out is None:
                    return best
                first = Cs is C
                Cs, ts, v = out
                if polish is not None:
                    # the polish of a compression of the graph itself is kept too: the staged
                    # schedule's first stage at K polishes the controller the unstaged schedule at
                    # 2 K polishes (the same numbers), and the fit at 2 K runs before its smaller fit
                    pkey = ("polished", batch, n_cand, stage)
                    done = trajectories.get(pkey) if first else None
                    if done is None:
                        ts, v = polish(Cs, ts, v)
                        if first and not (expired is not None and expired()):  # (a polish cut short: not kept)
                            trajectories[pkey] = (_copy_tables(ts), v)
                    else:
                        ts, v = _copy_tables(done[0]), done[1]
        if best is None or v > best[2]:
            best = (Cs, ts, v)
    return best


def reachable_beliefs(pomdp, alphas, labels, rng, n_traj, horizon):
    """Distinct beliefs reached by the solver's greedy policy from ``b0`` (no exploration), with
    their discounted occupancy weights summed over ``n_traj`` simulated trajectories: ``(B, w)``."""
    B, w = simulate_beliefs(pomdp, n_traj, horizon, rng, alphas=alphas if labels is not None else None,
                            actions=labels, explore=0.0 if labels is not None else 1.0)
    Bu, inv = np.unique(np.round(B, 12), axis=0, return_inverse=True)
    return Bu, np.bincount(inv.ravel(), weights=w, minlength=len(Bu))


def codebook_start(B, w, K, alphas, rng, build_all, evaluate, distances, b0, n_seeds=3, n_lloyd=10,
                   expired=None):
    """Best controller from a K-codeword quantisation of the weighted beliefs ``(B, w)``:
    ``(C, tab, value)``.

    For each of ``n_seeds`` weighted k-means clusterings, Lloyd steps under the decision distortion
    (cells by :func:`_quantize_decision`, codewords moved to their cells' weighted means), each
    codebook with and without ``b0`` in place of its nearest codeword, built with every quantiser
    of ``distances`` (``build_all(C)``) and evaluated exactly (``evaluate(tab)``). With
    ``expired()`` given, no further seed starts once it says True (None when none ran)."""
    from ._tools import _quantize_decision, _weighted_kmeans

    k = min(K, len(B))
    vB = _v_gamma(alphas, B)
    best = None

    def consider(C):
        nonlocal best
        for tab in build_all(C):
            v = evaluate(tab)
            if best is None or v > best[2]:
                best = (C, tab, v)

    for _ in range(n_seeds):
        if expired is not None and expired():
            break
        C = _weighted_kmeans(B, w, k, rng)
        C = np.clip(C, 0.0, None)
        C /= C.sum(axis=1, keepdims=True)
        for _ in range(n_lloyd):
            cell = _quantize_decision(B, vB, C, alphas)
            Cn = C.copy()
            for c in range(k):
                mask = cell == c
                if w[mask].sum() > 0:
                    Cn[c] = w[mask] @ B[mask] / w[mask].sum()
            if np.allclose(Cn, C, atol=1e-12):
                break
            C = Cn
        C0 = C.copy()
        j = int(np.argmin(np.abs(C0 - b0[None, :]).sum(axis=1)))
        C0[j] = b0
        C0[[0, j]] = C0[[j, 0]]
        consider(C0)
        consider(C)
    return best
