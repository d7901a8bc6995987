"""Benchmark POMDPs generated in code: Tiger, RockSample(n, k) (random or published maps) and Tag."""

from __future__ import annotations

import numpy as np
import scipy.sparse

from .._io import check_memory_budget
from .._validation import check_option, check_random_state, check_scalar_float, check_scalar_int
from ._model import DENSE_LIMIT_BYTES, POMDP, SPARSE_AUTO_BYTES

__all__ = ["tiger", "rock_sample", "rock_sample_map", "tag"]


def tiger(discount=0.95):
    """The classic Tiger problem (Kaelbling, Littman & Cassandra 1998; same as ``tiger.95.POMDP``).

    States ``tiger-left``, ``tiger-right``; actions ``listen`` (reward -1, state unchanged, hears the
    correct side with probability 0.85), ``open-left``, ``open-right`` (+10 if the tiger is behind the
    other door, -100 otherwise; the problem then resets to the uniform belief and the observation is
    uninformative). ``b0`` is uniform.

    Parameters
    ----------
    discount : float, default=0.95
        Discount factor, in [0, 1].

    Returns
    -------
    POMDP
        The model.
    """
    discount = check_scalar_float(discount, "discount", low=0.0, high=1.0)
    T = np.empty((3, 2, 2))
    T[0] = np.eye(2)
    T[1:] = 0.5
    Z = np.empty((3, 2, 2))
    Z[0] = [[0.85, 0.15], [0.15, 0.85]]
    Z[1:] = 0.5
    r = np.array([[-1.0, -100.0, 10.0], [-1.0, 10.0, -100.0]])
    return POMDP(
        T, Z, r, discount, np.array([0.5, 0.5]),
        ("tiger-left", "tiger-right"), ("listen", "open-left", "open-right"), ("tiger-left", "tiger-right"),
    )


_MAX_DENSE_ELEMS = DENSE_LIMIT_BYTES // 8  # 4 GiB of float64 for T

# The published RockSample maps: rover start cell, rock cells (x, y) in rock order, and the sensor's
# half-efficiency distance d0 (efficiency 2 ** (-d / d0)) used by the file each map comes from.
_STANDARD_MAPS = {
    # Trey Smith's generator gen_RockSample_4_4 (zmdp, src/pomdpModels): efficiency exp(-d),
    # i.e. d0 = ln 2
    (4, 4): ((0, 2), ((3, 1), (2, 1), (1, 3), (1, 0)), float(np.log(2.0))),
    # gen_RockSample_5_5 (zmdp): d0 = 4
    (5, 5): ((0, 2), ((2, 4), (0, 4), (3, 3), (2, 2), (4, 1)), 4.0),
    # gen_RockSample_5_7 (zmdp): d0 = 20
    (5, 7): ((0, 2), ((1, 0), (2, 1), (1, 2), (2, 2), (4, 2), (0, 3), (3, 4)), 20.0),
    # gen_RockSample_7_8 (zmdp) and RockSample_7_8.pomdpx distributed with SARSOP: d0 = 20
    (7, 8): ((0, 3), ((2, 0), (0, 1), (3, 1), (6, 3), (2, 4), (3, 4), (5, 5), (1, 6)), 20.0),
    # RockSample_11_11.pomdpx distributed with SARSOP (AdaCompNUS/sarsop, examples/POMDPX): d0 = 20
    (11, 11): ((0, 5), ((0, 3), (0, 7), (1, 8), (2, 4), (3, 3), (3, 8), (4, 3), (5, 8), (6, 1), (9, 3), (9, 9)),
               20.0),
}


