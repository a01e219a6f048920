"""Proxies (issue 36), as a curl or k6 user expects them: ``--proxy URL`` and
``HTTP_PROXY``/``HTTPS_PROXY`` (unless ``NO_PROXY``; loopback never from the environment, as
k6's Go rules), plain http forwarded in absolute form, https through a CONNECT tunnel with TLS
to the origin inside it, credentials as Proxy-Authorization. Held to what a counting proxy
(tests/proxy_server.py) and the origin each saw; the origin is named
``redline-origin.invalid``, which only the proxy resolves. A proxy that is down or refuses is
one line, exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import redline
from conftest import CLI_TIMEOUT_S
from proxy_server import ORIGIN, CountingProxy
from redline.runs.proxy import proxy_note, route

#: PROXY_VARS: every spelling of the variables the tests set or clear.
PROXY_VARS = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
              "ALL_PROXY", "no_proxy", "NO_PROXY")  # fmt: skip


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """cli runs ``redline ARGS`` with no proxy variable but those in ``env``."""
    base = {k: v for k, v in os.environ.items() if k not in PROXY_VARS}
    return subprocess.run(
        [sys.executable, "-m", "redline", *args],
        capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
        env={**base, **env, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip


def origin_url(t: redline.Target, path: str = "/") -> str:
    """origin_url: the target's URL under the name only the proxy resolves."""
    return t.url.replace("127.0.0.1", ORIGIN) + path


@pytest.mark.parametrize(
    "label, env, given, url, proxy, source",
    [
        ("https variable, https target", {"HTTPS_PROXY": "http://p:3128"}, None,
         "https://example.com/", "http://p:3128", "HTTPS_PROXY"),
        ("lower case, a port", {"http_proxy": "http://p:3128"}, None,
         "http://example.com:8080/x", "http://p:3128", "http_proxy"),
        ("another scheme's", {"HTTPS_PROXY": "http://p:3128"}, None, "http://example.com/",
         None, None),
        ("ALL_PROXY is not read (k6 neither)", {"ALL_PROXY": "http://p:1"}, None,
         "http://example.com/", None, None),
        ("NO_PROXY names it", {"HTTPS_PROXY": "http://p:3128", "NO_PROXY": "example.com"}, None,
         "https://api.example.com/", None, "HTTPS_PROXY"),
        ("NO_PROXY=*", {"HTTPS_PROXY": "http://p:3128", "NO_PROXY": "*"}, None, "https://a.b/",
         None, "HTTPS_PROXY"),
        ("loopback", {"HTTP_PROXY": "http://p:3128"}, None, "http://127.0.0.1:8080/", None,
         "HTTP_PROXY"),
        ("::1", {"HTTP_PROXY": "http://p:3128"}, None, "http://[::1]:8080/", None, "HTTP_PROXY"),
        ("localhost", {"HTTP_PROXY": "http://p:3128"}, None, "http://localhost:8080/", None,
         "HTTP_PROXY"),
        ("given: loopback too", {}, "http://q:1", "http://127.0.0.1/", "http://q:1", "--proxy"),
        ("given wins", {"HTTP_PROXY": "http://p:3128"}, "http://q:1", "http://example.com/",
         "http://q:1", "--proxy"),
        ("given, NO_PROXY names it", {"NO_PROXY": "127.0.0.1"}, "http://q:1", "http://127.0.0.1/",
         None, "--proxy"),
        ("given '': none", {"HTTP_PROXY": "http://p:3128"}, "", "http://example.com/", None, None),
        ("none set", {}, None, "http://example.com/", None, None),
    ],
)  # fmt: skip
def test_the_proxy_is_chosen_as_curl_and_k6_choose_it(
    clean_env, label, env, given, url, proxy, source
):
    for k, v in env.items():
        clean_env.setenv(k, v)
    r = route(url, given)
    assert (r.proxy, r.source) == (proxy, source), label


@pytest.mark.parametrize(
    "label, env, given, scenario, says",
    [
        ("a scenario goes direct", {"HTTPS_PROXY": "http://p:3128"}, None, True,
         "HTTPS_PROXY is set, but a scenario's requests go to their hosts directly (not through"
         " p:3128)"),
        ("a URL run goes through it", {"HTTPS_PROXY": "http://p:3128"}, None, False, None),
        ("NO_PROXY over --proxy", {"NO_PROXY": "example.com"}, "http://u:pw@q:1", False,
         "NO_PROXY names example.com: it is loaded directly, not through --proxy"),
        ("ALL_PROXY", {"ALL_PROXY": "socks5://p:1080"}, None, False,
         "ALL_PROXY is set, but redline reads only HTTP_PROXY and HTTPS_PROXY"),
    ],
)  # fmt: skip
def test_a_proxy_that_is_set_and_not_used_is_named(clean_env, label, env, given, scenario, says):
    for k, v in env.items():
        clean_env.setenv(k, v)
    note = proxy_note("https://example.com/", given, scenario=scenario)
    if says is None:
        assert note is None, (label, note)
    else:
        assert note is not None and note.startswith(says), (label, note)
        assert "pw" not in note and "\n" not in note


