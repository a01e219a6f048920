"""Tests of redline.find.steps: a step's figures from its interval snapshots (table-driven on
hand-made histograms), and a real short run whose snapshots carry what the step needs."""

from __future__ import annotations

import base64
import json
import struct
import zlib

import pytest
import redline
from redline import _engine
from redline.find.steps import aggregate_step


def hdr(values_us: list[int]) -> str:
    """hdr encodes ``values_us`` as redline's engine does (µs, 1 µs..60 s, 3 digits) in
    HdrHistogram's V2 deflate format, base64: zigzag LEB128 counts, zero runs negative."""
    sub_half_mag, sub_half = 10, 1024  # 3 significant digits: 2048 sub-buckets

    def index(v: int) -> int:
        bucket = max((v | 2047).bit_length() - 11, 0)
        return ((bucket + 1) << sub_half_mag) + (v >> bucket) - sub_half

    counts: dict[int, int] = {}
    for v in values_us:
        counts[index(v)] = counts.get(index(v), 0) + 1

    def varint(n: int) -> bytes:
        z = (n << 1) ^ (n >> 63)  # zigzag
        out = bytearray()
        while True:
            byte, z = z & 0x7F, z >> 7
            out.append(byte | (0x80 if z else 0))
            if not z:
                return bytes(out)

    payload, zeros = bytearray(), 0
    for i in range(max(counts) + 1 if counts else 0):
        c = counts.get(i, 0)
        if c == 0:
            zeros += 1
            continue
        if zeros:
            payload += varint(-zeros)
            zeros = 0
        payload += varint(c)
    head = struct.pack(">IIIIqqd", 0x1C849313, len(payload), 0, 3, 1, 60_000_000, 1.0)
    packed = zlib.compress(head + bytes(payload))
    return base64.b64encode(struct.pack(">II", 0x1C849314, len(packed)) + packed).decode()


def test_hand_made_histograms_read_back_as_recorded():
    # The helper must agree with the engine's decoder before the table below means anything.
    values = [1_000 * ms for ms in range(1, 101)] + [250_000]
    count, (p50, p99, top) = _engine.histogram_quantiles(hdr(values), [0.5, 0.99, 1.0])
    assert count == 101
    assert p50 == pytest.approx(51_000, rel=0.001)
    assert p99 == pytest.approx(100_000, rel=0.001)
    assert top == pytest.approx(250_000, rel=0.001)


def snap(ms: list[float], **extra):
    """snap is an interval snapshot whose responses took ``ms``."""
    n = len(ms)
    s = {
        "t_s": 1.0,
        "requests": n,
        "errors": 0,
        "p50_ms": sorted(ms)[n // 2] if n else 0.0,
        "p99_ms": max(ms, default=0.0),
        "max_ms": max(ms, default=0.0),
        "mean_ms": sum(ms) / n if n else 0.0,
        "in_flight": 0,
        "histogram": hdr([round(x * 1000) for x in ms]),
    }
    s.update(extra)
    return s


# 98 fast intervals and one slow one (2 % of the responses): the step's p99 is the slow
# interval's, which the median of the intervals' p99s (10 ms) hides.
FAST = [snap([10.0] * 10) for _ in range(98)]
SLOW = snap([500.0] * 20)

CASES = [
    (
        "percentiles come from the merged histogram, not the intervals' median",
        [*FAST, SLOW],
        {"p50_ms": 10.0, "p95_ms": 10.0, "p99_ms": 500.0, "max_ms": 500.0, "requests": 1000},
    ),
    (
        "the mean weighs each interval by its responses",
        [snap([10.0] * 30), snap([40.0] * 10)],
        {"mean_ms": 17.5, "p50_ms": 10.0, "p95_ms": 40.0, "p90_ms": 40.0},
    ),
    (
        "errors add up by class, zeros left out, and give the error rate",
        [
            snap([5.0] * 6, errors=2, errors_by_class={"status": 1, "timeout": 1, "reset": 0}),
            snap([5.0] * 2, errors=2, errors_by_class={"status": 2}),
        ],
        # 8 answers (3 of them refused) and 1 timeout: 9 outcomes, 4 failed; a refused
        # answer is one outcome, not an answer and an error (4/12 counted it twice).
        {"errors": 4, "errors_by_class": {"status": 3, "timeout": 1}, "error_rate": 4 / 9},
    ),
    (
        "in flight is the mean of the interval-end counts",
        [snap([5.0], in_flight=20), snap([5.0], in_flight=22), snap([5.0], in_flight=21)],
        {"inflight_mean": 21.0},
    ),
    (
        "no response: zero percentiles (as an empty interval has), no mean",
        [snap([]), snap([])],
        {"p50_ms": 0.0, "p99_ms": 0.0, "p95_ms": 0.0, "mean_ms": None, "requests": 0},
    ),
    (
        "no snapshot at all",
        [],
        {"requests": 0, "p50_ms": 0.0, "p99_9_ms": 0.0, "inflight_mean": None, "error_rate": 0},
    ),
    (
        "an older engine's snapshots (no histogram, mean or in-flight): request-weighted means",
        [
            {"requests": 10, "errors": 0, "p50_ms": 1.0, "p99_ms": 3.0, "max_ms": 4.0},
            {"requests": 10, "errors": 0, "p50_ms": 2.0, "p99_ms": 5.0, "max_ms": 9.0},
        ],
        {
            "p50_ms": 1.5,
            "p99_ms": 4.0,
            "max_ms": 9.0,
            "p95_ms": None,
            "mean_ms": None,
            "inflight_mean": None,
        },
    ),
]


@pytest.mark.parametrize(("label", "snaps", "want"), CASES, ids=[c[0] for c in CASES])
def test_aggregate_step(label, snaps, want):
    got = aggregate_step(snaps)
    for key, value in want.items():
        if isinstance(value, float):
            assert got[key] == pytest.approx(value, rel=0.002), f"{label}: {key}"
        else:
            assert got[key] == value, f"{label}: {key}"


def test_a_real_runs_snapshots_carry_mean_tail_in_flight_and_histogram():
    # 20 connections against a 50 ms response: ~20 requests out at every interval's end,
    # a mean just above 50 ms, and each interval's histogram holding its responses.
    snaps: list[dict] = []
    with redline.Target(threads=1) as t:
        result = redline.run(
            t.url + "/?latency=50ms",
            connections=20,
            duration=2.0,
            interval=0.5,
            threads=1,
            progress=lambda s: snaps.append(dict(s) if isinstance(s, dict) else json.loads(s)),
        )
    assert result.requests > 0
    ts = [s for s in result.timeseries if s["requests"] > 0 and s["t_s"] < 2.0]
    assert len(ts) >= 2, ts
    for s in ts:
        assert s["in_flight"] == pytest.approx(20, abs=2), s["in_flight"]
        assert 50.0 <= s["mean_ms"] < 70.0, s["mean_ms"]
        assert s["p99_9_ms"] >= s["p99_ms"] >= 50.0
        count, _ = _engine.histogram_quantiles(s["histogram"], [0.5])
        assert count == s["requests"]
    step = aggregate_step(ts)
    # Little's law: L = X W with X the completion rate, W the mean latency.
    rate = step["requests"] / (ts[-1]["t_s"] - ts[0]["t_s"] + 0.5)
    assert step["inflight_mean"] == pytest.approx(rate * step["mean_ms"] / 1000, rel=0.15)
    assert snaps and "in_flight" in snaps[0], "the live snapshots carry it too"
