"""scenario: the command line of scenarios, ``redline run SCENARIO.py`` and ``redline
inspect SCENARIO.py`` (the work is :mod:`redline.scenario.running`'s, which
:meth:`redline.Scenario.run` calls too).

The run command compiles the file (every mistake is one ``FILE:LINE: message`` and exit
status 2, before any load), merges the command line's profile over the file's, runs the
plan in the engine, prints the engine's summary and the scenario's tables, writes
``--json``, and exits 1 with one line per failed threshold. ``parse_thresholds`` and
``judge`` serve URL runs too (``redline run URL --threshold ...``).

The scenario package is imported by the functions that use it, not here: ``redline run URL``
parses its arguments with this module loaded and must not pay for the compiler at start
(tests/test_startup.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from redline.cli.report import write_run_report
from redline.cli.run_flags import (
    add_interval_flag,
    add_load_flags,
    add_request_flags,
    add_threads_flag,
    run_options,
    shown_defaults,
)
from redline.errors import ConfigError
from redline.runs.proxy import warn_proxy

if TYPE_CHECKING:
    from redline.scenario.compiler import Compiled
    from redline.scenario.thresholds import Threshold
    from redline.scenario.watch import Watch

#: EXIT_THRESHOLD: the exit status when a threshold failed.
EXIT_THRESHOLD = 1


def is_scenario(target: str) -> bool:
    """is_scenario: whether ``redline run``'s argument names a scenario file."""
    return target.endswith(".py")


def parse_vars(pairs: list[str]) -> dict[str, str]:
    """parse_vars reads ``--var K=V`` options."""
    out = {}
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep or not key:
            raise ConfigError(f"--var: expected NAME=VALUE, got {p!r}")
        out[key] = value
    return out


def compile_file(path: str, var_pairs: list[str]) -> Compiled:
    """compile_file compiles a scenario file with the run variables given."""
    from redline.scenario.compiler import load

    return load(path, parse_vars(var_pairs))


def cmd_inspect(args: argparse.Namespace) -> int:
    """cmd_inspect prints the compiled plan and the run options it would use; without a host
    (no --host, none in the file) the plan is printed with ``"host": null``: the plan does
    not depend on it."""
    from redline.scenario.running import plan_only

    compiled = compile_file(args.scenario, args.var)
    plan, kw = plan_only(compiled, {})
    url = args.host or compiled.host
    # A CSV data set's text is the file itself: shown by its size, not printed whole.
    data = [
        {**d, "csv": f"<{len(d['csv'])} characters of CSV>"} if "csv" in d else d
        for d in plan.get("data", [])
    ]
    doc = {
        "host": url,
        "options": kw,
        "thresholds": compiled.thresholds,
        "plan": {**plan, "data": data},
    }
    print(json.dumps(doc, indent=2, default=str))
    return 0


def add_inspect_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """add_inspect_parser defines ``redline inspect``."""
    p = sub.add_parser("inspect", help="print the plan a scenario file compiles to")
    p.add_argument("scenario", metavar="SCENARIO.py")
    p.add_argument("--host", metavar="URL", help="the host the scenario runs against")
    p.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a run variable (repeatable)",
    )
    p.set_defaults(func=cmd_inspect)
    return p


def cmd_run_scenario(
    args: argparse.Namespace,
    progress: Any = None,
    on_result: Any = None,
    on_plan: Any = None,
    view: Any = None,
) -> int:
    """cmd_run_scenario runs ``redline run SCENARIO.py`` (``args`` from the run parser);
    ``on_plan`` hears the compiled plan before the load starts and ``on_result`` the result
    once its outputs are written (the live view); ``view`` (the progress view) learns the
    file's own duration, which only compiling it tells, so it can say which intervals come
    after the end."""
    from redline.cli.cluster import cluster_options, lost_exit, print_injectors
    from redline.errors import InjectorLost
    from redline.report.summary import render
    from redline.runs.options import parse_duration
    from redline.runs.runner import run
    from redline.scenario.running import run_watched
    from redline.scenario.table import render as render_tables
    from redline.view.progress import Goal, summary_stream

    compiled, url, opts = scenario_run(args)
    if view is not None and opts.get("duration") is not None and not args.duration:
        view.set_goal(Goal(seconds=parse_duration(opts["duration"])))
    if on_plan is not None:
        on_plan(compiled.plan)
    thresholds, watches = parse_thresholds([*args.threshold, *compiled.thresholds])
    cluster = cluster_options(args)
    aborted, lost = None, None
    try:
        if watches or cluster is not None:
            plan, parts = opts.pop("plan"), args.watch
            result, aborted = run_watched(url, plan, opts, watches, progress, cluster, parts)
        else:
            result = run(url, progress=progress, watch=args.watch, **opts)
    except InjectorLost as e:
        # The partial result is kept: printed and written like any other.
        result, lost = e.result, e
    if result.data.get("scenario") is not None:
        # The report names what ran (the engine knows the plan, not the file it came from).
        result.data["scenario"]["file"] = compiled.file
    summary = render(result).splitlines()
    if summary:
        summary[0] = f"Run @ {compiled.file} against {url}"
    out = summary_stream(args.json)
    print("\n".join(summary), file=out, flush=True)
    print(render_tables(result.data), file=out, flush=True)
    print_injectors(result.data)
    if args.json:
        result.write_json(args.json)
    write_run_report(getattr(args, "report", None), result.data)
    if on_result is not None:
        on_result(result)
    code = judge(thresholds, result, aborted, getattr(args, "junit", None))
    return lost_exit(lost) or code


