"""live: the live flags of ``redline run`` and ``redline find`` (one spelling for both),
the session they ask for, and ``redline ui``."""

from __future__ import annotations

import argparse
import signal
import time
from collections.abc import Callable
from typing import Any

from redline.errors import ConfigError
from redline.runs.options import parse_duration


def add_live_flags(parser: argparse.ArgumentParser) -> None:
    """add_live_flags adds ``--web``, ``--prometheus``, ``--otlp``, ``--linger`` and
    ``--web-token``."""
    g = parser.add_argument_group("live view and metrics")
    g.add_argument(
        "--web",
        metavar="[HOST:]PORT",
        help="serve a live page of the run (0 picks a free port; the URL is printed; "
        "HOST defaults to 127.0.0.1)",
    )
    g.add_argument(
        "--prometheus",
        metavar="[HOST:]PORT",
        help="serve the live metrics at /metrics in the Prometheus text format",
    )
    g.add_argument(
        "--otlp",
        metavar="URL",
        help="push the live metrics to an OpenTelemetry collector, OTLP over HTTP "
        "(e.g. http://127.0.0.1:4318; every OTEL_METRIC_EXPORT_INTERVAL ms, default 60000, "
        "and at the end; needs pip install 'redline[otlp]')",
    )
    g.add_argument(
        "--linger",
        metavar="DURATION",
        default="0s",
        help="keep serving the final figures this long after the run, e.g. 5s (default 0s)",
    )
    g.add_argument(
        "--web-token",
        metavar="TOKEN",
        help="required with a non-loopback --web address: every request must carry ?token=TOKEN",
    )


def open_session(
    args: argparse.Namespace,
    kind: str,
    title: str,
    model: str,
    name: str = "all",
    monitor: Any = None,
    target: str | None = None,
    method: str | None = None,
) -> Any:
    """open_session starts the session the flags ask for (None without --web,
    --prometheus or --otlp); a bad flag is a one-line ConfigError. ``target`` (the URL or
    a scenario's host) and ``method`` (a URL run's) label the OTLP request series."""
    if args.web is None and args.prometheus is None and args.otlp is None:
        if args.web_token is not None or parse_duration(args.linger, "--linger") > 0:
            raise ConfigError("--linger and --web-token go with --web or --prometheus")
        return None
    from redline.live import Kind, LiveSession, parse_address
    from redline.live.otlp import request_attributes

    session = LiveSession(
        web=parse_address(args.web, "--web") if args.web is not None else None,
        prometheus=(
            parse_address(args.prometheus, "--prometheus") if args.prometheus is not None else None
        ),
        linger_s=parse_duration(args.linger, "--linger"),
        kind=Kind(kind),
        title=title,
        model=model,
        name=name,
        monitor=monitor,
        token=args.web_token,
        otlp=args.otlp,
        otlp_attributes=request_attributes(target, method) if args.otlp else None,
    )
    return session.start()


def url_name(url: str, method: str | None) -> str:
    """url_name is the request name a URL run's figures carry in the report's ``per_name``
    (the engine names it ``METHOD path``), so the live series and the report agree."""
    from urllib.parse import urlsplit

    try:
        path = urlsplit(url).path
    except ValueError as e:  # "http://[::1": an IPv6 address without its "]"
        raise ConfigError(f"url: {url!r} is not a URL ({e})") from None
    return f"{(method or 'GET').upper()} {path or '/'}"


#: UI_PORT: where ``redline ui`` listens by default (Locust's web UI port).
UI_PORT = 8089


def add_ui_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """add_ui_parser defines ``redline ui``; the caller sets its ``func``."""
    u = sub.add_parser(
        "ui",
        help="a start page in the browser: fill in a form, start a run and watch it live",
        description="Serve the live page with nothing running yet: a form (a URL or a "
        "scenario file, the model, the load, the duration) shows the redline run command line "
        "that does the same and starts it in this process. Ctrl-C stops a run and the page.",
    )
    u.add_argument(
        "--port", type=int, default=UI_PORT, help=f"port (default {UI_PORT}; 0 picks a free one)"
    )
    u.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    u.add_argument(
        "--web-token",
        metavar="TOKEN",
        help="required with a non-loopback --host: every request must carry ?token=TOKEN",
    )
    return u


def cmd_ui(args: argparse.Namespace, run_command: Callable[[list[str], Any], int]) -> int:
    """cmd_ui serves ``redline ui`` until SIGINT or SIGTERM; ``run_command`` runs a
    ``redline run`` command line watched by a session (the CLI's own)."""
    from redline.live.address import parse_address
    from redline.live.launcher import Launcher

    host = f"[{args.host}]" if ":" in args.host else args.host
    address = parse_address(f"{host}:{args.port}", "--host/--port")
    # A plain flag, not a threading.Event: Event.set takes a lock that the main thread may
    # hold inside Event.wait when the handler runs there, and the process then hangs until
    # its supervisor's SIGKILL (a target lost its "served" line that way).
    stop: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    with Launcher(address, run_command, token=args.web_token):
        try:
            while not stop:
                time.sleep(0.2)  # the handler runs in it; the flag is read each 0.2 s
        except KeyboardInterrupt:
            pass
    return 0
