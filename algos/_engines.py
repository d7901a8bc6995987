"""The cluster engines users run (Dask, Ray): find the running client or session, or open one on an address.

One place for what every engine path of the package needs (``algos.experiments``, the networked agents,
the CLI): the install hint, the connection timeout and the two context managers below. Each raises,
before any task is submitted, an ``ImportError`` naming the ``scale`` extra when the engine is missing
and a ``ValueError`` saying how to start one when none runs and no address is given. ``who`` is the
argument as the caller's user wrote it (``"backend='dask'"``, ``"executor='ray'"``), so the message
names it.
"""

from __future__ import annotations

import contextlib

__all__ = ["INSTALL_HINT", "DASK_CONNECT_TIMEOUT", "dask_client", "ray_session", "check_scheduler"]

INSTALL_HINT = "pip install 'algos-theory[scale]' (or 'dask[distributed]' and 'ray')"
DASK_CONNECT_TIMEOUT = "10s"  # how long a scheduler address may take to answer


def check_scheduler(scheduler, engine, argument):
    """``scheduler`` checked: None, or an address (str) when ``engine`` is ``"dask"`` or ``"ray"``.

    ``argument`` is the name of the engine argument in the caller (``"backend"``, ``"executor"``).
    """
    if scheduler is None:
        return None
    if not isinstance(scheduler, str) or not scheduler:
        raise TypeError(f"'scheduler' must be None or an address (str); got {scheduler!r} of type "
                        f"{type(scheduler).__name__}.")
    if engine not in ("dask", "ray"):
        raise ValueError(f"'scheduler' is only used with {argument} 'dask' or 'ray'; got scheduler={scheduler!r} "
                         f"with {argument}={engine!r}.")
    return scheduler


@contextlib.contextmanager
def dask_client(scheduler, who):
    """The running ``distributed`` client, or one opened on ``scheduler`` for the block (and closed)."""
    try:
        import distributed
    except ImportError as exc:
        raise ImportError(f"{who} needs dask.distributed, which is not installed: {INSTALL_HINT}.") from exc
    if scheduler is None:
        try:
            client = distributed.get_client()
        except ValueError as exc:
            raise ValueError(
                f"{who} needs a running dask.distributed client and none is running: start one first "
                "(`from dask.distributed import Client; client = Client('tcp://host:8786')`, or "
                "`Client(LocalCluster())` on one machine) or pass scheduler='tcp://host:8786'."
            ) from exc
        yield client
        return
    try:
        client = distributed.Client(scheduler, timeout=DASK_CONNECT_TIMEOUT, set_as_default=False)
    except OSError as exc:
        raise ValueError(f"{who}: no dask scheduler answers at 'scheduler'={scheduler!r} ({exc}).") from exc
    try:
        yield client
    finally:
        client.close()


@contextlib.contextmanager
def ray_session(scheduler, who):
    """The ``ray`` module with a session: the running one, or one started on ``scheduler`` for the block."""
    try:
        import ray
    except ImportError as exc:
        raise ImportError(f"{who} needs ray, which is not installed: {INSTALL_HINT}.") from exc
    if ray.is_initialized():
        if scheduler is not None:
            raise ValueError(f"{who}: Ray is already started in this process; drop 'scheduler' "
                             f"(got {scheduler!r}) or call ray.shutdown() first.")
        yield ray
        return
    if scheduler is None:
        raise ValueError(
            f"{who} needs a running Ray session and none is started: call `ray.init()` (this machine) "
            "or `ray.init(address='ray://host:10001')` first, or pass scheduler='local' / 'auto' / "
            "'ray://host:10001'."
        )
    ray.init(address=None if scheduler == "local" else scheduler, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
