"""Syscalls per request: redline's engine and wrk under ``strace -c -f``, same server, same count.

    .venv/bin/python bench/syscalls.py [--requests 200000] [--seconds 10] [--no-record]

The server (redline's target, one thread, on core 0) runs untraced; each generator runs under
``strace -c -f`` (every thread counted) with 50 keep-alive connections and one thread: redline
for ``--requests`` requests, wrk for ``--seconds`` (it has no request count). Each syscall's
count is divided by the requests the *server* counted, so the two are on the same meter; "other"
includes redline's Python start-up (imports), amortised over the count. strace slows both tools
down a lot: these are counts, not speeds. The table is appended to
bench/results/syscalls.md with the date, load average, commit and command (bench/record.py).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import record
from run import CONNS, peers, redline_argv, server_requests, target_server

#: Syscalls shown even when rare; the rest are folded into "other".
SHOWN = (
    "sendto",
    "recvfrom",
    "recvmsg",
    "recvmmsg",
    "write",
    "read",
    "writev",
    "readv",
    "epoll_wait",
    "epoll_ctl",
)


def strace_counts(argv: list[str], url: str) -> tuple[dict[str, int], int]:
    """Runs argv under strace -c -f; returns (calls by syscall, requests the server counted)."""
    with tempfile.NamedTemporaryFile(suffix=".strace") as out:
        before = server_requests(url)
        subprocess.run(
            ["strace", "-c", "-f", "-o", out.name, *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=600,
            check=False,
        )
        served = server_requests(url) - before
        return parse_summary(Path(out.name).read_text()), served


def parse_summary(text: str) -> dict[str, int]:
    """parse_summary reads strace -c's table (``% time seconds usecs/call calls [errors] name``)."""
    calls: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 5 or not parts[0].replace(".", "", 1).isdigit():
            continue
        name = parts[-1]
        if name != "total" and parts[3].isdigit():
            calls[name] = calls.get(name, 0) + int(parts[3])
    return calls


def table(rows: list[tuple[str, dict[str, int], int]]) -> str:
    """table: one row per tool, one column per syscall of interest, per request served."""
    lines = [
        "| tool | requests (server) | " + " | ".join(SHOWN) + " | other | total |",
        "|---|---:|" + "---:|" * (len(SHOWN) + 2),
    ]
    for tool, calls, served in rows:
        per = [calls.get(s, 0) / served if served else float("nan") for s in SHOWN]
        other = sum(v for k, v in calls.items() if k not in SHOWN) / max(served, 1)
        total = sum(calls.values()) / max(served, 1)
        cells = " | ".join(f"{x:.3f}" for x in per)
        lines.append(f"| {tool} | {served:,} | {cells} | {other:.3f} | {total:.3f} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=200_000, help="redline's request count")
    ap.add_argument("--seconds", type=int, default=10, help="wrk's duration")
    ap.add_argument("--results", type=Path, help="append here instead of bench/results/")
    ap.add_argument("--no-record", action="store_true", help="print the table only")
    args = ap.parse_args()
    ctx = record.Context.now()
    if not shutil.which("strace"):
        print("syscalls: strace is required", file=sys.stderr)
        return 2
    p = peers()
    rows = []
    with target_server() as url:
        argv = redline_argv(url, "-c", str(CONNS), "-n", str(args.requests))
        rows.append(("redline", *strace_counts(argv, url)))
        if p["WRK"]:
            argv = [p["WRK"], "-t1", f"-c{CONNS}", f"-d{args.seconds}s", url + "/"]
            rows.append(("wrk", *strace_counts(argv, url)))
        else:
            print("syscalls: wrk not found, skipped", file=sys.stderr)
    text = table(rows)
    print(text)
    if not args.no_record:
        where = record.append(
            "syscalls", "syscalls per request (strace -c -f)", ctx, text, args.results
        )
        print(f"\nrecorded in {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
