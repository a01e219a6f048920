"""taskqueue_scale: one taskqueue instance against two behind a load balancer, on PostgreSQL
(`make scale-demo`): seed 002's side-by-side table, produced by a command.

It starts, all on 127.0.0.1 at ports chosen at run time and in one temporary directory:
PostgreSQL from the distribution's package (initdb/pg_ctl, no system service), redline's
target server as the http-fetch origin, two taskqueue instances on one database, and nginx
as a round-robin balancer in front of them (its configuration generated here). It runs
`redline find` with the seed-000 scenario (examples/taskqueue.py, closed model) against one
instance, then against the two through nginx, and prints both searches' answers, redline's
comparison of the two and what each process spent in CPU (what limits the cluster: the
service, the database, the balancer or the generator). Everything it started stops at the
end, on an error and on Ctrl-C.

It lives in bench/, not in the service: it measures with redline (which the service must
not depend on) and writes its table to bench/results/taskqueue.md with --write-results.

    .venv/bin/python bench/taskqueue_scale.py                  # ~4 minutes (two 90 s searches)
    .venv/bin/python bench/taskqueue_scale.py --max-time 60 --sqlite --write-results
    .venv/bin/python bench/taskqueue_scale.py --max-time 60 --sqlite --repeat 3 --one

The machine's own noise (other work on it) moves a search's answer by tens of percent:
--repeat searches SQLite and PostgreSQL (one instance) back to back several times, each on
a fresh store and alternating which goes first, and prints PostgreSQL's share of SQLite's
throughput for each pair; --one leaves out the two-instance search.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import psutil

# bench/taskqueue.py (the single-instance benchmark) would shadow the service's package:
# look for modules beside this script only after everything else.
_HERE = str(Path(__file__).resolve().parent)
sys.path[:] = [p for p in sys.path if p not in (_HERE, "")] + [_HERE]

import record  # noqa: E402  (bench/record.py)
import taskqueue  # noqa: E402
from redline.compare import compare as compare_documents  # noqa: E402
from redline.compare import read, render_markdown, render_text  # noqa: E402
from redline.errors import RedlineError  # noqa: E402
from redline.find import finder  # noqa: E402
from redline.find.demo import console_script, service, stop_group  # noqa: E402
from redline.scenario.compiler import load  # noqa: E402
from taskqueue.localpg import LocalPgError, LocalPostgres, free_port, wait_port  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "examples" / "taskqueue.py"
NGINX_CONF = """\
worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{ worker_connections 8192; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/nginx-body;
    proxy_temp_path {tmp}/nginx-proxy;
    fastcgi_temp_path {tmp}/nginx-fastcgi;
    uwsgi_temp_path {tmp}/nginx-uwsgi;
    scgi_temp_path {tmp}/nginx-scgi;
    upstream taskqueue {{
{servers}
        keepalive 128;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://taskqueue;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
}}
"""
"""NGINX_CONF: round robin (nginx's default) over the instances, keep-alive both ways."""


@contextmanager
def nginx(tmp: Path, upstreams: list[str]) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """nginx runs Debian's nginx in the foreground on a generated configuration."""
    exe = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(exe).exists():
        raise RedlineError("nginx not found: apt-get install nginx")
    port = free_port()
    servers = "\n".join(f"        server {u.removeprefix('http://')};" for u in upstreams)
    conf = tmp / "nginx.conf"
    conf.write_text(NGINX_CONF.format(tmp=tmp, servers=servers, port=port))
    log = (tmp / "nginx.log").open("wb")
    argv = [exe, "-p", str(tmp), "-c", str(conf), "-e", str(tmp / "nginx-error.log")]
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        if not wait_port(port, 10.0):
            errors = (tmp / "nginx-error.log").read_text(errors="replace")[-400:]
            raise RedlineError(f"nginx did not start: {errors}")
        yield f"http://127.0.0.1:{port}", proc
    finally:
        stop_group(proc)
        log.close()


class CpuMeter:
    """CpuMeter: CPU seconds spent by named process trees between start() and stop(). The
    generator is this process alone: every service the demo starts is its child, and
    counting its tree put the instances, nginx and the origin under the generator (109 % of
    a core beside instances of 30 % and 29 %, 2026-11-28 16:21)."""

    def __init__(self, roots: dict[str, list[int]]) -> None:
        self.roots = roots
        self._t0 = 0.0
        self._before: dict[str, float] = {}

    def _cpu(self, pids: list[int], tree: bool = True) -> float:
        total = 0.0
        for pid in pids:
            try:
                root = psutil.Process(pid)
                for p in [root, *(root.children(recursive=True) if tree else [])]:
                    t = p.cpu_times()
                    total += t.user + t.system
            except psutil.Error:
                continue
        return total

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._before = {
            name: self._cpu(pids, name != "generator") for name, pids in self.roots.items()
        }

    def stop(self) -> dict[str, float]:
        """stop returns each tree's CPU as % of one core over the interval."""
        wall = max(1e-9, time.monotonic() - self._t0)
        return {
            name: 100.0 * (self._cpu(pids, name != "generator") - self._before[name]) / wall
            for name, pids in self.roots.items()
        }


def _postmaster_pid(pg: LocalPostgres) -> int:
    return int((pg.datadir / "postmaster.pid").read_text().split()[0])


def watched(roots: dict[str, list[int]], exporters: dict[str, str]) -> list[str]:
    """watched: the deployment's parts as `--watch` specs: each process tree but the
    generator's (redline watches itself), and each taskqueue instance's /metrics (its
    executor slots and fetch connections, gauge pairs) under the same name."""
    slug = {name: name.replace(" ", "-") for name in roots}
    specs = [
        f"{slug[name]}=pid:{pid}"
        for name, pids in roots.items()
        if name != "generator"
        for pid in pids
    ]
    return specs + [f"{slug.get(n, n)}=prometheus:{url}/metrics" for n, url in exporters.items()]


def search(
    label: str,
    url: str,
    origin: str,
    max_time: float,
    meter: CpuMeter,
    exporters: dict[str, str],
    start: float = 128.0,
) -> tuple[dict[str, Any], dict[str, float]]:
    """search runs `redline find` with the seed-000 scenario against url, watching every
    part of the deployment (:func:`watched`): the limit names the part that ran out."""
    compiled = load(SCENARIO, {"ORIGIN": origin + "/"})
    print(f"scale-demo: {label}: redline find {url} (closed model, {max_time:g} s)", flush=True)
    meter.start()
    result = finder.find(
        url,
        plan=compiled.plan,
        scenario=str(SCENARIO),
        model="closed",
        start=start,
        max_load=16384,
        max_time=max_time,
        slos=["p99<500ms"],
        min_step=3.0,
        max_step=8.0,
        confirm=5.0,
        watch=watched(meter.roots, exporters),
    )
    cpu = meter.stop()
    print(finder.answers_text(result), flush=True)
    return result, cpu


def cpu_table(rows: list[tuple[str, dict[str, float]]]) -> str:
    """cpu_table: CPU per process tree for each run (– where that process was not running)."""
    names = list(dict.fromkeys(n for _, cpu in rows for n in cpu))
    head = "| run | " + " | ".join(f"{n} CPU %" for n in names) + " |"
    rule = "|---|" + "---:|" * len(names)
    body = [
        f"| {label} | " + " | ".join(f"{cpu[n]:.0f}" if n in cpu else "–" for n in names) + " |"
        for label, cpu in rows
    ]
    return "\n".join([head, rule, *body])


def _taskqueue(dsn: str | None, tmp: Path, name: str) -> list[str]:
    argv = [console_script("taskqueue"), "serve", "--port", "0", "--workers", "1"]
    argv += ["--allow-fetch-cidr", "127.0.0.0/8", "--max-queue", "100000"]
    if dsn is None:
        return [*argv, "--data-dir", str(tmp / name)]
    return [*argv, "--database", dsn]


def ratio_lines(runs: list[tuple[str, dict[str, Any], dict[str, float]]]) -> list[str]:
    """ratio_lines: PostgreSQL's steady-state throughput (one instance) as a share of SQLite's,
    per repetition (each pair searched back to back), and their median."""
    rates: dict[str, dict[str, float]] = {}
    for label, result, _ in runs:
        kind, _, rep = label.partition(" #")
        rate = result["answers"].get("steady_state_throughput_rps")
        if rate is not None:
            rates.setdefault(rep, {})[kind] = float(rate)
    shares = [(rep, r[PG1] / r[SQLITE]) for rep, r in rates.items() if r.get(SQLITE) and PG1 in r]
    if not shares:
        return []
    lines = [
        f"PostgreSQL (1 instance) / SQLite, steady-state throughput{f' #{rep}' if rep else ''}:"
        f" {rates[rep][PG1]:,.0f} / {rates[rep][SQLITE]:,.0f} req/s = {share:.0%}"
        for rep, share in shares
    ]
    if len(shares) > 1:
        lines.append(f"median of {len(shares)}: {statistics.median(s for _, s in shares):.0%}")
    return lines


SQLITE = "SQLite, 1 instance"
PG1 = "PostgreSQL, 1 instance"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """parse_args reads the command line (``--repeat`` at least 1)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # One instance on a quiet box sustained 3,100 req/s at 2,048 users with no limit found in
    # 45 s from 64 users (2026-11-28 16:21): the search starts nearer and runs longer (from
    # 256 users, the one instance broke its SLO at its first step at load 12: 17:31).
    ap.add_argument("--max-time", type=float, default=90.0, help="seconds per search")
    ap.add_argument("--start", type=float, default=128.0, help="users at the first step")
    ap.add_argument("--keep", type=Path, help="write each search's result JSON in this folder")
    ap.add_argument("--sqlite", action="store_true", help="search SQLite (1 instance) first")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="search SQLite and PostgreSQL (1 instance) this many times, alternating which"
        " goes first, each on a fresh store (the machine's noise shows in the spread)",
    )
    ap.add_argument(
        "--one",
        action="store_true",
        help="stop after PostgreSQL with one instance (no second instance, no nginx)",
    )
    ap.add_argument(
        "--write-results", action="store_true", help="append to bench/results/taskqueue.md"
    )
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    return args


def _interrupted(signum: int, frame: Any) -> None:
    """_interrupted: a SIGTERM unwinds like Ctrl-C, so everything started stops."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    ctx = record.Context.now()

    signal.signal(signal.SIGTERM, _interrupted)
    runs: list[tuple[str, dict[str, Any], dict[str, float]]] = []
    comparisons = []
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="taskqueue-scale-")))
        try:
            pg = stack.enter_context(LocalPostgres())  # its own temp dir, readable by its user
        except LocalPgError as exc:
            raise RedlineError(str(exc)) from None
        # The instances import the same taskqueue as this script (PYTHONPATH, or the venv's).
        print(f"scale-demo: taskqueue from {Path(taskqueue.__file__).parent}", flush=True)
        origin, origin_proc = stack.enter_context(
            service(
                [console_script("redline"), "target", "--threads", "1", "--port", "0"],
                tmp / "o.log",
            )
        )
        generator = [psutil.Process().pid]
        for rep in range(args.repeat):
            tag = f" #{rep + 1}" if args.repeat > 1 else ""
            last = rep == args.repeat - 1
            kinds = ["sqlite", "pg"] if args.sqlite else ["pg"]
            if rep % 2:
                kinds.reverse()
            pair: dict[str, dict[str, Any]] = {}
            for kind in kinds:
                instance = ExitStack()
                label, url, roots, dsn = _instance(kind, rep, tag, tmp, pg, generator, instance)
                roots["origin"] = [origin_proc.pid]  # a part too (it answers every fetch)
                name = "taskqueue A" if kind == "pg" else "taskqueue"
                meter = CpuMeter(roots)
                result, cpu = search(
                    label, url, origin, args.max_time, meter, {name: url}, args.start
                )
                runs.append((label, result, cpu))
                pair[kind] = read(result, label)
                if kind == "pg" and last and not args.one:
                    stack.push(instance)  # A stays up for the two-instance search
                    a, a_dsn, a_doc, a_roots = url, dsn, pair[kind], roots
                else:
                    instance.close()
            if "sqlite" in pair:
                comparisons.append(compare_documents(pair["sqlite"], pair["pg"]))
        if not args.one:
            # B starts only now: on one database it would otherwise claim A's tasks.
            b, b_proc = stack.enter_context(service(_taskqueue(a_dsn, tmp, "b"), tmp / "b.log"))
            lb, lb_proc = stack.enter_context(nginx(tmp, [a, b]))
            print(f"scale-demo: taskqueue {b} too, nginx {lb} in front of both")
            roots = {**a_roots, "taskqueue B": [b_proc.pid], "nginx": [lb_proc.pid]}
            label = "PostgreSQL, 2 instances + nginx"
            both = {"taskqueue A": a, "taskqueue B": b}
            result, cpu = search(
                label, lb, origin, args.max_time, CpuMeter(roots), both, args.start
            )
            runs.append((label, result, cpu))
            comparisons.append(compare_documents(a_doc, read(result, label)))
    if args.keep is not None:
        keep(runs, args.keep)
    # One block per comparison, each under its own base (the renderers name one base).
    text = "\n".join(render_text([c]) for c in comparisons)
    print(text)
    cpus = cpu_table([(label, cpu) for label, _, cpu in runs])
    print(cpus)
    shares = ratio_lines(runs)
    print("\n".join(shares))
    if args.write_results:
        path = record.append(
            "taskqueue",
            "taskqueue scale-out (make scale-demo)",
            ctx,
            _results(runs, comparisons, cpus, shares),
        )
        print(f"scale-demo: appended to {path}")
    return 0


