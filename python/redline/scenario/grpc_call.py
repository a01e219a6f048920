"""grpc_call: a flow's gRPC call (``u.grpc``; docs/protocols.md), traced into the plan as a
request step with a ``grpc`` block (the ``.proto``, its import paths, the method). The engine
compiles the file when it builds the plan, encodes the JSON message through the method's
descriptor per call (once, for a message without Vars), sends it as an HTTP/2 POST to the
``grpc://`` or ``grpcs://`` origin (a path: the run's host), and reads the reply as JSON; the
call's ``grpc-status`` is the step's status (``crates/engine/src/scenario/grpc.rs``)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from redline import _engine
from redline.scenario.checks import Check
from redline.scenario.template import json_template, parts

#: _URL: a written-out call URL: ``grpc://HOST:PORT`` or ``grpcs://HOST[:PORT]`` (none: the
#: run's host), then ``/package.Service/Method``.
_URL = re.compile(
    r"^(?:(?P<origin>grpcs?://[^/?#\s]+))?/(?P<method>[A-Za-z_][\w.]*/[A-Za-z_]\w*)$",
    re.IGNORECASE,
)


def codes(status: Any) -> list[int]:
    """codes reads a call's ``status=``: a code (``0``), a name (``"NOT_FOUND"``, any case)
    or a tuple of them, as numbers; anything else is a ValueError naming it."""
    names = {n.upper(): i for i, n in enumerate(_engine.GRPC_CODES)}
    out = []
    for s in status if isinstance(status, (tuple, list)) else (status,):
        if isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= 99:
            out.append(s)
        elif isinstance(s, str) and s.upper() in names:
            out.append(names[s.upper()])
        else:
            raise ValueError(
                f"a gRPC status is a code 0-16 or its name (OK, NOT_FOUND, ...), got {s!r}"
            )
    return out


def _proto_path(proto: Any, file: str | None) -> str:
    """_proto_path: ``proto`` as an absolute path: beside the scenario file when it is there,
    else from the directory redline runs in; ValueError when it is in neither."""
    if not isinstance(proto, (str, os.PathLike)) or not os.fspath(proto):
        raise ValueError(
            f"grpc(proto=...) is the .proto file that defines the method, got {proto!r}"
        )
    path = os.fspath(proto)
    beside = os.path.join(os.path.dirname(os.path.abspath(file)), path) if file else path
    for candidate in (beside, path):
        if os.path.isfile(candidate):
            return os.path.abspath(candidate)
    raise ValueError(f"grpc(proto={path!r}): no such file")


def trace(
    user: Any,
    file: str | None,
    url: Any,
    proto: Any,
    message: Any,
    metadata: dict[str, Any] | None,
    import_paths: Iterable[str | os.PathLike[str]],
    status: Any,
    checks: Iterable[Check],
    name: str | None,
) -> dict[str, Any]:
    """trace makes the request step of the call ``u.grpc`` describes, in ``user``'s flow (a
    :class:`~redline.scenario.user.User`, which calls this from scenario file ``file``, then
    adds the step's ``tally`` and ``timeout`` and appends it)."""
    m = _URL.match(url) if isinstance(url, str) else None
    if m is None or len(parts(url)) != 1:
        raise user._error(
            "a gRPC call's URL is grpc://HOST:PORT/package.Service/Method (grpcs:// for TLS), "
            f"or /package.Service/Method on the run's host, written out; got {url!r}"
        )
    try:
        path = _proto_path(proto, file)
        wanted = [] if status is None else codes(status)
    except ValueError as e:
        raise user._error(str(e)) from None
    try:
        body = user._use(json_template({} if message is None else message))
    except TypeError as e:
        raise user._error(f"grpc message: {e}") from None
    step: dict[str, Any] = {
        "step": "request",
        "name": name or f"gRPC {m['method']}",
        "method": "POST",
        "path": [url],
        "query": [],
        "headers": [[str(k), user._use(parts(v))] for k, v in (metadata or {}).items()],
        "body": {"type": "json", "template": body},
        "follow_redirects": False,
        "extract": [],
        "checks": [{"check": "status", "in": wanted}] if wanted else [],
        "grpc": {
            "proto": path,
            "import_paths": [os.path.abspath(os.fspath(p)) for p in import_paths],
            "method": m["method"],
        },
    }
    for c in checks:
        if not isinstance(c, Check):
            raise user._error(f"checks must be made by status(), json_eq(), ...; got {c!r}")
        step["checks"].append(dict(c.spec))
    return step
