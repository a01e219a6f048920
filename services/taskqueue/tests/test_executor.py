"""Executor: a factorial worker process that dies is replaced, and its tasks are retried."""

from __future__ import annotations

import math
import sys

import psutil
import pytest
from conftest import submit, wait_final


def _workers(pid: int) -> list[psutil.Process]:
    kids = psutil.Process(pid).children(recursive=True)
    return [p for p in kids if "resource_tracker" not in " ".join(p.cmdline())]


@pytest.mark.sqlite_only("the worker pool does not touch the store")
def test_killed_worker_is_replaced_and_tasks_succeed(server_factory) -> None:
    sys.set_int_max_str_digits(0)
    srv = server_factory("--workers", "1")
    before = _workers(srv.pid)
    assert len(before) == 1, [p.cmdline() for p in before]
    before[0].kill()
    before[0].wait(10)
    with srv.client() as c:
        ids = [submit(c, {"type": "factorial", "n": 20000 - i}).json()["id"] for i in range(4)]
        docs = [wait_final(c, i) for i in ids]
        assert all(d["status"] == "SUCCEEDED" for d in docs), docs
        assert c.get(f"/tasks/{ids[0]}").text == str(math.factorial(20000))
    after = _workers(srv.pid)
    assert len(after) == 1 and after[0].pid != before[0].pid


@pytest.mark.sqlite_only("the worker pool does not touch the store")
def test_workers_die_with_a_killed_server(server_factory) -> None:
    # kill -9 leaves no chance to stop the pool: the kernel must take the workers with it
    # (each one holds both ends of the pool's pipes, so none would ever see EOF and exit).
    srv = server_factory("--workers", "2")
    workers = _workers(srv.pid)
    assert len(workers) == 2, [p.cmdline() for p in workers]
    srv.kill()
    gone, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive, [p.cmdline() for p in alive]
