"""gRPC runs (``redline run grpc://HOST:PORT/package.Service/Method --proto F --data JSON``,
``redline.run`` with ``proto=``/``data=``; docs/protocols.md) against the test server's probe,
whose truth is known (examples/grpc/probe.proto: ``Unary`` answers ``delay_ms`` after the call,
``Stream`` sends ``count`` messages, the first at ``first_ms`` and then one every ``gap_ms``,
each ending with status ``status``; the server counts ``grpc_calls``, ``grpc_messages`` and
``grpc_failed``), and against a server not written here: grpcio's own health service
(grpcio-health-checking), its calls counted by a grpcio interceptor."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any, cast

import grpc
import jsonschema
import pytest
import redline
from accounting import assert_books
from conftest import run_cli
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import HealthServicer

ROOT = Path(__file__).parent.parent
PROBE = ROOT / "examples/grpc/probe.proto"
SCHEMA = json.loads((ROOT / "docs/schema/result.schema.json").read_text())

#: GRPC_FIELDS: the probe's counters a test diffs.
GRPC_FIELDS = ("grpc_calls", "grpc_received", "grpc_messages", "grpc_failed")


def probe_url(target: redline.Target, method: str) -> str:
    return target.url.replace("http://", "grpc://", 1) + "/redline.probe.Probe/" + method


def probe_run(
    target: redline.Target, method: str, data: dict[str, Any] | list[dict[str, Any]], **load: Any
) -> tuple[redline.Result, dict[str, int]]:
    """probe_run calls the probe's ``method`` with ``data`` and gives the result and what the
    server counted meanwhile."""
    before = target.stats()
    r = redline.run(probe_url(target, method), proto=PROBE, data=json.dumps(data), **load)
    now = target.stats()
    seen = {k: now[k] - before[k] for k in GRPC_FIELDS}
    print(r.data["grpc"], r.data["latency_ms"], r.errors, seen)
    jsonschema.validate(r.data, SCHEMA)
    assert_books(r)
    return r, seen


def near(value: float, truth: float, share: float) -> bool:
    return abs(value - truth) <= share * truth


@pytest.mark.parametrize("model", ["closed", "open"])
def test_unary_calls_are_counted_exactly_and_take_the_probes_delay(target, model):
    """600 calls of a 50 ms service time, closed (20 at a time) or open (300 a second): the
    server answered as many as redline counts, all OK, none under 50 ms, p50 within 15 % and
    p90 under twice the delay beside a busy suite: 20 calls come due together on the server's
    one thread, and beside a build (load 10-11) the closed p50 read 53.4-55.9 ms, as did a
    build without gRPC's last changes (55.7-57.1 ms). Not p99: one wake-up of that thread
    50 ms late delays every call in flight, 20 of the 600 (3 %) in the closed model, so p99
    measures the box (74 ms at load 10, 158 ms at load 11); p90 needs three such waits in the
    run's 1.5 s, and still fails a client that holds one call in ten back. The alone test
    holds the open model's p50 to 5 % and its p99 to 50 %."""
    load = {"connections": 20} if model == "closed" else {"rate": 300}
    r, seen = probe_run(target, "Unary", {"delay_ms": 50, "payload": "x"}, requests=600, **load)
    assert r.requests == 600 == seen["grpc_calls"], (r.requests, seen)
    assert r.errors_total == 0 and seen["grpc_failed"] == 0
    assert r.data["grpc"]["statuses"] == {"OK": 600}
    assert r.data["grpc"]["method"] == "redline.probe.Probe/Unary"
    assert r.data["url"] == probe_url(target, "Unary")
    assert near(r.latency.p50, 50, 0.15), r.latency
    assert r.latency.p90 <= 50 * 2, r.latency
    assert r.latency.min >= 50 * 0.999, r.latency


