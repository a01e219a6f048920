"""metrics: a run's live figures as Prometheus metrics, named by Prometheus' conventions.

    redline_requests_total{name, outcome}        counter: outcome ``ok`` or the error class
    redline_responses_total{name, code}          counter: answers by HTTP status code
    redline_intended_total                       counter: requests the run intended
    redline_request_duration_seconds{name}       histogram: latency from the intended send
    redline_tally_total{name, value}             counter: a scenario request's answers by
                                                 the value at its ``tally`` path
    redline_vus                                  gauge: virtual users (closed model)
    redline_connections, redline_in_flight       gauges
    redline_run_done                             gauge: 1 once the run ended (final figures)

Latency is a histogram, never percentile gauges: percentiles cannot be added across runs,
instances or time, buckets can. A scenario run is counted per request name (each interval
snapshot's ``names``), a URL run under its one name. The engine counts each interval's
answers per status code in these very buckets (the snapshot's ``statuses``: count,
cumulative counts at the bounds, exact sum, least and greatest), which are added up as they
come, so a scrape only formats the books. A snapshot without them (an injector of an older
redline) is read from its HdrHistogram (:func:`figures_of`: exact to its precision).

The books are the report's: warm-up intervals are left out, each request is counted once
under one outcome (an answer with an unexpected status is ``status``, one that failed a check
``check``, a request that got no answer its transport class), so at the end the counters add
up to the summary's ``requests`` and ``errors`` and ``_count`` to the answered requests.
``redline_intended_total`` is live the requests sent so far (a lower bound: every request
sent was intended; the open model's due hits not sent yet show as offered against achieved
rate), and takes the report's exact ``intended`` at the end. The schedule's rate times the
interval would overshoot: a stopped run's last interval outlasts its schedule, and a counter
cannot come back down.
Request names beyond :data:`NAME_CAP` are counted under ``name="_other"``: a label's values
must stay few, whatever a scenario names its requests.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from redline import _engine
from redline.percentiles import BY_NAME

#: BOUNDS_S are the latency buckets' upper bounds in seconds (``le``), from 0.5 ms to 1 min:
#: the engine's (``DURATION_BOUNDS_US``), which counts each status code's answers in them.
BOUNDS_S = tuple(us / 1e6 for us in _engine.DURATION_BOUNDS_US)
_BOUNDS_US = list(_engine.DURATION_BOUNDS_US)

#: OUTCOMES: ``ok`` and the engine's error classes (read from it), in the order they are
#: exported.
OUTCOMES = ("ok", *_engine.ERROR_CLASSES)

#: NAME_CAP: at most this many request names get their own series.
NAME_CAP = 50
#: OTHER: the name every request name past the cap is counted under.
OTHER = "_other"


#: MEAN_SLICES: how many quantiles estimate an interval's mean latency for a name's ``_sum``
#: (exact, to the histogram's precision, when the interval answered fewer requests).
MEAN_SLICES = 128
_GRID = [(i + 0.5) / MEAN_SLICES for i in range(MEAN_SLICES)]
#: PROBES: ranks probed per unresolved bound in each round of :func:`counts_at`.
PROBES = 15


@dataclass(frozen=True)
class Figures:
    """Figures is what an interval's encoded latency histogram adds to a name's books: its
    count, cumulative counts at :data:`BOUNDS_S`, sum, least and greatest value (s)."""

    count: int
    buckets: list[int]
    sum_s: float
    min_s: float
    max_s: float


def figures_of(histogram: str) -> Figures:
    """figures_of reads an interval's histogram through the binding: the count, least and
    greatest value and the mean (from :data:`MEAN_SLICES` evenly spaced quantiles; at every
    rank when there are fewer values: the binding gives no sum) in one call, then the
    bucket counts (:func:`counts_at`). Read once per interval and name, so a scrape only
    formats books already kept."""
    n, values = _engine.histogram_quantiles(histogram, [0.0, 1.0, *_GRID])
    if n == 0:
        return Figures(0, [0] * len(BOUNDS_S), 0.0, 0.0, 0.0)
    low, high = values[0], values[1]
    if n < MEAN_SLICES:
        # Every rank's value: the sum, and each bound's count by bisection, exactly.
        _, exact = _engine.histogram_quantiles(histogram, [(i + 0.5) / n for i in range(n)])
        buckets = [bisect.bisect_right(exact, b) for b in _BOUNDS_US]
        return Figures(n, buckets, sum(exact) / 1e6, low / 1e6, high / 1e6)
    # The grid's values stand at known ranks (HdrHistogram's own ceil(q * n)): they narrow
    # each bound's search before any probe.
    known = [(max(1, math.ceil(q * n)), v) for q, v in zip(_GRID, values[2:], strict=True)]
    buckets = _counts(histogram, n, low, high, _BOUNDS_US, known)
    return Figures(n, buckets, sum(values[2:]) / MEAN_SLICES * n / 1e6, low / 1e6, high / 1e6)


def counts_at(histogram: str, bounds_us: Sequence[int]) -> tuple[int, list[int]]:
    """counts_at is an encoded histogram's count and, for each bound (µs, ascending), how
    many of its values lie at or below it, exact to the histogram's precision: a value
    counts when its HdrHistogram bucket (3 significant digits) lies wholly at or below the
    bound.

    The binding reads values at quantiles, not counts at values, so each count is searched
    for among the ranks: the value at rank ``r`` (quantile ``(r - 0.5) / n``, which
    HdrHistogram rounds up to ``r`` whatever the float error) is at or below the bound
    exactly for the first ``count`` ranks. Bounds below the least value or above the
    greatest are settled at once; the others are searched together, :data:`PROBES` ranks
    each a round, one binding call a round (about log16(n) rounds)."""
    n, (low, high) = _engine.histogram_quantiles(histogram, [0.0, 1.0])
    return n, _counts(histogram, n, low, high, bounds_us) if n else [0] * len(bounds_us)


def _counts(
    histogram: str,
    n: int,
    low: int,
    high: int,
    bounds_us: Sequence[int],
    known: Sequence[tuple[int, int]] = (),
) -> list[int]:
    """_counts is :func:`counts_at`'s search, given the count, the extreme values (``low``
    the least value's bucket's lowest, ``high`` the greatest's highest) and values already
    read at some ranks (``known``: (rank, value) pairs)."""
    lo = [n if high <= b else 0 for b in bounds_us]  # the count is in [lo, hi)
    hi = [n + 1 if high <= b else (1 if low > b else n + 1) for b in bounds_us]
    known_ranks = [r for r, _ in known]
    known_values = [v for _, v in known]  # ascending, as the ranks are
    for i, b in enumerate(bounds_us):
        at = bisect.bisect_right(known_values, b)
        if at:
            lo[i] = max(lo[i], known_ranks[at - 1])
        if at < len(known_values):
            hi[i] = min(hi[i], known_ranks[at])
    while True:
        todo = [i for i in range(len(bounds_us)) if hi[i] - lo[i] > 1]
        if not todo:
            return lo
        probes = []
        for i in todo:
            step = max(1, (hi[i] - lo[i]) // (PROBES + 1))
            probes.append((i, range(lo[i] + step, hi[i], step)[:PROBES]))
        quantiles = [(r - 0.5) / n for _, ranks in probes for r in ranks]
        _, values = _engine.histogram_quantiles(histogram, quantiles)
        k = 0
        for i, ranks in probes:
            for r in ranks:
                if values[k] <= bounds_us[i]:
                    lo[i] = max(lo[i], r)
                else:
                    hi[i] = min(hi[i], r)
                k += 1


@dataclass
class CodeBook:
    """CodeBook is one status code's answers to one request name: the count, the cumulative
    counts at :data:`BOUNDS_S`, the sum, least and greatest latency (seconds), added up from
    each interval snapshot's ``statuses`` (the engine counts them in these buckets)."""

    count: int = 0
    buckets: list[int] = field(default_factory=lambda: [0] * len(BOUNDS_S))
    sum_s: float = 0.0
    min_s: float | None = None
    max_s: float | None = None

    def add(self, f: dict[str, Any]) -> None:
        """add counts one interval's figures of the code (a snapshot's ``statuses`` entry)."""
        self.add_figures(
            Figures(
                int(f.get("count") or 0),
                [int(b) for b in f["buckets"]],
                float(f.get("sum_s") or 0.0),
                float(f.get("min_s") or 0.0),
                float(f.get("max_s") or 0.0),
            )
        )

    def add_figures(self, f: Figures) -> None:
        """add_figures counts one interval's figures."""
        if not f.count:
            return
        self.count += f.count
        self.buckets = [a + b for a, b in zip(self.buckets, f.buckets, strict=True)]
        self.sum_s += f.sum_s
        self.min_s = f.min_s if self.min_s is None else min(self.min_s, f.min_s)
        self.max_s = f.max_s if self.max_s is None else max(self.max_s, f.max_s)

    def figures(self) -> Figures:
        """figures is the books as read."""
        return Figures(
            self.count, list(self.buckets), self.sum_s, self.min_s or 0.0, self.max_s or 0.0
        )


