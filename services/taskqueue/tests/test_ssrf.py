"""Tests of taskqueue.ssrf: table-driven address classes, IP spellings, policy and URL syntax,
then the guard end to end through the fetcher against a real origin that counts requests."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterator

import pytest
from conftest import make_fetcher
from taskqueue.fetch import FetchError
from taskqueue.ssrf import (
    AddressClass,
    AddressPolicy,
    BlockedAddressError,
    GuardedResolver,
    check_url,
    classify,
    parse_host_ip,
    parse_ipv4_legacy,
)

try:
    from origin import Origin, origin_server
except ImportError:  # tests/ made a package
    from tests.origin import Origin, origin_server  # type: ignore[no-redef]

C = AddressClass

CLASSIFY_CASES = [
    ("public v4", "8.8.8.8", C.PUBLIC, "public"),
    ("public v4 edge of 172.16/12", "172.32.0.1", C.PUBLIC, "public"),
    ("unspecified v4", "0.0.0.0", C.UNSPECIFIED, "unspecified"),
    ("this-network", "0.1.2.3", C.RESERVED, "reserved"),
    ("rfc1918 10/8", "10.1.2.3", C.PRIVATE, "private"),
    ("rfc1918 172.16/12", "172.31.255.255", C.PRIVATE, "private"),
    ("rfc1918 192.168/16", "192.168.0.1", C.PRIVATE, "private"),
    ("cgnat", "100.64.0.1", C.SHARED, "shared address space"),
    ("loopback", "127.0.0.1", C.LOOPBACK, "loopback"),
    ("loopback other", "127.255.0.9", C.LOOPBACK, "loopback"),
    ("cloud metadata", "169.254.169.254", C.LINK_LOCAL, "link-local"),
    ("documentation", "192.0.2.1", C.RESERVED, "reserved"),
    ("benchmarking", "198.18.0.1", C.RESERVED, "reserved"),
    ("multicast v4", "224.0.0.1", C.MULTICAST, "multicast"),
    ("class E", "240.0.0.1", C.RESERVED, "reserved"),
    ("broadcast", "255.255.255.255", C.BROADCAST, "broadcast"),
    ("public v6", "2606:4700:4700::1111", C.PUBLIC, "public"),
    ("unspecified v6", "::", C.UNSPECIFIED, "unspecified"),
    ("loopback v6", "::1", C.LOOPBACK, "loopback"),
    ("unique local", "fd00::1", C.PRIVATE, "private"),
    ("site local", "fec0::1", C.PRIVATE, "private"),
    ("link-local v6", "fe80::1", C.LINK_LOCAL, "link-local"),
    ("multicast v6", "ff02::1", C.MULTICAST, "multicast"),
    ("documentation v6", "2001:db8::1", C.RESERVED, "reserved"),
    ("outside 2000::/3", "4000::1", C.RESERVED, "reserved"),
    ("v4-mapped loopback", "::ffff:127.0.0.1", C.LOOPBACK, "IPv4-mapped loopback"),
    ("v4-mapped metadata", "::ffff:169.254.169.254", C.LINK_LOCAL, "IPv4-mapped link-local"),
    # Mapped literals have no legitimate use in a URL; refusing even public ones is cheap.
    ("v4-mapped public", "::ffff:8.8.8.8", C.RESERVED, "reserved"),
    ("v4-compatible loopback", "::127.0.0.1", C.LOOPBACK, "IPv4-compatible loopback"),
    ("nat64 private", "64:ff9b::10.0.0.1", C.PRIVATE, "NAT64 private"),
    ("6to4 loopback", "2002:7f00:1::", C.LOOPBACK, "6to4 loopback"),
    ("6to4 private", "2002:c0a8:101::1", C.PRIVATE, "6to4 private"),
    ("6to4 public", "2002:808:808::1", C.PUBLIC, "public"),
    # Teredo client 192.0.2.45 (RFC 4380 example), obfuscated in the low 32 bits.
    ("teredo documentation client", "2001:0:4136:e378:8000:63bf:3fff:fdd2", C.RESERVED,
     "Teredo client reserved"),
    ("teredo loopback client", "2001:0:808:808::" + "80ff:fffe", C.LOOPBACK,
     "Teredo client loopback"),
]


@pytest.mark.parametrize(("label", "addr", "cls", "text"), CLASSIFY_CASES,
                         ids=[c[0] for c in CLASSIFY_CASES])
def test_classify(label: str, addr: str, cls: AddressClass, text: str) -> None:
    assert classify(ipaddress.ip_address(addr)) == (cls, text)


LEGACY_V4 = [
    ("dotted", "127.0.0.1", "127.0.0.1"),
    ("decimal", "2130706433", "127.0.0.1"),
    ("hex", "0x7f000001", "127.0.0.1"),
    ("hex upper", "0X7F000001", "127.0.0.1"),
    ("octal", "0177.0.0.1", "127.0.0.1"),
    ("short a.b", "127.1", "127.0.0.1"),
    ("short a.b.c", "127.0.1", "127.0.0.1"),
    ("mixed", "0x7f.0.0.01", "127.0.0.1"),
    ("hex last part 24 bits", "1.0x100", "1.0.1.0"),
    ("trailing dot", "127.0.0.1.", "127.0.0.1"),
    ("max", "4294967295", "255.255.255.255"),
    ("zero", "0", "0.0.0.0"),
]


@pytest.mark.parametrize(("label", "host", "want"), LEGACY_V4, ids=[c[0] for c in LEGACY_V4])
def test_parse_ipv4_legacy(label: str, host: str, want: str) -> None:
    assert str(parse_ipv4_legacy(host)) == want
    # The C library agrees, so these are exactly the spellings an attacker could use.
    if not host.endswith("."):
        assert socket.inet_ntoa(socket.inet_aton(host)) == want


BAD_V4 = ["256.0.0.1", "1.2.3.4.5", "4294967296", "08.0.0.1", "0x", "1.256.0", "1..1", ""]


@pytest.mark.parametrize("host", BAD_V4)
def test_parse_ipv4_legacy_rejects(host: str) -> None:
    with pytest.raises(ValueError):
        parse_ipv4_legacy(host)


HOSTS = [
    ("name", "example.com", None),
    ("name with digits", "a1.example", None),
    ("numeric-looking name part", "127.0.0.1.nip.io", None),
    ("v4", "10.0.0.1", "10.0.0.1"),
    ("v4 decimal", "167772161", "10.0.0.1"),
    ("v6 bracketed", "[::1]", "::1"),
    ("v6 bare", "::1", "::1"),
    ("v6 with zone", "fe80::1%25eth0", "fe80::1"),
]


@pytest.mark.parametrize(("label", "host", "want"), HOSTS, ids=[c[0] for c in HOSTS])
def test_parse_host_ip(label: str, host: str, want: str | None) -> None:
    got = parse_host_ip(host)
    assert (str(got) if got is not None else None) == want


@pytest.mark.parametrize("host", ["1.2.3.4.5", "999.1.1.1", "[::zz]", "1:2"])
def test_parse_host_ip_rejects(host: str) -> None:
    with pytest.raises(ValueError):
        parse_host_ip(host)


POLICY = [
    ("default blocks loopback", [], "127.0.0.1", False),
    ("default allows public", [], "93.184.216.34", True),
    ("allow loopback range", ["127.0.0.0/8"], "127.0.0.2", True),
    ("narrow allow", ["127.0.0.1/32"], "127.0.0.2", False),
    ("narrow allow exact", ["127.0.0.1/32"], "127.0.0.1", True),
    ("v4 allow covers mapped", ["127.0.0.0/8"], "::ffff:127.0.0.1", True),
    ("v4 allow is not v6 loopback", ["127.0.0.0/8"], "::1", False),
    ("v6 allow", ["::1/128"], "::1", True),
    ("host bits tolerated", ["10.1.2.3/8"], "10.200.0.1", True),
    ("metadata stays blocked", ["10.0.0.0/8"], "169.254.169.254", False),
]


@pytest.mark.parametrize(("label", "allow", "addr", "ok"), POLICY, ids=[c[0] for c in POLICY])
def test_policy(label: str, allow: list[str], addr: str, ok: bool) -> None:
    policy = AddressPolicy(allow)
    if ok:
        policy.check(addr)
    else:
        with pytest.raises(BlockedAddressError) as info:
            policy.check(addr)
        assert str(info.value).startswith(f"blocked address {ipaddress.ip_address(addr)} (")


def test_policy_rejects_bad_cidr() -> None:
    with pytest.raises(ValueError, match="invalid CIDR 'nope'"):
        AddressPolicy(["nope"])


GOOD_URLS = [
    "http://example.com/",
    "https://example.com:8443/a/b?c=d#frag",
    "http://127.0.0.1:8000/x",
    "http://[::1]:8000/x",
    "http://2130706433/",
    "HTTP://EXAMPLE.COM/",
    "http://xn--bcher-kva.example/",
    "http://b\u00fccher.example/",
    "http://under_score.example/",
]
BAD_URLS = [
    ("", "non-empty"),
    ("example.com/x", "scheme"),
    ("ftp://example.com/", "unsupported URL scheme 'ftp'"),
    ("file:///etc/passwd", "unsupported URL scheme"),
    ("gopher://127.0.0.1:6379/_", "unsupported URL scheme"),
    ("http:///path", "no host"),
    ("http://user:pw@example.com/", "credentials"),
    ("http://trusted.example@evil.example/", "credentials"),
    ("http://exa mple.com/", "whitespace"),
    ("http://example.com\\@evil/", "backslash"),
    ("http://example.com/\r\nX: y", "control"),
    ("http://a..b/", "invalid URL host"),
    ("http://-a.example/", "invalid URL host"),
    ("http://example.com:0/", "port"),
    ("http://example.com:99999/", "malformed URL"),
    ("http://999.1.1.1/", "invalid IPv4"),
    ("http://" + "a" * 2100 + ".com/", "longer than 2048"),
]


@pytest.mark.parametrize("url", GOOD_URLS)
def test_check_url_accepts(url: str) -> None:
    check_url(url)


@pytest.mark.parametrize(("url", "why"), BAD_URLS, ids=[w for _, w in BAD_URLS])
def test_check_url_rejects(url: str, why: str) -> None:
    with pytest.raises(ValueError) as info:
        check_url(url)
    message = str(info.value)
    assert why in message
    assert "\n" not in message


class _FakeResolver:
    """A resolver answering from a table, standing in for DNS (which may point anywhere)."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers

    async def resolve(self, host: str, port: int = 0, family: int = 0) -> list[dict]:
        return [
            {"hostname": host, "host": a, "port": port,
             "family": socket.AF_INET6 if ":" in a else socket.AF_INET, "proto": 0, "flags": 0}
            for a in self.answers
        ]

    async def close(self) -> None:
        pass


