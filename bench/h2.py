"""HTTP/2 client CPU per request: redline against h2load, at the same connections × streams.

The target (redline's own, one thread, h2c with prior knowledge) is pinned to core 0 and each
generator in turn to core 1, as in bench/run.py, whose meters this reuses: requests counted by
the server's /__stats, client CPU from the generator's rusage. The target answers HTTP/2
through its HTTP/1.1 code (crates/testserver/src/http2.rs), so it, not the client, bounds the
request rate; CPU per request is what is compared.

    .venv/bin/python bench/h2.py [--seconds 5] [--reps 3] [--shape 4x10 --shape 1x1]
                                 [--baseline DIR]

--baseline DIR adds a "redline (baseline)" row per shape: the same CLI run from the package in
DIR (a copy of python/ holding another build's extension, e.g. the commit before a change), so
that a before and an after are measured interleaved, under the same load, in one table.

h2load comes from Debian's nghttp2-client. The table is appended to bench/results/h2.md.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import record
from run import Row, baseline_argv, interleave, precompile, redline_argv, target_server

DEFAULT_SHAPES = ("4x10", "1x1", "16x1")


def generators(
    h2load: str, url: str, secs: int, shapes: list[str], baseline: Path | None = None
) -> list:
    gens = []
    for shape in shapes:
        c, m = shape.split("x")
        mode = f"h2c {c} conns × {m} streams"
        gens.append(
            ("h2load", mode, [h2load, "-t1", f"-c{c}", f"-m{m}", f"-D{secs}", url + "/"], None)
        )
        flags = ("--http2", "--streams", m, "-c", c, "-d", f"{secs}s")
        argv = redline_argv(url, *flags)
        gens.append(("redline", mode, argv, None))
        if baseline:
            gens.append(("redline (baseline)", mode, baseline_argv(argv, baseline), None))
    return gens


def table(rows: list[Row]) -> str:
    """The markdown table; each redline row's ratio is to h2load at the same shape."""
    lines = [
        "| tool | shape | req/s | client CPU µs/req | ratio to h2load | note |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in rows:
        ref = next((x for x in rows if x.tool == "h2load" and x.mode == r.mode), None)
        ratio = f"{r.us_per_req / ref.us_per_req:.2f}×" if ref and ref.requests else "-"
        lines.append(
            f"| {r.tool} | {r.mode} | {r.rps:,.0f} | {r.us_per_req:.1f} | {ratio} | {r.note} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--shape", action="append", help="CONNSxSTREAMS (repeatable)")
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument(
        "--baseline", type=Path, help="a python/ copy holding another build (adds its rows)"
    )
    args = ap.parse_args()
    h2load = shutil.which("h2load")
    if not h2load:
        print("bench: h2load not found (apt-get install nghttp2-client)", file=sys.stderr)
        return 2
    ctx = record.Context.now()
    shapes = args.shape or list(DEFAULT_SHAPES)
    precompile(*([args.baseline] if args.baseline else []))
    with target_server() as url:
        gens = generators(h2load, url, args.seconds, shapes, args.baseline)
        rows = interleave(gens, args.reps, url)
    text = table(rows)
    print()
    print(text)
    if not args.no_record:
        where = record.append("h2", "HTTP/2: redline vs h2load", ctx, text, None)
        print(f"\nrecorded in {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
