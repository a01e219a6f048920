"""Service: the task-queue operations the HTTP API (or a Python caller) uses.

`TaskService` ties the storage, the in-memory queue and the executor together: admission
control and durable submission, idempotency, reads, cancellation, lease recovery at
start-up, and the housekeeping loop (lease expiry, TTL cleanup, drain-rate estimate).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Mapping

from taskqueue.config import Config
from taskqueue.executor import Executor, StopReason
from taskqueue.metrics import Metrics
from taskqueue.models import Task, TaskStatus, TaskType, new_task_id
from taskqueue.queue import TaskQueue
from taskqueue.storage import Result, Storage
from taskqueue.storage_sqlite import SqliteStorage
from taskqueue.submission import SubmissionError, body_fingerprint, parse_submission

log = logging.getLogger("taskqueue")

CLEANUP_BATCH = 5000
"""CLEANUP_BATCH bounds one TTL deletion transaction so it never stalls submissions for long."""


class Overloaded(Exception):
    """Overloaded is an admission-control rejection; retry_after is in whole seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"queue full; retry after {retry_after} s")
        self.retry_after = retry_after


class NotCancellable(Exception):
    """NotCancellable is a cancel of a task that has already finished."""

    def __init__(self, task: Task) -> None:
        super().__init__(f"task {task.id} already {task.status.value}")
        self.task = task


