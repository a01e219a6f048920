"""worker_pool: a deployment of known cause, for tests/test_parts.py's search and
bench/bottleneck.py's ``accept-queue``: a server of two worker threads, each taking a
connection off the listening socket, answering after 20 ms and closing it. It serves 100 req/s
at most, the rest wait in the accept queue, and its CPU stays low: the truth is the accept
queue. (bench/ puts tests/ on its path to import it, as it does for the other helpers.)
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

#: SCRIPT: the server, run as ``python -c SCRIPT CORES LIFETIME_S``: pinned to CORES (a comma
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
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, cores, f"{lifetime_s:g}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.strip():
        proc.kill()
        proc.wait(10)
        raise RuntimeError("the worker pool did not start")
    return proc, int(line)
