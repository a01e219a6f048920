"""grpc_call: a flow's gRPC call (``u.grpc``; docs/protocols.md), traced into the plan as a
request step with a ``grpc`` block (the ``.proto``, its import paths, the method). The engine
compiles the file when it builds the plan, encodes the JSON message through the method's
descriptor per call (once, for a message without Vars), sends it as an HTTP/2 POST to the
``grpc://`` or ``grpcs://`` origin (written out, or from variables; a path: the run's host)
with the step's ``timeout=`` as its deadline (``grpc-timeout``), and reads the reply as JSON;
the call's ``grpc-status`` is the step's status (``crates/engine/src/scenario/grpc.rs``)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from redline import _engine
from redline.scenario.checks import Check
from redline.scenario.template import Var, display, json_template, parts

#: _METHOD: a call URL's ``/package.Service/Method``, always written out: the plan compiles
#: the method from the ``.proto`` before the run.
_METHOD = r"/(?P<method>[A-Za-z_][\w.]*/[A-Za-z_]\w*)"

#: _URL: a written-out call URL: ``grpc://HOST:PORT`` or ``grpcs://HOST[:PORT]`` (none: the
#: run's host), then ``/package.Service/Method``.
_URL = re.compile(rf"^(?:grpcs?://[^/?#\s]+)?{_METHOD}$", re.IGNORECASE)

#: _TAIL: what follows an origin given by variables (``u.var("GRPC")``): the method alone.
_TAIL = re.compile(_METHOD)

#: _SHAPES: the URLs a call takes, for the error that names what it got.
_SHAPES = (
    "a gRPC call's URL is grpc://HOST:PORT/package.Service/Method (grpcs:// for TLS), "
    "/package.Service/Method on the run's host, or an origin from a variable followed by "
    "the method written out (u.var('GRPC') + '/package.Service/Method')"
)


def split_url(url: Any) -> tuple[list[Any], str] | None:
    """split_url reads a call's URL as the plan's template and the method it names, or None
    when it is none of the shapes a call takes: written out, or variables that hold the origin
    (checked as each call is made: a value that is not ``grpc://`` or ``grpcs://`` fails that
    call) followed by ``/package.Service/Method``."""
    if not isinstance(url, str):
        return None
    template = parts(url)
    *lead, last = template or [None]
    if not isinstance(last, str) or any(isinstance(p, str) for p in lead):
        return None
    m = _TAIL.fullmatch(last) if lead else _URL.match(last)
    return (template, m["method"]) if m else None


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
    try:
        split = split_url(url)
    except ValueError as e:
        raise user._error(f"grpc url: {e}") from None
    if split is None:
        shown = display(parts(url)) if isinstance(url, (str, Var)) else repr(url)
        raise user._error(f"{_SHAPES}; got {shown!r}")
    template, method = split
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
        "name": name or f"gRPC {method}",
        "method": "POST",
        "path": user._use(template),
        "query": [],
        "headers": [[str(k), user._use(parts(v))] for k, v in (metadata or {}).items()],
        "body": {"type": "json", "template": body},
        "follow_redirects": False,
        "extract": [],
        "checks": [{"check": "status", "in": wanted}] if wanted else [],
        "grpc": {
            "proto": path,
            "import_paths": [os.path.abspath(os.fspath(p)) for p in import_paths],
            "method": method,
        },
    }
    for c in checks:
        if not isinstance(c, Check):
            raise user._error(f"checks must be made by status(), json_eq(), ...; got {c!r}")
        step["checks"].append(dict(c.spec))
    return step
