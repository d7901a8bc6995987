r"""Where the agents run: in this process, as Dask tasks or as Ray tasks.

Each runner executes :func:`~._message.agent_step` once per agent, in topological order, with the parents'
messages as arguments. On Dask the arguments are the futures of the parents' messages and on Ray their
``ObjectRef``\ s, so the messages go from worker to worker through the engine and never through this
process; only the agents' coefficients (and the measured message sizes) are gathered at the end.
"""

from __future__ import annotations

import contextlib
import operator

from .._experiments import _DASK_CONNECT_TIMEOUT, _INSTALL_HINT
from ._message import agent_step, compress_target

EXECUTORS = ("inprocess", "dask", "ray")


def check_scheduler(scheduler, executor):
    """``scheduler`` checked: None, or an address (str) for executor ``"dask"``/``"ray"``."""
    if scheduler is None:
        return None
    if not isinstance(scheduler, str) or not scheduler:
        raise TypeError(f"'scheduler' must be None or an address (str); got {scheduler!r} of type "
                        f"{type(scheduler).__name__}.")
    if executor == "inprocess":
        raise ValueError(f"'scheduler' is only used with executor='dask' or 'ray'; got scheduler={scheduler!r} "
                         "with executor='inprocess'.")
    return scheduler


@contextlib.contextmanager
def dask_client(scheduler):
    """The running ``distributed`` client, or one opened on ``scheduler`` for the block (and closed)."""
    try:
        import distributed
    except ImportError as exc:
        raise ImportError(f"executor='dask' needs dask.distributed, which is not installed: {_INSTALL_HINT}.") from exc
    if scheduler is None:
        try:
            client = distributed.get_client()
        except ValueError as exc:
            raise ValueError(
                "executor='dask' needs a running dask.distributed client and none is running: start one first "
                "(`from dask.distributed import Client; client = Client('tcp://host:8786')`, or "
                "`Client(LocalCluster())` on one machine) or pass scheduler='tcp://host:8786'."
            ) from exc
        yield client
        return
    try:
        client = distributed.Client(scheduler, timeout=_DASK_CONNECT_TIMEOUT, set_as_default=False)
    except OSError as exc:
        raise ValueError(f"executor='dask': no dask scheduler answers at 'scheduler'={scheduler!r} ({exc}).") from exc
    try:
        yield client
    finally:
        client.close()


@contextlib.contextmanager
def ray_session(scheduler):
    """The ``ray`` module with a session: the running one, or one started on ``scheduler`` for the block."""
    try:
        import ray
    except ImportError as exc:
        raise ImportError(f"executor='ray' needs ray, which is not installed: {_INSTALL_HINT}.") from exc
    if ray.is_initialized():
        if scheduler is not None:
            raise ValueError(f"executor='ray': Ray is already started in this process; drop 'scheduler' "
                             f"(got {scheduler!r}) or call ray.shutdown() first.")
        yield ray
        return
    if scheduler is None:
        raise ValueError(
            "executor='ray' needs a running Ray session and none is started: call `ray.init()` (this machine) "
            "or `ray.init(address='ray://host:10001')` first, or pass scheduler='local' / 'auto' / "
            "'ray://host:10001'."
        )
    ray.init(address=None if scheduler == "local" else scheduler, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def run_inprocess(order, parents, own, y, compress, rcond):
    """``{v: (theta_v, w_v, nbytes_v)}``: every agent in this process, messages kept in a dict."""
    target = compress_target(y, compress)
    messages, local = {}, {}
    for v in order:
        local[v], messages[v] = agent_step(own[v], target, compress, rcond, *(messages[u] for u in parents[v]))
    return local


def run_dask(client, order, parents, own, y, compress, rcond):
    """As :func:`run_inprocess`, each agent a task on ``client``'s cluster taking its parents' message futures."""
    data = client.scatter([y] + [own[v] for v in order])
    target = client.submit(compress_target, data[0], compress, pure=False)
    messages, local = {}, {}
    for v, cols in zip(order, data[1:]):
        out = client.submit(agent_step, cols, target, compress, rcond, *(messages[u] for u in parents[v]),
                            pure=False)
        messages[v] = client.submit(operator.itemgetter(1), out, pure=False)
        local[v] = client.submit(operator.itemgetter(0), out, pure=False)
    values = client.gather([local[v] for v in order])
    return dict(zip(order, values))


def run_ray(ray, order, parents, own, y, compress, rcond):
    """As :func:`run_inprocess`, each agent a Ray task taking its parents' message ``ObjectRef``\\ s."""
    step = ray.remote(num_returns=2)(agent_step)
    target = ray.remote(compress_target).remote(ray.put(y), compress)
    messages, local = {}, {}
    for v in order:
        local[v], messages[v] = step.remote(ray.put(own[v]), target, compress, rcond,
                                            *(messages[u] for u in parents[v]))
    values = ray.get([local[v] for v in order])
    return dict(zip(order, values))
