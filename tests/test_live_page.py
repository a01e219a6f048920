"""Tests for redline.live's page in headless Chromium (charts, the stop button, the per-name
table) and ``redline ui``: its form, its command line, one run at a time."""

from __future__ import annotations

import io
import json
import re
import threading
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

import pytest
import redline
from browser import artifacts, chromium_page
from conftest import run_cli
from live_support import (
    WAIT_S,
    Cli,
    SseClient,
    stop_token,
)
from redline.errors import ConfigError
from redline.live import LiveSession, parse_address
from redline.live.launcher import Form, Launcher, Model, command_line

# -- in a real browser -----------------------------------------------------------------------

_CHART_STATE = """() => Array.from(document.querySelectorAll('figure.chart')).map(f => {
    const c = f.querySelector('canvas');
    let inked = 0;
    if (c && c.width && c.height) {
        const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        for (let i = 3; i < px.length; i += 4) if (px[i] > 0) inked++;
    }
    const s = window.redlineLive.charts[f.dataset.chart];
    return {id: f.dataset.chart, width: c ? c.width : 0, height: c ? c.height : 0, inked,
            draws: s ? s.draws : 0, rows: s ? s.data[0].length : 0};
})"""


def test_live_page_in_chromium(target, session):
    """The page during a run: its charts gain points each interval, the stop button stops
    the run (the target's count is short of a full run's), the final figures equal the
    result's, the report is linked, and nothing is fetched from outside or logged as an
    error."""
    errors: list[str] = []
    box: dict[str, Any] = {}
    with chromium_page(errors, r"http://127\.0\.0\.1:") as page:
        page.goto(session.web_url, wait_until="load")
        page.wait_for_function("window.redlineLive.status === 'running'", timeout=10_000)
        before = target.stats()["requests"]

        def go() -> None:
            box["result"] = redline.run(
                target.url, rate=200, duration="20s", interval="0.25s",
                progress=session.progress(),
            )  # fmt: skip
            session.finish(box["result"].data, _render_run)

        runner = threading.Thread(target=go)
        runner.start()
        page.wait_for_function("window.redlineLive.intervals >= 3", timeout=10_000)
        early = {c["id"]: c for c in page.evaluate(_CHART_STATE)}
        page.wait_for_function("window.redlineLive.intervals >= 5", timeout=10_000)
        later = {c["id"]: c for c in page.evaluate(_CHART_STATE)}
        page.click("#stop")
        page.wait_for_function("window.redlineLive.status === 'stopped'", timeout=10_000)
        runner.join(WAIT_S)
        served = target.stats()["requests"] - before
        totals = page.inner_text("#f-total")
        page.wait_for_function("window.redlineLive.whole !== undefined", timeout=10_000)
        headline = page.inner_text("#f-rate") + " " + page.inner_text("#clock")
        page.wait_for_selector("#report:not([hidden])", timeout=10_000)
        page.screenshot(path=str(artifacts() / "live-page.png"), full_page=True)
        page.click("#report")
        page.wait_for_function("window.redlineCharts !== undefined", timeout=10_000)
    result = box["result"]
    assert errors == []
    assert {"throughput", "latency", "load", "errors"} <= set(later)
    for cid, c in later.items():
        assert c["width"] > 100 and c["height"] > 100, c
        assert c["inked"] > 0.01 * c["width"] * c["height"], c
        assert c["rows"] > early[cid]["rows"] and c["draws"] > early[cid]["draws"], (c, early)
    assert result.interrupted and 0 < served < 200 * 20 / 4
    assert f"{result.data['requests']:,} answered" in totals
    assert f"{result.data['intended']:,} intended" in totals
    # The finished page headlines the whole run (the summary's rate), not its last interval.
    rate = f"{result.rps:,.1f}".rstrip("0").rstrip(".")
    assert headline.startswith(f"{rate} req/s"), (headline, result.rps)
    assert "(whole run)" in headline


