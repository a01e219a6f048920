"""The live view (redline/view/progress.py), fed hand-made interval snapshots: no run needed."""

from __future__ import annotations

import io

import pytest
from redline.view.progress import Goal, PlainProgress, Tally, for_stream, sparkline, view
from rich.console import Console


def snap(t, requests, errors=0, **over):
    s = {
        "t_s": t,
        "warmup": False,
        "requests": requests,
        "errors": errors,
        "p50_ms": 1.5,
        "p90_ms": 4.0,
        "p99_ms": 9.0,
        "max_ms": 20.0,
        "active_connections": 8,
        "intended_rate": None,
        "achieved_rate": float(requests + errors),
        "send_lag_ms": 0.0,
        "bytes_in": 0,
    }
    s.update(over)
    return s


def text_of(renderable) -> str:
    console = Console(file=io.StringIO(), width=120, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize(
    "label, goal, snaps, fraction",
    [
        ("duration", Goal(seconds=10), [snap(1, 100), snap(2, 100)], 0.2),
        ("requests", Goal(requests=1000), [snap(1, 240, 10)], 0.25),
        ("past the goal", Goal(seconds=1), [snap(1.004, 3)], 1.0),
        ("no goal", Goal(), [snap(1, 5)], None),
    ],
)
def test_tally_measures_progress_towards_the_goal(label, goal, snaps, fraction):
    t = Tally()
    for s in snaps:
        t.add(s)
    got = t.fraction(goal)
    assert got == (pytest.approx(fraction) if fraction is not None else None), label


def test_sparkline_scales_to_the_maximum():
    assert sparkline([0, 50, 100]) == "▁▅█"
    assert sparkline([0, 0]) == "▁▁"
    assert sparkline([]) == ""


def test_view_shows_bar_rate_percentiles_and_errors_by_class():
    t = Tally()
    t.add(snap(1, 900, 0))
    t.add(snap(2, 1100, 7, intended_rate=1200.0, errors_by_class={"timeout": 5, "reset": 2}))
    out = text_of(view(t, Goal(seconds=4)))
    assert "2.0s / 4s  50%" in out
    assert "1.11k/s of 1.20k/s intended" in out
    assert "p50 1.50ms  p90 4.00ms  p99 9.00ms  max 20.00ms" in out
    assert "2,000" in out  # answered so far
    assert "7: reset 2, timeout 5" in out


def test_view_prefers_p95_when_the_snapshot_has_it():
    t = Tally()
    t.add(snap(1, 10, p95_ms=6.0))
    assert "p95 6.00ms" in text_of(view(t, Goal(seconds=2)))


def test_plain_lines_off_a_terminal():
    stream = io.StringIO()
    progress = for_stream(stream, Goal(seconds=2))
    assert isinstance(progress, PlainProgress)
    progress(snap(1, 10, 1, p95_ms=6.0, errors_by_class={"timeout": 1, "reset": 0}))
    progress.close()
    line = stream.getvalue()
    assert line.count("\n") == 1 and "req/s=" in line
    assert "p95=  6.00ms" in line and "errors=1 (timeout 1)  conns=8" in line


def test_a_cluster_interval_some_injectors_missed_says_so_and_names_the_lost():
    whole = snap(1, 10, injectors=3, injectors_reported=3)
    short = snap(
        2, 10, injectors=3, injectors_reported=2, injectors_lost=["injector 1 (node1, pid 7) died"]
    )
    stream = io.StringIO()
    progress = for_stream(stream, Goal(seconds=2))
    progress(whole)
    progress(short)
    first, second = stream.getvalue().splitlines()
    assert "injectors" not in first, "every injector reported: nothing to say"
    assert second.endswith("injectors 2/3 (lost: injector 1 (node1, pid 7) died)")
    tally = Tally()
    tally.add(short)
    assert "injectors 2/3 (lost: injector 1" in text_of(view(tally, Goal(seconds=2)))
    assert "injectors" not in text_of(view(_tally(snap(1, 10)), Goal(seconds=2)))


def _tally(s):
    t = Tally()
    t.add(s)
    return t


def test_the_interval_after_the_end_is_not_a_repeat_with_no_rate():
    """The run's last line was the drain after -d: 'req/s=0' beside the percentiles of the
    answers to requests sent before the end, read as the last second once more."""
    out = io.StringIO()
    view = PlainProgress(out, Goal(seconds=2.0))
    for s in (snap(1.0, 100), snap(2.0, 100), snap(2.1, 7, achieved_rate=0.0)):
        view(s)
    lines = out.getvalue().splitlines()
    assert lines[1].startswith("t=   2.0s  req/s=") and "after the end" not in lines[1]
    assert lines[2].startswith("t=   2.1s  after the end: 7 answers to requests sent before it")
    assert "req/s" not in lines[2]


def test_a_last_partial_interval_says_its_sends_and_no_rate():
    """Issue 36: a run with -n ends inside an interval; its last, 20 ms long, sent 10
    requests, which 'req/s=500' read as a burst five times the run's rate. Whole intervals
    give the rate (the line, the panel's headline and its sparkline); a partial one its
    count over its span."""
    out = io.StringIO()
    plain = PlainProgress(out, Goal(requests=210))
    tally = Tally()
    for s in (snap(1.0, 100), snap(2.0, 100), snap(2.02, 10, achieved_rate=500.0)):
        plain(s)
        tally.add(s)
    lines = out.getvalue().splitlines()
    assert "req/s=    100" in lines[1]
    assert "req/s" not in lines[2] and "t=   2.0s  the last 20ms: 10 sent  p50=" in lines[2]
    assert list(tally.rates) == [100.0, 100.0]
    shown = text_of(view(tally, Goal(requests=210)))
    assert "100/s" in shown and "500" not in shown


def test_a_first_interval_is_whole_and_a_scenario_tail_is_counted():
    """The first interval is taken as whole (nothing to compare it with); a scenario's
    iterations that went on sending after the end in a partial interval say how many."""
    out = io.StringIO()
    plain = PlainProgress(out, Goal(seconds=2.0))
    for s in (snap(1.0, 50), snap(2.0, 50), snap(2.05, 4, achieved_rate=80.0)):
        plain(s)
    first, _, last = out.getvalue().splitlines()
    assert "req/s=     50" in first
    assert "went on sending, 4 in its last 50ms" in last and "req/s" not in last
