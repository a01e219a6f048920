"""The closed model's lockstep burst, with and without --stagger (issue 38, sockets).

    .venv/bin/python bench/sockets.py [--runs 3] [--sockets 1000] [--seconds 4] [--no-record]

1,000 sockets against the test server's echo probe at 1 s (`/ws?delay=1s`), three ways,
interleaved run by run: the closed model with every socket's first message at once (they then
move in lockstep: each second 1,000 messages reach the server, and redline, together), the
closed model with the first messages spread over the 1 s round trip (`stagger="1s"`), and
the open model at 1,000 messages a second (each socket k sends at k ms past each second). Every
run's counts are held to the server's (`ws_received`, `ws_sent`) before its figures are kept.
The table (p50 and p99 of the round trip, their excess over the probe's 1 s) is appended to
bench/results/sockets.md (bench/record.py).
"""

from __future__ import annotations

import argparse
import statistics

import record
import redline

#: DELAY_MS: the probe's echo delay, the round trip's truth.
DELAY_MS = 1000.0

#: MODES: (label, websocket() keywords) in the order each round runs them.
MODES = (
    ("closed, all at once", {}),
    ("closed, stagger 1s", {"stagger": "1s"}),
    ("open, 1000/s", {"rate": 1000}),
)


def one(target: redline.Target, sockets: int, seconds: float, load: dict) -> tuple[float, float]:
    """one runs a mode once and returns its (p50, p99) in ms, its counts checked first."""
    before = target.stats()
    url = target.url.replace("http://", "ws://", 1) + "/ws?delay=1s"
    r = redline.websocket(url, sockets=sockets, duration=seconds, **load)
    after = target.stats()
    m = r.messages
    received = after["ws_received"] - before["ws_received"]
    echoed = after["ws_sent"] - before["ws_sent"]
    if (m["sent"], m["received"]) != (received, echoed) or r.errors_total:
        raise SystemExit(f"counts differ from the server's: {m} vs {received}/{echoed}")
    return r.latency.p50, r.latency.p99


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sockets", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    start = record.Context.now()
    seen: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in MODES}
    with redline.Target(threads=1) as target:
        for run in range(args.runs):
            for label, load in MODES:
                p50, p99 = one(target, args.sockets, args.seconds, load)
                seen[label].append((p50, p99))
                print(f"run {run + 1} {label}: p50 {p50:.1f} ms, p99 {p99:.1f} ms", flush=True)
    rows = [
        "| mode | p50 (ms), each run | p99 (ms), each run | median p50 / p99 vs 1 s |",
        "|---|---|---|---|",
    ]
    for label, runs in seen.items():
        p50s, p99s = [r[0] for r in runs], [r[1] for r in runs]
        med50, med99 = statistics.median(p50s), statistics.median(p99s)
        rows.append(
            f"| {label} | {', '.join(f'{x:.1f}' for x in p50s)} "
            f"| {', '.join(f'{x:.1f}' for x in p99s)} "
            f"| {100 * (med50 / DELAY_MS - 1):+.1f} % / {100 * (med99 / DELAY_MS - 1):+.1f} % |"
        )
    table = "\n".join(rows)
    print(table)
    if not args.no_record:
        title = f"{args.sockets} sockets on a 1 s echo: the closed model's burst and --stagger"
        path = record.append("sockets", title, start, table)
        print(f"appended to {path}")


if __name__ == "__main__":
    main()