def test_plain_http_goes_through_the_proxy_in_absolute_form(tmp_path: Path) -> None:
    """-c 2 -n 200 through --proxy with credentials: the proxy forwarded 200 requests, each
    in absolute form with the credentials, over the 2 connections the run opened (and the
    preflight's connect); the origin answered those 200 on the proxy's 2 connections."""
    out = tmp_path / "r.json"
    with redline.Target(threads=1) as t, CountingProxy() as proxy:
        before = t.stats()
        proxied = proxy.url.replace("http://", "http://us%40er:p%3Ass@")
        p = cli("run", "-c", "2", "-t", "1", "-n", "200", "--json", str(out), "--proxy", proxied,
                origin_url(t, "/x?y=1"))  # fmt: skip
        after = t.stats()
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["requests"] == 200 and doc["errors_total"] == 0, doc["errors"]
    assert after["requests"] - before["requests"] == 200
    assert proxy.seen.forwarded == 200
    assert proxy.seen.targets == {origin_url(t, "/x?y=1")}
    assert proxy.seen.authorizations == {"Basic dXNAZXI6cDpzcw=="}  # us@er:p:ss
    assert proxy.seen.tunnels == 0
    assert proxy.seen.connections == doc["connects"] + 1 == 3  # the preflight's connect
    assert after["connections"] - before["connections"] == 2
    said = f"redline: through the proxy {proxy.url[7:]} (--proxy): every figure includes"
    assert said in p.stderr, p.stderr
    assert "p%3Ass" not in p.stderr + p.stdout and "p:ss" not in p.stderr + p.stdout


def test_https_goes_through_a_connect_tunnel_from_the_environment(tmp_path: Path) -> None:
    """HTTPS_PROXY names the proxy: each connection asked it for a tunnel to the origin and
    verified the origin's certificate inside it (issued for the name only the proxy
    resolves); the proxy forwarded no request itself, and the origin answered all 100."""
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    cert = ca.issue_cert(ORIGIN)
    ca_pem, cert_pem, key_pem = tmp_path / "ca.pem", tmp_path / "c.pem", tmp_path / "k.pem"
    ca.cert_pem.write_to_path(str(ca_pem))
    cert.cert_chain_pems[0].write_to_path(str(cert_pem))
    cert.private_key_pem.write_to_path(str(key_pem))
    out = tmp_path / "r.json"
    with redline.Target(threads=1, tls_cert=cert_pem, tls_key=key_pem) as t:
        with CountingProxy() as proxy:
            before = t.stats()
            p = cli("run", "-c", "2", "-t", "1", "-n", "100", "--cacert", str(ca_pem),
                    "--json", str(out), origin_url(t), HTTPS_PROXY=proxy.url)  # fmt: skip
            after = t.stats()
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["requests"] == 100 and doc["errors_total"] == 0, doc["errors"]
    assert doc["protocol"] == "http/1.1"
    assert after["requests"] - before["requests"] == 100
    assert proxy.seen.forwarded == 0
    # One tunnel a connection, the preflight's handshake among them; each reached the origin.
    assert proxy.seen.tunnels == proxy.seen.connections == doc["connects"] + 1 == 3
    assert after["connections"] - before["connections"] == 3
    assert f"through the proxy {proxy.url[7:]} (HTTPS_PROXY)" in p.stderr, p.stderr


def test_the_library_goes_through_the_proxy_it_is_given(clean_env) -> None:
    with redline.Target(threads=1) as t, CountingProxy() as proxy:
        r = redline.run(origin_url(t), connections=1, threads=1, requests=20, proxy=proxy.url)
        served = t.stats()["requests"]
    assert r.requests == 20 and r.errors_total == 0
    assert proxy.seen.forwarded == served == 20


