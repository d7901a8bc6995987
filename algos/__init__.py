"""algos: seven recent theory papers as fast, tested, usable scientific Python software.

Import a module's public names from its sub-package, e.g.
``from algos.fair_matching import ThresholdEqualFilling``. Importing ``algos`` itself is cheap: it
neither imports torch nor compiles numba kernels.
"""

__version__ = "0.1.0"

MODULES = (
    "fair_matching",
    "hetero_regression",
    "networked_learning",
    "pomdp",
    "continual",
    "federated",
    "point_process",
)

__all__ = ["__version__", "MODULES"]
