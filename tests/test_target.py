"""The Target wrapper against real clients: capacity mode (driven by redline itself, the server
completes N / service_time requests a second whatever the load, and its /__stats say what
queued) and the survey form app (session cookie, form post, 302)."""

from __future__ import annotations

import http.cookiejar
import json
import urllib.error
import urllib.parse
import urllib.request

import pytest
import redline
from conftest import run_cli
from redline.errors import ConfigError


@pytest.mark.parametrize(
    ("connections", "want_rps"),
    [
        (2, 2 / 0.020),  # fewer clients than slots: C / S
        (16, 4 / 0.020),  # four times the slots: N / S = 200 req/s
    ],
)
def test_capacity_sets_throughput(connections: int, want_rps: float) -> None:
    with redline.Target(threads=2, capacity=4, service_time="20ms") as t:
        result = redline.run(t.url + "/", connections=connections, duration="2s", threads=1)
        stats = t.stats()
    assert result.errors_total == 0
    assert abs(result.rps - want_rps) <= 0.10 * want_rps, result
    # Little's law: the mean time in the system is clients / throughput.
    assert result.latency.min >= 20.0
    assert stats["queue_served"] == stats["requests"] >= result.requests
    assert stats["queue_busy"] == 0 and stats["queue_waiting"] == 0
    if connections > 4:
        assert stats["queue_peak"] >= 6
        assert result.latency.p50 >= 2.5 * 20.0  # queued: about 16 / 200 = 80 ms
    else:
        assert stats["queue_peak"] == 0


def test_stats_endpoint_matches_the_wrapper() -> None:
    with redline.Target(threads=1, capacity=2, service_time=0.005) as t:
        redline.run(t.url + "/", connections=2, requests=20, threads=1)
        with urllib.request.urlopen(t.url + "/__stats", timeout=5) as r:
            served = json.load(r)
        assert served == t.stats()
    assert served["requests"] == served["queue_served"] >= 20


@pytest.mark.parametrize(
    ("kwargs", "want"),
    [
        ({"capacity": 4}, "go together"),
        ({"service_time": "10ms"}, "go together"),
        ({"capacity": 0, "service_time": "10ms"}, "capacity"),
        ({"capacity": -1, "service_time": "10ms"}, "capacity"),
        ({"capacity": True, "service_time": "10ms"}, "capacity"),
        ({"capacity": 4, "service_time": "soon"}, "service_time"),
        ({"capacity": 4, "service_time": 0}, "service time"),
        ({"capacity": 4, "service_time": -1}, "service_time"),
    ],
)
def test_bad_capacity_is_a_config_error(kwargs: dict[str, object], want: str) -> None:
    with pytest.raises(ConfigError, match=want):
        redline.Target(**kwargs)  # type: ignore[arg-type]


def test_cli_refuses_half_a_capacity() -> None:
    out = run_cli("target", "--capacity", "4")
    assert out.returncode == 2
    assert "--capacity and --service-time go together" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_form_app_counts_the_survey_flow() -> None:
    """The seed-003 flow with urllib's cookie jar: GET the form (a session cookie), POST it
    (302, followed to /thanks); a client without the jar is refused. The server counts both."""
    with redline.Target(threads=1) as t:
        jar = http.cookiejar.CookieJar()
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        with browser.open(t.url + "/form", timeout=5) as r:
            assert r.status == 200 and "<form" in r.read().decode()
        assert [c.name for c in jar] == ["session"]
        body = urllib.parse.urlencode({"name": "Ada", "rating": 5}).encode()
        with browser.open(t.url + "/form", data=body, timeout=5) as r:
            assert (r.status, r.url) == (200, t.url + "/thanks")  # the 302, followed
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(t.url + "/form", data=body, timeout=5)
        assert refused.value.code == 403
        stats = t.stats()
    assert stats["form_pages"] == stats["sessions_issued"] == 1
    assert stats["forms_posted"] == stats["thanks_pages"] == stats["missing_cookie"] == 1
    assert stats["forms_invalid"] == 0
