"""Config: every setting of the service, with its default and its validation.

The CLI fills a Config from flags and TASKQUEUE_* environment variables; a library user
builds one directly. `validate()` raises ConfigError with a one-line message.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path


class ConfigError(ValueError):
    """ConfigError is a bad setting; its message is one line meant for the operator."""


@dataclass
class Config:
    """Config holds the service settings; durations are in seconds unless named otherwise."""

    host: str = "127.0.0.1"
    port: int = 8000
    data_dir: Path = Path("./taskqueue-data")
    # A postgresql:// URL: tasks live in that database, shared by every server using it.
    database: str | None = None
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    max_queue: int = 10_000
    max_factorial_n: int = 20_000
    allow_fetch_cidrs: list[str] = field(default_factory=list)
    max_body_bytes: int = 16 * 1024
    max_fetch_bytes: int = 10 * 2**20
    fetch_concurrency: int = 100
    fetch_per_host: int = 10
    max_attempts: int = 3
    factorial_timeout_s: float = 30.0
    lease_grace_s: float = 15.0
    lease_check_s: float = 5.0
    result_ttl_s: float = 24 * 3600.0
    cleanup_every_s: float = 60.0
    # Bounded: every cached task is heap the garbage collector walks in a full collection.
    cache_finished: int = 20_000
    # Off only to compare against (or to rule out) the raw-ASGI hot routes: see fastpath.py.
    fast_path: bool = True

    def validate(self) -> Config:
        """validate checks ranges and CIDRs, returning self or raising ConfigError."""
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port {self.port} out of range 0..65535")
        for name in (
            "workers",
            "max_queue",
            "max_body_bytes",
            "max_fetch_bytes",
            "fetch_concurrency",
            "fetch_per_host",
            "max_attempts",
            "cache_finished",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(
                    f"{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}"
                )
        if self.max_factorial_n < 0:
            raise ConfigError(f"max-factorial-n must be >= 0, got {self.max_factorial_n}")
        for name in (
            "factorial_timeout_s",
            "lease_grace_s",
            "lease_check_s",
            "result_ttl_s",
            "cleanup_every_s",
        ):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be > 0, got {getattr(self, name)}")
        for cidr in self.allow_fetch_cidrs:
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError:
                raise ConfigError(
                    f"allow-fetch-cidr {cidr!r} is not a CIDR (e.g. 127.0.0.0/8)"
                ) from None
        if self.database is not None and not self.database.startswith(
            ("postgresql://", "postgres://")
        ):
            raise ConfigError(
                f"database {self.database!r} is not a postgresql:// URL"
                " (leave it unset for SQLite in --data-dir)"
            )
        if self.database is None and self.data_dir.exists() and not self.data_dir.is_dir():
            raise ConfigError(f"data-dir {str(self.data_dir)!r} exists and is not a directory")
        return self
