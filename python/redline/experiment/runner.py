"""runner: an experiment, one search per configuration of the service.

    >>> from redline.experiment import experiment
    >>> doc = experiment(
    ...     "http://127.0.0.1:{port}/",
    ...     "taskqueue serve --port {port} --workers {workers} --data {dir}",
    ...     {"workers": [1, 2]},
    ...     max_time=60,
    ... )
    >>> doc["best"]["text"]

Each configuration's service is started fresh (:class:`~redline.experiment.service.Service`),
searched with :func:`redline.find.find` and stopped; repeats run round-robin (1, 2, 1, 2 …)
so that a drift of the machine over the experiment falls on every configuration alike.
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
    configurations,
    parse_vary,
)
from redline.experiment.ranking import Ranked, best, compare, comparison_record
from redline.experiment.service import LISTEN_TIMEOUT_S, Service

#: MAX_REPEAT bounds ``repeat``: each repeat is a search per configuration.
MAX_REPEAT = 20

#: OnStart hears a service that is up, before its search: the configuration, the repeat
#: (0-based) and the service (its ``url``, ``command`` and ``monitor``).
OnStart = Callable[[Configuration, int, Service], None]

#: OnResult hears each search's result as it ends.
OnResult = Callable[[Configuration, int, dict[str, Any]], None]


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
    ``find_options`` go to :func:`redline.find.find` (``max_time``, ``slos``, ``model`` …;
    not ``monitor``: the monitored service is the command). Ctrl-C ends the search that runs
    (its steps are kept), stops its service and returns what ran, ``interrupted`` true.
    """
    from redline.compare.windows import WINDOW_S
    from redline.find import find

    if "monitor" in find_options:
        raise ConfigError("an experiment monitors the service it starts: no other monitor")
    if isinstance(repeat, bool) or not 1 <= repeat <= MAX_REPEAT:
        raise ConfigError(f"--repeat: a whole number from 1 to {MAX_REPEAT}, got {repeat}")
    names = (
        parse_vary(vary)
        if not isinstance(vary, Mapping)
        else parse_vary(f"{k}={','.join(str(v) for v in vs)}" for k, vs in vary.items())
    )
    configs = configurations(names)
    argv = check_templates(command, url, names)
    ranked = [Ranked(c.label, c.vary, []) for c in configs]
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
                result = find(service.url, monitor=service.monitor, **find_options)
            ranked[i].results.append(result)
            runs[i].append(
                {
                    "repeat": r,
                    "port": service.port,
                    "command": service.command,
                    "url": service.url,
                    "result": result,
                }
            )
            if on_result is not None:
                on_result(c, r, result)
            if result.get("interrupted"):
                interrupted = True  # Ctrl-C during the search: find kept its steps
                break
    except KeyboardInterrupt:
        interrupted = True  # Ctrl-C while a service started or stopped: it is stopped
    window = WINDOW_S if window_s is None else window_s
    return {
        "version": 1,
        "kind": "experiment",
        "url": url,
        "command": command,
        "vary": names,
        "repeat": repeat,
        "model": find_options.get("model", "closed"),
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


def _configuration(x: Ranked, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """_configuration: one configuration's entry: the median repeat's answers and steps
    (``representative`` says which), the spread over repeats, and every repeat's run."""
    i = x.representative
    chosen = x.results[i] if i is not None else (x.results[-1] if x.results else None)
    return {
        "label": x.label,
        "vary": x.vary,
        "answers": chosen["answers"] if chosen is not None else None,
        "steps": chosen["steps"] if chosen is not None else [],
        "stop": chosen.get("stop") if chosen is not None else None,
        "representative": i,
        "spread": x.spread(),
        "runs": runs,
    }
