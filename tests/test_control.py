"""The live-run handle (``_engine.start_run``): the target changes while the run goes on and
the server counts the new rate; stop() ends it and the report of what ran comes back."""

from __future__ import annotations

import json
import time

import pytest
import redline
from accounting import assert_books
from redline import _engine
from redline.errors import ConfigError


def live_config(url: str, **extra: object) -> dict[str, object]:
    cfg = {"url": url, "duration_s": 30.0, "live": True, "interval_s": 0.25, "threads": 2}
    cfg.update(extra)
    return cfg


def snapshots(handle: _engine.RunHandle, n: int) -> list[dict]:
    got: list[dict] = []
    deadline = time.monotonic() + 10
    while len(got) < n and time.monotonic() < deadline:
        raw = handle.next_snapshot(1.0)
        if raw is not None:
            got.append(json.loads(raw))
    assert len(got) == n, "a snapshot every interval"
    return got


def served_rate(handle: _engine.RunHandle, target: redline.Target) -> float:
    """served_rate is the rate the server counted over eight intervals, from a whole
    interval after a change (the change's own interval and the next are left out)."""
    snapshots(handle, 2)
    before = target.stats()["requests"]
    t0 = time.monotonic()
    snapshots(handle, 8)
    return (target.stats()["requests"] - before) / (time.monotonic() - t0)


def test_set_target_changes_the_rate_the_server_counts():
    with redline.Target() as target:
        handle = _engine.start_run(live_config(target.url + "/", rate=200.0))
        snapshots(handle, 4)
        at = handle.set_target(800.0)
        rate = served_rate(handle, target)
        handle.stop()
        report = json.loads(handle.report())
        seen = target.stats()["requests"]
    assert at > 0.9, "the change came after four 0.25 s intervals"
    assert 680 < rate < 920, f"server counted {rate:.0f} req/s after set_target(800)"
    assert report["interrupted"] is True
    assert report["requests"] <= seen


def test_closed_model_target_is_users():
    with redline.Target() as target:
        handle = _engine.start_run(
            live_config(target.url + "/?latency=20ms", connections=1, max_vus=10)
        )
        low = snapshots(handle, 4)
        handle.set_target(10.0)
        snapshots(handle, 2)
        high = snapshots(handle, 4)
        assert handle.target() == 10.0
        handle.stop()
        handle.report()
    lo = sum(s["achieved_rate"] for s in low[1:]) / 3
    hi = sum(s["achieved_rate"] for s in high) / 4
    # 20 ms a request: ~50 req/s a user.
    assert 8 * lo < hi < 12 * lo, (lo, hi)
    assert all(s["active_connections"] == 10 for s in high)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"live": True, "rate": 10.0, "stages": [{"duration_s": 1, "target": 1}]}, "rate or"),
        ({"live": True, "connections": 5, "max_vus": 2}, "max_vus"),
        ({"live": False, "connections": 1, "max_vus": 2}, "max_vus needs a live run"),
    ],
)
def test_bad_live_configs_are_one_line_errors(config, message):
    cfg = {"url": "http://127.0.0.1:9/", "duration_s": 1.0, "preflight": False, **config}
    with pytest.raises(ConfigError, match=message):
        _engine.start_run(cfg)


def test_a_run_that_is_not_live_refuses_targets_and_bad_values_are_refused():
    with redline.Target() as target:
        handle = _engine.start_run({"url": target.url + "/", "duration_s": 5.0, "connections": 1})
        with pytest.raises(ConfigError, match="not live"):
            handle.set_target(5.0)
        handle.stop()
        handle.report()
        before = target.stats()["requests"]
        live = _engine.start_run(live_config(target.url + "/", connections=1))
        with pytest.raises(ConfigError, match="> 0"):
            live.set_target(0.0)
        with pytest.raises(ConfigError, match="ramp"):
            live.set_target(2.0, -1.0)
        live.stop()
        # What the refused calls left behind: a run whose report is what the server saw.
        doc = json.loads(live.report())
        parts = assert_books(doc)
        assert target.stats()["requests"] - before == parts["answered"] + parts["unfinished"]
        # report() is repeatable.
        assert live.report() == live.report()


def test_a_trickle_that_puts_the_next_hit_past_the_end_leaves_every_thread_sending():
    """A search drops the rate to a trickle between steps; at 0.05 req/s each thread's next
    hit falls past the run's planned end. The lanes must idle, not end: when the rate comes
    back, the server counts all of it (the old engine ended them, and a thread left without
    lanes sent nothing again: a recovery check got exactly half its rate)."""
    with redline.Target() as target:
        handle = _engine.start_run(live_config(target.url + "/", rate=400.0, duration_s=8.0))
        snapshots(handle, 4)
        handle.set_target(0.05)
        snapshots(handle, 4)
        handle.set_target(400.0)
        rate = served_rate(handle, target)
        handle.stop()
        json.loads(handle.report())
    assert 340 < rate < 460, f"server counted {rate:.0f} req/s after the trickle"
