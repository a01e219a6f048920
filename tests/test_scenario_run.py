"""Scenario runs against real servers on 127.0.0.1 (port 0): the bundled test server (form
app, /api/work) and the task queue. Each example file runs briefly; the assertions compare
what redline reported with what the server saw."""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
import redline
from accounting import assert_books
from conftest import run_cli
from taskqueue_server import running_taskqueue, tasks

FULL = json.loads((Path(__file__).parent.parent / "docs/schema/result.schema.json").read_text())
#: SCHEMA: the parts of the result schema a scenario run adds to (the rest is the engine's
#: and tested with plain runs in test_cli.py).
SCHEMA = {
    **FULL,
    "required": ["per_name", "scenario", "errors"],
    "properties": {
        k: FULL["properties"][k] for k in ("per_name", "scenario", "errors", "latency_ms")
    },
}


def run_json(tmp_path: Path, *argv: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path / "r.json"
    p = run_cli("run", *argv, "-q", "--json", str(out))
    doc = json.loads(out.read_text()) if out.exists() else {}
    if doc:
        jsonschema.validate(doc, SCHEMA)
    return p, doc


def test_survey_uses_the_session_cookie_and_the_redirect(tmp_path):
    with redline.Target(threads=1) as t:
        p, doc = run_json(tmp_path, "examples/survey.py", "--host", t.url, "-u", "4", "-d", "2s")
        seen = t.stats()
    assert p.returncode == 0, p.stderr
    names = doc["per_name"]
    # One session per VU: every later request carried the cookie the first GET set.
    assert seen["sessions_issued"] == 4
    assert seen["missing_cookie"] == 0 and seen["forms_invalid"] == 0
    assert seen["form_pages"] == names["form"]["requests"]
    # "post" stops at the 302; "post+thanks" counts its own posts and the followed GET /thanks
    # goes under "post+thanks (redirect)".
    assert seen["forms_posted"] == names["post"]["requests"] + names["post+thanks"]["requests"]
    assert seen["thanks_pages"] == names["post+thanks (redirect)"]["requests"]
    assert names["post+thanks"]["requests"] == seen["thanks_pages"]
    assert doc["status_codes"]["302"] == names["post"]["requests"] + seen["thanks_pages"]
    assert doc["errors_total"] == 0
    it = doc["scenario"]["iterations"]
    assert it["started"] == it["completed"] >= 4 and it["failed"] == 0
    # Each pass of the group holds three to four requests, and the think time (1-2 s) is
    # outside it: a pass is far shorter than an iteration.
    group = doc["scenario"]["groups"]["survey"]
    assert group["requests"] == it["completed"]
    assert group["latency_ms"]["max"] < 1000 <= it["latency_ms"]["min"]
    for words in ("Requests (latency in ms)", "post+thanks", "Groups", "Iterations: "):
        assert words in p.stdout


def test_a_scenario_speaks_http2_when_asked(tmp_path):
    """--http2 --streams reach a scenario run (they were dropped, so it spoke HTTP/1.1): the
    JSON says h2 with the streams asked, and the session cookie and the redirect still work."""
    with redline.Target(threads=1) as t:
        p, doc = run_json(
            tmp_path, "examples/survey.py", "--host", t.url, "-u", "4", "-d", "2s",
            "--http2", "--streams", "2",
        )  # fmt: skip
        seen = t.stats()
    assert p.returncode == 0, p.stderr
    assert (doc.get("protocol"), doc.get("streams")) == ("h2", 2), {
        k: doc.get(k) for k in ("protocol", "connections", "streams")
    }
    assert seen["sessions_issued"] >= 4 and seen["missing_cookie"] == 0
    assert seen["thanks_pages"] == doc["per_name"]["post+thanks (redirect)"]["requests"] > 0
    assert doc["errors_total"] == 0


def test_failed_checks_are_failures_with_reasons_and_thresholds_exit_1(tmp_path):
    path = tmp_path / "checks.py"
    path.write_text(
        textwrap.dedent("""\
        from redline.scenario import Scenario, contains, status
        s = Scenario(users=2, thresholds=["errors<1%"])
        @s.flow
        def f(u):
            u.get("/", name="home", checks=[contains("nope")])
        """)
    )
    with redline.Target(threads=1) as t:
        before = t.stats()["requests"]
        p, doc = run_json(tmp_path, str(path), "--host", t.url, "--iterations", "5")
        served = t.stats()["requests"] - before
    assert p.returncode == 1, p.stderr
    assert "redline: threshold errors<1% failed: errors was 100.00%" in p.stderr
    home = doc["per_name"]["home"]
    # Two VUs, five iterations each, one request per iteration: what the server answered.
    assert home["requests"] == served == 10
    assert home["errors"] == 10 == doc["errors"]["check"]
    assert home["failure_reasons"] == {'body does not contain "nope"': 10}
    assert doc["scenario"]["iterations"]["failed"] == 10


def test_an_expected_error_status_is_not_an_error(tmp_path):
    path = tmp_path / "expect.py"
    path.write_text(
        textwrap.dedent("""\
        from redline.scenario import Scenario
        s = Scenario(users=2)
        @s.flow
        def f(u):
            u.delete("/x?status=404", name="gone", status=(204, 404))
            u.get("/y?status=503", name="down", status=200)
        """)
    )
    with redline.Target(threads=1) as t:
        before = t.stats()["requests"]
        p, doc = run_json(tmp_path, str(path), "--host", t.url, "--iterations", "5")
        served = t.stats()["requests"] - before
    assert p.returncode == 0, p.stderr
    gone, down = doc["per_name"]["gone"], doc["per_name"]["down"]
    assert gone["requests"] + down["requests"] == served == 20
    assert doc["status_codes"] == {"404": 10, "503": 10}
    # The 404s the flow asked for are answers; the 503s it did not are errors, with reasons.
    assert (gone["errors"], gone.get("failure_reasons", {})) == (0, {})
    assert (down["errors"], down["failure_reasons"]) == (10, {"HTTP 503": 10})
    assert doc["errors"]["status"] == 10 == doc["errors_total"]
    assert doc["scenario"]["iterations"]["failed"] == 10


def test_jmeter_style_threads_ramp_up_and_loops(tmp_path):
    with redline.Target(threads=1) as t:
        before = t.stats()["requests"]
        p, doc = run_json(
            tmp_path, "examples/jmeter_style.py", "--host", t.url, "-u", "5", "--iterations", "4"
        )
        served = t.stats()["requests"] - before
    assert p.returncode == 0, p.stderr
    work = doc["per_name"]["work"]
    # Every VU ran exactly its four loops; /api/work fails 10 % of them (500 or 429), each a
    # failure with its reason.
    assert served == 20 == work["requests"]
    assert doc["scenario"]["iterations"]["started"] == 20
    # A run where none of the 20 failed (0.9**20: 12 % of runs) lists no reasons at all.
    assert sum(work.get("failure_reasons", {}).values()) == work["errors"]
    assert set(work.get("failure_reasons", {})) <= {"HTTP 500", "HTTP 429"}


def test_cli_users_replace_the_files_load_shape(tmp_path):
    with redline.Target(threads=1) as t:
        t0 = time.monotonic()
        p, doc = run_json(
            tmp_path, "examples/jmeter_style.py", "--host", t.url, "-u", "4", "--iterations", "1"
        )
        took = time.monotonic() - t0
    # -u replaces the file's whole load shape (its 25 s ramp-up too): 4 VUs at once.
    assert p.returncode == 0, p.stderr
    assert doc["per_name"]["work"]["requests"] == 4
    assert took < 20


def test_ramping_example_with_shorter_stages(tmp_path):
    with redline.Target(threads=1) as t:
        before = t.stats()["requests"]
        p, doc = run_json(tmp_path, "examples/ramping.py", "--host", t.url, "--stages", "1s:4,1s:0")
        served = t.stats()["requests"] - before
    assert p.returncode == 0, p.stderr
    # Up to 4 VUs, each at most one request per 0.5 s, for 2 s: at most 4 * 2 / 0.5 = 16.
    assert 1 <= doc["per_name"]["page"]["requests"] == served <= 16


# -- the task queue ---------------------------------------------------------------------------


@pytest.fixture()
def taskqueue() -> Iterator[str]:
    with running_taskqueue() as url:
        yield url


def test_taskqueue_example_polls_until_done(tmp_path, taskqueue):
    with redline.Target(threads=1) as origin:
        p, doc = run_json(
            tmp_path,
            "examples/taskqueue.py",
            "--host",
            taskqueue,
            "--var",
            f"ORIGIN={origin.url}/",
            "-u",
            "4",
            "-d",
            "3s",
        )
    assert p.returncode == 0, p.stderr
    names = doc["per_name"]
    stored = tasks(taskqueue)
    # Every 202 the client counted is a task the service stored, and nothing more.
    assert names["submit"]["requests"] == len(stored) >= 4
    assert names["submit"]["errors"] == 0
    # Each task was polled at least once; the first poll of a task finds it unfinished or done.
    assert names["status"]["requests"] >= names["result"]["requests"]
    assert names["result"]["errors"] == 0 and doc["errors_total"] == 0
    kinds = {t["type"] for t in stored}
    assert kinds <= {"http-fetch", "factorial"}


def test_taskqueue_failed_task_fails_the_status_check(tmp_path, taskqueue):
    # Fetches from a port where nothing listens fail: the status poll says FAILED.
    with redline.Target(threads=1) as origin:
        dead = origin.url
    # Keep only the http-fetch flow.
    path = tmp_path / "fetch_only.py"
    path.write_text(
        Path("examples/taskqueue.py")
        .read_text()
        .replace(
            "@scenario.flow(weight=1)\ndef factorial(u):\n"
            '    task(u, {"type": "factorial", "n": 1000})\n',
            "",
        )
    )
    assert "factorial(u)" not in path.read_text()
    p, doc = run_json(
        tmp_path,
        str(path),
        "--host",
        taskqueue,
        "--var",
        f"ORIGIN={dead}/",
        "-u",
        "2",
        "--iterations",
        "1",
    )
    assert p.returncode == 0, p.stderr
    status = doc["per_name"]["status"]
    assert status["failure_reasons"] == {'$.status is "FAILED", expected "SUCCEEDED"': 2}
    assert "result" not in doc["per_name"] or doc["per_name"]["result"]["requests"] == 0
    assert [t["status"] for t in tasks(taskqueue)] == ["FAILED", "FAILED"]
    assert doc["scenario"]["iterations"]["failed"] == 2


def test_abort_on_fail_stops_the_run_after_its_window(tmp_path):
    path = tmp_path / "slow.py"
    path.write_text(
        textwrap.dedent("""\
        from redline.scenario import Scenario
        s = Scenario(users=2, duration="30s")
        @s.flow
        def f(u):
            u.get("/?latency=30ms", name="slow")
        """)
    )
    with redline.Target(threads=1) as t:
        t0 = time.monotonic()
        p, doc = run_json(
            tmp_path,
            str(path),
            "--host",
            t.url,
            "--interval",
            "250ms",
            "--threshold",
            "p95<10ms;abort=1s",
        )
        took = time.monotonic() - t0
    assert p.returncode == 1, p.stderr
    assert "redline: threshold p95<10ms failed over the last 1 s (p95 " in p.stderr
    # Every interval is over the bound from the first: the stop comes after about 1 s of
    # the 30 s asked (start-up and the report are a few seconds more at most).
    assert took < 15
    assert 1.0 <= doc["duration_s"] < 5
    assert doc["per_name"]["slow"]["requests"] > 0


def test_a_request_names_abort_threshold_stops_the_run_on_that_name_alone(tmp_path):
    """slow:p95<10ms;abort=1s judges the slow request's own figures live: the run stops after
    about a second although a run-wide p95 bound every request meets holds;
    a name the scenario does not have is one line and exit 2 at its first interval."""
    path = tmp_path / "two.py"
    path.write_text(
        textwrap.dedent("""\
        from redline.scenario import Scenario
        s = Scenario(users=2, duration="30s")
        @s.flow
        def f(u):
            u.get("/?latency=30ms", name="slow")
            for _ in range(4):
                u.get("/", name="fast")
        """)
    )
    with redline.Target(threads=1) as t:
        before = t.stats()["requests"]
        p, doc = run_json(
            tmp_path, str(path), "--host", t.url, "--interval", "250ms",
            "--threshold", "slow:p95<10ms;abort=1s", "--threshold", "p95<100ms;abort=1s",
        )  # fmt: skip
        served = t.stats()["requests"] - before
        bad = run_cli(
            "run", str(path), "--host", t.url, "-q", "--threshold", "nope:p95<1s;abort=1s"
        )
    assert p.returncode == 1, p.stderr
    assert "redline: threshold slow:p95<10ms failed over the last 1 s (p95 " in p.stderr
    assert "p95<100ms failed" not in p.stderr, p.stderr
    assert 1.0 <= doc["duration_s"] < 5
    parts = assert_books(doc)
    assert parts["answered"] + parts["transport"] + parts["unfinished"] == served
    assert bad.returncode == 2, bad.stderr
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and "no request name 'nope' (names: fast, slow;" in lines[0], lines


def test_abort_judges_the_window_as_a_whole(tmp_path):
    # The server freezes for the first 300 ms of every 2 s: the requests that arrive then are
    # all answered at its end, in one or two 250 ms intervals, while the other intervals are
    # fast. Interval by interval the threshold never fails for 2 s running; over any 2 s
    # window about 15% of the requests waited up to 300 ms, so the window's p95 is far over
    # 50 ms and the run stops after its first full window or two, not after 10 s.
    path = tmp_path / "stall.py"
    path.write_text(
        textwrap.dedent("""\
        from redline.scenario import Scenario
        s = Scenario(rate=100, duration="10s")
        @s.flow
        def f(u):
            u.get("/?stall=300ms/2s", name="page")
        """)
    )
    with redline.Target(threads=1) as t:
        before = t.stats()["requests"]
        p, doc = run_json(
            tmp_path,
            str(path),
            "--host",
            t.url,
            "--interval",
            "250ms",
            "--threshold",
            "p95<50ms;abort=2s",
        )
        served = t.stats()["requests"] - before
    assert p.returncode == 1, p.stderr
    m = re.search(
        r"redline: threshold p95<50ms failed over the last 2 s \(p95 ([\d.]+) ms at ([\d.]+) s\):"
        r" the run was stopped",
        p.stderr,
    )
    assert m, p.stderr
    assert float(m[1]) > 50 and 2.0 <= float(m[2]) < 5
    assert 2.0 <= doc["duration_s"] < 5
    # Every request the server saw is in the report: answered, failed or cut off by the stop.
    parts = assert_books(doc)
    assert parts["answered"] + parts["transport"] + parts["unfinished"] == served


def test_request_count_and_url_only_flags(tmp_path):
    with redline.Target(threads=1) as t:
        before = t.stats()["requests"]
        p, doc = run_json(tmp_path, "examples/ramping.py", "--host", t.url, "-u", "2", "-n", "7")
        served = t.stats()["requests"] - before
        bad = run_cli("run", "examples/ramping.py", "--host", t.url, "-m", "POST")
    assert p.returncode == 0, p.stderr
    # -n counts iterations (one request each here) instead of the file's stages.
    assert doc["per_name"]["page"]["requests"] == served == 7
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        "redline: error: -m/--method applies to a URL run; a scenario's requests are in its file"
    )


