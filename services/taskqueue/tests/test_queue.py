"""TaskQueue's result cache: results of tasks finished here are read from memory, within a
byte budget, and leave memory with their task."""

from __future__ import annotations

import pytest
from taskqueue import queue as queue_mod
from taskqueue.models import Task, TaskStatus, TaskType
from taskqueue.queue import RESULT_CACHE_ITEM_BYTES, TaskQueue
from taskqueue.storage import Result


def _finished(q: TaskQueue, n: int) -> Task:
    task = Task(id=f"t{n}", seq=n, type=TaskType.FACTORIAL, params={"n": 5})
    q.add(task)
    q.transition(task, task.evolve(status=TaskStatus.SUCCEEDED, finished_at=1.0))
    return task


def test_a_kept_result_is_served_until_its_task_leaves_memory() -> None:
    q = TaskQueue(cache_finished=2)
    for n in range(3):
        _finished(q, n)
        q.keep_result(f"t{n}", Result("text/plain", b"120"))
    # cache_finished=2: t0 was pushed out of memory, and its result with it.
    assert q.result("t0") is None
    assert q.result("t1") == Result("text/plain", b"120")
    q.uncache("t1")
    assert q.result("t1") is None
    q.forget("t2", TaskStatus.SUCCEEDED)
    assert q.result("t2") is None


def test_results_of_unknown_or_large_tasks_are_not_kept() -> None:
    q = TaskQueue(cache_finished=10)
    q.keep_result("nobody", Result("text/plain", b"1"))
    assert q.result("nobody") is None
    _finished(q, 1)
    q.keep_result("t1", Result("application/octet-stream", b"x" * (RESULT_CACHE_ITEM_BYTES + 1)))
    assert q.result("t1") is None


def test_the_oldest_results_go_past_the_byte_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue_mod, "RESULT_CACHE_BYTES", 10)
    q = TaskQueue(cache_finished=10)
    for n in range(3):
        _finished(q, n)
        q.keep_result(f"t{n}", Result("text/plain", b"abcd"))  # 4 bytes each: two fit
    assert q.result("t0") is None
    assert q.result("t1") is not None and q.result("t2") is not None
    assert q._result_bytes == 8
