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
from redline.analysis.outcome import Meter, error_rate, outcomes
from redline.find.rules import Limits, Slo
from redline.find.search import Plan, Search

DT = 0.5

#: REFUSE_MS: how long a refusal (503 at once) takes in the simulated services.
REFUSE_MS = 0.2


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
    """Bucket: a token bucket of R a second in front of a service of S (default 1 ms) that is
    never busy: the accepted rate is min(offered, R); the accepted answers take S, the
    refusals (open model) ``REFUSE_MS``. Closed model (every answer S), V users offer
    1000·V/S req/s and R are accepted: refusals start at V > R·S/1000 users, with the
    accepted answers as fast as at one user."""

    def __init__(self, rate: float, service_ms: float = 1.0):
        self.rate, self.service_ms = rate, service_ms

    def closed(self, users: float) -> tuple[float, float, float]:
        offered = 1000.0 * users / self.service_ms
        return offered, max(offered - self.rate, 0.0), self.service_ms

    def open(self, rate: float, backlog: float) -> tuple[float, float, float, float]:
        arrived = rate * DT
        refused = max(arrived - self.rate * DT, 0.0)
        mean = ((arrived - refused) * self.service_ms + refused * REFUSE_MS) / arrived
        return arrived, refused, mean, 0.0


class Shedding(Slots):
    """Shedding: N slots of S with at most Q waiting; an arrival finding Q waiting gets 503
    at once (``REFUSE_MS``). Open model: :class:`Slots` with the queue bounded (accepted
    N/S, accepted latency up to S + Q·S/N). Closed model, V users: up to N + Q users
    nothing is refused and latency is V·S/N past N; beyond, N + Q users hold the slots and
    the queue (accepted N/S at (N + Q)·S/N each) and the other V − N − Q cycle on refusals,
    1000/REFUSE_MS a second each."""

    def __init__(self, slots: int, service_ms: float, queue_limit: int):
        super().__init__(slots, service_ms, queue_limit)

    def closed(self, users: float) -> tuple[float, float, float]:
        q = float(self.queue_limit or 0)
        if users <= self.slots + q:
            return super().closed(users)
        accepted = self.capacity
        refused = (users - self.slots - q) * 1000.0 / REFUSE_MS
        lat_ok = (self.slots + q) * self.service_ms / self.slots
        mean = (accepted * lat_ok + refused * REFUSE_MS) / (accepted + refused)
        return accepted + refused, refused, mean


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
    wait = plan.pop("wait", 0.02)
    machine = plan.pop("machine", None)
    parts = plan.pop("parts", None)

    def sample(t0: float, t1: float) -> dict[str, Any]:
        figures: dict[str, Any] = {
            "generator_busy": busy(engine.load) if callable(busy) else busy,
            "generator_wait": wait(engine.load) if callable(wait) else wait,
        }
        if machine is not None:
            figures["machine_busy"], figures["generator_share"] = machine(engine.load)
        if parts is not None:
            figures["parts"] = parts
        return figures

    p = Plan(model=model, start=1.0 if model == "closed" else 50.0, **plan)
    s = Search(
        engine,
        p,
        limits or Limits(),
        sample=sample,
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


@pytest.mark.parametrize(
    ("label", "service", "model", "kind"),
    [
        ("bucket 500 before 1 ms, open", Bucket(500.0), "open", "rate-limit"),
        ("bucket 500 before 1 ms, closed", Bucket(500.0), "closed", "rate-limit"),
        # Refusals only past 5 users, like a shedding server's: the accepted answers stay at
        # 10 ms, so it is still a rate limit.
        ("bucket 500 before 10 ms, closed", Bucket(500.0, 10.0), "closed", "rate-limit"),
        ("bucket 500 before 10 ms, open", Bucket(500.0, 10.0), "open", "rate-limit"),
        # Accepted latency at most 2x the service's (Q = N): the old "p50 under 2x" rule
        # called this a rate limit.
        ("8 x 10 ms, Q 8, open", Shedding(8, 10.0, 8), "open", "shedding"),
        ("8 x 10 ms, Q 8, closed", Shedding(8, 10.0, 8), "closed", "shedding"),
        ("50 x 10 ms, Q 20, open", Shedding(50, 10.0, 20), "open", "shedding"),
        # (50 x 10 ms, Q 20, closed: the plateau past 50 users stops it before any refusal.)
    ],
)
def test_a_rate_limit_and_load_shedding_are_told_apart(label, service, model, kind):
    out, _, _ = search(service, model, Limits(slos=[Slo.parse("p99<500ms")]))
    assert out.reason == "errors", (label, out.reason, out.detail)
    a = ans.build_answers(out.steps, model=model, limit=out.broke, reason=out.reason)
    assert a["limit"]["kind"] == kind, (label, a["limit"], [(x.load, x.p50_ms) for x in out.steps])
    truth = service.rate if isinstance(service, Bucket) else service.capacity
    assert abs(a["limit"]["capacity_rps"] - truth) <= 0.05 * truth, (label, a["limit"])


class Waves(Slots):
    """Waves: :class:`Slots` whose completions come in waves, each interval's a uniform draw
    between half and one and a half times its mean (seeded): a task queue whose users poll
    once a second sees completions so. The mean is Slots' truth: min(V, N)/S."""

    def __init__(self, slots: int, service_ms: float, seed: int = 7):
        super().__init__(slots, service_ms)
        self.rng = random.Random(seed)

    def closed(self, users: float) -> tuple[float, float, float]:
        x, refused, lat = super().closed(users)
        return x * self.rng.uniform(0.5, 1.5), refused, lat


@pytest.mark.parametrize("seed", [7, 9])
def test_a_plateau_of_noisy_steps_is_called_from_their_run(seed):
    # Each step's goodput is uncertain by a tenth or so, so against any one lighter step no
    # gain is confidently small; the steps past the capacity agree as a run over twice the
    # load, and that is the plateau, called before the demo's 150 s run out. (Both seeds ran
    # out of time when a plateau needed two steps each confidently flat against the best
    # lighter one; so do a few other seeds still, e.g. 10, whose steps past the capacity
    # read too far apart to agree.)
    w = Waves(50, 10.0, seed)
    out, _, _ = search(w, "closed", seed=seed, max_time_s=150.0)
    assert out.reason == "plateau", (out.reason, out.detail)
    assert "agree on" in out.detail, out.detail
    cap = capacity_of(out, "closed")
    assert abs(cap - w.capacity) <= 0.1 * w.capacity, cap
    limit = next(x for x in out.steps if "plateau" in x.fired)
    assert limit.load >= 2 * w.slots, limit.load


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


def test_a_tally_meter_counts_the_answers_that_said_its_value():
    """status:SUCCEEDED counts a task when a user's poll saw it done: of 150 status answers,
    45 said SUCCEEDED (good), 5 said FAILED and failed their check (failed), the QUEUED and
    RUNNING ones are neither; a name's timeout is failed too."""
    snap = {
        "requests": 200,
        "names": {
            "status": {
                "requests": 150,
                "errors": 7,
                "errors_by_class": {"check": 5, "timeout": 2},
                "tally": {"QUEUED": 70, "RUNNING": 30, "SUCCEEDED": 45, "FAILED": 5},
            },
        },
    }
    m = Meter.parse("status:SUCCEEDED=tasks")
    assert (m.what, m.value, m.label, m.unit, m.spec) == (
        "status",
        "SUCCEEDED",
        "tasks",
        "tasks/s",
        "status:SUCCEEDED",
    )
    o = m.count(snap)
    assert (o.good, o.failed, o.failed_checks, o.refused) == (45, 7, 5, 0)
    assert o.error_rate == pytest.approx(7 / 52)
    # A name not seen yet in an interval, or a value not said in it, counts nothing.
    assert Meter.parse("status:LOST").count(snap).good == 0
    assert Meter.parse("result:SUCCEEDED").count(snap).total == 0
    for bad in ("status:", ":SUCCEEDED", "requests:x", "iterations:x", "status=a b"):
        with pytest.raises(ValueError):
            Meter.parse(bad)


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


@pytest.mark.parametrize(
    ("label", "service", "wait", "named"),
    [
        # The immediate answer on 2 shared cores: past 20,000 req/s the workers wait for a
        # CPU half the time and the queue that forms is the machine's.
        ("starved past 20k", Slots(4, 0.1), lambda r: 0.5 if r > 20_000 else 0.1, True),
        # Starved at every load, but the service's own queue fails first: the failing step is
        # still named the generator's (its figures are the machine's), never the good ones.
        ("starved throughout", Slots(8, 10.0), 0.4, True),
        # A generator that waits a little (under STARVED) leaves the limit to the service.
        ("slightly busy", Slots(8, 10.0), 0.2, False),
        # Refusals are the service's answer, starved generator or not.
        ("a rate limit under starvation", Bucket(500.0), 0.5, False),
    ],
)
def test_a_generator_starved_of_cpu_on_a_failing_step_is_named(label, service, wait, named):
    out, _, _ = search(service, "open", wait=wait)
    assert (out.reason == "generator") == named, (label, out.reason, out.detail)
    # A starved generator explains a failing step; it never fails a good one.
    assert all(x.fired != ["generator"] for x in out.steps), label
    if named:
        assert "waited for a CPU" in out.detail and "machine" in out.detail, out.detail
    else:
        truth = service.rate if isinstance(service, Bucket) else service.capacity
        assert abs(capacity_of(out, "open") - truth) <= 0.03 * truth


def _shared_past(load: float, busy: float = 0.97, share: float = 0.45):
    """_shared_past: the machine's (busy, redline's share) of the immediate answer on 2
    shared cores (bench/results/find.md): saturated, redline on 33-50 % of it, past ``load``
    (req/s or users), and idle-ish under it."""
    return lambda x: (busy, share) if x > load else (0.5, 0.1)


@pytest.mark.parametrize(
    ("label", "service", "model", "machine", "named"),
    [
        # The immediate answer on 2 shared cores: past 20,000 req/s (8 users) the machine
        # is saturated and redline runs on 45 % of it, its workers waiting only 10 %.
        ("immediate, open", Slots(4, 0.1), "open", _shared_past(20_000), True),
        ("immediate, closed", Slots(4, 0.1), "closed", _shared_past(8), True),
        # A saturated machine where redline runs on a tenth of it (make demo: 8-12 %): the
        # service's own queue is the limit.
        ("light generator", Slots(8, 10.0), "open", _shared_past(0, share=0.1), False),
        # redline on half of a machine not saturated: the service has CPU to spare.
        ("spare CPU", Slots(8, 10.0), "open", _shared_past(0, busy=0.7, share=0.5), False),
        # Refusals are the service's answer, whoever took the CPU.
        ("a rate limit", Bucket(500.0), "open", _shared_past(0), False),
    ],
)
def test_a_generator_sharing_a_saturated_machine_is_named(label, service, model, machine, named):
    out, _, _ = search(service, model, wait=0.1, machine=machine)
    assert (out.reason == "generator") == named, (label, out.reason, out.detail)
    assert all(x.fired != ["generator"] for x in out.steps), label
    if named:
        assert "machine's CPUs were 97% busy" in out.detail, out.detail
        assert "ran on 45% of them" in out.detail, out.detail
    else:
        truth = service.rate if isinstance(service, Bucket) else service.capacity
        assert abs(capacity_of(out, model) - truth) <= 0.03 * truth, (label, out.reason)


class Aftermath(Slots):
    """Aftermath: 8 slots of 10 ms (800 req/s from 8 users); at 20 users or more answers
    take ten times as long (an overload the search must recover from), and from then on
    every answer under 20 users takes ``slower`` times as long, with ``kept`` of the goodput
    it had (closed model). kept = 1 with slower = 2 is a service that
    recovered, only slower (its users still get everything); kept = 0.3 one that stays
    collapsed (a metastable failure)."""

    def __init__(self, slower: float, kept: float):
        super().__init__(8, 10.0)
        self.slower, self.kept, self.hit = slower, kept, False

    def closed(self, users: float) -> tuple[float, float, float]:
        x, refused, lat = super().closed(users)
        self.hit = self.hit or users >= 20
        if users >= 20:
            return x, refused, 10 * lat
        if self.hit:
            return x * self.kept, refused, lat * self.slower
        return x, refused, lat


@pytest.mark.parametrize(
    ("label", "slower", "kept", "collapsed"),
    [
        ("goodput back, latency 2x", 2.0, 1.0, False),
        ("goodput stays at 30 %", 3.0, 0.3, True),
    ],
)
def test_a_recovery_is_judged_by_its_goodput_in_the_closed_model(label, slower, kept, collapsed):
    out, s, _ = search(Aftermath(slower, kept), "closed", recover_s=10.0)
    recovers = [x for x in out.steps if x.phase == "recover"]
    assert recovers, (label, [(x.load, x.phase, x.fired) for x in out.steps])
    assert (out.reason == "no-recovery") is collapsed, (label, out.reason, out.detail)
    assert (s.collapse is not None) is collapsed, label


@pytest.mark.parametrize(
    ("label", "busy", "reason"),
    [
        ("the service's own collapse", 0.1, "no-recovery"),
        # redline out of CPU in the overload: what followed cannot be laid on the service.
        (
            "an overload that was the generator's",
            lambda users: 0.97 if users >= 20 else 0.1,
            "generator",
        ),
    ],
)
def test_a_recovery_after_a_starved_overload_names_the_generator_not_a_collapse(
    label, busy, reason
):
    out, s, _ = search(Aftermath(3.0, 0.3), "closed", recover_s=10.0, busy=busy)
    assert out.reason == reason, (label, out.reason, out.detail)
    assert (s.collapse is not None) is (reason == "no-recovery"), label
    if reason == "generator":
        assert "generator" in out.broke.fired and "redline" in out.detail, out.detail
        assert out.broke.load >= 20, "the generator is named at the overload, not the check"


class SlowRefusals(Bucket):
    """SlowRefusals: a token bucket of R whose refusals come after a 400 ms hold (a gateway
    that waits for a token before it gives up): past R the step's p99 breaks a 500 ms SLO
    beside the 503s."""

    def open(self, rate: float, backlog: float) -> tuple[float, float, float, float]:
        arrived, refused, _, _ = super().open(rate, backlog)
        return arrived, refused, 400.0 if refused else self.service_ms, 0.0


@pytest.mark.parametrize(
    ("label", "service_cpu", "named"),
    [
        # make demo on a box at load 11-20: redline ran on 1 % of the machine, the service on
        # 10 %, other engineers' builds on the rest, and redline's workers waited for a CPU
        # half the time: the service's own queue is the limit, the wait is said beside it.
        ("another tenant", 20.0, False),
        # The same wait where the deployment itself took the machine (the service on 1.8 of
        # 2 cores): the load starved redline, and it is named.
        ("the deployment", 180.0, True),
    ],
)
def test_a_generator_starved_by_another_tenant_is_said_not_named(label, service_cpu, named):
    machine = _shared_past(0, busy=1.0, share=0.01)
    parts = {"svc": {"cpu_percent": service_cpu, "cores_allowed": 2.0}}
    out, _, _ = search(Slots(8, 10.0), "open", wait=0.5, machine=machine, parts=parts)
    assert (out.reason == "generator") == named, (label, out.reason, out.detail)
    if not named:
        assert abs(capacity_of(out, "open") - Slots(8, 10.0).capacity) <= 0.03 * 800
        assert "waited for a CPU 50% of the time, for other work on this machine" in out.detail
        assert "generator" not in out.broke.fired, out.broke.fired


def test_refusals_are_the_services_limit_even_with_a_starved_generator():
    slo = Limits(slos=[Slo.parse("p99<500ms")])
    out, _, _ = search(SlowRefusals(500.0), "open", slo, wait=0.5)
    assert out.reason == "errors", (out.reason, out.detail)
    assert "slo" in out.broke.fired and "generator" not in out.broke.fired, out.broke.fired


def test_max_time_bounds_the_search():
    out, _, engine = search(Slots(10_000, 1.0), "closed", max_time_s=20.0)
    assert out.reason == "max-time"
    assert engine.t <= 20.0 + 15.0


def test_stop_at_knee_stops_past_the_optimum_without_pushing_to_the_limit():
    q = Slots(8, 10.0)
    out, _, engine = search(q, "closed", stop_at_knee=True)
    assert out.reason == "knee", (out.reason, out.detail)
    # It stopped at the first step past the optimum, never at twice the capacity's users.
    assert max(engine.targets) <= 2 * 8
    assert out.optimal is not None and abs(out.optimal.load - 8) <= 1.2
