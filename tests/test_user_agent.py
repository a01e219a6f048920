"""Every request carries ``User-Agent: redline/VERSION`` unless the user gave one (a URL run's
and a scenario's), as the server that received them saw it."""

from __future__ import annotations

import http.server
import textwrap
import threading
from collections import Counter
from collections.abc import Iterator

import pytest
import redline
from conftest import run_cli


class _Agents(http.server.BaseHTTPRequestHandler):
    """_Agents answers 200 and counts the User-Agent headers it received."""

    protocol_version = "HTTP/1.1"
    seen: Counter[str] = Counter()

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        agents = self.headers.get_all("User-Agent") or ["(none)"]
        type(self).seen[" | ".join(agents)] += 1
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def agents() -> Iterator[tuple[str, Counter[str]]]:
    _Agents.seen = Counter()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Agents)
    srv.daemon_threads = True
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", _Agents.seen
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=10)


def test_a_url_run_says_who_it_is_unless_told(agents):
    url, seen = agents
    mine = f"redline/{redline.__version__}"
    assert run_cli("run", url + "/", "-n", "10", "-c", "1", "-q").returncode == 0
    assert seen == Counter({mine: 10})
    seen.clear()
    p = run_cli("run", url + "/", "-n", "10", "-c", "1", "-q", "-H", "User-Agent: probe/1")
    assert p.returncode == 0, p.stderr
    assert seen == Counter({"probe/1": 10}), "the user's header alone, once"


def test_a_scenarios_requests_say_who_they_are(agents, tmp_path):
    url, seen = agents
    path = tmp_path / "ua.py"
    path.write_text(
        textwrap.dedent(
            """\
            from redline.scenario import Scenario

            scenario = Scenario(users=1, iterations=3)


            @scenario.flow
            def f(u):
                u.get("/a", name="a")
                u.get("/b", name="b", headers={"User-Agent": "probe/2"})
            """
        )
    )
    p = run_cli("run", str(path), "--host", url, "-q")
    assert p.returncode == 0, p.stderr
    assert seen == Counter({f"redline/{redline.__version__}": 3, "probe/2": 3}), seen
