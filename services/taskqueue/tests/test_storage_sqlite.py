"""SQLite storage: group commit batches concurrent writes; committed data survives reopening."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from taskqueue.models import Task, TaskStatus, TaskType
from taskqueue.storage import Result
from taskqueue.storage_sqlite import SqliteStorage, StorageLocked

N = 500


async def test_group_commit_batches_and_persists(tmp_path: Path) -> None:
    storage = SqliteStorage(tmp_path)
    await storage.open()
    tasks = [
        Task(id=f"t{i}", seq=i, type=TaskType.FACTORIAL, params={"n": i}) for i in range(1, N + 1)
    ]
    await asyncio.gather(*(storage.insert(t) for t in tasks))
    batches = storage._w().batches
    assert batches < N / 5, f"{batches} commits for {N} concurrent inserts: no group commit"
    done = tasks[0].evolve(status=TaskStatus.SUCCEEDED, attempts=1, finished_at=1.0)
    await storage.update(done, Result("text/plain", b"1"))
    await storage.close()

    again = SqliteStorage(tmp_path)
    recovered = await again.open()
    assert recovered.last_seq == N and len(recovered.unfinished) == N - 1
    assert recovered.finished == {TaskStatus.SUCCEEDED: 1}
    assert (await again.get("t1")).status is TaskStatus.SUCCEEDED  # type: ignore[union-attr]
    assert await again.get_result("t1") == Result("text/plain", b"1")
    page = await again.list(TaskStatus.QUEUED, after_seq=10, limit=5)
    assert [t.seq for t in page] == [11, 12, 13, 14, 15]
    gone = await again.delete_finished_before(cutoff=float("inf"), limit=100)
    assert gone == [("t1", TaskStatus.SUCCEEDED)] and await again.get_result("t1") is None
    await again.close()


async def test_data_dir_is_locked_to_one_server(tmp_path: Path) -> None:
    first = SqliteStorage(tmp_path)
    await first.open()
    with pytest.raises(StorageLocked):
        await SqliteStorage(tmp_path).open()
    await first.close()


async def test_one_bad_write_does_not_sink_its_batch(tmp_path: Path) -> None:
    import sqlite3

    storage = SqliteStorage(tmp_path)
    await storage.open()
    good = [Task(id=f"g{i}", seq=i, type=TaskType.FACTORIAL, params={"n": 1}) for i in range(1, 50)]
    clash = Task(id="g1", seq=999, type=TaskType.FACTORIAL, params={"n": 1})  # duplicate id
    outcomes = await asyncio.gather(
        *(storage.insert(t) for t in good[:25]),
        storage.insert(clash),
        *(storage.insert(t) for t in good[25:]),
        return_exceptions=True,
    )
    assert isinstance(outcomes[25], sqlite3.IntegrityError)
    assert [o for i, o in enumerate(outcomes) if i != 25] == [None] * len(good)
    assert len(await storage.list(None, 0, 1000)) == len(good) and storage.healthy()
    await storage.close()


async def test_commits_are_durable_past_power_loss(tmp_path: Path) -> None:
    # A 202 is promised to survive power loss, which kill -9 (the durability test) cannot
    # show: the page cache outlives the process. What makes it true is the writing
    # connection's settings: WAL with synchronous=FULL fsyncs the WAL at every COMMIT
    # (NORMAL would fsync only at checkpoints, and lose the last commits on power loss).
    storage = SqliteStorage(tmp_path)
    await storage.open()
    try:
        journal, synchronous = await storage._w().submit(
            lambda conn: (
                conn.execute("PRAGMA journal_mode").fetchone()[0],
                conn.execute("PRAGMA synchronous").fetchone()[0],
            )
        )
    finally:
        await storage.close()
    assert (journal, synchronous) == ("wal", 2), "2 is FULL (1 NORMAL, 0 OFF, 3 EXTRA)"


async def test_the_writes_of_one_turn_are_one_commit(tmp_path: Path) -> None:
    """What the loop queues in one turn reaches the writer thread in one hand-over, so one
    transaction, even when the loop lets the thread run between the ops (here a sleep that
    drops the GIL; under load, a switch): put one by one, the thread woke at the first op
    and committed it alone, then the next."""
    import time

    storage = SqliteStorage(tmp_path)
    await storage.open()
    done = asyncio.Event()
    told: list[BaseException | None] = []

    def then(exc: BaseException | None) -> None:
        told.append(exc)
        if len(told) == 20:
            done.set()

    before = storage._w().batches
    for i in range(1, 21):  # one turn of the loop
        storage.insert_then(Task(id=f"t{i}", seq=i, type=TaskType.FACTORIAL, params={}), then)
        time.sleep(0.002)
    await asyncio.wait_for(done.wait(), 10)
    assert told == [None] * 20
    assert storage._w().batches - before == 1
    assert len(await storage.list(None, after_seq=0, limit=100)) == 20
    await storage.close()


async def test_insert_then_tells_its_outcome_on_the_loop_without_a_hop(tmp_path: Path) -> None:
    """insert_then calls back on the loop's thread once committed, from the callback that
    resolves the batch: a task waiting on a future of the same batch runs only after it.
    A clash is told to its own callback; the rest of the batch still lands; and what a
    turn queued before close() is committed, not lost."""
    import sqlite3
    import threading

    storage = SqliteStorage(tmp_path)
    await storage.open()
    told: list[tuple[str, BaseException | None, bool]] = []
    loop_thread = threading.get_ident()

    def then(name: str):
        return lambda exc: told.append((name, exc, threading.get_ident() == loop_thread))

    first = Task(id="a", seq=1, type=TaskType.FACTORIAL, params={})
    storage.insert_then(first, then("a"))
    storage.insert_then(Task(id="a", seq=2, type=TaskType.FACTORIAL, params={}), then("clash"))
    await storage.insert(Task(id="b", seq=3, type=TaskType.FACTORIAL, params={}))
    assert [(n, type(e).__name__ if e else None, on_loop) for n, e, on_loop in told] == [
        ("a", None, True),
        ("clash", "IntegrityError", True),
    ]
    assert isinstance(told[1][1], sqlite3.IntegrityError)
    storage.insert_then(Task(id="c", seq=4, type=TaskType.FACTORIAL, params={}), then("c"))
    await storage.close()  # in the same turn as the insert: handed over, then committed
    again = SqliteStorage(tmp_path)
    await again.open()
    assert [t.id for t in await again.list(None, after_seq=0, limit=10)] == ["a", "b", "c"]
    await again.close()
