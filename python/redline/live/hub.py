"""hub: the fan-out of live events to every browser watching a run.

Each watcher has its own bounded queue; publishing encodes an event once and offers it to
every queue without waiting, so a slow or stalled browser never slows the run down: when its
queue is full it is dropped, and its EventSource reconnects and catches up from the state
(the events a new watcher is given first), losing nothing it shows.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: QUEUE_SIZE: how many events a watcher may fall behind before it is dropped.
QUEUE_SIZE = 256


def encode(kind: str, data: Any) -> bytes:
    """encode is one server-sent event: its type and its JSON data on one line."""
    return f"event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


@dataclass(eq=False)
class Watcher:
    """Watcher is one browser's stream: its queue of encoded events (None ends it) and
    whether the hub dropped it for falling behind."""

    events: queue.Queue[bytes | None] = field(default_factory=lambda: queue.Queue(QUEUE_SIZE))
    dropped: bool = False


class Hub:
    """Hub hands each published event to every watcher."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watchers: set[Watcher] = set()  # by identity (eq=False)
        self.closed = False

    def subscribe(self, catch_up: Sequence[tuple[str, Any]]) -> Watcher:
        """subscribe adds a watcher whose stream starts with ``catch_up``; the caller holds
        whatever lock keeps that state and the next publish in order."""
        w = Watcher(queue.Queue(QUEUE_SIZE + len(catch_up)))
        for kind, data in catch_up:
            w.events.put_nowait(encode(kind, data))
        with self._lock:
            if self.closed:
                w.events.put_nowait(None)
            else:
                self._watchers.add(w)
        return w

    def unsubscribe(self, w: Watcher) -> None:
        """unsubscribe forgets a watcher whose browser went away."""
        with self._lock:
            self._watchers.discard(w)

    def publish(self, kind: str, data: Any) -> None:
        """publish offers one event to every watcher, dropping those that fell behind."""
        event = encode(kind, data)
        with self._lock:
            for w in list(self._watchers):
                try:
                    w.events.put_nowait(event)
                except queue.Full:
                    w.dropped = True
                    self._watchers.discard(w)

    def close(self) -> None:
        """close ends every stream (after what is queued) and refuses new ones."""
        with self._lock:
            self.closed = True
            for w in self._watchers:
                try:
                    w.events.put_nowait(None)
                except queue.Full:
                    w.dropped = True
            self._watchers.clear()

    @property
    def watchers(self) -> int:
        """watchers is how many browsers are connected."""
        with self._lock:
            return len(self._watchers)