def test_live_page_draws_each_watched_part_in_chromium(target, session):
    """A run with ``--watch``: the page draws each part's small chart, on the load's own
    time axis, gaining points as the part is sampled."""
    port = urlsplit(target.url).port
    errors: list[str] = []
    box: dict[str, Any] = {}
    with chromium_page(errors, r"http://127\.0\.0\.1:") as page:
        page.goto(session.web_url, wait_until="load")
        page.wait_for_function("window.redlineLive.status === 'running'", timeout=10_000)

        def go() -> None:
            box["result"] = redline.run(
                target.url, rate=100, duration="5s", interval="0.25s",
                progress=session.progress(), watch=[f"api=port:{port}"],
            )  # fmt: skip
            session.finish(box["result"].data, _render_run)

        runner = threading.Thread(target=go)
        runner.start()
        # Two samples of the part (one a second): 20 s on a box busy with the suite.
        page.wait_for_function(
            """() => { const c = window.redlineLive.charts['part-api'];
                return c && c.data[1].filter(v => v !== null).length >= 2; }""",
            timeout=20_000,
        )
        drawn = {c["id"]: c for c in page.evaluate(_CHART_STATE)}
        x = page.evaluate(
            "() => ['part-api', 'throughput'].map(id => window.redlineLive.charts[id].data[0])"
        )
        runner.join(WAIT_S)
    assert errors == []
    api, load = drawn["part-api"], drawn["throughput"]
    assert api["inked"] > 0.01 * api["width"] * api["height"], api
    assert 0 < api["height"] < load["height"], (api, load)  # a small chart
    assert x[0] == x[1] and len(x[0]) >= 8, x  # the load's intervals, its time axis
    assert box["result"].data["parts"]["series"]["api"]


def test_live_page_draws_the_stream_figures_in_chromium(target, session):
    """A --stream run of streamed completions (the probe: 10 tokens, the first at 50 ms, then
    one every 10 ms): the page draws each interval's first byte and gaps, and the completions'
    TTFT, ITL and tokens a second; the time series' tokens add up to the run's, which are
    the server's but for the answers under way at the end."""
    errors: list[str] = []
    box: dict[str, Any] = {}
    url = target.url + "/v1/chat/completions?first=50ms&every=10ms&tokens=10"
    with chromium_page(errors, r"http://127\.0\.0\.1:") as page:
        page.goto(session.web_url, wait_until="load")
        page.wait_for_function("window.redlineLive.status === 'running'", timeout=10_000)
        before = target.stats()["completion_tokens"]

        def go() -> None:
            box["result"] = redline.run(
                url, connections=4, duration="3s", interval="0.25s", stream=True,
                progress=session.progress(),
            )  # fmt: skip
            session.finish(box["result"].data, _render_run)

        runner = threading.Thread(target=go)
        runner.start()
        page.wait_for_function("window.redlineLive.intervals >= 6", timeout=10_000)
        charts = {c["id"]: c for c in page.evaluate(_CHART_STATE)}
        runner.join(WAIT_S)
        page.screenshot(path=str(artifacts() / "live-page-stream.png"), full_page=True)
    served = target.stats()["completion_tokens"] - before
    assert errors == []
    assert {"stream", "completion"} <= set(charts), sorted(charts)
    for cid in ("stream", "completion"):
        c = charts[cid]
        assert c["width"] > 100 and c["inked"] > 0.01 * c["width"] * c["height"], c
    data = box["result"].data
    tokens = data["completion"]["output_tokens"]
    series = [s["stream"]["completion"] for s in data["timeseries"] if "completion" in s["stream"]]
    assert sum(c["output_tokens"] for c in series) == tokens
    assert served - 4 * 10 <= tokens <= served, (tokens, served)
    ttft = [c["ttft"]["p50_ms"] for c in series if c["ttft"]["count"]]
    assert ttft and min(ttft) >= 50.0, ttft


