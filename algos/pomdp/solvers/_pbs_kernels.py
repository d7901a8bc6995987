r"""numba kernels of :class:`~algos.pomdp.PointBasedSolver` (HSVI2-style heuristic search).

Sparse model layout (built once per fit by :func:`sparse_model`):

* transitions as one CSR matrix per action, concatenated: row ``s`` of ``T[a]`` holds the entries
  ``Tidx[k], Tval[k]`` for ``k`` in ``Tptr[a, s] .. Tptr[a, s + 1]``;
* observations dense ``Z[a, s', o]`` (``A * S * O`` numbers, small next to ``A * S * S``);
* lower-bound vectors column-wise, ``ALT[s, i] = alpha_i(s)`` (S, capacity), so that the max over
  the vectors of ``alpha . x`` runs contiguously over the vectors for each support state of ``x``;
* upper-bound points as CSR rows of their supports (``Uptr``, ``Uidx``, ``Uval``, ``Uinv = 1/Uval``),
  their values ``Uv``, sawtooth offsets ``Ud = min(Uv - Bu . c, 0)`` and support bitmasks
  ``Umask`` (n, ceil(S / 64)) uint64 (bit ``s % 64`` of word ``s // 64``), and for models of at most
  :data:`DENSE_POINTS_MAX_S` states also column-wise inverses ``UinvT`` (S, capacity), ``1 / Bu_i(s)``
  on the support and ``inf`` off it (the sawtooth ratios of all points in contiguous passes).

Every value kernel is positively homogeneous of degree 1 in the belief (``max alpha . x``, the
sawtooth, the fast informed bound), so it is evaluated at the *unnormalised* successor
``x = (b T_a) * Z[a, :, o]``, whose mass is ``P(o | b, a)``: ``value(x) = P(o|b,a) V(tau(b,a,o))``.
Their plain-numpy reference is :class:`accel.pomdp.PBSTorchBackup`'s core run on numpy. No random draws here.
"""

from __future__ import annotations

import numba
import numpy as np

_EPS_IMPROVE = 1e-12  # a backup is kept only when it moves the bound by more than this (round-off)
DENSE_POINTS_MAX_S = 512  # dense column-wise sawtooth inverses up to this many states (8 S bytes a point)


@numba.njit(cache=True)
def predict(b, bsup, nb, a, Tptr, Tidx, Tval, out, mark, sup):
    """``out = b @ T[a]`` on its support ``sup[:n]``, summed over the support ``bsup[:nb]`` of ``b`` (increasing
    states, as :func:`_support` lists them); returns ``n``. Only the entries on ``sup[:n]`` are written (each
    is zeroed when first reached), so the cost is that of the support, not of ``S``; readers of ``out`` read
    it on ``sup[:n]`` only.

    ``mark`` (S,) int8 scratch, all zero on entry and on exit."""
    n = 0
    for j in range(nb):
        s = bsup[j]
        bs = b[s]
        for k in range(Tptr[a, s], Tptr[a, s + 1]):
            t = Tidx[k]
            if mark[t] == 0:
                mark[t] = 1
                out[t] = 0.0
                sup[n] = t
                n += 1
            out[t] += bs * Tval[k]
    for j in range(n):
        mark[sup[j]] = 0
    return n


@numba.njit(cache=True)
def observe(pred, psup, npred, a, o, Z, x, xsup):
    """``x = pred * Z[a, :, o]`` on the support of ``pred``; returns ``(P(o|b,a), n)`` with the
    support ``xsup[:n]``. ``x`` is written only on ``psup``: the caller keeps it zero elsewhere."""
    p = 0.0
    n = 0
    for j in range(npred):
        t = psup[j]
        v = pred[t] * Z[a, t, o]
        x[t] = v
        if v > 0.0:
            xsup[n] = t
            n += 1
            p += v
    return p, n


@numba.njit(cache=True)
def lower_at(x, sup, n, ALT, nA, vb):
    """``max_i alpha_i . x`` over the first ``nA`` vectors, held column-wise in ``ALT`` (S, cap)
    (``ALT[s, i] = alpha_i(s)``), on the support ``sup[:n]`` of ``x``; ``(value, argmax)``, lowest
    index on ties. ``vb`` (>= nA,) scratch. The loop over the vectors is contiguous per state (one
    pass over ``nA`` numbers for each support state), the sums are in support order."""
    for i in range(nA):
        vb[i] = 0.0
    for j in range(n):
        s = sup[j]
        xs = x[s]
        row = ALT[s]
        for i in range(nA):
            vb[i] += row[i] * xs
    best = -np.inf
    bi = 0
    for i in range(nA):
        if vb[i] > best:
            best = vb[i]
            bi = i
    return best, bi


@numba.njit(cache=True)
def _fib_and_base(x, sup, n, Q, c):
    """``max_a Q[a] . x`` (``inf`` without actions) and ``c . x``, over the support ``sup[:n]`` of ``x``:
    the FIB cap and the corner term of the sawtooth upper bound."""
    A = Q.shape[0]
    fib = np.inf if A == 0 else -np.inf
    for a in range(A):
        v = 0.0
        for j in range(n):
            s = sup[j]
            v += Q[a, s] * x[s]
        if v > fib:
            fib = v
    base = 0.0
    for j in range(n):
        s = sup[j]
        base += c[s] * x[s]
    return fib, base


