r"""Spatial covariates given as raster images (pixel grids), sampled at arbitrary points.

:class:`RasterCovariates` wraps one or more images on a common pixel grid (column x-coordinates
``xcol``, row y-coordinates ``yrow``; ``image[r, c]`` is the value at ``(xcol[c], yrow[r])``), and maps
an ``(m, 2)`` array of coordinates to an ``(m, p)`` array by bilinear interpolation (points outside the
grid take the nearest edge value). By default each covariate is standardised with the mean and
standard deviation of its image, which keeps the regression coefficients on comparable scales.

:func:`load_raster_covariates` reads an ``.npz`` file laid out like spatstat's ``bei.extra``
(keys ``elev``, ``grad`` with ``xcol`` and ``yrow``).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_array, check_bool

__all__ = ["RasterCovariates", "load_raster_covariates"]


class RasterCovariates:
    """Callable ``(m, 2) -> (m, p)``: bilinear interpolation of ``p`` raster images.

    Parameters
    ----------
    images : dict name -> ndarray (ny, nx)
    xcol : ndarray (nx,), increasing
    yrow : ndarray (ny,), increasing
    standardize : bool, default=True
        Subtract each image's mean and divide by its standard deviation.
    """

    def __init__(self, images, xcol, yrow, standardize=True):
        if not isinstance(images, dict) or not images:
            raise ValueError("'images' must be a non-empty dict of name -> 2-d array.")
        self.xcol = check_array(xcol, "xcol", ndim=1, allow_empty=True)
        self.yrow = check_array(yrow, "yrow", ndim=1, allow_empty=True)
        for name, v in (("xcol", self.xcol), ("yrow", self.yrow)):
            if len(v) < 2:
                raise ValueError(f"'{name}' needs at least 2 entries; got {len(v)}.")
            if np.any(np.diff(v) <= 0):
                raise ValueError(f"'{name}' must be strictly increasing; got {v.tolist()[:8]}.")
        check_bool(standardize, "standardize")
        self.names = list(images)
        self.images = []
        self.center = []
        self.scale = []
        for name in self.names:
            im = np.asarray(images[name], dtype=np.float64)
            if im.shape != (len(self.yrow), len(self.xcol)):
                raise ValueError(
                    f"image {name!r} has shape {im.shape}; expected (len(yrow), len(xcol)) = "
                    f"{(len(self.yrow), len(self.xcol))}."
                )
            ok = np.isfinite(im)
            if not ok.any():
                raise ValueError(f"image {name!r} has no finite pixel.")
            if not ok.all():  # fill missing pixels with the image mean
                im = np.where(ok, im, np.nanmean(np.where(ok, im, np.nan)))
            c, s = (float(im.mean()), float(im.std())) if standardize else (0.0, 1.0)
            self.images.append(im)
            self.center.append(c)
            self.scale.append(s if s > 0 else 1.0)

    @property
    def n_covariates(self):
        r"""Number of covariate images.
        """
        return len(self.names)

    def __call__(self, xy):
        xy = check_array(xy, "xy", allow_empty=True, finite=False)
        if xy.ndim != 2 or xy.shape[1] != 2:
            raise ValueError(f"coordinates must have shape (m, 2); got {xy.shape}.")
        x = np.clip(xy[:, 0], self.xcol[0], self.xcol[-1])
        y = np.clip(xy[:, 1], self.yrow[0], self.yrow[-1])
        ci = np.clip(np.searchsorted(self.xcol, x, side="right") - 1, 0, len(self.xcol) - 2)
        ri = np.clip(np.searchsorted(self.yrow, y, side="right") - 1, 0, len(self.yrow) - 2)
        tx = (x - self.xcol[ci]) / (self.xcol[ci + 1] - self.xcol[ci])
        ty = (y - self.yrow[ri]) / (self.yrow[ri + 1] - self.yrow[ri])
        out = np.empty((len(xy), len(self.images)))
        for t, im in enumerate(self.images):
            v = ((1 - tx) * (1 - ty) * im[ri, ci] + tx * (1 - ty) * im[ri, ci + 1]
                 + (1 - tx) * ty * im[ri + 1, ci] + tx * ty * im[ri + 1, ci + 1])
            out[:, t] = (v - self.center[t]) / self.scale[t]
        return out

    def __repr__(self):
        return f"RasterCovariates({self.names}, grid {len(self.yrow)}x{len(self.xcol)})"


def load_raster_covariates(path, keys=None, standardize=True):
    """A :class:`RasterCovariates` from an ``.npz`` with images plus ``xcol`` and ``yrow``.

    ``keys``: the image names to use (default: every 2-d array other than ``xcol``/``yrow``).

    Parameters
    ----------
    path : str or path-like
        The ``.npz`` file.
    keys : list of str or None, default=None
        The image names to use (default: every 2-d array other than ``xcol``/``yrow``).
    standardize : bool, default=True
        Centre and scale each image.

    Returns
    -------
    RasterCovariates
        The covariates.
    """
    with np.load(path) as z:
        names = [k for k in z.files if k not in ("xcol", "yrow") and z[k].ndim == 2] if keys is None else list(keys)
        missing = [k for k in names + ["xcol", "yrow"] if k not in z.files]
        if missing:
            raise ValueError(f"{path}: missing arrays {missing}; found {z.files}.")
        images = {k: z[k] for k in names}
        return RasterCovariates(images, z["xcol"], z["yrow"], standardize=standardize)
