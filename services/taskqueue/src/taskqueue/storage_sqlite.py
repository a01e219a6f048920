"""SQLite storage: WAL journal, one writer thread with group commit, reads on the caller's thread.

Group commit is what makes durable submissions fast: while one transaction is being
fsync'ed, new writes pile up in the queue, and the next transaction takes all of them, so
one fsync covers hundreds of submissions. Each caller's future is resolved only after the
COMMIT that contains its write has returned.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from taskqueue.models import Task, TaskStatus
from taskqueue.storage import TASK_COLUMNS, Recovered, Result, Storage, task_from_row

log = logging.getLogger("taskqueue")

MAX_BATCH = 2000
"""MAX_BATCH bounds one group commit, so that a flood cannot make one transaction huge."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL,
    params TEXT NOT NULL,
    status TEXT NOT NULL,
    submitted_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    lease_until REAL,
    idem_key TEXT UNIQUE,
    idem_hash TEXT
);
CREATE INDEX IF NOT EXISTS tasks_status_seq ON tasks(status, seq);
CREATE INDEX IF NOT EXISTS tasks_finished_at ON tasks(finished_at) WHERE finished_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS results (
    seq INTEGER PRIMARY KEY,
    content_type TEXT NOT NULL,
    body BLOB NOT NULL
);
"""

MAX_VARIABLES = 32766
"""MAX_VARIABLES is SQLite's default limit on bound parameters in one statement (3.32+)."""


class StorageLocked(RuntimeError):
    """StorageLocked means another live server holds the data directory."""


class _Checkpointer(threading.Thread):
    """_Checkpointer copies the WAL into the database on its own thread and connection.

    Left to SQLite, the committing connection runs the checkpoint (and its fsync of the
    database file) inside a commit every 1000 pages, stalling every submission waiting on
    that group commit for tens of milliseconds. A PASSIVE checkpoint here runs beside the
    writer instead of in its way.
    """

    def __init__(self, path: Path, every_s: float = 0.5) -> None:
        super().__init__(name="taskqueue-sqlite-checkpoint", daemon=True)
        self._path = path
        self._every_s = every_s
        self._halt = threading.Event()

    def run(self) -> None:
        conn = _connect(self._path)
        try:
            while not self._halt.wait(self._every_s):
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except sqlite3.Error as exc:  # busy or I/O trouble: try again next round
                    log.warning("taskqueue: WAL checkpoint failed: %s", exc)
        finally:
            conn.close()

    def stop(self) -> None:
        self._halt.set()
        self.join()


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    # FULL: the WAL is fsync'ed at every commit, so a 202 survives power loss, not only kill -9.
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA busy_timeout=5000")
    return conn


class _Insert(NamedTuple):
    row: tuple[Any, ...]  # in TASK_COLUMNS order


class _Update(NamedTuple):
    row: tuple[Any, ...]  # status, started_at, finished_at, attempts, error, lease_until, seq
    result: Result | None


Op = _Insert | _Update | Callable[[sqlite3.Connection], Any]
Then = Callable[[BaseException | None], None]
"""Then: told on the loop's thread, with no hop between, that its op committed (None) or
what committing it raised (`SqliteStorage.insert_then`)."""
_Item = tuple[Op, "asyncio.Future[Any] | Then"]


