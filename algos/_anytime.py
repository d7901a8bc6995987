"""Anytime fits: an interrupt (Ctrl-C) stops an iterative estimator at a consistent point.

Every long loop of the package (``PBVI``, ``VoGCAM``, the federated rounds, ...) runs inside
:class:`Interruptible`::

    run = Interruptible("PBVI")
    with run:
        for it in range(1, max_iter + 1):
            run.checkpoint(alphas=alphas, beliefs=B)   # the state at the top of the iteration
            ...                                          # may be interrupted anywhere
    if run.interrupted:
        alphas, B = run.state["alphas"], run.state["beliefs"]   # the last consistent state
    run.finish(self, "after 12 sweeps")                 # sets interrupted_, warns

Loops that update their state in place use ``Interruptible(name, defer=True)`` instead: SIGINT
only sets ``run.requested`` and the loop stops at its next consistent point (``PointBasedSolver``
checks it before every trial).

A ``KeyboardInterrupt`` raised inside the ``with`` block (the default SIGINT handler raises it at
the next bytecode; compiled kernels finish their call first) is caught at the block's end, the
estimator rolls back to its last checkpoint, finishes its fit with that state, sets
``interrupted_ = True`` and warns with :class:`InterruptedFitWarning`. A second interrupt, during
the finishing code, is not caught and aborts the fit as usual. The command-line interface writes
what the fitted estimator holds (policy, report) and exits with status 130 when ``interrupted_``
is set.
"""

from __future__ import annotations

import signal
import threading
import warnings

__all__ = ["Interruptible", "InterruptedFitWarning"]


class InterruptedFitWarning(UserWarning):
    """An interrupt stopped the fit early; the estimator holds its best state so far."""


class Interruptible:
    """Catch one ``KeyboardInterrupt`` in a loop and keep the state of the last checkpoint.

    Parameters
    ----------
    name : str
        The estimator's name, for the warning.
    defer : bool, default=False
        ``False``: a ``KeyboardInterrupt`` raised in the block is caught at its end and the loop
        restores :attr:`state`. ``True`` (for loops whose state is updated in place, where no
        checkpoint is cheap): while the block runs (main thread only) SIGINT sets
        :attr:`requested`, which the loop checks at its consistent points and stops; a second
        SIGINT raises ``KeyboardInterrupt`` and aborts.

    Attributes
    ----------
    interrupted : bool
        Whether the block ended by an interrupt.
    state : dict
        The keyword arguments of the last :meth:`checkpoint` (references: the loop must replace,
        not mutate in place, the objects it checkpoints, or pass copies).
    n_checkpoints : int
        How many checkpoints were taken (the completed iterations plus one, when the loop
        checkpoints at the top of every iteration).
    """

    def __init__(self, name, *, defer=False):
        self.name = str(name)
        self.defer = bool(defer)
        self.interrupted = False
        self.state = {}
        self.n_checkpoints = 0
        self._previous = None

    @property
    def requested(self):
        """``defer=True``: whether a SIGINT arrived; the loop checks it where its state is whole."""
        return self.interrupted

    def _on_sigint(self, signum, frame):
        if self.interrupted:  # the second interrupt aborts at once
            signal.signal(signal.SIGINT, self._previous or signal.default_int_handler)
            raise KeyboardInterrupt
        self.interrupted = True

    def checkpoint(self, **state):
        """Record the loop's consistent state (called where the state is whole).

        Parameters
        ----------
        **state
            The objects to restore after an interrupt.
        """
        self.state = state
        self.n_checkpoints += 1

    def __enter__(self):
        self.interrupted = False
        self._previous = None
        if self.defer and threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
        if self.defer:
            return False  # a KeyboardInterrupt here is the second interrupt (or raised by code): abort
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            self.interrupted = True
            return True  # swallowed: the fit finishes with the checkpointed state
        return False

    def finish(self, estimator, detail=""):
        """Set ``estimator.interrupted_`` and warn when the loop was interrupted.

        Parameters
        ----------
        estimator : object
            The estimator being fitted.
        detail : str, default=""
            Where the fit stopped (e.g. ``"after 12 sweeps"``).
        """
        estimator.interrupted_ = bool(self.interrupted)
        if self.interrupted:
            where = f" {detail}" if detail else ""
            warnings.warn(
                f"{self.name} was interrupted{where}: it is fitted with its last consistent state "
                "(interrupted_ = True); interrupt again to abort a fit.",
                InterruptedFitWarning,
                stacklevel=3,
            )
