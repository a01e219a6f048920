"""documents: reading ``redline run`` and ``redline find`` results into stretches to compare.

All knowledge of the result documents' fields is here (docs/schema/result.schema.json and
find.schema.json), so a change of those fields is adapted in this one module:

- a run: the run-wide stretch is its interval snapshots after warm-up (``timeseries``); each
  request name of a scenario is a stretch of its own, its snapshots being each interval's
  ``names: {NAME: {requests, errors, errors_by_class, histogram}}``. A result written before
  the engine kept per-name intervals has the names' whole-run figures only (``per_name``):
  those names get totals and no windows (shown, not judged).
- a find: each answer is the step it was measured in (``answers`` names the optimal and the
  limit step; the steady state is the confirmation step), and the step's stretch is its
  intervals in ``timeseries``, counted in the search's unit of throughput
  (``config.throughput``: a request name's requests, e.g. taskqueue's ``submit`` as tasks,
  or a scenario's iterations), so a comparison's goodput is the answers' (latency stays the
  whole step's, as the answers' latency is).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from redline.analysis.outcome import Meter
from redline.compare.figures import Figure
from redline.compare.windows import Stretch
from redline.errors import RedlineError

#: WHOLE_RUN names a run's run-wide stretch.
WHOLE_RUN = "all"

#: STEADY, OPTIMAL and LIMIT name a find result's stretches, its answers 1-2, 3 and 4.
STEADY, OPTIMAL, LIMIT = "steady state", "optimal", "limit"

_EPS = 1e-6


class Kind(Enum):
    """Kind is what a result document is the result of."""

    RUN = "run"
    FIND = "find"


@dataclass
class Document:
    """Document is a result read from a file: its ``kind``, a short ``label`` (the file's
    name), the ``stretches`` to compare by name, and ``facts``: figures that are the
    result of a search rather than measurements (the load it settled on, why it stopped),
    shown side by side without a verdict."""

    path: str
    kind: Kind
    data: dict[str, Any]
    stretches: dict[str, Stretch]
    facts: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """label: the file's name, how tables and charts name the result."""
        return Path(self.path).name

    @property
    def description(self) -> str:
        """description: one line saying what was measured."""
        d = self.data
        # A find names its scenario file in ``scenario``; a run's ``scenario`` is its
        # flows' figures, and its ``url`` the host.
        scenario = d.get("scenario")
        what = "scenario " if isinstance(scenario, dict) else ""
        target = scenario if isinstance(scenario, str) else d.get("url") or "?"
        return f"{self.kind.value} of {what}{target} ({d.get('model', '?')} model)"


def load(path: str | Path) -> Document:
    """load reads a result file; anything that is not a redline run or find result raises
    :class:`RedlineError` with one line saying why."""
    name = str(path)
    try:
        data = json.loads(Path(path).read_text())
    except OSError as e:
        raise RedlineError(f"cannot read {name!r}: {e.strerror or e}") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RedlineError(f"{name!r} is not JSON: {e}") from e
    return read(data, name)


def read(data: Any, name: str = "<result>") -> Document:
    """read turns a parsed result document into a :class:`Document`."""
    if not isinstance(data, dict) or not isinstance(data.get("timeseries"), list):
        raise RedlineError(f"{name!r} is not a redline run or find result (no timeseries)")
    if isinstance(data.get("answers"), dict) and isinstance(data.get("steps"), list):
        return Document(name, Kind.FIND, data, _find_stretches(data), _find_facts(data))
    if "requests" in data and "duration_s" in data:
        return Document(name, Kind.RUN, data, _run_stretches(data))
    raise RedlineError(f"{name!r} is not a redline run or find result")


def measured(snapshots: list[Any]) -> list[dict[str, Any]]:
    """measured: the snapshots after warm-up, in time order."""
    snaps = [s for s in snapshots if isinstance(s, dict) and not s.get("warmup")]
    return sorted(snaps, key=lambda s: float(s.get("t_s") or 0.0))


# -- runs --------------------------------------------------------------------------------------


def _run_stretches(data: dict[str, Any]) -> dict[str, Stretch]:
    snaps = measured(data["timeseries"])
    out = {WHOLE_RUN: Stretch(snaps)}
    names = data.get("per_name") or {}
    if len(names) <= 1:
        return out  # a plain run's one name is the whole run
    for name, stats in names.items():
        own = [_name_snapshot(s, name) for s in snaps]
        if snaps and all(x is not None for x in own):
            out[name] = Stretch([x for x in own if x is not None])
        else:
            out[name] = Stretch(totals=_name_totals(stats))
    return out


