"""runner: an experiment, one search (or one run) per configuration of the service.

    >>> from redline.experiment import experiment, run_experiment
    >>> doc = experiment(
    ...     "http://127.0.0.1:{port}/",
    ...     "taskqueue serve --port {port} --workers {workers} --data {dir}",
    ...     {"workers": [1, 2]},
    ...     max_time=60,
    ... )
    >>> doc["best"]["text"]
    >>> doc = run_experiment("http://127.0.0.1:{port}/", "svc --port {port} --threads {t}",
    ...                      {"t": [1, 2]}, connections=16, duration="30s")

Each configuration's service is started fresh (:class:`~redline.experiment.service.Service`),
measured (:func:`redline.find.find`, or :func:`redline.run` at a fixed load) and stopped, by
one loop, :func:`conduct`, that the two share; repeats run round-robin (1, 2, 1, 2 …) so that a
drift of the machine over the experiment falls on every configuration alike.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from redline.errors import ConfigError
from redline.experiment.configurations import (
    Configuration,
    check_templates,
    check_watches,
    configurations,
    parse_vary,
)
from redline.experiment.measures import Measure
from redline.experiment.ranking import Ranked, best, compare, comparison_record
from redline.experiment.service import LISTEN_TIMEOUT_S, Service

#: MAX_REPEAT bounds ``repeat``: each repeat is a search per configuration.
MAX_REPEAT = 20

#: OnStart hears a service that is up, before its search: the configuration, the repeat
#: (0-based) and the service (its ``url``, ``command`` and ``monitor``).
OnStart = Callable[[Configuration, int, Service], None]

#: OnResult hears each search's (or run's) result as it ends.
OnResult = Callable[[Configuration, int, dict[str, Any]], None]

#: Trial measures one started service and returns the result document (find's or run's).
Trial = Callable[[Service], dict[str, Any]]


def experiment(
    url: str,
    command: str,
    vary: Mapping[str, Sequence[Any]] | Sequence[str],
    *,
    repeat: int = 1,
    window_s: float | None = None,
    listen_timeout_s: float = LISTEN_TIMEOUT_S,
    on_start: OnStart | None = None,
    on_result: OnResult | None = None,
    **find_options: Any,
) -> dict[str, Any]:
    """experiment searches the service ``command`` once per configuration of ``vary`` (and
    ``repeat`` times each) and returns the experiment document: every configuration's find
    results, the verdict of each configuration against the one before it, and the best.

    ``vary`` is ``{"workers": [1, 2, 4]}`` or the ``--vary`` specs ``["workers=1,2,4"]``;
    every name must be a ``{placeholder}`` of ``command``. ``{port}`` (in the command and in
    ``url``) is a free port, ``{dir}`` an empty directory, fresh for each service.
    ``find_options`` go to :func:`redline.find.finder.find` (``max_time``, ``slos``, ``model`` …;
    not ``monitor``: the monitored service is the command; ``watch``, the parts of the
    deployment, may hold the placeholders, filled per configuration: ``api=port:{port}``).
    Ctrl-C ends the search that runs
    (its steps are kept), stops its service and returns what ran, ``interrupted`` true.
    """
    from redline.find.finder import find

    if "monitor" in find_options:
        raise ConfigError("an experiment monitors the service it starts: no other monitor")
    watch = check_watches(find_options.pop("watch", None) or (), _names_of(vary))

    def search(service: Service) -> dict[str, Any]:
        return find(service.url, monitor=service.monitor, watch=service.fill(watch), **find_options)

    return conduct(
        Measure.FIND,
        search,
        url,
        command,
        vary,
        model=str(find_options.get("model", "closed")),
        repeat=repeat,
        window_s=window_s,
        listen_timeout_s=listen_timeout_s,
        on_start=on_start,
        on_result=on_result,
    )


def run_experiment(
    url: str,
    command: str,
    vary: Mapping[str, Sequence[Any]] | Sequence[str],
    *,
    repeat: int = 1,
    window_s: float | None = None,
    listen_timeout_s: float = LISTEN_TIMEOUT_S,
    on_start: OnStart | None = None,
    on_result: OnResult | None = None,
    **run_options: Any,
) -> dict[str, Any]:
    """run_experiment is :func:`experiment` at a fixed load: each configuration's service is
    put through :func:`redline.run` with ``run_options`` (``connections``, ``rate``,
    ``duration``, ``warmup``, ``interval``, ``plan`` for a scenario …) instead of a search,
    and the configurations are compared on the runs' windows (a scenario's request names
    one by one); ``watch`` as :func:`experiment`'s. Ctrl-C ends the run that runs (what it
    measured is kept), stops its service and returns what ran, ``interrupted`` true."""
    from redline.runs.runner import run

    watch = check_watches(run_options.pop("watch", None) or (), _names_of(vary))

    def measure(service: Service) -> dict[str, Any]:
        return dict(run(service.url, watch=service.fill(watch), **run_options).data)

    open_model = run_options.get("rate") is not None or bool(run_options.get("open_model"))
    return conduct(
        Measure.RUN,
        measure,
        url,
        command,
        vary,
        model="open" if open_model else "closed",
        repeat=repeat,
        window_s=window_s,
        listen_timeout_s=listen_timeout_s,
        on_start=on_start,
        on_result=on_result,
    )


def conduct(
    measure: Measure,
    trial: Trial,
    url: str,
    command: str,
    vary: Mapping[str, Sequence[Any]] | Sequence[str],
    *,
    model: str,
    repeat: int = 1,
    window_s: float | None = None,
    listen_timeout_s: float = LISTEN_TIMEOUT_S,
    on_start: OnStart | None = None,
    on_result: OnResult | None = None,
) -> dict[str, Any]:
    """conduct is the experiment's one loop: every configuration of ``vary`` (``repeat``
    times, round-robin) gets a fresh service, ``trial`` measures it, and the service is
    stopped however the trial ended; then the results are ranked and compared as
    ``measure`` says. A result marked ``interrupted`` (Ctrl-C inside the trial) or a Ctrl-C
    between trials ends the loop with what ran."""
    from redline.compare.windows import WINDOW_S

    if isinstance(repeat, bool) or not 1 <= repeat <= MAX_REPEAT:
        raise ConfigError(f"--repeat: a whole number from 1 to {MAX_REPEAT}, got {repeat}")
    names = _names_of(vary)
    configs = configurations(names)
    argv = check_templates(command, url, names)
    ranked = [Ranked(c.label, c.vary, [], measure) for c in configs]
    runs: list[list[dict[str, Any]]] = [[] for _ in configs]
    started_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    started = time.monotonic()
    interrupted = False
    order = [(r, i, c) for r in range(repeat) for i, c in enumerate(configs)]
    try:
        for r, i, c in order:
            with Service(argv, url, c, listen_timeout_s=listen_timeout_s) as service:
                if on_start is not None:
                    on_start(c, r, service)
                result = trial(service)
            ranked[i].results.append(result)
            runs[i].append(_run_record(r, service, result))
            if on_result is not None:
                on_result(c, r, result)
            if result.get("interrupted"):
                interrupted = True  # Ctrl-C during the trial: what it measured is kept
                break
    except KeyboardInterrupt:
        interrupted = True  # Ctrl-C while a service started or stopped: it is stopped
    window = WINDOW_S if window_s is None else window_s
    return {
        "version": 1,
        "kind": "experiment",
        "measure": measure.value,
        "url": url,
        "command": command,
        "vary": names,
        "repeat": repeat,
        "model": model,
        "started_at": started_at,
        "duration_s": round(time.monotonic() - started, 3),
        "interrupted": interrupted,
        "window_s": window,
        "configurations": [_configuration(x, runs[i]) for i, x in enumerate(ranked)],
        "comparisons": [
            comparison_record(compare(a, b, window), a, b)
            for a, b in zip(ranked, ranked[1:], strict=False)
            if a.results and b.results
        ],
        "best": best(ranked, window),
    }


def _names_of(vary: Mapping[str, Sequence[Any]] | Sequence[str]) -> dict[str, list[str]]:
    """_names_of: the names varied and their values, from ``--vary`` specs or a mapping."""
    return (
        parse_vary(vary)
        if not isinstance(vary, Mapping)
        else parse_vary(f"{k}={','.join(str(v) for v in vs)}" for k, vs in vary.items())
    )


def _run_record(r: int, service: Service, result: dict[str, Any]) -> dict[str, Any]:
    """_run_record: one trial's entry among its configuration's runs: the repeat, the
    service it measured and the result."""
    return {
        "repeat": r,
        "port": service.port,
        "command": service.command,
        "url": service.url,
        "result": result,
    }


def _configuration(x: Ranked, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """_configuration: one configuration's entry: the median repeat's answers and steps, or
    figures (``representative`` says which repeat), the spread over repeats, and every
    repeat's run."""
    i = x.representative
    chosen = x.results[i] if i is not None else (x.results[-1] if x.results else None)
    return {
        "label": x.label,
        "vary": x.vary,
        **x.measure.entry(chosen),
        "representative": i,
        "spread": x.spread(),
        "runs": runs,
    }
