"""tether: a child process that cannot outlive redline.

A service redline starts (``--monitor-cmd``, ``--vary``'s configurations, the demo's
taskqueue) runs in a session of its own so that its whole tree can be stopped; redline stops
it on every exit it lives through (a normal end, Ctrl-C, SIGTERM). A ``kill -9`` of redline
runs none of that, and the service would run on, holding its port. :func:`tethered` wraps
the command so that the kernel sends the service SIGTERM when redline dies, however it dies
(Linux's parent-death signal, which survives the ``exec`` into the service): the service
then shuts down as on any stop, its own children with it.

The wrapper is a few lines of Python run with ``-c`` that set the signal and ``exec`` the
command in place (same pid), instead of ``Popen(preexec_fn=...)``, which is unsafe in a
process with threads. The signal is tied to the thread that spawned the child, so a
tethered command must be started and stopped by one thread (as every caller does).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from collections.abc import Sequence

from redline.errors import ConfigError

#: _WRAPPER: set the parent-death signal, check the parent is still the one that spawned us
#: (it may have died before the signal was set), then become the command.
_WRAPPER = """\
import ctypes, os, sys
parent, sig, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
if ctypes.CDLL(None, use_errno=True).prctl(1, sig, 0, 0, 0) == 0 and os.getppid() != parent:
    os._exit(1)
os.execvp(argv[0], argv)
"""


def tethered(argv: Sequence[str], sig: int = signal.SIGTERM) -> list[str]:
    """tethered is ``argv`` wrapped so that the kernel sends the command ``sig`` when this
    process dies (Linux; elsewhere ``argv`` unchanged). A command that cannot be executed is
    a ConfigError here, as ``Popen`` would have raised it."""
    argv = list(argv)
    if not argv:
        raise ConfigError("the command is empty")
    exe = argv[0]
    found = exe if os.sep in exe else shutil.which(exe)
    if found is None or not os.access(found, os.X_OK) or os.path.isdir(found):
        raise ConfigError(f"cannot start {exe!r}: no such executable")
    if sys.platform != "linux":
        return argv
    return [sys.executable, "-c", _WRAPPER, str(os.getpid()), str(int(sig)), *argv]
