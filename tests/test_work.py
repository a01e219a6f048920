"""The work behind the answer (redline.service.work and the work meter): the service's own
counter of completed work as the search's throughput, its backlog gauge as a steadiness test.
Pure logic with injected scrapes, a search over a simulated task queue of known truth, and a
real Prometheus endpoint on 127.0.0.1 port 0."""

from __future__ import annotations

import math
import random
import time
from typing import Any

import pytest
from conftest import Exposition
from redline.analysis import answers as ans
from redline.analysis.outcome import Meter
from redline.errors import ConfigError
from redline.find.rules import Limits
from redline.find.search import Plan, Search
from redline.find.throughput import search_meter
from redline.service.work import Scraped, Series, WorkProbe, parse

URL = "http://127.0.0.1:9/metrics"
DONE = 'taskqueue_tasks_finished_total{status="SUCCEEDED"}'


@pytest.mark.parametrize(
    ("text", "name", "labels"),
    [
        (f"prometheus:{URL}#{DONE}", "taskqueue_tasks_finished_total", {"status": "SUCCEEDED"}),
        (f"prometheus:{URL}#jobs_total", "jobs_total", {}),
        (f'prometheus:{URL}#q{{a="1",b="x y"}}', "q", {"a": "1", "b": "x y"}),
    ],
)
def test_a_series_is_a_url_and_a_selector(text, name, labels):
    s = Series.parse(text, "--throughput")
    assert (s.url, s.name, s.labels) == (URL, name, labels)
    assert s.spec == text


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("http://127.0.0.1:9/metrics#x", "expected prometheus:URL#SERIES"),
        ("prometheus:127.0.0.1:9/metrics#x", "http(s)"),
        (f"prometheus:{URL}", "name the series after '#'"),
        (f"prometheus:{URL}#", "name the series after '#'"),
        (f"prometheus:{URL}#x{{a=1}}", "expected name or name{"),
    ],
)
def test_a_bad_series_is_one_clear_line(text, says):
    with pytest.raises(ConfigError) as e:
        Series.parse(text, "--backlog")
    assert says in str(e.value) and "--backlog" in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("text", "source", "unit"),
    [
        (f"prometheus:{URL}#{DONE}=tasks", f"prometheus:{URL}#{DONE}", "tasks/s"),
        (f"prometheus:{URL}#{DONE}", f"prometheus:{URL}#{DONE}", "work/s"),
        (f"prometheus:{URL}#jobs_total=jobs", f"prometheus:{URL}#jobs_total", "jobs/s"),
    ],
)
def test_the_work_meter_reads_its_source_and_label(text, source, unit):
    m = Meter.parse(text)
    assert (m.what, m.spec, m.unit) == ("work", source, unit)
    assert search_meter(text, None) == m
    # The service's counter counts completions; the failures are the requests'.
    snap = {"requests": 10, "errors": 2, "errors_by_class": {"status": 2}, "work": {"completed": 7}}
    assert m.count(snap).good == 7 and m.count(snap).failed == 0
    assert m.errors.count(snap).failed == 2 and m.errors.count(snap).good == 8


class Endpoint:
    """Endpoint: an injected scrape: each call returns the next readings (or raises)."""

    def __init__(self, readings: list[Any]):
        self.readings = list(readings)
        self.calls = 0

    def __call__(self, url: str, timeout_s: float) -> Scraped:
        self.calls += 1
        got = self.readings.pop(0)
        if isinstance(got, Exception):
            raise got
        done, queued = got
        out = [("taskqueue_tasks_finished_total", {"status": "SUCCEEDED", "type": "a"}, done)]
        out.append(("taskqueue_tasks_finished_total", {"status": "FAILED", "type": "a"}, 99.0))
        out.append(("taskqueue_tasks_finished_total", {"status": "SUCCEEDED", "type": "b"}, 1.0))
        out.append(("taskqueue_tasks", {"status": "QUEUED"}, queued))
        return Scraped(out, frozenset(n for n, _, _ in out))


