"""The one generator rule (redline.analysis.generator): a search's stop condition and the
bottleneck its page names at the limit read the same rule, so they agree, on a generator
starved by another tenant on its core and on one that is not; and the rule's own cases."""

from __future__ import annotations

from typing import Any

import pytest
from redline.analysis.bottleneck import name_bottleneck
from redline.analysis.generator import RAN, generator_limited
from redline.find.step import Step
from test_find_search import Bucket, Slots, search

#: IDLE: a watched service part with CPU to spare on 2 cores.
IDLE = {"cpu_percent": 20.0, "cores_allowed": 2.0}

#: FULL_POOL: the same part whose pool of 8 is held full (the service's limit by construction).
FULL_POOL = {**IDLE, "pool:db": 8.0, "pool_limit:db": 8.0}


@pytest.fixture(autouse=True)
def two_cores(monkeypatch):
    """The machine's shares are read against 2 cores, whatever machine runs the tests."""
    monkeypatch.setattr("redline.analysis.generator.os.cpu_count", lambda: 2)


def _tenant(load: float) -> tuple[float, float]:
    """_tenant: the machine 100 % busy, redline's workers on 1 % of it, the watched service on
    10 %: the rest (89 %) is another tenant's (a spinning process on redline's core)."""
    return 1.0, 0.01


#: CASES: (label, service, figures for the harness, generator named): a search's page.
CASES: list[tuple[str, Any, dict[str, Any], bool]] = [
    (
        # bench/bottleneck.py's generator deployment on the busy box: one worker, runnable
        # 90-95 % of the time, waiting 48-73 %, running 17-47 % (2026-11-28 20:08): requests
        # to send on what the tenant left it. Before one rule, the stop counted only what
        # it ran (never 90 %): the search found no limit while the rule named the generator.
        "starved by a tenant, requests to send",
        Slots(1000, 0.1),  # 10 M req/s: never the service
        {
            "busy": lambda rate: 0.95 if rate > 3000 else 0.55,
            "wait": 0.5,
            "machine": _tenant,
            "parts": {"svc": IDLE},
        },
        True,
    ),
    (
        # make demo on the busy box: runnable most of the time, running 2-4 %: its waits
        # are its wake-ups' for the service's answers; the service's pool is the limit.
        "starved by a tenant, waiting for answers",
        Slots(8, 10.0),
        {"busy": 0.92, "wait": 0.89, "machine": _tenant, "parts": {"svc": FULL_POOL}},
        False,
    ),
    (
        "not starved, no time left to send",
        Slots(1000, 0.1),
        {"busy": lambda rate: 0.97 if rate > 3000 else 0.3, "wait": 0.02, "parts": {"svc": IDLE}},
        True,
    ),
    (
        "not starved, the service's pool",
        Slots(8, 10.0),
        {"busy": 0.3, "wait": 0.02, "parts": {"svc": FULL_POOL}},
        False,
    ),
    (
        # bench/bottleneck.py's generator deployment, open, on the quiet box (2026-11-29
        # 02:15): two of five searches broke p99 < 50 ms with the one worker running 85-86 %
        # of the time, under BUSY: nothing was named. Nearly saturated, requests queued for
        # it: the stop and the bottleneck name it together.
        "nearly saturated, the SLO broken first",
        Slots(8, 10.0),
        {"busy": lambda rate: 0.87 if rate > 700 else 0.4, "wait": 0.01, "parts": {"svc": IDLE}},
        True,
    ),
    (
        # The same service, its pool full, with a worker running 70 %: the pool is named.
        "busy but not nearly saturated, the service's pool",
        Slots(8, 10.0),
        {"busy": 0.71, "wait": 0.01, "parts": {"svc": FULL_POOL}},
        False,
    ),
    (
        # Starved with no tenant to blame, but the service refuses: refusals are its own
        # answer. Before one rule, the bottleneck named the starved generator here while
        # the search stopped on errors.
        "starved, the service's refusals",
        Bucket(500.0),
        {"busy": 0.55, "wait": 0.5, "parts": {"svc": IDLE}},
        False,
    ),
]


@pytest.mark.parametrize(("label", "service", "figures", "named"), CASES, ids=[c[0] for c in CASES])
def test_the_stop_and_the_bottleneck_name_the_generator_together(label, service, figures, named):
    out, _, _ = search(service, "open", **figures)
    assert out.broke is not None, (label, out.reason, out.detail)
    searched = [s for s in out.steps if s.phase not in ("confirm", "soak")]
    b = name_bottleneck(searched, out.broke)
    assert b is not None, label
    stopped = out.reason == "generator"
    assert stopped == ("generator" in out.broke.fired), (label, out.reason, out.broke.fired)
    # Both parts of the page: the stop condition and the bottleneck, and the rule itself.
    assert stopped == named, (label, out.reason, out.detail)
    assert (b["part"] == "generator") == named, (label, b)
    assert (generator_limited(out.broke) is not None) == named, label
    if not named and service.__class__ is Slots:
        assert (b["part"], b["resource"]) == ("svc", "pool"), (label, b)
    if named:
        assert "not the service's" in b["evidence"], b
        assert "redline" in out.detail, out.detail


def _step(busy: float, wait: float, fired: list[str], tenant: bool) -> Step:
    s = Step(index=0, load=100.0, throughput_rps=100.0, p50_ms=1.0, p99_ms=2.0)
    s.generator_busy, s.generator_wait, s.fired = busy, wait, fired
    if tenant:
        s.machine_busy, s.generator_share, s.parts = 1.0, 0.01, {"svc": IDLE}
    return s


@pytest.mark.parametrize(
    ("label", "busy", "wait", "fired", "tenant", "limited"),
    [
        ("runnable 90 %", 0.9, 0.1, [], False, True),
        ("runnable 89 %", 0.89, 0.1, [], False, False),
        ("a tenant's, ran over RAN", 0.92, 0.9 - RAN, [], True, True),
        ("a tenant's, ran under RAN", 0.92, 0.94 - RAN, [], True, False),
        # bench/bottleneck.py --tenant's generator, open: runnable 103 %, ran 6 %.
        ("a tenant's, starved to 6 %", 1.03, 0.97, [], True, True),
        # Starved: a cause of a latency failure, never a failure by itself, never of errors.
        ("starved, good step", 0.5, 0.4, [], False, False),
        ("starved, SLO broken", 0.5, 0.4, ["slo"], False, True),
        ("starved, refusals", 0.5, 0.4, ["slo", "errors"], False, False),
        ("starved by a tenant, SLO broken", 0.5, 0.4, ["slo"], True, False),
        # Nearly saturated: what the workers ran, on a latency failure only.
        ("ran 85 %, SLO broken", 0.86, 0.01, ["slo"], False, True),
        ("ran 85 %, plateau", 0.86, 0.01, ["plateau"], False, True),
        ("ran 85 %, good step", 0.86, 0.01, [], False, False),
        ("ran 85 %, refusals", 0.86, 0.01, ["slo", "errors"], False, False),
        ("ran 79 %, SLO broken", 0.8, 0.01, ["slo"], False, False),
        # Runnable 86 % but running 20 % (waiting for a CPU): the starved rule's, not this.
        ("runnable 86 %, ran 20 %, SLO broken", 0.86, 0.66, ["slo"], True, False),
    ],
)
def test_the_generator_rule(label, busy, wait, fired, tenant, limited):
    s = _step(busy, wait, fired, tenant)
    assert (generator_limited(s) is not None) == limited, label
    assert generator_limited(s, None) is None, "a switched-off rule names nothing"
