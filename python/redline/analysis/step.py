"""step: one held load of a capacity search and what it measured, as the analysis, the report
and the JSON result see it (rates per second, latencies in milliseconds)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StepResult:
    """StepResult is one step: the load held (users in the closed model, req/s offered in
    the open one), its steady-state figures, the service's mean figures over it (keys of
    :class:`redline.service.monitor.Sample`: ``cpu_percent``, ``load1``, ``rss_bytes``, ``fds``,
    ``threads``, ``connections``), and the verdict: ``fired`` names every stop condition
    that held (empty for a good step) and ``why`` says it with figures. Optional figures the
    measurement did not give are None.

    ``throughput_rps`` is goodput: good outcomes a second in the search's unit (requests,
    iterations or one request name; see :mod:`redline.analysis.outcome`), with its standard
    error ``throughput_se`` from the intervals' spread. ``answered_rps`` counts every answer
    (what Little's law needs), ``refused_rps`` the answers with an error status and
    ``failed_rps`` every failed outcome. ``latency_rise_ms`` is how much the mean latency rose
    through the step (least squares), ``queue_growth_rps`` (open model) how much faster
    requests were offered than they ended: a queue's growth."""

    index: int
    load: float
    throughput_rps: float
    p50_ms: float
    p99_ms: float
    model: str = "closed"
    phase: str = "sweep"
    start_s: float = 0.0
    end_s: float = 0.0
    offered_rps: float | None = None
    p90_ms: float | None = None
    p95_ms: float | None = None
    p99_9_ms: float | None = None
    mean_ms: float | None = None
    max_ms: float | None = None
    requests: int = 0
    errors: int = 0
    errors_by_class: dict[str, int] = field(default_factory=dict)
    error_rate: float = 0.0
    inflight_mean: float | None = None
    throughput_se: float | None = None
    answered_rps: float | None = None
    refused_rps: float = 0.0
    failed_rps: float = 0.0
    good: int = 0
    latency_rise_ms: float | None = None
    queue_growth_rps: float | None = None
    steady: bool | None = None
    service: dict[str, float] = field(default_factory=dict)
    fired: list[str] = field(default_factory=list)
    why: str = ""

    @property
    def ok(self) -> bool:
        """ok: no stop condition fired."""
        return not self.fired

    @property
    def duration_s(self) -> float:
        """duration_s: how long the step was measured."""
        return self.end_s - self.start_s

    @property
    def latency_ms(self) -> float:
        """latency_ms is the step's representative latency: the mean when measured (what
        Little's law and Kleinrock's power are stated in), else the median."""
        return self.mean_ms if self.mean_ms is not None else self.p50_ms

    def to_dict(self) -> dict[str, Any]:
        """to_dict is the step as the JSON result carries it (``ok`` and ``duration_s``
        included)."""
        d = dataclasses.asdict(self)
        d["ok"] = self.ok
        d["duration_s"] = round(self.duration_s, 3)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StepResult:
        """from_dict reads a step back from JSON; keys it does not know are ignored, so a
        step written by a newer search still reads."""
        names = {f.name for f in dataclasses.fields(cls)}
        kept = {k: v for k, v in d.items() if k in names}
        if isinstance(kept.get("errors_by_class"), dict):
            kept["errors_by_class"] = dict(kept["errors_by_class"])
        return cls(**kept)
