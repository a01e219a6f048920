"""Fakes shared by the tests: a transport that records what uvicorn's protocol writes."""

from __future__ import annotations

from typing import Any


class FakeTransport:
    """FakeTransport records each write (each would be one send() on a socket)."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False
        self.extra = {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}

    def write(self, data: bytes) -> None:
        assert not self.closed, "write after close"
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.extra.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass
