"""Target: redline's bundled HTTP test server (Rust, multi-threaded), for tests, benchmarks and
demos. Behaviour is chosen per request by query parameters, e.g. ``/?latency=20ms``,
``/?size=1024``, ``/?status=500&p=0.1``, ``/?stall=1s/5s``; ``/__stats`` counts what it served.
With ``capacity=N, service_time="10ms"`` the whole server is a queue that completes at most
N / service_time requests a second (a known truth for capacity tests). ``/form`` and
``/thanks`` are a small survey app (session cookie, form post, 302) for scenario tests.

    >>> with redline.Target() as t:
    ...     redline.run(t.url + "/?latency=5ms", duration="2s")
"""

from __future__ import annotations

import os
from typing import Any

from redline import _engine
from redline.errors import ConfigError
from redline.options import parse_duration


class Target:
    """Target starts the server on ``host:port`` (port 0 picks a free port) with ``threads``
    worker threads (default: one per core); use it as a context manager or call :meth:`stop`.
    With ``tls_cert`` and ``tls_key`` (PEM files) it serves https.

    With ``capacity`` (N) and ``service_time`` (``"10ms"`` or seconds) it serves at most N
    requests at once, each for exactly ``service_time``, the rest waiting first come, first
    served: capacity is N / service_time requests a second, shared by all connections and
    threads. A request's own ``latency=``/``stall=`` come first and hold no slot; ``/__stats``
    never waits."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        threads: int | None = None,
        tls_cert: str | os.PathLike[str] | None = None,
        tls_key: str | os.PathLike[str] | None = None,
        capacity: int | None = None,
        service_time: str | float | None = None,
    ):
        if capacity is not None and (
            isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1
        ):
            raise ConfigError(f"capacity: expected a whole number of slots >= 1, got {capacity!r}")
        self._native = _engine.Target(
            host,
            port,
            threads,
            None if tls_cert is None else os.fspath(tls_cert),
            None if tls_key is None else os.fspath(tls_key),
            capacity,
            None if service_time is None else parse_duration(service_time, "service_time"),
        )

    @property
    def url(self) -> str:
        """url: ``http://HOST:PORT`` or ``https://HOST:PORT`` (no trailing slash)."""
        return self._native.url

    @property
    def port(self) -> int:
        """port: the port actually bound."""
        return self._native.port

    def stats(self) -> dict[str, Any]:
        """stats returns what the server has seen, the same fields as ``/__stats``: ``requests``,
        ``connections``, and in capacity mode ``queue_waiting``/``queue_busy`` (now),
        ``queue_peak`` (most ever waiting) and ``queue_served`` (completed services), and the
        form app's ``form_pages``, ``sessions_issued``, ``forms_posted``, ``forms_invalid``,
        ``missing_cookie`` and ``thanks_pages``, and the task app's ``tasks_submitted``,
        ``tasks_polled``, ``tasks_results`` and ``tasks_refused``."""
        return dict(self._native.stats())

    def stop(self) -> None:
        """stop shuts the server down; calling it twice is harmless."""
        self._native.stop()

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
