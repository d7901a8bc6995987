r"""Indivisible online class matching: HybridRanking (Algorithm B) and the RANKING / Greedy baselines.

All three estimators run ``n_runs`` independent Monte-Carlo replications side by side (one numba
kernel call per batch of items handles all runs) and expose both the realizations
(:attr:`matches_`, :meth:`realizations`) and their average, the empirical ex-ante allocation
(:attr:`allocation_`).

Randomness contract (what makes ``fit`` and any chunking of ``partial_fit`` bit-identical):
``ranks_ = rng.random((n_runs, n_agents))`` is drawn once when the agents become known, and every
batch of ``b`` items draws its tie-breaking keys as ``rng.random((b, n_runs))`` (item-major), so the
keys consumed by item ``t`` do not depend on how the stream was cut into batches.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval

from accel.backend import resolve

from .._validation import (
    RANDOM_STATE_CONSTRAINTS,
    OrderedStrOptions,
)
from ._base import _FairMatchingEstimator
from ._ranking_kernels import (
    FAIR_RULES,
    GREEDY_TIES,
    edge_counts,
    greedy_batch,
    hybrid_ranking_batch,
    ranking_batch,
)

__all__ = ["HybridRanking", "Ranking", "Greedy"]

# items x runs per kernel call: bounds the memory of the tie keys and of one chunk of matches
# (2**22 float64 = 32 MiB); the chunking never changes the result
_KEYS_PER_CHUNK = 1 << 22
# number of chunks a progress bar is split into (verbose >= 1)
_PROGRESS_CHUNKS = 100


class _GrowingMatches:
    """R x n_items int64 buffer with amortised O(1) appends along the items axis."""

    def __init__(self, n_runs):
        self._buf = np.empty((n_runs, 16), dtype=np.int64)
        self.n = 0

    def append(self, match):
        b = match.shape[1]
        if self.n + b > self._buf.shape[1]:
            grown = np.empty((self._buf.shape[0], max(self.n + b, 2 * self._buf.shape[1])), dtype=np.int64)
            grown[:, : self.n] = self._buf[:, : self.n]
            self._buf = grown
        self._buf[:, self.n : self.n + b] = match
        self.n += b

    def view(self):
        v = self._buf[:, : self.n]
        v.flags.writeable = False
        return v


class _IndivisibleMatcher(_FairMatchingEstimator):
    """Shared state of the integral matchers: per-run matched flags, class utilities, matches."""

    _uses_ranks = True

    # ------------------------------------------------------------------ subclass hooks
    def _draws_keys(self):
        return True

    def _kernel(self, indptr, indices, keys):  # pragma: no cover - overridden
        raise NotImplementedError

    # ------------------------------------------------------------------ protocol
    def _start(self, n_agents, agent_class, n_classes):
        R = self.n_runs
        if self._uses_ranks:
            self.ranks_ = self._rng.random((R, n_agents))
        self._matched = np.zeros((R, n_agents), dtype=np.uint8)
        self._class_util = np.zeros((R, n_classes), dtype=np.int64)
        self._matches = _GrowingMatches(R)
        self._agent_class64 = np.ascontiguousarray(agent_class, dtype=np.int64)

    def _step(self, indptr, indices, data):
        R = self.n_runs
        m = indptr.shape[0] - 1
        chunk = max(1, _KEYS_PER_CHUNK // R)
        verbose = int(getattr(self, "verbose", 0))
        bar = None
        if verbose >= 1 and m > 1:
            from tqdm.auto import tqdm

            chunk = max(1, min(chunk, -(-m // _PROGRESS_CHUNKS)))
            bar = tqdm(total=m, desc=type(self).__name__, unit="item")
        for lo in range(0, m, chunk):
            hi = min(m, lo + chunk)
            e0, e1 = int(indptr[lo]), int(indptr[hi])
            sub_indptr = indptr[lo : hi + 1] - e0 if e0 else indptr[lo : hi + 1]
            sub_indices = indices[e0:e1]
            keys = self._rng.random((hi - lo, R)) if self._draws_keys() else None
            match = self._kernel(sub_indptr, sub_indices, keys)
            self._matches.append(match)
            counts = edge_counts(sub_indptr, sub_indices, match)
            if R == 1:
                data[e0:e1] = counts  # exact 0/1
            else:
                np.divide(counts, R, out=data[e0:e1])
            if bar is not None:
                bar.update(hi - lo)
        if bar is not None:
            bar.close()

    # ------------------------------------------------------------------ results
    @property
    def matches_(self):
        """Agent matched to every item seen, in every run, or -1: int64 (n_runs, n_items_seen),
        read-only view."""
        self._check_fitted()
        return self._matches.view()

    @property
    def match_(self):
        """Agent matched to every item in the first run, or -1: int64 (n_items_seen,)."""
        return self.matches_[0]

    @property
    def agent_load_(self):
        """Fraction of runs in which each agent is matched, shape (n_agents,)."""
        self._check_fitted()
        return self._matched.mean(axis=0)

    @property
    def class_utility_runs_(self):
        """Realized utility (matched agents) of each class in each run, int64 (n_runs, n_classes)."""
        self._check_fitted()
        return self._class_util.copy()

    @property
    def class_utility_(self):
        """Mean over runs of the realized class utilities, shape (n_classes,)."""
        self._check_fitted()
        return self._class_util.mean(axis=0)

    @property
    def usw_runs_(self):
        """Size of the matching (utilitarian welfare) of each run, int64 (n_runs,)."""
        self._check_fitted()
        return self._class_util.sum(axis=1)

    @property
    def expected_allocation_(self):
        r"""The empirical ex-ante allocation: mean over runs of the 0/1 matchings (same as
        :attr:`allocation_`), csc_array of shape (n_agents, n_items_seen).

        Linear quantities can be read off it: :func:`~algos.fair_matching.metrics.usw_ratio` of it is
        the mean matching size over OPT (the USW guarantee's quantity) and each class's own utility is
        its mean. Envy is not linear: the value :math:`u_i(X_j)` of a bundle to another class is a
        matching size, and that of the averaged bundle is at least the average value (a fractional
        matching of the mean bundle is the mean of the runs' matchings), so
        ``cef_ratio(instance, expected_allocation_)`` understates the ex-ante CEF that the
        :math:`\gamma/2` guarantee is about (by up to 0.33 on small instances). Use
        :meth:`ex_ante_cef_ratio` for that.
        """
        return self.allocation_

    def ex_ante_cef_ratio(self, instance, *, return_se=False):
        r"""Ex-ante CEF of the runs: :math:`\min_{i
e j}\mathbb E[u_i(X_i)]/\mathbb E[u_i(X_j)]`.

        The quantity of HybridRanking's guarantee :math:`\mathbb E\,u_i(X_i) \ge (\gamma/2)\,\mathbb
        E\,u_i(X_j)` (:func:`theory.fair_matching.cef_lower_bound`), estimated by the means over the
        ``n_runs`` realizations (:func:`~algos.fair_matching.metrics.ex_ante_cef_ratio` on
        :meth:`realizations`). It is not ``cef_ratio`` of :attr:`allocation_`, which values envy on the
        averaged bundles (see :attr:`expected_allocation_`).

        Parameters
        ----------
        instance : OnlineMatchingInstance
            The instance the estimator was fitted on (its edges value the bundles).
        return_se : bool, default=False
            Also return the standard error (needs ``n_runs >= 2``); see
            :func:`~algos.fair_matching.metrics.ex_ante_cef_ratio`.

        Returns
        -------
        float or ExAnteCEF
        """
        from .metrics import ex_ante_cef_ratio

        return ex_ante_cef_ratio(self._check_instance(instance), self.realizations(), return_se=return_se)

    def ex_post_cef_ratio(self, instance, *, return_se=False):
        """Mean over runs of each run's CEF ratio (:func:`~algos.fair_matching.metrics.ex_post_cef_ratio`);
        a different notion from :meth:`ex_ante_cef_ratio`: report both and label them.

        Parameters
        ----------
        instance : OnlineMatchingInstance
            The instance the estimator was fitted on.
        return_se : bool, default=False
            Also return the standard error of the mean (needs at least two runs).

        Returns
        -------
        float or tuple of (float, float)
            The mean ex-post CEF ratio, and its standard error with ``return_se=True``.
        """
        from .metrics import ex_post_cef_ratio

        return ex_post_cef_ratio(self._check_instance(instance), self.realizations(), return_se=return_se)

    def _check_instance(self, instance):
        from ._instance import as_instance

        self._check_fitted()
        instance = as_instance(instance)
        if instance.n_agents != self.n_agents_ or instance.n_items < self.n_items_seen_:
            raise ValueError(
                f"'instance' must be the one the estimator was fitted on ({self.n_agents_} agents, at least "
                f"{self.n_items_seen_} items); got {instance.n_agents} agents and {instance.n_items} items."
            )
        return instance

    def realizations(self, runs=None):
        """The per-run integral allocations, as a list of ``scipy.sparse.csc_array``.

        Parameters
        ----------
        runs : int or array-like of int, optional
            Which runs (default: all ``n_runs``).

        Returns
        -------
        list of csc_array, each of shape (n_agents, n_items_seen)
            Entry ``(a, t)`` is 1.0 when item ``t`` went to agent ``a`` in that run. Their mean is
            :attr:`allocation_`. :meth:`ex_ante_cef_ratio` / :meth:`ex_post_cef_ratio` feed them to
            :func:`~algos.fair_matching.metrics.ex_ante_cef_ratio` /
            :func:`~algos.fair_matching.metrics.ex_post_cef_ratio`.
        """
        M = self.matches_
        if runs is None:
            runs = np.arange(M.shape[0])
        else:
            runs = np.atleast_1d(np.asarray(runs))
            if runs.dtype.kind not in "iu" or runs.ndim != 1:
                raise TypeError(f"'runs' must be an int or a 1-d array of ints; got {runs!r}.")
            bad = (runs < 0) | (runs >= M.shape[0])
            if bad.any():
                raise ValueError(f"'runs' must be in [0, {M.shape[0] - 1}]; got {int(runs[bad][0])}.")
        shape = (self.n_agents_, M.shape[1])
        out = []
        for r in runs:
            row = M[int(r)]
            items = np.flatnonzero(row >= 0)
            out.append(sp.csc_array((np.ones(items.shape[0]), (row[items], items)), shape=shape))
        return out


class HybridRanking(_IndivisibleMatcher):
    r"""HybridRanking: a class-fair tier of ranks below ``gamma``, then KVV RANKING.

    Indivisible online class matching (Borst & Springer, 2026; Algorithm B of the fair_matching reconstruction notes).
    Every agent draws a rank :math:`y_a \sim U[0, 1)` once. When item ``t`` arrives, let ``U`` be its
    unmatched neighbours (if none, ``t`` is dropped) and :math:`U_\gamma = \{a \in U: y_a < \gamma\}`.

    1. **Fair tier** (:math:`U_\gamma \ne \emptyset`): among the classes present in
       :math:`U_\gamma`, pick a class: with ``fair_rule="min_utility"`` one of least current
       realized utility (number of matched agents), with ``fair_rule="random_class"`` any; ties
       and the choice are uniformly random. Match ``t`` to that class's agent in
       :math:`U_\gamma` of smallest rank.
    2. **Efficiency tier**: match ``t`` to :math:`\arg\min_{a \in U} y_a` (KVV RANKING).

    ``gamma = 0`` is RANKING; ``gamma = 1`` always uses the fair tier (a class-fair randomised
    greedy, the reconstruction of H24's 1/2-CEF, 1/2-USW algorithm).

    .. note:: reconstructed: only the algorithm's name and guarantees are known from the paper's
       abstract and summaries; the two tiers above are the project's reconstruction (fair_matching reconstruction notes,
       section 1.3 [R]).

    Parameters
    ----------
    gamma : float in [0, 1], default=0.5
        Rank threshold of the fair tier.
    fair_rule : {"min_utility", "random_class"}, default="min_utility"
        How the fair tier chooses a class.
    n_runs : int >= 1, default=1
        Independent Monte-Carlo replications run side by side (each with its own ranks and
        tie-breaking keys). ``allocation_`` averages them; :meth:`ex_ante_cef_ratio` and
        :meth:`ex_post_cef_ratio` evaluate the CEF guarantee on them.
    backend : {"auto", "numpy", "torch", "numba"}, default="auto"
        ``"numpy"`` (or ``"numba"``): the numba kernel (runs in parallel threads when ``n_runs >= 8``
        and the runs times the edges of a batch reach 2e6).
        ``"torch"``: :func:`accel.fair_matching.hybrid_ranking_batched`, all runs as rows of
        tensors (needs torch). Both give identical matches. ``"auto"`` picks torch when ``device`` names an
        accelerator and the CPU path otherwise; see the "Backends: one rule" section of the scaling page.
    device : str or torch.device, optional
        Device of the torch backend (default: CUDA when available); ignored by ``"numpy"``.
    verbose : int, default=0
        ``>= 1`` shows a tqdm progress bar over the items of each call.
    random_state : None, int, SeedSequence or Generator, default=None

    Attributes
    ----------
    ranks_ : ndarray of shape (n_runs, n_agents)
        The ranks of every run.
    matches_ : ndarray of int64, shape (n_runs, n_items_seen)
        Agent each item went to in each run, or -1 (read-only view).
    match_ : ndarray of int64, shape (n_items_seen,)
        ``matches_[0]``.
    allocation_ : scipy.sparse.csc_array, shape (n_agents, n_items_seen)
        Fraction of runs in which each edge was used (the empirical ex-ante allocation; the 0/1
        matching itself when ``n_runs=1``); also ``expected_allocation_``. Right for the USW
        guarantee (``usw_ratio`` of it is the mean matching size over OPT), **not** for the CEF one:
        ``cef_ratio`` of it values envy on averaged bundles and understates the ex-ante CEF; use
        :meth:`ex_ante_cef_ratio`.
    agent_load_ : ndarray of shape (n_agents,)
        Fraction of runs in which each agent is matched.
    class_utility_ : ndarray of shape (n_classes,)
        Mean realized class utility; ``class_utility_runs_`` (n_runs, n_classes) per run.
    usw_runs_ : ndarray of int64, shape (n_runs,)
        Matching size of each run; ``usw_`` is its mean.
    backend_ : {"numpy", "torch"}
        The backend actually used.
    n_agents_, agent_class_, n_classes_, n_items_seen_ : as for every online allocator.

    Raises
    ------
    ValueError
        ``gamma`` outside [0, 1], ``n_runs < 1``, an unknown ``fair_rule`` or ``backend``.
    ImportError
        ``backend="torch"`` without torch installed.

    See Also
    --------
    Ranking, Greedy, ThresholdEqualFilling, theory.fair_matching.usw_lower_bound

    Notes
    -----
    Cost: :math:`O(\deg(t) + c_t \log c_t)` per item and run (:math:`c_t` = classes present in
    the fair tier), memory :math:`O(R (n + k + m))` for ``R = n_runs`` (the matches of every run
    are kept: 8 bytes per run and item). Guarantees (fair_matching reconstruction notes, T3, [C] formulas, [D]/[R]
    proofs):
    :math:`\mathbb E[\mathrm{ALG}] \ge (1 - e^{\gamma-1}/(1+\gamma))\,\mathrm{OPT}` and
    :math:`\mathbb E\, u_i(X_i) \ge (\gamma/2)\, \mathbb E\, u_i(X_j)`; tested by Monte Carlo in
    ``tests/fair_matching/test_indivisible.py``.

    References
    ----------
    S. Borst, M. Springer. Beyond the Half-Approximation: Fair and Efficient Online Class
    Matching. arXiv:2605.23408, 2026.
    R. M. Karp, U. V. Vazirani, V. V. Vazirani. An optimal algorithm for on-line bipartite
    matching. STOC 1990.

    Examples
    --------
    >>> from algos.fair_matching import triangular_instance
    >>> inst = triangular_instance(6, n_classes=2)
    >>> est = HybridRanking(gamma=0.5, n_runs=200, random_state=0).fit(inst)
    >>> est.matches_.shape
    (200, 6)
    >>> bool(est.usw_runs_.min() >= 3)  # non-wasteful, hence at least half of OPT = 6
    True
    """

    _parameter_constraints: dict = {
        "backend": [OrderedStrOptions(("auto", "numpy", "torch", "numba"))],
        "device": "no_validation",  # None, a str or a torch.device: resolved (and checked) by the backend layer
        "fair_rule": [OrderedStrOptions(("min_utility", "random_class"))],
        "gamma": [Interval(Real, 0, 1, closed="both")],
        "n_runs": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "verbose": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, *, gamma=0.5, fair_rule="min_utility", n_runs=1, backend="auto", device=None, verbose=0,
                 random_state=None):
        self.gamma = gamma
        self.fair_rule = fair_rule
        self.n_runs = n_runs
        self.backend = backend
        self.device = device
        self.verbose = verbose
        self.random_state = random_state

    def _check_unconstrained(self):
        # the one statement of the 'device' rule ("no_validation" in the constraints: a torch.device cannot
        # be named there without importing torch)
        if self.device is not None and not isinstance(self.device, str) and type(self.device).__name__ != "device":
            raise TypeError(
                f"'device' must be None, a str or a torch.device; got {self.device!r} of type "
                f"{type(self.device).__name__}."
            )

    def _start(self, n_agents, agent_class, n_classes):
        super()._start(n_agents, agent_class, n_classes)
        self.backend_ = resolve(self.backend, self.device, (agent_class,))
        self._gamma = float(self.gamma)
        self._rule = FAIR_RULES[self.fair_rule]

    def _kernel(self, indptr, indices, keys):
        if self.backend_ == "torch":
            from accel.fair_matching import hybrid_ranking_batched

            return hybrid_ranking_batched(
                indptr, indices, self._agent_class64, self.n_classes_, self._gamma, self._rule, self.ranks_,
                keys, self._matched, self._class_util, device=self.device,
            )
        return hybrid_ranking_batch(
            indptr, indices, self._agent_class64, self.n_classes_, self._gamma, self._rule, self.ranks_, keys,
            self._matched, self._class_util,
        )


class Ranking(_IndivisibleMatcher):
    r"""KVV RANKING: every item goes to its unmatched neighbour of smallest random rank.

    Each agent draws a rank :math:`y_a \sim U[0, 1)` once (equivalently, a random permutation);
    item ``t`` is matched to :math:`\arg\min_{a \in U} y_a` over its unmatched neighbours ``U``
    (ties: lowest id), or dropped if ``U`` is empty. :math:`\mathbb E[\mathrm{ALG}] \ge (1 - 1/e)
    \mathrm{OPT}` (Karp, Vazirani, Vazirani 1990), tight on the upper-triangular instance. It is
    :class:`HybridRanking` with ``gamma=0`` (same ranks, same matches for the same
    ``random_state``), written as its own simple kernel.

    Parameters
    ----------
    n_runs : int >= 1, default=1
        Independent Monte-Carlo replications.
    verbose : int, default=0
    random_state : None, int, SeedSequence or Generator, default=None

    Attributes
    ----------
    ranks_, matches_, match_, allocation_, expected_allocation_, agent_load_, class_utility_, class_utility_runs_,
    usw_runs_
        As in :class:`HybridRanking`.

    See Also
    --------
    HybridRanking, Greedy, WaterFilling

    Examples
    --------
    >>> from algos.fair_matching import triangular_instance
    >>> est = Ranking(n_runs=500, random_state=0).fit(triangular_instance(20))
    >>> bool(0.6 < est.usw_ / 20 < 0.8)
    True
    """

    _parameter_constraints: dict = {
        "n_runs": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "verbose": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, *, n_runs=1, verbose=0, random_state=None):
        self.n_runs = n_runs
        self.verbose = verbose
        self.random_state = random_state

    def _draws_keys(self):
        return False

    def _kernel(self, indptr, indices, keys):
        return ranking_batch(indptr, indices, self._agent_class64, self.ranks_, self._matched, self._class_util)


class Greedy(_IndivisibleMatcher):
    r"""Greedy: every item goes to an unmatched neighbour (any), or is dropped if there is none.

    Non-wasteful, hence :math:`\mathrm{ALG} \ge \mathrm{OPT}/2` on every instance; no CEF guarantee.

    Parameters
    ----------
    tie : {"random", "first"}, default="random"
        ``"random"``: a uniformly random unmatched neighbour (fresh randomness per item and run);
        ``"first"``: the unmatched neighbour of lowest id (deterministic: all runs coincide).
    n_runs : int >= 1, default=1
    verbose : int, default=0
    random_state : None, int, SeedSequence or Generator, default=None

    Attributes
    ----------
    matches_, match_, allocation_, expected_allocation_, agent_load_, class_utility_, class_utility_runs_, usw_runs_
        As in :class:`HybridRanking` (no ``ranks_``).

    See Also
    --------
    Ranking, HybridRanking

    Examples
    --------
    >>> from algos.fair_matching import triangular_instance
    >>> Greedy(tie="first").fit(triangular_instance(4)).match_.tolist()
    [0, 1, 2, 3]
    """

    _parameter_constraints: dict = {
        "n_runs": [Interval(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "tie": [OrderedStrOptions(("first", "random"))],
        "verbose": [Interval(Integral, 0, None, closed="left")],
    }

    _uses_ranks = False

    def __init__(self, *, tie="random", n_runs=1, verbose=0, random_state=None):
        self.tie = tie
        self.n_runs = n_runs
        self.verbose = verbose
        self.random_state = random_state

    def _start(self, n_agents, agent_class, n_classes):
        super()._start(n_agents, agent_class, n_classes)
        self._tie = GREEDY_TIES[self.tie]

    def _draws_keys(self):
        return self._tie == 1

    def _kernel(self, indptr, indices, keys):
        return greedy_batch(indptr, indices, self._agent_class64, self._tie, keys, self._matched, self._class_util)
