"""otlp: a run's live books pushed to an OpenTelemetry collector (``--otlp URL``: OTLP over
HTTP, protobuf), named by OpenTelemetry's semantic conventions. Needs the ``otlp`` extra
(``pip install 'redline[otlp]'``: the OpenTelemetry SDK and its OTLP/HTTP exporter).

    http.client.request.duration   histogram, s: latency of answered requests, per request
                                   name (``redline.request.name``) and status code
                                   (``http.response.status_code``; ``error.type`` the code
                                   from 400 on), with its ``http.request.method`` (a URL
                                   run's, or each scenario request's from its plan),
                                   ``server.address``, ``server.port`` and ``url.scheme``
    redline.requests               counter: every request once, by ``redline.request.name``
                                   and ``redline.outcome`` (ok or the error class, which is
                                   also its ``error.type``)
    redline.intended               counter: requests the run intended
    redline.vus                    gauge: virtual users (closed model)

The figures are the ledger's (:class:`redline.live.metrics.Ledger`), the ones Prometheus
scrapes, cumulative from the run's start, exported every ``OTEL_METRIC_EXPORT_INTERVAL``
milliseconds (OpenTelemetry's variable; default 60000) and once more, final, when the session
closes. The data points are built from the engine's histograms directly rather than by
recording each request into an SDK instrument, which would cost a Python call per request.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import IO, Any
from urllib.parse import urlsplit

from redline.errors import ConfigError
from redline.live.metrics import BOUNDS_S, OUTCOMES, Ledger, Reading

#: DEFAULT_INTERVAL_S: OpenTelemetry's default metric export interval.
DEFAULT_INTERVAL_S = 60.0
#: SCOPE: the instrumentation scope the metrics are exported under.
SCOPE = "redline"


def endpoint_url(text: str) -> str:
    """endpoint_url is the metrics endpoint for ``--otlp``: a collector's base URL gets
    OTLP/HTTP's ``/v1/metrics``; a full path is kept."""
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"--otlp: expected http(s)://HOST:PORT[/v1/metrics], got {text!r}")
    return text if parts.path not in ("", "/") else text.rstrip("/") + "/v1/metrics"


def export_interval_s() -> float:
    """export_interval_s is ``OTEL_METRIC_EXPORT_INTERVAL`` (ms) in seconds."""
    raw = os.environ.get("OTEL_METRIC_EXPORT_INTERVAL")
    if not raw:
        return DEFAULT_INTERVAL_S
    try:
        ms = float(raw)
    except ValueError:
        raise ConfigError(
            f"OTEL_METRIC_EXPORT_INTERVAL: expected milliseconds, got {raw!r}"
        ) from None
    if not ms > 0:
        raise ConfigError(f"OTEL_METRIC_EXPORT_INTERVAL: must be > 0, got {raw!r}")
    return ms / 1000


