"""Transport: what a connection writes in one turn of the event loop leaves in one send.

uvicorn writes a response's head and its body with two `transport.write` calls, and uvloop
sends each at once: two send() syscalls and two TCP segments a response, the first of which
the client's kernel then acknowledges on its own. On loopback the sender's send() also runs
the receiver's TCP input, so the second send costs the service about as much as the first.
`OneSend` holds a connection's writes until the end of the loop's turn and sends them
joined; `HttpProtocol` is uvicorn's httptools protocol on such a transport.

Hand-rolled because neither library offers it: uvicorn has no hook between a response's
head and its body, and uvloop's `writelines` sends each buffer at once too (measured).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

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
    """HttpProtocol is uvicorn's httptools HTTP/1.1 protocol writing through `OneSend`."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """connection_made hands uvicorn the connection's transport wrapped in OneSend."""
        wrapped = OneSend(transport, self.loop)  # type: ignore[arg-type]
        super().connection_made(wrapped)  # type: ignore[arg-type]
