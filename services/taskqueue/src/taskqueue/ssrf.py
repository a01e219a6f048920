"""ssrf: the address policy that keeps http-fetch tasks off internal networks.

A fetch task lets any client make the service open connections, so the service must refuse
addresses that only it can reach (loopback, private ranges, cloud metadata at 169.254.169.254,
...). The policy is applied three times by the fetcher, because each check alone has a gap:
to IP literals in the URL (aiohttp skips the resolver for them), to every address the resolver
returns (a name can point anywhere), and to the peer of the socket actually connected (the
last word, whatever path the address took).
"""

from __future__ import annotations

import enum
import functools
import ipaddress
import re
from collections.abc import Iterable, Sequence
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: MAX_URL_LENGTH bounds submitted URLs; longer ones are abuse, not content locations.
MAX_URL_LENGTH = 2048

_ALLOWED_SCHEMES = frozenset({"http", "https"})
_LABEL = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")
# A host whose last label is a number is an IPv4 address to getaddrinfo/inet_aton and to the
# WHATWG URL standard (so "2130706433", "0x7f000001" and "127.1" all mean 127.0.0.1).
_NUMERIC_LABEL = re.compile(r"^(?:0[xX][0-9a-fA-F]*|[0-9]+)$")
_FORBIDDEN_URL_CHARS = re.compile(r"[\x00-\x20\x7f\\]")


class AddressClass(enum.Enum):
    """AddressClass names why an address is (or is not) reachable from the public internet."""

    PUBLIC = "public"
    UNSPECIFIED = "unspecified"
    LOOPBACK = "loopback"
    PRIVATE = "private"
    SHARED = "shared address space"
    LINK_LOCAL = "link-local"
    MULTICAST = "multicast"
    BROADCAST = "broadcast"
    RESERVED = "reserved"


def _table(rows: Sequence[tuple[str, AddressClass]]) -> list[tuple[IPNetwork, AddressClass]]:
    return [(ipaddress.ip_network(net), cls) for net, cls in rows]


# IANA special-purpose registries, spelled out instead of relying on ipaddress.is_private,
# whose answers changed between CPython patch releases.
_V4_SPECIAL = _table(
    [
        ("0.0.0.0/32", AddressClass.UNSPECIFIED),
        ("0.0.0.0/8", AddressClass.RESERVED),
        ("10.0.0.0/8", AddressClass.PRIVATE),
        ("100.64.0.0/10", AddressClass.SHARED),
        ("127.0.0.0/8", AddressClass.LOOPBACK),
        ("169.254.0.0/16", AddressClass.LINK_LOCAL),
        ("172.16.0.0/12", AddressClass.PRIVATE),
        ("192.0.0.0/24", AddressClass.RESERVED),
        ("192.0.2.0/24", AddressClass.RESERVED),
        ("192.88.99.0/24", AddressClass.RESERVED),
        ("192.168.0.0/16", AddressClass.PRIVATE),
        ("198.18.0.0/15", AddressClass.RESERVED),
        ("198.51.100.0/24", AddressClass.RESERVED),
        ("203.0.113.0/24", AddressClass.RESERVED),
        ("224.0.0.0/4", AddressClass.MULTICAST),
        ("255.255.255.255/32", AddressClass.BROADCAST),
        ("240.0.0.0/4", AddressClass.RESERVED),
    ]
)
_V6_SPECIAL = _table(
    [
        ("::/128", AddressClass.UNSPECIFIED),
        ("::1/128", AddressClass.LOOPBACK),
        ("64:ff9b:1::/48", AddressClass.PRIVATE),
        ("100::/64", AddressClass.RESERVED),
        ("2001:db8::/32", AddressClass.RESERVED),
        ("2001::/23", AddressClass.RESERVED),
        ("fc00::/7", AddressClass.PRIVATE),
        ("fe80::/10", AddressClass.LINK_LOCAL),
        ("fec0::/10", AddressClass.PRIVATE),
        ("ff00::/8", AddressClass.MULTICAST),
    ]
)
_V6_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
_V6_COMPAT = ipaddress.ip_network("::/96")
_V6_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """embedded_ipv4 lists the IPv4 addresses an IPv6 address carries, with the carrier's name.

    IPv4-mapped and -compatible addresses reach the IPv4 host directly on a dual-stack socket;
    NAT64, 6to4 and Teredo reach it through a translator or relay. Either way the IPv4 host is
    the real destination, so it must pass the policy too.
    """
    found: list[tuple[str, ipaddress.IPv4Address]] = []
    if ip.ipv4_mapped is not None:
        found.append(("IPv4-mapped", ip.ipv4_mapped))
    elif ip in _V6_COMPAT and int(ip) > 1:
        found.append(("IPv4-compatible", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)))
    elif ip in _V6_NAT64:
        found.append(("NAT64", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)))
    elif ip.sixtofour is not None:
        found.append(("6to4", ip.sixtofour))
    elif ip.teredo is not None:
        server, client = ip.teredo
        found.extend([("Teredo client", client), ("Teredo server", server)])
    return found


