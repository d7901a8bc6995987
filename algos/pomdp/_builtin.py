"""Benchmark POMDPs generated in code: Tiger and RockSample(n, k)."""

from __future__ import annotations

import numpy as np

from .._validation import check_random_state, check_scalar_float, check_scalar_int
from ._model import POMDP

__all__ = ["tiger", "rock_sample"]


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


_MAX_DENSE_ELEMS = 2**29  # 4 GiB of float64 for T


def rock_sample(n, k, discount=0.95, random_state=0, *, half_efficiency_distance=20.0):
    """RockSample(n, k) of Smith & Simmons (2004), as a dense :class:`POMDP`.

    * Grid ``n x n``, cells ``(x, y)`` with ``x`` growing east and ``y`` growing north; the rover
      starts at ``(0, n // 2)`` with each rock independently good or bad with probability 1/2.
    * ``k`` rocks at distinct cells drawn with ``random_state`` (``numpy.random.default_rng``).
    * States: ``(x, y, rock bits)`` numbered ``(x * n + y) * 2**k + bits`` (bit ``i`` set = rock ``i``
      good), plus a terminal absorbing state (last index, reward 0 forever).
      ``S = n**2 * 2**k + 1``.
    * Actions: ``north, south, east, west, sample, check_1 .. check_k`` (``A = 5 + k``). Moves are
      deterministic; a move into the west/north/south wall leaves the rover in place; moving east from
      ``x = n - 1`` exits to the terminal state with reward +10. ``sample`` on a good rock gives +10
      and makes the rock bad; on a bad rock, or where there is no rock, -10.
    * Observations ``none, good, bad``: moves and ``sample`` observe ``none``; ``check_i`` observes
      rock ``i``'s true quality with probability ``(1 + eta) / 2`` where the sensor efficiency is
      ``eta = 2 ** (-d / d0)``, ``d`` the Euclidean distance to the rock and ``d0`` the half-efficiency
      distance (default 20, as in the paper: efficiency halves every ``d0``).

    Dense ``T`` has ``(5 + k) * S**2`` entries; sizes beyond 4 GiB are refused (RockSample(7, 8) has
    S = 12545).

    Parameters
    ----------
    n : int
        Side of the grid.
    k : int
        Number of rocks.
    discount : float, default=0.95
        Discount factor.
    random_state : None, int, SeedSequence or Generator, default=0
        Seed of the rock positions.
    half_efficiency_distance : float, default=20.0
        Distance at which the sensor is right with probability 3/4 (efficiency ``2^(-d/d0)``).

    Returns
    -------
    POMDP
        The model.
    """
    n = check_scalar_int(n, "n", low=1)
    k = check_scalar_int(k, "k", low=0, high=n * n)
    discount = check_scalar_float(discount, "discount", low=0.0, high=1.0)
    d0 = check_scalar_float(half_efficiency_distance, "half_efficiency_distance", low=0.0, closed="neither")
    rng = check_random_state(random_state)
    nb = 2**k
    S = n * n * nb + 1
    A = 5 + k
    if A * S * S > _MAX_DENSE_ELEMS:
        raise ValueError(
            f"RockSample({n}, {k}) has S={S}, A={A}: a dense T would need {A * S * S * 8 / 2**30:.1f} GiB "
            f"(limit 4 GiB)."
        )
    cells = rng.choice(n * n, size=k, replace=False) if k else np.zeros(0, dtype=np.int64)
    rocks = [(int(c) // n, int(c) % n) for c in cells]  # (x, y)
    term = S - 1

    T = np.zeros((A, S, S))
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
                    T[a, idx, term] = 1.0
                    r[idx, a] = 10.0
                    continue
                nx, ny = min(max(nx, 0), n - 1), min(max(ny, 0), n - 1)
                T[a, idx, (nx * n + ny) * nb + bits] = 1.0
            # sample
            here = [i for i, (rx, ry) in enumerate(rocks) if (rx, ry) == (x, y)]
            if here:
                i = here[0]
                good = (bits >> i) & 1
                T[4, idx, base + (bits & ~(1 << i))] = 1.0
                r[idx, 4] = np.where(good == 1, 10.0, -10.0)
            else:
                T[4, idx, idx] = 1.0
                r[idx, 4] = -10.0
            # checks: state unchanged, observation depends on rock quality in s'
            for i, (rx, ry) in enumerate(rocks):
                a = 5 + i
                T[a, idx, idx] = 1.0
                eta = 2.0 ** (-np.hypot(x - rx, y - ry) / d0)
                acc = 0.5 * (1.0 + eta)
                good = ((bits >> i) & 1) == 1
                Z[a, idx, 1] = np.where(good, acc, 1.0 - acc)
                Z[a, idx, 2] = np.where(good, 1.0 - acc, acc)
    T[:, term, term] = 1.0
    Z[:5, :, 0] = 1.0
    Z[5:, term, 0] = 1.0
    b0 = np.zeros(S)
    b0[(0 * n + n // 2) * nb + bits] = 1.0 / nb

    states = [f"x{x}y{y}r{b:0{k}b}" if k else f"x{x}y{y}" for x in range(n) for y in range(n) for b in range(nb)]
    states.append("terminal")
    actions = ["north", "south", "east", "west", "sample"] + [f"check_{i + 1}" for i in range(k)]
    model = POMDP(T, Z, r, discount, b0, states, actions, ["none", "good", "bad"])
    model.rock_positions = np.array(rocks, dtype=np.int64).reshape(k, 2)
    return model
