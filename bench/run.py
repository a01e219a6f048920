"""Side-by-side benchmark: redline and its peers against the same local server, in one run.

The server (redline's Rust target, one thread) is pinned to core 0 and each generator in turn
to core 1, with 50 keep-alive connections. Requests are counted by the *server* (its /__stats
delta), so every tool is judged on the same meter; client CPU comes from the kernel's rusage of
the generator's process tree (wait4), peak RSS likewise. Figures are reported as ratios to wrk
measured in the same run, because this machine is shared and absolute times drift.

    .venv/bin/python bench/run.py [--seconds 10] [--rss-seconds 60] [--only redline,wrk]

Peers come from ../shared/tools/install-peers.sh (paths in ~/.cache/redline-peers/peers.env);
a missing peer is skipped with a note. The tables are appended to bench/results/peers.md with
the date, load average, commit and command (bench/record.py); docs/benchmarks.md cites them.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import record
import sendlag

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
PEERS_ENV = Path.home() / ".cache/redline-peers/peers.env"
SERVER_CORE, CLIENT_CORE = "0", "1"
CONNS = 50


@dataclass
class Row:
    """Row: one generator's figures in this run."""

    tool: str
    mode: str
    requests: int
    wall_s: float
    cpu_s: float
    max_rss_kb: int
    note: str = ""
    #: switches: the generator's context switches (voluntary + involuntary, from rusage).
    switches: int = 0
    #: lag: the run's send lag as the wire saw it (bench/sendlag.py), where it was captured.
    lag: sendlag.SendLag | None = None
    #: engine_us: the CPU a request while the run ran (every thread of the process, without the
    #: CLI's start and report), from the report of a redline run given ``--json``; else None.
    engine_us: float | None = None

    @property
    def rps(self) -> float:
        return self.requests / self.wall_s if self.wall_s else 0.0

    @property
    def us_per_req(self) -> float:
        return 1e6 * self.cpu_s / self.requests if self.requests else float("inf")

    @property
    def switches_per_req(self) -> float:
        return self.switches / self.requests if self.requests else float("inf")


#: Gen is one row to run: (tool, mode, argv, working directory).
Gen = tuple[str, str, list[str], str | None]


def peers() -> dict[str, str]:
    found = {
        "WRK": shutil.which("wrk") or "",
        "HEY": shutil.which("hey") or "",
        "K6": shutil.which("k6") or "",
        "OHA": shutil.which("oha") or "",
        "LOCUST": "",
    }
    if PEERS_ENV.exists():
        for line in PEERS_ENV.read_text().splitlines():
            key, sep, val = line.partition("=")
            if sep and val and not key.startswith("#"):
                found[key] = val
    return found


def server_requests(url: str) -> int:
    # Our own local target: its https certificate is the bench's throwaway one.
    ctx = ssl._create_unverified_context() if url.startswith("https:") else None
    with urllib.request.urlopen(url + "/__stats", timeout=5, context=ctx) as r:
        return int(json.loads(r.read())["requests"])


