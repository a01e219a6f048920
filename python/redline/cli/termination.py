"""termination: SIGTERM ends a command as Ctrl-C does. GNU ``timeout``, a cancelled CI job and
``docker stop`` send SIGTERM, not SIGINT; Python's default for it kills the process on the
spot, so the summary, the ``--json`` file and the stopping of the services a command started
(``--monitor-cmd``, find's steps) were lost. Here the first SIGTERM raises
:class:`Terminated`, a KeyboardInterrupt, wherever the main thread is, so every path that
keeps what ran on Ctrl-C keeps it on SIGTERM too; the command then exits 143 (128 + 15, what
a supervisor reads as "ended by SIGTERM") instead of Ctrl-C's 130."""

from __future__ import annotations

import signal
import threading
from types import FrameType

#: EXIT_TERMINATED: the exit status after a SIGTERM (128 + SIGTERM), as a shell reports it.
EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):  # noqa: N818  (it is an interrupt, named as one)
    """Terminated: the process got SIGTERM; a KeyboardInterrupt, so it stops what runs as
    Ctrl-C does."""


class Termination:
    """Termination turns SIGTERM into :class:`Terminated` while installed; ``received``
    says whether one came. Later SIGTERMs are counted, not raised: the first is already
    stopping the command, and a second exception would cut short the summary it prints."""

    def __init__(self) -> None:
        self.received = 0
        self._previous: object = None

    def __enter__(self) -> Termination:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)  # type: ignore[arg-type]

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.received += 1
        if self.received == 1:
            raise Terminated

    def status(self, code: int) -> int:
        """status is the command's exit status: 143 after a SIGTERM, else ``code``."""
        return EXIT_TERMINATED if self.received else code