def _multirow(conn: sqlite3.Connection, head: str, tail: str, rows: list[tuple[Any, ...]]) -> None:
    """_multirow runs one statement for many rows (chunked under SQLite's variable limit)."""
    width = len(rows[0])
    group = "(" + ",".join("?" * width) + ")"
    per = max(1, MAX_VARIABLES // width)
    for i in range(0, len(rows), per):
        chunk = rows[i : i + per]
        params = [v for row in chunk for v in row]
        conn.execute(f"{head} {','.join([group] * len(chunk))} {tail}", params)


def _apply(conn: sqlite3.Connection, batch: list[_Item]) -> list[Any]:
    """_apply writes a batch with a handful of multi-row statements.

    Few statements, not one per op: each statement makes this thread take the GIL back from
    the busy event loop, and each of those hand-overs can wait a switch interval (5 ms).
    Inserts precede updates (a task is claimed only after its insert committed) and, for
    one task, the last update wins, as it would applied in order.
    """
    inserts = [op.row for op, _ in batch if isinstance(op, _Insert)]
    updates = {op.row[-1]: op.row for op, _ in batch if isinstance(op, _Update)}
    results = {
        op.row[-1]: (op.row[-1], op.result.content_type, op.result.body)
        for op, _ in batch
        if isinstance(op, _Update) and op.result is not None
    }
    if inserts:
        _multirow(conn, f"INSERT INTO tasks ({TASK_COLUMNS}) VALUES", "", inserts)
    if updates:
        _multirow(
            conn,
            "UPDATE tasks SET status=v.column1, started_at=v.column2, finished_at=v.column3,"
            " attempts=v.column4, error=v.column5, lease_until=v.column6 FROM (VALUES",
            ") AS v WHERE tasks.seq = v.column7",
            list(updates.values()),
        )
    if results:
        _multirow(
            conn,
            "INSERT OR REPLACE INTO results (seq, content_type, body) VALUES",
            "",
            list(results.values()),
        )
    return [None if isinstance(op, (_Insert, _Update)) else op(conn) for op, _ in batch]


class _Writer(threading.Thread):
    """_Writer owns the only writing connection and commits queued ops in batches."""

    def __init__(self, conn: sqlite3.Connection, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(name="taskqueue-sqlite-writer", daemon=True)
        self._conn = conn
        self._loop = loop
        self._queue: queue.SimpleQueue[list[_Item] | None] = queue.SimpleQueue()
        self._held: list[_Item] = []  # ops queued in this turn of the loop
        self.failed: BaseException | None = None
        self.batches = 0

    def submit(self, op: Op) -> asyncio.Future[Any]:
        """submit queues op (on the loop's thread); the future has its outcome once committed."""
        fut: asyncio.Future[Any] = self._loop.create_future()
        self._hold((op, fut))
        return fut

    def submit_then(self, op: Op, then: Then) -> None:
        """submit_then queues op; `then` is called from the same callback that resolves the
        futures of its batch: a future's waiter would only run a turn of the loop later."""
        self._hold((op, then))

    def _hold(self, item: _Item) -> None:
        held = self._held
        if not held:
            self._loop.call_soon(self.hand_over)
        held.append(item)

    def hand_over(self) -> None:
        """hand_over gives the writer thread the ops of this turn of the loop in one put.

        Put one by one, each op woke the thread, which then took the GIL from the busy loop
        (a forced switch) and often committed it alone: a commit a request, each costing the
        loop's core a few hundred microseconds. A turn's ops go in one transaction instead;
        called at the end of the turn (call_soon), so no op waits for another turn."""
        if self._held:
            items, self._held = self._held, []
            self._queue.put(items)

    def stop(self) -> None:
        """stop commits what was handed over, then ends the thread (hand_over first, on the
        loop's thread, for what this turn queued)."""
        self._queue.put(None)
        self.join()

    def run(self) -> None:
        stopping = False
        while not stopping:
            items = self._queue.get()
            if items is None:
                break
            batch = list(items)
            while len(batch) < MAX_BATCH:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stopping = True
                    break
                batch += more
            for i in range(0, len(batch), MAX_BATCH):
                self._commit(batch[i : i + MAX_BATCH])
        self._conn.close()

    def _transaction(self, batch: list[_Item]) -> list[Any]:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            values = _apply(conn, batch)
            conn.execute("COMMIT")
        except BaseException:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise
        return values

    def _commit(self, batch: list[_Item]) -> None:
        outcomes: list[tuple[asyncio.Future[Any] | Then, Any, BaseException | None]] = []
        try:
            values = self._transaction(batch)
            outcomes = [(fut, v, None) for (_, fut), v in zip(batch, values, strict=True)]
            self.failed = None
        except sqlite3.Error as exc:
            if len(batch) > 1:  # find the bad op: one transaction each, so the rest still land
                for item in batch:
                    self._commit([item])
                return
            if not isinstance(exc, sqlite3.IntegrityError):
                log.error("taskqueue: storage commit failed: %s", exc)
                self.failed = exc
            outcomes = [(batch[0][1], None, exc)]
        self.batches += 1
        try:
            self._loop.call_soon_threadsafe(_resolve, outcomes)
        except RuntimeError:  # loop already closed: nobody is waiting any more
            pass


def _resolve(outcomes: list[tuple[asyncio.Future[Any] | Then, Any, BaseException | None]]) -> None:
    for fut, value, exc in outcomes:
        if not isinstance(fut, asyncio.Future):
            try:
                fut(exc)
            except Exception:  # one caller's trouble must not keep the others from their answer
                log.exception("taskqueue: a storage completion callback failed")
            continue
        if fut.done():
            continue
        if exc is None:
            fut.set_result(value)
        else:
            fut.set_exception(exc)


def _row(task: Task) -> tuple[Any, ...]:
    """_row is a new task's row, in TASK_COLUMNS order."""
    return (
        task.seq,
        task.id,
        task.type.value,
        orjson.dumps(task.params).decode(),
        task.status.value,
        task.submitted_at,
        task.started_at,
        task.finished_at,
        task.attempts,
        task.error,
        task.lease_until,
        task.idem_key,
        task.idem_hash,
    )


def _delete_op(cutoff: float, limit: int) -> Op:
    def op(conn: sqlite3.Connection) -> list[tuple[str, TaskStatus]]:
        rows = conn.execute(
            "SELECT seq, id, status FROM tasks WHERE finished_at IS NOT NULL AND finished_at < ?"
            " ORDER BY finished_at LIMIT ?",
            (cutoff, limit),
        ).fetchall()
        seqs = [r[0] for r in rows]
        if seqs:  # one statement each: see _apply for why not executemany
            marks = ",".join("?" * len(seqs))
            conn.execute(f"DELETE FROM results WHERE seq IN ({marks})", seqs)
            conn.execute(f"DELETE FROM tasks WHERE seq IN ({marks})", seqs)
        return [(r[1], TaskStatus(r[2])) for r in rows]

    return op


class SqliteStorage(Storage):
    """SqliteStorage keeps tasks in `<data_dir>/tasks.db`; the data dir is locked to one server."""

    inserts_then = True

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._writer: _Writer | None = None
        self._reader: sqlite3.Connection | None = None
        self._lock_fd: int | None = None
        self._checkpointer: _Checkpointer | None = None

    async def open(self) -> Recovered:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(self.data_dir / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            # The flock proves no other server holds leases on these tasks, so at start-up
            # every lease found in the store belongs to a dead process and has expired.
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            self._lock_fd = None
            raise StorageLocked(
                f"data-dir {str(self.data_dir)!r} is in use by another taskqueue server"
            ) from None
        path = self.data_dir / "tasks.db"
        wconn = _connect(path)
        wconn.executescript(_SCHEMA)
        wconn.execute("PRAGMA wal_autocheckpoint=0")  # the checkpointer thread does it
        self._checkpointer = _Checkpointer(path)
        self._checkpointer.start()
        self._reader = _connect(path)
        self._reader.execute("PRAGMA query_only=ON")
        self._writer = _Writer(wconn, asyncio.get_running_loop())
        self._writer.start()
        rows = self._reader.execute(
            f"SELECT {TASK_COLUMNS} FROM tasks WHERE status IN ('QUEUED','RUNNING') ORDER BY seq"
        ).fetchall()
        last = self._reader.execute("SELECT coalesce(max(seq), 0) FROM tasks").fetchone()[0]
        finished = {
            TaskStatus(s): n
            for s, n in self._reader.execute(
                "SELECT status, count(*) FROM tasks"
                " WHERE status IN ('SUCCEEDED','FAILED') GROUP BY status"
            )
        }
        return Recovered([task_from_row(r) for r in rows], int(last), finished)

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.hand_over()
            await asyncio.to_thread(self._writer.stop)
            self._writer = None
        if self._checkpointer is not None:
            await asyncio.to_thread(self._checkpointer.stop)
            self._checkpointer = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _w(self) -> _Writer:
        if self._writer is None:
            raise RuntimeError("storage is not open")
        return self._writer

    def _r(self) -> sqlite3.Connection:
        if self._reader is None:
            raise RuntimeError("storage is not open")
        return self._reader

    async def insert(self, task: Task) -> None:
        await self._w().submit(_Insert(_row(task)))

    def insert_then(self, task: Task, done: Then) -> None:
        self._w().submit_then(_Insert(_row(task)), done)

    async def update(
        self, task: Task, result: Result | None = None, prior: Task | None = None
    ) -> bool:
        # Snapshot now: the task object may change again before the writer gets to it.
        values = (
            task.status.value,
            task.started_at,
            task.finished_at,
            task.attempts,
            task.error,
            task.lease_until,
        )
        await self._w().submit(_Update((*values, task.seq), result))
        return True  # the data dir's lock makes this server the only writer: no race to lose

    async def delete_finished_before(
        self, cutoff: float, limit: int
    ) -> list[tuple[str, TaskStatus]]:
        return list(await self._w().submit(_delete_op(cutoff, limit)))

    async def get(self, task_id: str) -> Task | None:
        row = (
            self._r().execute(f"SELECT {TASK_COLUMNS} FROM tasks WHERE id=?", (task_id,)).fetchone()
        )
        return None if row is None else task_from_row(row)

    async def get_result(self, task_id: str) -> Result | None:
        row = (
            self._r()
            .execute(
                "SELECT r.content_type, r.body FROM results r JOIN tasks t ON t.seq = r.seq"
                " WHERE t.id=?",
                (task_id,),
            )
            .fetchone()
        )
        return None if row is None else Result(row[0], bytes(row[1]))

    async def find_idempotent(self, key: str) -> Task | None:
        row = (
            self._r()
            .execute(f"SELECT {TASK_COLUMNS} FROM tasks WHERE idem_key=?", (key,))
            .fetchone()
        )
        return None if row is None else task_from_row(row)

    async def list(self, status: TaskStatus | None, after_seq: int, limit: int) -> list[Task]:
        if status is None:
            rows = (
                self._r()
                .execute(
                    f"SELECT {TASK_COLUMNS} FROM tasks WHERE seq > ? ORDER BY seq LIMIT ?",
                    (after_seq, limit),
                )
                .fetchall()
            )
        else:
            rows = (
                self._r()
                .execute(
                    f"SELECT {TASK_COLUMNS} FROM tasks WHERE status = ? AND seq > ?"
                    " ORDER BY seq LIMIT ?",
                    (status.value, after_seq, limit),
                )
                .fetchall()
            )
        return [task_from_row(r) for r in rows]

    def healthy(self) -> bool:
        return self._writer is not None and self._writer.is_alive() and self._writer.failed is None
