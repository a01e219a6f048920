"""Fast path vs FastAPI: the same request through both doors gets the same bytes back.

One in-process TaskService; each request goes once through `FastPath` (raw ASGI) and once
straight to the FastAPI app (what `--fast-path off` serves), and the ASGI messages (status,
raw headers in order, body) are compared. A spy on the FastAPI app proves that the fast
path answered the hot routes itself, and that it hands everything else over.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest
import pytest_asyncio
from fakes import FakeTransport
from origin import async_wait_for
from taskqueue.api import create_app
from taskqueue.config import Config
from taskqueue.fastpath import FastPath
from taskqueue.server import uvicorn_config
from taskqueue.service import TaskService
from taskqueue.transport import HttpProtocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

pytestmark = pytest.mark.asyncio(loop_scope="module")

Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


class _Spy:
    """_Spy is the FastAPI app, counting the requests it was handed."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.calls = 0

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        self.calls += 1
        await self.app(scope, receive, send)


@dataclass
class World:
    """World: the service, both doors, and tasks in each state the routes distinguish."""

    service: TaskService
    fastapi: _Spy
    fast: FastPath
    ids: dict[str, str]


async def call(app: Any, method: str, path: str, headers=(), chunks=(b"",)) -> Answer:
    """call sends one HTTP request through an ASGI app and collects what it answered."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    pending = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
        for i, c in enumerate(chunks)
    ]
    sent: list[dict] = []

    async def receive() -> dict:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    await app(scope, receive, send)
    assert sent and sent[0]["type"] == "http.response.start", sent
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return sent[0]["status"], list(sent[0]["headers"]), body


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory, origin) -> AsyncIterator[World]:
    data: Path = tmp_path_factory.mktemp("fastpath") / "data"
    config = Config(data_dir=data, workers=1, allow_fetch_cidrs=["127.0.0.0/8"])
    service = TaskService(config.validate())
    await service.start()
    fastapi = _Spy(create_app(service, manage_lifecycle=False))
    world = World(service, fastapi, FastPath(fastapi, service), {})
    blob = origin.url(origin.set_blob("page", b"<b>hi</b>", "text/html; charset=iso-8859-1"))
    hang = origin.url("/hang")
    for name, body in (
        ("factorial", {"type": "factorial", "n": 30}),
        ("fetched", {"type": "http-fetch", "url": blob}),
        ("running", {"type": "http-fetch", "url": hang, "timeout_ms": 60_000}),
        ("cancelled", {"type": "http-fetch", "url": hang, "timeout_ms": 60_000}),
    ):
        task, _ = await service.submit(orjson.dumps(body), "key-" + name)
        world.ids[name] = task.id
    await service.cancel(world.ids["cancelled"])

    def settled() -> bool:
        status = {n: service.queue.tasks[i].status.value for n, i in world.ids.items()}
        return status == {
            "factorial": "SUCCEEDED",
            "fetched": "SUCCEEDED",
            "running": "RUNNING",
            "cancelled": "FAILED",
        }

    assert await async_wait_for(settled, timeout=20), "tasks did not reach their states"
    yield world
    await service.stop()


JSON = ("Content-Type", "application/json")
SUBMIT = "/tasks/submissions"
ACCEPT_JSON = (("Accept", "application/json"),)
F1 = b'{"type":"factorial","n":1}'
# label, path ({name}: that task's id), headers
GETS: list[tuple[str, str, tuple]] = [
    ("status done", "/tasks/submissions/{factorial}", ()),
    ("status running", "/tasks/submissions/{running}", ()),
    ("status failed", "/tasks/submissions/{cancelled}", ()),
    ("status unknown 404", "/tasks/submissions/nope", ()),
    ("status odd id 404", "/tasks/submissions/a b%\u00e9", ()),
    ("result text", "/tasks/{factorial}", ()),
    ("result json", "/tasks/{factorial}", ACCEPT_JSON),
    ("result q", "/tasks/{factorial}", (("Accept", "application/json;q=0.4, text/plain"),)),
    ("result fetched", "/tasks/{fetched}", ()),
    ("result fetched json", "/tasks/{fetched}", ACCEPT_JSON),
    ("result failed", "/tasks/{cancelled}", ()),
    ("result 409", "/tasks/{running}", ()),
    ("result unknown 404", "/tasks/nope", ()),
    ("result 'submissions' 404", "/tasks/submissions", ()),
]
# label, headers, body chunks
POSTS: list[tuple[str, tuple, tuple[bytes, ...]]] = [
    ("bad json 400", (JSON,), (b"{not json",)),
    ("empty 400", (), (b"",)),
    ("array 422", (JSON,), (b"[1]",)),
    ("n string 422", (JSON,), (b'{"type":"factorial","n":"5"}',)),
    ("n bool 422", (JSON,), (b'{"type":"factorial","n":true}',)),
    ("n > max 422", (JSON,), (b'{"type":"factorial","n":99999}',)),
    ("extra field 422", (JSON,), (b'{"type":"factorial","n":1,"x":1}',)),
    ("bad url 422", (JSON,), (b'{"type":"http-fetch","url":"ftp://x/"}',)),
    ("unknown type 422", (JSON,), (b'{"type":"sleep"}',)),
    ("413 declared", (JSON, ("Content-Length", "99999")), (b"{}",)),
    ("413 streamed", (JSON,), (b'{"type":"factorial","x":"', *[b"x" * 4096] * 5)),
    ("key too long 422", (JSON, ("Idempotency-Key", "k" * 256)), (F1,)),
    (
        "replay 202",
        (JSON, ("Idempotency-Key", "key-factorial")),
        (b'{ "n":30,"type":"factorial"}',),
    ),
    ("key clash 422", (JSON, ("Idempotency-Key", "key-factorial")), (F1,)),
]
CASES = [(f"GET {c[0]}", "GET", c[1], c[2], (b"",)) for c in GETS] + [
    (f"POST {c[0]}", "POST", SUBMIT, c[1], c[2]) for c in POSTS
]


@pytest.mark.parametrize("label,method,path,headers,chunks", CASES, ids=[c[0] for c in CASES])
async def test_fast_path_answers_like_fastapi(
    world: World, label: str, method: str, path: str, headers: tuple, chunks: tuple
) -> None:
    path = path.format(**world.ids)
    before = world.fastapi.calls
    fast = await call(world.fast, method, path, headers, chunks)
    assert world.fastapi.calls == before, "the fast path handed a hot route over to FastAPI"
    slow = await call(world.fastapi, method, path, headers, chunks)
    assert fast == slow
    assert fast[0] < 500


async def test_full_queue_503_with_retry_after(world: World) -> None:
    body = (b'{"type":"factorial","n":3}',)
    world.service.config.max_queue = 0  # every submission now meets a full queue
    try:
        fast = await call(world.fast, "POST", "/tasks/submissions", (JSON,), body)
        slow = await call(world.fastapi, "POST", "/tasks/submissions", (JSON,), body)
    finally:
        world.service.config.max_queue = 10_000
    assert fast == slow
    assert fast[0] == 503 and (b"retry-after", b"1") in fast[1]


async def test_new_submission_202_differs_only_in_id_and_time(world: World) -> None:
    body = (b'{"type":"factorial","n":3}',)
    answers = [
        await call(door, "POST", "/tasks/submissions", (JSON,), body)
        for door in (world.fast, world.fastapi)
    ]
    docs = [orjson.loads(a[2]) for a in answers]
    for (status, headers, _), doc in zip(answers, docs, strict=True):
        assert status == 202
        assert (b"location", f"/tasks/submissions/{doc['id']}".encode()) in headers
        assert await world.service.get(doc["id"]) is not None  # stored, as the server sees it
    assert docs[0]["id"] != docs[1]["id"]
    for doc in docs:
        doc["id"] = doc["submitted_at"] = "-"
    assert docs[0] == docs[1]
    names = [[k for k, _ in a[1]] for a in answers]
    assert names[0] == names[1] == [b"location", b"content-length", b"content-type"]


@pytest.mark.parametrize(
    "method,path",
    [
        ("GET", "/tasks"),
        ("GET", "/healthz"),
        ("GET", "/openapi.json"),
        ("HEAD", "/tasks/submissions/nope"),
        ("GET", "/tasks/submissions/a/b"),
        ("DELETE", "/tasks/submissions/nope"),
    ],
)
async def test_other_requests_go_to_fastapi(world: World, method: str, path: str) -> None:
    before = world.fastapi.calls
    fast = await call(world.fast, method, path)
    assert world.fastapi.calls == before + 1
    assert fast[0] == (await call(world.fastapi, method, path))[0]


# --- through uvicorn's protocol: reads answered at once, byte for byte as the ASGI door ----

DATE = (b"date", b"Sun, 29 Nov 2026 03:00:00 GMT")


class _Counted(FastPath):
    """_Counted is the fast path, counting the requests that reached its ASGI door."""

    calls = 0

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        self.calls += 1
        await super().__call__(scope, receive, send)


@dataclass
class Wrote:
    """Wrote is what a connection was sent, whether it was closed, and whether its keep-alive
    timer was armed after the last answer."""

    data: bytes
    closed: bool
    armed: bool


def _get(path: str, headers: tuple = (), version: str = "1.1", quoted: bool = True) -> bytes:
    """_get is a GET request as a client writes it (its path percent-encoded when quoted)."""
    lines = [f"GET {quote(path, safe='/') if quoted else path} HTTP/{version}", "Host: x"]
    lines += [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _through(
    protocol_class: type, app: Any, raw: bytes, requests: int, then: Any = None
) -> Wrote:
    """_through feeds raw request bytes to a uvicorn protocol on a fake socket, as one read
    (then calls `then(protocol)`, if given, before anything was answered through the app)."""
    config = uvicorn_config(app)  # the server's own
    state = ServerState()
    state.default_headers = [DATE]
    real = FakeTransport()
    protocol = protocol_class(config=config, server_state=state, app_state={})
    protocol.connection_made(real)
    protocol.data_received(raw)
    if then is not None:
        then(protocol)
    assert await async_wait_for(lambda: state.total_requests == requests, timeout=10)
    for _ in range(3):  # OneSend's flush, at the end of the turn
        await asyncio.sleep(0)
    wrote = Wrote(b"".join(real.writes), real.closed, protocol.timeout_keep_alive_task is not None)
    protocol.connection_lost(None)
    return wrote


async def _doors(
    world: World, raw: bytes, requests: int, then: Any = None
) -> tuple[Wrote, Wrote, int]:
    """_doors: what HttpProtocol with the fast path sent, what uvicorn's own protocol with
    FastAPI sent (`--fast-path off`), and how many requests reached the fast path's ASGI door."""
    fast = _Counted(world.fastapi, world.service)
    ours = await _through(HttpProtocol, fast, raw, requests, then)
    plain = await _through(HttpToolsProtocol, world.fastapi, raw, requests, then)
    return ours, plain, fast.calls


