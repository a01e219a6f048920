"""Data files in scenario runs, against a server that records the row value of every request
it answers: unique rows used once each across threads and (``alone``) across the injectors
of ``--cluster local:3``, ``on_exhausted="stop"`` ending the run when they run out, and
``"error"`` failing the iterations that find none. The assertions hold the server's counts,
not only redline's."""

from __future__ import annotations

import collections
import http.server
import json
import subprocess
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from conftest import run_cli

SCHEMA = json.loads(
    (Path(__file__).resolve().parent.parent / "docs/schema/result.schema.json").read_text()
)


class Recorder(http.server.ThreadingHTTPServer):
    """Recorder answers ``GET /row/VALUE`` with 200 and counts each VALUE it saw."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        server = self.server
        assert isinstance(server, Recorder)
        if self.path.startswith("/row/"):
            with server.lock:
                server.seen[self.path[len("/row/") :]] += 1
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def recorder() -> Iterator[Recorder]:
    server = Recorder()
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        t.join(timeout=10)


def scenario(tmp_path: Path, rows: int, options: str) -> Path:
    """scenario writes a data file of ``rows`` ids and a flow that GETs /row/ID for each."""
    (tmp_path / "ids.csv").write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(rows)))
    path = tmp_path / "rows.py"
    path.write_text(
        textwrap.dedent(
            f"""
            from redline.scenario import Scenario
            s = Scenario()
            s.data("ids", "ids.csv", {options})
            @s.flow
            def f(u):
                u.get("/row/" + u.row("ids")["id"], name="row", status=200)
            """
        )
    )
    return path


def run_rows(
    tmp_path: Path, path: Path, url: str, *argv: str
) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path / "r.json"
    p = run_cli("run", str(path), "--host", url, "--json", str(out), *argv, timeout=300)
    doc = json.loads(out.read_text()) if out.exists() else {}
    if doc:
        jsonschema.validate(doc, SCHEMA)
    return p, doc


def assert_each_row_once(recorder: Recorder, doc: dict, rows: int) -> None:
    seen = recorder.seen
    twice = {k: n for k, n in seen.items() if n > 1}
    assert not twice, f"rows the server saw more than once: {list(twice.items())[:5]}"
    assert set(seen) == {str(i) for i in range(rows)}, "every row, and only the file's"
    assert doc["per_name"]["row"]["requests"] == rows == sum(seen.values())
    data = doc["scenario"]["data"]["ids"]
    assert (data["rows"], data["taken"], data["used_up"]) == (rows, rows, True), data
    assert data["unique"] is True and data["on_exhausted"] == "stop"


def test_unique_rows_once_each_across_threads_and_stop_ends_the_run(tmp_path, recorder):
    rows = 3000
    path = scenario(tmp_path, rows, "unique=True")
    start = time.monotonic()
    p, doc = run_rows(tmp_path, path, recorder.url, "-u", "8", "--threads", "2", "-d", "120s")
    took = time.monotonic() - start
    assert p.returncode == 0, p.stderr
    assert_each_row_once(recorder, doc, rows)
    assert took < 60 and doc["duration_s"] < 60, "stop ended the run long before its 120 s"
    it = doc["scenario"]["iterations"]
    assert it["started"] == it["completed"] == rows and it["failed"] == 0
    assert "3000 of 3000 rows taken; the rows ran out and the run stopped there" in p.stdout


def test_error_fails_the_iterations_with_no_row_left(tmp_path, recorder):
    path = scenario(tmp_path, 5, 'unique=True, on_exhausted="error"')
    p, doc = run_rows(tmp_path, path, recorder.url, "-u", "2", "--threads", "1", "-d", "1s")
    assert sorted(recorder.seen) == [str(i) for i in range(5)]
    assert all(n == 1 for n in recorder.seen.values())
    data = doc["scenario"]["data"]["ids"]
    it = doc["scenario"]["iterations"]
    assert data["used_up"] and data["taken"] == 5 and data["missed"] > 0, data
    assert it["completed"] == 5 and it["failed"] == data["missed"], (it, data)
    assert f"{data['missed']} iterations failed with no row left" in p.stdout


def test_recycle_and_random_reuse_rows(tmp_path, recorder):
    path = scenario(tmp_path, 4, 'order="random"')
    p, doc = run_rows(tmp_path, path, recorder.url, "-u", "2", "--threads", "1", "-n", "400")
    assert p.returncode == 0, p.stderr
    assert set(recorder.seen) == {"0", "1", "2", "3"} and sum(recorder.seen.values()) == 400
    assert all(50 < n < 150 for n in recorder.seen.values()), recorder.seen
    data = doc["scenario"]["data"]["ids"]
    assert (data["taken"], data["used_up"], data["order"]) == (400, False, "random"), data


@pytest.mark.parametrize(
    ("options", "want"),
    [
        ('unique=True, on_exhausted="recycle"', "unique=True uses each row once"),
        ('order="random", on_exhausted="stop"', "order='random' without unique draws"),
        ('on_exhausted="later"', "on_exhausted is 'stop', 'recycle' or 'error'"),
    ],
)
def test_contradictory_options_name_the_line(tmp_path, options, want):
    path = scenario(tmp_path, 3, options)
    p = run_cli("inspect", str(path))
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert f"rows.py:4: data('ids'): {want}" in p.stderr, p.stderr


@pytest.mark.alone
def test_unique_rows_once_each_across_three_injectors(tmp_path, recorder):
    """The issue's case: 10,000 unique rows, three injectors of two threads each: the
    server saw every row once, none twice, and the run stopped when they were used up."""
    rows = 10_000
    path = scenario(tmp_path, rows, "unique=True")
    p, doc = run_rows(
        tmp_path, path, recorder.url,
        "--cluster", "local:3", "-u", "6", "--threads", "2", "-d", "240s",
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert_each_row_once(recorder, doc, rows)
    assert doc["duration_s"] < 200, "stop ended the run before its 240 s"
    shares = [r["requests"] for r in doc["cluster"]["injectors"]]
    assert sorted(shares) == [3333, 3333, 3334], shares
