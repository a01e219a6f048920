"""Leases and TTL: tasks left RUNNING by a dead server are requeued (or FAILED 'abandoned'
once out of attempts) at start-up; finished tasks disappear after their TTL; a graceful stop
hands running work back without spending an attempt.

On PostgreSQL a dead server's leases are taken over when they expire, not at start-up: that
is test_durability.py's and test_postgres.py's to show."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from conftest import Backend, Store, submit, wait_final
from taskqueue.models import Task, TaskStatus, TaskType
from taskqueue.storage_sqlite import SqliteStorage


async def _leave_running(data: Path, attempts_list: list[int]) -> list[str]:
    storage = SqliteStorage(data)
    recovered = await storage.open()
    ids = []
    for i, attempts in enumerate(attempts_list, start=recovered.last_seq + 1):
        now = time.time()
        task = Task(
            id=f"orphan{i}",
            seq=i,
            type=TaskType.FACTORIAL,
            params={"n": 12},
            status=TaskStatus.RUNNING,
            started_at=now,
            attempts=attempts,
            lease_until=now + 3600,
        )
        await storage.insert(task)
        ids.append(task.id)
    await storage.close()
    return ids


@pytest.mark.sqlite_only("the data-dir lock proves the last holder dead; no database can")
def test_orphaned_leases_are_recovered_at_startup(server_factory, store: Store) -> None:
    retry, spent = asyncio.run(_leave_running(store.data_dir, [1, 3]))  # --max-attempts 3
    srv = server_factory()
    with srv.client() as c:
        again = wait_final(c, retry)
        assert again["status"] == "SUCCEEDED" and again["attempts"] == 2, again
        assert c.get(f"/tasks/{retry}").text == "479001600"
        gone = wait_final(c, spent)
        assert (
            gone["status"] == "FAILED" and gone["error"] == "abandoned" and gone["attempts"] == 3
        ), gone
        assert "taskqueue_lease_expiries_total 2.0" in c.get("/metrics").text


def test_finished_tasks_expire_after_ttl(server_factory, backend: Backend) -> None:
    srv = server_factory("--result-ttl-s", "0.5", "--cleanup-every-s", "0.5")
    with srv.client() as c:
        task_id = submit(c, {"type": "factorial", "n": 3}).json()["id"]
        assert wait_final(c, task_id)["status"] == "SUCCEEDED"
        deadline = time.monotonic() + 15
        while (
            c.get(f"/tasks/submissions/{task_id}").status_code != 404
            and time.monotonic() < deadline
        ):
            time.sleep(0.1)
        assert c.get(f"/tasks/submissions/{task_id}").status_code == 404
        assert c.get(f"/tasks/{task_id}").status_code == 404
        # The gauge counts what this server knows: the store's finished tasks until their TTL
        # on SQLite; on a shared database, what it finished itself since it started.
        finished = 1.0 if backend.shared else 0.0
        assert f'taskqueue_tasks{{status="SUCCEEDED"}} {finished}' in c.get("/metrics").text


def test_graceful_stop_requeues_running_work_without_using_an_attempt(
    server_factory, origin
) -> None:
    first = server_factory("--allow-fetch-cidr", "127.0.0.0/8")
    with first.client() as c:
        body = {"type": "http-fetch", "url": origin.url("/slow?ms=4000"), "timeout_ms": 20000}
        task_id = submit(c, body).json()["id"]
        deadline = time.monotonic() + 10
        while c.get(f"/tasks/submissions/{task_id}").json()["status"] != "RUNNING":
            assert time.monotonic() < deadline, "task never started"
            time.sleep(0.02)
    t0 = time.monotonic()
    assert first.stop() == 0
    assert time.monotonic() - t0 < 4.0, "stop must not wait for the running fetch to finish"
    second = server_factory("--allow-fetch-cidr", "127.0.0.0/8")
    with second.client() as c:
        done = wait_final(c, task_id)
    assert done["status"] == "SUCCEEDED" and done["attempts"] == 1, done
