"""reaper: the local Ray that ``--cluster local:N`` starts cannot outlive redline.

On every exit redline lives through (the run's end, Ctrl-C, SIGTERM), :func:`shutdown_ray`
stops its local Ray and every process of it. A ``kill -9`` of redline runs none of that: Ray
ties its GCS and raylet to the driver, and they die with it, but the dashboard agent and the
runtime-env agent, the raylet's children, were seen still running 90 s later, orphaned.

So, before it starts Ray, redline starts a reaper: this module, run as a child process with
a pipe to redline on its standard input. While redline lives, the reaper notes redline's
descendants (Ray's processes, as they are started) every :data:`POLL_S`. Redline's end closes
the pipe whatever kills it: after :meth:`Reaper.release` (Ray already shut down) the reaper
has read :data:`DONE` and leaves quietly; without it, redline died, and the reaper kills
every process it noted that is still the one it noted (pid and start time), with their
descendants, then exits. It ignores the terminal's Ctrl-C, which is redline's to handle.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from typing import IO

import psutil

#: DONE: what redline writes before closing the pipe when it has shut Ray down itself.
DONE = b"done\n"

#: POLL_S: how often the reaper notes redline's descendants (Ray starts an injector's worker
#: process when its actor is placed, well after the raylet).
POLL_S = 0.25

#: RELEASE_WAIT_S bounds the wait for the reaper to leave after DONE.
RELEASE_WAIT_S = 5.0

#: _MAIN: the reaper's command (``-m`` would warn: the package has imported this module).
_MAIN = "import sys; from redline.cluster.reaper import main; sys.exit(main(int(sys.argv[1])))"


class Reaper:
    """Reaper is the running reaper process, seen from redline."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _MAIN, str(os.getpid())],
            stdin=subprocess.PIPE,
            start_new_session=True,  # the terminal's Ctrl-C and signals to the group miss it
        )

    def release(self) -> None:
        """release tells the reaper that Ray was shut down (nothing to kill) and waits for it
        to leave; idempotent."""
        stdin: IO[bytes] | None = self.proc.stdin
        if stdin is not None and not stdin.closed:
            try:
                stdin.write(DONE)
                stdin.close()
            except OSError:  # the reaper is gone already
                pass
        try:
            self.proc.wait(RELEASE_WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _note(parent: psutil.Process, noted: dict[int, psutil.Process]) -> None:
    """_note adds the parent's descendants (but this reaper) to ``noted``."""
    try:
        kids = parent.children(recursive=True)
    except psutil.Error:
        return
    for p in kids:
        if p.pid != os.getpid() and p.pid not in noted:
            noted[p.pid] = p


def _kill(noted: dict[int, psutil.Process]) -> None:
    """_kill ends every noted process still running (psutil checks its start time, so a
    reused pid is never hit) and the descendants they have now."""
    doomed: dict[int, psutil.Process] = {}
    for p in noted.values():
        try:
            if not p.is_running():
                continue
            doomed[p.pid] = p
            for c in p.children(recursive=True):
                doomed.setdefault(c.pid, c)
        except psutil.Error:
            continue
    doomed.pop(os.getpid(), None)
    for p in doomed.values():
        try:
            p.kill()
        except psutil.Error:
            continue
    psutil.wait_procs(list(doomed.values()), timeout=RELEASE_WAIT_S)


def main(parent_pid: int) -> int:
    """main watches redline (``parent_pid``) until its pipe closes; see the module."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        parent = psutil.Process(parent_pid)
    except psutil.Error:
        return 0
    noted: dict[int, psutil.Process] = {}
    fd = sys.stdin.fileno()
    said = b""
    while True:
        _note(parent, noted)
        ready, _, _ = select.select([fd], [], [], POLL_S)
        if not ready:
            continue
        chunk = os.read(fd, 64)
        if chunk:
            said += chunk
            continue
        if DONE in said:  # redline shut Ray down itself
            return 0
        _kill(noted)  # redline died without shutting Ray down
        return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
