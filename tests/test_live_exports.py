"""Tests for redline.live's exports: the Prometheus endpoint against the final report and the
target's own count (per name, tallies, --linger), OTLP to a local collector, and the CLI's
refusals of bad live flags."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
import redline
from conftest import CLI_TIMEOUT_S, run_cli
from live_support import (
    WAIT_S,
    Cli,
    assert_exact_within_the_histogram,
)
from prometheus_client.parser import text_string_to_metric_families
from redline.live.metrics import BOUNDS_S, OUTCOMES
from redline.live.otlp import request_methods


def _scrape(url: str) -> dict[str, Any]:
    text = urllib.request.urlopen(url, timeout=WAIT_S).read().decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_prometheus_counters_equal_the_report_and_linger(target, tmp_path):
    """A run with status errors: at the end the counters equal the JSON result's totals and
    the target's own count, the histogram is cumulative with ``_count`` the answered
    requests and buckets equal to the report's merged histogram; the endpoint serves during
    --linger and is gone once the process exits."""
    out = tmp_path / "run.json"
    before = target.stats()["requests"]
    cli = Cli(
        "run", f"{target.url}/?status=500&p=0.2", "-c", "2", "-d", "1s", "--interval", "0.2s",
        "--prometheus", "0", "--linger", "1.5s", "--json", str(out), "-q",
    )  # fmt: skip
    try:
        url = cli.wait_line(r"Prometheus metrics at (\S+)").group(1)
        cli.wait_line("serving the final figures")
        lingering_at = time.monotonic()
        families = _scrape(url)
        code, _, err = cli.finish()
        exited_at = time.monotonic()
    finally:
        cli.kill()
    assert code == 0, err
    result = json.loads(out.read_text())
    served = target.stats()["requests"] - before
    (name,) = result["per_name"]
    requests = {
        s.labels["outcome"]: s.value
        for s in families["redline_requests"].samples
        if s.name == "redline_requests_total"
    }
    assert {s.labels["name"] for s in families["redline_requests"].samples} == {name}
    assert set(requests) == set(OUTCOMES)
    answered = requests["ok"] + requests["status"] + requests["check"]
    assert answered == result["requests"] == served
    assert requests["status"] == result["errors"]["status"] > 0
    assert sum(v for k, v in requests.items() if k != "ok") == result["errors_total"]
    for cls, n in result["errors"].items():
        assert requests[cls] == n, cls
    responses = {
        s.labels["code"]: s.value
        for s in families["redline_responses"].samples
        if s.name == "redline_responses_total"
    }
    assert responses == result["status_codes"] and set(responses) == {"200", "500"}
    assert sum(responses.values()) == served
    assert families["redline_intended"].samples[0].value == result["intended"]
    assert families["redline_run_done"].samples[0].value == 1
    # Closed model, -c 2: the users are the connections open at the last interval, both or
    # (once the run has closed them) none; never the open model's None or another count.
    assert families["redline_vus"].samples[0].value in (0.0, 2.0)
    hist = {s.name: s for s in families["redline_request_duration_seconds"].samples}
    buckets = [
        (float(s.labels["le"]), s.value)
        for s in families["redline_request_duration_seconds"].samples
        if s.name.endswith("_bucket")
    ]
    counts = [v for _, v in buckets]
    assert counts == sorted(counts)
    assert buckets[-1] == (float("inf"), result["requests"])
    assert hist["redline_request_duration_seconds_count"].value == result["requests"]
    # The sum is the engine's exact one; the report's mean is its HdrHistogram's (3 digits).
    mean_s = result["latency_ms"]["mean"] / 1000
    assert hist["redline_request_duration_seconds_sum"].value == pytest.approx(
        mean_s * result["requests"], rel=1e-3
    )
    # The buckets are the engine's exact counts; the report's histogram, read at each bound,
    # cannot tell apart the answers in its bucket that straddles the bound.
    assert [b for b, _ in buckets[:-1]] == list(BOUNDS_S)
    assert_exact_within_the_histogram(
        [int(c) for c in counts[:-1]], result["histograms"]["latency"]
    )
    by_code = {s.labels["code"]: s.value for s in families["redline_responses"].samples}
    assert sum(by_code.values()) == counts[-1]
    # --linger 1.5s: served that long after the run, then gone.
    assert exited_at - lingering_at >= 1.0
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=WAIT_S)


def _scrape_a_run(
    target: redline.Target, tmp_path: Any, scenario: str, *argv: str
) -> tuple[dict[str, Any], dict[str, Any], dict[str, int]]:
    """_scrape_a_run runs a scenario against the target with ``--prometheus`` and a linger,
    scrapes the final figures while it lingers, and returns the metric families, the JSON
    result and what the server counted meanwhile."""
    out = tmp_path / "run.json"
    before = target.stats()
    cli = Cli(
        "run", scenario, "--host", target.url, *argv, "--interval", "0.25s",
        "--prometheus", "0", "--linger", "1s", "--json", str(out), "-q",
    )  # fmt: skip
    try:
        url = cli.wait_line(r"Prometheus metrics at (\S+)").group(1)
        cli.wait_line("serving the final figures")
        families = _scrape(url)
        code, _, err = cli.finish()
    finally:
        cli.kill()
    assert code == 0, err
    seen = {k: v - before[k] for k, v in target.stats().items()}
    return families, json.loads(out.read_text()), seen


def test_prometheus_counts_a_scenario_per_name(target, tmp_path):
    """A scenario run (the survey: a form, its post and the redirect): one series per
    request name, each name's counters the sum of the intervals' own and what the server
    served (its form pages, posts and thank-you pages), ``_count`` its answered requests."""
    families, result, seen = _scrape_a_run(
        target, tmp_path, "examples/survey.py", "-u", "4", "-d", "1.5s"
    )
    answered: dict[str, float] = {}
    for sample in families["redline_requests"].samples:
        if sample.labels["outcome"] in ("ok", "status", "check"):
            name = sample.labels["name"]
            answered[name] = answered.get(name, 0) + sample.value
    assert set(answered) == set(result["per_name"])
    for name in answered:
        intervals = sum(s["names"][name]["requests"] for s in result["timeseries"])
        assert answered[name] == intervals >= result["per_name"][name]["requests"], name
    assert answered["form"] == seen["form_pages"] > 0
    assert answered["post"] + answered["post+thanks"] == seen["forms_posted"]
    assert answered["post+thanks (redirect)"] == seen["thanks_pages"]
    counts = {
        s.labels["name"]: s.value
        for s in families["redline_request_duration_seconds"].samples
        if s.name.endswith("_count")
    }
    assert counts == answered
    # By status code: each name's answers add up, and the redirect to /thanks is a 200.
    coded: dict[str, dict[str, float]] = {}
    for sample in families["redline_responses"].samples:
        coded.setdefault(sample.labels["name"], {})[sample.labels["code"]] = sample.value
    assert {n: sum(c.values()) for n, c in coded.items()} == answered
    assert coded["post+thanks (redirect)"] == {"200": seen["thanks_pages"]}


TALLIED = """\
from redline.scenario import Scenario, json_eq, json_in
s = Scenario(users=3)
@s.flow
def f(u):
    tid = u.post("/tasks/submissions", json={"type": "factorial"}, name="submit",
                 status=202).json("$.id")
    u.poll(f"/tasks/submissions/{tid}", name="status", every=0, timeout="5s",
           until=json_in("$.status", ["SUCCEEDED", "FAILED"]),
           checks=[json_eq("$.status", "SUCCEEDED")], tally="$.status")
