"""document: a search's result document (the ``--json`` dict :func:`redline.find.find`
returns: the answers and their notes, the steps, the time series, the stop condition, the
settings), the note on an oversubscribed machine, the answers in sentences, and the file."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from redline.analysis.bottleneck import bottleneck_sentence, name_bottleneck
from redline.analysis.outcome import Meter
from redline.find.ending import Outcome, spoiled_text
from redline.find.rules import CONDITIONS, Limits
from redline.find.step import Step
from redline.output import write_text


# long: the document's every key in one place, as the schema lists them.
def result_document(
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
    watched: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """result_document builds the ``--json`` document of a search from its outcome, the
    engine's report and time series, the steady answer and its notes, the confirmation and
    soak steps, the monitor's series and the settings the search ran with."""
    from redline import analysis

    steps: list[Step] = list(outcome.steps)
    searched = [s for s in steps if s.phase not in ("confirm", "soak")]
    collapse = None
    if outcome.collapse is not None:
        collapse = dataclasses.asdict(outcome.collapse)
    analysed = analysis.analyse(
        searched,
        model=model,
        soak_samples=_held_samples(monitor, soaked or confirmed),
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
    watched = watched or {"specs": {}, "series": {}, "backlog_part": None}
    # The generator's rule at the limit is the stop condition's (the same threshold).
    bottleneck = name_bottleneck(
        searched, outcome.broke, watched.get("backlog_part"), limits.generator_busy
    )
    answers["limit"]["bottleneck"] = bottleneck
    answers["notes"] = _notes(notes, answers, steady, searched, meter)
    for x in outcome.spoiled:  # a step a lost injector spoiled (a cluster run)
        said = spoiled_text(x, model)
        answers["notes"].append(f"{said[0].upper()}{said[1:]}.")
    named = bottleneck_sentence(bottleneck)
    if named:
        answers["notes"].append(named)
    broke = outcome.broke
    # --stream: the steady answer's and the limit's stream figures (TTFT, ITL, first byte,
    # gaps), as their steps measured them, beside their latency.
    if steady is not None and steady.stream:
        answers["stream"] = steady.stream
    if broke is not None and broke.stream:
        answers["limit"]["stream"] = broke.stream
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
        "spoiled": outcome.spoiled,
        "timeseries": timeseries,
        "monitor": monitor.series() if monitor is not None else [],
        "parts": {"specs": watched["specs"], "series": watched["series"]},
        "run": {k: v for k, v in report.items() if k not in ("timeseries", "histograms")},
        "outages": report.get("outages") or [],
    }


def _held_samples(monitor: Any, held: Step | None) -> list[dict[str, Any]]:
    """_held_samples: the monitor's samples while the load ``held`` still (none without a
    monitor or such a step)."""
    # The leak check looks at the service while the load held still: the soak, else the
    # confirmation step (over a stepped search fds rise with the load, which is no leak).
    soak: list[dict[str, Any]] = []
    if monitor is not None and held is not None:
        soak = [x for x in monitor.series() if held.start_s <= x["t_s"] <= held.end_s]
    return soak


def _notes(
    notes: list[str],
    answers: dict[str, Any],
    steady: Step | None,
    searched: list[Step],
    meter: Meter,
) -> list[str]:
    """_notes: the steady answer's ``notes``, then the drift of its confirmation from the
    search's step at that load and the note on an oversubscribed machine, when they apply."""
    notes = list(notes)
    drift = answers.get("repeat_drift")
    if drift is not None and steady is not None and steady.phase == "confirm":
        notes.append(
            f"The confirmation of {steady.load:g} users, held after the search, got"
            f" {abs(drift):.1%} {'less' if drift < 0 else 'more'} than the"
            " search's step at that load: the ± of the answers covers that as well as the"
            " noise inside each step."
        )
    limit = answers["limit"]
    host = host_note(searched, limit.get("capacity_rps"), meter.unit, limit.get("bottleneck"))
    if host:
        notes.append(host)
    return notes


def host_note(
    steps: list[Step],
    capacity: float | None,
    unit: str,
    bottleneck: dict[str, Any] | None = None,
) -> str | None:
    """host_note says, when the monitor saw this machine's CPUs oversubscribed during the
    search (load average over the cores), that the capacity found is bounded by the CPU share
    the service was given, with that share at the capacity step and its range past it, and
    the service's work per CPU-second there (the figure that carries to another machine);
    where the ``bottleneck`` named is a resource other than a CPU (a pool, an accept queue),
    that the capacity is that resource's and not the CPU share's. None without a monitor or
    on a machine with CPU to spare."""
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
    said = (
        f"This machine's CPUs were oversubscribed during the search (load average"
        f" {min(loads):.1f}-{max(loads):.1f} on {cores} cores; redline, the service and other"
        f" work share them): at its capacity the service got {cpu:.0f} % of a core{per_cpu}"
        f"{moved}."
    )
    other = (bottleneck or {}).get("resource")
    if bottleneck is not None and other is not None and other not in ("cpu", "generator"):
        # A pool ran out before the CPU: the capacity is the pool's, whatever the CPU share.
        return (
            f"{said} The limit named below is not that share but {bottleneck_part(bottleneck)}:"
            " the capacity should hold on a quieter machine."
        )
    return (
        f"{said} Its capacity here is set by the CPU the rest of the machine leaves it: a"
        " repeat moves with that load, by more than the ± of one run."
    )


def bottleneck_part(b: dict[str, Any]) -> str:
    """bottleneck_part: the named part's resource in words (``taskqueue's pool``)."""
    what = {"accept-queue": "accept queue"}.get(b["resource"], b["resource"])
    return f"{b['part']}'s {what}"


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
    """write_json writes the result document (to stdout for ``"-"``)."""
    write_text(path, json.dumps(result, indent=2))
