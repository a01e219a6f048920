"""The search's logic against simulated services of known truth (no network, no sleeping): a
fake engine answers each target with what a known service would do, interval by interval,
with seeded noise and an injected clock. Each service's truth is derived in its docstring.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from redline.analysis import answers as ans
from redline.analysis.evidence import queue_rise_floor_ms, rate_se, steady_counts, trend
from redline.analysis.outcome import Meter, error_rate, outcomes
from redline.errors import ConfigError
from redline.search import Limits, Plan, Search, Slo

DT = 0.5


class Service:
    """Service answers one interval of load: ``closed(users)`` or ``open(rate)`` returns
    (good, refused, mean latency ms, in flight)."""

    service_ms = 10.0

    def closed(self, users: float) -> tuple[float, float, float]:
        raise NotImplementedError

    def open(self, rate: float, backlog: float) -> tuple[float, float, float, float]:
        """open returns (answered, refused, mean latency ms, new backlog)."""
        raise NotImplementedError


class Slots(Service):
    """Slots: N servers of S each, first come first served. Closed model, V users: min(V, N)/S
    req/s at latency max(S, V·S/N). Open model, rate R: min(R, N/S) req/s; past capacity the
    backlog grows by R − N/S a second and every request waits backlog/(N/S)."""

    def __init__(self, slots: int, service_ms: float, queue_limit: float | None = None):
        self.slots, self.service_ms, self.queue_limit = slots, service_ms, queue_limit

    @property
    def capacity(self) -> float:
        return self.slots * 1000.0 / self.service_ms

    def closed(self, users: float) -> tuple[float, float, float]:
        x = min(users, self.slots) * 1000.0 / self.service_ms
        return x, 0.0, max(self.service_ms, users * self.service_ms / self.slots)

    def open(self, rate: float, backlog: float) -> tuple[float, float, float, float]:
        c = self.capacity
        arrived = rate * DT
        served = min(backlog + arrived, c * DT)
        left = backlog + arrived - served
        refused = 0.0
        if self.queue_limit is not None and left > self.queue_limit:
            refused, left = left - self.queue_limit, self.queue_limit
        wait = 1000.0 * left / c
        return served + refused, refused, self.service_ms + wait, left


class Bucket(Service):
    """Bucket: a token bucket of R a second in front of a 1 ms service: the accepted rate is
    min(offered, R); the rest are refused at once (503). Closed model, V users: each request
    takes 1 ms, so V users offer 1000·V req/s and R are accepted."""

    service_ms = 1.0

    def __init__(self, rate: float):
        self.rate = rate

    def closed(self, users: float) -> tuple[float, float, float]:
        offered = 1000.0 * users
        return offered, max(offered - self.rate, 0.0), 1.0

    def open(self, rate: float, backlog: float) -> tuple[float, float, float, float]:
        arrived = rate * DT
        return arrived, max(arrived - self.rate * DT, 0.0), 1.0, 0.0


class Crosstalk(Service):
    """Crosstalk: the USL with κ: N requests in service each take S·(1 + κN(N−1)), so a closed
    loop of N users gets X(N) = N / (S(1 + κN(N−1))): for S = 10 ms, κ = 0.01 the peak is
    N* = √(1/κ) = 10 users at 526 req/s, and Kleinrock's power X²/N peaks where
    3κN² − κN − 1 = 0: N ≈ 5.9 users."""

    def __init__(self, kappa: float = 0.01, service_ms: float = 10.0):
        self.kappa, self.service_ms = kappa, service_ms

    def closed(self, users: float) -> tuple[float, float, float]:
        n = users
        lat = self.service_ms * (1 + self.kappa * n * (n - 1))
        return n * 1000.0 / lat, 0.0, lat


class FakeEngine:
    """FakeEngine: a live run over a Service, one snapshot per 0.5 s of simulated time, with
    Poisson-like noise on the counts (seeded) and a latency jitter of ``jitter_ms``."""

    def __init__(self, service: Service, model: str, seed: int = 1, jitter_ms: float = 0.0):
        self.service, self.model = service, model
        self.rng = random.Random(seed)
        self.jitter_ms = jitter_ms
        self.t = 0.0
        self.load = 1.0
        self.backlog = 0.0
        self.done = False
        self.targets: list[float] = []
        self.busy_per_rps = 0.0

    def set_target(self, value: float, ramp_s: float = 0.0) -> float:
        self.load = value
        self.targets.append(value)
        return self.t

    def clock(self) -> float:
        return self.t

    def _noisy(self, mean: float) -> int:
        if mean <= 0:
            return 0
        return max(0, round(self.rng.gauss(mean, math.sqrt(mean) * 0.3)))

    def next_snapshot(self, timeout_s: float) -> dict[str, Any]:
        self.t += DT
        if self.model == "closed":
            x, refused, lat = self.service.closed(self.load)
            answered, refused = x * DT, refused * DT
            offered, inflight = None, self.load
        else:
            answered, refused, lat, self.backlog = self.service.open(self.load, self.backlog)
            offered, inflight = self.load, self.backlog + self.load * lat / 1000.0
        lat += self.rng.uniform(-self.jitter_ms, self.jitter_ms)
        n = self._noisy(answered)
        r = min(n, round(refused * n / answered)) if answered > 0 else 0
        return {
            "t_s": self.t,
            "requests": n,
            "errors": r,
            "errors_by_class": {"status": r},
            "mean_ms": lat,
            "p50_ms": lat,
            "p90_ms": lat * 1.1,
            "p99_ms": lat * 1.3,
            "max_ms": lat * 2,
            "intended_rate": offered,
            "achieved_rate": offered or n / DT,
            "in_flight": inflight,
            "send_lag_ms": 0.0,
        }


def search(service: Service, model: str, limits: Limits | None = None, **plan: Any) -> Any:
    engine = FakeEngine(service, model, seed=plan.pop("seed", 1), jitter_ms=plan.pop("jitter", 0))
    busy = plan.pop("busy", 0.1)
    p = Plan(model=model, start=1.0 if model == "closed" else 50.0, **plan)
    s = Search(
        engine,
        p,
        limits or Limits(),
        sample=lambda t0, t1: {"generator_busy": busy(engine.load) if callable(busy) else busy},
        clock=engine.clock,
        interval_s=DT,
    )
    return s.run(), s, engine


def capacity_of(out: Any, model: str) -> float:
    cap, _ = ans.capacity(out.steps, model)
    assert cap is not None
    return cap


@pytest.mark.parametrize(
    ("label", "slots", "service_ms"),
    [
        ("8 slots of 10 ms (800 req/s)", 8, 10.0),
        ("50 slots of 40 ms (1,250 req/s)", 50, 40.0),
        ("4 slots of 2 ms (2,000 req/s)", 4, 2.0),
    ],
)
@pytest.mark.parametrize("model", ["closed", "open"])
def test_the_capacity_of_a_queue_is_found_within_3_percent(label, slots, service_ms, model):
    q = Slots(slots, service_ms)
    out, s, _ = search(q, model)
    cap = capacity_of(out, model)
    assert abs(cap - q.capacity) <= 0.03 * q.capacity, (label, cap)
    # The knee is not the limit: the search pushed past it to where throughput stopped.
    assert out.reason in ("plateau", "backlog"), (label, out.reason, out.detail)
    if model == "closed":
        # Every user past N only queues: the optimum is N users (Kleinrock's power).
        assert out.optimal is not None
        assert abs(out.optimal.load - slots) <= 0.15 * slots, (label, out.optimal.load)
    else:
        # The steady state is held under capacity, not at it.
        assert s.steady_load() <= q.capacity


def test_a_rate_limit_is_found_and_named_in_the_open_model():
    out, s, _ = search(Bucket(500.0), "open", Limits(slos=[Slo.parse("p99<500ms")]))
    assert out.reason == "errors"
    assert abs(capacity_of(out, "open") - 500.0) <= 15.0
    a = ans.build_answers(
        out.steps, model="open", limit=out.broke, reason=out.reason, statuses={"200": 10, "503": 5}
    )
    assert a["limit"]["kind"] == "rate-limit"
    assert "rate-limited" in a["text"]["limit"] and "HTTP 503" in a["text"]["limit"]
    assert "broke" not in a["text"]["limit"]


def test_a_rate_limit_in_the_closed_model_gives_the_accepted_rate_and_the_true_error_rate():
    out, _, _ = search(Bucket(500.0), "closed")
    assert out.reason == "errors"
    limit = out.broke
    # 1 user at 1 ms offers 1,000 req/s: 500 accepted, 500 refused: 50 % of requests failed.
    assert limit.error_rate == pytest.approx(limit.errors / limit.requests)
    assert 0.45 <= limit.error_rate <= 0.55
    assert limit.throughput_rps == pytest.approx(500.0, rel=0.05)
    a = ans.build_answers(out.steps, model="closed", limit=limit, reason=out.reason)
    assert a["limit"]["kind"] == "rate-limit"
    assert "--model open" in a["text"]["limit"]


def test_contention_peak_optimum_and_fall_are_found():
    svc = Crosstalk()
    out, _, _ = search(svc, "closed")
    assert out.reason == "retrograde", (out.reason, out.detail)
    peak = max(
        (x for x in out.steps if not set(x.fired) - {"retrograde", "plateau"}),
        key=lambda x: x.throughput_rps,
    )
    assert abs(peak.load - 10) <= 1.5, peak.load
    assert abs(peak.throughput_rps - 526.3) <= 0.05 * 526.3
    assert out.optimal is not None and abs(out.optimal.load - 6) <= 0.9, out.optimal.load


def test_sub_millisecond_jitter_is_never_a_queue():
    # A 0.1 ms service with 0.03 ms of jitter and more capacity than the generator has: the
    # search must climb until redline's own CPU is the limit.
    fast = Slots(16, 0.1)
    out, _, _ = search(fast, "open", jitter=0.03, busy=lambda rate: rate / 60_000)
    assert out.reason == "generator", (out.reason, out.detail)
    assert all("backlog" not in x.fired for x in out.steps)
    assert max(x.load for x in out.steps) >= 50_000


def test_every_answer_a_503_is_a_100_percent_error_rate():
    assert error_rate(40, 40, {"status": 40}) == 1.0
    o = outcomes(40_062, 38_511, {"status": 38_511})
    assert o.good == 1_551 and o.error_rate == pytest.approx(38_511 / 40_062)
    timeouts = {"requests": 10, "errors": 3, "errors_by_class": {"timeout": 3}}
    assert Meter().count(timeouts).total == 13


def test_errors_stop_the_search_and_are_named():
    out, _, _ = search(Slots(50, 10.0, queue_limit=20), "open")
    assert out.reason in ("errors", "backlog")
    assert abs(capacity_of(out, "open") - 5000) <= 0.05 * 5000


def test_an_slo_stops_the_search():
    # Closed: latency is 10 ms up to 8 users, then grows 1.25 ms a user: p99 = 1.3·p50 < 20 ms
    # holds up to 12 users.
    out, _, _ = search(Slots(8, 10.0), "closed", Limits(slos=[Slo.parse("p99<20ms")]))
    assert out.reason == "slo"
    assert max(s.load for s in out.good) <= 12


def test_a_busy_generator_is_named_as_the_limit():
    out, _, _ = search(Slots(8, 10.0), "closed", busy=0.97)
    assert out.reason == "generator"
    assert "redline" in out.detail


def test_max_time_bounds_the_search():
    out, _, engine = search(Slots(10_000, 1.0), "closed", max_time_s=20.0)
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


def test_a_trend_is_significant_only_beyond_its_noise():
    rng = random.Random(3)
    t = [i * 0.5 for i in range(10)]
    noise = [0.15 + rng.uniform(-0.03, 0.03) for _ in t]
    climb = [10.0 + 3.0 * x for x in t]
    assert not trend(t, noise).significant() or abs(trend(t, noise).rise) < 0.1
    assert trend(t, climb).significant() and trend(t, climb).rise == pytest.approx(13.5)
    # A rise of 0.03 ms on a 0.15 ms service is never material; 20 ms on a 40 ms one is.
    assert queue_rise_floor_ms(0.15, None) == 1.0
    assert queue_rise_floor_ms(40.0, None) == 20.0
    assert queue_rise_floor_ms(40.0, 100.0) == 10.0


def test_steadiness_allows_for_poisson_noise_of_small_counts():
    rng = random.Random(5)
    small = [rng.choice([2, 3, 4, 5, 6]) for _ in range(10)]  # 4 ± 2: Poisson, steady
    assert steady_counts(small)
    assert not steady_counts([100, 120, 140, 160, 180, 200, 220, 240])
    assert rate_se([100] * 10, 5.0) < rate_se([50, 150] * 5, 5.0)


def test_stop_at_knee_stops_past_the_optimum_without_pushing_to_the_limit():
    q = Slots(8, 10.0)
    out, _, engine = search(q, "closed", stop_at_knee=True)
    assert out.reason == "knee", (out.reason, out.detail)
    # It stopped at the first step past the optimum, never at twice the capacity's users.
    assert max(engine.targets) <= 2 * 8
    assert out.optimal is not None and abs(out.optimal.load - 8) <= 1.2
