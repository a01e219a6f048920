"""Tests for redline.cluster.address: --cluster parsed, bad addresses one line."""

from __future__ import annotations

import pytest
from redline.cluster.address import MAX_INJECTORS, Kind, check_injectors, parse_address
from redline.errors import ClusterError

GOOD = [
    ("local", "local:3", Kind.LOCAL, None, None, 3),
    ("ray client", "ray://10.0.0.5:10001", Kind.RAY, "10.0.0.5", 10001, None),
    ("hostname", "ray://raycluster-head-svc:10001", Kind.RAY, "raycluster-head-svc", 10001, None),
    ("ipv6", "ray://[::1]:10001", Kind.RAY, "::1", 10001, None),
]


@pytest.mark.parametrize(
    ("label", "text", "kind", "host", "port", "n"), GOOD, ids=[g[0] for g in GOOD]
)
def test_good_addresses(label, text, kind, host, port, n) -> None:
    a = parse_address(text)
    assert (a.kind, a.host, a.port, a.injectors) == (kind, host, port, n), label
    assert a.ray_address == (text if kind is Kind.RAY else None)


BAD = [
    ("empty", "", "give ray://HOST:PORT or local:N"),
    ("no scheme", "10.0.0.5:10001", "give ray://HOST:PORT or local:N"),
    ("http", "http://head:10001", "give ray://HOST:PORT or local:N"),
    ("no port", "ray://head", "give ray://HOST:PORT or local:N"),
    ("port 0", "ray://head:0", "the port must be 1 to 65535"),
    ("port too big", "ray://head:70000", "the port must be 1 to 65535"),
    ("path", "ray://head:10001/x", "give ray://HOST:PORT or local:N"),
    ("local zero", "local:0", f"local:N needs N from 1 to {MAX_INJECTORS}"),
    ("local word", "local:many", "local:N needs N from 1"),
    ("local huge", f"local:{MAX_INJECTORS + 1}", "local:N needs N from 1"),
]


@pytest.mark.parametrize(("label", "text", "want"), BAD, ids=[b[0] for b in BAD])
def test_bad_addresses_are_one_line(label, text, want) -> None:
    with pytest.raises(ClusterError) as e:
        parse_address(text)
    msg = str(e.value)
    assert want in msg and "\n" not in msg, (label, msg)
    assert repr(text) in msg, "the message names what was given"


def test_injectors_agree_with_the_address() -> None:
    assert check_injectors(None, parse_address("local:3")) == 3
    assert check_injectors(5, parse_address("ray://h:1")) == 5
    assert check_injectors(None, parse_address("ray://h:1")) is None
    with pytest.raises(ClusterError, match="disagrees"):
        check_injectors(2, parse_address("local:3"))
    with pytest.raises(ClusterError, match="--injectors must be 1 to"):
        check_injectors(0, parse_address("ray://h:1"))
