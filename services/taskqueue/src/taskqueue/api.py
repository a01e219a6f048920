"""API: the HTTP face of TaskService (FastAPI; OpenAPI at /docs and /openapi.json).

The three hot routes (submit, status, result) decide nothing here: they read the request
and send the `Reply` that `replies` computes, the same one the raw-ASGI fast path
(fastpath.py) sends, so both doors answer byte for byte alike. These routes remain for the
OpenAPI document and for `--fast-path off`. Every error body is `{"error", "field"}`.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from taskqueue import replies
from taskqueue.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from taskqueue.models import Task, TaskStatus
from taskqueue.replies import IDEMPOTENCY_KEY_MAX, JSON, Reply
from taskqueue.service import NotCancellable, TaskService
from taskqueue.storage import StorageUnavailable
from taskqueue.submission import request_schema

MAX_LIST_LIMIT = 1000


class ReplyResponse(Response):
    """ReplyResponse sends a Reply's status, raw headers and body exactly as the fast path does."""

    def __init__(self, answer: Reply) -> None:
        self.status_code, self.raw_headers, self.body = answer
        self.background = None


def _error(
    status: int, message: str, field: str | None = None, headers: dict[str, str] | None = None
) -> Response:
    extra = tuple((k.lower().encode(), v.encode()) for k, v in (headers or {}).items())
    return ReplyResponse(replies.error(status, message, field, extra))


def _task(task: Task, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(task.json(), status, headers=headers, media_type=JSON)


def _error_schema(description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "description": description,
        "content": {
            JSON: {
                "schema": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {
                        "error": {"type": "string"},
                        "field": {"type": ["string", "null"]},
                    },
                }
            }
        },
    }
    if headers:
        doc["headers"] = headers
    return doc


_TASK_SCHEMA: dict[str, Any] = {
    "content": {
        JSON: {
            "schema": {
                "type": "object",
                "required": [
                    "id",
                    "type",
                    "status",
                    "submitted_at",
                    "started_at",
                    "finished_at",
                    "attempts",
                    "error",
                ],
                "properties": {
                    "id": {"type": "string"},
                    "type": {"type": "string", "enum": ["factorial", "http-fetch"]},
                    "status": {"type": "string", "enum": [s.value for s in TaskStatus]},
                    "submitted_at": {"type": "string", "format": "date-time"},
                    "started_at": {"type": ["string", "null"], "format": "date-time"},
                    "finished_at": {"type": ["string", "null"], "format": "date-time"},
                    "attempts": {"type": "integer"},
                    "error": {"type": ["string", "null"]},
                },
            }
        }
    }
}
_RETRY_AFTER = {
    "Retry-After": {
        "schema": {"type": "integer"},
        "description": "Seconds to wait before retrying.",
    }
}


# FastAPI >= 0.165 asks OpenTelemetry on every request whether it is configured (~40 us
# per request here). The service reports through /metrics, so switch that off where the
# option exists.
_NO_OTEL: dict[str, Any] = (
    {"telemetry": {"tracing": False, "metrics": False, "logs": False}}
    if "telemetry" in inspect.signature(FastAPI.__init__).parameters
    else {}
)


def _body_schema() -> dict[str, Any]:
    schema = request_schema()
    schema.pop("$defs", None)
    return schema


def _links() -> dict[str, Any]:
    """_links tell OpenAPI clients (and schemathesis' stateful phase) where a new task's id goes."""
    by_id = {"task_id": "$response.body#/id"}
    return {
        name: {"operationId": op, "parameters": by_id}
        for name, op in (
            ("GetStatus", "get_status"),
            ("GetResult", "get_result"),
            ("Cancel", "cancel_task"),
        )
    }


def create_app(service: TaskService, manage_lifecycle: bool = True) -> FastAPI:
    """create_app builds the FastAPI application around a TaskService.

    With manage_lifecycle the app's lifespan starts and stops the service (for embedding
    and test clients); the CLI server starts it itself to report start-up errors cleanly.
    """

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if manage_lifecycle:
            await service.start()
        try:
            yield
        finally:
            if manage_lifecycle:
                await service.stop()

    app = FastAPI(
        title="taskqueue",
        version="0.1.0",
        lifespan=lifespan,
        description="Durable asynchronous task queue: factorial and http-fetch tasks.",
        **_NO_OTEL,
    )
    _add_error_handlers(app)
    _add_submit_route(app, service)
    _add_status_routes(app, service)
    _add_result_route(app, service)
    _add_list_route(app, service)
    _add_ops_routes(app, service)
    _publish_body_schemas(app)
    return app