def test_live_per_name_table_in_chromium(target, tmp_path):
    """``redline run SCENARIO --web``: the per-name table fills while the scenario runs;
    stopped, the page shows the JSON result's per-name figures."""
    out = tmp_path / "run.json"
    errors: list[str] = []
    cli = Cli(
        "run", "examples/survey.py", "--host", target.url, "-u", "4", "-d", "30s",
        "--interval", "0.25s", "--web", "0", "--linger", "5s", "--json", str(out), "-q",
    )  # fmt: skip
    try:
        base = cli.wait_line(r"live view at (\S+)").group(1)
        with chromium_page(errors, r"http://127\.0\.0\.1:") as page:
            page.goto(base, wait_until="load")
            # 20 s: the first interval with all three names, on a box busy with the suite
            # (10 s timed out once here, the page and the run being right when read alone).
            page.wait_for_function(
                "window.redlineLive.status === 'running' && window.redlineLive.names.length >= 3",
                timeout=20_000,
            )
            page.click("#stop")
            page.wait_for_function("window.redlineLive.status === 'stopped'", timeout=10_000)
            rows = page.evaluate(
                """() => Array.from(document.querySelectorAll('#names tr')).map(
                    tr => Array.from(tr.children).map(td => td.textContent))"""
            )
            page.screenshot(path=str(artifacts() / "live-per-name.png"), full_page=True)
        code, _, err = cli.finish()
    finally:
        cli.kill()
    assert code == 130, err  # stopped: as Ctrl-C, with the result of what ran written
    assert errors == []
    per_name = json.loads(out.read_text())["per_name"]
    shown = {r[0]: r for r in rows}
    assert set(shown) == set(per_name)
    for name, figures in per_name.items():
        assert shown[name][1] == f"{figures['requests']:,}", (name, shown[name])
        assert shown[name][2] == f"{figures['errors']:,}", (name, shown[name])


def test_ui_starts_a_run_from_the_form_in_chromium(target):
    """``redline ui``: the form shows the command line as it is filled in; Start runs it in
    the ui's process (the target serves it), the charts gain points each interval, the stop
    button ends it short of a full run; SIGTERM ends the ui."""
    full = 200 * 20
    errors: list[str] = []
    cli = Cli("ui", "--port", "0")
    try:
        base = cli.wait_line(r"start page at (\S+)").group(1)
        before = target.stats()["requests"]
        with chromium_page(errors, r"http://127\.0\.0\.1:") as page:
            page.goto(base, wait_until="load")
            page.wait_for_function("window.redlineLive.status === 'ready'", timeout=10_000)
            page.fill("input[name=target]", target.url + "/")
            page.select_option("select[name=model]", "open")
            page.fill("input[name=load]", "200")
            page.fill("input[name=duration]", "20s")
            # Each field updates the command line as its input event is handled: wait for the
            # last one filled, not only the first (a CI run read '-d 30s', the default, here).
            page.wait_for_function(
                "['--rate 200', '-d 20s'].every("
                "s => document.getElementById('command').textContent.includes(s))",
                timeout=10_000,
            )
            command = page.inner_text("#command")
            page.click("#start")
            page.wait_for_function("window.redlineLive.intervals >= 3", timeout=10_000)
            early = {c["id"]: c for c in page.evaluate(_CHART_STATE)}
            page.wait_for_function("window.redlineLive.intervals >= 5", timeout=10_000)
            later = {c["id"]: c for c in page.evaluate(_CHART_STATE)}
            page.click("#stop")
            page.wait_for_function("window.redlineLive.status === 'stopped'", timeout=10_000)
            served = target.stats()["requests"] - before
            totals = page.inner_text("#f-total")
            start_enabled = page.is_enabled("#start")
            page.screenshot(path=str(artifacts() / "ui-page.png"), full_page=True)
        cli.proc.terminate()
        code, out, err = cli.finish()
    finally:
        cli.kill()
    assert errors == []
    assert command == f"redline run {target.url}/ --rate 200 -d 20s --web 0"
    assert f"started {command}" in err
    for cid, c in later.items():
        assert c["rows"] > early[cid]["rows"] and c["draws"] > early[cid]["draws"], (c, early)
    # Five 1 s intervals were seen before the stop: at least 4 s of 200 req/s, half of the
    # 20 s at most (the stop takes effect at the next interval).
    assert 200 * 4 < served < full / 2
    answered = int(re.search(r"([\d,]+) answered", totals).group(1).replace(",", ""))  # type: ignore[union-attr]
    # What the page shows is what the server saw, but for the requests still out when the
    # stop cut the run off: the server may have answered them after the client stopped
    # waiting (the run's summary counts them as unfinished).
    left = re.search(r"Unfinished: (\d+) requests", out)
    unfinished = int(left.group(1)) if left else 0
    assert answered <= served <= answered + unfinished, (answered, served, unfinished, out)
    assert start_enabled  # the form can start the next run
    assert code == 0 and f"{answered} requests in" in out, (code, out, err)


