"""Metrics: the Prometheus view of the service, on its own registry.

Queue depth by status is computed at scrape time from the scheduler's counters (no gauge
to keep in step); the process collector supplies `process_open_fds`, the figure the seed's
"too many open files" bug would have shown climbing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

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

    def render(self) -> bytes:
        """render returns the text exposition of every metric."""
        return generate_latest(self.registry)
