"""Metrics: the Prometheus view of the service, on its own registry.

Queue depth by status is computed at scrape time from the scheduler's counters (no gauge
to keep in step); the process collector supplies `process_open_fds`, the figure the seed's
"too many open files" bug would have shown climbing. The executor's slots and the fetch
pool are read at scrape time too, as `X_in_use` / `X_limit` gauge pairs (the names a load
tester looks for to tell a pool at its limit: `redline find --watch`), with the fetches
waiting for a connection as the pool's saturation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from taskqueue.fetch import PoolUse

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""CONTENT_TYPE is the media type of the Prometheus text exposition format."""


class _DepthCollector(Collector):
    def __init__(
        self,
        depth: Callable[[], Mapping[str, int]],
        shared: Callable[[], Mapping[str, int] | None],
    ) -> None:
        self._depth = depth
        self._shared = shared

    def collect(self) -> Iterator[GaugeMetricFamily]:
        g = GaugeMetricFamily(
            "taskqueue_tasks",
            "Tasks known to this server by status (finished ones until their TTL). On a shared"
            " database: running here, and finished here since start.",
            labels=["status"],
        )
        for status, n in self._depth().items():
            g.add_metric([status], n)
        yield g
        shared = self._shared()
        if shared is not None:
            s = GaugeMetricFamily(
                "taskqueue_shared_tasks",
                "QUEUED and RUNNING tasks of all servers on the shared database (last count).",
                labels=["status"],
            )
            for status, n in shared.items():
                s.add_metric([status], n)
            yield s


class _UsageCollector(Collector):
    """_UsageCollector reports the executor's slots by task type and the fetch pool's
    connections (in all and per origin host) as in-use / limit gauge pairs."""

    def __init__(
        self,
        slots: Callable[[], Mapping[Any, tuple[int, int]]],
        pool: Callable[[], PoolUse | None],
    ) -> None:
        self._slots = slots
        self._pool = pool

    def collect(self) -> Iterator[GaugeMetricFamily]:
        used = GaugeMetricFamily(
            "taskqueue_executor_slots_in_use", "Tasks running here, by type.", labels=["type"]
        )
        limit = GaugeMetricFamily(
            "taskqueue_executor_slots_limit",
            "Tasks of a type that may run here at once.",
            labels=["type"],
        )
        for kind, (busy, most) in self._slots().items():
            name = str(getattr(kind, "value", kind))
            used.add_metric([name], busy)
            limit.add_metric([name], most)
        yield used
        yield limit
        pool = self._pool()
        if pool is None:
            return
        yield GaugeMetricFamily(
            "taskqueue_fetch_connections_in_use",
            "Outbound fetch connections held by a fetch, all origins.",
            value=pool.in_use,
        )
        yield GaugeMetricFamily(
            "taskqueue_fetch_connections_limit",
            "Outbound fetch connections allowed at once, all origins (--fetch-concurrency).",
            value=pool.limit,
        )
        host_used = GaugeMetricFamily(
            "taskqueue_fetch_host_connections_in_use",
            "Outbound fetch connections held by a fetch, per origin host:port.",
            labels=["host"],
        )
        host_limit = GaugeMetricFamily(
            "taskqueue_fetch_host_connections_limit",
            "Outbound fetch connections allowed at once to one origin (--fetch-per-host).",
            labels=["host"],
        )
        waiting = GaugeMetricFamily(
            "taskqueue_fetch_waiting",
            "Fetches waiting for a connection to their origin (the pool's saturation).",
            labels=["host"],
        )
        for host in sorted(set(pool.per_host) | set(pool.waiting)):
            host_used.add_metric([host], pool.per_host.get(host, 0))
            host_limit.add_metric([host], pool.per_host_limit)
            waiting.add_metric([host], pool.waiting.get(host, 0))
        yield host_used
        yield host_limit
        yield waiting


class Metrics:
    """Metrics owns the registry and the counters the service updates."""

    def __init__(
        self,
        depth: Callable[[], Mapping[str, int]],
        shared: Callable[[], Mapping[str, int] | None] = lambda: None,
    ) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(ProcessCollector(registry=None))
        self.registry.register(_DepthCollector(depth, shared))
        self.submissions = Counter(
            "taskqueue_submissions_total",
            "Accepted task submissions.",
            ["type"],
            registry=self.registry,
        )
        self.rejections = Counter(
            "taskqueue_rejections_total",
            "Rejected submissions by reason.",
            ["reason"],
            registry=self.registry,
        )
        self.finished = Counter(
            "taskqueue_tasks_finished_total",
            "Tasks reaching a final state.",
            ["type", "status"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "taskqueue_task_duration_seconds",
            "Execution time of a task attempt, by type.",
            ["type"],
            buckets=(
                0.001,
                0.0025,
                0.005,
                0.01,
                0.025,
                0.05,
                0.1,
                0.25,
                0.5,
                1,
                2.5,
                5,
                10,
                30,
                60,
            ),
            registry=self.registry,
        )
        self.hedges = Counter(
            "taskqueue_hedges_fired_total",
            "Hedged second fetch attempts started.",
            registry=self.registry,
        )
        self.lease_expiries = Counter(
            "taskqueue_lease_expiries_total",
            "Leases found expired (requeued or abandoned).",
            registry=self.registry,
        )

        self.stale_outcomes = Counter(
            "taskqueue_stale_outcomes_total",
            "Outcomes dropped because, meanwhile, the task's lease was taken over by another"
            " server (or another server cancelled it): the work ran again there.",
            registry=self.registry,
        )

    def watch_usage(
        self,
        slots: Callable[[], Mapping[Any, tuple[int, int]]],
        pool: Callable[[], PoolUse | None],
    ) -> None:
        """watch_usage adds the executor's slots and the fetch pool's connections (read at
        scrape time from ``slots`` and ``pool``) to the registry."""
        self.registry.register(_UsageCollector(slots, pool))

    def render(self) -> bytes:
        """render returns the text exposition of every metric."""
        return generate_latest(self.registry)