def test_no_proxy_sends_a_given_proxy_run_direct(clean_env) -> None:
    """--proxy with NO_PROXY naming the target: the target is loaded directly (curl's
    reading), the proxy sees nothing, and the warning says so."""
    with redline.Target(threads=1) as t, CountingProxy() as proxy:
        p = cli("run", "-c", "1", "-n", "30", "-q", "--proxy", proxy.url, t.url + "/",
                NO_PROXY="127.0.0.1")  # fmt: skip
        served = t.stats()["requests"]
    assert p.returncode == 0, p.stderr
    assert served == 30 and proxy.seen.connections == 0
    assert "NO_PROXY names 127.0.0.1: it is loaded directly, not through --proxy" in p.stderr


def test_a_loopback_target_is_loaded_directly_with_the_variables_set(target) -> None:
    """HTTP_PROXY and HTTPS_PROXY point at a proxy: a loopback target is not sent through it
    (k6 never proxies loopback either), quietly."""
    with CountingProxy() as proxy:
        before = target.stats()["requests"]
        p = cli("run", "-c", "2", "-n", "200", "-q", target.url + "/", HTTP_PROXY=proxy.url,
                HTTPS_PROXY=proxy.url)  # fmt: skip
        served = target.stats()["requests"] - before
    assert p.returncode == 0, p.stderr
    assert served == 200 and proxy.seen.connections == 0
    assert "proxy" not in p.stderr.lower(), p.stderr


def one_line(p: subprocess.CompletedProcess[str]) -> str:
    """one_line: the one stderr line of a refused command (exit 2, no traceback)."""
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    return lines[0]


def test_a_proxy_that_is_down_or_refuses_is_one_line(free_port: int, tmp_path: Path) -> None:
    """Down: the connect to it is refused. Refusing a tunnel (403), or asking for credentials
    (407): the preflight's CONNECT says the status. The origin saw nothing each time."""
    url = f"https://{ORIGIN}:{free_port}/"
    line = one_line(cli("run", "-n", "5", "--proxy", f"http://127.0.0.1:{free_port}", url))
    assert f"cannot connect to proxy 127.0.0.1:{free_port}: " in line, line
    with CountingProxy(refuse_tunnels=403) as proxy:
        line = one_line(cli("run", "-n", "5", "--proxy", proxy.url, url))
        assert proxy.seen.tunnels == 1 and proxy.seen.forwarded == 0
    assert line.endswith("the proxy refused the tunnel: 403 Refused"), line
    assert f"could not reach {ORIGIN}:{free_port}" in line, line
    with CountingProxy(credentials="u:pw") as proxy:
        line = one_line(cli("run", "-n", "5", "--proxy", proxy.url, url))
        assert proxy.seen.refused == 1
    assert line.endswith("407 Proxy Authentication Required"), line


def test_plain_http_refused_by_the_proxy_is_its_status(clean_env) -> None:
    """Without the credentials the proxy wants, each plain-http request is answered 407 by
    the proxy: counted as that status; the origin saw none."""
    with redline.Target(threads=1) as t, CountingProxy(credentials="u:pw") as proxy:
        r = redline.run(origin_url(t), connections=1, threads=1, requests=10, proxy=proxy.url)
        served = t.stats()["requests"]
    assert r.data["status_codes"] == {"407": 10}, r.data["status_codes"]
    assert served == 0 and proxy.seen.refused == 10


@pytest.mark.parametrize(
    "label, args, says",
    [
        ("socks", ["--proxy", "socks5://127.0.0.1:1080"], "a socks5 proxy is not supported"),
        ("http2", ["--proxy", "http://127.0.0.1:1", "--http2"], "leave out http2"),
    ],
)  # fmt: skip
def test_what_a_proxy_cannot_carry_is_refused_with_the_reason(target, label, args, says):
    before = target.stats()["requests"]
    line = one_line(cli("run", "-n", "5", *args, target.url + "/"))
    assert says in line, (label, line)
    assert target.stats()["requests"] == before


def test_a_scenario_refuses_a_given_proxy(target, tmp_path: Path) -> None:
    """A scenario's requests go to their hosts directly: --proxy is refused with the reason
    (the environment's proxy is named in a warning: test_a_proxy_that_is_set_and_not_used)."""
    f = tmp_path / "s.py"
    f.write_text(textwrap.dedent("""
        from redline.scenario import Scenario
        s = Scenario(users=1)
        @s.flow
        def main(u):
            u.get("/")
    """))  # fmt: skip
    before = target.stats()["requests"]
    line = one_line(cli("run", str(f), "--host", target.url, "-n", "3", "--proxy", "http://p:1"))
    assert "a proxy carries URL runs only" in line, line
    assert target.stats()["requests"] == before
