"""Tests for ``--cluster`` on the command line (redline.cli.cluster): one-line refusals
with exit 2, a run end to end on local:2, a killed injector and Ctrl-C, and no Ray process
left behind by the CLI. Each run starts (and must stop) its own local Ray."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import psutil
import pytest
import redline
from accounting import transport_failures
from conftest import CLI_TIMEOUT_S, Http1Server, run_cli
from leftovers import alive_descendants
from redline.cluster.connection import Member, check_versions
from redline.errors import ClusterError

#: A local Ray (its daemons and injectors) takes the machine's CPUs: make test runs these
#: tests after the parallel part, one Ray at a time.
pytestmark = pytest.mark.alone

#: RAY_RUN_TIMEOUT_S bounds a CLI run that starts a local Ray on this small box.
RAY_RUN_TIMEOUT_S = 120


def one_line_error(p: subprocess.CompletedProcess[str], want: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and want in lines[0], p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize(
    ("label", "args", "want"),
    [
        ("bad address", ["--cluster", "ray://nohost"], "bad cluster address 'ray://nohost'"),
        ("bad local", ["--cluster", "local:0"], "local:N needs N from 1"),
        ("injectors without cluster", ["--injectors", "3"], "--injectors needs --cluster"),
        ("bad policy", ["--cluster", "local:2", "--on-injector-loss", "x"], "choose fail"),
    ],
)
def test_bad_cluster_flags_are_one_line_and_exit_2(label, args, want, target) -> None:
    for command in ("run", "find"):
        one_line_error(run_cli(command, *args, target.url), want)


def test_rebalance_of_a_ramp_is_refused_before_ray_starts(target) -> None:
    p = run_cli(
        "run",
        "--cluster",
        "local:2",
        "--on-injector-loss",
        "rebalance",
        "--stages",
        "1s:4",
        target.url,
    )
    one_line_error(p, "rebalance needs a constant load for a duration")


def test_without_ray_the_cli_says_how_to_install_it(target) -> None:
    hide = (
        "import sys; sys.modules['ray'] = None; from redline.cli import main; "
        f"raise SystemExit(main(['run', '--cluster', 'local:2', '-n', '10', {target.url!r}]))"
    )
    p = subprocess.run(
        [sys.executable, "-c", hide], capture_output=True, text=True, timeout=CLI_TIMEOUT_S
    )
    one_line_error(p, "pip install 'redline[ray]'")


def test_a_version_mismatch_is_refused_in_one_line() -> None:
    members = [
        Member(i, None, v, 2, f"node{i}", 100 + i, 0.0, 0.001)
        for i, v in enumerate(["0.1.0", "0.2.0"])
    ]
    check_versions("0.1.0", members[:1])
    with pytest.raises(ClusterError) as e:
        check_versions("0.1.0", members)
    msg = str(e.value)
    assert msg.startswith("injector 1 (node1, pid 101) runs redline 0.2.0, the driver 0.1.0")
    assert "\n" not in msg


def no_ray_left() -> None:
    """no_ray_left: the CLI's Ray processes all ended with it (orphans re-parent to this
    process, the suite's subreaper, so they would be listed here)."""
    deadline = time.monotonic() + 10.0
    left = alive_descendants()
    while left and time.monotonic() < deadline:
        psutil.wait_procs(left, timeout=0.5)
        left = alive_descendants()
    assert not left, [" ".join(p.cmdline())[:120] for p in left]


