"""https: redline against real TLS servers on 127.0.0.1 (certificates from a throwaway CA).

Two servers: Python's own http.server behind ssl, so the TLS stack on the other side is
OpenSSL, not rustls; and redline's own target in https mode. The requests each counted are
compared with what redline reported.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import redline
from accounting import assert_books
from conftest import run_cli

trustme = pytest.importorskip("trustme")

BODY = b"hello over tls\n"


@dataclass
class TlsServer:
    """TlsServer is a keep-alive HTTPS server that counts the requests it answered."""

    url: str
    ca_pem: Path
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: int = 0
    handshakes: int = 0

    def count(self) -> int:
        with self.lock:
            return self.requests


@pytest.fixture(scope="module")
def tls_server(tls_files: tuple[Path, Path, Path]) -> Iterator[TlsServer]:
    ca_pem, cert_pem, key_pem = tls_files
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert_pem, key_pem)

    state: dict[str, TlsServer] = {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            srv = state["server"]
            with srv.lock:
                srv.requests += 1
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)

        def log_message(self, *args: object) -> None:
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def get_request(self):  # type: ignore[no-untyped-def]
            sock, addr = self.socket.accept()
            sock.settimeout(10)
            try:
                tls = ctx.wrap_socket(sock, server_side=True)
            except (ssl.SSLError, OSError):
                sock.close()
                raise
            with state["server"].lock:
                state["server"].handshakes += 1
            return tls, addr

        def handle_error(self, request, client_address):  # type: ignore[no-untyped-def]
            pass  # a client that gives up on our certificate is part of the tests

    httpd = Server(("127.0.0.1", 0), Handler)
    port = httpd.server_address[1]
    state["server"] = TlsServer(url=f"https://127.0.0.1:{port}/", ca_pem=ca_pem)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield state["server"]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def test_https_requests_counted_by_the_server(tls_server: TlsServer) -> None:
    before = tls_server.count()
    result = redline.run(
        tls_server.url,
        connections=4,
        requests=300,
        threads=1,
        cacert=tls_server.ca_pem,
    )
    assert result.requests == 300
    assert sum(result.errors.values()) == 0, result.errors
    assert tls_server.count() - before == 300
    # Keep-alive: four connections (four handshakes), not one per request.
    assert result.data["connects"] <= 8


def test_https_open_model_by_host_name(tls_server: TlsServer) -> None:
    """The certificate names "localhost" too: SNI and name verification on a DNS name, in the
    open model. The schedule is held exactly (200 hits intended in 1 s) and every one is in
    the books; the server answered what redline counts. How many were sent is not held to
    the schedule: this server is Python's, one thread a connection and each TLS handshake in
    turn in its accept loop, and beside two CPU hogs (load 10-11) its p50 read 315 ms and p99
    5.9 s, and 22 of the 200 went unanswered in the run (178: in the books as unsent or cut
    off). A certificate refused fails every hit; at least half are held answered."""
    url = tls_server.url.replace("127.0.0.1", "localhost")
    before = tls_server.count()
    result = redline.run(url, rate=200, duration="1s", threads=1, cacert=tls_server.ca_pem)
    assert sum(result.errors.values()) == 0, result.errors
    books = assert_books(result)
    assert result.data["intended"] == 200, books
    assert 100 <= result.requests <= 200, books
    assert tls_server.count() - before == result.requests


def test_untrusted_certificate_is_one_line_and_exit_2(tls_server: TlsServer) -> None:
    before = tls_server.count()
    p = run_cli("run", tls_server.url, "-n", "10", "-q")
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "certificate is signed by a CA this machine does not trust" in lines[0], lines
    assert "--cacert" in lines[0] and "invalid peer certificate" not in lines[0], lines
    assert tls_server.count() == before, "no request may go out over an untrusted connection"


def test_a_ca_certificate_served_as_the_servers_own_is_said_in_words(tmp_path: Path) -> None:
    """What `openssl req -x509` makes is a CA certificate; served as is, rustls refused it
    as `invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))`. The line says what
    it is and what to do; with --cacert that certificate is pinned and the run goes."""
    ca = trustme.CA()
    cert, key = tmp_path / "ca.pem", tmp_path / "ca.key"
    ca.cert_pem.write_to_path(str(cert))
    ca.private_key_pem.write_to_path(str(key))
    with redline.Target(threads=1, tls_cert=cert, tls_key=key) as t:
        p = run_cli("run", t.url + "/", "-n", "10", "-q")
        refused = t.stats()["requests"]
        pinned = run_cli("run", t.url + "/", "-n", "10", "-q", "--cacert", str(cert))
        served = t.stats()["requests"]
    assert p.returncode == 2, (p.stdout, p.stderr)
    (line,) = p.stderr.strip().splitlines()
    assert "is a CA certificate presented as the server's own" in line, line
    assert "--cacert" in line and "OtherError" not in line and "CaUsedAsEndEntity" not in line
    assert refused == 0, "no request went out"
    assert pinned.returncode == 0, pinned.stderr
    assert served == 10


def test_insecure_skips_verification(tls_server: TlsServer) -> None:
    before = tls_server.count()
    p = run_cli("run", tls_server.url, "-n", "40", "-c", "2", "-t", "1", "-k", "-q")
    assert p.returncode == 0, p.stderr
    assert tls_server.count() - before == 40
    assert "40 requests" in p.stdout


def test_cacert_flag_and_missing_file(tls_server: TlsServer) -> None:
    p = run_cli("run", tls_server.url, "-n", "5", "--cacert", str(tls_server.ca_pem), "-q")
    assert p.returncode == 0, p.stderr
    p = run_cli("run", tls_server.url, "-n", "5", "--cacert", "/nonexistent/ca.pem")
    assert p.returncode == 2 and "cacert" in p.stderr and "Traceback" not in p.stderr


def test_https_to_a_plain_http_server_says_so(target: redline.Target) -> None:
    url = target.url.replace("http://", "https://") + "/"
    p = run_cli("run", url, "-n", "5", "-k", "--timeout", "2s")
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "TLS handshake" in lines[0], p.stderr


def test_the_target_serves_https(tls_files: tuple[Path, Path, Path]) -> None:
    ca_pem, cert_pem, key_pem = tls_files
    with redline.Target(threads=1, tls_cert=cert_pem, tls_key=key_pem) as t:
        assert t.url.startswith("https://127.0.0.1:")
        closed = redline.run(t.url + "/?size=2000", connections=8, requests=2000, cacert=ca_pem)
        assert closed.requests == 2000 and closed.errors_total == 0
        assert closed.data["bytes_in"] >= 2000 * 2000
        assert t.stats()["requests"] == 2000
        assert t.stats()["connections"] <= 16  # keep-alive over TLS
        opened = redline.run(t.url + "/", rate=500, duration="1s", threads=1, cacert=ca_pem)
        assert opened.errors_total == 0 and 450 <= opened.requests <= 500
        failing = redline.run(t.url + "/?status=503", connections=2, requests=50, cacert=ca_pem)
        assert failing.errors["status"] == 50 and failing.status_codes == {503: 50}
        assert t.stats()["requests"] == 2000 + opened.requests + 50


def test_target_cli_tls_flags_go_together(tls_files: tuple[Path, Path, Path]) -> None:
    p = run_cli("target", "--tls-cert", str(tls_files[1]))
    assert p.returncode == 2 and "--tls-key" in p.stderr and "Traceback" not in p.stderr
    p = run_cli("target", "--tls-cert", "/nonexistent/c.pem", "--tls-key", "/nonexistent/k.pem")
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().count("\n") == 0 and "certificate" in p.stderr
