"""CIRCLE's feature extractor: :class:`BiRC2DFeatures`, R bidirectional 2-D reservoir blocks
(:class:`._reservoir.BiReservoir2D`) with pooling and a random projection; re-exported by
:mod:`._reservoir`, whose docstring describes the reservoir and the reconstructed choices [R].
"""

from __future__ import annotations

import numbers
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from accel.backend import resolve

from .._validation import (
    RANDOM_STATE_CONSTRAINTS,
    OrderedStrOptions,
    check_finite,
    spawn_generators,
    validate_params,
)
from ._checks import FLOAT_DTYPE, check_labels
from ._reservoir import NEGATIVE_SLOPE, BiReservoir2D, _check_device

__all__ = ["BiRC2DFeatures"]


class BiRC2DFeatures(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    r"""Data-free BiRC2D / CIRCLE image features: stem, reservoir blocks, pooling, projection.

    Pipeline for an image ``(C, H, W)``:

    1. **Stem.** ``"none"``: patchify into non-overlapping ``P x P`` patches, a grid
       ``(H/P, W/P)`` of tokens of size ``C P^2`` (BiRC2D). ``"random_conv"``: a fixed
       Kaiming-normal convolution (``stem_kernel x stem_kernel``, stride ``P``, zero padding
       ``stem_kernel // 2``, ``stem_channels`` outputs, no bias) followed by leaky ReLU, giving the same
       grid with ``stem_channels`` channels (CIRCLE change (i) [T]; kernel 3, width 32 [R]).
    2. **Blocks.** ``n_blocks`` :class:`BiReservoir2D` blocks in sequence (block ``i > 0`` reads the
       ``4 * units`` channels of block ``i - 1``).
    3. **Pooling.** ``"gap"``: the mean over the grid, ``4U`` features (BiRC2D). ``"avg"``:
       ``pool_size x pool_size`` average pooling, then flattening in (row, column, channel) order,
       ``(H/(P q)) (W/(P q)) 4U`` features (spatial concatenation, CIRCLE change (iv)). ``"none"``:
       flattening of the whole grid.
    4. **Projection** (``projection_dim`` not None): a fixed Gaussian matrix with entries
       :math:`N(0, 1/m)` (``m`` = pooled dimension) to ``projection_dim`` features, then ReLU
       (``projection_activation="relu"``) or nothing [R].

    **Pixel range.** ``pixel_range="auto"`` (default): integer input is taken as 0..255 and divided
    by 255; for float input, each image whose largest value exceeds 1 is taken as 0..255 and divided
    by 255, the others as 0..1 (decided per image, so the features stay batch-independent; a float
    0..255 image with no value above 1 is read as 0..1: pass ``"byte"`` to be explicit). ``"unit"``:
    values must lie in [0, 1]; ``"byte"``: values must lie in [0, 255] and are divided by 255;
    ``"none"``: any finite values, used unchanged. Values outside the accepted range raise
    ``ValueError`` (unscaled 0..255 input would saturate tanh).

    Parameters
    ----------
    image_shape : tuple of 3 ints, default=(1, 28, 28)
        ``(C, H, W)``; ``H`` and ``W`` must be divisible by ``patch``.
    patch : int, default=2
        Patch size / stem stride ``P``.
    stem : {"none", "random_conv"}, default="none"
    stem_channels : int, default=32
    stem_kernel : int, default=3
    n_blocks : int, default=1
    pooling : {"gap", "avg", "none"}, default="gap"
    pool_size : int, default=2
        ``q`` for ``pooling="avg"``; the grid sides must be divisible by it.
    projection_dim : int or None, default=None
    projection_activation : {"relu", "none"}, default="relu"
    pixel_range : {"auto", "unit", "byte", "none"}, default="auto"
    batch_size : int, default=256
        Images transformed at a time (memory only; the result does not depend on it).
    units, leak, spectral_radius, connectivity, input_scaling
        As for :class:`BiReservoir2D`.
    activation, init, share_direction_weights, spectral_rescale
        As for :class:`BiReservoir2D`.
    random_state : None, int, SeedSequence or Generator, default=None
        One seed for everything: the stem, the projection and each block get their own child seed.
    backend : {"auto", "numpy", "torch", "numba"}, default="auto"
        As for :class:`BiReservoir2D`: ``"auto"`` picks torch when ``X`` given to :meth:`fit` is a torch
        tensor or ``device`` names an accelerator, and the CPU path otherwise; see the "Backends: one
        rule" section of the scaling page. The resolved name is passed to every block.
    device : None, str or torch.device, default=None
    dtype : numpy.float32 or numpy.float64, default=numpy.float32

    Attributes
    ----------
    backend_ : {"numpy", "torch"}
        The core that runs the scans of every block (``backend`` resolved).
    blocks_ : list of BiReservoir2D
    stem_weights_ : ndarray, shape (C * stem_kernel**2, stem_channels) or None
    projection_ : ndarray, shape (pooled_dim, projection_dim) or None
    grid_shape_ : tuple (N_h, N_w)
    n_features_in_ : int
        ``C * H * W``.
    n_features_out_ : int

    Examples
    --------
    >>> import numpy as np
    >>> f = BiRC2DFeatures(image_shape=(1, 8, 8), patch=2, units=4, pooling="avg", random_state=0,
    ...                    backend="numpy").fit()
    >>> f.transform(np.random.default_rng(0).random((3, 64))).shape
    (3, 64)
    """

    _parameter_constraints: dict = {
        "activation": [OrderedStrOptions(("tanh", "relu", "leaky_relu"))],
        "backend": [OrderedStrOptions(("auto", "numpy", "torch", "numba"))],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "connectivity": [Interval(Real, 0, 1, closed="right")],
        # None, a str or a torch.device: the type torch.device cannot be named without importing torch
        "device": "no_validation",
        "dtype": FLOAT_DTYPE,
        "image_shape": [tuple, list],  # of 3 positive ints: the entries are checked in fit
        "init": [OrderedStrOptions(("uniform", "kaiming"))],
        "input_scaling": [Interval(Real, 0, None, closed="neither")],
        "leak": [Interval(Real, 0, 1, closed="right")],
        "n_blocks": [Interval(Integral, 1, None, closed="left")],
        "patch": [Interval(Integral, 1, None, closed="left")],
        "pixel_range": [OrderedStrOptions(("auto", "unit", "byte", "none"))],
        "pool_size": [Interval(Integral, 1, None, closed="left")],
        "pooling": [OrderedStrOptions(("gap", "avg", "none"))],
        "projection_activation": [OrderedStrOptions(("relu", "none"))],
        "projection_dim": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "share_direction_weights": ["boolean"],
        "spectral_radius": [Interval(Real, 0, None, closed="left")],
        "spectral_rescale": ["boolean"],
        "stem": [OrderedStrOptions(("none", "random_conv"))],
        "stem_channels": [Interval(Integral, 1, None, closed="left")],
        "stem_kernel": [Interval(Integral, 1, None, closed="left")],
        "units": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, *, image_shape=(1, 28, 28), patch=2, stem="none", stem_channels=32, stem_kernel=3,
                 n_blocks=1, pooling="gap", pool_size=2, projection_dim=None, projection_activation="relu",
                 pixel_range="auto", batch_size=256, units=16, leak=0.5, spectral_radius=0.9,
                 connectivity=0.1, input_scaling=1.0, activation="tanh", init="uniform",
                 share_direction_weights=False, spectral_rescale=True, random_state=None, backend="auto",
                 device=None, dtype=np.float32):
        self.image_shape = image_shape
        self.patch = patch
        self.stem = stem
        self.stem_channels = stem_channels
        self.stem_kernel = stem_kernel
        self.n_blocks = n_blocks
        self.pooling = pooling
        self.pool_size = pool_size
        self.projection_dim = projection_dim
        self.projection_activation = projection_activation
        self.pixel_range = pixel_range
        self.batch_size = batch_size
        self.units = units
        self.leak = leak
        self.spectral_radius = spectral_radius
        self.connectivity = connectivity
        self.input_scaling = input_scaling
        self.activation = activation
        self.init = init
        self.share_direction_weights = share_direction_weights
        self.spectral_rescale = spectral_rescale
        self.random_state = random_state
        self.backend = backend
        self.device = device
        self.dtype = dtype

    # ------------------------------------------------------------------------------------------
    def _check_image_shape(self):
        shape = self.image_shape  # a tuple or a list: _parameter_constraints
        # data-independent but not expressible in _parameter_constraints: the entries, 3 positive ints
        if isinstance(shape, (tuple, list)):
            if len(shape) != 3 or not all(isinstance(s, numbers.Integral) and not isinstance(s, bool)
                                          for s in shape):
                raise TypeError(f"'image_shape' must be a tuple (C, H, W) of 3 positive ints; got {shape!r}.")
            if any(int(s) < 1 for s in shape):
                raise ValueError(f"'image_shape' must be a tuple (C, H, W) of 3 positive ints; got {tuple(shape)!r}.")
        return tuple(int(s) for s in shape)

    def _geometry(self):
        """``(C, H, W), P, (N_h, N_w)``; the single-parameter ranges are ``_parameter_constraints``."""
        C, H, W = self._check_image_shape()
        P = int(self.patch)
        # cross-parameter rules (image_shape with patch, the token grid with pool_size): not expressible in
        # _parameter_constraints
        if H % P or W % P:
            raise ValueError(
                f"image size {H}x{W} is not divisible by 'patch' = {P}; crop or pad the images to a multiple "
                f"of the patch size first."
            )
        q = int(self.pool_size)
        Nh, Nw = H // P, W // P
        if self.pooling == "avg" and (Nh % q or Nw % q):
            raise ValueError(
                f"the {Nh}x{Nw} token grid (image {H}x{W}, patch {P}) is not divisible by 'pool_size' = {q}."
            )
        return (C, H, W), P, (Nh, Nw)

    def _block_params(self, backend):
        return dict(units=self.units, leak=self.leak, spectral_radius=self.spectral_radius,
                    connectivity=self.connectivity, input_scaling=self.input_scaling,
                    activation=self.activation, init=self.init,
                    share_direction_weights=self.share_direction_weights,
                    spectral_rescale=self.spectral_rescale, backend=backend,
                    device=self.device, dtype=self.dtype)

    def fit(self, X=None, y=None):
        """Draw all weights; needs no data (``X``, if given, is only checked against ``image_shape``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or None, default=None
            Optional samples; no data are needed (see above).
        y : None
            Ignored.

        Returns
        -------
        self
        """
        validate_params(self)
        (C, H, W), P, (Nh, Nw) = self._geometry()
        dt = np.dtype(self.dtype)
        arrays = () if X is None else (X,)
        if X is not None:
            X = self._to_images(X, (C, H, W), dt)
        if y is not None:
            check_labels(y, "y", None if X is None else X.shape[0])
        _check_device(self.device)
        backend = resolve(self.backend, self.device, arrays)
        n_blocks = int(self.n_blocks)
        gens = spawn_generators(self.random_state, 2 + n_blocks)
        if self.stem == "random_conv":
            k, cs = int(self.stem_kernel), int(self.stem_channels)
            fan_in = C * k * k
            self.stem_weights_ = (gens[0].standard_normal((fan_in, cs)) * np.sqrt(2.0 / fan_in)).astype(dt)
            d_in = cs
        else:
            self.stem_weights_ = None
            d_in = C * P * P
        self.blocks_ = []
        for b in range(n_blocks):
            block = BiReservoir2D(input_dim=d_in, random_state=gens[2 + b], **self._block_params(backend))
            block.fit()
            self.blocks_.append(block)
            d_in = block.n_features_out_
        if self.pooling == "gap":
            pooled = d_in
        elif self.pooling == "avg":
            q = int(self.pool_size)
            pooled = (Nh // q) * (Nw // q) * d_in
        else:
            pooled = Nh * Nw * d_in
        if self.projection_dim is not None:
            m = int(self.projection_dim)
            self.projection_ = (gens[1].standard_normal((pooled, m)) / np.sqrt(pooled)).astype(dt)
            self.n_features_out_ = m
        else:
            self.projection_ = None
            self.n_features_out_ = pooled
        self.grid_shape_ = (Nh, Nw)
        self.n_features_in_ = C * H * W
        self.backend_ = backend
        return self

    @property
    def _n_features_out(self):
        return self.n_features_out_

    # ------------------------------------------------------------------------------------------
    def _to_images(self, X, shape, dt):
        """Validate, reshape to (n, C, H, W) and scale pixels; returns an array of dtype ``dt``."""
        C, H, W = shape
        if hasattr(X, "toarray") or hasattr(X, "tocsr"):
            raise TypeError("'X' must be a dense array of images; sparse input is not supported.")
        X = np.asarray(X)
        if X.dtype.kind not in "iuf":
            raise TypeError(f"'X' must contain real numbers; got an array of dtype {X.dtype}.")
        if X.ndim == 2:
            if X.shape[1] != C * H * W:
                raise ValueError(
                    f"'X' has {X.shape[1]} features per row but image_shape = {(C, H, W)} needs C*H*W = "
                    f"{C * H * W} (wrong channel count or image size?)."
                )
            X = X.reshape(X.shape[0], C, H, W)
        elif X.ndim == 4:
            if X.shape[1:] != (C, H, W):
                hint = ""
                if X.shape[1:] == (H, W, C):
                    hint = " The images look channel-last: transpose them with X.transpose(0, 3, 1, 2)."
                raise ValueError(
                    f"'X' must have shape (n, {C}, {H}, {W}) to match image_shape (wrong channel count or "
                    f"image size); got {X.shape}.{hint}"
                )
        else:
            raise ValueError(
                f"'X' must have shape (n, C*H*W) or (n, C, H, W); got an array of shape {X.shape}."
            )
        integer = X.dtype.kind in "iu"
        X = X.astype(dt, copy=True)
        check_finite(X, "X")
        mode = self.pixel_range
        if mode == "none" or X.shape[0] == 0:
            return X
        flat = X.reshape(X.shape[0], -1)
        lo = flat.min(axis=1)
        hi = flat.max(axis=1)
        top = 1.0 if mode == "unit" else 255.0
        bad = np.flatnonzero((lo < 0) | (hi > top))
        if bad.size:
            i = int(bad[0])
            allowed = "[0, 1]" if mode == "unit" else "[0, 1] or [0, 255]" if mode == "auto" else "[0, 255]"
            raise ValueError(
                f"'X': pixel values must lie in {allowed} (pixel_range={mode!r}); image {i} has values in "
                f"[{float(lo[i]):g}, {float(hi[i]):g}]. Scale the images, or pass pixel_range='none' to use "
                f"them unchanged."
            )
        if mode == "byte" or (mode == "auto" and integer):
            X *= dt.type(1.0 / 255.0)
        elif mode == "auto":
            byte_rows = hi > 1.0
            if byte_rows.any():
                X[byte_rows] *= dt.type(1.0 / 255.0)
        return X

    def _stem(self, X):
        n, C, H, W = X.shape
        P = int(self.patch)
        Nh, Nw = self.grid_shape_
        if self.stem_weights_ is None:
            g = X.reshape(n, C, Nh, P, Nw, P).transpose(0, 2, 4, 1, 3, 5)
            return np.ascontiguousarray(g).reshape(n, Nh, Nw, C * P * P)
        k = int(self.stem_kernel)
        p = k // 2
        Xp = np.pad(X, ((0, 0), (0, 0), (p, p), (p, p)))
        win = np.lib.stride_tricks.sliding_window_view(Xp, (k, k), axis=(2, 3))[:, :, ::P, ::P][:, :, :Nh, :Nw]
        cols = np.ascontiguousarray(win.transpose(0, 2, 3, 1, 4, 5)).reshape(n * Nh * Nw, C * k * k)
        z = cols @ self.stem_weights_
        z = np.where(z > 0, z, z * z.dtype.type(NEGATIVE_SLOPE))
        return z.reshape(n, Nh, Nw, -1)

    def _features(self, X):
        g = self._stem(X)
        for block in self.blocks_:
            g = block._transform_grid(g)
        n, Nh, Nw, D = g.shape
        if self.pooling == "gap":
            f = g.mean(axis=(1, 2))
        elif self.pooling == "avg":
            q = int(self.pool_size)
            f = g.reshape(n, Nh // q, q, Nw // q, q, D).mean(axis=(2, 4)).reshape(n, -1)
        else:
            f = g.reshape(n, -1)
        if self.projection_ is not None:
            f = f @ self.projection_
            if self.projection_activation == "relu":
                f = np.maximum(f, 0)
        return f

    def transform(self, X):
        """Features of images.

        Parameters
        ----------
        X : array-like, shape (n, C*H*W) or (n, C, H, W)
            Pixels in [0, 1] or [0, 255] (see *Pixel range* above).

        Returns
        -------
        ndarray, shape (n, ``n_features_out_``), of ``dtype``
        """
        check_is_fitted(self, "blocks_")
        dt = self.blocks_[0].W_.dtype
        X = self._to_images(X, self._check_image_shape(), dt)
        n = X.shape[0]
        out = np.empty((n, self.n_features_out_), dtype=dt)
        bs = int(self.batch_size)
        for start in range(0, n, bs):
            out[start:start + bs] = self._features(X[start:start + bs])
        return out
