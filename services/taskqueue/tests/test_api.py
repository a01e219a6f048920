"""API contract: every endpoint and status code, against a real server on 127.0.0.1 port 0."""

from __future__ import annotations

import math
import sys
import uuid

import httpx
import pytest
from conftest import submit, wait_final

STATUS_FIELDS = {
    "id",
    "type",
    "status",
    "submitted_at",
    "started_at",
    "finished_at",
    "attempts",
    "error",
}


def test_submit_returns_202_location_and_queued_document(client: httpx.Client) -> None:
    r = submit(client, {"type": "factorial", "n": 5})
    assert r.status_code == 202
    doc = r.json()
    assert set(doc) == STATUS_FIELDS
    assert doc["status"] == "QUEUED" and doc["attempts"] == 0 and doc["type"] == "factorial"
    assert r.headers["location"] == f"/tasks/submissions/{doc['id']}"
    assert client.get(r.headers["location"]).json()["id"] == doc["id"]


@pytest.mark.parametrize("n", [0, 1, 20, 1000, 20000])
def test_factorial_matches_python(client: httpx.Client, n: int) -> None:
    sys.set_int_max_str_digits(0)
    task_id = submit(client, {"type": "factorial", "n": n}).json()["id"]
    done = wait_final(client, task_id)
    assert done["status"] == "SUCCEEDED", done
    assert done["attempts"] == 1 and done["started_at"] and done["finished_at"]
    r = client.get(f"/tasks/{task_id}")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert r.text == str(math.factorial(n))
    r = client.get(f"/tasks/{task_id}", headers={"Accept": "application/json"})
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {"result": str(math.factorial(n))}


@pytest.mark.parametrize(
    "accept,json_wanted",
    [
        ("*/*", False),
        ("text/plain", False),
        ("application/json", True),
        ("text/plain;q=0.5, application/json", True),
        ("application/json;q=0.4, text/plain;q=0.9", False),
    ],
)
def test_result_content_negotiation(client: httpx.Client, accept: str, json_wanted: bool) -> None:
    task_id = submit(client, {"type": "factorial", "n": 10}).json()["id"]
    wait_final(client, task_id)
    r = client.get(f"/tasks/{task_id}", headers={"Accept": accept})
    assert r.status_code == 200
    assert (r.headers["content-type"] == "application/json") is json_wanted
    assert "3628800" in r.text


@pytest.mark.parametrize(
    "label,body,status,field",
    [
        ("malformed json", b"{not json", 400, None),
        ("not an object", b"[1,2]", 422, None),
        ("missing type", b'{"n": 3}', 422, "type"),
        ("unknown type", b'{"type": "sleep", "n": 3}', 422, "type"),
        ("missing n", b'{"type": "factorial"}', 422, "n"),
        ("n negative", b'{"type": "factorial", "n": -1}', 422, "n"),
        ("n over max", b'{"type": "factorial", "n": 20001}', 422, "n"),
        ("n string", b'{"type": "factorial", "n": "5"}', 422, "n"),
        ("n float", b'{"type": "factorial", "n": 5.5}', 422, "n"),
        ("n bool", b'{"type": "factorial", "n": true}', 422, "n"),
        ("extra field", b'{"type": "factorial", "n": 5, "x": 1}', 422, "x"),
        ("missing url", b'{"type": "http-fetch"}', 422, "url"),
        ("bad scheme", b'{"type": "http-fetch", "url": "ftp://example.com/"}', 422, "url"),
        ("not a url", b'{"type": "http-fetch", "url": "hello"}', 422, "url"),
        (
            "timeout zero",
            b'{"type": "http-fetch", "url": "http://example.com/", "timeout_ms": 0}',
            422,
            "timeout_ms",
        ),
        (
            "hedge >= timeout",
            b'{"type": "http-fetch", "url": "http://example.com/", "timeout_ms": 100,'
            b' "hedge_after_ms": 100}',
            422,
            "hedge_after_ms",
        ),
        ("empty body", b"", 400, None),
    ],
)
def test_invalid_submission_names_the_field(
    client: httpx.Client, label: str, body: bytes, status: int, field: str | None
) -> None:
    before = client.get("/tasks", params={"limit": 1000}).json()["tasks"]
    r = client.post(
        "/tasks/submissions", content=body, headers={"Content-Type": "application/json"}
    )
    assert r.status_code == status, (label, r.text)
    doc = r.json()
    assert doc["field"] == field and doc["error"], label
    after = client.get("/tasks", params={"limit": 1000}).json()["tasks"]
    assert len(after) == len(before), "a rejected submission must store nothing"


def test_body_over_limit_is_413(client: httpx.Client) -> None:
    url = "http://example.com/" + "a" * 20_000
    r = client.post("/tasks/submissions", json={"type": "http-fetch", "url": url})
    assert r.status_code == 413 and "larger than" in r.json()["error"]

    def chunks():  # no Content-Length: the limit must hold for a streamed body too
        yield b'{"type": "factorial", "n": 1, "pad": "'
        for _ in range(40):
            yield b"x" * 1000
        yield b'"}'

    r = client.post("/tasks/submissions", content=chunks())
    assert r.status_code == 413


