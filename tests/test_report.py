"""Tests for redline.report (render, charts): the find result's schema, the Markdown table,
the HTML page (structure here, drawing in headless Chromium), ``redline report``, and the
run report from a real run against the target server."""

from __future__ import annotations

import http.server
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import redline
from browser import assert_drawn, open_in_chromium
from conftest import run_cli
from redline.report.charts import find_charts, run_charts
from redline.report.render import (
    load_result,
    render_html,
    render_markdown,
    render_run_html,
    write_reports,
)
from synthetic_find import synthetic_find_result

ROOT = Path(__file__).resolve().parents[1]
FIND_SCHEMA = json.loads((ROOT / "docs/schema/find.schema.json").read_text())

#: FIND_CHARTS: every chart a find result with a monitor draws.
FIND_CHARTS = {
    "throughput",
    "latency",
    "load",
    "errors",
    "service-cpu",
    "service-resources",
    "usl",
    "hockey",
}


@pytest.fixture(scope="module")
def find_result() -> dict[str, Any]:
    return synthetic_find_result()


# -- the JSON result and its schema ----------------------------------------------------------


@pytest.mark.parametrize(
    "label,model,monitor",
    [("closed", "closed", True), ("open", "open", True), ("no monitor", "closed", False)],
)
def test_find_result_validates(label, model, monitor):
    result = json.loads(json.dumps(synthetic_find_result(model, monitor)))
    jsonschema.validate(result, FIND_SCHEMA)
    key = "users" if model == "closed" else "rate"
    assert key in result["answers"]["optimal"]
    assert result["answers"]["limit"]["reason"] == "slo"


@pytest.mark.parametrize(
    "label,mutate",
    [
        ("answers missing", lambda r: r.pop("answers")),
        ("latency key missing", lambda r: r["answers"]["latency_ms"].pop("p99_9")),
        ("step without throughput", lambda r: r["steps"][0].pop("throughput_rps")),
        ("error rate above 1", lambda r: r["steps"][0].update(error_rate=1.5)),
        ("unknown model", lambda r: r.update(model="half-open")),
        ("optimal with neither users nor rate", lambda r: r["answers"]["optimal"].pop("users")),
        ("limit without reason", lambda r: r["answers"]["limit"].pop("reason")),
    ],
)
def test_schema_rejects_broken_results(label, mutate):
    result = json.loads(json.dumps(synthetic_find_result()))
    mutate(result)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(result, FIND_SCHEMA)


# -- Markdown --------------------------------------------------------------------------------


def _md_table(md: str) -> list[list[str]]:
    lines = md.split("## Steps", 1)[1].strip().splitlines()
    rows = [ln for ln in lines if ln.startswith("|")]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", r)[1:-1]] for r in rows]


def test_markdown_has_answers_and_the_table(find_result):
    md = render_markdown(find_result)
    assert md.startswith("# redline capacity report")
    answers = md.split("## The four answers", 1)[1].split("##", 1)[0]
    for i, title in enumerate(
        ["Steady-state throughput", "Latency distribution", "Optimal operating point", "Limits"], 1
    ):
        assert f"{i}. **{title}:**" in answers
    assert find_result["answers"]["text"]["optimal"] in answers
    table = _md_table(md)
    assert table[0] == [
        "Step",
        "Users",
        "Duration (s)",
        "RPS",
        "p50 (ms)",
        "p95 (ms)",
        "p99 (ms)",
        "Failures (%)",
        "Service CPU (%) / load",
        "Verdict",
    ]
    assert all(set(c) <= set("-:") for c in table[1])
    body = table[2:]
    assert len(body) == len(find_result["steps"])
    assert all(len(r) == 10 for r in body)
    last, step = body[-1], find_result["steps"][-1]
    assert last[1] == "24" and last[3] == f"{step['throughput_rps']:,.0f}"
    assert last[7] == f"{100 * step['error_rate']:.2f}"
    assert last[9].startswith("slo: p99 was over 150 ms")
    assert body[0][9] == "ok" and body[0][8] == "9 / 0.2" and body[-1][8] == "216 / 4.8"
    assert "Suspected leak: the service's fds rose 27" in md  # the soak's climb
    assert "connections" not in md.split("## Read this first", 1)[1].split("##", 1)[0]
    assert "Universal Scalability Law" in md


