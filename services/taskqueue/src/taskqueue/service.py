"""Service: the task-queue operations the HTTP API (or a Python caller) uses.

`TaskService` ties the storage, the in-memory queue and the executor together: admission
control and durable submission, idempotency, reads, cancellation, lease recovery at
start-up, and the housekeeping loop (lease expiry, TTL cleanup, drain-rate estimate).

On a shared store (PostgreSQL, several servers) memory holds only what cannot change
under this server: tasks it is running and finished ones. Unfinished tasks are read from
the database, work is claimed from it, expired leases are reaped there whoever held them,
and admission control counts the queue of all servers (refreshed every SHARED_REFRESH_S).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Mapping

from taskqueue.config import Config
from taskqueue.executor import Executor, StopReason
from taskqueue.metrics import Metrics
from taskqueue.models import Task, TaskStatus, TaskType, new_task_id
from taskqueue.queue import TaskQueue
from taskqueue.storage import DuplicateTask, Result, Storage, StorageUnavailable
from taskqueue.storage_sqlite import SqliteStorage
from taskqueue.submission import (
    FactorialSpec,
    FetchSpec,
    SubmissionError,
    body_fingerprint,
    parse_submission,
)

log = logging.getLogger("taskqueue")

CLEANUP_BATCH = 5000
"""CLEANUP_BATCH bounds one TTL deletion transaction so it never stalls submissions for long."""

SHARED_REFRESH_S = 0.25
"""SHARED_REFRESH_S: how often a server on a shared store re-counts the queue of all servers
(for admission control and /metrics) and looks for work it was not told about. Between two
counts the servers together may admit up to their submission rate times this past --max-queue."""


def open_storage(config: Config) -> Storage:
    """open_storage is the store the config names: PostgreSQL for --database, else SQLite."""
    if config.database:
        from taskqueue.storage_postgres import PostgresStorage

        return PostgresStorage(config.database)
    return SqliteStorage(config.data_dir)


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
        self.storage = storage or open_storage(config)
        self.queue = TaskQueue(config.cache_finished)
        self.metrics = Metrics(self.depth_by_status, self.shared_depth)
        self.executor = Executor(config, self.storage, self.queue, self.metrics)
        self.metrics.watch_usage(self.executor.slots, self.executor.pool_use)
        self._seq = 0
        self._storing: dict[
            str, asyncio.Task[Task]
        ] = {}  # Idempotency-Key -> submission being stored
        self._housekeeper: asyncio.Task[None] | None = None
        self._drain_rate = 0.0  # finished tasks per second, smoothed
        self._shared: dict[TaskStatus, int] | None = None  # all servers' queue, last count
        self._admitted_since = 0  # submissions stored since that count
        self._refresher: asyncio.Task[None] | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """start opens storage, recovers abandoned leases, and starts executing."""
        recovered = await self.storage.open()
        self._seq = recovered.last_seq
        for status, n in recovered.finished.items():
            self.queue.counts[status] += n
        await self._recover(recovered.unfinished)
        await self.executor.start()
        loop = asyncio.get_running_loop()
        self._housekeeper = loop.create_task(self._housekeeping())
        if self.storage.shared:
            self.storage.on_new_tasks(self.executor.kick)
            self.storage.on_cancelled(self.executor.drop)
            self._refresher = loop.create_task(self._refresh_shared())
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
        for job in (self._housekeeper, self._refresher):
            if job is not None:
                job.cancel()
                await asyncio.gather(job, return_exceptions=True)
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
        task = self._admit(spec, idem_key, fingerprint)
        # Shielded: a client that disconnects must not leave a durable task uncached.
        storing = asyncio.get_running_loop().create_task(self._store(task))
        if idem_key is not None:
            self._storing[idem_key] = storing
        try:
            return await asyncio.shield(storing), True
        except DuplicateTask:
            # Another server stored the same Idempotency-Key between our check and our insert.
            assert idem_key is not None
            original = await self.storage.find_idempotent(idem_key)
            if original is None or original.idem_hash != fingerprint:
                raise SubmissionError(
                    422, "Idempotency-Key", "Idempotency-Key was already used with a different body"
                ) from None
            return original, False

    @property
    def submits_then(self) -> bool:
        """submits_then: `submit_then` can store a submission here (the store `inserts_then`
        and no other server shares it); else submissions are awaited (`submit`)."""
        return not self.storage.shared and self.storage.inserts_then

    def submit_then(self, body: bytes, done: Callable[[Task | BaseException], None]) -> None:
        """submit_then is `submit` without an Idempotency-Key for a caller that cannot await
        (the HTTP protocol, answering as it parses), where the service `submits_then`: the
        body is validated and admitted at once, raising SubmissionError or Overloaded as
        submit does, and `done` gets the task once it is durable, or what storing it raised,
        on the loop's thread with no task or coroutine in between (each would cost a turn of
        a busy loop).

        A caller gone meanwhile changes nothing: the task is cached once stored, as submit's
        shield ensures."""
        spec = parse_submission(body, self.config.max_factorial_n)

        def stored(exc: BaseException | None) -> None:
            self._release(task)
            if exc is None:
                try:
                    self._admitted(task)
                except Exception as failed:  # told, as submit's caller would be: never left hanging
                    exc = failed
            done(task if exc is None else exc)

        task = self._admit(spec, None, None)
        try:
            self.storage.insert_then(task, stored)
        except BaseException:
            self._release(task)
            raise

    def _admit(
        self, spec: FactorialSpec | FetchSpec, idem_key: str | None, fingerprint: str | None
    ) -> Task:
        """_admit is admission control and the new task, counted as being stored."""
        if self.queue_depth() >= self.config.max_queue:
            self.metrics.rejections.labels("queue_full").inc()
            raise Overloaded(self.retry_after())
        self.queue.reserved += 1  # now, not once stored: the next request must see it
        self._seq += 1  # a shared store numbers the task itself
        params = spec.model_dump(exclude={"type"}, exclude_none=True)
        return Task(
            id=new_task_id(),
            seq=self._seq,
            type=TaskType(spec.type),
            params=params,
            idem_key=idem_key,
            idem_hash=fingerprint,
        )

    def _release(self, task: Task) -> None:
        """_release: the task is no longer being stored (stored, or failed to be)."""
        self.queue.reserved -= 1
        if task.idem_key is not None:
            self._storing.pop(task.idem_key, None)

    async def _store(self, task: Task) -> Task:
        try:
            await self.storage.insert(task)
        finally:
            self._release(task)
        self._admitted(task)
        return task

    def _admitted(self, task: Task) -> None:
        """_admitted: the task is durable; it is queued here (or left to every server's claim)."""
        if self.storage.shared:
            self._admitted_since += 1  # any server may claim it: not cached here
        else:
            self.queue.add(task)
        self.metrics.submissions.labels(task.type.value).inc()
        self.executor.kick()

    async def _idempotent(self, key: str) -> Task | None:
        storing = self._storing.get(key)
        if storing is not None:
            return await asyncio.shield(storing)
        cached = self.queue.idem.get(key)
        if cached is not None and (cached.status.finished or not self.storage.shared):
            return cached
        return await self.storage.find_idempotent(key)

    def queue_depth(self) -> int:
        """queue_depth is the admission-control figure: queued tasks (of all servers on a
        shared store, as last counted plus those stored here since) and those being stored."""
        if self._shared is None:
            return self.queue.depth()
        return self._shared[TaskStatus.QUEUED] + self._admitted_since + self.queue.reserved

    def retry_after(self) -> int:
        """retry_after estimates, in seconds, how long until a tenth of the queue has drained."""
        if self._drain_rate <= 0:
            return 1
        return max(1, min(30, math.ceil(0.1 * self.config.max_queue / self._drain_rate)))

    # --- reads -------------------------------------------------------------------------------

    def get_now(self, task_id: str) -> Task | None:
        """get_now returns a task when memory alone may answer for it, else None (then `get`).

        On a shared store only finished tasks are answered from memory (another server may
        claim, finish or cancel an unfinished one at any moment), until their TTL (another
        server may have deleted them then).
        """
        task = self.queue.tasks.get(task_id)
        if task is None or not self.storage.shared:
            return task
        fresh = (task.finished_at or 0) >= time.time() - self.config.result_ttl_s
        return task if task.status.finished and fresh else None

    async def get(self, task_id: str) -> Task | None:
        """get returns a task from memory (`get_now`), else from storage, else None."""
        task = self.get_now(task_id)
        if task is not None:
            return task
        cached = self.queue.tasks.get(task_id)
        if cached is not None and cached.status.finished:  # past its TTL: memory lets go
            self.queue.uncache(task_id)
        return await self.storage.get(task_id)

    def result_now(self, task_id: str) -> Result | None:
        """result_now is the result of a SUCCEEDED task when it finished here and is held in
        memory (call it after `get_now` or `get`, which mind the TTL), else None."""
        return self.queue.result(task_id)

    async def result(self, task_id: str) -> Result | None:
        """result returns the stored result of a SUCCEEDED task: from memory (`result_now`),
        else from storage."""
        cached = self.result_now(task_id)
        if cached is not None:
            return cached
        return await self.storage.get_result(task_id)

    async def list(self, status: TaskStatus | None, after_seq: int, limit: int) -> list[Task]:
        """list pages through tasks in submission order, after the given seq (keyset)."""
        tasks = await self.storage.list(status, after_seq, limit)
        if self.storage.shared:
            return tasks
        # The cache is fresher than storage for a task mid-transition; prefer it.
        return [self.queue.tasks.get(t.id, t) for t in tasks]

    def depth_by_status(self) -> Mapping[str, int]:
        """depth_by_status counts tasks per status (finished ones until their TTL)."""
        counts = {s.value: n for s, n in self.queue.counts.items()}
        counts[TaskStatus.QUEUED.value] += self.queue.reserved
        return counts

    def shared_depth(self) -> dict[str, int] | None:
        """shared_depth counts QUEUED and RUNNING tasks of all servers (None: not shared)."""
        if self._shared is None:
            return None
        return {s.value: n for s, n in self._shared.items()}

    def healthy(self) -> bool:
        """healthy tells whether submissions can be made durable right now."""
        return self.storage.healthy()

    # --- cancellation ------------------------------------------------------------------------

    async def cancel(self, task_id: str) -> Task | None:
        """cancel stops a QUEUED or RUNNING task (it ends FAILED 'cancelled').

        Returns None for an unknown id; raises NotCancellable when it had already finished.
        """
        task = self.queue.tasks.get(task_id)
        if self.storage.shared and task_id not in self.executor.running_ids():
            if task is None or not task.status.finished:
                return await self._cancel_shared(task_id)
        if task is None:
            stored = await self.storage.get(task_id)
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
            if self.storage.shared and not task.status.finished:
                # Our outcome was refused: the store moved on without us (another server
                # cancelled the task, or took it over). What it holds now is the answer.
                return await self._cancel_shared(task_id)
        if task.status is TaskStatus.FAILED and task.error == "cancelled":
            return task
        raise NotCancellable(task)

    async def _cancel_shared(self, task_id: str) -> Task | None:
        """_cancel_shared cancels a task that is not running here, in the database: a
        compare-and-set, so it loses cleanly to a server that finishes it first. A server
        still running it is told, and stops; one that misses the notice finds its outcome
        refused at the end and drops it."""
        for _ in range(10):  # each retry means the task changed state meanwhile
            stored = await self.storage.get(task_id)
            if stored is None:
                return None
            if stored.status.finished:
                if stored.status is TaskStatus.FAILED and stored.error == "cancelled":
                    return stored
                raise NotCancellable(stored)
            done = stored.evolve(
                status=TaskStatus.FAILED,
                error="cancelled",
                finished_at=time.time(),
                lease_until=None,
            )
            if await asyncio.shield(self.storage.update(done, prior=stored)):
                self.metrics.finished.labels(stored.type.value, TaskStatus.FAILED.value).inc()
                if stored.status is TaskStatus.RUNNING:  # its holder is to stop running it
                    await self.storage.announce_cancelled(task_id)
                return done
        assert stored is not None  # the loop returns when the task is gone
        raise NotCancellable(stored)

    # --- housekeeping ------------------------------------------------------------------------

    async def _refresh_shared(self) -> None:
        """_refresh_shared re-counts the shared queue and claims work that no notice announced."""
        while True:
            try:
                counts = await self.storage.unfinished()
                self._shared, self._admitted_since = counts, 0
            except Exception as exc:  # the database is away: keep the last count, try again
                log.debug("taskqueue: queue count failed: %s", exc)
            self.executor.kick()
            await asyncio.sleep(SHARED_REFRESH_S)

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
                    if self.storage.shared:
                        await self._reap_shared()
                if now - last_cleanup >= self.config.cleanup_every_s:
                    last_cleanup = now
                    await self.cleanup(time.time() - self.config.result_ttl_s)
            except StorageUnavailable as exc:  # the database is away: next round
                log.warning("taskqueue: housekeeping skipped: %s", exc)
            except Exception:  # housekeeping must outlive a failed round
                log.exception("taskqueue: housekeeping round failed")

    async def _reap_shared(self) -> None:
        """_reap_shared requeues (or FAILs 'abandoned') the tasks whose lease expired on any
        server: a server that died, or hung, without finishing them."""
        reaped = await self.storage.expire_leases(self.config.max_attempts)
        for task in reaped:
            self.metrics.lease_expiries.inc()
            if task.status.finished:
                self.metrics.finished.labels(task.type.value, task.status.value).inc()
        if reaped:
            log.info("taskqueue: took over %d task(s) whose lease had expired", len(reaped))
            self.executor.kick()

    def _finished_total(self) -> int:
        return self.queue.counts[TaskStatus.SUCCEEDED] + self.queue.counts[TaskStatus.FAILED]

    async def cleanup(self, cutoff: float) -> int:
        """cleanup deletes tasks (and results) finished before cutoff; returns how many."""
        total = 0
        while True:
            gone = await self.storage.delete_finished_before(cutoff, CLEANUP_BATCH)
            for task_id, status in gone:
                if self.storage.shared:  # counted where it finished: only uncache it here
                    self.queue.uncache(task_id)
                else:
                    self.queue.forget(task_id, status)
            total += len(gone)
            if len(gone) < CLEANUP_BATCH:
                return total
