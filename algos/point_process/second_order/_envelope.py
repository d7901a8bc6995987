r"""Simulation envelopes of the second-order summaries (Ripley 1977; Diggle 2003, section 2.7) and the
homogeneous Poisson simulator they use; re-exported by :mod:`._second_order`, whose docstring defines the
summaries.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from theory.point_process import poisson_k_function

from ..._validation import check_random_state, check_scalar_float, check_scalar_int
from .._quadrature import duplicates_reported
from .._window import Window
from ._nearest_neighbour import NN_STATS
from ._second_order import _STATS, MAX_EXPECTED_POINTS, N_LARGE, _check_pattern, _check_radii
from ._valid_range import RangeWarning


def simulate_poisson(window, intensity, random_state=None):
    """A homogeneous Poisson pattern of ``intensity`` points per unit area in ``window`` (polygons by
    rejection from the bounding box).

    Parameters
    ----------
    window : tuple, array-like of shape (V, 2) or Window
        The window.
    intensity : float
        Points per unit area, at least 0.
    random_state : None, int, SeedSequence or Generator, default=None
        Seed.

    Returns
    -------
    ndarray of shape (n, 2)
        The points.
    """
    win = Window.from_any(window)
    lam = check_scalar_float(intensity, "intensity", low=0.0)
    rng = check_random_state(random_state)
    xmin, xmax, ymin, ymax = win.bounds
    box = (xmax - xmin) * (ymax - ymin)
    if not math.isfinite(lam * box) or lam * box > MAX_EXPECTED_POINTS:
        raise ValueError(f"'intensity' times the window's bounding-box area must be at most {MAX_EXPECTED_POINTS:.0e} "
                         f"expected points; got {lam * box:.3g}.")
    m = rng.poisson(lam * box)
    P = np.column_stack([rng.uniform(xmin, xmax, m), rng.uniform(ymin, ymax, m)])
    if not win.is_rectangle and m:
        P = P[win.contains(P)]
    return P


def _vogcam_sampler(est, grid):
    """Sampler of patterns from a fitted VoGCAM's posterior: the log-intensity drawn jointly at the
    centres of a ``grid x grid`` raster of the bounding box, then Poisson counts per cell."""
    win = est.window_
    xmin, xmax, ymin, ymax = win.bounds
    hx, hy = (xmax - xmin) / grid, (ymax - ymin) / grid
    xs = xmin + (np.arange(grid) + 0.5) * hx
    ys = ymin + (np.arange(grid) + 0.5) * hy
    G = np.column_stack([np.tile(xs, grid), np.repeat(ys, grid)])

    def sample(rng):
        f = est.sample_posterior(G, n_samples=1, random_state=rng)[0]
        cnt = rng.poisson(np.exp(np.minimum(f, 700.0)) * hx * hy)
        cells = np.repeat(np.arange(grid * grid), cnt)
        u = rng.random((cells.size, 2))
        P = np.column_stack([G[cells, 0] + (u[:, 0] - 0.5) * hx, G[cells, 1] + (u[:, 1] - 0.5) * hy])
        if not win.is_rectangle and len(P):
            P = P[win.contains(P)]
        return P

    return sample, win


def _sampler(model, X, win, grid):
    if isinstance(model, str):
        if model.lower() not in ("poisson", "csr"):
            raise ValueError(f"'model' must be 'poisson', a fitted VoGCAM, a MinContrastFit or a callable; "
                             f"got {model!r}.")
        if X is None:
            raise ValueError("'X' is required with model='poisson' (its intensity is n / |W|).")
        lam = len(X) / win.area
        return (lambda rng: simulate_poisson(win, lam, rng)), win
    if hasattr(model, "sample_posterior") and hasattr(model, "window_"):
        return _vogcam_sampler(model, grid)
    if hasattr(model, "simulate"):
        w = getattr(model, "window", None)
        return (lambda rng: model.simulate(random_state=rng)), (Window.from_any(w) if w is not None else win)
    if callable(model):
        return model, win
    raise TypeError(f"'model' must be 'poisson', a fitted VoGCAM, a MinContrastFit or a callable; "
                    f"got {type(model).__name__}.")


@dataclasses.dataclass
class Envelope:
    """Simulation envelope of a summary, with the global maximum-absolute-deviation test.

    Parameters
    ----------
    statistic : str
        Name of the summary.
    r : ndarray
        Distances.
    observed : ndarray or None
        The summary of the pattern (None without a pattern).
    theo : ndarray
        Its value for a Poisson process.
    mean : ndarray
        Mean of the simulated curves.
    lo, hi : ndarray
        Pointwise min/max over the ``n_sim`` simulations, i.e. a two-sided pointwise test of level
        ``2 / (n_sim + 1)``.
    sims : ndarray of shape (n_sim, len(r))
        The simulated curves.
    n_sim : int
        Number of simulations.
    deviation : float or None
        Maximum absolute deviation of the pattern's curve (from ``theo`` when the model is Poisson,
        else from the mean of the simulations).
    p_value : float or None
        Its Monte-Carlo p-value ``(1 + #{sims at least as deviant}) / (n_sim + 1)``.
    """

    statistic: str
    r: np.ndarray
    observed: np.ndarray | None
    theo: np.ndarray
    mean: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    sims: np.ndarray
    n_sim: int
    deviation: float | None
    p_value: float | None

    def plot(self, ax=None):
        """Grey band, simulation mean, Poisson value and the observed curve (matplotlib axes returned).

        Parameters
        ----------
        ax : matplotlib Axes or None, default=None
            Axes to draw on (``None``: new axes).

        Returns
        -------
        matplotlib Axes
            The axes.
        """
        if ax is None:
            import matplotlib.pyplot as plt

            ax = plt.gca()
        ax.fill_between(self.r, self.lo, self.hi, color="0.8", label=f"envelope ({self.n_sim} sims)")
        ax.plot(self.r, self.mean, "k:", lw=1, label="simulation mean")
        ax.plot(self.r, self.theo, "k--", lw=0.8, label="Poisson")
        if self.observed is not None:
            ax.plot(self.r, self.observed, "C3", lw=1.5, label="observed")
        ax.set_xlabel("r")
        ax.set_ylabel(self.statistic)
        ax.legend(fontsize=8)
        return ax


def envelope(model, statistic="L", n_sim=39, X=None, window=None, r=None, correction=None,
             random_state=None, grid=64, backend="sequential", n_jobs=1, scheduler=None, **kwargs):
    """Simulation envelope of a second-order summary under a model.

    Parameters
    ----------
    model : "poisson", fitted VoGCAM, MinContrastFit, or callable ``rng -> (m, 2) points``
        "poisson": homogeneous Poisson with the intensity ``n / |W|`` of ``X``. A fitted
        :class:`VoGCAM`: its posterior (field drawn on a ``grid x grid`` raster). An object with
        ``simulate(random_state=)`` (e.g. :class:`MinContrastFit`).
    statistic : {"K", "L", "g", "G", "F", "J"} or callable ``(points, window, r) -> values``, default="L"
        "G", "F", "J": the nearest-neighbour summaries (:func:`g_function` ...), default r grid
        spatstat's for G and J (:func:`._nearest_neighbour.default_nn_radii`), F's from its raster
        (:func:`._nearest_neighbour.default_f_radii`), and correction "km".
    n_sim : int >= 1, default=39
        39 simulations give a pointwise two-sided test of level 0.05.
    X : array (n, 2), optional
        The observed pattern (its curve, the deviation test; required for "poisson").
    window, r, correction
        Passed to the statistic (``correction`` default: that of the statistic).
    random_state : None, int or Generator
        Each simulation draws from a child of this seed (``SeedSequence.spawn``).
    grid : int, default=64
        Raster side for the posterior draws of a fitted :class:`VoGCAM`.
    backend : str, default="sequential"
        Where the ``n_sim`` simulations run: ``"sequential"`` (this process, in order), a local joblib
        backend (``"loky"``, ``"threading"``) or a cluster engine, ``"dask"`` (a running
        ``dask.distributed`` client, or ``scheduler``) or ``"ray"`` (after ``ray.init()``, or
        ``scheduler``), through :func:`algos.experiments.monte_carlo`. Simulation ``i`` draws from the
        same child seed whatever runs it: the envelope is identical to the sequential one.
    n_jobs : int, default=1
        Parallel jobs for a local backend; with ``"dask"`` / ``"ray"``, 1 means every worker.
    scheduler : str or None, default=None
        Cluster address for ``"dask"`` (``"tcp://host:8786"``) or ``"ray"`` (``"ray://host:10001"``,
        ``"auto"``, ``"local"``), opened for the call; ``None`` uses the running client or session.
    **kwargs
        Passed to the statistic.

    Returns
    -------
    Envelope

    Notes
    -----
    With a cluster backend the model, the window and the statistic are shipped to the workers
    (cloudpickle); a fitted :class:`VoGCAM` travels whole, so the workers need ``algos-theory``
    installed. Only the ``n_sim`` curves (``n_sim x len(r)`` floats) come back.
    """
    n_sim = check_scalar_int(n_sim, "n_sim", low=1, high=100000)
    grid = check_scalar_int(grid, "grid", low=2, high=2048)
    if not isinstance(backend, str):
        raise TypeError(f"'backend' must be a joblib backend name or 'dask' / 'ray' (str); got {backend!r} of type "
                        f"{type(backend).__name__}.")
    from algos._engines import check_scheduler
    from algos.experiments import _check_n_jobs

    n_jobs = _check_n_jobs(n_jobs)
    scheduler = check_scheduler(scheduler, backend, "backend")
    w = window
    if w is None and not isinstance(model, str):
        w = getattr(model, "window_", None)
        if w is None:
            w = getattr(model, "window", None)
    if X is not None:
        X, win = _check_pattern(X, w)
        if len(X) < 2:
            raise ValueError(f"'X' needs at least 2 points for a second-order summary; got {len(X)}.")
    else:
        if w is None:
            raise ValueError("'window' is required when 'X' is not given.")
        win = Window.from_any(w)
    nn = isinstance(statistic, str) and statistic in NN_STATS
    if nn and r is None:
        r = NN_STATS[statistic][1](win, len(X) if X is not None else 0)
    r = _check_radii(r, win)
    sample, _ = _sampler(model, X, win, grid)
    if isinstance(statistic, str):
        if statistic not in _STATS and not nn:
            raise ValueError(f"'statistic' must be one of ('K', 'L', 'g', 'G', 'F', 'J') or a callable; "
                             f"got {statistic!r}.")
        fn = NN_STATS[statistic][0] if nn else _STATS[statistic]
        kw = dict(kwargs)
        if correction is None and statistic in ("K", "L"):
            # one correction for the pattern and every simulation (the large-n rule decided on X)
            correction = "border" if (X is not None and len(X) > N_LARGE) else "isotropic"
        if correction is not None:
            kw["correction"] = correction

        def stat(P):
            if len(P) < 2:
                return np.full(len(r), np.nan)
            with warnings.catch_warnings():
                # the simulations share the pattern's r: its range warning, if any, is the one that counts
                warnings.simplefilter("ignore", RangeWarning)
                return fn(P, win, r, **kw).value

        sname = statistic
        theo = {"K": poisson_k_function(r), "L": r.copy()}.get(statistic, np.ones_like(r))
        if statistic in ("G", "F"):
            lam = len(X) / win.area if X is not None else np.nan
            theo = 1.0 - np.exp(-lam * np.pi * r * r)
    elif callable(statistic):
        def stat(P):
            return np.asarray(statistic(P, win, r), dtype=np.float64).reshape(len(r))

        sname = getattr(statistic, "__name__", "statistic")
        theo = np.full(len(r), np.nan)
    else:
        raise TypeError(f"'statistic' must be 'K', 'L', 'g' or a callable; got {type(statistic).__name__}.")
    root = np.random.SeedSequence(check_random_state(random_state).integers(0, 2**63 - 1))
    if backend == "sequential":
        with duplicates_reported():  # the pattern's copies are reported once, above
            sims = np.vstack([stat(sample(np.random.default_rng(s))) for s in root.spawn(n_sim)])
    else:
        from algos.experiments import monte_carlo

        def one_simulation(random_state):
            with duplicates_reported():
                return np.asarray(stat(sample(random_state)), dtype=np.float64)

        # monte_carlo spawns the same n_sim children of ``root`` in the same order
        sims = np.vstack(monte_carlo(one_simulation, n_sim, random_state=root, n_jobs=n_jobs, backend=backend,
                                     scheduler=scheduler))
    with np.errstate(all="ignore"):
        mean = np.nanmean(sims, axis=0) if np.any(np.isfinite(sims)) else np.full(len(r), np.nan)
        lo, hi = np.nanmin(sims, axis=0), np.nanmax(sims, axis=0)
    with duplicates_reported():
        observed = (fn(X, win, r, **kw).value if isinstance(statistic, str) else stat(X)) if X is not None else None
    dev = p = None
    if observed is not None:
        poisson = isinstance(model, str)
        centre = theo if (poisson and np.all(np.isfinite(theo))) else mean
        ok = np.isfinite(observed) & np.isfinite(centre)
        dev = float(np.max(np.abs(observed[ok] - centre[ok]))) if ok.any() else float("nan")
        sd = np.array([np.nanmax(np.abs(s[ok] - centre[ok])) if np.any(np.isfinite(s[ok])) else np.inf
                       for s in sims])
        p = float((1 + np.sum(sd >= dev)) / (n_sim + 1))
    return Envelope(sname, r, observed, theo, mean, lo, hi, sims, n_sim, dev, p)