def rock_sample_map(n, k):
    """The published RockSample(n, k) map: ``(start, rocks, half_efficiency_distance)``.

    ``start`` is the rover's start cell ``(x, y)``, ``rocks`` an int array ``(k, 2)`` of rock cells
    ``(x, y)`` in rock order (``x`` east, ``y`` north, as in :func:`rock_sample`), and
    ``half_efficiency_distance`` the ``d0`` of the sensor efficiency ``2 ** (-d / d0)`` in the
    published model file. Maps exist for (4, 4), (5, 5), (5, 7), (7, 8) and (11, 11):

    * (4, 4), (5, 5), (5, 7), (7, 8): Trey Smith's RockSample generators for Smith & Simmons,
      "Heuristic search value iteration for POMDPs", UAI 2004 (arXiv:1207.4166), distributed with
      his ZMDP solver (``gen_RockSample_N_K``). (4, 4) uses efficiency ``exp(-d)``, i.e.
      ``d0 = ln 2``; (5, 5) uses ``d0 = 4``; the others ``d0 = 20``.
    * (7, 8) (the same map) and (11, 11): the ``RockSample_7_8.pomdpx`` and
      ``RockSample_11_11.pomdpx`` files distributed with SARSOP (Kurniawati, Hsu & Lee, RSS 2008),
      ``d0 = 20``.

    Every map starts the rover at ``(0, n // 2)``.

    Parameters
    ----------
    n : int
        Side of the grid.
    k : int
        Number of rocks.

    Returns
    -------
    start : tuple of int
        The rover's start cell ``(x, y)``.
    rocks : ndarray of shape (k, 2)
        The rock cells ``(x, y)`` in rock order.
    half_efficiency_distance : float
        The sensor's ``d0``.

    Raises
    ------
    ValueError
        No published map for ``(n, k)``.

    Examples
    --------
    >>> start, rocks, d0 = rock_sample_map(7, 8)
    >>> start, rocks[:2].tolist(), d0
    ((0, 3), [[2, 0], [0, 1]], 20.0)
    """
    n = check_scalar_int(n, "n", low=1)
    k = check_scalar_int(k, "k", low=0)
    if (n, k) not in _STANDARD_MAPS:
        raise ValueError(f"there is no published RockSample map for (n, k) = ({n}, {k}); maps exist for "
                         f"{', '.join(str(key) for key in _STANDARD_MAPS)} (use layout='random' otherwise).")
    start, rocks, d0 = _STANDARD_MAPS[(n, k)]
    return start, np.array(rocks, dtype=np.int64).reshape(k, 2), d0


def _rock_sample_dynamics(n, rocks, d0, A, S, nb):
    """RockSample's ``(nxt, Z, r)`` on the grid cells: the deterministic successor ``nxt[a, s]``, the
    observation probabilities ``Z`` of the checks and the rewards ``r``; the terminal state's row of
    ``nxt`` and the ``none`` observations are set by :func:`rock_sample`."""
    term = S - 1
    nxt = np.empty((A, S), dtype=np.int64)  # the (deterministic) successor of every (a, s)
    Z = np.zeros((A, S, 3))
    r = np.zeros((S, A))
    bits = np.arange(nb)
    moves = [(0, 1), (0, -1), (1, 0), (-1, 0)]  # north, south, east, west
    for x in range(n):
        for y in range(n):
            base = (x * n + y) * nb
            idx = base + bits
            for a, (dx, dy) in enumerate(moves):
                nx, ny = x + dx, y + dy
                if nx >= n:  # exit east
                    nxt[a, idx] = term
                    r[idx, a] = 10.0
                    continue
                nx, ny = min(max(nx, 0), n - 1), min(max(ny, 0), n - 1)
                nxt[a, idx] = (nx * n + ny) * nb + bits
            # sample
            here = [i for i, (rx, ry) in enumerate(rocks) if (rx, ry) == (x, y)]
            if here:
                i = here[0]
                good = (bits >> i) & 1
                nxt[4, idx] = base + (bits & ~(1 << i))
                r[idx, 4] = np.where(good == 1, 10.0, -10.0)
            else:
                nxt[4, idx] = idx
                r[idx, 4] = -10.0
            # checks: state unchanged, observation depends on rock quality in s'
            for i, (rx, ry) in enumerate(rocks):
                a = 5 + i
                nxt[a, idx] = idx
                eta = 2.0 ** (-np.hypot(x - rx, y - ry) / d0)
                acc = 0.5 * (1.0 + eta)
                good = ((bits >> i) & 1) == 1
                Z[a, idx, 1] = np.where(good, acc, 1.0 - acc)
                Z[a, idx, 2] = np.where(good, 1.0 - acc, acc)
    return nxt, Z, r


