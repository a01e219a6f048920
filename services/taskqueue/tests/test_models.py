"""Models: task ids are opaque, unique, URL-safe and ordered by submission time."""

from __future__ import annotations

import time
import uuid

from taskqueue.models import new_task_id


def test_task_ids_are_unique_uuid7_hex() -> None:
    ids = [new_task_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    for task_id in ids[:100]:
        assert len(task_id) == 32 and task_id == task_id.lower() and task_id.isalnum()
        parsed = uuid.UUID(task_id)
        assert parsed.version == 7 and parsed.variant == uuid.RFC_4122


def test_task_ids_follow_the_clock() -> None:
    first = new_task_id()
    deadline = time.monotonic() + 1.0
    while (later := new_task_id())[:12] == first[:12] and time.monotonic() < deadline:
        pass  # spin until the millisecond prefix moves on (bounded)
    assert later > first
    ms = int(first[:12], 16)
    assert abs(ms / 1000 - time.time()) < 60  # the prefix is Unix milliseconds
