"""Replies: what the hot routes answer, decided once for both front doors.

The FastAPI routes (api.py: OpenAPI, and every other route) and the raw-ASGI fast path
(fastpath.py) only parse requests and put bytes on the wire. The decisions (body limit,
validation, idempotency, admission control, status and result semantics) and the exact
status, headers and body of every answer are made here, so the two doors cannot drift.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import NamedTuple

import orjson

from taskqueue.models import Task, TaskStatus, TaskType
from taskqueue.service import Overloaded, TaskService
from taskqueue.storage import Result, StorageUnavailable
from taskqueue.submission import SubmissionError

JSON = "application/json"
BINARY = "application/octet-stream"
IDEMPOTENCY_KEY_MAX = 255
"""IDEMPOTENCY_KEY_MAX is the longest Idempotency-Key accepted (characters)."""

RawHeaders = list[tuple[bytes, bytes]]
_JSON_TYPE = (b"content-type", JSON.encode())
# Fetched content is foreign: never let a browser run it as this origin's page.
_FOREIGN = ((b"x-content-type-options", b"nosniff"), (b"content-security-policy", b"sandbox"))


class Reply(NamedTuple):
    """Reply is a complete HTTP answer: status, raw headers in wire order, body.

    The header order is Starlette's (the route's own headers, then content-length, then
    content-type), so a Reply sent raw and one sent through a Starlette Response match.
    """

    status: int
    headers: RawHeaders
    body: bytes


def reply(
    status: int,
    body: bytes,
    extra: tuple[tuple[bytes, bytes], ...] = (),
    content_type: tuple[bytes, bytes] | None = _JSON_TYPE,
) -> Reply:
    """reply builds a Reply with content-length (and a JSON content-type unless told otherwise)."""
    headers = [*extra, (b"content-length", str(len(body)).encode())]
    if content_type is not None:
        headers.append(content_type)
    return Reply(status, headers, body)


def error(
    status: int, message: str, field: str | None = None, extra: tuple[tuple[bytes, bytes], ...] = ()
) -> Reply:
    """error is the JSON error document `{"error", "field"}` every failure answers with."""
    return reply(status, orjson.dumps({"error": message, "field": field}), extra)


def unavailable(service: TaskService, exc: StorageUnavailable) -> Reply:
    """unavailable is the 503 of a request the store cannot serve now (database away)."""
    service.metrics.rejections.labels("storage_unavailable").inc()
    return error(503, str(exc), extra=((b"retry-after", b"1"),))


def not_found(task_id: str) -> Reply:
    """not_found is the 404 of an unknown task id."""
    return error(404, f"no task {task_id}", "task_id")


async def read_body(chunks: AsyncIterator[bytes], declared: str | None, limit: int) -> bytes | None:
    """read_body returns the body, or None once it passes limit (declared or read)."""
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    parts = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
    return b"".join(parts)


async def submit(service: TaskService, body: bytes | None, key: str | None) -> Reply:
    """submit answers POST /tasks/submissions; body is None when it passed the size limit."""
    if body is None:
        return _too_large(service)
    if key is not None and not 0 < len(key) <= IDEMPOTENCY_KEY_MAX:
        return error(
            422, f"Idempotency-Key must be 1..{IDEMPOTENCY_KEY_MAX} characters", "Idempotency-Key"
        )
    try:
        task, created = await service.submit(body, key)
    except (SubmissionError, Overloaded) as exc:
        return _refused(service, exc)
    except StorageUnavailable as exc:  # whether it was stored is unknown: Idempotency-Key
        return unavailable(service, exc)
    return _accepted(task, created)


def submit_now(
    service: TaskService, body: bytes | None, respond: Callable[[Reply | BaseException], None]
) -> Reply | None:
    """submit_now is `submit` without an Idempotency-Key for the HTTP protocol, which answers
    as it parses (transport.py): the answer when it is known at once, else None, and
    `respond` is given the answer once the task is durable (or what `submit` would have
    raised: the protocol answers that as uvicorn answers an app's exception). The store
    service must `submits_then`."""
    if body is None:
        return _too_large(service)

    def stored(outcome: Task | BaseException) -> None:
        if isinstance(outcome, Task):
            respond(_accepted(outcome, True))
        elif isinstance(outcome, StorageUnavailable):
            respond(unavailable(service, outcome))
        else:
            respond(outcome)

    try:
        service.submit_then(body, stored)
    except (SubmissionError, Overloaded) as exc:
        return _refused(service, exc)
    except StorageUnavailable as exc:
        return unavailable(service, exc)
    return None


def _too_large(service: TaskService) -> Reply:
    service.metrics.rejections.labels("too_large").inc()
    return error(413, f"body larger than {service.config.max_body_bytes} bytes")


def _refused(service: TaskService, exc: SubmissionError | Overloaded) -> Reply:
    """_refused is the answer to a submission refused before it was stored."""
    if isinstance(exc, Overloaded):
        return error(503, str(exc), extra=((b"retry-after", str(exc.retry_after).encode()),))
    if exc.field != "Idempotency-Key":
        service.metrics.rejections.labels("invalid").inc()
    return reply(exc.status, exc.body())


def _accepted(task: Task, created: bool) -> Reply:
    """_accepted is the 202 of a stored submission (or of its Idempotency-Key replay)."""
    location = (b"location", f"/tasks/submissions/{task.id}".encode())
    if created:
        return reply(202, task.json(), (location,))
    return reply(202, task.json(), (location, (b"idempotent-replayed", b"true")))


def status_now(service: TaskService, task_id: str) -> Reply | None:
    """status_now is status's answer when memory alone decides it (the task is cached, on a
    store whose cache is to be trusted: `TaskService.get_now`); None: await `status`."""
    task = service.get_now(task_id)
    return None if task is None else reply(200, task.json())


async def status(service: TaskService, task_id: str) -> Reply:
    """status answers GET /tasks/submissions/{id}: the task's status document, or 404."""
    try:
        task = await service.get(task_id)
    except StorageUnavailable as exc:
        return unavailable(service, exc)
    if task is None:
        return not_found(task_id)
    return reply(200, task.json())