@pytest.mark.parametrize("label,path,headers", GETS, ids=[c[0] for c in GETS])
async def test_reads_from_memory_are_answered_at_once_as_uvicorn_would(
    world: World, label: str, path: str, headers: tuple
) -> None:
    ours, plain, calls = await _doors(world, _get(path.format(**world.ids), headers), 1)
    assert ours == plain
    assert ours.data.startswith(b"HTTP/1.1 ") and not ours.closed and ours.armed
    # Every task here is in memory; an unknown id may be in storage: that is asked, not told.
    assert calls == (1 if "404" in label else 0), label


def _raw(*paths: str, headers: tuple = (), version: str = "1.1") -> bytes:
    """_raw: GETs of paths as written (no encoding), one after the other on one connection."""
    return b"".join(_get(p, headers, version, quoted=False) for p in paths)


@pytest.mark.parametrize(
    "label,raw,requests,through_asgi",
    [
        ("HTTP/1.0", _raw("/tasks/submissions/{factorial}", version="1.0"), 1, 0),
        ("connection close", _raw("/tasks/{factorial}", headers=(("Connection", "close"),)), 1, 0),
        ("a query", _raw("/tasks/submissions/{factorial}?x=1"), 1, 0),
        ("an id percent-encoded", _raw("/tasks/submissions/{encoded}"), 1, 0),
        ("HEAD", _raw("/tasks/{factorial}").replace(b"GET", b"HEAD", 1), 1, 1),
        ("a body", _raw("/tasks/{factorial}", headers=(("Content-Length", "2"),)) + b"xx", 1, 1),
        # Pipelined: a request behind one being answered through the app waits its turn there.
        ("pipelined", _raw("/tasks/{factorial}", "/tasks/nope", "/tasks/{cancelled}"), 3, 2),
        ("app first", _raw("/tasks/nope", "/tasks/{factorial}", "/tasks/{running}"), 3, 3),
    ],
)
async def test_the_connection_keeps_uvicorns_rules(
    world: World, label: str, raw: bytes, requests: int, through_asgi: int
) -> None:
    factorial = world.ids["factorial"]
    names = {**world.ids, "encoded": "".join(f"%{ord(c):02X}" for c in factorial)}
    for name, value in names.items():
        raw = raw.replace(f"{{{name}}}".encode(), value.encode())
    ours, plain, calls = await _doors(world, raw, requests)
    assert ours == plain, label
    assert ours.data.count(b"HTTP/1.1 ") == requests
    assert calls == through_asgi, label


