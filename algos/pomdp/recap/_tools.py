"""Small pieces of the RECAP search (:mod:`._search`): the best-so-far record of an interrupted
fit, weighted k-means, grouping of equal beliefs, the decision quantiser with the values given, the
order of growth results and the node occupancy of a controller.
"""

from __future__ import annotations

import numpy as np

from ._codebook import _nearest_with_l1_ties, pairwise_distance
from ._polish import _tie


class BestSoFar:
    """The best controller a RECAP fit has found so far, for an interrupted fit (see
    ``RECAPController.fit``): the candidates of exact value the search settles (each growth path's
    kept controller, the starts, the smaller fit's controller) are offered as they appear, and the
    one of highest value is kept (ties to the earlier). The tables' small arrays are copied, so a
    later in-place change of the search cannot alter what is kept.

    Attributes
    ----------
    best : tuple or None
        ``(C, tab, value, construction, values)``: the codebook, the tables, the exact value, the
        candidate's kind (``"growth"``, ``"policy_graph"``, ``"codebook"``, ``"smaller"``) and the
        values settled by its growth path for K = 1, 2, ... (empty for the other kinds).
    """

    def __init__(self):
        self.best = None

    def offer(self, construction, C, tab, value, values=()):
        """Keep ``(C, tab, value)`` when its exact value beats the best so far.

        Parameters
        ----------
        construction : str
            The candidate's kind.
        C : ndarray of shape (K, S)
            Its codebook.
        tab : dict
            Its tables (``action``, ``eta``, ``eta_full``, ``m0``, ``P``, ``Bn``).
        value : float
            Its exact value.
        values : sequence of float, default=()
            The values its growth path settled so far.
        """
        value = float(value)
        if self.best is not None and not value > self.best[2] + _tie(self.best[2]):
            return
        kept = dict(tab, action=np.array(tab["action"], dtype=np.int64, copy=True),
                    eta=np.array(tab["eta"], dtype=np.int64, copy=True),
                    eta_full=np.array(tab["eta_full"], dtype=np.int64, copy=True), m0=int(tab["m0"]))
        self.best = (np.array(C, dtype=float, copy=True), kept, value, str(construction), list(values))


def _weighted_kmeans(X, w, k, rng, n_iter=50):
    """Weighted k-means (Euclidean; k-means++ seeding, Lloyd steps until the assignment repeats)."""
    n = len(X)
    p = w / w.sum()
    centers = [X[rng.choice(n, p=p)]]
    d2 = ((X - centers[0]) ** 2).sum(axis=1)
    for _ in range(1, k):
        q = w * d2
        if q.sum() <= 0:
            break
        centers.append(X[rng.choice(n, p=q / q.sum())])
        d2 = np.minimum(d2, ((X - centers[-1]) ** 2).sum(axis=1))
    C = np.array(centers)
    assign = None
    for _ in range(n_iter):
        D = pairwise_distance(X, C, power=2)
        new = D.argmin(axis=1)
        if assign is not None and np.array_equal(new, assign):
            break
        assign = new
        for j in range(len(C)):
            cell = assign == j
            if cell.any():
                C[j] = (w[cell, None] * X[cell]).sum(axis=0) / w[cell].sum()
    return C


def _unique_rows(B):
    """``(U, inv)`` with ``U[inv] == B`` and the rows of ``U`` distinct, by a hash of the rows' bytes
    (integer arithmetic, so equal rows hash alike) sorted once; a hash collision falls back to
    :func:`numpy.unique`. The order of ``U`` is that of the hashes (callers use the grouping only)."""
    B = np.ascontiguousarray(B, dtype=float)
    n, S = B.shape
    if n == 0:
        return B.copy(), np.zeros(0, dtype=np.int64)
    mult = (np.arange(1, S + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)
    bits = B.view(np.uint64)
    # the bits are mixed first: beliefs such as 1/32 have all-zero low mantissa bits, which the
    # multiply alone would drop (collisions, then the np.unique fallback on every call)
    bits = bits ^ (bits >> np.uint64(29)) ^ (bits >> np.uint64(47))
    with np.errstate(over="ignore"):
        h = (bits * mult[None, :]).sum(axis=1, dtype=np.uint64)
    order = np.argsort(h, kind="stable")
    hs = h[order]
    first = np.concatenate([[True], hs[1:] != hs[:-1]])
    inv = np.empty(n, dtype=np.int64)
    inv[order] = np.cumsum(first) - 1
    U = B[order[first]]
    if not np.array_equal(U[inv], B):
        U, inv = np.unique(B, axis=0, return_inverse=True)
        inv = inv.ravel()
    return U, inv


def _quantize_decision(B, vB, C, alphas):
    """``quantize(B, C, "decision", alphas)`` with ``vB = V_Gamma(B)`` given (identical result): the
    decision distortion ``d_V(b, c_k) = V_Gamma(b) - alpha_{c_k} . b`` (clipped at 0), nearest
    codeword with the relative tie tolerance of :func:`quantize` and its L1 tie-break."""
    alpha_c = alphas[np.argmax(C @ alphas.T, axis=1)]  # (K, S), lowest index on ties
    return _nearest_with_l1_ties(np.maximum(vB[:, None] - B @ alpha_c.T, 0.0), B, C)




def _growth_rank(grown):
    """Order of ``_grow`` results: the value, then (for an unreachable new node, whose value is the
    current one) the best value its tables reached."""
    return grown[2], grown[1].get("near", np.inf)


def _occupancy(P, action, eta, m0, discount):
    """Discounted node occupancy ``nu`` of the FSC run on the codeword beliefs from ``m0``."""
    K = len(action)
    Pa = P[np.arange(K), action]  # (K, O)
    M = np.zeros((K, K))
    for o in range(Pa.shape[1]):
        np.add.at(M, (np.arange(K), eta[:, o]), Pa[:, o])
    e = np.zeros(K)
    e[m0] = 1.0
    return np.linalg.solve(np.eye(K) - discount * M.T, e)
