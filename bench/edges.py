"""edges: the two end-of-run scenarios of issue 7, run as a new user would, with the server's
own count beside redline's books.

    .venv/bin/python bench/edges.py

1. hang: a server that answers 3,000 requests and then never answers again, ``redline run -c 20
   -d 4s``: every request the server received must be in the report (answered or unfinished).
2. pool: ``--rate 1000 --max-connections 10`` against the bundled target at 50 ms a request for
   5 s: the pool cap, not the generator, limits the run, and the hits never sent are counted.

It prints one line of figures per scenario plus the summary's verdict line.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import redline


class HangAfter:
    """HangAfter is an HTTP/1.1 server on 127.0.0.1 (port 0) that answers the first ``n``
    requests with 200 and holds every later one open without answering; it counts them all."""

    def __init__(self, n: int):
        self.n = n
        self.received = 0
        self.answered = 0
        self.port = 0
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait(10)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)

        async def main() -> None:
            server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            await server.serve_forever()

        self._loop.run_until_complete(main())

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                self.received += 1
                if self.received > self.n:
                    await asyncio.sleep(3600)
                self.answered += 1
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def redline_run(*args: str) -> tuple[dict, str]:
    """redline_run runs the CLI and returns its JSON document and its summary text."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "r.json"
        p = subprocess.run(
            [sys.executable, "-m", "redline", "run", "-q", "--json", str(out), *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if p.returncode != 0:
            raise SystemExit(f"redline failed ({p.returncode}): {p.stderr.strip()}")
        return json.loads(out.read_text()), p.stdout


def books(r: dict) -> str:
    """books is the report's accounting in one line (fields absent before issue 7 read '-')."""
    transport = r["errors_total"] - r["errors"]["status"]
    keys = ("intended", "unfinished", "unsent", "retries", "clamped")
    extra = " ".join(f"{k}={r.get(k, '-')}" for k in keys)
    lat = r["latency_ms"]
    return (
        f"requests={r['requests']} transport_errors={transport} {extra} "
        f"p99={lat['p99']:.1f}ms max={lat['max']:.1f}ms connections={r['connections']}"
    )


def verdict(text: str) -> str:
    """verdict is the summary's last verdict line."""
    lines = [ln for ln in text.splitlines() if "generator" in ln.lower() or "limited" in ln]
    return lines[-1] if lines else "(no verdict line)"


def main() -> None:
    hang = HangAfter(3000)
    r, text = redline_run("-c", "20", "-d", "4s", f"http://127.0.0.1:{hang.port}/")
    print(f"hang:  server received={hang.received} answered={hang.answered} | {books(r)}")
    print(f"       {verdict(text)}")
    with redline.Target(threads=1) as t:
        before = t.stats()["requests"]
        r, text = redline_run(
            "--rate", "1000", "--max-connections", "10", "-d", "5s", t.url + "/?latency=50ms"
        )
        seen = t.stats()["requests"] - before
    print(f"pool:  server received={seen} | {books(r)}")
    print(f"       cpu={r['generator']['cpu_s']:.2f}s {verdict(text)}")


if __name__ == "__main__":
    main()