def scenario_run(args: argparse.Namespace) -> tuple[Compiled, str, dict[str, Any]]:
    """scenario_run compiles ``redline run SCENARIO.py``'s file and returns it, the host
    URL and the options of :func:`redline.run` (``plan`` among them), the file's load shape
    with the command line's overrides; a flag that only a URL run takes is a ConfigError.
    The run options are read from their flags by name (:func:`.run_flags.run_options`): those
    a profile declares (:data:`~redline.scenario.running.PROFILED`) merge over the file's, the
    rest pass through."""
    from redline.scenario.running import PROFILED, URL_ONLY, prepare

    compiled = compile_file(args.url, args.var)
    flags = run_options(args)
    given = {key: getattr(flags, name) for name, key in PROFILED.items()}
    if getattr(args, "users", None) is not None:
        given["users"] = args.users  # -u, a scenario's spelling of -c
    given["iterations"] = getattr(args, "iterations", None)
    url, plan, options = prepare(compiled, args.host, given, flags, URL_ONLY.__getitem__)
    warn_proxy(url, flags.proxy, scenario=True)
    return compiled, url, {**options.as_kwargs(), "plan": plan}


def parse_thresholds(specs: list[str]) -> tuple[list[Threshold], list[Watch]]:
    """parse_thresholds: the thresholds judged at the end and the watches judged live
    (:func:`redline.scenario.running.parse_thresholds`); none given, nothing is imported."""
    if not specs:
        return [], []
    from redline.scenario.running import parse_thresholds as parse

    return parse(specs)


def judge(
    thresholds: list[Threshold], result: Any, aborted: str | None, junit: str | None = None
) -> int:
    """judge prints one ``redline: threshold ... failed`` line per failed threshold (the
    abort line first) and returns the exit status: 1 when any failed or the run was aborted,
    130 when the user interrupted it, else 0."""
    judged: list[tuple[bool, str]] = []
    if thresholds:
        from redline.scenario.thresholds import verdicts

        judged = verdicts(thresholds, result.data)
    failed = [line for held, line in judged if not held]
    if aborted:
        failed.insert(0, aborted)
    for line in failed:
        print(f"redline: {line}", file=sys.stderr)
    for line in (line for held, line in judged if held):
        print(f"redline: {line}", file=sys.stderr)
    if junit:
        from redline.report.junit import write_junit

        what = (result.data.get("scenario") or {}).get("file") or result.data.get("url", "")
        write_junit(junit, judged, aborted, result.data, str(what))
    if result.interrupted and not aborted:
        return 130
    return EXIT_THRESHOLD if failed else 0


def build_run_parser_args(argv: list[str]) -> argparse.Namespace:
    """build_run_parser_args parses ``SCENARIO.py`` and the scenario options of ``redline
    run`` without the whole parser (the tests of :func:`scenario_run`)."""
    from redline.runs.runner import defaults

    p = argparse.ArgumentParser(prog="redline-scenario")
    p.add_argument("url")
    p.add_argument("--host")
    p.add_argument("-u", "--users", type=int)
    p.add_argument("--iterations", type=int)
    # The run options' flags, as `redline run` has them (redline.cli.run_flags).
    shown = shown_defaults(defaults())
    add_load_flags(p, shown)
    add_threads_flag(p)
    add_interval_flag(p, shown)
    add_request_flags(p, shown)
    p.add_argument("--json")
    p.add_argument("-q", "--quiet", action="store_true")
    p.add_argument("--var", action="append", default=[])
    p.add_argument("--threshold", action="append", default=[])
    return p.parse_args(argv)
