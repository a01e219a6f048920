"""Watching the parts of a deployment (redline.service.parts, redline.service.sockets):
the --watch spellings, a listening socket's accept queue as ss reads it, what a process may
use, an exporter's pools and counters, and a search that names the part of known cause."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest
from conftest import Exposition
from deployments import http_server, worker_pool
from redline.errors import ConfigError
from redline.service.parts import ExporterMonitor, Parts, PortMonitor, Watch, allowance
from redline.service.sockets import accept_queue


@pytest.mark.parametrize(
    ("text", "kind", "target"),
    [
        ("api=pid:1234", "pid", "1234"),
        ("lb=port:8080", "port", "8080"),
        (
            "db=prometheus:http://127.0.0.1:9187/metrics",
            "prometheus",
            "http://127.0.0.1:9187/metrics",
        ),
        ("svc=cmd:taskqueue serve --port 0", "cmd", "taskqueue serve --port 0"),
    ],
)
def test_a_watch_is_a_name_and_a_spec(text, kind, target):
    w = Watch.parse(text)
    assert (w.kind, w.target) == (kind, target)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("pid:1234", "expected NAME=SPEC"),
        ("a b=pid:1", "expected NAME=SPEC"),
        ("api=1234", "SPEC is pid:PID"),
        ("api=socket:80", "SPEC is pid:PID"),
        ("api=port:http", "port takes a number"),
        ("api=prometheus:127.0.0.1:9/metrics", "http(s) URL"),
        ("generator=pid:1", "always watched"),
    ],
)
def test_a_bad_watch_is_one_clear_line(text, says):
    with pytest.raises(ConfigError) as e:
        Watch.parse(text)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_the_accept_queue_is_read_as_ss_reads_it():
    """Five connections no one accepts wait in a queue of eight; one accepted, four."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(5)]
        try:
            q = accept_queue(port)
            assert q is not None and (q.length, q.limit) == (5, 8)
            conn, _ = listener.accept()
            conn.close()
            q = accept_queue(port)
            assert q is not None and q.length == 4
        finally:
            for c in clients:
                c.close()
    assert accept_queue(port) is None


def test_the_port_monitor_finds_the_listener_and_what_it_may_use():
    code = "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(16);"
    code += " print(s.getsockname()[1], flush=True); time.sleep(30)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        os.sched_setaffinity(proc.pid, {min(os.sched_getaffinity(0))})
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        m = PortMonitor(port)
        m.prime()
        assert m.pid == proc.pid
        s = m.read(1.0)
        assert s.extra["accept_queue"] == 3 and s.extra["accept_queue_limit"] == 16
        assert s.extra["cores_allowed"] == 1.0
        assert s.extra["fds_limit"] >= 64 and s.extra["memory_limit"] > 0
        for c in clients:
            c.close()
    finally:
        proc.kill()
        proc.wait(10)
    with pytest.raises(ConfigError, match="nothing listens"):
        PortMonitor(port).prime()


def test_allowance_reads_affinity_and_limits_of_this_process():
    got = allowance(os.getpid())
    assert got["cores_allowed"] == len(os.sched_getaffinity(0))
    assert got["fds_limit"] > 0 and got["memory_limit"] > 0


class _Exporter(Exposition):
    """_Exporter: a pool of 10 with 7 in use, one of 4 full, and counters that grow by 5 and
    3 (failures) every scrape."""

    def text(self, n: int) -> str:
        return textwrap.dedent(
            f"""\
            # TYPE app_conns_in_use gauge
            app_conns_in_use{{host="a"}} 7
            # TYPE app_conns_limit gauge
            app_conns_limit{{host="a"}} 10
            # TYPE app_workers_in_use gauge
            app_workers_in_use 4
            # TYPE app_workers_max gauge
            app_workers_max 4
            # TYPE app_done_total counter
            app_done_total{{kind="x"}} {5 * n}
            # TYPE app_failures_total counter
            app_failures_total {3 * n}
            # TYPE process_open_fds gauge
            process_open_fds 12
            # TYPE process_max_fds gauge
            process_max_fds 1024
            """
        )


@pytest.fixture
def exporter(serve_http) -> str:
    """exporter: the /metrics URL of a served _Exporter (conftest's serve_http)."""
    return serve_http(_Exporter)


