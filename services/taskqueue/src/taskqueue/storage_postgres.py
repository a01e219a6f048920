"""PostgreSQL storage: any number of taskqueue servers on one database (asyncpg, its pool).

Work is shared through row locks, not messages. A server claims the oldest QUEUED tasks
with `FOR UPDATE SKIP LOCKED` (two servers never get the same row, and neither waits for
the other) and marks them RUNNING with an attempt count and a lease. Every later change
of a claimed task is a compare-and-set on (status, attempts): once a lease has expired and
another server has taken the task over, the first one's outcome no longer applies, so a
task completes at most once per attempt and each extra attempt is counted. Any server
reaps expired leases, whichever server held them: that is how a dead one's tasks are
taken over.

Writes are group-committed as in SQLite: submissions, state changes and claims queue up
while a transaction is in flight, and the next one takes all of them, of every kind, in one
call of the `taskqueue_write` function: one round trip, one transaction and one WAL flush
cover a batch (a couple of batches run at once on the pool). A submitted task's seq, a
change's compare-and-set and a claim's tasks all come back from that one call.

The `tasks` table has no index on any column that changes, so a claim or an outcome is a HOT
update (no index entries, old or new); the small `unfinished` table (one row per QUEUED or
RUNNING task, holding its lease) is where claims and lease expiry look for work. Times
(started_at, lease_until) come from the database's clock, the one clock all servers share.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, NamedTuple

import orjson

from taskqueue.batcher import Batcher
from taskqueue.models import Task, TaskStatus, TaskType
from taskqueue.postgres_schema import MIGRATION_LOCK, MIGRATIONS
from taskqueue.storage import (
    TASK_COLUMNS,
    DuplicateTask,
    Recovered,
    Result,
    Storage,
    StorageUnavailable,
    task_from_row,
)

try:
    import asyncpg
except ImportError:  # pragma: no cover - checked with a clear message in open()
    asyncpg = None

log = logging.getLogger("taskqueue")

TIMEOUT_S = 5.0
"""TIMEOUT_S bounds every database call, all of it (the wait for a group commit's slot, for a
pooled connection, the statement): past it the request answers 503 instead of hanging while
the database is unreachable. One bound, not one for each step: a stalled database answered a
submission in 10.02 s when the pool wait, the statement and the release that waited for the
statement's cancel each had 5 s of their own (tests/test_postgres_faults.py)."""


def _deadline() -> float:
    """_deadline: the time (time.monotonic()) by which a call starting now must be done."""
    return time.monotonic() + TIMEOUT_S


