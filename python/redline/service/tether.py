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
from collections.abc import Mapping, Sequence

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


def tethered(
    argv: Sequence[str],
    sig: int = signal.SIGTERM,
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> list[str]:
    """tethered is ``argv`` wrapped so that the kernel sends the command ``sig`` when this
    process dies (Linux; elsewhere ``argv`` unchanged). A command that cannot be found where
    ``Popen`` would look (``cwd`` for a path, ``env``'s PATH for a name) is a ConfigError here,
    as ``Popen`` would have raised it."""
    argv = list(argv)
    if not argv:
        raise ConfigError("the command is empty")
    exe = argv[0]
    if os.sep in exe:
        found: str | None = os.path.join(cwd, exe) if cwd is not None else exe
    else:
        found = shutil.which(exe, path=(os.environ if env is None else env).get("PATH"))
    if found is None or not os.access(found, os.X_OK) or os.path.isdir(found):
        raise ConfigError(f"cannot start {exe!r}: no such executable")
    if sys.platform != "linux":
        return argv
    # -I: the wrapper's Python ignores PYTHON* variables and the service's directory (a
    # ctypes.py there would shadow the real one).
    return [sys.executable, "-I", "-c", _WRAPPER, str(os.getpid()), str(int(sig)), *argv]