def test_the_reports_say_the_bottleneck_and_the_notes_under_the_answers(find_result):
    """What the search said under its answers (answers.notes: the bottleneck named, the
    oversubscribed machine, the drift) is in both reports, as the console printed it."""
    result = json.loads(json.dumps(find_result))
    said = (
        "Bottleneck: taskqueue's pool ran out first (100%): pool fetch held 25.0 of 25 at"
        " 500 users (saturated from 160 users on)."
    )
    result["answers"]["notes"] = [said]
    md = render_markdown(result)
    answers = md.split("## The four answers", 1)[1].split("##", 1)[0]
    assert f"- {said}" in answers, answers
    page = render_html(result)
    assert 'id="answer-notes"' in page and "pool fetch held 25.0 of 25" in page
    result["answers"]["notes"] = []
    assert 'id="answer-notes"' not in render_html(result)


def test_markdown_open_model_and_missing_figures():
    result = synthetic_find_result("open", monitor=False)
    for s in result["steps"]:
        s.pop("p95_ms")
        s["service"] = {}
    table = _md_table(render_markdown(result))
    assert table[0][1] == "Rate (req/s)"
    assert all(r[5] == "–" and r[8] == "–" for r in table[2:])


def test_sentences_said_when_the_search_wrote_none(find_result):
    result = json.loads(json.dumps(find_result))
    result["answers"].pop("text")
    md = render_markdown(result)
    assert "It runs best at" in md and "It broke its SLO at 24 users" in md


# -- HTML structure --------------------------------------------------------------------------


def _chart_specs(page: str) -> list[dict[str, Any]]:
    m = re.search(r'<script type="application/json" id="redline-charts">(.*?)</script>', page, re.S)
    assert m, "the chart data is embedded"
    return json.loads(m.group(1))


def test_html_is_self_contained(find_result):
    page = render_html(find_result)
    assert page.startswith("<!doctype html>")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "nothing loaded from outside"
    assert "uPlot" in page and "Leon Sorokin" not in page  # the library, inlined (minified)
    for key in ("throughput", "latency", "optimal", "limit"):
        assert f'id="answer-{key}"' in page
    assert page.index('id="answers"') < page.index('id="charts"')
    specs = _chart_specs(page)
    assert {s["id"] for s in specs} == FIND_CHARTS
    for s in specs:
        assert len(s["data"]) == len(s["series"]) + 1
        assert all(len(col) == len(s["data"][0]) for col in s["data"])
        assert any(v is not None for col in s["data"][1:] for v in col), s["id"]
        assert s["data"][0] == sorted(s["data"][0]), f"{s['id']}: x must ascend for uPlot"
    assert page.count('class="chart"') == len(specs)
    assert page.count("<tr class=") == len(find_result["steps"])


def test_html_escapes_what_it_shows(find_result):
    result = json.loads(json.dumps(find_result))
    result["url"] = "http://x/<script>alert(1)</script>"
    result["steps"][-1]["why"] = '"><img src=x onerror=alert(1)>'
    result["steps"][0]["p50_ms"] = float("nan")
    page = render_html(result)
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    _chart_specs(page)  # still valid JSON without NaN


def test_charts_skip_what_is_not_there():
    result = synthetic_find_result(monitor=False)
    assert {c.id for c in find_charts(result)} == FIND_CHARTS - {"service-cpu", "service-resources"}
    result["usl"] = {"ok": False, "points": 2, "note": "2 load levels, need 3"}
    usl = next(c for c in find_charts(result) if c.id == "usl")
    assert len(usl.series) == 1 and "no USL fit" in usl.note


