"""Task model: the states, the kinds of task, and the in-memory record of one task.

The record doubles as the write-through cache that serves status reads, so it keeps the
encoded JSON of its public view and drops it on every state change.
"""

from __future__ import annotations

import enum
import os
import time
import uuid
from datetime import datetime, timezone
from typing import Any

import orjson


class TaskStatus(str, enum.Enum):
    """TaskStatus is the lifecycle state of a task; SUCCEEDED and FAILED are final."""

    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"

    @property
    def finished(self) -> bool:
        """finished tells whether the task has reached a final state."""
        return self is TaskStatus.SUCCEEDED or self is TaskStatus.FAILED


class TaskType(str, enum.Enum):
    """TaskType names the two kinds of work the service runs."""

    FACTORIAL = "factorial"
    HTTP_FETCH = "http-fetch"


def new_task_id() -> str:
    """new_task_id returns a unique, URL-safe, unguessable task id: a UUIDv7 in hex.

    Time-ordered (RFC 9562 version 7: 48 bits of Unix milliseconds, then 74 random bits)
    rather than random (version 4): consecutive tasks land on the same right-most pages of
    the `id` index, so a group commit rewrites a few pages instead of one page per task
    (random ids wrote several times more WAL per task). The trade-off: an id reveals when
    its task was submitted, to the millisecond; 74 random bits still make ids unguessable
    and collisions negligible (the UNIQUE index would refuse one). Clients must keep
    treating ids as opaque strings.
    """
    if _UUID7 is not None:
        return _UUID7().hex
    raw = bytearray((time.time_ns() // 1_000_000).to_bytes(6, "big"))
    raw += _random_bytes(10)
    raw[6] = 0x70 | raw[6] & 0x0F  # version 7
    raw[8] = 0x80 | raw[8] & 0x3F  # RFC 9562 variant
    return raw.hex()


_UUID7 = getattr(uuid, "uuid7", None)  # Python >= 3.14 has it
_RANDOM = bytearray()
_RANDOM_BLOCK = 4096


def _random_bytes(n: int) -> bytes:
    """_random_bytes: n bytes of the OS's CSPRNG, read a block at a time (one getrandom()
    syscall an id was 1-2 % of the service's CPU in the seed-000 mix)."""
    if len(_RANDOM) < n:
        _RANDOM[:] = os.urandom(_RANDOM_BLOCK)
    out = bytes(_RANDOM[-n:])
    del _RANDOM[-n:]
    return out


def _forget_random() -> None:
    _RANDOM.clear()  # a forked child must not hand out its parent's next ids' bytes


os.register_at_fork(after_in_child=_forget_random)


def iso_time(ts: float | None) -> str | None:
    """iso_time formats a Unix timestamp as RFC 3339 UTC with microseconds (None stays None)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat().replace("+00:00", "Z")


class Task:
    """Task is one submission and its execution record.

    `params` holds the validated submission body (without `type`); `seq` is the monotonic
    insertion number used for keyset pagination.
    """

    __slots__ = (
        "id",
        "seq",
        "type",
        "params",
        "status",
        "submitted_at",
        "started_at",
        "finished_at",
        "attempts",
        "error",
        "lease_until",
        "idem_key",
        "idem_hash",
        "_json",
    )

    def __init__(
        self,
        id: str,
        seq: int,
        type: TaskType,
        params: dict[str, Any],
        status: TaskStatus = TaskStatus.QUEUED,
        submitted_at: float | None = None,
        started_at: float | None = None,
        finished_at: float | None = None,
        attempts: int = 0,
        error: str | None = None,
        lease_until: float | None = None,
        idem_key: str | None = None,
        idem_hash: str | None = None,
    ) -> None:
        self.id = id
        self.seq = seq
        self.type = type
        self.params = params
        self.status = status
        self.submitted_at = time.time() if submitted_at is None else submitted_at
        self.started_at = started_at
        self.finished_at = finished_at
        self.attempts = attempts
        self.error = error
        self.lease_until = lease_until
        self.idem_key = idem_key
        self.idem_hash = idem_hash
        self._json: bytes | None = None

    def view(self) -> dict[str, Any]:
        """view returns the public status document of the task."""
        return {
            "id": self.id,
            "type": self.type.value,
            "status": self.status.value,
            "submitted_at": iso_time(self.submitted_at),
            "started_at": iso_time(self.started_at),
            "finished_at": iso_time(self.finished_at),
            "attempts": self.attempts,
            "error": self.error,
        }

    def json(self) -> bytes:
        """json returns the encoded status document, cached until the next change."""
        cached = self._json
        if cached is None:
            cached = self._json = orjson.dumps(self.view())
        return cached

    def touch(self) -> None:
        """touch drops the cached JSON; call it after every change of state."""
        self._json = None

    def evolve(self, **changes: Any) -> Task:
        """evolve returns a changed copy: the state to persist before showing it."""
        twin = Task.__new__(Task)
        for name in _STATE:
            setattr(twin, name, changes.pop(name, getattr(self, name)))
        if changes:
            raise TypeError(f"unknown task fields {sorted(changes)}")
        twin._json = None
        return twin

    def adopt(self, other: Task) -> None:
        """adopt takes over the state of `other` (an evolved copy that is now durable)."""
        for name in _STATE:
            setattr(self, name, getattr(other, name))
        self._json = None


_STATE = tuple(s for s in Task.__slots__ if s != "_json")
