r"""Shared random sketches :math:`S \in \mathbb{R}^{k \times m}` that every agent can regenerate.

In the shared-sketch protocol (networked_learning reconstruction notes, section 1.3) every agent multiplies its own
columns by the same matrix :math:`S`, rebuilt locally from a shared seed, without communication. That needs two things
from this module:

* **determinism**: a :class:`Sketch` is a pure function of ``(kind, k, m, seed, chunk)``;
* **column-split consistency**: ``S @ [A1, A2]`` equals ``[S @ A1, S @ A2]`` *bit for bit*, so an
  agent sketching ``X[:, S_v]`` and another sketching ``y`` agree with a centralised ``S @ [X, y]``.
  The kernels of :mod:`._kernels` compute each output column from its input column alone, with a
  fixed operation order (see there); BLAS is not used on this path for that reason.

Three families (``kind``):

``"gaussian"``
    :math:`S_{ij} \sim N(0, 1/k)` i.i.d. The columns of :math:`S` (rows of ``A``) are cut into
    chunks of ``chunk`` rows; chunk ``c`` holds the block ``standard_normal((c_len, k))`` (that is,
    :math:`\sqrt{k}\,S^\top` restricted to the chunk) drawn from
    ``Generator(Philox(key=K, counter=[0, 0, 0, c]))`` with ``K`` derived from
    ``SeedSequence([seed, 0])``. Chunks are independent streams, so they are generated in parallel
    threads and :math:`k \times m` is never held in memory (peak :math:`O(k \cdot \text{chunk})`).
    A sketch for ``m`` rows is a column prefix of the one for ``m' > m`` (same ``k``, seed, chunk).
``"srht"``
    Subsampled randomized Hadamard transform :math:`S = \frac{1}{\sqrt{k}} P H D E`: ``E`` zero-pads
    to :math:`m_2 = 2^{\lceil \log_2 m \rceil}` rows, ``D`` random signs, ``H`` the unnormalised
    Sylvester-Hadamard matrix (entries :math:`\pm 1`, applied by the FWHT kernel in
    :math:`O(m_2 p \log m_2)`), ``P`` a uniform sample of ``k`` of the :math:`m_2` rows without
    replacement (sorted). Then :math:`\mathbb{E}[S^\top S] = I_m`, and
    :math:`\sqrt{k/m_2}\,S` has orthonormal rows on the padded space.
``"countsketch"``
    :math:`S_{h(i), i} = s(i)`, all other entries 0, with :math:`h(i)` uniform on :math:`[k]` and
    :math:`s(i)` uniform on :math:`\{\pm 1\}` (Clarkson-Woodruff); applied in :math:`O(mp)` by a
    scatter-add. :math:`\mathbb{E}[S^\top S] = I_m`.

:func:`subsample_rows` gives the shared row set of the row-subsampling baseline (B2).

References
----------
.. [1] Woodruff, "Sketching as a Tool for Numerical Linear Algebra", FnT-TCS 10 (2014).
.. [2] Tropp, "Improved analysis of the subsampled randomized Hadamard transform", 2011.
.. [3] Clarkson & Woodruff, "Low rank approximation and regression in input sparsity time", STOC 2013.
"""

from __future__ import annotations

import numpy as np

from accel._sketch_blocks import _TAG, _gaussian_block, _philox, gaussian_blocks  # noqa: F401 - gaussian_blocks re-exported
from algos._validation import check_finite, check_option, check_scalar_int

from ._kernels import countsketch_apply, fwht_inplace, gaussian_block_apply

__all__ = ["Sketch", "make_sketch", "subsample_rows", "SKETCH_KINDS"]

SKETCH_KINDS = ("gaussian", "srht", "countsketch")

#: ``to_dense`` refuses matrices with more entries than this (it is meant for tests).
DENSE_MAX_ENTRIES = 1 << 26

def _next_pow2(m):
    return 1 << (int(m) - 1).bit_length()


