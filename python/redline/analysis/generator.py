"""generator: when the load generator, not the service, was the limit of a step. One rule,
read in two places: the search's stop condition (:mod:`redline.find.judge` fires
``generator`` on the step) and the bottleneck at the limit (:mod:`redline.analysis.bottleneck`
names the part ``generator``). Both read :func:`generator_limited`, so a page never stops
"because the generator" while its bottleneck names something else, or the reverse.

A step carries redline's workers' shares of their wall time: ``generator_busy`` (runnable:
they ran or waited for a CPU) and ``generator_wait`` (they waited); what they *ran* is the
difference. It may carry the machine's: ``machine_busy``, ``generator_share`` (the workers'
share of the machine's CPUs) and ``redline_share`` (the whole process's).

The generator ran out of CPU over a step (:func:`generator_ran_out`, a limit by itself) when
its workers were runnable :data:`BUSY` of the time or more: no time left to send more. Where
work that is neither redline's nor any watched part's took half the machine's CPUs or more
(:func:`starved_by_others`: another tenant, other engineers' builds on a shared box), being
runnable is mostly waiting for that work, and it counts only when the workers still *ran*
:data:`RAN` (5 %) of the time or more: they had requests to send, not only wake-ups to wait for.

A generator explains a step that failed on latency (:func:`generator_explains`: an SLO, a
backlog, a plateau; never refusals or errors, which are the service's own answer) when its
workers *ran* :data:`NEAR` of the time or more (:func:`generator_queued`: requests queued for
a worker nearly saturated, as they queue for a CPU at that utilisation), or, starved
(:func:`generator_starved`), when with no tenant to blame they waited for a CPU
:data:`STARVED` of the time or more, or redline took :data:`SHARED` of a saturated machine
(:func:`shared_machine`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

#: BUSY: redline's workers runnable this share of their time have no time left to send more
#: (the default of :class:`redline.find.rules.Limits`' ``generator_busy``).
BUSY = 0.9

#: RAN: a generator starved by another tenant that still ran this share of its workers' time
#: had requests to send. Measured on the busy 2-core box (bench/bottleneck.py, with and without
#: --tenant, bench/results/bottleneck.md 2026-11-29 00:05-00:13): at their limit the generator
#: deployment's workers were runnable 91-106 % of the time and ran 20-36 %, and 6-21 % with a
#: process spinning on their core; where the service was the limit (the pool deployment) they
#: ran 1-3 % (runnable 9-73 %), and 2-4 % in the demo's (2026-11-28). A tenth, the first
#: reading, missed the generator starved to 6-8 % (runnable 103-106 %).
RAN = 0.05

#: NEAR: redline's workers that ran this share of their time or more, on a step that failed
#: on latency, explain that failure: a worker is a single server, and requests queue for it
#: before it is saturated (a single server's response time is its service time over 1 - U:
#: five times it at 80 %, and the open model measures from the scheduled send time). Seen on
#: the quiet box (bench/results/bottleneck.md 2026-11-29 02:15, the generator deployment in
#: the open model): two of five searches broke p99 < 50 ms at 80,000 req/s with the one
#: worker runnable 86-89 % of the time (ran 85-86 %), under BUSY: no limit was named. Where a
#: service was the limit they ran 1-6 % (quiet) and 1-3 % (busy, with a tenant on their core).
NEAR = 0.8

#: STARVED: a failing step whose generator workers sat runnable without a CPU for this share
#: of their time or more is the machine's limit, not the service's: a worker that waits for
#: a CPU a quarter of the time sends and reads late by scheduler slices (milliseconds), which
#: on a service answering in 0.1 ms is the whole latency measured. Seen on 2 shared cores:
#: the immediate target's failing open-model steps had their workers waiting 45-55 %, a
#: 10 ms capacity queue's under 5 %.
STARVED = 0.25

#: MACHINE_BUSY, SHARED: a failing step on a machine whose CPUs were this busy, of which
#: redline ran on this share or more, is the machine's limit: the generator took the CPU a
#: service on the same machine needed. Seen on 2 shared cores: the immediate target's failing
#: open-model steps had the workers at 33-50 % of the machine (and waiting for a CPU only
#: 9-21 % of their time, under STARVED); `make demo`'s at 1-10 % of it.
MACHINE_BUSY = 0.9
SHARED = 0.25

#: OTHERS: the share of the machine's CPUs that, gone to neither redline nor any watched
#: part, makes a starved generator another tenant's doing. Seen on 2 shared cores at load
#: 11-20: `make demo`'s deployment (redline 1-2 %, taskqueue 10 %, the origin 1 % of the
#: machine) beside 85-90 % of other work, redline waiting for a CPU 35-68 % of the time.
OTHERS = 0.5

#: LATENCY_FAILURES: the stop conditions a starved generator explains (not refusals).
LATENCY_FAILURES = frozenset({"backlog", "slo", "collapse", "plateau", "retrograde"})


@dataclass(frozen=True)
class GeneratorLimit:
    """GeneratorLimit is the generator's limit over a step: its utilisation (the workers'
    runnable share, or redline's share of a saturated machine) and why, in words."""

    utilisation: float
    evidence: str


