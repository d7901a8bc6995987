r"""Plain-numpy twins of the kernels in :mod:`._kernels`, written with dense matrices.

Used only by the tests: each function is the readable definition of the kernel of the same name
(without ``_reference``), and the tests check that the two agree to round-off. The Gaussian block
kernel has no twin here: its reference is :func:`accel.networked_learning.gaussian_sketch_apply` run with
the numpy backend (the same function is the torch path).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import hadamard

__all__ = [
    "countsketch_matrix",
    "countsketch_apply_reference",
    "fwht_reference",
]


def countsketch_matrix(rows_bucket, rows_sign, k):
    r"""The dense CountSketch matrix :math:`S \in \mathbb{R}^{k \times m}`, :math:`S_{h(i), i} = s(i)`."""
    rows_bucket = np.asarray(rows_bucket)
    m = rows_bucket.shape[0]
    S = np.zeros((k, m))
    S[rows_bucket, np.arange(m)] = rows_sign
    return S


def countsketch_apply_reference(rows_bucket, rows_sign, A, out):
    """Twin of :func:`._kernels.countsketch_apply`: ``out += S @ A`` with the dense matrix."""
    out += countsketch_matrix(rows_bucket, rows_sign, out.shape[0]) @ A


def fwht_reference(a):
    """Twin of :func:`._kernels.fwht_inplace`: ``scipy.linalg.hadamard(n) @ a`` (returns a new array)."""
    a = np.asarray(a, dtype=np.float64)
    return hadamard(a.shape[0], dtype=np.float64) @ a