@numba.njit(cache=True)
def upper_at(x, sup, n, Q, c, Uptr, Uidx, Uinv, Ud, Umask, UinvT, nU, skip, vb):
    """Upper bound at ``x``: min of the fast informed bound ``max_a Q[a] . x`` and the sawtooth
    interpolation of the points ``0..nU-1`` (point ``skip`` left out; ``-1``: none) over the corner
    values ``c``: ``x . c + min(0, min_i Ud[i] min_{s in supp(Bu_i)} x(s) / Bu_i(s))``. The ratio
    is 0 unless ``supp(Bu_i)`` lies inside ``supp(x) = sup[:n]``; that test reads the support
    bitmasks ``Umask[i]`` (64 states a word) only, and the ratio loop runs for the points that pass.
    Every entry of ``sup[:n]`` must have ``x > 0``. With a dense ``UinvT`` (S, capacity) (column
    ``i``: ``1 / Bu_i`` on its support, ``inf`` elsewhere) the ratios of all points are taken first
    in one contiguous pass per support state of ``x`` (the same products and minima as the CSR loop;
    ``vb`` (>= nU,) scratch); an empty ``UinvT`` (0, 0) selects the CSR loop."""
    dense = UinvT.shape[0] > 0
    if dense:
        for i in range(nU):
            vb[i] = np.inf
        for j in range(n):
            s = sup[j]
            xs = x[s]
            row = UinvT[s]
            for i in range(nU):
                vb[i] = min(vb[i], xs * row[i])
    W = Umask.shape[1]
    xm = np.zeros(W, dtype=np.uint64)
    for j in range(n):
        s = sup[j]
        xm[s >> 6] |= np.uint64(1) << np.uint64(s & 63)
    fib, base = _fib_and_base(x, sup, n, Q, c)
    low = 0.0
    for i in range(nU):
        di = Ud[i]
        if di >= 0.0 or i == skip:
            continue
        if Uptr[i + 1] - Uptr[i] > n:
            continue  # supp(Bu_i) is not inside supp(x): the ratio is 0
        if x[Uidx[Uptr[i]]] <= 0.0:
            continue  # the first support state of Bu_i is outside supp(x) (x > 0 on sup): ratio 0
        inside = True
        for w in range(W):
            if Umask[i, w] & ~xm[w]:
                inside = False
                break
        if not inside:
            continue
        if dense:
            ratio = vb[i]
        else:
            ratio = np.inf
            for k in range(Uptr[i], Uptr[i + 1]):
                v = x[Uidx[k]] * Uinv[k]
                if v < ratio:
                    ratio = v
        v = di * ratio
        if v < low:
            low = v
    saw = base + low
    return saw if saw < fib else fib


@numba.njit(cache=True)
def upper_listed(x, sup, n, Q, c, Uptr, Uidx, Uinv, Ud, Umask, UinvT, nU, vb, links):
    """:func:`upper_at` (no point left out) that reads only the points whose first support state lies in the
    support of ``x``: ``links = (head (S,), nxt (capacity,))`` chains the points by their first support state
    (``head[s]``: the last point added whose first state is ``s``, ``-1``: none; ``nxt[i]``: the one before it),
    kept by :func:`_append` and :func:`link_points`. A point whose first state is outside ``supp(x)`` has ratio
    0, so the minimum is the same (a minimum does not depend on the order); with the dense ``UinvT`` the
    contiguous pass of :func:`upper_at` is used. The same number as :func:`upper_at`."""
    if UinvT.shape[0] > 0:
        return upper_at(x, sup, n, Q, c, Uptr, Uidx, Uinv, Ud, Umask, UinvT, nU, -1, vb)
    head, nxt = links
    fib, base = _fib_and_base(x, sup, n, Q, c)
    low = 0.0
    for j in range(n):
        i = head[sup[j]]
        while i >= 0:
            di = Ud[i]
            if di < 0.0 and Uptr[i + 1] - Uptr[i] <= n:
                ratio = np.inf
                for k in range(Uptr[i], Uptr[i + 1]):
                    v = x[Uidx[k]] * Uinv[k]
                    if v < ratio:
                        ratio = v
                        if v <= 0.0:
                            break  # a support state of the point outside supp(x): ratio 0
                v = di * ratio
                if v < low:
                    low = v
            i = nxt[i]
    saw = base + low
    return saw if saw < fib else fib


@numba.njit(cache=True)
def link_points(Uptr, Uidx, nU, head, nxt):
    """Rebuild the chains of the points by first support state (see :func:`upper_listed`)."""
    for s in range(head.shape[0]):
        head[s] = -1
    for i in range(nU):
        f = Uidx[Uptr[i]]
        nxt[i] = head[f]
        head[f] = i


@numba.njit(cache=True)
def _support(b, sup):
    n = 0
    for s in range(b.shape[0]):
        if b[s] > 0.0:
            sup[n] = s
            n += 1
    return n


@numba.njit(cache=True)
def node_values(b, bsup, nb, Tptr, Tidx, Tval, Z, r, discount, ALT, nA, Q, c, Uptr, Uidx, Uinv, Ud, Umask, UinvT,
                nU, P, LV, UV, LI, QU, work, vb, lower_action=-1):
    """Everything one step of the search needs at belief ``b`` (support ``bsup[:nb]``), for all ``(a, o)``:
    ``P[a, o] = P(o|b,a)``, ``LV[a, o] = P * L(tau)``, ``UV[a, o] = P * U(tau)``, the best lower
    vector ``LI[a, o]`` at the successor (0 where ``P = 0``), and the upper Q-values
    ``QU[a] = b . r[:, a] + discount * sum_o UV[a, o]``. ``work``: a scratch tuple of arrays.
    ``lower_action = -2``: skip the lower bound (``LV``, ``LI`` left as they are; ``UV`` is then not
    clipped below by ``LV``); ``>= 0``: compute it for that action only; ``-1``: for all actions."""
    pred, x, mark, psup, xsup = work
    A = Tptr.shape[0]
    O = Z.shape[2]
    for a in range(A):
        npred = predict(b, bsup, nb, a, Tptr, Tidx, Tval, pred, mark, psup)
        rb = 0.0
        for j in range(nb):
            s = bsup[j]
            rb += b[s] * r[s, a]
        tot = 0.0
        for o in range(O):
            p, n = observe(pred, psup, npred, a, o, Z, x, xsup)
            P[a, o] = p
            if p > 0.0:
                uv = upper_at(x, xsup, n, Q, c, Uptr, Uidx, Uinv, Ud, Umask, UinvT, nU, -1, vb)
                if lower_action == -1 or lower_action == a:
                    lv, li = lower_at(x, xsup, n, ALT, nA, vb)
                    LV[a, o] = lv
                    LI[a, o] = li
                    if lv > uv:
                        uv = lv
                UV[a, o] = uv
                tot += UV[a, o]
            else:
                LV[a, o] = 0.0
                UV[a, o] = 0.0
                LI[a, o] = 0
        for j in range(npred):  # keep x zero off the current support (upper_at reads any index)
            x[psup[j]] = 0.0
        QU[a] = rb + discount * tot


