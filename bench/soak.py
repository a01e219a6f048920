"""Soak: a long run at a fixed load, and whether anything grows (issue 39, "An hour of load").

    .venv/bin/python bench/soak.py redline --minutes 60 --rate 20000        # open model
    .venv/bin/python bench/soak.py redline --minutes 60 --connections 50    # closed model
    .venv/bin/python bench/soak.py redline --connections 20 --path '/?latency=20ms'  # ~1,000/s
    .venv/bin/python bench/soak.py taskqueue --minutes 60 --store sqlite [--share 0.7 | --rate N]
        [--flow FILE] [--var NAME=VALUE ...] [--sample 60] [--warmup 60] [--json FILE]
        [--no-record]

``redline`` runs redline alone (``redline run``, a subprocess) against the test server
(``redline target --threads 1``, another). ``taskqueue`` runs the seed-000 flow
(bench/scenarios/seed000_flow.py: submit, poll until done, get the result) against taskqueue on
SQLite or PostgreSQL (a private cluster, taskqueue.localpg) in the open model at ``--share`` of
its capacity, the capacity measured first by a closed run of 64 users (its tasks/s); ``--flow``
soaks with another scenario, and ``--var`` sets the flow's run variables (``--var THINK=6s --var
POLL_EVERY=20ms``: 6 s idle before each submission, past uvicorn's keep-alive timeout).

Every ``--sample`` seconds (60: per minute) it reads, for the service and for redline (each
process with its children, through psutil): RSS, open fds, established TCP connections, the fds
held besides them (``held_fds``: files, listeners, sockets left closing), threads and CPU
seconds; and from redline's own time series (its ``--interval`` is the sample period) that
window's p99 and error rate; CPU per request is each side's CPU over the requests the window
carried (the test server's own count for ``redline``; redline's for ``taskqueue``).

The figure is the slope of each series: a least-squares line through the samples after
``--warmup``, with its 95 % interval (Student's t on the slope's standard error). A series is
flat when that interval covers zero or the growth it gives is under 1 % of the series' mean an
hour (``FLAT_PCT_PER_H``). The exit status is 1 when RSS or ``held_fds`` grows: the open model
widens its pool while it runs behind (a busy machine), so its fds follow its connections, which
are bounded by ``--max-connections``; a leaked fd is one held besides a live connection. The
rows go to bench/results/soak.md with the command. Every process is bound by the run's length
and stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# This script's folder holds taskqueue.py, which would shadow the service's package.
_BENCH = str(Path(__file__).resolve().parent)
sys.path[:] = [p for p in sys.path if p not in (_BENCH, "")] + [_BENCH]

import psutil  # noqa: E402
import record  # noqa: E402  (bench/record.py)

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
FLOW = ROOT / "bench" / "scenarios" / "seed000_flow.py"

#: FLAT_PCT_PER_H: growth under this share of a series' mean an hour is flat.
FLAT_PCT_PER_H = 1.0

#: SERIES: what is sampled for each side, and the unit it is shown in.
SERIES = {
    "rss_mib": "MiB",
    "fds": "fds",
    "connections": "connections",
    "held_fds": "fds",
    "threads": "threads",
    "cpu_us_per_request": "µs",
}

#: SAMPLES_TO: where each sample is appended as it is taken (``--json`` FILE's .samples.jsonl).
SAMPLES_TO: Path | None = None

#: START_TIMEOUT_S bounds a server's start; END_GRACE_S redline's end after its duration.
START_TIMEOUT_S = 90.0
END_GRACE_S = 120.0


@dataclass
class Slope:
    """Slope is a least-squares line through one series: its slope an hour with the 95 %
    interval, the series' mean, the growth an hour as a share of that mean, and whether it
    is flat (interval covers zero, or growth under FLAT_PCT_PER_H)."""

    points: int
    mean: float | None
    per_h: float | None
    low: float | None
    high: float | None
    pct_per_h: float | None
    flat: bool | None


def slope(t_s: Sequence[float], values: Sequence[float | None], floor: float = 0.0) -> Slope:
    """slope fits the line (scipy.stats.linregress) through the samples that have a value;
    fewer than 3 points give no line (flat None). ``floor``: a rise over the fitted window
    smaller than this is flat too (what a short run can resolve: RSS moves by pages and
    allocator arenas, and 1 %/h of 24 MiB is 6 KiB in 90 s)."""
    pairs = [(float(t), float(v)) for t, v in zip(t_s, values, strict=True) if v is not None]
    if len(pairs) < 3:
        return Slope(len(pairs), None, None, None, None, None, None)
    from scipy import stats

    t = [p[0] for p in pairs]
    y = [p[1] for p in pairs]
    mean = sum(y) / len(y)
    if max(y) == min(y):
        return Slope(len(y), mean, 0.0, 0.0, 0.0, 0.0, True)
    fit = stats.linregress(t, y)
    half = float(stats.t.ppf(0.975, len(y) - 2)) * float(fit.stderr)
    per_h = float(fit.slope) * 3600.0
    low, high = per_h - half * 3600.0, per_h + half * 3600.0
    pct = 100.0 * per_h / abs(mean) if mean else None
    covers_zero = low <= 0.0 <= high
    small = pct is not None and abs(pct) < FLAT_PCT_PER_H
    under_floor = abs(per_h) * (max(t) - min(t)) / 3600.0 < floor
    return Slope(len(y), mean, per_h, low, high, pct, covers_zero or small or under_floor)


@dataclass
class Side:
    """Side is one process tree watched: the process, and its CPU seconds at the last sample."""

    name: str
    proc: psutil.Process
    cpu_s: float = 0.0

    def sample(self) -> dict[str, float]:
        """sample: RSS, fds (and the established TCP connections among them), threads and CPU
        seconds of the process and its children now."""
        rss = fds = threads = conns = 0
        cpu = 0.0
        procs = [self.proc]
        try:
            procs += self.proc.children(recursive=True)
        except psutil.Error:
            pass
        for p in procs:
            try:
                with p.oneshot():
                    rss += p.memory_info().rss
                    fds += p.num_fds()
                    conns += sum(c.status == psutil.CONN_ESTABLISHED for c in p.net_connections())
                    threads += p.num_threads()
                    t = p.cpu_times()
                    cpu += t.user + t.system
            except psutil.Error:
                continue  # a child that ended between the listing and the read
        return {
            "rss_mib": rss / 2**20,
            "fds": fds,
            "connections": conns,
            "held_fds": fds - conns,
            "threads": threads,
            "cpu_s": cpu,
        }


def served(url: str) -> int:
    """served: the test server's own count of requests (its /__stats)."""
    with urllib.request.urlopen(url.rstrip("/") + "/__stats", timeout=10) as r:
        return int(json.loads(r.read())["requests"])


