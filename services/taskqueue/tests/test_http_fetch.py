"""http-fetch end to end: through the service to a local origin and back (the fetcher's own
edge cases live in test_fetch.py)."""

from __future__ import annotations

import time
import uuid

import httpx
import pytest
from conftest import metric, submit, wait_final


def _fetch(client: httpx.Client, url: str, **extra: int) -> dict:
    r = submit(client, {"type": "http-fetch", "url": url, **extra})
    assert r.status_code == 202, r.text
    return wait_final(client, r.json()["id"])


@pytest.mark.parametrize(
    "body,ctype",
    [
        (bytes(range(256)) * 64, "image/png"),
        ("héllo wörld".encode(), "text/plain; charset=utf-8"),
        (b'{"a": [1, 2, 3]}', "application/json"),
        (b"", "application/octet-stream"),
    ],
)
def test_content_and_type_round_trip(client: httpx.Client, origin, body: bytes, ctype: str) -> None:
    path = origin.set_blob(uuid.uuid4().hex, body, ctype)
    done = _fetch(client, origin.url(path))
    assert done["status"] == "SUCCEEDED", done
    r = client.get(f"/tasks/{done['id']}")
    assert r.status_code == 200
    assert r.content == body and r.headers["content-type"] == ctype
    assert origin.hits(path) == 1


@pytest.mark.parametrize(
    "path,extra,reason",
    [
        ("/status/404", {}, "origin answered 404"),
        ("/status/500", {}, "origin answered 500"),
        ("/hang", {"timeout_ms": 300}, "timeout after 300 ms"),
        (f"/big?bytes={10 * 2**20 + 1}", {}, "larger than"),
        (f"/big?bytes={10 * 2**20 + 1}&chunked=1", {}, "larger than"),
        ("/chain?n=6", {}, "too many redirects"),
        ("/reset", {}, ""),
    ],
)
def test_origin_failures_become_failed_with_reason(
    client: httpx.Client, origin, path: str, extra: dict, reason: str
) -> None:
    done = _fetch(client, origin.url(path), **extra)
    assert done["status"] == "FAILED" and done["error"] and reason in done["error"], done
    r = client.get(f"/tasks/{done['id']}")
    assert (
        r.status_code == 200
        and r.json()["status"] == "FAILED"
        and r.json()["error"] == done["error"]
    )


def test_five_redirects_are_followed(client: httpx.Client, origin) -> None:
    done = _fetch(client, origin.url("/chain?n=5"))
    assert done["status"] == "SUCCEEDED", done
    assert client.get(f"/tasks/{done['id']}").text == "chain end"


def test_hedged_fetch_wins_with_the_second_request(client: httpx.Client, origin) -> None:
    key = uuid.uuid4().hex
    slow_ms, hedge_ms = 3000, 100
    before = client.get("/metrics").text
    t0 = time.monotonic()
    done = _fetch(
        client,
        origin.url(f"/hedge?key={key}&first_ms={slow_ms}&then_ms=0"),
        hedge_after_ms=hedge_ms,
        timeout_ms=10000,
    )
    elapsed = time.monotonic() - t0
    assert done["status"] == "SUCCEEDED", done
    assert client.get(f"/tasks/{done['id']}").text == f"hedge {key} #2"
    assert elapsed < slow_ms / 1000, "the hedge should have answered long before the slow first try"
    after = client.get("/metrics").text
    assert _hedges(after) == _hedges(before) + 1


def _hedges(metrics: str) -> float:
    for line in metrics.splitlines():
        if line.startswith("taskqueue_hedges_fired_total "):
            return float(line.split()[1])
    raise AssertionError("no taskqueue_hedges_fired_total")


@pytest.mark.sqlite_only("the fetch guard does not touch the store")
@pytest.mark.parametrize(
    "host_form", ["127.0.0.1", "localhost", "0x7f000001", "2130706433", "[::1]"]
)
def test_ssrf_guard_is_on_by_default(server_factory, origin, host_form: str) -> None:
    srv = server_factory()  # no --allow-fetch-cidr
    port = origin.ports["::1"] if host_form == "[::1]" and "::1" in origin.ports else origin.port
    path = origin.set_blob(uuid.uuid4().hex, b"secret", "text/plain")
    with srv.client() as c:
        r = submit(c, {"type": "http-fetch", "url": f"http://{host_form}:{port}{path}"})
        if r.status_code == 202:  # refused when fetching
            done = wait_final(c, r.json()["id"])
            assert done["status"] == "FAILED" and "block" in done["error"].lower(), done
        else:  # refused at submission
            assert r.status_code == 422 and r.json()["field"] == "url", r.text
    assert origin.hits(path) == 0, "the origin must never see a blocked request"


@pytest.mark.sqlite_only("the fetch guard does not touch the store")
def test_redirect_to_private_address_is_blocked(server_factory, origin) -> None:
    """An allowed origin (127.0.0.1 only) redirecting to another loopback address (127.0.0.2)."""
    if "127.0.0.2" not in origin.ports:
        pytest.skip("127.0.0.2 not bindable here")
    srv = server_factory("--allow-fetch-cidr", "127.0.0.1/32")
    path = origin.set_blob(uuid.uuid4().hex, b"secret", "text/plain")
    target = origin.url(path, host="127.0.0.2")
    with srv.client() as c:
        done = _fetch(c, origin.url("/redirect") + "?to=" + target)
    assert done["status"] == "FAILED" and "block" in done["error"].lower(), done
    assert origin.hits(path) == 0


@pytest.mark.sqlite_only("the fetch pool does not touch the store")
def test_metrics_show_the_fetch_pool_at_its_limit(server_factory, origin) -> None:
    """Twelve fetches to an origin that answers in 1.5 s, over 3 connections: /metrics says
    3 of 3 connections to it in use and 9 fetches waiting, 12 executor slots of 100 busy;
    once they are done nothing is in use, and the origin saw the 12."""
    srv = server_factory("--allow-fetch-cidr", "127.0.0.0/8", "--fetch-per-host", "3")
    host = f"127.0.0.1:{origin.port}"
    path = "/slow?ms=1500"
    before = origin.hits("/slow")
    with srv.client() as c:
        ids = [
            submit(c, {"type": "http-fetch", "url": origin.url(path)}).json()["id"]
            for _ in range(12)
        ]
        deadline = time.monotonic() + 10
        while True:
            text = c.get("/metrics").text
            waiting = metric(text, f'taskqueue_fetch_waiting{{host="{host}"}}')
            if waiting == 9 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert waiting == 9, text
        assert metric(text, f'taskqueue_fetch_host_connections_in_use{{host="{host}"}}') == 3
        assert metric(text, f'taskqueue_fetch_host_connections_limit{{host="{host}"}}') == 3
        assert metric(text, "taskqueue_fetch_connections_in_use") == 3
        assert metric(text, "taskqueue_fetch_connections_limit") == 100
        assert metric(text, 'taskqueue_executor_slots_in_use{type="http-fetch"}') == 12
        assert metric(text, 'taskqueue_executor_slots_limit{type="http-fetch"}') == 100
        for tid in ids:
            assert wait_final(c, tid, timeout=30)["status"] == "SUCCEEDED"
        text = c.get("/metrics").text
    assert metric(text, "taskqueue_fetch_connections_in_use") == 0
    assert metric(text, 'taskqueue_executor_slots_in_use{type="http-fetch"}') == 0
    done = 'taskqueue_tasks_finished_total{status="SUCCEEDED",type="http-fetch"}'
    assert metric(text, done) >= 12
    assert origin.hits("/slow") - before == 12
