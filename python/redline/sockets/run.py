"""websocket: one WebSocket run, shared by ``redline run ws://...`` and Python users.

    >>> import redline
    >>> r = redline.websocket("ws://127.0.0.1:8080/ws?delay=50ms", sockets=100, duration="10s")
    >>> r.messages["sent"], r.latency.p99

Options are validated once, by the engine (``SocketConfig::check``), which also owns every
default; the engine's one-line ConfigError comes through unchanged.
"""

from __future__ import annotations

import json
from typing import Any

from redline import _engine
from redline.runs.nofile import raise_open_file_limit
from redline.runs.options import parse_duration
from redline.sockets.result import SocketResult


def websocket(
    url: str,
    *,
    sockets: int | None = None,
    rate: float | None = None,
    duration: str | float | None = None,
    messages: int | None = None,
    message: str | None = None,
    match: str | None = None,
    timeout: str | float | None = None,
    threads: int | None = None,
) -> SocketResult:
    """websocket opens ``sockets`` WebSockets to ``url`` (``ws://``) and sends ``message`` on
    each: the next as soon as the last one's reply came (closed model), or ``rate`` messages a
    second across the sockets whatever the server does (open model, round trips timed from
    each message's intended send). A reply answers the socket's oldest message, or with
    ``match="id"`` the message whose field ``id`` it carries (``message`` is then a JSON object
    whose ``id`` redline sets per message). Stop after ``duration`` (default 10 s) or
    ``messages`` sent; a reply later than ``timeout`` (default 30 s) loses its socket. Sockets
    the server drops or closes are counted by class (``errors``) with the messages they lost,
    and opened again."""
    config: dict[str, Any] = {"url": url}
    for key, value in (
        ("sockets", sockets),
        ("rate", rate),
        ("messages", messages),
        ("message", message),
        ("match_field", match),
        ("threads", threads),
    ):
        if value is not None:
            config[key] = value
    if duration is not None:
        config["duration_s"] = parse_duration(duration, "duration")
    if timeout is not None:
        config["timeout_s"] = parse_duration(timeout, "timeout")
    raise_open_file_limit()
    return SocketResult(json.loads(_engine.run_socket(json.dumps(config))))
