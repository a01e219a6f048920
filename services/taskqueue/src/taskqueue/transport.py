"""Transport: what a connection writes in one turn of the event loop leaves in one send.

uvicorn writes a response's head and its body with two `transport.write` calls, and uvloop
sends each at once: two send() syscalls and two TCP segments a response, the first of which
the client's kernel then acknowledges on its own. On loopback the sender's send() also runs
the receiver's TCP input, so the second send costs the service about as much as the first.
`OneSend` holds a connection's writes until the end of the loop's turn and sends them
joined; `HttpProtocol` is uvicorn's httptools protocol on such a transport, which also
answers the reads its app can answer from memory as soon as it has parsed them, and a
submission as soon as the store has it, with no ASGI cycle between.

Hand-rolled because neither library offers it: uvicorn has no hook between a response's
head and its body, and uvloop's `writelines` sends each buffer at once too (measured).
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import (
    HEADER_VALUE_RE,
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)

from taskqueue.replies import RawHeaders, Reply

_INTERNAL_ERROR = Reply(
    500,
    [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", b"21"),
        (b"connection", b"close"),
    ],
    b"Internal Server Error",
)
"""_INTERNAL_ERROR is uvicorn's answer to an app that raised before it answered."""

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

    A plain submission (`FastPath.takes_submission`) keeps uvicorn's request cycle but runs
    no task on it: its body goes to `FastPath.submit_now` once read, and the answer is
    written from the callback that tells the loop the store has the task. Through the app
    the same answer waited for five turns of the loop (the cycle's task, the store's task,
    its future, the shield, the write), each a full turn of a loop serving thousands of
    connections.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._at_once: Callable[[str, RawHeaders], Reply | None] | None = getattr(
            self.app, "at_once", None
        )
        self._now: bytes | None = None  # the answer to the request being parsed, if known
        self._now_keep_alive = True
        # An app takes submissions only if it also answers them: both, or neither.
        self._submit_now: Callable[[bytes, Callable[[Reply | BaseException], None]], Any] | None
        self._submit_now = getattr(self.app, "submit_now", None)
        self._takes: Callable[[str, Iterable[tuple[bytes, bytes]]], bool] | None = (
            getattr(self.app, "takes_submission", None) if self._submit_now is not None else None
        )
        self._taken: RequestResponseCycle | None = None  # a submission awaiting its body

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
        """on_message_complete sends an answer given at once, as a finished cycle would, or
        hands a submission taken by the protocol its whole body."""
        now = self._now
        if now is None:
            super().on_message_complete()
            taken = self._taken
            if taken is not None and taken is self.cycle and not taken.more_body:
                self._submit(taken)
            return
        self._now = None
        self._one_send.write_whole(now)
        if not self._now_keep_alive:
            self.transport.close()
        self.on_response_complete()

    def on_body(self, body: bytes) -> None:
        """on_body gathers a taken submission's body; any other goes to uvicorn's cycle, which
        stops reading past its high-water mark until the app's receive() takes the body."""
        taken = self._taken
        if taken is not None and taken is self.cycle:
            taken.body += body  # no app will receive() it: never paused (bounded by its length)
            return
        super().on_body(body)

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        """_start_asgi_task runs a request's cycle through the app, unless the app's fast path
        takes it as a submission answered from the protocol: then no task, coroutine or ASGI
        message is made, and its answer is written when the store has the task.

        uvicorn calls this as a request's headers are parsed, or when a pipelined request's
        turn comes; the cycle is uvicorn's own either way, so its rules hold unchanged (a
        request behind an unanswered one waits in the pipeline, a disconnect or a shutdown
        marks the cycle). A uvicorn without this hook sends every submission to the app."""
        scope = cycle.scope
        takes = self._takes
        if (
            takes is None
            or app is not self.app
            or scope["method"] != "POST"
            or scope["root_path"]
            or self.access_log
            or cycle.waiting_for_100_continue  # the app's receive() writes the 100 Continue
            or any(name == b"upgrade" for name, _ in scope["headers"])
            or not takes(scope["path"], scope["headers"])
        ):
            super()._start_asgi_task(cycle, app)
            return
        if cycle.more_body:
            self._taken = cycle  # on_message_complete submits it
        else:
            self._submit(cycle)  # a pipelined request, read whole while it waited

    def _submit(self, cycle: RequestResponseCycle) -> None:
        """_submit hands the app a taken submission's body; its answer comes now or later."""
        self._taken = None
        body = bytes(cycle.body)
        cycle.body = bytearray()
        assert self._submit_now is not None  # checked as it was taken
        try:
            answer = self._submit_now(body, lambda outcome: self._answer(cycle, outcome))
        except Exception as exc:  # what the app's door would have raised: answered as uvicorn does
            answer = exc
        if answer is not None:
            self._answer(cycle, answer)

    def _answer(self, cycle: RequestResponseCycle, outcome: Reply | BaseException) -> None:
        """_answer writes a taken submission's answer as uvicorn's cycle would have sent it
        (its `send`, then its `on_response`), an exception as uvicorn's 500; nothing to a
        client that left. The response is not held for a client that stopped reading (a
        cycle would wait for the transport to drain): it is one small write."""
        if cycle.disconnected or cycle.response_complete or self.transport.is_closing():
            return
        if isinstance(outcome, Reply):
            data = self._wire(outcome, cycle.keep_alive)
            failed: BaseException = RuntimeError("Invalid HTTP header value.")
        else:
            data, failed = None, outcome
        if data is None:
            self.logger.error("Exception in ASGI application\n", exc_info=failed)
            cycle.keep_alive = False
            data = self._wire(_INTERNAL_ERROR, False)
            assert data is not None
        cycle.response_started = cycle.response_complete = True
        cycle.message_event.set()
        self._one_send.write_whole(data)
        if not cycle.keep_alive:
            self.transport.close()
        self.on_response_complete()

    def _wire(self, answer: Reply, keep_alive: bool) -> bytes | None:
        """_wire is the whole response uvicorn writes for `answer` (status line, the server's
        default headers, the answer's, `connection: close` when not kept alive), or None
        where uvicorn would refuse a header value."""
        out = [STATUS_LINE[answer.status]]
        closes = False
        for name, value in (*self.server_state.default_headers, *answer.headers):
            if HEADER_VALUE_RE.search(value):  # uvicorn refuses it
                return None
            closes = closes or (name == b"connection" and value == b"close")
            out += (name, b": ", value, b"\r\n")
        if not keep_alive and not closes:
            out.append(b"connection: close\r\n")
        out += (b"\r\n", answer.body)
        return b"".join(out)

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
        self._now_keep_alive = parser.get_http_version() != "1.0" and parser.should_keep_alive()
        return self._wire(answer, self._now_keep_alive)  # None: uvicorn's way, not ours
