"""config: the engine's run config typed once in Python (:class:`RunConfig`), as pydantic-core
types its Python→Rust contract in ``core_schema.py``: a TypedDict whose keys are the fields of
``RunConfig`` in ``crates/engine/src/config.rs``, field for field (``tests/test_config.py``
fails when either side gains a field the other lacks). The defaults are the engine's: a key
left out takes its default there, and :meth:`redline.RunOptions.config` leaves out what the
caller did not give. The dict itself crosses to the binding (``_engine.run(config)``,
``_engine.start_run``: ``_engine.pyi`` takes this type), which reads it into the engine's
``RunConfig`` in one conversion (``crates/py/src/run.rs``'s ``read_config``: a key or a value
that does not fit is a ConfigError saying which).
"""

from __future__ import annotations

from typing import Any, TypedDict


class StageConfig(TypedDict):
    """StageConfig: one leg of a ramp (the engine's ``pacer::Stage``): ``target`` VUs or
    req/s reached linearly over ``duration_s``."""

    duration_s: float
    target: float


class _Url(TypedDict):
    """_Url: the one key every config has."""

    url: str


class RunConfig(_Url, total=False):
    """RunConfig: what the engine runs (``redline_engine::config::RunConfig``): the request
        (``url``, ``method``, ``headers`` as pairs, ``body_b64``), the load (``connections`` or
        ``rate``, ``stages``, ``open``, ``max_connections``, ``streams``), its length
        (``duration_s``, ``requests``), ``threads``, the time bounds (``timeout_s``, ``warmup_s``,
        ``interval_s``, ``send_ahead_s``), ``preflight``, TLS (``insecure``, ``ca_file``),
        ``http2``, a scenario's ``plan``, a search's ``live`` run with room for ``max_vus``, and a
        cluster injector's shared start (``start_at_unix_s``), and where a latency starts
    (``latency_from``); ``stream`` times answers as they arrive; ``proxy`` is the forward
    proxy; ``grpc``: each request is a gRPC call (:mod:`redline.runs.grpc`). The Rust doc
    comments say what each means; ``RunConfig::check`` judges them."""

    method: str
    headers: list[list[str]]
    body_b64: str
    connections: int
    rate: float
    stages: list[StageConfig]
    open: bool
    max_connections: int
    duration_s: float
    requests: int
    threads: int
    timeout_s: float
    warmup_s: float
    interval_s: float
    send_ahead_s: float
    preflight: bool
    insecure: bool
    ca_file: str
    live: bool
    max_vus: int
    http2: bool
    streams: int
    plan: dict[str, Any]
    start_at_unix_s: float
    latency_from: str
    stream: bool
    proxy: str
    grpc: bool
