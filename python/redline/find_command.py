"""find_command: the ``redline find`` and ``redline demo`` subcommands (parsing and the live
view only; the work is :func:`redline.find.find` and :mod:`redline.demo`)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import IO, TYPE_CHECKING, Any

from redline.errors import ConfigError, RedlineError
from redline.live.command import add_live_flags, open_session, url_name
from redline.options import parse_duration

if TYPE_CHECKING:  # the search pulls in numpy/scipy: `redline run` must not pay for them
    from redline.search import Step

FIND_EXAMPLES = """\
examples:
  redline find http://127.0.0.1:8080/
  redline find --model open --slo 'p99<100ms' --max-errors 1% http://127.0.0.1:8080/api
  redline find --monitor-pid 1234 --json find.json http://127.0.0.1:8080/
  redline find 'http://127.0.0.1:{port}/' --vary workers=1,2 --repeat 3 \
      --monitor-cmd 'taskqueue serve --port {port} --workers {workers}' --report workers.html"""


def add_find_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """add_find_parser defines ``redline find``."""
    f = sub.add_parser(
        "find",
        help="search for the load where a service runs best and where it breaks",
        description=(
            "Step the load (VUs, or req/s with --model open) in one live run: find where the"
            " service runs best (the most throughput per unit of latency) and keep pushing to"
            " where it fails (errors, an SLO, throughput that stops growing or falls, a"
            " backlog, a collapse, service CPU, or redline's own CPU), refine within the"
            " noise, confirm, and print the four answers. Throughput is goodput: answers"
            " that passed."
        ),
        epilog=FIND_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    f.add_argument("url", metavar="URL|SCENARIO.py", help="http://host:port/path, or a scenario")
    f.add_argument("--host", metavar="URL", help="scenario: the host it runs against")
    f.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="scenario: a run variable (repeatable)",
    )
    f.add_argument("--model", choices=("closed", "open"), default="closed")
    f.add_argument("--slo", action="append", default=[], help="e.g. 'p99<100ms' (repeatable)")
    f.add_argument("--max-errors", default="1%", help="error rate that stops (default 1%%)")
    f.add_argument("--max-time", default="2m", help="bound on the whole search (default 2m)")
    f.add_argument(
        "--throughput",
        default="requests",
        metavar="requests|iterations|NAME[=LABEL]",
        help="what throughput counts: requests (default), a scenario's iterations, or the"
        " requests of one name; '=LABEL' names the unit (e.g. submit=tasks: tasks/s)",
    )
    f.add_argument(
        "--stop-at-knee",
        action="store_true",
        help="stop at the optimal point instead of pushing on to the limit (production)",
    )
    f.add_argument("--start", type=float, help="first load (default 1 VU or 50 req/s)")
    f.add_argument("--max-load", type=float, help="ceiling (default 1000 VUs or 1e6 req/s)")
    f.add_argument("--min-step", default="3s", help="shortest step (default 3s)")
    f.add_argument("--max-step", default="15s", help="longest step (default 15s)")
    f.add_argument("--confirm", default="10s", help="confirmation step length (default 10s)")
    f.add_argument("--soak", default="0s", help="then hold the optimum this long (leak check)")
    f.add_argument("-t", "--threads", type=int, help="worker threads (default: one per core)")
    f.add_argument("-H", "--header", action="append", default=[], help="'Name: value'")
    f.add_argument("-m", "--method", default="GET")
    f.add_argument("--body", help="request body: a string, or @file")
    f.add_argument("--service-cpu", type=float, help="stop when the service's CPU %% exceeds this")
    f.add_argument("--monitor-pid", type=int, help="watch this process tree (psutil)")
    f.add_argument("--monitor-cmd", help="start this command, watch it, stop it at the end")
    f.add_argument("--monitor-prometheus", metavar="URL", help="scrape this /metrics each second")
    f.add_argument("--metric", action="append", default=[], help="extra Prometheus series")
    f.add_argument(
        "--vary",
        action="append",
        default=[],
        metavar="NAME=V1,V2",
        help="an experiment: search the --monitor-cmd service once per value of its {NAME}"
        " placeholder (repeatable: every combination), fresh each time ({port}: a free port,"
        " in the command and the URL; {dir}: an empty directory), and compare the results",
    )
    f.add_argument(
        "--repeat", type=int, metavar="N", help="with --vary: search each configuration N times"
    )
    f.add_argument("--json", metavar="FILE", help="write the result document")
    f.add_argument("--report", metavar="FILE.html", help="write the HTML report")
    f.add_argument("--markdown", metavar="FILE.md", help="write the Markdown report")
    f.add_argument("-q", "--quiet", action="store_true", help="no live view")
    add_live_flags(f)
    f.set_defaults(func=cmd_find)
    return f


def wait_listening(url: str, timeout_s: float) -> None:
    """wait_listening waits (bounded) until ``url``'s host and port accept a TCP connection."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=1.0):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise ConfigError(
                    f"--monitor-cmd: nothing listens on {parts.netloc} after {timeout_s:g}s"
                ) from None
            time.sleep(0.1)