@numba.njit(cache=True)
def upper_since(x, sup, n, c, Uptr, Uidx, Uinv, Ud, i0, nU, u_old):
    """``upper_at`` at ``x`` with the points ``0..nU-1`` from its value ``u_old`` with the points ``0..i0-1``:
    only the points ``i0..nU-1`` are read (``min(u_old, x . c + min(0, min_i Ud[i] ratio_i))``, the same
    products, sums and minima as :func:`upper_at`, so the same number). ``x`` must be zero off ``sup[:n]``."""
    low = 0.0
    for i in range(i0, nU):
        di = Ud[i]
        if di >= 0.0:
            continue
        ratio = np.inf
        for k in range(Uptr[i], Uptr[i + 1]):
            v = x[Uidx[k]] * Uinv[k]
            if v < ratio:
                ratio = v
        v = di * ratio
        if v < low:
            low = v
    if low >= 0.0:
        return u_old
    base = 0.0
    for j in range(n):
        s = sup[j]
        base += c[s] * x[s]
    saw = base + low
    return saw if saw < u_old else u_old


@numba.njit(cache=True)
def lower_since(x, sup, n, ALT, i0, nA, best, bi):
    """``lower_at`` at ``x`` over the vectors ``0..nA-1`` from its result ``(best, bi)`` over ``0..i0-1``: only
    the vectors ``i0..nA-1`` are read (the same sums in the same order, first maximum on ties)."""
    for i in range(i0, nA):
        v = 0.0
        for j in range(n):
            s = sup[j]
            v += ALT[s, i] * x[s]
        if v > best:
            best = v
            bi = i
    return best, bi


@numba.njit(cache=True)
def node_values_from(b, bsup, nb, Tptr, Tidx, Tval, Z, r, discount, ALT, nA, Q, c, Uptr, Uidx, Uinv, Ud, Umask,
                     UinvT, nU, P, LV, UV, LI, QU, work, vb, UVr, UV0, nU0, LV0, LI0, nA0, a0, lower, clip, links):
    """:func:`node_values` at ``b`` from values known there with fewer points and vectors: the unclipped upper
    values ``UV0`` (A, O) of the successors with the first ``nU0`` points (``nU0 < 0``: none known) and the
    lower values and vectors ``LV0``, ``LI0`` (A, O) with the first ``nA0`` vectors (``nA0 < 0``: none known),
    known for every action (``a0 = -1``) or for action ``a0`` only. Where a value is known only the points and
    vectors added since are read (:func:`upper_since`, :func:`lower_since`); the results equal
    :func:`node_values`'s. ``lower``: 0 no lower values, 1 for all actions; ``clip``: ``UV`` clipped below by
    ``LV`` (as :func:`node_values` with ``lower_action = -1``), else not (``-2``). ``UVr`` (A, O) receives the
    unclipped upper values (0 where ``P = 0``). ``links``: the point chains of :func:`upper_listed`."""
    pred, x, mark, psup, xsup = work
    A = Tptr.shape[0]
    O = Z.shape[2]
    for a in range(A):
        npred = predict(b, bsup, nb, a, Tptr, Tidx, Tval, pred, mark, psup)
        rb = 0.0
        for j in range(nb):
            s = bsup[j]
            rb += b[s] * r[s, a]
        known = nA0 >= 0 and (a0 < 0 or a == a0)
        tot = 0.0
        for o in range(O):
            p, n = observe(pred, psup, npred, a, o, Z, x, xsup)
            P[a, o] = p
            if p > 0.0:
                if nU0 >= 0:
                    uv = upper_since(x, xsup, n, c, Uptr, Uidx, Uinv, Ud, nU0, nU, UV0[a, o])
                else:
                    uv = upper_listed(x, xsup, n, Q, c, Uptr, Uidx, Uinv, Ud, Umask, UinvT, nU, vb, links)
                UVr[a, o] = uv
                if lower == 1:
                    if known:
                        lv, li = lower_since(x, xsup, n, ALT, nA0, nA, LV0[a, o], LI0[a, o])
                    else:
                        lv, li = lower_at(x, xsup, n, ALT, nA, vb)
                    LV[a, o] = lv
                    LI[a, o] = li
                    if clip and lv > uv:
                        uv = lv
                UV[a, o] = uv
                tot += UV[a, o]
            else:
                LV[a, o] = 0.0
                UV[a, o] = 0.0
                UVr[a, o] = 0.0
                LI[a, o] = 0
        for j in range(npred):
            x[psup[j]] = 0.0
        QU[a] = rb + discount * tot


