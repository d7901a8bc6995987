"""Small readers shared by the command-line subcommands (CSV files of numeric columns)."""

from __future__ import annotations

import os

import numpy as np

__all__ = ["read_csv_columns"]


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