def _special_class(ip: IPAddress) -> AddressClass:
    table = _V4_SPECIAL if ip.version == 4 else _V6_SPECIAL
    for net, cls in table:
        if ip in net:
            return cls
    if ip.version == 6 and ip not in _V6_GLOBAL_UNICAST:
        return AddressClass.RESERVED
    return AddressClass.PUBLIC


def classify(ip: IPAddress) -> tuple[AddressClass, str]:
    """classify returns an address's class and a label for messages ("IPv4-mapped loopback").

    For IPv6 addresses carrying an IPv4 address, the first non-public carried address decides.
    """
    if ip.version == 6:
        assert isinstance(ip, ipaddress.IPv6Address)
        for carrier, v4 in embedded_ipv4(ip):
            cls = _special_class(v4)
            if cls is not AddressClass.PUBLIC:
                return cls, f"{carrier} {cls.value}"
    cls = _special_class(ip)
    return cls, cls.value


def parse_ipv4_legacy(host: str) -> ipaddress.IPv4Address:
    """parse_ipv4_legacy reads every IPv4 spelling inet_aton accepts, strictly.

    "2130706433", "0x7f000001", "0177.0.0.1" and "127.1" are all 127.0.0.1 to the C library,
    so a guard that only understands dotted quads would wave them through.
    Raises ValueError for a numeric-looking host that is not a valid address.
    """
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if not 1 <= len(parts) <= 4 or not all(_NUMERIC_LABEL.match(p) for p in parts):
        raise ValueError(f"invalid IPv4 address {host!r}")
    numbers = []
    for part in parts:
        if part[:2].lower() == "0x":
            if len(part) == 2:
                raise ValueError(f"invalid IPv4 address {host!r}")
            numbers.append(int(part[2:], 16))
        elif len(part) > 1 and part[0] == "0":
            if not set(part) <= set("01234567"):
                raise ValueError(f"invalid IPv4 address {host!r}")
            numbers.append(int(part, 8))
        else:
            numbers.append(int(part, 10))
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        raise ValueError(f"invalid IPv4 address {host!r}")
    value = last
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def parse_host_ip(host: str) -> IPAddress | None:
    """parse_host_ip returns the address a URL host denotes when it is an IP literal, else None.

    Accepts bracketed or bare IPv6 (zone ids dropped) and every legacy IPv4 spelling.
    Raises ValueError when the host looks like an address but is not a valid one.
    """
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if ":" in bare:
        try:
            return ipaddress.IPv6Address(bare.split("%", 1)[0])
        except ValueError:
            raise ValueError(f"invalid IPv6 address {host!r}") from None
    labels = bare.rstrip(".").split(".")
    if _NUMERIC_LABEL.match(labels[-1]):
        return parse_ipv4_legacy(bare)
    return None


def check_url(url: str) -> None:
    """check_url raises ValueError with a one-line reason unless url is a fetchable http(s) URL.

    Syntax only (no DNS, no address policy): it runs at submission time, where a bad URL must be
    a 4xx. Credentials are refused because "http://trusted.example@evil.example/" tricks readers.
    """
    if not isinstance(url, str) or not url:
        raise ValueError("URL must be a non-empty string")
    if len(url) > MAX_URL_LENGTH:  # before the cache: it keeps no long strings
        raise ValueError(f"URL longer than {MAX_URL_LENGTH} characters")
    problem = _url_problem(url)
    if problem is not None:
        raise ValueError(problem)


@functools.lru_cache(maxsize=4096)
def _url_problem(url: str) -> str | None:
    """_url_problem is check_url's verdict on one URL (None: fetchable), remembered.

    The verdict depends on the string alone, and a service's users submit the same few URLs
    again and again: parsing each one (yarl, then its host label by label) at submission and
    again at the fetch was 2 % of taskqueue's CPU in the seed-000 mix.
    """
    try:
        _check_syntax(url)
    except ValueError as exc:
        return str(exc)
    return None


def _check_syntax(url: str) -> None:
    """_check_syntax raises check_url's ValueError for a URL of at most MAX_URL_LENGTH."""
    if _FORBIDDEN_URL_CHARS.search(url):
        raise ValueError("URL contains whitespace, control characters or backslashes")
    try:
        parsed = URL(url)
        port = parsed.port
    except ValueError as exc:
        raise ValueError(f"malformed URL: {exc}") from None
    if not parsed.scheme:
        raise ValueError("URL has no scheme (want http or https)")
    if parsed.scheme.lower() not in _ALLOWED_SCHEMES:
        raise ValueError(f"unsupported URL scheme {parsed.scheme!r} (want http or https)")
    if parsed.raw_user is not None or parsed.raw_password is not None:
        raise ValueError("URL must not contain credentials (user@host)")
    host = parsed.raw_host
    if not host:
        raise ValueError("URL has no host")
    if port is None or not 1 <= port <= 65535:
        raise ValueError("URL port must be between 1 and 65535")
    _check_host(host)