class Sketch:
    r"""A shared random sketch :math:`S \in \mathbb{R}^{k \times m}`; build it with :func:`make_sketch`.

    The random parts (signs, buckets, sampled rows) are derived from ``seed`` when first needed; the
    Gaussian sketch stores nothing and regenerates its blocks at every :meth:`apply`.

    Parameters
    ----------
    kind : {"gaussian", "srht", "countsketch"}
        The sketch family.
    k : int
        Sketch size.
    m : int
        Number of rows of the matrices it applies to.
    seed : int
        Seed of the random parts.
    chunk : int
        Rows per generated Gaussian block.

    Attributes
    ----------
    kind : {"gaussian", "srht", "countsketch"}
    k : int
        Sketch size (rows of :math:`S`; floats per message).
    m : int
        Number of rows of the matrices it applies to.
    seed : int
    chunk : int
        Rows of ``A`` per generated Gaussian block (part of the definition of the Gaussian sketch).
    shape : tuple
        ``(k, m)``.

    Raises
    ------
    ValueError, TypeError
        As :func:`make_sketch`, which checks its arguments the same way.
    """

    def __init__(self, kind, k, m, seed, chunk):
        kind = check_option(kind, "kind", SKETCH_KINDS)
        m = check_scalar_int(m, "m", low=1)
        if kind == "srht":
            k = check_scalar_int(k, "k", low=1, high=_next_pow2(m))
        else:
            k = check_scalar_int(k, "k", low=1)
        seed = _check_seed(seed)
        chunk = check_scalar_int(chunk, "chunk", low=1)
        self.kind, self.k, self.m, self.seed, self.chunk = kind, k, m, seed, chunk
        self._cache = None

    @property
    def shape(self):
        r"""``(k, m)``.
        """
        return (self.k, self.m)

    def __repr__(self):
        return f"Sketch(kind={self.kind!r}, k={self.k}, m={self.m}, seed={self.seed}, chunk={self.chunk})"

    def __eq__(self, other):
        return isinstance(other, Sketch) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def _key(self):
        return (self.kind, self.k, self.m, self.seed, self.chunk if self.kind == "gaussian" else None)

    # ---------------------------------------------------------------------------------------------
    def _random_parts(self):
        """Signs/buckets/rows of the srht and countsketch kinds (drawn once, then cached)."""
        if self._cache is None:
            rng = _philox(self.seed, _TAG[self.kind])
            if self.kind == "srht":
                m2 = _next_pow2(self.m)
                signs = rng.integers(0, 2, size=self.m).astype(np.float64) * 2.0 - 1.0
                rows = np.sort(rng.choice(m2, size=self.k, replace=False)).astype(np.int64)
                self._cache = {"signs": signs, "rows": rows, "m2": m2}
            elif self.kind == "countsketch":
                buckets = rng.integers(0, self.k, size=self.m).astype(np.int64)
                signs = rng.integers(0, 2, size=self.m).astype(np.float64) * 2.0 - 1.0
                self._cache = {"buckets": buckets, "signs": signs}
            else:
                self._cache = {}
        return self._cache

    def _check_A(self, A):
        if isinstance(A, (str, bytes)) or not hasattr(A, "__len__") and not hasattr(A, "__array__"):
            raise TypeError(f"'A' must be an array of shape ({self.m},) or ({self.m}, p); got {type(A).__name__}.")
        A = np.asarray(A)
        if A.dtype.kind not in "biuf":
            raise TypeError(f"'A' must contain real numbers; got an array of dtype {A.dtype}.")
        if A.ndim not in (1, 2) or A.shape[0] != self.m:
            raise ValueError(f"'A' must have shape ({self.m},) or ({self.m}, p); got an array of shape {A.shape}.")
        A = A.astype(np.float64, copy=False)
        check_finite(A, "A")
        return A

    def apply(self, A):
        r"""Return :math:`S A` (float64).

        Parameters
        ----------
        A : array-like, shape (m,) or (m, p)
            Finite real entries.

        Returns
        -------
        ndarray of float64, shape (k,) or (k, p)
            Bit-identical, column by column, whatever the other columns of ``A`` are.

        Raises
        ------
        ValueError
            If ``A`` has the wrong shape or non-finite entries.
        TypeError
            If ``A`` is not a real array.

        Examples
        --------
        >>> import numpy as np
        >>> S = make_sketch("countsketch", 3, 5, seed=0)
        >>> S.apply(np.ones((5, 2))).shape
        (3, 2)
        """
        A = self._check_A(A)
        vec = A.ndim == 1
        A2 = A.reshape(self.m, -1)
        p = A2.shape[1]
        out = np.zeros((self.k, p))
        if self.kind == "gaussian":
            for start, stop, G in gaussian_blocks(self.seed, self.k, self.m, self.chunk):
                gaussian_block_apply(G, np.ascontiguousarray(A2[start:stop]), out)
            out *= 1.0 / np.sqrt(self.k)
        elif self.kind == "countsketch":
            parts = self._random_parts()
            countsketch_apply(parts["buckets"], parts["signs"], np.ascontiguousarray(A2), out)
        else:  # srht
            parts = self._random_parts()
            a = np.zeros((parts["m2"], p))
            np.multiply(A2, parts["signs"][:, None], out=a[: self.m])
            fwht_inplace(a)
            out = a[parts["rows"]] * (1.0 / np.sqrt(self.k))
        return out[:, 0] if vec else out

    def to_dense(self):
        r"""The dense matrix :math:`S` (k, m), built entry by entry without the kernels (for tests).

        Returns
        -------
        ndarray of shape (k, m)
            The matrix.

        Raises
        ------
        ValueError
            If :math:`k m` exceeds ``DENSE_MAX_ENTRIES`` (2**26).
        """
        if self.k * self.m > DENSE_MAX_ENTRIES:
            raise ValueError(
                f"to_dense() is meant for small sketches: k * m must be at most {DENSE_MAX_ENTRIES}; "
                f"got {self.k} * {self.m} = {self.k * self.m}."
            )
        if self.kind == "gaussian":
            blocks = [G for _, _, G in gaussian_blocks(self.seed, self.k, self.m, self.chunk, n_threads=1)]
            return np.concatenate(blocks, axis=0).T / np.sqrt(self.k)
        parts = self._random_parts()
        if self.kind == "countsketch":
            S = np.zeros((self.k, self.m))
            S[parts["buckets"], np.arange(self.m)] = parts["signs"]
            return S
        # srht: H[i, j] = (-1)^popcount(i & j)
        anded = parts["rows"][:, None] & np.arange(self.m, dtype=np.int64)[None, :]
        parity = np.zeros(anded.shape, dtype=np.int64)
        while anded.any():
            parity ^= anded & 1
            anded >>= 1
        H = 1.0 - 2.0 * parity
        return H * parts["signs"][None, :] / np.sqrt(self.k)