@pytest.mark.asyncio
async def test_resolver_drops_refused_addresses() -> None:
    inner = _FakeResolver(["127.0.0.1", "::1", "10.0.0.1"])
    resolver = GuardedResolver(AddressPolicy(["127.0.0.0/8"]), inner)  # type: ignore[arg-type]
    got = await resolver.resolve("mixed.test", 80)
    assert [r["host"] for r in got] == ["127.0.0.1"]


@pytest.mark.asyncio
async def test_resolver_fails_when_nothing_is_allowed() -> None:
    inner = _FakeResolver(["10.0.0.1", "169.254.169.254"])
    resolver = GuardedResolver(AddressPolicy([]), inner)  # type: ignore[arg-type]
    with pytest.raises(BlockedAddressError, match=r"blocked address 10\.0\.0\.1 \(private\)"):
        await resolver.resolve("internal.test", 80)


# --- through the fetcher, against a real origin ---------------------------------------------

@pytest.fixture
def origin() -> Iterator[Origin]:
    with origin_server() as server:
        yield server


# Every spelling of an address the origin listens on: if the guard let one through, the
# origin would count the request (the positive control below shows that it would).
def _loopback_urls(o: Origin) -> list[tuple[str, str, str]]:
    p = o.port
    urls = [
        ("dotted", f"http://127.0.0.1:{p}/content", "127.0.0.1 (loopback)"),
        ("localhost", f"http://localhost:{p}/content", "(loopback)"),
        ("decimal", f"http://2130706433:{p}/content", "127.0.0.1 (loopback)"),
        ("hex", f"http://0x7f000001:{p}/content", "127.0.0.1 (loopback)"),
        ("octal", f"http://0177.0.0.1:{p}/content", "127.0.0.1 (loopback)"),
        ("short", f"http://127.1:{p}/content", "127.0.0.1 (loopback)"),
        ("unspecified", f"http://0.0.0.0:{p}/content", "0.0.0.0 (unspecified)"),
    ]
    if "::1" in o.ports:
        urls.append(("v6 loopback", o.url("/content", "::1"), "::1 (loopback)"))
    if "127.0.0.2" in o.ports:
        urls.append(("other loopback", o.url("/content", "127.0.0.2"), "127.0.0.2 (loopback)"))
    return urls


