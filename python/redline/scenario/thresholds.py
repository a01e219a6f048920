"""thresholds: pass/fail criteria for CI, checked on a finished run's result.

    p99<500ms   p99.9<1s   mean<200ms   max<2s   errors<1%   rps>100   submit:p95<300ms
    ttft_p99<500ms   itl_p50<50ms   first_byte_p99<1s   chunk_gap_max<200ms

A threshold is ``[NAME:]METRIC OP VALUE``: over the whole run, or over one request name or
group (``NAME:``). ``errors`` is the share of failed requests (failed checks, 4xx/5xx and
transport failures; over the whole run, unfinished and unsent requests too). A latency metric
may name a stream figure (``--stream``; its prefix one of
:data:`redline.window.STREAM_FIGURES`: time to first byte, gap between pieces, time to first
token, inter-token latency), judged over the whole run.

This is the one grammar of a bound: the live watch (:mod:`redline.scenario.watch`) judges
these thresholds over a window of snapshots, and ``redline find``'s ``--slo`` is a latency
threshold judged on each step (:class:`redline.find.rules.Slo`). :data:`SNAPSHOT_KEY` and
:data:`QUANTILE` are the latency figures both read (from :mod:`redline.percentiles`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from redline import _engine
from redline import window as _window
from redline.analysis.outcome import ANSWERED_FAILURES, Outcomes, outcomes
from redline.errors import ConfigError
from redline.percentiles import BY_NAME, IN_SNAPSHOTS, snapshot_key
from redline.runs.options import UNIT_S

_SPEC = re.compile(
    r"^\s*(?:(?P<name>.+):)?(?:(?P<figure>[a-z_]+?)_)?"
    r"(?P<metric>p\d+(?:\.\d+)?|mean|min|max|errors|rps)\s*"
    r"(?P<op><=|>=|<|>)\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>us|µs|ms|s|%)?\s*$"
)
#: SNAPSHOT_KEY: the latency figures each interval snapshot and each search step carry (ms),
#: by the metric a threshold names: what the live watch and find's SLOs can judge.
SNAPSHOT_KEY = {
    **{p.name: snapshot_key(p.name) for p in IN_SNAPSHOTS},
    "mean": "mean_ms",
    "max": "max_ms",
}
#: QUANTILE: the percentiles among them, as quantiles (read from merged histograms).
QUANTILE = {p.name: p.quantile for p in IN_SNAPSHOTS}

#: TRANSPORT_REASONS: the failure reasons of requests that got no response (the engine's
#: names for its error classes, read from it), which count as attempts besides the answered
#: requests.
TRANSPORT_REASONS = frozenset(_engine.TRANSPORT_REASONS)


@dataclass(frozen=True)
class Threshold:
    """Threshold is one parsed criterion."""

    text: str
    name: str | None
    metric: str
    op: str
    value: float
    #: figure: the stream figure bounded (a key of :data:`redline.window.STREAM_FIGURES`),
    #: None for the latency's own.
    figure: str | None = None

    @property
    def judged(self) -> str:
        """judged is what the threshold bounds, as its lines say it: ``p99``, ``ttft_p99``."""
        return f"{self.figure}_{self.metric}" if self.figure else self.metric

    def holds(self, actual: float) -> bool:
        """holds: whether ``actual`` meets the criterion."""
        return {
            "<": actual < self.value,
            "<=": actual <= self.value,
            ">": actual > self.value,
            ">=": actual >= self.value,
        }[self.op]


def parse(text: str) -> Threshold:
    """parse reads one threshold; a malformed one is a ConfigError naming it."""
    m = _SPEC.match(text)
    if not m:
        raise ConfigError(
            f"bad threshold {text!r}: expected [NAME:]METRIC<VALUE, e.g. p99<500ms, errors<1%, "
            "rps>100"
        )
    metric, unit, figure = m["metric"], m["unit"], m["figure"]
    value = float(m["value"])
    if figure is not None:
        if figure not in _window.STREAM_FIGURES or metric in ("errors", "rps"):
            raise ConfigError(
                f"bad threshold {text!r}: a stream figure is "
                f"{'|'.join(_window.STREAM_FIGURES)}_METRIC with a latency metric, e.g."
                " ttft_p99<500ms"
            )
        if m["name"] is not None:
            raise ConfigError(
                f"bad threshold {text!r}: a stream figure is judged over the whole run (no NAME:)"
            )
    if metric.startswith("p"):
        if metric not in BY_NAME:
            raise ConfigError(f"bad threshold {text!r}: percentiles are {', '.join(BY_NAME)}")
    if metric == "errors":
        if unit not in (None, "%"):
            raise ConfigError(f"bad threshold {text!r}: errors is a share, e.g. errors<1%")
        value = value / 100 if unit == "%" else value
    elif metric == "rps":
        if unit is not None:
            raise ConfigError(f"bad threshold {text!r}: rps takes a plain number")
    else:
        if unit == "%":
            raise ConfigError(f"bad threshold {text!r}: latency takes ms, s or us")
        value *= UNIT_S[unit] * 1e3 if unit else 1.0  # a bare number is milliseconds
    return Threshold(text.strip(), m["name"], metric, m["op"], value, figure)


def actual(t: Threshold, data: dict[str, Any]) -> float:
    """actual: the figure a threshold judges, from a result document."""
    if t.figure is not None:
        table = _window.report_figure(data, t.figure)
        if table is None:
            raise ConfigError(
                f"threshold {t.text!r}: this run measured no {t.figure} (it needs --stream"
                + (", and a streamed completion's tokens)" if t.figure in ("ttft", "itl") else ")")
            )
        return float(table.get(_report_key(t.metric), 0.0))
    if t.name is None:
        lat = data.get("latency_ms", {})
        if t.metric == "errors":
            # The one error rate (failed outcomes ÷ outcomes), with the requests the run
            # left unfinished or never sent counted as failed outcomes of the whole run.
            o = outcomes(data.get("requests", 0), data.get("errors_total", 0), data.get("errors"))
            lost = data.get("unfinished", 0) + data.get("unsent", 0)
            return Outcomes(o.good, o.failed + lost).error_rate
        if t.metric == "rps":
            return float(data.get("rps", 0.0))
        return float(lat.get(_report_key(t.metric), 0.0))
    entry = data.get("per_name", {}).get(t.name)
    rps_key = "rps"
    if entry is None:
        entry = data.get("scenario", {}).get("groups", {}).get(t.name)
    if entry is None:
        known = sorted(data.get("per_name", {})) + sorted(
            data.get("scenario", {}).get("groups", {})
        )
        raise ConfigError(
            f"threshold {t.text!r}: no request name or group {t.name!r} (names: {', '.join(known)})"
        )
    if t.metric == "errors":
        # A name's failures are told apart by reason, not class: those that got no answer
        # (transport) are outcomes besides its answered requests; the rest were answered.
        transport = sum(
            n for r, n in entry.get("failure_reasons", {}).items() if r in TRANSPORT_REASONS
        )
        errors = entry.get("errors", 0)
        answered_failures = {ANSWERED_FAILURES[0]: errors - transport}
        return outcomes(entry.get("requests", 0), errors, answered_failures).error_rate
    if t.metric == "rps":
        if rps_key in entry:
            return float(entry[rps_key])
        return entry.get("requests", 0) / data["duration_s"] if data.get("duration_s") else 0.0
    return float(entry.get("latency_ms", {}).get(_report_key(t.metric), 0.0))


def _report_key(metric: str) -> str:
    """_report_key: the run report's ``latency_ms`` key of a latency metric (``mean``,
    ``min`` and ``max`` are spelt alike in both)."""
    p = BY_NAME.get(metric)
    return p.report_key if p is not None else metric


def check(thresholds: list[Threshold], data: dict[str, Any]) -> list[str]:
    """check returns one line per failed threshold (empty: all hold)."""
    return [line for held, line in verdicts(thresholds, data) if not held]


def verdicts(thresholds: list[Threshold], data: dict[str, Any]) -> list[tuple[bool, str]]:
    """verdicts: each threshold, whether it held, and its line with the value measured
    (``threshold p99<500ms failed: p99 was 612.00ms``; ``✓ threshold p99<500ms held: ...``,
    k6's check mark, so a CI log shows what was judged and passed, not only what failed)."""
    out = []
    for t in thresholds:
        got = actual(t, data)
        shown = (
            f"{got:.2%}"
            if t.metric == "errors"
            else (f"{got:.1f}" if t.metric == "rps" else f"{got:.2f}ms")
        )
        if t.holds(got):
            out.append((True, f"✓ threshold {t.text} held: {t.judged} was {shown}"))
        else:
            out.append((False, f"threshold {t.text} failed: {t.judged} was {shown}"))
    return out
