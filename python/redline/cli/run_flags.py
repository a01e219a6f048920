"""run_flags: the command-line flags of :class:`~redline.runs.run_options.RunOptions`, each defined
once, for ``redline run`` and ``redline find`` (dest = the field's name, or its alias in
:data:`FLAG_DESTS`, so :func:`run_options` reads them back).

They come in two sets. The **load shape** (:data:`~redline.runs.run_options.LOAD_SHAPE`: how much
load, for how long) is ``redline run``'s to give; a search sets it itself, step by step. **The
rest** (the worker threads, the request and its timeout, https, the protocol, the reporting
interval) every command that sends load takes alike. Adding a run option: its field in
``RunOptions``, the engine's config field, and its flag here (in :func:`add_load_flags` if it
shapes the load, and its name in ``LOAD_SHAPE``; else in :func:`add_request_flags` or beside
it), which gives it to ``redline find`` too (``tests/test_options.py`` checks both commands).
The module imports only the run options (the library, ``redline.find``, reads ``LOAD_SHAPE``
from them, never from the command line).

The defaults a help text shows are given by field name as the user would type them
(:func:`shown_defaults`: the engine's), so a command whose own defaults differ
(``redline find``'s, :data:`redline.find.plan.SEARCH_DEFAULTS`) shows its own.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from redline.runs.run_options import RunOptions

#: FLAG_DESTS: the options whose command-line flag stores under another name
#: (``--open``, ``-H/--header``).
FLAG_DESTS = {"open_model": "open", "headers": "header"}


def run_options(args: argparse.Namespace) -> RunOptions:
    """run_options reads the run options from parsed command-line flags, each by its field's
    name (or its alias in :data:`FLAG_DESTS`); a flag the parser does not have, or one not
    given (None), keeps the field's default."""
    given = {}
    for f in fields(RunOptions):
        value = getattr(args, FLAG_DESTS.get(f.name, f.name), None)
        if value is not None:
            given[f.name] = value
    return RunOptions(**given)


#: Parser: what takes flags (a parser, or one of its argument groups).
Parser = argparse.ArgumentParser | argparse._ArgumentGroup


def secs(seconds: float) -> str:
    """secs renders a default duration the way a user would type it (10s, 50ms, 200us)."""
    if seconds and seconds < 1e-3:
        return f"{seconds * 1e6:g}us"
    if seconds and seconds < 1:
        return f"{seconds * 1000:g}ms"
    return f"{seconds:g}s"


def shown_defaults(engine: Mapping[str, Any]) -> dict[str, str]:
    """shown_defaults: the engine's defaults (:func:`redline.runs.runner.defaults`, by the engine's
    field names) as the flags' help shows them, by run option name (``min_interval``: the
    shortest reporting interval the engine takes)."""
    return {
        "connections": str(engine["connections"]),
        "max_connections": str(engine["max_connections"]),
        "duration": secs(engine["duration_s"]),
        "warmup": secs(engine["warmup_s"]),
        "method": str(engine["method"]),
        "timeout": secs(engine["timeout_s"]),
        "interval": secs(engine["interval_s"]),
        "min_interval": secs(engine["min_interval_s"]),
        "send_ahead": secs(engine["send_ahead_s"]),
        "max_send_ahead": secs(engine["max_send_ahead_s"]),
    }


def add_load_flags(load: Parser, shown: Mapping[str, str]) -> None:
    """add_load_flags adds the load shape's flags (:data:`~redline.runs.run_options.LOAD_SHAPE`)
    to ``load``."""
    load.add_argument(
        "-c",
        "--connections",
        type=int,
        metavar="N",
        help=f"closed model: connections, one virtual user each (default: {shown['connections']})",
    )
    load.add_argument("--rate", type=float, metavar="REQ/S", help="open model: requests per second")
    load.add_argument(
        "--stages",
        metavar="DURATION:TARGET,...",
        help="ramp linearly through targets, e.g. 10s:100,30s:100,10s:0 (VUs; req/s with --open)",
    )
    load.add_argument("--open", action="store_true", help="--stages targets are req/s (open model)")
    load.add_argument(
        "--max-connections",
        type=int,
        metavar="N",
        help=f"open model: connection pool cap (default: {shown['max_connections']})",
    )
    load.add_argument(
        "-d",
        "--duration",
        metavar="DURATION",
        help=f"how long to run, e.g. 15s, 2m, 2m30s (default: {shown['duration']} unless -n or "
        "--stages)",
    )
    load.add_argument(
        "-n", "--requests", type=int, metavar="N", help="stop after N requests instead"
    )
    load.add_argument(
        "--warmup",
        metavar="DURATION",
        help=f"left out of the summary (default: {shown['warmup']})",
    )


def add_threads_flag(group: Parser) -> None:
    """add_threads_flag adds ``-t/--threads`` (the engine's worker threads)."""
    group.add_argument(
        "-t", "--threads", type=int, metavar="N", help="worker threads (default: one per core)"
    )


