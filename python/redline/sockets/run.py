"""websocket: one WebSocket run, shared by ``redline run ws://...`` and Python users.

    >>> import redline
    >>> r = redline.websocket("ws://127.0.0.1:8080/ws?delay=50ms", sockets=100, duration="10s")
    >>> r.messages["sent"], r.latency.p99

The options cross to the engine as :class:`~redline.sockets.config.SocketConfig`, the typed dict
the binding reads in one conversion. They are validated once, by the engine
(``SocketConfig::check``), which also owns every default; the engine's one-line ConfigError comes
through unchanged.
"""

from __future__ import annotations

import json

from redline import _engine
from redline.runs.nofile import raise_open_file_limit
from redline.runs.options import parse_duration
from redline.sockets.config import SocketConfig
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
    stagger: str | float | None = None,
    insecure: bool = False,
    cacert: str | None = None,
) -> SocketResult:
    """websocket opens ``sockets`` WebSockets to ``url`` (``ws://``) and sends ``message`` on
    each: the next as soon as the last one's reply came (closed model), or ``rate`` messages a
    second across the sockets whatever the server does (open model, round trips timed from
    each message's intended send). A reply answers the socket's oldest message, or with
    ``match="id"`` the message whose field ``id`` it carries (``message`` is then a JSON object
    whose ``id`` redline sets per message). Stop after ``duration`` (default 10 s) or
    ``messages`` sent; a reply later than ``timeout`` (default 30 s) loses its socket. Sockets
    the server drops or closes are counted by class (``errors``) with the messages they lost,
    and opened again. ``stagger`` spreads the closed model's first messages over that long
    (the sockets then stay spread, not in lockstep). ``wss://`` speaks TLS: ``cacert`` also
    trusts a PEM file's certificates, ``insecure`` skips verification."""
    config = SocketConfig(url=url)
    if sockets is not None:
        config["sockets"] = sockets
    if rate is not None:
        config["rate"] = rate
    if messages is not None:
        config["messages"] = messages
    if message is not None:
        config["message"] = message
    if match is not None:
        config["match_field"] = match
    if threads is not None:
        config["threads"] = threads
    if duration is not None:
        config["duration_s"] = parse_duration(duration, "duration")
    if timeout is not None:
        config["timeout_s"] = parse_duration(timeout, "timeout")
    if stagger is not None:
        config["stagger_s"] = parse_duration(stagger, "stagger")
    if insecure:
        config["insecure"] = True
    if cacert is not None:
        config["ca_file"] = cacert
    raise_open_file_limit()
    return SocketResult(json.loads(_engine.run_socket(config)))