def test_the_latency_chart_marks_each_steps_transition_that_was_cut():
    """A step's intervals before its judged window (the MSER warm-up cut) are grey points of
    their own on the latency chart; the judged ones and the time between steps are not."""
    from redline.report.charts import latency_chart

    ts = [{"t_s": 0.5 * i, "p50_ms": 1.0, "p99_ms": float(i)} for i in range(1, 13)]
    steps = [
        {"start_s": 0.0, "end_s": 3.0, "judged_from_s": 1.0},  # cuts 0.5 and 1.0
        {"start_s": 4.0, "end_s": 6.0, "judged_from_s": 4.0},  # nothing cut
    ]
    chart = latency_chart(ts, steps)
    assert chart is not None
    cut = chart.data[
        [s.label for s in chart.series].index("p99, cut as transition (not judged)") + 1
    ]
    assert [t for t, v in zip(chart.data[0], cut, strict=True) if v is not None] == [0.5, 1.0]
    assert "MSER" in chart.note
    plain = latency_chart(ts)
    assert plain is not None and len(plain.series) == len(chart.series) - 1 and not plain.note


# -- redline report --------------------------------------------------------------------------


def test_report_command_renders_from_json(tmp_path, find_result):
    src = tmp_path / "find.json"
    src.write_text(json.dumps(find_result))
    html_out, md_out = tmp_path / "r.html", tmp_path / "r.md"
    p = run_cli("report", str(src), "--html", str(html_out), "--markdown", str(md_out))
    assert p.returncode == 0, p.stderr
    assert html_out.read_text().startswith("<!doctype html>")
    assert md_out.read_text() == render_markdown(find_result)
    assert str(html_out) in p.stdout and str(md_out) in p.stdout


@pytest.mark.parametrize(
    "label,content,args,message",
    [
        ("missing file", None, ["--html", "{d}/r.html"], "cannot read"),
        ("not JSON", "{oops", ["--html", "{d}/r.html"], "is not JSON"),
        ("neither result", '{"a": 1}', ["--html", "{d}/r.html"], "neither a find nor a run"),
        ("no output asked", "{}", [], "--html and/or --markdown"),
        ("output directory missing", "{}", ["--html", "{d}/nowhere/r.html"], "does not exist"),
    ],
)
def test_report_command_bad_input(tmp_path, label, content, args, message):
    src = tmp_path / "in.json"
    if content is not None:
        src.write_text(content)
    p = run_cli("report", str(src), *[a.format(d=tmp_path) for a in args])
    assert p.returncode == 2, p.stderr
    assert message in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_load_result_reads_both_kinds(tmp_path, find_result):
    f = tmp_path / "f.json"
    f.write_text(json.dumps(find_result))
    assert load_result(f)["answers"] == find_result["answers"]


# -- the run report, from a real run ---------------------------------------------------------


class _Hello(http.server.BaseHTTPRequestHandler):
    """_Hello answers every GET with 200 and counts what it served."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in two writes
    served = 0

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        type(self).served += 1
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def run_result() -> Iterator[dict[str, Any]]:
    """A real 1.5 s closed-model run (two connections) against a server on 127.0.0.1."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        r = redline.run(
            f"http://127.0.0.1:{srv.server_address[1]}/",
            connections=2,
            duration="1.5s",
            interval="0.25s",
            warmup="0s",
        )
    finally:
        srv.shutdown()
        srv.server_close()
    data = json.loads(r.to_json())
    assert 0 < data["requests"] <= _Hello.served  # what redline counted, the server saw
    yield data


def test_run_report(run_result):
    page = render_run_html(run_result)
    assert f"{run_result['rps']:,.0f} req/s" in page
    specs = _chart_specs(page)
    assert {"throughput", "latency", "load", "errors"} <= {s["id"] for s in specs}
    assert all(c.points() > 0 for c in run_charts(run_result) if c.id != "errors")