def _left(deadline: float) -> float:
    """_left: the seconds left until ``deadline``; TimeoutError when none are."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError(f"no database answer within {TIMEOUT_S:g} s")
    return left


POOL_SIZE = 16
"""POOL_SIZE: connections per server (group commits, reads, housekeeping)."""

PARALLEL_WRITES = 2
"""PARALLEL_WRITES: group commits in flight at once. Each commit waits for its WAL flush (a few
ms on an ordinary disk); while one flushes, the next executes and more work queues behind it.
More in flight would split the same work into more, smaller commits, each a flush of its own."""

PARALLEL_READS = 2
"""PARALLEL_READS: batched task reads (status polls of unfinished tasks) in flight at once. Two
keep the database busy while the next batch forms (on two cores it runs no more at once);
more would only make the batches smaller."""

CHANNEL = "taskqueue_new"
"""CHANNEL is the NOTIFY channel on which a server tells the others it stored new tasks."""

CANCEL_CHANNEL = "taskqueue_cancelled"
"""CANCEL_CHANNEL is the NOTIFY channel on which a server that cancelled a task in the database
names it (the payload is its id), so that a server still running it stops."""

_NOW = "extract(epoch from clock_timestamp())"

_WRITE = "SELECT * FROM taskqueue_write(" + ", ".join(f"${n}" for n in range(1, 27)) + ")"
"""_WRITE is one group commit: new tasks, state changes and claims of every kind together, in
one statement (the function above) and so one transaction, one round trip and one WAL flush.
In autocommit it is its own transaction. Rows come back tagged: 'i' (inserted: seq, id),
'u' (a change applied: seq), 'c' (claimed, by the claim numbered r_ord: the whole task)."""

_GET = f"SELECT {TASK_COLUMNS} FROM tasks WHERE id = ANY($1::text[])"
"""_GET reads a batch of tasks by id: the polls that arrived while the last read was in flight
share one statement, so a poll costs a share of a round trip instead of one."""

_EXPIRE = f"""
WITH x AS (
    SELECT seq FROM unfinished WHERE lease_until < {_NOW} FOR UPDATE SKIP LOCKED
), t AS (
    UPDATE tasks SET
        status = CASE WHEN attempts < $1 THEN 'QUEUED' ELSE 'FAILED' END,
        error = CASE WHEN attempts < $1 THEN NULL ELSE 'abandoned' END,
        finished_at = CASE WHEN attempts < $1 THEN NULL ELSE {_NOW} END,
        lease_until = NULL, owner = NULL
    FROM x WHERE tasks.seq = x.seq AND tasks.status = 'RUNNING'
    RETURNING tasks.*
), gone AS (
    DELETE FROM unfinished f USING t WHERE f.seq = t.seq AND t.status = 'FAILED'
), back AS (
    UPDATE unfinished f SET lease_until = NULL FROM t WHERE f.seq = t.seq AND t.status = 'QUEUED'
)
SELECT {TASK_COLUMNS} FROM t
"""
"""_EXPIRE requeues (or FAILs) the tasks whose lease has passed, locking their `unfinished`
rows first (skipping those a state change holds), as every writer does."""

_DELETE = """
WITH gone AS (
    DELETE FROM tasks WHERE seq IN (
        SELECT seq FROM tasks
        WHERE submitted_at < $1 AND finished_at < $1 AND status IN ('SUCCEEDED', 'FAILED')
        ORDER BY submitted_at LIMIT $2
        FOR UPDATE SKIP LOCKED
    ) RETURNING seq, id, status
), r AS (DELETE FROM results WHERE seq IN (SELECT seq FROM gone))
SELECT id, status FROM gone
"""
"""_DELETE removes tasks finished before $1 through the index on submitted_at (a task is
submitted before it finishes; finished_at is not indexed, so that finishing stays HOT)."""


def _unavailable_errors() -> tuple[type[BaseException], ...]:
    """_unavailable_errors: the failures that mean "the database cannot be reached now"."""
    errors: list[type[BaseException]] = [OSError, TimeoutError, asyncio.TimeoutError]
    if asyncpg is not None:
        errors += [
            asyncpg.InterfaceError,  # the connection was closed under us
            asyncpg.InternalClientError,  # ... or left mid-operation by a crash (see _con)
            asyncpg.PostgresConnectionError,
            asyncpg.exceptions.OperatorInterventionError,  # shutdown, admin termination
            asyncpg.exceptions.InsufficientResourcesError,  # too many connections, disk full
            # Refused at connect: the database is gone (dropped, or another server now
            # answers at its address) or the role may not log in. No statement ran.
            asyncpg.exceptions.InvalidCatalogNameError,
            asyncpg.exceptions.InvalidAuthorizationSpecificationError,
        ]
    return tuple(errors)


async def _keep_session(con: Any) -> None:
    """_keep_session replaces asyncpg's reset of a connection returned to the pool.

    The default sends `SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL`
    on every release: a second round trip for each one-statement read, and four of every
    five statements PostgreSQL ran under the seed-000 mix (pg_stat_statements). This store
    leaves nothing to reset: no session settings, cursors or session-level advisory locks
    (migrate's lock is transaction-scoped), and it LISTENs on its own connection, not a
    pooled one. asyncpg still rolls back a transaction left open before calling this.
    """


class _Insert(NamedTuple):
    task: Task


class _Change(NamedTuple):
    task: Task  # the new state (a snapshot)
    result: Result | None
    prior: Task | None


class _Claim(NamedTuple):
    kind: TaskType
    limit: int
    lease_s: float


_Write = _Insert | _Change | _Claim


def _write_key(op: _Write) -> Any:
    """_write_key: ops that must not share a transaction (see Batcher) have equal keys: two
    changes of one task, two submissions of one Idempotency-Key, two claims of one kind."""
    if isinstance(op, _Insert):
        return None if op.task.idem_key is None else ("i", op.task.idem_key)
    if isinstance(op, _Change):
        return ("u", op.task.seq)
    return ("c", op.kind)


class PostgresStorage(Storage):
    """PostgresStorage keeps tasks in one PostgreSQL database shared by every server."""

    shared = True

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        # The NOTIFY payload naming this store (two stores may share a process, in tests).
        self._notice = f"{self.owner}:{secrets.token_hex(4)}"
        self._pool: Any = None
        self._writes: Batcher[_Write] | None = None
        self._reads: Batcher[str] | None = None
        self._wake: Callable[[], None] | None = None
        self._stop: Callable[[str], None] | None = None
        self._listener: asyncio.Task[None] | None = None
        self._failing: str | None = None  # why the last call failed; None once one succeeds
        self._claims = 0  # numbers the batches that claim: each claims as owner "<owner>/<n>"
        # Claims whose answer was lost, by owner: released by the next batches (see
        # taskqueue_write), until this monotonic time (a statement cut off by our timeout
        # may still commit on the server a little later).
        self._lost_claims: dict[str, float] = {}
        self._errors = _unavailable_errors()

    # --- lifecycle ---------------------------------------------------------------------------

    async def open(self) -> Recovered:
        if asyncpg is None:
            raise StorageUnavailable(
                "--database postgresql:// needs the asyncpg driver: "
                "pip install 'taskqueue[postgres]'"
            )
        try:
            self._pool = await asyncpg.create_pool(
                self.dsn,
                min_size=1,
                max_size=POOL_SIZE,
                timeout=TIMEOUT_S,
                command_timeout=TIMEOUT_S,
                reset=_keep_session,
            )
            async with self._pool.acquire(timeout=TIMEOUT_S) as con:
                await migrate(con)
        except self._errors as exc:
            await self._close_pool()
            raise StorageUnavailable(f"cannot reach the database: {exc}") from None
        except asyncpg.PostgresError as exc:
            await self._close_pool()
            raise StorageUnavailable(f"database error: {exc}") from None
        self._writes = Batcher(self._flush_writes, _write_key, PARALLEL_WRITES, TIMEOUT_S)
        self._reads = Batcher(self._flush_reads, lambda _: None, PARALLEL_READS, TIMEOUT_S)
        self._writes.start()
        self._reads.start()
        self._listener = asyncio.get_running_loop().create_task(self._listen())
        # Nothing to recover at start-up: other servers may hold live leases, and expired
        # ones are reaped by expire_leases, which every server runs.
        return Recovered([], 0, {})

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            await asyncio.gather(self._listener, return_exceptions=True)
            self._listener = None
        for batcher in (self._writes, self._reads):
            if batcher is not None:
                await batcher.stop()
        self._writes = self._reads = None
        await self._close_pool()

    async def _close_pool(self) -> None:
        if self._pool is None:
            return
        try:
            await asyncio.wait_for(self._pool.close(), TIMEOUT_S)
        except (TimeoutError, asyncio.TimeoutError):
            self._pool.terminate()
        self._pool = None

    @contextlib.asynccontextmanager
    async def _con(self, deadline: float) -> AsyncIterator[Any]:
        """_con lends a pooled connection, waited for until ``deadline`` at most (the
        statements pass timeout=_left(deadline) for the rest), turning "database unreachable"
        into StorageUnavailable (so the API answers 503) and noting health either way."""
        if self._pool is None:
            raise StorageUnavailable("storage is not open")
        try:
            async with self._pool.acquire(timeout=_left(deadline)) as con:
                try:
                    yield con
                except (asyncpg.InternalClientError, TimeoutError, asyncio.TimeoutError):
                    # InternalClientError: its protocol is stuck mid-operation ("cannot
                    # switch to state 12; another operation is in progress": seen after
                    # PostgreSQL was killed under load). A timeout: the release would wait
                    # for the statement's cancel, as long again on a database that does not
                    # answer. Either way never lend it again; the pool opens a new one.
                    con.terminate()
                    raise
        except self._errors as exc:
            self._failing = f"{type(exc).__name__}: {exc}"
            raise StorageUnavailable(f"database unavailable: {exc}") from None
        self._failing = None

    def healthy(self) -> bool:
        return self._pool is not None and self._failing is None

    def on_new_tasks(self, wake: Callable[[], None]) -> None:
        self._wake = wake

    def on_cancelled(self, stop: Callable[[str], None]) -> None:
        self._stop = stop

    async def announce_cancelled(self, task_id: str) -> None:
        # Best effort: a server that misses it runs the task on to its time limit, and its
        # outcome is refused then (the database holds the cancel).
        try:
            deadline = _deadline()
            async with self._con(deadline) as con:
                await con.execute(
                    "SELECT pg_notify($1, $2)", CANCEL_CHANNEL, task_id, timeout=_left(deadline)
                )
        except (StorageUnavailable, asyncpg.PostgresError) as exc:
            log.debug("taskqueue: the cancel of %s was not announced: %s", task_id, exc)

    async def _listen(self) -> None:
        """_listen keeps one connection LISTENing for other servers' new tasks and cancels
        (reconnecting after a database restart); claims also poll, so a lost notice only
        delays a claim, and a lost cancel only wastes the run it should have stopped."""
        while True:
            try:
                con = await asyncpg.connect(self.dsn, timeout=TIMEOUT_S)
            except (*self._errors, asyncpg.PostgresError):
                await asyncio.sleep(1.0)
                continue
            try:
                await con.add_listener(CHANNEL, self._notified)
                await con.add_listener(CANCEL_CHANNEL, self._cancelled)
                while not con.is_closed():
                    await asyncio.sleep(1.0)
            except (*self._errors, asyncpg.PostgresError):
                pass
            finally:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(con.close(), TIMEOUT_S)

    def _notified(self, _con: object, _pid: int, _channel: str, payload: str) -> None:
        # A notice of our own inserts: the executor was woken when they were stored.
        if payload != self._notice and self._wake is not None:
            self._wake()

    def _cancelled(self, _con: object, _pid: int, _channel: str, task_id: str) -> None:
        # Our own too: a claim here may have raced the cancel this server stored.
        if self._stop is not None:
            self._stop(task_id)

    # --- writes ------------------------------------------------------------------------------

    def _submit(self, op: _Write) -> asyncio.Future[Any]:
        if self._writes is None:
            raise StorageUnavailable("storage is not open")
        return self._writes.submit(op)

    async def insert(self, task: Task) -> None:
        task.seq = await self._submit(_Insert(task))

    async def update(
        self, task: Task, result: Result | None = None, prior: Task | None = None
    ) -> bool:
        # Snapshot now: the task object may change again before the batch is written.
        return bool(await self._submit(_Change(task.evolve(), result, prior and prior.evolve())))

    async def claim(self, kind: TaskType, limit: int, lease_s: float) -> list[Task]:
        tasks: list[Task] = await self._submit(_Claim(kind, limit, lease_s))
        return tasks

    async def _flush_writes(self, ops: list[_Write], deadline: float) -> list[Any]:
        """_flush_writes commits a batch of ops of every kind in one transaction, by
        ``deadline``."""
        inserts = [op.task for op in ops if isinstance(op, _Insert)]
        changes = [op for op in ops if isinstance(op, _Change)]
        claims = [op for op in ops if isinstance(op, _Claim)]
        tasks = [c.task for c in changes]
        priors = [c.prior for c in changes]
        results = [c.result for c in changes]
        owner = self.owner
        if claims:
            self._claims += 1
            owner = f"{self.owner}/{self._claims}"
        release = list(self._lost_claims)
        try:
            async with self._con(deadline) as con:
                rows = await con.fetch(
                    _WRITE,
                    [t.id for t in inserts],
                    [t.type.value for t in inserts],
                    [orjson.dumps(t.params).decode() for t in inserts],
                    [t.status.value for t in inserts],
                    [t.submitted_at for t in inserts],
                    [t.attempts for t in inserts],
                    [t.idem_key for t in inserts],
                    [t.idem_hash for t in inserts],
                    [t.seq for t in tasks],
                    [t.status.value for t in tasks],
                    [t.started_at for t in tasks],
                    [t.finished_at for t in tasks],
                    [t.attempts for t in tasks],
                    [t.error for t in tasks],
                    [t.lease_until for t in tasks],
                    [None if p is None else p.status.value for p in priors],
                    [None if p is None else p.attempts for p in priors],
                    [None if r is None else r.content_type for r in results],
                    [None if r is None else r.body for r in results],
                    [c.kind.value for c in claims],
                    [c.limit for c in claims],
                    [c.lease_s for c in claims],
                    owner,
                    CHANNEL,
                    self._notice,
                    release,
                    timeout=_left(deadline),
                )
        except asyncpg.UniqueViolationError as exc:
            raise DuplicateTask(str(exc)) from None
        except StorageUnavailable:
            if claims:  # it may have committed all the same: give its tasks back next time
                self._lost_claims[owner] = time.monotonic() + 2 * TIMEOUT_S
            raise
        now = time.monotonic()
        for gone in release:
            # Both batches in flight may release it: the first to finish forgets it.
            until = self._lost_claims.get(gone)
            if until is not None and until <= now:
                del self._lost_claims[gone]
        seqs: dict[str, int] = {}
        applied: set[int] = set()
        claimed: list[list[Task]] = [[] for _ in claims]
        for r in rows:
            op = r[0]
            if op == "i":
                seqs[r[3]] = r[2]
            elif op == "u":
                applied.add(r[2])
            else:
                claimed[r[1] - 1].append(task_from_row(r[2:]))
        out: list[Any] = []
        n_claim = 0
        for op in ops:
            if isinstance(op, _Insert):
                out.append(seqs[op.task.id])
            elif isinstance(op, _Change):
                out.append(op.task.seq in applied)
            else:
                out.append(sorted(claimed[n_claim], key=lambda t: t.seq))
                n_claim += 1
        return out

    async def expire_leases(self, max_attempts: int) -> list[Task]:
        deadline = _deadline()
        async with self._con(deadline) as con:
            rows = await con.fetch(_EXPIRE, max_attempts, timeout=_left(deadline))
        return [task_from_row(r) for r in rows]

    async def unfinished(self) -> dict[TaskStatus, int]:
        deadline = _deadline()
        async with self._con(deadline) as con:
            row = await con.fetchrow(
                "SELECT count(*) FILTER (WHERE lease_until IS NULL),"
                " count(*) FILTER (WHERE lease_until IS NOT NULL) FROM unfinished",
                timeout=_left(deadline),
            )
        return {TaskStatus.QUEUED: int(row[0]), TaskStatus.RUNNING: int(row[1])}

    async def delete_finished_before(
        self, cutoff: float, limit: int
    ) -> list[tuple[str, TaskStatus]]:
        deadline = _deadline()
        async with self._con(deadline) as con, con.transaction():
            rows = await con.fetch(_DELETE, cutoff, limit, timeout=_left(deadline))
        return [(r[0], TaskStatus(r[1])) for r in rows]

    # --- reads -------------------------------------------------------------------------------

    async def get(self, task_id: str) -> Task | None:
        if self._reads is None:
            raise StorageUnavailable("storage is not open")
        task: Task | None = await self._reads.submit(task_id)
        return task

    async def _flush_reads(self, ids: list[str], deadline: float) -> list[Task | None]:
        async with self._con(deadline) as con:
            rows = await con.fetch(_GET, ids, timeout=_left(deadline))
        found = {r[1]: r for r in rows}
        # A task polled twice in one batch is decoded twice: callers may change what they get.
        return [None if (r := found.get(i)) is None else task_from_row(r) for i in ids]

    async def get_result(self, task_id: str) -> Result | None:
        deadline = _deadline()
        async with self._con(deadline) as con:
            row = await con.fetchrow(
                "SELECT r.content_type, r.body FROM results r JOIN tasks t ON t.seq = r.seq"
                " WHERE t.id = $1",
                task_id,
                timeout=_left(deadline),
            )
        return None if row is None else Result(row[0], bytes(row[1]))

    async def find_idempotent(self, key: str) -> Task | None:
        deadline = _deadline()
        async with self._con(deadline) as con:
            row = await con.fetchrow(
                f"SELECT {TASK_COLUMNS} FROM tasks WHERE idem_key = $1",
                key,
                timeout=_left(deadline),
            )
        return None if row is None else task_from_row(row)

    async def list(self, status: TaskStatus | None, after_seq: int, limit: int) -> list[Task]:
        deadline = _deadline()
        async with self._con(deadline) as con:
            if status is None:
                rows = await con.fetch(
                    f"SELECT {TASK_COLUMNS} FROM tasks WHERE seq > $1 ORDER BY seq LIMIT $2",
                    after_seq,
                    limit,
                    timeout=_left(deadline),
                )
            elif status.finished:
                rows = await con.fetch(
                    f"SELECT {TASK_COLUMNS} FROM tasks WHERE status = $1 AND seq > $2"
                    " ORDER BY seq LIMIT $3",
                    status.value,
                    after_seq,
                    limit,
                    timeout=_left(deadline),
                )
            else:  # status is not indexed: unfinished tasks are found through `unfinished`
                columns = ", ".join("t." + c.strip() for c in TASK_COLUMNS.split(","))
                rows = await con.fetch(
                    f"SELECT {columns} FROM unfinished f JOIN tasks t ON t.seq = f.seq"
                    " WHERE (f.lease_until IS NULL) = ($1 = 'QUEUED') AND t.status = $1"
                    " AND f.seq > $2 ORDER BY f.seq LIMIT $3",
                    status.value,
                    after_seq,
                    limit,
                    timeout=_left(deadline),
                )
        return [task_from_row(r) for r in rows]


async def migrate(con: Any) -> int:
    """migrate brings the schema up to date and returns its version.

    The whole migration is one transaction holding an advisory lock, so servers starting
    together apply it once: the others wait for the lock, then find nothing left to do.
    """
    async with con.transaction():
        await con.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
        await con.execute("CREATE TABLE IF NOT EXISTS taskqueue_schema (version integer NOT NULL)")
        version = int(await con.fetchval("SELECT coalesce(max(version), 0) FROM taskqueue_schema"))
        for number, sql in enumerate(MIGRATIONS[version:], start=version + 1):
            await con.execute(sql)
            await con.execute("INSERT INTO taskqueue_schema (version) VALUES ($1)", number)
        if version < len(MIGRATIONS):  # one line for the whole migration, by the one server
            log.info(
                "taskqueue: database schema migrated from version %d to %d",
                version,
                len(MIGRATIONS),
            )
        return len(MIGRATIONS)
