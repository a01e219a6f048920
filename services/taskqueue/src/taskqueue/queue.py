"""Queue: the in-memory side of the task store.

It is a write-through cache: every unfinished task lives here (so status reads and the
dispatcher never touch the disk), finished tasks stay until `cache_finished` newer ones
push them out (reads then fall back to storage), and per-status counts feed admission
control and the metrics. The results of tasks finished here stay beside them, within a byte
budget, so that reading a result is no storage round trip either (a finished task and its
result never change; they only go at their TTL, and leave memory then too).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterator

from taskqueue.models import Task, TaskStatus, TaskType
from taskqueue.storage import Result

RESULT_CACHE_BYTES = 32 * 2**20
"""RESULT_CACHE_BYTES bounds the memory of cached results (their bodies): the oldest go first.
32 MiB holds about 13,000 results of factorial(1000) (2.6 KB each): at 500 tasks/s the last
25 s of them, where a seed-000 user reads its result within about a second of the finish."""

RESULT_CACHE_ITEM_BYTES = 64 * 2**10
"""RESULT_CACHE_ITEM_BYTES: a larger result is not cached (a 10 MiB fetch would push hundreds
of small ones out); it is read from storage."""


class TaskQueue:
    """TaskQueue indexes cached tasks by id and Idempotency-Key and orders the QUEUED ones."""

    def __init__(self, cache_finished: int) -> None:
        self.tasks: dict[str, Task] = {}
        self.idem: dict[str, Task] = {}
        self.pending: dict[TaskType, deque[Task]] = {t: deque() for t in TaskType}
        self.counts: dict[TaskStatus, int] = {s: 0 for s in TaskStatus}
        self.reserved = 0  # submissions admitted but not yet durable
        self.held: set[str] = set()  # QUEUED tasks being cancelled: not to be started
        self._finished: OrderedDict[str, None] = OrderedDict()
        self._cache_finished = cache_finished
        self._results: OrderedDict[str, Result] = OrderedDict()
        self._result_bytes = 0

    def depth(self) -> int:
        """depth is the admission-control figure: queued tasks plus those being stored."""
        return self.counts[TaskStatus.QUEUED] + self.reserved

    def add(self, task: Task) -> None:
        """add caches a task (new, recovered or reloaded) and queues it when QUEUED."""
        self.tasks[task.id] = task
        if task.idem_key:
            self.idem[task.idem_key] = task
        self.counts[task.status] += 1
        if task.status is TaskStatus.QUEUED:
            self.pending[task.type].append(task)
        elif task.status.finished:
            self._remember_finished(task.id)

    def pop(self, kind: TaskType) -> Task | None:
        """pop returns the oldest still-QUEUED task of a type (cancelled ones are skipped)."""
        dq = self.pending[kind]
        skipped: list[Task] = []
        found = None
        while dq:
            task = dq.popleft()
            if task.status is not TaskStatus.QUEUED:
                continue
            if task.id in self.held:
                skipped.append(task)
                continue
            found = task
            break
        dq.extendleft(reversed(skipped))
        return found

    def has_pending(self, kind: TaskType) -> bool:
        """has_pending tells whether a task of this type may be waiting."""
        return bool(self.pending[kind])

    def transition(self, task: Task, durable: Task) -> None:
        """transition applies a now-durable state to the cached task and keeps counts right."""
        old, new = task.status, durable.status
        task.adopt(durable)
        if old is not new:
            self.counts[old] -= 1
            self.counts[new] += 1
            if new is TaskStatus.QUEUED:
                self.pending[task.type].append(task)
            elif new.finished:
                self._remember_finished(task.id)

    def keep_result(self, task_id: str, result: Result) -> None:
        """keep_result caches the now-durable result of a cached SUCCEEDED task (if small)."""
        if len(result.body) > RESULT_CACHE_ITEM_BYTES or task_id not in self.tasks:
            return
        self._drop_result(task_id)
        self._results[task_id] = result
        self._result_bytes += len(result.body)
        while self._result_bytes > RESULT_CACHE_BYTES:
            self._drop_result(next(iter(self._results)))

    def result(self, task_id: str) -> Result | None:
        """result is the cached result of a cached task, or None (read it from storage)."""
        return self._results.get(task_id)

    def _drop_result(self, task_id: str) -> None:
        gone = self._results.pop(task_id, None)
        if gone is not None:
            self._result_bytes -= len(gone.body)

    def forget(self, task_id: str, status: TaskStatus) -> None:
        """forget drops a task deleted from storage (TTL expiry), cached or not."""
        task = self.tasks.pop(task_id, None)
        self._finished.pop(task_id, None)
        self._drop_result(task_id)
        self.counts[status] -= 1
        if task is not None and task.idem_key:
            self.idem.pop(task.idem_key, None)

    def uncache(self, task_id: str) -> None:
        """uncache drops a task from memory, leaving the counts alone (shared store: the
        task is counted where it finished, and is now another server's or gone)."""
        task = self.tasks.pop(task_id, None)
        self._finished.pop(task_id, None)
        self._drop_result(task_id)
        if task is not None and task.idem_key:
            self.idem.pop(task.idem_key, None)

    def discard(self, task: Task) -> None:
        """discard drops a cached task that this server no longer holds (requeued for any
        server to claim, or taken over), uncounting its status."""
        if self.tasks.get(task.id) is task:
            self.uncache(task.id)
            self.counts[task.status] -= 1

    def running(self) -> Iterator[Task]:
        """running yields the cached RUNNING tasks."""
        return (t for t in list(self.tasks.values()) if t.status is TaskStatus.RUNNING)

    def _remember_finished(self, task_id: str) -> None:
        self._finished[task_id] = None
        while len(self._finished) > self._cache_finished:
            old_id, _ = self._finished.popitem(last=False)
            self._drop_result(old_id)
            old = self.tasks.pop(old_id, None)
            if old is not None and old.idem_key:
                self.idem.pop(old.idem_key, None)