@pytest.mark.alone
def test_unary_p99_on_a_quiet_box(target):
    """The open model's p50 within 5 % and p99 within 50 %, a bound a slow CI box holds: p99
    52.1 and 52.3 ms were measured at load 8-10, 64.3 ms at load 6-8 beside other builds."""
    r, seen = probe_run(target, "Unary", {"delay_ms": 50}, requests=600, rate=300)
    assert r.requests == seen["grpc_calls"] == 600
    assert near(r.latency.p50, 50, 0.05) and r.latency.p99 <= 50 * 1.5, r.latency


def stream_run(target: redline.Target, **data: int) -> tuple[redline.Result, dict[str, int]]:
    """40 calls of the streaming method, 10 at a time: 20 messages each, the first at 200 ms,
    then one every 20 ms."""
    want = {"first_ms": 200, "gap_ms": 20, "count": 20, **data}
    return probe_run(target, "Stream", want, requests=40, connections=10)


def test_a_stream_is_timed_message_by_message(target):
    """A server-streaming method is timed as its messages arrive (no --stream needed): the
    first at 200 ms and the gaps at 20 ms, within 5 % at p50; every message the server wrote
    is counted (40 x 20)."""
    r, seen = stream_run(target)
    assert r.data["grpc"]["server_streaming"] is True
    assert r.requests == 40 == seen["grpc_calls"] and r.errors_total == 0
    assert r.stream is not None and r.first_byte is not None and r.chunk_gap is not None
    assert r.stream["responses"] == 40
    assert r.stream["chunks"] == 800 == seen["grpc_messages"], (r.stream, seen)
    assert r.stream["events"] == 0
    assert near(r.first_byte.p50, 200, 0.05), r.first_byte
    assert near(r.chunk_gap.p50, 20, 0.05), r.chunk_gap
    # The whole call: the last message at 200 + 19 x 20 ms.
    assert near(r.latency.p50, 580, 0.05), r.latency
    assert r.first_byte.min >= 200 * 0.999, r.first_byte


@pytest.mark.alone
def test_a_streams_first_message_p99_within_5_percent_on_a_quiet_box(target):
    """The first message's p99 within 5 %; the gaps' p50 and mean within 5 %. Not the gaps'
    p90 or p99: where a process waits for a core (load 6-10), the message due then comes late
    and the next one with it (a gap of 20 + the wait, then one near 0), and the wait lands on
    the 10 streams at once: gap p90 20.7-22.1 ms, p95 40.5-43.2 ms, p99 42.3-44.6 ms, the
    first message's p99 202.4 ms. The test below takes the wait away."""
    r, seen = stream_run(target)
    assert r.stream is not None and r.stream["chunks"] == seen["grpc_messages"] == 800
    assert r.first_byte is not None and r.chunk_gap is not None
    assert near(r.first_byte.p99, 200, 0.05), r.first_byte
    assert near(r.chunk_gap.p50, 20, 0.05) and near(r.chunk_gap.mean, 20, 0.05), r.chunk_gap


#: FIFO: a launcher that makes itself a SCHED_FIFO process (priority 10), then runs its
#: arguments: a process no busy box keeps waiting for a core.
FIFO = (
    "import os, sys; os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10));"
    " os.execv(sys.argv[1], sys.argv[1:])"
)

#: STREAM_RUN: the stream of stream_run, in a process of its own; prints its figures as JSON.
STREAM_RUN = """
import json, sys, redline
url, proto = sys.argv[1], sys.argv[2]
data = json.dumps({"first_ms": 200, "gap_ms": 20, "count": 20})
r = redline.run(url, proto=proto, data=data, requests=40, connections=10)
g, f = r.chunk_gap, r.first_byte
print(json.dumps({"messages": r.stream["chunks"], "errors": r.errors_total,
                  "gap": [g.p50, g.p90, g.p99], "first": [f.p50, f.p99]}))
"""


def fifo_permitted() -> bool:
    argv = [sys.executable, "-c", FIFO, sys.executable, "-c", "pass"]
    probe = subprocess.run(argv, capture_output=True, timeout=60)
    return probe.returncode == 0


