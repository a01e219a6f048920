"""Executor: runs queued tasks within resource bounds, under leases and per-type timeouts.

Factorials are CPU-bound and go to a process pool sized to the cores; fetches are I/O and
run on the event loop through the one shared Fetcher, at most `fetch_concurrency` at a
time. A task's RUNNING state (with its lease and attempt count) is durable before its work
starts, and its final state (with the result) is durable before anyone can read it.

On a shared store the executor claims work from the database instead of the in-memory
queue (a batch at a time, `FOR UPDATE SKIP LOCKED`), and every later state change is a
compare-and-set: an outcome the store refuses (the lease was taken over, or the task was
cancelled by another server) is dropped and counted in `taskqueue_stale_outcomes_total`.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import multiprocessing
import os
import time
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from taskqueue.config import Config
from taskqueue.factorial import factorial_digits
from taskqueue.fetch import Fetcher, FetchError, PoolUse, deadline
from taskqueue.metrics import Metrics
from taskqueue.models import Task, TaskStatus, TaskType
from taskqueue.queue import TaskQueue
from taskqueue.storage import Result, Storage, StorageUnavailable
from taskqueue.worker import die_with_parent

log = logging.getLogger("taskqueue")

INLINE_MAX_N = 3000
"""INLINE_MAX_N: up to this n, n! is computed on the event loop. Measured on the 2-core dev box:
a pool round trip costs the main process 100-140 us of CPU whatever n is, while computing
3000! costs about 85 us (5000!: 200 us). Below the break-even, offloading would spend more of
the serving process's CPU than it saves, and block the loop for longer than it frees it."""

FACTORIAL_IN_FLIGHT = 256
"""FACTORIAL_IN_FLIGHT: factorial tasks started at once. Most of a task's life is waiting for
its claim and result to be group-committed, so far more than `workers` must be in flight to
keep the pool busy; the pool's own queue still runs only `workers` computations at a time."""

FETCH_TIMEOUT_SLACK_S = 2.0
"""FETCH_TIMEOUT_SLACK_S: the outer guard over the fetcher's own deadline."""

CLAIM_BATCH = 32
"""CLAIM_BATCH: tasks claimed from a shared store in one statement. Bounded so that one server
does not take a long queue's head for itself while the others sit idle."""

CLAIM_GATHER_S = 0.02
"""CLAIM_GATHER_S: on a shared store a claim waits this long after the kick that asked for it,
so that one statement (one commit, one WAL flush) claims the tasks of several submissions
instead of one claim each (1.3 claims per task under the seed-000 mix without it). A client
polls once a second: 20 ms before a task starts is nothing it can see."""

_KINDS = tuple(TaskType)
"""_KINDS: the task types, iterated at every kick (iterating the Enum itself costs more)."""

STORE_RETRY_S = 0.5
"""STORE_RETRY_S: how often an outcome is retried while a shared store is unreachable (until
the task's lease runs out; after that another server will run the task again)."""


class Phase(enum.Enum):
    """Phase is where a running task is; a cancel during FINISHING waits instead of cancelling."""

    CLAIMING = "claiming"
    EXECUTING = "executing"
    FINISHING = "finishing"


DROPS_KEPT = 1024
"""DROPS_KEPT: how many tasks cancelled elsewhere and not running here when told are
remembered, so that a claim of one that raced its cancel (the claim committed first, its
answer came after the notice) is not started."""


class StopReason(enum.Enum):
    """StopReason says why a running task's coroutine was cancelled."""

    CANCELLED = "cancelled"
    CANCELLED_ELSEWHERE = "cancelled by another server"
    LEASE_EXPIRED = "lease expired"
    SHUTDOWN = "shutdown"


class _Run:
    __slots__ = ("task", "aio", "phase", "stop")

    def __init__(self, task: Task) -> None:
        self.task = task
        self.aio: asyncio.Task[None] | None = None
        self.phase = Phase.CLAIMING
        self.stop: StopReason | None = None


