"""One valid call of every public name (``algos.<module>.__all__`` and every theory function).

The fuzz battery (``test_bad_input.py``) starts from these calls and replaces one argument at a
time by a drawn bad value. Sizes are tiny: a case must fail (or run) in well under a second.
Names that are not callables taking input (warning classes, result containers, constant dicts)
are listed in :data:`NOT_FUZZED` with the reason.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect

import numpy as np


@dataclasses.dataclass
class Recipe:
    """A valid call of ``target``.

    kind ``"func"``: ``target(**args())``. kind ``"class"``: ``target(**args())`` (a plain class,
    constructed). kind ``"est"``: ``target(**args()).<fit_method>(**fit())``, then each
    ``(method, kwargs)`` of ``after`` on the fitted object; before fit those methods must raise
    ``NotFittedError``.
    """

    target: object
    kind: str = "func"
    args: object = dict
    fit: object = dict
    fit_method: str = "fit"
    after: tuple = ()
    fixed: tuple = ()  # arguments not fuzzed (free text, file names, callables' internals)
    data: tuple = ()  # arrays for which an empty array is certainly invalid (X, y always are)
    elementwise: tuple = ()  # vectorised arguments: another rank is a valid broadcast
    aliases: dict = dataclasses.field(default_factory=dict)  # {arg: extra names a message may use}
    unfitted: bool = True  # call the ``after`` methods on an unfitted estimator too
    defaults: bool = True  # also fuzz scalar arguments left at their default
    rejects: object = None  # certificates: rejects(result) is true when the result reports a violation
    labels: tuple = ()  # label / id arrays: documented to take strings, so a string array is valid
    empty_ok: tuple = ()  # data arrays documented to accept zero rows (an empty pattern, say)
    nonfinite_ok: tuple = ()  # fitted attributes whose inf is a documented sentinel


def _fresh(make):
    """A factory returning a new dict from ``make()`` each call (cached inputs are copied)."""
    import copy

    @functools.wraps(make)
    def factory():
        return copy.deepcopy(make())

    return factory


# ------------------------------------------------------------------------------------------ data
@functools.lru_cache(None)
def _inst():
    from algos.fair_matching import random_instance

    return random_instance(6, 8, 2, 0.5, random_state=0)


@functools.lru_cache(None)
def _alloc():
    from algos.fair_matching import ThresholdEqualFilling

    return np.asarray(ThresholdEqualFilling(gamma=0.5).fit(_inst()).allocation_.toarray(), dtype=float)


@functools.lru_cache(None)
def _reg(n=60, d=3):
    from algos.hetero_regression import make_subset_of_signals

    data = make_subset_of_signals(n, d, n // 2, noisy_sigma=10.0, random_state=0)
    return data.X, data.y, data.sigma


@functools.lru_cache(None)
def _tiger():
    from algos.pomdp import tiger

    return tiger()


def _tiger_fsc():
    """A 2-node controller of the tiger problem: listen, remember the last observation."""
    a = np.array([0, 0])  # listen
    eta = np.zeros((2, 3, 2), dtype=np.int64)  # (K, A, O)
    eta[:, :, 0] = 0
    eta[:, :, 1] = 1
    return a, eta


@functools.lru_cache(None)
def _pbvi():
    from algos.pomdp import PBVI

    return PBVI(n_beliefs=10, max_iter=20, random_state=0).fit(_tiger())


@functools.lru_cache(None)
def _images(n=40, side=8):
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(n, side * side))
    y = np.arange(n) % 4
    return X, y


def _dask_images():
    """``{"X", "y"}`` of :func:`_images` as row-chunked dask arrays (two blocks)."""
    import dask.array as da

    X, y = _images()
    return {"X": da.from_array(X, chunks=(20, -1)), "y": da.from_array(y, chunks=20)}


@functools.lru_cache(None)
def _fed(n=60, d=4, clients=3):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] > 0).astype(int)
    ids = np.arange(n) % clients
    return X, y, ids


@functools.lru_cache(None)
def _params():
    from algos.federated import init_params

    return init_params(4, 4, random_state=0)


@functools.lru_cache(None)
def _points(n=40):
    rng = np.random.default_rng(0)
    return rng.uniform(0, 1, size=(n, 2))


@functools.lru_cache(None)
def _spd(n=6):
    import scipy.sparse as sp

    A = sp.diags([-1.0] * (n - 1), -1) + sp.diags([2.5] * n) + sp.diags([-1.0] * (n - 1), 1)
    return sp.csr_matrix(A)


def _fair_matching():
    import algos.fair_matching as F
    import theory.fair_matching as T

    inst = _fresh(lambda: {"instance": _inst()})
    ia = _fresh(lambda: {"instance": _inst(), "allocation": _alloc()})
    est = dict(kind="est", fit=inst, after=(("predict", _fresh(lambda: {"item_neighbors": [0, 1, 2]})),
                                            ("partial_fit", _fresh(lambda: {"item_neighbors": [0, 2]}))))
    return {
        "OnlineMatchingInstance": Recipe(F.OnlineMatchingInstance, "class",
                                         _fresh(lambda: {"n_agents": 3, "agent_class": [0, 0, 1],
                                                         "item_neighbors": [[2, 0], [1], []]})),
        "ThresholdEqualFilling": Recipe(F.ThresholdEqualFilling, args=_fresh(lambda: {"gamma": 0.5}), **est),
        "EqualFilling": Recipe(F.EqualFilling, **est),
        "WaterFilling": Recipe(F.WaterFilling, **est),
        "HybridRanking": Recipe(F.HybridRanking, args=_fresh(lambda: {"gamma": 0.5, "n_runs": 2, "random_state": 0}),
                                **est),
        "Ranking": Recipe(F.Ranking, args=_fresh(lambda: {"n_runs": 2, "random_state": 0}), **est),
        "Greedy": Recipe(F.Greedy, args=_fresh(lambda: {"n_runs": 2, "random_state": 0}), **est),
        "evaluate": Recipe(F.evaluate, args=_fresh(lambda: {"estimator": F.ThresholdEqualFilling(gamma=0.5),
                                                            "instances": [_inst()], "n_runs": 2,
                                                            "random_state": 0})),
        "hill_climb_instance": Recipe(F.hill_climb_instance, args=_fresh(lambda: {
            "objective": F.opt_matching_size, "n_agents": 3, "n_items": 3, "n_classes": 2, "n_steps": 3,
            "random_state": 0})),
        "opt_matching_size": Recipe(F.opt_matching_size, args=inst),
        "bundle_value": Recipe(F.bundle_value, args=_fresh(lambda: {"instance": _inst(), "class_i": 0,
                                                                    "item_capacity": np.ones(8)})),
        "cef_matrix": Recipe(F.cef_matrix, args=ia),
        "cef_ratio": Recipe(F.cef_ratio, args=ia),
        "cef_trajectory": Recipe(F.cef_trajectory, args=ia),
        "cprop_ratio": Recipe(F.cprop_ratio, args=ia),
        "ex_ante_cef_ratio": Recipe(F.ex_ante_cef_ratio, args=_fresh(lambda: {
            "instance": _inst(), "allocations": np.stack([_alloc(), _alloc()])})),
        "ex_post_cef_ratio": Recipe(F.ex_post_cef_ratio, args=_fresh(lambda: {
            "instance": _inst(), "allocations": np.stack([_alloc(), _alloc()])})),
        "is_non_wasteful": Recipe(F.is_non_wasteful, args=ia),
        "usw_ratio": Recipe(F.usw_ratio, args=ia),
        "random_instance": Recipe(F.random_instance, args=_fresh(lambda: {"n_agents": 6, "n_items": 8, "n_classes": 2,
                                                                          "p": 0.5, "random_state": 0})),
        "sparse_random_instance": Recipe(F.sparse_random_instance, args=_fresh(lambda: {
            "n_agents": 6, "n_items": 8, "n_classes": 2, "avg_degree": 2.0, "random_state": 0})),
        "triangular_instance": Recipe(F.triangular_instance, args=_fresh(lambda: {"n": 4, "n_classes": 2})),
        "upper_bound_instance": Recipe(F.upper_bound_instance, args=_fresh(lambda: {"alpha": 0.3, "n": 4, "k": 2})),
        "complete_instance": Recipe(F.complete_instance, args=_fresh(lambda: {"n_agents": 4, "n_items": 3})),
        "disjoint_stars_instance": Recipe(F.disjoint_stars_instance, args=_fresh(lambda: {"n_stars": 2,
                                                                                         "items_per_star": 2})),
        "davis_instance": Recipe(F.davis_instance, args=_fresh(lambda: {"split": "cliques"})),
        # theory
        "theory.usw_lower_bound": Recipe(T.usw_lower_bound, args=_fresh(lambda: {"gamma": 0.5})),
        "theory.cef_lower_bound": Recipe(T.cef_lower_bound, args=_fresh(lambda: {"gamma": 0.5})),
        "theory.usw_upper_bound": Recipe(T.usw_upper_bound, args=_fresh(lambda: {"alpha": 0.25})),
        "theory.usw_upper_bound_finite": Recipe(T.usw_upper_bound_finite, args=_fresh(lambda: {"alpha": 0.3, "n": 10,
                                                                                               "k": 100})),
        "theory.prior_usw_upper_bound": Recipe(T.prior_usw_upper_bound, args=_fresh(lambda: {"alpha": 0.5})),
        "theory.gamma_for_cef": Recipe(T.gamma_for_cef, args=_fresh(lambda: {"alpha": 0.3})),
        "theory.nonwasteful_usw_lower_bound": Recipe(T.nonwasteful_usw_lower_bound),
        "theory.known_bound": Recipe(T.known_bound, args=_fresh(lambda: {"name": "cef_upper_bound_divisible_h23"})),
        "theory.check_allocation": Recipe(T.check_allocation, args=_fresh(lambda: {
            "biadjacency": np.array([[1.0, 1.0], [0.0, 1.0]]), "allocation": np.array([[1.0, 0.0], [0.0, 1.0]])}),
            rejects=lambda r: not r.ok),
    }


def _hetero_regression():
    import algos.hetero_regression as H
    import theory.hetero_regression as T

    Xy = _fresh(lambda: {"X": _reg()[0], "y": _reg()[1]})
    after = (("predict", _fresh(lambda: {"X": _reg()[0]})), ("score", Xy))
    est = dict(kind="est", fit=Xy, after=after)
    return {
        "HuberSoSRegressor": Recipe(H.HuberSoSRegressor, **est),
        # candidates_[name]["variance"] is inf for a candidate without inliers (documented: never chosen)
        "SubsetOfSignalsRegressor": Recipe(H.SubsetOfSignalsRegressor, nonfinite_ok=("candidates_",), **est),
        "CoordinateMedianRegressor": Recipe(H.CoordinateMedianRegressor, args=_fresh(lambda: {"n_rounds": 5}), **est),
        "IterativeWindowRegressor": Recipe(H.IterativeWindowRegressor, args=_fresh(lambda: {"max_iter": 10}), **est),
        "LADRegressor": Recipe(H.LADRegressor, **est),
        "FeasibleWLSRegressor": Recipe(H.FeasibleWLSRegressor, **est),
        "TrimmedLSRegressor": Recipe(H.TrimmedLSRegressor, **est),
        "make_subset_of_signals": Recipe(H.make_subset_of_signals, args=_fresh(lambda: {
            "n": 40, "d": 2, "m": 20, "noisy_sigma": 10.0, "signal_sigma": 1.0, "random_state": 0})),
        "oracle_wls": Recipe(H.oracle_wls, args=_fresh(lambda: {"X": _reg()[0], "y": _reg()[1], "sigma": _reg()[2]}),
                             data=("sigma",)),
        "suggest_delta": Recipe(H.suggest_delta, args=Xy),
        "ols": Recipe(H.ols, args=Xy),
        "lad": Recipe(H.lad, args=Xy),
        "feasible_wls": Recipe(H.feasible_wls, args=Xy),
        "iterative_trimming": Recipe(H.iterative_trimming, args=Xy),
        "theory.sos_rate": Recipe(T.sos_rate, args=_fresh(lambda: {"n": 2000, "d": 5, "m": 100})),
        "theory.huber_error_bound": Recipe(T.huber_error_bound, args=_fresh(lambda: {"n": 2000, "d": 5, "m": 200})),
        "theory.huber_regime_threshold": Recipe(T.huber_regime_threshold, args=_fresh(lambda: {"n": 2000, "d": 5})),
        "theory.signal_fraction_alpha": Recipe(T.signal_fraction_alpha, args=_fresh(lambda: {"n": 2000, "m": 200})),
        "theory.oracle_floor": Recipe(T.oracle_floor, args=_fresh(lambda: {"d": 5, "m": 200})),
        "theory.oblivious_lower_bound": Recipe(T.oblivious_lower_bound, args=_fresh(lambda: {"n": 2000, "d": 5,
                                                                                             "alpha": 0.1})),
        "theory.cs26_rate": Recipe(T.cs26_rate, args=_fresh(lambda: {"n": 2000, "d": 5, "m": 100})),
        "theory.cs26_regime_threshold": Recipe(T.cs26_regime_threshold, args=_fresh(lambda: {"n": 2000, "d": 5})),
        "theory.yuan_liang_trimming_requirement": Recipe(T.yuan_liang_trimming_requirement,
                                                         args=_fresh(lambda: {"n": 2000, "alpha": 0.5})),
        "theory.liang_yuan_mean_rate": Recipe(T.liang_yuan_mean_rate, args=_fresh(lambda: {"n": 1000, "m": 100})),
        "theory.rate_table": Recipe(T.rate_table, args=_fresh(lambda: {"n": 2000, "d": 5, "ms": [100, 200]})),
        "theory.scale_mixture_fisher_information": Recipe(T.scale_mixture_fisher_information,
                                                          args=_fresh(lambda: {"signal_fraction": 0.1,
                                                                               "noisy_sigma": 10.0})),
        "theory.scale_mixture_width_bound": Recipe(T.scale_mixture_width_bound,
                                                   args=_fresh(lambda: {"signal_fraction": 0.1,
                                                                        "noisy_sigma": 50.0})),
    }


def _networked_learning():
    import networkx as nx

    import algos.networked_learning as N
    import theory.networked_learning as T

    def Xy():
        rng = np.random.default_rng(0)
        X = rng.normal(size=(40, 3))
        return {"X": X, "y": X @ np.array([1.0, -1.0, 0.5]) + 0.1 * rng.normal(size=40)}

    Xy = _fresh(functools.lru_cache(None)(Xy))
    g2 = lambda: nx.DiGraph([(0, 1)])  # noqa: E731

    def sig():
        return {"graph": g2(), "feature_sets": {0: [0], 1: [1]}, "Sigma": np.array([[1.0, 0.5], [0.5, 1.0]]),
                "b": np.array([1.0, 0.0])}

    return {
        "NetworkedDAGRegressor": Recipe(N.NetworkedDAGRegressor, "est", args=_fresh(lambda: {"random_state": 0}),
                                        fit=Xy,
                                        after=(("predict", _fresh(lambda: {"X": Xy()["X"]})), ("score", Xy))),
        "default_sketch_size": Recipe(N.default_sketch_size, args=_fresh(lambda: {"d": 8, "delta": 0.05, "eta": 0.5})),
        "population_fit": Recipe(N.population_fit, args=_fresh(sig)),
        "zero_message_agents": Recipe(N.zero_message_agents, args=_fresh(sig)),
        "excess_risk": Recipe(N.excess_risk, args=_fresh(lambda: {"beta": np.array([1.0, 0.0]), "Sigma": np.eye(2),
                                                                  "beta_star": np.array([1.0, -1.0])})),
        "greedy_path": Recipe(N.greedy_path, args=_fresh(lambda: {"Sigma": np.array([[1.0, 0.5], [0.5, 1.0]]),
                                                                  "b": np.array([1.0, 0.0]), "D": 3})),
        "coverage_number": Recipe(N.coverage_number, args=_fresh(lambda: {
            "path": [0, 1, 2], "feature_sets": {0: [0], 1: [1], 2: [2]}, "d": 3})),
        "check_graph": Recipe(N.check_graph, args=_fresh(lambda: {"graph": g2(), "feature_sets": {0: [0], 1: [1]},
                                                                  "d": 2})),
        "depths": Recipe(N.depths, args=_fresh(lambda: {"graph": N.make_star(2)})),
        "make_path": Recipe(N.make_path, args=_fresh(lambda: {"D": 3})),
        "make_star": Recipe(N.make_star, args=_fresh(lambda: {"n_spokes": 2})),
        "make_in_tree": Recipe(N.make_in_tree, args=_fresh(lambda: {"r": 2, "h": 2})),
        "make_layered_dag": Recipe(N.make_layered_dag, args=_fresh(lambda: {"n_layers": 3, "width": 2, "n_parents": 2,
                                                                            "random_state": 0})),
        "make_random_dag": Recipe(N.make_random_dag, args=_fresh(lambda: {"n": 5, "p": 0.5, "random_state": 0})),
        "cyclic_allocation": Recipe(N.cyclic_allocation, args=_fresh(lambda: {"order": [0, 1, 2, 3], "d": 3})),
        "random_allocation": Recipe(N.random_allocation, args=_fresh(lambda: {"graph": N.make_path(3), "d": 5,
                                                                              "size": 2, "random_state": 0})),
        "make_sketch": Recipe(N.make_sketch, args=_fresh(lambda: {"kind": "gaussian", "k": 4, "m": 10, "seed": 1})),
        "Sketch": Recipe(N.Sketch, "class", args=_fresh(lambda: {"kind": "gaussian", "k": 4, "m": 10, "seed": 1,
                                                                 "chunk": 8192})),
        "subsample_rows": Recipe(N.subsample_rows, args=_fresh(lambda: {"k": 3, "m": 10, "seed": 0})),
        "PopulationModel": Recipe(N.PopulationModel, "class", args=_fresh(lambda: {
            "Sigma": np.eye(2), "b": np.array([1.0, 0.0]), "y_var": 2.0, "A": np.eye(2),
            "c": np.array([1.0, 0.0])}), fixed=("name",)),
        "make_suppressor": Recipe(N.make_suppressor, args=_fresh(lambda: {"noise": 0.0})),
        "make_krr_hard3": Recipe(N.make_krr_hard3, args=_fresh(lambda: {"D": 10})),
        "make_common_factor": Recipe(N.make_common_factor, args=_fresh(lambda: {"d": 4, "rho": 0.1,
                                                                                "a": [1.0, -1.0, 1.0, -1.0]})),
        "make_differential": Recipe(N.make_differential, args=_fresh(lambda: {"k": 3})),
        "make_leverage_design": Recipe(N.make_leverage_design, args=_fresh(lambda: {"d": 3, "q": 0.01})),
        "make_gaussian": Recipe(N.make_gaussian, args=_fresh(lambda: {"d": 3, "kind": "ar1", "rho": 0.5,
                                                                      "beta": [1.0, 0.0, 0.0], "sigma": 1.0})),
        "load_diabetes_agents": Recipe(N.load_diabetes_agents),
        "theory.krr_path_bound": Recipe(T.krr_path_bound, args=_fresh(lambda: {"e1": 0.5, "A": 1.0, "B": 1.0, "M": 3,
                                                                               "D": 12})),
        "theory.krr_path_bound_normalised": Recipe(T.krr_path_bound_normalised,
                                                   args=_fresh(lambda: {"A": 1.0, "B": 2.0, "M": 5, "D": 5})),
        "theory.greedy_bound": Recipe(T.greedy_bound, args=_fresh(lambda: {"A": 1.0, "B": 2.0, "D": 7})),
        "theory.greedy_step_bound": Recipe(T.greedy_step_bound, args=_fresh(lambda: {"e": 0.5, "A": 1.0, "B": 1.0})),
        "theory.greedy_lower_bound": Recipe(T.greedy_lower_bound, args=_fresh(lambda: {"D": 10})),
        "theory.worst_case_rate": Recipe(T.worst_case_rate, args=_fresh(lambda: {"M": 3, "D": 8})),
        "theory.gaussian_ose_eta": Recipe(T.gaussian_ose_eta, args=_fresh(lambda: {"k": 100, "r": 9, "delta": 0.01})),
        "theory.gaussian_ose_min_k": Recipe(T.gaussian_ose_min_k, args=_fresh(lambda: {"r": 9, "eta": 0.7,
                                                                                       "delta": 0.01})),
        "theory.aggregation_term": Recipe(T.aggregation_term, args=_fresh(lambda: {"A_hat": 2.0, "B_hat": 1.0, "M": 2,
                                                                                   "e1_hat": 0.25, "D": 4})),
        "theory.full_message_risk_bound": Recipe(T.full_message_risk_bound,
                                                 args=_fresh(lambda: {"stat_term": 0.1, "agg_term": 0.25})),
        "theory.sketched_risk_bound": Recipe(T.sketched_risk_bound, args=_fresh(lambda: {
            "stat_term": 0.1, "L_hat": 1.0, "eta": 0.5, "agg_tilde": 0.25})),
        "theory.sketch_ls_expectation_factor": Recipe(T.sketch_ls_expectation_factor,
                                                      args=_fresh(lambda: {"p": 5, "k": 30})),
        "theory.ols_expected_excess": Recipe(T.ols_expected_excess, args=_fresh(lambda: {"sigma2": 2.0, "d": 3,
                                                                                         "m": 10})),
    }


def _pomdp():
    import algos.pomdp as P
    import theory.pomdp as T

    model = _fresh(lambda: {"pomdp": _tiger()})
    ctrl_after = (("predict", _fresh(lambda: {"memory": 0})), ("evaluate", model))
    est = dict(kind="est", fit=model, after=ctrl_after)
    pb = {"n_beliefs": 10, "max_iter": 20}
    fsc = _fresh(lambda: dict(zip(("action", "eta"), _tiger_fsc())))

    def tiger_arrays():
        m = _tiger()
        return {"T": m.T, "Z": m.Z}

    def fsc_args(**extra):
        a, eta = _tiger_fsc()
        return _fresh(lambda: {"pomdp": _tiger(), "action": a, "eta": eta, **extra})

    B = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    alphas = np.array([[1.0, 0.0], [0.0, 1.0]])
    return {
        "POMDP": Recipe(P.POMDP, "class", args=_fresh(lambda: {"T": np.ones((1, 2, 2)) / 2, "Z": np.ones((1, 2, 1)),
                                                               "r": np.zeros((2, 1)), "discount": 0.9})),
        "parse_pomdp": Recipe(P.parse_pomdp, args=_fresh(lambda: {"text": P.write_pomdp(_tiger())}), fixed=("name",),
                              aliases={"text": ("line",)}),
        "read_pomdp": Recipe(P.read_pomdp, args=_fresh(lambda: {"path": _tiger_file()}), fixed=("path",)),
        "write_pomdp": Recipe(P.write_pomdp, args=model, fixed=("path",)),
        "read_pomdpx": Recipe(P.read_pomdpx, args=_fresh(lambda: {"path": _tiger_pomdpx_file()}), fixed=("path",)),
        "write_pomdpx": Recipe(P.write_pomdpx, args=model, fixed=("path",)),
        "tiger": Recipe(P.tiger, args=_fresh(lambda: {"discount": 0.95})),
        "rock_sample": Recipe(P.rock_sample, args=_fresh(lambda: {"n": 2, "k": 1, "discount": 0.95,
                                                                  "random_state": 0})),
        "rock_sample_map": Recipe(P.rock_sample_map, args=_fresh(lambda: {"n": 4, "k": 4})),
        "tag": Recipe(P.tag, args=_fresh(lambda: {"discount": 0.95})),
        "update": Recipe(P.update, args=_fresh(lambda: {"pomdp": _tiger(), "b": np.array([0.5, 0.5]), "a": 0, "o": 0})),
        "successors": Recipe(P.successors, args=_fresh(lambda: {"pomdp": _tiger(),
                                                                "B": np.array([[0.5, 0.5], [0.9, 0.1]]), "a": 0})),
        "check_fsc": Recipe(P.check_fsc, args=_fresh(lambda: {**fsc(), "n_actions": 3, "n_observations": 2}),
                   rejects=lambda r: not r.ok),
        "evaluate_fsc": Recipe(P.evaluate_fsc, args=fsc_args()),
        "evaluate_fsc_iterative": Recipe(P.evaluate_fsc_iterative, args=fsc_args(max_iter=10000)),
        "simulate_fsc": Recipe(P.simulate_fsc, args=fsc_args(n_episodes=20, horizon=10, random_state=0)),
        "blind_policy_values": Recipe(P.blind_policy_values, args=model),
        "PBVI": Recipe(P.PBVI, "est", args=_fresh(lambda: {**pb, "random_state": 0}), fit=model),
        "fib_upper_bound": Recipe(P.fib_upper_bound, args=_fresh(lambda: {"pomdp": _tiger(), "max_iter": 1000})),
        "RECAPController": Recipe(P.RECAPController, args=_fresh(lambda: {
            "n_memory": 2, "pbvi_params": dict(pb), "n_traj": 10, "n_samples": 50, "n_restarts": 1, "n_refine": 1,
            "random_state": 0}), **est, fixed=("pbvi_params",)),
        "GridCodebook": Recipe(P.GridCodebook, args=_fresh(lambda: {"n_memory": 3, "pbvi_params": dict(pb),
                                                                    "random_state": 0}), **est, fixed=("pbvi_params",)),
        "KMeansCodebook": Recipe(P.KMeansCodebook, args=_fresh(lambda: {"n_memory": 2, "n_samples": 50,
                                                                        "pbvi_params": dict(pb), "random_state": 0}),
                                 **est, fixed=("pbvi_params",)),
        "build_codebook_fsc": Recipe(P.build_codebook_fsc, args=_fresh(lambda: {
            "pomdp": _tiger(), "C": np.array([[0.5, 0.5], [0.85, 0.15]]), "alphas": _pbvi().alphas_,
            "max_vi_iter": 10000})),
        "FiniteWindowController": Recipe(P.FiniteWindowController, args=_fresh(lambda: {
            "n_memory": 2, "max_iter": 2, "n_beliefs": 10, "random_state": 0}), **est),
        "BPIController": Recipe(P.BPIController, args=_fresh(lambda: {"n_memory": 2, "max_iter": 2, "random_state": 0,
                                                                      "time_limit": 10.0}), **est),
        "converse_lower_bound": Recipe(P.converse_lower_bound, args=_fresh(lambda: {
            "pomdp": _tiger(), "n_memory": 2, "solver": _pbvi(), "max_partitions": 2000, "max_trees": 200})),
        "PointBasedSolver": Recipe(P.PointBasedSolver, "est", args=_fresh(lambda: {
            "time_limit": 2.0, "target_gap": 0.1, "max_trials": 5, "random_state": 0, "backend": "numpy",
            "clock": "cpu"}),
            fit=model),
        "read_policy": Recipe(P.read_policy, args=_fresh(lambda: {"path": _policy_file(), "pomdp": _tiger()}),
                              fixed=("path",)),
        "write_policy": Recipe(P.write_policy, args=_fresh(lambda: {
            "path": _tmpdir() + "/out.alpha", "alphas": _pbvi().alphas_, "actions": np.asarray(_pbvi().actions_),
            "format": "alpha"}), fixed=("path", "model_name")),
        "policy_graph": Recipe(P.policy_graph, args=_fresh(lambda: {**fsc(), "m0": 0, "pomdp": _tiger()})),
        "write_policy_graph": Recipe(P.write_policy_graph, args=_fresh(lambda: {
            "path": _tmpdir() + "/g.dot", **fsc()}), fixed=("path",)),
        "theory.lipschitz_constant": Recipe(T.lipschitz_constant, args=_fresh(lambda: {
            "r": np.array([[0.0, 1.0], [-1.0, 0.5]]), "discount": 0.5})),
        "theory.alpha_lipschitz_constant": Recipe(T.alpha_lipschitz_constant,
                                                  args=_fresh(lambda: {"alphas": np.array([[0.0, 4.0], [1.0, 2.0]])})),
        "theory.bayes_successors": Recipe(T.bayes_successors, args=_fresh(lambda: {
            **tiger_arrays(), "B": np.array([[0.5, 0.5], [0.9, 0.1]]), "a": 0})),
        "theory.closure_distortion": Recipe(T.closure_distortion, args=_fresh(lambda: {
            **tiger_arrays(), "codebook": np.array([[0.5, 0.5], [0.85, 0.15]]), "eta": _tiger_fsc()[1],
            "action": _tiger_fsc()[0], "b0": np.array([0.5, 0.5]), "m0": 0})),
        "theory.closure_bound": Recipe(T.closure_bound, args=_fresh(lambda: {"L": 1.0, "rho": 0.1, "rho_pi": 0.05,
                                                                             "delta0": 0.0, "discount": 0.5})),
        "theory.decision_distortion": Recipe(T.decision_distortion, args=_fresh(lambda: {
            "B": np.array([[1.0, 0.0], [0.3, 0.7]]), "C": np.array([[0.0, 1.0], [0.6, 0.4]]), "alphas": alphas})),
        "theory.merge_cost": Recipe(T.merge_cost, args=_fresh(lambda: {"B": np.array([[1.0, 0.0], [0.0, 1.0]]),
                                                                       "w": np.array([0.5, 0.5]), "alphas": alphas})),
        "theory.decision_witnesses": Recipe(T.decision_witnesses, args=_fresh(lambda: {"B": B, "alphas": alphas})),
        "theory.bregman_hard_clustering": Recipe(T.bregman_hard_clustering, args=_fresh(lambda: {
            "B": B, "w": np.array([0.3, 0.4, 0.3]), "n_clusters": 2, "value_fn": lambda M: np.max(M @ alphas.T, axis=1),
            "max_partitions": 1000}), fixed=("value_fn",)),
        "theory.rate_distortion_lower_bound": Recipe(T.rate_distortion_lower_bound, args=_fresh(lambda: {
            "p": np.array([0.5, 0.5]), "d": np.array([[0.0, 1.0], [1.0, 0.0]]), "rate": 0.5, "n_iter": 50})),
        "theory.converse_depth1": Recipe(T.converse_depth1, args=_fresh(lambda: {
            "value_b0": 10.0, "q_values": np.array([10.0, 4.0]), "distortions": np.array([2.0, 0.0]),
            "discount": 0.5})),
        "theory.check_fsc": Recipe(T.check_fsc, args=_fresh(lambda: {**fsc(), "n_actions": 3, "n_observations": 2}),
                   rejects=lambda r: not r.ok),
    }


def _continual():
    import algos.continual as C
    import theory.continual as T

    Xy = _fresh(lambda: {"X": _images()[0], "y": _images()[1]})
    feat = (("transform", _fresh(lambda: {"X": _images()[0]})),)
    clf_after = (("predict", _fresh(lambda: {"X": _images()[0]})), ("score", Xy))
    small = {"image_shape": (1, 8, 8), "units": 4, "random_state": 0, "backend": "numpy"}
    return {
        "BiReservoir2D": Recipe(C.BiReservoir2D, "est", args=_fresh(lambda: {"units": 4, "random_state": 0,
                                                                             "backend": "numpy"}),
                                fit=_fresh(lambda: {"input_dim": 3}),
                                after=(("transform", _fresh(lambda: {"X": np.random.default_rng(0).uniform(
                                    size=(2, 4, 4, 3))})),), empty_ok=("X",)),
        "BiRC2DFeatures": Recipe(C.BiRC2DFeatures, "est", args=_fresh(lambda: {**small, "patch": 2, "pooling": "avg"}),
                                 fit=Xy, after=feat),
        "StreamingLDA": Recipe(C.StreamingLDA, "est", fit=Xy, after=clf_after, labels=("y",)),
        "SLDAEnsemble": Recipe(C.SLDAEnsemble, "est", args=_fresh(lambda: {"group_sizes": [32, 32]}), fit=Xy,
                               labels=("y",),
                               after=clf_after),
        "CIRCLEClassifier": Recipe(C.CIRCLEClassifier, "est", args=_fresh(lambda: {
            "n_reservoirs": 1, "n_groups": 1, "units": 4, "image_shape": (1, 8, 8), "random_state": 0}),
            fit=Xy, after=clf_after, labels=("y",)),
        "resolve_image_geometry": Recipe(C.resolve_image_geometry, args=_fresh(lambda: {"n_features": 64})),
        "class_incremental_split": Recipe(C.class_incremental_split, args=_fresh(lambda: {
            "y": np.array([0, 1, 2, 3, 4, 5]), "n_tasks": 3, "class_order_seed": 0})),
        "evaluate_cil": Recipe(C.evaluate_cil, args=_fresh(lambda: {
            "model_factory": C.StreamingLDA, "X_tr": _images()[0], "y_tr": _images()[1], "X_te": _images()[0],
            "y_te": _images()[1], "tasks": [np.array([0, 1]), np.array([2, 3])]}),
            data=("X_tr", "y_tr", "X_te", "y_te")),
        "StreamingRidge": Recipe(C.StreamingRidge, "est", fit=Xy, after=clf_after),
        # the dask arrays are the data; the estimator is the one to fit (not fuzzed)
        "fit_dask": Recipe(C.fit_dask, args=_fresh(lambda: {"estimator": C.StreamingLDA(), **_dask_images()}),
                           fixed=("estimator",), data=("X", "y"), labels=("y",)),
        "OfflineLDA": Recipe(C.OfflineLDA, "est", fit=Xy, after=clf_after, labels=("y",)),
        "RandomConvFeatures": Recipe(C.RandomConvFeatures, "est", args=_fresh(lambda: {"image_shape": (1, 8, 8),
                                                                                       "n_filters": 4,
                                                                                       "random_state": 0}),
                                     fit=Xy, after=feat),
        "FeatureHead": Recipe(C.FeatureHead, "est", args=_fresh(lambda: {
            "features": C.RandomConvFeatures(image_shape=(1, 8, 8), n_filters=4, random_state=0),
            "head": C.StreamingLDA()}), fit=Xy, after=clf_after, labels=("y",)),
        "make_baseline": Recipe(C.make_baseline, args=_fresh(lambda: {"name": "raw_slda", "image_shape": (1, 8, 8)})),
        "scale_pixels": Recipe(C.scale_pixels, args=_fresh(lambda: {"X": np.array([[0.0, 255.0, 51.0]])}),
                               elementwise=("X",)),
        "load_digits_images": Recipe(C.load_digits_images),
        "load_mnist_csv": Recipe(C.load_mnist_csv, args=_fresh(lambda: {"path": _mnist_csv()}), fixed=("path",)),
        "load_npz_images": Recipe(C.load_npz_images, args=_fresh(lambda: {"path": _npz_images()}),
                                  fixed=("path", "x_key", "y_key")),
        "load_image_dataset": Recipe(C.load_image_dataset, args=_fresh(lambda: {"name": "digits", "max_samples": 100})),
        "theory.esn_contraction_factor": Recipe(T.esn_contraction_factor, args=_fresh(lambda: {"leak": 0.5,
                                                                                               "sigma": 0.9})),
        "theory.esn_contraction_bound": Recipe(T.esn_contraction_bound, args=_fresh(lambda: {
            "leak": 0.5, "sigma": 0.5, "t": 2, "initial_distance": 2.0})),
        "theory.reservoir_state_bound": Recipe(T.reservoir_state_bound, args=_fresh(lambda: {
            "activation": "leaky_relu", "leak": 0.5, "sigma": 0.5, "max_input_norm": 1.0})),
        "theory.leaky_relu_state_bound": Recipe(T.leaky_relu_state_bound, args=_fresh(lambda: {
            "leak": 0.5, "sigma": 0.5, "max_input_norm": 1.0})),
        "theory.shrinkage_eigenvalue_floor": Recipe(T.shrinkage_eigenvalue_floor,
                                                    args=_fresh(lambda: {"shrinkage": 1e-4})),
    }


@functools.lru_cache(None)
def _mnist_csv():
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp(prefix="algos-fuzz-")) / "mnist.csv"
    rng = np.random.default_rng(0)
    rows = [",".join(str(v) for v in [i % 3, *rng.integers(0, 256, 784)]) for i in range(6)]
    path.write_text("\n".join(rows) + "\n")
    return str(path)


@functools.lru_cache(None)
def _npz_images():
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp(prefix="algos-fuzz-")) / "images.npz"
    rng = np.random.default_rng(0)
    np.savez(path, x=rng.integers(0, 256, size=(6, 8, 8)).astype(np.uint8), y=np.arange(6) % 3)
    return str(path)


def _federated():
    import algos.federated as FD
    import theory.federated as T

    fit = _fresh(lambda: dict(zip(("X", "y", "client_ids"), _fed())))
    after = (("predict", _fresh(lambda: {"X": _fed()[0], "client_ids": _fed()[2]})), ("score", fit))
    small = {"n_rounds": 2, "local_epochs": 1, "random_state": 0}
    est = dict(kind="est", fit=fit, after=after)

    def fed_est(cls, **extra):
        return Recipe(cls, args=_fresh(lambda: {**small, **extra}), **est)

    X, y, _ = _fed()
    return {
        "PotaraClassifier": fed_est(FD.PotaraClassifier, finetune_epochs=2, n_bootstrap=2),
        "LowRankSoftmax": Recipe(FD.LowRankSoftmax, "est", args=_fresh(lambda: {"max_iter": 5, "random_state": 0}),
                                 fit=_fresh(lambda: {"X": _fed()[0], "y": _fed()[1]}),
                                 after=(("predict", _fresh(lambda: {"X": _fed()[0]})),), labels=("y",)),
        "LocalOnlyClassifier": Recipe(FD.LocalOnlyClassifier, args=_fresh(lambda: {"epochs": 2, "random_state": 0}),
                                      **est),
        "FedAvgClassifier": fed_est(FD.FedAvgClassifier),
        "FedAvgFTClassifier": fed_est(FD.FedAvgFTClassifier, finetune_epochs=2),
        "FixedMixClassifier": fed_est(FD.FixedMixClassifier, finetune_epochs=2),
        "OracleGridClassifier": fed_est(FD.OracleGridClassifier, finetune_epochs=2, grid=3),
        "APFLClassifier": fed_est(FD.APFLClassifier),
        "DittoClassifier": fed_est(FD.DittoClassifier),
        "PFedMeClassifier": fed_est(FD.PFedMeClassifier, K=2),
        "FedRepClassifier": Recipe(FD.FedRepClassifier, args=_fresh(lambda: {"n_rounds": 2, "head_epochs": 1,
                                                                            "rank": 2, "random_state": 0}), **est),
        "FedITClassifier": fed_est(FD.FedITClassifier, rank=2),
        "FFALoRAClassifier": fed_est(FD.FFALoRAClassifier, rank=2),
        "FedSALoRAClassifier": fed_est(FD.FedSALoRAClassifier, rank=2),
        "init_params": Recipe(FD.init_params, args=_fresh(lambda: {"n_features": 3, "n_classes": 2, "rank": 1,
                                                                   "random_state": 0})),
        "loss_grad": Recipe(FD.loss_grad, args=_fresh(lambda: {"params": _params(), "X": X, "y": y, "n_classes": 4})),
        "local_train": Recipe(FD.local_train, args=_fresh(lambda: {"params": _params(), "X": X, "y": y, "n_classes": 4,
                                                                   "epochs": 2, "lr": 0.5})),
        "predict_logits": Recipe(FD.predict_logits, args=_fresh(lambda: {"params": _params(), "X": X})),
        "per_sample_fisher_diag": Recipe(FD.per_sample_fisher_diag, args=_fresh(lambda: {
            "params": _params(), "X": X, "y": y, "n_classes": 4})),
        "fedavg_round": Recipe(FD.fedavg_round, args=_fresh(lambda: {
            "global_params": _params(), "client_data": [(X[:20], y[:20]), (X[20:], y[20:])], "weights": [20, 40],
            "n_classes": 4, "epochs": 1, "lr": 0.5})),
        "default_trainable": Recipe(FD.default_trainable, args=_fresh(lambda: {"params": _params()})),
        "effective_weights": Recipe(FD.effective_weights, args=_fresh(lambda: {"params": _params()})),
        "client_generator": Recipe(FD.client_generator, args=_fresh(lambda: {"random_state": 0, "client_id": 1,
                                                                             "stream": 0})),
        "merge_models": Recipe(FD.merge_models, args=_fresh(lambda: {"theta_f": _params(), "theta_l": _params(),
                                                                     "lam": 0.5})),
        "optimal_mixing_weight": Recipe(FD.optimal_mixing_weight, args=_fresh(lambda: {"v_fed": 1.0, "v_loc": 3.0}),
                                        elementwise=("v_fed", "v_loc", "cov")),
        "merge_params": Recipe(FD.merge_params, args=_fresh(lambda: {"theta_fed": _params(), "theta_loc": _params(),
                                                                     "lam": 0.3})),
        "merge_lora": Recipe(FD.merge_lora, args=_fresh(lambda: {
            "A_fed": np.ones((3, 2)), "B_fed": np.ones((2, 4)), "A_loc": np.zeros((3, 2)), "B_loc": np.zeros((2, 4)),
            "lam": 0.3})),
        "estimate_variances": Recipe(FD.estimate_variances, args=_fresh(lambda: {
            "params_fed": _params(), "params_loc": _params(), "X": X, "y": y, "n_classes": 4})),
        "mixing_weights": Recipe(FD.mixing_weights, args=_fresh(lambda: {"est": FD.estimate_variances(
            _params(), _params(), X, y, n_classes=4)})),
        "dirichlet_label_split": Recipe(FD.dirichlet_label_split, args=_fresh(lambda: {
            "y": np.arange(40) % 4, "n_clients": 4, "alpha": 0.5, "random_state": 0}), labels=("y",)),
        "make_fedprox_synthetic": Recipe(FD.make_fedprox_synthetic, args=_fresh(lambda: {
            "alpha": 1.0, "beta": 1.0, "n_clients": 3, "n_per_client": 10, "random_state": 0})),
        "make_hetero_linear": Recipe(FD.make_hetero_linear, args=_fresh(lambda: {
            "n_clients": 3, "p": 2, "tau": 0.5, "sigma": 1.0, "n_per_client": [5, 6, 7], "random_state": 0})),
        "dirichlet_mixture_sample": Recipe(FD.dirichlet_mixture_sample, args=_fresh(lambda: {
            "y": np.arange(40) % 4, "client": 3, "alpha": 0.5, "n_samples": 10, "random_state": 0}), labels=("y",)),
        "make_digits_clients": Recipe(FD.make_digits_clients, args=_fresh(lambda: {
            "clients": [0, 7], "n_train": 5, "n_test": 2, "random_state": 0})),
        "theory.variance_trace_bound": Recipe(T.variance_trace_bound, args=_fresh(lambda: {"lam": 0.5, "v_fed": 1.0,
                                                                                           "v_loc": 3.0})),
        "theory.expected_loss_bound": Recipe(T.expected_loss_bound, args=_fresh(lambda: {
            "lam": 0.5, "v_fed": 1.0, "v_loc": 3.0, "beta": 1.0})),
        "theory.optimal_lambda": Recipe(T.optimal_lambda, args=_fresh(lambda: {"v_fed": 1.0, "v_loc": 3.0})),
        "theory.optimal_bound": Recipe(T.optimal_bound, args=_fresh(lambda: {"v_fed": 1.0, "v_loc": 3.0})),
        "theory.module_bound": Recipe(T.module_bound, args=_fresh(lambda: {
            "lam": np.array([0.5, 0.2]), "v_fed": np.array([1.0, 2.0]), "v_loc": np.array([3.0, 1.0])}),
            elementwise=("lam",)),  # documented: one lam per module or a shared scalar
        "theory.optimal_lambda_modules": Recipe(T.optimal_lambda_modules, args=_fresh(lambda: {
            "v_fed": np.array([1.0, 2.0]), "v_loc": np.array([3.0, 1.0])})),
        "theory.shared_lambda": Recipe(T.shared_lambda, args=_fresh(lambda: {
            "v_fed": np.array([1.0, 2.0]), "v_loc": np.array([3.0, 1.0])})),
        "theory.james_stein_risk": Recipe(T.james_stein_risk, args=_fresh(lambda: {"p": 10, "s2": 1.0,
                                                                                   "dist_sq": 0.5})),
        "theory.ols_variance_trace": Recipe(T.ols_variance_trace, args=_fresh(lambda: {"X": X, "sigma2": 1.0})),
        "theory.lmc_barrier": Recipe(T.lmc_barrier, args=_fresh(lambda: {
            "lams": np.linspace(0, 1, 5), "losses": np.array([1.0, 0.9, 1.1, 0.8, 0.7])}),
                                     data=("lams", "losses")),
    }


def _point_process():
    import algos.point_process as PP
    import theory.point_process as T

    win = (0.0, 1.0, 0.0, 1.0)
    pts = _fresh(lambda: {"X": _points()})
    pp_after = (("predict_intensity", _fresh(lambda: {"Xq": _points()[:5]})),)

    def chol():
        return {"P": _spd(), "ordering": "natural"}

    return {
        "VoGCAM": Recipe(PP.VoGCAM, "est", args=_fresh(lambda: {"window": win, "optimize_hyperparameters": ("mean",),
                                                                "n_dummy": 16, "max_iter": 5, "random_state": 0}),
                         fit=pts, after=pp_after + (("score", _fresh(dict)),), fixed=("optimize_hyperparameters",),
                         empty_ok=("X",)),
        "Window": Recipe(PP.Window, "class", args=_fresh(lambda: {"vertices": np.array(
            [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])})),
        "voronoi_weights": Recipe(PP.voronoi_weights, args=_fresh(lambda: {"nodes": _points()[:6], "window": win})),
        "build_quadrature": Recipe(PP.build_quadrature, args=_fresh(lambda: {"X": _points(), "window": win,
                                                                             "n_dummy": 16, "random_state": 0}),
                                     empty_ok=("X",)),
        "nngp_precision": Recipe(PP.nngp_precision, args=_fresh(lambda: {"coords": _points(), "n_neighbors": 4,
                                                                         "random_state": 0})),
        "matern": Recipe(PP.matern, args=_fresh(lambda: {"d": np.linspace(0, 1, 5), "length_scale": 0.2}),
                         elementwise=("d",)),
        "woodbury_solve": Recipe(PP.woodbury_solve, args=_fresh(lambda: {
            "b": np.ones(6), "Q": _spd(), "diag": np.ones(6), "nugget": 0.1}), data=("b", "diag")),
        "SparseCholesky": Recipe(PP.SparseCholesky, "est", args=_fresh(chol), fit=_fresh(lambda: {"data": _spd().data}),
                                 fit_method="factor", after=(("solve", _fresh(lambda: {"b": np.ones(6)})),)),
        "RasterCovariates": Recipe(PP.RasterCovariates, "class", args=_fresh(lambda: {
            "images": {"elev": np.random.default_rng(0).normal(size=(4, 5))}, "xcol": np.linspace(0, 1, 5),
            "yrow": np.linspace(0, 1, 4)})),
        "load_raster_covariates": Recipe(PP.load_raster_covariates, args=_fresh(lambda: {"path": _raster_npz()}),
                                         fixed=("path", "keys")),
        "simulate_lgcp": Recipe(PP.simulate_lgcp, args=_fresh(lambda: {
            "window": win, "mean": 3.0, "variance": 1.0, "length_scale": 0.1, "grid": 16, "random_state": 0})),
        "GridLaplaceLGCP": Recipe(PP.GridLaplaceLGCP, "est", args=_fresh(lambda: {"window": win, "grid": 8,
                                                                                  "length_scale": 0.2,
                                                                                  "random_state": 0}),
                                  fit=pts, after=pp_after),
        "FRKVariationalLGCP": Recipe(PP.FRKVariationalLGCP, "est", args=_fresh(lambda: {
            "window": win, "basis_per_side": (3,), "quad_grid": 16, "max_iter": 20}), fit=pts, after=pp_after,
            fixed=("basis_per_side",)),
        "GridMALALGCP": Recipe(PP.GridMALALGCP, "est", args=_fresh(lambda: {"window": win, "grid": 6, "n_samples": 20,
                                                                            "burn_in": 10, "length_scale": 0.2,
                                                                            "random_state": 0}),
                               fit=pts, after=pp_after),
        "SVGPCoxProcess": Recipe(PP.SVGPCoxProcess, "est", args=_fresh(lambda: {
            "window": win, "n_inducing": 8, "quad_grid": 8, "max_iter": 5, "random_state": 0}), fit=pts,
            after=pp_after, fixed=("device",)),
        "k_function": Recipe(PP.k_function, args=_fresh(lambda: {"X": _points(), "window": win,
                                                                  "r": np.array([0.0, 0.05, 0.1])})),
        "l_function": Recipe(PP.l_function, args=_fresh(lambda: {"X": _points(), "window": win,
                                                                  "r": np.array([0.0, 0.05, 0.1])})),
        "g_function": Recipe(PP.g_function, args=_fresh(lambda: {"X": _points(), "window": win,
                                                                  "r": np.array([0.0, 0.05, 0.1])})),
        "f_function": Recipe(PP.f_function, args=_fresh(lambda: {"X": _points(), "window": win,
                                                                  "r": np.array([0.0, 0.05, 0.1]),
                                                                  "dimyx": 32})),
        "j_function": Recipe(PP.j_function, args=_fresh(lambda: {"X": _points(), "window": win,
                                                                  "r": np.array([0.0, 0.05, 0.1]),
                                                                  "dimyx": 32})),
        "pair_correlation": Recipe(PP.pair_correlation, args=_fresh(lambda: {"X": _points(), "window": win,
                                                                             "r": np.array([0.05, 0.1])})),
        "envelope": Recipe(PP.envelope, args=_fresh(lambda: {"model": "poisson", "n_sim": 3, "X": _points(),
                                                             "window": win, "r": np.array([0.05, 0.1]),
                                                             "random_state": 0}),
                           elementwise=("r",)),  # one distance (a 0-d r) is a valid set of radii
        "lgcp_min_contrast": Recipe(PP.lgcp_min_contrast, args=_fresh(lambda: {"X": _points(), "window": win,
                                                                               "r": np.linspace(0, 0.2, 21)})),
        "simulate_poisson": Recipe(PP.simulate_poisson, args=_fresh(lambda: {"window": win, "intensity": 50.0,
                                                                             "random_state": 0})),
        "theory.quadrature_error_bound": Recipe(T.quadrature_error_bound, args=_fresh(lambda: {
            "lipschitz": 1.0, "window_area": 1.0, "h_max": 0.1})),
        "theory.quadrature_moment_bound": Recipe(T.quadrature_moment_bound, args=_fresh(lambda: {
            "lipschitz": 1.0, "first_moments": np.array([0.01, 0.02])})),
        "theory.expected_loglik": Recipe(T.expected_loglik, args=_fresh(lambda: {
            "y": np.array([1.0, 0.0]), "w": np.array([0.5, 0.5]), "m": np.array([0.0, 0.1]),
            "s": np.array([1.0, 0.5])}), elementwise=("y", "w", "m", "s")),
        "theory.gauss_hermite_log_evidence": Recipe(T.gauss_hermite_log_evidence, args=_fresh(lambda: {
            "y": np.array([1.0]), "w": np.array([0.5]), "prior_mean": np.array([0.0]),
            "prior_cov": np.array([[1.0]]), "n_nodes": 20})),
        "theory.elbo_upper_bound_check": Recipe(T.elbo_upper_bound_check, args=_fresh(lambda: {
            "elbo": -2.0, "log_evidence": -1.5})),
        "theory.s_fixed_point_rate": Recipe(T.s_fixed_point_rate, args=_fresh(lambda: {"k_diag_max": 0.5})),
        "theory.s_fixed_point_contraction": Recipe(T.s_fixed_point_contraction,
                                                   args=_fresh(lambda: {"k_diag_max": 0.5})),
        "theory.poisson_k_function": Recipe(T.poisson_k_function, args=_fresh(lambda: {"r": np.array([0.1, 0.2])}),
                                            elementwise=("r",)),
        "theory.lgcp_pair_correlation": Recipe(T.lgcp_pair_correlation, args=_fresh(lambda: {
            "r": np.array([0.1, 0.2]), "variance": 1.0, "length_scale": 0.1}), elementwise=("r",)),
        "theory.lgcp_k_function": Recipe(T.lgcp_k_function, args=_fresh(lambda: {
            "r": np.array([0.1, 0.2]), "variance": 1.0, "length_scale": 0.1}), elementwise=("r",)),
    }


@functools.lru_cache(None)
def _tmpdir():
    import tempfile

    return tempfile.mkdtemp(prefix="algos-fuzz-")


@functools.lru_cache(None)
def _tiger_file():
    from algos.pomdp import write_pomdp

    path = _tmpdir() + "/tiger.POMDP"
    write_pomdp(_tiger(), path)
    return path


@functools.lru_cache(None)
def _tiger_pomdpx_file():
    from algos.pomdp import write_pomdpx

    path = _tmpdir() + "/tiger.pomdpx"
    write_pomdpx(_tiger(), path)
    return path


@functools.lru_cache(None)
def _policy_file():
    from algos.pomdp import write_policy

    path = _tmpdir() + "/tiger.alpha"
    write_policy(path, _pbvi().alphas_, np.asarray(_pbvi().actions_), format="alpha")
    return path


@functools.lru_cache(None)
def _raster_npz():
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp(prefix="algos-fuzz-")) / "cov.npz"
    rng = np.random.default_rng(0)
    np.savez(path, elev=rng.normal(size=(4, 5)), xcol=np.linspace(0, 1, 5), yrow=np.linspace(0, 1, 4))
    return str(path)


BUILDERS = {
    "fair_matching": _fair_matching,
    "hetero_regression": _hetero_regression,
    "networked_learning": _networked_learning,
    "pomdp": _pomdp,
    "continual": _continual,
    "federated": _federated,
    "point_process": _point_process,
}

#: Public names that take no input to fuzz, with the reason.
NOT_FUZZED_KINDS = {
    "warning": "a Warning subclass",
    "container": "a result container (dataclass or NamedTuple) built by the library, not from user input",
    "constant": "a constant (dict/tuple), not a callable",
    "abstract": "an abstract base class (its concrete subclasses are fuzzed)",
}
CONTAINERS = {"SubsetOfSignals", "MinContrastFit", "SummaryFunction", "Envelope", "AlphaPolicy", "ConverseBound",
              "LGCPSample", "Quadrature", "NNGPFactor", "KnownBound",
              "AllocationCheck", "FSCCertificate"}
ABSTRACT = {"FederatedClassifierBase"}


def public_names(module):
    """``[(qualified name, object)]``: ``algos.<module>.__all__`` and the theory functions."""
    import importlib

    algos_mod = importlib.import_module(f"algos.{module}")
    theory_mod = importlib.import_module(f"theory.{module}")
    names = [(n, getattr(algos_mod, n)) for n in algos_mod.__all__]
    for n, obj in vars(theory_mod).items():
        if not n.startswith("_") and inspect.isfunction(obj) and obj.__module__ == theory_mod.__name__:
            names.append((f"theory.{n}", obj))
    return names


def not_fuzzed_reason(name, obj):
    short = name.split(".")[-1]
    if inspect.isclass(obj) and issubclass(obj, Warning):
        return NOT_FUZZED_KINDS["warning"]
    if short in CONTAINERS:
        return NOT_FUZZED_KINDS["container"]
    if short in ABSTRACT:
        return NOT_FUZZED_KINDS["abstract"]
    if not callable(obj):
        return NOT_FUZZED_KINDS["constant"]
    return None