def parse_share(text: str, what: str) -> float:
    """parse_share reads ``1%`` or ``0.01`` as a share."""
    try:
        if text.endswith("%"):
            return float(text[:-1]) / 100
        return float(text)
    except ValueError:
        raise ConfigError(f"{what}: expected e.g. 1% or 0.01, got {text!r}") from None


def make_monitor(args: argparse.Namespace) -> Any:
    """make_monitor builds the service monitor the flags ask for (None without one)."""
    chosen = [
        x for x in (args.monitor_pid, args.monitor_cmd, args.monitor_prometheus) if x is not None
    ]
    if not chosen:
        return None
    if len(chosen) > 1:
        raise ConfigError("give one of --monitor-pid, --monitor-cmd, --monitor-prometheus")
    try:
        from redline import monitor
    except ImportError as e:
        raise RedlineError(f"service monitoring is not available: {e}") from None
    if args.monitor_pid is not None:
        return monitor.ProcessMonitor(args.monitor_pid)
    if args.monitor_cmd is not None:
        return monitor.CommandMonitor(args.monitor_cmd)
    return monitor.PrometheusMonitor(args.monitor_prometheus, metrics=args.metric)


class FindView:
    """FindView shows the search as it goes: a rich panel on a terminal (the step, its
    progress, offered and achieved rate, p50/p95/p99, errors, service CPU and fds, elapsed and
    maximum time), one plain line per interval elsewhere."""

    def __init__(
        self,
        max_time_s: float,
        max_step_s: float,
        stream: IO[str] | None = None,
        monitor: Any = None,
    ):
        self.stream = stream or sys.stderr
        self.monitor = monitor
        self.max_time_s = max_time_s
        self.max_step_s = max_step_s
        self.started = time.monotonic()
        self.step_started = self.started
        self.last_load: float | None = None
        self.steps: list[str] = []
        self._live = None
        if self.stream.isatty():
            from rich.console import Console
            from rich.live import Live

            self._live = Live("searching...", console=Console(file=self.stream), transient=True)
            self._live.start()

    def snapshot(self, s: dict[str, Any], load: float, phase: str) -> None:
        """snapshot hears each interval of the search."""
        if load != self.last_load:
            self.last_load, self.step_started = load, time.monotonic()
        now = time.monotonic()
        offered = s.get("intended_rate")
        parts = [
            f"{phase} load={load:g}",
            f"offered={offered:.0f}/s" if offered else "",
            f"achieved={s.get('achieved_rate', 0):.0f}/s",
            f"p50={s.get('p50_ms', 0):.1f}ms p95={s.get('p95_ms', s.get('p90_ms', 0)):.1f}ms"
            f" p99={s.get('p99_ms', 0):.1f}ms",
            f"errors={s.get('errors', 0)}",
            self._service(),
            f"elapsed={now - self.started:.0f}s/{self.max_time_s:.0f}s",
        ]
        line = "  ".join(p for p in parts if p)
        if self._live is None:
            print(line, file=self.stream, flush=True)
            return
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.text import Text

        done = min((now - self.step_started) / self.max_step_s, 1.0)
        total = min((now - self.started) / self.max_time_s, 1.0)
        self._live.update(
            Group(
                *(Text(x) for x in self.steps[-8:]),
                Text(line, style="bold"),
                Text("step  ", end=""),
                ProgressBar(total=1.0, completed=done, width=40),
                Text("total ", end=""),
                ProgressBar(total=1.0, completed=total, width=40),
            )
        )

    def _service(self) -> str:
        """_service is the monitored service's latest CPU and fds, when there is a monitor."""
        latest = self.monitor.latest() if self.monitor is not None else None
        if latest is None:
            return ""
        cpu = "?" if latest.cpu_percent is None else f"{latest.cpu_percent:.0f}%"
        fds = "?" if latest.fds is None else f"{latest.fds:.0f}"
        return f"service cpu={cpu} fds={fds}"

    def step(self, st: Step) -> None:
        """step hears each judged step."""
        verdict = "ok" if st.ok else ",".join(st.fired) + f" ({st.why})"
        cpu = st.service.get("cpu_percent")
        line = (
            f"step {st.index + 1:>2} {st.phase:<7} load {st.load:>8g}  {st.throughput_rps:>8.0f}"
            f" req/s  p50 {st.p50_ms:7.1f} ms  p99 {st.p99_ms:7.1f} ms  errors"
            f" {st.error_rate:6.2%}"
            + (f"  cpu {cpu:.0f}%" if cpu is not None else "")
            + f"  {verdict}"
        )
        self.steps.append(line)
        if self._live is None:
            print(line, file=self.stream, flush=True)

    def close(self) -> None:
        """close ends the live panel and leaves the step table on the screen."""
        if self._live is not None:
            self._live.stop()
            for line in self.steps:
                print(line, file=self.stream)


