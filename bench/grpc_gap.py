"""Where a gRPC stream's late gaps come from: the probe's stream with the server and the client
each run as usual or under SCHED_FIFO (a real-time thread the busy box cannot keep waiting).

Issue 38 read the gap p99 of tests/test_grpc.py's stream (40 calls, 10 at a time, 20 messages,
the first at 200 ms and then one every 20 ms) at 42-45 ms, one message in twenty a whole gap
late and the next with it. A cause in the wire (Nagle behind a delayed ACK, an h2 window
update, a reader that buffers) stays when neither process waits for a core; a core taken by
other work goes. Each run is a client process of its own against a `redline target --threads 1`
of this tree; the four arrangements are interleaved, --reps times. Per arrangement: messages
counted against the server's, the medians over runs of the gap p50/p90/p99, each run's p99,
and the p99 of all the runs' gaps pooled.

    .venv/bin/python bench/grpc_gap.py [--reps 3] [--no-record]

SCHED_FIFO needs CAP_SYS_NICE (root in most containers). The table is appended to
bench/results/stream.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
from pathlib import Path

import record
from stream_gap import gap_cells, interleaved, medians, server

ROOT = Path(__file__).resolve().parent.parent

#: ONE_RUN: one run of the probe's stream, in its own process; prints the figures as JSON.
ONE_RUN = """
import json, sys, urllib.request, redline
url, proto = sys.argv[1], sys.argv[2]
def served():
    with urllib.request.urlopen(url.split("/redline")[0].replace("grpc://", "http://")
                                + "/__stats", timeout=10) as f:
        return json.load(f)["grpc_messages"]
before = served()
data = json.dumps({"first_ms": 200, "gap_ms": 20, "count": 20})
r = redline.run(url, proto=proto, data=data, requests=40, connections=10)
g = r.chunk_gap
print(json.dumps({
    "messages": r.stream["chunks"], "served": served() - before,
    "gap": [g.p50, g.p90, g.p99], "gap_histogram": r.data["histograms"]["chunk_gap"],
}))
"""

#: FIFO: a launcher that makes itself a SCHED_FIFO process, then becomes the command.
FIFO = (
    "import os, sys; os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10));"
    " os.execv(sys.argv[1], sys.argv[1:])"
)


def fifo(argv: list[str]) -> list[str]:
    """fifo is ``argv`` run as a SCHED_FIFO process (priority 10)."""
    return [sys.executable, "-c", FIFO, *argv]


def one_run(url: str, rt: bool) -> dict:
    """one_run runs the stream once against ``url`` (the probe's Stream), ``rt``: under
    SCHED_FIFO."""
    argv = [sys.executable, "-c", ONE_RUN, url, str(ROOT / "examples/grpc/probe.proto")]
    out = subprocess.run(
        fifo(argv) if rt else argv, capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    ctx = record.Context.now()
    with contextlib.ExitStack() as stack:
        urls = {
            rt: stack.enter_context(server(None, wrap)).replace("http://", "grpc://")
            + "/redline.probe.Probe/Stream"
            for rt, wrap in ((False, None), (True, fifo))
        }
        runs = interleaved(
            args.reps,
            [(s, c) for s in (False, True) for c in (False, True)],
            lambda a: one_run(urls[a[0]], a[1]),
            lambda a, got: (
                f"server fifo {a[0]}, client fifo {a[1]}: gap p50/p90/p99"
                f" {'/'.join(f'{x:.2f}' for x in got['gap'])} ms, messages"
                f" {got['messages']}/{got['served']}"
            ),
        )
    word = {False: "as usual", True: "SCHED_FIFO"}
    lines = [
        "| server | client | messages = server's | gap p50 / p90 / p99 (ms)"
        " | gap p99, each run (ms) | gap p99 pooled (ms) | vs 20 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for (srv, cli), rs in runs.items():
        exact = all(r["messages"] == r["served"] == 800 for r in rs)
        gap = medians(rs, "gap", range(3))
        lines.append(
            f"| {word[srv]} | {word[cli]} | {'yes' if exact else 'NO'} |"
            f" {' / '.join(f'{x:.2f}' for x in gap)} |{gap_cells(rs, 2)}"
        )
    text = "\n".join(lines) + f"\n\nMedians of {args.reps} interleaved runs.\n"
    title = "gRPC stream gaps, SCHED_FIFO or not"
    record.publish("stream", title, ctx, text, not args.no_record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
