"""RECAP's polish: coordinate ascent on a finite-state controller's tables with exact-value acceptance.

:class:`Polish` holds one polish run's state (the tables, their exact value, the node values ``W`` and
the adjoint occupancy ``y``) and tries, node by node, the three kinds of move of
:meth:`._search.RecapSearch._polish`: another action, another whole row, another successor per
observation. Every trial is screened by its exact gain from the rank-S (Woodbury) update of the
current factors (:class:`._fsc_eval.RowUpdate`, O(S^3) per trial); a trial the update says improves
is applied in product form (``RowUpdate.accept``: no refactorisation, a fresh one every
``MAX_UPDATES`` changes) and kept when the value it gives rises by more than the tie; the value
returned is a direct solve of the final tables. Large systems (``K * S >= screen_size``) first skip
trials whose first-order gain ``y_k . delta_k`` is not positive (``delta_k``: the Bellman residual of
the changed node-k rows at the current ``W``; ``y_k . delta_k`` is the first-order term of the exact
gain, exact when node k is not revisited). [R] project addition, see the RECAP docs.
"""

from __future__ import annotations

import numpy as np

from ._fsc_eval import SPARSE_FROM, RowUpdate

_ACCEPT_RTOL = 1e-11  # value changes below this (relative) count as ties: float round-off of the solve


def _tie(value):
    return _ACCEPT_RTOL * max(1.0, abs(value))


def _table_key(tab):
    """Hashable identity of an FSC's tables (action, eta, m0)."""
    action, eta = np.asarray(tab["action"], dtype=np.int64), np.asarray(tab["eta"], dtype=np.int64)
    return action.tobytes(), eta.shape, eta.tobytes(), int(tab["m0"])