def _publish_body_schemas(app: FastAPI) -> None:
    """_publish_body_schemas puts the submission models into components.schemas.

    The request body is declared by hand (the route parses it itself), so FastAPI does
    not know its sub-schemas; without this the body's $refs would dangle.
    """
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = generate()
            schemas = doc.setdefault("components", {}).setdefault("schemas", {})
            schemas.update(request_schema().get("$defs", {}))
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> Response:
        err = exc.errors()[0] if exc.errors() else {}
        loc = [str(p) for p in err.get("loc", ()) if p not in ("query", "path", "header", "body")]
        field = ".".join(loc) or None
        return _error(
            422,
            f"{field}: {err.get('msg', 'invalid')}" if field else str(err.get("msg", "invalid")),
            field,
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> Response:
        return _error(exc.status_code, str(exc.detail), headers=getattr(exc, "headers", None))


def _add_submit_route(app: FastAPI, service: TaskService) -> None:
    limit = service.config.max_body_bytes

    @app.post(
        "/tasks/submissions",
        status_code=202,
        summary="Submit a task",
        operation_id="submit_task",
        responses={
            202: {
                **_TASK_SCHEMA,
                "description": "Stored durably and queued",
                "links": _links(),
                "headers": {"Location": {"schema": {"type": "string"}}},
            },
            400: _error_schema("Malformed JSON"),
            413: _error_schema("Body too large"),
            422: _error_schema("Invalid field (named in `field`)"),
            503: _error_schema("Queue full: nothing stored", _RETRY_AFTER),
        },
        openapi_extra={
            "requestBody": {"required": True, "content": {JSON: {"schema": _body_schema()}}},
            "parameters": [
                {
                    "name": "Idempotency-Key",
                    "in": "header",
                    "required": False,
                    "schema": {"type": "string", "maxLength": IDEMPOTENCY_KEY_MAX},
                }
            ],
        },
    )
    async def submit(request: Request) -> Response:
        declared = request.headers.get("content-length")
        body = await replies.read_body(request.stream(), declared, limit)
        key = request.headers.get("idempotency-key")
        return ReplyResponse(await replies.submit(service, body, key))


def _add_status_routes(app: FastAPI, service: TaskService) -> None:
    @app.get(
        "/tasks/submissions/{task_id}",
        summary="Task status",
        operation_id="get_status",
        responses={200: _TASK_SCHEMA, 404: _error_schema("Unknown task")},
    )
    async def status(task_id: str) -> Response:
        return ReplyResponse(await replies.status(service, task_id))

    @app.delete(
        "/tasks/submissions/{task_id}",
        summary="Cancel a queued or running task",
        operation_id="cancel_task",
        responses={
            200: {
                **_TASK_SCHEMA,
                "description": "Cancelled: the task is now FAILED with error 'cancelled' "
                "(repeating the DELETE answers the same)",
            },
            404: _error_schema("Unknown task"),
            409: _error_schema("Already finished"),
        },
    )
    async def cancel(task_id: str) -> Response:
        try:
            task = await service.cancel(task_id)
        except StorageUnavailable as exc:
            return ReplyResponse(replies.unavailable(service, exc))
        except NotCancellable as exc:
            return _error(409, f"task already {exc.task.status.value}", "task_id")
        if task is None:
            return ReplyResponse(replies.not_found(task_id))
        return _task(task)


def _add_result_route(app: FastAPI, service: TaskService) -> None:
    @app.get(
        "/tasks/{task_id}",
        summary="Task result",
        operation_id="get_result",
        responses={
            200: {
                "description": "SUCCEEDED: the result (factorial digits as text/plain, or JSON "
                '{"result"} when asked for; http-fetch content with its Content-Type). '
                "FAILED: JSON {id, status, error}.",
                "content": {
                    "text/plain": {"schema": {"type": "string"}},
                    JSON: {"schema": {"type": "object"}},
                    "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
                },
            },
            404: _error_schema("Unknown task"),
            409: _error_schema("Not finished yet", _RETRY_AFTER),
        },
    )
    async def result(task_id: str, request: Request) -> Response:
        accept = request.headers.get("accept", "")
        return ReplyResponse(await replies.result(service, task_id, accept))


def _add_list_route(app: FastAPI, service: TaskService) -> None:
    @app.get(
        "/tasks",
        summary="List tasks (keyset pagination, oldest first)",
        operation_id="list_tasks",
        responses={
            200: {
                "content": {
                    JSON: {
                        "schema": {
                            "type": "object",
                            "properties": {
                                "tasks": {
                                    "type": "array",
                                    "items": _TASK_SCHEMA["content"][JSON]["schema"],
                                },
                                "next_cursor": {"type": ["string", "null"]},
                            },
                        }
                    }
                }
            },
            400: _error_schema("Bad cursor"),
            422: _error_schema("Bad query parameter"),
        },
    )
    async def list_tasks(
        status: TaskStatus | None = None,
        limit: int = Query(100, ge=1, le=MAX_LIST_LIMIT),
        cursor: str | None = Query(
            None, max_length=20, description="next_cursor of the previous page"
        ),
    ) -> Response:
        after = 0
        if cursor is not None:
            if not cursor.isascii() or not cursor.isdigit():
                return _error(400, "cursor: not a cursor returned by this API", "cursor")
            after = int(cursor)
        try:
            tasks = await service.list(status, after, limit + 1)
        except StorageUnavailable as exc:
            return ReplyResponse(replies.unavailable(service, exc))
        more = len(tasks) > limit
        tasks = tasks[:limit]
        next_cursor = str(tasks[-1].seq) if more else None
        return Response(
            orjson.dumps({"tasks": [t.view() for t in tasks], "next_cursor": next_cursor}),
            media_type=JSON,
        )


def _add_ops_routes(app: FastAPI, service: TaskService) -> None:
    @app.get(
        "/healthz",
        summary="Liveness and storage health",
        responses={200: {"description": "Healthy"}, 503: {"description": "Storage cannot commit"}},
    )
    async def healthz() -> Response:
        ok = service.healthy()
        body = {
            "status": "ok" if ok else "unhealthy",
            "pid": os.getpid(),
            "tasks": service.depth_by_status(),
            "max_queue": service.config.max_queue,
        }
        return Response(orjson.dumps(body), 200 if ok else 503, media_type=JSON)

    @app.get(
        "/metrics", summary="Prometheus metrics", responses={200: {"content": {"text/plain": {}}}}
    )
    async def metrics() -> Response:
        return Response(service.metrics.render(), headers={"Content-Type": METRICS_CONTENT_TYPE})