def probe(readings: list[Any]) -> tuple[WorkProbe, Endpoint]:
    fetch = Endpoint(readings)
    done = Series.parse(f"prometheus:{URL}#{DONE}", "--throughput")
    queued = Series.parse(f'prometheus:{URL}#taskqueue_tasks{{status="QUEUED"}}', "--backlog")
    p = WorkProbe(done, queued, fetch=fetch)
    p.prime()
    return p, fetch


def test_the_probe_gives_each_interval_the_counters_growth_and_the_backlog_now():
    p, fetch = probe([(100.0, 0.0), (130.0, 4.0), (175.0, 9.0), (175.0, 2.0)])
    # One scrape per read for both series (same endpoint); type b's constant 1 adds nothing.
    assert [p.read() for _ in range(3)] == [
        {"completed": 30, "backlog": 4.0},
        {"completed": 45, "backlog": 9.0},
        {"completed": 0, "backlog": 2.0},
    ]
    assert fetch.calls == 4


def test_a_failed_scrape_leaves_its_interval_empty_and_the_next_carries_both():
    p, _ = probe([(0.0, 0.0), (10.0, 0.0), OSError("refused"), (50.0, 1.0), (20.0, 0.0)])
    assert p.read() == {"completed": 10, "backlog": 0.0}
    assert p.read() == {"completed": None, "backlog": None}
    assert p.failures == 1 and "refused" in p.last_error
    # The growth of both intervals in the next: a step's sum stays exact.
    assert p.read() == {"completed": 40, "spans": 2, "backlog": 1.0}
    # A counter that went down was reset (the service restarted): its value (20 + type b's
    # 1) is its growth.
    assert p.read() == {"completed": 21, "backlog": 0.0}


def test_a_declared_counter_with_no_sample_yet_reads_zero():
    """A labelled counter has no sample until its first count (taskqueue's finished tasks
    before any finished): declared, it reads 0; a name the endpoint never declared is None."""
    text = (
        "# HELP jobs_finished Jobs done.\n# TYPE jobs_finished counter\n"
        "# HELP depth Jobs waiting.\n# TYPE depth gauge\ndepth 3\n"
    )
    scraped = parse(text)
    done = Series.parse(f'prometheus:{URL}#jobs_finished_total{{status="ok"}}', "--throughput")
    assert done.value(scraped) == 0.0
    assert Series.parse(f"prometheus:{URL}#depth", "--backlog").value(scraped) == 3.0
    assert Series.parse(f"prometheus:{URL}#jobs_total", "--throughput").value(scraped) is None


def test_a_series_the_endpoint_lacks_is_said_before_any_load():
    fetch = Endpoint([(1.0, 0.0)])
    missing = Series.parse(f"prometheus:{URL}#tasks_done_total", "--throughput")
    with pytest.raises(ConfigError, match="no such series"):
        WorkProbe(missing, fetch=fetch).prime()
    down = WorkProbe(missing, fetch=Endpoint([OSError("connection refused")]))
    with pytest.raises(ConfigError, match="cannot read http://127.0.0.1:9/metrics"):
        down.prime()


DT = 0.5


class TaskQueueSim:
    """TaskQueueSim: a closed-model task queue of known truth. Each user submits one task a
    second and polls it (three requests a second, answered in 5 ms however full the queue);
    the workers complete at most ``capacity`` tasks a second, first come first served. So
    the HTTP side grows with the users without bound while the work completed stops at the
    capacity, and past it the queue grows by (users − capacity) a second."""

    def __init__(self, capacity: float, seed: int = 3, exported: bool = True):
        self.capacity = capacity
        self.exported = exported
        self.rng = random.Random(seed)
        self.t = 0.0
        self.users = 1.0
        self.queued = 0.0
        self.done = False

    def set_target(self, value: float, ramp_s: float = 0.0) -> float:
        self.users = value
        return self.t

    def clock(self) -> float:
        return self.t

    def _noisy(self, mean: float) -> int:
        return max(0, round(self.rng.gauss(mean, math.sqrt(max(mean, 1.0)) * 0.3)))

    def next_snapshot(self, timeout_s: float) -> dict[str, Any]:
        self.t += DT
        self.queued += self.users * DT
        completed = min(self.queued, self.capacity * DT)
        self.queued -= completed
        n = self._noisy(3 * self.users * DT)
        work = {"completed": self._noisy(completed), "backlog": self.queued}
        return {
            "t_s": self.t,
            "requests": n,
            "errors": 0,
            "errors_by_class": {},
            "mean_ms": 5.0,
            "p50_ms": 5.0,
            "p90_ms": 5.5,
            "p99_ms": 6.5,
            "max_ms": 10.0,
            "in_flight": self.users * 0.015,
            "send_lag_ms": 0.0,
            **({"work": work} if self.exported else {}),
        }


