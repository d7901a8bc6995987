r"""The search of :class:`RECAPController` (:mod:`._recap`): growth, refinement, polish, merge,
restart candidates, the policy-graph and codebook starts and the selection among them by exact value.

Everything here is a function of the model's :class:`FSCSystem` (``ev``), the solver's alpha vectors
and the estimator's parameters; :class:`RecapSearch` holds those, the caches of one fit (the node
successors of codewords, the node values of the last polished tables, the policy graph and its
compressions) and the time budget. The estimator (:mod:`._recap`) checks the parameters, runs the
growth paths and the starts through it and sets the fitted attributes. The algorithm is described in
the docstring of :mod:`._recap`.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from ..._validation import spawn_generators
from ._codebook import (
    DISTANCES,
    _argmax_ties,
    _build_codebook_fsc,
    _default_horizon,
    _node_successors,
    _v_gamma,
    pairwise_distance,
    quantize,
    simulate_beliefs,
)
from ._fsc_eval import SPARSE_FROM
from ._polish import Polish, _table_key, _tie
from ._starts import merge_gains
from ._tools import (  # noqa: F401  (BestSoFar, _unique_rows, _quantize_decision: imported from here)
    BestSoFar,
    _growth_rank,
    _occupancy,
    _quantize_decision,
    _unique_rows,
    _weighted_kmeans,
)

_SUCC_CACHE = 2048  # codewords whose successors (and V_Gamma of them) RECAP keeps per fit
_SCREEN_SIZE = 600  # K*S from which polish trials are screened by their first-order gain (see _polish)


def _copy_tab(tab):
    """A copy of the tables ``tab`` (its arrays copied)."""
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in tab.items()}


class RecapSearch:
    """The search state of one RECAP fit on one model.

    Parameters
    ----------
    est : RECAPController
        The estimator whose parameters (``n_memory``, ``action_rule``, ``tol``, ``n_candidates``,
        ``growth_metric``, ``polish``, ``merge``, ``schedule``, ``n_traj``, ``n_restarts``) the
        search uses.
    ev : FSCSystem
        The model's system (blocks ``T[a] * Z[a, :, o]``, reward, discount, ``b0``).
    expired : callable or None, default=None
        Returns whether the time budget ran out (checked between steps); never when None.
    graph_cache : tuple or None, default=None
        The policy graph and its compressions of an earlier search on the same model and vectors
        (see ``_select_start``); updated in place of the attribute ``graph_cache``.
    record : callable or None, default=None
        Called as ``record(construction, C, tab, value, values)`` with every controller the search
        keeps (see :class:`BestSoFar`); nothing is recorded when None.
    """

    _PARAMS = ("n_memory", "action_rule", "tol", "n_candidates", "growth_metric", "polish", "merge",
               "schedule", "n_traj", "n_restarts")

    def __init__(self, est, ev, expired=None, graph_cache=None, record=None):
        for name in self._PARAMS:
            setattr(self, name, getattr(est, name))
        self._distance = est._distance  # the quantiser of ``_build``
        self.ev = ev
        self._expired = expired if expired is not None else (lambda: False)
        self.graph_cache = graph_cache
        self._record = record if record is not None else (lambda *args: None)
        self._succ_cache = self._values_cache = None

    def _system(self, pomdp):
        """The model's :class:`FSCSystem` (``pomdp`` is the model the search was made for)."""
        return self.ev

    def _build(self, pomdp, C, alphas):
        return self._build_all(pomdp, C, alphas, (self._distance,))[0]

    def _successors(self, ev, C, alphas):
        """``(P, Bn, zero, V_Gamma(Bn))`` of the codebook's node successors, each codeword's rows
        cached by its bytes (the successors of a codeword do not depend on the rest of the
        codebook: growth adds one row, refinement moves a few). The rows not cached are computed
        together, as :func:`_node_successors` and :func:`_v_gamma` on them would."""
        cache = getattr(self, "_succ_cache", None)
        if cache is None or cache[0] is not alphas or cache[1] is not ev:
            cache = self._succ_cache = (alphas, ev, {})
        store = cache[2]
        keys = [row.tobytes() for row in C]
        if len(store) + len(keys) > _SUCC_CACHE:
            store.clear()
        miss, seen = [], set()
        for i, key in enumerate(keys):
            if key not in store and key not in seen:
                seen.add(key)
                miss.append(i)
        if miss:
            P, Bn, zero = _node_successors(ev.T, ev.Z, np.ascontiguousarray(C[miss]))
            v = _v_gamma(alphas, Bn.reshape(-1, Bn.shape[-1])).reshape(P.shape)
            for j, i in enumerate(miss):
                store[keys[i]] = (P[j], Bn[j], zero[j], v[j])
        rows = [store[key] for key in keys]
        return tuple(np.stack([row[f] for row in rows]) for f in range(4))

    def _build_all(self, pomdp, C, alphas, distances):
        """``[build_codebook_fsc(pomdp, C, alphas, distance=d, action_rule=...) for d in distances]``
        (the same tables) with the node successors and ``V_Gamma`` of them computed once."""
        C = np.ascontiguousarray(np.asarray(C, dtype=float))
        K = C.shape[0]
        if self.action_rule != "lookahead" or K == 1:
            return [_build_codebook_fsc(pomdp, C, alphas, distance=d, action_rule=self.action_rule)
                    for d in distances]
        ev = self._system(pomdp)
        S = ev.n_states
        P, Bn, zero, v = self._successors(ev, C, alphas)
        A, O = P.shape[1], P.shape[2]
        flat = Bn.reshape(-1, S)
        v_flat = v.reshape(-1)
        Q = C @ ev.r + ev.discount * (P * v).sum(axis=2)
        action = _argmax_ties(Q).astype(np.int64)
        out = []
        for d in distances:
            if d == "decision":
                q = _quantize_decision(flat, v_flat, C, alphas)
                m0 = int(_quantize_decision(ev.b0[None, :], _v_gamma(alphas, ev.b0[None, :]), C, alphas)[0])
            else:
                q = quantize(flat, C, d)
                m0 = int(quantize(ev.b0[None, :], C, d)[0])
            eta_full = np.where(zero, np.arange(K)[:, None, None], q.reshape(K, A, O)).astype(np.int64)
            out.append(dict(action=action.copy(), eta=eta_full[np.arange(K), action], eta_full=eta_full,
                            m0=m0, P=P, Bn=Bn))
        return out

    def _node_values(self, pomdp, action, eta, m0):
        """Node values ``W`` and the adjoint occupancy ``y`` of the FSC (both (K, S)); those of the
        last polished tables are kept from the polish's final solve."""
        cached = getattr(self, "_values_cache", None)
        if cached is not None and cached[0] == _table_key(dict(action=action, eta=eta, m0=m0)):
            return cached[1], cached[2]
        W, y, _ = self._system(pomdp).values_and_adjoint(action, eta, int(m0))
        return W, y

    def _distortion(self, pomdp, C, alphas, action=None, rows=None):
        """:func:`decision_distortion` of the codebook's node successors (all actions, flattened
        (K*A*O, K); or those of ``action`` (K,), (K*O, K)) with ``V_Gamma`` of them from the cache;
        with ``rows`` (no ``action``), those of the nodes ``rows`` only (len(rows)*A*O, K)."""
        C = np.ascontiguousarray(np.asarray(C, dtype=float))
        ev = self._system(pomdp)
        _, Bn, _, v = self._successors(ev, C, alphas)
        if action is not None:
            rows = np.arange(len(C))
            Bn, v = Bn[rows, action], v[rows, action]
        elif rows is not None:
            Bn, v = Bn[rows], v[rows]
        S = C.shape[1]
        alpha_c = alphas[np.argmax(C @ alphas.T, axis=1)]
        return np.maximum(v.reshape(-1)[:, None] - Bn.reshape(-1, S) @ alpha_c.T, 0.0)

    def _evaluate(self, pomdp, tab):
        """Exact value of the tables: the same dense solve as :func:`evaluate_fsc` (identical
        numbers) without re-validating the model on every call, the system assembled from the
        cached blocks; from ``K * S >= SPARSE_FROM`` a sparse LU (SuperLU) solve of the same system."""
        ev = self._system(pomdp)
        action = np.asarray(tab["action"], dtype=np.int64)
        eta = np.asarray(tab["eta"], dtype=np.int64)
        K, S = len(action), ev.n_states
        if K * S >= SPARSE_FROM:
            return ev.value(action, eta, tab["m0"])
        discount = ev.discount
        R, P = ev.transition(action, eta)
        W = scipy.linalg.solve(np.eye(K * S) - discount * P, R).reshape(K, S)
        return float(ev.b0 @ W[int(tab["m0"])])

    def _candidates(self, pomdp, C, tab, alphas, discount, with_l1=True):
        """Successors of the nodes under their actions, scored (pomdp reconstruction notes §1.4 step 3)."""
        K = len(C)
        P, Bn, action = tab["P"], tab["Bn"], tab["action"]
        nu = _occupancy(P, action, tab["eta"], tab["m0"], discount)
        Pa = P[np.arange(K), action]           # (K, O)
        Ba = Bn[np.arange(K), action]          # (K, O, S)
        S = C.shape[1]
        flat = Ba.reshape(-1, S)
        nu = np.maximum(nu, 0.0) / max(nu.sum(), 1e-300) + 1e-3  # unreachable nodes keep a small weight
        w = (nu[:, None] * Pa).reshape(-1)
        l1 = pairwise_distance(flat, C).min(axis=1)
        live = (Pa.reshape(-1) > 0) & (l1 > self.tol)
        score_l1 = np.where(live, w * l1, 0.0)
        def top(score):
            order = np.argsort(-score, kind="stable")
            return [int(i) for i in order if score[i] > self.tol][: self.n_candidates]

        picked = top(score_l1)
        if self.growth_metric == "decision":
            score = np.where(live, w * self._distortion(pomdp, C, alphas, action).min(axis=1), 0.0)
            if score.max() > self.tol:
                lead = top(score)
                # optionally followed by the L1 leaders (see ``fit``: two growth paths)
                picked = lead + [i for i in picked if i not in lead] if with_l1 else lead
        return [(flat[i], divmod(i, Pa.shape[1])) for i in picked]

    def _grow(self, pomdp, C, tab, value, cand, alphas, full=True, current=None):
        """Codebook ``C + [cand]`` and its safeguarded FSC tables (pomdp reconstruction notes §1.4 steps 3-4).

        Up to three tables are solved exactly and the best kept: the quantiser tables of the new
        codebook (pomdp reconstruction notes §1.4; on large systems, ``current`` given, only on ``full`` steps, see
        ``_full_step``: between them it won 5 of 541 growth steps on hallway and tiger-grid at
        K = 17-31), and two incremental ones
        that keep the current (refined, polished) tables and give the new node its quantiser row:
        every edge the new quantiser sends to the new node redirected to it, and only the edge
        ``(k, o)`` whose successor became the codeword. The quantiser tables alone would discard
        what polish found at smaller K. When none reaches the current value the new node is left
        unreachable: the (K+1)-node controller has the current value exactly (node values do not
        depend on unreachable nodes), so it is not solved again. With ``current = (W, y)`` (the
        current tables' node values and adjoint occupancy) an incremental table is solved only when
        its first-order gain ``sum_(k, o) discount y_k . blocks[a_k, o] (W_new - W_eta[k, o])`` is
        positive (``W_new``: the new node's values with the others held), as polish screens its
        trials on large systems. [R] the incremental tables and the screen are project additions."""
        b, (k, o) = cand
        C2 = np.vstack([C, b[None, :]])
        K = len(C)
        new = self._build(pomdp, C2, alphas)
        # the current tables, the new node with its quantiser row
        eta_full = new["eta_full"].copy()
        eta_full[:K] = np.where(np.arange(eta_full.shape[1])[None, :, None] == tab["action"][:, None, None],
                                tab["eta"][:, None, :], eta_full[:K])
        base = dict(new, action=np.concatenate([tab["action"], new["action"][K:]]), m0=tab["m0"],
                    eta=np.vstack([tab["eta"], new["eta"][K:]]), eta_full=eta_full)
        rows = np.arange(K)
        to_new = new["eta_full"][rows, tab["action"]] == K  # (K, O): edges the quantiser sends to node K
        trials = [new] if full or current is None else []
        edge_sets = [to_new] if to_new.any() else []
        if not (to_new.sum() == 1 and to_new[k, o]):
            one_edge = np.zeros_like(to_new)
            one_edge[k, o] = True
            edge_sets.append(one_edge)
        if current is not None and edge_sets:
            gains = self._redirect_gains(pomdp, tab, base, current, edge_sets)
            edge_sets = [e for e, g in zip(edge_sets, gains) if g > _tie(value)]
        for edges in edge_sets:
            trial = dict(base, eta=base["eta"].copy(), eta_full=eta_full.copy())
            trial["eta"][:K][edges] = K
            trial["eta_full"][rows, tab["action"]] = trial["eta"][:K]
            trials.append(trial)
        best, near = None, -np.inf
        for trial in trials:
            v = self._evaluate(pomdp, trial)
            near = max(near, v)
            if v >= value - _tie(value) and (best is None or v > best[2] + _tie(best[2])):
                best = (C2, trial, v)
        if best is not None:
            return best
        # new node unreachable: the K-node controller's value; ``near`` (the best value the tables
        # of this codeword reached) ranks such candidates in ``_grow_path``
        return C2, dict(base, near=near), value

    def _redirect_gains(self, pomdp, tab, base, current, edge_sets):
        """First-order gains of redirecting each set of edges (boolean (K, O) masks) of the current
        tables to the new node ``K`` of ``base``: ``sum discount y_k . blocks[a_k, o] (W_K - W_n)``
        over the set, ``n = eta[k, o]``, with ``W_K`` solving the new node's rows of the grown
        system with the current node values ``W`` held (an S x S solve)."""
        ev = self._system(pomdp)
        W, y = current
        K, S = W.shape
        g, T, Zm = ev.discount, ev.T, ev.Z
        a = int(base["action"][K])
        row = base["eta"][K]

        def block(a_, o_):
            return ev.blocks[a_, o_] if ev.blocks is not None else T[a_] * Zm[a_, :, o_][None, :]

        lhs, rhs = np.eye(S), ev.r[:, a].copy()
        for o_ in range(len(row)):
            if row[o_] == K:
                lhs -= g * block(a, o_)
            else:
                rhs += g * block(a, o_) @ W[row[o_]]
        W_new = np.linalg.solve(lhs, rhs)
        out = []
        for edges in edge_sets:
            gain = 0.0
            for k_, o_ in zip(*np.nonzero(edges)):
                gain += g * float(y[k_] @ (block(int(tab["action"][k_]), int(o_)) @ (W_new - W[tab["eta"][k_, o_]])))
            out.append(gain)
        return out

    def _refine(self, pomdp, C, tab, value, alphas, rng, discount, n_refine):
        """Bregman-Lloyd refinement with exact-value acceptance (pomdp reconstruction notes §1.4 step 4)."""
        if self._expired():  # (before the simulation, the costly part on large models)
            return C, tab, value
        S = C.shape[1]
        H = _default_horizon(discount)
        B, w = simulate_beliefs(pomdp, self.n_traj, H, rng, policy=(tab["action"], tab["eta"], tab["m0"]))
        K = len(C)
        nu = _occupancy(tab["P"], tab["action"], tab["eta"], tab["m0"], discount)
        Pa = tab["P"][np.arange(K), tab["action"]]
        Ba = tab["Bn"][np.arange(K), tab["action"]].reshape(-1, S)
        wa = (np.maximum(nu, 0.0)[:, None] * Pa).reshape(-1)
        B = np.vstack([B, Ba[wa > 0]])
        w = np.concatenate([w / max(w.sum(), 1e-300), wa[wa > 0] / max(wa.sum(), 1e-300)])
        cur_C, cur_tab, cur_v = C, tab, value
        C_try = C.copy()
        prev_assign = None
        # the assignment depends on the distinct sample rows only, and V_Gamma of them not on the
        # codebook: both computed once per refinement
        Bu, inv = _unique_rows(B)
        vB = _v_gamma(alphas, Bu)
        for _ in range(n_refine):
            if self._expired():
                break
            assign = _quantize_decision(Bu, vB, C_try, alphas)[inv]
            if prev_assign is not None and np.array_equal(assign, prev_assign):
                break
            prev_assign = assign
            C_new = C_try.copy()
            for j in range(1, K):  # c_1 = b0 stays fixed
                cell = assign == j
                if cell.any() and w[cell].sum() > 0:
                    C_new[j] = (w[cell, None] * B[cell]).sum(axis=0) / w[cell].sum()
            C_new = np.clip(C_new, 0.0, None)
            C_new /= C_new.sum(axis=1, keepdims=True)
            C_try = C_new
            new = self._build(pomdp, C_try, alphas)
            v = self._evaluate(pomdp, new)
            if v >= cur_v - _tie(cur_v):
                cur_C, cur_tab, cur_v = C_try, new, v
        return cur_C, cur_tab, cur_v

    def _polish(self, pomdp, C, tab, value, alphas, n_alt=3, n_sweeps=2, rows=True, nodes=None):
        """Coordinate ascent on the FSC tables with exact-value acceptance (decision-aware
        assignment): each transition ``eta[k, o]`` may move to one of the ``n_alt`` codewords
        nearest (in d_V, L1 tie-break) to its successor belief; each node's action may change to
        another action (with that action's quantiser transitions); with ``rows``, each node's row
        may change to ``(a, argmax_n y_k . blocks[a, o] W_n per o)`` for each action ``a`` (the
        best row for the first-order gain ``y_k . delta_k``, exact when node k is not revisited).
        A change is kept only when its exact value (the product-form update of
        :meth:`RowUpdate.accept`, exact up to round-off) strictly rises, and the value returned is a
        direct solve of the final tables, so the value never drops.
        ``nodes``: the nodes visited (all when None). [R] project addition, see docs."""
        K = len(C)
        if K == 1:
            return tab, value
        S = C.shape[1]
        run = Polish(self, pomdp, tab, value, S, _SCREEN_SIZE)
        A, O = run.tab["P"].shape[1], run.tab["P"].shape[2]
        visit = range(K) if nodes is None else sorted({int(k) for k in nodes if 0 <= k < K})
        # the codewords nearest to the successors of the visited nodes only (each row on its own)
        seen = np.asarray(visit, dtype=np.int64)
        d = self._distortion(pomdp, C, alphas, rows=seen)
        l1 = pairwise_distance(run.tab["Bn"][seen].reshape(-1, S), C)
        rank = np.zeros((K, A, O, min(n_alt, K)), dtype=np.int64)
        rank[seen] = np.argsort(d + 1e-9 * l1, axis=1, kind="stable").reshape(len(seen), A, O, K)[:, :, :, :n_alt]
        for _ in range(n_sweeps):
            improved = False
            for k in visit:
                if self._expired():
                    break
                improved |= run.actions(k)
                if run.screen and rows:
                    improved |= run.rows(k)
                improved |= run.edges(k, rank[k])
            if not improved or self._expired():
                break
        return run.result()

    def _merge(self, pomdp, C, tab, alphas):
        """Best ``(K-1)``-node controller obtained from ``tab`` by merging one node into another:
        ``(C, tab, value)`` (value exact, after polish) or None when ``K <= 2``.

        Merging node ``j`` into ``i`` redirects every transition into ``j`` (and ``m0`` when it is
        ``j``) to ``i`` and drops ``j``'s rows. Its first-order gain is ``g_j . (W_i - W_j)``
        with ``g_j = b0 [m0 = j] + discount sum_{(k, o): eta[k, o] = j, k != j} Z[a_k, :, o] *
        (T[a_k]^T y_k)`` (``y``: the adjoint occupancy, ``W``: the node values); the
        ``n_candidates`` best pairs are solved exactly and the best is polished. A node-merging step
        in the spirit of bounded policy iteration's pruning (Poupart & Boutilier 2003): a grown
        ``K``-node controller often holds a redundant node whose merge keeps most of its value.
        [R] project addition, see ``merge``."""
        K = len(C)
        if K <= 2:
            return None
        ev = self._system(pomdp)
        action = np.asarray(tab["action"], dtype=np.int64)
        eta = np.asarray(tab["eta"], dtype=np.int64)
        m0 = int(tab["m0"])
        W, y = self._node_values(pomdp, action, eta, m0)
        gain = merge_gains(ev, action, eta, m0, W, y)                 # gain[j, i]
        order = np.argsort(-gain, axis=None, kind="stable")
        order = order[order // K != order % K][: self.n_candidates]  # (the diagonal is no merge)
        best = None
        for flat in order:
            j, i = divmod(int(flat), K)
            keep = np.flatnonzero(np.arange(K) != j)
            remap = np.empty(K, dtype=np.int64)
            remap[keep] = np.arange(K - 1)
            remap[j] = remap[i]
            new = dict(action=action[keep].copy(), eta=remap[eta[keep]], eta_full=remap[tab["eta_full"][keep]],
                       m0=int(remap[m0]), P=tab["P"][keep], Bn=tab["Bn"][keep])
            v = self._evaluate(pomdp, new)
            if best is None or v > best[2] + _tie(best[2]):
                best = (C[keep], new, v)
        if best is None:
            return None
        if self.polish:
            tab2, v2 = self._polish(pomdp, best[0], best[1], best[2], alphas)
            best = (best[0], tab2, v2)
        return best

    def _restart_candidates(self, pomdp, K, alphas, cache):
        """Best sample-clustering controller with at most ``K`` nodes: ``(C, tab, value)`` or None.

        The sample (``cache["sample"]``) is drawn once per fit; results are cached per K so that
        both growth paths see the same candidates. [R] project addition (see ``restart``)."""
        if K in cache:
            return cache[K]
        Bu, wu, seed = cache["sample"]
        best = None
        k = min(K, len(Bu))
        for rep in range(self.n_restarts if k >= 2 else 0):
            C = _weighted_kmeans(Bu, wu, k, np.random.default_rng(seed + rep * 4096 + K))
            C = np.clip(C, 0.0, None)
            C /= C.sum(axis=1, keepdims=True)
            b0 = cache["b0"]
            C0 = C.copy()
            j = int(np.argmin(np.abs(C0 - b0[None, :]).sum(axis=1)))
            C0[j] = b0
            C0[[0, j]] = C0[[j, 0]]  # b0 first, as in the grown codebooks
            for cb in (C0, C):
                for dist, tab in zip(DISTANCES, self._build_all(pomdp, cb, alphas, DISTANCES)):
                    v = self._evaluate(pomdp, tab)
                    if best is None or v > best[2] + _tie(best[2]):
                        best = (cb, tab, v)
        cache[K] = best
        return best

    def _objective(self, pomdp, C, tab, W, alphas, discount, b0, B=None, w=None):
        """The pomdp reconstruction notes §1.4 objective with lambda_dec = lambda_cl = lambda_0 = 1."""
        K = len(C)
        G = np.vstack([alphas, W])
        nu = _occupancy(tab["P"], tab["action"], tab["eta"], tab["m0"], discount)
        Pa = tab["P"][np.arange(K), tab["action"]]
        Ba = tab["Bn"][np.arange(K), tab["action"]]
        target = C[tab["eta"]]  # (K, O, S)
        dG = np.abs(np.einsum("kos,ns->kon", Ba - target, G)).max(axis=2)
        rho = (Pa * dG).sum(axis=1)
        closure = discount / (1 - discount) * float(nu @ rho)
        ws = (np.maximum(nu, 0.0)[:, None] * Pa).reshape(-1)
        dec = float(ws @ self._distortion(pomdp, C, alphas, tab["action"]).min(axis=1))
        init = float(np.abs(G @ (b0 - C[tab["m0"]])).max())
        return dec + closure + init

    def _local_variants(self):
        """The polish between full steps, one growth path each: of the new node and the node whose
        successor it is (``"parent"``), and of the new node and every node with an edge into it
        (``"touched"``). With ``schedule="every"`` there is no step between, so one path."""
        return ("touched",) if self.schedule == "every" else ("parent", "touched")

    def _full_step(self, K):
        """Whether growth step ``K`` gets refinement, a polish of every node, restart candidates
        and (at step K + 1) the merge candidate: every K with ``schedule="every"``; with
        ``"doubling"`` K = 1, 2, 4, 8, ... and K >= n_memory."""
        return self.schedule == "every" or K >= self.n_memory or (K & (K - 1)) == 0


    def _grow_path(self, pomdp, G, b0, rng, refine, n_refine, discount, verbose, with_l1, restarts=None,
                   local="touched", checkpoints=None):
        """One nested growth K = 1..n_memory, as a generator: it yields the best value so far once,
        before step K = n_memory (the checkpoint where ``fit`` keeps the best paths), and returns
        (C, tab, value, values, objectives, closed).

        With ``merge``, the grown (K+1)-node controller is also merged down to K nodes (``_merge``)
        as a K-node candidate, so the growth runs one step past ``n_memory`` (that step without
        restart candidates); every K's accepted controller depends only on the steps up to K + 1.
        The fits for different ``n_memory`` are not nested: the steps K >= n_memory are full steps
        (``_full_step``) and the checkpoint selection depends on n_memory.

        ``checkpoints`` (a dict, optional; only for a fit without a time budget): the path's state at
        its checkpoint is stored there under ``(with_l1, local, the rng's state at the start,
        n_memory)``, and a path of a larger ``n_memory`` with the same key starts from the stored
        state of the largest smaller ``n_memory`` instead of repeating its steps: the steps
        ``K < P`` of the paths at ``n_memory = P`` and ``2 P`` are the same computation (the same
        full steps, candidates, random numbers and restart sample), so the fit at ``2 P`` resumes
        its smaller fit's paths at step ``P`` with the same numbers."""
        key = None
        if checkpoints is not None:
            key = (bool(with_l1), local, repr(rng.bit_generator.state),
                   None if restarts is None else restarts["sample"][2])
        C = b0[None, :].copy()
        checked = False  # whether the checkpoint before the last steps was passed (see ``fit``)
        tab = self._build(pomdp, C, G)
        value = self._evaluate(pomdp, tab)
        values, objectives = [], []
        kept = (C, tab, value)  # best controller so far (growth, restart or merge candidate)
        self._record("growth", C, tab, value, ())
        closed = False
        merge = self.merge
        bar = None
        if verbose >= 1:
            from tqdm.auto import tqdm
            bar = tqdm(total=self.n_memory, desc="RECAP", leave=False)

        def settle(K):
            values.append(kept[2])
            if bar is not None:
                bar.update(1)
                bar.set_postfix(value=kept[2], K=len(kept[0]))

        if not merge:
            settle(1)
        merge = merge and self.n_memory >= 2
        last = self.n_memory + 1 if merge else self.n_memory
        first = 2
        stored = [] if key is None else [P for (k_, P) in checkpoints if k_ == key and P < self.n_memory]
        if stored:  # resume from the smaller fit's checkpoint (see above)
            first = max(stored)
            snap = checkpoints[(key, first)]
            C, tab, value, kept, closed = snap["C"].copy(), _copy_tab(snap["tab"]), snap["value"], snap["kept"], \
                snap["closed"]
            kept = (kept[0].copy(), _copy_tab(kept[1]), kept[2])
            values[:], objectives[:] = list(snap["values"]), list(snap["objectives"])
            rng.bit_generator.state = snap["rng"]
            self._values_cache = snap["values_cache"]
            if bar is not None:
                bar.update(len(values))
        for K in range(first, last + 1):
            if self._expired():  # anytime: the best controller so far (``fit`` warns)
                break
            if K == self.n_memory:
                checked = True
                if key is not None and not self._expired():
                    checkpoints[(key, K)] = dict(C=C.copy(), tab=_copy_tab(tab), value=value, closed=closed,
                                                 kept=(kept[0].copy(), _copy_tab(kept[1]), kept[2]),
                                                 values=list(values),
                                                 objectives=list(objectives), rng=rng.bit_generator.state,
                                                 values_cache=self._values_cache)
                yield kept[2]
                if self._expired():  # (the budget may have run out in the other paths meanwhile)
                    break
            extra = K > self.n_memory  # the look-ahead step: its merge is an n_memory-node candidate
            if not (extra and closed):
                W, y = self._node_values(pomdp, tab["action"], tab["eta"], tab["m0"])
            if not extra:
                objectives.append(self._objective(pomdp, C, tab, W, G, discount, b0))
            grown = False
            if not closed:
                cands = self._candidates(pomdp, C, tab, G, discount, with_l1)
                if not cands:
                    closed = True
                else:
                    C, tab, value = self._grow_step(pomdp, K, C, tab, value, cands, G, (W, y), rng, refine,
                                                    n_refine, discount, local)
                    grown = True
            if merge:
                # the (K-1)-node candidate merged from the grown K-node controller settles K - 1
                if grown and self._full_step(K - 1) and not self._expired():
                    mg = self._merge(pomdp, C, tab, G)
                    if mg is not None and mg[2] > kept[2] + _tie(kept[2]):
                        kept = mg
                        self._record("growth", *kept, values)
                settle(K - 1)
            if extra:
                break
            if grown:
                if value > kept[2] + _tie(kept[2]):
                    kept = (C, tab, value)
                    self._record("growth", *kept, values)
                if restarts is not None and self._full_step(K) and not self._expired():
                    # the restart candidate competes with the kept controller only; growth
                    # continues from the grown codebook (so it can still close early)
                    alt = self._restart_candidates(pomdp, K, G, restarts)
                    if alt is not None and alt[2] > kept[2] + _tie(kept[2]):
                        kept = alt
                        self._record("growth", *kept, values)
            if not merge:
                settle(K)
        if not checked:
            yield kept[2]
        if len(values) < self.n_memory:  # n_memory = 1 with merge: no step ran
            settle(self.n_memory)
        if bar is not None:
            bar.close()
        return kept[0], kept[1], kept[2], values, objectives, closed

    def _grow_step(self, pomdp, K, C, tab, value, cands, G, Wy, rng, refine, n_refine, discount, local):
        """Growth step ``K``: the best of the candidate successors ``cands`` added as node ``K - 1``
        (``_grow``), then refined at full steps and polished; returns ``(C, tab, value)``."""
        best = None
        full = self._full_step(K)
        current = Wy if K * C.shape[1] >= _SCREEN_SIZE else None
        for cand in cands:
            if best is not None and self._expired():
                break
            out = self._grow(pomdp, C, tab, value, cand, G, full=full, current=current)
            if best is None or _growth_rank(out) > _growth_rank(best):
                best, parent = out, cand[1][0]
        C, tab, value = best
        if refine and n_refine > 0 and full:
            C, tab, value = self._refine(pomdp, C, tab, value, G, rng, discount, n_refine)
        if self.polish and not self._expired():
            # between full steps only the new node and its parent ("parent") or every
            # node with an edge into it ("touched")
            if local == "parent":
                touched = None if full else (K - 1, parent)
            else:
                touched = None if full else np.flatnonzero((tab["eta"] == K - 1).any(axis=1) |
                                                            (np.arange(K) == K - 1))
            tab, value = self._polish(pomdp, C, tab, value, G, nodes=touched)
        return C, tab, value

    def _graph_start(self, pomdp, G, labels):
        """The policy-graph start at ``n_memory``: ``(policy_graph_size, (C, tab, value) or None)``,
        or None when the time budget ran out before the graph was built.

        The policy graph of the solver's vectors (:func:`._starts.policy_graph`) compressed
        to ``n_memory`` nodes and polished (:func:`._starts.best_compression`); the graph,
        its batch compressions and this result are kept in ``graph_cache`` (shared with the
        smaller fit), so ``RECAPController.fit`` calls this first, before the growth, and
        ``_select_start`` reuses the result: an anytime stop then has this controller (recorded
        as ``"policy_graph"``) at the cost of one compression. A compression the time budget
        cut short is not kept (the result is None)."""
        from . import _starts as st

        K = self.n_memory
        ev = self._system(pomdp)
        cache = self.graph_cache  # shared with the smaller fit (``RECAPController._smaller_fit``)
        if not (cache is not None and cache[0] is pomdp and np.array_equal(cache[1], G)
                and np.array_equal(cache[2], labels)):
            if self._expired():
                return None
            built = st.policy_graph(ev, G, labels, expired=self._expired)
            if built is None:
                return None
            cache = self.graph_cache = (pomdp, G, labels, built[0], built[1], {}, {})
        C, tab, trajectories, results = cache[3], cache[4], cache[5], cache[6]
        if K not in results:
            polish = (lambda C_, t, v_: self._polish(pomdp, C_, t, v_, G)) if self.polish else None
            out = None if self._expired() else st.best_compression(
                ev, C, tab, K, lambda t: self._evaluate(pomdp, t), polish, expired=self._expired,
                trajectories=trajectories)
            if out is None or self._expired():  # cut short: not kept (a later call may finish it)
                if out is not None:
                    self._record("policy_graph", *out, ())
                return len(C), out
            results[K] = out
            self._record("policy_graph", *out, ())
        self._values_cache = None
        return len(C), results[K]

    def _select_start(self, pomdp, G, labels, b0, rng, discount, grown):
        """The best of the grown controller and the two starts of :mod:`._starts` (the
        compressed policy graph, polished; the reachable-belief codebook, polished), by exact
        value (ties to the earlier): ``((C, tab, value), info)`` with ``info`` the ``construction``
        name, the ``start_values`` of the starts, ``policy_graph_size`` and ``n_reachable`` (the
        estimator's attributes of these names). A start the time budget cut short is left out."""
        from . import _starts as st

        K = self.n_memory
        best, name = grown, "growth"
        graph = self._graph_start(pomdp, G, labels)
        info = dict(policy_graph_size=None if graph is None else graph[0], start_values={}, n_reachable=None,
                    construction=None)
        out = None if graph is None else graph[1]
        if out is not None:
            C, tab, v = out
            info["start_values"]["policy_graph"] = v
            if v > best[2] + _tie(best[2]):
                best, name = (C, tab, v), "policy_graph"
        (crng,) = spawn_generators(rng, 1)
        if self._expired():  # the simulation of the reachable beliefs is not started either
            info["construction"] = name
            self._values_cache = None
            return best, info
        B, w = st.reachable_beliefs(pomdp, G, labels, crng, self.n_traj, _default_horizon(discount))
        info["n_reachable"] = len(B)
        cb = None if self._expired() else st.codebook_start(
            B, w, K, G, crng, lambda C_: self._build_all(pomdp, C_, G, DISTANCES),
            lambda t: self._evaluate(pomdp, t), DISTANCES, b0, expired=self._expired)
        if cb is not None:
            C, tab, v = cb
            if self.polish:
                tab, v = self._polish(pomdp, C, tab, v, G)
            info["start_values"]["codebook"] = v
            self._record("codebook", C, tab, v, ())
            if v > best[2] + _tie(best[2]):
                best, name = (C, tab, v), "codebook"
        info["construction"] = name
        self._values_cache = None
        return best, info
