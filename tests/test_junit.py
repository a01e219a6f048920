"""``--junit FILE`` (redline/report/junit.py): the thresholds as a JUnit report, one case each
plus the run, failures with the value measured."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from conftest import run_cli


def test_junit_report_has_a_case_per_threshold(target, tmp_path):
    path = tmp_path / "junit.xml"
    before = target.stats()["requests"]
    p = run_cli(
        "run", target.url + "/", "-n", "40", "-c", "2", "-q", "--junit", str(path),
        "--threshold", "p99<60s", "--threshold", "rps>100000000",
    )  # fmt: skip
    assert p.returncode == 1, p.stderr
    assert target.stats()["requests"] - before == 40
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "3" and suite.get("failures") == "1"
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {"run", "threshold p99<60s", "threshold rps>100000000"}
    assert cases["run"].find("failure") is None
    assert cases["threshold p99<60s"].find("failure") is None
    failure = cases["threshold rps>100000000"].find("failure")
    assert failure is not None and "rps was" in (failure.get("message") or "")
    assert "40 requests" in (suite.findtext("system-out") or "")


def test_junit_and_out_are_refused_with_an_experiment():
    for flag, value in (("--junit", "j.xml"), ("--out", "json=o.ndjson")):
        p = run_cli(
            "run", "http://127.0.0.1:{port}/", "--monitor-cmd", "true", "--vary", "a=1,2",
            flag, value,
        )  # fmt: skip
        assert p.returncode == 2, p.stderr
        assert f"{flag} goes with a single run, not an experiment" in p.stderr
