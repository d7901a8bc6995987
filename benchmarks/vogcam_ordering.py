"""Fill-reducing orderings for VoGCAM's sparse Cholesky factor: fill and CPU on the NNGP precision of a fit.

Usage: ``OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/vogcam_ordering.py N_POINTS N_DUMMY
[--k 15] [--repeat 3] [--orderings nd,nd-coord,mmd,rcm]`` (``1250 8750``: about 1e4 nodes; ``12500 87500``:
about 1e5; ``--quick``: 1250 points, 8750 dummies). Uniform points on the unit square, the Voronoi
quadrature a fit builds (points plus a grid of dummies), the NNGP precision ``Q`` (``k`` neighbours,
coordinate ordering) plus the identity, as ``Q + diag(mu)``. For each ordering: the factor's structural
non-zeros and stored entries (supernodal blocks) per node, the supernodes, the process CPU seconds of the
symbolic analysis (ordering included), of one factorisation and of one selected inverse (medians over
``--repeat``), and ``log|P|`` (equal across orderings to round-off). Orderings:

* ``nd``: the factor's nested dissection (minimum-vertex-cover separators, the better of two axes);
* ``nd-coord``: the coordinate-cut nested dissection used before (separator: the nodes of one half with
  an edge into the other; the longer side cut), kept here for comparison;
* ``mmd``: SuperLU's multiple minimum degree on the pattern of ``Q`` (through ``scipy.sparse.linalg.splu``
  with ``permc_spec="MMD_AT_PLUS_A"``), an approximate-minimum-degree-type ordering;
* ``rcm``: scipy's reverse Cuthill--McKee (a bandwidth ordering, the control).
"""
import argparse
import resource
import statistics
import time
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from algos.point_process import _sparse
from algos.point_process._quadrature import build_quadrature
from algos.point_process._sparse import SparseCholesky
from algos.point_process.vogcam._nngp import NNGPStructure


def coordinate_nested_dissection(coords, indptr, indices, leaf=_sparse.ND_LEAF):
    """The previous ordering: cut at the median of the longer side, separator = the nodes of the left half
    with an edge into the right half."""
    N = len(coords)
    order, side, pos, deg = np.empty(N, dtype=np.int64), np.zeros(N, dtype=np.int8), [0], np.diff(indptr)

    def emit(sub):
        order[pos[0]:pos[0] + len(sub)] = sub
        pos[0] += len(sub)

    def rec(idx):
        if len(idx) <= leaf:
            return emit(idx[np.lexsort((coords[idx, 1], coords[idx, 0]))])
        c = coords[idx]
        ext = np.ptp(c, axis=0)
        ax = 0 if ext[0] >= ext[1] else 1
        left = c[:, ax] <= np.median(c[:, ax])
        if left.all() or not left.any():
            left = np.zeros(len(idx), dtype=bool)
            left[np.argsort(c[:, ax], kind="stable")[: len(idx) // 2]] = True
        L, R = idx[left], idx[~left]
        side[R] = 2
        d = deg[L]
        rows = np.repeat(np.arange(len(L)), d)
        offs = np.arange(d.sum()) - np.repeat(np.cumsum(d) - d, d)
        nb = indices[np.repeat(indptr[L], d) + offs]
        hit = np.zeros(len(L), dtype=bool)
        hit[rows[side[nb] == 2]] = True
        side[R] = 0
        S, L = L[hit], L[~hit]
        if len(S) == len(idx) or (len(L) == 0 and len(R) == 0):
            return emit(idx[np.lexsort((coords[idx, 1], coords[idx, 0]))])
        if len(L):
            rec(L)
        if len(R):
            rec(R)
        emit(S)

    rec(np.arange(N, dtype=np.int64))
    return order


def mmd_order(P, data):
    """SuperLU's multiple minimum degree on the pattern of ``P + P^T`` (new -> old)."""
    A = sp.csc_matrix((data, P.indices, P.indptr), shape=P.shape)
    lu = splu(A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    return np.argsort(lu.perm_c).astype(np.int64)  # SuperLU's perm_c maps old -> new


def problem(n_points, n_dummy, k):
    X = np.random.default_rng(0).uniform(size=(n_points, 2))
    U = build_quadrature(X, (0, 1, 0, 1), n_dummy=n_dummy, random_state=np.random.default_rng(0)).nodes
    st = NNGPStructure(U, nu=0.5, n_neighbors=k, ordering="coord")
    Q = st._on_pattern(st.factor(1.0, 0.05).Q)
    N = len(U)
    data = Q.data + (np.repeat(np.arange(N), np.diff(Q.indptr)) == Q.indices)
    return U, Q, data


def measure(U, Q, data, name, repeat):
    orders = {
        "nd": lambda: _sparse.fill_reducing_order(Q, U, "nd"),
        "nd-coord": lambda: coordinate_nested_dissection(U, Q.indptr.astype(np.int64), Q.indices.astype(np.int64)),
        "mmd": lambda: mmd_order(Q, data),
        "rcm": lambda: _sparse.fill_reducing_order(Q, U, "rcm"),
    }
    saved = _sparse.fill_reducing_order
    t0 = time.process_time()
    perm = orders[name]()
    _sparse.fill_reducing_order = lambda P, coords=None, method="nd": perm
    try:
        ch = SparseCholesky(Q, coords=U, ordering="nd")
    finally:
        _sparse.fill_reducing_order = saved
    t_an = time.process_time() - t0
    t_f, t_i = [], []
    for _ in range(repeat):
        t0 = time.process_time()
        ch.factor(data)
        t_f.append(time.process_time() - t0)
        t0 = time.process_time()
        ch.selected_inverse(overwrite=True)
        t_i.append(time.process_time() - t0)
    ch.factor(data)
    N = ch.N
    return [name, f"{ch.nnz_L / N:.0f}", f"{ch.n_stored / N:.0f}", f"{8 * ch.n_stored / N / 1024:.2f}",
            ch.n_supernodes, f"{t_an:.2f}", f"{statistics.median(t_f):.2f}", f"{statistics.median(t_i):.2f}",
            f"{ch.logdet():.12e}"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n_points", nargs="?", type=int, default=1250)
    ap.add_argument("n_dummy", nargs="?", type=int, default=8750)
    ap.add_argument("--k", type=int, default=15)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--orderings", default="nd,nd-coord,mmd,rcm")
    ap.add_argument("--quick", action="store_true", help="1250 points, 8750 dummies, one repeat")
    args = ap.parse_args()
    if args.quick:
        args.n_points, args.n_dummy, args.repeat = 1250, 8750, 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        U0, Q0, d0 = problem(200, 300, args.k)  # compile and load the kernels
        measure(U0, Q0, d0, "nd", 1)
        U, Q, data = problem(args.n_points, args.n_dummy, args.k)
        print(f"{len(U)} nodes, k = {args.k}, {Q.nnz / len(U):.1f} entries per row of Q\n")
        print("| ordering | nnz(L) / node | stored / node | KB / node | supernodes | analysis CPU s | factor CPU s "
              "| selected inverse CPU s | log det |\n|---|---|---|---|---|---|---|---|---|")
        for name in args.orderings.split(","):
            print("| " + " | ".join(str(x) for x in measure(U, Q, data, name, args.repeat)) + " |", flush=True)
    print(f"\npeak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2:.2f} GB")


if __name__ == "__main__":
    main()
