"""File input/output shared by the package: atomic writes, the memory budget of file readers and
generators, output-path checks, and the CSV reader of the command-line subcommands.

* :func:`atomic_write` writes to a temporary file in the target folder, flushes and fsyncs it, then
  renames it over the target (:func:`os.replace`): a reader, a crash or a kill sees either the
  previous file or the complete new one, never a partial file under the target name.
* :func:`read_budget_bytes` is the memory a reader may allocate for what a file declares (default: the
  larger of 128 MiB and 1024 times the file's size, at most half the physical memory; or the
  ``ALGOS_READ_BUDGET_MB`` environment variable): a small file cannot make the reader allocate much,
  while a large model file, which takes room of its own, is read as before;
  :func:`check_read_budget` refuses an estimate above it with a ``ValueError`` that gives the
  estimate, the place (file and line, or argument) and what to do.
* :func:`check_output_path` tells, before any work, whether a path can be written.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

import numpy as np

__all__ = [
    "MEMORY_BUDGET_ENV",
    "MEMORY_BUDGET_FRACTION",
    "READ_BUDGET_ENV",
    "READ_BUDGET_MB",
    "atomic_savefig",
    "atomic_write",
    "atomic_write_text",
    "check_output_dir",
    "check_memory_budget",
    "check_output_path",
    "check_read_budget",
    "memory_budget_bytes",
    "read_budget_bytes",
    "read_csv_columns",
]

#: Default memory budget (MiB) of a file reader or a size-driven generator.
READ_BUDGET_MB = 128
#: The default budget of a reader grows with the file: this many bytes of memory per byte of file.
READ_BUDGET_PER_FILE_BYTE = 1024
#: Environment variable that overrides :data:`READ_BUDGET_MB` (a positive number of MiB).
READ_BUDGET_ENV = "ALGOS_READ_BUDGET_MB"


@contextlib.contextmanager
def atomic_write(path, mode="w", *, encoding=None, newline=None):
    """Open a temporary file next to ``path`` and rename it over ``path`` when the block ends.

    The temporary file lives in the target's folder (so the final :func:`os.replace` is a rename on
    one file system, atomic on POSIX and Windows); it is flushed and ``fsync``-ed before the rename.
    When the block raises, the temporary file is removed and ``path`` is left as it was.

    Parameters
    ----------
    path : str or path-like
        The target file.
    mode : {"w", "wb"}, default="w"
        Text or binary.
    encoding : str or None, default=None
        Text encoding (text mode only; ``None`` means UTF-8).
    newline : str or None, default=None
        As for :func:`open` (text mode only).

    Yields
    ------
    file object
        The open temporary file.

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> with atomic_write(os.path.join(d, "x.txt")) as fh:
    ...     _ = fh.write("hello")
    >>> open(os.path.join(d, "x.txt")).read()
    'hello'
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"'mode' must be 'w' or 'wb'; got {mode!r}.")
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    kw = {} if mode == "wb" else {"encoding": encoding or "utf-8", "newline": newline}
    tmp = tempfile.NamedTemporaryFile(mode, dir=folder, prefix=f".{os.path.basename(path)}.",
                                      suffix=".tmp", delete=False, **kw)
    try:
        with tmp as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        try:  # keep the permissions an ordinary open() would give (NamedTemporaryFile makes 0600)
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(tmp.name, 0o666 & ~mask)
        except OSError:
            pass
        os.replace(tmp.name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp.name)
        raise


def _env_bytes(name):
    """The budget set by the environment variable ``name`` (a positive number of MiB) in bytes, or None."""
    env = os.environ.get(name)
    if not env:
        return None
    try:
        mb = float(env)
    except ValueError:
        mb = -1.0
    if not mb > 0 or mb != mb:
        raise ValueError(f"the environment variable {name} must be a positive number of MiB; got {env!r}.")
    return int(mb * 2**20)