def search_sim(meter: Meter, capacity: float = 200.0) -> Any:
    sim = TaskQueueSim(capacity, exported=meter.what == "work")
    s = Search(
        sim,
        Plan(model="closed", start=8.0, ceiling=2000.0, max_time_s=300.0),
        Limits(),
        sample=lambda t0, t1: {"generator_busy": 0.1, "generator_wait": 0.02},
        clock=sim.clock,
        interval_s=DT,
        meter=meter,
    )
    return s.run(), s


def test_the_search_answers_in_the_work_the_service_counted():
    """On the service's own counter the capacity is found within 3 % and the limit is the
    backlog that grew past it; on the HTTP answers the same service never shows a limit."""
    out, s = search_sim(Meter.parse(f"prometheus:{URL}#{DONE}=tasks"))
    assert out.reason == "backlog", (out.reason, out.detail)
    assert "--backlog" in out.broke.why and "grew" in out.broke.why
    assert out.broke.load > 200 and out.broke.backlog_growing
    cap, _ = ans.capacity(out.steps, "closed")
    steady = s.steady_step()
    assert steady is not None and steady.throughput_rps == pytest.approx(200.0, rel=0.03)
    assert cap is None or cap == pytest.approx(200.0, rel=0.03)
    # Every good step's backlog held still, and each carries the HTTP figures beside.
    for step in out.steps:
        if step.ok:
            assert not step.backlog_growing and step.steady, step
        assert step.answered_rps == pytest.approx(3 * step.load, rel=0.1)
    http, _ = search_sim(Meter())
    assert http.reason == "max-load", (http.reason, http.detail)


def test_a_backlog_that_grows_keeps_a_step_from_being_steady():
    """The reader waits while the queue grows (up to the longest step): a step at 1.5x the
    capacity is never steady, one under it is at once."""
    from redline.find.reader import Reader

    meter = Meter.parse(f"prometheus:{URL}#{DONE}")
    for users, growing in ((100.0, False), (300.0, True)):
        sim = TaskQueueSim(200.0)
        sim.set_target(users)
        got = [sim.next_snapshot(1.0) for _ in range(12)]
        reader = Reader("closed", 200, Limits(), meter, DT, [])
        assert reader.backlog_moves(got) == (1 if growing else 0)
        step = reader.measure(0, "sweep", users, got)
        assert step.backlog_growing is growing and step.steady is not growing
        assert step.backlog_growth_rps == pytest.approx(max(users - 200.0, 0.0), abs=1.0)


class _Metrics(Exposition):
    """_Metrics serves a counter that counts the scrapes themselves (a truth the test knows)."""

    def text(self, n: int) -> str:
        return (
            "# TYPE jobs_done counter\n"
            f"jobs_done_total {10 * n}\n"
            "# TYPE jobs_waiting gauge\n"
            f"jobs_waiting {n % 3}\n"
        )


@pytest.fixture
def metrics_url(serve_http) -> str:
    """metrics_url: the /metrics URL of a served _Metrics (conftest's serve_http)."""
    return serve_http(_Metrics)


def test_the_probe_reads_a_real_endpoint(metrics_url):
    _Metrics.scrapes = 0
    done = Series.parse(f"prometheus:{metrics_url}#jobs_done_total", "--throughput")
    waiting = Series.parse(f"prometheus:{metrics_url}#jobs_waiting", "--backlog")
    p = WorkProbe(done, waiting)
    p.prime()
    got = [p.read() for _ in range(3)]
    # The endpoint counted 4 scrapes (the prime and three reads), 10 jobs each.
    assert _Metrics.scrapes == 4
    assert got == [
        {"completed": 10, "backlog": 2.0},
        {"completed": 10, "backlog": 0.0},
        {"completed": 10, "backlog": 1.0},
    ]