def other_work(step: Any) -> float | None:
    """other_work is the share of this machine's CPUs that went to neither redline nor any
    watched part over ``step`` (its ``machine_busy`` less redline's share, its whole process
    where measured, else its workers', and each part's CPU); None where the machine was not
    measured or no part's CPU was (without the deployment's CPU, the service's work and a
    tenant's cannot be told apart)."""
    busy, share = getattr(step, "machine_busy", None), getattr(step, "redline_share", None)
    if share is None:
        share = getattr(step, "generator_share", None)
    parts = getattr(step, "parts", None) or {}
    cpus = [float(f["cpu_percent"]) for f in parts.values() if f.get("cpu_percent") is not None]
    if busy is None or share is None or not cpus:
        return None
    return max(0.0, busy - share - sum(cpus) / 100.0 / (os.cpu_count() or 1))


def starved_by_others(step: Any) -> str | None:
    """starved_by_others says why redline's workers waited for a CPU over ``step`` when they
    waited a quarter of the time or more (:data:`STARVED`) for work that is not the
    deployment's (:data:`OTHERS`); None otherwise."""
    wait, others = getattr(step, "generator_wait", None), other_work(step)
    if wait is None or wait < STARVED or others is None or others < OTHERS:
        return None
    return (
        f"redline's workers waited for a CPU {wait:.0%} of the time, for other work on this"
        f" machine ({others:.0%} of its CPUs went to neither redline nor a watched part):"
        " their figures carry that wait, the deployment's limit is read on"
    )


def generator_ran_out(step: Any, busy_limit: float = BUSY) -> GeneratorLimit | None:
    """generator_ran_out is the generator's limit over ``step`` when its workers were
    runnable ``busy_limit`` of the time or more (and, starved by another tenant, still ran
    :data:`RAN` of it); None otherwise or where they were not measured."""
    busy = getattr(step, "generator_busy", None)
    if busy is None or busy < busy_limit:
        return None
    wait = getattr(step, "generator_wait", None) or 0.0
    said = f"redline's worker threads ran or waited for a CPU {busy:.0%} of the time"
    if starved_by_others(step) is None:
        return GeneratorLimit(busy, said + ": the load generator had no time left to send more")
    ran = busy - wait
    if ran < RAN:
        return None  # waiting on the tenant's work for wake-ups: no requests left to send
    return GeneratorLimit(
        busy,
        f"{said} and ran {ran:.0%} of it, while {other_work(step):.0%} of this machine's CPUs"
        " went to neither redline nor a watched part: it had requests to send on the CPU that"
        " other work left it",
    )


