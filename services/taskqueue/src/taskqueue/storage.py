"""Storage: the small persistence interface the service is written against.

SQLite (storage_sqlite.py) is the default: one server owns its data directory.
PostgreSQL (storage_postgres.py) is `shared`: any number of servers work on one database,
so a task's state may change under a server's feet (claimed, finished or cancelled by
another), and the service trusts its memory only for what cannot change any more.
Writes and reads are coroutines; a write returns only once the change is durable.
"""

from __future__ import annotations

import abc
import builtins  # `Storage.list` shadows the builtin in the annotations below it
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import orjson

from taskqueue.models import Task, TaskStatus, TaskType

TASK_COLUMNS = (
    "seq, id, type, params, status, submitted_at, started_at, finished_at, attempts, error,"
    " lease_until, idem_key, idem_hash"
)
"""TASK_COLUMNS: the columns a task is read back from, in task_from_row's order. Both
stores' schemas name them alike (params is JSON text in each)."""


def task_from_row(row: Sequence[Any]) -> Task:
    """task_from_row is the task record of a row selected as TASK_COLUMNS, from either store:
    one mapping, so that a new field cannot be read back by one store and dropped by the other."""
    return Task(
        seq=row[0],
        id=row[1],
        type=TaskType(row[2]),
        params=orjson.loads(row[3]),
        status=TaskStatus(row[4]),
        submitted_at=row[5],
        started_at=row[6],
        finished_at=row[7],
        attempts=row[8],
        error=row[9],
        lease_until=row[10],
        idem_key=row[11],
        idem_hash=row[12],
    )


class Result(NamedTuple):
    """Result is the outcome payload of a SUCCEEDED task: its media type and bytes."""

    content_type: str
    body: bytes


class Recovered(NamedTuple):
    """Recovered is what a restart needs: unfinished tasks, last seq, finished counts."""

    unfinished: list[Task]
    last_seq: int
    finished: dict[TaskStatus, int]


class StorageUnavailable(RuntimeError):
    """StorageUnavailable: the store cannot be reached now (the API answers 503 + Retry-After)."""


class DuplicateTask(RuntimeError):
    """DuplicateTask: a task with this id or Idempotency-Key is already stored."""


class Storage(abc.ABC):
    """Storage persists tasks and results; every write is durable when its coroutine returns."""

    shared = False
    """shared: other servers work on the same store (claims, leases and reads go to it)."""

    @abc.abstractmethod
    async def open(self) -> Recovered:
        """open prepares the store (schema, locks) and returns the unfinished tasks."""

    @abc.abstractmethod
    async def close(self) -> None:
        """close flushes pending writes and releases the store."""

    @abc.abstractmethod
    async def insert(self, task: Task) -> None:
        """insert stores a new task durably (it must not exist yet); a shared store sets
        task.seq from its own sequence, since servers cannot number tasks among themselves."""

    inserts_then = False
    """inserts_then: the store has `insert_then`."""

    def insert_then(self, task: Task, done: Callable[[BaseException | None], None]) -> None:
        """insert_then is insert for a caller that cannot await (the HTTP protocol answering a
        submission as it parses it), on a store that `inserts_then`: it starts the write, and
        `done` is called on the event loop's thread once the task is durable (None) or with
        what the write raised, with no task or coroutine in between."""
        raise NotImplementedError(f"{type(self).__name__} cannot insert without a coroutine")

    @abc.abstractmethod
    async def update(
        self, task: Task, result: Result | None = None, prior: Task | None = None
    ) -> bool:
        """update stores the task's current state, and its result when one is given.

        prior is the state this change replaces. A shared store applies the change only
        while the stored row still has prior's status and attempts (compare-and-set, so an
        attempt whose lease was taken over cannot overwrite its successor) and returns
        whether it did; a store owned by one server always applies it.
        """

    @abc.abstractmethod
    async def delete_finished_before(
        self, cutoff: float, limit: int
    ) -> list[tuple[str, TaskStatus]]:
        """delete_finished_before removes up to `limit` tasks finished before cutoff."""

    @abc.abstractmethod
    async def get(self, task_id: str) -> Task | None:
        """get reads one task from the store (for tasks not cached in memory)."""

    @abc.abstractmethod
    async def get_result(self, task_id: str) -> Result | None:
        """get_result reads the stored result of a SUCCEEDED task."""

    @abc.abstractmethod
    async def find_idempotent(self, key: str) -> Task | None:
        """find_idempotent returns the task submitted with this Idempotency-Key, if any."""

    @abc.abstractmethod
    async def list(self, status: TaskStatus | None, after_seq: int, limit: int) -> list[Task]:
        """list returns up to `limit` tasks with seq > after_seq, in order (keyset)."""

    @abc.abstractmethod
    def healthy(self) -> bool:
        """healthy tells whether writes can currently be made durable."""

    # --- shared stores only ------------------------------------------------------------------

    async def claim(self, kind: TaskType, limit: int, lease_s: float) -> builtins.list[Task]:
        """claim makes up to `limit` of the oldest QUEUED tasks of a kind RUNNING for this
        server and returns them, durable: attempts + 1, and a lease of lease_s seconds plus
        the task's own `timeout_ms` when it has one (a lease outlives the task's time limit)."""
        raise NotImplementedError

    async def expire_leases(self, max_attempts: int) -> builtins.list[Task]:
        """expire_leases requeues every RUNNING task whose lease has passed (or FAILs it
        'abandoned' once out of attempts), whichever server held it; returns them."""
        raise NotImplementedError

    async def unfinished(self) -> dict[TaskStatus, int]:
        """unfinished counts QUEUED and RUNNING tasks over all servers."""
        raise NotImplementedError

    def on_new_tasks(self, wake: Callable[[], None]) -> None:  # noqa: B027 (optional hook)
        """on_new_tasks registers a callback run when any server has stored new tasks."""

    def on_cancelled(self, stop: Callable[[str], None]) -> None:  # noqa: B027 (optional hook)
        """on_cancelled registers a callback run with a task's id when any server has
        cancelled it in a shared store (the server running it is to stop)."""

    async def announce_cancelled(self, task_id: str) -> None:  # noqa: B027 (optional hook)
        """announce_cancelled tells every server that a task was cancelled in a shared store."""
