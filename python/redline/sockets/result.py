"""SocketResult: what one WebSocket run measured (docs/schema/socket.schema.json), a typed
view over the engine's document that keeps it intact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from redline.output import write_text
from redline.runs.result import Latency


class SocketResult:
    """SocketResult: a WebSocket run's messages, round trips and socket ends.
    ``SocketResult.data`` is the whole JSON document."""

    def __init__(self, data: dict[str, Any]):
        self.data = data

    @property
    def messages(self) -> dict[str, Any]:
        """messages: ``sent``, ``received``, ``answered``, ``unmatched``, ``lost`` (by class)
        and ``lost_total`` (``sent == answered + lost_total``), the rates a second and the
        payload bytes."""
        return dict(self.data["messages"])

    @property
    def latency(self) -> Latency:
        """latency: the round trips (ms), message sent (or due, open model) to reply read."""
        return Latency.from_dict(self.data["latency_ms"])

    @property
    def errors(self) -> dict[str, int]:
        """errors: sockets that ended early, by class: ``connect``, ``handshake``,
        ``dropped`` (no close frame), ``close_CODE`` (the server's close frame),
        ``timeout`` (a reply too late), ``protocol``."""
        return {k: int(v) for k, v in self.data["errors"].items()}

    @property
    def errors_total(self) -> int:
        """errors_total: the sum of :attr:`errors`."""
        return int(self.data["errors_total"])

    @property
    def sockets(self) -> dict[str, int]:
        """sockets: ``wanted`` (open at once) and ``opened`` (upgrades, reopenings included)."""
        return {k: int(v) for k, v in self.data["sockets"].items()}

    @property
    def duration_s(self) -> float:
        """duration_s: the time messages were sent over."""
        return float(self.data["duration_s"])

    def to_json(self) -> str:
        """to_json is the document ``--json`` writes."""
        return json.dumps(self.data, indent=2)

    def write_json(self, path: str | Path) -> None:
        """write_json writes the document to ``path`` (``"-"``: stdout)."""
        write_text(path, self.to_json())

    def __repr__(self) -> str:
        m, lat = self.data["messages"], self.latency
        return (
            f"SocketResult(sent={m['sent']}, received={m['received']}, p50={lat.p50:.3f}ms, "
            f"p99={lat.p99:.3f}ms, errors={self.errors_total})"
        )
