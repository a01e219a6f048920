"""Streamed completions (docs/protocols.md): the scenario helper ``u.completion`` and
``--stream`` against the test server's OpenAI-compatible probe, whose pace is known: N tokens,
the first T after the request arrived, then one every G, each a chunk with
``choices[0].delta.content``, then a closing chunk and ``data: [DONE]``. Time to first token,
inter-token latency and each request's tokens a second are held to that pace (p50 within
5 %: the issue's figure; the median of hundreds of gaps moves only when most are late), the
tokens to the server's own count (exact).

Beside a busy suite, TTFT and a request's tokens a second are held with room: each is the
median of a dozen answers that come in rounds whose first (and last) tokens are due together
on the server's one thread, so one late wake-up moves a whole round (TTFT p50 past 5 % one
run in three at load 10-15). There TTFT is never early and its p50 under 1.5 times the
probe's first, and a request's tokens a second never above the pace (its last token can only
come late) and its p50 over 0.8 times it; the test that runs alone holds both to 5 %.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import jsonschema
import pytest
import redline
from conftest import run_cli
from redline.scenario import ScenarioError, load

SCHEMA = json.loads((Path(__file__).parent.parent / "docs/schema/result.schema.json").read_text())

#: The probe's pace: the first token 100 ms after the request, then one every 20 ms, 20 tokens.
FIRST_MS, EVERY_MS, TOKENS = 100, 20, 20
#: RATE: a request's tokens over its latency, which ends with its last token's event.
RATE = TOKENS / ((FIRST_MS + (TOKENS - 1) * EVERY_MS) / 1000)


def within(value: float, want: float, share: float) -> bool:
    return abs(value - want) <= share * want


def write(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "s.py"
    p.write_text("from redline.scenario import *\n" + textwrap.dedent(body))
    return p


def held_to_the_probe(c: dict, requests: int, *, busy: bool = True) -> None:
    """held_to_the_probe: a run's completion figures against the probe's pace; ``busy``: with
    the room of the module's docstring for TTFT and a request's tokens a second. What the room
    still fails: a TTFT timed from the run's start (the second round's ~580 ms at p50) or at
    the last token (480 ms); tokens a second that count the closing chunk and ``[DONE]`` as
    tokens (10 % above the pace) or run from the first token (26 % above)."""
    assert c["responses"] == requests and c["output_tokens"] == requests * TOKENS, c
    ttft, rate = c["ttft_ms"], c["request_tokens_per_s"]
    assert ttft["min"] >= FIRST_MS * 0.999, ttft
    assert within(c["itl_ms"]["p50"], EVERY_MS, 0.05), c["itl_ms"]
    if busy:
        assert ttft["p50"] <= FIRST_MS * 1.5, ttft
        # Never above the pace, less the histogram's 0.1 % precision.
        assert RATE * 0.8 <= rate["p50"] <= RATE * 1.002, rate
    else:
        assert within(ttft["p50"], FIRST_MS, 0.05), ttft
        assert within(rate["p50"], RATE, 0.05), rate


def test_the_completion_helper_reads_ttft_itl_and_tokens_per_s(target, tmp_path):
    """u.completion beside a plain request: only the completion is streamed; its tokens are
    the server's, its figures the probe's pace."""
    path = write(
        tmp_path,
        f"""\
        s = Scenario()

        @s.flow
        def chat(u):
            u.completion("/v1/chat/completions?first={FIRST_MS}ms&every={EVERY_MS}ms",
                         messages=[{{"role": "user", "content": "hi"}}], model="m",
                         max_tokens={TOKENS})
            u.get("/", name="plain")
        """,
    )
    out = tmp_path / "r.json"
    before = target.stats()
    p = run_cli("run", str(path), "--host", target.url, "-u", "4", "-n", "12", "--json", str(out))
    seen = target.stats()
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, SCHEMA)
    served = seen["completion_tokens"] - before["completion_tokens"]
    assert served == 12 * TOKENS
    c = doc["completion"]
    print(json.dumps(c))
    held_to_the_probe(c, 12)
    # Over the run: the tokens over the measured time.
    assert within(c["output_tokens_per_s"], served / doc["duration_s"], 0.001), c
    # The plain GET is not streamed: 12 streamed answers, 22 events each (tokens, the
    # closing chunk, [DONE]).
    assert doc["stream"]["responses"] == 12 and doc["stream"]["events"] == 12 * (TOKENS + 2)
    assert doc["per_name"]["completion"]["requests"] == 12
    assert "Completions:" in p.stdout and f"{12 * TOKENS} output tokens" in p.stdout, p.stdout
    assert {"ttft", "itl", "request_tokens_per_s"} <= set(doc["histograms"])


def test_stream_reads_completions_of_a_plain_run(target):
    """--stream on a run of the completions probe: the same figures, from redline.run; an
    SSE stream that carries no tokens has none."""
    url = target.url + f"/v1/completions?tokens={TOKENS}&first={FIRST_MS}ms&every={EVERY_MS}ms"
    before = target.stats()
    r = redline.run(url, connections=2, requests=6, stream=True)
    assert target.stats()["completion_tokens"] - before["completion_tokens"] == 6 * TOKENS
    assert r.completion is not None
    held_to_the_probe(r.completion, 6)
    sse = redline.run(target.url + "/sse?events=3&every=1ms", requests=2, stream=True)
    assert sse.completion is None and "completion" not in sse.data


@pytest.mark.alone
def test_ttft_and_tokens_a_second_within_5_percent_on_a_quiet_box(target):
    """Run alone, the issue's figure: TTFT and a request's tokens a second within 5 % at p50."""
    url = target.url + f"/v1/completions?tokens={TOKENS}&first={FIRST_MS}ms&every={EVERY_MS}ms"
    r = redline.run(url, connections=2, requests=6, stream=True)
    assert r.completion is not None
    held_to_the_probe(r.completion, 6, busy=False)


def test_a_completion_needs_messages_or_a_prompt(tmp_path):
    path = write(
        tmp_path,
        """\
        s = Scenario()

        @s.flow
        def chat(u):
            u.completion("/v1/chat/completions")
        """,
    )
    try:
        load(str(path))
    except ScenarioError as e:
        assert "messages=" in str(e) and ":6" in str(e), str(e)
    else:
        raise AssertionError("a completion without messages or prompt compiled")