def cmd_find(args: argparse.Namespace) -> int:
    """cmd_find runs the search, prints the four answers and writes the outputs."""
    if args.vary or args.repeat is not None:
        from redline.experiment.command import cmd_experiment

        return cmd_experiment(args)
    from redline import find as finder

    url, plan, scenario = args.url, None, None
    if args.url.endswith(".py"):
        from redline.scenario.command import compile_file

        compiled = compile_file(args.url, args.var)
        url = args.host or compiled.host or ""
        if not url:
            raise ConfigError(f"{args.url}: no host: give --host URL or Scenario(host=...)")
        plan, scenario = compiled.plan, args.url
    max_time = parse_duration(args.max_time, "--max-time")
    max_step = parse_duration(args.max_step, "--max-step")
    monitor = make_monitor(args)
    if args.monitor_cmd is not None:
        # The command is the service: start it and wait until it listens before the load.
        monitor.start()
        try:
            wait_listening(url, 30.0)
        except BaseException:
            monitor.stop()
            raise
    view = None if args.quiet else FindView(max_time, max_step, monitor=monitor)
    on_snapshot, on_step = (view.snapshot, view.step) if view else (None, None)
    live = None
    try:
        name = "all" if plan is not None else url_name(url, args.method)
        title = f"redline find {args.url}"
        live = open_session(
            args,
            "find",
            title,
            args.model,
            name,
            monitor,
            target=url,
            method=None if plan is not None else (args.method or "GET"),
        )
        if live is not None:
            # The stop button ends the search as Ctrl-C does: the steps that ran are kept.
            on_snapshot, on_step = live.find_callbacks(on_snapshot, on_step)
        result = finder.find(
            url,
            plan=plan,
            scenario=scenario,
            monitor=monitor,
            on_snapshot=on_snapshot,
            on_step=on_step,
            **find_options(args),
        )
    except BaseException:
        if live is not None:
            live.close(linger=False)
        raise
    finally:
        if view is not None:
            view.close()
    print(finder.answers_text(result), flush=True)
    write_outputs(result, args.json, args.report, args.markdown)
    if live is not None:
        live.finish(result, _render_find)
        if live.stop_requested:
            print("redline: stopped from the web page", file=sys.stderr)
        live.close()
    return 130 if result.get("interrupted") else 0


def find_options(args: argparse.Namespace) -> dict[str, Any]:
    """find_options maps the search's flags to :func:`redline.find.find`'s keywords (one place
    for ``redline find`` and its experiments)."""
    return {
        "model": args.model,
        "slos": args.slo,
        "max_errors": parse_share(args.max_errors, "--max-errors"),
        "max_time": parse_duration(args.max_time, "--max-time"),
        "start": args.start,
        "max_load": args.max_load,
        "threads": args.threads,
        "method": args.method,
        "headers": args.header,
        "body": args.body,
        "min_step": parse_duration(args.min_step, "--min-step"),
        "max_step": parse_duration(args.max_step, "--max-step"),
        "confirm": parse_duration(args.confirm, "--confirm"),
        "soak": parse_duration(args.soak, "--soak"),
        "service_cpu": args.service_cpu,
        "throughput": args.throughput,
        "stop_at_knee": args.stop_at_knee,
    }


def _render_find(result: dict[str, Any]) -> str:
    """_render_find is the find report the live page links to at the end."""
    from redline.report import render_html

    return render_html(result)


def write_outputs(
    result: dict[str, Any], json_path: str | None, html: str | None, markdown: str | None
) -> None:
    """write_outputs writes the JSON document and the reports that were asked for."""
    from redline import find as finder

    if json_path:
        finder.write_json(result, json_path)
    if html or markdown:
        from redline.report import write_reports

        write_reports(result, html, markdown)


def add_demo_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """add_demo_parser defines ``redline demo``."""
    d = sub.add_parser(
        "demo",
        help="start the bundled services, find their capacity, write demo-report.html/.md",
    )
    d.add_argument("--quick", action="store_true", help="about one minute instead of three")
    d.add_argument("-q", "--quiet", action="store_true", help="no live view")
    d.set_defaults(func=cmd_demo)
    return d


def cmd_demo(args: argparse.Namespace) -> int:
    """cmd_demo runs :func:`redline.demo.demo`."""
    from redline.demo import demo

    return demo(quick=args.quick, live=not args.quiet)