def result_now(service: TaskService, task_id: str, accept: str) -> Reply | None:
    """result_now is result's answer when memory alone decides it (the task is cached, and
    so is its result when it SUCCEEDED); None: await `result`."""
    task = service.get_now(task_id)
    if task is None:
        return None
    if task.status is not TaskStatus.SUCCEEDED:
        return _unsucceeded(task)
    stored = service.result_now(task_id)
    return None if stored is None else _succeeded(task, stored, accept)


async def result(service: TaskService, task_id: str, accept: str) -> Reply:
    """result answers GET /tasks/{id}: the result, FAILED's error, 409 when unfinished, or 404."""
    try:
        return await _result(service, task_id, accept)
    except StorageUnavailable as exc:
        return unavailable(service, exc)


async def _result(service: TaskService, task_id: str, accept: str) -> Reply:
    task = await service.get(task_id)
    if task is None:
        return not_found(task_id)
    if task.status is not TaskStatus.SUCCEEDED:
        return _unsucceeded(task)
    stored = await service.result(task_id)
    if stored is None:  # removed by TTL cleanup between the two reads
        return not_found(task_id)
    return _succeeded(task, stored, accept)


def _unsucceeded(task: Task) -> Reply:
    """_unsucceeded is the result read of a task that did not succeed: FAILED's error, or 409
    while it has not finished."""
    if task.status is TaskStatus.FAILED:
        doc = {"id": task.id, "status": task.status.value, "error": task.error}
        return reply(200, orjson.dumps(doc))
    doc = {"id": task.id, "status": task.status.value, "error": "task has not finished"}
    return reply(409, orjson.dumps(doc), ((b"retry-after", b"1"),))


def _succeeded(task: Task, stored: Result, accept: str) -> Reply:
    """_succeeded is the result read of a SUCCEEDED task: its bytes, as Accept prefers them."""
    if task.type is TaskType.FACTORIAL and prefers_json(accept):
        return reply(200, b'{"result":"' + stored.body + b'"}')
    ctype = (b"content-type", (stored.content_type or BINARY).encode("latin-1"))
    return reply(200, stored.body, (ctype, *_FOREIGN), content_type=None)


def prefers_json(accept: str) -> bool:
    """prefers_json: does the Accept header rank application/json above text/plain?"""
    best_json = best_text = -1.0
    for part in accept.split(","):
        media, _, params = part.strip().partition(";")
        q = 1.0
        for p in params.split(";"):
            k, _, v = p.strip().partition("=")
            if k == "q":
                try:
                    q = float(v)
                except ValueError:
                    q = 0.0
        media = media.strip().lower()
        if media == JSON:
            best_json = max(best_json, q)
        elif media in ("text/plain", "text/*"):
            best_text = max(best_text, q)
    return best_json > 0 and best_json > best_text