class Polish:
    """One polish run over the tables ``tab`` of exact value ``value`` (``S`` states).

    ``search`` is the :class:`._search.RecapSearch` that owns the run (its evaluator and
    value cache); ``screen_size`` the ``K * S`` from which trials are screened by their first-order
    gain.
    """

    def __init__(self, search, pomdp, tab, value, S, screen_size):
        self.search, self.pomdp = search, pomdp
        K = len(tab["action"])
        self.tab = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in tab.items()}
        self.value = value
        self.start = (self.tab, value)
        self.ev = ev = search._system(pomdp)
        self.T, self.Z, self.r, self.discount = ev.T, ev.Z, ev.r, ev.discount
        self.first_order = K * S >= screen_size
        self.upd = RowUpdate(ev) if ev.blocks is not None else None
        self.screen = self.first_order or self.upd is not None
        self.W = self.y = None
        if self.screen:
            self.W, self.y = self.refresh(self.tab)

    def refresh(self, tab):
        """``(W, y)`` of ``tab``, from a fresh factorisation."""
        upd = self.upd
        if upd is not None:
            return upd.reset(tab["action"], tab["eta"], tab["m0"])
        W, y, _ = self.ev.values_and_adjoint(tab["action"], tab["eta"], int(tab["m0"]))
        return W, y

    def attempt(self, trial, k):
        """Try ``trial`` (node ``k`` changed); True when it is kept. With the update, the trial is
        applied when its exact gain exceeds the tie and kept when the value it gives does (reverted
        otherwise); without it, a direct solve decides."""
        upd, value = self.upd, self.value
        if upd is None:
            v = self.search._evaluate(self.pomdp, trial)
            if v > value + _tie(value):
                self.tab, self.value = trial, v
                if self.screen:
                    self.W, self.y = self.refresh(trial)
                return True
            return False
        a_k, row_k = trial["action"][k], trial["eta"][k]
        if upd.delta_value(k, a_k, row_k) <= _tie(value):
            self.W, self.y = upd.W, upd.y
            return False
        v = upd.accept(k, a_k, row_k)
        if v > value + _tie(value):
            self.tab, self.value, self.W, self.y = trial, v, upd.W, upd.y
            return True
        self.W, self.y = self.refresh(self.tab)  # round-off at the tie: back to the kept tables
        return False

    def _trial(self, k, a, row=None):
        tab = self.tab
        trial = dict(tab, action=tab["action"].copy(), eta=tab["eta"].copy())
        trial["action"][k] = a
        trial["eta"][k] = tab["eta_full"][k, a] if row is None else row
        return trial

    def actions(self, k):
        """Node ``k`` takes another action (with that action's quantiser transitions)."""
        T, Z, r, discount = self.T, self.Z, self.r, self.discount
        improved = False
        for a in range(self.tab["P"].shape[1]):
            if a == self.tab["action"][k]:
                continue
            if self.first_order:
                nxt = self.tab["eta_full"][k, a]
                delta = r[:, a] + discount * T[a] @ np.einsum("to,ot->t", Z[a], self.W[nxt]) - self.W[k]
                if float(self.y[k] @ delta) <= _tie(self.value):
                    continue
            improved |= self.attempt(self._trial(k, a), k)
        return improved

    def rows(self, k):
        """Row moves: for each action the transitions maximising the node's adjoint-weighted backup
        ``y_k . (r_a + discount sum_o blocks[a, o] W[eta_o])`` (per observation over all nodes; the
        current node kept on ties)."""
        T, Z, r, discount = self.T, self.Z, self.r, self.discount
        O = self.tab["P"].shape[2]
        improved = False
        for a in range(self.tab["P"].shape[1]):
            tab, W, y = self.tab, self.W, self.y
            G = Z[a].T * (T[a].T @ y[k])[None, :]          # (O, S): blocks[a, o]^T y_k
            score = G @ W.T                                 # (O, K)
            row = np.argmax(score, axis=1)
            cur = tab["eta_full"][k, a] if a != tab["action"][k] else tab["eta"][k]
            stay = score[np.arange(O), cur] >= score.max(axis=1) - _tie(self.value)
            row = np.where(stay, cur, row)
            if a == tab["action"][k] and np.array_equal(row, tab["eta"][k]):
                continue
            if self.first_order and float(y[k] @ (r[:, a] - W[k]) + discount * score[np.arange(O), row].sum()) \
                    <= _tie(self.value):
                continue  # first-order gain y_k . delta_k of the row not positive
            improved |= self.attempt(self._trial(k, a, row), k)
        return improved

    def edges(self, k, rank_k):
        """Each transition ``eta[k, o]`` may move to one of the codewords ``rank_k[a, o]`` nearest to
        its successor belief (``a``: the node's action)."""
        T, Z, discount = self.T, self.Z, self.discount
        a = self.tab["action"][k]
        improved = False
        for o in range(self.tab["P"].shape[2]):
            if self.tab["P"][k, a, o] <= 0:
                continue
            for n in rank_k[a, o]:
                tab = self.tab
                if n == tab["eta"][k, o]:
                    continue
                if self.first_order:
                    delta = discount * T[a] @ (Z[a, :, o] * (self.W[n] - self.W[tab["eta"][k, o]]))
                    if float(self.y[k] @ delta) <= _tie(self.value):
                        continue
                trial = dict(tab, eta=tab["eta"].copy())
                trial["eta"][k, o] = n
                improved |= self.attempt(trial, k)
        return improved

    def result(self):
        """``(tab, value)``: the value a direct solve of the final tables (never below the start)."""
        tab, value, start, upd = self.tab, self.value, self.start, self.upd
        K, S = len(tab["action"]), self.r.shape[0]
        if tab is not start[0]:  # the value reported: a direct solve of the final tables
            if upd is not None and K * S >= SPARSE_FROM:  # (the same sparse solve as _evaluate)
                if upd.pending:
                    upd.reset(tab["action"], tab["eta"], tab["m0"])
                value = upd.value
                self.search._values_cache = (_table_key(tab), upd.W, upd.y)  # for _node_values
            else:
                value = self.search._evaluate(self.pomdp, tab)
            if value < start[1]:  # (never seen: the product form's round-off is ~1e-13)
                tab, value = start
        tab["eta_full"] = tab["eta_full"].copy()
        tab["eta_full"][np.arange(K), tab["action"]] = tab["eta"]
        return tab, value