# --- submissions answered from the protocol, once the store has them ---------------------

_ID = re.compile(rb"[0-9a-f]{32}")
_ANSWER = re.compile(rb"HTTP/1\.1 [2-5]\d\d ")  # a final answer, not a 100 Continue
_TIME = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def _post(body: bytes, headers: tuple = (), version: str = "1.1") -> bytes:
    """_post is a submission as a client writes it (Content-Length unless headers frame it)."""
    lines = [f"POST /tasks/submissions HTTP/{version}", "Host: x", "Content-Type: application/json"]
    if not any(k.lower() in ("transfer-encoding", "content-length") for k, _ in headers):
        lines.append(f"Content-Length: {len(body)}")
    lines += [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _same(wrote: Wrote) -> Wrote:
    """_same is what was written with each task id and time made alike (two doors, two tasks)."""
    data = _TIME.sub(b"<time>", _ID.sub(b"<id>", wrote.data))
    return Wrote(data, wrote.closed, wrote.armed)


F3 = b'{"type":"factorial","n":3}'


@pytest.mark.parametrize(
    "label,raw,requests,through_asgi",
    [
        ("stored 202", _post(F3), 1, 0),
        ("HTTP/1.0 202", _post(F3, version="1.0"), 1, 0),
        ("connection close", _post(F3, (("Connection", "close"),)), 1, 0),
        ("bad json 400", _post(b"{not json"), 1, 0),
        ("n > max 422", _post(b'{"type":"factorial","n":99999}'), 1, 0),
        ("fetch url 422", _post(b'{"type":"http-fetch","url":"ftp://x/"}'), 1, 0),
        # A request behind an unanswered one waits in uvicorn's pipeline, then goes through
        # the app; a submission whose turn comes is taken then, its body read meanwhile.
        ("pipelined behind it", _post(F3) + _raw("/tasks/{factorial}") + _post(F3), 3, 1),
        (
            "behind an app's answer",
            _raw("/tasks/nope") + _post(F3) + _raw("/tasks/{running}"),
            3,
            2,
        ),
        # Anything else goes through the app, which reads any framing.
        (
            "chunked",
            _post(b"1a\r\n" + F3 + b"\r\n0\r\n\r\n", (("Transfer-Encoding", "chunked"),)),
            1,
            1,
        ),
        ("declared past the limit", _post(F3, (("Content-Length", "99999"),))[: -len(F3)], 1, 1),
        ("100-continue", _post(F3, (("Expect", "100-continue"),)), 1, 1),
    ],
)
async def test_submissions_are_answered_from_the_protocol_as_uvicorn_would(
    world: World, label: str, raw: bytes, requests: int, through_asgi: int
) -> None:
    for name, value in world.ids.items():
        raw = raw.replace(f"{{{name}}}".encode(), value.encode())
    stored = world.service._seq
    ours, plain, calls = await _doors(world, raw, requests)
    assert _same(ours) == _same(plain), label
    assert len(_ANSWER.findall(ours.data)) == requests
    assert calls == through_asgi, label
    accepted = ours.data.count(b"HTTP/1.1 202 ")
    assert world.service._seq - stored == 2 * accepted  # each door stored its own
    for task_id in _ID.findall(ours.data)[:accepted]:
        task = world.service.get_now(task_id.decode())
        assert task is not None and await world.service.storage.get(task.id) is not None


async def test_a_submission_with_an_idempotency_key_goes_through_the_app(world: World) -> None:
    """An Idempotency-Key may need the store to decide (a replay, a clash): the app awaits it."""
    fast = _Counted(world.fastapi, world.service)
    first = await _through(HttpProtocol, fast, _post(F3, (("Idempotency-Key", "k-proto"),)), 1)
    again = await _through(HttpProtocol, fast, _post(F3, (("Idempotency-Key", "k-proto"),)), 1)
    assert fast.calls == 2
    assert first.data.startswith(b"HTTP/1.1 202 ") and b"idempotent-replayed" not in first.data
    assert b"idempotent-replayed: true" in again.data
    assert _ID.findall(first.data)[0] == _ID.findall(again.data)[0]


async def test_a_full_queue_is_answered_503_from_the_protocol(world: World) -> None:
    world.service.config.max_queue = 0
    try:
        ours, plain, calls = await _doors(world, _post(F3), 1)
    finally:
        world.service.config.max_queue = 10_000
    assert ours == plain and calls == 0
    assert ours.data.startswith(b"HTTP/1.1 503 ") and b"retry-after: 1\r\n" in ours.data


async def test_a_body_past_uvicorns_high_water_mark_is_read_whole(world: World) -> None:
    """uvicorn's cycle stops reading a body past 64 KiB until the app receive()s it; a taken
    submission has no app to receive it, so it is read whole (a server that allows larger
    bodies must not hang on one). Fed in 8 KiB reads, as a socket would, while reading is on."""
    raw = _post(b'{"type":"factorial","n":1,"pad":"' + b"x" * 100_000 + b'"}')
    world.service.config.max_body_bytes = 200_000  # read per request by the fast path's doors
    config = uvicorn_config(_Counted(world.fastapi, world.service))
    state = ServerState()
    real = FakeTransport()
    protocol = HttpProtocol(config=config, server_state=state, app_state={})
    protocol.connection_made(real)
    fed = 0
    try:
        while fed < len(raw) and not protocol.flow.read_paused:
            protocol.data_received(raw[fed : fed + 8192])
            fed += 8192
        answered = await async_wait_for(lambda: state.total_requests == 1, timeout=5)
    finally:
        world.service.config.max_body_bytes = Config().max_body_bytes
        protocol.connection_lost(None)
    assert fed >= len(raw), f"reading paused after {fed} of {len(raw)} bytes"
    assert answered and b"".join(real.writes).startswith(b"HTTP/1.1 422 ")
    assert config.loaded_app.calls == 0


async def test_a_failure_after_the_commit_is_answered_as_uvicorn_answers_an_app_error(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever fails once the task is stored reaches the client as it would through the fast
    path's ASGI door (uvicorn's 500, connection closed), not as a request left unanswered."""

    def kick() -> None:
        raise RuntimeError("the executor is gone")

    monkeypatch.setattr(world.service.executor, "kick", kick)
    fast = _Counted(world.fastapi, world.service)
    ours = await _through(HttpProtocol, fast, _post(F3), 1)
    door = await _through(HttpToolsProtocol, FastPath(world.fastapi, world.service), _post(F3), 1)
    assert ours == door and fast.calls == 0
    assert ours.data.startswith(b"HTTP/1.1 500 ") and ours.closed


async def test_a_shutdown_while_it_is_stored_closes_after_the_answer(world: World) -> None:
    ours, plain, calls = await _doors(world, _post(F3), 1, then=lambda p: p.shutdown())
    assert _same(ours) == _same(plain) and calls == 0
    assert b"connection: close\r\n" in ours.data and ours.closed and not ours.armed


async def test_a_client_gone_before_the_commit_leaves_its_task_stored_and_cached(
    world: World,
) -> None:
    config = uvicorn_config(FastPath(world.fastapi, world.service))
    real = FakeTransport()
    protocol = HttpProtocol(config=config, server_state=ServerState(), app_state={})
    protocol.connection_made(real)
    seq = world.service._seq
    protocol.data_received(_post(F3))
    protocol.connection_lost(None)  # before the writer thread has committed it
    assert await async_wait_for(lambda: world.service.queue.reserved == 0, timeout=10)
    stored = await world.service.storage.list(None, after_seq=seq, limit=10)
    assert [t.seq for t in stored] == [seq + 1]
    assert world.service.get_now(stored[0].id) is not None  # cached, as a shielded submit
    assert real.writes == []
