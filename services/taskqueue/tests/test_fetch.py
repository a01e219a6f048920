"""Integration tests of taskqueue.fetch against the local origin (loopback only, bounded).

Each test asserts on what the origin saw (requests, cancelled handlers, open connections) as
well as on what the fetcher reported. Time bounds are derived from the delays the test sets up.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import make_fetcher
from taskqueue.fetch import Fetcher, FetchError, FetchResult

try:
    from origin import Origin, async_wait_for, origin_server
except ImportError:  # tests/ made a package
    from tests.origin import Origin, async_wait_for, origin_server  # type: ignore[no-redef]

LOOPBACK = ["127.0.0.0/8", "::1/128"]


@pytest.fixture
def origin() -> Iterator[Origin]:
    with origin_server() as server:
        yield server


async def fetch_error(fetcher: Fetcher, url: str, **kwargs: Any) -> str:
    with pytest.raises(FetchError) as info:
        await fetcher.fetch(url, **kwargs)
    reason = info.value.reason
    assert reason and "\n" not in reason
    return reason


# --- content -------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_content_and_type_are_what_the_origin_served(origin: Origin) -> None:
    body = bytes(range(256)) * 40
    path = origin.set_blob("b", body, "image/png")
    async with make_fetcher(allow_cidrs=LOOPBACK) as fetcher:
        result = await fetcher.fetch(origin.url(path))
        text = await fetcher.fetch(origin.url("/content?type=text/html;%20charset=utf-8&body=hi"))
    assert result == FetchResult(content=body, content_type="image/png", status=200,
                                 final_url=origin.url(path), hedged=False)
    assert (text.content, text.content_type) == (b"hi", "text/html; charset=utf-8")
    assert origin.hits(path) == 1 and origin.hits("/content") == 1


@pytest.mark.asyncio
async def test_bad_url_and_arguments_fail_with_a_reason(origin: Origin) -> None:
    async with make_fetcher(allow_cidrs=LOOPBACK) as fetcher:
        assert "unsupported URL scheme" in await fetch_error(fetcher, "ftp://127.0.0.1/")
        assert "positive" in await fetch_error(fetcher, origin.url("/content"), timeout_ms=0)
    assert origin.hits() == 0


def test_bad_limits_are_refused() -> None:
    async def build() -> None:
        Fetcher(allow_cidrs=["not-a-cidr"])

    with pytest.raises(ValueError, match="invalid CIDR"):
        asyncio.run(build())


# --- timeouts ------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_timeout_closes_the_connection(origin: Origin) -> None:
    async with make_fetcher(allow_cidrs=LOOPBACK) as fetcher:
        start = time.monotonic()
        reason = await fetch_error(fetcher, origin.url("/slow?ms=5000"), timeout_ms=300)
        elapsed = time.monotonic() - start
        assert reason == "timeout after 300 ms"
        assert 0.3 <= elapsed < 2.5  # well short of the origin's 5 s
        # The origin's handler was cut short: the fetcher closed the connection.
        assert await async_wait_for(lambda: origin.cancelled("/slow") == 1, timeout=3)
        assert origin.open_connections() == 0
        reason = await fetch_error(fetcher, origin.url("/hang"), timeout_ms=200)
        assert reason == "timeout after 200 ms"
    assert await async_wait_for(lambda: origin.cancelled("/hang") == 1, timeout=3)


@pytest.mark.asyncio
async def test_one_deadline_spans_redirects(origin: Origin) -> None:
    # Four hops of 200 ms: each under the 500 ms deadline, together over it.
    async with make_fetcher(allow_cidrs=LOOPBACK) as fetcher:
        start = time.monotonic()
        reason = await fetch_error(fetcher, origin.url("/chain?n=3&ms=200"), timeout_ms=500)
        assert reason == "timeout after 500 ms"
        assert time.monotonic() - start < 0.8 * 2  # not 4 x 200 ms plus per-hop timeouts
        ok = await fetcher.fetch(origin.url("/chain?n=3&ms=50"), timeout_ms=5000)
    assert ok.content == b"chain end"


# --- size cap ------------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("chunked", ["0", "1"], ids=["content-length", "chunked"])
async def test_size_cap(origin: Origin, chunked: str) -> None:
    cap = 100_000
    async with make_fetcher(allow_cidrs=LOOPBACK, max_bytes=cap) as fetcher:
        exact = await fetcher.fetch(origin.url(f"/big?bytes={cap}&chunked={chunked}"))
        assert exact.content == b"x" * cap
        over = origin.url(f"/big?bytes={cap + 1}&chunked={chunked}")
        assert await fetch_error(fetcher, over) == f"response larger than {cap} bytes"
        # 20 MB would take the origin a while to push; the fetcher hangs up instead.
        huge = origin.url(f"/big?bytes={20 * 2**20}&chunked={chunked}")
        assert await fetch_error(fetcher, huge) == f"response larger than {cap} bytes"
        assert await async_wait_for(lambda: origin.cancelled("/big") >= 1, timeout=5)
    assert await async_wait_for(lambda: origin.open_connections() == 0, timeout=3)


# --- redirects and statuses ----------------------------------------------------------------


@pytest.mark.asyncio
async def test_redirects_within_and_above_the_limit(origin: Origin) -> None:
    async with make_fetcher(allow_cidrs=LOOPBACK, max_redirects=5) as fetcher:
        ok = await fetcher.fetch(origin.url("/chain?n=5"))
        assert (ok.content, ok.final_url) == (b"chain end", origin.url("/chain?n=0&ms=0"))
        assert origin.hits("/chain") == 6
        assert await fetch_error(fetcher, origin.url("/chain?n=6")) == "too many redirects (>5)"
        assert origin.hits("/chain") == 12  # the 6th redirect was not followed
    async with make_fetcher(allow_cidrs=LOOPBACK, max_redirects=0) as fetcher:
        assert (await fetcher.fetch(origin.url("/chain?n=0"))).content == b"chain end"
        assert await fetch_error(fetcher, origin.url("/chain?n=1")) == "too many redirects (>0)"


@pytest.mark.asyncio
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_redirect_statuses_and_absolute_location(origin: Origin, status: int) -> None:
    target = origin.url("/content?body=moved")
    async with make_fetcher(allow_cidrs=LOOPBACK) as fetcher:
        got = await fetcher.fetch(origin.url(f"/redirect?status={status}&to={target}"))
    assert (got.content, got.final_url) == (b"moved", target)


@pytest.mark.asyncio
async def test_redirect_to_other_scheme_fails(origin: Origin) -> None:
    async with make_fetcher(allow_cidrs=LOOPBACK) as fetcher:
        reason = await fetch_error(fetcher, origin.url("/redirect?to=file:///etc/passwd"))
    assert reason.startswith("bad redirect to 'file:///etc/passwd'")


@pytest.mark.asyncio
@pytest.mark.parametrize("code", [404, 500, 204, 304])
async def test_status_codes(origin: Origin, code: int) -> None:
    async with make_fetcher(allow_cidrs=LOOPBACK) as fetcher:
        if code == 204:
            assert (await fetcher.fetch(origin.url("/status/204"))).status == 204
        else:
            reason = await fetch_error(fetcher, origin.url(f"/status/{code}"))
            assert reason == f"origin answered {code}"
    assert origin.hits(f"/status/{code}") == 1


# --- connection failures -------------------------------------------------------------------


@pytest.mark.asyncio
async def test_reset_refused_and_unresolvable(origin: Origin) -> None:
    async with make_fetcher(allow_cidrs=LOOPBACK) as fetcher:
        reason = await fetch_error(fetcher, origin.url("/reset"))
        assert reason in {"connection reset",
                          "connection closed by origin before the response completed"}
        assert origin.hits("/reset") >= 1
        with socket.socket() as probe:  # a port with nobody listening
            probe.bind(("127.0.0.1", 0))
            free = probe.getsockname()[1]
        reason = await fetch_error(fetcher, f"http://127.0.0.1:{free}/")
        assert reason == f"cannot connect to 127.0.0.1:{free} (connection refused)"
        # A resolver that fails as getaddrinfo does for an unknown name: no dependence on the
        # box's DNS configuration (white-box: the guarded resolver's inner resolver).
        fetcher._resolver._inner = _NoSuchHostResolver()  # type: ignore[assignment]
        reason = await fetch_error(fetcher, "http://no-such-host.invalid/", timeout_ms=5000)
        assert reason == "cannot resolve host no-such-host.invalid"


class _NoSuchHostResolver:
    async def resolve(self, host: str, port: int = 0, family: int = 0) -> list[dict[str, Any]]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    async def close(self) -> None:
        pass


@pytest.mark.asyncio
async def test_pool_bounds_connections_per_host(origin: Origin) -> None:
    async with make_fetcher(allow_cidrs=LOOPBACK, max_per_host=2) as fetcher:
        start = time.monotonic()
        results = await asyncio.gather(
            *(fetcher.fetch(origin.url("/slow?ms=200")) for _ in range(6)))
        elapsed = time.monotonic() - start
    assert all(r.content == b"slow ok" for r in results)
    assert origin.peak_in_flight() == 2
    assert elapsed >= 3 * 0.2 * 0.95  # three waves of two


# --- hedging -------------------------------------------------------------------------------


class HedgeCounter:
    def __init__(self) -> None:
        self.fired = 0

    def __call__(self) -> None:
        self.fired += 1


@pytest.mark.asyncio
async def test_hedge_wins_when_first_is_slow(origin: Origin) -> None:
    first_ms, then_ms, hedge_ms = 2000, 10, 100
    counter = HedgeCounter()
    url = origin.url(f"/hedge?key=slow&first_ms={first_ms}&then_ms={then_ms}")
    async with make_fetcher(allow_cidrs=LOOPBACK, on_hedge=counter) as fetcher:
        start = time.monotonic()
        result = await fetcher.fetch(url, timeout_ms=10000, hedge_after_ms=hedge_ms)
        elapsed = time.monotonic() - start
        assert result.content == b"hedge slow #2" and result.hedged
        assert counter.fired == 1
        assert origin.hits("/hedge") == 2
        # At least the hedge delay plus the fast answer; far less than the slow first answer.
        assert (hedge_ms + then_ms) / 1000 <= elapsed < first_ms / 2 / 1000
        # The loser's connection was closed (its handler cancelled), not left open or pooled:
        # what stays open is at most the winner's keep-alive connection.
        loser_closed = await async_wait_for(lambda: origin.cancelled("/hedge") == 1,
                                            timeout=first_ms / 2000)
        assert loser_closed
        assert origin.open_connections() <= 1
    assert await async_wait_for(lambda: origin.open_connections() == 0, timeout=3)


@pytest.mark.asyncio
async def test_no_hedge_when_first_is_fast(origin: Origin) -> None:
    counter = HedgeCounter()
    async with make_fetcher(allow_cidrs=LOOPBACK, on_hedge=counter) as fetcher:
        result = await fetcher.fetch(origin.url("/hedge?key=fast&first_ms=0&then_ms=0"),
                                     hedge_after_ms=1000)
        reason = await fetch_error(fetcher, origin.url("/status/404"), hedge_after_ms=1000)
    assert (result.content, result.hedged) == (b"hedge fast #1", False)
    assert reason == "origin answered 404"
    assert counter.fired == 0 and origin.hits("/hedge") == 1 and origin.hits("/status/404") == 1


@pytest.mark.asyncio
async def test_hedged_fetch_keeps_one_deadline(origin: Origin) -> None:
    counter = HedgeCounter()
    async with make_fetcher(allow_cidrs=LOOPBACK, on_hedge=counter) as fetcher:
        start = time.monotonic()
        reason = await fetch_error(fetcher, origin.url("/hang"), timeout_ms=400, hedge_after_ms=100)
        assert time.monotonic() - start < 0.4 + 1.0
    assert reason == "timeout after 400 ms"
    assert counter.fired == 1
    assert await async_wait_for(lambda: origin.cancelled("/hang") == 2, timeout=3)


@pytest.mark.asyncio
async def test_cancelled_fetch_closes_its_connection(origin: Origin) -> None:
    async with make_fetcher(allow_cidrs=LOOPBACK) as fetcher:
        task = asyncio.create_task(fetcher.fetch(origin.url("/hang"), timeout_ms=10000))
        assert await async_wait_for(lambda: origin.hits("/hang") == 1, timeout=3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await async_wait_for(lambda: origin.cancelled("/hang") == 1, timeout=3)
        assert origin.open_connections() == 0


# --- no leaks (the seed's "too many open files") -------------------------------------------


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
@pytest.mark.asyncio
async def test_failing_fetches_leak_no_file_descriptors(origin: Origin) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        refused = f"http://127.0.0.1:{probe.getsockname()[1]}/"
    failing = [
        (origin.url("/hang"), {"timeout_ms": 50}),
        (origin.url("/hang"), {"timeout_ms": 60, "hedge_after_ms": 10}),
        (origin.url("/reset"), {}),
        (origin.url("/big?bytes=3000000&chunked=1"), {}),
        (origin.url("/big?bytes=3000000"), {}),
        (origin.url("/status/500"), {}),
        (origin.url("/chain?n=9"), {}),
        (refused, {}),
        # Blocked: only 127.0.0.1/32 is allowed below.
        (f"http://127.0.0.2:{origin.ports.get('127.0.0.2', origin.port)}/content", {}),
    ]
    per_host = 10
    rounds = 30  # 30 x 9 = 270 failing fetches, plus 30 hedged successes
    baseline = _open_fds()
    async with make_fetcher(allow_cidrs=["127.0.0.1/32"], max_bytes=10_000,
                            max_per_host=per_host) as fetcher:
        for i in range(rounds):
            calls = [fetcher.fetch(url, **kw) for url, kw in failing]
            hedge = origin.url(f"/hedge?key=leak{i}&first_ms=5000&then_ms=0")
            calls.append(fetcher.fetch(hedge, hedge_after_ms=5))
            outcomes = await asyncio.gather(*calls, return_exceptions=True)
            assert all(isinstance(o, FetchError) for o in outcomes[:-1]), outcomes
            assert isinstance(outcomes[-1], FetchResult), outcomes[-1]
        # Still open: at most the idle pooled connections, each counted twice (client and
        # origin ends live in this process), plus a little slack for the loop's own fds.
        bound = baseline + 2 * per_host + 4
        assert await async_wait_for(lambda: _open_fds() <= bound, timeout=5), (_open_fds(), bound)
    assert await async_wait_for(lambda: _open_fds() <= baseline, timeout=5), (_open_fds(), baseline)
    assert origin.hits("/content") == 0
