"""socket: a flow's WebSocket step (``u.websocket``; docs/protocols.md): a socket opened to a
URL, its messages sent one after another, each when the last one's reply came (the reply the
next message read, or with ``match`` the one whose JSON field equals the message's), each round
trip a request of the step's name, and the socket closed. Traced here into the plan's
``socket`` step; the engine runs it (``crates/engine/src/scenario/ws.rs``)."""

from __future__ import annotations

from typing import Any

from redline.scenario.template import Template, display, json_template, parts


def _socket_start(template: Template) -> bool:
    """_socket_start: a socket URL starts as a path (``/``, not ``//``) or a ``ws://`` or
    ``wss://`` URL, written out (a socket goes to a known origin)."""
    head = template[0] if template else None
    if not isinstance(head, str):
        return False
    if head.startswith("/"):
        return not head.startswith("//")
    return head[:6].lower().startswith(("ws://", "wss://"))


def trace(
    user: Any,
    url: Any,
    send: Any,
    count: int,
    match: str | None,
    timeout: str | float | None,
    name: str | None,
) -> None:
    """trace appends to ``user``'s flow (a :class:`~redline.scenario.user.User`, which calls
    this) the socket step ``u.websocket`` describes."""
    url_t = user._use(parts(url))
    if not _socket_start(url_t):
        raise user._error(
            "the WebSocket URL must be a path starting with '/' or a ws:// or wss:// URL, "
            f"got {display(url_t)!r}"
        )
    if match is not None and not (isinstance(match, str) and match):
        raise user._error(f"websocket(match=...) is a JSON field's name, got {match!r}")
    sends = list(send) if isinstance(send, (list, tuple)) else [send]
    if not sends:
        raise user._error("websocket(send=...) needs at least one message")
    messages = [_message(user, m, match) for m in sends]
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise user._error(f"websocket(count=...) is a whole number >= 1, got {count!r}")
    step: dict[str, Any] = {
        "step": "socket",
        "name": name or f"WS {display(url_t)}",
        "url": url_t,
        "messages": messages,
        "count": count,
    }
    if match is not None:
        step["match_field"] = match
    if timeout is not None:
        step["timeout_s"] = user._timeout_s(timeout)
    user._add(step)
    user._sent += 1


def _message(user: Any, message: Any, match: str | None) -> dict[str, Any]:
    """_message is one message's spec: a dict (or a list) is a JSON document, anything else
    text; under ``match``, each must be a dict that carries the field."""
    if match is not None and not (isinstance(message, dict) and match in message):
        raise user._error(
            f"websocket(match={match!r}) matches replies by the message's {match!r} field: "
            f"each message must be a dict with it, got {message!r}"
        )
    if isinstance(message, (dict, list)):
        try:
            return {"type": "json", "template": user._use(json_template(message))}
        except TypeError as e:
            raise user._error(f"websocket message: {e}") from None
    return {"type": "text", "template": user._use(parts(message))}
