"""Tests for redline.cluster.table: the per-injector rows and the merged verdict."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from redline.cluster.connection import Member
from redline.cluster.handle import Seen
from redline.cluster.table import injector_rows, merged_generator, render


def report(requests: int, saturated: bool, busy: float, verdict: str) -> dict[str, Any]:
    return {
        "requests": requests,
        "rps": requests / 10.0,
        "histograms": {"latency": "h"},
        "generator": {
            "cpu_s": 1.0,
            "user_s": 0.7,
            "sys_s": 0.3,
            "worker_cpu_s": 0.9,
            "busy_ratio": busy,
            "late_sends": 0,
            "intended_rate": None,
            "achieved_rate": None,
            "max_send_lag_ms": None,
            "cpu_us_per_request": 10.0,
            "limit": "generator" if saturated else "server",
            "saturated": saturated,
            "verdict": verdict,
        },
    }


def feed(i: int, skew_s: float = 0.0, lost: str | None = None) -> Any:
    m = Member(i, None, "0.1.0", 2, f"node{i}", 100 + i, skew_s, 0.001)
    seen = Seen(requests=7)
    return SimpleNamespace(member=m, lost=lost, seen=seen)


def test_the_verdict_names_the_saturated_injector() -> None:
    feeds = [feed(0), feed(1), feed(2, lost="died (gone)")]
    reports = {
        0: report(1000, False, 0.4, "generator kept up: workers 40% busy"),
        1: report(900, True, 0.97, "generator saturated: worker threads were 97% busy"),
    }
    rows = injector_rows(feeds, reports)
    g = merged_generator([reports[0], reports[1]], rows)
    assert g["saturated"] is True and g["limit"] == "generator"
    assert g["verdict"].startswith("generator saturated on 1 of 3 injectors: injector 1 (node1")
    assert "lost: injector 2 (node2, pid 102) died (gone)" in g["verdict"]
    assert g["cpu_s"] == 2.0 and g["busy_ratio"] == 0.97
    assert g["cpu_us_per_request"] == 2.0 * 1e6 / 1900
    assert rows[2]["requests"] == 7 and rows[2]["rps"] is None, "a lost one: what it was seen do"
    table = render(rows)
    assert "SATURATED" in table and "LOST" in table


def test_all_kept_up_says_so_and_a_skewed_clock_is_flagged() -> None:
    feeds = [feed(0), feed(1, skew_s=0.25)]
    reports = {i: report(500, False, 0.3, "generator kept up") for i in (0, 1)}
    rows = injector_rows(feeds, reports)
    g = merged_generator(list(reports.values()), rows)
    assert g["saturated"] is False and g["limit"] == "server"
    assert g["verdict"].startswith("generator kept up on all 2 reporting injectors")
    assert rows[1]["clock_skew_ms"] == 250.0
    assert "clock is +250 ms off the driver's" in rows[1]["verdict"]
    assert "clock" not in rows[0]["verdict"]


def test_a_lost_row_says_when_and_its_share_and_the_note_counts_the_survivors() -> None:
    from redline.cli.cluster import loss_note
    from redline.cluster.handle import after_loss

    lost = feed(2, lost="died (gone)")
    lost.lost_at_s, lost.lost_share = 2.1, 1 / 3
    feeds = [feed(0), feed(1), lost]
    for f in feeds[:2]:
        f.lost_at_s = f.lost_share = None
    rows = injector_rows(feeds, {i: report(500, False, 0.3, "kept up") for i in (0, 1)})
    assert rows[2]["lost_at_s"] == 2.1 and rows[2]["lost_share"] == 0.333
    assert rows[2]["verdict"].startswith("lost at 2.1 s, carrying 33 % of the load: died")
    # Intervals of 0.5 s: the loss at 2.1 s; the first whole interval after it is (2.5, 3.0].
    series = [
        {"t_s": 0.5 * k, "requests": 30 if k <= 5 else 20, "injectors_reported": 3 if k <= 5 else 2}
        for k in range(1, 9)
    ]
    after = after_loss(feeds, series, 0.5)
    assert after == {"from_s": 2.5, "injectors": 2, "requests": 60, "rps": 40.0}
    note = loss_note(
        {"injectors": rows, "failure": None, "lost_share": 0.3333, "after_loss": after}
    )
    assert note is not None
    assert "injector 2 (node2, pid 102) at 2.1 s, carrying 33 % of the load" in note
    assert "33 % of the asked load was not offered at the end" in note
    assert "from 2.5 s the figures count the 2 injectors left only: 60 requests" in note
    assert loss_note({"injectors": rows, "failure": "stopped", "lost_share": 0.33}) is None