def test_a_streams_gaps_hold_to_p99_when_no_process_waits_for_a_core():
    """The wire adds no late gap (no Nagle behind a delayed ACK, no h2 window update awaited,
    no reader that holds a message back): with the test server and the client each a
    SCHED_FIFO process, which the busy box does not keep waiting, the gaps' p50 and p90 are
    within 5 % of 20 ms and their p99 under 30 ms (20.2-21.8 ms measured at load 16-17, where
    the same runs read 24-44 ms as usual: bench/grpc_gap.py, bench/results/stream.md); each
    message the server wrote is counted. A message held by the wire until the client's
    delayed ACK (40 ms) fails it."""
    if not fifo_permitted():
        pytest.skip("SCHED_FIFO is not permitted here (no CAP_SYS_NICE)")
    argv = [sys.executable, "-m", "redline", "target", "--threads", "1", "--port", "0"]
    server = subprocess.Popen(
        [sys.executable, "-c", FIFO, *argv], stdout=subprocess.PIPE, text=True
    )
    try:
        line = server.stdout.readline() if server.stdout else ""
        base = line.strip().rsplit(" ", 1)[-1].rstrip("/")
        assert base.startswith("http://"), line
        url = base.replace("http://", "grpc://", 1) + "/redline.probe.Probe/Stream"
        before = stats_of(base)["grpc_messages"]
        run = [sys.executable, "-c", STREAM_RUN, url, str(PROBE)]
        out = subprocess.run(
            [sys.executable, "-c", FIFO, *run], capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout.strip().splitlines()[-1])
        served = stats_of(base)["grpc_messages"] - before
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(got)
    assert got["messages"] == served == 800 and got["errors"] == 0, (got, served)
    p50, p90, p99 = got["gap"]
    assert near(p50, 20, 0.05) and near(p90, 20, 0.05) and p99 < 30, got
    assert near(got["first"][1], 200, 0.05), got


def stats_of(base: str) -> dict[str, int]:
    with urllib.request.urlopen(base + "/__stats", timeout=10) as f:
        return cast(dict[str, int], json.load(f))


def test_a_client_streams_messages_are_all_sent_and_read(target):
    """Collect (client-streaming): each call sends the --data array's 3 messages one after
    another, then half-closes; the server read 180 = 60 x 3 and answered each call once,
    50 ms after it arrived (none under it; p50 within 15 % beside the busy suite, as the
    closed unary calls)."""
    many = [{"delay_ms": 50, "payload": "a"}, {"payload": "b"}, {"payload": "c"}]
    r, seen = probe_run(target, "Collect", many, requests=60, connections=6)
    assert r.requests == 60 == seen["grpc_calls"] and r.errors_total == 0, (r.errors, seen)
    assert seen["grpc_received"] == 180 and seen["grpc_messages"] == 60, seen
    g = r.data["grpc"]
    assert (g["client_streaming"], g["server_streaming"], g["messages_per_call"]) == (
        True,
        False,
        3,
    )
    assert g["statuses"] == {"OK": 60}
    assert near(r.latency.p50, 50, 0.15) and r.latency.min >= 50 * 0.999, r.latency


def test_a_bidirectional_call_reads_a_reply_to_each_message_sent(target):
    """Chat (bidirectional): 5 messages sent, 5 replies read and timed as a stream (the
    first at 100 ms, then every 20 ms: none early, p50 within 15 % beside the busy suite),
    the server's counts both ways."""
    many = [{"first_ms": 100, "gap_ms": 20}] + [{"payload": str(k)} for k in range(4)]
    r, seen = probe_run(target, "Chat", many, requests=20, connections=5)
    assert r.requests == 20 == seen["grpc_calls"] and r.errors_total == 0, (r.errors, seen)
    assert seen["grpc_received"] == 100, seen
    assert r.stream is not None and r.stream["chunks"] == 100 == seen["grpc_messages"]
    assert r.data["grpc"]["server_streaming"] and r.data["grpc"]["messages_per_call"] == 5
    assert r.first_byte is not None and r.chunk_gap is not None
    assert near(r.first_byte.p50, 100, 0.15) and r.first_byte.min >= 100 * 0.999, r.first_byte
    assert near(r.chunk_gap.p50, 20, 0.15), r.chunk_gap


