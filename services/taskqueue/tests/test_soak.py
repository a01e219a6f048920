"""Resource soak (the seed's "too many open files" bug): about a minute of http-fetch load
against origins that are slow, reset, time out, refuse, fail or send too much, while the
server's open fd count and RSS are sampled with psutil. Both must stay flat."""

from __future__ import annotations

import asyncio
import os
import random
import socket
import statistics
import time

import aiohttp
import psutil
import pytest

SOAK_S = float(os.environ.get("TASKQUEUE_SOAK_S", "60"))
CLIENTS = 32
FETCH_CONCURRENCY = 40
# Everything the server may legitimately hold open at once: the fetch pool, the clients'
# keep-alive connections, and a margin for SQLite (db, wal, shm), the process pool's pipes,
# the event loop's own fds and the listening socket.
FD_MARGIN = 32


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _targets(origin) -> list[tuple[str, int]]:
    refused = f"http://127.0.0.1:{_closed_port()}/nothing-here"
    return [
        (origin.url("/slow?ms=50"), 5000),
        (origin.url("/slow?ms=300"), 5000),
        (origin.url("/reset"), 5000),
        (origin.url("/hang"), 200),
        (origin.url("/status/500"), 5000),
        (origin.url("/big?bytes=200000"), 5000),
        (origin.url("/big?bytes=200000&chunked=1"), 5000),
        (origin.url("/content?body=ok"), 5000),
        (refused, 5000),
        (origin.url("/chain?n=7"), 5000),
    ]


async def _client(
    url: str, targets: list[tuple[str, int]], deadline: float, seed: int, done: list[int]
) -> None:
    rng = random.Random(seed)
    async with aiohttp.ClientSession(base_url=url, timeout=aiohttp.ClientTimeout(total=30)) as s:
        while time.monotonic() < deadline:
            target, timeout_ms = rng.choice(targets)
            body = {"type": "http-fetch", "url": target, "timeout_ms": timeout_ms}
            async with s.post("/tasks/submissions", json=body) as r:
                assert r.status in (202, 503), await r.text()
                if r.status == 503:
                    await asyncio.sleep(0.05)
                    continue
                task_id = (await r.json())["id"]
            for _ in range(600):  # bounded poll, every 50 ms
                async with s.get(f"/tasks/submissions/{task_id}") as r:
                    status = (await r.json())["status"]
                if status in ("SUCCEEDED", "FAILED"):
                    break
                await asyncio.sleep(0.05)
            async with s.get(f"/tasks/{task_id}") as r:
                assert r.status == 200, await r.text()
                await r.read()
            done[0] += 1


async def _sample(proc: psutil.Process, deadline: float, samples: list[tuple[int, int]]) -> None:
    while time.monotonic() < deadline:
        samples.append((proc.num_fds(), proc.memory_info().rss))
        await asyncio.sleep(0.5)


async def _soak(
    url: str, targets: list[tuple[str, int]], proc: psutil.Process
) -> tuple[list[tuple[int, int]], int]:
    deadline = time.monotonic() + SOAK_S
    samples: list[tuple[int, int]] = []
    done = [0]
    clients = [_client(url, targets, deadline, i, done) for i in range(CLIENTS)]
    await asyncio.gather(_sample(proc, deadline, samples), *clients)
    return samples, done[0]


@pytest.mark.soak
@pytest.mark.slow  # started first under make test's pytest-xdist workers
@pytest.mark.sqlite_only("the fetch path's fds and memory; a minute per run")
def test_fds_and_rss_stay_flat_under_hostile_origins(server_factory, origin) -> None:
    srv = server_factory(
        "--allow-fetch-cidr",
        "127.0.0.0/8",
        "--fetch-concurrency",
        str(FETCH_CONCURRENCY),
        "--max-fetch-bytes",
        "65536",
        "--cache-finished",
        "500",
    )
    proc = psutil.Process(srv.pid)
    idle_fds = proc.num_fds()
    samples, tasks = asyncio.run(_soak(srv.url, _targets(origin), proc))
    fds = [f for f, _ in samples]
    rss = [r for _, r in samples]
    ceiling = idle_fds + FETCH_CONCURRENCY + CLIENTS + FD_MARGIN
    assert tasks > 5 * ceiling, f"only {tasks} tasks: too few for a leak to show"
    assert max(fds) <= ceiling, (
        f"fds peaked at {max(fds)} (idle {idle_fds}, ceiling {ceiling}) over {tasks} tasks"
    )
    third = len(rss) // 3
    middle, last = statistics.median(rss[third : 2 * third]), statistics.median(rss[2 * third :])
    # Warm-up (first third) excluded: caches, pools and allocator arenas fill there.
    assert last <= middle * 1.15 + 8 * 2**20, (
        f"RSS grew from {middle / 2**20:.1f} to {last / 2**20:.1f} MiB"
    )
    # Once the load stops every fetch ends, and the server holds at most its keep-alive pool.
    deadline = time.monotonic() + 15
    while proc.num_fds() > idle_fds + FETCH_CONCURRENCY and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc.num_fds() <= idle_fds + FETCH_CONCURRENCY
    assert origin.open_connections() <= FETCH_CONCURRENCY
    print(
        f"soak: {tasks} tasks, fds idle {idle_fds} max {max(fds)}, RSS median {middle / 2**20:.1f}"
        f" -> {last / 2**20:.1f} MiB"
    )
