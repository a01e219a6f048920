"""run: ``redline run URL`` (and the scenario runs it hands to :mod:`.scenario`). It parses
arguments and calls the same functions a Python user calls (:func:`redline.run`); nothing here
measures anything."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from redline.cli.cluster import add_cluster_flags, cluster_options, lost_exit, print_injectors
from redline.cli.experiment import add_vary_flags
from redline.cli.live import add_live_flags, open_session, url_name
from redline.cli.report import write_run_report
from redline.cli.run_flags import (
    add_export_flags,
    add_interval_flag,
    add_load_flags,
    add_request_flags,
    add_threads_flag,
    add_watch_flag,
    run_options,
    shown_defaults,
)
from redline.cli.scenario import cmd_run_scenario, is_scenario, judge, parse_thresholds
from redline.cli.sockets import add_socket_flags, cmd_run_socket, is_socket, refuse_socket_flags
from redline.errors import InjectorLost, RedlineError
from redline.report.summary import render
from redline.runs.grpc import is_grpc
from redline.runs.options import IgnoredOption, parse_duration, parse_stages
from redline.runs.proxy import say_through
from redline.runs.runner import defaults, run
from redline.view.intervals import IntervalLog, parse_out, tee
from redline.view.progress import Goal, for_stream, summary_stream

RUN_DESCRIPTION = """\
Generate HTTP load against URL and print a wrk-style summary.

Closed model (default): each of -c connections sends its next request when its last one is
answered. Open model (--rate, or --stages with --open): requests go out on a fixed schedule
whatever the server does, and latency is measured from when each request was due, so a
stalling server shows in the percentiles (no coordinated omission).
The engine validates every option; a bad one is a one-line error and exit status 2."""

RUN_EXAMPLES = """\
examples:
  redline run -c 50 -d 30s http://127.0.0.1:8080/
  redline run --rate 2000 -d 1m --max-connections 200 http://127.0.0.1:8080/api
  redline run --stages 10s:100,30s:100,10s:0 --json result.json http://127.0.0.1:8080/
  redline run --rate 100 grpc://127.0.0.1:50051/pkg.Service/Method --proto svc.proto --data '{}'"""