def shared_machine(step: Any) -> str | None:
    """shared_machine says why a failing step is the machine's limit when its CPUs were
    saturated (:data:`MACHINE_BUSY`) and redline ran on :data:`SHARED` of them or more;
    None otherwise (or where the machine was not measured: a cluster's injectors)."""
    busy = getattr(step, "machine_busy", None)
    # Its whole process where measured: the search and the watching in Python take the
    # machine's CPU from the service as the workers do (the scale demo: 109 % of a core).
    whole, mine = getattr(step, "redline_share", None), getattr(step, "generator_share", None)
    share = whole if whole is not None else mine
    if busy is None or share is None or busy < MACHINE_BUSY or share < SHARED:
        return None
    who = "redline took" if whole is not None else "redline's worker threads ran on"
    return (
        f"this machine's CPUs were {busy:.0%} busy and {who}"
        f" {share:.0%} of them: the load generator took the CPU a service on the same machine"
        " needed, so the machine's CPUs were the limit (give each its own cores: taskset)"
    )


def generator_queued(step: Any) -> GeneratorLimit | None:
    """generator_queued is the generator's limit over a step that failed on latency when its
    workers ran :data:`NEAR` of the time or more (what they ran, not what they waited for:
    a generator starved by another tenant is :func:`generator_ran_out`'s and
    :func:`generator_starved`'s to judge); None otherwise or where they were not measured."""
    busy = getattr(step, "generator_busy", None)
    if busy is None:
        return None
    ran = busy - (getattr(step, "generator_wait", None) or 0.0)
    if ran < NEAR:
        return None
    return GeneratorLimit(
        ran,
        f"redline's worker threads ran {ran:.0%} of the time: nearly saturated, requests"
        " queued for them to be sent and read (at that utilisation a single worker's queue"
        " alone explains the latency that failed)",
    )


def generator_explains(step: Any) -> GeneratorLimit | None:
    """generator_explains is the generator's limit over a step that failed on latency: its
    workers nearly saturated (:func:`generator_queued`) or starved
    (:func:`generator_starved`); None otherwise."""
    queued = generator_queued(step)
    return queued if queued is not None else generator_starved(step)


def generator_starved(step: Any) -> GeneratorLimit | None:
    """generator_starved is the generator's limit over a step that failed on latency, when
    its workers, with no other tenant to blame, waited for a CPU :data:`STARVED` of the time
    or more, or redline took :data:`SHARED` of a saturated machine; None otherwise."""
    wait = getattr(step, "generator_wait", None) or 0.0
    if starved_by_others(step) is None and wait >= STARVED:
        return GeneratorLimit(
            wait,
            f"redline's worker threads waited for a CPU {wait:.0%} of the time: the"
            " machine's CPUs, shared with the service, were the limit",
        )
    shared = shared_machine(step)
    if shared is None:
        return None
    whole = getattr(step, "redline_share", None)
    return GeneratorLimit(whole if whole is not None else step.generator_share, shared)


def latency_failed(fired: Any) -> bool:
    """latency_failed: the conditions ``fired`` on a step include a latency failure and no
    errors (refusals are the service's answer, whoever was starved)."""
    kinds = set(fired or ())
    return bool(kinds & LATENCY_FAILURES) and "errors" not in kinds


def generator_limited(step: Any, busy_limit: float | None = BUSY) -> GeneratorLimit | None:
    """generator_limited is the one generator rule: the generator was the limit of ``step``
    (with the conditions that fired on it, ``step.fired``) when it ran out
    (:func:`generator_ran_out`), or, nearly saturated or starved, explains the latency
    failure that fired (:func:`generator_explains`). ``busy_limit`` None switches the rule
    off (None)."""
    if busy_limit is None:
        return None
    ran_out = generator_ran_out(step, busy_limit)
    if ran_out is not None:
        return ran_out
    return generator_explains(step) if latency_failed(getattr(step, "fired", ())) else None
