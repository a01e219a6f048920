"""run_options: one load run's options, typed, frozen and spelled once.

:class:`RunOptions` is what :func:`redline.run` takes as keywords, what ``redline run URL``'s
flags give (read by their names in :mod:`redline.cli.run_flags`), and what becomes the
engine's ``RunConfig`` (:meth:`RunOptions.config`). Only the *spelling* of a value is checked here
(:mod:`redline.runs.options`: is ``"15x"`` a duration); whether it is allowed, and every default,
is the engine's (``RunConfig::check``). An option left as None is left out of the config, so
the engine's default applies.

Adding a run option: a field here, the engine's ``RunConfig`` field of the same meaning (the
name in :meth:`config`), and its flag in the CLI (dest = the field's name, or an alias in
:data:`redline.cli.run_flags.FLAG_DESTS`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Any, cast

from redline.runs.config import RunConfig
from redline.runs.grpc import grpc_config, is_grpc, prepare, refuse_grpc_options
from redline.runs.options import (
    encode_body,
    ignored_options,
    parse_duration,
    parse_header,
    parse_stages,
    read_body,
)
from redline.runs.proxy import route

#: LOAD_SHAPE: the run options that say how much load and for how long (``redline run``'s
#: load model flags, :mod:`redline.cli.run_flags`' first set); a search sets these itself.
LOAD_SHAPE = (
    "connections",
    "rate",
    "stages",
    "open_model",
    "max_connections",
    "duration",
    "requests",
    "warmup",
)


@dataclass(frozen=True)
class RunOptions:
    """RunOptions: the closed model's ``connections`` (virtual users) or the open model's
    ``rate`` (req/s, or ``open_model`` with ``stages`` of req/s); stop after ``duration`` or
    ``requests``; ``stages`` ramp linearly (``"10s:100,30s:100"`` or pairs); ``threads``
    (default one per core); the request (``method``, ``headers`` as ``"Name: value"`` or
    pairs, ``body`` or ``@file``); ``timeout``, ``warmup`` (left out of the summary) and the
    reporting ``interval``; ``max_connections`` (the open model's pool cap); ``preflight``
    (one request before the run, to fail fast); TLS (``insecure``, ``cacert``); ``http2``
    (True: HTTP/2, False: HTTP/1.1, None: the server's choice by ALPN) and ``streams``;
    ``send_ahead``: the open model's window for sending hits together (default 200us; larger
    costs fewer wake-ups and sends in bursts); ``latency_from``: ``"sent"`` (default: the
    wait for a free connection plus the server's time from the request leaving, free of the
    generator's own lag, which is reported apart) or ``"intended"`` (wrk2's: from the
    intended send time, the generator's lag included); ``stream``: time each response as it
    arrives (``first_byte_ms``, ``chunk_gap_ms``, events counted; HTTP/1.1;
    docs/protocols.md); ``proxy``: the forward proxy (``http://[user:pass@]host:port``; None:
    ``HTTP_PROXY``/``HTTPS_PROXY`` unless ``NO_PROXY``, ``''``: none; docs/proxies.md); for a
    ``grpc://HOST:PORT/package.Service/Method`` URL, ``proto`` (the .proto that defines it,
    its imports found beside it or in ``import_paths``) and ``data`` (the request message as
    JSON, or ``@file``; docs/protocols.md)."""

    connections: int | None = None
    rate: float | None = None
    duration: str | float | None = None
    requests: int | None = None
    stages: str | Iterable[Any] | None = None
    threads: int | None = None
    method: str | None = None
    headers: Iterable[str | tuple[str, str]] = ()
    body: str | bytes | None = None
    timeout: str | float | None = None
    warmup: str | float | None = None
    max_connections: int | None = None
    interval: str | float | None = None
    open_model: bool = False
    preflight: bool = True
    insecure: bool = False
    cacert: str | os.PathLike[str] | None = None
    http2: bool | None = None
    streams: int | None = None
    send_ahead: str | float | None = None
    latency_from: str | None = None
    stream: bool = False
    proxy: str | None = None
    proto: str | os.PathLike[str] | None = None
    data: str | bytes | None = None
    import_paths: Iterable[str | os.PathLike[str]] = ()

    def as_kwargs(self) -> dict[str, Any]:
        """as_kwargs is the options as :func:`redline.run`'s keywords (every field)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def ignored(
        self, url: str, spell: Callable[[str], str] = str, *, scenario: bool = False
    ) -> list[str]:
        """ignored names each given option the run will not use (``connections`` with a
        rate, a proxy a ``scenario`` does not go through), one line each; ``spell`` renders an
        option's name (the CLI's flags)."""
        return ignored_options(
            url,
            connections=self.connections,
            rate=self.rate,
            stages=self.stages,
            open_model=self.open_model,
            max_connections=self.max_connections,
            cacert=self.cacert,
            insecure=self.insecure,
            send_ahead=self.send_ahead,
            proxy=self.proxy,
            scenario=scenario,
            spell=spell,
        )

    def config(
        self,
        url: str,
        *,
        plan: dict[str, Any] | None = None,
        live: bool = False,
        max_vus: int | None = None,
        start_at_unix_s: float | None = None,
    ) -> RunConfig:
        """config renders the engine's :class:`~redline.runs.config.RunConfig` for ``url``:
        units parsed, the body read and encoded, and every option left as None left out, so
        that the engine's default applies. What a caller adds beyond the run options is an
        argument here: a scenario's ``plan``; a search's ``live`` run with room for
        ``max_vus`` users; a cluster injector's shared start. Nothing is judged here;
        ``RunConfig::check`` does that (a gRPC URL's call is read here, from its .proto)."""
        paths = list(self.import_paths)
        refuse_grpc_options(url, self.proto, self.data, paths)
        call = prepare(url, self.proto, self.data, paths) if is_grpc(url) else None
        given: dict[str, Any] = {
            "url": url,
            "method": self.method,
            "connections": self.connections,
            "rate": self.rate,
            "max_connections": self.max_connections,
            "requests": self.requests,
            "threads": self.threads,
            "duration_s": _seconds(self.duration, "duration"),
            "timeout_s": _seconds(self.timeout, "timeout"),
            "warmup_s": _seconds(self.warmup, "warmup"),
            "interval_s": _seconds(self.interval, "interval"),
            "send_ahead_s": _seconds(self.send_ahead, "send_ahead"),
            "body_b64": encode_body(read_body(self.body)),
            "ca_file": os.fspath(self.cacert) if self.cacert is not None else None,
            "http2": self.http2,
            "streams": self.streams,
            "latency_from": self.latency_from,
            "plan": plan,
            "max_vus": max_vus,
            "start_at_unix_s": start_at_unix_s,
            # The environment's proxy is a URL run's; a scenario's given one the engine refuses.
            "proxy": (self.proxy or None) if plan is not None else route(url, self.proxy).proxy,
        }
        if self.stages is not None:
            given["stages"] = [
                {"duration_s": s.duration_s, "target": s.target} for s in parse_stages(self.stages)
            ]
        config = cast(RunConfig, {k: v for k, v in given.items() if v is not None})
        config["headers"] = [list(parse_header(h)) for h in self.headers]
        config["open"] = bool(self.open_model)
        config["preflight"] = bool(self.preflight)
        config["insecure"] = bool(self.insecure)
        config["stream"] = bool(self.stream)
        if live:
            config["live"] = True
        return config if call is None else grpc_config(config, call)


def _seconds(value: str | float | None, what: str) -> float | None:
    return None if value is None else parse_duration(value, what)
