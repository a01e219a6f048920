"""finder: ``redline find`` as a function. One live engine run: the search over it, then a
confirmation step at the answer in the same run, and the four answers.

    >>> from redline.find import find
    >>> result = find("http://127.0.0.1:8080/", model="closed", max_time=60)
    >>> result["answers"]["steady_state_throughput_rps"]

The result is a plain dict (the ``--json`` document): ``answers``, ``steps``, ``timeseries``,
``stop`` (which condition ended the search and why) and ``generator_limited`` (True when the
limit found is redline's own CPU, not the service's).

This module owns the order of things (search, confirm, soak) and which step is the steady
answer; the live run is :mod:`.live_run`'s, what throughput counts :mod:`.throughput`'s, and
the result document :mod:`.document`'s.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from redline.analysis.outcome import Meter
from redline.errors import ConfigError
from redline.find.document import answers_text, host_note, result_document, write_json
from redline.find.ending import Ended, Outcome
from redline.find.live_run import Aligned, LiveRun
from redline.find.plan import CONFIRM_S, MAX_TIME_S, SEARCH_DEFAULTS, Plan
from redline.find.rules import Limits, Slo
from redline.find.search import Search
from redline.find.step import Step
from redline.find.throughput import search_meter, work_probe
from redline.find.watched import watched_document
from redline.runs.config import RunConfig
from redline.runs.run_options import LOAD_SHAPE, RunOptions
from redline.runs.runner import ClusterOptions
from redline.service.parts import Parts

# Where each part of find lives (the names read here before they moved are kept here too).
__all__ = [
    "CONFIRM_S",
    "LiveRun",
    "Step",
    "answers_text",
    "cluster_size",
    "find",
    "host_note",
    "steady_answer",
    "write_json",
]


def cluster_size(cluster: ClusterOptions) -> int:
    """cluster_size: the injectors a cluster run will have, when known before it starts
    (``--injectors``, or local:N's N; else 1)."""
    from redline.cluster.address import parse_address

    return cluster.injectors or parse_address(cluster.address).injectors or 1


# long: the signature and docstring (every option of redline find) are over 50 lines; the body
# is the order of things: the plan, the live run, the search and its holds, the document.
def find(
    url: str,
    *,
    model: str = "closed",
    slos: list[str] | tuple[str, ...] = (),
    max_errors: float | None = 0.01,
    max_time: float = MAX_TIME_S,
    start: float | None = None,
    max_load: float | None = None,
    min_step: float = Plan.min_step_s,
    max_step: float = Plan.max_step_s,
    confirm: float = CONFIRM_S,
    soak: float = 0.0,
    service_cpu: float | None = None,
    monitor: Any = None,
    generator_busy: float | None = 0.9,
    stop_at_knee: bool = False,
    throughput: str = "requests",
    backlog: str | None = None,
    watch: list[str] | tuple[str, ...] = (),
    ramp: float | None = None,
    plan: dict[str, Any] | None = None,
    scenario: str | None = None,
    on_snapshot: Callable[[dict[str, Any], float, str], None] | None = None,
    on_step: Callable[[Step], None] | None = None,
    cluster: ClusterOptions | None = None,
    options: RunOptions | None = None,
    **option: Any,
) -> dict[str, Any]:
    """find searches for the load where ``url`` runs best and where it breaks.

    ``model`` closed steps VUs, open steps the arrival rate. The search finds the optimal
    point (the most throughput per unit of latency) and keeps pushing to the limit: errors
    over ``max_errors``, an SLO of ``slos`` (such as ``'p99<100ms'``) breached, throughput
    that stops growing or falls, an open-model backlog, ``service_cpu`` % of a
    ``monitor``-ed service, or the generator's own CPU (``stop_at_knee`` stops at the optimum
    instead). It refines the limit to within its noise, then holds the steady-state load for
    ``confirm`` seconds in the same live run (warm connections) and, with ``soak``, the
    optimum that long. ``max_time`` bounds the whole search. ``ramp`` is how long each step
    change takes (default: a quarter of ``min_step`` or 1 s, whichever is shorter; users with
    long think times settle sooner with a ramp as long as one iteration). ``throughput``
    says what counts: ``requests``, ``iterations`` (a scenario's), one request name, or the
    service's own counter of work done (``prometheus:URL#SERIES``, read each interval);
    ``backlog`` (``prometheus:URL#SERIES``) is a gauge of the work waiting: a step whose
    backlog keeps growing is not steady.
    ``plan`` (a compiled scenario, named ``scenario`` in the result) replaces the single
    request with the scenario's flows; ``url`` is then its host. ``cluster`` runs the
    search on Ray injectors, each step's load split across them (docs/distributed.md).

    What each request is and how it goes out are the run options (``options``, a
    :class:`~redline.runs.run_options.RunOptions`, or the same given as keywords, as
    :func:`redline.run` takes them: ``threads``, ``method``, ``headers``, ``body``,
    ``timeout``, ``interval``, ``http2`` …), with a search's own defaults where they differ
    from the engine's (:data:`redline.find.plan.SEARCH_DEFAULTS`: a 10 s timeout, a 0.5 s
    interval). The load shape (:data:`redline.runs.run_options.LOAD_SHAPE`) is the search's to set.
    """
    limits = Limits(
        max_errors=max_errors,
        slos=[Slo.parse(s) for s in slos],
        service_cpu=service_cpu,
        generator_busy=generator_busy,
    )
    meter = search_meter(throughput, plan)
    if service_cpu is not None and monitor is None:
        raise ConfigError("a service CPU limit needs a monitored service (--monitor-...)")
    _check_times(max_errors, max_time, confirm, soak, min_step)
    first = _first_load(model, start, cluster)
    ceiling = max_load if max_load is not None else (1000.0 if model == "closed" else 1e6)
    steps_plan = Plan(
        model=model,
        start=first,
        ceiling=ceiling,
        min_step_s=min_step,
        max_step_s=max_step,
        max_time_s=max_time - confirm - 2.0,
        stop_at_knee=stop_at_knee,
        ramp_s=ramp,
    )
    run = search_run(options, option, model, first, duration=max_time + soak + 30.0)
    # A live run: its load set step by step, a scenario's flows as the hit, and in the
    # closed model room for ``ceiling`` users (it starts at ``first``: search_run).
    vus = int(ceiling) if model == "closed" else None
    config = run.config(url, plan=plan, live=True, max_vus=vus)
    timed = [str(s) for s in limits.slos if s.figure is not None]
    if timed and plan is None and not config.get("stream"):
        # Without --stream no answer is timed as it arrives: the SLO would judge nothing.
        raise ConfigError(f"--slo {timed[0]}: a stream figure needs --stream")
    interval = float(config["interval_s"])  # a search's default or the caller's, parsed
    started_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    started = time.monotonic()
    work = work_probe(meter, backlog, interval)
    parts = Parts.parse(watch)
    if parts is not None:
        parts.start(origin=started)
    try:
        live = LiveRun(config, cluster, work)
        live.parts = parts
    except BaseException:
        for started_part in (parts, work):
            if started_part is not None:
                started_part.stop()
        raise
    monitor = _on_the_runs_clock(monitor, started)
    search = Search(
        live,
        steps_plan,
        limits,
        sample=_sampler(live, monitor, parts),
        on_step=on_step,
        on_snapshot=on_snapshot,
        interval_s=interval,
        meter=meter,
    )
    try:
        outcome, held, report, interrupted = _searched(
            search, live, monitor, confirm, soak, started + max_time
        )
    finally:
        if parts is not None:
            parts.stop()
    settings = _settings(steps_plan, max_time, confirm, soak, interval, config, meter, backlog)
    steady, notes = steady_answer(outcome.best, search)
    watched = watched_document(parts, live, backlog)
    return result_document(
        url,
        model,
        outcome,
        report,
        live.timeseries,
        steady,
        notes,
        held.confirmed,
        held.soaked,
        monitor,
        limits,
        settings,
        started_at,
        time.monotonic() - started,
        interrupted,
        scenario,
        meter,
        watched,
    )


def _check_times(
    max_errors: float | None, max_time: float, confirm: float, soak: float, min_step: float
) -> None:
    """_check_times refuses, in the flags' spelling, an error share outside 0-100 % (-1%
    stopped nothing, 200% ran to the end), a negative confirmation or soak (ran as none),
    and a --max-time too short to hold two steps and the confirmation."""
    if max_errors is not None and not 0 <= max_errors <= 1:
        raise ConfigError(f"--max-errors: a share from 0 to 100%, got {max_errors * 100:g}%")
    for flag, seconds in (("--confirm", confirm), ("--soak", soak)):
        if seconds < 0:
            raise ConfigError(f"{flag}: 0s or more, got {seconds:g}s")
    if max_time <= confirm + 2 * min_step:
        raise ConfigError(
            f"--max-time: at least {confirm + 2 * min_step + 1:g}s, to hold two steps of "
            f"--min-step {min_step:g}s and the --confirm step of {confirm:g}s after them "
            f"(got {max_time:g}s; shorten those, or give a longer --max-time)"
        )


def _settings(
    plan: Plan,
    max_time: float,
    confirm: float,
    soak: float,
    interval: float,
    config: RunConfig,
    meter: Meter,
    backlog: str | None,
) -> dict[str, Any]:
    """_settings: how the search was set, as the result document records it."""
    return {
        "start": plan.start,
        "ceiling": plan.ceiling,
        "max_time_s": max_time,
        "min_step_s": plan.min_step_s,
        "max_step_s": plan.max_step_s,
        "ramp_s": plan.ramp,
        "confirm_s": confirm,
        "soak_s": soak,
        "interval_s": interval,
        "threads": config.get("threads"),
        "throughput": meter.spec,
        "throughput_unit": meter.unit,
        "backlog": backlog,
        "stop_at_knee": plan.stop_at_knee,
    }


def _first_load(model: str, start: float | None, cluster: ClusterOptions | None) -> float:
    """_first_load: the search's first load, ``start`` if given, else 1 user or 50 req/s (a
    cluster's closed model starts at one user an injector)."""
    first = start if start is not None else (1.0 if model == "closed" else 50.0)
    if cluster is not None and model == "closed" and start is None:
        # Each injector runs at least one VU: start where every one has its own.
        first = float(max(1, cluster_size(cluster)))
    return first


def _on_the_runs_clock(monitor: Any, started: float) -> Any:
    """_on_the_runs_clock starts ``monitor`` (None: none) if it is not yet, and reads it on the
    live run's clock, which started at ``started`` (time.monotonic())."""
    if monitor is None:
        return None
    if getattr(monitor, "_thread", None) is None:
        monitor.start(origin=started)
    # A monitor started earlier (--monitor-cmd starts the service first) is read on the
    # run's clock: t_s in seconds since the live run started.
    return Aligned(monitor, started - float(monitor.origin))


def _sampler(
    live: LiveRun, monitor: Any, parts: Parts | None = None
) -> Callable[[float, float], dict[str, Any]]:
    """_sampler: what the search reads beside the snapshots over a step's window: the
    generator's busy and waiting shares, the machine's, the monitored service's figures and
    each watched part's (``parts``)."""

    def sample(t0: float, t1: float) -> dict[str, Any]:
        figures: dict[str, Any] = {}
        if parts is not None:
            figures["parts"] = parts.window(t0, t1)
        busy = live.generator_busy(t0, t1)
        if busy is not None:
            figures["generator_busy"] = busy
        wait = live.generator_wait(t0, t1)
        if wait is not None:
            figures["generator_wait"] = wait
        machine = live.machine(t0, t1)
        if machine is not None:
            busy, workers, process = machine
            figures["machine_busy"], figures["generator_share"] = busy, workers
            figures["redline_share"] = process
        if monitor is not None:
            figures.update(monitor.window(t0, t1))
        return figures

    return sample


def _searched(
    search: Search, live: LiveRun, monitor: Any, confirm: float, soak: float, end_s: float
) -> tuple[Outcome, _Held, dict[str, Any], bool]:
    """_searched runs the search and, unless it was cut short or the service collapsed, the
    holds after it (:func:`_hold`); whatever happens, the live run finishes and the monitor
    stops. It returns the outcome, the steps held, the run's report, and whether the run was
    cut short (a Ctrl-C, a cluster that lost an injector)."""
    interrupted = False
    held = _Held()
    try:
        try:
            outcome = search.run()
        except KeyboardInterrupt:
            # Ctrl-C: the answers of the steps that ran, no confirmation.
            outcome, interrupted = search.interrupted(), True
        # A cluster that lost an injector stopped the run: nothing is left to confirm.
        interrupted = interrupted or live.failure is not None
        if not interrupted and outcome.collapse is None:
            _hold(search, outcome, held, confirm, soak, end_s)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        report = live.finish()
        if live.failure:
            # A cluster that lost an injector stopped the run: what ran is kept, as after
            # a Ctrl-C, and the search's outcome names the injector.
            interrupted = True
        if monitor is not None:
            monitor.stop()
    return outcome, held, report, interrupted


@dataclass
class _Held:
    """_Held: the steps held after the search, each kept as it ends (a Ctrl-C during the next
    keeps it): the confirmation at the steady load and the soak at the optimum."""

    confirmed: Step | None = None
    soaked: Step | None = None


def _hold(
    search: Search, outcome: Outcome, held: _Held, confirm: float, soak: float, end_s: float
) -> None:
    """_hold confirms the search's steady load for ``confirm`` s and soaks its optimum for
    ``soak`` s, in ``held``; a lighter load is confirmed instead of one that broke a limit
    held again, when ``end_s`` (--max-time on time.monotonic()) leaves room for the step."""
    # The confirmation is a step of the live run at the answer: warm connections,
    # users joining at the spawn rate, the judged window after the ramp.
    try:
        at = search.steady_load()
        # The search's deadline left confirm + 2 s of --max-time for this.
        end_by = search.deadline + confirm + 2.0
        if at is not None and confirm > 0:
            held.confirmed = search.hold(at, confirm, "confirm", end_by)
            # Held again, that load broke a limit: the steady state is lighter. Confirm
            # the search's answer under it, when --max-time leaves room for the step.
            lighter = None if held.confirmed.ok else search.steady_load(below=at)
            left = end_s - time.monotonic()
            if lighter is not None and left >= confirm + search.plan.ramp + 1.0:
                held.confirmed = search.hold(lighter, confirm, "confirm", end_by)
        if soak > 0 and outcome.optimal is not None:
            held.soaked = search.hold(outcome.optimal.load, soak, "soak")
    except Ended:
        pass


def search_run(
    options: RunOptions | None,
    option: dict[str, Any],
    model: str,
    first: float,
    duration: float,
) -> RunOptions:
    """search_run is the live run's options: the caller's (``options`` with the keywords
    ``option`` over them), a search's defaults for those left as None, and the load shape
    the search starts from (``first`` VUs or req/s, for ``duration`` seconds at most)."""
    given = replace(options, **option) if options is not None else RunOptions(**option)
    shaped = [name for name in LOAD_SHAPE if getattr(given, name) != getattr(RunOptions(), name)]
    if shaped:
        raise ConfigError(f"find: the search sets the load itself, not {', '.join(shaped)}")
    own: dict[str, Any] = {k: v for k, v in SEARCH_DEFAULTS.items() if getattr(given, k) is None}
    return replace(
        given,
        **own,
        connections=int(first) if model == "closed" else None,
        rate=first if model == "open" else None,
        duration=duration,
        warmup=0.0,
        open_model=model == "open",
    )


def steady_answer(best: Step | None, search: Search) -> tuple[Step | None, list[str]]:
    """steady_answer is the step that answers questions 1 and 2, with the notes that say
    where it came from: the last confirmation that held; without a confirmation, the
    search's own steady step (``best``). When every confirmation broke a limit, no load at
    or above the lightest of them is called steady: the search's steady step under it,
    said to be unconfirmed (a search step that met the SLO at a load whose confirmation a
    minute later did not is no steady state)."""
    confirms = [s for s in search.steps if s.phase == "confirm"]
    failed = [c for c in confirms if not c.ok]
    held = [c for c in confirms if c.ok]
    unit = "users" if search.plan.model == "closed" else "req/s"
    notes = [f"The confirmation at {c.load:g} {unit} broke a limit ({c.why})." for c in failed]
    if held:
        if failed:
            notes.append(f"Held at {held[-1].load:g} {unit} instead, it held: the steady state.")
        return held[-1], notes
    if not failed:
        return best, notes
    floor = min(c.load for c in failed)
    under = search.steady_step(below=floor)
    if under is None:
        notes.append("No lighter step of the search met every limit.")
    else:
        notes.append(
            f"The steady-state answer is the search's step at {under.load:g} {unit}, not"
            " confirmed: no confirmation at or under it was held (no time left in --max-time)"
            " or met every limit."
        )
    return under, notes
