"""The open model's send-ahead window: what it saves in CPU, and what it costs in truth.

Hits due within the window go out together (`--send-ahead`, default 200 µs): a wider window
means fewer wake-ups, so less CPU a request, and a burstier arrival stream. This bench puts a
number on both against a server of known truth: the test server with one slot and a fixed
service time S, loaded at a rate R with R × S = the utilisation (0.4 by default). A stream
sent on time never queues there (each answer leaves before the next hit is due), so every
latency is S plus the loopback's few tens of µs; whatever a window adds above that is the
queueing its bursts cause (up to window × utilisation). wrk2 -R R (one thread, late by up to
its 1 ms tick, latency timed from the intended send) runs beside it as the CPU peer.

    .venv/bin/python bench/send_ahead.py [--rate 2000] [--utilisation 0.4] [--seconds 8]
                                         [--reps 3] [--windows 0,200us,500us,1ms]

Server on core 0, each generator in turn on core 1 (bench/run.py's meters: the server counts
the requests, rusage gives the CPU), rows interleaved over the repetitions, the run with the
median CPU a request kept with its own latencies. Appended to bench/results/seam.md.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

import record
from run import CONNS, Row, measure, peers, precompile, redline_argv, target_server

#: WRK2_PCT: a line of wrk2's --latency distribution, e.g. " 99.000%    1.23ms".
WRK2_PCT = re.compile(r"^\s*(50|90|99)\.000%\s+([\d.]+)(us|ms|s)\s*$", re.M)
UNIT_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def wrk2_latency(out: str) -> dict[str, float]:
    """The p50/p90/p99 (ms) of wrk2's --latency output."""
    return {f"p{m[1]}": float(m[2]) * UNIT_MS[m[3]] for m in WRK2_PCT.finditer(out)}


def redline_latency(path: Path) -> dict[str, float]:
    """The p50/p90/p99 (ms) of a redline --json result."""
    lat = json.loads(path.read_text())["latency_ms"]
    return {k: float(lat[k]) for k in ("p50", "p90", "p99")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=int, default=2000)
    ap.add_argument("--utilisation", type=float, default=0.4)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--windows", default="0,200us,500us,1ms")
    ap.add_argument("--no-record", action="store_true", help="print the table only")
    args = ap.parse_args()
    if not 0 < args.utilisation < 1 or args.rate <= 0:
        ap.error("--rate must be positive and --utilisation between 0 and 1")
    ctx = record.Context.now()
    wrk2 = peers().get("WRK2")
    if not wrk2:
        print("bench: needs wrk2 (../shared/tools/install-peers.sh)", file=sys.stderr)
        return 2
    precompile()
    service_us = round(1e6 * args.utilisation / args.rate)
    d = Path(tempfile.mkdtemp(prefix="send-ahead-"))
    runs: dict[str, list[tuple[Row, dict[str, float]]]] = {}
    probe = ("--capacity", "1", "--service-time", f"{service_us}us")
    with target_server(*probe) as url:
        windows = args.windows.split(",")
        gens = [("wrk2", None)] + [(f"redline --send-ahead {w}", w) for w in windows]
        for rep in range(args.reps):
            for name, window in gens:
                out = d / f"{len(runs.get(name, []))}-{name.replace(' ', '_')}"
                if window is None:
                    cmd = f"{wrk2} -t1 -c{CONNS} -d{args.seconds}s -R{args.rate} --latency {url}/"
                    argv = ["sh", "-c", f"exec {cmd} > {out}"]
                else:
                    rate = ("--rate", str(args.rate), "--max-connections", str(CONNS))
                    flags = (*rate, "-d", f"{args.seconds}s", "--send-ahead", window)
                    argv = redline_argv(url, *flags, "--json", str(out))
                row = measure(name, f"open {args.rate:,}/s", argv, url)
                if row.note:  # it exited non-zero (a bad --windows value, say): say so, once
                    raise SystemExit(f"bench: {name}: {row.note}")
                lat = wrk2_latency(out.read_text()) if window is None else redline_latency(out)
                runs.setdefault(name, []).append((row, lat))
                print(f"  [{rep + 1}/{args.reps}] {name}: {row.us_per_req:.1f} µs/req, {lat}")
    text = table(runs, service_us, args.utilisation)
    print("\n" + text)
    if not args.no_record:
        title = "the send-ahead window: CPU against truth"
        print(f"\nrecorded in {record.append('seam', title, ctx, text)}")
    return 0


def table(runs: dict[str, list[tuple[Row, dict[str, float]]]], service_us: int, u: float) -> str:
    """Each generator's median-CPU run: its CPU a request (and ratio to wrk2's), context
    switches, and the latencies it read against the truth (the service time)."""
    lines = [
        f"test server: one slot, {service_us} µs a request, loaded to {u:.0%}: a stream sent on "
        f"time never queues, so every latency is {service_us / 1000:.3f} ms plus the loopback\n",
        "| tool | req/s | client CPU µs/req | ratio to wrk2 | context switches/req "
        "| p50 ms | p90 ms | p99 ms | note |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    peer = None
    for name, rs in runs.items():
        ordered = sorted(rs, key=lambda r: r[0].us_per_req)
        row, lat = ordered[len(ordered) // 2]
        peer = peer or row
        spread = ", ".join(f"{r.us_per_req:.1f}" for r, _ in ordered)
        note = (row.note + " " if row.note else "") + f"median of {len(rs)} ({spread} µs)"
        lines.append(
            f"| {name} | {row.rps:,.0f} | {row.us_per_req:.1f} | "
            f"{row.us_per_req / peer.us_per_req:.2f}× | {row.switches_per_req:.3f} | "
            + " | ".join(f"{lat.get(p, 0):.3f}" for p in ("p50", "p90", "p99"))
            + f" | {note} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
