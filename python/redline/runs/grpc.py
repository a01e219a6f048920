"""grpc: a gRPC run's request, from ``grpc://HOST:PORT/package.Service/Method``, the ``.proto``
that defines the method (read at run time, as ghz and grpcurl read it: no generated code) and
the request message as JSON.

A gRPC call is an HTTP/2 POST of the method's path whose body is the message, framed, and whose
answer ends with a ``grpc-status``: :func:`grpc_config` makes the engine's run of it (h2c for
``grpc://``, TLS with h2 by ALPN for ``grpcs://``; the call's headers, ``grpc`` so that each
answer's status is its gRPC code, and ``stream`` for a method that streams its answer, whose
messages are then timed as they arrive). The run is an HTTP run in every other way: open and
closed model, stages, TLS trust (``cacert``, ``insecure``), ``redline find``, the live page.
The engine compiles the file and encodes the message (``_engine.grpc_call``); a mistake is a
one-line ConfigError.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

from redline import _engine
from redline.errors import ConfigError
from redline.runs.config import RunConfig
from redline.runs.options import read_body

#: SCHEMES: a gRPC URL's scheme, and the HTTP/2 URL its calls are sent to: ``grpc://`` over
#: h2c (prior knowledge), ``grpcs://`` over TLS (h2 by ALPN, with the https runs' trust options).
SCHEMES = {"grpc://": "http://", "grpcs://": "https://"}

#: HEADERS: what every gRPC call carries (its content type, and that it reads trailers).
HEADERS = [["content-type", "application/grpc"], ["te", "trailers"]]


def is_grpc(url: str) -> bool:
    """is_grpc: the run's argument is a gRPC URL."""
    return url.lower().startswith(tuple(SCHEMES))


@dataclass(frozen=True)
class GrpcCall:
    """GrpcCall: one method's request as the engine sends it: the ``url`` of its HTTP/2 POST,
    the framed messages (``body``), whether the method streams its answer, the names of the
    method (``package.Service/Method``) and of its input message, whether it streams its
    request, and the messages a call sends (one, or a client stream's)."""

    url: str
    body: bytes
    server_streaming: bool
    method: str
    input: str
    client_streaming: bool = False
    messages: int = 1


def prepare(
    url: str,
    proto: str | os.PathLike[str] | None,
    data: str | bytes | None,
    import_paths: Iterable[str | os.PathLike[str]] = (),
) -> GrpcCall:
    """prepare reads the call ``url`` names from ``proto`` and encodes ``data`` (JSON text,
    or ``@file``; none: ``{}``, every field its default) as its input message; for a
    client-streaming or bidirectional method a JSON array is that many messages, sent one
    after another in each call (as ghz sends them)."""
    scheme = next((s for s in SCHEMES if url.lower().startswith(s)), "grpc://")
    authority, _, method = url[len(scheme) :].partition("/")
    if not authority or not method:
        raise ConfigError(
            f"{url!r}: a gRPC URL is grpc://HOST:PORT/package.Service/Method (grpcs:// for TLS)"
        )
    if proto is None:
        raise ConfigError(f"a gRPC run needs --proto FILE: the .proto that defines {method}")
    raw = read_body(data)
    text = "{}" if raw is None else raw.decode("utf-8", errors="replace")
    path, body, streaming, message, client, messages = _engine.grpc_call(
        os.fspath(proto), method, text, [os.fspath(p) for p in import_paths]
    )
    url = f"{SCHEMES[scheme]}{authority}{path}"
    return GrpcCall(url, body, streaming, path.lstrip("/"), message, client, messages)


def grpc_config(config: RunConfig, call: GrpcCall) -> RunConfig:
    """grpc_config makes ``config`` (an HTTP run's, for ``call.url``) the run of ``call``."""
    for key, flag in (("method", "--method"), ("body_b64", "--body")):
        if key in config:
            raise ConfigError(f"{flag} is an HTTP run's option: a gRPC run sends --data")
    if config.get("http2") is False:
        raise ConfigError("--http1: gRPC speaks HTTP/2")
    out = cast(RunConfig, dict(config))
    out["url"] = call.url
    out["method"] = "POST"
    out["body_b64"] = base64.b64encode(call.body).decode("ascii")
    out["http2"] = True
    out["grpc"] = True
    out["stream"] = bool(config.get("stream")) or call.server_streaming
    out["headers"] = [*HEADERS, *config.get("headers", [])]
    return out


def refuse_grpc_options(url: str, proto: object, data: object, import_paths: object) -> None:
    """refuse_grpc_options: ``proto``, ``data`` and ``import_paths`` go with a gRPC URL."""
    given = [
        name
        for name, value in (("--proto", proto), ("--data", data), ("--import-path", import_paths))
        if value
    ]
    if given and not is_grpc(url):
        raise ConfigError(f"{given[0]} goes with a grpc:// URL, not {url!r}")


def grpc_block(result: dict[str, Any], call: GrpcCall, url: str) -> dict[str, Any]:
    """grpc_block adds to a run's result what a gRPC run is: the URL as given, and its
    ``grpc`` block (the method, whether its answer and its request stream, the messages a call
    sends, and the calls by status name; docs/schema/result.schema.json)."""
    names = _engine.GRPC_CODES
    codes = {int(c): int(n) for c, n in (result.get("status_codes") or {}).items()}
    statuses = {(names[c] if c < len(names) else str(c)): n for c, n in sorted(codes.items())}
    result["url"] = url
    result["grpc"] = {
        "method": call.method,
        "input": call.input,
        "server_streaming": call.server_streaming,
        "client_streaming": call.client_streaming,
        "messages_per_call": call.messages,
        "statuses": statuses,
    }
    return result