def read_budget_bytes(max_bytes=None, file_bytes=0):
    """The memory budget in bytes: ``max_bytes`` if given, else ``ALGOS_READ_BUDGET_MB``, else the larger
    of 128 MiB and :data:`READ_BUDGET_PER_FILE_BYTE` times ``file_bytes``, capped at
    :func:`memory_budget_bytes`.

    Parameters
    ----------
    max_bytes : int or None, default=None
        An explicit budget in bytes (positive).
    file_bytes : int, default=0
        Size of the file being read (0 when unknown, e.g. a stream).

    Returns
    -------
    int
        The budget in bytes.
    """
    if max_bytes is not None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)) or max_bytes < 1:
            raise ValueError(f"'max_bytes' must be a positive integer; got {max_bytes!r}.")
        return int(max_bytes)
    from_env = _env_bytes(READ_BUDGET_ENV)
    if from_env is not None:
        return from_env
    scaled = min(READ_BUDGET_PER_FILE_BYTE * int(file_bytes), memory_budget_bytes())
    return max(READ_BUDGET_MB * 2**20, scaled)


def _fmt_bytes(n):
    try:
        n = float(n)
    except OverflowError:
        return "more than 1e308 bytes"
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} bytes"


def check_read_budget(nbytes, what, where, max_bytes=None, hint=None, file_bytes=0):
    """Raise ``ValueError`` when an allocation of ``nbytes`` exceeds the budget.

    Parameters
    ----------
    nbytes : int or float
        The estimate in bytes (a Python int, so no overflow).
    what : str
        What would be allocated, e.g. ``"states: 1000000000 (1e9 state names and a dense T)"``.
    where : str
        The place: ``"model.POMDP, line 3"`` or ``"'n_agents'"``.
    max_bytes : int or None, default=None
        Explicit budget (see :func:`read_budget_bytes`).
    hint : str or None, default=None
        What to do instead, appended to the message.
    file_bytes : int, default=0
        Size of the file being read (see :func:`read_budget_bytes`).

    Raises
    ------
    ValueError
        Naming the place, the estimate, the budget and how to raise it.
    """
    budget = read_budget_bytes(max_bytes, file_bytes)
    if nbytes > budget:
        knob = ("max_bytes=" if max_bytes is not None
                else f"the environment variable {READ_BUDGET_ENV} (MiB)")
        raise ValueError(
            f"{where}: {what} would need about {_fmt_bytes(nbytes)}, over the memory budget of "
            f"{_fmt_bytes(budget)}; " + (f"{hint}, or " if hint else "") + f"raise the budget with {knob}."
        )


#: Environment variable that sets the memory budget (MiB) of the size-driven generators.
MEMORY_BUDGET_ENV = "ALGOS_MEMORY_BUDGET_MB"
#: Default memory budget of the generators: this fraction of the machine's physical memory.
MEMORY_BUDGET_FRACTION = 0.5


def memory_budget_bytes():
    """The memory budget of the size-driven generators in bytes.

    ``ALGOS_MEMORY_BUDGET_MB`` (MiB) if set, else :data:`MEMORY_BUDGET_FRACTION` of the physical memory
    (8 GiB where the platform does not say).

    Returns
    -------
    int
        The budget in bytes.
    """
    from_env = _env_bytes(MEMORY_BUDGET_ENV)
    if from_env is not None:
        return from_env
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        total = 0
    return int(MEMORY_BUDGET_FRACTION * total) if total > 0 else 8 * 2**30


def check_memory_budget(nbytes, what, where, hint=None):
    """Raise ``ValueError`` when a generator's estimate ``nbytes`` exceeds :func:`memory_budget_bytes`.

    Parameters
    ----------
    nbytes : int or float
        The estimate in bytes (a Python int: no overflow).
    what : str
        What would be built, e.g. ``"RockSample(100, 100): S = 1.27e+34 states"``.
    where : str
        The argument(s) that set the size, e.g. ``"'n', 'k'"``.
    hint : str or None, default=None
        What to do instead.

    Raises
    ------
    ValueError
        Naming the arguments, the estimate, the budget and how to raise it.
    """
    budget = memory_budget_bytes()
    if nbytes > budget:
        raise ValueError(
            f"{where}: {what} would need about {_fmt_bytes(nbytes)}, over the memory budget of "
            f"{_fmt_bytes(budget)} ({MEMORY_BUDGET_FRACTION:g} of this machine's memory unless "
            f"{MEMORY_BUDGET_ENV} is set); " + (f"{hint}, or " if hint else "")
            + f"raise the budget with the environment variable {MEMORY_BUDGET_ENV} (MiB)."
        )


