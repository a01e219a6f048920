"""Target: redline's bundled HTTP test server (Rust, multi-threaded), for tests, benchmarks and
demos. Behaviour is chosen per request by query parameters, e.g. ``/?latency=20ms``,
``/?size=1024``, ``/?status=500&p=0.1``, ``/?stall=1s/5s``; ``/__stats`` counts what it served.
Server-wide modes make probes whose truth is known (capacity, load shedding, pauses, contention,
a rate limit: see :class:`Target`). ``/form`` and ``/thanks`` are a small survey app (session
cookie, form post, 302) for scenario tests. Streamed answers:
``/sse?first=200ms&every=20ms&events=50`` (server-sent events, the first ``first`` after the
request arrived, then one every ``every``) and OpenAI-compatible ``POST /v1/chat/completions``
and ``/v1/completions`` (with ``"stream": true``, or no body: one token an event at
``first=``/``every=``, ``tokens=`` or the body's ``max_tokens`` of them, then
``data: [DONE]``; without it, one JSON answer when the last token is due).

    >>> with redline.Target() as t:
    ...     redline.run(t.url + "/?latency=5ms", duration="2s")
"""

from __future__ import annotations

import os
from typing import Any

from redline import _engine
from redline.errors import ConfigError
from redline.runs.options import parse_duration


