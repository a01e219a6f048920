"""HTTP/1.1 client CPU per request against a server not written here: Debian's nginx.

Issue #18's performance lines for HTTP/1.1, in one run, against the same nginx:
  closed  redline -c50 against wrk -c50 (one thread each): redline ≤ 0.9× wrk's CPU a request;
  open    redline --rate R against wrk2 -R R (one thread, up to 50 connections each), at shares
          of the server's capacity: redline ≤ 0.9× wrk2's CPU a request at every rate.

nginx runs one worker, no master, pinned to core 0, answering `return 200` from memory with
keep-alive unlimited (its default of 1,000 requests a connection would make every tool pay for
reconnects); each generator runs in turn pinned to core 1 (bench/run.py's meters): requests are
counted by nginx (stub_status, its own reads taken off), client CPU is the kernel's rusage of
the generator's process tree, and the rows are interleaved over the repetitions with the
median kept. The capacity the open rates are shares of is wrk's best of three 3 s closed runs.

    .venv/bin/python bench/http1.py [--seconds 10] [--reps 3] [--shares 10,25,50,90]
                                    [--rates 2000,5000,...] [--baseline [NAME=]DIR ...]
                                    [--send-ahead 1ms]
                                    [--request-id] [--no-send-lag]

--request-id has nginx add `X-Request-Id: <32 random hex digits>` to every response, as many
services do: no two heads are alike, so redline's head memo never hits and every head is
parsed (its worst case; wrk parses every head anyway). `--shares ''` leaves the open rows out.

The open rows carry each tool's send lag as the wire saw it (bench/sendlag.py: a packet
capture on the loopback, the requests' kernel stamps against an even schedule at the asked
rate; p50 / p99 in ms), so that the CPU lines are read at a known send precision.
--no-send-lag leaves it out.

--baseline DIR adds a "redline (baseline)" row after each redline row: the same command from
the package in DIR (a copy of python/ holding another build's extension), as in bench/h2.py;
NAME=DIR names the row "redline (NAME)", and the flag may be given more than once.

wrk comes from Debian, wrk2 from ../shared/tools/install-peers.sh. The table is appended to
bench/results/seam.md.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import record
import run
from run import (
    CONNS,
    SERVER_CORE,
    Gen,
    Row,
    baseline_argv,
    baseline_flags,
    interleave,
    measure,
    peers,
    read_baselines,
    redline_argv,
)

NGINX = "/usr/sbin/nginx"


class StubStatus:
    """StubStatus counts the requests nginx answered, less its own reads of /__status (each
    read counts itself)."""

    def __init__(self) -> None:
        self.reads = 0

    def __call__(self, url: str) -> int:
        with urllib.request.urlopen(url + "/__status", timeout=5) as r:
            lines = r.read().decode().splitlines()
        self.reads += 1
        # "Active connections: N", "server accepts handled requests", " A H R", ...
        return int(lines[2].split()[2]) - self.reads


def free_port() -> int:
    """free_port asks the kernel for a free port (nginx cannot listen on 0 and say which)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def nginx(request_id: bool = False) -> Iterator[str]:
    """nginx runs Debian's nginx (one worker, pinned to the server core) in a scratch
    directory on a free port; yields its URL. With ``request_id`` every response carries a
    random X-Request-Id."""
    with tempfile.TemporaryDirectory() as d:
        port = free_port()
        extra = "add_header X-Request-Id $request_id always;" if request_id else ""
        conf = f"""daemon off; master_process off; worker_processes 1;
pid {d}/nginx.pid; error_log {d}/error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  keepalive_requests 100000000; keepalive_timeout 120s;
  client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d};
  uwsgi_temp_path {d}; scgi_temp_path {d};
  server {{
    listen 127.0.0.1:{port} backlog=4096;
    location = /__status {{ stub_status; }}
    location / {{ {extra} return 200 "ok\\n"; }}
  }}
}}
"""
        Path(d, "nginx.conf").write_text(conf)
        argv = ["taskset", "-c", SERVER_CORE, NGINX, "-p", d, "-c", f"{d}/nginx.conf"]
        server = subprocess.Popen(
            argv + ["-e", f"{d}/error.log"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            give_up = time.monotonic() + 10
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if time.monotonic() > give_up or server.poll() is not None:
                        log = Path(d, "error.log")
                        raise SystemExit(
                            f"bench: nginx did not start: {log.read_text() if log.exists() else ''}"
                        ) from None
                    time.sleep(0.05)
            yield f"http://127.0.0.1:{port}"
        finally:
            server.terminate()
            server.wait(timeout=10)


def generators(
    p: dict[str, str],
    url: str,
    secs: int,
    rates: list[int],
    baselines: list[tuple[str, Path]] | None = None,
    send_ahead: str | None = None,
) -> list[Gen]:
    """The closed rows, then the open rows of each rate (the peer's first); with ``baselines``
    a "redline (NAME)" row after each redline row for each (NAME, package), and with
    ``send_ahead`` a "redline (send-ahead X)" row after each open redline row: the same run
    sending the hits due within X together (wrk2 sends on its event loop's millisecond
    ticks)."""
    closed = ("closed", [p["WRK"], "-t1", f"-c{CONNS}", f"-d{secs}s", url + "/"])
    pairs = [(closed, redline_argv(url, "-c", str(CONNS), "-d", f"{secs}s"))]
    for rate in rates:
        wrk2 = [p["WRK2"], "-t1", f"-c{CONNS}", f"-d{secs}s", f"-R{rate}", url + "/"]
        flags = ("--rate", str(rate), "--max-connections", str(CONNS), "-d", f"{secs}s")
        pairs.append(((f"open {rate:,}/s", wrk2), redline_argv(url, *flags)))
    gens: list[Gen] = []
    for (mode, peer), argv in pairs:
        gens.append(("wrk" if peer[0] == p["WRK"] else "wrk2", mode, peer, None))
        gens.append(("redline", mode, argv, None))
        for name, path in baselines or []:
            gens.append((f"redline ({name})", mode, baseline_argv(argv, path), None))
        if send_ahead and mode != "closed":
            ahead = [*argv, "--send-ahead", send_ahead]
            gens.append((f"redline (send-ahead {send_ahead})", mode, ahead, None))
    return gens


def table(rows: list[Row]) -> str:
    """The markdown table: each row's ratio is to the wrk or wrk2 row of the same model."""

    def peer_of(r: Row) -> Row | None:
        return next((q for q in rows if q.mode == r.mode and q.tool in ("wrk", "wrk2")), None)

    return run.table(rows, peer_of=peer_of, ratio="ratio to its peer")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions (median kept)")
    ap.add_argument(
        "--shares", default="10,25,50,90", help="open rates, as percents of the capacity"
    )
    ap.add_argument(
        "--rates", help="open rates in req/s (instead of --shares: a busy machine's capacity moves)"
    )
    ap.add_argument(
        "--send-ahead", metavar="DURATION", help="adds open rows at this --send-ahead (e.g. 1ms)"
    )
    ap.add_argument(
        "--request-id",
        action="store_true",
        help="nginx adds a random X-Request-Id to every response (no two heads alike)",
    )
    ap.add_argument(
        "--no-send-lag",
        action="store_true",
        help="leave out the open rows' send lag (its capture needs root: bench/sendlag.py)",
    )
    baseline_flags(ap)
    args = ap.parse_args()
    ctx = record.Context.now()
    p = peers()
    missing = [k for k in ("WRK", "WRK2") if not p.get(k)]
    if missing or not Path(NGINX).exists():
        print(f"bench: needs nginx, wrk and wrk2 (missing: {missing or NGINX})", file=sys.stderr)
        return 2
    builds = read_baselines(args)
    count = StubStatus()
    with nginx(args.request_id) as url:
        probe = [p["WRK"], "-t1", f"-c{CONNS}", "-d3s", url + "/"]
        capacity = max(measure("wrk", "probe", probe, url, count=count).rps for _ in range(3))
        print(f"  capacity probe (wrk): {capacity:,.0f} req/s", flush=True)
        if args.rates:
            rates = [int(r) for r in args.rates.split(",")]
        else:
            shares = [int(s) for s in args.shares.split(",") if s]
            rates = [int(capacity * s / 100) // 100 * 100 for s in shares]
        gens = generators(p, url, args.seconds, rates, builds, args.send_ahead)
        port = int(url.rsplit(":", 1)[1])
        due = {f"open {rate:,}/s": float(rate) for rate in rates}

        def schedule(mode: str) -> tuple[int, float] | None:
            return None if args.no_send_lag or mode not in due else (port, due[mode])

        rows = interleave(gens, args.reps, url, count, schedule)
    heads = ", a random X-Request-Id in every response" if args.request_id else ""
    text = f"nginx capacity (wrk, best of 3 × 3 s): {capacity:,.0f} req/s{heads}\n\n" + table(rows)
    print()
    print(text)
    if not args.no_record:
        title = "HTTP/1.1 against nginx: redline vs wrk and wrk2"
        if args.request_id:
            title += ", no two response heads alike"
        where = record.append("seam", title, ctx, text)
        print(f"\nrecorded in {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
