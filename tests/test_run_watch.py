"""--watch on a run (issue 34): ``redline run URL`` and ``redline run SCENARIO.py`` watch the
deployment's parts beside the load, as ``redline find`` does: each part's samples and its
figures over the run in the JSON's ``parts``, said under the summary. Truth: an exporter
whose pool holds 7 of 10 and a listener on a known port; the server's own count of the
requests."""

from __future__ import annotations

import json
import os
import textwrap
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import jsonschema
import redline
from conftest import run_cli
from redline.report.charts import run_charts
from redline.report.summary import render
from test_parts import _Exporter

POOL = 'pool:app_conns{host="a"}'
SCHEMA = json.loads(
    (Path(__file__).parent.parent / "docs" / "schema" / "result.schema.json").read_text()
)


def served(target: redline.Target) -> int:
    """served: the requests the target has answered so far (its own /__stats)."""
    with urllib.request.urlopen(target.url.rstrip("/") + "/__stats", timeout=10) as r:
        return int(json.loads(r.read())["requests"])


def test_a_run_watches_its_parts_and_keeps_them_in_the_result(target, serve_http):
    exporter = serve_http(_Exporter)
    port = urlsplit(target.url).port
    before = served(target)
    result = redline.run(
        target.url + "/?latency=20ms",
        connections=4,
        duration="2500ms",
        watch=[
            f"api=port:{port}",
            f"api=pid:{os.getpid()}",
            f"db=prometheus:{exporter}",
        ],
    )
    assert served(target) - before == result.requests > 0
    jsonschema.validate(result.data, SCHEMA)
    parts = result.data["parts"]
    assert parts["specs"] == {
        "api": [f"port:{port}", f"pid:{os.getpid()}"],
        "db": [f"prometheus:{exporter}"],
    }
    # One sample a second each, on the run's clock.
    assert len(parts["series"]["api"]) >= 2 and len(parts["series"]["db"]) >= 2
    times = [s["t_s"] for s in parts["series"]["db"]]
    assert times == sorted(times) and 0 <= times[0] < 2, times
    over = parts["over_run"]
    assert over["db"][POOL] == 7 and over["db"][POOL.replace("pool:", "pool_limit:")] == 10
    assert over["api"]["accept_queue_limit"] > 0 and "cpu_percent" in over["api"]
    said = render(result)
    assert "Watched parts, over the run:" in said
    assert "\n  db: " in said and 'pool app_conns{host="a"} held 7.0 of 10;' in said
    assert "pool app_workers held 4.0 of 4 (ran out)" in said
    assert "api: CPU" in said and "accept queue" in said
    # Each interval carries each part's figures over it, charted on the load's time axis.
    ts = result.data["timeseries"]
    assert all("parts" in row for row in ts)
    pools = [row["parts"]["db"][POOL] for row in ts if "db" in row["parts"]]
    assert pools and set(pools) == {7.0}, pools
    charts = {c.id: c for c in run_charts(result.data)}
    assert {"part-api", "part-db"} <= set(charts), sorted(charts)
    assert charts["part-db"].data[0] == charts["throughput"].data[0]
    labels = [s.label for s in charts["part-db"].series]
    assert 'pool app_conns{host="a"} %' in labels and "pool app_workers %" in labels, labels
    drawn = charts["part-db"].data[1 + labels.index('pool app_conns{host="a"} %')]
    assert {v for v in drawn if v is not None} == {70.0}, drawn
    assert charts["part-api"].extra == {"small": True}


def test_a_run_without_watch_has_no_parts(target):
    result = redline.run(target.url, connections=2, requests=20)
    assert "parts" not in result.data and "Watched parts" not in render(result)


def test_a_scenario_run_watches_from_the_command_line(target, serve_http, tmp_path):
    exporter = serve_http(_Exporter)
    flow = tmp_path / "flow.py"
    flow.write_text(
        textwrap.dedent(
            """\
            from redline.scenario import Scenario

            scenario = Scenario(host="http://127.0.0.1:1", users=2, duration="2s")

            @scenario.flow
            def read(u):
                u.get("/?latency=10ms", name="read")
            """
        )
    )
    before = served(target)
    p = run_cli(
        "run",
        str(flow),
        "--host",
        target.url.rstrip("/"),
        "--quiet",
        "--json",
        "-",
        "--watch",
        f"db=prometheus:{exporter}",
    )
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert served(target) - before == data["requests"] > 0
    assert data["parts"]["over_run"]["db"][POOL] == 7
    assert "Watched parts, over the run:" in p.stderr


def test_a_bad_watch_is_one_line_before_any_load(target):
    before = served(target)
    p = run_cli("run", target.url, "-d", "1s", "--watch", "api=pid:x")
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "--watch api=pid:x: pid takes a number" in p.stderr
    assert served(target) == before
    # With --vary (616f5a8), a spec's placeholders are checked before any configuration starts.
    p = run_cli(
        "run", target.url, "--vary", "N=1,2", "--monitor-cmd", "true {N}",
        "--watch", "a=pid:{M}", "-d", "1s",
    )  # fmt: skip
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "--watch a=pid:{M}: unknown placeholder {M}" in p.stderr, p.stderr
    assert served(target) == before