def _check_host(host: str) -> None:
    if parse_host_ip(host) is not None:
        return
    name = host.rstrip(".").lower()
    if not name or len(name) > 253:
        raise ValueError("URL host name is empty or longer than 253 characters")
    for label in name.split("."):
        if not _LABEL.match(label):
            raise ValueError(f"invalid URL host {host!r}")


class BlockedAddressError(OSError):
    """BlockedAddressError says the policy refused an address; its text is the task's reason.

    It subclasses OSError so that aiohttp carries it (as the cause of a connector error) out of
    the resolver and the connector instead of replacing it.
    """

    def __init__(self, address: IPAddress, address_class: AddressClass, label: str) -> None:
        super().__init__(f"blocked address {address} ({label})")
        self.address = address
        self.address_class = address_class

    def __str__(self) -> str:
        return str(self.args[0])


class AddressPolicy:
    """AddressPolicy allows public addresses plus the networks in allow_cidrs, nothing else."""

    def __init__(self, allow_cidrs: Iterable[str] = ()) -> None:
        self.allowed: list[IPNetwork] = []
        for cidr in allow_cidrs:
            try:
                self.allowed.append(ipaddress.ip_network(cidr.strip(), strict=False))
            except ValueError:
                raise ValueError(f"invalid CIDR {cidr!r}") from None

    def _explicitly_allowed(self, ip: IPAddress) -> bool:
        candidates: list[IPAddress] = [ip]
        if isinstance(ip, ipaddress.IPv6Address):
            candidates += [v4 for _, v4 in embedded_ipv4(ip)]
        return any(c in net for c in candidates for net in self.allowed if c.version == net.version)

    def check(self, address: IPAddress | str) -> None:
        """check raises BlockedAddressError unless address may be connected to."""
        ip = ipaddress.ip_address(address.split("%", 1)[0]) if isinstance(address, str) else address
        if self._explicitly_allowed(ip):
            return
        cls, label = classify(ip)
        if cls is not AddressClass.PUBLIC:
            raise BlockedAddressError(ip, cls, label)


class GuardedResolver(AbstractResolver):
    """GuardedResolver drops resolved addresses the policy refuses, failing if none is left.

    Dropping (rather than failing on any bad answer) keeps "localhost" usable when only
    127.0.0.0/8 is allowed; the connection can only go to an address that passed.
    """

    def __init__(self, policy: AddressPolicy, inner: AbstractResolver | None = None) -> None:
        self._policy = policy
        self._inner = inner or aiohttp.ThreadedResolver()

    async def resolve(self, host: str, port: int = 0, family: Any = 0) -> list[ResolveResult]:
        """resolve asks the inner resolver, then keeps only allowed addresses."""
        results = await self._inner.resolve(host, port, family)
        kept: list[ResolveResult] = []
        first_refusal: BlockedAddressError | None = None
        for result in results:
            try:
                self._policy.check(result["host"])
            except BlockedAddressError as exc:
                first_refusal = first_refusal or exc
                continue
            kept.append(result)
        if not kept and first_refusal is not None:
            raise first_refusal
        return kept

    async def close(self) -> None:
        """close releases the inner resolver."""
        await self._inner.close()


class GuardedConnector(aiohttp.TCPConnector):
    """GuardedConnector re-checks the peer of every new socket against the policy.

    This is the check that cannot be fooled by DNS rebinding or by an IP literal spelling that
    skipped the resolver: it looks at the address the kernel actually connected to. It hooks
    aiohttp's private _wrap_create_connection (stable from 3.8 through 3.14); the resolver and
    the URL pre-check still stand if a future aiohttp stops calling it.
    """

    def __init__(self, policy: AddressPolicy, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._policy = policy

    async def _wrap_create_connection(self, *args: Any, **kwargs: Any) -> Any:
        transport, protocol = await super()._wrap_create_connection(*args, **kwargs)
        peer = transport.get_extra_info("peername")
        try:
            if not peer:
                raise OSError("connected socket has no peer address")
            self._policy.check(peer[0])
        except (OSError, ValueError) as exc:
            transport.abort()
            req = kwargs["req"]
            blocked = exc if isinstance(exc, OSError) else OSError(str(exc))
            raise aiohttp.ClientConnectorError(req.connection_key, blocked) from exc
        return transport, protocol