def _name_snapshot(snap: dict[str, Any], name: str) -> dict[str, Any] | None:
    """_name_snapshot: a snapshot's figures for one request name, when it carries them."""
    own = (snap.get("names") or {}).get(name)
    return {**own, "t_s": snap["t_s"]} if isinstance(own, dict) else None


def _name_totals(stats: dict[str, Any]) -> dict[Figure, float | None]:
    """_name_totals: a request name's whole-run latency percentiles (ms). Its throughput and
    error rate are left out: the per-name record does not split its errors into answered
    and unanswered ones, which goodput and the error rate need."""
    lat = stats.get("latency_ms") or {}
    keys = {Figure.P50: "p50", Figure.P90: "p90", Figure.P99: "p99", Figure.P99_9: "p99_9"}
    return {f: _num(lat.get(k)) for f, k in keys.items()}


# -- find results ------------------------------------------------------------------------------


def _find_stretches(data: dict[str, Any]) -> dict[str, Stretch]:
    stretches = _answer_stretches(data)
    what = (data.get("config") or {}).get("throughput") or "requests"
    if what == "requests":
        return stretches
    try:
        meter = Meter.parse(str(what))
    except ValueError as e:
        raise RedlineError(f"config.throughput {e}") from None
    return {k: Stretch([_metered(s, meter) for s in v.snapshots]) for k, v in stretches.items()}


def _metered(snap: dict[str, Any], meter: Meter) -> dict[str, Any]:
    """_metered: a snapshot whose counts are the meter's (``iterations``, a request name's
    requests, or its answers that said one value) in the fields compare counts
    (``requests``, ``errors``, ``errors_by_class``), so that compare's goodput and error
    rate are the search's (:class:`redline.analysis.outcome.Meter`)."""
    o = meter.count(snap)
    by_class = {
        "status": o.refused,
        "check": o.failed_checks,
        "transport": o.failed - o.refused - o.failed_checks,
    }
    counts = {
        "requests": o.good + o.refused + o.failed_checks,
        "errors": o.failed,
        "errors_by_class": {k: n for k, n in by_class.items() if n},
    }
    return {**snap, **counts}


def _answer_stretches(data: dict[str, Any]) -> dict[str, Stretch]:
    answers = data["answers"]
    steps = [s for s in data["steps"] if isinstance(s, dict)]
    by_index = {s.get("index"): s for s in steps}
    confirm = next((s for s in reversed(steps) if s.get("phase") == "confirm"), None)
    out: dict[str, Stretch] = {}
    if confirm is not None:
        out[STEADY] = _step_stretch(data, confirm)
    for name in (OPTIMAL, LIMIT):
        answer = answers.get(name) or {}
        step = by_index.get(answer.get("step"))
        if step is not None:
            out[name] = _step_stretch(data, step)
    return out


def _step_stretch(data: dict[str, Any], step: dict[str, Any]) -> Stretch:
    """_step_stretch: a step's intervals, those ending within (start_s, end_s] that began
    at or after start_s (the confirmation is a step of the live run like the others; an
    older result whose confirmation ran on its own keeps its intervals in
    ``confirmation.timeseries``)."""
    if step.get("phase") == "confirm":
        own = (data.get("confirmation") or {}).get("timeseries")
        if isinstance(own, list) and own:
            return Stretch(measured(own))
    start, end = _num(step.get("start_s")), _num(step.get("end_s"))
    if start is None or end is None:
        return Stretch()
    snaps = measured(data["timeseries"])
    inside = [s for s in snaps if start + _EPS < float(s["t_s"]) <= end + _EPS]
    if len(inside) > 1:
        first = Stretch(inside).interval_s
        inside = [s for s in inside if float(s["t_s"]) - first >= start - _EPS]
    return Stretch(inside)


def _find_facts(data: dict[str, Any]) -> dict[str, str]:
    a = data["answers"]
    unit = "users" if data.get("model") == "closed" else "req/s"
    opt = a.get("optimal") or {}
    lim = a.get("limit") or {}
    return {
        "steady-state load": _load(a.get("steady_state_load"), unit),
        "optimal load": _load(opt.get("users", opt.get("rate")), unit),
        "limit load": _load(lim.get("load"), unit),
        "limit reason": str(lim.get("reason") or "–"),
    }


def _load(v: Any, unit: str) -> str:
    f = _num(v)
    return "–" if f is None else f"{f:g} {unit}"


def _num(v: Any) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None