def test_an_exporter_gives_its_pools_and_its_counters_as_rates(exporter):
    clock = iter([10.0, 12.0]).__next__
    m = ExporterMonitor(exporter, clock=clock)
    m.read(0.0)
    s = m.read(2.0)
    conns = 'app_conns{host="a"}'
    assert s.extra[f"pool:{conns}"] == 7 and s.extra[f"pool_limit:{conns}"] == 10
    assert s.extra["pool:app_workers"] == 4 and s.extra["pool_limit:app_workers"] == 4
    # 5 done and 3 failed a scrape, scrapes 2 s apart.
    assert s.extra["rate:app_done_total"] == pytest.approx(2.5)
    assert s.extra["errors_rate"] == pytest.approx(1.5)
    assert s.fds == 12 and s.extra["fds_limit"] == 1024


def test_parts_merge_the_specs_of_one_name_and_share_a_clock(exporter):
    parts = Parts.parse([f"me=pid:{os.getpid()}", f"me=prometheus:{exporter}"], interval_s=0.2)
    assert parts is not None and [p.name for p in parts.parts] == ["me"]
    with parts.start(origin=time.monotonic()):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(parts.parts[0].samples()) < 6:
            time.sleep(0.1)
    got = parts.window(0.0, 60.0)["me"]
    assert "cpu_percent" in got and 'pool:app_conns{host="a"}' in got and "cores_allowed" in got
    assert parts.specs() == {"me": [f"pid:{os.getpid()}", f"prometheus:{exporter}"]}
    series = parts.series()["me"]
    assert all(0.0 <= x["t_s"] <= 60.0 for x in series)


def _searched(
    proc: subprocess.Popen[str],
    port: int,
    watch: str,
    start: float,
    max_step: float,
    confirm: float,
    slo: str,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """_searched: a closed-model search of the deployment ``proc`` serves on ``port``, watched
    by ``watch``, stopped after it whatever happened; the result and the part its limit named."""
    from redline.find.finder import find

    try:
        result = find(
            f"http://127.0.0.1:{port}/",
            model="closed",
            start=start,
            max_time=40.0,
            max_step=max_step,
            confirm=confirm,
            slos=[slo],
            watch=[watch],
        )
    finally:
        proc.kill()
        proc.wait(10)
    return result, result["answers"]["limit"]["bottleneck"]


@pytest.mark.slow
@pytest.mark.alone  # a redline starved of CPU by the suite is named instead (rightly)
def test_a_search_names_the_accept_queue_of_a_small_worker_pool():
    """Known cause: two workers behind a listening socket (CPU low, connections waiting).
    The search's limit names that part's accept queue, and not its CPU or the generator."""
    from redline.report.charts import find_charts

    proc, port = worker_pool()
    result, b = _searched(proc, port, f"api=port:{port}", 1, 6.0, 4.0, "p99<200ms")
    assert b is not None and (b["part"], b["resource"]) == ("api", "accept-queue"), (
        b,
        result["stop"],
    )
    series = result["parts"]["series"]
    assert series["api"] and series["generator"]
    assert any(x["extra"].get("accept_queue", 0) >= 1 for x in series["api"])
    # Each interval carries the parts' figures over it, charted on the load's time axis.
    assert any(
        row["parts"].get("api", {}).get("accept_queue", 0) >= 1 for row in result["timeseries"]
    )
    charts = {c.id: c for c in find_charts(result)}
    assert charts["part-api"].data[0] == charts["throughput"].data[0]
    assert "part-generator" in charts


@pytest.mark.slow
@pytest.mark.alone  # capacity: the suite beside it would share the pinned core
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pinned to one core of one")
def test_a_search_names_the_cpu_of_a_part_pinned_to_one_core():
    """Known cause: a CPU-bound server pinned to one core of the two or more this process may
    use. The search's limit names that part's cpu (100 % of the one core it may use, or, on a
    core other work shares, its threads wanting more than that core), not the generator."""
    proc, port = http_server("cpu", str(min(os.sched_getaffinity(0))))
    result, b = _searched(proc, port, f"api=pid:{proc.pid}", 2, 4.0, 2.0, "p99<50ms")
    assert b is not None and (b["part"], b["resource"]) == ("api", "cpu"), (b, result["stop"])
    assert "cores allowed" in b["evidence"] or "it may use" in b["evidence"], b
    # One core, or less where a cgroup's quota cuts it (a CI container's).
    api = [x["extra"] for x in result["parts"]["series"]["api"]]
    assert api and all(0.0 < x.get("cores_allowed", 0.0) <= 1.0 for x in api), api[:3]
