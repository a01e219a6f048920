"""Proxies (issue 36): redline goes through none. ``--proxy`` is refused with the reason;
``HTTP(S)_PROXY`` where it would apply is named in a warning; a loopback target (which k6's
Go rules never proxy either) is loaded directly and quietly. Held to what the target and a
listening "proxy" each saw."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
from conftest import CLI_TIMEOUT_S
from redline.runs.proxy import proxy_note

#: PROXY_VARS: every spelling of the variables the tests set or clear.
PROXY_VARS = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
              "ALL_PROXY", "no_proxy", "NO_PROXY")  # fmt: skip


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def listener() -> Iterator[tuple[str, list[int]]]:
    """listener: a socket that counts the connections made to it (a "proxy" that must see
    none), as its URL and the count."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.settimeout(0.2)
    seen = [0]
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            seen[0] += 1
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", seen
    finally:
        stop.set()
        thread.join(timeout=5)
        sock.close()


@pytest.mark.parametrize(
    "label, env, url, says",
    [
        ("https proxy, https target", {"HTTPS_PROXY": "http://p:3128"}, "https://example.com/",
         "HTTPS_PROXY is set, but redline does not go through a proxy: it connects to"
         " example.com:443 directly"),
        ("lower case, a port", {"http_proxy": "http://p:3128"}, "http://example.com:8080/x",
         "http_proxy is set, but redline does not go through a proxy: it connects to"
         " example.com:8080 directly"),
        ("all_proxy", {"ALL_PROXY": "socks5://p:1080"}, "http://example.com/", "ALL_PROXY is set"),
        ("another scheme's", {"HTTPS_PROXY": "http://p:3128"}, "http://example.com/", None),
        ("NO_PROXY names it", {"HTTPS_PROXY": "http://p:3128", "NO_PROXY": "example.com"},
         "https://api.example.com/", None),
        ("NO_PROXY=*", {"HTTPS_PROXY": "http://p:3128", "NO_PROXY": "*"}, "https://a.b/", None),
        ("loopback", {"HTTP_PROXY": "http://p:3128"}, "http://127.0.0.1:8080/", None),
        ("::1", {"HTTP_PROXY": "http://p:3128"}, "http://[::1]:8080/", None),
        ("localhost", {"HTTP_PROXY": "http://p:3128"}, "http://localhost:8080/", None),
        ("none set", {}, "http://example.com/", None),
    ],
)  # fmt: skip
def test_a_proxy_that_would_apply_is_named(clean_env, label, env, url, says):
    for k, v in env.items():
        clean_env.setenv(k, v)
    note = proxy_note(url)
    if says is None:
        assert note is None, (label, note)
    else:
        assert note is not None and note.startswith(says), (label, note)
        assert "\n" not in note


def test_proxy_flag_is_refused_with_the_reason_and_nothing_is_sent(target):
    before = target.stats()["requests"]
    for command in ("run", "find"):
        p = subprocess.run(
            [sys.executable, "-m", "redline", command, "--proxy", "http://127.0.0.1:3128",
             "-d", "1s", target.url],
            capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
        )  # fmt: skip
        assert p.returncode == 2, (command, p.returncode, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1, p.stderr
        said = f"redline {command}: error: argument --proxy: redline does not send through"
        assert lines[0].startswith(said), p.stderr
        assert "connects to the target directly" in lines[0]
    assert target.stats()["requests"] == before


def test_a_loopback_target_is_loaded_directly_with_a_proxy_set(target, listener, tmp_path):
    """HTTP_PROXY and HTTPS_PROXY point at a listener: the run goes to the target, every
    request the target saw is one redline counted, the "proxy" saw no connection, and no
    warning is printed (k6 too never proxies loopback)."""
    proxy, seen = listener
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS}
    env.update(HTTP_PROXY=proxy, HTTPS_PROXY=proxy, ALL_PROXY=proxy, PYTHONUNBUFFERED="1")
    out = tmp_path / "r.json"
    before = target.stats()["requests"]
    p = subprocess.run(
        [sys.executable, "-m", "redline", "run", "-c", "2", "-n", "200", "-q", "--json",
         str(out), target.url],
        capture_output=True, text=True, timeout=CLI_TIMEOUT_S, env=env,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert target.stats()["requests"] - before == doc["requests"] == 200
    assert seen[0] == 0, "the proxy was connected to"
    assert "proxy" not in p.stderr.lower(), p.stderr


def test_the_python_api_and_a_url_run_say_it_among_the_ignored_options(clean_env):
    """redline.run warns of it (IgnoredOption) as of any option it does not use, and the CLI
    prints the same notes as warnings; nothing is connected to here."""
    from redline.runs.run_options import RunOptions

    clean_env.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    notes = RunOptions(connections=1).ignored("https://example.com/")
    assert [n for n in notes if n.startswith("HTTPS_PROXY is set")], notes
    assert RunOptions(connections=1).ignored("https://127.0.0.1:8443/") == []
