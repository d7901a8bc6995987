r"""``NetworkedDAGRegressor``: least-squares agents on a DAG with full, sketched or subsampled messages."""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable
from numbers import Integral, Real

import networkx as nx
import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from accel.backend import RESOLVE_OPTIONS, resolve
from theory import networked_learning as _th

from .._validation import (
    RANDOM_STATE_CONSTRAINTS,
    OrderedStrOptions,
    check_random_state,
    check_scalar_float,
    check_scalar_int,
    r2_score_checked,
    validate_params,
)
from .._validation import check_not_strings as _check_real
from ._executors import EXECUTORS, check_scheduler, dask_client, ray_session, run_dask, run_inprocess, run_ray
from ._graphs import check_graph, cyclic_allocation, depths, make_path, resolve_output_agent
from ._message import agent_step

__all__ = ["NetworkedDAGRegressor", "SketchSizeWarning", "default_sketch_size"]

_PROTOCOLS = ("full", "sketch", "subsample")
_SKETCHES = ("gaussian", "srht", "countsketch")
_ENGINES = ("auto", "messages", "coef")
# failure probability behind the k-warning and the default k (networked_learning reconstruction notes, section 1.3, T6)
SKETCH_DELTA = 0.05


class SketchSizeWarning(UserWarning):
    """``k`` is below ``d + 1 + 2 ln(2/delta)`` (delta = 0.05): the subspace-embedding guarantee (T6/T7) is void."""


def default_sketch_size(d, delta=SKETCH_DELTA, eta=0.5):
    r"""Sketch size giving a Gaussian :math:`\eta`-subspace embedding of ``span([X, y])`` w.p. ``1 - delta``.

    :math:`k = \lceil(\sqrt{d+1} + \sqrt{2\ln(2/\delta)})^2/\eta^2\rceil` (networked_learning reconstruction notes, T6
    with ``r = d + 1``); with the defaults, ``k = 131`` for ``d = 8``.

    Parameters
    ----------
    d : int
        Number of features, at least 1.
    delta : float, default=0.05
        Failure probability, in (0, 1).
    eta : float, default=0.5
        Distortion, in (0, 1).

    Returns
    -------
    int
        The sketch size ``k``.

    Examples
    --------
    >>> default_sketch_size(8)
    131

    Raises
    ------
    ValueError
        ``d`` not an int >= 1, ``delta`` outside (0, 1) or ``eta`` outside (0, 1) (``eta = 0`` would need
        an infinite sketch; ``eta >= 1`` gives no lower embedding bound).
    """
    d = check_scalar_int(d, "d", low=1)
    delta = check_scalar_float(delta, "delta", low=0.0, high=1.0, closed="neither")
    eta = check_scalar_float(eta, "eta", low=0.0, high=1.0, closed="neither")
    return _th.gaussian_ose_min_k(d + 1, eta, delta)




class _TorchGaussianSketch:
    """The same Gaussian sketch, applied with torch (blocks drawn identically, matmul on device)."""

    def __init__(self, sketch, device):
        self._sketch = sketch
        self._device = device

    def apply(self, A):
        from accel.networked_learning import gaussian_sketch_apply_torch

        sk = self._sketch
        return gaussian_sketch_apply_torch(sk.k, sk.m, sk.seed, A, chunk=sk.chunk, device=self._device)


def _global_coefs(order, parents, fs, local, d, glob=None):
    """``{v: beta_v}`` from the local coefficients, ``beta_v = E_v theta_v + sum_u w_vu beta_u``, over
    ``order`` (``glob``, updated in place when given, holds the parents already computed)."""
    glob = {} if glob is None else glob
    for v in order:
        theta, w = local[v][0], local[v][1]
        beta = np.zeros(d)
        beta[list(fs[v])] = theta
        for wu, u in zip(w, parents[v]):
            beta += wu * glob[u]
        glob[v] = beta
    return glob