def peak_rss_kb(pid: int) -> int:
    """VmHWM of a live process. rusage's ru_maxrss is no use here: Linux carries the forking
    parent's (this Python's) high-water mark into the child across exec."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def measure(
    tool: str,
    mode: str,
    argv: list[str],
    url: str,
    cwd: str | None = None,
    count: Callable[[str], int] = server_requests,
) -> Row:
    """Runs argv pinned to the client core; counts requests at the server (`count(url)`, the
    target's /__stats by default); reads rusage, and the engine's own figure from the report
    of a redline command line that writes one (``--json PATH``)."""
    report = report_of(argv)
    if report:
        report.unlink(missing_ok=True)
    before = count(url)
    start = time.monotonic()
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        ["taskset", "-c", CLIENT_CORE, *argv], cwd=cwd, stdout=log, stderr=subprocess.STDOUT
    )
    peak = 0
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        peak = max(peak, peak_rss_kb(proc.pid))
        time.sleep(0.1)
    wall = time.monotonic() - start
    log.seek(0)
    out = log.read().decode(errors="replace")
    log.close()
    served = count(url) - before
    code = os.waitstatus_to_exitcode(status)
    note = "" if code == 0 else f"exit {code}: {out.strip()[-200:]}"
    switches = ru.ru_nvcsw + ru.ru_nivcsw
    cpu = ru.ru_utime + ru.ru_stime
    return Row(tool, mode, served, wall, cpu, peak, note, switches, engine_us=engine_us(report))


def report_of(argv: list[str]) -> Path | None:
    """report_of is the JSON report a redline command line writes (``--json PATH``), if any."""
    if "--json" in argv[:-1]:
        return Path(argv[argv.index("--json") + 1])
    return None


def engine_us(report: Path | None) -> float | None:
    """engine_us is a run's CPU a request by its JSON report: the process's CPU (every thread)
    from the run's start to its end over the requests it counted, so without the CLI's start
    and report (None without a report)."""
    try:
        doc = json.loads(report.read_text()) if report else {}
    except (OSError, ValueError):  # none written (the run failed), or cut short
        return None
    value = doc.get("generator", {}).get("cpu_us_per_request") if isinstance(doc, dict) else None
    return float(value) if value is not None else None


def generators(
    p: dict[str, str], url: str, secs: int, tmp: str, rates: dict[str, int]
) -> list[Gen]:
    """Every (tool, mode, argv, cwd) of one repetition: the closed rows, then an open row per
    entry of `rates` (label -> req/s) for each tool that has an open model (redline, oha, k6)."""
    gens = closed_generators(p, url, secs, tmp)
    for label, rate in rates.items():
        gens += open_generators(p, url, secs, tmp, f"open {label} ({rate:,}/s)", rate)
    return [g for g in gens if g[2][0]]


def closed_generators(p: dict[str, str], url: str, secs: int, tmp: str) -> list[Gen]:
    """The closed rows: every tool with CONNS connections (or users) for `secs` s; k6's script
    and locust's file are written to `tmp`."""
    gens: list[Gen] = [
        ("wrk", "closed", [p["WRK"], "-t1", f"-c{CONNS}", f"-d{secs}s", url + "/"], None),
        (
            "redline",
            "closed",
            redline_argv(url, "-c", str(CONNS), "-d", f"{secs}s"),
            None,
        ),
        ("hey", "closed", [p["HEY"], "-c", str(CONNS), "-z", f"{secs}s", url + "/"], None),
        (
            "oha",
            "closed",
            [p["OHA"], "-c", str(CONNS), "-z", f"{secs}s", "--no-tui", url + "/"],
            None,
        ),
    ]
    k6_script = Path(tmp) / "k6.js"
    k6_script.write_text(
        textwrap.dedent(f"""
        import http from 'k6/http';
        export const options = {{ vus: {CONNS}, duration: '{secs}s', discardResponseBodies: true }};
        export default function () {{ http.get('{url}/'); }}
    """)
    )
    gens.append(("k6", "closed", [p["K6"], "run", "-q", str(k6_script)], None))
    locustfile = Path(tmp) / "locustfile.py"
    locustfile.write_text(
        textwrap.dedent("""
        from locust import task
        from locust.contrib.fasthttp import FastHttpUser
        class U(FastHttpUser):
            @task
            def get(self):
                self.client.get("/")
    """)
    )
    gens.append(
        (
            "locust",
            "closed",
            [
                p["LOCUST"],
                "-f",
                str(locustfile),
                "--headless",
                "-u",
                str(CONNS),
                "-r",
                str(CONNS),
                "-t",
                f"{secs}s",
                "-H",
                url,
                "--only-summary",
            ],
            tmp,
        )
    )
    return gens


def open_generators(
    p: dict[str, str], url: str, secs: int, tmp: str, mode: str, rate: int
) -> list[Gen]:
    """The open rows at `rate` req/s (row label `mode`) of the tools that have an open model:
    redline, oha and k6 (its script written to `tmp`)."""
    gens: list[Gen] = []
    gens.append(
        (
            "redline",
            mode,
            redline_argv(
                url, "--rate", str(rate), "--max-connections", str(CONNS), "-d", f"{secs}s"
            ),
            None,
        )
    )
    # oha's open model: a fixed query rate, latency corrected for coordinated omission.
    oha_argv = [p["OHA"], "-c", str(CONNS), "-q", str(rate), "-z", f"{secs}s"]
    oha_argv += ["--latency-correction", "--no-tui", url + "/"]
    gens.append(("oha", mode, oha_argv, None))
    # k6's open model: the constant-arrival-rate executor.
    script = Path(tmp) / f"k6-open-{rate}.js"
    script.write_text(
        textwrap.dedent(f"""
        import http from 'k6/http';
        export const options = {{
          discardResponseBodies: true,
          scenarios: {{ open: {{
            executor: 'constant-arrival-rate', rate: {rate}, timeUnit: '1s',
            duration: '{secs}s', preAllocatedVUs: {CONNS}, maxVUs: {CONNS},
          }} }},
        }};
        export default function () {{ http.get('{url}/'); }}
    """)
    )
    gens.append(("k6", mode, [p["K6"], "run", "-q", str(script)], None))
    return gens


def wrk_matching(p: dict[str, str], url: str, rate: int) -> int | None:
    """The fewest wrk connections whose closed throughput reaches `rate` (2 s probes).

    A generator's cost per request depends on how busy the server is: below capacity the
    server sleeps between requests, and on loopback the sender pays for waking it. wrk at 50
    connections keeps the server saturated, so an open-model row at half capacity is also
    compared with wrk driving the server at (at least) the same throughput."""
    for c in range(1, 17):
        argv = [p["WRK"], "-t1", f"-c{c}", "-d2s", url + "/"]
        if measure("wrk", "probe", argv, url).rps >= rate:
            return c
    return None  # wrk does not reach the rate with few connections: nothing to match


def wanted(args: argparse.Namespace, tool: str) -> bool:
    return not args.only or tool in args.only.split(",")


def redline_argv(url: str, *flags: str) -> list[str]:
    """The redline CLI on one worker thread, quiet, against url/ with the given flags."""
    return [str(VENV_BIN / "redline"), "run", url + "/", "-t", "1", "-q", *flags]


def precompile(*packages: Path) -> None:
    """precompile writes the bytecode of redline's Python package (and any baseline copy), as
    installing a wheel does: where PYTHONDONTWRITEBYTECODE is set, every run would otherwise
    compile the CLI's modules again (~40 ms of CPU) and charge it to the generator."""
    import compileall

    for pkg in (ROOT / "python", *packages):
        compileall.compile_dir(str(pkg), quiet=1)


def baseline_flags(ap: argparse.ArgumentParser) -> None:
    """baseline_flags adds the flags of a bench that measures builds side by side, as
    bench/h2.py, http1.py and stream_gap.py do: ``--baseline [NAME=]DIR`` (repeatable, read by
    :func:`read_baselines`) and ``--no-record``."""
    ap.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="[NAME=]DIR",
        help="a python/ copy holding another build (adds its rows; repeatable)",
    )
    ap.add_argument("--no-record", action="store_true", help="print the table only")


