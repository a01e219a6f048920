"""The end-of-run text (redline/report/summary.py), rendered from hand-made result documents."""

from __future__ import annotations

import re

from redline.report.summary import render
from redline.runs.result import Result

LAT = {
    "min": 1,
    "mean": 2,
    "stdev": 0.5,
    "p50": 2,
    "p75": 2.5,
    "p90": 3,
    "p99": 4,
    "p99_9": 5,
    "p99_99": 6,
    "max": 7,
}


def doc(**over):
    d = {
        "version": 1,
        "url": "http://127.0.0.1:1/",
        "method": "GET",
        "model": "closed",
        "threads": 1,
        "connections": 10,
        "interrupted": False,
        "duration_s": 2.0,
        "requests": 2000,
        "rps": 1000.0,
        "bytes_in": 2048,
        "bytes_out": 1024,
        "transfer_in_per_s": 1024.0,
        "status_codes": {"200": 1990, "503": 10},
        "non_2xx": 10,
        "errors": {
            "connect": 0,
            "timeout": 3,
            "read": 0,
            "write": 0,
            "reset": 0,
            "protocol": 0,
            "status": 10,
        },
        "latency_ms": LAT,
        "uncorrected_latency_ms": None,
        "per_name": {},
        "timeseries": [
            {"t_s": 1.0, "requests": 900},
            {"t_s": 2.0, "requests": 1100},
            {"t_s": 2.004, "requests": 8},  # the drain after the end
        ],
        "generator": {
            "cpu_s": 0.1,
            "saturated": False,
            "busy_ratio": 0.1,
            "verdict": "generator kept up",
        },
        "histograms": {"latency": "x"},
    }
    d.update(over)
    return Result(d)


def test_req_sec_row_leaves_out_the_drain_interval():
    text = render(doc())
    row = next(line for line in text.splitlines() if "Req/Sec" in line)
    assert row.split()[1:4] == ["1.00k", "100", "1.10k"]  # avg, stdev, max of 900 and 1100
    # wrk's Req/Sec is per thread; this one is the whole run's, and says so.
    assert row.endswith("(all 1 threads, per interval; wrk's is per thread)")


def test_req_sec_row_leaves_out_the_empty_intervals_after_the_send_window():
    """A scenario's last iterations drain in whole intervals after -d: 2 s of sending, then
    two empty seconds. The row's mean is the window's (1.00k), not 500 over four intervals."""
    series = [
        {"t_s": 1.0, "requests": 900},
        {"t_s": 2.0, "requests": 1100},
        {"t_s": 3.0, "requests": 0},
        {"t_s": 4.0, "requests": 0},
    ]
    row = next(line for line in render(doc(timeseries=series)).splitlines() if "Req/Sec" in line)
    assert row.split()[1:4] == ["1.00k", "100", "1.10k"], row


def test_connections_that_did_not_all_open_are_a_warning():
    g = {
        "cpu_s": 0.6,
        "saturated": False,
        "busy_ratio": 0.06,
        "connections_opened": 5843,
        "limit": "server",
        "verdict": "generator kept up: workers 6% busy; the figures describe the server at "
        "the 5843 connections that opened, not the 30000 asked for",
    }
    text = render(doc(generator=g, connections=30000))
    assert (
        "WARNING: Generator kept up: workers 6% busy; the figures describe the server at " in text
    )


def test_errors_and_non_2xx_are_spelled_out():
    text = render(doc())
    assert "Errors: connect 0, timeout 3," in text
    assert re.search(r"Non-2xx or 3xx responses: 10 \(503: 10\)", text)


def test_saturated_generator_is_a_warning():
    g = {
        "cpu_s": 2.0,
        "saturated": True,
        "busy_ratio": 0.95,
        "verdict": "generator saturated: worker threads were 95% busy",
    }
    assert "WARNING: Generator saturated: worker threads were 95% busy" in render(doc(generator=g))


def test_non_2xx_or_3xx_leaves_redirects_out_as_wrk_does():
    codes = {"200": 10, "301": 4, "404": 2, "503": 1}
    text = render(doc(status_codes=codes, non_2xx=7))
    assert "Non-2xx or 3xx responses: 3 (404: 2, 503: 1)" in text
    assert "3xx responses: 4 (301: 4)" in text


def test_requests_neither_answered_nor_failed_are_shown_when_non_zero():
    # label, fields, line expected (None: no such line)
    cases = [
        ("all zero", {}, None),
        (
            "unfinished",
            {"unfinished": 4},
            "Unfinished: 4 requests still out at the cut-off, in the latency figures at their"
            " age then (the tail is a lower bound)",
        ),
        ("unsent", {"unsent": 320}, "Never sent: 320 hits due before the end"),
        ("retries", {"retries": 9}, "Retries: 9 requests sent again"),
        ("clamped", {"clamped": 2}, "Clamped: 2 latencies beyond the histogram's range"),
    ]
    for label, fields, line in cases:
        text = render(doc(**fields))
        for word in ("Unfinished:", "Never sent:", "Retries:", "Clamped:"):
            assert (word in text) == (line is not None and line.startswith(word)), (label, text)
        if line:
            assert line in text, (label, text)


def test_a_run_held_back_by_the_pool_is_a_warning_without_blaming_the_generator():
    g = {
        "cpu_s": 0.12,
        "saturated": False,
        "limit": "pool",
        "busy_ratio": 0.01,
        "verdict": "limited by the connection pool, not the generator: all 10 connections",
    }
    text = render(doc(generator=g))
    assert "WARNING: Limited by the connection pool, not the generator" in text
    assert "Generator saturated" not in text


def test_an_outage_is_said_with_its_times_and_errors():
    # label, outages, what the summary says
    cases = [
        ("none", [], None),
        (
            "came back",
            [
                {
                    "start_s": 2.012,
                    "end_s": 4.031,
                    "error_class": "connect",
                    "errors": 320,
                    "errors_by_class": {"connect": 312, "reset": 8},
                }
            ],
            "Target stopped answering at 2.01 s (connect: 312 errors) and came back at 4.03 s",
        ),
        (
            "still down",
            [
                {
                    "start_s": 1.5,
                    "end_s": None,
                    "error_class": "timeout",
                    "errors": 40,
                    "errors_by_class": {"timeout": 40},
                }
            ],
            "Target stopped answering at 1.50 s (timeout: 40 errors) and had not come back",
        ),
    ]
    for label, outages, want in cases:
        text = render(doc(outages=outages))
        if want is None:
            assert "stopped answering" not in text, label
        else:
            assert want in text, f"{label}: {text}"
