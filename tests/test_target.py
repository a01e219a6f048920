"""The Target wrapper's capacity mode, driven by redline itself: the server completes N /
service_time requests a second whatever the load, and its /__stats say what queued."""

from __future__ import annotations

import json
import urllib.request

import pytest
import redline
from redline.errors import ConfigError

from conftest import run_cli


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