@numba.njit(cache=True)
def backup_from(b, bsup, nb, Tptr, Tidx, Tval, Z, r, discount, ALT, nA, Q, c, Uptr, Uidx, Uinv, Ud, Umask, UinvT,
                nU, P, LV, UV, LI, QU, work, vb, UVr, UV0, nU0, LV0, LI0, nA0, a0):
    """The values the backup at ``b`` needs, from the values known there (arguments as in
    :func:`node_values_from`): the upper values of every successor first (``UVr``; ``QU`` from them), then the
    actions in decreasing ``QU``, each with its lower values at its successors (``LV``, ``LI``; its ``UV``
    clipped below by ``LV`` and its ``QU`` recomputed) and the value ``b . alpha`` of its backed-up vector
    (:func:`backup_value`), until the next action's upper Q-value is below the best backed-up value found (less
    a relative ``1e-9``): as the upper Q-value bounds the value of every vector of that action, no such action
    can give the best vector. Returns ``(best_v, best_a, all_lower)``: the best value and its action (the
    lowest index among equal values, as in :func:`update`) and whether every action's lower values were
    computed (the others keep ``LV``, ``LI`` unset and their unclipped ``QU``)."""
    pred, x, mark, psup, xsup = work
    A = Tptr.shape[0]
    O = Z.shape[2]
    rbs = np.empty(A)
    for a in range(A):
        npred = predict(b, bsup, nb, a, Tptr, Tidx, Tval, pred, mark, psup)
        rb = 0.0
        for j in range(nb):
            s = bsup[j]
            rb += b[s] * r[s, a]
        rbs[a] = rb
        tot = 0.0
        for o in range(O):
            p, n = observe(pred, psup, npred, a, o, Z, x, xsup)
            P[a, o] = p
            if p > 0.0:
                uv = upper_since(x, xsup, n, c, Uptr, Uidx, Uinv, Ud, nU0, nU, UV0[a, o])
                UVr[a, o] = uv
                UV[a, o] = uv
                tot += uv
            else:
                UVr[a, o] = 0.0
                UV[a, o] = 0.0
                LV[a, o] = 0.0
                LI[a, o] = 0
        for j in range(npred):
            x[psup[j]] = 0.0
        QU[a] = rb + discount * tot
    order = np.argsort(-QU, kind="mergesort")
    best_v = -np.inf
    best_a = 0
    all_lower = True
    for m in range(A):
        a = order[m]
        if QU[a] < best_v - 1e-9 * max(1.0, abs(best_v)):
            all_lower = False
            break
        known = a0 < 0 or a == a0
        npred = predict(b, bsup, nb, a, Tptr, Tidx, Tval, pred, mark, psup)
        tot = 0.0
        for o in range(O):
            if P[a, o] > 0.0:
                p, n = observe(pred, psup, npred, a, o, Z, x, xsup)
                if known:
                    lv, li = lower_since(x, xsup, n, ALT, nA0, nA, LV0[a, o], LI0[a, o])
                else:
                    lv, li = lower_at(x, xsup, n, ALT, nA, vb)
                LV[a, o] = lv
                LI[a, o] = li
                if lv > UV[a, o]:
                    UV[a, o] = lv
                tot += UV[a, o]
        for j in range(npred):
            x[psup[j]] = 0.0
        QU[a] = rbs[a] + discount * tot
        v = backup_value(a, LI, Tptr, Tidx, Tval, Z, r, discount, ALT, b, bsup, nb)
        if v > best_v or (v == best_v and a < best_a):
            best_v = v
            best_a = a
    return best_v, best_a, all_lower


@numba.njit(cache=True)
def backup_vector(a, LI, Tptr, Tidx, Tval, Z, r, discount, ALT, out, w):
    """The alpha vector of action ``a`` followed by the sub-plans ``LI[a, o]`` (columns of ``ALT``):
    ``out[s] = r[s, a] + discount * sum_{s'} T[a, s, s'] sum_o Z[a, s', o] ALT[s', LI[a, o]]``."""
    S = out.shape[0]
    O = Z.shape[2]
    for t in range(S):
        acc = 0.0
        for o in range(O):
            acc += Z[a, t, o] * ALT[t, LI[a, o]]
        w[t] = acc
    for s in range(S):
        acc = 0.0
        for k in range(Tptr[a, s], Tptr[a, s + 1]):
            acc += Tval[k] * w[Tidx[k]]
        out[s] = r[s, a] + discount * acc


@numba.njit(cache=True)
def backup_value(a, LI, Tptr, Tidx, Tval, Z, r, discount, ALT, b, bsup, nb):
    """``b . out`` for the vector ``out`` that :func:`backup_vector` builds for action ``a``, summed over
    the support ``bsup[:nb]`` of ``b`` with the same per-entry arithmetic (so the same value)."""
    O = Z.shape[2]
    v = 0.0
    for j in range(nb):
        s = bsup[j]
        acc = 0.0
        for k in range(Tptr[a, s], Tptr[a, s + 1]):
            t = Tidx[k]
            wt = 0.0
            for o in range(O):
                wt += Z[a, t, o] * ALT[t, LI[a, o]]
            acc += Tval[k] * wt
        v += b[s] * (r[s, a] + discount * acc)
    return v


@numba.njit(cache=True)
def update(b, Tptr, Tidx, Tval, Z, r, discount, ALT, AA, WB, nA, Q, c, Uptr, Uidx, Uval, Uinv, Ud, Uv, Umask, UinvT, nU,
           P, LV, UV, LI, QU, work, cand, w, bsup, vb):
    """Point-based backup of both bounds at ``b`` (HSVI2 ``update``).

    Lower: the best backed-up vector at ``b`` is appended to ``ALT`` (as column ``nA``) when it
    raises ``L(b)``; ``b`` is stored as its witness belief, row ``nA`` of the CSR triple
    ``WB = (WBptr, WBidx, WBval)`` (the caller guarantees room for ``S`` entries).
    Upper: ``H U(b) = max_a QU[a]`` is appended as a sawtooth point (with its support bitmask)
    when it lowers ``U(b)``.
    The caller guarantees room for one vector and one point (``S`` support entries).
    Returns ``(nA, nU)``."""
    nb = _support(b, bsup)
    node_values(b, bsup, nb, Tptr, Tidx, Tval, Z, r, discount, ALT, nA, Q, c, Uptr, Uidx, Uinv, Ud, Umask, UinvT,
                nU, P, LV, UV, LI, QU, work, vb)
    lb, _ = lower_at(b, bsup, nb, ALT, nA, vb)
    ub = upper_at(b, bsup, nb, Q, c, Uptr, Uidx, Uinv, Ud, Umask, UinvT, nU, -1, vb)
    best_v = -np.inf
    best_a = 0
    for a in range(Tptr.shape[0]):
        # b . (backed-up vector of a), computed on the support of b only (the full vector is formed
        # once, for the best action; same arithmetic as backup_vector, so the same value)
        v = backup_value(a, LI, Tptr, Tidx, Tval, Z, r, discount, ALT, b, bsup, nb)
        if v > best_v:
            best_v = v
            best_a = a
    return _append(b, bsup, nb, lb, ub, Tptr, Tidx, Tval, Z, r, discount, ALT, AA, WB, nA, c, Uptr, Uidx, Uval,
                   Uinv, Ud, Uv, Umask, UinvT, nU, LI, QU, cand, w, best_v, best_a)


