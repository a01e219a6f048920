"""Storage: the small persistence interface the service is written against.

SQLite (storage_sqlite.py) is the default; a PostgreSQL backend would implement the same
methods. Writes are coroutines that return only once the change is durable; reads are
plain calls because the in-memory cache answers the hot ones and the rest are point or
range lookups on an index.
"""

from __future__ import annotations

import abc
from typing import NamedTuple

from taskqueue.models import Task, TaskStatus


class Result(NamedTuple):
    """Result is the outcome payload of a SUCCEEDED task: its media type and bytes."""

    content_type: str
    body: bytes


class Recovered(NamedTuple):
    """Recovered is what a restart needs: unfinished tasks, last seq, finished counts."""

    unfinished: list[Task]
    last_seq: int
    finished: dict[TaskStatus, int]


class Storage(abc.ABC):
    """Storage persists tasks and results; every write is durable when its coroutine returns."""

    @abc.abstractmethod
    async def open(self) -> Recovered:
        """open prepares the store (schema, locks) and returns the unfinished tasks."""

    @abc.abstractmethod
    async def close(self) -> None:
        """close flushes pending writes and releases the store."""

    @abc.abstractmethod
    async def insert(self, task: Task) -> None:
        """insert stores a new task durably (it must not exist yet)."""

    @abc.abstractmethod
    async def update(self, task: Task, result: Result | None = None) -> None:
        """update stores the task's current state, and its result when one is given."""

    @abc.abstractmethod
    async def delete_finished_before(
        self, cutoff: float, limit: int
    ) -> list[tuple[str, TaskStatus]]:
        """delete_finished_before removes up to `limit` tasks finished before cutoff."""

    @abc.abstractmethod
    def get(self, task_id: str) -> Task | None:
        """get reads one task from the store (for tasks no longer cached in memory)."""

    @abc.abstractmethod
    def get_result(self, task_id: str) -> Result | None:
        """get_result reads the stored result of a SUCCEEDED task."""

    @abc.abstractmethod
    def find_idempotent(self, key: str) -> Task | None:
        """find_idempotent returns the task submitted with this Idempotency-Key, if any."""

    @abc.abstractmethod
    def list(self, status: TaskStatus | None, after_seq: int, limit: int) -> list[Task]:
        """list returns up to `limit` tasks with seq > after_seq, in order (keyset)."""

    @abc.abstractmethod
    def healthy(self) -> bool:
        """healthy tells whether writes can currently be made durable."""
