"""Scenarios across hosts: absolute URLs (templates too), a 302 followed to a second server,
per-request timeouts and the per-host figures, compared with what each server counted."""

from __future__ import annotations

import json
import re
import textwrap
import time
from pathlib import Path

import jsonschema
import pytest
import redline
from conftest import run_cli
from redline.scenario import ScenarioError, load

SCHEMA = json.loads((Path(__file__).parent.parent / "docs/schema/result.schema.json").read_text())


def write(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "s.py"
    p.write_text("from redline.scenario import *\n" + textwrap.dedent(body))
    return p


def origin(url: str) -> str:
    """origin: a server's origin as per_host names it (the port always written)."""
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{rest.split('/', 1)[0]}"


def test_a_302_to_a_second_host_is_followed_and_each_server_counts_what_redline_says(tmp_path):
    """The issue's "Done when": a flow across two hosts following a 302's Location to the
    second, both by follow_redirects and by hand (the extracted Location as the next URL):
    each server's own request count equals redline's per-host figure."""
    with redline.Target(threads=1) as a, redline.Target(threads=1) as b:
        to = origin(b.url)
        path = write(
            tmp_path,
            f"""\
            s = Scenario()

            @s.flow
            def hop(u):
                u.get("/redirect?to={to}/landing", name="follow", follow_redirects=True,
                      status=200)
                r = u.get("/redirect", params={{"to": "{to}/x"}}, name="by hand", status=302)
                u.get(r.header("Location"), name="location", timeout="5s", status=200)
                u.get(f"{{u.var('B')}}/y", name="templated", status=200)
            """,
        )
        out = tmp_path / "r.json"
        p = run_cli(
            "run",
            str(path),
            "--host",
            a.url,
            "--var",
            f"B={to}",
            "-u",
            "3",
            "-n",
            "60",
            "--threads",
            "2",
            "--json",
            str(out),
        )
        seen_a, seen_b = a.stats(), b.stats()
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, SCHEMA)
    hosts = doc["per_host"]
    assert sorted(hosts) == sorted([origin(a.url), to])
    # A answered the two 302s of each iteration, B the redirect's GET, the Location and the
    # templated URL: 60 iterations.
    assert seen_a["requests"] == hosts[origin(a.url)]["requests"] == 120
    assert seen_b["requests"] == hosts[to]["requests"] == 180
    assert hosts[origin(a.url)]["errors"] == hosts[to]["errors"] == 0
    names = doc["per_name"]
    assert names["follow (redirect)"]["requests"] == names["location"]["requests"] == 60
    assert doc["requests"] == seen_a["requests"] + seen_b["requests"]
    assert doc["errors_total"] == 0
    assert "Hosts (latency in ms)" in p.stdout
    assert to in p.stdout


def test_a_request_timeout_ends_it_on_its_hosts_books(tmp_path):
    """A request's own timeout ends it long before the run's 30 s, as a timeout booked on the
    host it went to (which saw it), not on the run's host."""
    with redline.Target(threads=1) as a, redline.Target(threads=1) as b:
        path = write(
            tmp_path,
            f"""\
            s = Scenario()

            @s.flow
            def slow(u):
                u.get("{origin(a.url)}/?hang=1", name="hang", timeout="300ms")
            """,
        )
        out = tmp_path / "r.json"
        began = time.monotonic()
        p = run_cli("run", str(path), "--host", b.url, "-u", "1", "-n", "2", "--json", str(out))
        took = time.monotonic() - began
        seen_a, seen_b = a.stats(), b.stats()
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["errors"]["timeout"] == 2, doc["errors"]
    assert doc["per_name"]["hang"]["failure_reasons"] == {"timeout": 2}
    assert (seen_a["requests"], seen_b["requests"]) == (2, 0)
    hang, home = doc["per_host"][origin(a.url)], doc["per_host"][origin(b.url)]
    assert (hang["requests"], hang["errors"]) == (0, 2)
    assert (home["requests"], home["errors"]) == (0, 0)
    assert took < 20, f"{took:.1f} s: the run's 30 s timeout, not the request's"


