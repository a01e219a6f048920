"""The group commit of the PostgreSQL store: ops queue up while a transaction is in flight,
and the next transaction takes all of them (up to a bound), a few transactions at once.

Each op has one time bound from its submission (``budget_s``): the wait for a free slot and
its transaction share it. A transaction is given what is left of its ops' earliest bound, and
an op whose bound passed while it queued fails without being sent. So a database that stops
answering fails a caller once, at its bound, not at the bound of the transaction it queued
behind and then at its own (twice the bound)."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from taskqueue.storage import StorageUnavailable

MAX_BATCH = 1000
"""MAX_BATCH bounds one group commit, so that a flood cannot make one transaction huge."""

Op = TypeVar("Op")


class Batcher(Generic[Op]):
    """Batcher group-commits queued ops: up to `parallel` transactions of up to MAX_BATCH.

    An op with the `key` of one already in the forming batch waits for the next batch, so
    one transaction never changes the same row twice.
    """

    def __init__(
        self,
        flush: Callable[[list[Op], float], Awaitable[list[Any]]],
        key: Callable[[Op], Any],
        parallel: int,
        budget_s: float,
    ) -> None:
        # flush(ops, deadline): one transaction, done by `deadline` (time.monotonic()).
        self._flush = flush
        self._key = key
        self._budget_s = budget_s
        self._items: deque[tuple[Op, asyncio.Future[Any], float]] = deque()
        self._slots = asyncio.Semaphore(parallel)
        self._wake = asyncio.Event()
        self._inflight: set[asyncio.Task[None]] = set()
        self._loop_task: asyncio.Task[None] | None = None
        self.batches = 0

    def start(self) -> None:
        self._loop_task = asyncio.get_running_loop().create_task(self._run())

    def submit(self, op: Op) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._items.append((op, fut, time.monotonic() + self._budget_s))
        self._wake.set()
        return fut

    async def stop(self) -> None:
        """stop lets queued and in-flight batches finish, then ends the loop."""
        while self._items or self._inflight:
            self._wake.set()
            await asyncio.sleep(0.01)
        if self._loop_task is not None:
            self._loop_task.cancel()
            await asyncio.gather(self._loop_task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._items:
                await self._slots.acquire()
                batch = self._take()
                if not batch:
                    self._slots.release()
                    break
                job = asyncio.get_running_loop().create_task(self._commit_in_slot(batch))
                self._inflight.add(job)
                job.add_done_callback(self._inflight.discard)

    def _take(self) -> list[tuple[Op, asyncio.Future[Any], float]]:
        batch: list[tuple[Op, asyncio.Future[Any], float]] = []
        keys: set[Any] = set()
        now = time.monotonic()
        while self._items and len(batch) < MAX_BATCH:
            op, fut, deadline = self._items[0]
            if deadline <= now:  # its bound passed while it queued: never sent
                self._items.popleft()
                if not fut.done():
                    fut.set_exception(
                        StorageUnavailable(f"no database answer within {self._budget_s:g} s")
                    )
                continue
            key = self._key(op)
            if key is not None and key in keys:
                break
            keys.add(key)
            batch.append(self._items.popleft())
        return batch

    async def _commit_in_slot(self, batch: list[tuple[Op, asyncio.Future[Any], float]]) -> None:
        try:
            await self._commit(batch)
        finally:
            self._slots.release()
            if self._items:
                self._wake.set()

    async def _commit(self, batch: list[tuple[Op, asyncio.Future[Any], float]]) -> None:
        self.batches += 1
        try:
            values = await self._flush([op for op, _, _ in batch], min(d for _, _, d in batch))
            outcomes: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = [
                (fut, v, None) for (_, fut, _), v in zip(batch, values, strict=True)
            ]
        except StorageUnavailable as exc:
            outcomes = [(fut, None, exc) for _, fut, _ in batch]
        except Exception as exc:
            if len(batch) > 1:  # find the bad op: one transaction each, so the rest still land
                for item in batch:
                    await self._commit([item])
                return
            outcomes = [(batch[0][1], None, exc)]
        for fut, value, err in outcomes:
            if fut.done():
                continue
            if err is None:
                fut.set_result(value)
            else:
                fut.set_exception(err)
