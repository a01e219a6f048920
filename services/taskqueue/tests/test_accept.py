"""The server takes every waiting connection each turn of a busy loop (server._Acceptor).

libuv, under uvloop, accepts one connection a turn of the loop (libuv/libuv#3696); behind a
loop whose turns are long (thousands of connections served), new connections then wait in
the kernel's queue for seconds. These tests run the server's own uvicorn on uvloop, keep
its loop busy with a callback that holds every turn for a few milliseconds, open many
connections at once and count the turns until all were accepted.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from typing import Any

import psutil
import uvloop
from taskqueue.server import _Server, bind, uvicorn_config

N = 120
BUSY_S = 0.003


async def _app(scope: dict, receive: Any, send: Any) -> None:
    """_app answers every request with 200 "ok"."""
    if scope["type"] != "http":
        return
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]}
    )
    await send({"type": "http.response.body", "body": b"ok"})


async def _turns_to_accept(n: int) -> tuple[int, list[bytes], int]:
    """_turns_to_accept: the busy loop's turns until n connections opened at once were all
    accepted, what each got for a GET, and the sockets still listening on the server's port
    right after the stop (its own and the acceptor's duplicate, before any collection)."""
    sock = bind("127.0.0.1", 0)
    server = _Server(uvicorn_config(_app))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    loop = asyncio.get_running_loop()
    turns = 0

    def busy() -> None:  # a turn of a loop serving thousands: a few milliseconds of work
        nonlocal turns
        turns += 1
        time.sleep(BUSY_S)
        if not server.should_exit:
            loop.call_soon(busy)

    port = sock.getsockname()[1]
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]  # the kernel's
    loop.call_soon(busy)
    start = turns
    deadline = time.monotonic() + 30
    while len(server.server_state.connections) < n and time.monotonic() < deadline:
        await asyncio.sleep(0)
    taken = turns - start
    for client in clients:
        client.setblocking(False)
        client.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    answers = []
    for client in clients:
        got = b""
        while not got.endswith(b"ok"):
            try:
                got += client.recv(4096)
            except BlockingIOError:
                await asyncio.sleep(0.001)
        answers.append(got.split(b"\r\n", 1)[0])
        client.close()
    server.should_exit = True
    await serving
    listening = [
        c
        for c in psutil.Process().net_connections(kind="tcp")
        if c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN
    ]
    return taken, answers, len(listening)


def test_a_busy_loop_accepts_every_waiting_connection_in_a_turn_or_two() -> None:
    # Descriptors counted around the loop's whole life, libuv's process-wide ones made first
    # (a signal pipe, on the first loop): a loop keeps one of its own (on /dev/null, spare for
    # accepting past the fd limit) until it closes.
    uvloop.run(asyncio.sleep(0))
    fds = len(os.listdir("/proc/self/fd"))
    taken, answers, listening = uvloop.run(_turns_to_accept(N))
    left = len(os.listdir("/proc/self/fd")) - fds
    # One a turn (libuv alone) would take N turns; here all wait for the same turn or two.
    assert taken <= 5, f"{taken} turns to accept {N} waiting connections"
    assert answers == [b"HTTP/1.1 200 OK"] * N
    assert listening == 0, f"{listening} sockets still listening after the stop"
    assert left <= 0, f"{left} descriptors left open after the stop"
