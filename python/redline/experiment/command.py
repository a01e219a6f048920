"""command: ``redline find … --vary NAME=V1,V2 [--repeat N]``, an experiment from the command
line (``redline find`` hands over when ``--vary`` is given; the work is
:func:`redline.experiment.experiment`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from redline.errors import ConfigError
from redline.options import parse_duration


def cmd_experiment(args: argparse.Namespace) -> int:
    """cmd_experiment runs the experiment the ``redline find`` flags describe, prints each
    configuration's answers and then the table, and writes the files asked for."""
    from redline.experiment.runner import experiment
    from redline.experiment.tables import render_text, write_outputs
    from redline.find import answers_text
    from redline.find_flags import find_options
    from redline.find_view import FindView

    if not args.vary:
        raise ConfigError("--repeat goes with --vary (the configurations to repeat)")
    if args.monitor_cmd is None:
        raise ConfigError("--vary needs --monitor-cmd: the service to start per configuration")
    if args.monitor_pid is not None or args.monitor_prometheus is not None:
        raise ConfigError("--vary starts its service with --monitor-cmd: no other monitor")
    for flag, path in (
        ("--json", args.json),
        ("--report", args.report),
        ("--markdown", args.markdown),
    ):
        if path and not Path(path).resolve().parent.is_dir():
            raise ConfigError(
                f"{flag}: directory {str(Path(path).resolve().parent)!r} does not exist"
            )
    url, options = _target(args)
    max_time = parse_duration(args.max_time, "--max-time")
    max_step = parse_duration(args.max_step, "--max-step")
    options.update(find_options(args))
    views: list[Any] = []

    def on_start(c: Any, r: int, service: Any) -> None:
        run = f" run {r + 1}/{args.repeat}" if (args.repeat or 1) > 1 else ""
        print(f"== {c.label}{run}: {service.command}", file=sys.stderr, flush=True)
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
        doc = experiment(
            url,
            args.monitor_cmd,
            args.vary,
            repeat=1 if args.repeat is None else args.repeat,
            on_start=on_start,
            on_result=on_result,
            **options,
        )
    finally:
        _close(views)
    print()
    print(render_text(doc), end="", flush=True)
    write_outputs(doc, args.json, args.report, args.markdown)
    return 130 if doc["interrupted"] else 0


def _target(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """_target: the URL template, and for a scenario file its compiled plan (its host, a
    template too, from --host or the scenario)."""
    if not args.url.endswith(".py"):
        return args.url, {}
    from redline.scenario.command import compile_file

    compiled = compile_file(args.url, args.var)
    url = args.host or compiled.host or ""
    if not url:
        raise ConfigError(f"{args.url}: no host: give --host URL or Scenario(host=...)")
    return url, {"plan": compiled.plan, "scenario": args.url}


def _close(views: list[Any]) -> None:
    while views:
        views.pop().close()
