r"""Where the agents run: in this process, as Dask tasks or as Ray tasks.

Each runner executes :func:`~._message.agent_step` once per agent, in topological order, with the parents'
messages as arguments. On Dask the arguments are the futures of the parents' messages and on Ray their
``ObjectRef``\ s, so the messages go from worker to worker through the engine and never through this
process; only the agents' coefficients (and the measured message sizes) are gathered at the end.
"""

from __future__ import annotations

import operator

from .._engines import check_scheduler as _check_scheduler
from .._engines import dask_client as _dask_client
from .._engines import ray_session as _ray_session
from ._message import agent_step, compress_target

EXECUTORS = ("inprocess", "dask", "ray")


def check_scheduler(scheduler, executor):
    """``scheduler`` (None or a str: its type is the estimator's constraint) checked against ``executor``: a
    non-empty address, for executor ``"dask"``/``"ray"`` only."""
    if not isinstance(scheduler, str):
        return scheduler
    return _check_scheduler(scheduler, executor, "executor")


def dask_client(scheduler):
    """The running ``distributed`` client, or one opened on ``scheduler`` for the block (and closed)."""
    return _dask_client(scheduler, "executor='dask'")


def ray_session(scheduler):
    """The ``ray`` module with a session: the running one, or one started on ``scheduler`` for the block."""
    return _ray_session(scheduler, "executor='ray'")


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
