"""The group commit of the PostgreSQL store: ops queue up while a transaction is in flight,
and the next transaction takes all of them (up to a bound), a few transactions at once."""

from __future__ import annotations

import asyncio
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
        flush: Callable[[list[Op]], Awaitable[list[Any]]],
        key: Callable[[Op], Any],
        parallel: int,
    ) -> None:
        self._flush = flush
        self._key = key
        self._items: deque[tuple[Op, asyncio.Future[Any]]] = deque()
        self._slots = asyncio.Semaphore(parallel)
        self._wake = asyncio.Event()
        self._inflight: set[asyncio.Task[None]] = set()
        self._loop_task: asyncio.Task[None] | None = None
        self.batches = 0

    def start(self) -> None:
        self._loop_task = asyncio.get_running_loop().create_task(self._run())

    def submit(self, op: Op) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._items.append((op, fut))
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

    def _take(self) -> list[tuple[Op, asyncio.Future[Any]]]:
        batch: list[tuple[Op, asyncio.Future[Any]]] = []
        keys: set[Any] = set()
        while self._items and len(batch) < MAX_BATCH:
            key = self._key(self._items[0][0])
            if key is not None and key in keys:
                break
            keys.add(key)
            batch.append(self._items.popleft())
        return batch

    async def _commit_in_slot(self, batch: list[tuple[Op, asyncio.Future[Any]]]) -> None:
        try:
            await self._commit(batch)
        finally:
            self._slots.release()
            if self._items:
                self._wake.set()

    async def _commit(self, batch: list[tuple[Op, asyncio.Future[Any]]]) -> None:
        self.batches += 1
        try:
            values = await self._flush([op for op, _ in batch])
            outcomes: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = [
                (fut, v, None) for (_, fut), v in zip(batch, values, strict=True)
            ]
        except StorageUnavailable as exc:
            outcomes = [(fut, None, exc) for _, fut in batch]
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