def _run_coef(Xc, yc, order, parents, fs, rcond):
    """The full protocol with each parent's prediction recomputed from its coefficients (``Xc @ beta_u``)
    instead of received: ``{v: (theta_v, w_v, nbytes_v)}``."""
    d = Xc.shape[1]
    local, glob = {}, {}
    for v in order:
        local[v], _ = agent_step(Xc[:, list(fs[v])], yc, None, rcond, *(Xc @ glob[u] for u in parents[v]))
        _global_coefs([v], parents, fs, local, d, glob)
    return local


class NetworkedDAGRegressor(RegressorMixin, BaseEstimator):
    r"""Linear agents on a DAG, each fitting least squares on its own features and its parents' predictions.

    Agent ``v`` sees the columns :math:`S_v` of ``X`` (``feature_sets[v]``), the shared label column ``y``
    and the predictions of its parents :math:`\mathrm{Pa}(v)` in ``graph``. In topological order it solves
    (min-norm least squares)

    .. math:: (\hat\theta_v, \hat w_v) = \arg\min_{\theta, w}
              \Big\|y - X_{S_v}\theta - \sum_{u\in\mathrm{Pa}(v)} w_u \hat y_u\Big\|^2

    and sends :math:`\hat y_v = X_{S_v}\hat\theta_v + \sum_u \hat w_u\hat y_u` to its children (Kearns,
    Roth & Ryu's model on the empirical measure). Every agent's prediction is linear in ``x``:
    :math:`f_v(x) = \beta_v^\top x`, with :math:`\beta_v = E_v\hat\theta_v + \sum_u\hat w_u\beta_u`.

    Protocols (messages per edge):

    * ``"full"``: the message is the in-sample prediction column, ``m`` floats.
    * ``"sketch"`` (the target paper's shared-sketch protocol, formulas reconstructed [R]): every agent
      regenerates the same :math:`S\in\mathbb{R}^{k\times m}` from a shared seed, sketches its own columns
      and ``y``, and sends :math:`z_v = S\hat y_v` (``k`` floats). By the reduction lemma this equals the
      full protocol run on ``(S X, S y)``; ``engine="messages"`` runs the literal message passing,
      ``engine="coef"`` the reduction.
    * ``"subsample"``: the full protocol on a shared uniform row subset of size ``k`` (``k`` floats per
      edge; the baseline named by the paper's abstract).

    Parameters
    ----------
    graph : networkx.DiGraph or None, default=None
        DAG of agents (edge ``u -> v``: ``v`` receives ``u``'s prediction). ``None``: a path of ``d``
        agents (``d`` = number of features), agent ``t`` seeing feature ``t`` (cyclic allocation).
    feature_sets : dict node -> list of int, or None, default=None
        Features seen by each agent. ``None``: cyclic single-feature allocation along the topological
        order of ``graph`` (agent number ``t`` sees feature ``t mod d``). An agent with no feature and no
        parent is allowed and predicts 0 (plus the intercept).
    protocol : {"full", "sketch", "subsample"}, default="full"
    sketch : {"gaussian", "srht", "countsketch"}, default="gaussian"
        Sketch family for ``protocol="sketch"`` (Gaussian: :math:`S_{ij}\sim N(0, 1/k)`).
    k : int or None, default=None
        Sketch size / number of subsampled rows. ``None``: :func:`default_sketch_size` ``(d)`` (a
        1/2-subspace embedding of ``span([X, y])`` w.p. 0.95), capped at ``m`` for ``"subsample"``.
        Ignored by ``"full"``. Must be at least :math:`\max_v(|S_v| + |\mathrm{Pa}(v)|) + 1` and at most
        ``n_samples`` (``ValueError`` otherwise: a sketch with more rows than the sample carries more
        floats than the full message; the default is capped at ``n_samples`` for both protocols).
    output_agent : node or None, default=None
        Agent whose prediction ``predict`` returns. ``None``: the deepest sink (``ValueError`` when
        several sinks share the largest depth).
    fit_intercept : bool, default=True
        Centre ``X`` and ``y`` with the shared-sample means (``d + 1`` floats broadcast once) before
        fitting; ``intercept_`` restores the mean.
    rcond : float or None, default=None
        Singular-value cut-off (relative to the largest) of each agent's ``lstsq``; ``None`` means
        ``POPULATION_RCOND = 1e-8``, the default of :func:`population_fit`: two parents whose
        predictions are equal in exact arithmetic reach an agent with different round-off, and
        numpy's default ``eps * max(rows, cols)`` would keep that difference as a direction and fit
        noise along it (the two engines then disagree).
    engine : {"auto", "messages", "coef"}, default="auto"
        ``"messages"``: literal message passing. ``"coef"``: for ``"sketch"``, the full protocol on
        ``(S X, S y)`` (reduction lemma: the sketch is applied once to ``[X, y]`` instead of once per
        agent, about 10x faster on a 24-agent path); for ``"full"``/``"subsample"``, parent predictions
        are recomputed from their global coefficients (``X beta_u``). All engines agree up to
        round-off (the reduction is exact for every linear sketch). ``"auto"``: ``"coef"`` for
        ``"sketch"``, ``"messages"`` otherwise (the faster exact engine of each protocol); the engine
        used is stored in ``engine_``.
    backend : {"auto", "numpy", "torch", "numba"}, default="numpy"
        Where the Gaussian sketch is applied (the heavy step of ``protocol="sketch"``): ``"numpy"`` (or
        ``"numba"``) uses the chunked numba kernel; ``"torch"`` draws the same blocks and multiplies them on
        ``device`` (:func:`accel.networked_learning.gaussian_sketch_apply_torch`; equal to 1e-12) and
        needs ``protocol="sketch"`` with ``sketch="gaussian"``. ``"auto"`` picks torch when ``X`` or ``y`` is
        a torch tensor or ``device`` names an accelerator (and the sketch is Gaussian), and the CPU path
        otherwise; see the "Backends: one rule" section of the scaling page. SRHT and CountSketch always
        run their numba kernels (they cost O(m log m) and O(m) per column).
    device : str or torch.device, optional
        Device of the torch backend (default: CUDA when available).
    executor : {"inprocess", "dask", "ray"}, default="inprocess"
        Where the agents run. ``"inprocess"``: one after the other in this process. ``"dask"``: each agent's
        fit is a task of the running ``dask.distributed`` client (``distributed.get_client()``), submitted
        in topological order with its parents' message futures as arguments; ``"ray"``: each agent is a Ray
        task of the running session taking its parents' message ``ObjectRef``\ s. The messages go from
        worker to worker through the engine (never through this process), each agent sketching or
        subsampling its own columns on its worker; only the coefficients come back. Every executor runs
        the same per-agent step, so the fitted attributes equal the in-process ones (to BLAS round-off).
        Needs the ``scale`` extra; ``engine="auto"`` means ``"messages"`` on a cluster, ``engine="coef"``
        is refused there for ``"full"``/``"subsample"`` (it sends no message).
    scheduler : str or None, default=None
        With ``executor="dask"``: the address of a dask scheduler (``"tcp://host:8786"``), a client is
        opened for the fit and closed after it; with ``executor="ray"``: ``"local"``, ``"auto"`` or
        ``"ray://host:10001"``, Ray is started for the fit and shut down after it. ``None``: use the
        running client / session (``ValueError`` saying how to start one when there is none).
    random_state : None, int, SeedSequence or Generator, default=None
        Source of the shared seed (one draw per ``fit``) for the sketch or the row subset.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Global coefficients of the output agent.
    intercept_ : float
    global_coefs_ : dict node -> ndarray of shape (n_features,)
    local_coefs_ : dict node -> (theta_v, w_v)
        ``theta_v`` over ``feature_sets[v]`` (sorted), ``w_v`` over ``graph.predecessors(v)`` (in
        networkx order).
    intercepts_ : dict node -> float
    order_ : list
        Topological order used.
    depth_ : dict node -> int
        Agents on the longest path ending at ``v`` (sources: 1).
    comm_floats_ : int
        Floats sent along edges: ``m`` (full) or ``k`` (sketch, subsample) times the number of edges.
    communication_bytes_ : dict (u, v) -> int
        Bytes serialised for the message on each edge, measured by the sending agent (on its worker for a
        cluster executor) as ``len(pickle.dumps(message, protocol=5))`` of the object that travels: a
        contiguous float64 vector pickled as its raw bytes, ``8 * n`` bytes plus a fixed overhead of
        about 80 bytes (pickle opcodes and frame, the constructor's module path, the byte-string length).
    communication_nominal_bytes_ : dict (u, v) -> int
        The protocol's cost per edge: ``8 * m`` (full) or ``8 * k`` (sketch, subsample) bytes.
    train_mse_ : dict node -> float
        Each agent's mean squared error on all ``m`` training rows (for the sketched protocol too).
    graph_ : networkx.DiGraph
    feature_sets_ : dict node -> tuple of int
    output_agent_ : node
    k_ : int or None
    engine_ : {"messages", "coef"}
        The engine used (``"auto"`` resolved).
    executor_ : {"inprocess", "dask", "ray"}
        Where the agents ran.
    backend_ : {"numpy", "torch"}
        The core that applied the sketch (``backend`` resolved).
    sketch_seed_ : int or None
        The shared seed: ``make_sketch(sketch, k_, m, sketch_seed_)`` regenerates ``S``.
    rows_ : ndarray of int or None
        The shared row subset (``"subsample"``).
    constant_features_ : ndarray of int
        Columns that are constant on the training sample. They are kept (a centred constant column is 0
        and gets coefficient 0 from the min-norm solve); no error is raised.
    n_features_in_ : int

    Raises
    ------
    ValueError
        ``k`` below :math:`\max_v(|S_v|+|\mathrm{Pa}(v)|)+1` (the compressed fit would interpolate),
        ``k > m`` (``n_samples``), invalid graphs (cycles, out-of-range features), NaN/inf input.

    Warns
    -----
    SketchSizeWarning
        ``k < d + 1 + 2 ln(2/0.05)``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 3)); y = X @ [1.0, -2.0, 0.5]
    >>> est = NetworkedDAGRegressor(graph=nx.path_graph(6, create_using=nx.DiGraph)).fit(X, y)
    >>> est.depth_[5], est.comm_floats_
    (6, 1000)
    """

    _parameter_constraints: dict = {
        "backend": [OrderedStrOptions(RESOLVE_OPTIONS)],
        "device": "no_validation",  # None, a str or a torch.device: resolved (and checked) by the backend layer
        "engine": [OrderedStrOptions(_ENGINES)],
        "executor": [OrderedStrOptions(EXECUTORS)],
        # a dict node -> feature indices or a list indexed by node (checked against the graph and d in fit)
        "feature_sets": [dict, list, None],
        "fit_intercept": ["boolean"],
        "graph": [nx.DiGraph, None],  # its nodes and acyclicity are checked in fit
        "k": [Interval(Integral, 1, None, closed="left"), None],
        "output_agent": [Hashable, None],  # a node label: checked against the graph in fit
        "protocol": [OrderedStrOptions(_PROTOCOLS)],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "rcond": [Interval(Real, 0, None, closed="left"), None],
        "scheduler": [str, None],
        "sketch": [OrderedStrOptions(_SKETCHES)],
    }

    def __init__(
        self,
        *,
        graph=None,
        feature_sets=None,
        protocol="full",
        sketch="gaussian",
        k=None,
        output_agent=None,
        fit_intercept=True,
        rcond=None,
        engine="auto",
        backend="numpy",
        device=None,
        executor="inprocess",
        scheduler=None,
        random_state=None,
    ):
        self.graph = graph
        self.feature_sets = feature_sets
        self.protocol = protocol
        self.sketch = sketch
        self.k = k
        self.output_agent = output_agent
        self.fit_intercept = fit_intercept
        self.rcond = rcond
        self.engine = engine
        self.backend = backend
        self.device = device
        self.executor = executor
        self.scheduler = scheduler
        self.random_state = random_state

    def _check_params(self):
        """The parameters as plain values, after :func:`validate_params` (their rules live in
        ``_parameter_constraints``), and the two rules that join parameters."""
        prm = {name: getattr(self, name) for name in ("protocol", "sketch", "k", "rcond", "engine", "backend",
                                                       "executor")}
        prm["fit_intercept"] = bool(self.fit_intercept)
        prm["scheduler"] = check_scheduler(self.scheduler, prm["executor"])
        if prm["executor"] != "inprocess" and prm["engine"] == "coef" and prm["protocol"] != "sketch":
            raise ValueError(
                f"engine='coef' recomputes the parents' predictions from their coefficients and sends no "
                f"message, so it cannot run on executor={prm['executor']!r}; use engine='messages' or 'auto' "
                f"(got protocol={prm['protocol']!r})."
            )
        return prm

    def _resolve_backend(self, prm, X, y):
        """The core that applies the sketch: ``accel.backend.resolve``, then the torch path's constraint."""
        backend = resolve(prm["backend"], self.device, (X, y))
        if backend == "torch" and (prm["protocol"], prm["sketch"]) != ("sketch", "gaussian"):
            if prm["backend"] == "auto":  # only the Gaussian sketch has a torch core: keep the CPU path
                return "numpy"
            raise ValueError(
                "'backend'='torch' applies the Gaussian sketch on torch: it needs protocol='sketch' and "
                f"sketch='gaussian'; got protocol={prm['protocol']!r} and sketch={prm['sketch']!r} "
                "(use backend='numpy' or 'auto')."
            )
        if backend == "torch" and prm["executor"] != "inprocess":
            if prm["backend"] == "auto":  # the agents' workers apply the sketch with the CPU kernels
                return "numpy"
            raise ValueError(
                f"'backend'='torch' applies the sketch on this process's device and cannot run inside the "
                f"agents' tasks of executor={prm['executor']!r}; use backend='numpy' or 'auto'."
            )
        return backend

    def _resolve_graph(self, d):
        graph = self.graph
        if graph is None:
            if self.feature_sets is not None:
                raise ValueError("'feature_sets' was given without 'graph'; pass both, or neither (default path).")
            graph = make_path(d)
        # data-dependent: the graph's nodes, its acyclicity and the feature indices are checked against d
        if self.feature_sets is None:
            if not nx.is_directed_acyclic_graph(graph):
                check_graph(graph, {}, d)  # raises the cycle error
            feature_sets = cyclic_allocation(graph, d)
        else:
            feature_sets = self.feature_sets
        fs = check_graph(graph, feature_sets, d)
        return graph, fs

    def _compression(self, prm, backend, d, m, n_cols):
        """``(k, seed, rows, sketch)`` of the protocol: all None for ``"full"``; the message size, the seed drawn
        from ``random_state`` and the subsampled rows or the sketch (torch-backed on that backend) otherwise.
        ``n_cols`` is the widest local design (own features plus parents' messages)."""
        protocol = prm["protocol"]
        if protocol == "full":
            return None, None, None, None
        k = _message_size(prm["k"], protocol, d, m, n_cols)
        rng = check_random_state(self.random_state)
        seed = int(rng.integers(0, 2**31 - 1))
        if protocol == "subsample":
            from ._sketch import subsample_rows

            return k, seed, subsample_rows(k, m, seed), None
        from ._sketch import make_sketch

        sketch_obj = make_sketch(prm["sketch"], k, m, seed)
        if backend == "torch":
            sketch_obj = _TorchGaussianSketch(sketch_obj, self.device)
        return k, seed, None, sketch_obj

    def _run_agents(self, prm, order, parents, own, y, compress):
        """``{v: (theta_v, w_v, nbytes_v)}`` from the executor (one :func:`agent_step` per agent)."""
        executor, scheduler = prm["executor"], prm["scheduler"]
        if executor == "inprocess":
            return run_inprocess(order, parents, own, y, compress, prm["rcond"])
        if executor == "dask":
            with dask_client(scheduler) as client:
                return run_dask(client, order, parents, own, y, compress, prm["rcond"])
        with ray_session(scheduler) as ray:
            return run_ray(ray, order, parents, own, y, compress, prm["rcond"])

    def fit(self, X, y):
        """Run the protocol on the shared sample ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (m, d)
        y : array-like of shape (m,)

        Returns
        -------
        self : NetworkedDAGRegressor
        """
        validate_params(self)
        prm = self._check_params()
        backend = self._resolve_backend(prm, X, y)
        _check_real(X, "X")
        _check_real(y, "y")
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        y = np.asarray(y, dtype=np.float64)
        m, d = X.shape
        graph, fs = self._resolve_graph(d)
        dep = depths(graph)
        out = resolve_output_agent(graph, self.output_agent, dep)
        order = list(nx.topological_sort(graph))
        parents = {v: list(graph.predecessors(v)) for v in order}

        if prm["fit_intercept"]:
            x_mean, y_mean = X.mean(axis=0), float(y.mean())
        else:
            x_mean, y_mean = np.zeros(d), 0.0
        Xc, yc = X - x_mean, y - y_mean
        self.constant_features_ = np.flatnonzero(np.ptp(X, axis=0) == 0) if m else np.zeros(0, dtype=int)

        protocol = prm["protocol"]
        n_cols = max(len(fs[v]) + len(parents[v]) for v in order)
        k, seed, rows, sketch_obj = self._compression(prm, backend, d, m, n_cols)
        self.backend_ = backend
        engine = prm["engine"]
        if engine == "auto":
            engine = "coef" if protocol == "sketch" and prm["executor"] == "inprocess" else "messages"
        self.engine_ = engine
        self.executor_ = prm["executor"]

        compress = rows if protocol == "subsample" else sketch_obj
        if engine == "coef" and protocol == "sketch":  # the reduction: sketch [X, y] once, then full messages
            Xc, yc, compress = sketch_obj.apply(Xc), sketch_obj.apply(yc), None
        if engine == "coef" and protocol != "sketch":
            Xa, ya = (Xc, yc) if rows is None else (Xc[rows], yc[rows])
            local = _run_coef(Xa, ya, order, parents, fs, prm["rcond"])
        else:
            own = {v: Xc[:, list(fs[v])] for v in order}
            local = self._run_agents(prm, order, parents, own, yc, compress)
        glob = _global_coefs(order, parents, fs, local, d)

        self.graph_ = graph
        self.feature_sets_ = fs
        self.order_ = order
        self.depth_ = dep
        self.output_agent_ = out
        self.k_ = k
        self.sketch_seed_ = seed
        self.rows_ = rows
        self.local_coefs_ = {v: (local[v][0], local[v][1]) for v in graph.nodes()}
        self.global_coefs_ = {v: glob[v] for v in graph.nodes()}
        self.intercepts_ = {v: float(y_mean - x_mean @ glob[v]) for v in graph.nodes()}
        self.coef_ = glob[out].copy()
        self.intercept_ = self.intercepts_[out]
        per_edge = m if protocol == "full" else k
        self.comm_floats_ = int(per_edge * graph.number_of_edges())
        self.communication_bytes_ = {(u, v): int(local[u][2]) for u, v in graph.edges()}
        self.communication_nominal_bytes_ = {(u, v): 8 * int(per_edge) for u, v in graph.edges()}
        with np.errstate(over="ignore", invalid="ignore"):
            self.train_mse_ = {
                v: float(np.mean((y - X @ glob[v] - self.intercepts_[v]) ** 2)) if m else 0.0 for v in graph.nodes()
            }
        if not all(math.isfinite(e) for e in self.train_mse_.values()):
            raise ValueError(
                "the agents' training mean squared errors overflow float64: 'X' or 'y' has entries too large "
                "(squares beyond 1.8e308); rescale the data."
            )
        return self

    def _check_agent(self, agent):
        if agent is None:
            return self.output_agent_
        if agent not in self.global_coefs_:
            raise ValueError(f"'agent' must be a node of the fitted graph; got {agent!r}.")
        return agent

    def predict(self, X, agent=None):
        """Prediction of the output agent (or of ``agent``): ``X @ beta_v + intercept_v``.

        Parameters
        ----------
        X : array-like of shape (n, d)
        agent : node or None, default=None

        Returns
        -------
        ndarray of shape (n,)
        """
        check_is_fitted(self)
        _check_real(X, "X")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        v = self._check_agent(agent)
        return X @ self.global_coefs_[v] + self.intercepts_[v]

    def score(self, X, y, sample_weight=None):
        r"""Coefficient of determination :math:`R^2` of the output agent's prediction.

        As :meth:`sklearn.base.RegressorMixin.score`; where the sums of squares overflow float64 they
        are computed on rescaled residuals (same :math:`R^2`). ``ValueError`` when :math:`R^2` itself is
        beyond float64.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        float
        """
        return r2_score_checked(y, self.predict(X), sample_weight)

    def agent_predict(self, X):
        """Predictions of every agent: ``{v: ndarray of shape (n,)}``.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Samples.

        Returns
        -------
        dict
            Agent to its predictions, an ndarray of shape (n,).
        """
        check_is_fitted(self)
        _check_real(X, "X")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return {v: X @ b + self.intercepts_[v] for v, b in self.global_coefs_.items()}


