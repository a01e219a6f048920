"""run: the one entry point of a load run, shared by the CLI and Python users.

    >>> import redline
    >>> result = redline.run("http://127.0.0.1:8080/", connections=50, duration="10s")
    >>> result.rps, result.latency.p99

The engine runs in native threads with the GIL released; ``progress`` receives each
interval's snapshot (a dict) as the run goes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from redline import _engine
from redline.errors import ConfigError
from redline.options import (
    Stage,
    check_url,
    encode_body,
    parse_duration,
    parse_header,
    parse_stages,
    read_body,
)
from redline.result import Result

#: Progress: the callback type for per-interval snapshots.
Progress = Callable[[dict[str, Any]], None]


def run(
    url: str,
    *,
    connections: int | None = None,
    rate: float | None = None,
    duration: str | float | None = None,
    requests: int | None = None,
    stages: str | Iterable[Stage | tuple[Any, Any]] | None = None,
    threads: int | None = None,
    method: str = "GET",
    headers: Iterable[str | tuple[str, str]] = (),
    body: str | bytes | None = None,
    timeout: str | float = 30.0,
    warmup: str | float = 0.0,
    max_connections: int | None = None,
    interval: str | float = 1.0,
    open_model: bool = False,
    progress: Progress | None = None,
    preflight: bool = True,
    insecure: bool = False,
    cacert: str | os.PathLike[str] | None = None,
) -> Result:
    """run generates HTTP load against ``url`` and returns what it measured.

    Closed model (default): ``connections`` virtual users each send their next request when the
    last one completes. Open model: ``rate`` requests per second whatever the server does, with
    latency measured from the intended send time (no coordinated omission). ``stages`` ramps VUs
    (closed model) or req/s (``open_model=True``) linearly between targets.
    Stop after ``duration`` or ``requests``; ``warmup`` is left out of the summary.
    https targets are verified against the system's CAs plus ``cacert`` (a PEM file);
    ``insecure=True`` skips certificate verification.
    """
    config = build_config(
        url,
        connections=connections,
        rate=rate,
        duration=duration,
        requests=requests,
        stages=stages,
        threads=threads,
        method=method,
        headers=headers,
        body=body,
        timeout=timeout,
        warmup=warmup,
        max_connections=max_connections,
        interval=interval,
        open_model=open_model,
        preflight=preflight,
        insecure=insecure,
        cacert=cacert,
    )
    callback = None
    if progress is not None:

        def callback(snapshot_json: str) -> None:
            progress(json.loads(snapshot_json))

    report = _engine.run(json.dumps(config), callback)
    return Result(json.loads(report))


def build_config(
    url: str,
    *,
    connections: int | None,
    rate: float | None,
    duration: str | float | None,
    requests: int | None,
    stages: str | Iterable[Any] | None,
    threads: int | None,
    method: str,
    headers: Iterable[str | tuple[str, str]],
    body: str | bytes | None,
    timeout: str | float,
    warmup: str | float,
    max_connections: int | None,
    interval: str | float,
    open_model: bool = False,
    preflight: bool = True,
    insecure: bool = False,
    cacert: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """build_config validates the options and renders the engine's RunConfig (a dict)."""
    check_url(url)
    if rate is not None and (isinstance(rate, bool) or not float(rate) > 0):
        raise ConfigError(f"rate: must be > 0 requests per second, got {rate!r}")
    if connections is not None and (isinstance(connections, bool) or int(connections) < 1):
        raise ConfigError(f"connections: must be at least 1, got {connections!r}")
    if threads is not None and int(threads) < 1:
        raise ConfigError(f"threads: must be at least 1, got {threads!r}")
    if max_connections is not None and int(max_connections) < 1:
        raise ConfigError(f"max_connections: must be at least 1, got {max_connections!r}")
    if requests is not None and int(requests) < 1:
        raise ConfigError(f"requests: must be at least 1, got {requests!r}")
    if not method or not method.isalpha():
        raise ConfigError(f"method: expected an HTTP method like GET, got {method!r}")
    stage_list = parse_stages(stages) if stages is not None else None
    duration_s = parse_duration(duration, "duration") if duration is not None else None
    if duration_s is None and requests is None and stage_list is None:
        duration_s = 10.0
    if duration_s is not None and duration_s <= 0:
        raise ConfigError("duration: must be > 0")
    timeout_s = parse_duration(timeout, "timeout")
    if timeout_s <= 0:
        raise ConfigError("timeout: must be > 0")
    interval_s = parse_duration(interval, "interval")
    if interval_s < 0.05:
        raise ConfigError("interval: must be at least 50ms")
    if cacert is not None and not Path(cacert).is_file():
        raise ConfigError(f"cacert: no such file {str(cacert)!r}")
    open_model = open_model or rate is not None
    if open_model and rate is None and stage_list is None:
        raise ConfigError("open model: give a rate (--rate R) or rate stages (--stages)")
    return {
        "url": url,
        "method": method.upper(),
        "headers": [list(parse_header(h)) for h in headers],
        "body_b64": encode_body(read_body(body)),
        "connections": int(connections) if connections is not None else 50,
        "rate": float(rate) if rate is not None else None,
        "stages": [{"duration_s": s.duration_s, "target": s.target} for s in stage_list]
        if stage_list
        else None,
        "open": open_model,
        "max_connections": int(max_connections) if max_connections is not None else None,
        "duration_s": duration_s,
        "requests": int(requests) if requests is not None else None,
        "threads": int(threads) if threads is not None else _default_threads(),
        "timeout_s": timeout_s,
        "warmup_s": parse_duration(warmup, "warmup"),
        "interval_s": interval_s,
        "preflight": bool(preflight),
        "insecure": bool(insecure),
        "ca_file": str(cacert) if cacert is not None else None,
    }


def _default_threads() -> int:
    """One worker thread per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
