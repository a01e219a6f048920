"""HTTP/2 client CPU per request: redline against h2load, at the same connections × streams.

The target (redline's own, one thread, h2c with prior knowledge) is pinned to core 0 and each
generator in turn to core 1, as in bench/run.py, whose meters this reuses: requests counted by
the server's /__stats, client CPU from the generator's rusage. The target answers HTTP/2
through its HTTP/1.1 code (crates/testserver/src/http2.rs), so it, not the client, bounds the
request rate; CPU per request is what is compared.

    .venv/bin/python bench/h2.py [--seconds 5] [--reps 3] [--shape 4x10 --shape 1x1]
                                 [--baseline [NAME=]DIR ...]

Each redline row also gives the run's CPU a request (its report's
``generator.cpu_us_per_request``: the process's CPU, every thread, from the run's start to its
end) and its ratio to h2load's whole process: what driving h2 costs, without the CLI's Python
start and report, which the process figure charges to the run's requests (h2load starts in a
millisecond).

--baseline [NAME=]DIR adds a "redline (NAME)" row per shape ("redline (baseline)" without a
NAME; repeatable): the same CLI run from the package in DIR (a copy of python/ holding another
build's extension, e.g. the commit before a change), so that a before and an after are
measured interleaved, under the same load, in one table.

h2load comes from Debian's nghttp2-client. The table is appended to bench/results/h2.md.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import record
from run import (
    Row,
    baseline_argv,
    baseline_flags,
    interleave,
    read_baselines,
    redline_argv,
    target_server,
)

DEFAULT_SHAPES = ("4x10", "1x1", "16x1")


def generators(
    h2load: str,
    url: str,
    secs: int,
    shapes: list[str],
    reports: Path,
    baselines: list[tuple[str, Path]],
) -> list:
    """The rows to run, interleaved: h2load, redline (and its baseline) at each shape; each
    redline row writes its JSON report under ``reports``, for the run's own figure."""
    gens = []
    for shape in shapes:
        c, m = shape.split("x")
        mode = f"h2c {c} conns × {m} streams"
        gens.append(
            ("h2load", mode, [h2load, "-t1", f"-c{c}", f"-m{m}", f"-D{secs}", url + "/"], None)
        )
        flags = ("--http2", "--streams", m, "-c", c, "-d", f"{secs}s")
        argv = redline_argv(url, *flags, "--json", str(reports / f"{shape}.json"))
        gens.append(("redline", mode, argv, None))
        for i, (name, path) in enumerate(baselines):
            argv = redline_argv(url, *flags, "--json", str(reports / f"{shape}-baseline{i}.json"))
            gens.append((f"redline ({name})", mode, baseline_argv(argv, path), None))
    return gens


def table(rows: list[Row]) -> str:
    """The markdown table; each redline row's ratios are to h2load at the same shape: its
    whole process's, and the run's own (without the CLI's start and report)."""
    lines = [
        "| tool | shape | req/s | client CPU µs/req | ratio to h2load "
        "| run CPU µs/req | run ratio | note |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        ref = next((x for x in rows if x.tool == "h2load" and x.mode == r.mode), None)
        base = ref.us_per_req if ref and ref.requests else None
        ratio = f"{r.us_per_req / base:.2f}×" if base else "-"
        engine = f"{r.engine_us:.1f}" if r.engine_us is not None else "-"
        engine_ratio = f"{r.engine_us / base:.2f}×" if base and r.engine_us is not None else "-"
        lines.append(
            f"| {r.tool} | {r.mode} | {r.rps:,.0f} | {r.us_per_req:.1f} | {ratio} "
            f"| {engine} | {engine_ratio} | {r.note} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--shape", action="append", help="CONNSxSTREAMS (repeatable)")
    baseline_flags(ap)
    args = ap.parse_args()
    h2load = shutil.which("h2load")
    if not h2load:
        print("bench: h2load not found (apt-get install nghttp2-client)", file=sys.stderr)
        return 2
    ctx = record.Context.now()
    shapes = args.shape or list(DEFAULT_SHAPES)
    builds = read_baselines(args)
    with target_server() as url, tempfile.TemporaryDirectory() as reports:
        gens = generators(h2load, url, args.seconds, shapes, Path(reports), builds)
        rows = interleave(gens, args.reps, url)
    record.publish("h2", "HTTP/2: redline vs h2load", ctx, table(rows), not args.no_record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
