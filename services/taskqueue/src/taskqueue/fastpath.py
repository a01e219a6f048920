"""Fastpath: raw ASGI in front of the FastAPI app for the three hot routes.

Submissions, status polls and result reads are nearly all of the traffic. Through FastAPI
each pays about ten ASGI middleware layers and dependency solving for one path parameter:
~45% of the event loop in the seed-000 mix, against < 10% for the endpoints themselves.
Here those routes cost a path split and a header scan. The answers come from `replies`,
the same functions the FastAPI routes call, so both doors give byte-identical responses;
every other request (other methods or paths, a root_path, lifespan) goes to FastAPI.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
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

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        """__call__ routes one ASGI connection scope (the ASGI 3 interface)."""
        if scope["type"] == "http" and not scope.get("root_path"):
            method, path = scope["method"], scope["path"]
            if method == "GET" and path.startswith(_TASKS):
                answer = await self._get(scope, path)
                if answer is not None:
                    await _send(send, answer)
                    return
            elif method == "POST" and path == _SUBMISSIONS:
                await self._submit(scope, receive, send)
                return
        await self.app(scope, receive, send)

    async def _get(self, scope: Scope, path: str) -> replies.Reply | None:
        # Starlette's `{task_id}` matches one non-empty segment; anything else falls through.
        if path.startswith(_STATUS):
            task_id = path[len(_STATUS) :]
            if task_id and "/" not in task_id:
                return await replies.status(self.service, task_id)
            return None
        task_id = path[len(_TASKS) :]
        if task_id and "/" not in task_id:
            return await replies.result(self.service, task_id, _header(scope, b"accept") or "")
        return None

    async def _submit(self, scope: Scope, receive: Any, send: Any) -> None:
        declared = _header(scope, b"content-length")
        limit = self.service.config.max_body_bytes
        try:
            body = await replies.read_body(_chunks(receive), declared, limit)
        except _Disconnected:
            return
        key = _header(scope, b"idempotency-key")
        await _send(send, await replies.submit(self.service, body, key))


def _header(scope: Scope, name: bytes) -> str | None:
    """_header is the first value of a header, decoded as Starlette does (latin-1)."""
    for key, value in scope["headers"]:
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
