"""Tests for redline.experiment's runs at a fixed load (``redline run --vary``: plain and per
request name) and seed 002 end to end: taskqueue with one worker, then two, every process it
started gone after it. (--vary, the ranking and searches against the target server are in
test_experiment.py.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli
from experiment_support import EXAMPLES, TARGET, page_charts, targets_alive, valid
from redline.experiment import run_experiment

# -- redline run --vary: configurations at a fixed load -----------------------------------------


def test_run_vary_compares_the_configurations_at_a_fixed_load(tmp_path):
    """``redline run --vary``: the target with 2 and with 8 slots of 10 ms (capacities 200 and
    800 req/s) run at 16 users for 3 s each, from the command line: each configuration's
    goodput is its capacity, the server served what redline counted, 8 slots are 4x better
    with the interval holding the change, every service is gone, and the outputs are valid."""
    command = f"sh -c 'exec {TARGET} > {tmp_path}/served-{{slots}}.log'"
    p = run_cli(
        "run", "http://127.0.0.1:{port}/", "--monitor-cmd", command, "--vary", "slots=2,8",
        "-c", "16", "-d", "3s", "--interval", "0.5s", "-q",
        "--json", str(tmp_path / "e.json"), "--markdown", str(tmp_path / "e.md"),
        "--report", str(tmp_path / "e.html"),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert not targets_alive(), "every service the experiment started is stopped"
    doc = valid(json.loads((tmp_path / "e.json").read_text()))
    assert doc["measure"] == "run" and doc["model"] == "closed"
    by = {c["label"]: c for c in doc["configurations"]}
    for label, truth in (("slots=2", 200.0), ("slots=8", 800.0)):
        x = by[label]["figures"]["throughput_rps"]
        assert 0.85 * truth <= x <= 1.03 * truth, (label, x)
        (run,) = by[label]["runs"]
        result = run["result"]
        served = (tmp_path / f"served-{label.split('=')[1]}.log").read_text()
        n = int(re.search(r"served (\d+) requests", served).group(1))  # type: ignore[union-attr]
        # The server saw every request redline counted, give or take those in flight when
        # the run ended (at most its 16 users).
        counted = result["requests"] + result["errors_total"]
        assert counted <= n <= counted + 16, (label, counted, n)
        assert f"--capacity {label.split('=')[1]}" in run["command"] and "{" not in run["command"]
    (cmp,) = doc["comparisons"]
    assert (cmp["base"], cmp["new"], cmp["verdict"]) == ("slots=2", "slots=8", "better")
    assert 3.4 <= cmp["throughput_ratio"] <= 4.6, cmp
    rps = next(r for r in cmp["rows"] if r["group"] == "all" and r["figure"] == "rps")
    assert rps["ci"][0] <= rps["change"] <= rps["ci"][1] and rps["ci"][0] > 2.0, rps
    assert doc["best"]["label"] == "slots=8" and doc["best"]["verdict"] == "better"
    # What it printed: each run's summary as it ended, then the table and the verdicts.
    assert p.stdout.count("Requests/sec:") == 2 and "a run (closed model) each" in p.stdout
    best = re.search(r"best: slots=8: ([0-9.]+)× the throughput", p.stdout)
    assert "goodput" in p.stdout and best, p.stdout
    assert 3.4 <= float(best.group(1)) <= 4.6, best.group(0)
    assert "| goodput |" in (tmp_path / "e.md").read_text()
    charts = page_charts((tmp_path / "e.html").read_text())
    series = [x["label"] for x in charts["goodput-time"]["series"]]
    assert series == ["slots=2", "slots=8"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--vary", "slots=2"], "--vary needs --monitor-cmd"),
        (["--monitor-cmd", "x {port}"], "go with --vary"),
        (["--vary", "n=1", "--monitor-cmd", "svc --port {port}"], "has no {n} placeholder"),
        (["--vary", "n=1", "--monitor-cmd", "s {n}", "--threshold", "p99<1s"], "--threshold"),
        (["--markdown", "x.md"], "--markdown goes with --vary"),
        (
            ["--vary", "n=1", "--monitor-cmd", "s {n} {port}", "--watch", "api=port:{prot}"],
            "--watch api=port:{prot}: unknown placeholder {prot}",
        ),
        (
            ["--vary", "n=1", "--monitor-cmd", "s {n} {port}", "--watch", "api=port:x{port}"],
            "port takes a number",
        ),
    ],
)
def test_bad_run_vary_is_one_line_and_exit_2(argv, message):
    p = run_cli("run", "http://127.0.0.1:{port}/", "-d", "1s", *argv)
    assert p.returncode == 2, p.stderr
    assert message in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_run_vary_watches_each_configuration_with_its_placeholders_filled(tmp_path):
    """``redline run --vary --watch api=port:{port}``: each configuration's own listener is
    the part watched (its port filled in, the fresh service's process), and the run's parts
    are in each configuration's result; every service is stopped after."""
    p = run_cli(
        "run", "http://127.0.0.1:{port}/", "--monitor-cmd", TARGET, "--vary", "slots=2,4",
        "--watch", "api=port:{port}", "-c", "4", "-d", "2s", "--interval", "0.5s", "-q",
        "--json", str(tmp_path / "e.json"),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert not targets_alive(), "every service the experiment started is stopped"
    doc = valid(json.loads((tmp_path / "e.json").read_text()))
    ports = set()
    for c in doc["configurations"]:
        (run,) = c["runs"]
        parts = run["result"]["parts"]
        assert parts["specs"] == {"api": [f"port:{run['port']}"]}, parts["specs"]
        series = parts["series"]["api"]
        assert series and all(x["cpu_percent"] is not None for x in series)
        assert f"--port {run['port']}" in run["command"]
        # The listener watched is the service this configuration started: it served.
        assert "accept_queue_limit" in series[-1]["extra"]
        ports.add(run["port"])
    assert len(ports) == 2


def test_run_experiment_of_a_scenario_compares_its_request_names(tmp_path):
    """From Python: a two-name scenario at 100 iterations/s against the target with 1 and
    with 2 threads (no change that 100 iterations/s could see): each name is compared on its
    own windows, Holm across the names, and the schedule's goodput and the median are no
    change, for both names; the server saw every request."""
    from redline.scenario.compiler import load
    from test_compare_runs import TWO_NAMES

    path = tmp_path / "two.py"
    path.write_text(TWO_NAMES)
    plan = load(path, {"SLOW": "10ms"}).plan
    target = f"{sys.executable} -m redline target --port {{port}} --threads {{t}}"
    doc = valid(
        run_experiment(
            "http://127.0.0.1:{port}",
            f"sh -c 'exec {target} > {tmp_path}/served-{{t}}.log'",
            {"t": [1, 2]},
            plan=plan,
            rate=100,
            duration="3s",
            warmup="0.5s",
            interval="0.5s",
        )
    )
    assert not targets_alive()
    assert doc["measure"] == "run" and doc["model"] == "open"
    for c in doc["configurations"]:
        result = c["runs"][0]["result"]
        names = result["per_name"]
        log = (tmp_path / f"served-{c['vary']['t']}.log").read_text()
        seen = int(re.search(r"served (\d+) requests", log).group(1))  # type: ignore[union-attr]
        assert set(names) == {"fast", "slow"}
        # Warm-up requests are served but not in the summary: at least the counted ones.
        assert seen >= sum(n["requests"] for n in names.values()) > 0
    (cmp,) = doc["comparisons"]
    rows = {(r["group"], r["figure"]): r for r in cmp["rows"]}
    assert {g for g, _ in rows} == {"all", "fast", "slow"}
    for name in ("fast", "slow"):
        for figure in ("rps", "p50"):
            row = rows[(name, figure)]
            assert row["verdict"] == "~" and row["windows"][0] >= 4, (name, figure, row)
            assert row["ci"] is not None and row["ci"][0] <= row["change"] <= row["ci"][1]


# -- seed 002: taskqueue with one worker, then two ----------------------------------------------


@pytest.mark.slow
def test_taskqueue_with_one_worker_then_two_runs_end_to_end_and_stops_every_process(tmp_path):
    """Seed 002's question as one command: taskqueue started fresh (its own port and data
    directory) with --workers 1, then 2, each searched with the factorial flow, in tasks a
    second. Every process it started (the servers and their pool workers) is gone after it;
    the report draws both configurations in headless Chromium (screenshot kept)."""
    from browser import assert_drawn, open_in_chromium
    from leftovers import alive_descendants

    taskqueue = Path(sys.executable).parent / "taskqueue"
    assert taskqueue.exists(), "make install puts taskqueue beside this Python"
    # The example's experiment file, its taskqueue the one beside this Python (PATH may not
    # hold the venv's bin).
    plan = (EXAMPLES / "workers.toml").read_text()
    assert '"taskqueue serve ' in plan
    (tmp_path / "workers.toml").write_text(
        plan.replace('"taskqueue serve ', f'"{taskqueue} serve ')
    )
    before = {p.pid for p in alive_descendants()}
    argv = ["-m", "redline", "find", str(EXAMPLES / "factorials.py")]
    argv += ["--host", "http://127.0.0.1:{port}", "--vary", f"@{tmp_path / 'workers.toml'}"]
    argv += ["--throughput", "submit=tasks"]
    # From 16 users (each about 4 tasks a second) the doubling sweep reaches the hundreds of
    # tasks a second where the service saturates on this machine within the 20 s.
    argv += ["--start", "16", "--max-time", "20s", "--min-step", "1s", "--max-step", "3s"]
    argv += [
        "--confirm",
        "2s",
        "--json",
        str(tmp_path / "exp.json"),
        "--report",
        str(tmp_path / "exp.html"),
        "-q",
    ]
    p = subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
        timeout=150,
    )
    assert p.returncode == 0, p.stderr
    # This process is its descendants' subreaper (leftovers): an orphaned pool worker of
    # either server would be a child of it now.
    left = [q for q in alive_descendants() if q.pid not in before]
    assert not left, [q.cmdline() for q in left]
    doc = valid(json.loads((tmp_path / "exp.json").read_text()))
    by = {c["label"]: c for c in doc["configurations"]}
    assert list(by) == ["workers=1", "workers=2"]
    for label, c in by.items():
        (run,) = c["runs"]
        assert f"--workers {label[-1]}" in run["command"] and "{" not in run["command"]
        assert c["answers"]["unit"] == "tasks/s", c["answers"]
        assert c["answers"]["steady_state_throughput_rps"] > 0, (label, c["answers"])
        assert len(c["steps"]) >= 3, (label, c["steps"])
    (cmp,) = doc["comparisons"]
    assert (cmp["base"], cmp["new"]) == ("workers=1", "workers=2")
    assert cmp["verdict"] in ("better", "worse", "~"), cmp
    assert doc["best"]["label"] in by
    seen = open_in_chromium((tmp_path / "exp.html").read_text(), "experiment-taskqueue")
    assert_drawn(seen, {"percentiles", "goodput-time", "p99-time", "tput-load", "p99-tput"})
    charts = page_charts((tmp_path / "exp.html").read_text())
    for chart in ("tput-load", "p99-tput"):
        series = [x["label"] for x in charts[chart]["series"]]
        assert series == ["workers=1", "workers=2"], (chart, series)
        drawn = [sum(v is not None for v in col) for col in charts[chart]["data"][1:]]
        assert all(n >= 3 for n in drawn), (chart, drawn)
