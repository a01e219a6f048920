"""PostgreSQL: several taskqueue servers on one database (`--database postgresql://...`).

Each test gets a fresh database on one private PostgreSQL (initdb/pg_ctl in a temporary
directory, a port chosen at run time; see taskqueue.localpg). Without the PostgreSQL
binaries these tests skip, except under CI=true, where they fail: CI installs Debian's
package (.ci/run), so a green CI always ran them.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from conftest import Server, submit, wait_final
from taskqueue.localpg import LocalPgError, LocalPostgres, find_bindir

# Short leases so that takeovers happen within the suite's time: a fetch's lease is its
# timeout_ms + 2 s of slack + this grace; a factorial's, --factorial-timeout-s + grace.
FAST_LEASES = ("--lease-grace-s", "1", "--lease-check-s", "0.3", "--factorial-timeout-s", "2")
OUTAGE_503_WITHIN_S = 7.0
"""OUTAGE_503_WITHIN_S: a request during a database outage is answered (503) within the
store's 5 s bound on any database call, plus scheduling slack."""


@pytest.fixture(scope="module")
def pg() -> Iterator[LocalPostgres]:
    if find_bindir() is None:
        reason = "PostgreSQL binaries (initdb, pg_ctl) not found: apt-get install postgresql"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " (CI=true: these tests must run)")
        pytest.skip(reason)
    try:
        server = LocalPostgres().start()
    except LocalPgError as exc:
        pytest.fail(str(exc))
    yield server
    server.close()


@pytest.fixture
def dsn(pg: LocalPostgres) -> str:
    """dsn is a fresh, empty database on the module's PostgreSQL."""
    return pg.create_database("t" + uuid.uuid4().hex[:12])