def test_a_status_other_than_ok_is_counted_in_its_class(target):
    """UNAVAILABLE from a unary call (trailers only), and INTERNAL after a stream's 3
    messages: each call answered, counted as a grpc error, named by its status; the server
    failed as many as redline counts."""
    r, seen = probe_run(target, "Unary", {"delay_ms": 5, "status": 14}, requests=100)
    assert r.requests == 100 == seen["grpc_calls"] == seen["grpc_failed"]
    assert r.errors["grpc"] == 100 == r.errors_total
    assert r.data["grpc"]["statuses"] == {"UNAVAILABLE": 100}
    assert r.status_codes == {14: 100}
    s, seen = stream_run(target, count=3, status=13)
    assert s.errors["grpc"] == 40 == seen["grpc_failed"]
    assert s.data["grpc"]["statuses"] == {"INTERNAL": 40}
    assert s.stream is not None and s.stream["chunks"] == 120 == seen["grpc_messages"]


def test_the_command_line_runs_a_call_and_names_its_statuses(target, tmp_path):
    out = tmp_path / "r.json"
    p = run_cli(
        "run",
        probe_url(target, "Unary"),
        "--proto",
        str(PROBE),
        "--data",
        '{"delay_ms": 2}',
        "-c",
        "4",
        "-n",
        "200",
        "--json",
        str(out),
        "-q",
    )
    assert p.returncode == 0, p.stderr
    assert "gRPC statuses: OK 200" in p.stdout, p.stdout
    assert json.loads(out.read_text())["requests"] == 200


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["grpc://127.0.0.1:9/redline.probe.Probe/Unary"], "needs --proto FILE"),
        (["grpc://127.0.0.1:9/redline.probe.Probe/Nope", "--proto", str(PROBE)], "no method"),
        (
            ["grpc://127.0.0.1:9/redline.probe.Probe/Unary", "--proto", str(PROBE)]
            + ["--data", "[{}, {}]"],
            "takes one message: a JSON array of messages goes with a client-streaming",
        ),
        (["grpc://127.0.0.1:9/redline.probe.Nope/Unary", "--proto", str(PROBE)], "no service"),
        (
            ["grpc://127.0.0.1:9/redline.probe.Probe/Unary", "--proto", str(PROBE)]
            + ["--data", '{"delay": 1}'],
            "does not fit redline.probe.ProbeRequest",
        ),
        (["grpc://127.0.0.1:9/p.S/M", "--proto", "/nonexistent.proto"], "no such file"),
        (["grpc://127.0.0.1:9", "--proto", str(PROBE)], "a gRPC URL is"),
        (["http://127.0.0.1:9/", "--proto", str(PROBE)], "--proto goes with a grpc:// URL"),
        (
            ["grpc://127.0.0.1:9/redline.probe.Probe/Unary", "--proto", str(PROBE)]
            + ["--body", "x"],
            "a gRPC run sends --data",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, said):
    p = run_cli("run", *args, "-n", "1", "-q")
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert said in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


class Counting(grpc.ServerInterceptor):  # type: ignore[misc]
    """Counting is a grpcio server interceptor that counts the calls grpcio dispatched."""

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()

    def intercept_service(self, continuation: Any, details: Any) -> Any:
        with self._lock:
            self.calls += 1
        return continuation(details)


@pytest.fixture()
def health() -> Iterator[tuple[str, Counting]]:
    """grpcio's health service on a loopback port, "" SERVING; yields (URL, counter)."""
    counting = Counting()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), interceptors=[counting])
    servicer = HealthServicer()
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"grpc://127.0.0.1:{port}/grpc.health.v1.Health/Check", counting
    finally:
        server.stop(grace=None).wait(10)


HEALTH_PROTO = ROOT / "tests/protos/health.proto"


