"""worker: the setup of a factorial worker process, so that none outlives the service.

A pool worker holds both ends of the pool's pipes, so when the service dies without stopping
the pool (kill -9, a crash) no worker ever reads EOF: it stays, idle or blocked writing a
result nobody reads. The kernel's parent-death signal takes each worker down with the service.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """die_with_parent (a pool initializer) has the kernel SIGKILL this worker when the
    service that spawned it exits, however it exits (Linux; elsewhere it does nothing)."""
    if sys.platform != "linux":
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return  # not fatal: the service's stop() still ends its workers
    if os.getppid() != parent_pid:  # the service died before the line above took effect
        os._exit(1)