"""


def test_prometheus_exports_a_tally_as_the_report_and_the_server_count_it(target, tmp_path):
    """``tally="$.status"``: ``redline_tally_total{name, value}`` counts the status polls by
    what they answered, equal to the report's tally and to the RUNNING answers the task app
    counted; the live page's per-name rows carry it."""
    scenario = tmp_path / "tally.py"
    scenario.write_text(TALLIED)
    families, result, seen = _scrape_a_run(target, tmp_path, str(scenario), "-d", "1.5s")
    exported = {
        (s.labels["name"], s.labels["value"]): s.value for s in families["redline_tally"].samples
    }
    assert families["redline_tally"].type == "counter"
    running = seen["tasks_running"]
    served = {
        ("status", "RUNNING"): running,
        ("status", "SUCCEEDED"): seen["tasks_polled"] - running,
    }
    # A poll still out when the run ended (unfinished) was answered by the server and by no
    # one in the run: the server's count may exceed the tally by that many, never fall short.
    # A shortfall with nothing unfinished (CI's ci21: 2,006 SUCCEEDED polls served, 2,005
    # exported) was an answer that landed just after the reporter took the last full
    # interval, so in the report's totals but in no interval: see the engine's last_interval.
    assert set(exported) == set(served), (exported, served)
    short = {k: served[k] - exported[k] for k in served}
    assert min(short.values()) >= 0 and sum(short.values()) <= result["unfinished"], (
        short,
        result["unfinished"],
    )
    assert 0 < running and exported[("status", "SUCCEEDED")] > 0
    assert {v: n for (_, v), n in exported.items()} == result["per_name"]["status"]["tally"]


