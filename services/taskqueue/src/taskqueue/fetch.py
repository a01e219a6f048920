"""fetch: the outbound HTTP client behind http-fetch tasks.

The seed service died of "too many open files" under http-fetch load: a client per task and
connections left open on error paths. Here one pooled session serves every fetch, with a hard
bound on connections in total and per host, one overall deadline, a response size cap, manual
redirects (each hop passes the SSRF policy), and hedged requests for tail latency. Every path
out of a fetch (success, error, timeout, cancellation) either returns the connection to the
pool fully read or closes it.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import aiohttp
from yarl import URL

from taskqueue.ssrf import (
    AddressPolicy,
    BlockedAddressError,
    GuardedConnector,
    GuardedResolver,
    check_url,
    parse_host_ip,
)

if sys.version_info >= (3, 11):
    from asyncio import timeout as deadline
else:  # aiohttp depends on async-timeout before 3.11
    from async_timeout import timeout as deadline

__all__ = ["Fetcher", "FetchResult", "FetchError", "PoolUse", "check_url", "deadline"]

log = logging.getLogger(__name__)

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_CHUNK = 64 * 1024
_USER_AGENT = "taskqueue-fetch/1"
LITERALS_KEPT = 1024
"""LITERALS_KEPT bounds the IP-literal verdicts a Fetcher remembers (all are dropped at once
when it is reached: the hosts a service fetches from are few, a flood of new ones is not)."""


@dataclass(frozen=True)
class PoolUse:
    """PoolUse is the fetch pool's occupancy at one moment: connections held by a fetch, in
    all and per origin (``host:port``), the limits, and the fetches waiting for a connection
    per origin (the pool's saturation: work that has a slot but no connection)."""

    in_use: int
    limit: int
    per_host: dict[str, int]
    per_host_limit: int
    waiting: dict[str, int]


@dataclass(frozen=True)
class FetchResult:
    """FetchResult is a successful fetch: the body and Content-Type as the origin sent them.

    hedged is True when a second (hedge) request was started for this fetch, whichever won.
    """

    content: bytes
    content_type: str
    status: int
    final_url: str
    hedged: bool


class FetchError(Exception):
    """FetchError is a failed fetch; reason is one human line, stored as the task's error."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Fetcher:
    """Fetcher owns the one pooled client session used by every http-fetch task.

    Construct it inside the running event loop and close() it on shutdown.
    """

    def __init__(
        self,
        allow_cidrs: Iterable[str] = (),
        max_bytes: int = 10 * 2**20,
        max_redirects: int = 5,
        max_connections: int = 100,
        max_per_host: int = 10,
        connect_timeout_s: float = 5.0,
        on_hedge: Callable[[], None] | None = None,
        read_timeout_s: float = 30.0,
    ) -> None:
        if max_bytes < 0 or max_redirects < 0 or max_connections < 1 or max_per_host < 0:
            raise ValueError("fetch limits must be non-negative (max_connections at least 1)")
        self._policy = AddressPolicy(allow_cidrs)
        self._max_bytes = max_bytes
        self._max_redirects = max_redirects
        self._connect_timeout_s = connect_timeout_s
        self._read_timeout_s = read_timeout_s
        self._on_hedge = on_hedge
        # One request's socket bounds, the same for every request: built once.
        self._request_timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=connect_timeout_s, sock_read=read_timeout_s
        )
        self._literals: dict[str, tuple[str | None, str | None]] = {}  # _guard_literal's verdicts
        self._resolver = GuardedResolver(self._policy)
        self._connector = GuardedConnector(
            self._policy,
            limit=max_connections,
            limit_per_host=max_per_host,
            resolver=self._resolver,
            ttl_dns_cache=10,
        )
        self._session = aiohttp.ClientSession(
            connector=self._connector,
            # Tasks belong to different clients: never carry cookies from one to the next,
            # and never route through a proxy named in the environment (it would bypass SSRF).
            cookie_jar=aiohttp.DummyCookieJar(),
            trust_env=False,
            headers={"User-Agent": _USER_AGENT},
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout_s),
        )

    def pool_use(self) -> PoolUse:
        """pool_use reads the connector's occupancy. aiohttp keeps it in private fields
        (``_acquired``, ``_acquired_per_host``, ``_waiters``, stable since 3.x) and has no
        public reader; the figures are the limits' own bookkeeping, so nothing here can
        drift from what the pool enforces. A field a future aiohttp renames reads as 0."""
        c = self._connector
        acquired: Any = getattr(c, "_acquired", ())
        per_key: Any = getattr(c, "_acquired_per_host", {})
        waiters: Any = getattr(c, "_waiters", {})
        per_host = {f"{k.host}:{k.port}": len(v) for k, v in dict(per_key).items() if v}
        waiting = {f"{k.host}:{k.port}": len(v) for k, v in dict(waiters).items() if v}
        return PoolUse(len(acquired), c.limit, per_host, c.limit_per_host, waiting)

    async def close(self) -> None:
        """close shuts the session and every pooled connection."""
        await self._session.close()
        await self._resolver.close()

    async def fetch(
        self, url: str, timeout_ms: int = 10000, hedge_after_ms: int | None = None
    ) -> FetchResult:
        """fetch GETs url and returns its body, or raises FetchError with the reason.

        timeout_ms is one deadline for everything (connects, redirects, hedge, body).
        """
        if timeout_ms <= 0:
            raise FetchError("timeout_ms must be positive")
        if hedge_after_ms is not None and hedge_after_ms < 0:
            raise FetchError("hedge_after_ms must not be negative")
        try:
            check_url(url)
        except ValueError as exc:
            raise FetchError(str(exc)) from None
        start = URL(url)
        bound = deadline(timeout_ms / 1000)
        try:
            async with bound:
                if hedge_after_ms is None:
                    return await self._attempt(start, None)
                return await self._hedged(start, hedge_after_ms / 1000)
        except asyncio.TimeoutError:
            expired = bound.expired  # a method on asyncio's, a property on async-timeout's
            if expired() if callable(expired) else expired:
                raise FetchError(f"timeout after {timeout_ms} ms") from None
            raise

    async def _hedged(self, url: URL, hedge_after_s: float) -> FetchResult:
        """_hedged runs "The Tail at Scale" hedging: a second request if the first is slow."""
        answered = asyncio.Event()
        primary = asyncio.create_task(self._attempt(url, answered))
        tasks: list[asyncio.Task[Any]] = [primary]
        try:
            waiter = asyncio.create_task(answered.wait())
            tasks.append(waiter)
            await asyncio.wait(
                {primary, waiter}, timeout=hedge_after_s, return_when=asyncio.FIRST_COMPLETED
            )
            if primary.done() or answered.is_set():
                return await primary
            self._fire_on_hedge()
            secondary = asyncio.create_task(self._attempt(url, None))
            tasks.append(secondary)
            return await self._first_success(primary, secondary)
        finally:
            # The loser is cancelled; _attempt closes (never pools) a half-read connection.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    @staticmethod
    async def _first_success(
        primary: asyncio.Task[FetchResult], secondary: asyncio.Task[FetchResult]
    ) -> FetchResult:
        pending: set[asyncio.Task[FetchResult]] = {primary, secondary}
        while pending:
            _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in (primary, secondary):
                if task.done() and task.exception() is None:
                    return replace(task.result(), hedged=True)
        # Both failed: report the primary's reason, the one a non-hedged fetch would give.
        return primary.result()

    def _fire_on_hedge(self) -> None:
        if self._on_hedge is None:
            return
        try:
            self._on_hedge()
        except Exception:  # a metrics callback must not fail the fetch
            log.exception("on_hedge callback failed")

    async def _attempt(self, url: URL, answered: asyncio.Event | None) -> FetchResult:
        """_attempt follows redirects from url and reads the final body, within the limits."""
        current = url
        for hop in range(self._max_redirects + 1):
            current = self._guard_literal(current)
            resp = await self._open(current)
            try:
                location = resp.headers.get("Location")
                if resp.status in _REDIRECT_STATUSES and location:
                    resp.release()
                    if hop == self._max_redirects:
                        raise FetchError(f"too many redirects (>{self._max_redirects})")
                    current = _next_hop(current, location)
                    continue
                if answered is not None:
                    answered.set()
                if not 200 <= resp.status < 300:
                    resp.release()
                    raise FetchError(f"origin answered {resp.status}")
                content = await self._read_capped(resp)
                resp.release()
                return FetchResult(
                    content=content,
                    content_type=resp.headers.get("Content-Type", "application/octet-stream"),
                    status=resp.status,
                    final_url=str(current),
                    hedged=False,
                )
            except BaseException:
                # Oversize, cancelled (hedge loser, deadline) or reset: the connection may be
                # mid-body, so it is closed rather than returned to the pool.
                resp.close()
                raise
        raise AssertionError("unreachable: the loop returns or raises")

    def _guard_literal(self, url: URL) -> URL:
        """_guard_literal applies the policy to an IP-literal host (aiohttp skips the resolver
        for those) and rewrites legacy spellings such as 2130706433 to dotted form.

        The verdict depends on the host string and this fetcher's policy alone, and the same
        few hosts come back fetch after fetch: it is remembered (LITERALS_KEPT hosts)."""
        host = url.raw_host or ""
        verdict = self._literals.get(host)
        if verdict is None:
            verdict = self._judge_literal(host)
            if len(self._literals) >= LITERALS_KEPT:
                self._literals.clear()
            self._literals[host] = verdict
        refusal, dotted = verdict
        if refusal is not None:
            raise FetchError(refusal)
        return url if dotted is None else url.with_host(dotted)

    def _judge_literal(self, host: str) -> tuple[str | None, str | None]:
        """_judge_literal: (why the policy refuses host, or None; its dotted form when that
        differs from how it was written, or None)."""
        try:
            ip = parse_host_ip(host)
            if ip is None:
                return None, None
            self._policy.check(ip)
        except (ValueError, BlockedAddressError) as exc:
            return str(exc), None
        return None, (str(ip) if ip.version == 4 and host != str(ip) else None)

    async def _open(self, url: URL) -> aiohttp.ClientResponse:
        """_open sends the GET and waits for the response headers, mapping errors to reasons."""
        try:
            return await self._session.get(
                url, allow_redirects=False, timeout=self._request_timeout
            )
        except (aiohttp.ClientError, OSError) as exc:
            raise self._failure(exc, url) from None

    async def _read_capped(self, resp: aiohttp.ClientResponse) -> bytes:
        """_read_capped streams the body and gives up as soon as it passes max_bytes."""
        too_big = f"response larger than {self._max_bytes} bytes"
        if resp.content_length is not None and resp.content_length > self._max_bytes:
            raise FetchError(too_big)
        body = bytearray()
        try:
            async for chunk in resp.content.iter_chunked(_CHUNK):
                body += chunk
                if len(body) > self._max_bytes:
                    raise FetchError(too_big)
        except (aiohttp.ClientError, OSError) as exc:
            raise self._failure(exc, resp.url) from None
        return bytes(body)

    def _failure(self, exc: BaseException, url: URL) -> FetchError:
        return FetchError(_reason(exc, url, self._connect_timeout_s, self._read_timeout_s))


def _next_hop(current: URL, location: str) -> URL:
    """_next_hop resolves a Location header against the current URL and checks its syntax."""
    try:
        target = current.join(URL(location)).with_fragment(None)
        check_url(str(target))
    except ValueError as exc:
        raise FetchError(f"bad redirect to {location[:200]!r}: {exc}") from None
    return target


def _find_blocked(exc: BaseException | None) -> BlockedAddressError | None:
    """_find_blocked digs the policy's refusal out of aiohttp's wrapping exceptions."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, BlockedAddressError):
            return exc
        inner = getattr(exc, "os_error", None)
        if isinstance(inner, BlockedAddressError):
            return inner
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def _reason(exc: BaseException, url: URL, connect_s: float, read_s: float) -> str:
    """_reason turns a client exception into the one-line reason a task's owner reads."""
    blocked = _find_blocked(exc)
    if blocked is not None:
        return str(blocked)
    host = url.host or "?"
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return f"cannot resolve host {host}"
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return f"connect timeout after {connect_s * 1000:.0f} ms to {host}"
    if isinstance(exc, aiohttp.SocketTimeoutError):
        return f"read timeout after {read_s * 1000:.0f} ms from {host}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        code = exc.os_error.errno
        why = os.strerror(code).lower() if code else str(exc.os_error)
        return f"cannot connect to {host}:{url.port} ({why})"
    if isinstance(exc, ConnectionResetError) or getattr(exc, "errno", None) == errno.ECONNRESET:
        return "connection reset"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "connection closed by origin before the response completed"
    if isinstance(exc, aiohttp.ClientPayloadError):
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, ConnectionResetError):
            return "connection reset"
        return "response body truncated or malformed"
    if isinstance(exc, aiohttp.ClientResponseError):
        return f"invalid response from origin ({exc.message})"
    detail = str(exc).strip().splitlines()
    suffix = f": {detail[0][:300]}" if detail else ""
    return f"fetch failed: {type(exc).__name__}{suffix}"
