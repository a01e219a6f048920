"""A scenario's HTML report says what ran (redline/report/run_parts.py): its file and host,
its iterations and groups, its failures by status and reason, and charts over the run's own
window with no 0 ms where nothing was answered. Against the bundled target, whose own count
holds the figures."""

from __future__ import annotations

import json
import re
import textwrap

import redline
from conftest import run_cli

SCENARIO = """\
from redline.scenario import Scenario

scenario = Scenario(users=2, duration="2s")


@scenario.flow
def shop(u):
    with u.group("browse"):
        u.get("/?latency=5ms", name="home")
        u.get("/?status=500&p=0.5", name="flaky")
"""


def page_charts(page: str) -> dict[str, dict]:
    m = re.search(r'<script type="application/json" id="redline-charts">(.*?)</script>', page)
    assert m, "the page embeds its charts"
    return {c["id"]: c for c in json.loads(m.group(1))}


def test_a_scenario_report_says_what_ran(tmp_path):
    path = tmp_path / "shop.py"
    path.write_text(textwrap.dedent(SCENARIO))
    out, html_path = tmp_path / "r.json", tmp_path / "r.html"
    with redline.Target(threads=1) as t:
        p = run_cli(
            "run", str(path), "--host", t.url, "-q", "--interval", "0.5s", "--json", str(out),
            "--report", str(html_path),
        )  # fmt: skip
        served = t.stats()["requests"]
    doc = json.loads(out.read_text())
    page = html_path.read_text()
    names = doc["per_name"]
    answered = sum(n["requests"] for n in names.values())
    assert p.returncode in (0, 1), p.stderr
    assert answered <= served <= answered + 2 * 2, (answered, served)
    # What ran: the file and the host, not "GET http://...".
    assert f"{path} against {t.url}" in page and "redline scenario report" in page
    it = doc["scenario"]["iterations"]
    assert f"{it['started']:,} started, {it['completed']:,} completed" in page
    assert '<h3 id="groups">' in page and "<td>browse</td>" in page
    # Failures by status and reason, not a bare "N status".
    fails = doc["status_codes"]["500"]
    assert fails > 0 and f"(500 ×{fails:,})" in page, page[:2000]
    (why,) = names["flaky"]["failure_reasons"]
    assert f"<td>flaky</td><td style=\"text-align:left\">{why}</td>" in page
    # Charts: over the run's window (2 s, 0.5 s intervals) and no latency where none answered.
    charts = page_charts(page)
    times = charts["latency"]["data"][0]
    assert max(times) <= 2.0 + 0.5, times
    for series in charts["latency"]["data"][1:]:
        assert all(v is None or v > 0 for v in series), series
