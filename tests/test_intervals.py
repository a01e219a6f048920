"""``--out json=FILE`` (redline/view/intervals.py): one JSON line an interval, as the run goes,
adding up to the result and to what the server counted."""

from __future__ import annotations

import json

from conftest import run_cli


def test_out_json_writes_each_interval_as_a_line(target, tmp_path):
    log, out = tmp_path / "intervals.ndjson", tmp_path / "r.json"
    before = target.stats()["requests"]
    p = run_cli(
        "run", target.url + "/", "-c", "2", "-d", "1.5s", "--interval", "0.5s", "-q",
        "--out", f"json={log}", "--json", str(out),
    )  # fmt: skip
    served = target.stats()["requests"] - before
    assert p.returncode == 0, p.stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    doc = json.loads(out.read_text())
    assert [s["t_s"] for s in lines] == [s["t_s"] for s in doc["timeseries"]]
    answered = sum(s["requests"] for s in lines)
    assert answered == sum(s["requests"] for s in doc["timeseries"])
    assert answered <= served <= answered + 2, (answered, served)


def test_out_json_to_stdout_and_bad_specs(target):
    p = run_cli("run", target.url + "/", "-n", "20", "-c", "1", "-q", "--out", "json=-")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    assert sum(r["requests"] for r in rows) == 20
    for spec, said in (
        ("csv=x.csv", "--out: expected json=FILE"),
        ("json=", "--out: expected json=FILE"),
    ):
        bad = run_cli("run", target.url + "/", "-n", "5", "--out", spec)
        assert bad.returncode == 2 and said in bad.stderr, bad.stderr
    both = run_cli("run", target.url + "/", "-n", "5", "--out", "json=-", "--json", "-")
    assert both.returncode == 2 and "both write to stdout" in both.stderr