@pytest.fixture
def cluster(dsn: str, tmp_path: Path) -> Iterator:
    """cluster starts taskqueue servers on the test's database, stopping them all at the end."""
    started: list[Server] = []

    def make(*args: str, n: int = 1) -> list[Server]:
        servers = [
            Server(
                tmp_path / f"unused{len(started) + i}",
                *("--database", dsn, "--workers", "1", "--allow-fetch-cidr", "127.0.0.0/8"),
                *args,
            )
            for i in range(n)
        ]
        errors: list[BaseException] = []

        def start(s: Server) -> None:
            try:
                s.start()
            except BaseException as exc:  # reported below, in the test's thread
                errors.append(exc)

        threads = [threading.Thread(target=start, args=(s,)) for s in servers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        started.extend(servers)
        if errors:
            raise errors[0]
        return servers

    yield make
    for s in started:
        s.stop()


def _metric(text: str, name: str) -> float:
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    return float(m.group(1)) if m else 0.0


def test_a_task_submitted_to_one_server_is_served_by_another(cluster) -> None:
    a, b, c = cluster(n=3)  # three starting at once: the schema is migrated exactly once
    assert sum("schema migrated" in line for s in (a, b, c) for line in s.lines) == 1
    with a.client() as ca, b.client() as cb:
        created = submit(ca, {"type": "factorial", "n": 20}, **{"Idempotency-Key": "k1"})
        assert created.status_code == 202
        task_id = created.json()["id"]
        doc = wait_final(cb, task_id)
        assert doc["status"] == "SUCCEEDED" and doc["attempts"] == 1, doc
        assert cb.get(f"/tasks/{task_id}").text == "2432902008176640000"
        replay = submit(cb, {"type": "factorial", "n": 20}, **{"Idempotency-Key": "k1"})
        assert replay.json()["id"] == task_id and replay.headers["idempotent-replayed"] == "true"
        clash = submit(cb, {"type": "factorial", "n": 21}, **{"Idempotency-Key": "k1"})
        assert clash.status_code == 422
        listed = cb.get("/tasks", params={"status": "SUCCEEDED"}).json()["tasks"]
        assert [t["id"] for t in listed] == [task_id]
        assert cb.get(f"/tasks/submissions/{uuid.uuid4().hex}").status_code == 404


def test_two_servers_never_run_a_task_twice(cluster, origin) -> None:
    servers = cluster(n=2)
    clients = [s.client() for s in servers]
    paths = {}
    try:
        for i in range(200):
            path = origin.set_blob(uuid.uuid4().hex, b"x", "text/plain")
            r = submit(clients[i % 2], {"type": "http-fetch", "url": origin.url(path)})
            assert r.status_code == 202
            paths[r.json()["id"]] = path
        for task_id in paths:
            doc = wait_final(clients[0], task_id)
            assert doc["status"] == "SUCCEEDED" and doc["attempts"] == 1, doc
        runs = [origin.hits(path) for path in paths.values()]
        assert runs == [1] * len(paths), "a task was fetched twice (or never)"
        series = 'taskqueue_tasks_finished_total{status="SUCCEEDED",type="http-fetch"}'
        finished = [_metric(c.get("/metrics").text, series) for c in clients]
        assert sum(finished) == len(paths) and all(f > 0 for f in finished), finished
    finally:
        for c in clients:
            c.close()


def _workers_of(server: Server) -> list[psutil.Process]:
    return psutil.Process(server.pid).children(recursive=True)


def test_kill_9_mid_task_the_other_server_completes_it_after_the_lease(cluster, origin) -> None:
    servers = cluster(*FAST_LEASES, n=2)
    before = origin.hits("/slow")
    with servers[0].client() as c:
        body = {"type": "http-fetch", "url": origin.url("/slow?ms=1500"), "timeout_ms": 2000}
        task_id = submit(c, body).json()["id"]
    deadline = time.monotonic() + 10
    holder = None
    while holder is None:  # whichever server claimed it shows it RUNNING in its own gauge
        for s in servers:
            with s.client() as c:
                if _metric(c.get("/metrics").text, 'taskqueue_tasks{status="RUNNING"}') == 1:
                    holder = s
        assert time.monotonic() < deadline, "no server started the task"
    other = servers[1] if holder is servers[0] else servers[0]
    workers = _workers_of(holder)
    assert workers, "the holder has no worker processes to check"
    t0 = time.monotonic()
    holder.kill()
    with other.client() as c:
        doc = wait_final(c, task_id, timeout=30)
        took = time.monotonic() - t0
        assert doc["status"] == "SUCCEEDED" and doc["attempts"] == 2, doc
        assert origin.hits("/slow") - before == 2  # one fetch per attempt, as the origin saw
        # The lease (2 s + 2 s slack + 1 s grace from the claim) bounds the takeover.
        assert took < 5 + 0.3 + 1.5 + 3, f"takeover took {took:.1f} s"
        assert _metric(c.get("/metrics").text, "taskqueue_lease_expiries_total") == 1
    _, alive = psutil.wait_procs(workers, timeout=5)
    assert not alive, f"the killed server's workers outlived it: {[p.pid for p in alive]}"


def test_202_means_committed_kill_9_under_load_loses_nothing(cluster, origin) -> None:
    a, b = cluster(*FAST_LEASES, n=2)
    accepted: dict[str, str | None] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def submitter(seed: int) -> None:
        rng = random.Random(seed)
        deadline = time.monotonic() + 15
        with httpx.Client(base_url=a.url, timeout=5.0) as c:
            while not stop.is_set() and time.monotonic() < deadline:
                path = None
                if rng.random() < 0.5:
                    path = origin.set_blob(uuid.uuid4().hex, b"p", "text/plain")
                    body = {"type": "http-fetch", "url": origin.url(path), "timeout_ms": 1500}
                else:
                    body = {"type": "factorial", "n": rng.choice([10, 1000, 20000])}
                try:
                    r = c.post("/tasks/submissions", json=body)
                except httpx.HTTPError:
                    return  # A died mid-request: outcome unknown, not counted
                if r.status_code == 202:
                    with lock:
                        accepted[r.json()["id"]] = path

    threads = [threading.Thread(target=submitter, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 15
    while len(accepted) < 300 and time.monotonic() < deadline:
        time.sleep(0.005)
    a.kill()  # SIGKILL while the submitters are still sending
    stop.set()
    for t in threads:
        t.join(10)
    assert len(accepted) >= 150, "too few submissions accepted to test anything"
    attempts = []
    with b.client() as cb:
        for task_id, path in accepted.items():
            doc = wait_final(cb, task_id, timeout=30)
            assert doc["status"] == "SUCCEEDED", doc
            attempts.append(doc["attempts"])
            if path is not None:  # each attempt fetches once: more means a lease was lost
                assert 1 <= origin.hits(path) <= doc["attempts"], (doc, origin.hits(path))
        expiries = _metric(cb.get("/metrics").text, "taskqueue_lease_expiries_total")
    # Every second attempt is a takeover of a task A held when it died, counted by B.
    assert sum(n - 1 for n in attempts) <= expiries


def test_the_queue_limit_holds_across_servers(cluster, origin) -> None:
    limit = 12
    a, b = cluster("--max-queue", str(limit), "--fetch-concurrency", "1", n=2)
    body = {"type": "http-fetch", "url": origin.url("/hang"), "timeout_ms": 60_000}
    with a.client() as ca, b.client() as cb:
        on_a = [submit(ca, body).status_code for _ in range(limit + 5)].count(202)
        assert limit <= on_a <= limit + 2, on_a  # up to one task per server left the queue
        deadline = time.monotonic() + 5  # B re-counts the shared queue every 0.25 s
        while True:
            text = cb.get("/metrics").text
            seen = sum(
                _metric(text, f'taskqueue_shared_tasks{{status="{s}"}}')
                for s in ("QUEUED", "RUNNING")
            )
            if seen == on_a:
                break
            assert time.monotonic() < deadline, f"B saw {seen} of A's {on_a} tasks"
            time.sleep(0.05)
        answers = [submit(cb, body) for _ in range(5)]
        on_b = [r.status_code for r in answers].count(202)
        assert on_b <= on_a - limit + 2, on_b  # only room left by the (<= 2) running ones
        full = answers[-1]
        assert full.status_code == 503 and int(full.headers["retry-after"]) >= 1, full.text
        time.sleep(0.3)  # one re-count
        queued = _metric(cb.get("/metrics").text, 'taskqueue_shared_tasks{status="QUEUED"}')
        assert queued <= limit, queued


def test_database_outage_answers_503_quickly_and_recovers(cluster, pg: LocalPostgres) -> None:
    (a,) = cluster()
    with httpx.Client(base_url=a.url, timeout=30.0) as ca:
        done = submit(ca, {"type": "factorial", "n": 5}).json()["id"]
        assert wait_final(ca, done)["status"] == "SUCCEEDED"
        pg.stop("immediate")  # a crash: no shutdown checkpoint
        try:
            codes = []
            for path in ("/tasks/submissions", f"/tasks/submissions/{uuid.uuid4().hex}"):
                t0 = time.monotonic()
                if path.endswith("submissions"):
                    r = submit(ca, {"type": "factorial", "n": 5})
                else:
                    r = ca.get(path)
                assert time.monotonic() - t0 < OUTAGE_503_WITHIN_S, "no answer within the bound"
                codes.append(r.status_code)
                assert r.status_code == 503 and r.headers["retry-after"] == "1", r.text
            assert ca.get("/healthz").status_code == 503
            # A status this server already knows final is still served from memory.
            assert ca.get(f"/tasks/submissions/{done}").json()["status"] == "SUCCEEDED"
        finally:
            pg.start()  # same port, same data: taskqueue reconnects by itself
        deadline = time.monotonic() + 20
        while True:
            r = submit(ca, {"type": "factorial", "n": 6})
            assert r.status_code in (202, 503), r.text  # no other 5xx while recovering
            if r.status_code == 202:
                break
            assert time.monotonic() < deadline, "never recovered"
            time.sleep(0.2)
        assert wait_final(ca, r.json()["id"])["status"] == "SUCCEEDED"
        assert ca.get("/healthz").status_code == 200