class TaskService:
    """TaskService runs the queue; `await start()` before use and `await stop()` after."""

    def __init__(self, config: Config, storage: Storage | None = None) -> None:
        self.config = config
        self.storage = storage or SqliteStorage(config.data_dir)
        self.queue = TaskQueue(config.cache_finished)
        self.metrics = Metrics(self.depth_by_status)
        self.executor = Executor(config, self.storage, self.queue, self.metrics)
        self._seq = 0
        self._storing: dict[
            str, asyncio.Task[Task]
        ] = {}  # Idempotency-Key -> submission being stored
        self._housekeeper: asyncio.Task[None] | None = None
        self._drain_rate = 0.0  # finished tasks per second, smoothed

    # --- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """start opens storage, recovers abandoned leases, and starts executing."""
        recovered = await self.storage.open()
        self._seq = recovered.last_seq
        for status, n in recovered.finished.items():
            self.queue.counts[status] += n
        await self._recover(recovered.unfinished)
        await self.executor.start()
        self._housekeeper = asyncio.get_running_loop().create_task(self._housekeeping())
        self.executor.kick()

    async def _recover(self, unfinished: list[Task]) -> None:
        # The storage lock proves the previous holder of every lease is gone, so all of
        # them have expired: back to QUEUED while attempts remain, else FAILED 'abandoned'.
        writes = []
        now = time.time()
        for task in unfinished:
            if task.status is TaskStatus.RUNNING:
                if task.attempts < self.config.max_attempts:
                    fixed = task.evolve(status=TaskStatus.QUEUED, lease_until=None)
                else:
                    fixed = task.evolve(
                        status=TaskStatus.FAILED,
                        error="abandoned",
                        finished_at=now,
                        lease_until=None,
                    )
                task.adopt(fixed)
                self.metrics.lease_expiries.inc()
                writes.append(self.storage.update(task))
            self.queue.add(task)
        await asyncio.gather(*writes)
        if writes:
            log.info("taskqueue: recovered %d task(s) whose lease had expired", len(writes))

    async def stop(self) -> None:
        """stop requeues running tasks and closes everything; accepted work survives."""
        if self._housekeeper is not None:
            self._housekeeper.cancel()
            await asyncio.gather(self._housekeeper, return_exceptions=True)
        await self.executor.stop()
        await asyncio.gather(*self._storing.values(), return_exceptions=True)
        await self.storage.close()

    # --- submissions -------------------------------------------------------------------------

    async def submit(self, body: bytes, idem_key: str | None = None) -> tuple[Task, bool]:
        """submit validates and durably stores a task; returns (task, created).

        created is False for an Idempotency-Key replay. Raises SubmissionError or Overloaded.
        """
        spec = parse_submission(body, self.config.max_factorial_n)
        fingerprint = None
        if idem_key is not None:
            fingerprint = body_fingerprint(body)
            original = await self._idempotent(idem_key)
            if original is not None:
                if original.idem_hash != fingerprint:
                    self.metrics.rejections.labels("idempotency_conflict").inc()
                    raise SubmissionError(
                        422,
                        "Idempotency-Key",
                        "Idempotency-Key was already used with a different body",
                    )
                return original, False
        if self.queue.depth() >= self.config.max_queue:
            self.metrics.rejections.labels("queue_full").inc()
            raise Overloaded(self.retry_after())
        self.queue.reserved += 1  # now, not in _store: the next request must see it
        self._seq += 1
        params = spec.model_dump(exclude={"type"}, exclude_none=True)
        task = Task(
            id=new_task_id(),
            seq=self._seq,
            type=TaskType(spec.type),
            params=params,
            idem_key=idem_key,
            idem_hash=fingerprint,
        )
        # Shielded: a client that disconnects must not leave a durable task uncached.
        storing = asyncio.get_running_loop().create_task(self._store(task))
        if idem_key is not None:
            self._storing[idem_key] = storing
        return await asyncio.shield(storing), True

    async def _store(self, task: Task) -> Task:
        try:
            await self.storage.insert(task)
        finally:
            self.queue.reserved -= 1
            if task.idem_key is not None:
                self._storing.pop(task.idem_key, None)
        self.queue.add(task)
        self.metrics.submissions.labels(task.type.value).inc()
        self.executor.kick()
        return task

    async def _idempotent(self, key: str) -> Task | None:
        storing = self._storing.get(key)
        if storing is not None:
            return await asyncio.shield(storing)
        cached = self.queue.idem.get(key)
        return cached if cached is not None else self.storage.find_idempotent(key)

    def retry_after(self) -> int:
        """retry_after estimates, in seconds, how long until a tenth of the queue has drained."""
        if self._drain_rate <= 0:
            return 1
        return max(1, min(30, math.ceil(0.1 * self.config.max_queue / self._drain_rate)))

    # --- reads -------------------------------------------------------------------------------

    def get(self, task_id: str) -> Task | None:
        """get returns a task from the cache, else from storage, else None."""
        task = self.queue.tasks.get(task_id)
        return task if task is not None else self.storage.get(task_id)

    def result(self, task_id: str) -> Result | None:
        """result returns the stored result of a SUCCEEDED task."""
        return self.storage.get_result(task_id)

    def list(self, status: TaskStatus | None, after_seq: int, limit: int) -> list[Task]:
        """list pages through tasks in submission order, after the given seq (keyset)."""
        tasks = self.storage.list(status, after_seq, limit)
        # The cache is fresher than storage for a task mid-transition; prefer it.
        return [self.queue.tasks.get(t.id, t) for t in tasks]

    def depth_by_status(self) -> Mapping[str, int]:
        """depth_by_status counts tasks per status (finished ones until their TTL)."""
        counts = {s.value: n for s, n in self.queue.counts.items()}
        counts[TaskStatus.QUEUED.value] += self.queue.reserved
        return counts

    def healthy(self) -> bool:
        """healthy tells whether submissions can be made durable right now."""
        return self.storage.healthy()

    # --- cancellation ------------------------------------------------------------------------

    async def cancel(self, task_id: str) -> Task | None:
        """cancel stops a QUEUED or RUNNING task (it ends FAILED 'cancelled').

        Returns None for an unknown id; raises NotCancellable when it had already finished.
        """
        task = self.queue.tasks.get(task_id)
        if task is None:
            stored = self.storage.get(task_id)
            if stored is None:
                return None
            raise NotCancellable(stored)
        if task.status is TaskStatus.QUEUED and task_id not in self.executor.running_ids():
            self.queue.held.add(task_id)  # keep the executor off it while the cancel is stored
            try:
                done = task.evolve(
                    status=TaskStatus.FAILED, error="cancelled", finished_at=time.time()
                )
                await asyncio.shield(self.storage.update(done))
                self.queue.transition(task, done)
                self.metrics.finished.labels(task.type.value, TaskStatus.FAILED.value).inc()
            finally:
                self.queue.held.discard(task_id)
                self.executor.kick()
            return task
        if not task.status.finished:
            await self.executor.cancel(task_id, StopReason.CANCELLED)
        if task.status is TaskStatus.FAILED and task.error == "cancelled":
            return task
        raise NotCancellable(task)

    # --- housekeeping ------------------------------------------------------------------------

    async def _housekeeping(self) -> None:
        last_lease = last_cleanup = time.monotonic()
        last_finished = self._finished_total()
        while True:
            await asyncio.sleep(1.0)
            now = time.monotonic()
            finished = self._finished_total()
            self._drain_rate = 0.7 * self._drain_rate + 0.3 * max(0, finished - last_finished)
            last_finished = finished
            try:
                if now - last_lease >= self.config.lease_check_s:
                    last_lease = now
                    self.executor.expire_leases(time.time())
                if now - last_cleanup >= self.config.cleanup_every_s:
                    last_cleanup = now
                    await self.cleanup(time.time() - self.config.result_ttl_s)
            except Exception:  # housekeeping must outlive a failed round
                log.exception("taskqueue: housekeeping round failed")

    def _finished_total(self) -> int:
        return self.queue.counts[TaskStatus.SUCCEEDED] + self.queue.counts[TaskStatus.FAILED]

    async def cleanup(self, cutoff: float) -> int:
        """cleanup deletes tasks (and results) finished before cutoff; returns how many."""
        total = 0
        while True:
            gone = await self.storage.delete_finished_before(cutoff, CLEANUP_BATCH)
            for task_id, status in gone:
                self.queue.forget(task_id, status)
            total += len(gone)
            if len(gone) < CLEANUP_BATCH:
                return total