def test_a_started_probe_reads_its_thread_s_latest_reading(metrics_url):
    """Started, the probe scrapes in its own thread and a read never waits on a scrape; every
    read together takes the counter from the prime to the last read's time, once."""
    _Metrics.scrapes = 0
    done = Series.parse(f"prometheus:{metrics_url}#jobs_done_total", "--throughput")
    p = WorkProbe(done)
    p.prime()
    p.start(0.05)
    got = []
    try:
        deadline = time.monotonic() + 10
        while _Metrics.scrapes < 6 and time.monotonic() < deadline:
            time.sleep(0.01)
        began = time.monotonic()
        got.append(p.read())
        assert time.monotonic() - began < 0.05, "a read waited on a scrape"
    finally:
        p.stop()
    scrapes = _Metrics.scrapes
    time.sleep(0.2)
    assert _Metrics.scrapes == scrapes, "the thread stopped"
    got.append(p.read())
    # The counter counts 10 a scrape: what the reads took lies between the prime's 10 and
    # the last scrape's value, and never runs backwards.
    total = sum(g["completed"] or 0 for g in got)
    assert all((g["completed"] or 0) >= 0 for g in got), got
    assert 0 < total <= 10 * (scrapes - 1), (got, scrapes)


class Late:
    """Late: an endpoint on a fake clock whose counter grows ``rate`` a second exactly and
    answers each scrape after a random delay (a busy service), reading its counter midway."""

    def __init__(self, rate: float, seed: int = 5):
        self.rate = rate
        self.t = 0.0
        self.delay = 0.1
        self.rng = random.Random(seed)

    def clock(self) -> float:
        return self.t

    def __call__(self, url: str, timeout_s: float) -> Scraped:
        value = self.rate * (self.t + self.delay / 2)
        self.t += self.delay
        out = [("taskqueue_tasks_finished_total", {"status": "SUCCEEDED"}, value)]
        return Scraped(out, frozenset(["taskqueue_tasks_finished_total"]))


def test_a_started_probe_counts_each_interval_when_it_happened_not_when_a_scrape_came_back():
    """A service completing 60 tasks a second, its /metrics answered up to 0.4 s late: each
    half-second interval reads 30 ± 2 (the latest scrape's value gave 9 then 60 in the
    demo; ± 2 where no scrape had come back after the time read yet, and the next interval
    makes it up), and the intervals add up to the counter's growth exactly."""
    late = Late(60.0)
    done = Series.parse(f"prometheus:{URL}#{DONE}", "--throughput")
    p = WorkProbe(done, fetch=late)
    p.clock = late.clock
    p.prime()
    p.stamped = True
    p._period_s = 0.25  # as start(0.25) would, for the search's half-second intervals
    # The thread's scrapes (one every 0.25 s, or as soon as a late one came back) and the
    # reads (as each half-second interval's snapshot arrives) interleave on the one clock.
    start, reads = 0.3, []
    for k in range(1, 41):
        while True:
            delay = late.rng.uniform(0.0, 0.4)
            if start + delay > k * 0.5:
                break
            late.t, late.delay = start, delay
            p.scrape_once()
            start = max(late.t, start + 0.25)
        late.rng.seed(k)  # the delay drawn and not yet taken is drawn again next time
        late.t = k * 0.5
        reads.append(p.read()["completed"])
    assert None not in reads[2:], reads
    counted = [r for r in reads if r is not None]
    # (The first counted read starts at the prime, inside its interval.)
    assert all(abs(r - 30) <= 2 for r in counted[1:]), str(reads)
    assert sum(r == 30 for r in counted) >= 0.8 * len(counted), str(reads)
    # Telescoping: the sum is the growth from the prime (answered at 0.05 s) to the last
    # read's time (two periods behind it).
    assert sum(counted) == pytest.approx(60 * (40 * 0.5 - 0.5 - 0.05), abs=1.0), reads