@pytest.mark.parametrize(
    "label,fields,message",
    [
        ("no target", {"load": "1", "duration": "1s"}, "target: give a URL"),
        ("not a URL", {"target": "example.com", "load": "1", "duration": "1s"}, "expected http"),
        ("a missing scenario", {"target": "nope.py", "load": "1", "duration": "1s"}, "no scenario"),
        (
            "a bad model",
            {"target": "http://h/", "model": "x", "load": "1", "duration": "1s"},
            "model",
        ),
        ("a bad load", {"target": "http://h/", "load": "many", "duration": "1s"}, "load: expected"),
        ("no load", {"target": "http://h/", "load": "0", "duration": "1s"}, "load: must be > 0"),
        (
            "part of a user",
            {"target": "http://h/", "load": "1.5", "duration": "1s"},
            "whole number",
        ),
        ("a bad duration", {"target": "http://h/", "load": "1", "duration": "soon"}, "duration"),
        ("no duration", {"target": "http://h/", "load": "1", "duration": "0s"}, "duration: must"),
    ],
)
def test_ui_form_refuses(label, fields, message):
    with pytest.raises(ConfigError, match=message):
        Form.of(fields)


@pytest.mark.parametrize(
    "label,form,argv",
    [
        (
            "users",
            Form("http://h/", Model.CLOSED, 10, "30s"),
            ["run", "http://h/", "-c", "10", "-d", "30s"],
        ),
        (
            "a rate",
            Form("s.py", Model.OPEN, 2.5, "1m"),
            ["run", "s.py", "--rate", "2.5", "-d", "1m"],
        ),
    ],
)
def test_ui_command_line(label, form, argv):
    assert command_line(form) == argv, label


def test_ui_says_why_a_run_could_not_start_and_takes_one_run_at_a_time():
    """A command line the run refuses ends the session as ``failed`` with its one line on
    the page's stream; a second start while a run goes is refused (400), and a start
    without the page's header is forbidden (403)."""
    release = threading.Event()

    def run_command(argv: list[str], live: LiveSession) -> int:
        if argv[1].endswith("/slow"):
            release.wait(WAIT_S)
            live.finish(None)
            return 0
        raise ConfigError("the engine refused it")

    def start(base: str, token: str | None, target: str) -> tuple[int, dict[str, Any]]:
        body = json.dumps({"target": target, "load": "1", "duration": "1s"}).encode()
        req = urllib.request.Request(base + "start", method="POST", data=body)
        if token is not None:
            req.add_header("X-Redline-Stop", token)
        try:
            with urllib.request.urlopen(req, timeout=WAIT_S) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}") if e.code == 400 else {}

    with Launcher(parse_address("0", "--web"), run_command, out=io.StringIO()) as ui:
        assert ui.url is not None
        token = stop_token(ui.url)
        assert start(ui.url, None, "http://h/")[0] == 403
        code, body = start(ui.url, token, "http://h/")
        assert code == 202 and body["command"].startswith("redline run http://h/ -c 1 -d 1s")
        assert ui.wait(WAIT_S)
        client = SseClient(ui.url)
        client.close()
        (done,) = client.kinds("done")
        assert done["status"] == "failed" and done["error"] == "the engine refused it"
        assert start(ui.url, token, "http://h/slow")[0] == 202
        code, body = start(ui.url, token, "http://h/")
        release.set()
        assert code == 400 and body["error"] == "a run is going: stop it first"
        assert ui.wait(WAIT_S)


def test_ui_refuses_a_public_address_without_a_token():
    r = run_cli("ui", "--host", "0.0.0.0", "--port", "0")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "needs --web-token" in r.stderr


def _render_run(data: dict[str, Any]) -> str:
    from redline.report.render import render_run_html

    return render_run_html(data)
