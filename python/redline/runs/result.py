"""Result: what one run measured, as returned by :func:`redline.run`.

The engine produces a JSON document (the same one ``--json FILE`` writes, described by
``docs/schema/result.schema.json``); :class:`Result` is a typed view over it that keeps the
document intact, so serialising a result never loses a field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redline import _engine
from redline.output import write_text

_QUANTILE_KEYS = ("p50", "p75", "p90", "p99", "p99_9", "p99_99")


@dataclass(frozen=True)
class Latency:
    """Latency: a latency distribution in milliseconds (min, mean, stdev, percentiles, max)."""

    min: float
    mean: float
    stdev: float
    p50: float
    p75: float
    p90: float
    p95: float
    p99: float
    p99_9: float
    p99_99: float
    max: float

    @classmethod
    def from_dict(cls, d: dict[str, float]) -> Latency:
        """from_dict builds a Latency from the report's ``latency_ms`` object."""
        return cls(**{k: float(d.get(k, math.nan)) for k in cls.__dataclass_fields__})


class Result:
    """Result: a finished (or interrupted) run's summary, per-name stats, time series and
    serialised histograms. ``Result.data`` is the full JSON document."""

    def __init__(self, data: dict[str, Any]):
        self.data = data

    # The headline figures, typed.
    @property
    def requests(self) -> int:
        """requests: completed requests after warm-up."""
        return int(self.data["requests"])

    @property
    def intended(self) -> int:
        """intended: requests the run meant to make after warm-up (every request started, and
        in the open model every hit due before the end). ``requests + (errors_total -
        errors["status"] - errors["check"] - errors["grpc"]) + unfinished + unsent == intended``."""
        return int(self.data.get("intended", 0))

    @property
    def unfinished(self) -> int:
        """unfinished: requests still out when the run cut them off (end of the grace period,
        or a stop); in the latency figures at their age then, a lower bound."""
        return int(self.data.get("unfinished", 0))

    @property
    def unsent(self) -> int:
        """unsent: open model: hits due before the end that never went out."""
        return int(self.data.get("unsent", 0))

    @property
    def retries(self) -> int:
        """retries: requests sent again after a kept-alive connection closed under them."""
        return int(self.data.get("retries", 0))

    @property
    def clamped(self) -> int:
        """clamped: latencies beyond the histograms' range, recorded at its top."""
        return int(self.data.get("clamped", 0))

    @property
    def duration_s(self) -> float:
        """duration_s: measured wall time after warm-up."""
        return float(self.data["duration_s"])

    @property
    def rps(self) -> float:
        """rps: completed requests per second after warm-up."""
        return float(self.data["rps"])

    @property
    def errors(self) -> dict[str, int]:
        """errors: counts by class (connect, timeout, read, write, reset, protocol, goaway,
        rst_stream, status)."""
        return dict(self.data["errors"])

    @property
    def errors_total(self) -> int:
        """errors_total: every failed request, whatever its class."""
        return int(sum(self.data["errors"].values()))

    @property
    def status_codes(self) -> dict[int, int]:
        """status_codes: responses by HTTP status."""
        return {int(k): int(v) for k, v in self.data.get("status_codes", {}).items()}

    @property
    def latency(self) -> Latency:
        """latency: the corrected distribution: the open model's wait for a free connection
        plus the server's time from the request leaving (from the intended send time with
        ``latency_from="intended"``)."""
        return Latency.from_dict(self.data["latency_ms"])

    @property
    def uncorrected_latency(self) -> Latency | None:
        """uncorrected_latency: the server's time, from the request leaving (open model only)."""
        d = self.data.get("uncorrected_latency_ms")
        return Latency.from_dict(d) if d else None

    @property
    def lag(self) -> Latency | None:
        """lag: the generator's own send lag, from when a request could go (its intended
        time, or when its connection came free) to when it left; None in results older
        than it."""
        d = self.data.get("lag_ms")
        return Latency.from_dict(d) if d else None

    @property
    def first_byte(self) -> Latency | None:
        """first_byte: with ``stream``, from the request's start (as :attr:`latency`) to its
        body's first byte (time to first token); None without."""
        d = self.data.get("first_byte_ms")
        return Latency.from_dict(d) if d else None

    @property
    def chunk_gap(self) -> Latency | None:
        """chunk_gap: with ``stream``, the gaps between a response's pieces in a row (SSE
        events, chunks, or reads: inter-token latency); None without."""
        d = self.data.get("chunk_gap_ms")
        return Latency.from_dict(d) if d else None

    @property
    def stream(self) -> dict[str, Any] | None:
        """stream: with ``stream``, the counts (``responses``, ``events``, ``chunks``,
        ``body_bytes``) and their rates a second; None without."""
        d = self.data.get("stream")
        return dict(d) if d else None

    @property
    def completion(self) -> dict[str, Any] | None:
        """completion: with ``stream``, once an OpenAI-compatible streamed completion's token
        came: ``responses``, ``output_tokens``, ``output_tokens_per_s`` (over the run), and
        the tables ``ttft_ms`` (time to first token), ``itl_ms`` (inter-token latency) and
        ``request_tokens_per_s`` (each request's tokens over its latency); None without."""
        d = self.data.get("completion")
        return dict(d) if d else None

    @property
    def timeseries(self) -> list[dict[str, Any]]:
        """timeseries: one snapshot per reporting interval, warm-up included (flagged)."""
        return list(self.data.get("timeseries", []))

    @property
    def outages(self) -> list[dict[str, Any]]:
        """outages: spans when the target answered nothing and every attempt failed, each
        ``{"start_s", "end_s" (None: still down at the end), "error_class", "errors",
        "errors_by_class"}``, seconds since the start."""
        return list(self.data.get("outages", []))

    @property
    def per_name(self) -> dict[str, dict[str, Any]]:
        """per_name: requests, errors and latency for each request name."""
        return dict(self.data.get("per_name", {}))

    @property
    def per_host(self) -> dict[str, dict[str, Any]]:
        """per_host: requests, errors and latency for each origin (``http://host:port``) the
        run reached: its host alone, or every host a scenario's URLs named."""
        return dict(self.data.get("per_host", {}))

    @property
    def generator(self) -> dict[str, Any]:
        """generator: the engine's self-check (CPU time, send lag, saturation verdict)."""
        return dict(self.data["generator"])

    @property
    def saturated(self) -> bool:
        """saturated: True when the generator, not the server, limited the run."""
        return bool(self.data["generator"]["saturated"])

    @property
    def interrupted(self) -> bool:
        """interrupted: True when the run was stopped early (Ctrl-C)."""
        return bool(self.data.get("interrupted", False))

    @property
    def histograms(self) -> dict[str, str | None]:
        """histograms: base64 HdrHistogram V2 (microseconds), mergeable with
        :func:`merge_histograms`."""
        return dict(self.data.get("histograms", {}))

    def percentile(self, q: float, *, corrected: bool = True) -> float:
        """percentile returns the latency (ms) at quantile ``q`` in 0..1, read from the full
        histogram rather than the pre-computed keys."""
        h = self.histograms.get("latency" if corrected else "uncorrected")
        if not h:
            raise ValueError("this result has no such histogram")
        _, (value,) = _engine.histogram_quantiles(h, [q])
        return value / 1000.0

    def to_json(self, indent: int | None = 2) -> str:
        """to_json renders the full document."""
        return json.dumps(self.data, indent=indent)

    def write_json(self, path: str | Path) -> None:
        """write_json writes the full document to ``path`` (``"-"``: stdout)."""
        write_text(path, self.to_json())

    def __repr__(self) -> str:
        lat = self.latency
        return (
            f"Result(requests={self.requests}, rps={self.rps:.1f}, p50={lat.p50:.3f}ms, "
            f"p99={lat.p99:.3f}ms, errors={self.errors_total})"
        )


def merge_histograms(histograms: list[str]) -> str:
    """merge_histograms adds serialised histograms from several runs or injectors into one."""
    return _engine.merge_histograms(list(histograms))