@pytest.mark.asyncio
async def test_loopback_is_blocked_by_default_and_origin_sees_nothing(origin: Origin) -> None:
    async with make_fetcher() as fetcher:
        for label, url, why in _loopback_urls(origin):
            with pytest.raises(FetchError) as info:
                await fetcher.fetch(url, timeout_ms=3000)
            assert info.value.reason.startswith("blocked address "), label
            assert info.value.reason.endswith(why), (label, info.value.reason)
    assert origin.hits() == 0


@pytest.mark.asyncio
async def test_allowing_loopback_lets_the_same_urls_through(origin: Origin) -> None:
    urls = [u for label, u, _ in _loopback_urls(origin) if label != "unspecified"]
    async with make_fetcher(allow_cidrs=["127.0.0.0/8", "::1/128"]) as fetcher:
        for url in urls:
            assert (await fetcher.fetch(url + "?body=ok", timeout_ms=3000)).content == b"ok"
    assert origin.hits("/content") == len(urls)


@pytest.mark.asyncio
@pytest.mark.parametrize(("url", "why"), [
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 (link-local)"),
    ("http://[::ffff:169.254.169.254]/", "(IPv4-mapped link-local)"),
    ("http://10.0.0.1/", "10.0.0.1 (private)"),
    ("http://192.168.1.1:8080/", "192.168.1.1 (private)"),
    ("http://100.64.0.1/", "100.64.0.1 (shared address space)"),
    ("http://224.0.0.1/", "224.0.0.1 (multicast)"),
    ("http://[fe80::1]/", "fe80::1 (link-local)"),
    ("http://[fd00::1]/", "fd00::1 (private)"),
    ("http://[2002:a00:1::1]/", "(6to4 private)"),
])
async def test_internal_addresses_are_blocked_before_connecting(url: str, why: str) -> None:
    async with make_fetcher() as fetcher:
        start = asyncio.get_running_loop().time()
        with pytest.raises(FetchError) as info:
            await fetcher.fetch(url, timeout_ms=3000)
        # Refused by the policy, not by a connect attempt timing out.
        assert asyncio.get_running_loop().time() - start < 1.0
    assert info.value.reason.startswith("blocked address ") and info.value.reason.endswith(why)