@contextmanager
def started(argv: list[str], log: Path, env: dict[str, str] | None = None) -> Iterator[Any]:
    """started runs a server that prints its URL; yields (url, process); stops it after."""
    import re

    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            m = re.search(rb"(http://[0-9.]+:[0-9]+)", log.read_bytes())
            if m:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{argv[0]} did not start: {log.read_text()[-500:]}")
            time.sleep(0.05)
        yield m.group(1).decode(), proc
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """stop ends a process it started: SIGTERM, then SIGKILL after 10 s."""
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def watch(
    redline: subprocess.Popen[bytes],
    sides: list[Side],
    sample_s: float,
    seconds: float,
    count: Any,
) -> list[dict[str, Any]]:
    """watch samples every ``sample_s`` from redline's start until it ends (bounded by its
    duration and END_GRACE_S): each side's figures, and ``count()`` (requests so far, or
    None)."""
    rows: list[dict[str, Any]] = []
    t0 = time.monotonic()
    for s in sides:
        s.cpu_s = s.sample()["cpu_s"]
    last = count()
    k = 1
    while redline.poll() is None and time.monotonic() - t0 < seconds + END_GRACE_S:
        due = t0 + k * sample_s
        while time.monotonic() < due and redline.poll() is None:
            time.sleep(min(0.2, max(0.0, due - time.monotonic())))
        if redline.poll() is not None or k * sample_s >= seconds - 1e-9:
            break  # a sample at the run's end would read its teardown (sockets closing)
        now = count()
        row: dict[str, Any] = {"t_s": round(time.monotonic() - t0, 3)}
        done = None if now is None or last is None else now - last
        for s in sides:
            got = s.sample()
            cpu_now = got.pop("cpu_s")
            row[s.name] = {**got, "cpu_s": cpu_now - s.cpu_s}
            s.cpu_s = cpu_now
        row["requests"] = done
        rows.append(row)
        if SAMPLES_TO is not None:  # kept as they come: an hour is not lost to a late failure
            with SAMPLES_TO.open("a") as f:
                f.write(json.dumps(row) + "\n")
        last = now
        k += 1
    return rows


