"""leftovers: a pytest plugin that fails the session when a process it started outlives it.

A test that starts a server, or a server that starts workers, must stop them; one that does
not leaves a process behind on the developer's machine (a taskqueue pool worker blocked on a
pipe, for instance). At the start the pytest process becomes a child subreaper (Linux), so the
orphans of its children are re-parented to it instead of to init; at the end every descendant
still alive after a short grace is listed, killed, and the session's exit status made 1.

Loaded by ``tests/conftest.py``; the taskqueue suite loads it with ``-p leftovers`` (the
Makefile puts ``tests/`` on PYTHONPATH).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import time

import psutil
import pytest

#: GRACE_S: how long a descendant may take to exit after the last test (it was told to stop).
GRACE_S = 5.0
_PR_SET_CHILD_SUBREAPER = 36


def pytest_configure(config: pytest.Config) -> None:
    """pytest_configure makes this process the reaper of its descendants' orphans."""
    if sys.platform == "linux":
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def own_tracker() -> int | None:
    """own_tracker is the pid of this interpreter's multiprocessing resource tracker, if a
    test in this process used multiprocessing: it belongs to the interpreter, not to a test,
    and ends with it (it waits for its pipe to close), so it is no leftover."""
    rt = sys.modules.get("multiprocessing.resource_tracker")
    tracker = getattr(rt, "_resource_tracker", None) if rt is not None else None
    pid = getattr(tracker, "_pid", None)
    return pid if isinstance(pid, int) else None


def alive_descendants() -> list[psutil.Process]:
    """alive_descendants lists this process's descendants still running, but for this
    interpreter's own resource tracker; orphans that exited (zombies re-parented here) are
    reaped on the way."""
    alive = []
    mine = own_tracker()
    for p in psutil.Process().children(recursive=True):
        if p.pid == mine:
            continue
        try:
            if p.status() == psutil.STATUS_ZOMBIE:
                if p.ppid() == os.getpid():
                    os.waitpid(p.pid, os.WNOHANG)
                continue
            alive.append(p)
        except (psutil.NoSuchProcess, ChildProcessError):
            continue
    return alive


def describe(p: psutil.Process) -> str:
    """describe: one line naming a leftover process."""
    try:
        return f"pid {p.pid} (parent {p.ppid()}): {' '.join(p.cmdline())[:200]}"
    except psutil.Error:
        return f"pid {p.pid} (gone)"


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """pytest_sessionfinish fails the session if any descendant is still alive after GRACE_S."""
    deadline = time.monotonic() + GRACE_S
    left = alive_descendants()
    while left and time.monotonic() < deadline:
        psutil.wait_procs(left, timeout=min(0.5, max(0.0, deadline - time.monotonic())))
        left = alive_descendants()
    if not left:
        return
    lines = [describe(p) for p in left]
    for p in left:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(left, timeout=5)
    alive_descendants()  # reap what was just killed
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    text = f"leftovers: {len(lines)} process(es) outlived the test session (killed now):"
    if reporter is not None:
        reporter.write_line(text, red=True)
        for line in lines:
            reporter.write_line(f"  {line}", red=True)
    else:
        print(text, *lines, sep="\n  ", file=sys.stderr)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
