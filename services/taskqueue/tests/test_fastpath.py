"""Fast path vs FastAPI: the same request through both doors gets the same bytes back.

One in-process TaskService; each request goes once through `FastPath` (raw ASGI) and once
straight to the FastAPI app (what `--fast-path off` serves), and the ASGI messages (status,
raw headers in order, body) are compared. A spy on the FastAPI app proves that the fast
path answered the hot routes itself, and that it hands everything else over.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
import pytest_asyncio
from origin import async_wait_for
from taskqueue.api import create_app
from taskqueue.config import Config
from taskqueue.fastpath import FastPath
from taskqueue.service import TaskService

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
