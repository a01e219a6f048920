"""Durability: kill -9 the server while it accepts submissions; every task that got a 202
exists after the restart and completes, and none runs twice unless its lease expired."""

from __future__ import annotations

import random
import threading
import time
import uuid

import httpx
from conftest import wait_final

SUBMITTERS = 6
KILL_AFTER_ACCEPTED = 400
MAX_SUBMIT_S = 20.0


def test_kill_9_loses_no_accepted_task(server_factory, origin, tmp_path) -> None:
    data = tmp_path / "data"
    first = server_factory("--allow-fetch-cidr", "127.0.0.0/8", data_dir=data)
    accepted: dict[str, str | None] = {}  # task id -> origin path (None for factorial)
    lock = threading.Lock()
    stop = threading.Event()

    def submitter(seed: int) -> None:
        rng = random.Random(seed)
        deadline = time.monotonic() + MAX_SUBMIT_S
        with httpx.Client(base_url=first.url, timeout=5.0) as c:
            while not stop.is_set() and time.monotonic() < deadline:
                path = None
                if rng.random() < 0.6:
                    path = origin.set_blob(uuid.uuid4().hex, b"payload", "text/plain")
                    body = {"type": "http-fetch", "url": origin.url(path)}
                else:
                    body = {"type": "factorial", "n": rng.choice([10, 1000, 20000])}
                try:
                    r = c.post("/tasks/submissions", json=body)
                except httpx.HTTPError:
                    return  # the server died mid-request: outcome unknown, not counted
                if r.status_code == 202:
                    with lock:
                        accepted[r.json()["id"]] = path

    threads = [threading.Thread(target=submitter, args=(i,)) for i in range(SUBMITTERS)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + MAX_SUBMIT_S
    while len(accepted) < KILL_AFTER_ACCEPTED and time.monotonic() < deadline:
        time.sleep(0.005)
    # Note some tasks already finished before the crash: they must never run again.
    with lock:
        sample = list(accepted)[:50]
    with first.client() as c:
        done_before = {
            i for i in sample if c.get(f"/tasks/submissions/{i}").json()["status"] == "SUCCEEDED"
        }
    first.kill()  # SIGKILL while submitters are still sending
    stop.set()
    for t in threads:
        t.join(10)
    assert len(accepted) >= KILL_AFTER_ACCEPTED // 2, (
        "too few submissions accepted to test anything"
    )

    second = server_factory("--allow-fetch-cidr", "127.0.0.0/8", data_dir=data)
    with second.client() as c:
        for task_id, path in accepted.items():
            doc = wait_final(c, task_id, timeout=60)
            assert doc["status"] == "SUCCEEDED", doc
            if path is not None:
                hits = origin.hits(path)
                # Each attempt fetches once; a second fetch means a lease was lost in the crash.
                assert 1 <= hits <= doc["attempts"], (doc, hits)
            if task_id in done_before:
                assert doc["attempts"] == 1 and (path is None or origin.hits(path) == 1), doc
        listed = 0
        cursor = None
        for _ in range(100):
            page = c.get(
                "/tasks", params={"limit": 1000, **({"cursor": cursor} if cursor else {})}
            ).json()
            listed += len(page["tasks"])
            cursor = page["next_cursor"]
            if cursor is None:
                break
    assert listed >= len(accepted)
