"""Tests for redline.service.monitor against real processes and a real HTTP endpoint on
127.0.0.1."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import textwrap
import threading
import time

import psutil
import pytest
from conftest import Exposition
from redline.analysis import leak_check
from redline.errors import ConfigError, RedlineError
from redline.service.monitor import (
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


@pytest.mark.alone
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
        # The first interval holds the interpreter's start-up; after it the child sleeps.
        assert max(cpu[1:]) < 10, cpu
        return
    # The truth is what the burning process counted itself: on an idle machine it burns a
    # whole core (100 %), on a loaded one its share. The monitor must see that share while it
    # burns, and integrate to the CPU time it used.
    used = float(out.split()[-1])
    share = 100 * used / BURN_S
    assert share > 10, "the child could not run at all"
    assert max(cpu) > 0.7 * share
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
    with pytest.raises(ConfigError, match=f"no process with pid {dead.pid}"):
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
    assert not os.path.exists(mon.log_path), "the temporary log is removed"


def test_command_monitor_keeps_the_log_of_a_command_that_died():
    mon = CommandMonitor([sys.executable, "-c", "print('cannot bind'); raise SystemExit(3)"])
    with mon:
        _until(lambda: mon.returncode is not None)
    try:
        assert mon.returncode == 3
        assert mon.log_tail() == "cannot bind"
    finally:
        os.unlink(mon.log_path)


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt], ids=["error", "ctrl-c"])
def test_command_monitor_stops_on_exception(exc):
    with pytest.raises(exc, match="boom"):
        with CommandMonitor([sys.executable, "-c", CHILDREN], interval_s=0.2) as mon:
            _wait_log(mon)
            family = [psutil.Process(mon.pid), *psutil.Process(mon.pid).children(recursive=True)]
            assert len(family) == 3
            raise exc("boom")
    _, alive = psutil.wait_procs(family, timeout=5)
    assert not alive


@pytest.mark.parametrize(
    "cmd,message",
    [
        ("/nonexistent/redline-service --port 0", "cannot start '/nonexistent/redline-service'"),
        ("", "the command is empty"),
        ("serve 'unbalanced", "No closing quotation"),
    ],
)
def test_command_monitor_reports_bad_command(cmd, message):
    with pytest.raises(RedlineError, match=message):
        CommandMonitor(cmd).start()


#: HOLDER: a stand-in for redline: it starts a --monitor-cmd service (a Python that sleeps),
#: says the service's pid, and waits to be killed.
HOLDER = """
import sys, time
from redline.service.monitor import CommandMonitor
mon = CommandMonitor([sys.executable, "-c", "import time; time.sleep(60)"]).start()
print(mon.pid, flush=True)
time.sleep(60)
"""


def _running(p: psutil.Process) -> bool:
    """_running: alive and not a zombie (an orphan's zombie waits for its reaper: gone)."""
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_monitored_command_dies_with_redline_killed_by_sigkill():
    """kill -9 of the process that started a --monitor-cmd service runs none of its cleanup;
    the kernel's parent-death signal ends the service anyway (it ran on, holding its port)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        line = holder.stdout.readline()
        assert line.strip().isdigit(), holder.stderr.read() if holder.stderr else line
        service = psutil.Process(int(line))
        assert _running(service)
        holder.kill()
        holder.wait(5)
        deadline = time.monotonic() + 5
        while _running(service) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _running(service), f"the service {service.pid} outlived the killed redline"
    finally:
        holder.kill()
        holder.wait(5)


def test_stop_tree_on_exited_process():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    stop_tree(p, 0.1)  # nothing left to stop: no error


# -- Prometheus ------------------------------------------------------------------------------


class _Exporter(Exposition):
    """_Exporter serves process_* metrics; its CPU counter grows by half a second a scrape."""

    def text(self, n: int) -> str:
        return textwrap.dedent(
            f"""\
            # HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
            # TYPE process_cpu_seconds_total counter
            process_cpu_seconds_total {0.5 * n}
            # TYPE process_resident_memory_bytes gauge
            process_resident_memory_bytes 5.24288e+07
            # TYPE process_open_fds gauge
            process_open_fds {40 + n}
            # TYPE taskqueue_tasks gauge
            taskqueue_tasks{{status="queued"}} 7.0
            taskqueue_tasks{{status="running"}} 3.0
            # TYPE taskqueue_submissions_total counter
            taskqueue_submissions_total{{type="factorial"}} 10.0
            taskqueue_submissions_total{{type="http-fetch"}} 50.0
            """
        )


@pytest.fixture()
def exporter(serve_http) -> str:
    """exporter: the /metrics URL of a served _Exporter (conftest's serve_http), its scrapes
    counted from 0."""
    _Exporter.scrapes = 0
    return serve_http(_Exporter)


def _until(cond, timeout: float = 10.0) -> None:
    """_until waits (bounded) until cond() holds."""
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def test_prometheus_monitor_reads_the_figures(exporter):
    # An injected clock: one second passes between scrapes, the counter grows 0.5 s a
    # scrape, so the CPU is exactly 50 % however loaded this machine is.
    now = [100.0]
    mon = PrometheusMonitor(
        exporter,
        metrics=[
            'taskqueue_tasks{status="queued"}',
            "taskqueue_tasks",
            "taskqueue_submissions_total",
            "absent_metric",
        ],
        timeout_s=10,
        clock=lambda: now[0],
    )
    mon.origin = 100.0
    mon.prime()
    samples = []
    for _ in range(3):
        now[0] += 1.0
        samples.append(mon.sample_now())
    assert mon.failures == 0 and _Exporter.scrapes == 4
    assert [s.t_s for s in samples] == [1.0, 2.0, 3.0]
    assert [s.cpu_percent for s in samples] == [50.0, 50.0, 50.0]
    assert [s.fds for s in samples] == [42.0, 43.0, 44.0]
    assert all(s.rss_bytes == 52428800 for s in samples)
    assert samples[-1].extra == {
        'taskqueue_tasks{status="queued"}': 7.0,
        "taskqueue_tasks": 10.0,
        "taskqueue_submissions_total": 60.0,
    }
    assert samples[0].threads is None and samples[0].load1 is None


def test_prometheus_monitor_scrapes_each_interval(exporter):
    mon = PrometheusMonitor(exporter, interval_s=0.1, timeout_s=5)
    with mon:
        _until(lambda: len(mon.samples()) >= 3)
    assert mon.failures == 0
    assert _Exporter.scrapes >= len(mon.samples()) + 1  # the priming scrape, then one each
    ts = [s.t_s for s in mon.samples()]
    assert ts == sorted(ts) and ts[0] > 0


def test_prometheus_monitor_survives_a_dead_endpoint(free_port):
    mon = PrometheusMonitor(f"http://127.0.0.1:{free_port}/metrics", interval_s=0.1)
    with mon:
        _until(lambda: mon.failures >= 3)
    assert mon.samples() == []
    assert "Connection refused" in mon.last_error


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
    with pytest.raises(ConfigError, match="--metric: expected"):
        parse_selector(text)


def test_prometheus_monitor_rejects_non_http():
    with pytest.raises(ConfigError, match="an http"):
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
    with pytest.raises(ConfigError):
        Monitor(0)


def test_own_process_is_sampled():
    mon = ProcessMonitor(os.getpid(), interval_s=0.1)
    mon.start()
    try:
        s = mon.sample_now()
    finally:
        mon.stop()
    assert s is not None and s.fds and s.fds > 2


def test_prometheus_monitor_reads_taskqueue_metrics():
    """taskqueue's /metrics is the first user: its process collector gives CPU, RSS and fds
    (no threads), and its queue depth is a labelled series."""
    metrics = pytest.importorskip("taskqueue.metrics", reason="taskqueue is not installed")
    registry = metrics.Metrics(lambda: {"queued": 5, "running": 2})

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = registry.render()
            self.send_response(200)
            self.send_header("Content-Type", metrics.CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        mon = PrometheusMonitor(
            f"http://127.0.0.1:{srv.server_address[1]}/metrics",
            metrics=['taskqueue_tasks{status="queued"}'],
            timeout_s=10,
        )
        wall = time.monotonic()
        mon.prime()
        # Burn 0.3 s of this thread's CPU between the two scrapes: the counter (10 ms ticks)
        # grows by at least 0.28 s over at most the wall time measured around both.
        burn_until = time.thread_time() + 0.3
        while time.thread_time() < burn_until:
            pass
        s = mon.sample_now()
        wall = time.monotonic() - wall
        # 64 MiB written (so resident) between two readings must show in the RSS.
        blob = b"\x01" * (64 * 2**20)
        grown = mon.sample_now()
        del blob
    finally:
        srv.shutdown()
        srv.server_close()
    assert s is not None and grown is not None and mon.failures == 0
    assert s.cpu_percent is not None and s.cpu_percent >= 100 * 0.28 / wall, (s, wall)
    assert s.rss_bytes is not None and grown.rss_bytes is not None
    assert grown.rss_bytes - s.rss_bytes >= 60 * 2**20, (s.rss_bytes, grown.rss_bytes)
    assert s.fds is not None and s.fds > 3
    assert s.extra == {'taskqueue_tasks{status="queued"}': 5.0}
    assert s.threads is None  # the process collector has no thread count


def test_the_machines_cpu_time_counts_this_process_burning_cpu():
    """machine_cpu_s (the find's saturation check): half a second of this process burning a
    CPU adds at least most of it to the machine's busy time, and the busy time added is
    bounded by what every CPU could have done in the wall time, as is the total."""
    from redline.runs.usage import machine_cpu_s

    first = machine_cpu_s()
    assert first is not None
    t0, c0 = time.monotonic(), time.process_time()
    while time.process_time() - c0 < 0.5:
        pass
    wall = time.monotonic() - t0
    second = machine_cpu_s()
    assert second is not None
    busy, total = second[0] - first[0], second[1] - first[1]
    cpus = psutil.cpu_count() or 1
    assert busy >= 0.4, (busy, wall)
    # busy and total are differences of sums of floats: on a saturated machine (idle 0) busy
    # can read total plus a rounding error.
    assert busy <= total + 1e-6 and total <= cpus * wall * 1.1 + 0.05, (busy, total, cpus, wall)