@numba.njit(cache=True)
def _append(b, bsup, nb, lb, ub, Tptr, Tidx, Tval, Z, r, discount, ALT, AA, WB, nA, c, Uptr, Uidx, Uval, Uinv,
            Ud, Uv, Umask, UinvT, nU, LI, QU, cand, w, best_v, best_a):
    """The end of :func:`update` once ``LI``, ``QU``, the best backed-up value ``best_v`` at ``b`` (of action
    ``best_a``) and the bounds ``lb``, ``ub`` at ``b`` are known: append the backed-up vector and the point
    when they improve the bounds; returns ``(nA, nU)``."""
    A = Tptr.shape[0]
    S = b.shape[0]
    if best_v > lb + _EPS_IMPROVE * max(1.0, abs(lb)):
        backup_vector(best_a, LI, Tptr, Tidx, Tval, Z, r, discount, ALT, cand, w)
        WBptr, WBidx, WBval = WB
        for s in range(S):
            ALT[s, nA] = cand[s]
        k = WBptr[nA]
        for j in range(nb):  # the witness in CSR: the support of b
            WBidx[k] = bsup[j]
            WBval[k] = b[bsup[j]]
            k += 1
        WBptr[nA + 1] = k
        AA[nA] = best_a
        nA += 1
    hu = -np.inf
    for a in range(A):
        if QU[a] > hu:
            hu = QU[a]
    if best_v > hu:  # both are bounds on V*(b); keep the upper one above the lower (round-off)
        hu = best_v
    if hu < ub - _EPS_IMPROVE * max(1.0, abs(ub)):
        k = Uptr[nU]
        bc = 0.0
        for wd in range(Umask.shape[1]):
            Umask[nU, wd] = 0
        for s in range(UinvT.shape[0]):
            UinvT[s, nU] = np.inf
        for j in range(nb):
            s = bsup[j]
            Umask[nU, s >> 6] |= np.uint64(1) << np.uint64(s & 63)
            if UinvT.shape[0] > 0:
                UinvT[s, nU] = 1.0 / b[s]
            Uidx[k] = s
            Uval[k] = b[s]
            Uinv[k] = 1.0 / b[s]
            bc += b[s] * c[s]
            k += 1
        Uptr[nU + 1] = k
        Uv[nU] = hu
        Ud[nU] = min(hu - bc, 0.0)
        nU += 1
    return nA, nU


