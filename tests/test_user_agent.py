"""Every request carries ``User-Agent: redline/VERSION`` unless the user gave one (a URL run's
and a scenario's), as the server that received them saw it."""

from __future__ import annotations

import textwrap
from collections import Counter

import redline
from conftest import run_cli


def test_a_url_run_says_who_it_is_unless_told(http1_server):
    url, seen = http1_server.url.rstrip("/"), http1_server.agents
    mine = f"redline/{redline.__version__}"
    assert run_cli("run", url + "/", "-n", "10", "-c", "1", "-q").returncode == 0
    assert seen == Counter({mine: 10})
    seen.clear()
    p = run_cli("run", url + "/", "-n", "10", "-c", "1", "-q", "-H", "User-Agent: probe/1")
    assert p.returncode == 0, p.stderr
    assert seen == Counter({"probe/1": 10}), "the user's header alone, once"


def test_a_scenarios_requests_say_who_they_are(http1_server, tmp_path):
    url, seen = http1_server.url.rstrip("/"), http1_server.agents
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
