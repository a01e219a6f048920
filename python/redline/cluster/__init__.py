"""cluster: one run across many machines, its injectors Ray actors (docs/distributed.md).

    >>> import redline
    >>> result = redline.run("http://10.0.0.5:8080/", rate=50_000, duration="1m",
    ...                      cluster="ray://head:10001")
    >>> result.data["cluster"]["injectors"]

The parts, one noun each: :mod:`~redline.cluster.address` (``ray://HOST:PORT``,
``local:N``), :mod:`~redline.cluster.connection` (Ray and the placed injectors),
:mod:`~redline.cluster.injector` (the actor), :mod:`~redline.cluster.split` (each
injector's share), :mod:`~redline.cluster.merge` (snapshots and reports added exactly),
:mod:`~redline.cluster.table` (the per-injector table and verdict) and
:mod:`~redline.cluster.handle` (the driver's RunHandle).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from redline.cluster.address import Address, Kind, check_injectors, parse_address
from redline.exports import lazy_attribute
from redline.runs.config import RunConfig

if TYPE_CHECKING:
    from redline.cluster.handle import ClusterHandle, OnLoss

# The handle (and through it Ray's connection and psutil) loads on first use: every CLI
# command imports this package for its --cluster flags, and a run without them needs none.
_HOME = {"ClusterHandle": "handle", "OnLoss": "handle"}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _HOME, name)


__all__ = [
    "Address",
    "ClusterHandle",
    "Kind",
    "OnLoss",
    "parse_address",
    "start_run",
]


def start_run(
    config: RunConfig,
    cluster: str,
    *,
    injectors: int | None = None,
    on_injector_loss: str = "fail",
    runtime_env: dict[str, Any] | None = None,
) -> ClusterHandle:
    """start_run starts the engine RunConfig ``config`` across the injectors of ``cluster``
    (``ray://HOST:PORT`` or ``local:N``) and returns the driver's handle; its ``report()``
    ends the injectors (and a Ray that ``local:N`` started)."""
    from redline.cluster.connection import Connection
    from redline.cluster.handle import ClusterHandle, OnLoss
    from redline.cluster.split import for_rebalance

    address = parse_address(cluster)
    n = check_injectors(injectors, address)
    policy = OnLoss.parse(on_injector_loss)
    if policy is OnLoss.REBALANCE:
        for_rebalance(config)  # refused here, before any Ray starts, if it cannot be done
    conn = Connection.open(address, n, runtime_env)
    try:
        return ClusterHandle(conn, config, policy)
    except BaseException:
        conn.close()
        raise
