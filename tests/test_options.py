"""Table-driven tests of option parsing (redline/options.py)."""

from __future__ import annotations

import pytest
from redline.errors import ConfigError
from redline.options import Stage, check_url, parse_duration, parse_header, parse_stages, read_body


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("15s", 15.0),
        ("250ms", 0.25),
        ("2m", 120.0),
        ("1h", 3600.0),
        ("1.5", 1.5),
        ("500us", 0.0005),
        (" 3s ", 3.0),
        (10, 10.0),
        (0.5, 0.5),
        ("0s", 0.0),
    ],
)
def test_parse_duration_accepts(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text", ["", "abc", "10 parsecs", "-1s", "1s2", "s", float("nan"), -3, True]
)
def test_parse_duration_refuses_with_one_line(text):
    with pytest.raises(ConfigError) as e:
        parse_duration(text, "duration")
    assert "\n" not in str(e.value) and str(e.value).startswith("duration")


def test_parse_stages():
    assert parse_stages("10s:100,30s:100,10s:0") == [
        Stage(10.0, 100.0),
        Stage(30.0, 100.0),
        Stage(10.0, 0.0),
    ]
    assert parse_stages([("1s", 5), (2, 7)]) == [Stage(1.0, 5.0), Stage(2.0, 7.0)]


@pytest.mark.parametrize("spec", ["10s", "10s:x", "x:10", "10s:-1", "0s:10", ""])
def test_parse_stages_refuses(spec):
    with pytest.raises(ConfigError):
        parse_stages(spec)


@pytest.mark.parametrize(
    "header, pair",
    [("X-A: b", ("X-A", "b")), ("Authorization:Bearer t:k", ("Authorization", "Bearer t:k"))],
)
def test_parse_header(header, pair):
    assert parse_header(header) == pair


@pytest.mark.parametrize("header", ["novalue", ": v", "Bad Name: v", "X: a\r\nInjected: 1"])
def test_parse_header_refuses(header):
    with pytest.raises(ConfigError):
        parse_header(header)


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:8080/", "http://localhost/x?y=1", "http://[::1]:9/p", "https://h:8443/"],
)
def test_check_url_accepts(url):
    assert check_url(url) == url


@pytest.mark.parametrize(
    "url, words",
    [
        ("127.0.0.1:8080", "scheme"),
        ("ftp://host/", "scheme"),
        ("http://", "no host"),
        ("http://host:99999/", "malformed"),
        ("http://host:0/", "port 0"),
        ("gopher://host/", "use http:// or https://"),
    ],
)
def test_check_url_refuses(url, words):
    with pytest.raises(ConfigError, match=words):
        check_url(url)


def test_read_body(tmp_path):
    f = tmp_path / "body.json"
    f.write_bytes(b'{"a": 1}')
    assert read_body("@" + str(f)) == b'{"a": 1}'
    assert read_body("text") == b"text"
    assert read_body(b"\x00raw") == b"\x00raw"
    with pytest.raises(ConfigError, match="cannot read"):
        read_body("@" + str(tmp_path / "missing"))
