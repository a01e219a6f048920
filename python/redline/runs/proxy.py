"""proxy: which forward proxy a run goes through, chosen as curl and k6 users expect.

``--proxy URL`` (``proxy=`` in :func:`redline.run`) names one; without it ``HTTP_PROXY`` for an
http:// target and ``HTTPS_PROXY`` for an https:// one (lower case too), the variables k6 (Go)
reads, unless the target is loopback (Go's rule, so k6's). ``NO_PROXY`` names hosts that go
direct either way, as curl reads it; ``--proxy ''`` goes direct whatever the environment says.
The engine speaks to the proxy (``crates/engine/src/proxy.rs``: absolute-form requests for
http, a CONNECT tunnel for https, credentials from the URL as Proxy-Authorization) and judges
its URL. A load test through a proxy measures the proxy too: the CLI says which one it goes
through. A scenario's requests go to their hosts directly: a proxy from the environment is then
named in a warning, and ``--proxy`` is refused by the engine with the reason.
"""

from __future__ import annotations

import ipaddress
import os
import sys
import urllib.parse
from dataclasses import dataclass


@dataclass(frozen=True)
class Route:
    """Route: the ``proxy`` URL a run goes through (None: direct) and where it came from
    (``source``: ``--proxy`` or the variable's name; for a direct run, the variable a
    ``NO_PROXY`` or loopback target left unused, if any)."""

    proxy: str | None
    source: str | None = None


def _no_proxy(host: str) -> bool:
    """_no_proxy: whether ``NO_PROXY`` (any case) names ``host``, as curl reads it (urllib's
    rule). urllib.request is imported only where the variable is set: with http.client, email
    and ssl under it, it was a third of the instructions the CLI spent importing itself, paid
    by every run at start; without the variable urllib's answer is no anyway."""
    if not any(k.lower() == "no_proxy" for k in os.environ):
        return False
    import urllib.request

    return bool(urllib.request.proxy_bypass(host))


def _loopback(host: str) -> bool:
    """_loopback: localhost or a loopback address, which Go's (k6's) proxy rules never send
    through a proxy from the environment."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _variable(scheme: str) -> tuple[str, str] | None:
    """_variable: the set variable that gives ``scheme``'s proxy and its value, or None."""
    for name in (f"{scheme}_proxy", f"{scheme.upper()}_PROXY"):
        value = os.environ.get(name)
        if value:
            return name, value
    return None


def _host(url: str) -> tuple[str, str]:
    """_host: the URL's scheme and host ('' when it has none or is not a URL: the engine
    names that)."""
    try:
        parts = urllib.parse.urlsplit(url)
        return parts.scheme.lower(), parts.hostname or ""
    except ValueError:
        return "", ""


def route(url: str, given: str | None = None) -> Route:
    """route: the proxy a run of ``url`` goes through: ``given`` (``''``: none), else the
    environment's for the URL's scheme; None where ``NO_PROXY`` names the host (both), or
    the host is loopback (the environment's only)."""
    scheme, host = _host(url)
    if given == "":
        return Route(None)
    bypass = bool(host) and _no_proxy(host)
    if given is not None:
        return Route(None, "--proxy") if bypass else Route(given, "--proxy")
    found = _variable(scheme) if scheme in ("http", "https") else None
    if found is None:
        return Route(None)
    name, value = found
    if bypass or not host or _loopback(host):
        return Route(None, name)
    return Route(value, name)


def shown(proxy: str) -> str:
    """shown: a proxy URL as messages name it, ``host:port`` without its credentials."""
    try:
        parts = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        host = parts.hostname or proxy
        return f"[{host}]:{parts.port or 80}" if ":" in host else f"{host}:{parts.port or 80}"
    except ValueError:
        return proxy


def proxy_note(url: str, given: str | None = None, *, scenario: bool = False) -> str | None:
    """proxy_note: a warning when a proxy the user set is not used for ``url``: an explicit
    one that ``NO_PROXY`` overrides, the environment's for a scenario (whose requests go to
    their hosts directly), or ``ALL_PROXY``, which redline does not read (k6 neither)."""
    r = route(url, given)
    scheme, host = _host(url)
    if r.proxy is None and r.source == "--proxy":
        return f"NO_PROXY names {host}: it is loaded directly, not through --proxy"
    if r.proxy is not None and scenario and r.source != "--proxy":
        return (
            f"{r.source} is set, but a scenario's requests go to their hosts directly (not"
            f" through {shown(r.proxy)}); NO_PROXY={host} says that is what you mean"
        )
    all_proxy = os.environ.get("all_proxy") or os.environ.get("ALL_PROXY")
    if given is None and r.source is None and all_proxy and host and not _loopback(host):
        if not _no_proxy(host):
            return (
                f"ALL_PROXY is set, but redline reads only HTTP_PROXY and HTTPS_PROXY (as k6"
                f" does): it connects to {host} directly"
            )
    return None


def through(url: str, given: str | None = None) -> str | None:
    """through: the CLI's line saying which proxy a URL run goes through, or None."""
    r = route(url, given)
    if r.proxy is None:
        return None
    return (
        f"through the proxy {shown(r.proxy)} ({r.source}): every figure includes the"
        " proxy's own time"
    )


def say_through(url: str, given: str | None = None) -> None:
    """say_through prints :func:`through`'s line on stderr, if any (the CLI's)."""
    line = through(url, given)
    if line is not None:
        print(f"redline: {line}", file=sys.stderr)


def warn_proxy(url: str, given: str | None = None, *, scenario: bool = False) -> None:
    """warn_proxy prints :func:`proxy_note`'s warning for ``url``, if any, on stderr (the
    CLI's; ``redline run URL`` says it among the options it ignores). The route itself is
    said after the run (:func:`say_through`), so that a proxy that refused is one line."""
    note = proxy_note(url, given, scenario=scenario)
    if note is not None:
        print(f"redline: warning: {note}", file=sys.stderr)
