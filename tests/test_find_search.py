"""The search's logic against a simulated service (no network, no sleeping): a fake engine
answers each target with the throughput and latency of a known queue, with an injected clock.
"""

from __future__ import annotations

from typing import Any

import pytest
from redline.errors import ConfigError
from redline.search import Limits, Plan, Search, Slo, rising


class Queue:
    """Queue is a service of `slots` servers taking `service_ms` each: the closed model with
    V users gets min(V, slots)/S req/s at latency max(S, V*S/slots); the open model at rate R
    gets min(R, capacity) and, past capacity, a latency that grows every interval."""

    def __init__(self, slots: int, service_ms: float, error_from: float | None = None):
        self.slots = slots
        self.service_ms = service_ms
        self.error_from = error_from

    @property
    def capacity(self) -> float:
        return self.slots * 1000.0 / self.service_ms


class FakeEngine:
    """FakeEngine: a live run over a Queue, one snapshot per 0.5 s of simulated time."""

    def __init__(self, queue: Queue, model: str, busy: float = 0.1):
        self.queue, self.model, self.busy = queue, model, busy
        self.t = 0.0
        self.load = 0.0
        self.since = 0.0
        self.done = False
        self.targets: list[float] = []

    def set_target(self, value: float, ramp_s: float = 0.0) -> float:
        self.load, self.since = value, self.t
        self.targets.append(value)
        return self.t

    def clock(self) -> float:
        return self.t

    def next_snapshot(self, timeout_s: float) -> dict[str, Any]:
        self.t += 0.5
        q = self.queue
        if self.model == "closed":
            rps = min(self.load, q.slots) * 1000.0 / q.service_ms
            p50 = max(q.service_ms, self.load * q.service_ms / q.slots)
            offered = None
        else:
            rps = min(self.load, q.capacity)
            over = max(self.load - q.capacity, 0.0)
            p50 = q.service_ms + over * (self.t - self.since) * 10
            offered = self.load
        errors = 0
        if q.error_from is not None and self.load >= q.error_from:
            errors = int(rps * 0.5 * 0.2)
        return {
            "t_s": self.t,
            "requests": int(rps * 0.5),
            "errors": errors,
            "p50_ms": p50,
            "p90_ms": p50 * 1.1,
            "p99_ms": p50 * 1.3,
            "max_ms": p50 * 2,
            "intended_rate": offered,
            "achieved_rate": rps,
        }


def search(queue: Queue, model: str, limits: Limits | None = None, **plan: Any) -> Any:
    engine = FakeEngine(queue, model)
    p = Plan(model=model, start=1.0 if model == "closed" else 50.0, **plan)
    s = Search(
        engine,
        p,
        limits or Limits(),
        sample=lambda t0, t1: {"generator_busy": engine.busy},
        clock=engine.clock,
        interval_s=0.5,
    )
    return s.run(), engine


@pytest.mark.parametrize(
    ("label", "slots", "service_ms", "model"),
    [
        ("8 slots of 10 ms, closed", 8, 10.0, "closed"),
        ("30 slots of 20 ms, closed", 30, 20.0, "closed"),
        ("8 slots of 10 ms, open", 8, 10.0, "open"),
        ("4 slots of 2 ms, open", 4, 2.0, "open"),
    ],
)
def test_search_finds_the_capacity_of_a_queue(label, slots, service_ms, model):
    q = Queue(slots, service_ms)
    out, engine = search(q, model)
    assert out.best is not None, label
    assert abs(out.best.throughput_rps - q.capacity) <= 0.1 * q.capacity, (label, out.best)
    assert out.broke is not None and out.reason in ("knee", "backlog", "unsteady"), label
    if model == "closed":
        assert abs(out.best.load - slots) <= 0.25 * slots, (label, out.best.load)
    # The refinement ended within 5 % (or one VU) of the first bad load.
    gap = out.broke.load - max(s.load for s in out.good)
    assert gap <= max(0.05 * out.broke.load, 1.0) or out.broke.load <= 2, (label, gap)


def test_errors_stop_the_search_and_are_named():
    out, _ = search(Queue(50, 10.0, error_from=8), "closed")
    assert out.reason == "errors"
    assert "failed" in out.detail
    assert all(s.load < 8 for s in out.good)


def test_an_slo_stops_the_search_before_the_knee():
    # Latency is 10 ms up to 8 users, then grows 1.25 ms per user: p99 = 1.3 * p50 < 20 ms
    # holds up to 12 users.
    out, _ = search(Queue(8, 10.0), "closed", Limits(slos=[Slo.parse("p99<20ms")], knee_gain=None))
    assert out.reason == "slo"
    assert max(s.load for s in out.good) <= 12


def test_a_busy_generator_is_named_as_the_limit():
    engine = FakeEngine(Queue(8, 10.0), "closed", busy=0.97)
    s = Search(
        engine,
        Plan(model="closed"),
        Limits(),
        sample=lambda t0, t1: {"generator_busy": engine.busy},
        clock=engine.clock,
        interval_s=0.5,
    )
    out = s.run()
    assert out.reason == "generator"
    assert "redline" in out.detail


def test_max_time_bounds_the_search():
    out, engine = search(Queue(10_000, 1.0), "closed", max_time_s=20.0)
    assert out.reason == "max-time"
    assert engine.t <= 20.0 + 15.0


@pytest.mark.parametrize(
    ("text", "percentile", "bound"),
    [
        ("p99<100ms", "p99", 100.0),
        ("p50 < 2s", "p50", 2000.0),
        ("max<500us", "max", 0.5),
        ("p95<20ms", "p95", 20.0),
    ],
)
def test_slo_parses(text, percentile, bound):
    slo = Slo.parse(text)
    assert (slo.percentile, slo.bound_ms) == (percentile, bound)


@pytest.mark.parametrize("bad", ["p99>100ms", "p98<100ms", "p99<fast", ""])
def test_bad_slo_is_one_clear_error(bad):
    with pytest.raises(ConfigError, match="--slo"):
        Slo.parse(bad)


def test_rising_latency_is_a_growing_queue():
    flat = [{"requests": 100, "p50_ms": 10.0}] * 8
    climbing = [{"requests": 100, "p50_ms": 10.0 * 1.3**i} for i in range(9)]
    assert rising(climbing) and not rising(flat)
