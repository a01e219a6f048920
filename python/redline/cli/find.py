"""find: the ``redline find`` and ``redline demo`` subcommands (parsing and the live
view only; the work is :func:`redline.find.find` and :mod:`redline.find.demo`)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from redline.cli.cluster import EXIT_LOST, add_cluster_flags
from redline.cli.experiment import add_vary_flags
from redline.cli.find_flags import find_options
from redline.cli.live import add_live_flags, open_session, url_name
from redline.cli.run_flags import (
    add_interval_flag,
    add_request_flags,
    add_threads_flag,
    add_watch_flag,
    secs,
    shown_defaults,
)
from redline.errors import ConfigError, RedlineError
from redline.find.plan import CONFIRM_S, MAX_TIME_S, SEARCH_DEFAULTS, Plan
from redline.find.view import FindView, write_outputs
from redline.runs.options import parse_duration
from redline.runs.proxy import say_through, warn_proxy
from redline.runs.runner import defaults
from redline.view.progress import summary_stream

FIND_EXAMPLES = """\
examples:
  redline find http://127.0.0.1:8080/
  redline find --model open --slo 'p99<100ms' --max-errors 1% http://127.0.0.1:8080/api
  redline find --monitor-pid 1234 --json find.json http://127.0.0.1:8080/
  redline find --watch api=port:8080 --watch db=prometheus:http://127.0.0.1:9187/metrics \
      http://127.0.0.1:8080/
  redline find 'http://127.0.0.1:{port}/' --vary workers=1,2 --repeat 3 \
      --monitor-cmd 'taskqueue serve --port {port} --workers {workers}' --report workers.html"""


def add_find_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """add_find_parser defines ``redline find``; the run options' flags are ``redline run``'s
    (:mod:`redline.cli.run_flags`), shown with a search's own defaults where they differ."""
    engine = shown_defaults(defaults())
    # SEARCH_DEFAULTS says why a search's timeout and interval are not the engine's.
    own = {k: secs(v) for k, v in SEARCH_DEFAULTS.items()}
    shown = {**engine, **own}
    f = sub.add_parser(
        "find",
        help="search for the load where a service runs best and where it breaks",
        description=(
            "Step the load (VUs, or req/s with --model open) in one live run: find where the"
            " service runs best (the most throughput per unit of latency) and keep pushing to"
            " where it fails (errors, an SLO, throughput that stops growing or falls, a"
            " backlog, a collapse, service CPU, or redline's own CPU), refine within the"
            " noise, confirm, and print the four answers. Throughput is goodput: answers"
            " that passed. Each step sends what redline run would (its request, https and"
            f" protocol flags), but with a search's own defaults: --timeout {own['timeout']}"
            f" (redline run: {engine['timeout']}) and --interval {own['interval']} (redline run:"
            f" {engine['interval']}), since a search judges short steps."
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
    f.add_argument(
        "--slo",
        action="append",
        default=[],
        help="a latency bound every step must meet, in --threshold's grammar:"
        " p50|p90|p95|p99|p99.9|mean|max < N us|ms|s, e.g. 'p99<100ms'; with --stream, a"
        " stream figure's: ttft_|itl_|first_byte_|chunk_gap_ before it, e.g."
        " 'ttft_p99<500ms' (repeatable)",
    )
    f.add_argument("--max-errors", default="1%", help="error rate that stops (default 1%%)")
    # The search's defaults are find/plan.py's, shown as given.
    top, low, high = secs(MAX_TIME_S), secs(Plan.min_step_s), secs(Plan.max_step_s)
    f.add_argument("--max-time", default=top, help=f"bound on the whole search (default {top})")
    add_system_flags(f)
    f.add_argument(
        "--stop-at-knee",
        action="store_true",
        help="stop at the optimal point instead of pushing on to the limit (production)",
    )
    f.add_argument("--start", type=float, help="first load (default 1 VU or 50 req/s)")
    f.add_argument("--max-load", type=float, help="ceiling (default 1000 VUs or 1e6 req/s)")
    f.add_argument("--min-step", default=low, help=f"shortest step (default {low})")
    f.add_argument("--max-step", default=high, help=f"longest step (default {high})")
    f.add_argument(
        "--confirm",
        default=secs(CONFIRM_S),
        help=f"confirmation step length (default {secs(CONFIRM_S)})",
    )
    f.add_argument("--soak", default="0s", help="then hold the optimum this long (leak check)")
    f.add_argument("--service-cpu", type=float, help="stop when the service's CPU %% exceeds this")
    f.add_argument("--monitor-pid", type=int, help="watch this process tree (psutil)")
    f.add_argument("--monitor-prometheus", metavar="URL", help="scrape this /metrics each second")
    f.add_argument("--metric", action="append", default=[], help="extra Prometheus series")
    add_vary_flags(f, "find")
    f.add_argument("--json", metavar="FILE", help="write the result document (-: to stdout)")
    f.add_argument("--report", metavar="FILE.html", help="write the HTML report")
    f.add_argument("-q", "--quiet", action="store_true", help="no live view")
    # The run options (redline run's flags, the load shape aside: the search sets it).
    each = f.add_argument_group("each step's run (as redline run's flags)")
    add_threads_flag(each)
    add_interval_flag(each, shown)
    add_request_flags(f, shown)
    add_live_flags(f)
    add_cluster_flags(f)
    f.set_defaults(func=cmd_find)
    return f


def add_system_flags(f: argparse.ArgumentParser) -> None:
    """add_system_flags defines what a search reads of the system beside the answers: what
    it counts as throughput (``--throughput``), the gauge of the work waiting that judges
    its steadiness (``--backlog``) and the deployment's parts (``--watch``)."""
    f.add_argument(
        "--throughput",
        default="requests",
        metavar="requests|iterations|NAME[:VALUE]|prometheus:URL#SERIES[=LABEL]",
        help="what throughput counts: requests (default), a scenario's iterations, the"
        " requests of one name, its answers whose tally said VALUE, or the service's own"
        " counter of completed work, read each interval (e.g. prometheus:http://127.0.0.1:8000"
        '/metrics#taskqueue_tasks_finished_total{status="SUCCEEDED"}=tasks);'
        " '=LABEL' names the unit (tasks/s)",
    )
    f.add_argument(
        "--backlog",
        metavar="prometheus:URL#SERIES",
        help="a gauge of the work waiting (a queue's depth), read each interval: a step"
        " whose backlog keeps growing is not steady (e.g. prometheus:http://127.0.0.1:8000"
        '/metrics#taskqueue_tasks{status="QUEUED"})',
    )

    add_watch_flag(f, at_limit=True)


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
        from redline.service import monitor
    except ImportError as e:
        raise RedlineError(f"service monitoring is not available: {e}") from None
    if args.monitor_pid is not None:
        return monitor.ProcessMonitor(args.monitor_pid)
    if args.monitor_cmd is not None:
        return monitor.CommandMonitor(args.monitor_cmd)
    return monitor.PrometheusMonitor(args.monitor_prometheus, metrics=args.metric)


def cmd_find(args: argparse.Namespace) -> int:
    """cmd_find runs the search, prints the four answers and writes the outputs."""
    if args.vary or args.repeat is not None:
        from redline.cli.experiment import cmd_experiment

        return cmd_experiment(args)
    from redline.find import finder

    url, plan, scenario = args.url, None, None
    if args.url.endswith(".py"):
        from redline.cli.scenario import compile_file

        compiled = compile_file(args.url, args.var)
        url = args.host or compiled.host or ""
        if not url:
            raise ConfigError(f"{args.url}: no host: give --host URL or Scenario(host=...)")
        plan, scenario = compiled.plan, args.url
    warn_proxy(url, args.proxy, scenario=plan is not None)  # a warning; the route at the end
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
            live.name_methods(plan)
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
    if plan is None:
        say_through(url, args.proxy)
    print(finder.answers_text(result), file=summary_stream(args.json), flush=True)
    write_outputs(result, args.json, args.report, args.markdown)
    if live is not None:
        live.finish(result, _render_find)
        if live.stop_requested:
            print("redline: stopped from the web page", file=sys.stderr)
        live.close()
    failure = ((result.get("run") or {}).get("cluster") or {}).get("failure")
    if failure:
        # As `redline run`: the partial result is written, and the loss is one line, status 1.
        print(f"redline: error: {failure}", file=sys.stderr)
        return EXIT_LOST
    return 130 if result.get("interrupted") else 0


def _render_find(result: dict[str, Any]) -> str:
    """_render_find is the find report the live page links to at the end."""
    from redline.report.render import render_html

    return render_html(result)


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
    """cmd_demo runs :func:`redline.find.demo.demo`."""
    from redline.find.demo import demo

    return demo(quick=args.quick, live=not args.quiet)
