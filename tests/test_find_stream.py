"""``redline find --stream --slo 'ttft_p50<50ms'`` (docs/protocols.md, "Searching on stream
figures") against a completion probe whose time to first token grows with the load by a known
law, and the stream figures of every interval in the time series.

The probe: the test server in capacity mode (N slots, each held for S) answering the
OpenAI-compatible completion probe, whose stream starts when its service ends (the slot is its
prefill; crates/testserver/src/stream.rs): TTFT = the wait for a slot + S, then TOKENS tokens
EVERY apart (R = (TOKENS − 1) · EVERY of decoding outside the slot). In the closed model, C users
each send their next request when the last ended, so each cycles in wait + S + R: under
N · (S + R) / S users no one waits (TTFT = S); past it the slots never idle, a user's cycle is
C · S / N and TTFT = C · S / N − R. A bound B on TTFT therefore holds up to
C* = N · (B + R) / S users: the limit the search must find.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import redline
from redline.find.finder import find

FIND_SCHEMA = json.loads(
    (Path(__file__).resolve().parent.parent / "docs/schema/find.schema.json").read_text()
)

#: The probe: N slots of S (the prefill), then TOKENS tokens EVERY apart.
N, S_MS, EVERY_MS, TOKENS = 4, 20.0, 10.0, 9
R_MS = (TOKENS - 1) * EVERY_MS
#: SATURATION: the users past which a request waits for a slot.
SATURATION = N * (S_MS + R_MS) / S_MS
#: BOUND_MS and TRUTH: the SLO, and the most users within it (26).
BOUND_MS = 50.0
TRUTH = N * (BOUND_MS + R_MS) / S_MS

#: QUICK: short steps keep the search well under a minute and a half on a shared 2-core box.
QUICK = {"min_step": 2.0, "max_step": 6.0, "confirm": 3.0, "interval": 0.5}


def ttft_law(users: float) -> float:
    """ttft_law: the probe's TTFT with ``users`` in the closed model (ms)."""
    return max(S_MS, users * S_MS / N - R_MS)


@pytest.mark.slow
def test_a_ttft_slo_finds_the_users_whose_first_token_queues_past_it():
    with redline.Target(threads=1, capacity=N, service_time=f"{S_MS:g}ms") as t:
        url = f"{t.url}/v1/chat/completions?first=0ms&every={EVERY_MS:g}ms&tokens={TOKENS}"
        # The median: every user waits alike in this queue, so the law holds at p50 and p99
        # alike, and a median is not moved by a thread woken 30 ms late on a busy box. The
        # generator's CPU is not judged: this test is about the SLO, and on a shared box a
        # starved step would be named the machine's limit before the SLO's.
        r = find(
            url,
            stream=True,
            slos=[f"ttft_p50<{BOUND_MS:g}ms"],
            start=8,
            max_time=100,
            generator_busy=None,
            **QUICK,
        )
        served = t.stats()["completion_tokens"]
    jsonschema.validate(r, FIND_SCHEMA)
    steps = [s for s in r["steps"] if s["phase"] in ("sweep", "refine")]
    for s in steps:
        ttft = s["stream"]["ttft"]
        print(s["load"], s["fired"], round(ttft["p50_ms"], 1), round(ttft["p99_ms"], 1))
    # Judged per step, on the step's own TTFT (its intervals' merged histograms).
    for s in steps:
        over = s["stream"]["ttft"]["p50_ms"] > BOUND_MS
        assert over == ("slo" in s["fired"]), s
    assert any("slo" in s["fired"] for s in steps), "the SLO stopped the search"
    # The law, away from the saturation's edge (where a late wake-up moves the queue most).
    for s in steps:
        want, got = ttft_law(s["load"]), s["stream"]["ttft"]["p50_ms"]
        if s["load"] <= 0.8 * SATURATION:
            assert S_MS * 0.999 <= got <= S_MS + 10.0, (s["load"], got)
        elif s["load"] >= 1.2 * SATURATION:
            assert abs(got - want) <= 0.25 * want, (s["load"], got, want)
    # The limit: the most users within the SLO, within 20 % of the truth.
    good = max(s["load"] for s in steps if not s["fired"])
    assert abs(good - TRUTH) <= 0.2 * TRUTH, (good, TRUTH)
    limit = r["answers"]["limit"]
    assert limit["load"] > good
    if limit["reason"] == "slo":
        assert "ttft_p50 was" in limit["detail"] and "ttft_p50<50ms" in limit["detail"]
        assert limit["stream"]["ttft"]["p50_ms"] > BOUND_MS
    # The tokens redline read are the server's: all of them, but for the answers still
    # under way when the run stopped (at most one a user).
    tokens = r["run"]["completion"]["output_tokens"]
    most = max(s["load"] for s in r["steps"])
    assert served - most * TOKENS <= tokens <= served, (tokens, served)
    # Every interval of the time series carries the stream figures: their tokens add up to
    # the run's.
    series = [s["stream"]["completion"] for s in r["timeseries"] if "completion" in s["stream"]]
    assert len(series) >= len(steps), "stream figures in the time series"
    assert sum(c["output_tokens"] for c in series) == tokens
