"""verifier: an HTTP/1.1 server on 127.0.0.1 that checks each request's computed values and
counts the right and the wrong ones, the truth a test holds redline's counts to.

    /basic?user=NAME   Authorization is "Basic " + base64(NAME:PASSWORD) of that user's row
    /signed            X-Request-Id a version-4 UUID seen for the first time; X-Timestamp the
                       unix time within WINDOW_S of the server's clock; X-Signature the
                       HMAC-SHA256 (hex) of the body under KEY; the JSON body's "id" and "ts"
                       are those headers (one value per request, signed as sent)
    /len               X-Len is len(X-Name) and X-Upper, when sent, X-Name.upper()
    /plain             anything (the unsigned flow's requests)

A right request is answered 200, a wrong one 400 with its first reason (kept in `reasons`).
It runs an asyncio loop on a thread of its own (keep-alive, pipelining tolerated), fast
enough for the bench's 100,000 requests, and stops on `close()`.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import re
import threading
import time
from collections import Counter
from typing import Any
from urllib.parse import parse_qs, urlsplit

#: KEY: the signing key the signed flow uses.
KEY = "k3y-for-tests"
#: WINDOW_S: how far a timestamp may be from the server's clock.
WINDOW_S = 30
_UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
_OK = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n"


class Verifier:
    """Verifier is the server: ``with Verifier(rows) as v:`` serves on ``v.url``;
    ``v.right``, ``v.wrong`` and ``v.reasons`` are what it judged."""

    def __init__(self, rows: dict[str, str] | None = None) -> None:
        self.rows = dict(rows or {})
        self.right: Counter[str] = Counter()
        self.wrong: Counter[str] = Counter()
        self.reasons: Counter[str] = Counter()
        self.ids: set[str] = set()
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Verifier:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the verifier did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            self._loop.create_server(lambda: _Conn(self), "127.0.0.1", 0)
        )
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            server.close()
            self._loop.run_until_complete(server.wait_closed())
            self._loop.close()

    def judge(self, target: str, headers: dict[str, str], body: bytes) -> str | None:
        """judge: None for a right request, else the reason it is wrong (and counts it)."""
        url = urlsplit(target)
        route = url.path
        try:
            reason = _check(self, route, parse_qs(url.query), headers, body)
        except Exception as e:  # a malformed request is a wrong one
            reason = f"{type(e).__name__}: {e}"
        with self._lock:
            if reason is None:
                self.right[route] += 1
            else:
                self.wrong[route] += 1
                self.reasons[reason] += 1
        return reason


def _check(
    v: Verifier, route: str, query: dict[str, list[str]], headers: dict[str, str], body: bytes
) -> str | None:
    if route == "/plain":
        return None
    if route == "/basic":
        user = query["user"][0]
        want = "Basic " + base64.b64encode(f"{user}:{v.rows[user]}".encode()).decode()
        return None if headers.get("authorization") == want else "bad basic credentials"
    if route == "/len":
        name = headers.get("x-name", "")
        if headers.get("x-len") != str(len(name)):
            return "bad length"
        if "x-upper" in headers and headers["x-upper"] != name.upper():
            return "bad upper case"
        return None
    if route == "/signed":
        rid, ts = headers.get("x-request-id", ""), headers.get("x-timestamp", "")
        if not _UUID4.match(rid):
            return "not a version-4 UUID"
        with v._lock:
            if rid in v.ids:
                return "a UUID seen before"
            v.ids.add(rid)
        if not ts.isdigit() or abs(int(ts) - time.time()) > WINDOW_S:
            return "timestamp out of the window"
        sig = hmac.new(KEY.encode(), body, hashlib.sha256).hexdigest()
        if headers.get("x-signature") != sig:
            return "bad signature"
        doc: dict[str, Any] = json.loads(body)
        if doc.get("id") != rid or str(doc.get("ts")) != ts:
            return "the signed body holds other values than the headers"
        return None
    return f"unknown route {route}"


class _Conn(asyncio.Protocol):
    """_Conn reads requests off one connection and answers each."""

    def __init__(self, v: Verifier) -> None:
        self.v = v
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            lines = self.buf[:end].decode("utf-8", "replace").split("\r\n")
            headers = {}
            for line in lines[1:]:
                k, _, val = line.partition(":")
                headers[k.strip().lower()] = val.strip()
            size = int(headers.get("content-length", "0"))
            if len(self.buf) < end + 4 + size:
                return
            body = self.buf[end + 4 : end + 4 + size]
            self.buf = self.buf[end + 4 + size :]
            target = lines[0].split(" ")[1]
            reason = self.v.judge(target, headers, body)
            assert self.transport is not None
            if reason is None:
                self.transport.write(_OK)
            else:
                text = (reason + "\n").encode()
                self.transport.write(
                    b"HTTP/1.1 400 Bad Request\r\nContent-Length: %d\r\n\r\n%s" % (len(text), text)
                )
