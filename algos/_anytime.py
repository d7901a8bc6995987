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

**The whole fit stops.** An interrupt stops the whole fit, whatever phase it lands in:

* Runs nest. A run entered while another is active in the same thread (a solver fitted inside
  ``RECAPController.fit``, a Poisson ``VoGCAM`` inside a ``VoGCAM`` start) is its child: an
  interrupt that stops the child marks every enclosing run as interrupted too, and a SIGINT that
  reaches an enclosing deferred run stops the child at its next checkpoint (a deferred child sees
  it in ``requested``; a child whose loop relies on ``KeyboardInterrupt`` gets the default SIGINT
  handler while it runs and raises at its next :meth:`Interruptible.checkpoint`). The child then
  finishes with its best state (``interrupted_ = True``) and the outer fit, which checks its own
  ``requested`` (or the child's ``interrupted_``) right after, stops too and keeps its own best
  state so far.
* Before any state exists (validation, set-up before the first checkpoint, a first interrupt in a
  step with nothing to roll back to) there is nothing to keep: the ``KeyboardInterrupt`` is
  re-raised, as Ctrl-C does in any Python code and in scikit-learn's own estimators, and
  :func:`unfitted_on_interrupt` leaves the estimator cleanly unfitted first: every fitted attribute
  (public, ending in ``_``) is removed, so :func:`sklearn.utils.validation.check_is_fitted` raises
  ``NotFittedError`` (a previous fit is dropped too: a half-refitted estimator is never returned).
* A second interrupt aborts in the same way (``KeyboardInterrupt``, cleanly unfitted).

So after Ctrl-C a fit either returns, fitted with ``interrupted_ = True`` and usable, or raises
``KeyboardInterrupt`` with the estimator unfitted; never a half-set estimator, never a fit that
goes on.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import warnings

__all__ = ["Interruptible", "InterruptedFitWarning", "is_interrupt", "unfitted_on_interrupt"]

_LOCAL = threading.local()  # the stack of the runs entered in this thread (nested fits)


def _stack():
    stack = getattr(_LOCAL, "runs", None)
    if stack is None:
        stack = _LOCAL.runs = []
    return stack


def _in_main_thread():
    return threading.current_thread() is threading.main_thread()


def is_interrupt(exc):
    """Whether ``exc`` is an interrupt: a ``KeyboardInterrupt``, or the ``SystemError`` a compiled
    (numba) function raises when a SIGINT's ``KeyboardInterrupt`` was set while it ran ("returned a
    result with an exception set"; the interrupt is its cause).

    Parameters
    ----------
    exc : BaseException or None
        The exception.

    Returns
    -------
    bool
    """
    if isinstance(exc, KeyboardInterrupt):
        return True
    return isinstance(exc, SystemError) and isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt)


def fitted_attributes(estimator):
    """The names of the fitted attributes of ``estimator``: public, ending in ``_`` (the
    convention :func:`sklearn.utils.validation.check_is_fitted` reads).

    Parameters
    ----------
    estimator : object
        Any estimator.

    Returns
    -------
    list of str
        The attribute names, in ``vars`` order.
    """
    return [k for k in vars(estimator) if k.endswith("_") and not k.startswith("_")]


