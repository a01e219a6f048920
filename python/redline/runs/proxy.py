"""proxy: what redline says about proxies, since it goes through none. A load test measures
the path it loads, and a forward proxy in it would be measured too; redline connects to the
target directly. A curl or k6 user has ``HTTP_PROXY``/``HTTPS_PROXY`` set and expects them
honoured (k6 does, curl does): where one would apply, they are told it is not, instead of
a run that silently took another path. ``--proxy`` is refused with the same reason."""

from __future__ import annotations

import ipaddress
import os
import sys
import urllib.parse
import urllib.request

#: REFUSED: why ``--proxy`` is refused (the CLI's one line).
REFUSED = (
    "redline does not send through a proxy: it connects to the target directly (a load test "
    "through a proxy measures the proxy too); run redline where it can reach the target"
)


def _loopback(host: str) -> bool:
    """_loopback: localhost or a loopback address, which Go's (k6's) proxy rules never send
    through a proxy either."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _variable(scheme: str) -> str:
    """_variable: the name of the set variable that gives ``scheme``'s proxy, as spelt."""
    for name in (f"{scheme}_proxy", f"{scheme.upper()}_PROXY", "all_proxy", "ALL_PROXY"):
        if os.environ.get(name):
            return name
    return f"{scheme.upper()}_PROXY"


def proxy_note(url: str) -> str | None:
    """proxy_note: a warning when the environment names a proxy for ``url`` (its scheme's
    ``*_PROXY`` or ``ALL_PROXY``, the host not excluded by ``NO_PROXY``, not loopback), since
    redline connects directly; None otherwise. Read with the standard library's rules
    (:func:`urllib.request.getproxies_environment`, :func:`urllib.request.proxy_bypass`)."""
    try:
        parts = urllib.parse.urlsplit(url)
        scheme, host = parts.scheme.lower(), parts.hostname or ""
    except ValueError:
        return None  # not a URL: said where it is read
    proxies = urllib.request.getproxies_environment()
    if not host or not (proxies.get(scheme) or proxies.get("all")) or _loopback(host):
        return None
    if urllib.request.proxy_bypass(host):  # NO_PROXY, by the environment's rules
        return None
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        return None  # the engine names a bad port
    return (
        f"{_variable(scheme)} is set, but redline does not go through a proxy: it connects to"
        f" {host}:{port} directly (a load test through a proxy measures the proxy too;"
        f" NO_PROXY={host} says that is what you mean)"
    )


def warn_proxy(url: str) -> None:
    """warn_proxy prints :func:`proxy_note`'s warning for ``url``, if any, on stderr (the
    CLI's; a URL run says it among the options it ignores)."""
    note = proxy_note(url)
    if note is not None:
        print(f"redline: warning: {note}", file=sys.stderr)
