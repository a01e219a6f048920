"""finder: ``redline find`` as a function. One live engine run: the search over it, then a
confirmation step at the answer in the same run, and the four answers.

    >>> from redline.find import find
    >>> result = find("http://127.0.0.1:8080/", model="closed", max_time=60)
    >>> result["answers"]["steady_state_throughput_rps"]

The result is a plain dict (the ``--json`` document): ``answers``, ``steps``, ``timeseries``,
``stop`` (which condition ended the search and why) and ``generator_limited`` (True when the
limit found is redline's own CPU, not the service's).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from redline.analysis.outcome import Meter
from redline.errors import ConfigError
from redline.find.rules import CONDITIONS, Limits, Slo
from redline.find.search import Ended, Outcome, Plan, Search
from redline.find.step import Step
from redline.runner import ClusterOptions, build_config, start_handle
from redline.usage import machine_cpu_s, worker_cpu_s

#: CONFIRM_S is how long the confirmation step at the answer lasts (after a 1 s warm-up).
CONFIRM_S = 10.0


class LiveRun:
    """LiveRun wraps the native run handle: snapshots as dicts, and the generator's own CPU
    (its worker threads' CPU time, read from /proc at each snapshot) for the saturation check.
    """

    def __init__(self, config: dict[str, Any], cluster: ClusterOptions | None = None):
        self.handle = start_handle(config, cluster)
        self.timeseries: list[dict[str, Any]] = []
        self._cpu: list[tuple[float, float, float, int]] = []
        #: _injector_cpu: a cluster run's worker CPU, per injector, at each snapshot
        #: ([ran_s, waited_s, threads], as :func:`worker_cpu_s`).
        self._injector_cpu: list[tuple[float, dict[str, list[float]]]] = []
        #: _machine: at each local snapshot, the workers' run time and the machine's busy and
        #: total CPU time (seconds; :func:`machine_cpu_s`).
        self._machine: list[tuple[float, float, float, float]] = []

    def set_target(self, value: float, ramp_s: float = 0.0) -> float:
        return float(self.handle.set_target(value, ramp_s))

    def next_snapshot(self, timeout_s: float) -> dict[str, Any] | None:
        raw = self.handle.next_snapshot(timeout_s)
        if raw is None:
            return None
        snap: dict[str, Any] = json.loads(raw)
        if "worker_cpu" in snap:
            self._injector_cpu.append((float(snap["t_s"]), snap["worker_cpu"]))
        else:
            cpu = worker_cpu_s()
            if cpu is not None:
                self._cpu.append((float(snap["t_s"]), *cpu))
                machine = machine_cpu_s()
                if machine is not None:
                    self._machine.append((float(snap["t_s"]), cpu[0], *machine))
        self.timeseries.append(snap)
        return snap

    @property
    def done(self) -> bool:
        return bool(self.handle.done)

    @property
    def failure(self) -> str | None:
        """failure: why a cluster run stopped on an injector it lost (None otherwise)."""
        failure = getattr(self.handle, "failure", None)
        return str(failure) if failure else None

    def generator_busy(self, t0: float, t1: float) -> float | None:
        """generator_busy is the CPU the workers wanted over [t0, t1] (ran or waited for) as a
        share of their threads' wall time."""
        shares = self._worker_shares(t0, t1)
        return None if shares is None else shares[0] + shares[1]

    def generator_wait(self, t0: float, t1: float) -> float | None:
        """generator_wait is the time the workers sat runnable without a CPU over [t0, t1],
        as a share of their threads' wall time: a generator starved by the machine (the
        service and other work on the same cores) sends and reads late, whatever its own
        load, and the figures then describe the machine."""
        shares = self._worker_shares(t0, t1)
        return None if shares is None else shares[1]

    def machine(self, t0: float, t1: float) -> tuple[float, float] | None:
        """machine is how busy this machine's CPUs were over [t0, t1] and the share of them
        redline's workers ran on (both shares of the machine's CPU time): a load generator
        that takes a good part of a saturated machine takes it from a service on the same
        machine. None on a cluster (the injectors' machines are not this one's)."""
        if self._injector_cpu:
            return None
        inside = [x for x in self._machine if t0 - 1e-6 <= x[0] <= t1 + 1e-6]
        if len(inside) < 2:
            return None
        (_, ra, ba, ta), (_, rb, bb, tb) = inside[0], inside[-1]
        if tb <= ta:
            return None
        return (bb - ba) / (tb - ta), (rb - ra) / (tb - ta)

    def _worker_shares(self, t0: float, t1: float) -> tuple[float, float] | None:
        """_worker_shares: (ran, waited) of the workers over [t0, t1], shares of wall time;
        on a cluster, the busiest injector's, so that a limit that is one injector's is named
        as the generator's."""
        if self._injector_cpu:
            return _busiest(self._injector_cpu, t0, t1)
        inside = [x for x in self._cpu if t0 - 1e-6 <= x[0] <= t1 + 1e-6]
        if len(inside) < 2 or inside[-1][0] <= inside[0][0] or inside[-1][3] == 0:
            return None
        (ta, ra, wa, _), (tb, rb, wb, n) = inside[0], inside[-1]
        wall = n * (tb - ta)
        return (rb - ra) / wall, (wb - wa) / wall

    def finish(self) -> dict[str, Any]:
        self.handle.stop()
        while not self.handle.done:
            if self.next_snapshot(0.5) is None and self.handle.done:
                break
        report: dict[str, Any] = json.loads(self.handle.report())
        return report


def _busiest(
    samples: list[tuple[float, dict[str, list[float]]]], t0: float, t1: float
) -> tuple[float, float] | None:
    """_busiest: (ran, waited) over [t0, t1], as shares of its worker threads' wall time, of
    the injector that wanted the most CPU, from the per-injector CPU each merged snapshot
    carries."""
    inside = [x for x in samples if t0 - 1e-6 <= x[0] <= t1 + 1e-6]
    if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
        return None
    (ta, a), (tb, b) = inside[0], inside[-1]
    shares = [
        ((b[k][0] - a[k][0]) / wall, (b[k][1] - a[k][1]) / wall)
        for k in b
        if k in a and (wall := b[k][2] * (tb - ta)) > 0
    ]
    return max(shares, key=sum) if shares else None


class Aligned:
    """Aligned shows a monitor's samples on the live run's clock (``offset``: the run's start
    in the monitor's time)."""

    def __init__(self, monitor: Any, offset: float):
        self.monitor = monitor
        self.offset = offset

    def window(self, t0: float, t1: float) -> dict[str, float]:
        return dict(self.monitor.window(t0 + self.offset, t1 + self.offset))

    def series(self) -> list[dict[str, Any]]:
        return [{**x, "t_s": x["t_s"] - self.offset} for x in self.monitor.series()]

    def stop(self) -> None:
        self.monitor.stop()


def cluster_size(cluster: ClusterOptions) -> int:
    """cluster_size: the injectors a cluster run will have, when known before it starts
    (``--injectors``, or local:N's N; else 1)."""
    from redline.cluster.address import parse_address

    return cluster.injectors or parse_address(cluster.address).injectors or 1


def find(
    url: str,
    *,
    model: str = "closed",
    slos: list[str] | tuple[str, ...] = (),
    max_errors: float | None = 0.01,
    max_time: float = 120.0,
    start: float | None = None,
    max_load: float | None = None,
    threads: int | None = None,
    method: str = "GET",
    headers: list[str] | tuple[str, ...] = (),
    body: str | bytes | None = None,
    timeout: str | float = "10s",
    interval: float = 0.5,
    min_step: float = 3.0,
    max_step: float = 15.0,
    confirm: float = CONFIRM_S,
    soak: float = 0.0,
    service_cpu: float | None = None,
    monitor: Any = None,
    generator_busy: float | None = 0.9,
    stop_at_knee: bool = False,
    throughput: str = "requests",
    ramp: float | None = None,
    plan: dict[str, Any] | None = None,
    scenario: str | None = None,
    on_snapshot: Callable[[dict[str, Any], float, str], None] | None = None,
    on_step: Callable[[Step], None] | None = None,
    cluster: ClusterOptions | None = None,
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
    says what counts: ``requests``, ``iterations`` (a scenario's) or one request name.
    ``plan`` (a compiled scenario, named ``scenario`` in the result) replaces the single
    request with the scenario's flows; ``url`` is then its host. ``cluster`` runs the
    search on Ray injectors, each step's load split across them (docs/distributed.md).
    """
    limits = Limits(
        max_errors=max_errors,
        slos=[Slo.parse(s) for s in slos],
        service_cpu=service_cpu,
        generator_busy=generator_busy,
    )
    meter = _meter(throughput, plan)
    if service_cpu is not None and monitor is None:
        raise ConfigError("a service CPU limit needs a monitored service (--monitor-...)")
    if max_time <= confirm + 2 * min_step:
        raise ConfigError(f"--max-time: at least {confirm + 2 * min_step + 1:g}s")
    first = start if start is not None else (1.0 if model == "closed" else 50.0)
    if cluster is not None and model == "closed" and start is None:
        # Each injector runs at least one VU: start where every one has its own.
        first = float(max(1, cluster_size(cluster)))
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
    config = build_config(
        url,
        connections=int(first) if model == "closed" else None,
        rate=first if model == "open" else None,
        duration=max_time + soak + 30.0,
        requests=None,
        stages=None,
        threads=threads,
        method=method,
        headers=headers,
        body=body,
        timeout=timeout,
        warmup=0.0,
        max_connections=None,
        interval=interval,
        open_model=model == "open",
    )
    config["live"] = True
    if plan is not None:
        # A compiled scenario (redline.scenario): each hit is one iteration of its flows.
        config["plan"] = plan
    if model == "closed":
        config["max_vus"] = int(ceiling)
        # More threads than the starting VUs would be cut to one: give the cap instead.
        config["connections"] = int(first)
    started_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    started = time.monotonic()
    live = LiveRun(config, cluster)
    if monitor is not None:
        if getattr(monitor, "_thread", None) is None:
            monitor.start(origin=started)
        # A monitor started earlier (--monitor-cmd starts the service first) is read on the
        # run's clock: t_s in seconds since the live run started.
        monitor = Aligned(monitor, started - float(monitor.origin))

    def sample(t0: float, t1: float) -> dict[str, float]:
        figures: dict[str, float] = {}
        busy = live.generator_busy(t0, t1)
        if busy is not None:
            figures["generator_busy"] = busy
        wait = live.generator_wait(t0, t1)
        if wait is not None:
            figures["generator_wait"] = wait
        machine = live.machine(t0, t1)
        if machine is not None:
            figures["machine_busy"], figures["generator_share"] = machine
        if monitor is not None:
            figures.update(monitor.window(t0, t1))
        return figures

    search = Search(
        live,
        steps_plan,
        limits,
        sample=sample,
        on_step=on_step,
        on_snapshot=on_snapshot,
        interval_s=interval,
        meter=meter,
    )
    interrupted = False
    confirmed: Step | None = None
    soaked: Step | None = None
    try:
        try:
            outcome = search.run()
        except KeyboardInterrupt:
            # Ctrl-C: the answers of the steps that ran, no confirmation.
            outcome, interrupted = search.interrupted(), True
        # A cluster that lost an injector stopped the run: nothing is left to confirm.
        interrupted = interrupted or live.failure is not None
        if not interrupted and outcome.collapse is None:
            # The confirmation is a step of the live run at the answer: warm connections,
            # users joining at the spawn rate, the judged window after the ramp.
            try:
                at = search.steady_load()
                # The search's deadline left confirm + 2 s of --max-time for this.
                end_by = search.deadline + confirm + 2.0
                if at is not None and confirm > 0:
                    confirmed = search.hold(at, confirm, "confirm", end_by)
                    # Held again, that load broke a limit: the steady state is lighter. Confirm
                    # the search's answer under it, when --max-time leaves room for the step.
                    lighter = None if confirmed.ok else search.steady_load(below=at)
                    left = max_time - (time.monotonic() - started)
                    if lighter is not None and left >= confirm + steps_plan.ramp + 1.0:
                        confirmed = search.hold(lighter, confirm, "confirm", end_by)
                if soak > 0 and outcome.optimal is not None:
                    soaked = search.hold(outcome.optimal.load, soak, "soak")
            except Ended:
                pass
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
    settings = {
        "start": first,
        "ceiling": ceiling,
        "max_time_s": max_time,
        "min_step_s": min_step,
        "max_step_s": max_step,
        "ramp_s": steps_plan.ramp,
        "confirm_s": confirm,
        "soak_s": soak,
        "interval_s": interval,
        "threads": config.get("threads"),
        "throughput": meter.spec,
        "stop_at_knee": stop_at_knee,
    }
    steady, notes = steady_answer(outcome.best, search)
    return _result(
        url,
        model,
        outcome,
        report,
        live.timeseries,
        steady,
        notes,
        confirmed,
        soaked,
        monitor,
        limits,
        settings,
        started_at,
        time.monotonic() - started,
        interrupted,
        scenario,
        meter,
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


def _meter(throughput: str, plan: dict[str, Any] | None) -> Meter:
    """_meter checks what ``--throughput`` counts: requests, a scenario's iterations, one of
    its request names, or the answers of a tallied name that said one value, optionally
    labelled (``submit=tasks`` and ``status:SUCCEEDED=tasks`` answer in tasks/s)."""
    try:
        meter = Meter.parse(throughput)
    except ValueError as e:
        raise ConfigError(f"--throughput {e}") from None
    if meter.what == "requests":
        return meter
    if plan is None:
        raise ConfigError(
            f"--throughput {throughput}: only a scenario has iterations, names or tallies"
        )
    if meter.what == "iterations":
        return meter
    names = _plan_names(plan)
    if meter.what not in names:
        listed = ", ".join(sorted(names)) or "none"
        raise ConfigError(
            f"--throughput {meter.what}: not a request name of the scenario (names: {listed})"
        )
    if meter.value is not None and meter.what not in _plan_names(plan, tallied=True):
        raise ConfigError(
            f"--throughput {throughput}: the scenario's '{meter.what}' requests have no"
            f' tally (write tally="$.status" on them)'
        )
    return meter


def _plan_names(plan: dict[str, Any], tallied: bool = False) -> set[str]:
    """_plan_names are the request names a compiled plan records under (``tallied``: only
    those of requests that tally a value)."""
    out: set[str] = set()

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            name = v.get("name")
            request = "method" in v or "path" in v or "url" in v
            if isinstance(name, str) and request and (v.get("tally") or not tallied):
                out.add(name)
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(plan)
    return out


def _result(
    url: str,
    model: str,
    outcome: Outcome,
    report: dict[str, Any],
    timeseries: list[dict[str, Any]],
    steady: Step | None,
    notes: list[str],
    confirmed: Step | None,
    soaked: Step | None,
    monitor: Any,
    limits: Limits,
    settings: dict[str, Any],
    started_at: str,
    elapsed_s: float,
    interrupted: bool,
    scenario: str | None,
    meter: Meter,
) -> dict[str, Any]:
    from redline import analysis

    steps: list[Step] = list(outcome.steps)
    searched = [s for s in steps if s.phase not in ("confirm", "soak")]
    notes = list(notes)
    # The leak check looks at the service while the load held still: the soak, else the
    # confirmation step (over a stepped search fds rise with the load, which is no leak).
    held = soaked or confirmed
    soak: list[dict[str, Any]] = []
    if monitor is not None and held is not None:
        soak = [x for x in monitor.series() if held.start_s <= x["t_s"] <= held.end_s]
    collapse = None
    if outcome.collapse is not None:
        collapse = dataclasses.asdict(outcome.collapse)
    analysed = analysis.analyse(
        searched,
        model=model,
        soak_samples=soak,
        steady=steady,
        limit=outcome.broke,
        reason=outcome.reason,
        detail=outcome.detail,
        optimal=outcome.optimal,
        unit=meter.unit,
        statuses=report.get("status_codes") or {},
        collapse=collapse,
        # steady_answer chose: None is no steady state, not "the best good step".
        pick_steady=False,
    )
    answers = analysed["answers"]
    drift = answers.get("repeat_drift")
    if drift is not None and steady is not None and steady.phase == "confirm":
        notes.append(
            f"The confirmation of {steady.load:g} users, held after the search, got"
            f" {abs(drift):.1%} {'less' if drift < 0 else 'more'} than the"
            " search's step at that load: the ± of the answers covers that as well as the"
            " noise inside each step."
        )
    host = host_note(searched, answers["limit"].get("capacity_rps"), meter.unit)
    if host:
        notes.append(host)
    answers["notes"] = notes
    broke = outcome.broke
    return {
        "version": 1,
        "url": url,
        "scenario": scenario,
        "model": model,
        "started_at": started_at,
        "duration_s": round(elapsed_s, 3),
        **analysed,
        "stop": {
            "condition": outcome.reason,
            "meaning": CONDITIONS.get(outcome.reason, ""),
            "detail": outcome.detail,
        },
        "generator_limited": broke is not None and "generator" in broke.fired,
        "interrupted": interrupted,
        "config": {
            **settings,
            "max_errors": limits.max_errors,
            "slos": [str(x) for x in limits.slos],
            "service_cpu": limits.service_cpu,
            "generator_busy": limits.generator_busy,
        },
        "steps": [x.to_dict() for x in steps],
        "timeseries": timeseries,
        "monitor": monitor.series() if monitor is not None else [],
        "run": {k: v for k, v in report.items() if k not in ("timeseries", "histograms")},
        "outages": report.get("outages") or [],
    }


def host_note(steps: list[Step], capacity: float | None, unit: str) -> str | None:
    """host_note says, when the monitor saw this machine's CPUs oversubscribed during the
    search (load average over the cores), that the capacity found is bounded by the CPU share
    the service was given, with that share at the capacity step and its range past it, and
    the service's work per CPU-second there (the figure that carries to another machine).
    None without a monitor or on a machine with CPU to spare."""
    cores = os.cpu_count() or 1
    loads = [float(s.service["load1"]) for s in steps if s.service.get("load1") is not None]
    if not loads or max(loads) <= cores or capacity is None:
        return None
    top = min(
        (s for s in steps if s.service.get("cpu_percent") is not None),
        key=lambda s: abs(s.throughput_rps - capacity),
        default=None,
    )
    if top is None:
        return None
    cpu = float(top.service["cpu_percent"])
    past = [
        round(float(s.service["cpu_percent"]))
        for s in steps
        if s.load >= top.load and s.service.get("cpu_percent") is not None
    ]
    moved = (
        f", and between {min(past)} % and {max(past)} % from there on"
        if min(past) != max(past)
        else ""
    )
    what = unit.removesuffix("/s")
    per_cpu = f" ({100.0 * top.throughput_rps / cpu:,.0f} {what} per CPU-second)" if cpu > 0 else ""
    return (
        f"This machine's CPUs were oversubscribed during the search (load average"
        f" {min(loads):.1f}-{max(loads):.1f} on {cores} cores; redline, the service and other"
        f" work share them): at its capacity the service got {cpu:.0f} % of a core{per_cpu}"
        f"{moved}. Its capacity here is set by the CPU the rest of the machine leaves it: a"
        " repeat moves with that load, by more than the ± of one run."
    )


def answers_text(result: dict[str, Any]) -> str:
    """answers_text says the four answers in sentences (the analysis wrote them)."""
    text = result["answers"].get("text") or {}
    lines = [
        f"{n}. {text[k]}"
        for n, k in enumerate(("throughput", "latency", "optimal", "limit"), start=1)
        if text.get(k)
    ]
    lines += [f"   {note}" for note in result["answers"].get("notes") or []]
    if result.get("generator_limited"):
        lines.append(
            "   This limit is redline's own or the machine's (the generator ran out of CPU, or"
            " waited for one it shared with the service), not the service's: give redline cores"
            " of its own (another machine) and search again."
        )
    return "\n".join(lines)


def write_json(result: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """write_json writes the result document."""
    Path(path).write_text(json.dumps(result, indent=2) + "\n")