def _check_seed(seed):
    return check_scalar_int(seed, "seed", low=0)


def make_sketch(kind, k, m, seed, *, chunk=8192):
    r"""Build the shared sketch :math:`S \in \mathbb{R}^{k \times m}` of the given family.

    Parameters
    ----------
    kind : {"gaussian", "srht", "countsketch"}
        Sketch family (see the module docstring for the exact definitions).
    k : int
        Sketch size, ``>= 1``; for ``"srht"`` at most :math:`m_2`, the power of two at or above ``m``
        (``k > m`` compresses nothing, but is allowed).
    m : int
        Number of rows of the matrices to sketch, ``>= 1``.
    seed : int
        Shared seed, ``>= 0``. Same ``(kind, k, m, seed, chunk)``, same matrix, on every machine.
    chunk : int, default=8192
        Rows of ``A`` per Gaussian block (part of the Gaussian sketch's definition; ignored by the other
        kinds). Memory of :meth:`Sketch.apply` is about ``chunk * k * 8 * 5`` bytes.

    Returns
    -------
    Sketch

    Raises
    ------
    ValueError
        If ``kind`` is unknown or a size is out of range.
    TypeError
        If a size or the seed is not an int.

    Examples
    --------
    >>> import numpy as np
    >>> S = make_sketch("gaussian", 4, 10, seed=1)
    >>> A = np.arange(20.0).reshape(10, 2)
    >>> np.array_equal(S.apply(A)[:, 1], S.apply(A[:, 1]))
    True
    """
    return Sketch(kind, k, m, seed, chunk)  # the constructor checks the arguments


def subsample_rows(k, m, seed):
    r"""Shared uniform row sample for the row-subsampling baseline: ``k`` of ``range(m)``, sorted.

    Drawn without replacement from the Philox stream of ``(seed, "subsample")``.

    Parameters
    ----------
    k : int
        Rows kept, in ``[1, m]``.
    m : int
        Rows available, ``>= 1``.
    seed : int
        ``>= 0``.

    Returns
    -------
    ndarray of int64, shape (k,)

    Examples
    --------
    >>> idx = subsample_rows(3, 10, seed=0)
    >>> idx.shape, bool(np.all(np.diff(idx) > 0))
    ((3,), True)
    """
    m = check_scalar_int(m, "m", low=1)
    k = check_scalar_int(k, "k", low=1, high=m)
    seed = _check_seed(seed)
    return np.sort(_philox(seed, _TAG["subsample"]).choice(m, size=k, replace=False)).astype(np.int64)
