"""run: the one entry point of a load run, shared by the CLI and Python users.

    >>> import redline
    >>> result = redline.run("http://127.0.0.1:8080/", connections=50, duration="10s")
    >>> result.rps, result.latency.p99

The engine runs in native threads with the GIL released; ``progress`` receives each
interval's snapshot (a dict) as the run goes.

Options are validated once, by the engine (``RunConfig::check``), which also owns every
default: :class:`~redline.runs.run_options.RunOptions` parses units (``"15s"``, ``"10s:100"``,
``"@body.json"``) and leaves out what the caller did not give; the engine's one-line
ConfigError comes through unchanged.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from redline import _engine
from redline.errors import ConfigError, InjectorLost
from redline.runs.config import RunConfig
from redline.runs.grpc import grpc_block, is_grpc, prepare
from redline.runs.options import IgnoredOption
from redline.runs.result import Result
from redline.runs.run_options import RunOptions
from redline.runs.watching import start_parts, with_interval_parts, with_parts

#: Progress: the callback type for per-interval snapshots.
Progress = Callable[[dict[str, Any]], None]


def run(
    url: str,
    options: RunOptions | None = None,
    *,
    progress: Progress | None = None,
    plan: dict[str, Any] | None = None,
    cluster: str | None = None,
    injectors: int | None = None,
    on_injector_loss: str = "fail",
    watch: Sequence[str] = (),
    **option: Any,
) -> Result:
    """run generates HTTP load against ``url`` and returns what it measured.

    The load is ``options`` (a :class:`~redline.runs.run_options.RunOptions`), or the same given
    as keywords (``connections=50, duration="10s"``; both: the keywords win). Closed model
    (default): ``connections`` virtual users each send their next request when the last one
    completes. Open model: ``rate`` requests per second whatever the server does, with
    latency measured from the intended send time (no coordinated omission). ``stages`` ramps
    VUs (closed model) or req/s (``open_model=True``) linearly between targets. Stop after
    ``duration`` or ``requests``; ``warmup`` is left out of the summary. https targets are
    verified against the system's CAs plus ``cacert`` (a PEM file); ``insecure=True`` skips
    certificate verification. ``http2=True`` speaks HTTP/2 (h2c with prior knowledge for
    http://), ``False`` HTTP/1.1, None lets an https server choose by ALPN; ``streams`` is
    HTTP/2 requests in flight per connection. A ``grpc://HOST:PORT/package.Service/Method``
    URL makes each request a call of that gRPC method, read from ``proto`` with ``data`` its
    request as JSON (``redline.run(url, proto="svc.proto", data='{"id": 1}', rate=100)``); the
    result's ``grpc`` block counts the calls by status (docs/protocols.md); ``grpcs://`` calls
    over TLS with the https runs' ``cacert`` and ``insecure``.

    ``progress`` hears each interval's snapshot (a dict). ``plan`` is a compiled scenario
    (:mod:`redline.scenario`): each hit is then one iteration of its flows, and ``url`` gives
    the host. ``cluster`` (``ray://HOST:PORT`` or ``local:N``) spreads the run over that many
    Ray injectors (``injectors``; docs/distributed.md): the result is one run's, merged
    exactly; an injector lost mid-run raises InjectorLost carrying the partial result
    (``on_injector_loss="continue"`` goes on instead). ``watch`` are parts of the deployment
    watched each second beside the load (``"api=pid:1234"``, ``"db=prometheus:URL"``: the
    ``--watch`` specs), kept in the result's ``parts``. Options left as None take the engine's
    defaults (``redline.defaults()``: 50 connections, 10 s, GET, 30 s timeout, one thread per
    core). Invalid options raise ConfigError with the engine's message; options the run will
    not use (``connections`` with ``rate``) give an IgnoredOption warning.
    """
    opts = replace(options, **option) if options is not None else RunOptions(**option)
    for note in opts.ignored(url, scenario=plan is not None):
        warnings.warn(note, IgnoredOption, stacklevel=2)
    config = opts.config(url, plan=plan)
    parts = start_parts(watch)
    progress = with_interval_parts(parts, progress)
    try:
        if cluster is not None:
            handle = start_handle(config, ClusterOptions(cluster, injectors, on_injector_loss))
            result, _ = drive(handle, progress)
            return with_parts(_as_called(result, url, opts), parts)
        callback = None
        if progress is not None:

            def callback(snapshot_json: str) -> None:
                progress(json.loads(snapshot_json))

        report = _engine.run(config, callback, python_steps(config))
        return with_parts(_as_called(Result(json.loads(report)), url, opts), parts)
    finally:
        if parts is not None:
            parts.stop()


def _as_called(result: Result, url: str, opts: RunOptions) -> Result:
    """_as_called is a gRPC run's result with its ``grpc`` block and the URL as given; any
    other run's as it is."""
    if not is_grpc(url):
        return result
    call = prepare(url, opts.proto, opts.data, opts.import_paths)
    return Result(grpc_block(result.data, call, url))


def python_steps(config: RunConfig) -> list[Any] | None:
    """python_steps: the callables of the plan's Python steps (``u.python``), for the engine's
    binding to call; None without any (a URL run does not import the scenario package)."""
    plan = config.get("plan")
    if plan is None:
        return None
    from redline.scenario.pystep import functions_of

    try:
        return functions_of(plan)
    except LookupError as e:
        raise ConfigError(str(e)) from None


@dataclass(frozen=True)
class ClusterOptions:
    """ClusterOptions: where a run's injectors are (``ray://HOST:PORT`` or ``local:N``), how
    many, and what a lost one does (``fail`` or ``continue``)."""

    address: str
    injectors: int | None = None
    on_injector_loss: str = "fail"


def start_handle(config: RunConfig, cluster: ClusterOptions | None = None) -> Any:
    """start_handle starts a live run of ``config``: the engine's RunHandle here, or with
    ``cluster`` the driver's ClusterHandle over its injectors (the same interface)."""
    if cluster is None:
        return _engine.start_run(config, python_steps(config))
    from redline.cluster import start_run

    return start_run(
        config,
        cluster.address,
        injectors=cluster.injectors,
        on_injector_loss=cluster.on_injector_loss,
    )


def drive(
    handle: Any,
    progress: Progress | None = None,
    watches: Iterable[Any] = (),
    interval_s: float = 1.0,
) -> tuple[Result, str | None]:
    """drive reads a live run's snapshots to its end, feeding ``progress`` and the threshold
    ``watches`` (the first that fires stops the run: its line is returned); Ctrl-C stops it
    and keeps what ran. A cluster run that lost an injector under ``fail`` raises
    InjectorLost with the partial result."""
    watches = list(watches)
    aborted = None
    try:
        while not handle.done:
            raw = handle.next_snapshot(0.5)
            if raw is None:
                continue
            snap = json.loads(raw)
            if progress is not None:
                progress(snap)
            for w in watches:
                line = w.feed(snap, interval_s)
                if line and aborted is None:
                    aborted = line
                    handle.stop()
    except KeyboardInterrupt:
        handle.stop()
    except BaseException:
        handle.stop()  # a watch that refused its threshold (an unknown name): no more load
        raise
    result = Result(json.loads(handle.report()))
    failure = (result.data.get("cluster") or {}).get("failure")
    if failure:
        raise InjectorLost(failure, result)
    return result, aborted


def build_config(url: str, plan: dict[str, Any] | None = None, **option: Any) -> RunConfig:
    """build_config renders the engine's RunConfig from run options given as keywords, and a
    scenario's ``plan`` (:meth:`RunOptions.config`)."""
    return RunOptions(**option).config(url, plan=plan)


def defaults() -> dict[str, Any]:
    """defaults returns the engine's defaults for the options a run leaves out (by the
    engine's field names: ``connections``, ``duration_s``, ``timeout_s``, ...)."""
    return dict(json.loads(_engine.defaults()))
