"""Tests for redline.monitor against real processes and a real HTTP endpoint on 127.0.0.1."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator

import psutil
import pytest
from redline.analysis import leak_check
from redline.monitor import (
    CommandMonitor,
    Monitor,
    ProcessMonitor,
    PrometheusMonitor,
    Sample,
    parse_selector,
    stop_tree,
    window_means,
)

#: BURN_S: how long the CPU-burning child spins; every process here is bounded like this.
BURN_S = 2.0

BURN = f"""
import time
end = time.monotonic() + {BURN_S}
while time.monotonic() < end:
    pass
print(time.process_time(), flush=True)
"""

#: TREE runs BURN in a grandchild, so only a monitor that sums the tree sees the CPU.
TREE = f"""
import subprocess, sys
subprocess.run([sys.executable, "-c", {BURN!r}])
"""

FDS = """
import time
held = []
for _ in range(20):
    held.append(open(__file__ if '__file__' in dir() else '/dev/null'))
    time.sleep(0.1)
time.sleep(1.0)
"""


def spawn(code: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True
    )


def watch(proc: subprocess.Popen[str], interval: float = 0.25) -> tuple[list[Sample], str]:
    """watch samples ``proc`` until it exits (bounded) and returns the samples and its
    output."""
    mon = ProcessMonitor(proc.pid, interval_s=interval)
    mon.start()
    try:
        out, _ = proc.communicate(timeout=30)
    finally:
        mon.stop()
    return mon.samples(), out


@pytest.mark.parametrize(
    "label,code,busy",
    [
        ("busy child", BURN, True),
        ("busy grandchild", TREE, True),
        ("idle child", "import time; time.sleep(2)", False),
    ],
)
def test_process_monitor_sees_cpu(label, code, busy):
    samples, out = watch(spawn(code))
    cpu = [s.cpu_percent for s in samples if s.cpu_percent is not None]
    assert len(cpu) >= 4, samples
    if not busy:
        assert max(cpu) < 20
        return
    assert max(cpu) > 50
    # What the monitor integrated matches what the burning process counted itself.
    used = float(out.split()[-1])
    integrated = sum(c / 100 * 0.25 for c in cpu)
    assert integrated == pytest.approx(used, rel=0.35)


def test_process_monitor_sees_fds_rise():
    samples, _ = watch(spawn(FDS))
    fds = [s.fds for s in samples]
    assert fds[-1] - fds[0] >= 10
    assert all(s.rss_bytes and s.rss_bytes > 1e6 for s in samples)
    assert all(s.threads and s.threads >= 1 for s in samples)
    assert all(s.load1 is not None for s in samples)
    trend = leak_check([s.t_s for s in samples], fds, min_rise=10, min_points=5)
    assert trend.suspected


def test_process_monitor_counts_connections():
    import socket

    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    code = f"""
    import socket, time
    s = [socket.create_connection(("127.0.0.1", {port})) for _ in range(3)]
    time.sleep(1.5)
    """
    proc = spawn(code)
    try:
        samples, _ = watch(proc)
    finally:
        srv.close()
    assert max(s.connections or 0 for s in samples) >= 3


def test_process_monitor_unknown_pid():
    dead = spawn("pass")
    dead.wait()
    with pytest.raises(ProcessLookupError):
        ProcessMonitor(dead.pid).start()


CHILDREN = """
import subprocess, sys, time
kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(2)]
print(" ".join(str(k.pid) for k in kids), flush=True)
time.sleep(60)
"""

STUBBORN = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(60)
"""


def _wait_log(mon: CommandMonitor, timeout: float = 10.0) -> str:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        text = mon.log_tail()
        if text.strip():
            return text
        time.sleep(0.05)
    raise AssertionError("the command printed nothing")


@pytest.mark.parametrize(
    "label,code,grace", [("children", CHILDREN, 5.0), ("ignores SIGTERM", STUBBORN, 0.5)]
)
def test_command_monitor_stops_its_tree(label, code, grace):
    mon = CommandMonitor([sys.executable, "-c", code], interval_s=0.2, grace_s=grace)
    with mon:
        first = _wait_log(mon)
        root = psutil.Process(mon.pid)
        family = [root, *root.children(recursive=True)]
        assert len(family) >= (3 if label == "children" else 1)
        if label == "children":
            assert {p.pid for p in family} >= {int(x) for x in first.split()}
        time.sleep(0.5)
    gone, alive = psutil.wait_procs(family, timeout=5)
    assert not alive
    assert mon.returncode is not None
    assert mon.samples(), "the monitor sampled the command"


def test_command_monitor_stops_on_exception():
    with pytest.raises(RuntimeError, match="boom"):
        with CommandMonitor([sys.executable, "-c", CHILDREN], interval_s=0.2) as mon:
            _wait_log(mon)
            family = [psutil.Process(mon.pid), *psutil.Process(mon.pid).children(recursive=True)]
            raise RuntimeError("boom")
    _, alive = psutil.wait_procs(family, timeout=5)
    assert not alive


def test_command_monitor_reports_bad_command():
    with pytest.raises(OSError):
        CommandMonitor("/nonexistent/redline-service --port 0").start()
    with pytest.raises(ValueError):
        CommandMonitor("")


def test_stop_tree_on_exited_process():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    stop_tree(p, 0.1)  # nothing left to stop: no error


# -- Prometheus ------------------------------------------------------------------------------