def add_request_flags(parser: argparse.ArgumentParser, shown: Mapping[str, str]) -> None:
    """add_request_flags adds the groups of what each request is and how it goes out: the
    request (method, headers, body, timeout), https (trust), the protocol (HTTP/2,
    streams) and the open model's sending (the send-ahead window)."""
    req = parser.add_argument_group("request")
    req.add_argument(
        "-m", "--method", metavar="METHOD", help=f"HTTP method (default: {shown['method']})"
    )
    req.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="extra request header (repeatable)",
    )
    req.add_argument("--body", metavar="TEXT|@FILE", help="request body: text, or @file to read")
    req.add_argument(
        "--proxy",
        metavar="URL",
        help="go through this forward proxy, http://[USER:PASS@]HOST:PORT (https by CONNECT);"
        " default: HTTP_PROXY/HTTPS_PROXY unless NO_PROXY or loopback; '' for none",
    )
    req.add_argument(
        "--timeout",
        metavar="DURATION",
        help=f"per-request timeout (default: {shown['timeout']})",
    )
    tls = parser.add_argument_group("https")
    tls.add_argument("--cacert", metavar="FILE", help="also trust the CAs in this PEM file")
    tls.add_argument("-k", "--insecure", action="store_true", help="skip certificate verification")
    proto = parser.add_argument_group("protocol")
    version = proto.add_mutually_exclusive_group()
    version.add_argument(
        "--http2",
        dest="http2",
        action="store_const",
        const=True,
        help="speak HTTP/2 (h2c with prior knowledge for http://; default: https lets the "
        "server choose by ALPN, http is HTTP/1.1)",
    )
    version.add_argument(
        "--http1", dest="http2", action="store_const", const=False, help="speak HTTP/1.1"
    )
    proto.add_argument(
        "--streams",
        type=int,
        metavar="N",
        help="HTTP/2 requests in flight per connection (h2load's -m; default 1): "
        "connections × streams VUs",
    )
    proto.add_argument(
        "--stream",
        action="store_true",
        default=None,
        help="time each response as it arrives: time to first byte, gaps between chunks or "
        "server-sent events, events counted (HTTP/1.1; docs/protocols.md)",
    )
    add_grpc_flags(parser)
    sending = parser.add_argument_group("sending (open model)")
    sending.add_argument(
        "--send-ahead",
        metavar="DURATION",
        help="a hit due within this of one being sent goes out with it: fewer wake-ups, "
        f"arrivals in bursts (default: {shown['send_ahead']}, at most {shown['max_send_ahead']}; "
        "0: each hit at its own time)",
    )
    sending.add_argument(
        "--latency-from",
        choices=("sent", "intended"),
        help="where latency starts: 'sent' (default) is the wait for a free connection plus "
        "the server's time from the request leaving (the kernel's transmit stamp), free of "
        "the generator's own lag, which the summary shows apart; 'intended' times from the "
        "intended send, lag included (wrk2's figure)",
    )


def add_grpc_flags(parser: argparse.ArgumentParser) -> None:
    """add_grpc_flags adds what a gRPC run (a grpc:// URL) takes: the .proto, where its
    imports are, and the request message as JSON."""
    grpc = parser.add_argument_group(
        "gRPC (a grpc://HOST:PORT/package.Service/Method URL; grpcs:// over TLS)"
    )
    grpc.add_argument(
        "--proto", metavar="FILE", help="the .proto that defines the method (read at run time)"
    )
    grpc.add_argument(
        "--data",
        metavar="JSON|@FILE",
        help="the request message as JSON (proto3's JSON mapping; default {})",
    )
    grpc.add_argument(
        "-I",
        "--import-path",
        dest="import_paths",
        action="append",
        metavar="DIR",
        help="where the .proto's imports are, besides its own directory (repeatable)",
    )


def add_interval_flag(group: Parser, shown: Mapping[str, str]) -> None:
    """add_interval_flag adds ``--interval`` (how often the engine reports a snapshot)."""
    group.add_argument(
        "--interval",
        metavar="DURATION",
        help=f"reporting interval (default: {shown['interval']}, at least {shown['min_interval']})",
    )


def add_export_flags(group: Parser) -> None:
    """add_export_flags adds ``--out json=FILE`` (the intervals as NDJSON, k6's spelling) and
    ``--junit FILE`` (the thresholds as a JUnit report for CI)."""
    group.add_argument(
        "--out",
        metavar="json=FILE",
        help="write each interval as a JSON line as the run goes (NDJSON; json=- for stdout)",
    )
    group.add_argument(
        "--junit",
        metavar="FILE",
        help="write a JUnit XML report: one test case per --threshold, one for the run",
    )


def add_watch_flag(group: Parser, at_limit: bool = False) -> None:
    """add_watch_flag adds ``--watch NAME=SPEC`` (repeatable), the deployment's parts watched
    each second beside the load (:mod:`redline.service.parts`): on ``redline run`` and
    scenario runs, and on ``redline find`` (``at_limit``: the part that ran out first is
    named at the limit)."""
    group.add_argument(
        "--watch",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="a part of the deployment to watch each second (repeatable; a NAME may take"
        " several): pid:PID (its process tree), port:PORT (the listener and its accept"
        " queue), prometheus:URL (an exporter: pools, counters as rates), cmd:COMMAND"
        " (started and stopped); "
        + (
            "at the limit the part that ran out first is named"
            if at_limit
            else "kept in the JSON's parts, each part's figures said under the summary"
        ),
    )
