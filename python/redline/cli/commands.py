"""commands: the ``redline`` command. It parses arguments and calls the same functions a Python user
calls (:func:`redline.run`, :class:`redline.Target`); nothing here measures anything."""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from redline import __version__
from redline.cli.cluster import add_cluster_flags, cluster_options, lost_exit, print_injectors
from redline.cli.compare import add_compare_parser
from redline.cli.experiment import add_vary_flags
from redline.cli.find import add_demo_parser, add_find_parser
from redline.cli.live import add_live_flags, add_ui_parser, cmd_ui, open_session, url_name
from redline.cli.report import add_report_parser, write_run_report
from redline.cli.run_flags import (
    add_export_flags,
    add_interval_flag,
    add_load_flags,
    add_request_flags,
    add_threads_flag,
    run_options,
    shown_defaults,
)
from redline.cli.scenario import (
    add_inspect_parser,
    cmd_run_scenario,
    is_scenario,
    judge,
    parse_thresholds,
    run_watched,
)
from redline.cli.termination import Termination
from redline.errors import InjectorLost, RedlineError
from redline.report.summary import render
from redline.runs.nofile import raise_open_file_limit
from redline.runs.options import IgnoredOption, parse_duration, parse_stages
from redline.runs.runner import defaults, run
from redline.view.intervals import IntervalLog, parse_out, tee
from redline.view.progress import Goal, for_stream, summary_stream

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr and exit code 2, and whose
    options take a negative value as written (``-d -5s``: argparse reads ``-5s`` as an option
    and says only "expected one argument"; here the value reaches the check that says what
    is wrong with it)."""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        words = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(_negatives_joined(self, words), namespace)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


#: _NEGATIVE: a word that is a negative number, with a unit or not (-5, -5s, -0.5).
_NEGATIVE = re.compile(r"^-\.?\d")


def _negatives_joined(parser: argparse.ArgumentParser, words: list[str]) -> list[str]:
    """_negatives_joined writes each option's negative value into the option's word
    (``-d -5s`` -> ``--duration=-5s``), so argparse takes it as the value."""
    out: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        action = parser._option_string_actions.get(word)  # noqa: SLF001  (argparse's own table)
        takes_one = action is not None and action.nargs is None and action.option_strings
        if takes_one and i + 1 < len(words) and _NEGATIVE.match(words[i + 1]):
            out.append(f"{action.option_strings[-1]}={words[i + 1]}")  # type: ignore[union-attr]
            i += 2
            continue
        if word == "--":
            return out + words[i:]
        out.append(word)
        i += 1
    return out


def build_parser() -> argparse.ArgumentParser:
    """build_parser defines every subcommand and flag; each subcommand adds its own parser."""
    p = _Parser(prog="redline", description="HTTP load testing that tells the truth.")
    p.add_argument("--version", action="version", version=f"redline {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    add_run_parser(sub)
    add_target_parser(sub)
    add_report_parser(sub)
    add_find_parser(sub)
    add_demo_parser(sub)
    add_inspect_parser(sub)
    add_compare_parser(sub)
    add_ui_parser(sub).set_defaults(func=lambda args: cmd_ui(args, run_command))
    return p


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
  redline run --stages 10s:100,30s:100,10s:0 --json result.json http://127.0.0.1:8080/"""


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
        help="http://host:port/path or https://..., or a scenario file (docs/scenarios.md)",
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
    out.add_argument("-q", "--quiet", action="store_true", help="no live progress on stderr")
    add_live_flags(r)
    add_vary_flags(r, "run")
    add_cluster_flags(r)
    r.set_defaults(func=cmd_run)
    return r


