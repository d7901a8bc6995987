"""Accelerated (torch) paths of the package's heavy cores, behind one array-backend switch.

Importing :mod:`accel` never imports torch; see :func:`get_backend`.
"""

from .backend import available_backends, cuda_available, get_backend

__all__ = ["get_backend", "available_backends", "cuda_available"]