@pytest.fixture()
def health_tls(tls_files: tuple[Path, Path, Path]) -> Iterator[tuple[str, Path, Counting]]:
    """grpcio's health service over TLS (its own TLS stack, BoringSSL) on a loopback port,
    with a certificate for 127.0.0.1; yields (grpcs:// URL, the CA's PEM file, counter)."""
    ca_pem, cert_pem, key_pem = tls_files
    counting = Counting()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), interceptors=[counting])
    servicer = HealthServicer()
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    creds = grpc.ssl_server_credentials([(key_pem.read_bytes(), cert_pem.read_bytes())])
    port = server.add_secure_port("127.0.0.1:0", creds)
    server.start()
    try:
        yield f"grpcs://127.0.0.1:{port}/grpc.health.v1.Health/Check", ca_pem, counting
    finally:
        server.stop(grace=None).wait(10)


def test_grpcs_is_tls_with_the_https_runs_trust_options(health_tls):
    """grpcs:// is TLS (h2 by ALPN) against a server not written here: the CA given with
    cacert, or none checked (-k); grpcio's count of calls equals redline's, all OK."""
    url, ca_pem, counting = health_tls
    r = redline.run(url, proto=HEALTH_PROTO, cacert=str(ca_pem), connections=4, requests=200)
    assert r.requests == 200 == counting.calls, (r.requests, counting.calls)
    assert r.data["grpc"]["statuses"] == {"OK": 200} and r.errors_total == 0
    assert r.data["url"] == url
    jsonschema.validate(r.data, SCHEMA)
    p = run_cli("run", url, "--proto", str(HEALTH_PROTO), "-k", "-n", "30", "-q")
    assert p.returncode == 0, p.stderr
    assert "gRPC statuses: OK 30" in p.stdout, p.stdout
    assert counting.calls == 230, counting.calls


def test_grpcs_to_an_untrusted_server_is_one_line_before_any_call(health_tls):
    url, _, counting = health_tls
    p = run_cli("run", url, "--proto", str(HEALTH_PROTO), "-n", "5")
    assert p.returncode == 2, (p.stdout, p.stderr)
    (line,) = p.stderr.strip().splitlines()
    assert "TLS handshake with 127.0.0.1:" in line and "--cacert" in line, line
    assert counting.calls == 0


def test_grpcios_health_service_counts_what_redline_counts(health):
    """A server not written here: grpcio answers Check (SERVING) and NOT_FOUND for a service
    it does not know; its interceptor's count of calls equals redline's, both ways."""
    url, counting = health
    r = redline.run(url, proto=HEALTH_PROTO, data="{}", connections=4, requests=300)
    assert r.requests == 300 == counting.calls, (r.requests, counting.calls)
    assert r.data["grpc"]["statuses"] == {"OK": 300} and r.errors_total == 0
    n = redline.run(url, proto=HEALTH_PROTO, data='{"service": "nope"}', rate=100, requests=100)
    assert n.requests == 100 and counting.calls == 400, (n.requests, counting.calls)
    assert n.data["grpc"]["statuses"] == {"NOT_FOUND": 100} and n.errors["grpc"] == 100


def test_grpcio_reads_every_message_of_a_client_stream():
    """A server not written here reads the client stream: grpcio serves the probe's Collect
    by a generic handler that counts each request message it reads; 50 calls of 4 messages
    are 200 messages there, and each call is OK in redline's books."""
    read = []

    def collect(requests: Iterator[bytes], _context: Any) -> bytes:
        read.append(sum(1 for _ in requests))
        return b""  # an empty ProbeReply

    handler = grpc.method_handlers_generic_handler(
        "redline.probe.Probe", {"Collect": grpc.stream_unary_rpc_method_handler(collect)}
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), handlers=[handler])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        url = f"grpc://127.0.0.1:{port}/redline.probe.Probe/Collect"
        data = json.dumps([{"payload": str(k)} for k in range(4)])
        r = redline.run(url, proto=PROBE, data=data, connections=4, requests=50)
    finally:
        server.stop(grace=None).wait(10)
    assert r.requests == 50 == len(read) and sum(read) == 200, (r.requests, read)
    assert r.data["grpc"]["statuses"] == {"OK": 50} and r.errors_total == 0
