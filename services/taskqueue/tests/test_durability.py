"""Durability: kill -9 a server while it accepts submissions; every task that got a 202 is
completed by the server that carries on, none runs twice unless its lease expired, and the
tasks the dead one was running say how many attempts they took.

On SQLite the heir is a restart on the same data dir, which requeues the dead server's
leases at start-up; on PostgreSQL it is a second server, running all along on the same
database (sharing the load), that takes them over when they expire.
"""

from __future__ import annotations

import random
import threading
import time
import uuid

import httpx
from conftest import FAST_LEASES, Backend, Server, metric, submit, wait_final
from origin import Origin

RUNNING_HERE = 'taskqueue_tasks{status="RUNNING"}'

SUBMITTERS = 4
KILL_AFTER_ACCEPTED = 300
MAX_SUBMIT_S = 20.0
HELD_S = 12.0
"""HELD_S: the held task's first fetch answers after this long; the server running it is
killed well before (KILL_BY_S), so that fetch never completes and a second attempt must."""
KILL_BY_S = 0.6 * HELD_S
HELD_MS = int(HELD_S * 1000)


def _holder(servers: list[Server], t0: float) -> Server:
    """_holder is the server running the one task in the store (its own gauge says so)."""
    while True:
        for s in servers:
            with s.client() as c:
                if metric(c.get("/metrics").text, RUNNING_HERE) == 1:
                    return s
        assert time.monotonic() - t0 < KILL_BY_S, "no server started the held task"
        time.sleep(0.02)


class _Submitters:
    """_Submitters: SUBMITTERS threads posting tasks to ``url`` (half an http-fetch of a fresh
    blob of ``origin``, half a factorial) until stopped, the server dies or MAX_SUBMIT_S pass;
    ``accepted`` maps each task that got a 202 to its origin path (None for a factorial)."""

    def __init__(self, url: str, origin: Origin) -> None:
        self.url, self.origin = url, origin
        self.accepted: dict[str, str | None] = {}
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._submit, args=(i,)) for i in range(SUBMITTERS)
        ]
        for t in self._threads:
            t.start()

    def _submit(self, seed: int) -> None:
        rng = random.Random(seed)
        deadline = time.monotonic() + MAX_SUBMIT_S
        with httpx.Client(base_url=self.url, timeout=5.0) as c:
            while not self._stop.is_set() and time.monotonic() < deadline:
                path = None
                if rng.random() < 0.5:
                    path = self.origin.set_blob(uuid.uuid4().hex, b"payload", "text/plain")
                    body = {"type": "http-fetch", "url": self.origin.url(path), "timeout_ms": 1500}
                else:
                    body = {"type": "factorial", "n": rng.choice([10, 1000, 20000])}
                try:
                    r = c.post("/tasks/submissions", json=body)
                except httpx.HTTPError:
                    return  # the server died mid-request: outcome unknown, not counted
                if r.status_code == 202:
                    with self.lock:
                        self.accepted[r.json()["id"]] = path

    def stop(self) -> None:
        """stop tells the threads to stop and waits for them (10 s each at most)."""
        self._stop.set()
        for t in self._threads:
            t.join(10)


def _listed(c: httpx.Client) -> int:
    """_listed counts the tasks GET /tasks lists, page by page (100 pages of 1,000 at most)."""
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
    return listed


def test_kill_9_under_load_loses_no_accepted_task(server_factory, origin, backend: Backend) -> None:
    args = ("--allow-fetch-cidr", "127.0.0.0/8", *FAST_LEASES)
    servers = [server_factory(*args) for _ in range(2 if backend.shared else 1)]
    # The held task: its first fetch answers only after HELD_S, a later one at once, and the
    # answer says which fetch it was. The victim is whichever server claimed it.
    key = uuid.uuid4().hex
    hedge_hits = origin.hits("/hedge")
    held_url = origin.url(f"/hedge?key={key}&first_ms={HELD_MS}&then_ms=0")
    t0 = time.monotonic()  # the held fetch cannot answer before t0 + HELD_S
    with servers[0].client() as c:
        held = submit(c, {"type": "http-fetch", "url": held_url, "timeout_ms": HELD_MS + 1000})
        held_id = held.json()["id"]
    victim = _holder(servers, t0)
    heir = next((s for s in servers if s is not victim), None)

    submitters = _Submitters(victim.url, origin)
    accepted, lock = submitters.accepted, submitters.lock  # task id -> origin path (or None)
    while len(accepted) < KILL_AFTER_ACCEPTED and time.monotonic() - t0 < KILL_BY_S:
        time.sleep(0.005)
    # Some tasks finished before the crash: they must never run again.
    with lock:
        sample = list(accepted)[:50]
    with victim.client() as c:
        done_before = {
            i for i in sample if c.get(f"/tasks/submissions/{i}").json()["status"] == "SUCCEEDED"
        }
    victim.kill()  # SIGKILL while the submitters are still sending
    killed_after = time.monotonic() - t0
    submitters.stop()
    assert killed_after < HELD_S, f"killed {killed_after:.1f} s in: the held fetch may have ended"
    assert len(accepted) >= 100, f"only {len(accepted)} submissions accepted: too few to test"

    heir = heir or server_factory(*args)
    attempts = []
    with heir.client() as c:
        for task_id, path in accepted.items():
            doc = wait_final(c, task_id, timeout=60)
            assert doc["status"] == "SUCCEEDED", doc
            attempts.append(doc["attempts"])
            if path is not None:  # each attempt fetches once: more means a lease was lost
                assert 1 <= origin.hits(path) <= doc["attempts"], (doc, origin.hits(path))
            if task_id in done_before:
                assert doc["attempts"] == 1 and (path is None or origin.hits(path) == 1), doc
        # The held task was running on the victim: the heir ran it again, and its answer is
        # the second fetch's, as the origin counted.
        doc = wait_final(c, held_id, timeout=60)
        assert doc["status"] == "SUCCEEDED" and doc["attempts"] == 2, doc
        assert c.get(f"/tasks/{held_id}").text == f"hedge {key} #2"
        assert origin.hits("/hedge") - hedge_hits == 2
        attempts.append(doc["attempts"])
        # Every attempt past the first is a lease the heir saw expire (requeued), and counted.
        expiries = metric(c.get("/metrics").text, "taskqueue_lease_expiries_total")
        assert 1 <= sum(n - 1 for n in attempts) <= expiries, (attempts, expiries)
        listed = _listed(c)
    assert listed >= len(accepted) + 1