def test_write_reports_picks_the_renderer(tmp_path, run_result, find_result):
    write_reports(run_result, tmp_path / "run.html")
    assert 'id="answer-generator"' in (tmp_path / "run.html").read_text()
    write_reports(find_result, tmp_path / "find.html", tmp_path / "find.md")
    assert 'id="answer-optimal"' in (tmp_path / "find.html").read_text()


# -- in a real browser -----------------------------------------------------------------------


def test_find_report_in_chromium(find_result):
    seen = open_in_chromium(render_html(find_result), "find-report")
    assert_drawn(seen, FIND_CHARTS)
    for sentence in find_result["answers"]["text"].values():
        assert sentence in seen["answers"]


def test_run_report_in_chromium(run_result):
    seen = open_in_chromium(render_run_html(run_result), "run-report")
    assert_drawn(seen, {c.id for c in run_charts(run_result)})
    assert "req/s" in seen["answers"]


def test_chromium_test_sees_a_broken_chart(find_result):
    """The browser check must be able to fail: a renderer that throws is caught."""
    page = render_html(find_result).replace("new uPlot(opts", "new uPlotMissing(opts", 1)
    seen = open_in_chromium(page, "broken-report")
    assert seen["errors"] and any("uPlotMissing" in e for e in seen["errors"])


def test_empty_find_result_renders():
    """A search that ended before its first step still gets a report that says so."""
    from redline.analysis import build_answers

    result = {
        "version": 1,
        "model": "open",
        "answers": build_answers([], model="open"),
        "steps": [],
        "timeseries": [],
        "stop": {"condition": "max-time"},
    }
    jsonschema.validate(result, FIND_SCHEMA)
    assert find_charts(result) == []
    assert "No step was measured" in render_markdown(result)
    seen = open_in_chromium(render_html(result), "empty-report")
    assert seen["errors"] == [] and seen["charts"] == []
    assert "No step was measured" in seen["answers"]


@pytest.mark.parametrize(
    "label,model,interval,expect",
    [
        ("the search's own target", "closed", {"t_s": 1.0, "target": 7}, 7.0),
        ("open model: the intended rate", "open", {"t_s": 1.0, "intended_rate": 300.0}, 300.0),
        ("closed model: the step covering it", "closed", {"t_s": 1.0}, 4.0),
        ("between steps: a gap", "closed", {"t_s": 3.0}, None),
    ],
)
def test_load_chart_reads_the_load_held(label, model, interval, expect):
    from redline.report.charts import load_chart

    steps = [{"index": 0, "load": 4.0, "start_s": 0.0, "end_s": 2.0}]
    inside = {"t_s": 0.5, "target": 4.0}
    chart = load_chart([inside, {**interval, "active_connections": 4}], steps, model)
    assert chart is not None and chart.data[1] == [4.0, expect]
    assert chart.series[0].span_gaps is False