@pytest.mark.asyncio
@pytest.mark.parametrize("target", ["127.0.0.2", "::1", "2130706434"])
async def test_redirect_from_allowed_to_private_is_blocked(origin: Origin, target: str) -> None:
    listening = "127.0.0.2" if target == "2130706434" else target
    if listening not in origin.ports:
        pytest.skip(f"cannot listen on {listening} here")
    shown = f"[{target}]" if ":" in target else target
    private = f"http://{shown}:{origin.ports[listening]}/content"
    async with make_fetcher(allow_cidrs=["127.0.0.1/32"]) as fetcher:
        with pytest.raises(FetchError) as info:
            await fetcher.fetch(origin.url(f"/redirect?to={private}"), timeout_ms=3000)
    assert info.value.reason.startswith("blocked address ")
    assert origin.hits("/redirect") == 1 and origin.hits("/content") == 0
    # Control: with the target allowed, the same redirect reaches the origin.
    async with make_fetcher(allow_cidrs=["127.0.0.0/8", "::1/128"]) as fetcher:
        await fetcher.fetch(origin.url(f"/redirect?to={private}"), timeout_ms=3000)
    assert origin.hits("/content") == 1


class _RebindingResolver(_FakeResolver):
    """Stands in for DNS that answers a private address (rebinding), bypassing the guard."""


@pytest.mark.asyncio
async def test_connected_peer_is_checked_even_if_resolution_is_fooled(origin: Origin) -> None:
    async with make_fetcher() as fetcher:
        # White-box: replace the guarded resolver inside the connector, so only the
        # connected-peer check stands between the fetch and the origin.
        fetcher._connector._resolver = _RebindingResolver(["127.0.0.1"])  # type: ignore[assignment]
        with pytest.raises(FetchError) as info:
            await fetcher.fetch(f"http://rebind.test:{origin.port}/content", timeout_ms=3000)
    assert info.value.reason == "blocked address 127.0.0.1 (loopback)"
    assert origin.hits() == 0