#: PENDING_MAX: how many interval histograms a name keeps unmerged at most.
PENDING_MAX = 64


@dataclass
class NameBook:
    """NameBook is one request name's books: outcome counts; its answers' latency figures,
    all codes together (``whole``: count, cumulative bucket counts, sum, least and greatest
    value in seconds) and by status code (``statuses``), added up from each interval's
    ``statuses`` as it comes (the engine counts them in these buckets, exactly; a snapshot
    without them, from an older injector, is read from its histogram); the histogram of the
    run so far, for the live page's percentiles, merged only when read (a merge re-encodes
    with deflate, the costliest step; a run nobody watches merges every
    :data:`PENDING_MAX` intervals); and its tally (answers by the value at its ``tally``
    path; the engine bounds its values)."""

    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    tally: dict[str, int] = field(default_factory=dict)
    whole: CodeBook = field(default_factory=CodeBook)
    statuses: dict[str, CodeBook] = field(default_factory=dict)
    merged: str | None = None
    pending: list[str] = field(default_factory=list)

    def add(self, part: dict[str, Any]) -> None:
        """add counts one interval's figures (a snapshot, or one name's entry in its
        ``names``)."""
        requests = int(part.get("requests") or 0)
        classes = {k: int(v or 0) for k, v in (part.get("errors_by_class") or {}).items()}
        answered_bad = classes.get("status", 0) + classes.get("check", 0) + classes.get("grpc", 0)
        self.outcomes["ok"] += max(requests - answered_bad, 0)
        for cls, n in classes.items():
            self.outcomes[cls] = self.outcomes.get(cls, 0) + n
        for value, n in (part.get("tally") or {}).items():
            self.tally[value] = self.tally.get(value, 0) + int(n)
        statuses = part.get("statuses")
        hist = part.get("histogram")
        if statuses is not None:
            for code, figures in statuses.items():
                book = self.statuses.setdefault(str(code), CodeBook())
                book.add(figures)
                self.whole.add(figures)
        elif isinstance(hist, str) and hist:
            self.whole.add_figures(figures_of(hist))
        if not isinstance(hist, str) or not hist or not requests:
            return
        self.pending.append(hist)
        if len(self.pending) >= PENDING_MAX:
            self.histogram()

    def histogram(self) -> str | None:
        """histogram is the run so far's encoded histogram (None before the first answer),
        the intervals added since it was last read merged in, all in one binding call."""
        if self.pending:
            parts = ([self.merged] if self.merged is not None else []) + self.pending
            self.merged = parts[0] if len(parts) == 1 else _engine.merge_histograms(parts)
            self.pending = []
        return self.merged

    def latency_ms(self, quantiles: Sequence[float]) -> list[float | None]:
        """latency_ms is the run so far's latency at ``quantiles``, in ms (None before the
        first answer)."""
        hist = self.histogram()
        if hist is None:
            return [None] * len(quantiles)
        _, values = _engine.histogram_quantiles(hist, list(quantiles))
        return [v / 1000 for v in values]


