r"""Data-free BiRC2D reservoir features: :class:`BiReservoir2D` blocks and the :class:`BiRC2DFeatures`
image-to-vector transformer used by CIRCLE.

A *reservoir* is a pair :math:`(W_{\mathrm{in}} \in \mathbb{R}^{d_{in}\times U}, W \in
\mathbb{R}^{U\times U})` run as a leaky echo-state network (tfa ``ESNCell`` convention, row vectors):

.. math:: h_0 = 0, \qquad h_t = (1-a)\,h_{t-1} + a\, f(u_t W_{\mathrm{in}} + h_{t-1} W),

with leak :math:`a \in (0, 1]` (``a = 1``: no leak) and activation ``f`` (tanh, ReLU or leaky ReLU
with slope 0.01). A :class:`BiReservoir2D` block runs four independent reservoirs over a grid of
tokens ``(B, N_h, N_w, C)``: along every row forward and backward, and along every column forward and
backward; the backward states are written back at their own position. The four state maps are
concatenated per grid cell into ``(B, N_h, N_w, 4U)``.

:class:`BiRC2DFeatures` maps images to vectors: patchify (non-overlapping ``P x P`` patches) or a fixed
random convolution stem (CIRCLE change (i)), one or more blocks, then global average pooling (BiRC2D),
``q x q`` average pooling plus flattening ("spatial concatenation", CIRCLE change (iv)) or plain
flattening, and an optional fixed Gaussian projection with ReLU to a higher dimension.

Everything is *data-free*: ``fit`` only draws the weights from ``random_state`` (each direction of each
block, the stem and the projection get their own child seed through ``SeedSequence.spawn``), and
``transform`` uses no statistic of the batch, so one image's features do not depend on the other
images in the batch (up to the last bits of the BLAS products, whose kernel can change with the
number of rows: ~1e-16 relative in float64, ~1e-6 in float32), and a seed gives bitwise-equal
features for the same input on a CPU.

Sources: BiRC2D -- NOLTA 15(4):838-850 (2024) and the authors' public code (weights, leak convention,
direction layout) [C]; CIRCLE -- Jučas & Pan, arXiv:2606.27095 (2026): random-conv stem, leaky ReLU,
Kaiming initialisation, spatial concatenation with a dimension-raising projection [T]. The stem's
kernel size, stride and width, the pooling factor and the projection's scale and nonlinearity are
*reconstructed* choices [R] (configurable).
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from accel.backend import RESOLVE_OPTIONS, resolve

from .._validation import (
    RANDOM_STATE_CONSTRAINTS,
    OrderedStrOptions,
    check_finite,
    check_scalar_int,
    spawn_generators,
    validate_params,
)
from ._checks import FLOAT_DTYPE, check_labels
from ._kernels import ACTIVATION_CODES, grid_scan4_for

__all__ = ["BiReservoir2D", "draw_reservoir_weights", "SpectralRadiusWarning"]

#: Slope of the leaky ReLU for negative input (CIRCLE; PyTorch's default).
NEGATIVE_SLOPE = 0.01
#: Order of the four directions in a block's output (each ``units`` wide).
DIRECTIONS = ("row_forward", "row_backward", "col_forward", "col_backward")
_BACKENDS = RESOLVE_OPTIONS


class SpectralRadiusWarning(UserWarning):
    """Raised when the requested spectral radius is >= 1 (the echo-state property may fail), or when
    no reservoir draw can be scaled to it (connectivity too low for the number of units)."""


#: A draw is accepted when its unscaled spectral radius is at least this fraction of the typical
#: radius sqrt(connectivity * units * Var(W_ij)); below it (nilpotent or nearly nilpotent) it is redrawn.
RADIUS_FLOOR = 0.1
#: Draws tried before giving up (with a SpectralRadiusWarning).
MAX_REDRAWS = 1000


def _check_device(device):
    # data-independent but not expressible in _parameter_constraints: a torch.device is recognised by its
    # type's name, without importing torch

    if device is not None and not isinstance(device, str) and type(device).__name__ != "device":
        raise TypeError(
            f"'device' must be None, a str or a torch.device; got {device!r} of type {type(device).__name__}."
        )


def draw_reservoir_weights(rng, input_dim, units, *, spectral_radius=0.9, connectivity=0.1,
                           input_scaling=1.0, init="uniform", rescale=True):
    r"""Draw one reservoir ``(W_in, W)`` in float64.

    * ``init="uniform"`` (BiRC2D [C]): :math:`W_{\mathrm{in}} \sim U(-s, s)`; :math:`W \sim
      U(-\sqrt{6/2U}, \sqrt{6/2U})` (Glorot).
    * ``init="kaiming"`` (CIRCLE [T]): :math:`W_{\mathrm{in}} \sim s\,N(0, 2/d_{in})`; :math:`W \sim
      N(0, 2/U)`.

    Each entry of ``W`` is then kept independently with probability ``connectivity``, and ``W`` is
    rescaled so that :math:`\max|\mathrm{eig}(W)| = \rho` (``rescale=True``; whether CIRCLE rescales
    after Kaiming is unknown [R]).

    A sparse draw can be nilpotent (all eigenvalues zero: with 8 units and 10 % connectivity about
    30 % of draws) or nearly so, and then the requested radius cannot be applied or is reached only by
    scaling by a huge factor (entries up to 3.8e3 were seen). With ``rescale=True`` such draws are
    rejected and redrawn (``W`` and its mask; ``W_in`` is kept) until the unscaled radius is at least
    ``RADIUS_FLOOR`` (0.1) times the typical radius :math:`\sqrt{c\,U\,\mathrm{Var}(W_{ij})}`
    (circular law), so every returned ``W`` has spectral radius exactly ``spectral_radius`` and is
    scaled by at most about 10x the typical factor. After ``MAX_REDRAWS`` (1000) failed draws (a
    connectivity far too low for the unit count) the last draw is returned as it is, with a
    :class:`SpectralRadiusWarning` that names the radius it has. (tfa's reference leaves a zero-radius
    draw unscaled silently, ``divide_no_nan``.)

    Parameters
    ----------
    rng : numpy.random.Generator
    input_dim, units : int
    spectral_radius, connectivity, input_scaling : float
    init : {"uniform", "kaiming"}
    rescale : bool

    Returns
    -------
    W_in : ndarray of float64, shape (input_dim, units)
    W : ndarray of float64, shape (units, units)
    """
    U = int(units)
    if init == "uniform":
        W_in = rng.uniform(-input_scaling, input_scaling, size=(input_dim, U))
        lim = np.sqrt(6.0 / (2 * U))
        var = lim**2 / 3.0

        def draw_W():
            return rng.uniform(-lim, lim, size=(U, U))
    else:
        W_in = rng.standard_normal((input_dim, U)) * (np.sqrt(2.0 / input_dim) * input_scaling)
        var = 2.0 / U if U else 0.0

        def draw_W():
            return rng.standard_normal((U, U)) * np.sqrt(2.0 / U)

    def draw_masked():
        W = draw_W()
        mask = rng.random((U, U)) < connectivity
        return np.where(mask, W, 0.0)

    W = draw_masked()
    if rescale and U:
        floor = RADIUS_FLOOR * np.sqrt(connectivity * U * var)
        radius = float(np.max(np.abs(np.linalg.eigvals(W))))
        tries = 1
        while radius < floor and tries < MAX_REDRAWS:
            W = draw_masked()
            radius = float(np.max(np.abs(np.linalg.eigvals(W))))
            tries += 1
        if radius >= floor and radius > 0.0:
            W = W * (spectral_radius / radius)
        else:
            warnings.warn(
                f"no reservoir draw with {U} units and connectivity {connectivity:g} reached the spectral "
                f"radius floor {floor:.3g} in {MAX_REDRAWS} draws; W keeps its radius {radius:.3g} instead of "
                f"'spectral_radius' = {spectral_radius:g} (raise 'connectivity' or 'units').",
                SpectralRadiusWarning,
                stacklevel=3,
            )
    return W_in, W


class BiReservoir2D(TransformerMixin, BaseEstimator):
    r"""One four-direction reservoir block over a 2-D grid of tokens (BiRC2D).

    Four independent leaky echo-state reservoirs of ``units`` units each scan every row forward and
    backward and every column forward and backward; their states are concatenated per grid cell in
    the order row-forward, row-backward, column-forward, column-backward (see the module docstring for
    the recursion).

    Parameters
    ----------
    units : int, default=16
        Units ``U`` per reservoir (the block outputs ``4U`` channels).
    leak : float, default=0.5
        Leak ``a`` in (0, 1]; ``1`` means no leak (``0`` would give all-zero features and is rejected).
    spectral_radius : float, default=0.9
        Target :math:`\max|\mathrm{eig}(W)|` (>= 0). A value >= 1 draws a
        :class:`SpectralRadiusWarning`: the echo-state property (fading memory) may fail, and with
        ReLU-type activations the states may diverge. Note that ``rho < 1`` does not imply
        :math:`\|W\|_2 < 1`.
    connectivity : float, default=0.1
        Probability in (0, 1] that an entry of ``W`` is non-zero.
    input_scaling : float, default=1.0
        Scale ``s`` > 0 of ``W_in``.
    activation : {"tanh", "relu", "leaky_relu"}, default="tanh"
        ``f``; leaky ReLU has slope 0.01.
    init : {"uniform", "kaiming"}, default="uniform"
        Weight distribution (see :func:`draw_reservoir_weights`).
    share_direction_weights : bool, default=False
        Use the same weights for the forward and backward scans of rows (and of columns). BiRC2D uses
        independent weights; sharing makes the horizontal-forward map of a left-right flipped image
        the flipped horizontal-backward map of the image (a metamorphic test).
    spectral_rescale : bool, default=True
        Rescale ``W`` to ``spectral_radius`` after drawing it.
    input_dim : int or None, default=None
        Channels ``C`` of the grid; ``None``: taken from ``X.shape[-1]`` in :meth:`fit`.
    random_state : None, int, SeedSequence or Generator, default=None
        Seed of the weights; each direction gets its own child seed (``SeedSequence.spawn``).
    backend : {"auto", "numpy", "torch", "numba"}, default="auto"
        ``"numpy"`` (or ``"numba"``): numba scan kernel on the CPU; ``"torch"``: the scan as batched torch
        matmuls (:func:`accel.continual.reservoir_scan_batched`). ``"auto"`` picks torch when ``X`` given to
        :meth:`fit` is a torch tensor or ``device`` names an accelerator, and the CPU path otherwise; see
        the "Backends: one rule" section of the scaling page.
    device : None, str or torch.device, default=None
        Device of the torch backend (``None``: CUDA if available, else CPU).
    dtype : numpy.float32 or numpy.float64, default=numpy.float32
        Dtype of the weights and the computation.

    Attributes
    ----------
    input_dim_ : int
    W_in_ : ndarray, shape (4, input_dim, units)
        Input matrices, in :data:`DIRECTIONS` order.
    W_ : ndarray, shape (4, units, units)
        Recurrent matrices.
    n_features_out_ : int
    backend_ : {"numpy", "torch"}
        The core that runs the scans (``backend`` resolved).
        ``4 * units``.

    Examples
    --------
    >>> import numpy as np
    >>> block = BiReservoir2D(units=4, random_state=0, backend="numpy").fit(input_dim=3)
    >>> block.transform(np.zeros((2, 5, 6, 3))).shape
    (2, 5, 6, 16)
    """

    _parameter_constraints: dict = {
        "activation": [OrderedStrOptions(("tanh", "relu", "leaky_relu"))],
        "backend": [OrderedStrOptions(("auto", "numpy", "torch", "numba"))],
        "connectivity": [Interval(Real, 0, 1, closed="right")],
        # None, a str or a torch.device: the type torch.device cannot be named without importing torch
        "device": "no_validation",
        "dtype": FLOAT_DTYPE,
        "init": [OrderedStrOptions(("uniform", "kaiming"))],
        "input_dim": [Interval(Integral, 1, None, closed="left"), None],
        "input_scaling": [Interval(Real, 0, None, closed="neither")],
        "leak": [Interval(Real, 0, 1, closed="right")],
        "random_state": RANDOM_STATE_CONSTRAINTS,
        "share_direction_weights": ["boolean"],
        "spectral_radius": [Interval(Real, 0, None, closed="left")],
        "spectral_rescale": ["boolean"],
        "units": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, *, units=16, leak=0.5, spectral_radius=0.9, connectivity=0.1, input_scaling=1.0,
                 activation="tanh", init="uniform", share_direction_weights=False, spectral_rescale=True,
                 input_dim=None, random_state=None, backend="auto", device=None, dtype=np.float32):
        self.units = units
        self.leak = leak
        self.spectral_radius = spectral_radius
        self.connectivity = connectivity
        self.input_scaling = input_scaling
        self.activation = activation
        self.init = init
        self.share_direction_weights = share_direction_weights
        self.spectral_rescale = spectral_rescale
        self.input_dim = input_dim
        self.random_state = random_state
        self.backend = backend
        self.device = device
        self.dtype = dtype

    # ------------------------------------------------------------------------------------------
    def _warn_radius(self):
        """Warn when ``spectral_radius >= 1`` is rescaled to (the parameter's range is a constraint)."""
        rho = float(self.spectral_radius)
        if rho >= 1.0 and self.spectral_rescale:
            warnings.warn(
                f"'spectral_radius' = {rho:g} >= 1: the echo-state property (fading memory) may fail and "
                f"{self.activation} states may grow without bound; use a value < 1.",
                SpectralRadiusWarning,
                stacklevel=3,
            )

    def fit(self, X=None, y=None, *, input_dim=None):
        """Draw the weights (no data needed; ``X``, if given, only supplies the channel count).

        Parameters
        ----------
        X : array-like, shape (B, N_h, N_w, C), optional
        y : ignored
        input_dim : int, optional
            Channel count, overriding the ``input_dim`` parameter and ``X``.

        Returns
        -------
        self
        """
        validate_params(self)
        _check_device(self.device)
        self._warn_radius()
        arrays = () if X is None else (X,)
        if X is not None:
            X = np.asarray(X)
            if X.dtype.kind not in "iuf":
                raise TypeError(f"'X' must contain real numbers; got an array of dtype {X.dtype}.")
            if X.ndim != 4:
                raise ValueError(f"'X' must have shape (B, N_h, N_w, C); got an array of shape {X.shape}.")
            check_finite(X, "X")
        if y is not None:
            check_labels(y, "y", None if X is None else X.shape[0])
        if input_dim is not None:  # the fit argument (the parameter is checked by _parameter_constraints)
            input_dim = check_scalar_int(input_dim, "input_dim", low=1)
        else:
            input_dim = self.input_dim
        if input_dim is None:
            if X is None:
                raise ValueError(
                    "BiReservoir2D.fit needs the channel count: pass X of shape (B, N_h, N_w, C), "
                    "input_dim=..., or set the 'input_dim' parameter."
                )
            input_dim = np.shape(X)[-1]
        self.input_dim_ = int(input_dim)
        self._draw(spawn_generators(self.random_state, 4))
        self.backend_ = resolve(self.backend, self.device, arrays)
        return self

    def _draw(self, gens):
        dt = np.dtype(self.dtype)
        kw = dict(spectral_radius=float(self.spectral_radius), connectivity=float(self.connectivity),
                  input_scaling=float(self.input_scaling), init=self.init, rescale=bool(self.spectral_rescale))
        mats = [draw_reservoir_weights(g, self.input_dim_, int(self.units), **kw) for g in gens]
        if self.share_direction_weights:
            mats = [mats[0], mats[0], mats[2], mats[2]]
        with np.errstate(over="ignore", invalid="ignore"):
            W_in, W = np.stack([m[0] for m in mats]).astype(dt), np.stack([m[1] for m in mats]).astype(dt)
        if not (np.all(np.isfinite(W_in)) and np.all(np.isfinite(W))):
            raise ValueError(
                f"the reservoir weights overflow {np.dtype(dt).name} with 'spectral_radius' = "
                f"{float(self.spectral_radius)!r} and 'input_scaling' = {float(self.input_scaling)!r}; use smaller "
                f"values ('spectral_radius' < 1 keeps the echo-state property)."
            )
        self.W_in_, self.W_ = W_in, W
        self.n_features_out_ = 4 * int(self.units)

    def transform(self, X):
        """Run the four scans.

        Parameters
        ----------
        X : array-like, shape (B, N_h, N_w, C)

        Returns
        -------
        ndarray, shape (B, N_h, N_w, 4 * units), of ``dtype``
        """
        check_is_fitted(self, "W_")
        X = np.asarray(X)
        if X.ndim != 4:
            raise ValueError(f"'X' must be a grid of shape (B, N_h, N_w, C); got an array of shape {X.shape}.")
        if X.shape[-1] != self.input_dim_:
            raise ValueError(
                f"'X' has {X.shape[-1]} channels but the block was fitted for {self.input_dim_} "
                f"(input_dim); got an array of shape {X.shape}."
            )
        if X.dtype.kind not in "iuf":
            raise TypeError(f"'X' must contain real numbers; got an array of dtype {X.dtype}.")
        X = check_finite(X.astype(self.W_.dtype, copy=False), "X")
        return self._transform_grid(X)

    def _transform_grid(self, G):
        """Unchecked transform of a grid already in the right dtype."""
        B, Nh, Nw, C = G.shape
        U = int(self.units)
        out = np.empty((B, Nh, Nw, 4 * U), dtype=self.W_.dtype)
        if B == 0 or Nh == 0 or Nw == 0:
            return out
        # one GEMM for the input drive of all four directions
        W_in_cat = np.concatenate(list(self.W_in_), axis=1)  # (C, 4U)
        Z = (G.reshape(-1, C) @ W_in_cat).reshape(B, Nh, Nw, 4 * U)
        if self.backend_ == "numpy":  # the four scans in place on the grid (numba, prange)
            grid_scan4_for(B * Nh * Nw)(Z, self.W_, float(self.leak), ACTIVATION_CODES[self.activation],
                                        NEGATIVE_SLOPE, out)
            return self._check_states(out)
        rows = Z.reshape(B * Nh, Nw, 4 * U)  # every row of every image is one sequence
        cols = Z.transpose(0, 2, 1, 3).reshape(B * Nw, Nh, 4 * U)
        seqs = [
            np.ascontiguousarray(rows[:, :, 0:U]),
            np.ascontiguousarray(rows[:, :, U:2 * U]),
            np.ascontiguousarray(cols[:, :, 2 * U:3 * U]),
            np.ascontiguousarray(cols[:, :, 3 * U:4 * U]),
        ]
        reverse = (False, True, False, True)
        states = _scan_directions(seqs, self.W_, float(self.leak), ACTIVATION_CODES[self.activation],
                                  reverse, self.device)
        out[..., 0:U] = states[0].reshape(B, Nh, Nw, U)
        out[..., U:2 * U] = states[1].reshape(B, Nh, Nw, U)
        out[..., 2 * U:3 * U] = states[2].reshape(B, Nw, Nh, U).transpose(0, 2, 1, 3)
        out[..., 3 * U:4 * U] = states[3].reshape(B, Nw, Nh, U).transpose(0, 2, 1, 3)
        return self._check_states(out)

    def _check_states(self, out):
        """``out`` unless a state overflowed (an unbounded activation with a huge radius or input scale)."""
        if out.size and not (np.isfinite(out.min()) and np.isfinite(out.max())):  # NaN propagates to both
            raise ValueError(
                f"the reservoir states overflow {out.dtype} ({self.activation} activation, 'spectral_radius' = "
                f"{float(self.spectral_radius)!r}, 'input_scaling' = {float(self.input_scaling)!r}); use smaller "
                f"values ('spectral_radius' < 1 keeps the states bounded)."
            )
        return out


def _scan_directions(seqs, Ws, leak, act, reverse, device):
    """torch path: scan ``(N_i, L_i, U)`` drives with ``Ws[i]``; equal shapes share one bmm per step."""
    from accel.continual import reservoir_scan_batched

    outs = [None] * len(seqs)
    groups = {}
    for i, z in enumerate(seqs):
        groups.setdefault(z.shape, []).append(i)
    for idx in groups.values():
        res = reservoir_scan_batched(
            np.stack([seqs[i] for i in idx]), np.stack([Ws[i] for i in idx]), leak, act,
            negative_slope=NEGATIVE_SLOPE, reverse=[reverse[i] for i in idx], device=device,
        )
        for j, i in enumerate(idx):
            outs[i] = res[j]
    return outs