class Executor:
    """Executor pulls tasks from the TaskQueue while it has free slots of each type."""

    def __init__(
        self, config: Config, storage: Storage, queue: TaskQueue, metrics: Metrics
    ) -> None:
        self._config = config
        self._storage = storage
        self._queue = queue
        self._metrics = metrics
        self._slots = {
            TaskType.FACTORIAL: max(FACTORIAL_IN_FLIGHT, config.workers * 2),
            TaskType.HTTP_FETCH: config.fetch_concurrency,
        }
        self._busy = {t: 0 for t in TaskType}
        self._runs: dict[str, _Run] = {}
        self._dropping: set[asyncio.Task[bool]] = set()  # drops under way (kept referenced)
        self._dropped: OrderedDict[str, None] = OrderedDict()  # told before it ran here
        self._pool: ProcessPoolExecutor | None = None
        self._fetcher: Fetcher | None = None
        self._stopping = False
        self._claiming: dict[TaskType, asyncio.Task[None]] = {}
        self._claim_again: set[TaskType] = set()

    async def start(self) -> None:
        """start creates the worker processes (warmed up) and the shared fetcher."""
        self._pool = self._new_pool()
        loop = asyncio.get_running_loop()
        await asyncio.gather(
            *(
                loop.run_in_executor(self._pool, factorial_digits, 1)
                for _ in range(self._config.workers)
            )
        )
        self._fetcher = Fetcher(
            allow_cidrs=list(self._config.allow_fetch_cidrs),
            max_bytes=self._config.max_fetch_bytes,
            max_redirects=5,
            max_connections=self._config.fetch_concurrency,
            max_per_host=self._config.fetch_per_host,
            on_hedge=self._metrics.hedges.inc,
        )

    def _new_pool(self) -> ProcessPoolExecutor:
        # spawn: forking a process that runs threads (the SQLite writer) and uvloop is unsafe.
        # The workers are spawned from the event loop's thread (submit), which lives as long
        # as the service, so the parent-death signal fires when the service does.
        return ProcessPoolExecutor(
            self._config.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=die_with_parent,
            initargs=(os.getpid(),),
        )

    async def stop(self) -> None:
        """stop requeues running tasks (attempt refunded) and frees resources."""
        self._stopping = True
        # Claims in flight hand their tasks over as runs already told to stop (requeued).
        await asyncio.gather(*self._claiming.values(), return_exceptions=True)
        runs = list(self._runs.values())
        for run in runs:
            if run.phase is not Phase.FINISHING and run.aio is not None:
                run.stop = StopReason.SHUTDOWN
                if run.phase is Phase.EXECUTING:
                    run.aio.cancel()
        await asyncio.gather(*(r.aio for r in runs if r.aio is not None), return_exceptions=True)
        if self._fetcher is not None:
            await self._fetcher.close()
        if self._pool is not None:
            _end(self._pool)

    def slots(self) -> dict[TaskType, tuple[int, int]]:
        """slots is, per task type, the tasks running here and how many may run at once."""
        return {kind: (self._busy[kind], self._slots[kind]) for kind in TaskType}

    def pool_use(self) -> PoolUse | None:
        """pool_use is the fetch pool's occupancy (None before start)."""
        return None if self._fetcher is None else self._fetcher.pool_use()

    def kick(self) -> None:
        """kick starts as many queued tasks as there are free slots; call it after any change."""
        if self._stopping:
            return
        if self._storage.shared:
            for kind in TaskType:
                if self._busy[kind] < self._slots[kind]:
                    self._claim_soon(kind)
            return
        for kind in _KINDS:
            while self._busy[kind] < self._slots[kind] and self._queue.has_pending(kind):
                task = self._queue.pop(kind)
                if task is None:
                    break
                self._start(task)

    def _claim_soon(self, kind: TaskType) -> None:
        if kind in self._claiming:
            self._claim_again.add(kind)  # new work may have come after that claim's query
            return
        job = asyncio.get_running_loop().create_task(self._claim(kind))
        self._claiming[kind] = job

    async def _claim(self, kind: TaskType) -> None:
        """_claim takes QUEUED tasks of a kind from the shared store while slots are free."""
        try:
            await asyncio.sleep(CLAIM_GATHER_S)
            while not self._stopping:
                self._claim_again.discard(kind)
                want = min(CLAIM_BATCH, self._slots[kind] - self._busy[kind])
                if want <= 0:
                    return
                try:
                    tasks = await self._storage.claim(kind, want, self._lease_base_s(kind))
                except StorageUnavailable:
                    return  # the service's refresh loop kicks again shortly
                except Exception:  # a claim bug must not end claiming for good
                    log.exception("taskqueue: claiming %s tasks failed", kind.value)
                    return
                for task in tasks:
                    if task.id in self._dropped:  # cancelled while we claimed it: stored so
                        del self._dropped[task.id]
                        continue
                    self._queue.add(task)
                    self._start(task)
                if len(tasks) < want:
                    if kind not in self._claim_again:
                        return
                    await asyncio.sleep(CLAIM_GATHER_S)  # gather again before the next
        finally:
            self._claiming.pop(kind, None)

    def _lease_base_s(self, kind: TaskType) -> float:
        """_lease_base_s: a lease outlives the task's time limit by --lease-grace-s (a fetch's
        own timeout_ms is added by the store, from the task's parameters)."""
        if kind is TaskType.FACTORIAL:
            return self._config.factorial_timeout_s + self._config.lease_grace_s
        return FETCH_TIMEOUT_SLACK_S + self._config.lease_grace_s

    def _start(self, task: Task) -> None:
        run = _Run(task)
        if self._stopping:
            run.stop = StopReason.SHUTDOWN
        self._runs[task.id] = run
        self._busy[task.type] += 1
        run.aio = asyncio.get_running_loop().create_task(self._run(run))

    def running_ids(self) -> list[str]:
        """running_ids lists the tasks this executor is running."""
        return list(self._runs)

    async def cancel(self, task_id: str, reason: StopReason) -> bool:
        """cancel stops a running task and waits until its final state is stored.

        Returns False when the task is not running here or was already finishing (its
        outcome stands). A task still being claimed is stopped right after its claim is
        durable, so the stored states always follow the order they happened in.
        """
        run = self._runs.get(task_id)
        if run is None or run.aio is None:
            return False
        if run.phase is Phase.FINISHING:
            await asyncio.wait({run.aio})
            return False
        run.stop = reason
        if run.phase is Phase.EXECUTING:
            run.aio.cancel()
        await asyncio.wait({run.aio})
        return True

    def drop(self, task_id: str) -> None:
        """drop stops a run whose task another server cancelled in the shared store, which
        holds the outcome already: the run's own is stored nowhere. A task not running here
        is remembered, in case a claim of it is on its way back."""
        if task_id not in self._runs:
            self._dropped[task_id] = None
            while len(self._dropped) > DROPS_KEPT:
                self._dropped.popitem(last=False)
            return
        stopping = asyncio.get_running_loop().create_task(
            self.cancel(task_id, StopReason.CANCELLED_ELSEWHERE)
        )
        self._dropping.add(stopping)
        stopping.add_done_callback(self._dropping.discard)

    def expire_leases(self, now: float) -> int:
        """expire_leases stops runs whose lease has passed (a hung worker); returns how many."""
        expired = [
            r
            for r in self._runs.values()
            if r.phase is Phase.EXECUTING and (r.task.lease_until or now) < now
        ]
        for run in expired:
            asyncio.get_running_loop().create_task(
                self.cancel(run.task.id, StopReason.LEASE_EXPIRED)
            )
        return len(expired)

    async def _run(self, run: _Run) -> None:
        task = run.task
        try:
            await self._execute(run)
        finally:
            self._runs.pop(task.id, None)
            self._busy[task.type] -= 1
            self.kick()

    async def _execute(self, run: _Run) -> None:
        task = run.task
        timeout = self._timeout_s(task)
        started = time.perf_counter()
        try:
            if task.status is TaskStatus.QUEUED:  # a local store: claim it now (shared: done)
                now = time.time()
                claimed = task.evolve(
                    status=TaskStatus.RUNNING,
                    attempts=task.attempts + 1,
                    started_at=now,
                    finished_at=None,
                    error=None,
                    lease_until=now + timeout + self._config.lease_grace_s,
                )
                await self._settle(task, claimed)
                started = time.perf_counter()  # durations measure the work, not the claim
            if run.stop is not None:
                await self._stopped(run)
                return
            run.phase = Phase.EXECUTING
            # A bound on this task, not asyncio.wait_for: that runs the work in a task of its own.
            async with deadline(timeout):
                result = await self._work(task)
        except asyncio.CancelledError:
            if run.phase is Phase.CLAIMING:  # the loop itself is going away
                raise
            await self._stopped(run)
            return
        except TimeoutError:
            await self._finish(
                run, TaskStatus.FAILED, f"timeout after {timeout:g} s", None, started
            )
            return
        except FetchError as exc:
            await self._finish(run, TaskStatus.FAILED, exc.reason, None, started)
            return
        except BrokenProcessPool:
            await self._retry_or_fail(run, "worker process died", started)
            return
        except Exception as exc:  # an executor bug must fail one task, not the service
            log.exception("taskqueue: task %s crashed", task.id)
            await self._finish(
                run, TaskStatus.FAILED, f"internal error: {type(exc).__name__}", None, started
            )
            return
        await self._finish(run, TaskStatus.SUCCEEDED, None, result, started)

    def _timeout_s(self, task: Task) -> float:
        if task.type is TaskType.FACTORIAL:
            return self._config.factorial_timeout_s
        return task.params.get("timeout_ms", 10_000) / 1000 + FETCH_TIMEOUT_SLACK_S

    async def _work(self, task: Task) -> Result:
        if task.type is TaskType.FACTORIAL:
            n = int(task.params["n"])
            if n <= INLINE_MAX_N:
                return Result("text/plain", factorial_digits(n).encode())
            pool = self._pool
            assert pool is not None
            try:
                digits = await asyncio.get_running_loop().run_in_executor(pool, factorial_digits, n)
            except BrokenProcessPool:
                if self._pool is pool:  # the first task to notice replaces the pool, once
                    log.error("taskqueue: a factorial worker process died; restarting the pool")
                    self._pool = self._new_pool()
                    _end(pool)
                raise
            return Result("text/plain", digits.encode())
        assert self._fetcher is not None
        got = await self._fetcher.fetch(
            task.params["url"],
            timeout_ms=task.params.get("timeout_ms", 10_000),
            hedge_after_ms=task.params.get("hedge_after_ms"),
        )
        return Result(got.content_type, got.content)

    async def _finish(
        self,
        run: _Run,
        status: TaskStatus,
        error: str | None,
        result: Result | None,
        started: float,
    ) -> None:
        run.phase = Phase.FINISHING
        task = run.task
        self._metrics.duration.labels(task.type.value).observe(time.perf_counter() - started)
        done = task.evolve(status=status, error=error, finished_at=time.time(), lease_until=None)
        if await self._settle(task, done, result):
            self._metrics.finished.labels(task.type.value, status.value).inc()

    async def _retry_or_fail(self, run: _Run, why: str, started: float) -> None:
        task = run.task
        if task.attempts < self._config.max_attempts:
            again = task.evolve(status=TaskStatus.QUEUED, lease_until=None, error=None)
            await self._settle(task, again)
        else:
            await self._finish(run, TaskStatus.FAILED, why, None, started)

    async def _stopped(self, run: _Run) -> None:
        """_stopped settles a stopped run according to why it was stopped."""
        task = run.task
        reason = run.stop or StopReason.SHUTDOWN
        if reason is StopReason.SHUTDOWN:
            # Our own shutdown is not the task's fault: give the attempt back and requeue it.
            again = task.evolve(
                status=TaskStatus.QUEUED,
                attempts=task.attempts - 1,
                lease_until=None,
                started_at=None,
            )
            await self._settle(task, again)
        elif reason is StopReason.CANCELLED_ELSEWHERE:
            self._queue.discard(task)  # the store holds the cancel: not ours to cache
        elif reason is StopReason.LEASE_EXPIRED:
            self._metrics.lease_expiries.inc()
            await self._retry_or_fail(run, "abandoned", time.perf_counter())
        else:
            await self._finish(run, TaskStatus.FAILED, "cancelled", None, time.perf_counter())

    async def _settle(self, task: Task, new: Task, result: Result | None = None) -> bool:
        """_settle makes `new` (and its result) durable, then shows it: returns False when a
        shared store refused it, the task being another server's now (or cancelled)."""
        applied = await asyncio.shield(self._store(task, new, result))
        if not applied:
            self._metrics.stale_outcomes.inc()
            log.warning(
                "taskqueue: outcome of task %s (attempt %d) dropped: its lease was taken over",
                task.id,
                task.attempts,
            )
            self._queue.discard(task)
        elif self._storage.shared and new.status is TaskStatus.QUEUED:
            self._queue.discard(task)  # any server may claim it now: not ours to cache
            task.adopt(new)
        else:
            self._queue.transition(task, new)
            if result is not None and new.status is TaskStatus.SUCCEEDED:
                self._queue.keep_result(task.id, result)
        return applied

    async def _store(self, task: Task, new: Task, result: Result | None) -> bool:
        """_store writes a change, retrying while a shared store is unreachable for as long
        as the task's lease lasts (past it, the task is another server's to run again)."""
        while True:
            try:
                return await self._storage.update(new, result, prior=task)
            except StorageUnavailable:
                if not self._storage.shared or time.time() > (task.lease_until or 0):
                    return False
                await asyncio.sleep(STORE_RETRY_S)


def _end(pool: ProcessPoolExecutor) -> None:
    """_end shuts a pool down without waiting and kills its workers: one deep in a long
    factorial would otherwise keep the service from exiting, or outlive it."""
    workers = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in workers:
        if proc.is_alive():
            proc.kill()
