"""command: the live flags of ``redline run`` and ``redline find`` (one spelling for both),
and the session they ask for."""

from __future__ import annotations

import argparse
from typing import Any

from redline.errors import ConfigError
from redline.options import parse_duration


def add_live_flags(parser: argparse.ArgumentParser) -> None:
    """add_live_flags adds ``--web``, ``--prometheus``, ``--linger`` and ``--web-token``."""
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
) -> Any:
    """open_session starts the session the flags ask for (None without --web or
    --prometheus); a bad flag is a one-line ConfigError."""
    if args.web is None and args.prometheus is None:
        if args.web_token is not None or parse_duration(args.linger, "--linger") > 0:
            raise ConfigError("--linger and --web-token go with --web or --prometheus")
        return None
    from redline.live import Kind, LiveSession, parse_address

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
    )
    return session.start()


def url_name(url: str, method: str | None) -> str:
    """url_name is the request name a URL run's figures carry in the report's ``per_name``
    (the engine names it ``METHOD path``), so the live series and the report agree."""
    from urllib.parse import urlsplit

    return f"{(method or 'GET').upper()} {urlsplit(url).path or '/'}"
