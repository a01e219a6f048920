"""PostgreSQL: a cancel across servers. A DELETE on any server cancels in the database and
announces it; the server running the task stops it at once. A server that missed the notice
answers a repeated DELETE all the same, and a claim that raced its cancel is not started."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from conftest import Server, fetch_on_two, metric
from taskqueue.config import Config
from taskqueue.models import Task, TaskStatus, TaskType
from taskqueue.service import TaskService
from taskqueue.storage_postgres import PostgresStorage


def _hanging_task_on_two(cluster: Any, origin: Any) -> tuple[str, Server, Server, int]:
    """_hanging_task_on_two: a task the origin never answers (20 s limit) on two servers."""
    return fetch_on_two(cluster, origin, "/hang", 20000)


def _cancel(server: Server, task_id: str) -> None:
    with server.client() as c:
        r = c.delete(f"/tasks/submissions/{task_id}")
    assert r.status_code == 200, r.text
    assert (r.json()["status"], r.json()["error"]) == ("FAILED", "cancelled"), r.text


def test_a_task_cancelled_through_another_server_stops_on_its_holder(cluster, origin) -> None:
    """A task running on one server is cancelled through the other, in the database; the
    holder is told and stops its run at once (not at its 20 s limit), storing nothing of its
    own. A DELETE on the holder then answers cancelled too: DELETE is idempotent."""
    task_id, holder, other, before = _hanging_task_on_two(cluster, origin)
    hung_up = origin.cancelled("/hang")
    _cancel(other, task_id)
    with holder.client() as c:
        deadline = time.monotonic() + 3
        while metric(c.get("/metrics").text, 'taskqueue_tasks{status="RUNNING"}') != 0:
            assert time.monotonic() < deadline, "the holder still runs the cancelled task"
            time.sleep(0.05)
        assert metric(c.get("/metrics").text, "taskqueue_stale_outcomes_total") == 0
    # The origin saw the holder's fetch hang up: its connection closed, the request cut short.
    deadline = time.monotonic() + 3
    while origin.cancelled("/hang") == hung_up:
        assert time.monotonic() < deadline, "the origin's /hang was never hung up on"
        time.sleep(0.02)
    _cancel(holder, task_id)
    for s in (holder, other):
        with s.client() as c:
            doc = c.get(f"/tasks/submissions/{task_id}").json()
        assert (doc["status"], doc["error"]) == ("FAILED", "cancelled"), doc
    assert origin.hits("/hang") - before == 1  # one fetch went out, as the origin saw


def test_a_second_cancel_on_the_server_still_running_it_answers_cancelled(
    cluster, origin, dsn: str
) -> None:
    """As above, but the holder misses the notice: the task is cancelled in the database by
    a store that announces nothing. A DELETE on the holder stops its run, whose outcome the
    store refuses, and answers what the store holds: cancelled, 200. (It answered 409 "task
    already RUNNING", seen in CI when a claim raced the first cancel.)"""
    task_id, holder, _other, before = _hanging_task_on_two(cluster, origin)

    async def cancel_silently() -> None:
        store = PostgresStorage(dsn)
        await store.open()
        try:
            stored = await store.get(task_id)
            assert stored is not None and stored.status is TaskStatus.RUNNING, stored
            done = stored.evolve(
                status=TaskStatus.FAILED,
                error="cancelled",
                finished_at=time.time(),
                lease_until=None,
            )
            assert await store.update(done, prior=stored)
        finally:
            await store.close()

    asyncio.run(cancel_silently())
    with holder.client() as c:
        assert metric(c.get("/metrics").text, 'taskqueue_tasks{status="RUNNING"}') == 1
    _cancel(holder, task_id)
    with holder.client() as c:
        assert metric(c.get("/metrics").text, 'taskqueue_tasks{status="RUNNING"}') == 0
        assert metric(c.get("/metrics").text, "taskqueue_stale_outcomes_total") == 1
    assert origin.hits("/hang") - before == 1


async def test_a_claim_that_raced_its_cancel_is_not_started(dsn: str, tmp_path: Path) -> None:
    """The race of a cancel with a claim: the claim commits first (the cancel then finds the
    task RUNNING and stores it cancelled), but its answer comes back after the cancel's
    notice, which found nothing running. The notice is remembered, and the claimed task is
    not started. Here the notice is given first, then a task of that id is stored and
    claimed; another task, not announced, runs as usual."""
    config = Config(data_dir=tmp_path / "unused", database=dsn, workers=1).validate()
    service = TaskService(config)
    await service.start()
    store = PostgresStorage(dsn)
    await store.open()
    try:
        service.executor.drop("raced")  # the notice, before the claim's answer
        for name in ("raced", "plain"):
            await store.insert(Task(id=name, seq=0, type=TaskType.FACTORIAL, params={"n": 5}))
        deadline = time.monotonic() + 10
        while True:
            raced, plain = await store.get("raced"), await store.get("plain")
            assert raced is not None and plain is not None
            if raced.status is not TaskStatus.QUEUED and plain.status is TaskStatus.SUCCEEDED:
                break
            assert time.monotonic() < deadline, (raced.status, plain.status)
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)  # a factorial of 5 takes microseconds: it would be done
        raced = await store.get("raced")
        assert raced is not None and raced.status is TaskStatus.RUNNING  # claimed, never run
        assert service.executor.running_ids() == []
    finally:
        await store.close()
        await service.stop()