def read_baselines(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """read_baselines reads the ``--baseline [NAME=]DIR`` values of :func:`baseline_flags`: a name
    for the rows ("baseline" when none is given) and a copy of python/ holding another build,
    and writes the bytecode of this tree's package and theirs (:func:`precompile`). A DIR
    without redline's package and extension is refused: run from it, Python would import this
    tree's build instead and the rows would compare the build with itself."""
    out = []
    for value in args.baseline:
        name, path = value.split("=", 1) if "=" in value else ("baseline", value)
        pkg = Path(path) / "redline"
        if not (pkg / "__init__.py").exists() or not any(pkg.glob("_engine*.so")):
            why = f"no redline package with its engine in {path}"
            raise SystemExit(f"bench: --baseline {value}: {why}")
        out.append((name, Path(path)))
    precompile(*(path for _, path in out))
    return out


def baseline_argv(argv: list[str], baseline: Path) -> list[str]:
    """baseline_argv is a redline_argv command line run from the package in ``baseline`` (a
    copy of python/ holding another build's extension, e.g. the commit before a change), so
    that a before and an after are measured interleaved, under the same load, in one table.
    `env` execs, so the rusage read is still that of the generator's own process tree."""
    return ["env", f"PYTHONPATH={baseline}", sys.executable, "-m", "redline", *argv[1:]]


def median_row(rows: list[Row]) -> Row:
    """The run with the median CPU per request; its note says how many runs there were."""
    ordered = sorted(rows, key=lambda r: r.us_per_req)
    row = ordered[len(ordered) // 2]
    if len(rows) == 1:
        return row
    spread = ", ".join(f"{r.us_per_req:.1f}" for r in ordered)
    note = (row.note + " " if row.note else "") + f"median of {len(rows)} ({spread} µs)"
    engines = sorted(r.engine_us for r in rows if r.engine_us is not None)
    engine = engines[len(engines) // 2] if engines else None
    return dataclasses.replace(row, note=note, engine_us=engine)


def table(
    rows: list[Row],
    reference: str = "closed",
    peer_of: Callable[[Row], Row | None] | None = None,
    ratio: str = "ratio to wrk",
) -> str:
    """The markdown table; ratios are to the wrk row whose mode is `reference`, or to each
    row's ``peer_of`` (headed ``ratio``)."""
    wrk = next((r for r in rows if r.tool == "wrk" and r.mode == reference), None)
    lagged = any(r.lag for r in rows)
    lines = [
        f"| tool | model | req/s | client CPU µs/req | {ratio} | peak RSS MB "
        "| context switches/req | " + ("send lag p50 / p99 ms | " if lagged else "") + "note |",
        "|---|---|---:|---:|---:|---:|---:|" + ("---:|" if lagged else "") + "---|",
    ]
    for r in rows:
        peer = peer_of(r) if peer_of else wrk
        shown = f"{r.us_per_req / peer.us_per_req:.2f}×" if peer and peer.requests else "-"
        lag = (f"{r.lag} | " if r.lag else "- | ") if lagged else ""
        lines.append(
            f"| {r.tool} | {r.mode} | {r.rps:,.0f} | {r.us_per_req:.1f} | {shown} | "
            f"{r.max_rss_kb / 1024:.1f} | {r.switches_per_req:.3f} | {lag}{r.note} |"
        )
    return "\n".join(lines)


class TargetFailed(Exception):
    """TargetFailed: the target server did not print the URL it listens on."""


@contextlib.contextmanager
def target_server(*flags: str) -> Iterator[str]:
    """Runs `redline target` (one thread, plus `flags`) on the server core; yields its URL."""
    server = subprocess.Popen(
        ["taskset", "-c", SERVER_CORE, str(VENV_BIN / "redline"), "target", "--threads", "1"]
        + list(flags),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline() if server.stdout else ""
        url = line.strip().rsplit(" ", 1)[-1]
        if "://" not in url:
            raise TargetFailed(f"the target did not start: {line!r}")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


def interleave(
    gens: list[Gen],
    reps: int,
    url: str,
    count: Callable[[str], int] = server_requests,
    schedule: Callable[[str], tuple[int, float] | None] | None = None,
) -> list[Row]:
    """Runs every (tool, mode, argv, cwd) once per repetition, interleaved so that drift hits
    every row alike, and keeps each row's median. ``schedule`` gives the (server port, rate)
    of a mode whose send lag is to be captured (bench/sendlag.py), None for the others."""
    runs: dict[tuple[str, str], list[Row]] = {}
    for rep in range(reps):
        for tool, mode, argv, cwd in gens:
            sched = schedule(mode) if schedule else None
            with sendlag.maybe(sched[0] if sched else None) as cap:
                row = measure(tool, mode, argv, url, cwd, count)
            if cap and sched:
                row = dataclasses.replace(row, lag=cap.lag(sched[1]))
            runs.setdefault((tool, mode), []).append(row)
            lag = f", send lag p50/p99 {row.lag} ms" if row.lag else ""
            print(
                f"  [{rep + 1}/{reps}] {tool} {mode}: {row.rps:,.0f} req/s, "
                f"{row.us_per_req:.1f} µs/req{lag}",
                flush=True,
            )
    return [median_row(r) for r in runs.values()]


def https_table(p: dict[str, str], args: argparse.Namespace) -> str:
    """The closed-model rows over https, against a second target serving TLS (a throwaway
    certificate from trustme): wrk and oha skip verification, redline verifies with --cacert;
    on keep-alive connections that only costs the handshakes."""
    try:
        import trustme
    except ImportError:
        return "(https rows skipped: trustme is not installed; `make install` installs it)"
    with tempfile.TemporaryDirectory() as tmp:
        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1")
        ca_pem, cert_pem, key_pem = (Path(tmp) / n for n in ("ca.pem", "cert.pem", "key.pem"))
        ca.cert_pem.write_to_path(str(ca_pem))
        cert.cert_chain_pems[0].write_to_path(str(cert_pem))
        cert.private_key_pem.write_to_path(str(key_pem))
        try:
            with target_server("--tls-cert", str(cert_pem), "--tls-key", str(key_pem)) as url:
                secs = f"{args.https_seconds}s"
                argvs = {
                    "wrk": [p["WRK"], "-t1", f"-c{CONNS}", f"-d{secs}", url + "/"],
                    "redline": redline_argv(
                        url, "-c", str(CONNS), "-d", secs, "--cacert", str(ca_pem)
                    ),
                    "oha": [
                        p["OHA"],
                        "-c",
                        str(CONNS),
                        "-z",
                        secs,
                        "--no-tui",
                        "--insecure",
                        url + "/",
                    ],
                }
                gens: list[Gen] = [
                    (tool, "closed https", argv, None)
                    for tool, argv in argvs.items()
                    if argv[0] and wanted(args, tool)
                ]
                rows = interleave(gens, args.reps, url)
        except TargetFailed as e:
            return f"(https rows skipped: {e})"
        return table(rows, reference="closed https")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument(
        "--rss-seconds", type=int, default=60, help="length of the long RSS run (0: skip)"
    )
    ap.add_argument("--only", help="comma-separated tools to run")
    ap.add_argument(
        "--https-seconds",
        type=int,
        default=10,
        help="length of each closed-model https run against a TLS target (0: skip)",
    )
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions (median kept)")
    ap.add_argument(
        "--results",
        type=Path,
        help="append the tables here instead of bench/results/peers.md (e.g. for a smoke run)",
    )
    ap.add_argument("--no-record", action="store_true", help="print the tables only")
    args = ap.parse_args()
    ctx = record.Context.now()
    if not shutil.which("taskset"):
        print("bench: taskset is required (util-linux)", file=sys.stderr)
        return 2
    p = peers()
    try:
        with target_server() as url, tempfile.TemporaryDirectory() as tmp:
            rows = closed_and_open_rows(p, url, tmp, args)
    except TargetFailed as e:
        print(f"bench: {e}", file=sys.stderr)
        return 1
    text = table(rows)
    print()
    print(text)
    if args.https_seconds:
        https = https_table(p, args)
        print()
        print(https)
        text += "\n\nclosed model over https:\n\n" + https
    if not args.no_record:
        where = record.append("peers", "redline vs its peers", ctx, text, args.results)
        print(f"\nrecorded in {where}")
    return 0


def closed_and_open_rows(
    p: dict[str, str], url: str, tmp: str, args: argparse.Namespace
) -> list[Row]:
    """The plain-http rows: every closed row, the open rows at shares of the measured
    capacity, wrk at the matching throughput, and the long RSS runs."""
    # The open rows run at shares of the server's capacity, so measure it first: the
    # best of three short closed redline runs (the same meter as every row).
    rates: dict[str, int] = {}
    if wanted(args, "redline") or wanted(args, "oha") or wanted(args, "k6"):
        probe = redline_argv(url, "-c", str(CONNS), "-d", f"{min(args.seconds, 5)}s")
        capacity = max(measure("redline", "probe", probe, url).rps for _ in range(3))
        print(f"  capacity probe: {capacity:,.0f} req/s", flush=True)
        # The issue's row is just under capacity; the half-capacity row shows the open
        # model where it pays most for its pacing.
        rates = {"90% cap.": int(capacity * 0.9), "50% cap.": int(capacity * 0.5)}
    gens = [g for g in generators(p, url, args.seconds, tmp, rates) if wanted(args, g[0])]
    if p["WRK"] and wanted(args, "wrk"):
        for label, rate in rates.items():
            c = wrk_matching(p, url, rate)
            if c is None:
                continue
            mode = f"closed -c{c} (≥ open {label} rate)"
            argv = [p["WRK"], "-t1", f"-c{c}", f"-d{args.seconds}s", url + "/"]
            # Listed (and run) right after the open rows it is compared with.
            at = max(i for i, g in enumerate(gens) if label in g[1]) + 1 if gens else 0
            gens.insert(at, ("wrk", mode, argv, None))
    rows = interleave(gens, args.reps, url)
    if args.rss_seconds and wanted(args, "redline"):
        for secs in sorted({max(10, args.rss_seconds // 3), args.rss_seconds}):
            argv = redline_argv(url, "-c", str(CONNS), "-d", f"{secs}s")
            rows.append(measure("redline", f"closed {secs}s (RSS)", argv, url))
    return rows


if __name__ == "__main__":
    sys.exit(main())