class OtlpReceiver:
    """OtlpReceiver is a local OpenTelemetry collector stand-in: OTLP/HTTP on 127.0.0.1,
    port 0, keeping each ExportMetricsServiceRequest it is sent to /v1/metrics."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2 as pb

        received = self.requests = []  # type: list[Any]

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                msg = pb.ExportMetricsServiceRequest()
                msg.ParseFromString(body)
                received.append((self.path, self.headers.get("Content-Type"), msg))
                reply = pb.ExportMetricsServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(WAIT_S)


def _otlp_metrics(msg: Any) -> dict[str, Any]:
    return {m.name: m for rm in msg.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}


def test_otlp_export_equals_the_report(target, tmp_path):
    """``--otlp``: a local collector is sent OTLP/HTTP protobuf during the run
    (OTEL_METRIC_EXPORT_INTERVAL=300 ms) and once more at the end; the last export's
    http.client.request.duration (seconds, by the semantic conventions) counts the answered
    requests, its buckets are the Prometheus ones, and redline.requests by outcome equals
    the JSON result and what the target served."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the otlp extra")
    receiver = OtlpReceiver()
    out = tmp_path / "run.json"
    before = target.stats()["requests"]
    env = dict(os.environ, OTEL_METRIC_EXPORT_INTERVAL="300")
    try:
        r = subprocess.run(
            [
                sys.executable, "-m", "redline", "run", f"{target.url}/?status=500&p=0.2",
                "-c", "2", "-d", "1.5s", "--interval", "0.25s", "--otlp", receiver.url,
                "--json", str(out), "-q",
            ],
            capture_output=True, text=True, timeout=CLI_TIMEOUT_S, env=env,
        )  # fmt: skip
    finally:
        receiver.close()
    assert r.returncode == 0, r.stderr
    assert f"OTLP metrics to {receiver.url}/v1/metrics every 0.3s" in r.stderr
    served = target.stats()["requests"] - before
    result = json.loads(out.read_text())
    assert len(receiver.requests) >= 3  # during the run, and the final figures
    assert {(p, t) for p, t, _ in receiver.requests} == {("/v1/metrics", "application/x-protobuf")}
    metrics = _otlp_metrics(receiver.requests[-1][2])
    assert metrics["http.client.request.duration"].unit == "s"
    # One data point per status code, as the conventions split the duration, each counting
    # the report's answers with that code.
    points = {}
    for point in metrics["http.client.request.duration"].histogram.data_points:
        attrs = {a.key: a.value for a in point.attributes}
        assert attrs["http.request.method"].string_value == "GET"
        assert attrs["server.address"].string_value == "127.0.0.1"
        assert attrs["server.port"].int_value == int(target.url.rsplit(":", 1)[1])
        assert attrs["redline.request.name"].string_value == "GET /"
        code = attrs["http.response.status_code"].int_value
        assert (
            attrs["error.type"].string_value == "500" if code == 500 else "error.type" not in attrs
        )
        assert point.count == sum(point.bucket_counts)
        assert list(point.explicit_bounds) == list(BOUNDS_S)
        points[str(code)] = point
    assert {c: p.count for c, p in points.items()} == result["status_codes"]
    assert set(points) == {"200", "500"}
    assert sum(p.count for p in points.values()) == result["requests"] == served
    # The engine counts each code's latencies in the exporters' buckets, exactly at the
    # bounds; the run's HdrHistogram reads them within its precision.
    cumulative = [
        sum(sum(p.bucket_counts[: i + 1]) for p in points.values()) for i in range(len(BOUNDS_S))
    ]
    assert_exact_within_the_histogram(cumulative, result["histograms"]["latency"])
    total_s = sum(p.sum for p in points.values())
    assert total_s == pytest.approx(result["latency_ms"]["mean"] / 1000 * served, rel=1e-3)
    outcomes = {}
    for p in metrics["redline.requests"].sum.data_points:
        a = {x.key: x.value.string_value for x in p.attributes}
        outcomes[a["redline.outcome"]] = p.as_int
        assert a.get("error.type", "ok") == a["redline.outcome"]
    assert outcomes["status"] == result["errors"]["status"] > 0
    assert outcomes["ok"] + outcomes["status"] == result["requests"]
    assert metrics["redline.requests"].sum.is_monotonic
    assert metrics["redline.intended"].sum.data_points[0].as_int == result["intended"]