def test_open_model_summary_names_what_is_scheduled(tmp_path):
    path = tmp_path / "two.py"
    path.write_text(
        textwrap.dedent("""\
        from redline.scenario import Scenario
        s = Scenario()
        @s.flow
        def f(u):
            u.get("/a", name="a")
            u.get("/b", name="b")
        """)
    )
    with redline.Target(threads=1) as t:
        p, doc = run_json(tmp_path, str(path), "--host", t.url, "--rate", "40", "-d", "1s")
        plain = run_cli("run", t.url + "/", "--rate", "40", "-d", "1s")
    assert p.returncode == 0 and plain.returncode == 0, p.stderr + plain.stderr
    # The scenario's rate is iterations (two requests each), the plain run's requests.
    assert doc["scenario"]["iterations"]["started"] == 40
    assert doc["requests"] == 80
    assert "intended 40 iterations/s" in p.stdout, p.stdout
    assert "intended 40 req/s" in plain.stdout, plain.stdout


def test_interval_snapshots_count_iterations_and_names(tmp_path):
    """Each interval of a scenario run carries the iterations that ended in it and each
    request name's counts (what `redline find --throughput NAME|iterations` measures); added
    up they are the run's own per-name totals and what the server served."""
    with redline.Target(threads=1) as t:
        p, doc = run_json(
            tmp_path,
            "examples/survey.py",
            "--host",
            t.url,
            "-u",
            "4",
            "-d",
            "2s",
            "--interval",
            "0.5s",
        )
        seen = t.stats()
    assert p.returncode == 0, p.stderr
    series = doc["timeseries"]
    assert series and all("names" in s and "iterations" in s for s in series)
    for name, total in doc["per_name"].items():
        counted = sum(s["names"][name]["requests"] for s in series)
        assert counted >= total["requests"], name  # the intervals also see the cut-off
        assert sum(s["names"][name]["errors"] for s in series) >= total["errors"], name
    assert sum(s["names"]["form"]["requests"] for s in series) == seen["form_pages"]
    ended = sum(s["iterations"]["completed"] + s["iterations"]["failed"] for s in series)
    it = doc["scenario"]["iterations"]
    assert ended == it["completed"] + it["failed"], (ended, it)


def test_a_scenario_run_shows_its_progress_as_a_url_run_does(tmp_path):
    """Without -q a scenario prints a progress line an interval on stderr (a panel on a
    terminal), as a URL run does: 11 s of a staged run once passed with nothing on screen."""
    with redline.Target(threads=1) as t:
        p = run_cli("run", "examples/survey.py", "--host", t.url, "-u", "2", "-d", "2s")
        seen = t.stats()["requests"]
    assert p.returncode == 0, p.stderr
    lines = [s for s in p.stderr.splitlines() if s.startswith("t=")]
    assert 2 <= len(lines) <= 4, p.stderr
    assert seen > 0 and all("conns=" in s for s in lines), (seen, lines)