@dataclass(frozen=True)
class NameReading:
    """NameReading is one request name's books as read: outcome counts, the latency
    histogram's cumulative counts at :data:`BOUNDS_S`, its count, sum, least and greatest
    value (seconds; 0 before the first answer)."""

    outcomes: dict[str, int]
    buckets: list[int]
    count: int
    sum_s: float
    min_s: float
    max_s: float
    tally: dict[str, int] = field(default_factory=dict)
    #: statuses: the answers by status code, each code's latency figures.
    statuses: dict[str, Figures] = field(default_factory=dict)


@dataclass
class Reading:
    """Reading is the ledger's books at one moment (:meth:`Ledger.read`), what Prometheus
    and OTLP are given."""

    names: dict[str, NameReading]
    intended: int
    vus: float | None
    connections: int
    in_flight: int
    done: bool


#: TABLE_QUANTILES: the latency columns of the live page's per-name table.
TABLE_QUANTILES = tuple(BY_NAME[n].quantile for n in ("p50", "p95", "p99"))


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
        """add folds one interval snapshot in: per request name when it has ``names`` (a
        scenario run), else under the ledger's name. A snapshot with an ``intended_rate``
        is the open model's, which has no users; otherwise ``vus`` is the users when the
        caller knows them (a search's load), else the connections open (one per user)."""
        t = float(snap.get("t_s") or 0.0)
        length = max(t - self._last_t, 0.0)
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
            names = snap.get("names")
            if isinstance(names, dict) and names:
                for name, part in names.items():
                    self._book(str(name)).add(part)
            else:
                self._book(self.name).add(snap)
            # Every request sent was intended (see the module's note).
            self._intended += float(snap.get("achieved_rate") or 0.0) * length

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
            answered = ok + sum(by_class.get(c, 0) for c in ("status", "check", "grpc"))
            return {
                "requests": answered,
                "errors": sum(by_class.values()),
                "errors_by_class": by_class,
                "intended": round(self._intended),
            }

    def table(self) -> list[dict[str, Any]]:
        """table is the live page's per-name rows, in the order names first answered:
        ``name``, ``requests`` (answered), ``errors``, ``errors_by_class`` (the non-zero
        ones), the run so far's ``p50_ms``, ``p95_ms``, ``p99_ms`` and ``tally`` (value ->
        answers, empty for a request without one)."""
        with self._lock:
            books = [(n, dict(b.outcomes), b) for n, b in self._names.items()]
            rows = []
            for name, outcomes, book in books:
                errors = {k: v for k, v in outcomes.items() if k != "ok" and v}
                p50, p95, p99 = book.latency_ms(TABLE_QUANTILES)
                rows.append(
                    {
                        "name": name,
                        "requests": outcomes["ok"]
                        + outcomes.get("status", 0)
                        + outcomes.get("check", 0)
                        + outcomes.get("grpc", 0),
                        "errors": sum(errors.values()),
                        "errors_by_class": errors,
                        "p50_ms": p50,
                        "p95_ms": p95,
                        "p99_ms": p99,
                        "tally": dict(book.tally),
                    }
                )
        return rows

    def read(self) -> Reading:
        """read is a consistent copy of the books, taken under the lock: formatting only,
        the buckets were read as each interval came."""
        with self._lock:
            return Reading(
                names={
                    n: NameReading(
                        dict(b.outcomes),
                        list(b.whole.buckets),
                        b.whole.count,
                        b.whole.sum_s,
                        b.whole.min_s or 0.0,
                        b.whole.max_s or 0.0,
                        dict(b.tally),
                        {c: book.figures() for c, book in b.statuses.items()},
                    )
                    for n, b in self._names.items()
                },
                intended=round(self._intended),
                vus=self.vus,
                connections=self.connections,
                in_flight=self.in_flight,
                done=self.done,
            )

    def exposition(self) -> bytes:
        """exposition is the Prometheus text format (0.0.4) of one :meth:`read`. Written
        here rather than by prometheus_client's registry, which took ~0.9 ms a scrape for
        these few dozen lines (its per-sample validation); the tests read it back with
        prometheus_client's parser."""
        books = self.read()
        out = _Text()
        out.family(
            "redline_requests_total",
            "counter",
            "Requests by name and outcome (ok, or the error class), after warm-up.",
        )
        for name, b in sorted(books.names.items()):
            for outcome in OUTCOMES:
                out.sample(
                    "redline_requests_total",
                    {"name": name, "outcome": outcome},
                    b.outcomes.get(outcome, 0),
                )
        coded = [(name, b.statuses) for name, b in sorted(books.names.items()) if b.statuses]
        if coded:
            out.family(
                "redline_responses_total",
                "counter",
                "Answers by name and HTTP status code, after warm-up.",
            )
            for name, statuses in coded:
                for code, f in sorted(statuses.items()):
                    out.sample("redline_responses_total", {"name": name, "code": code}, f.count)
        out.family(
            "redline_intended_total",
            "counter",
            "Requests the run intended to send, after warm-up.",
        )
        out.sample("redline_intended_total", {}, books.intended)
        hist = "redline_request_duration_seconds"
        out.family(
            hist,
            "histogram",
            "Latency of answered requests, from the intended send time (no coordinated "
            "omission), after warm-up.",
        )
        for name, b in sorted(books.names.items()):
            for bound, n in zip(BOUNDS_S, b.buckets, strict=True):
                out.sample(f"{hist}_bucket", {"name": name, "le": f"{bound:g}"}, n)
            out.sample(f"{hist}_bucket", {"name": name, "le": "+Inf"}, b.count)
            out.sample(f"{hist}_count", {"name": name}, b.count)
            out.sample(f"{hist}_sum", {"name": name}, b.sum_s)
        tallied = [(name, b.tally) for name, b in sorted(books.names.items()) if b.tally]
        if tallied:
            out.family(
                "redline_tally_total",
                "counter",
                "Answers by the value at the request's tally path (what the service said), "
                "after warm-up.",
            )
            for name, tally in tallied:
                for said, n in sorted(tally.items()):
                    out.sample("redline_tally_total", {"name": name, "value": said}, n)
        gauges: list[tuple[str, str, float | int | None]] = [
            ("redline_vus", "Active virtual users (closed model).", books.vus),
            ("redline_connections", "Connections open.", books.connections),
            ("redline_in_flight", "Requests sent, not yet answered.", books.in_flight),
            ("redline_run_done", "1 once the run ended: the figures are final.", int(books.done)),
        ]
        for metric, help_text, value in gauges:
            if value is not None:
                out.family(metric, "gauge", help_text)
                out.sample(metric, {}, value)
        return out.encode()


#: CONTENT_TYPE: the media type of the Prometheus text format, version 0.0.4.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _Text:
    """_Text accumulates the lines of a Prometheus text exposition."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, kind: str, help_text: str) -> None:
        """family starts a metric family: its HELP and TYPE lines."""
        escaped = help_text.replace("\\", "\\\\").replace("\n", "\\n")
        self.lines.append(f"# HELP {name} {escaped}")
        self.lines.append(f"# TYPE {name} {kind}")

    def sample(self, name: str, labels: dict[str, str], value: float) -> None:
        """sample adds one sample line (label values escaped as the format asks)."""
        if labels:
            pairs = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
            name = f"{name}{{{pairs}}}"
        self.lines.append(f"{name} {_number(value)}")

    def encode(self) -> bytes:
        """encode is the exposition's bytes (a newline after every line)."""
        return ("\n".join(self.lines) + "\n").encode()


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))