def test_otlp_names_a_scenarios_methods_and_status_codes(target, tmp_path):
    """A scenario over ``--otlp`` (the survey: a GET form, a POST answered 302, a POST whose
    302 is followed to a 200): each name's duration points carry its method from the plan and
    one point per status code, counting what the JSON result counted; the redirect's
    follow-up, whose method depends on the status, carries none."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the otlp extra")
    receiver = OtlpReceiver()
    out = tmp_path / "run.json"
    try:
        r = subprocess.run(
            [
                sys.executable, "-m", "redline", "run", "examples/survey.py", "--host",
                target.url, "-u", "4", "-d", "1.5s", "--interval", "0.25s", "--otlp",
                receiver.url, "--json", str(out), "-q",
            ],
            capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
            env=dict(os.environ, OTEL_METRIC_EXPORT_INTERVAL="300"),
        )  # fmt: skip
    finally:
        receiver.close()
    assert r.returncode == 0, r.stderr
    result = json.loads(out.read_text())
    metrics = _otlp_metrics(receiver.requests[-1][2])
    got: dict[tuple[str, str | None, int], int] = {}
    for point in metrics["http.client.request.duration"].histogram.data_points:
        attrs = {a.key: a.value for a in point.attributes}
        method = (
            attrs["http.request.method"].string_value if "http.request.method" in attrs else None
        )
        key = (
            attrs["redline.request.name"].string_value,
            method,
            attrs["http.response.status_code"].int_value,
        )
        got[key] = point.count
    assert set(got) == {
        ("form", "GET", 200),
        ("post", "POST", 302),
        ("post+thanks", "POST", 302),
        ("post+thanks (redirect)", None, 200),
    }, got
    for name, entry in result["per_name"].items():
        counted = sum(n for (who, _, _), n in got.items() if who == name)
        intervals = sum(s["names"][name]["requests"] for s in result["timeseries"])
        assert counted == intervals >= entry["requests"] > 0, name


def test_request_methods_of_a_plan():
    plan = {
        "flows": [
            {"steps": [
                {"step": "request", "name": "a", "method": "get"},
                {"step": "group", "name": "g", "steps": [
                    {"step": "request", "name": "b", "method": "POST"},
                    {"step": "request", "name": "b", "method": "PUT"},
                    {"step": "request", "name": "c", "method": "DELETE"},
                    {"step": "request", "name": "c", "method": "DELETE"},
                ]},
                {"step": "think", "name": "not a request", "method": "GET"},
            ]}
        ]
    }  # fmt: skip
    assert request_methods(plan) == {"a": "GET", "c": "DELETE"}


def test_otlp_refuses_a_bad_url(target):
    r = run_cli("run", target.url, "-d", "0.2s", "--otlp", "collector:4318")
    assert r.returncode == 2 and "--otlp: expected http(s)://" in r.stderr, r.stderr


@pytest.mark.parametrize(
    "label,args,message",
    [
        ("not an address", ["--web", "nope"], "--web: expected [HOST:]PORT"),
        ("a public page, no token", ["--web", "0.0.0.0:0"], "needs --web-token"),
        ("linger alone", ["--linger", "5s"], "--linger and --web-token go with --web or"),
        ("a bad linger", ["--prometheus", "0", "--linger", "soon"], "--linger: expected a"),
    ],
)
def test_cli_refuses_bad_live_flags(target, label, args, message):
    r = run_cli("run", target.url, "-d", "0.2s", *args)
    assert r.returncode == 2, (label, r.stderr)
    assert message in r.stderr and "Traceback" not in r.stderr, (label, r.stderr)
