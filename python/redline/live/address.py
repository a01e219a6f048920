"""address: where a live endpoint listens, as ``--web`` and ``--prometheus`` spell it:
``[HOST:]PORT`` (``8089``, ``0.0.0.0:9464``, ``[::1]:0``; port 0 picks a free one)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from redline.errors import ConfigError

#: DEFAULT_HOST: a bare PORT listens on the loopback interface only.
DEFAULT_HOST = "127.0.0.1"


@dataclass(frozen=True)
class Address:
    """Address is a host and port to listen on."""

    host: str
    port: int

    @property
    def loopback(self) -> bool:
        """loopback: only this machine can reach the address."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @property
    def ipv6(self) -> bool:
        """ipv6: the host is an IPv6 literal."""
        return ":" in self.host

    def url(self, port: int | None = None) -> str:
        """url is ``http://HOST:PORT`` (``port``: the one actually bound)."""
        host = f"[{self.host}]" if self.ipv6 else self.host
        return f"http://{host}:{self.port if port is None else port}"


def parse_address(text: str, flag: str) -> Address:
    """parse_address reads ``[HOST:]PORT``; a bad one is a one-line ConfigError naming the
    flag."""
    bad = ConfigError(f"{flag}: expected [HOST:]PORT, e.g. 8089 or 127.0.0.1:0, got {text!r}")
    host, sep, port = text.strip().rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    if not sep:
        host = DEFAULT_HOST
    elif bracketed:
        host = host[1:-1]
    elif ":" in host:
        raise bad  # an IPv6 host needs brackets: [::1]:8089
    host = host or DEFAULT_HOST
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise bad
    if bracketed:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise bad from None
    return Address(host, int(port))