def add_target_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """add_target_parser defines ``redline target``."""
    t = sub.add_parser(
        "target",
        help="serve redline's bundled test server until Ctrl-C",
        description=TARGET_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    t.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    t.add_argument(
        "--port", type=int, default=0, metavar="PORT", help="0 picks a free port (default)"
    )
    t.add_argument(
        "--threads", type=int, metavar="N", help="server threads (default: one per core)"
    )
    t.add_argument("--tls-cert", metavar="FILE", help="serve https with this PEM certificate")
    t.add_argument("--tls-key", metavar="FILE", help="the PEM private key of --tls-cert")
    probes = t.add_argument_group("probes (server-wide behaviour of known truth)")
    probes.add_argument(
        "--capacity",
        type=int,
        metavar="N",
        help="serve at most N requests at once, the rest queue (needs --service-time)",
    )
    probes.add_argument(
        "--service-time",
        metavar="DURATION",
        help="how long a request is served alone, e.g. 10ms (with --capacity: each slot is held "
        "this long, capacity = N / DURATION req/s; or with --contention)",
    )
    probes.add_argument(
        "--queue-limit",
        type=int,
        metavar="Q",
        help="with --capacity: a request that would wait when Q already wait gets 503 "
        "(Retry-After: 1) at once",
    )
    probes.add_argument(
        "--pause",
        metavar="D/P",
        help="with --capacity: serve nothing for the first D of every P, e.g. 50ms/1s",
    )
    probes.add_argument(
        "--contention",
        type=float,
        metavar="KAPPA",
        help="requests in service slow each other (USL crosstalk KAPPA, e.g. 0.01; needs "
        "--service-time; not with --capacity)",
    )
    probes.add_argument(
        "--serial",
        type=float,
        metavar="SIGMA",
        help="with --contention: the serialised share SIGMA (default 0)",
    )
    probes.add_argument(
        "--rate-limit",
        type=float,
        metavar="R",
        help="a token bucket in front: R requests a second pass, the rest are refused",
    )
    probes.add_argument(
        "--burst", type=int, metavar="B", help="with --rate-limit: the bucket's size (default 1)"
    )
    probes.add_argument(
        "--refuse-status",
        type=int,
        metavar="STATUS",
        help="with --rate-limit: the status of refused requests (default 503; 429 is common)",
    )
    probes.add_argument(
        "--fail-every",
        type=int,
        metavar="N",
        help="the task app fails every N-th fresh task (status FAILED); X-Retry-Of: ID "
        "resubmits a failed one",
    )
    t.set_defaults(func=cmd_target)
    return t


#: TARGET_HELP: ``redline target --help``'s description, each probe with its truth.
TARGET_HELP = """Serve redline's bundled test server until Ctrl-C. Behaviour is per request, by
query parameters on any path (combine them: /x?size=1024&latency=20ms); /__stats counts what it
saw.

Query knobs (unknown ones are ignored, bad values are a 400):
  latency=20ms                     answer after a fixed time (us, ms, s)
  latency=uniform:5ms..50ms        ... uniform between two times
  latency=exp:20ms                 ... exponential with that mean
  latency=lognormal:20ms:0.5       ... lognormal with that median and sigma
  size=1024                        a body of N filler bytes (default: "ok")
  chunked=1                        send the body chunked
  status=500&p=0.1                 answer 500 to a share p of requests (p=1 when left out)
  p503=0.1&p429=0.05               several statuses at once, each with its share
  stall=1s/5s                      hold every answer in the first 1 s of each 5 s window
  close=1                          answer with Connection: close, then close
  hang=1                           never answer (the connection stays open)
  reset=0.1                        abort a share of connections with a TCP RST instead
Paths: /api/work (a flaky upstream: lognormal latency, random 500 and 429), /form and
/thanks (a survey form with a session cookie), /tasks/... (a task queue's API).

Probes: server-wide behaviour whose truth is known (N slots, S service time, load L req/s):
  --capacity N --service-time S    at most N in service, each for exactly S, the rest wait
                                   (FIFO): throughput N/S under overload, C/S with C < N clients
  ... --queue-limit Q              load shedding: beyond Q waiting, 503 + Retry-After: 1 at once;
                                   accepted stays N/S, refused share 1 - (N/S)/L
  ... --pause D/P                  noise: no service starts or completes in the first D of every
                                   P (in-progress ones resume after): capacity N/S x (1 - D/P)
  --contention K [--serial s] --service-time S
                                   USL: with n in service each takes S x f(n),
                                   f(n) = 1 + s(n-1) + K n(n-1) (processor sharing, exact);
                                   N users get N / (S f(N)), peak at N* = sqrt((1-s)/K), falling
                                   beyond; best power X^2/N at the root of 3KN^2 + (s-K)N - (1-s).
                                   S=10ms K=0.01: 526 req/s at 10 users, power best at ~6.
                                   Open model past the peak: collapse (n grows, throughput falls),
                                   and it stays collapsed when the load drops back (metastable)
  --rate-limit R [--burst B] [--refuse-status 429]
                                   token bucket in front of any of the above (or of the plain
                                   immediate answer): accepted rate R (at most B + R x W in any
                                   window W), the rest 503 (or STATUS) with Retry-After
  --fail-every N                   the task app fails every N-th fresh task (FAILED); a POST with
                                   X-Retry-Of: ID of a failed task is a resubmission
/__stats: queue_* (capacity), queue_refused, contention_busy/peak/served, rate_accepted/refused,
tasks_succeeded/failed/resubmitted.
"""


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
    scenario = is_scenario(args.url)
    model = "open" if args.rate is not None or args.open else "closed"
    name = "all" if scenario else url_name(args.url, args.method)
    live = open_session(
        args,
        "run",
        f"redline run {args.url}",
        model,
        name,
        target=args.host if scenario else args.url,
        method=None if scenario else (args.method or "GET"),
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


def run_command(argv: list[str], live: Any) -> int:
    """run_command runs ``redline run ARGV`` watched by ``live`` (the runs ``redline ui``
    starts: the command line it shows is the one parsed here)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit:
        raise RedlineError(f"redline {' '.join(argv)}: refused (the reason is on stderr)") from None
    return cmd_run(args, live)


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
                result, aborted = run_watched(args.url, None, opts, watches, progress, cluster)
            else:
                result = run(args.url, progress=progress, **opts)  # type: ignore[arg-type]
        except InjectorLost as e:
            # The partial result is kept: printed and written like any other.
            result, lost = e.result, e
        finally:
            if view is not None:
                view.close()
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


def cmd_target(args: argparse.Namespace) -> int:
    """cmd_target serves the target server until SIGINT or SIGTERM."""
    from redline.runs.target import Target

    if not 0 <= args.port <= 65535:
        raise RedlineError(f"--port: must be 0..65535, got {args.port}")
    # A plain flag, not a threading.Event: Event.set takes a lock that the main thread may
    # hold inside Event.wait when the handler runs there, and the process then hangs until
    # its supervisor's SIGKILL (a target lost its "served" line that way).
    stop: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    if (args.tls_cert is None) != (args.tls_key is None):
        raise RedlineError("--tls-cert and --tls-key go together")
    _check_probe_flags(args)
    with Target(
        args.host,
        args.port,
        args.threads,
        args.tls_cert,
        args.tls_key,
        capacity=args.capacity,
        service_time=args.service_time,
        queue_limit=args.queue_limit,
        pause=args.pause,
        contention=args.contention,
        serial=args.serial,
        rate_limit=args.rate_limit,
        burst=args.burst,
        refuse_status=args.refuse_status,
        fail_every=args.fail_every,
    ) as target:
        print(f"listening on {target.url}", flush=True)
        try:
            while not stop:
                time.sleep(0.2)  # the handler runs in it; the flag is read each 0.2 s
        except KeyboardInterrupt:
            pass
        stats = target.stats()
        # Said before the server shuts down: a supervisor that gives up waiting for the
        # shutdown (SIGKILL after its grace) must not lose the count.
        print(
            f"served {stats['requests']} requests on {stats['connections']} connections",
            flush=True,
        )
    return 0


def _check_probe_flags(args: argparse.Namespace) -> None:
    """_check_probe_flags refuses, in the flags' own spelling, a probe flag given without the
    mode it belongs to (the server checks the values)."""
    if args.service_time is not None and args.capacity is None and args.contention is None:
        raise RedlineError("--service-time needs --capacity or --contention")
    if args.capacity is not None and args.contention is not None:
        raise RedlineError("--capacity and --contention are different probes: choose one")
    needs = (
        ("--capacity", args.capacity, "--service-time", args.service_time),
        ("--contention", args.contention, "--service-time", args.service_time),
        ("--queue-limit", args.queue_limit, "--capacity", args.capacity),
        ("--pause", args.pause, "--capacity", args.capacity),
        ("--serial", args.serial, "--contention", args.contention),
        ("--burst", args.burst, "--rate-limit", args.rate_limit),
        ("--refuse-status", args.refuse_status, "--rate-limit", args.rate_limit),
    )
    for flag, value, needed, present in needs:
        if value is not None and present is None:
            if (flag, needed) == ("--capacity", "--service-time"):
                raise RedlineError("--capacity and --service-time go together")
            raise RedlineError(f"{flag} needs {needed}")


def main(argv: list[str] | None = None) -> int:
    """main is the console entry point; user errors become one line and exit code 2, and a
    SIGTERM ends the command as Ctrl-C does, then exits 143 (:mod:`.termination`)."""
    args = build_parser().parse_args(argv)
    raise_open_file_limit()  # the connections -c asks for, as far as the hard limit allows
    with Termination() as term:
        try:
            return term.status(int(args.func(args)))
        except RedlineError as e:
            print(f"redline: error: {e}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt:
            print("redline: " + ("terminated" if term.received else "interrupted"), file=sys.stderr)
            return term.status(130)
        except BrokenPipeError:
            # Whoever read the output went away (`redline ... | head`, a supervisor that closed
            # the pipe): nothing more can be said there. Point stdout at /dev/null so that the
            # interpreter's last flush does not fail again on the way out.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 1


if __name__ == "__main__":
    sys.exit(main())
