"""Bounds and guarantees of the papers behind ``algos``, as pure numpy functions.

One sub-module per paper (same names as in ``algos``); each has a ``BOUND_KIND`` dict recording
whether a bound is exact, high-probability, in expectation, up to constants or asymptotic.
"""
