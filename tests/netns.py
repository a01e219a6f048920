"""netns: a few "hosts" on a private LAN, built from Linux network namespaces, for the tests
that need more than one machine (a Ray cluster across hosts).

Each host is a network namespace with its own loopback and one veth link to a bridge that
lives in a namespace of its own, so nothing is added to the machine's own network: no
address, no link, no route. The LAN is 10.77.0.0/24 and has no route out (no gateway, no
NAT), so whatever runs there can reach the other hosts and nothing else. Fixed addresses
and ports cannot collide with anyone's: each LAN (and each host's port space) exists only
inside the namespaces one test made.

Commands run in a host through ``ip netns exec`` with a UTS namespace of their own named
after the host, so ``socket.gethostname()`` there says which host a process is on, and a
mount namespace in which the LAN's ``local`` directory (if it has one) is the host's own, as
each machine has its own /tmp: inside host H it is ``local/.hosts/H``. (Ray needs this: the
nodes of one cluster use the same path for their session directory, and a driver reads its
node's address from a file there, which two nodes sharing a disk would overwrite.) Every
process in a namespace is the test's (a namespace's processes are exactly those whose
``/proc/PID/ns/net`` is it), so :meth:`Lan.close` stops them all by pid, whatever started
them, and then deletes the namespaces, which removes their links with them.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import psutil
import pytest

#: SUBNET: the private LAN inside the test's namespaces (RFC 1918); hosts get .2, .3, ...
SUBNET = ipaddress.ip_network("10.77.0.0/24")

#: IP_TIMEOUT_S bounds one ``ip`` command (the kernel answers in milliseconds).
IP_TIMEOUT_S = 30.0

#: STOP_GRACE_S: how long the processes in a host get to exit after SIGTERM before SIGKILL.
STOP_GRACE_S = 15.0

#: STOP_ROUNDS bounds the SIGKILL sweeps (a dying process may start another first).
STOP_ROUNDS = 5

#: PREFIX names this suite's namespaces: ``rl<pytest pid>-<host>``.
PREFIX = "rl"

#: HOST_EXEC makes a fresh UTS and mount namespace host $0 (its hostname, and its own $1,
#: where $1 is not empty), then runs the command in it.
HOST_EXEC = (
    'hostname "$0" && { [ -z "$1" ] || mount --bind "$1/.hosts/$0" "$1"; } && shift && exec "$@"'
)


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=IP_TIMEOUT_S)
    if check and p.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {p.stderr.strip()}")
    return p


def skip_unless_namespaces() -> None:
    """skip_unless_namespaces skips the test with one line where the machine cannot make
    network namespaces (no ``ip`` or ``unshare``, not root, a kernel or container that
    refuses them); everywhere else the test runs. Under CI=true it fails instead: CI runs
    as root on a machine where they work, so a green CI always ran the test."""
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            _cannot(f"{tool} is not installed: the multi-host test builds namespaces with it")
    probe = f"{PREFIX}{os.getpid()}-probe"
    p = _ip("netns", "add", probe, check=False)
    if p.returncode != 0:
        _cannot(f"this machine refuses network namespaces: {p.stderr.strip()}")
    _ip("netns", "delete", probe, check=False)


def _cannot(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(reason + " (CI=true: this test must run)")
    pytest.skip(reason)


def reap_stale() -> None:
    """reap_stale deletes namespaces an earlier run of this suite left (its pytest was
    killed before its cleanup ran): ``rl<pid>-*`` whose pid is gone and that hold no
    process."""
    listing = _ip("netns", "list", check=False).stdout.split()
    for name in listing:
        owner = name[len(PREFIX) :].split("-", 1)[0]
        if not name.startswith(PREFIX) or "-" not in name or not owner.isdigit():
            continue
        if psutil.pid_exists(int(owner)) or _pids(name):
            continue
        _ip("netns", "delete", name, check=False)


def _pids(namespace: str) -> list[int]:
    p = _ip("netns", "pids", namespace, check=False)
    return [int(w) for w in p.stdout.split() if w.isdigit()]


class Lan:
    """Lan is a set of hosts (network namespaces) on one bridge; use it as a context
    manager: leaving it stops every process in its hosts and deletes the namespaces, on
    failure too."""

    def __init__(self, hosts: Sequence[str], local: str | None = None):
        self.tag = f"{PREFIX}{os.getpid()}"
        self.hosts = list(hosts)
        #: local: the directory each host sees as its own (None: they share every file).
        self.local = local
        addresses = SUBNET.hosts()
        next(addresses)  # .1 is left free, as a gateway's would be; there is none
        self.addresses = {h: str(next(addresses)) for h in self.hosts}
        self.made: list[str] = []
        self.started: list[subprocess.Popen[Any]] = []

    def namespace(self, host: str) -> str:
        """namespace: the network namespace that is ``host``."""
        return f"{self.tag}-{host}"

    def address(self, host: str) -> str:
        """address: ``host``'s address on the LAN."""
        return self.addresses[host]

    def __enter__(self) -> Lan:
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _add(self, name: str) -> None:
        _ip("netns", "add", name)
        self.made.append(name)
        _ip("-n", name, "link", "set", "dev", "lo", "up")

    def _build(self) -> None:
        switch = f"{self.tag}-lan"
        self._add(switch)
        _ip("-n", switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", switch, "link", "set", "dev", "br0", "up")
        prefix = SUBNET.prefixlen
        for i, host in enumerate(self.hosts):
            if self.local is not None:
                os.makedirs(os.path.join(self.local, ".hosts", host), exist_ok=True)
            ns = self.namespace(host)
            self._add(ns)
            port = f"port{i}"
            # Both ends are made inside the namespaces: the machine's own never sees them.
            _ip(
                "link",
                "add",
                "eth0",
                "netns",
                ns,
                "type",
                "veth",
                "peer",
                "name",
                port,
                "netns",
                switch,
            )
            _ip("-n", switch, "link", "set", "dev", port, "master", "br0")
            _ip("-n", switch, "link", "set", "dev", port, "up")
            _ip("-n", ns, "addr", "add", f"{self.address(host)}/{prefix}", "dev", "eth0")
            _ip("-n", ns, "link", "set", "dev", "eth0", "up")

    def argv(self, host: str, command: Sequence[str]) -> list[str]:
        """argv: ``command`` run on ``host`` (its network namespace, a UTS namespace whose
        hostname is ``host``, and a mount namespace with its own ``local``)."""
        ns = self.namespace(host)
        return [
            "ip",
            "netns",
            "exec",
            ns,
            "unshare",
            "--uts",
            "--mount",
            "--",
            "sh",
            "-c",
            HOST_EXEC,
            host,
            self.local or "",
            *command,
        ]

    def popen(self, host: str, command: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """popen starts ``command`` on ``host`` (subprocess.Popen's keywords pass through);
        :meth:`close` stops it."""
        proc = subprocess.Popen(self.argv(host, command), **kwargs)
        self.started.append(proc)
        return proc

    def run(
        self, host: str, command: Sequence[str], timeout: float, **kwargs: Any
    ) -> subprocess.CompletedProcess[str]:
        """run runs ``command`` on ``host`` to its end (bounded by ``timeout``), output captured."""
        return subprocess.run(
            self.argv(host, command), capture_output=True, text=True, timeout=timeout, **kwargs
        )

    def python(self, host: str, code: str, *args: str, timeout: float) -> str:
        """python runs ``code`` with this interpreter on ``host`` and returns its stdout
        (a RuntimeError with its stderr if it fails)."""
        p = self.run(host, [sys.executable, "-c", code, *args], timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"on {host}: {p.stderr.strip()[-800:]}")
        return p.stdout

    def pids(self, host: str) -> list[int]:
        """pids: the processes running on ``host`` now."""
        return _pids(self.namespace(host))

    def close(self) -> None:
        """close stops every process on the LAN (SIGTERM, then SIGKILL after STOP_GRACE_S)
        and deletes its namespaces; idempotent."""
        try:
            self._stop_all()
        finally:
            for proc in self.started:  # ended above: collect their exit statuses
                try:
                    proc.wait(timeout=5.0)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5.0)
            for name in reversed(self.made):
                _ip("netns", "delete", name, check=False)
            self.made, self.started = [], []

    def _stop_all(self) -> None:
        names = list(self.made)
        procs = _procs(names)
        _signal(procs, signal.SIGTERM)
        psutil.wait_procs(procs, timeout=STOP_GRACE_S)
        for _ in range(STOP_ROUNDS):
            procs = _procs(names)
            if not procs:
                return
            _signal(procs, signal.SIGKILL)
            psutil.wait_procs(procs, timeout=5.0)
        left = _procs(names)
        if left:
            raise RuntimeError(f"processes outlived SIGKILL on the test LAN: {left}")


def _procs(namespaces: Sequence[str]) -> list[psutil.Process]:
    found = []
    for name in namespaces:
        for pid in _pids(name):
            try:
                p = psutil.Process(pid)
                if p.status() != psutil.STATUS_ZOMBIE:
                    found.append(p)
            except psutil.Error:
                continue
    return found


def _signal(procs: Sequence[psutil.Process], sig: signal.Signals) -> None:
    for p in procs:
        try:
            p.send_signal(sig)
        except psutil.Error:
            continue


def wait_for(what: str, ready: Any, timeout_s: float, alive: Any = None) -> None:
    """wait_for polls ``ready()`` (every 0.2 s) until it is true, for at most ``timeout_s``;
    ``alive()`` returning a message (a process that ended) fails at once with it."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        if alive is not None and (dead := alive()):
            raise AssertionError(f"{what}: {dead}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout_s:g} s")
        time.sleep(0.2)