def test_run_on_local_ray_end_to_end(target, tmp_path: Path) -> None:
    before = target.stats()["requests"]
    out = tmp_path / "r.json"
    p = run_cli(
        "run",
        "--cluster",
        "local:2",
        "-c",
        "2",
        "-n",
        "300",
        "-t",
        "1",
        "-q",
        "--json",
        str(out),
        target.url,
        timeout=RAY_RUN_TIMEOUT_S,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert target.stats()["requests"] - before == doc["requests"] == 300
    assert "injector  host" in p.stdout and p.stdout.count(" ok") >= 2, p.stdout
    assert [r["requests"] for r in doc["cluster"]["injectors"]] == [150, 150]
    no_ray_left()


def test_http2_to_a_server_without_it_on_a_cluster_is_one_line(
    http1_server: Http1Server,
) -> None:
    """Issue 36: each injector's preflight found the server does not speak HTTP/2 and its run
    refused, but the driver said only "no injector reported anything". Now it says what the
    injectors said, as one machine does; the server saw each injector's one question (the
    preface), and no load."""
    args = ("run", "--cluster", "local:2", "--http2", "-d", "3s", "-c", "4", http1_server.url)
    p = run_cli(*args, timeout=RAY_RUN_TIMEOUT_S)
    # One line of redline's (Ray's own start line is Ray's), exit 2, as on one machine.
    assert p.returncode == 2, (p.returncode, p.stderr)
    said = [line for line in p.stderr.splitlines() if line.startswith("redline:")]
    assert len(said) == 1 and "does not speak HTTP/2 without TLS (h2c)" in said[0], p.stderr
    assert "leave out --http2" in said[0] and "Traceback" not in p.stderr
    assert (http1_server.connections, http1_server.gets) == (2, 0), http1_server
    no_ray_left()


def _start(
    target: redline.Target, tmp_path: Path, injectors: int = 2, path: str = ""
) -> subprocess.Popen[str]:
    """_start runs ``redline run --cluster local:INJECTORS`` for 30 s, one connection an
    injector, against the target (``path``: its query, a latency for instance)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = [
        sys.executable,
        "-m",
        "redline",
        "run",
        "--cluster",
        f"local:{injectors}",
        "-c",
        str(injectors),
        "-d",
        "30s",
        "-t",
        "1",
        "-q",
        "--interval",
        "250ms",
        "--json",
        str(tmp_path / "r.json"),
        target.url + path,
    ]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _until_loaded(
    target: redline.Target, proc: subprocess.Popen[str], before: int, requests: int = 200
) -> float:
    """_until_loaded waits (bounded) until the server has answered ``requests`` of the
    cluster's, and returns when (time.monotonic())."""
    deadline = time.monotonic() + RAY_RUN_TIMEOUT_S
    while target.stats()["requests"] - before < requests:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no load within the bound"
        time.sleep(0.05)
    return time.monotonic()


def _injectors(proc: subprocess.Popen[str]) -> list[psutil.Process]:
    found = []
    for p in psutil.Process(proc.pid).children(recursive=True):
        try:
            if " ".join(p.cmdline()).startswith("ray::Injector"):
                found.append(p)
        except psutil.Error:
            continue
    return found


def _lose_an_injector(
    target: redline.Target,
    proc: subprocess.Popen[str],
    before: int,
    after_s: float = 0.0,
    injectors: int = 2,
) -> tuple[int, str]:
    """_lose_an_injector kill -9s one of the run's injectors ``after_s`` after the server
    saw its first requests, waits for redline to end, and checks that it said the loss in
    one line with status 1 (--on-injector-loss fail). Returns the killed pid and the line."""
    try:
        _until_loaded(target, proc, before, requests=1)
        time.sleep(after_s)
        victims = _injectors(proc)
        assert len(victims) == injectors, [v.cmdline() for v in victims]
        victim = victims[-1]
        victim.kill()
        _, err = proc.communicate(timeout=RAY_RUN_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, err
    line = [x for x in err.splitlines() if x.startswith("redline: error:")]
    assert len(line) == 1 and "died" in line[0] and "--on-injector-loss fail" in line[0], err
    return victim.pid, line[0]


#: SERVICE_S: the target's answer time in the kill tests: a connection sends at most
#: 1/SERVICE_S requests a second, which bounds what an injector can send unseen.
SERVICE_S = 0.01


def test_kill_9_of_one_injector_6s_into_a_local_3_run_stops_it_named(
    target, tmp_path: Path
) -> None:
    """The issue's run: --cluster local:3, one injector kill -9'd 6 s into the load. The run
    stops with status 1 naming that injector (its pid), keeps the partial result, and what
    redline counted is what the server saw, less at most what the dead injector sent after
    its last snapshot reached the driver."""
    before = target.stats()["requests"]
    proc = _start(target, tmp_path, injectors=3, path=f"/?latency={SERVICE_S * 1000:g}ms")
    pid, line = _lose_an_injector(target, proc, before, after_s=6.0, injectors=3)
    served = target.stats()["requests"] - before
    doc = json.loads((tmp_path / "r.json").read_text())
    rows = doc["cluster"]["injectors"]
    (lost,) = [r for r in rows if r["lost"]]
    assert lost["pid"] == pid and f"injector {lost['index']} (" in line and f"pid {pid})" in line
    assert doc["cluster"]["failure"] and doc["interrupted"] and doc["duration_s"] < 20.0
    assert doc["cluster"]["lost"] == [
        f"injector {lost['index']} ({lost['host']}, pid {pid}) " + lost["lost"]
    ]
    # The live view's intervals name it from the loss on.
    named = [s for s in doc["timeseries"] if s.get("injectors_lost")]
    assert named and all(f"pid {pid})" in s["injectors_lost"][0] for s in named)
    # It had carried its third of the load for 6 s (at most 100 answers a second).
    assert 0.5 * 6.0 / SERVICE_S * 0.5 <= lost["requests"] <= (6.0 + 5.0) / SERVICE_S, lost
    # The survivors' reports are exact; the dead one's figures are its snapshots' sums, so
    # the server saw at most its unsent tail more: POLL + an interval, bounded here by 2 s
    # of one connection (in flight included).
    counted = doc["requests"] + transport_failures(doc)
    assert counted <= served <= counted + 2.0 / SERVICE_S + 1, (counted, served)
    no_ray_left()


def test_ctrl_c_stops_every_injector_and_keeps_the_result(target, tmp_path: Path) -> None:
    before = target.stats()["requests"]
    proc = _start(target, tmp_path)
    try:
        _until_loaded(target, proc, before)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=RAY_RUN_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["interrupted"] and doc["duration_s"] < 20.0
    served = target.stats()["requests"] - before
    assert 0 < doc["requests"] <= served
    no_ray_left()  # so no injector still sends


def _still_after(target: redline.Target, since: float, bound_s: float) -> tuple[float, int]:
    """_still_after watches the server's count (every 50 ms, for ``bound_s``) and returns
    when it last moved (seconds after ``since``) and what it read then."""
    last, moved = target.stats()["requests"], 0.0
    while time.monotonic() - since < bound_s:
        time.sleep(0.05)
        now = target.stats()["requests"]
        if now != last:
            last, moved = now, time.monotonic() - since
    return moved, last


def test_kill_9_of_the_cli_stops_the_injectors_within_5s(target, tmp_path: Path) -> None:
    """A kill -9 of redline runs none of its cleanup: the local Ray it started (GCS, raylet,
    the injector actors) must still end with it, and no injector may go on loading the
    server: the server's count stops moving within 5 s and then stands still."""
    before = target.stats()["requests"]
    proc = _start(target, tmp_path, path=f"/?latency={SERVICE_S * 1000:g}ms")
    try:
        _until_loaded(target, proc, before)
        assert len(_injectors(proc)) == 2
        at_kill = target.stats()["requests"]
        proc.kill()
        killed = time.monotonic()
        proc.communicate(timeout=RAY_RUN_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    moved_s, settled = _still_after(target, killed, 8.0)
    assert moved_s <= 5.0, f"the server still saw requests {moved_s:.1f} s after the kill"
    # What came after the kill: at most the two connections' answers for those seconds.
    assert settled - at_kill <= 2 * (moved_s + 0.5) / SERVICE_S + 2, settled - at_kill
    no_ray_left()
    time.sleep(1.0)
    assert target.stats()["requests"] == settled, "nothing sends once Ray is gone"


def test_a_find_that_loses_an_injector_stops_names_it_and_keeps_its_steps(
    target, tmp_path: Path
) -> None:
    """find on local:2 under --on-injector-loss fail: one injector killed mid-search stops
    the search as interrupted, with the loss in one line (status 1), and no step measured
    after it; the reports have the per-injector table."""
    before = target.stats()["requests"]
    out = tmp_path / "f"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "redline", "find", "--cluster", "local:2", "-q"]
    cmd += ["--start", "2", "--min-step", "1s", "--max-step", "2s", "--max-time", "60s"]
    cmd += ["--json", f"{out}.json", "--markdown", f"{out}.md"]
    # Answers that take 50 ms: the throughput grows with the users for longer than the search
    # runs here, so it is still searching when the injector dies (an immediate answer let a
    # loaded machine end it first, on redline's own CPU, "generator").
    cmd += ["--report", f"{out}.html", target.url + "/?latency=50ms"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    _lose_an_injector(target, proc, before, after_s=6.0)  # a step or two measured first
    served = target.stats()["requests"] - before
    doc = json.loads(Path(f"{out}.json").read_text())
    # What the server received: every request the search counted, and at most the dead
    # injector's unsent tail more (its users' answers for POLL + an interval: 2 s at 50 ms).
    counted = sum(x["requests"] + x.get("errors", 0) for x in doc["timeseries"])
    print(f"find: counted {counted}, the server saw {served}")
    users = max(x["load"] for x in [*doc["steps"], *doc["spoiled"]])
    assert 0 < counted <= served <= counted + users * 2.0 / 0.05, (counted, served, users)
    assert doc["interrupted"] and doc["stop"]["condition"] == "interrupted", doc["stop"]
    assert "died" in doc["stop"]["detail"]
    assert doc["run"]["cluster"]["failure"] and len(doc["run"]["cluster"]["injectors"]) == 2
    assert doc["steps"], "the steps measured before the loss are kept"
    # No step's window holds an interval the lost injector did not report.
    short = [x["t_s"] for x in doc["timeseries"] if x["injectors_reported"] < x["injectors"]]
    for s in doc["steps"]:
        inside = [t for t in short if s["judged_from_s"] < t <= s["end_s"]]
        assert not inside, (s["index"], s["judged_from_s"], s["end_s"], short)
    # The step the loss cut into is named, not judged: in the stop's detail and in spoiled.
    (spoiled,) = doc["spoiled"]
    assert spoiled["measured_again"] is False and spoiled["index"] == len(doc["steps"])
    assert f"step at {spoiled['load']:g} users" in doc["stop"]["detail"], doc["stop"]
    assert "spoiled by a lost injector" in doc["stop"]["detail"]
    schema = json.loads((Path(__file__).parent.parent / "docs/schema/find.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert "## Injectors" in Path(f"{out}.md").read_text()
    assert 'id="injectors"' in Path(f"{out}.html").read_text()
    no_ray_left()
