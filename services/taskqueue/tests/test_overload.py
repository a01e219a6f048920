"""Overload: a burst far above --max-queue gets 503 + Retry-After, stores nothing for them,
completes every accepted task, and the service serves normally afterwards."""

from __future__ import annotations

import asyncio

import httpx
from conftest import submit, wait_final

MAX_QUEUE = 20
BURST = 400


async def _burst(url: str, body: dict) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=100)
    async with httpx.AsyncClient(base_url=url, timeout=30.0, limits=limits) as c:
        return await asyncio.gather(
            *(c.post("/tasks/submissions", json=body) for _ in range(BURST))
        )


def test_burst_gets_503_then_recovers(server_factory, origin) -> None:
    srv = server_factory(
        "--allow-fetch-cidr",
        "127.0.0.0/8",
        "--max-queue",
        str(MAX_QUEUE),
        "--fetch-concurrency",
        "2",
    )
    # Each task holds one of 2 fetch slots for 200 ms: the queue cannot drain during the burst.
    body = {"type": "http-fetch", "url": origin.url("/slow?ms=200")}
    responses = asyncio.run(_burst(srv.url, body))
    codes = [r.status_code for r in responses]
    assert set(codes) <= {202, 503}, codes
    accepted = [r.json()["id"] for r in responses if r.status_code == 202]
    rejected = [r for r in responses if r.status_code == 503]
    # The queue holds MAX_QUEUE plus what the 2 slots took off it during the burst.
    assert MAX_QUEUE <= len(accepted) < BURST // 2
    assert len(rejected) >= BURST // 2
    for r in rejected:
        assert int(r.headers["retry-after"]) >= 1 and r.json()["error"]
    with srv.client() as c:
        listed = c.get("/tasks", params={"limit": 1000}).json()["tasks"]
        assert sorted(t["id"] for t in listed) == sorted(accepted), "a 503 must store nothing"
        metrics = c.get("/metrics").text
        assert (
            f'taskqueue_rejections_total{{reason="queue_full"}} {float(len(rejected))}' in metrics
        )
        for task_id in accepted:
            assert wait_final(c, task_id, timeout=60)["status"] == "SUCCEEDED"
        # Recovered by itself: normal service with no operator action.
        r = submit(c, {"type": "factorial", "n": 50})
        assert r.status_code == 202
        assert wait_final(c, r.json()["id"])["status"] == "SUCCEEDED"
    assert origin.hits("/slow") >= len(accepted)
