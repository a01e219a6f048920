"""Fastpath: raw ASGI in front of the FastAPI app for the three hot routes.

Submissions, status polls and result reads are nearly all of the traffic. Through FastAPI
each pays about ten ASGI middleware layers and dependency solving for one path parameter:
~45% of the event loop in the seed-000 mix, against < 10% for the endpoints themselves.
Here those routes cost a path split and a header scan. The answers come from `replies`,
the same functions the FastAPI routes call, so both doors give byte-identical responses;
every other request (other methods or paths, a root_path, lifespan) goes to FastAPI.
A read that memory answers (`at_once`) does not even reach the ASGI door: the HTTP
protocol (transport.py) answers it as it parses it; so does a plain submission
(`takes_submission`, `submit_now`), once the store has it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from taskqueue import replies
from taskqueue.service import TaskService

Scope = dict[str, Any]
_SUBMISSIONS = "/tasks/submissions"
_TASKS = "/tasks/"
_STATUS = "/tasks/submissions/"


class _Disconnected(Exception):
    """_Disconnected: the client left before its request body arrived; nothing to answer."""


class FastPath:
    """FastPath is an ASGI app serving the hot routes itself and passing the rest to `app`."""

    def __init__(self, app: Any, service: TaskService) -> None:
        self.app = app
        self.service = service
        self._stores_now = service.submits_then

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        """__call__ routes one ASGI connection scope (the ASGI 3 interface)."""
        if scope["type"] == "http" and not scope.get("root_path"):
            method, path = scope["method"], scope["path"]
            if method == "GET":
                answer = await self._get(scope, path)
                if answer is not None:
                    await _send(send, answer)
                    return
            elif method == "POST" and path == _SUBMISSIONS:
                await self._submit(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def at_once(self, path: str, headers: replies.RawHeaders) -> replies.Reply | None:
        """at_once is the answer to `GET path` when it needs no wait (the task, and its result,
        are in this server's memory), else None: the request then comes through `__call__`.

        The HTTP protocol (transport.py) asks it while parsing, so that a poll answered from
        memory costs no ASGI cycle, task or coroutine; headers are the request's, lower-cased.
        """
        hot = _route(path)
        if hot is None:
            return None
        is_status, task_id = hot
        if is_status:
            return replies.status_now(self.service, task_id)
        return replies.result_now(self.service, task_id, _find(headers, b"accept") or "")

    def takes_submission(self, path: str, headers: Iterable[tuple[bytes, bytes]]) -> bool:
        """takes_submission: whether `submit_now` answers `POST path` with these headers (lower-
        cased names): a submission without an Idempotency-Key, its body's length declared and
        within the limit, on a store that stores without a coroutine. Any other POST comes
        through `__call__`, which reads bodies of any framing and awaits idempotency."""
        if path != _SUBMISSIONS or not self._stores_now:
            return False
        declared = None
        for name, value in headers:
            if name in (b"idempotency-key", b"transfer-encoding"):
                return False
            if name == b"content-length":
                if declared is not None:
                    return False
                declared = value
        return (
            declared is not None
            and declared.isdigit()
            and int(declared) <= self.service.config.max_body_bytes
        )

    def submit_now(
        self, body: bytes, respond: Callable[[replies.Reply | BaseException], None]
    ) -> replies.Reply | None:
        """submit_now answers a submission `takes_submission` took, its body whole: the answer
        if known at once, else None and `respond` gets it once the task is durable."""
        return replies.submit_now(self.service, body, respond)

    async def _get(self, scope: Scope, path: str) -> replies.Reply | None:
        hot = _route(path)
        if hot is None:
            return None
        is_status, task_id = hot
        if is_status:
            return await replies.status(self.service, task_id)
        return await replies.result(self.service, task_id, _header(scope, b"accept") or "")

    async def _submit(self, scope: Scope, receive: Any, send: Any) -> None:
        declared = _header(scope, b"content-length")
        limit = self.service.config.max_body_bytes
        try:
            body = await replies.read_body(_chunks(receive), declared, limit)
        except _Disconnected:
            return
        key = _header(scope, b"idempotency-key")
        await _send(send, await replies.submit(self.service, body, key))


def _route(path: str) -> tuple[bool, str] | None:
    """_route is (is it a status read, task id) for a hot GET path, None for any other path.
    Starlette's `{task_id}` matches one non-empty segment; anything else goes to FastAPI."""
    if path.startswith(_STATUS):
        is_status, task_id = True, path[len(_STATUS) :]
    elif path.startswith(_TASKS):
        is_status, task_id = False, path[len(_TASKS) :]
    else:
        return None
    if not task_id or "/" in task_id:
        return None
    return is_status, task_id


def _header(scope: Scope, name: bytes) -> str | None:
    """_header is the first value of a header, decoded as Starlette does (latin-1)."""
    return _find(scope["headers"], name)


def _find(headers: replies.RawHeaders, name: bytes) -> str | None:
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None


async def _chunks(receive: Any) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise _Disconnected
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return


async def _send(send: Any, answer: replies.Reply) -> None:
    await send({"type": "http.response.start", "status": answer.status, "headers": answer.headers})
    await send({"type": "http.response.body", "body": answer.body})