class _Exporter(http.server.BaseHTTPRequestHandler):
    """_Exporter serves process_* metrics whose CPU counter grows at half a core."""

    started = time.monotonic()
    scrapes = 0

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        type(self).scrapes += 1
        cpu = 0.5 * (time.monotonic() - self.started)
        body = textwrap.dedent(
            f"""\
            # HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
            # TYPE process_cpu_seconds_total counter
            process_cpu_seconds_total {cpu}
            # TYPE process_resident_memory_bytes gauge
            process_resident_memory_bytes 5.24288e+07
            # TYPE process_open_fds gauge
            process_open_fds {40 + type(self).scrapes}
            # TYPE taskqueue_tasks gauge
            taskqueue_tasks{{status="queued"}} 7.0
            taskqueue_tasks{{status="running"}} 3.0
            # TYPE taskqueue_submissions_total counter
            taskqueue_submissions_total{{type="factorial"}} 10.0
            taskqueue_submissions_total{{type="http-fetch"}} 50.0
            """
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def exporter() -> Iterator[str]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Exporter)
    _Exporter.scrapes = 0
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/metrics"
    finally:
        srv.shutdown()
        srv.server_close()


def test_prometheus_monitor_scrapes(exporter):
    mon = PrometheusMonitor(
        exporter,
        metrics=[
            'taskqueue_tasks{status="queued"}',
            "taskqueue_tasks",
            "taskqueue_submissions_total",
            "absent_metric",
        ],
        interval_s=0.2,
    )
    with mon:
        time.sleep(1.3)
    samples = mon.samples()
    assert len(samples) >= 4 and mon.failures == 0
    assert _Exporter.scrapes == len(samples) + 1  # the priming scrape, then one per sample
    cpu = [s.cpu_percent for s in samples]
    assert all(c == pytest.approx(50, abs=15) for c in cpu)
    assert all(s.rss_bytes == 52428800 for s in samples)
    assert [s.fds for s in samples] == sorted(s.fds for s in samples) and samples[-1].fds > 41
    extra = samples[-1].extra
    assert extra == {
        'taskqueue_tasks{status="queued"}': 7.0,
        "taskqueue_tasks": 10.0,
        "taskqueue_submissions_total": 60.0,
    }
    assert samples[0].threads is None and samples[0].load1 is None


def test_prometheus_monitor_survives_a_dead_endpoint(free_port):
    mon = PrometheusMonitor(f"http://127.0.0.1:{free_port}/metrics", interval_s=0.1)
    with mon:
        time.sleep(0.45)
    assert mon.samples() == []
    assert mon.failures >= 3 and "Connection refused" in mon.last_error


@pytest.mark.parametrize(
    "text,name,labels",
    [
        ("process_open_fds", "process_open_fds", {}),
        ('x{a="1"}', "x", {"a": "1"}),
        ('x{a="1", b="two words"}', "x", {"a": "1", "b": "two words"}),
        ('x{a="q\\"uote"}', "x", {"a": 'q\\"uote'}),
    ],
)
def test_parse_selector(text, name, labels):
    assert parse_selector(text) == (name, labels)


@pytest.mark.parametrize("text", ["", "1abc", "x{a=1}", "x{", 'x{a="1"'])
def test_parse_selector_rejects(text):
    with pytest.raises(ValueError):
        parse_selector(text)


def test_prometheus_monitor_rejects_non_http():
    with pytest.raises(ValueError):
        PrometheusMonitor("localhost:9090/metrics")


# -- windows and the time base ---------------------------------------------------------------


class _Scripted(Monitor):
    """_Scripted reads figures from a list, stamped by an injected clock."""

    def __init__(self, clock):
        super().__init__(1.0, clock)
        self.values = iter([10.0, 20.0, None, 40.0])

    def read(self, t_s: float) -> Sample:
        v = next(self.values)
        return Sample(t_s=t_s, cpu_percent=v, fds=5.0, extra={"q": 1.0})


def test_window_means_on_the_callers_time_base():
    now = [1000.0]
    mon = _Scripted(lambda: now[0])
    mon.origin = 995.0  # the load run started 5 s before
    for _ in range(4):
        mon.sample_now()
        now[0] += 1
    assert [s.t_s for s in mon.samples()] == [5.0, 6.0, 7.0, 8.0]
    assert mon.window(5.0, 6.0) == {"cpu_percent": 15.0, "fds": 5.0, "q": 1.0}
    assert mon.window(6.5, 8.0)["cpu_percent"] == 40.0  # None readings are skipped
    assert mon.window(100, 200) == {}
    assert window_means([], 0, 1) == {}
    assert mon.latest().t_s == 8.0
    assert mon.series()[0]["extra"] == {"q": 1.0}


def test_start_takes_the_callers_origin():
    mon = _Scripted(time.monotonic)
    origin = time.monotonic() - 30
    mon.start(origin)
    try:
        s = mon.sample_now()
    finally:
        mon.stop()
    assert 29 < s.t_s < 40
    with pytest.raises(RuntimeError):
        mon.start()


def test_monitor_rejects_bad_interval():
    with pytest.raises(ValueError):
        Monitor(0)


def test_own_process_is_sampled():
    mon = ProcessMonitor(os.getpid(), interval_s=0.1)
    mon.start()
    try:
        s = mon.sample_now()
    finally:
        mon.stop()
    assert s is not None and s.fds and s.fds > 2