def add_run_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """add_run_parser defines ``redline run``; the defaults it shows are the engine's. The run
    options' flags are :mod:`redline.cli.run_flags`' (``redline find`` takes them too)."""
    shown = shown_defaults(defaults())
    r = sub.add_parser(
        "run",
        help="generate load against a URL and print a summary (wrk-style)",
        description=RUN_DESCRIPTION,
        epilog=RUN_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument(
        "url",
        metavar="URL|SCENARIO.py",
        help="http://host:port/path or https://..., ws://..., grpc://host:port/package.Service/"
        "Method or grpcs://... (docs/protocols.md), or a scenario file (docs/scenarios.md)",
    )
    scen = r.add_argument_group("scenario (when the argument is a SCENARIO.py)")
    scen.add_argument("--host", metavar="URL", help="the host the scenario runs against")
    scen.add_argument(
        "-u", "--users", type=int, metavar="N", help="virtual users (same as -c for a scenario)"
    )
    scen.add_argument(
        "--iterations", type=int, metavar="N", help="each virtual user stops after N iterations"
    )
    scen.add_argument(
        "--var", action="append", default=[], metavar="NAME=VALUE", help="a run variable"
    )
    gate = r.add_argument_group("pass/fail (URL runs and scenarios)")
    gate.add_argument(
        "--threshold",
        action="append",
        default=[],
        metavar="SPEC",
        help="fail (exit 1) unless it holds: p99<500ms, errors<1%%, rps>100, NAME:p95<300ms "
        "(scenarios); add ;abort=10s to stop the run once the last 10 s fail it (repeatable)",
    )
    load = r.add_argument_group("load model")
    add_load_flags(load, shown)
    add_threads_flag(load)
    add_request_flags(r, shown)
    add_socket_flags(r)
    out = r.add_argument_group("output")
    out.add_argument(
        "--json",
        metavar="FILE",
        help="write the full result as JSON (-: to stdout, and the summary to stderr)",
    )
    out.add_argument(
        "--report", metavar="FILE.html", help="write a self-contained HTML report (opens offline)"
    )
    add_interval_flag(out, shown)
    add_export_flags(out)
    add_watch_flag(r.add_argument_group("the deployment (watched beside the load)"))
    out.add_argument("-q", "--quiet", action="store_true", help="no live progress on stderr")
    add_live_flags(r)
    add_vary_flags(r, "run")
    add_cluster_flags(r)
    r.set_defaults(func=cmd_run)
    return r


#: The CLI's spelling of each run option named in a warning.
FLAGS = {
    "connections": "-c/--connections",
    "max_connections": "--max-connections",
    "rate": "--rate",
    "cacert": "--cacert",
    "insecure": "-k/--insecure",
}


def spell_flag(name: str) -> str:
    """spell_flag is a run option's flag as a warning names it: its entry in :data:`FLAGS`,
    else ``--`` and the name with dashes (``send_ahead`` -> ``--send-ahead``)."""
    return FLAGS.get(name, "--" + name.replace("_", "-"))


def cmd_run(args: argparse.Namespace, live: Any = None) -> int:
    """cmd_run runs one load test, prints the summary and writes --json and --report; with
    --web/--prometheus it is watched live (and the endpoints linger after it). ``live``: a
    session the caller owns (``redline ui``'s), instead of one the flags ask for. With --vary
    it is an experiment (:mod:`redline.cli.experiment`)."""
    if args.vary or args.repeat is not None or args.monitor_cmd is not None:
        from redline.cli.experiment import cmd_run_experiment

        for flag, given in (("--out", args.out), ("--junit", args.junit)):
            if given is not None:
                raise RedlineError(f"{flag} goes with a single run, not an experiment")

        return cmd_run_experiment(args)
    if args.markdown:
        raise RedlineError("--markdown goes with --vary (a run's report is --report or --json)")
    for flag, path in (("--json", args.json), ("--report", args.report)):
        parent = Path(path).resolve().parent if path else None
        if parent is not None and not parent.is_dir():
            raise RedlineError(f"{flag}: directory {str(parent)!r} does not exist")
    if live is not None:
        return _run(args, live)
    if is_socket(args.url):
        return cmd_run_socket(args)
    refuse_socket_flags(args)
    scenario = is_scenario(args.url)
    model = "open" if args.rate is not None or args.open else "closed"
    method = "POST" if is_grpc(args.url) else args.method  # a gRPC call is a POST
    name = "all" if scenario else url_name(args.url, method)
    live = open_session(
        args,
        "run",
        f"redline run {args.url}",
        model,
        name,
        target=args.host if scenario else args.url,
        method=None if scenario else (method or "GET"),
    )
    try:
        code = _run(args, live)
    except BaseException:
        if live is not None:
            live.close(linger=False)
        raise
    if live is not None:
        if live.stop_requested:
            print("redline: stopped from the web page", file=sys.stderr)
        live.close()
    return code


def _run(args: argparse.Namespace, live: Any) -> int:
    """_run is ``redline run`` proper (``live``: the session, or None), with ``--out``'s
    interval log open over it."""
    if args.out is not None and parse_out(args.out) == "-" and args.json == "-":
        raise RedlineError("--out json=- and --json - would both write to stdout: choose one")
    log = IntervalLog(parse_out(args.out)) if args.out is not None else None
    try:
        return _run_logged(args, live, log)
    finally:
        if log is not None:
            log.close()


def _run_logged(args: argparse.Namespace, live: Any, log: IntervalLog | None) -> int:
    """_run_logged runs the URL or the scenario, each interval to ``log`` too."""
    cluster = cluster_options(args)
    warn_threads(args.threads)
    if is_scenario(args.url):
        goal = run_goal(args) if args.duration or args.stages else Goal()
        view = None if args.quiet else for_stream(sys.stderr, goal)
        try:
            if live is None:
                return cmd_run_scenario(args, tee(view, log), view=view)
            return cmd_run_scenario(
                args,
                tee(live.progress(view), log),
                view=view,
                on_result=_finisher(live),
                on_plan=live.name_methods,
            )
        finally:
            if view is not None:
                view.close()
    for flag, value in SCENARIO_ONLY:
        if getattr(args, value):
            raise RedlineError(
                f"{flag} is a scenario's option (redline run SCENARIO.py); a URL run "
                + ("has -c/--connections" if value == "users" else "ignores it")
            )
    thresholds, watches = parse_thresholds(args.threshold)
    for t in thresholds:
        if t.name is not None:
            raise RedlineError(
                f"threshold {t.text!r}: a URL run has no request names (NAME: is for scenarios)"
            )
    options = run_options(args)
    for note in options.ignored(args.url, spell=spell_flag):
        print(f"redline: warning: {note}", file=sys.stderr)
    view = None if args.quiet else for_stream(sys.stderr, run_goal(args))
    progress = tee(view if live is None else live.progress(view), log)
    with warnings.catch_warnings():
        # Said above in the CLI's own spelling.
        warnings.simplefilter("ignore", IgnoredOption)
        opts = options.as_kwargs()
        aborted, lost = None, None
        try:
            if watches or cluster is not None:
                from redline.scenario.running import run_watched

                result, aborted = run_watched(
                    args.url, None, opts, watches, progress, cluster, args.watch
                )
            else:
                result = run(args.url, progress=progress, watch=args.watch, **opts)  # type: ignore[arg-type]
        except InjectorLost as e:
            # The partial result is kept: printed and written like any other.
            result, lost = e.result, e
        finally:
            if view is not None:
                view.close()
    say_through(args.url, options.proxy)  # after the run: a proxy that refused is one line
    print(render(result), file=summary_stream(args.json), flush=True)
    print_injectors(result.data)
    if args.json:
        result.write_json(args.json)
    write_run_report(args.report, result.data)
    if live is not None:
        _finisher(live)(result)
    code = judge(thresholds, result, aborted, args.junit)
    return lost_exit(lost) or code


#: SCENARIO_ONLY: the flags only a scenario takes, as (flag, argument name).
SCENARIO_ONLY = (
    ("-u/--users", "users"),
    ("--iterations", "iterations"),
    ("--var", "var"),
    ("--host", "host"),
)


def warn_threads(threads: int | None) -> None:
    """warn_threads warns of ``-t`` beyond this machine's cores: the threads beyond them take
    turns on the cores, costing CPU and adding no load (the engine also uses no more threads
    than connections)."""
    cores = os.cpu_count() or 1
    if threads is not None and threads > cores:
        print(
            f"redline: warning: -t/--threads {threads} is more than this machine's {cores} "
            "cores: the threads beyond them take turns on the cores and cost CPU without adding "
            "load (and at most one thread per connection is used)",
            file=sys.stderr,
        )


def _finisher(live: Any) -> Callable[[Any], None]:
    """_finisher tells the live session the run's result (its report linked from the page,
    rendered when first asked for)."""

    def render(data: dict[str, Any]) -> str:
        from redline.report.render import render_run_html

        return render_run_html(data)

    return lambda result: live.finish(result.data, render)


def run_goal(args: argparse.Namespace) -> Goal:
    """run_goal: where the live view's progress bar ends (the engine's default duration when
    no limit is given)."""
    if args.requests:
        return Goal(requests=args.requests)
    if args.stages:
        return Goal(seconds=sum(s.duration_s for s in parse_stages(args.stages)))
    if args.duration:
        return Goal(seconds=parse_duration(args.duration, "duration"))
    return Goal(seconds=float(defaults()["duration_s"]))
