"""Transport: what a connection writes in one turn of the event loop leaves in one send.

uvicorn writes a response's head and its body with two `transport.write` calls, and uvloop
sends each at once: two send() syscalls and two TCP segments a response, the first of which
the client's kernel then acknowledges on its own. On loopback the sender's send() also runs
the receiver's TCP input, so the second send costs the service about as much as the first.
`OneSend` holds a connection's writes until the end of the loop's turn and sends them
joined; `HttpProtocol` is uvicorn's httptools protocol on such a transport, which also
answers the reads its app can answer from memory as soon as it has parsed them.

Hand-rolled because neither library offers it: uvicorn has no hook between a response's
head and its body, and uvloop's `writelines` sends each buffer at once too (measured).
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Callable
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import HEADER_VALUE_RE, STATUS_LINE, HttpToolsProtocol

from taskqueue.replies import RawHeaders, Reply

HOLD_LIMIT = 64 * 2**10
"""HOLD_LIMIT: once this many bytes are held they go at once, as does any larger write, so a
large body is neither copied into a join nor kept from the real transport's flow control."""


class OneSend:
    """OneSend wraps a transport: writes made in one turn of the loop go out as one send.

    Everything uvicorn asks of a transport besides write, writelines, close and is_closing
    goes to the real one. Bytes keep their order; close() sends what is held first; a
    connection that was lost meanwhile drops them, as its transport would.
    """

    __slots__ = ("_transport", "_loop", "_held", "_size")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []
        self._size = 0

    def write(self, data: bytes) -> None:
        """write holds data until the end of this turn of the loop (or HOLD_LIMIT)."""
        if not data:
            return
        held = self._held
        if not held:
            if len(data) >= HOLD_LIMIT:
                self._transport.write(data)
                return
            self._loop.call_soon(self.flush)
        held.append(data)
        self._size += len(data)
        if self._size >= HOLD_LIMIT:
            self.flush()

    def write_whole(self, data: bytes) -> None:
        """write_whole sends a whole response at once: nothing is to join it in this turn,
        unless bytes are already held (it joins them, in order)."""
        if self._held:
            self.write(data)
        else:
            self._transport.write(data)

    def writelines(self, lines: Any) -> None:
        """writelines writes each buffer in turn (held like any write)."""
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        """flush sends what is held, joined, on the real transport."""
        held = self._held
        if not held:
            return
        self._size = 0
        if not self._transport.is_closing():
            self._transport.write(held[0] if len(held) == 1 else b"".join(held))
        held.clear()

    def close(self) -> None:
        """close sends what is held, then closes the real transport."""
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:
        """is_closing is the real transport's."""
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class HttpProtocol(HttpToolsProtocol):
    """HttpProtocol is uvicorn's httptools HTTP/1.1 protocol writing through `OneSend`, and
    answering as it parses them the GETs its app can answer at once (`FastPath.at_once`).

    Such a GET (a status poll, a result read, from memory) would otherwise cost a request
    cycle, an asyncio.Event, a task, a coroutine chain and two ASGI messages, for an answer
    known as soon as the request line and headers are. The bytes written are the ones
    uvicorn's `RequestResponseCycle.send` writes for the same Reply (status line, the
    server's default headers, the Reply's, `connection: close` when not kept alive), then
    the keep-alive timer and request count as uvicorn's own `on_response_complete` keeps
    them. Anything else, and any doubt (a body, an upgrade, a response still being written
    on the connection, the client not reading), goes the usual way, through the app.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._at_once: Callable[[str, RawHeaders], Reply | None] | None = getattr(
            self.app, "at_once", None
        )
        self._now: bytes | None = None  # the answer to the request being parsed, if known
        self._now_keep_alive = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """connection_made hands uvicorn the connection's transport wrapped in OneSend."""
        self._one_send = OneSend(transport, self.loop)  # type: ignore[arg-type]
        super().connection_made(self._one_send)  # type: ignore[arg-type]

    def on_headers_complete(self) -> None:
        """on_headers_complete answers at once when it can; else uvicorn starts a cycle."""
        at_once = self._at_once
        if at_once is not None:
            self._now = self._answer_now(at_once)
            if self._now is not None:
                return
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        """on_message_complete sends an answer given at once, as a finished cycle would."""
        now = self._now
        if now is None:
            super().on_message_complete()
            return
        self._now = None
        self._one_send.write_whole(now)
        if not self._now_keep_alive:
            self.transport.close()
        self.on_response_complete()

    def _answer_now(self, at_once: Callable[[str, RawHeaders], Reply | None]) -> bytes | None:
        """_answer_now is the whole response to the request just parsed when the app can give
        it at once and nothing on the connection stands in its way, else None."""
        parser = self.parser
        cycle = self.cycle
        if (
            parser.get_method() != b"GET"
            or self.root_path
            or self.access_log
            or self.flow.write_paused  # the client is not reading: let uvicorn wait for it
            or (cycle is not None and not cycle.response_complete)  # answers keep their order
            or parser.should_upgrade()
        ):
            return None
        for name, value in self.headers:
            if name == b"transfer-encoding" or (name == b"content-length" and value != b"0"):
                return None  # a body to read: uvicorn's cycle reads it
        try:
            path = httptools.parse_url(self.url).path.decode("ascii")
            if "%" in path:
                path = urllib.parse.unquote(path)
            answer = at_once(path, self.headers)
        except Exception:  # the usual way meets the same trouble and reports it as uvicorn does
            return None
        if answer is None:
            return None
        out = [STATUS_LINE[answer.status]]
        for name, value in (*self.server_state.default_headers, *answer.headers):
            if HEADER_VALUE_RE.search(value):  # uvicorn refuses it: its way, not ours
                return None
            out += (name, b": ", value, b"\r\n")
        self._now_keep_alive = parser.get_http_version() != "1.0" and parser.should_keep_alive()
        if not self._now_keep_alive:
            out.append(b"connection: close\r\n")
        out += (b"\r\n", answer.body)
        return b"".join(out)