def redline_argv(args: argparse.Namespace, seconds: float, out: Path) -> list[str]:
    """redline_argv: the soak's ``redline run``, sampling windows as its intervals."""
    argv = [str(VENV_BIN / "redline"), "run", "-q", "-d", f"{seconds:g}s"]
    argv += ["--interval", f"{args.sample:g}s", "--json", str(out)]
    if args.rate:
        argv += ["--rate", f"{args.rate:g}"]
        if args.max_connections:
            argv += ["--max-connections", str(args.max_connections)]
    elif args.connections:
        argv += ["-c", str(args.connections)]
    return argv + (["-t", str(args.threads)] if args.threads else [])


def run_redline(
    argv: list[str], sides: list[Side], args: argparse.Namespace, count: Any, log: Path
) -> list[dict[str, Any]]:
    """run_redline starts redline, watches it and the service until it ends (bounded), and
    returns the samples; redline is killed if it outlives its bound."""
    with log.open("wb") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
    try:
        rows = watch(
            proc,
            [*sides, Side("redline", psutil.Process(proc.pid))],
            args.sample,
            args.minutes * 60.0,
            count,
        )
        proc.wait(END_GRACE_S)
    finally:
        stop(proc)  # type: ignore[arg-type]
    if proc.returncode != 0:
        raise RuntimeError(f"redline exited {proc.returncode}: {log.read_text()[-500:]}")
    return rows


def with_windows(rows: list[dict[str, Any]], doc: dict[str, Any]) -> None:
    """with_windows adds each sample's window from redline's time series (same period, in
    order): p99 and error rate, and redline's request count where the sample has none."""
    series = doc.get("timeseries") or []
    for row, snap in zip(rows, series, strict=False):
        asked = int(snap["requests"]) + int(snap.get("errors", 0))
        row["p99_ms"] = snap.get("p99_ms")
        row["error_rate"] = (int(snap.get("errors", 0)) / asked) if asked else None
        if row.get("requests") is None:
            row["requests"] = int(snap["requests"])


def soak_redline(args: argparse.Namespace, work: Path) -> tuple[list[dict[str, Any]], str]:
    """soak_redline: redline alone against the test server (see the module doc)."""
    target = [str(VENV_BIN / "redline"), "target", "--threads", "1", "--port", "0"]
    with started(target, work / "target.log") as (url, server):
        out = work / "run.json"
        argv = [*redline_argv(args, args.minutes * 60.0, out), url + args.path]
        before = served(url)
        rows = run_redline(
            argv,
            [Side("service", psutil.Process(server.pid))],
            args,
            lambda: served(url),
            work / "redline.log",
        )
        seen = served(url) - before
        doc = json.loads(out.read_text())
    with_windows(rows, doc)
    load = f"{args.rate:g} req/s (open)" if args.rate else f"{args.connections} connections"
    load += f" on {args.path}" if args.path != "/" else ""
    counted = doc["requests"] + transport(doc) + int(doc["unfinished"])
    args.books = {"counted": counted, "served": seen}
    what = (
        f"redline alone, {load}, {args.threads} engine thread(s), against the test server "
        f"(1 thread): redline answered {doc['requests']:,}, failed {transport(doc):,}, "
        f"unfinished {doc['unfinished']:,} = {counted:,}; the server saw {seen:,}"
    )
    return rows, what


def transport(doc: dict[str, Any]) -> int:
    """transport: a result's failed requests that got no answer."""
    return int(doc["errors_total"]) - sum(int(doc["errors"].get(k, 0)) for k in ("status", "check"))


def taskqueue_argv(data: Path, database: str | None, extra: Sequence[str] = ()) -> list[str]:
    argv = [str(VENV_BIN / "taskqueue"), "serve", "--port", "0", "--data-dir", str(data)]
    argv += ["--allow-fetch-cidr", "127.0.0.0/8"]
    return argv + (["--database", database] if database else []) + list(extra)


