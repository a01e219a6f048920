"""deployments: the deployments of known cause that tests/test_parts.py's searches and
bench/bottleneck.py search, each a local process whose limit is set by construction:

- :func:`worker_pool` (``accept-queue``): two worker threads, each taking a connection off the
  listening socket, answering after 20 ms and closing it. It serves 100 req/s at most, the
  rest wait in the accept queue, and its CPU stays low: the truth is the accept queue.
- :func:`http_server` with one of :data:`HANDLERS`: a threaded HTTP/1.1 server whose requests
  each spend 2 ms of CPU (``cpu``: 500 req/s on a core of its own), hold one of 4 exported
  slots for 20 ms (``pool``) or take one unexported lock for 5 ms (``lock``).

(bench/ puts tests/ on its path to import it, as it does for the other helpers.)
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

#: SCRIPT: the worker pool, run as ``python -c SCRIPT CORES LIFETIME_S``: pinned to CORES (a comma
#: list, "" for any), it prints its port and exits after LIFETIME_S if no one stops it first.
SCRIPT = textwrap.dedent(
    """\
    import os, socket, sys, threading, time
    cores = [int(c) for c in sys.argv[1].split(",") if c]
    if cores:
        os.sched_setaffinity(0, set(cores))
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0)); s.listen(512)
    print(s.getsockname()[1], flush=True)
    ANSWER = b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\nok"
    def work():
        while True:
            c, _ = s.accept()
            try:
                data = b""
                while b"\\r\\n\\r\\n" not in data:
                    got = c.recv(4096)
                    if not got:
                        break
                    data += got
                time.sleep(0.02)
                c.sendall(ANSWER)
            except OSError:
                pass
            finally:
                c.close()
    for _ in range(2):
        threading.Thread(target=work, daemon=True).start()
    time.sleep(float(sys.argv[2]))
    """
)


def worker_pool(cores: str = "", lifetime_s: float = 600.0) -> tuple[subprocess.Popen[str], int]:
    """worker_pool starts the server (on ``cores``, a comma list, "" for any; gone after
    ``lifetime_s`` at the latest) and returns its process, which the caller stops, and port."""
    return _started("the worker pool", SCRIPT, cores, f"{lifetime_s:g}")


def _started(what: str, script: str, *args: str) -> tuple[subprocess.Popen[str], int]:
    """_started runs ``python -c script args`` and reads the port it prints first; a server
    that prints none is stopped and a RuntimeError names ``what``."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # a client that hung up is no news
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.strip():
        proc.kill()
        proc.wait(10)
        raise RuntimeError(f"{what} did not start")
    return proc, int(line)


#: HTTP: a threaded HTTP/1.1 server of one handler, run as ``python -c HTTP CORES`` (a comma
#: list, "" for any); the handler's body is each deployment's own (``handle()``), /metrics its
#: exporter's page. It prints its port and serves until it is stopped.
HTTP = """\
import os, resource, sys, threading, time, http.server
cores = [int(c) for c in sys.argv[1].split(",") if c]
if cores:
    os.sched_setaffinity(0, set(cores))
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
{setup}
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms ACK wait
    def do_GET(self):
        body = metrics().encode() if self.path == "/metrics" else (handle() or b"ok")
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
class S(http.server.ThreadingHTTPServer):
    request_queue_size = 4096
    daemon_threads = True
s = S(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"""

#: HANDLERS: each deployment's ``handle()`` and ``metrics()`` for :data:`HTTP`.
HANDLERS = {
    "cpu": """
def handle():
    end = time.thread_time() + 0.002
    while time.thread_time() < end:
        pass
def metrics():
    return ""
""",
    "pool": """
SLOTS, lock, held = threading.Semaphore(4), threading.Lock(), [0]
def handle():
    with SLOTS:
        with lock:
            held[0] += 1
        time.sleep(0.02)
        with lock:
            held[0] -= 1
def metrics():
    return ("# TYPE db_pool_in_use gauge\\ndb_pool_in_use %d\\n"
            "# TYPE db_pool_limit gauge\\ndb_pool_limit 4\\n" % held[0])
""",
    "lock": """
LOCK = threading.Lock()
def handle():
    with LOCK:
        time.sleep(0.005)
def metrics():
    return ""
""",
}


def http_server(name: str, cores: str = "") -> tuple[subprocess.Popen[str], int]:
    """http_server starts :data:`HTTP` with the handler ``name`` of :data:`HANDLERS` (on
    ``cores``) and returns its process, which the caller stops, and port."""
    return _started(f"the {name} server", HTTP.format(setup=HANDLERS[name]), cores)
