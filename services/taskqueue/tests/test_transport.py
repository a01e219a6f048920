"""OneSend and HttpProtocol: what one turn of the loop writes leaves in one send, in order."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import uvicorn
from fakes import FakeTransport
from taskqueue.transport import HOLD_LIMIT, HttpProtocol, OneSend
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState


async def _turn() -> None:
    """_turn lets the loop run what was scheduled (a flush) and come back."""
    for _ in range(3):
        await asyncio.sleep(0)


@pytest.mark.parametrize(
    ("case", "writes", "sent_at_once"),
    [
        ("head and body", [b"HTTP/1.1 200 OK\r\n\r\n", b"{}"], []),
        ("one write", [b"abc"], []),
        ("empty writes are nothing", [b"", b"x", b""], []),
        ("a large write goes at once", [b"y" * HOLD_LIMIT], [b"y" * HOLD_LIMIT]),
        ("held bytes reaching the limit go at once", [b"a", b"b" * HOLD_LIMIT], None),
    ],
)
async def test_writes_of_one_turn_leave_as_one(
    case: str, writes: list[bytes], sent_at_once: list[bytes] | None
) -> None:
    real = FakeTransport()
    one = OneSend(real, asyncio.get_running_loop())  # type: ignore[arg-type]
    for data in writes:
        one.write(data)
    if sent_at_once is not None:
        assert real.writes == sent_at_once, case
    else:
        assert real.writes == [b"".join(writes)], case
    await _turn()
    assert real.writes == [b"".join(writes)], case


async def test_close_sends_what_is_held_first_and_writelines_keeps_order() -> None:
    real = FakeTransport()
    one = OneSend(real, asyncio.get_running_loop())  # type: ignore[arg-type]
    one.write(b"1")
    one.writelines([b"2", b"3"])
    one.close()
    assert real.writes == [b"123"] and real.closed and one.is_closing()
    await _turn()  # the scheduled flush finds nothing left
    assert real.writes == [b"123"]


async def test_a_connection_lost_before_the_flush_drops_the_bytes() -> None:
    real = FakeTransport()
    one = OneSend(real, asyncio.get_running_loop())  # type: ignore[arg-type]
    one.write(b"late")
    real.closed = True  # the peer went away within the turn
    await _turn()
    assert real.writes == []
    assert one.get_extra_info("sockname") == ("127.0.0.1", 8000)  # the rest is the real one's


async def _app(scope: Any, receive: Any, send: Any) -> None:
    body = b'{"status":"SUCCEEDED"}'
    headers = [(b"content-length", str(len(body)).encode()), (b"content-type", b"x/y")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _serve(protocol_class: type[HttpToolsProtocol]) -> FakeTransport:
    """_serve puts two keep-alive requests through uvicorn's protocol on a fake socket."""
    config = uvicorn.Config(_app, lifespan="off", log_level="warning")
    config.load()
    real = FakeTransport()
    protocol = protocol_class(config=config, server_state=ServerState(), app_state={})
    protocol.connection_made(real)  # type: ignore[arg-type]
    for _ in range(2):
        protocol.data_received(b"GET /tasks/submissions/a HTTP/1.1\r\nhost: x\r\n\r\n")
        for _ in range(20):
            await asyncio.sleep(0)
    protocol.connection_lost(None)
    return real


async def test_uvicorn_sends_a_response_in_one_write_with_http_protocol() -> None:
    plain = await _serve(HttpToolsProtocol)
    ours = await _serve(HttpProtocol)
    assert len(plain.writes) == 4  # the mechanism: head and body written apart
    assert len(ours.writes) == 2
    assert ours.writes == [plain.writes[0] + plain.writes[1], plain.writes[2] + plain.writes[3]]
    assert ours.writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert ours.writes[0].endswith(b'\r\n\r\n{"status":"SUCCEEDED"}')