@numba.njit(cache=True)
def trial(b0, eps, max_depth, Tptr, Tidx, Tval, Z, r, discount, ALT, AA, WB, nA, Q, c,
          Uptr, Uidx, Uval, Uinv, Ud, Uv, Umask, UinvT, nU, path, P, LV, UV, LI, QU, work, cand, w, bsup,
          vb, deep, tree, n_nodes, epoch, links):
    """One HSVI2 trial (Smith & Simmons 2005, Alg. 1 ``explore``) from ``b0`` with precision
    ``eps``: descend by the upper-bound greedy action and the observation of largest weighted
    excess uncertainty ``P(o|b,a) (U - L)(tau) - eps * discount^-(t+1)`` until the width at depth
    ``t`` is at most ``eps * discount^-t`` (or ``max_depth``), then back both bounds up along the
    path, deepest first. Returns ``(nA, nU, depth, n_backups, width_b0)``; ``width_b0`` is the
    root's width before the trial. The caller guarantees room for ``max_depth`` vectors/points.

    ``deep=True``: SARSOP's selective deep sampling (Kurniawati, Hsu & Lee 2008, Alg. 3 ``SAMPLE``) replaces
    the width rule: the root gets the targets ``L^ = L(b0)``, ``U^ = L(b0) + eps``; at depth ``t`` the
    trial stops when ``U(b) <= L^`` (the upper bound, standing in for SARSOP's predicted value, says the
    lower target cannot be reached below ``b``) and ``U(b) <= max(U^, L(b) + eps discount^-t)``, or at
    ``max_depth``; otherwise the targets are raised to ``max(L^, L(b))`` and ``max(U^, L(b) +
    eps discount^-t)`` and passed to the chosen successor ``o*`` of ``a*`` as the values it must reach for
    ``b`` to reach them: ``(target - R(b, a*) - discount sum_{o != o*} P(o) V(tau(b, a*, o))) /
    (discount P(o*))`` with ``V = L`` resp. ``U``. Only the depth of the trial changes; the backups (and so
    the validity of both bounds) are the same.

    Values kept between the descent and the backups, and between trials: at each node of the path the descent
    keeps the successors' upper values and the lower values it computed (with the ``nA``, ``nU`` of the trial's
    start); the backup there reads only the vectors and points added since. ``tree = (child, Cep, CnA, CnU, CUV,
    CLV, CLI)`` holds the nodes of the search tree seen so far (node 0 is ``b0``; ``child[i, a, o] - 1`` the
    successor node, ``-1``: none yet; at most ``len(Cep)`` nodes, ``n_nodes`` used) with their successors' unclipped
    upper values ``CUV[i]`` (A, O) for the first ``CnU[i]`` points and lower values and vectors ``CLV[i]``,
    ``CLI[i]`` for the first ``CnA[i]`` vectors (``-1``: not known), valid while ``Cep[i] == epoch`` (the caller
    changes ``epoch`` when a pruning renumbers the sets). So a node met again reads only what was added since
    its last visit. Every value equals a fresh evaluation: the search is the same as without them.
    ``links``: the chains of the points by first support state (:func:`upper_listed`), kept as points are added.
    Returns ``(nA, nU, depth, n_backups, width_b0, n_nodes)``."""
    S = b0.shape[0]
    A = Tptr.shape[0]
    O = Z.shape[2]
    child, Cep, CnA, CnU, CUV, CLV, CLI = tree
    cap = Cep.shape[0]
    for s in range(S):
        path[0, s] = b0[s]
    t = 0
    width0 = 0.0
    thr = eps
    lhat = 0.0
    uhat = 0.0
    pred, x, mark, psup, xsup = work
    # what the descent found at each node of the path, with the nA0 vectors and nU0 points of the trial's start
    # (the sets do not change before the backups), reused by the backups
    nA0 = nA
    nU0 = nU
    L = path.shape[0]
    UVd = np.zeros((L, A, O))
    LVd = np.zeros((L, A, O))
    LId = np.zeros((L, A, O), dtype=np.int64)
    Ad = np.zeros(L, dtype=np.int64)
    LBd = np.empty(L)
    UBd = np.empty(L)
    Nid = np.full(L, -1, dtype=np.int64)
    UVr = np.zeros((A, O))
    LV0 = np.zeros((A, O))
    LI0 = np.zeros((A, O), dtype=np.int64)
    if cap > 0:
        Nid[0] = 0
        if n_nodes == 0:
            n_nodes = 1
    while True:
        b = path[t]
        nb = _support(b, bsup)
        nid = Nid[t]
        hit = nid >= 0 and Cep[nid] == epoch
        lower_known = hit and CnA[nid] >= 0
        lower_mode = 1 if lower_known else 0
        if hit:
            if lower_known:
                for a in range(A):
                    for o in range(O):
                        LV0[a, o] = CLV[nid, a, o]
                        LI0[a, o] = CLI[nid, a, o]
            node_values_from(b, bsup, nb, Tptr, Tidx, Tval, Z, r, discount, ALT, nA, Q, c, Uptr, Uidx, Uinv, Ud,
                             Umask, UinvT, nU, P, LV, UV, LI, QU, work, vb, UVr, CUV[nid], CnU[nid], LV0, LI0,
                             CnA[nid], -1, lower_mode, False, links)
        else:
            node_values_from(b, bsup, nb, Tptr, Tidx, Tval, Z, r, discount, ALT, nA, Q, c, Uptr, Uidx, Uinv, Ud,
                             Umask, UinvT, nU, P, LV, UV, LI, QU, work, vb, UVr, UVr, -1, LV0, LI0, -1, -1, 0,
                             False, links)
        if nid >= 0:
            Cep[nid] = epoch
            CnU[nid] = nU
            CnA[nid] = nA if lower_known else -1
            for a in range(A):
                for o in range(O):
                    CUV[nid, a, o] = UVr[a, o]
                    if lower_known:
                        CLV[nid, a, o] = LV[a, o]
                        CLI[nid, a, o] = LI[a, o]
        lb, _ = lower_at(b, bsup, nb, ALT, nA, vb)
        ub = upper_listed(b, bsup, nb, Q, c, Uptr, Uidx, Uinv, Ud, Umask, UinvT, nU, vb, links)
        LBd[t] = lb
        UBd[t] = ub
        if t == 0:
            width0 = ub - lb
            lhat = lb
            uhat = lb + eps
        if t >= max_depth:
            break
        if deep:
            if ub <= lhat and ub <= max(uhat, lb + thr):
                break
            lhat = max(lhat, lb)
            uhat = max(uhat, lb + thr)
        elif ub - lb <= thr:
            break
        for a in range(A):
            for o in range(O):
                UVd[t, a, o] = UVr[a, o]
        a_star = 0
        qbest = -np.inf
        for a in range(QU.shape[0]):
            if QU[a] > qbest:
                qbest = QU[a]
                a_star = a
        thr_next = thr / discount
        usum = 0.0
        for o in range(O):
            usum += UV[a_star, o]
        rb = QU[a_star] - discount * usum  # R(b, a*)
        # the lower bound is needed at the successors of a* only (excess uncertainty of each o)
        if lower_known:
            Ad[t] = -1
            for a in range(A):
                for o in range(O):
                    LVd[t, a, o] = LV[a, o]
                    LId[t, a, o] = LI[a, o]
        else:
            Ad[t] = a_star
            npred = predict(b, bsup, nb, a_star, Tptr, Tidx, Tval, pred, mark, psup)
            for o in range(O):
                LVd[t, a_star, o] = 0.0
                LId[t, a_star, o] = 0
                if P[a_star, o] > 0.0:
                    p, n = observe(pred, psup, npred, a_star, o, Z, x, xsup)
                    lv, li = lower_at(x, xsup, n, ALT, nA, vb)
                    LV[a_star, o] = lv
                    LVd[t, a_star, o] = lv
                    LId[t, a_star, o] = li
            for j in range(npred):
                x[psup[j]] = 0.0
        for o in range(O):
            if P[a_star, o] > 0.0 and LV[a_star, o] > UV[a_star, o]:
                UV[a_star, o] = LV[a_star, o]
        o_star = -1
        ebest = -np.inf
        for o in range(O):
            p = P[a_star, o]
            if p <= 0.0:
                continue
            e = UV[a_star, o] - LV[a_star, o] - p * thr_next
            if e > ebest:
                ebest = e
                o_star = o
        if o_star < 0:
            break
        if deep:  # the targets the successor o* must reach (SARSOP's SAMPLE)
            lrest = 0.0
            urest = 0.0
            for o in range(O):
                if o != o_star and P[a_star, o] > 0.0:
                    lrest += LV[a_star, o]
                    urest += UV[a_star, o]
            den = discount * P[a_star, o_star]
            lhat = (lhat - rb - discount * lrest) / den
            uhat = (uhat - rb - discount * urest) / den
        npred = predict(b, bsup, nb, a_star, Tptr, Tidx, Tval, pred, mark, psup)
        p, n = observe(pred, psup, npred, a_star, o_star, Z, x, xsup)
        nxt = path[t + 1]
        for s in range(S):
            nxt[s] = 0.0
        for j in range(n):
            nxt[xsup[j]] = x[xsup[j]] / p
        for j in range(npred):
            x[psup[j]] = 0.0
        if nid >= 0:  # the successor's node in the tree (a new one while there is room)
            ch = child[nid, a_star, o_star] - 1
            if ch < 0 and n_nodes < cap:
                ch = n_nodes
                n_nodes += 1
                child[nid, a_star, o_star] = ch + 1
                Cep[ch] = epoch - 1
            Nid[t + 1] = ch
        t += 1
        thr = thr_next
    n_backups = 0
    for k in range(t - 1, -1, -1):
        b = path[k]
        nb = _support(b, bsup)
        nA_k = nA
        nU_k = nU
        best_v, best_a, all_lower = backup_from(
            b, bsup, nb, Tptr, Tidx, Tval, Z, r, discount, ALT, nA, Q, c, Uptr, Uidx, Uinv, Ud, Umask, UinvT, nU,
            P, LV, UV, LI, QU, work, vb, UVr, UVd[k], nU0, LVd[k], LId[k], nA0, Ad[k])
        nid = Nid[k]
        if nid >= 0:
            Cep[nid] = epoch
            CnU[nid] = nU_k
            CnA[nid] = nA_k if all_lower else -1
            for a in range(A):
                for o in range(O):
                    CUV[nid, a, o] = UVr[a, o]
                    CLV[nid, a, o] = LV[a, o]
                    CLI[nid, a, o] = LI[a, o]
        lb, _ = lower_since(b, bsup, nb, ALT, nA0, nA, LBd[k], 0)
        ub = upper_since(b, bsup, nb, c, Uptr, Uidx, Uinv, Ud, nU0, nU, UBd[k])
        nA, nU = _append(b, bsup, nb, lb, ub, Tptr, Tidx, Tval, Z, r, discount, ALT, AA, WB, nA, c, Uptr, Uidx,
                         Uval, Uinv, Ud, Uv, Umask, UinvT, nU, LI, QU, cand, w, best_v, best_a)
        if nU > nU_k:  # the new point joins the chain of its first support state
            head, nxt = links
            f = Uidx[Uptr[nU_k]]
            nxt[nU_k] = head[f]
            head[f] = nU_k
        n_backups += 1
    return nA, nU, t, n_backups, width0, n_nodes