def keep(runs: list[tuple[str, dict[str, Any], dict[str, float]]], folder: Path) -> None:
    """keep writes each search's result JSON in ``folder`` (scale-1.json, ...)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, (label, result, _) in enumerate(runs):
        finder.write_json(result, folder / f"scale-{i + 1}.json")
        print(f"scale-demo: {label}: {folder / f'scale-{i + 1}.json'}")


def _instance(
    kind: str,
    rep: int,
    tag: str,
    tmp: Path,
    pg: LocalPostgres,
    generator: list[int],
    instance: ExitStack,
) -> tuple[str, str, dict[str, list[int]], str | None]:
    """_instance starts one taskqueue in ``instance`` on the store ``kind`` (sqlite: its own
    file; pg: a fresh database of ``pg``) for repeat ``rep``; it returns the search's label,
    the instance's URL, the process trees to meter, and the database (None for SQLite)."""
    if kind == "sqlite":
        url, proc = instance.enter_context(
            service(_taskqueue(None, tmp, f"sqlite{rep}"), tmp / f"s{rep}.log")
        )
        return SQLITE + tag, url, {"taskqueue": [proc.pid], "generator": generator}, None
    dsn = pg.create_database(f"taskqueue{rep}")  # a fresh one each time
    url, proc = instance.enter_context(service(_taskqueue(dsn, tmp, "a"), tmp / f"a{rep}.log"))
    print(f"scale-demo: PostgreSQL {dsn}, taskqueue {url}")
    roots = {
        "taskqueue A": [proc.pid],
        "postgres": [_postmaster_pid(pg)],
        "generator": generator,
    }
    return PG1 + tag, url, roots, dsn


def _results(
    runs: list[tuple[str, dict[str, Any], dict[str, float]]],
    comparisons: list[Any],
    cpus: str,
    shares: list[str],
) -> str:
    """_results: what --write-results appends: each search's answers, the comparisons, the
    CPU per process tree and the ratios."""
    answers = "\n\n".join(
        f"**{label}**\n\n```text\n{finder.answers_text(result).rstrip()}\n```"
        for label, result, _ in runs
    )
    tables = "\n\n".join(render_markdown([c]).rstrip() for c in comparisons)
    summary = "".join(f"- {line}\n" for line in shares)
    return (
        f"{answers}\n\n{tables}\n\n"
        f"CPU per process tree during each search (100 = one core):\n\n{cpus}\n"
        + (f"\n{summary}" if summary else "")
    )


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("scale-demo: interrupted; everything it started has been stopped", file=sys.stderr)
        sys.exit(130)
    except RedlineError as exc:
        print(f"scale-demo: {exc}", file=sys.stderr)
        sys.exit(2)
