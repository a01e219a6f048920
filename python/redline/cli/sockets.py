"""sockets: ``redline run ws://...`` (or ``wss://``), a WebSocket run
(:func:`redline.sockets.websocket`) from the run command's flags: ``-c`` sockets, ``--rate``
messages a second across them, ``--stagger``, ``-d``/``-n``, ``--body`` the message, ``--match
FIELD``, ``--timeout``, ``-t``, ``--cacert``/``-k``, ``--json``."""

from __future__ import annotations

import argparse
from pathlib import Path

from redline.errors import RedlineError
from redline.view.progress import summary_stream

#: HTTP_ONLY: the run flags a WebSocket run has no use for, as (flag, argument name); given,
#: they are refused in one line rather than silently ignored.
HTTP_ONLY = (
    ("-m/--method", "method"),
    ("-H/--header", "header"),
    ("--http2/--http1", "http2"),
    ("--streams", "streams"),
    ("--stream", "stream"),
    ("--stages", "stages"),
    ("--open", "open"),
    ("--max-connections", "max_connections"),
    ("--warmup", "warmup"),
    ("--threshold", "threshold"),
    ("--report", "report"),
    ("--out", "out"),
    ("--vary", "vary"),
    ("--cluster", "cluster"),
    ("--web", "web"),
    ("--send-ahead", "send_ahead"),
    ("--latency-from", "latency_from"),
    ("--host", "host"),
    ("-u/--users", "users"),
    ("--iterations", "iterations"),
    ("--proto", "proto"),
    ("--data", "data"),
)


def is_socket(url: str) -> bool:
    """is_socket: the run's argument is a WebSocket URL."""
    return url.startswith(("ws://", "wss://"))


def add_socket_flags(parser: argparse.ArgumentParser) -> None:
    """add_socket_flags adds what only a WebSocket run takes."""
    ws = parser.add_argument_group("WebSocket (a ws:// URL; -c sockets, --rate messages/s)")
    ws.add_argument(
        "--match",
        metavar="FIELD",
        help="a reply answers the message whose JSON field FIELD it carries (--body is then a "
        "JSON object whose FIELD redline numbers); default: the next message answers",
    )
    ws.add_argument(
        "--stagger",
        metavar="DURATION",
        help="closed model: spread the sockets' first messages over DURATION (e.g. the round "
        "trip) so they do not move in lockstep; default: all at once",
    )


def refuse_socket_flags(args: argparse.Namespace) -> None:
    """refuse_socket_flags refuses, in one line, a WebSocket flag given to a run of another
    URL (it would be ignored)."""
    for flag, given in (("--match", args.match), ("--stagger", args.stagger)):
        if given is not None:
            raise RedlineError(f"{flag} is a WebSocket run's option (a ws:// or wss:// URL)")


def cmd_run_socket(args: argparse.Namespace) -> int:
    """cmd_run_socket runs ``redline run ws://...``: prints the summary, writes ``--json``."""
    from redline.sockets import websocket
    from redline.sockets.summary import render

    for flag, name in HTTP_ONLY:
        if getattr(args, name, None) not in (None, False, []):
            raise RedlineError(f"{flag} is an HTTP run's option; a ws:// run does not take it")
    message = args.body
    if message is not None and message.startswith("@"):
        try:
            message = Path(message[1:]).read_text()
        except OSError as e:
            raise RedlineError(f"--body {message}: {e.strerror or e}") from None
    result = websocket(
        args.url,
        sockets=args.connections,
        rate=args.rate,
        duration=args.duration,
        messages=args.requests,
        message=message,
        match=args.match,
        timeout=args.timeout,
        threads=args.threads,
        stagger=args.stagger,
        insecure=args.insecure,
        cacert=args.cacert,
    )
    print(render(result), file=summary_stream(args.json), flush=True)
    if args.json:
        result.write_json(args.json)
    return 0
