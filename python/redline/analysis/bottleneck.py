"""bottleneck: which part of the deployment ran out of what, by Brendan Gregg's USE method.

Each watched part's figures over each step (``--watch``; the generator is always a part) give
every resource's utilisation, and a resource is *saturated* when it has run out:

- ``cpu``: the part's CPU over the cores it may use (its affinity, cut by its cgroup quota:
  a process pinned to one core at 100 % of a core is saturated on a machine of 16), >= 90 %;
  or its busiest thread at 90 % of one core or more (``cpu_thread``: a part that runs one
  thread at a time, an event loop or Python's GIL, runs out at one core of the two it may
  use); or its threads waiting for a CPU (the run queue, ``cpu_wait``) half the time they could
  run or more: starved by other work on its cores, it reads as low CPU. A run queue that
  was saturated at the lightest step already is another tenant's doing, not the load's: it
  is said beside what is named, and not named itself; unless the part, pinned to fewer
  cores than the machine's, had threads that, starved, wanted as many CPUs as it may use
  (``runnable``: its CPU over the share of its runnable time it ran, at least 90 % of its
  cores; Gregg's CPU saturation, more runnable threads than CPUs): a process pinned to one
  core that other work shares gets a fraction of it, and whatever the tenant took, that
  core is what it ran out of. A part light on CPU (one that sleeps on a lock, a pool, its
  accept queue) never wants that many, however long it waits. (A part that may use every
  core is not judged so: on a machine other work fills, an event loop on a fifth of a
  core, waiting 90 % of the time, would want two CPUs by that count; the machine's cores
  are its limit only as below);
- ``memory``: resident memory over its limit (cgroup, else the machine's), >= 90 %;
- ``fds``: open files over RLIMIT_NOFILE, >= 90 %;
- ``pool``: an exporter's ``X_in_use`` over ``X_limit`` (or ``X_max``), >= 90 %;
- ``accept-queue``: connections waiting in the part's listening socket, one or more on
  average (workers that cannot keep up, whatever their CPU says);
- ``errors``: the part's error counters counting (over one a second) where they were not at
  the lightest step;
- ``backlog``: the ``--backlog`` gauge grew through the step;
- ``generator``: the one generator rule (:func:`redline.analysis.generator.generator_limited`,
  which the search's ``generator`` stop condition reads too): its workers runnable 90 % of
  the time or more (starved by another tenant, only where they still ran 5 % of it:
  requests to send, not only wake-ups), or, on a step that failed on latency, running 80 %
  of the time (nearly saturated: requests queue for a worker), waiting for a CPU a quarter
  of the time with no tenant to blame, or taking a quarter of a saturated machine. A
  generator starved by another tenant and not named is said beside what is.

A part's run queue that fills with the load while this machine's CPUs are saturated
(:data:`MACHINE_BUSY`) is no shortage of that part's: every part on the machine shares its
cores, and the one that waits is not the one that took them (``make scale-demo``'s nginx
waited for a CPU 75 % of the time on 8 % of a core, beside a generator on 109 %). There the
machine's cores are named (part ``machine``, resource ``cpu``) with who took them
(:func:`takers`). On a machine measured with CPU to spare, such a wait (of a part that may
use every core) is no shortage at all: threads that woke to a core busy for a moment (the
scale demo's origin, on 1 % of a core, waited 67 %); it is not named. Only where the
machine was not measured is it taken as the part's own. Where redline took a quarter of
the machine or more, it was measuring its own share of the machine, not the service; that
is the generator's rule's to say, so the machine is named here whoever took the most.

At the limit (the first step that broke a limit), a generator that was the limit there is
named (the stop condition says the same: what was measured there is redline's). Otherwise
the bottleneck is the saturated resource that ran out first: the one saturated at the
lightest load, ties going to the cause before the symptom (CPU, memory, fds, a pool; an
accept queue, errors and a backlog are what a saturated resource upstream shows). Nothing
saturated, on a limit that failed on latency: a part's CPU nearly saturated (:data:`NEAR`, its
share of the cores it may use or its busiest thread's of one core, and not so at a lighter
step) is named as what the requests queued for (:func:`_nearly`; a single server's response
time is its service time over 1 - U, five times it at 80 %, so an SLO breaks before a
step's mean CPU reads 90 %). Nothing saturated or nearly: no part is named, and the
evidence says what the figures point to.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from redline.analysis.generator import (
    BUSY,
    MACHINE_BUSY,
    NEAR,
    OTHERS,
    generator_limited,
    latency_failed,
    other_work,
    starved_by_others,
)

#: RESOURCES in the order a tie is broken (cause before symptom).
RESOURCES = ("generator", "cpu", "memory", "fds", "pool", "accept-queue", "errors", "backlog")

#: SATURATED: the utilisation from which a resource has run out (the accept queue, errors
#: and the backlog are judged on their own rules, see the module's text). A pool's is its
#: gauge's mean over the step's samples, one a second: over a step of 2-4 s one sample
#: caught between a release and the next take reads 3 of 4 (bench/bottleneck.py's pool, 6
#: users queueing for 4 slots on a quiet box, read 3.7 of 4 at its limit: 92 %, 2026-11-28
#: 23:17), so a pool at 90 % is full, as a CPU is.
SATURATED = {"cpu": 0.9, "memory": 0.9, "fds": 0.9, "pool": 0.9, "generator": BUSY}

#: NEARLY: the words of a CPU named nearly saturated (:func:`_nearly`), which the sentence
#: reads to say it nearly ran out rather than ran out.
NEARLY = "nearly saturated"

#: ERRORS_RATE: a part's error counters counting faster than this a second have started.
ERRORS_RATE = 1.0

#: RUN_QUEUE: a part whose threads waited for a CPU this share of their runnable time
#: (waited as long as they ran) was short of CPU, whatever its CPU % says.
RUN_QUEUE = 0.5

#: QUEUE_KEY: the key of a part's run-queue reading (its CPU % reading has none).
QUEUE_KEY = "run queue"

#: RUNNABLE_KEY: the key of a starved part's runnable reading: the CPUs its threads wanted
#: (ran or waited for), over the cores it may use.
RUNNABLE_KEY = "runnable"

#: THREAD_KEY: the key of a part's busiest-thread reading (``cpu_thread``: the most one of its
#: threads ran, a share of one core).
THREAD_KEY = "one thread"


def takers(step: Any) -> list[tuple[str, float]] | None:
    """takers are who took this machine's CPUs over ``step``, the most first, as shares of
    them: each watched part, redline (its whole process where measured, else its workers)
    and "other work" (the rest of the busy time); None where the machine was not measured."""
    busy = getattr(step, "machine_busy", None)
    mine = getattr(step, "redline_share", None)
    if mine is None:
        mine = getattr(step, "generator_share", None)
    if busy is None or mine is None:
        return None
    cores = float(os.cpu_count() or 1)
    out = [("generator", float(mine))]
    for name, f in (getattr(step, "parts", None) or {}).items():
        if f.get("cpu_percent") is not None:
            out.append((name, float(f["cpu_percent"]) / 100.0 / cores))
    out.append(("other work", max(0.0, busy - sum(x for _, x in out))))
    return sorted(out, key=lambda x: -x[1])


def machine_said(step: Any) -> str | None:
    """machine_said says who took this machine's CPUs over ``step`` when they were saturated
    (:data:`MACHINE_BUSY`); None where the machine had CPU to spare or was not measured."""
    busy, took = getattr(step, "machine_busy", None), takers(step)
    if busy is None or busy < MACHINE_BUSY or not took:
        return None
    shares = ", ".join(f"{name} {x:.0%}" for name, x in took if x >= 0.005)
    return (
        f"this machine's {os.cpu_count() or 1} cores were {busy:.0%} busy, shared by every"
        f" part on it ({shares} of them)"
    )


def machine_ran_out(step: Any, waiting: Reading) -> dict[str, Any] | None:
    """machine_ran_out is the bottleneck where ``waiting`` (a part's run queue) filled on a
    machine whose CPUs were saturated over ``step``: the machine's cores, shared, with who
    took them (where redline took enough of them to be the limit, the generator's rule named
    it first); None where the machine had CPU to spare or was not measured."""
    said = machine_said(step)
    if said is None:
        return None
    return {
        "part": "machine",
        "resource": "cpu",
        "utilisation": round(step.machine_busy, 4),
        "evidence": f"{said}; {waiting.part}'s {waiting.evidence.removeprefix('its ')}",
    }


@dataclass(frozen=True)
class Reading:
    """Reading is one resource of one part over one step: its utilisation (a share; the
    accept queue's length over its limit, errors a second for ``errors``), whether it was
    saturated, and the figures in words."""

    part: str
    resource: str
    utilisation: float
    saturated: bool
    evidence: str
    #: key tells apart several readings of one part and resource (its pools, by name).
    key: str = ""
    #: size: a pool's limit (of two pools full at once, the smaller is named).
    size: float = 0.0
    #: beside: what is said beside the bottleneck of this reading that is not named (the
    #: generator starved by another tenant).
    beside: str = ""


def readings(
    step: Any, backlog_part: str | None = None, generator_busy: float | None = BUSY
) -> list[Reading]:
    """readings are every resource's reading over one step: the generator's (its busy and
    waiting shares; saturated by the one generator rule, ``generator_busy`` its threshold),
    each watched part's (``step.parts``), and the backlog's."""
    out: list[Reading] = []
    busy, wait = getattr(step, "generator_busy", None), getattr(step, "generator_wait", None)
    limited = generator_limited(step, generator_busy)
    if busy is not None or limited is not None:
        out.append(
            Reading(
                "generator",
                "generator",
                limited.utilisation if limited is not None else busy or 0.0,
                limited is not None,
                limited.evidence
                if limited is not None
                else f"redline's workers busy {busy or 0.0:.0%} of the time"
                + (f", waiting for a CPU {wait:.0%}" if wait is not None else ""),
                beside=starved_by_others(step) or "",
            )
        )
    for name, figures in (getattr(step, "parts", None) or {}).items():
        out += part_readings(name, figures)
    if getattr(step, "backlog_growing", False):
        g = step.backlog_growth_rps or 0.0
        out.append(
            Reading(
                backlog_part or "the service",
                "backlog",
                g,
                True,
                f"the work waiting grew {g:.1f}/s to {step.backlog_mean or 0:.0f}",
            )
        )
    return out


def part_readings(name: str, f: dict[str, float]) -> list[Reading]:
    """part_readings are the readings of one watched part's figures ``f`` (a step's, or a
    run's: the means of its samples): CPU of the cores it may use and its run queue, memory,
    open files, each pool, the accept queue and its error counters."""
    out: list[Reading] = []
    cpu = f.get("cpu_percent")
    if cpu is not None:
        cores = f.get("cores_allowed") or float(os.cpu_count() or 1)
        u = cpu / 100.0 / cores
        out.append(
            Reading(
                name, "cpu", u, u >= SATURATED["cpu"], f"CPU {cpu:.0f} % of {cores:g} cores allowed"
            )
        )
    thread = f.get("cpu_thread")
    if thread is not None:
        text = (
            f"its busiest thread ran {100 * thread:.0f} % of one core (a part that runs one"
            " thread at a time, an event loop or Python's GIL, runs out at one core)"
        )
        out.append(Reading(name, "cpu", thread, thread >= SATURATED["cpu"], text, THREAD_KEY))
    wait = f.get("cpu_wait")
    pinned = (f.get("cores_allowed") or math.inf) < (os.cpu_count() or 1)
    if wait is not None and cpu is not None and pinned and wait >= RUN_QUEUE:
        out.append(_runnable(name, cpu, wait, f.get("cores_allowed")))
    if wait is not None:
        judged = cpu is not None and pinned
        # A pinned part's waits alone are no shortage: threads that wake together on one
        # core wait for each other (bench/bottleneck.py's pool on a core of its own, 16
        # cores: 61-63 % at 4 % of its core); its runnable reading judges it.
        text = f"its threads waited for a CPU {100 * wait:.0f} % of the time they could run"
        full = wait >= RUN_QUEUE and not judged
        out.append(Reading(name, "cpu", wait, full, text, QUEUE_KEY))
    for resource, used, limit, word in (
        ("memory", "rss_bytes", "memory_limit", "resident memory"),
        ("fds", "fds", "fds_limit", "open files"),
    ):
        if f.get(used) is not None and f.get(limit):
            u = f[used] / f[limit]
            text = f"{word} {f[used]:,.0f} of {f[limit]:,.0f}"
            out.append(Reading(name, resource, u, u >= SATURATED[resource], text))
    for key, v in f.items():
        if key.startswith("pool:") and f.get("pool_limit:" + key[5:]):
            most = f["pool_limit:" + key[5:]]
            u = v / most
            text = f"pool {key[5:]} held {v:.1f} of {most:g}"
            out.append(Reading(name, "pool", u, u >= SATURATED["pool"], text, key[5:], most))
    queue = f.get("accept_queue")
    if queue is not None:
        cap = f.get("accept_queue_limit")
        u = queue / cap if cap else queue
        text = f"accept queue {queue:.1f} connections waiting" + (
            f" (limit {cap:g})" if cap else ""
        )
        out.append(Reading(name, "accept-queue", u, queue >= 1.0, text))
    errors = f.get("errors_rate")
    if errors is not None:
        out.append(Reading(name, "errors", errors, errors > ERRORS_RATE, f"errors {errors:.1f}/s"))
    return out


def _runnable(name: str, cpu: float, wait: float, cores: float | None) -> Reading:
    """_runnable is a starved part's CPU demand: the CPUs its threads wanted on average (ran
    or waited for: its CPU over the share of its runnable time it ran) over the cores it
    may use; saturated at :data:`SATURATED`'s cpu share of them."""
    allowed = cores or float(os.cpu_count() or 1)
    wanted = cpu / 100.0 / max(1.0 - wait, 0.01)
    u = wanted / allowed
    text = (
        f"its threads wanted {wanted:.2f} CPUs of the {allowed:g} it may use (they ran"
        f" {cpu / 100.0:.2f} and waited for a CPU {100 * wait:.0f} % of the time they could run)"
    )
    return Reading(name, "cpu", u, u >= SATURATED["cpu"], text, RUNNABLE_KEY)


def name_bottleneck(
    steps: Sequence[Any],
    limit: Any,
    backlog_part: str | None = None,
    generator_busy: float | None = BUSY,
) -> dict[str, Any] | None:
    """name_bottleneck is ``answers.limit.bottleneck``: ``{"part", "resource",
    "utilisation", "evidence"}`` of the resource that ran out first at ``limit`` (the step
    that broke a limit), among the searched ``steps``; the generator where it was the limit
    there (the one rule the search's stop condition reads, ``generator_busy`` its threshold,
    None for the default); part and resource None, and the evidence saying what the figures
    point to, when nothing ran out. None without a limit step or without any part's
    figures."""
    if limit is None:
        return None
    busy = BUSY if generator_busy is None else generator_busy
    at = readings(limit, backlog_part, busy)
    searched = sorted(
        (
            s
            for s in steps
            if s.phase not in ("recover", "confirm", "soak") and s.load <= limit.load
        ),
        key=lambda s: s.load,
    )
    watched = any(getattr(s, "parts", None) for s in [*searched, limit])
    if not watched and not any(r.saturated for r in at):
        return None
    lightest = searched[0] if searched else None
    base = (
        {(r.part, r.resource, r.key): r for r in readings(lightest, backlog_part, busy)}
        if lightest
        else {}
    )
    saturated, beside = _ran_out([*searched, limit], limit, at, base, backlog_part, busy)
    gen = next((r for r in at if r.resource == "generator" and r.saturated), None)
    if gen is not None:
        return _generator_named(limit, gen, [r for _, r in saturated], at, base, beside)
    if not saturated:
        lighter = base if lightest is not None and lightest.load < limit.load else {}
        near = _nearly(limit, at, lighter)
        if near is not None:
            return {**near, "evidence": near["evidence"] + beside + _tenants(at, base)}
        said = _nothing(at) + _tenants(at, base) + beside
        return {"part": None, "resource": None, "utilisation": None, "evidence": said}
    # Ties: cause before symptom; of two pools full at once, the smaller (the larger's
    # holders wait on it: 100 task slots held by tasks waiting for 10 connections).
    # At one load, of two parts short of CPU the busier (the one a saturated machine's
    # cores went to, not a part on 1 % of a core that waited beside it).
    since, top = min(
        saturated,
        key=lambda x: (
            x[0],
            RESOURCES.index(x[1].resource),
            x[1].size,
            -_cpu(limit, x[1].part),
        ),
    )
    # A part pinned to fewer cores than the machine's ran out of its own (whoever shares
    # them); one that may use them all ran out of the machine's.
    cores = os.cpu_count() or 1
    whole = (_allowed(limit, top.part) or cores) >= cores
    queue = top.key in (QUEUE_KEY, RUNNABLE_KEY) and whole
    shared = machine_ran_out(limit, top) if queue else None
    if shared is not None:
        return shared
    unit = "users" if getattr(limit, "model", "closed") == "closed" else "req/s"
    others = [
        r for r in at if r.part == top.part and r.resource == "cpu" and r is not top and r.key == ""
    ]
    beside = (f", while its {others[0].evidence}" if others else "") + beside
    return {
        "part": top.part,
        "resource": top.resource,
        "utilisation": round(top.utilisation, 4),
        "evidence": f"{top.evidence} at {limit.load:g} {unit}"
        + (f" (saturated from {since:g} {unit} on)" if since < limit.load else "")
        + beside
        + _tenants(at, base),
    }


def _ran_out(
    steps: Sequence[Any],
    limit: Any,
    at: Sequence[Reading],
    base: dict[tuple[str, str, str], Reading],
    backlog_part: str | None,
    busy: float,
) -> tuple[list[tuple[float, Reading]], str]:
    """_ran_out is what ran out by ``limit`` over ``steps`` (lightest first, the limit last),
    each with the load it ran out from, the generator left to its rule, and what is said
    beside it: run queues that waited for another tenant's work."""
    # What ran out at the limit, or at a lighter step and not seen free at the limit (an
    # exporter that stopped answering under the overload has no figures there).
    seen = {(r.part, r.resource, r.key): r for r in at}
    first: dict[tuple[str, str, str], tuple[float, Reading]] = {}
    for s in steps:
        for r in readings(s, backlog_part, busy):
            k = (r.part, r.resource, r.key)
            if r.saturated and k not in first and not _already(r, base):
                first[k] = (float(s.load), seen.get(k, r))
    # The generator is judged at the limit alone, by its rule (as the stop condition is).
    saturated = [
        (load, r)
        for k, (load, r) in first.items()
        if seen.get(k, r).saturated and r.resource != "generator"
    ]
    # A run queue that filled while half the machine or more went to other work waited for
    # that work (another tenant): said beside, not named (as a starved generator).
    tenant = (other_work(limit) or 0.0) >= OTHERS
    waited = [r for _, r in saturated if tenant and r.key == QUEUE_KEY]
    saturated = [(load, r) for load, r in saturated if r not in waited]
    beside = "".join(
        f"; {r.part}'s {r.evidence.removeprefix('its ')}, for other work on this machine"
        f" ({other_work(limit):.0%} of its CPUs went to neither redline nor a watched part)"
        for r in waited
    )
    # A part that may use every core, waiting for one on a machine with CPU to spare, was
    # short of nothing: its threads woke to a core busy for a moment (make scale-demo's
    # origin, on 1 % of a core, waited 67 % of its runnable time on a quiet box and was
    # named, 2026-11-28 22:58). Only a saturated machine (named below) or one not measured
    # makes such a wait a shortage.
    cores = os.cpu_count() or 1
    machine = getattr(limit, "machine_busy", None)
    spare = machine is not None and machine < MACHINE_BUSY
    saturated = [
        (load, r)
        for load, r in saturated
        if not (spare and r.key == QUEUE_KEY and (_allowed(limit, r.part) or cores) >= cores)
    ]
    return saturated, beside


def _nearly(
    limit: Any, at: Sequence[Reading], lighter: dict[tuple[str, str, str], Reading]
) -> dict[str, Any] | None:
    """_nearly is the bottleneck where no resource ran out but ``limit`` failed on latency
    while a part's CPU was nearly saturated (:data:`NEAR` of the cores it may use, or its
    busiest thread of one core) and was not so at the lightest step (``lighter``, empty
    where the limit is that step): the busiest such reading; None otherwise (refusals and
    errors are the service's own answer, not a queue for a CPU)."""
    if not latency_failed(getattr(limit, "fired", ())):
        return None

    def grew(r: Reading) -> bool:
        first = lighter.get((r.part, r.resource, r.key))
        return first is None or first.utilisation < NEAR

    near = [
        r
        for r in at
        if r.resource == "cpu" and r.key in ("", THREAD_KEY) and r.utilisation >= NEAR and grew(r)
    ]
    if not near:
        return None
    top = max(near, key=lambda r: r.utilisation)
    unit = "users" if getattr(limit, "model", "closed") == "closed" else "req/s"
    return {
        "part": top.part,
        "resource": "cpu",
        "utilisation": round(top.utilisation, 4),
        "evidence": f"{top.evidence} at {limit.load:g} {unit}: {NEARLY} (no resource"
        f" reached {SATURATED['cpu']:.0%}, but at {top.utilisation:.0%} requests queue for"
        " its CPU, which explains the latency that failed)",
    }


def _generator_named(
    limit: Any,
    gen: Reading,
    saturated: list[Reading],
    at: Sequence[Reading],
    base: dict[tuple[str, str, str], Reading],
    beside: str,
) -> dict[str, Any]:
    """_generator_named is the bottleneck where the generator was the limit at ``limit``
    (:func:`redline.analysis.generator.generator_limited`): what was measured there is
    redline's, whatever else ran out (``saturated``, said beside it), and who took a
    saturated machine's cores."""
    unit = "users" if getattr(limit, "model", "closed") == "closed" else "req/s"
    machine = machine_said(limit)
    also = "".join(f"; {r.part}'s {r.evidence.removeprefix('its ')}" for r in saturated)
    return {
        "part": "generator",
        "resource": "generator",
        "utilisation": round(gen.utilisation, 4),
        "evidence": f"{gen.evidence} at {limit.load:g} {unit}: the limit measured there is"
        " redline's, not the service's"
        + (f"; {machine}" if machine else "")
        + also
        + beside
        + _tenants([r for r in at if r.part != "generator"], base),
    }


def _cpu(step: Any, part: str) -> float:
    """_cpu: ``part``'s CPU % over ``step`` (0 where not read)."""
    figures = (getattr(step, "parts", None) or {}).get(part) or {}
    return float(figures.get("cpu_percent") or 0.0)


def _allowed(step: Any, part: str) -> float | None:
    """_allowed: the cores ``part`` may use over ``step`` (None where not read)."""
    figures = (getattr(step, "parts", None) or {}).get(part) or {}
    return figures.get("cores_allowed")


def _tenants(at: Sequence[Reading], base: dict[tuple[str, str, str], Reading]) -> str:
    """_tenants says the parts starved of CPU at the lightest step already and still at the
    limit: other work on their cores (another tenant), not named, but said."""
    starved = [
        r
        for r in at
        if r.key == QUEUE_KEY
        and r.utilisation >= RUN_QUEUE
        and (first := base.get((r.part, r.resource, r.key))) is not None
        and first.utilisation >= RUN_QUEUE
    ]
    return "".join(
        f"; {r.part}'s {r.evidence.removeprefix('its ')} from the lightest load on (other"
        " work on its cores)"
        for r in starved
    ) + "".join(
        f"; {said}" for r in at if r.part == "generator" and (said := getattr(r, "beside", ""))
    )


def _already(r: Reading, base: dict[tuple[str, str, str], Reading]) -> bool:
    """_already: errors that counted at the lightest step too did not start with the load,
    and a run queue saturated there already is another tenant's."""
    first = base.get((r.part, r.resource, r.key))
    return (r.resource == "errors" or r.key == QUEUE_KEY) and first is not None and first.saturated


def _nothing(at: Sequence[Reading]) -> str:
    """_nothing says what the figures point to when no resource ran out: the busiest one,
    and that latency grew with every watched resource short of its limit."""
    busiest = max(
        (r for r in at if r.resource in SATURATED and r.key != QUEUE_KEY),
        key=lambda r: r.utilisation,
        default=None,
    )
    most = (
        f" (the busiest: {busiest.part}'s {busiest.evidence.removeprefix('its ')})"
        if busiest
        else ""
    )
    return (
        "no watched resource ran out" + most + ": the limit is something no part exports,"
        " such as a concurrency limit or a lock inside a part, or a part not watched"
    )


def bottleneck_sentence(b: dict[str, Any] | None) -> str | None:
    """bottleneck_sentence says the bottleneck in one sentence (None without one)."""
    if not b:
        return None
    if b.get("part") is None:
        return f"Bottleneck: none named: {b['evidence']}."
    if b["part"] == "machine":
        return f"Bottleneck: this machine's CPUs ran out first: {b['evidence']}."
    what = {"accept-queue": "accept queue", "generator": "CPU (the load generator itself)"}
    resource = what.get(b["resource"], b["resource"])
    ran = "nearly ran out" if NEARLY in b["evidence"] else "ran out first"
    return f"Bottleneck: {b['part']}'s {resource} {ran} ({b['utilisation']:.0%}): {b['evidence']}."
