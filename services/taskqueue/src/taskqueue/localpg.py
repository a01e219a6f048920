"""localpg: a throwaway PostgreSQL server in a temporary directory (tests, the scale demo).

It runs the distribution's own binaries (`initdb`, `pg_ctl`; Debian keeps them in
/usr/lib/postgresql/N/bin, off PATH) as an ordinary process: no system service, no root
configuration, TCP on 127.0.0.1 at a port chosen at run time and no Unix socket. PostgreSQL
refuses to run as root, so under root the cluster belongs to the `postgres` user (Debian's
package creates it) or, failing that, `nobody`.
"""

from __future__ import annotations

import glob
import os
import pwd
import random
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

START_TIMEOUT_S = 30.0
"""START_TIMEOUT_S bounds how long `pg_ctl start` may take to report the server ready."""


class LocalPgError(RuntimeError):
    """LocalPgError: the PostgreSQL binaries are missing or the server would not start."""


def find_bindir() -> Path | None:
    """find_bindir is the directory holding initdb and pg_ctl (newest version), or None."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).resolve().parent  # a link to the versioned directory
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    return Path(found[-1]).parent if found else None


def free_port() -> int:
    """free_port is a port free now, for a server that binds it next and again after a stop.

    It is chosen at random below the kernel's ephemeral range (ip_local_port_range), so that
    no outgoing connection and no port-0 bind can take it while the server is down for a
    restart on the same port (a test's outage); above it only when that range starts too low.
    """
    low = _ephemeral_low()
    for _ in range(100):
        port = random.randrange(10_000, low) if low > 11_000 else 0
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise LocalPgError("no free port for PostgreSQL")


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _run_as() -> str | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise LocalPgError("running as root and no 'postgres' or 'nobody' user to run PostgreSQL as")


class LocalPostgres:
    """LocalPostgres is one private cluster: `start()`, `dsn(db)`, `stop()` (or a with-block).

    The superuser is `taskqueue` with trust authentication on 127.0.0.1 only.
    """

    USER = "taskqueue"

    def __init__(self, root: Path | None = None, port: int | None = None) -> None:
        self.bindir = find_bindir()
        if self.bindir is None:
            raise LocalPgError(
                "PostgreSQL binaries (initdb, pg_ctl) not found: apt-get install postgresql"
            )
        self._owned_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="taskqueue-pg-")) if root is None else root
        self.datadir = self.root / "pgdata"
        self.port = port or free_port()
        self._user = _run_as()
        self.running = False

    def _cmd(self, *args: str) -> list[str]:
        if self._user is None:
            return list(args)
        return ["runuser", "-u", self._user, "--", *args]

    def _bin(self, name: str) -> str:
        assert self.bindir is not None
        return str(self.bindir / name)

    def init(self) -> None:
        """init creates the cluster (once; fsync on, as a real deployment has it)."""
        if (self.datadir / "PG_VERSION").exists():
            return
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)  # under root, the cluster's user must reach its data dir
        self.datadir.mkdir(mode=0o700)
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            os.chown(self.datadir, entry.pw_uid, entry.pw_gid)
        subprocess.run(
            self._cmd(
                self._bin("initdb"),
                "-D",
                str(self.datadir),
                "-U",
                self.USER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",  # the template files need no fsync; the server's commits do
            ),
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def start(self) -> LocalPostgres:
        """start runs the server (initialising the cluster first) and waits until it accepts."""
        self.init()
        opts = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' "
            "-c max_connections=200 -c shared_buffers=128MB"
        )
        log = self.root / "postgres.log"
        if self._user is not None and not log.exists():
            log.touch()
            entry = pwd.getpwnam(self._user)
            os.chown(log, entry.pw_uid, entry.pw_gid)
        proc = subprocess.run(
            self._cmd(
                self._bin("pg_ctl"),
                "-D",
                str(self.datadir),
                "-l",
                str(log),
                "-o",
                opts,
                "-w",
                "-t",
                str(int(START_TIMEOUT_S)),
                "start",
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        if proc.returncode != 0:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise LocalPgError(f"pg_ctl start failed: {proc.stderr.strip()}\n{tail}")
        self.running = True
        return self

    def stop(self, mode: str = "fast") -> None:
        """stop shuts the server down (`immediate` is a crash: no checkpoint) and waits."""
        if not self.running:
            return
        subprocess.run(
            self._cmd(self._bin("pg_ctl"), "-D", str(self.datadir), "-m", mode, "-w", "stop"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        self.running = False

    def dsn(self, database: str = "postgres") -> str:
        """dsn is the connection URL of a database on this server."""
        return f"postgresql://{self.USER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """create_database makes an empty database and returns its URL (psql, no driver needed)."""
        self._psql(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def drop_database(self, name: str) -> None:
        """drop_database removes a database, terminating its connections (a test's disaster)."""
        self._psql(f'DROP DATABASE "{name}" WITH (FORCE)')

    def _psql(self, command: str) -> None:
        subprocess.run(
            [self._bin("psql"), "-q", "-v", "ON_ERROR_STOP=1", "-d", self.dsn(), "-c", command],
            check=True,
            stdout=subprocess.DEVNULL,
        )

    def close(self) -> None:
        """close stops the server and removes the temporary directory it created."""
        self.stop()
        if self._owned_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def wait_port(port: int, timeout: float) -> bool:
    """wait_port tells whether 127.0.0.1:port accepts a TCP connection within timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False
