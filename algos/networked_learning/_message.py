r"""The object an agent sends along its out-edges, and the one step every agent runs.

A message is a contiguous float64 vector (``m`` floats for the full protocol, ``k`` for the sketched and
subsampled ones). :class:`AgentMessage` pickles as a reference to :func:`_message_from_buffer` plus the raw
bytes of the vector (a protocol-5 ``PickleBuffer``: zero-copy out of band where the engine supports it, as
Dask and Ray do), so its serialised size is ``8 * len`` plus a fixed overhead of about 80 bytes (the
pickle protocol and frame opcodes, the module path and function name of the constructor and the length of
the byte string); a plain ``ndarray`` would add about 130 bytes (its dtype and shape are pickled too).

:func:`agent_step` is the per-agent computation. The in-process loop and the Dask and Ray runs all call it,
with the parents' messages as arguments.
"""

from __future__ import annotations

import pickle

import numpy as np

from ._population import POPULATION_RCOND

__all__ = ["AgentMessage", "agent_step", "message_nbytes"]

PICKLE_PROTOCOL = 5


def _message_from_buffer(buf):
    """Rebuild an :class:`AgentMessage` from the raw little-endian float64 bytes ``buf``."""
    return AgentMessage(np.frombuffer(buf, dtype="<f8"))


class AgentMessage:
    """An agent's message: a contiguous float64 vector, pickled as its raw bytes.

    Parameters
    ----------
    values : array-like of shape (n,)
        The message (the in-sample prediction, its sketch or its row subset); stored as a contiguous
        little-endian float64 array.

    Attributes
    ----------
    values : ndarray of shape (n,)
    """

    __slots__ = ("values",)

    def __init__(self, values):
        self.values = np.ascontiguousarray(values, dtype="<f8").reshape(-1)

    def __len__(self):
        return self.values.shape[0]

    def __reduce_ex__(self, protocol):
        if protocol >= 5:
            return _message_from_buffer, (pickle.PickleBuffer(self.values),)
        return _message_from_buffer, (self.values.tobytes(),)


def message_nbytes(message):
    """Bytes of ``pickle.dumps(message, protocol=5)``: what the engine serialises for one edge."""
    return len(pickle.dumps(message, protocol=PICKLE_PROTOCOL))


def _lstsq(A, y, rcond):
    if A.shape[1] == 0 or A.shape[0] == 0:
        return np.zeros(A.shape[1])
    return np.linalg.lstsq(A, y, rcond=POPULATION_RCOND if rcond is None else rcond)[0]


def agent_step(own, target, compress, rcond, *parents):
    """One agent of the protocol: compress its columns, fit least squares, build its message.

    Parameters
    ----------
    own : ndarray of shape (m, |S_v|)
        The agent's (centred) columns.
    target : ndarray of shape (n,)
        The (centred, and compressed like ``own``) label column: ``n = m``, or ``k`` for the compressed
        protocols.
    compress : None, ndarray of int or object with ``apply``
        ``None``: ``own`` is used as is; row indices: the shared row subset; a sketch: ``own`` is
        sketched (``compress.apply``).
    rcond : float or None
        Cut-off of ``lstsq`` (``None``: ``POPULATION_RCOND``).
    *parents : AgentMessage or ndarray
        The parents' messages, in the order of the agent's parent list.

    Returns
    -------
    local : tuple
        ``(theta, w, nbytes)``: coefficients over the own columns and over the parents, and the
        serialised size of the message.
    message : AgentMessage
        ``A c``, the agent's compressed in-sample prediction.
    """
    n_own = own.shape[1]
    if compress is None:
        pass
    elif isinstance(compress, np.ndarray):
        own = own[compress]
    elif n_own:
        own = compress.apply(own)
        if own.ndim == 1:
            own = own[:, None]
    else:
        own = np.zeros((target.shape[0], 0))
    par = [p.values if isinstance(p, AgentMessage) else p for p in parents]
    A = np.column_stack([own] + par) if par else own
    c = _lstsq(A, target, rcond)
    message = AgentMessage(A @ c)
    return (c[:n_own].copy(), c[n_own:].copy(), message_nbytes(message)), message


def compress_target(target, compress):
    """The label column as the agents see it: ``target``, its row subset or its sketch."""
    if compress is None:
        return target
    if isinstance(compress, np.ndarray):
        return target[compress]
    return compress.apply(target)