def _message_size(k, protocol, d, m, p_max):
    """The checked sketch size / row count ``k`` of a compressed protocol (default
    ``min(default_sketch_size(d), m)``); ``p_max`` is ``max_v |S_v| + |Pa(v)|``. Warns with
    ``SketchSizeWarning`` below the subspace-embedding size."""
    if k is None:
        k = min(default_sketch_size(d), m)
    if m < p_max + 1:  # no admissible k in [p_max + 1, n_samples]
        raise ValueError(
            f"protocol={protocol!r} needs n_samples >= max_v |S_v| + |Pa(v)| + 1 = {p_max + 1}; "
            f"got n_samples = {m}."
        )
    if k < p_max + 1:
        raise ValueError(
            f"'k' must be an int in [{p_max + 1}, inf] (max_v |S_v| + |Pa(v)| + 1, else the compressed "
            f"least squares interpolates); got {k}."
        )
    if k > m:
        raise ValueError(
            f"'k' must be an int in [{p_max + 1}, {m}] (at most n_samples = {m}: a larger "
            f"{'sketch' if protocol == 'sketch' else 'row subset'} sends more floats than the full "
            f"message) for protocol={protocol!r}; got {k}."
        )
    k_warn = d + 1 + 2 * math.log(2 / SKETCH_DELTA)
    if k < k_warn:
        warnings.warn(
            f"k={k} is below d + 1 + 2 ln(2/{SKETCH_DELTA}) = {k_warn:.1f}: the subspace-embedding "
            "guarantee does not apply; increase 'k'.",
            SketchSizeWarning,
            stacklevel=3,
        )
    return k