def test_idempotency_key_replays_and_conflicts(client: httpx.Client) -> None:
    key = uuid.uuid4().hex
    first = submit(client, {"type": "factorial", "n": 7}, **{"Idempotency-Key": key})
    assert first.status_code == 202
    # Same JSON written differently is the same request.
    again = client.post(
        "/tasks/submissions",
        content=b'{ "n": 7,  "type": "factorial" }',
        headers={"Idempotency-Key": key},
    )
    assert again.status_code == 202 and again.json()["id"] == first.json()["id"]
    assert again.headers["idempotent-replayed"] == "true"
    clash = submit(client, {"type": "factorial", "n": 8}, **{"Idempotency-Key": key})
    assert clash.status_code == 422 and clash.json()["field"] == "Idempotency-Key"
    ids = [t["id"] for t in client.get("/tasks", params={"limit": 1000}).json()["tasks"]]
    assert ids.count(first.json()["id"]) == 1


def test_unknown_ids_are_404(client: httpx.Client) -> None:
    for method, path in (
        ("GET", "/tasks/submissions/nope"),
        ("GET", "/tasks/nope"),
        ("DELETE", "/tasks/submissions/nope"),
    ):
        r = client.request(method, path)
        assert r.status_code == 404 and r.json()["error"], path


def test_unfinished_result_is_409_with_retry_after_then_cancel(
    client: httpx.Client, origin
) -> None:
    task = submit(
        client, {"type": "http-fetch", "url": origin.url("/hang"), "timeout_ms": 20000}
    ).json()
    r = client.get(f"/tasks/{task['id']}")
    assert r.status_code == 409 and int(r.headers["retry-after"]) >= 1
    assert r.json()["status"] in ("QUEUED", "RUNNING")
    c = client.delete(f"/tasks/submissions/{task['id']}")
    assert (
        c.status_code == 200 and c.json()["status"] == "FAILED" and c.json()["error"] == "cancelled"
    )
    r = client.get(f"/tasks/{task['id']}")
    assert r.status_code == 200 and r.json() == {
        "id": task["id"],
        "status": "FAILED",
        "error": "cancelled",
    }
    again = client.delete(f"/tasks/submissions/{task['id']}")  # DELETE is idempotent
    assert again.status_code == 200 and again.json()["error"] == "cancelled"


def test_cancel_finished_is_409(client: httpx.Client) -> None:
    task_id = submit(client, {"type": "factorial", "n": 3}).json()["id"]
    wait_final(client, task_id)
    r = client.delete(f"/tasks/submissions/{task_id}")
    assert r.status_code == 409 and "SUCCEEDED" in r.json()["error"]


def test_list_keyset_pagination_and_filter(client: httpx.Client) -> None:
    ids = [submit(client, {"type": "factorial", "n": i}).json()["id"] for i in range(7)]
    for i in ids:
        wait_final(client, i)
    seen: list[str] = []
    cursor = None
    for _ in range(1000):  # bounded walk
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        page = client.get("/tasks", params=params).json()
        assert len(page["tasks"]) <= 3
        seen += [t["id"] for t in page["tasks"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)), "pages overlap"
    assert [i for i in seen if i in ids] == ids, "pages must keep submission order"
    ok = client.get("/tasks", params={"status": "SUCCEEDED", "limit": 1000}).json()["tasks"]
    assert all(t["status"] == "SUCCEEDED" for t in ok) and set(ids) <= {t["id"] for t in ok}


@pytest.mark.parametrize(
    "params,status,field",
    [
        ({"limit": 0}, 422, "limit"),
        ({"limit": 1001}, 422, "limit"),
        ({"limit": "x"}, 422, "limit"),
        ({"status": "DONE"}, 422, "status"),
        ({"cursor": "abc"}, 400, "cursor"),
    ],
)
def test_list_rejects_bad_query(
    client: httpx.Client, params: dict, status: int, field: str
) -> None:
    r = client.get("/tasks", params=params)
    assert r.status_code == status and r.json()["field"] == field


def test_healthz_and_metrics(client: httpx.Client) -> None:
    h = client.get("/healthz")
    assert h.status_code == 200 and h.json()["status"] == "ok"
    submit(client, {"type": "factorial", "n": 1})
    client.post("/tasks/submissions", content=b"{")
    m = client.get("/metrics")
    assert m.status_code == 200 and m.headers["content-type"].startswith("text/plain")
    for name in (
        'taskqueue_tasks{status="QUEUED"}',
        "taskqueue_task_duration_seconds_bucket",
        'taskqueue_rejections_total{reason="invalid"}',
        "taskqueue_hedges_fired_total",
        "process_open_fds",
        'taskqueue_submissions_total{type="factorial"}',
    ):
        assert name in m.text, name


def test_openapi_documents_every_route(client: httpx.Client) -> None:
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    assert {"post"} <= set(paths["/tasks/submissions"])
    assert {"get", "delete"} <= set(paths["/tasks/submissions/{task_id}"])
    assert {"/tasks/{task_id}", "/tasks", "/healthz", "/metrics"} <= set(paths)
    assert client.get("/docs").status_code == 200
