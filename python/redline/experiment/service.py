"""service: one configuration's service, started fresh and stopped whole.

Each configuration (and each repeat of it) gets a service of its own: a free port for
``{port}``, an empty directory for ``{dir}`` (so no data of an earlier configuration is read
back), the command started under a :class:`~redline.service.monitor.CommandMonitor` (which
samples its process tree for the search), a bounded wait until it accepts connections, and at
the end its whole process tree stopped and the directory removed, however the search ended.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Iterator, Sequence
from urllib.parse import urlsplit

from redline.errors import ConfigError
from redline.experiment.configurations import DIR, PORT, Configuration, fill, free_port
from redline.service.monitor import CommandMonitor

#: LISTEN_TIMEOUT_S: how long a service may take to accept connections after it starts.
LISTEN_TIMEOUT_S = 30.0


class Service:
    """Service is the command ``argv`` (words with placeholders) for one ``configuration``,
    serving at ``url`` (a template too). :meth:`start` fills ``{port}`` and
    ``{dir}``, starts it and waits until it listens; :meth:`stop` ends it (idempotent). As a
    context manager it is stopped however the block ends, Ctrl-C included."""

    def __init__(
        self,
        argv: Sequence[str],
        url: str,
        configuration: Configuration,
        *,
        listen_timeout_s: float = LISTEN_TIMEOUT_S,
        grace_s: float = 5.0,
    ):
        self.template = list(argv)
        self.url_template = url
        self.configuration = configuration
        self.listen_timeout_s = listen_timeout_s
        self.grace_s = grace_s
        self.port: int | None = None
        self.directory: str | None = None
        self.argv: list[str] = []
        self.url = url
        self.monitor: CommandMonitor | None = None
        #: values: what each placeholder was filled with (the varied names, port, dir).
        self.values: dict[str, str] = dict(configuration.vary)

    @property
    def command(self) -> str:
        """command: the command as started, one line (shell-quoted words)."""
        import shlex

        return shlex.join(self.argv)

    def start(self) -> Service:
        """start picks the port and the directory, starts the command and returns once
        something accepts connections at the URL's address; :class:`ConfigError` (the service
        stopped first) when the command exits first or nothing listens in time."""
        self.directory = tempfile.mkdtemp(prefix="redline-experiment-")
        host = urlsplit(fill(self.url_template, {PORT: "0"})).hostname or "127.0.0.1"
        self.port = free_port(host if host != "localhost" else "127.0.0.1")
        values = {**self.configuration.vary, PORT: str(self.port), DIR: self.directory}
        self.values = values
        self.argv = [fill(word, values) for word in self.template]
        self.url = fill(self.url_template, values)
        self.monitor = CommandMonitor(self.argv, grace_s=self.grace_s)
        try:
            self.monitor.start()
            self._wait_listening()
        except BaseException:
            self.stop()
            raise
        return self

    def fill(self, texts: Sequence[str]) -> list[str]:
        """fill: ``texts`` (``--watch`` specs) with this service's placeholders filled."""
        return [fill(t, self.values) for t in texts]

    def stop(self) -> None:
        """stop ends the command's whole process tree and removes its directory (once). A
        Ctrl-C while it waits for the tree to exit is held back until the tree is gone (an
        interrupted stop would leave the service running) and then raised."""
        with _interrupts_held():
            if self.monitor is not None:
                self.monitor.stop()
            if self.directory is not None:
                shutil.rmtree(self.directory, ignore_errors=True)
                self.directory = None

    def _wait_listening(self) -> None:
        """_wait_listening polls the URL's host and port (bounded), and gives up at once when
        the command has exited: its last output line says why."""
        assert self.monitor is not None
        parts = urlsplit(self.url)
        address = (parts.hostname or "127.0.0.1", parts.port or _default_port(parts.scheme))
        deadline = time.monotonic() + self.listen_timeout_s
        while True:
            code = self.monitor.returncode
            if code is not None:
                last = (self.monitor.log_tail(1) or "no output").strip()
                raise ConfigError(
                    f"--monitor-cmd ({self.configuration.label}): the command exited with status"
                    f" {code} before listening on {parts.netloc}: {last}"
                )
            try:
                with socket.create_connection(address, timeout=1.0):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise ConfigError(
                        f"--monitor-cmd ({self.configuration.label}): nothing listens on"
                        f" {parts.netloc} after {self.listen_timeout_s:g}s"
                    ) from None
                time.sleep(0.1)  # a poll: a port's opening has no event to wait on

    def __enter__(self) -> Service:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """_interrupts_held blocks SIGINT for this thread over the block; one that came in is
    delivered (as KeyboardInterrupt) when the block ends."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80