def request_attributes(url: str | None, method: str | None) -> dict[str, Any]:
    """request_attributes are the semantic conventions' attributes of the run's requests
    that the run knows for all of them: the target's address, port and scheme, and the
    method when it is one for all (a URL run)."""
    out: dict[str, Any] = {}
    if method:
        out["http.request.method"] = method.upper()
    if url:
        parts = urlsplit(url)
        if parts.hostname:
            out["server.address"] = parts.hostname
            out["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
            out["url.scheme"] = parts.scheme
    return out


def request_methods(plan: dict[str, Any]) -> dict[str, str]:
    """request_methods is each request name of a compiled scenario's plan with its HTTP
    method, for the names that have one (a name two requests share with different methods
    has none; a redirect's follow-up, ``NAME (redirect)``, is GET or the same method by its
    status, so it has none either)."""
    seen: dict[str, set[str]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("step") == "request" and node.get("name") and node.get("method"):
                seen.setdefault(str(node["name"]), set()).add(str(node["method"]).upper())
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(plan)
    return {name: next(iter(m)) for name, m in seen.items() if len(m) == 1}


def _histogram_point(attrs: dict[str, Any], start: int, now: int, f: Any) -> Any:
    """_histogram_point is one cumulative histogram data point of ``f`` (a count,
    cumulative counts at :data:`BOUNDS_S`, a sum, least and greatest value in seconds)."""
    from opentelemetry.sdk.metrics.export import HistogramDataPoint

    per_bucket = [f.buckets[0]] + [
        hi - lo for lo, hi in zip(f.buckets, f.buckets[1:], strict=False)
    ]
    return HistogramDataPoint(
        attributes=attrs,
        start_time_unix_nano=start,
        time_unix_nano=now,
        count=f.count,
        sum=f.sum_s,
        bucket_counts=[*per_bucket, f.count - f.buckets[-1]],
        explicit_bounds=list(BOUNDS_S),
        min=f.min_s,
        max=f.max_s,
    )


class OtlpExport:
    """OtlpExport pushes a ledger's books to ``endpoint`` every ``interval_s`` on its own
    thread, and once more on :meth:`close`. A failed export is said once on ``out``; the
    run goes on."""

    def __init__(
        self,
        ledger: Ledger,
        endpoint: str,
        attributes: dict[str, Any] | None = None,
        interval_s: float | None = None,
        out: IO[str] | None = None,
    ):
        try:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
                OTLPMetricExporter,
            )
        except ImportError:
            raise ConfigError(
                "--otlp needs the OpenTelemetry exporter: pip install 'redline[otlp]'"
            ) from None
        self.endpoint = endpoint_url(endpoint)
        self.interval_s = export_interval_s() if interval_s is None else interval_s
        self._ledger = ledger
        self._attributes = dict(attributes or {})
        self._exporter = OTLPMetricExporter(endpoint=self.endpoint, timeout=5)
        self._out = out or sys.stderr
        self._start_ns = time.time_ns()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="redline-otlp", daemon=True)
        self._warned = False
        self.exports = 0
        #: methods: a scenario's request names with their HTTP method (see
        #: :func:`request_methods`), put on each name's duration points.
        self.methods: dict[str, str] = {}

    def start(self) -> OtlpExport:
        """start begins the periodic export."""
        self._thread.start()
        return self

    def close(self) -> None:
        """close stops the periodic export, exports the final figures and shuts down."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10.0)
        self.export()
        self._exporter.shutdown()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.export()

    def export(self) -> bool:
        """export pushes the books as they stand; False when the collector refused or
        could not be reached."""
        from opentelemetry.sdk.metrics.export import MetricExportResult

        result = self._exporter.export(self._data(self._ledger.read()))
        if result is MetricExportResult.SUCCESS:
            self.exports += 1
            return True
        if not self._warned:
            self._warned = True
            print(
                f"redline: warning: OTLP export to {self.endpoint} failed (the run goes on)",
                file=self._out,
                flush=True,
            )
        return False

    def _duration_points(self, name: str, b: Any, start: int, now: int) -> list[Any]:
        """_duration_points: request name ``name``'s duration histograms (``b``: its books)
        as data points, one per status code."""
        # By the conventions each status code is a data point of its own (with
        # ``error.type`` the code from 400 on); a name whose answers came without codes
        # (an injector of an older redline) is one point without.
        points = []
        split: list[tuple[str | None, Any]] = [*sorted(b.statuses.items())] or [(None, b)]
        for code, f in split:
            attrs: dict[str, Any] = {**self._attributes, "redline.request.name": name}
            if name in self.methods:
                attrs["http.request.method"] = self.methods[name]
            if code is not None:
                attrs["http.response.status_code"] = int(code)
                if int(code) >= 400:
                    attrs["error.type"] = code
            points.append(_histogram_point(attrs, start, now, f))
        return points

    def _data(self, books: Reading) -> Any:
        """_data is one reading as the SDK's MetricsData (cumulative since the start)."""
        from opentelemetry.sdk.metrics.export import (
            AggregationTemporality,
            Gauge,
            Histogram,
            Metric,
            MetricsData,
            NumberDataPoint,
            ResourceMetrics,
            ScopeMetrics,
            Sum,
        )
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        cumulative = AggregationTemporality.CUMULATIVE
        start, now = self._start_ns, time.time_ns()
        durations, requests, tallies = [], [], []
        for name, b in sorted(books.names.items()):
            for value, n in sorted(b.tally.items()):
                said = {"redline.request.name": name, "redline.tally.value": value}
                tallies.append(NumberDataPoint(said, start, now, n))
            durations += self._duration_points(name, b, start, now)
            for outcome in OUTCOMES:
                attrs = {"redline.request.name": name, "redline.outcome": outcome}
                if outcome != "ok":
                    attrs["error.type"] = outcome
                requests.append(NumberDataPoint(attrs, start, now, b.outcomes.get(outcome, 0)))
        metrics = [
            Metric(
                "http.client.request.duration",
                "Duration of answered HTTP client requests, from the intended send time.",
                "s",
                Histogram(durations, cumulative),
            ),
            Metric(
                "redline.requests",
                "Requests by name and outcome (ok, or the error class), after warm-up.",
                "{request}",
                Sum(requests, cumulative, True),
            ),
            Metric(
                "redline.intended",
                "Requests the run intended to send, after warm-up.",
                "{request}",
                Sum([NumberDataPoint({}, start, now, books.intended)], cumulative, True),
            ),
        ]
        if tallies:
            metrics.append(
                Metric(
                    "redline.tally",
                    "Answers by the value at the request's tally path, after warm-up.",
                    "{response}",
                    Sum(tallies, cumulative, True),
                )
            )
        if books.vus is not None:
            metrics.append(
                Metric(
                    "redline.vus",
                    "Active virtual users (closed model).",
                    "{user}",
                    Gauge([NumberDataPoint({}, start, now, books.vus)]),
                )
            )
        scope = ScopeMetrics(InstrumentationScope(SCOPE), metrics, "")
        resource = Resource.create({"service.name": "redline"})
        return MetricsData([ResourceMetrics(resource, [scope], "")])
