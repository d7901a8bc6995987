r"""``assert_*`` checkers: a module's theorem asserted on any user allocator, estimator or controller.

Each checker builds instances on which the theorem is nearly tight, runs the user's object on them,
computes the guaranteed quantity through its ``theory`` function and raises ``AssertionError`` (with
the instance, the empirical value and the bound) when the guarantee fails. On success it returns a
:class:`CheckResult` whose ``tightness`` (empirical / bound for an upper bound, bound / empirical
for a lower bound; at most 1 when the check passes) says how close the instances came.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = [
    "CheckResult",
    "assert_matching_guarantees",
    "assert_huber_rate",
    "assert_krr_path_bound",
    "assert_controller_certificates",
    "assert_streaming_matches_batch",
    "assert_mixing_rule_optimal",
    "assert_quadrature_bound",
]


class CheckResult(NamedTuple):
    """Outcome of a passing check: ``tightness`` in [0, 1] (1 = the bound is met with equality)
    over ``n_cases`` cases; ``rows`` holds one dict per case (the empirical value and the bound)."""

    name: str
    n_cases: int
    tightness: float
    rows: list


def _fail(name, row, what):
    detail = ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items())
    raise AssertionError(f"{name}: {what} ({detail})")


def _result(name, rows, key="tightness"):
    return CheckResult(name, len(rows), float(max((r[key] for r in rows), default=0.0)), rows)


# ----------------------------------------------------------------------------- fair_matching
def _allocate(allocator, instance):
    if hasattr(allocator, "fit"):
        from sklearn.base import clone

        return clone(allocator).fit(instance).allocation_
    return allocator(instance)


def assert_matching_guarantees(allocator, gamma, instances=None, *, rtol=0.0, atol=1e-7, n_random=12,
                               n_adversarial=2, n_steps=100, random_state=0):
    r"""Assert the threshold guarantees on a divisible online allocator:
    :math:`\mathrm{USW} \ge 1 - e^{\gamma-1}/(1+\gamma)` and :math:`\mathrm{CEF} \ge 1 - e^{-\gamma}`
    (:func:`theory.fair_matching.usw_lower_bound`, :func:`theory.fair_matching.cef_lower_bound`).

    Parameters
    ----------
    allocator : estimator or callable
        An estimator with ``fit(instance)`` setting ``allocation_`` (cloned for each instance), or a
        function ``instance -> allocation`` (agents x items, array or sparse) for a rule of your own.
    gamma : float in [0, 1]
        The threshold whose guarantees are claimed.
    instances : iterable of OnlineMatchingInstance, optional
        Default: the upper-triangular (KVV) instances with 2 and 3 classes, where water-filling is
        tight, ``n_random`` Erdos-Renyi instances and, for each guarantee, ``n_adversarial``
        instances found by :func:`~algos.fair_matching.hill_climb_instance` (``n_steps`` steps of
        local search that push *your* allocator's ratio towards the bound).
    rtol, atol : float, default=0 and 1e-7
        ``ratio >= bound * (1 - rtol) - atol`` (exact pours: only round-off).
    n_random : int, default=12
    n_adversarial, n_steps : int, default=2 and 100
    random_state : int, default=0

    Returns
    -------
    CheckResult

    Raises
    ------
    AssertionError
        On the first instance where a guarantee fails.

    Examples
    --------
    >>> import numpy as np
    >>> from algos.fair_matching import ThresholdEqualFilling
    >>> from algos.testing import assert_matching_guarantees
    >>> assert_matching_guarantees(ThresholdEqualFilling(gamma=0.5), 0.5).n_cases
    20

    A rule of your own, here "all to the first neighbour" (greedy, class-blind), fails:

    >>> def first_neighbour(inst):
    ...     X = np.zeros((inst.n_agents, inst.n_items))
    ...     load = np.zeros(inst.n_agents)
    ...     for t in range(inst.n_items):
    ...         free = [a for a in inst.neighbors(t) if load[a] < 1]
    ...         if free:
    ...             X[free[0], t] = 1.0
    ...             load[free[0]] += 1
    ...     return X
    >>> assert_matching_guarantees(first_neighbour, 0.5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    AssertionError: matching guarantees: ...
    """
    from algos.fair_matching import cef_ratio, hill_climb_instance, random_instance, triangular_instance, usw_ratio
    from theory.fair_matching import cef_lower_bound, usw_lower_bound

    usw_b, cef_b = usw_lower_bound(gamma), cef_lower_bound(gamma)
    if instances is None:
        rng = np.random.default_rng(random_state)
        instances = [triangular_instance(n, n_classes=k) for n, k in ((6, 2), (9, 3), (8, 2), (12, 3))]
        instances += [random_instance(int(rng.integers(3, 9)), int(rng.integers(2, 12)),
                                      n_classes=int(rng.integers(2, 4)),
                                      p=float(rng.uniform(0.2, 0.8)), random_state=int(rng.integers(2**31)))
                      for _ in range(n_random)]
        for metric, bound in ((usw_ratio, usw_b), (cef_ratio, cef_b)):
            def objective(inst, metric=metric, bound=bound):
                return float(metric(inst, _allocate(allocator, inst))) - bound

            for _ in range(n_adversarial):
                inst, _, _ = hill_climb_instance(objective, 5, 6, n_classes=2, n_steps=n_steps,
                                                 random_state=int(rng.integers(2**31)))
                instances.append(inst)
    rows = []
    for i, inst in enumerate(instances):
        X = _allocate(allocator, inst)
        usw, cef = float(usw_ratio(inst, X)), float(cef_ratio(inst, X))
        row = {"instance": i, "usw": usw, "usw_bound": usw_b, "cef": cef, "cef_bound": cef_b,
               "tightness": max(usw_b / usw if usw > 0 else math.inf, cef_b / cef if cef > 0 else math.inf)}
        if usw < usw_b * (1 - rtol) - atol:
            _fail("matching guarantees", row, "welfare ratio below usw_lower_bound(gamma)")
        if cef < cef_b * (1 - rtol) - atol:
            _fail("matching guarantees", row, "class envy-freeness below cef_lower_bound(gamma)")
        rows.append(row)
    return _result("matching guarantees", rows)


# ----------------------------------------------------------------------------- hetero_regression
def assert_huber_rate(estimator, *, n=4000, d=5, m=None, n_draws=30, alpha=0.01, random_state=0):
    r"""Assert the subset-of-signals error bound :math:`\|\hat\beta-\beta^*\| \le C\sqrt{nd}/m` with
    the calibrated coverage (:func:`theory.hetero_regression.huber_error_bound`,
    ``HUBER_CALIBRATION["coverage"]``) on a regression estimator.

    ``n_draws`` data sets of :func:`~algos.hetero_regression.make_subset_of_signals` (``m`` signals,
    default the regime threshold :func:`theory.hetero_regression.huber_regime_threshold`, rounded up);
    the bound may fail on at most the binomial ``1 - alpha`` quantile of ``n_draws`` draws at the
    calibrated miss rate, so a correct estimator fails the check with probability at most ``alpha``
    while one with half the coverage fails it almost surely.

    Returns
    -------
    CheckResult
        ``tightness``: the median of error / bound over the draws.

    Examples
    --------
    >>> from algos.hetero_regression import HuberSoSRegressor
    >>> from algos.testing import assert_huber_rate
    >>> res = assert_huber_rate(HuberSoSRegressor(), n_draws=10)
    >>> 0 < res.tightness < 1
    True

    Ordinary least squares does not reach the rate:

    >>> from sklearn.linear_model import LinearRegression
    >>> assert_huber_rate(LinearRegression(fit_intercept=False), n_draws=10)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    AssertionError: Huber rate: ...
    """
    from scipy.stats import binom
    from sklearn.base import clone

    from algos.hetero_regression import make_subset_of_signals
    from theory.hetero_regression import HUBER_CALIBRATION, huber_error_bound, huber_regime_threshold

    if m is None:
        m = min(n, int(math.ceil(huber_regime_threshold(n, d))))
    bound = huber_error_bound(n, d, m)
    miss = 1.0 - HUBER_CALIBRATION["coverage"]
    allowed = int(binom.ppf(1.0 - alpha, n_draws, miss))
    seeds = np.random.SeedSequence(random_state).spawn(n_draws)
    rows, misses = [], 0
    for i, ss in enumerate(seeds):
        data = make_subset_of_signals(n, d, m, random_state=np.random.default_rng(ss))
        est = clone(estimator).fit(data.X, data.y)
        err = float(np.linalg.norm(np.ravel(est.coef_) - data.beta))
        misses += err > bound
        rows.append({"draw": i, "error": err, "bound": bound, "tightness": err / bound})
    ratio = float(np.median([r["tightness"] for r in rows]))
    if misses > allowed:
        _fail("Huber rate", {"n": n, "d": d, "m": m, "misses": misses, "allowed": allowed, "draws": n_draws,
                             "median_error_over_bound": ratio},
              "the error bound fails on more draws than the calibrated coverage allows")
    return CheckResult("Huber rate", n_draws, ratio, rows)


# ----------------------------------------------------------------------------- networked_learning
def assert_krr_path_bound(protocol, *, d=4, rho=1.0, multiples=(1, 2, 4, 16, 64), n_models=3, rtol=1e-9, atol=1e-12,
                          random_state=0):
    r"""Assert the depth bound on a path (T1): the last agent's excess risk
    :math:`e_D \le A B\sqrt{(M-1)e_1/\lfloor D/M\rfloor}` (:func:`theory.networked_learning.krr_path_bound`)
    for a networked least-squares protocol.

    Parameters
    ----------
    protocol : callable
        ``protocol(graph, feature_sets, Sigma, b) -> {agent: excess risk}``: the population excess
        risk of each agent when agents learn in topological order (the library's is
        ``population_fit(..., return_excess=True)[1]``).
    d : int, default=4
        Features, allocated cyclically along the path (coverage number ``M = d``).
    rho : float, default=1.0
        Common-factor design :math:`\Sigma = 11^\top + \rho^2 I` (``beta*`` standard normal).
    multiples : tuple of int
        Path lengths ``D = M * multiple``; the long paths are where a protocol that loses the
        parents' information stays above the bound (which decays like ``floor(D/M)^{-1/2}``).

    Examples
    --------
    >>> from algos.networked_learning import population_fit
    >>> from algos.testing import assert_krr_path_bound
    >>> res = assert_krr_path_bound(lambda g, fs, S, b: population_fit(g, fs, S, b, return_excess=True)[1])
    >>> res.n_cases
    15

    Agents that ignore their parents (each fits only its own feature) break the bound:

    >>> import numpy as np
    >>> def no_messages(g, fs, S, b):
    ...     out = {}
    ...     for v in g.nodes():
    ...         j = fs[v][0]
    ...         beta = np.zeros(len(b)); beta[j] = b[j] / S[j, j]
    ...         star = np.linalg.solve(S, b)
    ...         out[v] = float((beta - star) @ S @ (beta - star))
    ...     return out
    >>> assert_krr_path_bound(no_messages)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    AssertionError: path depth bound: ...
    """
    from algos.networked_learning import cyclic_allocation, make_path
    from theory.networked_learning import krr_path_bound

    rng = np.random.default_rng(random_state)
    rows = []
    for k in range(n_models):
        Sigma = np.ones((d, d)) + rho**2 * np.eye(d)
        beta_star = rng.standard_normal(d)
        b = Sigma @ beta_star
        A, B = float(np.abs(beta_star).sum()), math.sqrt(float(np.max(np.diag(Sigma))))
        for mult in multiples:
            D = d * mult
            g = make_path(D)
            exc = protocol(g, cyclic_allocation(g, d), Sigma, b)
            e1, eD = float(exc[0]), float(exc[D - 1])
            bound = krr_path_bound(e1, A, B, d, D)
            row = {"model": k, "D": D, "e_D": eD, "bound": bound, "tightness": eD / bound if bound > 0 else 0.0}
            if eD > bound * (1 + rtol) + atol:
                _fail("path depth bound", row, "last agent's excess risk above krr_path_bound")
            rows.append(row)
    return _result("path depth bound", rows)


# ----------------------------------------------------------------------------- pomdp
def assert_controller_certificates(controller, pomdp, *, solver=None, tol=1e-7):
    r"""Assert the certificates of a finite-state controller on a POMDP: the memory table is total
    (:func:`theory.pomdp.check_fsc`), its exact value is at most the upper bound of ``V*(b0)``, and its
    loss is at least the converse lower bound of every controller with as many memory states
    (:func:`~algos.pomdp.converse_lower_bound`, :func:`theory.pomdp.converse_depth1`):
    :math:`V^F(b_0) \le \overline V(b_0) - \mathrm{LB}_K`.

    Parameters
    ----------
    controller : fitted controller or tuple
        An object with ``action_`` (K,), ``eta_`` ((K, O) or (K, A, O)) and ``m0_``, or a tuple
        ``(action, eta, m0)``.
    pomdp : POMDP
    solver : fitted PBVI, optional
        Brackets of ``V*``; default ``PBVI(n_beliefs=300, max_iter=1000, tol=1e-9, random_state=0)``.
    tol : float, default=1e-7
        Slack for the linear solves.

    Returns
    -------
    CheckResult
        ``tightness``: value / (upper bound - converse bound) on the reward scale shifted so that the
        worst reward is 0 (1 = the controller meets the certificate).

    Examples
    --------
    >>> from algos.pomdp import tiger
    >>> from algos.testing import assert_controller_certificates
    >>> listen_forever = ([0], [[0, 0]], 0)   # one memory state, always "listen"
    >>> assert_controller_certificates(listen_forever, tiger()).n_cases
    1

    A controller claiming more than the optimum is caught (here its memory table points to a
    state that does not exist):

    >>> assert_controller_certificates(([0], [[0, 3]], 0), tiger())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    AssertionError: controller certificates: ...
    """
    from algos.pomdp import PBVI, converse_lower_bound, evaluate_fsc
    from theory.pomdp import check_fsc

    if isinstance(controller, tuple):
        action, eta, m0 = controller
    else:
        action, eta, m0 = controller.action_, controller.eta_, controller.m0_
    action, eta = np.asarray(action), np.asarray(eta)
    A, O = np.asarray(pomdp.Z).shape[0], np.asarray(pomdp.Z).shape[2]
    cert = check_fsc(action, eta, A, O, m0)
    if not cert.ok:
        _fail("controller certificates", {"violations": cert.violations[:3]}, "the memory table is not total")
    if solver is None:
        solver = PBVI(n_beliefs=300, max_iter=1000, tol=1e-9, random_state=0).fit(pomdp)
    value = float(evaluate_fsc(pomdp, action, eta, int(m0)))
    K = int(len(action))
    lb = converse_lower_bound(pomdp, K, solver=solver)
    upper = float(solver.upper_bound_)
    r = np.asarray(pomdp.r)
    floor = float(r.min()) / (1.0 - float(pomdp.discount))
    row = {"K": K, "value": value, "upper": upper, "converse": float(lb.bound),
           "tightness": (value - floor) / max(upper - float(lb.bound) - floor, 1e-300)}
    if value > upper + tol * (1 + abs(upper)):
        _fail("controller certificates", row, "value above the upper bound of V*(b0)")
    if value > upper - float(lb.bound) + tol * (1 + abs(upper)):
        _fail("controller certificates", row, "loss below the converse lower bound for K memory states")
    return CheckResult("controller certificates", 1, row["tightness"], [row])


# ----------------------------------------------------------------------------- continual
def assert_streaming_matches_batch(estimator, X, y, *, n_tasks=5, rtol=1e-8, atol=1e-10):
    r"""Assert that a streaming classifier fed class-incremental tasks (``partial_fit`` task by task,
    classes in order) ends exactly where one ``fit`` on all the data does: the exactness of streaming
    LDA (Chan-Welford merges of means and scatter), whatever the split.

    The decision functions (or ``predict_proba`` without one) on ``X`` are compared at
    ``rtol``/``atol``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from algos.continual import StreamingLDA
    >>> from algos.testing import assert_streaming_matches_batch
    >>> X, y = load_iris(return_X_y=True)
    >>> assert_streaming_matches_batch(StreamingLDA(shrinkage=1e-3), X, y, n_tasks=3).n_cases
    3

    Forgetting the between-batch term of the covariance merge is caught:

    >>> class NaiveLDA(StreamingLDA):
    ...     def partial_fit(self, X, y, classes=None):
    ...         old = getattr(self, "means_", None)
    ...         super().partial_fit(X, y, classes)
    ...         self._scatter *= 0.5 if old is not None else 1.0
    ...         self._cache.value = None
    ...         return self
    >>> assert_streaming_matches_batch(NaiveLDA(shrinkage=1e-3), X, y, n_tasks=3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    AssertionError: streaming vs batch: ...
    """
    from sklearn.base import clone

    X, y = np.asarray(X), np.asarray(y)
    classes = np.unique(y)
    order = np.argsort(np.searchsorted(classes, y), kind="stable")
    tasks = np.array_split(classes, min(n_tasks, len(classes)))
    batch = clone(estimator).fit(X, y)
    stream = clone(estimator)
    for t, task in enumerate(tasks):
        idx = order[np.isin(y[order], task)]
        stream.partial_fit(X[idx], y[idx], classes=classes) if t == 0 else stream.partial_fit(X[idx], y[idx])
    score = "decision_function" if hasattr(batch, "decision_function") else "predict_proba"
    a, b = getattr(batch, score)(X), getattr(stream, score)(X)
    err = float(np.max(np.abs(a - b) / (atol + rtol * np.abs(a))))
    row = {"tasks": len(tasks), "max_scaled_difference": err, "tightness": min(err, 1.0)}
    if not np.allclose(b, a, rtol=rtol, atol=atol):
        _fail("streaming vs batch", row, f"{score} after {len(tasks)} tasks differs from the batch fit")
    return CheckResult("streaming vs batch", len(tasks), row["tightness"], [row])


# ----------------------------------------------------------------------------- federated
def assert_mixing_rule_optimal(rule, *, pairs=((1.0, 4.0), (4.0, 1.0), (1.0, 1.0), (0.2, 5.0)), p=20, n_draws=4000,
                               n_se=4.0, random_state=0):
    r"""Assert that a model-merging rule ``rule(v_fed, v_loc) -> lambda`` attains the optimal bound
    :math:`U(\lambda^*) = (1/V_F + 1/V_L)^{-1}` (:func:`theory.federated.optimal_bound`), which is below
    both endpoints :math:`V_F` (federated model) and :math:`V_L` (local model).

    For each pair ``(V_F, V_L)`` the merged model :math:`\lambda\theta_F + (1-\lambda)\theta_L` is drawn
    ``n_draws`` times with independent Gaussian errors of those second moments in ``p`` dimensions;
    the Monte-Carlo risk :math:`E\|\theta(\lambda)-\theta^*\|^2` must agree with
    :func:`theory.federated.variance_trace_bound` and be at most the optimal bound, both within
    ``n_se`` standard errors.

    Examples
    --------
    >>> from theory.federated import optimal_lambda
    >>> from algos.testing import assert_mixing_rule_optimal
    >>> res = assert_mixing_rule_optimal(optimal_lambda)
    >>> res.n_cases
    4

    Always averaging with weight 1/2 is not optimal when the variances differ:

    >>> assert_mixing_rule_optimal(lambda vf, vl: 0.5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    AssertionError: mixing rule: ...
    """
    from theory.federated import optimal_bound, variance_trace_bound

    rng = np.random.default_rng(random_state)
    rows = []
    for vf, vl in pairs:
        lam = float(rule(vf, vl))
        eF = rng.normal(scale=math.sqrt(vf / p), size=(n_draws, p))
        eL = rng.normal(scale=math.sqrt(vl / p), size=(n_draws, p))
        risk = np.sum((lam * eF + (1 - lam) * eL) ** 2, axis=1)
        mean, se = float(risk.mean()), float(risk.std(ddof=1) / math.sqrt(n_draws))
        u, u_star = float(variance_trace_bound(lam, vf, vl)), float(optimal_bound(vf, vl))
        row = {"v_fed": vf, "v_loc": vl, "lam": lam, "risk": mean, "se": se, "U(lam)": u, "U(lam*)": u_star,
               "tightness": u_star / max(mean, 1e-300)}
        if abs(mean - u) > n_se * se:
            _fail("mixing rule", row, "Monte-Carlo risk disagrees with variance_trace_bound(lam)")
        if mean > u_star + n_se * se:
            _fail("mixing rule", row, "risk above the optimal bound U(lambda*)")
        rows.append(row)
    return CheckResult("mixing rule", len(rows), float(min(r["tightness"] for r in rows)), rows)


# ----------------------------------------------------------------------------- point_process
def _rect_cell_radius(nodes, box):
    """Largest distance from a node to a point of its Voronoi cell clipped to the rectangle ``box``
    (cells of the nodes and their mirror images in the four sides are exactly the clipped cells)."""
    from scipy.spatial import Voronoi

    x0, x1, y0, y1 = box
    P = np.asarray(nodes, dtype=float)
    mirrors = [P, np.column_stack([2 * x0 - P[:, 0], P[:, 1]]), np.column_stack([2 * x1 - P[:, 0], P[:, 1]]),
               np.column_stack([P[:, 0], 2 * y0 - P[:, 1]]), np.column_stack([P[:, 0], 2 * y1 - P[:, 1]])]
    vor = Voronoi(np.concatenate(mirrors))
    h = 0.0
    for i in range(len(P)):
        region = vor.regions[vor.point_region[i]]
        V = vor.vertices[[j for j in region if j >= 0]]
        h = max(h, float(np.max(np.hypot(*(V - P[i]).T))))
    return h


def assert_quadrature_bound(weights_fn, *, n_nodes=60, n_trials=4, partition_rtol=1e-9, random_state=0):
    r"""Assert the Voronoi-quadrature theorems on a quadrature rule ``weights_fn(nodes, window) -> weights``:
    the weights partition the window (T1, sum = area) and, for a Lipschitz intensity
    :math:`\lambda(s) = e^{a^\top s}` on the unit square, :math:`|\int_W\lambda - \sum_j w_j\lambda(u_j)|
    \le L_\lambda |W| h_{\max}` (T2, :func:`theory.point_process.quadrature_error_bound`; ``h_max`` the
    largest clipped-cell radius of the nodes).

    Examples
    --------
    >>> from algos.point_process import voronoi_weights
    >>> from algos.testing import assert_quadrature_bound
    >>> assert_quadrature_bound(voronoi_weights).n_cases
    4

    Weights that do not partition the window fail:

    >>> assert_quadrature_bound(lambda X, win: 0.9 * voronoi_weights(X, win))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    AssertionError: quadrature bound: ...
    """
    from theory.point_process import quadrature_error_bound

    rng = np.random.default_rng(random_state)
    box = (0.0, 1.0, 0.0, 1.0)
    rows = []
    for k in range(n_trials):
        X = rng.uniform(size=(n_nodes, 2))
        w = np.asarray(weights_fn(X, box), dtype=float)
        total = float(w.sum())
        if abs(total - 1.0) > partition_rtol:
            _fail("quadrature bound", {"trial": k, "sum_of_weights": total, "area": 1.0},
                  "the weights do not partition the window")
        a = rng.normal(size=2)
        a *= rng.uniform(0.5, 3.0) / np.linalg.norm(a)
        exact = float(np.prod([(math.exp(ai) - 1) / ai for ai in a]))
        err = abs(exact - float(w @ np.exp(X @ a)))
        lip = float(np.linalg.norm(a) * math.exp(np.sum(np.maximum(a, 0))))
        bound = quadrature_error_bound(lip, 1.0, _rect_cell_radius(X, box))
        row = {"trial": k, "error": err, "bound": bound, "tightness": err / bound}
        if err > bound:
            _fail("quadrature bound", row, "quadrature error above quadrature_error_bound")
        rows.append(row)
    return _result("quadrature bound", rows)

