"""metrics: a run's live figures as Prometheus metrics, named by Prometheus' conventions.

    redline_requests_total{name, outcome}        counter: outcome ``ok`` or the error class
    redline_intended_total                       counter: requests the run intended
    redline_request_duration_seconds{name}       histogram: latency from the intended send
    redline_vus                                  gauge: virtual users (closed model)
    redline_connections, redline_in_flight       gauges
    redline_run_done                             gauge: 1 once the run ended (final figures)

Latency is a histogram, never percentile gauges: percentiles cannot be added across runs,
instances or time, buckets can. The buckets are cumulative counts read from each interval's
HdrHistogram (:mod:`redline.live.histogram`), so they are exact to the histogram's precision.

The books are the report's: warm-up intervals are left out, each request is counted once
under one outcome (an answer with an unexpected status is ``status``, one that failed a check
``check``, a request that got no answer its transport class), so at the end the counters add
up to the summary's ``requests`` and ``errors`` and ``_count`` to the answered requests.
``redline_intended_total`` is live an estimate from the intervals' send (closed model) or
schedule (open model) rates, and takes the report's exact ``intended`` at the end.
Request names beyond :data:`NAME_CAP` are counted under ``name="_other"``: a label's values
must stay few, whatever a scenario names its requests.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from redline.live.histogram import cumulative, decode

#: BOUNDS_S are the latency buckets' upper bounds in seconds (``le``), from 0.5 ms to 1 min.
BOUNDS_S = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)
_BOUNDS_US = [round(b * 1e6) for b in BOUNDS_S]

#: OUTCOMES: ``ok`` and the engine's error classes, in the order they are exported.
OUTCOMES = (
    "ok",
    "status",
    "check",
    "connect",
    "timeout",
    "read",
    "write",
    "reset",
    "protocol",
    "goaway",
    "rst_stream",
)

#: NAME_CAP: at most this many request names get their own series.
NAME_CAP = 50
#: OTHER: the name every request name past the cap is counted under.
OTHER = "_other"


@dataclass
class NameBook:
    """NameBook is one request name's counters: outcomes, and the latency histogram's
    cumulative bucket counts, count and sum (seconds)."""

    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    buckets: list[int] = field(default_factory=lambda: [0] * len(BOUNDS_S))
    count: int = 0
    sum_s: float = 0.0


class Ledger:
    """Ledger keeps a run's live books, fed one interval snapshot at a time (any thread)
    and read by scrapes and the web page (any thread)."""

    def __init__(self, name: str = "all", name_cap: int = NAME_CAP):
        self.name = name
        self.name_cap = name_cap
        self._lock = threading.Lock()
        self._names: dict[str, NameBook] = {}
        self._intended = 0.0
        self._last_t = 0.0
        self.vus: float | None = None
        self.connections = 0
        self.in_flight = 0
        self.done = False

    def add(self, snap: dict[str, Any], vus: float | None = None) -> None:
        """add folds one interval snapshot in (run-wide figures, under the ledger's name).
        A snapshot with an ``intended_rate`` is the open model's, which has no users;
        otherwise ``vus`` is the users when the caller knows them (a search's load), else
        the connections open (one per user)."""
        t = float(snap.get("t_s") or 0.0)
        length = max(t - self._last_t, 0.0)
        hist = snap.get("histogram")
        decoded = decode(hist) if isinstance(hist, str) and hist else None
        with self._lock:
            self._last_t = t
            self.connections = int(snap.get("active_connections") or 0)
            self.in_flight = int(snap.get("in_flight") or 0)
            open_model = snap.get("intended_rate") is not None
            if open_model:
                self.vus = None
            else:
                self.vus = float(vus) if vus is not None else float(self.connections)
            if snap.get("warmup"):
                return
            book = self._book(self.name)
            requests = int(snap.get("requests") or 0)
            classes = {k: int(v or 0) for k, v in (snap.get("errors_by_class") or {}).items()}
            answered_bad = classes.get("status", 0) + classes.get("check", 0)
            book.outcomes["ok"] += max(requests - answered_bad, 0)
            for cls, n in classes.items():
                book.outcomes[cls] = book.outcomes.get(cls, 0) + n
            if decoded is not None:
                for i, n in enumerate(cumulative(decoded, _BOUNDS_US)):
                    book.buckets[i] += n
                book.count += decoded.total
            book.sum_s += float(snap.get("mean_ms") or 0.0) / 1000.0 * requests
            # Open model: the schedule's due hits; closed: every request sent was intended.
            rate = snap.get("intended_rate") if open_model else snap.get("achieved_rate")
            self._intended += float(rate or 0.0) * length

    def _book(self, name: str) -> NameBook:
        if name not in self._names and len(self._names) >= self.name_cap:
            name = OTHER
        return self._names.setdefault(name, NameBook())

    def settle(self, report: dict[str, Any]) -> None:
        """settle takes the final report's exact ``intended`` (never lowering the counter:
        a counter that falls reads as a restart) and marks the run done."""
        with self._lock:
            final = report.get("intended")
            if isinstance(final, (int, float)):
                self._intended = max(self._intended, float(final))
            self.done = True

    @property
    def intended(self) -> int:
        """intended is the requests the run intended so far."""
        with self._lock:
            return round(self._intended)

    def totals(self) -> dict[str, Any]:
        """totals: requests answered, errors and errors by class, summed over names (the
        summary's figures), and intended."""
        with self._lock:
            by_class: dict[str, int] = {}
            ok = 0
            for b in self._names.values():
                ok += b.outcomes.get("ok", 0)
                for k, v in b.outcomes.items():
                    if k != "ok" and v:
                        by_class[k] = by_class.get(k, 0) + v
            answered = ok + by_class.get("status", 0) + by_class.get("check", 0)
            return {
                "requests": answered,
                "errors": sum(by_class.values()),
                "errors_by_class": by_class,
                "intended": round(self._intended),
            }

    def collect(self) -> Iterator[Any]:
        """collect yields the metric families (prometheus_client's custom collector
        protocol), a consistent copy taken under the lock."""
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        with self._lock:
            names = {
                n: (dict(b.outcomes), list(b.buckets), b.count, b.sum_s)
                for n, b in self._names.items()
            }
            intended, vus = round(self._intended), self.vus
            connections, in_flight, done = self.connections, self.in_flight, self.done
        requests = CounterMetricFamily(
            "redline_requests",
            "Requests by name and outcome (ok, or the error class), after warm-up.",
            labels=["name", "outcome"],
        )
        latency = HistogramMetricFamily(
            "redline_request_duration_seconds",
            "Latency of answered requests, from the intended send time (no coordinated "
            "omission), after warm-up.",
            labels=["name"],
        )
        for name, (outcomes, buckets, count, sum_s) in sorted(names.items()):
            for outcome in OUTCOMES:
                requests.add_metric([name, outcome], outcomes.get(outcome, 0))
            pairs = [(f"{b:g}", float(n)) for b, n in zip(BOUNDS_S, buckets, strict=True)]
            latency.add_metric([name], [*pairs, ("+Inf", float(count))], sum_value=sum_s)
        yield requests
        yield CounterMetricFamily(
            "redline_intended", "Requests the run intended to send, after warm-up.", intended
        )
        yield latency
        if vus is not None:
            yield GaugeMetricFamily("redline_vus", "Active virtual users (closed model).", vus)
        yield GaugeMetricFamily("redline_connections", "Connections open.", connections)
        yield GaugeMetricFamily("redline_in_flight", "Requests sent, not yet answered.", in_flight)
        yield GaugeMetricFamily(
            "redline_run_done", "1 once the run ended: the figures are final.", int(done)
        )

    def exposition(self) -> bytes:
        """exposition is the Prometheus text format of the books."""
        from prometheus_client import CollectorRegistry, generate_latest

        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)  # type: ignore[arg-type]
        return bytes(generate_latest(registry))