def test_urls_compile_to_the_plan_and_bad_ones_name_their_line(tmp_path):
    path = write(
        tmp_path,
        """\
        s = Scenario()

        @s.flow
        def a(u):
            r = u.get("http://auth.test:9000/token", timeout="250ms")
            u.get(r.header("Location"), follow_redirects=True)
            u.post("https://[::1]:8443/x", json={"a": 1})
        """,
    )
    steps = load(path).plan["flows"][0]["steps"]
    assert steps[0]["path"] == ["http://auth.test:9000/token"]
    assert steps[0]["timeout_s"] == 0.25
    assert steps[1]["path"] == [{"var": steps[0]["extract"][0]["var"]}]
    assert "timeout_s" not in steps[1]
    assert steps[2]["path"] == ["https://[::1]:8443/x"]
    cases = [
        ('u.get("x/y")', "the URL must be a path starting with '/' or an http:// or https://"),
        ('u.get("//h/x")', "the URL must be a path"),
        ('u.get("ftp://h/x")', "the URL must be a path"),
        ('u.get("/x", timeout="soon")', "timeout: expected a duration"),
        ('u.get("/x", timeout=0)', "timeout must be > 0"),
    ]
    for call, words in cases:
        path = write(tmp_path, f"s = Scenario()\n@s.flow\ndef a(u):\n    {call}\n")
        with pytest.raises(ScenarioError) as e:
            load(path)
        assert str(e.value).startswith(f"{path}:5: "), str(e.value)
        assert words in str(e.value), str(e.value)


def test_a_bad_url_written_out_is_refused_before_any_load(tmp_path, free_port):
    """The engine checks a URL whose origin is written out (a bad port) before the run."""
    path = write(tmp_path, 's = Scenario()\n@s.flow\ndef a(u):\n    u.get("http://h:99999/x")\n')
    p = run_cli("run", str(path), "--host", f"http://127.0.0.1:{free_port}", "-n", "1")
    assert p.returncode == 2, p.stdout + p.stderr
    assert f"{path}:5: bad URL: a bad port" in p.stderr
    assert "Traceback" not in p.stderr


def test_the_hosts_table_shows_only_when_a_run_reached_several():
    from redline.scenario.table import render

    lat = {"mean": 2.0, "min": 1.0, "max": 9.0, "p50": 2.0, "p90": 3.0, "p95": 4.0, "p99": 8.0}
    one = {"requests": 40, "errors": 1, "latency_ms": lat}
    doc = {"duration_s": 2.0, "per_name": {"get": one}, "per_host": {"http://a:1": one}}
    assert "Hosts" not in render(doc)
    doc["per_host"]["http://b:2"] = {**one, "requests": 10, "errors": 0}
    table = render(doc)
    assert "Hosts (latency in ms)" in table
    assert re.search(r"http://a:1\s+40\s+1\s+20\.0\s+2\.00\s+1\.00\s+9\.00", table), table
    assert re.search(r"http://b:2\s+10\s+0\s+5\.0", table), table


def test_stream_times_each_hosts_answers_on_its_own_connection(tmp_path):
    """--stream in a flow across two hosts: each origin's answers are timed on the connection
    they came on, so the events counted are the two servers' own, every answer is counted
    once, and no first byte comes before the slower server's pace."""
    with redline.Target(threads=1) as a, redline.Target(threads=1) as b:
        path = write(
            tmp_path,
            f"""\
            s = Scenario()

            @s.flow
            def two(u):
                u.get("/sse?first=20ms&every=5ms&events=3", name="a")
                u.get("{origin(b.url)}/sse?first=60ms&every=5ms&events=4", name="b")
            """,
        )
        out = tmp_path / "r.json"
        p = run_cli(
            "run", str(path), "--host", a.url, "--stream", "-u", "2", "-n", "6",
            "--json", str(out),
        )  # fmt: skip
        seen_a, seen_b = a.stats(), b.stats()
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, SCHEMA)
    assert (seen_a["stream_responses"], seen_b["stream_responses"]) == (6, 6)
    assert (seen_a["stream_events"], seen_b["stream_events"]) == (18, 24)
    stream = doc["stream"]
    assert stream["responses"] == 12, stream
    assert stream["events"] == stream["chunks"] == 18 + 24, stream
    assert doc["first_byte_ms"]["min"] >= 20 * 0.999, doc["first_byte_ms"]
    # Half the answers are B's, whose first byte is never before 60 ms.
    assert doc["first_byte_ms"]["p99"] >= 60 * 0.999, doc["first_byte_ms"]
    hosts = doc["per_host"]
    assert hosts[origin(a.url)]["requests"] == seen_a["requests"] == 6
    assert hosts[origin(b.url)]["requests"] == seen_b["requests"] == 6
