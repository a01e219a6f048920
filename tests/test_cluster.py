"""Tests for redline.cluster against the test server on 127.0.0.1, on one local Ray shared by
the module (its start is the main cost): counts against what the server saw, the books, the
exact merge, the open model's rate across injectors, and a lost injector under each policy.
"""

from __future__ import annotations

import html
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import ray
import redline
import redline.cluster
from accounting import assert_books
from redline import _engine
from redline.cluster.connection import shutdown_ray
from redline.report.render import render_run_html

#: A local Ray (its daemons and injectors) takes the machine's CPUs: make test runs these
#: tests after the parallel part, one Ray at a time.
pytestmark = pytest.mark.alone

SCHEMA = json.loads(
    (Path(__file__).resolve().parent.parent / "docs/schema/result.schema.json").read_text()
)

#: INJECTORS: the local Ray's CPUs, one per injector (the box has 2 cores: keep it small).
INJECTORS = 3


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray for the module; local:N then places its injectors on it."""
    ray.init(num_cpus=INJECTORS, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        shutdown_ray(ray)  # and every process of it: none may outlive the suite


def served(target: redline.Target) -> int:
    return int(target.stats()["requests"])


def quantiles(histogram: str) -> tuple[int, list[int]]:
    return _engine.histogram_quantiles(histogram, [0.0, 0.5, 0.9, 0.99, 0.999, 1.0])


def test_closed_model_over_two_injectors_counts_what_the_server_saw(local_ray, target) -> None:
    before = served(target)
    result = redline.run(
        target.url, connections=4, requests=600, threads=1, interval=0.25, cluster="local:2"
    )
    assert served(target) - before == result.requests == 600
    assert_books(result)
    jsonschema.validate(result.data, SCHEMA)
    page = render_run_html(result.data)
    assert '<h2 id="injectors">' in page
    assert all(html.escape(r["verdict"]) in page for r in result.data["cluster"]["injectors"])
    rows = result.data["cluster"]["injectors"]
    assert len(rows) == 2 and all(r["requests"] == 300 for r in rows), rows
    assert all(r["lost"] is None for r in rows)
    # The merged histogram is the injectors' histograms added bucket for bucket...
    merged = _engine.merge_histograms([r["histogram"] for r in rows])
    assert quantiles(result.data["histograms"]["latency"]) == quantiles(merged)
    count, _ = quantiles(merged)
    assert count == 600
    # ...and the interval snapshots, merged on the way, add up to the same distribution.
    series = result.data["timeseries"]
    assert sum(s["requests"] for s in series) == 600
    # Both report from the start; one whose share of the count ran out sooner ends sooner.
    reported = [s["injectors_reported"] for s in series]
    assert reported[0] == 2 and reported == sorted(reported, reverse=True), reported
    assert all(s["injectors"] == 2 for s in series)
    by_interval = _engine.merge_histograms([s["histogram"] for s in series])
    assert quantiles(by_interval) == quantiles(merged)
    assert result.data["latency_ms"]["p99"] == pytest.approx(
        json.loads(_engine.histogram_summary(merged))["p99"]
    )
    assert "generator kept up on all 2" in result.data["generator"]["verdict"] or (
        "saturated" in result.data["generator"]["verdict"]
    )


def test_open_model_rate_holds_across_three_injectors(local_ray, target) -> None:
    rate, secs = 300.0, 3.0
    before = served(target)
    result = redline.run(
        target.url, rate=rate, duration=secs, threads=1, interval=0.5, cluster=f"local:{INJECTORS}"
    )
    seen = served(target) - before
    assert_books(result)
    # One schedule over three injectors: the server sees R x T requests, give or take the
    # hits cut at the end (each injector's last due hit) and none counted twice.
    assert seen == result.requests + result.data["errors_total"] - result.data["errors"]["status"]
    assert abs(seen - rate * secs) <= INJECTORS + 1, (seen, result.data["intended"])
    assert result.data["generator"]["intended_rate"] == pytest.approx(rate, rel=0.02)
    shares = [r["requests"] for r in result.data["cluster"]["injectors"]]
    assert len(shares) == INJECTORS and max(shares) - min(shares) <= 3, shares
    interior = [s for s in result.data["timeseries"] if 0.5 < s["t_s"] <= secs - 0.5]
    assert interior, "intervals inside the run"
    for s in interior:
        assert s["intended_rate"] == pytest.approx(rate, rel=0.01)


def _config(target: redline.Target, **over: Any) -> dict[str, Any]:
    from redline.runs.runner import build_config

    return {**build_config(target.url, threads=1, interval=0.25), **over}


def _drain(handle: Any, kill_after: int) -> list[dict[str, Any]]:
    snaps: list[dict[str, Any]] = []
    for _ in range(200):  # bounded: a 4 s run at 0.25 s intervals sends ~17
        if handle.done:
            break
        raw = handle.next_snapshot(1.0)
        if raw is None:
            continue
        snaps.append(json.loads(raw))
        if len(snaps) == kill_after:
            ray.kill(handle.feeds[1].member.actor)
    return snaps


def test_a_killed_injector_stops_the_run_and_keeps_the_partial_result(local_ray, target) -> None:
    before = served(target)
    handle = redline.cluster.start_run(
        _config(target, connections=3, duration_s=20.0), f"local:{INJECTORS}"
    )
    _drain(handle, kill_after=3)
    doc = json.loads(handle.report())
    failure = doc["cluster"]["failure"]
    assert failure and failure.startswith("injector 1 (") and "died" in failure, failure
    assert doc["interrupted"] is True
    assert doc["duration_s"] < 10.0, "stopped, not run to its 20 s"
    rows = doc["cluster"]["injectors"]
    assert rows[1]["lost"] and all(r["lost"] is None for r in (rows[0], rows[2]))
    # Nothing counted twice: the merged count is at most what the server answered.
    assert 0 < doc["requests"] <= served(target) - before


def test_continue_marks_each_interval_with_the_injectors_that_reported(local_ray, target) -> None:
    before = served(target)
    handle = redline.cluster.start_run(
        _config(target, connections=3, duration_s=3.0),
        f"local:{INJECTORS}",
        on_injector_loss="continue",
    )
    snaps = _drain(handle, kill_after=3)
    doc = json.loads(handle.report())
    assert doc["cluster"]["failure"] is None and doc["interrupted"] is False
    assert len(doc["cluster"]["lost"]) == 1 and "injector 1" in doc["cluster"]["lost"][0]
    assert all(s["injectors"] == INJECTORS for s in doc["timeseries"])
    reported = [s["injectors_reported"] for s in doc["timeseries"]]
    assert reported[:3] == [INJECTORS] * 3, reported
    # After the kill, the two others; the run's last, partial interval may be one's alone
    # (an injector whose send window ended on an interval boundary sends no tail).
    after = reported[5:]
    assert after and all(r == INJECTORS - 1 for r in after[:-1]), reported
    assert after[-1] in (INJECTORS - 2, INJECTORS - 1), reported
    assert [s["injectors_reported"] for s in snaps][:3] == [INJECTORS] * 3
    # The live view names it as soon as it is lost.
    assert any("injector 1 (" in " ".join(s.get("injectors_lost", [])) for s in snaps[4:])
    assert doc["timeseries"][-1]["t_s"] >= 2.9, "the others ran to the end"
    assert 0 < doc["requests"] <= served(target) - before
    # The lost share is named: one of three equal injectors, a third of the load, not
    # handed on; the intervals after the loss count the two left only.
    cluster = doc["cluster"]
    row = cluster["injectors"][1]
    assert row["lost_share"] == pytest.approx(1 / 3, abs=0.01) and 0 < row["lost_at_s"] < 3.0
    assert cluster["lost_share"] == pytest.approx(1 / 3, abs=0.01)
    after = cluster["after_loss"]
    assert after["injectors"] == INJECTORS - 1 and after["from_s"] >= row["lost_at_s"] - 0.25
    tail = [s for s in doc["timeseries"] if s["t_s"] - 0.25 >= after["from_s"] - 1e-9]
    assert after["requests"] == sum(s["requests"] for s in tail) > 0
    from redline.cli.cluster import loss_note

    note = loss_note(cluster) or ""
    assert "injector 1 (" in note and "33 % of the asked load was not offered" in note, note


def test_rebalance_hands_the_lost_share_to_the_others(local_ray, target) -> None:
    rate, secs = 300.0, 4.0
    before = served(target)
    handle = redline.cluster.start_run(
        _config(target, rate=rate, duration_s=secs, open=True),
        f"local:{INJECTORS}",
        on_injector_loss="rebalance",
    )
    snaps = _drain(handle, kill_after=4)  # killed about 1 s in
    doc = json.loads(handle.report())
    assert doc["cluster"]["failure"] is None and len(doc["cluster"]["lost"]) == 1
    # Once rebalanced, the two left carry the whole schedule: R req/s intended and sent.
    late = [s for s in doc["timeseries"] if 2.5 <= s["t_s"] <= secs - 0.2]
    assert late and all(s["injectors_reported"] == INJECTORS - 1 for s in late)
    for s in late:
        assert s["intended_rate"] == pytest.approx(rate, rel=0.02), s["t_s"]
        assert s["achieved_rate"] == pytest.approx(rate, rel=0.15), s["t_s"]
    # What went missing is the gap between the loss and the rebalance, not the rest of the run.
    seen = served(target) - before
    assert 0.8 * rate * secs <= seen <= rate * secs + INJECTORS, seen
    assert doc["requests"] <= seen
    assert len(snaps) >= secs / 0.25 - 1


class _Paths(http.server.BaseHTTPRequestHandler):
    """_Paths answers 200 to every GET and records its path (the values a scenario sent)."""

    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's spelling)
        type(self).seen.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: Any) -> None:
        pass


def test_each_data_row_goes_to_one_injector(local_ray, tmp_path) -> None:
    from redline.cli.scenario import compile_file

    rows = 30
    (tmp_path / "items.csv").write_text("id\n" + "".join(f"row{i}\n" for i in range(rows)))
    script = tmp_path / "rows.py"
    script.write_text(
        "from redline.scenario import Scenario\n"
        "scenario = Scenario(users=3, duration='10s')\n"
        "scenario.data('items', 'items.csv', per='iteration')\n"
        "@scenario.flow()\n"
        "def get(u):\n"
        "    u.get(f\"/item/{u.row('items')['id']}\", name='item')\n"
    )
    compiled = compile_file(str(script), [])
    _Paths.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Paths)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        result = redline.run(
            url,
            plan=compiled.plan,
            connections=3,
            requests=rows,
            threads=1,
            cluster=f"local:{INJECTORS}",
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    # One pass over the file across the cluster: each row's value seen once, none twice.
    assert sorted(_Paths.seen) == sorted(f"/item/row{i}" for i in range(rows))
    assert result.requests == rows


def test_find_on_three_injectors_lands_on_the_capacity_a_local_search_finds(local_ray) -> None:
    # The queue of tests/test_find.py (8 slots x 10 ms: 800 req/s), whose local search finds
    # it within 3 %; through the cluster each step's rate is split over 3 injectors.
    from redline.find.finder import find
    from redline.runs.runner import ClusterOptions

    slots, service_ms = 8, 10.0
    capacity = slots * 1000.0 / service_ms
    with redline.Target(threads=1, capacity=slots, service_time=f"{service_ms}ms") as queue:
        r = find(
            queue.url + "/",
            model="open",
            max_time=75,
            min_step=2.0,
            max_step=6.0,
            confirm=3.0,
            interval=0.5,
            cluster=ClusterOptions(f"local:{INJECTORS}"),
        )
        served = queue.stats()["requests"]
    cap = r["answers"]["limit"]["capacity_rps"]
    assert abs(cap - capacity) <= 0.05 * capacity, (cap, r["stop"])
    # Four Ray processes and the server on two shared cores: the search may end on the
    # machine (its workers waiting for a CPU past the capacity), never on a busy generator.
    if r["generator_limited"]:
        assert "waited for a CPU" in str(r["stop"]), r["stop"]
    counted = sum(s["requests"] + s["errors"] for s in r["timeseries"])
    assert counted <= served <= counted + 1000, (counted, served)
    assert all(s["injectors_reported"] == INJECTORS for s in r["timeseries"])