@contextlib.contextmanager
def unfitted_on_interrupt(estimator):
    """Run a ``fit`` so that a ``KeyboardInterrupt`` escaping it leaves ``estimator`` cleanly unfitted.

    A fit that catches its interrupt (an :class:`Interruptible` loop) returns fitted with
    ``interrupted_ = True``; one that lets it escape (set-up before any state exists, a second
    interrupt) passes through here: every fitted attribute is removed (see
    :func:`fitted_attributes`) and the ``KeyboardInterrupt`` is re-raised.

    Parameters
    ----------
    estimator : object
        The estimator being fitted.

    Examples
    --------
    >>> class Est:
    ...     def fit(self):
    ...         with unfitted_on_interrupt(self):
    ...             self.coef_ = 1.0
    ...             raise KeyboardInterrupt
    >>> est = Est()
    >>> try:
    ...     est.fit()
    ... except KeyboardInterrupt:
    ...     print(hasattr(est, "coef_"))
    False
    """
    try:
        yield estimator
    except (KeyboardInterrupt, SystemError) as exc:
        if not is_interrupt(exc):
            raise
        for name in fitted_attributes(estimator):
            try:
                delattr(estimator, name)
            except AttributeError:  # a read-only property: nothing was set
                pass
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise KeyboardInterrupt from exc  # an interrupt that a compiled function reported as SystemError


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
        self._parent = None
        self._inside = False

    @property
    def requested(self):
        """Whether an interrupt asked this run, or a run it is nested in, to stop (``defer=True``: the
        loop checks it where its state is whole); an enclosing run's request marks this one too."""
        if not self.interrupted and self._parent is not None and self._parent.requested:
            self.interrupted = True
        return self.interrupted

    def _mark(self):
        """Mark this run and every run it is nested in as interrupted (the whole fit stops)."""
        run = self
        while run is not None:
            run.interrupted = True
            run = run._parent

    def _on_sigint(self, signum, frame):
        if self.interrupted:  # the second interrupt aborts at once
            signal.signal(signal.SIGINT, self._previous or signal.default_int_handler)
            self._previous = None
            raise KeyboardInterrupt
        self._mark()

    def checkpoint(self, **state):
        """Record the loop's consistent state (called where the state is whole).

        Inside the ``with`` block of a run nested in a deferred run that an interrupt asked to stop,
        the checkpoint then raises ``KeyboardInterrupt`` (caught at the block's end, which restores
        this state): a SIGINT received by the outer fit stops the inner loop too.

        Parameters
        ----------
        **state
            The objects to restore after an interrupt.
        """
        self.state = state
        self.n_checkpoints += 1
        if self._inside and not self.defer and self._parent is not None and self._parent.requested:
            raise KeyboardInterrupt

    def __enter__(self):
        self.interrupted = False
        self._previous = None
        stack = _stack()
        self._parent = stack[-1] if stack else None
        stack.append(self)
        self._inside = True
        if _in_main_thread():
            if self.defer:
                self._previous = signal.signal(signal.SIGINT, self._on_sigint)
            elif isinstance(getattr(signal.getsignal(signal.SIGINT), "__self__", None), Interruptible):
                # nested in a deferred run: this loop relies on KeyboardInterrupt, so SIGINT raises here
                self._previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        return self

    def __exit__(self, exc_type, exc, tb):
        self._inside = False
        stack = _stack()
        if self in stack:  # (normally the top; a run left out of order never stays as a parent)
            del stack[len(stack) - 1 - stack[::-1].index(self):]
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
        if self.defer:
            return False  # a KeyboardInterrupt here is the second interrupt (or raised by code): abort
        if exc_type is not None and is_interrupt(exc):
            self._mark()  # the enclosing fits stop too
            return True  # swallowed: the fit finishes with the checkpointed state
        return False

    def finish(self, estimator, detail="", stacklevel=3):
        """Set ``estimator.interrupted_`` and warn when the loop was interrupted.

        Parameters
        ----------
        estimator : object
            The estimator being fitted.
        detail : str, default=""
            Where the fit stopped (e.g. ``"after 12 sweeps"``).
        stacklevel : int, default=3
            The warning's ``stacklevel`` (3: the caller of the method that calls ``finish``).
        """
        estimator.interrupted_ = bool(self.interrupted)
        if self.interrupted:
            where = f" {detail}" if detail else ""
            warnings.warn(
                f"{self.name} was interrupted{where}: it is fitted with its last consistent state "
                "(interrupted_ = True); interrupt again to abort a fit.",
                InterruptedFitWarning,
                stacklevel=stacklevel,
            )