@numba.njit(cache=True)
def compact_columns(ALT, keep, n):
    """Move the columns ``i < n`` with ``keep[i]`` to the front of ``ALT``, in order, in place."""
    for s in range(ALT.shape[0]):
        m = 0
        for i in range(n):
            if keep[i]:
                ALT[s, m] = ALT[s, i]
                m += 1


@numba.njit(cache=True)
def spread_rows(flat, S, cap, new_cap, used):
    """Re-lay the C-order ``(S, cap)`` rows held in ``flat[:S * cap]`` at the wider stride ``new_cap`` in the
    same (already enlarged) buffer, in place (last row first, so nothing is overwritten before it moves); the
    first ``used`` entries of each row are kept and the rest of each row is zeroed."""
    for s in range(S - 1, -1, -1):
        for i in range(used - 1, -1, -1):
            flat[s * new_cap + i] = flat[s * cap + i]
        for i in range(used, new_cap):
            flat[s * new_cap + i] = 0.0


@numba.njit(cache=True)
def transpose_in_place(flat, S, nA, cap):
    """Rewrite the first ``nA`` columns of the column-wise vectors (``flat`` is the C-order ``(S, cap)``
    buffer, flattened) as the row-wise ``(nA, S)`` array in ``flat[:nA * S]``, in place: the rows are first
    packed to stride ``nA`` (each moves down), then the ``(S, nA)`` matrix is transposed by following the
    cycles of the permutation ``i -> i S mod (nA S - 1)`` (a bitmap of ``nA S / 8`` bytes marks the moved
    entries), so no second ``nA x S`` array is needed."""
    for s in range(1, S):
        for i in range(nA):
            flat[s * nA + i] = flat[s * cap + i]
    N = S * nA
    if N <= 2:
        return
    done = np.zeros((N + 7) // 8, dtype=np.uint8)
    for start in range(1, N - 1):
        if done[start >> 3] & (1 << (start & 7)):
            continue
        i = start
        v = flat[i]
        while True:
            j = (i * S) % (N - 1)
            t = flat[j]
            flat[j] = v
            v = t
            done[j >> 3] |= np.uint8(1 << (j & 7))
            i = j
            if i == start:
                break


@numba.njit(cache=True)
def prune_alphas(ALT, nA, keep_first):
    """Pointwise-dominance pruning (HSVI2 §4): vector ``i`` (column ``i`` of ``ALT``) is dropped
    when another live vector is ``>=`` it in every state (an identical earlier one counts). The
    first ``keep_first`` vectors (the initial lower bound) are kept. Returns a bool mask of the
    survivors."""
    S = ALT.shape[0]
    AL = np.empty((nA, S))
    for s in range(S):
        for i in range(nA):
            AL[i, s] = ALT[s, i]
    alive = np.ones(nA, dtype=np.bool_)
    for i in range(keep_first, nA):
        for j in range(nA):
            if j == i or not alive[j]:
                continue
            dom = True
            equal = True
            for s in range(S):
                if AL[j, s] < AL[i, s]:
                    dom = False
                    break
                if AL[j, s] != AL[i, s]:
                    equal = False
            if dom and (not equal or j < i):
                alive[i] = False
                break
    return alive


@numba.njit(cache=True)
def prune_witness(ALT, nA, WB, b0, keep_first, vb):
    """Witness pruning (the sampled-belief pruning of SARSOP, Kurniawati, Hsu & Lee 2008 §3.3, with
    the backup beliefs as the sample): vector ``i`` survives when it is the best vector (lowest
    index on ties) at some witness belief (row ``j`` of the CSR triple ``WB``) of a vector ``j`` or at ``b0``; the first
    ``keep_first`` vectors are kept. ``L`` is unchanged at ``b0`` and at every surviving witness
    (it can only drop elsewhere, and stays a lower bound: a max over plans' values). Returns the bool
    mask of the survivors."""
    S = ALT.shape[0]
    keep = np.zeros(nA, dtype=np.bool_)
    for i in range(min(keep_first, nA)):
        keep[i] = True
    WBptr, WBidx, WBval = WB
    sup = np.empty(S, dtype=np.int64)
    x = np.zeros(S)
    for j in range(nA + 1):
        n = 0
        if j == nA:
            for s in range(S):
                if b0[s] > 0.0:
                    x[s] = b0[s]
                    sup[n] = s
                    n += 1
        else:
            for k in range(WBptr[j], WBptr[j + 1]):
                x[WBidx[k]] = WBval[k]
                sup[n] = WBidx[k]
                n += 1
        if n == 0:
            continue  # an initial vector (no witness)
        _, bi = lower_at(x, sup, n, ALT, nA, vb)
        keep[bi] = True
        for k in range(n):
            x[sup[k]] = 0.0
    return keep


@numba.njit(cache=True)
def prune_points(Q, c, Uptr, Uidx, Uval, Uinv, Ud, Uv, Umask, UinvT, nU, x, vb):
    """Upper-point pruning (HSVI2 §4): point ``i`` is dropped when the interpolation of the other
    live points (and the fast informed bound) at ``Bu_i`` is already ``<= Uv[i]``. Dropped points
    get ``Ud = 0`` during the sweep so later tests ignore them. Returns a bool mask of survivors
    (``Ud`` is restored for the caller to compact)."""
    alive = np.ones(nU, dtype=np.bool_)
    saved = Ud[:nU].copy()
    S = x.shape[0]
    sup = np.empty(S, dtype=np.int64)
    for i in range(nU):
        n = 0
        for k in range(Uptr[i], Uptr[i + 1]):
            x[Uidx[k]] = Uval[k]
            sup[n] = Uidx[k]
            n += 1
        u = upper_at(x, sup, n, Q, c, Uptr, Uidx, Uinv, Ud, Umask, UinvT, nU, i, vb)
        if u <= Uv[i]:
            alive[i] = False
            Ud[i] = 0.0
        for j in range(n):
            x[sup[j]] = 0.0
    for i in range(nU):
        Ud[i] = saved[i]
    return alive


@numba.njit(cache=True)
def column_max(Qm):
    """``max_a Qm[a, s]`` for every state ``s`` (the value of an action-value array (A, S))."""
    A, S = Qm.shape
    V = np.empty(S)
    for s in range(S):
        best = Qm[0, s]
        for b in range(1, A):
            if Qm[b, s] > best:
                best = Qm[b, s]
        V[s] = best
    return V


@numba.njit(cache=True)
def mdp_backup_sparse(Qm, Tptr, Tidx, Tval, r, discount):
    """MDP (fully observable) backup on the sparse transitions, kept below ``Qm``:
    ``Q'[a, s] = min(Qm[a, s], r[s, a] + discount * sum_{s'} T[a, s, s'] max_{a'} Qm[a', s'])``;
    returns ``(Q', max |Q' - Qm|)``."""
    A, S = Qm.shape
    V = column_max(Qm)
    out = np.empty((A, S))
    delta = 0.0
    for a in range(A):
        for s in range(S):
            tot = 0.0
            for k in range(Tptr[a, s], Tptr[a, s + 1]):
                tot += Tval[k] * V[Tidx[k]]
            v = min(r[s, a] + discount * tot, Qm[a, s])
            d = Qm[a, s] - v
            if d > delta:
                delta = d
            out[a, s] = v
    return out, delta


@numba.njit(cache=True)
def fib_backup_sparse(Qm, Tptr, Tidx, Tval, Z, r, discount):
    """Fast-informed-bound backup (Hauskrecht 2000) on the sparse transitions:
    ``Q'[a, s] = r[s, a] + discount * sum_o max_{a'} sum_{s'} T[a, s, s'] Z[a, s', o] Q[a', s']``."""
    A, S = Qm.shape
    out = np.empty((A, S))
    acc = np.empty(A)
    for a in range(A):
        for s in range(S):
            out[a, s] = r[s, a] + discount * fib_row(Qm, Tptr, Tidx, Tval, Z, a, s, acc)
    return out


@numba.njit(cache=True)
def fib_row(Qm, Tptr, Tidx, Tval, Z, a, s, acc):
    """``sum_o max_{a'} sum_{s'} T[a, s, s'] Z[a, s', o] Q[a', s']`` for one ``(a, s)``; ``acc`` is
    scratch of length A."""
    A = Qm.shape[0]
    tot = 0.0
    for o in range(Z.shape[2]):
        for b in range(A):
            acc[b] = 0.0
        for k in range(Tptr[a, s], Tptr[a, s + 1]):
            t = Tidx[k]
            p = Tval[k] * Z[a, t, o]
            if p != 0.0:
                for b in range(A):
                    acc[b] += p * Qm[b, t]
        best = acc[0]
        for b in range(1, A):
            if acc[b] > best:
                best = acc[b]
        tot += best
    return tot


def sparse_model(T):
    """CSR layout ``(Tptr (A, S+1), Tidx, Tval)`` of the dense transitions ``T`` (A, S, S)."""
    A, S, _ = T.shape
    ptr = np.zeros((A, S + 1), dtype=np.int64)
    idx, val = [], []
    off = 0
    for a in range(A):
        nz = T[a] != 0.0
        counts = nz.sum(axis=1)
        ptr[a, 1:] = off + np.cumsum(counts)
        ptr[a, 0] = off
        rows, cols = np.nonzero(nz)
        idx.append(cols.astype(np.int64))
        val.append(T[a][rows, cols].astype(np.float64))
        off += int(counts.sum())
    return ptr, np.concatenate(idx), np.concatenate(val)


def sparse_model_from_csr(mats):
    """CSR layout ``(Tptr (A, S+1), Tidx, Tval)`` from per-action CSR matrices (S, S), without a
    dense copy; the same layout as :func:`sparse_model` of the dense array (explicit zeros dropped,
    columns in increasing order within a row)."""
    A = len(mats)
    S = mats[0].shape[0]
    ptr = np.zeros((A, S + 1), dtype=np.int64)
    idx, val = [], []
    off = 0
    for a, m in enumerate(mats):
        m = m.tocsr(copy=True)
        m.sum_duplicates()
        m.eliminate_zeros()
        m.sort_indices()
        ptr[a] = off + m.indptr.astype(np.int64)
        idx.append(m.indices.astype(np.int64))
        val.append(m.data.astype(np.float64))
        off += int(m.nnz)
    return ptr, np.concatenate(idx), np.concatenate(val)