class Target:
    """Target starts the server on ``host:port`` (port 0 picks a free port) with ``threads``
    worker threads (default: one per core); use it as a context manager or call :meth:`stop`.
    With ``tls_cert`` and ``tls_key`` (PEM files) it serves https, and with ``http2=True``
    offers HTTP/2 by ALPN too (its gRPC probe over TLS, ``grpcs://``); h2c (HTTP/2 with prior
    knowledge, ``grpc://``) is always answered.

    Server-wide probes, each with a known truth (N slots, S service time, offered load λ):

    - **Capacity**, ``capacity=N, service_time=S`` (``"10ms"`` or seconds): at most N requests
      in service at once, each for exactly S, the rest waiting first come, first served:
      throughput N / S req/s under overload, C / S with C < N clients. A request's own
      ``latency=``/``stall=`` come first and hold no slot; ``/__stats`` never waits.
    - **Load shedding**, ``queue_limit=Q`` (with capacity): a request that would wait when Q
      already wait gets 503 with ``Retry-After: 1`` at once. Accepted throughput stays N / S
      under overload (Q >= 1); the refused share is 1 - (N / S) / λ (counter
      ``queue_refused``). Q = 0 is a loss system: no request waits.
    - **Pauses**, ``pause="D/P"`` (with capacity, e.g. ``"50ms/1s"``): the slots stop for the
      first D of every P since the start: no service starts or completes inside a pause (one
      in progress resumes after it), arrivals still queue. Capacity (N / S)·(1 - D / P).
    - **Contention** (USL), ``contention=κ, service_time=S`` and optionally ``serial=σ``
      (default 0), not with capacity: every request in service slows the others; with n in
      service each progresses at 1 / f(n), f(n) = 1 + σ(n - 1) + κn(n - 1) (exact processor
      sharing, recomputed at every arrival and departure). N closed-loop users get
      X(N) = N / (S·f(N)), peaking at N* = sqrt((1 - σ) / κ) and falling beyond; Kleinrock's
      power X²/N peaks at the root of 3κN² + (σ - κ)N - (1 - σ) = 0. S = 10 ms, κ = 0.01:
      526 req/s at N = 10, power best at N ≈ 6. In the open model past the peak the server
      collapses (n grows, everything slows) and stays collapsed when the load drops back
      below the peak (metastable); only a load below X(n) at the collapsed n drains it.
      Counters ``contention_busy``, ``contention_peak``, ``contention_served``.
    - **Rate limit**, ``rate_limit=R`` (req/s) and ``burst=B`` (default 1), with any mode or
      the plain immediate answer: a token bucket (exact, computed from timestamps) in front of
      everything; a request finding no token gets ``refuse_status`` (default 503; 429 the
      other convention) with ``Retry-After`` (seconds to the next token, at least 1). Accepted
      rate R over any window W long against B / R (at most B + R·W). Counters
      ``rate_accepted``, ``rate_refused``.
    - **Failing tasks**, ``fail_every=N``: the task app runs every N-th fresh submission as a
      failing task (its status ends ``FAILED``), counted across threads; a submission with an
      ``X-Retry-Of: ID`` header naming a failed task is a resubmission (never failed by the
      knob). Counters ``tasks_succeeded``, ``tasks_failed`` (status answers that said so) and
      ``tasks_resubmitted``.
    - **Idle timeout**, ``idle_timeout=T`` (``"5s"`` or seconds): an HTTP/1.1 connection
      that waits T for its next request is closed (FIN, then gone: a request sent on it
      after meets a reset), as uvicorn's keep-alive timeout does. Counter ``idle_closed``.

    The module docs of ``crates/testserver/src/`` (``capacity.rs``, ``pause.rs``,
    ``contention.rs``, ``bucket.rs``) derive each truth."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        threads: int | None = None,
        tls_cert: str | os.PathLike[str] | None = None,
        tls_key: str | os.PathLike[str] | None = None,
        capacity: int | None = None,
        service_time: str | float | None = None,
        *,
        queue_limit: int | None = None,
        pause: str | None = None,
        contention: float | None = None,
        serial: float | None = None,
        rate_limit: float | None = None,
        burst: int | None = None,
        refuse_status: int | None = None,
        fail_every: int | None = None,
        idle_timeout: str | float | None = None,
        http2: bool = False,
    ):
        _whole("threads", threads, 1)
        _whole("capacity", capacity, 1)
        _whole("fail_every", fail_every, 1)
        _whole("queue_limit", queue_limit, 0)
        _whole("burst", burst, 1)
        _whole("refuse_status", refuse_status, 0)
        for name, value in (
            ("contention", contention),
            ("serial", serial),
            ("rate_limit", rate_limit),
        ):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float))
            ):
                raise ConfigError(f"{name}: expected a number, got {value!r}")
        if pause is not None and not isinstance(pause, str):
            raise ConfigError(f"pause: expected 'D/P' such as '50ms/1s', got {pause!r}")
        self._native = _engine.Target(
            host,
            port,
            threads,
            None if tls_cert is None else os.fspath(tls_cert),
            None if tls_key is None else os.fspath(tls_key),
            capacity,
            None if service_time is None else parse_duration(service_time, "service_time"),
            queue_limit,
            pause,
            None if contention is None else float(contention),
            None if serial is None else float(serial),
            None if rate_limit is None else float(rate_limit),
            burst,
            refuse_status,
            fail_every,
            None if idle_timeout is None else parse_duration(idle_timeout, "idle_timeout"),
            bool(http2),
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
        ``queue_peak`` (most ever waiting), ``queue_served`` (completed services) and
        ``queue_refused`` (shed by ``queue_limit``); in contention mode ``contention_busy``
        (in service now), ``contention_peak`` (most at once) and ``contention_served``; with a
        rate limit ``rate_accepted`` and ``rate_refused``; the form app's ``form_pages``,
        ``sessions_issued``, ``forms_posted``, ``forms_invalid``, ``missing_cookie`` and
        ``thanks_pages``; and the task app's ``tasks_submitted``, ``tasks_polled`` (of which
        ``tasks_running`` answered RUNNING, ``tasks_succeeded`` SUCCEEDED and ``tasks_failed``
        FAILED), ``tasks_results``, ``tasks_resubmitted`` and ``tasks_refused``; and the streams'
        ``stream_responses`` (streamed answers begun), ``stream_events`` (SSE events handed to the
        socket, a completion's closing chunk and ``[DONE]`` included) and ``completion_tokens``;
        and the WebSocket echo's (``/ws``) ``ws_sockets`` (upgrades), ``ws_received`` and
        ``ws_sent`` (messages), ``ws_dropped`` and ``ws_closed`` (sockets it ended); and
        ``idle_closed``, connections the idle timeout closed; and the gRPC probe's
        (examples/grpc/probe.proto) ``grpc_calls``, ``grpc_received`` (request messages read),
        ``grpc_messages`` (replies written), ``grpc_failed`` (calls ended with a status other
        than OK) and ``grpc_deadline`` (those its ``grpc-timeout`` ended, DEADLINE_EXCEEDED)."""
        return dict(self._native.stats())

    def stop(self) -> None:
        """stop shuts the server down; calling it twice is harmless."""
        self._native.stop()

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _whole(name: str, value: object, least: int) -> None:
    """_whole refuses a ``value`` that is not a whole number >= ``least`` (None passes); the
    upper bound only keeps it inside the native integer (the server judges the real range)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigError(f"{name}: expected a whole number >= {least}, got {value!r}")
    if value >= 2**32:
        raise ConfigError(f"{name}: {value} is too large")