def capacity(url: str, work: Path) -> float:
    """capacity: the seed-000 flow's tasks a second with 64 users for 20 s (closed model:
    what the service completes when every user waits on it)."""
    out = work / "capacity.json"
    argv = [str(VENV_BIN / "redline"), "run", str(FLOW), "--host", url, "-u", "64"]
    argv += ["-d", "20s", "-q", "--json", str(out)]
    subprocess.run(argv, check=True, timeout=120, stdout=subprocess.DEVNULL)
    doc = json.loads(out.read_text())
    return float(doc["scenario"]["iterations"]["completed"]) / float(doc["duration_s"])


def soak_taskqueue(args: argparse.Namespace, work: Path) -> tuple[list[dict[str, Any]], str]:
    """soak_taskqueue: the seed-000 flow at --share of taskqueue's capacity (module doc)."""
    from taskqueue_harness import store

    with ExitStack() as stack:
        database, _ = stack.enter_context(store(args.store, work))
        data = work / "data"
        data.mkdir()
        url, service = stack.enter_context(
            started(taskqueue_argv(data, database, args.service_arg), work / "service.log")
        )
        cap = None if args.rate else capacity(url, work)
        if cap is not None:
            args.rate = round(args.share * cap, 1)
        out = work / "run.json"
        argv = [*redline_argv(args, args.minutes * 60.0, out), str(args.flow), "--host", url]
        argv += [a for v in args.var for a in ("--var", v)]
        rows = run_redline(
            argv,
            [Side("service", psutil.Process(service.pid))],
            args,
            lambda: None,
            work / "redline.log",
        )
        doc = json.loads(out.read_text())
    with_windows(rows, doc)
    share = (
        "a fixed rate, capacity not measured"
        if cap is None
        else f"{100 * args.share:.0f} % of the {cap:.0f} tasks/s that 64 users got in 20 s"
    )
    iterations = doc["scenario"]["iterations"]
    extra = f" (taskqueue serve {' '.join(args.service_arg)})" if args.service_arg else ""
    what = (
        f"taskqueue on {args.store}{extra}, {flow_name(args.flow, args.var)} "
        f"at {args.rate:g} tasks/s "
        f"({share}): "
        f"{doc['requests']:,} requests, {doc['errors_total']:,} failed, "
        f"{iterations['completed']:,} tasks completed"
    )
    return rows, what


def flow_name(flow: Path, run_vars: Sequence[str] = ()) -> str:
    """flow_name: how a row names the scenario it soaked with, and its run variables."""
    name = "the seed-000 flow" if flow == FLOW else f"the flow {flow.name}"
    return f"{name} with {', '.join(run_vars)}" if run_vars else name


def figures(
    rows: list[dict[str, Any]], warmup_s: float, rss_floor: float = 0.0
) -> dict[str, Slope]:
    """figures: the slope of every series after the warm-up, by ``side.series``
    (``rss_floor``: MiB of RSS rise over the window too small to count, see slope)."""
    kept = [r for r in rows if r["t_s"] > warmup_s + 1e-9]
    t = [r["t_s"] for r in kept]
    out: dict[str, Slope] = {}
    for side in ("service", "redline"):
        for key in ("rss_mib", "fds", "connections", "held_fds", "threads"):
            floor = rss_floor if key == "rss_mib" else 0.0
            out[f"{side}.{key}"] = slope(t, [r[side][key] for r in kept], floor)
        per = [1e6 * r[side]["cpu_s"] / r["requests"] if r.get("requests") else None for r in kept]
        out[f"{side}.cpu_us_per_request"] = slope(t, per)
    out["p99_ms"] = slope(t, [r.get("p99_ms") for r in kept])
    out["error_rate"] = slope(t, [r.get("error_rate") for r in kept])
    return out


def fmt(v: float | None, spec: str = ".3g") -> str:
    return "-" if v is None else format(v, spec)