def check_output_path(path, name):
    """Raise ``ValueError`` unless ``path`` can be written: its folder exists and is writable, it is
    not a folder, and an existing file there is writable.

    Parameters
    ----------
    path : str or path-like
        The output file.
    name : str
        The argument that gave it (``"--policy-out"``), used in the message.
    """
    p = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(p))
    if os.path.isdir(p):
        raise ValueError(f"{name}: {p!r} is a folder; give a file path.")
    if not os.path.isdir(folder):
        raise ValueError(f"{name}: the folder {folder!r} of {p!r} does not exist; create it first.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{name}: the folder {folder!r} of {p!r} is not writable.")
    if os.path.exists(p) and not os.access(p, os.W_OK):
        raise ValueError(f"{name}: {p!r} exists and is not writable.")


def check_output_dir(path, name):
    """Raise ``ValueError`` unless ``path`` is a writable folder or can be created as one.

    Parameters
    ----------
    path : str or path-like
        The output folder.
    name : str
        The argument that gave it (``"--out"``).
    """
    p = os.path.abspath(os.fspath(path))
    if os.path.exists(p):
        if not os.path.isdir(p):
            raise ValueError(f"{name}: {p!r} exists and is not a folder.")
        if not os.access(p, os.W_OK | os.X_OK):
            raise ValueError(f"{name}: the folder {p!r} is not writable.")
        return
    parent = p
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{name}: cannot create {p!r}: {parent!r} is not a writable folder.")


def read_csv_columns(path, target, features=None):
    """Read the target and feature columns of a CSV with a header row.

    Lines starting with ``#`` are skipped; ``features`` is a comma-separated string (default: every
    column but the target). Returns ``(X, y, feature_names)``. Errors name the file, the line and
    the column.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(2, f"no such file: {path}", str(path))
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    header_idx = next((i for i, ln in enumerate(lines) if ln.strip() and not ln.startswith("#")), None)
    if header_idx is None:
        raise ValueError(f"{path}: empty file.")
    names = [h.strip().strip('"') for h in lines[header_idx].split(",")]
    if target not in names:
        raise ValueError(f"'target' must be a column of {path} ({', '.join(names)}); got {target!r}.")
    feats = [c for c in names if c != target] if not features else [f.strip() for f in features.split(",")]
    for f in feats:
        if f not in names or f == target:
            raise ValueError(f"'features' must be columns of {path} other than the target; got {f!r}.")
    cols = [names.index(c) for c in feats + [target]]
    rows = []
    for lineno in range(header_idx + 1, len(lines)):
        line = lines[lineno]
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split(",")
        if len(parts) != len(names):
            raise ValueError(f"{path}: line {lineno + 1}: expected {len(names)} fields, got {len(parts)}.")
        row = []
        for c in cols:
            tok = parts[c].strip().strip('"')
            try:
                row.append(float(tok))
            except ValueError:
                raise ValueError(
                    f"{path}: line {lineno + 1}: column {names[c]!r}: not a number: {tok!r} "
                    "(choose numeric columns with --features)."
                ) from None
        rows.append(row)
    if not rows:
        raise ValueError(f"{path}: no data rows.")
    data = np.asarray(rows)
    return data[:, :-1], data[:, -1], feats


def atomic_savefig(fig, path, **kwargs):
    """``fig.savefig(path, **kwargs)`` through :func:`atomic_write` (the format from the file name).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    path : str or path-like
        The image file; its extension (``.png``, ``.svg``, ``.pdf``) gives the format.
    **kwargs
        Passed to :meth:`matplotlib.figure.Figure.savefig`.
    """
    ext = os.path.splitext(os.fspath(path))[1].lstrip(".").lower() or "png"
    kwargs.setdefault("format", ext)
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, **kwargs)


def atomic_write_text(path, text, encoding="utf-8"):
    """Write ``text`` to ``path`` through :func:`atomic_write`.

    Parameters
    ----------
    path : str or path-like
        The file.
    text : str
        Its new contents.
    encoding : str, default="utf-8"
        The encoding.
    """
    with atomic_write(path, "w", encoding=encoding) as fh:
        fh.write(text)