def rock_sample(n, k, discount=0.95, random_state=0, *, layout=None, half_efficiency_distance=None,
                storage="auto"):
    """RockSample(n, k) of Smith & Simmons (2004), as a :class:`POMDP` (dense ``T`` or per-action CSR).

    * Grid ``n x n``, cells ``(x, y)`` with ``x`` growing east and ``y`` growing north; the rover
      starts at ``(0, n // 2)`` with each rock independently good or bad with probability 1/2.
    * ``layout``: ``"standard"`` places the ``k`` rocks as in the published map (see
      :func:`rock_sample_map`; (4, 4), (5, 5), (5, 7), (7, 8) and (11, 11), whose start cell is
      also ``(0, n // 2)``); ``"random"`` draws ``k`` distinct cells with ``random_state``
      (``numpy.random.default_rng``). The default ``None`` is ``"standard"`` where a published
      map exists for ``(n, k)`` (``random_state`` is then unused) and ``"random"`` otherwise.
    * States: ``(x, y, rock bits)`` numbered ``(x * n + y) * 2**k + bits`` (bit ``i`` set = rock ``i``
      good), plus a terminal absorbing state (last index, reward 0 forever).
      ``S = n**2 * 2**k + 1``.
    * Actions: ``north, south, east, west, sample, check_1 .. check_k`` (``A = 5 + k``). Moves are
      deterministic; a move into the west/north/south wall leaves the rover in place; moving east from
      ``x = n - 1`` exits to the terminal state with reward +10. ``sample`` on a good rock gives +10
      and makes the rock bad; on a bad rock, or where there is no rock, -10.
    * Observations ``none, good, bad``: moves and ``sample`` observe ``none``; ``check_i`` observes
      rock ``i``'s true quality with probability ``(1 + eta) / 2`` where the sensor efficiency is
      ``eta = 2 ** (-d / d0)``, ``d`` the Euclidean distance to the rock and ``d0`` the
      half-efficiency distance: by default the published file's value for a standard map
      (:func:`rock_sample_map`: ``ln 2`` for (4, 4), 4 for (5, 5), 20 otherwise) and 20 for a
      random layout.

    The published model files (Smith's generators, SARSOP's POMDPX files) end the episode with -100
    on a move into a wall or a ``sample`` away from a rock, observe ``good`` after moves and
    ``sample`` (two observations) and number the rocks' bits from the most significant one; none of
    this changes the optimal value (those actions are never worth taking, and a deterministic
    observation carries no information), so ``V*(b0)`` is comparable with published figures.

    Every action is deterministic, so ``T`` has one entry per row. A dense ``T`` has
    ``(5 + k) * S**2`` entries: with ``storage="auto"`` the model is built sparse (per-action CSR,
    from index arrays, no dense ``S x S`` array) when the dense ``T`` would exceed
    :data:`algos.pomdp._model.SPARSE_AUTO_BYTES` (256 MiB; RockSample(5, 7) and larger), dense
    otherwise; ``storage="dense"`` beyond 4 GiB is refused with a ``ValueError`` that gives the size
    (RockSample(7, 8) has S = 12545, 15.2 GiB dense; RockSample(11, 11) S = 247 809).
    Any ``(n, k)`` whose arrays (next states, ``Z``, ``r``, the sparse ``T`` and the state names)
    would exceed the memory budget of the generators (half the physical memory, or
    ``ALGOS_MEMORY_BUDGET_MB``) is refused with a ``ValueError`` that gives the estimate, before
    anything is allocated (``rock_sample(100, 100)`` has S = 100^2 * 2^100 + 1).

    Parameters
    ----------
    n : int
        Side of the grid.
    k : int
        Number of rocks.
    discount : float, default=0.95
        Discount factor.
    random_state : None, int, SeedSequence or Generator, default=0
        Seed of the rock positions (``layout="random"`` only).
    layout : {"standard", "random"} or None, default=None
        Published map or random rock cells; ``None``: the published map where one exists.
    half_efficiency_distance : float or None, default=None
        Distance ``d0`` at which the sensor is right with probability 3/4 (efficiency
        ``2^(-d/d0)``); ``None``: the published file's value for a standard map, 20 otherwise.
    storage : {"auto", "dense", "sparse"}, default="auto"
        Storage of ``T`` (see :class:`POMDP`); ``"auto"`` is sparse above 256 MiB of dense ``T``.

    Returns
    -------
    POMDP
        The model.

    Examples
    --------
    >>> m = rock_sample(7, 8)
    >>> m.n_states, m.is_sparse
    (12545, True)
    """
    n = check_scalar_int(n, "n", low=1)
    k = check_scalar_int(k, "k", low=0, high=n * n)
    discount = check_scalar_float(discount, "discount", low=0.0, high=1.0)
    if layout is None:
        layout = "standard" if (n, k) in _STANDARD_MAPS else "random"
    layout = check_option(layout, "layout", ("standard", "random"))
    if layout == "standard":
        if (n, k) not in _STANDARD_MAPS:
            raise ValueError(f"'layout'='standard' needs a published map and there is none for (n, k) = ({n}, {k}); "
                             f"maps exist for {', '.join(str(key) for key in _STANDARD_MAPS)}; use "
                             f"layout='random'.")
        _, std_rocks, std_d0 = rock_sample_map(n, k)
    if half_efficiency_distance is None:
        half_efficiency_distance = std_d0 if layout == "standard" else 20.0
    d0 = check_scalar_float(half_efficiency_distance, "half_efficiency_distance", low=0.0, closed="neither")
    rng = check_random_state(random_state)
    storage = check_option(storage, "storage", ("auto", "dense", "sparse"))
    A = 5 + k
    # next states (A, S) int64, Z (A, S, 3) and r (S, A) float64, T (one entry per row: 20 bytes) and the
    # state names; Python ints, so the estimate never overflows (2^k itself is not formed for a huge k)
    S_est = n * n * 2 ** min(k, 1000) + 1
    check_memory_budget(S_est * (A * (8 + 24 + 8 + 20) + 64),
                        f"RockSample({n}, {k}) with S = {n}^2 * 2^{k} + 1 states and A = {A} actions",
                        f"'n'={n}, 'k'={k}", hint="choose a smaller grid or fewer rocks")
    nb = 2**k
    S = n * n * nb + 1
    if storage == "dense" and A * S * S > _MAX_DENSE_ELEMS:
        raise ValueError(
            f"RockSample({n}, {k}) has S={S}, A={A}: a dense T would need {A * S * S * 8 / 2**30:.1f} GiB "
            f"(limit 4 GiB)."
        )
    sparse = storage == "sparse" or (storage == "auto" and A * S * S * 8 > SPARSE_AUTO_BYTES)
    if layout == "standard":
        rocks = [(int(x), int(y)) for x, y in std_rocks]
    else:
        cells = rng.choice(n * n, size=k, replace=False) if k else np.zeros(0, dtype=np.int64)
        rocks = [(int(c) // n, int(c) % n) for c in cells]  # (x, y)
    term = S - 1

    nxt, Z, r = _rock_sample_dynamics(n, rocks, d0, A, S, nb)
    bits = np.arange(nb)
    nxt[:, term] = term
    rows = np.arange(S)
    if sparse:
        ptr = np.arange(S + 1, dtype=np.int64)
        T = [scipy.sparse.csr_array((np.ones(S), nxt[a].copy(), ptr), shape=(S, S)) for a in range(A)]
    else:
        T = np.zeros((A, S, S))
        for a in range(A):
            T[a, rows, nxt[a]] = 1.0
    Z[:5, :, 0] = 1.0
    Z[5:, term, 0] = 1.0
    b0 = np.zeros(S)
    b0[(0 * n + n // 2) * nb + bits] = 1.0 / nb

    states = [f"x{x}y{y}r{b:0{k}b}" if k else f"x{x}y{y}" for x in range(n) for y in range(n) for b in range(nb)]
    states.append("terminal")
    actions = ["north", "south", "east", "west", "sample"] + [f"check_{i + 1}" for i in range(k)]
    model = POMDP(T, Z, r, discount, b0, states, actions, ["none", "good", "bad"],
                  storage="sparse" if sparse else "dense")
    model.rock_positions = np.array(rocks, dtype=np.int64).reshape(k, 2)
    return model


# Tag's floor plan: 29 cells as (row, column); rows 4 and 3 span columns 0-9, rows 2, 1 and 0 columns
# 5-7. "north" lowers the row, "south" raises it, "east" raises the column. Cell order and names
# (row v, column h) follow the TagAvoid files distributed with SARSOP.
_TAG_CELLS = tuple([(4, h) for h in range(10)] + [(3, h) for h in range(10)]
                   + [(v, h) for v in (2, 1, 0) for h in (5, 6, 7)])


def tag(discount=0.95):
    """Tag (Pineau, Gordon & Thrun, "Point-based value iteration: an anytime algorithm for POMDPs",
    IJCAI 2003), in the TagAvoid form that SARSOP distributes (``TagAvoid.pomdpx``); 870 states.

    * A robot and a target move on 29 cells (rows 4 and 3: ten cells each; rows 2, 1, 0: three
      cells under columns 5-7). States ``(robot cell, target cell or "tagged")``, numbered
      ``robot * 30 + target`` with the target's ``tagged`` value last (``S = 29 * 30 = 870``); names
      ``r<v><h>_t<v><h>`` and ``r<v><h>_tagged``.
    * Actions ``north, south, east, west, catch``. A move is deterministic; into a wall or off the
      floor plan it leaves the robot in place. ``catch`` leaves both in place and, when robot and
      target share a cell, tags the target. Once tagged, the robot no longer moves and the target
      stays tagged.
    * The target runs away (after any action but ``catch``, from the robot's cell before the move):
      on each axis where it differs from the robot it takes the step away with probability 0.4; on
      an axis where they are level it takes either step with 0.2 each; it stays with 0.2; a step into
      a wall keeps it in place (so it moves away with probability 0.8 where it can, as in the
      paper).
    * Observations: the robot's cell (29 values, the robot's position is fully observed) or ``yes``
      when robot and target share a cell after the action (not after ``catch``).
    * Rewards: -1 for every move (also once tagged); ``catch`` +10 on the target's cell, -10
      elsewhere, 0 once tagged. ``b0``: robot and target uniform and independent over the 29 cells
      (target not tagged).

    This is the TagAvoid model of the file, state by state (the target stays put under ``catch``,
    and moves are charged after tagging, details in which Pineau et al.'s description is silent).
    Published lower bounds at ``b0`` are about -6 (e.g. SARSOP -6.03 and HSVI -6.37 in Kurniawati,
    Hsu & Lee, RSS 2008; PBVI -9.18 in Pineau et al. 2003).

    Parameters
    ----------
    discount : float, default=0.95
        Discount factor.

    Returns
    -------
    POMDP
        The model (870 states, 5 actions, 30 observations).
    """
    discount = check_scalar_float(discount, "discount", low=0.0, high=1.0)
    cells = _TAG_CELLS
    index = {c: i for i, c in enumerate(cells)}
    nc = len(cells)               # 29
    nt = nc + 1                   # target values: cells and "tagged"
    tagged = nc
    S, A, O = nc * nt, 5, nc + 1  # 870, 5, 30
    yes = nc
    steps = [(-1, 0), (1, 0), (0, 1), (0, -1)]  # north, south, east, west as (d row, d column)

    def step(c, d):
        nxt = (cells[c][0] + d[0], cells[c][1] + d[1])
        return index.get(nxt, c)

    T = np.zeros((A, S, S))
    Z = np.zeros((A, S, O))
    r = np.zeros((S, A))
    for rc in range(nc):
        for t in range(nt):
            s = rc * nt + t
            if t == tagged:
                T[:, s, s] = 1.0
                r[s, :4] = -1.0
                continue
            # the target's move away from the robot's current cell (any action but catch)
            (rv, rh), (tv, th) = cells[rc], cells[t]
            move = {t: 0.2}
            for axis, (lo_step, hi_step) in ((0, (steps[0], steps[1])), (1, (steps[3], steps[2]))):
                own, other = (tv, rv) if axis == 0 else (th, rh)
                if own == other:
                    options = [(lo_step, 0.2), (hi_step, 0.2)]
                else:
                    options = [(hi_step if own > other else lo_step, 0.4)]
                for d, p in options:
                    t2 = step(t, d)
                    move[t2] = move.get(t2, 0.0) + p
            for a in range(4):
                rc2 = step(rc, steps[a])
                for t2, p in move.items():
                    T[a, s, rc2 * nt + t2] += p
                r[s, a] = -1.0
            if rc == t:
                T[4, s, rc * nt + tagged] = 1.0
                r[s, 4] = 10.0
            else:
                T[4, s, s] = 1.0
                r[s, 4] = -10.0
    for rc in range(nc):
        for t in range(nt):
            s2 = rc * nt + t
            Z[:, s2, rc] = 1.0
            if t == rc:  # seen: robot and target share the cell after a move
                Z[:4, s2, rc] = 0.0
                Z[:4, s2, yes] = 1.0
    b0 = np.zeros(S)
    for rc in range(nc):
        b0[rc * nt: rc * nt + nc] = 1.0 / (nc * nc)

    names = [f"r{v}{h}" for v, h in cells]
    states = [f"{names[rc]}_{'tagged' if t == tagged else 't' + names[t][1:]}" for rc in range(nc) for t in range(nt)]
    return POMDP(T, Z, r, discount, b0, states, ["north", "south", "east", "west", "catch"], names + ["yes"])