def table(slopes: dict[str, Slope]) -> str:
    """table: one line per series: its mean, slope an hour with the 95 % interval, the
    growth an hour as a share of the mean, and the verdict."""
    lines = [
        "| series | mean | slope / hour [95 % interval] | growth %/h | flat |",
        "|---|---:|---|---:|---|",
    ]
    for name, s in slopes.items():
        verdict = "-" if s.flat is None else "flat"
        if s.flat is False:
            verdict = "**GROWS**" if (s.per_h or 0.0) > 0 else "falls"
        lines.append(
            f"| {name} | {fmt(s.mean)} | {fmt(s.per_h)} [{fmt(s.low)}, {fmt(s.high)}] "
            f"| {fmt(s.pct_per_h, '+.2f')} | {verdict} |"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=["redline", "taskqueue"])
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument(
        "--rate",
        type=float,
        help="redline: req/s (open model); taskqueue: tasks/s (instead of --share of capacity)",
    )
    p.add_argument("--connections", type=int, default=50, help="redline: closed model")
    p.add_argument(
        "--max-connections",
        type=int,
        help="redline, open model: its pool's cap (the pool widens while it runs behind)",
    )
    p.add_argument(
        "--path",
        default="/",
        help="redline: the test server's path, e.g. '/?latency=20ms' (a closed model that waits)",
    )
    p.add_argument("--threads", type=int, default=1, help="redline's engine threads")
    p.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    p.add_argument("--share", type=float, default=0.7, help="taskqueue: of its capacity")
    p.add_argument(
        "--flow",
        type=Path,
        default=FLOW,
        help="taskqueue: the scenario to soak with (default: the seed-000 flow; its capacity "
        "is always the seed-000 flow's)",
    )
    p.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="taskqueue: a run variable of the flow, repeated for each (seed000_flow.py reads "
        "THINK and POLL_EVERY)",
    )
    p.add_argument(
        "--service-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="taskqueue: one more argument to taskqueue serve, repeated for each (--service-arg=X)",
    )
    p.add_argument("--sample", type=float, default=60.0, help="seconds between samples")
    p.add_argument("--warmup", type=float, help="seconds left out of the fit (one sample)")
    p.add_argument(
        "--rss-floor",
        type=float,
        default=0.0,
        metavar="MIB",
        help="an RSS rise over the fitted window under this is flat (a short run's resolution)",
    )
    p.add_argument("--json", help="write the samples and slopes here")
    p.add_argument("--label", default="", help="words added to the entry's title")
    p.add_argument("--no-record", action="store_true", help="do not append to soak.md")
    args = p.parse_args(argv)
    if args.minutes <= 0 or args.sample <= 0 or args.minutes * 60 < 4 * args.sample:
        p.error("--minutes must hold at least 4 samples (--sample seconds each)")
    if args.warmup is None:
        args.warmup = args.sample
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    global SAMPLES_TO
    # SIGTERM unwinds like an exception, so the servers, redline and a private PostgreSQL
    # cluster are stopped on the way out (Python's default would leave them running).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.json:
        SAMPLES_TO = Path(args.json).with_suffix(".samples.jsonl")
        SAMPLES_TO.unlink(missing_ok=True)
    ctx = record.Context.now([sys.argv[0], *(argv if argv is not None else sys.argv[1:])])
    with tempfile.TemporaryDirectory(prefix="redline-soak-") as tmp:
        soak = soak_redline if args.what == "redline" else soak_taskqueue
        try:
            rows, what = soak(args, Path(tmp))
        finally:
            if args.json:  # redline's whole result and the logs, to read failures afterwards
                for kept in ("run.json", "service.log", "target.log", "redline.log"):
                    if (Path(tmp) / kept).exists():
                        shutil.copy(Path(tmp) / kept, f"{args.json}.{kept}")
    slopes = figures(rows, args.warmup, args.rss_floor)
    floor = (
        f"; an RSS rise under {args.rss_floor:g} MiB over the window counts as flat"
        if args.rss_floor
        else ""
    )
    body = (
        f"{what}; {len(rows)} samples every {args.sample:g} s, the first "
        f"{args.warmup:g} s left out of the fit{floor}.\n\n{table(slopes)}\n"
    )
    print(body)
    if args.json:
        doc = {
            "rows": rows,
            "slopes": {k: asdict(v) for k, v in slopes.items()},
            "books": getattr(args, "books", None),
        }
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
    if not args.no_record:
        minutes = f"{args.minutes:g} min"
        record.append("soak", f"{args.what} soak, {minutes}{args.label}", ctx, body)
    # The exit status: 1 when RSS or the fds held besides live connections grow (a fall, the
    # pool widening, or p99 or CPU moving, is reported only).
    grows = [
        k
        for k, s in slopes.items()
        if k.endswith(("rss_mib", "held_fds")) and s.flat is False and (s.per_h or 0.0) > 0
    ]
    return 1 if grows else 0


if __name__ == "__main__":
    sys.exit(main())
