"""Client CPU per request of a signed-request flow against the same flow unsigned (issue 33:
"with the engine's functions, CPU per request <= 1.3x the unsigned flow's"), and the signed
flow verified request by request, in one run:

    .venv/bin/python bench/scenarios/signed.py [--requests 100000] [--rounds 3] [--no-record]

bench/scenarios/signed_flow.py, each iteration one POST: signed (a UUID and the time drawn per
iteration, in headers and in the JSON body, an HMAC-SHA256 of the body in X-Signature) and
unsigned (`--var SIGNED=0`: the body without them, no signature). redline runs
`-u 50 -t 1 -n REQUESTS` pinned to core 1.

CPU: against `redline target --threads 1` pinned to core 0 (it answers any path at once, the
same for both flows: a server that took longer over one flow's requests would change how many
answers each of redline's wake-ups finds, and so its CPU per request), the flows alternating
for `--rounds` rounds. redline's CPU is the kernel's rusage of its process (Python start-up
and compile included), and the engine's alone from its report (generator.cpu_s); the ratio
is the signed flow's engine CPU per request to the unsigned flow's, medians of the rounds.

Truth: the signed flow once more, against tests/verifier.py on this process (pinned to core
0), which checks every request (the signature over the body received, the UUID's shape and
that it is new, the timestamp within 30 s, the body's values equal to the headers') and
counts right and wrong. Appended to bench/results/scenarios.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(HERE))  # before bench/: its run.py is another module
import record  # noqa: E402
from run import VENV_BIN, measure, pinned, start_target  # noqa: E402
from verifier import Verifier  # noqa: E402


@dataclass
class Row:
    """Row is one run of one flow: what redline counted, what the server judged, the CPU."""

    flow: str
    requests: int
    errors: int
    right: int
    wrong: int
    cpu_s: float
    engine_s: float

    @property
    def us(self) -> float:
        return self.cpu_s / self.requests * 1e6

    @property
    def engine_us(self) -> float:
        return self.engine_s / self.requests * 1e6


def one(url: str, v: Verifier | None, signed: bool, n: int, tmp: str) -> Row:
    """one runs the flow for `n` iterations against `url` and reads what it cost and what
    the verifier `v` (when it is the server) saw."""
    route = "/signed" if signed else "/plain"
    right0, wrong0 = (v.right[route], v.wrong[route]) if v else (0, 0)
    out = Path(tmp) / "r.json"
    argv = [str(VENV_BIN / "redline"), "run", str(HERE / "signed_flow.py"), "--host", url]
    argv += ["--var", f"SIGNED={int(signed)}", "-u", "50", "-t", "1", "-n", str(n)]
    argv += ["-q", "--json", str(out)]
    r = measure(pinned("1", argv), timeout=n / 100 + 120)
    if r.code != 0:
        raise RuntimeError(f"redline exited {r.code}: {r.out}")
    doc = json.loads(out.read_text())
    cpu = r.user + r.sys
    return Row(
        "signed" if signed else "unsigned",
        doc["requests"],
        doc["errors_total"],
        v.right[route] - right0 if v else -1,
        v.wrong[route] - wrong0 if v else -1,
        cpu,
        doc["generator"]["cpu_s"],
    )


def table(rows: list[Row], truth: Row) -> str:
    lines = [
        "| server | flow | requests (redline) | redline errors | process CPU s | µs/req | "
        "engine CPU s | engine µs/req |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| target | {r.flow} | {r.requests:,} | {r.errors:,} | "
            f"{r.cpu_s:.2f} | {r.us:.1f} | {r.engine_s:.2f} | {r.engine_us:.1f} |"
        )
    med = {
        f: statistics.median(r.engine_us for r in rows if r.flow == f)
        for f in ("signed", "unsigned")
    }
    lines.append("")
    lines.append(
        f"Signed ÷ unsigned, engine CPU per request (medians of the rounds): "
        f"{med['signed']:.1f} ÷ {med['unsigned']:.1f} µs = {med['signed'] / med['unsigned']:.2f}×"
    )
    lines += [
        "",
        "| server | flow | requests (redline) | redline errors | server: right | server: wrong |",
        "|---|---|---:|---:|---:|---:|",
        f"| tests/verifier.py | {truth.flow} | {truth.requests:,} | {truth.errors:,} | "
        f"{truth.right:,} | {truth.wrong:,} |",
    ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    start = record.Context.now()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        server, url = start_target()
        try:
            for _ in range(args.rounds):
                for signed in (False, True):
                    rows.append(one(url, None, signed, args.requests, tmp))
        finally:
            server.terminate()
            server.wait(timeout=10)
        with Verifier() as v:
            truth = one(v.url, v, True, args.requests, tmp)
        if v.reasons:
            print("server's reasons:", dict(v.reasons))
    text = table(rows, truth)
    print(text)
    if not args.no_record:
        record.append("scenarios", "signed-request flow: engine CPU per request", start, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