def test_run_writes_its_html_report(tmp_path, target):
    """`redline run --report FILE.html` writes the run's page with the figures it printed and
    the --json holds; the server counted what the report says was answered."""
    before = target.stats()["requests"]
    page, doc = tmp_path / "run.html", tmp_path / "run.json"
    out = run_cli(
        "run",
        target.url + "/",
        "-c",
        "2",
        "-d",
        "1s",
        "-q",
        "--json",
        str(doc),
        "--report",
        str(page),
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(doc.read_text())
    assert data["requests"] == target.stats()["requests"] - before
    html = page.read_text()
    assert f"{data['rps']:,.0f} req/s" in html
    assert 'id="answer-generator"' in html
    bad = run_cli("run", target.url + "/", "-d", "1s", "--report", str(tmp_path / "no/x.html"))
    assert bad.returncode == 2 and "--report: directory" in bad.stderr


def test_an_outage_is_named_in_the_notes(find_result):
    from redline.report.render import notes

    result = json.loads(json.dumps(find_result))
    result["outages"] = [{"start_s": 2.01, "end_s": 4.03, "error_class": "connect", "errors": 67}]
    said = " ".join(notes(result))
    assert "stopped answering at 2.01 s (connect: 67 errors) and came back at 4.03 s" in said
    result["outages"] = []
    assert "stopped answering" not in " ".join(notes(result))


# -- tallies (what the service said) ---------------------------------------------------------


def _tallied_timeseries(values: int = 3) -> list[dict[str, Any]]:
    """Four 0.5 s intervals of a status poll tallied by its answer: RUNNING falls as
    SUCCEEDED rises, plus ``values`` - 2 rarer values (one answer each per interval)."""
    ts = []
    for i in range(4):
        tally = {"RUNNING": 40 - 10 * i, "SUCCEEDED": 10 * i}
        tally.update({f"rare{k}": 1 for k in range(values - 2)})
        tally = {k: v for k, v in tally.items() if v}
        ts.append({"t_s": 0.5 * (i + 1), "names": {"status": {"tally": tally}, "get": {}}})
    return ts


def test_a_tally_is_charted_over_time_in_answers_a_second():
    from redline.report.charts import TALLY_SERIES, tally_charts

    (chart,) = tally_charts(_tallied_timeseries())
    assert chart.id == "tally-status" and "status" in chart.title
    labels = [s.label for s in chart.series]
    assert labels == ["RUNNING", "SUCCEEDED", "rare0"]
    assert chart.data[0] == [0.5, 1.0, 1.5, 2.0]
    assert chart.data[1] == [80.0, 60.0, 40.0, 20.0]  # 40, 30, 20, 10 in 0.5 s
    assert chart.data[2] == [0.0, 20.0, 40.0, 60.0]
    # Past TALLY_SERIES values the rarest are one line, their sum.
    (many,) = tally_charts(_tallied_timeseries(values=TALLY_SERIES + 5))
    assert len(many.series) == TALLY_SERIES + 1
    assert many.series[-1].label == "5 other values"
    assert many.data[-1] == [10.0] * 4  # five values, one answer each, per 0.5 s
    assert tally_charts([{"t_s": 1.0, "names": {"get": {}}}]) == []


def test_a_tally_is_in_the_run_report_the_find_report_and_the_terminal_table(find_result):
    from redline.scenario.table import render as render_table

    tally = {"RUNNING": 300, "SUCCEEDED": 100}
    entry = {"requests": 400, "errors": 0, "latency_ms": {}, "tally": tally}
    run = {"rps": 1.0, "per_name": {"status": entry}, "timeseries": _tallied_timeseries()}
    page = render_run_html(run)
    assert "RUNNING 300 (75%) · SUCCEEDED 100 (25%)" in page
    assert "tally-status" in {s["id"] for s in _chart_specs(page)}
    found = {**find_result, "run": {**find_result.get("run", {}), "per_name": {"status": entry}}}
    assert "- **status**: RUNNING 300 (75%) · SUCCEEDED 100 (25%)" in render_markdown(found)
    assert 'id="tally"' in render_html(found)
    table = render_table({"duration_s": 1.0, "per_name": {"status": entry}})
    assert re.search(r"status\s+RUNNING\s+300\s+75.0%", table), table


def test_report_command_writes_a_runs_markdown(tmp_path, run_result):
    """``redline report run.json --markdown`` (once refused): the summary the run printed and
    its figures, which the server's count holds (the fixture)."""
    from redline.report.summary import render
    from redline.runs.result import Result

    src, md = tmp_path / "run.json", tmp_path / "run.md"
    src.write_text(json.dumps(run_result))
    p = run_cli("report", str(src), "--markdown", str(md))
    assert p.returncode == 0, p.stderr
    text = md.read_text()
    assert text.startswith(f"# redline run report: GET {run_result['url']}")
    assert render(Result(run_result)) in text
    assert f"{run_result['requests']} requests in" in text
