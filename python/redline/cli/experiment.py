"""experiment: experiments from the command line: ``redline find … --vary NAME=V1,V2 [--repeat
N]`` and ``redline run … --vary NAME=V1,V2 [--repeat N]`` (each command hands over when
``--vary`` is given; the work is :func:`redline.experiment`, ``measure="find"`` or
``"run"``). The experiment flags are defined here, once, for
both commands (:func:`add_vary_flags`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from redline.errors import ConfigError
from redline.runs.options import parse_duration


def add_vary_flags(parser: argparse.ArgumentParser, verb: str) -> None:
    """add_vary_flags defines ``--monitor-cmd``, ``--vary``, ``--repeat`` and ``--markdown``
    on ``redline find`` (``verb="find"``: each configuration searched) or ``redline run``
    (``verb="run"``: each configuration run at the given load)."""
    group = parser.add_argument_group("experiment: several service configurations (--vary)")
    what = "search" if verb == "find" else "run"
    group.add_argument(
        "--monitor-cmd",
        metavar="CMD",
        help="start this command, watch it, stop it at the end; with --vary, once per"
        " configuration, its {NAME}, {port} and {dir} filled"
        if verb == "find"
        else "with --vary: the service to start fresh for each configuration ({NAME},"
        " {port}, {dir} filled) and stop after its run",
    )
    group.add_argument(
        "--vary",
        action="append",
        default=[],
        metavar="NAME=V1,V2",
        help=f"an experiment: {what} the --monitor-cmd service once per value of its {{NAME}}"
        " placeholder (repeatable: every combination), fresh each time ({port}: a free port,"
        " in the command and the URL; {dir}: an empty directory), and compare the results;"
        " @FILE.toml reads the experiment from a file ([vary], monitor_cmd, repeat)",
    )
    group.add_argument(
        "--repeat", type=int, metavar="N", help=f"with --vary: {what} each configuration N times"
    )
    group.add_argument(
        "--markdown",
        metavar="FILE.md",
        help="write the Markdown report"
        if verb == "find"
        else "with --vary: write the Markdown report",
    )


def cmd_run_experiment(args: argparse.Namespace) -> int:
    """cmd_run_experiment runs the experiment ``redline run … --vary`` describes: each
    configuration's service run at the load the flags give (a URL, or a scenario file with
    its --host a template), each run's summary printed as it ends, then the table; writes
    the files asked for."""
    from redline.experiment.plan_file import merge_plan
    from redline.experiment.result import experiment
    from redline.experiment.tables import write_outputs
    from redline.report.summary import render

    merge_plan(args)
    if not args.vary:
        raise ConfigError(
            "--monitor-cmd and --repeat go with --vary on redline run (the configurations)"
        )
    if args.monitor_cmd is None:
        raise ConfigError("--vary needs --monitor-cmd: the service to start per configuration")
    for flag, given in (
        ("--threshold", args.threshold),
        ("--web", args.web),
        ("--prometheus", args.prometheus),
    ):
        if given:
            raise ConfigError(
                f"{flag} does not go with --vary (an experiment is judged by compare)"
            )
    if getattr(args, "cluster", None):
        raise ConfigError(
            "--cluster does not go with --vary on redline run yet: run each configuration"
            " with --cluster, then redline compare"
        )
    _check_outputs(args)
    url, options = _run_target(args)
    options["watch"] = getattr(args, "watch", None) or ()
    start_line = _announcer(args.repeat)

    def on_result(c: Any, r: int, result: dict[str, Any]) -> None:
        from redline.runs.result import Result

        print(f"== {c.label}", flush=True)
        print(render(Result(result)), flush=True)

    result = experiment(
        url,
        args.monitor_cmd,
        args.vary,
        measure="run",
        repeat=1 if args.repeat is None else args.repeat,
        on_start=start_line,
        on_result=on_result,
        **options,
    )
    print()
    print(result.text(), end="", flush=True)
    write_outputs(result.document, args.json, args.report, args.markdown)
    return 130 if result.interrupted else 0


def _run_target(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """_run_target: the URL template and :func:`redline.run`'s options, of a URL run or of a
    scenario file (its host, a template too, from --host or the scenario)."""
    from redline.cli.run_flags import run_options
    from redline.cli.scenario import is_scenario, scenario_run

    if is_scenario(args.url):
        _, url, options = scenario_run(args)
        return url, options
    return args.url, run_options(args).as_kwargs()


def _announcer(repeat: int | None) -> Any:
    """_announcer: the on_start callback that says on stderr which service starts."""

    def on_start(c: Any, r: int, service: Any) -> None:
        run = f" run {r + 1}/{repeat}" if (repeat or 1) > 1 else ""
        print(f"== {c.label}{run}: {service.command}", file=sys.stderr, flush=True)

    return on_start


def _check_outputs(args: argparse.Namespace) -> None:
    for flag, path in (
        ("--json", args.json),
        ("--report", args.report),
        ("--markdown", args.markdown),
    ):
        if path and not Path(path).resolve().parent.is_dir():
            raise ConfigError(
                f"{flag}: directory {str(Path(path).resolve().parent)!r} does not exist"
            )


def cmd_experiment(args: argparse.Namespace) -> int:
    """cmd_experiment runs the experiment the ``redline find`` flags describe, prints each
    configuration's answers and then the table, and writes the files asked for."""
    from redline.cli.find_flags import find_options
    from redline.experiment.plan_file import merge_plan
    from redline.experiment.result import experiment
    from redline.experiment.tables import write_outputs
    from redline.find import answers_text
    from redline.find.view import FindView

    merge_plan(args)
    if not args.vary:
        raise ConfigError("--repeat goes with --vary (the configurations to repeat)")
    if args.monitor_cmd is None:
        raise ConfigError("--vary needs --monitor-cmd: the service to start per configuration")
    if args.monitor_pid is not None or args.monitor_prometheus is not None:
        raise ConfigError("--vary starts its service with --monitor-cmd: no other monitor")
    _check_outputs(args)
    url, options = _target(args)
    max_time = parse_duration(args.max_time, "--max-time")
    max_step = parse_duration(args.max_step, "--max-step")
    options.update(find_options(args))
    views: list[Any] = []

    announce = _announcer(args.repeat)

    def on_start(c: Any, r: int, service: Any) -> None:
        announce(c, r, service)
        if not args.quiet:
            views.append(FindView(max_time, max_step, monitor=service.monitor))

    def on_result(c: Any, r: int, result: dict[str, Any]) -> None:
        _close(views)
        print(f"== {c.label}", flush=True)
        print(answers_text(result), flush=True)

    if not args.quiet:
        options["on_snapshot"] = lambda s, load, phase: views and views[-1].snapshot(s, load, phase)
        options["on_step"] = lambda st: views and views[-1].step(st)
    try:
        result = experiment(
            url,
            args.monitor_cmd,
            args.vary,
            measure="find",
            repeat=1 if args.repeat is None else args.repeat,
            on_start=on_start,
            on_result=on_result,
            **options,
        )
    finally:
        _close(views)
    print()
    print(result.text(), end="", flush=True)
    write_outputs(result.document, args.json, args.report, args.markdown)
    return 130 if result.interrupted else 0


def _target(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """_target: the URL template, and for a scenario file its compiled plan (its host, a
    template too, from --host or the scenario)."""
    if not args.url.endswith(".py"):
        return args.url, {}
    from redline.cli.scenario import compile_file

    compiled = compile_file(args.url, args.var)
    url = args.host or compiled.host or ""
    if not url:
        raise ConfigError(f"{args.url}: no host: give --host URL or Scenario(host=...)")
    return url, {"plan": compiled.plan, "scenario": args.url}


def _close(views: list[Any]) -> None:
    while views:
        views.pop().close()
